/* SPDX-License-Identifier: MIT */
/*
 * RPC-over-RDMA version 1 (RFC 8166): the engine's message transport, on
 * rdma-core (librdmacm for connections, libibverbs for the queues).
 *
 * A connection is a struct nfsd_conn like a TCP one (requests hold it,
 * replies come back to its loop), with an RC queue pair underneath:
 *
 *  - Receives.  RDMA_CREDITS buffers of RDMA_INLINE bytes are posted; that
 *    count is the credit every reply grants.  A call is copied out of its
 *    receive buffer (which is posted again at once) into the buffer its
 *    request keeps (c->rb while nfsd_svc_record() runs).
 *  - Read chunks (a WRITE's data, or a whole call too large to send inline:
 *    RDMA_NOMSG with a position-zero chunk).  The call is assembled in a
 *    registered buffer from this loop's pool: the inline part copied, each
 *    chunk's data pulled by RDMA Read to its XDR position, then dispatched.
 *    The request keeps that buffer, so a WRITE's data is written to the
 *    store from where RDMA Read put it.
 *  - Write list (a READ's data, RFC 8267 §4.3).  A procedure names its
 *    payload with nfsd_req_payload(); when the call brought a write chunk,
 *    the payload leaves the reply and goes by RDMA Write into that chunk
 *    (from a registered staging buffer, one copy: see below), and the chunk
 *    comes back in the reply's write list with the lengths written.
 *  - Reply chunk.  A reply too large to send inline goes by RDMA Write into
 *    the call's reply chunk, announced by RDMA_NOMSG.  No room anywhere:
 *    RDMA_ERROR ERR_CHUNK.
 *  - Back channel (RFC 8167).  The engine's own queued messages (NFSv4.1
 *    callbacks on a session bound to this connection) go inline as
 *    RDMA_MSG; their replies come back as calls do.
 *
 * Errors: a header we cannot parse, a chunk list past RDMA_MAX_SEGS
 * segments or past what a buffer holds, an RDMA_MSGP or RDMA_DONE get
 * RDMA_ERROR ERR_CHUNK; a version other than 1 gets ERR_VERS.  A failed
 * work request (the peer's memory gone, a protection error) or a
 * disconnect ends the connection.
 *
 * Threads: loop 0 watches the listeners' rdma_cm channels and accepts;
 * each connection then has its own event channel (rdma_migrate_id) and
 * completion channel, watched by its loop, and everything about it runs on
 * that loop's thread, as for TCP.  Registered buffers for assembled calls
 * and reply staging come from a per-loop, per-device pool (released on the
 * same loop, so no locks; a connection waiting for one is woken by the
 * release).
 *
 * Not done yet: READ payloads are copied into a registered staging buffer
 * rather than written from the store's pages (those are file mappings
 * and buffers the store owns; registering them once is the next step).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nfsd/engine.h"

const char *nfsd_rdma_listen_hint(int err)
{
	switch (err) {
	case -ENODEV:
	case -EADDRNOTAVAIL:
		return " (no RDMA device has that address: rdma link show; for soft-RoCE, "
		       "rdma link add rxe0 type rxe netdev DEV)";
	case -ENOTSUP:
		return " (built --without-rdma)";
	default:
		return "";
	}
}

#ifndef HAVE_RDMA

int nfsd_server_listen_rdma(struct nfsd_server *s, const struct sockaddr *sa, socklen_t len)
{
	(void)s, (void)sa, (void)len;
	return -ENOTSUP;
}

int nfsd_server_listen_rdma_port(struct nfsd_server *s, unsigned idx)
{
	(void)s, (void)idx;
	return -ENOENT;
}

bool nfsd_conn_rdma_limits(const struct nfsd_conn *c, uint32_t *credits, uint32_t *ird)
{
	(void)c, (void)credits, (void)ird;
	return false;
}

int nfsd_server_rdma_register(struct nfsd_server *s, void *addr, size_t len)
{
	(void)s, (void)addr, (void)len;
	return 0;
}

void nfsd_server_rdma_unregister(struct nfsd_server *s, void *addr)
{
	(void)s, (void)addr;
}

void nfsd_rdma_loop_start(struct nfsd_loop *l)
{
	(void)l;
}

void nfsd_rdma_server_free(struct nfsd_server *s)
{
	(void)s;
}

#else

#include <fcntl.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "nfsd/rdma_hdr.h"

#define RDMA_INLINE 4096   /* our receive and send buffers, advertised (RFC 8797) */
#define RDMA_CREDITS 64    /* receives posted per connection: the credits granted */
#define RDMA_NSEND (RDMA_CREDITS + 16) /* send buffers: replies, errors, callbacks */
#define RDMA_SQ_DEPTH 1024 /* work requests: sends, RDMA Reads and Writes */
#define RDMA_POOL_GROW 4   /* pool buffers registered at a time */
#define RDMA_POOL_MAX 64   /* per loop and device */
#define RDMA_MAX_LISTEN 8

enum { WR_RECV = 1, WR_SEND, WR_READ, WR_WRITE };

/* Something a work request's wr_id points at: its first member. */
struct rwr {
	uint8_t kind;
};

struct rdev {
	struct ibv_context *verbs;
	unsigned idx; /* in rreg.mr */
	struct ibv_pd *pd;
	struct ibv_device_attr attr;
	struct rdev *next;
};

struct rpool;
struct rconn;

/*
 * A call's buffer: its chunk lists, then the nfsd_rbuf its request keeps.
 * From the pool (registered, lkey valid) or malloc'd (inline calls).
 */
struct rmsg {
	struct rwr wr; /* WR_READ: the RDMA Reads filling it */
	struct rpool *pool; /* NULL: malloc'd */
	uint32_t lkey;
	struct rdma_hdr hdr;
	unsigned reads_left;
	bool read_failed;
	size_t len; /* the assembled call */
	struct rmsg *next;
	struct rmsg *iprev, *inext; /* on its connection's reading list */
	struct nfsd_rbuf rb; /* last: its data follows */
};

struct rpool {
	struct rdev *dev;
	struct nfsd_loop *loop;
	size_t cap; /* data bytes per buffer */
	struct rmsg *free;
	unsigned n;
	struct rregion {
		struct ibv_mr *mr;
		void *mem;
		struct rregion *next;
	} *regions;
	struct rconn *waiters; /* connections waiting for a buffer */
	struct rpool *next;
};

/* A send: a reply (r), or raw bytes (an RDMA_ERROR, a callback). */
struct rsend {
	struct rwr wr;
	struct nfsd_req *r;
	struct rmsg *call; /* the call's chunk lists (r's buffer) */
	uint8_t *raw;
	size_t rawlen;
	struct rmsg *stage; /* registered staging: payload and reply chunk */
	int sbuf;           /* send buffer index, -1 none yet */
	unsigned nwr;       /* work requests it took */
	struct rsend *next;
	struct rsend *iprev, *inext; /* posted: on its connection's inflight list */
};

struct rbufdesc {
	struct rwr wr;
	unsigned idx;
};

