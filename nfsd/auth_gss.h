/* SPDX-License-Identifier: MIT */
/*
 * RPCSEC_GSS version 1 (RFC 2203), server side, with the Kerberos V5
 * mechanism of MIT's libgssapi_krb5: services none (krb5), integrity
 * (krb5i) and privacy (krb5p).
 *
 * Context creation: RPCSEC_GSS_INIT / CONTINUE_INIT calls are procedure 0
 * (NULL) of any program we serve; accept() runs gss_accept_sec_context on
 * the token in the arguments and wrap() answers rpc_gss_init_res in place
 * of the NULL procedure's void results, with the verifier the MIC of the
 * window size once the context is complete (§5.2.3.1).  A failed
 * context creation is an init_res carrying the GSS major/minor status and
 * no handle.
 *
 * Data (§5.3): the verifier is checked as the MIC of the call from the xid
 * through the credential; the sequence number must be inside the window
 * (opts.seq_window, default 128) and not seen before in it.  A call that
 * fails the window (a replay, or a number below the window) is dropped
 * without a reply, as §5.3.3.1 says; accept() returns NFSD_DROP for it.
 * The reply verifier is the MIC of the sequence number.  Integrity and
 * privacy arguments that fail their check, or whose sequence number is not
 * the credential's, get GARBAGE_ARGS (as Linux's knfsd answers).
 *
 * Refusals: an unknown handle, a context still being created, or a header
 * MIC that does not verify get AUTH_ERROR RPCSEC_GSS_CREDPROBLEM (13); an
 * expired context, or a sequence number at MAXSEQ or beyond, get
 * RPCSEC_GSS_CTXPROBLEM (14); a credential that does not decode, version 2,
 * or a control procedure on a procedure other than NULL get AUTH_BADCRED.
 *
 * Contexts live in a cache keyed by handle, shared by every loop and
 * worker thread: a context expires with its GSS lifetime, capped at
 * opts.max_lifetime_s; past opts.max_contexts the least recently used one
 * is evicted.  RPCSEC_GSS_DESTROY removes a context (calls already
 * holding it finish).
 *
 * Identity: the initiator's name maps to a local user through
 * gss_localname() (krb5.conf auth_to_local: by default a principal of the
 * default realm maps to its first component) and getpwnam_r(); the uid,
 * primary gid and groups come from the password and group databases.  A
 * client host's own principal that does not map (nfs/HOST, host/HOST or
 * root/HOST @REALM, what rpc.gssd uses for root) is root, squashed like
 * AUTH_SYS root; any other name that does not map is nobody (65534/65534).
 * req->cred.gss_service holds the service of the call.  req->cred.principal
 * holds the name as the mechanism displays it ("user@REALM").
 *
 * Payloads stay where they are: integrity arguments are checked in the
 * receive buffer and privacy arguments unsealed there in place, so a
 * WRITE's data is not copied; integrity results get their MIC over the
 * reply's own iovecs and stay referenced, so a READ's data is neither
 * copied nor moved; privacy results are gathered once into the token's
 * place in one buffer and sealed there: a READ's data may be a file's
 * mapped pages, never to be sealed in place.  Such pages are MIC'ed
 * before they are sent: a write to the same range in between makes that
 * krb5i reply fail its check at the client, where AUTH_SYS would return
 * the bytes as the send found them (knfsd copies krb5i READ data
 * instead).  The tokens are nfsd/k5msg.h's (OpenSSL, for the AES
 * enctypes; MIT's _iov calls for others), made once a context completes.
 *
 * Not done yet: version 2 channel bindings, and context creation runs
 * gss_accept_sec_context on the loop thread.
 */
#ifndef BRAID_NFSD_AUTH_GSS_H
#define BRAID_NFSD_AUTH_GSS_H

#include <stdint.h>

#include "nfsd/rpc.h"

#define NFSD_RPCSEC_GSS_CREDPROBLEM 13 /* auth_stat, rpc_prot.x */
#define NFSD_RPCSEC_GSS_CTXPROBLEM  14

struct nfsd_gss_opts {
	const char *keytab;	 /* acceptor keys; NULL: the default keytab
				  * (KRB5_KTNAME, else /etc/krb5.keytab) */
	unsigned seq_window;	 /* 0: 128; at most 1024 */
	unsigned max_contexts;	 /* 0: 4096 */
	unsigned max_lifetime_s; /* cap on a context's life; 0: 86400 */
};

struct nfsd_gss;

/* Returns NULL and sets *err (-ENOENT: the keytab's keys cannot be read). */
struct nfsd_gss *nfsd_gss_new(const struct nfsd_gss_opts *opts, int *err);
/* Add the returned flavor with nfsd_server_add_flavor; g outlives the server. */
const struct nfsd_auth_flavor *nfsd_gss_flavor(struct nfsd_gss *g);
void nfsd_gss_free(struct nfsd_gss *g);

struct nfsd_gss_stats {
	uint64_t contexts;	/* in the cache now */
	uint64_t created;	/* contexts completed */
	uint64_t init_failures; /* init_res with a GSS error */
	uint64_t evicted, expired, destroyed;
	uint64_t bad_handle, bad_mic, dropped; /* dropped: replays, below window */
	uint64_t bad_args;		       /* integrity/privacy check failed */
};
void nfsd_gss_stats(struct nfsd_gss *g, struct nfsd_gss_stats *st);

/*
 * Callbacks under a client's context (RFC 8881 §2.10.8.3, for the NFSv4.1
 * back channel): the context hfs (gcbp_handle_from_server) names, which
 * must be complete, not destroyed and of principal (the client ID's GSS
 * name); the calls carry hfc (gcbp_handle_from_client) in their
 * credential, sequence numbers of their own from 1, the header's MIC as
 * verifier and their arguments in the form of service (1 none, 2
 * integrity, 3 privacy), signed and sealed as the acceptor; each reply's
 * verifier and results are checked (nfsd_gss_reply_check: -EPROTO fails
 * the call).  The context is referenced: its eviction from the cache
 * does not end the callbacks, its RPCSEC_GSS_DESTROY or expiry does (a
 * call then fails -EKEYEXPIRED).  0, or -ENOENT (no such live context),
 * -EPERM (another principal's), -EINVAL (service, hfc over 256 bytes),
 * -ENOMEM.  Thread safe.
 */
struct nfsd_gss_cb;
struct nfsd_clnt_auth;
int nfsd_gss_cb_new(struct nfsd_gss *g, const xdr_opaque *hfs, const xdr_opaque *hfc,
		    uint32_t service, const char *principal, struct nfsd_gss_cb **out);
void nfsd_gss_cb_get(struct nfsd_gss_cb *cb);
void nfsd_gss_cb_put(struct nfsd_gss_cb *cb); /* NULL: nothing */
/* 0 live, 1 live but ends within within_ns, -EKEYEXPIRED ended
 * (expired or destroyed). */
int nfsd_gss_cb_check(const struct nfsd_gss_cb *cb, uint64_t within_ns);
uint32_t nfsd_gss_cb_service(const struct nfsd_gss_cb *cb);
/* For nfsd_call_opts.auth (nfsd_conn_call_async); valid while cb is. */
const struct nfsd_clnt_auth *nfsd_gss_cb_auth(struct nfsd_gss_cb *cb);

/* The stats above as metric families (braid_rpcsec_gss_*), for a daemon's
 * collector (nfsd/metrics.h); nothing when g is NULL. */
struct nfsd_metrics_out;
void nfsd_gss_metrics(struct nfsd_metrics_out *o, struct nfsd_gss *g);

#endif
