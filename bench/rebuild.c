/* SPDX-License-Identifier: MIT */
/*
 * bench/rebuild: how fast a Braid cluster gets its redundancy back, as a
 * user gets it from braid-mds (issue 15: rebuild, drain), beside the two
 * ceilings it is judged against and the data mover (COPY, braid_ctl.x,
 * dataserver/mover.c) that the MDS drives, all measured in the same run:
 *
 *  - rebuild (rebuild_mds.c): braid-mds and --data-servers braid-ds as
 *    processes, --size bytes of files (--file-size each) written through
 *    ffclient into a directory whose policy is whole,mirrors=2; the data
 *    server holding the most copies is SIGKILLed and `braidctl ds lost`
 *    (retried while the MDS still counts it up, which is not timed); timed
 *    from that command to the last copy made current again (braidctl
 *    rebuild's resilvered_files), with the time until braidctl shows it
 *    all done beside it.  The bytes moved are the lost server's share
 *    (copies moved x file size); a copy takes a second pass (with the
 *    file's writers stopped) only when its source changed during the
 *    first, so the data servers write about that (resilvered_bytes).  Per
 *    data server: the bytes moved over the time over the number of data
 *    servers the copies went to (those whose object count grew): the MDS
 *    makes several copies at once ([mds] resilver_copies, at most
 *    resilver_copies_per_ds into one server), so that is what each
 *    destination averaged; the rate over all of them is given too;
 *  - drain: the data server holding the most copies drained (`braidctl ds
 *    drain`) until it holds no object and no copy is stale; counted as the
 *    rebuild is.  A fresh data server takes the place of each one lost or
 *    drained, so that every round starts alike;
 *  - the disk's write rate: --size bytes written (1 MiB buffered writes)
 *    to a file beside the stores, then fsync, as a COPY's data is durable
 *    before its reply; the ratio rebuild_vs_limit is judged against it;
 *  - the same with each MiB's write-back started at once (sync_file_range,
 *    as the mover does), a second view of the disk: where piling dirty
 *    pages get writers throttled (this project's VMs), it is much the
 *    faster;
 *  - the loopback TCP ceiling (bench/common.h, iperf3 -l 1M, 1 stream);
 *  - both limits again as N data servers meet them at once, N the most
 *    destinations a rebuild has here (every data server but the lost one):
 *    N disk writers (each size/N bytes, then fsync) and N loopback
 *    streams, each figure per writer or stream.  On one box every data
 *    server shares the one disk and the loopback (and two cores), so a
 *    destination's limit is its share of them, not the whole box's:
 *    rebuild_vs_limit is the rebuild per destination over the slower of
 *    the two shares; rebuild_vs_one_stream_limit, over the one-stream
 *    figures, is printed beside it;
 *  - the mover driven directly, this program playing the MDS with the
 *    cluster key (three more braid-ds: a source and two destinations):
 *    every object of the source (--size in --objects objects, filled by
 *    NFSv3 WRITE + COMMIT) copied into one destination, one object at a
 *    time, each a pass of COPY calls (ds_ctl_copy_pass): MB/s received;
 *    then copied to both destinations at once (half each): MB/s sent by
 *    the source.  The first round's copies are checked, and each round's
 *    removed before the next.  One pass per object and nothing to choose
 *    or record: the MDS's figures over these say what its orchestration
 *    costs.  At the end every cluster file's first, middle and last MiB
 *    are read back through ffclient.
 *
 * Everything is on the filesystem of --dir (a disk, not tmpfs); the data
 * copied was just written, so it is read from the sources' page cache and
 * the figures are the movers' and the destinations' disk's.  On one box
 * every data server shares that disk and the loopback, so a one-stream
 * limit is the box's, not one data server's: the rebuild over all its
 * destinations is printed against it too.  The measures run interleaved in rounds
 * (--rounds), so a ceiling that drifts on a shared box biases no ratio;
 * each starts after a sync and up to a second for the box to quieten (on
 * a box shared with other work it may not, and that is printed).  Every
 * round is printed, then a table of the figures (each its samples' bytes
 * over their time) and one JSON line.  Every daemon dies with this
 * program, however it ends (PR_SET_PDEATHSIG).
 *
 * Usage: rebuild [--size SIZE[KMG]] [--file-size SIZE] [--data-servers 3|4]
 *                [--objects N] [--rounds N] [--quick] [--dir PATH] [--keep]
 *                [--braid-mds PATH] [--braid-ds PATH] [--braidctl PATH]
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "bench/common.h"
#include "bench/nfs3load.h"
#include "bench/rebuild.h"
#include "ctl/client.h"
#include "ctl/fh.h"
#include "nfsd/xdr/nfs3_prot.h"

#define MiB	 RB_MiB
#define MB	 1e6
#define GIB	 (1024.0 * 1024.0 * 1024.0)
#define OBJS_MAX 256
#define BR_UID	 1000
#define BR_GID	 1000

/* A braid-ds of the mover's own (not the cluster's). */
struct daemon {
	struct bench_child ch;
	const char *name;
	int port;
	char dir[PATH_MAX];
	char conf[PATH_MAX + 16], log[PATH_MAX + 16];
	char uaddr[64];
	struct nfsd_clnt *c;
};

struct bench {
	struct rb_opts o;
	char work[PATH_MAX];
	char key_file[PATH_MAX + 16];
	char fstype[32];
	struct braid_key key;
	struct nfsd_server *eng;
	struct daemon src, dst[2];
	struct ds_objid id[OBJS_MAX];
	uint64_t obj_size;
	struct rb_cluster *cl;
	unsigned files; /* the cluster's */
	struct rb_move reb[RB_ROUNDS_MAX], dra[RB_ROUNDS_MAX];
};

