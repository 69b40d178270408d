/* SPDX-License-Identifier: MIT */
/*
 * READ, WRITE and COMMIT through the MDS (RFC 8881 §18.22, §18.32, §18.3),
 * proxied to a real braid-ds: the object made at the first WRITE and
 * recorded as the file's layout, the data on the data server, size and
 * change moved durably by WRITE, eof, short writes past maxwrite, zeros
 * for a file without an object, truncation and removal reaching the data
 * server (mds_data_truncate, mds_data_release and the orphan sweep), the
 * data server's write verifier, NFS4ERR_DELAY (never a hang) while the data
 * server is down, NFS4ERR_PNFS_NO_LAYOUT with [mds] data_io = refuse, and
 * an object a data server's crash took before its first write made again
 * by the next WRITE.
 */
#include "config.h"

#include "tests/mds/mds-ds-test.h"
#include "tests/mds/state-test.h"
#include "tests/dataserver/store-test.h"

#include "mds/data.h"
#include "mds/mds_impl.h"

#define CONF "heartbeat_interval = 1s\nds_timeout = 3s\n"
#define MiB  (1u << 20)

static struct mt M;
static struct cds A;
static uint8_t *buf, *rbuf;

static void read_back(struct nfs41c_session *s, const struct cfile *f, uint64_t size, unsigned seed,
		      uint64_t zero_from)
{
	for (uint64_t off = 0; off < size; off += MiB) {
		uint32_t n;
		bool eof;
		CHECK_EQ(cl_do_read(s, f, off, MiB, rbuf, &n, &eof), NFS4_OK);
		uint64_t want = size - off < MiB ? size - off : MiB;
		CHECK_EQ(n, want);
		CHECK_EQ(eof, off + n >= size);
		for (uint64_t i = 0; i < n; i++) {
			uint8_t expect = off + i >= zero_from ? 0 : dt_pat(off + i, seed);
			if (rbuf[i] != expect) {
				fprintf(stderr, "offset %llu: %u, expected %u\n",
					(unsigned long long)(off + i), rbuf[i], expect);
				CHECK(0);
			}
		}
	}
}

