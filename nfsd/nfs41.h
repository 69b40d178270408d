/* SPDX-License-Identifier: MIT */
/*
 * NFSv4.1/4.2 sessions (RFC 8881 §2.10 and chapter 18): the COMPOUND
 * procedure of program 100003 version 4, client IDs, leases, sessions and
 * their slot tables, shared by braid-ds and braid-mds.  The module runs
 * EXCHANGE_ID, CREATE_SESSION, DESTROY_SESSION, DESTROY_CLIENTID,
 * BIND_CONN_TO_SESSION, BACKCHANNEL_CTL and SEQUENCE itself, and GETFH,
 * SAVEFH, RESTOREFH and RECLAIM_COMPLETE unless the embedder's table has
 * them; every other operation comes from the embedder's table (struct
 * nfs41_op, indexed by nfs_opnum4), and one without a handler answers
 * NFS4ERR_NOTSUPP.
 *
 * COMPOUND (RFC 8881 §16.2.3):
 *  - minor versions 1 and 2, and 0 with opts.v40 (braid-mds; see NFSv4.0
 *    below); others get NFS4ERR_MINOR_VERS_MISMATCH with an empty result
 *    array.  Operations outside the minor version (0-2, 4.2-only ones in a
 *    4.1 COMPOUND, 4.1 ones such as SEQUENCE in a 4.0 COMPOUND, unknown
 *    numbers) get an OP_ILLEGAL result with NFS4ERR_OP_ILLEGAL and end the
 *    COMPOUND.  The 4.0-only operations (SETCLIENTID, SETCLIENTID_CONFIRM,
 *    RENEW, OPEN_CONFIRM, RELEASE_LOCKOWNER) answer NFS4ERR_NOTSUPP in 4.1
 *    and 4.2 (RFC 8881 §18: MUST NOT be implemented).
 *  - The operations are decoded before any runs, so a malformed argument
 *    anywhere answers GARBAGE_ARGS for the whole call (the RFC also allows
 *    an NFS4ERR_BADXDR result; we never run part of an undecodable
 *    COMPOUND).  When the operation count exceeds the server's max_ops only
 *    the first is decoded: it fails anyway (TOO_MANY_OPS, NOT_ONLY_OP, ...).
 *  - Session rules: SEQUENCE first (elsewhere NFS4ERR_SEQUENCE_POS); only
 *    EXCHANGE_ID, CREATE_SESSION, DESTROY_SESSION, DESTROY_CLIENTID and
 *    BIND_CONN_TO_SESSION may come without it, and then alone
 *    (NFS4ERR_NOT_ONLY_OP); anything else first is NFS4ERR_OP_NOT_IN_SESSION.
 *    BIND_CONN_TO_SESSION is always alone (§18.34.3).
 *  - Limits of the session's fore channel: NFS4ERR_TOO_MANY_OPS and
 *    NFS4ERR_REQ_TOO_BIG from SEQUENCE (the request is measured from the
 *    RPC header, as ca_maxrequestsize counts it); NFS4ERR_REP_TOO_BIG and,
 *    with sa_cachethis, NFS4ERR_REP_TOO_BIG_TO_CACHE on the operation that
 *    would pass ca_maxresponsesize(_cached): before it runs when its table
 *    row has res_bound, else after encoding, its result being replaced by
 *    the error (the op has run then: give ops with side effects and large
 *    results a res_bound).
 *  - Processing stops at the first failing operation; the result array
 *    holds exactly the operations executed.
 *
 * Slots (RFC 8881 §2.10.6.1): a new request (seqid == slot's + 1) runs; a
 * retry (seqid == slot's) gets the cached reply, byte for byte, when the
 * first one had sa_cachethis, else NFS4ERR_RETRY_UNCACHED_REP, and
 * NFS4ERR_DELAY while the first is still running; a retry whose operations
 * differ from the first's gets NFS4ERR_SEQ_FALSE_RETRY; anything else is
 * NFS4ERR_SEQ_MISORDERED, a slot past the table NFS4ERR_BADSLOT.  Cached
 * replies are the whole encoded COMPOUND4res, at most
 * ca_maxresponsesize_cached bytes.
 *
 * Client IDs (RFC 8881 §18.35.5, §18.36.4): the case table of EXCHANGE_ID,
 * principals compared as RPC flavor and uid; a client ID is the boot time
 * (high 32 bits) and a counter that starts at a random value, so IDs of
 * earlier server instances are NFS4ERR_STALE_CLIENTID.  Leases: SEQUENCE,
 * CREATE_SESSION, BIND_CONN_TO_SESSION and a confirmed re-EXCHANGE_ID renew
 * them; a client whose lease ran out and that has no request in progress
 * is removed lazily, by the next COMPOUND that arrives after it expired (so
 * an idle server keeps dead records until someone talks to it).  Its
 * sessions go with it: later use gets NFS4ERR_BADSESSION, its client ID
 * NFS4ERR_STALE_CLIENTID.  Only SP4_NONE state protection (SP4_SSV:
 * NFS4ERR_ENCR_ALG_UNSUPP; SP4_MACH_CRED, which needs RPCSEC_GSS, which the
 * engine lacks: NFS4ERR_INVAL), so
 * a connection is bound to a session's fore channel by using it
 * (§2.10.3.1) and only explicit bindings are recorded.
 *
 * Back channel: each session keeps the connections bound to it (CREATE_SESSION
 * with CREATE_SESSION4_FLAG_CONN_BACK_CHAN, BIND_CONN_TO_SESSION), each with
 * a reference (nfsd_conn_get), the callback program and security
 * (csa_cb_program / BACKCHANNEL_CTL) and the back channel attributes.
 * nfs41_session_backchannel() hands a callback sender (braid-mds: CB_SEQUENCE
 * + CB_LAYOUTRECALL over nfsd_conn_call_async()) the connection to use; the
 * sender owns the back channel's slot table and reports dead connections
 * with nfs41_session_backchannel_lost().  With opts.callbacks, SEQUENCE
 * reports SEQ4_STATUS_CB_PATH_DOWN(_SESSION) while no back channel
 * connection is known.
 *
 * Callback security (RFC 8881 §18.36.4, §18.33.3): of csa_sec_parms /
 * bca_sec_parms, the strongest usable: with opts.gss, RPCSEC_GSS whose
 * gcbp_handle_from_server names a live context of the client ID's
 * principal (§2.10.8.3; a client ID made without GSS: the caller's),
 * else the first AUTH_NONE or AUTH_SYS entry; none usable is
 * NFS4ERR_ENCR_ALG_UNSUPP (an empty offer is AUTH_NONE).  The session
 * holds the context (nfsd_gss_cb_new); nfs41_session_backchannel() hands
 * it out (bc->gss) and says -ENOTCONN once it was destroyed or expired,
 * and SEQUENCE then reports SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRED
 * (_EXPIRING within a lease of its end) until BACKCHANNEL_CTL replaces it.
 *
 * NFSv4.0 (RFC 7530; nfsd/nfs40.c), with opts.v40: minor version 0
 * COMPOUNDs have no session rules and no reply limits.  The module runs
 * SETCLIENTID (§16.33.5's case table: a callback update under the same
 * verifier keeps the client ID; a new verifier or another principal's
 * record without state makes a new ID that ends the old one when
 * confirmed; another principal's record holding state is CLID_INUSE),
 * SETCLIENTID_CONFIRM (a wrong verifier: STALE_CLIENTID) and RENEW
 * (CB_PATH_DOWN when opts.cb_path_down says so).  4.0 client IDs are
 * records of the same tables (unique with 4.1's, same leases, same
 * client_expired hook) that no CREATE_SESSION accepts.  The embedder's
 * operations name the client ID (nfs41_compound_v40_client: it becomes
 * c->clientid and its lease is renewed, RFC 7530 §9.5); opts.v40_begin and
 * v40_end run around each operation (seqids and their replays,
 * OPEN_CONFIRM: braid-mds's mds/op_v40.c) and OPEN_CONFIRM and
 * RELEASE_LOCKOWNER come from the embedder's table.  The current stateid
 * does not exist in 4.0.  The callback address of SETCLIENTID
 * (nfs41_client_cb40) is dialable only when it is the request's own
 * source IP: the server must never connect elsewhere on a client's word.
 *
 * Threads: COMPOUNDs run concurrently on the engine's worker threads;
 * handlers may block.  Locks are internal (see nfs41_impl.h).  Hooks are never
 * called with them held.
 */
