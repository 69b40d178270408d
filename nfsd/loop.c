/* SPDX-License-Identifier: MIT */
/*
 * Event loops and TCP connections.  One loop thread per core owns the
 * connections it was given; loop 0 also accepts and spreads new connections
 * round robin.  Two backends share all connection logic: io_uring (one
 * submit-and-wait per iteration, recv/sendmsg operations) and epoll (chosen
 * at run time when io_uring is unavailable, or forced for tests).
 *
 * Batching: one receive yields every complete record in the buffer; every
 * reply produced in an iteration goes out in one sendmsg per connection.
 */
#include "config.h"

#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nfsd/engine.h"

#define TICK_MS 50
#define URING_ENTRIES 2048
#define FREE_REQS_MAX 256

void nfsd_server_opts_default(struct nfsd_server_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->max_record = (1u << 20) + (64u << 10);
	o->max_conn_reqs = 128;
	o->arena_limit = 4u << 20;
	o->gid_cache_ttl_s = 300;
}

/* ------------------------------------------------------------ buffers */

static struct nfsd_rbuf *rbuf_new(size_t cap)
{
	struct nfsd_rbuf *rb = malloc(sizeof(*rb) + cap);
	if (!rb)
		return NULL;
	rb->refs = 1;
	rb->cap = cap;
	rb->release = NULL;
	return rb;
}

void nfsd_rbuf_put(struct nfsd_rbuf *rb)
{
	if (rb && --rb->refs == 0) {
		if (rb->release)
			rb->release(rb);
		else
			free(rb);
	}
}

static void outq_reset(struct nfsd_outq *q)
{
	xdr_enc_init(&q->enc, q->iov, NFSD_OUT_IOV, q->scratch, NFSD_OUT_SCRATCH, NULL);
	q->sent = 0;
}

/* ------------------------------------------------------------ requests */

struct nfsd_req *nfsd_req_alloc(struct nfsd_loop *l)
{
	struct nfsd_req *r = l->free_reqs;
	if (r) {
		l->free_reqs = r->next;
		l->nfree_reqs--;
	} else {
		r = malloc(sizeof(*r));
		if (!r)
			return NULL;
	}
	memset(r, 0, offsetof(struct nfsd_req, iov));
	r->loop = l;
	xdr_arena_init(&r->arena, r->arena_buf, sizeof(r->arena_buf), l->srv->opts.arena_limit);
	return r;
}

struct on_free_link {
	void (*fn)(void *arg), (*prev_fn)(void *arg);
	void *arg, *prev_arg;
};

static void on_free_chain(void *arg)
{
	struct on_free_link *k = arg;
	k->prev_fn(k->prev_arg);
	k->fn(k->arg);
	free(k);
}

int nfsd_req_on_free(struct nfsd_req *req, void (*fn)(void *arg), void *arg)
{
	if (!req->on_free) {
		req->on_free = fn;
		req->on_free_arg = arg;
		return 0;
	}
	struct on_free_link *k = malloc(sizeof(*k));
	if (!k)
		return -ENOMEM;
	*k = (struct on_free_link){ fn, req->on_free, arg, req->on_free_arg };
	req->on_free = on_free_chain;
	req->on_free_arg = k;
	return 0;
}

/* r leaves its connection's bulk window; the count before, 0 if not in it */
static unsigned bulk_leave(struct nfsd_req *r)
{
	if (!r->bulk)
		return 0;
	r->bulk = false;
	return atomic_fetch_sub_explicit(&r->conn->bulk_out, 1, memory_order_relaxed);
}

void nfsd_req_free(struct nfsd_loop *l, struct nfsd_req *r)
{
	bulk_leave(r);
	if (r->on_free) {
		r->on_free(r->on_free_arg);
		r->on_free = NULL;
	}
	xdr_arena_release(&r->arena);
	if (r->rbuf) {
		nfsd_rbuf_put(r->rbuf);
		r->rbuf = NULL;
	}
	if (r->conn) {
		nfsd_conn_put(r->conn);
		r->conn = NULL;
	}
	if (r == &l->inline_req)
		return;
	if (l->nfree_reqs < FREE_REQS_MAX) {
		r->next = l->free_reqs;
		l->free_reqs = r;
		l->nfree_reqs++;
	} else {
		free(r);
	}
}

/* ------------------------------------------------------------ posting */

static void loop_wake(struct nfsd_loop *l)
{
	uint64_t one = 1;
	ssize_t n = write(l->evfd, &one, sizeof(one));
	(void)n;
}

/* Called with post_lock held; returns whether to wake the loop. */
static bool post_needs_wake(struct nfsd_loop *l)
{
	if (l->wake_pending)
		return false;
	l->wake_pending = true;
	return true;
}

void nfsd_loop_post_req(struct nfsd_loop *l, struct nfsd_req *req)
{
	pthread_mutex_lock(&l->post_lock);
	req->next = l->posted_reqs;
	l->posted_reqs = req;
	bool wake = post_needs_wake(l);
	pthread_mutex_unlock(&l->post_lock);
	if (wake)
		loop_wake(l);
}

void nfsd_loop_post_call(struct nfsd_loop *l, struct nfsd_call *c)
{
	pthread_mutex_lock(&l->post_lock);
	c->qnext = l->posted_calls;
	l->posted_calls = c;
	bool wake = post_needs_wake(l);
	pthread_mutex_unlock(&l->post_lock);
	if (wake)
		loop_wake(l);
}

void nfsd_loop_post_fn(struct nfsd_loop *l, struct nfsd_post_fn *f)
{
	pthread_mutex_lock(&l->post_lock);
	f->next = l->posted_fns;
	l->posted_fns = f;
	bool wake = post_needs_wake(l);
	pthread_mutex_unlock(&l->post_lock);
	if (wake)
		loop_wake(l);
}

bool nfsd_loop_is_current(const struct nfsd_loop *l)
{
	return l->srv->started && pthread_equal(pthread_self(), l->thr);
}

void nfsd_loop_post_conn(struct nfsd_loop *l, struct nfsd_conn *c)
{
	pthread_mutex_lock(&l->post_lock);
	c->next = l->posted_conns;
	l->posted_conns = c;
	bool wake = post_needs_wake(l);
	pthread_mutex_unlock(&l->post_lock);
	if (wake)
		loop_wake(l);
}

