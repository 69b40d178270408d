/* SPDX-License-Identifier: MIT */
#include "config.h"

#include "braid_ctl.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "ctl/client.h"
#include "nfsd/auth_braid.h"
#include "nfsd/trace.h"

int ds_ctl_errno(int32_t stat)
{
	switch (stat) {
	case BRAID_CTL_OK:
		return 0;
	case BRAID_CTL_NOENT:
		return -ENOENT;
	case BRAID_CTL_STALE:
		return -ESTALE;
	case BRAID_CTL_EXIST:
		return -EEXIST;
	case BRAID_CTL_ACCESS:
		return -EACCES;
	case BRAID_CTL_INVAL:
		return -EINVAL;
	case BRAID_CTL_NOSPC:
		return -ENOSPC;
	case BRAID_CTL_IO:
		return -EIO;
	case BRAID_CTL_DELAY:
		return -EAGAIN;
	default:
		return -EREMOTEIO;
	}
}

/* Every result but NULL's leads with its braid_ctl_stat (braid_ctl.x). */
_Static_assert(offsetof(braid_ctl_register_res, rr_status) == 0, "status first");
_Static_assert(offsetof(braid_ctl_heartbeat_res, hb_status) == 0, "status first");
_Static_assert(offsetof(braid_ctl_create_res, cr_status) == 0, "status first");
_Static_assert(offsetof(braid_ctl_statobj_res, st_status) == 0, "status first");
_Static_assert(offsetof(braid_ctl_list_res, lr_status) == 0, "status first");
_Static_assert(offsetof(braid_ctl_copy_res, cp_status) == 0, "status first");

/* The status a server answered (probe ctl__call). */
static int32_t res_stat(uint32_t proc, const void *res)
{
	braid_ctl_stat st = BRAID_CTL_OK;
	if (proc != BRAID_CTLPROC_NULL && res)
		memcpy(&st, res, sizeof(st));
	return st;
}

/* ds_ctl_call with the call's own timeout (0: c's default). */
static int ctl_call(struct nfsd_clnt *c, const struct braid_key *key, uint32_t proc,
		    const void *args, void *res, struct xdr_arena *arena, unsigned timeout_ms)
{
	uint64_t t0 = BRAID_TRACE_ENABLED(ctl__call) ? nfsd_now_ns() : 0;
	int rc = braid_auth_call_timeout(c, key, &xdr_desc_BRAID_CTL_PROGRAM_BRAID_CTL_V1, proc,
					 args, res, arena, timeout_ms);
	if (rc == (NFSD_CALL_ERR_DENIED | NFSD_AUTH_BADVERF) ||
	    rc == (NFSD_CALL_ERR_DENIED | NFSD_AUTH_REJECTEDCRED))
		rc = -EKEYREJECTED;
	else if (rc > 0)
		rc = -EPROTO;
	BRAID_TRACE(ctl__call, proc, rc, rc ? BRAID_CTL_OK : res_stat(proc, res),
		    BRAID_TRACE_US(t0, nfsd_now_ns()), c);
	return rc;
}

int ds_ctl_call(struct nfsd_clnt *c, const struct braid_key *key, uint32_t proc, const void *args,
		void *res, struct xdr_arena *arena)
{
	return ctl_call(c, key, proc, args, res, arena, 0);
}

int ds_ctl_call_timeout(struct nfsd_clnt *c, const struct braid_key *key, uint32_t proc,
			const void *args, void *res, struct xdr_arena *arena, unsigned timeout_ms)
{
	return ctl_call(c, key, proc, args, res, arena, timeout_ms);
}

static void objid_to(const struct ds_objid *id, braid_ctl_objid *o)
{
	memcpy(o->oi_key, id->key, DS_KEY_SIZE);
	o->oi_gen = id->gen;
}

int ds_ctl_null(struct nfsd_clnt *c, const struct braid_key *key)
{
	return ds_ctl_call(c, key, BRAID_CTLPROC_NULL, NULL, NULL, NULL);
}

