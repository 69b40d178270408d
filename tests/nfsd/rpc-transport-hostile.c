/* SPDX-License-Identifier: MIT */
/*
 * The record layer against hostile and unlucky peers: calls split into
 * one-byte fragments written one at a time, garbage, a record over the
 * limit, half-closed connections, connections reset with calls in
 * progress, 10,000 connections opened and dropped, and a slow reader that
 * never reads its replies (the server must stop reading rather than buffer).
 * Both backends.  After each, the server still answers and holds no
 * connection it should have closed.
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/check.h"
#include "tests/nfsd/rpc-engine.h"

static uint8_t buf[1 << 20], rbuf[1 << 20];

static void expect_null_ok(int port)
{
	int fd = raw_connect(port);
	size_t n = raw_call(buf, 77, 2, TPROG, 1, TP_NULL, 0, NULL, 0, NULL, 0);
	raw_write_all(fd, buf, n);
	ssize_t len = raw_read_record(fd, rbuf, sizeof(rbuf));
	struct raw_reply r;
	CHECK(len > 0);
	CHECK_EQ(raw_parse_reply(rbuf, (size_t)len, &r), 0);
	CHECK_EQ(r.xid, 77);
	CHECK_EQ(r.stat, 0);
	close(fd);
}

static int count_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	CHECK(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* Wait until the server has closed every connection it accepted. */
static void wait_all_closed(struct nfsd_server *s)
{
	struct nfsd_server_stats st;
	for (int i = 0; i < 1000; i++) {
		nfsd_server_stats(s, &st);
		if (st.conns_closed == st.conns_accepted)
			return;
		usleep(10000);
	}
	fprintf(stderr, "accepted %llu closed %llu\n", (unsigned long long)st.conns_accepted,
		(unsigned long long)st.conns_closed);
	CHECK(0);
}

