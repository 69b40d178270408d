/* SPDX-License-Identifier: MIT */
/*
 * The NFSv3 data service of braid-ds (RFC 1813): the procedures a pNFS
 * client uses against a flexfiles data server (RFC 8435 §5.1), on object
 * handles (ctl/fh.h).  Everything else is PROC_UNAVAIL: a DS has no
 * namespace.
 *
 * Attributes: READ and WRITE return no post-operation attributes.  The
 * Linux client would otherwise fold a DS object's size and times into the
 * MDS file's inode; the MDS owns those (LAYOUTCOMMIT).  GETATTR, SETATTR
 * and ACCESS return them.
 *
 * Fencing (RFC 8435 §2.2): READ, WRITE and SETATTR of the size are checked
 * against the object's owner as the store does it; a fenced caller gets
 * NFS3ERR_ACCES.  Only the MDS changes owner or mode (SETATTR of them is
 * NFS3ERR_PERM).
 *
 * Reconstructing handles (ctl/fh.h DS_FH_EC, dataserver/ec.c): READ
 * returns the file's bytes rebuilt from the other chunks of its stripe;
 * every other procedure on one is NFS3ERR_ACCES, GETATTR included (no
 * object here has attributes that would mean anything for it: the client
 * has the file's from the MDS).
 */
#include "config.h"

#include "nfs3_prot.h"

#include <errno.h>
#include <string.h>

#include "dataserver/ds_impl.h"

static nfsstat3 errno_to_nfs3(int e)
{
	return (nfsstat3)ds_nfs_status(e);
}

/* An object handle's id; a reconstructing handle serves READ alone (the
 * top comment), anything else on one is NFS3ERR_ACCES. */
static nfsstat3 fh_obj(struct braid_ds *ds, const nfs_fh3 *fh, struct ds_objid *id)
{
	int type;
	uint64_t ino;
	if (ds_fh_parse_type(&ds->key, fh->data.val, fh->data.len, id, &type, &ino))
		return NFS3ERR_BADHANDLE;
	return type == DS_FH_OBJECT ? NFS3_OK : NFS3ERR_ACCES;
}

static void fill_fattr(struct braid_ds *ds, const struct ds_obj_stat *os, fattr3 *a)
{
	memset(a, 0, sizeof(*a));
	a->type = NF3REG;
	a->mode = os->mode;
	a->nlink = 1;
	a->uid = os->uid;
	a->gid = os->gid;
	a->size = os->size;
	a->used = os->used;
	a->fsid = ds->fsid;
	a->fileid = ds_obj_fileid(&os->id);
	a->mtime.seconds = (uint32_t)os->mtime.tv_sec;
	a->mtime.nseconds = (uint32_t)os->mtime.tv_nsec;
	a->atime = a->mtime;
	a->ctime = a->mtime;
}

/* Post-op attributes of id, or none when it cannot be read. */
static void post_attr(struct braid_ds *ds, const struct ds_objid *id, post_op_attr *pa)
{
	struct ds_obj_stat os;
	pa->attributes_follow = ds_store_stat(ds->store, id, &os) == 0;
	if (pa->attributes_follow)
		fill_fattr(ds, &os, &pa->u.attributes);
}

static int p3_null(struct nfsd_req *req, void *args, void *res)
{
	(void)req, (void)args, (void)res;
	return NFSD_SUCCESS;
}

static int p3_getattr(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_ds *ds = req->priv;
	GETATTR3args *a = argp;
	GETATTR3res *r = resp;
	struct ds_objid id;
	struct ds_obj_stat os;
	if ((r->status = fh_obj(ds, &a->object, &id)))
		return NFSD_SUCCESS;
	if ((r->status = errno_to_nfs3(ds_store_stat(ds->store, &id, &os))))
		return NFSD_SUCCESS;
	fill_fattr(ds, &os, &r->u.resok.obj_attributes);
	return NFSD_SUCCESS;
}

static void wcc_of(const struct ds_obj_stat *os, wcc_attr *w)
{
	w->size = os->size;
	w->mtime.seconds = (uint32_t)os->mtime.tv_sec;
	w->mtime.nseconds = (uint32_t)os->mtime.tv_nsec;
	w->ctime = w->mtime;
}

