/* SPDX-License-Identifier: MIT */
/*
 * bench/pnfs: aggregate READ and WRITE throughput of a Braid cluster through
 * client/ffclient (OPEN, LAYOUTGET, GETDEVICEINFO, I/O straight to the data
 * servers, COMMIT, LAYOUTCOMMIT, LAYOUTRETURN; I/O through the MDS when no
 * layout is given), with braid-mds and 1, 2 and 4 braid-ds as child
 * processes on loopback:
 *
 *  (a) many files at once: one thread per file, each file on one data
 *      server (whole-file placement);
 *  (b) one large file, written and read by several threads in disjoint
 *      regions, on a cluster whose MDS stripes new files ([mds] layout =
 *      segments by default, --big-layout): it spreads over the data
 *      servers only if the MDS's layouts do.
 *
 * Each figure is given as a ratio to the 1-DS figure and to the loopback
 * TCP ceiling measured in the same run (one stream of 1 MiB writes into a
 * receiver that discards them, as iperf3 -l 1M), with the CPU use of
 * every process, so a run says when the box's cores, not the DS count,
 * are the limit.  The CPU-seconds each process on the path spent per GiB
 * moved (this client, braid-mds, the data servers together) are printed
 * beside the loopback stream's sender plus receiver CPU per GiB, from the
 * same run (JSON: read_cpu_per_gib_vs_loopback, for the 4-DS many-files
 * read, and every phase's figures).  On a shared box that cost drifts
 * over a run, so the many-files read runs --rounds times (5; 1 with
 * --quick), each round just after a loopback stream of its own (--seconds,
 * 2 s); every round's ratio is printed and the median round stands for
 * the run.  Each thread reads and writes --chunk (2 MiB) per call into one
 * buffer of its own, as the loopback's receiver reads 1 MiB into one:
 * with 16 MiB per call the eight threads' 128 MiB of buffers were written
 * from memory, not cache, which cost the client 0.07 CPU-s per GiB that
 * the loopback never pays, and read slower (2.9 against 4.0 GB/s here);
 * --chunk 16M measures that shape.  The client's counters say whether layouts were used; if
 * the MDS gave none the bench says so and every figure is MDS-proxied I/O.
 *
 * Usage: pnfs [--quick] [--files N] [--size SIZE] [--big SIZE] [--threads N]
 *             [--counts 1,2,4] [--loops N] [--inflight N] [--seconds S] [--rounds R]
 *             [--chunk SIZE] [--dir PATH]
 *             [--keep] [--big-layout whole|segments|striped] [--mds-conf "key = value"]...
 *             [--braid-mds PATH] [--braid-ds PATH]
 * Last line: one JSON object; a figure that could not be measured is null
 * and the reason is printed.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "bench/common.h"
#include "client/ffclient.h"

#define MB	    1e6
#define MiB	    (1ull << 20)
#define GiB	    (1ull << 30)
#define NDS_MAX	    4
#define NCOUNTS_MAX 3
#define THREADS_MAX 64
#define CONF_MAX    16
#define ROUNDS_MAX  9

struct opts {
	bool quick, keep;
	const char *dir;
	unsigned files, threads, loops, inflight, rounds;
	uint64_t size, big, chunk;
	double lb_secs;
	unsigned counts[NCOUNTS_MAX], ncounts;
	const char *mds_conf[CONF_MAX];
	unsigned nmds_conf;
	const char *big_layout;
	char mds_path[PATH_MAX], ds_path[PATH_MAX];
};

struct daemon {
	struct bench_child ch;
	char dir[PATH_MAX];
	char conf[PATH_MAX + 16], log[PATH_MAX + 16];
	int port;
};

/* One measured phase. */
struct phase {
	bool ok;
	char why[256];
	double secs, mbps;
	double cpu_mds, cpu_ds, cpu_self; /* seconds in the phase */
	double util;			  /* ours (client, MDS, DSes) over secs x cores */
	double box;			  /* the whole box's busy share (/proc/stat) */
	double hot_util;		  /* the busiest single thread's share of a core */
	char hot[64];			  /* which: "braid-ds#2 (loop)" */
	unsigned ds_used;		  /* data servers that moved bytes */
	uint64_t ds_bytes, mds_bytes;
	double lb_cpu_gib; /* the loopback measured just before it; 0: the run's first */
};

enum { P_WRITE, P_READ, P_BIG_WRITE, P_BIG_READ, NPHASES };
static const char *const phase_names[NPHASES] = {"files write", "files read", "big-file write",
						 "big-file read"};

struct run {
	unsigned nds;
	bool started;
	char why[256];
	struct phase p[NPHASES]; /* p[P_READ]: the read round of median ratio */
	struct ffc_stats st[2]; /* each cluster's client, at its end */
	/* the many-files read, round by round: its CPU per GiB and that of a
	 * loopback stream measured just before it */
	unsigned nrounds;
	double rd_cpu_gib[ROUNDS_MAX], lb_cpu_gib[ROUNDS_MAX];
	double rd_client_gib[ROUNDS_MAX], rd_ds_gib[ROUNDS_MAX]; /* the round's parts */
};

struct bench {
	struct opts o;
	long ncpu;
	char work[PATH_MAX];
	double loopback_mbps;
	double loopback_cpu_gib; /* sender + receiver CPU-s per GiB */
	bool loopback_ok;
	char striping_key[256]; /* a striping setting braid-mds lists, if any */
	char big_conf[64];	/* what (b)'s MDS is given: "layout = segments" */
	struct run runs[NCOUNTS_MAX];
};

/* ------------------------------------------------------------ loopback TCP */

/* The loopback ceiling: one TCP stream, after a 0.3 s warm-up; its
 * sender's and receiver's CPU-seconds per GiB moved. */
static bool loopback_measure(double secs, double *mbps, double *cpu_gib)
{
	struct bench_loopback_res lr;
	char why[256];
	int rc = bench_loopback_measure(1, secs, &lr, why, sizeof(why));
	if (rc) {
		fprintf(stderr, "bench/pnfs: loopback: %s\n", strerror(-rc));
		return false;
	}
	*mbps = lr.mbps;
	double gib = lr.mbps * MB * lr.secs / (double)GiB;
	*cpu_gib = gib > 0 ? (lr.cpu_s + lr.rcv_cpu_s) / gib : 0;
	return gib > 0;
}

/* A phase's GiB moved. */
static double phase_gib(const struct phase *p)
{
	return p->mbps * MB * p->secs / (double)GiB;
}

/* The loopback CPU per GiB a phase is set beside: its round's, else the
 * run's first (0: not measured). */
static double phase_lb_cpu_gib(const struct bench *b, const struct phase *p)
{
	if (p->lb_cpu_gib > 0)
		return p->lb_cpu_gib;
	return b->loopback_ok ? b->loopback_cpu_gib : 0;
}

