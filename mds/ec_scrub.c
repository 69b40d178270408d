/* SPDX-License-Identifier: MIT */
/*
 * Scrub of erasure-coded parity and the space tally (mds/ec_scrub.h).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "layout/policy.h"
#include "mds/data.h"
#include "mds/ec.h"
#include "mds/ec_scrub.h"
#include "mds/mds_impl.h"
#include "nfsd/clock.h"
#include "nfsd/metrics.h"

#define SC_CHUNKS (LAYOUT_EC_K_MAX + LAYOUT_EC_M_MAX)
#define SC_ROUNDS 4 /* verify, (hold,) verify, repair, verify */

struct mds_ec_scrub {
	struct braid_mds *mds;
	pthread_mutex_t mu;  /* guards stop, last; the metrics are lock-free */
	pthread_cond_t cond; /* CLOCK_MONOTONIC: the stop */
	bool stop, running;
	pthread_t thread;
	struct mds_ec_scrub_pass last;
	struct nfsd_metric *m_stripes, *m_mismatches, *m_repairs, *m_errors;
	struct nfsd_metric *m_raw, *m_logical, *m_ec_raw, *m_ec_logical;
};

/* Sleeps until CLOCK_MONOTONIC ns, or the stop: false at the stop. */
static bool sc_sleep_until(struct mds_ec_scrub *sc, uint64_t ns)
{
	pthread_mutex_lock(&sc->mu);
	while (!sc->stop && nfsd_now_ns() < ns) {
		struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
				      .tv_nsec = (long)(ns % 1000000000ull)};
		pthread_cond_timedwait(&sc->cond, &sc->mu, &ts);
	}
	bool go = !sc->stop;
	pthread_mutex_unlock(&sc->mu);
	return go;
}

/* ------------------------------------------------------------- stripes */

/* One file being scrubbed. */
struct sc_file {
	struct braid_mds *mds;
	struct mds_attr a;
	struct mds_file_map map;
	uint64_t w0; /* its write count before it was looked at */
	struct mds_ec_scrub_res *res;
};

/*
 * Every parity chunk of stripe s verified: *fix gets a bit per chunk to
 * rewrite, *mism one per parity chunk that differed.  0, or the error
 * that kept some chunk from being verified.
 */
static int stripe_verify(struct sc_file *f, uint64_t s, const uint32_t *ids, uint32_t *fix,
			 uint32_t *mism)
{
	unsigned k = f->map.pol.ec_k, n = k + f->map.pol.ec_m;
	*fix = *mism = 0;
	for (unsigned t = k; t < n; t++) {
		struct mds_ec_compute_out o;
		int rc = mds_ec_chunk_compute(f->mds, &f->a, &f->map.pol, f->map.epoch, s,
					      f->a.size, ids, t, true, &o);
		if (!rc && o.mismatch) {
			*fix |= 1u << t;
			*mism |= 1u << t;
		} else if (rc == -EIO && o.chunk < n && ids[o.chunk]) {
			*fix |= 1u << o.chunk; /* a block failed its CRC there */
		} else if (rc) {
			mds_log("inode %llu: scrub of stripe %llu parity %u on data server %u: %s",
				(unsigned long long)f->a.ino, (unsigned long long)s, t - k, ids[t],
				strerror(-rc));
			return rc;
		}
	}
	return 0;
}

/* Stripe s verified, and repaired where it must be: 0, -EAGAIN (the file
 * is being written: left alone), or the error that stopped it. */
