/* SPDX-License-Identifier: MIT */
/*
 * Client state (RFC 8881 chapters 8, 9 and 18): clients, open-owners and
 * lock-owners, stateids, opens with their share reservations; OPEN,
 * OPEN_DOWNGRADE, CLOSE, TEST_STATEID, FREE_STATEID, DELEGRETURN and
 * RECLAIM_COMPLETE; the grace period after a restart and the client records
 * that make it possible.  Byte-range locks are in state_lock.c, delegations
 * (which OPEN grants, what conflicts with them, recalls) in deleg.c; the
 * shared structures and the locking rules in state_impl.h.
 *
 * Delegations are not kept across a restart: CLAIM_PREVIOUS reclaims a read
 * delegation during grace (§10.2.1), CLAIM_DELEGATE_PREV / _DELEG_PREV_FH
 * and DELEGPURGE, which only a server keeping them needs, are NOTSUPP
 * (§18.5.3, §18.16.3).
 *
 * Grace (§8.4.2.1): before a client first holds state, a record of its
 * owner goes to the store (durably, before the reply).  At start, if records
 * exist and grace_time is not 0, the grace period begins: reclaims
 * (CLAIM_PREVIOUS, LOCK with reclaim) from clients whose owner has a record
 * are granted, every other new open or lock gets NFS4ERR_GRACE, and I/O with
 * a special stateid too (a reclaimed deny reservation could forbid it).  It
 * ends after grace_time, or once every recorded client has sent a global
 * RECLAIM_COMPLETE; then the records of clients that did not come back are
 * removed.  A record goes when its client ID ends (lease expiry,
 * DESTROY_CLIENTID, a client restart).  A client ID's non-reclaim OPEN or
 * LOCK before its RECLAIM_COMPLETE gets NFS4ERR_GRACE, in grace or not
 * (§18.51.3: clients send it first, even with nothing to reclaim).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "mds/attr.h"
#include "mds/callback.h"
#include "mds/data.h"
#include "mds/ec.h"
#include "mds/fh.h"
#include "mds/layout.h"
#include "mds/ns.h"
#include "mds/space.h"
#include "mds/state.h"
#include "mds/state_impl.h"

#define ACCESS_BITS OPEN4_SHARE_ACCESS_BOTH
#define DENY_BITS    OPEN4_SHARE_DENY_BOTH
#define DEFAULT_MODE 0600 /* a create without mode: the owner only (cf. §18.16.4) */

/* ------------------------------------------------------------ clients, owners, files */

struct st_client *st_client_find(struct mds_state *st, uint64_t id)
{
	uint64_t h = nfsd_mix64(id);
	for (struct htab_node *n = htab_find(&st->clients, h); n; n = htab_next(n, h)) {
		struct st_client *cl = (struct st_client *)n;
		if (cl->id == id)
			return cl;
	}
	return NULL;
}

/* Which record from before the restart, if any, is this client's owner's. */
static int prev_match(const struct mds_state *st, const struct st_client *cl)
{
	for (unsigned i = 0; i < st->nprev; i++)
		if (st->prev[i].owner_len == cl->owner_len &&
		    !memcmp(st->prev[i].owner, cl->owner, cl->owner_len))
			return (int)i + 1;
	return 0;
}

struct st_client *st_client_get(struct mds_state *st, struct nfs41_compound *c)
{
	struct st_client *cl = st_client_find(st, c->clientid);
	if (cl)
		return cl;
	if (!(cl = calloc(1, sizeof(*cl))))
		return NULL;
	cl->id = c->clientid;
	cl->v40 = c->minorversion == 0;
	size_t len = 0;
	if (nfs41_client_owner(c->srv, c->clientid, cl->owner, sizeof(cl->owner), &len)) {
		free(cl); /* the COMPOUND's own client is alive while it runs */
		return NULL;
	}
	cl->owner_len = (uint32_t)(len < sizeof(cl->owner) ? len : sizeof(cl->owner));
	if (st->in_grace)
		cl->prev = prev_match(st, cl);
	htab_add(&st->clients, &cl->h, nfsd_mix64(cl->id));
	return cl;
}

static uint64_t owner_hash(const struct mds_state *st, const struct st_client *cl, uint8_t kind,
			   const xdr_opaque *name)
{
	return siphash24(&st->key, name->val, name->len) ^ nfsd_mix64(cl->id * 4 + kind);
}

struct st_owner *st_owner_get(struct mds_state *st, struct st_client *cl, uint8_t kind,
			      const xdr_opaque *name, bool create)
{
	uint64_t h = owner_hash(st, cl, kind, name);
	for (struct htab_node *n = htab_find(&st->owners, h); n; n = htab_next(n, h)) {
		struct st_owner *ow = (struct st_owner *)n;
		if (n->hash == h && ow->cl == cl && ow->kind == kind && ow->len == name->len &&
		    (!name->len || !memcmp(ow->name, name->val, name->len)))
			return ow;
	}
	if (!create)
		return NULL;
	struct st_owner *ow = calloc(1, sizeof(*ow) + name->len);
	if (!ow)
		return NULL;
	ow->cl = cl;
	ow->kind = kind;
	ow->len = name->len;
	if (name->len)
		memcpy(ow->name, name->val, name->len);
	htab_add(&st->owners, &ow->h, h);
	return ow;
}

void st_owner_free(struct mds_state *st, struct st_owner *ow)
{
	htab_del(&st->owners, &ow->h);
	free(ow->reply);
	free(ow);
}

void st_owner_put_unused(struct mds_state *st, struct st_owner *ow)
{
	if (ow && !ow->refs && !ow->v40)
		st_owner_free(st, ow);
}

struct st_file *st_file_get(struct mds_state *st, uint64_t ino, bool create)
{
	uint64_t h = nfsd_mix64(ino);
	for (struct htab_node *n = htab_find(&st->files, h); n; n = htab_next(n, h)) {
		struct st_file *f = (struct st_file *)n;
		if (f->ino == ino)
			return f;
	}
	if (!create)
		return NULL;
	struct st_file *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->ino = ino;
	htab_add(&st->files, &f->h, h);
	return f;
}

void st_file_put_unused(struct mds_state *st, struct st_file *f)
{
	if (f && !f->opens && !f->lockers && !f->delegs && !f->nlm) {
		htab_del(&st->files, &f->h);
		free(f);
	}
}

/* ------------------------------------------------------------ stateids */

static bool sid_anonymous(const stateid4 *id)
{
	return id->seqid == 0 && mds_sid_other_is(id, 0);
}

static bool sid_bypass(const stateid4 *id)
{
	return id->seqid == UINT32_MAX && mds_sid_other_is(id, 0xff);
}

nfsstat4 st_sid_arg(struct nfs41_compound *c, const stateid4 *in, bool keep_seqid, stateid4 *out)
{
	*out = *in;
	if (in->seqid != 1 || !mds_sid_other_is(in, 0))
		return NFS4_OK;
	nfsstat4 s = nfs41_compound_stateid(c, out);
	if (s)
		return s;
	/* §8.2.3: a current stateid that is itself special is no good here */
	if (mds_sid_special(out))
		return NFS4ERR_BAD_STATEID;
	if (!keep_seqid)
		out->seqid = 0;
	return NFS4_OK;
}

struct st_sid *st_sid_lookup(struct mds_state *st, const uint8_t *other)
{
	uint64_t h = get_le64(other + 4);
	for (struct htab_node *n = htab_find(&st->sids, h); n; n = htab_next(n, h)) {
		struct st_sid *s = (struct st_sid *)n;
		if (n->hash == h && !memcmp(s->other, other, NFS4_OTHER_SIZE))
			return s;
	}
	return NULL;
}

