/* SPDX-License-Identifier: MIT */
/*
 * Internals of the NFSv4.1 session module (nfsd/nfs41.h) shared by its
 * files:
 *
 *   nfs41.c           the op table and the COMPOUND dispatcher, SEQUENCE
 *                     and the slots' reply cache, GETFH, SAVEFH and
 *                     RESTOREFH, the server (new, free, its program)
 *   nfs41_clientid.c  client IDs and leases: the client tables, lazy
 *                     expiry, EXCHANGE_ID, DESTROY_CLIENTID,
 *                     RECLAIM_COMPLETE, the embedder's client lookups
 *   nfs41_session.c   sessions and their connections: CREATE_SESSION,
 *                     DESTROY_SESSION, BIND_CONN_TO_SESSION,
 *                     BACKCHANNEL_CTL, the back channel for callbacks
 *   nfs40.c           NFSv4.0 client IDs (RFC 7530 §9.1, §16.33-16.34):
 *                     SETCLIENTID, SETCLIENTID_CONFIRM, RENEW, the
 *                     callback addresses, nfs41_compound_v40_client
 *
 * Locks, in this order:
 *   srv->lock   the client and session tables, every struct nfs41_client,
 *               and each session's clp, dead, conns[] and cb_* fields;
 *   ss->lock    the session's slot table.
 * Session references are atomic: the session table holds one, a COMPOUND
 * that passed SEQUENCE one until it ends, nfs41_session_get() callers one.
 * A session is freed at its last put; freeing touches nothing shared.
 * 'inflight' counts the COMPOUNDs alone (changed under srv->lock): a session
 * with one is busy for DESTROY_SESSION and keeps its client's lease.
 * Client records are touched only under srv->lock and freed after they have
 * been unlinked and the client_expired hook has run.
 */
#ifndef BRAID_NFSD_NFS41_IMPL_H
#define BRAID_NFSD_NFS41_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/random.h>
#include <sys/types.h>

#include "nfsd/auth_gss.h"
#include "nfsd/nfs41.h"
#include "nfsd/clock.h"

#define CLIENT_BUCKETS	    256
#define SESSION_BUCKETS	    256
#define SESSIONS_PER_CLIENT 16
#define SESSION_MAX_CONNS   8	/* recorded bindings; the oldest makes room */
#define BACK_MAX_SLOTS	    16	/* back channel slots we accept at most */
#define CHAN_MIN_SIZE	    256 /* smaller ca_maxrequest/responsesize: TOOSMALL */
/* A back channel that could not carry our largest callback, CB_SEQUENCE
 * and one operation (a CB_LAYOUTRECALL with a 128-byte handle under an
 * AUTH_SYS credential is under 700 bytes): TOOSMALL (RFC 8881 §18.36.3) */
#define BACK_MIN_REQ 1024
#define BACK_MIN_OPS 2
#define SWEEP_INTERVAL_NS   100000000ull
#define MAX_SLOTS_LIMIT	    1024
#define MAX_OPS_LIMIT	    1024
#define OP_MAX		    OP_REMOVEXATTR
#define OP_MAX_V40	    OP_RELEASE_LOCKOWNER

/* ------------------------------------------------------------ records */

/* One fore channel slot (RFC 8881 §2.10.6.1); guarded by its session's lock. */
struct slot {
	uint32_t seqid;
	bool used;	   /* a request ran here: seqid is meaningful */
	bool inuse;	   /* that request is still running */
	bool cached;	   /* reply[] is its whole COMPOUND4res */
	uint64_t ops_hash; /* of its operations after SEQUENCE (false retries) */
	uint8_t *reply;	   /* malloc'd, owned by the slot */
	uint32_t reply_len, reply_cap;
};

/* A connection bound to a session (CREATE_SESSION, BIND_CONN_TO_SESSION). */
struct conn_rec {
	struct nfsd_conn *conn; /* a reference */
	uint32_t dir;		/* CDFS4_FORE, CDFS4_BACK or CDFS4_BOTH */
	uint64_t seq;		/* binding order: the newest back one is used */
};