static int stripe_scrub(struct sc_file *f, uint64_t s)
{
	uint32_t ids[SC_CHUNKS];
	int rc = mds_ec_stripe_ids(f->mds, f->a.ino, &f->map.pol, s, ids);
	if (rc)
		return rc == -ENOENT ? -EIO : rc; /* sealed, yet no parity recorded */
	bool held = false;
	for (unsigned round = 0; !rc; round++) {
		uint32_t fix, mism;
		if ((rc = stripe_verify(f, s, ids, &fix, &mism)) || !fix)
			break;
		if (round + 1 == SC_ROUNDS) {
			rc = -EIO; /* still wrong after its repair */
			mds_log("inode %llu: stripe %llu still fails its scrub after repair",
				(unsigned long long)f->a.ino, (unsigned long long)s);
			break;
		}
		if (!held) {
			/* what was found may be a write under way: hold the
			 * file's writers off, then look again */
			if ((rc = mds_ec_hold(f->mds, f->a.ino, f->w0)))
				break;
			held = true;
			continue;
		}
		f->res->mismatches += (uint64_t)__builtin_popcount(mism);
		for (unsigned t = 0; !rc && t < SC_CHUNKS; t++) {
			if (!(fix >> t & 1))
				continue;
			struct mds_ec_compute_out o;
			rc = mds_ec_chunk_compute(f->mds, &f->a, &f->map.pol, f->map.epoch, s,
						  f->a.size, ids, t, false, &o);
			if (rc)
				mds_log("inode %llu: scrub repairing stripe %llu chunk %u on data "
					"server %u: %s (chunk %u)",
					(unsigned long long)f->a.ino, (unsigned long long)s, t,
					ids[t], strerror(-rc), o.chunk);
			else
				f->res->repairs++;
		}
		if (!rc)
			mds_log("inode %llu: scrub repaired stripe %llu (chunks 0x%x)",
				(unsigned long long)f->a.ino, (unsigned long long)s, fix);
	}
	if (held)
		mds_ec_unhold(f->mds, f->a.ino);
	return rc;
}

/* rate: stripe data bytes a second (0: no bound); sc: the stop, or NULL. */
static int scrub_file(struct braid_mds *mds, struct mds_ec_scrub *sc, uint64_t ino, uint64_t rate,
		      struct mds_ec_scrub_res *out)
{
	memset(out, 0, sizeof(*out));
	struct sc_file f = {.mds = mds, .res = out};
	f.w0 = mds_ec_writes(mds, ino); /* before anything is looked at */
	int rc = mds_inode_getattr(mds->store, ino, &f.a);
	if (rc)
		return rc;
	if (f.a.type != MDS_REG || (rc = mds_data_map(mds, ino, &f.map)) ||
	    !layout_is_ec(&f.map.pol))
		return rc ? rc : -EINVAL;
	struct mds_ec_file ef;
	if (mds_ec_file_get(mds, ino, &ef) || !ef.sealed || ef.size != f.a.size)
		return 0;
	out->sealed = true;
	out->files = 1;
	const struct layout_policy *p = &f.map.pol;
	uint64_t stripe_bytes = (uint64_t)p->ec_k << p->seg_shift;
	uint64_t nstripes = f.a.size ? (f.a.size - 1) / stripe_bytes + 1 : 0;
	uint64_t t0 = nfsd_now_ns();
	for (uint64_t s = 0; s < nstripes; s++) {
		rc = stripe_scrub(&f, s);
		if (rc == -EAGAIN || rc == -EINTR) {
			out->sealed = false; /* written meanwhile: not ours to judge */
			break;
		}
		if (rc)
			out->errors++;
		else
			out->stripes++;
		if (rate && sc &&
		    !sc_sleep_until(sc, t0 + (s + 1) * stripe_bytes * 1000000000ull / rate))
			break;
	}
	nfsd_metric_add(mds->ec_scrub->m_stripes, (int64_t)out->stripes);
	nfsd_metric_add(mds->ec_scrub->m_mismatches, (int64_t)out->mismatches);
	nfsd_metric_add(mds->ec_scrub->m_repairs, (int64_t)out->repairs);
	nfsd_metric_add(mds->ec_scrub->m_errors, (int64_t)out->errors);
	return 0;
}

int mds_ec_scrub_file(struct braid_mds *mds, uint64_t ino, struct mds_ec_scrub_res *out)
{
	if (!mds->ec_scrub)
		return -EINVAL;
	return scrub_file(mds, NULL, ino, 0, out);
}

/* ------------------------------------------------------------- the scan */

/* Files with data, from one scan of the layout maps, in inode order. */
struct sc_ino {
	uint64_t ino;
	bool ec, sealed; /* it has an MDS_EC_REC, and it says sealed */
};
struct sc_list {
	struct sc_ino *v;
	size_t n, cap;
	bool nomem;
};