#ifndef BRAID_NFSD_NFS41_H
#define BRAID_NFSD_NFS41_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nfsd/rpc.h"
#include "nfs4_prot.h"

struct nfs41_server;
struct nfs41_session;
struct nfsd_gss;
struct nfsd_gss_cb;
struct nfs41_compound;

/*
 * An operation handler.  It reads arg->u.op<name> and, for NFS4_OK (or an
 * error whose result carries data, e.g. LOCK's NFS4ERR_DENIED), fills
 * res->u.op<name> except the status, which the module sets to the value
 * returned.  Memory the result points to must live until the reply is sent:
 * allocate it from c->arena.
 */
typedef nfsstat4 (*nfs41_op_fn)(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res);

enum nfs41_op_flags {
	NFS41_OP_NEEDS_FH = 1 << 0, /* NFS4ERR_NOFILEHANDLE without a current fh */
	/* never blocks (no disk write, no call to another server, no name
	 * service): a 4.1+ COMPOUND of only such ops runs on the loop thread */
	NFS41_OP_INLINE = 1 << 1,
};

struct nfs41_op {
	nfs41_op_fn fn;
	unsigned flags;
	/* optional: an upper bound of the encoded nfs_resop4, checked against
	 * the session's reply limits before the op runs (e.g. READ: count + 32) */
	uint32_t (*res_bound)(const nfs_argop4 *arg);
};

