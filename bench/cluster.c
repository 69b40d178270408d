/* SPDX-License-Identifier: MIT */
/*
 * A Braid cluster as child processes, for the benchmarks (cluster.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/cluster.h"
#include "client/ffclient.h"

#define MiB	     (1u << 20)
#define IO_CHUNK     (16u << 20) /* one ffc_pwrite/ffc_pread: 16 RPCs of 1 MiB in flight */
#define METRICS_MAX  (16u << 20) /* a GET /metrics answer read at most */
#define METRICS_TO_S 5

/* ------------------------------------------------------------- braidctl */

int bench_cluster_ctl(struct bench_cluster *k, bool json, const char *fmt, ...)
{
	char args[256], mds[32];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(mds, sizeof(mds), "127.0.0.1:%d", k->mds_port);
	char *argv[24];
	unsigned n = 0;
	argv[n++] = (char *)k->o.ctl_path;
	argv[n++] = "--mds";
	argv[n++] = mds;
	argv[n++] = "--key";
	argv[n++] = k->key;
	if (json)
		argv[n++] = "--json";
	char *save = NULL;
	for (char *w = strtok_r(args, " ", &save); w && n < 23; w = strtok_r(NULL, " ", &save))
		argv[n++] = w;
	argv[n] = NULL;
	k->out[0] = 0;
	int p[2];
	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		/* async-signal-safe calls only: we have threads */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		dup2(p[1], 1);
		dup2(p[1], 2);
		signal(SIGPIPE, SIG_DFL);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	size_t got = 0;
	char sink[4096];
	for (;;) {
		bool room = got < sizeof(k->out) - 1;
		ssize_t r = read(p[0], room ? k->out + got : sink,
				 room ? sizeof(k->out) - 1 - got : sizeof(sink));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (room)
			got += (size_t)r;
	}
	k->out[got] = 0;
	close(p[0]);
	int st;
	pid_t w;
	while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	return w == pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

const char *bench_cluster_ctl_said(struct bench_cluster *k)
{
	for (char *c = k->out; *c; c++)
		if (*c == '\n')
			*c = ' ';
	return k->out[0] ? k->out : "nothing said";
}

const char *bench_json_find(const char *text, const char *end, const char *key)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	const char *p = strstr(text, pat);
	if (!p || (end && p >= end))
		return NULL;
	p += strlen(pat);
	while (*p == ' ')
		p++;
	return p;
}

uint64_t bench_json_u64(const char *text, const char *end, const char *key)
{
	const char *p = bench_json_find(text, end, key);
	return p ? strtoull(p, NULL, 10) : 0;
}

bool bench_json_bool(const char *text, const char *end, const char *key)
{
	const char *p = bench_json_find(text, end, key);
	return p && !strncmp(p, "true", 4);
}

unsigned bench_cluster_ds_list(struct bench_cluster *k, struct bench_cluster_ent *v, unsigned max)
{
	if (bench_cluster_ctl(k, true, "ds list"))
		return 0;
	unsigned n = 0;
	/* each server's object starts with its "id" (nothing nested has one) */
	const char *p = strstr(k->out, "\"id\":");
	while (p && n < max) {
		const char *next = strstr(p + 5, "\"id\":");
		struct bench_cluster_ent *e = &v[n++];
		memset(e, 0, sizeof(*e));
		e->id = (uint32_t)bench_json_u64(p, next, "id");
		e->up = bench_json_bool(p, next, "up");
		e->drained = bench_json_bool(p, next, "drained");
		e->lost = bench_json_bool(p, next, "lost");
		e->objects = bench_json_u64(p, next, "objects");
		const char *h = bench_json_find(p, next, "hostname");
		if (h && *h == '"') {
			size_t l = strcspn(h + 1, "\"");
			l = l < sizeof(e->host) - 1 ? l : sizeof(e->host) - 1;
			memcpy(e->host, h + 1, l);
			e->host[l] = 0;
		}
		p = next;
	}
	return n;
}

