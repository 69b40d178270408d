/* SPDX-License-Identifier: MIT */
/*
 * Byte-range locks (RFC 8881 §9.2-9.4, §18.10-18.12) with POSIX semantics
 * (OPEN4_RESULT_LOCKTYPE_POSIX): a lock-owner's locks on a file never
 * overlap; a LOCK over its own ranges replaces them (upgrade, downgrade),
 * ranges of one type that touch merge, and LOCKU of part of a range splits
 * it.  Locks are advisory: they never fail I/O.  Blocking types (READW_LT,
 * WRITEW_LT) are answered at once like the others; a client polls.
 *
 * A lock stateid stands for one lock-owner's locks on one file, so its
 * ranges are exactly the owner's there.  State and locking rules: state_impl.h.
 *
 * NLM's locks (mds/nlm.c) are ranges of the same list, held by an
 * ST_SID_NLM entry per (NLM owner, file): NFSv4 and NLM locks conflict both
 * ways, and an NLM holder is reported to NFSv4 as clientid 0 with its oh
 * as the owner.  A change that may let a blocked NLM request go (LOCKU, a
 * LOCK replacing ranges, an NLM unlock) kicks NLM's thread (mds_nlm_kick).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mds/fh.h"
#include "mds/nlm.h"
#include "mds/state_impl.h"

/* READW/WRITEW are READ/WRITE that the client may wait for (§9.6). */
static nfsstat4 lock_type(int32_t t, int32_t *out)
{
	switch (t) {
	case READ_LT:
	case READW_LT:
		*out = READ_LT;
		return NFS4_OK;
	case WRITE_LT:
	case WRITEW_LT:
		*out = WRITE_LT;
		return NFS4_OK;
	default:
		return NFS4ERR_INVAL;
	}
}

/* §18.10.3: length 0, or offset + length past NFS4_UINT64_MAX (unless the
 * length is NFS4_UINT64_MAX, "to EOF"), is NFS4ERR_INVAL.  Offsets are
 * 64-bit here, so NFS4ERR_BAD_RANGE (a 32-bit server's) never applies. */
static nfsstat4 lock_range(uint64_t off, uint64_t len, uint64_t *start, uint64_t *end)
{
	if (len == 0)
		return NFS4ERR_INVAL;
	if (len != UINT64_MAX && len > UINT64_MAX - off)
		return NFS4ERR_INVAL;
	*start = off;
	*end = len == UINT64_MAX ? UINT64_MAX : off + (len - 1);
	return NFS4_OK;
}

/* The current filehandle, which must be a regular file (§18.10.3). */
static nfsstat4 lock_file(struct nfs41_compound *c, struct mds_fh *fh)
{
	struct mds_attr a;
	nfsstat4 s = mds_cfh(c, fh, &a, NULL);
	return s ? s : mds_reg_file(&a);
}

/* NLM owners are one object per file: compared by what names them. */
static bool owner_same(const struct st_owner *a, const struct st_owner *b)
{
	if (a == b)
		return true;
	return a && b && a->kind == ST_NLM_OWNER && b->kind == ST_NLM_OWNER &&
	       a->nlm_host == b->nlm_host && a->nlm_svid == b->nlm_svid && a->len == b->len &&
	       !memcmp(a->name, b->name, a->len);
}

/* The first lock of another owner that conflicts with type over [start, end]. */
static const struct st_range *conflict(const struct st_file *f, const struct st_owner *ow,
				       int32_t type, uint64_t start, uint64_t end)
{
	for (const struct st_range *r = f ? f->ranges : NULL; r && r->start <= end; r = r->next)
		if (r->end >= start && !owner_same(r->lock->owner, ow) &&
		    (type == WRITE_LT || r->type == WRITE_LT))
			return r;
	return NULL;
}

/* §18.10.2: NFS4ERR_DENIED carries the conflicting lock and its owner,
 * with that owner's real client ID. */
static nfsstat4 denied(struct nfs41_compound *c, const struct st_range *r, LOCK4denied *d)
{
	const struct st_owner *ow = r->lock->owner;
	uint8_t *name = xdr_arena_alloc(c->arena, ow->len ? ow->len : 1);
	if (!name)
		return NFS4ERR_SERVERFAULT;
	memcpy(name, ow->name, ow->len);
	d->offset = r->start;
	d->length = r->end == UINT64_MAX ? UINT64_MAX : r->end - r->start + 1;
	d->locktype = r->type;
	d->owner.clientid = ow->cl ? ow->cl->id : 0; /* an NLM owner: none */
	d->owner.owner = xdr_opaque_of(name, ow->len);
	return NFS4ERR_DENIED;
}

