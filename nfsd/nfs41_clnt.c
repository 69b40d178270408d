/* SPDX-License-Identifier: MIT */
/*
 * NFSv4.1 client sessions: see nfsd/nfs41_clnt.h.
 *
 * A call is encoded when it is posted (nfsd_clnt_call_async() encodes at
 * once), so the argument array lives only on the caller's stack or heap
 * for that long.  A reply whose results must outlive the callback (a
 * caller's arena) is copied into that arena before the connection's
 * receive buffer is reused, and decoded from there; an asynchronous call's
 * reply, valid only during its callback, is decoded in place.
 */
#include "config.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nfsd/nfs41_clnt.h"

struct c41_slot {
	uint32_t seqid; /* the last one handed out */
	bool busy, dead;
};

struct nfs41c_session {
	struct nfsd_clnt *clnt;
	struct nfs41c_session_info info;
	/* lock guards slots[] and ndead */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned nslots, ndead;
	struct c41_slot *slots;
	/* AUTH_SYS for the session's COMPOUNDs (nfs41c_session_set_cred), or
	 * another flavor (nfs41c_session_set_auth) */
	bool auth_sys;
	uint32_t uid, gid;
	const struct nfsd_clnt_auth *auth;
};

/* One call in flight. */
struct c41_call {
	struct nfs41c_session *sess; /* NULL for raw calls */
	unsigned slot;
	nfs41c_cb cb;
	void *ctx;
	struct xdr_arena *arena; /* the caller's, or own */
	struct xdr_arena own;
	COMPOUND4res res;
};

static int enc_compound(struct xdr_enc *e, const void *v)
{
	return xdr_enc_COMPOUND4args(e, v);
}

/* ------------------------------------------------------------ slots */

