/* SPDX-License-Identifier: MIT */
/*
 * NFSv4.1 client IDs and leases (RFC 8881 §2.4, §8.3, §18.35.5): the client
 * tables, lazy lease expiry, the embedder's lookups (nfs41_client_*), and
 * EXCHANGE_ID, DESTROY_CLIENTID and RECLAIM_COMPLETE.  Records and locks:
 * nfsd/nfs41_impl.h.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nfsd/nfs41_impl.h"

/* ------------------------------------------------------------ clients */

static unsigned id_bucket(uint64_t id)
{
	return (unsigned)((id ^ (id >> 32)) % CLIENT_BUCKETS);
}

static unsigned owner_bucket(const uint8_t *p, uint32_t n)
{
	return (unsigned)(nfs41_fnv64(p, n) % CLIENT_BUCKETS);
}

static bool client_busy_locked(const struct nfs41_client *clp)
{
	for (const struct nfs41_session *ss = clp->sessions; ss; ss = ss->cnext)
		if (atomic_load_explicit(&ss->inflight, memory_order_relaxed))
			return true;
	return false;
}

/* Take the client out of the tables and kill its sessions; it goes on
 * *dead for nfs41_client_reap() once the lock is dropped. */
void nfs41_client_unlink_locked(struct nfs41_server *s, struct nfs41_client *clp,
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
		nfs41_session_kill_locked(s, clp->sessions);
	clp->dnext = *dead;
	*dead = clp;
}

void nfs41_client_free(struct nfs41_client *clp)
{
	free(clp->owner);
	free(clp->princ_name);
	free(clp);
}

/* Outside the lock: tell the embedder, then free. */
void nfs41_client_reap(struct nfs41_server *s, struct nfs41_client *dead)
{
	while (dead) {
		struct nfs41_client *next = dead->dnext;
		if (s->o.client_expired)
			s->o.client_expired(s->o.priv, dead->id);
		nfs41_client_free(dead);
		dead = next;
	}
}

/* Lease expired and nothing in progress: the client is gone (RFC 8881 §8.3). */
bool nfs41_client_expired_locked(const struct nfs41_client *clp, uint64_t now)
{
	return now >= clp->expire_ns && !client_busy_locked(clp);
}

struct nfs41_client *nfs41_client_find_locked(struct nfs41_server *s, uint64_t id, uint64_t now,
					      struct nfs41_client **dead)
{
	struct nfs41_client *clp = s->by_id[id_bucket(id)];
	while (clp && clp->id != id)
		clp = clp->hnext;
	if (clp && nfs41_client_expired_locked(clp, now)) {
		nfs41_client_unlink_locked(s, clp, dead);
		clp = NULL;
	}
	return clp;
}

/* NFSv4.0 and 4.1 records of one owner string are different clients: an
 * owner's 4.1 record is never its 4.0 one's reboot, nor the reverse. */
static struct nfs41_client *owner_find_locked(struct nfs41_server *s, const xdr_opaque *owner,
					      bool confirmed, bool v40, uint64_t now,
					      struct nfs41_client **dead)
{
	struct nfs41_client *clp = s->by_owner[owner_bucket(owner->val, owner->len)];
	for (; clp; clp = clp->onext) {
		if (clp->v40 != v40 || clp->confirmed != confirmed ||
		    clp->owner_len != owner->len ||
		    (owner->len && memcmp(clp->owner, owner->val, owner->len)))
			continue;
		if (nfs41_client_expired_locked(clp, now)) {
			nfs41_client_unlink_locked(s, clp, dead);
			return NULL;
		}
		return clp;
	}
	return NULL;
}

struct nfs41_client *nfs41_owner_find_locked(struct nfs41_server *s, const xdr_opaque *owner,
					     bool confirmed, uint64_t now,
					     struct nfs41_client **dead)
{
	return owner_find_locked(s, owner, confirmed, false, now, dead);
}

struct nfs41_client *nfs40_owner_find_locked(struct nfs41_server *s, const xdr_opaque *owner,
					     bool confirmed, uint64_t now,
					     struct nfs41_client **dead)
{
	return owner_find_locked(s, owner, confirmed, true, now, dead);
}

