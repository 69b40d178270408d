/* SPDX-License-Identifier: MIT */
/*
 * The RPC engine (RFC 5531): event loops, connections, record marking,
 * dispatch, authentication, the worker pool, and the client side.
 *
 * Threads: one event loop per core owns its connections; everything in a
 * struct nfsd_conn is touched only by its loop's thread unless said
 * otherwise.  Blocking procedures run on the worker pool and hand their
 * request back to the owning loop to be sent.
 *
 * Transports plug in below struct nfsd_conn (TCP on io_uring, TCP on epoll,
 * later RDMA); flavors plug in as struct nfsd_auth_flavor (AUTH_NONE,
 * AUTH_SYS, later RPCSEC_GSS).  Callers see neither.
 */
#ifndef BRAID_NFSD_RPC_H
#define BRAID_NFSD_RPC_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "nfsd/xdr.h"

/* RFC 5531 §9 constants used by the engine (rpc_prot.x has the full XDR). */
enum {
	NFSD_RPC_CALL = 0,
	NFSD_RPC_REPLY = 1,
	NFSD_MSG_ACCEPTED = 0,
	NFSD_MSG_DENIED = 1,
	NFSD_RPC_MISMATCH = 0,
	NFSD_AUTH_ERROR = 1,
};
enum nfsd_accept_stat {
	NFSD_SUCCESS = 0,
	NFSD_PROG_UNAVAIL = 1,
	NFSD_PROG_MISMATCH = 2,
	NFSD_PROC_UNAVAIL = 3,
	NFSD_GARBAGE_ARGS = 4,
	NFSD_SYSTEM_ERR = 5,
};
enum nfsd_auth_stat {
	NFSD_AUTH_OK = 0,
	NFSD_AUTH_BADCRED = 1,
	NFSD_AUTH_REJECTEDCRED = 2,
	NFSD_AUTH_BADVERF = 3,
	NFSD_AUTH_REJECTEDVERF = 4,
	NFSD_AUTH_TOOWEAK = 5,
};
enum {
	NFSD_AUTH_NONE = 0,
	NFSD_AUTH_SYS = 1,
	NFSD_RPCSEC_GSS = 6,
};

#define NFSD_NGROUPS_MAX 1024 /* resolved groups kept per credential */

/* Who is calling: filled by the flavor before the procedure runs. */
struct nfsd_cred {
	uint32_t flavor;
	uint32_t uid, gid;
	uint32_t ngroups;
	uint32_t *groups;    /* arena memory of the request */
	xdr_string machine;  /* AUTH_SYS machinename, points into the record */
	uint32_t stamp;
	const char *principal; /* RPCSEC_GSS: the caller's GSS name ("user@REALM"),
				* NUL-terminated in the request arena; else NULL */
	uint32_t gss_service;  /* RPCSEC_GSS: 1 none (krb5), 2 integrity (krb5i),
				* 3 privacy (krb5p); else 0 */
	bool sp4_allow;	       /* NFSv4.1: the COMPOUND holds an op the client's
				* SP4_MACH_CRED spo_must_allow lets this, its
				* machine credential, send (any export flavor) */
};
/* The pseudo-flavor of a credential (RFC 2623 §2.1): 0 AUTH_NONE, 1 AUTH_SYS,
 * 390003/390004/390005 krb5/krb5i/krb5p, else the flavor itself. */
static inline uint32_t nfsd_cred_pseudoflavor(const struct nfsd_cred *c)
{
	if (c->flavor == 6 /* RPCSEC_GSS */ && c->gss_service >= 1 && c->gss_service <= 3)
		return 390002u + c->gss_service;
	return c->flavor;
}

struct nfsd_server;
struct nfsd_metrics;
struct nfsd_loop;
struct nfsd_conn;
struct nfsd_req;
struct nfsd_drc;
struct nfsd_drc_key;

/*
 * A procedure handler.  It returns an accept_stat (NFSD_SUCCESS after filling
 * *res, or e.g. NFSD_GARBAGE_ARGS / NFSD_SYSTEM_ERR), or one of:
 *   NFSD_ASYNC  - the handler keeps the request and later calls
 *                 nfsd_req_done() from any thread;
 *   NFSD_DROP   - send no reply (e.g. a retransmission still in progress).
 * A handler with enc_res == NULL encodes its result itself into req->enc.
 */
#define NFSD_ASYNC (-1)
#define NFSD_DROP (-2)
typedef int (*nfsd_proc_fn)(struct nfsd_req *req, void *args, void *res);

