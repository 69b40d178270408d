/* SPDX-License-Identifier: MIT */
/*
 * RFC 5531 §9: every reply the dispatcher owes — RPC_MISMATCH, AUTH_ERROR
 * (unknown flavor, malformed AUTH_SYS, AUTH_NONE with a body),
 * PROG_UNAVAIL, PROG_MISMATCH with the version range, PROC_UNAVAIL,
 * GARBAGE_ARGS — and AUTH_SYS credentials reaching the procedure, with and
 * without server-side group resolution.  Both backends.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/check.h"
#include "tests/nfsd/rpc-engine.h"

static uint8_t buf[8 << 20], rbuf[8 << 20];

static struct raw_reply roundtrip(int fd, size_t n)
{
	struct raw_reply r;
	raw_write_all(fd, buf, n);
	ssize_t len = raw_read_record(fd, rbuf, sizeof(rbuf));
	CHECK(len > 0);
	CHECK_EQ(raw_parse_reply(rbuf, (size_t)len, &r), 0);
	return r;
}

static size_t authsys(uint8_t *c, uint32_t uid, uint32_t gid, uint32_t n, const uint32_t *g)
{
	size_t o = 0;
	xdr_put32(c + o, 7), o += 4;          /* stamp */
	xdr_put32(c + o, 5), o += 4;          /* machinename */
	memcpy(c + o, "host\0\0\0", 8), o += 8;
	xdr_put32(c + o, uid), o += 4;
	xdr_put32(c + o, gid), o += 4;
	xdr_put32(c + o, n), o += 4;
	for (uint32_t i = 0; i < n; i++)
		xdr_put32(c + o, g[i]), o += 4;
	return o;
}

