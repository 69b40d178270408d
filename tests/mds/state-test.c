/* SPDX-License-Identifier: MIT */
/* Helpers for the state tests (tests/mds/state-test.h). */
#include "config.h"

#include "tests/mds/mds-test.h"
#include "tests/mds/state-test.h"

nfsstat4 ts_st(const COMPOUND4res *res, unsigned i)
{
	if (res->resarray.len > i + 1)
		return res->resarray.val[i + 1].u.opillegal.status;
	CHECK(res->status != NFS4_OK);
	return res->status;
}

void ts_run(struct nfs41c_session *s, const nfs_argop4 *ops, unsigned n, COMPOUND4res *res,
	    struct xdr_arena *ar)
{
	xdr_arena_init(ar, NULL, 0, 1u << 20);
	mt_compound(s, ops, n, res, ar);
}

uint64_t ts_clientid(struct nfs41c_session *s)
{
	struct nfs41c_session_info i;
	nfs41c_session_info(s, &i);
	return i.clientid;
}

fattr4 ts_fattr(struct ts_attrs *b, int mode, int64_t size)
{
	fattr4 f;
	unsigned n = 0;
	memset(b, 0, sizeof(*b));
	if (size >= 0) {
		b->words[0] |= 1u << FATTR4_SIZE;
		uint64_t v = htobe64((uint64_t)size);
		memcpy(b->vals + n, &v, 8);
		n += 8;
	}
	if (mode >= 0) {
		b->words[1] |= 1u << (FATTR4_MODE - 32);
		uint32_t v = htonl((uint32_t)mode);
		memcpy(b->vals + n, &v, 4);
		n += 4;
	}
	f.attrmask.len = b->words[1] ? 2 : b->words[0] ? 1 : 0;
	f.attrmask.val = b->words;
	f.attr_vals = xdr_opaque_of(b->vals, n);
	return f;
}

nfsstat4 ts_open(struct nfs41c_session *s, const struct ts_fh *at, const struct ts_open *o,
		 struct ts_openres *out)
{
	struct ts_attrs ab;
	nfs_argop4 ops[3] = {ts_put(at), ts_op(OP_OPEN), ts_op(OP_GETFH)};
	OPEN4args *oa = &ops[1].u.opopen;
	oa->share_access = o->access;
	oa->share_deny = o->deny;
	oa->owner.clientid = 0; /* ignored in 4.1 (§18.16.3) */
	oa->owner.owner = xdr_opaque_of(o->owner, strlen(o->owner));
	oa->claim.claim = o->claim;
	switch (o->claim) {
	case CLAIM_NULL:
	case CLAIM_DELEGATE_PREV:
		oa->claim.u.file = xdr_opaque_of(o->name, strlen(o->name));
		break;
	case CLAIM_PREVIOUS:
		oa->claim.u.delegate_type = o->prev_deleg;
		break;
	case CLAIM_DELEG_CUR_FH:
		oa->claim.u.oc_delegate_stateid = o->deleg_sid;
		break;
	case CLAIM_DELEGATE_CUR:
		oa->claim.u.delegate_cur_info.delegate_stateid = o->deleg_sid;
		oa->claim.u.delegate_cur_info.file = xdr_opaque_of(o->name, strlen(o->name));
		break;
	default:
		break;
	}
	if (o->create) {
		oa->openhow.opentype = OPEN4_CREATE;
		oa->openhow.u.how.mode = o->how;
		switch (o->how) {
		case UNCHECKED4:
		case GUARDED4:
			oa->openhow.u.how.u.createattrs = ts_fattr(&ab, o->mode, o->size);
			break;
		case EXCLUSIVE4:
			memcpy(oa->openhow.u.how.u.createverf, o->verf, 8);
			break;
		case EXCLUSIVE4_1:
			memcpy(oa->openhow.u.how.u.ch_createboth.cva_verf, o->verf, 8);
			oa->openhow.u.how.u.ch_createboth.cva_attrs =
			    ts_fattr(&ab, o->mode, o->size);
			break;
		}
	}
	COMPOUND4res res;
	struct xdr_arena ar;
	ts_run(s, ops, 3, &res, &ar);
	nfsstat4 st = ts_st(&res, 1);
	if (!st && out) {
		const OPEN4resok *ok = &res.resarray.val[2].u.opopen.u.resok4;
		memset(out, 0, sizeof(*out));
		out->sid = ok->stateid;
		out->cinfo = ok->cinfo;
		out->rflags = ok->rflags;
		out->attrset_len = ok->attrset.len < 3 ? ok->attrset.len : 3;
		if (out->attrset_len)
			memcpy(out->attrset, ok->attrset.val, out->attrset_len * 4);
		out->dtype = ok->delegation.delegation_type;
		if (out->dtype == OPEN_DELEGATE_NONE_EXT)
			out->why = ok->delegation.u.od_whynone.ond_why;
		if (out->dtype == OPEN_DELEGATE_READ) {
			out->dsid = ok->delegation.u.read.stateid;
			out->drecall = ok->delegation.u.read.recall;
		}
		if (out->dtype == OPEN_DELEGATE_WRITE) {
			const open_write_delegation4 *w = &ok->delegation.u.write;
			out->dsid = w->stateid;
			out->drecall = w->recall;
			out->dlimit_by = w->space_limit.limitby;
			out->dlimit = w->space_limit.u.filesize;
		}
		CHECK_EQ(ts_st(&res, 2), NFS4_OK);
		const nfs_fh4 *f = &res.resarray.val[3].u.opgetfh.u.resok4.object;
		CHECK(f->len <= NFS4_FHSIZE);
		memcpy(out->fh.b, f->val, f->len);
		out->fh.len = f->len;
	}
	xdr_arena_release(&ar);
	return st;
}