enum nfsd_proc_flags {
	/* never blocks: run on the loop thread (AUTH_SYS groups are the wire's:
	 * manage_gids resolution, which may block, happens for worker procs) */
	NFSD_PROC_INLINE = 1 << 0,
	/* its reply may carry bulk data from memory the procedure readied (a
	 * data server's READ from the page cache): with opts.bulk_window, a
	 * connection holds at most that many of these calls between their
	 * dispatch and the end of their reply's send (nfsd_req_unbulk) */
	NFSD_PROC_BULK = 1 << 1,
	/* not idempotent: with the version's drc, a retransmission is answered
	 * from the duplicate request cache (nfsd/drc.h), not run again */
	NFSD_PROC_DRC = 1 << 2,
};

struct nfsd_proc {
	const char *name; /* NULL: procedure not implemented (PROC_UNAVAIL) */
	nfsd_proc_fn fn;
	xdr_dec_fn dec_args;
	size_t args_size;
	xdr_enc_fn enc_res;
	size_t res_size;
	unsigned flags;
	/* optional, for a procedure without NFSD_PROC_INLINE: this call, its
	 * arguments still undecoded in req->dec, never blocks and may run on
	 * the loop thread (e.g. a COMPOUND of only non-blocking operations);
	 * the procedure then sees req->on_loop */
	bool (*inline_ok)(struct nfsd_req *req);
};

/*
 * Fill the codec fields (dec_args, args_size, enc_res, res_size) of every
 * row that has a handler from the generated descriptor of the version, so
 * tables name only handlers and flags.  Rows past desc->nprocs are left
 * alone.  Call before the server starts.
 */
struct xdr_vers_desc;
void nfsd_procs_bind(struct nfsd_proc *procs, unsigned nprocs, const struct xdr_vers_desc *desc);

struct nfsd_version {
	uint32_t vers;
	const struct nfsd_proc *procs; /* indexed by procedure number */
	uint32_t nprocs;
	void *priv; /* when set, handed to handlers instead of the program's (one
		     * program number served by independent modules, e.g. NFS v3
		     * and v4) */
	struct nfsd_drc *drc; /* optional: the reply cache of its NFSD_PROC_DRC
			       * procedures (nfsd/drc.h), the embedder's */
};

struct nfsd_program {
	uint32_t prog;
	const char *name;
	const struct nfsd_version *versions;
	unsigned nversions;
	void *priv; /* handed to handlers as req->priv */
};

/*
 * An authentication flavor.  accept() checks the call's credential and
 * verifier, fills req->cred and the reply verifier (req->rverf_*), and
 * returns NFSD_AUTH_OK, an auth_stat, or NFSD_DROP to discard the call
 * without a reply (RFC 2203 §5.3.3.1: a replayed RPCSEC_GSS sequence
 * number).  wrap/unwrap are for flavors that protect arguments and results
 * (RPCSEC_GSS integrity/privacy); NULL means identity.  unwrap() runs once
 * the procedure is known and repositions req->dec at the plain arguments
 * (< 0: GARBAGE_ARGS); wrap() runs after the results are encoded and
 * replaces them (nfsd_req_res_*) with their protected form (< 0:
 * SYSTEM_ERR).
 */
struct nfsd_auth_flavor {
	uint32_t flavor;
	const char *name;
	int (*accept)(struct nfsd_req *req, const xdr_opaque *cred, const xdr_opaque *verf);
	int (*unwrap)(struct nfsd_req *req);
	int (*wrap)(struct nfsd_req *req);
	void *priv; /* the flavor's own state (keys, replay cache) */
};

struct nfsd_server_opts {
	unsigned nloops;          /* event loops; 0 = one per online core */
	unsigned nworkers;        /* blocking-work threads; 0 = 2 per loop */
	uint32_t max_record;      /* largest RPC record accepted (bytes) */
	unsigned max_conn_reqs;   /* requests in progress per connection: with the
				   * connection count, this bounds the worker queue */
	size_t arena_limit;       /* per-request decode/encode arena cap */
	bool manage_gids;         /* resolve AUTH_SYS groups on the server */
	unsigned gid_cache_ttl_s; /* how long resolved groups are trusted */
	int force_backend;        /* 0 auto, 1 io_uring, 2 epoll */
	unsigned bulk_window;     /* NFSD_PROC_BULK calls per connection; 0 = no limit */
	struct nfsd_metrics *metrics; /* optional: count and time every call (nfsd/metrics.h) */
};

