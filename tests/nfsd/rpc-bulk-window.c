/* SPDX-License-Identifier: MIT */
/*
 * The bulk window (nfsd_server_opts.bulk_window, NFSD_PROC_BULK): however
 * many bulk calls a client queues, one connection runs at most the window's
 * worth between their dispatch and the end of their reply's send; the
 * window is per connection, not per server; a call that leaves it
 * (nfsd_req_unbulk: a data server's READ that goes to disk) lets the next
 * one start at once; and every call is answered, with its own data.
 * Without a window (the default) the calls all run at once, which is what
 * shows this test can fail.  Both backends.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/check.h"
#include "tests/nfsd/rpc-engine.h"

#define NCALLS 32

static uint8_t buf[NCALLS * 128], rbuf[1 << 20];

/* NCALLS calls of proc on each of nconn connections, written before any
 * reply is read; each reply checked.  Returns the most calls run at once. */
static int run(int backend, unsigned window, int proc, int nconn)
{
	struct nfsd_server_opts o;
	nfsd_server_opts_default(&o);
	o.bulk_window = window;
	o.nworkers = 64;
	int port;
	struct nfsd_server *s = tsrv_start(backend, &o, &port);
	atomic_store(&tp_bulk_now, 0);
	atomic_store(&tp_bulk_max, 0);
	int fds[2];
	for (int k = 0; k < nconn; k++) {
		fds[k] = raw_connect(port);
		size_t n = 0;
		for (uint32_t i = 0; i < NCALLS; i++) {
			/* each call asks for its own length, so a reply names its call */
			uint32_t arg = htonl(100000 + 1000 * i + (uint32_t)k);
			n += raw_call(buf + n, 1000 + i, 2, TPROG, 1, (uint32_t)proc, 0, NULL, 0, &arg,
				      4);
		}
		raw_write_all(fds[k], buf, n);
	}
	for (int k = 0; k < nconn; k++) {
		bool seen[NCALLS] = { false };
		for (int got = 0; got < NCALLS; got++) {
			ssize_t len = raw_read_record(fds[k], rbuf, sizeof(rbuf));
			CHECK(len > 0);
			struct raw_reply r;
			CHECK_EQ(raw_parse_reply(rbuf, (size_t)len, &r), 0);
			CHECK_EQ(r.stat, 0);
			CHECK(r.xid >= 1000 && r.xid < 1000 + NCALLS);
			uint32_t i = r.xid - 1000, want = 100000 + 1000 * i + (uint32_t)k;
			CHECK(!seen[i]);
			seen[i] = true;
			CHECK(r.reslen >= 4);
			CHECK_EQ(ntohl(*(const uint32_t *)r.res), want);
			CHECK_EQ(r.reslen, 4 + ((want + 3) & ~3u));
		}
		close(fds[k]);
	}
	nfsd_server_free(s);
	return atomic_load(&tp_bulk_max);
}

int main(void)
{
	for (int b = 1; b <= 2; b++) {
		int m = run(b, 3, TP_BULK, 1);
		printf("backend %d: window 3: at most %d at once\n", b, m);
		CHECK(m >= 1 && m <= 3);
		m = run(b, 0, TP_BULK, 1);
		printf("backend %d: no window: at most %d at once\n", b, m);
		CHECK(m > 3);
		/* per connection: two of them run up to twice the window */
		m = run(b, 3, TP_BULK, 2);
		printf("backend %d: window 3, 2 connections: at most %d at once\n", b, m);
		CHECK(m > 3 && m <= 6);
		/* calls that leave the window do not hold the next ones back */
		m = run(b, 3, TP_BULK_DISK, 1);
		printf("backend %d: window 3, calls leaving it: at most %d at once\n", b, m);
		CHECK(m > 3);
	}
	printf("rpc-bulk-window: ok\n");
	return 0;
}
