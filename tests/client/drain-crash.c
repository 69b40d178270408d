/* SPDX-License-Identifier: MIT */
/*
 * Drain and rebalance survive crashes (issue 15 item 4): braid-mds and
 * three braid-ds as processes, our client writing, braidctl directing.
 * Moves are throttled ([mds] resilver_rate) so that the crashes land in
 * the middle of one.
 *
 *  1. Six files of 12 MiB (three with one copy, three with two mirrors); a
 *     writer appends to each in turn.  Data server A is drained.  While a
 *     move runs (braidctl rebuild names the file being copied), braid-mds
 *     is SIGKILLed and started again (the writer pauses and mounts again,
 *     as a client would after the server's restart); then, during the next
 *     move, the data server the copy goes to is SIGKILLed and started
 *     again.  The drain must finish: no file names A, A holds no object.
 *  2. A is added back and a rebalance started; braid-mds is SIGKILLed in
 *     the middle of it and restarted; the rebalance must resume (its flag
 *     is durable) and give A copies.
 * At the end of each, every file reads back as the writer wrote it.
 */
#include "config.h"

#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "tests/client/ffc-test.h"

#define MiB	(1u << 20)
#define NFILES	6
#define BOUND_S 120.0

static char dir[256], bin_mds[1024], bin_ds[1024], bin_ctl[1024], key[300];
static int mds_port, ds_port[3];
static pid_t mds_pid, ds_pid[3];
static struct ffc *C;
static pthread_mutex_t cmu = PTHREAD_MUTEX_INITIALIZER; /* C and the sizes */
static uint64_t sizes[NFILES];
static char paths[NFILES][32];
static atomic_int stop_writer, appends;

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0);
}

/* exec bin -c conf --ready-fd N; waits for READY; returns the pid. */
static pid_t spawn(const char *bin, const char *conf, int *port)
{
	int p[2];
	CHECK(pipe(p) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		/* the daemons die with the test, however it ends */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[0]);
		char fd[16];
		snprintf(fd, sizeof(fd), "%d", p[1]);
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0 && !getenv("DRAIN_CRASH_LOGS"))
			dup2(null, 2);
		execl(bin, bin, "-c", conf, "--ready-fd", fd, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	char line[256] = {0};
	ssize_t n = 0, r;
	while (n < (ssize_t)sizeof(line) - 1 &&
	       (r = read(p[0], line + n, sizeof(line) - 1 - (size_t)n)) > 0)
		n += r;
	close(p[0]);
	if (sscanf(line, "READY %d", port) != 1) {
		int st;
		waitpid(pid, &st, 0);
		return -1;
	}
	return pid;
}

static void kill_wait(pid_t pid, int sig)
{
	kill(pid, sig);
	int st;
	waitpid(pid, &st, 0);
}

static void start_mds(void)
{
	char conf[2048], p[300];
	snprintf(p, sizeof(p), "%s/mds.conf", dir);
	snprintf(conf, sizeof(conf),
		 "[mds]\nstore_dir = %s/mds\nlisten = 127.0.0.1:%d\nexports = %s/exports\n"
		 "key_file = %s\ngrace_time = 0\nrpcbind = no\nmount = no\nheartbeat_interval = 1s\n"
		 "ds_timeout = 3s\nresilver_rate = 16m\n",
		 dir, mds_port, dir, key);
	write_text(p, conf);
	int port;
	/* its port may take a moment to be free again after a SIGKILL */
	for (int tries = 0; (mds_pid = spawn(bin_mds, p, &port)) < 0; tries++) {
		CHECK(tries < 40);
		usleep(250 * 1000);
	}
	mds_port = port;
}

static void start_ds(unsigned i)
{
	char conf[2048], p[300];
	snprintf(p, sizeof(p), "%s/ds%u.conf", dir, i);
	snprintf(conf, sizeof(conf),
		 "[ds]\nstore_dir = %s/ds%u\nlisten = 127.0.0.1:%d\nkey_file = %s\n"
		 "mds = 127.0.0.1:%d\nhostname = ds%u\nnfs41 = no\nio = psync\n",
		 dir, i, ds_port[i], key, mds_port, i);
	write_text(p, conf);
	for (int tries = 0; (ds_pid[i] = spawn(bin_ds, p, &ds_port[i])) < 0; tries++) {
		CHECK(tries < 40);
		usleep(250 * 1000);
	}
}