static void t_write_read(struct nfs41c_session *s, struct cfile *f)
{
	uint64_t change0 = cl_attr(&M, f->ino).change;
	/* 3 MiB UNSTABLE: the first WRITE makes the object */
	uint8_t v[3][8], cv[8];
	for (unsigned i = 0; i < 3; i++) {
		uint32_t count;
		stable_how4 cm;
		dt_fill(buf, i * MiB, MiB, 7);
		CHECK_EQ(cl_do_write(s, f, i * MiB, UNSTABLE4, buf, MiB, &count, &cm, v[i]),
			 NFS4_OK);
		CHECK_EQ(count, MiB);
		CHECK_EQ(cm, UNSTABLE4);
		/* size and change are in the store when WRITE replies */
		struct mds_attr a = cl_attr(&M, f->ino);
		CHECK_EQ(a.size, (i + 1) * MiB);
		CHECK(a.change > change0);
		change0 = a.change;
	}
	CHECK(memcmp(v[0], v[1], 8) == 0 && memcmp(v[1], v[2], 8) == 0);
	CHECK_EQ(cl_do_commit(s, f, 0, 0, cv), NFS4_OK);
	CHECK(memcmp(cv, v[0], 8) == 0);
	/* the data server's verifier: what it gives its own NFSv3 clients */
	uint8_t dsv[8];
	ds_store_verifier(braid_ds_store(A.ds), dsv);
	CHECK(memcmp(cv, dsv, 8) == 0);

	/* recorded as segment 0 on the data server, which holds the bytes */
	struct mds_layout_seg seg;
	CHECK_EQ(mds_layout_get(braid_mds_store(M.mds), f->ino, 0, &seg), 0);
	CHECK_EQ(seg.nds, 1);
	CHECK_EQ(seg.ds[0], A.id);
	uint64_t osz;
	CHECK_EQ(cl_obj_stat(&M, &A, f, &osz), 0);
	CHECK_EQ(osz, 3 * MiB);
	/* owned by the file's fence: the handle as the MDS computes it, read as it */
	uint8_t fh[DS_FH_SIZE];
	struct ds_objid id;
	mds_data_objid(&f->attr, &id);
	ds_fh_make(&M.key, &id, fh);
	uint32_t uid, gid, n;
	bool eof;
	mds_data_fence(M.mds, &f->attr, &uid, &gid);
	CHECK(uid >= 1u << 30 && uid < 1u << 31 && gid >= 1u << 30 && gid < 1u << 31);
	CHECK_EQ(dt_read(A.c, fh, DS_FH_SIZE, MiB, 4096, rbuf, &n, &eof, uid), NFS3_OK);
	CHECK(dt_check(rbuf, MiB, 4096, 7));
	CHECK_EQ(dt_read(A.c, fh, DS_FH_SIZE, 0, 4096, rbuf, &n, &eof, uid + 1), NFS3ERR_ACCES);

	/* FILE_SYNC at an odd offset extends the file */
	uint32_t count;
	stable_how4 cm;
	uint64_t off = 3 * MiB + 5;
	dt_fill(buf, off, 100000, 7);
	CHECK_EQ(cl_do_write(s, f, off, FILE_SYNC4, buf, 100000, &count, &cm, NULL), NFS4_OK);
	CHECK_EQ(count, 100000);
	CHECK_EQ(cm, FILE_SYNC4);
	uint64_t size = off + 100000;
	CHECK_EQ(cl_attr(&M, f->ino).size, size);
	/* the 5 bytes never written read as zeros */
	CHECK_EQ(cl_do_read(s, f, 3 * MiB, 16, rbuf, &n, &eof), NFS4_OK);
	CHECK(cl_is_zero(rbuf, 5) && dt_check(rbuf + 5, off, 11, 7));
	dt_fill(buf, 3 * MiB, 5, 7);
	CHECK_EQ(cl_do_write(s, f, 3 * MiB, DATA_SYNC4, buf, 5, &count, &cm, NULL), NFS4_OK);
	CHECK_EQ(cm, DATA_SYNC4);
	read_back(s, f, size, 7, UINT64_MAX);

	/* past EOF: eof and no data; a read reaching EOF is short with eof */
	CHECK_EQ(cl_do_read(s, f, size, 4096, rbuf, &n, &eof), NFS4_OK);
	CHECK(n == 0 && eof);
	CHECK_EQ(cl_do_read(s, f, size + MiB, 4096, rbuf, &n, &eof), NFS4_OK);
	CHECK(n == 0 && eof);
	CHECK_EQ(cl_do_read(s, f, size - 10, 4096, rbuf, &n, &eof), NFS4_OK);
	CHECK(n == 10 && eof);
	CHECK_EQ(cl_do_read(s, f, 0, 0, rbuf, &n, &eof), NFS4_OK);
	CHECK(n == 0 && !eof);
	/* never more than maxread / maxwrite */
	CHECK_EQ(cl_do_read(s, f, 0, 2 * MiB, NULL, &n, &eof), NFS4_OK);
	CHECK(n == MiB && !eof);
	uint8_t *big = malloc(MiB + 4096);
	CHECK(big);
	dt_fill(big, 0, MiB + 4096, 7);
	CHECK_EQ(cl_do_write(s, f, 0, UNSTABLE4, big, MiB + 4096, &count, &cm, NULL), NFS4_OK);
	CHECK_EQ(count, MiB);
	free(big);
	CHECK_EQ(cl_attr(&M, f->ino).size, size);
	/* a zero-length WRITE changes nothing */
	uint64_t ch = cl_attr(&M, f->ino).change;
	CHECK_EQ(cl_do_write(s, f, 10 * MiB, UNSTABLE4, buf, 0, &count, &cm, NULL), NFS4_OK);
	CHECK_EQ(count, 0);
	CHECK_EQ(cl_attr(&M, f->ino).change, ch);
	CHECK_EQ(cl_attr(&M, f->ino).size, size);
}

