/* SPDX-License-Identifier: MIT */
/*
 * RPCSEC_GSS version 1 (RFC 2203), client side, for any nfsd_clnt: the
 * Kerberos V5 mechanism of MIT's libgssapi_krb5 with the services none
 * (krb5), integrity (krb5i) and privacy (krb5p).
 *
 * An nfsd_gss_clnt is one security context with one server, for one
 * initiator (a principal from a keytab, a credential cache, or the
 * default credentials).  nfsd_gss_clnt_new() creates the context with
 * RPCSEC_GSS_INIT / CONTINUE_INIT on the NULL procedure of opts.prog /
 * opts.vers, over the nfsd_clnt it is given (§5.2), and checks the reply
 * verifier, the MIC of the window.  A call made with opts.auth =
 * nfsd_gss_clnt_auth(g, service) is then an RPCSEC_GSS_DATA call of that
 * service, on that client or any other to the same server (a context is
 * not bound to a connection).
 *
 * Each call (§5.3): a credential with the next sequence number and the
 * context's handle; the verifier, the MIC of the header from the xid
 * through the credential; the arguments as they are (krb5), as
 * rpc_gss_integ_data (krb5i: {seq, args} and its MIC, from
 * gss_get_mic_iov into the message itself) or rpc_gss_priv_data (krb5p:
 * {seq, args} sealed in place by gss_wrap_iov).  A reply's verifier must
 * be the MIC of the call's sequence number, and its results verify (a
 * checksum over them in the receive buffer) or unseal (gss_unwrap_iov in
 * the receive buffer) and carry that number; else the call fails with
 * -EPROTO and nothing of the reply reaches the caller.  Sinks (struct
 * nfsd_sink) are used with krb5 only: the other services' results are
 * not plain on the wire.
 *
 * Sequence window: the server drops, without a reply, a call whose number
 * fell below its window (§5.3.3.1).  So a number is given only while it
 * is within the server's window of the oldest number still outstanding
 * (signed, not yet answered, timed out or failed): a caller blocks until
 * it is (a loop thread does not block: the engine holds its call).
 *
 * Context loss: a call refused with RPCSEC_GSS_CREDPROBLEM or
 * RPCSEC_GSS_CTXPROBLEM (the server evicted, lost or expired the context)
 * is held while a helper thread creates a new context, then signed again
 * and resent; each call is retried so at most twice.  A call resent after
 * a reconnection is signed again with a new sequence number too.  When
 * the new context cannot be made, held calls fail with its error.  A
 * krb5p call keeps a copy of its plain arguments for that (its message
 * holds them sealed); krb5 and krb5i calls take them from their message.
 *
 * Threads: thread safe.  MIT's per-message calls keep state in the
 * context, so they are serialized per context.  nfsd_gss_clnt_free()
 * sends RPCSEC_GSS_DESTROY (§5.4); no call of g may be in progress.
 */
#ifndef BRAID_NFSD_CLNT_GSS_H
#define BRAID_NFSD_CLNT_GSS_H

#include <stddef.h>
#include <stdint.h>

#include "nfsd/rpc.h"

enum nfsd_gss_service {
	NFSD_GSS_SVC_NONE = 1,	    /* krb5: the header's MIC only */
	NFSD_GSS_SVC_INTEGRITY = 2, /* krb5i */
	NFSD_GSS_SVC_PRIVACY = 3,   /* krb5p */
};

struct nfsd_gss_clnt_opts {
	uint32_t prog, vers; /* whose NULL procedure creates and destroys contexts */
	/* the acceptor: a host-based service ("nfs@HOST"), or a principal
	 * ("nfs/HOST@REALM") */
	const char *service;
	const char *target;
	/* the initiator: principal's keys from keytab (an MIT client keytab),
	 * or tickets in ccache (a credential cache name, "DIR:/path", ...);
	 * with a keytab, ccache is where its tickets go (default: a MEMORY
	 * cache of this object).  All NULL: the default credentials
	 * (KRB5CCNAME, KRB5_CLIENT_KTNAME). */
	const char *principal;
	const char *keytab;
	const char *ccache;
	unsigned timeout_ms; /* of each context creation and DESTROY call; 0: 30 s */
};

