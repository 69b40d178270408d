/* SPDX-License-Identifier: MIT */
/*
 * Server side of RFC 5531: decode the call header, authenticate, find the
 * procedure, decode its arguments, run it (inline on the loop or on a
 * worker), and encode the reply.  Every error the RFC names gets its reply:
 * RPC_MISMATCH, AUTH_ERROR, PROG_UNAVAIL, PROG_MISMATCH, PROC_UNAVAIL,
 * GARBAGE_ARGS, SYSTEM_ERR.
 */
#include "config.h"

#include <stdlib.h>

#include "nfsd/drc.h"
#include "nfsd/engine.h"
#include "nfsd/metrics.h"
#include "nfsd/trace.h"

#define RPC_VERS 2
#define REPLY_COPY_MAX 2048 /* replies up to this size are copied, not held */

/* Start the reply: record mark, xid, REPLY, then MSG_ACCEPTED + verifier +
 * accept_stat (patched at the end), remembering where results begin. */
static void reply_begin(struct nfsd_req *r)
{
	struct xdr_enc *e = &r->enc;
	xdr_enc_init(e, r->iov, sizeof(r->iov) / sizeof(r->iov[0]), r->scratch,
		     sizeof(r->scratch), &r->arena);
	r->mark_p = xdr_enc_reserve(e, 4);
	xdr_enc_uint32(e, r->xid);
	xdr_enc_uint32(e, NFSD_RPC_REPLY);
}

static void reply_accepted(struct nfsd_req *r)
{
	struct xdr_enc *e = &r->enc;
	xdr_enc_uint32(e, NFSD_MSG_ACCEPTED);
	xdr_enc_uint32(e, r->rverf_flavor);
	xdr_enc_opaque(e, &r->rverf, 400);
	r->stat_p = xdr_enc_reserve(e, 4);
	r->res_niov = e->niov;
	r->res_len = e->len;
	r->res_buf = e->buf;
	r->res_buf_used = e->buf_used;
	r->res_buf_size = e->buf_size;
	r->res_iov_len = e->niov ? e->iov[e->niov - 1].iov_len : 0;
}

/* Drop any results encoded so far (the call failed after all). */
static void reply_rewind(struct nfsd_req *r)
{
	struct xdr_enc *e = &r->enc;
	e->niov = r->res_niov;
	e->len = r->res_len;
	e->buf = r->res_buf;
	e->buf_used = r->res_buf_used;
	e->buf_size = r->res_buf_size;
	if (e->niov)
		e->iov[e->niov - 1].iov_len = r->res_iov_len;
	e->err = 0;
}

size_t nfsd_req_res_len(const struct nfsd_req *r)
{
	return r->enc.len - r->res_len;
}

void nfsd_req_res_copy(const struct nfsd_req *r, void *dst)
{
	size_t skip = r->res_len;
	uint8_t *d = dst;
	for (unsigned i = 0; i < r->enc.niov; i++) {
		const uint8_t *p = r->enc.iov[i].iov_base;
		size_t n = r->enc.iov[i].iov_len;
		if (skip >= n) {
			skip -= n;
			continue;
		}
		memcpy(d, p + skip, n - skip);
		d += n - skip;
		skip = 0;
	}
}

int nfsd_req_res_take(struct nfsd_req *r, struct iovec *iov, unsigned max)
{
	size_t skip = r->res_len;
	unsigned n = 0;
	for (unsigned i = 0; i < r->enc.niov; i++) {
		uint8_t *p = r->enc.iov[i].iov_base;
		size_t len = r->enc.iov[i].iov_len;
		if (skip >= len) {
			skip -= len;
			continue;
		}
		if (n == max)
			return -ENOBUFS;
		iov[n++] = (struct iovec){p + skip, len - skip};
		skip = 0;
	}
	reply_rewind(r);
	/* what is encoded next goes to fresh scratch: theirs stays intact */
	r->enc.buf_size = r->enc.buf_used;
	return (int)n;
}

void nfsd_req_res_rewind(struct nfsd_req *r)
{
	reply_rewind(r);
}

static void reply_finish(struct nfsd_req *r)
{
	if (r->mark_p)
		xdr_put32(r->mark_p, NFSD_REC_LAST | (uint32_t)(r->enc.len - 4));
}