/* One figure's samples: bytes over seconds, per round. */
enum {
	F_LOOP,
	F_DISK,
	F_DISK_WB,
	F_LOOP_N,
	F_DISK_N,
	F_REBUILD,
	F_DRAIN,
	F_MV_REBUILD,
	F_MV_DRAIN,
	F_COUNT
};
static const char *const fnames[F_COUNT] = {
    "loopback TCP (1 stream)",	      "disk write + fsync",
    "disk, early write-back + fsync", "loopback TCP, N streams, per stream",
    "disk, N writers, per writer",    "MDS rebuild, per destination DS",
    "MDS drain, per destination DS",  "mover direct: copy into 1 DS",
    "mover direct: 1 DS out to 2"};
static const char *const fshort[F_COUNT] = {"loopback", "disk",	 "disk_wb",  "loop_N",  "disk_N",
					    "rebuild",	"drain", "mv_rebld", "mv_drain"};
struct figure {
	double bytes[RB_ROUNDS_MAX], secs[RB_ROUNDS_MAX];
	bool ok[RB_ROUNDS_MAX];
	char why[256];
};
static struct figure fig[F_COUNT];

static void fig_add(int f, unsigned k, bool ok, double bytes, double secs, const char *why)
{
	fig[f].ok[k] = ok && secs > 0;
	fig[f].bytes[k] = bytes;
	fig[f].secs[k] = secs;
	if (!ok && why && !fig[f].why[0])
		bench_strfmt(fig[f].why, sizeof(fig[f].why), "%s", why);
}

static double fig_round(int f, unsigned k)
{
	return fig[f].ok[k] ? fig[f].bytes[k] / fig[f].secs[k] / MB : 0;
}

/* All rounds together: their bytes over their time; false if any failed. */
static bool fig_total(int f, unsigned rounds, double *mbps)
{
	double b = 0, s = 0;
	for (unsigned k = 0; k < rounds; k++) {
		if (!fig[f].ok[k])
			return false;
		b += fig[f].bytes[k];
		s += fig[f].secs[k];
	}
	*mbps = b / s / MB;
	return true;
}

/* ------------------------------------------- the mover's data servers */

static int daemon_start(struct bench *b, struct daemon *d, const char *name, char *why, size_t len)
{
	d->name = name;
	bench_strfmt(d->dir, sizeof(d->dir), "%s/%s", b->work, name);
	bench_strfmt(d->conf, sizeof(d->conf), "%s/ds.conf", d->dir);
	bench_strfmt(d->log, sizeof(d->log), "%s/braid-ds.log", d->dir);
	if (mkdir(d->dir, 0755)) {
		bench_strfmt(why, len, "mkdir %s: %s", d->dir, strerror(errno));
		return -errno;
	}
	FILE *f = fopen(d->conf, "w");
	if (!f) {
		bench_strfmt(why, len, "%s: %s", d->conf, strerror(errno));
		return -errno;
	}
	fprintf(f,
		"# Written by bench/rebuild.\n[ds]\nstore_dir = %s/store\nlisten = 127.0.0.1:0\n"
		"key_file = %s\nnfs41 = no\n",
		d->dir, b->key_file);
	if (fclose(f)) {
		bench_strfmt(why, len, "%s: %s", d->conf, strerror(errno));
		return -errno;
	}
	int ready_fd;
	int rc =
	    bench_daemon_spawn(&d->ch, name, b->o.cl.ds_path, d->conf, d->log, &ready_fd, why, len);
	if (rc)
		return rc;
	char line[128];
	rc = bench_daemon_ready(ready_fd, 60, &d->port, line, sizeof(line));
	if (rc) {
		char last[300];
		bench_log_tail_errors(d->log, NULL, last, sizeof(last));
		bench_strfmt(why, len, "braid-ds %s did not get ready: %s", name,
			     last[0] ? last : "nothing logged");
		bench_child_stop(&d->ch, 5);
		return rc;
	}
	int err = 0;
	struct sockaddr_in sa = bench_sa_loopback(d->port);
	struct nfsd_clnt_opts co = {.timeout_ms = DS_CTL_COPY_TIMEOUT_MS, .reconnect = true};
	d->c = nfsd_clnt_new(b->eng, (struct sockaddr *)&sa, sizeof(sa), &co, &err);
	if (!d->c) {
		bench_strfmt(why, len, "connect to braid-ds %s: %s", name, strerror(-err));
		bench_child_stop(&d->ch, 5);
		return err;
	}
	bench_strfmt(d->uaddr, sizeof(d->uaddr), "127.0.0.1.%d.%d", d->port >> 8, d->port & 255);
	return 0;
}

static void daemon_stop(struct daemon *d)
{
	if (d->c)
		nfsd_clnt_free(d->c);
	d->c = NULL;
	if (d->ch.pid > 0 && !bench_child_stop(&d->ch, 20))
		fprintf(stderr, "bench/rebuild: braid-ds %s needed SIGKILL\n", d->name);
}

/* ------------------------------------------------------------- objects */

/* The source's objects, filled by WRITE + COMMIT of the nfs3load pattern. */
static int objects_fill(struct bench *b, char *why, size_t len)
{
	double t = bench_now_s();
	for (unsigned i = 0; i < b->o.objects; i++) {
		struct ds_objid *id = &b->id[i];
		memset(id, 0, sizeof(*id));
		bench_strfmt((char *)id->key, sizeof(id->key), "rebuild %u", i);
		id->gen = 1;
		uint8_t fh[DS_CTL_FH_MAX];
		uint32_t fhlen;
		int rc = ds_ctl_create(b->src.c, &b->key, id, BR_UID, BR_GID, 0600, fh, &fhlen);
		if (rc) {
			char eb[64];
			bench_strfmt(why, len, "CREATE on the source: %s",
				     bench_call_err_str(rc, eb, sizeof(eb)));
			return rc;
		}
		struct nfs3_load_cfg fill = {
		    .port = b->src.port,
		    .fh = fh,
		    .fhlen = fhlen,
		    .file_size = b->obj_size,
		    .nconn = 4,
		    .op = NFS3_LOAD_WRITE,
		    .stable = UNSTABLE,
		    .once = true,
		    .uid = BR_UID,
		    .gid = BR_GID,
		};
		struct nfs3_load_res lr;
		nfs3_load_run(&fill, &lr);
		if (!lr.ok) {
			bench_strfmt(why, len, "filling the source: %s", lr.why);
			return -EIO;
		}
	}
	double s = bench_now_s() - t;
	printf("bench/rebuild: source filled: %u objects of %.0f MiB by WRITE + COMMIT in %.1f s\n",
	       b->o.objects, (double)b->obj_size / MiB, s);
	return 0;
}