struct nfs41_server_opts {
	const void *so_major; /* server_owner4 (RFC 8881 §2.10.5): the same on */
	size_t so_major_len;  /* every connection and address of this server */
	uint64_t so_minor;
	const void *scope; /* eir_server_scope */
	size_t scope_len;
	/* what the server is: EXCHGID4_FLAG_USE_NON_PNFS, or _USE_PNFS_MDS
	 * and/or _USE_PNFS_DS (RFC 8881 §13.1) */
	uint32_t exchgid_flags;
	unsigned lease_s;   /* lease time in seconds; 0: 90 */
	unsigned max_slots; /* fore channel slots granted at most; 0: 64 */
	/* fore channel maxima the server allows (0: defaults 1 MiB + 64 KiB,
	 * same, 16 KiB, 64) */
	uint32_t max_req, max_resp, max_resp_cached, max_ops;
	/* the server calls clients back: SEQUENCE reports CB_PATH_DOWN while a
	 * session has no back channel connection */
	bool callbacks;
	const struct nfs41_op *ops; /* indexed by nfs_opnum4 */
	unsigned nops;
	void *priv; /* handed to op handlers as c->priv and to the hooks */
	/* optional: a client ID ended (lease expiry, DESTROY_CLIENTID, replaced
	 * by a new EXCHANGE_ID or by a rebooted client's confirmation).  Called
	 * once for every client ID EXCHANGE_ID handed out, except those alive
	 * at nfs41_server_free() */
	void (*client_expired)(void *priv, uint64_t clientid);
	/* optional: the client holds state (opens, locks, layouts):
	 * DESTROY_CLIENTID answers NFS4ERR_CLIENTID_BUSY (RFC 8881 §18.50.3) */
	bool (*client_has_state)(void *priv, uint64_t clientid);
	/* optional: SEQ4_STATUS_* bits of the embedder's state for this client,
	 * ORed into every SEQUENCE reply (RFC 8881 §18.46.3: e.g.
	 * RECALLABLE_STATE_REVOKED while a revoked delegation is not freed);
	 * called on every SEQUENCE, so it must be cheap */
	uint32_t (*status_flags)(void *priv, uint64_t clientid);
	/* optional: false keeps this call's COMPOUND off the loop thread even
	 * when every op has NFS41_OP_INLINE (e.g. its credential check would
	 * need the name service) */
	bool (*inline_ok)(void *priv, const struct nfsd_req *req);
	/* optional: count and time every operation (nfsd/metrics.h) */
	struct nfsd_metrics *metrics;

	/* NFSv4.0 (RFC 7530) in minor version 0 COMPOUNDs; see the top of
	 * this file.  Without it minor version 0 is MINOR_VERS_MISMATCH. */
	bool v40;
	/* optional, minor version 0 only: around every operation.  begin
	 * runs first and may answer for it (*done: its status is the op's
	 * and r is its result, e.g. a seqid retransmission's cached reply);
	 * end sees the result, status set, before it is encoded */
	nfsstat4 (*v40_begin)(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r, bool *done);
	void (*v40_end)(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r, nfsstat4 st);
	/* optional: a 4.0 client ID's callback was confirmed (new or changed;
	 * nfs41_client_cb40 tells it) */
	void (*cb40_changed)(void *priv, uint64_t clientid);
	/* optional: RENEW answers NFS4ERR_CB_PATH_DOWN (RFC 7530 §16.29.4) */
	bool (*cb_path_down)(void *priv, uint64_t clientid);
	/* optional: the server's RPCSEC_GSS contexts (nfsd/auth_gss.h), for
	 * callbacks under the client's own (RFC 8881 §2.10.8.3); see the top
	 * of this file */
	struct nfsd_gss *gss;
};

