/* SPDX-License-Identifier: MIT */
/*
 * The client side of RFC 5531 on the engine's connections: xids, pipelined
 * calls, timeouts, reconnect with resend, and calls from a server to its
 * client on the client's own connection (the NFSv4.1 backchannel).
 *
 * A call is encoded once into its own buffer (kept for resending); it is
 * tracked in the connection's xid table until its reply, its timeout, or the
 * connection's end.  A flavor that builds calls itself (opts.auth,
 * RPCSEC_GSS) marshals a call again before each resend, checks every
 * accepted reply before its callback sees it, and may hold a call it was
 * refused for (cl->authwait) until it can be made again.  Everything here
 * runs on the loop thread except the entry points that post to it.
 */
#include "config.h"

#include <fcntl.h>
#include <semaphore.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <unistd.h>

#include "nfsd/engine.h"

#define CALL_COPY_MAX 2048 /* larger calls are referenced, see orphans */

struct nfsd_clnt {
	struct nfsd_server *eng;
	struct nfsd_loop *loop;
	struct sockaddr_storage sa;
	socklen_t salen;
	struct nfsd_clnt_opts opts;

	/* loop thread only */
	struct nfsd_conn *conn;
	struct nfsd_call *unsent, *unsent_tail; /* waiting for a connection */
	/* held by their flavor (NFSD_CLNT_AUTH_WAIT, retry()) until ready() */
	struct nfsd_call *authwait;
	uint64_t reconnect_at_ns;
	unsigned backoff_ms;
	bool closed;
	struct nfsd_clnt *next;

	atomic_uint reconnects;
	pthread_mutex_t lock; /* guards 'freed' for nfsd_clnt_free */
	pthread_cond_t cond;
	bool freed;
	struct nfsd_post_fn reg_fn, free_fn;
};

static unsigned xid_bucket(uint32_t xid)
{
	return (xid ^ (xid >> 6)) % NFSD_CALL_BUCKETS;
}

/* The call is over for its flavor (which may be freed once the caller has
 * its answer, even while the call's bytes wait to be freed). */
static void call_auth_end(struct nfsd_call *call)
{
	if (call->auth) {
		call->auth->end(call->auth_st);
		call->auth = NULL;
		call->auth_st = NULL;
	}
}

static void call_free(struct nfsd_loop *l, struct nfsd_call *call)
{
	call_auth_end(call);
	if (call->conn) {
		nfsd_conn_put(call->conn);
		call->conn = NULL;
	}
	if (call->cap > 4096) {
		free(call->msg);
		call->msg = NULL;
		call->cap = 0;
	}
	if (l && nfsd_loop_is_current(l)) {
		call->hnext = l->free_calls;
		l->free_calls = call;
	} else {
		free(call->msg);
		free(call);
	}
}

static void call_complete(struct nfsd_loop *l, struct nfsd_call *call, int err,
			  struct xdr_dec *res)
{
	nfsd_call_cb cb = call->cb;
	void *ctx = call->ctx;
	call_free(l, call);
	if (cb)
		cb(ctx, err, res);
}

/* A call left c's xid table. */
static void calls_dropped(struct nfsd_conn *c, const struct nfsd_call *call)
{
	c->ncalls--;
	c->nsinks -= call->sink.buf != NULL;
}

/* Put an encoded call on the wire of c and in its xid table. */
static bool call_send(struct nfsd_conn *c, struct nfsd_call *call)
{
	if (!nfsd_conn_queue_bytes(c, call->msg, call->len))
		return false;
	unsigned b = xid_bucket(call->xid);
	call->hnext = c->calls[b];
	c->calls[b] = call;
	c->ncalls++;
	c->nsinks += call->sink.buf != NULL;
	return true;
}

struct nfsd_call *nfsd_conn_call_find(struct nfsd_conn *c, uint32_t xid)
{
	for (struct nfsd_call *call = c->calls[xid_bucket(xid)]; call; call = call->hnext)
		if (call->xid == xid)
			return call;
	return NULL;
}

