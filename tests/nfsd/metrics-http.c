/* SPDX-License-Identifier: MIT */
/*
 * The engine records every call in the registry it was given
 * (nfsd_server_opts.metrics: count, errors, latency by program, version
 * and procedure), and the HTTP server exposes it: "GET /metrics" (curl)
 * after calls of the test program shows
 * braid_rpc_requests_total{program="test",version="1",procedure="ECHO"}
 * and the rest, well-formed, on both engine backends; calls the engine
 * refuses before a procedure is found are not attributed to one; HEAD
 * gives the headers alone, other paths 404, other methods 405, a
 * malformed request 400 (or a closed connection), a silent client does
 * not stop the next scrape for long, and a second address serves the
 * same.
 */
#include "config.h"

#include <poll.h>
#include <time.h>

#include "nfsd/metrics.h"
#include "nfsd/xdr.h"
#include "tests/nfsd/metrics-test.h"
#include "tests/nfsd/rpc-engine.h"

static int roundtrip(int fd, size_t len, const uint8_t *buf)
{
	raw_write_all(fd, buf, len);
	uint8_t rec[1 << 16];
	ssize_t n = raw_read_record(fd, rec, sizeof(rec));
	CHECK(n > 0);
	struct raw_reply r;
	CHECK_EQ(raw_parse_reply(rec, (size_t)n, &r), 0);
	return r.stat;
}

static char *series(const char *name, const char *proc)
{
	static char s[256];
	snprintf(s, sizeof(s), "%s{program=\"test\",version=\"1\",procedure=\"%s\"}", name, proc);
	return s;
}

