/* SPDX-License-Identifier: MIT */
/*
 * bench/rebuild, the MDS-driven half (rebuild.h): braid-mds and its data
 * servers as child processes, files written through ffclient, and the
 * rebuild and drain that braidctl starts, timed as a user sees them.
 *
 * What is read is what braidctl shows: `braidctl --json rebuild`
 * (moved_files, rebuild_files, stale_files, resilvered_files and _bytes,
 * failures) and `braidctl --json ds list` (each server's objects, from its
 * heartbeats), asked every POLL_S.  A copy is current again once
 * resilvered_files counts it, so a move's time ends at the poll that first
 * saw the last count; braidctl says it is all done (rebuild_files and
 * stale_files 0, a drained server holding nothing) only at the MDS's next
 * scan and heartbeat, up to about 2 s later, and that time is kept too.
 *
 * Every data server the MDS has known stays in its registry: one lost is
 * replaced by a fresh one (a new store, so a new id) after its rebuild,
 * and one drained is stopped and replaced after its drain, so that each
 * round starts with o->nds data servers holding two copies of each file.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/common.h"
#include "bench/rebuild.h"
#include "client/ffclient.h"

#define POLL_S	     0.1	 /* braidctl is asked this often */
#define CHUNK	     (16u << 20) /* one ffc_pwrite: 16 WRITEs of 1 MiB in flight */
#define DS_ALL_MAX   (RB_NDS_MAX + 2 * RB_ROUNDS_MAX) /* data servers started, all told */
#define CTL_OUT_MAX  (64u << 10)
#define MOVE_BOUND_S 300.0 /* a rebuild or drain not done by then failed */
#define UP_BOUND_S   30.0  /* a data server up at the MDS, ds lost accepted */

struct cl_ds {
	struct bench_child ch; /* pid 0 once stopped */
	uint32_t id;	       /* the MDS's, once registered */
	char host[16];	       /* "dsN": the N-th started */
	char dir[PATH_MAX], conf[PATH_MAX + 16], log[PATH_MAX + 16];
};

/* One thread uses a cluster; out holds braidctl's last output. */
struct rb_cluster {
	const struct rb_opts *o;
	char dir[PATH_MAX], key[PATH_MAX + 16];
	struct bench_child mds;
	int mds_port;
	char mds_conf[PATH_MAX + 16], mds_log[PATH_MAX + 16];
	struct cl_ds ds[DS_ALL_MAX];
	unsigned nstarted;
	unsigned nfiles;
	char broken[256]; /* why the next measures cannot run ("" while they can) */
	char out[CTL_OUT_MAX];
};

/* ------------------------------------------------------------- braidctl */

/*
 * braidctl --mds 127.0.0.1:PORT --key KEY [--json] ARGS (ARGS split at
 * spaces): its exit status (0: done; -1: it did not run to the end), what
 * it printed (stdout and stderr) in k->out.
 */