int ds_ctl_create(struct nfsd_clnt *c, const struct braid_key *key, const struct ds_objid *id,
		  uint32_t uid, uint32_t gid, uint32_t mode, uint8_t fh[DS_CTL_FH_MAX],
		  uint32_t *fhlen)
{
	braid_ctl_create_args a = {.cr_uid = uid, .cr_gid = gid, .cr_mode = mode};
	braid_ctl_create_res r;
	objid_to(id, &a.cr_obj);
	struct xdr_arena arena;
	xdr_arena_init(&arena, NULL, 0, 1u << 16);
	int rc = ds_ctl_call(c, key, BRAID_CTLPROC_CREATE, &a, &r, &arena);
	if (!rc && !(rc = ds_ctl_errno(r.cr_status))) {
		if (r.u.cr_fh.len > DS_CTL_FH_MAX) {
			rc = -EPROTO;
		} else {
			memcpy(fh, r.u.cr_fh.val, r.u.cr_fh.len);
			*fhlen = r.u.cr_fh.len;
		}
	}
	xdr_arena_release(&arena);
	return rc;
}

static int ctl_stat_call(struct nfsd_clnt *c, const struct braid_key *key, uint32_t proc,
			 const void *args)
{
	braid_ctl_stat st;
	int rc = ds_ctl_call(c, key, proc, args, &st, NULL);
	return rc ? rc : ds_ctl_errno(st);
}

int ds_ctl_remove(struct nfsd_clnt *c, const struct braid_key *key, const struct ds_objid *id)
{
	braid_ctl_remove_args a;
	objid_to(id, &a.rm_obj);
	return ctl_stat_call(c, key, BRAID_CTLPROC_REMOVE, &a);
}

int ds_ctl_truncate(struct nfsd_clnt *c, const struct braid_key *key, const struct ds_objid *id,
		    uint64_t size)
{
	braid_ctl_truncate_args a = {.tr_size = size};
	objid_to(id, &a.tr_obj);
	return ctl_stat_call(c, key, BRAID_CTLPROC_TRUNCATE, &a);
}

int ds_ctl_deallocate(struct nfsd_clnt *c, const struct braid_key *key, const struct ds_objid *id,
		      uint64_t off, uint64_t len)
{
	braid_ctl_deallocate_args a = {.da_offset = off, .da_length = len};
	objid_to(id, &a.da_obj);
	return ctl_stat_call(c, key, BRAID_CTLPROC_DEALLOCATE, &a);
}

int ds_ctl_setfence(struct nfsd_clnt *c, const struct braid_key *key, const struct ds_objid *id,
		    uint32_t uid, uint32_t gid, uint32_t mode)
{
	braid_ctl_setfence_args a = {.sf_uid = uid, .sf_gid = gid, .sf_mode = mode};
	objid_to(id, &a.sf_obj);
	return ctl_stat_call(c, key, BRAID_CTLPROC_SETFENCE, &a);
}

int ds_ctl_stat(struct nfsd_clnt *c, const struct braid_key *key, const struct ds_objid *id,
		struct ds_ctl_stat *out)
{
	braid_ctl_statobj_args a;
	braid_ctl_statobj_res r;
	objid_to(id, &a.st_obj);
	int rc = ds_ctl_call(c, key, BRAID_CTLPROC_STAT, &a, &r, NULL);
	if (rc || (rc = ds_ctl_errno(r.st_status)))
		return rc;
	out->size = r.u.st_resok.st_size;
	out->used = r.u.st_resok.st_used;
	out->change = r.u.st_resok.st_change;
	out->mtime_sec = r.u.st_resok.st_mtime.t_seconds;
	out->mtime_nsec = r.u.st_resok.st_mtime.t_nseconds;
	return 0;
}

