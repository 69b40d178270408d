/* SPDX-License-Identifier: MIT */
/*
 * NFSv4.1/4.2 sessions: COMPOUND, client IDs, leases, sessions and slots.
 * The contract is in nfsd/nfs41.h; the records, their locks and what the
 * module's files share are in nfsd/nfs41_impl.h.  This file: the op table
 * and the COMPOUND dispatcher, SEQUENCE and the slots' reply cache,
 * GETFH/SAVEFH/RESTOREFH, and the server.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nfsd/metrics.h"
#include "nfsd/nfs41_impl.h"
#include "nfsd/trace.h"

/* ------------------------------------------------------------ records */

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
	uint64_t t = nfs41_fnv64(p + i, n - i);
	uint64_t r = rotl64(h0, 1) + rotl64(h1, 7) + rotl64(h2, 12) + rotl64(h3, 18) + t;
	r ^= r >> 33;
	r *= k2;
	r ^= r >> 29;
	return r;
}

/* ------------------------------------------------------------ filehandle ops */

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
	F_V40 = 1 << 11,	/* NFSv4.0 only: NFS4ERR_NOTSUPP in 4.1 and 4.2 (RFC 8881 §18) */
};

/* The module's rows; the embedder's table fills the rest (nfs41_server_new). */
static const struct {
	nfs41_op_fn fn;
	unsigned flags;
} builtin_ops[OP_MAX + 1] = {
    [OP_GETFH] = {op_getfh, NFS41_OP_NEEDS_FH | NFS41_OP_INLINE},
    [OP_OPEN_CONFIRM] = {NULL, F_V40},
    [OP_RENEW] = {nfs40_op_renew, F_V40},
    [OP_RESTOREFH] = {op_restorefh, NFS41_OP_INLINE},
    [OP_SAVEFH] = {op_savefh, NFS41_OP_NEEDS_FH | NFS41_OP_INLINE},
    [OP_SETCLIENTID] = {nfs40_op_setclientid, F_V40},
    [OP_SETCLIENTID_CONFIRM] = {nfs40_op_setclientid_confirm, F_V40},
    [OP_RELEASE_LOCKOWNER] = {NULL, F_V40},
    [OP_BACKCHANNEL_CTL] = {nfs41_op_backchannel_ctl, F_MODULE},
    [OP_BIND_CONN_TO_SESSION] = {nfs41_op_bind_conn, F_MODULE | F_SESSIONLESS | F_ALONE},
    [OP_EXCHANGE_ID] = {nfs41_op_exchange_id, F_MODULE | F_SESSIONLESS},
    [OP_CREATE_SESSION] = {nfs41_op_create_session, F_MODULE | F_SESSIONLESS},
    [OP_DESTROY_SESSION] = {nfs41_op_destroy_session, F_MODULE | F_SESSIONLESS},
    [OP_SEQUENCE] = {op_sequence, F_MODULE | NFS41_OP_INLINE},
    [OP_DESTROY_CLIENTID] = {nfs41_op_destroy_clientid, F_MODULE | F_SESSIONLESS},
    [OP_RECLAIM_COMPLETE] = {nfs41_op_reclaim_complete, 0},
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
	uint64_t ns = nfsd_now_ns() - t0;
	nfsd_metrics_nfs4_op(s->o.metrics, c->minorversion, op, nfs41_op_name((uint32_t)r->resop),
			     (uint32_t)st, ns, io ? &bytes : NULL);
	if (c->session) { /* held by the COMPOUND until its end */
		atomic_fetch_add_explicit(&c->session->ops, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&c->session->op_ns, ns, memory_order_relaxed);
		if (st)
			atomic_fetch_add_explicit(&c->session->op_errors, 1, memory_order_relaxed);
	}
}

/* Probe nfs4__op: op i of a COMPOUND has run (docs/tracing.md).  The
 * filehandle hash and the time are computed only while a tracer listens. */
static void op_trace(const struct nfs41_compound *c, const nfs_resop4 *r, nfsstat4 st, uint64_t t0)
{
	uint64_t fhh = 0, us = 0;
	if (BRAID_TRACE_ENABLED(nfs4__op)) {
		fhh = c->have_fh ? nfs41_fnv64(c->fh, c->fhlen) : 0;
		us = BRAID_TRACE_US(t0, nfsd_now_ns());
	}
	BRAID_TRACE(nfs4__op, c->req->xid, (uint32_t)r->resop, (uint32_t)st, us, c->clientid, fhh,
		    c->minorversion);
}

/* Operations of minor version 0 (RFC 7530), 1 (RFC 8881) and 2 (RFC 7862,
 * RFC 8276). */
static bool op_legal(uint32_t minor, int32_t op)
{
	int32_t max = minor == 0 ? OP_RELEASE_LOCKOWNER : minor == 1 ? OP_RECLAIM_COMPLETE : OP_MAX;
	return op >= OP_ACCESS && op <= max;
}

/* The minor versions this server answers. */
static bool minor_ok(const struct nfs41_server *s, uint32_t minor)
{
	return (minor >= 1 && minor <= 2) || (minor == 0 && s->o.v40);
}