/* The whole path's CPU-seconds per GiB (client, MDS, data servers). */
static double phase_cpu_gib(const struct phase *p)
{
	double g = phase_gib(p);
	return g > 0 ? (p->cpu_self + p->cpu_mds + p->cpu_ds) / g : 0;
}

/* ---------------------------------------------------------------- daemons */

static int file_write(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	int rc = fputs(text, f) < 0 ? -EIO : 0;
	if (fclose(f) && !rc)
		rc = -errno;
	return rc;
}

/* Start exe -c conf --ready-fd N and read its "READY port" line. */
static int daemon_start(struct daemon *d, const char *exe, const char *name, char *why, size_t len)
{
	int ready_fd;
	int rc = bench_daemon_spawn(&d->ch, name, exe, d->conf, d->log, &ready_fd, why, len);
	if (rc)
		return rc;
	char line[128];
	rc = bench_daemon_ready(ready_fd, 60, &d->port, line, sizeof(line));
	if (rc) {
		char last[300];
		bench_log_tail_errors(d->log, NULL, last, sizeof(last));
		bench_strfmt(why, len, "%s did not get ready (%s): %s", name,
			     rc == -ECHILD	? "exited"
			     : rc == -ETIMEDOUT ? "timeout"
						: "bad READY line",
			     last[0] ? last : "nothing logged");
		bench_child_stop(&d->ch, 5);
		bench_log_dump(name, d->log);
	}
	return rc;
}

static void daemon_stop(struct daemon *d)
{
	if (d->ch.pid > 0 && !bench_child_stop(&d->ch, 20))
		fprintf(stderr, "bench/pnfs: %s needed SIGKILL\n", d->ch.name);
}

struct cluster {
	char dir[PATH_MAX];
	char key[PATH_MAX + 16];
	struct daemon mds, ds[NDS_MAX];
	unsigned nds;
	struct ffc *c;
};

static void cluster_stop(struct cluster *k)
{
	if (k->c)
		ffc_unmount(k->c);
	k->c = NULL;
	for (unsigned i = 0; i < k->nds; i++)
		daemon_stop(&k->ds[i]);
	daemon_stop(&k->mds);
}

/* Until the MDS counts n data servers' space (they share one file system,
 * so each adds the same space_total); per is one server's. */
static int wait_registered(struct ffc *c, unsigned n, uint64_t *per, char *why, size_t len)
{
	double end = bench_now_s() + 30;
	uint64_t total = 0, avail;
	while (bench_now_s() < end) {
		if (!ffc_statfs(c, &total, &avail)) {
			if (n == 1 && total > 0) {
				*per = total;
				return 0;
			}
			if (n > 1 && *per && total >= *per * (n - 1) + *per / 2)
				return 0;
		}
		bench_sleep_s(0.1);
	}
	bench_strfmt(why, len,
		     "the MDS did not see data server %u register in 30 s (space_total %llu)", n,
		     (unsigned long long)total);
	return -ETIMEDOUT;
}

static int cluster_start(struct bench *b, struct cluster *k, unsigned nds, const char *tag,
			 const char *extra, char *why, size_t len)
{
	memset(k, 0, sizeof(*k));
	bench_strfmt(k->dir, sizeof(k->dir), "%s/%s-ds%u", b->work, tag, nds);
	bench_strfmt(k->key, sizeof(k->key), "%s/cluster.key", k->dir);
	if (mkdir(k->dir, 0755) && errno != EEXIST) {
		bench_strfmt(why, len, "mkdir %s: %s", k->dir, strerror(errno));
		return -errno;
	}
	int rc = bench_key_write(k->key);
	if (rc) {
		bench_strfmt(why, len, "key file: %s", strerror(-rc));
		return rc;
	}
	struct daemon *m = &k->mds;
	bench_strfmt(m->dir, sizeof(m->dir), "%s/mds", k->dir);
	bench_strfmt(m->conf, sizeof(m->conf), "%s/mds.conf", m->dir);
	bench_strfmt(m->log, sizeof(m->log), "%s/braid-mds.log", m->dir);
	char exports[PATH_MAX + 16], conf[8192];
	bench_strfmt(exports, sizeof(exports), "%s/exports", m->dir);
	if (mkdir(m->dir, 0755) ||
	    (rc = file_write(exports, "/ *(rw,no_root_squash,insecure)\n"))) {
		bench_strfmt(why, len, "%s: %s", m->dir, strerror(rc ? -rc : errno));
		return rc ? rc : -errno;
	}
	size_t off = (size_t)snprintf(conf, sizeof(conf),
				      "[mds]\nstore_dir = %s/store\nlisten = 127.0.0.1:0\n"
				      "exports = %s\nkey_file = %s\nrpcbind = no\nmount = no\n"
				      "grace_time = 0\nheartbeat_interval = 1s\n",
				      m->dir, exports, k->key);
	if (extra && off < sizeof(conf))
		off += (size_t)snprintf(conf + off, sizeof(conf) - off, "%s\n", extra);
	for (unsigned i = 0; i < b->o.nmds_conf && off < sizeof(conf); i++)
		off += (size_t)snprintf(conf + off, sizeof(conf) - off, "%s\n", b->o.mds_conf[i]);
	if ((rc = file_write(m->conf, conf))) {
		bench_strfmt(why, len, "write %s: %s", m->conf, strerror(-rc));
		return rc;
	}
	if ((rc = daemon_start(m, b->o.mds_path, "braid-mds", why, len)))
		return rc;
	int err = 0;
	struct ffc_opts fo = {.loops = b->o.loops, .inflight = b->o.inflight};
	k->c = ffc_mount("127.0.0.1", m->port, &fo, &err);
	if (!k->c) {
		bench_strfmt(why, len, "mount braid-mds: %s", strerror(-err));
		return err;
	}
	uint64_t per = 0;
	for (unsigned i = 0; i < nds; i++) {
		struct daemon *d = &k->ds[i];
		bench_strfmt(d->dir, sizeof(d->dir), "%s/ds-%u", k->dir, i);
		bench_strfmt(d->conf, sizeof(d->conf), "%s/ds.conf", d->dir);
		bench_strfmt(d->log, sizeof(d->log), "%s/braid-ds.log", d->dir);
		if (mkdir(d->dir, 0755)) {
			bench_strfmt(why, len, "mkdir %s: %s", d->dir, strerror(errno));
			return -errno;
		}
		int port = bench_port_pick();
		bench_strfmt(conf, sizeof(conf),
			     "[ds]\nstore_dir = %s/store\nlisten = 127.0.0.1:%d\n"
			     "advertise = 127.0.0.1:%d\nkey_file = %s\nmds = 127.0.0.1:%d\n"
			     "hostname = bench-ds-%u\n",
			     d->dir, port, port, k->key, m->port, i);
		if ((rc = file_write(d->conf, conf))) {
			bench_strfmt(why, len, "write %s: %s", d->conf, strerror(-rc));
			return rc;
		}
		k->nds = i + 1;
		if ((rc = daemon_start(d, b->o.ds_path, "braid-ds", why, len)))
			return rc;
		if ((rc = wait_registered(k->c, i + 1, &per, why, len)))
			return rc;
	}
	return 0;
}