struct rconn {
	struct nfsd_conn *c;
	struct nfsd_server *srv;
	struct rdev *dev;
	struct rpool *pool; /* this loop's, for dev */
	struct rdma_cm_id *id;
	struct rdma_event_channel *ech;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct nfsd_op cq_op, cm_op;
	uint8_t *region; /* RDMA_CREDITS receive + RDMA_NSEND send buffers */
	struct ibv_mr *mr;
	struct rbufdesc rdesc[RDMA_CREDITS];
	int sfree[RDMA_NSEND];
	unsigned nsfree;
	unsigned send_inline; /* what the peer receives inline */
	unsigned sq_free;
	unsigned recv_posted;
	struct rmsg *readq, *readq_tail;   /* calls waiting for a pool buffer */
	struct rsend *sendq, *sendq_tail;  /* sends waiting for resources */
	struct rconn *wnext;               /* pool waiters */
	bool waiting;                      /* on pool->waiters */
	unsigned sq_total;
	uint32_t ird; /* responder resources accepted */
	/* what is posted and holds memory: sends until their completion,
	 * calls until their last RDMA Read completes */
	struct rsend *inflight;
	struct rmsg *reading;
	/* teardown: dying (killed), kill_ran (its posted step ran), closing
	 * (the watches are being dropped), the deadline of the flushes */
	bool dying, kill_ran, closing;
	unsigned watches; /* armed watches whose callback is still to come */
	struct nfsd_post_fn killfn;
	int tfd;
	struct nfsd_op t_op;
};

#define RDMA_FLUSH_WAIT_S 5 /* a dying connection's flushes, at most */

struct rlisten {
	struct nfsd_server *srv;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct nfsd_op op;
	uint16_t port;
};

/*
 * Memory the server's procedures reply from (nfsd_server_rdma_register:
 * braid-ds's read buffers), registered with every device's PD, so a READ's
 * data goes by RDMA Write from where it lies.
 */
#define RDMA_MAX_DEVS 4
struct rreg {
	void *addr;
	size_t len;
	struct ibv_mr *mr[RDMA_MAX_DEVS]; /* by the device's index */
	struct rreg *next;
};

struct nfsd_rdma {
	struct rlisten ln[RDMA_MAX_LISTEN];
	unsigned n;
	pthread_mutex_t mu; /* devs, regs */
	struct rdev *devs;
	unsigned ndevs;
	struct rreg *regs;
	struct rpool **pools; /* per loop: a list, one per device */
};

static const struct nfsd_xprt_ops rdma_xprt;
static struct rwr write_wr = { WR_WRITE };

/* BRAID_RDMA_TRACE=1: one line on stderr per message, reply and failure */
static int trace_on = -1;
#define RTRACE(...)                                                                       \
	do {                                                                              \
		if (trace_on < 0) {                                                       \
			const char *e_ = getenv("BRAID_RDMA_TRACE");                      \
			trace_on = e_ && *e_ && strcmp(e_, "0");                          \
		}                                                                         \
		if (trace_on)                                                             \
			fprintf(stderr, "rdma: " __VA_ARGS__);                            \
	} while (0)

static void set_nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* ------------------------------------------------------------ devices, pools */

static struct rdev *dev_get(struct nfsd_rdma *R, struct ibv_context *verbs)
{
	pthread_mutex_lock(&R->mu);
	struct rdev *d;
	for (d = R->devs; d; d = d->next)
		if (d->verbs == verbs)
			goto out;
	d = calloc(1, sizeof(*d));
	if (!d)
		goto out;
	d->verbs = verbs;
	d->pd = ibv_alloc_pd(verbs);
	if (!d->pd || ibv_query_device(verbs, &d->attr)) {
		if (d->pd)
			ibv_dealloc_pd(d->pd);
		free(d);
		d = NULL;
		goto out;
	}
	if (R->ndevs == RDMA_MAX_DEVS) {
		ibv_dealloc_pd(d->pd);
		free(d);
		d = NULL;
		goto out;
	}
	d->idx = R->ndevs++;
	for (struct rreg *g = R->regs; g; g = g->next)
		g->mr[d->idx] = ibv_reg_mr(d->pd, g->addr, g->len, IBV_ACCESS_LOCAL_WRITE);
	d->next = R->devs;
	R->devs = d;
out:
	pthread_mutex_unlock(&R->mu);
	return d;
}

static struct rpool *pool_get(struct nfsd_rdma *R, struct nfsd_loop *l, struct rdev *d)
{
	struct rpool *p;
	for (p = R->pools[l->idx]; p; p = p->next)
		if (p->dev == d)
			return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->dev = d;
	p->loop = l;
	p->cap = l->srv->opts.max_record + RDMA_INLINE;
	p->next = R->pools[l->idx];
	R->pools[l->idx] = p;
	return p;
}

static void pool_release(struct nfsd_rbuf *rb);
static void conn_kick(struct rconn *rc);

static size_t pool_stride(const struct rpool *p)
{
	return (offsetof(struct rmsg, rb.data) + p->cap + 63) & ~(size_t)63;
}

static bool pool_grow(struct rpool *p)
{
	if (p->n >= RDMA_POOL_MAX)
		return false;
	size_t stride = pool_stride(p), sz = stride * RDMA_POOL_GROW;
	struct rregion *g = calloc(1, sizeof(*g));
	if (!g || posix_memalign(&g->mem, 4096, sz)) {
		free(g);
		return false;
	}
	g->mr = ibv_reg_mr(p->dev->pd, g->mem, sz,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!g->mr) {
		RTRACE("cannot register %zu bytes of buffers: %s\n", sz, strerror(errno));
		free(g->mem);
		free(g);
		return false;
	}
	g->next = p->regions;
	p->regions = g;
	for (unsigned i = 0; i < RDMA_POOL_GROW; i++) {
		struct rmsg *m = (struct rmsg *)((uint8_t *)g->mem + i * stride);
		memset(m, 0, sizeof(*m));
		m->pool = p;
		m->lkey = g->mr->lkey;
		m->rb.cap = p->cap;
		m->rb.release = pool_release;
		m->next = p->free;
		p->free = m;
	}
	p->n += RDMA_POOL_GROW;
	return true;
}

/* A registered buffer, or NULL (the caller waits: pool_wait) */
static struct rmsg *pool_take(struct rpool *p)
{
	if (!p->free && !pool_grow(p))
		return NULL;
	struct rmsg *m = p->free;
	p->free = m->next;
	m->next = NULL;
	m->wr.kind = WR_READ;
	m->rb.refs = 1;
	m->reads_left = 0;
	m->read_failed = false;
	m->len = 0;
	return m;
}

static void pool_wait(struct rconn *rc)
{
	if (rc->waiting)
		return;
	rc->waiting = true;
	rc->wnext = rc->pool->waiters;
	rc->pool->waiters = rc;
}

static void pool_unwait(struct rconn *rc)
{
	if (!rc->waiting)
		return;
	for (struct rconn **pp = &rc->pool->waiters; *pp; pp = &(*pp)->wnext)
		if (*pp == rc) {
			*pp = rc->wnext;
			break;
		}
	rc->waiting = false;
}

static void pool_put(struct rmsg *m)
{
	struct rpool *p = m->pool;
	m->next = p->free;
	p->free = m;
	/* wake one waiter: it takes what it needs and waits again if short */
	struct rconn *rc = p->waiters;
	if (rc) {
		p->waiters = rc->wnext;
		rc->waiting = false;
		conn_kick(rc);
	}
}

static void pool_release(struct nfsd_rbuf *rb)
{
	pool_put((struct rmsg *)((uint8_t *)rb - offsetof(struct rmsg, rb)));
}

