/* SPDX-License-Identifier: MIT */
/*
 * NFSv4.1 sessions (RFC 8881 §2.10, chapter 18) through nfsd/nfs41*.c on
 * loopback, driven by nfsd/nfs41_clnt.c and by raw COMPOUNDs:
 *   - COMPOUND: minor versions, tag echo, OP_ILLEGAL, GARBAGE_ARGS before
 *     anything runs, op positions (OP_NOT_IN_SESSION, SEQUENCE_POS,
 *     NOT_ONLY_OP), NOTSUPP, current/saved filehandle;
 *   - EXCHANGE_ID's case table (§18.35.5), flags, server owner and scope;
 *   - CREATE_SESSION's slot (replay, misordered), channel negotiation;
 *   - SEQUENCE slots: new, cached replay (identical bytes, not re-executed),
 *     uncached replay, false retry, misordered, bad slot, in progress;
 *     TOO_MANY_OPS, REQ_TOO_BIG, REP_TOO_BIG(_TO_CACHE);
 *   - DESTROY_SESSION / DESTROY_CLIENTID, BIND_CONN_TO_SESSION on a second
 *     connection, the back channel (a real CB_NULL), BACKCHANNEL_CTL,
 *     RECLAIM_COMPLETE;
 *   - lease expiry with a 2-second lease; 1,000 concurrent COMPOUNDs over
 *     64 slots from 4 threads.
 * The test server's GETATTR, READ and READLINK count their runs so replays
 * and refused operations are provably not executed.
 */
#include "config.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nfsd/nfs41.h"
#include "nfsd/nfs41_clnt.h"
#include "tests/check.h"

#define CBPROG 0x40000123u

/* ------------------------------------------------------------ test server */

struct tstate {
	atomic_int getattrs, reads, readlinks;
	atomic_uint max_slot;
	atomic_bool slow; /* GETATTR sleeps 1 ms */
	atomic_uint readlink_len;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool gate_closed;	  /* READ waits while set */
	int blocked;		  /* READs waiting at the gate */
	_Atomic uint64_t busy_id; /* client_has_state says yes for it */
	uint64_t expired[256];	  /* client_expired hook calls */
	unsigned nexpired;
};

struct tsrv {
	struct nfsd_server *eng;
	struct nfs41_server *v41;
	int port;
	struct tstate st;
};

static nfsstat4 t_putfh(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	nfs41_compound_set_fh(c, a->u.opputfh.object.val, a->u.opputfh.object.len);
	return NFS4_OK;
}

static nfsstat4 t_ok(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	return NFS4_OK;
}

static void max_update(atomic_uint *m, unsigned v)
{
	unsigned cur = atomic_load(m);
	while (v > cur && !atomic_compare_exchange_weak(m, &cur, v))
		;
}

static nfsstat4 t_getattr(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct tstate *t = c->priv;
	atomic_fetch_add(&t->getattrs, 1);
	max_update(&t->max_slot, c->slotid);
	if (atomic_load(&t->slow))
		usleep(1000);
	return NFS4_OK; /* an empty fattr4: the zeroed result */
}

static nfsstat4 t_read(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct tstate *t = c->priv;
	pthread_mutex_lock(&t->lock);
	t->blocked++;
	pthread_cond_broadcast(&t->cond);
	while (t->gate_closed)
		pthread_cond_wait(&t->cond, &t->lock);
	t->blocked--;
	pthread_mutex_unlock(&t->lock);
	atomic_fetch_add(&t->reads, 1);
	uint32_t n = a->u.opread.count;
	uint8_t *p = xdr_arena_alloc(c->arena, n ? n : 1);
	if (!p)
		return NFS4ERR_SERVERFAULT;
	memset(p, 'x', n);
	r->u.opread.u.resok4.data = xdr_opaque_of(p, n);
	r->u.opread.u.resok4.eof = true;
	return NFS4_OK;
}

static uint32_t t_read_bound(const nfs_argop4 *a)
{
	return a->u.opread.count + 32;
}

static nfsstat4 t_readlink(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct tstate *t = c->priv;
	atomic_fetch_add(&t->readlinks, 1);
	uint32_t n = atomic_load(&t->readlink_len);
	uint8_t *p = xdr_arena_alloc(c->arena, n + 1);
	if (!p)
		return NFS4ERR_SERVERFAULT;
	memset(p, 'l', n);
	r->u.opreadlink.u.resok4.link = xdr_opaque_of(p, n);
	return NFS4_OK;
}

struct cbwait {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int err;
};

static void cb_done(void *ctx, int err, struct xdr_dec *d)
{
	struct cbwait *w = ctx;
	pthread_mutex_lock(&w->lock);
	w->err = err;
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* LOOKUPP stands in for a callback: CB_NULL on the back channel of the
 * client, found from its client ID as a layout recall would. */
static nfsstat4 t_cbprobe(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct nfs41_backchannel bc;
	struct nfs41_session *ss = nfs41_client_session_get(c->srv, c->clientid);
	if (!ss)
		return NFS4ERR_CB_PATH_DOWN;
	int rc = nfs41_session_backchannel(ss, &bc);
	nfs41_session_put(ss);
	if (rc)
		return NFS4ERR_CB_PATH_DOWN;
	struct cbwait w = {.done = false};
	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.cond, NULL);
	struct nfsd_call_opts o = {.prog = bc.cb_program, .vers = 1, .proc = 0, .timeout_ms = 5000};
	rc = nfsd_conn_call_async(bc.conn, &o, cb_done, &w);
	if (!rc) {
		pthread_mutex_lock(&w.lock);
		while (!w.done)
			pthread_cond_wait(&w.cond, &w.lock);
		pthread_mutex_unlock(&w.lock);
		rc = w.err;
	}
	nfs41_backchannel_release(&bc);
	pthread_cond_destroy(&w.cond);
	pthread_mutex_destroy(&w.lock);
	return rc ? NFS4ERR_CB_PATH_DOWN : NFS4_OK;
}

static void t_expired(void *priv, uint64_t id)
{
	struct tstate *t = priv;
	pthread_mutex_lock(&t->lock);
	if (t->nexpired < 256)
		t->expired[t->nexpired++] = id;
	pthread_mutex_unlock(&t->lock);
}

static bool t_has_state(void *priv, uint64_t id)
{
	struct tstate *t = priv;
	return id == atomic_load(&t->busy_id);
}

static bool was_expired(struct tstate *t, uint64_t id)
{
	bool yes = false;
	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < t->nexpired; i++)
		yes |= t->expired[i] == id;
	pthread_mutex_unlock(&t->lock);
	return yes;
}

static const struct nfs41_op t_ops[OP_REMOVEXATTR + 1] = {
    [OP_PUTFH] = {t_putfh, 0, NULL},
    [OP_GETATTR] = {t_getattr, NFS41_OP_NEEDS_FH, NULL},
    [OP_READ] = {t_read, NFS41_OP_NEEDS_FH, t_read_bound},
    [OP_READLINK] = {t_readlink, NFS41_OP_NEEDS_FH, NULL},
    [OP_LOOKUPP] = {t_cbprobe, 0, NULL},
    /* ignored: SEQUENCE is the module's own, RENEW is NFSv4.0's */
    [OP_SEQUENCE] = {t_putfh, 0, NULL},
    [OP_RENEW] = {t_ok, 0, NULL},
};

static const char MAJOR[] = "braid-test-major";
static const char SCOPE[] = "braid-test-scope";

static void tsrv_start(struct tsrv *t, unsigned lease_s)
{
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->st.lock, NULL);
	pthread_cond_init(&t->st.cond, NULL);
	struct nfs41_server_opts o = {
	    .so_major = MAJOR,
	    .so_major_len = sizeof(MAJOR) - 1,
	    .so_minor = 7,
	    .scope = SCOPE,
	    .scope_len = sizeof(SCOPE) - 1,
	    .exchgid_flags = EXCHGID4_FLAG_USE_PNFS_DS,
	    .lease_s = lease_s,
	    .max_slots = 64,
	    .max_ops = 16,
	    .callbacks = true,
	    .ops = t_ops,
	    .nops = OP_REMOVEXATTR + 1,
	    .priv = &t->st,
	    .client_expired = t_expired,
	    .client_has_state = t_has_state,
	};
	int err = 0;
	t->v41 = nfs41_server_new(&o, &err);
	CHECK(t->v41);
	struct nfsd_server_opts so;
	nfsd_server_opts_default(&so);
	so.nloops = 2;
	so.nworkers = 8;
	t->eng = nfsd_server_new(&so, &err);
	CHECK(t->eng);
	CHECK_EQ(nfsd_server_add_program(t->eng, nfs41_server_program(t->v41)), 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK_EQ(nfsd_server_listen(t->eng, (struct sockaddr *)&sa, sizeof(sa)), 0);
	CHECK_EQ(nfsd_server_start(t->eng), 0);
	t->port = nfsd_server_listen_port(t->eng, 0);
}