/* Spot-check a copy: its first, a middle and its last MiB hold the pattern. */
static int object_check(struct bench *b, struct daemon *d, const struct ds_objid *id, char *why,
			size_t len)
{
	uint8_t fh[DS_FH_SIZE];
	ds_fh_make(&b->key, id, fh);
	uint64_t at[3] = {0, b->obj_size / 2 / MiB * MiB, b->obj_size - MiB};
	for (int k = 0; k < 3; k++) {
		READ3args a = {
		    .file = {.data = xdr_opaque_of(fh, DS_FH_SIZE)}, .offset = at[k], .count = MiB};
		struct nfsd_call_opts o = nfs3_call_opts(NFSPROC3_READ, &a, BR_UID, BR_GID);
		READ3res r;
		struct xdr_arena ar;
		xdr_arena_init(&ar, NULL, 0, 4u << 20);
		int rc = nfsd_clnt_call(d->c, &o, nfs3_proc_desc(NFSPROC3_READ)->dec_res, &r, &ar);
		bool ok = !rc && r.status == NFS3_OK && r.u.resok.data.len == MiB &&
			  nfs3_pattern_ok(r.u.resok.data.val, at[k], MiB, true);
		xdr_arena_release(&ar);
		if (!ok) {
			bench_strfmt(why, len, "the copy on %s differs at %llu (rc %d)", d->name,
				     (unsigned long long)at[k], rc);
			return -EIO;
		}
	}
	return 0;
}

/*
 * Before each measure: sync, and a few seconds for the box to quieten (on
 * a box shared with other work it may not: that is said, not hidden).
 */
#define SETTLE_S 1
static void settle(void)
{
	double busy = bench_settle(SETTLE_S);
	if (busy >= 0.1)
		printf("  (the box was still %.0f%% busy after %d s)\n", busy * 100, SETTLE_S);
}

/* The destinations' copies removed, then the box left to settle. */
static void copies_remove(struct bench *b)
{
	for (int j = 0; j < 2; j++)
		for (unsigned i = 0; i < b->o.objects; i++)
			ds_ctl_remove(b->dst[j].c, &b->key, &b->id[i]); /* NOENT: none there */
	settle();
}

/* ---------------------------------------------------------------- copies */

struct stream {
	struct bench *b;
	struct daemon *dst;
	unsigned first, step; /* objects first, first + step, ... */
	uint64_t bytes;
	unsigned calls;
	int rc;
	char why[256];
};

static void *stream_main(void *arg)
{
	struct stream *s = arg;
	struct bench *b = s->b;
	for (unsigned i = s->first; i < b->o.objects && !s->rc; i += s->step) {
		struct ds_ctl_copy_args a = {.id = b->id[i],
					     .nsrc = 1,
					     .uid = BR_UID,
					     .gid = BR_GID,
					     .mode = 0600,
					     .count = DS_CTL_COPY_MAX};
		a.src[0].netid = "tcp";
		a.src[0].uaddr = b->src.uaddr;
		struct ds_ctl_copy_res r;
		unsigned calls = 0;
		s->rc = ds_ctl_copy_pass(s->dst->c, &b->key, &a, &r, &calls);
		s->calls += calls;
		if (s->rc) {
			char eb[64];
			bench_strfmt(s->why, sizeof(s->why), "COPY into %s: %s (side %d)",
				     s->dst->name, bench_call_err_str(s->rc, eb, sizeof(eb)),
				     (int)r.side);
		} else if (!r.done || r.src_size != b->obj_size) {
			s->rc = -EIO;
			bench_strfmt(s->why, sizeof(s->why), "COPY into %s ended short",
				     s->dst->name);
		} else {
			s->bytes += r.src_size;
		}
	}
	return NULL;
}

/* Copies by nstreams streams, stream j into dst[j]; timed as a whole. */
static void copies_run(struct bench *b, unsigned nstreams, int f, unsigned k)
{
	struct stream s[2];
	pthread_t t[2];
	double t0 = bench_now_s();
	for (unsigned j = 0; j < nstreams; j++) {
		s[j] = (struct stream){.b = b, .dst = &b->dst[j], .first = j, .step = nstreams};
		if (pthread_create(&t[j], NULL, stream_main, &s[j])) {
			s[j].rc = -EAGAIN;
			bench_strfmt(s[j].why, sizeof(s[j].why), "pthread_create failed");
			nstreams = j;
			break;
		}
	}
	for (unsigned j = 0; j < nstreams; j++)
		pthread_join(t[j], NULL);
	double secs = bench_now_s() - t0;
	double bytes = 0;
	unsigned calls = 0;
	const char *why = NULL;
	for (unsigned j = 0; j < nstreams; j++) {
		bytes += (double)s[j].bytes;
		calls += s[j].calls;
		if (s[j].rc && !why)
			why = s[j].why;
	}
	char cw[256] = "";
	/* the first round's copies are checked (outside the timing) */
	for (unsigned j = 0; j < nstreams && !why && k == 0; j++)
		for (unsigned i = j; i < b->o.objects && !cw[0]; i += nstreams)
			object_check(b, &b->dst[j], &b->id[i], cw, sizeof(cw));
	if (cw[0])
		why = cw;
	fig_add(f, k, !why, bytes, secs, why);
	if (!why)
		printf("  %-32s %8.0f MB/s  (%.0f MiB in %.2f s, %u COPY calls)\n", fnames[f],
		       bytes / secs / MB, bytes / MiB, secs, calls);
	else
		printf("  %-32s failed: %s\n", fnames[f], why);
}