/* §8.2.2: zero means "the current one"; a lower seqid is old, a higher one
 * was never handed out (compared modulo 2^32, seqids wrap). */
static nfsstat4 seqid_check(const struct st_sid *s, uint32_t seqid)
{
	if (seqid == 0 || seqid == s->seqid)
		return NFS4_OK;
	return (int32_t)(seqid - s->seqid) < 0 ? NFS4ERR_OLD_STATEID : NFS4ERR_BAD_STATEID;
}

/* The checks of §8.2.4, in its order. */
nfsstat4 st_sid_find(struct mds_state *st, uint64_t clientid, const stateid4 *id, uint8_t type,
		     uint64_t ino, struct st_sid **out)
{
	*out = NULL;
	if (mds_sid_special(id) || memcmp(id->other, st->tag, sizeof(st->tag)))
		return NFS4ERR_BAD_STATEID; /* special, or another server instance's */
	struct st_sid *s = st_sid_lookup(st, id->other);
	if (!s || (ino && s->ino != ino) || s->cl->id != clientid || (type && s->type != type))
		return NFS4ERR_BAD_STATEID;
	if (s->type == ST_SID_DELEG && s->dl.revoked)
		return NFS4ERR_DELEG_REVOKED; /* §8.2.4: until FREE_STATEID */
	if (st_sid_unconfirmed(s))
		return NFS4ERR_BAD_STATEID; /* RFC 7530 §16.18.5: before OPEN_CONFIRM */
	nfsstat4 r = seqid_check(s, id->seqid);
	if (!r)
		*out = s;
	return r;
}

static void sid_out(const struct st_sid *s, stateid4 *out)
{
	out->seqid = s->seqid;
	memcpy(out->other, s->other, NFS4_OTHER_SIZE);
}

void st_sid_bump(struct st_sid *s)
{
	s->seqid = s->seqid == UINT32_MAX ? 1 : s->seqid + 1;
}

struct st_sid *st_sid_new(struct mds_state *st, uint8_t type, struct st_client *cl,
			  struct st_owner *ow, struct st_file *f)
{
	struct st_sid *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	memcpy(s->other, st->tag, sizeof(st->tag));
	/* the tag keeps it from being special; a PRF collision is retried */
	do {
		uint64_t n = st->next_sid++;
		uint64_t prf = siphash24(&st->key, &n, sizeof(n));
		memcpy(s->other + 4, &prf, 8);
	} while (st_sid_lookup(st, s->other));
	s->seqid = 1;
	s->type = type;
	s->cl = cl;
	s->owner = ow;
	s->file = f;
	s->ino = f->ino;
	if (ow)
		ow->refs++;
	struct st_sid **head = type == ST_SID_OPEN   ? &f->opens
			       : type == ST_SID_LOCK ? &f->lockers
						     : &f->delegs;
	s->fnext = *head;
	if (s->fnext)
		s->fnext->fpprev = &s->fnext;
	*head = s;
	s->fpprev = head;
	s->cnext = s->cl->sids;
	if (s->cnext)
		s->cnext->cpprev = &s->cnext;
	s->cl->sids = s;
	s->cpprev = &s->cl->sids;
	htab_add(&st->sids, &s->h, get_le64(s->other + 4));
	return s;
}

void st_sid_free(struct mds_state *st, struct st_sid *s)
{
	htab_del(&st->sids, &s->h);
	if (s->fpprev) { /* a revoked delegation has left its file */
		*s->fpprev = s->fnext;
		if (s->fnext)
			s->fnext->fpprev = s->fpprev;
	}
	*s->cpprev = s->cnext;
	if (s->cnext)
		s->cnext->cpprev = s->cpprev;
	if (s->owner) {
		s->owner->refs--;
		st_owner_put_unused(st, s->owner);
	}
	st_file_put_unused(st, s->file);
	free(s);
}

/* ------------------------------------------------------------ records and grace */

nfsstat4 st_client_record(struct mds_state *st, struct nfs41_compound *c)
{
	struct braid_mds *mds = st->mds;
	struct mds_client_rec *rec = calloc(1, sizeof(*rec));
	uint8_t *owner = malloc(MDS_OWNER_MAX);
	nfsstat4 r = NFS4_OK;
	if (!rec || !owner) {
		r = NFS4ERR_SERVERFAULT;
		goto out;
	}
	size_t len = 0;
	pthread_mutex_lock(&st->mu);
	struct st_client *cl = st_client_get(st, c);
	bool need = cl && !cl->recorded;
	if (need) {
		len = cl->owner_len;
		memcpy(owner, cl->owner, len);
	}
	pthread_mutex_unlock(&st->mu);
	if (!cl) {
		r = NFS4ERR_SERVERFAULT;
		goto out;
	}
	if (!need)
		goto out;
	rec->clientid = c->clientid;
	struct mds_client_args ca = {.owner = owner, .owner_len = len, .rec = rec};
	pthread_mutex_lock(&st->rec_mu);
	int rc = mds_client_put(mds->store, &ca);
	pthread_mutex_unlock(&st->rec_mu);
	if (rc) {
		mds_log("client record: %s", strerror(-rc));
		r = mds_nfs4_status(rc);
		goto out;
	}
	pthread_mutex_lock(&st->mu);
	/* the client cannot end while its COMPOUND runs */
	if ((cl = st_client_find(st, c->clientid)))
		cl->recorded = true;
	pthread_mutex_unlock(&st->mu);
out:
	free(rec);
	free(owner);
	return r;
}

/* Removes owner's record if it still names clientid (a newer incarnation
 * of the client may have replaced it). */
static void record_drop(struct mds_state *st, const uint8_t *owner, size_t len, uint64_t clientid)
{
	struct mds_client_rec *rec = malloc(sizeof(*rec));
	if (!rec)
		return;
	pthread_mutex_lock(&st->rec_mu);
	if (!mds_client_get(st->mds->store, owner, len, rec) && rec->clientid == clientid) {
		struct mds_client_args ca = {.owner = owner, .owner_len = len};
		int rc = mds_client_remove(st->mds->store, &ca);
		if (rc && rc != -ENOENT)
			mds_log("client record removal: %s", strerror(-rc));
	}
	pthread_mutex_unlock(&st->rec_mu);
	free(rec);
}

/* mu held: ends grace when due; returns the records to check, if it did. */
static struct st_prev *grace_end_locked(struct mds_state *st, unsigned *n)
{
	*n = 0;
	if (!st->in_grace)
		return NULL;
	if (nfsd_now_ns() < st->grace_end_ns && (st->grace_full || st->nprev_complete < st->nprev))
		return NULL;
	st->in_grace = false;
	atomic_store(&st->grace, false);
	struct st_prev *p = st->prev;
	*n = st->nprev;
	st->prev = NULL;
	st->nprev = st->nprev_complete = st->prev_cap = 0;
	for (struct htab_node **b = st->clients.b; b <= &st->clients.b[st->clients.mask]; b++)
		for (struct htab_node *e = *b; e; e = e->next)
			((struct st_client *)e)->prev = 0;
	return p;
}

static void prev_free(struct st_prev *p, unsigned n)
{
	for (unsigned i = 0; p && i < n; i++)
		free(p[i].owner);
	free(p);
}

bool st_grace_poll(struct mds_state *st)
{
	if (!atomic_load(&st->grace))
		return false;
	unsigned n;
	pthread_mutex_lock(&st->mu);
	struct st_prev *p = grace_end_locked(st, &n);
	bool in = st->in_grace;
	pthread_mutex_unlock(&st->mu);
	if (p) {
		mds_log("grace period over");
		/* a client that came back rewrote its record with its new id */
		for (unsigned i = 0; i < n; i++)
			record_drop(st, p[i].owner, p[i].owner_len, p[i].clientid);
		prev_free(p, n);
	}
	return in;
}