static void tsrv_stop(struct tsrv *t)
{
	nfsd_server_free(t->eng);
	nfs41_server_free(t->v41);
	pthread_cond_destroy(&t->st.cond);
	pthread_mutex_destroy(&t->st.lock);
}

static void gate(struct tstate *t, bool closed)
{
	pthread_mutex_lock(&t->lock);
	t->gate_closed = closed;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

static void wait_blocked(struct tstate *t, int n)
{
	pthread_mutex_lock(&t->lock);
	while (t->blocked < n)
		pthread_cond_wait(&t->cond, &t->lock);
	pthread_mutex_unlock(&t->lock);
}

/* ------------------------------------------------------------ client side */

static struct nfsd_server *ceng;

static int cb_null(struct nfsd_req *r, void *a, void *res)
{
	return NFSD_SUCCESS;
}
static const struct nfsd_proc cb_procs[] = {
    {.name = "CB_NULL", .fn = cb_null, .flags = NFSD_PROC_INLINE}};
static const struct nfsd_version cb_vers = {.vers = 1, .procs = cb_procs, .nprocs = 1};
static const struct nfsd_program cb_prog = {
    .prog = CBPROG, .name = "cb", .versions = &cb_vers, .nversions = 1};

static struct nfsd_clnt *mk_timeout(int port, bool backchannel, unsigned timeout_ms)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct nfsd_clnt_opts o = {.timeout_ms = timeout_ms,
				   .backchannel = backchannel ? &cb_prog : NULL};
	int err = 0;
	struct nfsd_clnt *c = nfsd_clnt_new(ceng, (struct sockaddr *)&sa, sizeof(sa), &o, &err);
	CHECK(c);
	return c;
}

static struct nfsd_clnt *mk(int port, bool backchannel)
{
	return mk_timeout(port, backchannel, 20000);
}

/* A hand-built COMPOUND: ops through the generated encoder, then raw words
 * (an unknown op, a malformed body); count overrides the op count. */
struct xargs {
	const char *tag;
	uint32_t minor;
	const nfs_argop4 *ops;
	unsigned nops;
	const uint32_t *extra;
	unsigned nextra;
	uint32_t count; /* 0: nops + (nextra ? 1 : 0) */
};

static int enc_xargs(struct xdr_enc *e, const void *v)
{
	const struct xargs *x = v;
	utf8string tag = xdr_string_of(x->tag ? x->tag : "");
	xdr_enc_utf8string(e, &tag);
	xdr_enc_uint32(e, x->minor);
	xdr_enc_uint32(e, x->count ? x->count : x->nops + (x->nextra ? 1u : 0u));
	for (unsigned i = 0; i < x->nops; i++)
		xdr_enc_nfs_argop4(e, &x->ops[i]);
	for (unsigned i = 0; i < x->nextra; i++)
		xdr_enc_uint32(e, x->extra[i]);
	return e->err;
}

struct rawcap {
	uint8_t *buf;
	size_t len;
};

static int dec_cap(struct xdr_dec *d, void *v)
{
	struct rawcap *c = v;
	c->len = xdr_dec_left(d);
	c->buf = malloc(c->len + 1);
	if (!c->buf)
		return -ENOMEM;
	memcpy(c->buf, d->p, c->len);
	d->p = d->end;
	return 0;
}

/* One COMPOUND; the reply's bytes in *cap (free them), decoded in *res
 * (arena memory). */
static int xcall(struct nfsd_clnt *cl, uint32_t uid, const struct xargs *x, struct rawcap *cap,
		 COMPOUND4res *res, struct xdr_arena *ar)
{
	struct nfsd_call_opts o = {.prog = NFS4_PROGRAM,
				   .vers = 4,
				   .proc = NFSPROC4_COMPOUND,
				   .enc_args = enc_xargs,
				   .args = x};
	if (uid) {
		o.flavor = NFSD_AUTH_SYS;
		o.uid = uid;
		o.gid = uid;
	}
	memset(cap, 0, sizeof(*cap));
	memset(res, 0, sizeof(*res));
	int rc = nfsd_clnt_call(cl, &o, dec_cap, cap, NULL);
	if (rc)
		return rc;
	/* decode from a copy in the arena: results outlive cap */
	uint8_t *copy = xdr_arena_alloc(ar, cap->len + 1);
	CHECK(copy);
	memcpy(copy, cap->buf, cap->len);
	struct xdr_dec d;
	xdr_dec_init(&d, copy, cap->len, ar);
	CHECK_EQ(xdr_dec_COMPOUND4res(&d, res), 0);
	CHECK_EQ(xdr_dec_left(&d), 0);
	return 0;
}

/* COMPOUND with ops, as the given user; returns its status, fills *res. */
static nfsstat4 call(struct nfsd_clnt *cl, uint32_t minor, const nfs_argop4 *ops, unsigned n,
		     COMPOUND4res *res, struct xdr_arena *ar)
{
	struct xargs x = {.minor = minor, .ops = ops, .nops = n};
	struct rawcap cap;
	CHECK_EQ(xcall(cl, 0, &x, &cap, res, ar), 0);
	free(cap.buf);
	return res->status;
}

static nfsstat4 rst(const COMPOUND4res *r, unsigned i)
{
	nfsstat4 s;
	CHECK(i < r->resarray.len);
	memcpy(&s, &r->resarray.val[i].u, sizeof(s));
	return s;
}

static nfs_argop4 op_seq(const uint8_t *sid, uint32_t slot, uint32_t seqid, bool cache)
{
	nfs_argop4 a = {.argop = OP_SEQUENCE};
	memcpy(a.u.opsequence.sa_sessionid, sid, NFS4_SESSIONID_SIZE);
	a.u.opsequence.sa_sequenceid = seqid;
	a.u.opsequence.sa_slotid = slot;
	a.u.opsequence.sa_highest_slotid = slot;
	a.u.opsequence.sa_cachethis = cache;
	return a;
}

static nfs_argop4 op_putfh(const char *fh)
{
	nfs_argop4 a = {.argop = OP_PUTFH};
	a.u.opputfh.object = xdr_opaque_of(fh, strlen(fh));
	return a;
}

static nfs_argop4 op_plain(int32_t op)
{
	return (nfs_argop4){.argop = op};
}

static nfs_argop4 op_read(uint32_t count)
{
	nfs_argop4 a = {.argop = OP_READ};
	a.u.opread.count = count;
	return a;
}

static nfs_argop4 op_exid(const char *owner, uint64_t verf, uint32_t flags)
{
	nfs_argop4 a = {.argop = OP_EXCHANGE_ID};
	EXCHANGE_ID4args *ea = &a.u.opexchange_id;
	for (int i = 0; i < 8; i++)
		ea->eia_clientowner.co_verifier[i] = (uint8_t)(verf >> (56 - 8 * i));
	ea->eia_clientowner.co_ownerid = xdr_opaque_of(owner, strlen(owner));
	ea->eia_flags = flags;
	ea->eia_state_protect.spa_how = SP4_NONE;
	return a;
}

static callback_sec_parms4 sec_none = {.cb_secflavor = NFSD_AUTH_NONE};

static nfs_argop4 op_cs(uint64_t clientid, uint32_t seq, uint32_t flags)
{
	nfs_argop4 a = {.argop = OP_CREATE_SESSION};
	CREATE_SESSION4args *ca = &a.u.opcreate_session;
	ca->csa_clientid = clientid;
	ca->csa_sequence = seq;
	ca->csa_flags = flags;
	ca->csa_fore_chan_attrs = (channel_attrs4){.ca_maxrequestsize = 1 << 20,
						   .ca_maxresponsesize = 1 << 20,
						   .ca_maxresponsesize_cached = 8192,
						   .ca_maxoperations = 100,
						   .ca_maxrequests = 1000};
	ca->csa_back_chan_attrs = (channel_attrs4){.ca_maxrequestsize = 4096,
						   .ca_maxresponsesize = 4096,
						   .ca_maxoperations = 2,
						   .ca_maxrequests = 100};
	ca->csa_cb_program = CBPROG;
	ca->csa_sec_parms.len = 1;
	ca->csa_sec_parms.val = &sec_none;
	return a;
}

/* EXCHANGE_ID alone as uid (0: AUTH_NONE): status, and the resok. */
static nfsstat4 exid(struct nfsd_clnt *cl, uint32_t uid, const char *owner, uint64_t verf,
		     uint32_t flags, EXCHANGE_ID4resok *ok, struct xdr_arena *ar)
{
	nfs_argop4 a = op_exid(owner, verf, flags);
	struct xargs x = {.minor = 1, .ops = &a, .nops = 1};
	struct rawcap cap;
	COMPOUND4res res;
	CHECK_EQ(xcall(cl, uid, &x, &cap, &res, ar), 0);
	free(cap.buf);
	CHECK_EQ(res.resarray.len, 1);
	CHECK_EQ(res.resarray.val[0].resop, OP_EXCHANGE_ID);
	if (!res.status && ok)
		*ok = res.resarray.val[0].u.opexchange_id.u.eir_resok4;
	return res.status;
}