static void reply_denied(struct nfsd_req *r, uint32_t what, uint32_t a, uint32_t b)
{
	struct xdr_enc *e = &r->enc;
	r->denied = true;
	r->deny_stat = what;
	r->deny_auth = what == NFSD_AUTH_ERROR ? a : 0;
	xdr_enc_uint32(e, NFSD_MSG_DENIED);
	xdr_enc_uint32(e, what);
	xdr_enc_uint32(e, a);
	if (what == NFSD_RPC_MISMATCH)
		xdr_enc_uint32(e, b);
	reply_finish(r);
}

/* Accept_stat with no results, e.g. PROC_UNAVAIL. */
static void reply_status(struct nfsd_req *r, uint32_t stat)
{
	reply_rewind(r);
	xdr_put32(r->stat_p, stat);
	reply_finish(r);
}

static void reply_mismatch(struct nfsd_req *r, uint32_t lo, uint32_t hi)
{
	reply_status(r, NFSD_PROG_MISMATCH);
	xdr_enc_uint32(&r->enc, lo);
	xdr_enc_uint32(&r->enc, hi);
	reply_finish(r);
}

/* A call recorded in the reply cache is over: keep its results (before
 * the flavor wraps them), or forget it (no reply, or a failed one). */
static void drc_finish(struct nfsd_req *r, int status)
{
	if (!r->drc)
		return;
	uint8_t *buf = NULL;
	size_t len = nfsd_req_res_len(r);
	if (status == NFSD_SUCCESS && len <= NFSD_DRC_RES_MAX && (buf = malloc(len ? len : 1)))
		nfsd_req_res_copy(r, buf);
	nfsd_drc_end(r->drc, r->drc_key, buf, len);
	free(buf);
	r->drc = NULL;
}

/* Encode the handler's results (or its error) and close the reply. */
static void reply_complete(struct nfsd_req *r, int status)
{
	if (status == NFSD_SUCCESS && r->p->enc_res && r->res) {
		if (r->p->enc_res(&r->enc, r->res) < 0)
			status = NFSD_SYSTEM_ERR;
	} else if (status == NFSD_SUCCESS && r->enc.err) {
		status = NFSD_SYSTEM_ERR;
	}
	drc_finish(r, status);
	if (status == NFSD_SUCCESS && r->flavor && r->flavor->wrap && r->flavor->wrap(r) < 0)
		status = NFSD_SYSTEM_ERR;
	if (status != NFSD_SUCCESS) {
		reply_status(r, (uint32_t)status);
		return;
	}
	xdr_put32(r->stat_p, NFSD_SUCCESS);
	reply_finish(r);
}

void nfsd_svc_drain_backlog(struct nfsd_conn *c);

/* Append a finished reply to q[cur]: copy small ones, reference big ones. */
static bool outq_append(struct nfsd_conn *c, struct nfsd_req *r)
{
	struct nfsd_outq *q = &c->q[c->cur];
	struct xdr_enc *o = &q->enc;
	size_t len = r->enc.len;
	if (len <= REPLY_COPY_MAX) {
		if (o->buf_used + len > o->buf_size || o->niov + 1 >= o->maxiov)
			return false;
		uint8_t *p = xdr_enc_reserve(o, len);
		if (!p) {
			o->err = 0;
			return false;
		}
		xdr_enc_flatten(&r->enc, p);
		nfsd_req_free(c->loop, r);
		return true;
	}
	if (o->niov + r->enc.niov >= o->maxiov)
		return false;
	for (unsigned i = 0; i < r->enc.niov; i++)
		xdr_enc_ref(o, r->enc.iov[i].iov_base, r->enc.iov[i].iov_len);
	r->next = q->held;
	q->held = r;
	return true;
}

void nfsd_svc_queue_reply(struct nfsd_conn *c, struct nfsd_req *r)
{
	c->loop->st.replies++;
	if (c->dead) {
		nfsd_req_free(c->loop, r);
		return;
	}
	r->next = NULL;
	if (c->xprt->msg) {
		c->xprt->queue_reply(c, r);
		return;
	}
	if (!c->backlog && outq_append(c, r)) {
		nfsd_conn_mark_dirty(c);
		return;
	}
	if (c->backlog_tail)
		c->backlog_tail->next = r;
	else
		c->backlog = r;
	c->backlog_tail = r;
	c->nbacklog++;
}

