/* SPDX-License-Identifier: MIT */
/*
 * The engine records every call in the registry it was given
 * (nfsd_server_opts.metrics: count, errors, latency by program, version
 * and procedure), and the HTTP server (libmicrohttpd) exposes it:
 * "GET /metrics" (curl) after calls of the test program shows
 * braid_rpc_requests_total{program="test",version="1",procedure="ECHO"}
 * and the rest, well-formed, on both engine backends and on a second
 * address, and in OpenMetrics when the scraper asks for it; calls the
 * engine refuses before a procedure is found are not attributed to one;
 * HEAD gives the headers alone, other paths 404, other methods 405.  The
 * server's threads block signals.  Under abuse it refuses bytes that are
 * not HTTP (400 or a closed connection) and 64 KiB header and request
 * lines, survives clients that reset before reading, is bound to its
 * address alone, answers 32 scrapers at once whole, and drops a silent
 * client after its 5 s idle timeout without holding up the next scrape:
 * after each, it still serves.  It serves on [::1] too.
 */
#include "config.h"

#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
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

/* The threads of this process (at most n ids). */
static unsigned tasks(pid_t *ids, unsigned n)
{
	DIR *d = opendir("/proc/self/task");
	CHECK(d);
	unsigned k = 0;
	for (struct dirent *e; (e = readdir(d)) && k < n;)
		if (e->d_name[0] != '.')
			ids[k++] = (pid_t)atoi(e->d_name);
	closedir(d);
	return k;
}

/* Whether thread tid blocks sig (SigBlk in its /proc status). */
static bool blocks(pid_t tid, int sig)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	FILE *f = fopen(path, "r");
	CHECK(f);
	unsigned long long mask = 0;
	bool found = false;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "SigBlk: %llx", &mask) == 1;
	fclose(f);
	CHECK(found);
	return mask >> (sig - 1) & 1;
}

#define SCRAPERS 32
#define SCRAPES	 20

static void *scraper(void *arg)
{
	int port = (int)(intptr_t)arg;
	for (int i = 0; i < SCRAPES; i++) {
		struct mx_reply r;
		mx_curl(&r, port, "/metrics", NULL);
		CHECK_EQ(r.status, 200);
		CHECK_EQ(r.got, r.length);
		mx_check_format(r.body); /* whole: ends with a newline */
		CHECK(strstr(r.body, "\nbraid_metrics_dropped_total 0\n"));
		mx_reply_release(&r);
	}
	return NULL;
}