static int ctl(struct rb_cluster *k, bool json, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int ctl(struct rb_cluster *k, bool json, const char *fmt, ...)
{
	char args[256], mds[32];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(mds, sizeof(mds), "127.0.0.1:%d", k->mds_port);
	char *argv[24];
	unsigned n = 0;
	argv[n++] = (char *)k->o->ctl_path;
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

/* braidctl's output as one line, for a message. */
static const char *ctl_said(struct rb_cluster *k)
{
	for (char *c = k->out; *c; c++)
		if (*c == '\n')
			*c = ' ';
	return k->out[0] ? k->out : "nothing said";
}

/* Where "key": is in [text, end) (end NULL: to the end), or NULL. */
static const char *jfind(const char *text, const char *end, const char *key)
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

static uint64_t jnum(const char *text, const char *end, const char *key)
{
	const char *p = jfind(text, end, key);
	return p ? strtoull(p, NULL, 10) : 0;
}

static bool jbool(const char *text, const char *end, const char *key)
{
	const char *p = jfind(text, end, key);
	return p && !strncmp(p, "true", 4);
}

/* A data server as `braidctl --json ds list` shows it. */
struct ds_ent {
	uint32_t id;
	char host[32];
	bool up, drained, lost;
	uint64_t objects;
};

/* Every data server the MDS knows: how many (0: braidctl failed). */
static unsigned ds_list(struct rb_cluster *k, struct ds_ent *v, unsigned max)
{
	if (ctl(k, true, "ds list"))
		return 0;
	unsigned n = 0;
	/* each server's object starts with its "id" (nothing nested has one) */
	const char *p = strstr(k->out, "\"id\":");
	while (p && n < max) {
		const char *next = strstr(p + 5, "\"id\":");
		struct ds_ent *e = &v[n++];
		memset(e, 0, sizeof(*e));
		e->id = (uint32_t)jnum(p, next, "id");
		e->up = jbool(p, next, "up");
		e->drained = jbool(p, next, "drained");
		e->lost = jbool(p, next, "lost");
		e->objects = jnum(p, next, "objects");
		const char *h = jfind(p, next, "hostname");
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

static const struct ds_ent *ds_ent_of(const struct ds_ent *v, unsigned n, uint32_t id)
{
	for (unsigned i = 0; i < n; i++)
		if (v[i].id == id)
			return &v[i];
	return NULL;
}

/*
 * ds list once every copy is counted where it is (the counts come with
 * heartbeats): the servers up and not lost hold two objects per file.  At
 * most 5 s, then as it is (*settled false).
 */
static unsigned ds_settled(struct rb_cluster *k, struct ds_ent *v, unsigned max, bool *settled)
{
	double end = bench_now_s() + 5;
	unsigned n;
	for (;;) {
		n = ds_list(k, v, max);
		uint64_t sum = 0;
		for (unsigned i = 0; i < n; i++)
			if (v[i].up && !v[i].lost)
				sum += v[i].objects;
		*settled = n && sum == 2ull * k->nfiles;
		if (*settled || bench_now_s() > end)
			return n;
		bench_sleep_s(0.1);
	}
}

/* What `braidctl --json rebuild` shows. */
struct prot {
	uint64_t moved, rebuild, stale, files, bytes, failures, unrecoverable;
};

static bool prot_get(struct rb_cluster *k, struct prot *p)
{
	if (ctl(k, true, "rebuild") || !jfind(k->out, NULL, "moved_files"))
		return false;
	p->moved = jnum(k->out, NULL, "moved_files");
	p->rebuild = jnum(k->out, NULL, "rebuild_files");
	p->stale = jnum(k->out, NULL, "stale_files");
	p->files = jnum(k->out, NULL, "resilvered_files");
	p->bytes = jnum(k->out, NULL, "resilvered_bytes");
	p->failures = jnum(k->out, NULL, "failures");
	p->unrecoverable = jnum(k->out, NULL, "unrecoverable");
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

static int mds_start(struct rb_cluster *k, char *why, size_t len)
{
	char dir[PATH_MAX + 8], exports[PATH_MAX + 16], conf[PATH_MAX * 4];
	bench_strfmt(dir, sizeof(dir), "%s/mds", k->dir);
	bench_strfmt(exports, sizeof(exports), "%s/exports", dir);
	bench_strfmt(k->mds_conf, sizeof(k->mds_conf), "%s/mds.conf", dir);
	bench_strfmt(k->mds_log, sizeof(k->mds_log), "%s/braid-mds.log", dir);
	if (mkdir(dir, 0755)) {
		bench_strfmt(why, len, "mkdir %s: %s", dir, strerror(errno));
		return -errno;
	}
	bench_strfmt(conf, sizeof(conf),
		     "# Written by bench/rebuild.\n[mds]\nstore_dir = %s/store\n"
		     "listen = 127.0.0.1:0\nexports = %s\nkey_file = %s\ngrace_time = 0\n"
		     "rpcbind = no\nmount = no\nheartbeat_interval = 1s\nds_timeout = 3s\n"
		     "resilver_rate = 0\n",
		     dir, exports, k->key);
	int rc;
	if ((rc = file_write(exports, "/ *(rw,no_root_squash,insecure)\n", why, len)) ||
	    (rc = file_write(k->mds_conf, conf, why, len)))
		return rc;
	return daemon_start(&k->mds, "braid-mds", k->o->mds_path, k->mds_conf, k->mds_log,
			    &k->mds_port, why, len);
}

/* A fresh data server (a store of its own), up at the MDS: its id known. */
static int ds_start(struct rb_cluster *k, char *why, size_t len)
{
	if (k->nstarted == DS_ALL_MAX) {
		bench_strfmt(why, len, "more than %d data servers", DS_ALL_MAX);
		return -ENOSPC;
	}
	struct cl_ds *d = &k->ds[k->nstarted];
	bench_strfmt(d->host, sizeof(d->host), "ds%u", k->nstarted);
	bench_strfmt(d->dir, sizeof(d->dir), "%s/%s", k->dir, d->host);
	bench_strfmt(d->conf, sizeof(d->conf), "%s/ds.conf", d->dir);
	bench_strfmt(d->log, sizeof(d->log), "%s/braid-ds.log", d->dir);
	if (mkdir(d->dir, 0755)) {
		bench_strfmt(why, len, "mkdir %s: %s", d->dir, strerror(errno));
		return -errno;
	}
	char conf[PATH_MAX * 3];
	bench_strfmt(conf, sizeof(conf),
		     "# Written by bench/rebuild.\n[ds]\nstore_dir = %s/store\n"
		     "listen = 127.0.0.1:0\nkey_file = %s\nmds = 127.0.0.1:%d\nhostname = %s\n"
		     "nfs41 = no\n",
		     d->dir, k->key, k->mds_port, d->host);
	int rc, port;
	if ((rc = file_write(d->conf, conf, why, len)) ||
	    (rc = daemon_start(&d->ch, d->host, k->o->ds_path, d->conf, d->log, &port, why, len)))
		return rc;
	k->nstarted++;
	double end = bench_now_s() + UP_BOUND_S;
	while (bench_now_s() < end) {
		struct ds_ent v[DS_ALL_MAX + 4];
		unsigned n = ds_list(k, v, DS_ALL_MAX + 4);
		for (unsigned i = 0; i < n; i++)
			if (!strcmp(v[i].host, d->host) && v[i].up && !v[i].lost) {
				d->id = v[i].id;
				return 0;
			}
		bench_sleep_s(0.1);
	}
	bench_strfmt(why, len, "braid-ds %s not up at the MDS after %.0f s", d->host, UP_BOUND_S);
	return -ETIMEDOUT;
}

/* SIGKILL (lost) or SIGTERM (drained); its store goes with it. */
static void ds_stop(struct cl_ds *d, bool kill_it)
{
	if (d->ch.pid > 0) {
		if (kill_it) {
			kill(d->ch.pid, SIGKILL);
			bench_child_wait(&d->ch, 10);
		} else if (!bench_child_stop(&d->ch, 20)) {
			fprintf(stderr, "bench/rebuild: braid-ds %s needed SIGKILL\n", d->host);
		}
	}
}

static struct cl_ds *ds_by_id(struct rb_cluster *k, uint32_t id)
{
	for (unsigned i = 0; i < k->nstarted; i++)
		if (k->ds[i].id == id && k->ds[i].ch.pid > 0)
			return &k->ds[i];
	return NULL;
}

/* ---------------------------------------------------------------- files */

/* Every word of file i's bytes differs from every other file's and
 * offset's, and none is a block of zeros (the mover leaves those as
 * holes). */
static void file_fill(uint8_t *p, unsigned i, uint64_t off, size_t len)
{
	uint64_t salt = (i + 1ull) * 0x9e3779b97f4a7c15ull;
	for (size_t w = 0; w + 8 <= len; w += 8) {
		uint64_t v = (off + w + 1) ^ salt;
		memcpy(p + w, &v, 8);
	}
}

static void file_path(char *p, size_t len, unsigned i)
{
	bench_strfmt(p, len, "/data/f%04u", i);
}

static int cluster_fill(struct rb_cluster *k, char *why, size_t len)
{
	const struct rb_opts *o = k->o;
	struct ffc_opts fo = {0};
	int err = 0;
	struct ffc *c = ffc_mount("127.0.0.1", k->mds_port, &fo, &err);
	if (!c) {
		bench_strfmt(why, len, "ffclient mount of braid-mds: %s", strerror(-err));
		return err;
	}
	uint8_t *buf = NULL;
	int rc = ffc_mkdir(c, "/data", 0755);
	if (rc) {
		bench_strfmt(why, len, "mkdir /data: %s", strerror(-rc));
	} else if (ctl(k, false, "policy set /data whole,mirrors=2")) {
		bench_strfmt(why, len, "braidctl policy set: %s", ctl_said(k));
		rc = -EIO;
	} else if (posix_memalign((void **)&buf, 4096, CHUNK)) {
		bench_strfmt(why, len, "no memory");
		rc = -ENOMEM;
	}
	double t0 = bench_now_s();
	for (unsigned i = 0; i < k->nfiles && !rc; i++) {
		char path[64];
		file_path(path, sizeof(path), i);
		struct ffc_file *f =
		    ffc_open(c, path, FFC_WRONLY | FFC_CREAT | FFC_EXCL, 0644, &err);
		if (!f) {
			bench_strfmt(why, len, "create %s: %s", path, strerror(-err));
			rc = err;
			break;
		}
		for (uint64_t off = 0; off < o->file_size && !rc; off += CHUNK) {
			size_t n =
			    o->file_size - off < CHUNK ? (size_t)(o->file_size - off) : CHUNK;
			file_fill(buf, i, off, n);
			ssize_t w = ffc_pwrite(f, buf, n, off);
			if (w != (ssize_t)n) {
				rc = w < 0 ? (int)w : -EIO;
				bench_strfmt(why, len, "write %s: %s", path, strerror(-rc));
			}
		}
		int rcl = ffc_close(f);
		if (rcl && !rc) {
			rc = rcl;
			bench_strfmt(why, len, "close %s: %s", path, strerror(-rc));
		}
	}
	double secs = bench_now_s() - t0;
	struct ffc_stats st;
	ffc_stats_get(c, &st);
	ffc_unmount(c);
	free(buf);
	if (rc)
		return rc;
	double bytes = (double)k->nfiles * (double)o->file_size;
	printf("bench/rebuild: cluster filled: %u files of %.0f MiB in /data (whole, mirrors=2) "
	       "through ffclient in %.1f s: %.0f MB/s of files, %.0f MB/s to the data servers"
	       "%s\n",
	       k->nfiles, (double)o->file_size / RB_MiB, secs, bytes / secs / 1e6,
	       (double)st.ds_write_bytes / secs / 1e6,
	       st.ds_write_bytes ? "" : " (no layouts: all through the MDS)");
	struct ds_ent v[DS_ALL_MAX + 4];
	bool settled;
	unsigned n = ds_settled(k, v, DS_ALL_MAX + 4, &settled);
	if (!settled) {
		uint64_t sum = 0;
		for (unsigned i = 0; i < n; i++)
			sum += v[i].objects;
		bench_strfmt(why, len,
			     "the data servers hold %llu objects, not 2 for each of the %u files "
			     "(mirrors=2 not applied?)",
			     (unsigned long long)sum, k->nfiles);
		return -EIO;
	}
	return 0;
}

/* -------------------------------------------------------------- cluster */

int rb_cluster_start(const struct rb_opts *o, const char *work, struct rb_cluster **out, char *why,
		     size_t len)
{
	struct rb_cluster *k = calloc(1, sizeof(*k));
	*out = k;
	if (!k) {
		bench_strfmt(why, len, "no memory");
		return -ENOMEM;
	}
	k->o = o;
	k->nfiles = (unsigned)(o->size / o->file_size);
	bench_strfmt(k->dir, sizeof(k->dir), "%s/cluster", work);
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
	for (unsigned i = 0; i < o->nds; i++)
		if ((rc = ds_start(k, why, len)))
			return rc;
	return cluster_fill(k, why, len);
}

unsigned rb_cluster_files(const struct rb_cluster *k)
{
	return k ? k->nfiles : 0;
}

/* The server up, in placement, running here, holding the most copies. */
static struct cl_ds *fullest(struct rb_cluster *k, const struct ds_ent *v, unsigned n)
{
	struct cl_ds *best = NULL;
	uint64_t most = 0;
	for (unsigned i = 0; i < n; i++) {
		struct cl_ds *d = ds_by_id(k, v[i].id);
		if (d && v[i].up && !v[i].lost && !v[i].drained && v[i].objects > most) {
			most = v[i].objects;
			best = d;
		}
	}
	return best;
}

/*
 * Poll braidctl until the move begun at t0 (p0: what it showed before) is
 * done: copies moved and each made current, none left naming the server,
 * none stale, and a drained server (drained != 0) holding no object.
 */
static void move_wait(struct rb_cluster *k, struct rb_move *m, const struct prot *p0, double t0,
		      uint32_t drained)
{
	struct prot p = *p0;
	uint64_t counted = p0->files;
	double t_last = 0;
	for (;;) {
		if (bench_now_s() - t0 > MOVE_BOUND_S) {
			char last[200];
			bench_log_tail_errors(k->mds_log, NULL, last, sizeof(last));
			bench_strfmt(m->why, sizeof(m->why),
				     "not done in %.0f s (moved %llu, naming it %llu, stale %llu; "
				     "braid-mds: %s)",
				     MOVE_BOUND_S, (unsigned long long)(p.moved - p0->moved),
				     (unsigned long long)p.rebuild, (unsigned long long)p.stale,
				     last);
			return;
		}
		if (!prot_get(k, &p)) {
			bench_strfmt(m->why, sizeof(m->why), "braidctl rebuild: %s", ctl_said(k));
			return;
		}
		double t = bench_now_s();
		if (p.files != counted) {
			counted = p.files;
			t_last = t;
		}
		if (p.unrecoverable != p0->unrecoverable) {
			bench_strfmt(m->why, sizeof(m->why), "%llu files unrecoverable",
				     (unsigned long long)(p.unrecoverable - p0->unrecoverable));
			return;
		}
		/* moved_files grows during a scan that sets rebuild_files at its
		 * end: every move made current too, so that no scan is midway */
		bool done = p.moved > p0->moved && p.files - p0->files >= p.moved - p0->moved &&
			    !p.rebuild && !p.stale;
		if (done && drained) {
			struct ds_ent v[DS_ALL_MAX + 4];
			unsigned n = ds_list(k, v, DS_ALL_MAX + 4);
			const struct ds_ent *e = ds_ent_of(v, n, drained);
			done = e && !e->objects;
		}
		if (done) {
			m->shown_secs = t - t0;
			break;
		}
		bench_sleep_s(POLL_S);
	}
	m->files = (unsigned)(p.moved - p0->moved);
	m->file_bytes = m->files * k->o->file_size;
	m->copied_bytes = p.bytes - p0->bytes;
	m->failures = (unsigned)(p.failures - p0->failures);
	if (!t_last) {
		bench_strfmt(m->why, sizeof(m->why), "done, but no copy counted as resilvered");
		return;
	}
	m->secs = t_last - t0;
	m->ok = true;
}

/* The destinations: servers other than from whose object count grew. */
static void count_dest(struct rb_cluster *k, struct rb_move *m, const struct ds_ent *before,
		       unsigned nb)
{
	struct ds_ent v[DS_ALL_MAX + 4];
	bool settled;
	unsigned n = ds_settled(k, v, DS_ALL_MAX + 4, &settled);
	for (unsigned i = 0; i < n; i++) {
		const struct ds_ent *b = ds_ent_of(before, nb, v[i].id);
		if (v[i].id != m->from && v[i].objects > (b ? b->objects : 0))
			m->ndest++;
	}
	if (!settled)
		printf("  (the data servers' object counts had not settled: %u destinations "
		       "seen)\n",
		       m->ndest);
}

/* A fresh data server in the place of one gone; if none starts, the
 * measures after this one cannot run. */
static void replace(struct rb_cluster *k, struct cl_ds *gone)
{
	bench_tree_remove(gone->dir);
	char why[256];
	if (ds_start(k, why, sizeof(why)))
		bench_strfmt(k->broken, sizeof(k->broken), "no data server in place of %s: %s",
			     gone->host, why);
}

void rb_cluster_rebuild(struct rb_cluster *k, struct rb_move *m)
{
	memset(m, 0, sizeof(*m));
	if (k->broken[0]) {
		bench_strfmt(m->why, sizeof(m->why), "%s", k->broken);
		return;
	}
	struct ds_ent before[DS_ALL_MAX + 4];
	bool settled;
	unsigned nb = ds_settled(k, before, DS_ALL_MAX + 4, &settled);
	struct cl_ds *d = fullest(k, before, nb);
	struct prot p0;
	if (!d || !prot_get(k, &p0)) {
		bench_strfmt(m->why, sizeof(m->why), "%s",
			     d ? "braidctl rebuild failed" : "no data server holds copies");
		return;
	}
	m->from = d->id;
	double tk = bench_now_s(), t0;
	ds_stop(d, true);
	/* refused until the MDS counts it down (ds_timeout): not timed */
	for (;;) {
		t0 = bench_now_s();
		if (!ctl(k, false, "ds lost %u", d->id))
			break;
		if (t0 - tk > UP_BOUND_S) {
			bench_strfmt(m->why, sizeof(m->why), "braidctl ds lost %u: %s", d->id,
				     ctl_said(k));
			replace(k, d);
			return;
		}
		bench_sleep_s(0.1);
	}
	m->wait_secs = t0 - tk;
	move_wait(k, m, &p0, t0, 0);
	count_dest(k, m, before, nb);
	replace(k, d);
}

void rb_cluster_drain(struct rb_cluster *k, struct rb_move *m)
{
	memset(m, 0, sizeof(*m));
	if (k->broken[0]) {
		bench_strfmt(m->why, sizeof(m->why), "%s", k->broken);
		return;
	}
	struct ds_ent before[DS_ALL_MAX + 4];
	bool settled;
	unsigned nb = ds_settled(k, before, DS_ALL_MAX + 4, &settled);
	struct cl_ds *d = fullest(k, before, nb);
	struct prot p0;
	if (!d || !prot_get(k, &p0)) {
		bench_strfmt(m->why, sizeof(m->why), "%s",
			     d ? "braidctl rebuild failed" : "no data server holds copies");
		return;
	}
	m->from = d->id;
	double t0 = bench_now_s();
	if (ctl(k, false, "ds drain %u", d->id)) {
		bench_strfmt(m->why, sizeof(m->why), "braidctl ds drain %u: %s", d->id,
			     ctl_said(k));
		return;
	}
	move_wait(k, m, &p0, t0, d->id);
	count_dest(k, m, before, nb);
	if (m->ok) {
		/* holds nothing now: stopped, and another takes its place */
		ds_stop(d, false);
		replace(k, d);
	} else {
		bench_strfmt(k->broken, sizeof(k->broken), "the drain of %s did not end", d->host);
	}
}

int rb_cluster_check(struct rb_cluster *k, char *why, size_t len)
{
	uint64_t fs = k->o->file_size;
	int err = 0, rc = 0;
	struct ffc_opts fo = {0};
	struct ffc *c = ffc_mount("127.0.0.1", k->mds_port, &fo, &err);
	if (!c) {
		bench_strfmt(why, len, "ffclient mount of braid-mds: %s", strerror(-err));
		return err;
	}
	uint8_t *got = malloc(RB_MiB), *want = malloc(RB_MiB);
	if (!got || !want) {
		bench_strfmt(why, len, "no memory");
		rc = -ENOMEM;
	}
	for (unsigned i = 0; i < k->nfiles && !rc; i++) {
		char path[64];
		file_path(path, sizeof(path), i);
		struct ffc_file *f = ffc_open(c, path, FFC_RDONLY, 0, &err);
		if (!f) {
			bench_strfmt(why, len, "open %s: %s", path, strerror(-err));
			rc = err;
			break;
		}
		uint64_t at[3] = {0, fs / 2 / RB_MiB * RB_MiB, fs - RB_MiB};
		for (int j = 0; j < 3 && !rc; j++) {
			ssize_t r = ffc_pread(f, got, RB_MiB, at[j]);
			file_fill(want, i, at[j], RB_MiB);
			if (r != (ssize_t)RB_MiB || memcmp(got, want, RB_MiB)) {
				bench_strfmt(why, len, "%s reads back wrong at %llu (%s)", path,
					     (unsigned long long)at[j],
					     r < 0 ? strerror((int)-r) : "other bytes");
				rc = -EIO;
			}
		}
		ffc_close(f);
	}
	free(got);
	free(want);
	ffc_unmount(c);
	return rc;
}

void rb_cluster_stop(struct rb_cluster *k)
{
	if (!k)
		return;
	for (unsigned i = 0; i < k->nstarted; i++)
		ds_stop(&k->ds[i], false);
	if (k->mds.pid > 0 && !bench_child_stop(&k->mds, 20))
		fprintf(stderr, "bench/rebuild: braid-mds needed SIGKILL\n");
	free(k);
}
