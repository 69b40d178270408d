/* SPDX-License-Identifier: MIT */
/*
 * Full data servers, end to end through our client (issue 21): braid-mds
 * and two braid-ds in this process, each store on a 24 MiB tmpfs of its
 * own (a private mount namespace: nothing outside sees them), [ds]
 * reserve = 4m (two files: a whole file lives on one server, so one with
 * less room than a file would take it and fail).
 *
 *  1. A mirrored file (whole, mirrors = 2) whose one mirror's filesystem is
 *     filled from outside the store: an append fails with ENOSPC within
 *     the bound, and both mirrors' objects still hold every byte written
 *     before, their CRCs intact (the store reserved the space first);
 *     once the filler goes, the append succeeds (no restart).
 *  2. Single-copy files of 2 MiB, each written and fsynced, until three in
 *     a row fail: each failure is ENOSPC, every call returns within the
 *     bound, placement moved on to the server with room (the files fill
 *     both servers, not just the first to fill), and every file written
 *     reads back byte-exact; space_avail (df) falls as they fill.
 *  3. After removing files, a new file writes at once.
 *
 * What "at once" means here: each failing write or fsync returns within
 * BOUND_S; the times are printed.
 */
#include "config.h"

#include "tests/client/ffc-test.h"
#include "tests/dataserver/store-test.h"
#include "dataserver/ds.h"
#include "dataserver/store.h"
#include "layout/policy.h"
#include "mds/layout.h"

/* after braid_ctl.h: <sys/stat.h> defines st_mtime, a field name there */
#include <sys/mount.h>
#include <sys/stat.h>

#define MiB	(1u << 20)
#define FS_MIB	24
#define BOUND_S 10.0
#define NFILES	64

static struct mt M;
static struct cds A, B;
static char dirs[2][4200];

static void small_store(struct cds *d, unsigned i)
{
	snprintf(dirs[i], sizeof(dirs[i]), "%s/%s-store", M.dir, d->name);
	CHECK(mkdir(dirs[i], 0700) == 0 || errno == EEXIST);
	char opt[32];
	snprintf(opt, sizeof(opt), "size=%um", FS_MIB);
	if (mount("tmpfs", dirs[i], "tmpfs", 0, opt))
		SKIP("mount tmpfs on %s: %s\n", dirs[i], strerror(errno));
}

