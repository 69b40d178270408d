/* SPDX-License-Identifier: MIT */
/*
 * NFSv4.0 state (RFC 7530 §9): what minor version 0 adds to the state of
 * op_state.c and state_lock.c, through the session layer's v40_begin and
 * v40_end hooks around every operation of a 4.0 COMPOUND, and the 4.0-only
 * OPEN_CONFIRM and RELEASE_LOCKOWNER.
 *
 *  - Client IDs: an operation names its client by an owner (OPEN, LOCKT,
 *    RELEASE_LOCKOWNER) or a stateid; begin makes it c->clientid and
 *    renews its lease (§9.5) through nfs41_compound_v40_client.  A stateid
 *    of another server instance is NFS4ERR_STALE_STATEID (§9.1.4.3).
 *  - Sequence ids (§9.1.7): OPEN, OPEN_CONFIRM, OPEN_DOWNGRADE and CLOSE
 *    carry their open-owner's seqid, LOCK and LOCKU their lock-owner's (a
 *    LOCK with a new lock-owner the open-owner's, and the lock-owner's
 *    first).  The next seqid runs; the last one is a retransmission and
 *    gets the owner's last reply again, byte for byte (end keeps every
 *    such op's encoded result; begin decodes it into the result, which
 *    encodes to the same bytes); anything else is NFS4ERR_BAD_SEQID.  The
 *    seqid moves on after every result but those of §9.1.7's list.  4.0
 *    owners live, with their seqid and reply, until their client ends
 *    (or RELEASE_LOCKOWNER), so a retransmitted CLOSE is still answered.
 *  - OPEN_CONFIRM (§16.18): a new open-owner's first OPEN says
 *    OPEN4_RESULT_CONFIRM; its open stateid is BAD_STATEID until
 *    OPEN_CONFIRM.
 *  - What 4.0 lacks: OPEN's share_access _WANT_ bits, the 4.1 claim types
 *    and EXCLUSIVE4_1 are NFS4ERR_INVAL; OPEN4_RESULT_PRESERVE_UNLINKED is
 *    not reported.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "mds/callback.h"
#include "mds/fh.h"
#include "mds/state_impl.h"

#define V40_REPLY_MAX 2048 /* a LOCK4denied with a 1024-byte owner fits */

/* One operation's owner and seqid, from begin to end (c->v40_op, arena). */
struct v40_op {
	uint64_t clientid;
	uint8_t kind; /* ST_OPEN_OWNER or ST_LOCK_OWNER */
	xdr_opaque name;
	uint32_t seqid;
	/* LOCK with a new lock-owner: it starts at lseqid */
	bool new_lock;
	xdr_opaque lname;
	uint32_t lseqid;
};

static xdr_opaque dup_opaque(struct xdr_arena *ar, const void *p, uint32_t n)
{
	uint8_t *q = xdr_arena_alloc(ar, n ? n : 1);
	if (q && n)
		memcpy(q, p, n);
	return xdr_opaque_of(q, q ? n : 0);
}

/* mu held: the 4.0 owner whose last CLOSE ended the open stateid 'other'. */
static struct st_owner *closed_owner(struct mds_state *st, const uint8_t *other)
{
	for (struct htab_node **b = st->owners.b; b <= &st->owners.b[st->owners.mask]; b++)
		for (struct htab_node *e = *b; e; e = e->next) {
			struct st_owner *ow = (struct st_owner *)e;
			if (ow->v40 && ow->has_closed &&
			    !memcmp(ow->closed, other, NFS4_OTHER_SIZE))
				return ow;
		}
	return NULL;
}

/*
 * The client of a stateid becomes the COMPOUND's.  With vp, the stateid's
 * owner too (a new struct v40_op): for CLOSE (closed) also the owner of an
 * open stateid its last CLOSE ended, for a retransmission.  Special
 * stateids name no client (vp: BAD_STATEID).
 */
