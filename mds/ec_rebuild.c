/* SPDX-License-Identifier: MIT */
/*
 * Erasure-coded rebuild (mds/ec.h "Rebuild"): the chunks of sealed files
 * on data servers declared lost, or drained, made again elsewhere by the
 * data servers (EC_COMPUTE), then recorded.  The resilver's rebuild scan
 * (mds/resilver.c) finds the files and runs them on its workers.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl/client.h"
#include "ctl/objid.h"
#include "layout/policy.h"
#include "mds/data.h"
#include "mds/dsreg.h"
#include "mds/ec.h"
#include "mds/layout.h"
#include "mds/mds_impl.h"
#include "nfsd/clock.h"

#define RB_JOBS	    4	 /* EC_COMPUTE calls at once, all files together */
#define RB_HELD	    1024 /* files held at once (their writes wait) */
#define RB_CHUNKS   (LAYOUT_EC_K_MAX + LAYOUT_EC_M_MAX)
#define RB_DELAYS   20	/* a data server's DELAY (busy) waited out this often */
#define RB_DELAY_MS 250
#define RB_FAILED   16 /* targets a call failed on, skipped for the file */
#define RB_SAID	    64 /* files whose "nowhere to rebuild" was logged, kept */

struct mds_ec_rebuild {
	pthread_mutex_t mu;  /* guards all that follows */
	pthread_cond_t cond; /* a compute slot came free */
	uint64_t held[RB_HELD];
	unsigned nheld;
	unsigned busy; /* EC_COMPUTE calls running */
	uint64_t said[RB_SAID]; /* files whose "nowhere to rebuild" was logged */
	unsigned nsaid;
};

/* ------------------------------------------------------------- holds */

bool mds_ec_rebuild_held(struct braid_mds *mds, uint64_t ino)
{
	struct mds_ec_rebuild *rb = mds->ec_rebuild;
	if (!rb)
		return false;
	pthread_mutex_lock(&rb->mu);
	bool held = false;
	for (unsigned i = 0; i < rb->nheld && !held; i++)
		held = rb->held[i] == ino;
	pthread_mutex_unlock(&rb->mu);
	return held;
}

/* Hold ino's writes: 0, or -EBUSY when RB_HELD files are held already. */
static void unhold(struct mds_ec_rebuild *rb, uint64_t ino)
{
	pthread_mutex_lock(&rb->mu);
	for (unsigned i = 0; i < rb->nheld; i++)
		if (rb->held[i] == ino) {
			rb->held[i] = rb->held[--rb->nheld];
			break;
		}
	pthread_mutex_unlock(&rb->mu);
}

/*
 * The rebuild of ino's chunks may begin.  Not while the sealer frees the
 * file's extra copies or a scrub repairs it in place (mds_ec_hold): a
 * chunk rebuilt onto a server whose ranges are being punched could be
 * punched after it was written.  Each side takes its own hold, then
 * looks at the other's (mds_ec.c's copies_free does the same the other
 * way round), so at least one of the two sees the other and backs off
 * (-EAGAIN: the next scan tries again).
 */
static int hold(struct braid_mds *mds, struct mds_ec_rebuild *rb, uint64_t ino)
{
	pthread_mutex_lock(&rb->mu);
	int rc = 0;
	bool held = false;
	for (unsigned i = 0; i < rb->nheld && !held; i++)
		held = rb->held[i] == ino;
	if (!held && rb->nheld == RB_HELD)
		rc = -EBUSY;
	else if (!held)
		rb->held[rb->nheld++] = ino;
	pthread_mutex_unlock(&rb->mu);
	if (!rc && !held && mds_ec_held(mds, ino)) {
		unhold(rb, ino);
		rc = -EAGAIN;
	}
	return rc;
}

/* ------------------------------------------------------------- stripes */

/* A holder whose chunks must go: declared lost, or drained. */
enum { H_KEEP, H_LOST, H_DRAINED };
static int holder_fate(struct braid_mds *mds, uint32_t id)
{
	struct mds_ds_info in;
	if (!id || mds_dsreg_get(mds, id, &in))
		return H_LOST; /* nothing there, or a server forgotten */
	return in.lost ? H_LOST : in.drained ? H_DRAINED : H_KEEP;
}

