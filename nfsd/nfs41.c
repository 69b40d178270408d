/* SPDX-License-Identifier: MIT */
/*
 * NFSv4.1/4.2 sessions: COMPOUND, client IDs, leases, sessions and slots.
 * The contract is in nfsd/nfs41.h.
 *
 * Locks, in this order:
 *   srv->lock   the client and session tables, every struct nfs41_client,
 *               and each session's clp, dead, conns[] and cb_* fields;
 *   ss->lock    the session's slot table.
 * Session references are atomic: the session table holds one, a COMPOUND
 * that passed SEQUENCE one until it ends, nfs41_session_get() callers one.
 * A session is freed at its last put; freeing touches nothing shared.
 * 'inflight' counts the COMPOUNDs alone (changed under srv->lock): a session
 * with one is busy for DESTROY_SESSION and keeps its client's lease.
 * Client records are touched only under srv->lock and freed after they have
 * been unlinked and the client_expired hook has run.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "nfsd/metrics.h"
#include "nfsd/nfs41.h"
#include "nfsd/clock.h"

#define CLIENT_BUCKETS	    256
#define SESSION_BUCKETS	    256
#define SESSIONS_PER_CLIENT 16
#define SESSION_MAX_CONNS   8	/* recorded bindings; the oldest makes room */
#define BACK_MAX_SLOTS	    16	/* back channel slots we accept at most */
#define CHAN_MIN_SIZE	    256 /* smaller ca_maxrequest/responsesize: TOOSMALL */
#define SWEEP_INTERVAL_NS   100000000ull
#define MAX_SLOTS_LIMIT	    1024
#define MAX_OPS_LIMIT	    1024
#define OP_MAX		    OP_REMOVEXATTR

/* ------------------------------------------------------------ records */

/* One fore channel slot (RFC 8881 §2.10.6.1); guarded by its session's lock. */
struct slot {
	uint32_t seqid;
	bool used;	   /* a request ran here: seqid is meaningful */
	bool inuse;	   /* that request is still running */
	bool cached;	   /* reply[] is its whole COMPOUND4res */
	uint64_t ops_hash; /* of its operations after SEQUENCE (false retries) */
	uint8_t *reply;	   /* malloc'd, owned by the slot */
	uint32_t reply_len, reply_cap;
};

/* A connection bound to a session (CREATE_SESSION, BIND_CONN_TO_SESSION). */
struct conn_rec {
	struct nfsd_conn *conn; /* a reference */
	uint32_t dir;		/* CDFS4_FORE, CDFS4_BACK or CDFS4_BOTH */
	uint64_t seq;		/* binding order: the newest back one is used */
};

struct nfs41_session {
	sessionid4 id;
	struct nfs41_server *srv;
	atomic_uint refs;
	atomic_uint inflight; /* COMPOUNDs between SEQUENCE and their end */
	/* constant after creation */
	uint64_t clientid;
	uint32_t flags;
	channel_attrs4 fore, back; /* negotiated; ca_rdma_ird empty */
	/* srv->lock */
	struct nfs41_client *clp; /* NULL once dead */
	bool dead;
	struct nfs41_session *hnext, *cnext;
	uint32_t cb_program, cb_flavor, cb_uid, cb_gid;
	struct conn_rec conns[SESSION_MAX_CONNS];
	/* lock */
	pthread_mutex_t lock;
	unsigned nslots;
	struct slot slots[];
};

/* A client ID (RFC 8881 §2.4); everything under srv->lock. */
struct nfs41_client {
	clientid4 id;
	verifier4 verf;
	uint8_t *owner; /* co_ownerid, malloc'd */
	uint32_t owner_len;
	uint32_t princ_flavor, princ_uid;
	bool confirmed, reclaim_complete;
	uint64_t expire_ns;
	/* CREATE_SESSION's one slot (RFC 8881 §18.36.4) */
	uint32_t cs_seqid;
	bool cs_cached;
	CREATE_SESSION4resok cs_res;
	struct nfs41_session *sessions;
	unsigned nsessions;
	struct nfs41_client *hnext, *onext; /* by id, by owner */
	struct nfs41_client *dnext;	    /* unlinked, waiting for reaping */
};

struct nfs41_server {
	struct nfs41_server_opts o; /* so_major / scope point at our copies */
	struct nfs41_op table[OP_MAX + 1];
	struct nfsd_proc procs[2];
	struct nfsd_version vers;
	struct nfsd_program prog;
	nfs_impl_id4 impl_id;

	pthread_mutex_t lock;
	uint32_t boot;
	uint32_t next_id, next_sess;
	uint64_t conn_seq;
	_Atomic uint64_t next_sweep_ns; /* read without the lock to skip sweeps */
	struct nfs41_client *by_id[CLIENT_BUCKETS], *by_owner[CLIENT_BUCKETS];
	struct nfs41_session *sessions[SESSION_BUCKETS];
};

/* One COMPOUND: the public part handlers see, then ours. */
struct cpd {
	struct nfs41_compound c;
	uint32_t req_len; /* as ca_maxrequestsize counts it */
	uint64_t ops_hash;
	struct slot *slot; /* held (inuse) from SEQUENCE to the end */
	bool cachethis;
	uint8_t *replay; /* SEQUENCE found a cached reply: send this */
	uint32_t replay_len;
	const nfs_argop4 *args; /* the decoded operations (nfs41_compound_next_op) */
	unsigned nargs;
};

static struct cpd *cpd_of(struct nfs41_compound *c)
{
	return (struct cpd *)c;
}

static uint64_t fnv64(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static inline uint64_t rotl64(uint64_t x, unsigned r)
{
	return x << r | x >> (64 - r);
}

/*
 * The fingerprint of a compound's operations, for false retries
 * (§2.10.6.1.3.1).  It covers WRITE data, up to 1 MiB a call, so it reads
 * 32 bytes a step in four independent lanes: FNV-1a, a byte and a
 * dependent multiply at a time, cost ~3 ms per MiB and capped a
 * session's WRITEs near 300 MB/s.
 */
static uint64_t ops_hash64(const uint8_t *p, size_t n)
{
	const uint64_t k1 = 0x9e3779b97f4a7c15ull, k2 = 0xc2b2ae3d27d4eb4full;
	uint64_t h0 = k1 ^ n, h1 = k2, h2 = k1 + k2, h3 = ~k1, w[4];
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		memcpy(w, p + i, 32);
		h0 = rotl64(h0 + w[0] * k2, 31) * k1;
		h1 = rotl64(h1 + w[1] * k2, 31) * k1;
		h2 = rotl64(h2 + w[2] * k2, 31) * k1;
		h3 = rotl64(h3 + w[3] * k2, 31) * k1;
	}
	uint64_t t = fnv64(p + i, n - i);
	uint64_t r = rotl64(h0, 1) + rotl64(h1, 7) + rotl64(h2, 12) + rotl64(h3, 18) + t;
	r ^= r >> 33;
	r *= k2;
	r ^= r >> 29;
	return r;
}

static uint32_t rand32(void)
{
	uint32_t r;
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		r = (uint32_t)nfsd_now_ns() * 2654435761u;
	return r;
}

static uint64_t lease_ns(const struct nfs41_server *s)
{
	return (uint64_t)s->o.lease_s * 1000000000ull;
}

/* ------------------------------------------------------------ sessions */

static unsigned session_bucket(const uint8_t *id)
{
	return (unsigned)(fnv64(id, NFS4_SESSIONID_SIZE) % SESSION_BUCKETS);
}

static void session_free(struct nfs41_session *ss)
{
	for (unsigned i = 0; i < SESSION_MAX_CONNS; i++)
		if (ss->conns[i].conn)
			nfsd_conn_put(ss->conns[i].conn);
	for (unsigned i = 0; i < ss->nslots; i++)
		free(ss->slots[i].reply);
	pthread_mutex_destroy(&ss->lock);
	free(ss);
}

void nfs41_session_get(struct nfs41_session *ss)
{
	atomic_fetch_add_explicit(&ss->refs, 1, memory_order_relaxed);
}