static void range_link(struct st_file *f, struct st_range *n)
{
	struct st_range **pp = &f->ranges;
	while (*pp && (*pp)->start < n->start)
		pp = &(*pp)->next;
	n->next = *pp;
	*pp = n;
	n->lock->nranges++;
}

/*
 * Takes [start, end] out of the lock stateid's ranges.  Its ranges are
 * disjoint, so at most one covers the hole on both sides and is split: that
 * one piece comes from *spare (set to NULL when used).
 */
static void range_cut(struct st_file *f, struct st_sid *l, uint64_t start, uint64_t end,
		      struct st_range **spare)
{
	struct st_range *cut = NULL;
	for (struct st_range **pp = &f->ranges; *pp && (*pp)->start <= end;) {
		struct st_range *r = *pp;
		if (r->lock != l || r->end < start) {
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		l->nranges--;
		r->next = cut;
		cut = r;
	}
	while (cut) {
		struct st_range *r = cut;
		cut = r->next;
		bool left = r->start < start;
		bool right = r->end > end;
		if (left && right) {
			struct st_range *n = *spare;
			*spare = NULL;
			*n = (struct st_range){
			    .lock = l, .start = end + 1, .end = r->end, .type = r->type};
			r->end = start - 1;
			range_link(f, r);
			range_link(f, n);
		} else if (left) {
			r->end = start - 1;
			range_link(f, r);
		} else if (right) {
			r->start = end + 1;
			range_link(f, r);
		} else {
			free(r);
		}
	}
}

/* n (not linked yet) swallows its owner's ranges of its type that touch it. */
static void range_absorb(struct st_file *f, struct st_range *n)
{
	for (struct st_range **pp = &f->ranges; *pp;) {
		struct st_range *r = *pp;
		bool touch = r->lock == n->lock && r->type == n->type &&
			     ((n->start && r->end == n->start - 1) ||
			      (n->end != UINT64_MAX && r->start == n->end + 1));
		if (!touch) {
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		n->lock->nranges--;
		if (r->start < n->start)
			n->start = r->start;
		else
			n->end = r->end;
		free(r);
	}
}

void st_ranges_drop(struct st_sid *lock)
{
	struct st_file *f = lock->file;
	for (struct st_range **pp = &f->ranges; *pp;) {
		struct st_range *r = *pp;
		if (r->lock != lock) {
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		free(r);
	}
	lock->nranges = 0;
}

/* RFC 8881 §18.10 */
nfsstat4 mds_op_lock(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *res)
{
	struct mds_state *st = mds_of(c)->state;
	const LOCK4args *la = &a->u.oplock;
	const locker4 *lk = &la->locker;
	int32_t type;
	uint64_t start, end;
	struct mds_fh fh;
	stateid4 id;
	nfsstat4 s;
	if ((s = lock_type(la->locktype, &type)) ||
	    (s = lock_range(la->offset, la->length, &start, &end)) || (s = lock_file(c, &fh)) ||
	    (s = st_sid_arg(c,
			    lk->new_lock_owner ? &lk->u.open_owner.open_stateid
					       : &lk->u.lock_owner.lock_stateid,
			    false, &id)))
		return s;
	/* §8.4.2.1: during grace only reclaims */
	if (st_grace_poll(st) && !la->reclaim)
		return NFS4ERR_GRACE;
	if ((s = st_client_record(st, c)))
		return s;
	struct st_range *n = malloc(sizeof(*n)), *spare = malloc(sizeof(*spare));
	if (!n || !spare) {
		free(n);
		free(spare);
		return NFS4ERR_SERVERFAULT;
	}

	pthread_mutex_lock(&st->mu);
	struct st_client *cl = st_client_get(st, c);
	struct st_owner *ow = NULL;
	struct st_sid *o = NULL, *l = NULL;
	if (!cl) {
		s = NFS4ERR_SERVERFAULT;
		goto out;
	}
	s = la->reclaim						 ? st_reclaim_check(st, cl)
	    : st->in_grace || !(cl->reclaim_complete || cl->v40) ? NFS4ERR_GRACE
								 : NFS4_OK;
	if (s)
		goto out;
	if (lk->new_lock_owner) {
		/* §18.10.3: the owner's clientid and the seqids are ignored */
		if ((s = st_sid_find(st, c->clientid, &id, ST_SID_OPEN, fh.ino, &o)))
			goto out;
		if (!(ow = st_owner_get(st, cl, ST_LOCK_OWNER, &lk->u.open_owner.lock_owner.owner,
					true))) {
			s = NFS4ERR_SERVERFAULT;
			goto out;
		}
		/* one stateid per lock-owner and file: a client that lost it
		 * gets it back (§18.10.3 "does not have the stateid available") */
		for (l = o->file->lockers; l && l->owner != ow; l = l->fnext)
			;
	} else {
		if ((s = st_sid_find(st, c->clientid, &id, ST_SID_LOCK, fh.ino, &l)))
			goto out;
		o = l->open;
		ow = l->owner;
	}
	/* §18.10.4: POSIX wants a read lock on a file open for read, a write
	 * lock on one open for write */
	if (!(o->access &
	      (type == WRITE_LT ? OPEN4_SHARE_ACCESS_WRITE : OPEN4_SHARE_ACCESS_READ))) {
		s = NFS4ERR_OPENMODE;
		goto out;
	}
	const struct st_range *x = conflict(o->file, ow, type, start, end);
	if (x) {
		s = denied(c, x, &res->u.oplock.u.denied);
		goto out;
	}
	if (!l) {
		if (!(l = st_sid_new(st, ST_SID_LOCK, o->cl, ow, o->file))) {
			s = NFS4ERR_SERVERFAULT;
			goto out;
		}
		l->open = o;
	} else {
		st_sid_bump(l);
	}
	range_cut(o->file, l, start, end, &spare);
	*n = (struct st_range){.lock = l, .start = start, .end = end, .type = type};
	range_absorb(o->file, n);
	range_link(o->file, n);
	n = NULL;
	id.seqid = l->seqid;
	memcpy(id.other, l->other, sizeof(id.other));
	res->u.oplock.u.resok4.lock_stateid = id;
out:
	st_owner_put_unused(st, ow); /* a new owner whose first LOCK failed */
	pthread_mutex_unlock(&st->mu);
	free(n);
	free(spare);
	if (!s) {
		nfs41_compound_set_stateid(c, &id);
		mds_nlm_kick(mds_of(c)); /* a downgrade may let a blocked NLM request go */
	}
	return s;
}

/* RFC 8881 §18.11 */
nfsstat4 mds_op_lockt(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *res)
{
	struct mds_state *st = mds_of(c)->state;
	const LOCKT4args *ta = &a->u.oplockt;
	int32_t type;
	uint64_t start, end;
	struct mds_fh fh;
	nfsstat4 s;
	if ((s = lock_type(ta->locktype, &type)) ||
	    (s = lock_range(ta->offset, ta->length, &start, &end)) || (s = lock_file(c, &fh)))
		return s;
	/* §8.4.2.1: locks not yet reclaimed would make the answer wrong */
	if (st_grace_poll(st))
		return NFS4ERR_GRACE;
	pthread_mutex_lock(&st->mu);
	struct st_client *cl = st_client_get(st, c);
	if (!cl) {
		s = NFS4ERR_SERVERFAULT;
	} else {
		/* §18.11.3: the owner is the session's client's; its own
		 * locks do not conflict (§18.11.4) */
		const struct st_owner *ow =
		    st_owner_get(st, cl, ST_LOCK_OWNER, &ta->owner.owner, false);
		const struct st_range *x =
		    conflict(st_file_get(st, fh.ino, false), ow, type, start, end);
		if (x)
			s = denied(c, x, &res->u.oplockt.u.denied);
	}
	pthread_mutex_unlock(&st->mu);
	return s;
}

/* RFC 8881 §18.12 */
nfsstat4 mds_op_locku(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *res)
{
	struct mds_state *st = mds_of(c)->state;
	const LOCKU4args *ua = &a->u.oplocku;
	int32_t type;
	uint64_t start, end;
	struct mds_fh fh;
	stateid4 id;
	nfsstat4 s;
	/* §18.12.3: any legal locktype, none of them matters */
	if ((s = lock_type(ua->locktype, &type)) ||
	    (s = lock_range(ua->offset, ua->length, &start, &end)) || (s = lock_file(c, &fh)) ||
	    (s = st_sid_arg(c, &ua->lock_stateid, false, &id)))
		return s;
	struct st_range *spare = malloc(sizeof(*spare));
	if (!spare)
		return NFS4ERR_SERVERFAULT;
	pthread_mutex_lock(&st->mu);
	struct st_sid *l;
	if (!(s = st_sid_find(st, c->clientid, &id, ST_SID_LOCK, fh.ino, &l))) {
		/* unlocking what is not locked is no error under POSIX */
		range_cut(l->file, l, start, end, &spare);
		st_sid_bump(l);
		id.seqid = l->seqid;
		memcpy(id.other, l->other, sizeof(id.other));
		res->u.oplocku.u.lock_stateid = id;
	}
	pthread_mutex_unlock(&st->mu);
	free(spare);
	if (!s) {
		nfs41_compound_set_stateid(c, &id);
		mds_nlm_kick(mds_of(c)); /* a blocked NLM request may go now */
	}
	return s;
}

/* ------------------------------------------------------------ NLM (mds/nlm.c) */

static void conflict_out(const struct st_range *r, struct mds_lock_conflict *x)
{
	const struct st_owner *ow = r->lock->owner;
	x->exclusive = r->type == WRITE_LT;
	x->nlm = ow->kind == ST_NLM_OWNER;
	x->svid = x->nlm ? ow->nlm_svid : 0;
	x->clientid = ow->cl ? ow->cl->id : 0;
	x->start = r->start;
	x->end = r->end;
	x->oh_len = ow->len < MDS_LOCK_OH_MAX ? ow->len : MDS_LOCK_OH_MAX;
	memcpy(x->oh, ow->name, x->oh_len);
}

/* A stack owner to compare with (never linked anywhere): st_owner and room
 * for its name. */
struct nlm_key {
	_Alignas(struct st_owner) uint8_t buf[sizeof(struct st_owner) + MDS_LOCK_OH_MAX];
};

static const struct st_owner *nlm_key(struct nlm_key *k, const struct mds_nlm_owner *o)
{
	struct st_owner *ow = (struct st_owner *)k->buf;
	memset(ow, 0, sizeof(*ow));
	ow->kind = ST_NLM_OWNER;
	ow->nlm_host = o->host;
	ow->nlm_svid = o->svid;
	ow->len = o->oh_len < MDS_LOCK_OH_MAX ? o->oh_len : MDS_LOCK_OH_MAX;
	memcpy(ow->name, o->oh, ow->len);
	return ow;
}

/* The owner's entry on f, or NULL. */
static struct st_sid *nlm_sid_find(const struct st_file *f, const struct st_owner *key)
{
	for (struct st_sid *l = f ? f->nlm : NULL; l; l = l->fnext)
		if (owner_same(l->owner, key))
			return l;
	return NULL;
}

static struct st_sid *nlm_sid_new(struct st_file *f, const struct st_owner *key)
{
	struct st_sid *l = calloc(1, sizeof(*l));
	struct st_owner *ow = malloc(sizeof(*ow) + key->len);
	if (!l || !ow) {
		free(l);
		free(ow);
		return NULL;
	}
	*ow = *key;
	ow->refs = 1;
	memcpy(ow->name, key->name, key->len);
	l->type = ST_SID_NLM;
	l->owner = ow;
	l->file = f;
	l->ino = f->ino;
	l->seqid = 1;
	l->fnext = f->nlm;
	if (l->fnext)
		l->fnext->fpprev = &l->fnext;
	f->nlm = l;
	l->fpprev = &f->nlm;
	struct mds_nlm_holder *h = (struct mds_nlm_holder *)key->nlm_host;
	l->cnext = h->sids;
	if (l->cnext)
		l->cnext->cpprev = &l->cnext;
	h->sids = l;
	l->cpprev = &h->sids;
	return l;
}

static void nlm_sid_free(struct mds_state *st, struct st_sid *l)
{
	*l->fpprev = l->fnext;
	if (l->fnext)
		l->fnext->fpprev = l->fpprev;
	*l->cpprev = l->cnext;
	if (l->cnext)
		l->cnext->cpprev = l->cpprev;
	free(l->owner);
	st_file_put_unused(st, l->file);
	free(l);
}

int mds_lock_nlm_test(struct braid_mds *mds, uint64_t ino, const struct mds_nlm_owner *o,
		      bool exclusive, uint64_t start, uint64_t end, struct mds_lock_conflict *x)
{
	struct mds_state *st = mds->state;
	struct nlm_key k;
	const struct st_owner *key = nlm_key(&k, o);
	pthread_mutex_lock(&st->mu);
	const struct st_range *r =
	    conflict(st_file_get(st, ino, false), key, exclusive ? WRITE_LT : READ_LT, start, end);
	if (r && x)
		conflict_out(r, x);
	pthread_mutex_unlock(&st->mu);
	return r ? -EAGAIN : 0;
}

int mds_lock_nlm(struct braid_mds *mds, uint64_t ino, const struct mds_nlm_owner *o, bool exclusive,
		 uint64_t start, uint64_t end, struct mds_lock_conflict *x)
{
	struct mds_state *st = mds->state;
	struct nlm_key k;
	const struct st_owner *key = nlm_key(&k, o);
	int32_t type = exclusive ? WRITE_LT : READ_LT;
	struct st_range *n = malloc(sizeof(*n)), *spare = malloc(sizeof(*spare));
	int rc = 0;
	bool kick = false;
	if (!n || !spare) {
		free(n);
		free(spare);
		return -ENOMEM;
	}
	pthread_mutex_lock(&st->mu);
	struct st_file *f = st_file_get(st, ino, true);
	if (!f) {
		rc = -ENOMEM;
		goto out;
	}
	const struct st_range *r = conflict(f, key, type, start, end);
	if (r) {
		if (x)
			conflict_out(r, x);
		rc = -EAGAIN;
		goto out;
	}
	struct st_sid *l = nlm_sid_find(f, key);
	if (!l && !(l = nlm_sid_new(f, key))) {
		rc = -ENOMEM;
		goto out;
	}
	kick = l->nranges != 0; /* a downgrade may let others in */
	range_cut(f, l, start, end, &spare);
	*n = (struct st_range){.lock = l, .start = start, .end = end, .type = type};
	range_absorb(f, n);
	range_link(f, n);
	n = NULL;
out:
	if (f)
		st_file_put_unused(st, f);
	pthread_mutex_unlock(&st->mu);
	free(n);
	free(spare);
	if (kick)
		mds_nlm_kick(mds);
	return rc;
}

int mds_lock_nlm_unlock(struct braid_mds *mds, uint64_t ino, const struct mds_nlm_owner *o,
			uint64_t start, uint64_t end)
{
	struct mds_state *st = mds->state;
	struct nlm_key k;
	const struct st_owner *key = nlm_key(&k, o);
	struct st_range *spare = malloc(sizeof(*spare));
	if (!spare)
		return -ENOMEM;
	pthread_mutex_lock(&st->mu);
	struct st_sid *l = nlm_sid_find(st_file_get(st, ino, false), key);
	if (l) {
		range_cut(l->file, l, start, end, &spare);
		if (!l->nranges)
			nlm_sid_free(st, l);
	}
	pthread_mutex_unlock(&st->mu);
	free(spare);
	if (l)
		mds_nlm_kick(mds);
	return 0;
}

void mds_lock_nlm_drop_host(struct braid_mds *mds, struct mds_nlm_holder *host)
{
	struct mds_state *st = mds->state;
	pthread_mutex_lock(&st->mu);
	bool any = host->sids != NULL;
	while (host->sids) {
		struct st_sid *l = host->sids;
		st_ranges_drop(l);
		nlm_sid_free(st, l);
	}
	pthread_mutex_unlock(&st->mu);
	if (any)
		mds_nlm_kick(mds);
}

bool mds_lock_nlm_host_busy(struct braid_mds *mds, const struct mds_nlm_holder *host)
{
	struct mds_state *st = mds->state;
	pthread_mutex_lock(&st->mu);
	bool busy = host->sids != NULL;
	pthread_mutex_unlock(&st->mu);
	return busy;
}

bool mds_state_share_conflict(struct braid_mds *mds, uint64_t ino, uint32_t access, uint32_t deny)
{
	struct mds_state *st = mds->state;
	bool x = false;
	pthread_mutex_lock(&st->mu);
	const struct st_file *f = st_file_get(st, ino, false);
	for (const struct st_sid *o = f ? f->opens : NULL; o && !x; o = o->fnext)
		x = (o->access & deny) || (o->deny & access);
	pthread_mutex_unlock(&st->mu);
	return x;
}
