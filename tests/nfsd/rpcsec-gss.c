/* SPDX-License-Identifier: MIT */
/*
 * RPCSEC_GSS v1 (RFC 2203) with Kerberos V5 against a real KDC, which
 * tests/nfsd/rpcsec-gss.sh sets up: the server's keys in KRB5_KTNAME
 * (nfs/localhost), the client's in KRB5_CLIENT_KTNAME (daemon and nouser,
 * realm BRAID.TEST).
 *
 * The client is written here on a plain socket, not through nfsd_clnt:
 * the test needs to replay, tamper with and hand-build calls.  It proves:
 * krb5, krb5i and krb5p calls (small and 1 MiB) come back with the
 * arguments and the caller's uid and principal; daemon@BRAID.TEST maps to
 * the local user daemon (present on every Debian system, so the test adds
 * no user) and nouser@BRAID.TEST, which has no local user, to nobody; a
 * tampered krb5i argument gets GARBAGE_ARGS; a replayed or too old
 * sequence number gets no reply and the next call succeeds; a bogus handle
 * and a destroyed context get RPCSEC_GSS_CREDPROBLEM; random bytes as the
 * init token get an init_res with a GSS error.
 */
#include "config.h"

#include <gssapi/gssapi.h>
#include <gssapi/gssapi_krb5.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nfsd/auth_gss.h"
#include "rpcsec_gss.h"
#include "tests/check.h"

#define PROG 0x2000009au
#define ECHO 1
#define BIG  (1u << 20)

/* ------------------------------------------------------------- server */

struct echo_args {
	xdr_opaque data;
};
struct echo_res {
	uint32_t uid, gid;
	xdr_string principal;
	xdr_opaque data;
};

static int dec_echo_args(struct xdr_dec *d, void *v)
{
	return xdr_dec_opaque(d, &((struct echo_args *)v)->data, 4u << 20);
}

static int enc_echo_res(struct xdr_enc *e, const void *v)
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
	struct echo_args *in = a;
	struct echo_res *out = res;
	out->uid = r->cred.uid;
	out->gid = r->cred.gid;
	out->principal = xdr_string_of(r->cred.principal ? r->cred.principal : "");
	out->data = in->data;
	return NFSD_SUCCESS;
}

static const struct nfsd_proc procs[2] = {
    {.name = "NULL", .fn = p_null, .flags = NFSD_PROC_INLINE},
    {.name = "ECHO",
     .fn = p_echo,
     .dec_args = dec_echo_args,
     .args_size = sizeof(struct echo_args),
     .enc_res = enc_echo_res,
     .res_size = sizeof(struct echo_res)},
};
static const struct nfsd_version vers[1] = {{.vers = 1, .procs = procs, .nprocs = 2}};
static const struct nfsd_program prog = {
    .prog = PROG,
    .name = "gss-test",
    .versions = vers,
    .nversions = 1,
};

/* ------------------------------------------------------------- client */

struct buf {
	uint8_t *p;
	size_t len, cap;
};

static void b_need(struct buf *b, size_t n)
{
	if (b->len + n <= b->cap)
		return;
	b->cap = (b->len + n) * 2;
	b->p = realloc(b->p, b->cap);
	CHECK(b->p);
}
static void b_u32(struct buf *b, uint32_t v)
{
	b_need(b, 4);
	xdr_put32(b->p + b->len, v);
	b->len += 4;
}
static void b_bytes(struct buf *b, const void *p, size_t n)
{
	b_need(b, n + 3);
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	while (b->len % 4)
		b->p[b->len++] = 0;
}
static void b_opaque(struct buf *b, const void *p, size_t n)
{
	b_u32(b, (uint32_t)n);
	b_bytes(b, p, n);
}

struct gclnt {
	int fd;
	gss_ctx_id_t ctx;
	uint8_t handle[64];
	uint32_t hlen, seq, xid, window;
};

struct reply {
	uint8_t *rec; /* malloc'd */
	size_t len;
	uint32_t xid, denied, stat; /* stat: accept_stat or auth_stat */
	xdr_opaque verf;
	struct xdr_dec res; /* the results (accepted) */
};

static OM_uint32 min_;