/* Where an op may stand: SEQUENCE first (RFC 8881 §18.46.3), the
 * sessionless ops first and alone (§18.34.3 - §18.37.3, §18.50.3). */
static nfsstat4 op_position(uint32_t minor, int32_t op, unsigned i, unsigned n)
{
	if (op == OP_ILLEGAL)
		return NFS4ERR_OP_ILLEGAL;
	if (minor == 0)
		return NFS4_OK; /* no sessions (RFC 7530 §15.2) */
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
	struct nfs41_session *ss = nfs41_session_find_locked(s, sa->sa_sessionid);
	if (ss && nfs41_client_expired_locked(ss->clp, now)) {
		/* reaping may block: on the loop thread the next sweep (a
		 * worker's) does it; the session is as gone either way */
		if (!c->req->on_loop)
			nfs41_client_unlink_locked(s, ss->clp, &dead);
		ss = NULL;
	}
	bool sp4_allow = false;
	if (ss) {
		/* RFC 8881 §18.35.3, as knfsd's nfsd4_spo_must_allow */
		const struct nfs41_client *clp = ss->clp;
		if (clp->mach_cred && nfs41_client_princ_eq(clp, c->req))
			for (unsigned i = 1; i < x->nargs && !sp4_allow; i++) {
				uint32_t op = (uint32_t)x->args[i].argop;
				sp4_allow = op < 64 && (clp->allow[op / 32] >> (op % 32) & 1);
			}
		nfs41_session_get(ss);
		atomic_fetch_add(&ss->inflight, 1);
		ss->clp->expire_ns = now + nfs41_lease_ns(s);
		if (s->o.callbacks) {
			bool any = false;
			for (struct nfs41_session *o = ss->clp->sessions; o && !any; o = o->cnext)
				any = nfs41_session_back_locked(o) != NULL;
			if (!nfs41_session_back_locked(ss))
				status_flags |= SEQ4_STATUS_CB_PATH_DOWN_SESSION;
			if (!any)
				status_flags |= SEQ4_STATUS_CB_PATH_DOWN;
			/* RFC 8881 §18.46.3: the back channel's GSS context
			 * ended, or ends within a lease */
			int g = ss->cb_gss ? nfsd_gss_cb_check(ss->cb_gss, nfs41_lease_ns(s)) : 0;
			if (g < 0)
				status_flags |= SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRED;
			else if (g > 0)
				status_flags |= SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRING;
		}
	}
	pthread_mutex_unlock(&s->lock);
	nfs41_client_reap(s, dead);
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
	c->req->cred.sp4_allow = sp4_allow;
	c->slotid = sa->sa_slotid;
	if (s->o.status_flags)
		status_flags |= s->o.status_flags(s->o.priv, ss->clientid);
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
		ss->clp->expire_ns = nfsd_now_ns() + nfs41_lease_ns(s);
	pthread_mutex_unlock(&s->lock);
	nfs41_session_put(ss);
}