nfsstat4 ts_open_name(struct nfs41c_session *s, const struct ts_fh *dir, const char *owner,
		      const char *name, uint32_t access, uint32_t deny, bool create,
		      struct ts_openres *out)
{
	struct ts_open o = {.owner = owner,
			    .access = access,
			    .deny = deny,
			    .name = name,
			    .create = create,
			    .how = UNCHECKED4,
			    .mode = 0644,
			    .size = -1};
	return ts_open(s, dir, &o, out);
}

nfsstat4 ts_on_file(struct nfs41c_session *s, const struct ts_fh *f, nfs_argop4 op, stateid4 *out)
{
	nfs_argop4 ops[2] = {ts_put(f), op};
	COMPOUND4res res;
	struct xdr_arena ar;
	ts_run(s, ops, 2, &res, &ar);
	nfsstat4 st = ts_st(&res, 1);
	if (!st && out) {
		const nfs_resop4 *r = &res.resarray.val[2];
		switch (op.argop) {
		case OP_CLOSE:
			*out = r->u.opclose.u.open_stateid;
			break;
		case OP_OPEN_DOWNGRADE:
			*out = r->u.opopen_downgrade.u.resok4.open_stateid;
			break;
		case OP_LOCKU:
			*out = r->u.oplocku.u.lock_stateid;
			break;
		default:
			break;
		}
	}
	xdr_arena_release(&ar);
	return st;
}

nfsstat4 ts_close(struct nfs41c_session *s, const struct ts_fh *f, const stateid4 *sid,
		  stateid4 *out)
{
	nfs_argop4 op = ts_op(OP_CLOSE);
	op.u.opclose.open_stateid = *sid;
	return ts_on_file(s, f, op, out);
}

nfsstat4 ts_downgrade(struct nfs41c_session *s, const struct ts_fh *f, const stateid4 *sid,
		      uint32_t access, uint32_t deny, stateid4 *out)
{
	nfs_argop4 op = ts_op(OP_OPEN_DOWNGRADE);
	op.u.opopen_downgrade.open_stateid = *sid;
	op.u.opopen_downgrade.share_access = access;
	op.u.opopen_downgrade.share_deny = deny;
	return ts_on_file(s, f, op, out);
}

nfsstat4 ts_locku(struct nfs41c_session *s, const struct ts_fh *f, const stateid4 *lsid,
		  uint64_t off, uint64_t len, stateid4 *out)
{
	nfs_argop4 op = ts_op(OP_LOCKU);
	op.u.oplocku.locktype = WRITE_LT;
	op.u.oplocku.lock_stateid = *lsid;
	op.u.oplocku.offset = off;
	op.u.oplocku.length = len;
	return ts_on_file(s, f, op, out);
}

static void ts_denied_copy(const LOCK4denied *d, struct ts_denied *out)
{
	memset(out, 0, sizeof(*out));
	out->offset = d->offset;
	out->length = d->length;
	out->type = d->locktype;
	out->clientid = d->owner.clientid;
	CHECK(d->owner.owner.len < sizeof(out->owner));
	memcpy(out->owner, d->owner.owner.val, d->owner.owner.len);
}

