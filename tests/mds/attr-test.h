/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the attribute tests (op_attr.c): COMPOUNDs of either minor
 * version as any AUTH_SYS user (uid, gid, supplementary groups) on a
 * session's slot 0, objects made directly in the store, their filehandles,
 * and a decoder of the fattr4 the server returns that knows every
 * attribute's type (so a reply holding an attribute it cannot decode, or
 * bytes left over, fails the test).
 *
 * Include "config.h" before this header.
 */
#ifndef BRAID_TESTS_MDS_ATTR_TEST_H
#define BRAID_TESTS_MDS_ATTR_TEST_H

#include "tests/mds/mds-test.h"

#include "mds/fh.h"
#include "mds/mds_impl.h"

/* A session whose COMPOUNDs we build ourselves (slot 0, our seqids). */
struct at {
	struct mt *t;
	struct nfs41c_session *s;
	sessionid4 sid;
	uint32_t seqid;
};

/* Who sends a COMPOUND (AUTH_SYS). */
struct at_cred {
	uint32_t uid, gid;
	uint32_t ngids;
	uint32_t gids[8];
};
/* root, with no supplementary groups. */
extern const struct at_cred at_root;

/* A session of t's default connection, as owner. */
void at_open(struct at *a, struct mt *t, const char *owner);

/* Ends the session (before the MDS stops). */
void at_close(struct at *a);

/* SEQUENCE + ops, minor version 1 or 2, as cr; the reply must come. */
void at_compound(struct at *a, uint32_t minor, const struct at_cred *cr, const nfs_argop4 *ops,
		 unsigned n, COMPOUND4res *res, struct xdr_arena *arena);

/* The status of op i (0-based, after SEQUENCE); the op must have run. */
nfsstat4 at_status(const COMPOUND4res *res, unsigned i);

/*
 * Objects.
 */
/* The id and the root inode of the export at path (which must exist). */
uint32_t at_export_id(struct mt *t, const char *path);
uint64_t at_export_root(struct mt *t, const char *path);

/* The handle of ino reached through export_id (0: the pseudo filesystem). */
nfs_fh4 at_fh(struct mt *t, struct xdr_arena *arena, uint64_t ino, uint32_t export_id);

/* An object made through the store (GUARDED) in dir: its inode.  Symlinks
 * point at "target/of/link", devices are 5,1. */
uint64_t at_make(struct mt *t, uint64_t dir, const char *name, uint8_t type, uint32_t mode,
		 uint32_t uid, uint32_t gid);

/* ino's attributes, from the store. */
struct mds_attr at_stat(struct mt *t, uint64_t ino);

/*
 * Ops.
 */
static inline nfs_argop4 at_getattr(bitmap4 want)
{
	nfs_argop4 o = {.argop = OP_GETATTR};
	o.u.opgetattr.attr_request = want;
	return o;
}

static inline nfs_argop4 at_setattr(const fattr4 *f)
{
	nfs_argop4 o = {.argop = OP_SETATTR};
	o.u.opsetattr.obj_attributes = *f; /* stateid: the anonymous one (zeros) */
	return o;
}

static inline bool at_has(const bitmap4 *b, unsigned n)
{
	return n / 32 < b->len && (b->val[n / 32] >> (n % 32) & 1);
}

/*
 * Building fattr4 values for SETATTR / VERIFY: append with the generated
 * encoders into an encoder, then at_fattr() flattens.
 */
struct at_fb {
	struct xdr_enc e;
	struct iovec iov[64];
	uint8_t buf[8192];
};

/* An empty builder; at_fb_vals(): what was appended, flattened into arena. */
void at_fb_init(struct at_fb *b, struct xdr_arena *arena);
attrlist4 at_fb_vals(struct at_fb *b, struct xdr_arena *arena);

static inline utf8str_mixed at_str(const char *s)
{
	return xdr_opaque_of(s, strlen(s));
}

/*
 * Decoding the server's fattr4.
 */
struct at_attrs {
	bitmap4 mask;
	bitmap4 supported, exclcreat;
	uint32_t type, fh_expire_type, lease_time, rdattr_error, aclsupport, maxlink, maxname, mode,
	    numlinks, layout_blksize, layout_alignment, change_attr_type;
	uint64_t change, size, fileid, files_avail, files_free, files_total, maxfilesize, maxread,
	    maxwrite, space_avail, space_free, space_total, space_used, mounted_on_fileid;
	bool link_support, symlink_support, named_attr, unique_handles, cansettime,
	    case_insensitive, case_preserving, chown_restricted, homogeneous, no_trunc,
	    xattr_support;
	fsid4 fsid;
	specdata4 rawdev;
	nfs_fh4 fh;
	char owner[64], group[64];
	nfstime4 atime, btime, delta, ctime, mtime;
	fattr4_fs_layout_types layout_types;
	fattr4_mdsthreshold mdsthreshold;
};

/* Decodes every attribute in f->attrmask; fails on one it does not know. */
void at_decode(const fattr4 *f, struct xdr_arena *arena, struct at_attrs *o);

/* GETATTR of want on fh; its status, and the attributes when NFS4_OK. */
nfsstat4 at_get(struct at *a, uint32_t minor, const struct at_cred *cr, const nfs_fh4 *fh,
		bitmap4 want, struct xdr_arena *arena, struct at_attrs *out);

#endif
