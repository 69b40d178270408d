/* SPDX-License-Identifier: MIT */
/*
 * Resilver (mds/resilver.h): stale copies brought up to date by the data
 * servers, the MDS directing.  The header says how a copy is made.
 */
#include "config.h"

#include "braid_ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl/client.h"
#include "layout/fence.h"
#include "mds/data.h"
#include "mds/dsreg.h"
#include "mds/ec.h"
#include "mds/layout.h"
#include "mds/mds_impl.h"
#include "mds/resilver.h"
#include "nfsd/clock.h"
#include "nfsd/metrics.h"

#define RESILVER_SCAN_MS    2000 /* the stale set is walked this often */
#define RESILVER_BATCH	    1024 /* files taken from it per walk */
#define RESILVER_QUIESCE_MS 30000 /* most a file's RW layouts are waited for */
#define RESILVER_WARNED	    64	 /* files whose "no source" was logged, kept */
#define RESILVER_COPIES_MAX 64	 /* [mds] resilver_copies at most */

/* A file with stale copies, for one scan: made current by one worker. */
struct rs_job {
	uint64_t ino;
	uint32_t to[LAYOUT_SET_MAX]; /* its stale copies' data servers */
	unsigned nto;
	bool ec; /* a sealed erasure-coded file's chunks to rebuild (mds/ec.h) */
	enum { JOB_PENDING, JOB_RUNNING, JOB_DONE } state;
};

/* Copies running into one data server. */
struct rs_busy {
	uint32_t id;
	unsigned n;
};

struct mds_resilver {
	struct braid_mds *mds;
	pthread_mutex_t mu; /* guards what follows, and st */
	pthread_cond_t cond;  /* the scanner: a kick, the stop, a job done */
	pthread_cond_t wcond; /* the workers: jobs to take, the stop */
	bool stop, kick, running;
	pthread_t thread;
	pthread_t *workers;
	unsigned nworkers, nstarted;
	struct mds_resilver_stats st;
	uint32_t failed[16]; /* data servers a copy into failed this scan */
	unsigned nfailed;
	struct rs_job *jobs; /* this scan's (the scanner fills them, workers take them) */
	unsigned njobs, ndone;
	uint64_t *ecq; /* the scanner's: erasure-coded files to rebuild, this scan */
	unsigned necq;
	struct rs_busy busy[RESILVER_COPIES_MAX];
	unsigned nbusy;
	unsigned per_ds; /* [mds] resilver_copies_per_ds */
	struct mds_lost_file lost[MDS_LOST_FILES_MAX]; /* mu */
	unsigned nlost;				       /* mu */
	uint64_t rate_t0, rate_b0; /* mu: the busy period's start (0: idle), its bytes */
	bool rebalance;				       /* mu: the durable flag's value */
	uint64_t warned[RESILVER_WARNED];
	unsigned nwarned;
	struct nfsd_metric *m_files, *m_bytes, *m_fail, *m_stale;
	struct nfsd_metric *m_moved, *m_unrec, *m_rebuild;
};

/* ------------------------------------------------------------ helpers */

static bool stopping(struct mds_resilver *rs)
{
	pthread_mutex_lock(&rs->mu);
	bool s = rs->stop;
	pthread_mutex_unlock(&rs->mu);
	return s;
}

/* The copy braidctl shows as in flight (the one last heard from); bytes
 * ~0: the copy of ino is over (shown no more, unless another took it). */
static void stats_set(struct mds_resilver *rs, uint64_t ino, uint32_t to, uint64_t bytes)
{
	pthread_mutex_lock(&rs->mu);
	if (bytes != UINT64_MAX) {
		rs->st.inflight_ino = ino;
		rs->st.inflight_to = to;
		rs->st.inflight_bytes = bytes;
	} else if (rs->st.inflight_ino == ino && rs->st.inflight_to == to) {
		rs->st.inflight_ino = 0;
		rs->st.inflight_to = 0;
		rs->st.inflight_bytes = 0;
	}
	pthread_mutex_unlock(&rs->mu);
}

/* Whether a copy into x failed this scan (then none is tried before the
 * next); with add, record that one did. */
static bool failed_into(struct mds_resilver *rs, uint32_t x, bool add)
{
	pthread_mutex_lock(&rs->mu);
	bool found = false;
	for (unsigned i = 0; i < rs->nfailed && !found; i++)
		found = rs->failed[i] == x;
	if (add && !found && rs->nfailed < sizeof(rs->failed) / sizeof(rs->failed[0]))
		rs->failed[rs->nfailed++] = x;
	pthread_mutex_unlock(&rs->mu);
	return found;
}

/* Log "no source" once per file (a small ring of those logged). */
static void warn_once(struct mds_resilver *rs, uint64_t ino, uint32_t ds)
{
	pthread_mutex_lock(&rs->mu);
	for (unsigned i = 0; i < rs->nwarned && i < RESILVER_WARNED; i++)
		if (rs->warned[i] == ino) {
			pthread_mutex_unlock(&rs->mu);
			return;
		}
	rs->warned[rs->nwarned++ % RESILVER_WARNED] = ino;
	pthread_mutex_unlock(&rs->mu);
	mds_log("inode %llu: its stale copy on data server %u has bytes no current mirror up "
		"holds: left stale (never read) until one is",
		(unsigned long long)ino, ds);
}

/* The member leaving (a move's source), or 0. */
static uint32_t leaving_of(const struct mds_file_map *m)
{
	for (unsigned i = 0; i < m->nset; i++)
		if (m->set[i] & MDS_LAYOUT_LEAVING)
			return m->set[i] & MDS_LAYOUT_ID;
	return 0;
}

/*
 * Where a copy's bytes come from.  Every data server keeps one object per
 * file at the file's offsets (layout/policy.h), so the bytes x holds in a
 * segment are, at the same offsets, in the object of the data server at
 * the same stripe position of any other mirror of that segment.  A plan
 * is the file's ranges x holds, ascending, each with a current source; a
 * grid whose mirrors pair differently per segment takes several sources,
 * a whole-file policy one range from one.
 */
struct plan_src {
	uint32_t id;
	struct mds_ds_info info;
	uint64_t change0; /* its object's change attribute before the copy */
	bool have0;
	uint64_t size; /* its object's, at the last STAT (0: none there) */
};
struct plan_range {
	uint64_t off, len; /* len LAYOUT_ALL: to the source's end */
	unsigned src;
};
struct plan {
	struct plan_range *r;
	unsigned n, cap;
	struct plan_src src[LAYOUT_SET_MAX];
	unsigned nsrc;
};

/* The segments of a file, gathered (the store's reads cannot nest in its
 * listing, nor can the registry's lookups be kept inside it). */
struct seg_vec {
	struct seg_ent {
		uint64_t seg;
		struct mds_layout_seg l;
	} *v;
	size_t n, cap;
	bool nomem;
};