static void run(int backend, bool idle_client)
{
	struct nfsd_metrics *m = nfsd_metrics_new();
	CHECK(m);
	struct nfsd_server_opts o;
	nfsd_server_opts_default(&o);
	o.metrics = m;
	int port;
	struct nfsd_server *s = tsrv_start(backend, &o, &port);
	struct sockaddr_storage addrs[2];
	memset(addrs, 0, sizeof(addrs));
	for (int i = 0; i < 2; i++) {
		struct sockaddr_in *in = (struct sockaddr_in *)&addrs[i];
		in->sin_family = AF_INET;
		in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	}
	struct nfsd_metrics_http *h;
	char msg[256];
	CHECK_EQ(nfsd_metrics_http_start(m, addrs, 2, &h, msg, sizeof(msg)), 0);
	int hp = nfsd_metrics_http_port(h, 0), hp2 = nfsd_metrics_http_port(h, 1);
	CHECK(hp > 0 && hp2 > 0 && hp != hp2);
	CHECK_EQ(nfsd_metrics_http_port(h, 2), -1);

	/* before any call: no procedure series, and well-formed */
	char *t = mx_scrape(hp);
	mx_check_format(t);
	CHECK(!strstr(t, "braid_rpc_requests_total"));
	free(t);

	int fd = raw_connect(port);
	uint8_t buf[512], args[8];
	xdr_put32(args, 3);
	memcpy(args + 4, "abc\0", 4);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(roundtrip(fd,
				   raw_call(buf, (uint32_t)i + 1, 2, TPROG, 1, TP_ECHO, 0, NULL, 0,
					    args, 8),
				   buf),
			 NFSD_SUCCESS);
	xdr_put32(args, 100); /* more bytes claimed than sent: GARBAGE_ARGS */
	CHECK_EQ(roundtrip(fd, raw_call(buf, 10, 2, TPROG, 1, TP_ECHO, 0, NULL, 0, args, 8), buf),
		 NFSD_GARBAGE_ARGS);
	CHECK_EQ(roundtrip(fd, raw_call(buf, 11, 2, TPROG, 1, TP_WHOAMI, 0, NULL, 0, NULL, 0), buf),
		 NFSD_SUCCESS);
	CHECK_EQ(roundtrip(fd, raw_call(buf, 12, 2, TPROG, 1, TP_SLEEP, 0, NULL, 0, NULL, 0), buf),
		 NFSD_SUCCESS);
	/* refused before a procedure: not counted against one */
	CHECK_EQ(roundtrip(fd, raw_call(buf, 13, 2, TPROG, 1, TP_UNIMPL, 0, NULL, 0, NULL, 0), buf),
		 NFSD_PROC_UNAVAIL);
	CHECK_EQ(
	    roundtrip(fd, raw_call(buf, 14, 2, TPROG + 7, 1, TP_NULL, 0, NULL, 0, NULL, 0), buf),
	    NFSD_PROG_UNAVAIL);
	close(fd);

	t = mx_scrape(hp2);
	mx_check_format(t);
	CHECK_EQ(mx_value(t, series("braid_rpc_requests_total", "ECHO")), 4);
	CHECK_EQ(mx_value(t, series("braid_rpc_errors_total", "ECHO")), 1);
	CHECK_EQ(mx_value(t, series("braid_rpc_requests_total", "WHOAMI")), 1);
	CHECK_EQ(mx_value(t, series("braid_rpc_errors_total", "WHOAMI")), 0);
	CHECK_EQ(mx_value(t, series("braid_rpc_duration_seconds_count", "ECHO")), 4);
	/* SLEEP takes 20 ms: in the 0.025 s bucket and not the 0.01 s one */
	char b[300];
	snprintf(b, sizeof(b),
		 "braid_rpc_duration_seconds_bucket{program=\"test\",version=\"1\","
		 "procedure=\"SLEEP\",le=\"0.01\"}");
	CHECK_EQ(mx_value(t, b), 0);
	snprintf(b, sizeof(b),
		 "braid_rpc_duration_seconds_bucket{program=\"test\",version=\"1\","
		 "procedure=\"SLEEP\",le=\"+Inf\"}");
	CHECK_EQ(mx_value(t, b), 1);
	CHECK(mx_value(t, series("braid_rpc_duration_seconds_sum", "SLEEP")) >= 0.019);
	CHECK_EQ(mx_value(t, series("braid_rpc_requests_total", "UNIMPL")), -1);
	CHECK(!strstr(t, "NULL\"}"));
	free(t);

	/* HTTP: HEAD, other paths, other methods, nonsense */
	struct mx_reply r;
	mx_curl(&r, hp, "/metrics", (const char *const[]){"--head", NULL});
	CHECK_EQ(r.status, 200);
	CHECK_EQ(r.got, 0);
	CHECK(r.length > 100);
	mx_reply_release(&r);
	mx_curl(&r, hp, "/metrics?x=1", NULL);
	CHECK_EQ(r.status, 200);
	CHECK_EQ(r.got, r.length);
	mx_reply_release(&r);
	mx_curl(&r, hp, "/other", NULL);
	CHECK_EQ(r.status, 404);
	CHECK(strstr(r.body, "/metrics"));
	mx_reply_release(&r);
	mx_curl(&r, hp, "/metrics", (const char *const[]){"--data", "", NULL}); /* POST */
	CHECK_EQ(r.status, 405);
	CHECK(!strcmp(r.allow, "GET, HEAD"));
	mx_reply_release(&r);
	static const char garbage[] = "\x01\x02 NOT HTTP\r\n\r\n";
	int st = mx_raw_status(hp, garbage, sizeof(garbage) - 1);
	CHECK(st == 400 || st == 0);

	/* a client that connects and says nothing holds the server at most
	 * its 5 s timeout; then the next one is served */
	if (!idle_client)
		goto out;
	int idle = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)hp),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK(connect(idle, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	t = mx_scrape(hp);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK(t1.tv_sec - t0.tv_sec < 8);
	free(t);
	close(idle);
out:
	nfsd_metrics_http_stop(h);
	nfsd_server_free(s);
	nfsd_metrics_free(m);
}

int main(void)
{
	run(1, false); /* io_uring */
	run(2, true);  /* epoll */
	return 0;
}
