/* SPDX-License-Identifier: MIT */
/*
 * bench/rpc: NULL calls per second through the RPC engine, and the server's
 * CPU microseconds per call, with 1 and 8 connections and 16 calls in flight
 * on each; beside it, in the same run, a raw TCP echo of the same message
 * sizes (an epoll server that does nothing but echo: the ceiling for a
 * request/response protocol on this box).  Server and echo server run in
 * their own processes so their CPU time is measured alone.
 *
 * Usage: rpc [--seconds N] [--quick]
 * Last line of output: one JSON object with the figures and ratios.
 */
#include "config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/common.h"
#include "nfsd/rpc.h"

#define BPROG 0x20000100u
#define INFLIGHT 16

/* ------------------------------------------------------------ servers */

static int p_null(struct nfsd_req *r, void *a, void *res)
{
	return NFSD_SUCCESS;
}
static const struct nfsd_proc bprocs[1] = {
	{ .name = "NULL", .fn = p_null, .flags = NFSD_PROC_INLINE },
};
static const struct nfsd_version bvers[1] = { { .vers = 1, .procs = bprocs, .nprocs = 1 } };
static const struct nfsd_program bprog = {
	.prog = BPROG, .name = "bench", .versions = bvers, .nversions = 1,
};

static volatile sig_atomic_t stop_flag;
static void on_term(int sig)
{
	stop_flag = 1;
}

static void rpc_server_child(int wfd, int backend)
{
	struct nfsd_server_opts o;
	nfsd_server_opts_default(&o);
	o.force_backend = backend;
	int err = 0;
	struct nfsd_server *s = nfsd_server_new(&o, &err);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (!s || nfsd_server_add_program(s, &bprog) ||
	    nfsd_server_listen(s, (struct sockaddr *)&sa, sizeof(sa)) || nfsd_server_start(s))
		_exit(1);
	int port = nfsd_server_listen_port(s, 0);
	if (write(wfd, &port, sizeof(port)) != sizeof(port))
		_exit(1);
	signal(SIGTERM, on_term);
	while (!stop_flag)
		pause();
	nfsd_server_free(s);
	_exit(0);
}

/* Echo: read whatever arrives, write it straight back. */
static void echo_server_child(int wfd)
{
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 128))
		_exit(1);
	getsockname(lfd, (struct sockaddr *)&sa, &sl);
	int port = ntohs(sa.sin_port);
	if (write(wfd, &port, sizeof(port)) != sizeof(port))
		_exit(1);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = lfd };
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	static char buf[1 << 16];
	signal(SIGTERM, on_term);
	while (!stop_flag) {
		struct epoll_event evs[64];
		int n = epoll_wait(ep, evs, 64, 100);
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (fd == lfd) {
				int c = accept(lfd, NULL, NULL);
				int one = 1;
				setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				struct epoll_event e2 = { .events = EPOLLIN, .data.fd = c };
				epoll_ctl(ep, EPOLL_CTL_ADD, c, &e2);
				continue;
			}
			ssize_t r = read(fd, buf, sizeof(buf));
			if (r <= 0) {
				close(fd);
				continue;
			}
			for (ssize_t w = 0; w < r;) {
				ssize_t k = write(fd, buf + w, (size_t)(r - w));
				if (k <= 0)
					break;
				w += k;
			}
		}
	}
	_exit(0);
}

static pid_t spawn(void (*fn)(int, int), int arg, int *port)
{
	int p[2];
	if (pipe(p))
		exit(99);
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		fn(p[1], arg);
	}
	close(p[1]);
	if (read(p[0], port, sizeof(*port)) != sizeof(*port)) {
		fprintf(stderr, "bench/rpc: server failed to start\n");
		exit(99);
	}
	close(p[0]);
	return pid;
}

static void echo_child_adapter(int wfd, int unused)
{
	echo_server_child(wfd);
}