/* ------------------------------------------------------------ connections */

struct nfsd_conn *nfsd_conn_new(struct nfsd_loop *l, int fd)
{
	struct nfsd_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->loop = l;
	c->fd = fd;
	atomic_init(&c->refs, 1);
	c->recv_op = (struct nfsd_op){ .kind = NFSD_OP_RECV, .conn = c };
	c->send_op = (struct nfsd_op){ .kind = NFSD_OP_SEND, .conn = c };
	c->conn_op = (struct nfsd_op){ .kind = NFSD_OP_CONNECT, .conn = c };
	nfsd_rec_init(&c->rec, l->srv->opts.max_record);
	for (int i = 0; i < 2; i++) {
		c->q[i].scratch = malloc(NFSD_OUT_SCRATCH);
		if (!c->q[i].scratch) {
			free(c->q[0].scratch);
			free(c);
			return NULL;
		}
		outq_reset(&c->q[i]);
	}
	c->peerlen = sizeof(c->peer);
	if (getpeername(fd, (struct sockaddr *)&c->peer, &c->peerlen) < 0)
		c->peerlen = 0;
	return c;
}

void nfsd_conn_get(struct nfsd_conn *c)
{
	atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
}

static void outq_release(struct nfsd_loop *l, struct nfsd_outq *q)
{
	while (q->held) {
		struct nfsd_req *r = q->held;
		q->held = r->next;
		nfsd_req_free(l, r);
	}
	outq_reset(q);
}

void nfsd_conn_put(struct nfsd_conn *c)
{
	if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1)
		return;
	/* Last reference: the socket is closed and no request points here.
	 * Held requests keep a reference, so both queues are empty. */
	free(c->q[0].scratch);
	free(c->q[1].scratch);
	nfsd_rbuf_put(c->rb);
	free(c);
}

/* Stop taking requests while a send is stuck and the next queue fills up:
 * a client that does not read its replies cannot make us buffer more. */
static bool conn_out_busy(const struct nfsd_conn *c)
{
	const struct xdr_enc *e = &c->q[c->cur].enc;
	return c->sending && (e->len >= NFSD_OUT_MAX_BYTES || e->buf_used > NFSD_OUT_SCRATCH / 2 ||
			      e->niov > NFSD_OUT_IOV / 2);
}

bool nfsd_conn_queue_bytes(struct nfsd_conn *c, const uint8_t *p, size_t len)
{
	struct xdr_enc *o = &c->q[c->cur].enc;
	if (c->dead || o->niov + 1 >= o->maxiov)
		return false;
	if (o->buf_used + len <= o->buf_size) {
		uint8_t *d = xdr_enc_reserve(o, len);
		if (!d) {
			o->err = 0;
			return false;
		}
		memcpy(d, p, len);
	} else if (xdr_enc_ref(o, p, len) < 0) {
		o->err = 0;
		return false;
	}
	nfsd_conn_mark_dirty(c);
	return true;
}

/*
 * Taking no new calls: replies wait (backlog, a stuck send), too many calls
 * are in progress, or the bulk window is full.  The window keeps a data
 * server's READs from the page cache in step with the socket: each READ's
 * blocks are CRC-checked just before the send needs them, and workers do
 * not run in bursts of 16 beside the loop that sends (docs/architecture.md,
 * "Memory limits per connection", has the measurements).
 */
static bool conn_paused(const struct nfsd_conn *c)
{
	const struct nfsd_server_opts *o = &c->loop->srv->opts;
	if (c->clnt)
		/*
		 * Our client's connection reads whatever its own sends are
		 * doing.  A server may stop reading while we do not read its
		 * replies (ours does, above); if we stopped reading while it
		 * does not read our calls, both would wait for ever
		 * (tests/nfsd/rpc-client-duplex).  Replies free memory; only
		 * the backchannel's calls, which a server's slot table bounds,
		 * are limited, and by count.
		 */
		return c->reqs_out + c->nbacklog >= o->max_conn_reqs;
	return c->backlog || c->reqs_out >= o->max_conn_reqs || conn_out_busy(c) ||
	       (o->bulk_window &&
		atomic_load_explicit(&c->bulk_out, memory_order_relaxed) >= o->bulk_window);
}

struct unbulk_post {
	struct nfsd_post_fn f;
	struct nfsd_conn *c;
};

static void unbulk_resume(struct nfsd_loop *l, void *arg)
{
	struct unbulk_post *u = arg;
	nfsd_conn_resume(u->c);
	nfsd_conn_put(u->c);
	free(u);
}

void nfsd_req_unbulk(struct nfsd_req *r)
{
	struct nfsd_conn *c = r->conn;
	unsigned was = bulk_leave(r);
	if (!was || was < c->loop->srv->opts.bulk_window)
		return; /* not in the window, or the window was not what held
			 * the connection */
	/* the connection may be waiting on the window: its loop looks again,
	 * posted even from that loop's thread, where an inline procedure runs
	 * inside the connection's parsing and must not re-enter it.  Without
	 * memory, it looks when this call's reply goes back. */
	struct unbulk_post *u = malloc(sizeof(*u));
	if (!u)
		return;
	nfsd_conn_get(c);
	u->c = c;
	u->f.fn = unbulk_resume;
	u->f.arg = u;
	nfsd_loop_post_fn(c->loop, &u->f);
}

void nfsd_conn_mark_dirty(struct nfsd_conn *c)
{
	if (c->dirty || c->dead)
		return;
	c->dirty = true;
	/* the list holds a reference: the connection may close before the
	 * flush (a hangup in the same event), and must not be freed on it */
	nfsd_conn_get(c);
	c->dnext = c->loop->dirty;
	c->loop->dirty = c;
}

static void conn_finish_close(struct nfsd_conn *c)
{
	struct nfsd_loop *l = c->loop;
	if (!c->closed_fd) {
		c->xprt->detach(c);
		if (c->fd >= 0)
			close(c->fd);
		c->closed_fd = true;
	}
	if (c->prev)
		c->prev->next = c->next;
	else
		l->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->next = c->prev = NULL;
	outq_release(l, &c->q[0]);
	outq_release(l, &c->q[1]);
	while (c->backlog) {
		struct nfsd_req *r = c->backlog;
		c->backlog = r->next;
		nfsd_req_free(l, r);
	}
	c->backlog_tail = NULL;
	c->nbacklog = 0;
	nfsd_conn_fail_calls(c, -ECONNRESET);
	nfsd_conn_free_orphans(c);
	l->st.conns_closed++;
	if (c->clnt)
		nfsd_clnt_conn_dead(c);
	nfsd_conn_put(c);
}