static void t_errors(struct nfs41c_session *s, struct nfs41c_session *user, const struct cfile *f)
{
	/* the root directory is no file */
	struct cfile dir = {.ino = mds_store_root(braid_mds_store(M.mds))};
	cl_fh_of(&M, dir.ino, cl_attr(&M, dir.ino).generation, &dir);
	uint32_t n;
	bool eof;
	CHECK_EQ(cl_do_read(s, &dir, 0, 10, rbuf, &n, &eof), NFS4ERR_ISDIR);
	CHECK_EQ(cl_do_write(s, &dir, 0, UNSTABLE4, buf, 10, NULL, NULL, NULL), NFS4ERR_ISDIR);
	CHECK_EQ(cl_do_commit(s, &dir, 0, 0, NULL), NFS4ERR_ISDIR);
	/* a symlink: NFS4ERR_SYMLINK */
	struct mds_store *st = braid_mds_store(M.mds);
	struct mds_create_args ca = {.dir = dir.ino,
				     .name = "lnk",
				     .name_len = 3,
				     .type = MDS_LNK,
				     .mode = 0777,
				     .symlink = "f1",
				     .symlink_len = 2};
	struct mds_create_res cr;
	CHECK_EQ(mds_dir_create(st, &ca, &cr), 0);
	struct cfile lnk;
	cl_fh_of(&M, cr.attr.ino, cr.attr.generation, &lnk);
	CHECK_EQ(cl_do_read(s, &lnk, 0, 10, rbuf, &n, &eof), NFS4ERR_SYMLINK);
	/* bad arguments */
	CHECK_EQ(cl_do_commit(s, f, UINT64_MAX - 5, 10, NULL), NFS4ERR_INVAL);
	CHECK_EQ(cl_do_write(s, f, 0, (stable_how4)7, buf, 10, NULL, NULL, NULL), NFS4ERR_INVAL);
	CHECK_EQ(cl_do_write(s, f, MDS_FILE_MAX - 5, UNSTABLE4, buf, 10, NULL, NULL, NULL),
		 NFS4ERR_FBIG);
	CHECK_EQ(cl_do_write(s, f, UINT64_MAX - 5, UNSTABLE4, buf, 10, NULL, NULL, NULL),
		 NFS4ERR_FBIG);
	/* the anonymous stateid carries no open: the file's mode decides (0644, root's) */
	CHECK_EQ(cl_do_read(user, f, 0, 10, rbuf, &n, &eof), NFS4_OK);
	CHECK_EQ(cl_do_write(user, f, 0, UNSTABLE4, buf, 10, NULL, NULL, NULL), NFS4ERR_ACCESS);
	/* no filehandle */
	nfs_argop4 op = cl_read(0, 10);
	COMPOUND4res res;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	mt_compound(s, &op, 1, &res, &ar);
	CHECK_EQ(mt_status(&res, 0), NFS4ERR_NOFILEHANDLE);
	xdr_arena_release(&ar);
}

/* A file with a size and no object reads as zeros. */
static void t_no_object(struct nfs41c_session *s)
{
	struct cfile f;
	cl_mkfile(&M, "sparse", 0644, &f);
	struct mds_setattr_args sa = {.ino = f.ino, .mask = MDS_SET_SIZE, .size = 10000};
	CHECK_EQ(mds_inode_setattr(braid_mds_store(M.mds), &sa, NULL), 0);
	memset(rbuf, 0xee, 20000);
	uint32_t n;
	bool eof;
	CHECK_EQ(cl_do_read(s, &f, 0, 20000, rbuf, &n, &eof), NFS4_OK);
	CHECK(n == 10000 && eof);
	CHECK(cl_is_zero(rbuf, n));
	uint8_t v[8];
	CHECK_EQ(cl_do_commit(s, &f, 0, 0, v), NFS4_OK);
	struct mds_layout_seg seg;
	CHECK_EQ(mds_layout_get(braid_mds_store(M.mds), f.ino, 0, &seg), -ENOENT);
	/* a size-extending truncation makes the object, at that size */
	cl_truncate(&M, f.ino, 20000);
	CHECK_EQ(mds_layout_get(braid_mds_store(M.mds), f.ino, 0, &seg), 0);
	uint64_t osz;
	CHECK_EQ(cl_obj_stat(&M, &A, &f, &osz), 0);
	CHECK_EQ(osz, 20000);
	CHECK_EQ(cl_do_read(s, &f, 0, 30000, rbuf, &n, &eof), NFS4_OK);
	CHECK(n == 20000 && eof && cl_is_zero(rbuf, n));
}