const struct bench_cluster_ent *bench_cluster_ent_of(const struct bench_cluster_ent *v, unsigned n,
						     uint32_t id)
{
	for (unsigned i = 0; i < n; i++)
		if (v[i].id == id)
			return &v[i];
	return NULL;
}

struct bench_cluster_ds *bench_cluster_ds_by_id(struct bench_cluster *k, uint32_t id)
{
	for (unsigned i = 0; i < k->nstarted; i++)
		if (k->ds[i].id == id && k->ds[i].ch.pid > 0)
			return &k->ds[i];
	return NULL;
}

struct bench_cluster_ds *bench_cluster_ds_fullest(struct bench_cluster *k,
						  const struct bench_cluster_ent *v, unsigned n)
{
	struct bench_cluster_ds *best = NULL;
	uint64_t most = 0;
	for (unsigned i = 0; i < n; i++) {
		struct bench_cluster_ds *d = bench_cluster_ds_by_id(k, v[i].id);
		if (d && v[i].up && !v[i].lost && !v[i].drained && v[i].objects > most) {
			most = v[i].objects;
			best = d;
		}
	}
	return best;
}

/* ------------------------------------------------------------- options */

void bench_cluster_opts_init(struct bench_cluster_opts *o)
{
	memset(o, 0, sizeof(*o));
	bench_exe_sibling("braid-ds", o->ds_path, sizeof(o->ds_path));
	bench_exe_sibling("braid-mds", o->mds_path, sizeof(o->mds_path));
	bench_exe_sibling("braidctl", o->ctl_path, sizeof(o->ctl_path));
}

bool bench_cluster_opts_arg(struct bench_cluster_opts *o, const char *a, const char *v)
{
	char *to = !strcmp(a, "--braid-ds")    ? o->ds_path
		   : !strcmp(a, "--braid-mds") ? o->mds_path
		   : !strcmp(a, "--braidctl")  ? o->ctl_path
					       : NULL;
	if (!to)
		return false;
	bench_strfmt(to, PATH_MAX, "%s", v);
	return true;
}

bool bench_cluster_opts_check(const struct bench_cluster_opts *o, char *why, size_t len)
{
	const char *need[3] = {o->ds_path, o->mds_path, o->ctl_path};
	for (int i = 0; i < 3; i++)
		if (access(need[i], X_OK)) {
			bench_strfmt(why, len, "%s not built", need[i]);
			return false;
		}
	return true;
}

/* ------------------------------------------------------------- daemons */

static int file_write(const char *path, const char *text, char *why, size_t len)
{
	FILE *f = fopen(path, "w");
	int rc = f && fputs(text, f) >= 0 ? 0 : -EIO;
	if (f && fclose(f) && !rc)
		rc = -errno;
	if (!f || rc)
		bench_strfmt(why, len, "write %s: %s", path, strerror(f ? -rc : errno));
	return f ? rc : -EIO;
}

/* exe -c conf --ready-fd N (dying with us), and its "READY port". */
static int daemon_start(struct bench_child *ch, const char *name, const char *exe, const char *conf,
			const char *log, int *port, char *why, size_t len)
{
	int ready_fd;
	int rc = bench_daemon_spawn(ch, name, exe, conf, log, &ready_fd, why, len);
	if (rc)
		return rc;
	char line[128];
	rc = bench_daemon_ready(ready_fd, 60, port, line, sizeof(line));
	if (rc) {
		char last[300];
		bench_log_tail_errors(log, NULL, last, sizeof(last));
		bench_strfmt(why, len, "%s did not get ready: %s", name,
			     last[0] ? last : "nothing logged");
		bench_child_stop(ch, 5);
	}
	return rc;
}

