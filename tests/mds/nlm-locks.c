/* SPDX-License-Identifier: MIT */
/*
 * NLM v4 (RFC 1813 Appendix II, XNFS) and NSM on braid-mds, against an
 * in-process MDS, with a fake client host on loopback: one RPC server that
 * is its rpcbind (PMAP GETPORT: every program at its own port; braid-mds
 * finds it through [mds] nlm_rpcbind_port), its NLM service (GRANTED,
 * GRANTED_MSG, the _RES calls) and its statd (SM_NOTIFY).
 *
 * Locks, tests and unlocks between NLM owners (caller_name, svid, oh),
 * ranges to EOF; NLM and NFSv4 locks conflicting both ways (LOCK4denied
 * naming the NLM owner, TEST naming the NFSv4 lock-owner); a blocking lock
 * granted by a GRANTED callback when an NFSv4 LOCKU or an NLM UNLOCK frees
 * it, and released when the client refuses the grant; CANCEL; the _MSG
 * forms answered by _RES calls; SHARE/UNSHARE (against NFSv4 opens too);
 * FREE_ALL, SM_NOTIFY and a changed NSM state freeing a host's locks;
 * garbage and bad handles; and a restart: SM_NOTIFY with the new NSM state,
 * DENIED_GRACE_PERIOD for new locks and TEST in grace, reclaim granted,
 * the reclaimed lock conflicting after grace, hosts without locks
 * forgotten; an NFSv4 client's write delegation recalled by an NLM LOCK
 * (DENIED_GRACE_PERIOD until it is returned).  Last, with lease_time = 2s, a blocked NLM request granted
 * when the NFSv4 client holding the range goes silent and its lease runs
 * out (no NFSv4 traffic at all to trigger expiry), and without nsm_name
 * the SM_NOTIFY after a restart naming the server by the address the host
 * called.
 */
#include "config.h"

#include "nlm_prot.h"
#include "rpcb_prot.h"
#include "sm_inter.h"

#include <pthread.h>
#include <time.h>

#include "tests/mds/mds-test.h"
#include "tests/mds/state-test.h"

#include "tests/mds/deleg-test.h"

#define RW	 OPEN4_SHARE_ACCESS_BOTH
#define DN	 OPEN4_SHARE_DENY_NONE
#define NSM_NAME "braid-nlm-test"

/* ------------------------------------------------------------ the fake client host */

struct ev {
	uint32_t prog, proc;
	int32_t stat, state, svid;
	uint64_t off, len;
	char name[64];
	char from[INET6_ADDRSTRLEN]; /* the caller's address (GRANTED) */
	uint32_t cookie_len;
	uint8_t cookie[16];
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct ev v[512];
	unsigned n;
	int32_t granted_answer; /* what GRANTED answers */
	int port;
} E = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void ev_add(const struct ev *e)
{
	pthread_mutex_lock(&E.mu);
	if (E.n < sizeof(E.v) / sizeof(E.v[0]))
		E.v[E.n++] = *e;
	pthread_cond_broadcast(&E.cv);
	pthread_mutex_unlock(&E.mu);
}

static unsigned ev_count(void)
{
	pthread_mutex_lock(&E.mu);
	unsigned n = E.n;
	pthread_mutex_unlock(&E.mu);
	return n;
}

/* The first event of prog/proc at index >= from, within secs; its copy in *out. */
static bool ev_wait(uint32_t prog, uint32_t proc, unsigned from, double secs, struct ev *out)
{
	double end = ts_now() + secs;
	pthread_mutex_lock(&E.mu);
	for (;;) {
		for (unsigned i = from; i < E.n; i++)
			if (E.v[i].prog == prog && E.v[i].proc == proc) {
				if (out)
					*out = E.v[i];
				pthread_mutex_unlock(&E.mu);
				return true;
			}
		if (ts_now() >= end)
			break;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&E.cv, &E.mu, &ts);
	}
	pthread_mutex_unlock(&E.mu);
	return false;
}

static void ev_cookie(struct ev *e, const netobj *c)
{
	e->cookie_len = c->len < sizeof(e->cookie) ? c->len : sizeof(e->cookie);
	memcpy(e->cookie, c->val, e->cookie_len);
}

static int f_getport(struct nfsd_req *req, void *argp, void *resp)
{
	(void)req;
	const mapping *m = argp;
	uint32_t *port = resp;
	*port = m->prot == PMAP_IPPROTO_TCP ? (uint32_t)E.port : 0;
	return NFSD_SUCCESS;
}

static int f_granted(struct nfsd_req *req, void *argp, void *resp)
{
	const nlm4_testargs *a = argp;
	struct ev e = {.prog = NLM_PROG,
		       .proc = req->proc,
		       .svid = a->alock.svid,
		       .off = a->alock.l_offset,
		       .len = a->alock.l_len};
	snprintf(e.name, sizeof(e.name), "%.*s", (int)a->alock.caller_name.len,
		 (const char *)a->alock.caller_name.val);
	ev_cookie(&e, &a->cookie);
	const struct sockaddr_storage *peer = nfsd_req_peer(req);
	if (peer->ss_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)peer)->sin_addr, e.from,
			  sizeof(e.from));
	pthread_mutex_lock(&E.mu);
	e.stat = E.granted_answer;
	pthread_mutex_unlock(&E.mu);
	if (req->proc == NLMPROC4_GRANTED) {
		nlm4_res *r = resp;
		r->cookie = a->cookie;
		r->stat.stat = e.stat;
	}
	ev_add(&e);
	return NFSD_SUCCESS;
}