/* Run op i (position, filehandle and reply-size checks, then the handler). */
static nfsstat4 op_run(struct nfs41_server *s, struct cpd *x, nfs_argop4 *a, nfs_resop4 *r,
		       size_t cur_len)
{
	struct nfs41_compound *c = &x->c;
	int32_t op = a->argop;
	c->v40_op = NULL; /* v40_begin's, for v40_end */
	nfsstat4 st = op_position(c->minorversion, op, c->opidx, c->nops);
	if (st)
		return st;
	const struct nfs41_op *d = c->minorversion == 0 ? &s->table40[op] : &s->table[op];
	if (!d->fn)
		return NFS4ERR_NOTSUPP;
	if ((d->flags & NFS41_OP_NEEDS_FH) && !c->have_fh)
		return NFS4ERR_NOFILEHANDLE;
	if (c->minorversion == 0 && s->o.v40_begin) {
		bool done = false;
		st = s->o.v40_begin(c, a, r, &done);
		if (done)
			return st;
	}
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
	for (; got < ndec && minor_ok(s, minor); got++) {
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
	if (!minor_ok(s, minor)) {
		xdr_put32(status_p, (uint32_t)NFS4ERR_MINOR_VERS_MISMATCH);
		xdr_put32(count_p, 0);
		return NFSD_SUCCESS;
	}

	/* lazy lease expiry of every client, at most every SWEEP_INTERVAL_NS */
	uint64_t now = nfsd_now_ns();
	if (!req->on_loop && now >= atomic_load_explicit(&s->next_sweep_ns, memory_order_relaxed)) {
		struct nfs41_client *dead = NULL;
		pthread_mutex_lock(&s->lock);
		nfs41_client_sweep_locked(s, now, &dead);
		pthread_mutex_unlock(&s->lock);
		nfs41_client_reap(s, dead);
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
		uint64_t t0 = s->o.metrics || BRAID_TRACE_ENABLED(nfs4__op) ? nfsd_now_ns() : 0;
		status = op_run(s, x, &args[i], &r, e->len - res_off + hdr);
		if (x->replay) {
			if (s->o.metrics)
				op_observe(s, c, &r, status, t0);
			op_trace(c, &r, status, t0);
			/* a retry of a cached request: its reply, byte for byte */
			enc_rewind(e, &start);
			xdr_enc_bytes(e, x->replay, x->replay_len);
			return e->err ? NFSD_SYSTEM_ERR : NFSD_SUCCESS;
		}
		res_set_status(&r, status);
		if (minor == 0 && s->o.v40_end && args[i].argop != OP_ILLEGAL)
			s->o.v40_end(c, &args[i], &r, status);
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
		op_trace(c, &r, status, t0);
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

/* nfsd_proc.inline_ok: a 4.1+ COMPOUND whose ops all have NFS41_OP_INLINE,
 * while no lease sweep (whose reaping may block) is due.  Decodes the ops
 * into scratch from the arena; the worker or the loop decodes them again. */
static bool compound_inline_ok(struct nfsd_req *req)
{
	struct nfs41_server *s = req->priv;
	struct xdr_dec d = req->dec;
	utf8string tag;
	uint32_t minor, n;
	if (xdr_dec_utf8string(&d, &tag) || xdr_dec_uint32(&d, &minor) ||
	    xdr_dec_uint32(&d, &n) || minor == 0 || !minor_ok(s, minor) || !n ||
	    n > s->o.max_ops)
		return false;
	if (nfsd_now_ns() >= atomic_load_explicit(&s->next_sweep_ns, memory_order_relaxed))
		return false;
	if (s->o.inline_ok && !s->o.inline_ok(s->o.priv, req))
		return false;
	for (uint32_t i = 0; i < n; i++) {
		nfs_argop4 a;
		if (xdr_dec_left(&d) < 4)
			return false;
		int32_t op = (int32_t)xdr_get32(d.p);
		if (!op_legal(minor, op) || !(s->table[op].flags & NFS41_OP_INLINE) ||
		    xdr_dec_nfs_argop4(&d, &a))
			return false;
	}
	return true;
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
			    (struct nfs41_op){builtin_ops[i].fn, f & (NFS41_OP_NEEDS_FH | NFS41_OP_INLINE), NULL};
	}
	/* minor version 0: the same, with the 4.0-only operations (RFC 7530) */
	for (unsigned i = 0; o->v40 && i <= OP_MAX_V40; i++) {
		unsigned f = builtin_ops[i].flags;
		s->table40[i] = s->table[i];
		if (!(f & F_V40))
			continue;
		if (builtin_ops[i].fn)
			s->table40[i] = (struct nfs41_op){builtin_ops[i].fn, 0, NULL};
		else if (i < o->nops && o->ops && o->ops[i].fn)
			s->table40[i] = o->ops[i];
	}
	s->impl_id.nii_domain = xdr_string_of("braid");
	s->impl_id.nii_name = xdr_string_of(PACKAGE_NAME " " PACKAGE_VERSION);
	s->procs[0] =
	    (struct nfsd_proc){.name = "NULL", .fn = proc_null, .flags = NFSD_PROC_INLINE};
	s->procs[1] = (struct nfsd_proc){
	    .name = "COMPOUND", .fn = proc_compound, .inline_ok = compound_inline_ok};
	s->vers = (struct nfsd_version){.vers = 4, .procs = s->procs, .nprocs = 2, .priv = s};
	s->prog = (struct nfsd_program){
	    .prog = NFS4_PROGRAM, .name = "nfs4", .versions = &s->vers, .nversions = 1, .priv = s};
	pthread_mutex_init(&s->lock, NULL);
	s->boot = (uint32_t)time(NULL);
	s->next_id = nfs41_rand32();
	s->next_sess = nfs41_rand32();
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
			nfs41_client_unlink_locked(s, s->by_id[b], &dead);
	while (dead) {
		struct nfs41_client *next = dead->dnext;
		nfs41_client_free(dead);
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

bool nfs41_compound_ran_op(const struct nfs41_compound *c, int32_t op)
{
	const struct cpd *x = (const struct cpd *)c;
	for (unsigned i = 0; i < c->opidx && i < x->nargs; i++)
		if ((int32_t)x->args[i].argop == op)
			return true;
	return false;
}

nfsstat4 nfs41_compound_stateid(struct nfs41_compound *c, stateid4 *sid)
{
	static const uint8_t zero[NFS4_OTHER_SIZE];
	if (c->minorversion == 0)
		return NFS4_OK; /* 4.0 has no current stateid */
	if (sid->seqid != 1 || memcmp(sid->other, zero, sizeof(zero)))
		return NFS4_OK;
	if (!c->have_cur_stateid)
		return NFS4ERR_BAD_STATEID;
	*sid = c->cur_stateid;
	return NFS4_OK;
}

void nfs41_server_sweep(struct nfs41_server *s)
{
	uint64_t now = nfsd_now_ns();
	if (now < atomic_load_explicit(&s->next_sweep_ns, memory_order_relaxed))
		return;
	struct nfs41_client *dead = NULL;
	pthread_mutex_lock(&s->lock);
	nfs41_client_sweep_locked(s, now, &dead);
	pthread_mutex_unlock(&s->lock);
	nfs41_client_reap(s, dead);
}
