/* SPDX-License-Identifier: MIT */
/*
 * The Kerberos hop of proxied I/O (docs/architecture.md, "Every path and
 * what protects it"): the MDS calls a data server over NFSv4.1 under
 * RPCSEC_GSS as its own principal, the first in [mds] keytab (nfs/HOST),
 * with a capability stateid as a tightly coupled layout gives clients
 * (ctl/cap.h, op_io.c makes it); braid-ds checks it as it does a client's
 * (dataserver/nfs41.c).
 *
 * Per connection (struct mds_ds_conn, so per data server and per REGISTER):
 * one RPCSEC_GSS context with the acceptor nfs@<its hostname>, made at the
 * first use over the connection, and two sessions under it (EXCHANGE_ID
 * with EXCHGID4_FLAG_USE_PNFS_DS): one whose COMPOUNDs are krb5i, one
 * krb5p.  Context loss (the data server forgot or expired it) is
 * nfsd/clnt_gss.c's: the call is held while a new one is made.  A session
 * the data server lost (BADSESSION, DEADSESSION, STALE_CLIENTID: its
 * lease expired while we were idle) is retired and a new one made; the
 * call is made again once.  Retired sessions stay allocated (a thread may
 * still be using one) until the connection goes.  A context that cannot
 * be made is not tried again for a second, so that a KDC outage costs
 * callers a DELAY each, not a KDC round trip each.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mds/dsreg.h"
#include "mds/io_gss.h"
#include "mds/mds_impl.h"
#include "nfsd/clnt_gss.h"
#include "nfsd/nfs41_clnt.h"

#define RETIRED_MAX   16		      /* sessions lost per connection, at most */
#define RETRY_WAIT_NS (1000ull * 1000 * 1000) /* after a failed context */

/* Guarded by the connection's gss_mu; sess[] may be used outside it (they
 * are freed only with the connection). */
struct mds_io_gss {
	struct nfsd_gss_clnt *g;
	struct nfs41c_session *sess[2]; /* krb5i, krb5p */
	struct nfs41c_session *retired[RETIRED_MAX];
	unsigned nretired;
	uint64_t failed_ns; /* the last failed context creation */
	int failed_rc;
};

void mds_io_gss_free(struct mds_io_gss *h)
{
	if (!h)
		return;
	for (unsigned i = 0; i < 2; i++)
		if (h->sess[i])
			nfs41c_session_destroy(h->sess[i]);
	for (unsigned i = 0; i < h->nretired; i++)
		nfs41c_session_destroy(h->retired[i]);
	if (h->g)
		nfsd_gss_clnt_free(h->g);
	free(h);
}

/* The context, made if need be; under dc->gss_mu. */
static int ctx_get(struct braid_mds *mds, struct mds_ds_conn *dc, struct mds_io_gss *h)
{
	if (h->g)
		return 0;
	uint64_t now = nfsd_now_ns();
	if (h->failed_ns && now - h->failed_ns < RETRY_WAIT_NS)
		return h->failed_rc;
	char target[300], why[512];
	snprintf(target, sizeof(target), "nfs@%s", dc->host);
	struct nfsd_gss_clnt_opts o = {
	    .prog = NFS4_PROGRAM,
	    .vers = 4,
	    .service = target,
	    .keytab = mds->set.keytab,
	    .timeout_ms = dc->timeout_ms,
	};
	int rc = 0;
	why[0] = 0;
	if ((h->g = nfsd_gss_clnt_new(dc->clnt, &o, why, sizeof(why), &rc)))
		return 0;
	/* transport trouble is the data server's; anything else, the hop's */
	rc = rc == -ETIMEDOUT || rc == -ECONNREFUSED || rc == -ENOTCONN || rc == -ECONNRESET ||
		     rc == -EAGAIN
		 ? -EAGAIN
		 : -ENOKEY;
	if (!h->failed_ns || now - h->failed_ns > 60 * RETRY_WAIT_NS)
		mds_log("data server %u: no RPCSEC_GSS context with %s as our keytab's "
			"principal: %s; Kerberos I/O through the MDS waits (DELAY)",
			dc->id, target, why[0] ? why : "failed");
	h->failed_ns = now;
	h->failed_rc = rc;
	return rc;
}

