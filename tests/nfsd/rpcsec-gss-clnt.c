/* SPDX-License-Identifier: MIT */
/*
 * Our RPC client under RPCSEC_GSS (nfsd/clnt_gss.h) against our server
 * (nfsd/auth_gss.h), with Kerberos V5 from a real KDC that
 * tests/nfsd/rpcsec-gss.sh sets up: the server's keys in the keytab named
 * by argv[1] (nfs/localhost), the client's in KRB5_CLIENT_KTNAME (daemon
 * and nouser, realm BRAID.TEST).
 *
 * It proves: krb5, krb5i and krb5p calls with arguments and results of 0
 * bytes to 1 MiB come back intact, with the caller's uid and principal,
 * for initiator keys from a named keytab and from the default client
 * keytab; a sink (struct nfsd_sink) takes a krb5 reply's data and is left
 * alone under krb5i and krb5p; hundreds of calls in flight from several
 * threads on two connections sharing one context, against a server whose
 * window is 16, all succeed and none is dropped for falling below the
 * window; a context the server evicted (CREDPROBLEM) or expired
 * (CTXPROBLEM) is created anew and the calls refused meanwhile, many in
 * flight among them, are made again and succeed; a call resent after a
 * reconnection is signed afresh (the server would drop its old sequence
 * number as a replay); freeing the client sends RPCSEC_GSS_DESTROY; and a
 * reply verifier, a krb5i checksum or a krb5p seal altered on the way
 * makes the call fail with -EPROTO, as does a creation reply whose
 * verifier is not the MIC of the window.
 */
#include "config.h"

#include <pthread.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nfsd/auth_gss.h"
#include "nfsd/clnt_gss.h"
#include "nfsd/engine.h"
#include "tests/check.h"

#define PROG 0x2000009bu
#define BIG  (1u << 20)

enum { P_NULL = 0, P_ECHO = 1, P_KILLONCE = 2, P_NEVER = 3 };

/* ------------------------------------------------------------- server */

struct echo_res {
	uint32_t uid, gid;
	xdr_string principal;
	xdr_opaque data;
};

static int dec_args(struct xdr_dec *d, void *v)
{
	return xdr_dec_opaque(d, v, 4u << 20);
}

static int enc_res(struct xdr_enc *e, const void *v)
{
	const struct echo_res *r = v;
	xdr_enc_uint32(e, r->uid);
	xdr_enc_uint32(e, r->gid);
	xdr_enc_string(e, &r->principal, 1024);
	xdr_enc_opaque(e, &r->data, 4u << 20);
	return e->err;
}

static int p_null(struct nfsd_req *r, void *a, void *res)
{
	(void)r, (void)a, (void)res;
	return NFSD_SUCCESS;
}

static int p_echo(struct nfsd_req *r, void *a, void *res)
{
	struct echo_res *out = res;
	out->uid = r->cred.uid;
	out->gid = r->cred.gid;
	out->principal = xdr_string_of(r->cred.principal ? r->cred.principal : "");
	out->data = *(xdr_opaque *)a;
	return NFSD_SUCCESS;
}

static atomic_int killed;

/* The first call drops its connection unanswered, after the server has
 * taken its sequence number. */
static int p_killonce(struct nfsd_req *r, void *a, void *res)
{
	if (atomic_fetch_add(&killed, 1) == 0) {
		shutdown(r->conn->fd, SHUT_RDWR);
		return NFSD_DROP;
	}
	return p_echo(r, a, res);
}

/* Never answers. */
static int p_never(struct nfsd_req *r, void *a, void *res)
{
	(void)r, (void)a, (void)res;
	return NFSD_DROP;
}

#define ECHO_ROW(n, f)                                                                             \
	{                                                                                          \
		.name = n, .fn = f, .dec_args = dec_args, .args_size = sizeof(xdr_opaque),         \
		.enc_res = enc_res, .res_size = sizeof(struct echo_res)                            \
	}
static const struct nfsd_proc procs[4] = {
    [P_NULL] = {.name = "NULL", .fn = p_null, .flags = NFSD_PROC_INLINE},
    [P_ECHO] = ECHO_ROW("ECHO", p_echo),
    [P_KILLONCE] = ECHO_ROW("KILLONCE", p_killonce),
    [P_NEVER] = ECHO_ROW("NEVER", p_never),
};
static const struct nfsd_version vers[1] = {{.vers = 1, .procs = procs, .nprocs = 4}};
static const struct nfsd_program prog = {
    .prog = PROG, .name = "gss-clnt-test", .versions = vers, .nversions = 1};