void nfsd_svc_drain_backlog(struct nfsd_conn *c)
{
	while (c->backlog) {
		struct nfsd_req *r = c->backlog;
		struct nfsd_req *next = r->next;
		r->next = NULL;
		if (!outq_append(c, r)) {
			r->next = next;
			break;
		}
		c->backlog = next;
		c->nbacklog--;
		if (!next)
			c->backlog_tail = NULL;
	}
	if (c->q[c->cur].enc.len)
		nfsd_conn_mark_dirty(c);
}

static const struct nfsd_auth_flavor *flavor_find(struct nfsd_server *s, uint32_t f)
{
	for (unsigned i = 0; i < s->nflavors; i++)
		if (s->flavors[i]->flavor == f)
			return s->flavors[i];
	return NULL;
}

static const struct nfsd_program *prog_find(struct nfsd_conn *c, uint32_t prog)
{
	if (c->clnt || c->bc_prog)
		return c->bc_prog && c->bc_prog->prog == prog ? c->bc_prog : NULL;
	struct nfsd_server *s = c->loop->srv;
	for (unsigned i = 0; i < s->nprogs; i++)
		if (s->progs[i]->prog == prog)
			return s->progs[i];
	return NULL;
}

/* Count and time a call whose procedure was found (nfsd/metrics.h). */
static void svc_observe(struct nfsd_req *r, int status)
{
	struct nfsd_metrics *m = r->loop->srv->opts.metrics;
	if (m && r->p && status != NFSD_DROP)
		nfsd_metrics_rpc(m, r->prog, r->prog_name, r->vers, r->proc, r->p->name,
				 (uint32_t)status, nfsd_now_ns() - r->t0_ns);
}

/* Probe rpc__reply: r's reply is complete (docs/tracing.md).  Its status
 * is the accept_stat, or for MSG_DENIED (1 + reject_stat) << 8 | auth_stat. */
static void svc_trace_reply(const struct nfsd_req *r)
{
	uint32_t stat = r->denied   ? (1 + r->deny_stat) << 8 | r->deny_auth
			: r->stat_p ? xdr_get32(r->stat_p)
				    : 0;
	uint64_t us = BRAID_TRACE_ENABLED(rpc__reply) ? BRAID_TRACE_US(r->t0_ns, nfsd_now_ns()) : 0;
	BRAID_TRACE(rpc__reply, r->xid, r->prog, r->vers, r->proc, stat, us);
}

/* Run the procedure: on this thread (inline or worker). */
void nfsd_req_run(struct nfsd_req *r)
{
	int st = r->p->fn(r, r->args, r->res);
	if (st == NFSD_ASYNC)
		return;
	nfsd_req_done(r, st);
}

void nfsd_req_done(struct nfsd_req *r, int status)
{
	r->status = status;
	if (status != NFSD_DROP) {
		reply_complete(r, status);
		svc_trace_reply(r);
	} else {
		drc_finish(r, status);
	}
	svc_observe(r, status);
	nfsd_loop_post_req(r->loop, r);
}

void nfsd_svc_req_returned(struct nfsd_loop *l, struct nfsd_req *r)
{
	struct nfsd_conn *c = r->conn;
	nfsd_conn_get(c); /* freeing r drops its reference */
	c->reqs_out--;
	if (r->status == NFSD_DROP)
		nfsd_req_free(l, r);
	else
		nfsd_svc_queue_reply(c, r);
	nfsd_conn_resume(c);
	nfsd_conn_put(c);
}

void nfsd_req_payload(struct nfsd_req *r, const void *p, uint32_t len)
{
	if (r->pay_ptr || !len)
		return;
	r->pay_ptr = p;
	r->pay_len = len;
	r->enc.ref_always = p;
}

const char *nfsd_conn_xprt_name(const struct nfsd_conn *c)
{
	return c->xprt ? c->xprt->name : "?";
}

const struct sockaddr_storage *nfsd_req_peer(const struct nfsd_req *r)
{
	return &r->conn->peer;
}

int nfsd_req_local(const struct nfsd_req *r, struct sockaddr_storage *out)
{
	if (!r->conn || r->conn->fd < 0)
		return -ENOTSUP;
	socklen_t len = sizeof(*out);
	if (getsockname(r->conn->fd, (struct sockaddr *)out, &len) < 0)
		return -errno;
	return 0;
}

const struct sockaddr_storage *nfsd_conn_peer(const struct nfsd_conn *c)
{
	return &c->peer;
}