/* ------------------------------------------------------------- ceilings */

/*
 * size bytes of 1 MiB buffered writes to a file beside the stores, then
 * fsync: the disk's write rate.  With wb (F_DISK_WB) each MiB's write-back
 * is started at once (sync_file_range), as the mover does, so that the
 * ratio can be judged against the better of the two ways to the disk too.
 */
static void disk_run(struct bench *b, unsigned k, bool wb)
{
	int f = wb ? F_DISK_WB : F_DISK;
	char path[PATH_MAX + 16];
	bench_strfmt(path, sizeof(path), "%s/disk-write.dat", b->work);
	uint8_t *buf = aligned_alloc(4096, MiB);
	char why[256] = "";
	double t0 = bench_now_s(), secs = 0;
	int fd = buf ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
	if (fd < 0) {
		bench_strfmt(why, sizeof(why), "%s: %s", path, buf ? strerror(errno) : "no memory");
	} else {
		for (uint64_t off = 0; off < b->o.size && !why[0]; off += MiB) {
			nfs3_pattern_fill(buf, off, MiB); /* as a copy's, never zeros */
			if (pwrite(fd, buf, MiB, (off_t)off) != (ssize_t)MiB)
				bench_strfmt(why, sizeof(why), "write %s: %s", path,
					     strerror(errno));
			else if (wb)
				sync_file_range(fd, (off_t)off, MiB, SYNC_FILE_RANGE_WRITE);
		}
		if (!why[0] && fsync(fd))
			bench_strfmt(why, sizeof(why), "fsync %s: %s", path, strerror(errno));
		secs = bench_now_s() - t0;
		close(fd);
		unlink(path);
	}
	free(buf);
	fig_add(f, k, !why[0], (double)b->o.size, secs, why);
	if (!why[0])
		printf("  %-32s %8.0f MB/s  (%.0f MiB in %.2f s)\n", fnames[f],
		       (double)b->o.size / secs / MB, (double)b->o.size / MiB, secs);
	else
		printf("  %-32s failed: %s\n", fnames[f], why);
	settle();
}

/*
 * The same limits as N data servers on this box meet them at once, N the
 * most destinations a rebuild has here (every data server but the lost
 * one): they share one disk and one loopback, so each has about a 1/N
 * share of either.  N writers, each size/N bytes as disk_run writes them
 * to a file of its own, then fsync; the figure is each writer's bytes
 * over the time until the last is done.
 */
struct nwriter {
	char path[PATH_MAX + 32];
	uint64_t size;
	char why[256];
};