/* One stripe's chunks to make elsewhere. */
struct rb_stripe {
	uint64_t s;
	uint32_t ids[RB_CHUNKS];
	uint8_t idx[RB_CHUNKS]; /* the chunks to make */
	unsigned n;
};

/*
 * Every stripe of a's file with chunks to move, into *out (malloc'd, or
 * NULL when none) and *nout; bad stripes (more than m chunks lost) are
 * counted in need and left out.
 */
static int stripes_of(struct braid_mds *mds, const struct mds_attr *a,
		      const struct layout_policy *p, struct rb_stripe **out, size_t *nout,
		      struct mds_ec_rebuild_need *need)
{
	uint64_t stripe_bytes = (uint64_t)p->ec_k << p->seg_shift;
	uint64_t nstripes = a->size ? (a->size - 1) / stripe_bytes + 1 : 0;
	unsigned total = (unsigned)p->ec_k + p->ec_m;
	struct rb_stripe *v = NULL;
	size_t n = 0, cap = 0;
	memset(need, 0, sizeof(*need));
	for (uint64_t s = 0; s < nstripes; s++) {
		struct rb_stripe st = {.s = s};
		int rc = mds_ec_stripe_ids(mds, a->ino, p, s, st.ids);
		if (rc == -ENOENT)
			continue; /* no parity recorded: nothing to rebuild it from */
		if (rc) {
			free(v);
			return rc;
		}
		unsigned lost = 0;
		uint32_t a_lost = 0;
		for (unsigned i = 0; i < total; i++) {
			int fate = holder_fate(mds, st.ids[i]);
			if (fate == H_LOST) {
				lost++;
				a_lost = a_lost ? a_lost : st.ids[i];
			}
			/* a chunk never laid out has no map to name another */
			if (fate != H_KEEP && st.ids[i])
				st.idx[st.n++] = (uint8_t)i;
		}
		if (lost > p->ec_m) {
			if (!need->bad++)
				need->bad_ds = a_lost;
			continue;
		}
		if (!st.n)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			struct rb_stripe *nv = realloc(v, cap * sizeof(*nv));
			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
		}
		v[n++] = st;
		need->chunks += st.n;
		need->bytes += (uint64_t)st.n << p->seg_shift;
	}
	*out = v;
	*nout = n;
	return 0;
}

/* a's file when it is a sealed erasure-coded file: 0, else -ENOENT. */
static int sealed_file(struct braid_mds *mds, uint64_t ino, struct mds_attr *a,
		       struct mds_file_map *map)
{
	struct mds_ec_file f;
	if (mds_inode_getattr(mds->store, ino, a) || a->type != MDS_REG || !a->nlink ||
	    mds_data_map(mds, ino, map) || !layout_is_ec(&map->pol) ||
	    mds_ec_file_get(mds, ino, &f) || !f.sealed)
		return -ENOENT;
	return 0;
}

int mds_ec_rebuild_check(struct braid_mds *mds, uint64_t ino, struct mds_ec_rebuild_need *need)
{
	struct mds_ec_rebuild *rb = mds->ec_rebuild;
	struct mds_attr a;
	struct mds_file_map map;
	memset(need, 0, sizeof(*need));
	if (!rb || sealed_file(mds, ino, &a, &map))
		return -ENOENT;
	struct rb_stripe *v;
	size_t n;
	int rc = stripes_of(mds, &a, &map.pol, &v, &n, need);
	free(v);
	if (!rc && need->chunks)
		rc = hold(mds, rb, ino);
	return rc;
}

/* ------------------------------------------------------------- making */

struct rb_file {
	struct braid_mds *mds;
	struct mds_attr a;
	struct mds_file_map map;
	uint64_t w0; /* the file's write count before it was looked at */
	struct rb_stripe *v;
	size_t n;
	bool (*stop)(void *arg);
	void (*done)(void *arg, uint64_t bytes);
	void *arg;
	pthread_mutex_t mu; /* guards what follows */
	size_t next;
	int err;
	unsigned made;
	uint32_t failed[RB_FAILED]; /* targets a call failed on */
	unsigned nfailed;
};