static void mic(struct gclnt *c, const void *p, size_t n, gss_buffer_desc *out)
{
	gss_buffer_desc in = {n, (void *)p};
	CHECK(!GSS_ERROR(gss_get_mic(&min_, c->ctx, GSS_C_QOP_DEFAULT, &in, out)));
}

static bool verify(struct gclnt *c, const void *p, size_t n, xdr_opaque m)
{
	gss_buffer_desc in = {n, (void *)p}, t = {m.len, (void *)m.val};
	return !GSS_ERROR(gss_verify_mic(&min_, c->ctx, &in, &t, NULL));
}

/*
 * A call of procedure proc with credential (gss_proc, service, seq, the
 * client's handle) and args (already wrapped for the service) as one
 * record in b: signed unless it is a context creation.
 */
static void build(struct gclnt *c, struct buf *b, uint32_t proc, uint32_t gss_proc,
		  uint32_t service, uint32_t seq, const struct buf *args)
{
	b->len = 0;
	b_u32(b, 0); /* record mark */
	b_u32(b, ++c->xid);
	b_u32(b, 0);
	b_u32(b, 2);
	b_u32(b, PROG);
	b_u32(b, 1);
	b_u32(b, proc);
	b_u32(b, NFSD_RPCSEC_GSS);
	b_u32(b, 20 + ((c->hlen + 3) & ~3u));
	b_u32(b, 1);
	b_u32(b, gss_proc);
	b_u32(b, seq);
	b_u32(b, service);
	b_opaque(b, c->handle, c->hlen);
	if (gss_proc == RPCSEC_GSS_INIT || gss_proc == RPCSEC_GSS_CONTINUE_INIT) {
		b_u32(b, 0);
		b_u32(b, 0);
	} else {
		gss_buffer_desc m;
		mic(c, b->p + 4, b->len - 4, &m);
		b_u32(b, NFSD_RPCSEC_GSS);
		b_opaque(b, m.value, m.length);
		gss_release_buffer(&min_, &m);
	}
	b_bytes(b, args->p, args->len);
	xdr_put32(b->p, 0x80000000u | (uint32_t)(b->len - 4));
}

/* The arguments {seq, plain} in the service's form. */
static void wrap_args(struct gclnt *c, struct buf *out, uint32_t service, uint32_t seq,
		      const struct buf *plain)
{
	out->len = 0;
	if (service == rpc_gss_svc_none) {
		b_bytes(out, plain->p, plain->len);
		return;
	}
	struct buf body = {0};
	b_u32(&body, seq);
	b_bytes(&body, plain->p, plain->len);
	if (service == rpc_gss_svc_integrity) {
		gss_buffer_desc m;
		mic(c, body.p, body.len, &m);
		b_opaque(out, body.p, body.len);
		b_opaque(out, m.value, m.length);
		gss_release_buffer(&min_, &m);
	} else {
		gss_buffer_desc in = {body.len, body.p}, w;
		int conf = 0;
		CHECK(!GSS_ERROR(gss_wrap(&min_, c->ctx, 1, GSS_C_QOP_DEFAULT, &in, &conf, &w)));
		CHECK(conf);
		b_opaque(out, w.value, w.length);
		gss_release_buffer(&min_, &w);
	}
	free(body.p);
}

static void send_all(int fd, const struct buf *b)
{
	size_t off = 0;
	while (off < b->len) {
		ssize_t n = send(fd, b->p + off, b->len - off, MSG_NOSIGNAL);
		CHECK(n > 0);
		off += (size_t)n;
	}
}

static bool recv_all(int fd, void *p, size_t n, int timeout_ms)
{
	size_t off = 0;
	while (off < n) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		if (poll(&pf, 1, timeout_ms) != 1)
			return false;
		ssize_t k = recv(fd, (uint8_t *)p + off, n - off, 0);
		CHECK(k > 0);
		off += (size_t)k;
	}
	return true;
}