/* braidctl --json ARGS: its output (static buffer). */
static const char *ctl(const char *args)
{
	static char out[1 << 16];
	char cmd[3072];
	snprintf(cmd, sizeof(cmd), "%s --mds 127.0.0.1:%d --key %s --json %s 2>&1", bin_ctl,
		 mds_port, key, args);
	FILE *f = popen(cmd, "r");
	CHECK(f);
	size_t n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = 0;
	pclose(f);
	return out;
}

/* The number after "key": in JSON text (0 if absent). */
static uint64_t jnum(const char *text, const char *k)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "\"%s\":", k);
	const char *p = strstr(text, pat);
	return p ? strtoull(p + strlen(pat), NULL, 10) : 0;
}

/* The data server id of braid-ds i (its hostname "dsI" in ds list). */
static uint32_t ds_id(unsigned i)
{
	char host[32];
	snprintf(host, sizeof(host), "\"hostname\": \"ds%u\"", i);
	const char *l = ctl("ds list");
	const char *h = strstr(l, host);
	CHECK(h);
	/* the id comes before the hostname in the object */
	const char *o = h;
	while (o > l && strncmp(o, "\"id\":", 5))
		o--;
	return (uint32_t)strtoul(o + 5, NULL, 10);
}

static void wait_up(unsigned n)
{
	double t0 = cl_now();
	for (;;) {
		const char *l = ctl("ds list");
		unsigned up = 0;
		for (const char *p = l; (p = strstr(p, "\"state\": \"up\"")); p++)
			up++;
		if (up >= n)
			return;
		CHECK(cl_now() - t0 < 30);
		usleep(100 * 1000);
	}
}

static void mount_client(void)
{
	struct ffc_opts o = {.ds_timeout_ms = 2000};
	int err = 0;
	double t0 = cl_now();
	while (!(C = ffc_mount("127.0.0.1", mds_port, &o, &err))) {
		CHECK(cl_now() - t0 < 30);
		usleep(200 * 1000);
	}
}

static void *writer(void *arg)
{
	(void)arg;
	uint8_t *buf = malloc(256 << 10);
	CHECK(buf);
	while (!atomic_load(&stop_writer)) {
		for (unsigned i = 0; i < NFILES && !atomic_load(&stop_writer); i++) {
			pthread_mutex_lock(&cmu);
			dt_fill(buf, sizes[i], 256 << 10, 20 + i);
			double secs;
			int rc = ffct_write_sync(C, paths[i], buf, sizes[i], 256 << 10, false, &secs);
			if (rc)
				fprintf(stderr, "append to %s: %s\n", paths[i], strerror(-rc));
			CHECK_EQ(rc, 0);
			sizes[i] += 256 << 10;
			pthread_mutex_unlock(&cmu);
			atomic_fetch_add(&appends, 1);
			usleep(50 * 1000);
		}
	}
	free(buf);
	return NULL;
}

/* Until a move's copy is running (braidctl rebuild names its file). */
static void wait_copying(const char *what)
{
	double t0 = cl_now();
	while (!jnum(ctl("rebuild"), "copying_inode")) {
		CHECK(cl_now() - t0 < BOUND_S);
		usleep(20 * 1000);
	}
	printf("%s: a copy is running after %.2f s\n", what, cl_now() - t0);
}

static void crash_mds(void)
{
	pthread_mutex_lock(&cmu); /* the writer pauses */
	/* our client cannot reclaim across a server restart (it would start
	 * over, as this does): it goes first, and comes back after */
	ffc_unmount(C);
	kill_wait(mds_pid, SIGKILL);
	start_mds();
	mount_client();
	pthread_mutex_unlock(&cmu);
	printf("braid-mds SIGKILLed mid-move and started again\n");
}

