/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the namespace op tests (mds/op_dir.c): argument builders,
 * the filehandle fields a test may read (layout in mds/fh.h), and
 * setup straight through the in-process MDS's store.
 *
 * Include "config.h" and "tests/mds/mds-test.h" before this header.
 */
#ifndef BRAID_TESTS_MDS_DIR_TEST_H
#define BRAID_TESTS_MDS_DIR_TEST_H

#include <endian.h>

/* A filehandle copied out of a reply's arena. */
struct dt_fh {
	uint8_t b[NFS4_FHSIZE];
	uint32_t len;
};

static inline nfs_fh4 dt_fh4(const struct dt_fh *f)
{
	return xdr_opaque_of(f->b, f->len);
}

/* Inode number and export id of an MDS filehandle (bytes 16..23, 8..11). */
static inline uint64_t dt_fh_ino(const struct dt_fh *f)
{
	uint64_t v;
	CHECK(f->len == 40);
	memcpy(&v, f->b + 16, 8);
	return be64toh(v);
}

static inline uint32_t dt_fh_export(const struct dt_fh *f)
{
	uint32_t v;
	CHECK(f->len == 40);
	memcpy(&v, f->b + 8, 4);
	return be32toh(v);
}

static inline nfs_argop4 dt_op(nfs_opnum4 op)
{
	nfs_argop4 a;
	memset(&a, 0, sizeof(a));
	a.argop = op;
	return a;
}

static inline component4 dt_name(const char *s)
{
	return xdr_opaque_of(s, strlen(s));
}

static inline nfs_argop4 dt_lookupp(void)
{
	return dt_op(OP_LOOKUPP);
}

static inline nfs_argop4 dt_savefh(void)
{
	return dt_op(OP_SAVEFH);
}

static inline nfs_argop4 dt_restorefh(void)
{
	return dt_op(OP_RESTOREFH);
}

static inline nfs_argop4 dt_create(nfs_ftype4 type, const char *name)
{
	nfs_argop4 a = dt_op(OP_CREATE);
	a.u.opcreate.objtype.type = type;
	a.u.opcreate.objname = dt_name(name);
	return a;
}

static inline nfs_argop4 dt_mkdir(const char *name)
{
	return dt_create(NF4DIR, name);
}

static inline nfs_argop4 dt_symlink(const char *name, const char *target)
{
	nfs_argop4 a = dt_create(NF4LNK, name);
	a.u.opcreate.objtype.u.linkdata = dt_name(target);
	return a;
}

static inline nfs_argop4 dt_remove(const char *name)
{
	nfs_argop4 a = dt_op(OP_REMOVE);
	a.u.opremove.target = dt_name(name);
	return a;
}

static inline nfs_argop4 dt_rename(const char *from, const char *to)
{
	nfs_argop4 a = dt_op(OP_RENAME);
	a.u.oprename.oldname = dt_name(from);
	a.u.oprename.newname = dt_name(to);
	return a;
}

static inline nfs_argop4 dt_link(const char *name)
{
	nfs_argop4 a = dt_op(OP_LINK);
	a.u.oplink.newname = dt_name(name);
	return a;
}

static inline nfs_argop4 dt_secinfo(const char *name)
{
	nfs_argop4 a = dt_op(OP_SECINFO);
	a.u.opsecinfo.name = dt_name(name);
	return a;
}

static inline nfs_argop4 dt_secinfo_no_name(secinfo_style4 style)
{
	nfs_argop4 a = dt_op(OP_SECINFO_NO_NAME);
	a.u.opsecinfo_no_name = style;
	return a;
}

static inline nfs_argop4 dt_getattr(bitmap4 want)
{
	nfs_argop4 a = dt_op(OP_GETATTR);
	a.u.opgetattr.attr_request = want;
	return a;
}

/* The fh of a GETFH result at op index i (0-based after SEQUENCE). */
static inline struct dt_fh dt_getfh_res(const COMPOUND4res *res, unsigned i)
{
	struct dt_fh f;
	CHECK_EQ(mt_status(res, i), NFS4_OK);
	const nfs_fh4 *o = &res->resarray.val[i + 1].u.opgetfh.u.resok4.object;
	CHECK(o->len <= NFS4_FHSIZE);
	memcpy(f.b, o->val, o->len);
	f.len = o->len;
	return f;
}

/* PUTROOTFH, LOOKUP of each '/'-separated component, GETFH: the status of
 * the first op that failed (NFS4_OK and *out filled if none did). */
