/* SPDX-License-Identifier: MIT */
#include "config.h"

#include "tests/nfsd/rpc-engine.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nfsd/engine.h"
#include "tests/check.h"

/* ------------------------------------------------------------ codecs */

static int dec_opaque(struct xdr_dec *d, void *v)
{
	return xdr_dec_opaque(d, v, 4u << 20);
}
static int enc_opaque(struct xdr_enc *e, const void *v)
{
	return xdr_enc_opaque(e, v, 4u << 20);
}
static int dec_u32(struct xdr_dec *d, void *v)
{
	return xdr_dec_uint32(d, v);
}
static int enc_u32(struct xdr_enc *e, const void *v)
{
	return xdr_enc_uint32(e, *(const uint32_t *)v);
}

/* ------------------------------------------------------------ handlers */

static int p_null(struct nfsd_req *r, void *a, void *res)
{
	return NFSD_SUCCESS;
}

static int p_echo(struct nfsd_req *r, void *a, void *res)
{
	*(xdr_opaque *)res = *(xdr_opaque *)a; /* points into the record */
	return NFSD_SUCCESS;
}

static int p_whoami(struct nfsd_req *r, void *a, void *res)
{
	struct xdr_enc *e = &r->enc;
	xdr_enc_uint32(e, r->cred.uid);
	xdr_enc_uint32(e, r->cred.gid);
	xdr_enc_uint32(e, r->cred.ngroups);
	for (uint32_t i = 0; i < r->cred.ngroups; i++)
		xdr_enc_uint32(e, r->cred.groups[i]);
	return NFSD_SUCCESS;
}

static int p_drop(struct nfsd_req *r, void *a, void *res)
{
	return NFSD_DROP;
}

static void *async_thread(void *arg)
{
	usleep(10000);
	nfsd_req_done(arg, NFSD_SUCCESS);
	return NULL;
}

static int p_async(struct nfsd_req *r, void *a, void *res)
{
	*(uint32_t *)res = *(uint32_t *)a * 2;
	pthread_t t;
	pthread_create(&t, NULL, async_thread, r);
	pthread_detach(t);
	return NFSD_ASYNC;
}

static void callback_done(void *ctx, int err, struct xdr_dec *d)
{
	struct nfsd_req *r = ctx;
	uint32_t v;
	if (err || xdr_dec_uint32(d, &v)) {
		nfsd_req_done(r, NFSD_SYSTEM_ERR);
		return;
	}
	*(uint32_t *)r->res = v;
	nfsd_req_done(r, NFSD_SUCCESS);
}

static int p_callback(struct nfsd_req *r, void *a, void *res)
{
	struct nfsd_call_opts o = { .prog = TPROG_BC, .vers = 1, .proc = 1,
				    .enc_args = enc_u32, .args = a, .timeout_ms = 5000 };
	if (nfsd_conn_call_async(r->conn, &o, callback_done, r) < 0)
		return NFSD_SYSTEM_ERR;
	return NFSD_ASYNC;
}

static int p_sleep(struct nfsd_req *r, void *a, void *res)
{
	usleep(20000);
	return NFSD_SUCCESS;
}

static atomic_int killed;
static int p_killonce(struct nfsd_req *r, void *a, void *res)
{
	if (atomic_fetch_add(&killed, 1) == 0) {
		shutdown(r->conn->fd, SHUT_RDWR);
		return NFSD_DROP;
	}
	return NFSD_SUCCESS;
}

atomic_int tp_bulk_now, tp_bulk_max;
static uint8_t bulk_data[256 << 10];

static int bulk_run(struct nfsd_req *r, void *a, void *res, bool disk)
{
	if (disk)
		nfsd_req_unbulk(r);
	int now = atomic_fetch_add(&tp_bulk_now, 1) + 1, max = atomic_load(&tp_bulk_max);
	while (now > max && !atomic_compare_exchange_weak(&tp_bulk_max, &max, now))
		;
	usleep(5000);
	atomic_fetch_sub(&tp_bulk_now, 1);
	uint32_t n = *(uint32_t *)a;
	*(xdr_opaque *)res = xdr_opaque_of(bulk_data, n < sizeof(bulk_data) ? n : sizeof(bulk_data));
	return NFSD_SUCCESS;
}
static int p_bulk(struct nfsd_req *r, void *a, void *res)
{
	return bulk_run(r, a, res, false);
}
static int p_bulk_disk(struct nfsd_req *r, void *a, void *res)
{
	return bulk_run(r, a, res, true);
}

