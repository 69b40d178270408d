/* SPDX-License-Identifier: MIT */
/*
 * NFSv3 (RFC 1813) on braid-mds: every procedure, on the handles MOUNT
 * gives (mds/fh.h: a handle carries its export), through the checks and
 * store operations the NFSv4 ops use (mds_call_fh/mds_call_cred, mds/ns.h,
 * mds_setattr_run, mds/io.h); what differs is the protocol around them.
 *
 * - Exports: every call re-checks the handle's export against the client,
 *   flavor, "secure" and squashing (mds_call_cred).  As knfsd's
 *   nfsd3_map_status: a flavor the export does not take is NFS3ERR_ACCES
 *   (MOUNT told the client the flavors), an export no longer there
 *   NFS3ERR_STALE, a client it no longer admits NFS3ERR_ACCES, a port not
 *   reserved under "secure" NFS3ERR_PERM.  The pseudo filesystem (export
 *   id 0, NFSv4's) is NFS3ERR_STALE.
 * - LOOKUP of "." is the directory, of ".." its parent, or the directory
 *   itself at an export root (knfsd's rule: NFSv3 never leaves an export
 *   upward); a child that is another export's root is entered with that
 *   export's rules, or NFS3ERR_ACCES when it does not admit the client.
 * - READDIR/READDIRPLUS give "." (cookie 1) and ".." (cookie 2) first,
 *   then the hashed directory's stable cookies (mds/store.h, never 0, 1 or
 *   2); the verifier is the store's (an all-zero one is taken too, as the
 *   RFC lets a server ignore it).  Replies fill count/maxcount (at most
 *   RD3_MAX bytes) and READDIRPLUS's dircount.
 * - CREATE EXCLUSIVE keeps the verifier in the inode (mds_attr.verf): a
 *   retransmission with the same verifier gets the file, another verifier
 *   NFS3ERR_EXIST (§3.3.8).  MKNOD makes CHR, BLK, SOCK and FIFO; other
 *   types are NFS3ERR_BADTYPE.
 * - File data goes through the MDS to the data servers as NFSv4's proxied
 *   READ/WRITE/COMMIT (mds/io.h): the same write gate, sizes and
 *   verifiers.  [mds] data_io = refuse is NFSv4's only: an NFSv3 client
 *   has no layouts to use instead.  NFSv3 I/O carries no open state, so
 *   NFSv4 share reservations and grace do not hold it (as in knfsd);
 *   permissions are checked on every call, the owner may read and write
 *   its file whatever its mode (knfsd's owner override).
 * - Non-idempotent procedures are answered from the engine's reply cache
 *   when retransmitted (NFSD_PROC_DRC, nfsd/drc.h).
 */
#include "config.h"

#include "nfs3_prot.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mds/attr.h"
#include "mds/fh.h"
#include "mds/io.h"
#include "mds/mds_impl.h"
#include "mds/nfs3.h"
#include "mds/ns.h"
#include "mds/state.h"
#include "nfsd/drc.h"

#define RD3_MAX	     (256u << 10) /* largest READDIR(PLUS) reply, as NFSv4's */
#define DRC3_ENTRIES 8192
#define DRC3_BYTES   (8u << 20)

nfsstat3 mds_nfs3_status(nfsstat4 st)
{
	switch (st) {
	case NFS4_OK:
	case NFS4ERR_PERM:
	case NFS4ERR_NOENT:
	case NFS4ERR_IO:
	case NFS4ERR_NXIO:
	case NFS4ERR_ACCESS:
	case NFS4ERR_EXIST:
	case NFS4ERR_XDEV:
	case NFS4ERR_NOTDIR:
	case NFS4ERR_ISDIR:
	case NFS4ERR_INVAL:
	case NFS4ERR_FBIG:
	case NFS4ERR_NOSPC:
	case NFS4ERR_ROFS:
	case NFS4ERR_MLINK:
	case NFS4ERR_NAMETOOLONG:
	case NFS4ERR_NOTEMPTY:
	case NFS4ERR_DQUOT:
	case NFS4ERR_STALE:
	case NFS4ERR_BADHANDLE:
	case NFS4ERR_BAD_COOKIE:
	case NFS4ERR_NOTSUPP:
	case NFS4ERR_TOOSMALL:
	case NFS4ERR_SERVERFAULT:
	case NFS4ERR_BADTYPE:
	case NFS4ERR_DELAY: /* NFS3ERR_JUKEBOX */
		return (nfsstat3)st;
	case NFS4ERR_GRACE:
		return NFS3ERR_JUKEBOX;
	case NFS4ERR_NOT_SAME: /* mds_setattr_run's guard */
		return NFS3ERR_NOT_SYNC;
	case NFS4ERR_WRONGSEC:
	case NFS4ERR_FILE_OPEN:
		return NFS3ERR_ACCES;
	case NFS4ERR_NOFILEHANDLE:
		return NFS3ERR_BADHANDLE;
	case NFS4ERR_SYMLINK:
	case NFS4ERR_WRONG_TYPE:
	case NFS4ERR_BADCHAR:
	case NFS4ERR_BADNAME:
		return NFS3ERR_INVAL;
	default:
		return NFS3ERR_IO;
	}
}

static nfsstat3 errno3(int rc)
{
	if (rc == -ENOENT)
		return NFS3ERR_STALE; /* the inode went away meanwhile */
	if (rc == -ENOTSUP)
		return NFS3ERR_IO; /* an object on a data server we cannot reach over NFSv3 */
	if (rc == -ENOKEY)
		return NFS3ERR_JUKEBOX; /* krb5p, a data server hop we cannot seal (mds/io.h) */
	return mds_nfs3_status(mds_nfs4_status(rc));
}

/* ------------------------------------------------------------ attributes */

static nfstime3 t3(struct mds_time t)
{
	nfstime3 r = {.seconds = (uint32_t)t.sec, .nseconds = t.nsec};
	return r;
}