/* A flavor that alters what the real one answers (bad_mode). */
enum { BAD_NONE, BAD_INIT_VERF, BAD_DATA_VERF, BAD_RESULTS };
static _Atomic int bad_mode;
static const struct nfsd_auth_flavor *bad_real;

static int bad_accept(struct nfsd_req *r, const xdr_opaque *cred, const xdr_opaque *verf)
{
	int rc = bad_real->accept(r, cred, verf);
	uint32_t gp = cred->len >= 8 ? xdr_get32(cred->val + 4) : 99;
	int m = bad_mode;
	if (rc == NFSD_AUTH_OK && r->rverf.len &&
	    ((m == BAD_INIT_VERF && (gp == 1 || gp == 2)) || (m == BAD_DATA_VERF && gp == 0)))
		((uint8_t *)r->rverf.val)[r->rverf.len / 2] ^= 0x40;
	return rc;
}

/* One byte of the protected results, 8 bytes in: the krb5i body (after
 * its length and sequence number) or the krb5p token's header. */
static int bad_wrap(struct nfsd_req *r)
{
	int rc = bad_real->wrap(r);
	if (rc || bad_mode != BAD_RESULTS || r->cred.gss_service < 2 || nfsd_req_res_len(r) < 12)
		return rc;
	size_t at = r->enc.len - nfsd_req_res_len(r) + 8;
	for (unsigned i = 0; i < r->enc.niov; i++) {
		if (at < r->enc.iov[i].iov_len) {
			((uint8_t *)r->enc.iov[i].iov_base)[at] ^= 0x10;
			break;
		}
		at -= r->enc.iov[i].iov_len;
	}
	return 0;
}