void nfsd_server_opts_default(struct nfsd_server_opts *o);

/*
 * For a thread the process's signals are not for (loops, workers, helper
 * threads): block every signal but the synchronous fault signals (SIGBUS,
 * SIGSEGV, SIGFPE, SIGILL, SIGTRAP, SIGSYS).  Those are the thread's own
 * and must reach its handlers: a fault with its signal blocked kills the
 * process whatever handler is installed (the DS store turns a SIGBUS on a
 * mapped page into EIO, on whichever thread reads it).
 */
void nfsd_thread_block_signals(void);

/* Create a server with opts (NULL for defaults).  Returns NULL and sets *err. */
struct nfsd_server *nfsd_server_new(const struct nfsd_server_opts *opts, int *err);
int nfsd_server_add_program(struct nfsd_server *s, const struct nfsd_program *p);
int nfsd_server_add_flavor(struct nfsd_server *s, const struct nfsd_auth_flavor *f);
/* Listen on a TCP address; port 0 picks one (read it back with _port). */
int nfsd_server_listen(struct nfsd_server *s, const struct sockaddr *sa, socklen_t len);
int nfsd_server_listen_port(struct nfsd_server *s, unsigned idx);
/*
 * Listen for RPC-over-RDMA version 1 (RFC 8166, nfsd/rdma.c) on an
 * address of an RDMA device (a RoCE NIC's IP, soft-RoCE's netdev); port 0
 * picks one.  -ENOTSUP when built without rdma-core, -ENODEV when no RDMA
 * device has that address.
 */
int nfsd_server_listen_rdma(struct nfsd_server *s, const struct sockaddr *sa, socklen_t len);
int nfsd_server_listen_rdma_port(struct nfsd_server *s, unsigned idx);
/*
 * Memory replies carry payloads from (nfsd_req_payload), e.g. a server's
 * read buffers: registered with every RDMA device the server uses, now and
 * later, so RDMA Write sends from it without a copy.  Call after the RDMA
 * listeners are set up (before, or without any, it is a no-op); unregister
 * before the memory goes, and only when no reply still refers to it.
 */
int nfsd_server_rdma_register(struct nfsd_server *s, void *addr, size_t len);
void nfsd_server_rdma_unregister(struct nfsd_server *s, void *addr);
/* What to tell an operator about nfsd_server_listen_rdma's error ("" or
 * " (...)"). */
const char *nfsd_rdma_listen_hint(int err);
/* Start the loops and workers; returns immediately. */
int nfsd_server_start(struct nfsd_server *s);
/* Stop and free everything; joins every thread. */
void nfsd_server_free(struct nfsd_server *s);
const char *nfsd_server_backend(const struct nfsd_server *s);

struct nfsd_server_stats {
	uint64_t calls, replies, garbage, auth_errors, conns_accepted, conns_closed,
		records_too_big, worker_reqs;
	/* RPC-over-RDMA: connections accepted, calls received, RDMA_ERRORs
	 * sent, bytes pulled by RDMA Read (read chunks), pushed by RDMA Write
	 * into write chunks and into reply chunks, and sent inline */
	uint64_t rdma_conns, rdma_calls, rdma_errors, rdma_read_bytes, rdma_write_bytes,
		rdma_reply_chunk_bytes, rdma_inline_bytes, rdma_inline_in_bytes,
		rdma_write_zerocopy_bytes; /* of rdma_write_bytes: from registered memory */
	/* TCP: bytes received and sent */
	uint64_t tcp_bytes_in, tcp_bytes_out;
};
void nfsd_server_stats(struct nfsd_server *s, struct nfsd_server_stats *st);

/*
 * One RPC call being served.  Owned by the engine; a handler owns it between
 * being called and nfsd_req_done() when it returns NFSD_ASYNC.
 */