static nfsstat4 create_session(struct nfsd_clnt *cl, uint64_t clientid, uint32_t seq,
			       uint32_t flags, CREATE_SESSION4resok *ok, struct xdr_arena *ar)
{
	nfs_argop4 a = op_cs(clientid, seq, flags);
	COMPOUND4res res;
	nfsstat4 st = call(cl, 1, &a, 1, &res, ar);
	CHECK_EQ(res.resarray.len, 1);
	if (!st && ok)
		*ok = res.resarray.val[0].u.opcreate_session.u.csr_resok4;
	return st;
}

/* ------------------------------------------------------------ tests */

static struct tsrv S;

/* RFC 8881 §16.2.3: minor versions, the tag, illegal and malformed ops. */
static void test_compound(struct nfsd_clnt *cl, struct nfs41c_session *sess, struct xdr_arena *ar)
{
	struct nfsd_call_opts nul = {.prog = NFS4_PROGRAM, .vers = 4, .proc = 0};
	CHECK_EQ(nfsd_clnt_call(cl, &nul, NULL, NULL, NULL), 0);

	struct rawcap cap;
	COMPOUND4res res;
	nfs_argop4 ops[8];
	ops[0] = op_putfh("fh");
	for (uint32_t minor = 0; minor < 4; minor += 3) {
		struct xargs x = {.tag = "hello", .minor = minor, .ops = ops, .nops = 1};
		CHECK_EQ(xcall(cl, 0, &x, &cap, &res, ar), 0);
		free(cap.buf);
		CHECK_EQ(res.status, NFS4ERR_MINOR_VERS_MISMATCH);
		CHECK_EQ(res.resarray.len, 0);
		CHECK_EQ(res.tag.len, 5);
		CHECK(!memcmp(res.tag.val, "hello", 5));
	}
	/* an empty COMPOUND is fine in 4.1 and 4.2 */
	CHECK_EQ(call(cl, 1, NULL, 0, &res, ar), NFS4_OK);
	CHECK_EQ(res.resarray.len, 0);
	CHECK_EQ(call(cl, 2, NULL, 0, &res, ar), NFS4_OK);

	/* an unknown op number: OP_ILLEGAL, and nothing after it */
	uint32_t junk[] = {9999, 1, 2, 3};
	struct xargs xi = {.minor = 1, .extra = junk, .nextra = 4, .count = 3};
	CHECK_EQ(xcall(cl, 0, &xi, &cap, &res, ar), 0);
	free(cap.buf);
	CHECK_EQ(res.status, NFS4ERR_OP_ILLEGAL);
	CHECK_EQ(res.resarray.len, 1);
	CHECK_EQ(res.resarray.val[0].resop, OP_ILLEGAL);
	CHECK_EQ(rst(&res, 0), NFS4ERR_OP_ILLEGAL);

	/* a 4.2 op (SEEK) is illegal in 4.1, known in 4.2 */
	ops[0] = op_plain(OP_SEEK);
	CHECK_EQ(call(cl, 1, ops, 1, &res, ar), NFS4ERR_OP_ILLEGAL);
	CHECK_EQ(res.resarray.val[0].resop, OP_ILLEGAL);
	CHECK_EQ(call(cl, 2, ops, 1, &res, ar), NFS4ERR_OP_NOT_IN_SESSION);
	CHECK_EQ(res.resarray.val[0].resop, OP_SEEK);

	struct nfs41c_session_info in;
	nfs41c_session_info(sess, &in);
	int g0 = atomic_load(&S.st.getattrs);
	/* after SEQUENCE: ops before an illegal one run, it ends the COMPOUND */
	ops[0] = op_seq(in.sessionid, 10, 1, false);
	ops[1] = op_putfh("fh");
	ops[2] = op_plain(OP_GETATTR);
	struct xargs xs = {
	    .minor = 1, .ops = ops, .nops = 3, .extra = junk, .nextra = 4, .count = 5};
	CHECK_EQ(xcall(cl, 0, &xs, &cap, &res, ar), 0);
	free(cap.buf);
	CHECK_EQ(res.status, NFS4ERR_OP_ILLEGAL);
	CHECK_EQ(res.resarray.len, 4);
	CHECK_EQ(res.resarray.val[3].resop, OP_ILLEGAL);
	CHECK_EQ(atomic_load(&S.st.getattrs), g0 + 1);

	/* a malformed body (a 200-byte filehandle): GARBAGE_ARGS, and the
	 * GETATTR before it never runs nor does SEQUENCE take the slot */
	uint32_t bad[] = {OP_PUTFH, 200, 0, 0};
	ops[0] = op_seq(in.sessionid, 10, 2, false);
	struct xargs xb = {.minor = 1, .ops = ops, .nops = 3, .extra = bad, .nextra = 4};
	CHECK_EQ(xcall(cl, 0, &xb, &cap, &res, ar), NFSD_CALL_ERR_ACCEPT | NFSD_GARBAGE_ARGS);
	CHECK_EQ(atomic_load(&S.st.getattrs), g0 + 1);
	CHECK_EQ(call(cl, 1, ops, 3, &res, ar), NFS4_OK); /* seqid 2 is still new */
	CHECK_EQ(atomic_load(&S.st.getattrs), g0 + 2);
}

/* RFC 8881 §2.10.6.4 and the sessionless ops' own rules. */
static void test_positions(struct nfsd_clnt *cl, struct nfs41c_session *sess, struct xdr_arena *ar)
{
	struct nfs41c_session_info in;
	nfs41c_session_info(sess, &in);
	COMPOUND4res res;
	nfs_argop4 ops[8];
	uint32_t seq = 0;

	ops[0] = op_putfh("a");
	ops[1] = op_plain(OP_GETATTR);
	CHECK_EQ(call(cl, 1, ops, 2, &res, ar), NFS4ERR_OP_NOT_IN_SESSION);
	CHECK_EQ(res.resarray.len, 1);

	ops[0] = op_seq(in.sessionid, 11, ++seq, false);
	ops[1] = op_putfh("a");
	ops[2] = op_seq(in.sessionid, 12, 1, false);
	CHECK_EQ(call(cl, 1, ops, 3, &res, ar), NFS4ERR_SEQUENCE_POS);
	CHECK_EQ(res.resarray.len, 3);
	CHECK_EQ(rst(&res, 0), NFS4_OK);

	ops[0] = op_exid("someone", 1, 0);
	ops[1] = op_putfh("a");
	CHECK_EQ(call(cl, 1, ops, 2, &res, ar), NFS4ERR_NOT_ONLY_OP);
	CHECK_EQ(res.resarray.len, 1);
	ops[0] = op_cs(in.clientid, 99, 0);
	CHECK_EQ(call(cl, 1, ops, 2, &res, ar), NFS4ERR_NOT_ONLY_OP);
	ops[0] = op_plain(OP_DESTROY_CLIENTID);
	CHECK_EQ(call(cl, 1, ops, 2, &res, ar), NFS4ERR_NOT_ONLY_OP);

	/* BIND_CONN_TO_SESSION is alone even after SEQUENCE */
	ops[0] = op_seq(in.sessionid, 11, ++seq, false);
	ops[1] = op_plain(OP_BIND_CONN_TO_SESSION);
	memcpy(ops[1].u.opbind_conn_to_session.bctsa_sessid, in.sessionid, NFS4_SESSIONID_SIZE);
	ops[1].u.opbind_conn_to_session.bctsa_dir = CDFC4_FORE;
	CHECK_EQ(call(cl, 1, ops, 2, &res, ar), NFS4ERR_NOT_ONLY_OP);
	CHECK_EQ(res.resarray.len, 2);

	/* sessionless ops are fine inside a session COMPOUND */
	ops[0] = op_seq(in.sessionid, 11, ++seq, false);
	ops[1] = op_exid("positions-owner", 5, 0);
	CHECK_EQ(call(cl, 1, ops, 2, &res, ar), NFS4_OK);

	/* filehandles: GETFH / SAVEFH need one, RESTOREFH a saved one */
	ops[0] = op_seq(in.sessionid, 11, ++seq, false);
	ops[1] = op_plain(OP_GETFH);
	CHECK_EQ(call(cl, 1, ops, 2, &res, ar), NFS4ERR_NOFILEHANDLE);
	ops[0] = op_seq(in.sessionid, 11, ++seq, false);
	ops[1] = op_plain(OP_SAVEFH);
	CHECK_EQ(call(cl, 1, ops, 2, &res, ar), NFS4ERR_NOFILEHANDLE);
	ops[0] = op_seq(in.sessionid, 11, ++seq, false);
	ops[1] = op_putfh("a");
	ops[2] = op_plain(OP_RESTOREFH);
	CHECK_EQ(call(cl, 1, ops, 3, &res, ar), NFS4ERR_NOFILEHANDLE);
	ops[0] = op_seq(in.sessionid, 11, ++seq, false);
	ops[1] = op_putfh("first");
	ops[2] = op_plain(OP_SAVEFH);
	ops[3] = op_putfh("second");
	ops[4] = op_plain(OP_GETFH);
	ops[5] = op_plain(OP_RESTOREFH);
	ops[6] = op_plain(OP_GETFH);
	CHECK_EQ(call(cl, 1, ops, 7, &res, ar), NFS4_OK);
	CHECK_EQ(res.resarray.len, 7);
	xdr_opaque f4 = res.resarray.val[4].u.opgetfh.u.resok4.object;
	xdr_opaque f6 = res.resarray.val[6].u.opgetfh.u.resok4.object;
	CHECK(f4.len == 6 && !memcmp(f4.val, "second", 6));
	CHECK(f6.len == 5 && !memcmp(f6.val, "first", 5));

	/* no handler: NOTSUPP; NFSv4.0-only ops too (RFC 8881 §18) */
	ops[0] = op_seq(in.sessionid, 11, ++seq, false);
	ops[1] = op_plain(OP_REMOVE);
	CHECK_EQ(call(cl, 1, ops, 2, &res, ar), NFS4ERR_NOTSUPP);
	ops[0] = op_seq(in.sessionid, 11, ++seq, false);
	ops[1] = op_plain(OP_RENEW);
	CHECK_EQ(call(cl, 1, ops, 2, &res, ar), NFS4ERR_NOTSUPP);
	/* the embedder's NEEDS_FH flag is enforced before its handler */
	int g0 = atomic_load(&S.st.getattrs);
	ops[0] = op_seq(in.sessionid, 11, ++seq, false);
	ops[1] = op_plain(OP_GETATTR);
	CHECK_EQ(call(cl, 1, ops, 2, &res, ar), NFS4ERR_NOFILEHANDLE);
	CHECK_EQ(atomic_load(&S.st.getattrs), g0);

	/* RECLAIM_COMPLETE once per client (RFC 8881 §18.51.3) */
	ops[0] = op_seq(in.sessionid, 11, ++seq, false);
	ops[1] = op_plain(OP_RECLAIM_COMPLETE);
	CHECK_EQ(call(cl, 1, ops, 2, &res, ar), NFS4_OK);
	ops[0] = op_seq(in.sessionid, 11, ++seq, false);
	CHECK_EQ(call(cl, 1, ops, 2, &res, ar), NFS4ERR_COMPLETE_ALREADY);
	ops[0] = op_seq(in.sessionid, 11, ++seq, false);
	ops[1].u.opreclaim_complete.rca_one_fs = true;
	CHECK_EQ(call(cl, 1, ops, 2, &res, ar), NFS4ERR_NOFILEHANDLE);
}

