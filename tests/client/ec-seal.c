/* SPDX-License-Identifier: MIT */
/*
 * Erasure coding end to end (issue 19): braid-mds and six braid-ds in this
 * process, our client, a directory with ec,k=4,m=2,segment_size=1M and
 * [mds] ec_seal_after = 1.
 *
 *  1. A file of 10.5 MiB (it ends mid-stripe) is sealed: every parity
 *     chunk is on its recorded holder, apart from the stripe's data, and
 *     holds what the codec computes from the data (zero-padded past the
 *     end); EC_LOCATE answers hostile callers with errors.
 *  2. One data chunk's server is stopped (SIGKILL-like): a write would
 *     have to wait (unsealing would leave its chunk unrebuildable); the
 *     whole file reads back byte-exact through degraded layouts
 *     (reconstructing handles); then a second: still exact; a third of the same stripe:
 *     EIO, never zeros, within a bound.
 *  3. The servers come back; a write to the sealed file unseals it before
 *     it lands; it is sealed again with parity matching the new bytes.
 *  4. The MDS stops in the middle of encoding a larger file: it starts
 *     again, finds the file still to seal, seals it, and it reads back.
 *  5. A member of a new file's set is down when its stripe is written:
 *     the segment it would take goes elsewhere, and still to a server
 *     holding no other data chunk of the stripe (the set's next member
 *     holds the next segment).
 */
#include "config.h"

#include "tests/client/ec-test.h"
#include "ctl/client.h"
#include "ctl/objid.h"
#include "dataserver/ds.h"
#include "dataserver/store.h"
#include "layout/ec.h"
#include "mds/ec.h"
#include "nfsd/auth_braid.h"
#include "nfsd/xdr/braid_ctl.h"

#define MiB	(1u << 20)
#define NDS	6
#define K	4
#define PM	2
#define BOUND_S 20.0
#define CONF	"heartbeat_interval = 1s\nds_timeout = 2s\nec_seal_after = 1\n"

static struct mt M;
static struct cds D[NDS];

static struct ect E = {.m = &M, .d = D, .nds = NDS, .k = K, .pm = PM};

static bool sealed(uint64_t ino)
{
	return ect_sealed(&E, ino);
}

/* EC_LOCATE as a data server would call it, and as nobody should. */
static void locate_checks(uint64_t ino, uint64_t size)
{
	struct mds_attr a = cl_attr(&M, ino);
	struct nfsd_clnt *c = M.c;
	braid_ctl_ec_locate_args la = {.el_ino = ino, .el_offset = size - 1};
	memcpy(la.el_obj.oi_key, a.objkey, sizeof(a.objkey));
	la.el_obj.oi_gen = a.generation;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	braid_ctl_ec_locate_res r;
	/* the good call: the last stripe, every chunk named */
	CHECK_EQ(ds_ctl_call(c, &M.key, BRAID_CTLPROC_EC_LOCATE, &la, &r, &ar), 0);
	CHECK_EQ(r.el_status, BRAID_CTL_OK);
	const braid_ctl_ec_stripe *st = &r.u.el_stripe;
	CHECK_EQ(st->es_k, K);
	CHECK_EQ(st->es_m, PM);
	CHECK_EQ(st->es_shift, 20);
	CHECK_EQ(st->es_stripe, (size - 1) / (K * MiB));
	CHECK_EQ(st->es_size, size);
	CHECK_EQ(st->es_chunks.len, K + PM);
	for (unsigned i = 0; i < K + PM; i++)
		CHECK(st->es_chunks.val[i].ec_ds && st->es_chunks.val[i].ec_addrs.len);
	/* hostile: past the end, another key, another generation, no inode */
	braid_ctl_ec_locate_args x = la;
	x.el_offset = size;
	CHECK_EQ(ds_ctl_call(c, &M.key, BRAID_CTLPROC_EC_LOCATE, &x, &r, &ar), 0);
	CHECK_EQ(r.el_status, BRAID_CTL_INVAL);
	x = la;
	x.el_obj.oi_key[3] ^= 1;
	CHECK_EQ(ds_ctl_call(c, &M.key, BRAID_CTLPROC_EC_LOCATE, &x, &r, &ar), 0);
	CHECK_EQ(r.el_status, BRAID_CTL_NOENT);
	x = la;
	x.el_obj.oi_gen++;
	CHECK_EQ(ds_ctl_call(c, &M.key, BRAID_CTLPROC_EC_LOCATE, &x, &r, &ar), 0);
	CHECK_EQ(r.el_status, BRAID_CTL_STALE);
	x = la;
	x.el_ino = 0xdeadbeef;
	CHECK_EQ(ds_ctl_call(c, &M.key, BRAID_CTLPROC_EC_LOCATE, &x, &r, &ar), 0);
	CHECK_EQ(r.el_status, BRAID_CTL_NOENT);
	x.el_ino = 1; /* the root: a directory */
	CHECK_EQ(ds_ctl_call(c, &M.key, BRAID_CTLPROC_EC_LOCATE, &x, &r, &ar), 0);
	CHECK_EQ(r.el_status, BRAID_CTL_NOENT);
	xdr_arena_release(&ar);
}

