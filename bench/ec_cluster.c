/* SPDX-License-Identifier: MIT */
/*
 * bench/ec, the cluster half (ec.h): braid-mds and braid-ds as child
 * processes (bench/cluster.h), files under an erasure-coding policy
 * written and read through our client, as a user sees them.
 *
 * Sealed is what the MDS's metrics say: braid_mds_ec_files{state=
 * "to_seal"} 0 and braid_mds_ec_sealed_total at least the files (the MDS
 * is fresh: nothing else was sealed).  Degraded is checked, not assumed:
 * a degraded read must have moved braid_mds_ec_degraded_layouts_total
 * (layouts naming reconstructing handles) and the data servers'
 * braid_ds_ec_read_bytes_total (bytes rebuilt for a READ); else the round
 * fails.  Every byte read is checked against the pattern it was written
 * with (bench_cluster_files_read): a wrong byte fails the round.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/cluster.h"
#include "bench/common.h"
#include "bench/ec.h"

#define MiB	       (1u << 20)
#define POLL_S	       0.2
#define REBUILD_POLL_S 0.05 /* a rebuild here takes about a second */
#define SEAL_BOUND_S   300.0
#define READS_MAX      16  /* reads of the data set in one measure */
#define VICTIM_IDS     256 /* data server ids counted */
#define ENT_MAX	       (BENCH_CLUSTER_DS_MAX + 4)

#define M_TO_SEAL  "braid_mds_ec_files{state=\"to_seal\"}"
#define M_SEALED   "braid_mds_ec_sealed_total"
#define M_DEGRADED "braid_mds_ec_degraded_layouts_total"
#define M_EC_READ  "braid_ds_ec_read_bytes_total"
#define M_COMPUTED "braid_ds_ec_compute_written_bytes_total"

static int mds_metric(struct ec_cluster *k, const char *series, double *v)
{
	return bench_cluster_metric(k->c->mds_metrics_port, series, v);
}

/* Until every file is sealed (the MDS's metrics); the seconds it took. */
static int seal_wait(struct ec_cluster *k, double *secs, char *why, size_t len)
{
	double t0 = bench_now_s(), to_seal = -1, sealed = -1;
	while (bench_now_s() - t0 < SEAL_BOUND_S) {
		int rc;
		if ((rc = mds_metric(k, M_TO_SEAL, &to_seal)) ||
		    (rc = mds_metric(k, M_SEALED, &sealed))) {
			bench_strfmt(why, len, "braid-mds metrics (%s, %s): %s", M_TO_SEAL,
				     M_SEALED, strerror(-rc));
			return rc;
		}
		if (to_seal == 0 && sealed >= k->nfiles) {
			*secs = bench_now_s() - t0;
			return 0;
		}
		bench_sleep_s(POLL_S);
	}
	char last[200];
	bench_log_tail_errors(k->c->mds_log, NULL, last, sizeof(last));
	bench_strfmt(why, len,
		     "%.0f of %u files sealed, %.0f to seal, after %.0f s (braid-mds: %s)", sealed,
		     k->nfiles, to_seal, SEAL_BOUND_S, last);
	return -ETIMEDOUT;
}

int ec_cluster_start(struct ec_cluster *k, const struct ec_cluster_opts *o, char *why, size_t len)
{
	memset(k, 0, sizeof(*k));
	k->o = o;
	k->nfiles = (unsigned)(o->size / o->file_size);
	char dir[PATH_MAX];
	bench_strfmt(dir, sizeof(dir), "%s/cluster", o->dir);
	int rc = bench_cluster_start(&o->cl, dir, o->nds, &k->c, why, len);
	if (rc)
		return rc;
	rc = bench_cluster_dir_make(k->c, EC_DIR, EC_POLICY, why, len);
	if (rc)
		return rc;
	struct bench_cluster_io io;
	if ((rc = bench_cluster_files_write(k->c, EC_DIR, k->nfiles, o->file_size, &io, why, len)))
		return rc;
	double seal_s = 0;
	if ((rc = seal_wait(k, &seal_s, why, len)))
		return rc;
	printf("%s: cluster: braid-mds and %u braid-ds; %u files of %.0f MiB in %s (%s) written "
	       "through ffclient in %.1f s (%.0f MB/s, %.0f%% to the data servers), all sealed "
	       "%.1f s later\n",
	       bench_prog, o->nds, k->nfiles, (double)o->file_size / MiB, EC_DIR, EC_POLICY,
	       io.secs, (double)io.bytes / io.secs / 1e6,
	       io.bytes ? 100.0 * (double)io.ds_bytes / (double)io.bytes : 0, seal_s);
	return 0;
}

