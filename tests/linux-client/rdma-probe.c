/* SPDX-License-Identifier: MIT */
/*
 * rdma-probe [--skip small-inline] ADDR PORT: our own RPC-over-RDMA
 * version 1 client (RFC 8166, 8267, 8797) against braid-mds's NFSv3 and
 * MOUNT v3 (issue 17): it drives the chunk paths directly and then plays a
 * bad peer.  Run inside the
 * rdma-qemu-v41.sh guest (rdma-guest.sh's probe step) against the MDS's
 * rdma_listen; its export "/" must be rw,no_root_squash,insecure (we call
 * as AUTH_SYS root from whatever port rdma_cm gives).  librdmacm and
 * libibverbs only: the few RPC, MOUNT and NFSv3 messages are encoded and
 * decoded by hand here, so none of the server's code judges the server.
 *
 * Checks, each printed "ok: ..." or "FAIL: ..."; exit 0 only if all pass:
 *   io       MOUNT3 MNT "/" (the root handle), MKDIR, CREATE; WRITE of
 *            1 MiB FILE_SYNC with the data in a read chunk (RDMA_MSG, the
 *            chunk at the data's XDR position, the data left out of the
 *            inline call); READ of 1 MiB offering a write chunk: the reply's
 *            write list carries the 1 MiB written, the inline reply ends at
 *            the data's length word; the bytes compared.
 *   readdir  600 CREATEs (32 in flight) in a directory; READDIRPLUS with
 *            maxcount 64 KiB offering a reply chunk: the first page comes
 *            RDMA_NOMSG with the reply in the chunk (nothing inline after
 *            the header); every name back exactly once across the cookie
 *            pages (2 today).
 *   credits  as many NULLs at once as the server grants (64): every one
 *            answered.
 *   errors   on one connection: a version-2 header gets RDMA_ERROR ERR_VERS
 *            (versions 1..1); RDMA_MSGP, a list discriminator of 7, a write
 *            chunk of 65 segments and a read chunk of 4 MiB (more than a
 *            call may bring) get ERR_CHUNK; an 8-byte message gets nothing;
 *            the connection then still serves a NULL.
 *   hostile  each on a fresh connection, each must end in an error reply or
 *            a disconnect, and then a new connection must serve a NULL and
 *            an inline READ of the file's first 2 KiB (unchanged): a WRITE
 *            whose read chunk has a bogus steering tag; one whose offset
 *            lies outside the registered region; a READ whose write chunk
 *            has a bogus steering tag; an inline message larger than the
 *            server's advertised receive size; twice the granted credits
 *            at once (all answered, the excess held back by RNR retries, or
 *            a disconnect).
 *   small-inline  a connection whose RFC 8797 message says it receives
 *            1 KiB: no message from the server longer than that, for a
 *            2 KiB READ without chunks (ERR_CHUNK) and a READDIRPLUS
 *            offering a 64-segment reply chunk.  --skip small-inline leaves
 *            it out.
 * Every wait is bounded (WAIT_MS): a timeout is a FAIL naming what was
 * awaited.  Exit status: 0 all passed, 1 a check failed, 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define INLINE	    4096 /* our inline sizes, both ways (our RFC 8797 message) */
#define SEND_SZ	    8192 /* a send buffer: room for the oversized message */
#define NRECV	    160	 /* receives posted: twice the server's 64 credits, and more */
#define NSEND	    160
#define ASK_CREDITS 128		 /* what every call asks for */
#define WAIT_MS	    10000	 /* the bound on every wait */
#define IO_SIZE	    (1u << 20)	 /* the WRITE and READ */
#define NFILES	    600		 /* directory entries for READDIRPLUS: 2 pages of 64 KiB */
#define BATCH	    32		 /* CREATEs in flight */
#define RD_MAX	    (64u << 10)	 /* READDIRPLUS dircount and maxcount */
#define RCHUNK	    (128u << 10) /* the reply chunk offered */
#define BIG_CHUNK   (4u << 20)	 /* a read chunk larger than braid takes in a call */
#define MAXSEG	    64		 /* segments we decode per list in a reply */

enum { RDMA_MSG, RDMA_NOMSG, RDMA_MSGP, RDMA_DONE, RDMA_ERROR };
enum { ERR_VERS = 1, ERR_CHUNK = 2 };
#define CMP_MAGIC 0xf6ab0e18u /* RFC 8797 */

#define MOUNT_PROG 100005
#define NFS_PROG   100003
enum {
	NFS3_NULL = 0,
	NFS3_READ = 6,
	NFS3_WRITE = 7,
	NFS3_CREATE = 8,
	NFS3_MKDIR = 9,
	NFS3_READDIRPLUS = 17
};
#define FILE_SYNC 2

static int fails, checks;
static uint32_t next_xid;
static uint8_t *pat;		   /* the file's IO_SIZE bytes */
static unsigned adv_recv = INLINE; /* the receive size we advertise (RFC 8797) */