struct nfs41_session {
	sessionid4 id;
	struct nfs41_server *srv;
	atomic_uint refs;
	atomic_uint inflight; /* COMPOUNDs between SEQUENCE and their end */
	_Atomic uint64_t ops, op_errors, op_ns; /* operations served in it (braidctl top) */
	/* constant after creation */
	uint64_t clientid;
	uint32_t flags;
	channel_attrs4 fore, back; /* negotiated; ca_rdma_ird empty */
	/* srv->lock */
	struct nfs41_client *clp; /* NULL once dead */
	bool dead;
	struct nfs41_session *hnext, *cnext;
	uint32_t cb_program, cb_flavor, cb_uid, cb_gid;
	struct nfsd_gss_cb *cb_gss; /* cb_flavor RPCSEC_GSS: a reference */
	uint32_t minorversion; /* its CREATE_SESSION's, for CB_COMPOUND */
	struct conn_rec conns[SESSION_MAX_CONNS];
	/* lock */
	pthread_mutex_t lock;
	unsigned nslots;
	struct slot slots[];
};

/* An NFSv4.0 client's callback (RFC 7530 §16.33.1): what SETCLIENTID named. */
struct cb40 {
	uint32_t prog, ident;
	struct sockaddr_storage addr; /* parsed r_addr; ss_family 0: unusable */
	bool dialable;		      /* addr is the SETCLIENTID's own source address */
};

/* A client ID (RFC 8881 §2.4, RFC 7530 §9.1.1); everything under srv->lock. */
struct nfs41_client {
	clientid4 id;
	verifier4 verf;
	uint8_t *owner; /* co_ownerid, malloc'd */
	uint32_t owner_len;
	uint32_t princ_flavor, princ_uid;
	char *princ_name; /* RPCSEC_GSS: the GSS name, malloc'd; else NULL */
	/* SP4_MACH_CRED (RFC 8881 §2.10.8.3, §18.35): the ops in 'enforce'
	 * must come from the principal that created the client ID */
	bool mach_cred;
	uint32_t enforce[2]; /* bitmap4 of nfs_opnum4, words 0 and 1 */
	uint32_t allow[2];   /* spo_must_allow, the same way */
	bool confirmed, reclaim_complete;
	uint64_t expire_ns;
	/* CREATE_SESSION's one slot (RFC 8881 §18.36.4) */
	uint32_t cs_seqid;
	bool cs_cached;
	CREATE_SESSION4resok cs_res;
	struct nfs41_session *sessions;
	unsigned nsessions;
	struct nfs41_client *hnext, *onext; /* by id, by owner */
	struct nfs41_client *dnext;	    /* unlinked, waiting for reaping */
	/* NFSv4.0 (nfs40.c): made by SETCLIENTID, never in a session */
	bool v40;
	verifier4 confirm; /* setclientid_confirm of the pending record */
	struct cb40 cb;	   /* confirmed callback (unconfirmed: the pending one) */
	uint32_t cb_gen;   /* bumped when a confirmed callback changes */
	bool has_peer;	   /* peer: where its SETCLIENTID came from */
	struct sockaddr_storage peer;
	/* a confirmed record's callback update (§16.33.5 case 1) */
	bool upd_pending;
	verifier4 upd_confirm;
	struct cb40 upd_cb;
};

struct nfs41_server {
	struct nfs41_server_opts o; /* so_major / scope point at our copies */
	struct nfs41_op table[OP_MAX + 1];
	struct nfs41_op table40[OP_MAX_V40 + 1]; /* minor version 0 (opts.v40) */
	struct nfsd_proc procs[2];
	struct nfsd_version vers;
	struct nfsd_program prog;
	nfs_impl_id4 impl_id;

	pthread_mutex_t lock;
	uint32_t boot;
	uint32_t next_id, next_sess;
	uint64_t conn_seq;
	_Atomic uint64_t next_sweep_ns; /* read without the lock to skip sweeps */
	struct nfs41_client *by_id[CLIENT_BUCKETS], *by_owner[CLIENT_BUCKETS];
	struct nfs41_session *sessions[SESSION_BUCKETS];
};

/* ------------------------------------------------------------ helpers */