static void fattr3_of(const struct braid_mds *mds, const struct mds_attr *a, fattr3 *f)
{
	memset(f, 0, sizeof(*f));
	f->type = (ftype3)a->type; /* enum mds_type is numbered as ftype3 */
	f->mode = a->mode & 07777;
	f->nlink = a->nlink;
	f->uid = a->uid;
	f->gid = a->gid;
	f->size = a->size;
	f->used = a->type == MDS_REG ? a->space_used : 4096;
	f->rdev.specdata1 = a->rdev_major;
	f->rdev.specdata2 = a->rdev_minor;
	f->fsid = mds_fsid(mds);
	f->fileid = a->ino;
	f->atime = t3(a->atime);
	f->mtime = t3(a->mtime);
	f->ctime = t3(a->ctime);
}

static void post_of(const struct braid_mds *mds, const struct mds_attr *a, post_op_attr *p)
{
	p->attributes_follow = true;
	fattr3_of(mds, a, &p->u.attributes);
}

/* ino's attributes now, or none when they cannot be read. */
static void post_ino(struct braid_mds *mds, uint64_t ino, post_op_attr *p)
{
	struct mds_attr a;
	p->attributes_follow = false;
	if (!mds_inode_getattr(mds->store, ino, &a))
		post_of(mds, &a, p);
}

static void pre_of(const struct mds_attr *a, pre_op_attr *p)
{
	p->attributes_follow = true;
	p->u.attributes.size = a->size;
	p->u.attributes.mtime = t3(a->mtime);
	p->u.attributes.ctime = t3(a->ctime);
}

/* wcc_data of a directory (or file) a changed: before from *a, after now. */
static void wcc_of(struct braid_mds *mds, const struct mds_attr *a, wcc_data *w)
{
	pre_of(a, &w->before);
	post_ino(mds, a->ino, &w->after);
}

/* sattr3 -> what to set; NFS3ERR_INVAL for a mode outside 07777 is not
 * needed: the store keeps permission bits only. */
static void sattr_in(const sattr3 *s, struct mds_setattr_args *a)
{
	memset(a, 0, sizeof(*a));
	if (s->mode.set_it) {
		a->mask |= MDS_SET_MODE;
		a->mode = s->mode.u.mode & 07777;
	}
	if (s->uid.set_it) {
		a->mask |= MDS_SET_UID;
		a->uid = s->uid.u.uid;
	}
	if (s->gid.set_it) {
		a->mask |= MDS_SET_GID;
		a->gid = s->gid.u.gid;
	}
	if (s->size.set_it) {
		a->mask |= MDS_SET_SIZE;
		a->size = s->size.u.size;
	}
	if (s->atime.set_it == SET_TO_SERVER_TIME) {
		a->mask |= MDS_SET_ATIME_NOW;
	} else if (s->atime.set_it == SET_TO_CLIENT_TIME) {
		a->mask |= MDS_SET_ATIME;
		a->atime.sec = s->atime.u.atime.seconds;
		a->atime.nsec = s->atime.u.atime.nseconds;
	}
	if (s->mtime.set_it == SET_TO_SERVER_TIME) {
		a->mask |= MDS_SET_MTIME_NOW;
	} else if (s->mtime.set_it == SET_TO_CLIENT_TIME) {
		a->mask |= MDS_SET_MTIME;
		a->mtime.sec = s->mtime.u.mtime.seconds;
		a->mtime.nsec = s->mtime.u.mtime.nseconds;
	}
}

/* ------------------------------------------------------------- handles */

/* A handle of this request, checked as NFSv4's current filehandle is. */
static nfsstat3 fh3(struct nfsd_req *req, const nfs_fh3 *h, struct mds_fh *fh, struct mds_attr *a,
		    struct mds_cred *cr)
{
	struct braid_mds *mds = req->priv;
	struct mds_fh f;
	nfsstat4 st = mds_call_fh(mds, req, h->data.val, h->data.len, &f, a, cr);
	if (st)
		return mds_nfs3_status(st);
	if (f.export_id == 0)
		return NFS3ERR_STALE; /* the pseudo filesystem is NFSv4's */
	if (fh)
		*fh = f;
	return NFS3_OK;
}

/* The handle of ino under export_id, in the request's arena. */
static nfs_fh3 fh3_make(struct nfsd_req *req, const struct mds_attr *a, uint32_t export_id)
{
	nfs_fh3 h = {.data = {0, NULL}};
	uint8_t *b = xdr_arena_alloc(&req->arena, MDS_FH_SIZE);
	if (b) {
		struct mds_fh f = {.ino = a->ino, .gen = a->generation, .export_id = export_id};
		mds_fh_make(req->priv, &f, b);
		h.data = xdr_opaque_of(b, MDS_FH_SIZE);
	}
	return h;
}

static void obj_of(struct nfsd_req *req, const struct mds_attr *a, uint32_t export_id,
		   post_op_fh3 *fh, post_op_attr *attr)
{
	fh->u.handle = fh3_make(req, a, export_id);
	fh->handle_follows = fh->u.handle.data.len != 0;
	post_of(req->priv, a, attr);
}

static bool is_dot(const filename3 *n)
{
	return n->len == 1 && n->val[0] == '.';
}

static bool is_dotdot(const filename3 *n)
{
	return n->len == 2 && n->val[0] == '.' && n->val[1] == '.';
}

static bool is_dots(const filename3 *n)
{
	return is_dot(n) || is_dotdot(n);
}

/* A name of a directory entry: not empty, no '/' or NUL, at most NAME_MAX.
 * "." and ".." are each procedure's to judge. */
static nfsstat3 name3(const filename3 *n)
{
	if (n->len > MDS_NAME_MAX)
		return NFS3ERR_NAMETOOLONG;
	if (n->len == 0 || memchr(n->val, '/', n->len) || memchr(n->val, 0, n->len))
		return NFS3ERR_INVAL;
	return NFS3_OK;
}

/* A file handle of a change: its attributes before (and, until the change
 * is made, after) in wcc, even on failure. */
static nfsstat3 file3(struct nfsd_req *req, const nfs_fh3 *h, struct mds_fh *fh, struct mds_attr *a,
		      struct mds_cred *cr, wcc_data *wcc)
{
	nfsstat3 st = fh3(req, h, fh, a, cr);
	if (st)
		return st;
	pre_of(a, &wcc->before);
	post_of(req->priv, a, &wcc->after);
	return NFS3_OK;
}