void nfs41_session_put(struct nfs41_session *ss)
{
	if (atomic_fetch_sub_explicit(&ss->refs, 1, memory_order_acq_rel) == 1)
		session_free(ss);
}

uint64_t nfs41_session_clientid(const struct nfs41_session *ss)
{
	return ss->clientid;
}

static struct nfs41_session *session_find_locked(struct nfs41_server *s, const uint8_t *id)
{
	struct nfs41_session *ss = s->sessions[session_bucket(id)];
	while (ss && memcmp(ss->id, id, NFS4_SESSIONID_SIZE))
		ss = ss->hnext;
	return ss;
}

/* Unhash, detach from its client and drop the table's reference. */
static void session_kill_locked(struct nfs41_server *s, struct nfs41_session *ss)
{
	struct nfs41_session **pp = &s->sessions[session_bucket(ss->id)];
	while (*pp != ss)
		pp = &(*pp)->hnext;
	*pp = ss->hnext;
	struct nfs41_client *clp = ss->clp;
	for (pp = &clp->sessions; *pp != ss; pp = &(*pp)->cnext)
		;
	*pp = ss->cnext;
	clp->nsessions--;
	ss->clp = NULL;
	ss->dead = true;
	nfs41_session_put(ss);
}

/* The newest back channel binding of the session, or NULL. */
static const struct conn_rec *session_back_locked(const struct nfs41_session *ss)
{
	const struct conn_rec *best = NULL;
	for (unsigned i = 0; !ss->dead && i < SESSION_MAX_CONNS; i++) {
		const struct conn_rec *r = &ss->conns[i];
		if (r->conn && (r->dir & CDFS4_BACK) && (!best || r->seq > best->seq))
			best = r;
	}
	return best;
}

static void conn_bind_locked(struct nfs41_server *s, struct nfs41_session *ss,
			     struct nfsd_conn *conn, uint32_t dir)
{
	if (!conn)
		return;
	struct conn_rec *r = NULL, *oldest = NULL;
	for (unsigned i = 0; i < SESSION_MAX_CONNS; i++) {
		struct conn_rec *x = &ss->conns[i];
		if (x->conn == conn) {
			r = x;
			break;
		}
		if (!x->conn) {
			if (!r)
				r = x;
		} else if (!oldest || x->seq < oldest->seq) {
			oldest = x;
		}
	}
	if (!r) {
		r = oldest;
		nfsd_conn_put(r->conn);
		r->conn = NULL;
	}
	if (r->conn != conn) {
		nfsd_conn_get(conn);
		r->conn = conn;
	}
	r->dir = dir;
	r->seq = ++s->conn_seq;
}

int nfs41_session_backchannel(struct nfs41_session *ss, struct nfs41_backchannel *bc)
{
	struct nfs41_server *s = ss->srv;
	pthread_mutex_lock(&s->lock);
	const struct conn_rec *best = session_back_locked(ss);
	if (best) {
		nfsd_conn_get(best->conn);
		bc->conn = best->conn;
		bc->cb_program = ss->cb_program;
		bc->flavor = ss->cb_flavor;
		bc->uid = ss->cb_uid;
		bc->gid = ss->cb_gid;
		bc->attrs = ss->back;
		memcpy(bc->sessionid, ss->id, sizeof(bc->sessionid));
	}
	pthread_mutex_unlock(&s->lock);
	return best ? 0 : -ENOTCONN;
}

void nfs41_session_backchannel_lost(struct nfs41_session *ss, struct nfsd_conn *conn)
{
	struct nfs41_server *s = ss->srv;
	struct nfsd_conn *put = NULL;
	pthread_mutex_lock(&s->lock);
	for (unsigned i = 0; i < SESSION_MAX_CONNS; i++)
		if (ss->conns[i].conn == conn) {
			put = conn;
			ss->conns[i].conn = NULL;
		}
	pthread_mutex_unlock(&s->lock);
	if (put)
		nfsd_conn_put(put);
}

/* ------------------------------------------------------------ clients */

static unsigned id_bucket(uint64_t id)
{
	return (unsigned)((id ^ (id >> 32)) % CLIENT_BUCKETS);
}

static unsigned owner_bucket(const uint8_t *p, uint32_t n)
{
	return (unsigned)(fnv64(p, n) % CLIENT_BUCKETS);
}

static bool client_busy_locked(const struct nfs41_client *clp)
{
	for (const struct nfs41_session *ss = clp->sessions; ss; ss = ss->cnext)
		if (atomic_load_explicit(&ss->inflight, memory_order_relaxed))
			return true;
	return false;
}

/* Take the client out of the tables and kill its sessions; it goes on
 * *dead for client_reap() once the lock is dropped. */
static void client_unlink_locked(struct nfs41_server *s, struct nfs41_client *clp,
				 struct nfs41_client **dead)
{
	struct nfs41_client **pp = &s->by_id[id_bucket(clp->id)];
	while (*pp != clp)
		pp = &(*pp)->hnext;
	*pp = clp->hnext;
	for (pp = &s->by_owner[owner_bucket(clp->owner, clp->owner_len)]; *pp != clp;
	     pp = &(*pp)->onext)
		;
	*pp = clp->onext;
	while (clp->sessions)
		session_kill_locked(s, clp->sessions);
	clp->dnext = *dead;
	*dead = clp;
}

/* Outside the lock: tell the embedder, then free. */
static void client_reap(struct nfs41_server *s, struct nfs41_client *dead)
{
	while (dead) {
		struct nfs41_client *next = dead->dnext;
		if (s->o.client_expired)
			s->o.client_expired(s->o.priv, dead->id);
		free(dead->owner);
		free(dead);
		dead = next;
	}
}

/* Lease expired and nothing in progress: the client is gone (RFC 8881 §8.3). */
static bool client_expired_locked(const struct nfs41_client *clp, uint64_t now)
{
	return now >= clp->expire_ns && !client_busy_locked(clp);
}

static struct nfs41_client *client_find_locked(struct nfs41_server *s, uint64_t id, uint64_t now,
					       struct nfs41_client **dead)
{
	struct nfs41_client *clp = s->by_id[id_bucket(id)];
	while (clp && clp->id != id)
		clp = clp->hnext;
	if (clp && client_expired_locked(clp, now)) {
		client_unlink_locked(s, clp, dead);
		clp = NULL;
	}
	return clp;
}

static struct nfs41_client *owner_find_locked(struct nfs41_server *s, const xdr_opaque *owner,
					      bool confirmed, uint64_t now,
					      struct nfs41_client **dead)
{
	struct nfs41_client *clp = s->by_owner[owner_bucket(owner->val, owner->len)];
	for (; clp; clp = clp->onext) {
		if (clp->confirmed != confirmed || clp->owner_len != owner->len ||
		    (owner->len && memcmp(clp->owner, owner->val, owner->len)))
			continue;
		if (client_expired_locked(clp, now)) {
			client_unlink_locked(s, clp, dead);
			return NULL;
		}
		return clp;
	}
	return NULL;
}

static void sweep_locked(struct nfs41_server *s, uint64_t now, struct nfs41_client **dead)
{
	if (now < atomic_load(&s->next_sweep_ns))
		return;
	atomic_store(&s->next_sweep_ns, now + SWEEP_INTERVAL_NS);
	for (unsigned b = 0; b < CLIENT_BUCKETS; b++) {
		struct nfs41_client *clp = s->by_id[b];
		while (clp) {
			struct nfs41_client *next = clp->hnext;
			if (client_expired_locked(clp, now))
				client_unlink_locked(s, clp, dead);
			clp = next;
		}
	}
}

struct nfs41_session *nfs41_client_session_get(struct nfs41_server *s, uint64_t clientid)
{
	struct nfs41_session *best = NULL;
	uint64_t best_seq = 0;
	pthread_mutex_lock(&s->lock);
	struct nfs41_client *clp = s->by_id[id_bucket(clientid)];
	while (clp && clp->id != clientid)
		clp = clp->hnext;
	for (struct nfs41_session *ss = clp ? clp->sessions : NULL; ss; ss = ss->cnext) {
		const struct conn_rec *r = session_back_locked(ss);
		if (r && r->seq > best_seq) {
			best = ss;
			best_seq = r->seq;
		}
	}
	if (best)
		nfs41_session_get(best);
	pthread_mutex_unlock(&s->lock);
	return best;
}