static void t_shrink_grow(struct nfs41c_session *s, struct cfile *f)
{
	uint64_t osz;
	cl_truncate(&M, f->ino, MiB + 100);
	CHECK_EQ(cl_obj_stat(&M, &A, f, &osz), 0);
	CHECK_EQ(osz, MiB + 100);
	read_back(s, f, MiB + 100, 7, UINT64_MAX);
	/* growing again: what was cut reads as zeros */
	cl_truncate(&M, f->ino, 2 * MiB);
	CHECK_EQ(cl_obj_stat(&M, &A, f, &osz), 0);
	CHECK_EQ(osz, 2 * MiB);
	read_back(s, f, 2 * MiB, 7, MiB + 100);
}

/* REMOVE then release: the object leaves the data server, the inode the store. */
static void t_release(struct cfile *f)
{
	struct mds_store *st = braid_mds_store(M.mds);
	struct mds_remove_args ra = {.dir = mds_store_root(st), .name = "f1", .name_len = 2};
	struct mds_remove_res rr;
	CHECK_EQ(mds_dir_remove(st, &ra, &rr), 0);
	CHECK(rr.victim.orphaned);
	CHECK_EQ(cl_obj_stat(&M, &A, f, NULL), 0);
	mds_data_release(M.mds, f->ino);
	CHECK_EQ(cl_obj_stat(&M, &A, f, NULL), -ENOENT);
	struct mds_attr a;
	CHECK_EQ(mds_inode_getattr(st, f->ino, &a), -ESTALE);
	mds_data_release(M.mds, f->ino); /* again: nothing left to do */
}

/* The orphan sweep: a removal whose release failed is finished later. */
static void t_orphan_sweep(struct nfs41c_session *s)
{
	struct cfile f;
	cl_mkfile(&M, "f2", 0644, &f);
	dt_fill(buf, 0, 4096, 9);
	CHECK_EQ(cl_do_write(s, &f, 0, FILE_SYNC4, buf, 4096, NULL, NULL, NULL), NFS4_OK);
	struct mds_store *st = braid_mds_store(M.mds);
	struct mds_remove_args ra = {.dir = mds_store_root(st), .name = "f2", .name_len = 2};
	struct mds_remove_res rr;
	cds_stop(&A); /* down: the release cannot reach it */
	CHECK_EQ(mds_dir_remove(st, &ra, &rr), 0);
	mds_data_release(M.mds, f.ino);
	struct mds_attr a;
	CHECK_EQ(mds_inode_getattr(st, f.ino, &a), 0); /* still an orphan */
	cds_start(&M, &A);			       /* its REGISTER wakes the sweep */
	double t0 = cl_now();
	while (mds_inode_getattr(st, f.ino, &a) == 0) {
		CHECK(cl_now() - t0 < 10);
		usleep(20000);
	}
	CHECK_EQ(cl_obj_stat(&M, &A, &f, NULL), -ENOENT);
}

/* The data server goes away: DELAY, quickly once it is known down. */
static void t_ds_down(struct nfs41c_session *s, struct cfile *f)
{
	uint8_t v0[8], v1[8];
	CHECK_EQ(cl_do_commit(s, f, 0, 0, v0), NFS4_OK);
	cds_stop(&A);
	double t0 = cl_now();
	uint32_t n;
	bool eof;
	CHECK_EQ(cl_do_read(s, f, 0, 4096, rbuf, &n, &eof), NFS4ERR_DELAY);
	CHECK_EQ(cl_do_write(s, f, 0, UNSTABLE4, buf, 4096, NULL, NULL, NULL), NFS4ERR_DELAY);
	CHECK(cl_now() - t0 < 20); /* within the call timeouts */
	cl_wait_down(&M, A.id);	   /* past ds_timeout: known down */
	t0 = cl_now();
	CHECK_EQ(cl_do_read(s, f, 0, 4096, rbuf, &n, &eof), NFS4ERR_DELAY);
	CHECK_EQ(cl_do_write(s, f, 0, UNSTABLE4, buf, 4096, NULL, NULL, NULL), NFS4ERR_DELAY);
	CHECK_EQ(cl_do_commit(s, f, 0, 0, NULL), NFS4ERR_DELAY);
	CHECK(cl_now() - t0 < 1);
	/* back: the data is there, its verifier is new (clients resend) */
	cds_start(&M, &A);
	read_back(s, f, 2 * MiB, 7, MiB + 100);
	CHECK_EQ(cl_do_commit(s, f, 0, 0, v1), NFS4_OK);
	CHECK(memcmp(v0, v1, 8) != 0);
}