static void pool_free(struct rpool *p)
{
	while (p->regions) {
		struct rregion *g = p->regions;
		p->regions = g->next;
		ibv_dereg_mr(g->mr);
		free(g->mem);
		free(g);
	}
	free(p);
}

static void msg_release_malloc(struct nfsd_rbuf *rb)
{
	free((uint8_t *)rb - offsetof(struct rmsg, rb));
}

static struct rmsg *msg_malloc(size_t cap)
{
	struct rmsg *m = malloc(offsetof(struct rmsg, rb.data) + (cap ? cap : 4));
	if (!m)
		return NULL;
	memset(m, 0, offsetof(struct rmsg, rb.data));
	m->wr.kind = WR_READ;
	m->rb.refs = 1;
	m->rb.cap = cap;
	m->rb.release = msg_release_malloc;
	return m;
}

static void msg_put(struct rmsg *m)
{
	nfsd_rbuf_put(&m->rb);
}

/* ------------------------------------------------------------ sending */

static uint8_t *sbuf_ptr(struct rconn *rc, int i)
{
	return rc->region + (size_t)(RDMA_CREDITS + i) * RDMA_INLINE;
}

static void inflight_del(struct rconn *rc, struct rsend *s)
{
	if (s->iprev)
		s->iprev->inext = s->inext;
	else if (rc->inflight == s)
		rc->inflight = s->inext;
	else
		return; /* not on it */
	if (s->inext)
		s->inext->iprev = s->iprev;
	s->iprev = s->inext = NULL;
}

static void reading_del(struct rconn *rc, struct rmsg *m)
{
	if (m->iprev)
		m->iprev->inext = m->inext;
	else if (rc->reading == m)
		rc->reading = m->inext;
	else
		return;
	if (m->inext)
		m->inext->iprev = m->iprev;
	m->iprev = m->inext = NULL;
}

static void rsend_free(struct rconn *rc, struct rsend *s)
{
	inflight_del(rc, s);
	if (s->sbuf >= 0)
		rc->sfree[rc->nsfree++] = s->sbuf;
	if (s->stage)
		pool_put(s->stage);
	if (s->r)
		nfsd_req_free(rc->c->loop, s->r);
	if (s->call)
		msg_put(s->call);
	free(s->raw);
	free(s);
}

static void sendq_add(struct rconn *rc, struct rsend *s)
{
	s->next = NULL;
	if (rc->sendq_tail)
		rc->sendq_tail->next = s;
	else
		rc->sendq = s;
	rc->sendq_tail = s;
}

static int post_write(struct rconn *rc, const struct rdma_seg *seg, const uint8_t *src,
		      uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)src, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = { .wr_id = (uintptr_t)&write_wr,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED };
	wr.wr.rdma.remote_addr = seg->offset;
	wr.wr.rdma.rkey = seg->handle;
	struct ibv_send_wr *bad;
	int rc_ = ibv_post_send(rc->qp, &wr, &bad);
	if (rc_ == 0)
		rc->sq_free--;
	return rc_;
}

/*
 * Write len bytes of src (registered: lkey) across chunk segs, filling
 * each in turn; the lengths used go to used[].  -1: a post failed.
 */
static int write_chunk(struct rconn *rc, const struct rdma_seg *segs, unsigned nseg,
		       const uint8_t *src, size_t len, uint32_t lkey, uint32_t *used)
{
	for (unsigned i = 0; i < nseg; i++) {
		uint32_t n = len < segs[i].length ? (uint32_t)len : segs[i].length;
		used[i] = n;
		if (n && post_write(rc, &segs[i], src, n, lkey))
			return -1;
		src += n;
		len -= n;
	}
	return 0;
}

/* Segments a chunk's write needs for len bytes. */
static unsigned chunk_wrs(const struct rdma_seg *segs, unsigned nseg, size_t len)
{
	unsigned k = 0;
	for (unsigned i = 0; i < nseg && len; i++, k++)
		len -= len < segs[i].length ? len : segs[i].length;
	return k;
}

static uint64_t chunk_total(const struct rdma_seg *segs, unsigned nseg)
{
	uint64_t t = 0;
	for (unsigned i = 0; i < nseg; i++)
		t += segs[i].length;
	return t;
}

static int post_send(struct rconn *rc, struct rsend *s, size_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)sbuf_ptr(rc, s->sbuf),
			       .length = (uint32_t)len,
			       .lkey = rc->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = (uintptr_t)s,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;
	if (ibv_post_send(rc->qp, &wr, &bad))
		return -1;
	rc->sq_free--;
	s->nwr++;
	s->iprev = NULL;
	s->inext = rc->inflight;
	if (rc->inflight)
		rc->inflight->iprev = s;
	rc->inflight = s;
	return 0;
}

/* Where the reply's payload sits among its iovecs: index, or -1. */
static int payload_iov(const struct nfsd_req *r)
{
	if (!r->pay_ptr)
		return -1;
	for (unsigned i = 0; i < r->enc.niov; i++)
		if (r->enc.iov[i].iov_base == r->pay_ptr && r->enc.iov[i].iov_len == r->pay_len)
			return (int)i;
	return -1;
}

/* The lkey of registered memory holding [p, p + len) on d, or 0: none. */
static uint32_t reg_lkey(struct nfsd_rdma *R, const struct rdev *d, const void *p, size_t len)
{
	uint32_t lkey = 0;
	pthread_mutex_lock(&R->mu);
	for (struct rreg *g = R->regs; g; g = g->next)
		if ((const uint8_t *)p >= (uint8_t *)g->addr &&
		    (const uint8_t *)p + len <= (uint8_t *)g->addr + g->len) {
			lkey = g->mr[d->idx] ? g->mr[d->idx]->lkey : 0;
			break;
		}
	pthread_mutex_unlock(&R->mu);
	return lkey;
}

/*
 * Gather the reply (after its record mark) into dst, leaving out
 * [skip_at, skip_at + skip_len) of the stream.
 */
static void gather(const struct nfsd_req *r, uint8_t *dst, size_t skip_at, size_t skip_len)
{
	size_t pos = 0, mark = 4;
	for (unsigned i = 0; i < r->enc.niov; i++) {
		const uint8_t *p = r->enc.iov[i].iov_base;
		size_t n = r->enc.iov[i].iov_len;
		if (mark) {
			size_t k = n < mark ? n : mark;
			p += k;
			n -= k;
			mark -= k;
		}
		while (n) {
			if (pos >= skip_at && pos < skip_at + skip_len) {
				size_t k = skip_at + skip_len - pos;
				k = k < n ? k : n;
				p += k;
				n -= k;
				pos += k;
				continue;
			}
			size_t k = n;
			if (pos < skip_at && pos + k > skip_at)
				k = skip_at - pos;
			memcpy(dst, p, k);
			dst += k;
			p += k;
			n -= k;
			pos += k;
		}
	}
}