static const struct nfsd_proc tprocs_v1[TP_NPROCS] = {
	[TP_NULL] = { .name = "NULL", .fn = p_null, .flags = NFSD_PROC_INLINE },
	[TP_ECHO] = { .name = "ECHO", .fn = p_echo, .dec_args = dec_opaque,
		      .args_size = sizeof(xdr_opaque), .enc_res = enc_opaque,
		      .res_size = sizeof(xdr_opaque) },
	[TP_WHOAMI] = { .name = "WHOAMI", .fn = p_whoami, .flags = NFSD_PROC_INLINE },
	[TP_DROP] = { .name = "DROP", .fn = p_drop, .flags = NFSD_PROC_INLINE },
	[TP_ASYNC] = { .name = "ASYNC", .fn = p_async, .dec_args = dec_u32,
		       .args_size = 4, .enc_res = enc_u32, .res_size = 4,
		       .flags = NFSD_PROC_INLINE },
	[TP_CALLBACK] = { .name = "CALLBACK", .fn = p_callback, .dec_args = dec_u32,
			  .args_size = 4, .enc_res = enc_u32, .res_size = 4,
			  .flags = NFSD_PROC_INLINE },
	[TP_UNIMPL] = { .name = "UNIMPL" },
	[TP_SLEEP] = { .name = "SLEEP", .fn = p_sleep },
	[TP_KILLONCE] = { .name = "KILLONCE", .fn = p_killonce },
	[TP_WHOAMI_W] = { .name = "WHOAMI_W", .fn = p_whoami },
	[TP_BULK] = { .name = "BULK", .fn = p_bulk, .dec_args = dec_u32, .args_size = 4,
		      .enc_res = enc_opaque, .res_size = sizeof(xdr_opaque),
		      .flags = NFSD_PROC_BULK },
	[TP_BULK_DISK] = { .name = "BULK_DISK", .fn = p_bulk_disk, .dec_args = dec_u32,
			   .args_size = 4, .enc_res = enc_opaque, .res_size = sizeof(xdr_opaque),
			   .flags = NFSD_PROC_BULK },
};
static const struct nfsd_proc tprocs_v3[1] = {
	{ .name = "NULL", .fn = p_null, .flags = NFSD_PROC_INLINE },
};
static const struct nfsd_version tvers[] = {
	{ .vers = 1, .procs = tprocs_v1, .nprocs = TP_NPROCS },
	{ .vers = 3, .procs = tprocs_v3, .nprocs = 1 },
};
static const struct nfsd_program tprog = {
	.prog = TPROG, .name = "test", .versions = tvers, .nversions = 2,
};

static int bc_add1(struct nfsd_req *r, void *a, void *res)
{
	*(uint32_t *)res = *(uint32_t *)a + 1;
	return NFSD_SUCCESS;
}
static const struct nfsd_proc bc_procs[2] = {
	{ .name = "NULL", .fn = p_null, .flags = NFSD_PROC_INLINE },
	{ .name = "ADD1", .fn = bc_add1, .dec_args = dec_u32, .args_size = 4,
	  .enc_res = enc_u32, .res_size = 4, .flags = NFSD_PROC_INLINE },
};
static const struct nfsd_version bc_vers[] = { { .vers = 1, .procs = bc_procs, .nprocs = 2 } };
const struct nfsd_program tprog_bc = {
	.prog = TPROG_BC, .name = "test-backchannel", .versions = bc_vers, .nversions = 1,
};

