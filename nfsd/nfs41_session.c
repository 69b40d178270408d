/* SPDX-License-Identifier: MIT */
/*
 * NFSv4.1 sessions and their connections (RFC 8881 §2.10): the session
 * table and references, back channel bindings, and CREATE_SESSION,
 * DESTROY_SESSION, BIND_CONN_TO_SESSION and BACKCHANNEL_CTL.  Records and
 * locks: nfsd/nfs41_impl.h.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "nfsd/nfs41_impl.h"

/* ------------------------------------------------------------ sessions */

static unsigned session_bucket(const uint8_t *id)
{
	return (unsigned)(nfs41_fnv64(id, NFS4_SESSIONID_SIZE) % SESSION_BUCKETS);
}

static void session_free(struct nfs41_session *ss)
{
	for (unsigned i = 0; i < SESSION_MAX_CONNS; i++)
		if (ss->conns[i].conn)
			nfsd_conn_put(ss->conns[i].conn);
	for (unsigned i = 0; i < ss->nslots; i++)
		free(ss->slots[i].reply);
	nfsd_gss_cb_put(ss->cb_gss);
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

struct nfs41_session *nfs41_session_find_locked(struct nfs41_server *s, const uint8_t *id)
{
	struct nfs41_session *ss = s->sessions[session_bucket(id)];
	while (ss && memcmp(ss->id, id, NFS4_SESSIONID_SIZE))
		ss = ss->hnext;
	return ss;
}

/* Unhash, detach from its client and drop the table's reference. */
void nfs41_session_kill_locked(struct nfs41_server *s, struct nfs41_session *ss)
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
const struct conn_rec *nfs41_session_back_locked(const struct nfs41_session *ss)
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
	const struct conn_rec *best = nfs41_session_back_locked(ss);
	/* a GSS context that ended is a back channel down until the client
	 * gives new handles (BACKCHANNEL_CTL) */
	if (best && ss->cb_gss && nfsd_gss_cb_check(ss->cb_gss, 0) < 0)
		best = NULL;
	if (best) {
		nfsd_conn_get(best->conn);
		bc->conn = best->conn;
		bc->cb_program = ss->cb_program;
		bc->flavor = ss->cb_flavor;
		bc->uid = ss->cb_uid;
		bc->gid = ss->cb_gid;
		bc->gss = ss->cb_gss;
		if (bc->gss)
			nfsd_gss_cb_get(bc->gss);
		bc->attrs = ss->back;
		memcpy(bc->sessionid, ss->id, sizeof(bc->sessionid));
		bc->minorversion = ss->minorversion;
	}
	pthread_mutex_unlock(&s->lock);
	return best ? 0 : -ENOTCONN;
}

