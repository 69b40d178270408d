/* SPDX-License-Identifier: MIT */
/*
 * Rebuild of erasure-coded chunks (issue 19): braid-mds and seven braid-ds
 * in this process, our client, ec,k=4,m=2,segment_size=1M.
 *
 *  1. A sealed 10.5 MiB file (three stripes); a data server holding a data
 *     chunk of one stripe and a parity chunk of another is stopped
 *     (SIGKILL-like) and declared lost: within a bound, every chunk it
 *     held is made again elsewhere, every stripe is on k + m distinct live
 *     servers, each chunk read from the stores is byte-exact (data against
 *     the pattern, parity against the codec), the file reads back with no
 *     degraded layout, braidctl layout names no lost server and braidctl
 *     rebuild counts the chunks.
 *  2. A one-stripe file loses three of its six chunks' servers: it is
 *     listed unrecoverable by path and reads answer EIO, never zeros.
 */
#include "config.h"

#include "tests/client/ec-test.h"
#include "mds/ec.h"
#include "mds/resilver.h"
#include "tools/braidctl_lib.h"

#define MiB	(1u << 20)
#define NDS	7
#define K	4
#define PM	2
#define BOUND_S 30.0
#define CONF	"heartbeat_interval = 1s\nds_timeout = 2s\nec_seal_after = 1\n"

static struct mt M;
static struct cds D[NDS];
static struct ect E = {.m = &M, .d = D, .nds = NDS, .k = K, .pm = PM};

/* braidctl [--json] args... through its library: its output (malloc'd). */
static char *ctl(bool json, int argc, const char **argv)
{
	char *buf = NULL, mds[32];
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	CHECK(out);
	snprintf(mds, sizeof(mds), "127.0.0.1:%d", M.port);
	struct braidctl_opts o = {
	    .mds = mds, .key_file = M.key_path, .json = json, .out = out, .err = stderr};
	struct braidctl *b;
	CHECK_EQ(braidctl_open(&o, &b), BRAIDCTL_OK);
	CHECK_EQ(braidctl_run(b, argc, (char **)argv), BRAIDCTL_OK);
	braidctl_close(b);
	fclose(out);
	printf("%s", buf);
	return buf;
}

/* Whether some stripe of ino (nstripes) has a chunk on data server id. */
static bool names(uint64_t ino, uint64_t nstripes, uint32_t id)
{
	for (uint64_t s = 0; s < nstripes; s++) {
		uint32_t ids[K + PM];
		ect_stripe_ids(&E, ino, s, ids);
		for (unsigned i = 0; i < K + PM; i++)
			if (ids[i] == id)
				return true;
	}
	return false;
}