static void run(int backend)
{
	int port;
	struct nfsd_server_opts so;
	nfsd_server_opts_default(&so);
	so.max_record = 256 << 10;
	so.max_conn_reqs = 64;
	struct nfsd_server *s = tsrv_start(backend, &so, &port);
	int fds_before = count_fds();
	struct nfsd_server_stats st;

	/* one-byte fragments, each its own write */
	int fd = raw_connect(port);
	uint8_t call[256], frag[5];
	size_t n = raw_call(call, 5, 2, TPROG, 1, TP_NULL, 0, NULL, 0, NULL, 0);
	for (size_t i = 4; i < n; i++) {
		xdr_put32(frag, (i == n - 1 ? 0x80000000u : 0) | 1);
		frag[4] = call[i];
		raw_write_all(fd, frag, 5);
		if (i % 8 == 0)
			usleep(1000);
	}
	ssize_t len = raw_read_record(fd, rbuf, sizeof(rbuf));
	struct raw_reply r;
	CHECK(len > 0);
	CHECK_EQ(raw_parse_reply(rbuf, (size_t)len, &r), 0);
	CHECK_EQ(r.xid, 5);
	CHECK_EQ(r.stat, 0);
	close(fd);

	/* garbage: random bytes; the server may drop us but must not fall over */
	fd = raw_connect(port);
	srand(1);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rand();
	for (int i = 0; i < 64; i++) {
		if (write(fd, buf + i * 1024, 1024) < 0)
			break;
	}
	close(fd);
	expect_null_ok(port);

	/* a record over max_record: connection closed, nothing buffered */
	fd = raw_connect(port);
	xdr_put32(buf, 0x80000000u | ((256 << 10) + 1));
	raw_write_all(fd, buf, 4);
	CHECK_EQ(raw_read_record(fd, rbuf, sizeof(rbuf)), -1);
	close(fd);
	nfsd_server_stats(s, &st);
	CHECK(st.records_too_big >= 1);

	/* half-closed: ten calls, then shutdown(SHUT_WR): ten replies, then EOF */
	fd = raw_connect(port);
	size_t o = 0;
	for (uint32_t i = 0; i < 10; i++)
		o += raw_call(buf + o, 1000 + i, 2, TPROG, 1, i % 2 ? TP_SLEEP : TP_NULL, 0, NULL, 0,
			      NULL, 0);
	raw_write_all(fd, buf, o);
	shutdown(fd, SHUT_WR);
	int seen = 0;
	while ((len = raw_read_record(fd, rbuf, sizeof(rbuf))) > 0) {
		CHECK_EQ(raw_parse_reply(rbuf, (size_t)len, &r), 0);
		CHECK(r.xid >= 1000 && r.xid < 1010);
		seen++;
	}
	CHECK_EQ(seen, 10);
	close(fd);

	/* reset with work in progress at the workers */
	for (int k = 0; k < 20; k++) {
		fd = raw_connect(port);
		o = 0;
		for (uint32_t i = 0; i < 20; i++)
			o += raw_call(buf + o, i, 2, TPROG, 1, TP_SLEEP, 0, NULL, 0, NULL, 0);
		raw_write_all(fd, buf, o);
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		close(fd);
	}
	expect_null_ok(port);

	/* 10,000 connections opened and dropped, some mid-record */
	for (int i = 0; i < 10000; i++) {
		fd = raw_connect(port);
		if (i % 3 == 1)
			raw_write_all(fd, call, 10);
		if (i % 3 == 2) {
			struct linger lg = { .l_onoff = 1, .l_linger = 0 };
			setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		}
		close(fd);
	}
	expect_null_ok(port);
	wait_all_closed(s);
	CHECK(count_fds() <= fds_before);

	/* slow reader: 64 KiB echoes, never reading the replies */
	fd = raw_connect(port);
	int rcv = 64 << 10;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	fcntl(fd, F_SETFL, O_NONBLOCK);
	static uint8_t pay[(64 << 10) + 4];
	xdr_put32(pay, 64 << 10);
	memset(pay + 4, 0xab, 64 << 10);
	nfsd_server_stats(s, &st);
	uint64_t calls0 = st.calls;
	const int total = 2000; /* 128 MiB of replies */
	int sent = 0, got = 0;
	size_t cn = raw_call(buf, 0, 2, TPROG, 1, TP_ECHO, 0, NULL, 0, pay, sizeof(pay));
	size_t off = 0;
	/* write until the server stops reading from us */
	for (int idle = 0; idle < 50 && sent < total;) {
		if (off == 0)
			xdr_put32(buf + 4, (uint32_t)sent);
		ssize_t w = write(fd, buf + off, cn - off);
		if (w < 0) {
			idle++;
			usleep(10000);
			continue;
		}
		idle = 0;
		off += (size_t)w;
		if (off == cn) {
			off = 0;
			sent++;
		}
	}
	nfsd_server_stats(s, &st);
	uint64_t taken = st.calls - calls0;
	fprintf(stderr, "slow reader: wrote %d calls, server took %llu before it stopped reading\n",
		sent, (unsigned long long)taken);
	/* bounded: at most the per-connection request limit plus what fits in
	 * socket buffers and one receive buffer, far below 'total' */
	CHECK(sent < total);
	CHECK(taken < 400);
	/* now read everything, writing the rest as the server catches up */
	fcntl(fd, F_SETFL, 0);
	struct pollfd pfd = { .fd = fd };
	size_t rd = 0, need = 0;
	static uint8_t rb[(64 << 10) + 256];
	static uint8_t seen_xid[2000];
	memset(seen_xid, 0, sizeof(seen_xid));
	while (got < total) {
		pfd.events = POLLIN | (sent < total ? POLLOUT : 0);
		CHECK(poll(&pfd, 1, 10000) > 0);
		if ((pfd.revents & POLLOUT) && sent < total) {
			if (off == 0)
				xdr_put32(buf + 4, (uint32_t)sent);
			ssize_t w = send(fd, buf + off, cn - off, MSG_DONTWAIT);
			if (w > 0) {
				off += (size_t)w;
				if (off == cn) {
					off = 0;
					sent++;
				}
			}
		}
		if (pfd.revents & POLLIN) {
			ssize_t k = recv(fd, rb + rd, (need ? need : 4) - rd, MSG_DONTWAIT);
			CHECK(k != 0);
			if (k < 0)
				continue;
			rd += (size_t)k;
			if (!need && rd == 4) {
				need = 4 + (xdr_get32(rb) & 0x7fffffff);
				CHECK(need <= sizeof(rb));
			} else if (need && rd == need) {
				CHECK_EQ(raw_parse_reply(rb + 4, need - 4, &r), 0);
				/* workers finish in any order: each xid once */
				CHECK(r.xid < (uint32_t)total && !seen_xid[r.xid]);
				seen_xid[r.xid] = 1;
				CHECK_EQ(r.stat, 0);
				CHECK_EQ(r.reslen, sizeof(pay));
				CHECK(memcmp(r.res, pay, sizeof(pay)) == 0);
				got++;
				rd = need = 0;
			}
		}
	}
	close(fd);
	expect_null_ok(port);
	wait_all_closed(s);
	nfsd_server_free(s);
}

int main(void)
{
	run(1);
	run(2);
	printf("rpc-transport-hostile: ok\n");
	return 0;
}
