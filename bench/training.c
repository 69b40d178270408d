/* SPDX-License-Identifier: MIT */
/*
 * bench/training: the MLPerf Storage training workloads as DLIO emulates
 * them (issue 20): compute is a sleep, so no GPU is needed, and the score
 * is the largest number of emulated accelerators whose accelerator
 * utilisation (AU: compute time over wall time) keeps its target.
 *
 *   workload   sample                      per step          AU target
 *   unet3d     a file, 146.6 MB (sd 68.3)  7, 0.323 s        90%
 *   resnet50   114.7 KB records, 1251 a    400, 0.224 s      90%
 *              file (TFRecord), in order
 *   cosmoflow  a file, 2.83 MB             1, 0.0035 s       70%
 *   retinanet  a file, 323 KB              24, 0.04755 s     85%
 *
 * (H100 compute times; 4 reader threads per accelerator for every
 * workload, as unet3d's configuration has.)  The model (training_dlio.c):
 * each accelerator's readers read samples into its prefetch queue (up to
 * two batches) in its own random file order, whole files or a record file
 * from start to end; the accelerator takes a batch and sleeps for the
 * compute time.  N accelerators share one mount of the server (one ffc,
 * as a host's processes share its kernel client).  A trial starts N,
 * waits until every one has its first batch (the start-up fill, which a
 * 500-step run amortises, is left out), then measures a window
 * (--window, 3 s; 1.5 s with --quick): each accelerator's AU is its
 * compute time inside the window over the window, and N is sustained when
 * the mean AU over the N keeps the target.  The search runs N = 1, 2, 4,
 * ... (to 64) while it is sustained, then bisects; every trial's AU is
 * reported.  Because one client on this box may not sustain even one
 * unet3d accelerator, a trial also gives an accelerator capacity: samples
 * consumed per second in the window (each second of compute consumes
 * batch / compute samples) over what one accelerator consumes at the
 * target (batch x target / compute), i.e. the sum of the N AUs over the
 * target; a search's capacity is its best trial's.  <w>_accel_vs_ganesha compares the integer
 * counts when both are at least 1 (basis "integer"), else the capacities (basis "capacity").
 *
 * The box is small, so the data sets are scaled down, and say so: unet3d's
 * samples (sizes drawn from the normal distribution above, kept within 10%
 * of the mean and mean + 2 sd, then brought back to the mean as a whole)
 * and its compute time are both scaled by 1/4
 * (1/8 with --quick), which keeps the bytes per second one accelerator
 * demands the real workload's; resnet50's files hold 313 (156) of their
 * 1251 records; cosmoflow's and retinanet's files are their real size.
 * File counts are in the table and the JSON.  Reads come from the page
 * cache of each server (the data sets are written just before and fit in
 * memory): both servers alike.
 *
 * The servers, both up for the whole run and measured in turn, in rounds
 * (--rounds, 5; 3 with --quick; within a round each workload runs on
 * braid, then on Ganesha, then the next workload), every round reported;
 * a figure over the rounds is their median (the lower middle one for an
 * even count), so that one round slowed by another load on a shared box
 * does not decide it:
 *
 *  - braid: braid-mds and 4 braid-ds as child processes (bench/cluster.h),
 *    the data sets under a directory given the policy
 *    segments,segment_size=16M,width=4 (the mode braidctl(8)'s example
 *    gives a data set directory, with braid.conf's default segment size,
 *    round-robin over all 4 data servers, one copy): a file larger than a
 *    segment is read from several servers at once, a smaller one lives on
 *    one; read and written through ffclient's pNFS path (flexfiles
 *    layouts, I/O straight to the data servers);
 *  - NFS-Ganesha (bench/ganesha.h; FSAL VFS over a directory of the work
 *    directory, NFSv4.1, MaxRead/MaxWrite 1 MiB), mounted by the same
 *    client with the same options: it offers no flexfiles layouts, so the
 *    client reads and writes through plain NFSv4.1.  Without ganesha.nfsd
 *    (or root) the bench says why, runs braid alone and the ratios are null.
 *
 * Then each round's checkpoint phase, on each server: 4 writers, each a
 * file of --ckpt-size (512 MiB; 256 MiB with --quick) written with
 * ffc_pwrite and ffc_fsync (COMMIT: both servers put it on the disk), GB/s
 * from the first open to the last fsync.
 *
 * Usage: training [--quick] [--rounds N] [--window S] [--ckpt-size SIZE]
 *                 [--work DIR] [--keep]
 *                 [--braid-mds PATH] [--braid-ds PATH] [--braidctl PATH]
 * Output: a table with every trial and round, then one line of JSON.  The
 * exit status is 1 when a server failed during the run.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/cluster.h"
#include "bench/ganesha.h"
#include "bench/training.h"
#include "client/ffclient.h"

#define MB	     1e6
#define MiB	     (1ull << 20)
#define ROUNDS_MAX   10
#define NDS	     4
#define POLICY	     "segments,segment_size=16M,width=4"
#define POLICY_SAYS  "segments (16 MiB segments round-robin over all 4 data servers)"
#define TOP	     "/training"
#define CKPT_DIR     TOP "/checkpoint"
#define CKPT_WRITERS 4
#define WRITERS	     4	  /* threads writing a data set */
#define WARMUP_MAX_S 20.0 /* a trial's start-up, at most */

enum { W_UNET3D, W_RESNET50, W_COSMOFLOW, W_RETINANET, W_COUNT };

/* MLPerf Storage's DLIO configurations (H100); research note section 1. */
static const struct tr_workload workloads[W_COUNT] = {
    [W_UNET3D] = {"unet3d", 146.6, 68.3, 1, 7, 0.323, 0.90, 4},
    [W_RESNET50] = {"resnet50", 0.1147, 0, 1251, 400, 0.224, 0.90, 4},
    [W_COSMOFLOW] = {"cosmoflow", 2.83, 0, 1, 1, 0.0035, 0.70, 4},
    [W_RETINANET] = {"retinanet", 0.323, 0, 1, 24, 0.04755, 0.85, 4},
};