/* The next reply within timeout_ms (false: none came). */
static bool get_reply(struct gclnt *c, struct reply *r, int timeout_ms)
{
	uint8_t mark[4];
	memset(r, 0, sizeof(*r));
	if (!recv_all(c->fd, mark, 4, timeout_ms))
		return false;
	uint32_t m = xdr_get32(mark);
	CHECK(m & 0x80000000u);
	r->len = m & 0x7fffffffu;
	r->rec = malloc(r->len + 1);
	CHECK(r->rec);
	CHECK(recv_all(c->fd, r->rec, r->len, 5000));
	struct xdr_dec d;
	uint32_t mtype, vflav, what;
	xdr_dec_init(&d, r->rec, r->len, NULL);
	CHECK(!xdr_dec_uint32(&d, &r->xid) && !xdr_dec_uint32(&d, &mtype) && mtype == 1);
	CHECK(!xdr_dec_uint32(&d, &r->denied));
	if (r->denied) {
		CHECK(!xdr_dec_uint32(&d, &what) && what == NFSD_AUTH_ERROR);
		CHECK(!xdr_dec_uint32(&d, &r->stat));
		return true;
	}
	CHECK(!xdr_dec_uint32(&d, &vflav) && !xdr_dec_opaque(&d, &r->verf, 400));
	CHECK(!xdr_dec_uint32(&d, &r->stat));
	r->res = d;
	return true;
}

/* Check the reply's verifier and unwrap its results into *out (plain). */
static void open_results(struct gclnt *c, struct reply *r, uint32_t service, uint32_t seq,
			 struct xdr_dec *out, gss_buffer_desc *hold)
{
	uint8_t be[4];
	xdr_put32(be, seq);
	CHECK(verify(c, be, 4, r->verf));
	*out = r->res;
	hold->length = 0;
	hold->value = NULL;
	if (service == rpc_gss_svc_none)
		return;
	xdr_opaque body;
	if (service == rpc_gss_svc_integrity) {
		xdr_opaque sum;
		CHECK(!xdr_dec_opaque(&r->res, &body, 8u << 20));
		CHECK(!xdr_dec_opaque(&r->res, &sum, 1024));
		CHECK(verify(c, body.val, body.len, sum));
	} else {
		xdr_opaque sealed;
		CHECK(!xdr_dec_opaque(&r->res, &sealed, 8u << 20));
		gss_buffer_desc in = {sealed.len, (void *)sealed.val};
		int conf = 0;
		CHECK(!GSS_ERROR(gss_unwrap(&min_, c->ctx, &in, hold, &conf, NULL)));
		CHECK(conf);
		body = xdr_opaque_of(hold->value, hold->length);
	}
	CHECK(body.len >= 4 && xdr_get32(body.val) == seq);
	xdr_dec_init(out, body.val + 4, body.len - 4, NULL);
}