/* A directory handle of a change: its attributes, for wcc, even on failure. */
static nfsstat3 dir3(struct nfsd_req *req, const nfs_fh3 *h, struct mds_fh *fh, struct mds_attr *a,
		     struct mds_cred *cr, wcc_data *wcc)
{
	nfsstat3 st = file3(req, h, fh, a, cr, wcc);
	if (st)
		return st;
	return a->type == MDS_DIR ? NFS3_OK : NFS3ERR_NOTDIR;
}

/* The owner may read and write its file whatever the mode (knfsd's
 * NFSD_MAY_OWNER_OVERRIDE: a file created 0444 and still being written). */
static nfsstat3 may_io(const struct mds_cred *cr, const struct mds_attr *a, bool write)
{
	if (write && (!cr->rw || cr->pseudo))
		return NFS3ERR_ROFS;
	if (a->type != MDS_REG)
		return a->type == MDS_DIR ? NFS3ERR_ISDIR : NFS3ERR_INVAL;
	uint32_t want = write ? ACCESS4_MODIFY : ACCESS4_READ | ACCESS4_EXECUTE;
	if (cr->uid == a->uid || mds_access(cr, a, want))
		return NFS3_OK;
	return NFS3ERR_ACCES;
}

/* ---------------------------------------------------------- procedures */

static int p3_null(struct nfsd_req *req, void *args, void *res)
{
	(void)req, (void)args, (void)res;
	return NFSD_SUCCESS;
}

/* RFC 1813 §3.3.1 */
static int p3_getattr(struct nfsd_req *req, void *argp, void *resp)
{
	GETATTR3args *a = argp;
	GETATTR3res *r = resp;
	struct mds_attr at;
	struct mds_cred cr;
	if ((r->status = fh3(req, &a->object, NULL, &at, &cr)))
		return NFSD_SUCCESS;
	/* RFC 8881 §10.4.3: an NFSv4 client's write delegation is recalled */
	if (at.type == MDS_REG && mds_deleg_break_write(req->priv, at.ino, 0) == -EAGAIN)
		r->status = NFS3ERR_JUKEBOX;
	else
		fattr3_of(req->priv, &at, &r->u.resok.obj_attributes);
	return NFSD_SUCCESS;
}

/* §3.3.2: with the guard, only while the ctime is the client's. */
static int p3_setattr(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	SETATTR3args *a = argp;
	SETATTR3res *r = resp;
	wcc_data *wcc = &r->u.resok.obj_wcc; /* resfail has the same shape */
	struct mds_fh fh;
	struct mds_attr at;
	struct mds_cred cr;
	if ((r->status = fh3(req, &a->object, &fh, &at, &cr)))
		return NFSD_SUCCESS;
	pre_of(&at, &wcc->before);
	struct mds_setattr_args sa;
	sattr_in(&a->new_attributes, &sa);
	struct mds_time guard = {a->guard.u.obj_ctime.seconds, a->guard.u.obj_ctime.nseconds};
	struct mds_setattr_how how = {.mode = (sa.mask & MDS_SET_MODE) != 0,
				      .ctime_guard = a->guard.check ? &guard : NULL};
	nfsstat4 st = NFS4_OK;
	if (!cr.rw)
		st = NFS4ERR_ROFS;
	else if ((sa.mask & MDS_SET_SIZE) && at.type != MDS_REG)
		st = at.type == MDS_DIR ? NFS4ERR_ISDIR : NFS4ERR_INVAL;
	else if ((sa.mask & MDS_SET_SIZE) && sa.size > MDS_FILE_MAX)
		st = NFS4ERR_FBIG;
	else if (!sa.mask && how.ctime_guard &&
		 (at.ctime.sec != guard.sec || at.ctime.nsec != guard.nsec))
		st = NFS4ERR_NOT_SAME;
	else if (sa.mask)
		st = mds_setattr_run(mds, &cr, &fh, &at, &sa, &how, NULL);
	r->status = mds_nfs3_status(st);
	post_ino(mds, fh.ino, &wcc->after);
	return NFSD_SUCCESS;
}

/* §3.3.3 */
static int p3_lookup(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	LOOKUP3args *a = argp;
	LOOKUP3res *r = resp;
	const filename3 *name = &a->what.name;
	struct mds_fh fh;
	struct mds_attr dir, at;
	struct mds_cred cr;
	if ((r->status = fh3(req, &a->what.dir, &fh, &dir, &cr)))
		return NFSD_SUCCESS;
	post_of(mds, &dir, &r->u.resfail.dir_attributes);
	if (dir.type != MDS_DIR) {
		r->status = NFS3ERR_NOTDIR;
		return NFSD_SUCCESS;
	}
	if ((r->status = name3(name)) ||
	    (r->status = mds_nfs3_status(mds_dir_may_search(&cr, &dir))))
		return NFSD_SUCCESS;
	uint32_t id = fh.export_id;
	uint64_t ino;
	struct mds_exports *x = mds_exports_get(mds);
	const struct mds_export *e = mds_export_by_root(x, fh.ino);
	bool at_root = e && e->id == id;
	int rc = 0;
	if (is_dot(name) || (is_dotdot(name) && at_root))
		at = dir; /* never above the export (knfsd) */
	else if (is_dotdot(name))
		rc = mds_inode_getattr(mds->store, dir.parent, &at);
	else if (!(rc = mds_dir_lookup(mds->store, fh.ino, (const char *)name->val, name->len, &ino,
				       &at)) &&
		 (e = mds_export_by_root(x, at.ino)))
		id = e->id; /* another export's root: its rules */
	mds_exports_put(x);
	struct mds_cred ccr;
	nfsstat4 st = rc		   ? mds_nfs4_status(rc)
		      : id != fh.export_id ? mds_call_cred(mds, req, id, &ccr)
					   : NFS4_OK;
	if ((r->status = mds_nfs3_status(st)))
		return NFSD_SUCCESS;
	LOOKUP3resok *ok = &r->u.resok;
	ok->dir_attributes = r->u.resfail.dir_attributes;
	ok->object = fh3_make(req, &at, id);
	post_of(mds, &at, &ok->obj_attributes);
	return NFSD_SUCCESS;
}