void nfsd_conn_kill(struct nfsd_conn *c)
{
	if (c->dead)
		return;
	c->dead = true;
	if (c->xprt && c->xprt->msg) {
		/* the transport drains its work, then nfsd_conn_closed() */
		c->xprt->kill(c);
		return;
	}
	if (c->ops_pending) {
		/* In-flight operations complete (with errors) before we close. */
		shutdown(c->fd, SHUT_RDWR);
		return;
	}
	conn_finish_close(c);
}

void nfsd_conn_closed(struct nfsd_conn *c)
{
	conn_finish_close(c);
}

/* ------------------------------------------------------------ backends */

static struct io_uring_sqe *uring_sqe(struct nfsd_loop *l)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&l->ring);
	while (!sqe) {
		io_uring_submit(&l->ring);
		sqe = io_uring_get_sqe(&l->ring);
	}
	return sqe;
}

static void epoll_set(struct nfsd_conn *c)
{
	struct epoll_event ev = { .data.ptr = &c->recv_op };
	if (c->recv_armed)
		ev.events |= EPOLLIN;
	if (c->sending || c->connecting)
		ev.events |= EPOLLOUT;
	epoll_ctl(c->loop->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

/*
 * How much the next receive may take.  Inside a large fragment, only its
 * rest: the next record then starts in the space left after it, not part
 * way into a buffer that must be compacted (or copied, while requests
 * still hold it) under the next large record.
 */
static size_t conn_recv_len(const struct nfsd_conn *c)
{
	size_t room = c->rb->cap - c->rb_end;
	const struct nfsd_rec *r = &c->rec;
	/* (while a call may want its data in a sink, every record is taken
	 * to its end, so that the next one's head is seen first) */
	if (r->in_frag && r->scan == c->rb_end && r->frag_left && r->frag_left < room &&
	    (r->frag_left >= NFSD_RECV_CLIP || (c->nsinks && r->last)))
		return r->frag_left;
	/* ... and then a reply's head only */
	if (c->nsinks && !r->nfrags && !r->in_frag && c->rb_end - r->scan < NFSD_SINK_PEEK &&
	    NFSD_SINK_PEEK - (c->rb_end - r->scan) < room)
		return NFSD_SINK_PEEK - (c->rb_end - r->scan);
	return room;
}

/* Where the next receive goes: the receive buffer, or a call's sink. */
static void conn_recv_target(struct nfsd_conn *c, void **p, size_t *len)
{
	struct nfsd_divert *dv = &c->div;
	if (dv->on && dv->left) {
		*p = dv->dst;
		*len = dv->left;
	} else if (dv->on) {
		*p = dv->padbuf;
		*len = dv->pad;
	} else {
		*p = c->rb->data + c->rb_end;
		*len = conn_recv_len(c);
	}
}

/*
 * At a record's start on a connection with sink calls: if it is a large
 * reply to one of them and its locate() finds the data, the data goes to
 * the call's buffer.  The record is cut to what precedes the data, the
 * data opaque's length set to 0, and parsing waits until the data (and
 * its padding) have arrived.  0: stop parsing for now (more bytes needed,
 * or the data is arriving); 1: parse as usual.
 */
static int conn_divert(struct nfsd_conn *c)
{
	const struct nfsd_rec *r = &c->rec;
	if (r->nfrags || r->in_frag)
		return 1;
	size_t have = c->rb_end - r->scan;
	if (have < 8)
		return c->eof ? 1 : 0;
	uint8_t *p = c->rb->data + r->scan;
	uint32_t mark = xdr_get32(p), flen = mark & ~NFSD_REC_LAST;
	if (!(mark & NFSD_REC_LAST) || flen < NFSD_SINK_MIN || have - 4 >= flen)
		return 1;
	struct nfsd_call *call = nfsd_conn_call_find(c, xdr_get32(p + 4));
	if (!call || !call->sink.buf)
		return 1;
	size_t avail = have - 4, off = 0, len = 0;
	int k = call->sink.locate(p + 4, avail, flen, &off, &len);
	if (k == 0)
		return avail >= NFSD_SINK_PEEK || c->eof ? 1 : 0;
	size_t pad = (4 - (len & 3)) & 3;
	if (k < 0 || off < 4 || off > avail || len > call->sink.len ||
	    (uint64_t)off + len + pad != flen || xdr_get32(p + 4 + off - 4) != len)
		return 1;
	struct nfsd_divert *dv = &c->div;
	size_t here = avail - off; /* of the data and padding, already received */
	size_t cp = here < len ? here : len;
	memcpy(call->sink.buf, p + 4 + off, cp);
	*dv = (struct nfsd_divert){ .on = true, .call = call, .dst = (uint8_t *)call->sink.buf + cp,
				    .left = len - cp, .pad = pad - (here - cp), .total = len };
	xdr_put32(p, NFSD_REC_LAST | (uint32_t)off);
	xdr_put32(p + 4 + off - 4, 0);
	c->rb_end = r->scan + 4 + off;
	return 0;
}

static void conn_arm_recv(struct nfsd_conn *c)
{
	if (c->recv_armed || c->dead || c->eof || c->connecting)
		return;
	c->recv_armed = true;
	c->xprt->arm_recv(c);
}

/* Point c->smsg at what remains to send of the sending queue. */
static struct msghdr *conn_msg(struct nfsd_conn *c)
{
	struct nfsd_outq *q = &c->q[!c->cur];
	/* Skip what a partial send already wrote, and rebase on it. */
	size_t skip = q->sent;
	unsigned i = 0;
	while (i < q->enc.niov && skip >= q->enc.iov[i].iov_len) {
		skip -= q->enc.iov[i].iov_len;
		i++;
	}
	if (skip) {
		q->enc.iov[i].iov_base = (uint8_t *)q->enc.iov[i].iov_base + skip;
		q->enc.iov[i].iov_len -= skip;
	}
	if (i) {
		memmove(q->enc.iov, q->enc.iov + i, (q->enc.niov - i) * sizeof(struct iovec));
		q->enc.niov -= i;
	}
	q->enc.len -= q->sent;
	q->sent = 0;
	memset(&c->smsg, 0, sizeof(c->smsg));
	c->smsg.msg_iov = q->enc.iov;
	c->smsg.msg_iovlen = q->enc.niov;
	return &c->smsg;
}

static void conn_send_done(struct nfsd_conn *c, ssize_t n);

static void conn_start_send(struct nfsd_conn *c)
{
	c->xprt->start_send(c, conn_msg(c));
}

/* ------------------------------------------------------------ transports */

static void uring_arm_recv(struct nfsd_conn *c)
{
	struct io_uring_sqe *sqe = uring_sqe(c->loop);
	void *p;
	size_t len;
	conn_recv_target(c, &p, &len);
	io_uring_prep_recv(sqe, c->fd, p, len, 0);
	io_uring_sqe_set_data(sqe, &c->recv_op);
	c->ops_pending++;
}

static void uring_start_send(struct nfsd_conn *c, struct msghdr *m)
{
	struct io_uring_sqe *sqe = uring_sqe(c->loop);
	io_uring_prep_sendmsg(sqe, c->fd, m, MSG_NOSIGNAL);
	io_uring_sqe_set_data(sqe, &c->send_op);
	c->ops_pending++;
}

static void uring_wait_connect(struct nfsd_conn *c)
{
	struct io_uring_sqe *sqe = uring_sqe(c->loop);
	io_uring_prep_poll_add(sqe, c->fd, POLLOUT);
	io_uring_sqe_set_data(sqe, &c->conn_op);
	c->ops_pending++;
}

static void uring_attach(struct nfsd_conn *c)
{
}

static void uring_detach(struct nfsd_conn *c)
{
}

static const struct nfsd_xprt_ops uring_xprt = {
	.name = "tcp/io_uring",
	.attach = uring_attach,
	.arm_recv = uring_arm_recv,
	.start_send = uring_start_send,
	.wait_connect = uring_wait_connect,
	.detach = uring_detach,
};

/* epoll: level-triggered interest follows what the connection waits for. */
static void epoll_attach(struct nfsd_conn *c)
{
	struct epoll_event ev = { .events = 0, .data.ptr = &c->recv_op };
	epoll_ctl(c->loop->epfd, EPOLL_CTL_ADD, c->fd, &ev);
}

static void epoll_detach(struct nfsd_conn *c)
{
	epoll_ctl(c->loop->epfd, EPOLL_CTL_DEL, c->fd, NULL);
}

static void epoll_start_send(struct nfsd_conn *c, struct msghdr *m)
{
	ssize_t n = sendmsg(c->fd, m, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		epoll_set(c);
		return;
	}
	conn_send_done(c, n < 0 ? -errno : n);
}

static const struct nfsd_xprt_ops epoll_xprt = {
	.name = "tcp/epoll",
	.attach = epoll_attach,
	.arm_recv = epoll_set,
	.start_send = epoll_start_send,
	.wait_connect = epoll_set,
	.detach = epoll_detach,
};

/* Move q[cur] to the sending side and write it. */
static void conn_flush(struct nfsd_conn *c)
{
	if (c->sending || c->dead || c->q[c->cur].enc.len == 0)
		return;
	c->cur = !c->cur;
	c->sending = true;
	conn_start_send(c);
}

static void conn_process(struct nfsd_conn *c);

void nfsd_conn_send_done(struct nfsd_conn *c, ssize_t n)
{
	conn_send_done(c, n);
}

static void conn_send_done(struct nfsd_conn *c, ssize_t n)
{
	struct nfsd_outq *q = &c->q[!c->cur];
	if (c->dead)
		return;
	if (n <= 0) {
		nfsd_conn_kill(c);
		return;
	}
	q->sent += (size_t)n;
	if (!c->xprt->msg)
		c->loop->st.tcp_bytes_out += (uint64_t)n;
	if (q->sent < q->enc.len) {
		conn_start_send(c);
		return;
	}
	outq_release(c->loop, q);
	c->sending = false;
	if (c->orphans && c->q[c->cur].enc.len == 0)
		nfsd_conn_free_orphans(c);
	if (c->xprt == &epoll_xprt)
		epoll_set(c); /* drop the EPOLLOUT interest */
	nfsd_svc_drain_backlog(c);
	if (c->clnt)
		nfsd_clnt_conn_drained(c);
	conn_flush(c);
	conn_process(c);
}

/* ------------------------------------------------------------ receiving */

/* Make room to receive: compact or grow the buffer; false on failure. */
static bool conn_make_room(struct nfsd_conn *c)
{
	struct nfsd_rbuf *rb = c->rb;
	size_t keep = nfsd_rec_keep_from(&c->rec);
	size_t need = nfsd_rec_need(&c->rec);
	size_t live = c->rb_end - keep;
	size_t cap = NFSD_RBUF_MIN;
	if (need + 4096 > cap)
		cap = need + 4096;
	if (rb && rb->cap - c->rb_end >= 4096 && keep + need <= rb->cap)
		return true;
	if (rb && rb->refs == 1 && rb->cap >= cap) {
		if (keep) {
			memmove(rb->data, rb->data + keep, live);
			nfsd_rec_shift(&c->rec, keep);
			c->rb_end = live;
		}
		return true;
	}
	struct nfsd_rbuf *nrb = rbuf_new(cap < live + 4096 ? live + 4096 : cap);
	if (!nrb)
		return false;
	if (rb) {
		memcpy(nrb->data, rb->data + keep, live);
		nfsd_rec_shift(&c->rec, keep);
		nfsd_rbuf_put(rb);
	}
	c->rb = nrb;
	c->rb_end = live;
	return true;
}

/* Parse and dispatch every complete record; then receive more if allowed. */
static void conn_process(struct nfsd_conn *c)
{
	struct nfsd_loop *l = c->loop;
	if (c->xprt->msg)
		return; /* its transport receives by itself */
	while (!c->dead && !conn_paused(c)) {
		size_t off, len;
		int rc;
		if (c->div.on || (c->nsinks && !conn_divert(c)))
			break;
		rc = nfsd_rec_next(&c->rec, c->rb->data, c->rb_end, &off, &len);
		if (rc == NFSD_REC_MORE)
			break;
		if (rc < 0) {
			l->st.records_too_big++;
			nfsd_conn_kill(c);
			return;
		}
		nfsd_svc_record(c, c->rb->data + off, len);
	}
	if (c->dead)
		return;
	if (c->q[c->cur].enc.len)
		nfsd_conn_mark_dirty(c);
	if (c->eof) {
		if (!c->reqs_out && !c->sending && c->q[c->cur].enc.len == 0 && !c->backlog)
			nfsd_conn_kill(c);
		return;
	}
	if (!conn_paused(c) && !c->recv_armed) {
		if (!conn_make_room(c)) {
			nfsd_conn_kill(c);
			return;
		}
		conn_arm_recv(c);
	}
}

void nfsd_conn_resume(struct nfsd_conn *c)
{
	if (!c->dead && !c->recv_armed && !c->xprt->msg)
		conn_process(c);
}

static void conn_recv_done(struct nfsd_conn *c, ssize_t n)
{
	c->recv_armed = false;
	if (c->dead)
		return;
	if (n < 0 && (n == -EAGAIN || n == -EINTR)) {
		conn_process(c);
		return;
	}
	if (n < 0) {
		nfsd_conn_kill(c);
		return;
	}
	if (n == 0) {
		/* Half-closed: answer what arrived, then close. */
		c->eof = true;
		if (c->div.on) {
			/* the reply's data never came: the call fails with the
			 * connection, not with half its data */
			nfsd_conn_kill(c);
			return;
		}
	} else if (c->div.on) {
		struct nfsd_divert *dv = &c->div;
		if (dv->left) {
			dv->dst += n;
			dv->left -= (size_t)n;
		} else {
			dv->pad -= (size_t)n;
		}
		if (!dv->left && !dv->pad) {
			dv->on = false;
			if (dv->call->sink.got)
				*dv->call->sink.got = dv->total;
		}
	} else {
		c->rb_end += (size_t)n;
	}
	if (n > 0)
		c->loop->st.tcp_bytes_in += (uint64_t)n;
	conn_process(c);
}

void nfsd_loop_add_conn(struct nfsd_loop *l, struct nfsd_conn *c)
{
	c->loop = l;
	c->next = l->conns;
	if (l->conns)
		l->conns->prev = c;
	l->conns = c;
	if (c->xprt && c->xprt->msg) {
		c->xprt->attach(c);
		return;
	}
	c->xprt = l->backend == NFSD_BACKEND_URING ? &uring_xprt : &epoll_xprt;
	c->xprt->attach(c);
	if (c->connecting) {
		nfsd_conn_start_connect(c);
		return;
	}
	if (!conn_make_room(c)) {
		nfsd_conn_kill(c);
		return;
	}
	if (c->clnt)
		nfsd_clnt_conn_ready(c);
	conn_arm_recv(c);
}

void nfsd_conn_start_connect(struct nfsd_conn *c)
{
	c->xprt->wait_connect(c);
}

static void conn_connect_done(struct nfsd_conn *c)
{
	int err = 0;
	socklen_t el = sizeof(err);
	c->connecting = false;
	if (c->dead)
		return;
	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err) {
		c->connect_failed = true; /* refused or unreachable: nfsd_clnt_conn_dead */
		nfsd_conn_kill(c);
		return;
	}
	c->peerlen = sizeof(c->peer);
	getpeername(c->fd, (struct sockaddr *)&c->peer, &c->peerlen);
	if (!conn_make_room(c)) {
		nfsd_conn_kill(c);
		return;
	}
	if (c->xprt == &epoll_xprt)
		epoll_set(c); /* drop the EPOLLOUT interest of the connect */
	if (c->clnt)
		nfsd_clnt_conn_ready(c);
	conn_arm_recv(c);
}

/* ------------------------------------------------------------ accepting */

static void listener_accepted(struct nfsd_server *s, int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (s->backend == NFSD_BACKEND_EPOLL)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	unsigned i = atomic_fetch_add(&s->rr, 1) % s->nloops;
	struct nfsd_loop *l = &s->loops[i];
	struct nfsd_conn *c = nfsd_conn_new(l, fd);
	if (!c) {
		close(fd);
		return;
	}
	s->loops[0].st.conns_accepted++;
	nfsd_loop_post_conn(l, c);
}

static void uring_arm_accept(struct nfsd_loop *l, struct nfsd_listener *ln)
{
	struct io_uring_sqe *sqe = uring_sqe(l);
	io_uring_prep_accept(sqe, ln->fd, NULL, NULL, SOCK_CLOEXEC);
	io_uring_sqe_set_data(sqe, &ln->op);
}

/* ------------------------------------------------------------ the loop */

static void uring_arm_wake(struct nfsd_loop *l)
{
	struct io_uring_sqe *sqe = uring_sqe(l);
	io_uring_prep_read(sqe, l->evfd, &l->ev_val, sizeof(l->ev_val), 0);
	io_uring_sqe_set_data(sqe, &l->wake_op);
}

static void uring_arm_tick(struct nfsd_loop *l)
{
	struct io_uring_sqe *sqe = uring_sqe(l);
	l->tick_ts.tv_sec = 0;
	l->tick_ts.tv_nsec = TICK_MS * 1000000L;
	io_uring_prep_timeout(sqe, &l->tick_ts, 0, 0);
	io_uring_sqe_set_data(sqe, &l->tick_op);
}

static void loop_drain_posts(struct nfsd_loop *l)
{
	pthread_mutex_lock(&l->post_lock);
	struct nfsd_req *reqs = l->posted_reqs;
	struct nfsd_conn *conns = l->posted_conns;
	struct nfsd_call *calls = l->posted_calls;
	struct nfsd_post_fn *fns = l->posted_fns;
	l->posted_fns = NULL;
	l->posted_reqs = NULL;
	l->posted_conns = NULL;
	l->posted_calls = NULL;
	l->wake_pending = false;
	pthread_mutex_unlock(&l->post_lock);

	while (conns) {
		struct nfsd_conn *c = conns;
		conns = c->next;
		c->next = NULL;
		nfsd_loop_add_conn(l, c);
	}
	while (reqs) {
		struct nfsd_req *r = reqs;
		reqs = r->next;
		nfsd_svc_req_returned(l, r);
	}
	/* Posting reversed the order; submit calls oldest first. */
	struct nfsd_call *rev = NULL;
	while (calls) {
		struct nfsd_call *c = calls;
		calls = c->qnext;
		c->qnext = rev;
		rev = c;
	}
	while (rev) {
		struct nfsd_call *c = rev;
		rev = c->qnext;
		nfsd_call_submit_local(l, c);
	}
	/* Functions run in posting order too: a client's register must run
	 * before its close when both arrive in one batch. */
	struct nfsd_post_fn *frev = NULL;
	while (fns) {
		struct nfsd_post_fn *f = fns;
		fns = f->next;
		f->next = frev;
		frev = f;
	}
	while (frev) {
		struct nfsd_post_fn *f = frev;
		frev = f->next;
		f->fn(l, f->arg);
	}
}

/* Empty the dirty list: flush each connection, or (the loop is going
 * away) only drop the list's reference. */
static void loop_dirty_empty(struct nfsd_loop *l, bool flush)
{
	while (l->dirty) {
		struct nfsd_conn *c = l->dirty;
		l->dirty = c->dnext;
		c->dirty = false;
		if (flush)
			conn_flush(c);
		nfsd_conn_put(c);
	}
}

static void loop_tick(struct nfsd_loop *l)
{
	l->now_ns = nfsd_now_ns();
	nfsd_loop_tick_calls(l);
}

static void uring_handle(struct nfsd_loop *l, struct io_uring_cqe *cqe)
{
	struct nfsd_op *op = io_uring_cqe_get_data(cqe);
	if (!op)
		return;
	switch (op->kind) {
	case NFSD_OP_ACCEPT: {
		struct nfsd_listener *ln = &l->srv->listeners[op->listen_idx];
		if (cqe->res >= 0)
			listener_accepted(l->srv, cqe->res);
		if (!atomic_load(&l->stop) && (cqe->res >= 0 || cqe->res == -EINTR ||
					       cqe->res == -ECONNABORTED || cqe->res == -EMFILE ||
					       cqe->res == -ENFILE || cqe->res == -EAGAIN))
			uring_arm_accept(l, ln);
		return;
	}
	case NFSD_OP_WAKE:
		loop_drain_posts(l);
		if (!atomic_load(&l->stop))
			uring_arm_wake(l);
		return;
	case NFSD_OP_TICK:
		loop_tick(l);
		if (!atomic_load(&l->stop))
			uring_arm_tick(l);
		return;
	case NFSD_OP_FN:
		op->armed = false;
		op->fn(l, op, cqe->res);
		return;
	}
	/* A connection operation: hold the connection while we handle it. */
	struct nfsd_conn *c = op->conn;
	nfsd_conn_get(c);
	c->ops_pending--;
	if (op->kind == NFSD_OP_RECV)
		conn_recv_done(c, cqe->res);
	else if (op->kind == NFSD_OP_SEND)
		conn_send_done(c, cqe->res);
	else
		conn_connect_done(c);
	if (c->dead && c->ops_pending == 0 && !c->closed_fd)
		conn_finish_close(c);
	nfsd_conn_put(c);
}

void nfsd_loop_watch(struct nfsd_loop *l, struct nfsd_op *op)
{
	op->kind = NFSD_OP_FN;
	if (l->backend == NFSD_BACKEND_URING) {
		struct io_uring_sqe *sqe = uring_sqe(l);
		io_uring_prep_poll_add(sqe, op->fd, POLLIN);
		io_uring_sqe_set_data(sqe, op);
		op->armed = true;
		return;
	}
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT, .data.ptr = op };
	if (epoll_ctl(l->epfd, op->in_epoll ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, op->fd, &ev) == 0) {
		op->in_epoll = true;
		op->armed = true;
	}
}