nfsstat4 ts_lock(struct nfs41c_session *s, const struct ts_fh *f, nfs_lock_type4 type, bool reclaim,
		 uint64_t off, uint64_t len, const stateid4 *sid, const char *lock_owner,
		 stateid4 *out, struct ts_denied *den)
{
	nfs_argop4 ops[2] = {ts_put(f), ts_op(OP_LOCK)};
	LOCK4args *la = &ops[1].u.oplock;
	la->locktype = type;
	la->reclaim = reclaim;
	la->offset = off;
	la->length = len;
	la->locker.new_lock_owner = lock_owner != NULL;
	if (lock_owner) {
		la->locker.u.open_owner.open_stateid = *sid;
		la->locker.u.open_owner.lock_owner.owner =
		    xdr_opaque_of(lock_owner, strlen(lock_owner));
	} else {
		la->locker.u.lock_owner.lock_stateid = *sid;
	}
	COMPOUND4res res;
	struct xdr_arena ar;
	ts_run(s, ops, 2, &res, &ar);
	nfsstat4 st = ts_st(&res, 1);
	if (!st && out)
		*out = res.resarray.val[2].u.oplock.u.resok4.lock_stateid;
	if (st == NFS4ERR_DENIED && den)
		ts_denied_copy(&res.resarray.val[2].u.oplock.u.denied, den);
	xdr_arena_release(&ar);
	return st;
}

nfsstat4 ts_lockt(struct nfs41c_session *s, const struct ts_fh *f, nfs_lock_type4 type,
		  uint64_t off, uint64_t len, const char *lock_owner, struct ts_denied *den)
{
	nfs_argop4 ops[2] = {ts_put(f), ts_op(OP_LOCKT)};
	LOCKT4args *ta = &ops[1].u.oplockt;
	ta->locktype = type;
	ta->offset = off;
	ta->length = len;
	ta->owner.clientid = 0; /* ignored (§18.11.3) */
	ta->owner.owner = xdr_opaque_of(lock_owner, strlen(lock_owner));
	COMPOUND4res res;
	struct xdr_arena ar;
	ts_run(s, ops, 2, &res, &ar);
	nfsstat4 st = ts_st(&res, 1);
	if (st == NFS4ERR_DENIED && den)
		ts_denied_copy(&res.resarray.val[2].u.oplockt.u.denied, den);
	xdr_arena_release(&ar);
	return st;
}

nfsstat4 ts_test(struct nfs41c_session *s, const stateid4 *sids, unsigned n, nfsstat4 *codes)
{
	nfs_argop4 op = ts_op(OP_TEST_STATEID);
	op.u.optest_stateid.ts_stateids.len = n;
	op.u.optest_stateid.ts_stateids.val = (stateid4 *)sids;
	COMPOUND4res res;
	struct xdr_arena ar;
	ts_run(s, &op, 1, &res, &ar);
	nfsstat4 st = ts_st(&res, 0);
	if (!st) {
		const TEST_STATEID4resok *ok = &res.resarray.val[1].u.optest_stateid.u.tsr_resok4;
		CHECK_EQ(ok->tsr_status_codes.len, n);
		for (unsigned i = 0; i < n; i++)
			codes[i] = ok->tsr_status_codes.val[i];
	}
	xdr_arena_release(&ar);
	return st;
}

nfsstat4 ts_free_stateid(struct nfs41c_session *s, const stateid4 *sid)
{
	nfs_argop4 op = ts_op(OP_FREE_STATEID);
	op.u.opfree_stateid.fsa_stateid = *sid;
	COMPOUND4res res;
	struct xdr_arena ar;
	ts_run(s, &op, 1, &res, &ar);
	nfsstat4 st = ts_st(&res, 0);
	xdr_arena_release(&ar);
	return st;
}

nfsstat4 ts_reclaim_complete(struct nfs41c_session *s)
{
	nfs_argop4 op = ts_op(OP_RECLAIM_COMPLETE);
	op.u.opreclaim_complete.rca_one_fs = false;
	COMPOUND4res res;
	struct xdr_arena ar;
	ts_run(s, &op, 1, &res, &ar);
	nfsstat4 st = ts_st(&res, 0);
	xdr_arena_release(&ar);
	return st;
}

struct nfs41c_session *ts_session(struct mt *t, const char *owner, uint32_t uid, uint32_t gid)
{
	struct nfs41c_session *s = mt_session_noreclaim(t, owner, uid, gid);
	CHECK_EQ(ts_reclaim_complete(s), NFS4_OK);
	return s;
}

double ts_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}