/* Try to send s now: 1 sent (or dropped), 0 wait for resources. */
static int try_send(struct rconn *rc, struct rsend *s)
{
	struct nfsd_loop *l = rc->c->loop;
	if (s->sbuf < 0) {
		if (!rc->nsfree)
			return 0;
		s->sbuf = rc->sfree[--rc->nsfree];
	}
	uint8_t *out = sbuf_ptr(rc, s->sbuf);
	if (s->raw) {
		if (rc->sq_free < 1)
			return 0;
		memcpy(out, s->raw, s->rawlen);
		l->st.rdma_inline_bytes += s->rawlen;
		if (post_send(rc, s, s->rawlen))
			goto fail;
		return 1;
	}
	struct nfsd_req *r = s->r;
	const struct rdma_hdr *h = &s->call->hdr;
	size_t L = r->enc.len - 4; /* the RPC reply, after the record mark */
	size_t pay_at = 0, pay_len = 0, pay_pad = 0;
	int pi = -1;
	if (h->nwch && r->pay_len && r->cred.gss_service < 2 &&
	    r->pay_len <= chunk_total(h->wseg, h->wch[0].n) && (pi = payload_iov(r)) >= 0) {
		for (int i = 0; i < pi; i++)
			pay_at += r->enc.iov[i].iov_len;
		pay_at -= 4;
		pay_len = r->pay_len;
		pay_pad = (4 - (pay_len & 3)) & 3;
	}
	size_t M = L - pay_len - pay_pad; /* what goes inline or in the reply chunk */
	RTRACE("reply xid %08x len %zu payload %u (%s) rest %zu wch %u reply chunk %u(%llu)\n",
	       r->xid, L, r->pay_len, pay_len ? "write chunk" : pi < 0 && r->pay_len ? "not found" : "inline",
	       M, h->nwch, h->nreply,
	       (unsigned long long)(h->has_reply ? chunk_total(h->reply, h->nreply) : 0));
	/* the header: fixed part, empty read list, the write list, the reply chunk */
	size_t wl = 4;
	for (unsigned k = 0; k < h->nwch; k++)
		wl += 8 + 16 * h->wch[k].n;
	size_t hl_msg = 16 + 4 + wl + 4;
	bool nomsg = hl_msg + M > rc->send_inline;
	/* RDMA_NOMSG echoes every reply segment with its length written, as
	 * the write list echoes its chunks: that header too must fit the
	 * peer's receive (RFC 8797) */
	size_t hl = nomsg ? hl_msg + 4 + 16 * h->nreply : hl_msg;
	if ((nomsg && (!h->has_reply || M > chunk_total(h->reply, h->nreply))) ||
	    hl > rc->send_inline) {
		/* no room inline and no reply chunk large enough, or the
		 * header itself too long for the peer: ERR_CHUNK */
		free(s->raw);
		s->raw = malloc(20);
		if (!s->raw) {
			rsend_free(rc, s);
			return 1;
		}
		rdma_hdr_error(s->raw, r->xid, RDMA_CREDITS, RDMA_ERR_CHUNK);
		s->rawlen = 20;
		l->st.rdma_errors++;
		nfsd_req_free(l, s->r);
		s->r = NULL;
		return try_send(rc, s);
	}
	unsigned need = 1;
	if (pay_len)
		need += chunk_wrs(h->wseg, h->wch[0].n, pay_len);
	if (nomsg)
		need += chunk_wrs(h->reply, h->nreply, M);
	if (rc->sq_free < need)
		return 0;
	/* the payload from where it lies when that memory is registered */
	uint32_t pay_lkey = pay_len ? reg_lkey(rc->srv->rdma, rc->dev, r->pay_ptr, pay_len) : 0;
	if (((pay_len && !pay_lkey) || nomsg) && !s->stage) {
		s->stage = pool_take(rc->pool);
		if (!s->stage) {
			pool_wait(rc);
			return 0;
		}
	}
	uint32_t wused[RDMA_MAX_SEGS] = { 0 }, rused[RDMA_MAX_SEGS] = { 0 };
	size_t off = 0;
	if (pay_len && pay_lkey) {
		if (write_chunk(rc, h->wseg, h->wch[0].n, r->pay_ptr, pay_len, pay_lkey, wused))
			goto fail;
		l->st.rdma_write_bytes += pay_len;
		l->st.rdma_write_zerocopy_bytes += pay_len;
	} else if (pay_len) {
		memcpy(s->stage->rb.data, r->pay_ptr, pay_len);
		if (write_chunk(rc, h->wseg, h->wch[0].n, s->stage->rb.data, pay_len, s->stage->lkey,
				wused))
			goto fail;
		l->st.rdma_write_bytes += pay_len;
		off = (pay_len + 63) & ~(size_t)63;
	}
	uint8_t *p = out;
	p = rdma_hdr_put_fixed(p, r->xid, RDMA_CREDITS, nomsg ? RDMA_NOMSG : RDMA_MSG);
	p = rdma_hdr_put32(p, 0); /* read list */
	for (unsigned k = 0; k < h->nwch; k++) {
		p = rdma_hdr_put32(p, 1);
		p = rdma_hdr_put32(p, h->wch[k].n);
		for (unsigned i = 0; i < h->wch[k].n; i++) {
			struct rdma_seg sg = h->wseg[h->wch[k].first + i];
			sg.length = k == 0 ? wused[i] : 0;
			p = rdma_hdr_put_seg(p, &sg);
		}
	}
	p = rdma_hdr_put32(p, 0); /* end of write list */
	if (nomsg && off + M > s->stage->rb.cap) {
		/* (a reply larger than a buffer: max_record bounds both) */
		RTRACE("reply xid %08x: %zu bytes do not fit a buffer\n", r->xid, off + M);
		goto fail;
	}
	if (nomsg) {
		uint8_t *body = s->stage->rb.data + off;
		gather(r, body, pay_len ? pay_at : SIZE_MAX, pay_len + pay_pad);
		if (write_chunk(rc, h->reply, h->nreply, body, M, s->stage->lkey, rused))
			goto fail;
		l->st.rdma_reply_chunk_bytes += M;
		p = rdma_hdr_put32(p, 1);
		p = rdma_hdr_put32(p, h->nreply);
		for (unsigned i = 0; i < h->nreply; i++) {
			struct rdma_seg sg = h->reply[i];
			sg.length = rused[i];
			p = rdma_hdr_put_seg(p, &sg);
		}
	} else {
		p = rdma_hdr_put32(p, 0); /* no reply chunk */
		gather(r, p, pay_len ? pay_at : SIZE_MAX, pay_len + pay_pad);
		p += M;
		l->st.rdma_inline_bytes += M;
	}
	if (post_send(rc, s, (size_t)(p - out)))
		goto fail;
	return 1;
fail:
	nfsd_conn_kill(rc->c);
	rsend_free(rc, s);
	return 1;
}

static void send_or_queue(struct rconn *rc, struct rsend *s)
{
	if (rc->dying) {
		rsend_free(rc, s);
		return;
	}
	if (!try_send(rc, s))
		sendq_add(rc, s);
}

/* Send len bytes of raw (malloc'd; the send owns it from here). */
static void send_raw(struct rconn *rc, uint8_t *raw, size_t len)
{
	struct rsend *s = calloc(1, sizeof(*s));
	if (!s) {
		free(raw);
		return;
	}
	s->wr.kind = WR_SEND;
	s->sbuf = -1;
	s->raw = raw;
	s->rawlen = len;
	send_or_queue(rc, s);
}

static void send_error(struct rconn *rc, uint32_t xid, uint32_t err)
{
	uint8_t *b = malloc(28);
	if (!b)
		return;
	size_t n = rdma_hdr_error(b, xid, RDMA_CREDITS, err);
	rc->c->loop->st.rdma_errors++;
	send_raw(rc, b, n);
}