/*
 * A data server's crash can take an object made and not yet written
 * (braid-ds makes a create durable with the object's first write, which
 * syncs its names): the map names it, the data server has none, or has
 * the empty .meta such a crash leaves.  Nothing was written to it, so
 * nothing is lost; the file goes on working: the next WRITE makes the
 * object again, and what it wrote reads back.
 */
static void t_object_lost(struct nfs41c_session *s)
{
	struct cfile f;
	cl_mkfile(&M, "lost", 0644, &f);
	/* laid out, as a LAYOUTGET does: the object is made, nothing written */
	struct mds_layout_seg seg;
	CHECK_EQ(mds_data_object(M.mds, &f.attr, true, &seg), 0);
	CHECK_EQ(cl_obj_stat(&M, &A, &f, NULL), 0);
	uint8_t v0[8], v1[8];
	CHECK_EQ(cl_do_commit(s, &f, 0, 0, v0), NFS4_OK);
	cds_stop(&A);
	/* the crash: the names reached the disk, the header did not */
	struct ds_objid id;
	mds_data_objid(&f.attr, &id);
	char p[PATH_MAX];
	st_obj_path(A.set.store_dir, &id, ".meta", p, sizeof(p));
	CHECK_EQ(truncate(p, 0), 0);
	cds_start(&M, &A);
	CHECK_EQ(cl_obj_stat(&M, &A, &f, NULL), -ENOENT);
	dt_fill(buf, 0, 4096, 12);
	CHECK_EQ(cl_do_write(s, &f, 0, FILE_SYNC4, buf, 4096, NULL, NULL, v1), NFS4_OK);
	CHECK(memcmp(v0, v1, 8) != 0); /* a new verifier: clients resend */
	CHECK_EQ(cl_obj_stat(&M, &A, &f, NULL), 0);
	CHECK_EQ(cl_attr(&M, f.ino).size, 4096);
	read_back(s, &f, 4096, 12, UINT64_MAX);
}

/*
 * With OPEN's stateids (op_state.c): a read-only open may not WRITE; the
 * current stateid of an OPEN in the same COMPOUND may; a file removed
 * while open keeps its data until its last CLOSE.
 */