/* The endpoint under abuse: each time the next scrape is still served. */
static void http_abuse(int hp)
{
	/* not HTTP: 400 or the connection closed */
	static const char garbage[] = "\x01\x02 NOT HTTP\r\n\r\n";
	int st = mx_raw_status(hp, garbage, sizeof(garbage) - 1);
	fprintf(stderr, "garbage: %d\n", st);
	CHECK(st == 400 || st == 0);
	free(mx_scrape(hp));

	/* a 64 KiB header line, then a 64 KiB request line: refused */
	size_t big = 64 * 1024;
	char *req = malloc(big + 128);
	CHECK(req);
	int n = snprintf(req, 128, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ");
	memset(req + n, 'a', big);
	memcpy(req + n + big, "\r\n\r\n", 4);
	st = mx_raw_status(hp, req, (size_t)n + big + 4);
	fprintf(stderr, "64 KiB header: %d\n", st);
	CHECK(st == 431 || st == 413 || st == 400 || st == 0);
	free(mx_scrape(hp));
	static const char tail[] = " HTTP/1.1\r\nHost: x\r\n\r\n";
	n = snprintf(req, 128, "GET /metrics?");
	memset(req + n, 'a', big);
	memcpy(req + n + big, tail, sizeof(tail) - 1);
	st = mx_raw_status(hp, req, (size_t)n + big + sizeof(tail) - 1);
	fprintf(stderr, "64 KiB request line: %d\n", st);
	CHECK(st == 414 || st == 431 || st == 413 || st == 400 || st == 0);
	free(req);
	free(mx_scrape(hp));

	/* clients that ask and reset the connection at once: the server's
	 * writes fail (EPIPE, ECONNRESET), and no SIGPIPE ends us */
	for (int i = 0; i < 20; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in sa = {.sin_family = AF_INET,
					 .sin_port = htons((uint16_t)hp),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		CHECK(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
		static const char get[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
		CHECK(send(fd, get, sizeof(get) - 1, MSG_NOSIGNAL) == sizeof(get) - 1);
		struct linger lg = {.l_onoff = 1, .l_linger = 0};
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		close(fd);
	}
	free(mx_scrape(hp));

	/* bound to 127.0.0.1 only, not to every address */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in other = {.sin_family = AF_INET,
				    .sin_port = htons((uint16_t)hp),
				    .sin_addr.s_addr = htonl(INADDR_LOOPBACK + 1)};
	CHECK(connect(fd, (struct sockaddr *)&other, sizeof(other)) < 0 && errno == ECONNREFUSED);
	close(fd);

	/* many scrapers at once: every answer 200 and whole */
	pthread_t th[SCRAPERS];
	for (int i = 0; i < SCRAPERS; i++)
		CHECK_EQ(pthread_create(&th[i], NULL, scraper, (void *)(intptr_t)hp), 0);
	for (int i = 0; i < SCRAPERS; i++)
		pthread_join(th[i], NULL);

	/* a client that connects and says nothing does not hold up the
	 * next scrape, and is dropped after the 5 s idle timeout */
	int idle = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)hp),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK(connect(idle, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	free(mx_scrape(hp));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK(t1.tv_sec - t0.tv_sec < 4);
	struct timeval tv = {.tv_sec = 20};
	setsockopt(idle, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	char b;
	ssize_t got = recv(idle, &b, 1, 0);
	CHECK(got == 0 || (got < 0 && errno == ECONNRESET));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fprintf(stderr, "idle connection closed after %ld s\n", (long)(t1.tv_sec - t0.tv_sec));
	CHECK(t1.tv_sec - t0.tv_sec >= 3 && t1.tv_sec - t0.tv_sec < 15);
	close(idle);
}

/* IPv6: the same server on [::1], when this host has it. */
static void run_ipv6(void)
{
	struct nfsd_metrics *m = nfsd_metrics_new();
	CHECK(m);
	struct sockaddr_storage a;
	memset(&a, 0, sizeof(a));
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&a;
	in6->sin6_family = AF_INET6;
	in6->sin6_addr = in6addr_loopback;
	struct nfsd_metrics_http *h;
	char msg[256];
	int rc = nfsd_metrics_http_start(m, &a, 1, &h, msg, sizeof(msg));
	if (rc == -EADDRNOTAVAIL || rc == -EAFNOSUPPORT) {
		fprintf(stderr, "no IPv6 loopback (%s): not tried\n", msg);
		nfsd_metrics_free(m);
		return;
	}
	CHECK_EQ(rc, 0);
	int port = nfsd_metrics_http_port(h, 0);
	CHECK(port > 0);
	struct mx_reply r;
	mx_curl_host(&r, "[::1]", port, "/metrics", NULL);
	CHECK_EQ(r.status, 200);
	mx_check_format(r.body);
	mx_reply_release(&r);
	nfsd_metrics_http_stop(h);
	nfsd_metrics_free(m);
}

static void run(int backend, bool http)
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
	pid_t before[256], after[256];
	unsigned nb = tasks(before, 256);
	sigset_t mask0, mask1;
	pthread_sigmask(SIG_SETMASK, NULL, &mask0);
	CHECK(!sigismember(&mask0, SIGTERM));
	CHECK_EQ(nfsd_metrics_http_start(m, addrs, 2, &h, msg, sizeof(msg)), 0);
	/* the server's threads block signals; ours is as it was */
	unsigned na = tasks(after, 256), fresh = 0;
	for (unsigned i = 0; i < na; i++) {
		bool old = false;
		for (unsigned j = 0; j < nb; j++)
			old |= after[i] == before[j];
		if (old)
			continue;
		fresh++;
		CHECK(blocks(after[i], SIGTERM) && blocks(after[i], SIGINT) &&
		      blocks(after[i], SIGHUP) && blocks(after[i], SIGPIPE));
	}
	CHECK(fresh >= 2); /* one per address */
	pthread_sigmask(SIG_SETMASK, NULL, &mask1);
	CHECK(!sigismember(&mask1, SIGTERM) && !sigismember(&mask1, SIGPIPE));
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

	/* the same asked for in OpenMetrics */
	t = mx_scrape_openmetrics(hp);
	mx_check_openmetrics(t);
	CHECK(strstr(t, "# TYPE braid_rpc_requests counter\n"));
	CHECK_EQ(mx_value(t, series("braid_rpc_requests_total", "ECHO")), 4);
	CHECK_EQ(mx_value(t, series("braid_rpc_duration_seconds_count", "ECHO")), 4);
	free(t);

	/* HTTP: HEAD, other paths, other methods */
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

	if (http)
		http_abuse(hp);
	nfsd_metrics_http_stop(h);
	nfsd_server_free(s);
	nfsd_metrics_free(m);
}

int main(void)
{
	run(1, false); /* io_uring */
	run(2, true);  /* epoll, and the HTTP server under abuse */
	run_ipv6();
	return 0;
}