/* How each is scaled here: samples and compute times by scale, records
 * per file, files in the data set. */
struct scale {
	double scale;
	unsigned spf, nfiles;
};
static const struct scale scales[2][W_COUNT] = {
    {{1.0 / 4, 1, 32}, {1, 313, 12}, {1, 1, 384}, {1, 1, 1024}}, /* default */
    {{1.0 / 8, 1, 16}, {1, 156, 12}, {1, 1, 192}, {1, 1, 512}},	 /* --quick */
};

/* ---------------------------------------------------------------- options */

struct opts {
	bool quick, keep;
	unsigned rounds;
	double window_s;
	uint64_t ckpt_bytes;
	const char *work;
	struct bench_cluster_opts cl;
};

static void usage(void)
{
	fprintf(stderr, "usage: training [--quick] [--rounds N] [--window S] [--ckpt-size SIZE]\n"
			"                [--work DIR] [--keep]\n"
			"                [--braid-mds PATH] [--braid-ds PATH] [--braidctl PATH]\n");
	exit(2);
}

static void opts_parse(struct opts *o, int argc, char **argv)
{
	bool have_rounds = false, have_window = false, have_ckpt = false;
	const char *tmp = getenv("TMPDIR");
	memset(o, 0, sizeof(*o));
	o->rounds = 5;
	o->window_s = 3;
	o->ckpt_bytes = 512 * MiB;
	o->work = tmp && *tmp ? tmp : "/var/tmp";
	bench_cluster_opts_init(&o->cl);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--quick")) {
			o->quick = true;
		} else if (!strcmp(a, "--keep")) {
			o->keep = true;
		} else if (!v) {
			usage();
		} else if (!strcmp(a, "--rounds")) {
			if (!bench_uint_parse(v, 1, ROUNDS_MAX, &o->rounds))
				usage();
			have_rounds = true;
			i++;
		} else if (!strcmp(a, "--window")) {
			o->window_s = atof(v);
			if (o->window_s < 0.2 || o->window_s > 600)
				usage();
			have_window = true;
			i++;
		} else if (!strcmp(a, "--ckpt-size")) {
			if (!bench_size_parse(v, &o->ckpt_bytes) || o->ckpt_bytes < MiB)
				usage();
			have_ckpt = true;
			i++;
		} else if (!strcmp(a, "--work")) {
			o->work = v;
			i++;
		} else if (bench_cluster_opts_arg(&o->cl, a, v)) {
			i++;
		} else {
			usage();
		}
	}
	if (o->quick) {
		if (!have_rounds)
			o->rounds = 3;
		if (!have_window)
			o->window_s = 1.5;
		if (!have_ckpt)
			o->ckpt_bytes = 256 * MiB;
	}
}

/* ---------------------------------------------------------------- servers */

enum { S_BRAID, S_GANESHA, S_COUNT };

/* One server under test and what was measured on it. */
struct server {
	const char *name;
	bool up;	   /* started and mounted, and still running */
	char why[512];	   /* why not */
	struct ffc *c;	   /* the one mount every phase uses */
	bool stuck;	   /* threads were left in calls to it: c is never unmounted */
	double write_mbps; /* the data sets' write */
	struct tr_search res[ROUNDS_MAX][W_COUNT];
	bool ckpt_ok[ROUNDS_MAX];
	double ckpt_gbps[ROUNDS_MAX];
	char ckpt_why[256];
	struct ffc_stats st; /* the mount's counters, at the end */
};

/* The bench's state: the main thread's. */
static struct {
	struct opts o;
	char work[PATH_MAX];
	struct bench_cluster *k;
	struct bench_ganesha g;
	struct server s[S_COUNT];
	struct tr_dataset ds[W_COUNT]; /* the same on both servers */
	uint8_t *wbuf;		       /* what every write writes */
	unsigned nrounds;	       /* rounds run */
	double run_s;
} b;

/* s is down: what (a process of it, log its log) exited with status st. */
static void server_down(struct server *s, const char *what, int st, const char *log)
{
	char last[300], sb[64];
	bench_status_str(st, sb, sizeof(sb));
	bench_log_tail_errors(log, s == &b.s[S_GANESHA] ? bench_ganesha_err_marks : NULL, last,
			      sizeof(last));
	bench_strfmt(s->why, sizeof(s->why), "%s exited during the run (%s); its log: %s", what, sb,
		     last[0] ? last : "nothing logged");
	s->up = false;
	fprintf(stderr, "%s: %s: %s\n", bench_prog, s->name, s->why);
}

/* Whether s's processes all still run; when not, s is down and says why. */
static bool server_alive(struct server *s)
{
	int st;
	char what[64];
	if (!s->up)
		return false;
	if (s == &b.s[S_GANESHA]) {
		if (bench_child_exited(&b.g.ch, &st))
			server_down(s, "ganesha.nfsd", st, b.g.log);
		return s->up;
	}
	if (bench_child_exited(&b.k->mds, &st))
		server_down(s, "braid-mds", st, b.k->mds_log);
	for (unsigned i = 0; s->up && i < b.k->nstarted; i++)
		if (bench_child_exited(&b.k->ds[i].ch, &st)) {
			bench_strfmt(what, sizeof(what), "braid-ds %s", b.k->ds[i].host);
			server_down(s, what, st, b.k->ds[i].log);
		}
	return s->up;
}

static bool server_alive_cb(void *arg)
{
	return server_alive(arg);
}

