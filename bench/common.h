/* SPDX-License-Identifier: MIT */
/*
 * What the benchmarks share: time and CPU readings, clients of 127.0.0.1,
 * and the servers and tools they run as child processes (a server's CPU
 * seconds come from /proc/PID/stat, so each one runs as our child), with
 * their logs, ports and the files a braid daemon is started with; the
 * loopback TCP ceiling; the JSON line a bench ends with.
 *
 * Functions return 0 or -errno unless said otherwise; calls may also
 * return a positive NFSD_CALL_ERR_* (nfsd/rpc.h).
 */
#ifndef BRAID_BENCH_COMMON_H
#define BRAID_BENCH_COMMON_H

#include <limits.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nfsd/rpc.h"

#define BENCH_CALL_TIMEOUT_MS 30000

/* The benchmark's name, "bench/ds", that its messages start with. */
extern const char *bench_prog;

/* ---------------------------------------------------------------- helpers */

/* snprintf for messages and paths that may be cut short (no truncation
 * warning: the compiler cannot know that our paths are short). */
void bench_strfmt(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
double bench_now_s(void); /* CLOCK_MONOTONIC */
/* The next of a xorshift64 sequence in *state (not zero): picks for loads,
 * not for anything that must be unpredictable. */
uint64_t bench_rand64(uint64_t *state);
/* "1.5G", "64MiB", "512k", "4096B": bytes (k, M, G are powers of 1024);
 * false when it does not parse or is not positive. */
bool bench_size_parse(const char *s, uint64_t *bytes);
/* A whole number from min to max ("8"); false when s is not one. */
bool bench_uint_parse(const char *s, unsigned min, unsigned max, unsigned *out);
/* v with prec decimals, or "-" when it was not measured (ok false). */
void bench_fig_str(char *out, size_t len, bool ok, double v, int prec);
void bench_sleep_s(double s);
/* CPU seconds (user + system, all threads) used so far by process pid. */
double bench_proc_cpu_s(pid_t pid);
/* The same for this process (the load generator). */
double bench_self_cpu_s(void);
/* Busy and total jiffies of all cores (/proc/stat): busy is all but idle
 * and iowait (softirq of loopback TCP included). */
void bench_box_jiffies(unsigned long long *busy, unsigned long long *total);
/* sync(2), then wait (at most max_s) for a half second in which the box is
 * under 10% busy; returns the last half second's busy share. */
double bench_settle(double max_s);
struct sockaddr_in bench_sa_loopback(int port);

/* A client of 127.0.0.1:port (per-call timeout BENCH_CALL_TIMEOUT_MS). */
struct nfsd_clnt *bench_clnt_open(struct nfsd_server *eng, int port, int *err);
const char *bench_call_err_str(int err, char *buf, size_t len);

/* ------------------------------------------------------------ child processes */

struct bench_child {
	pid_t pid; /* 0 once reaped */
	const char *name;
	char log[PATH_MAX];
};

/*
 * Set bench_prog, ignore SIGPIPE, and make SIGINT and SIGTERM stop the
 * children we started (by pid, nothing broader) before we exit.
 */
void bench_init(const char *prog);
/* Find an executable on PATH, sbin included (or take a path with a slash
 * as it is). */
bool bench_exe_find(const char *prog, char *out, size_t len);
/* name beside the directory this program is in: $(builddir)/name for
 * $(builddir)/bench/x. */
void bench_exe_sibling(const char *name, char *out, size_t len);
/*
 * Start argv[0] (a full path) with stdout and stderr appended to log.
 * pass_fd >= 0 stays open in the child under its own number (for
 * --ready-fd); every other descriptor of ours is close-on-exec.  The child
 * is SIGKILLed when the thread that started it ends (PR_SET_PDEATHSIG), so
 * no daemon outlives a bench that crashed: start them from the main thread.
 */
int bench_child_spawn(struct bench_child *ch, const char *what, char *const argv[], const char *log,
		      int pass_fd);
/* Nonblocking: true (and *status) when the child has exited. */
bool bench_child_exited(struct bench_child *ch, int *status);
/* Wait up to timeout seconds for the child to exit; its status or -ETIMEDOUT. */
int bench_child_wait(struct bench_child *ch, double timeout);
/* SIGTERM, a grace period, then SIGKILL.  True when it exited on SIGTERM. */
bool bench_child_stop(struct bench_child *ch, double grace);
void bench_status_str(int status, char *out, size_t len);

/* The last 20 lines of a log on stderr, after "<what> failed". */
void bench_log_dump(const char *what, const char *log);
/* The last log line holding one of marks (NULL-terminated), or with marks
 * NULL the last line: a one-line reason. */
void bench_log_tail_errors(const char *log, const char *const *marks, char *out, size_t len);

/* ------------------------------------------------------------ ports, files */

/* A TCP port that was free a moment ago (the kernel's pick for port 0). */
int bench_port_pick(void);
bool bench_port_accepts(int port);
/*
 * Ready when prog/vers on 127.0.0.1:port answers a NULL call.  Gives up
 * when ch (if not NULL) exits (-ECHILD, *status set) or after timeout
 * seconds (-ETIMEDOUT).
 */
int bench_wait_null(struct nfsd_server *eng, struct bench_child *ch, int port, uint32_t prog,
		    uint32_t vers, double timeout, int *status);
/* A braid cluster key: 32 random bytes as 64 hex digits and a newline,
 * mode 0600 (the daemons refuse a key that others may read). */
int bench_key_write(const char *path);
/* "ext4", "xfs", ... of the filesystem holding dir. */
void bench_fstype(const char *dir, char *out, size_t len);
/* rm -rf dir. */
void bench_tree_remove(const char *dir);

/* ------------------------------------------------------------ braid daemons */

/*
 * Start a braid daemon, exe -c conf --ready-fd N, as ch (name and log as
 * for bench_child_spawn); *ready_fd is the read end of the pipe it writes
 * "READY <port>" to, for bench_daemon_ready().  -errno and why on failure.
 */
int bench_daemon_spawn(struct bench_child *ch, const char *name, const char *exe, const char *conf,
		       const char *log, int *ready_fd, char *why, size_t len);
/*
 * Read "READY <port>\n" from ready_fd for up to timeout seconds, then close
 * it.  0 and *port; -ECHILD when the pipe closed without one (the daemon
 * exits, or has), -ETIMEDOUT, or -EPROTO; line[] holds what was read.
 */
int bench_daemon_ready(int ready_fd, double timeout, int *port, char *line, size_t line_len);

/* ------------------------------------------------------------ servers */

/*
 * ch did not answer bench_wait_null(), which returned rc (and status st):
 * why = "<what> failed (<its exit status, or no answer in time>): <the last
 * log line holding one of marks, else none_logged>"; then stop ch and show
 * the end of its log.
 */
void bench_child_not_ready(struct bench_child *ch, int rc, int st, const char *const *marks,
			   const char *what, const char *none_logged, char *why, size_t len);

/* ------------------------------------------------------------ loopback TCP */

#define BENCH_LOOPBACK_STREAMS_MAX 4

/* What bench_loopback_measure() saw in its measured window. */
struct bench_loopback_res {
	double mbps;  /* MB/s (decimal, as iperf3 prints them), all streams */
	double secs;  /* the window's length */
	double cpu_s; /* the sender threads' CPU seconds in the window */
	double rcv_cpu_s; /* the receiver threads' */
};

/*
 * The loopback TCP ceiling, as iperf3 -l 1M: nstreams (1 to
 * BENCH_LOOPBACK_STREAMS_MAX) TCP connections over 127.0.0.1, each with a
 * sender thread writing 1 MiB buffers as fast as the socket takes them and
 * a receiver thread that reads and discards; after a 0.3 s warm-up, secs
 * seconds are measured.  -errno and why on failure.
 */
int bench_loopback_measure(unsigned nstreams, double secs, struct bench_loopback_res *res,
			   char *why, size_t len);

/* ------------------------------------------------------------ JSON line */

/*
 * The JSON object a bench ends with, printed a member at a time after the
 * caller's '{' (a comma before every key but the first).  A figure that
 * was not measured (ok false) is null, and so is a NULL string.
 */
void bench_json_key(const char *k);
void bench_json_val(bool ok, double v, int prec);
void bench_json_num(const char *k, bool ok, double v, int prec);
void bench_json_str(const char *k, const char *s);
/* s as a JSON string, escaped (for a nested object's keys and values). */
void bench_json_quote(const char *s);

#endif /* BRAID_BENCH_COMMON_H */