static void *nwriter_main(void *arg)
{
	struct nwriter *w = arg;
	uint8_t *buf = aligned_alloc(4096, MiB);
	int fd = buf ? open(w->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
	if (fd < 0) {
		bench_strfmt(w->why, sizeof(w->why), "%s: %s", w->path,
			     buf ? strerror(errno) : "no memory");
		free(buf);
		return NULL;
	}
	for (uint64_t off = 0; off < w->size && !w->why[0]; off += MiB) {
		nfs3_pattern_fill(buf, off, MiB);
		if (pwrite(fd, buf, MiB, (off_t)off) != (ssize_t)MiB)
			bench_strfmt(w->why, sizeof(w->why), "write %s: %s", w->path,
				     strerror(errno));
	}
	if (!w->why[0] && fsync(fd))
		bench_strfmt(w->why, sizeof(w->why), "fsync %s: %s", w->path, strerror(errno));
	close(fd);
	unlink(w->path);
	free(buf);
	return NULL;
}

static void disk_n_run(struct bench *b, unsigned k)
{
	unsigned n = b->o.nds - 1;
	struct nwriter w[RB_NDS_MAX];
	pthread_t t[RB_NDS_MAX];
	bool started[RB_NDS_MAX] = {0};
	uint64_t each = b->o.size / n / MiB * MiB;
	char why[256] = "";
	double t0 = bench_now_s();
	for (unsigned i = 0; i < n; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		bench_strfmt(w[i].path, sizeof(w[i].path), "%s/disk-write-%u.dat", b->work, i);
		w[i].size = each;
		started[i] = !pthread_create(&t[i], NULL, nwriter_main, &w[i]);
		if (!started[i])
			bench_strfmt(why, sizeof(why), "writer thread: %s", strerror(errno));
	}
	for (unsigned i = 0; i < n; i++) {
		if (started[i])
			pthread_join(t[i], NULL);
		if (w[i].why[0] && !why[0])
			bench_strfmt(why, sizeof(why), "%s", w[i].why);
	}
	double secs = bench_now_s() - t0;
	fig_add(F_DISK_N, k, !why[0], (double)each, secs, why);
	if (!why[0])
		printf("  %-32s %8.0f MB/s  (%u writers of %.0f MiB in %.2f s: %.0f MB/s in all)\n",
		       "disk, N writers, per writer", (double)each / secs / MB, n,
		       (double)each / MiB, secs, (double)each * n / secs / MB);
	else
		printf("  %-32s failed: %s\n", "disk, N writers, per writer", why);
	settle();
}

/* Loopback TCP with nstreams streams: the figure is per stream. */
static void loopback_run(struct bench *b, unsigned k, unsigned nstreams)
{
	int f = nstreams > 1 ? F_LOOP_N : F_LOOP;
	struct bench_loopback_res lr;
	char why[256] = "";
	bool ok = !bench_loopback_measure(nstreams, b->o.loop_secs, &lr, why, sizeof(why));
	double per = ok ? lr.mbps / nstreams : 0;
	fig_add(f, k, ok, per * MB * lr.secs, ok ? lr.secs : 0, why);
	if (ok && nstreams > 1)
		printf("  %-32s %8.0f MB/s  (%u streams: %.0f MB/s in all)\n",
		       "loopback TCP, per stream", per, nstreams, lr.mbps);
	else if (ok)
		printf("  %-32s %8.0f MB/s\n", fnames[f], lr.mbps);
	else
		printf("  %-32s failed: %s\n", fnames[f], why);
}

/* ------------------------------------------------------ the MDS's moves */

/* One rebuild or drain by braid-mds, printed and put in its figure. */
static void move_run(struct bench *b, bool rebuild, unsigned k)
{
	struct rb_move *m = rebuild ? &b->reb[k] : &b->dra[k];
	int f = rebuild ? F_REBUILD : F_DRAIN;
	/* with no cluster, m->why says why */
	if (b->cl && rebuild)
		rb_cluster_rebuild(b->cl, m);
	else if (b->cl)
		rb_cluster_drain(b->cl, m);
	bool ok = m->ok && m->ndest;
	fig_add(f, k, ok, ok ? (double)m->file_bytes / m->ndest : 0, m->secs, m->why);
	if (!ok) {
		printf("  %-32s failed: %s\n", fnames[f], m->why[0] ? m->why : "no destination");
	} else {
		printf("  %-32s %8.0f MB/s  (%u copies, %.0f MiB, on %u data servers: %.0f MB/s "
		       "in all)\n",
		       fnames[f], fig_round(f, k), m->files, (double)m->file_bytes / MiB, m->ndest,
		       (double)m->file_bytes / m->secs / MB);
		printf("  %-32s data server %u %s; %.2f s to the last copy current, %.2f s until "
		       "braidctl shows it done;\n  %-32s %.0f MiB written (two passes a copy), "
		       "%u passes failed\n",
		       "", m->from, rebuild ? "SIGKILLed, then declared lost" : "drained", m->secs,
		       m->shown_secs, "", (double)m->copied_bytes / MiB, m->failures);
		if (rebuild)
			printf(
			    "  %-32s (ds lost was refused for %.1f s, while the MDS counted it up: "
			    "not timed)\n",
			    "", m->wait_secs);
	}
	settle();
}

/* ---------------------------------------------------------------- output */

/* Round k's limit: the slower of loopback and disk, one stream each
 * (shared false) or each data server's share of them (N at once). */
static bool limit_of(unsigned k, bool shared, double *v)
{
	int fl = shared ? F_LOOP_N : F_LOOP, fd = shared ? F_DISK_N : F_DISK;
	double l = fig_round(fl, k), d = fig_round(fd, k);
	if (!fig[fl].ok[k] || !fig[fd].ok[k])
		return false;
	*v = l < d ? l : d;
	return true;
}

/* The MDS's moves of all rounds: what they moved over their time, the
 * mean time, bytes written and destinations; false if any failed. */
struct moves_sum {
	double mbps; /* all destinations together */
	double secs, shown_secs, file_MiB, copied_MiB, ndest;
};
static bool moves_sum(const struct rb_move *v, unsigned n, struct moves_sum *s)
{
	double bytes = 0;
	memset(s, 0, sizeof(*s));
	for (unsigned k = 0; k < n; k++) {
		if (!v[k].ok || !v[k].ndest)
			return false;
		bytes += (double)v[k].file_bytes;
		s->secs += v[k].secs;
		s->shown_secs += v[k].shown_secs;
		s->copied_MiB += (double)v[k].copied_bytes / MiB;
		s->ndest += v[k].ndest;
	}
	s->mbps = bytes / s->secs / MB;
	s->file_MiB = bytes / MiB / n;
	s->secs /= n;
	s->shown_secs /= n;
	s->copied_MiB /= n;
	s->ndest /= n;
	return true;
}

static void ratio_line(const char *what, bool ok, double v, bool hlim, double lim, const char *note)
{
	if (ok && hlim)
		printf("%-40s = %5.0f / %5.0f = %.2f%s\n", what, v, lim, v / lim, note);
}

static void report(const struct bench *b)
{
	unsigned n = b->o.rounds;
	unsigned files = b->files;
	double data_MiB = (double)files * (double)b->o.file_size / MiB;
	printf("\nbench/rebuild: braid-mds and %u braid-ds, %.0f MiB in %u files of %.0f MiB "
	       "(whole, mirrors=2);\nthe mover driven directly: %.0f MiB in %u objects; %u "
	       "rounds, stores on %s (%s)\n\n",
	       b->o.nds, data_MiB, files, (double)b->o.file_size / MiB, (double)b->o.size / MiB,
	       b->o.objects, n, b->o.dir, b->fstype);
	printf("%-8s", "round");
	for (int f = 0; f < F_COUNT; f++)
		printf(" %9s", fshort[f]);
	printf(" %9s %9s\n", "reb/share", "reb/1lim");
	for (unsigned k = 0; k < n; k++) {
		printf("%-8u", k + 1);
		for (int f = 0; f < F_COUNT; f++) {
			if (fig[f].ok[k])
				printf(" %9.0f", fig_round(f, k));
			else
				printf(" %9s", "-");
		}
		for (int sh = 1; sh >= 0; sh--) {
			double lim;
			if (fig[F_REBUILD].ok[k] && limit_of(k, sh, &lim))
				printf(" %9.2f", fig_round(F_REBUILD, k) / lim);
			else
				printf(" %9s", "-");
		}
		printf("\n");
	}
	printf("(MB/s; rebuild and drain per destination data server, by braid-mds; loop_N and "
	       "disk_N\n per stream and per writer with %u at once, as many as a rebuild's "
	       "destinations here;\n reb/share: rebuild over min(loop_N, disk_N), reb/1lim: over "
	       "min(loopback, disk))\n\n",
	       b->o.nds - 1);
	printf("%-18s %6s %6s %9s %10s %5s %9s %9s %8s %9s\n", "braid-mds moves", "from", "copies",
	       "MiB moved", "MiB copied", "dests", "current s", "braidctl", "all MB/s",
	       "MB/s / DS");
	for (unsigned k = 0; k < n; k++)
		for (int r = 0; r < 2; r++) {
			const struct rb_move *m = r ? &b->dra[k] : &b->reb[k];
			char what[32];
			bench_strfmt(what, sizeof(what), "%s, round %u", r ? "drain" : "rebuild",
				     k + 1);
			if (!m->ok || !m->ndest) {
				printf("%-18s failed: %s\n", what, m->why);
				continue;
			}
			printf("%-18s %6u %6u %9.0f %10.0f %5u %9.2f %9.2f %8.0f %9.0f\n", what,
			       m->from, m->files, (double)m->file_bytes / MiB,
			       (double)m->copied_bytes / MiB, m->ndest, m->secs, m->shown_secs,
			       (double)m->file_bytes / m->secs / MB,
			       (double)m->file_bytes / m->secs / MB / m->ndest);
		}
	printf("(current s: from ds lost / ds drain to the last copy made current; braidctl: "
	       "until braidctl shows it done)\n");

	printf("\n%-40s %10s\n", "figure (all rounds)", "MB/s");
	struct moves_sum rs, ds;
	bool hra = moves_sum(b->reb, n, &rs), hda = moves_sum(b->dra, n, &ds);
	for (int f = 0; f < F_COUNT; f++) {
		double v;
		if (fig_total(f, n, &v))
			printf("%-40s %10.0f\n", fnames[f], v);
		else
			printf("%-40s %10s  (%s)\n", fnames[f], "-",
			       fig[f].why[0] ? fig[f].why : "not measured");
		if (f == F_REBUILD && hra)
			printf("%-40s %10.0f\n", "MDS rebuild, all destinations", rs.mbps);
		if (f == F_DRAIN && hda)
			printf("%-40s %10.0f\n", "MDS drain, all destinations", ds.mbps);
	}
	double loop, disk, dwb, reb, dra, mreb, mdra;
	bool hl = fig_total(F_LOOP, n, &loop), hd = fig_total(F_DISK, n, &disk);
	bool hwb = fig_total(F_DISK_WB, n, &dwb);
	bool hr = fig_total(F_REBUILD, n, &reb), hdr = fig_total(F_DRAIN, n, &dra);
	bool hmr = fig_total(F_MV_REBUILD, n, &mreb), hmd = fig_total(F_MV_DRAIN, n, &mdra);
	bool hlim = hl && hd;
	double lim = hlim ? (loop < disk ? loop : disk) : 0;
	double loopn, diskn;
	bool hln = fig_total(F_LOOP_N, n, &loopn), hdn = fig_total(F_DISK_N, n, &diskn);
	bool hslim = hln && hdn;
	double slim = hslim ? (loopn < diskn ? loopn : diskn) : 0;
	/* stricter: against the faster of the two ways of writing the disk */
	double best = hwb && dwb > disk ? dwb : disk;
	double blim = hlim ? (loop < best ? loop : best) : 0;
	printf("\nover each data server's share of the box: min(disk, loopback) with %u at once, "
	       "per writer:\n",
	       b->o.nds - 1);
	ratio_line("rebuild per destination DS", hr, reb, hslim, slim, " (target 0.70)");
	if (hra && fabs(rs.ndest - (double)(b->o.nds - 1)) > 0.01)
		printf("  (the rebuilds had %.1f destinations on average, not %u: the share is "
		       "approximate)\n",
		       rs.ndest, b->o.nds - 1);
	printf("\nover min(disk, loopback), one stream, one writer (the whole box for one):\n");
	ratio_line("rebuild per destination DS", hr, reb, hlim, lim, "");
	ratio_line("rebuild, all destinations", hra, rs.mbps, hlim, lim,
		   " (they share this one disk)");
	ratio_line("drain per destination DS", hdr, dra, hlim, lim, "");
	ratio_line("drain, all destinations", hda, ds.mbps, hlim, lim, "");
	ratio_line("mover direct: copy into 1 DS", hmr, mreb, hlim, lim, "");
	ratio_line("mover direct: 1 DS out to 2", hmd, mdra, hlim, lim,
		   " (both destinations share this disk)");
	ratio_line("mover direct: into 1 DS, best disk", hmr, mreb, hlim, blim,
		   " (early write-back)");
	if (hra)
		printf(
		    "\nloss to full redundancy: %.2f s for %.0f MiB of the lost data server's "
		    "copies (of %.0f MiB of files,\ntwo copies each), %.0f MiB written; braidctl "
		    "shows it done after %.2f s (means of %u rounds)\n",
		    rs.secs, rs.file_MiB, data_MiB, rs.copied_MiB, rs.shown_secs, n);

	printf("{");
	bench_json_str("bench", "rebuild");
	bench_json_num("data_servers", true, b->o.nds, 0);
	bench_json_num("data_MiB", true, data_MiB, 0);
	bench_json_num("files", true, files, 0);
	bench_json_num("file_MiB", true, (double)b->o.file_size / MiB, 0);
	bench_json_num("rounds", true, n, 0);
	bench_json_str("fstype", b->fstype);
	bench_json_num("rebuild_MBps_per_ds", hr, reb, 1);
	bench_json_num("drain_MBps_per_ds", hdr, dra, 1);
	bench_json_num("disk_write_MBps", hd, disk, 1);
	bench_json_num("loopback_MBps", hl, loop, 1);
	bench_json_num("rebuild_vs_limit", hr && hslim, hr && hslim ? reb / slim : 0, 3);
	bench_json_num("limit_share_MBps", hslim, slim, 1);
	bench_json_num("limit_share_of", true, b->o.nds - 1, 0);
	bench_json_num("disk_write_per_writer_N_MBps", hdn, diskn, 1);
	bench_json_num("loopback_per_stream_N_MBps", hln, loopn, 1);
	bench_json_num("rebuild_vs_one_stream_limit", hr && hlim, hr && hlim ? reb / lim : 0, 3);
	bench_json_num("drain_vs_limit", hdr && hlim, hdr && hlim ? dra / lim : 0, 3);
	bench_json_num("rebuild_MBps_all_ds", hra, rs.mbps, 1);
	bench_json_num("rebuild_all_vs_limit", hra && hlim, hra && hlim ? rs.mbps / lim : 0, 3);
	bench_json_num("drain_MBps_all_ds", hda, ds.mbps, 1);
	bench_json_num("drain_all_vs_limit", hda && hlim, hda && hlim ? ds.mbps / lim : 0, 3);
	bench_json_num("rebuild_dest_ds", hra, rs.ndest, 1);
	bench_json_num("drain_dest_ds", hda, ds.ndest, 1);
	bench_json_num("loss_to_redundancy_s", hra, rs.secs, 2);
	bench_json_num("lost_MiB", hra, rs.file_MiB, 0);
	bench_json_num("rebuild_written_MiB", hra, rs.copied_MiB, 0);
	bench_json_num("loss_to_braidctl_done_s", hra, rs.shown_secs, 2);
	bench_json_num("drain_s", hda, ds.secs, 2);
	bench_json_num("drained_MiB", hda, ds.file_MiB, 0);
	bench_json_num("disk_write_early_writeback_MBps", hwb, dwb, 1);
	bench_json_num("mover_size_MiB", true, (double)b->o.size / MiB, 0);
	bench_json_num("mover_objects", true, b->o.objects, 0);
	bench_json_num("mover_rebuild_MBps", hmr, mreb, 1);
	bench_json_num("mover_drain_MBps", hmd, mdra, 1);
	bench_json_num("mover_rebuild_vs_limit", hmr && hlim, hmr && hlim ? mreb / lim : 0, 3);
	bench_json_num("mover_drain_vs_limit", hmd && hlim, hmd && hlim ? mdra / lim : 0, 3);
	bench_json_num("mover_rebuild_vs_best_limit", hmr && hlim, hmr && hlim ? mreb / blim : 0,
		       3);
	const char *keys[F_COUNT] = {"rounds_loopback_MBps",
				     "rounds_disk_write_MBps",
				     "rounds_disk_write_early_writeback_MBps",
				     "rounds_loopback_per_stream_N_MBps",
				     "rounds_disk_write_per_writer_N_MBps",
				     "rounds_rebuild_MBps_per_ds",
				     "rounds_drain_MBps_per_ds",
				     "rounds_mover_rebuild_MBps",
				     "rounds_mover_drain_MBps"};
	for (int f = 0; f < F_COUNT; f++) {
		bench_json_key(keys[f]);
		printf("[");
		for (unsigned k = 0; k < n; k++) {
			printf("%s", k ? "," : "");
			bench_json_val(fig[f].ok[k], fig_round(f, k), 1);
		}
		printf("]");
	}
	bench_json_key("rounds_rebuild_vs_limit");
	printf("[");
	for (unsigned k = 0; k < n; k++) {
		double l;
		bool ok = fig[F_REBUILD].ok[k] && limit_of(k, true, &l);
		printf("%s", k ? "," : "");
		bench_json_val(ok, ok ? fig_round(F_REBUILD, k) / l : 0, 3);
	}
	printf("]");
	bench_json_key("rounds_loss_to_redundancy_s");
	printf("[");
	for (unsigned k = 0; k < n; k++) {
		printf("%s", k ? "," : "");
		bench_json_val(b->reb[k].ok, b->reb[k].secs, 2);
	}
	printf("]}\n");
}

/* ---------------------------------------------------------------- options */

static bool size_parse(const char *s, uint64_t *out)
{
	if (!bench_size_parse(s, out))
		return false;
	*out = *out / MiB * MiB;
	return *out >= MiB;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: rebuild [--size SIZE[KMG]] [--file-size SIZE] [--data-servers 3|4]\n"
		"               [--objects N] [--rounds N] [--quick] [--dir PATH] [--keep]\n"
		"               [--braid-mds PATH] [--braid-ds PATH] [--braidctl PATH]\n");
	exit(2);
}