/* -------------------------------------------------------------------- load */

/* Tag the first 16 bytes of each 4 KiB block with (file, offset): cheap
 * enough to leave the cores to the servers, and any misplaced, stale or
 * torn block shows up when read. */
static void tag_fill(uint8_t *p, size_t len, uint64_t file, uint64_t off)
{
	for (size_t i = 0; i + 16 <= len; i += 4096) {
		uint64_t v[2] = {file * 0x9e3779b97f4a7c15ull ^ (off + i), ~(off + i)};
		memcpy(p + i, v, 16);
	}
}

static bool tag_check(const uint8_t *p, size_t len, uint64_t file, uint64_t off)
{
	for (size_t i = 0; i + 16 <= len; i += 4096) {
		uint64_t v[2] = {file * 0x9e3779b97f4a7c15ull ^ (off + i), ~(off + i)};
		if (memcmp(p + i, v, 16))
			return false;
	}
	return true;
}

struct job {
	struct ffc *c;
	bool write;
	char path[64];
	uint64_t file_id;
	uint64_t off, len; /* the region of the file this job moves */
	bool create;	   /* open with CREAT|TRUNC (one job per file) */
	size_t chunk;	   /* bytes per ffc_pread/ffc_pwrite, into one buffer */
	int err;
	char what[128];
};

static void *job_main(void *arg)
{
	struct job *j = arg;
	uint8_t *buf = NULL;
	if (posix_memalign((void **)&buf, 4096, j->chunk)) {
		j->err = -ENOMEM;
		return NULL;
	}
	memset(buf, 0x5a, j->chunk);
	int flags = j->write ? FFC_WRONLY | (j->create ? FFC_CREAT | FFC_TRUNC : 0) : FFC_RDONLY;
	int err = 0;
	struct ffc_file *f = ffc_open(j->c, j->path, flags, 0644, &err);
	if (!f) {
		j->err = err;
		bench_strfmt(j->what, sizeof(j->what), "open %s", j->path);
		free(buf);
		return NULL;
	}
	for (uint64_t pos = j->off; pos < j->off + j->len && !j->err;) {
		size_t n = j->off + j->len - pos < j->chunk ? (size_t)(j->off + j->len - pos) : j->chunk;
		ssize_t r;
		if (j->write) {
			tag_fill(buf, n, j->file_id, pos);
			r = ffc_pwrite(f, buf, n, pos);
		} else {
			r = ffc_pread(f, buf, n, pos);
			if (r == (ssize_t)n && !tag_check(buf, n, j->file_id, pos)) {
				j->err = -EBADMSG;
				bench_strfmt(j->what, sizeof(j->what), "%s at %llu: wrong data",
					     j->path, (unsigned long long)pos);
				break;
			}
		}
		if (r != (ssize_t)n) {
			j->err = r < 0 ? (int)r : -EIO;
			bench_strfmt(j->what, sizeof(j->what), "%s %s at %llu: %s",
				     j->write ? "write" : "read", j->path, (unsigned long long)pos,
				     r < 0 ? strerror((int)-r) : "short");
			break;
		}
		pos += n;
	}
	if (j->write && !j->err && (err = ffc_fsync(f))) {
		j->err = err;
		bench_strfmt(j->what, sizeof(j->what), "fsync %s", j->path);
	}
	err = ffc_close(f);
	if (err && !j->err) {
		j->err = err;
		bench_strfmt(j->what, sizeof(j->what), "close %s", j->path);
	}
	free(buf);
	return NULL;
}

/* ------------------------------------------------------- CPU of the box */


/* ------------------------------------------------------- per-thread CPU */

#define THR_MAX 512
struct thr {
	pid_t tid;
	double cpu;
	char who[64];
};
struct thr_snap {
	struct thr t[THR_MAX];
	unsigned n;
};

/* CPU seconds of each thread of pid (/proc/PID/task/TID/stat), named
 * "who (comm)". */
static void thr_add(struct thr_snap *s, pid_t pid, const char *who)
{
	char dir[64];
	bench_strfmt(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	DIR *d = opendir(dir);
	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d)) && s->n < THR_MAX;) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char path[PATH_MAX], buf[1024];
		bench_strfmt(path, sizeof(path), "%s/%s/stat", dir, e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = 0;
		char *l = strchr(buf, '('), *r = strrchr(buf, ')');
		unsigned long ut = 0, st = 0;
		if (!l || !r || r < l ||
		    sscanf(r + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut,
			   &st) != 2)
			continue;
		struct thr *t = &s->t[s->n++];
		t->tid = (pid_t)atoi(e->d_name);
		t->cpu = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
		bench_strfmt(t->who, sizeof(t->who), "%s (%.*s)", who, (int)(r - l - 1), l + 1);
	}
	closedir(d);
}

static void thr_snap_take(struct cluster *k, struct thr_snap *s)
{
	s->n = 0;
	thr_add(s, getpid(), "client");
	thr_add(s, k->mds.ch.pid, "braid-mds");
	for (unsigned i = 0; i < k->nds; i++) {
		char who[32];
		bench_strfmt(who, sizeof(who), "braid-ds#%u", i);
		thr_add(s, k->ds[i].ch.pid, who);
	}
}

/* The thread that used the most CPU between a and b. */
static void thr_hottest(const struct thr_snap *a, const struct thr_snap *b, double secs,
			struct phase *p)
{
	for (unsigned i = 0; i < b->n; i++) {
		double before = 0;
		for (unsigned j = 0; j < a->n; j++)
			if (a->t[j].tid == b->t[i].tid)
				before = a->t[j].cpu;
		double u = secs > 0 ? (b->t[i].cpu - before) / secs : 0;
		if (u > p->hot_util) {
			p->hot_util = u;
			bench_strfmt(p->hot, sizeof(p->hot), "%s", b->t[i].who);
		}
	}
}