/* Drop the data servers' page cache (unless --warm): reads go to the disk. */
static void cache_drop(struct ec_cluster *k)
{
	if (k->o->warm)
		return;
	for (unsigned i = 0; i < k->c->nstarted; i++)
		bench_cluster_ds_store_bytes(&k->c->ds[i], true);
}

/*
 * Reads of the data set, each after a cache drop, until they took
 * o->read_secs in all (at most READS_MAX): MB/s of file bytes over their
 * seconds, every byte checked.
 */
static bool read_pass(struct ec_cluster *k, const char *what, double *mbps, char *why, size_t len)
{
	double bytes = 0, secs = 0;
	for (unsigned n = 0; n < READS_MAX && (!n || secs < k->o->read_secs); n++) {
		cache_drop(k);
		struct bench_cluster_io io;
		char msg[200];
		int rc = bench_cluster_files_read(k->c, EC_DIR, k->nfiles, k->o->file_size, true,
						  &io, msg, sizeof(msg));
		if (rc) {
			bench_strfmt(why, len, "%s read: %s", what, msg);
			return false;
		}
		if (io.mds_bytes) {
			bench_strfmt(why, len,
				     "%s read: %.0f MiB went through the MDS (no usable layout)",
				     what, (double)io.mds_bytes / MiB);
			return false;
		}
		bytes += (double)io.bytes;
		secs += io.secs;
	}
	*mbps = bytes / secs / 1e6;
	return true;
}

/*
 * The running data server holding the most data segments of the data set
 * (`braidctl --json layout` of every file: each segment's "mirrors"
 * names its server first; parity holders are not segments): its loss
 * degrades the most reads, and each round kills the same one, so that
 * the rounds' ratios compare alike.  *segs its segments, *total all.
 */
static struct bench_cluster_ds *victim(struct ec_cluster *k, unsigned *segs, unsigned *total)
{
	unsigned count[VICTIM_IDS] = {0};
	*segs = *total = 0;
	for (unsigned i = 0; i < k->nfiles; i++) {
		char path[PATH_MAX];
		bench_cluster_file_path(path, sizeof(path), EC_DIR, i);
		if (bench_cluster_ctl(k->c, true, "layout %s", path))
			continue;
		const char *p = strstr(k->c->out, "\"segments\":");
		while (p && (p = strstr(p, "\"mirrors\":"))) {
			/* "mirrors": [[ID, ...], ...]: the first mirror's first server */
			const char *q = p + strlen("\"mirrors\":");
			q += strspn(q, " \n[");
			unsigned long id = strtoul(q, NULL, 10);
			if (id < VICTIM_IDS)
				count[id]++;
			(*total)++;
			p++;
		}
	}
	struct bench_cluster_ds *best = NULL;
	for (unsigned id = 0; id < VICTIM_IDS; id++) {
		struct bench_cluster_ds *d = bench_cluster_ds_by_id(k->c, id);
		if (d && count[id] > *segs) {
			*segs = count[id];
			best = d;
		}
	}
	return best;
}