static int p3_setattr(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_ds *ds = req->priv;
	SETATTR3args *a = argp;
	SETATTR3res *r = resp;
	wcc_data *wcc = &r->u.resfail.obj_wcc; /* resok has the same shape */
	struct ds_objid id;
	struct ds_obj_stat os;
	if ((r->status = fh_obj(ds, &a->object, &id)))
		return NFSD_SUCCESS;
	if ((r->status = errno_to_nfs3(ds_store_stat(ds->store, &id, &os))))
		return NFSD_SUCCESS;
	wcc->before.attributes_follow = true;
	wcc_of(&os, &wcc->before.u.attributes);
	const sattr3 *n = &a->new_attributes;
	if (a->guard.check && (a->guard.u.obj_ctime.seconds != (uint32_t)os.mtime.tv_sec ||
			       a->guard.u.obj_ctime.nseconds != (uint32_t)os.mtime.tv_nsec)) {
		r->status = NFS3ERR_NOT_SYNC;
	} else if (n->mode.set_it || n->uid.set_it || n->gid.set_it ||
		   n->atime.set_it != DONT_CHANGE || n->mtime.set_it != DONT_CHANGE) {
		/* owner and mode are the fence: only the MDS sets them */
		r->status = NFS3ERR_PERM;
	} else if (n->size.set_it) {
		uint32_t uid, gid;
		ds_req_ids(req, &uid, &gid);
		r->status = errno_to_nfs3(
		    ds_store_truncate_as(ds->store, &id, uid, gid, n->size.u.size));
	}
	post_attr(ds, &id, &wcc->after);
	return NFSD_SUCCESS;
}

static int p3_access(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_ds *ds = req->priv;
	ACCESS3args *a = argp;
	ACCESS3res *r = resp;
	struct ds_objid id;
	struct ds_obj_stat os;
	if ((r->status = fh_obj(ds, &a->object, &id)))
		return NFSD_SUCCESS;
	if ((r->status = errno_to_nfs3(ds_store_stat(ds->store, &id, &os))))
		return NFSD_SUCCESS;
	uint32_t uid, gid;
	ds_req_ids(req, &uid, &gid);
	/* the store's rule: owner, else group, else other; no root override */
	unsigned bits = uid == os.uid ? os.mode >> 6 : gid == os.gid ? os.mode >> 3 : os.mode;
	uint32_t ok = 0;
	if (bits & 4)
		ok |= ACCESS3_READ;
	if (bits & 2)
		ok |= ACCESS3_MODIFY | ACCESS3_EXTEND;
	if (bits & 1)
		ok |= ACCESS3_EXECUTE;
	r->u.resok.access = a->access & ok;
	r->u.resok.obj_attributes.attributes_follow = true;
	fill_fattr(ds, &os, &r->u.resok.obj_attributes.u.attributes);
	return NFSD_SUCCESS;
}

static int p3_read(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_ds *ds = req->priv;
	READ3args *a = argp;
	READ3res *r = resp;
	struct ds_objid id;
	int type;
	uint64_t ino;
	if (ds_fh_parse_type(&ds->key, a->file.data.val, a->file.data.len, &id, &type, &ino)) {
		r->status = NFS3ERR_BADHANDLE;
		return NFSD_SUCCESS;
	}
	/* RFC 1813 §3.3.6: the server may return fewer bytes than asked */
	bool eof;
	uint32_t uid, gid;
	ds_req_ids(req, &uid, &gid);
	if (type == DS_FH_EC)
		r->status = errno_to_nfs3(
		    ds_ec_read(ds, req, &id, ino, a->offset, a->count, &r->u.resok.data, &eof));
	else
		r->status = errno_to_nfs3(ds_io_read(ds, req, &id, uid, gid, a->offset, a->count,
						     &r->u.resok.data, &eof));
	r->u.resok.count = r->u.resok.data.len;
	r->u.resok.eof = eof;
	if (r->status == NFS3_OK) /* RFC 8267: over RDMA, into the write chunk */
		nfsd_req_payload(req, r->u.resok.data.val, r->u.resok.data.len);
	return NFSD_SUCCESS;
}

static int p3_write(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_ds *ds = req->priv;
	WRITE3args *a = argp;
	WRITE3res *r = resp;
	struct ds_objid id;
	if ((r->status = fh_obj(ds, &a->file, &id)))
		return NFSD_SUCCESS;
	/* the count must describe the data (RFC 1813 §3.3.7) */
	if (a->data.len != a->count) {
		r->status = NFS3ERR_INVAL;
		return NFSD_SUCCESS;
	}
	uint32_t uid, gid;
	ds_req_ids(req, &uid, &gid);
	ssize_t n = ds_io_write(ds, &id, uid, gid, a->offset, a->data, (uint32_t)a->stable);
	if (n < 0) {
		r->status = errno_to_nfs3((int)n);
		return NFSD_SUCCESS;
	}
	r->u.resok.count = (uint32_t)n;
	r->u.resok.committed = a->stable;
	ds_store_verifier(ds->store, r->u.resok.verf);
	return NFSD_SUCCESS;
}