static int sc_add(void *arg, uint64_t ino, uint64_t seg, const struct mds_layout_seg *l)
{
	struct sc_list *L = arg;
	if (!L->n || L->v[L->n - 1].ino != ino) {
		if (L->n == L->cap) {
			size_t cap = L->cap ? 2 * L->cap : 1024;
			struct sc_ino *v = realloc(L->v, cap * sizeof(*v));
			if (!v) {
				L->nomem = true;
				return 1;
			}
			L->v = v;
			L->cap = cap;
		}
		L->v[L->n++] = (struct sc_ino){.ino = ino};
	}
	if (seg == MDS_EC_REC) {
		L->v[L->n - 1].ec = true;
		L->v[L->n - 1].sealed = l->flags & MDS_EC_SEALED;
	}
	return 0;
}

static int sc_scan(struct braid_mds *mds, struct sc_list *L)
{
	memset(L, 0, sizeof(*L));
	int rc = mds_layout_scan(mds->store, sc_add, L);
	if (rc < 0 || L->nomem) {
		free(L->v);
		L->v = NULL;
		return rc < 0 ? rc : -ENOMEM;
	}
	return 0;
}

static void tally_of(struct braid_mds *mds, const struct sc_list *L, struct mds_ec_space *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < L->n; i++) {
		struct mds_attr a;
		if (mds_inode_getattr(mds->store, L->v[i].ino, &a) || a.type != MDS_REG)
			continue;
		out->files++;
		out->raw += a.space_used;
		out->logical += a.size;
		if (!L->v[i].ec)
			continue;
		out->ec_files++;
		out->ec_sealed += L->v[i].sealed;
		out->ec_raw += a.space_used;
		out->ec_logical += a.size;
	}
	struct mds_ec_scrub *sc = mds->ec_scrub;
	if (sc) {
		nfsd_metric_set(sc->m_raw, (int64_t)out->raw);
		nfsd_metric_set(sc->m_logical, (int64_t)out->logical);
		nfsd_metric_set(sc->m_ec_raw, (int64_t)out->ec_raw);
		nfsd_metric_set(sc->m_ec_logical, (int64_t)out->ec_logical);
	}
}

int mds_ec_space_tally(struct braid_mds *mds, struct mds_ec_space *out)
{
	struct sc_list L;
	int rc = sc_scan(mds, &L);
	if (rc)
		return rc;
	tally_of(mds, &L, out);
	free(L.v);
	return 0;
}

/* ------------------------------------------------------------- the pass */

static void sc_pass(struct mds_ec_scrub *sc, const struct sc_list *L)
{
	struct braid_mds *mds = sc->mds;
	pthread_mutex_lock(&sc->mu);
	memset(&sc->last.res, 0, sizeof(sc->last.res));
	sc->last.started = (uint64_t)time(NULL);
	sc->last.ended = 0;
	sc->last.running = true;
	pthread_mutex_unlock(&sc->mu);
	for (size_t i = 0; i < L->n; i++) {
		struct mds_ec_scrub_res r;
		if (!L->v[i].sealed || scrub_file(mds, sc, L->v[i].ino, EC_SCRUB_RATE, &r))
			continue;
		pthread_mutex_lock(&sc->mu);
		bool stop = sc->stop;
		struct mds_ec_scrub_res *t = &sc->last.res;
		t->files += r.files;
		t->stripes += r.stripes;
		t->mismatches += r.mismatches;
		t->repairs += r.repairs;
		t->errors += r.errors;
		pthread_mutex_unlock(&sc->mu);
		if (stop)
			break;
	}
	pthread_mutex_lock(&sc->mu);
	sc->last.ended = (uint64_t)time(NULL);
	sc->last.running = false;
	sc->last.passes++;
	pthread_mutex_unlock(&sc->mu);
}