/* §3.3.4: ACCESS3_* are ACCESS4_*'s values. */
static int p3_access(struct nfsd_req *req, void *argp, void *resp)
{
	ACCESS3args *a = argp;
	ACCESS3res *r = resp;
	struct mds_attr at;
	struct mds_cred cr;
	if ((r->status = fh3(req, &a->object, NULL, &at, &cr)))
		return NFSD_SUCCESS;
	uint32_t all = ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY | ACCESS3_EXTEND |
		       ACCESS3_DELETE | ACCESS3_EXECUTE;
	r->u.resok.access = mds_access(&cr, &at, a->access & all);
	post_of(req->priv, &at, &r->u.resok.obj_attributes);
	return NFSD_SUCCESS;
}

/* §3.3.5 */
static int p3_readlink(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	READLINK3args *a = argp;
	READLINK3res *r = resp;
	struct mds_attr at;
	struct mds_cred cr;
	if ((r->status = fh3(req, &a->symlink, NULL, &at, &cr)))
		return NFSD_SUCCESS;
	post_of(mds, &at, &r->u.resok.symlink_attributes);
	if (at.type != MDS_LNK) {
		r->status = NFS3ERR_INVAL;
		return NFSD_SUCCESS;
	}
	char *buf = xdr_arena_alloc(&req->arena, MDS_SYMLINK_MAX);
	size_t len;
	int rc = buf ? mds_inode_readlink(mds->store, at.ino, buf, MDS_SYMLINK_MAX, &len) : -ENOMEM;
	if (!rc && len > MDS_SYMLINK_MAX)
		rc = -EIO;
	if ((r->status = errno3(rc)))
		return NFSD_SUCCESS;
	r->u.resok.data = xdr_opaque_of(buf, len);
	return NFSD_SUCCESS;
}

/* §3.3.6: at most MDS_IO_MAX (FSINFO rtmax); eof at the end. */
static int p3_read(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	READ3args *a = argp;
	READ3res *r = resp;
	struct mds_attr at;
	struct mds_cred cr;
	if ((r->status = fh3(req, &a->file, NULL, &at, &cr)))
		return NFSD_SUCCESS;
	post_of(mds, &at, &r->u.resfail.file_attributes);
	if ((r->status = may_io(&cr, &at, false)))
		return NFSD_SUCCESS;
	if (mds_deleg_break_write(mds, at.ino, 0) == -EAGAIN) {
		r->status = NFS3ERR_JUKEBOX; /* an NFSv4 writer's cache is recalled first */
		return NFSD_SUCCESS;
	}
	READ3resok *ok = &r->u.resok;
	bool eof;
	int rc = mds_io_read(mds, &at, mds_io_hop(&req->cred), a->offset, a->count, &req->arena,
			     &ok->data, &eof);
	if ((r->status = errno3(rc)))
		return NFSD_SUCCESS;
	ok->count = ok->data.len;
	ok->eof = eof;
	nfsd_req_payload(req, ok->data.val, ok->data.len); /* RFC 8267 (RDMA) */
	return NFSD_SUCCESS;
}

/* §3.3.7: the data servers' verifier; the size and mtime durable before the reply. */
static int p3_write(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	WRITE3args *a = argp;
	WRITE3res *r = resp;
	wcc_data *wcc = &r->u.resok.file_wcc;
	struct mds_attr at;
	struct mds_cred cr;
	if ((r->status = file3(req, &a->file, NULL, &at, &cr, wcc)) ||
	    (r->status = may_io(&cr, &at, true)))
		return NFSD_SUCCESS;
	if (a->data.len != a->count || a->stable > FILE_SYNC) {
		r->status = NFS3ERR_INVAL;
		return NFSD_SUCCESS;
	}
	/* RFC 8881 §10.4.4: NFSv4 clients' read delegations are recalled first */
	if ((r->status = mds_nfs3_status(mds_deleg_break_op(mds, at.ino, 0, MDS_DELEG_WRITE))))
		return NFSD_SUCCESS;
	uint32_t len = a->count < MDS_IO_MAX ? a->count : MDS_IO_MAX;
	struct mds_io_wres w;
	int rc = mds_io_write(mds, &at, mds_io_hop(&req->cred), a->offset, a->data.val, len,
			      (uint32_t)a->stable, &w);
	post_ino(mds, at.ino, &wcc->after);
	if ((r->status = errno3(rc)))
		return NFSD_SUCCESS;
	r->u.resok.count = w.count;
	r->u.resok.committed = (stable_how)w.committed;
	memcpy(r->u.resok.verf, w.verf, 8);
	return NFSD_SUCCESS;
}