int ds_ctl_list(struct nfsd_clnt *c, const struct braid_key *key, uint64_t cookie, unsigned max,
		struct ds_list_entry *ents, unsigned *n, uint64_t *next, bool *eof)
{
	braid_ctl_list_args a = {.la_cookie = cookie, .la_max_entries = max};
	braid_ctl_list_res r;
	struct xdr_arena arena;
	xdr_arena_init(&arena, NULL, 0, 1u << 20);
	int rc = ds_ctl_call(c, key, BRAID_CTLPROC_LIST, &a, &r, &arena);
	if (!rc && !(rc = ds_ctl_errno(r.lr_status))) {
		unsigned k = r.u.lr_resok.lr_entries.len;
		if (k > max) {
			rc = -EPROTO;
		} else {
			for (unsigned i = 0; i < k; i++) {
				const braid_ctl_list_entry *e = &r.u.lr_resok.lr_entries.val[i];
				memcpy(ents[i].id.key, e->le_obj.oi_key, DS_KEY_SIZE);
				ents[i].id.gen = e->le_obj.oi_gen;
				ents[i].size = e->le_size;
			}
			*n = k;
			*next = r.u.lr_resok.lr_cookie;
			*eof = r.u.lr_resok.lr_eof;
		}
	}
	xdr_arena_release(&arena);
	return rc;
}

int ds_ctl_copy(struct nfsd_clnt *c, const struct braid_key *key, const struct ds_ctl_copy_args *a,
		struct ds_ctl_copy_res *out)
{
	memset(out, 0, sizeof(*out));
	out->next = a->offset;
	if (a->nsrc > DS_CTL_ADDRS_MAX)
		return -EINVAL;
	braid_ctl_netaddr na[DS_CTL_ADDRS_MAX];
	for (unsigned i = 0; i < a->nsrc; i++) {
		na[i].na_r_netid = xdr_string_of(a->src[i].netid ? a->src[i].netid : "");
		na[i].na_r_addr = xdr_string_of(a->src[i].uaddr ? a->src[i].uaddr : "");
	}
	braid_ctl_copy_args ca = {
	    .cp_src_addrs = {.len = a->nsrc, .val = na},
	    .cp_uid = a->uid,
	    .cp_gid = a->gid,
	    .cp_mode = a->mode,
	    .cp_offset = a->offset,
	    .cp_count = a->count,
	    .cp_rate = a->rate,
	};
	objid_to(&a->id, &ca.cp_obj);
	braid_ctl_copy_res r;
	/* COPY alone works for seconds: its own, longer timeout */
	int rc = ctl_call(c, key, BRAID_CTLPROC_COPY, &ca, &r, NULL, DS_CTL_COPY_TIMEOUT_MS);
	if (rc)
		return rc;
	if (r.cp_status == BRAID_CTL_OK) {
		const braid_ctl_copy_resok *k = &r.u.cp_resok;
		out->next = k->cp_next;
		out->done = k->cp_done;
		out->src_size = k->cp_src_size;
		out->read = k->cp_read;
		out->written = k->cp_written;
		return 0;
	}
	out->side = (enum ds_ctl_copy_side)r.u.cp_fail.cf_side;
	out->next = r.u.cp_fail.cf_offset;
	return ds_ctl_errno(r.cp_status);
}

int ds_ctl_copy_pass(struct nfsd_clnt *c, const struct braid_key *key,
		     const struct ds_ctl_copy_args *a, struct ds_ctl_copy_res *out, unsigned *calls)
{
	struct ds_ctl_copy_args ca = *a;
	uint64_t read = 0, written = 0;
	unsigned n = 0;
	int rc;
	for (;;) {
		rc = ds_ctl_copy(c, key, &ca, out);
		n++;
		read += out->read;
		written += out->written;
		if (rc || out->done)
			break;
		if (out->next <= ca.offset && out->read == 0) {
			rc = -EPROTO; /* no progress: a broken destination */
			break;
		}
		ca.offset = out->next;
	}
	out->read = read;
	out->written = written;
	if (calls)
		*calls = n;
	return rc;
}