static nfsstat4 by_sid(struct nfs41_compound *c, const stateid4 *id, bool closed,
		       struct v40_op **vp)
{
	struct mds_state *st = mds_of(c)->state;
	if (mds_sid_special(id))
		return vp ? NFS4ERR_BAD_STATEID : NFS4_OK;
	if (memcmp(id->other, st->tag, sizeof(st->tag)))
		return NFS4ERR_STALE_STATEID; /* another server instance's */
	struct v40_op *v = vp ? xdr_arena_alloc(c->arena, sizeof(*v)) : NULL;
	if (vp && !v)
		return NFS4ERR_RESOURCE;
	nfsstat4 s = NFS4_OK;
	uint64_t clientid = 0;
	pthread_mutex_lock(&st->mu);
	struct st_sid *x = st_sid_lookup(st, id->other);
	struct st_owner *ow = x ? x->owner : NULL;
	if (!x && closed)
		ow = closed_owner(st, id->other);
	if (x)
		clientid = x->cl->id;
	else if (ow)
		clientid = ow->cl->id;
	else
		s = NFS4ERR_BAD_STATEID;
	if (!s && vp && !ow)
		s = NFS4ERR_BAD_STATEID; /* a delegation's: no seqid to go by */
	if (!s && v) {
		memset(v, 0, sizeof(*v));
		v->clientid = clientid;
		v->kind = ow->kind;
		v->name = dup_opaque(c->arena, ow->name, ow->len);
		if (!v->name.val)
			s = NFS4ERR_RESOURCE;
	}
	pthread_mutex_unlock(&st->mu);
	if (!s)
		s = nfs41_compound_v40_client(c, clientid);
	if (!s && vp)
		*vp = v;
	return s;
}

static nfsstat4 by_owner(struct nfs41_compound *c, uint64_t clientid, uint8_t kind,
			 const xdr_opaque *name, uint32_t seqid, struct v40_op **vp)
{
	nfsstat4 s = nfs41_compound_v40_client(c, clientid);
	if (s || !vp)
		return s;
	struct v40_op *v = xdr_arena_alloc(c->arena, sizeof(*v));
	if (!v)
		return NFS4ERR_RESOURCE;
	memset(v, 0, sizeof(*v));
	v->clientid = clientid;
	v->kind = kind;
	v->name = *name; /* the arguments live as long as the COMPOUND */
	v->seqid = seqid;
	*vp = v;
	return NFS4_OK;
}

/* RFC 7530 §16.16: what a 4.0 OPEN may ask. */
static nfsstat4 open_args_v40(const OPEN4args *oa)
{
	if (oa->share_access & ~(uint32_t)OPEN4_SHARE_ACCESS_BOTH)
		return NFS4ERR_INVAL;
	if (oa->claim.claim > CLAIM_DELEGATE_PREV)
		return NFS4ERR_INVAL;
	if (oa->openhow.opentype == OPEN4_CREATE && oa->openhow.u.how.mode > EXCLUSIVE4)
		return NFS4ERR_INVAL;
	return NFS4_OK;
}

/* The owner and seqid an operation goes by (vp), its client made c's. */
static nfsstat4 op_owner(struct nfs41_compound *c, nfs_argop4 *a, struct v40_op **vp)
{
	nfsstat4 s;
	*vp = NULL;
	switch (a->argop) {
	case OP_OPEN: {
		const OPEN4args *oa = &a->u.opopen;
		if ((s = open_args_v40(oa)))
			return s;
		return by_owner(c, oa->owner.clientid, ST_OPEN_OWNER, &oa->owner.owner, oa->seqid,
				vp);
	}
	case OP_OPEN_CONFIRM:
		if ((s = by_sid(c, &a->u.opopen_confirm.open_stateid, false, vp)))
			return s;
		(*vp)->seqid = a->u.opopen_confirm.seqid;
		return NFS4_OK;
	case OP_OPEN_DOWNGRADE:
		if ((s = by_sid(c, &a->u.opopen_downgrade.open_stateid, false, vp)))
			return s;
		(*vp)->seqid = a->u.opopen_downgrade.seqid;
		return NFS4_OK;
	case OP_CLOSE:
		if ((s = by_sid(c, &a->u.opclose.open_stateid, true, vp)))
			return s;
		(*vp)->seqid = a->u.opclose.seqid;
		return NFS4_OK;
	case OP_LOCK: {
		const locker4 *lk = &a->u.oplock.locker;
		if (!lk->new_lock_owner) {
			if ((s = by_sid(c, &lk->u.lock_owner.lock_stateid, false, vp)))
				return s;
			(*vp)->seqid = lk->u.lock_owner.lock_seqid;
			return NFS4_OK;
		}
		const open_to_lock_owner4 *o = &lk->u.open_owner;
		if ((s = by_sid(c, &o->open_stateid, false, vp)))
			return s;
		if (o->lock_owner.clientid != c->clientid)
			return NFS4ERR_BAD_STATEID; /* the open is another client's */
		(*vp)->seqid = o->open_seqid;
		(*vp)->new_lock = true;
		(*vp)->lname = o->lock_owner.owner;
		(*vp)->lseqid = o->lock_seqid;
		return NFS4_OK;
	}
	case OP_LOCKU:
		if ((s = by_sid(c, &a->u.oplocku.lock_stateid, false, vp)))
			return s;
		(*vp)->seqid = a->u.oplocku.seqid;
		return NFS4_OK;
	case OP_LOCKT:
		return by_owner(c, a->u.oplockt.owner.clientid, 0, NULL, 0, NULL);
	case OP_RELEASE_LOCKOWNER:
		return by_owner(c, a->u.oprelease_lockowner.lock_owner.clientid, 0, NULL, 0, NULL);
	case OP_READ:
		return by_sid(c, &a->u.opread.stateid, false, NULL);
	case OP_WRITE:
		return by_sid(c, &a->u.opwrite.stateid, false, NULL);
	case OP_SETATTR:
		return by_sid(c, &a->u.opsetattr.stateid, false, NULL);
	case OP_DELEGRETURN:
		return by_sid(c, &a->u.opdelegreturn.deleg_stateid, false, NULL);
	default:
		return NFS4_OK;
	}
}