/* Run njobs at once and time them, with every process's CPU. */
static void phase_run(struct bench *b, struct cluster *k, struct job *jobs, unsigned njobs,
		      bool write, struct phase *p)
{
	memset(p, 0, sizeof(*p));
	static struct thr_snap ta, tb;
	thr_snap_take(k, &ta);
	unsigned long long jb0, jt0, jb1, jt1;
	bench_box_jiffies(&jb0, &jt0);
	struct ffc_stats s0, s1;
	ffc_stats_get(k->c, &s0);
	double cm0 = bench_proc_cpu_s(k->mds.ch.pid), cd0 = 0, cs0 = bench_self_cpu_s();
	for (unsigned i = 0; i < k->nds; i++)
		cd0 += bench_proc_cpu_s(k->ds[i].ch.pid);
	pthread_t th[THREADS_MAX];
	double t0 = bench_now_s();
	unsigned started = 0;
	for (unsigned i = 0; i < njobs; i++) {
		jobs[i].c = k->c;
		jobs[i].write = write;
		jobs[i].chunk = (size_t)b->o.chunk;
		if (pthread_create(&th[i], NULL, job_main, &jobs[i]))
			break;
		started++;
	}
	for (unsigned i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	double t1 = bench_now_s();
	thr_snap_take(k, &tb);
	thr_hottest(&ta, &tb, t1 - t0, p);
	bench_box_jiffies(&jb1, &jt1);
	p->box = jt1 > jt0 ? (double)(jb1 - jb0) / (double)(jt1 - jt0) : 0;
	double cm1 = bench_proc_cpu_s(k->mds.ch.pid), cd1 = 0, cs1 = bench_self_cpu_s();
	for (unsigned i = 0; i < k->nds; i++)
		cd1 += bench_proc_cpu_s(k->ds[i].ch.pid);
	ffc_stats_get(k->c, &s1);
	uint64_t bytes = 0;
	for (unsigned i = 0; i < njobs; i++)
		bytes += jobs[i].len;
	p->ok = started == njobs;
	if (!p->ok)
		bench_strfmt(p->why, sizeof(p->why), "could not start threads");
	for (unsigned i = 0; i < njobs && p->ok; i++) {
		if (jobs[i].err) {
			p->ok = false;
			bench_strfmt(p->why, sizeof(p->why), "%s: %s", jobs[i].what,
				     strerror(-jobs[i].err));
		}
	}
	p->secs = t1 - t0;
	p->mbps = p->secs > 0 ? (double)bytes / MB / p->secs : 0;
	p->cpu_mds = cm1 - cm0;
	p->cpu_ds = cd1 - cd0;
	p->cpu_self = cs1 - cs0;
	p->util =
	    p->secs > 0 ? (p->cpu_mds + p->cpu_ds + p->cpu_self) / (p->secs * (double)b->ncpu) : 0;
	p->ds_bytes =
	    write ? s1.ds_write_bytes - s0.ds_write_bytes : s1.ds_read_bytes - s0.ds_read_bytes;
	p->mds_bytes =
	    write ? s1.mds_write_bytes - s0.mds_write_bytes : s1.mds_read_bytes - s0.mds_read_bytes;
	for (unsigned i = 0; i < s1.ndev && i < FFC_STATS_DEV_MAX; i++) {
		uint64_t a = write ? s1.dev[i].write_bytes : s1.dev[i].read_bytes;
		uint64_t z =
		    i < s0.ndev ? (write ? s0.dev[i].write_bytes : s0.dev[i].read_bytes) : 0;
		if (a > z)
			p->ds_used++;
	}
}

/*
 * The many-files read, o->rounds times, each round just after a loopback
 * stream of its own: on a shared box the cost of moving a GiB drifts
 * over a run, so each round's CPU per GiB is set beside the loopback's
 * of the same moment, and the round of median ratio stands for the run
 * (r->p[P_READ]).  A round that fails ends them.
 */
static void read_rounds(struct bench *b, struct run *r, struct cluster *k, struct job *jobs)
{
	const struct opts *o = &b->o;
	static struct phase ph[ROUNDS_MAX];
	double ratio[ROUNDS_MAX];
	unsigned n = 0;
	r->nrounds = 0;
	for (unsigned i = 0; i < o->rounds; i++) {
		double mbps, lb = 0;
		if (!loopback_measure(o->lb_secs, &mbps, &lb))
			lb = 0;
		phase_run(b, k, jobs, o->files, false, &ph[i]);
		if (!ph[i].ok) {
			if (!n)
				r->p[P_READ] = ph[i];
			break;
		}
		ph[i].lb_cpu_gib = lb;
		r->rd_cpu_gib[i] = phase_cpu_gib(&ph[i]);
		double g = phase_gib(&ph[i]);
		r->rd_client_gib[i] = g > 0 ? ph[i].cpu_self / g : 0;
		r->rd_ds_gib[i] = g > 0 ? ph[i].cpu_ds / g : 0;
		r->lb_cpu_gib[i] = lb;
		ratio[i] = lb > 0 ? r->rd_cpu_gib[i] / lb : 0;
		n++;
	}
	r->nrounds = n;
	if (!n)
		return;
	/* the median: the round with as many ratios below it as above */
	unsigned med = 0;
	for (unsigned i = 0; i < n; i++) {
		unsigned below = 0, eq = 0;
		for (unsigned j = 0; j < n; j++) {
			below += ratio[j] < ratio[i];
			eq += ratio[j] == ratio[i];
		}
		if (below <= (n - 1) / 2 && below + eq > (n - 1) / 2) {
			med = i;
			break;
		}
	}
	r->p[P_READ] = ph[med];
}

static void run_one(struct bench *b, struct run *r)
{
	const struct opts *o = &b->o;
	struct cluster k;
	struct job *jobs = calloc(o->files > o->threads ? o->files : o->threads, sizeof(*jobs));
	if (!jobs) {
		bench_strfmt(r->why, sizeof(r->why), "out of memory");
		return;
	}
	/* (a) many files, whole-file placement: one thread per file */
	const char *whole = b->big_conf[0] ? "layout = whole" : NULL;
	if (cluster_start(b, &k, r->nds, "files", whole, r->why, sizeof(r->why))) {
		cluster_stop(&k);
		free(jobs);
		return;
	}
	r->started = true;
	for (int w = 1; w >= 0; w--) {
		for (unsigned i = 0; i < o->files; i++) {
			memset(&jobs[i], 0, sizeof(jobs[i]));
			bench_strfmt(jobs[i].path, sizeof(jobs[i].path), "/f%03u", i);
			jobs[i].file_id = i + 1;
			jobs[i].len = o->size;
			jobs[i].create = true;
		}
		if (w) {
			phase_run(b, &k, jobs, o->files, true, &r->p[P_WRITE]);
			if (!r->p[P_WRITE].ok)
				break;
			continue;
		}
		read_rounds(b, r, &k, jobs);
	}
	ffc_stats_get(k.c, &r->st[0]);
	cluster_stop(&k);
	if (!o->keep)
		bench_tree_remove(k.dir);

	/* (b) one large file on an MDS that stripes (when it can): threads on
	 * disjoint regions, each its own open */
	char why[256] = "";
	if (cluster_start(b, &k, r->nds, "big", b->big_conf[0] ? b->big_conf : NULL, why,
			  sizeof(why))) {
		bench_strfmt(r->p[P_BIG_WRITE].why, sizeof(r->p[P_BIG_WRITE].why), "%s", why);
		bench_strfmt(r->p[P_BIG_READ].why, sizeof(r->p[P_BIG_READ].why), "%s", why);
		cluster_stop(&k);
		free(jobs);
		return;
	}
	int err = 0;
	struct ffc_file *f = ffc_open(k.c, "/big", FFC_WRONLY | FFC_CREAT | FFC_TRUNC, 0644, &err);
	if (f)
		err = ffc_close(f);
	uint64_t region = (o->big / o->threads + MiB - 1) & ~(MiB - 1);
	unsigned n = 0;
	for (uint64_t off = 0; off < o->big && n < o->threads; off += region, n++) {
		memset(&jobs[n], 0, sizeof(jobs[n]));
		bench_strfmt(jobs[n].path, sizeof(jobs[n].path), "/big");
		jobs[n].file_id = 1000;
		jobs[n].off = off;
		jobs[n].len = o->big - off < region ? o->big - off : region;
	}
	for (int w = 1; w >= 0; w--) {
		struct phase *p = &r->p[w ? P_BIG_WRITE : P_BIG_READ];
		if (err) {
			bench_strfmt(p->why, sizeof(p->why), "create /big: %s", strerror(-err));
			continue;
		}
		phase_run(b, &k, jobs, n, w, p);
		if (!p->ok)
			break;
	}
	ffc_stats_get(k.c, &r->st[1]);
	free(jobs);
	cluster_stop(&k);
	if (!o->keep)
		bench_tree_remove(k.dir);
}

/* ------------------------------------------------------------------ output */

static struct run *run_of(struct bench *b, unsigned nds)
{
	for (unsigned i = 0; i < b->o.ncounts; i++)
		if (b->runs[i].nds == nds && b->runs[i].started)
			return &b->runs[i];
	return NULL;
}

static const struct phase *phase_of(struct bench *b, unsigned nds, int ph)
{
	struct run *r = run_of(b, nds);
	return r && r->p[ph].ok ? &r->p[ph] : NULL;
}

/* Were layouts used: LAYOUTGETs answered, and bytes at the data servers. */
static bool layouts_used(struct bench *b, uint64_t *lg, uint64_t *fb, uint64_t *ds, uint64_t *mds,
			 char *why, size_t len)
{
	*lg = *fb = *ds = *mds = 0;
	why[0] = 0;
	for (unsigned i = 0; i < b->o.ncounts; i++) {
		struct run *r = &b->runs[i];
		if (!r->started)
			continue;
		for (int k = 0; k < 2; k++) {
			const struct ffc_stats *st = &r->st[k];
			*lg += st->layoutget_ok;
			*fb += st->fallbacks;
			*ds += st->ds_write_bytes + st->ds_read_bytes;
			*mds += st->mds_write_bytes + st->mds_read_bytes;
			if (!why[0] && !st->pnfs && st->pnfs_why[0])
				bench_strfmt(why, len, "%s", st->pnfs_why);
			if (!why[0] && st->layoutget_last_err)
				bench_strfmt(why, len, "last LAYOUTGET error: nfsstat4 %d",
					     st->layoutget_last_err);
		}
	}
	return *lg > 0 && *ds > 0;
}

static void jnum(const char *key, bool have, double v, bool *first)
{
	printf("%s\"%s\":", *first ? "" : ",", key);
	*first = false;
	if (have)
		printf("%.3f", v);
	else
		printf("null");
}

/* {"1":x,"2":y,...} of a phase's MB/s (or its ratio to the 1-DS run). */
static void jcounts(struct bench *b, const char *key, int ph, bool ratio, bool *first)
{
	printf("%s\"%s\":{", *first ? "" : ",", key);
	*first = false;
	const struct phase *one = phase_of(b, 1, ph);
	bool f2 = true;
	for (unsigned i = 0; i < b->o.ncounts; i++) {
		unsigned n = b->o.counts[i];
		if (ratio && n == 1)
			continue;
		const struct phase *p = phase_of(b, n, ph);
		char k[8];
		bench_strfmt(k, sizeof(k), "%u", n);
		if (ratio)
			jnum(k, p && one && one->mbps > 0,
			     p && one && one->mbps > 0 ? p->mbps / one->mbps : 0, &f2);
		else
			jnum(k, p != NULL, p ? p->mbps : 0, &f2);
	}
	printf("}");
}

/* A phase's figure: false when it has none. */
static bool fig_util(const struct phase *p, double *v)
{
	*v = p->util;
	return true;
}
static bool fig_box(const struct phase *p, double *v)
{
	*v = p->box;
	return true;
}
static bool fig_cpu_gib(const struct phase *p, double *v)
{
	*v = phase_cpu_gib(p);
	return phase_gib(p) > 0;
}

/* {"1":x,"2":y,...}: fig of a phase for each data-server count. */
static void jper(struct bench *b, const char *key, int ph,
		 bool (*fig)(const struct phase *p, double *v), bool *first)
{
	printf("%s\"%s\":{", *first ? "" : ",", key);
	*first = false;
	bool f2 = true;
	for (unsigned i = 0; i < b->o.ncounts; i++) {
		const struct phase *p = phase_of(b, b->o.counts[i], ph);
		char k[8];
		bench_strfmt(k, sizeof(k), "%u", b->o.counts[i]);
		double v = 0;
		bool ok = p && fig(p, &v);
		jnum(k, ok, ok ? v : 0, &f2);
	}
	printf("}");
}

static void jstr(const char *key, const char *v, bool *first)
{
	printf("%s\"%s\":", *first ? "" : ",", key);
	*first = false;
	if (!v) {
		printf("null");
		return;
	}
	putchar('"');
	for (const char *s = v; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf(" ");
		else
			putchar(*s);
	}
	putchar('"');
}

#define CPU_BOUND 0.85 /* all processes together use this share of the cores */
#define HOT_BOUND 0.90 /* one thread uses this share of a core */

static void report(struct bench *b)
{
	const struct opts *o = &b->o;
	uint64_t lg, fb, dsb, mdsb;
	char lwhy[256];
	bool used = layouts_used(b, &lg, &fb, &dsb, &mdsb, lwhy, sizeof(lwhy));
	printf(
	    "bench/pnfs: %u files x %llu MiB and one %llu MiB file, %u threads, %llu MiB per "
	    "read or write call, 1 MiB RPCs, up to %u in flight per open, %u client loop(s), %ld "
	    "cores\n",
	    o->files, (unsigned long long)(o->size / MiB), (unsigned long long)(o->big / MiB),
	    o->threads, (unsigned long long)(o->chunk / MiB), o->inflight, o->loops, b->ncpu);
	if (b->loopback_ok)
		printf("loopback TCP ceiling (1 stream, 1 MiB writes): %.0f MB/s\n",
		       b->loopback_mbps);
	else
		printf("loopback TCP ceiling: not measured\n");
	if (!used)
		printf(
		    "NOTE: NO LAYOUTS were used (%s): every byte went through braid-mds, which "
		    "proxies it to the data server; the DS-count columns measure that proxy, not "
		    "pNFS.\n",
		    lwhy[0] ? lwhy : "no LAYOUTGET succeeded");
	else
		printf(
		    "layouts used: %llu LAYOUTGETs answered, %.1f%% of the bytes straight to the "
		    "data servers, %llu fallbacks to the MDS\n",
		    (unsigned long long)lg,
		    100.0 * (double)dsb / (double)(dsb + mdsb ? dsb + mdsb : 1),
		    (unsigned long long)fb);
	printf("%-16s %4s %8s %8s %8s %5s %5s %7s  %s\n", "phase", "DSes", "MB/s", "vs 1 DS",
	       "vs loop", "ours", "box", "DS used", "busiest thread");
	bool any_cpu_bound = false, any_hot = false;
	double max_others = 0;
	for (int ph = 0; ph < NPHASES; ph++) {
		const struct phase *one = phase_of(b, 1, ph);
		for (unsigned i = 0; i < o->ncounts; i++) {
			struct run *r = &b->runs[i];
			const struct phase *p = &r->p[ph];
			if (!r->started || !p->ok) {
				printf("%-16s %4u %10s   (%s)\n", phase_names[ph], r->nds, "null",
				       !r->started ? r->why
				       : p->why[0] ? p->why
						   : "not run");
				continue;
			}
			char vs1[16] = "-", vsl[16] = "-";
			if (one && one->mbps > 0 && r->nds != 1)
				bench_strfmt(vs1, sizeof(vs1), "%.2fx", p->mbps / one->mbps);
			if (b->loopback_ok)
				bench_strfmt(vsl, sizeof(vsl), "%.2f", p->mbps / b->loopback_mbps);
			bool bound = p->util >= CPU_BOUND || p->box >= CPU_BOUND;
			bool hot = p->hot_util >= HOT_BOUND;
			any_cpu_bound |= bound && r->nds > 1;
			any_hot |= hot && r->nds > 1;
			if (p->box - p->util > max_others)
				max_others = p->box - p->util;
			printf("%-16s %4u %8.0f %8s %8s %4.0f%% %4.0f%% %7u  %s %.0f%%%s\n",
			       phase_names[ph], r->nds, p->mbps, vs1, vsl, 100 * p->util,
			       100 * p->box, p->ds_used, p->hot, 100 * p->hot_util,
			       bound ? "  [box CPU-bound]"
			       : hot ? "  [one thread saturated]"
				     : "");
		}
	}
	/* CPU per GiB of every process on the path, beside the loopback's */
	if (b->loopback_ok)
		printf("CPU-seconds per GiB moved (the loopback stream's sender + receiver: %.3f)\n",
		       b->loopback_cpu_gib);
	printf("%-16s %4s %8s %8s %8s %8s %8s\n", "phase", "DSes", "client", "mds", "DSes",
	       "total", "vs loop");
	for (int ph = 0; ph < NPHASES; ph++)
		for (unsigned i = 0; i < o->ncounts; i++) {
			const struct phase *p = phase_of(b, o->counts[i], ph);
			double g = p ? phase_gib(p) : 0;
			if (!p || g <= 0)
				continue;
			char vsl[16] = "-";
			double lb = phase_lb_cpu_gib(b, p);
			if (lb > 0)
				bench_strfmt(vsl, sizeof(vsl), "%.2f", phase_cpu_gib(p) / lb);
			printf("%-16s %4u %8.3f %8.3f %8.3f %8.3f %8s\n", phase_names[ph],
			       o->counts[i], p->cpu_self / g, p->cpu_mds / g, p->cpu_ds / g,
			       phase_cpu_gib(p), vsl);
		}
	/* the many-files read's rounds, each beside its own loopback */
	printf("files read, round by round: CPU-s per GiB (client + DSes + MDS), the loopback's "
	       "just before it, ratio (the median round is the row above)\n");
	for (unsigned i = 0; i < o->ncounts; i++) {
		const struct run *r = &b->runs[i];
		if (!r->started || !r->nrounds)
			continue;
		printf("  %u DS:\n", r->nds);
		for (unsigned j = 0; j < r->nrounds; j++) {
			printf("    (%.3f+%.3f) %.3f/", r->rd_client_gib[j], r->rd_ds_gib[j],
			       r->rd_cpu_gib[j]);
			if (r->lb_cpu_gib[j] > 0)
				printf("%.3f=%.2f", r->lb_cpu_gib[j],
				       r->rd_cpu_gib[j] / r->lb_cpu_gib[j]);
			else
				printf("-");
			printf("\n");
		}
	}
	/* striping: only when the large file actually spread over servers */
	const struct phase *bw4 = NULL;
	for (unsigned i = 0; i < o->ncounts; i++)
		if (o->counts[i] > 1 && phase_of(b, o->counts[i], P_BIG_WRITE))
			bw4 = phase_of(b, o->counts[i], P_BIG_WRITE);
	bool striped = bw4 && bw4->ds_used > 1;
	char swhy[512];
	if (striped)
		swhy[0] = 0;
	else if (!b->big_conf[0])
		bench_strfmt(
		    swhy, sizeof(swhy),
		    "braid-mds --config-keys lists no [mds] layout setting: each file lives on "
		    "one data server (whole-file placement)%s",
		    bw4 ? ", and the large file's I/O reached 1 data server" : "");
	else
		bench_strfmt(swhy, sizeof(swhy),
			     "with \"%s\" the large file's I/O reached %u data server(s)%s",
			     b->big_conf, bw4 ? bw4->ds_used : 0, bw4 ? "" : " (not measured)");
	if (!striped)
		printf("striping: null (%s)\n", swhy);
	if (any_cpu_bound)
		printf(
		    "NOTE: with %ld cores shared by the client, braid-mds and the data servers, "
		    "runs marked [box CPU-bound] (ours or the box's CPU use >= 85%%) are limited "
		    "by the box, not by the number of data servers.\n",
		    b->ncpu);
	if (max_others >= 0.15)
		printf("NOTE: the box is shared: other processes (and the kernel's own threads) "
		       "used up "
		       "to %.0f%% of its cores during the phases (\"box\" minus \"ours\").\n",
		       100 * max_others);
	if (any_hot)
		printf("NOTE: runs marked [one thread saturated] are limited by that thread (a "
		       "core's worth of work in one place), not by the number of data servers.\n");

	/* the JSON line */
	bool first = true;
	printf("{");
	jstr("bench", "pnfs", &first);
	printf(",\"quick\":%s,\"cores\":%ld,\"files\":%u,\"file_MiB\":%llu,\"big_MiB\":%llu,"
	       "\"threads\":%u,\"chunk_MiB\":%llu",
	       o->quick ? "true" : "false", b->ncpu, o->files, (unsigned long long)(o->size / MiB),
	       (unsigned long long)(o->big / MiB), o->threads, (unsigned long long)(o->chunk / MiB));
	jnum("loopback_MBps", b->loopback_ok, b->loopback_mbps, &first);
	jcounts(b, "write_MBps", P_WRITE, false, &first);
	jcounts(b, "read_MBps", P_READ, false, &first);
	jcounts(b, "write_vs_1ds", P_WRITE, true, &first);
	jcounts(b, "read_vs_1ds", P_READ, true, &first);
	const struct phase *r4 = phase_of(b, 4, P_READ), *w4 = phase_of(b, 4, P_WRITE);
	jnum("read_4ds_vs_loopback", r4 && b->loopback_ok,
	     r4 && b->loopback_ok ? r4->mbps / b->loopback_mbps : 0, &first);
	jnum("write_4ds_vs_loopback", w4 && b->loopback_ok,
	     w4 && b->loopback_ok ? w4->mbps / b->loopback_mbps : 0, &first);
	jcounts(b, "big_write_MBps", P_BIG_WRITE, false, &first);
	jcounts(b, "big_read_MBps", P_BIG_READ, false, &first);
	printf(",\"big_ds_used\":{");
	for (unsigned i = 0; i < o->ncounts; i++) {
		const struct phase *p = phase_of(b, o->counts[i], P_BIG_WRITE);
		printf("%s\"%u\":", i ? "," : "", o->counts[i]);
		if (p)
			printf("%u", p->ds_used);
		else
			printf("null");
	}
	printf("}");
	if (striped) {
		printf(",\"striping\":{");
		bool f2 = true;
		jstr("mds_conf", b->big_conf, &f2);
		jcounts(b, "write_MBps", P_BIG_WRITE, false, &f2);
		jcounts(b, "read_MBps", P_BIG_READ, false, &f2);
		printf("}");
		jstr("striping_why", NULL, &first);
	} else {
		printf(",\"striping\":null");
		jstr("striping_why", swhy, &first);
	}
	printf(",\"layouts_used\":%s", used ? "true" : "false");
	jstr("layouts_why", used ? NULL : (lwhy[0] ? lwhy : "no LAYOUTGET succeeded"), &first);
	printf(",\"layoutgets\":%llu,\"fallbacks\":%llu", (unsigned long long)lg,
	       (unsigned long long)fb);
	jnum("ds_bytes_fraction", dsb + mdsb > 0,
	     dsb + mdsb ? (double)dsb / (double)(dsb + mdsb) : 0, &first);
	jper(b, "cpu_util_write", P_WRITE, fig_util, &first);
	jper(b, "cpu_util_read", P_READ, fig_util, &first);
	jnum("loopback_cpu_s_per_gib", b->loopback_ok, b->loopback_cpu_gib, &first);
	jper(b, "read_cpu_s_per_gib", P_READ, fig_cpu_gib, &first);
	jper(b, "write_cpu_s_per_gib", P_WRITE, fig_cpu_gib, &first);
	jper(b, "big_read_cpu_s_per_gib", P_BIG_READ, fig_cpu_gib, &first);
	jper(b, "big_write_cpu_s_per_gib", P_BIG_WRITE, fig_cpu_gib, &first);
	double lb4 = r4 ? phase_lb_cpu_gib(b, r4) : 0;
	bool r4c = r4 && phase_gib(r4) > 0 && lb4 > 0;
	jnum("read_cpu_per_gib_vs_loopback", r4c, r4c ? phase_cpu_gib(r4) / lb4 : 0, &first);
	printf(",\"read_cpu_vs_loopback_rounds\":{");
	for (unsigned i = 0, f2 = 1; i < o->ncounts; i++) {
		const struct run *r = &b->runs[i];
		if (!r->started)
			continue;
		printf("%s\"%u\":[", f2 ? "" : ",", r->nds);
		f2 = 0;
		for (unsigned j = 0; j < r->nrounds; j++) {
			if (r->lb_cpu_gib[j] > 0)
				printf("%s%.3f", j ? "," : "", r->rd_cpu_gib[j] / r->lb_cpu_gib[j]);
			else
				printf("%snull", j ? "," : "");
		}
		printf("]");
	}
	printf("}");
	if (r4 && phase_gib(r4) > 0) {
		double g = phase_gib(r4);
		jnum("read_4ds_client_cpu_s_per_gib", true, r4->cpu_self / g, &first);
		jnum("read_4ds_mds_cpu_s_per_gib", true, r4->cpu_mds / g, &first);
		jnum("read_4ds_ds_cpu_s_per_gib", true, r4->cpu_ds / g, &first);
	}
	jper(b, "box_busy_write", P_WRITE, fig_box, &first);
	jper(b, "box_busy_read", P_READ, fig_box, &first);
	printf(",\"cpu_bound\":%s,\"thread_bound\":%s", any_cpu_bound ? "true" : "false",
	       any_hot ? "true" : "false");
	printf("}\n");
}

/* ------------------------------------------------------------------- main */

static void usage(void)
{
	fprintf(
	    stderr,
	    "usage: pnfs [--quick] [--files N] [--size SIZE] [--big SIZE] [--threads N]\n"
	    "            [--counts 1,2,4] [--loops N] [--inflight N] [--seconds S] [--rounds R]\n"
	    "            [--chunk SIZE] [--dir PATH]\n"
	    "            [--keep] [--big-layout whole|segments|striped]\n"
	    "            [--mds-conf \"key = value\"]...\n"
	    "            [--braid-mds PATH] [--braid-ds PATH]\n");
	exit(2);
}

static bool size_parse(const char *s, uint64_t *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || v <= 0)
		return false;
	switch (*end) {
	case 'k':
	case 'K':
		v *= 1024;
		end++;
		break;
	case 'm':
	case 'M':
		v *= MiB;
		end++;
		break;
	case 'g':
	case 'G':
		v *= 1024.0 * MiB;
		end++;
		break;
	default:
		break;
	}
	if (*end)
		return false;
	*out = ((uint64_t)v + MiB - 1) & ~(MiB - 1); /* whole MiB */
	return true;
}

