/* SPDX-License-Identifier: MIT */
/* braid-mds attributes (mds/op_attr.c): the fattr4 codec the other op
 * groups use. */
#ifndef BRAID_MDS_ATTR_H
#define BRAID_MDS_ATTR_H

#include <stdint.h>

#include "nfs4_prot.h"

#include "mds/store.h"

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
/* The supported_attrs bitmap (NFSv4.2's; a 4.1 COMPOUND sees it without
 * change_attr_type, mode_umask and xattr_support). */
void mds_attr_supported(bitmap4 *out, struct xdr_arena *arena);

#endif