/* §3.3.8 */
static int p3_create(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	CREATE3args *a = argp;
	CREATE3res *r = resp;
	const filename3 *name = &a->where.name;
	wcc_data *wcc = &r->u.resfail.dir_wcc; /* resok's is elsewhere: moved at the end */
	struct mds_fh fh;
	struct mds_attr dir, at;
	struct mds_cred cr;
	if ((r->status = dir3(req, &a->where.dir, &fh, &dir, &cr, wcc)) ||
	    (r->status = name3(name)))
		return NFSD_SUCCESS;
	if (is_dots(name)) {
		r->status = NFS3ERR_EXIST;
		return NFSD_SUCCESS;
	}
	struct mds_setattr_args sa = {0};
	const uint8_t *verf = NULL;
	enum mds_create_how how = MDS_CREATE_UNCHECKED;
	switch (a->how.mode) {
	case GUARDED:
		how = MDS_CREATE_GUARDED;
		/* fall through */
	case UNCHECKED:
		sattr_in(&a->how.u.obj_attributes, &sa);
		break;
	case EXCLUSIVE:
		how = MDS_CREATE_EXCLUSIVE;
		verf = a->how.u.verf;
		break;
	}
	nfsstat4 st = mds_dir_may_search(&cr, &dir);
	for (int tries = 0; !st; tries++) {
		uint64_t ino;
		int rc = mds_dir_lookup(mds->store, fh.ino, (const char *)name->val, name->len,
					&ino, &at);
		if (rc && rc != -ENOENT) {
			st = mds_nfs4_status(rc);
		} else if (!rc) {
			if (how == MDS_CREATE_GUARDED || at.type != MDS_REG)
				st = NFS4ERR_EXIST;
			else if (how == MDS_CREATE_EXCLUSIVE)
				/* §3.3.8: the same verifier is a retransmission of our create */
				st = memcmp(at.verf, verf, 8) ? NFS4ERR_EXIST : NFS4_OK;
			else if (sa.mask & MDS_SET_SIZE) {
				/* UNCHECKED on a file: only its size is set (knfsd) */
				struct mds_setattr_args ts = {.mask = MDS_SET_SIZE,
							      .size = sa.size};
				struct mds_fh ofh = {.ino = at.ino, .gen = at.generation};
				struct mds_setattr_how th = {0};
				st = !cr.rw ? NFS4ERR_ROFS
					    : mds_setattr_run(mds, &cr, &ofh, &at, &ts, &th, NULL);
			}
			break;
		} else if (tries == 2) {
			st = NFS4ERR_DELAY; /* created and removed under us twice */
		} else {
			struct mds_cinfo ci;
			st = mds_ns_create_file(mds, &cr, &dir, (const char *)name->val, name->len,
						how, &sa, verf, &at, &ci);
			if (st == NFS4ERR_EXIST)
				st = NFS4_OK; /* raced: judge what is there now */
			else if (!st)
				break;
		}
	}
	r->status = mds_nfs3_status(st);
	wcc_of(mds, &dir, wcc);
	if (!r->status) {
		wcc_data w = *wcc;	/* the two overlap */
		r->u.resok.dir_wcc = w; /* before resok's other fields overwrite it */
		obj_of(req, &at, fh.export_id, &r->u.resok.obj, &r->u.resok.obj_attributes);
	}
	return NFSD_SUCCESS;
}

/*
 * MKDIR, SYMLINK, MKNOD: ar's type and defaults, the client's attributes.
 * Their resok and resfail hold dir_wcc at different places: wcc is
 * resfail's, copied to ok_wcc on success.
 */
static nfsstat3 make3(struct nfsd_req *req, const diropargs3 *where, struct mds_create_args *ar,
		      const sattr3 *attrs, post_op_fh3 *obj, post_op_attr *obj_attr,
		      wcc_data *ok_wcc, wcc_data *wcc)
{
	struct braid_mds *mds = req->priv;
	struct mds_fh fh;
	struct mds_attr dir;
	struct mds_cred cr;
	nfsstat3 s;
	if ((s = dir3(req, &where->dir, &fh, &dir, &cr, wcc)) || (s = name3(&where->name)))
		return s;
	if (is_dots(&where->name))
		return NFS3ERR_EXIST;
	ar->name = (const char *)where->name.val;
	ar->name_len = where->name.len;
	struct mds_setattr_args sa;
	sattr_in(attrs, &sa);
	struct mds_create_res res;
	nfsstat4 st = mds_ns_make(mds, &cr, &dir, ar, &sa, &res);
	wcc_of(mds, &dir, wcc);
	if (!st) {
		wcc_data w = *wcc; /* the two overlap */
		*ok_wcc = w;
		obj_of(req, &res.attr, fh.export_id, obj, obj_attr);
	}
	return mds_nfs3_status(st);
}

/* §3.3.9 */
static int p3_mkdir(struct nfsd_req *req, void *argp, void *resp)
{
	MKDIR3args *a = argp;
	MKDIR3res *r = resp;
	struct mds_create_args ar = {.type = MDS_DIR, .mode = 0755};
	r->status = make3(req, &a->where, &ar, &a->attributes, &r->u.resok.obj,
			  &r->u.resok.obj_attributes, &r->u.resok.dir_wcc, &r->u.resfail.dir_wcc);
	return NFSD_SUCCESS;
}

/* §3.3.10 */
static int p3_symlink(struct nfsd_req *req, void *argp, void *resp)
{
	SYMLINK3args *a = argp;
	SYMLINK3res *r = resp;
	struct mds_create_args ar = {
	    .type = MDS_LNK,
	    .mode = 0777,
	    .symlink = (const char *)a->symlink.symlink_data.val,
	    .symlink_len = a->symlink.symlink_data.len,
	};
	r->status = make3(req, &a->where, &ar, &a->symlink.symlink_attributes, &r->u.resok.obj,
			  &r->u.resok.obj_attributes, &r->u.resok.dir_wcc, &r->u.resfail.dir_wcc);
	return NFSD_SUCCESS;
}

/* §3.3.11: devices, sockets and fifos; other types NFS3ERR_BADTYPE. */
static int p3_mknod(struct nfsd_req *req, void *argp, void *resp)
{
	MKNOD3args *a = argp;
	MKNOD3res *r = resp;
	struct mds_create_args ar = {.mode = 0644};
	const sattr3 *attrs;
	switch (a->what.type) {
	case NF3CHR:
	case NF3BLK:
		ar.type = a->what.type == NF3CHR ? MDS_CHR : MDS_BLK;
		ar.rdev_major = a->what.u.device.spec.specdata1;
		ar.rdev_minor = a->what.u.device.spec.specdata2;
		attrs = &a->what.u.device.dev_attributes;
		break;
	case NF3SOCK:
	case NF3FIFO:
		ar.type = a->what.type == NF3SOCK ? MDS_SOCK : MDS_FIFO;
		attrs = &a->what.u.pipe_attributes;
		break;
	default:
		r->status = NFS3ERR_BADTYPE;
		return NFSD_SUCCESS;
	}
	r->status = make3(req, &a->where, &ar, attrs, &r->u.resok.obj, &r->u.resok.obj_attributes,
			  &r->u.resok.dir_wcc, &r->u.resfail.dir_wcc);
	return NFSD_SUCCESS;
}