static void opts_parse(struct rb_opts *o, int argc, char **argv)
{
	bool quick = false, have_size = false, have_rounds = false;
	const char *tmp = getenv("TMPDIR");
	o->size = 2ull << 30;
	o->objects = 8;
	o->file_size = 32ull << 20;
	o->nds = 4;
	o->rounds = 2;
	o->loop_secs = 2;
	o->dir = tmp && *tmp ? tmp : "/var/tmp";
	bench_cluster_opts_init(&o->cl);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--quick")) {
			quick = true;
		} else if (!strcmp(a, "--keep")) {
			o->keep = true;
		} else if (!v) {
			usage();
		} else if (!strcmp(a, "--size")) {
			if (!size_parse(v, &o->size))
				usage();
			have_size = true;
			i++;
		} else if (!strcmp(a, "--file-size")) {
			if (!size_parse(v, &o->file_size))
				usage();
			i++;
		} else if (!strcmp(a, "--data-servers")) {
			o->nds = (unsigned)strtoul(v, NULL, 10);
			if (o->nds < 3 || o->nds > RB_NDS_MAX)
				usage();
			i++;
		} else if (!strcmp(a, "--objects")) {
			o->objects = (unsigned)strtoul(v, NULL, 10);
			if (o->objects < 2 || o->objects > OBJS_MAX)
				usage();
			i++;
		} else if (!strcmp(a, "--rounds")) {
			o->rounds = (unsigned)strtoul(v, NULL, 10);
			if (o->rounds < 1 || o->rounds > RB_ROUNDS_MAX)
				usage();
			have_rounds = true;
			i++;
		} else if (!strcmp(a, "--dir")) {
			o->dir = v;
			i++;
		} else if (bench_cluster_opts_arg(&o->cl, a, v)) {
			i++;
		} else {
			usage();
		}
	}
	if (quick) {
		if (!have_size)
			o->size = 256ull << 20;
		if (!have_rounds)
			o->rounds = 1;
		o->loop_secs = 1;
	}
	/* the cluster: at least two whole files */
	if (o->size / o->file_size < 2)
		usage();
	/* the mover: whole MiBs per object */
	o->size = o->size / (o->objects * (uint64_t)MiB) * o->objects * MiB;
	if (!o->size)
		usage();
}