static void check_files(void)
{
	pthread_mutex_lock(&cmu);
	for (unsigned i = 0; i < NFILES; i++)
		ffct_read_check(C, paths[i], sizes[i], 20 + i);
	pthread_mutex_unlock(&cmu);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *b = getenv("top_builddir");
	b = b && *b ? b : ".";
	snprintf(bin_mds, sizeof(bin_mds), "%s/braid-mds", b);
	snprintf(bin_ds, sizeof(bin_ds), "%s/braid-ds", b);
	snprintf(bin_ctl, sizeof(bin_ctl), "%s/braidctl", b);
	if (access(bin_mds, X_OK) || access(bin_ds, X_OK) || access(bin_ctl, X_OK))
		SKIP("braid-mds, braid-ds or braidctl not built in %s\n", b);
	snprintf(dir, sizeof(dir), "%s/braid-drain-crash.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	CHECK(mkdtemp(dir));
	snprintf(key, sizeof(key), "%s/cluster.key", dir);
	write_text(key, "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n");
	chmod(key, 0600);
	char ex[300];
	snprintf(ex, sizeof(ex), "%s/exports", dir);
	write_text(ex, "/ *(rw,no_root_squash,insecure)\n");
	start_mds();
	for (unsigned i = 0; i < 3; i++)
		start_ds(i);
	wait_up(3);
	mount_client();
	CHECK_EQ(ffc_mkdir(C, "/one", 0755), 0);
	CHECK_EQ(ffc_mkdir(C, "/two", 0755), 0);
	CHECK(strstr(ctl("policy set /two whole,mirrors=2"), "error") == NULL);
	uint8_t *buf = malloc(16 * MiB);
	CHECK(buf);
	for (unsigned i = 0; i < NFILES; i++) {
		snprintf(paths[i], sizeof(paths[i]), "/%s/f%u", i % 2 ? "two" : "one", i);
		sizes[i] = 12 * MiB;
		dt_fill(buf, 0, sizes[i], 20 + i);
		double secs;
		CHECK_EQ(ffct_write_sync(C, paths[i], buf, 0, sizes[i], true, &secs), 0);
	}
	free(buf);
	pthread_t w;
	CHECK_EQ(pthread_create(&w, NULL, writer, NULL), 0);

	/* ---- 1. drain A, with braid-mds and then a target killed mid-move */
	uint32_t a = ds_id(0);
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "ds drain %u", a);
	ctl(cmd);
	wait_copying("drain");
	crash_mds();
	wait_copying("drain, after the restart");
	uint32_t to = (uint32_t)jnum(ctl("rebuild"), "copying_to");
	for (unsigned i = 0; i < 3; i++)
		if (to && ds_id(i) == to) {
			kill_wait(ds_pid[i], SIGKILL);
			printf("braid-ds %u (id %u, the copy's target) SIGKILLed mid-move\n", i, to);
			sleep(1);
			start_ds(i);
		}
	double t0 = cl_now();
	for (;;) {
		const char *r = ctl("rebuild");
		const char *l = ctl("ds list");
		char pat[64];
		snprintf(pat, sizeof(pat), "\"id\": %u,", a);
		const char *e = strstr(l, pat);
		uint64_t objs = e ? jnum(e, "objects") : 1;
		if (!jnum(r, "stale_files") && !jnum(r, "rebuild_files") && !objs)
			break;
		CHECK(cl_now() - t0 < BOUND_S);
		usleep(200 * 1000);
	}
	printf("drain done %.2f s after the crashes, %d appends so far\n", cl_now() - t0,
	       atomic_load(&appends));
	check_files();

	/* ---- 2. rebalance onto A, braid-mds killed in the middle */
	snprintf(cmd, sizeof(cmd), "ds add %u", a);
	ctl(cmd);
	ctl("rebalance");
	wait_copying("rebalance");
	crash_mds();
	t0 = cl_now();
	for (;;) {
		const char *l = ctl("ds list");
		char pat[64];
		snprintf(pat, sizeof(pat), "\"id\": %u,", a);
		const char *e = strstr(l, pat);
		char flag[300];
		snprintf(flag, sizeof(flag), "%s/mds/rebalance", dir);
		if (e && jnum(e, "objects") && access(flag, F_OK) && !jnum(ctl("rebuild"), "stale_files"))
			break;
		CHECK(cl_now() - t0 < BOUND_S);
		usleep(200 * 1000);
	}
	printf("rebalance done %.2f s after the crash\n", cl_now() - t0);
	atomic_store(&stop_writer, 1);
	pthread_join(w, NULL);
	check_files();
	printf("%d appends, every byte read back\n", atomic_load(&appends));

	ffc_unmount(C);
	for (unsigned i = 0; i < 3; i++)
		kill_wait(ds_pid[i], SIGTERM);
	kill_wait(mds_pid, SIGTERM);
	char rm[400];
	snprintf(rm, sizeof(rm), "rm -rf '%s'", dir);
	if (system(rm))
		fprintf(stderr, "could not remove %s\n", dir);
	printf("ok\n");
	return 0;
}