/* "metrics_listen = 127.0.0.1:PORT\n" with a port picked now, or "". */
static void metrics_line(const struct bench_cluster *k, int *port, char *out, size_t len)
{
	*port = k->o.metrics ? bench_port_pick() : 0;
	if (*port > 0)
		bench_strfmt(out, len, "metrics_listen = 127.0.0.1:%d\n", *port);
	else
		out[0] = 0;
}

static int mds_start(struct bench_cluster *k, char *why, size_t len)
{
	char dir[PATH_MAX + 8], exports[PATH_MAX + 16], conf[PATH_MAX * 4], met[64];
	bench_strfmt(dir, sizeof(dir), "%s/mds", k->dir);
	bench_strfmt(exports, sizeof(exports), "%s/exports", dir);
	bench_strfmt(k->mds_conf, sizeof(k->mds_conf), "%s/mds.conf", dir);
	bench_strfmt(k->mds_log, sizeof(k->mds_log), "%s/braid-mds.log", dir);
	if (mkdir(dir, 0755)) {
		bench_strfmt(why, len, "mkdir %s: %s", dir, strerror(errno));
		return -errno;
	}
	metrics_line(k, &k->mds_metrics_port, met, sizeof(met));
	bench_strfmt(conf, sizeof(conf),
		     "# Written by %s.\n[mds]\nstore_dir = %s/store\n"
		     "listen = 127.0.0.1:0\nexports = %s\nkey_file = %s\ngrace_time = 0\n"
		     "rpcbind = no\nmount = no\nheartbeat_interval = 1s\nds_timeout = 3s\n"
		     "resilver_rate = 0\n%s%s",
		     bench_prog, dir, exports, k->key, met, k->o.mds_conf ? k->o.mds_conf : "");
	int rc;
	if ((rc = file_write(exports, "/ *(rw,no_root_squash,insecure)\n", why, len)) ||
	    (rc = file_write(k->mds_conf, conf, why, len)))
		return rc;
	return daemon_start(&k->mds, "braid-mds", k->o.mds_path, k->mds_conf, k->mds_log,
			    &k->mds_port, why, len);
}

/* d started from its config; up at the MDS (d->id learnt). */
static int ds_run(struct bench_cluster *k, struct bench_cluster_ds *d, char *why, size_t len)
{
	int rc, port;
	if ((rc = daemon_start(&d->ch, d->host, k->o.ds_path, d->conf, d->log, &port, why, len)))
		return rc;
	double end = bench_now_s() + BENCH_CLUSTER_UP_S;
	while (bench_now_s() < end) {
		struct bench_cluster_ent v[BENCH_CLUSTER_DS_MAX + 4];
		unsigned n = bench_cluster_ds_list(k, v, BENCH_CLUSTER_DS_MAX + 4);
		for (unsigned i = 0; i < n; i++)
			if (!strcmp(v[i].host, d->host) && v[i].up && !v[i].lost) {
				d->id = v[i].id;
				return 0;
			}
		bench_sleep_s(0.1);
	}
	bench_strfmt(why, len, "braid-ds %s not up at the MDS after %.0f s", d->host,
		     BENCH_CLUSTER_UP_S);
	return -ETIMEDOUT;
}

int bench_cluster_ds_add(struct bench_cluster *k, char *why, size_t len)
{
	if (k->nstarted == BENCH_CLUSTER_DS_MAX) {
		bench_strfmt(why, len, "more than %d data servers", BENCH_CLUSTER_DS_MAX);
		return -ENOSPC;
	}
	struct bench_cluster_ds *d = &k->ds[k->nstarted];
	bench_strfmt(d->host, sizeof(d->host), "ds%u", k->nstarted);
	bench_strfmt(d->dir, sizeof(d->dir), "%s/%s", k->dir, d->host);
	bench_strfmt(d->conf, sizeof(d->conf), "%s/ds.conf", d->dir);
	bench_strfmt(d->log, sizeof(d->log), "%s/braid-ds.log", d->dir);
	if (mkdir(d->dir, 0755)) {
		bench_strfmt(why, len, "mkdir %s: %s", d->dir, strerror(errno));
		return -errno;
	}
	char conf[PATH_MAX * 3], met[64];
	metrics_line(k, &d->metrics_port, met, sizeof(met));
	bench_strfmt(conf, sizeof(conf),
		     "# Written by %s.\n[ds]\nstore_dir = %s/store\n"
		     "listen = 127.0.0.1:0\nkey_file = %s\nmds = 127.0.0.1:%d\nhostname = %s\n"
		     "nfs41 = no\n%s",
		     bench_prog, d->dir, k->key, k->mds_port, d->host, met);
	int rc = file_write(d->conf, conf, why, len);
	if (rc)
		return rc;
	k->nstarted++;
	return ds_run(k, d, why, len);
}