/* REMOVE (§3.3.12) and RMDIR (§3.3.13): "." and ".." are NFS3ERR_ACCES (knfsd). */
static nfsstat3 unlink3(struct nfsd_req *req, const diropargs3 *obj, unsigned flags, wcc_data *wcc)
{
	struct braid_mds *mds = req->priv;
	struct mds_fh fh;
	struct mds_attr dir;
	struct mds_cred cr;
	nfsstat3 s;
	if ((s = dir3(req, &obj->dir, &fh, &dir, &cr, wcc)) || (s = name3(&obj->name)))
		return s;
	if (is_dots(&obj->name))
		return NFS3ERR_ACCES;
	struct mds_remove_res rr;
	nfsstat4 st = mds_dir_may_change(&cr, &dir);
	if (!st)
		st = mds_ns_remove(mds, &cr, &dir, (const char *)obj->name.val, obj->name.len,
				   flags, &rr);
	wcc_of(mds, &dir, wcc);
	return mds_nfs3_status(st);
}

static int p3_remove(struct nfsd_req *req, void *argp, void *resp)
{
	REMOVE3args *a = argp;
	REMOVE3res *r = resp;
	r->status = unlink3(req, &a->object, MDS_REMOVE_NONDIR, &r->u.resfail.dir_wcc);
	return NFSD_SUCCESS;
}

static int p3_rmdir(struct nfsd_req *req, void *argp, void *resp)
{
	RMDIR3args *a = argp;
	RMDIR3res *r = resp;
	r->status = unlink3(req, &a->object, MDS_REMOVE_DIR, &r->u.resfail.dir_wcc);
	return NFSD_SUCCESS;
}

/* §3.3.14: "." and ".." are NFS3ERR_INVAL; between exports NFS3ERR_XDEV. */
static int p3_rename(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	RENAME3args *a = argp;
	RENAME3res *r = resp;
	RENAME3resfail *f = &r->u.resfail;
	struct mds_fh sfh, tfh;
	struct mds_attr sdir, tdir;
	struct mds_cred scr, tcr;
	if ((r->status = dir3(req, &a->from.dir, &sfh, &sdir, &scr, &f->fromdir_wcc)) ||
	    (r->status = dir3(req, &a->to.dir, &tfh, &tdir, &tcr, &f->todir_wcc)) ||
	    (r->status = name3(&a->from.name)) || (r->status = name3(&a->to.name)))
		return NFSD_SUCCESS;
	nfsstat4 st = NFS4_OK;
	if (is_dots(&a->from.name) || is_dots(&a->to.name))
		st = NFS4ERR_INVAL;
	else if (sfh.export_id != tfh.export_id)
		st = NFS4ERR_XDEV;
	else if (!(st = mds_dir_may_change(&scr, &sdir)) &&
		 !(st = mds_dir_may_change(&tcr, &tdir))) {
		struct mds_rename_res rr;
		st = mds_ns_rename(mds, &scr, &sdir, (const char *)a->from.name.val,
				   a->from.name.len, &tcr, &tdir, (const char *)a->to.name.val,
				   a->to.name.len, &rr);
	}
	r->status = mds_nfs3_status(st);
	wcc_of(mds, &sdir, &f->fromdir_wcc);
	wcc_of(mds, &tdir, &f->todir_wcc);
	return NFSD_SUCCESS;
}

/* §3.3.15 */
static int p3_link(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	LINK3args *a = argp;
	LINK3res *r = resp;
	LINK3resfail *f = &r->u.resfail;
	struct mds_fh ofh, dfh;
	struct mds_attr obj, dir;
	struct mds_cred ocr, cr;
	if ((r->status = fh3(req, &a->file, &ofh, &obj, &ocr)))
		return NFSD_SUCCESS;
	post_of(mds, &obj, &f->file_attributes);
	if ((r->status = dir3(req, &a->link.dir, &dfh, &dir, &cr, &f->linkdir_wcc)) ||
	    (r->status = name3(&a->link.name)))
		return NFSD_SUCCESS;
	struct mds_link_res lr;
	nfsstat4 st = is_dots(&a->link.name)
			  ? NFS4ERR_EXIST
			  : mds_ns_link(mds, &cr, &ofh, &obj, &dfh, &dir,
					(const char *)a->link.name.val, a->link.name.len, &lr);
	r->status = mds_nfs3_status(st);
	post_ino(mds, ofh.ino, &f->file_attributes);
	wcc_of(mds, &dir, &f->linkdir_wcc);
	return NFSD_SUCCESS;
}

/* ------------------------------------------------- READDIR, READDIRPLUS */

/* One reply being filled, for both procedures. */
struct rd3 {
	struct nfsd_req *req;
	struct braid_mds *mds;
	const struct mds_exports *x;
	const struct mds_fh *dir;
	bool plus;
	uint32_t budget; /* bytes left for entries */
	uint32_t
	    dircount; /* READDIRPLUS: bytes of fileids, names and cookies allowed (0: no hint) */
	uint32_t dirbytes;
	unsigned n;
	entry3 *head, **tail;
	entryplus3 *phead, **ptail;
};

static uint32_t pad4(uint32_t n)
{
	return (n + 3) & ~3u;
}

#define FATTR3_SIZE    84
#define ENT3_FIXED     (4 + 8 + 4 + 8) /* follows, fileid, name length, cookie */
#define ENTPLUS3_EXTRA (4 + FATTR3_SIZE + 4 + 4 + MDS_FH_SIZE)

/* One entry: ino's name; a (its attributes) and the handle's export for READDIRPLUS
 * (a NULL: none; id 0: no handle). */