static void opts_parse(struct opts *o, int argc, char **argv)
{
	bool have_files = false, have_size = false, have_big = false, have_threads = false,
	     have_secs = false, have_rounds = false;
	o->dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	o->counts[0] = 1, o->counts[1] = 2, o->counts[2] = 4;
	o->ncounts = 3;
	o->loops = 1;
	o->inflight = 16;
	o->chunk = 2 * MiB;
	bench_exe_sibling("braid-mds", o->mds_path, sizeof(o->mds_path));
	bench_exe_sibling("braid-ds", o->ds_path, sizeof(o->ds_path));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--quick")) {
			o->quick = true;
			continue;
		}
		if (!strcmp(a, "--keep")) {
			o->keep = true;
			continue;
		}
		if (!v)
			usage();
		i++;
		if (!strcmp(a, "--files")) {
			o->files = (unsigned)atoi(v);
			have_files = o->files > 0 && o->files <= THREADS_MAX;
			if (!have_files)
				usage();
		} else if (!strcmp(a, "--threads")) {
			o->threads = (unsigned)atoi(v);
			have_threads = o->threads > 0 && o->threads <= THREADS_MAX;
			if (!have_threads)
				usage();
		} else if (!strcmp(a, "--size")) {
			if (!(have_size = size_parse(v, &o->size)))
				usage();
		} else if (!strcmp(a, "--big")) {
			if (!(have_big = size_parse(v, &o->big)))
				usage();
		} else if (!strcmp(a, "--seconds")) {
			o->lb_secs = atof(v);
			if (!(have_secs = o->lb_secs > 0))
				usage();
		} else if (!strcmp(a, "--chunk")) {
			if (!size_parse(v, &o->chunk) || o->chunk > 256 * MiB)
				usage();
		} else if (!strcmp(a, "--rounds")) {
			o->rounds = (unsigned)atoi(v);
			if (!(have_rounds = o->rounds >= 1 && o->rounds <= ROUNDS_MAX))
				usage();
		} else if (!strcmp(a, "--inflight")) {
			o->inflight = (unsigned)atoi(v);
			if (!o->inflight || o->inflight > 256)
				usage();
		} else if (!strcmp(a, "--loops")) {
			o->loops = (unsigned)atoi(v);
			if (!o->loops || o->loops > 64)
				usage();
		} else if (!strcmp(a, "--counts")) {
			o->ncounts = 0;
			for (const char *p = v; *p && o->ncounts < NCOUNTS_MAX;) {
				unsigned n = (unsigned)strtoul(p, (char **)&p, 10);
				if (n < 1 || n > NDS_MAX)
					usage();
				o->counts[o->ncounts++] = n;
				if (*p == ',')
					p++;
				else if (*p)
					usage();
			}
			if (!o->ncounts)
				usage();
		} else if (!strcmp(a, "--dir")) {
			o->dir = v;
		} else if (!strcmp(a, "--big-layout")) {
			if (strcmp(v, "whole") && strcmp(v, "segments") && strcmp(v, "striped"))
				usage();
			o->big_layout = v;
		} else if (!strcmp(a, "--mds-conf")) {
			if (o->nmds_conf == CONF_MAX)
				usage();
			o->mds_conf[o->nmds_conf++] = v;
		} else if (!strcmp(a, "--braid-mds")) {
			bench_strfmt(o->mds_path, sizeof(o->mds_path), "%s", v);
		} else if (!strcmp(a, "--braid-ds")) {
			bench_strfmt(o->ds_path, sizeof(o->ds_path), "%s", v);
		} else {
			usage();
		}
	}
	if (!have_files)
		o->files = o->quick ? 4 : 8;
	if (!have_size)
		o->size = o->quick ? 16 * MiB : 256 * MiB;
	if (!have_big)
		o->big = o->quick ? 64 * MiB : 1024 * MiB;
	if (!have_threads)
		o->threads = o->files;
	if (!have_secs)
		o->lb_secs = o->quick ? 1 : 2;
	if (!have_rounds)
		o->rounds = o->quick ? 1 : 5;
}