int bench_cluster_ds_restart(struct bench_cluster *k, struct bench_cluster_ds *d, char *why,
			     size_t len)
{
	uint32_t id = d->id;
	int rc = ds_run(k, d, why, len);
	if (!rc && d->id != id) {
		bench_strfmt(why, len, "braid-ds %s came back as data server %u, not %u", d->host,
			     d->id, id);
		rc = -EPROTO;
	}
	return rc;
}

void bench_cluster_ds_stop(struct bench_cluster_ds *d, bool kill_it)
{
	if (d->ch.pid > 0) {
		if (kill_it) {
			kill(d->ch.pid, SIGKILL);
			bench_child_wait(&d->ch, 10);
		} else if (!bench_child_stop(&d->ch, 20)) {
			fprintf(stderr, "%s: braid-ds %s needed SIGKILL\n", bench_prog, d->host);
		}
	}
}

int bench_cluster_ds_wait_down(struct bench_cluster *k, const struct bench_cluster_ds *d,
			       double *secs, char *why, size_t len)
{
	double t0 = bench_now_s();
	while (bench_now_s() - t0 < BENCH_CLUSTER_UP_S) {
		struct bench_cluster_ent v[BENCH_CLUSTER_DS_MAX + 4];
		unsigned n = bench_cluster_ds_list(k, v, BENCH_CLUSTER_DS_MAX + 4);
		const struct bench_cluster_ent *e = bench_cluster_ent_of(v, n, d->id);
		if (e && !e->up) {
			*secs = bench_now_s() - t0;
			return 0;
		}
		bench_sleep_s(0.1);
	}
	bench_strfmt(why, len, "the MDS still counts %s (data server %u) up after %.0f s", d->host,
		     d->id, BENCH_CLUSTER_UP_S);
	return -ETIMEDOUT;
}

int bench_cluster_ds_lose(struct bench_cluster *k, struct bench_cluster_ds *d, double *t_lost,
			  double *wait_s, char *why, size_t len)
{
	double tk = bench_now_s(), t0;
	bench_cluster_ds_stop(d, true);
	for (;;) {
		t0 = bench_now_s();
		if (!bench_cluster_ctl(k, false, "ds lost %u", d->id))
			break;
		if (t0 - tk > BENCH_CLUSTER_UP_S) {
			bench_strfmt(why, len, "braidctl ds lost %u: %s", d->id,
				     bench_cluster_ctl_said(k));
			return -ETIMEDOUT;
		}
		bench_sleep_s(0.1);
	}
	*t_lost = t0;
	*wait_s = t0 - tk;
	return 0;
}

bool bench_cluster_prot_get(struct bench_cluster *k, struct bench_cluster_prot *p)
{
	const char *out = k->out;
	if (bench_cluster_ctl(k, true, "rebuild") || !bench_json_find(out, NULL, "moved_files"))
		return false;
	p->moved = bench_json_u64(out, NULL, "moved_files");
	p->rebuild = bench_json_u64(out, NULL, "rebuild_files");
	p->stale = bench_json_u64(out, NULL, "stale_files");
	p->files = bench_json_u64(out, NULL, "resilvered_files");
	p->bytes = bench_json_u64(out, NULL, "resilvered_bytes");
	p->failures = bench_json_u64(out, NULL, "failures");
	p->unrecoverable = bench_json_u64(out, NULL, "unrecoverable");
	return true;
}