int main(void)
{
	struct ffc *c = ect_start(&E, CONF);
	struct ffc_opts o = {.ds_timeout_ms = 2000}; /* for the mount after the restart */
	int err = 0;
	const uint64_t size = 10 * MiB + MiB / 2;
	uint8_t *buf = malloc(48 * MiB);
	CHECK(buf);
	uint64_t dir = ffct_mkdir_policy(&M, c, "/e", "ec,k=4,m=2,segment_size=1m");
	double secs;

	/* ---- 1. sealed: parity where recorded, right bytes */
	uint64_t f = ect_write(&E, c, "/e", dir, "f", buf, size, 1);
	CHECK(!sealed(f));
	ect_wait_sealed(&E, f, "the 10.5 MiB file");
	ect_stripes_check(&E, f, size, 1, false);
	locate_checks(f, size);
	struct mds_ec_stats es;
	mds_ec_stats(M.mds, &es);
	CHECK(es.sealed >= 1 && es.encode_bytes >= 3 * PM * MiB);

	/* ---- 2. data servers of stripe 0 stop, one after another */
	struct cds *gone[3];
	for (unsigned g = 0; g < 3; g++) {
		gone[g] = ect_cds(&E, ect_seg_ds(&E, f, g));
		cds_stop(gone[g]);
		cl_wait_down(&M, gone[g]->id);
		double t0 = cl_now();
		if (g == 0) {
			/* a write would unseal it, and the down chunk could no
			 * longer be rebuilt: it waits, the file stays sealed */
			CHECK_EQ(mds_ec_write_begin_ino(M.mds, f), -EAGAIN);
			CHECK(sealed(f));
		}
		if (g < PM) {
			ffct_read_check(c, "/e/f", size, 1);
			mds_ec_stats(M.mds, &es);
			CHECK(es.degraded >= 1);
			printf("read byte-exact with %u data server(s) down: %.2f s, %llu degraded "
			       "layouts so far\n",
			       g + 1, cl_now() - t0, (unsigned long long)es.degraded);
		} else {
			struct ffc_file *ff = ffc_open(c, "/e/f", FFC_RDONLY, 0, &err);
			CHECK(ff);
			CHECK_EQ(ffc_pread(ff, buf, MiB, 0), -EIO);
			ffc_close(ff);
			printf("three chunks of a stripe gone: EIO after %.2f s\n", cl_now() - t0);
		}
		CHECK(cl_now() - t0 < BOUND_S);
	}

	/* ---- 3. back; a write unseals, then it is sealed again */
	for (unsigned g = 0; g < 3; g++)
		cds_start(&M, gone[g]);
	uint64_t unsealed0 = es.unsealed, sealed0 = es.sealed;
	dt_fill(buf, 0, size, 2);
	CHECK_EQ(ffct_write_sync(c, "/e/f", buf, 0, size, false, &secs), 0);
	mds_ec_stats(M.mds, &es);
	CHECK_EQ(es.unsealed, unsealed0 + 1);
	ect_wait_sealed(&E, f, "the rewritten file");
	double ts = cl_now(); /* the count follows the durable record */
	for (mds_ec_stats(M.mds, &es); es.sealed == sealed0; mds_ec_stats(M.mds, &es)) {
		CHECK(cl_now() - ts < 5);
		usleep(10 * 1000);
	}
	ect_stripes_check(&E, f, size, 2, false);
	ect_subsets_check(&E, f, size, 2);
	ffct_read_check(c, "/e/f", size, 2);

	/* ---- 4. the MDS stops mid-encoding; the file is sealed after */
	const uint64_t big = 48 * MiB;
	uint64_t g = ect_write(&E, c, "/e", dir, "g", buf, big, 3);
	mds_ec_stats(M.mds, &es);
	uint64_t b0 = es.encode_bytes;
	double t0 = cl_now();
	for (;;) {
		mds_ec_stats(M.mds, &es);
		if (es.encode_bytes > b0 || sealed(g))
			break;
		CHECK(cl_now() - t0 < 30);
		usleep(2 * 1000);
	}
	bool mid = !sealed(g);
	ffc_unmount(c);
	mt_stop(&M);
	printf("MDS stopped %s encoding\n", mid ? "in the middle of" : "(too late) after");
	mt_boot(&M);
	for (unsigned i = 0; i < NDS; i++)
		cds_wait_up(&M, &D[i]);
	if (mid)
		CHECK(!sealed(g));
	ect_wait_sealed(&E, g, "the 48 MiB file after the restart");
	ect_stripes_check(&E, g, big, 3, false);
	c = ffc_mount("127.0.0.1", M.port, &o, &err);
	CHECK(c);
	ffct_read_check(c, "/e/g", big, 3);
	ffct_read_check(c, "/e/f", size, 2);

	/* ---- 5. a set member down: the stripe's data chunks still apart
	 * (the file stays open for writing meanwhile, so it is not sealed,
	 * which would lay its whole stripe out) */
	dt_fill(buf, 0, K * MiB, 4);
	struct ffc_file *hf = ffc_open(c, "/e/h", FFC_WRONLY | FFC_CREAT, 0644, &err);
	CHECK(hf);
	CHECK_EQ(ffc_pwrite(hf, buf, 1, 0), 1); /* segment 0: the set is chosen */
	uint64_t h = ffct_ino_of(&M, "h", dir);
	struct mds_file_map hm;
	CHECK_EQ(mds_data_map(M.mds, h, &hm), 0);
	CHECK_EQ(hm.nset, NDS);
	struct cds *down = ect_cds(&E, hm.set[2] & MDS_LAYOUT_ID); /* segment 2's turn */
	cds_stop(down);
	cl_wait_down(&M, down->id);
	CHECK_EQ(ffc_pwrite(hf, buf, K * MiB, 0), (ssize_t)(K * MiB));
	CHECK_EQ(ffc_close(hf), 0);
	for (unsigned i = 0; i < K; i++) {
		CHECK(ect_seg_ds(&E, h, i) != down->id);
		for (unsigned j = 0; j < i; j++)
			CHECK(ect_seg_ds(&E, h, i) != ect_seg_ds(&E, h, j));
	}
	cds_start(&M, down);
	cds_wait_up(&M, down);
	ffct_read_check(c, "/e/h", K * MiB, 4);

	free(buf);
	ffc_unmount(c);
	for (unsigned i = 0; i < NDS; i++)
		cds_stop(&D[i]);
	mt_finish(&M);
	printf("ok\n");
	return 0;
}