/* A key of braid-mds --config-keys whose name speaks of striping. */
static void striping_key_find(struct bench *b)
{
	char cmd[PATH_MAX + 32];
	bench_strfmt(cmd, sizeof(cmd), "'%s' --config-keys 2>/dev/null", b->o.mds_path);
	FILE *p = popen(cmd, "r");
	if (!p)
		return;
	char line[1024];
	while (fgets(line, sizeof(line), p)) {
		char sect[64], key[128];
		if (line[0] == '#' || sscanf(line, "%63s %127s", sect, key) != 2)
			continue;
		if (!strcmp(key, "layout") || strstr(key, "stripe") || strstr(key, "segment")) {
			size_t l = strlen(b->striping_key);
			bench_strfmt(b->striping_key + l, sizeof(b->striping_key) - l, "%s[%s] %s",
				     l ? ", " : "", sect, key);
		}
	}
	pclose(p);
}

int main(int argc, char **argv)
{
	static struct bench b;
	bench_init("bench/pnfs");
	opts_parse(&b.o, argc, argv);
	b.ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	for (const char *const *x = (const char *const[]){b.o.mds_path, b.o.ds_path, NULL}; *x;
	     x++) {
		if (access(*x, X_OK)) {
			fprintf(stderr, "bench/pnfs: %s: %s (build it first)\n", *x,
				strerror(errno));
			return 99;
		}
	}
	bench_strfmt(b.work, sizeof(b.work), "%s/braid-bench-pnfs.XXXXXX", b.o.dir);
	if (!mkdtemp(b.work)) {
		fprintf(stderr, "bench/pnfs: mkdtemp %s: %s\n", b.work, strerror(errno));
		return 99;
	}
	struct statvfs vf;
	double need = 1.2 * (double)(b.o.files * b.o.size + b.o.big);
	if (!statvfs(b.work, &vf) && (double)vf.f_bavail * (double)vf.f_frsize < need) {
		fprintf(stderr, "bench/pnfs: %s has %.1f GiB free, needs about %.1f GiB\n", b.work,
			(double)vf.f_bavail * (double)vf.f_frsize / (1024.0 * MiB),
			need / (1024.0 * MiB));
		rmdir(b.work);
		return 99;
	}
	striping_key_find(&b);
	/* (b)'s MDS stripes new files when it has the setting */
	if (strstr(b.striping_key, "] layout"))
		bench_strfmt(b.big_conf, sizeof(b.big_conf), "layout = %s",
			     b.o.big_layout ? b.o.big_layout : "segments");
	/* the ceiling first, while nothing else of ours runs */
	b.loopback_ok = loopback_measure(b.o.lb_secs, &b.loopback_mbps, &b.loopback_cpu_gib);
	for (unsigned i = 0; i < b.o.ncounts; i++) {
		struct run *r = &b.runs[i];
		r->nds = b.o.counts[i];
		fprintf(stderr, "bench/pnfs: %u data server(s)...\n", r->nds);
		run_one(&b, r);
		if (!r->started)
			fprintf(stderr, "bench/pnfs: %u data server(s): %s\n", r->nds, r->why);
	}
	report(&b);
	if (b.o.keep)
		fprintf(stderr, "bench/pnfs: kept %s\n", b.work);
	else
		bench_tree_remove(b.work);
	return 0;
}