static struct nfsd_call *call_unhash(struct nfsd_conn *c, uint32_t xid)
{
	struct nfsd_call **pp = &c->calls[xid_bucket(xid)];
	for (; *pp; pp = &(*pp)->hnext) {
		struct nfsd_call *call = *pp;
		if (call->xid == xid) {
			*pp = call->hnext;
			call->hnext = NULL;
			calls_dropped(c, call);
			return call;
		}
	}
	return NULL;
}

static void clnt_queue_unsent(struct nfsd_clnt *cl, struct nfsd_call *call)
{
	call->hnext = NULL;
	if (cl->unsent_tail)
		cl->unsent_tail->hnext = call;
	else
		cl->unsent = call;
	cl->unsent_tail = call;
}

/*
 * A call whose flavor marshals it again before it goes on the wire (a
 * resend, or one its flavor held): true when it may be sent now; else it
 * is held again (cl->authwait) or has completed with the flavor's error.
 */
static bool call_resign(struct nfsd_loop *l, struct nfsd_call *call)
{
	if (!call->resign)
		return true;
	int rc = call->auth->marshal(call->auth, &call->auth_st, NULL, NULL, 0, 0, false,
				     &call->msg, &call->len, &call->cap);
	if (rc == NFSD_CLNT_AUTH_WAIT && call->clnt) {
		call->hnext = call->clnt->authwait;
		call->clnt->authwait = call;
		return false;
	}
	if (rc) {
		call_complete(l, call, rc < 0 ? rc : -EAGAIN, NULL);
		return false;
	}
	call->resign = false;
	return true;
}

static void clnt_send_unsent(struct nfsd_clnt *cl)
{
	struct nfsd_conn *c = cl->conn;
	while (cl->unsent && c && !c->dead && !c->connecting) {
		struct nfsd_call *call = cl->unsent;
		struct nfsd_call *next = call->hnext;
		if (call->resign) {
			cl->unsent = next;
			if (!next)
				cl->unsent_tail = NULL;
			if (!call_resign(c->loop, call))
				continue;
			call->hnext = next; /* back at the head, signed */
			cl->unsent = call;
			if (!next)
				cl->unsent_tail = call;
		}
		if (!call_send(c, call))
			break;
		cl->unsent = next;
		if (!next)
			cl->unsent_tail = NULL;
	}
}

/* Calls held by their flavor that may go now join the unsent ones. */
static void clnt_authwait_poll(struct nfsd_clnt *cl, uint64_t now)
{
	struct nfsd_call **pp = &cl->authwait;
	while (*pp) {
		struct nfsd_call *call = *pp;
		if (call->deadline_ns && call->deadline_ns <= now) {
			*pp = call->hnext;
			call_complete(cl->loop, call, -ETIMEDOUT, NULL);
		} else if (call->auth->ready(call->auth_st)) {
			*pp = call->hnext;
			clnt_queue_unsent(cl, call);
		} else {
			pp = &call->hnext;
		}
	}
	clnt_send_unsent(cl);
}

static void clnt_authwait_fail(struct nfsd_clnt *cl, int err)
{
	while (cl->authwait) {
		struct nfsd_call *call = cl->authwait;
		cl->authwait = call->hnext;
		call_complete(cl->loop, call, err, NULL);
	}
}

void nfsd_call_submit_local(struct nfsd_loop *l, struct nfsd_call *call)
{
	if (call->clnt) {
		struct nfsd_clnt *cl = call->clnt;
		if (cl->closed) {
			call_complete(l, call, -ECANCELED, NULL);
			return;
		}
		struct nfsd_conn *c = cl->conn;
		if (c && !c->dead && !c->connecting && !cl->unsent && !call->resign &&
		    call_send(c, call))
			return;
		clnt_queue_unsent(cl, call);
		if (call->resign)
			clnt_send_unsent(cl);
		return;
	}
	struct nfsd_conn *c = call->conn;
	if (!c || c->dead || !call_send(c, call))
		call_complete(l, call, c && !c->dead ? -ENOBUFS : -ECONNRESET, NULL);
}

