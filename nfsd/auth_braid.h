/* SPDX-License-Identifier: MIT */
/*
 * AUTH_BRAID: the RPC flavor that authenticates braid-mds and braid-ds to
 * each other on the control protocol (braid_ctl.x).
 *
 * Both sides hold the cluster key (nfsd/mac.h).  A call carries
 *
 *	credential (flavor AUTH_BRAID, 24 bytes):
 *		unsigned int   version;  1
 *		unsigned int   key_id;   braid_key.id of the signer's key
 *		unsigned hyper stamp;    sender's clock, ns since the epoch
 *		unsigned hyper nonce;    random, never reused by a sender
 *	verifier (flavor AUTH_BRAID, 16 bytes):
 *		SipHash-2-4-128 under the key's ctl half of the call from the
 *		xid to the end of the credential, followed by the arguments
 *		(everything but the verifier itself).
 *
 * So a call cannot be forged or altered without the key.  Replays are
 * refused: the receiver remembers the nonces of calls whose stamp is
 * within BRAID_AUTH_WINDOW_S of the newest stamp it has accepted, refuses
 * a stamp older than that window, and refuses a stamp further than
 * BRAID_AUTH_SKEW_S from its own clock (hosts of one cluster keep their
 * clocks within that of each other, e.g. with NTP).  Refusals are RPC
 * AUTH_ERROR replies: AUTH_BADCRED (malformed), AUTH_REJECTEDCRED (other
 * key, or stamp outside the window or skew), AUTH_BADVERF (tag mismatch:
 * forged or altered) and AUTH_REJECTEDVERF (a replay).  A caller that gets
 * AUTH_REJECTEDCRED or AUTH_REJECTEDVERF for a call it resent after a
 * reconnection makes the call again (a new stamp and nonce).
 *
 * Replies are not signed: a reply can only be forged by someone on the
 * path between the two daemons, and the control network is expected to
 * be private; RPCSEC_GSS krb5i is the answer where it is not.
 *
 * The flavor number is from the range IANA leaves unassigned (200005-
 * 299999) and is not registered: it only ever travels between Braid
 * daemons of one cluster.
 */
#ifndef BRAID_NFSD_AUTH_BRAID_H
#define BRAID_NFSD_AUTH_BRAID_H

#include "nfsd/mac.h"
#include "nfsd/rpc.h"

#define NFSD_AUTH_BRAID     239001u
#define BRAID_AUTH_WINDOW_S 30
#define BRAID_AUTH_SKEW_S   300

struct braid_auth;

/* The server side: add the returned flavor with nfsd_server_add_flavor. */
struct braid_auth *braid_auth_new(const struct braid_key *key);
const struct nfsd_auth_flavor *braid_auth_flavor(struct braid_auth *a);
void braid_auth_free(struct braid_auth *a);

struct braid_auth_stats {
	uint64_t accepted, bad_cred, other_key, stale, forged, replays;
};
void braid_auth_stats(struct braid_auth *a, struct braid_auth_stats *st);

/* The caller side: make o's calls AUTH_BRAID calls signed with key (which
 * must outlive the calls). */
void braid_auth_call_opts(struct nfsd_call_opts *o, const struct braid_key *key);

/*
 * The one signed call every caller of a Braid protocol makes (the control
 * protocol, braidctl's administration protocol, tests): procedure proc of
 * v, args encoded and res decoded with v's codecs (res into arena memory;
 * NULL when it holds no opaque or array).  The one retry rule: a call
 * refused with AUTH_REJECTEDCRED or AUTH_REJECTEDVERF (stale or replayed:
 * it was resent after a reconnection, or the window was full) is signed
 * afresh and made once more.  Returns nfsd_clnt_call's value: 0 when a
 * reply came (its own status left in res), -errno for the transport, or
 * NFSD_CALL_ERR_* for an RPC-level refusal.
 */
int braid_auth_call(struct nfsd_clnt *c, const struct braid_key *key,
		    const struct xdr_vers_desc *v, uint32_t proc, const void *args, void *res,
		    struct xdr_arena *arena);
/* The same with this call's own timeout (0: c's default), for a procedure
 * that takes longer than c's others (braid_ctl COPY). */
int braid_auth_call_timeout(struct nfsd_clnt *c, const struct braid_key *key,
			    const struct xdr_vers_desc *v, uint32_t proc, const void *args,
			    void *res, struct xdr_arena *arena, unsigned timeout_ms);

#endif