static nfsstat4 rd3_add(struct rd3 *s, uint64_t ino, const char *name, uint32_t len,
			uint64_t cookie, const struct mds_attr *a, uint32_t id, bool *full)
{
	uint32_t dsize = 8 + 4 + pad4(len) + 8;
	uint32_t size = ENT3_FIXED + pad4(len) + (s->plus ? ENTPLUS3_EXTRA : 0);
	struct xdr_arena *ar = &s->req->arena;
	*full = false;
	if (size > s->budget || (s->n && s->dircount && s->dirbytes + dsize > s->dircount) ||
	    (s->n && ar->limit - ar->total < 2 * (size_t)RD3_MAX)) {
		*full = true;
		return NFS4_OK;
	}
	uint8_t *nm = xdr_arena_alloc(ar, len ? len : 1);
	void *e = xdr_arena_alloc(ar, s->plus ? sizeof(entryplus3) : sizeof(entry3));
	if (!nm || !e) {
		if (!s->n)
			return NFS4ERR_SERVERFAULT;
		*full = true;
		return NFS4_OK;
	}
	memcpy(nm, name, len);
	if (s->plus) {
		entryplus3 *p = e;
		p->fileid = ino;
		p->name = xdr_opaque_of(nm, len);
		p->cookie = cookie;
		if (a)
			post_of(s->mds, a, &p->name_attributes);
		if (a && id) {
			p->name_handle.u.handle = fh3_make(s->req, a, id);
			p->name_handle.handle_follows = p->name_handle.u.handle.data.len != 0;
		}
		*s->ptail = p;
		s->ptail = &p->nextentry;
	} else {
		entry3 *p = e;
		p->fileid = ino;
		p->name = xdr_opaque_of(nm, len);
		p->cookie = cookie;
		*s->tail = p;
		s->tail = &p->nextentry;
	}
	s->budget -= size;
	s->dirbytes += dsize;
	s->n++;
	return NFS4_OK;
}

static nfsstat4 rd3_take(void *arg, const struct mds_rd_ent *d, bool *full)
{
	struct rd3 *s = arg;
	uint32_t id = s->dir->export_id;
	const struct mds_export *e = mds_export_by_root(s->x, d->attr.ino);
	if (e && e->id != id) {
		/* another export's root: a handle only where it admits the client */
		struct mds_cred cr;
		id = mds_call_cred(s->mds, s->req, e->id, &cr) ? 0 : e->id;
	}
	return rd3_add(s, d->attr.ino, d->name, d->name_len, d->cookie, &d->attr, id, full);
}

static unsigned rd3_batch(void *arg)
{
	const struct rd3 *s = arg;
	return s->budget / (ENT3_FIXED + 4) + 1;
}

/*
 * Both procedures: "." and ".." first (cookies 1 and 2), then the
 * directory's entries.  count bounds the resok (attributes, verifier,
 * entries, list end and eof).
 */
static nfsstat3 readdir3(struct nfsd_req *req, const nfs_fh3 *h, uint64_t cookie,
			 const uint8_t verf[8], uint32_t count, uint32_t dircount, bool plus,
			 post_op_attr *dir_attr, uint8_t verf_out[8], struct rd3 *s, bool *eof)
{
	struct braid_mds *mds = req->priv;
	struct mds_fh fh;
	struct mds_attr dir;
	struct mds_cred cr;
	nfsstat3 st3 = fh3(req, h, &fh, &dir, &cr);
	if (st3)
		return st3;
	post_of(mds, &dir, dir_attr);
	if (dir.type != MDS_DIR)
		return NFS3ERR_NOTDIR;
	if (!mds_access(&cr, &dir, ACCESS4_READ))
		return NFS3ERR_ACCES;
	static const uint8_t zero[8];
	uint8_t ours[8];
	mds_store_cookieverf(mds->store, ours);
	if (cookie && memcmp(verf, zero, 8) && memcmp(verf, ours, 8))
		return NFS3ERR_BAD_COOKIE;
	if (cookie > 2 && mds_dir_cookie_check(mds->store, cookie, ours) != MDS_COOKIE_OK)
		return NFS3ERR_BAD_COOKIE;
	count = count < RD3_MAX ? count : RD3_MAX;
	uint32_t overhead = 4 + 4 + FATTR3_SIZE + 8 + 4 + 4;
	if (count < overhead + ENT3_FIXED + 4)
		return NFS3ERR_TOOSMALL;
	memcpy(verf_out, ours, 8);
	struct mds_exports *x = mds_exports_get(mds);
	*s = (struct rd3){
	    .req = req,
	    .mds = mds,
	    .x = x,
	    .dir = &fh,
	    .plus = plus,
	    .budget = count - overhead,
	    .dircount = dircount,
	};
	s->tail = &s->head;
	s->ptail = &s->phead;
	nfsstat4 st = NFS4_OK;
	bool full = false;
	*eof = false;
	if (cookie == 0)
		st = rd3_add(s, dir.ino, ".", 1, 1, &dir, fh.export_id, &full);
	if (!st && !full && cookie <= 1) {
		/* ".." at an export root is outside it: no handle (knfsd) */
		const struct mds_export *e = mds_export_by_root(x, fh.ino);
		struct mds_attr pa;
		bool have = !mds_inode_getattr(mds->store, dir.parent, &pa);
		bool handle = have && !(e && e->id == fh.export_id);
		st = rd3_add(s, dir.parent, "..", 2, 2, have ? &pa : NULL,
			     handle ? fh.export_id : 0, &full);
	}
	if (!st && !full) {
		struct mds_rd_walk w = {.add = rd3_take, .batch = rd3_batch, .arg = s};
		st = mds_readdir_walk(mds, fh.ino, cookie > 2 ? cookie : 0, &w, eof);
	}
	mds_exports_put(x);
	s->x = NULL;
	if (st)
		return mds_nfs3_status(st);
	if (s->n == 0 && !*eof)
		return NFS3ERR_TOOSMALL;
	return NFS3_OK;
}

/* §3.3.16 */
static int p3_readdir(struct nfsd_req *req, void *argp, void *resp)
{
	READDIR3args *a = argp;
	READDIR3res *r = resp;
	READDIR3resok *ok = &r->u.resok;
	struct rd3 s;
	bool eof;
	r->status = readdir3(req, &a->dir, a->cookie, a->cookieverf, a->count, 0, false,
			     &r->u.resfail.dir_attributes, ok->cookieverf, &s, &eof);
	if (!r->status) {
		ok->reply.entries = s.head;
		ok->reply.eof = eof;
	}
	return NFSD_SUCCESS;
}

/* §3.3.17: maxcount bounds the reply, dircount its names and cookies. */
static int p3_readdirplus(struct nfsd_req *req, void *argp, void *resp)
{
	READDIRPLUS3args *a = argp;
	READDIRPLUS3res *r = resp;
	READDIRPLUS3resok *ok = &r->u.resok;
	struct rd3 s;
	bool eof;
	r->status = readdir3(req, &a->dir, a->cookie, a->cookieverf, a->maxcount, a->dircount, true,
			     &r->u.resfail.dir_attributes, ok->cookieverf, &s, &eof);
	if (!r->status) {
		ok->reply.entries = s.phead;
		ok->reply.eof = eof;
	}
	return NFSD_SUCCESS;
}