struct nfsd_req {
	struct nfsd_conn *conn;
	struct nfsd_loop *loop;
	void *priv; /* the program's priv */
	uint32_t xid, prog, vers, proc;
	const struct nfsd_proc *p;
	const struct nfsd_auth_flavor *flavor;
	struct nfsd_cred cred;
	void *flavor_ctx; /* flavor state for wrap (e.g. GSS context) */
	uint32_t rverf_flavor;
	xdr_opaque rverf;
	struct xdr_dec dec; /* positioned at the arguments */
	struct xdr_enc enc; /* the reply after the header, for self-encoding */
	struct xdr_arena arena;
	void *args, *res;
	int status;
	bool bulk; /* counted in its connection's bulk window */
	bool on_loop; /* runs on its loop thread: must not block */
	/* the whole call record (xid first), for flavors that sign calls */
	const uint8_t *rec;
	size_t rec_len;
	/* called once when the request is freed, after its reply is sent:
	 * releases memory the reply referenced (e.g. a READ buffer) */
	void (*on_free)(void *arg);
	void *on_free_arg;
	/* engine private */
	struct nfsd_req *next;
	void *rbuf;
	uint8_t *mark_p, *stat_p;   /* record mark and accept_stat, to patch */
	unsigned res_niov;          /* encoder state where results begin */
	size_t res_len, res_buf_used, res_iov_len;
	uint8_t *res_buf;
	size_t res_buf_size;
	bool denied;                /* reply is MSG_DENIED, no results */
	uint32_t deny_stat;         /* its reject_stat (trace) */
	uint32_t deny_auth;         /* its auth_stat, for AUTH_ERROR (trace) */
	uint64_t t0_ns;             /* the record's arrival (metrics, trace); 0: not taken */
	const char *prog_name;      /* the program's name, once p is set */
	struct nfsd_drc *drc;       /* recorded as running in this cache (drc_key) */
	struct nfsd_drc_key *drc_key; /* arena memory */
	const void *pay_ptr;        /* nfsd_req_payload */
	uint32_t pay_len;
	struct iovec iov[32];
	uint8_t scratch[512];
	uint8_t arena_buf[4096];
};

/*
 * Add fn(arg) to what runs when the request is freed (after on_free's
 * earlier hooks): a compound with several READs holds several buffers.
 * -ENOMEM leaves the request as it was.
 */
int nfsd_req_on_free(struct nfsd_req *req, void (*fn)(void *arg), void *arg);

/*
 * Leave the connection's bulk window (NFSD_PROC_BULK): this call's reply
 * will not send from readied memory (a READ of data not in the page cache,
 * read from disk into a buffer), so the connection may take the next call
 * now instead of after this one's disk I/O.  Any thread; no-op when the
 * call is not counted.
 */
void nfsd_req_unbulk(struct nfsd_req *req);

/*
 * For a flavor's wrap(): the results encoded so far (after the accept_stat)
 * are nfsd_req_res_len() bytes; nfsd_req_res_copy() gathers them into dst.
 * nfsd_req_res_take() hands them over as at most max iovecs (their count,
 * or -ENOBUFS) and drops them from the reply, their bytes left where they
 * are (in the request's scratch and arena, and the memory the results
 * referenced, e.g. a READ's data), so that their protected form is encoded
 * in their place and may reference them.  nfsd_req_res_rewind() just drops
 * them.
 */
size_t nfsd_req_res_len(const struct nfsd_req *req);
void nfsd_req_res_copy(const struct nfsd_req *req, void *dst);
int nfsd_req_res_take(struct nfsd_req *req, struct iovec *iov, unsigned max);
void nfsd_req_res_rewind(struct nfsd_req *req);

/*
 * The reply's bulk data (RFC 8267's DDP-eligible item: a READ's data, the
 * first one of a COMPOUND) is p[0..len), encoded later as an opaque from
 * that memory.  A transport that can place it by itself (RPC-over-RDMA,
 * into the caller's write chunk) does; others send it inline as always.
 */
void nfsd_req_payload(struct nfsd_req *req, const void *p, uint32_t len);
/*
 * An RPC-over-RDMA connection's limits: the credits it grants (calls in
 * flight) and its inbound RDMA Read depth (the peer's RDMA Reads of our
 * memory it takes).  false for other transports.
 */
bool nfsd_conn_rdma_limits(const struct nfsd_conn *conn, uint32_t *credits, uint32_t *ird);
/* The transport a connection uses: "tcp/io_uring", "tcp/epoll", "rdma". */
const char *nfsd_conn_xprt_name(const struct nfsd_conn *conn);

/* Finish a request a handler kept with NFSD_ASYNC (any thread). */
void nfsd_req_done(struct nfsd_req *req, int status);
/* The peer's address, for export matching. */
const struct sockaddr_storage *nfsd_req_peer(const struct nfsd_req *req);
/* This end's address of the request's connection (the one the peer
 * called), port included: 0, or -errno (-ENOTSUP off TCP). */
int nfsd_req_local(const struct nfsd_req *req, struct sockaddr_storage *out);
/* A connection's peer address (administration: who a session came from). */
const struct sockaddr_storage *nfsd_conn_peer(const struct nfsd_conn *conn);