/* RFC 8881 §18.35.5, cases 1-9, and what EXCHANGE_ID returns. */
static void test_exchange_id(struct nfsd_clnt *c1, struct nfsd_clnt *c2, struct xdr_arena *ar)
{
	EXCHANGE_ID4resok a, b;
	const char *own = "exid-owner";

	/* case 1: new owner; the server's role, not confirmed */
	CHECK_EQ(exid(c1, 0, own, 100, EXCHGID4_FLAG_USE_PNFS_DS, &a, ar), NFS4_OK);
	CHECK_EQ(a.eir_flags, EXCHGID4_FLAG_USE_PNFS_DS);
	CHECK_EQ(a.eir_state_protect.spr_how, SP4_NONE);
	CHECK_EQ(a.eir_server_impl_id.len, 1);
	/* the same server owner and scope on another connection */
	CHECK_EQ(exid(c2, 0, "exid-other", 1, 0, &b, ar), NFS4_OK);
	CHECK(xdr_opaque_eq(a.eir_server_owner.so_major_id, b.eir_server_owner.so_major_id));
	CHECK(
	    xdr_opaque_eq(a.eir_server_owner.so_major_id, xdr_opaque_of(MAJOR, sizeof(MAJOR) - 1)));
	CHECK_EQ(a.eir_server_owner.so_minor_id, 7);
	CHECK_EQ(b.eir_server_owner.so_minor_id, 7);
	CHECK(xdr_opaque_eq(a.eir_server_scope, b.eir_server_scope));
	CHECK(xdr_opaque_eq(a.eir_server_scope, xdr_opaque_of(SCOPE, sizeof(SCOPE) - 1)));
	CHECK_EQ(b.eir_flags, EXCHGID4_FLAG_USE_PNFS_DS); /* the server's role whatever asked */

	/* case 4: an unconfirmed record is replaced, with a new client ID */
	CHECK_EQ(exid(c2, 0, own, 100, 0, &b, ar), NFS4_OK);
	CHECK(b.eir_clientid != a.eir_clientid);
	CHECK(was_expired(&S.st, a.eir_clientid));
	/* the replaced ID is gone */
	CHECK_EQ(create_session(c1, a.eir_clientid, a.eir_sequenceid, 0, NULL, ar),
		 NFS4ERR_STALE_CLIENTID);
	CREATE_SESSION4resok cs;
	CHECK_EQ(create_session(c1, b.eir_clientid, b.eir_sequenceid, 0, &cs, ar), NFS4_OK);
	uint64_t id = b.eir_clientid;

	/* case 2: same owner and verifier, confirmed: the same ID */
	CHECK_EQ(exid(c1, 0, own, 100, 0, &a, ar), NFS4_OK);
	CHECK_EQ(a.eir_clientid, id);
	CHECK_EQ(a.eir_flags, EXCHGID4_FLAG_USE_PNFS_DS | EXCHGID4_FLAG_CONFIRMED_R);
	CHECK_EQ(a.eir_sequenceid, b.eir_sequenceid + 1);

	/* case 6: update with the right verifier and principal */
	CHECK_EQ(exid(c1, 0, own, 100, EXCHGID4_FLAG_UPD_CONFIRMED_REC_A, &a, ar), NFS4_OK);
	CHECK_EQ(a.eir_clientid, id);
	CHECK(a.eir_flags & EXCHGID4_FLAG_CONFIRMED_R);
	/* case 7: update without a confirmed record */
	CHECK_EQ(exid(c1, 0, "exid-nobody", 1, EXCHGID4_FLAG_UPD_CONFIRMED_REC_A, NULL, ar),
		 NFS4ERR_NOENT);
	/* case 8: update with another verifier */
	CHECK_EQ(exid(c1, 0, own, 101, EXCHGID4_FLAG_UPD_CONFIRMED_REC_A, NULL, ar),
		 NFS4ERR_NOT_SAME);
	/* case 9: update from another principal */
	CHECK_EQ(exid(c1, 1000, own, 100, EXCHGID4_FLAG_UPD_CONFIRMED_REC_A, NULL, ar),
		 NFS4ERR_PERM);
	/* case 3: another principal, the record in use */
	CHECK_EQ(exid(c1, 1000, own, 100, 0, NULL, ar), NFS4ERR_CLID_INUSE);

	/* flags the client may not send; state protection we do not offer
	 * (SSV), or not over AUTH_SYS (SP4_MACH_CRED needs RPCSEC_GSS with
	 * integrity or privacy) */
	CHECK_EQ(exid(c1, 0, own, 100, EXCHGID4_FLAG_CONFIRMED_R, NULL, ar), NFS4ERR_INVAL);
	CHECK_EQ(exid(c1, 0, own, 100, 0x00001000, NULL, ar), NFS4ERR_INVAL);
	nfs_argop4 sp = op_exid(own, 100, 0);
	COMPOUND4res res;
	sp.u.opexchange_id.eia_state_protect.spa_how = SP4_SSV;
	CHECK_EQ(call(c1, 1, &sp, 1, &res, ar), NFS4ERR_ENCR_ALG_UNSUPP);
	sp.u.opexchange_id.eia_state_protect.spa_how = SP4_MACH_CRED;
	CHECK_EQ(call(c1, 1, &sp, 1, &res, ar), NFS4ERR_INVAL);

	/* case 5: a new verifier is a rebooted client: a new unconfirmed ID;
	 * the old one lives until the new one is confirmed */
	CHECK_EQ(exid(c2, 0, own, 200, 0, &b, ar), NFS4_OK);
	CHECK(b.eir_clientid != id);
	CHECK(!(b.eir_flags & EXCHGID4_FLAG_CONFIRMED_R));
	nfs_argop4 ops[2] = {op_seq(cs.csr_sessionid, 0, 1, false), op_putfh("x")};
	CHECK_EQ(call(c1, 1, ops, 2, &res, ar), NFS4_OK);
	CHECK(!was_expired(&S.st, id));
	CHECK_EQ(create_session(c2, b.eir_clientid, b.eir_sequenceid, 0, NULL, ar), NFS4_OK);
	CHECK(was_expired(&S.st, id));
	ops[0] = op_seq(cs.csr_sessionid, 0, 2, false);
	CHECK_EQ(call(c1, 1, ops, 2, &res, ar), NFS4ERR_BADSESSION);

	/* case 3 is "in use" only while the record's lease holds state
	 * (§18.35.4): a session, or the embedder's opens, locks, layouts */
	CHECK_EQ(exid(c1, 0, "exid-idle", 7, 0, &b, ar), NFS4_OK);
	CREATE_SESSION4resok ic;
	CHECK_EQ(create_session(c1, b.eir_clientid, b.eir_sequenceid, 0, &ic, ar), NFS4_OK);
	uint64_t idle = b.eir_clientid;
	CHECK_EQ(exid(c1, 1000, "exid-idle", 7, 0, NULL, ar), NFS4ERR_CLID_INUSE);
	nfs_argop4 ds = op_plain(OP_DESTROY_SESSION);
	memcpy(ds.u.opdestroy_session.dsa_sessionid, ic.csr_sessionid, NFS4_SESSIONID_SIZE);
	CHECK_EQ(call(c1, 1, &ds, 1, &res, ar), NFS4_OK);
	atomic_store(&S.st.busy_id, idle);
	CHECK_EQ(exid(c1, 1000, "exid-idle", 7, 0, NULL, ar), NFS4ERR_CLID_INUSE);
	atomic_store(&S.st.busy_id, 0);
	/* no state: the other principal gets a new client ID, which ends the
	 * old one when its CREATE_SESSION confirms it (as a restart) */
	CHECK_EQ(exid(c1, 1000, "exid-idle", 7, 0, &a, ar), NFS4_OK);
	CHECK(a.eir_clientid != idle && !(a.eir_flags & EXCHGID4_FLAG_CONFIRMED_R));
	CHECK(!was_expired(&S.st, idle));
	nfs_argop4 cso = op_cs(a.eir_clientid, a.eir_sequenceid, 0);
	struct xargs xp = {.minor = 1, .ops = &cso, .nops = 1};
	struct rawcap cap;
	CHECK_EQ(xcall(c1, 1000, &xp, &cap, &res, ar), 0);
	free(cap.buf);
	CHECK_EQ(res.status, NFS4_OK);
	CHECK(was_expired(&S.st, idle));
}