static void t_open_stateids(struct nfs41c_session *s)
{
	struct ts_openres ro, rw;
	CHECK_EQ(ts_open_name(s, NULL, "owner-1", "viaopen", OPEN4_SHARE_ACCESS_READ,
			      OPEN4_SHARE_DENY_NONE, true, &ro),
		 NFS4_OK);
	struct mds_store *st = braid_mds_store(M.mds);
	struct cfile f;
	CHECK_EQ(mds_dir_lookup(st, mds_store_root(st), "viaopen", 7, &f.ino, &f.attr), 0);
	f.fh = ts_fh4(&ro.fh);
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	dt_fill(buf, 0, 8192, 5);
	nfs_argop4 w = cl_write(0, FILE_SYNC4, buf, 8192);
	w.u.opwrite.stateid = ro.sid;
	CHECK_EQ(cl_op(s, 0, &f, w, NULL, &ar), NFS4ERR_OPENMODE);
	/* OPEN for both, then WRITE with the current stateid (seqid 1, other 0) */
	nfs_argop4 ops[4] = {ts_op(OP_PUTROOTFH), ts_op(OP_OPEN), w, ts_op(OP_GETFH)};
	OPEN4args *oa = &ops[1].u.opopen;
	oa->share_access = OPEN4_SHARE_ACCESS_BOTH;
	oa->share_deny = OPEN4_SHARE_DENY_NONE;
	oa->owner.owner = xdr_opaque_of("owner-1", 7);
	oa->openhow.opentype = OPEN4_NOCREATE;
	oa->claim.claim = CLAIM_NULL;
	oa->claim.u.file = xdr_opaque_of("viaopen", 7);
	ops[2].u.opwrite.stateid = ts_sid_special(1, 0);
	COMPOUND4res res;
	mt_compound(s, ops, 4, &res, &ar);
	CHECK_EQ(mt_status(&res, 1), NFS4_OK);
	CHECK_EQ(mt_status(&res, 2), NFS4_OK);
	rw.sid = res.resarray.val[2].u.opopen.u.resok4.stateid;
	CHECK_EQ(res.resarray.val[3].u.opwrite.u.resok4.count, 8192);
	xdr_arena_release(&ar);
	CHECK_EQ(cl_attr(&M, f.ino).size, 8192);
	/* removed while open: the object stays until the last CLOSE */
	struct mds_remove_args ra = {.dir = mds_store_root(st), .name = "viaopen", .name_len = 7};
	struct mds_remove_res rr;
	CHECK_EQ(mds_dir_remove(st, &ra, &rr), 0);
	CHECK(rr.victim.orphaned);
	mds_data_release(M.mds, f.ino);
	CHECK_EQ(cl_obj_stat(&M, &A, &f, NULL), 0);
	uint32_t n;
	bool eof;
	CHECK_EQ(cl_do_read(s, &f, 0, 8192, rbuf, &n, &eof), NFS4_OK);
	CHECK(n == 8192 && eof && dt_check(rbuf, 0, 8192, 5));
	CHECK_EQ(ts_close(s, &ro.fh, &rw.sid, NULL), NFS4_OK);
	CHECK_EQ(cl_obj_stat(&M, &A, &f, NULL), -ENOENT); /* removed before CLOSE's reply */
	/* reaped by the releaser thread, off the CLOSE's reply path */
	struct mds_attr a;
	double t0 = cl_now();
	while (mds_inode_getattr(st, f.ino, &a) != -ESTALE) {
		CHECK(cl_now() - t0 < 10.0);
		usleep(10 * 1000);
	}
}

/*
 * A segment mirrored on two data servers (as the layout layer may record
 * it): WRITE reaches both (making the missing objects), the verifier is
 * neither's alone, READ is served by the survivor when one is down, and
 * WRITE goes on without the one down, marking it stale.
 */