static void reap(pid_t pid)
{
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

/* ------------------------------------------------------------ RPC load */

struct load {
	struct nfsd_clnt *c;
	atomic_ullong *done;
	atomic_bool *stop;
	struct nfsd_call_opts o;
};

static void null_cb(void *ctx, int err, struct xdr_dec *d)
{
	struct load *l = ctx;
	if (err) {
		fprintf(stderr, "bench/rpc: call failed: %d\n", err);
		exit(99);
	}
	atomic_fetch_add_explicit(l->done, 1, memory_order_relaxed);
	if (!atomic_load_explicit(l->stop, memory_order_relaxed))
		nfsd_clnt_call_async(l->c, &l->o, null_cb, l);
}

struct result {
	double calls_per_s, server_us_per_call;
};

static struct result rpc_load(int port, pid_t spid, int nconn, double secs, int client_loops)
{
	int err = 0;
	struct nfsd_server *eng = nfsd_client_engine_new((unsigned)client_loops, 0, &err);
	if (!eng)
		exit(99);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	atomic_ullong done = 0;
	atomic_bool stop = false;
	struct load *ls = calloc((size_t)nconn, sizeof(*ls));
	for (int i = 0; i < nconn; i++) {
		ls[i].c = nfsd_clnt_new(eng, (struct sockaddr *)&sa, sizeof(sa), NULL, &err);
		if (!ls[i].c)
			exit(99);
		ls[i].done = &done;
		ls[i].stop = &stop;
		ls[i].o = (struct nfsd_call_opts){ .prog = BPROG, .vers = 1, .proc = 0 };
	}
	/* warm up, then measure */
	for (int i = 0; i < nconn; i++)
		for (int k = 0; k < INFLIGHT; k++)
			nfsd_clnt_call_async(ls[i].c, &ls[i].o, null_cb, &ls[i]);
	usleep(300000);
	unsigned long long d0 = atomic_load(&done);
	double c0 = bench_proc_cpu_s(spid), t0 = bench_now_s();
	usleep((useconds_t)(secs * 1e6));
	unsigned long long d1 = atomic_load(&done);
	double c1 = bench_proc_cpu_s(spid), t1 = bench_now_s();
	atomic_store(&stop, true);
	usleep(100000);
	for (int i = 0; i < nconn; i++)
		nfsd_clnt_free(ls[i].c);
	nfsd_server_free(eng);
	free(ls);
	struct result r;
	double calls = (double)(d1 - d0);
	r.calls_per_s = calls / (t1 - t0);
	r.server_us_per_call = calls > 0 ? (c1 - c0) * 1e6 / calls : 0;
	return r;
}

/* ------------------------------------------------------------ echo load */

/* Same bytes as a NULL call (44) and its reply (28): the echo returns 44. */
static double echo_load(int port, int nconn, double secs)
{
	int ep = epoll_create1(0);
	int *fds = calloc((size_t)nconn, sizeof(int));
	size_t *pending = calloc((size_t)nconn, sizeof(size_t));
	static char msg[44 * INFLIGHT], buf[1 << 16];
	unsigned long long done = 0;
	for (int i = 0; i < nconn; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		if (connect(fds[i], (struct sockaddr *)&sa, sizeof(sa)))
			exit(99);
		int one = 1;
		setsockopt(fds[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)i };
		epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev);
		if (write(fds[i], msg, sizeof(msg)) != (ssize_t)sizeof(msg))
			exit(99);
	}
	double t0 = bench_now_s(), tw = t0 + 0.3, t1 = tw + secs;
	unsigned long long d0 = 0;
	bool measuring = false;
	for (;;) {
		double t = bench_now_s();
		if (!measuring && t >= tw) {
			measuring = true;
			d0 = done;
		}
		if (t >= t1)
			break;
		struct epoll_event evs[64];
		int n = epoll_wait(ep, evs, 64, 100);
		for (int k = 0; k < n; k++) {
			int i = (int)evs[k].data.u32;
			ssize_t r = read(fds[i], buf, sizeof(buf));
			if (r <= 0)
				exit(99);
			pending[i] += (size_t)r;
			size_t msgs = pending[i] / 44;
			pending[i] %= 44;
			done += msgs;
			if (msgs && write(fds[i], msg, 44 * msgs) != (ssize_t)(44 * msgs))
				exit(99);
		}
	}
	double rate = (double)(done - d0) / (bench_now_s() - tw);
	for (int i = 0; i < nconn; i++)
		close(fds[i]);
	close(ep);
	free(fds);
	free(pending);
	return rate;
}

int main(int argc, char **argv)
{
	double secs = 3;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			secs = atof(argv[++i]);
		else if (!strcmp(argv[i], "--quick"))
			secs = 1;
	}
	signal(SIGPIPE, SIG_IGN);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int cl_loops = ncpu > 1 ? (int)ncpu / 2 : 1;

	int port;
	pid_t srv = spawn(rpc_server_child, 0, &port);
	struct result r1 = rpc_load(port, srv, 1, secs, 1);
	struct result r8 = rpc_load(port, srv, 8, secs, cl_loops);
	reap(srv);
	srv = spawn(rpc_server_child, 2, &port);
	struct result r8e = rpc_load(port, srv, 8, secs, cl_loops);
	reap(srv);

	pid_t es = spawn(echo_child_adapter, 0, &port);
	double e1 = echo_load(port, 1, secs);
	double e8 = echo_load(port, 8, secs);
	reap(es);

	printf("bench/rpc: NULL calls, %d in flight per connection, %.1f s each, %ld cores\n",
	       INFLIGHT, secs, ncpu);
	printf("%-34s %14s %16s %12s\n", "case", "calls/s", "server us/call", "vs echo");
	printf("%-34s %14.0f %16.3f %12.2f\n", "braid io_uring, 1 connection", r1.calls_per_s,
	       r1.server_us_per_call, r1.calls_per_s / e1);
	printf("%-34s %14.0f %16.3f %12.2f\n", "braid io_uring, 8 connections", r8.calls_per_s,
	       r8.server_us_per_call, r8.calls_per_s / e8);
	printf("%-34s %14.0f %16.3f %12.2f\n", "braid epoll, 8 connections", r8e.calls_per_s,
	       r8e.server_us_per_call, r8e.calls_per_s / e8);
	printf("%-34s %14.0f %16s %12s\n", "raw TCP echo, 1 connection", e1, "-", "1.00");
	printf("%-34s %14.0f %16s %12s\n", "raw TCP echo, 8 connections", e8, "-", "1.00");
	printf("{\"bench\":\"rpc\",\"seconds\":%.1f,\"inflight\":%d,\"cores\":%ld,"
	       "\"null_calls_per_s_1conn\":%.0f,\"null_calls_per_s_8conn\":%.0f,"
	       "\"null_calls_per_s_8conn_epoll\":%.0f,"
	       "\"server_us_per_call_1conn\":%.3f,\"server_us_per_call_8conn\":%.3f,"
	       "\"server_us_per_call_8conn_epoll\":%.3f,"
	       "\"echo_ceiling_calls_per_s_1conn\":%.0f,\"echo_ceiling_calls_per_s_8conn\":%.0f,"
	       "\"null_8conn_vs_echo\":%.3f,\"null_1conn_vs_echo\":%.3f}\n",
	       secs, INFLIGHT, ncpu, r1.calls_per_s, r8.calls_per_s, r8e.calls_per_s,
	       r1.server_us_per_call, r8.server_us_per_call, r8e.server_us_per_call, e1, e8,
	       r8.calls_per_s / e8, r1.calls_per_s / e1);
	return 0;
}