struct nfsd_server *tsrv_start(int backend, const struct nfsd_server_opts *opts, int *port)
{
	struct nfsd_server_opts o;
	if (opts)
		o = *opts;
	else
		nfsd_server_opts_default(&o);
	o.force_backend = backend;
	if (!o.nloops)
		o.nloops = 2;
	int err = 0;
	struct nfsd_server *s = nfsd_server_new(&o, &err);
	CHECK(s);
	CHECK_EQ(nfsd_server_add_program(s, &tprog), 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	CHECK_EQ(nfsd_server_listen(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	CHECK_EQ(nfsd_server_start(s), 0);
	*port = nfsd_server_listen_port(s, 0);
	atomic_store(&killed, 0);
	return s;
}

/* ------------------------------------------------------------ raw I/O */

int raw_connect(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(fd >= 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	CHECK(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

size_t raw_call(uint8_t *buf, uint32_t xid, uint32_t rpcvers, uint32_t prog, uint32_t vers,
		uint32_t proc, uint32_t flavor, const void *cred, uint32_t credlen,
		const void *args, uint32_t argslen)
{
	size_t o = 4;
	uint32_t hdr[] = { xid, 0, rpcvers, prog, vers, proc, flavor, credlen };
	for (unsigned i = 0; i < 8; i++, o += 4)
		xdr_put32(buf + o, hdr[i]);
	if (credlen)
		memcpy(buf + o, cred, credlen);
	o += credlen;
	while (o & 3)
		buf[o++] = 0;
	xdr_put32(buf + o, 0);
	xdr_put32(buf + o + 4, 0);
	o += 8;
	if (argslen)
		memcpy(buf + o, args, argslen);
	o += argslen;
	xdr_put32(buf, NFSD_REC_LAST | (uint32_t)(o - 4));
	return o;
}

static int read_full(int fd, void *p, size_t n)
{
	uint8_t *b = p;
	while (n) {
		ssize_t r = read(fd, b, n);
		if (r <= 0)
			return -1;
		b += r;
		n -= (size_t)r;
	}
	return 0;
}

ssize_t raw_read_record(int fd, uint8_t *buf, size_t cap)
{
	size_t len = 0;
	for (;;) {
		uint8_t m[4];
		if (read_full(fd, m, 4))
			return -1;
		uint32_t mark = xdr_get32(m);
		uint32_t n = mark & ~NFSD_REC_LAST;
		CHECK(len + n <= cap);
		if (read_full(fd, buf + len, n))
			return -1;
		len += n;
		if (mark & NFSD_REC_LAST)
			return (ssize_t)len;
	}
}

void raw_write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t w = write(fd, b, n);
		CHECK(w > 0);
		b += w;
		n -= (size_t)w;
	}
}

int raw_listen(struct sockaddr_in *sa)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	*sa = (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(*sa);
	CHECK(fd >= 0 && !bind(fd, (struct sockaddr *)sa, sizeof(*sa)) && !listen(fd, 4) &&
	      !getsockname(fd, (struct sockaddr *)sa, &sl));
	return fd;
}

int raw_parse_reply(const uint8_t *rec, size_t len, struct raw_reply *r)
{
	struct xdr_dec d;
	uint32_t mt, st, a, b;
	xdr_opaque verf;
	memset(r, 0, sizeof(*r));
	xdr_dec_init(&d, rec, len, NULL);
	if (xdr_dec_uint32(&d, &r->xid) || xdr_dec_uint32(&d, &mt) || mt != 1 ||
	    xdr_dec_uint32(&d, &st))
		return -1;
	if (st == 1) {
		if (xdr_dec_uint32(&d, &a) || xdr_dec_uint32(&d, &b))
			return -1;
		if (a == 0) {
			r->stat = 0x2ff;
			r->lo = b;
			return xdr_dec_uint32(&d, &r->hi);
		}
		r->stat = 0x200 | (int)b;
		return 0;
	}
	if (xdr_dec_uint32(&d, &a) || xdr_dec_opaque(&d, &verf, 400) || xdr_dec_uint32(&d, &b))
		return -1;
	r->stat = (int)b;
	if (b == NFSD_PROG_MISMATCH && (xdr_dec_uint32(&d, &r->lo) || xdr_dec_uint32(&d, &r->hi)))
		return -1;
	r->res = d.p;
	r->reslen = xdr_dec_left(&d);
	return 0;
}