static int f_res(struct nfsd_req *req, void *argp, void *resp)
{
	(void)resp;
	const nlm4_res *a = argp;
	struct ev e = {.prog = NLM_PROG, .proc = req->proc, .stat = a->stat.stat};
	ev_cookie(&e, &a->cookie);
	ev_add(&e);
	return NFSD_SUCCESS;
}

static int f_test_res(struct nfsd_req *req, void *argp, void *resp)
{
	(void)resp;
	const nlm4_testres *a = argp;
	struct ev e = {.prog = NLM_PROG, .proc = req->proc, .stat = a->stat.stat};
	if (a->stat.stat == NLM4_DENIED) {
		e.svid = a->stat.u.holder.svid;
		e.off = a->stat.u.holder.l_offset;
		e.len = a->stat.u.holder.l_len;
	}
	ev_cookie(&e, &a->cookie);
	ev_add(&e);
	return NFSD_SUCCESS;
}

static int f_notify(struct nfsd_req *req, void *argp, void *resp)
{
	(void)resp;
	const sm_stat_chge *a = argp;
	struct ev e = {.prog = SM_PROG, .proc = req->proc, .state = a->state};
	snprintf(e.name, sizeof(e.name), "%.*s", (int)a->mon_name.len,
		 (const char *)a->mon_name.val);
	ev_add(&e);
	return NFSD_SUCCESS;
}

static struct nfsd_proc pmap_procs[PMAPPROC_CALLIT + 1] = {
    [PMAPPROC_GETPORT] = {.name = "GETPORT", .fn = f_getport},
};
static struct nfsd_proc nlm_procs[NLMPROC4_GRANTED_RES + 1] = {
    [NLMPROC4_GRANTED] = {.name = "GRANTED", .fn = f_granted},
    [NLMPROC4_GRANTED_MSG] = {.name = "GRANTED_MSG", .fn = f_granted},
    [NLMPROC4_TEST_RES] = {.name = "TEST_RES", .fn = f_test_res},
    [NLMPROC4_LOCK_RES] = {.name = "LOCK_RES", .fn = f_res},
    [NLMPROC4_CANCEL_RES] = {.name = "CANCEL_RES", .fn = f_res},
    [NLMPROC4_UNLOCK_RES] = {.name = "UNLOCK_RES", .fn = f_res},
    [NLMPROC4_GRANTED_RES] = {.name = "GRANTED_RES", .fn = f_res},
};
static struct nfsd_proc sm_procs[SM_NOTIFY + 1] = {
    [SM_NOTIFY] = {.name = "NOTIFY", .fn = f_notify},
};