/* Returns NULL and sets *err (-EINVAL for inconsistent opts, -ENOMEM). */
struct nfs41_server *nfs41_server_new(const struct nfs41_server_opts *o, int *err);
/* After the engine serving it has been freed (no COMPOUND in progress). */
void nfs41_server_free(struct nfs41_server *s);
/*
 * The program to add with nfsd_server_add_program(): 100003 version 4, NULL
 * (inline) and COMPOUND (worker threads).  Valid as long as the server.
 */
const struct nfsd_program *nfs41_server_program(struct nfs41_server *s);
/*
 * The COMPOUND procedure body: decodes COMPOUND4args from req->dec and
 * appends COMPOUND4res to req->enc.  Returns NFSD_SUCCESS, NFSD_GARBAGE_ARGS
 * or NFSD_SYSTEM_ERR.  The program's COMPOUND calls it; tests and fuzzers may
 * call it with a request they built (req->conn NULL: connections are not
 * recorded).
 */
int nfs41_server_compound(struct nfs41_server *s, struct nfsd_req *req);

/* One COMPOUND being processed: what handlers see and may change. */
struct nfs41_compound {
	struct nfsd_req *req;
	struct nfs41_server *srv;
	void *priv; /* opts.priv */
	uint32_t minorversion;
	unsigned opidx, nops;	 /* the running op's index; ops in the COMPOUND */
	struct xdr_arena *arena; /* result memory, freed after the reply is sent */

	/* current and saved filehandle: set with nfs41_compound_set_fh() */
	uint8_t fh[NFS4_FHSIZE];
	uint32_t fhlen;
	bool have_fh;
	uint8_t saved_fh[NFS4_FHSIZE];
	uint32_t saved_fhlen;
	bool have_saved_fh;
	/* current stateid, RFC 8881 §16.2.3.1.2 (saved with the saved fh) */
	stateid4 cur_stateid, saved_stateid;
	bool have_cur_stateid, have_saved_stateid;

	/* set by SEQUENCE; NULL/0 in a sessionless COMPOUND.  The session is
	 * referenced until the COMPOUND ends. */
	struct nfs41_session *session;
	uint64_t clientid;
	uint32_t slotid;
	/* minor version 0: the embedder's, from v40_begin to v40_end of one op */
	void *v40_op;
};

/* Set the current filehandle (PUTFH, LOOKUP, ...); clears the current
 * stateid (RFC 8881 §16.2.3.1.2).  len <= NFS4_FHSIZE. */
void nfs41_compound_set_fh(struct nfs41_compound *c, const void *fh, uint32_t len);
/* The operation after the running one (nfs_opnum4; OP_ILLEGAL for one that
 * could not be decoded), or -1 when the running one is the last: a put
 * filehandle operation decides by it whether to report NFS4ERR_WRONGSEC
 * (RFC 8881 §2.6.3.1.1). */
int32_t nfs41_compound_next_op(const struct nfs41_compound *c);
/* Whether an operation before the running one is op (nfs_opnum4). */
bool nfs41_compound_ran_op(const struct nfs41_compound *c, int32_t op);
/* Record the stateid an op returned as the current stateid. */
void nfs41_compound_set_stateid(struct nfs41_compound *c, const stateid4 *sid);
/* Replace the special "current stateid" (seqid 1, other all zero) in *sid
 * with the current one; NFS4ERR_BAD_STATEID when there is none. */
nfsstat4 nfs41_compound_stateid(struct nfs41_compound *c, stateid4 *sid);

/* Sessions outside a COMPOUND (callbacks): a reference keeps the memory,
 * not the session, which may be destroyed or expire meanwhile (then
 * nfs41_session_backchannel() says -ENOTCONN). */
void nfs41_session_get(struct nfs41_session *ss);
void nfs41_session_put(struct nfs41_session *ss);
uint64_t nfs41_session_clientid(const struct nfs41_session *ss);

