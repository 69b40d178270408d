/* SPDX-License-Identifier: MIT */
/*
 * NFSv4.1 client sessions over nfsd_clnt (RFC 8881 §2.10), for tests, the
 * benchmarks and braidctl: EXCHANGE_ID + CREATE_SESSION, COMPOUNDs with
 * SEQUENCE prepended and the slot table managed, more connections bound with
 * BIND_CONN_TO_SESSION (trunking), and raw COMPOUNDs without SEQUENCE.
 *
 * Return values: 0 when a COMPOUND reply was decoded (its status is in
 * res->status), a negative errno, or NFSD_CALL_ERR_* for RPC-level errors, as
 * nfsd_clnt_call().  nfs41c_session_create(), _destroy() and _bind() also
 * return the server's nfsstat4 (positive, never in NFSD_CALL_ERR_*'s range)
 * when it refused.
 *
 * Slots: the fore channel's ca_maxrequests slots form a pool; a COMPOUND
 * takes the lowest free slot (waiting while none is) and SEQUENCE carries
 * that slot's next seqid.  When SEQUENCE did not succeed the seqid was not
 * used and is handed out again; when the call failed in transport (timeout,
 * connection lost) the server may or may not have seen it, so the slot is
 * retired for the life of the session.  Thread safe; not from a loop thread
 * (a callback), since taking a slot may wait.
 */
#ifndef BRAID_NFSD_NFS41_CLNT_H
#define BRAID_NFSD_NFS41_CLNT_H

#include <stdint.h>

#include "nfsd/rpc.h"
#include "nfs4_prot.h"

struct nfs41c_session;

struct nfs41c_session_opts {
	const char *owner;	/* co_ownerid */
	uint64_t verifier;	/* co_verifier; 0: one value per process */
	uint32_t exchgid_flags; /* eia_flags, e.g. EXCHGID4_FLAG_USE_PNFS_DS */
	uint32_t create_flags;	/* csa_flags, e.g. CREATE_SESSION4_FLAG_CONN_BACK_CHAN */
	uint32_t cb_program;	/* csa_cb_program */
	unsigned slots;		/* fore channel ca_maxrequests asked for; 0: 64 */
	/* fore channel sizes asked for; 0: 1 MiB + 64 KiB, same, 16 KiB, 64 ops */
	uint32_t max_req, max_resp, max_resp_cached, max_ops;
	/* a client flavor (RPCSEC_GSS, nfsd/clnt_gss.h) for EXCHANGE_ID,
	 * CREATE_SESSION, DESTROY_* and, as nfs41c_session_set_auth, the
	 * session's COMPOUNDs; NULL: AUTH_NONE */
	const struct nfsd_clnt_auth *auth;
	/* SP4_MACH_CRED (RFC 8881 §18.35) with what the Linux client asks
	 * (nfs41c_session_info tells what the server granted) */
	bool mach_cred;
	/* the minor version of EXCHANGE_ID and CREATE_SESSION (the session's,
	 * which callbacks carry); 0: 1 */
	uint32_t minorversion;
	/* csa_sec_parms (RFC 8881 §18.36); none: AUTH_NONE alone */
	const callback_sec_parms4 *cb_sec;
	unsigned ncb_sec;
};

int nfs41c_session_create(struct nfsd_clnt *clnt, const char *owner, uint32_t exchgid_flags,
			  struct nfs41c_session **sess);
int nfs41c_session_create_opts(struct nfsd_clnt *clnt, const struct nfs41c_session_opts *o,
			       struct nfs41c_session **sess);
/* DESTROY_SESSION, then DESTROY_CLIENTID; frees sess whatever happens.  No
 * COMPOUND of the session may be in progress. */
int nfs41c_session_destroy(struct nfs41c_session *sess);

/* What the server granted. */
struct nfs41c_session_info {
	clientid4 clientid;
	sessionid4 sessionid;
	uint32_t exchgid_flags; /* eir_flags */
	uint32_t create_flags;	/* csr_flags */
	channel_attrs4 fore, back;
	/* EXCHANGE_ID's state protection: spr_how, and for SP4_MACH_CRED the
	 * operations enforced and allowed (bit n of word n / 32) */
	uint32_t sp_how;
	uint32_t sp_enforce[2], sp_allow[2];
};
void nfs41c_session_info(const struct nfs41c_session *sess, struct nfs41c_session_info *info);
/* Send the session's later COMPOUNDs as AUTH_SYS uid/gid (default
 * AUTH_NONE); set it before any is in progress. */