static int slot_take(struct nfs41c_session *s, unsigned *slot, uint32_t *seqid, uint32_t *highest)
{
	pthread_mutex_lock(&s->lock);
	for (;;) {
		if (s->ndead == s->nslots) {
			pthread_mutex_unlock(&s->lock);
			return -EIO;
		}
		unsigned i = 0;
		while (i < s->nslots && (s->slots[i].busy || s->slots[i].dead))
			i++;
		if (i < s->nslots) {
			s->slots[i].busy = true;
			*slot = i;
			*seqid = ++s->slots[i].seqid;
			break;
		}
		pthread_cond_wait(&s->cond, &s->lock);
	}
	*highest = 0;
	for (unsigned i = 0; i < s->nslots; i++)
		if (s->slots[i].busy)
			*highest = i;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* RFC 8881 §2.10.6.1: a seqid SEQUENCE did not accept is not used. */
static void slot_give(struct nfs41c_session *s, unsigned slot, int rc, const COMPOUND4res *res)
{
	bool used = false, unknown = false;
	if (rc == 0)
		used = res->resarray.len > 0 && res->resarray.val[0].resop == OP_SEQUENCE &&
		       res->resarray.val[0].u.opsequence.sr_status == NFS4_OK;
	else if (rc == -EBADMSG || rc == -ENOMEM)
		used = true; /* a reply came: SEQUENCE ran (our decoding failed) */
	else if (rc < 0)
		unknown = true; /* lost in transport */
	pthread_mutex_lock(&s->lock);
	struct c41_slot *sl = &s->slots[slot];
	sl->busy = false;
	if (unknown) {
		sl->dead = true;
		s->ndead++;
	} else if (!used) {
		sl->seqid--;
	}
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

/* ------------------------------------------------------------ calls */

static void call_done(void *ctx, int err, struct xdr_dec *d)
{
	struct c41_call *k = ctx;
	int rc = err;
	if (!rc && k->arena == &k->own) {
		/* results live only during the callback, like the receive
		 * buffer: decode in place (a READ's data is not copied twice) */
		struct xdr_dec dc = *d;
		dc.arena = k->arena;
		if (xdr_dec_COMPOUND4res(&dc, &k->res) < 0)
			rc = -EBADMSG;
	} else if (!rc) {
		size_t n = xdr_dec_left(d);
		uint8_t *copy = xdr_arena_alloc(k->arena, n ? n : 1);
		if (!copy) {
			rc = -ENOMEM;
		} else {
			struct xdr_dec dc;
			memcpy(copy, d->p, n);
			xdr_dec_init(&dc, copy, n, k->arena);
			if (xdr_dec_COMPOUND4res(&dc, &k->res) < 0)
				rc = -EBADMSG;
		}
	}
	if (k->sess)
		slot_give(k->sess, k->slot, rc, &k->res);
	k->cb(k->ctx, rc, rc ? NULL : &k->res);
	if (k->arena == &k->own)
		xdr_arena_release(&k->own);
	free(k);
}

/* An AUTH_SYS credential for a call without a session. */
struct c41_sys {
	uint32_t uid, gid;
};

/* Send args on clnt; with sess, SEQUENCE is args[0] and slot is held; sys:
 * AUTH_SYS (sessionless calls). */
static int call_start_cred(struct nfsd_clnt *clnt, struct nfs41c_session *sess, unsigned slot,
			   const struct nfsd_clnt_auth *auth, const struct c41_sys *sys,
			   const COMPOUND4args *args, struct xdr_arena *arena,
			   const struct nfsd_sink *sink, nfs41c_cb cb, void *ctx)
{
	struct c41_call *k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->sess = sess;
	k->slot = slot;
	k->cb = cb;
	k->ctx = ctx;
	if (arena) {
		k->arena = arena;
	} else {
		xdr_arena_init(&k->own, NULL, 0, 64u << 20);
		k->arena = &k->own;
	}
	struct nfsd_call_opts o = {
	    .prog = NFS4_PROGRAM,
	    .vers = 4,
	    .proc = NFSPROC4_COMPOUND,
	    .enc_args = enc_compound,
	    .args = args,
	    .sink = sink,
	};
	if (auth) {
		o.auth = auth;
	} else if (sess && sess->auth) {
		o.auth = sess->auth;
	} else if (sess && sess->auth_sys) {
		o.flavor = NFSD_AUTH_SYS;
		o.uid = sess->uid;
		o.gid = sess->gid;
	} else if (sys) {
		o.flavor = NFSD_AUTH_SYS;
		o.uid = sys->uid;
		o.gid = sys->gid;
	}
	int rc = nfsd_clnt_call_async(clnt, &o, call_done, k);
	if (rc) {
		free(k);
		return rc;
	}
	return 0;
}

static int call_start_auth(struct nfsd_clnt *clnt, struct nfs41c_session *sess, unsigned slot,
			   const struct nfsd_clnt_auth *auth, const COMPOUND4args *args,
			   struct xdr_arena *arena, const struct nfsd_sink *sink, nfs41c_cb cb,
			   void *ctx)
{
	return call_start_cred(clnt, sess, slot, auth, NULL, args, arena, sink, cb, ctx);
}

static int call_start(struct nfsd_clnt *clnt, struct nfs41c_session *sess, unsigned slot,
		      const COMPOUND4args *args, struct xdr_arena *arena,
		      const struct nfsd_sink *sink, nfs41c_cb cb, void *ctx)
{
	return call_start_auth(clnt, sess, slot, NULL, args, arena, sink, cb, ctx);
}

/* A semaphore wakes the waiter once (nfsd/clnt.c's sync_call says why). */
struct c41_sync {
	sem_t sem;
	int rc;
	COMPOUND4res *out;
};

static void sync_done(void *ctx, int rc, COMPOUND4res *res)
{
	struct c41_sync *w = ctx;
	if (res)
		*w->out = *res; /* points into the caller's arena */
	w->rc = rc;
	sem_post(&w->sem);
}

static int sync_wait(struct c41_sync *w, int rc)
{
	if (rc == 0) {
		while (sem_wait(&w->sem))
			; /* EINTR */
		rc = w->rc;
	}
	sem_destroy(&w->sem);
	return rc;
}

static void sync_init(struct c41_sync *w, COMPOUND4res *out)
{
	memset(w, 0, sizeof(*w));
	sem_init(&w->sem, 0, 0);
	w->out = out;
	memset(out, 0, sizeof(*out));
}

int nfs41c_compound_raw_auth(struct nfsd_clnt *clnt, const struct nfsd_clnt_auth *auth,
			     const char *tag, uint32_t minorversion, const nfs_argop4 *ops,
			     unsigned nops, COMPOUND4res *res, struct xdr_arena *arena)
{
	COMPOUND4args args = {
	    .tag = xdr_string_of(tag ? tag : ""),
	    .minorversion = minorversion,
	    .argarray = {nops, (nfs_argop4 *)ops},
	};
	struct c41_sync w;
	sync_init(&w, res);
	return sync_wait(&w, call_start_auth(clnt, NULL, 0, auth, &args, arena, NULL, sync_done,
					     &w));
}

int nfs41c_compound_raw_sys_async(struct nfsd_clnt *clnt, uint32_t uid, uint32_t gid,
				  uint32_t minorversion, const nfs_argop4 *ops, unsigned nops,
				  nfs41c_cb cb, void *ctx)
{
	COMPOUND4args args = {
	    .tag = xdr_string_of(""),
	    .minorversion = minorversion,
	    .argarray = {nops, (nfs_argop4 *)ops},
	};
	struct c41_sys sys = {uid, gid};
	return call_start_cred(clnt, NULL, 0, NULL, &sys, &args, NULL, NULL, cb, ctx);
}

int nfs41c_compound_raw_sys(struct nfsd_clnt *clnt, uint32_t uid, uint32_t gid,
			    uint32_t minorversion, const nfs_argop4 *ops, unsigned nops,
			    COMPOUND4res *res, struct xdr_arena *arena)
{
	COMPOUND4args args = {
	    .tag = xdr_string_of(""),
	    .minorversion = minorversion,
	    .argarray = {nops, (nfs_argop4 *)ops},
	};
	struct c41_sys sys = {uid, gid};
	struct c41_sync w;
	sync_init(&w, res);
	return sync_wait(
	    &w, call_start_cred(clnt, NULL, 0, NULL, &sys, &args, arena, NULL, sync_done, &w));
}

int nfs41c_compound_raw(struct nfsd_clnt *clnt, const char *tag, uint32_t minorversion,
			const nfs_argop4 *ops, unsigned nops, COMPOUND4res *res,
			struct xdr_arena *arena)
{
	return nfs41c_compound_raw_auth(clnt, NULL, tag, minorversion, ops, nops, res, arena);
}

static int seq_start(struct nfs41c_session *s, struct nfsd_clnt *clnt, unsigned flags,
		     const nfs_argop4 *ops, unsigned nops, struct xdr_arena *arena,
		     const struct nfsd_sink *sink, nfs41c_cb cb, void *ctx)
{
	nfs_argop4 *all = calloc(nops + 1u, sizeof(*all));
	if (!all)
		return -ENOMEM;
	unsigned slot;
	uint32_t seqid, highest;
	int rc = slot_take(s, &slot, &seqid, &highest);
	if (rc) {
		free(all);
		return rc;
	}
	SEQUENCE4args *sa = &all[0].u.opsequence;
	all[0].argop = OP_SEQUENCE;
	memcpy(sa->sa_sessionid, s->info.sessionid, sizeof(sa->sa_sessionid));
	sa->sa_sequenceid = seqid;
	sa->sa_slotid = slot;
	sa->sa_highest_slotid = highest;
	sa->sa_cachethis = flags & NFS41C_CACHETHIS;
	if (nops)
		memcpy(&all[1], ops, nops * sizeof(*ops));
	COMPOUND4args args = {
	    .tag = xdr_string_of(""),
	    .minorversion = (flags & NFS41C_MINOR2) ? 2 : 1,
	    .argarray = {nops + 1u, all},
	};
	rc = call_start(clnt ? clnt : s->clnt, s, slot, &args, arena, sink, cb, ctx);
	free(all);
	if (rc)
		slot_give(s, slot, 1, NULL); /* never sent: the seqid is unused */
	return rc;
}

int nfs41c_compound_async(struct nfs41c_session *s, struct nfsd_clnt *clnt, unsigned flags,
			  const nfs_argop4 *ops, unsigned nops, nfs41c_cb cb, void *ctx)
{
	return seq_start(s, clnt, flags, ops, nops, NULL, NULL, cb, ctx);
}

int nfs41c_compound_async_sink(struct nfs41c_session *s, struct nfsd_clnt *clnt, unsigned flags,
			       const nfs_argop4 *ops, unsigned nops, const struct nfsd_sink *sink,
			       nfs41c_cb cb, void *ctx)
{
	return seq_start(s, clnt, flags, ops, nops, NULL, sink, cb, ctx);
}

int nfs41c_compound_ex(struct nfs41c_session *s, struct nfsd_clnt *clnt, unsigned flags,
		       const nfs_argop4 *ops, unsigned nops, COMPOUND4res *res,
		       struct xdr_arena *arena)
{
	struct c41_sync w;
	sync_init(&w, res);
	return sync_wait(&w, seq_start(s, clnt, flags, ops, nops, arena, NULL, sync_done, &w));
}

int nfs41c_compound(struct nfs41c_session *s, const nfs_argop4 *ops, unsigned nops,
		    COMPOUND4res *res, struct xdr_arena *arena)
{
	return nfs41c_compound_ex(s, NULL, 0, ops, nops, res, arena);
}

/* ------------------------------------------------------------ sessions */

/* One raw op; its result status, or the call's error. */
static int raw1_minor(struct nfsd_clnt *clnt, const struct nfsd_clnt_auth *auth, uint32_t minor,
		      const nfs_argop4 *op, nfs_resop4 *out, struct xdr_arena *arena)
{
	COMPOUND4res res;
	int rc = nfs41c_compound_raw_auth(clnt, auth, NULL, minor, op, 1, &res, arena);
	if (rc)
		return rc;
	if (res.resarray.len != 1 || res.resarray.val[0].resop != op->argop)
		return res.status ? res.status : -EPROTO;
	*out = res.resarray.val[0];
	return res.status;
}

static int raw1_auth(struct nfsd_clnt *clnt, const struct nfsd_clnt_auth *auth,
		     const nfs_argop4 *op, nfs_resop4 *out, struct xdr_arena *arena)
{
	return raw1_minor(clnt, auth, 1, op, out, arena);
}

/* co_verifier when the caller gives none: one per process, so a second
 * session of the same owner finds the confirmed client (RFC 8881 §18.35.5
 * case 2) and a restarted process looks rebooted (case 5). */
static uint64_t proc_verf;

static void proc_verf_init(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	proc_verf =
	    ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) ^ (uint64_t)getpid() << 40;
}

static uint64_t process_verifier(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, proc_verf_init);
	return proc_verf;
}