static void rdma_queue_reply(struct nfsd_conn *c, struct nfsd_req *r)
{
	struct rconn *rc = c->xprt_priv;
	struct rsend *s = calloc(1, sizeof(*s));
	if (!s) {
		nfsd_req_free(c->loop, r);
		return;
	}
	s->wr.kind = WR_SEND;
	s->sbuf = -1;
	s->r = r;
	/* the call's chunk lists live with its buffer: keep it */
	s->call = (struct rmsg *)((uint8_t *)r->rbuf - offsetof(struct rmsg, rb));
	s->call->rb.refs++;
	send_or_queue(rc, s);
}

/*
 * The engine's queued messages (back-channel calls): each record goes as
 * an RDMA_MSG of its own, copied, so they count as sent at once.
 */
static void rdma_start_send(struct nfsd_conn *c, struct msghdr *m)
{
	struct rconn *rc = c->xprt_priv;
	size_t total = 0;
	for (size_t i = 0; i < m->msg_iovlen; i++)
		total += m->msg_iov[i].iov_len;
	uint8_t *flat = malloc(total ? total : 1);
	if (!flat) {
		nfsd_conn_send_done(c, -ENOMEM);
		return;
	}
	size_t o = 0;
	for (size_t i = 0; i < m->msg_iovlen; i++) {
		memcpy(flat + o, m->msg_iov[i].iov_base, m->msg_iov[i].iov_len);
		o += m->msg_iov[i].iov_len;
	}
	for (o = 0; o + 8 <= total;) {
		uint32_t mark = rdma_get32(flat + o), len = mark & 0x7fffffffu;
		if (len < 4 || len > total - o - 4 || 28 + len > rc->send_inline) {
			free(flat);
			nfsd_conn_send_done(c, -EMSGSIZE);
			return;
		}
		uint8_t *b = malloc(28 + len);
		if (b) {
			uint8_t *p = rdma_hdr_put_fixed(b, rdma_get32(flat + o + 4), RDMA_CREDITS,
							RDMA_MSG);
			p = rdma_hdr_put32(p, 0);
			p = rdma_hdr_put32(p, 0);
			p = rdma_hdr_put32(p, 0);
			memcpy(p, flat + o + 4, len);
			send_raw(rc, b, (size_t)(p - b) + len);
		}
		o += 4 + len;
	}
	free(flat);
	nfsd_conn_send_done(c, (ssize_t)total);
}

/* ------------------------------------------------------------ receiving */

/* Post receive buffer i: 0, or the verbs error. */
static int post_recv(struct rconn *rc, unsigned i)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(rc->region + (size_t)i * RDMA_INLINE),
			       .length = RDMA_INLINE,
			       .lkey = rc->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = (uintptr_t)&rc->rdesc[i], .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	int err = ibv_post_recv(rc->qp, &wr, &bad);
	if (!err)
		rc->recv_posted++;
	return err;
}

static void dispatch(struct rconn *rc, struct rmsg *m)
{
	struct nfsd_conn *c = rc->c;
	c->loop->st.rdma_calls++;
	c->rb = &m->rb;
	nfsd_svc_record(c, m->rb.data, m->len);
	c->rb = NULL;
	msg_put(m);
}

/*
 * A call with read chunks, its inline part in m (a malloc'd copy): in a
 * pool buffer, lay out the call and pull each chunk's data to its place.
 * 1 done (reads posted, or the call answered with an error), 0 wait.
 */
static int start_reads(struct rconn *rc, struct rmsg *m)
{
	const struct rdma_hdr *h = &m->hdr;
	if (rc->sq_free < h->nread)
		return 0;
	struct rmsg *b = pool_take(rc->pool);
	if (!b) {
		RTRACE("xid %08x: waiting for a buffer\n", h->xid);
		pool_wait(rc);
		return 0;
	}
	b->hdr = *h;
	uint8_t *out = b->rb.data;
	const uint8_t *in = m->rb.data;
	size_t o = 0, in_off = 0;
	unsigned i = 0;
	while (i < h->nread) {
		uint32_t pos = h->read_pos[i];
		memcpy(out + o, in + in_off, pos - in_off);
		o += pos - in_off;
		in_off = pos;
		size_t clen = 0;
		for (; i < h->nread && h->read_pos[i] == pos; i++) {
			const struct rdma_seg *sg = &h->read[i];
			struct ibv_sge sge = { .addr = (uintptr_t)(out + o),
					       .length = sg->length,
					       .lkey = b->lkey };
			struct ibv_send_wr wr = { .wr_id = (uintptr_t)b,
						  .sg_list = &sge,
						  .num_sge = 1,
						  .opcode = IBV_WR_RDMA_READ,
						  .send_flags = IBV_SEND_SIGNALED };
			wr.wr.rdma.remote_addr = sg->offset;
			wr.wr.rdma.rkey = sg->handle;
			struct ibv_send_wr *bad;
			if (sg->length) {
				if (ibv_post_send(rc->qp, &wr, &bad)) {
					b->read_failed = true;
					break;
				}
				rc->sq_free--;
				b->reads_left++;
			}
			o += sg->length;
			clen += sg->length;
		}
		if (b->read_failed)
			break;
		rc->c->loop->st.rdma_read_bytes += clen;
		/* the chunk carries no XDR padding (RFC 8166 §3.5.3) */
		size_t pad = pos ? (4 - (clen & 3)) & 3 : 0;
		memset(out + o, 0, pad);
		o += pad;
	}
	memcpy(out + o, in + in_off, m->len - in_off);
	o += m->len - in_off;
	b->len = o;
	msg_put(m);
	if (b->reads_left) {
		b->iprev = NULL;
		b->inext = rc->reading;
		if (rc->reading)
			rc->reading->iprev = b;
		rc->reading = b;
	}
	if (b->read_failed) {
		nfsd_conn_kill(rc->c);
		if (!b->reads_left)
			msg_put(b); /* else freed when its last read completes, or at teardown */
		return 1;
	}
	RTRACE("xid %08x: %u RDMA Reads posted, call of %zu bytes\n", b->hdr.xid, b->reads_left,
	       b->len);
	if (!b->reads_left)
		dispatch(rc, b);
	return 1;
}

static void read_done(struct rconn *rc, struct rmsg *b, bool ok)
{
	if (!ok)
		b->read_failed = true;
	if (--b->reads_left)
		return;
	reading_del(rc, b);
	RTRACE("xid %08x: reads done%s\n", b->hdr.xid, b->read_failed ? " (failed)" : "");
	if (b->read_failed || rc->dying) {
		msg_put(b);
		return;
	}
	dispatch(rc, b);
}

static void readq_add(struct rconn *rc, struct rmsg *m)
{
	m->next = NULL;
	if (rc->readq_tail)
		rc->readq_tail->next = m;
	else
		rc->readq = m;
	rc->readq_tail = m;
}

/* Resources came back: go on with what waits, in order. */
static void conn_kick(struct rconn *rc)
{
	if (rc->dying)
		return;
	while (rc->readq) {
		struct rmsg *m = rc->readq;
		if (!start_reads(rc, m))
			break;
		rc->readq = m->next;
		if (!rc->readq)
			rc->readq_tail = NULL;
	}
	/* any that can go, not only the first: a reply waiting for a pool
	 * buffer must not hold back the replies that would free one */
	struct rsend **pp = &rc->sendq;
	while (*pp && !rc->dying) {
		struct rsend *s = *pp, *next = s->next;
		if (try_send(rc, s))
			*pp = next; /* s is posted or freed: not touched again */
		else
			pp = &s->next;
	}
	rc->sendq_tail = NULL;
	for (struct rsend *s = rc->sendq; s; s = s->next)
		rc->sendq_tail = s;
}