void nfs41c_session_set_cred(struct nfs41c_session *sess, uint32_t uid, uint32_t gid);
/* ... or under a client flavor (nfsd_call_opts.auth: RPCSEC_GSS,
 * nfsd/clnt_gss.h), which wins over AUTH_SYS; NULL: back to the above. */
void nfs41c_session_set_auth(struct nfs41c_session *sess, const struct nfsd_clnt_auth *auth);
/* Slots retired after transport failures. */
unsigned nfs41c_session_dead_slots(struct nfs41c_session *sess);

enum nfs41c_flags {
	NFS41C_CACHETHIS = 1 << 0, /* sa_cachethis */
	NFS41C_MINOR2 = 1 << 1,	   /* minorversion 2: NFSv4.2 ops (RFC 7862) */
};

/*
 * SEQUENCE + ops[0..nops) on the session's connection, or on clnt when not
 * NULL (a connection bound with nfs41c_session_bind, or any connection: with
 * SP4_NONE the server binds it on use).  res is the whole COMPOUND4res:
 * resarray.val[0] is SEQUENCE's result, the ops' follow.  Results are
 * decoded into arena and stay valid as long as it.
 */
int nfs41c_compound(struct nfs41c_session *sess, const nfs_argop4 *ops, unsigned nops,
		    COMPOUND4res *res, struct xdr_arena *arena);
int nfs41c_compound_ex(struct nfs41c_session *sess, struct nfsd_clnt *clnt, unsigned flags,
		       const nfs_argop4 *ops, unsigned nops, COMPOUND4res *res,
		       struct xdr_arena *arena);

/*
 * Asynchronous: returns once the call is sent (after waiting for a slot);
 * cb runs on the connection's loop thread with rc as above and res (NULL
 * unless rc == 0) valid only during the callback.
 */
typedef void (*nfs41c_cb)(void *ctx, int rc, COMPOUND4res *res);
int nfs41c_compound_async(struct nfs41c_session *sess, struct nfsd_clnt *clnt, unsigned flags,
			  const nfs_argop4 *ops, unsigned nops, nfs41c_cb cb, void *ctx);
/* The same, a READ's data received into sink (nfsd/rpc.h, struct nfsd_sink). */
int nfs41c_compound_async_sink(struct nfs41c_session *sess, struct nfsd_clnt *clnt,
			       unsigned flags, const nfs_argop4 *ops, unsigned nops,
			       const struct nfsd_sink *sink, nfs41c_cb cb, void *ctx);

/* BIND_CONN_TO_SESSION on clnt (RFC 8881 §18.34); *got is bctsr_dir. */
int nfs41c_session_bind(struct nfs41c_session *sess, struct nfsd_clnt *clnt,
			channel_dir_from_client4 dir, channel_dir_from_server4 *got);

/* A COMPOUND exactly as given (no SEQUENCE): EXCHANGE_ID and friends, and
 * hostile tests.  tag may be NULL. */
int nfs41c_compound_raw(struct nfsd_clnt *clnt, const char *tag, uint32_t minorversion,
			const nfs_argop4 *ops, unsigned nops, COMPOUND4res *res,
			struct xdr_arena *arena);
/* The same as AUTH_SYS uid/gid (NFSv4.0 clients: minor version 0), and
 * asynchronously (cb as nfs41c_compound_async's). */
int nfs41c_compound_raw_sys(struct nfsd_clnt *clnt, uint32_t uid, uint32_t gid,
			    uint32_t minorversion, const nfs_argop4 *ops, unsigned nops,
			    COMPOUND4res *res, struct xdr_arena *arena);
int nfs41c_compound_raw_sys_async(struct nfsd_clnt *clnt, uint32_t uid, uint32_t gid,
				  uint32_t minorversion, const nfs_argop4 *ops, unsigned nops,
				  nfs41c_cb cb, void *ctx);
/* The same under a client flavor (NULL: AUTH_NONE). */
int nfs41c_compound_raw_auth(struct nfsd_clnt *clnt, const struct nfsd_clnt_auth *auth,
			     const char *tag, uint32_t minorversion, const nfs_argop4 *ops,
			     unsigned nops, COMPOUND4res *res, struct xdr_arena *arena);

#endif /* BRAID_NFSD_NFS41_CLNT_H */