static int segs_add(void *arg, uint64_t seg, const struct mds_layout_seg *l)
{
	struct seg_vec *sv = arg;
	if (seg >= MDS_LAYOUT_SEG_END)
		return 0;
	if (sv->n == sv->cap) {
		size_t cap = sv->cap ? 2 * sv->cap : 16;
		struct seg_ent *v = realloc(sv->v, cap * sizeof(*v));
		if (!v) {
			sv->nomem = true;
			return 1;
		}
		sv->v = v;
		sv->cap = cap;
	}
	sv->v[sv->n++] = (struct seg_ent){.seg = seg, .l = *l};
	return 0;
}

/* Whether id can be read from now: current in m, up, reachable. */
static int src_usable(struct braid_mds *mds, struct plan *pl, const struct mds_file_map *m,
		      uint32_t id)
{
	for (unsigned i = 0; i < pl->nsrc; i++)
		if (pl->src[i].id == id)
			return (int)i;
	if (pl->nsrc == LAYOUT_SET_MAX || mds_data_map_stale(m, id))
		return -1;
	bool in = false;
	for (unsigned i = 0; i < m->nset && !in; i++)
		in = (m->set[i] & MDS_LAYOUT_ID) == id;
	struct plan_src *ps = &pl->src[pl->nsrc];
	if (!in || mds_dsreg_get(mds, id, &ps->info) || !ps->info.up || !ps->info.nctl_addrs)
		return -1;
	ps->id = id;
	ps->have0 = false;
	return (int)pl->nsrc++;
}