/* ------------------------------------------------------------------ client */

/*
 * Outgoing calls.  They ride the same connections and loops as the server
 * side: a client connection may also receive calls (a backchannel), and a
 * server connection may carry calls from the server to its client
 * (nfsd_conn_call on a conn a request arrived on).
 */
typedef void (*nfsd_call_cb)(void *ctx, int err, struct xdr_dec *res);

/*
 * Where a reply's bulk data (a READ's) goes straight from the socket, not
 * through the receive buffer: locate() is given the reply's first bytes
 * (the record from the xid on: have of rec_len) and returns 1 with *off
 * and *len of the data (an XDR opaque: its length word sits at *off - 4
 * and the data, with its padding, must end the record), 0 when it needs
 * more bytes, -1 when the reply is of another shape (an error, a
 * wrapped body).  The engine then receives those bytes into buf (at most
 * len of them), sets *got to their count, and hands the callback the reply
 * with that opaque's length rewritten to 0.  Otherwise *got stays 0 and
 * the reply comes whole as usual.  buf must stay valid until the callback.
 */
struct nfsd_sink {
	void *buf;
	size_t len;
	int (*locate)(const uint8_t *rec, size_t have, size_t rec_len, size_t *off, size_t *len);
	size_t *got;
};

struct nfsd_call_opts {
	uint32_t prog, vers, proc;
	xdr_enc_fn enc_args; /* NULL for void */
	const void *args;
	unsigned timeout_ms; /* 0 = no timeout */
	/* optional: use this auth (AUTH_SYS if uid set) */
	uint32_t flavor;
	uint32_t uid, gid;
	const uint32_t *gids;
	uint32_t ngids;
	const char *machine;
	/*
	 * optional: a flavor that signs the call (flavor must be set to it).
	 * cred() appends the credential body (at most 64 bytes) and returns
	 * its length; sign() gets the encoded call from the xid to the end
	 * and writes the verifier body (verf_len bytes) at msg + verf_off.
	 */
	size_t (*cred)(void *ctx, uint8_t *body);
	void (*sign)(void *ctx, uint8_t *msg, size_t len, size_t verf_off, size_t verf_len);
	uint32_t verf_len;
	void *sign_ctx;
	const struct nfsd_sink *sink; /* optional: see struct nfsd_sink */
	/* optional: a flavor that builds the call and checks the reply
	 * (RPCSEC_GSS, nfsd/clnt_gss.h); flavor, cred and sign are then unused */
	const struct nfsd_clnt_auth *auth;
};

/*
 * A client-side flavor that protects calls and checks replies (RPCSEC_GSS:
 * nfsd/clnt_gss.h).  The engine encodes the call header and the plain
 * arguments; the flavor builds the message, and keeps per-call state (*st,
 * NULL at first) until end().  Each hook runs on the thread the engine is
 * on: marshal() on the caller's thread for a new call and on the loop
 * thread for a resend; the others on the loop thread.
 *
 *   marshal: write the call into *msg (malloc'd, *cap bytes, which the
 *     flavor may free and replace; *len the message's length): record mark,
 *     hdr (xid to procedure, 24 bytes), credential, verifier and the
 *     arguments (args[0..niov), len bytes) in the flavor's form.  hdr and
 *     args are NULL when the call is made again (the header is the one in
 *     *msg): after a reconnect (RPCSEC_GSS signs a resend afresh, RFC 2203
 *     §5.3.3.1), a refusal retry() took, or NFSD_CLNT_AUTH_WAIT; the
 *     flavor keeps what it needs for that.  may_wait: the thread may block
 *     (it is not a loop thread).  Returns 0, -errno (the call fails), or,
 *     when !may_wait, NFSD_CLNT_AUTH_WAIT: not now; the engine holds the
 *     call and marshals it again (args NULL) once ready() is true.
 *   reply: an accepted reply; check its verifier and, with accept_stat
 *     SUCCESS, put *res at the plain results (which the flavor may unwrap
 *     in place: the record is writable until the callback returns).
 *     0, or -EPROTO to fail the call (a verifier or checksum that does not
 *     verify: never hand such results to the caller).
 *   retry: a MSG_DENIED AUTH_ERROR reply with auth_stat: true to make the
 *     call again, once ready() (e.g. the context was re-created).  NULL:
 *     the refusal goes to the caller.  Only for calls of an nfsd_clnt.
 *   ready: the call held after NFSD_CLNT_AUTH_WAIT or retry() may go;
 *     polled from the loop's timer.
 *   end: the call left the engine; release *st.
 */
