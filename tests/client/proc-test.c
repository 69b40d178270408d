/* SPDX-License-Identifier: MIT */
/* Daemons as processes (tests/client/proc-test.h). */
#include "config.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "tests/client/proc-test.h"

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0);
}

void pc_init(struct pc *p, const char *name, const char *exports)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *b = getenv("top_builddir");
	b = b && *b ? b : ".";
	snprintf(p->bin_mds, sizeof(p->bin_mds), "%s/braid-mds", b);
	snprintf(p->bin_ds, sizeof(p->bin_ds), "%s/braid-ds", b);
	snprintf(p->bin_ctl, sizeof(p->bin_ctl), "%s/braidctl", b);
	if (access(p->bin_mds, X_OK) || access(p->bin_ds, X_OK) || access(p->bin_ctl, X_OK))
		SKIP("braid-mds, braid-ds or braidctl not built in %s\n", b);
	snprintf(p->dir, sizeof(p->dir), "%s/braid-%s.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", name);
	CHECK(mkdtemp(p->dir));
	snprintf(p->key, sizeof(p->key), "%s/cluster.key", p->dir);
	write_text(p->key, "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n");
	chmod(p->key, 0600);
	char ex[300];
	snprintf(ex, sizeof(ex), "%s/exports", p->dir);
	write_text(ex, exports);
}

/* exec bin -c conf --ready-fd N; waits for READY; returns the pid. */
static pid_t spawn(const char *bin, const char *conf, int *port)
{
	int fds[2];
	CHECK(pipe(fds) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		/* the daemons die with the test, however it ends */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(fds[0]);
		char fd[16];
		snprintf(fd, sizeof(fd), "%d", fds[1]);
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0 && !getenv("BRAID_TEST_LOGS"))
			dup2(null, 2);
		execl(bin, bin, "-c", conf, "--ready-fd", fd, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	char line[256] = {0};
	ssize_t n = 0, r;
	while (n < (ssize_t)sizeof(line) - 1 &&
	       (r = read(fds[0], line + n, sizeof(line) - 1 - (size_t)n)) > 0)
		n += r;
	close(fds[0]);
	if (sscanf(line, "READY %d", port) != 1) {
		int st;
		waitpid(pid, &st, 0);
		return -1;
	}
	return pid;
}

void pc_kill_wait(pid_t pid, int sig)
{
	kill(pid, sig);
	int st;
	waitpid(pid, &st, 0);
}

void pc_start_mds(struct pc *p)
{
	char conf[4096], path[300];
	snprintf(path, sizeof(path), "%s/mds.conf", p->dir);
	snprintf(
	    conf, sizeof(conf),
	    "[mds]\nstore_dir = %s/mds\nlisten = 127.0.0.1:%d\nexports = %s/exports\n"
	    "key_file = %s\ngrace_time = 0\nrpcbind = no\nmount = no\nheartbeat_interval = 1s\n"
	    "ds_timeout = 3s\n%s",
	    p->dir, p->mds_port, p->dir, p->key, p->mds_extra ? p->mds_extra : "");
	write_text(path, conf);
	int port;
	/* its port may take a moment to be free again after a SIGKILL */
	for (int tries = 0; (p->mds_pid = spawn(p->bin_mds, path, &port)) < 0; tries++) {
		CHECK(tries < 40);
		usleep(250 * 1000);
	}
	p->mds_port = port;
}

void pc_start_ds(struct pc *p, unsigned i)
{
	char conf[2048], path[300];
	CHECK(i < PC_DS_MAX);
	snprintf(path, sizeof(path), "%s/ds%u.conf", p->dir, i);
	snprintf(conf, sizeof(conf),
		 "[ds]\nstore_dir = %s/ds%u\nlisten = 127.0.0.1:%d\nkey_file = %s\n"
		 "mds = 127.0.0.1:%d\nhostname = ds%u\nnfs41 = no\nio = psync\n",
		 p->dir, i, p->ds_port[i], p->key, p->mds_port, i);
	write_text(path, conf);
	for (int tries = 0; (p->ds_pid[i] = spawn(p->bin_ds, path, &p->ds_port[i])) < 0; tries++) {
		CHECK(tries < 40);
		usleep(250 * 1000);
	}
}

const char *pc_ctl(struct pc *p, const char *args)
{
	static char out[1 << 16];
	char cmd[3072];
	snprintf(cmd, sizeof(cmd), "%s --mds 127.0.0.1:%d --key %s --json %s 2>&1", p->bin_ctl,
		 p->mds_port, p->key, args);
	FILE *f = popen(cmd, "r");
	CHECK(f);
	size_t n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = 0;
	pclose(f);
	return out;
}

uint64_t pc_jnum(const char *text, const char *k)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "\"%s\":", k);
	const char *q = strstr(text, pat);
	return q ? strtoull(q + strlen(pat), NULL, 10) : 0;
}

uint32_t pc_ds_id(struct pc *p, unsigned i)
{
	char host[32];
	snprintf(host, sizeof(host), "\"hostname\": \"ds%u\"", i);
	const char *l = pc_ctl(p, "ds list");
	const char *h = strstr(l, host);
	CHECK(h);
	/* the id comes before the hostname in the object */
	const char *o = h;
	while (o > l && strncmp(o, "\"id\":", 5))
		o--;
	return (uint32_t)strtoul(o + 5, NULL, 10);
}

void pc_wait_up(struct pc *p, unsigned n)
{
	double t0 = cl_now();
	for (;;) {
		const char *l = pc_ctl(p, "ds list");
		unsigned up = 0;
		for (const char *q = l; (q = strstr(q, "\"state\": \"up\"")); q++)
			up++;
		if (up >= n)
			return;
		CHECK(cl_now() - t0 < 30);
		usleep(100 * 1000);
	}
}

struct ffc *pc_mount(struct pc *p)
{
	struct ffc_opts o = {.ds_timeout_ms = 2000};
	int err = 0;
	struct ffc *c;
	double t0 = cl_now();
	while (!(c = ffc_mount("127.0.0.1", p->mds_port, &o, &err))) {
		CHECK(cl_now() - t0 < 30);
		usleep(200 * 1000);
	}
	return c;
}

void pc_finish(struct pc *p, unsigned nds)
{
	for (unsigned i = 0; i < nds; i++)
		pc_kill_wait(p->ds_pid[i], SIGTERM);
	pc_kill_wait(p->mds_pid, SIGTERM);
	char rm[400];
	snprintf(rm, sizeof(rm), "rm -rf '%s'", p->dir);
	if (system(rm))
		fprintf(stderr, "could not remove %s\n", p->dir);
}