bool nfsd_loop_unwatch(struct nfsd_loop *l, struct nfsd_op *op)
{
	if (l->backend == NFSD_BACKEND_URING) {
		if (!op->armed)
			return false;
		struct io_uring_sqe *sqe = uring_sqe(l);
		io_uring_prep_cancel(sqe, op, 0);
		io_uring_sqe_set_data(sqe, NULL);
		return true;
	}
	if (op->in_epoll)
		epoll_ctl(l->epfd, EPOLL_CTL_DEL, op->fd, NULL);
	op->in_epoll = op->armed = false;
	return false;
}

static void uring_run(struct nfsd_loop *l)
{
	if (l->idx == 0) {
		for (unsigned i = 0; i < l->srv->nlisteners; i++)
			uring_arm_accept(l, &l->srv->listeners[i]);
		nfsd_rdma_loop_start(l);
	}
	uring_arm_wake(l);
	uring_arm_tick(l);
	while (!atomic_load(&l->stop)) {
		loop_dirty_empty(l, true);
		int rc = io_uring_submit_and_wait(&l->ring, 1);
		if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
			fprintf(stderr, "braid: io_uring_submit_and_wait: %s\n", strerror(-rc));
			break;
		}
		l->now_ns = 0;
		struct io_uring_cqe *cqe;
		unsigned head, n = 0;
		io_uring_for_each_cqe(&l->ring, head, cqe)
		{
			uring_handle(l, cqe);
			n++;
		}
		io_uring_cq_advance(&l->ring, n);
	}
}