int nfs41c_session_create_opts(struct nfsd_clnt *clnt, const struct nfs41c_session_opts *o,
			       struct nfs41c_session **sessp)
{
	struct xdr_arena arena;
	xdr_arena_init(&arena, NULL, 0, 1u << 20);
	uint64_t verf = o->verifier ? o->verifier : process_verifier();
	nfs_argop4 op = {.argop = OP_EXCHANGE_ID};
	nfs_resop4 res;
	EXCHANGE_ID4args *ea = &op.u.opexchange_id;
	for (int i = 0; i < 8; i++)
		ea->eia_clientowner.co_verifier[i] = (uint8_t)(verf >> (56 - 8 * i));
	ea->eia_clientowner.co_ownerid = xdr_opaque_of(o->owner, strlen(o->owner));
	ea->eia_flags = o->exchgid_flags;
	ea->eia_state_protect.spa_how = SP4_NONE;
	/* what the Linux client asks (fs/nfs/nfs4proc.c, nfs4_sp4_mach_cred_request) */
	uint32_t enforce[2] = {0, 1u << (OP_BIND_CONN_TO_SESSION - 32) |
				      1u << (OP_EXCHANGE_ID - 32) | 1u << (OP_CREATE_SESSION - 32) |
				      1u << (OP_DESTROY_SESSION - 32) |
				      1u << (OP_DESTROY_CLIENTID - 32)};
	uint32_t allow[2] = {1u << OP_CLOSE | 1u << OP_OPEN_DOWNGRADE | 1u << OP_LOCKU |
				 1u << OP_DELEGRETURN | 1u << OP_COMMIT,
			     1u << (OP_SECINFO - 32) | 1u << (OP_SECINFO_NO_NAME - 32) |
				 1u << (OP_LAYOUTRETURN - 32) | 1u << (OP_TEST_STATEID - 32) |
				 1u << (OP_FREE_STATEID - 32) | 1u << (OP_WRITE - 32)};
	if (o->mach_cred) {
		ea->eia_state_protect.spa_how = SP4_MACH_CRED;
		ea->eia_state_protect.u.spa_mach_ops.spo_must_enforce = (bitmap4){2, enforce};
		ea->eia_state_protect.u.spa_mach_ops.spo_must_allow = (bitmap4){2, allow};
	}
	uint32_t minor = o->minorversion ? o->minorversion : 1;
	int rc = raw1_minor(clnt, o->auth, minor, &op, &res, &arena);
	if (rc) {
		xdr_arena_release(&arena);
		return rc;
	}
	EXCHANGE_ID4resok eid = res.u.opexchange_id.u.eir_resok4;
	uint32_t sp_how = eid.eir_state_protect.spr_how, sp_enf[2] = {0, 0}, sp_allow[2] = {0, 0};
	if (sp_how == SP4_MACH_CRED) {
		const state_protect_ops4 *m = &eid.eir_state_protect.u.spr_mach_ops;
		for (uint32_t k = 0; k < 2 && k < m->spo_must_enforce.len; k++)
			sp_enf[k] = m->spo_must_enforce.val[k];
		for (uint32_t k = 0; k < 2 && k < m->spo_must_allow.len; k++)
			sp_allow[k] = m->spo_must_allow.val[k];
	}