static struct nfsd_server *fake_host_start(void)
{
	nfsd_procs_bind(pmap_procs, PMAPPROC_CALLIT + 1, &xdr_desc_RPCBPROG_PMAPVERS);
	nfsd_procs_bind(nlm_procs, NLMPROC4_GRANTED_RES + 1, &xdr_desc_NLM_PROG_NLM4_VERS);
	nfsd_procs_bind(sm_procs, SM_NOTIFY + 1, &xdr_desc_SM_PROG_SM_VERS);
	static struct nfsd_version pv = {
	    .vers = PMAPVERS, .procs = pmap_procs, .nprocs = PMAPPROC_CALLIT + 1};
	static struct nfsd_version nv = {
	    .vers = NLM4_VERS, .procs = nlm_procs, .nprocs = NLMPROC4_GRANTED_RES + 1};
	static struct nfsd_version sv = {
	    .vers = SM_VERS, .procs = sm_procs, .nprocs = SM_NOTIFY + 1};
	static struct nfsd_program progs[3];
	progs[0] = (struct nfsd_program){
	    .prog = RPCBPROG, .name = "rpcbind", .versions = &pv, .nversions = 1};
	progs[1] =
	    (struct nfsd_program){.prog = NLM_PROG, .name = "nlm", .versions = &nv, .nversions = 1};
	progs[2] = (struct nfsd_program){
	    .prog = SM_PROG, .name = "statd", .versions = &sv, .nversions = 1};
	struct nfsd_server_opts o;
	nfsd_server_opts_default(&o);
	o.nloops = 1;
	o.nworkers = 2;
	int err = 0;
	struct nfsd_server *s = nfsd_server_new(&o, &err);
	CHECK(s);
	for (unsigned i = 0; i < 3; i++)
		CHECK_EQ(nfsd_server_add_program(s, &progs[i]), 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK_EQ(nfsd_server_listen(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	CHECK_EQ(nfsd_server_start(s), 0);
	E.port = nfsd_server_listen_port(s, 0);
	CHECK(E.port > 0);
	E.granted_answer = NLM4_GRANTED;
	return s;
}

/* ------------------------------------------------------------ NLM calls */

static int call_prog(struct mt *t, uint32_t prog, uint32_t vers, uint32_t proc,
		     const struct xdr_vers_desc *vd, const void *args, void *res,
		     struct xdr_arena *ar)
{
	const struct xdr_proc_desc *d = &vd->procs[proc];
	struct nfsd_call_opts o = {
	    .prog = prog,
	    .vers = vers,
	    .proc = proc,
	    .enc_args = d->arg_size ? d->enc_arg : NULL,
	    .args = args,
	    .timeout_ms = 30000,
	    .flavor = NFSD_AUTH_SYS,
	    .machine = "nlm-test",
	};
	return nfsd_clnt_call(t->c, &o, d->res_size ? d->dec_res : (xdr_dec_fn)xdr_dec_void, res,
			      ar);
}

static int nlm(struct mt *t, uint32_t proc, const void *args, void *res, struct xdr_arena *ar)
{
	return call_prog(t, NLM_PROG, NLM4_VERS, proc, &xdr_desc_NLM_PROG_NLM4_VERS, args, res, ar);
}

struct own {
	const char *host;
	int32_t svid;
	const char *oh;
};

static const struct own A = {"client-a", 1, "oh-a"}, B = {"client-b", 2, "oh-b"},
			C = {"client-c", 3, "oh-c"};

static nlm4_lock lock_of(const struct ts_fh *f, const struct own *o, uint64_t off, uint64_t len)
{
	nlm4_lock l = {.caller_name = xdr_string_of(o->host),
		       .fh = xdr_opaque_of(f->b, f->len),
		       .oh = xdr_string_of(o->oh),
		       .svid = o->svid,
		       .l_offset = off,
		       .l_len = len};
	return l;
}

static const char cookie[] = "cookie-1";

static nlm4_lockargs lockargs(const struct ts_fh *f, const struct own *o, bool excl, uint64_t off,
			      uint64_t len, bool block, bool reclaim, int32_t state)
{
	nlm4_lockargs a = {.cookie = xdr_string_of(cookie),
			   .block = block,
			   .exclusive = excl,
			   .alock = lock_of(f, o, off, len),
			   .reclaim = reclaim,
			   .state = state};
	return a;
}

static nlm4_stats nlm_lock(struct mt *t, const struct ts_fh *f, const struct own *o, bool excl,
			   uint64_t off, uint64_t len, bool block, bool reclaim, int32_t state)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	nlm4_lockargs a = lockargs(f, o, excl, off, len, block, reclaim, state);
	nlm4_res r;
	CHECK_EQ(nlm(t, NLMPROC4_LOCK, &a, &r, &ar), 0);
	CHECK_EQ(r.cookie.len, strlen(cookie));
	CHECK(!memcmp(r.cookie.val, cookie, r.cookie.len));
	xdr_arena_release(&ar);
	return r.stat.stat;
}

struct holder {
	bool exclusive;
	int32_t svid;
	char oh[64];
	uint64_t off, len;
};

static nlm4_stats nlm_test(struct mt *t, const struct ts_fh *f, const struct own *o, bool excl,
			   uint64_t off, uint64_t len, struct holder *h)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	nlm4_testargs a = {
	    .cookie = xdr_string_of(cookie), .exclusive = excl, .alock = lock_of(f, o, off, len)};
	nlm4_testres r;
	CHECK_EQ(nlm(t, NLMPROC4_TEST, &a, &r, &ar), 0);
	if (r.stat.stat == NLM4_DENIED && h) {
		const nlm4_holder *x = &r.stat.u.holder;
		h->exclusive = x->exclusive;
		h->svid = x->svid;
		snprintf(h->oh, sizeof(h->oh), "%.*s", (int)x->oh.len, (const char *)x->oh.val);
		h->off = x->l_offset;
		h->len = x->l_len;
	}
	xdr_arena_release(&ar);
	return r.stat.stat;
}

static nlm4_stats nlm_unlock(struct mt *t, const struct ts_fh *f, const struct own *o, uint64_t off,
			     uint64_t len)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	nlm4_unlockargs a = {.cookie = xdr_string_of(cookie), .alock = lock_of(f, o, off, len)};
	nlm4_res r;
	CHECK_EQ(nlm(t, NLMPROC4_UNLOCK, &a, &r, &ar), 0);
	xdr_arena_release(&ar);
	return r.stat.stat;
}

static nlm4_stats nlm_cancel(struct mt *t, const struct ts_fh *f, const struct own *o, bool excl,
			     uint64_t off, uint64_t len)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	nlm4_cancargs a = {.cookie = xdr_string_of(cookie),
			   .block = true,
			   .exclusive = excl,
			   .alock = lock_of(f, o, off, len)};
	nlm4_res r;
	CHECK_EQ(nlm(t, NLMPROC4_CANCEL, &a, &r, &ar), 0);
	xdr_arena_release(&ar);
	return r.stat.stat;
}

static nlm4_stats nlm_share(struct mt *t, uint32_t proc, const struct ts_fh *f, const struct own *o,
			    fsh4_access access, fsh4_mode deny)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	nlm4_shareargs a = {.cookie = xdr_string_of(cookie),
			    .share = {.caller_name = xdr_string_of(o->host),
				      .fh = xdr_opaque_of(f->b, f->len),
				      .oh = xdr_string_of(o->oh),
				      .mode = deny,
				      .access = access}};
	nlm4_shareres r;
	CHECK_EQ(nlm(t, proc, &a, &r, &ar), 0);
	xdr_arena_release(&ar);
	return r.stat;
}

/* A _MSG call (void reply); its _RES must come to the fake host. */
static struct ev msg_call(struct mt *t, uint32_t proc, const void *args, uint32_t res_proc)
{
	unsigned from = ev_count();
	CHECK_EQ(nlm(t, proc, args, NULL, NULL), 0);
	struct ev e;
	CHECK(ev_wait(NLM_PROG, res_proc, from, 10, &e));
	CHECK_EQ(e.cookie_len, strlen(cookie));
	CHECK(!memcmp(e.cookie, cookie, e.cookie_len));
	return e;
}

