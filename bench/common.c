/* SPDX-License-Identifier: MIT */
/*
 * What the benchmarks share (see common.h).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/common.h"

const char *bench_prog = "bench";

/* ---------------------------------------------------------------- helpers */

void bench_strfmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

double bench_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

uint64_t bench_rand64(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *state = x;
}

double bench_proc_cpu_s(pid_t pid)
{
	char path[64], buf[1024];
	bench_strfmt(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* comm may hold spaces */
	unsigned long ut = 0, st = 0;
	if (p)
		sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st);
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

double bench_self_cpu_s(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

void bench_sleep_s(double s)
{
	if (s <= 0)
		return;
	struct timespec ts = {.tv_sec = (time_t)s,
			      .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

struct sockaddr_in bench_sa_loopback(int port)
{
	return (struct sockaddr_in){.sin_family = AF_INET,
				    .sin_port = htons((uint16_t)port),
				    .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
}

struct nfsd_clnt *bench_clnt_open(struct nfsd_server *eng, int port, int *err)
{
	struct sockaddr_in sa = bench_sa_loopback(port);
	struct nfsd_clnt_opts co = {.timeout_ms = BENCH_CALL_TIMEOUT_MS};
	return nfsd_clnt_new(eng, (struct sockaddr *)&sa, sizeof(sa), &co, err);
}

const char *bench_call_err_str(int err, char *buf, size_t len)
{
	if (err < 0)
		bench_strfmt(buf, len, "%s", strerror(-err));
	else if (err & NFSD_CALL_ERR_DENIED)
		bench_strfmt(buf, len, "RPC denied (auth_stat %d)", err & 0xff);
	else
		bench_strfmt(buf, len, "RPC accept_stat %d", err & 0xff);
	return buf;
}

/* ---------------------------------------------------------- child processes */

/*
 * Servers and tools we start.  Their pids are kept here so a SIGINT or
 * SIGTERM of the bench stops them too (by pid, nothing broader).
 */
#define MAX_CHILDREN 8
static volatile pid_t children[MAX_CHILDREN];

static void on_fatal_signal(int sig)
{
	for (int i = 0; i < MAX_CHILDREN; i++)
		if (children[i] > 0)
			kill(children[i], SIGTERM);
	_exit(128 + sig);
}

static void child_track(pid_t pid, bool add)
{
	for (int i = 0; i < MAX_CHILDREN; i++)
		if (add ? children[i] == 0 : children[i] == pid) {
			children[i] = add ? pid : 0;
			return;
		}
}

void bench_init(const char *prog)
{
	bench_prog = prog;
	signal(SIGPIPE, SIG_IGN);
	signal(SIGINT, on_fatal_signal);
	signal(SIGTERM, on_fatal_signal);
}

bool bench_exe_find(const char *prog, char *out, size_t len)
{
	if (strchr(prog, '/')) {
		bench_strfmt(out, len, "%s", prog);
		return access(out, X_OK) == 0;
	}
	const char *path = getenv("PATH");
	char dirs[4096];
	/* ganesha.nfsd and rpcbind live in sbin, which a user PATH may lack */
	bench_strfmt(dirs, sizeof(dirs), "%s:/usr/sbin:/sbin:/usr/bin", path ? path : "");
	for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d;
	     d = strtok_r(NULL, ":", &save)) {
		if (!*d)
			continue;
		bench_strfmt(out, len, "%s/%s", d, prog);
		if (access(out, X_OK) == 0)
			return true;
	}
	return false;
}

void bench_exe_sibling(const char *name, char *out, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		bench_strfmt(out, len, "./%s", name);
		return;
	}
	self[n] = 0;
	for (int k = 0; k < 2; k++) {
		char *sl = strrchr(self, '/');
		if (sl)
			*sl = 0;
	}
	bench_strfmt(out, len, "%s/%s", self, name);
}

static void write_str(int fd, const char *s)
{
	if (write(fd, s, strlen(s)) < 0)
		_exit(127);
}

int bench_child_spawn(struct bench_child *ch, const char *what, char *const argv[], const char *log,
		      int pass_fd)
{
	int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	if (pid == 0) {
		/* only async-signal-safe calls: the parent has engine threads;
		 * SIGKILLed when the forking thread ends, however it ends */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		int nul = open("/dev/null", O_RDONLY);
		if (nul >= 0)
			dup2(nul, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (pass_fd >= 0)
			fcntl(pass_fd, F_SETFD, 0);
		signal(SIGPIPE, SIG_DFL);
		execv(argv[0], argv);
		write_str(2, bench_prog);
		write_str(2, ": exec failed: ");
		write_str(2, argv[0]);
		write_str(2, "\n");
		_exit(127);
	}
	close(fd);
	ch->pid = pid;
	ch->name = what;
	bench_strfmt(ch->log, sizeof(ch->log), "%s", log);
	child_track(pid, true);
	return 0;
}

bool bench_child_exited(struct bench_child *ch, int *status)
{
	if (ch->pid <= 0)
		return true;
	int st;
	pid_t r = waitpid(ch->pid, &st, WNOHANG);
	if (r == ch->pid || (r < 0 && errno == ECHILD)) {
		if (status)
			*status = r == ch->pid ? st : 0;
		child_track(ch->pid, false);
		ch->pid = 0;
		return true;
	}
	return false;
}

int bench_child_wait(struct bench_child *ch, double timeout)
{
	double end = bench_now_s() + timeout;
	int st = 0;
	for (;;) {
		if (ch->pid <= 0)
			return 0;
		int s;
		pid_t r = waitpid(ch->pid, &s, WNOHANG);
		if (r == ch->pid) {
			st = s;
			break;
		}
		if (r < 0 && errno != EINTR) {
			st = 0;
			break;
		}
		if (bench_now_s() >= end)
			return -ETIMEDOUT;
		bench_sleep_s(0.02);
	}
	child_track(ch->pid, false);
	ch->pid = 0;
	return st;
}

bool bench_child_stop(struct bench_child *ch, double grace)
{
	if (ch->pid <= 0)
		return true;
	kill(ch->pid, SIGTERM);
	if (bench_child_wait(ch, grace) != -ETIMEDOUT)
		return true;
	fprintf(stderr, "%s: %s did not exit on SIGTERM in %.0f s, killing it\n", bench_prog,
		ch->name, grace);
	kill(ch->pid, SIGKILL);
	bench_child_wait(ch, 10);
	return false;
}

void bench_status_str(int st, char *out, size_t len)
{
	if (WIFEXITED(st))
		bench_strfmt(out, len, "exit status %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		bench_strfmt(out, len, "killed by signal %d", WTERMSIG(st));
	else
		bench_strfmt(out, len, "status 0x%x", st);
}

/*
 * The work dir, logs included, is removed at the end (unless --keep): show
 * the end of a failed server's log on stderr while it is there.
 */
void bench_log_dump(const char *what, const char *log)
{
	char *lines[20] = {0};
	char line[1024];
	unsigned n = 0;
	FILE *f = fopen(log, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		free(lines[n % 20]);
		lines[n++ % 20] = strdup(line);
	}
	fclose(f);
	fprintf(stderr, "%s: %s failed; the end of its log:\n", bench_prog, what);
	for (unsigned i = n > 20 ? n - 20 : 0; i < n; i++)
		fprintf(stderr, "  %s", lines[i % 20] ? lines[i % 20] : "\n");
	for (unsigned i = 0; i < 20; i++)
		free(lines[i]);
}

void bench_log_tail_errors(const char *log, const char *const *marks, char *out, size_t len)
{
	FILE *f = fopen(log, "r");
	out[0] = 0;
	if (!f)
		return;
	char line[1024];
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		bool hit = !marks && line[0];
		for (int i = 0; marks && marks[i] && !hit; i++)
			hit = strstr(line, marks[i]) != NULL;
		if (hit)
			bench_strfmt(out, len, "%s", line);
	}
	fclose(f);
}


/* ------------------------------------------------------------ ports, files */

int bench_port_pick(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = bench_sa_loopback(0);
	socklen_t sl = sizeof(sa);
	int port = -1;
	if (fd >= 0 && !bind(fd, (struct sockaddr *)&sa, sizeof(sa)) &&
	    !getsockname(fd, (struct sockaddr *)&sa, &sl))
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

bool bench_port_accepts(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = bench_sa_loopback(port);
	bool ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

int bench_wait_null(struct nfsd_server *eng, struct bench_child *ch, int port, uint32_t prog,
		    uint32_t vers, double timeout, int *status)
{
	double end = bench_now_s() + timeout;
	for (;;) {
		if (ch && bench_child_exited(ch, status))
			return -ECHILD;
		int err = 0;
		struct nfsd_clnt *c = bench_clnt_open(eng, port, &err);
		if (c) {
			struct nfsd_call_opts o = {
			    .prog = prog, .vers = vers, .proc = 0, .timeout_ms = 1000};
			err = nfsd_clnt_call(c, &o, NULL, NULL, NULL);
			nfsd_clnt_free(c);
			if (!err)
				return 0;
		}
		if (bench_now_s() >= end)
			return -ETIMEDOUT;
		bench_sleep_s(0.1);
	}
}

int bench_key_write(const char *path)
{
	uint8_t k[32];
	if (getrandom(k, sizeof(k), 0) != sizeof(k))
		return -EIO;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	char hex[65];
	for (int i = 0; i < 32; i++)
		bench_strfmt(hex + 2 * i, 3, "%02x", k[i]);
	hex[64] = '\n';
	int rc = write(fd, hex, 65) == 65 ? 0 : -EIO;
	close(fd);
	return rc;
}

void bench_fstype(const char *dir, char *out, size_t len)
{
	struct statfs sf;
	const char *n = "other";
	if (!statfs(dir, &sf)) {
		switch ((unsigned long)sf.f_type) {
		case 0xef53:
			n = "ext4";
			break;
		case 0x58465342:
			n = "xfs";
			break;
		case 0x9123683e:
			n = "btrfs";
			break;
		case 0x01021994:
			n = "tmpfs";
			break;
		case 0x794c7630:
			n = "overlayfs";
			break;
		default:
			break;
		}
	}
	bench_strfmt(out, len, "%s", n);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path) ? -1 : 0;
}

void bench_tree_remove(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ------------------------------------------------------------ braid daemons */

int bench_daemon_spawn(struct bench_child *ch, const char *name, const char *exe, const char *conf,
		       const char *log, int *ready_fd, char *why, size_t len)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC)) {
		bench_strfmt(why, len, "pipe: %s", strerror(errno));
		return -errno;
	}
	char fdarg[16];
	bench_strfmt(fdarg, sizeof(fdarg), "%d", p[1]);
	char *argv[] = {(char *)exe, "-c", (char *)conf, "--ready-fd", fdarg, NULL};
	int rc = bench_child_spawn(ch, name, argv, log, p[1]);
	close(p[1]);
	if (rc) {
		close(p[0]);
		bench_strfmt(why, len, "cannot start %s: %s", exe, strerror(-rc));
		return rc;
	}
	*ready_fd = p[0];
	return 0;
}

int bench_daemon_ready(int ready_fd, double timeout, int *port, char *line, size_t line_len)
{
	size_t got = 0;
	double end = bench_now_s() + timeout;
	int rc = -ETIMEDOUT;
	line[0] = 0;
	while (bench_now_s() < end && got < line_len - 1) {
		struct pollfd pfd = {.fd = ready_fd, .events = POLLIN};
		int pr = poll(&pfd, 1, 200);
		if (pr < 0 && errno != EINTR)
			break;
		if (pr <= 0)
			continue;
		ssize_t r = read(ready_fd, line + got, line_len - 1 - got);
		if (r <= 0) {
			rc = -ECHILD; /* closed without READY: it exited */
			break;
		}
		got += (size_t)r;
		line[got] = 0;
		if (strchr(line, '\n')) {
			rc = sscanf(line, "READY %d", port) == 1 && *port > 0 ? 0 : -EPROTO;
			break;
		}
	}
	close(ready_fd);
	return rc;
}

/* ------------------------------------------------------------ servers */

void bench_child_not_ready(struct bench_child *ch, int rc, int st, const char *const *marks,
			   const char *what, const char *none_logged, char *why, size_t len)
{
	char last[400], sb[64];
	bench_log_tail_errors(ch->log, marks, last, sizeof(last));
	if (rc == -ECHILD)
		bench_status_str(st, sb, sizeof(sb));
	else
		bench_strfmt(sb, sizeof(sb), "no answer to NULL in time");
	bench_strfmt(why, len, "%s failed (%s): %s", what, sb, last[0] ? last : none_logged);
	bench_child_stop(ch, 10);
	bench_log_dump(ch->name, ch->log);
}

/* ------------------------------------------------------------ loopback TCP */

#define LB_IO (1u << 20) /* every write, as iperf3 -l 1M */

/* Shared by the streams of one measurement. */
struct lb_run {
	atomic_int phase; /* 0 warm-up, 1 measuring, 2 stop */
	atomic_ullong bytes;
};

struct lb_stream {
	struct lb_run *run;
	int sfd, rfd;
	pthread_t st, rt;
	double cpu0, cpu1; /* sender thread CPU at the window's start and end */
	double rcpu0, rcpu1, rcpu_end; /* the receiver's, and at its exit */
};

static double thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The run's phase; the thread's CPU noted where the window opens (cpu0)
 * and closes (cpu1), as this thread first sees it do so. */
static int lb_phase(struct lb_run *run, int *seen, double *cpu0, double *cpu1)
{
	int ph = atomic_load(&run->phase);
	if (ph != *seen) {
		if (ph >= 1 && *seen < 1)
			*cpu0 = thread_cpu_s();
		if (ph == 2)
			*cpu1 = thread_cpu_s();
		*seen = ph;
	}
	return ph;
}

/* 1 MiB writes, as fast as the socket takes them. */
static void *lb_sender(void *arg)
{
	struct lb_stream *s = arg;
	uint8_t *buf = calloc(1, LB_IO);
	int seen = 0;
	while (buf) {
		int ph = lb_phase(s->run, &seen, &s->cpu0, &s->cpu1);
		if (ph == 2)
			break;
		for (size_t done = 0; done < LB_IO;) {
			ssize_t w = write(s->sfd, buf + done, LB_IO - done);
			if (w <= 0)
				goto out;
			done += (size_t)w;
		}
	}
out:
	shutdown(s->sfd, SHUT_WR);
	free(buf);
	return NULL;
}

static void *lb_receiver(void *arg)
{
	struct lb_stream *s = arg;
	uint8_t *buf = malloc(LB_IO);
	int seen = 0;
	while (buf) {
		lb_phase(s->run, &seen, &s->rcpu0, &s->rcpu1);
		ssize_t r = read(s->rfd, buf, LB_IO);
		if (r <= 0)
			break;
		atomic_fetch_add_explicit(&s->run->bytes, (unsigned long long)r,
					  memory_order_relaxed);
	}
	s->rcpu_end = thread_cpu_s();
	free(buf);
	return NULL;
}

static int lb_fail(char *why, size_t len, const char *what)
{
	int e = errno;
	bench_strfmt(why, len, "%s: %s", what, strerror(e));
	return e ? -e : -EIO;
}

int bench_loopback_measure(unsigned nstreams, double secs, struct bench_loopback_res *res,
			   char *why, size_t len)
{
	struct lb_run run;
	struct lb_stream s[BENCH_LOOPBACK_STREAMS_MAX];
	if (nstreams < 1 || nstreams > BENCH_LOOPBACK_STREAMS_MAX) {
		bench_strfmt(why, len, "loopback: %u streams", nstreams);
		return -EINVAL;
	}
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = bench_sa_loopback(0);
	socklen_t sl = sizeof(sa);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 16) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl)) {
		int rc = lb_fail(why, len, "loopback listener");
		if (lfd >= 0)
			close(lfd);
		return rc;
	}
	for (unsigned i = 0; i < nstreams; i++) {
		s[i].run = &run;
		s[i].rfd = -1;
		s[i].sfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s[i].sfd < 0 || connect(s[i].sfd, (struct sockaddr *)&sa, sizeof(sa)) ||
		    (s[i].rfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0) {
			int rc = lb_fail(why, len, "loopback connect");
			for (unsigned k = 0; k <= i; k++) {
				if (s[k].sfd >= 0)
					close(s[k].sfd);
				if (s[k].rfd >= 0)
					close(s[k].rfd);
			}
			close(lfd);
			return rc;
		}
	}
	close(lfd);
	atomic_init(&run.phase, 0);
	atomic_init(&run.bytes, 0);
	for (unsigned i = 0; i < nstreams; i++) {
		s[i].cpu0 = s[i].cpu1 = s[i].rcpu0 = s[i].rcpu1 = s[i].rcpu_end = 0;
		pthread_create(&s[i].rt, NULL, lb_receiver, &s[i]);
		pthread_create(&s[i].st, NULL, lb_sender, &s[i]);
	}
	bench_sleep_s(0.3);
	atomic_store(&run.phase, 1);
	unsigned long long b0 = atomic_load(&run.bytes);
	double t0 = bench_now_s();
	bench_sleep_s(secs);
	unsigned long long b1 = atomic_load(&run.bytes);
	double t1 = bench_now_s();
	atomic_store(&run.phase, 2);
	double cpu = 0, rcpu = 0;
	for (unsigned i = 0; i < nstreams; i++) {
		pthread_join(s[i].st, NULL);
		pthread_join(s[i].rt, NULL);
		close(s[i].sfd);
		close(s[i].rfd);
		cpu += s[i].cpu1 - s[i].cpu0;
		/* a receiver that saw no phase 2 (the sender's EOF came first)
		 * ran to its end: its CPU then */
		rcpu += (s[i].rcpu1 ? s[i].rcpu1 : s[i].rcpu_end) - s[i].rcpu0;
	}
	res->secs = t1 - t0;
	res->mbps = (double)(b1 - b0) / 1e6 / (t1 - t0);
	res->cpu_s = cpu;
	res->rcv_cpu_s = rcpu;
	return 0;
}