/* nftw has no argument: the one walk at a time (one thread per cluster). */
static uint64_t walk_bytes;
static bool walk_drop;

static int walk_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)ftw;
	if (type != FTW_F || !S_ISREG(st->st_mode))
		return 0;
	walk_bytes += (uint64_t)st->st_blocks * 512;
	if (walk_drop) {
		int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOATIME);
		if (fd < 0)
			fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
			close(fd);
		}
	}
	return 0;
}

uint64_t bench_cluster_ds_store_bytes(const struct bench_cluster_ds *d, bool drop)
{
	char store[PATH_MAX + 8];
	bench_strfmt(store, sizeof(store), "%s/store", d->dir);
	if (drop)
		sync();
	walk_bytes = 0;
	walk_drop = drop;
	nftw(store, walk_one, 16, FTW_PHYS);
	return walk_bytes;
}

int bench_cluster_start(const struct bench_cluster_opts *o, const char *dir, unsigned nds,
			struct bench_cluster **out, char *why, size_t len)
{
	struct bench_cluster *k = calloc(1, sizeof(*k));
	*out = k;
	if (!k) {
		bench_strfmt(why, len, "no memory");
		return -ENOMEM;
	}
	k->o = *o;
	bench_strfmt(k->dir, sizeof(k->dir), "%s", dir);
	bench_strfmt(k->key, sizeof(k->key), "%s/cluster.key", k->dir);
	if (mkdir(k->dir, 0755)) {
		bench_strfmt(why, len, "mkdir %s: %s", k->dir, strerror(errno));
		return -errno;
	}
	int rc = bench_key_write(k->key);
	if (rc) {
		bench_strfmt(why, len, "cluster key: %s", strerror(-rc));
		return rc;
	}
	if ((rc = mds_start(k, why, len)))
		return rc;
	for (unsigned i = 0; i < nds; i++)
		if ((rc = bench_cluster_ds_add(k, why, len)))
			return rc;
	return 0;
}

void bench_cluster_stop(struct bench_cluster *k)
{
	if (!k)
		return;
	for (unsigned i = 0; i < k->nstarted; i++)
		bench_cluster_ds_stop(&k->ds[i], false);
	if (k->mds.pid > 0 && !bench_child_stop(&k->mds, 20))
		fprintf(stderr, "%s: braid-mds needed SIGKILL\n", bench_prog);
	free(k);
}

/* ------------------------------------------------------------- metrics */