/* Arguments that are not what the procedure takes. */
static int enc_junk(struct xdr_enc *e, const void *arg)
{
	const uint32_t *w = arg;
	for (unsigned i = 0; i < 4; i++)
		if (xdr_enc_uint32(e, w[i]))
			return -1;
	return 0;
}

static void check_garbage(struct mt *t, uint32_t proc, const uint32_t junk[4])
{
	struct nfsd_call_opts o = {.prog = NLM_PROG,
				   .vers = NLM4_VERS,
				   .proc = proc,
				   .enc_args = enc_junk,
				   .args = junk,
				   .timeout_ms = 30000,
				   .flavor = NFSD_AUTH_SYS,
				   .machine = "nlm-test"};
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	nlm4_res r;
	CHECK_EQ(nfsd_clnt_call(t->c, &o, (xdr_dec_fn)xdr_dec_nlm4_res, &r, &ar),
		 NFSD_CALL_ERR_ACCEPT | NFSD_GARBAGE_ARGS);
	xdr_arena_release(&ar);
}

static bool nsm_recorded(struct mt *t, const char *host)
{
	char key[128];
	snprintf(key, sizeof(key), "braid-nsm:host:%s", host);
	struct mds_client_rec rec;
	int rc = mds_client_get(braid_mds_store(t->mds), key, strlen(key), &rec);
	CHECK(rc == 0 || rc == -ENOENT);
	CHECK(rc || (rec.flags & MDS_CLIENT_NSM));
	return rc == 0;
}