void nfs41_client_sweep_locked(struct nfs41_server *s, uint64_t now, struct nfs41_client **dead)
{
	if (now < atomic_load(&s->next_sweep_ns))
		return;
	atomic_store(&s->next_sweep_ns, now + SWEEP_INTERVAL_NS);
	for (unsigned b = 0; b < CLIENT_BUCKETS; b++) {
		struct nfs41_client *clp = s->by_id[b];
		while (clp) {
			struct nfs41_client *next = clp->hnext;
			if (nfs41_client_expired_locked(clp, now))
				nfs41_client_unlink_locked(s, clp, dead);
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
		const struct conn_rec *r = nfs41_session_back_locked(ss);
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
			if (clp->princ_name)
				snprintf(i->principal, sizeof(i->principal), "%s", clp->princ_name);
			i->mach_cred = clp->mach_cred;
			i->lease_left_ms = ((int64_t)clp->expire_ns - (int64_t)now) / 1000000;
			i->sessions = clp->nsessions;
			if (clp->v40 && clp->has_peer) { /* no sessions: SETCLIENTID's */
				i->peer = clp->peer;
				i->has_peer = true;
				snprintf(i->transport, sizeof(i->transport), "tcp");
			}
			uint64_t seq = 0;
			for (struct nfs41_session *ss = clp->sessions; ss; ss = ss->cnext) {
				i->ops += atomic_load_explicit(&ss->ops, memory_order_relaxed);
				i->op_errors +=
				    atomic_load_explicit(&ss->op_errors, memory_order_relaxed);
				i->op_ns += atomic_load_explicit(&ss->op_ns, memory_order_relaxed);
			}
			for (const struct nfs41_session *ss = clp->sessions; ss; ss = ss->cnext)
				for (unsigned k = 0; k < SESSION_MAX_CONNS; k++) {
					const struct conn_rec *r = &ss->conns[k];
					if (r->conn && r->seq >= seq) {
						seq = r->seq;
						i->peer = *nfsd_conn_peer(r->conn);
						i->has_peer = true;
						snprintf(i->transport, sizeof(i->transport), "%s",
							 strcmp(nfsd_conn_xprt_name(r->conn),
								"rdma")
								 ? "tcp"
								 : "rdma");
					}
				}
		}
	pthread_mutex_unlock(&s->lock);
	return n;
}

/* The same principal (RFC 8881 §2.4): AUTH_SYS by uid, RPCSEC_GSS by GSS
 * name whatever the service (krb5 and krb5i are one principal). */
bool nfs41_client_princ_eq(const struct nfs41_client *clp, const struct nfsd_req *req)
{
	if (clp->princ_flavor != req->cred.flavor)
		return false;
	if (clp->princ_flavor == NFSD_RPCSEC_GSS)
		return clp->princ_name && req->cred.principal &&
		       !strcmp(clp->princ_name, req->cred.principal);
	return clp->princ_flavor != NFSD_AUTH_SYS || clp->princ_uid == req->cred.uid;
}

nfsstat4 nfs41_client_mach_check(const struct nfs41_client *clp, const struct nfsd_req *req,
				 nfs_opnum4 op)
{
	if (!clp->mach_cred || op >= 64 || !(clp->enforce[op / 32] >> (op % 32) & 1))
		return NFS4_OK;
	return nfs41_client_princ_eq(clp, req) ? NFS4_OK : NFS4ERR_WRONG_CRED;
}

struct nfs41_client *nfs41_client_new_locked(struct nfs41_server *s, const xdr_opaque *owner,
					     const uint8_t *verf, const struct nfsd_req *req,
					     uint64_t now)
{
	struct nfs41_client *clp = calloc(1, sizeof(*clp));
	if (!clp)
		return NULL;
	clp->owner = malloc(owner->len + 1u);
	if (!clp->owner) {
		free(clp);
		return NULL;
	}
	clp->owner_len = owner->len;
	if (clp->owner_len)
		memcpy(clp->owner, owner->val, clp->owner_len);
	memcpy(clp->verf, verf, sizeof(clp->verf));
	clp->princ_flavor = req->cred.flavor;
	clp->princ_uid = req->cred.uid;
	if (req->cred.flavor == NFSD_RPCSEC_GSS && req->cred.principal &&
	    !(clp->princ_name = strdup(req->cred.principal))) {
		free(clp->owner);
		free(clp);
		return NULL;
	}
	/* RFC 8881 §18.35.4: eir_sequenceid is what the first CREATE_SESSION
	 * sends; the slot starts one below it. */
	clp->cs_seqid = 0;
	clp->expire_ns = now + nfs41_lease_ns(s);
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

/*
 * SP4_MACH_CRED (RFC 8881 §18.35.3): what we enforce and allow of what
 * the client asks.  Enforced: the operations on the client ID and its
 * sessions, which the Linux client needs all of (else it gives up state
 * protection).  Allowed with the machine credential: the operations that
 * release state, which no other check here stands in the way of (state
 * is not bound to principals).  WRITE and COMMIT are not allowed: the
 * Linux client would then send every WRITE as the machine, which maps to
 * a squashed root.
 */
#define SP4_BIT(op) (1ull << (op))
static const uint64_t sp4_enforce_ok =
    SP4_BIT(OP_BIND_CONN_TO_SESSION) | SP4_BIT(OP_EXCHANGE_ID) | SP4_BIT(OP_CREATE_SESSION) |
    SP4_BIT(OP_DESTROY_SESSION) | SP4_BIT(OP_DESTROY_CLIENTID);
static const uint64_t sp4_allow_ok =
    SP4_BIT(OP_CLOSE) | SP4_BIT(OP_OPEN_DOWNGRADE) | SP4_BIT(OP_LOCKU) | SP4_BIT(OP_DELEGRETURN) |
    SP4_BIT(OP_LAYOUTRETURN) | SP4_BIT(OP_SECINFO) | SP4_BIT(OP_SECINFO_NO_NAME) |
    SP4_BIT(OP_TEST_STATEID) | SP4_BIT(OP_FREE_STATEID);

static uint64_t bitmap_get64(const bitmap4 *b)
{
	uint64_t v = 0;
	for (uint32_t i = 0; i < b->len && i < 2; i++)
		v |= (uint64_t)b->val[i] << (32 * i);
	return v;
}

static int bitmap_put64(struct xdr_arena *arena, uint64_t v, bitmap4 *out)
{
	uint32_t *w = xdr_arena_alloc(arena, 2 * sizeof(*w));
	if (!w)
		return -1;
	w[0] = (uint32_t)v;
	w[1] = (uint32_t)(v >> 32);
	out->len = w[1] ? 2 : 1;
	out->val = w;
	return 0;
}

/* RFC 8881 §18.35; the cases of §18.35.5 are numbered as there. */
nfsstat4 nfs41_op_exchange_id(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct nfs41_server *s = c->srv;
	EXCHANGE_ID4args *ea = &a->u.opexchange_id;
	EXCHANGE_ID4resok *ok = &r->u.opexchange_id.u.eir_resok4;
	bool update = ea->eia_flags & EXCHGID4_FLAG_UPD_CONFIRMED_REC_A;

	/* CONFIRMED_R is the server's; unknown bits are the client's error. */
	if (ea->eia_flags & ~(uint32_t)EXCHGID4_FLAG_MASK_A)
		return NFS4ERR_INVAL;
	uint64_t enforce = 0, allow = 0;
	switch (ea->eia_state_protect.spa_how) {
	case SP4_NONE:
		break;
	case SP4_SSV:
		return NFS4ERR_ENCR_ALG_UNSUPP; /* no SSV algorithm offered is ours */
	case SP4_MACH_CRED:
		/* bound to an RPCSEC_GSS principal whose calls cannot be
		 * altered in transit: integrity or privacy (as knfsd) */
		if (c->req->cred.flavor != NFSD_RPCSEC_GSS || c->req->cred.gss_service < 2)
			return NFS4ERR_INVAL;
		enforce = bitmap_get64(&ea->eia_state_protect.u.spa_mach_ops.spo_must_enforce) &
			  sp4_enforce_ok;
		allow = bitmap_get64(&ea->eia_state_protect.u.spa_mach_ops.spo_must_allow) &
			sp4_allow_ok;
		break;
	default:
		return NFS4ERR_INVAL;
	}

	struct nfs41_client *dead = NULL, *clp = NULL;
	nfsstat4 st = NFS4_OK;
	uint64_t now = nfsd_now_ns();
	/* case 3: another principal's record is "in use" only while its lease
	 * holds state (§18.35.4): sessions here, or the embedder's opens,
	 * locks and layouts, asked without our lock */
	uint64_t other = 0;
	bool other_busy = false;
	if (!update) {
		pthread_mutex_lock(&s->lock);
		struct nfs41_client *x =
		    nfs41_owner_find_locked(s, &ea->eia_clientowner.co_ownerid, true, now, &dead);
		if (x && !nfs41_client_princ_eq(x, c->req)) {
			other = x->id;
			other_busy = x->nsessions > 0;
		}
		pthread_mutex_unlock(&s->lock);
		if (other && !other_busy && s->o.client_has_state)
			other_busy = s->o.client_has_state(s->o.priv, other);
	}
	pthread_mutex_lock(&s->lock);
	struct nfs41_client *conf =
	    nfs41_owner_find_locked(s, &ea->eia_clientowner.co_ownerid, true, now, &dead);
	struct nfs41_client *unconf =
	    nfs41_owner_find_locked(s, &ea->eia_clientowner.co_ownerid, false, now, &dead);
	bool verf_eq =
	    conf && !memcmp(conf->verf, ea->eia_clientowner.co_verifier, sizeof(conf->verf));
	if (update) {
		if (!conf)
			st = NFS4ERR_NOENT; /* case 7 */
		else if (!nfs41_client_princ_eq(conf, c->req))
			st = NFS4ERR_PERM; /* case 9 */
		else if (!verf_eq)
			st = NFS4ERR_NOT_SAME; /* case 8 */
		else
			clp = conf; /* case 6 */
	} else if (conf && !nfs41_client_princ_eq(conf, c->req) &&
		   (conf->id != other || other_busy || conf->nsessions)) {
		st = NFS4ERR_CLID_INUSE; /* case 3, the record in use */
	} else if (conf && verf_eq && nfs41_client_princ_eq(conf, c->req)) {
		clp = conf; /* case 2 */
	} else {
		/* case 1 (new), 3 (another principal, the record holding no
		 * state), 4 (replaces the unconfirmed record), 5 (client
		 * restart); in 3 and 5 the confirmed record stays until the new
		 * one is confirmed by CREATE_SESSION */
		if (unconf)
			nfs41_client_unlink_locked(s, unconf, &dead);
		clp = nfs41_client_new_locked(s, &ea->eia_clientowner.co_ownerid,
					      ea->eia_clientowner.co_verifier, c->req, now);
		if (!clp)
			st = NFS4ERR_SERVERFAULT;
	}
	if (clp) {
		/* the record is this principal's (cases 1-6): its protection is
		 * what this EXCHANGE_ID asks */
		clp->mach_cred = ea->eia_state_protect.spa_how == SP4_MACH_CRED;
		clp->enforce[0] = (uint32_t)enforce;
		clp->enforce[1] = (uint32_t)(enforce >> 32);
		clp->allow[0] = (uint32_t)allow;
		clp->allow[1] = (uint32_t)(allow >> 32);
		if (clp->confirmed)
			clp->expire_ns = now + nfs41_lease_ns(s);
		ok->eir_clientid = clp->id;
		ok->eir_sequenceid = clp->cs_seqid + 1;
		ok->eir_flags =
		    s->o.exchgid_flags | (clp->confirmed ? EXCHGID4_FLAG_CONFIRMED_R : 0);
	}
	pthread_mutex_unlock(&s->lock);
	nfs41_client_reap(s, dead);
	if (st)
		return st;
	ok->eir_state_protect.spr_how = ea->eia_state_protect.spa_how;
	if (ea->eia_state_protect.spa_how == SP4_MACH_CRED &&
	    (bitmap_put64(c->arena, enforce,
			  &ok->eir_state_protect.u.spr_mach_ops.spo_must_enforce) ||
	     bitmap_put64(c->arena, allow, &ok->eir_state_protect.u.spr_mach_ops.spo_must_allow)))
		return NFS4ERR_SERVERFAULT;
	ok->eir_server_owner.so_minor_id = s->o.so_minor;
	ok->eir_server_owner.so_major_id = xdr_opaque_of(s->o.so_major, s->o.so_major_len);
	ok->eir_server_scope = xdr_opaque_of(s->o.scope, s->o.scope_len);
	ok->eir_server_impl_id.len = 1;
	ok->eir_server_impl_id.val = &s->impl_id;
	return NFS4_OK;
}

/* ------------------------------------------------------------ other client ops */

/* RFC 8881 §18.50 */
nfsstat4 nfs41_op_destroy_clientid(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct nfs41_server *s = c->srv;
	uint64_t id = a->u.opdestroy_clientid.dca_clientid;
	struct nfs41_client *dead = NULL;
	nfsstat4 st = NFS4_OK;

	for (int pass = 0; pass < 2 && !st; pass++) {
		pthread_mutex_lock(&s->lock);
		struct nfs41_client *clp = nfs41_client_find_locked(s, id, nfsd_now_ns(), &dead);
		if (!clp)
			st = NFS4ERR_STALE_CLIENTID;
		else if ((st = nfs41_client_mach_check(clp, c->req, OP_DESTROY_CLIENTID)))
			;
		else if (clp->nsessions)
			st = NFS4ERR_CLIENTID_BUSY;
		else if (pass == 1)
			nfs41_client_unlink_locked(s, clp, &dead);
		pthread_mutex_unlock(&s->lock);
		/* ask the embedder without our lock, then look again */
		if (!st && pass == 0 && s->o.client_has_state &&
		    s->o.client_has_state(s->o.priv, id))
			st = NFS4ERR_CLIENTID_BUSY;
	}
	nfs41_client_reap(s, dead);
	return st;
}

/* RFC 8881 §18.51: grace is the embedder's; here only "once per client". */
nfsstat4 nfs41_op_reclaim_complete(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
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