/* Decode the reply header and hand the results to the call's callback. */
void nfsd_conn_handle_reply(struct nfsd_conn *c, uint32_t xid, uint8_t *rec, size_t len)
{
	struct nfsd_call *call = call_unhash(c, xid);
	if (!call)
		return; /* late or unknown: ignore */
	struct xdr_dec d;
	uint32_t x, stat, a, b;
	xdr_opaque verf;
	int err = 0;
	const struct nfsd_clnt_auth *auth = call->auth;
	xdr_dec_init(&d, rec, len, NULL);
	xdr_dec_uint32(&d, &x);
	xdr_dec_uint32(&d, &x);
	if (xdr_dec_uint32(&d, &stat)) {
		err = -EPROTO;
	} else if (stat == NFSD_MSG_ACCEPTED) {
		if (xdr_dec_uint32(&d, &a) || xdr_dec_opaque(&d, &verf, 400) ||
		    xdr_dec_uint32(&d, &b))
			err = -EPROTO;
		else if (auth && auth->reply(call->auth_st, a, &verf, b, &d))
			err = -EPROTO; /* not from the server, or altered on the way */
		else if (b != NFSD_SUCCESS)
			err = NFSD_CALL_ERR_ACCEPT | (int)(b & 0xff);
	} else if (stat == NFSD_MSG_DENIED) {
		if (xdr_dec_uint32(&d, &a) || xdr_dec_uint32(&d, &b)) {
			err = -EPROTO;
		} else if (a == NFSD_AUTH_ERROR && auth && auth->retry && call->clnt &&
			   !call->clnt->closed && auth->retry(call->auth_st, b)) {
			/* e.g. RPCSEC_GSS_CREDPROBLEM: a new context, then again */
			call->resign = true;
			call->hnext = call->clnt->authwait;
			call->clnt->authwait = call;
			clnt_authwait_poll(call->clnt, nfsd_now_ns());
			return;
		} else {
			err = NFSD_CALL_ERR_DENIED |
			      (a == NFSD_RPC_MISMATCH ? 0xff : (int)(b & 0xff));
		}
	} else {
		err = -EPROTO;
	}
	call_complete(c->loop, call, err, err ? NULL : &d);
}

void nfsd_conn_fail_calls(struct nfsd_conn *c, int err)
{
	for (unsigned b = 0; b < NFSD_CALL_BUCKETS; b++) {
		while (c->calls[b]) {
			struct nfsd_call *call = c->calls[b];
			c->calls[b] = call->hnext;
			calls_dropped(c, call);
			if (call->clnt && call->clnt->opts.reconnect && !call->clnt->closed) {
				/* resend, same xid (its flavor may sign it afresh) */
				call->resign = call->auth != NULL;
				clnt_queue_unsent(call->clnt, call);
			} else
				call_complete(c->loop, call, err, NULL);
		}
	}
}

/* ------------------------------------------------------------ timers */

static bool expired(struct nfsd_call *call, uint64_t now)
{
	return call->deadline_ns && call->deadline_ns <= now;
}

static void clnt_connect(struct nfsd_clnt *cl);

void nfsd_loop_tick_calls(struct nfsd_loop *l)
{
	uint64_t now = l->now_ns ? l->now_ns : nfsd_now_ns();
	struct nfsd_conn *stuck[16];
	unsigned nstuck = 0;
	for (struct nfsd_conn *c = l->conns; c; c = c->next) {
		if (!c->ncalls)
			continue;
		for (unsigned b = 0; b < NFSD_CALL_BUCKETS; b++) {
			struct nfsd_call **pp = &c->calls[b];
			while (*pp) {
				struct nfsd_call *call = *pp;
				if (!expired(call, now)) {
					pp = &call->hnext;
					continue;
				}
				if (c->div.on && c->div.call == call) {
					/* its reply is arriving in the caller's buffer
					 * (an io_uring receive may be writing there):
					 * end the connection, and the call with it
					 * once nothing is in flight */
					if (!c->dead && nstuck < 16) {
						nfsd_conn_get(c);
						stuck[nstuck++] = c;
					}
					pp = &call->hnext;
					continue;
				}
				*pp = call->hnext;
				calls_dropped(c, call);
				if (call->len > CALL_COPY_MAX) {
					/* Its bytes may still be queued by reference:
					 * answer now, free with the connection. */
					nfsd_call_cb cb = call->cb;
					void *ctx = call->ctx;
					call->cb = NULL;
					call_auth_end(call);
					call->hnext = c->orphans;
					c->orphans = call;
					if (cb)
						cb(ctx, -ETIMEDOUT, NULL);
				} else {
					call_complete(l, call, -ETIMEDOUT, NULL);
				}
			}
		}
	}
	for (unsigned i = 0; i < nstuck; i++) {
		nfsd_conn_kill(stuck[i]);
		nfsd_conn_put(stuck[i]);
	}
	for (struct nfsd_clnt *cl = l->clnts; cl; cl = cl->next) {
		struct nfsd_call **pp = &cl->unsent;
		cl->unsent_tail = NULL;
		while (*pp) {
			struct nfsd_call *call = *pp;
			if (expired(call, now)) {
				*pp = call->hnext;
				call_complete(l, call, -ETIMEDOUT, NULL);
			} else {
				cl->unsent_tail = call;
				pp = &call->hnext;
			}
		}
		if (cl->authwait)
			clnt_authwait_poll(cl, now);
		if (!cl->conn && !cl->closed && cl->opts.reconnect && now >= cl->reconnect_at_ns)
			clnt_connect(cl);
		else if (cl->conn)
			clnt_send_unsent(cl);
	}
}