/* What a callback sender needs (RFC 8881 §2.10.3.1, §18.33, §20.9). */
struct nfs41_backchannel {
	struct nfsd_conn *conn; /* a reference: nfsd_conn_put() it */
	uint32_t cb_program;
	uint32_t flavor;      /* NFSD_AUTH_NONE, NFSD_AUTH_SYS or NFSD_RPCSEC_GSS */
	uint32_t uid, gid;    /* AUTH_SYS credential the client asked for */
	/* RPCSEC_GSS: a reference; calls go with nfsd_gss_cb_auth(gss) */
	struct nfsd_gss_cb *gss;
	channel_attrs4 attrs; /* back channel attributes (ca_rdma_ird empty) */
	sessionid4 sessionid;
	uint32_t minorversion; /* the session's (its CREATE_SESSION's): what
				* CB_COMPOUND must carry, or Linux finds no
				* client for the callback (NFS4ERR_BADSESSION) */
};
/* How a callback finds its way from a client ID (a layout's or delegation's
 * owner) to a connection: the client's session with the most recently bound
 * back channel connection, referenced; NULL when there is none. */
struct nfs41_session *nfs41_client_session_get(struct nfs41_server *s, uint64_t clientid);
/* The client owner (co_ownerid, RFC 8881 §2.4) of a live client ID, for an
 * embedder's stable-storage records (§8.4.2.1): copies at most 'size' bytes
 * to buf and sets *len to the owner's length.  0, or -ENOENT. */
int nfs41_client_owner(struct nfs41_server *s, uint64_t clientid, void *buf, size_t size,
		       size_t *len);
/* The most recently bound back channel connection: 0, or -ENOTCONN (none,
 * or its RPCSEC_GSS context ended).  Release bc with
 * nfs41_backchannel_release(). */
int nfs41_session_backchannel(struct nfs41_session *ss, struct nfs41_backchannel *bc);
void nfs41_backchannel_release(struct nfs41_backchannel *bc);
/* A callback on conn failed (-ECONNRESET): forget the connection. */
void nfs41_session_backchannel_lost(struct nfs41_session *ss, struct nfsd_conn *conn);

/* Minor version 0: the client ID an operation names (an OPEN's owner, a
 * stateid's client) becomes c->clientid, and its lease is renewed (RFC 7530
 * §9.5).  NFS4ERR_STALE_CLIENTID when it is not a confirmed 4.0 client ID
 * of this server instance (or its lease ran out). */
nfsstat4 nfs41_compound_v40_client(struct nfs41_compound *c, uint64_t clientid);
/* A confirmed 4.0 client ID's callback (SETCLIENTID, RFC 7530 §16.33):
 * 0, or -ENOENT (not a confirmed 4.0 client ID).  dialable: addr is the
 * IP address the SETCLIENTID came from, the only one the server may dial;
 * gen changes with every confirmed change. */
struct nfs41_cb40 {
	uint32_t prog, ident, gen;
	struct sockaddr_storage addr;
	bool dialable;
};
int nfs41_client_cb40(struct nfs41_server *s, uint64_t clientid, struct nfs41_cb40 *out);

/* An operation's name as RFC 8881 / 7862 spell it ("READ", "LAYOUTGET");
 * "ILLEGAL" for a number that names none. */
const char *nfs41_op_name(uint32_t op);

/* What an administrator sees of a client ID (braidctl clients). */
#define NFS41_INFO_OWNER_MAX	 128
#define NFS41_INFO_PRINCIPAL_MAX 256
struct nfs41_client_info {
	uint64_t clientid;
	uint8_t owner[NFS41_INFO_OWNER_MAX]; /* the first bytes of co_ownerid */
	uint32_t owner_len;		     /* its whole length */
	bool confirmed;
	uint32_t flavor, uid;  /* its principal (RFC 8881 §18.35.5) */
	char principal[NFS41_INFO_PRINCIPAL_MAX]; /* RPCSEC_GSS: its name, cut; else "" */
	bool mach_cred;				  /* SP4_MACH_CRED state protection */
	int64_t lease_left_ms; /* negative: expired, not yet reaped */
	unsigned sessions;
	bool has_peer; /* peer: of the connection it last bound to a session */
	struct sockaddr_storage peer;
	char transport[8]; /* of that connection: "tcp" or "rdma" */
	/* operations served in its sessions alive (SEQUENCE's COMPOUNDs) */
	uint64_t ops, op_errors, op_ns;
};
/* Every client ID alive, in no order: up to max of them into out; returns
 * how many there are. */
unsigned nfs41_client_list(struct nfs41_server *s, struct nfs41_client_info *out, unsigned max);

/* Expire the clients whose lease ran out now, as a COMPOUND does (at most
 * once a sweep interval), for a caller waiting on their state without
 * NFSv4 traffic to trigger it (NLM's blocked locks, mds/nlm.c). */
void nfs41_server_sweep(struct nfs41_server *s);

#endif /* BRAID_NFSD_NFS41_H */
