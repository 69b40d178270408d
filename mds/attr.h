/* SPDX-License-Identifier: MIT */
/* braid-mds attributes (mds/op_attr.c): the fattr4 codec the other op
 * groups use. */
#ifndef BRAID_MDS_ATTR_H
#define BRAID_MDS_ATTR_H

#include <stdint.h>

#include "nfs4_prot.h"

#include "mds/store.h"

struct braid_mds;
struct nfs41_compound;
struct xdr_arena;

/*
 * fattr4 (op_attr.c).  Owner strings are numeric ("1000") under AUTH_SYS
 * (RFC 8881 §5.9); a non-numeric owner in SETATTR is NFS4ERR_BADOWNER.
 */
/* The attributes asked for that the server supports, encoded from attr
 * (the current filehandle's inode: FATTR4_FILEHANDLE is c->fh).
 * fsid and fs-wide attributes come from mds (space totals from dsreg). */
nfsstat4 mds_attr_encode(struct nfs41_compound *c, const struct mds_attr *attr, const bitmap4 *want,
			 fattr4 *out);
/* The same for another object (READDIR entries): fh/fhlen is its handle. */
nfsstat4 mds_attr_encode_fh(struct nfs41_compound *c, const struct mds_attr *attr, const void *fh,
			    uint32_t fhlen, const bitmap4 *want, fattr4 *out);
/*
 * A READDIR entry whose attributes could not be read (RFC 8881 §5.8.1.12):
 * when want has rdattr_error, out holds just rdattr_error = err and NFS4_OK
 * is returned; otherwise err is returned for READDIR to fail with.
 */
nfsstat4 mds_attr_encode_error(struct nfs41_compound *c, nfsstat4 err, const bitmap4 *want,
			       fattr4 *out);
/*
 * Decodes createattrs (OPEN, CREATE) into a->mask/values, adding to what
 * the caller put in *a; 'set' receives the bitmap of those applied
 * (attrsset).  Unsupported or read-only attributes: NFS4ERR_ATTRNOTSUPP /
 * NFS4ERR_INVAL as RFC 8881 §18.30.3 says; a malformed attrlist
 * NFS4ERR_BADXDR; a non-numeric owner NFS4ERR_BADOWNER.  mode, mode_umask
 * (RFC 8275: mode & ~umask) and mode_set_masked all give MDS_SET_MODE;
 * times give MDS_SET_[AM]TIME or _NOW.  (SETATTR decodes with its rules.)
 */
nfsstat4 mds_attr_decode_set(struct nfs41_compound *c, const fattr4 *in, struct mds_setattr_args *a,
			     bitmap4 *set);
/* The fsid of the namespace (fattr4's major, fattr3's fsid). */
uint64_t mds_fsid(const struct braid_mds *mds);
/* Space a writer of a's file (or of new files in directory a) sees:
 * the data servers' bytes over the copies each takes (space_total/avail). */
void mds_fs_space(struct braid_mds *mds, const struct mds_attr *a, uint64_t *total,
		  uint64_t *avail);
/* Inodes: an estimate from the store's disk (files_total/free/avail). */
void mds_fs_files(const struct braid_mds *mds, uint64_t *total, uint64_t *free_,
		  uint64_t *avail);

/*
 * SETATTR's permission checks (POSIX and knfsd's, op_attr.c's top) and the
 * change, applied to the version of the inode the checks read (retried on
 * a race), then a size change carried to the data servers.  a holds what
 * to set; how says how the mode was given; with ctime_guard, the change
 * applies only while the ctime is that (NFSv3's guard): NFS4ERR_NOT_SAME
 * otherwise.  *at is the inode as checked and, on success, as changed.
 */
struct mds_setattr_how {
	bool mode, masked;	    /* mode given (a->mode), or mode_set_masked */
	uint32_t mm_value, mm_mask; /* mode_set_masked */
	const struct mds_time *ctime_guard;
};
struct mds_cred;
struct mds_fh;
nfsstat4 mds_setattr_run(struct braid_mds *mds, const struct mds_cred *cr, const struct mds_fh *fh,
			 struct mds_attr *at, const struct mds_setattr_args *a,
			 const struct mds_setattr_how *how, struct mds_setattr_res *out);

/* The supported_attrs bitmap (NFSv4.2's; a 4.1 COMPOUND sees it without
 * change_attr_type, mode_umask and xattr_support). */
void mds_attr_supported(bitmap4 *out, struct xdr_arena *arena);

#endif