/* The last reply of an owner, decoded into r; its status. */
static nfsstat4 replay(struct nfs41_compound *c, const struct st_owner *ow, nfs_resop4 *r)
{
	uint8_t *copy = xdr_arena_alloc(c->arena, ow->reply_len);
	if (!copy)
		return NFS4ERR_RESOURCE;
	memcpy(copy, ow->reply, ow->reply_len);
	struct xdr_dec d;
	xdr_dec_init(&d, copy, ow->reply_len, c->arena);
	if (xdr_dec_nfs_resop4(&d, r))
		return NFS4ERR_SERVERFAULT;
	nfsstat4 st;
	memcpy(&st, &r->u, sizeof(st)); /* every result begins with it */
	return st;
}

nfsstat4 mds_v40_begin(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r, bool *done)
{
	struct mds_state *st = mds_of(c)->state;
	struct v40_op *v;
	nfsstat4 s = op_owner(c, a, &v);
	if (s || !v) {
		*done = s != NFS4_OK;
		return s;
	}
	pthread_mutex_lock(&st->mu);
	struct st_client *cl = st_client_get(st, c);
	struct st_owner *ow = cl ? st_owner_get(st, cl, v->kind, &v->name, true) : NULL;
	if (!ow) {
		s = NFS4ERR_RESOURCE;
	} else {
		ow->v40 = true; /* kept, with its seqid, until its client ends */
		/* an OPEN of an owner never confirmed starts it afresh (§16.16.5) */
		bool fresh = !ow->seq_valid ||
			     (a->argop == OP_OPEN && !ow->confirmed && v->seqid != ow->seqid);
		if (!fresh && v->seqid == ow->seqid) {
			if (ow->reply_len >= 4 && (int32_t)xdr_get32(ow->reply) == a->argop)
				s = replay(c, ow, r);
			else
				s = NFS4ERR_BAD_SEQID;
			v = NULL; /* answered: end has nothing to do */
			*done = true;
		} else if (!fresh && v->seqid != ow->seqid + 1) {
			s = NFS4ERR_BAD_SEQID;
			v = NULL;
			*done = true;
		}
	}
	pthread_mutex_unlock(&st->mu);
	if (s)
		*done = true;
	c->v40_op = v;
	return s;
}

/* §9.1.7: the errors after which the seqid does not move on. */
static bool seqid_kept(nfsstat4 st)
{
	switch (st) {
	case NFS4ERR_STALE_CLIENTID:
	case NFS4ERR_STALE_STATEID:
	case NFS4ERR_BAD_STATEID:
	case NFS4ERR_BAD_SEQID:
	case NFS4ERR_BADXDR:
	case NFS4ERR_RESOURCE:
	case NFS4ERR_NOFILEHANDLE:
	case NFS4ERR_MOVED:
		return true;
	default:
		return false;
	}
}

void mds_v40_end(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r, nfsstat4 status)
{
	struct mds_state *st = mds_of(c)->state;
	struct v40_op *v = c->v40_op;
	c->v40_op = NULL;
	if (!v || seqid_kept(status))
		return;
	pthread_mutex_lock(&st->mu);
	struct st_client *cl = st_client_find(st, v->clientid);
	struct st_owner *ow = cl ? st_owner_get(st, cl, v->kind, &v->name, false) : NULL;
	if (!ow)
		goto out;
	if (a->argop == OP_OPEN && status == NFS4_OK) {
		uint32_t *fl = &r->u.opopen.u.resok4.rflags;
		*fl &= ~(uint32_t)OPEN4_RESULT_PRESERVE_UNLINKED; /* 4.1's */
		if (!ow->confirmed)
			*fl |= OPEN4_RESULT_CONFIRM;
	}
	if (a->argop == OP_CLOSE && status == NFS4_OK) {
		ow->has_closed = true;
		memcpy(ow->closed, a->u.opclose.open_stateid.other, NFS4_OTHER_SIZE);
	}
	if (v->new_lock && status == NFS4_OK) {
		struct st_owner *lo = st_owner_get(st, cl, ST_LOCK_OWNER, &v->lname, false);
		if (lo) {
			lo->v40 = true;
			lo->seqid = v->lseqid;
			lo->seq_valid = true;
			free(lo->reply);
			lo->reply = NULL;
			lo->reply_len = 0;
		}
	}
	ow->seqid = v->seqid;
	ow->seq_valid = true;
	/* the reply to send again for a retransmission */
	uint8_t tmp[V40_REPLY_MAX], *buf = NULL;
	struct iovec iov[8];
	struct xdr_enc e;
	xdr_enc_init(&e, iov, 8, tmp, sizeof(tmp), NULL);
	if (!xdr_enc_nfs_resop4(&e, r) && !e.err && (buf = malloc(e.len ? e.len : 1)))
		xdr_enc_flatten(&e, buf);
	free(ow->reply);
	ow->reply = buf;
	ow->reply_len = buf ? (uint32_t)e.len : 0;
out:
	pthread_mutex_unlock(&st->mu);
}