/*
 * A DRC procedure's call, decoded (args: its n bytes): a retransmission of
 * one answered gets those results (re-wrapped by the flavor), one still
 * running is to be dropped, a new one is recorded as running in r.
 */
static enum nfsd_drc_found drc_check(struct nfsd_req *r, struct nfsd_drc *drc,
				      const uint8_t *args, size_t n)
{
	struct nfsd_drc_key *key = xdr_arena_alloc(&r->arena, sizeof(*key));
	if (!key)
		return NFSD_DRC_NOMEM;
	nfsd_drc_key_of(r, args, n, key);
	uint8_t *res = NULL;
	size_t len = 0;
	enum nfsd_drc_found f = nfsd_drc_begin(drc, key, &res, &len);
	if (f == NFSD_DRC_NEW) {
		r->drc = drc;
		r->drc_key = key;
	} else if (f == NFSD_DRC_REPLIED) {
		xdr_enc_bytes(&r->enc, res, len);
		free(res);
		r->res = NULL;
		reply_complete(r, NFSD_SUCCESS);
	}
	return f;
}

void nfsd_svc_record(struct nfsd_conn *c, uint8_t *rec, size_t len)
{
	struct nfsd_loop *l = c->loop;
	struct xdr_dec d;
	uint32_t xid, mtype, rpcvers = 0, prog = 0, vers = 0, proc = 0, cflav = 0, vflav = 0;
	xdr_opaque cred, verf;

	xdr_dec_init(&d, rec, len, NULL);
	if (xdr_dec_uint32(&d, &xid) || xdr_dec_uint32(&d, &mtype)) {
		l->st.garbage++;
		return; /* not even an xid: nothing to answer */
	}
	if (mtype == NFSD_RPC_REPLY) {
		nfsd_conn_handle_reply(c, xid, rec, len);
		return;
	}
	if (mtype != NFSD_RPC_CALL) {
		l->st.garbage++;
		return;
	}
	l->st.calls++;
	struct nfsd_req *r = nfsd_req_alloc(l);
	if (!r)
		return;
	if (l->srv->opts.metrics || BRAID_TRACE_ENABLED(rpc__reply))
		r->t0_ns = nfsd_now_ns();
	r->conn = c;
	nfsd_conn_get(c);
	r->rbuf = c->rb;
	c->rb->refs++;
	r->xid = xid;
	r->rec = rec;
	r->rec_len = len;
	reply_begin(r);

	bool bad = xdr_dec_uint32(&d, &rpcvers) || xdr_dec_uint32(&d, &prog) ||
		   xdr_dec_uint32(&d, &vers) || xdr_dec_uint32(&d, &proc) ||
		   xdr_dec_uint32(&d, &cflav) || xdr_dec_opaque(&d, &cred, 400) ||
		   xdr_dec_uint32(&d, &vflav) || xdr_dec_opaque(&d, &verf, 400);
	BRAID_TRACE(rpc__recv, xid, prog, vers, proc, len);
	if (bad) {
		/* RFC 5531 §9: a header we cannot parse; the credential is
		 * what is malformed most often. */
		l->st.garbage++;
		reply_denied(r, NFSD_AUTH_ERROR, NFSD_AUTH_BADCRED, 0);
		goto queue;
	}
	if (rpcvers != RPC_VERS) {
		reply_denied(r, NFSD_RPC_MISMATCH, RPC_VERS, RPC_VERS);
		goto queue;
	}
	r->prog = prog;
	r->vers = vers;
	r->proc = proc;
	r->flavor = flavor_find(l->srv, cflav);
	r->cred.flavor = cflav;
	r->rverf_flavor = NFSD_AUTH_NONE;
	xdr_dec_init(&r->dec, d.p, xdr_dec_left(&d), &r->arena);
	if (!r->flavor) {
		l->st.auth_errors++;
		reply_denied(r, NFSD_AUTH_ERROR, NFSD_AUTH_BADCRED, 0);
		goto queue;
	}
	(void)vflav;
	int ast = r->flavor->accept(r, &cred, &verf);
	if (ast == NFSD_DROP) {
		l->st.auth_errors++;
		nfsd_req_free(l, r);
		return;
	}
	if (ast != NFSD_AUTH_OK) {
		l->st.auth_errors++;
		reply_denied(r, NFSD_AUTH_ERROR, (uint32_t)ast, 0);
		goto queue;
	}
	reply_accepted(r);

	const struct nfsd_program *pg = prog_find(c, prog);
	if (!pg) {
		reply_status(r, NFSD_PROG_UNAVAIL);
		goto queue;
	}
	r->priv = c->bc_prog == pg ? c->bc_priv : pg->priv;
	const struct nfsd_version *v = NULL;
	uint32_t lo = UINT32_MAX, hi = 0;
	for (unsigned i = 0; i < pg->nversions; i++) {
		const struct nfsd_version *x = &pg->versions[i];
		if (x->vers == vers)
			v = x;
		lo = x->vers < lo ? x->vers : lo;
		hi = x->vers > hi ? x->vers : hi;
	}
	if (!v) {
		reply_mismatch(r, lo, hi);
		goto queue;
	}
	if (proc >= v->nprocs || !v->procs[proc].name || !v->procs[proc].fn) {
		reply_status(r, NFSD_PROC_UNAVAIL);
		goto queue;
	}
	r->p = &v->procs[proc];
	r->prog_name = pg->name;
	if (v->priv && c->bc_prog != pg)
		r->priv = v->priv;
	if (r->flavor->unwrap && r->flavor->unwrap(r) < 0) {
		l->st.garbage++;
		reply_status(r, NFSD_GARBAGE_ARGS);
		svc_observe(r, NFSD_GARBAGE_ARGS);
		goto queue;
	}
	const uint8_t *args = r->dec.p;
	size_t args_len = xdr_dec_left(&r->dec);
	if (r->p->args_size) {
		r->args = xdr_arena_alloc(&r->arena, r->p->args_size);
		if (!r->args || !r->p->dec_args || r->p->dec_args(&r->dec, r->args) < 0) {
			l->st.garbage++;
			reply_status(r, NFSD_GARBAGE_ARGS);
			svc_observe(r, NFSD_GARBAGE_ARGS);
			goto queue;
		}
	}
	if (r->p->res_size) {
		r->res = xdr_arena_alloc(&r->arena, r->p->res_size);
		if (!r->res) {
			reply_status(r, NFSD_SYSTEM_ERR);
			svc_observe(r, NFSD_SYSTEM_ERR);
			goto queue;
		}
	}
	if (v->drc && (r->p->flags & NFSD_PROC_DRC)) {
		switch (drc_check(r, v->drc, args, args_len)) {
		case NFSD_DRC_RUNNING:
			nfsd_req_free(l, r);
			return;
		case NFSD_DRC_REPLIED:
			svc_observe(r, NFSD_SUCCESS);
			goto queue;
		default:
			break;
		}
	}
	bool gids = r->cred.flavor == NFSD_AUTH_SYS && l->srv->opts.manage_gids;
	/* group resolution may block: such a call goes to a worker */
	r->on_loop = (r->p->flags & NFSD_PROC_INLINE) ||
		     (!gids && r->p->inline_ok && r->p->inline_ok(r));
	if (gids && !r->on_loop)
		nfsd_auth_resolve_groups(r);
	c->reqs_out++;
	if ((r->p->flags & NFSD_PROC_BULK) && l->srv->opts.bulk_window) {
		r->bulk = true;
		atomic_fetch_add_explicit(&c->bulk_out, 1, memory_order_relaxed);
	}
	if (r->on_loop) {
		int st = r->p->fn(r, r->args, r->res);
		if (st == NFSD_ASYNC)
			return;
		c->reqs_out--;
		r->status = st;
		if (st == NFSD_DROP) {
			drc_finish(r, st);
			nfsd_req_free(l, r);
			return;
		}
		reply_complete(r, st);
		svc_observe(r, st);
		goto queue;
	}
	l->st.worker_reqs++;
	nfsd_workers_queue(l->srv, r);
	return;
queue:
	svc_trace_reply(r);
	nfsd_svc_queue_reply(c, r);
}

void nfsd_procs_bind(struct nfsd_proc *procs, unsigned nprocs, const struct xdr_vers_desc *desc)
{
	for (unsigned i = 0; i < nprocs && i < desc->nprocs; i++) {
		struct nfsd_proc *p = &procs[i];
		const struct xdr_proc_desc *d = &desc->procs[i];
		if (!p->fn)
			continue;
		p->dec_args = d->arg_size ? d->dec_arg : NULL;
		p->args_size = d->arg_size;
		p->enc_res = d->res_size ? d->enc_res : NULL;
		p->res_size = d->res_size;
	}
}