nfsstat4 st_reclaim_check(struct mds_state *st, const struct st_client *cl)
{
	if (!st->in_grace || cl->reclaim_complete)
		return NFS4ERR_NO_GRACE; /* §8.4.2.1, §18.51.3 */
	/* §15.1.9.4: without a record it held no state before the restart */
	return cl->prev ? NFS4_OK : NFS4ERR_RECLAIM_BAD;
}

static int prev_collect(void *arg, const void *owner, size_t len, const struct mds_client_rec *rec)
{
	struct mds_state *st = arg;
	if (rec->flags & MDS_CLIENT_NSM)
		return 0; /* NLM's hosts and NSM state (mds/nlm.c) */
	if (st->nprev == st->prev_cap) {
		unsigned cap = st->prev_cap ? st->prev_cap * 2 : 16;
		struct st_prev *p = realloc(st->prev, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		st->prev = p;
		st->prev_cap = cap;
	}
	struct st_prev *e = &st->prev[st->nprev];
	memset(e, 0, sizeof(*e));
	if (!(e->owner = malloc(len ? len : 1)))
		return -ENOMEM;
	memcpy(e->owner, owner, len);
	e->owner_len = (uint32_t)len;
	e->clientid = rec->clientid;
	st->nprev++;
	return 0;
}

/* ------------------------------------------------------------ setup */

int mds_state_init(struct braid_mds *mds, char *msg, size_t msglen)
{
	struct mds_state *st = calloc(1, sizeof(*st));
	if (!st || htab_init(&st->sids, 1024) || htab_init(&st->clients, 64) ||
	    htab_init(&st->owners, 256) || htab_init(&st->files, 1024)) {
		if (st) {
			htab_release(&st->sids);
			htab_release(&st->clients);
			htab_release(&st->owners);
			htab_release(&st->files);
		}
		free(st);
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	st->mds = mds;
	pthread_mutex_init(&st->mu, NULL);
	pthread_mutex_init(&st->rec_mu, NULL);
	uint8_t rnd[4 + 16 + 8];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		snprintf(msg, msglen, "getrandom: %s", strerror(errno));
		mds->state = st;
		mds_state_release(mds);
		return -EIO;
	}
	memcpy(st->tag, rnd, 4);
	/* special stateids have "other" all zeros or all ones (§8.2.3) */
	if ((st->tag[0] == 0 || st->tag[0] == 0xff) && st->tag[0] == st->tag[1] &&
	    st->tag[1] == st->tag[2] && st->tag[2] == st->tag[3])
		st->tag[0] ^= 0x5a;
	siphash_key_from_bytes(&st->key, rnd + 4);
	memcpy(&st->next_sid, rnd + 20, 8);
	mds->state = st;

	int rc = mds_client_list(mds->store, prev_collect, st);
	if (rc) {
		snprintf(msg, msglen, "client records: %s", strerror(-rc));
		mds_state_release(mds);
		return rc;
	}
	if ((rc = st_deleg_init(st, msg, msglen))) {
		mds_state_release(mds);
		return rc;
	}
	if (st->nprev && mds->set.grace_ms) {
		st->in_grace = true;
		atomic_store(&st->grace, true);
		st->grace_end_ns = nfsd_now_ns() + mds->set.grace_ms * 1000000ull;
		mds_log("grace period: %u client(s) may reclaim for %llu ms", st->nprev,
			(unsigned long long)mds->set.grace_ms);
	} else if (st->nprev) {
		/* no grace period: no reclaim, so the records mean nothing */
		for (unsigned i = 0; i < st->nprev; i++)
			record_drop(st, st->prev[i].owner, st->prev[i].owner_len,
				    st->prev[i].clientid);
		prev_free(st->prev, st->nprev);
		st->prev = NULL;
		st->nprev = st->prev_cap = 0;
	}
	return 0;
}

static void client_free_locked(struct mds_state *st, struct st_client *cl, uint64_t **inos,
			       size_t *ninos)
{
	/* locks first: their stateids point at the opens */
	for (struct st_sid *s = cl->sids, *next; s; s = next) {
		next = s->cnext;
		if (s->type == ST_SID_LOCK) {
			st_ranges_drop(s);
			st_sid_free(st, s);
		}
	}
	while (cl->sids) {
		struct st_sid *s = cl->sids;
		uint64_t ino = s->ino;
		if (s->type == ST_SID_DELEG)
			st_deleg_free(st, s, false);
		else
			st_sid_free(st, s);
		if (inos && !st_file_get(st, ino, false)) {
			uint64_t *v = realloc(*inos, (*ninos + 1) * sizeof(**inos));
			if (v) {
				*inos = v;
				v[(*ninos)++] = ino;
			}
		}
	}
	st_v40_owners_free(st, cl);
	htab_del(&st->clients, &cl->h);
	free(cl);
}

void mds_state_stop(struct braid_mds *mds)
{
	if (mds->state)
		st_deleg_stop(mds->state);
}

void mds_state_release(struct braid_mds *mds)
{
	struct mds_state *st = mds->state;
	if (!st)
		return;
	st_deleg_stop(st);
	/* the records stay: the next instance's grace period needs them */
	for (size_t b = 0; st->clients.b && b <= st->clients.mask; b++)
		while (st->clients.b[b])
			client_free_locked(st, (struct st_client *)st->clients.b[b], NULL, NULL);
	st_deleg_release(st);
	prev_free(st->prev, st->nprev);
	htab_release(&st->sids);
	htab_release(&st->clients);
	htab_release(&st->owners);
	htab_release(&st->files);
	pthread_mutex_destroy(&st->mu);
	pthread_mutex_destroy(&st->rec_mu);
	free(st);
	mds->state = NULL;
}

/* A regular file with no links whose last open just went (§18.16.3 PRESERVE_UNLINKED). */
static void orphan_release(struct braid_mds *mds, uint64_t ino)
{
	struct mds_attr a;
	if (mds_state_ino_open(mds, ino))
		return;
	if (!mds_inode_getattr(mds->store, ino, &a) && a.type == MDS_REG && a.nlink == 0)
		mds_data_release_later(mds, ino);
}

/* RFC 8881 §8.3: the lease ran out (or the client ID was destroyed or
 * replaced): its opens and locks go, and so does its record. */
void mds_state_client_expired(void *priv, uint64_t clientid)
{
	struct braid_mds *mds = priv;
	struct mds_state *st = mds->state;
	uint64_t *inos = NULL;
	size_t ninos = 0;
	uint8_t *owner = malloc(MDS_OWNER_MAX);
	size_t owner_len = 0;
	bool recorded = false;
	pthread_mutex_lock(&st->mu);
	struct st_client *cl = st_client_find(st, clientid);
	if (cl) {
		recorded = cl->recorded;
		owner_len = cl->owner_len;
		if (owner)
			memcpy(owner, cl->owner, owner_len);
		client_free_locked(st, cl, &inos, &ninos);
	}
	pthread_mutex_unlock(&st->mu);
	if (recorded && owner)
		record_drop(st, owner, owner_len, clientid);
	mds_layout_client_expired(mds, clientid); /* its layouts, and fencing */
	mds_cb_client_gone(mds, clientid);	  /* its 4.0 callback path */
	for (size_t i = 0; i < ninos; i++)
		orphan_release(mds, inos[i]);
	free(inos);
	free(owner);
}

uint32_t mds_state_seq_flags(void *priv, uint64_t clientid)
{
	struct braid_mds *mds = priv;
	struct mds_state *st = mds->state;
	if (!atomic_load(&st->nrevoked))
		return 0; /* the common case, without the lock */
	pthread_mutex_lock(&st->mu);
	struct st_client *cl = st_client_find(st, clientid);
	bool revoked = cl && cl->nrevoked;
	pthread_mutex_unlock(&st->mu);
	return revoked ? SEQ4_STATUS_RECALLABLE_STATE_REVOKED : 0;
}

bool mds_state_client_has_state(void *priv, uint64_t clientid)
{
	struct braid_mds *mds = priv;
	struct mds_state *st = mds->state;
	pthread_mutex_lock(&st->mu);
	struct st_client *cl = st_client_find(st, clientid);
	bool has = cl && cl->sids;
	pthread_mutex_unlock(&st->mu);
	return has || mds_layout_client_has_state(mds, clientid);
}

int mds_state_client_counts(struct braid_mds *mds, uint64_t clientid, unsigned *opens,
			    unsigned *locks, unsigned *delegs)
{
	struct mds_state *st = mds->state;
	*opens = *locks = *delegs = 0;
	pthread_mutex_lock(&st->mu);
	struct st_client *cl = st_client_find(st, clientid);
	for (const struct st_sid *s = cl ? cl->sids : NULL; s; s = s->cnext)
		(*(s->type == ST_SID_OPEN ? opens : s->type == ST_SID_LOCK ? locks : delegs))++;
	pthread_mutex_unlock(&st->mu);
	return cl ? 0 : -ENOENT;
}

bool mds_state_ino_open(struct braid_mds *mds, uint64_t ino)
{
	struct mds_state *st = mds->state;
	pthread_mutex_lock(&st->mu);
	struct st_file *f = st_file_get(st, ino, false);
	bool open = f && f->opens;
	pthread_mutex_unlock(&st->mu);
	return open;
}

bool mds_state_ino_open_write(struct braid_mds *mds, uint64_t ino)
{
	struct mds_state *st = mds->state;
	pthread_mutex_lock(&st->mu);
	struct st_file *f = st_file_get(st, ino, false);
	bool w = false;
	for (const struct st_sid *o = f ? f->opens : NULL; o && !w; o = o->fnext)
		w = o->access & OPEN4_SHARE_ACCESS_WRITE;
	pthread_mutex_unlock(&st->mu);
	return w;
}

/* Whether c's client has sent a global RECLAIM_COMPLETE. */
static bool reclaim_done(struct mds_state *st, struct nfs41_compound *c)
{
	pthread_mutex_lock(&st->mu);
	struct st_client *cl = st_client_get(st, c);
	/* NFSv4.0 has no RECLAIM_COMPLETE: grace alone decides */
	bool done = cl && (cl->reclaim_complete || cl->v40);
	pthread_mutex_unlock(&st->mu);
	return done;
}

void mds_state_grace_hold(struct braid_mds *mds)
{
	struct mds_state *st = mds->state;
	if (!mds->set.grace_ms)
		return;
	pthread_mutex_lock(&st->mu);
	if (!st->in_grace) {
		st->in_grace = true;
		atomic_store(&st->grace, true);
		st->grace_end_ns = nfsd_now_ns() + mds->set.grace_ms * 1000000ull;
		mds_log("grace period: NLM hosts may reclaim for %llu ms",
			(unsigned long long)mds->set.grace_ms);
	}
	st->grace_full = true;
	pthread_mutex_unlock(&st->mu);
}

bool mds_state_in_grace(struct braid_mds *mds)
{
	return st_grace_poll(mds->state);
}

/* ------------------------------------------------------------ I/O */

nfsstat4 mds_state_check_io(struct nfs41_compound *c, const stateid4 *sid, uint64_t ino, bool write)
{
	struct mds_state *st = mds_of(c)->state;
	nfsstat4 r = NFS4_OK;
	if (sid_anonymous(sid) || sid_bypass(sid)) {
		/* §8.4.2.1: a reclaim may yet bring back a reservation denying it */
		if (st_grace_poll(st))
			return NFS4ERR_GRACE;
		/* §10.4: another client's write delegation may hold newer bytes */
		if (!write && mds_deleg_break_write(st->mds, ino, c->clientid) == -EAGAIN)
			return NFS4ERR_DELAY;
		/* §8.2.3: READ with the bypass stateid MAY ignore deny modes */
		if (sid_bypass(sid) && !write)
			return NFS4_OK;
		uint32_t deny = write ? OPEN4_SHARE_DENY_WRITE : OPEN4_SHARE_DENY_READ;
		pthread_mutex_lock(&st->mu);
		struct st_file *f = st_file_get(st, ino, false);
		/* §8.2.3: an open denying this access refuses it */
		for (struct st_sid *o = f ? f->opens : NULL; o && !r; o = o->fnext)
			if (o->deny & deny)
				r = NFS4ERR_LOCKED;
		pthread_mutex_unlock(&st->mu);
		/* §10.4.4: a write with a special stateid recalls read
		 * delegations (a read conflicts only with write ones) */
		if (!r && write &&
		    mds_deleg_break(st->mds, ino, c->clientid, MDS_DELEG_WRITE) == -EAGAIN)
			r = NFS4ERR_DELAY;
		return r;
	}
	pthread_mutex_lock(&st->mu);
	struct st_sid *s;
	r = st_sid_find(st, c->clientid, sid, 0, ino, &s);
	if (!r) {
		const struct st_sid *o = s->type == ST_SID_LOCK ? s->open : s;
		/* a write needs an open for write; a read is allowed with any
		 * open (clients read to fill pages of write-only files) */
		if (write && !(o->access & OPEN4_SHARE_ACCESS_WRITE))
			r = NFS4ERR_OPENMODE;
	}
	pthread_mutex_unlock(&st->mu);
	return r;
}

/* ------------------------------------------------------------ OPEN */

/* createattrs -> setattr arguments and attrset (op_attr.c). */
static nfsstat4 open_attrs(struct nfs41_compound *c, const fattr4 *in, struct mds_setattr_args *sa,
			   bitmap4 *set)
{
	memset(sa, 0, sizeof(*sa));
	set->len = 0;
	set->val = NULL;
	return mds_attr_decode_set(c, in, sa, set);
}

/* §18.16.3: the component's checks (zero length, characters, "." and ".."). */
static nfsstat4 name_check(const component4 *n)
{
	if (n->len == 0)
		return NFS4ERR_INVAL;
	if (n->len > MDS_NAME_MAX)
		return NFS4ERR_NAMETOOLONG;
	if (memchr(n->val, '/', n->len) || memchr(n->val, 0, n->len))
		return NFS4ERR_BADCHAR;
	if ((n->len == 1 && n->val[0] == '.') ||
	    (n->len == 2 && n->val[0] == '.' && n->val[1] == '.'))
		return NFS4ERR_BADNAME;
	return NFS4_OK;
}

/* §18.16.4: the requester must have the access share_access asks for
 * (read: read or execute permission, §18.1.3). */
static nfsstat4 open_permission(const struct mds_cred *cred, const struct mds_attr *a,
				uint32_t access)
{
	if ((access & OPEN4_SHARE_ACCESS_WRITE) && (!cred->rw || cred->pseudo))
		return NFS4ERR_ROFS;
	uint32_t got = mds_access(cred, a, ACCESS4_READ | ACCESS4_EXECUTE | ACCESS4_MODIFY);
	if ((access & OPEN4_SHARE_ACCESS_READ) && !(got & (ACCESS4_READ | ACCESS4_EXECUTE)))
		return NFS4ERR_ACCESS;
	if ((access & OPEN4_SHARE_ACCESS_WRITE) && !(got & ACCESS4_MODIFY))
		return NFS4ERR_ACCESS;
	return NFS4_OK;
}

/* What an OPEN resolved to before any state is granted. */
struct open_target {
	struct mds_attr attr; /* the file */
	struct mds_cinfo cinfo;
	bool cinfo_atomic;
	bool created;  /* by this OPEN (or the EXCLUSIVE4_1 one it replays) */
	bool truncate; /* UNCHECKED4 with size 0 on an existing file */
	bitmap4 attrset;
};

static bitmap4 bitmap_size(struct xdr_arena *arena)
{
	bitmap4 b = {0, NULL};
	uint32_t *w = xdr_arena_alloc(arena, sizeof(uint32_t));
	if (w) {
		*w = 1u << FATTR4_SIZE;
		b.len = 1;
		b.val = w;
	}
	return b;
}

/* The owner and group a create may set (§18.16.3: NFS4ERR_PERM). */
static nfsstat4 create_ids(const struct mds_cred *cred, const struct mds_attr *dir,
			   const struct mds_setattr_args *sa, uint32_t *uid, uint32_t *gid)
{
	*uid = (sa->mask & MDS_SET_UID) ? sa->uid : cred->uid;
	*gid = (sa->mask & MDS_SET_GID) ? sa->gid : (dir->mode & 02000) ? dir->gid : cred->gid;
	if (cred->uid == 0)
		return NFS4_OK;
	if (*uid != cred->uid)
		return NFS4ERR_PERM;
	if (sa->mask & MDS_SET_GID) {
		bool member = sa->gid == cred->gid;
		for (uint32_t i = 0; !member && i < cred->ngroups; i++)
			member = cred->groups[i] == sa->gid;
		if (!member)
			return NFS4ERR_PERM;
	}
	return NFS4_OK;
}

/* CLAIM_NULL: the name in the current directory, created if asked. */
static nfsstat4 open_by_name(struct nfs41_compound *c, const OPEN4args *oa, const component4 *name,
			     const struct mds_attr *dir, const struct mds_cred *cred,
			     struct open_target *t)
{
	struct braid_mds *mds = mds_of(c);
	bool create = oa->openhow.opentype == OPEN4_CREATE;
	const createhow4 *how = &oa->openhow.u.how;
	nfsstat4 r;
	if (dir->type != MDS_DIR)
		return NFS4ERR_NOTDIR;
	if ((r = name_check(name)))
		return r;
	/* the pseudo fs is searchable by all, as LOOKUP has it */
	if (!cred->pseudo && !(mds_access(cred, dir, ACCESS4_LOOKUP) & ACCESS4_LOOKUP))
		return NFS4ERR_ACCESS;

	struct mds_setattr_args sa;
	memset(&sa, 0, sizeof(sa));
	bitmap4 set = {0, NULL};
	const uint8_t *verf = NULL;
	if (create) {
		if (how->mode == UNCHECKED4 || how->mode == GUARDED4)
			r = open_attrs(c, &how->u.createattrs, &sa, &set);
		else if (how->mode == EXCLUSIVE4_1) {
			r = open_attrs(c, &how->u.ch_createboth.cva_attrs, &sa, &set);
			verf = how->u.ch_createboth.cva_verf;
		} else if (how->mode == EXCLUSIVE4) {
			verf = how->u.createverf; /* NFSv4.0 (RFC 7530 §16.16.5) */
		}
		if (r)
			return r;
	}

	for (int tries = 0;; tries++) {
		uint64_t ino;
		int rc = mds_dir_lookup(mds->store, dir->ino, (const char *)name->val, name->len,
					&ino, &t->attr);
		if (rc && rc != -ENOENT)
			return mds_nfs4_status(rc);
		if (!rc && cred->pseudo) {
			/* §7.3: the pseudo fs shows only the way to exports */
			struct mds_exports *x = mds_exports_get(mds);
			bool shown = t->attr.type == MDS_DIR && mds_export_on_path(mds, x, ino);
			mds_exports_put(x);
			if (!shown)
				return create ? NFS4ERR_ROFS : NFS4ERR_NOENT;
			return NFS4ERR_ISDIR;
		}
		if (!rc) {
			t->cinfo.before = t->cinfo.after = dir->change;
			t->cinfo_atomic = true;
			if (!create)
				return NFS4_OK;
			if (how->mode == GUARDED4)
				return NFS4ERR_EXIST;
			if (how->mode == EXCLUSIVE4_1 || how->mode == EXCLUSIVE4) {
				/* §18.16.4: the same verifier is a retry of our create */
				if (t->attr.type != MDS_REG || memcmp(t->attr.verf, verf, 8))
					return NFS4ERR_EXIST;
				t->created = true;
				t->attrset = set;
				return NFS4_OK;
			}
			/* UNCHECKED4: createattrs are not used, except size 0 */
			if ((sa.mask & MDS_SET_SIZE) && sa.size == 0 && t->attr.type == MDS_REG) {
				t->truncate = true;
				t->attrset = bitmap_size(c->arena);
			}
			return NFS4_OK;
		}
		if (!create)
			return NFS4ERR_NOENT;
		if (tries)
			return NFS4ERR_DELAY; /* created and removed under us twice */

		enum mds_create_how h = how->mode == UNCHECKED4 ? MDS_CREATE_UNCHECKED
					: how->mode == GUARDED4	 ? MDS_CREATE_GUARDED
								 : MDS_CREATE_EXCLUSIVE;
		r = mds_ns_create_file(mds, cred, dir, (const char *)name->val, name->len, h, &sa,
				       verf, &t->attr, &t->cinfo);
		if (r == NFS4ERR_EXIST)
			continue; /* raced with another create: judge what is there now */
		if (r)
			return r;
		t->cinfo_atomic = true;
		t->created = true;
		t->attrset = set;
		return NFS4_OK;
	}
}

nfsstat4 mds_ns_create_file(struct braid_mds *mds, const struct mds_cred *cred,
			    const struct mds_attr *dir, const char *name, size_t len,
			    enum mds_create_how how, const struct mds_setattr_args *sa,
			    const uint8_t *verf, struct mds_attr *attr, struct mds_cinfo *cinfo)
{
	nfsstat4 r;
	if (!cred->rw || cred->pseudo)
		return NFS4ERR_ROFS;
	uint32_t need = ACCESS4_MODIFY | ACCESS4_LOOKUP;
	if (mds_access(cred, dir, need) != need)
		return NFS4ERR_ACCESS;
	struct mds_create_args ca = {
	    .dir = dir->ino,
	    .name = name,
	    .name_len = len,
	    .type = MDS_REG,
	    .how = how,
	    .mode = (sa->mask & MDS_SET_MODE) ? sa->mode : DEFAULT_MODE,
	};
	if (verf)
		memcpy(ca.verf, verf, 8);
	if ((r = create_ids(cred, dir, sa, &ca.uid, &ca.gid)))
		return r;
	/* its directory's policy, in the create's transaction */
	struct mds_layout_seg policy;
	int rc;
	if ((rc = mds_layout_policy_for_create(mds, dir->ino, &policy)) < 0)
		return mds_nfs4_status(rc);
	if (rc) {
		ca.layout = &policy;
		ca.layout_seg = MDS_LAYOUT_REC;
	}
	struct mds_create_res cr;
	rc = mds_dir_create(mds->store, &ca, &cr);
	if (rc == -EEXIST || (!rc && cr.existed))
		return NFS4ERR_EXIST;
	if (rc)
		return mds_nfs4_status(rc);
	*attr = cr.attr;
	*cinfo = cr.cinfo;
	/* what the create itself did not set (times, a size) */
	struct mds_setattr_args rest = *sa;
	rest.ino = cr.attr.ino;
	rest.mask &= ~(MDS_SET_MODE | MDS_SET_UID | MDS_SET_GID);
	if ((rest.mask & MDS_SET_SIZE) && rest.size == 0)
		rest.mask &= ~MDS_SET_SIZE;
	if (rest.mask) {
		struct mds_setattr_res sr;
		if ((rc = mds_inode_setattr(mds->store, &rest, &sr)))
			return mds_nfs4_status(rc);
		*attr = sr.attr;
	}
	return NFS4_OK;
}

static void bmap_note(uint8_t *bmap, uint32_t v)
{
	*bmap |= (uint8_t)(1u << v);
}

/* What an OPEN claims (§18.16.3): the grace period applies to each differently. */
enum open_kind {
	OPEN_NEW,     /* CLAIM_NULL, CLAIM_FH */
	OPEN_RECLAIM, /* CLAIM_PREVIOUS */
	OPEN_DELEG,   /* CLAIM_DELEGATE_CUR, CLAIM_DELEG_CUR_FH: under a delegation of ours */
};

/* The open stateid: a new one, or the owner's existing one upgraded (§9.9).
 * *fresh says a new one was made (for undoing it).  Other clients'
 * delegations it conflicts with are recalled first (NFS4ERR_DELAY). */
static nfsstat4 open_grant(struct mds_state *st, struct nfs41_compound *c, uint64_t ino,
			   const open_owner4 *owner, uint32_t access, uint32_t deny,
			   enum open_kind kind, stateid4 *out, bool *fresh)
{
	nfsstat4 r = NFS4_OK;
	*fresh = false;
	pthread_mutex_lock(&st->mu);
	struct st_client *cl = st_client_get(st, c);
	if (!cl) {
		r = NFS4ERR_SERVERFAULT;
		goto out;
	}
	/* grace may have ended since the first look, never begun; an open
	 * under a delegation of this instance is not new state */
	if (kind == OPEN_RECLAIM)
		r = st_reclaim_check(st, cl);
	else if (kind == OPEN_NEW && (st->in_grace || !(cl->reclaim_complete || cl->v40)))
		r = NFS4ERR_GRACE; /* NFSv4.0 has no RECLAIM_COMPLETE */
	if (r)
		goto out;
	struct st_file *f = st_file_get(st, ino, true);
	struct st_owner *ow = f ? st_owner_get(st, cl, ST_OPEN_OWNER, &owner->owner, true) : NULL;
	if (!ow) {
		st_file_put_unused(st, f);
		r = NFS4ERR_SERVERFAULT;
		goto out;
	}
	/* §9.7: every open of the file counts, the owner's own included (§18.16.3) */
	struct st_sid *s = NULL;
	for (struct st_sid *o = f->opens; o; o = o->fnext) {
		if ((o->deny & access) || (deny & o->access))
			r = NFS4ERR_SHARE_DENIED;
		if (o->owner == ow)
			s = o;
	}
	if (!r)
		r = st_deleg_open_conflict(st, cl, f, access, deny);
	if (!r && !s) {
		if ((s = st_sid_new(st, ST_SID_OPEN, cl, ow, f)))
			*fresh = true;
		else
			r = NFS4ERR_SERVERFAULT;
	} else if (!r) {
		st_sid_bump(s); /* §9.9: an upgrade keeps "other" */
	}
	if (r) {
		st_owner_put_unused(st, ow);
		st_file_put_unused(st, f);
		goto out;
	}
	s->access |= access;
	s->deny |= deny;
	bmap_note(&s->access_bmap, access);
	bmap_note(&s->deny_bmap, deny);
	sid_out(s, out);
out:
	pthread_mutex_unlock(&st->mu);
	return r;
}

/* A fresh open whose OPEN failed after all (truncation): take it back. */
static void open_undo(struct mds_state *st, uint64_t clientid, const stateid4 *id)
{
	pthread_mutex_lock(&st->mu);
	struct st_sid *s;
	if (!st_sid_find(st, clientid, id, ST_SID_OPEN, 0, &s) && s->seqid == id->seqid &&
	    !s->file->lockers)
		st_sid_free(st, s);
	pthread_mutex_unlock(&st->mu);
}

/* CLAIM_DELEGATE_CUR, CLAIM_DELEG_CUR_FH: a delegation of this client on
 * this file (§18.16.3), "current stateid" allowed. */
static nfsstat4 deleg_claim_check(struct mds_state *st, struct nfs41_compound *c,
				  const stateid4 *in, uint64_t ino)
{
	stateid4 id;
	nfsstat4 s = st_sid_arg(c, in, false, &id);
	if (s)
		return s;
	struct st_sid *d;
	pthread_mutex_lock(&st->mu);
	s = st_sid_find(st, c->clientid, &id, ST_SID_DELEG, ino, &d);
	pthread_mutex_unlock(&st->mu);
	return s;
}

/* RFC 8881 §18.16 */
static nfsstat4 op_open(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct braid_mds *mds = mds_of(c);
	struct mds_state *st = mds->state;
	const OPEN4args *oa = &a->u.opopen;
	OPEN4resok *ok = &r->u.opopen.u.resok4;
	uint32_t access = oa->share_access & ACCESS_BITS;
	uint32_t want = oa->share_access & OPEN4_SHARE_ACCESS_WANT_DELEG_MASK;
	nfsstat4 s;

	/* §18.16.4 */
	if (!access || oa->share_deny & ~(uint32_t)DENY_BITS ||
	    oa->share_access & ~(uint32_t)(ACCESS_BITS | OPEN4_SHARE_ACCESS_WANT_DELEG_MASK |
					   ST_WANT_SIGNAL_FLAGS) ||
	    want > OPEN4_SHARE_ACCESS_WANT_CANCEL)
		return NFS4ERR_INVAL;
	const component4 *name = NULL;
	const stateid4 *dsid = NULL;
	enum open_kind kind = OPEN_NEW;
	switch (oa->claim.claim) {
	case CLAIM_NULL:
		name = &oa->claim.u.file;
		break;
	case CLAIM_FH:
		break;
	case CLAIM_PREVIOUS:
		kind = OPEN_RECLAIM;
		break;
	case CLAIM_DELEGATE_CUR:
		kind = OPEN_DELEG;
		name = &oa->claim.u.delegate_cur_info.file;
		dsid = &oa->claim.u.delegate_cur_info.delegate_stateid;
		break;
	case CLAIM_DELEG_CUR_FH:
		kind = OPEN_DELEG;
		dsid = &oa->claim.u.oc_delegate_stateid;
		break;
	case CLAIM_DELEGATE_PREV:
	case CLAIM_DELEG_PREV_FH:
		break;
	default:
		return NFS4ERR_INVAL;
	}
	if (oa->openhow.opentype == OPEN4_CREATE) {
		/* §18.16.3: creating needs a name */
		if (oa->claim.claim != CLAIM_NULL && oa->claim.claim != CLAIM_DELEGATE_CUR &&
		    oa->claim.claim != CLAIM_DELEGATE_PREV)
			return NFS4ERR_INVAL;
		/* §18.16.3 table 10: not on a pNFS server's client IDs, and this
		 * server is one for every client (EXCHGID4_FLAG_USE_PNFS_MDS) */
		if (oa->openhow.u.how.mode == EXCLUSIVE4 && c->minorversion != 0)
			return NFS4ERR_INVAL;
	}

	struct mds_fh fh;
	struct mds_attr cur;
	struct mds_cred cred;
	if ((s = mds_cfh(c, &fh, &cur, &cred)))
		return s;
	switch (oa->claim.claim) {
	case CLAIM_DELEGATE_PREV:
	case CLAIM_DELEG_PREV_FH:
		/* §18.16.3: optional; a server that supports them must keep
		 * delegations across client restarts and support DELEGPURGE */
		return NFS4ERR_NOTSUPP;
	}

	/* grace first: no file is created for an OPEN that must wait (also
	 * one sent before its client's RECLAIM_COMPLETE, §18.51.3) */
	bool grace = st_grace_poll(st);
	if (kind == OPEN_NEW && (grace || !reclaim_done(st, c)))
		return NFS4ERR_GRACE;
	if (kind == OPEN_RECLAIM) {
		pthread_mutex_lock(&st->mu);
		struct st_client *cl = st_client_get(st, c);
		s = cl ? st_reclaim_check(st, cl) : NFS4ERR_SERVERFAULT;
		pthread_mutex_unlock(&st->mu);
		if (s)
			return s;
		/* §10.2.1: a read or write delegation is granted back */
		if (oa->claim.u.delegate_type != OPEN_DELEGATE_NONE &&
		    oa->claim.u.delegate_type != OPEN_DELEGATE_READ &&
		    oa->claim.u.delegate_type != OPEN_DELEGATE_WRITE)
			return NFS4ERR_RECLAIM_BAD;
	}

	struct open_target t;
	memset(&t, 0, sizeof(t));
	if (name) {
		if ((s = open_by_name(c, oa, name, &cur, &cred, &t)))
			return s;
	} else {
		t.attr = cur;
	}
	if ((s = mds_reg_file(&t.attr)))
		return s;
	if (dsid && (s = deleg_claim_check(st, c, dsid, t.attr.ino)))
		return s;
	/* a file this OPEN made is the requester's to open as asked (POSIX
	 * O_CREAT); an existing one must allow it (§18.16.4) */
	if (!t.created && (s = open_permission(&cred, &t.attr, access)))
		return s;
	if (t.truncate && !(access & OPEN4_SHARE_ACCESS_WRITE))
		return NFS4ERR_INVAL; /* truncating needs an open for write */
	if ((s = st_client_record(st, c)))
		return s;

	stateid4 sid;
	bool fresh;
	if ((s = open_grant(st, c, t.attr.ino, &oa->owner, access, oa->share_deny, kind, &sid,
			    &fresh)))
		return s;
	if (t.truncate && t.attr.size) {
		struct mds_setattr_args ta = {.ino = t.attr.ino, .mask = MDS_SET_SIZE, .size = 0};
		struct mds_setattr_res tr;
		mds_layout_note_shrink(mds, t.attr.ino); /* before the cut (mds/layout.h) */
		int rc = mds_ec_write_begin_ino(mds, t.attr.ino); /* mds/ec.h */
		if (!rc)
			rc = mds_inode_setattr(mds->store, &ta, &tr);
		if (!rc)
			rc = mds_data_truncate(mds, &tr.attr, tr.old_size);
		if (rc) {
			if (fresh)
				open_undo(st, c->clientid, &sid);
			return mds_nfs4_status(rc);
		}
		t.attr = tr.attr;
	}

	ok->stateid = sid;
	ok->cinfo.atomic = t.cinfo_atomic;
	ok->cinfo.before = t.cinfo.before;
	ok->cinfo.after = t.cinfo.after;
	/* §18.16.3; orphans live until their last close, and across a restart
	 * until the grace period has passed */
	ok->rflags = OPEN4_RESULT_LOCKTYPE_POSIX | OPEN4_RESULT_PRESERVE_UNLINKED;
	ok->attrset = t.attrset;
	struct st_deleg_req q = {
	    .share_access = oa->share_access,
	    .prev = kind == OPEN_RECLAIM ? (int)oa->claim.u.delegate_type : -1,
	    .deleg_cur = kind == OPEN_DELEG,
	    .export_id = fh.export_id,
	    .igen = t.attr.generation,
	};
	st_deleg_answer(st, c, t.attr.ino, &q, &ok->delegation);
	mds_set_cfh(c, t.attr.ino, t.attr.generation, fh.export_id);
	nfs41_compound_set_stateid(c, &sid);
	return NFS4_OK;
}

static uint32_t open_res_bound(const nfs_argop4 *a)
{
	(void)a;
	/* op, status, stateid, cinfo, rflags, attrset (3 words); WRITE: type,
	 * stateid, recall, space_limit, an nfsace4 with an empty who */
	return 4 + 4 + 16 + 20 + 4 + 16 + 4 + 16 + 4 + 12 + 16;
}

/* ------------------------------------------------------------ OPEN_DOWNGRADE, CLOSE */

/* §18.18.3: v is the union of some of the values the OPENs asked for. */
static bool bmap_union_of(uint8_t bmap, uint32_t v)
{
	uint32_t u = 0;
	for (uint32_t x = 0; x < 4; x++)
		if ((bmap & (1u << x)) && !(x & ~v))
			u |= x;
	return u == v;
}

static uint8_t bmap_within(uint8_t bmap, uint32_t v)
{
	uint8_t out = 0;
	for (uint32_t x = 0; x < 4; x++)
		if ((bmap & (1u << x)) && !(x & ~v))
			out |= (uint8_t)(1u << x);
	return out | (uint8_t)(1u << v);
}

/* RFC 8881 §18.18 */
static nfsstat4 op_open_downgrade(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct mds_state *st = mds_of(c)->state;
	const OPEN_DOWNGRADE4args *da = &a->u.opopen_downgrade;
	uint32_t access = da->share_access & ~(uint32_t)OPEN4_SHARE_ACCESS_WANT_DELEG_MASK;
	struct mds_fh fh;
	stateid4 id;
	nfsstat4 s;
	if ((s = mds_cfh(c, &fh, NULL, NULL)) || (s = st_sid_arg(c, &da->open_stateid, true, &id)))
		return s;
	if (access < OPEN4_SHARE_ACCESS_READ || access > OPEN4_SHARE_ACCESS_BOTH ||
	    da->share_deny > OPEN4_SHARE_DENY_BOTH)
		return NFS4ERR_INVAL;
	pthread_mutex_lock(&st->mu);
	struct st_sid *o;
	s = st_sid_find(st, c->clientid, &id, ST_SID_OPEN, fh.ino, &o);
	if (!s && (!bmap_union_of(o->access_bmap, access) ||
		   !bmap_union_of(o->deny_bmap, da->share_deny)))
		s = NFS4ERR_INVAL;
	if (!s) {
		o->access = access;
		o->deny = da->share_deny;
		o->access_bmap = bmap_within(o->access_bmap, access);
		o->deny_bmap = bmap_within(o->deny_bmap, da->share_deny);
		st_sid_bump(o);
		sid_out(o, &r->u.opopen_downgrade.u.resok4.open_stateid);
	}
	pthread_mutex_unlock(&st->mu);
	if (!s)
		nfs41_compound_set_stateid(c, &r->u.opopen_downgrade.u.resok4.open_stateid);
	return s;
}

/* RFC 8881 §18.2 */
static nfsstat4 op_close(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct braid_mds *mds = mds_of(c);
	struct mds_state *st = mds->state;
	struct mds_fh fh;
	stateid4 id;
	nfsstat4 s;
	if ((s = mds_cfh(c, &fh, NULL, NULL)) ||
	    (s = st_sid_arg(c, &a->u.opclose.open_stateid, true, &id)))
		return s;
	bool last = false, wrote = false;
	pthread_mutex_lock(&st->mu);
	struct st_sid *o;
	s = st_sid_find(st, c->clientid, &id, ST_SID_OPEN, fh.ino, &o);
	/* §18.2.3: no lock may outlive the CLOSE; we do not drop them */
	for (struct st_sid *l = s ? NULL : o->file->lockers; l && !s; l = l->fnext)
		if (l->open == o && l->nranges)
			s = NFS4ERR_LOCKS_HELD;
	if (!s) {
		struct st_file *f = o->file;
		for (struct st_sid *l = f->lockers, *next; l; l = next) {
			next = l->fnext;
			if (l->open == o)
				st_sid_free(st, l);
		}
		/* the file outlives the loop: o is still on it */
		last = f->opens == o && !o->fnext;
		wrote = o->access & OPEN4_SHARE_ACCESS_WRITE;
		st_sid_free(st, o);
	}
	pthread_mutex_unlock(&st->mu);
	if (s)
		return s;
	if (wrote)
		mds_space_note(mds, fh.ino); /* data written through this open is in */
	if (last)
		orphan_release(mds, fh.ino);
	/* §18.2.4: the invalid special stateid */
	stateid4 *out = &r->u.opclose.u.open_stateid;
	out->seqid = UINT32_MAX;
	memset(out->other, 0, sizeof(out->other));
	return NFS4_OK;
}

static uint32_t small_res_bound(const nfs_argop4 *a)
{
	(void)a;
	return 4 + 4 + 16; /* op, status and a stateid */
}

/* ------------------------------------------------------------ TEST_STATEID, FREE_STATEID */

/* RFC 8881 §18.48 */
static nfsstat4 op_test_stateid(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct mds_state *st = mds_of(c)->state;
	const TEST_STATEID4args *ta = &a->u.optest_stateid;
	TEST_STATEID4resok *ok = &r->u.optest_stateid.u.tsr_resok4;
	uint32_t n = ta->ts_stateids.len;
	nfsstat4 *v = xdr_arena_alloc(c->arena, (n ? n : 1) * sizeof(*v));
	if (!v)
		return NFS4ERR_SERVERFAULT;
	pthread_mutex_lock(&st->mu);
	for (uint32_t i = 0; i < n; i++) {
		struct st_sid *s;
		/* special stateids are invalid here, the current one included */
		v[i] = st_sid_find(st, c->clientid, &ta->ts_stateids.val[i], 0, 0, &s);
	}
	pthread_mutex_unlock(&st->mu);
	for (uint32_t i = 0; i < n; i++) /* not ours: a layout stateid? */
		if (v[i] == NFS4ERR_BAD_STATEID)
			v[i] = mds_layout_sid_test(mds_of(c), c->clientid, &ta->ts_stateids.val[i]);
	ok->tsr_status_codes.len = n;
	ok->tsr_status_codes.val = v;
	return NFS4_OK;
}

static uint32_t test_res_bound(const nfs_argop4 *a)
{
	return 12 + 4 * a->u.optest_stateid.ts_stateids.len; /* op, status, count, codes */
}

/* RFC 8881 §18.38 */
static nfsstat4 op_free_stateid(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	(void)r;
	struct mds_state *st = mds_of(c)->state;
	stateid4 id;
	nfsstat4 s;
	if ((s = st_sid_arg(c, &a->u.opfree_stateid.fsa_stateid, false, &id)))
		return s;
	pthread_mutex_lock(&st->mu);
	struct st_sid *x;
	s = st_sid_find(st, c->clientid, &id, 0, 0, &x);
	if (s == NFS4ERR_DELEG_REVOKED) {
		/* §18.38.3: what a revoked delegation leaves goes now */
		x = st_sid_lookup(st, id.other);
		st_deleg_free(st, x, false);
		s = NFS4_OK;
	} else if (!s && (x->type == ST_SID_OPEN || x->type == ST_SID_DELEG || x->nranges)) {
		/* an open or a delegation is a lock itself (DELEGRETURN returns
		 * one); a lock stateid may go once unlocked */
		s = NFS4ERR_LOCKS_HELD;
	} else if (!s) {
		st_sid_free(st, x);
	}
	pthread_mutex_unlock(&st->mu);
	if (s == NFS4ERR_BAD_STATEID) /* not ours: a layout stateid? */
		s = mds_layout_sid_free(mds_of(c), c->clientid, &id);
	return s;
}

/* ------------------------------------------------------------ DELEGRETURN, RECLAIM_COMPLETE */

/* RFC 8881 §18.6: this client's delegation of the current file; another
 * client's, another file's or an open's stateid is BAD_STATEID (§8.2.4),
 * a revoked one DELEG_REVOKED (the client then frees it, §18.38). */
static nfsstat4 op_delegreturn(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	(void)r;
	struct mds_state *st = mds_of(c)->state;
	struct mds_fh fh;
	stateid4 id;
	nfsstat4 s;
	if ((s = mds_cfh(c, &fh, NULL, NULL)) ||
	    (s = st_sid_arg(c, &a->u.opdelegreturn.deleg_stateid, false, &id)))
		return s;
	pthread_mutex_lock(&st->mu);
	struct st_sid *d;
	s = st_sid_find(st, c->clientid, &id, ST_SID_DELEG, fh.ino, &d);
	if (!s)
		st_deleg_free(st, d, true);
	pthread_mutex_unlock(&st->mu);
	return s;
}

/* RFC 8881 §18.51 */
static nfsstat4 op_reclaim_complete(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	(void)r;
	struct mds_state *st = mds_of(c)->state;
	nfsstat4 s = NFS4_OK;
	if (a->u.opreclaim_complete.rca_one_fs) {
		/* §18.51.3: for a file system transition (migration), which
		 * this server never does: only the filehandle is checked */
		return mds_cfh(c, NULL, NULL, NULL);
	}
	st_grace_poll(st);
	pthread_mutex_lock(&st->mu);
	struct st_client *cl = st_client_get(st, c);
	if (!cl) {
		s = NFS4ERR_SERVERFAULT;
	} else if (cl->reclaim_complete) {
		s = NFS4ERR_COMPLETE_ALREADY; /* §18.51.4 */
	} else {
		cl->reclaim_complete = true;
		if (st->in_grace && cl->prev && !st->prev[cl->prev - 1].complete) {
			st->prev[cl->prev - 1].complete = true;
			st->nprev_complete++;
		}
	}
	pthread_mutex_unlock(&st->mu);
	/* §18.51.4: the last recorded client done ends grace at once */
	st_grace_poll(st);
	return s;
}

const struct mds_opdef mds_ops_state[] = {
    {OP_OPEN, {.fn = op_open, .flags = NFS41_OP_NEEDS_FH, .res_bound = open_res_bound}},
    {OP_OPEN_DOWNGRADE,
     {.fn = op_open_downgrade, .flags = NFS41_OP_NEEDS_FH, .res_bound = small_res_bound}},
    {OP_CLOSE, {.fn = op_close, .flags = NFS41_OP_NEEDS_FH, .res_bound = small_res_bound}},
    {OP_LOCK, {.fn = mds_op_lock, .flags = NFS41_OP_NEEDS_FH}},
    {OP_LOCKT, {.fn = mds_op_lockt, .flags = NFS41_OP_NEEDS_FH}},
    {OP_LOCKU, {.fn = mds_op_locku, .flags = NFS41_OP_NEEDS_FH, .res_bound = small_res_bound}},
    {OP_TEST_STATEID, {.fn = op_test_stateid, .res_bound = test_res_bound}},
    {OP_FREE_STATEID, {.fn = op_free_stateid, .res_bound = small_res_bound}},
    {OP_DELEGRETURN, {.fn = op_delegreturn, .flags = NFS41_OP_NEEDS_FH}},
    {OP_RECLAIM_COMPLETE, {.fn = op_reclaim_complete}},
    {0},
};