/* RFC 8881 §18.36: the CREATE_SESSION slot, negotiation, flags. */
static void test_create_session(struct nfsd_clnt *cl, struct xdr_arena *ar)
{
	EXCHANGE_ID4resok e;
	CREATE_SESSION4resok a, b;
	CHECK_EQ(exid(cl, 0, "cs-owner", 1, 0, &e, ar), NFS4_OK);
	uint64_t id = e.eir_clientid;
	uint32_t s = e.eir_sequenceid;

	CHECK_EQ(create_session(cl, id, s + 1, 0, NULL, ar), NFS4ERR_SEQ_MISORDERED);
	CHECK_EQ(create_session(cl, id ^ 0xffff, s, 0, NULL, ar), NFS4ERR_STALE_CLIENTID);
	/* not from another principal (RFC 8881 §18.36.4) */
	nfs_argop4 op = op_cs(id, s, 0);
	struct xargs xp = {.minor = 1, .ops = &op, .nops = 1};
	struct rawcap cap;
	COMPOUND4res res;
	CHECK_EQ(xcall(cl, 1000, &xp, &cap, &res, ar), 0);
	free(cap.buf);
	CHECK_EQ(res.status, NFS4ERR_CLID_INUSE);
	CHECK_EQ(create_session(cl, id, s, 0, &a, ar), NFS4_OK);
	CHECK_EQ(a.csr_sequence, s);
	CHECK_EQ(a.csr_flags, 0);
	/* clamped to what the server allows */
	CHECK_EQ(a.csr_fore_chan_attrs.ca_maxrequests, 64);
	CHECK_EQ(a.csr_fore_chan_attrs.ca_maxoperations, 16);
	CHECK_EQ(a.csr_fore_chan_attrs.ca_headerpadsize, 0);
	CHECK_EQ(a.csr_fore_chan_attrs.ca_maxrequestsize, 1 << 20);
	CHECK_EQ(a.csr_back_chan_attrs.ca_maxrequests, 16);

	/* a retry: the cached reply, not a second session */
	CHECK_EQ(create_session(cl, id, s, 0, &b, ar), NFS4_OK);
	CHECK(!memcmp(a.csr_sessionid, b.csr_sessionid, NFS4_SESSIONID_SIZE));
	CHECK_EQ(create_session(cl, id, s + 2, 0, NULL, ar), NFS4ERR_SEQ_MISORDERED);
	CHECK_EQ(create_session(cl, id, s - 1, 0, NULL, ar), NFS4ERR_SEQ_MISORDERED);
	/* PERSIST is not granted; the back channel flag is */
	CHECK_EQ(create_session(cl, id, s + 1,
				CREATE_SESSION4_FLAG_PERSIST | CREATE_SESSION4_FLAG_CONN_BACK_CHAN,
				&b, ar),
		 NFS4_OK);
	CHECK(memcmp(a.csr_sessionid, b.csr_sessionid, NFS4_SESSIONID_SIZE));
	CHECK_EQ(b.csr_flags, CREATE_SESSION4_FLAG_CONN_BACK_CHAN);

	/* channel attributes the server cannot work with */
	op = op_cs(id, s + 2, 0);
	op.u.opcreate_session.csa_fore_chan_attrs.ca_maxrequests = 0;
	CHECK_EQ(call(cl, 1, &op, 1, &res, ar), NFS4ERR_TOOSMALL);
	/* a back channel that could never carry a callback (§18.36.3) */
	op = op_cs(id, s + 2, 0);
	op.u.opcreate_session.csa_back_chan_attrs.ca_maxrequestsize = 10;
	op.u.opcreate_session.csa_back_chan_attrs.ca_maxoperations = 1;
	CHECK_EQ(call(cl, 1, &op, 1, &res, ar), NFS4ERR_TOOSMALL);
	op = op_cs(id, s + 2, 0);
	op.u.opcreate_session.csa_back_chan_attrs.ca_maxoperations = 1;
	CHECK_EQ(call(cl, 1, &op, 1, &res, ar), NFS4ERR_TOOSMALL);
	op = op_cs(id, s + 2, 0);
	op.u.opcreate_session.csa_back_chan_attrs.ca_maxrequestsize = 512;
	CHECK_EQ(call(cl, 1, &op, 1, &res, ar), NFS4ERR_TOOSMALL);
	/* only RPCSEC_GSS for callbacks */
	op = op_cs(id, s + 2, 0);
	callback_sec_parms4 gss = {.cb_secflavor = NFSD_RPCSEC_GSS};
	op.u.opcreate_session.csa_sec_parms.val = &gss;
	CHECK_EQ(call(cl, 1, &op, 1, &res, ar), NFS4ERR_ENCR_ALG_UNSUPP);
	/* and neither consumed the slot */
	CHECK_EQ(create_session(cl, id, s + 2, 0, NULL, ar), NFS4_OK);
}

struct bg_call {
	struct nfsd_clnt *cl;
	nfs_argop4 ops[4];
	unsigned nops;
	COMPOUND4res res;
	struct xdr_arena ar;
	pthread_t thr;
};

static void *bg_main(void *arg)
{
	struct bg_call *b = arg;
	call(b->cl, 1, b->ops, b->nops, &b->res, &b->ar);
	return NULL;
}

static void bg_start(struct bg_call *b)
{
	xdr_arena_init(&b->ar, NULL, 0, 1 << 20);
	CHECK_EQ(pthread_create(&b->thr, NULL, bg_main, b), 0);
}

static void bg_join(struct bg_call *b)
{
	pthread_join(b->thr, NULL);
}