static int plan_add(struct plan *pl, uint64_t off, uint64_t len, unsigned src)
{
	struct plan_range *last = pl->n ? &pl->r[pl->n - 1] : NULL;
	if (last && last->src == src && last->len != LAYOUT_ALL && last->off + last->len == off) {
		last->len = len == LAYOUT_ALL ? LAYOUT_ALL : last->len + len;
		return 0;
	}
	if (pl->n == pl->cap) {
		unsigned cap = pl->cap ? 2 * pl->cap : 16;
		struct plan_range *r = realloc(pl->r, cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		pl->r = r;
		pl->cap = cap;
	}
	pl->r[pl->n++] = (struct plan_range){.off = off, .len = len, .src = src};
	return 0;
}

static int seg_cmp(const void *x, const void *y)
{
	const struct seg_ent *a = x, *b = y;
	return a->seg < b->seg ? -1 : a->seg > b->seg;
}

/*
 * The plan for x's copy of ino (for a move's target, of what the leaving
 * member holds, the leaving member the first choice of source): 0, or
 * -ENOENT when some range x holds has no current copy up.
 */
static int plan_make(struct braid_mds *mds, uint64_t ino, const struct mds_file_map *m,
		     uint32_t x, bool target, struct plan *pl)
{
	memset(pl, 0, sizeof(*pl));
	uint32_t ref = target ? leaving_of(m) : x;
	if (!ref)
		return -ENOENT;
	struct seg_vec sv = {0};
	int rc = mds_layout_list(mds->store, ino, segs_add, &sv);
	if (rc >= 0 && sv.nomem)
		rc = -ENOMEM;
	if (rc < 0) {
		free(sv.v);
		return rc;
	}
	qsort(sv.v, sv.n, sizeof(*sv.v), seg_cmp);
	unsigned S = m->pol.stripes ? m->pol.stripes : 1;
	int prev = -1;
	rc = 0;
	for (size_t k = 0; k < sv.n && !rc; k++) {
		const struct mds_layout_seg *l = &sv.v[k].l;
		unsigned M = l->nds / S;
		for (unsigned i = 0; i < M * S && !rc; i++) {
			if (l->ds[i] != ref)
				continue;
			int src = -1;
			if (target)
				src = src_usable(mds, pl, m, ref);
			/* the previous range's source first: fewer, longer ranges */
			for (unsigned mm = 0; mm < M && src < 0 && prev >= 0; mm++)
				if (mm != i / S && l->ds[mm * S + i % S] == pl->src[prev].id)
					src = prev;
			for (unsigned mm = 0; mm < M && src < 0; mm++) {
				uint32_t y = l->ds[mm * S + i % S];
				if (mm != i / S && y != x && y != ref)
					src = src_usable(mds, pl, m, y);
			}
			if (src < 0) {
				rc = -ENOENT;
				break;
			}
			uint64_t s0, len;
			layout_seg_bounds(&m->pol, sv.v[k].seg, &s0, &len);
			rc = plan_add(pl, s0, len, (unsigned)src);
			prev = src;
		}
	}
	free(sv.v);
	if (!rc && !pl->n)
		rc = -ENOENT; /* x holds nothing of it: nothing to copy from */
	/* a move's target from the leaving member alone: its whole object is
	 * exactly what the target is to hold */
	if (!rc && target && pl->nsrc == 1 && pl->src[0].id == ref)
		pl->r[0] = (struct plan_range){.off = 0, .len = LAYOUT_ALL}, pl->n = 1;
	if (rc) {
		free(pl->r);
		pl->r = NULL;
	}
	return rc;
}

/* The copy's arguments naming source ps. */
static void args_source(struct ds_ctl_copy_args *args, const struct plan_src *ps)
{
	args->nsrc = 0;
	for (unsigned k = 0; k < ps->info.nctl_addrs && k < DS_CTL_ADDRS_MAX; k++) {
		args->src[k].netid = ps->info.ctl_addrs[k].netid;
		args->src[k].uaddr = ps->info.ctl_addrs[k].uaddr;
		args->nsrc++;
	}
}

/*
 * One whole pass of the plan into dc's data server: each range from its
 * source, ascending (a COPY at an offset cuts the destination there first,
 * so each range keeps those before it).  A one-range plan from 0 to the end
 * runs until the destination is a whole copy of the source; a bounded
 * range, until its end or the source's.
 */
static int pass(struct mds_resilver *rs, struct mds_ds_conn *dc, struct ds_ctl_copy_args *args,
		const struct plan *pl, uint64_t ino, uint64_t *written)
{
	struct braid_mds *mds = rs->mds;
	struct ds_ctl_copy_res res;
	for (unsigned k = 0; k < pl->n; k++) {
		const struct plan_range *r = &pl->r[k];
		uint64_t end = r->len == LAYOUT_ALL || r->off + r->len < r->off ? UINT64_MAX
										   : r->off + r->len;
		/* nothing there: a COPY from past the source's end would cut
		 * the destination to that end, ranges before this one too */
		if (pl->n > 1 && r->off >= pl->src[r->src].size)
			continue;
		args_source(args, &pl->src[r->src]);
		args->offset = r->off;
		for (;;) {
			if (stopping(rs))
				return -ECANCELED;
			uint64_t left = end - args->offset;
			args->count = left < DS_CTL_COPY_MAX ? left : DS_CTL_COPY_MAX;
			int rc = ds_ctl_copy(dc->clnt, &mds->key, args, &res);
			if (rc)
				return rc;
			*written += res.written;
			stats_set(rs, ino, dc->id, res.next);
			if (res.done || res.next >= end)
				break;
			if (res.next <= args->offset)
				return -EIO; /* no progress */
			args->offset = res.next;
		}
	}
	return 0;
}

/* The file is gone (or an orphan) after a copy made its object again at
 * x: remove that object (best effort; the orphan sweep removes the rest). */
static void drop_if_gone(struct braid_mds *mds, uint64_t ino, const struct ds_objid *id,
			 struct mds_ds_conn *dc)
{
	struct mds_attr a;
	int rc = mds_inode_getattr(mds->store, ino, &a);
	if (rc == -ENOENT || rc == -ESTALE || (!rc && !a.nlink))
		ds_ctl_remove(dc->clnt, &mds->key, id);
}

/*
 * Every source's object as it is now (STAT): its size into the plan (0
 * when it has none), and whether all of them are as pass 1 began (with
 * first, that beginning).
 */
static bool sources_stat(struct braid_mds *mds, struct plan *pl, const struct ds_objid *id,
			 bool first)
{
	bool same = true;
	for (unsigned i = 0; i < pl->nsrc; i++) {
		struct plan_src *ps = &pl->src[i];
		int rc;
		struct ds_ctl_stat st = {0};
		struct mds_ds_conn *dc = mds_ds_conn_get(mds, ps->id, &rc);
		if (dc) {
			rc = ds_ctl_stat(dc->clnt, &mds->key, id, &st);
			mds_ds_conn_put(dc);
		}
		ps->size = rc ? 0 : st.size;
		if (rc == -ENOENT)
			rc = 0; /* nothing written there yet */
		if (first) {
			ps->have0 = !rc;
			ps->change0 = st.change;
		} else {
			same = same && ps->have0 && !rc && st.change == ps->change0;
		}
		/* unknown: copy it all (a source that fails fails the copy) */
		if (rc)
			ps->size = UINT64_MAX;
	}
	return same;
}

/* A move finished: the copy left behind on from goes (best effort: a
 * server down keeps it, an object no file names). */
static void drop_moved(struct braid_mds *mds, const struct mds_attr *a, uint32_t from)
{
	int rc;
	struct mds_ds_conn *dc = mds_ds_conn_get(mds, from, &rc);
	if (!dc) {
		mds_log("inode %llu: its old copy stays on data server %u (down): no file names "
			"it now",
			(unsigned long long)a->ino, from);
		return;
	}
	struct ds_objid id;
	mds_data_objid(a, &id);
	rc = ds_ctl_remove(dc->clnt, &mds->key, &id);
	mds_ds_conn_put(dc);
	if (!rc || rc == -ENOENT) {
		mds_dsreg_space_freed(mds, from);
		mds_layout_ds_space_freed(mds, from);
	}
}

/* Bring ino's copy on data server x up to date, if it can be now (a
 * move's target: finish the move). */
static void copy_one(struct mds_resilver *rs, const struct mds_attr *a,
		     const struct mds_file_map *m, uint32_t x, bool target)
{
	struct braid_mds *mds = rs->mds;
	struct mds_ds_info xi;
	if (failed_into(rs, x, false))
		return; /* it failed a copy this scan: not again before the next */
	if (mds_dsreg_get(mds, x, &xi) || !xi.up)
		return; /* when it is back */
	struct plan *pl = calloc(1, sizeof(*pl));
	if (!pl)
		return;
	int rc = plan_make(mds, a->ino, m, x, target, pl);
	if (rc) {
		if (rc == -ENOENT)
			warn_once(rs, a->ino, x);
		free(pl);
		return;
	}
	struct mds_ds_conn *dc = mds_ds_conn_get(mds, x, &rc);
	if (!dc) {
		free(pl->r);
		free(pl);
		return;
	}
	struct ds_ctl_copy_args args = {.mode = LAYOUT_FENCE_MODE, .rate = mds->set.resilver_rate};
	mds_data_objid(a, &args.id);
	mds_data_fence_epoch(mds, a, m->epoch, &args.uid, &args.gid);
	uint64_t t0 = nfsd_now_ns(), written = 0;
	/* 1: while clients go on writing the current mirrors (the sources'
	 * change attributes first: unchanged at the end, no second pass) */
	sources_stat(mds, pl, &args.id, true);
	stats_set(rs, a->ino, x, 0); /* braidctl rebuild: copying now */
	rc = pass(rs, dc, &args, pl, a->ino, &written);
	bool frozen = false;
	if (!rc) {
		/* 2: no RW layout out, no write of the MDS's own */
		mds_layout_resilver_begin(mds, a->ino);
		frozen = true;
		uint64_t until = nfsd_now_ns() + RESILVER_QUIESCE_MS * 1000000ull;
		while (mds_layout_rw_held(mds, a->ino, 0) && !stopping(rs)) {
			if (nfsd_now_ns() > until) {
				rc = -ETIMEDOUT;
				break;
			}
			usleep(20 * 1000);
		}
	}
	if (!rc) {
		mds_data_write_gate(mds, a->ino, MDS_GATE_FREEZE);
		/* 3: with nothing writing it; 4: current again */
		struct mds_file_map now;
		rc = mds_data_map(mds, a->ino, &now);
		if (!rc && now.epoch != m->epoch) {
			/* fenced meanwhile: the copy takes the new owner */
			mds_data_fence_epoch(mds, a, now.epoch, &args.uid, &args.gid);
		}
		/* 3': sources nobody wrote since pass 1 began need none (their
		 * sizes now are final: nothing writes them) */
		bool same = sources_stat(mds, pl, &args.id, false);
		same = same && !rc && now.epoch == m->epoch;
		if (!rc && !same)
			rc = pass(rs, dc, &args, pl, a->ino, &written);
		uint32_t from = 0;
		if (!rc)
			rc = target ? mds_data_move_finish(mds, a->ino, x, &from)
				    : mds_data_stale_clear(mds, a->ino, x);
		mds_data_write_gate(mds, a->ino, MDS_GATE_OPEN);
		if (!rc && from)
			drop_moved(mds, a, from);
	}
	if (frozen)
		mds_layout_resilver_end(mds, a->ino);
	drop_if_gone(mds, a->ino, &args.id, dc);
	mds_ds_conn_put(dc);
	stats_set(rs, a->ino, x, UINT64_MAX);
	double secs = (double)(nfsd_now_ns() - t0) / 1e9;
	pthread_mutex_lock(&rs->mu);
	rs->st.bytes_copied += written;
	if (rc)
		rs->st.failures++;
	else
		rs->st.files_done++;
	pthread_mutex_unlock(&rs->mu);
	nfsd_metric_add(rs->m_bytes, (int64_t)written);
	char from_s[64];
	if (pl->nsrc == 1)
		snprintf(from_s, sizeof(from_s), "%u", pl->src[0].id);
	else
		snprintf(from_s, sizeof(from_s), "%u data servers, %u ranges", pl->nsrc, pl->n);
	free(pl->r);
	free(pl);
	if (rc) {
		nfsd_metric_add(rs->m_fail, 1);
		failed_into(rs, x, true);
		if (rc != -ECANCELED)
			mds_log("inode %llu: resilver of its copy on data server %u from %s: %s "
				"(tried again later)",
				(unsigned long long)a->ino, x, from_s, strerror(-rc));
		return;
	}
	nfsd_metric_add(rs->m_files, 1);
	mds_log("inode %llu: its copy on data server %u is current %s (copied from %s: %llu "
		"bytes in %.2f s)",
		(unsigned long long)a->ino, x, target ? "now, the move done" : "again", from_s,
		(unsigned long long)written, secs);
}

static void resilver_file(struct mds_resilver *rs, uint64_t ino)
{
	struct braid_mds *mds = rs->mds;
	struct mds_attr a;
	int rc = mds_inode_getattr(mds->store, ino, &a);
	if (rc == -ENOENT || rc == -ESTALE || (!rc && a.type != MDS_REG)) {
		mds_stale_clear(mds->store, ino);
		return;
	}
	struct mds_file_map m;
	if (rc || mds_data_map(mds, ino, &m))
		return;
	bool any = false;
	for (unsigned i = 0; i < m.nset && !stopping(rs); i++)
		if (m.set[i] & MDS_LAYOUT_STALE) {
			any = true;
			copy_one(rs, &a, &m, m.set[i] & MDS_LAYOUT_ID,
				 (m.set[i] & MDS_LAYOUT_TARGET) != 0);
		}
	if (!any)
		mds_stale_clear(mds->store, ino); /* a mark left by a crash */
}

/* A sealed erasure-coded file's chunks on lost or drained data servers,
 * made again elsewhere (mds/ec.h). */
static bool ec_stop(void *arg)
{
	return stopping(arg);
}

static void ec_done(void *arg, uint64_t bytes)
{
	struct mds_resilver *rs = arg;
	pthread_mutex_lock(&rs->mu);
	rs->st.ec_chunks_done++;
	rs->st.ec_bytes += bytes;
	pthread_mutex_unlock(&rs->mu);
	nfsd_metric_add(rs->m_bytes, (int64_t)bytes);
}

static void ec_file(struct mds_resilver *rs, uint64_t ino)
{
	int rc = mds_ec_rebuild_file(rs->mds, ino, ec_stop, ec_done, rs);
	pthread_mutex_lock(&rs->mu);
	if (!rc)
		rs->st.ec_files_done++;
	else if (rc != -ENOENT && rc != -ECANCELED)
		rs->st.failures++;
	pthread_mutex_unlock(&rs->mu);
	if (rc && rc != -ENOENT)
		nfsd_metric_add(rs->m_fail, 1);
}

/* ------------------------------------------------------------ rebuild */

/* Data servers down longer than [mds] ds_lost_after are declared lost;
 * the lost ones into v, then the drained ones (not lost) into dv, at most
 * max each: how many lost (*ndrained the others). */
static unsigned lost_servers(struct mds_resilver *rs, uint32_t *v, unsigned max, uint32_t *dv,
			     unsigned *ndrained)
{
	*ndrained = 0;
	struct braid_mds *mds = rs->mds;
	unsigned n = mds_dsreg_list(mds, NULL, 0), k = 0;
	struct mds_ds_info *all = n ? calloc(n, sizeof(*all)) : NULL;
	if (!all)
		return 0;
	n = mds_dsreg_list(mds, all, n);
	uint64_t after = mds->set.ds_lost_after_ms;
	for (unsigned i = 0; i < n; i++) {
		struct mds_ds_info *d = &all[i];
		if (!d->lost && after && d->registered && !d->up && d->since_heartbeat_ms > after) {
			char why[64];
			snprintf(why, sizeof(why), "down for %llu s",
				 (unsigned long long)(d->since_heartbeat_ms / 1000));
			if (!mds_dsreg_lost(mds, d->id, why))
				d->lost = true;
		}
		if (d->lost && k < max)
			v[k++] = d->id;
		else if (!d->lost && d->drained && *ndrained < max)
			dv[(*ndrained)++] = d->id;
	}
	free(all);
	return k;
}

static bool known_lost(struct mds_resilver *rs, uint64_t ino)
{
	pthread_mutex_lock(&rs->mu);
	bool known = false;
	for (unsigned i = 0; i < rs->nlost && !known; i++)
		known = rs->lost[i].ino == ino;
	pthread_mutex_unlock(&rs->mu);
	return known;
}

/* Files naming a lost data server (mds_layout_scan), deduplicated: in a
 * segment, or only as an erasure-coded stripe's parity holder (par). */
struct naming {
	const uint32_t *lost;
	unsigned nlost;
	uint64_t *v;
	uint32_t *ds;
	bool *par;
	unsigned n, cap;
};

static int naming_add(void *arg, uint64_t ino, uint64_t seg, const struct mds_layout_seg *l)
{
	struct naming *c = arg;
	bool par = seg >= MDS_EC_PARITY && seg < MDS_EC_REC;
	if (seg >= MDS_LAYOUT_SEG_END && !par)
		return 0;
	for (uint32_t k = 0; k < l->nds; k++)
		for (unsigned j = 0; j < c->nlost; j++) {
			if (l->ds[k] != c->lost[j])
				continue;
			if (c->n && c->v[c->n - 1] == ino && c->ds[c->n - 1] == c->lost[j])
				return 0;
			if (c->n == c->cap)
				return 1; /* the rest at the next scan */
			c->v[c->n] = ino;
			c->par[c->n] = par;
			c->ds[c->n++] = c->lost[j];
			return 0;
		}
	return 0;
}

/* A data server with room that ino's file does not use: 0 and *to. */
static int pick_target(struct braid_mds *mds, uint64_t ino, uint32_t *to)
{
	struct mds_file_map m;
	int rc = mds_data_map(mds, ino, &m);
	if (rc)
		return rc;
	uint32_t used[LAYOUT_SET_MAX];
	for (unsigned i = 0; i < m.nset; i++)
		used[i] = m.set[i] & MDS_LAYOUT_ID;
	struct layout_cand c[256];
	unsigned n = mds_dsreg_candidates(mds, used, m.nset, c, 256, NULL);
	uint64_t best = 0;
	bool found = false;
	for (unsigned i = 0; i < n; i++) {
		bool in = false;
		for (unsigned k = 0; k < m.nset && !in; k++)
			in = used[k] == c[i].id;
		/* the most free space, spread by a random tie-break */
		uint64_t score = (c[i].weight >> 20) * 1024 + mds_dsreg_random(mds) % 1024;
		if (!in && (!found || score > best)) {
			best = score;
			*to = c[i].id;
			found = true;
		}
	}
	return found ? 0 : -EAGAIN;
}

/* The paths of the unrecoverable files not yet resolved: one walk of the
 * namespace, breadth first, at most PATH_WALK_MAX entries. */
#define PATH_WALK_MAX 4000000
struct wdir {
	struct wdir *next;
	uint64_t ino;
	char path[]; /* "" for the root */
};

struct walk {
	struct mds_resilver *rs;
	const char *dirpath;
	struct wdir *head, **tail;
	uint64_t cookie;
	unsigned seen, left;
};

static int walk_ent(void *arg, const struct mds_dirent *e)
{
	struct walk *w = arg;
	w->cookie = e->cookie;
	if (++w->seen > PATH_WALK_MAX || !w->left)
		return 1;
	size_t dl = strlen(w->dirpath);
	if (e->type == MDS_DIR) {
		struct wdir *d = malloc(sizeof(*d) + dl + e->name_len + 2);
		if (!d)
			return 0;
		d->next = NULL;
		d->ino = e->ino;
		memcpy(d->path, w->dirpath, dl);
		d->path[dl] = '/';
		memcpy(d->path + dl + 1, e->name, e->name_len);
		d->path[dl + 1 + e->name_len] = 0;
		*w->tail = d;
		w->tail = &d->next;
		return 0;
	}
	pthread_mutex_lock(&w->rs->mu);
	for (unsigned i = 0; i < w->rs->nlost; i++)
		if (w->rs->lost[i].ino == e->ino && !w->rs->lost[i].path[0]) {
			snprintf(w->rs->lost[i].path, sizeof(w->rs->lost[i].path), "%s/%.*s",
				 w->dirpath, (int)e->name_len, e->name);
			w->left--;
		}
	pthread_mutex_unlock(&w->rs->mu);
	return 0;
}

static void resolve_paths(struct mds_resilver *rs)
{
	struct walk w = {.rs = rs};
	pthread_mutex_lock(&rs->mu);
	for (unsigned i = 0; i < rs->nlost; i++)
		w.left += !rs->lost[i].path[0];
	pthread_mutex_unlock(&rs->mu);
	struct wdir *root = malloc(sizeof(*root) + 1);
	if (!w.left || !root) {
		free(root);
		return;
	}
	root->next = NULL;
	root->ino = mds_store_root(rs->mds->store);
	root->path[0] = 0;
	w.head = root;
	w.tail = &root->next;
	while (w.head) {
		struct wdir *d = w.head;
		w.dirpath = d->path;
		w.cookie = 0;
		bool eof = false;
		while (!eof && w.left && w.seen <= PATH_WALK_MAX &&
		       mds_dir_readdir(rs->mds->store, d->ino, w.cookie, 0, walk_ent, &w, &eof) > 0)
			;
		w.head = d->next;
		if (!w.head)
			w.tail = &w.head;
		free(d);
	}
	pthread_mutex_lock(&rs->mu);
	for (unsigned i = 0; i < rs->nlost; i++)
		if (!rs->lost[i].path[0])
			snprintf(rs->lost[i].path, sizeof(rs->lost[i].path), "(no name leads to it)");
	pthread_mutex_unlock(&rs->mu);
}

/* ino lost bytes with data server ds: listed (its path resolved after
 * the scan), counted. */
static void lost_note(struct mds_resilver *rs, uint64_t ino, uint32_t ds)
{
	pthread_mutex_lock(&rs->mu);
	if (rs->nlost < MDS_LOST_FILES_MAX)
		rs->lost[rs->nlost++] = (struct mds_lost_file){.ino = ino, .ds = ds};
	rs->st.unrecoverable++;
	pthread_mutex_unlock(&rs->mu);
	nfsd_metric_add(rs->m_unrec, 1);
}

/* Whether ino is queued for an erasure-coded rebuild this scan. */
static bool ec_queued(const struct mds_resilver *rs, uint64_t ino)
{
	for (unsigned i = 0; i < rs->necq; i++)
		if (rs->ecq[i] == ino)
			return true;
	return false;
}

static void rebuild_scan(struct mds_resilver *rs)
{
	struct braid_mds *mds = rs->mds;
	uint32_t lost[128];
	unsigned nd, nl = lost_servers(rs, lost, 64, lost + 64, &nd);
	memmove(lost + nl, lost + 64, nd * sizeof(lost[0])); /* lost, then drained */
	pthread_mutex_lock(&rs->mu);
	rs->st.lost_servers = nl;
	rs->st.ec_files = rs->st.ec_chunks = rs->st.ec_bytes_todo = 0;
	pthread_mutex_unlock(&rs->mu);
	rs->necq = 0;
	if (!nl && !nd) {
		nfsd_metric_set(rs->m_rebuild, 0);
		return;
	}
	struct naming c = {.lost = lost, .nlost = nl + nd, .cap = RESILVER_BATCH};
	c.v = malloc(c.cap * sizeof(*c.v));
	c.ds = malloc(c.cap * sizeof(*c.ds));
	c.par = malloc(c.cap * sizeof(*c.par));
	if (!c.v || !c.ds || !c.par || mds_layout_scan(mds->store, naming_add, &c) < 0)
		c.n = 0;
	unsigned pending = 0, fresh_lost = 0;
	uint64_t ec_chunks = 0, ec_bytes = 0;
	for (unsigned i = 0; i < c.n && !stopping(rs); i++) {
		if (known_lost(rs, c.v[i]) || ec_queued(rs, c.v[i]))
			continue;
		/* a sealed erasure-coded file: its chunks are made again from
		 * the others (mds/ec.h), stripes beyond repair listed */
		struct mds_ec_rebuild_need need;
		int erc = rs->necq < RESILVER_BATCH ? mds_ec_rebuild_check(mds, c.v[i], &need)
						     : -EBUSY;
		if (erc != -ENOENT) {
			pending++;
			if (!erc && need.bad) {
				lost_note(rs, c.v[i], need.bad_ds);
				fresh_lost++;
			}
			if (!erc && need.chunks) {
				rs->ecq[rs->necq++] = c.v[i];
				ec_chunks += need.chunks;
				ec_bytes += need.bytes;
			}
			continue;
		}
		if (c.par[i])
			continue; /* an unsealed file's parity: placed again when it is sealed */
		bool is_lost = false;
		for (unsigned k = 0; k < nl; k++)
			is_lost = is_lost || lost[k] == c.ds[i];
		pending++;
		uint32_t to;
		int rc = pick_target(mds, c.v[i], &to);
		/* lost: another takes its place now, made from a surviving
		 * mirror; drained: a move, its copy the source */
		if (!rc)
			rc = is_lost ? mds_data_member_replace(mds, c.v[i], c.ds[i], to)
				     : mds_data_move_begin(mds, c.v[i], c.ds[i], to);
		if (rc == -EEXIST && !is_lost)
			continue; /* moving already */
		if (!rc) {
			nfsd_metric_add(rs->m_moved, 1);
			pthread_mutex_lock(&rs->mu);
			rs->st.moved_files++;
			pthread_mutex_unlock(&rs->mu);
		} else if (rc == -ENODATA) {
			lost_note(rs, c.v[i], c.ds[i]);
			fresh_lost++;
		}
	}
	free(c.v);
	free(c.ds);
	free(c.par);
	pthread_mutex_lock(&rs->mu);
	rs->st.rebuild_files = pending;
	rs->st.ec_files = rs->necq;
	rs->st.ec_chunks = ec_chunks;
	rs->st.ec_bytes_todo = ec_bytes;
	pthread_mutex_unlock(&rs->mu);
	nfsd_metric_set(rs->m_rebuild, pending);
	if (fresh_lost) {
		resolve_paths(rs);
		pthread_mutex_lock(&rs->mu);
		for (unsigned i = rs->nlost - (fresh_lost < rs->nlost ? fresh_lost : rs->nlost);
		     i < rs->nlost; i++)
			mds_log("inode %llu (%s): no copy of some of its bytes survives data server "
				"%u: unrecoverable (its reads fail with EIO)",
				(unsigned long long)rs->lost[i].ino, rs->lost[i].path,
				rs->lost[i].ds);
		pthread_mutex_unlock(&rs->mu);
	}
}

/* ---------------------------------------------------------- rebalance */

#define REBALANCE_FILE	"rebalance"
#define REBALANCE_MOVES 64 /* moves started per scan */

static void rebalance_path(struct braid_mds *mds, char *p, size_t n)
{
	snprintf(p, n, "%s/%s", mds->set.store_dir, REBALANCE_FILE);
}

/* The durable flag: made (fsync'd, with its directory) or removed. */
static int rebalance_flag(struct braid_mds *mds, bool on)
{
	char p[sizeof(mds->set.store_dir) + 16];
	rebalance_path(mds, p, sizeof(p));
	if (!on)
		return unlink(p) && errno != ENOENT ? -errno : 0;
	int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int rc = fsync(fd) ? -errno : 0;
	close(fd);
	int dfd = open(mds->set.store_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		if (fsync(dfd) && !rc)
			rc = -errno;
		close(dfd);
	}
	return rc;
}

int mds_resilver_rebalance(struct braid_mds *mds)
{
	struct mds_resilver *rs = mds->resilver;
	int rc = rebalance_flag(mds, true);
	if (rc || !rs)
		return rc;
	pthread_mutex_lock(&rs->mu);
	rs->rebalance = true;
	rs->kick = true;
	pthread_cond_broadcast(&rs->cond);
	pthread_mutex_unlock(&rs->mu);
	mds_log("rebalance started by the administrator");
	return 0;
}

/* Bytes each data server holds, as the layout maps place them. */
#define BAL_MAX 256
struct balance {
	uint32_t id[BAL_MAX];
	uint64_t load[BAL_MAX];
	unsigned n;
	const struct mds_file_map *m; /* of the file being summed */
	uint64_t size;
};

static int bal_slot(struct balance *b, uint32_t id)
{
	for (unsigned i = 0; i < b->n; i++)
		if (b->id[i] == id)
			return (int)i;
	return -1;
}

/* What one segment of a file puts on each of its data servers. */
static int bal_seg(void *arg, uint64_t seg, const struct mds_layout_seg *l)
{
	struct balance *b = arg;
	if (seg >= MDS_LAYOUT_SEG_END)
		return 0;
	uint64_t s0, len;
	layout_seg_bounds(&b->m->pol, seg, &s0, &len);
	uint64_t bytes = s0 >= b->size		       ? 0
			 : len == LAYOUT_ALL || len > b->size - s0 ? b->size - s0
								    : len;
	for (uint32_t k = 0; k < l->nds; k++) {
		int i = bal_slot(b, l->ds[k]);
		if (i >= 0)
			b->load[i] += bytes;
	}
	return 0;
}

/* Every inode with layout maps (one scan, then worked on outside it: the
 * store's reads cannot nest in its scan). */
struct inos {
	uint64_t *v;
	size_t n, cap;
	bool nomem;
};

static int inos_add(void *arg, uint64_t ino, uint64_t seg, const struct mds_layout_seg *l)
{
	struct inos *x = arg;
	(void)seg, (void)l;
	if (x->n && x->v[x->n - 1] == ino)
		return 0;
	if (x->n == x->cap) {
		size_t cap = x->cap ? 2 * x->cap : 1024;
		uint64_t *v = realloc(x->v, cap * sizeof(*v));
		if (!v) {
			x->nomem = true;
			return 1;
		}
		x->v = v;
		x->cap = cap;
	}
	x->v[x->n++] = ino;
	return 0;
}

/* Whether ino's file (size bytes) has a copy on data server id. */
static bool file_on(struct braid_mds *mds, uint64_t ino, uint32_t id)
{
	struct mds_file_map m;
	if (mds_data_map(mds, ino, &m))
		return false;
	for (unsigned i = 0; i < m.nset; i++)
		if ((m.set[i] & MDS_LAYOUT_ID) == id)
			return true;
	return false;
}

/* One round of rebalance: moves from the fullest server to the emptiest,
 * or, when none would bring them closer, the end of it. */
static void rebalance_scan(struct mds_resilver *rs)
{
	pthread_mutex_lock(&rs->mu);
	bool on = rs->rebalance, moving = rs->st.stale_files > 0;
	pthread_mutex_unlock(&rs->mu);
	/* loads are measured with no move in flight (else it swings) */
	if (!on || moving)
		return;
	struct braid_mds *mds = rs->mds;
	struct balance *b = calloc(1, sizeof(*b));
	struct mds_ds_info *all = calloc(BAL_MAX, sizeof(*all));
	struct inos x = {0};
	if (!b || !all)
		goto out;
	unsigned n = mds_dsreg_list(mds, all, BAL_MAX);
	for (unsigned i = 0; i < n && b->n < BAL_MAX; i++)
		if (all[i].up && !all[i].drained && !all[i].lost &&
		    !(all[i].health & (BRAID_CTL_HEALTH_LOWSPACE | BRAID_CTL_HEALTH_FULL |
				       BRAID_CTL_HEALTH_READONLY | BRAID_CTL_HEALTH_DRAINING)))
			b->id[b->n++] = all[i].id;
	if (b->n < 2 || mds_layout_scan(mds->store, inos_add, &x) < 0 || x.nomem)
		goto out;
	for (size_t k = 0; k < x.n && !stopping(rs); k++) {
		struct mds_attr a;
		struct mds_file_map m;
		if (mds_inode_getattr(mds->store, x.v[k], &a) || mds_data_map(mds, x.v[k], &m))
			continue;
		b->m = &m;
		b->size = a.size;
		mds_layout_list(mds->store, x.v[k], bal_seg, b);
	}
	unsigned hi = 0, lo = 0;
	uint64_t total = 0;
	for (unsigned i = 0; i < b->n; i++) {
		total += b->load[i];
		hi = b->load[i] > b->load[hi] ? i : hi;
		lo = b->load[i] < b->load[lo] ? i : lo;
	}
	/* a move of f bytes from hi to lo narrows their gap only while f is
	 * under it, and keeps lo at or under the mean */
	uint64_t mean = total / b->n, room = mean > b->load[lo] ? mean - b->load[lo] : 0;
	uint64_t gap = b->load[hi] - b->load[lo];
	unsigned started = 0;
	for (size_t k = 0; k < x.n && hi != lo && room && started < REBALANCE_MOVES; k++) {
		struct mds_attr a;
		if (mds_inode_getattr(mds->store, x.v[k], &a) || !a.size || a.size > room ||
		    a.size >= gap || !file_on(mds, x.v[k], b->id[hi]) ||
		    file_on(mds, x.v[k], b->id[lo]))
			continue;
		if (!mds_data_move_begin(mds, x.v[k], b->id[hi], b->id[lo])) {
			room -= a.size;
			gap -= 2 * a.size < gap ? 2 * a.size : gap;
			started++;
		}
	}
	if (!started) {
		/* nothing to move: balanced */
		if (!rebalance_flag(mds, false)) {
			pthread_mutex_lock(&rs->mu);
			rs->rebalance = false;
			pthread_mutex_unlock(&rs->mu);
			mds_log("rebalance done: data servers hold %llu to %llu bytes (mean %llu)",
				(unsigned long long)b->load[lo], (unsigned long long)b->load[hi],
				(unsigned long long)mean);
		}
	}
out:
	free(x.v);
	free(b);
	free(all);
}

/* ------------------------------------------------------------- thread */

struct ino_vec {
	uint64_t *v;
	unsigned n;
};

static int collect(void *arg, uint64_t ino)
{
	struct ino_vec *iv = arg;
	if (iv->n == RESILVER_BATCH)
		return 1;
	iv->v[iv->n++] = ino;
	return 0;
}

static struct rs_busy *busy_of(struct mds_resilver *rs, uint32_t id)
{
	for (unsigned i = 0; i < rs->nbusy; i++)
		if (rs->busy[i].id == id)
			return &rs->busy[i];
	return NULL;
}

/*
 * Whether job j can start now (mu held): no data server it copies into
 * already takes per_ds copies.  Those a copy failed into this scan do not
 * count (it skips them at once), nor do more than RESILVER_COPIES_MAX
 * servers (one slot each at most is free then: the first servers count).
 */
static bool job_ready(struct mds_resilver *rs, const struct rs_job *j)
{
	for (unsigned i = 0; i < j->nto; i++) {
		bool failed = false;
		for (unsigned k = 0; k < rs->nfailed && !failed; k++)
			failed = rs->failed[k] == j->to[i];
		struct rs_busy *b = busy_of(rs, j->to[i]);
		if (!failed && b && b->n >= rs->per_ds)
			return false;
	}
	return true;
}

/* Count j's copies in (up) or out (mu held). */
static void job_busy(struct mds_resilver *rs, const struct rs_job *j, bool up)
{
	for (unsigned i = 0; i < j->nto; i++) {
		struct rs_busy *b = busy_of(rs, j->to[i]);
		if (up && !b && rs->nbusy < RESILVER_COPIES_MAX) {
			b = &rs->busy[rs->nbusy++];
			*b = (struct rs_busy){.id = j->to[i]};
		}
		if (!b)
			continue;
		if (up) {
			b->n++;
		} else if (!--b->n) {
			*b = rs->busy[--rs->nbusy];
		}
	}
}

/* A worker: takes the scan's jobs, one file at a time, while the data
 * servers they copy into have room for another copy. */
static void *worker_main(void *arg)
{
	struct mds_resilver *rs = arg;
	pthread_mutex_lock(&rs->mu);
	while (!rs->stop) {
		struct rs_job *j = NULL;
		for (unsigned i = 0; i < rs->njobs && !j; i++)
			if (rs->jobs[i].state == JOB_PENDING && job_ready(rs, &rs->jobs[i]))
				j = &rs->jobs[i];
		if (!j) {
			pthread_cond_wait(&rs->wcond, &rs->mu);
			continue;
		}
		j->state = JOB_RUNNING;
		job_busy(rs, j, true);
		rs->st.copies++;
		pthread_mutex_unlock(&rs->mu);
		if (j->ec)
			ec_file(rs, j->ino);
		else
			resilver_file(rs, j->ino);
		pthread_mutex_lock(&rs->mu);
		rs->st.copies--;
		job_busy(rs, j, false);
		j->state = JOB_DONE;
		rs->ndone++;
		/* a server's slot came free; the scanner may be waiting */
		pthread_cond_broadcast(&rs->wcond);
		pthread_cond_broadcast(&rs->cond);
	}
	pthread_mutex_unlock(&rs->mu);
	return NULL;
}

/* The scan's files as jobs (the data servers each copies into), into
 * rs->jobs: how many. */
static unsigned jobs_make(struct mds_resilver *rs, const struct ino_vec *iv)
{
	unsigned n = 0;
	for (unsigned i = 0; i < iv->n; i++) {
		struct rs_job *j = &rs->jobs[n];
		memset(j, 0, sizeof(*j));
		j->ino = iv->v[i];
		struct mds_file_map m;
		if (!mds_data_map(rs->mds, j->ino, &m))
			for (unsigned k = 0; k < m.nset && j->nto < LAYOUT_SET_MAX; k++)
				if (m.set[k] & MDS_LAYOUT_STALE)
					j->to[j->nto++] = m.set[k] & MDS_LAYOUT_ID;
		n++;
	}
	return n;
}

static void *resilver_main(void *arg)
{
	struct mds_resilver *rs = arg;
	uint64_t *v = malloc(RESILVER_BATCH * sizeof(*v));
	for (;;) {
		pthread_mutex_lock(&rs->mu);
		if (!rs->kick && !rs->stop) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_sec += RESILVER_SCAN_MS / 1000;
			pthread_cond_timedwait(&rs->cond, &rs->mu, &ts);
		}
		bool stop = rs->stop;
		rs->kick = false;
		pthread_mutex_unlock(&rs->mu);
		if (stop)
			break;
		if (!v || !rs->jobs)
			continue;
		rebuild_scan(rs);
		rebalance_scan(rs);
		struct ino_vec iv = {.v = v};
		if (mds_stale_list(rs->mds->store, collect, &iv) < 0)
			iv.n = 0; /* the rebuild's jobs still run (they hold files) */
		uint64_t sb = 0, now = nfsd_now_ns();
		for (unsigned i = 0; i < iv.n; i++) {
			struct mds_attr a;
			if (!mds_inode_getattr(rs->mds->store, v[i], &a))
				sb += a.size;
		}
		unsigned nj = jobs_make(rs, &iv);
		for (unsigned i = 0; i < rs->necq; i++, nj++)
			rs->jobs[nj] = (struct rs_job){.ino = rs->ecq[i], .ec = true};
		rs->necq = 0;
		pthread_mutex_lock(&rs->mu);
		rs->st.stale_files = iv.n;
		rs->st.stale_bytes = sb;
		/* the rate since copies began to be owed (a busy period) */
		if (!iv.n) {
			rs->rate_t0 = 0;
		} else if (!rs->rate_t0) {
			rs->rate_t0 = now;
			rs->rate_b0 = rs->st.bytes_copied;
		}
		nfsd_metric_set(rs->m_stale, iv.n);
		/* the workers take them; the scan ends when all are done */
		rs->nfailed = 0;
		rs->njobs = nj;
		rs->ndone = 0;
		pthread_cond_broadcast(&rs->wcond);
		while (rs->ndone < rs->njobs && !rs->stop)
			pthread_cond_wait(&rs->cond, &rs->mu);
		rs->njobs = 0;
		pthread_mutex_unlock(&rs->mu);
	}
	free(v);
	return NULL;
}