/* ------------------------------------------------------------ JSON line */

/* One JSON line per process: the comma state lives here. */
static bool json_first = true;

void bench_json_key(const char *k)
{
	printf("%s\"%s\":", json_first ? "" : ",", k);
	json_first = false;
}

void bench_json_val(bool ok, double v, int prec)
{
	if (ok)
		printf("%.*f", prec, v);
	else
		printf("null");
}

void bench_json_num(const char *k, bool ok, double v, int prec)
{
	bench_json_key(k);
	bench_json_val(ok, v, prec);
}

void bench_json_quote(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

void bench_json_str(const char *k, const char *s)
{
	bench_json_key(k);
	if (!s) {
		printf("null");
		return;
	}
	bench_json_quote(s);
}

/* Busy and total jiffies of all cores (/proc/stat "cpu" line): busy is
 * everything but idle and iowait (softirq of loopback TCP included). */
void bench_box_jiffies(unsigned long long *busy, unsigned long long *total)
{
	*busy = *total = 0;
	FILE *f = fopen("/proc/stat", "r");
	if (!f)
		return;
	unsigned long long v[10] = {0};
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
		   &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]) >= 8) {
		for (int i = 0; i < 8; i++) /* guest time is in user already */
			*total += v[i];
		*busy = *total - v[3] - v[4];
	}
	fclose(f);
}

