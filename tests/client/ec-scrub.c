/* SPDX-License-Identifier: MIT */
/*
 * Scrub of erasure-coded parity, raw space and fencing of parity objects
 * (issue 19): braid-mds and six braid-ds in this process, our client, a
 * directory with ec,k=4,m=2,segment_size=1M, [mds] ec_seal_after = 1 and
 * no background scrub (each scrub here is braidctl ec scrub's).
 *
 *  1. A sealed 10.5 MiB file: space_used counts its parity (raw), the
 *     tally shows raw over logical, df of the directory is the raw space
 *     times k/(k+m); a scrub finds nothing.
 *  2. A parity chunk rewritten with wrong bytes (its CRCs right): the
 *     scrub finds the mismatch and recomputes it.
 *  3. A parity block corrupted on disk (its CRC fails): recomputed.
 *  4. A data block corrupted on disk: the parity's verify fails on it
 *     (IO naming the chunk); the chunk is rebuilt in place from the
 *     others; the file reads back byte-exact; a second scrub finds nothing.
 *  5. A new fence: the parity objects carry the new ids (a degraded read
 *     and the scrub read them as it).
 */
#include "config.h"

#include "tests/client/ec-test.h"
#include "tests/dataserver/store-test.h"
#include "ctl/objid.h"
#include "dataserver/ds.h"
#include "dataserver/store.h"
#include "mds/attr.h"
#include "mds/dsreg.h"
#include "mds/ec.h"
#include "mds/ec_scrub.h"

#define MiB  (1u << 20)
#define NDS  6
#define K    4
#define PM   2
#define CONF "heartbeat_interval = 1s\nds_timeout = 2s\nec_seal_after = 1\nec_scrub_interval = 0\n"

static struct mt M;
static struct cds D[NDS];
static const struct ect E = {.m = &M, .d = D, .nds = NDS, .k = K, .pm = PM};

static struct mds_ec_scrub_res scrub(uint64_t ino, const char *what)
{
	struct mds_ec_scrub_res r;
	double t0 = cl_now();
	CHECK_EQ(mds_ec_scrub_file(M.mds, ino, &r), 0);
	printf("scrub (%s): %.2f s, sealed %d, %llu stripes, %llu mismatches, %llu repairs, "
	       "%llu errors\n",
	       what, cl_now() - t0, r.sealed, (unsigned long long)r.stripes,
	       (unsigned long long)r.mismatches, (unsigned long long)r.repairs,
	       (unsigned long long)r.errors);
	CHECK(r.sealed);
	return r;
}

static void scrub_clean(uint64_t ino, uint64_t nstripes, const char *what)
{
	struct mds_ec_scrub_res r = scrub(ino, what);
	CHECK_EQ(r.stripes, nstripes);
	CHECK_EQ(r.mismatches, 0);
	CHECK_EQ(r.repairs, 0);
	CHECK_EQ(r.errors, 0);
}

/* Flip a byte of chunk i of stripe s at in-chunk offset off, on disk. */
static void poke(uint64_t ino, uint64_t s, unsigned i, uint64_t off)
{
	char path[8400];
	ect_chunk_file(&E, ino, s, i, path, sizeof(path));
	uint64_t base = i < K ? (s * K + i) * MiB : s * MiB;
	int fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	uint8_t b;
	CHECK(pread(fd, &b, 1, (off_t)(base + off)) == 1);
	b ^= 0x5a;
	st_poke_disk(fd, base + off, &b, 1);
	close(fd);
}