/* RFC 8881 §2.10.6.1 and §18.46: the slot rules. */
static void test_slots(struct nfsd_clnt *cl, struct nfs41c_session *sess, struct xdr_arena *ar)
{
	struct nfs41c_session_info in;
	nfs41c_session_info(sess, &in);
	struct rawcap c1, c2;
	COMPOUND4res res;
	nfs_argop4 ops[4] = {op_seq(in.sessionid, 3, 1, true), op_putfh("f"), op_plain(OP_GETATTR)};
	struct xargs x = {.minor = 1, .ops = ops, .nops = 3};
	int g = atomic_load(&S.st.getattrs);

	/* new request, cached */
	CHECK_EQ(xcall(cl, 0, &x, &c1, &res, ar), 0);
	CHECK_EQ(res.status, NFS4_OK);
	SEQUENCE4resok *sr = &res.resarray.val[0].u.opsequence.u.sr_resok4;
	CHECK_EQ(sr->sr_slotid, 3);
	CHECK_EQ(sr->sr_sequenceid, 1);
	CHECK_EQ(sr->sr_highest_slotid, 63);
	CHECK_EQ(sr->sr_target_highest_slotid, 63);
	CHECK_EQ(atomic_load(&S.st.getattrs), g + 1);
	/* its retry: the same bytes, and GETATTR did not run again */
	CHECK_EQ(xcall(cl, 0, &x, &c2, &res, ar), 0);
	CHECK_EQ(c1.len, c2.len);
	CHECK(!memcmp(c1.buf, c2.buf, c1.len));
	CHECK_EQ(atomic_load(&S.st.getattrs), g + 1);
	free(c1.buf);
	free(c2.buf);

	/* not cached: the retry gets RETRY_UNCACHED_REP and runs nothing */
	ops[0] = op_seq(in.sessionid, 3, 2, false);
	CHECK_EQ(call(cl, 1, ops, 3, &res, ar), NFS4_OK);
	CHECK_EQ(atomic_load(&S.st.getattrs), g + 2);
	CHECK_EQ(call(cl, 1, ops, 3, &res, ar), NFS4ERR_RETRY_UNCACHED_REP);
	CHECK_EQ(res.resarray.len, 1);
	CHECK_EQ(atomic_load(&S.st.getattrs), g + 2);

	/* misordered, old, never used; past the table */
	ops[0] = op_seq(in.sessionid, 3, 5, false);
	CHECK_EQ(call(cl, 1, ops, 3, &res, ar), NFS4ERR_SEQ_MISORDERED);
	ops[0] = op_seq(in.sessionid, 3, 1, false);
	CHECK_EQ(call(cl, 1, ops, 3, &res, ar), NFS4ERR_SEQ_MISORDERED);
	ops[0] = op_seq(in.sessionid, 4, 0, false);
	CHECK_EQ(call(cl, 1, ops, 3, &res, ar), NFS4ERR_SEQ_MISORDERED);
	ops[0] = op_seq(in.sessionid, 64, 1, false);
	CHECK_EQ(call(cl, 1, ops, 3, &res, ar), NFS4ERR_BADSLOT);
	ops[0] = op_seq(in.sessionid, 63, 1, false);
	CHECK_EQ(call(cl, 1, ops, 3, &res, ar), NFS4_OK);
	CHECK_EQ(atomic_load(&S.st.getattrs), g + 3);
	uint8_t bogus[NFS4_SESSIONID_SIZE] = {1, 2, 3};
	ops[0] = op_seq(bogus, 0, 1, false);
	CHECK_EQ(call(cl, 1, ops, 3, &res, ar), NFS4ERR_BADSESSION);

	/* a retry with other operations: a false retry */
	ops[0] = op_seq(in.sessionid, 3, 3, true);
	CHECK_EQ(call(cl, 1, ops, 3, &res, ar), NFS4_OK);
	CHECK_EQ(call(cl, 1, ops, 2, &res, ar), NFS4ERR_SEQ_FALSE_RETRY);
	CHECK_EQ(call(cl, 1, ops, 3, &res, ar), NFS4_OK);
	CHECK_EQ(atomic_load(&S.st.getattrs), g + 4);

	/* a retry while the request is still running: DELAY */
	gate(&S.st, true);
	struct bg_call bg = {.cl = cl, .nops = 3};
	bg.ops[0] = op_seq(in.sessionid, 5, 1, false);
	bg.ops[1] = op_putfh("f");
	bg.ops[2] = op_read(10);
	int r0 = atomic_load(&S.st.reads);
	bg_start(&bg);
	wait_blocked(&S.st, 1);
	CHECK_EQ(call(cl, 1, bg.ops, 3, &res, ar), NFS4ERR_DELAY);
	bg.ops[0].u.opsequence.sa_sequenceid = 2;
	CHECK_EQ(call(cl, 1, bg.ops, 3, &res, ar), NFS4ERR_SEQ_MISORDERED);
	bg.ops[0].u.opsequence.sa_sequenceid = 1;
	gate(&S.st, false);
	bg_join(&bg);
	CHECK_EQ(bg.res.status, NFS4_OK);
	CHECK_EQ(bg.res.resarray.val[2].u.opread.u.resok4.data.len, 10);
	xdr_arena_release(&bg.ar);
	CHECK_EQ(call(cl, 1, bg.ops, 3, &res, ar), NFS4ERR_RETRY_UNCACHED_REP);
	CHECK_EQ(atomic_load(&S.st.reads), r0 + 1);
}

/* RFC 8881 §2.10.6.4, §18.46.3: the session's size and op limits. */
static void test_limits(struct nfsd_clnt *cl, struct xdr_arena *ar)
{
	struct nfs41c_session *sess;
	struct nfs41c_session_opts so = {.owner = "limits-owner",
					 .max_req = 768,
					 .max_resp = 4096,
					 .max_resp_cached = 1024,
					 .max_ops = 8};
	CHECK_EQ(nfs41c_session_create_opts(cl, &so, &sess), 0);
	struct nfs41c_session_info in;
	nfs41c_session_info(sess, &in);
	CHECK_EQ(in.fore.ca_maxoperations, 8);
	CHECK_EQ(in.fore.ca_maxresponsesize_cached, 1024);
	COMPOUND4res res;
	nfs_argop4 ops[40];
	uint32_t seq = 0;

	/* TOO_MANY_OPS: one past ca_maxoperations, and far past the server's */
	ops[0] = op_seq(in.sessionid, 1, ++seq, false);
	for (int i = 1; i < 40; i++)
		ops[i] = op_putfh("f");
	CHECK_EQ(call(cl, 1, ops, 9, &res, ar), NFS4ERR_TOO_MANY_OPS);
	CHECK_EQ(res.resarray.len, 1);
	CHECK_EQ(call(cl, 1, ops, 40, &res, ar), NFS4ERR_TOO_MANY_OPS);
	CHECK_EQ(res.resarray.len, 1);
	CHECK_EQ(call(cl, 1, ops, 8, &res, ar), NFS4_OK); /* the slot was not used */
	/* the library gives a seqid SEQUENCE refused out again (slot 0) */
	CHECK_EQ(nfs41c_compound(sess, &ops[1], 8, &res, ar), 0);
	CHECK_EQ(res.status, NFS4ERR_TOO_MANY_OPS);
	CHECK_EQ(nfs41c_compound(sess, &ops[1], 7, &res, ar), 0);
	CHECK_EQ(res.status, NFS4_OK);
	CHECK_EQ(res.resarray.val[0].u.opsequence.u.sr_resok4.sr_sequenceid, 1);

	/* REQ_TOO_BIG: 7 filehandles of 128 bytes pass 768 */
	char big[129];
	memset(big, 'b', 128);
	big[128] = 0;
	ops[0] = op_seq(in.sessionid, 1, ++seq, false);
	for (int i = 1; i < 8; i++)
		ops[i] = op_putfh(big);
	CHECK_EQ(call(cl, 1, ops, 8, &res, ar), NFS4ERR_REQ_TOO_BIG);
	CHECK_EQ(res.resarray.len, 1);

	/* REP_TOO_BIG before READ runs (it has a res_bound) */
	int r0 = atomic_load(&S.st.reads);
	ops[1] = op_putfh("f");
	ops[2] = op_read(8000);
	CHECK_EQ(call(cl, 1, ops, 3, &res, ar), NFS4ERR_REP_TOO_BIG);
	CHECK_EQ(res.resarray.len, 3);
	CHECK_EQ(res.resarray.val[2].resop, OP_READ);
	CHECK_EQ(atomic_load(&S.st.reads), r0);
	/* ... and the cached-size limit with sa_cachethis */
	ops[0] = op_seq(in.sessionid, 1, ++seq, true);
	ops[2] = op_read(2000);
	CHECK_EQ(call(cl, 1, ops, 3, &res, ar), NFS4ERR_REP_TOO_BIG_TO_CACHE);
	CHECK_EQ(atomic_load(&S.st.reads), r0);
	ops[0] = op_seq(in.sessionid, 1, ++seq, false);
	CHECK_EQ(call(cl, 1, ops, 3, &res, ar), NFS4_OK);
	CHECK_EQ(atomic_load(&S.st.reads), r0 + 1);

	/* READLINK has no bound: measured after it ran, its result replaced */
	atomic_store(&S.st.readlink_len, 8000);
	ops[0] = op_seq(in.sessionid, 1, ++seq, false);
	ops[2] = op_plain(OP_READLINK);
	CHECK_EQ(call(cl, 1, ops, 3, &res, ar), NFS4ERR_REP_TOO_BIG);
	CHECK_EQ(res.resarray.len, 3);
	atomic_store(&S.st.readlink_len, 2000);
	ops[0] = op_seq(in.sessionid, 1, ++seq, true);
	struct rawcap c1, c2;
	struct xargs x = {.minor = 1, .ops = ops, .nops = 3};
	CHECK_EQ(xcall(cl, 0, &x, &c1, &res, ar), 0);
	CHECK_EQ(res.status, NFS4ERR_REP_TOO_BIG_TO_CACHE);
	/* that error reply is what the slot cached */
	int l0 = atomic_load(&S.st.readlinks);
	CHECK_EQ(xcall(cl, 0, &x, &c2, &res, ar), 0);
	CHECK(c1.len == c2.len && !memcmp(c1.buf, c2.buf, c1.len));
	CHECK_EQ(atomic_load(&S.st.readlinks), l0);
	free(c1.buf);
	free(c2.buf);
	ops[0] = op_seq(in.sessionid, 1, ++seq, false);
	CHECK_EQ(call(cl, 1, ops, 3, &res, ar), NFS4_OK);
	CHECK_EQ(res.resarray.val[2].u.opreadlink.u.resok4.link.len, 2000);
	CHECK_EQ(nfs41c_session_destroy(sess), 0);
}