static void epoll_handle_conn(struct nfsd_conn *c, uint32_t events)
{
	nfsd_conn_get(c);
	if (c->connecting) {
		if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
			conn_connect_done(c);
		goto out;
	}
	if ((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) && c->sending && !c->dead)
		conn_start_send(c);
	if ((events & (EPOLLIN | EPOLLERR | EPOLLHUP)) && c->recv_armed && !c->dead) {
		void *p;
		size_t len;
		conn_recv_target(c, &p, &len);
		ssize_t n = recv(c->fd, p, len, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			goto out;
		conn_recv_done(c, n < 0 ? -errno : n);
	} else if ((events & (EPOLLERR | EPOLLHUP)) && !c->dead && !c->sending) {
		nfsd_conn_kill(c);
	}
out:
	if (c->dead && !c->closed_fd)
		conn_finish_close(c);
	nfsd_conn_put(c);
}

static void epoll_run(struct nfsd_loop *l)
{
	struct epoll_event evs[128];
	if (l->idx == 0)
		nfsd_rdma_loop_start(l);
	uint64_t next_tick = nfsd_now_ns() + TICK_MS * 1000000ull;
	while (!atomic_load(&l->stop)) {
		loop_dirty_empty(l, true);
		uint64_t now = nfsd_now_ns();
		int timeout = now >= next_tick ? 0 : (int)((next_tick - now) / 1000000ull) + 1;
		int n = epoll_wait(l->epfd, evs, 128, timeout);
		l->now_ns = 0;
		for (int i = 0; i < n; i++) {
			struct nfsd_op *op = evs[i].data.ptr;
			switch (op->kind) {
			case NFSD_OP_WAKE: {
				uint64_t v;
				ssize_t r = read(l->evfd, &v, sizeof(v));
				(void)r;
				loop_drain_posts(l);
				break;
			}
			case NFSD_OP_ACCEPT: {
				struct nfsd_listener *ln = &l->srv->listeners[op->listen_idx];
				for (int k = 0; k < 64; k++) {
					int fd = accept4(ln->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
					if (fd < 0)
						break;
					listener_accepted(l->srv, fd);
				}
				break;
			}
			case NFSD_OP_FN:
				op->armed = false;
				op->fn(l, op, (int)evs[i].events);
				break;
			default:
				epoll_handle_conn(op->conn, evs[i].events);
				break;
			}
		}
		if (nfsd_now_ns() >= next_tick) {
			loop_tick(l);
			next_tick = nfsd_now_ns() + TICK_MS * 1000000ull;
		}
	}
}

static void *loop_main(void *arg)
{
	struct nfsd_loop *l = arg;
	nfsd_thread_block_signals();
	if (l->backend == NFSD_BACKEND_URING) {
		if (l->ring_disabled && syscall(__NR_io_uring_register, l->ring.ring_fd,
						 IORING_REGISTER_ENABLE_RINGS, NULL, 0) < 0) {
			fprintf(stderr, "braid: io_uring_enable_rings failed\n");
			return NULL;
		}
		uring_run(l);
	}
	else
		epoll_run(l);
	/* Shut down: close every connection and answer nothing more. */
	loop_dirty_empty(l, false);
	while (l->conns) {
		struct nfsd_conn *c = l->conns;
		c->dead = true;
		c->ops_pending = 0;
		conn_finish_close(c);
	}
	return NULL;
}

static int loop_init(struct nfsd_server *s, struct nfsd_loop *l, unsigned idx)
{
	l->srv = s;
	l->idx = idx;
	l->epfd = -1;
	pthread_mutex_init(&l->post_lock, NULL);
	l->wake_op.kind = NFSD_OP_WAKE;
	l->tick_op.kind = NFSD_OP_TICK;
	l->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (l->evfd < 0)
		return -errno;
	l->backend = s->backend;
	if (l->backend == NFSD_BACKEND_URING) {
		/* Single issuer: only the loop thread submits; the ring starts
		 * disabled and the loop thread enables it (and so owns it). */
		struct io_uring_params p = { 0 };
		p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN |
			  IORING_SETUP_R_DISABLED;
		int rc = io_uring_queue_init_params(URING_ENTRIES, &l->ring, &p);
		l->ring_disabled = rc == 0;
		if (rc == -EINVAL) {
			memset(&p, 0, sizeof(p));
			rc = io_uring_queue_init_params(URING_ENTRIES, &l->ring, &p);
		}
		if (rc < 0)
			return rc;
	} else {
		l->epfd = epoll_create1(EPOLL_CLOEXEC);
		if (l->epfd < 0)
			return -errno;
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &l->wake_op };
		epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->evfd, &ev);
	}
	return 0;
}