static void braid_up(void)
{
	struct server *s = &b.s[S_BRAID];
	char dir[PATH_MAX + 16];
	if (!bench_cluster_opts_check(&b.o.cl, s->why, sizeof(s->why)))
		return;
	bench_strfmt(dir, sizeof(dir), "%s/cluster", b.work);
	char why[400];
	if (bench_cluster_start(&b.o.cl, dir, NDS, &b.k, why, sizeof(why))) {
		bench_strfmt(s->why, sizeof(s->why), "the cluster: %s", why);
		return;
	}
	if (bench_cluster_dir_make(b.k, TOP, POLICY, why, sizeof(why))) {
		bench_strfmt(s->why, sizeof(s->why), "%s", why);
		return;
	}
	int err = 0;
	if (!(s->c = bench_cluster_mount(b.k, &err))) {
		bench_strfmt(s->why, sizeof(s->why), "ffclient mount of braid-mds: %s",
			     strerror(-err));
		return;
	}
	s->up = true;
}

static void ganesha_up(struct nfsd_server *eng)
{
	struct server *s = &b.s[S_GANESHA];
	char exe[PATH_MAX], dir[PATH_MAX + 16], export_dir[PATH_MAX + 32];
	if (bench_ganesha_find(exe, sizeof(exe), s->why, sizeof(s->why)))
		return;
	bench_strfmt(dir, sizeof(dir), "%s/ganesha", b.work);
	bench_strfmt(export_dir, sizeof(export_dir), "%s/export", dir);
	/* the same I/O size as braid's data servers give the client */
	struct bench_ganesha_cfg cfg = {.v4 = true, .max_io = 1u << 20};
	if (bench_ganesha_init(&b.g, dir, export_dir, s->why, sizeof(s->why)) ||
	    bench_ganesha_start(eng, &b.g, exe, &cfg, s->why, sizeof(s->why)))
		return;
	/* bench_cluster_mount's options: ffc_opts defaults */
	struct ffc_opts fo = {0};
	int err = 0;
	if (!(s->c = ffc_mount("127.0.0.1", b.g.port, &fo, &err))) {
		bench_strfmt(s->why, sizeof(s->why), "ffclient mount of ganesha.nfsd: %s",
			     strerror(-err));
		return;
	}
	int rc = ffc_mkdir(s->c, TOP, 0755);
	if (rc) {
		bench_strfmt(s->why, sizeof(s->why), "mkdir %s on ganesha: %s", TOP, strerror(-rc));
		return;
	}
	s->up = true;
}

/* ---------------------------------------------------------------- data sets */