void nfsd_conn_free_orphans(struct nfsd_conn *c)
{
	while (c->orphans) {
		struct nfsd_call *call = c->orphans;
		c->orphans = call->hnext;
		call_free(c->loop, call);
	}
}

/* ------------------------------------------------------------ clients */

void nfsd_clnt_conn_ready(struct nfsd_conn *c)
{
	struct nfsd_clnt *cl = c->clnt;
	cl->backoff_ms = 0;
	clnt_send_unsent(cl);
}

void nfsd_clnt_conn_drained(struct nfsd_conn *c)
{
	if (c->clnt && c->clnt->conn == c)
		clnt_send_unsent(c->clnt);
}

void nfsd_clnt_conn_dead(struct nfsd_conn *c)
{
	struct nfsd_clnt *cl = c->clnt;
	if (cl->conn != c)
		return;
	cl->conn = NULL;
	c->clnt = NULL;
	nfsd_conn_put(c); /* the client's reference */
	if (cl->closed || !cl->opts.reconnect ||
	    (cl->opts.fail_unreachable && c->connect_failed)) {
		/* No reconnect, or none possible now: everything waiting fails */
		int err = cl->closed || !cl->opts.reconnect ? -ECONNRESET : -ECONNREFUSED;
		while (cl->unsent) {
			struct nfsd_call *call = cl->unsent;
			cl->unsent = call->hnext;
			call_complete(c->loop, call, err, NULL);
		}
		cl->unsent_tail = NULL;
		clnt_authwait_fail(cl, err);
		if (cl->closed || !cl->opts.reconnect)
			return;
	}
	cl->backoff_ms = cl->backoff_ms ? cl->backoff_ms * 2 : 50;
	if (cl->backoff_ms > 2000)
		cl->backoff_ms = 2000;
	cl->reconnect_at_ns = nfsd_now_ns() + cl->backoff_ms * 1000000ull;
}

/* bindresvport(3): the highest free port in 665..1023, as the kernel's
 * client picks them (665: below it sit well-known services). */
static int clnt_bind_resv(int fd, sa_family_t fam, const struct sockaddr_storage *src)
{
	for (int port = IPPORT_RESERVED - 1; port >= 665; port--) {
		struct sockaddr_storage ss = { .ss_family = fam };
		socklen_t len;
		if (src->ss_family == fam)
			ss = *src;
		if (fam == AF_INET6) {
			((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)port);
			len = sizeof(struct sockaddr_in6);
		} else {
			((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)port);
			len = sizeof(struct sockaddr_in);
		}
		if (!bind(fd, (struct sockaddr *)&ss, len))
			return 0;
		if (errno != EADDRINUSE)
			return -errno;
	}
	return -EADDRINUSE;
}