int main(int argc, char **argv)
{
	static struct bench b;
	bench_init("bench/rebuild");
	opts_parse(&b.o, argc, argv);
	b.obj_size = b.o.size / b.o.objects;
	char why[512] = "";
	if (!bench_cluster_opts_check(&b.o.cl, why, sizeof(why))) {
		fprintf(stderr, "bench/rebuild: %s\n", why);
		return 99;
	}
	bench_strfmt(b.work, sizeof(b.work), "%s/braid-bench-rebuild.XXXXXX", b.o.dir);
	if (!mkdtemp(b.work)) {
		fprintf(stderr, "bench/rebuild: mkdtemp %s: %s\n", b.work, strerror(errno));
		return 99;
	}
	bench_fstype(b.work, b.fstype, sizeof(b.fstype));
	if (!strcmp(b.fstype, "tmpfs"))
		printf("bench/rebuild: %s is tmpfs: the disk figures are memory's (use --dir)\n",
		       b.o.dir);
	struct statvfs vf;
	/* the cluster's two copies, the mover's source and copies, the disk
	 * test's file, a lost server's store until it is removed, and slack */
	double need_bytes = 6.0 * (double)b.o.size;
	if (!statvfs(b.work, &vf) && (double)vf.f_bavail * (double)vf.f_frsize < need_bytes) {
		fprintf(stderr, "bench/rebuild: %s has %.1f GiB free, needs about %.1f GiB\n",
			b.work, (double)vf.f_bavail * (double)vf.f_frsize / GIB, need_bytes / GIB);
		rmdir(b.work);
		return 99;
	}
	int rc = 0, err = 0;

	bench_strfmt(b.key_file, sizeof(b.key_file), "%s/cluster.key", b.work);
	if ((rc = bench_key_write(b.key_file)) ||
	    (rc = braid_key_load(b.key_file, &b.key, why, sizeof(why)))) {
		fprintf(stderr, "bench/rebuild: cluster key: %s\n", why[0] ? why : strerror(-rc));
		return 99;
	}
	if (!(b.eng = nfsd_client_engine_new(1, 0, &err))) {
		fprintf(stderr, "bench/rebuild: client engine: %s\n", strerror(-err));
		return 99;
	}
	int crc = rb_cluster_start(&b.o, b.work, &b.cl, why, sizeof(why));
	b.files = rb_cluster_files(b.cl);
	if (crc) {
		fprintf(stderr, "bench/rebuild: the cluster: %s\n", why);
		for (unsigned k = 0; k < b.o.rounds; k++) {
			bench_strfmt(b.reb[k].why, sizeof(b.reb[k].why), "the cluster: %s", why);
			bench_strfmt(b.dra[k].why, sizeof(b.dra[k].why), "the cluster: %s", why);
		}
		for (int f = F_REBUILD; f <= F_DRAIN; f++)
			bench_strfmt(fig[f].why, sizeof(fig[f].why), "the cluster: %s", why);
		rb_cluster_stop(b.cl);
		b.cl = NULL;
	}
	if ((rc = daemon_start(&b, &b.src, "source", why, sizeof(why))) ||
	    (rc = daemon_start(&b, &b.dst[0], "dest1", why, sizeof(why))) ||
	    (rc = daemon_start(&b, &b.dst[1], "dest2", why, sizeof(why))) ||
	    (rc = objects_fill(&b, why, sizeof(why)))) {
		fprintf(stderr, "bench/rebuild: %s\n", why);
		for (int f = 0; f < F_COUNT; f++)
			if (!fig[f].why[0])
				bench_strfmt(fig[f].why, sizeof(fig[f].why), "%s", why);
	}
	if (!rc) {
		settle();
		for (unsigned k = 0; k < b.o.rounds; k++) {
			printf("round %u of %u\n", k + 1, b.o.rounds);
			loopback_run(&b, k, 1);
			loopback_run(&b, k, b.o.nds - 1);
			/* the disk measures take turns at going first */
			disk_run(&b, k, k % 2);
			disk_n_run(&b, k);
			disk_run(&b, k, !(k % 2));
			move_run(&b, true, k);
			move_run(&b, false, k);
			copies_run(&b, 1, F_MV_REBUILD, k);
			copies_remove(&b);
			copies_run(&b, 2, F_MV_DRAIN, k);
			copies_remove(&b);
		}
	}
	if (!rc && b.cl && (rc = rb_cluster_check(b.cl, why, sizeof(why))))
		fprintf(stderr, "bench/rebuild: after the moves: %s\n", why);
	else if (!rc && b.cl)
		printf("bench/rebuild: every file's first, middle and last MiB read back right\n");
	rb_cluster_stop(b.cl);
	b.cl = NULL;
	daemon_stop(&b.src);
	daemon_stop(&b.dst[0]);
	daemon_stop(&b.dst[1]);
	nfsd_server_free(b.eng);
	report(&b);
	if (b.o.keep)
		fprintf(stderr, "bench/rebuild: kept %s\n", b.work);
	else
		bench_tree_remove(b.work);
	return rc || crc ? 1 : 0;
}
