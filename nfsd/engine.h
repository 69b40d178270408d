/* SPDX-License-Identifier: MIT */
/*
 * Engine internals shared by loop.c (loops, connections, transports),
 * svc.c (call dispatch), auth.c (flavors), worker.c and clnt.c.
 * Not a public interface: daemons and tools include nfsd/rpc.h.
 */
#ifndef BRAID_NFSD_ENGINE_H
#define BRAID_NFSD_ENGINE_H

#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>

#include "nfsd/clock.h"
#include "nfsd/rec.h"
#include "nfsd/rpc.h"

#define NFSD_OUT_IOV 512           /* iovecs in one send */
#define NFSD_OUT_SCRATCH (64 << 10) /* inline-encoded reply bytes per send */
#define NFSD_RBUF_MIN (256 << 10)  /* receive buffer, grows up to a record */
#define NFSD_RECV_CLIP (64 << 10)  /* a fragment this large is received to its end only */
#define NFSD_OUT_MAX_BYTES (1 << 20) /* queued reply bytes before we stop reading */
#define NFSD_CALL_BUCKETS 64
#define NFSD_SINK_PEEK 512       /* a reply's first bytes, read to place its data */
#define NFSD_SINK_MIN (64 << 10) /* smaller replies are received whole */

enum nfsd_backend { NFSD_BACKEND_URING = 1, NFSD_BACKEND_EPOLL = 2 };

/*
 * A transport under a connection.  The connection logic (records, queues,
 * flow control) is shared; a stream transport only moves bytes and reports
 * back through the loop's completion handlers.  TCP has two (io_uring,
 * epoll).
 *
 * A message transport (RPC-over-RDMA, nfsd/rdma.c) sets 'msg': it receives
 * on its own (nfsd_loop_watch), hands each whole call to nfsd_svc_record()
 * with c->rb set to the buffer holding it, takes each finished reply
 * through queue_reply() (it owns the request from then on and frees it
 * with nfsd_req_free once sent), takes the engine's own queued messages
 * (back-channel calls) through start_send() and reports them sent with
 * nfsd_conn_send_done(), and tears down through kill(), which ends with
 * nfsd_conn_closed().  arm_recv and wait_connect are unused.
 */
struct nfsd_xprt_ops {
	const char *name;
	void (*attach)(struct nfsd_conn *c);       /* joined its loop */
	void (*arm_recv)(struct nfsd_conn *c);     /* into rb[rb_end, cap) */
	void (*start_send)(struct nfsd_conn *c, struct msghdr *m);
	void (*wait_connect)(struct nfsd_conn *c); /* outgoing connect pending */
	void (*detach)(struct nfsd_conn *c);       /* before the fd closes */
	bool msg;                                  /* a message transport: */
	void (*queue_reply)(struct nfsd_conn *c, struct nfsd_req *r);
	void (*kill)(struct nfsd_conn *c);
};

/*
 * Receive buffer; requests decoded from it hold a reference (loop thread
 * only).  release, when set, takes it back instead of free() (a message
 * transport's registered memory).
 */
struct nfsd_rbuf {
	unsigned refs;
	size_t cap;
	void (*release)(struct nfsd_rbuf *rb);
	uint8_t data[];
};

/*
 * Replies and calls waiting to be sent, as one iovec list.  Inline-encoded
 * messages live in 'scratch'; worker replies are referenced in their
 * request's memory, and those requests are kept on 'held' until sent.
 */
struct nfsd_outq {
	struct xdr_enc enc;
	struct iovec iov[NFSD_OUT_IOV];
	uint8_t *scratch;
	struct nfsd_req *held;
	size_t sent; /* bytes of enc already written by a partial send */
};

/* What an io_uring completion or epoll event refers to. */
enum nfsd_op_kind {
	NFSD_OP_RECV = 1,
	NFSD_OP_SEND,
	NFSD_OP_ACCEPT,
	NFSD_OP_WAKE,
	NFSD_OP_TICK,
	NFSD_OP_CONNECT,
	NFSD_OP_FN, /* a watched fd (nfsd_loop_watch): fn */
};
struct nfsd_op {
	uint8_t kind;
	struct nfsd_conn *conn;
	int listen_idx;
	/* NFSD_OP_FN */
	int fd;
	bool armed, in_epoll;
	void (*fn)(struct nfsd_loop *l, struct nfsd_op *op, int res);
	void *arg;
};

/*
 * Call op->fn(l, op, res) on l's thread once op->fd is readable (res > 0;
 * < 0 an error).  One-shot: fn watches again if it wants more.  Only on
 * l's thread.  nfsd_loop_unwatch stops a watch; it returns true when fn
 * will still be called once (res -ECANCELED, io_uring), false when not.
 */
void nfsd_loop_watch(struct nfsd_loop *l, struct nfsd_op *op);
bool nfsd_loop_unwatch(struct nfsd_loop *l, struct nfsd_op *op);