/* Fill the filesystem of store i from outside the store. */
static void fill_behind(unsigned i, bool on)
{
	char path[4300];
	snprintf(path, sizeof(path), "%s/filler", dirs[i]);
	if (!on) {
		CHECK_EQ(unlink(path), 0);
		return;
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	static uint8_t blk[65536];
	memset(blk, 0x5a, sizeof(blk));
	for (size_t n = sizeof(blk); n >= 512;) {
		ssize_t w = write(fd, blk, n);
		if (w < 0) {
			CHECK_EQ(errno, ENOSPC);
			n /= 2;
		}
	}
	close(fd);
}

/* Free bytes on each store's filesystem, printed. */
static void print_free(const char *when)
{
	uint64_t fa = 0, fb = 0;
	ds_store_space(braid_ds_store(A.ds), NULL, &fa);
	ds_store_space(braid_ds_store(B.ds), NULL, &fb);
	printf("%s: free %.1f MiB on ds-a, %.1f MiB on ds-b\n", when, fa / 1048576.0, fb / 1048576.0);
}

int main(void)
{
	st_private_mounts();
	mt_start(&M, "/ *(rw,no_root_squash,insecure)\n",
		 "heartbeat_interval = 1s\nds_timeout = 3s\n");
	cds_prepare(&M, &A, "ds-a", "reserve = 4m\n");
	cds_prepare(&M, &B, "ds-b", "reserve = 4m\n");
	small_store(&A, 0);
	small_store(&B, 1);
	cds_start(&M, &A);
	cds_start(&M, &B);

	struct ffc_opts o = {.ds_timeout_ms = 3000};
	int err = 0;
	struct ffc *c = ffc_mount("127.0.0.1", M.port, &o, &err);
	CHECK(c);
	uint8_t *buf = malloc(8 * MiB);
	CHECK(buf);

	/* ---- 1. a mirrored file, one mirror's disk full */
	uint64_t mir = ffct_mkdir_policy(&M, c, "/mir", "whole,mirrors=2");
	dt_fill(buf, 0, 8 * MiB, 1);
	double secs;
	CHECK_EQ(ffct_write_sync(c, "/mir/f", buf, 0, 8 * MiB, true, &secs), 0);
	uint64_t f_ino = ffct_ino_of(&M, "f", mir);
	fill_behind(0, true);
	dt_fill(buf, 8 * MiB, 4 * MiB, 1);
	int rc = ffct_write_sync(c, "/mir/f", buf, 8 * MiB, 4 * MiB, false, &secs);
	printf("append with one mirror full: %s after %.2f s\n", strerror(-rc), secs);
	CHECK_EQ(rc, -ENOSPC);
	CHECK(secs < BOUND_S);
	ffct_object_check(&M, &A, f_ino, 8 * MiB, 1);
	ffct_object_check(&M, &B, f_ino, 8 * MiB, 1);
	ffct_read_check(c, "/mir/f", 8 * MiB, 1);
	/* room again, behind the MDS's back: the next heartbeat says so */
	fill_behind(0, false);
	double t0 = cl_now();
	while ((rc = ffct_write_sync(c, "/mir/f", buf, 8 * MiB, 4 * MiB, false, &secs)) == -ENOSPC) {
		CHECK(cl_now() - t0 < BOUND_S);
		usleep(200 * 1000);
	}
	CHECK_EQ(rc, 0);
	printf("append succeeded %.2f s after the filler went\n", cl_now() - t0);
	ffct_read_check(c, "/mir/f", 12 * MiB, 1);
	ffct_object_check(&M, &A, f_ino, 12 * MiB, 1);
	ffct_object_check(&M, &B, f_ino, 12 * MiB, 1);
	CHECK_EQ(ffc_remove(c, "/mir/f"), 0);
	print_free("the mirrored file removed");

	/* ---- 2. single-copy files until the servers are full */
	ffct_mkdir_policy(&M, c, "/one", "whole");
	/* until three in a row fail: a file placed on a server with too
	 * little room for it fails while the other may still have some (a
	 * whole file lives on one server), and the client's next files go
	 * to the server with room */
	unsigned nok = 0, n = 0, run = 0, nfail = 0;
	bool ok[NFILES] = {0};
	uint64_t total, avail, avail_prev = UINT64_MAX;
	double worst = 0, worst_fail = 0;
	for (; n < NFILES && run < 3; n++) {
		char path[64];
		snprintf(path, sizeof(path), "/one/f%u", n);
		dt_fill(buf, 0, 2 * MiB, 100 + n);
		rc = ffct_write_sync(c, path, buf, 0, 2 * MiB, true, &secs);
		worst = secs > worst ? secs : worst;
		if (rc) {
			printf("file %u: %s after %.2f s\n", n, strerror(-rc), secs);
			CHECK_EQ(rc, -ENOSPC);
			worst_fail = secs > worst_fail ? secs : worst_fail;
			run++;
			nfail++;
			CHECK_EQ(ffc_remove(c, path), 0);
			continue;
		}
		ok[n] = true;
		nok++;
		run = 0;
		CHECK_EQ(ffc_statfs(c, &total, &avail), 0);
		CHECK(avail <= avail_prev);
		avail_prev = avail;
	}
	printf("%u files of 2 MiB written, %u refused (slowest failure %.2f s); slowest "
	       "write+fsync %.2f s\n",
	       nok, nfail, worst_fail, worst);
	print_free("full");
	CHECK(run == 3);
	CHECK(worst < BOUND_S);
	/* both servers took files: placement moved on from the first full
	 * (2 x (24 MiB - 4 MiB reserve) between them) */
	CHECK(nok >= 18);
	for (unsigned i = 0; i < n; i++) {
		char path[64];
		snprintf(path, sizeof(path), "/one/f%u", i);
		if (ok[i])
			ffct_read_check(c, path, 2 * MiB, 100 + i);
	}
	CHECK_EQ(ffc_statfs(c, &total, &avail), 0);
	CHECK(avail < 4 * MiB);

	/* ---- 3. rm, and write again at once */
	for (unsigned i = 0, k = 0; i < n && k < 6; i++) {
		char path[64];
		snprintf(path, sizeof(path), "/one/f%u", i);
		if (ok[i]) {
			CHECK_EQ(ffc_remove(c, path), 0);
			ok[i] = false;
			k++;
		}
	}
	dt_fill(buf, 0, 2 * MiB, 1000);
	rc = ffct_write_sync(c, "/one/again", buf, 0, 2 * MiB, true, &secs);
	printf("after rm: a new file: %s in %.2f s\n", rc ? strerror(-rc) : "written", secs);
	CHECK_EQ(rc, 0);
	ffct_read_check(c, "/one/again", 2 * MiB, 1000);
	for (unsigned i = 0; i < n; i++) {
		char path[64];
		snprintf(path, sizeof(path), "/one/f%u", i);
		if (ok[i])
			ffct_read_check(c, path, 2 * MiB, 100 + i);
	}

	free(buf);
	ffc_unmount(c);
	cds_stop(&A);
	cds_stop(&B);
	mt_finish(&M);
	umount2(dirs[0], MNT_DETACH);
	umount2(dirs[1], MNT_DETACH);
	printf("ok\n");
	return 0;
}