int main(void)
{
	struct ffc *c = ect_start(&E, CONF);
	const uint64_t size = 10 * MiB + MiB / 2, nstripes = 3;
	uint8_t *buf = malloc(size);
	CHECK(buf);
	uint64_t dir = ffct_mkdir_policy(&M, c, "/e", "ec,k=4,m=2,segment_size=1m");
	double secs;

	/* ---- 1. sealed: raw space, df, a clean scrub */
	dt_fill(buf, 0, size, 1);
	CHECK_EQ(ffct_write_sync(c, "/e/f", buf, 0, size, true, &secs), 0);
	uint64_t f = ffct_ino_of(&M, "f", dir);
	ect_wait_sealed(&E, f, "the 10.5 MiB file");
	ect_stripes_check(&E, f, size, 1, true);
	/* parity: 3 stripes x 2 chunks of 1 MiB, on top of the data */
	double t0 = cl_now();
	while (cl_attr(&M, f).space_used < size + 6 * MiB) {
		CHECK(cl_now() - t0 < 10);
		usleep(50 * 1000);
	}
	printf("space_used %llu for %llu bytes: parity counted\n",
	       (unsigned long long)cl_attr(&M, f).space_used, (unsigned long long)size);
	struct mds_ec_space sp;
	CHECK_EQ(mds_ec_space_tally(M.mds, &sp), 0);
	CHECK(sp.ec_files == 1 && sp.ec_sealed == 1 && sp.ec_logical == size);
	CHECK(sp.ec_raw >= size + 6 * MiB && sp.raw >= sp.ec_raw && sp.logical >= sp.ec_logical);
	printf("tally: ec raw %llu, logical %llu (%.3f)\n", (unsigned long long)sp.ec_raw,
	       (unsigned long long)sp.ec_logical, (double)sp.ec_raw / (double)sp.ec_logical);
	uint64_t raw_total, raw_avail, ec_total, ec_avail;
	struct mds_attr da = cl_attr(&M, dir);
	mds_dsreg_space(M.mds, &raw_total, &raw_avail);
	mds_fs_space(M.mds, &da, &ec_total, &ec_avail);
	CHECK_EQ(ec_total, raw_total / (K + PM) * K);
	CHECK(ec_avail <= raw_avail / (K + PM) * K + 8 * MiB);
	printf("df: raw %llu, the ec directory %llu (k/(k+m))\n", (unsigned long long)raw_total,
	       (unsigned long long)ec_total);
	scrub_clean(f, nstripes, "sealed");

	/* ---- 2. a parity chunk with wrong bytes, CRCs right */
	uint32_t ids[K + PM];
	ect_stripe_ids(&E, f, 1, ids);
	struct mds_attr a = cl_attr(&M, f);
	struct mds_file_map fm;
	CHECK_EQ(mds_data_map(M.mds, f, &fm), 0);
	uint32_t uid, gid;
	mds_data_fence_epoch(M.mds, &a, fm.epoch, &uid, &gid);
	struct ds_objid id, pid;
	mds_data_objid(&a, &id);
	ds_objid_parity(&id, &pid);
	uint8_t junk[8192];
	memset(junk, 0xa5, sizeof(junk));
	CHECK(st_write(braid_ds_store(ect_cds(&E, ids[K])->ds), &pid, uid, gid, 1 * MiB + 65536,
		       junk, sizeof(junk), DS_FILE_SYNC) == (ssize_t)sizeof(junk));
	struct mds_ec_scrub_res r = scrub(f, "a parity chunk rewritten");
	CHECK_EQ(r.mismatches, 1);
	CHECK_EQ(r.repairs, 1);
	CHECK_EQ(r.errors, 0);
	ect_stripes_check(&E, f, size, 1, true);
	scrub_clean(f, nstripes, "after the parity repair");

	/* ---- 3. a parity block fails its CRC */
	poke(f, 0, K + 1, 4096 + 7);
	r = scrub(f, "a parity block corrupted on disk");
	CHECK(r.repairs >= 1);
	CHECK_EQ(r.errors, 0);
	ect_stripes_check(&E, f, size, 1, true);
	scrub_clean(f, nstripes, "after the CRC repair of parity");

	/* ---- 4. a data block fails its CRC */
	poke(f, 2, 1, 300000);
	r = scrub(f, "a data block corrupted on disk");
	CHECK(r.repairs >= 1);
	CHECK_EQ(r.errors, 0);
	ffct_read_check(c, "/e/f", size, 1);
	ect_stripes_check(&E, f, size, 1, true);
	scrub_clean(f, nstripes, "after the data repair");

	/* ---- 5. a fence: parity objects carry the new ids */
	uint32_t epoch;
	CHECK_EQ(mds_data_fence_new(M.mds, &a, &epoch), 0);
	mds_data_fence_epoch(M.mds, &a, epoch, &uid, &gid);
	for (uint64_t s = 0; s < nstripes; s++) {
		ect_stripe_ids(&E, f, s, ids);
		for (unsigned r2 = 0; r2 < PM; r2++) {
			struct ds_obj_stat os;
			CHECK_EQ(
			    ds_store_stat(braid_ds_store(ect_cds(&E, ids[K + r2])->ds), &pid, &os),
			    0);
			CHECK_EQ(os.uid, uid);
			CHECK_EQ(os.gid, gid);
		}
	}
	scrub_clean(f, nstripes, "after a new fence");
	struct cds *gone = ect_cds(&E, ect_seg_ds(&E, f, 0));
	cds_stop(gone);
	cl_wait_down(&M, gone->id);
	ffct_read_check(c, "/e/f", size, 1);
	printf("degraded read after the fence: byte-exact\n");
	cds_start(&M, gone);
	cds_wait_up(&M, gone);

	struct mds_ec_stats es;
	mds_ec_stats(M.mds, &es);
	CHECK_EQ(es.unsealed, 0); /* nothing above was a write */
	free(buf);
	ffc_unmount(c);
	for (unsigned i = 0; i < NDS; i++)
		cds_stop(&D[i]);
	mt_finish(&M);
	printf("ok\n");
	return 0;
}