/* An outgoing call awaiting its reply (owned by its connection or client). */
struct nfsd_call {
	uint32_t xid;
	nfsd_call_cb cb;
	void *ctx;
	uint64_t deadline_ns; /* 0 = none */
	struct nfsd_call *hnext; /* hash chain / free list */
	struct nfsd_call *qnext; /* posting list */
	struct nfsd_clnt *clnt;  /* a client's call, or ... */
	struct nfsd_conn *conn;  /* ... a call on a server connection (ref held) */
	size_t len;   /* encoded bytes, record mark included */
	size_t cap;
	uint8_t *msg; /* the encoded call: malloc'd, kept for resending */
	struct nfsd_sink sink; /* buf NULL: none */
	const struct nfsd_clnt_auth *auth; /* opts.auth, or NULL */
	void *auth_st;			   /* auth's state for this call */
	bool resign; /* auth marshals msg again before it is sent */
};

/* A function to run on a loop's thread (posted from any thread). */
struct nfsd_post_fn {
	void (*fn)(struct nfsd_loop *l, void *arg);
	void *arg;
	struct nfsd_post_fn *next;
};

/*
 * A connection.  Everything but 'refs' is touched only by its loop's thread.
 * Lifetime: the loop holds one reference while the socket is open; each
 * request at a worker and each client holds one.
 */
struct nfsd_conn {
	struct nfsd_loop *loop;
	const struct nfsd_xprt_ops *xprt;
	void *xprt_priv; /* a message transport's own state */
	atomic_uint refs;
	int fd;
	struct sockaddr_storage peer;
	socklen_t peerlen;

	struct nfsd_rbuf *rb;
	size_t rb_end;
	struct nfsd_rec rec;
	/* finished replies that did not fit in q[cur]; while any wait, no new
	 * records are taken */
	struct nfsd_req *backlog, *backlog_tail;
	unsigned nbacklog; /* of them */

	struct nfsd_outq q[2];
	unsigned cur;   /* q[cur] takes new messages; q[!cur] may be sending */
	bool sending;
	struct msghdr smsg; /* of the send in flight */
	bool dirty;     /* q[cur] has data and a flush is scheduled */
	struct nfsd_conn *dnext;

	unsigned reqs_out; /* requests at workers */
	/* NFSD_PROC_BULK calls from dispatch to their reply's send (or
	 * nfsd_req_unbulk, which a worker may call) */
	atomic_uint bulk_out;
	bool eof, dead, recv_armed, connecting, closed_fd;
	bool connect_failed; /* its connect was refused or timed out (a client's) */
	unsigned ops_pending; /* io_uring operations not yet completed */
	struct nfsd_op recv_op, send_op, conn_op;

	/* outgoing calls on this connection */
	struct nfsd_call *calls[NFSD_CALL_BUCKETS];
	unsigned ncalls;
	unsigned nsinks; /* of them with a sink: replies are peeked at */
	/* a reply's data being received into its call's sink */
	struct nfsd_divert {
		bool on;
		struct nfsd_call *call; /* held in calls[] until the reply is parsed */
		uint8_t *dst;
		size_t left, pad, total;
		uint8_t padbuf[4];
	} div;
	struct nfsd_call *orphans; /* timed-out calls whose bytes may be queued */
	struct nfsd_clnt *clnt; /* set when a client owns this connection */
	const struct nfsd_program *bc_prog; /* calls we serve on a client conn */
	void *bc_priv;

	struct nfsd_conn *next, *prev; /* loop's list */
};

struct nfsd_listener {
	int fd;
	uint16_t port;
	struct nfsd_op op;
};

struct nfsd_loop {
	struct nfsd_server *srv;
	unsigned idx;
	pthread_t thr;
	int backend;
	struct io_uring ring;
	bool ring_disabled; /* created disabled; the loop thread enables it */
	int epfd;
	int evfd;
	uint64_t ev_val;
	struct nfsd_op wake_op, tick_op;
	struct __kernel_timespec tick_ts;
	atomic_bool stop;

	/* cross-thread hand-offs, guarded by post_lock */
	pthread_mutex_t post_lock;
	struct nfsd_req *posted_reqs;
	struct nfsd_conn *posted_conns;
	struct nfsd_call *posted_calls;
	struct nfsd_post_fn *posted_fns;
	bool wake_pending;

	struct nfsd_conn *conns;
	struct nfsd_conn *dirty;
	struct nfsd_req *free_reqs;
	struct nfsd_call *free_calls;
	unsigned nfree_reqs;
	struct nfsd_req inline_req;
	struct nfsd_clnt *clnts; /* clients on this loop, for timers */
	uint64_t now_ns;

	/* statistics: written by this loop only, read racily */
	struct nfsd_server_stats st;
};