/* Its memory and locks (no thread runs). */
static void rs_free(struct mds_resilver *rs)
{
	free(rs->jobs);
	free(rs->ecq);
	free(rs->workers);
	pthread_cond_destroy(&rs->wcond);
	pthread_cond_destroy(&rs->cond);
	pthread_mutex_destroy(&rs->mu);
	free(rs);
}

int mds_resilver_init(struct braid_mds *mds, char *msg, size_t msglen)
{
	struct mds_resilver *rs = calloc(1, sizeof(*rs));
	if (!rs) {
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	rs->mds = mds;
	pthread_mutex_init(&rs->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&rs->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&rs->wcond, NULL);
	rs->nworkers = (unsigned)mds->set.resilver_copies;
	if (rs->nworkers < 1)
		rs->nworkers = 1;
	if (rs->nworkers > RESILVER_COPIES_MAX)
		rs->nworkers = RESILVER_COPIES_MAX;
	rs->per_ds = mds->set.resilver_copies_per_ds > 0 ? (unsigned)mds->set.resilver_copies_per_ds
							 : 1;
	/* the stale set's files, then the erasure-coded rebuild's */
	rs->jobs = calloc(2 * RESILVER_BATCH, sizeof(*rs->jobs));
	rs->ecq = calloc(RESILVER_BATCH, sizeof(*rs->ecq));
	rs->workers = calloc(rs->nworkers, sizeof(*rs->workers));
	if (!rs->jobs || !rs->ecq || !rs->workers) {
		rs_free(rs);
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	struct nfsd_metrics *mt = mds->metrics;
	rs->m_files = nfsd_metrics_counter(
	    mt, "braid_mds_resilver_files_total",
	    "Stale copies made current again, copied from a current mirror.", NULL);
	rs->m_bytes = nfsd_metrics_counter(mt, "braid_mds_resilver_bytes_total",
					   "Bytes the data servers wrote resilvering copies.", NULL);
	rs->m_fail = nfsd_metrics_counter(mt, "braid_mds_resilver_failures_total",
					  "Resilver passes that failed (tried again later).", NULL);
	rs->m_stale = nfsd_metrics_gauge(
	    mt, "braid_mds_stale_files",
	    "Files with a stale copy (missing writes), at the last scan.", NULL);
	rs->m_moved = nfsd_metrics_counter(
	    mt, "braid_mds_rebuild_moved_total",
	    "Copies moved off data servers declared lost (then resilvered).", NULL);
	rs->m_unrec = nfsd_metrics_counter(
	    mt, "braid_mds_unrecoverable_files_total",
	    "Files found with no surviving copy of some bytes (their reads fail: EIO).", NULL);
	rs->m_rebuild = nfsd_metrics_gauge(
	    mt, "braid_mds_rebuild_files",
	    "Files naming a data server declared lost, at the last scan.", NULL);
	char fp[sizeof(mds->set.store_dir) + 16];
	rebalance_path(mds, fp, sizeof(fp));
	rs->rebalance = access(fp, F_OK) == 0; /* one running before a restart */
	mds->resilver = rs;
	int rc = 0;
	for (; rs->nstarted < rs->nworkers && !rc; rs->nstarted += !rc)
		rc = -pthread_create(&rs->workers[rs->nstarted], NULL, worker_main, rs);
	if (!rc)
		rc = -pthread_create(&rs->thread, NULL, resilver_main, rs);
	if (rc) {
		snprintf(msg, msglen, "resilver threads: %s", strerror(-rc));
		mds_resilver_stop(mds); /* those started */
		return rc;
	}
	rs->running = true;
	return 0;
}

void mds_resilver_kick(struct braid_mds *mds)
{
	struct mds_resilver *rs = mds->resilver;
	if (!rs)
		return;
	pthread_mutex_lock(&rs->mu);
	rs->kick = true;
	pthread_cond_broadcast(&rs->cond);
	pthread_mutex_unlock(&rs->mu);
}

void mds_resilver_stats(struct braid_mds *mds, struct mds_resilver_stats *out)
{
	struct mds_resilver *rs = mds->resilver;
	memset(out, 0, sizeof(*out));
	if (!rs)
		return;
	pthread_mutex_lock(&rs->mu);
	*out = rs->st;
	uint64_t dt = rs->rate_t0 ? nfsd_now_ns() - rs->rate_t0 : 0;
	if (dt > 1000000000ull)
		out->rate_Bps = (rs->st.bytes_copied - rs->rate_b0) * 1000000000ull / dt;
	pthread_mutex_unlock(&rs->mu);
}

unsigned mds_resilver_lost_files(struct braid_mds *mds, struct mds_lost_file *out, unsigned max)
{
	struct mds_resilver *rs = mds->resilver;
	if (!rs)
		return 0;
	pthread_mutex_lock(&rs->mu);
	unsigned n = rs->nlost < max ? rs->nlost : max;
	memcpy(out, rs->lost, n * sizeof(*out));
	pthread_mutex_unlock(&rs->mu);
	return n;
}

void mds_resilver_stop(struct braid_mds *mds)
{
	struct mds_resilver *rs = mds->resilver;
	if (!rs)
		return;
	pthread_mutex_lock(&rs->mu);
	rs->stop = true;
	pthread_cond_broadcast(&rs->cond);
	pthread_cond_broadcast(&rs->wcond);
	pthread_mutex_unlock(&rs->mu);
	if (rs->running)
		pthread_join(rs->thread, NULL);
	rs->running = false;
	for (unsigned i = 0; i < rs->nstarted; i++)
		pthread_join(rs->workers[i], NULL);
	rs->nstarted = 0;
}

void mds_resilver_release(struct braid_mds *mds)
{
	struct mds_resilver *rs = mds->resilver;
	if (!rs)
		return;
	mds_resilver_stop(mds);
	rs_free(rs);
	mds->resilver = NULL;
}