/* RFC 8881 §18.37, §18.50 */
static void test_destroy(struct nfsd_clnt *cl, struct xdr_arena *ar)
{
	struct nfs41c_session *sess;
	CHECK_EQ(nfs41c_session_create(cl, "destroy-owner", 0, &sess), 0);
	struct nfs41c_session_info in;
	nfs41c_session_info(sess, &in);
	COMPOUND4res res;
	nfs_argop4 ops[3];

	ops[0] = op_plain(OP_DESTROY_SESSION);
	memset(ops[0].u.opdestroy_session.dsa_sessionid, 0xee, NFS4_SESSIONID_SIZE);
	CHECK_EQ(call(cl, 1, ops, 1, &res, ar), NFS4ERR_BADSESSION);
	ops[0] = op_plain(OP_DESTROY_CLIENTID);
	ops[0].u.opdestroy_clientid.dca_clientid = in.clientid;
	CHECK_EQ(call(cl, 1, ops, 1, &res, ar), NFS4ERR_CLIENTID_BUSY);

	/* not while a request runs on it */
	gate(&S.st, true);
	struct bg_call bg = {.cl = cl, .nops = 3};
	bg.ops[0] = op_seq(in.sessionid, 0, 1, false);
	bg.ops[1] = op_putfh("f");
	bg.ops[2] = op_read(1);
	bg_start(&bg);
	wait_blocked(&S.st, 1);
	ops[0] = op_plain(OP_DESTROY_SESSION);
	memcpy(ops[0].u.opdestroy_session.dsa_sessionid, in.sessionid, NFS4_SESSIONID_SIZE);
	CHECK_EQ(call(cl, 1, ops, 1, &res, ar), NFS4ERR_DELAY);
	gate(&S.st, false);
	bg_join(&bg);
	CHECK_EQ(bg.res.status, NFS4_OK);
	xdr_arena_release(&bg.ar);

	/* its own session: only as the last op */
	ops[0] = op_seq(in.sessionid, 0, 2, false);
	ops[1] = op_plain(OP_DESTROY_SESSION);
	memcpy(ops[1].u.opdestroy_session.dsa_sessionid, in.sessionid, NFS4_SESSIONID_SIZE);
	ops[2] = op_putfh("f");
	CHECK_EQ(call(cl, 1, ops, 3, &res, ar), NFS4ERR_NOT_ONLY_OP);
	ops[0] = op_seq(in.sessionid, 0, 3, false);
	CHECK_EQ(call(cl, 1, ops, 2, &res, ar), NFS4_OK);
	ops[0] = op_seq(in.sessionid, 0, 4, false);
	CHECK_EQ(call(cl, 1, ops, 1, &res, ar), NFS4ERR_BADSESSION);

	/* the embedder says the client still holds state */
	atomic_store(&S.st.busy_id, in.clientid);
	ops[0] = op_plain(OP_DESTROY_CLIENTID);
	ops[0].u.opdestroy_clientid.dca_clientid = in.clientid;
	CHECK_EQ(call(cl, 1, ops, 1, &res, ar), NFS4ERR_CLIENTID_BUSY);
	atomic_store(&S.st.busy_id, 0);
	CHECK(!was_expired(&S.st, in.clientid));
	CHECK_EQ(call(cl, 1, ops, 1, &res, ar), NFS4_OK);
	CHECK(was_expired(&S.st, in.clientid));
	CHECK_EQ(call(cl, 1, ops, 1, &res, ar), NFS4ERR_STALE_CLIENTID);
	CHECK_EQ(create_session(cl, in.clientid, 2, 0, NULL, ar), NFS4ERR_STALE_CLIENTID);
	CHECK_EQ(nfs41c_session_destroy(sess), NFS4ERR_BADSESSION); /* frees it */
	/* the library's destroy: DESTROY_SESSION + DESTROY_CLIENTID */
	CHECK_EQ(nfs41c_session_create(cl, "destroy-owner-2", 0, &sess), 0);
	nfs41c_session_info(sess, &in);
	CHECK_EQ(nfs41c_session_destroy(sess), 0);
	CHECK(was_expired(&S.st, in.clientid));
}

/* RFC 8881 §18.34, §18.33, §2.10.3.1: connections and the back channel. */
static void test_bind(struct nfsd_clnt *c1, struct xdr_arena *ar)
{
	struct nfs41c_session *sess;
	struct nfs41c_session_opts so = {.owner = "bind-owner", .cb_program = CBPROG};
	CHECK_EQ(nfs41c_session_create_opts(c1, &so, &sess), 0);
	struct nfs41c_session_info in;
	nfs41c_session_info(sess, &in);
	COMPOUND4res res;
	nfs_argop4 ops[2] = {op_putfh("f"), op_plain(OP_LOOKUPP)};

	/* no back channel yet: SEQUENCE says so and a callback cannot go */
	CHECK_EQ(nfs41c_compound(sess, ops, 1, &res, ar), 0);
	CHECK_EQ(res.status, NFS4_OK);
	uint32_t fl = res.resarray.val[0].u.opsequence.u.sr_resok4.sr_status_flags;
	CHECK_EQ(fl, SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_CB_PATH_DOWN_SESSION);
	CHECK_EQ(nfs41c_compound(sess, &ops[1], 1, &res, ar), 0);
	CHECK_EQ(res.status, NFS4ERR_CB_PATH_DOWN);

	/* a second connection, bound for both directions */
	struct nfsd_clnt *c2 = mk(S.port, true);
	channel_dir_from_server4 got = 0;
	CHECK_EQ(nfs41c_session_bind(sess, c2, CDFC4_FORE_OR_BOTH, &got), 0);
	CHECK_EQ(got, CDFS4_BOTH);
	CHECK_EQ(nfs41c_compound_ex(sess, c2, 0, ops, 1, &res, ar), 0);
	CHECK_EQ(res.status, NFS4_OK);
	CHECK_EQ(res.resarray.val[0].u.opsequence.u.sr_resok4.sr_status_flags, 0);
	/* the server calls back on c2, whose back channel answers */
	CHECK_EQ(nfs41c_compound(sess, &ops[1], 1, &res, ar), 0);
	CHECK_EQ(res.status, NFS4_OK);

	/* BACKCHANNEL_CTL: the program the callback goes to */
	nfs_argop4 bc = {.argop = OP_BACKCHANNEL_CTL};
	callback_sec_parms4 gss = {.cb_secflavor = NFSD_RPCSEC_GSS};
	callback_sec_parms4 sys = {.cb_secflavor = NFSD_AUTH_SYS};
	sys.u.cbsp_sys_cred.machinename = xdr_string_of("m");
	bc.u.opbackchannel_ctl.bca_cb_program = CBPROG + 1;
	bc.u.opbackchannel_ctl.bca_sec_parms.len = 1;
	bc.u.opbackchannel_ctl.bca_sec_parms.val = &gss;
	CHECK_EQ(nfs41c_compound(sess, &bc, 1, &res, ar), 0);
	CHECK_EQ(res.status, NFS4ERR_ENCR_ALG_UNSUPP);
	bc.u.opbackchannel_ctl.bca_sec_parms.val = &sys;
	CHECK_EQ(nfs41c_compound(sess, &bc, 1, &res, ar), 0);
	CHECK_EQ(res.status, NFS4_OK);
	CHECK_EQ(nfs41c_compound(sess, &ops[1], 1, &res, ar), 0);
	CHECK_EQ(res.status, NFS4ERR_CB_PATH_DOWN); /* c2 serves only CBPROG */
	bc.u.opbackchannel_ctl.bca_cb_program = CBPROG;
	CHECK_EQ(nfs41c_compound(sess, &bc, 1, &res, ar), 0);
	CHECK_EQ(nfs41c_compound(sess, &ops[1], 1, &res, ar), 0);
	CHECK_EQ(res.status, NFS4_OK);

	/* bad session, bad direction */
	nfs_argop4 b = {.argop = OP_BIND_CONN_TO_SESSION};
	memset(b.u.opbind_conn_to_session.bctsa_sessid, 0x55, NFS4_SESSIONID_SIZE);
	b.u.opbind_conn_to_session.bctsa_dir = CDFC4_FORE;
	CHECK_EQ(call(c2, 1, &b, 1, &res, ar), NFS4ERR_BADSESSION);
	memcpy(b.u.opbind_conn_to_session.bctsa_sessid, in.sessionid, NFS4_SESSIONID_SIZE);
	b.u.opbind_conn_to_session.bctsa_dir = 5;
	CHECK_EQ(call(c2, 1, &b, 1, &res, ar), NFS4ERR_INVAL);
	/* rebinding c2 for the fore channel only: no back channel again */
	CHECK_EQ(nfs41c_session_bind(sess, c2, CDFC4_FORE, &got), 0);
	CHECK_EQ(got, CDFS4_FORE);
	CHECK_EQ(nfs41c_compound(sess, &ops[1], 1, &res, ar), 0);
	CHECK_EQ(res.status, NFS4ERR_CB_PATH_DOWN);
	CHECK_EQ(nfs41c_session_destroy(sess), 0);

	/* CREATE_SESSION4_FLAG_CONN_BACK_CHAN makes its own connection the
	 * back channel */
	struct nfs41c_session_opts so2 = {.owner = "bind-owner-2",
					  .cb_program = CBPROG,
					  .create_flags = CREATE_SESSION4_FLAG_CONN_BACK_CHAN};
	CHECK_EQ(nfs41c_session_create_opts(c2, &so2, &sess), 0);
	nfs41c_session_info(sess, &in);
	CHECK_EQ(in.create_flags, CREATE_SESSION4_FLAG_CONN_BACK_CHAN);
	CHECK_EQ(nfs41c_compound(sess, &ops[1], 1, &res, ar), 0);
	CHECK_EQ(res.status, NFS4_OK);
	CHECK_EQ(res.resarray.val[0].u.opsequence.u.sr_resok4.sr_status_flags, 0);
	CHECK_EQ(nfs41c_session_destroy(sess), 0);
	nfsd_clnt_free(c2);
}