/* One received message, n bytes at p. */
static void recv_msg(struct rconn *rc, const uint8_t *p, size_t n)
{
	struct nfsd_loop *l = rc->c->loop;
	struct rdma_hdr h;
	size_t hl = 0;
	l->st.rdma_inline_in_bytes += n;
	int err = rdma_hdr_decode(p, n, &h, &hl);
	RTRACE("recv %zu bytes: xid %08x proc %u err %d reads %u wch %u reply %u\n", n, h.xid,
	       h.proc, err, err ? 0 : h.nread, err ? 0 : h.nwch, err ? 0 : h.nreply);
	if (err == RDMA_DECODE_SHORT) {
		l->st.garbage++;
		return; /* not even an xid: nothing to answer */
	}
	if (err == RDMA_DECODE_VERS) {
		send_error(rc, h.xid, RDMA_ERR_VERS);
		return;
	}
	if (err == RDMA_DECODE_ERRMSG)
		return; /* an RDMA_ERROR from the peer: nothing to answer */
	if (err) {
		l->st.garbage++;
		send_error(rc, h.xid, RDMA_ERR_CHUNK);
		return;
	}
	size_t blen = n - hl;
	if (h.proc == RDMA_NOMSG)
		blen = 0;
	/* what the assembled call would need */
	uint64_t need = blen;
	for (unsigned i = 0; i < h.nread; i++)
		need += h.read[i].length + 3;
	if (need > rc->pool->cap || (h.proc == RDMA_MSG && h.nread && h.read_pos[h.nread - 1] > blen)) {
		l->st.records_too_big++;
		send_error(rc, h.xid, RDMA_ERR_CHUNK);
		return;
	}
	struct rmsg *m = msg_malloc(blen);
	if (!m)
		return;
	m->hdr = h;
	memcpy(m->rb.data, p + hl, blen);
	m->len = blen;
	if (!h.nread) {
		dispatch(rc, m);
		return;
	}
	if (rc->readq || !start_reads(rc, m))
		readq_add(rc, m);
}

/* ------------------------------------------------------------ completions */

static void conn_teardown_maybe(struct rconn *rc, bool force);

static void poll_cq(struct rconn *rc)
{
	struct ibv_wc wc[16];
	int n;
	while ((n = ibv_poll_cq(rc->cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			struct rwr *w = (struct rwr *)(uintptr_t)wc[i].wr_id;
			bool ok = wc[i].status == IBV_WC_SUCCESS;
			if (!ok && !rc->dying) {
				RTRACE("work request (kind %u) failed: %s; closing\n", w->kind,
				       ibv_wc_status_str(wc[i].status));
				nfsd_conn_kill(rc->c);
			}
			switch (w->kind) {
			case WR_RECV: {
				struct rbufdesc *d = (struct rbufdesc *)w;
				rc->recv_posted--;
				if (ok && !rc->dying) {
					recv_msg(rc, rc->region + (size_t)d->idx * RDMA_INLINE,
						 wc[i].byte_len);
					if (!rc->dying)
						if (post_recv(rc, d->idx))
							nfsd_conn_kill(rc->c);
				}
				break;
			}
			case WR_SEND: {
				rc->sq_free++;
				rsend_free(rc, (struct rsend *)w);
				break;
			}
			case WR_READ:
				rc->sq_free++;
				read_done(rc, (struct rmsg *)w, ok);
				break;
			case WR_WRITE:
				rc->sq_free++;
				break;
			}
		}
	}
	if (n < 0 && !rc->dying)
		nfsd_conn_kill(rc->c);
	conn_kick(rc);
}

static void cq_event(struct nfsd_loop *l, struct nfsd_op *op, int res)
{
	struct rconn *rc = op->arg;
	(void)l;
	rc->watches--;
	if (!rc->closing) {
		struct ibv_cq *cq;
		void *ctx;
		if (res >= 0 && ibv_get_cq_event(rc->cch, &cq, &ctx) == 0)
			ibv_ack_cq_events(cq, 1);
		ibv_req_notify_cq(rc->cq, 0);
		poll_cq(rc);
		if (!rc->closing) {
			nfsd_loop_watch(rc->c->loop, &rc->cq_op);
			rc->watches++;
		}
	}
	if (rc->dying)
		conn_teardown_maybe(rc, false);
}

static void cm_event(struct nfsd_loop *l, struct nfsd_op *op, int res)
{
	struct rconn *rc = op->arg;
	(void)l, (void)res;
	rc->watches--;
	struct rdma_cm_event *ev;
	bool down = false;
	while (rdma_get_cm_event(rc->ech, &ev) == 0) {
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED ||
		    ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL ||
		    ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT)
			down = true;
		rdma_ack_cm_event(ev);
	}
	if (down && !rc->dying)
		nfsd_conn_kill(rc->c);
	if (!rc->closing) {
		nfsd_loop_watch(rc->c->loop, &rc->cm_op);
		rc->watches++;
	}
	if (rc->dying)
		conn_teardown_maybe(rc, false);
}

/* ------------------------------------------------------------ connections */

static void conn_destroy(struct rconn *rc)
{
	if (rc->id && rc->id->qp)
		rdma_destroy_qp(rc->id);
	/* nothing posted completes any more: what it held goes */
	while (rc->inflight)
		rsend_free(rc, rc->inflight);
	while (rc->reading) {
		struct rmsg *m = rc->reading;
		reading_del(rc, m);
		msg_put(m);
	}
	if (rc->tfd >= 0)
		close(rc->tfd);
	while (rc->sendq) {
		struct rsend *s = rc->sendq;
		rc->sendq = s->next;
		rsend_free(rc, s);
	}
	while (rc->readq) {
		struct rmsg *m = rc->readq;
		rc->readq = m->next;
		msg_put(m);
	}
	if (rc->cq)
		ibv_destroy_cq(rc->cq);
	if (rc->cch)
		ibv_destroy_comp_channel(rc->cch);
	if (rc->mr)
		ibv_dereg_mr(rc->mr);
	free(rc->region);
	if (rc->id)
		rdma_destroy_id(rc->id);
	if (rc->ech)
		rdma_destroy_event_channel(rc->ech);
	free(rc);
}

/*
 * Teardown, always from the top of a callback of this loop (a watch, the
 * posted step), never inside one of our own calls.  The queue pair is put
 * in error, so what was posted completes, flushed; the completion watch
 * stays armed until every send and RDMA Read has, or until
 * RDMA_FLUSH_WAIT_S has passed (a provider that never flushes: rxe does
 * not flush a user queue pair's receives, which we therefore never wait
 * for).  Then the watches are dropped, and once the last has reported, the
 * queue pair goes, what was still posted is freed, and the connection
 * with it.
 */
static void conn_teardown_maybe(struct rconn *rc, bool force)
{
	if (!rc->kill_ran)
		return;
	if (!rc->closing) {
		if (!force && rc->sq_free != rc->sq_total)
			return; /* flushes still to come through the watch */
		rc->closing = true;
		struct nfsd_op *ops[3] = { &rc->cq_op, &rc->cm_op, &rc->t_op };
		for (int i = 0; i < 3; i++)
			if (ops[i]->armed && !nfsd_loop_unwatch(rc->c->loop, ops[i]))
				rc->watches--;
	}
	if (rc->watches)
		return;
	struct nfsd_conn *c = rc->c;
	pool_unwait(rc);
	c->xprt_priv = NULL;
	conn_destroy(rc);
	nfsd_conn_closed(c);
}