static int clnt_socket(struct nfsd_clnt *cl, bool nonblock, int *fdp)
{
	int fd = socket(cl->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0),
			0);
	if (fd < 0)
		return -errno;
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (cl->opts.resvport) {
		int rc = clnt_bind_resv(fd, cl->sa.ss_family, &cl->opts.src);
		if (rc) {
			close(fd);
			return rc;
		}
	} else if (cl->opts.src.ss_family == cl->sa.ss_family) {
		struct sockaddr_storage ss = cl->opts.src;
		socklen_t len = sizeof(struct sockaddr_in);
		if (ss.ss_family == AF_INET6) {
			((struct sockaddr_in6 *)&ss)->sin6_port = 0;
			len = sizeof(struct sockaddr_in6);
		} else {
			((struct sockaddr_in *)&ss)->sin_port = 0;
		}
		if (bind(fd, (struct sockaddr *)&ss, len) < 0) {
			int e = -errno;
			close(fd);
			return e;
		}
	}
	struct timeval tv = {.tv_sec = cl->opts.connect_timeout_ms / 1000,
			     .tv_usec = (cl->opts.connect_timeout_ms % 1000) * 1000};
	bool bounded = !nonblock && cl->opts.connect_timeout_ms;
	if (bounded) /* Linux: SO_SNDTIMEO bounds a blocking connect */
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&cl->sa, cl->salen) < 0 && errno != EINPROGRESS) {
		int e = -errno;
		close(fd);
		return e;
	}
	if (bounded) {
		tv = (struct timeval){0, 0};
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	if (!nonblock && cl->eng->backend == NFSD_BACKEND_EPOLL)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	*fdp = fd;
	return 0;
}

static struct nfsd_conn *clnt_conn_new(struct nfsd_clnt *cl, int fd)
{
	struct nfsd_conn *c = nfsd_conn_new(cl->loop, fd);
	if (!c)
		return NULL;
	c->clnt = cl;
	c->bc_prog = cl->opts.backchannel;
	c->bc_priv = cl->opts.backchannel_priv;
	nfsd_conn_get(c); /* the client's reference */
	return c;
}

/* Reconnect from the loop: a non-blocking connect completed by the loop. */
static void clnt_connect(struct nfsd_clnt *cl)
{
	int fd;
	if (clnt_socket(cl, true, &fd) < 0) {
		cl->backoff_ms = cl->backoff_ms ? cl->backoff_ms * 2 : 50;
		if (cl->backoff_ms > 2000)
			cl->backoff_ms = 2000;
		cl->reconnect_at_ns = nfsd_now_ns() + cl->backoff_ms * 1000000ull;
		return;
	}
	struct nfsd_conn *c = clnt_conn_new(cl, fd);
	if (!c) {
		close(fd);
		return;
	}
	atomic_fetch_add(&cl->reconnects, 1);
	cl->conn = c;
	c->connecting = true;
	nfsd_loop_add_conn(cl->loop, c);
}

static void clnt_register(struct nfsd_loop *l, void *arg)
{
	struct nfsd_clnt *cl = arg;
	cl->next = l->clnts;
	l->clnts = cl;
	if (cl->conn)
		nfsd_loop_add_conn(l, cl->conn);
}

struct nfsd_clnt *nfsd_clnt_new(struct nfsd_server *eng, const struct sockaddr *sa,
				socklen_t len, const struct nfsd_clnt_opts *opts, int *err)
{
	struct nfsd_clnt *cl = calloc(1, sizeof(*cl));
	if (!cl) {
		*err = -ENOMEM;
		return NULL;
	}
	cl->eng = eng;
	cl->loop = &eng->loops[atomic_fetch_add(&eng->rr, 1) % eng->nloops];
	memcpy(&cl->sa, sa, len);
	cl->salen = len;
	if (opts)
		cl->opts = *opts;
	pthread_mutex_init(&cl->lock, NULL);
	pthread_cond_init(&cl->cond, NULL);
	int fd;
	int rc = clnt_socket(cl, false, &fd); /* the first connect reports errors */
	if (rc < 0) {
		*err = rc;
		free(cl);
		return NULL;
	}
	cl->conn = clnt_conn_new(cl, fd);
	if (!cl->conn) {
		close(fd);
		free(cl);
		*err = -ENOMEM;
		return NULL;
	}
	cl->reg_fn = (struct nfsd_post_fn){ .fn = clnt_register, .arg = cl };
	nfsd_loop_post_fn(cl->loop, &cl->reg_fn);
	return cl;
}

