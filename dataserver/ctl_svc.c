/* SPDX-License-Identifier: MIT */
/*
 * The control protocol served by braid-ds (braid_ctl.x: CREATE, REMOVE,
 * TRUNCATE, SETFENCE, STAT, LIST, DEALLOCATE, COPY in mover.c and
 * EC_COMPUTE in ec.c).  REGISTER, HEARTBEAT and EC_LOCATE are the MDS's: PROC_UNAVAIL
 * here.
 *
 * Only the MDS may call: every procedure but NULL needs an AUTH_BRAID
 * credential, which the flavor (nfsd/auth_braid.c) has verified against the
 * cluster key before the handler runs; any other flavor gets
 * BRAID_CTL_ACCESS.
 */
#include "config.h"

#include "braid_ctl.h"

#include <errno.h>
#include <string.h>

#include "dataserver/ds_impl.h"

/* The store's errors as peer.c maps them, but EXIST: CREATE's of another
 * generation (none of these calls checks permissions: no EACCES). */
static braid_ctl_stat errno_to_ctl(int e)
{
	return e == -EEXIST ? BRAID_CTL_EXIST : (braid_ctl_stat)ds_ctl_store_stat(e);
}

static bool from_mds(const struct nfsd_req *req)
{
	return req->cred.flavor == NFSD_AUTH_BRAID;
}

static void objid_of(const braid_ctl_objid *o, struct ds_objid *id)
{
	memcpy(id->key, o->oi_key, DS_KEY_SIZE);
	id->gen = o->oi_gen;
}

static int c_null(struct nfsd_req *req, void *args, void *res)
{
	(void)req, (void)args, (void)res;
	return NFSD_SUCCESS;
}

static int c_create(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_ds *ds = req->priv;
	braid_ctl_create_args *a = argp;
	braid_ctl_create_res *r = resp;
	if (!from_mds(req)) {
		r->cr_status = BRAID_CTL_ACCESS;
		return NFSD_SUCCESS;
	}
	if (a->cr_mode & ~0777u) {
		r->cr_status = BRAID_CTL_INVAL;
		return NFSD_SUCCESS;
	}
	struct ds_objid id;
	objid_of(&a->cr_obj, &id);
	r->cr_status = errno_to_ctl(ds_store_create(ds->store, &id, a->cr_uid, a->cr_gid,
						    a->cr_mode));
	if (r->cr_status)
		return NFSD_SUCCESS;
	uint8_t *fh = xdr_arena_alloc(&req->arena, DS_FH_SIZE);
	if (!fh)
		return NFSD_SYSTEM_ERR;
	ds_fh_make(&ds->key, &id, fh);
	r->u.cr_fh = xdr_opaque_of(fh, DS_FH_SIZE);
	return NFSD_SUCCESS;
}

static int c_remove(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_ds *ds = req->priv;
	braid_ctl_remove_args *a = argp;
	braid_ctl_stat *r = resp;
	struct ds_objid id;
	objid_of(&a->rm_obj, &id);
	*r = from_mds(req) ? errno_to_ctl(ds_store_remove(ds->store, &id)) : BRAID_CTL_ACCESS;
	return NFSD_SUCCESS;
}

static int c_truncate(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_ds *ds = req->priv;
	braid_ctl_truncate_args *a = argp;
	braid_ctl_stat *r = resp;
	struct ds_objid id;
	objid_of(&a->tr_obj, &id);
	*r = from_mds(req) ? errno_to_ctl(ds_store_truncate(ds->store, &id, a->tr_size))
			   : BRAID_CTL_ACCESS;
	return NFSD_SUCCESS;
}

static int c_setfence(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_ds *ds = req->priv;
	braid_ctl_setfence_args *a = argp;
	braid_ctl_stat *r = resp;
	struct ds_objid id;
	objid_of(&a->sf_obj, &id);
	*r = from_mds(req) ? errno_to_ctl((a->sf_mode & ~0777u ? -EINVAL
							 : ds_store_setfence(ds->store, &id, a->sf_uid,
									     a->sf_gid, a->sf_mode)))
			   : BRAID_CTL_ACCESS;
	return NFSD_SUCCESS;
}