	callback_sec_parms4 sec = {.cb_secflavor = NFSD_AUTH_NONE};
	memset(&op, 0, sizeof(op));
	op.argop = OP_CREATE_SESSION;
	CREATE_SESSION4args *ca = &op.u.opcreate_session;
	ca->csa_clientid = eid.eir_clientid;
	ca->csa_sequence = eid.eir_sequenceid;
	ca->csa_flags = o->create_flags;
	ca->csa_fore_chan_attrs = (channel_attrs4){
	    .ca_maxrequestsize = o->max_req ? o->max_req : (1u << 20) + (64u << 10),
	    .ca_maxresponsesize = o->max_resp ? o->max_resp : (1u << 20) + (64u << 10),
	    .ca_maxresponsesize_cached = o->max_resp_cached ? o->max_resp_cached : 16u << 10,
	    .ca_maxoperations = o->max_ops ? o->max_ops : 64,
	    .ca_maxrequests = o->slots ? o->slots : 64,
	};
	ca->csa_back_chan_attrs = (channel_attrs4){
	    .ca_maxrequestsize = 4096,
	    .ca_maxresponsesize = 4096,
	    .ca_maxresponsesize_cached = 0,
	    .ca_maxoperations = 2,
	    .ca_maxrequests = 1,
	};
	ca->csa_cb_program = o->cb_program;
	ca->csa_sec_parms.len = o->ncb_sec ? o->ncb_sec : 1;
	ca->csa_sec_parms.val = o->ncb_sec ? (callback_sec_parms4 *)o->cb_sec : &sec;
	rc = raw1_minor(clnt, o->auth, minor, &op, &res, &arena);
	if (rc) {
		xdr_arena_release(&arena);
		return rc;
	}
	CREATE_SESSION4resok *cs = &res.u.opcreate_session.u.csr_resok4;

