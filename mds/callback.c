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
 *
 * NFSv4.0 clients (RFC 7530 §3.3.1, §16.33) have no back channel: we dial
 * the callback address of their SETCLIENTID, a new connection for each
 * call (callbacks are rare: recalls and a probe twice a lease), and send
 * CB_COMPOUND with minor version 0 and their callback_ident, no
 * CB_SEQUENCE.  Only an address that is the SETCLIENTID's own source IP
 * is ever dialed (nfs41_client_cb40's dialable); the connect and every
 * call are bounded (CB40_CONNECT_MS, CB_TIMEOUT_MS).  A CB_NULL probe
 * follows each confirmed callback change; the path is up while the last
 * call on it got a reply.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mds/callback.h"
#include "nfsd/auth_gss.h"
#include "mds/mds_impl.h"

#define CB_TIMEOUT_MS	10000
#define CB_REPLY_MAX	(64 * 1024)
#define CB40_CONNECT_MS 3000

/* An NFSv4.0 client's callback path, as the last call on it found it.
 * Guarded by mds_cb.mu. */
struct cb40_path {
	uint64_t clientid;
	uint32_t gen; /* of the callback (nfs41_cb40.gen) the call went to */
	bool up;
	struct cb40_path *next;
};

/* Back channel slot state of one session.  Guarded by mds_cb.mu. */
struct cb_sess {
	sessionid4 id;
	uint32_t seqid; /* the next csa_sequenceid for slot 0 */
	bool busy;	/* a CB_COMPOUND is in flight on slot 0 */
	struct cb_sess *next;
};

struct mds_cb {
	pthread_mutex_t mu;
	pthread_cond_t cond; /* a session's slot went idle, or a probe ended */
	struct cb_sess *sessions;
	/* NFSv4.0 */
	struct nfsd_server *eng; /* a client engine, made on first use */
	struct cb40_path *paths;
	unsigned probes; /* probe threads running */
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

void mds_cb_stop(struct braid_mds *mds)
{
	struct mds_cb *cb = mds->cb;
	if (!cb)
		return;
	pthread_mutex_lock(&cb->mu);
	while (cb->probes)
		pthread_cond_wait(&cb->cond, &cb->mu);
	pthread_mutex_unlock(&cb->mu);
}

void mds_cb_release(struct braid_mds *mds)
{
	struct mds_cb *cb = mds->cb;
	if (!cb)
		return;
	mds_cb_stop(mds);
	while (cb->sessions) {
		struct cb_sess *n = cb->sessions->next;
		free(cb->sessions);
		cb->sessions = n;
	}
	while (cb->paths) {
		struct cb40_path *n = cb->paths->next;
		free(cb->paths);
		cb->paths = n;
	}
	if (cb->eng)
		nfsd_server_free(cb->eng);
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
	if (bc->flavor == NFSD_RPCSEC_GSS) {
		/* RFC 8881 §2.10.8.3: under the client's context; a reply
		 * that does not verify fails the call (-EPROTO) */
		o.auth = nfsd_gss_cb_auth(bc->gss);
	} else if (bc->flavor == NFSD_AUTH_SYS) {
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

/* ------------------------------------------------------------ NFSv4.0 */

/* mu held: the path record of clientid (made if asked). */
static struct cb40_path *path_get(struct mds_cb *cb, uint64_t clientid, bool create)
{
	struct cb40_path *p;
	for (p = cb->paths; p && p->clientid != clientid; p = p->next)
		;
	if (!p && create && (p = calloc(1, sizeof(*p)))) {
		p->clientid = clientid;
		p->next = cb->paths;
		cb->paths = p;
	}
	return p;
}

static void path_note(struct mds_cb *cb, uint64_t clientid, uint32_t gen, bool up)
{
	pthread_mutex_lock(&cb->mu);
	struct cb40_path *p = path_get(cb, clientid, true);
	if (p) {
		p->gen = gen;
		p->up = up;
	}
	pthread_mutex_unlock(&cb->mu);
}

/* One call to a 4.0 client's callback address, on a connection of its own. */
static int cb40_call(struct braid_mds *mds, uint64_t clientid, const struct nfs41_cb40 *info,
		     uint32_t proc, xdr_enc_fn enc, const void *args, struct cb_wait *w)
{
	struct mds_cb *cb = cb_of(mds);
	memset(w, 0, sizeof(*w));
	if (!info->dialable) {
		path_note(cb, clientid, info->gen, false);
		return -ENOTCONN; /* never dialed: see the top of this file */
	}
	int rc = 0;
	pthread_mutex_lock(&cb->mu);
	if (!cb->eng)
		cb->eng = nfsd_client_engine_new(1, 0, &rc);
	struct nfsd_server *eng = cb->eng;
	pthread_mutex_unlock(&cb->mu);
	if (!eng)
		return rc ? rc : -ENOMEM;
	struct nfsd_clnt_opts co = {.timeout_ms = CB_TIMEOUT_MS,
				    .connect_timeout_ms = CB40_CONNECT_MS};
	socklen_t len = info->addr.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
							 : sizeof(struct sockaddr_in);
	struct nfsd_clnt *cl =
	    nfsd_clnt_new(eng, (const struct sockaddr *)&info->addr, len, &co, &rc);
	if (cl) {
		struct nfsd_call_opts o = {
		    .prog = info->prog,
		    .vers = 1, /* RFC 7530 §16.33.1 */
		    .proc = proc,
		    .enc_args = enc,
		    .args = args,
		    .timeout_ms = CB_TIMEOUT_MS,
		    .flavor = NFSD_AUTH_SYS,
		    .machine = "braid-mds",
		};
		pthread_mutex_init(&w->mu, NULL);
		pthread_cond_init(&w->cond, NULL);
		rc = nfsd_clnt_call_async(cl, &o, cb_done, w);
		if (!rc) {
			pthread_mutex_lock(&w->mu);
			while (!w->done)
				pthread_cond_wait(&w->cond, &w->mu);
			pthread_mutex_unlock(&w->mu);
			rc = w->err;
		}
		pthread_cond_destroy(&w->cond);
		pthread_mutex_destroy(&w->mu);
		nfsd_clnt_free(cl);
	}
	path_note(cb, clientid, info->gen, rc == 0);
	if (rc) {
		free(w->reply);
		w->reply = NULL;
	}
	return rc;
}

static void *probe_thread(void *arg)
{
	struct braid_mds *mds = ((void **)arg)[0];
	uint64_t clientid = (uint64_t)(uintptr_t)((void **)arg)[1];
	free(arg);
	mds_cb_null(mds, clientid);
	struct mds_cb *cb = cb_of(mds);
	pthread_mutex_lock(&cb->mu);
	cb->probes--;
	pthread_cond_broadcast(&cb->cond);
	pthread_mutex_unlock(&cb->mu);
	return NULL;
}

void mds_cb40_changed(void *priv, uint64_t clientid)
{
	struct braid_mds *mds = priv;
	struct mds_cb *cb = cb_of(mds);
	void **arg = malloc(2 * sizeof(*arg));
	if (!arg)
		return;
	arg[0] = mds;
	arg[1] = (void *)(uintptr_t)clientid;
	pthread_mutex_lock(&cb->mu);
	cb->probes++;
	pthread_mutex_unlock(&cb->mu);
	pthread_t th;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &at, probe_thread, arg))
		probe_thread(arg); /* no thread: here, then */
	pthread_attr_destroy(&at);
}

/* ------------------------------------------------------------ sessions */

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

bool mds_cb_up(struct braid_mds *mds, uint64_t clientid)
{
	struct nfs41_cb40 info;
	if (!nfs41_client_cb40(mds->v41, clientid, &info)) {
		struct mds_cb *cb = cb_of(mds);
		pthread_mutex_lock(&cb->mu);
		struct cb40_path *p = path_get(cb, clientid, false);
		bool up = info.dialable && p && p->gen == info.gen && p->up;
		pthread_mutex_unlock(&cb->mu);
		return up;
	}
	struct nfs41_session *ss = nfs41_client_session_get(mds->v41, clientid);
	if (!ss)
		return false;
	struct nfs41_backchannel bc;
	bool up = !nfs41_session_backchannel(ss, &bc);
	if (up)
		nfs41_backchannel_release(&bc);
	nfs41_session_put(ss);
	return up;
}

void mds_cb_client_gone(struct braid_mds *mds, uint64_t clientid)
{
	struct mds_cb *cb = cb_of(mds);
	pthread_mutex_lock(&cb->mu);
	for (struct cb40_path **pp = &cb->paths; *pp; pp = &(*pp)->next)
		if ((*pp)->clientid == clientid) {
			struct cb40_path *p = *pp;
			*pp = p->next;
			free(p);
			break;
		}
	pthread_mutex_unlock(&cb->mu);
}

int mds_cb_null(struct braid_mds *mds, uint64_t clientid)
{
	struct nfs41_cb40 info;
	if (!nfs41_client_cb40(mds->v41, clientid, &info)) {
		struct cb_wait w;
		int rc = cb40_call(mds, clientid, &info, 0, NULL, NULL, &w);
		free(w.reply);
		return rc;
	}
	struct nfs41_backchannel bc;
	struct nfs41_session *ss = cb_session(mds, clientid, &bc);
	if (!ss)
		return -ENOTCONN;
	struct cb_wait w;
	int rc = cb_call(ss, &bc, 0, NULL, NULL, &w);
	free(w.reply);
	nfs41_backchannel_release(&bc);
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

/* RFC 7530 §16.33, §15.2: minor version 0, the client's callback_ident. */
static int cb40_compound(struct braid_mds *mds, uint64_t clientid, const struct nfs41_cb40 *info,
			 const nfs_cb_argop4 *ops, unsigned nops, CB_COMPOUND4res *res,
			 struct xdr_arena *arena)
{
	CB_COMPOUND4args args = {
	    .minorversion = 0,
	    .callback_ident = info->ident,
	    .argarray = {.len = nops, .val = (nfs_cb_argop4 *)ops},
	};
	struct cb_wait w;
	int rc = cb40_call(mds, clientid, info, 1, xdr_desc_NFS4_CALLBACK_NFS_CB.procs[1].enc_arg,
			   &args, &w);
	if (rc)
		return rc;
	uint8_t *copy = xdr_arena_alloc(arena, w.reply_len ? w.reply_len : 1);
	if (copy)
		memcpy(copy, w.reply, w.reply_len);
	free(w.reply);
	struct xdr_dec d;
	xdr_dec_init(&d, copy, copy ? w.reply_len : 0, arena);
	if (!copy || xdr_desc_NFS4_CALLBACK_NFS_CB.procs[1].dec_res(&d, res))
		return -EPROTO;
	return 0;
}

int mds_cb_compound(struct braid_mds *mds, uint64_t clientid, const nfs_cb_argop4 *ops,
		    unsigned nops, CB_COMPOUND4res *res, struct xdr_arena *arena)
{
	struct mds_cb *cb = cb_of(mds);
	struct nfs41_cb40 info;
	if (!nfs41_client_cb40(mds->v41, clientid, &info))
		return cb40_compound(mds, clientid, &info, ops, nops, res, arena);
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
	nfs41_backchannel_release(&bc);
	nfs41_session_put(ss);
	return rc;
}