static int c_deallocate(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_ds *ds = req->priv;
	braid_ctl_deallocate_args *a = argp;
	braid_ctl_stat *r = resp;
	struct ds_objid id;
	objid_of(&a->da_obj, &id);
	*r = from_mds(req) ? errno_to_ctl(ds_store_deallocate(ds->store, &id, a->da_offset,
							      a->da_length))
			   : BRAID_CTL_ACCESS;
	return NFSD_SUCCESS;
}

static int c_stat(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_ds *ds = req->priv;
	braid_ctl_statobj_args *a = argp;
	braid_ctl_statobj_res *r = resp;
	if (!from_mds(req)) {
		r->st_status = BRAID_CTL_ACCESS;
		return NFSD_SUCCESS;
	}
	struct ds_objid id;
	struct ds_obj_stat os;
	objid_of(&a->st_obj, &id);
	if ((r->st_status = errno_to_ctl(ds_store_stat(ds->store, &id, &os))))
		return NFSD_SUCCESS;
	braid_ctl_statobj_resok *k = &r->u.st_resok;
	k->st_size = os.size;
	k->st_mtime.t_seconds = os.mtime.tv_sec;
	k->st_mtime.t_nseconds = (uint32_t)os.mtime.tv_nsec;
	k->st_used = os.used;
	k->st_change = os.change;
	return NFSD_SUCCESS;
}

static int c_list(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_ds *ds = req->priv;
	braid_ctl_list_args *a = argp;
	braid_ctl_list_res *r = resp;
	if (!from_mds(req)) {
		r->lr_status = BRAID_CTL_ACCESS;
		return NFSD_SUCCESS;
	}
	if (a->la_max_entries == 0) {
		r->lr_status = BRAID_CTL_INVAL;
		return NFSD_SUCCESS;
	}
	unsigned max = a->la_max_entries < BRAID_CTL_LIST_MAX ? a->la_max_entries
								: BRAID_CTL_LIST_MAX;
	struct ds_list_entry *ents = xdr_arena_alloc(&req->arena, max * sizeof(*ents));
	braid_ctl_list_entry *out = xdr_arena_alloc(&req->arena, max * sizeof(*out));
	if (!ents || !out)
		return NFSD_SYSTEM_ERR;
	unsigned n = 0;
	uint64_t next = 0;
	bool eof = false;
	if ((r->lr_status = errno_to_ctl(
		 ds_store_list(ds->store, a->la_cookie, ents, max, &n, &next, &eof))))
		return NFSD_SUCCESS;
	for (unsigned i = 0; i < n; i++) {
		memcpy(out[i].le_obj.oi_key, ents[i].id.key, DS_KEY_SIZE);
		out[i].le_obj.oi_gen = ents[i].id.gen;
		out[i].le_size = ents[i].size;
	}
	r->u.lr_resok.lr_entries.len = n;
	r->u.lr_resok.lr_entries.val = out;
	r->u.lr_resok.lr_cookie = next;
	r->u.lr_resok.lr_eof = eof;
	return NFSD_SUCCESS;
}

#define PC(num, fname) [BRAID_CTLPROC_##num] = { .name = #num, .fn = fname }

struct nfsd_proc ds_ctl_procs[DS_CTL_NPROCS] = {
	[BRAID_CTLPROC_NULL] = { .name = "NULL", .fn = c_null, .flags = NFSD_PROC_INLINE },
	PC(CREATE, c_create),
	PC(REMOVE, c_remove),
	PC(TRUNCATE, c_truncate),
	PC(SETFENCE, c_setfence),
	PC(STAT, c_stat),
	PC(LIST, c_list),
	PC(COPY, ds_mover_copy_proc),
	PC(EC_COMPUTE, ds_ec_compute_proc),
	PC(DEALLOCATE, c_deallocate),
};

static const struct nfsd_version ctl_versions[] = {
	{ .vers = BRAID_CTL_V1, .procs = ds_ctl_procs, .nprocs = DS_CTL_NPROCS },
};

const struct nfsd_program ds_ctl_program = {
	.prog = BRAID_CTL_PROGRAM,
	.name = "braid_ctl",
	.versions = ctl_versions,
	.nversions = 1,
};