int main(void)
{
	struct ffc *c = ect_start(&E, CONF);
	int err = 0;
	const uint64_t size = 10 * MiB + MiB / 2, nstripes = 3;
	uint8_t *buf = malloc(size);
	CHECK(buf);
	uint64_t dir = ffct_mkdir_policy(&M, c, "/e", "ec,k=4,m=2,segment_size=1m");

	/* ---- 1. one server lost: its data and parity chunks rebuilt */
	uint64_t f = ect_write(&E, c, "/e", dir, "f", buf, size, 1);
	ect_wait_sealed(&E, f, "the 10.5 MiB file");
	ect_stripes_check(&E, f, size, 1, true);
	/* a server with a data chunk of one stripe and a parity chunk of another */
	struct cds *victim = NULL;
	unsigned held = 0;
	for (unsigned i = 0; i < NDS && !victim; i++) {
		bool dat = false, par = false;
		unsigned n = 0;
		for (uint64_t s = 0; s < nstripes; s++) {
			uint32_t ids[K + PM];
			ect_stripe_ids(&E, f, s, ids);
			for (unsigned j = 0; j < K + PM; j++)
				if (ids[j] == D[i].id) {
					n++;
					dat = dat || j < K;
					par = par || j >= K;
				}
		}
		if (dat && par) {
			victim = &D[i];
			held = n;
		}
	}
	CHECK(victim);
	printf("data server %u holds %u chunks, data and parity\n", victim->id, held);
	struct mds_resilver_stats rs0, rs;
	mds_resilver_stats(M.mds, &rs0);
	cds_stop(victim);
	cl_wait_down(&M, victim->id);
	CHECK_EQ(mds_dsreg_lost(M.mds, victim->id, "by the test"), 0);
	mds_resilver_kick(M.mds);
	double t0 = cl_now();
	while (names(f, nstripes, victim->id)) {
		CHECK(cl_now() - t0 < BOUND_S);
		usleep(50 * 1000);
	}
	printf("rebuilt %.2f s after the server was declared lost\n", cl_now() - t0);
	for (;;) { /* the counts follow the records */
		mds_resilver_stats(M.mds, &rs);
		if (rs.ec_files_done > rs0.ec_files_done)
			break;
		CHECK(cl_now() - t0 < BOUND_S);
		usleep(20 * 1000);
	}
	CHECK(rs.ec_chunks_done - rs0.ec_chunks_done >= held);
	CHECK(rs.ec_bytes > rs0.ec_bytes);
	CHECK_EQ(rs.unrecoverable, 0);
	/* on live servers, apart, byte-exact */
	for (uint64_t s = 0; s < nstripes; s++) {
		uint32_t ids[K + PM];
		ect_stripe_ids(&E, f, s, ids);
		for (unsigned j = 0; j < K + PM; j++) {
			struct mds_ds_info in;
			CHECK_EQ(mds_dsreg_get(M.mds, ids[j], &in), 0);
			CHECK(in.up && !in.lost);
		}
	}
	ect_stripes_check(&E, f, size, 1, true);
	struct mds_ec_stats es0, es;
	mds_ec_stats(M.mds, &es0);
	ffct_read_check(c, "/e/f", size, 1);
	mds_ec_stats(M.mds, &es);
	CHECK_EQ(es.degraded, es0.degraded); /* no reconstructing handle needed */
	CHECK(ect_sealed(&E, f));
	char lost_s[32];
	snprintf(lost_s, sizeof(lost_s), "%u (lost)", victim->id);
	const char *lay[] = {"layout", "/e/f"};
	char *out = ctl(false, 2, lay);
	CHECK(strstr(out, "erasure coded 4+2: sealed"));
	CHECK(!strstr(out, lost_s));
	free(out);
	out = ctl(true, 2, lay);
	CHECK(strstr(out, "\"state\": \"sealed\""));
	CHECK(!strstr(out, "\"state\": \"lost\"") && !strstr(out, "\"lost\": true"));
	free(out);
	const char *reb[] = {"rebuild"};
	out = ctl(false, 1, reb);
	CHECK(strstr(out, "erasure-coded"));
	free(out);

	/* ---- 2. a stripe with m + 1 chunks lost: unrecoverable, EIO */
	uint64_t g = ect_write(&E, c, "/e", dir, "g", buf, 4 * MiB, 2);
	ect_wait_sealed(&E, g, "the one-stripe file");
	uint32_t gids[K + PM];
	ect_stripe_ids(&E, g, 0, gids);
	for (unsigned j = 0; j < PM + 1; j++) {
		struct cds *d = ect_cds(&E, gids[j]);
		cds_stop(d);
		cl_wait_down(&M, d->id);
		CHECK_EQ(mds_dsreg_lost(M.mds, d->id, "by the test"), 0);
	}
	mds_resilver_kick(M.mds);
	t0 = cl_now();
	bool listed = false;
	while (!listed) {
		struct mds_lost_file lf[16];
		unsigned n = mds_resilver_lost_files(M.mds, lf, 16);
		for (unsigned i = 0; i < n; i++)
			listed = listed || (lf[i].ino == g && !strcmp(lf[i].path, "/e/g"));
		CHECK(cl_now() - t0 < BOUND_S);
		if (!listed)
			usleep(50 * 1000);
	}
	printf("listed unrecoverable after %.2f s\n", cl_now() - t0);
	t0 = cl_now();
	struct ffc_file *gf = ffc_open(c, "/e/g", FFC_RDONLY, 0, &err);
	CHECK(gf);
	CHECK_EQ(ffc_pread(gf, buf, MiB, 0), -EIO);
	ffc_close(gf);
	printf("reading it: EIO after %.2f s\n", cl_now() - t0);
	CHECK(cl_now() - t0 < BOUND_S);

	free(buf);
	ffc_unmount(c);
	for (unsigned i = 0; i < NDS; i++) {
		struct mds_ds_info in;
		if (!mds_dsreg_get(M.mds, D[i].id, &in) && !in.lost)
			cds_stop(&D[i]);
	}
	mt_finish(&M);
	printf("ok\n");
	return 0;
}
