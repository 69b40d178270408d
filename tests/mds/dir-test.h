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
uint64_t dt_fh_ino(const struct dt_fh *f);
uint32_t dt_fh_export(const struct dt_fh *f);

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
struct dt_fh dt_getfh_res(const COMPOUND4res *res, unsigned i);

/* PUTROOTFH, LOOKUP of each '/'-separated component, GETFH: the status of
 * the first op that failed (NFS4_OK and *out filled if none did). */
nfsstat4 dt_walk(struct nfs41c_session *s, const char *path, struct dt_fh *out);

/* One op after PUTFH(fh); returns its status.  res/ar for the caller to read. */
nfsstat4 dt_on(struct nfs41c_session *s, const struct dt_fh *fh, nfs_argop4 op, COMPOUND4res *res,
	       struct xdr_arena *ar);

/* The same, when the reply does not matter beyond its status. */
nfsstat4 dt_do(struct nfs41c_session *s, const struct dt_fh *fh, nfs_argop4 op);

/* PUTFH(src) SAVEFH PUTFH(dst) op: RENAME and LINK. */
nfsstat4 dt_do2(struct nfs41c_session *s, const struct dt_fh *src, const struct dt_fh *dst,
		nfs_argop4 op, COMPOUND4res *res, struct xdr_arena *ar);

/* Setup through the store (no protocol involved). */
uint64_t dt_store_make(struct mt *t, uint64_t dir, const char *name, uint8_t type, uint32_t mode,
		       uint32_t uid, uint32_t gid);

/* mds_dir_lookup() of name in dir: 0 or -errno, the attributes in *attr. */
int dt_store_lookup(struct mt *t, uint64_t dir, const char *name, struct mds_attr *attr);

/* ino's attributes, from the store. */
struct mds_attr dt_store_attr(struct mt *t, uint64_t ino);

/* Replace the exports and reload them (SIGHUP's path). */
void dt_exports(struct mt *t, const char *text);

/* The store's root inode. */
uint64_t dt_root(struct mt *t);

#endif