static inline nfsstat4 dt_walk(struct nfs41c_session *s, const char *path, struct dt_fh *out)
{
	nfs_argop4 ops[34];
	char names[32][256];
	unsigned n = 0;
	ops[n++] = mt_putrootfh();
	for (const char *p = path; *p;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		size_t len = strcspn(p, "/");
		CHECK(n < 33 && len < 256);
		memcpy(names[n], p, len);
		names[n][len] = 0;
		ops[n] = mt_lookup(names[n]);
		n++;
		p += len;
	}
	ops[n++] = mt_getfh();
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	COMPOUND4res res;
	mt_compound(s, ops, n, &res, &ar);
	nfsstat4 st = res.status;
	if (st == NFS4_OK)
		*out = dt_getfh_res(&res, n - 1);
	xdr_arena_release(&ar);
	return st;
}

/* One op after PUTFH(fh); returns its status.  res/ar for the caller to read. */
static inline nfsstat4 dt_on(struct nfs41c_session *s, const struct dt_fh *fh, nfs_argop4 op,
			     COMPOUND4res *res, struct xdr_arena *ar)
{
	nfs_argop4 ops[2] = {dt_op(OP_PUTFH), op};
	ops[0].u.opputfh.object = dt_fh4(fh);
	mt_compound(s, ops, 2, res, ar);
	if (res->resarray.len < 3) /* PUTFH failed */
		return res->status;
	return mt_status(res, 1);
}

/* The same, when the reply does not matter beyond its status. */
static inline nfsstat4 dt_do(struct nfs41c_session *s, const struct dt_fh *fh, nfs_argop4 op)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	COMPOUND4res res;
	nfsstat4 st = dt_on(s, fh, op, &res, &ar);
	xdr_arena_release(&ar);
	return st;
}

/* PUTFH(src) SAVEFH PUTFH(dst) op: RENAME and LINK. */
static inline nfsstat4 dt_do2(struct nfs41c_session *s, const struct dt_fh *src,
			      const struct dt_fh *dst, nfs_argop4 op, COMPOUND4res *res,
			      struct xdr_arena *ar)
{
	nfs_argop4 ops[4] = {dt_op(OP_PUTFH), dt_savefh(), dt_op(OP_PUTFH), op};
	ops[0].u.opputfh.object = dt_fh4(src);
	ops[2].u.opputfh.object = dt_fh4(dst);
	mt_compound(s, ops, 4, res, ar);
	if (res->resarray.len < 5)
		return res->status;
	return mt_status(res, 3);
}

/* Setup through the store (no protocol involved). */
static inline uint64_t dt_store_make(struct mt *t, uint64_t dir, const char *name, uint8_t type,
				     uint32_t mode, uint32_t uid, uint32_t gid)
{
	struct mds_create_args a = {
	    .dir = dir,
	    .name = name,
	    .name_len = strlen(name),
	    .type = type,
	    .how = MDS_CREATE_GUARDED,
	    .mode = mode,
	    .uid = uid,
	    .gid = gid,
	    .symlink = "target",
	    .symlink_len = 6,
	};
	struct mds_create_res r;
	int rc = mds_dir_create(braid_mds_store(t->mds), &a, &r);
	if (rc)
		fprintf(stderr, "store create %s: %d\n", name, rc);
	CHECK(rc == 0);
	return r.attr.ino;
}

static inline int dt_store_lookup(struct mt *t, uint64_t dir, const char *name,
				  struct mds_attr *attr)
{
	uint64_t ino;
	return mds_dir_lookup(braid_mds_store(t->mds), dir, name, strlen(name), &ino, attr);
}

static inline struct mds_attr dt_store_attr(struct mt *t, uint64_t ino)
{
	struct mds_attr a;
	CHECK(mds_inode_getattr(braid_mds_store(t->mds), ino, &a) == 0);
	return a;
}

/* Replace the exports and reload them (SIGHUP's path). */
static inline void dt_exports(struct mt *t, const char *text)
{
	char msg[512];
	mt_write_file(t->exports_path, text, 0644);
	int rc = braid_mds_exports_reload(t->mds, msg, sizeof(msg));
	if (rc)
		fprintf(stderr, "exports reload: %s\n", msg);
	CHECK(rc == 0);
}

static inline uint64_t dt_root(struct mt *t)
{
	return mds_store_root(braid_mds_store(t->mds));
}

#endif
