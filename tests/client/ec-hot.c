/* SPDX-License-Identifier: MIT */
/*
 * Erasure coding mirrored while hot (issue 19): braid-mds and seven
 * braid-ds in this process, our client, a directory with
 * ec,k=4,m=2,segment_size=1m,mirrors=2 and [mds] ec_seal_after = 1.
 *
 *  1. Hot (open for writing, so never sealed): every segment has two
 *     copies on distinct servers, and with one server down the file reads
 *     back byte-exact from the other copies.
 *  2. Closed, it is sealed; then its records name one copy per segment
 *     (mirror 0's, the data chunk), the parity is the codec's, the second
 *     copies' bytes are gone (a range no record gives a server reads as
 *     zeros there, and the objects' storage drops from about twice the
 *     data to about (k + m) / k of it), every member of the file's set
 *     holds a segment, and the file reads byte-exact, also with one data
 *     chunk's server down (reconstruction).
 */
#include "config.h"

#include "tests/client/ec-test.h"
#include "ctl/objid.h"
#include "dataserver/ds.h"
#include "dataserver/store.h"
#include "mds/ec.h"

#define MiB  (1u << 20)
#define NDS  7
#define K    4
#define PM   2
#define CONF "heartbeat_interval = 1s\nds_timeout = 2s\nec_seal_after = 1\n"

static struct mt M;
static struct cds D[NDS];

static struct ect E = {.m = &M, .d = D, .nds = NDS, .k = K, .pm = PM};

/* Storage of ino's objects (data, and parity with par) on every server. */
static uint64_t used_of(uint64_t ino, bool par)
{
	struct mds_attr a = cl_attr(&M, ino);
	struct ds_objid id, pid;
	mds_data_objid(&a, &id);
	ds_objid_parity(&id, &pid);
	uint64_t sum = 0;
	for (unsigned i = 0; i < NDS; i++) {
		struct ds_obj_stat os;
		if (!ds_store_stat(braid_ds_store(D[i].ds), &id, &os))
			sum += os.used;
		if (par && !ds_store_stat(braid_ds_store(D[i].ds), &pid, &os))
			sum += os.used;
	}
	return sum;
}

static bool all_trimmed(uint64_t ino, uint64_t nsegs)
{
	for (uint64_t n = 0; n < nsegs; n++) {
		struct mds_layout_seg seg;
		CHECK_EQ(mds_layout_get(braid_mds_store(M.mds), ino, n, &seg), 0);
		if (seg.nds != 1)
			return false;
	}
	return true;
}