	struct nfs41c_session *s = calloc(1, sizeof(*s));
	unsigned n = cs->csr_fore_chan_attrs.ca_maxrequests;
	struct c41_slot *slots = n ? calloc(n, sizeof(*slots)) : NULL;
	if (!s || !slots) {
		free(s);
		free(slots);
		xdr_arena_release(&arena);
		return -ENOMEM;
	}
	s->clnt = clnt;
	s->info.clientid = eid.eir_clientid;
	memcpy(s->info.sessionid, cs->csr_sessionid, sizeof(s->info.sessionid));
	s->info.exchgid_flags = eid.eir_flags;
	s->info.create_flags = cs->csr_flags;
	s->info.fore = cs->csr_fore_chan_attrs;
	s->info.back = cs->csr_back_chan_attrs;
	s->info.fore.ca_rdma_ird.len = s->info.back.ca_rdma_ird.len = 0;
	s->info.fore.ca_rdma_ird.val = s->info.back.ca_rdma_ird.val = NULL;
	s->info.sp_how = sp_how;
	memcpy(s->info.sp_enforce, sp_enf, sizeof(sp_enf));
	memcpy(s->info.sp_allow, sp_allow, sizeof(sp_allow));
	s->auth = o->auth;
	s->nslots = n;
	s->slots = slots;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	xdr_arena_release(&arena);
	*sessp = s;
	return 0;
}