void ec_cluster_round(struct ec_cluster *k, struct ec_round *res)
{
	memset(res, 0, sizeof(*res));
	if (k->broken[0]) {
		bench_strfmt(res->why, sizeof(res->why), "%s", k->broken);
		return;
	}
	struct bench_loopback_res lb;
	char msg[200];
	if (bench_loopback_measure(1, k->o->loop_secs, &lb, msg, sizeof(msg)))
		printf("  loopback: %s\n", msg);
	else
		res->loop_mbps = lb.mbps;
	if (!read_pass(k, "normal", &res->normal_mbps, res->why, sizeof(res->why)))
		return;

	struct bench_cluster_ds *d = victim(k, &res->killed_segs, &res->segs);
	if (!d) {
		bench_strfmt(res->why, sizeof(res->why),
			     "braidctl layout names no data segment on a running data server");
		return;
	}
	res->killed = d->id;
	double deg0 = 0, deg1 = 0;
	mds_metric(k, M_DEGRADED, &deg0);
	double rd0 = bench_cluster_ds_metric_sum(k->c, M_EC_READ);
	bench_cluster_ds_stop(d, true);
	bool read =
	    !bench_cluster_ds_wait_down(k->c, d, &res->down_s, res->why, sizeof(res->why)) &&
	    read_pass(k, "degraded", &res->degraded_mbps, res->why, sizeof(res->why));
	if (read) {
		mds_metric(k, M_DEGRADED, &deg1);
		res->degraded_layouts = (uint64_t)(deg1 - deg0);
		res->reconstructed_bytes =
		    (uint64_t)(bench_cluster_ds_metric_sum(k->c, M_EC_READ) - rd0);
		if (!res->degraded_layouts || !res->reconstructed_bytes)
			bench_strfmt(res->why, sizeof(res->why),
				     "the read with %s down was not degraded: %llu degraded "
				     "layouts, %llu bytes reconstructed",
				     d->host, (unsigned long long)res->degraded_layouts,
				     (unsigned long long)res->reconstructed_bytes);
		else
			res->ok = true;
	}
	/* back on its store, with its chunks, for the next round */
	if (bench_cluster_ds_restart(k->c, d, msg, sizeof(msg)))
		bench_strfmt(k->broken, sizeof(k->broken), "%s did not come back: %s", d->host,
			     msg);
}

bool ec_cluster_space(struct ec_cluster *k, uint64_t *raw, uint64_t *logical)
{
	*raw = 0;
	*logical = (uint64_t)k->nfiles * k->o->file_size;
	sync();
	for (unsigned i = 0; i < k->c->nstarted; i++)
		if (k->c->ds[i].ch.pid > 0)
			*raw += bench_cluster_ds_store_bytes(&k->c->ds[i], false);
	return *raw > 0;
}

/* The "ec" part of `braidctl --json rebuild` (the output in k->c->out). */
struct ec_prog {
	bool seen;			  /* braidctl shows it (braid-mds rebuilds EC chunks) */
	uint64_t files, chunks;		  /* left to rebuild */
	uint64_t chunks_done, bytes_done; /* since the MDS started */
};

static void ec_prog_get(struct ec_cluster *k, struct ec_prog *e)
{
	memset(e, 0, sizeof(*e));
	const char *p = bench_json_find(k->c->out, NULL, "ec");
	const char *end = p && *p == '{' ? strchr(p, '}') : NULL;
	if (!end)
		return;
	e->seen = true;
	e->files = bench_json_u64(p, end, "files");
	e->chunks = bench_json_u64(p, end, "chunks");
	e->chunks_done = bench_json_u64(p, end, "chunks_done");
	e->bytes_done = bench_json_u64(p, end, "bytes_done");
}