/* io_uring unless it is unavailable here (or BRAID_RPC_BACKEND=epoll). */
static int pick_backend(int force)
{
	const char *env = getenv("BRAID_RPC_BACKEND");
	if (!force && env)
		force = strcmp(env, "epoll") == 0 ? 2 : strcmp(env, "io_uring") == 0 ? 1 : 0;
	if (force == 2)
		return NFSD_BACKEND_EPOLL;
	struct io_uring ring;
	if (io_uring_queue_init(4, &ring, 0) < 0)
		return force == 1 ? -ENOSYS : NFSD_BACKEND_EPOLL;
	io_uring_queue_exit(&ring);
	return NFSD_BACKEND_URING;
}

static struct nfsd_server *engine_new(const struct nfsd_server_opts *opts, int *err)
{
	struct nfsd_server *s = calloc(1, sizeof(*s));
	if (!s) {
		*err = -ENOMEM;
		return NULL;
	}
	if (opts)
		s->opts = *opts;
	else
		nfsd_server_opts_default(&s->opts);
	struct nfsd_server_opts def;
	nfsd_server_opts_default(&def);
	if (!s->opts.max_record)
		s->opts.max_record = def.max_record;
	if (!s->opts.max_conn_reqs)
		s->opts.max_conn_reqs = def.max_conn_reqs;
	if (!s->opts.arena_limit)
		s->opts.arena_limit = def.arena_limit;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	s->nloops = s->opts.nloops ? s->opts.nloops : (unsigned)(ncpu > 0 ? ncpu : 1);
	if (!s->opts.nworkers)
		s->opts.nworkers = 2 * s->nloops;
	int b = pick_backend(s->opts.force_backend);
	if (b < 0) {
		*err = b;
		free(s);
		return NULL;
	}
	s->backend = b;
	atomic_init(&s->xid_seed, (unsigned)nfsd_now_ns());
	signal(SIGPIPE, SIG_IGN);
	s->loops = calloc(s->nloops, sizeof(*s->loops));
	if (!s->loops) {
		*err = -ENOMEM;
		free(s);
		return NULL;
	}
	for (unsigned i = 0; i < s->nloops; i++) {
		int rc = loop_init(s, &s->loops[i], i);
		if (rc < 0) {
			*err = rc;
			s->nloops = i + 1;
			nfsd_server_free(s);
			return NULL;
		}
	}
	nfsd_server_add_flavor(s, &nfsd_auth_none);
	nfsd_server_add_flavor(s, &nfsd_auth_sys);
	nfsd_auth_set_manage_gids(s->opts.manage_gids, s->opts.gid_cache_ttl_s);
	return s;
}