static void flush_deadline(struct nfsd_loop *l, struct nfsd_op *op, int res)
{
	struct rconn *rc = op->arg;
	(void)l;
	rc->watches--;
	if (res >= 0 && !rc->closing)
		RTRACE("connection closing: flushes still missing after %d s\n", RDMA_FLUSH_WAIT_S);
	conn_teardown_maybe(rc, res >= 0);
}

static void kill_step(struct nfsd_loop *l, void *arg)
{
	struct nfsd_conn *c = arg;
	struct rconn *rc = c->xprt_priv;
	if (rc) { /* (NULL: the server closed it meanwhile) */
		rc->kill_ran = true;
		rc->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		struct itimerspec its = { .it_value = { .tv_sec = RDMA_FLUSH_WAIT_S } };
		if (rc->tfd >= 0 && timerfd_settime(rc->tfd, 0, &its, NULL) == 0) {
			rc->t_op = (struct nfsd_op){ .fd = rc->tfd, .fn = flush_deadline, .arg = rc };
			nfsd_loop_watch(l, &rc->t_op);
			rc->watches++;
		}
		conn_teardown_maybe(rc, rc->tfd < 0);
	}
	nfsd_conn_put(c);
}

static void rdma_kill(struct nfsd_conn *c)
{
	struct rconn *rc = c->xprt_priv;
	if (!rc || rc->dying)
		return;
	rc->dying = true;
	rdma_disconnect(rc->id);
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	ibv_modify_qp(rc->qp, &qa, IBV_QP_STATE);
	rc->killfn.fn = kill_step;
	rc->killfn.arg = c;
	nfsd_conn_get(c);
	nfsd_loop_post_fn(c->loop, &rc->killfn);
}

static void rdma_attach(struct nfsd_conn *c)
{
	struct rconn *rc = c->xprt_priv;
	rc->pool = pool_get(rc->srv->rdma, c->loop, rc->dev);
	if (!rc->pool) {
		nfsd_conn_kill(c);
		return;
	}
	rc->cq_op = (struct nfsd_op){ .fd = rc->cch->fd, .fn = cq_event, .arg = rc };
	rc->cm_op = (struct nfsd_op){ .fd = rc->ech->fd, .fn = cm_event, .arg = rc };
	nfsd_loop_watch(c->loop, &rc->cq_op);
	nfsd_loop_watch(c->loop, &rc->cm_op);
	rc->watches = 2;
	/* completions before the watch: look now */
	poll_cq(rc);
}

/* At shutdown the loop closes everything at once: nothing waits. */
static void rdma_detach(struct nfsd_conn *c)
{
	struct rconn *rc = c->xprt_priv;
	if (!rc)
		return;
	c->xprt_priv = NULL;
	rc->dying = true;
	pool_unwait(rc);
	conn_destroy(rc);
}

static void rdma_noop(struct nfsd_conn *c)
{
	(void)c;
}

static const struct nfsd_xprt_ops rdma_xprt = {
	.name = "rdma",
	.attach = rdma_attach,
	.arm_recv = rdma_noop,
	.start_send = rdma_start_send,
	.wait_connect = rdma_noop,
	.detach = rdma_detach,
	.msg = true,
	.queue_reply = rdma_queue_reply,
	.kill = rdma_kill,
};

/* A connection request on a listener (loop 0). */
static void accept_one(struct nfsd_server *s, struct rdma_cm_id *id,
		       const struct rdma_conn_param *cp)
{
	struct nfsd_rdma *R = s->rdma;
	struct rconn *rc = calloc(1, sizeof(*rc));
	if (!rc)
		goto reject;
	rc->srv = s;
	rc->id = id;
	rc->tfd = -1;
	rc->send_inline = 1024; /* RFC 8797: without the peer's sizes */
	if (cp->private_data && cp->private_data_len >= 8) {
		const uint8_t *pd = cp->private_data;
		if (rdma_get32(pd) == RDMA_CMP_MAGIC && pd[4] == 1)
			rc->send_inline = ((unsigned)pd[7] + 1) * 1024; /* its receive size */
	}
	if (rc->send_inline > RDMA_INLINE)
		rc->send_inline = RDMA_INLINE;
	rc->dev = dev_get(R, id->verbs);
	if (!rc->dev)
		goto fail;
	rc->ech = rdma_create_event_channel();
	if (!rc->ech || rdma_migrate_id(id, rc->ech))
		goto fail;
	set_nonblock(rc->ech->fd);
	rc->cch = ibv_create_comp_channel(id->verbs);
	if (!rc->cch)
		goto fail;
	set_nonblock(rc->cch->fd);
	rc->cq = ibv_create_cq(id->verbs, RDMA_CREDITS + RDMA_SQ_DEPTH, rc, rc->cch, 0);
	if (!rc->cq || ibv_req_notify_cq(rc->cq, 0))
		goto fail;
	unsigned sq = RDMA_SQ_DEPTH;
	if ((int)sq > rc->dev->attr.max_qp_wr)
		sq = (unsigned)rc->dev->attr.max_qp_wr;
	struct ibv_qp_init_attr qa = {
		.send_cq = rc->cq,
		.recv_cq = rc->cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = sq, .max_recv_wr = RDMA_CREDITS, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	if (rdma_create_qp(id, rc->dev->pd, &qa))
		goto fail;
	rc->qp = id->qp;
	rc->sq_free = rc->sq_total = sq;
	size_t rsz = (size_t)(RDMA_CREDITS + RDMA_NSEND) * RDMA_INLINE;
	if (posix_memalign((void **)&rc->region, 4096, rsz))
		goto fail;
	rc->mr = ibv_reg_mr(rc->dev->pd, rc->region, rsz, IBV_ACCESS_LOCAL_WRITE);
	if (!rc->mr)
		goto fail;
	for (int i = 0; i < RDMA_NSEND; i++)
		rc->sfree[i] = RDMA_NSEND - 1 - i;
	rc->nsfree = RDMA_NSEND;

	unsigned li = atomic_fetch_add(&s->rr, 1) % s->nloops;
	struct nfsd_loop *l = &s->loops[li];
	struct nfsd_conn *c = nfsd_conn_new(l, -1);
	if (!c)
		goto fail;
	rc->c = c;
	c->xprt = &rdma_xprt;
	c->xprt_priv = rc;
	struct sockaddr *pa = rdma_get_peer_addr(id);
	if (pa) {
		c->peerlen = pa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						       : sizeof(struct sockaddr_in);
		memcpy(&c->peer, pa, c->peerlen);
	}
	for (unsigned i = 0; i < RDMA_CREDITS; i++) {
		rc->rdesc[i] = (struct rbufdesc){ { WR_RECV }, i };
		if (post_recv(rc, i))
			goto fail_conn;
	}
	uint8_t priv[8];
	rdma_cmp_encode(priv, RDMA_INLINE, RDMA_INLINE);
	struct rdma_conn_param ap = {
		.private_data = priv,
		.private_data_len = sizeof(priv),
		/* the request's values are already ours (as rdma_cm reports
		 * them): the peer's responder resources are our initiator
		 * depth, the RDMA Reads we may have outstanding */
		.responder_resources = cp->responder_resources,
		.initiator_depth = cp->initiator_depth,
		.rnr_retry_count = 7,
	};
	if (ap.responder_resources > rc->dev->attr.max_qp_rd_atom)
		ap.responder_resources = (uint8_t)rc->dev->attr.max_qp_rd_atom;
	if (ap.initiator_depth > rc->dev->attr.max_qp_init_rd_atom)
		ap.initiator_depth = (uint8_t)rc->dev->attr.max_qp_init_rd_atom;
	rc->ird = ap.responder_resources;
	if (rdma_accept(id, &ap))
		goto fail_conn;
	s->loops[0].st.conns_accepted++;
	s->loops[0].st.rdma_conns++;
	nfsd_loop_post_conn(l, c);
	return;
fail_conn:
	c->xprt_priv = NULL;
	c->closed_fd = true;
	nfsd_conn_put(c);
fail:
	if (id->qp)
		rdma_destroy_qp(id);
reject:
	rdma_reject(id, NULL, 0);
	rdma_destroy_id(id);
	if (rc) {
		rc->id = NULL; /* gone above; the rest goes here */
		conn_destroy(rc);
	}
}

static void listen_event(struct nfsd_loop *l, struct nfsd_op *op, int res)
{
	struct rlisten *ln = op->arg;
	(void)res;
	struct rdma_cm_event *ev;
	while (rdma_get_cm_event(ln->ch, &ev) == 0) {
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			struct rdma_cm_id *id = ev->id;
			struct rdma_conn_param cp = ev->param.conn;
			uint8_t pd[64];
			size_t pl = cp.private_data_len < sizeof(pd) ? cp.private_data_len : sizeof(pd);
			if (cp.private_data && pl)
				memcpy(pd, cp.private_data, pl);
			cp.private_data = pl ? pd : NULL;
			cp.private_data_len = (uint8_t)pl;
			rdma_ack_cm_event(ev);
			accept_one(ln->srv, id, &cp);
		} else {
			rdma_ack_cm_event(ev);
		}
	}
	if (!atomic_load(&l->stop))
		nfsd_loop_watch(l, op);
}