static void t_mirrors(struct nfs41c_session *s)
{
	struct cds b;
	cds_prepare(&M, &b, "ds-b", NULL);
	cds_start(&M, &b);
	struct cfile f;
	cl_mkfile(&M, "mirrored", 0644, &f);
	struct mds_layout_args la = {.ino = f.ino, .seg = 0, .l = {.nds = 2}};
	la.l.ds[0] = A.id;
	la.l.ds[1] = b.id;
	CHECK_EQ(mds_layout_set(braid_mds_store(M.mds), &la), 0);
	dt_fill(buf, 0, MiB, 11);
	uint8_t v[8], cv[8], va[8], vb[8];
	uint32_t count;
	CHECK_EQ(cl_do_write(s, &f, 0, UNSTABLE4, buf, MiB, &count, NULL, v), NFS4_OK);
	CHECK_EQ(count, MiB);
	uint64_t osz;
	CHECK_EQ(cl_obj_stat(&M, &A, &f, &osz), 0);
	CHECK_EQ(osz, MiB);
	CHECK_EQ(cl_obj_stat(&M, &b, &f, &osz), 0);
	CHECK_EQ(osz, MiB);
	CHECK_EQ(cl_do_commit(s, &f, 0, 0, cv), NFS4_OK);
	CHECK(memcmp(v, cv, 8) == 0);
	ds_store_verifier(braid_ds_store(A.ds), va);
	ds_store_verifier(braid_ds_store(b.ds), vb);
	CHECK(memcmp(v, va, 8) != 0 && memcmp(v, vb, 8) != 0);
	/* the first mirror goes down: reads come from the second; a write
	 * and a COMMIT go on without it, which goes stale first (durably) */
	cds_stop(&A);
	cl_wait_down(&M, A.id);
	read_back(s, &f, MiB, 11, UINT64_MAX);
	CHECK_EQ(cl_do_write(s, &f, 0, UNSTABLE4, buf, 10, NULL, NULL, NULL), NFS4_OK);
	struct mds_file_map m;
	CHECK_EQ(mds_data_map(M.mds, f.ino, &m), 0);
	CHECK(mds_data_map_stale(&m, A.id) && !mds_data_map_stale(&m, b.id));
	CHECK_EQ(cl_do_commit(s, &f, 0, 0, NULL), NFS4_OK);
	/* b goes down, then A comes back: A is stale and b, the source of its
	 * resilver, is down, so A is never read (nothing current answers),
	 * and no write may leave the file without a current copy */
	cds_stop(&b);
	cl_wait_down(&M, b.id);
	cds_start(&M, &A);
	uint32_t n;
	bool eof;
	CHECK_EQ(cl_do_read(s, &f, 0, 4096, rbuf, &n, &eof), NFS4ERR_DELAY);
	CHECK_EQ(cl_do_write(s, &f, 0, UNSTABLE4, buf, 10, NULL, NULL, NULL), NFS4ERR_DELAY);
	CHECK_EQ(mds_data_map(M.mds, f.ino, &m), 0);
	CHECK(mds_data_map_stale(&m, A.id) && !mds_data_map_stale(&m, b.id));
	/* b back: A is resilvered from it, and reads as b does */
	cds_start(&M, &b);
	double t0 = cl_now();
	for (;;) {
		CHECK_EQ(mds_data_map(M.mds, f.ino, &m), 0);
		if (!mds_data_map_stale(&m, A.id))
			break;
		CHECK(cl_now() - t0 < 20);
		usleep(50 * 1000);
	}
	cds_stop(&b);
	cl_wait_down(&M, b.id);
	read_back(s, &f, MiB, 11, UINT64_MAX);
}

int main(void)
{
	buf = malloc(2 * MiB);
	rbuf = malloc(2 * MiB);
	CHECK(buf && rbuf);
	mt_start(&M, "/ *(rw,no_root_squash,insecure)\n", CONF);
	cl_pin_port(&M, CONF);
	cds_prepare(&M, &A, "ds-a", NULL);
	cds_start(&M, &A);
	struct nfs41c_session *s = mt_session(&M, "io", 0, 0);
	struct nfs41c_session *user = mt_session(&M, "io-user", 1000, 1000);
	struct cfile f;
	cl_mkfile(&M, "f1", 0644, &f);

	t_write_read(s, &f);
	t_errors(s, user, &f);
	t_no_object(s);
	t_shrink_grow(s, &f);
	t_ds_down(s, &f);

	/* the layout is durable: after an MDS restart READ finds the data */
	nfs41c_session_destroy(s);
	nfs41c_session_destroy(user);
	mt_stop(&M);
	cl_pin_port(&M, CONF "data_io = refuse\n");
	mt_boot(&M);
	s = mt_session(&M, "io", 0, 0);
	uint32_t n;
	bool eof;
	CHECK_EQ(cl_do_read(s, &f, 0, 4096, rbuf, &n, &eof), NFS4ERR_PNFS_NO_LAYOUT);
	CHECK_EQ(cl_do_write(s, &f, 0, UNSTABLE4, buf, 4096, NULL, NULL, NULL),
		 NFS4ERR_PNFS_NO_LAYOUT);
	CHECK_EQ(cl_do_commit(s, &f, 0, 0, NULL), NFS4ERR_PNFS_NO_LAYOUT);
	nfs41c_session_destroy(s);
	mt_stop(&M);
	cl_pin_port(&M, CONF);
	mt_boot(&M);
	s = mt_session(&M, "io", 0, 0);
	cds_wait_up(&M, &A);
	read_back(s, &f, 2 * MiB, 7, MiB + 100);

	t_release(&f);
	t_orphan_sweep(s);
	t_object_lost(s);
	t_open_stateids(s);
	t_mirrors(s);

	nfs41c_session_destroy(s);
	cds_stop(&A);
	mt_finish(&M);
	free(buf);
	free(rbuf);
	printf("ok\n");
	return 0;
}