static void clnt_close(struct nfsd_loop *l, void *arg)
{
	struct nfsd_clnt *cl = arg;
	cl->closed = true;
	while (cl->unsent) {
		struct nfsd_call *call = cl->unsent;
		cl->unsent = call->hnext;
		call_complete(l, call, -ECANCELED, NULL);
	}
	cl->unsent_tail = NULL;
	clnt_authwait_fail(cl, -ECANCELED);
	if (cl->conn) {
		struct nfsd_conn *c = cl->conn;
		nfsd_conn_fail_calls(c, -ECANCELED);
		nfsd_conn_kill(c); /* calls nfsd_clnt_conn_dead once closed */
		if (cl->conn == c) {
			/* Close still in flight: detach now. */
			cl->conn = NULL;
			c->clnt = NULL;
			nfsd_conn_put(c);
		}
	}
	for (struct nfsd_clnt **pp = &l->clnts; *pp; pp = &(*pp)->next)
		if (*pp == cl) {
			*pp = cl->next;
			break;
		}
	pthread_mutex_lock(&cl->lock);
	cl->freed = true;
	pthread_cond_broadcast(&cl->cond);
	pthread_mutex_unlock(&cl->lock);
}

/* Not from a loop thread.  Pending calls complete with -ECANCELED. */
void nfsd_clnt_free(struct nfsd_clnt *cl)
{
	if (!cl)
		return;
	cl->free_fn = (struct nfsd_post_fn){ .fn = clnt_close, .arg = cl };
	nfsd_loop_post_fn(cl->loop, &cl->free_fn);
	pthread_mutex_lock(&cl->lock);
	while (!cl->freed)
		pthread_cond_wait(&cl->cond, &cl->lock);
	pthread_mutex_unlock(&cl->lock);
	pthread_mutex_destroy(&cl->lock);
	pthread_cond_destroy(&cl->cond);
	free(cl);
}

unsigned nfsd_clnt_reconnects(const struct nfsd_clnt *cl)
{
	return atomic_load(&((struct nfsd_clnt *)cl)->reconnects);
}

/* ------------------------------------------------------------ encoding */

static struct nfsd_call *call_new(struct nfsd_loop *l)
{
	struct nfsd_call *call = NULL;
	if (nfsd_loop_is_current(l) && l->free_calls) {
		call = l->free_calls;
		l->free_calls = call->hnext;
		uint8_t *msg = call->msg;
		size_t cap = call->cap;
		memset(call, 0, sizeof(*call));
		call->msg = msg;
		call->cap = cap;
		return call;
	}
	return calloc(1, sizeof(*call));
}

/* Is this thread one of eng's loops (where a call may not block)? */
static bool eng_on_loop(const struct nfsd_server *eng)
{
	for (unsigned i = 0; i < eng->nloops; i++)
		if (nfsd_loop_is_current(&eng->loops[i]))
			return true;
	return false;
}

/* A call of a flavor that builds it (opts.auth): the header and the plain
 * arguments go to its marshal(). */
static int call_encode_auth(struct nfsd_call *call, const struct nfsd_call_opts *o,
			    bool may_wait)
{
	struct iovec iov[64];
	uint8_t scratch[1024], hdr[24];
	struct xdr_arena arena;
	struct xdr_enc e;
	xdr_put32(hdr, call->xid);
	xdr_put32(hdr + 4, NFSD_RPC_CALL);
	xdr_put32(hdr + 8, 2);
	xdr_put32(hdr + 12, o->prog);
	xdr_put32(hdr + 16, o->vers);
	xdr_put32(hdr + 20, o->proc);
	xdr_arena_init(&arena, NULL, 0, 64u << 20);
	xdr_enc_init(&e, iov, 64, scratch, sizeof(scratch), &arena);
	if (o->enc_args)
		o->enc_args(&e, o->args);
	int rc = e.err;
	if (!rc) {
		call->auth = o->auth;
		rc = o->auth->marshal(o->auth, &call->auth_st, hdr, e.iov, e.niov, e.len, may_wait,
				      &call->msg, &call->len, &call->cap);
		if (rc == NFSD_CLNT_AUTH_WAIT) {
			call->resign = true;
			rc = 0;
		}
	}
	xdr_arena_release(&arena);
	return rc;
}