static void *sc_main(void *arg)
{
	struct mds_ec_scrub *sc = arg;
	struct braid_mds *mds = sc->mds;
	uint64_t interval = mds->set.ec_scrub_interval_ms * 1000000ull;
	uint64_t now = nfsd_now_ns(), next_pass = now + interval, next_tally = now;
	for (;;) {
		uint64_t due = next_tally;
		if (interval && next_pass < due)
			due = next_pass;
		if (!sc_sleep_until(sc, due))
			break;
		now = nfsd_now_ns();
		bool pass = interval && now >= next_pass;
		struct sc_list L;
		if (sc_scan(mds, &L)) {
			next_tally = now + 1000000000ull; /* tried again in a second */
			continue;
		}
		struct mds_ec_space sp;
		tally_of(mds, &L, &sp);
		next_tally = now + EC_TALLY_MS * 1000000ull;
		if (pass) {
			next_pass = now + interval;
			sc_pass(sc, &L);
		}
		free(L.v);
	}
	return NULL;
}

/* ------------------------------------------------------------- life */

void mds_ec_scrub_last(struct braid_mds *mds, struct mds_ec_scrub_pass *out)
{
	struct mds_ec_scrub *sc = mds->ec_scrub;
	memset(out, 0, sizeof(*out));
	if (!sc)
		return;
	pthread_mutex_lock(&sc->mu);
	*out = sc->last;
	pthread_mutex_unlock(&sc->mu);
}

int mds_ec_scrub_init(struct braid_mds *mds, char *msg, size_t msglen)
{
	struct mds_ec_scrub *sc = calloc(1, sizeof(*sc));
	if (!sc) {
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	sc->mds = mds;
	pthread_mutex_init(&sc->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sc->cond, &ca);
	pthread_condattr_destroy(&ca);
	struct nfsd_metrics *m = mds->metrics;
	sc->m_stripes =
	    nfsd_metrics_counter(m, "braid_mds_ec_scrub_stripes_total",
				 "Erasure-coded stripes whose parity a scrub verified.", NULL);
	sc->m_mismatches = nfsd_metrics_counter(
	    m, "braid_mds_ec_scrub_mismatches_total",
	    "Parity chunks a scrub found differing from their data (then recomputed).", NULL);
	sc->m_repairs = nfsd_metrics_counter(
	    m, "braid_mds_ec_scrub_repairs_total",
	    "Chunks a scrub rewrote: a parity mismatch, or a block failing its CRC.", NULL);
	sc->m_errors = nfsd_metrics_counter(
	    m, "braid_mds_ec_scrub_errors_total",
	    "Stripes a scrub could not verify or repair (a data server down or failing).", NULL);
	const char *raw = "Bytes files take on the data servers (space_used: every copy, "
			  "parity included), at the last tally.";
	const char *logical = "Bytes of files by their sizes (no copies, no parity), at the "
			      "last tally.";
	sc->m_raw = nfsd_metrics_gauge(m, "braid_mds_space_raw_bytes", raw, "files=\"all\"");
	sc->m_ec_raw = nfsd_metrics_gauge(m, "braid_mds_space_raw_bytes", raw, "files=\"ec\"");
	sc->m_logical =
	    nfsd_metrics_gauge(m, "braid_mds_space_logical_bytes", logical, "files=\"all\"");
	sc->m_ec_logical =
	    nfsd_metrics_gauge(m, "braid_mds_space_logical_bytes", logical, "files=\"ec\"");
	mds->ec_scrub = sc;
	int rc = -pthread_create(&sc->thread, NULL, sc_main, sc);
	if (rc) {
		snprintf(msg, msglen, "erasure-coding scrub thread: %s", strerror(-rc));
		return rc;
	}
	sc->running = true;
	return 0;
}

void mds_ec_scrub_stop(struct braid_mds *mds)
{
	struct mds_ec_scrub *sc = mds->ec_scrub;
	if (!sc)
		return;
	pthread_mutex_lock(&sc->mu);
	sc->stop = true;
	pthread_cond_broadcast(&sc->cond);
	pthread_mutex_unlock(&sc->mu);
	if (sc->running)
		pthread_join(sc->thread, NULL);
	sc->running = false;
}

void mds_ec_scrub_release(struct braid_mds *mds)
{
	struct mds_ec_scrub *sc = mds->ec_scrub;
	if (!sc)
		return;
	mds_ec_scrub_stop(mds);
	pthread_cond_destroy(&sc->cond);
	pthread_mutex_destroy(&sc->mu);
	free(sc);
	mds->ec_scrub = NULL;
}
