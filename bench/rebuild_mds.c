/* SPDX-License-Identifier: MIT */
/*
 * bench/rebuild, the MDS-driven half (rebuild.h): braid-mds and its data
 * servers as child processes (bench/cluster.h), files written through
 * ffclient, and the rebuild and drain that braidctl starts, timed as a
 * user sees them.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/cluster.h"
#include "bench/common.h"
#include "bench/rebuild.h"

#define POLL_S	     0.1   /* braidctl is asked this often */
#define MOVE_BOUND_S 300.0 /* a rebuild or drain not done by then failed */
#define ENT_MAX	     (BENCH_CLUSTER_DS_MAX + 4)
#define DATA_DIR     "/data"

/* every round starts two data servers (one after a rebuild, one after a
 * drain) */
_Static_assert(RB_NDS_MAX + 2 * RB_ROUNDS_MAX <= BENCH_CLUSTER_DS_MAX, "data servers");

struct rb_cluster {
	const struct rb_opts *o;
	struct bench_cluster *c;
	unsigned nfiles;
	char broken[256]; /* why the next measures cannot run ("" while they can) */
};

/*
 * ds list once every copy is counted where it is (the counts come with
 * heartbeats): the servers up and not lost hold two objects per file.  At
 * most 5 s, then as it is (*settled false).
 */
static unsigned ds_settled(struct rb_cluster *k, struct bench_cluster_ent *v, unsigned max,
			   bool *settled)
{
	double end = bench_now_s() + 5;
	unsigned n;
	for (;;) {
		n = bench_cluster_ds_list(k->c, v, max);
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

static int cluster_fill(struct rb_cluster *k, char *why, size_t len)
{
	const struct rb_opts *o = k->o;
	int rc = bench_cluster_dir_make(k->c, DATA_DIR, "whole,mirrors=2", why, len);
	if (rc)
		return rc;
	struct bench_cluster_io io;
	if ((rc =
		 bench_cluster_files_write(k->c, DATA_DIR, k->nfiles, o->file_size, &io, why, len)))
		return rc;
	double bytes = (double)k->nfiles * (double)o->file_size;
	printf("bench/rebuild: cluster filled: %u files of %.0f MiB in /data (whole, mirrors=2) "
	       "through ffclient in %.1f s: %.0f MB/s of files, %.0f MB/s to the data servers"
	       "%s\n",
	       k->nfiles, (double)o->file_size / RB_MiB, io.secs, bytes / io.secs / 1e6,
	       (double)io.ds_bytes / io.secs / 1e6,
	       io.ds_bytes ? "" : " (no layouts: all through the MDS)");
	struct bench_cluster_ent v[ENT_MAX];
	bool settled;
	unsigned n = ds_settled(k, v, ENT_MAX, &settled);
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
	char dir[PATH_MAX];
	bench_strfmt(dir, sizeof(dir), "%s/cluster", work);
	int rc = bench_cluster_start(&o->cl, dir, o->nds, &k->c, why, len);
	return rc ? rc : cluster_fill(k, why, len);
}

unsigned rb_cluster_files(const struct rb_cluster *k)
{
	return k ? k->nfiles : 0;
}

/*
 * Poll braidctl until the move begun at t0 (p0: what it showed before) is
 * done: copies moved and each made current, none left naming the server,
 * none stale, and a drained server (drained != 0) holding no object.
 */
static void move_wait(struct rb_cluster *k, struct rb_move *m, const struct bench_cluster_prot *p0,
		      double t0, uint32_t drained)
{
	struct bench_cluster_prot p = *p0;
	uint64_t counted = p0->files;
	double t_last = 0;
	for (;;) {
		if (bench_now_s() - t0 > MOVE_BOUND_S) {
			char last[200];
			bench_log_tail_errors(k->c->mds_log, NULL, last, sizeof(last));
			bench_strfmt(m->why, sizeof(m->why),
				     "not done in %.0f s (moved %llu, naming it %llu, stale %llu; "
				     "braid-mds: %s)",
				     MOVE_BOUND_S, (unsigned long long)(p.moved - p0->moved),
				     (unsigned long long)p.rebuild, (unsigned long long)p.stale,
				     last);
			return;
		}
		if (!bench_cluster_prot_get(k->c, &p)) {
			bench_strfmt(m->why, sizeof(m->why), "braidctl rebuild: %s",
				     bench_cluster_ctl_said(k->c));
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
			struct bench_cluster_ent v[ENT_MAX];
			unsigned n = bench_cluster_ds_list(k->c, v, ENT_MAX);
			const struct bench_cluster_ent *e = bench_cluster_ent_of(v, n, drained);
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
static void count_dest(struct rb_cluster *k, struct rb_move *m,
		       const struct bench_cluster_ent *before, unsigned nb)
{
	struct bench_cluster_ent v[ENT_MAX];
	bool settled;
	unsigned n = ds_settled(k, v, ENT_MAX, &settled);
	for (unsigned i = 0; i < n; i++) {
		const struct bench_cluster_ent *b = bench_cluster_ent_of(before, nb, v[i].id);
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
static void replace(struct rb_cluster *k, struct bench_cluster_ds *gone)
{
	bench_tree_remove(gone->dir);
	char why[256];
	if (bench_cluster_ds_add(k->c, why, sizeof(why)))
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
	struct bench_cluster_ent before[ENT_MAX];
	bool settled;
	unsigned nb = ds_settled(k, before, ENT_MAX, &settled);
	struct bench_cluster_ds *d = bench_cluster_ds_fullest(k->c, before, nb);
	struct bench_cluster_prot p0;
	if (!d || !bench_cluster_prot_get(k->c, &p0)) {
		bench_strfmt(m->why, sizeof(m->why), "%s",
			     d ? "braidctl rebuild failed" : "no data server holds copies");
		return;
	}
	m->from = d->id;
	double t0;
	if (bench_cluster_ds_lose(k->c, d, &t0, &m->wait_secs, m->why, sizeof(m->why))) {
		replace(k, d);
		return;
	}
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
	struct bench_cluster_ent before[ENT_MAX];
	bool settled;
	unsigned nb = ds_settled(k, before, ENT_MAX, &settled);
	struct bench_cluster_ds *d = bench_cluster_ds_fullest(k->c, before, nb);
	struct bench_cluster_prot p0;
	if (!d || !bench_cluster_prot_get(k->c, &p0)) {
		bench_strfmt(m->why, sizeof(m->why), "%s",
			     d ? "braidctl rebuild failed" : "no data server holds copies");
		return;
	}
	m->from = d->id;
	double t0 = bench_now_s();
	if (bench_cluster_ctl(k->c, false, "ds drain %u", d->id)) {
		bench_strfmt(m->why, sizeof(m->why), "braidctl ds drain %u: %s", d->id,
			     bench_cluster_ctl_said(k->c));
		return;
	}
	move_wait(k, m, &p0, t0, d->id);
	count_dest(k, m, before, nb);
	if (m->ok) {
		/* holds nothing now: stopped, and another takes its place */
		bench_cluster_ds_stop(d, false);
		replace(k, d);
	} else {
		bench_strfmt(k->broken, sizeof(k->broken), "the drain of %s did not end", d->host);
	}
}

int rb_cluster_check(struct rb_cluster *k, char *why, size_t len)
{
	struct bench_cluster_io io;
	return bench_cluster_files_read(k->c, DATA_DIR, k->nfiles, k->o->file_size, false, &io, why,
					len);
}

void rb_cluster_stop(struct rb_cluster *k)
{
	if (!k)
		return;
	bench_cluster_stop(k->c);
	free(k);
}
