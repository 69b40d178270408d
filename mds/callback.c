/* SPDX-License-Identifier: MIT */
/*
 * Calls from braid-mds to its clients over their sessions' back channels
 * (RFC 8881 §2.10.3.1, §20): CB_NULL and CB_COMPOUND with CB_SEQUENCE
 * first.  nfsd/nfs41_session.c picks the connection: the most recently
 * bound back channel connection of the client's session, never a
 * connection the client did not bind for callbacks (nconnect clients bind
 * only one).
 *
 * Slots: we use slot 0 of each session's back channel, one call at a time
 * per session (the Linux client offers one back channel slot).  A call
 * that got no reply (timeout, connection lost) leaves the slot's seqid
 * where it was: the client may or may not have seen it, so the next call
 * reuses it and, if the client answers as for a retry (RETRY_UNCACHED_REP
 * or SEQ_MISORDERED), moves on once (§2.10.6.1 from the server's side).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mds/callback.h"
#include "mds/mds_impl.h"

#define CB_TIMEOUT_MS 10000
#define CB_REPLY_MAX  (64 * 1024)

/* Back channel slot state of one session.  Guarded by mds_cb.mu. */
struct cb_sess {
	sessionid4 id;
	uint32_t seqid; /* the next csa_sequenceid for slot 0 */
	bool busy;	/* a CB_COMPOUND is in flight on slot 0 */
	struct cb_sess *next;
};

struct mds_cb {
	pthread_mutex_t mu;
	pthread_cond_t cond; /* a session's slot went idle */
	struct cb_sess *sessions;
};

/* One call's rendezvous between the caller and the loop thread. */
struct cb_wait {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool done;
	int err;
	uint8_t *reply; /* a copy of the results, malloc'd */
	size_t reply_len;
};

static struct mds_cb *cb_of(struct braid_mds *mds)
{
	return mds->cb;
}

int mds_cb_init(struct braid_mds *mds)
{
	struct mds_cb *cb = calloc(1, sizeof(*cb));
	if (!cb)
		return -ENOMEM;
	pthread_mutex_init(&cb->mu, NULL);
	pthread_cond_init(&cb->cond, NULL);
	mds->cb = cb;
	return 0;
}

void mds_cb_release(struct braid_mds *mds)
{
	struct mds_cb *cb = mds->cb;
	if (!cb)
		return;
	while (cb->sessions) {
		struct cb_sess *n = cb->sessions->next;
		free(cb->sessions);
		cb->sessions = n;
	}
	pthread_cond_destroy(&cb->cond);
	pthread_mutex_destroy(&cb->mu);
	free(cb);
	mds->cb = NULL;
}

static void cb_done(void *ctx, int err, struct xdr_dec *res)
{
	struct cb_wait *w = ctx;
	pthread_mutex_lock(&w->mu);
	w->err = err;
	if (!err && res) {
		size_t n = (size_t)(res->end - res->p);
		if (n > CB_REPLY_MAX)
			w->err = -EMSGSIZE;
		else if ((w->reply = malloc(n ? n : 1))) {
			memcpy(w->reply, res->p, n);
			w->reply_len = n;
		} else {
			w->err = -ENOMEM;
		}
	}
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->mu);
}

/* One call over the back channel; on 0, w->reply holds the results. */
static int cb_call(struct nfs41_session *ss, const struct nfs41_backchannel *bc, uint32_t proc,
		   xdr_enc_fn enc, const void *args, struct cb_wait *w)
{
	struct nfsd_call_opts o = {
		.prog = bc->cb_program,
		.vers = 1, /* RFC 8881 §20: the callback program's version 1 */
		.proc = proc,
		.enc_args = enc,
		.args = args,
		.timeout_ms = CB_TIMEOUT_MS,
	};
	if (bc->flavor == NFSD_AUTH_SYS) {
		o.flavor = NFSD_AUTH_SYS;
		o.uid = bc->uid;
		o.gid = bc->gid;
		o.machine = "braid-mds";
	}
	memset(w, 0, sizeof(*w));
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cond, NULL);
	int rc = nfsd_conn_call_async(bc->conn, &o, cb_done, w);
	if (!rc) {
		pthread_mutex_lock(&w->mu);
		while (!w->done)
			pthread_cond_wait(&w->cond, &w->mu);
		pthread_mutex_unlock(&w->mu);
		rc = w->err;
	}
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->mu);
	if (rc == -ECONNRESET || rc == -EPIPE || rc == -ENOTCONN)
		nfs41_session_backchannel_lost(ss, bc->conn);
	if (rc) {
		free(w->reply);
		w->reply = NULL;
	}
	return rc;
}

static struct nfs41_session *cb_session(struct braid_mds *mds, uint64_t clientid,
					struct nfs41_backchannel *bc)
{
	struct nfs41_session *ss = nfs41_client_session_get(mds->v41, clientid);
	if (!ss)
		return NULL;
	if (nfs41_session_backchannel(ss, bc)) {
		nfs41_session_put(ss);
		return NULL;
	}
	return ss;
}