static void ok(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("ok: ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
	checks++;
}

static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("FAIL: ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
	checks++;
	fails++;
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* ------------------------------------------------------------------ XDR */

struct xw { /* a writer: over when it ran out of room */
	uint8_t *p, *end;
	bool over;
};

static void w32(struct xw *w, uint32_t v)
{
	if (w->end - w->p < 4) {
		w->over = true;
		return;
	}
	w->p[0] = (uint8_t)(v >> 24);
	w->p[1] = (uint8_t)(v >> 16);
	w->p[2] = (uint8_t)(v >> 8);
	w->p[3] = (uint8_t)v;
	w->p += 4;
}

static void w64(struct xw *w, uint64_t v)
{
	w32(w, (uint32_t)(v >> 32));
	w32(w, (uint32_t)v);
}

/* n bytes and their XDR padding, no length */
static void wbytes(struct xw *w, const void *d, size_t n)
{
	size_t padded = (n + 3) & ~(size_t)3;
	if ((size_t)(w->end - w->p) < padded) {
		w->over = true;
		return;
	}
	memcpy(w->p, d, n);
	memset(w->p + n, 0, padded - n);
	w->p += padded;
}

static void wopaque(struct xw *w, const void *d, uint32_t n)
{
	w32(w, n);
	wbytes(w, d, n);
}

static void wstr(struct xw *w, const char *s)
{
	wopaque(w, s, (uint32_t)strlen(s));
}

struct xr { /* a reader: bad once it read past the end or met a bound */
	const uint8_t *p, *end;
	bool bad;
};

static uint32_t r32(struct xr *x)
{
	if (x->bad || x->end - x->p < 4) {
		x->bad = true;
		return 0;
	}
	const uint8_t *p = x->p;
	x->p += 4;
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t r64(struct xr *x)
{
	uint64_t hi = r32(x);
	return hi << 32 | r32(x);
}

static void rskip(struct xr *x, size_t n)
{
	if (x->bad || (size_t)(x->end - x->p) < n) {
		x->bad = true;
		return;
	}
	x->p += n;
}

/* opaque<max>: a pointer into the message (NULL if bad), its length in *n */
static const uint8_t *ropaque(struct xr *x, uint32_t *n, uint32_t max)
{
	*n = r32(x);
	if (*n > max)
		x->bad = true;
	const uint8_t *d = x->p;
	rskip(x, (*n + 3) & ~3u);
	return x->bad ? NULL : d;
}

static size_t rleft(const struct xr *x)
{
	return (size_t)(x->end - x->p);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ------------------------------------------------------------ connections */

struct region { /* memory of ours the server may read or write */
	uint8_t *mem;
	size_t len;
	struct ibv_mr *mr;
};

struct conn {
	struct rdma_event_channel *ech;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *buf; /* NRECV receive buffers of INLINE bytes, then NSEND of SEND_SZ */
	struct ibv_mr *mr;
	struct region reg[4];
	unsigned nreg;
	unsigned sends_out, next_send;
	unsigned rq_idx[NRECV], rq_len[NRECV], rq_head, rq_n; /* received, not yet taken */
	bool down; /* a work request failed (flushed), or rdma_cm said disconnected */
	char why[200];
	uint32_t credits;	     /* the server's last grant */
	unsigned srv_recv, srv_send; /* its inline sizes (RFC 8797; 1024 if it sent none) */
};

#define SEND_TAG (1ull << 32) /* a send's wr_id; a receive's is its buffer index */

static uint8_t *sbuf(struct conn *c, unsigned i)
{
	return c->buf + (size_t)NRECV * INLINE + (size_t)i * SEND_SZ;
}

/* The next rdma_cm event within WAIT_MS must be want: false (c->why) if not */
static bool cm_expect(struct conn *c, enum rdma_cm_event_type want)
{
	struct pollfd pf = { .fd = c->ech->fd, .events = POLLIN };
	if (poll(&pf, 1, WAIT_MS) <= 0) {
		snprintf(c->why, sizeof c->why, "no %s within %d s", rdma_event_str(want),
			 WAIT_MS / 1000);
		return false;
	}
	struct rdma_cm_event *ev;
	if (rdma_get_cm_event(c->ech, &ev)) {
		snprintf(c->why, sizeof c->why, "rdma_get_cm_event: %s", strerror(errno));
		return false;
	}
	bool good = ev->event == want && ev->status == 0;
	if (!good)
		snprintf(c->why, sizeof c->why, "%s (status %d) where %s was awaited",
			 rdma_event_str(ev->event), ev->status, rdma_event_str(want));
	if (good && want == RDMA_CM_EVENT_ESTABLISHED) {
		const uint8_t *p = ev->param.conn.private_data;
		if (p && ev->param.conn.private_data_len >= 8 && get32(p) == CMP_MAGIC &&
		    p[4] == 1) {
			c->srv_send = (p[6] + 1u) * 1024;
			c->srv_recv = (p[7] + 1u) * 1024;
		}
	}
	rdma_ack_cm_event(ev);
	return good;
}

static bool post_recv(struct conn *c, unsigned i)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(c->buf + (size_t)i * INLINE),
			       .length = INLINE,
			       .lkey = c->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;
	return ibv_post_recv(c->qp, &wr, &bad) == 0;
}

static void conn_close(struct conn *c)
{
	if (c->id && c->qp)
		rdma_disconnect(c->id);
	if (c->qp)
		rdma_destroy_qp(c->id);
	for (unsigned i = 0; i < c->nreg; i++) {
		ibv_dereg_mr(c->reg[i].mr);
		free(c->reg[i].mem);
	}
	if (c->mr)
		ibv_dereg_mr(c->mr);
	free(c->buf);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->cch)
		ibv_destroy_comp_channel(c->cch);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	if (c->id)
		rdma_destroy_id(c->id);
	if (c->ech)
		rdma_destroy_event_channel(c->ech);
	memset(c, 0, sizeof(*c));
}

#define OPEN_FAIL(...)                                                                             \
	do {                                                                                       \
		snprintf(c->why, sizeof c->why, __VA_ARGS__);                                      \
		return false;                                                                      \
	} while (0)

/*
 * Connect to sa: queue pair, receives posted, our RFC 8797 message (4 KiB
 * both ways) in the connection request.  false: c->why says what failed
 * (the caller closes c either way).
 */
static bool conn_open(struct conn *c, const struct sockaddr *sa)
{
	memset(c, 0, sizeof(*c));
	c->srv_recv = c->srv_send = 1024;
	if (!(c->ech = rdma_create_event_channel()))
		OPEN_FAIL("rdma_create_event_channel: %s", strerror(errno));
	if (rdma_create_id(c->ech, &c->id, NULL, RDMA_PS_TCP)) {
		c->id = NULL;
		OPEN_FAIL("rdma_create_id: %s", strerror(errno));
	}
	if (rdma_resolve_addr(c->id, NULL, (struct sockaddr *)sa, 2000))
		OPEN_FAIL("rdma_resolve_addr: %s", strerror(errno));
	if (!cm_expect(c, RDMA_CM_EVENT_ADDR_RESOLVED))
		return false;
	if (rdma_resolve_route(c->id, 2000))
		OPEN_FAIL("rdma_resolve_route: %s", strerror(errno));
	if (!cm_expect(c, RDMA_CM_EVENT_ROUTE_RESOLVED))
		return false;
	struct ibv_device_attr da;
	if (ibv_query_device(c->id->verbs, &da))
		OPEN_FAIL("ibv_query_device: %s", strerror(errno));
	if (!(c->pd = ibv_alloc_pd(c->id->verbs)))
		OPEN_FAIL("ibv_alloc_pd: %s", strerror(errno));
	if (!(c->cch = ibv_create_comp_channel(c->id->verbs)))
		OPEN_FAIL("ibv_create_comp_channel: %s", strerror(errno));
	if (!(c->cq = ibv_create_cq(c->id->verbs, NRECV + NSEND, c, c->cch, 0)))
		OPEN_FAIL("ibv_create_cq: %s", strerror(errno));
	struct ibv_qp_init_attr qa = {
		.send_cq = c->cq,
		.recv_cq = c->cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = NSEND,
			 .max_recv_wr = NRECV,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	if (rdma_create_qp(c->id, c->pd, &qa))
		OPEN_FAIL("rdma_create_qp: %s", strerror(errno));
	c->qp = c->id->qp;
	size_t sz = (size_t)NRECV * INLINE + (size_t)NSEND * SEND_SZ;
	if (!(c->buf = aligned_alloc(4096, sz)))
		OPEN_FAIL("out of memory");
	if (!(c->mr = ibv_reg_mr(c->pd, c->buf, sz, IBV_ACCESS_LOCAL_WRITE)))
		OPEN_FAIL("ibv_reg_mr: %s", strerror(errno));
	for (unsigned i = 0; i < NRECV; i++)
		if (!post_recv(c, i))
			OPEN_FAIL("ibv_post_recv: %s", strerror(errno));
	uint8_t priv[8] = { CMP_MAGIC >> 24,
			    (CMP_MAGIC >> 16) & 0xff,
			    (CMP_MAGIC >> 8) & 0xff,
			    CMP_MAGIC & 0xff,
			    1,
			    0,
			    INLINE / 1024 - 1,
			    (uint8_t)(adv_recv / 1024 - 1) };
	struct rdma_conn_param cp = {
		.private_data = priv,
		.private_data_len = sizeof priv,
		.responder_resources = (uint8_t)(da.max_qp_rd_atom < 16 ? da.max_qp_rd_atom : 16),
		.initiator_depth =
		    (uint8_t)(da.max_qp_init_rd_atom < 16 ? da.max_qp_init_rd_atom : 16),
		.retry_count = 7,
		.rnr_retry_count = 7,
	};
	if (rdma_connect(c->id, &cp))
		OPEN_FAIL("rdma_connect: %s", strerror(errno));
	if (!cm_expect(c, RDMA_CM_EVENT_ESTABLISHED))
		return false;
	fcntl(c->ech->fd, F_SETFL, fcntl(c->ech->fd, F_GETFL) | O_NONBLOCK);
	fcntl(c->cch->fd, F_SETFL, fcntl(c->cch->fd, F_GETFL) | O_NONBLOCK);
	return true;
}

/* Memory the server may reach: NULL (a FAIL printed) if it cannot be registered */
static struct region *reg(struct conn *c, size_t len, int access)
{
	struct region *g = &c->reg[c->nreg];
	if (c->nreg == sizeof c->reg / sizeof c->reg[0] ||
	    !(g->mem = aligned_alloc(4096, (len + 4095) & ~(size_t)4095))) {
		fail("cannot allocate %zu bytes to register", len);
		return NULL;
	}
	if (!(g->mr = ibv_reg_mr(c->pd, g->mem, len, access))) {
		fail("ibv_reg_mr of %zu bytes: %s", len, strerror(errno));
		free(g->mem);
		return NULL;
	}
	g->len = len;
	c->nreg++;
	return g;
}

/* Completions: receives queued, sends counted; a failed one ends the connection */
static void reap(struct conn *c)
{
	struct ibv_wc wc[32];
	int n;
	while ((n = ibv_poll_cq(c->cq, 32, wc)) > 0)
		for (int i = 0; i < n; i++) {
			bool is_send = wc[i].wr_id & SEND_TAG;
			if (is_send)
				c->sends_out--;
			if (wc[i].status != IBV_WC_SUCCESS) {
				if (!c->down)
					snprintf(c->why, sizeof c->why, "a %s failed: %s",
						 is_send ? "send" : "receive",
						 ibv_wc_status_str(wc[i].status));
				c->down = true;
				continue;
			}
			if (!is_send) {
				unsigned k = (c->rq_head + c->rq_n++) % NRECV;
				c->rq_idx[k] = (unsigned)wc[i].wr_id;
				c->rq_len[k] = wc[i].byte_len;
			}
		}
	if (n < 0 && !c->down) {
		snprintf(c->why, sizeof c->why, "ibv_poll_cq failed");
		c->down = true;
	}
}

static void cm_drain(struct conn *c)
{
	struct rdma_cm_event *ev;
	while (rdma_get_cm_event(c->ech, &ev) == 0) {
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED ||
		    ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL ||
		    ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT) {
			if (!c->down)
				snprintf(c->why, sizeof c->why, "the server disconnected (%s)",
					 rdma_event_str(ev->event));
			c->down = true;
		}
		rdma_ack_cm_event(ev);
	}
}

/* Wait for a completion or an rdma_cm event, until deadline at most */
static void wait_io(struct conn *c, double deadline)
{
	if (ibv_req_notify_cq(c->cq, 0)) {
		snprintf(c->why, sizeof c->why, "ibv_req_notify_cq failed");
		c->down = true;
		return;
	}
	reap(c); /* what came before the notification was armed */
	if (c->rq_n || c->down)
		return;
	double left = deadline - now_ms();
	if (left <= 0)
		return;
	struct pollfd pf[2] = { { .fd = c->cch->fd, .events = POLLIN },
				{ .fd = c->ech->fd, .events = POLLIN } };
	if (poll(pf, 2, (int)left + 1) > 0) {
		struct ibv_cq *cq;
		void *ctx;
		if (pf[0].revents && ibv_get_cq_event(c->cch, &cq, &ctx) == 0)
			ibv_ack_cq_events(cq, 1);
		if (pf[1].revents)
			cm_drain(c);
	}
	reap(c);
}

/*
 * The next message received, within WAIT_MS, copied to out (INLINE bytes)
 * and its buffer posted again: 1; 0 nothing came; -1 the connection went
 * down first (c->why).
 */
static int next_msg(struct conn *c, uint8_t *out, size_t *len)
{
	double deadline = now_ms() + WAIT_MS;
	for (;;) {
		if (!c->rq_n)
			reap(c);
		if (c->rq_n) {
			unsigned i = c->rq_idx[c->rq_head], n = c->rq_len[c->rq_head];
			c->rq_head = (c->rq_head + 1) % NRECV;
			c->rq_n--;
			memcpy(out, c->buf + (size_t)i * INLINE, n);
			*len = n;
			if (!c->down && !post_recv(c, i)) {
				snprintf(c->why, sizeof c->why, "ibv_post_recv: %s",
					 strerror(errno));
				c->down = true;
			}
			return 1;
		}
		if (c->down)
			return -1;
		if (now_ms() >= deadline)
			return 0;
		wait_io(c, deadline);
	}
}

/* Send p[0..n) (n <= SEND_SZ): false (c->why) if it cannot be posted */
static bool send_msg(struct conn *c, const uint8_t *p, size_t n)
{
	double deadline = now_ms() + WAIT_MS;
	while (c->sends_out == NSEND && !c->down && now_ms() < deadline)
		wait_io(c, deadline);
	if (c->down)
		return false;
	if (c->sends_out == NSEND) {
		snprintf(c->why, sizeof c->why, "no send completed within %d s", WAIT_MS / 1000);
		return false;
	}
	unsigned s = c->next_send++ % NSEND; /* sends complete in order */
	memcpy(sbuf(c, s), p, n);
	struct ibv_sge sge = { .addr = (uintptr_t)sbuf(c, s),
			       .length = (uint32_t)n,
			       .lkey = c->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = SEND_TAG | s,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	if (ibv_post_send(c->qp, &wr, &bad)) {
		snprintf(c->why, sizeof c->why, "ibv_post_send: %s", strerror(errno));
		return false;
	}
	c->sends_out++;
	return true;
}

/* ------------------------------------------------------ RPC-over-RDMA */

struct seg {
	uint32_t handle, length;
	uint64_t offset;
};

static void wseg(struct xw *w, const struct seg *s)
{
	w32(w, s->handle);
	w32(w, s->length);
	w64(w, s->offset);
}

static void rseg(struct xr *x, struct seg *s)
{
	s->handle = r32(x);
	s->length = r32(x);
	s->offset = r64(x);
}

static struct seg seg_of(const struct region *g, size_t len)
{
	return (struct seg){ g->mr->rkey, (uint32_t)len, (uintptr_t)g->mem };
}

/* A call's chunks: one segment each, but the reply chunk's nreply (default 1) */
struct chunks {
	const struct seg *read; /* a read chunk at read_pos of the RPC call */
	uint32_t read_pos;
	const struct seg *write; /* a write chunk */
	const struct seg *reply; /* a reply chunk: segments in one piece of our memory */
	unsigned nreply;
};

static unsigned nreply(const struct chunks *ch)
{
	return !ch || !ch->reply ? 0 : ch->nreply ? ch->nreply : 1;
}

static void rdma_header(struct xw *w, uint32_t xid, uint32_t vers, uint32_t proc,
			const struct chunks *ch)
{
	w32(w, xid);
	w32(w, vers);
	w32(w, ASK_CREDITS);
	w32(w, proc);
	if (ch && ch->read) {
		w32(w, 1);
		w32(w, ch->read_pos);
		wseg(w, ch->read);
	}
	w32(w, 0); /* end of the read list */
	if (ch && ch->write) {
		w32(w, 1);
		w32(w, 1);
		wseg(w, ch->write);
	}
	w32(w, 0); /* end of the write list */
	if (nreply(ch)) {
		w32(w, 1);
		w32(w, nreply(ch));
		for (unsigned i = 0; i < nreply(ch); i++)
			wseg(w, &ch->reply[i]);
	} else {
		w32(w, 0);
	}
}

/* A reply as received, its header decoded */
struct reply {
	uint8_t msg[INLINE];
	size_t len, hdrlen;
	uint32_t xid, vers, credits, proc;
	uint32_t err, vlow, vhigh; /* RDMA_ERROR */
	unsigned nread;		   /* must be none */
	unsigned nwch, wn[4];	   /* write chunks, segments of each */
	struct seg w[4][MAXSEG];
	bool has_reply;
	unsigned rn;
	struct seg r[MAXSEG];
	/* the RPC reply: inline (RDMA_MSG) or in our reply chunk (RDMA_NOMSG) */
	const uint8_t *rpc;
	size_t rpclen;
};

/* Decode r's header; the reply chunk offered was ch->reply.  false: why */
static bool parse_reply(struct reply *r, const struct chunks *ch, char *why, size_t wl)
{
	struct xr x = { r->msg, r->msg + r->len, false };
	r->xid = r32(&x);
	r->vers = r32(&x);
	r->credits = r32(&x);
	r->proc = r32(&x);
	r->nread = r->nwch = r->rn = 0;
	r->has_reply = false;
	r->rpc = NULL;
	r->rpclen = 0;
	if (x.bad) {
		snprintf(why, wl, "a message of %zu bytes, short of a header", r->len);
		return false;
	}
	if (r->proc == RDMA_ERROR) {
		r->err = r32(&x);
		if (r->err == ERR_VERS) {
			r->vlow = r32(&x);
			r->vhigh = r32(&x);
		}
		if (x.bad)
			snprintf(why, wl, "a truncated RDMA_ERROR of %zu bytes", r->len);
		return !x.bad;
	}
	if (r->vers != 1 || (r->proc != RDMA_MSG && r->proc != RDMA_NOMSG)) {
		snprintf(why, wl, "a reply of version %u, proc %u", r->vers, r->proc);
		return false;
	}
	struct seg s;
	while (!x.bad && r32(&x)) {
		r32(&x);
		rseg(&x, &s);
		r->nread++;
	}
	while (!x.bad && r32(&x)) {
		unsigned n = r32(&x);
		if (r->nwch == 4 || n > MAXSEG) {
			snprintf(why, wl, "a write list of over 4 chunks or %u segments", MAXSEG);
			return false;
		}
		for (unsigned i = 0; i < n; i++)
			rseg(&x, &r->w[r->nwch][i]);
		r->wn[r->nwch++] = n;
	}
	if (r32(&x)) {
		r->has_reply = true;
		r->rn = r32(&x);
		if (r->rn > MAXSEG) {
			snprintf(why, wl, "a reply chunk of %u segments", r->rn);
			return false;
		}
		for (unsigned i = 0; i < r->rn; i++)
			rseg(&x, &r->r[i]);
	}
	if (x.bad) {
		snprintf(why, wl, "a malformed header (%zu bytes)", r->len);
		return false;
	}
	if (r->nread) {
		snprintf(why, wl, "a reply with %u read segments", r->nread);
		return false;
	}
	r->hdrlen = (size_t)(x.p - r->msg);
	if (r->proc == RDMA_MSG) {
		r->rpc = x.p;
		r->rpclen = rleft(&x);
		return true;
	}
	/* RDMA_NOMSG: the reply is what the server wrote into our reply chunk:
	 * our segments back, in order, filled one after the other */
	if (!r->has_reply || r->rn > nreply(ch)) {
		snprintf(why, wl, "RDMA_NOMSG with %s reply chunk where we offered %u segments",
			 r->has_reply ? "a longer" : "no", nreply(ch));
		return false;
	}
	bool short_seen = false;
	for (unsigned i = 0; i < r->rn; i++) {
		const struct seg *o = &ch->reply[i], *b = &r->r[i];
		if (b->handle != o->handle || b->offset != o->offset || b->length > o->length ||
		    (short_seen && b->length)) {
			snprintf(why, wl,
				 "RDMA_NOMSG with reply chunk segment %u (%08x, %u bytes at "
				 "%llx) not ours, or not filled in order",
				 i, b->handle, b->length, (unsigned long long)b->offset);
			return false;
		}
		short_seen = b->length < o->length;
		r->rpclen += b->length;
	}
	r->rpc = (const uint8_t *)(uintptr_t)ch->reply->offset;
	return true;
}

/* The next message, decoded: false (a FAIL printed, naming what) if none */
static bool await_reply(struct conn *c, struct reply *r, const struct chunks *ch, const char *what)
{
	int k = next_msg(c, r->msg, &r->len);
	if (k == 0) {
		fail("%s: no reply within %d s", what, WAIT_MS / 1000);
		return false;
	}
	if (k < 0) {
		fail("%s: no reply: %s", what, c->why);
		return false;
	}
	char why[200];
	if (!parse_reply(r, ch, why, sizeof why)) {
		fail("%s: %s", what, why);
		return false;
	}
	c->credits = r->credits;
	return true;
}

/* ------------------------------------------------------------------ RPC */

struct call { /* an RPC call being built */
	uint8_t b[2048];
	struct xw w;
	uint32_t xid;
};

static void call_start(struct call *m, uint32_t prog, uint32_t proc)
{
	m->w = (struct xw){ m->b, m->b + sizeof m->b, false };
	m->xid = next_xid++;
	w32(&m->w, m->xid);
	w32(&m->w, 0); /* CALL */
	w32(&m->w, 2);
	w32(&m->w, prog);
	w32(&m->w, 3); /* MOUNT v3, NFSv3 */
	w32(&m->w, proc);
	/* AUTH_SYS as root (RFC 5531 appendix A): 32 bytes */
	w32(&m->w, 1);
	w32(&m->w, 32);
	w32(&m->w, 0);
	wstr(&m->w, "rdma-probe");
	w32(&m->w, 0);
	w32(&m->w, 0);
	w32(&m->w, 0);
	w32(&m->w, 0); /* verifier: AUTH_NONE */
	w32(&m->w, 0);
}

static size_t call_len(const struct call *m)
{
	return (size_t)(m->w.p - m->b);
}

/* Post m as an RDMA_MSG with ch's chunks: false (a FAIL printed) if it cannot go */
static bool send_call(struct conn *c, const struct call *m, const struct chunks *ch,
		      const char *what)
{
	uint8_t b[SEND_SZ];
	struct xw w = { b, b + sizeof b, false };
	rdma_header(&w, m->xid, 1, RDMA_MSG, ch);
	wbytes(&w, m->b, call_len(m));
	if (m->w.over || w.over || (size_t)(w.p - b) > c->srv_recv) {
		fail("%s: the call does not fit the server's %u-byte inline receive", what,
		     c->srv_recv);
		return false;
	}
	if (!send_msg(c, b, (size_t)(w.p - b))) {
		fail("%s: cannot send: %s", what, c->why);
		return false;
	}
	return true;
}

/* The RPC reply in r: accepted and successful, x on its results; else a FAIL */
static bool rpc_ok(const struct reply *r, uint32_t xid, struct xr *x, const char *what)
{
	if (r->xid != xid) {
		fail("%s: a reply to xid %08x where %08x was awaited", what, r->xid, xid);
		return false;
	}
	if (r->proc == RDMA_ERROR) {
		fail("%s: RDMA_ERROR %u", what, r->err);
		return false;
	}
	*x = (struct xr){ r->rpc, r->rpc + r->rpclen, false };
	uint32_t rx = r32(x), mtype = r32(x), stat = r32(x), n;
	r32(x);
	ropaque(x, &n, 400);
	uint32_t acc = r32(x);
	if (x->bad || rx != xid || mtype != 1 || stat != 0 || acc != 0) {
		fail("%s: not a successful RPC reply (%zu bytes: xid %08x, type %u, reply_stat %u, "
		     "accept_stat %u)",
		     what, r->rpclen, rx, mtype, stat, acc);
		return false;
	}
	return true;
}

/* One call and its reply: x on the results, or a FAIL */
static bool rpc(struct conn *c, const struct call *m, const struct chunks *ch, struct reply *r,
		struct xr *x, const char *what)
{
	return send_call(c, m, ch, what) && await_reply(c, r, ch, what) &&
	       rpc_ok(r, m->xid, x, what);
}

/* ---------------------------------------------------------------- NFSv3 */

struct fh {
	uint32_t len;
	uint8_t data[64];
};

static void wfh(struct xw *w, const struct fh *f)
{
	wopaque(w, f->data, f->len);
}

static bool rfh(struct xr *x, struct fh *f)
{
	const uint8_t *d = ropaque(x, &f->len, 64);
	if (d)
		memcpy(f->data, d, f->len);
	return d != NULL;
}

static void skip_post_op_attr(struct xr *x)
{
	if (r32(x))
		rskip(x, 84); /* fattr3 */
}

static void skip_wcc_data(struct xr *x)
{
	if (r32(x))
		rskip(x, 24); /* wcc_attr */
	skip_post_op_attr(x);
}

/* CREATE (GUARDED, 0644) or MKDIR (0755) of name in d */
static void create_call(struct call *m, const struct fh *d, const char *name, bool dir)
{
	call_start(m, NFS_PROG, dir ? NFS3_MKDIR : NFS3_CREATE);
	wfh(&m->w, d);
	wstr(&m->w, name);
	if (!dir)
		w32(&m->w, 1); /* GUARDED */
	w32(&m->w, 1);	       /* sattr3: mode */
	w32(&m->w, dir ? 0755 : 0644);
	for (int i = 0; i < 5; i++) /* uid, gid, size, atime, mtime: unset */
		w32(&m->w, 0);
}

/* CREATE's or MKDIR's results: NFS3_OK and the new handle in *out, or a FAIL */
static bool create_res(struct xr *x, struct fh *out, const char *what)
{
	uint32_t st = r32(x);
	if (st) {
		fail("%s: NFS3 status %u", what, st);
		return false;
	}
	if (!r32(x) || !rfh(x, out)) {
		fail("%s: no handle in the reply", what);
		return false;
	}
	return true;
}

static bool make(struct conn *c, const struct fh *d, const char *name, bool dir, struct fh *out)
{
	struct call m;
	struct reply r;
	struct xr x;
	char what[120];
	snprintf(what, sizeof what, "%s %s", dir ? "MKDIR" : "CREATE", name);
	create_call(&m, d, name, dir);
	return rpc(c, &m, NULL, &r, &x, what) && create_res(&x, out, what);
}

/* ---------------------------------------------------------------- checks */

static struct fh root, top, file, dir;

static bool t_mount(struct conn *c)
{
	struct call m;
	struct reply r;
	struct xr x;
	call_start(&m, MOUNT_PROG, 1); /* MNT */
	wstr(&m.w, "/");
	if (!rpc(c, &m, NULL, &r, &x, "MOUNT3 MNT /"))
		return false;
	uint32_t st = r32(&x);
	if (st || !rfh(&x, &root)) {
		fail("MOUNT3 MNT /: status %u%s", st, st ? "" : ", no handle");
		return false;
	}
	ok("MOUNT3 MNT / over RDMA: a %u-byte root handle; the server receives %u bytes inline, "
	   "sends %u, grants %u credits",
	   root.len, c->srv_recv, c->srv_send, c->credits);
	char name[64];
	snprintf(name, sizeof name, "rdma-probe.%d", (int)getpid());
	return make(c, &root, name, true, &top) && make(c, &top, "data", false, &file);
}

/* READ count bytes at 0, inline (no chunks): compared with pat */
static void read_inline(struct conn *c, uint32_t count, const char *what)
{
	struct call m;
	struct reply r;
	struct xr x;
	call_start(&m, NFS_PROG, NFS3_READ);
	wfh(&m.w, &file);
	w64(&m.w, 0);
	w32(&m.w, count);
	if (!rpc(c, &m, NULL, &r, &x, what))
		return;
	uint32_t st = r32(&x), n;
	skip_post_op_attr(&x);
	uint32_t got = r32(&x);
	r32(&x); /* eof */
	const uint8_t *d = ropaque(&x, &n, count);
	if (st || !d || got != count || n != count)
		fail("%s: status %u, %u bytes", what, st, d ? n : 0);
	else if (memcmp(d, pat, count))
		fail("%s: the file's first %u bytes changed", what, count);
	else
		ok("%s: the file's first %u bytes are unchanged", what, count);
}

static void t_write_read(struct conn *c)
{
	struct region *src = reg(c, IO_SIZE, IBV_ACCESS_REMOTE_READ);
	struct region *dst = reg(c, IO_SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!src || !dst)
		return;
	memcpy(src->mem, pat, IO_SIZE);
	struct call m;
	struct reply r;
	struct xr x;
	double t0 = now_ms();

	/* WRITE: data<> keeps its length inline; its bytes are the read chunk,
	 * at the position where they would have followed (RFC 8166 §3.4.5) */
	call_start(&m, NFS_PROG, NFS3_WRITE);
	wfh(&m.w, &file);
	w64(&m.w, 0);
	w32(&m.w, IO_SIZE);
	w32(&m.w, FILE_SYNC);
	w32(&m.w, IO_SIZE);
	struct seg rs = seg_of(src, IO_SIZE);
	struct chunks ch = { .read = &rs, .read_pos = (uint32_t)call_len(&m) };
	const char *what = "WRITE 1 MiB FILE_SYNC by read chunk";
	if (rpc(c, &m, &ch, &r, &x, what)) {
		uint32_t st = r32(&x);
		skip_wcc_data(&x);
		uint32_t count = r32(&x), committed = r32(&x);
		rskip(&x, 8);
		if (st || x.bad || count != IO_SIZE || committed != FILE_SYNC)
			fail("%s: status %u, count %u, committed %u%s", what, st, count, committed,
			     x.bad ? ", a short reply" : "");
		else
			ok("%s: the server pulled the data by RDMA Read (inline call %zu bytes, "
			   "chunk at position %u), %.0f ms",
			   what, call_len(&m), ch.read_pos, now_ms() - t0);
	}

	/* READ into a write chunk */
	memset(dst->mem, 0, IO_SIZE);
	t0 = now_ms();
	call_start(&m, NFS_PROG, NFS3_READ);
	wfh(&m.w, &file);
	w64(&m.w, 0);
	w32(&m.w, IO_SIZE);
	struct seg ws = seg_of(dst, IO_SIZE);
	ch = (struct chunks){ .write = &ws };
	what = "READ 1 MiB into a write chunk";
	if (!rpc(c, &m, &ch, &r, &x, what))
		return;
	const struct seg *back = r.nwch ? &r.w[0][0] : NULL;
	if (r.proc != RDMA_MSG || r.nwch != 1 || r.wn[0] != 1 || back->handle != ws.handle ||
	    back->offset != ws.offset || back->length != IO_SIZE) {
		fail("%s: the reply (proc %u) has %u write chunks, the first of %u segments, "
		     "%u bytes written; want our one chunk back with %u bytes",
		     what, r.proc, r.nwch, r.nwch ? r.wn[0] : 0, back ? back->length : 0, IO_SIZE);
		return;
	}
	uint32_t st = r32(&x);
	skip_post_op_attr(&x);
	uint32_t count = r32(&x), eof = r32(&x), dlen = r32(&x);
	if (st || x.bad || count != IO_SIZE || dlen != IO_SIZE) {
		fail("%s: status %u, count %u, data length %u%s", what, st, count, dlen,
		     x.bad ? ", a short reply" : "");
		return;
	}
	if (rleft(&x)) {
		fail("%s: %zu bytes inline after the data's length: the data must be left out "
		     "(RFC 8267 §4.3)",
		     what, rleft(&x));
		return;
	}
	size_t i = 0;
	while (i < IO_SIZE && dst->mem[i] == pat[i])
		i++;
	if (i < IO_SIZE) {
		fail("%s: the bytes differ from those written from byte %zu on", what, i);
		return;
	}
	ok("%s: the write list says %u bytes written, the inline reply (%zu bytes) leaves the data "
	   "out, eof %u, the bytes are those written, %.0f ms",
	   what, back->length, r.rpclen, eof, now_ms() - t0);
}

static void t_readdir(struct conn *c)
{
	struct fh f;
	if (!make(c, &top, "dir", true, &dir))
		return;
	double t0 = now_ms();
	struct call m;
	struct reply r;
	struct xr x;
	char name[16];
	/* the entries, BATCH calls in flight at a time */
	for (unsigned b = 0; b < NFILES; b += BATCH) {
		unsigned n = NFILES - b < BATCH ? NFILES - b : BATCH;
		uint32_t xid0 = next_xid;
		for (unsigned i = 0; i < n; i++) {
			snprintf(name, sizeof name, "f%03u", b + i);
			create_call(&m, &dir, name, false);
			if (!send_call(c, &m, NULL, "CREATE (pipelined)"))
				return;
		}
		for (unsigned i = 0; i < n; i++) {
			if (!await_reply(c, &r, NULL, "CREATE (pipelined)"))
				return;
			if (r.xid - xid0 >= n) {
				fail("CREATE (pipelined): a reply to xid %08x, not one of ours",
				     r.xid);
				return;
			}
			if (!rpc_ok(&r, r.xid, &x, "CREATE (pipelined)") ||
			    !create_res(&x, &f, "CREATE (pipelined)"))
				return;
		}
	}
	double t1 = now_ms();

	struct region *rc = reg(c, RCHUNK, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!rc)
		return;
	struct seg rs = seg_of(rc, RCHUNK);
	struct chunks ch = { .reply = &rs };
	static unsigned seen[NFILES];
	uint64_t cookie = 0;
	uint8_t verf[8] = { 0 };
	unsigned pages = 0, nomsg = 0, entries = 0, others = 0;
	size_t chunk_bytes = 0;
	const char *what = "READDIRPLUS (64 KiB, a reply chunk)";
	for (bool eof = false; !eof;) {
		if (pages == 50) {
			fail("%s: no eof after %u pages", what, pages);
			return;
		}
		call_start(&m, NFS_PROG, NFS3_READDIRPLUS);
		wfh(&m.w, &dir);
		w64(&m.w, cookie);
		wbytes(&m.w, verf, 8);
		w32(&m.w, RD_MAX); /* dircount */
		w32(&m.w, RD_MAX); /* maxcount */
		if (!rpc(c, &m, &ch, &r, &x, what))
			return;
		pages++;
		if (r.proc == RDMA_NOMSG) {
			nomsg++;
			chunk_bytes += r.rpclen;
			if (r.hdrlen != r.len) {
				fail("%s: %zu bytes inline after an RDMA_NOMSG header", what,
				     r.len - r.hdrlen);
				return;
			}
		} else if (pages == 1) {
			fail("%s: the first page came inline (%zu bytes), not RDMA_NOMSG in the "
			     "reply chunk",
			     what, r.len);
			return;
		}
		uint32_t st = r32(&x), n;
		skip_post_op_attr(&x);
		const uint8_t *v = x.p;
		rskip(&x, 8);
		if (st || x.bad) {
			fail("%s: page %u: status %u", what, pages, st);
			return;
		}
		memcpy(verf, v, 8);
		unsigned before = entries;
		while (r32(&x)) {
			r64(&x); /* fileid */
			const uint8_t *nm = ropaque(&x, &n, 255);
			cookie = r64(&x);
			skip_post_op_attr(&x);
			uint32_t fhlen;
			if (r32(&x))
				ropaque(&x, &fhlen, 64); /* the handle */
			if (x.bad)
				break;
			bool ours = n == 4 && nm[0] == 'f';
			for (unsigned i = 1; i < 4 && ours; i++)
				ours = nm[i] >= '0' && nm[i] <= '9';
			unsigned k =
			    ours ? (nm[1] - '0') * 100u + (nm[2] - '0') * 10u + (nm[3] - '0') : 0;
			if (ours && k < NFILES)
				seen[k]++;
			else
				others++; /* "." and ".." */
			entries++;
		}
		eof = r32(&x);
		if (x.bad || rleft(&x)) {
			fail("%s: page %u: %s", what, pages,
			     x.bad ? "malformed" : "bytes left after the reply's end");
			return;
		}
		if (!eof && entries == before) {
			fail("%s: page %u: no entries, and not the end", what, pages);
			return;
		}
	}
	unsigned missing = 0, twice = 0;
	for (unsigned k = 0; k < NFILES; k++) {
		missing += !seen[k];
		twice += seen[k] > 1;
	}
	if (missing || twice || others != 2)
		fail("%s: %u names missing, %u more than once, %u others (want . and ..)", what,
		     missing, twice, others);
	else
		ok("%s: %u CREATEs (%u in flight) in %.0f ms; all %u names back in %u pages, %u of "
		   "them RDMA_NOMSG (%zu bytes by reply chunk), %.0f ms",
		   what, NFILES, BATCH, t1 - t0, NFILES, pages, nomsg, chunk_bytes, now_ms() - t1);
}

/*
 * n NULLs at once, every reply collected: true all n answered; false the
 * connection went down first (*why) or a FAIL was printed (*why empty)
 */
static bool null_burst(struct conn *c, unsigned n, const char *what, char *why, size_t wl)
{
	static uint8_t got[NRECV];
	struct call m;
	struct reply r;
	struct xr x;
	uint32_t xid0 = next_xid;
	*why = 0;
	memset(got, 0, sizeof got);
	for (unsigned i = 0; i < n; i++) {
		call_start(&m, NFS_PROG, NFS3_NULL);
		uint8_t b[256];
		struct xw w = { b, b + sizeof b, false };
		rdma_header(&w, m.xid, 1, RDMA_MSG, NULL);
		wbytes(&w, m.b, call_len(&m));
		if (!send_msg(c, b, (size_t)(w.p - b))) {
			snprintf(why, wl, "%u sent: %s", i, c->why);
			return false;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		int k = next_msg(c, r.msg, &r.len);
		if (k <= 0) {
			if (k < 0)
				snprintf(why, wl, "%u answered: %s", i, c->why);
			else
				fail("%s: %u of %u answered, then nothing for %d s", what, i, n,
				     WAIT_MS / 1000);
			return false;
		}
		char pw[200];
		if (!parse_reply(&r, NULL, pw, sizeof pw)) {
			fail("%s: %s", what, pw);
			return false;
		}
		c->credits = r.credits;
		if (r.xid - xid0 >= n || got[r.xid - xid0]++) {
			fail("%s: a reply to xid %08x: not one of ours, or again", what, r.xid);
			return false;
		}
		if (!rpc_ok(&r, r.xid, &x, what))
			return false;
	}
	return true;
}

static void t_credits(struct conn *c)
{
	unsigned n = c->credits;
	char why[256];
	if (n == 0 || n > NRECV) {
		fail("credits: the server grants %u (we can take 1 to %u)", n, NRECV);
		return;
	}
	double t0 = now_ms();
	if (null_burst(c, n, "credits", why, sizeof why))
		ok("credits: %u NULLs in flight at once (the server's grant), all answered, "
		   "%.0f ms; it grants %u",
		   n, now_ms() - t0, c->credits);
	else if (*why)
		fail("credits: %u NULLs in flight at once: %s", n, why);
}

/* Send a raw message; the next reply must be RDMA_ERROR err for xid */
static void expect_error(struct conn *c, const uint8_t *p, size_t n, uint32_t xid, uint32_t err,
			 const char *what)
{
	struct reply r;
	if (!send_msg(c, p, n)) {
		fail("%s: cannot send: %s", what, c->why);
		return;
	}
	if (!await_reply(c, &r, NULL, what))
		return;
	if (r.xid != xid || r.proc != RDMA_ERROR || r.err != err ||
	    (err == ERR_VERS && (r.vlow != 1 || r.vhigh != 1)))
		fail("%s: xid %08x, proc %u, error %u, versions %u..%u; "
		     "want RDMA_ERROR %s for xid %08x",
		     what, r.xid, r.proc, r.proc == RDMA_ERROR ? r.err : 0,
		     r.proc == RDMA_ERROR ? r.vlow : 0, r.proc == RDMA_ERROR ? r.vhigh : 0,
		     err == ERR_VERS ? "ERR_VERS (1..1)" : "ERR_CHUNK", xid);
	else
		ok("%s: RDMA_ERROR %s", what,
		   err == ERR_VERS ? "ERR_VERS, versions 1..1" : "ERR_CHUNK");
}

/* A NULL on c must be answered: what follows is what it proves */
static bool null_ok(struct conn *c, const char *what)
{
	struct call m;
	struct reply r;
	struct xr x;
	call_start(&m, NFS_PROG, NFS3_NULL);
	if (!rpc(c, &m, NULL, &r, &x, what))
		return false;
	ok("%s", what);
	return true;
}

static void t_errors(const struct sockaddr *sa)
{
	struct conn c;
	if (!conn_open(&c, sa)) {
		fail("errors: cannot connect: %s", c.why);
		conn_close(&c);
		return;
	}
	uint8_t b[SEND_SZ];
	struct xw w;
	struct call m;

	/* version 2 */
	call_start(&m, NFS_PROG, NFS3_NULL);
	w = (struct xw){ b, b + sizeof b, false };
	rdma_header(&w, m.xid, 2, RDMA_MSG, NULL);
	wbytes(&w, m.b, call_len(&m));
	expect_error(&c, b, (size_t)(w.p - b), m.xid, ERR_VERS, "a version-2 header");

	/* RDMA_MSGP: rdma_align, rdma_thresh, the lists, the call */
	call_start(&m, NFS_PROG, NFS3_NULL);
	w = (struct xw){ b, b + sizeof b, false };
	w32(&w, m.xid), w32(&w, 1), w32(&w, ASK_CREDITS), w32(&w, RDMA_MSGP);
	w32(&w, 4), w32(&w, 1024), w32(&w, 0), w32(&w, 0), w32(&w, 0);
	wbytes(&w, m.b, call_len(&m));
	expect_error(&c, b, (size_t)(w.p - b), m.xid, ERR_CHUNK, "RDMA_MSGP (obsolete)");

	/* a read list whose discriminator is 7 */
	call_start(&m, NFS_PROG, NFS3_NULL);
	w = (struct xw){ b, b + sizeof b, false };
	w32(&w, m.xid), w32(&w, 1), w32(&w, ASK_CREDITS), w32(&w, RDMA_MSG);
	w32(&w, 7), w32(&w, 0), w32(&w, 0);
	wbytes(&w, m.b, call_len(&m));
	expect_error(&c, b, (size_t)(w.p - b), m.xid, ERR_CHUNK, "a list discriminator of 7");

	/* a write chunk of 65 segments (braid takes 64), each in registered memory */
	struct region *g = reg(&c, 65 * 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	struct region *big = reg(&c, BIG_CHUNK, IBV_ACCESS_REMOTE_READ);
	if (g) {
		call_start(&m, NFS_PROG, NFS3_NULL);
		w = (struct xw){ b, b + sizeof b, false };
		w32(&w, m.xid), w32(&w, 1), w32(&w, ASK_CREDITS), w32(&w, RDMA_MSG);
		w32(&w, 0), w32(&w, 1), w32(&w, 65);
		for (unsigned i = 0; i < 65; i++) {
			struct seg s = { g->mr->rkey, 64, (uintptr_t)(g->mem + i * 64) };
			wseg(&w, &s);
		}
		w32(&w, 0), w32(&w, 0);
		wbytes(&w, m.b, call_len(&m));
		expect_error(&c, b, (size_t)(w.p - b), m.xid, ERR_CHUNK,
			     "a write chunk of 65 segments");
	}
	/* a WRITE of 4 MiB in a read chunk (registered): more than a call may bring */
	if (big) {
		call_start(&m, NFS_PROG, NFS3_WRITE);
		wfh(&m.w, &file);
		w64(&m.w, 0);
		w32(&m.w, BIG_CHUNK);
		w32(&m.w, FILE_SYNC);
		w32(&m.w, BIG_CHUNK);
		struct seg s = seg_of(big, BIG_CHUNK);
		struct chunks ch = { .read = &s, .read_pos = (uint32_t)call_len(&m) };
		w = (struct xw){ b, b + sizeof b, false };
		rdma_header(&w, m.xid, 1, RDMA_MSG, &ch);
		wbytes(&w, m.b, call_len(&m));
		expect_error(&c, b, (size_t)(w.p - b), m.xid, ERR_CHUNK, "a 4 MiB read chunk");
	}
	/* 8 bytes: not a header; nothing to answer */
	w = (struct xw){ b, b + sizeof b, false };
	w32(&w, next_xid++), w32(&w, 1);
	if (!send_msg(&c, b, 8))
		fail("an 8-byte message: cannot send: %s", c.why);
	null_ok(&c,
		"after those errors and an 8-byte message (dropped), the connection serves a NULL");
	conn_close(&c);
}

/* A new connection serves a NULL and an inline READ of the file's start */
static void serves(const struct sockaddr *sa, const char *after)
{
	struct conn c;
	char what[160];
	snprintf(what, sizeof what, "after %s, a new connection serves a NULL", after);
	if (!conn_open(&c, sa))
		fail("%s: cannot connect: %s", what, c.why);
	else if (null_ok(&c, what))
		read_inline(&c, 2048, "and an inline READ");
	conn_close(&c);
}

/*
 * What a bad message m (on its own connection c) must end in: an
 * RDMA_ERROR, an RPC error, or a disconnect within WAIT_MS
 */
static void expect_refusal(struct conn *c, const uint8_t *m, size_t n, const char *what)
{
	double t0 = now_ms();
	struct reply r;
	if (!send_msg(c, m, n)) {
		ok("%s: the connection ended (%s), %.0f ms", what, c->why, now_ms() - t0);
		return;
	}
	int k = next_msg(c, r.msg, &r.len);
	if (k < 0) {
		ok("%s: the connection ended (%s), %.0f ms", what, c->why, now_ms() - t0);
		return;
	}
	if (k == 0) {
		fail("%s: neither a reply nor a disconnect within %d s", what, WAIT_MS / 1000);
		return;
	}
	char why[200];
	if (!parse_reply(&r, NULL, why, sizeof why)) {
		fail("%s: %s", what, why);
		return;
	}
	if (r.proc == RDMA_ERROR) {
		ok("%s: RDMA_ERROR %u, %.0f ms", what, r.err, now_ms() - t0);
		return;
	}
	/* an RPC reply: denied, or accepted with an error, or an NFS error */
	struct xr x = { r.rpc, r.rpc + r.rpclen, false };
	r32(&x); /* xid */
	r32(&x); /* REPLY */
	uint32_t rstat = r32(&x), acc = 0, nfs = 0, vn;
	if (rstat == 0) { /* accepted: after the verifier, accept_stat */
		r32(&x);
		ropaque(&x, &vn, 400);
		acc = r32(&x);
		if (acc == 0)
			nfs = r32(&x);
	}
	if (!x.bad && (rstat || acc || nfs))
		ok("%s: an error reply (%s %u), %.0f ms", what,
		   rstat ? "RPC reply_stat"
		   : acc ? "accept_stat"
			 : "NFS3 status",
		   rstat ? rstat
		   : acc ? acc
			 : nfs,
		   now_ms() - t0);
	else
		fail("%s: the server answered it as a good call", what);
}

/*
 * A bad chunk, handle ^ xor_handle and offset + add of a 4 KiB region of
 * ours: a WRITE of 4 KiB at 0 whose read chunk it is, or (write) a READ of
 * 4 KiB at 0 whose write chunk it is
 */
static void t_bad_chunk(const struct sockaddr *sa, bool write, uint32_t xor_handle, uint64_t add,
			const char *what)
{
	struct conn c;
	if (!conn_open(&c, sa)) {
		fail("%s: cannot connect: %s", what, c.why);
		conn_close(&c);
		return;
	}
	struct region *g =
	    reg(&c, 4096,
		write ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_REMOTE_READ);
	if (g) {
		memset(g->mem, 0xee, 4096);
		struct seg s = seg_of(g, 4096);
		s.handle ^= xor_handle;
		s.offset += add;
		struct chunks ch = { .write = &s };
		struct call m;
		call_start(&m, NFS_PROG, write ? NFS3_READ : NFS3_WRITE);
		wfh(&m.w, &file);
		w64(&m.w, 0);
		w32(&m.w, 4096);
		if (!write) {
			w32(&m.w, FILE_SYNC);
			w32(&m.w, 4096);
			ch = (struct chunks){ .read = &s, .read_pos = (uint32_t)call_len(&m) };
		}
		uint8_t b[SEND_SZ];
		struct xw w = { b, b + sizeof b, false };
		rdma_header(&w, m.xid, 1, RDMA_MSG, &ch);
		wbytes(&w, m.b, call_len(&m));
		expect_refusal(&c, b, (size_t)(w.p - b), what);
	}
	conn_close(&c);
	serves(sa, what);
}

/* An RDMA_MSG NULL padded past what the server said it receives */
static void t_oversized(const struct sockaddr *sa)
{
	struct conn c;
	char what[120];
	if (!conn_open(&c, sa)) {
		fail("oversized inline message: cannot connect: %s", c.why);
		conn_close(&c);
		return;
	}
	size_t n = c.srv_recv + 1024;
	snprintf(what, sizeof what, "an inline message of %zu bytes (the server receives %u)", n,
		 c.srv_recv);
	if (n > SEND_SZ) {
		fail("%s: more than we can send", what);
	} else {
		static uint8_t b[SEND_SZ];
		struct call m;
		call_start(&m, NFS_PROG, NFS3_NULL);
		struct xw w = { b, b + sizeof b, false };
		rdma_header(&w, m.xid, 1, RDMA_MSG, NULL);
		wbytes(&w, m.b, call_len(&m));
		memset(w.p, 0, n - (size_t)(w.p - b));
		expect_refusal(&c, b, n, what);
	}
	conn_close(&c);
	serves(sa, "the oversized message");
}

/* Twice the granted credits at once */
static void t_overrun(const struct sockaddr *sa, unsigned credits)
{
	struct conn c;
	char what[120], why[256];
	unsigned n = 2 * credits;
	snprintf(what, sizeof what, "credit overrun: %u NULLs at once (%u granted)", n, credits);
	if (n > NRECV) {
		fail("%s: more than we can receive", what);
		return;
	}
	if (!conn_open(&c, sa)) {
		fail("%s: cannot connect: %s", what, c.why);
		conn_close(&c);
		return;
	}
	double t0 = now_ms();
	if (null_burst(&c, n, what, why, sizeof why))
		ok("%s: all answered (the excess held back by RNR retries), %.0f ms", what,
		   now_ms() - t0);
	else if (*why)
		ok("%s: the connection ended (%s), %.0f ms", what, why, now_ms() - t0);
	conn_close(&c);
	serves(sa, "the credit overrun");
}

/*
 * A peer that receives 1 KiB inline (its RFC 8797 message says so; we post
 * 4 KiB buffers all the same, so a longer message is seen, not lost):
 * nothing the server sends it may be longer.  A READ of 2 KiB offering no
 * chunk gets RDMA_ERROR ERR_CHUNK (no room for the reply); a READDIRPLUS
 * offering a reply chunk of 64 segments of 2 KiB gets the reply in the
 * chunk (whose segments an RDMA_NOMSG header lists in 1056 bytes), or
 * ERR_CHUNK.
 */
static void t_small_inline(const struct sockaddr *sa)
{
	struct conn c;
	adv_recv = 1024;
	bool up = conn_open(&c, sa);
	adv_recv = INLINE;
	if (!up) {
		fail("a peer receiving 1 KiB inline: cannot connect: %s", c.why);
		conn_close(&c);
		return;
	}
	struct call m;
	struct reply r;
	struct xr x;
	const char *what = "a peer receiving 1 KiB inline, a 2 KiB READ without chunks";
	call_start(&m, NFS_PROG, NFS3_READ);
	wfh(&m.w, &file);
	w64(&m.w, 0);
	w32(&m.w, 2048);
	if (send_call(&c, &m, NULL, what) && await_reply(&c, &r, NULL, what)) {
		if (r.len > 1024)
			fail("%s: the server sent %zu bytes (RFC 8797: it receives 1024)", what,
			     r.len);
		else if (r.xid != m.xid || r.proc != RDMA_ERROR || r.err != ERR_CHUNK)
			fail("%s: xid %08x proc %u; want RDMA_ERROR ERR_CHUNK", what, r.xid,
			     r.proc);
		else
			ok("%s: RDMA_ERROR ERR_CHUNK", what);
	}
	struct region *g = reg(&c, 64 * 2048, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!g) {
		conn_close(&c);
		return;
	}
	struct seg segs[64];
	for (unsigned i = 0; i < 64; i++)
		segs[i] = (struct seg){ g->mr->rkey, 2048, (uintptr_t)(g->mem + i * 2048) };
	struct chunks ch = { .reply = segs, .nreply = 64 };
	what = "a peer receiving 1 KiB inline, READDIRPLUS with a 64-segment reply chunk";
	call_start(&m, NFS_PROG, NFS3_READDIRPLUS);
	wfh(&m.w, &dir);
	w64(&m.w, 0);
	w64(&m.w, 0);
	w32(&m.w, RD_MAX);
	w32(&m.w, RD_MAX);
	if (send_call(&c, &m, &ch, what) && await_reply(&c, &r, &ch, what)) {
		if (r.len > 1024)
			fail("%s: the server sent %zu bytes (RFC 8797: it receives 1024)", what,
			     r.len);
		else if (r.xid == m.xid && r.proc == RDMA_ERROR && r.err == ERR_CHUNK)
			ok("%s: RDMA_ERROR ERR_CHUNK", what);
		else if (!rpc_ok(&r, m.xid, &x, what))
			; /* a FAIL printed */
		else if (r32(&x))
			fail("%s: an NFS3 error", what);
		else
			ok("%s: %s, %zu bytes in %u segments", what,
			   r.proc == RDMA_NOMSG ? "RDMA_NOMSG" : "RDMA_MSG", r.rpclen, r.rn);
	}
	conn_close(&c);
}

int main(int argc, char **argv)
{
	bool skip_small = false;
	if (argc == 5 && !strcmp(argv[1], "--skip") && !strcmp(argv[2], "small-inline")) {
		skip_small = true;
		argv += 2;
		argc -= 2;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: rdma-probe [--skip small-inline] ADDR PORT\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
				  .ai_socktype = SOCK_STREAM },
			*ai;
	int e = getaddrinfo(argv[1], argv[2], &hints, &ai);
	if (e) {
		fprintf(stderr, "rdma-probe: %s %s: %s\n", argv[1], argv[2], gai_strerror(e));
		return 2;
	}
	const struct sockaddr *sa = ai->ai_addr;
	double t0 = now_ms();
	next_xid = (uint32_t)time(NULL) * 2654435761u | 1;
	pat = malloc(IO_SIZE);
	if (!pat)
		return 2;
	uint64_t s = 0x9e3779b97f4a7c15ull;
	for (size_t i = 0; i < IO_SIZE; i++) {
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		pat[i] = (uint8_t)s;
	}

	struct conn c;
	unsigned credits = 0;
	if (!conn_open(&c, sa)) {
		fail("connect to %s port %s over RDMA: %s", argv[1], argv[2], c.why);
	} else if (t_mount(&c)) {
		t_write_read(&c);
		t_readdir(&c);
		t_credits(&c);
		credits = c.credits;
	}
	conn_close(&c);
	if (file.len) {
		t_errors(sa);
		t_bad_chunk(sa, false, 0xa5a5a500u, 0,
			    "a WRITE whose read chunk has a bogus steering tag");
		t_bad_chunk(sa, false, 0, 1u << 20,
			    "a WRITE whose read chunk lies outside our region");
		t_bad_chunk(sa, true, 0xa5a5a500u, 0,
			    "a READ whose write chunk has a bogus steering tag");
		t_oversized(sa);
		if (credits)
			t_overrun(sa, credits);
		if (!skip_small && dir.len)
			t_small_inline(sa);
		else if (skip_small)
			printf("skipped: small-inline (--skip)\n");
	}
	printf("rdma-probe: %d checks, %d failed, %.1f s\n", checks, fails, (now_ms() - t0) / 1e3);
	freeaddrinfo(ai);
	free(pat);
	return fails || !checks ? 1 : 0;
}
