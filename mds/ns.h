/* SPDX-License-Identifier: MIT */
/*
 * Namespace changes as both NFS versions make them (NFSv4's op_dir.c and
 * op_state.c, NFSv3's nfs3.c): the permission checks and the store op,
 * one copy.  Each returns an nfsstat4; NFSv3's nfsstat3 has the same
 * numbers for every status both define, and mds_nfs3_status() (nfs3.c)
 * maps the others.  Callers check the handles, the names (each version
 * has its rules) and, for NFSv4, the grace period first.
 */
#ifndef BRAID_MDS_NS_H
#define BRAID_MDS_NS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nfs4_prot.h"

#include "mds/store.h"

struct braid_mds;
struct mds_cred;
struct mds_fh;

bool mds_cred_in_group(const struct mds_cred *cr, uint32_t gid);
/* May cr change entries of dir?  NFS4ERR_ROFS on the pseudo fs and ro
 * exports, NFS4ERR_ACCESS without write and search permission. */
nfsstat4 mds_dir_may_change(const struct mds_cred *cr, const struct mds_attr *dir);
/* Search permission; the pseudo fs is open to every client (it shows only export paths). */
nfsstat4 mds_dir_may_search(const struct mds_cred *cr, const struct mds_attr *dir);

/*
 * A directory, symlink, device, socket or fifo: ar has name, type, default
 * mode and the type's data; sa what the client asked (mode, owner, group,
 * times; anything else NFS4ERR_INVAL).  The owner is cr's unless root
 * gives another, the group the directory's when it is setgid.
 */
nfsstat4 mds_ns_make(struct braid_mds *mds, const struct mds_cred *cr, const struct mds_attr *dir,
		     struct mds_create_args *ar, const struct mds_setattr_args *sa,
		     struct mds_create_res *res);
/*
 * A regular file with the directory's layout policy (OPEN's create and
 * NFSv3's CREATE): the name must be free (NFS4ERR_EXIST when it is taken
 * by the time the store runs: the caller judges what is there); verf
 * for EXCLUSIVE is kept in the inode (mds_attr.verf).
 */
nfsstat4 mds_ns_create_file(struct braid_mds *mds, const struct mds_cred *cred,
			    const struct mds_attr *dir, const char *name, size_t len,
			    enum mds_create_how how, const struct mds_setattr_args *sa,
			    const uint8_t *verf, struct mds_attr *attr, struct mds_cinfo *cinfo);
/* Unlink name (flags: MDS_REMOVE_*): the sticky bit, export roots (NFS4ERR_FILE_OPEN),
 * an orphan's data released.  mds_dir_may_change() is the caller's. */
nfsstat4 mds_ns_remove(struct braid_mds *mds, const struct mds_cred *cr, const struct mds_attr *dir,
		       const char *name, size_t len, unsigned flags, struct mds_remove_res *rr);
/* rename(2) (NFS4ERR_ISDIR/NOTDIR for incompatible types, which NFSv4
 * answers EXIST); mds_dir_may_change() of both directories is the caller's. */
nfsstat4 mds_ns_rename(struct braid_mds *mds, const struct mds_cred *scr,
		       const struct mds_attr *sdir, const char *sname, size_t slen,
		       const struct mds_cred *tcr, const struct mds_attr *tdir, const char *tname,
		       size_t tlen, struct mds_rename_res *rr);
/* A hard link to ofh's object in dfh's directory (one export: NFS4ERR_XDEV). */
nfsstat4 mds_ns_link(struct braid_mds *mds, const struct mds_cred *cr, const struct mds_fh *ofh,
		     const struct mds_attr *obj, const struct mds_fh *dfh,
		     const struct mds_attr *dir, const char *name, size_t len,
		     struct mds_link_res *lr);

/*
 * READDIR's walk: entries after cookie with their attributes, read in
 * batches (each batch one snapshot; cookies are stable, so a batch resumes
 * exactly after the previous one).  add() takes an entry, or sets *full to
 * end the reply before it; batch() says how many entries are worth reading
 * next.  *eof: the directory's end was reached with every entry taken.
 */
struct mds_rd_ent {
	uint64_t cookie;
	struct mds_attr attr;
	uint32_t name_len;
	char name[MDS_NAME_MAX];
};
struct mds_rd_walk {
	nfsstat4 (*add)(void *arg, const struct mds_rd_ent *e, bool *full);
	unsigned (*batch)(void *arg);
	void *arg;
};
nfsstat4 mds_readdir_walk(struct braid_mds *mds, uint64_t dir, uint64_t cookie,
			  const struct mds_rd_walk *w, bool *eof);

#endif