static int call_encode(struct nfsd_server *eng, struct nfsd_call *call,
		       const struct nfsd_call_opts *o, unsigned timeout_ms, bool may_wait)
{
	struct iovec iov[64];
	uint8_t scratch[1024];
	struct xdr_arena arena;
	struct xdr_enc e;

	call->xid = atomic_fetch_add_explicit(&eng->xid_seed, 1, memory_order_relaxed);
	if (timeout_ms)
		call->deadline_ns = nfsd_now_ns() + timeout_ms * 1000000ull;
	if (o->auth)
		return call_encode_auth(call, o, may_wait);
	xdr_arena_init(&arena, NULL, 0, 64u << 20);
	xdr_enc_init(&e, iov, 64, scratch, sizeof(scratch), &arena);
	uint8_t *mark = xdr_enc_reserve(&e, 4);
	xdr_enc_uint32(&e, call->xid);
	xdr_enc_uint32(&e, NFSD_RPC_CALL);
	xdr_enc_uint32(&e, 2);
	xdr_enc_uint32(&e, o->prog);
	xdr_enc_uint32(&e, o->vers);
	xdr_enc_uint32(&e, o->proc);
	if (o->flavor == NFSD_AUTH_SYS) {
		const char *m = o->machine ? o->machine : "braid";
		xdr_string ms = xdr_string_of(m);
		uint32_t n = o->ngids > 16 ? 16 : o->ngids;
		uint32_t blen = 4 + 4 + ((ms.len + 3) & ~3u) + 4 + 4 + 4 + 4 * n;
		xdr_enc_uint32(&e, NFSD_AUTH_SYS);
		xdr_enc_uint32(&e, blen);
		xdr_enc_uint32(&e, 0);
		xdr_enc_string(&e, &ms, 255);
		xdr_enc_uint32(&e, o->uid);
		xdr_enc_uint32(&e, o->gid);
		xdr_enc_uint32(&e, n);
		for (uint32_t i = 0; i < n; i++)
			xdr_enc_uint32(&e, o->gids[i]);
	} else if (o->sign) {
		uint8_t body[64];
		size_t blen = o->cred(o->sign_ctx, body);
		xdr_enc_uint32(&e, o->flavor);
		xdr_opaque b = xdr_opaque_of(body, blen);
		xdr_enc_opaque(&e, &b, sizeof(body));
	} else {
		xdr_enc_uint32(&e, NFSD_AUTH_NONE);
		xdr_enc_uint32(&e, 0);
	}
	size_t verf_off = e.len - 4 + 8; /* from the xid: after the verifier's flavor and length */
	if (o->sign) {
		static const uint8_t zero[64];
		xdr_enc_uint32(&e, o->flavor);
		xdr_opaque v = xdr_opaque_of(zero, o->verf_len > 64 ? 64 : o->verf_len);
		xdr_enc_opaque(&e, &v, 64);
	} else {
		xdr_enc_uint32(&e, NFSD_AUTH_NONE);
		xdr_enc_uint32(&e, 0);
	}
	if (o->enc_args)
		o->enc_args(&e, o->args);
	int rc = e.err;
	if (!rc && (mark == NULL || e.len - 4 > 0x7fffffffu))
		rc = -EMSGSIZE;
	if (!rc) {
		xdr_put32(mark, NFSD_REC_LAST | (uint32_t)(e.len - 4));
		if (call->cap < e.len) {
			free(call->msg);
			call->cap = e.len < 256 ? 256 : e.len;
			call->msg = malloc(call->cap);
			if (!call->msg) {
				call->cap = 0;
				rc = -ENOMEM;
			}
		}
		if (!rc) {
			xdr_enc_flatten(&e, call->msg);
			call->len = e.len;
			if (o->sign)
				o->sign(o->sign_ctx, call->msg + 4, e.len - 4, verf_off,
					o->verf_len > 64 ? 64 : o->verf_len);
		}
	}
	xdr_arena_release(&arena);
	return rc;
}