int nfs41_client_owner(struct nfs41_server *s, uint64_t clientid, void *buf, size_t size,
		       size_t *len)
{
	int rc = -ENOENT;
	pthread_mutex_lock(&s->lock);
	struct nfs41_client *clp = s->by_id[id_bucket(clientid)];
	while (clp && clp->id != clientid)
		clp = clp->hnext;
	if (clp) {
		memcpy(buf, clp->owner, clp->owner_len < size ? clp->owner_len : size);
		*len = clp->owner_len;
		rc = 0;
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

unsigned nfs41_client_list(struct nfs41_server *s, struct nfs41_client_info *out, unsigned max)
{
	unsigned n = 0;
	uint64_t now = nfsd_now_ns();
	pthread_mutex_lock(&s->lock);
	for (unsigned b = 0; b < CLIENT_BUCKETS; b++)
		for (const struct nfs41_client *clp = s->by_id[b]; clp; clp = clp->hnext, n++) {
			if (n >= max)
				continue;
			struct nfs41_client_info *i = &out[n];
			memset(i, 0, sizeof(*i));
			i->clientid = clp->id;
			i->owner_len = clp->owner_len;
			memcpy(i->owner, clp->owner,
			       clp->owner_len < sizeof(i->owner) ? clp->owner_len
								 : sizeof(i->owner));
			i->confirmed = clp->confirmed;
			i->flavor = clp->princ_flavor;
			i->uid = clp->princ_uid;
			i->lease_left_ms = ((int64_t)clp->expire_ns - (int64_t)now) / 1000000;
			i->sessions = clp->nsessions;
			uint64_t seq = 0;
			for (const struct nfs41_session *ss = clp->sessions; ss; ss = ss->cnext)
				for (unsigned k = 0; k < SESSION_MAX_CONNS; k++) {
					const struct conn_rec *r = &ss->conns[k];
					if (r->conn && r->seq >= seq) {
						seq = r->seq;
						i->peer = *nfsd_conn_peer(r->conn);
						i->has_peer = true;
					}
				}
		}
	pthread_mutex_unlock(&s->lock);
	return n;
}

static bool princ_eq(const struct nfs41_client *clp, const struct nfsd_req *req)
{
	if (clp->princ_flavor != req->cred.flavor)
		return false;
	return clp->princ_flavor != NFSD_AUTH_SYS || clp->princ_uid == req->cred.uid;
}

static struct nfs41_client *client_new_locked(struct nfs41_server *s, const EXCHANGE_ID4args *ea,
					      const struct nfsd_req *req, uint64_t now)
{
	struct nfs41_client *clp = calloc(1, sizeof(*clp));
	if (!clp)
		return NULL;
	clp->owner = malloc(ea->eia_clientowner.co_ownerid.len + 1u);
	if (!clp->owner) {
		free(clp);
		return NULL;
	}
	clp->owner_len = ea->eia_clientowner.co_ownerid.len;
	if (clp->owner_len)
		memcpy(clp->owner, ea->eia_clientowner.co_ownerid.val, clp->owner_len);
	memcpy(clp->verf, ea->eia_clientowner.co_verifier, sizeof(clp->verf));
	clp->princ_flavor = req->cred.flavor;
	clp->princ_uid = req->cred.uid;
	/* RFC 8881 §18.35.4: eir_sequenceid is what the first CREATE_SESSION
	 * sends; the slot starts one below it. */
	clp->cs_seqid = 0;
	clp->expire_ns = now + lease_ns(s);
	do {
		clp->id = (uint64_t)s->boot << 32 | s->next_id++;
	} while ((uint32_t)clp->id == 0);
	unsigned b = id_bucket(clp->id);
	clp->hnext = s->by_id[b];
	s->by_id[b] = clp;
	b = owner_bucket(clp->owner, clp->owner_len);
	clp->onext = s->by_owner[b];
	s->by_owner[b] = clp;
	return clp;
}

/* ------------------------------------------------------------ EXCHANGE_ID */

#define EXCHGID4_FLAG_MASK_A                                                                       \
	(EXCHGID4_FLAG_SUPP_MOVED_REFER | EXCHGID4_FLAG_SUPP_MOVED_MIGR |                          \
	 EXCHGID4_FLAG_SUPP_FENCE_OPS | EXCHGID4_FLAG_BIND_PRINC_STATEID |                         \
	 EXCHGID4_FLAG_MASK_PNFS | EXCHGID4_FLAG_UPD_CONFIRMED_REC_A)

/* RFC 8881 §18.35; the cases of §18.35.5 are numbered as there. */
static nfsstat4 op_exchange_id(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct nfs41_server *s = c->srv;
	EXCHANGE_ID4args *ea = &a->u.opexchange_id;
	EXCHANGE_ID4resok *ok = &r->u.opexchange_id.u.eir_resok4;
	bool update = ea->eia_flags & EXCHGID4_FLAG_UPD_CONFIRMED_REC_A;

	/* CONFIRMED_R is the server's; unknown bits are the client's error. */
	if (ea->eia_flags & ~(uint32_t)EXCHGID4_FLAG_MASK_A)
		return NFS4ERR_INVAL;
	switch (ea->eia_state_protect.spa_how) {
	case SP4_NONE:
		break;
	case SP4_SSV:
		return NFS4ERR_ENCR_ALG_UNSUPP; /* no SSV algorithm offered is ours */
	default:
		return NFS4ERR_INVAL; /* SP4_MACH_CRED: no RPCSEC_GSS to bind it to */
	}

	struct nfs41_client *dead = NULL, *clp = NULL;
	nfsstat4 st = NFS4_OK;
	uint64_t now = nfsd_now_ns();
	pthread_mutex_lock(&s->lock);
	struct nfs41_client *conf =
	    owner_find_locked(s, &ea->eia_clientowner.co_ownerid, true, now, &dead);
	struct nfs41_client *unconf =
	    owner_find_locked(s, &ea->eia_clientowner.co_ownerid, false, now, &dead);
	bool verf_eq =
	    conf && !memcmp(conf->verf, ea->eia_clientowner.co_verifier, sizeof(conf->verf));
	if (update) {
		if (!conf)
			st = NFS4ERR_NOENT; /* case 7 */
		else if (!princ_eq(conf, c->req))
			st = NFS4ERR_PERM; /* case 9 */
		else if (!verf_eq)
			st = NFS4ERR_NOT_SAME; /* case 8 */
		else
			clp = conf; /* case 6 */
	} else if (conf && !princ_eq(conf, c->req)) {
		st = NFS4ERR_CLID_INUSE; /* case 3: the RFC lets us refuse always */
	} else if (conf && verf_eq) {
		clp = conf; /* case 2 */
	} else {
		/* case 1 (new), 4 (replaces the unconfirmed record), 5 (client
		 * restart: the confirmed record stays until the new one is
		 * confirmed by CREATE_SESSION) */
		if (unconf)
			client_unlink_locked(s, unconf, &dead);
		clp = client_new_locked(s, ea, c->req, now);
		if (!clp)
			st = NFS4ERR_SERVERFAULT;
	}
	if (clp) {
		if (clp->confirmed)
			clp->expire_ns = now + lease_ns(s);
		ok->eir_clientid = clp->id;
		ok->eir_sequenceid = clp->cs_seqid + 1;
		ok->eir_flags =
		    s->o.exchgid_flags | (clp->confirmed ? EXCHGID4_FLAG_CONFIRMED_R : 0);
	}
	pthread_mutex_unlock(&s->lock);
	client_reap(s, dead);
	if (st)
		return st;
	ok->eir_state_protect.spr_how = SP4_NONE;
	ok->eir_server_owner.so_minor_id = s->o.so_minor;
	ok->eir_server_owner.so_major_id = xdr_opaque_of(s->o.so_major, s->o.so_major_len);
	ok->eir_server_scope = xdr_opaque_of(s->o.scope, s->o.scope_len);
	ok->eir_server_impl_id.len = 1;
	ok->eir_server_impl_id.val = &s->impl_id;
	return NFS4_OK;
}

/* ------------------------------------------------------------ CREATE_SESSION */

/* The first callback security the back channel can use (RFC 8881 §18.36.3). */
static nfsstat4 cb_sec_pick(uint32_t n, const callback_sec_parms4 *p, uint32_t *flavor,
			    uint32_t *uid, uint32_t *gid)
{
	*flavor = NFSD_AUTH_NONE;
	*uid = *gid = 65534;
	for (uint32_t i = 0; i < n; i++) {
		if (p[i].cb_secflavor == NFSD_AUTH_NONE)
			return NFS4_OK;
		if (p[i].cb_secflavor == NFSD_AUTH_SYS) {
			*flavor = NFSD_AUTH_SYS;
			*uid = p[i].u.cbsp_sys_cred.uid;
			*gid = p[i].u.cbsp_sys_cred.gid;
			return NFS4_OK;
		}
	}
	/* only RPCSEC_GSS offered: we cannot call back with it */
	return n ? NFS4ERR_ENCR_ALG_UNSUPP : NFS4_OK;
}

static uint32_t min32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* RFC 8881 §18.36.3: the server may lower what the client offers. */
static nfsstat4 chan_negotiate(const struct nfs41_server *s, const CREATE_SESSION4args *ca,
			       channel_attrs4 *fore, channel_attrs4 *back)
{
	const channel_attrs4 *f = &ca->csa_fore_chan_attrs, *b = &ca->csa_back_chan_attrs;
	if (f->ca_maxrequestsize < CHAN_MIN_SIZE || f->ca_maxresponsesize < CHAN_MIN_SIZE ||
	    f->ca_maxoperations < 1 || f->ca_maxrequests < 1)
		return NFS4ERR_TOOSMALL;
	memset(fore, 0, sizeof(*fore));
	fore->ca_maxrequestsize = min32(f->ca_maxrequestsize, s->o.max_req);
	fore->ca_maxresponsesize = min32(f->ca_maxresponsesize, s->o.max_resp);
	fore->ca_maxresponsesize_cached = min32(
	    min32(f->ca_maxresponsesize_cached, s->o.max_resp_cached), fore->ca_maxresponsesize);
	fore->ca_maxoperations = min32(f->ca_maxoperations, s->o.max_ops);
	fore->ca_maxrequests = min32(f->ca_maxrequests, s->o.max_slots);
	*back = *b;
	back->ca_headerpadsize = 0;
	back->ca_maxrequests = min32(b->ca_maxrequests, BACK_MAX_SLOTS);
	back->ca_rdma_ird.len = 0;
	back->ca_rdma_ird.val = NULL;
	return NFS4_OK;
}

static struct nfs41_session *session_new_locked(struct nfs41_server *s, struct nfs41_client *clp,
						const channel_attrs4 *fore,
						const channel_attrs4 *back, uint32_t flags)
{
	unsigned n = fore->ca_maxrequests;
	struct nfs41_session *ss = calloc(1, sizeof(*ss) + n * sizeof(struct slot));
	if (!ss)
		return NULL;
	ss->srv = s;
	atomic_init(&ss->refs, 1); /* the table's */
	atomic_init(&ss->inflight, 0);
	ss->clientid = clp->id;
	ss->flags = flags;
	ss->fore = *fore;
	ss->back = *back;
	ss->nslots = n;
	pthread_mutex_init(&ss->lock, NULL);
	/* unique (the client ID, a counter) and hard to guess */
	for (int i = 0; i < 8; i++)
		ss->id[i] = (uint8_t)(clp->id >> (56 - 8 * i));
	uint32_t seq = s->next_sess++, rnd = rand32();
	for (int i = 0; i < 4; i++) {
		ss->id[8 + i] = (uint8_t)(seq >> (24 - 8 * i));
		ss->id[12 + i] = (uint8_t)(rnd >> (24 - 8 * i));
	}
	ss->clp = clp;
	unsigned b = session_bucket(ss->id);
	ss->hnext = s->sessions[b];
	s->sessions[b] = ss;
	ss->cnext = clp->sessions;
	clp->sessions = ss;
	clp->nsessions++;
	return ss;
}

/* RFC 8881 §18.36 */
static nfsstat4 op_create_session(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct nfs41_server *s = c->srv;
	CREATE_SESSION4args *ca = &a->u.opcreate_session;
	CREATE_SESSION4resok *ok = &r->u.opcreate_session.u.csr_resok4;
	channel_attrs4 fore, back;
	uint32_t flavor, uid, gid;

	nfsstat4 st = chan_negotiate(s, ca, &fore, &back);
	if (!st)
		st = cb_sec_pick(ca->csa_sec_parms.len, ca->csa_sec_parms.val, &flavor, &uid, &gid);
	if (st)
		return st;

	struct nfs41_client *dead = NULL;
	uint64_t now = nfsd_now_ns();
	pthread_mutex_lock(&s->lock);
	struct nfs41_client *clp = client_find_locked(s, ca->csa_clientid, now, &dead);
	if (!clp) {
		st = NFS4ERR_STALE_CLIENTID;
	} else if (clp->confirmed && ca->csa_sequence == clp->cs_seqid) {
		/* a retry: the cached reply (only successes are cached) */
		if (clp->cs_cached)
			*ok = clp->cs_res;
		else
			st = NFS4ERR_SEQ_MISORDERED;
		goto out;
	} else if (!clp->confirmed && !princ_eq(clp, c->req)) {
		st = NFS4ERR_CLID_INUSE;
	} else if (ca->csa_sequence != clp->cs_seqid + 1) {
		st = NFS4ERR_SEQ_MISORDERED;
	} else if (clp->nsessions >= SESSIONS_PER_CLIENT) {
		st = NFS4ERR_NOSPC;
	}
	if (st)
		goto out;
	uint32_t flags = ca->csa_flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN;
	struct nfs41_session *ss = session_new_locked(s, clp, &fore, &back, flags);
	if (!ss) {
		st = NFS4ERR_DELAY;
		goto out;
	}
	ss->cb_program = ca->csa_cb_program;
	ss->cb_flavor = flavor;
	ss->cb_uid = uid;
	ss->cb_gid = gid;
	conn_bind_locked(s, ss, c->req->conn, flags ? CDFS4_BOTH : CDFS4_FORE);
	if (!clp->confirmed) {
		/* Confirming a rebooted client's new ID ends the old one
		 * (§18.35.5 case 5). */
		xdr_opaque owner = xdr_opaque_of(clp->owner, clp->owner_len);
		struct nfs41_client *old = owner_find_locked(s, &owner, true, now, &dead);
		if (old)
			client_unlink_locked(s, old, &dead);
		clp->confirmed = true;
	}
	clp->expire_ns = now + lease_ns(s);
	clp->cs_seqid = ca->csa_sequence;
	memcpy(ok->csr_sessionid, ss->id, sizeof(ok->csr_sessionid));
	ok->csr_sequence = ca->csa_sequence;
	ok->csr_flags = flags;
	ok->csr_fore_chan_attrs = fore;
	ok->csr_back_chan_attrs = back;
	clp->cs_res = *ok;
	clp->cs_cached = true;
out:
	pthread_mutex_unlock(&s->lock);
	client_reap(s, dead);
	return st;
}

/* ------------------------------------------------------------ other session ops */

/* RFC 8881 §18.37 */
static nfsstat4 op_destroy_session(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct nfs41_server *s = c->srv;
	nfsstat4 st = NFS4_OK;
	pthread_mutex_lock(&s->lock);
	struct nfs41_session *ss = session_find_locked(s, a->u.opdestroy_session.dsa_sessionid);
	if (!ss) {
		st = NFS4ERR_BADSESSION;
	} else {
		bool own = ss == c->session;
		/* §18.37.3: destroying the COMPOUND's own session ends it */
		if (own && c->opidx + 1 != c->nops)
			st = NFS4ERR_NOT_ONLY_OP;
		else if (atomic_load(&ss->inflight) > (unsigned)own)
			st = NFS4ERR_DELAY; /* requests in progress on it */
		else
			session_kill_locked(s, ss);
	}
	pthread_mutex_unlock(&s->lock);
	return st;
}

/* RFC 8881 §18.50 */
static nfsstat4 op_destroy_clientid(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct nfs41_server *s = c->srv;
	uint64_t id = a->u.opdestroy_clientid.dca_clientid;
	struct nfs41_client *dead = NULL;
	nfsstat4 st = NFS4_OK;

	for (int pass = 0; pass < 2 && !st; pass++) {
		pthread_mutex_lock(&s->lock);
		struct nfs41_client *clp = client_find_locked(s, id, nfsd_now_ns(), &dead);
		if (!clp)
			st = NFS4ERR_STALE_CLIENTID;
		else if (clp->nsessions)
			st = NFS4ERR_CLIENTID_BUSY;
		else if (pass == 1)
			client_unlink_locked(s, clp, &dead);
		pthread_mutex_unlock(&s->lock);
		/* ask the embedder without our lock, then look again */
		if (!st && pass == 0 && s->o.client_has_state &&
		    s->o.client_has_state(s->o.priv, id))
			st = NFS4ERR_CLIENTID_BUSY;
	}
	client_reap(s, dead);
	return st;
}

/* RFC 8881 §18.34 */
static nfsstat4 op_bind_conn(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct nfs41_server *s = c->srv;
	BIND_CONN_TO_SESSION4args *ba = &a->u.opbind_conn_to_session;
	BIND_CONN_TO_SESSION4resok *ok = &r->u.opbind_conn_to_session.u.bctsr_resok4;
	uint32_t dir;
	switch (ba->bctsa_dir) {
	case CDFC4_FORE:
		dir = CDFS4_FORE;
		break;
	case CDFC4_BACK:
		dir = CDFS4_BACK;
		break;
	case CDFC4_FORE_OR_BOTH:
	case CDFC4_BACK_OR_BOTH:
		dir = CDFS4_BOTH;
		break;
	default:
		return NFS4ERR_INVAL;
	}
	nfsstat4 st = NFS4_OK;
	pthread_mutex_lock(&s->lock);
	struct nfs41_session *ss = session_find_locked(s, ba->bctsa_sessid);
	if (!ss) {
		st = NFS4ERR_BADSESSION;
	} else {
		conn_bind_locked(s, ss, c->req->conn, dir);
		ss->clp->expire_ns = nfsd_now_ns() + lease_ns(s);
	}
	pthread_mutex_unlock(&s->lock);
	if (st)
		return st;
	memcpy(ok->bctsr_sessid, ba->bctsa_sessid, sizeof(ok->bctsr_sessid));
	ok->bctsr_dir = dir;
	ok->bctsr_use_conn_in_rdma_mode = false;
	return NFS4_OK;
}

/* RFC 8881 §18.33 */
static nfsstat4 op_backchannel_ctl(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct nfs41_server *s = c->srv;
	BACKCHANNEL_CTL4args *ba = &a->u.opbackchannel_ctl;
	uint32_t flavor, uid, gid;
	nfsstat4 st =
	    cb_sec_pick(ba->bca_sec_parms.len, ba->bca_sec_parms.val, &flavor, &uid, &gid);
	if (st)
		return st;
	struct nfs41_session *ss = c->session;
	pthread_mutex_lock(&s->lock);
	if (ss->dead) {
		st = NFS4ERR_BADSESSION;
	} else {
		ss->cb_program = ba->bca_cb_program;
		ss->cb_flavor = flavor;
		ss->cb_uid = uid;
		ss->cb_gid = gid;
	}
	pthread_mutex_unlock(&s->lock);
	return st;
}

/* RFC 8881 §18.51: grace is the embedder's; here only "once per client". */
static nfsstat4 op_reclaim_complete(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct nfs41_server *s = c->srv;
	if (a->u.opreclaim_complete.rca_one_fs)
		return c->have_fh ? NFS4_OK : NFS4ERR_NOFILEHANDLE;
	nfsstat4 st = NFS4_OK;
	pthread_mutex_lock(&s->lock);
	struct nfs41_client *clp = c->session->clp;
	if (!clp)
		st = NFS4ERR_BADSESSION;
	else if (clp->reclaim_complete)
		st = NFS4ERR_COMPLETE_ALREADY;
	else
		clp->reclaim_complete = true;
	pthread_mutex_unlock(&s->lock);
	return st;
}

/* RFC 8881 §18.8 */
static nfsstat4 op_getfh(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	r->u.opgetfh.u.resok4.object = xdr_opaque_of(c->fh, c->fhlen);
	return NFS4_OK;
}

/* RFC 8881 §18.32; the current stateid goes with the filehandle */
static nfsstat4 op_savefh(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	memcpy(c->saved_fh, c->fh, c->fhlen);
	c->saved_fhlen = c->fhlen;
	c->have_saved_fh = true;
	c->saved_stateid = c->cur_stateid;
	c->have_saved_stateid = c->have_cur_stateid;
	return NFS4_OK;
}

/* RFC 8881 §18.31 */
static nfsstat4 op_restorefh(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	if (!c->have_saved_fh)
		return NFS4ERR_NOFILEHANDLE;
	memcpy(c->fh, c->saved_fh, c->saved_fhlen);
	c->fhlen = c->saved_fhlen;
	c->have_fh = true;
	c->cur_stateid = c->saved_stateid;
	c->have_cur_stateid = c->have_saved_stateid;
	return NFS4_OK;
}

static nfsstat4 op_sequence(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r);

/* ------------------------------------------------------------ op table */

enum {
	F_SESSIONLESS = 1 << 8, /* may come first without SEQUENCE, then alone */
	F_ALONE = 1 << 9,	/* always the only op */
	F_MODULE = 1 << 10,	/* ours even when the embedder's table has it */
	F_V40 = 1 << 11,	/* NFSv4.0 only: NFS4ERR_NOTSUPP (RFC 8881 §18) */
};

/* The module's rows; the embedder's table fills the rest (nfs41_server_new). */
static const struct {
	nfs41_op_fn fn;
	unsigned flags;
} builtin_ops[OP_MAX + 1] = {
    [OP_GETFH] = {op_getfh, NFS41_OP_NEEDS_FH},
    [OP_OPEN_CONFIRM] = {NULL, F_V40},
    [OP_RENEW] = {NULL, F_V40},
    [OP_RESTOREFH] = {op_restorefh, 0},
    [OP_SAVEFH] = {op_savefh, NFS41_OP_NEEDS_FH},
    [OP_SETCLIENTID] = {NULL, F_V40},
    [OP_SETCLIENTID_CONFIRM] = {NULL, F_V40},
    [OP_RELEASE_LOCKOWNER] = {NULL, F_V40},
    [OP_BACKCHANNEL_CTL] = {op_backchannel_ctl, F_MODULE},
    [OP_BIND_CONN_TO_SESSION] = {op_bind_conn, F_MODULE | F_SESSIONLESS | F_ALONE},
    [OP_EXCHANGE_ID] = {op_exchange_id, F_MODULE | F_SESSIONLESS},
    [OP_CREATE_SESSION] = {op_create_session, F_MODULE | F_SESSIONLESS},
    [OP_DESTROY_SESSION] = {op_destroy_session, F_MODULE | F_SESSIONLESS},
    [OP_SEQUENCE] = {op_sequence, F_MODULE},
    [OP_DESTROY_CLIENTID] = {op_destroy_clientid, F_MODULE | F_SESSIONLESS},
    [OP_RECLAIM_COMPLETE] = {op_reclaim_complete, 0},
};

#define N(op) [OP_##op] = #op
static const char *const op_names[OP_MAX + 1] = {
    N(ACCESS),
    N(CLOSE),
    N(COMMIT),
    N(CREATE),
    N(DELEGPURGE),
    N(DELEGRETURN),
    N(GETATTR),
    N(GETFH),
    N(LINK),
    N(LOCK),
    N(LOCKT),
    N(LOCKU),
    N(LOOKUP),
    N(LOOKUPP),
    N(NVERIFY),
    N(OPEN),
    N(OPENATTR),
    N(OPEN_CONFIRM),
    N(OPEN_DOWNGRADE),
    N(PUTFH),
    N(PUTPUBFH),
    N(PUTROOTFH),
    N(READ),
    N(READDIR),
    N(READLINK),
    N(REMOVE),
    N(RENAME),
    N(RENEW),
    N(RESTOREFH),
    N(SAVEFH),
    N(SECINFO),
    N(SETATTR),
    N(SETCLIENTID),
    N(SETCLIENTID_CONFIRM),
    N(VERIFY),
    N(WRITE),
    N(RELEASE_LOCKOWNER),
    N(BACKCHANNEL_CTL),
    N(BIND_CONN_TO_SESSION),
    N(EXCHANGE_ID),
    N(CREATE_SESSION),
    N(DESTROY_SESSION),
    N(FREE_STATEID),
    N(GET_DIR_DELEGATION),
    N(GETDEVICEINFO),
    N(GETDEVICELIST),
    N(LAYOUTCOMMIT),
    N(LAYOUTGET),
    N(LAYOUTRETURN),
    N(SECINFO_NO_NAME),
    N(SEQUENCE),
    N(SET_SSV),
    N(TEST_STATEID),
    N(WANT_DELEGATION),
    N(DESTROY_CLIENTID),
    N(RECLAIM_COMPLETE),
    N(ALLOCATE),
    N(COPY),
    N(COPY_NOTIFY),
    N(DEALLOCATE),
    N(IO_ADVISE),
    N(LAYOUTERROR),
    N(LAYOUTSTATS),
    N(OFFLOAD_CANCEL),
    N(OFFLOAD_STATUS),
    N(READ_PLUS),
    N(SEEK),
    N(WRITE_SAME),
    N(CLONE),
    N(GETXATTR),
    N(SETXATTR),
    N(LISTXATTRS),
    N(REMOVEXATTR),
};
#undef N

const char *nfs41_op_name(uint32_t op)
{
	return op <= OP_MAX && op_names[op] ? op_names[op] : "ILLEGAL";
}

/* Data moved by an operation that moves file data: READ, WRITE, READ_PLUS. */
static bool op_bytes(const nfs_resop4 *r, nfsstat4 st, uint64_t *n)
{
	*n = 0;
	switch (r->resop) {
	case OP_READ:
		if (!st)
			*n = r->u.opread.u.resok4.data.len;
		return true;
	case OP_WRITE:
		if (!st)
			*n = r->u.opwrite.u.resok4.count;
		return true;
	case OP_READ_PLUS:
		for (uint32_t i = 0; !st && i < r->u.opread_plus.u.rp_resok4.rpr_contents.len;
		     i++) {
			const read_plus_content *c =
			    &r->u.opread_plus.u.rp_resok4.rpr_contents.val[i];
			if (c->rpc_content == NFS4_CONTENT_DATA)
				*n += c->u.rpc_data.d_data.len;
		}
		return true;
	default:
		return false;
	}
}

/* Count and time op i of a COMPOUND (nfsd/metrics.h). */
static void op_observe(struct nfs41_server *s, const struct nfs41_compound *c, const nfs_resop4 *r,
		       nfsstat4 st, uint64_t t0)
{
	uint64_t bytes;
	bool io = op_bytes(r, st, &bytes);
	uint32_t op = r->resop == OP_ILLEGAL ? 0 : (uint32_t)r->resop;
	nfsd_metrics_nfs4_op(s->o.metrics, c->minorversion, op, nfs41_op_name((uint32_t)r->resop),
			     (uint32_t)st, nfsd_now_ns() - t0, io ? &bytes : NULL);
}

/* Operations of minor version 1 (RFC 8881) and 2 (RFC 7862, RFC 8276). */
static bool op_legal(uint32_t minor, int32_t op)
{
	return op >= OP_ACCESS && op <= (minor == 1 ? OP_RECLAIM_COMPLETE : OP_MAX);
}

/* Where an op may stand: SEQUENCE first (RFC 8881 §18.46.3), the
 * sessionless ops first and alone (§18.34.3 - §18.37.3, §18.50.3). */
static nfsstat4 op_position(int32_t op, unsigned i, unsigned n)
{
	if (op == OP_ILLEGAL)
		return NFS4ERR_OP_ILLEGAL;
	if (op == OP_SEQUENCE)
		return i == 0 ? NFS4_OK : NFS4ERR_SEQUENCE_POS;
	unsigned f = builtin_ops[op].flags;
	if ((f & F_ALONE) && n > 1)
		return NFS4ERR_NOT_ONLY_OP;
	if (i == 0 && !(f & F_SESSIONLESS))
		return NFS4ERR_OP_NOT_IN_SESSION;
	if (i == 0 && n > 1)
		return NFS4ERR_NOT_ONLY_OP;
	return NFS4_OK;
}

/* ------------------------------------------------------------ SEQUENCE */

/* RFC 8881 §18.46 and §2.10.6.1 */
static nfsstat4 op_sequence(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct nfs41_server *s = c->srv;
	struct cpd *x = cpd_of(c);
	SEQUENCE4args *sa = &a->u.opsequence;
	SEQUENCE4resok *ok = &r->u.opsequence.u.sr_resok4;
	struct nfs41_client *dead = NULL;
	uint32_t status_flags = 0;
	uint64_t now = nfsd_now_ns();

	pthread_mutex_lock(&s->lock);
	struct nfs41_session *ss = session_find_locked(s, sa->sa_sessionid);
	if (ss && client_expired_locked(ss->clp, now)) {
		client_unlink_locked(s, ss->clp, &dead);
		ss = NULL;
	}
	if (ss) {
		nfs41_session_get(ss);
		atomic_fetch_add(&ss->inflight, 1);
		ss->clp->expire_ns = now + lease_ns(s);
		if (s->o.callbacks) {
			bool any = false;
			for (struct nfs41_session *o = ss->clp->sessions; o && !any; o = o->cnext)
				any = session_back_locked(o) != NULL;
			if (!session_back_locked(ss))
				status_flags |= SEQ4_STATUS_CB_PATH_DOWN_SESSION;
			if (!any)
				status_flags |= SEQ4_STATUS_CB_PATH_DOWN;
		}
	}
	pthread_mutex_unlock(&s->lock);
	client_reap(s, dead);
	if (!ss)
		return NFS4ERR_BADSESSION;

	nfsstat4 st = NFS4_OK;
	if (c->nops > ss->fore.ca_maxoperations)
		st = NFS4ERR_TOO_MANY_OPS;
	else if (x->req_len > ss->fore.ca_maxrequestsize)
		st = NFS4ERR_REQ_TOO_BIG;
	else if (sa->sa_slotid >= ss->nslots)
		st = NFS4ERR_BADSLOT;
	if (st)
		goto out_put;

	struct slot *sl = &ss->slots[sa->sa_slotid];
	pthread_mutex_lock(&ss->lock);
	if (sa->sa_sequenceid == sl->seqid + 1 && !sl->inuse) {
		sl->seqid = sa->sa_sequenceid;
		sl->used = sl->inuse = true;
		sl->cached = false;
		sl->ops_hash = x->ops_hash;
		x->slot = sl;
		x->cachethis = sa->sa_cachethis;
	} else if (sa->sa_sequenceid == sl->seqid && sl->used) {
		if (sl->inuse)
			st = NFS4ERR_DELAY;
		else if (sl->ops_hash != x->ops_hash)
			st = NFS4ERR_SEQ_FALSE_RETRY;
		else if (!sl->cached)
			st = NFS4ERR_RETRY_UNCACHED_REP;
		else if (!(x->replay = xdr_arena_alloc(c->arena, sl->reply_len)))
			st = NFS4ERR_DELAY;
		else {
			memcpy(x->replay, sl->reply, sl->reply_len);
			x->replay_len = sl->reply_len;
		}
	} else {
		st = NFS4ERR_SEQ_MISORDERED;
	}
	pthread_mutex_unlock(&ss->lock);
	if (st || x->replay)
		goto out_put;
	c->session = ss;
	c->clientid = ss->clientid;
	c->slotid = sa->sa_slotid;
	memcpy(ok->sr_sessionid, ss->id, sizeof(ok->sr_sessionid));
	ok->sr_sequenceid = sa->sa_sequenceid;
	ok->sr_slotid = sa->sa_slotid;
	ok->sr_highest_slotid = ss->nslots - 1;
	ok->sr_target_highest_slotid = ss->nslots - 1;
	ok->sr_status_flags = status_flags;
	return NFS4_OK;
out_put:
	pthread_mutex_lock(&s->lock);
	atomic_fetch_sub(&ss->inflight, 1);
	pthread_mutex_unlock(&s->lock);
	nfs41_session_put(ss);
	return st;
}

/* ------------------------------------------------------------ encoder helpers */

/* Where the encoder stood, to take back what came after. */
struct enc_pos {
	unsigned niov;
	size_t len, last_len, buf_used, buf_size;
	uint8_t *buf;
};

static void enc_save(const struct xdr_enc *e, struct enc_pos *p)
{
	p->niov = e->niov;
	p->len = e->len;
	p->last_len = e->niov ? e->iov[e->niov - 1].iov_len : 0;
	p->buf = e->buf;
	p->buf_used = e->buf_used;
	p->buf_size = e->buf_size;
}

static void enc_rewind(struct xdr_enc *e, const struct enc_pos *p)
{
	e->niov = p->niov;
	e->len = p->len;
	if (e->niov)
		e->iov[e->niov - 1].iov_len = p->last_len;
	e->buf = p->buf;
	e->buf_used = p->buf_used;
	e->buf_size = p->buf_size;
	e->err = 0;
}

/* Copy the encoded bytes from offset off to the end. */
static void enc_copy_from(const struct xdr_enc *e, size_t off, uint8_t *dst)
{
	for (unsigned i = 0; i < e->niov; i++) {
		size_t n = e->iov[i].iov_len;
		if (off >= n) {
			off -= n;
			continue;
		}
		memcpy(dst, (const uint8_t *)e->iov[i].iov_base + off, n - off);
		dst += n - off;
		off = 0;
	}
}

/* Every nfs_resop4 arm begins with its nfsstat4 (each XXX4res of RFC 8881
 * §16.2.3 is a struct or union led by the status). */
static void res_set_status(nfs_resop4 *r, nfsstat4 st)
{
	memcpy(&r->u, &st, sizeof(st));
}

/* ------------------------------------------------------------ COMPOUND */

/* The end of a COMPOUND: cache the reply in the slot (sa_cachethis) and let
 * the slot go; renew the lease, which a long request may have run past. */
static void compound_end(struct nfs41_server *s, struct cpd *x, const struct xdr_enc *e,
			 size_t res_off, bool ok)
{
	struct nfs41_session *ss = x->c.session;
	if (!ss)
		return;
	if (x->slot) {
		struct slot *sl = x->slot;
		size_t n = e->len - res_off;
		pthread_mutex_lock(&ss->lock);
		if (ok && x->cachethis && n <= ss->fore.ca_maxresponsesize_cached) {
			if (sl->reply_cap < n) {
				uint8_t *p = realloc(sl->reply, n);
				if (p) {
					sl->reply = p;
					sl->reply_cap = (uint32_t)n;
				}
			}
			if (sl->reply_cap >= n) {
				enc_copy_from(e, res_off, sl->reply);
				sl->reply_len = (uint32_t)n;
				sl->cached = true;
			}
		}
		sl->inuse = false;
		pthread_mutex_unlock(&ss->lock);
	}
	pthread_mutex_lock(&s->lock);
	atomic_fetch_sub(&ss->inflight, 1);
	if (!ss->dead)
		ss->clp->expire_ns = nfsd_now_ns() + lease_ns(s);
	pthread_mutex_unlock(&s->lock);
	nfs41_session_put(ss);
}

/* Run op i (position, filehandle and reply-size checks, then the handler). */
static nfsstat4 op_run(struct nfs41_server *s, struct cpd *x, nfs_argop4 *a, nfs_resop4 *r,
		       size_t cur_len)
{
	struct nfs41_compound *c = &x->c;
	int32_t op = a->argop;
	nfsstat4 st = op_position(op, c->opidx, c->nops);
	if (st)
		return st;
	const struct nfs41_op *d = &s->table[op];
	if (!d->fn)
		return NFS4ERR_NOTSUPP;
	if ((d->flags & NFS41_OP_NEEDS_FH) && !c->have_fh)
		return NFS4ERR_NOFILEHANDLE;
	if (d->res_bound && c->session) {
		uint64_t need = (uint64_t)cur_len + d->res_bound(a);
		if (need > c->session->fore.ca_maxresponsesize)
			return NFS4ERR_REP_TOO_BIG;
		if (x->cachethis && need > c->session->fore.ca_maxresponsesize_cached)
			return NFS4ERR_REP_TOO_BIG_TO_CACHE;
	}
	return d->fn(c, a, r);
}

int nfs41_server_compound(struct nfs41_server *s, struct nfsd_req *req)
{
	struct xdr_dec *d = &req->dec;
	struct xdr_enc *e = &req->enc;
	size_t args_len = xdr_dec_left(d);
	utf8string tag;
	uint32_t minor, n;

	if (xdr_dec_utf8string(d, &tag) || xdr_dec_uint32(d, &minor) || xdr_dec_uint32(d, &n))
		return NFSD_GARBAGE_ARGS;
	struct cpd *x = xdr_arena_alloc(&req->arena, sizeof(*x));
	if (!x)
		return NFSD_SYSTEM_ERR;
	struct nfs41_compound *c = &x->c;
	c->req = req;
	c->srv = s;
	c->priv = s->o.priv;
	c->minorversion = minor;
	c->nops = n;
	c->arena = &req->arena;
	x->req_len = req->rec_len ? (uint32_t)req->rec_len : (uint32_t)args_len;

	/* Decode every operation before running any (see nfs41.h).  Past the
	 * server's max_ops only the first matters: it fails whatever it is. */
	unsigned ndec = n > s->o.max_ops ? 1 : n, got = 0;
	nfs_argop4 *args = NULL;
	if (ndec && !(args = xdr_arena_alloc(&req->arena, ndec * sizeof(*args))))
		return NFSD_SYSTEM_ERR;
	const uint8_t *after_first = d->p;
	for (; got < ndec && minor >= 1 && minor <= 2; got++) {
		if (xdr_dec_left(d) < 4)
			return NFSD_GARBAGE_ARGS;
		int32_t op = (int32_t)xdr_get32(d->p);
		if (!op_legal(minor, op)) {
			args[got++].argop = OP_ILLEGAL; /* nothing after it can be decoded */
			break;
		}
		int rc = xdr_dec_nfs_argop4(d, &args[got]);
		if (rc)
			return rc == -ENOMEM ? NFSD_SYSTEM_ERR : NFSD_GARBAGE_ARGS;
		if (got == 0)
			after_first = d->p;
	}
	x->ops_hash = ops_hash64(after_first, (size_t)(d->p - after_first));
	x->args = args;
	x->nargs = got;

	size_t res_off = e->len;
	/* reply sizes count the RPC header, not the record mark */
	size_t hdr = res_off >= 4 ? res_off - 4 : 0;
	struct enc_pos start;
	enc_save(e, &start);
	uint8_t *status_p = xdr_enc_reserve(e, 4);
	xdr_enc_utf8string(e, &tag);
	uint8_t *count_p = xdr_enc_reserve(e, 4);
	if (e->err)
		return NFSD_SYSTEM_ERR;
	if (minor < 1 || minor > 2) {
		xdr_put32(status_p, (uint32_t)NFS4ERR_MINOR_VERS_MISMATCH);
		xdr_put32(count_p, 0);
		return NFSD_SUCCESS;
	}

	/* lazy lease expiry of every client, at most every SWEEP_INTERVAL_NS */
	uint64_t now = nfsd_now_ns();
	if (now >= atomic_load_explicit(&s->next_sweep_ns, memory_order_relaxed)) {
		struct nfs41_client *dead = NULL;
		pthread_mutex_lock(&s->lock);
		sweep_locked(s, now, &dead);
		pthread_mutex_unlock(&s->lock);
		client_reap(s, dead);
	}

	nfsstat4 status = NFS4_OK;
	uint32_t nres = 0;
	nfs_resop4 r;
	for (unsigned i = 0; i < got; i++) {
		c->opidx = i;
		memset(&r, 0, sizeof(r));
		r.resop = args[i].argop;
		struct enc_pos pos;
		enc_save(e, &pos);
		uint64_t t0 = s->o.metrics ? nfsd_now_ns() : 0;
		status = op_run(s, x, &args[i], &r, e->len - res_off + hdr);
		if (x->replay) {
			if (s->o.metrics)
				op_observe(s, c, &r, status, t0);
			/* a retry of a cached request: its reply, byte for byte */
			enc_rewind(e, &start);
			xdr_enc_bytes(e, x->replay, x->replay_len);
			return e->err ? NFSD_SYSTEM_ERR : NFSD_SUCCESS;
		}
		res_set_status(&r, status);
		xdr_enc_nfs_resop4(e, &r);
		nfsstat4 over = NFS4_OK;
		size_t len = e->len - res_off + hdr;
		if (e->err)
			over = NFS4ERR_SERVERFAULT; /* the handler's result does not encode */
		else if (c->session && len > c->session->fore.ca_maxresponsesize)
			over = NFS4ERR_REP_TOO_BIG;
		else if (c->session && x->cachethis &&
			 len > c->session->fore.ca_maxresponsesize_cached)
			over = NFS4ERR_REP_TOO_BIG_TO_CACHE;
		if (over) {
			enc_rewind(e, &pos);
			memset(&r, 0, sizeof(r));
			r.resop = args[i].argop;
			res_set_status(&r, over);
			xdr_enc_nfs_resop4(e, &r);
			status = over;
		}
		if (s->o.metrics)
			op_observe(s, c, &r, status, t0);
		nres++;
		if (status)
			break;
	}
	xdr_put32(status_p, (uint32_t)status);
	xdr_put32(count_p, nres);
	compound_end(s, x, e, res_off, !e->err);
	return e->err ? NFSD_SYSTEM_ERR : NFSD_SUCCESS;
}

/* ------------------------------------------------------------ server */

static int proc_null(struct nfsd_req *req, void *args, void *res)
{
	return NFSD_SUCCESS;
}

static int proc_compound(struct nfsd_req *req, void *args, void *res)
{
	return nfs41_server_compound(req->priv, req);
}

const struct nfsd_program *nfs41_server_program(struct nfs41_server *s)
{
	return &s->prog;
}

static void *memdup(const void *p, size_t n)
{
	void *q = malloc(n ? n : 1);
	if (q && n)
		memcpy(q, p, n);
	return q;
}

struct nfs41_server *nfs41_server_new(const struct nfs41_server_opts *o, int *err)
{
	uint32_t role = o->exchgid_flags;
	*err = -EINVAL;
	if (!role || (role & ~(uint32_t)EXCHGID4_FLAG_MASK_PNFS) ||
	    ((role & EXCHGID4_FLAG_USE_NON_PNFS) && role != EXCHGID4_FLAG_USE_NON_PNFS))
		return NULL;
	if (!o->so_major_len || o->so_major_len > NFS4_OPAQUE_LIMIT ||
	    o->scope_len > NFS4_OPAQUE_LIMIT || o->max_slots > MAX_SLOTS_LIMIT ||
	    o->max_ops > MAX_OPS_LIMIT)
		return NULL;
	struct nfs41_server *s = calloc(1, sizeof(*s));
	*err = -ENOMEM;
	if (!s)
		return NULL;
	s->o = *o;
	if (!s->o.lease_s)
		s->o.lease_s = 90;
	if (!s->o.max_slots)
		s->o.max_slots = 64;
	if (!s->o.max_req)
		s->o.max_req = (1u << 20) + (64u << 10);
	if (!s->o.max_resp)
		s->o.max_resp = (1u << 20) + (64u << 10);
	if (!s->o.max_resp_cached)
		s->o.max_resp_cached = 16u << 10;
	if (!s->o.max_ops)
		s->o.max_ops = 64;
	if (!o->scope_len) {
		s->o.scope = o->so_major;
		s->o.scope_len = o->so_major_len;
	}
	s->o.so_major = memdup(o->so_major, o->so_major_len);
	s->o.scope = memdup(s->o.scope, s->o.scope_len);
	if (!s->o.so_major || !s->o.scope) {
		free((void *)s->o.so_major);
		free((void *)s->o.scope);
		free(s);
		return NULL;
	}
	s->o.ops = NULL;
	s->o.nops = 0;
	for (unsigned i = 0; i <= OP_MAX; i++) {
		unsigned f = builtin_ops[i].flags;
		if (f & F_V40)
			continue;
		if (!(f & F_MODULE) && i < o->nops && o->ops && o->ops[i].fn)
			s->table[i] = o->ops[i];
		else if (builtin_ops[i].fn)
			s->table[i] =
			    (struct nfs41_op){builtin_ops[i].fn, f & NFS41_OP_NEEDS_FH, NULL};
	}
	s->impl_id.nii_domain = xdr_string_of("braid");
	s->impl_id.nii_name = xdr_string_of(PACKAGE_NAME " " PACKAGE_VERSION);
	s->procs[0] =
	    (struct nfsd_proc){.name = "NULL", .fn = proc_null, .flags = NFSD_PROC_INLINE};
	s->procs[1] = (struct nfsd_proc){.name = "COMPOUND", .fn = proc_compound};
	s->vers = (struct nfsd_version){.vers = 4, .procs = s->procs, .nprocs = 2, .priv = s};
	s->prog = (struct nfsd_program){
	    .prog = NFS4_PROGRAM, .name = "nfs4", .versions = &s->vers, .nversions = 1, .priv = s};
	pthread_mutex_init(&s->lock, NULL);
	s->boot = (uint32_t)time(NULL);
	s->next_id = rand32();
	s->next_sess = rand32();
	*err = 0;
	return s;
}

void nfs41_server_free(struct nfs41_server *s)
{
	if (!s)
		return;
	struct nfs41_client *dead = NULL;
	for (unsigned b = 0; b < CLIENT_BUCKETS; b++)
		while (s->by_id[b])
			client_unlink_locked(s, s->by_id[b], &dead);
	while (dead) {
		struct nfs41_client *next = dead->dnext;
		free(dead->owner);
		free(dead);
		dead = next;
	}
	pthread_mutex_destroy(&s->lock);
	free((void *)s->o.so_major);
	free((void *)s->o.scope);
	free(s);
}

/* ------------------------------------------------------------ helpers */

void nfs41_compound_set_fh(struct nfs41_compound *c, const void *fh, uint32_t len)
{
	if (len > NFS4_FHSIZE)
		len = NFS4_FHSIZE;
	memcpy(c->fh, fh, len);
	c->fhlen = len;
	c->have_fh = true;
	c->have_cur_stateid = false;
}

void nfs41_compound_set_stateid(struct nfs41_compound *c, const stateid4 *sid)
{
	c->cur_stateid = *sid;
	c->have_cur_stateid = true;
}

int32_t nfs41_compound_next_op(const struct nfs41_compound *c)
{
	const struct cpd *x = (const struct cpd *)c;
	return c->opidx + 1 < x->nargs ? x->args[c->opidx + 1].argop : -1;
}

nfsstat4 nfs41_compound_stateid(struct nfs41_compound *c, stateid4 *sid)
{
	static const uint8_t zero[NFS4_OTHER_SIZE];
	if (sid->seqid != 1 || memcmp(sid->other, zero, sizeof(zero)))
		return NFS4_OK;
	if (!c->have_cur_stateid)
		return NFS4ERR_BAD_STATEID;
	*sid = c->cur_stateid;
	return NFS4_OK;
}