int nfs41c_session_create(struct nfsd_clnt *clnt, const char *owner, uint32_t exchgid_flags,
			  struct nfs41c_session **sess)
{
	struct nfs41c_session_opts o = {.owner = owner, .exchgid_flags = exchgid_flags};
	return nfs41c_session_create_opts(clnt, &o, sess);
}

int nfs41c_session_destroy(struct nfs41c_session *s)
{
	struct xdr_arena arena;
	xdr_arena_init(&arena, NULL, 0, 1u << 20);
	nfs_argop4 op = {.argop = OP_DESTROY_SESSION};
	nfs_resop4 res;
	memcpy(op.u.opdestroy_session.dsa_sessionid, s->info.sessionid, NFS4_SESSIONID_SIZE);
	int rc = raw1_auth(s->clnt, s->auth, &op, &res, &arena);
	if (!rc) {
		op = (nfs_argop4){.argop = OP_DESTROY_CLIENTID};
		op.u.opdestroy_clientid.dca_clientid = s->info.clientid;
		rc = raw1_auth(s->clnt, s->auth, &op, &res, &arena);
	}
	xdr_arena_release(&arena);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s->slots);
	free(s);
	return rc;
}

void nfs41c_session_info(const struct nfs41c_session *s, struct nfs41c_session_info *info)
{
	*info = s->info;
}

unsigned nfs41c_session_dead_slots(struct nfs41c_session *s)
{
	pthread_mutex_lock(&s->lock);
	unsigned n = s->ndead;
	pthread_mutex_unlock(&s->lock);
	return n;
}

int nfs41c_session_bind(struct nfs41c_session *s, struct nfsd_clnt *clnt,
			channel_dir_from_client4 dir, channel_dir_from_server4 *got)
{
	struct xdr_arena arena;
	xdr_arena_init(&arena, NULL, 0, 1u << 20);
	nfs_argop4 op = {.argop = OP_BIND_CONN_TO_SESSION};
	nfs_resop4 res;
	BIND_CONN_TO_SESSION4args *ba = &op.u.opbind_conn_to_session;
	memcpy(ba->bctsa_sessid, s->info.sessionid, NFS4_SESSIONID_SIZE);
	ba->bctsa_dir = dir;
	int rc = raw1_auth(clnt, s->auth, &op, &res, &arena);
	if (!rc && got)
		*got = res.u.opbind_conn_to_session.u.bctsr_resok4.bctsr_dir;
	xdr_arena_release(&arena);
	return rc;
}

void nfs41c_session_set_cred(struct nfs41c_session *sess, uint32_t uid, uint32_t gid)
{
	pthread_mutex_lock(&sess->lock);
	sess->auth_sys = true;
	sess->uid = uid;
	sess->gid = gid;
	sess->auth = NULL;
	pthread_mutex_unlock(&sess->lock);
}

void nfs41c_session_set_auth(struct nfs41c_session *sess, const struct nfsd_clnt_auth *auth)
{
	pthread_mutex_lock(&sess->lock);
	sess->auth = auth;
	pthread_mutex_unlock(&sess->lock);
}