/* ------------------------------------------------------------ server */

static struct nfsd_rdma *rdma_state(struct nfsd_server *s)
{
	if (s->rdma)
		return s->rdma;
	struct nfsd_rdma *R = calloc(1, sizeof(*R));
	if (!R)
		return NULL;
	R->pools = calloc(s->nloops, sizeof(*R->pools));
	if (!R->pools) {
		free(R);
		return NULL;
	}
	pthread_mutex_init(&R->mu, NULL);
	s->rdma = R;
	return R;
}

int nfsd_server_listen_rdma(struct nfsd_server *s, const struct sockaddr *sa, socklen_t len)
{
	(void)len;
	if (s->started)
		return -EBUSY;
	struct nfsd_rdma *R = rdma_state(s);
	if (!R)
		return -ENOMEM;
	if (R->n == RDMA_MAX_LISTEN)
		return -EBUSY;
	struct rlisten *ln = &R->ln[R->n];
	int rc = 0;
	ln->ch = rdma_create_event_channel();
	if (!ln->ch)
		return errno ? -errno : -ENODEV;
	if (rdma_create_id(ln->ch, &ln->id, ln, RDMA_PS_TCP)) {
		rc = -errno;
		goto fail;
	}
	if (rdma_bind_addr(ln->id, (struct sockaddr *)sa)) {
		rc = -errno;
		goto fail;
	}
	if (rdma_listen(ln->id, 128)) {
		rc = -errno;
		goto fail;
	}
	set_nonblock(ln->ch->fd);
	ln->srv = s;
	ln->port = ntohs(rdma_get_src_port(ln->id));
	ln->op = (struct nfsd_op){ .fd = ln->ch->fd, .fn = listen_event, .arg = ln };
	R->n++;
	return 0;
fail:
	if (ln->id)
		rdma_destroy_id(ln->id);
	rdma_destroy_event_channel(ln->ch);
	memset(ln, 0, sizeof(*ln));
	return rc ? rc : -ENODEV;
}

int nfsd_server_rdma_register(struct nfsd_server *s, void *addr, size_t len)
{
	struct nfsd_rdma *R = s->rdma;
	if (!R)
		return 0; /* no RDMA listener: nothing to do */
	struct rreg *g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->addr = addr;
	g->len = len;
	pthread_mutex_lock(&R->mu);
	for (struct rdev *d = R->devs; d; d = d->next)
		g->mr[d->idx] = ibv_reg_mr(d->pd, addr, len, IBV_ACCESS_LOCAL_WRITE);
	g->next = R->regs;
	R->regs = g;
	pthread_mutex_unlock(&R->mu);
	return 0;
}

static void reg_free(struct rreg *g)
{
	for (unsigned i = 0; i < RDMA_MAX_DEVS; i++)
		if (g->mr[i])
			ibv_dereg_mr(g->mr[i]);
	free(g);
}

void nfsd_server_rdma_unregister(struct nfsd_server *s, void *addr)
{
	struct nfsd_rdma *R = s->rdma;
	if (!R)
		return;
	pthread_mutex_lock(&R->mu);
	for (struct rreg **pp = &R->regs; *pp; pp = &(*pp)->next)
		if ((*pp)->addr == addr) {
			struct rreg *g = *pp;
			*pp = g->next;
			reg_free(g);
			break;
		}
	pthread_mutex_unlock(&R->mu);
}

bool nfsd_conn_rdma_limits(const struct nfsd_conn *c, uint32_t *credits, uint32_t *ird)
{
	const struct rconn *rc = c->xprt == &rdma_xprt ? c->xprt_priv : NULL;
	if (!rc)
		return false;
	*credits = RDMA_CREDITS;
	*ird = rc->ird;
	return true;
}

int nfsd_server_listen_rdma_port(struct nfsd_server *s, unsigned idx)
{
	if (!s->rdma || idx >= s->rdma->n)
		return -ENOENT;
	return s->rdma->ln[idx].port;
}

void nfsd_rdma_loop_start(struct nfsd_loop *l)
{
	struct nfsd_rdma *R = l->srv->rdma;
	if (!R)
		return;
	for (unsigned i = 0; i < R->n; i++)
		nfsd_loop_watch(l, &R->ln[i].op);
}

void nfsd_rdma_server_free(struct nfsd_server *s)
{
	struct nfsd_rdma *R = s->rdma;
	if (!R)
		return;
	for (unsigned i = 0; i < R->n; i++) {
		rdma_destroy_id(R->ln[i].id);
		rdma_destroy_event_channel(R->ln[i].ch);
	}
	for (unsigned i = 0; i < s->nloops; i++)
		while (R->pools[i]) {
			struct rpool *p = R->pools[i];
			R->pools[i] = p->next;
			pool_free(p);
		}
	free(R->pools);
	while (R->regs) {
		struct rreg *g = R->regs;
		R->regs = g->next;
		reg_free(g);
	}
	while (R->devs) {
		struct rdev *d = R->devs;
		R->devs = d->next;
		ibv_dealloc_pd(d->pd);
		free(d);
	}
	pthread_mutex_destroy(&R->mu);
	free(R);
	s->rdma = NULL;
}

#endif /* HAVE_RDMA */