void nfs41_backchannel_release(struct nfs41_backchannel *bc)
{
	nfsd_conn_put(bc->conn);
	nfsd_gss_cb_put(bc->gss);
	bc->conn = NULL;
	bc->gss = NULL;
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

/* ------------------------------------------------------------ CREATE_SESSION */

/* The callback security a session's back channel uses. */
struct cb_sec {
	uint32_t flavor, uid, gid;
	struct nfsd_gss_cb *gss; /* RPCSEC_GSS: a reference */
};

/*
 * Of the client's offer (RFC 8881 §18.36.4, §18.33.3), the strongest we
 * can use: RPCSEC_GSS whose gcbp_handle_from_server names a live context
 * of principal (§2.10.8.3; the first such entry), else the first AUTH_NONE
 * or AUTH_SYS entry.  An offer with nothing usable (only GSS entries with
 * stale handles or another principal's contexts, or unknown flavors) is
 * NFS4ERR_ENCR_ALG_UNSUPP, as from knfsd; an empty offer is AUTH_NONE.
 */
static nfsstat4 cb_sec_pick(struct nfs41_server *s, uint32_t n, const callback_sec_parms4 *p,
			    const char *principal, struct cb_sec *out)
{
	*out = (struct cb_sec){.flavor = NFSD_AUTH_NONE, .uid = 65534, .gid = 65534};
	for (uint32_t i = 0; i < n && s->o.gss; i++) {
		const gss_cb_handles4 *h = &p[i].u.cbsp_gss_handles;
		if (p[i].cb_secflavor == NFSD_RPCSEC_GSS &&
		    !nfsd_gss_cb_new(s->o.gss, &h->gcbp_handle_from_server,
				     &h->gcbp_handle_from_client, (uint32_t)h->gcbp_service,
				     principal, &out->gss)) {
			out->flavor = NFSD_RPCSEC_GSS;
			return NFS4_OK;
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		if (p[i].cb_secflavor == NFSD_AUTH_NONE)
			return NFS4_OK;
		if (p[i].cb_secflavor == NFSD_AUTH_SYS) {
			out->flavor = NFSD_AUTH_SYS;
			out->uid = p[i].u.cbsp_sys_cred.uid;
			out->gid = p[i].u.cbsp_sys_cred.gid;
			return NFS4_OK;
		}
	}
	return n ? NFS4ERR_ENCR_ALG_UNSUPP : NFS4_OK;
}

/* The principal whose contexts may carry clp's callbacks: the client ID's
 * GSS name, or for a client ID made without GSS the caller's (srv->lock). */
static const char *cb_principal(const struct nfs41_client *clp, const struct nfsd_req *req)
{
	if (clp->princ_name)
		return clp->princ_name;
	return req ? req->cred.principal : NULL;
}

/* Install sec as ss's callback security (srv->lock held); the old GSS
 * reference goes to *put, for after unlocking. */
static void cb_sec_set_locked(struct nfs41_session *ss, uint32_t program, struct cb_sec *sec,
			      struct nfsd_gss_cb **put)
{
	ss->cb_program = program;
	ss->cb_flavor = sec->flavor;
	ss->cb_uid = sec->uid;
	ss->cb_gid = sec->gid;
	*put = ss->cb_gss;
	ss->cb_gss = sec->gss;
	sec->gss = NULL;
}

static uint32_t min32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* RFC 8881 §18.36.3: the server may lower what the client offers. */
static nfsstat4 chan_negotiate(const struct nfs41_server *s, const CREATE_SESSION4args *ca,
			       const struct nfsd_conn *conn, uint32_t *ird_buf,
			       channel_attrs4 *fore, channel_attrs4 *back)
{
	const channel_attrs4 *f = &ca->csa_fore_chan_attrs, *b = &ca->csa_back_chan_attrs;
	if (f->ca_maxrequestsize < CHAN_MIN_SIZE || f->ca_maxresponsesize < CHAN_MIN_SIZE ||
	    f->ca_maxoperations < 1 || f->ca_maxrequests < 1)
		return NFS4ERR_TOOSMALL;
	/* the back channel too: a session's may be bound later, and one that
	 * could never carry a callback is refused now, not at the first recall */
	if (b->ca_maxrequestsize < BACK_MIN_REQ || b->ca_maxresponsesize < CHAN_MIN_SIZE ||
	    b->ca_maxoperations < BACK_MIN_OPS || b->ca_maxrequests < 1)
		return NFS4ERR_TOOSMALL;
	memset(fore, 0, sizeof(*fore));
	fore->ca_maxrequestsize = min32(f->ca_maxrequestsize, s->o.max_req);
	fore->ca_maxresponsesize = min32(f->ca_maxresponsesize, s->o.max_resp);
	fore->ca_maxresponsesize_cached = min32(
	    min32(f->ca_maxresponsesize_cached, s->o.max_resp_cached), fore->ca_maxresponsesize);
	fore->ca_maxoperations = min32(f->ca_maxoperations, s->o.max_ops);
	fore->ca_maxrequests = min32(f->ca_maxrequests, s->o.max_slots);
	/* over RDMA, the connection's own limits: no more slots than credits
	 * (a call beyond them waits for a receive), and the inbound RDMA Read
	 * depth we accepted when the client asks for one (RFC 8881 §18.36) */
	uint32_t credits, ird;
	if (conn && nfsd_conn_rdma_limits(conn, &credits, &ird)) {
		fore->ca_maxrequests = min32(fore->ca_maxrequests, credits);
		if (f->ca_rdma_ird.len) {
			*ird_buf = min32(f->ca_rdma_ird.val[0], ird);
			fore->ca_rdma_ird.len = 1;
			fore->ca_rdma_ird.val = ird_buf;
		}
	}
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
	ss->fore.ca_rdma_ird.len = 0; /* (request memory) */
	ss->fore.ca_rdma_ird.val = NULL;
	ss->back = *back;
	ss->nslots = n;
	pthread_mutex_init(&ss->lock, NULL);
	/* unique (the client ID, a counter) and hard to guess */
	for (int i = 0; i < 8; i++)
		ss->id[i] = (uint8_t)(clp->id >> (56 - 8 * i));
	uint32_t seq = s->next_sess++, rnd = nfs41_rand32();
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
nfsstat4 nfs41_op_create_session(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct nfs41_server *s = c->srv;
	CREATE_SESSION4args *ca = &a->u.opcreate_session;
	CREATE_SESSION4resok *ok = &r->u.opcreate_session.u.csr_resok4;
	channel_attrs4 fore, back;
	struct cb_sec sec = {0};
	struct nfsd_gss_cb *old_gss = NULL;

	uint32_t *ird_buf = xdr_arena_alloc(c->arena, sizeof(*ird_buf));
	if (!ird_buf)
		return NFS4ERR_SERVERFAULT;
	nfsstat4 st = chan_negotiate(s, ca, c->req ? c->req->conn : NULL, ird_buf, &fore, &back);
	if (st)
		return st;

	struct nfs41_client *dead = NULL;
	uint64_t now = nfsd_now_ns();
	pthread_mutex_lock(&s->lock);
	struct nfs41_client *clp = nfs41_client_find_locked(s, ca->csa_clientid, now, &dead);
	if (clp && clp->v40)
		clp = NULL; /* SETCLIENTID's: no sessions (RFC 8881 §2.4) */
	if (!clp) {
		st = NFS4ERR_STALE_CLIENTID;
	} else if (clp->confirmed && ca->csa_sequence == clp->cs_seqid) {
		/* a retry: the cached reply (only successes are cached) */
		if (clp->cs_cached)
			*ok = clp->cs_res;
		else
			st = NFS4ERR_SEQ_MISORDERED;
		goto out;
	} else if (!clp->confirmed && !nfs41_client_princ_eq(clp, c->req)) {
		st = NFS4ERR_CLID_INUSE;
	} else if ((st = nfs41_client_mach_check(clp, c->req, OP_CREATE_SESSION))) {
		;
	} else if (ca->csa_sequence != clp->cs_seqid + 1) {
		st = NFS4ERR_SEQ_MISORDERED;
	} else if (clp->nsessions >= SESSIONS_PER_CLIENT) {
		st = NFS4ERR_NOSPC;
	} else {
		st = cb_sec_pick(s, ca->csa_sec_parms.len, ca->csa_sec_parms.val,
				 cb_principal(clp, c->req), &sec);
	}
	if (st)
		goto out;
	uint32_t flags = ca->csa_flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN;
	struct nfs41_session *ss = session_new_locked(s, clp, &fore, &back, flags);
	if (!ss) {
		st = NFS4ERR_DELAY;
		goto out;
	}
	ss->minorversion = c->minorversion;
	cb_sec_set_locked(ss, ca->csa_cb_program, &sec, &old_gss);
	conn_bind_locked(s, ss, c->req->conn, flags ? CDFS4_BOTH : CDFS4_FORE);
	if (!clp->confirmed) {
		/* Confirming a rebooted client's new ID ends the old one
		 * (§18.35.5 case 5). */
		xdr_opaque owner = xdr_opaque_of(clp->owner, clp->owner_len);
		struct nfs41_client *old = nfs41_owner_find_locked(s, &owner, true, now, &dead);
		if (old)
			nfs41_client_unlink_locked(s, old, &dead);
		clp->confirmed = true;
	}
	clp->expire_ns = now + nfs41_lease_ns(s);
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
	nfsd_gss_cb_put(sec.gss);
	nfsd_gss_cb_put(old_gss);
	nfs41_client_reap(s, dead);
	return st;
}

/* ------------------------------------------------------------ other session ops */

/* RFC 8881 §18.37 */
nfsstat4 nfs41_op_destroy_session(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct nfs41_server *s = c->srv;
	nfsstat4 st = NFS4_OK;
	pthread_mutex_lock(&s->lock);
	struct nfs41_session *ss =
	    nfs41_session_find_locked(s, a->u.opdestroy_session.dsa_sessionid);
	if (!ss) {
		st = NFS4ERR_BADSESSION;
	} else if (ss->clp && (st = nfs41_client_mach_check(ss->clp, c->req, OP_DESTROY_SESSION))) {
		;
	} else {
		bool own = ss == c->session;
		/* §18.37.3: destroying the COMPOUND's own session ends it */
		if (own && c->opidx + 1 != c->nops)
			st = NFS4ERR_NOT_ONLY_OP;
		else if (atomic_load(&ss->inflight) > (unsigned)own)
			st = NFS4ERR_DELAY; /* requests in progress on it */
		else
			nfs41_session_kill_locked(s, ss);
	}
	pthread_mutex_unlock(&s->lock);
	return st;
}

/* RFC 8881 §18.34 */
nfsstat4 nfs41_op_bind_conn(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
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
	struct nfs41_session *ss = nfs41_session_find_locked(s, ba->bctsa_sessid);
	if (!ss) {
		st = NFS4ERR_BADSESSION;
	} else if (ss->clp &&
		   (st = nfs41_client_mach_check(ss->clp, c->req, OP_BIND_CONN_TO_SESSION))) {
		;
	} else {
		conn_bind_locked(s, ss, c->req->conn, dir);
		ss->clp->expire_ns = nfsd_now_ns() + nfs41_lease_ns(s);
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
nfsstat4 nfs41_op_backchannel_ctl(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct nfs41_server *s = c->srv;
	BACKCHANNEL_CTL4args *ba = &a->u.opbackchannel_ctl;
	struct nfs41_session *ss = c->session;
	struct cb_sec sec = {0};
	struct nfsd_gss_cb *old_gss = NULL;
	nfsstat4 st;
	pthread_mutex_lock(&s->lock);
	if (ss->dead || !ss->clp)
		st = NFS4ERR_BADSESSION;
	else
		st = cb_sec_pick(s, ba->bca_sec_parms.len, ba->bca_sec_parms.val,
				 cb_principal(ss->clp, c->req), &sec);
	if (!st)
		cb_sec_set_locked(ss, ba->bca_cb_program, &sec, &old_gss);
	pthread_mutex_unlock(&s->lock);
	nfsd_gss_cb_put(sec.gss);
	nfsd_gss_cb_put(old_gss);
	return st;
}