/* The session for hop (index i), made if need be. */
static int sess_get(struct braid_mds *mds, struct mds_ds_conn *dc, unsigned i,
		    struct nfs41c_session **out)
{
	pthread_mutex_lock(&dc->gss_mu);
	struct mds_io_gss *h = dc->gss;
	int rc = 0;
	if (!h && !(h = dc->gss = calloc(1, sizeof(*h))))
		rc = -ENOMEM;
	if (!rc && !(*out = h->sess[i]) && !(rc = ctx_get(mds, dc, h))) {
		char owner[64];
		snprintf(owner, sizeof(owner), "braid-mds-hop-%s-%llu", i ? "krb5p" : "krb5i",
			 (unsigned long long)mds->boot_sec);
		struct nfs41c_session_opts o = {
		    .owner = owner,
		    .exchgid_flags = EXCHGID4_FLAG_USE_PNFS_DS,
		    .slots = 16,
		    .auth = nfsd_gss_clnt_auth(h->g, NFSD_GSS_SVC_INTEGRITY),
		};
		rc = nfs41c_session_create_opts(dc->clnt, &o, &h->sess[i]);
		if (rc > 0) {
			mds_log("data server %u refused our Kerberos session: status %d", dc->id,
				rc);
			rc = -ENOKEY;
		} else if (rc) {
			rc = -EAGAIN;
		} else {
			nfs41c_session_set_auth(
			    h->sess[i], nfsd_gss_clnt_auth(h->g, i ? NFSD_GSS_SVC_PRIVACY
								   : NFSD_GSS_SVC_INTEGRITY));
			*out = h->sess[i];
		}
		if (rc)
			h->sess[i] = NULL;
	}
	pthread_mutex_unlock(&dc->gss_mu);
	return rc;
}

/* s lost its state at the data server: a new one next time (if s is still
 * the current one: another thread may have done it). */
static bool sess_retire(struct mds_ds_conn *dc, unsigned i, struct nfs41c_session *s)
{
	bool ok = false;
	pthread_mutex_lock(&dc->gss_mu);
	struct mds_io_gss *h = dc->gss;
	if (h->sess[i] != s) {
		ok = true;
	} else if (h->nretired < RETIRED_MAX) {
		h->retired[h->nretired++] = s;
		h->sess[i] = NULL;
		ok = true;
	}
	pthread_mutex_unlock(&dc->gss_mu);
	return ok;
}

static bool sess_lost(nfsstat4 st)
{
	return st == NFS4ERR_BADSESSION || st == NFS4ERR_DEADSESSION ||
	       st == NFS4ERR_STALE_CLIENTID || st == NFS4ERR_EXPIRED;
}

int mds_io_gss_compound(struct braid_mds *mds, struct mds_ds_conn *dc, enum mds_hop hop,
			const nfs_argop4 *ops, unsigned nops, COMPOUND4res *res,
			struct xdr_arena *ar)
{
	unsigned i = hop == MDS_HOP_KRB5P;
	for (int tries = 0;; tries++) {
		struct nfs41c_session *s;
		int rc = sess_get(mds, dc, i, &s);
		if (rc)
			return rc;
		rc = nfs41c_compound(s, ops, nops, res, ar);
		if (rc > 0) {
			mds_log("data server %u refused a Kerberos COMPOUND: rpc error %#x", dc->id,
				(unsigned)rc);
			return -EIO;
		}
		if (rc)
			return rc == -ENOMEM ? rc : -EAGAIN;
		if (!sess_lost(res->status))
			return 0;
		if (tries || !sess_retire(dc, i, s))
			return -EAGAIN;
	}
}