/* ----------------------------------------------------- file system info */

/* §3.3.18: space as NFSv4's space_* attributes (mds_fs_space), files from the store's disk. */
static int p3_fsstat(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	FSSTAT3args *a = argp;
	FSSTAT3res *r = resp;
	struct mds_attr at;
	struct mds_cred cr;
	if ((r->status = fh3(req, &a->fsroot, NULL, &at, &cr)))
		return NFSD_SUCCESS;
	FSSTAT3resok *ok = &r->u.resok;
	post_of(mds, &at, &ok->obj_attributes);
	mds_fs_space(mds, &at, &ok->tbytes, &ok->abytes);
	ok->fbytes = ok->abytes;
	mds_fs_files(mds, &ok->tfiles, &ok->ffiles, &ok->afiles);
	ok->invarsec = 0;
	return NFSD_SUCCESS;
}

/* §3.3.19 */
static int p3_fsinfo(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	FSINFO3args *a = argp;
	FSINFO3res *r = resp;
	struct mds_attr at;
	struct mds_cred cr;
	if ((r->status = fh3(req, &a->fsroot, NULL, &at, &cr)))
		return NFSD_SUCCESS;
	FSINFO3resok *k = &r->u.resok;
	post_of(mds, &at, &k->obj_attributes);
	k->rtmax = k->rtpref = k->wtmax = k->wtpref = MDS_IO_MAX;
	k->rtmult = k->wtmult = 4096;
	k->dtpref = 64u << 10;
	k->maxfilesize = MDS_FILE_MAX;
	k->time_delta.seconds = 0;
	k->time_delta.nseconds = 1;
	k->properties = FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME;
	return NFSD_SUCCESS;
}

/* §3.3.20 */
static int p3_pathconf(struct nfsd_req *req, void *argp, void *resp)
{
	PATHCONF3args *a = argp;
	PATHCONF3res *r = resp;
	struct mds_attr at;
	struct mds_cred cr;
	if ((r->status = fh3(req, &a->object, NULL, &at, &cr)))
		return NFSD_SUCCESS;
	PATHCONF3resok *k = &r->u.resok;
	post_of(req->priv, &at, &k->obj_attributes);
	k->linkmax = UINT32_MAX; /* the store's nlink is 32 bits */
	k->name_max = MDS_NAME_MAX;
	k->no_trunc = true;
	k->chown_restricted = true;
	k->case_insensitive = false;
	k->case_preserving = true;
	return NFSD_SUCCESS;
}

/* §3.3.21: flushes the data servers' objects; the verifier WRITE gave. */
static int p3_commit(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	COMMIT3args *a = argp;
	COMMIT3res *r = resp;
	wcc_data *wcc = &r->u.resok.file_wcc;
	struct mds_attr at;
	struct mds_cred cr;
	if ((r->status = file3(req, &a->file, NULL, &at, &cr, wcc)))
		return NFSD_SUCCESS;
	if (at.type != MDS_REG) {
		r->status = at.type == MDS_DIR ? NFS3ERR_ISDIR : NFS3ERR_INVAL;
		return NFSD_SUCCESS;
	}
	r->status = errno3(
	    mds_io_commit(mds, &at, mds_io_hop(&req->cred), a->offset, a->count, r->u.resok.verf));
	post_ino(mds, at.ino, &wcc->after);
	return NFSD_SUCCESS;
}

/* ---------------------------------------------------------------- table */

/* Codecs come from the generated descriptor (nfsd_procs_bind at init). */
#define P3(num, fname, fl) [NFSPROC3_##num] = {.name = #num, .fn = fname, .flags = fl}

static struct nfsd_proc nfs3_procs[NFSPROC3_COMMIT + 1] = {
    P3(NULL, p3_null, NFSD_PROC_INLINE),
    P3(GETATTR, p3_getattr, 0),
    P3(SETATTR, p3_setattr, NFSD_PROC_DRC),
    P3(LOOKUP, p3_lookup, 0),
    P3(ACCESS, p3_access, 0),
    P3(READLINK, p3_readlink, 0),
    P3(READ, p3_read, 0),
    P3(WRITE, p3_write, NFSD_PROC_DRC),
    P3(CREATE, p3_create, NFSD_PROC_DRC),
    P3(MKDIR, p3_mkdir, NFSD_PROC_DRC),
    P3(SYMLINK, p3_symlink, NFSD_PROC_DRC),
    P3(MKNOD, p3_mknod, NFSD_PROC_DRC),
    P3(REMOVE, p3_remove, NFSD_PROC_DRC),
    P3(RMDIR, p3_rmdir, NFSD_PROC_DRC),
    P3(RENAME, p3_rename, NFSD_PROC_DRC),
    P3(LINK, p3_link, NFSD_PROC_DRC),
    P3(READDIR, p3_readdir, 0),
    P3(READDIRPLUS, p3_readdirplus, 0),
    P3(FSSTAT, p3_fsstat, 0),
    P3(FSINFO, p3_fsinfo, 0),
    P3(PATHCONF, p3_pathconf, 0),
    P3(COMMIT, p3_commit, 0),
};

int mds_nfs3_init(struct braid_mds *mds, struct nfsd_version *v)
{
	nfsd_procs_bind(nfs3_procs, NFSPROC3_COMMIT + 1, &xdr_desc_NFS_PROGRAM_NFS_V3);
	if (!(mds->drc3 = nfsd_drc_new(DRC3_ENTRIES, DRC3_BYTES)))
		return -ENOMEM;
	*v = (struct nfsd_version){.vers = NFS_V3,
				   .procs = nfs3_procs,
				   .nprocs = NFSPROC3_COMMIT + 1,
				   .priv = mds,
				   .drc = mds->drc3};
	return 0;
}

void mds_nfs3_release(struct braid_mds *mds)
{
	nfsd_drc_free(mds->drc3);
	mds->drc3 = NULL;
}
