/* SPDX-License-Identifier: MIT */
/*
 * An MDS SIGKILL in the middle of encoding, with nothing lost (issue 19):
 * braid-mds and six braid-ds as processes, our client, braidctl asking.
 * A 96 MiB file under ec,k=4,m=2,segment_size=1M is written; once the
 * sealer has written parity bytes (braidctl ec status: encode_bytes moved)
 * and before the file is sealed, braid-mds is SIGKILLed and started again
 * on the same store.  The file must end sealed within a bound, read back
 * byte-exact, and its parity must be right: braidctl ec scrub (EC_COMPUTE
 * with ecc_verify on every parity chunk) finds no mismatch and repairs
 * nothing.  The background scrub ([mds] ec_scrub_interval = 2s) then
 * passes over it and finds nothing either.
 */
#include "config.h"

#include <signal.h>

#include "tests/client/proc-test.h"

#define MiB	(1u << 20)
#define NDS	6
#define BOUND_S 60.0

static struct pc P;

int main(void)
{
	pc_init(&P, "ec-crash", "/ *(rw,no_root_squash,insecure)\n");
	P.mds_extra = "ec_seal_after = 1\nec_scrub_interval = 2s\n";
	pc_start_mds(&P);
	for (unsigned i = 0; i < NDS; i++)
		pc_start_ds(&P, i);
	pc_wait_up(&P, NDS);
	struct ffc *c = pc_mount(&P);
	CHECK_EQ(ffc_mkdir(c, "/e", 0755), 0);
	CHECK(!strstr(pc_ctl(&P, "policy set /e ec,k=4,m=2,segment_size=1m"), "error"));
	const uint64_t size = 96 * MiB;
	uint8_t *buf = malloc(size);
	CHECK(buf);
	dt_fill(buf, 0, size, 5);
	double secs;
	CHECK_EQ(ffct_write_sync(c, "/e/g", buf, 0, size, true, &secs), 0);
	free(buf);
	ffc_unmount(c); /* our client cannot reclaim across the restart */

	/* ---- the kill: parity bytes written, the file not sealed */
	double t0 = cl_now();
	uint64_t bytes;
	for (;;) {
		const char *st = pc_ctl(&P, "ec status");
		bytes = pc_jnum(st, "encode_bytes");
		CHECK_EQ(pc_jnum(st, "sealed_total"), 0); /* too late: the kill must land mid-way */
		if (bytes)
			break;
		CHECK(cl_now() - t0 < BOUND_S);
		usleep(5 * 1000);
	}
	pc_kill_wait(P.mds_pid, SIGKILL);
	printf("braid-mds SIGKILLed %.2f s after the write, %llu parity bytes written, the file "
	       "not sealed\n",
	       cl_now() - t0, (unsigned long long)bytes);

	/* ---- back: sealed, right parity, byte-exact */
	pc_start_mds(&P);
	pc_wait_up(&P, NDS);
	t0 = cl_now();
	const char *r;
	while (!pc_jnum(r = pc_ctl(&P, "ec status"), "sealed_total")) {
		CHECK(cl_now() - t0 < BOUND_S);
		usleep(100 * 1000);
	}
	printf("sealed %.2f s after the restart (%llu parity bytes written since)\n", cl_now() - t0,
	       (unsigned long long)pc_jnum(r, "encode_bytes"));
	r = pc_ctl(&P, "ec scrub /e/g");
	printf("scrub: %s", r);
	CHECK(strstr(r, "\"sealed\": true"));
	CHECK_EQ(pc_jnum(r, "stripes"), 24);
	CHECK_EQ(pc_jnum(r, "mismatches"), 0);
	CHECK_EQ(pc_jnum(r, "repairs"), 0);
	CHECK_EQ(pc_jnum(r, "errors"), 0);
	c = pc_mount(&P);
	ffct_read_check(c, "/e/g", size, 5);
	printf("the file reads back byte-exact\n");

	/* ---- the background scrub passes over it */
	t0 = cl_now();
	for (;;) {
		r = pc_ctl(&P, "ec status");
		const char *sc = strstr(r, "\"scrub\":");
		CHECK(sc);
		if (pc_jnum(sc, "passes") && pc_jnum(sc, "files"))
			break;
		CHECK(cl_now() - t0 < BOUND_S);
		usleep(200 * 1000);
	}
	const char *sc = strstr(r, "\"scrub\":");
	CHECK_EQ(pc_jnum(sc, "stripes"), 24);
	CHECK_EQ(pc_jnum(sc, "mismatches"), 0);
	CHECK_EQ(pc_jnum(sc, "errors"), 0);
	const char *sp = strstr(r, "\"space\":");
	CHECK(sp && pc_jnum(sp, "ec_logical_bytes") == size);
	CHECK(pc_jnum(sp, "ec_raw_bytes") >= size + size / 2);
	printf("background scrub: %s", r);

	ffc_unmount(c);
	pc_finish(&P, NDS);
	printf("ok\n");
	return 0;
}