/* GET /metrics from 127.0.0.1:port into a malloc'd, NUL-ended *text. */
static int metrics_get(int port, char **text)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct timeval tv = {.tv_sec = METRICS_TO_S};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	struct sockaddr_in sa = bench_sa_loopback(port);
	static const char req[] = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    write(fd, req, sizeof(req) - 1) != (ssize_t)(sizeof(req) - 1)) {
		int rc = -errno;
		close(fd);
		return rc ? rc : -EIO;
	}
	size_t cap = 1u << 16, got = 0;
	char *b = malloc(cap);
	int rc = b ? 0 : -ENOMEM;
	while (!rc) {
		if (got + 1 == cap) {
			char *nb = cap < METRICS_MAX ? realloc(b, cap * 2) : NULL;
			if (!nb) {
				rc = -EFBIG;
				break;
			}
			b = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, b + got, cap - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			rc = -errno;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	if (rc) {
		free(b);
		return rc;
	}
	b[got] = 0;
	if (strncmp(b, "HTTP/1.", 7) || strncmp(b + 8, " 200", 4)) {
		free(b);
		return -EPROTO;
	}
	*text = b;
	return 0;
}

int bench_cluster_metric(int port, const char *series, double *v)
{
	char *text = NULL;
	int rc = metrics_get(port, &text);
	if (rc)
		return rc;
	size_t sl = strlen(series);
	rc = -ENOENT;
	for (const char *p = strchr(text, '\n'); p; p = strchr(p, '\n')) {
		p++;
		if (!strncmp(p, series, sl) && p[sl] == ' ') {
			*v = strtod(p + sl + 1, NULL);
			rc = 0;
			break;
		}
	}
	free(text);
	return rc;
}

double bench_cluster_ds_metric_sum(struct bench_cluster *k, const char *series)
{
	double sum = 0;
	for (unsigned i = 0; i < k->nstarted; i++) {
		double v;
		if (k->ds[i].ch.pid > 0 && k->ds[i].metrics_port > 0 &&
		    !bench_cluster_metric(k->ds[i].metrics_port, series, &v))
			sum += v;
	}
	return sum;
}

/* ---------------------------------------------------------------- files */

struct ffc *bench_cluster_mount(struct bench_cluster *k, int *err)
{
	struct ffc_opts fo = {0};
	return ffc_mount("127.0.0.1", k->mds_port, &fo, err);
}

int bench_cluster_dir_make(struct bench_cluster *k, const char *dir, const char *policy, char *why,
			   size_t len)
{
	int err = 0;
	struct ffc *c = bench_cluster_mount(k, &err);
	if (!c) {
		bench_strfmt(why, len, "ffclient mount of braid-mds: %s", strerror(-err));
		return err;
	}
	int rc = ffc_mkdir(c, dir, 0755);
	ffc_unmount(c);
	if (rc) {
		bench_strfmt(why, len, "mkdir %s: %s", dir, strerror(-rc));
		return rc;
	}
	if (bench_cluster_ctl(k, false, "policy set %s %s", dir, policy)) {
		bench_strfmt(why, len, "braidctl policy set %s %s: %s", dir, policy,
			     bench_cluster_ctl_said(k));
		return -EIO;
	}
	return 0;
}

void bench_cluster_file_path(char *p, size_t len, const char *dir, unsigned i)
{
	bench_strfmt(p, len, "%s/f%04u", dir, i);
}

void bench_cluster_pattern(uint8_t *p, unsigned i, uint64_t off, size_t len)
{
	uint64_t salt = (i + 1ull) * 0x9e3779b97f4a7c15ull;
	for (size_t w = 0; w + 8 <= len; w += 8) {
		uint64_t v = (off + w + 1) ^ salt;
		memcpy(p + w, &v, 8);
	}
}

/* Where p (file i's bytes at off) first differs from the pattern, or -1. */
static int64_t pattern_diff(const uint8_t *p, unsigned i, uint64_t off, size_t len)
{
	uint64_t salt = (i + 1ull) * 0x9e3779b97f4a7c15ull;
	for (size_t w = 0; w + 8 <= len; w += 8) {
		uint64_t v = (off + w + 1) ^ salt, g;
		memcpy(&g, p + w, 8);
		if (g != v)
			return (int64_t)(off + w);
	}
	return -1;
}

static void io_account(struct ffc *c, struct bench_cluster_io *io, double t0)
{
	struct ffc_stats st;
	ffc_stats_get(c, &st);
	io->secs = bench_now_s() - t0;
	io->ds_bytes = st.ds_read_bytes + st.ds_write_bytes;
	io->mds_bytes = st.mds_read_bytes + st.mds_write_bytes;
	io->layoutgets = st.layoutget;
}

enum pass { PASS_WRITE, PASS_READ_WHOLE, PASS_READ_SAMPLE };

/* File i's bytes, size in all, written or read (and checked) through f. */
static int file_pass(struct ffc_file *f, const char *path, unsigned i, uint64_t size, enum pass how,
		     uint8_t *buf, struct bench_cluster_io *io, char *why, size_t len)
{
	/* every chunk in turn, or the first, middle and last MiB */
	uint64_t at[3] = {0, size / 2 / MiB * MiB, size - MiB};
	unsigned nat = how == PASS_READ_SAMPLE ? 3 : (unsigned)((size + IO_CHUNK - 1) / IO_CHUNK);
	for (unsigned j = 0; j < nat; j++) {
		uint64_t off = how == PASS_READ_SAMPLE ? at[j] : (uint64_t)j * IO_CHUNK;
		size_t n = how == PASS_READ_SAMPLE ? MiB
			   : size - off < IO_CHUNK ? (size_t)(size - off)
						   : IO_CHUNK;
		if (how == PASS_WRITE) {
			bench_cluster_pattern(buf, i, off, n);
			ssize_t w = ffc_pwrite(f, buf, n, off);
			if (w != (ssize_t)n) {
				int rc = w < 0 ? (int)w : -EIO;
				bench_strfmt(why, len, "write %s: %s", path, strerror(-rc));
				return rc;
			}
		} else {
			ssize_t r = ffc_pread(f, buf, n, off);
			int64_t bad = r == (ssize_t)n ? pattern_diff(buf, i, off, n) : (int64_t)off;
			if (bad >= 0) {
				bench_strfmt(why, len, "%s reads back wrong at %lld (%s)", path,
					     (long long)bad,
					     r < 0	       ? strerror((int)-r)
					     : r != (ssize_t)n ? "short read"
							       : "other bytes");
				return -EIO;
			}
		}
		io->bytes += n;
	}
	return 0;
}

/* Every file of the data set through one fresh mount. */
static int files_pass(struct bench_cluster *k, const char *dir, unsigned nfiles, uint64_t size,
		      enum pass how, struct bench_cluster_io *io, char *why, size_t len)
{
	int err = 0, rc = 0;
	memset(io, 0, sizeof(*io));
	struct ffc *c = bench_cluster_mount(k, &err);
	if (!c) {
		bench_strfmt(why, len, "ffclient mount of braid-mds: %s", strerror(-err));
		return err;
	}
	uint8_t *buf = NULL;
	if (posix_memalign((void **)&buf, 4096, IO_CHUNK)) {
		bench_strfmt(why, len, "no memory");
		rc = -ENOMEM;
	}
	double t0 = bench_now_s();
	for (unsigned i = 0; i < nfiles && !rc; i++) {
		char path[PATH_MAX];
		bench_cluster_file_path(path, sizeof(path), dir, i);
		struct ffc_file *f =
		    how == PASS_WRITE
			? ffc_open(c, path, FFC_WRONLY | FFC_CREAT | FFC_EXCL, 0644, &err)
			: ffc_open(c, path, FFC_RDONLY, 0, &err);
		if (!f) {
			bench_strfmt(why, len, "%s %s: %s", how == PASS_WRITE ? "create" : "open",
				     path, strerror(-err));
			rc = err;
			break;
		}
		rc = file_pass(f, path, i, size, how, buf, io, why, len);
		int rcl = ffc_close(f);
		if (rcl && !rc && how == PASS_WRITE) {
			rc = rcl;
			bench_strfmt(why, len, "close %s: %s", path, strerror(-rc));
		}
	}
	io_account(c, io, t0);
	ffc_unmount(c);
	free(buf);
	return rc;
}

int bench_cluster_files_write(struct bench_cluster *k, const char *dir, unsigned nfiles,
			      uint64_t size, struct bench_cluster_io *io, char *why, size_t len)
{
	return files_pass(k, dir, nfiles, size, PASS_WRITE, io, why, len);
}

int bench_cluster_files_read(struct bench_cluster *k, const char *dir, unsigned nfiles,
			     uint64_t size, bool whole, struct bench_cluster_io *io, char *why,
			     size_t len)
{
	return files_pass(k, dir, nfiles, size, whole ? PASS_READ_WHOLE : PASS_READ_SAMPLE, io, why,
			  len);
}