/* A compute slot (RB_JOBS at once over every file), then the call. */
static int compute(struct rb_file *f, uint64_t s, const uint32_t *ids, unsigned target,
		   uint64_t *written)
{
	struct mds_ec_rebuild *rb = f->mds->ec_rebuild;
	pthread_mutex_lock(&rb->mu);
	while (rb->busy >= RB_JOBS)
		pthread_cond_wait(&rb->cond, &rb->mu);
	rb->busy++;
	pthread_mutex_unlock(&rb->mu);
	int rc = -EAGAIN;
	for (unsigned t = 0; rc == -EAGAIN && t < RB_DELAYS && !f->stop(f->arg); t++) {
		if (t)
			usleep(RB_DELAY_MS * 1000);
		rc = mds_ec_compute(f->mds, &f->a, &f->map.pol, f->map.epoch, s, ids, target,
				    written);
	}
	pthread_mutex_lock(&rb->mu);
	rb->busy--;
	pthread_cond_signal(&rb->cond);
	pthread_mutex_unlock(&rb->mu);
	return rc;
}

/* Where chunk idx of stripe st goes: a usable data server holding no
 * chunk of it (layout_ec_place's choice for one parity chunk). */
static int target_pick(struct rb_file *f, const struct rb_stripe *st, uint32_t *to)
{
	struct braid_mds *mds = f->mds;
	uint32_t avoid[RB_FAILED];
	pthread_mutex_lock(&f->mu);
	unsigned na = f->nfailed;
	memcpy(avoid, f->failed, na * sizeof(avoid[0]));
	pthread_mutex_unlock(&f->mu);
	struct layout_cand usable[256];
	unsigned nu = mds_dsreg_candidates(mds, avoid, na, usable, 256, NULL);
	uint32_t set[LAYOUT_SET_MAX];
	for (unsigned i = 0; i < f->map.nset; i++)
		set[i] = f->map.set[i] & MDS_LAYOUT_ID;
	struct layout_policy one = f->map.pol;
	one.ec_m = 1;
	return layout_ec_place(&one, set, f->map.nset, st->s, st->ids,
			       (unsigned)f->map.pol.ec_k + f->map.pol.ec_m, usable, nu, to);
}

/*
 * No usable data server holds no chunk of the stripe (a k + m stripe on
 * k + m servers, one lost, has nowhere to go): said once per file (a
 * small ring), since braidctl shows only failed passes.  The file stays
 * readable through reconstruction, and the rebuild goes on as soon as a
 * server joins.
 */
static void nowhere_once(struct rb_file *f, uint64_t s)
{
	struct mds_ec_rebuild *rb = f->mds->ec_rebuild;
	pthread_mutex_lock(&rb->mu);
	bool said = false;
	for (unsigned i = 0; i < rb->nsaid && i < RB_SAID && !said; i++)
		said = rb->said[i] == f->a.ino;
	if (!said)
		rb->said[rb->nsaid++ % RB_SAID] = f->a.ino;
	pthread_mutex_unlock(&rb->mu);
	if (!said)
		mds_log("inode %llu: stripe %llu: no usable data server outside the stripe to "
			"rebuild its lost chunks on (each of its %u chunks needs its own server; "
			"add one): it is read through reconstruction meanwhile",
			(unsigned long long)f->a.ino, (unsigned long long)s,
			(unsigned)f->map.pol.ec_k + f->map.pol.ec_m);
}

/* The record naming chunk idx of stripe s moves from 'from' to 'to'. */
struct rb_rec {
	struct braid_mds *mds;
	uint64_t ino, s;
	unsigned idx, k, m;
	uint32_t from, to;
};