static int connect_to(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK(fd >= 0);
	CHECK(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	return fd;
}

static gss_cred_id_t client_cred(const char *principal)
{
	gss_buffer_desc nb = {strlen(principal), (void *)principal};
	gss_name_t name;
	gss_cred_id_t cred;
	CHECK(!GSS_ERROR(gss_import_name(&min_, &nb, GSS_KRB5_NT_PRINCIPAL_NAME, &name)));
	OM_uint32 maj = gss_acquire_cred(&min_, name, GSS_C_INDEFINITE, GSS_C_NO_OID_SET,
					 GSS_C_INITIATE, &cred, NULL, NULL);
	if (GSS_ERROR(maj)) {
		fprintf(stderr, "gss_acquire_cred(%s): major %#x minor %u\n", principal, maj, min_);
		exit(1);
	}
	gss_release_name(&min_, &name);
	return cred;
}

/* RFC 2203 §5.2: INIT (and CONTINUE_INIT) on NULL until complete. */
static void ctx_create(struct gclnt *c, uint16_t port, const char *principal)
{
	memset(c, 0, sizeof(*c));
	c->fd = connect_to(port);
	c->xid = 1000;
	c->ctx = GSS_C_NO_CONTEXT;
	gss_cred_id_t cred = client_cred(principal);
	gss_buffer_desc sn = {strlen("nfs@localhost"), "nfs@localhost"};
	gss_name_t target;
	CHECK(!GSS_ERROR(gss_import_name(&min_, &sn, GSS_C_NT_HOSTBASED_SERVICE, &target)));
	gss_buffer_desc in = GSS_C_EMPTY_BUFFER, out;
	uint32_t gp = RPCSEC_GSS_INIT;
	for (;;) {
		OM_uint32 maj = gss_init_sec_context(
		    &min_, cred, &c->ctx, target, (gss_OID)gss_mech_krb5, GSS_C_MUTUAL_FLAG, 0,
		    GSS_C_NO_CHANNEL_BINDINGS, &in, NULL, &out, NULL, NULL);
		if (GSS_ERROR(maj)) {
			fprintf(stderr, "gss_init_sec_context: major %#x minor %u\n", maj, min_);
			exit(1);
		}
		if (in.value)
			free(in.value);
		in.value = NULL;
		in.length = 0;
		if (maj == GSS_S_COMPLETE && out.length == 0)
			break;
		struct buf args = {0}, call = {0};
		b_opaque(&args, out.value, out.length);
		gss_release_buffer(&min_, &out);
		build(c, &call, 0, gp, rpc_gss_svc_none, 0, &args);
		send_all(c->fd, &call);
		struct reply r;
		CHECK(get_reply(c, &r, 5000));
		CHECK_EQ(r.denied, 0);
		CHECK_EQ(r.stat, NFSD_SUCCESS);
		xdr_opaque h, tok;
		uint32_t major, minor;
		CHECK(!xdr_dec_opaque(&r.res, &h, 64) && !xdr_dec_uint32(&r.res, &major) &&
		      !xdr_dec_uint32(&r.res, &minor) && !xdr_dec_uint32(&r.res, &c->window) &&
		      !xdr_dec_opaque(&r.res, &tok, 1u << 20));
		CHECK_EQ(major & 0xffff0000u, 0); /* no routine or calling error */
		CHECK(h.len > 0);
		memcpy(c->handle, h.val, h.len);
		c->hlen = h.len;
		if (tok.len) {
			in.value = malloc(tok.len);
			memcpy(in.value, tok.val, tok.len);
			in.length = tok.len;
		}
		bool done = major == GSS_S_COMPLETE;
		if (done) {
			/* §5.2.3.1: the verifier is the MIC of the window; check
			 * it once the client side completes too */
			CHECK(tok.len);
			maj = gss_init_sec_context(
			    &min_, cred, &c->ctx, target, (gss_OID)gss_mech_krb5, GSS_C_MUTUAL_FLAG,
			    0, GSS_C_NO_CHANNEL_BINDINGS, &in, NULL, &out, NULL, NULL);
			CHECK_EQ(maj, GSS_S_COMPLETE);
			gss_release_buffer(&min_, &out);
			uint8_t be[4];
			xdr_put32(be, c->window);
			CHECK(verify(c, be, 4, r.verf));
			free(in.value);
		}
		free(r.rec);
		free(args.p);
		free(call.p);
		if (done)
			break;
		gp = RPCSEC_GSS_CONTINUE_INIT;
	}
	CHECK_EQ(c->window, 128);
	gss_release_name(&min_, &target);
	gss_release_cred(&min_, &cred);
}

static void echo_args(struct buf *b, const void *p, size_t n)
{
	b->len = 0;
	b_opaque(b, p, n);
}

/* An echo of data under service; checks the results and the identity. */
static void echo(struct gclnt *c, uint32_t service, const void *data, size_t n, uint32_t uid,
		 const char *principal)
{
	struct buf plain = {0}, args = {0}, call = {0};
	uint32_t seq = ++c->seq;
	echo_args(&plain, data, n);
	wrap_args(c, &args, service, seq, &plain);
	build(c, &call, ECHO, RPCSEC_GSS_DATA, service, seq, &args);
	send_all(c->fd, &call);
	struct reply r;
	CHECK(get_reply(c, &r, 10000));
	CHECK_EQ(r.xid, c->xid);
	CHECK_EQ(r.denied, 0);
	CHECK_EQ(r.stat, NFSD_SUCCESS);
	struct xdr_dec d;
	gss_buffer_desc hold;
	open_results(c, &r, service, seq, &d, &hold);
	uint32_t ruid, rgid;
	xdr_string pr;
	xdr_opaque back;
	CHECK(!xdr_dec_uint32(&d, &ruid) && !xdr_dec_uint32(&d, &rgid) &&
	      !xdr_dec_string(&d, &pr, 1024) && !xdr_dec_opaque(&d, &back, 4u << 20));
	CHECK_EQ(xdr_dec_left(&d), 0);
	CHECK_EQ(ruid, uid);
	CHECK(pr.len == strlen(principal) && !memcmp(pr.val, principal, pr.len));
	CHECK(back.len == n && !memcmp(back.val, data, n));
	gss_release_buffer(&min_, &hold);
	free(r.rec);
	free(plain.p);
	free(args.p);
	free(call.p);
}

/* A call expected to be refused: returns the reply (denied/stat set). */
static void call_expect(struct gclnt *c, uint32_t proc, uint32_t gss_proc, uint32_t service,
			uint32_t denied, uint32_t stat)
{
	struct buf plain = {0}, args = {0}, call = {0};
	uint32_t seq = ++c->seq;
	if (proc == ECHO)
		echo_args(&plain, "x", 1);
	wrap_args(c, &args, service, seq, &plain);
	build(c, &call, proc, gss_proc, service, seq, &args);
	send_all(c->fd, &call);
	struct reply r;
	CHECK(get_reply(c, &r, 5000));
	CHECK_EQ(r.xid, c->xid);
	CHECK_EQ(r.denied, denied);
	CHECK_EQ(r.stat, stat);
	free(r.rec);
	free(plain.p);
	free(args.p);
	free(call.p);
}

static void gclnt_close(struct gclnt *c)
{
	close(c->fd);
	gss_delete_sec_context(&min_, &c->ctx, GSS_C_NO_BUFFER);
}

int main(int argc, char **argv)
{
	if (argc < 2 || !getenv("KRB5_CLIENT_KTNAME"))
		SKIP("run through tests/nfsd/rpcsec-gss.sh, which sets up the KDC");
	struct passwd *pw = getpwnam("daemon");
	CHECK(pw);
	uint32_t daemon_uid = pw->pw_uid;

	int err = 0;
	struct nfsd_gss *g = nfsd_gss_new(&(struct nfsd_gss_opts){.keytab = argv[1]}, &err);
	CHECK(g);
	struct nfsd_server_opts so;
	nfsd_server_opts_default(&so);
	so.nloops = 2;
	so.nworkers = 2;
	so.max_record = 4u << 20;
	so.arena_limit = 16u << 20;
	struct nfsd_server *s = nfsd_server_new(&so, &err);
	CHECK(s);
	CHECK_EQ(nfsd_server_add_flavor(s, nfsd_gss_flavor(g)), 0);
	CHECK_EQ(nfsd_server_add_program(s, &prog), 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK_EQ(nfsd_server_listen(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	CHECK_EQ(nfsd_server_start(s), 0);
	uint16_t port = (uint16_t)nfsd_server_listen_port(s, 0);

	uint8_t *big = malloc(BIG);
	CHECK(big);
	for (uint32_t i = 0; i < BIG; i++)
		big[i] = (uint8_t)(i * 131 + (i >> 9));

	struct gclnt c;
	ctx_create(&c, port, "daemon@BRAID.TEST");
	const uint32_t svcs[3] = {rpc_gss_svc_none, rpc_gss_svc_integrity, rpc_gss_svc_privacy};
	const char *names[3] = {"krb5", "krb5i", "krb5p"};
	for (int i = 0; i < 3; i++) {
		echo(&c, svcs[i], "hello", 5, daemon_uid, "daemon@BRAID.TEST");
		echo(&c, svcs[i], big, BIG, daemon_uid, "daemon@BRAID.TEST");
		printf("ok: %s echo (5 bytes and 1 MiB), uid %u\n", names[i], daemon_uid);
	}

	/* a krb5i call with one argument byte flipped: GARBAGE_ARGS */
	{
		struct buf plain = {0}, args = {0}, call = {0};
		uint32_t seq = ++c.seq;
		echo_args(&plain, "tamper me", 9);
		wrap_args(&c, &args, rpc_gss_svc_integrity, seq, &plain);
		args.p[4 + 4 + 4 + 2] ^= 0x20; /* databody: len, seq, opaque len, data */
		build(&c, &call, ECHO, RPCSEC_GSS_DATA, rpc_gss_svc_integrity, seq, &args);
		send_all(c.fd, &call);
		struct reply r;
		CHECK(get_reply(&c, &r, 5000));
		CHECK_EQ(r.denied, 0);
		CHECK_EQ(r.stat, NFSD_GARBAGE_ARGS);
		free(r.rec);
		free(plain.p);
		free(args.p);
		free(call.p);
		printf("ok: tampered krb5i arguments get GARBAGE_ARGS\n");
	}

	/* a replay and a number below the window: dropped, no reply */
	{
		struct buf plain = {0}, args = {0}, call = {0};
		uint32_t seq = ++c.seq;
		echo_args(&plain, "once", 4);
		wrap_args(&c, &args, rpc_gss_svc_integrity, seq, &plain);
		build(&c, &call, ECHO, RPCSEC_GSS_DATA, rpc_gss_svc_integrity, seq, &args);
		send_all(c.fd, &call);
		struct reply r;
		CHECK(get_reply(&c, &r, 5000));
		CHECK_EQ(r.stat, NFSD_SUCCESS);
		free(r.rec);
		send_all(c.fd, &call); /* the same bytes again */
		CHECK(!get_reply(&c, &r, 700));
		c.seq += 300; /* then one far ahead, so that seq falls below the window */
		echo(&c, rpc_gss_svc_integrity, "ahead", 5, daemon_uid, "daemon@BRAID.TEST");
		wrap_args(&c, &args, rpc_gss_svc_integrity, seq + 1, &plain);
		build(&c, &call, ECHO, RPCSEC_GSS_DATA, rpc_gss_svc_integrity, seq + 1, &args);
		send_all(c.fd, &call);
		CHECK(!get_reply(&c, &r, 700));
		echo(&c, rpc_gss_svc_privacy, "next", 4, daemon_uid, "daemon@BRAID.TEST");
		free(plain.p);
		free(args.p);
		free(call.p);
		printf("ok: replayed and too old sequence numbers dropped, next call succeeds\n");
	}

	/* a handle this server never gave: CREDPROBLEM */
	{
		struct gclnt bogus = c;
		bogus.handle[bogus.hlen - 1] ^= 1;
		call_expect(&bogus, ECHO, RPCSEC_GSS_DATA, rpc_gss_svc_none, 1,
			    NFSD_RPCSEC_GSS_CREDPROBLEM);
		c.xid = bogus.xid;
		c.seq = bogus.seq;
		printf("ok: bogus handle gets RPCSEC_GSS_CREDPROBLEM\n");
	}

	/* a principal without a local user: nobody */
	{
		struct gclnt n;
		ctx_create(&n, port, "nouser@BRAID.TEST");
		echo(&n, rpc_gss_svc_integrity, "who", 3, 65534, "nouser@BRAID.TEST");
		gclnt_close(&n);
		printf("ok: unmapped principal is nobody (65534)\n");
	}

	/* DESTROY, then the handle is unknown */
	call_expect(&c, 0, RPCSEC_GSS_DESTROY, rpc_gss_svc_integrity, 0, NFSD_SUCCESS);
	call_expect(&c, ECHO, RPCSEC_GSS_DATA, rpc_gss_svc_none, 1, NFSD_RPCSEC_GSS_CREDPROBLEM);
	printf("ok: after DESTROY the handle gets RPCSEC_GSS_CREDPROBLEM\n");
	gclnt_close(&c);

	/* random bytes as the init token: an init_res with a GSS error */
	{
		struct gclnt r0 = {.fd = connect_to(port), .xid = 5000};
		struct buf args = {0}, call = {0};
		uint8_t junk[300];
		for (unsigned i = 0; i < sizeof(junk); i++)
			junk[i] = (uint8_t)(i * 37 + 11);
		b_opaque(&args, junk, sizeof(junk));
		build(&r0, &call, 0, RPCSEC_GSS_INIT, rpc_gss_svc_none, 0, &args);
		send_all(r0.fd, &call);
		struct reply r;
		CHECK(get_reply(&r0, &r, 5000));
		CHECK_EQ(r.denied, 0);
		CHECK_EQ(r.stat, NFSD_SUCCESS);
		xdr_opaque h, tok;
		uint32_t major, minor, win;
		CHECK(!xdr_dec_opaque(&r.res, &h, 64) && !xdr_dec_uint32(&r.res, &major) &&
		      !xdr_dec_uint32(&r.res, &minor) && !xdr_dec_uint32(&r.res, &win) &&
		      !xdr_dec_opaque(&r.res, &tok, 1u << 20));
		CHECK(GSS_ERROR(major));
		CHECK_EQ(h.len, 0);
		printf("ok: junk init token gets init_res with GSS major %#x\n", major);
		free(r.rec);
		free(args.p);
		free(call.p);
		close(r0.fd);
	}

	/* the server still creates contexts */
	ctx_create(&c, port, "daemon@BRAID.TEST");
	echo(&c, rpc_gss_svc_privacy, "still here", 10, daemon_uid, "daemon@BRAID.TEST");
	gclnt_close(&c);

	/* a cache of one context living at most a second: the older context
	 * is evicted (CREDPROBLEM), the newer expires (CTXPROBLEM) */
	{
		struct nfsd_gss *g1 = nfsd_gss_new(&(struct nfsd_gss_opts){.keytab = argv[1],
									   .max_contexts = 1,
									   .max_lifetime_s = 1},
						   &err);
		CHECK(g1);
		struct nfsd_server *s1 = nfsd_server_new(&so, &err);
		CHECK(s1);
		CHECK_EQ(nfsd_server_add_flavor(s1, nfsd_gss_flavor(g1)), 0);
		CHECK_EQ(nfsd_server_add_program(s1, &prog), 0);
		CHECK_EQ(nfsd_server_listen(s1, (struct sockaddr *)&sa, sizeof(sa)), 0);
		CHECK_EQ(nfsd_server_start(s1), 0);
		uint16_t port1 = (uint16_t)nfsd_server_listen_port(s1, 0);
		struct gclnt a, b;
		ctx_create(&a, port1, "daemon@BRAID.TEST");
		echo(&a, rpc_gss_svc_none, "a", 1, daemon_uid, "daemon@BRAID.TEST");
		ctx_create(&b, port1, "daemon@BRAID.TEST");
		call_expect(&a, ECHO, RPCSEC_GSS_DATA, rpc_gss_svc_none, 1,
			    NFSD_RPCSEC_GSS_CREDPROBLEM);
		echo(&b, rpc_gss_svc_none, "b", 1, daemon_uid, "daemon@BRAID.TEST");
		usleep(1100 * 1000);
		call_expect(&b, ECHO, RPCSEC_GSS_DATA, rpc_gss_svc_none, 1,
			    NFSD_RPCSEC_GSS_CTXPROBLEM);
		struct nfsd_gss_stats st1;
		nfsd_gss_stats(g1, &st1);
		CHECK_EQ(st1.evicted, 1);
		CHECK_EQ(st1.expired, 1);
		CHECK_EQ(st1.contexts, 0);
		gclnt_close(&a);
		gclnt_close(&b);
		nfsd_server_free(s1);
		nfsd_gss_free(g1);
		printf("ok: least recently used context evicted (CREDPROBLEM), "
		       "expired one gets CTXPROBLEM\n");
	}

	struct nfsd_gss_stats st;
	nfsd_gss_stats(g, &st);
	printf("stats: created %llu init_failures %llu destroyed %llu bad_handle %llu "
	       "dropped %llu bad_args %llu contexts %llu\n",
	       (unsigned long long)st.created, (unsigned long long)st.init_failures,
	       (unsigned long long)st.destroyed, (unsigned long long)st.bad_handle,
	       (unsigned long long)st.dropped, (unsigned long long)st.bad_args,
	       (unsigned long long)st.contexts);
	CHECK_EQ(st.created, 3);
	CHECK_EQ(st.init_failures, 1);
	CHECK_EQ(st.destroyed, 1);
	CHECK_EQ(st.dropped, 2);
	CHECK_EQ(st.bad_args, 1);
	CHECK_EQ(st.bad_handle, 2);
	nfsd_server_free(s);
	nfsd_gss_free(g);
	free(big);
	return 0;
}