static void run(int backend)
{
	int port;
	struct nfsd_server *s = tsrv_start(backend, NULL, &port);
	int fd = raw_connect(port);
	struct raw_reply r;
	uint8_t cred[200], args[16];

	r = roundtrip(fd, raw_call(buf, 1, 2, TPROG, 1, TP_NULL, 0, NULL, 0, NULL, 0));
	CHECK_EQ(r.xid, 1);
	CHECK_EQ(r.stat, NFSD_SUCCESS);
	CHECK_EQ(r.reslen, 0);

	/* rpcvers 3: MSG_DENIED RPC_MISMATCH low = high = 2 */
	r = roundtrip(fd, raw_call(buf, 2, 3, TPROG, 1, TP_NULL, 0, NULL, 0, NULL, 0));
	CHECK_EQ(r.stat, 0x2ff);
	CHECK_EQ(r.lo, 2);
	CHECK_EQ(r.hi, 2);

	r = roundtrip(fd, raw_call(buf, 3, 2, TPROG + 7, 1, TP_NULL, 0, NULL, 0, NULL, 0));
	CHECK_EQ(r.stat, NFSD_PROG_UNAVAIL);

	r = roundtrip(fd, raw_call(buf, 4, 2, TPROG, 2, TP_NULL, 0, NULL, 0, NULL, 0));
	CHECK_EQ(r.stat, NFSD_PROG_MISMATCH);
	CHECK_EQ(r.lo, 1);
	CHECK_EQ(r.hi, 3);

	r = roundtrip(fd, raw_call(buf, 5, 2, TPROG, 1, TP_UNIMPL, 0, NULL, 0, NULL, 0));
	CHECK_EQ(r.stat, NFSD_PROC_UNAVAIL);
	r = roundtrip(fd, raw_call(buf, 6, 2, TPROG, 1, 999, 0, NULL, 0, NULL, 0));
	CHECK_EQ(r.stat, NFSD_PROC_UNAVAIL);
	r = roundtrip(fd, raw_call(buf, 7, 2, TPROG, 3, 1, 0, NULL, 0, NULL, 0));
	CHECK_EQ(r.stat, NFSD_PROC_UNAVAIL);

	/* ECHO whose opaque claims more bytes than the record has */
	xdr_put32(args, 100);
	r = roundtrip(fd, raw_call(buf, 8, 2, TPROG, 1, TP_ECHO, 0, NULL, 0, args, 8));
	CHECK_EQ(r.stat, NFSD_GARBAGE_ARGS);
	/* non-zero XDR padding is garbage too */
	xdr_put32(args, 1);
	memcpy(args + 4, "a\1\0\0", 4);
	r = roundtrip(fd, raw_call(buf, 9, 2, TPROG, 1, TP_ECHO, 0, NULL, 0, args, 8));
	CHECK_EQ(r.stat, NFSD_GARBAGE_ARGS);

	/* unknown flavor; AUTH_NONE with a body; malformed AUTH_SYS */
	r = roundtrip(fd, raw_call(buf, 10, 2, TPROG, 1, TP_NULL, 99, NULL, 0, NULL, 0));
	CHECK_EQ(r.stat, 0x200 | NFSD_AUTH_BADCRED);
	r = roundtrip(fd, raw_call(buf, 11, 2, TPROG, 1, TP_NULL, 0, "abcd", 4, NULL, 0));
	CHECK_EQ(r.stat, 0x200 | NFSD_AUTH_BADCRED);
	uint32_t g17[17] = { 0 };
	size_t cl = authsys(cred, 1, 1, 17, g17);
	r = roundtrip(fd, raw_call(buf, 12, 2, TPROG, 1, TP_NULL, 1, cred, (uint32_t)cl, NULL, 0));
	CHECK_EQ(r.stat, 0x200 | NFSD_AUTH_BADCRED);
	cl = authsys(cred, 1, 1, 0, NULL);
	r = roundtrip(fd, raw_call(buf, 13, 2, TPROG, 1, TP_NULL, 1, cred, (uint32_t)cl - 4, NULL, 0));
	CHECK_EQ(r.stat, 0x200 | NFSD_AUTH_BADCRED);
	/* credential body over RFC 5531's 400-byte bound */
	r = roundtrip(fd, raw_call(buf, 14, 2, TPROG, 1, TP_NULL, 1, buf + 1000, 404, NULL, 0));
	CHECK_EQ(r.stat, 0x200 | NFSD_AUTH_BADCRED);

	/* AUTH_SYS reaches the handler */
	uint32_t g3[3] = { 10, 20, 30 };
	cl = authsys(cred, 1234, 56, 3, g3);
	r = roundtrip(fd, raw_call(buf, 15, 2, TPROG, 1, TP_WHOAMI, 1, cred, (uint32_t)cl, NULL, 0));
	CHECK_EQ(r.stat, NFSD_SUCCESS);
	CHECK_EQ(r.reslen, 24);
	CHECK_EQ(xdr_get32(r.res), 1234);
	CHECK_EQ(xdr_get32(r.res + 4), 56);
	CHECK_EQ(xdr_get32(r.res + 8), 3);
	CHECK_EQ(xdr_get32(r.res + 20), 30);

	/* echo of every size class up to 1 MiB: large results are referenced */
	size_t sizes[] = { 0, 1, 3, 1023, 1024, 4096, 100000, 1 << 20 };
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		static uint8_t pay[(1 << 20) + 8];
		xdr_put32(pay, (uint32_t)sizes[i]);
		for (size_t k = 0; k < sizes[i]; k++)
			pay[4 + k] = (uint8_t)(k * 13 + i);
		size_t al = 4 + ((sizes[i] + 3) & ~(size_t)3);
		memset(pay + 4 + sizes[i], 0, al - 4 - sizes[i]);
		r = roundtrip(fd, raw_call(buf, 100 + i, 2, TPROG, 1, TP_ECHO, 0, NULL, 0, pay,
					   (uint32_t)al));
		CHECK_EQ(r.stat, NFSD_SUCCESS);
		CHECK_EQ(r.reslen, al);
		CHECK(memcmp(r.res, pay, al) == 0);
	}
	close(fd);
	nfsd_server_free(s);

	/* manage_gids: the server's group database replaces the wire's list */
	struct nfsd_server_opts o;
	nfsd_server_opts_default(&o);
	o.manage_gids = true;
	s = tsrv_start(backend, &o, &port);
	fd = raw_connect(port);
	uint32_t g1[1] = { 4242 };
	cl = authsys(cred, 0, 0, 1, g1);
	/* uid 0 is root here: its groups come from /etc/group, not the wire */
	r = roundtrip(fd, raw_call(buf, 20, 2, TPROG, 1, TP_WHOAMI_W, 1, cred, (uint32_t)cl, NULL, 0));
	CHECK_EQ(r.stat, NFSD_SUCCESS);
	uint32_t ng = xdr_get32(r.res + 8);
	CHECK(ng >= 1);
	CHECK_EQ(xdr_get32(r.res + 12), 0);
	for (uint32_t i = 0; i < ng; i++)
		CHECK(xdr_get32(r.res + 12 + 4 * i) != 4242);
	/* an unknown uid keeps what the client sent */
	cl = authsys(cred, 3999999, 5, 1, g1);
	r = roundtrip(fd, raw_call(buf, 21, 2, TPROG, 1, TP_WHOAMI_W, 1, cred, (uint32_t)cl, NULL, 0));
	CHECK_EQ(xdr_get32(r.res + 8), 1);
	CHECK_EQ(xdr_get32(r.res + 12), 4242);
	close(fd);
	nfsd_server_free(s);
}

int main(void)
{
	run(1);
	run(2);
	printf("rfc5531-9-dispatch-errors: ok\n");
	return 0;
}
