/* SPDX-License-Identifier: MIT */
/*
 * The client side: pipelined calls, RPC errors surfaced to the caller,
 * timeouts, asynchronous server procedures, a server calling its client back
 * on the client's own connection (the NFSv4.1 backchannel's shape), and
 * reconnect with resend after the server drops the connection, and a
 * reconnecting client whose server died (its port refuses): with
 * fail_unreachable the call fails with ECONNREFUSED, not at its timeout.
 * Both backends.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/check.h"
#include "tests/nfsd/rpc-engine.h"

static int dec_u32(struct xdr_dec *d, void *v)
{
	return xdr_dec_uint32(d, v);
}
static int enc_u32(struct xdr_enc *e, const void *v)
{
	return xdr_enc_uint32(e, *(const uint32_t *)v);
}

static int dec_who(struct xdr_dec *d, void *v)
{
	uint32_t *u = v;
	for (int i = 0; i < 5; i++)
		if (xdr_dec_uint32(d, &u[i]))
			return -EBADMSG;
	return 0;
}

struct counter {
	atomic_int ok, err;
};
static void count_cb(void *ctx, int err, struct xdr_dec *d)
{
	struct counter *c = ctx;
	if (err)
		atomic_fetch_add(&c->err, 1);
	else
		atomic_fetch_add(&c->ok, 1);
}

static struct nfsd_clnt *mk(struct nfsd_server *eng, int port, bool reconnect, bool bc)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct nfsd_clnt_opts o = { .reconnect = reconnect, .backchannel = bc ? &tprog_bc : NULL };
	int err = 0;
	struct nfsd_clnt *c = nfsd_clnt_new(eng, (struct sockaddr *)&sa, sizeof(sa), &o, &err);
	CHECK(c);
	return c;
}

static void run(int backend)
{
	int port, err = 0;
	struct nfsd_server *s = tsrv_start(backend, NULL, &port);
	struct nfsd_server *eng = nfsd_client_engine_new(1, backend, &err);
	CHECK(eng);
	struct nfsd_clnt *c = mk(eng, port, false, true);
	struct nfsd_call_opts o = { .prog = TPROG, .vers = 1, .proc = TP_NULL };

	CHECK_EQ(nfsd_clnt_call(c, &o, NULL, NULL, NULL), 0);

	/* RPC-level errors come back as NFSD_CALL_ERR_* */
	o.prog = TPROG + 1;
	CHECK_EQ(nfsd_clnt_call(c, &o, NULL, NULL, NULL), NFSD_CALL_ERR_ACCEPT | NFSD_PROG_UNAVAIL);
	o.prog = TPROG;
	o.vers = 2;
	CHECK_EQ(nfsd_clnt_call(c, &o, NULL, NULL, NULL), NFSD_CALL_ERR_ACCEPT | NFSD_PROG_MISMATCH);
	o.vers = 1;
	o.proc = TP_UNIMPL;
	CHECK_EQ(nfsd_clnt_call(c, &o, NULL, NULL, NULL), NFSD_CALL_ERR_ACCEPT | NFSD_PROC_UNAVAIL);

	/* AUTH_SYS from the client */
	uint32_t gids[2] = { 7, 8 };
	struct nfsd_call_opts w = { .prog = TPROG, .vers = 1, .proc = TP_WHOAMI,
				    .flavor = NFSD_AUTH_SYS, .uid = 501, .gid = 20,
				    .gids = gids, .ngids = 2 };
	struct {
		uint32_t uid, gid, n, g0, g1;
	} who;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	CHECK_EQ(nfsd_clnt_call(c, &w, dec_who, &who, &ar), 0);
	CHECK_EQ(who.uid, 501);
	CHECK_EQ(who.gid, 20);
	CHECK_EQ(who.n, 2);
	CHECK_EQ(who.g1, 8);

	/* 20,000 pipelined calls from this thread; all answered */
	struct counter cnt = { 0 };
	o.proc = TP_NULL;
	for (int i = 0; i < 20000; i++)
		CHECK_EQ(nfsd_clnt_call_async(c, &o, count_cb, &cnt), 0);
	for (int i = 0; i < 1000 && atomic_load(&cnt.ok) + atomic_load(&cnt.err) < 20000; i++)
		usleep(10000);
	CHECK_EQ(atomic_load(&cnt.ok), 20000);

	/* an unanswered call times out */
	o.proc = TP_DROP;
	o.timeout_ms = 200;
	CHECK_EQ(nfsd_clnt_call(c, &o, NULL, NULL, NULL), -ETIMEDOUT);
	o.timeout_ms = 0;

	/* asynchronous server procedure */
	uint32_t x = 21, y = 0;
	struct nfsd_call_opts a = { .prog = TPROG, .vers = 1, .proc = TP_ASYNC,
				    .enc_args = enc_u32, .args = &x };
	CHECK_EQ(nfsd_clnt_call(c, &a, dec_u32, &y, &ar), 0);
	CHECK_EQ(y, 42);

	/* the server calls back on our connection; our backchannel answers */
	x = 41;
	a.proc = TP_CALLBACK;
	CHECK_EQ(nfsd_clnt_call(c, &a, dec_u32, &y, &ar), 0);
	CHECK_EQ(y, 42);
	nfsd_clnt_free(c);

	/* without a backchannel program, the server's callback gets
	 * PROG_UNAVAIL and the outer call reports SYSTEM_ERR */
	c = mk(eng, port, false, false);
	CHECK_EQ(nfsd_clnt_call(c, &a, dec_u32, &y, &ar), NFSD_CALL_ERR_ACCEPT | NFSD_SYSTEM_ERR);
	nfsd_clnt_free(c);

	/* reconnect: the server drops the connection under the first call; the
	 * client reconnects and resends it (same xid), and it succeeds */
	c = mk(eng, port, true, false);
	o.proc = TP_KILLONCE;
	o.timeout_ms = 10000;
	CHECK_EQ(nfsd_clnt_call(c, &o, NULL, NULL, NULL), 0);
	CHECK(nfsd_clnt_reconnects(c) >= 1);
	o.proc = TP_NULL;
	CHECK_EQ(nfsd_clnt_call(c, &o, NULL, NULL, NULL), 0);
	nfsd_clnt_free(c);

	/* a client freed before it carried a call (its registration and its
	 * close may reach the loop in one batch: they must run in order) */
	for (int i = 0; i < 1000; i++)
		nfsd_clnt_free(mk(eng, port, false, true));

	/* without reconnect the same drop fails the call (a fresh server
	 * re-arms KILLONCE) */
	nfsd_server_free(s);
	struct nfsd_server *s2 = tsrv_start(backend, NULL, &port);
	c = mk(eng, port, false, false);
	o.proc = TP_KILLONCE;
	CHECK_EQ(nfsd_clnt_call(c, &o, NULL, NULL, NULL), -ECONNRESET);
	nfsd_clnt_free(c);

	/* a server that goes away: pending calls fail, not hang */
	c = mk(eng, port, false, false);
	o.proc = TP_SLEEP;
	struct counter c2 = { 0 };
	for (int i = 0; i < 10; i++)
		CHECK_EQ(nfsd_clnt_call_async(c, &o, count_cb, &c2), 0);
	nfsd_server_free(s2);
	for (int i = 0; i < 500 && atomic_load(&c2.ok) + atomic_load(&c2.err) < 10; i++)
		usleep(10000);
	CHECK_EQ(atomic_load(&c2.ok) + atomic_load(&c2.err), 10);
	nfsd_clnt_free(c);

	/* a reconnecting client whose server died: the resend's connect is
	 * refused; with fail_unreachable the call fails so, else it waits
	 * for its timeout */
	for (int fu = 0; fu < 2; fu++) {
		struct nfsd_server *s3 = tsrv_start(backend, NULL, &port);
		struct sockaddr_in sa3 = {.sin_family = AF_INET,
					  .sin_port = htons((uint16_t)port),
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		struct nfsd_clnt_opts co = {.reconnect = true, .fail_unreachable = fu};
		c = nfsd_clnt_new(eng, (struct sockaddr *)&sa3, sizeof(sa3), &co, &err);
		CHECK(c);
		o.proc = TP_NULL;
		o.timeout_ms = 1500;
		CHECK_EQ(nfsd_clnt_call(c, &o, NULL, NULL, NULL), 0);
		nfsd_server_free(s3);
		CHECK_EQ(nfsd_clnt_call(c, &o, NULL, NULL, NULL), fu ? -ECONNREFUSED : -ETIMEDOUT);
		nfsd_clnt_free(c);
	}

	/* connecting to nothing reports the error at once */
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	CHECK(!nfsd_clnt_new(eng, (struct sockaddr *)&sa, sizeof(sa), NULL, &err));
	CHECK_EQ(err, -ECONNREFUSED);

	xdr_arena_release(&ar);
	nfsd_server_free(eng);
}

int main(void)
{
	run(1);
	run(2);
	printf("rpc-client: ok\n");
	return 0;
}