struct nfsd_server *nfsd_server_new(const struct nfsd_server_opts *opts, int *err)
{
	return engine_new(opts, err);
}

struct nfsd_server *nfsd_client_engine_new(unsigned nloops, int force_backend, int *err)
{
	struct nfsd_server_opts o;
	nfsd_server_opts_default(&o);
	o.nloops = nloops;
	o.nworkers = 1;
	o.force_backend = force_backend;
	struct nfsd_server *s = engine_new(&o, err);
	if (s && nfsd_server_start(s) < 0) {
		nfsd_server_free(s);
		return NULL;
	}
	return s;
}

const char *nfsd_server_backend(const struct nfsd_server *s)
{
	return s->backend == NFSD_BACKEND_URING ? "io_uring" : "epoll";
}

int nfsd_server_add_program(struct nfsd_server *s, const struct nfsd_program *p)
{
	if (s->started || s->nprogs == sizeof(s->progs) / sizeof(s->progs[0]))
		return -EBUSY;
	s->progs[s->nprogs++] = p;
	return 0;
}

int nfsd_server_add_flavor(struct nfsd_server *s, const struct nfsd_auth_flavor *f)
{
	for (unsigned i = 0; i < s->nflavors; i++)
		if (s->flavors[i]->flavor == f->flavor) {
			s->flavors[i] = f;
			return 0;
		}
	if (s->started || s->nflavors == sizeof(s->flavors) / sizeof(s->flavors[0]))
		return -EBUSY;
	s->flavors[s->nflavors++] = f;
	return 0;
}