/* A normal draw (Box-Muller) from the xorshift sequence. */
static double normal_draw(uint64_t *rng)
{
	double u1 = ((double)(bench_rand64(rng) >> 11) + 1) / 9007199254740993.0;
	double u2 = (double)(bench_rand64(rng) >> 11) / 9007199254740992.0;
	return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

/* A sample's size in MB: the mean, or with an sd a normal draw kept
 * within 10% of the mean and the mean + 2 sd. */
static double sample_draw(const struct tr_workload *w, uint64_t *rng)
{
	double m = w->sample_mb, sd = w->sample_sd_mb;
	double x = sd > 0 ? m + sd * normal_draw(rng) : m;
	return x < 0.1 * m ? 0.1 * m : x > m + 2 * sd ? m + 2 * sd : x;
}

/* The data sets' shape, the same for both servers: file sizes drawn once. */
static int datasets_plan(void)
{
	uint64_t rng = 0x5eed5eed12345677ull;
	for (int i = 0; i < W_COUNT; i++) {
		const struct tr_workload *w = &workloads[i];
		const struct scale *sc = &scales[b.o.quick][i];
		struct tr_dataset *d = &b.ds[i];
		d->w = w;
		bench_strfmt(d->dir, sizeof(d->dir), "%s/%s", TOP, w->name);
		d->nfiles = sc->nfiles;
		d->spf = sc->spf;
		d->compute_s = w->compute_s * sc->scale;
		d->size = calloc(d->nfiles, sizeof(*d->size));
		if (!d->size)
			return -ENOMEM;
		double smp = w->sample_mb * MB * sc->scale;
		d->sample_bytes = d->spf > 1 ? (uint64_t)smp : 0;
		/* a few draws, cut at both ends, brought back to the real mean (a
		 * second pass over the same draws), so that an accelerator demands
		 * the real bytes per second */
		double sum = 0, scale = 1;
		for (int pass = 0; pass < 2; pass++) {
			uint64_t r = rng;
			for (unsigned f = 0; f < d->nfiles; f++) {
				double v = sample_draw(w, &r) * scale;
				sum += pass ? 0 : v;
				d->size[f] = d->spf > 1 ? d->sample_bytes * d->spf
							: (uint64_t)(v * MB * sc->scale);
			}
			scale = w->sample_mb * d->nfiles / sum;
			if (pass)
				rng = r;
		}
		for (unsigned f = 0; f < d->nfiles; f++)
			d->bytes += d->size[f];
	}
	return 0;
}

static double dataset_mean_mb(const struct tr_dataset *d)
{
	return (double)d->bytes / d->nfiles / MB;
}

static double dataset_sd_mb(const struct tr_dataset *d)
{
	double m = dataset_mean_mb(d), v = 0;
	for (unsigned i = 0; i < d->nfiles; i++) {
		double x = (double)d->size[i] / MB - m;
		v += x * x;
	}
	return sqrt(v / d->nfiles);
}

/* MB/s one accelerator takes at AU 100% (scaled samples and compute alike). */
static double demand_mbps(const struct tr_dataset *d)
{
	double sample = d->spf > 1 ? (double)d->sample_bytes : (double)d->bytes / d->nfiles;
	return d->w->batch * sample / d->compute_s / MB;
}

/*
 * Writers of files, each taking the next file.  wjob_run's, or, when
 * writers are left stuck in calls to the server, theirs (never freed).
 */
struct wjob {
	struct ffc *c;
	char dir[64];
	unsigned nfiles;
	atomic_uint next;
	atomic_uint done; /* writers ended */
	bool fsync;	  /* ffc_fsync before close, timed (a checkpoint) */
	pthread_mutex_t mu;
	double t_sync; /* the last fsync's end (mu) */
	int err;       /* the first failure (mu), why in why */
	char why[256];
	uint64_t size[]; /* each file's bytes */
};

static void wjob_fail(struct wjob *j, int err, const char *what, const char *path)
{
	pthread_mutex_lock(&j->mu);
	if (!j->err) {
		j->err = err;
		bench_strfmt(j->why, sizeof(j->why), "%s %s: %s", what, path, strerror(-err));
	}
	pthread_mutex_unlock(&j->mu);
}

static int file_write(struct wjob *j, unsigned i)
{
	char path[128];
	bench_cluster_file_path(path, sizeof(path), j->dir, i);
	int err = 0;
	struct ffc_file *f = ffc_open(j->c, path, FFC_WRONLY | FFC_CREAT | FFC_EXCL, 0644, &err);
	if (!f) {
		wjob_fail(j, err ? err : -EIO, "create", path);
		return -EIO;
	}
	int rc = 0;
	for (uint64_t off = 0; off < j->size[i] && !rc; off += TR_READ_CHUNK) {
		size_t n =
		    j->size[i] - off < TR_READ_CHUNK ? (size_t)(j->size[i] - off) : TR_READ_CHUNK;
		ssize_t w = ffc_pwrite(f, b.wbuf, n, off);
		if (w != (ssize_t)n)
			wjob_fail(j, rc = w < 0 ? (int)w : -EIO, "write", path);
	}
	if (!rc && j->fsync) {
		if ((rc = ffc_fsync(f))) {
			wjob_fail(j, rc, "fsync", path);
		} else {
			double t = bench_now_s();
			pthread_mutex_lock(&j->mu);
			j->t_sync = t > j->t_sync ? t : j->t_sync;
			pthread_mutex_unlock(&j->mu);
		}
	}
	int rcl = ffc_close(f);
	if (rcl && !rc)
		wjob_fail(j, rc = rcl, "close", path);
	return rc;
}

static void *writer_main(void *arg)
{
	struct wjob *j = arg;
	for (unsigned i; (i = atomic_fetch_add(&j->next, 1)) < j->nfiles;) {
		pthread_mutex_lock(&j->mu);
		bool failed = j->err != 0;
		pthread_mutex_unlock(&j->mu);
		if (failed || file_write(j, i))
			break;
	}
	atomic_fetch_add(&j->done, 1);
	return NULL;
}

/*
 * nfiles files in dir (size[] bytes each) written to s by nthreads
 * writers, the server's processes checked every 0.1 s: 0 and (with fsync)
 * *secs from the start to the last fsync's end; or -errno and why.  When
 * writers are still in calls to the server TR_JOIN_MAX_S after a failure,
 * they are left running and s->stuck is set.
 */
static int wjob_run(struct server *s, const char *dir, const uint64_t *size, unsigned nfiles,
		    bool fsync, unsigned nthreads, double *secs, char *why, size_t len)
{
	struct wjob *j = calloc(1, sizeof(*j) + nfiles * sizeof(uint64_t));
	if (!j) {
		bench_strfmt(why, len, "no memory");
		return -ENOMEM;
	}
	j->c = s->c;
	bench_strfmt(j->dir, sizeof(j->dir), "%s", dir);
	memcpy(j->size, size, nfiles * sizeof(uint64_t));
	j->nfiles = nfiles;
	j->fsync = fsync;
	pthread_mutex_init(&j->mu, NULL);
	pthread_t th[CKPT_WRITERS > WRITERS ? CKPT_WRITERS : WRITERS];
	unsigned n = 0;
	double t0 = bench_now_s(), next_check = t0 + 0.1;
	for (; n < nthreads; n++)
		if (!tr_thread_start(&th[n], writer_main, j)) {
			wjob_fail(j, -EAGAIN, "start a writer for", j->dir);
			break;
		}
	while (atomic_load(&j->done) < n) {
		bench_sleep_s(0.01);
		if (bench_now_s() < next_check)
			continue;
		if (!server_alive(s)) {
			wjob_fail(j, -ECONNRESET, "the server stopped while writing", j->dir);
			break;
		}
		next_check = bench_now_s() + 0.1;
	}
	double deadline = bench_now_s() + TR_JOIN_MAX_S;
	unsigned stuck = 0;
	for (unsigned i = 0; i < n; i++)
		stuck += !tr_thread_join(th[i], deadline);
	pthread_mutex_lock(&j->mu);
	int rc = j->err;
	bench_strfmt(why, len, "%s", rc ? j->why : "");
	if (stuck) {
		size_t l = strlen(why);
		bench_strfmt(why + l, len - l,
			     "%s%u writers still in calls to the server %.0f s later",
			     rc ? "; " : "", stuck, TR_JOIN_MAX_S);
		j->err = rc = rc ? rc : -ETIMEDOUT;
		s->stuck = true;
	}
	*secs = j->t_sync - t0;
	pthread_mutex_unlock(&j->mu);
	if (stuck)
		return rc; /* j stays with the writers */
	pthread_mutex_destroy(&j->mu);
	free(j);
	return rc;
}

/* Every data set, written to s through its mount. */
static void datasets_write(struct server *s)
{
	uint64_t bytes = 0;
	double t0 = bench_now_s(), secs;
	char why[400];
	for (int i = 0; i < W_COUNT && s->up; i++) {
		struct tr_dataset *d = &b.ds[i];
		int rc = ffc_mkdir(s->c, d->dir, 0755);
		if (rc) {
			bench_strfmt(s->why, sizeof(s->why), "mkdir %s: %s", d->dir, strerror(-rc));
			s->up = false;
			break;
		}
		if (wjob_run(s, d->dir, d->size, d->nfiles, false, WRITERS, &secs, why,
			     sizeof(why))) {
			if (s->up)
				bench_strfmt(s->why, sizeof(s->why), "writing the %s data set: %s",
					     d->w->name, why);
			s->up = false;
			break;
		}
		bytes += d->bytes;
	}
	if (s->up)
		s->write_mbps = (double)bytes / (bench_now_s() - t0) / MB;
}

/* ---------------------------------------------------------------- rounds */

static void trial_progress(const struct tr_dataset *d, const struct tr_trial *t, void *arg)
{
	const struct server *s = arg;
	if (!t->ok)
		fprintf(stderr, "%s: %s %s, %u accelerators: FAILED: %s\n", bench_prog, s->name,
			d->w->name, t->n, t->why);
	else
		fprintf(stderr,
			"%s: %s %s, %u accelerators: AU %.1f%% (min %.1f%%), %.0f MB/s, "
			"capacity %.2f\n",
			bench_prog, s->name, d->w->name, t->n, t->au_mean * 100, t->au_min * 100,
			t->mbps, t->capacity);
}

/* One checkpoint on s: CKPT_WRITERS files written and fsynced, then removed. */
static void checkpoint_run(struct server *s, unsigned r)
{
	char dir[64];
	bench_strfmt(dir, sizeof(dir), "%s.%u", CKPT_DIR, r);
	int rc = ffc_mkdir(s->c, dir, 0755);
	if (rc) {
		bench_strfmt(s->ckpt_why, sizeof(s->ckpt_why), "mkdir %s: %s", dir, strerror(-rc));
		return;
	}
	uint64_t size[CKPT_WRITERS];
	for (unsigned i = 0; i < CKPT_WRITERS; i++)
		size[i] = b.o.ckpt_bytes;
	sync(); /* the last phase's writeback is not this one's */
	double secs = 0;
	char why[400];
	if (wjob_run(s, dir, size, CKPT_WRITERS, true, CKPT_WRITERS, &secs, why, sizeof(why))) {
		bench_strfmt(s->ckpt_why, sizeof(s->ckpt_why), "%s", why);
		if (s->stuck) {
			s->up = false;
			return;
		}
	} else {
		s->ckpt_ok[r] = true;
		s->ckpt_gbps[r] = (double)b.o.ckpt_bytes * CKPT_WRITERS / secs / 1e9;
	}
	for (unsigned i = 0; i < CKPT_WRITERS; i++) {
		char path[128];
		bench_cluster_file_path(path, sizeof(path), dir, i);
		ffc_remove(s->c, path);
	}
	ffc_remove(s->c, dir);
}

static void round_run(unsigned r)
{
	double busy = bench_settle(3);
	if (busy >= 0.1)
		fprintf(stderr,
			"%s: round %u: the box was still %.0f%% busy after 3 s; measuring "
			"anyway\n",
			bench_prog, r + 1, busy * 100);
	for (int w = 0; w < W_COUNT; w++)
		for (int k = 0; k < S_COUNT; k++) {
			struct server *s = &b.s[k];
			if (!server_alive(s))
				continue;
			/* the same seed for both servers: the same file orders */
			uint64_t seed =
			    0x7261696e00000000ull + r * 0x10000ull + (uint64_t)w * 0x100;
			struct tr_search *x = &s->res[r][w];
			struct tr_target g = {.c = s->c,
					      .alive = server_alive_cb,
					      .progress = trial_progress,
					      .arg = s};
			tr_search_run(&g, &b.ds[w], b.o.window_s, WARMUP_MAX_S, seed, x);
			if (x->stuck) {
				s->stuck = true;
				if (server_alive(s))
					bench_strfmt(s->why, sizeof(s->why), "%s: %s",
						     workloads[w].name, x->why);
				s->up = false;
			}
		}
	for (int k = 0; k < S_COUNT; k++) {
		struct server *s = &b.s[k];
		if (!server_alive(s))
			continue;
		checkpoint_run(s, r);
		fprintf(stderr, "%s: %s checkpoint, round %u: %s%.2f GB/s\n", bench_prog, s->name,
			r + 1, s->ckpt_ok[r] ? "" : "FAILED: ", s->ckpt_gbps[r]);
		server_alive(s);
	}
}

/* ---------------------------------------------------------------- figures */

static int cmp_double(const void *a, const void *b2)
{
	double x = *(const double *)a, y = *(const double *)b2;
	return x < y ? -1 : x > y;
}

/* The lower median of v[0..n) (n > 0): a conservative middle. */
static double median_lo(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[(n - 1) / 2];
}

enum fig { F_ACCEL, F_CAP };

/* s's figure for workload w over the rounds whose search ran; false when none. */
static bool fig_of(const struct server *s, int w, enum fig f, double *out)
{
	double v[ROUNDS_MAX];
	unsigned n = 0;
	for (unsigned r = 0; r < b.nrounds; r++) {
		const struct tr_search *x = &s->res[r][w];
		if (x->nt && x->ok)
			v[n++] = f == F_ACCEL ? x->accel : x->capacity;
	}
	if (!n)
		return false;
	*out = median_lo(v, n);
	return true;
}

/* braid over Ganesha for workload w, and on which basis; false (basis
 * NULL) when not measurable. */
static bool ratio_of(int w, double *v, const char **basis)
{
	double ba, ga, bc, gc;
	*basis = NULL;
	if (!fig_of(&b.s[S_BRAID], w, F_ACCEL, &ba) || !fig_of(&b.s[S_GANESHA], w, F_ACCEL, &ga))
		return false;
	if (ba >= 1 && ga >= 1) {
		*v = ba / ga;
		*basis = "integer";
		return true;
	}
	if (!fig_of(&b.s[S_BRAID], w, F_CAP, &bc) || !fig_of(&b.s[S_GANESHA], w, F_CAP, &gc) ||
	    bc <= 0 || gc <= 0)
		return false;
	*v = bc / gc;
	*basis = "capacity";
	return true;
}

static bool round_ratio(unsigned r, int w, double *v)
{
	const struct tr_search *x = &b.s[S_BRAID].res[r][w], *y = &b.s[S_GANESHA].res[r][w];
	if (!x->nt || !x->ok || !y->nt || !y->ok)
		return false;
	if (x->accel >= 1 && y->accel >= 1)
		*v = (double)x->accel / y->accel;
	else if (x->capacity > 0 && y->capacity > 0)
		*v = x->capacity / y->capacity;
	else
		return false;
	return true;
}

static bool ckpt_of(const struct server *s, double *out)
{
	double v[ROUNDS_MAX];
	unsigned n = 0;
	for (unsigned r = 0; r < b.nrounds; r++)
		if (s->ckpt_ok[r])
			v[n++] = s->ckpt_gbps[r];
	if (!n)
		return false;
	*out = median_lo(v, n);
	return true;
}

/* ---------------------------------------------------------------- report */

static void search_str(char *out, size_t len, const struct tr_search *x)
{
	if (!x->nt)
		bench_strfmt(out, len, "-");
	else if (!x->ok)
		bench_strfmt(out, len, "failed");
	else
		bench_strfmt(out, len, "%u%s (%.2f)", x->accel, x->capped ? "+" : "", x->capacity);
}

static void setup_print(void)
{
	printf("bench/training: MLPerf Storage training workloads, DLIO's model (compute is a "
	       "sleep), %ld cores, %s\n",
	       sysconf(_SC_NPROCESSORS_ONLN), b.o.quick ? "--quick" : "default scale");
	printf("scaled data sets: unet3d samples and compute time x%.4g (the bytes per second an "
	       "accelerator demands stay the real workload's); resnet50 files hold %u of 1251 "
	       "records; cosmoflow and retinanet files are real-size; reads from the servers' page "
	       "cache\n",
	       scales[b.o.quick][W_UNET3D].scale, scales[b.o.quick][W_RESNET50].spf);
	printf("%-10s %6s %9s %-20s %5s %5s %9s %4s %7s %12s\n", "workload", "files", "data MB",
	       "file MB (sd)", "recs", "batch", "compute s", "AU", "readers", "MB/s @100%AU");
	for (int i = 0; i < W_COUNT; i++) {
		const struct tr_dataset *d = &b.ds[i];
		char fs[32];
		bench_strfmt(fs, sizeof(fs), "%.3f (%.3f)", dataset_mean_mb(d), dataset_sd_mb(d));
		printf("%-10s %6u %9.1f %-20s %5u %5u %9.5f %3.0f%% %7u %12.0f\n", d->w->name,
		       d->nfiles, (double)d->bytes / MB, fs, d->spf, d->w->batch, d->compute_s,
		       d->w->au_target * 100, d->w->readers, demand_mbps(d));
	}
	printf("braid:   braid-mds and %d braid-ds, policy %s, ffclient's pNFS path (flexfiles "
	       "layouts, I/O straight to the data servers)\n",
	       NDS, POLICY_SAYS);
	printf("ganesha: ganesha.nfsd, FSAL VFS, NFSv4.1, MaxRead/MaxWrite 1 MiB, the same "
	       "ffclient through plain NFSv4.1 (no layouts)\n");
	printf("one mount per server shared by all accelerators; window %.1f s per trial after "
	       "the warm-up; %u rounds, servers interleaved per workload\n",
	       b.o.window_s, b.nrounds);
}

static void trials_print(void)
{
	printf("\nevery trial (AU: mean over the accelerators of compute time in the window; "
	       "capacity: accelerators' worth of samples delivered)\n");
	printf("%-5s %-8s %-10s %4s %7s %7s %10s %8s %8s %8s\n", "round", "server", "workload", "N",
	       "AU", "AU min", "samples/s", "MB/s", "capacity", "warmup s");
	for (unsigned r = 0; r < b.nrounds; r++)
		for (int w = 0; w < W_COUNT; w++)
			for (int k = 0; k < S_COUNT; k++) {
				const struct tr_search *x = &b.s[k].res[r][w];
				for (unsigned i = 0; i < x->nt; i++) {
					const struct tr_trial *t = &x->t[i];
					if (!t->ok) {
						printf("%-5u %-8s %-10s %4u FAILED: %s\n", r + 1,
						       b.s[k].name, workloads[w].name, t->n,
						       t->why);
						continue;
					}
					printf("%-5u %-8s %-10s %4u %6.1f%% %6.1f%% %10.1f %8.0f "
					       "%8.2f %8.2f%s\n",
					       r + 1, b.s[k].name, workloads[w].name, t->n,
					       t->au_mean * 100, t->au_min * 100, t->samples_s,
					       t->mbps, t->capacity, t->warmup_s,
					       t->au_mean >= workloads[w].au_target ? " kept" : "");
				}
			}
}

static void rounds_print(void)
{
	printf("\neach round: accelerators sustained (capacity), and braid over Ganesha\n");
	printf("%-5s %-10s %14s %14s %7s\n", "round", "workload", "braid", "ganesha", "ratio");
	for (unsigned r = 0; r < b.nrounds; r++)
		for (int w = 0; w < W_COUNT; w++) {
			char x[32], y[32], q[16];
			double v = 0;
			bool ok = round_ratio(r, w, &v);
			search_str(x, sizeof(x), &b.s[S_BRAID].res[r][w]);
			search_str(y, sizeof(y), &b.s[S_GANESHA].res[r][w]);
			bench_fig_str(q, sizeof(q), ok, v, 2);
			printf("%-5u %-10s %14s %14s %7s\n", r + 1, workloads[w].name, x, y, q);
		}
	for (unsigned r = 0; r < b.nrounds; r++) {
		char x[16], y[16];
		bench_fig_str(x, sizeof(x), b.s[S_BRAID].ckpt_ok[r], b.s[S_BRAID].ckpt_gbps[r], 2);
		bench_fig_str(y, sizeof(y), b.s[S_GANESHA].ckpt_ok[r], b.s[S_GANESHA].ckpt_gbps[r],
			      2);
		printf("%-5u %-10s %9s GB/s %9s GB/s\n", r + 1, "checkpoint", x, y);
	}
}

static void summary_print(void)
{
	printf("\nover the rounds (median; the lower middle one for an even count): accelerators "
	       "sustained per client, capacity, "
	       "braid over Ganesha\n");
	printf("%-10s %6s %8s %8s %9s %9s %7s %s\n", "workload", "target", "braid", "ganesha",
	       "braid cap", "gan. cap", "ratio", "basis");
	for (int w = 0; w < W_COUNT; w++) {
		char f[4][16], q[16];
		double v;
		const char *basis;
		for (int i = 0; i < 4; i++) {
			bool ok = fig_of(&b.s[i / 2 ? S_GANESHA : S_BRAID], w,
					 i % 2 ? F_CAP : F_ACCEL, &v);
			bench_fig_str(f[i], sizeof(f[i]), ok, v, i % 2 ? 2 : 0);
		}
		bool ok = ratio_of(w, &v, &basis);
		bench_fig_str(q, sizeof(q), ok, v, 2);
		printf("%-10s %5.0f%% %8s %8s %9s %9s %7s %s\n", workloads[w].name,
		       workloads[w].au_target * 100, f[0], f[2], f[1], f[3], q,
		       basis ? basis : "-");
	}
	double x, y;
	bool okx = ckpt_of(&b.s[S_BRAID], &x), oky = ckpt_of(&b.s[S_GANESHA], &y);
	char fx[16], fy[16], q[16];
	bench_fig_str(fx, sizeof(fx), okx, x, 2);
	bench_fig_str(fy, sizeof(fy), oky, y, 2);
	bench_fig_str(q, sizeof(q), okx && oky && y > 0, okx && oky && y > 0 ? x / y : 0, 2);
	printf("%-10s %d writers x %.0f MiB, pwrite + fsync: braid %s GB/s, ganesha %s GB/s, "
	       "ratio %s\n",
	       "checkpoint", CKPT_WRITERS, (double)b.o.ckpt_bytes / MiB, fx, fy, q);
	for (int k = 0; k < S_COUNT; k++) {
		const struct server *s = &b.s[k];
		if (s->why[0])
			printf("%s: %s\n", s->name, s->why);
		if (s->ckpt_why[0])
			printf("%s checkpoint: %s\n", s->name, s->ckpt_why);
		if (!s->c)
			continue;
		const struct ffc_stats *st = &s->st;
		uint64_t ds = st->ds_read_bytes + st->ds_write_bytes;
		uint64_t all = ds + st->mds_read_bytes + st->mds_write_bytes;
		printf("%s: data sets written at %.0f MB/s; the client moved %.1f GB, %.1f%% of it "
		       "straight to or from data servers (%llu LAYOUTGETs)%s%s\n",
		       s->name, s->write_mbps, (double)all / 1e9, all ? 100.0 * ds / all : 0,
		       (unsigned long long)st->layoutget,
		       st->pnfs ? "" : "; no layouts: ", st->pnfs ? "" : st->pnfs_why);
	}
}

static void jrounds(const char *key, const struct server *s, int w, enum fig f)
{
	bench_json_key(key);
	putchar('[');
	for (unsigned r = 0; r < b.nrounds; r++) {
		const struct tr_search *x = &s->res[r][w];
		if (r)
			putchar(',');
		bench_json_val(x->nt && x->ok, f == F_ACCEL ? x->accel : x->capacity,
			       f == F_ACCEL ? 0 : 3);
	}
	putchar(']');
}

static void json_print(void)
{
	char k[96];
	double v;
	printf("{");
	bench_json_str("bench", "training");
	bench_json_str("mode", b.o.quick ? "quick" : "default");
	bench_json_num("rounds", true, b.nrounds, 0);
	bench_json_num("window_s", true, b.o.window_s, 2);
	bench_json_num("cores", true, (double)sysconf(_SC_NPROCESSORS_ONLN), 0);
	bench_json_num("data_servers", true, NDS, 0);
	bench_json_str("policy", POLICY);
	bench_json_str("ganesha_fsal", "VFS");
	bench_json_str("ganesha_protocol", "NFSv4.1");
	bench_json_str("scale_note", "unet3d sample sizes and compute time scaled alike (same "
				     "bytes/s per accelerator); resnet50 files hold fewer records; "
				     "file counts scaled; reads from the page cache");
	for (int w = 0; w < W_COUNT; w++) {
		const struct tr_dataset *d = &b.ds[w];
		const char *n = workloads[w].name;
		const char *basis;
		bench_strfmt(k, sizeof(k), "%s_files", n);
		bench_json_num(k, true, d->nfiles, 0);
		bench_strfmt(k, sizeof(k), "%s_file_MB_mean", n);
		bench_json_num(k, true, dataset_mean_mb(d), 3);
		bench_strfmt(k, sizeof(k), "%s_dataset_MB", n);
		bench_json_num(k, true, (double)d->bytes / MB, 1);
		bench_strfmt(k, sizeof(k), "%s_samples_per_file", n);
		bench_json_num(k, true, d->spf, 0);
		bench_strfmt(k, sizeof(k), "%s_scale", n);
		bench_json_num(k, true, scales[b.o.quick][w].scale, 4);
		bench_strfmt(k, sizeof(k), "%s_compute_s", n);
		bench_json_num(k, true, d->compute_s, 5);
		bench_strfmt(k, sizeof(k), "%s_batch", n);
		bench_json_num(k, true, d->w->batch, 0);
		bench_strfmt(k, sizeof(k), "%s_au_target", n);
		bench_json_num(k, true, d->w->au_target, 2);
		bench_strfmt(k, sizeof(k), "%s_demand_MBps", n);
		bench_json_num(k, true, demand_mbps(d), 1);
		for (int s = 0; s < S_COUNT; s++) {
			bool ok = fig_of(&b.s[s], w, F_ACCEL, &v);
			bench_strfmt(k, sizeof(k), "%s_accel_%s", n, b.s[s].name);
			bench_json_num(k, ok, v, 0);
			ok = fig_of(&b.s[s], w, F_CAP, &v);
			bench_strfmt(k, sizeof(k), "%s_capacity_%s", n, b.s[s].name);
			bench_json_num(k, ok, v, 3);
		}
		bool ok = ratio_of(w, &v, &basis);
		bench_strfmt(k, sizeof(k), "%s_accel_vs_ganesha", n);
		bench_json_num(k, ok, v, 3);
		bench_strfmt(k, sizeof(k), "%s_accel_basis", n);
		bench_json_str(k, basis);
		for (int s = 0; s < S_COUNT; s++) {
			bench_strfmt(k, sizeof(k), "%s_accel_%s_rounds", n, b.s[s].name);
			jrounds(k, &b.s[s], w, F_ACCEL);
			bench_strfmt(k, sizeof(k), "%s_capacity_%s_rounds", n, b.s[s].name);
			jrounds(k, &b.s[s], w, F_CAP);
		}
	}
	bench_json_num("checkpoint_writers", true, CKPT_WRITERS, 0);
	bench_json_num("checkpoint_file_MiB", true, (double)b.o.ckpt_bytes / MiB, 0);
	double x = 0, y = 0;
	bool okx = ckpt_of(&b.s[S_BRAID], &x), oky = ckpt_of(&b.s[S_GANESHA], &y);
	bench_json_num("checkpoint_GBps_braid", okx, x, 3);
	bench_json_num("checkpoint_GBps_ganesha", oky, y, 3);
	bench_json_num("checkpoint_vs_ganesha", okx && oky && y > 0,
		       okx && oky && y > 0 ? x / y : 0, 3);
	for (int s = 0; s < S_COUNT; s++) {
		bench_strfmt(k, sizeof(k), "checkpoint_GBps_%s_rounds", b.s[s].name);
		bench_json_key(k);
		putchar('[');
		for (unsigned r = 0; r < b.nrounds; r++) {
			if (r)
				putchar(',');
			bench_json_val(b.s[s].ckpt_ok[r], b.s[s].ckpt_gbps[r], 3);
		}
		putchar(']');
	}
	for (int s = 0; s < S_COUNT; s++) {
		bench_strfmt(k, sizeof(k), "%s_why", b.s[s].name);
		bench_json_str(k, b.s[s].why[0] ? b.s[s].why : NULL);
	}
	bench_json_num("seconds", true, b.run_s, 0);
	printf("}\n");
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv)
{
	bench_init("bench/training");
	opts_parse(&b.o, argc, argv);
	double t_start = bench_now_s();
	b.s[S_BRAID].name = "braid";
	b.s[S_GANESHA].name = "ganesha";
	if (datasets_plan() || !(b.wbuf = malloc(TR_READ_CHUNK))) {
		fprintf(stderr, "%s: out of memory\n", bench_prog);
		return 99;
	}
	uint64_t rng = 0x0123456789abcdefull;
	for (size_t i = 0; i < TR_READ_CHUNK; i += 8) {
		uint64_t v = bench_rand64(&rng);
		memcpy(b.wbuf + i, &v, 8);
	}
	bench_strfmt(b.work, sizeof(b.work), "%s/braid-bench-training.XXXXXX", b.o.work);
	if (!mkdtemp(b.work)) {
		fprintf(stderr, "%s: mkdtemp %s: %s\n", bench_prog, b.work, strerror(errno));
		return 99;
	}
	/* Ganesha's export must be reachable by path */
	chmod(b.work, 0755);
	int err = 0;
	struct nfsd_server *eng = nfsd_client_engine_new(1, 0, &err);
	if (!eng) {
		fprintf(stderr, "%s: client engine: %s\n", bench_prog, strerror(-err));
		return 99;
	}
	braid_up();
	if (!b.s[S_BRAID].up)
		fprintf(stderr, "%s: braid: %s\n", bench_prog, b.s[S_BRAID].why);
	ganesha_up(eng);
	if (!b.s[S_GANESHA].up)
		fprintf(stderr, "%s: ganesha: %s (braid runs alone; the ratios are null)\n",
			bench_prog, b.s[S_GANESHA].why);
	for (int k = 0; k < S_COUNT; k++) {
		if (!b.s[k].up)
			continue;
		fprintf(stderr, "%s: writing the data sets to %s\n", bench_prog, b.s[k].name);
		datasets_write(&b.s[k]);
	}
	for (unsigned r = 0; r < b.o.rounds && (b.s[S_BRAID].up || b.s[S_GANESHA].up); r++) {
		b.nrounds = r + 1;
		round_run(r);
	}
	bool failed = false;
	for (int k = 0; k < S_COUNT; k++) {
		struct server *s = &b.s[k];
		if (s->c)
			ffc_stats_get(s->c, &s->st);
		if (s->c && !s->stuck)
			ffc_unmount(s->c);
		/* a server that went down during the run, or a search that failed */
		failed |= s->up && !server_alive(s);
		failed |= s->c && !s->up;
		for (unsigned r = 0; r < b.nrounds; r++)
			for (int w = 0; w < W_COUNT; w++)
				failed |= s->res[r][w].nt && !s->res[r][w].ok;
	}
	failed |= !b.s[S_BRAID].up;
	if (!bench_ganesha_stop(&b.g))
		fprintf(stderr, "%s: ganesha.nfsd needed SIGKILL\n", bench_prog);
	bench_cluster_stop(b.k);
	nfsd_server_free(eng);
	if (b.o.keep)
		fprintf(stderr, "%s: kept %s\n", bench_prog, b.work);
	else
		bench_tree_remove(b.work);
	b.run_s = bench_now_s() - t_start;

	setup_print();
	trials_print();
	rounds_print();
	summary_print();
	printf("run took %.0f s\n", b.run_s);
	if (failed) {
		fflush(stdout);
		fprintf(stderr, "%s: FAILED: a server failed during the run (above)\n", bench_prog);
	}
	json_print();
	for (int w = 0; w < W_COUNT; w++)
		free(b.ds[w].size);
	free(b.wbuf);
	return failed ? 1 : 0;
}