int mds_cb_null(struct braid_mds *mds, uint64_t clientid)
{
	struct nfs41_backchannel bc;
	struct nfs41_session *ss = cb_session(mds, clientid, &bc);
	if (!ss)
		return -ENOTCONN;
	struct cb_wait w;
	int rc = cb_call(ss, &bc, 0, NULL, NULL, &w);
	free(w.reply);
	nfsd_conn_put(bc.conn);
	nfs41_session_put(ss);
	return rc;
}

/* Take slot 0 of the session (waiting while it is busy). */
static struct cb_sess *slot_take(struct mds_cb *cb, const sessionid4 id)
{
	pthread_mutex_lock(&cb->mu);
	struct cb_sess *s;
	for (s = cb->sessions; s; s = s->next)
		if (!memcmp(s->id, id, sizeof(sessionid4)))
			break;
	if (!s) {
		if (!(s = calloc(1, sizeof(*s)))) {
			pthread_mutex_unlock(&cb->mu);
			return NULL;
		}
		memcpy(s->id, id, sizeof(sessionid4));
		s->seqid = 1;
		s->next = cb->sessions;
		cb->sessions = s;
	}
	while (s->busy)
		pthread_cond_wait(&cb->cond, &cb->mu);
	s->busy = true;
	pthread_mutex_unlock(&cb->mu);
	return s;
}

static void slot_give(struct mds_cb *cb, struct cb_sess *s, bool used)
{
	pthread_mutex_lock(&cb->mu);
	if (used)
		s->seqid++;
	s->busy = false;
	pthread_cond_broadcast(&cb->cond);
	pthread_mutex_unlock(&cb->mu);
}

int mds_cb_compound(struct braid_mds *mds, uint64_t clientid, const nfs_cb_argop4 *ops,
		    unsigned nops, CB_COMPOUND4res *res, struct xdr_arena *arena)
{
	struct mds_cb *cb = cb_of(mds);
	struct nfs41_backchannel bc;
	struct nfs41_session *ss = cb_session(mds, clientid, &bc);
	if (!ss)
		return -ENOTCONN;
	nfs_cb_argop4 *all = calloc(nops + 1, sizeof(*all));
	struct cb_sess *slot = all ? slot_take(cb, bc.sessionid) : NULL;
	int rc = slot ? 0 : -ENOMEM;
	for (int attempt = 0; !rc && attempt < 2; attempt++) {
		all[0].argop = OP_CB_SEQUENCE;
		CB_SEQUENCE4args *sa = &all[0].u.opcbsequence;
		memcpy(sa->csa_sessionid, bc.sessionid, sizeof(sessionid4));
		sa->csa_sequenceid = slot->seqid;
		sa->csa_slotid = 0;
		sa->csa_highest_slotid = 0;
		sa->csa_cachethis = false;
		if (nops)
			memcpy(all + 1, ops, nops * sizeof(*ops));
		CB_COMPOUND4args args = {
			/* the session's minor version (RFC 8881 §20.2; Linux
			 * matches it to the client's) */
			.minorversion = bc.minorversion,
			.argarray = { .len = nops + 1, .val = all },
		};
		struct cb_wait w;
		rc = cb_call(ss, &bc, 1, xdr_desc_NFS4_CALLBACK_NFS_CB.procs[1].enc_arg, &args, &w);
		if (rc)
			break; /* no reply: the seqid stays (see the top of this file) */
		/* decode from our own copy, into the caller's arena */
		uint8_t *copy = xdr_arena_alloc(arena, w.reply_len ? w.reply_len : 1);
		if (copy)
			memcpy(copy, w.reply, w.reply_len);
		free(w.reply);
		struct xdr_dec d;
		xdr_dec_init(&d, copy, copy ? w.reply_len : 0, arena);
		if (!copy || xdr_desc_NFS4_CALLBACK_NFS_CB.procs[1].dec_res(&d, res)) {
			rc = -EPROTO;
			break;
		}
		nfsstat4 seq = res->resarray.len ? res->resarray.val[0].u.opcbsequence.csr_status
						 : res->status;
		if (res->resarray.len && res->resarray.val[0].resop != OP_CB_SEQUENCE)
			seq = NFS4ERR_SERVERFAULT;
		if (seq == NFS4ERR_RETRY_UNCACHED_REP || seq == NFS4ERR_SEQ_MISORDERED) {
			/* an earlier call with this seqid reached the client after all */
			pthread_mutex_lock(&cb->mu);
			slot->seqid++;
			pthread_mutex_unlock(&cb->mu);
			continue;
		}
		if (seq == NFS4_OK)
			slot_give(cb, slot, true), slot = NULL;
		break;
	}
	if (slot)
		slot_give(cb, slot, false);
	free(all);
	nfsd_conn_put(bc.conn);
	nfs41_session_put(ss);
	return rc;
}