int nfsd_server_listen(struct nfsd_server *s, const struct sockaddr *sa, socklen_t len)
{
	if (s->started || s->nlisteners == sizeof(s->listeners) / sizeof(s->listeners[0]))
		return -EBUSY;
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sa->sa_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, sa, len) < 0 || listen(fd, 4096) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	if (s->backend == NFSD_BACKEND_URING) /* io_uring accepts block in the kernel */
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	struct nfsd_listener *ln = &s->listeners[s->nlisteners];
	ln->fd = fd;
	ln->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						  : ((struct sockaddr_in *)&ss)->sin_port);
	ln->op = (struct nfsd_op){ .kind = NFSD_OP_ACCEPT, .listen_idx = (int)s->nlisteners };
	s->nlisteners++;
	return 0;
}

int nfsd_server_listen_port(struct nfsd_server *s, unsigned idx)
{
	return idx < s->nlisteners ? s->listeners[idx].port : -ENOENT;
}

int nfsd_server_start(struct nfsd_server *s)
{
	int rc = nfsd_workers_start(s);
	if (rc < 0)
		return rc;
	if (s->backend == NFSD_BACKEND_EPOLL)
		for (unsigned i = 0; i < s->nlisteners; i++) {
			struct epoll_event ev = { .events = EPOLLIN,
						  .data.ptr = &s->listeners[i].op };
			epoll_ctl(s->loops[0].epfd, EPOLL_CTL_ADD, s->listeners[i].fd, &ev);
		}
	s->started = true;
	for (unsigned i = 0; i < s->nloops; i++) {
		rc = pthread_create(&s->loops[i].thr, NULL, loop_main, &s->loops[i]);
		if (rc) {
			for (unsigned j = 0; j < i; j++) {
				atomic_store(&s->loops[j].stop, true);
				loop_wake(&s->loops[j]);
				pthread_join(s->loops[j].thr, NULL);
			}
			s->started = false;
			nfsd_workers_stop(s);
			return -rc;
		}
	}
	return 0;
}

void nfsd_server_free(struct nfsd_server *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < s->nlisteners; i++)
		shutdown(s->listeners[i].fd, SHUT_RDWR);
	if (s->started) {
		for (unsigned i = 0; i < s->nloops; i++) {
			atomic_store(&s->loops[i].stop, true);
			loop_wake(&s->loops[i]);
		}
		for (unsigned i = 0; i < s->nloops; i++)
			pthread_join(s->loops[i].thr, NULL);
		nfsd_workers_stop(s);
	}
	for (unsigned i = 0; i < s->nlisteners; i++)
		close(s->listeners[i].fd);
	for (unsigned i = 0; i < s->nloops; i++) {
		struct nfsd_loop *l = &s->loops[i];
		/* Requests workers finished after the loop stopped. */
		loop_drain_posts(l);
		loop_dirty_empty(l, false);
		while (l->conns) {
			struct nfsd_conn *c = l->conns;
			c->dead = true;
			conn_finish_close(c);
		}
		while (l->free_reqs) {
			struct nfsd_req *r = l->free_reqs;
			l->free_reqs = r->next;
			free(r);
		}
		while (l->free_calls) {
			struct nfsd_call *c = l->free_calls;
			l->free_calls = c->hnext;
			free(c->msg);
			free(c);
		}
		if (l->backend == NFSD_BACKEND_URING && l->ring.ring_fd > 0)
			io_uring_queue_exit(&l->ring);
		if (l->epfd >= 0)
			close(l->epfd);
		if (l->evfd >= 0)
			close(l->evfd);
		pthread_mutex_destroy(&l->post_lock);
	}
	nfsd_rdma_server_free(s);
	free(s->loops);
	free(s);
}

void nfsd_server_stats(struct nfsd_server *s, struct nfsd_server_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (unsigned i = 0; i < s->nloops; i++) {
		const struct nfsd_server_stats *x = &s->loops[i].st;
		st->calls += x->calls;
		st->replies += x->replies;
		st->garbage += x->garbage;
		st->auth_errors += x->auth_errors;
		st->conns_accepted += x->conns_accepted;
		st->conns_closed += x->conns_closed;
		st->records_too_big += x->records_too_big;
		st->worker_reqs += x->worker_reqs;
		st->rdma_conns += x->rdma_conns;
		st->rdma_calls += x->rdma_calls;
		st->rdma_errors += x->rdma_errors;
		st->rdma_read_bytes += x->rdma_read_bytes;
		st->rdma_write_bytes += x->rdma_write_bytes;
		st->rdma_reply_chunk_bytes += x->rdma_reply_chunk_bytes;
		st->rdma_inline_bytes += x->rdma_inline_bytes;
		st->rdma_inline_in_bytes += x->rdma_inline_in_bytes;
		st->rdma_write_zerocopy_bytes += x->rdma_write_zerocopy_bytes;
		st->tcp_bytes_in += x->tcp_bytes_in;
		st->tcp_bytes_out += x->tcp_bytes_out;
	}
}