#define NFSD_CLNT_AUTH_WAIT 1
struct nfsd_clnt_auth {
	int (*marshal)(const struct nfsd_clnt_auth *a, void **st, const uint8_t *hdr,
		       const struct iovec *args, unsigned niov, size_t len, bool may_wait,
		       uint8_t **msg, size_t *mlen, size_t *cap);
	int (*reply)(void *st, uint32_t verf_flavor, const xdr_opaque *verf, uint32_t accept_stat,
		     struct xdr_dec *res);
	bool (*retry)(void *st, uint32_t auth_stat);
	bool (*ready)(void *st);
	void (*end)(void *st);
	bool wraps_results; /* results are not plain: sinks are not used */
};

/* A reconnecting client bound to one loop of an engine. */
struct nfsd_clnt;
struct nfsd_clnt_opts {
	unsigned timeout_ms;   /* per call default, 0 = none */
	bool reconnect;        /* reconnect and resend pending calls */
	/* With reconnect: a reconnect whose connect fails (the peer refuses
	 * or cannot be reached: a server that died, not a slow one) fails the
	 * calls waiting for it at once with -ECONNREFUSED instead of at their
	 * timeouts; later calls try again after the backoff. */
	bool fail_unreachable;
	unsigned max_inflight; /* calls outstanding before callers wait */
	const struct nfsd_program *backchannel; /* serve calls from the server */
	void *backchannel_priv;
	bool resvport; /* connect from a reserved port (< 1024, as the kernel
			* client does; exports(5) "secure"); needs
			* CAP_NET_BIND_SERVICE, else nfsd_clnt_new fails -EACCES */
	/* nfsd_clnt_new's connect waits at most this long (0: the kernel's
	 * SYN retries); one still in progress then goes on in the loop, and
	 * the calls' timeouts bound the rest */
	unsigned connect_timeout_ms;
	/* optional (src.ss_family not 0): connect from this address (its port
	 * ignored), e.g. the one a peer called us at, for peers that check
	 * where a callback comes from (NLM GRANTED) */
	struct sockaddr_storage src;
};

/* A client-only engine: loops without listeners. */
struct nfsd_server *nfsd_client_engine_new(unsigned nloops, int force_backend, int *err);

struct nfsd_clnt *nfsd_clnt_new(struct nfsd_server *engine, const struct sockaddr *sa,
				socklen_t len, const struct nfsd_clnt_opts *opts, int *err);
void nfsd_clnt_free(struct nfsd_clnt *c);
/*
 * Asynchronous call: cb runs on the client's loop thread with err == 0 and
 * the decoder positioned at the results, or a negative errno (-ETIMEDOUT,
 * -ECONNRESET, -EPROTO with the accept/auth status in 'res' NULL; with
 * opts.auth also -EPROTO for a reply whose verifier or checksum does not
 * verify).  Thread safe.  Calls made from the loop thread (in a callback)
 * are batched.
 */
int nfsd_clnt_call_async(struct nfsd_clnt *c, const struct nfsd_call_opts *o, nfsd_call_cb cb,
			 void *ctx);
/*
 * Synchronous call from a non-loop thread: decodes results with dec_res into
 * res (arena memory), returns 0, a negative errno, or a positive rpc error
 * (NFSD_CALL_ERR_* | stat).  Results that hold opaques, strings or arrays
 * need an arena: the reply is copied into it and they point there.
 */
#define NFSD_CALL_ERR_ACCEPT 0x100 /* | accept_stat */
#define NFSD_CALL_ERR_DENIED 0x200 /* | auth_stat (0x2ff: RPC_MISMATCH) */
int nfsd_clnt_call(struct nfsd_clnt *c, const struct nfsd_call_opts *o, xdr_dec_fn dec_res,
		   void *res, struct xdr_arena *arena);
/* Number of reconnects so far. */
unsigned nfsd_clnt_reconnects(const struct nfsd_clnt *c);

/* Server to client on the connection a request came in on (backchannel). */
int nfsd_conn_call_async(struct nfsd_conn *conn, const struct nfsd_call_opts *o,
			 nfsd_call_cb cb, void *ctx);
void nfsd_conn_get(struct nfsd_conn *conn);
void nfsd_conn_put(struct nfsd_conn *conn);

#endif /* BRAID_NFSD_RPC_H */