static struct nfsd_server *srv_start(const struct nfsd_auth_flavor *f, uint16_t *port)
{
	struct nfsd_server_opts so;
	int err = 0;
	nfsd_server_opts_default(&so);
	so.nloops = 2;
	so.nworkers = 2;
	so.max_record = 4u << 20;
	so.arena_limit = 16u << 20;
	struct nfsd_server *s = nfsd_server_new(&so, &err);
	CHECK(s);
	CHECK_EQ(nfsd_server_add_flavor(s, f), 0);
	CHECK_EQ(nfsd_server_add_program(s, &prog), 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK_EQ(nfsd_server_listen(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	CHECK_EQ(nfsd_server_start(s), 0);
	*port = (uint16_t)nfsd_server_listen_port(s, 0);
	return s;
}

static struct nfsd_gss *gss_new(const char *keytab, unsigned window, unsigned max_ctx,
				unsigned life_s)
{
	int err = 0;
	struct nfsd_gss_opts o = {.keytab = keytab,
				  .seq_window = window,
				  .max_contexts = max_ctx,
				  .max_lifetime_s = life_s};
	struct nfsd_gss *g = nfsd_gss_new(&o, &err);
	CHECK(g);
	return g;
}

/* ------------------------------------------------------------- client */

static uint8_t *big;
static uint32_t daemon_uid;
static struct nfsd_server *eng;

static struct nfsd_clnt *clnt_open(uint16_t port, bool reconnect)
{
	int err = 0;
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct nfsd_clnt_opts o = {.timeout_ms = 20000, .reconnect = reconnect};
	struct nfsd_clnt *c = nfsd_clnt_new(eng, (struct sockaddr *)&sa, sizeof(sa), &o, &err);
	CHECK(c);
	return c;
}

static struct nfsd_gss_clnt *gss_open(struct nfsd_clnt *c, const char *principal, bool keytab,
				      int want_err)
{
	char why[512];
	int err = 0;
	struct nfsd_gss_clnt_opts o = {
	    .prog = PROG,
	    .vers = 1,
	    .service = "nfs@localhost",
	    .principal = principal,
	    .keytab = keytab ? getenv("KRB5_CLIENT_KTNAME") : NULL,
	    .timeout_ms = 10000,
	};
	struct nfsd_gss_clnt *g = nfsd_gss_clnt_new(c, &o, why, sizeof(why), &err);
	if (want_err) {
		if (g || err != want_err)
			fprintf(stderr, "nfsd_gss_clnt_new: %d (%s), wanted %d\n", err, why,
				want_err);
		CHECK(!g);
		CHECK_EQ(err, want_err);
		return NULL;
	}
	if (!g)
		fprintf(stderr, "nfsd_gss_clnt_new(%s): %s (%s)\n", principal, strerror(-err), why);
	CHECK(g);
	return g;
}

static int enc_args(struct xdr_enc *e, const void *v)
{
	return xdr_enc_opaque(e, v, 4u << 20);
}

static int dec_res(struct xdr_dec *d, void *v)
{
	struct echo_res *r = v;
	if (xdr_dec_uint32(d, &r->uid) || xdr_dec_uint32(d, &r->gid) ||
	    xdr_dec_string(d, &r->principal, 1024) || xdr_dec_opaque(d, &r->data, 4u << 20) ||
	    xdr_dec_left(d))
		return -EBADMSG;
	return 0;
}

static struct nfsd_call_opts call_opts(uint32_t proc, const xdr_opaque *args,
				       const struct nfsd_clnt_auth *a)
{
	return (struct nfsd_call_opts){
	    .prog = PROG, .vers = 1, .proc = proc, .enc_args = enc_args, .args = args, .auth = a};
}

/* An echo of n bytes of big from off: its error, or 0 with the results
 * checked against uid and principal. */
static int echo(struct nfsd_clnt *c, const struct nfsd_clnt_auth *a, uint32_t proc, size_t off,
		size_t n, uint32_t uid, const char *principal)
{
	xdr_opaque in = xdr_opaque_of(big + off, n);
	struct nfsd_call_opts o = call_opts(proc, &in, a);
	struct xdr_arena ar;
	struct echo_res res;
	xdr_arena_init(&ar, NULL, 0, 8u << 20);
	int rc = nfsd_clnt_call(c, &o, dec_res, &res, &ar);
	if (!rc) {
		CHECK_EQ(res.uid, uid);
		CHECK(res.principal.len == strlen(principal) &&
		      !memcmp(res.principal.val, principal, res.principal.len));
		CHECK_EQ(res.data.len, n);
		CHECK(!n || !memcmp(res.data.val, big + off, n));
	}
	xdr_arena_release(&ar);
	return rc;
}

static const char *const svc_name[4] = {"", "krb5", "krb5i", "krb5p"};

/* ------------------------------------------------------------- sinks */

struct peek {
	const uint8_t *p;
	size_t have, at;
	bool short_;
};

static uint32_t peek32(struct peek *k)
{
	if (k->at + 4 > k->have) {
		k->short_ = true;
		return 0;
	}
	uint32_t v = xdr_get32(k->p + k->at);
	k->at += 4;
	return v;
}

/* An echo reply's data: xid, REPLY, ACCEPTED, verifier, SUCCESS, uid,
 * gid, principal, then the data opaque. */
static int locate_echo(const uint8_t *rec, size_t have, size_t rec_len, size_t *off, size_t *len)
{
	(void)rec_len;
	struct peek k = {rec, have, 0, false};
	peek32(&k);
	bool ok = peek32(&k) == 1 && peek32(&k) == 0;
	peek32(&k);
	uint32_t vl = peek32(&k);
	k.at += (vl + 3) & ~3u;
	ok = ok && vl <= 400 && peek32(&k) == 0;
	peek32(&k);
	peek32(&k);
	uint32_t pl = peek32(&k);
	k.at += (pl + 3) & ~3u;
	*len = peek32(&k);
	if (k.short_)
		return 0;
	if (!ok)
		return -1;
	*off = k.at;
	return 1;
}

struct sink_call {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	int err;
	size_t got, n;
	uint8_t *buf;
	bool match;
};

static void sink_cb(void *ctx, int err, struct xdr_dec *d)
{
	struct sink_call *s = ctx;
	struct echo_res r;
	s->err = err;
	if (!err && dec_res(d, &r) == 0) {
		if (s->got)
			s->match = r.data.len == 0 && !memcmp(s->buf, big, s->n);
		else
			s->match = r.data.len == s->n && !memcmp(r.data.val, big, s->n);
	}
	pthread_mutex_lock(&s->mu);
	s->done = true;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/* An echo of n bytes with a sink: how many bytes the sink took. */
static size_t echo_sink(struct nfsd_clnt *c, const struct nfsd_clnt_auth *a, size_t n)
{
	struct sink_call s = {.n = n, .buf = malloc(n)};
	CHECK(s.buf);
	pthread_mutex_init(&s.mu, NULL);
	pthread_cond_init(&s.cv, NULL);
	struct nfsd_sink sk = {s.buf, n, locate_echo, &s.got};
	xdr_opaque in = xdr_opaque_of(big, n);
	struct nfsd_call_opts o = call_opts(P_ECHO, &in, a);
	o.sink = &sk;
	CHECK_EQ(nfsd_clnt_call_async(c, &o, sink_cb, &s), 0);
	pthread_mutex_lock(&s.mu);
	while (!s.done)
		pthread_cond_wait(&s.cv, &s.mu);
	pthread_mutex_unlock(&s.mu);
	CHECK_EQ(s.err, 0);
	CHECK(s.match);
	free(s.buf);
	pthread_cond_destroy(&s.cv);
	pthread_mutex_destroy(&s.mu);
	return s.got;
}

/* ------------------------------------------------------------- in flight */

struct flight {
	struct nfsd_clnt *c[2];
	struct nfsd_gss_clnt *g;
	unsigned per_thread, id;
	atomic_int left, bad;
	uint32_t uid;
};

struct one {
	struct flight *f;
	size_t off, n;
};

static void one_cb(void *ctx, int err, struct xdr_dec *d)
{
	struct one *o = ctx;
	struct echo_res r;
	bool ok = !err && dec_res(d, &r) == 0 && r.uid == o->f->uid && r.data.len == o->n &&
		  (!o->n || !memcmp(r.data.val, big + o->off, o->n));
	if (!ok) {
		if (atomic_fetch_add(&o->f->bad, 1) < 5)
			fprintf(stderr, "in flight: call of %zu bytes: err %d\n", o->n, err);
	}
	atomic_fetch_sub(&o->f->left, 1);
	free(o);
}

struct flight_thr {
	struct flight *f;
	unsigned id;
};

static void *flight_main(void *arg)
{
	struct flight_thr *t = arg;
	struct flight *f = t->f;
	unsigned seed = t->id * 7919u + 1;
	for (unsigned i = 0; i < f->per_thread; i++) {
		seed = seed * 1103515245u + 12345u;
		struct one *o = calloc(1, sizeof(*o));
		CHECK(o);
		o->f = f;
		o->n = (i % 8 == 0) ? 0 : (seed >> 8) % (256u << 10);
		o->off = (seed >> 4) % (BIG - o->n + 1);
		xdr_opaque in = xdr_opaque_of(big + o->off, o->n);
		enum nfsd_gss_service svc = NFSD_GSS_SVC_NONE + (i + t->id) % 3;
		struct nfsd_call_opts co = call_opts(P_ECHO, &in, nfsd_gss_clnt_auth(f->g, svc));
		CHECK_EQ(nfsd_clnt_call_async(f->c[(i + t->id) % 2], &co, one_cb, o), 0);
	}
	return NULL;
}

/* nthreads threads of per_thread async calls over two clients and one
 * context; waits for every reply. */
static void fly(struct nfsd_clnt *c0, struct nfsd_clnt *c1, struct nfsd_gss_clnt *g,
		unsigned nthreads, unsigned per_thread, uint32_t uid)
{
	struct flight f = {.c = {c0, c1}, .g = g, .per_thread = per_thread, .uid = uid};
	atomic_init(&f.left, (int)(nthreads * per_thread));
	atomic_init(&f.bad, 0);
	pthread_t thr[8];
	struct flight_thr ft[8];
	CHECK(nthreads <= 8);
	for (unsigned i = 0; i < nthreads; i++) {
		ft[i] = (struct flight_thr){&f, i};
		CHECK_EQ(pthread_create(&thr[i], NULL, flight_main, &ft[i]), 0);
	}
	for (unsigned i = 0; i < nthreads; i++)
		pthread_join(thr[i], NULL);
	for (int ms = 0; atomic_load(&f.left) > 0; ms += 10) {
		CHECK(ms < 60000);
		usleep(10000);
	}
	CHECK_EQ(atomic_load(&f.bad), 0);
}

/* ------------------------------------------------------------- main */

int main(int argc, char **argv)
{
	if (argc < 2 || !getenv("KRB5_CLIENT_KTNAME"))
		SKIP("run through tests/nfsd/rpcsec-gss.sh, which sets up the KDC");
	const char *kt = argv[1];
	struct passwd *pw = getpwnam("daemon");
	CHECK(pw);
	daemon_uid = pw->pw_uid;
	big = malloc(BIG);
	CHECK(big);
	for (uint32_t i = 0; i < BIG; i++)
		big[i] = (uint8_t)(i * 131 + (i >> 9));
	int err = 0;
	eng = nfsd_client_engine_new(2, 0, &err);
	CHECK(eng);
	const char *me = "daemon@BRAID.TEST";

	/* every service, 0 bytes to 1 MiB each way */
	struct nfsd_gss *sg = gss_new(kt, 0, 0, 0);
	uint16_t port;
	struct nfsd_server *s = srv_start(nfsd_gss_flavor(sg), &port);
	struct nfsd_clnt *c = clnt_open(port, false);
	struct nfsd_gss_clnt *g = gss_open(c, me, true, 0);
	static const size_t sizes[] = {0, 1, 5, 1000, 1024, 4096, 65539, 300000, BIG};
	for (enum nfsd_gss_service svc = NFSD_GSS_SVC_NONE; svc <= NFSD_GSS_SVC_PRIVACY; svc++) {
		for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			CHECK_EQ(echo(c, nfsd_gss_clnt_auth(g, svc), P_ECHO, 0, sizes[i],
				      daemon_uid, me),
				 0);
		printf("ok: %s calls of 0 bytes to 1 MiB each way, uid %u\n", svc_name[svc],
		       daemon_uid);
	}

	/* the initiator's keys from the default client keytab; unmapped: nobody */
	{
		struct nfsd_gss_clnt *gn = gss_open(c, "nouser@BRAID.TEST", false, 0);
		CHECK_EQ(echo(c, nfsd_gss_clnt_auth(gn, NFSD_GSS_SVC_PRIVACY), P_ECHO, 7, 4096,
			      65534, "nouser@BRAID.TEST"),
			 0);
		nfsd_gss_clnt_free(gn);
		printf("ok: keys from the default client keytab; unmapped principal is nobody\n");
	}

	/* sinks: a krb5 reply's data goes to the sink; krb5i/krb5p's cannot */
	CHECK_EQ(echo_sink(c, nfsd_gss_clnt_auth(g, NFSD_GSS_SVC_NONE), BIG), BIG);
	CHECK_EQ(echo_sink(c, nfsd_gss_clnt_auth(g, NFSD_GSS_SVC_INTEGRITY), BIG), 0);
	CHECK_EQ(echo_sink(c, nfsd_gss_clnt_auth(g, NFSD_GSS_SVC_PRIVACY), BIG), 0);
	printf("ok: krb5 replies fill sinks, krb5i and krb5p replies are checked whole\n");

	/* a resend after a reconnection is signed afresh: the server took the
	 * first sequence number before it dropped the connection */
	{
		struct nfsd_clnt *cr = clnt_open(port, true);
		struct nfsd_gss_stats s0, s1;
		struct nfsd_gss_clnt_stats cs;
		nfsd_gss_stats(sg, &s0);
		CHECK_EQ(echo(cr, nfsd_gss_clnt_auth(g, NFSD_GSS_SVC_INTEGRITY), P_KILLONCE, 3,
			      5000, daemon_uid, me),
			 0);
		nfsd_gss_stats(sg, &s1);
		nfsd_gss_clnt_stats(g, &cs);
		CHECK(nfsd_clnt_reconnects(cr) >= 1);
		CHECK_EQ(atomic_load(&killed), 2);
		CHECK(cs.resigned >= 1);
		CHECK_EQ(s1.dropped, s0.dropped);
		nfsd_clnt_free(cr);
		printf("ok: a call resent after a reconnection is signed with a new sequence "
		       "number\n");
	}

	/* a call that times out lets go of the context with its answer: the
	 * GSS client may be freed before the call's connection frees its
	 * bytes (a large call's, held until then) */
	{
		struct nfsd_clnt *ct = clnt_open(port, false);
		struct nfsd_gss_clnt *gt = gss_open(c, me, true, 0);
		xdr_opaque in = xdr_opaque_of(big, 5000);
		struct nfsd_call_opts o =
		    call_opts(P_NEVER, &in, nfsd_gss_clnt_auth(gt, NFSD_GSS_SVC_INTEGRITY));
		o.timeout_ms = 300;
		CHECK_EQ(nfsd_clnt_call(ct, &o, NULL, NULL, NULL), -ETIMEDOUT);
		nfsd_gss_clnt_free(gt);
		nfsd_clnt_free(ct);
		printf("ok: a timed-out call lets its context go with its answer\n");
	}

	/* DESTROY when the client goes */
	{
		struct nfsd_gss_stats s0, s1;
		nfsd_gss_stats(sg, &s0);
		nfsd_gss_clnt_free(g);
		nfsd_gss_stats(sg, &s1);
		CHECK_EQ(s1.destroyed, s0.destroyed + 1);
		CHECK_EQ(s1.contexts, s0.contexts - 1);
		printf("ok: freeing the client destroys its context on the server\n");
	}
	nfsd_clnt_free(c);
	nfsd_server_free(s);
	nfsd_gss_free(sg);

	/* many in flight, several threads, two connections, one context, a
	 * window of 16: nothing dropped, everything answered */
	{
		struct nfsd_gss *sw = gss_new(kt, 16, 0, 0);
		struct nfsd_server *s2 = srv_start(nfsd_gss_flavor(sw), &port);
		struct nfsd_clnt *c0 = clnt_open(port, false), *c1 = clnt_open(port, false);
		struct nfsd_gss_clnt *gw = gss_open(c0, me, true, 0);
		fly(c0, c1, gw, 4, 100, daemon_uid);
		struct nfsd_gss_stats ss;
		struct nfsd_gss_clnt_stats cs;
		nfsd_gss_stats(sw, &ss);
		nfsd_gss_clnt_stats(gw, &cs);
		CHECK_EQ(ss.dropped, 0);
		CHECK_EQ(ss.bad_args, 0);
		CHECK_EQ(cs.window, 16);
		CHECK_EQ(cs.seq, 400);
		printf("ok: 400 calls in flight over 2 connections and a window of 16: none "
		       "dropped (%llu waits for the window)\n",
		       (unsigned long long)cs.window_waits);
		nfsd_gss_clnt_free(gw);
		nfsd_clnt_free(c1);
		nfsd_clnt_free(c0);
		nfsd_server_free(s2);
		nfsd_gss_free(sw);
	}

	/* a context evicted by the server (CREDPROBLEM) is made anew, also
	 * under many calls at once */
	{
		struct nfsd_gss *sv = gss_new(kt, 0, 1, 0);
		struct nfsd_server *s3 = srv_start(nfsd_gss_flavor(sv), &port);
		struct nfsd_clnt *c0 = clnt_open(port, false), *c1 = clnt_open(port, false);
		struct nfsd_gss_clnt *ga = gss_open(c0, me, true, 0);
		CHECK_EQ(echo(c0, nfsd_gss_clnt_auth(ga, NFSD_GSS_SVC_INTEGRITY), P_ECHO, 0, 100,
			      daemon_uid, me),
			 0);
		struct nfsd_gss_clnt *gb =
		    gss_open(c1, "nouser@BRAID.TEST", true, 0); /* evicts a */
		CHECK_EQ(echo(c0, nfsd_gss_clnt_auth(ga, NFSD_GSS_SVC_PRIVACY), P_ECHO, 9, 70000,
			      daemon_uid, me),
			 0); /* refused, a new context (evicting b), again */
		struct nfsd_gss_clnt_stats cs;
		nfsd_gss_clnt_stats(ga, &cs);
		CHECK_EQ(cs.contexts, 2);
		CHECK_EQ(cs.retried, 1);
		CHECK_EQ(echo(c1, nfsd_gss_clnt_auth(gb, NFSD_GSS_SVC_NONE), P_ECHO, 0, 10, 65534,
			      "nouser@BRAID.TEST"),
			 0); /* b's turn: evicts a again */
		fly(c0, c1, ga, 2, 40, daemon_uid);
		nfsd_gss_clnt_stats(ga, &cs);
		CHECK_EQ(cs.contexts, 3);
		CHECK(cs.retried >= 2);
		struct nfsd_gss_stats ss;
		nfsd_gss_stats(sv, &ss);
		CHECK_EQ(ss.dropped, 0);
		printf("ok: evicted context (CREDPROBLEM) made anew, %llu calls made again\n",
		       (unsigned long long)cs.retried);
		nfsd_gss_clnt_free(gb);
		nfsd_gss_clnt_free(ga);
		nfsd_clnt_free(c1);
		nfsd_clnt_free(c0);
		nfsd_server_free(s3);
		nfsd_gss_free(sv);
	}

	/* a context the server expired (CTXPROBLEM) is made anew */
	{
		struct nfsd_gss *se = gss_new(kt, 0, 0, 1);
		struct nfsd_server *s4 = srv_start(nfsd_gss_flavor(se), &port);
		struct nfsd_clnt *c0 = clnt_open(port, false);
		struct nfsd_gss_clnt *ge = gss_open(c0, me, true, 0);
		CHECK_EQ(echo(c0, nfsd_gss_clnt_auth(ge, NFSD_GSS_SVC_NONE), P_ECHO, 0, 1,
			      daemon_uid, me),
			 0);
		usleep(1100 * 1000);
		CHECK_EQ(echo(c0, nfsd_gss_clnt_auth(ge, NFSD_GSS_SVC_INTEGRITY), P_ECHO, 0, BIG,
			      daemon_uid, me),
			 0);
		struct nfsd_gss_clnt_stats cs;
		struct nfsd_gss_stats ss;
		nfsd_gss_clnt_stats(ge, &cs);
		nfsd_gss_stats(se, &ss);
		CHECK_EQ(cs.contexts, 2);
		CHECK_EQ(cs.retried, 1);
		CHECK_EQ(ss.expired, 1);
		printf("ok: expired context (CTXPROBLEM) made anew and the call made again\n");
		nfsd_gss_clnt_free(ge);
		nfsd_clnt_free(c0);
		nfsd_server_free(s4);
		nfsd_gss_free(se);
	}

	/* replies altered on the way fail the call, never reach the caller */
	{
		struct nfsd_gss *sb = gss_new(kt, 0, 0, 0);
		bad_real = nfsd_gss_flavor(sb);
		struct nfsd_auth_flavor bad = *bad_real;
		bad.accept = bad_accept;
		bad.wrap = bad_wrap;
		struct nfsd_server *s5 = srv_start(&bad, &port);
		struct nfsd_clnt *c0 = clnt_open(port, false);
		bad_mode = BAD_INIT_VERF;
		gss_open(c0, me, true, -EPROTO);
		bad_mode = BAD_NONE;
		struct nfsd_gss_clnt *gb = gss_open(c0, me, true, 0);
		bad_mode = BAD_DATA_VERF;
		for (enum nfsd_gss_service svc = NFSD_GSS_SVC_NONE; svc <= NFSD_GSS_SVC_PRIVACY;
		     svc++)
			CHECK_EQ(
			    echo(c0, nfsd_gss_clnt_auth(gb, svc), P_ECHO, 0, 5000, daemon_uid, me),
			    -EPROTO);
		bad_mode = BAD_RESULTS;
		for (enum nfsd_gss_service svc = NFSD_GSS_SVC_INTEGRITY;
		     svc <= NFSD_GSS_SVC_PRIVACY; svc++) {
			CHECK_EQ(
			    echo(c0, nfsd_gss_clnt_auth(gb, svc), P_ECHO, 0, 5000, daemon_uid, me),
			    -EPROTO);
			CHECK_EQ(
			    echo(c0, nfsd_gss_clnt_auth(gb, svc), P_ECHO, 0, BIG, daemon_uid, me),
			    -EPROTO);
		}
		bad_mode = BAD_NONE;
		CHECK_EQ(echo(c0, nfsd_gss_clnt_auth(gb, NFSD_GSS_SVC_PRIVACY), P_ECHO, 0, 5000,
			      daemon_uid, me),
			 0);
		struct nfsd_gss_clnt_stats cs;
		nfsd_gss_clnt_stats(gb, &cs);
		CHECK_EQ(cs.bad_replies, 7);
		printf("ok: altered reply verifiers, krb5i checksums and krb5p seals fail the "
		       "call with -EPROTO\n");
		nfsd_gss_clnt_free(gb);
		nfsd_clnt_free(c0);
		nfsd_server_free(s5);
		nfsd_gss_free(sb);
	}

	nfsd_server_free(eng);
	free(big);
	return 0;
}