void st_v40_owners_free(struct mds_state *st, struct st_client *cl)
{
	if (!cl->v40)
		return;
	for (struct htab_node **b = st->owners.b; b <= &st->owners.b[st->owners.mask]; b++)
		for (struct htab_node *e = *b, *next; e; e = next) {
			next = e->next;
			struct st_owner *ow = (struct st_owner *)e;
			if (ow->cl == cl && !ow->refs)
				st_owner_free(st, ow);
		}
}

bool mds_v40_cb_path_down(void *priv, uint64_t clientid)
{
	struct braid_mds *mds = priv;
	struct mds_state *st = mds->state;
	pthread_mutex_lock(&st->mu);
	struct st_client *cl = st_client_find(st, clientid);
	bool delegs = cl && cl->ndelegs;
	pthread_mutex_unlock(&st->mu);
	return delegs && !mds_cb_up(mds, clientid);
}

/* ------------------------------------------------------------ OPEN_CONFIRM */

/* RFC 7530 §16.18 */
static nfsstat4 op_open_confirm(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct mds_state *st = mds_of(c)->state;
	const stateid4 *id = &a->u.opopen_confirm.open_stateid;
	struct mds_fh fh;
	nfsstat4 s;
	if ((s = mds_cfh(c, &fh, NULL, NULL)))
		return s;
	pthread_mutex_lock(&st->mu);
	struct st_sid *o = st_sid_lookup(st, id->other);
	if (!o || o->type != ST_SID_OPEN || o->cl->id != c->clientid || o->ino != fh.ino ||
	    o->owner->confirmed)
		s = NFS4ERR_BAD_STATEID;
	else if (id->seqid != o->seqid)
		s = (int32_t)(id->seqid - o->seqid) < 0 ? NFS4ERR_OLD_STATEID : NFS4ERR_BAD_STATEID;
	if (!s) {
		o->owner->confirmed = true;
		st_sid_bump(o);
		stateid4 *out = &r->u.opopen_confirm.u.resok4.open_stateid;
		out->seqid = o->seqid;
		memcpy(out->other, o->other, NFS4_OTHER_SIZE);
	}
	pthread_mutex_unlock(&st->mu);
	return s;
}

/* ------------------------------------------------------------ RELEASE_LOCKOWNER */

/* RFC 7530 §16.37: the lock-owner's state goes, unless it holds locks. */
static nfsstat4 op_release_lockowner(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	(void)r;
	struct mds_state *st = mds_of(c)->state;
	nfsstat4 s = NFS4_OK;
	pthread_mutex_lock(&st->mu);
	struct st_client *cl = st_client_find(st, c->clientid);
	struct st_owner *ow = cl ? st_owner_get(st, cl, ST_LOCK_OWNER,
						&a->u.oprelease_lockowner.lock_owner.owner, false)
				 : NULL;
	for (struct st_sid *x = ow ? cl->sids : NULL; x && !s; x = x->cnext)
		if (x->owner == ow && x->nranges)
			s = NFS4ERR_LOCKS_HELD;
	if (ow && !s) {
		ow->v40 = true; /* kept through its stateids' end */
		for (struct st_sid *x = cl->sids, *next; x; x = next) {
			next = x->cnext;
			if (x->owner == ow)
				st_sid_free(st, x);
		}
		st_owner_free(st, ow);
	}
	pthread_mutex_unlock(&st->mu);
	return s;
}

const struct mds_opdef mds_ops_v40[] = {
    {OP_OPEN_CONFIRM, {.fn = op_open_confirm, .flags = NFS41_OP_NEEDS_FH}},
    {OP_RELEASE_LOCKOWNER, {.fn = op_release_lockowner}},
    {0},
};