int nfsd_clnt_call_async(struct nfsd_clnt *cl, const struct nfsd_call_opts *o, nfsd_call_cb cb,
			 void *ctx)
{
	struct nfsd_call *call = call_new(cl->loop);
	if (!call)
		return -ENOMEM;
	int rc = call_encode(cl->eng, call, o, o->timeout_ms ? o->timeout_ms : cl->opts.timeout_ms,
			     !eng_on_loop(cl->eng));
	if (rc < 0) {
		if (call->auth)
			call->auth->end(call->auth_st);
		free(call->msg);
		free(call);
		return rc;
	}
	call->clnt = cl;
	call->cb = cb;
	call->ctx = ctx;
	if (o->sink && o->sink->buf && o->sink->len && o->sink->locate &&
	    !(o->auth && o->auth->wraps_results)) {
		call->sink = *o->sink;
		if (call->sink.got)
			*call->sink.got = 0;
	}
	if (nfsd_loop_is_current(cl->loop))
		nfsd_call_submit_local(cl->loop, call);
	else
		nfsd_loop_post_call(cl->loop, call);
	return 0;
}

int nfsd_conn_call_async(struct nfsd_conn *conn, const struct nfsd_call_opts *o,
			 nfsd_call_cb cb, void *ctx)
{
	struct nfsd_call *call = call_new(conn->loop);
	if (!call)
		return -ENOMEM;
	int rc = call_encode(conn->loop->srv, call, o, o->timeout_ms, false);
	if (!rc && call->resign)
		rc = -EAGAIN; /* its flavor is not ready: nothing holds such calls here */
	if (rc < 0) {
		if (call->auth)
			call->auth->end(call->auth_st);
		free(call->msg);
		free(call);
		return rc;
	}
	nfsd_conn_get(conn);
	call->conn = conn;
	call->cb = cb;
	call->ctx = ctx;
	if (nfsd_loop_is_current(conn->loop))
		nfsd_call_submit_local(conn->loop, call);
	else
		nfsd_loop_post_call(conn->loop, call);
	return 0;
}

/* ------------------------------------------------------------ sync calls */

/* Completed by a semaphore, not a mutex and condition: the waiter is woken
 * once (a condition signalled under its mutex wakes it into the held mutex
 * and again at the unlock), and glibc's sem_post may be followed at once by
 * the waiter's return, which ends the semaphore's life on its stack. */
struct sync_call {
	sem_t sem;
	int err;
	xdr_dec_fn dec;
	void *res;
	struct xdr_arena *arena;
};

static void sync_cb(void *ctx, int err, struct xdr_dec *d)
{
	struct sync_call *s = ctx;
	if (!err && s->dec) {
		/* The receive buffer is reused once this returns: with an arena,
		 * decode from a copy in it, so opaques and strings in the
		 * results stay valid as long as the arena. */
		struct xdr_dec dc = *d;
		size_t n = xdr_dec_left(d);
		uint8_t *copy = s->arena ? xdr_arena_alloc(s->arena, n ? n : 1) : NULL;
		if (s->arena && !copy) {
			err = -ENOMEM;
		} else {
			if (copy) {
				memcpy(copy, d->p, n);
				xdr_dec_init(&dc, copy, n, s->arena);
			}
			dc.arena = s->arena;
			if (s->dec(&dc, s->res) < 0)
				err = -EBADMSG;
		}
	}
	s->err = err;
	sem_post(&s->sem);
}

int nfsd_clnt_call(struct nfsd_clnt *cl, const struct nfsd_call_opts *o, xdr_dec_fn dec_res,
		   void *res, struct xdr_arena *arena)
{
	struct sync_call s = { .dec = dec_res, .res = res, .arena = arena };
	if (nfsd_loop_is_current(cl->loop))
		return -EDEADLK;
	sem_init(&s.sem, 0, 0);
	int rc = nfsd_clnt_call_async(cl, o, sync_cb, &s);
	if (rc == 0) {
		while (sem_wait(&s.sem))
			; /* EINTR */
		rc = s.err;
	}
	sem_destroy(&s.sem);
	return rc;
}