/*
 * Create the context over c (not from a loop thread); c must outlive g,
 * which re-creates contexts over it.  NULL and *err: -ENOKEY (no
 * initiator credentials), -EACCES (the server or the KDC refused), -EPROTO
 * (a reply that does not verify), or what the calls returned; why (may be
 * NULL) says why in words, with the GSS status.
 */
struct nfsd_gss_clnt *nfsd_gss_clnt_new(struct nfsd_clnt *c, const struct nfsd_gss_clnt_opts *o,
					char *why, size_t why_len, int *err);
/* The flavor for nfsd_call_opts.auth: calls of service svc under g. */
const struct nfsd_clnt_auth *nfsd_gss_clnt_auth(struct nfsd_gss_clnt *g, enum nfsd_gss_service svc);
void nfsd_gss_clnt_free(struct nfsd_gss_clnt *g);

struct nfsd_gss_clnt_stats {
	uint64_t contexts;     /* created, the first included */
	uint64_t create_fails; /* creations that failed */
	uint64_t retried;      /* calls refused for their context and made again */
	uint64_t resigned;     /* calls signed again for a resend */
	uint64_t window_waits; /* callers that waited for the sequence window */
	uint64_t bad_replies;  /* verifier, checksum or seal that did not verify */
	uint32_t window;       /* the server's, of the current context */
	uint32_t seq;	       /* the next sequence number */
};
void nfsd_gss_clnt_stats(struct nfsd_gss_clnt *g, struct nfsd_gss_clnt_stats *st);

/*
 * The message pieces, shared with the server's callbacks (RFC 8881
 * §2.10.8.3, nfsd/auth_gss.c), which sign calls under a context the
 * client made with the server, and with tests.
 *
 * nfsd_gss_head_build: into hb (24 + 28 + hlen bytes at most), the call
 * header hdr (xid to procedure, 24 bytes) and an RPCSEC_GSS credential;
 * returns its length.  nfsd_gss_msg_build: the record (mark, hb, the
 * verifier, the MIC of hb, and args of alen bytes in svc's form) into
 * *msg as gss_marshal's contract (struct nfsd_clnt_auth) says; *args_off
 * is where the plain arguments start (krb5, krb5i).  0, or -errno
 * (-EKEYEXPIRED: the context's life is over).  nfsd_gss_reply_check: a
 * reply's verifier is the MIC of seq and, with accept_stat SUCCESS, its
 * results verify or unseal and carry seq (*res then at the plain
 * results); else -EPROTO.
 */
struct k5msg;
/* The current context's handle (gcbp_handle_from_server, RFC 8881
 * §2.10.8.3) into handle (size bytes) and its per-message calls, to check
 * the server's callbacks and sign their replies (valid while the context
 * is current: no call may make a new one meanwhile).  0, -ENOTCONN (no
 * context now) or -ENOBUFS. */
int nfsd_gss_clnt_context(struct nfsd_gss_clnt *g, uint8_t *handle, size_t size, uint32_t *hlen,
			  struct k5msg **km);
size_t nfsd_gss_head_build(const uint8_t *hdr, uint32_t gss_proc, uint32_t seq, uint32_t service,
			   const uint8_t *handle, uint32_t hlen, uint8_t *hb);
int nfsd_gss_msg_build(struct k5msg *km, const uint8_t *hb, size_t hlen, uint32_t seq,
		       uint32_t svc, const struct iovec *args, unsigned niov, size_t alen,
		       uint8_t **msg, size_t *mlen, size_t *cap, bool fresh_buf, size_t *args_off);
int nfsd_gss_reply_check(struct k5msg *km, uint32_t seq, uint32_t svc, uint32_t vflav,
			 const xdr_opaque *verf, uint32_t astat, struct xdr_dec *res);

#endif