int main(void)
{
	struct nfsd_server *fake = fake_host_start();
	struct mt t;
	char conf[256];
	/* a second address: callbacks must come from the one the client called */
	snprintf(conf, sizeof(conf),
		 "listen = 127.0.0.2:0\nnlm_rpcbind_port = %d\nnsm_name = " NSM_NAME "\n", E.port);
	mt_start(&t, "/ *(rw,no_root_squash,insecure)\n", conf);
	struct nfs41c_session *s4 = ts_session(&t, "nlm-v4-client", 0, 0);
	struct ts_openres o4;
	CHECK_EQ(ts_open_name(s4, NULL, "o4", "f-nlm", RW, DN, true, &o4), NFS4_OK);
	const struct ts_fh *f = &o4.fh;
	struct holder h;
	struct ev e;
	struct ts_denied d;
	stateid4 l4, x4;

	/* NULL; other versions are PROG_MISMATCH */
	CHECK_EQ(nlm(&t, NLMPROC4_NULL, NULL, NULL, NULL), 0);
	CHECK_EQ(call_prog(&t, NLM_PROG, 3, 0, &xdr_desc_NLM_PROG_NLM4_VERS, NULL, NULL, NULL),
		 NFSD_CALL_ERR_ACCEPT | NFSD_PROG_MISMATCH);

	/* lock, test, unlock between two owners */
	CHECK_EQ(nlm_lock(&t, f, &A, true, 0, 100, false, false, 1), NLM4_GRANTED);
	CHECK_EQ(nlm_test(&t, f, &B, true, 50, 1, &h), NLM4_DENIED);
	CHECK(h.exclusive);
	CHECK_EQ(h.svid, A.svid);
	CHECK(!strcmp(h.oh, A.oh));
	CHECK_EQ(h.off, 0);
	CHECK_EQ(h.len, 100);
	CHECK_EQ(nlm_test(&t, f, &A, true, 50, 1, NULL), NLM4_GRANTED); /* its own */
	CHECK_EQ(nlm_lock(&t, f, &B, false, 50, 10, false, false, 1), NLM4_DENIED);
	/* the same svid and oh from another host is another owner */
	struct own a2 = {"client-a2", A.svid, A.oh};
	CHECK_EQ(nlm_lock(&t, f, &a2, false, 99, 1, false, false, 1), NLM4_DENIED);
	CHECK_EQ(nlm_unlock(&t, f, &A, 0, 100), NLM4_GRANTED);
	CHECK_EQ(nlm_lock(&t, f, &B, false, 50, 10, false, false, 1), NLM4_GRANTED);
	CHECK_EQ(nlm_lock(&t, f, &C, false, 55, 1, false, false, 1), NLM4_GRANTED); /* shared */
	CHECK_EQ(nlm_unlock(&t, f, &C, 0, 0), NLM4_GRANTED);
	/* l_len 0: to the end of the file, whatever its size */
	CHECK_EQ(nlm_lock(&t, f, &A, true, 1000, 0, false, false, 1), NLM4_GRANTED);
	CHECK_EQ(nlm_test(&t, f, &C, false, 1ull << 50, 1, &h), NLM4_DENIED);
	CHECK_EQ(h.off, 1000);
	CHECK_EQ(h.len, 0);
	CHECK_EQ(nlm_unlock(&t, f, &A, 1000, 0), NLM4_GRANTED);
	CHECK_EQ(nlm_test(&t, f, &C, true, 1ull << 50, 1, NULL), NLM4_GRANTED);

	/* NFSv4 LOCK denied by an NLM lock, told the NLM owner */
	CHECK_EQ(ts_lock(s4, f, WRITE_LT, false, 0, 100, &o4.sid, "lo4", NULL, &d), NFS4ERR_DENIED);
	CHECK_EQ(d.offset, 50);
	CHECK_EQ(d.length, 10);
	CHECK_EQ(d.type, READ_LT);
	CHECK_EQ(d.clientid, 0);
	CHECK(!strcmp(d.owner, B.oh));
	CHECK_EQ(ts_lockt(s4, f, WRITE_LT, 55, 1, "lo4", NULL), NFS4ERR_DENIED);
	/* and the reverse: NLM TEST and LOCK meet the NFSv4 lock-owner's lock */
	CHECK_EQ(ts_lock(s4, f, WRITE_LT, false, 2000, 10, &o4.sid, "lo4", &l4, NULL), NFS4_OK);
	CHECK_EQ(nlm_test(&t, f, &C, false, 2005, 1, &h), NLM4_DENIED);
	CHECK(h.exclusive);
	CHECK_EQ(h.svid, 0);
	CHECK(!strcmp(h.oh, "lo4"));
	CHECK_EQ(h.off, 2000);
	CHECK_EQ(h.len, 10);
	CHECK_EQ(nlm_lock(&t, f, &C, false, 2009, 5, false, false, 1), NLM4_DENIED);

	/* blocking: BLOCKED, the NFSv4 holder unlocks, GRANTED reaches the client */
	unsigned from = ev_count();
	CHECK_EQ(nlm_lock(&t, f, &C, true, 2000, 10, true, false, 1), NLM4_BLOCKED);
	CHECK_EQ(nlm_lock(&t, f, &C, true, 2000, 10, true, false, 1), NLM4_BLOCKED); /* again */
	CHECK(!ev_wait(NLM_PROG, NLMPROC4_GRANTED, from, 0.7, NULL));
	CHECK_EQ(ts_locku(s4, f, &l4, 2000, 10, &x4), NFS4_OK);
	l4 = x4;
	CHECK(ev_wait(NLM_PROG, NLMPROC4_GRANTED, from, 10, &e));
	CHECK(!strcmp(e.name, C.host));
	CHECK_EQ(e.svid, C.svid);
	CHECK_EQ(e.off, 2000);
	CHECK_EQ(e.len, 10);
	CHECK_EQ(nlm_test(&t, f, &A, false, 2000, 1, &h), NLM4_DENIED);
	CHECK_EQ(h.svid, C.svid);
	CHECK_EQ(ts_lock(s4, f, READ_LT, false, 2000, 10, &l4, NULL, NULL, &d), NFS4ERR_DENIED);
	CHECK(!strcmp(d.owner, C.oh));
	CHECK_EQ(nlm_unlock(&t, f, &C, 2000, 10), NLM4_GRANTED);

	/* blocking behind an NLM holder, granted when it unlocks */
	CHECK_EQ(nlm_lock(&t, f, &A, true, 3000, 10, false, false, 1), NLM4_GRANTED);
	from = ev_count();
	CHECK_EQ(nlm_lock(&t, f, &C, true, 3000, 10, true, false, 1), NLM4_BLOCKED);
	CHECK_EQ(nlm_unlock(&t, f, &A, 3000, 10), NLM4_GRANTED);
	CHECK(ev_wait(NLM_PROG, NLMPROC4_GRANTED, from, 10, &e));
	CHECK_EQ(e.off, 3000);
	CHECK(!strcmp(e.from, "127.0.0.1"));
	CHECK_EQ(nlm_test(&t, f, &A, true, 3000, 10, NULL), NLM4_DENIED);
	CHECK_EQ(nlm_unlock(&t, f, &C, 3000, 10), NLM4_GRANTED);

	/* a client that called the server at 127.0.0.2 (from 127.0.0.1) gets
	 * its GRANTED from 127.0.0.2: Linux's lockd takes it from no other */
	struct nfsd_clnt *c1 = t.c;
	{
		struct sockaddr_in sa = {.sin_family = AF_INET,
					 .sin_port = htons((uint16_t)braid_mds_port(t.mds, 1)),
					 .sin_addr.s_addr = htonl(0x7f000002)};
		struct nfsd_clnt_opts co = {.timeout_ms = 30000};
		int err = 0;
		t.c = nfsd_clnt_new(t.eng, (struct sockaddr *)&sa, sizeof(sa), &co, &err);
		CHECK(t.c);
	}
	CHECK_EQ(nlm_lock(&t, f, &A, true, 3000, 10, false, false, 1), NLM4_GRANTED);
	from = ev_count();
	CHECK_EQ(nlm_lock(&t, f, &C, true, 3000, 10, true, false, 1), NLM4_BLOCKED);
	CHECK_EQ(nlm_unlock(&t, f, &A, 3000, 10), NLM4_GRANTED);
	CHECK(ev_wait(NLM_PROG, NLMPROC4_GRANTED, from, 10, &e));
	CHECK(!strcmp(e.from, "127.0.0.2"));
	CHECK_EQ(nlm_unlock(&t, f, &C, 3000, 10), NLM4_GRANTED);
	nfsd_clnt_free(t.c);
	t.c = c1;

	/* a client that refuses the grant does not keep the lock */
	CHECK_EQ(nlm_lock(&t, f, &A, true, 4000, 10, false, false, 1), NLM4_GRANTED);
	from = ev_count();
	CHECK_EQ(nlm_lock(&t, f, &C, true, 4000, 10, true, false, 1), NLM4_BLOCKED);
	pthread_mutex_lock(&E.mu);
	E.granted_answer = NLM4_DENIED;
	pthread_mutex_unlock(&E.mu);
	CHECK_EQ(nlm_unlock(&t, f, &A, 4000, 10), NLM4_GRANTED);
	CHECK(ev_wait(NLM_PROG, NLMPROC4_GRANTED, from, 10, NULL));
	double end = ts_now() + 5;
	while (nlm_test(&t, f, &A, true, 4000, 10, NULL) != NLM4_GRANTED && ts_now() < end)
		usleep(20000);
	CHECK_EQ(nlm_test(&t, f, &A, true, 4000, 10, NULL), NLM4_GRANTED);
	pthread_mutex_lock(&E.mu);
	E.granted_answer = NLM4_GRANTED;
	pthread_mutex_unlock(&E.mu);

	/* CANCEL: the queued request goes, nothing is granted later */
	CHECK_EQ(nlm_lock(&t, f, &A, true, 5000, 10, false, false, 1), NLM4_GRANTED);
	CHECK_EQ(nlm_lock(&t, f, &C, true, 5000, 10, true, false, 1), NLM4_BLOCKED);
	CHECK_EQ(nlm_cancel(&t, f, &C, true, 5000, 10), NLM4_GRANTED);
	from = ev_count();
	CHECK_EQ(nlm_unlock(&t, f, &A, 5000, 10), NLM4_GRANTED);
	CHECK(!ev_wait(NLM_PROG, NLMPROC4_GRANTED, from, 1.5, NULL));
	CHECK_EQ(nlm_test(&t, f, &B, true, 5000, 10, NULL), NLM4_GRANTED);

	/* the _MSG forms, answered by _RES calls to the caller's NLM service */
	nlm4_lockargs la = lockargs(f, &C, true, 6000, 10, false, false, 1);
	e = msg_call(&t, NLMPROC4_LOCK_MSG, &la, NLMPROC4_LOCK_RES);
	CHECK_EQ(e.stat, NLM4_GRANTED);
	nlm4_testargs ta = {
	    .cookie = xdr_string_of(cookie), .exclusive = false, .alock = lock_of(f, &B, 6005, 1)};
	e = msg_call(&t, NLMPROC4_TEST_MSG, &ta, NLMPROC4_TEST_RES);
	CHECK_EQ(e.stat, NLM4_DENIED);
	CHECK_EQ(e.svid, C.svid);
	CHECK_EQ(e.off, 6000);
	nlm4_lockargs lb = lockargs(f, &B, false, 6000, 10, true, false, 1);
	e = msg_call(&t, NLMPROC4_LOCK_MSG, &lb, NLMPROC4_LOCK_RES);
	CHECK_EQ(e.stat, NLM4_BLOCKED);
	from = ev_count();
	nlm4_unlockargs ua = {.cookie = xdr_string_of(cookie), .alock = lock_of(f, &C, 6000, 10)};
	e = msg_call(&t, NLMPROC4_UNLOCK_MSG, &ua, NLMPROC4_UNLOCK_RES);
	CHECK_EQ(e.stat, NLM4_GRANTED);
	CHECK(ev_wait(NLM_PROG, NLMPROC4_GRANTED_MSG, from, 10, &e)); /* a LOCK_MSG's grant */
	CHECK(!strcmp(e.name, B.host));
	CHECK_EQ(nlm_test(&t, f, &C, true, 6000, 1, &h), NLM4_DENIED);
	CHECK_EQ(h.svid, B.svid);
	nlm4_cancargs ca = {.cookie = xdr_string_of(cookie),
			    .block = true,
			    .exclusive = true,
			    .alock = lock_of(f, &C, 6000, 10)};
	e = msg_call(&t, NLMPROC4_CANCEL_MSG, &ca, NLMPROC4_CANCEL_RES);
	CHECK_EQ(e.stat, NLM4_GRANTED);
	CHECK_EQ(nlm_unlock(&t, f, &B, 6000, 10), NLM4_GRANTED);

	/* SHARE / UNSHARE, between NLM owners and against NFSv4 opens (one
	 * for read here) */
	struct ts_openres o5;
	CHECK_EQ(ts_open_name(s4, NULL, "o5", "f-share", OPEN4_SHARE_ACCESS_READ, DN, true, &o5),
		 NFS4_OK);
	const struct ts_fh *g = &o5.fh;
	CHECK_EQ(nlm_share(&t, NLMPROC4_SHARE, g, &B, fsa_RW, fsm_DW), NLM4_GRANTED);
	CHECK_EQ(nlm_share(&t, NLMPROC4_SHARE, g, &C, fsa_W, fsm_DN), NLM4_DENIED);
	CHECK_EQ(nlm_share(&t, NLMPROC4_SHARE, g, &C, fsa_R, fsm_DN), NLM4_GRANTED);
	CHECK_EQ(nlm_share(&t, NLMPROC4_SHARE, g, &C, fsa_R, fsm_DR), NLM4_DENIED); /* B reads */
	CHECK_EQ(nlm_share(&t, NLMPROC4_UNSHARE, g, &B, fsa_RW, fsm_DW), NLM4_GRANTED);
	CHECK_EQ(nlm_share(&t, NLMPROC4_SHARE, g, &C, fsa_W, fsm_DN), NLM4_GRANTED);
	CHECK_EQ(nlm_share(&t, NLMPROC4_UNSHARE, g, &C, fsa_W, fsm_DN), NLM4_GRANTED);
	/* the NFSv4 open reads: denying reads conflicts with it, denying writes not */
	CHECK_EQ(nlm_share(&t, NLMPROC4_SHARE, g, &A, fsa_R, fsm_DR), NLM4_DENIED);
	CHECK_EQ(nlm_share(&t, NLMPROC4_SHARE, g, &A, fsa_R, fsm_DW), NLM4_GRANTED);
	CHECK_EQ(nlm_share(&t, NLMPROC4_UNSHARE, g, &A, fsa_R, fsm_DW), NLM4_GRANTED);

	/* FREE_ALL frees the host's locks */
	struct own fa = {"client-f", 7, "oh-f"};
	CHECK_EQ(nlm_lock(&t, f, &fa, true, 8000, 10, false, false, 1), NLM4_GRANTED);
	nlm4_notify na = {.name = xdr_string_of(fa.host), .state = 2};
	CHECK_EQ(nlm(&t, NLMPROC4_FREE_ALL, &na, NULL, NULL), 0);
	CHECK_EQ(nlm_test(&t, f, &A, true, 8000, 10, NULL), NLM4_GRANTED);

	/* a changed NSM state in a host's requests: it rebooted, its old locks go */
	struct own sa = {"client-s", 8, "oh-s"};
	CHECK_EQ(nlm_lock(&t, f, &sa, true, 8100, 10, false, false, 3), NLM4_GRANTED);
	CHECK_EQ(nlm_lock(&t, f, &sa, true, 8200, 10, false, false, 3), NLM4_GRANTED);
	CHECK_EQ(nlm_test(&t, f, &A, true, 8100, 10, NULL), NLM4_DENIED);
	CHECK_EQ(nlm_lock(&t, f, &sa, true, 8300, 10, false, false, 5), NLM4_GRANTED);
	CHECK_EQ(nlm_test(&t, f, &A, true, 8100, 10, NULL), NLM4_GRANTED);
	CHECK_EQ(nlm_test(&t, f, &A, true, 8200, 10, NULL), NLM4_GRANTED);
	CHECK_EQ(nlm_test(&t, f, &A, true, 8300, 10, NULL), NLM4_DENIED);

	/* SM_NOTIFY from the host's address frees them too */
	sm_stat_chge sn = {.mon_name = xdr_string_of(sa.host), .state = 7};
	CHECK_EQ(
	    call_prog(&t, SM_PROG, SM_VERS, SM_NOTIFY, &xdr_desc_SM_PROG_SM_VERS, &sn, NULL, NULL),
	    0);
	CHECK_EQ(nlm_test(&t, f, &A, true, 8300, 10, NULL), NLM4_GRANTED);

	/* bad arguments: garbage, handles, names, ranges */
	static const uint32_t junk1[4] = {0xffffffff, 1, 2, 3}; /* a cookie of 4 GiB */
	static const uint32_t junk2[4] = {0, 7, 1, 1};		/* a bool of 7 */
	check_garbage(&t, NLMPROC4_LOCK, junk1);
	check_garbage(&t, NLMPROC4_TEST, junk2);
	check_garbage(&t, NLMPROC4_UNLOCK, junk1);
	check_garbage(&t, NLMPROC4_SHARE, junk2);
	check_garbage(&t, NLMPROC4_FREE_ALL, junk1);
	struct ts_fh bad = {.len = 32};
	memset(bad.b, 0x5a, bad.len);
	CHECK_EQ(nlm_lock(&t, &bad, &A, true, 0, 1, false, false, 1), NLM4_STALE_FH);
	struct ts_fh root;
	{
		nfs_argop4 ops[2] = {mt_putrootfh(), mt_getfh()};
		COMPOUND4res res;
		struct xdr_arena ar;
		ts_run(s4, ops, 2, &res, &ar);
		CHECK_EQ(res.status, NFS4_OK);
		const nfs_fh4 *rf = &res.resarray.val[2].u.opgetfh.u.resok4.object;
		root.len = rf->len;
		memcpy(root.b, rf->val, rf->len);
		xdr_arena_release(&ar);
	}
	CHECK_EQ(nlm_lock(&t, &root, &A, true, 0, 1, false, false, 1), NLM4_FAILED);
	struct own noname = {"", 1, "x"};
	CHECK_EQ(nlm_lock(&t, f, &noname, true, 0, 1, false, false, 1), NLM4_FAILED);
	CHECK_EQ(nlm_lock(&t, f, &A, true, UINT64_MAX - 5, 100, false, false, 1), NLM4_FBIG);
	CHECK_EQ(nlm(&t, NLMPROC4_NULL, NULL, NULL, NULL), 0); /* still serving */

	/* an NFSv4 client's write delegation (its holder locks locally): an
	 * NLM LOCK gets DENIED_GRACE_PERIOD (lockd asks again) and the holder
	 * CB_RECALL; once it is returned, the lock is granted */
	{
		struct nfsd_clnt *dc;
		struct nfs41c_session *sd = dt_session(&t, "nlm-deleg", 0, &dc, false);
		struct ts_openres od;
		CHECK_EQ(ts_open_name(sd, NULL, "od", "f-deleg", RW, DN, true, &od), NFS4_OK);
		CHECK_EQ(od.dtype, OPEN_DELEGATE_WRITE);
		CHECK_EQ(ts_close(sd, &od.fh, &od.sid, NULL), NFS4_OK);
		int n0 = atomic_load(&dt_cbs[0].recalls);
		CHECK_EQ(nlm_lock(&t, &od.fh, &A, false, 0, 10, false, false, 1),
			 NLM4_DENIED_GRACE_PERIOD);
		dt_wait(&dt_cbs[0].recalls, n0 + 1, 5);
		dt_check_recall(0, &od.dsid, &od.fh);
		CHECK_EQ(dt_delegreturn(sd, &od.fh, &od.dsid), NFS4_OK);
		CHECK_EQ(nlm_lock(&t, &od.fh, &A, false, 0, 10, false, false, 1), NLM4_GRANTED);
		CHECK_EQ(nlm_unlock(&t, &od.fh, &A, 0, 10), NLM4_GRANTED);
		nfs41c_session_destroy(sd);
		nfsd_clnt_free(dc);
	}

	/* restart: the hosts are notified, only reclaims in grace */
	struct own r = {"client-r", 9, "oh-r"};
	CHECK_EQ(nlm_lock(&t, f, &r, true, 9000, 10, false, false, 11), NLM4_GRANTED);
	CHECK(nsm_recorded(&t, r.host));
	CHECK(nsm_recorded(&t, fa.host));
	mt_set_grace(&t, "5s");
	from = ev_count();
	/* the NFSv4 client holds an open: its client ID stays (and its record) */
	CHECK_EQ(nfs41c_session_destroy(s4), NFS4ERR_CLIENTID_BUSY);
	mt_stop(&t);
	mt_boot(&t);
	CHECK(ev_wait(SM_PROG, SM_NOTIFY, from, 10, &e));
	CHECK(!strcmp(e.name, NSM_NAME));
	CHECK_EQ(e.state, 3); /* 1 while up, 2 after the clean stop, 3 now */
	struct own xo = {"client-x", 10, "oh-x"};
	CHECK_EQ(nlm_lock(&t, f, &xo, true, 9500, 1, false, false, 1), NLM4_DENIED_GRACE_PERIOD);
	CHECK_EQ(nlm_test(&t, f, &xo, true, 9000, 1, NULL), NLM4_DENIED_GRACE_PERIOD);
	CHECK_EQ(nlm_lock(&t, f, &r, true, 9000, 10, false, true, 11), NLM4_GRANTED);
	end = ts_now() + 15;
	nlm4_stats st;
	while ((st = nlm_lock(&t, f, &xo, true, 9500, 1, false, false, 1)) ==
		   NLM4_DENIED_GRACE_PERIOD &&
	       ts_now() < end)
		usleep(100000);
	CHECK_EQ(st, NLM4_GRANTED);
	CHECK_EQ(nlm_lock(&t, f, &xo, false, 9005, 1, false, false, 1), NLM4_DENIED);
	CHECK_EQ(nlm_test(&t, f, &xo, false, 9005, 1, &h), NLM4_DENIED);
	CHECK_EQ(h.svid, r.svid);
	/* after grace, a host that holds no lock is forgotten; the others stay */
	end = ts_now() + 10;
	while (nsm_recorded(&t, fa.host) && ts_now() < end)
		usleep(100000);
	CHECK(!nsm_recorded(&t, fa.host));
	CHECK(nsm_recorded(&t, r.host));

	mt_finish(&t);

	/* an NFSv4 holder whose lease runs out: the blocked NLM request is granted */
	snprintf(conf, sizeof(conf), "lease_time = 2s\nnlm_rpcbind_port = %d\n", E.port);
	mt_start(&t, "/ *(rw,no_root_squash,insecure)\n", conf);
	struct nfs41c_session *s5 = ts_session(&t, "nlm-v4-silent", 0, 0);
	struct ts_openres o6;
	CHECK_EQ(ts_open_name(s5, NULL, "o6", "f-lease", RW, DN, true, &o6), NFS4_OK);
	CHECK_EQ(ts_lock(s5, &o6.fh, WRITE_LT, false, 0, 100, &o6.sid, "lo6", &l4, NULL), NFS4_OK);
	double silent = ts_now();
	from = ev_count();
	CHECK_EQ(nlm_lock(&t, &o6.fh, &A, true, 50, 10, true, false, 1), NLM4_BLOCKED);
	CHECK(ev_wait(NLM_PROG, NLMPROC4_GRANTED, from, 20, &e));
	CHECK(ts_now() - silent >= 1.9); /* not before the lease could have run out */
	CHECK_EQ(e.off, 50);
	CHECK_EQ(nlm_test(&t, &o6.fh, &B, false, 55, 1, &h), NLM4_DENIED);
	CHECK_EQ(h.svid, A.svid);
	nfs41c_session_destroy(s5); /* gone with its lease: only the memory */
	/* without nsm_name, SM_NOTIFY names the server by the address the host
	 * called (as a Linux client's statd monitors it) */
	from = ev_count();
	mt_stop(&t);
	mt_boot(&t);
	CHECK(ev_wait(SM_PROG, SM_NOTIFY, from, 10, &e));
	CHECK(!strcmp(e.name, "127.0.0.1"));
	CHECK_EQ(e.state, 3);
	mt_finish(&t);

	nfsd_server_free(fake);
	return 0;
}