int main(void)
{
	struct ffc *c = ect_start(&E, CONF);
	int err = 0;
	const uint64_t size = 10 * MiB + MiB / 2, nsegs = 11;
	uint8_t *buf = malloc(size);
	CHECK(buf);
	uint64_t dir = ffct_mkdir_policy(&M, c, "/e", "ec,k=4,m=2,segment_size=1m,mirrors=2");

	/* ---- 1. hot: two copies, one server's loss survived */
	dt_fill(buf, 0, size, 1);
	struct ffc_file *w = ffc_open(c, "/e/f", FFC_WRONLY | FFC_CREAT, 0644, &err);
	CHECK(w);
	CHECK_EQ(ffc_pwrite(w, buf, size, 0), (ssize_t)size);
	CHECK_EQ(ffc_fsync(w), 0);
	uint64_t f = ffct_ino_of(&M, "f", dir);
	struct mds_layout_seg hot[11];
	for (uint64_t n = 0; n < nsegs; n++) {
		CHECK_EQ(mds_layout_get(braid_mds_store(M.mds), f, n, &hot[n]), 0);
		CHECK_EQ(hot[n].nds, 2);
		CHECK(hot[n].ds[0] != hot[n].ds[1]);
	}
	CHECK(!ect_sealed(&E, f));
	uint64_t used_hot = used_of(f, false);
	printf("hot: every segment on 2 servers, %llu bytes stored for %llu\n",
	       (unsigned long long)used_hot, (unsigned long long)size);
	CHECK(used_hot >= 2 * size);
	struct cds *down = ect_cds(&E, hot[0].ds[0]);
	cds_stop(down);
	cl_wait_down(&M, down->id);
	ffct_read_check(c, "/e/f", size, 1);
	printf("hot: read byte-exact with data server %u down\n", down->id);
	cds_start(&M, down);
	cds_wait_up(&M, down);
	CHECK(!ect_sealed(&E, f));
	CHECK_EQ(ffc_close(w), 0);

	/* ---- 2. sealed: one copy, parity right, second copies freed */
	ect_wait_sealed(&E, f, "the 10.5 MiB file");
	double t0 = cl_now();
	uint64_t used;
	for (;;) {
		used = used_of(f, true);
		if (all_trimmed(f, nsegs) && used <= size + 8 * MiB)
			break;
		if (cl_now() - t0 >= 30)
			printf("still %llu bytes stored\n", (unsigned long long)used);
		CHECK(cl_now() - t0 < 30);
		usleep(50 * 1000);
	}
	printf("copies freed %.2f s after sealing: %llu bytes stored (data and parity)\n",
	       cl_now() - t0, (unsigned long long)used);
	/* about (k + m) / k of the data: 3 stripes' parity is 6 MiB */
	CHECK(used >= size + 6 * MiB);
	CHECK(used <= size + 6 * MiB + 2 * MiB);
	for (uint64_t n = 0; n < nsegs; n++)
		CHECK_EQ(ect_seg_ds(&E, f, n), hot[n].ds[0]);
	ect_stripes_check(&E, f, size, 1, true);
	ect_subsets_check(&E, f, size, 1);

	/* the second copies read as zeros where no segment gives that server
	 * the range; every member of the set still holds a segment */
	struct mds_attr a = cl_attr(&M, f);
	struct mds_file_map fm;
	CHECK_EQ(mds_data_map(M.mds, f, &fm), 0);
	uint32_t uid, gid;
	mds_data_fence_epoch(M.mds, &a, fm.epoch, &uid, &gid);
	struct ds_objid id;
	mds_data_objid(&a, &id);
	uint8_t *got = malloc(MiB);
	CHECK(got);
	for (uint64_t n = 0; n < nsegs; n++) {
		struct cds *d = ect_cds(&E, hot[n].ds[1]);
		bool eof;
		memset(got, 0xff, MiB);
		ssize_t r =
		    ds_store_read(braid_ds_store(d->ds), &id, uid, gid, n * MiB, MiB, got, &eof);
		CHECK(r == -ENOENT || r >= 0);
		for (ssize_t i = 0; i < r; i++)
			CHECK(got[i] == 0);
	}
	for (unsigned i = 0; i < fm.nset; i++) {
		bool named = false;
		for (uint64_t n = 0; n < nsegs; n++)
			named = named || ect_seg_ds(&E, f, n) == (fm.set[i] & MDS_LAYOUT_ID);
		CHECK(named);
	}
	ffct_read_check(c, "/e/f", size, 1);

	/* one data chunk's server down: reconstruction */
	down = ect_cds(&E, ect_seg_ds(&E, f, 0));
	cds_stop(down);
	cl_wait_down(&M, down->id);
	ffct_read_check(c, "/e/f", size, 1);
	struct mds_ec_stats es;
	mds_ec_stats(M.mds, &es);
	CHECK(es.degraded >= 1);
	printf("sealed: read byte-exact with data server %u down (%llu degraded layouts)\n",
	       down->id, (unsigned long long)es.degraded);
	cds_start(&M, down);
	cds_wait_up(&M, down);

	free(got);
	free(buf);
	ffc_unmount(c);
	for (unsigned i = 0; i < NDS; i++)
		cds_stop(&D[i]);
	mt_finish(&M);
	printf("ok\n");
	return 0;
}