void ec_cluster_rebuild(struct ec_cluster *k, struct ec_rebuild *res)
{
	memset(res, 0, sizeof(*res));
	if (k->broken[0]) {
		bench_strfmt(res->why, sizeof(res->why), "%s", k->broken);
		return;
	}
	struct bench_cluster_ent v[ENT_MAX];
	unsigned n = bench_cluster_ds_list(k->c, v, ENT_MAX);
	struct bench_cluster_ds *d = bench_cluster_ds_fullest(k->c, v, n);
	struct bench_cluster_prot p0, p;
	if (!d || !bench_cluster_prot_get(k->c, &p0)) {
		bench_strfmt(res->why, sizeof(res->why), "%s",
			     d ? "braidctl rebuild failed" : "no data server holds objects");
		return;
	}
	struct ec_prog e0, e;
	ec_prog_get(k, &e0);
	res->lost = d->id;
	res->lost_bytes = bench_cluster_ds_store_bytes(d, false);
	double w0 = bench_cluster_ds_metric_sum(k->c, M_COMPUTED);
	double t0, wait_s;
	if (bench_cluster_ds_lose(k->c, d, &t0, &wait_s, res->why, sizeof(res->why)))
		return;
	/* progress: chunks or files rebuilt, chunks computed on the data servers */
	double last_w = w0, t_prog = t0, t = t0;
	uint64_t last_files = p0.files, last_bytes = p0.bytes, last_chunks = e0.chunks_done;
	bool moved = false;
	for (;;) {
		bench_sleep_s(REBUILD_POLL_S);
		t = bench_now_s();
		if (!bench_cluster_prot_get(k->c, &p)) {
			bench_strfmt(res->why, sizeof(res->why), "braidctl rebuild: %s",
				     bench_cluster_ctl_said(k->c));
			return;
		}
		ec_prog_get(k, &e);
		double w = bench_cluster_ds_metric_sum(k->c, M_COMPUTED);
		if (w != last_w || p.files != last_files || p.bytes != last_bytes ||
		    e.chunks_done != last_chunks) {
			moved = true;
			t_prog = t;
			last_w = w;
			last_files = p.files;
			last_bytes = p.bytes;
			last_chunks = e.chunks_done;
		}
		if (p.unrecoverable != p0.unrecoverable) {
			bench_strfmt(res->why, sizeof(res->why),
				     "braid-mds counts %llu files unrecoverable after ds lost",
				     (unsigned long long)(p.unrecoverable - p0.unrecoverable));
			return;
		}
		if (moved && !p.rebuild && !p.stale && !e.files && !e.chunks)
			break;
		if (t - t_prog > k->o->rebuild_idle_s) {
			bench_strfmt(res->why, sizeof(res->why),
				     "no progress in %.0f s after ds lost (%llu files still name "
				     "it, %s): braid-mds does not rebuild erasure-coded chunks",
				     k->o->rebuild_idle_s, (unsigned long long)p.rebuild,
				     e.seen ? "EC chunks left to rebuild"
					    : "braidctl rebuild shows no EC rebuild");
			return;
		}
	}
	res->secs = t_prog - t0;
	res->shown_secs = t - t0;
	res->chunks = e.chunks_done - e0.chunks_done;
	res->written_bytes = e.seen ? e.bytes_done - e0.bytes_done : (uint64_t)(last_w - w0);
	if (res->secs <= 0 || !res->written_bytes) {
		bench_strfmt(res->why, sizeof(res->why), "done, but no chunk counted as rebuilt");
		return;
	}
	/* the lost server's chunks are elsewhere now: reads are not degraded */
	double deg0 = 0, deg1 = 0, mbps;
	mds_metric(k, M_DEGRADED, &deg0);
	res->ok = read_pass(k, "after the rebuild", &mbps, res->why, sizeof(res->why));
	if (res->ok) {
		mds_metric(k, M_DEGRADED, &deg1);
		res->degraded_after = (uint64_t)(deg1 - deg0);
		res->ok = !res->degraded_after;
		if (!res->ok)
			bench_strfmt(res->why, sizeof(res->why),
				     "braidctl shows it done, but a read after it still got %llu "
				     "degraded layouts",
				     (unsigned long long)res->degraded_after);
	} else {
		res->read_failed = true;
	}
}

void ec_cluster_stop(struct ec_cluster *k)
{
	bench_cluster_stop(k->c);
	k->c = NULL;
}