double bench_settle(double max_s)
{
	double end = bench_now_s() + max_s, busy = 1;
	sync();
	while (bench_now_s() < end) {
		unsigned long long b0, t0, b1, t1;
		bench_box_jiffies(&b0, &t0);
		bench_sleep_s(0.5);
		bench_box_jiffies(&b1, &t1);
		busy = t1 > t0 ? (double)(b1 - b0) / (double)(t1 - t0) : 0;
		if (busy < 0.1)
			break;
	}
	return busy;
}

bool bench_uint_parse(const char *s, unsigned min, unsigned max, unsigned *out)
{
	char *end;
	errno = 0;
	unsigned long n = strtoul(s, &end, 10);
	if (end == s || *end || errno || *s == '-' || n < min || n > max)
		return false;
	*out = (unsigned)n;
	return true;
}

void bench_fig_str(char *out, size_t len, bool ok, double v, int prec)
{
	if (ok)
		bench_strfmt(out, len, "%.*f", prec, v);
	else
		bench_strfmt(out, len, "-");
}

bool bench_size_parse(const char *s, uint64_t *bytes)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || v <= 0)
		return false;
	if (*end == 'k' || *end == 'K')
		v *= 1024, end++;
	else if (*end == 'm' || *end == 'M')
		v *= 1024 * 1024, end++;
	else if (*end == 'g' || *end == 'G')
		v *= 1024.0 * 1024 * 1024, end++;
	if (*end == 'i')
		end++;
	if (*end == 'B')
		end++;
	if (*end)
		return false;
	*bytes = (uint64_t)v;
	return true;
}