struct nfsd_worker_pool {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct nfsd_req *head, *tail;
	unsigned queued;
	unsigned idle; /* workers waiting on cond */
	bool stop;
	pthread_t *thr;
	unsigned n;
};

struct nfsd_server {
	struct nfsd_server_opts opts;
	unsigned nloops;
	struct nfsd_loop *loops;
	atomic_uint rr;
	struct nfsd_listener listeners[8];
	unsigned nlisteners;
	struct nfsd_rdma *rdma; /* RPC-over-RDMA listeners (nfsd/rdma.c); NULL: none */
	const struct nfsd_program *progs[16];
	unsigned nprogs;
	const struct nfsd_auth_flavor *flavors[8];
	unsigned nflavors;
	struct nfsd_worker_pool wp;
	bool started;
	int backend;
	atomic_uint xid_seed;
};

/* loop.c */
void nfsd_loop_post_req(struct nfsd_loop *l, struct nfsd_req *req);
void nfsd_loop_post_call(struct nfsd_loop *l, struct nfsd_call *c);
void nfsd_loop_post_fn(struct nfsd_loop *l, struct nfsd_post_fn *f);
bool nfsd_loop_is_current(const struct nfsd_loop *l);
/* append an encoded message to the connection's output; false when full */
bool nfsd_conn_queue_bytes(struct nfsd_conn *c, const uint8_t *p, size_t len);
void nfsd_conn_mark_dirty(struct nfsd_conn *c);
void nfsd_conn_kill(struct nfsd_conn *c);
/* a message transport: what start_send was given went (n bytes), or
 * failed (n <= 0: the connection dies) */
void nfsd_conn_send_done(struct nfsd_conn *c, ssize_t n);
/* a message transport finished tearing down after kill(): the engine
 * lets go of the connection */
void nfsd_conn_closed(struct nfsd_conn *c);
/* a connection made by a transport joins loop l (from any thread) */
void nfsd_loop_post_conn(struct nfsd_loop *l, struct nfsd_conn *c);
/* take more records / receive again after what paused it changed (loop
 * thread; nothing while dead or a receive is armed) */
void nfsd_conn_resume(struct nfsd_conn *c);
struct nfsd_conn *nfsd_conn_new(struct nfsd_loop *l, int fd);
void nfsd_loop_add_conn(struct nfsd_loop *l, struct nfsd_conn *c);
void nfsd_conn_start_connect(struct nfsd_conn *c);
struct nfsd_req *nfsd_req_alloc(struct nfsd_loop *l);
void nfsd_req_free(struct nfsd_loop *l, struct nfsd_req *req);
void nfsd_rbuf_put(struct nfsd_rbuf *rb);

/* rdma.c: loop 0 starts watching the RDMA listeners; the server goes */
void nfsd_rdma_loop_start(struct nfsd_loop *l);
void nfsd_rdma_server_free(struct nfsd_server *s);

/* svc.c: a complete record arrived. */
void nfsd_svc_record(struct nfsd_conn *c, uint8_t *rec, size_t len);
/* a worker-completed request is back on its loop */
void nfsd_svc_req_returned(struct nfsd_loop *l, struct nfsd_req *req);
/* append a request's finished reply to the connection (or its backlog) */
void nfsd_svc_queue_reply(struct nfsd_conn *c, struct nfsd_req *req);
/* move backlogged replies into the output queue while they fit */
void nfsd_svc_drain_backlog(struct nfsd_conn *c);

/* worker.c */
int nfsd_workers_start(struct nfsd_server *s);
void nfsd_workers_stop(struct nfsd_server *s);
void nfsd_workers_queue(struct nfsd_server *s, struct nfsd_req *req);
void nfsd_req_run(struct nfsd_req *req);

/* auth.c */
extern const struct nfsd_auth_flavor nfsd_auth_none, nfsd_auth_sys;
void nfsd_auth_set_manage_gids(bool on, unsigned ttl_s);
int nfsd_auth_resolve_groups(struct nfsd_req *req);

/* clnt.c */
void nfsd_clnt_conn_dead(struct nfsd_conn *c);
void nfsd_clnt_conn_ready(struct nfsd_conn *c);
void nfsd_conn_handle_reply(struct nfsd_conn *c, uint32_t xid, uint8_t *rec, size_t len);
/* The call awaiting xid on c, left in place (NULL: none). */
struct nfsd_call *nfsd_conn_call_find(struct nfsd_conn *c, uint32_t xid);
void nfsd_call_submit_local(struct nfsd_loop *l, struct nfsd_call *call);
void nfsd_clnt_conn_drained(struct nfsd_conn *c);
void nfsd_loop_tick_calls(struct nfsd_loop *l);
void nfsd_conn_fail_calls(struct nfsd_conn *c, int err);
void nfsd_conn_free_orphans(struct nfsd_conn *c);

#endif