struct conc {
	struct nfs41c_session *sess;
	atomic_int ok, bad, done;
};

static void conc_cb(void *ctx, int rc, COMPOUND4res *res)
{
	struct conc *k = ctx;
	if (!rc && res->status == NFS4_OK && res->resarray.len == 3)
		atomic_fetch_add(&k->ok, 1);
	else
		atomic_fetch_add(&k->bad, 1);
	atomic_fetch_add(&k->done, 1);
}

static void *conc_main(void *arg)
{
	struct conc *k = arg;
	nfs_argop4 ops[2] = {op_putfh("c"), op_plain(OP_GETATTR)};
	for (int i = 0; i < 250; i++)
		CHECK_EQ(nfs41c_compound_async(k->sess, NULL, i & 1 ? NFS41C_CACHETHIS : 0, ops, 2,
					       conc_cb, k),
			 0);
	return NULL;
}

/* 1,000 COMPOUNDs from 4 threads over 64 slots. */
static void test_concurrent(struct nfsd_clnt *cl)
{
	struct conc k = {.ok = 0};
	CHECK_EQ(nfs41c_session_create(cl, "concurrent-owner", 0, &k.sess), 0);
	int g0 = atomic_load(&S.st.getattrs);
	atomic_store(&S.st.max_slot, 0);
	atomic_store(&S.st.slow, true);
	pthread_t thr[4];
	for (int i = 0; i < 4; i++)
		CHECK_EQ(pthread_create(&thr[i], NULL, conc_main, &k), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(thr[i], NULL);
	for (int i = 0; i < 3000 && atomic_load(&k.done) < 1000; i++)
		usleep(10000);
	atomic_store(&S.st.slow, false);
	CHECK_EQ(atomic_load(&k.ok), 1000);
	CHECK_EQ(atomic_load(&k.bad), 0);
	CHECK_EQ(atomic_load(&S.st.getattrs), g0 + 1000);
	CHECK_EQ(atomic_load(&S.st.max_slot), 63); /* every slot was used */
	CHECK_EQ(nfs41c_session_dead_slots(k.sess), 0);
	CHECK_EQ(nfs41c_session_destroy(k.sess), 0);
}

/* The client library retires a slot whose call was lost in transport: the
 * server may have run it, so its seqid is unknown (RFC 8881 §2.10.6.1). */
static void test_lost_call(struct xdr_arena *ar)
{
	struct nfsd_clnt *cl = mk_timeout(S.port, false, 300);
	struct nfs41c_session *sess;
	CHECK_EQ(nfs41c_session_create(cl, "lost-call-owner", 0, &sess), 0);
	nfs_argop4 ops[2] = {op_putfh("f"), op_read(1)};
	COMPOUND4res res;
	int r0 = atomic_load(&S.st.reads);
	gate(&S.st, true);
	CHECK_EQ(nfs41c_compound(sess, ops, 2, &res, ar), -ETIMEDOUT);
	CHECK_EQ(nfs41c_session_dead_slots(sess), 1);
	gate(&S.st, false);
	while (atomic_load(&S.st.reads) == r0)
		usleep(1000);
	usleep(100000); /* and let that COMPOUND end */
	/* slot 0 stays out of use; the next call takes slot 1 */
	CHECK_EQ(nfs41c_compound(sess, ops, 1, &res, ar), 0);
	CHECK_EQ(res.status, NFS4_OK);
	CHECK_EQ(res.resarray.val[0].u.opsequence.u.sr_resok4.sr_slotid, 1);
	CHECK_EQ(nfs41c_session_destroy(sess), 0);
	nfsd_clnt_free(cl);
}

/* RFC 8881 §8.3, §2.10.6.1: leases run out; SEQUENCE renews them; a
 * client with a request in progress does not expire. */
static void test_lease(void)
{
	struct tsrv L;
	tsrv_start(&L, 2);
	struct nfsd_clnt *cl = mk(L.port, false);
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	struct nfs41c_session *idle, *busy, *blocked;
	CHECK_EQ(nfs41c_session_create(cl, "lease-idle", 0, &idle), 0);
	CHECK_EQ(nfs41c_session_create(cl, "lease-busy", 0, &busy), 0);
	CHECK_EQ(nfs41c_session_create(cl, "lease-blocked", 0, &blocked), 0);
	struct nfs41c_session_info ii, bi;
	nfs41c_session_info(idle, &ii);
	nfs41c_session_info(blocked, &bi);
	COMPOUND4res res;
	nfs_argop4 op = op_putfh("f");

	/* blocked: one READ held at the gate for 3 s */
	gate(&L.st, true);
	struct bg_call bg = {.cl = mk(L.port, false), .nops = 3};
	bg.ops[0] = op_seq(bi.sessionid, 9, 1, false); /* a slot the library leaves alone */
	bg.ops[1] = op_putfh("f");
	bg.ops[2] = op_read(1);
	bg_start(&bg);
	wait_blocked(&L.st, 1);
	for (int i = 0; i < 6; i++) {
		usleep(500000);
		CHECK_EQ(nfs41c_compound(busy, &op, 1, &res, &ar), 0);
		CHECK_EQ(res.status, NFS4_OK);
	}
	CHECK(!was_expired(&L.st, bi.clientid));
	gate(&L.st, false);
	bg_join(&bg);
	CHECK_EQ(bg.res.status, NFS4_OK);
	xdr_arena_release(&bg.ar);
	nfsd_clnt_free(bg.cl);

	/* the idle client is gone: its session, its ID */
	CHECK(was_expired(&L.st, ii.clientid));
	CHECK_EQ(nfs41c_compound(idle, &op, 1, &res, &ar), 0);
	CHECK_EQ(res.status, NFS4ERR_BADSESSION);
	CHECK_EQ(create_session(cl, ii.clientid, 2, 0, NULL, &ar), NFS4ERR_STALE_CLIENTID);
	/* the blocked one was renewed when its request ended */
	CHECK_EQ(nfs41c_compound(blocked, &op, 1, &res, &ar), 0);
	CHECK_EQ(res.status, NFS4_OK);
	CHECK_EQ(nfs41c_session_destroy(busy), 0);
	CHECK_EQ(nfs41c_session_destroy(blocked), 0);
	nfs41c_session_destroy(idle); /* fails: already gone; frees it */
	xdr_arena_release(&ar);
	nfsd_clnt_free(cl);
	tsrv_stop(&L);
}

int main(void)
{
	int err = 0;
	ceng = nfsd_client_engine_new(1, 0, &err);
	CHECK(ceng);
	tsrv_start(&S, 90);
	struct nfsd_clnt *c1 = mk(S.port, false), *c2 = mk(S.port, false);
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 16 << 20);
	struct nfs41c_session *sess;
	CHECK_EQ(nfs41c_session_create(c1, "main-owner", EXCHGID4_FLAG_USE_PNFS_DS, &sess), 0);
	struct nfs41c_session_info in;
	nfs41c_session_info(sess, &in);
	CHECK_EQ(in.exchgid_flags, EXCHGID4_FLAG_USE_PNFS_DS);
	CHECK_EQ(in.fore.ca_maxrequests, 64);

	test_compound(c1, sess, &ar);
	xdr_arena_reset(&ar);
	test_positions(c1, sess, &ar);
	xdr_arena_reset(&ar);
	test_exchange_id(c1, c2, &ar);
	xdr_arena_reset(&ar);
	test_create_session(c1, &ar);
	xdr_arena_reset(&ar);
	test_slots(c1, sess, &ar);
	xdr_arena_reset(&ar);
	test_limits(c1, &ar);
	xdr_arena_reset(&ar);
	test_destroy(c1, &ar);
	xdr_arena_reset(&ar);
	test_bind(c1, &ar);
	xdr_arena_reset(&ar);
	test_concurrent(c1);
	test_lost_call(&ar);
	test_lease();

	CHECK_EQ(nfs41c_session_destroy(sess), 0);
	xdr_arena_release(&ar);
	nfsd_clnt_free(c1);
	nfsd_clnt_free(c2);
	tsrv_stop(&S);
	nfsd_server_free(ceng);
	printf("rfc8881-2.10-sessions: ok\n");
	return 0;
}