static inline uint64_t nfs41_fnv64(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static inline uint32_t nfs41_rand32(void)
{
	uint32_t r;
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		r = (uint32_t)nfsd_now_ns() * 2654435761u;
	return r;
}

static inline uint64_t nfs41_lease_ns(const struct nfs41_server *s)
{
	return (uint64_t)s->o.lease_s * 1000000000ull;
}

/* ------------------------------------------------------------ nfs41_session.c */

/* Under srv->lock: the session of id, or NULL; unhash a session, detach it
 * from its client and drop the table's reference; the newest back channel
 * binding of a session, or NULL. */
struct nfs41_session *nfs41_session_find_locked(struct nfs41_server *s, const uint8_t *id);
void nfs41_session_kill_locked(struct nfs41_server *s, struct nfs41_session *ss);
const struct conn_rec *nfs41_session_back_locked(const struct nfs41_session *ss);

/* RFC 8881 §18.36, §18.37, §18.34, §18.33 */
nfsstat4 nfs41_op_create_session(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r);
nfsstat4 nfs41_op_destroy_session(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r);
nfsstat4 nfs41_op_bind_conn(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r);
nfsstat4 nfs41_op_backchannel_ctl(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r);

/* ------------------------------------------------------------ nfs41_clientid.c */

/*
 * Under srv->lock.  A client found expired on the way (RFC 8881 §8.3), or
 * unlinked, goes on *dead with its sessions killed; nfs41_client_reap() tells
 * the embedder and frees the list once the lock is dropped.
 */
void nfs41_client_unlink_locked(struct nfs41_server *s, struct nfs41_client *clp,
				struct nfs41_client **dead);
void nfs41_client_reap(struct nfs41_server *s, struct nfs41_client *dead);
bool nfs41_client_expired_locked(const struct nfs41_client *clp, uint64_t now);
struct nfs41_client *nfs41_client_find_locked(struct nfs41_server *s, uint64_t id, uint64_t now,
					      struct nfs41_client **dead);
/* By owner, among the NFSv4.1 records, or the NFSv4.0 ones with v40. */
struct nfs41_client *nfs41_owner_find_locked(struct nfs41_server *s, const xdr_opaque *owner,
					     bool confirmed, uint64_t now,
					     struct nfs41_client **dead);
struct nfs41_client *nfs40_owner_find_locked(struct nfs41_server *s, const xdr_opaque *owner,
					     bool confirmed, uint64_t now,
					     struct nfs41_client **dead);
/* A new record of owner by req's principal (the tables hold it). */
struct nfs41_client *nfs41_client_new_locked(struct nfs41_server *s, const xdr_opaque *owner,
					     const uint8_t *verf, const struct nfsd_req *req,
					     uint64_t now);
/* Every expired client, at most once per SWEEP_INTERVAL_NS. */
void nfs41_client_sweep_locked(struct nfs41_server *s, uint64_t now, struct nfs41_client **dead);
/* req comes from the principal that made clp (RPC flavor, AUTH_SYS uid). */
bool nfs41_client_princ_eq(const struct nfs41_client *clp, const struct nfsd_req *req);
/* Free an unlinked client record and what it owns. */
void nfs41_client_free(struct nfs41_client *clp);
/* SP4_MACH_CRED: NFS4ERR_WRONG_CRED when op is one clp's creator must send
 * and req is another principal's (RFC 8881 §2.10.8.3); else NFS4_OK. */
nfsstat4 nfs41_client_mach_check(const struct nfs41_client *clp, const struct nfsd_req *req,
				 nfs_opnum4 op);

/* RFC 7530 §16.33, §16.34, §16.29 (nfs40.c) */
nfsstat4 nfs40_op_setclientid(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r);
nfsstat4 nfs40_op_setclientid_confirm(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r);
nfsstat4 nfs40_op_renew(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r);

/* RFC 8881 §18.35, §18.50, §18.51 */
nfsstat4 nfs41_op_exchange_id(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r);
nfsstat4 nfs41_op_destroy_clientid(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r);
nfsstat4 nfs41_op_reclaim_complete(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r);

#endif /* BRAID_NFSD_NFS41_IMPL_H */
