/* SPDX-License-Identifier: MIT */
/*
 * A client keeps reading replies while its own calls wait to be sent.
 *
 * A server may stop reading a connection while its replies are not being
 * read (ours does: NFSD_OUT_MAX_BYTES).  If the client then also stopped
 * reading because its calls could not be sent, both would wait on each
 * other for ever: found as a rare 20 s timeout in rpc-client-sink, 96 large
 * calls on one connection.  Here it is made certain, on both backends: a
 * raw server reads the first call only, then writes 48 MiB of replies (47
 * to xids nobody asked for, then the first call's) before it reads again,
 * while the client has 24 MiB of calls behind it waiting to go out.  The
 * first call must be answered, and every other one after the server reads.
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

enum { FLOOD = 47, BIG = 24, MIB = 1 << 20 };

struct rawsrv {
	int lfd;
	atomic_int flooded; /* the whole flood written */
	atomic_int answered;
};

static uint8_t *reply_rec(uint32_t xid, uint32_t body, size_t *len)
{
	/* an accepted, successful reply whose results are body bytes of zero
	 * (the client's NULL decodes none; unknown xids are dropped) */
	*len = 28 + body;
	uint8_t *p = calloc(1, *len);
	CHECK(p);
	xdr_put32(p, 0x80000000u | (uint32_t)(*len - 4));
	xdr_put32(p + 4, xid);
	xdr_put32(p + 8, 1);
	return p;
}

static void *raw_main(void *arg)
{
	struct rawsrv *s = arg;
	int fd = accept(s->lfd, NULL, NULL);
	CHECK(fd >= 0);
	uint8_t *rec = malloc(2 * MIB);
	CHECK(rec);
	CHECK(raw_read_record(fd, rec, 2 * MIB) > 0);
	uint32_t first = xdr_get32(rec);
	size_t len;
	uint8_t *junk = reply_rec(first ^ 0x5a5a5a5au, MIB - 64, &len);
	for (int i = 0; i < FLOOD; i++) {
		xdr_put32(junk + 4, first ^ 0x5a5a5a5au ^ (uint32_t)i);
		raw_write_all(fd, junk, len);
	}
	free(junk);
	uint8_t *ok = reply_rec(first, 0, &len);
	raw_write_all(fd, ok, len);
	free(ok);
	atomic_store(&s->flooded, 1);
	/* now the rest, each answered as it comes (ECHO's reply: opaque<> empty) */
	ssize_t n;
	while ((n = raw_read_record(fd, rec, 2 * MIB)) > 0) {
		uint8_t *r = reply_rec(xdr_get32(rec), 4, &len);
		raw_write_all(fd, r, len);
		free(r);
		atomic_fetch_add(&s->answered, 1);
	}
	close(fd);
	free(rec);
	return NULL;
}

static int enc_opq(struct xdr_enc *e, const void *v)
{
	return xdr_enc_opaque(e, v, 4u << 20);
}

struct done {
	atomic_int n, err;
};
static void done_cb(void *ctx, int err, struct xdr_dec *d)
{
	(void)d;
	struct done *dn = ctx;
	if (err)
		atomic_fetch_add(&dn->err, 1);
	atomic_fetch_add(&dn->n, 1);
}

static void run(int backend)
{
	struct rawsrv s = { 0 };
	struct sockaddr_in sa;
	s.lfd = raw_listen(&sa);
	pthread_t t;
	CHECK(!pthread_create(&t, NULL, raw_main, &s));

	int err = 0;
	struct nfsd_server *eng = nfsd_client_engine_new(1, backend, &err);
	CHECK(eng);
	struct nfsd_clnt_opts co = { 0 };
	struct nfsd_clnt *c = nfsd_clnt_new(eng, (struct sockaddr *)&sa, sizeof(sa), &co, &err);
	CHECK(c);

	/* the first call, then the large ones: some go out in the first send
	 * (which the server stops reading part way), the rest queue behind it */
	struct done first = { 0 }, big = { 0 };
	struct nfsd_call_opts nul = { .prog = TPROG, .vers = 1, .proc = TP_NULL,
				      .timeout_ms = 15000 };
	CHECK_EQ(nfsd_clnt_call_async(c, &nul, done_cb, &first), 0);
	uint8_t *arg = calloc(1, MIB);
	CHECK(arg);
	xdr_opaque a = xdr_opaque_of(arg, MIB);
	struct nfsd_call_opts ec = { .prog = TPROG, .vers = 1, .proc = TP_ECHO, .enc_args = enc_opq,
				     .args = &a, .timeout_ms = 30000 };
	for (int i = 0; i < BIG; i++) {
		CHECK_EQ(nfsd_clnt_call_async(c, &ec, done_cb, &big), 0);
		if (i == BIG / 4)
			usleep(100 * 1000); /* the first send is under way */
	}

	for (int i = 0; i < 3000 && !atomic_load(&first.n); i++)
		usleep(10000);
	CHECK_EQ(atomic_load(&first.n), 1);
	CHECK_EQ(atomic_load(&first.err), 0);
	CHECK(atomic_load(&s.flooded));
	for (int i = 0; i < 3000 && atomic_load(&big.n) < BIG; i++)
		usleep(10000);
	CHECK_EQ(atomic_load(&big.n), BIG);
	CHECK_EQ(atomic_load(&big.err), 0);
	CHECK_EQ(atomic_load(&s.answered), BIG);

	nfsd_clnt_free(c);
	pthread_join(t, NULL);
	close(s.lfd);
	free(arg);
	nfsd_server_free(eng);
}

int main(void)
{
	run(1);
	run(2);
	printf("rpc-client-duplex: ok\n");
	return 0;
}