static int rec_move(void *arg)
{
	struct rb_rec *r = arg;
	if (r->idx < r->k)
		return mds_data_segment_move(r->mds, r->ino, r->s * r->k + r->idx, r->from, r->to);
	struct mds_layout_args la = {.ino = r->ino, .seg = MDS_EC_PARITY + r->s};
	int rc = mds_layout_get(r->mds->store, r->ino, la.seg, &la.l);
	if (rc)
		return rc;
	unsigned j = r->idx - r->k;
	if (la.l.nds != r->m || la.l.ds[j] != r->from)
		return la.l.nds == r->m && la.l.ds[j] == r->to ? 0 : -ENOENT;
	la.l.ds[j] = r->to;
	return mds_layout_set(r->mds->store, &la);
}

/* Every chunk of st to move, one after another (each one made is a source
 * for the next). */
static int stripe_make(struct rb_file *f, struct rb_stripe *st)
{
	struct braid_mds *mds = f->mds;
	const struct layout_policy *p = &f->map.pol;
	int err = 0;
	for (unsigned c = 0; c < st->n && !f->stop(f->arg); c++) {
		unsigned idx = st->idx[c];
		uint32_t from = st->ids[idx], to;
		int rc = target_pick(f, st, &to);
		if (rc) {
			if (rc == -EAGAIN)
				nowhere_once(f, st->s);
			err = err ? err : rc;
			continue;
		}
		uint32_t ids[RB_CHUNKS];
		memcpy(ids, st->ids, sizeof(ids));
		ids[idx] = to;
		uint64_t written = 0, t0 = nfsd_now_ns();
		rc = compute(f, st->s, ids, idx, &written);
		struct rb_rec r = {.mds = mds,
				   .ino = f->a.ino,
				   .s = st->s,
				   .idx = idx,
				   .k = p->ec_k,
				   .m = p->ec_m,
				   .from = from,
				   .to = to};
		if (!rc)
			rc = mds_ec_sealed_do(mds, f->a.ino, f->w0, rec_move, &r);
		if (rc) {
			mds_log("inode %llu: rebuilding stripe %llu chunk %u (was on data server %u) "
				"on data server %u: %s (tried again later)",
				(unsigned long long)f->a.ino, (unsigned long long)st->s, idx, from,
				to, strerror(-rc));
			pthread_mutex_lock(&f->mu);
			if (rc != -EAGAIN && f->nfailed < RB_FAILED)
				f->failed[f->nfailed++] = to;
			pthread_mutex_unlock(&f->mu);
			err = err ? err : rc;
			continue;
		}
		st->ids[idx] = to;
		pthread_mutex_lock(&f->mu);
		f->made++;
		pthread_mutex_unlock(&f->mu);
		f->done(f->arg, written);
		mds_log("inode %llu: stripe %llu chunk %u rebuilt on data server %u (was on %u): "
			"%llu bytes in %.2f s",
			(unsigned long long)f->a.ino, (unsigned long long)st->s, idx, to, from,
			(unsigned long long)written, (double)(nfsd_now_ns() - t0) / 1e9);
	}
	return err;
}

static void *file_worker(void *arg)
{
	struct rb_file *f = arg;
	for (;;) {
		pthread_mutex_lock(&f->mu);
		size_t i = f->next < f->n && !f->stop(f->arg) ? f->next++ : f->n;
		pthread_mutex_unlock(&f->mu);
		if (i == f->n)
			return NULL;
		int rc = stripe_make(f, &f->v[i]);
		pthread_mutex_lock(&f->mu);
		if (rc && !f->err)
			f->err = rc;
		pthread_mutex_unlock(&f->mu);
	}
}

/* Whether a parity record of ino names id (mds_layout_list). */
struct names {
	uint32_t id;
	bool parity;
};

static int names_parity(void *arg, uint64_t seg, const struct mds_layout_seg *l)
{
	struct names *nm = arg;
	if (seg < MDS_EC_PARITY || seg >= MDS_EC_REC)
		return 0;
	for (uint32_t k = 0; k < l->nds; k++)
		if (l->ds[k] == nm->id) {
			nm->parity = true;
			return 1;
		}
	return 0;
}

/* The objects of a's file on x, now named by nothing, removed where x
 * answers (best effort: a lost server's disk is gone anyway). */