static int p3_commit(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_ds *ds = req->priv;
	COMMIT3args *a = argp;
	COMMIT3res *r = resp;
	struct ds_objid id;
	if ((r->status = fh_obj(ds, &a->file, &id)))
		return NFSD_SUCCESS;
	uint32_t uid, gid;
	ds_req_ids(req, &uid, &gid);
	if ((r->status = errno_to_nfs3(ds_io_commit(ds, &id, uid, gid, a->offset, a->count))))
		return NFSD_SUCCESS;
	ds_store_verifier(ds->store, r->u.resok.verf);
	return NFSD_SUCCESS;
}

static int p3_fsstat(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_ds *ds = req->priv;
	FSSTAT3args *a = argp;
	FSSTAT3res *r = resp;
	struct ds_objid id;
	if ((r->status = fh_obj(ds, &a->fsroot, &id)))
		return NFSD_SUCCESS;
	uint64_t total, avail;
	if ((r->status = errno_to_nfs3(ds_store_space(ds->store, &total, &avail))))
		return NFSD_SUCCESS;
	post_attr(ds, &id, &r->u.resok.obj_attributes);
	r->u.resok.tbytes = total;
	r->u.resok.fbytes = avail;
	r->u.resok.abytes = avail;
	/* objects are not limited by a count of their own */
	r->u.resok.tfiles = r->u.resok.ffiles = r->u.resok.afiles = UINT64_MAX >> 1;
	r->u.resok.invarsec = 0;
	return NFSD_SUCCESS;
}

static int p3_fsinfo(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_ds *ds = req->priv;
	FSINFO3args *a = argp;
	FSINFO3res *r = resp;
	struct ds_objid id;
	if ((r->status = fh_obj(ds, &a->fsroot, &id)))
		return NFSD_SUCCESS;
	FSINFO3resok *k = &r->u.resok;
	post_attr(ds, &id, &k->obj_attributes);
	k->rtmax = k->rtpref = k->wtmax = k->wtpref = (uint32_t)ds->set.max_io;
	k->rtmult = k->wtmult = ds_store_block_size(ds->store);
	k->dtpref = 4096;
	k->maxfilesize = DS_STORE_MAX_SIZE - 1;
	k->time_delta.seconds = 0;
	k->time_delta.nseconds = 1;
	k->properties = FSF3_HOMOGENEOUS;
	return NFSD_SUCCESS;
}

static int p3_pathconf(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_ds *ds = req->priv;
	PATHCONF3args *a = argp;
	PATHCONF3res *r = resp;
	struct ds_objid id;
	if ((r->status = fh_obj(ds, &a->object, &id)))
		return NFSD_SUCCESS;
	PATHCONF3resok *k = &r->u.resok;
	post_attr(ds, &id, &k->obj_attributes);
	k->linkmax = 1;
	k->name_max = 255;
	k->no_trunc = true;
	k->chown_restricted = true;
	k->case_insensitive = false;
	k->case_preserving = true;
	return NFSD_SUCCESS;
}

/* Codecs come from the generated descriptor (nfsd_procs_bind in ds.c). */
#define P3(num, fname) [NFSPROC3_##num] = { .name = #num, .fn = fname }

struct nfsd_proc ds_nfs3_procs[22] = {
	[NFSPROC3_NULL] = { .name = "NULL", .fn = p3_null, .flags = NFSD_PROC_INLINE },
	P3(GETATTR, p3_getattr),
	P3(SETATTR, p3_setattr),
	P3(ACCESS, p3_access),
	[NFSPROC3_READ] = { .name = "READ", .fn = p3_read, .flags = NFSD_PROC_BULK },
	P3(WRITE, p3_write),
	P3(FSSTAT, p3_fsstat),
	P3(FSINFO, p3_fsinfo),
	P3(PATHCONF, p3_pathconf),
	P3(COMMIT, p3_commit),
};

static const struct nfsd_version nfs3_versions[] = {
	{ .vers = NFS_V3, .procs = ds_nfs3_procs, .nprocs = NFSPROC3_COMMIT + 1 },
};

const struct nfsd_program ds_nfs3_program = {
	.prog = NFS_PROGRAM,
	.name = "nfs",
	.versions = nfs3_versions,
	.nversions = 1,
};