static void objects_drop(struct braid_mds *mds, const struct mds_attr *a, uint32_t x)
{
	struct names nm = {.id = x};
	bool data_gone = !mds_data_member_drop(mds, a->ino, x);
	bool parity_gone = mds_layout_list(mds->store, a->ino, names_parity, &nm) >= 0 &&
			   !nm.parity;
	int rc;
	struct mds_ds_conn *dc = (data_gone || parity_gone) ? mds_ds_conn_get(mds, x, &rc) : NULL;
	if (!dc)
		return;
	struct ds_objid id, pid;
	mds_data_objid(a, &id);
	ds_objid_parity(&id, &pid);
	if (data_gone)
		ds_ctl_remove(dc->clnt, &mds->key, &id);
	if (parity_gone)
		ds_ctl_remove(dc->clnt, &mds->key, &pid);
	mds_ds_conn_put(dc);
	mds_dsreg_space_freed(mds, x);
	mds_layout_ds_space_freed(mds, x);
}

int mds_ec_rebuild_file(struct braid_mds *mds, uint64_t ino, bool (*stop)(void *arg),
			void (*done)(void *arg, uint64_t bytes), void *arg)
{
	struct mds_ec_rebuild *rb = mds->ec_rebuild;
	if (!rb)
		return -ENOENT;
	struct rb_file *f = calloc(1, sizeof(*f));
	if (!f) {
		unhold(rb, ino);
		return -ENOMEM;
	}
	*f = (struct rb_file){.mds = mds, .stop = stop, .done = done, .arg = arg};
	f->w0 = mds_ec_writes(mds, ino); /* before anything is looked at */
	struct mds_ec_rebuild_need need;
	int rc = sealed_file(mds, ino, &f->a, &f->map);
	if (!rc)
		rc = stripes_of(mds, &f->a, &f->map.pol, &f->v, &f->n, &need);
	uint32_t from[RB_FAILED * 4];
	unsigned nfrom = 0;
	for (size_t i = 0; !rc && i < f->n; i++)
		for (unsigned c = 0; c < f->v[i].n; c++) {
			uint32_t x = f->v[i].ids[f->v[i].idx[c]];
			bool seen = false;
			for (unsigned j = 0; j < nfrom && !seen; j++)
				seen = from[j] == x;
			if (!seen && nfrom < sizeof(from) / sizeof(from[0]))
				from[nfrom++] = x;
		}
	if (!rc && f->n) {
		pthread_mutex_init(&f->mu, NULL);
		pthread_t t[RB_JOBS];
		unsigned nt = 0;
		for (; nt < RB_JOBS && nt < f->n; nt++)
			if (pthread_create(&t[nt], NULL, file_worker, f))
				break;
		if (!nt)
			file_worker(f);
		for (unsigned i = 0; i < nt; i++)
			pthread_join(t[i], NULL);
		pthread_mutex_destroy(&f->mu);
		rc = f->err;
		/* clients drop the reconstructing handles and old servers */
		if (f->made)
			mds_layout_recall_file(mds, ino);
		for (unsigned j = 0; j < nfrom; j++)
			objects_drop(mds, &f->a, from[j]);
	}
	unhold(rb, ino);
	free(f->v);
	free(f);
	return rc;
}

/* ------------------------------------------------------------- life */

int mds_ec_rebuild_init(struct braid_mds *mds, char *msg, size_t msglen)
{
	struct mds_ec_rebuild *rb = calloc(1, sizeof(*rb));
	if (!rb) {
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	pthread_mutex_init(&rb->mu, NULL);
	pthread_cond_init(&rb->cond, NULL);
	mds->ec_rebuild = rb;
	return 0;
}

void mds_ec_rebuild_release(struct braid_mds *mds)
{
	struct mds_ec_rebuild *rb = mds->ec_rebuild;
	if (!rb)
		return;
	pthread_cond_destroy(&rb->cond);
	pthread_mutex_destroy(&rb->mu);
	free(rb);
	mds->ec_rebuild = NULL;
}
