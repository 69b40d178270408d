/* SPDX-License-Identifier: MIT */
/*
 * Erasure coding, the MDS's side (mds/ec.h): the files' EC state, the
 * sealer thread, unsealing before writes, degraded READ substitutes and
 * the EC_LOCATE service data servers ask while reconstructing.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl/client.h"
#include "ctl/objid.h"
#include "layout/fence.h"
#include "layout/policy.h"
#include "mds/data.h"
#include "mds/dsreg.h"
#include "mds/ec.h"
#include "mds/layout.h"
#include "mds/mds_impl.h"
#include "mds/space.h"
#include "mds/state.h"
#include "nfsd/clock.h"
#include "nfsd/metrics.h"
#include "nfsd/xdr/braid_ctl.h"

#define EC_SLOTS      4096  /* write counts, hashed by inode */
#define EC_JOBS	      4	    /* EC_COMPUTE calls at once */
#define EC_BATCH      16    /* stripes placed, then encoded, at a time */
#define EC_TIMEOUT_MS 15000 /* one EC_COMPUTE call */
#define EC_SCAN_MS    500
#define EC_SCAN_MAX   4096 /* files looked at per scan */
#define EC_CHUNKS     (LAYOUT_EC_K_MAX + LAYOUT_EC_M_MAX)
#define EC_SAID	      64			   /* unreadable files logged (once each) */
#define EC_RETRY_NS   (5ull * 1000 * 1000 * 1000)  /* after a failed seal */
#define EC_RECALL_NS  (10ull * 1000 * 1000 * 1000) /* idle RW layouts recalled at most this often  \
						    */

/* Writes to inodes hashing here: how many began, and when the last did. */
struct ec_slot {
	uint64_t writes;
	uint64_t last_ns;
	uint64_t retry_ns;  /* a seal failed: not tried again before (the sealer's only) */
	uint64_t recall_ns; /* its idle RW layouts were last recalled (the sealer's only) */
	unsigned begins;    /* mds_ec_write_begin calls under way */
};

struct mds_ec {
	struct braid_mds *mds;
	/* guards slot[], stop, said[], and is held across the store writes
	 * that record SEALED or take a file out of the set (the race rule) */
	pthread_mutex_t mu;
	pthread_cond_t cond; /* the sealer's wait: the stop */
	bool stop, running;
	/* mds_ec_hold: the inode whose chunks are rewritten in place (0:
	 * none); write_begin answers -EAGAIN while it is its own, and hold
	 * waits on held_cond for the begins under way in its slot */
	uint64_t held;
	pthread_cond_t held_cond;
	pthread_t thread;
	struct ec_slot slot[EC_SLOTS];
	uint64_t said[EC_SAID];
	unsigned nsaid;
	atomic_uint_fast64_t rr; /* spreads degraded reads over the survivors */
	atomic_uint_fast64_t to_seal, failures;
	struct nfsd_metric *m_sealed, *m_unsealed, *m_bytes, *m_degraded, *m_files, *m_fail;
};

static struct ec_slot *slot_of(struct mds_ec *ec, uint64_t ino)
{
	return &ec->slot[(ino ^ (ino >> 13)) % EC_SLOTS];
}

static uint64_t slot_writes(struct mds_ec *ec, uint64_t ino)
{
	pthread_mutex_lock(&ec->mu);
	uint64_t w = slot_of(ec, ino)->writes;
	pthread_mutex_unlock(&ec->mu);
	return w;
}

static void slot_bump(struct mds_ec *ec, uint64_t ino)
{
	pthread_mutex_lock(&ec->mu);
	struct ec_slot *s = slot_of(ec, ino);
	s->writes++;
	s->last_ns = nfsd_now_ns();
	pthread_mutex_unlock(&ec->mu);
}

/*
 * A write_begin starts and counts: false while a scrub repair holds ino
 * (mds_ec_hold: a stripe's EC_COMPUTE calls, up to 15 s each), when the
 * write is answered -EAGAIN (DELAY, JUKEBOX, LAYOUTTRYLATER) rather than
 * keep an RPC worker waiting.
 */
static bool slot_begin(struct mds_ec *ec, uint64_t ino)
{
	pthread_mutex_lock(&ec->mu);
	bool held = ec->held == ino;
	if (!held) {
		struct ec_slot *s = slot_of(ec, ino);
		s->writes++;
		s->begins++;
		s->last_ns = nfsd_now_ns();
	}
	pthread_mutex_unlock(&ec->mu);
	return !held;
}

static void slot_end(struct mds_ec *ec, uint64_t ino)
{
	pthread_mutex_lock(&ec->mu);
	slot_of(ec, ino)->begins--;
	pthread_cond_broadcast(&ec->held_cond);
	pthread_mutex_unlock(&ec->mu);
}

/* ------------------------------------------------------------- records */

static int rec_get(struct braid_mds *mds, uint64_t ino, struct mds_ec_file *f)
{
	struct mds_layout_seg l;
	int rc = mds_layout_get(mds->store, ino, MDS_EC_REC, &l);
	if (rc)
		return rc;
	memset(f, 0, sizeof(*f));
	f->sealed = l.flags & MDS_EC_SEALED;
	if (l.nds >= 4) {
		f->change = (uint64_t)l.ds[0] << 32 | l.ds[1];
		f->size = (uint64_t)l.ds[2] << 32 | l.ds[3];
	}
	return 0;
}

static int rec_put(struct braid_mds *mds, uint64_t ino, bool sealed, uint64_t change, uint64_t size)
{
	struct mds_layout_args la = {.ino = ino, .seg = MDS_EC_REC};
	la.l.flags = sealed ? MDS_EC_SEALED : 0;
	la.l.nds = 4;
	la.l.ds[0] = (uint32_t)(change >> 32);
	la.l.ds[1] = (uint32_t)change;
	la.l.ds[2] = (uint32_t)(size >> 32);
	la.l.ds[3] = (uint32_t)size;
	return mds_layout_set(mds->store, &la);
}

int mds_ec_file_get(struct braid_mds *mds, uint64_t ino, struct mds_ec_file *out)
{
	return rec_get(mds, ino, out);
}

int mds_ec_parity_get(struct braid_mds *mds, uint64_t ino, uint64_t s, uint32_t *ids, unsigned m)
{
	struct mds_layout_seg l;
	int rc = mds_layout_get(mds->store, ino, MDS_EC_PARITY + s, &l);
	if (rc)
		return rc;
	if (l.nds != m)
		return -ENOENT; /* another geometry: placed again */
	memcpy(ids, l.ds, m * sizeof(ids[0]));
	return 0;
}

/*
 * Stripe s's chunk holders, chunk order, into ids[0..k+m): data chunk j
 * from segment s*k+j's record (0: not laid out), parity from the stripe's
 * record.  -ENOENT when the stripe has no parity record.
 */
static int stripe_ids(struct braid_mds *mds, uint64_t ino, const struct layout_policy *p,
		      uint64_t s, uint32_t *ids)
{
	for (unsigned j = 0; j < p->ec_k; j++) {
		struct mds_layout_seg seg;
		int rc = mds_layout_get(mds->store, ino, s * p->ec_k + j, &seg);
		if (rc && rc != -ENOENT)
			return rc;
		ids[j] = rc ? 0 : seg.ds[0];
	}
	return mds_ec_parity_get(mds, ino, s, ids + p->ec_k, p->ec_m);
}

int mds_ec_stripe_ids(struct braid_mds *mds, uint64_t ino, const struct layout_policy *p,
		      uint64_t s, uint32_t *ids)
{
	return stripe_ids(mds, ino, p, s, ids);
}

/* ------------------------------------------------------------- writes */

static bool holder_ok(struct braid_mds *mds, uint32_t id);

struct chunks_up {
	struct braid_mds *mds;
	uint32_t down; /* a data chunk's server that is down or lost (0: none) */
};

static int chunk_up(void *arg, uint64_t seg, const struct mds_layout_seg *l)
{
	struct chunks_up *u = arg;
	if (seg >= MDS_LAYOUT_SEG_END || !l->nds || holder_ok(u->mds, l->ds[0]))
		return 0;
	u->down = l->ds[0];
	return 1;
}

/*
 * A sealed file is unsealed only while every data chunk's server is up:
 * unsealed, its parity no longer counts, and a chunk on a server that is
 * down could no longer be rebuilt for readers.  Until the server is back
 * (or the chunk rebuilt elsewhere: braidctl ds lost) the write waits
 * (-EAGAIN: DELAY, JUKEBOX, LAYOUTTRYLATER) and the file stays readable.
 */
static int write_begin(struct braid_mds *mds, uint64_t ino);

int mds_ec_write_begin(struct braid_mds *mds, uint64_t ino, const struct layout_policy *pol)
{
	struct mds_ec *ec = mds->ec;
	if (!ec || !layout_is_ec(pol))
		return 0;
	/* a sealed file whose lost chunks are being rebuilt waits (an unseal
	 * now would leave them with no parity to be made from) */
	if (mds_ec_rebuild_held(mds, ino))
		return -EAGAIN;
	if (!slot_begin(ec, ino))
		return -EAGAIN;
	int rc = write_begin(mds, ino);
	slot_end(ec, ino);
	return rc;
}

static int write_begin(struct braid_mds *mds, uint64_t ino)
{
	struct mds_ec *ec = mds->ec;
	struct mds_ec_file f;
	int rc = rec_get(mds, ino, &f);
	if (!rc && !f.sealed)
		return 0; /* hot: in the set already */
	if (rc && rc != -ENOENT)
		return rc;
	bool was_sealed = !rc;
	if (was_sealed) {
		struct chunks_up u = {.mds = mds};
		if ((rc = mds_layout_list(mds->store, ino, chunk_up, &u)) < 0)
			return rc;
		if (u.down)
			return -EAGAIN;
	}
	/* the set first: a crash between the two leaves a sealed file in the
	 * set, which the sealer encodes again */
	if ((rc = mds_ecseal_mark(mds->store, ino)) || (rc = rec_put(mds, ino, false, 0, 0)))
		return rc;
	if (was_sealed)
		nfsd_metric_add(ec->m_unsealed, 1);
	return 0;
}

int mds_ec_write_begin_ino(struct braid_mds *mds, uint64_t ino)
{
	struct mds_file_map m;
	int rc = mds_data_map(mds, ino, &m);
	return rc ? rc : mds_ec_write_begin(mds, ino, &m.pol);
}

void mds_ec_write_note(struct braid_mds *mds, uint64_t ino, const struct layout_policy *pol)
{
	if (mds->ec && layout_is_ec(pol))
		slot_bump(mds->ec, ino);
}

uint64_t mds_ec_writes(struct braid_mds *mds, uint64_t ino)
{
	return mds->ec ? slot_writes(mds->ec, ino) : 0;
}

int mds_ec_sealed_do(struct braid_mds *mds, uint64_t ino, uint64_t w0, int (*fn)(void *arg),
		     void *arg)
{
	struct mds_ec *ec = mds->ec;
	if (!ec)
		return -ENOENT;
	pthread_mutex_lock(&ec->mu);
	struct mds_ec_file f;
	int rc = slot_of(ec, ino)->writes != w0 ? -EAGAIN : rec_get(mds, ino, &f);
	if (!rc)
		rc = f.sealed ? fn(arg) : -EAGAIN;
	pthread_mutex_unlock(&ec->mu);
	return rc;
}

/* ------------------------------------------------------------- stripes */

/* What one stripe description points into. */
struct ec_desc {
	braid_ctl_ec_chunk ch[EC_CHUNKS];
	braid_ctl_netaddr na[EC_CHUNKS][MDS_DS_ADDRS_MAX];
	struct mds_ds_info info[EC_CHUNKS];
};

/*
 * Stripe s of a's file (policy p, fence epoch epoch, size size), its
 * chunks on ids[0..k+m), as braid_ctl.x describes it, pointing into d.
 * A holder that is down or lost (or 0) is named 0, with no addresses.
 */
static void stripe_describe(struct braid_mds *mds, const struct mds_attr *a,
			    const struct layout_policy *p, uint32_t epoch, uint64_t s,
			    uint64_t size, const uint32_t *ids, struct ec_desc *d,
			    braid_ctl_ec_stripe *out)
{
	unsigned n = (unsigned)p->ec_k + p->ec_m;
	memset(out, 0, sizeof(*out));
	memcpy(out->es_obj.oi_key, a->objkey, sizeof(out->es_obj.oi_key));
	out->es_obj.oi_gen = a->generation;
	mds_data_fence_epoch(mds, a, epoch, &out->es_uid, &out->es_gid);
	out->es_k = p->ec_k;
	out->es_m = p->ec_m;
	out->es_shift = p->seg_shift;
	out->es_stripe = s;
	out->es_size = size;
	for (unsigned i = 0; i < n; i++) {
		braid_ctl_ec_chunk *c = &d->ch[i];
		struct mds_ds_info *in = &d->info[i];
		memset(c, 0, sizeof(*c));
		if (!ids[i] || mds_dsreg_get(mds, ids[i], in) || !in->up || in->lost)
			continue;
		c->ec_ds = ids[i];
		unsigned na = in->nctl_addrs < MDS_DS_ADDRS_MAX ? in->nctl_addrs : MDS_DS_ADDRS_MAX;
		for (unsigned k = 0; k < na; k++) {
			d->na[i][k].na_r_netid = xdr_string_of(in->ctl_addrs[k].netid);
			d->na[i][k].na_r_addr = xdr_string_of(in->ctl_addrs[k].uaddr);
		}
		c->ec_addrs.len = na;
		c->ec_addrs.val = d->na[i];
	}
	out->es_chunks.len = n;
	out->es_chunks.val = d->ch;
}

/* ------------------------------------------------------------- sealing */

/* One parity chunk to make. */
struct ec_job {
	uint64_t s;
	unsigned r;
	uint32_t ids[EC_CHUNKS];
};

/* A batch of jobs for one file, taken by EC_JOBS threads. */
struct ec_batch {
	struct mds_ec *ec;
	const struct mds_attr *a;
	const struct mds_file_map *map;
	struct ec_job *jobs;
	unsigned njobs;
	pthread_mutex_t mu; /* guards next, err */
	unsigned next;
	int err;
};

int mds_ec_chunk_compute(struct braid_mds *mds, const struct mds_attr *a,
			 const struct layout_policy *p, uint32_t epoch, uint64_t s, uint64_t size,
			 const uint32_t *ids, unsigned target, bool verify,
			 struct mds_ec_compute_out *out)
{
	memset(out, 0, sizeof(*out));
	out->chunk = target;
	struct ec_desc *d = malloc(sizeof(*d));
	if (!d)
		return -ENOMEM;
	braid_ctl_ec_compute_args args = {
	    .ecc_target = target,
	    .ecc_mode = LAYOUT_FENCE_MODE,
	    .ecc_verify = verify,
	};
	stripe_describe(mds, a, p, epoch, s, size, ids, d, &args.ecc_stripe);
	int rc;
	struct mds_ds_conn *dc = mds_ds_conn_get(mds, ids[target], &rc);
	uint64_t chunk = 1ull << p->seg_shift;
	while (dc) {
		args.ecc_count = chunk - args.ecc_offset;
		braid_ctl_ec_compute_res res;
		memset(&res, 0, sizeof(res));
		rc = ds_ctl_call_timeout(dc->clnt, &mds->key, BRAID_CTLPROC_EC_COMPUTE, &args, &res,
					 NULL, EC_TIMEOUT_MS);
		if (!rc && res.ecc_status) {
			rc = ds_ctl_errno(res.ecc_status);
			out->chunk = res.u.ecf_chunk;
		}
		if (rc)
			break;
		const braid_ctl_ec_compute_resok *ok = &res.u.ecc_resok;
		out->written += ok->ecc_written;
		out->mismatch += ok->ecc_mismatch;
		if (ok->ecc_done)
			break;
		if (ok->ecc_next <= args.ecc_offset || ok->ecc_next >= chunk) {
			rc = -EPROTO; /* no progress, or past the chunk without done */
			break;
		}
		args.ecc_offset = ok->ecc_next;
	}
	if (dc)
		mds_ds_conn_put(dc);
	free(d);
	return rc;
}

int mds_ec_compute(struct braid_mds *mds, const struct mds_attr *a, const struct layout_policy *p,
		   uint32_t epoch, uint64_t s, const uint32_t *ids, unsigned target,
		   uint64_t *written)
{
	struct mds_ec_compute_out o;
	int rc = mds_ec_chunk_compute(mds, a, p, epoch, s, a->size, ids, target, false, &o);
	*written += o.written;
	return rc;
}

/* EC_COMPUTE of one parity chunk, from its start to its end. */
static int compute_one(struct ec_batch *b, const struct ec_job *j, uint64_t *written)
{
	const struct layout_policy *p = &b->map->pol;
	return mds_ec_compute(b->ec->mds, b->a, p, b->map->epoch, j->s, j->ids, p->ec_k + j->r,
			      written);
}

static bool ec_stopping(struct mds_ec *ec)
{
	pthread_mutex_lock(&ec->mu);
	bool s = ec->stop;
	pthread_mutex_unlock(&ec->mu);
	return s;
}

static void *batch_worker(void *arg)
{
	struct ec_batch *b = arg;
	for (;;) {
		/* a stop leaves the file to seal: encoded again at the next start */
		bool stop = ec_stopping(b->ec);
		pthread_mutex_lock(&b->mu);
		if (stop && !b->err)
			b->err = -EINTR;
		unsigned i = b->err ? b->njobs : b->next++;
		pthread_mutex_unlock(&b->mu);
		if (i >= b->njobs)
			return NULL;
		uint64_t w = 0;
		int rc = compute_one(b, &b->jobs[i], &w);
		nfsd_metric_add(b->ec->m_bytes, (int64_t)w);
		pthread_mutex_lock(&b->mu);
		if (rc && !b->err) {
			b->err = rc;
			mds_log("inode %llu: encoding stripe %llu parity %u on data server %u: %s",
				(unsigned long long)b->a->ino, (unsigned long long)b->jobs[i].s,
				b->jobs[i].r, b->jobs[i].ids[b->map->pol.ec_k + b->jobs[i].r],
				strerror(-rc));
		}
		pthread_mutex_unlock(&b->mu);
	}
}

/* Every job of b, EC_JOBS at a time: 0 or the first error. */
static int batch_run(struct ec_batch *b)
{
	pthread_t t[EC_JOBS];
	unsigned nt = 0;
	pthread_mutex_init(&b->mu, NULL);
	for (; nt < EC_JOBS && nt < b->njobs; nt++)
		if (pthread_create(&t[nt], NULL, batch_worker, b))
			break;
	if (!nt)
		batch_worker(b); /* no thread: this one does it all */
	for (unsigned i = 0; i < nt; i++)
		pthread_join(t[i], NULL);
	pthread_mutex_destroy(&b->mu);
	return b->err;
}

static bool id_in(const uint32_t *v, unsigned n, uint32_t id)
{
	for (unsigned i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

static bool holder_ok(struct braid_mds *mds, uint32_t id)
{
	struct mds_ds_info in;
	return !mds_dsreg_get(mds, id, &in) && in.up && !in.lost && !in.drained;
}

/*
 * Stripe s of a's file laid out whole (every data chunk with an object)
 * and its parity holders chosen and recorded (kept while they are up and
 * apart from the data), into job's ids.  A file mirrored while hot has
 * mirror 0's copy of each segment as its data chunk (the others are freed
 * once it is sealed): parity goes apart from every copy of the stripe's
 * segments where enough data servers are up, else apart from mirror 0's.
 */
static int stripe_prepare(struct braid_mds *mds, const struct mds_attr *a, struct mds_file_map *map,
			  uint64_t s, uint32_t *ids)
{
	const struct layout_policy *p = &map->pol;
	unsigned k = p->ec_k, m = p->ec_m, nall = 0;
	uint32_t all[LAYOUT_EC_K_MAX * LAYOUT_MIRRORS_MAX];
	for (unsigned j = 0; j < k; j++) {
		struct mds_layout_seg seg;
		int rc = mds_data_segment(mds, a, s * k + j, true, NULL, 0, map, &seg);
		if (rc)
			return rc;
		ids[j] = seg.ds[0];
		for (uint32_t c = 0; c < seg.nds && c < LAYOUT_MIRRORS_MAX; c++)
			if (!id_in(all, nall, seg.ds[c]))
				all[nall++] = seg.ds[c];
	}
	int rc = mds_ec_parity_get(mds, a->ino, s, ids + k, m);
	bool keep = !rc;
	for (unsigned r = 0; keep && r < m; r++)
		keep = holder_ok(mds, ids[k + r]) && !id_in(ids, k, ids[k + r]);
	if (keep)
		return 0;
	if ((rc = mds_data_map(mds, a->ino, map)))
		return rc;
	uint32_t set[LAYOUT_SET_MAX];
	for (unsigned i = 0; i < map->nset; i++)
		set[i] = map->set[i] & MDS_LAYOUT_ID;
	struct layout_cand usable[256];
	unsigned nu = mds_dsreg_candidates(mds, NULL, 0, usable, 256, NULL);
	rc = -EAGAIN;
	if (nall > k)
		rc = layout_ec_place(p, set, map->nset, s, all, nall, usable, nu, ids + k);
	if (rc == -EAGAIN &&
	    (rc = layout_ec_place(p, set, map->nset, s, ids, k, usable, nu, ids + k)))
		return rc;
	struct mds_layout_args la = {.ino = a->ino, .seg = MDS_EC_PARITY + s};
	la.l.nds = m;
	memcpy(la.l.ds, ids + k, m * sizeof(ids[0]));
	return mds_layout_set(mds->store, &la);
}

/* Encodes every stripe of a's file: 0, or an error (it stays to seal). */
static int file_encode(struct mds_ec *ec, const struct mds_attr *a, struct mds_file_map *map,
		       uint64_t w0)
{
	struct braid_mds *mds = ec->mds;
	const struct layout_policy *p = &map->pol;
	uint64_t stripe_bytes = (uint64_t)p->ec_k << p->seg_shift;
	uint64_t nstripes = a->size ? (a->size - 1) / stripe_bytes + 1 : 0;
	struct ec_job *jobs = calloc((size_t)EC_BATCH * p->ec_m, sizeof(*jobs));
	if (!jobs)
		return -ENOMEM;
	int rc = 0;
	for (uint64_t s0 = 0; !rc && s0 < nstripes; s0 += EC_BATCH) {
		if (slot_writes(ec, a->ino) != w0) {
			rc = -EAGAIN; /* written meanwhile: sealed later */
			break;
		}
		struct ec_batch b = {.ec = ec, .a = a, .map = map, .jobs = jobs};
		for (uint64_t s = s0; !rc && s < nstripes && s < s0 + EC_BATCH; s++) {
			uint32_t ids[EC_CHUNKS];
			if ((rc = stripe_prepare(mds, a, map, s, ids)))
				break;
			for (unsigned r = 0; r < p->ec_m; r++) {
				struct ec_job *j = &jobs[b.njobs++];
				j->s = s;
				j->r = r;
				memcpy(j->ids, ids, sizeof(ids));
			}
		}
		if (!rc)
			rc = batch_run(&b);
	}
	free(jobs);
	return rc;
}

/* Takes ino out of the set, unless a write began since w0 (under mu: a
 * writer that put it back in after seeing it sealed keeps it there). */
static void set_clear_if(struct mds_ec *ec, uint64_t ino, uint64_t w0)
{
	pthread_mutex_lock(&ec->mu);
	if (slot_of(ec, ino)->writes == w0)
		mds_ecseal_clear(ec->mds->store, ino);
	pthread_mutex_unlock(&ec->mu);
}

/*
 * Quiet long enough to seal: unchanged for ec_seal_after, no writer.  A
 * client keeps its RW layouts after the last CLOSE (they outlive it, and
 * the Linux client returns them only when asked or when it drops the
 * inode), so a quiet file whose only writer left is an RW layout has its
 * layouts recalled (at most once per EC_RECALL_NS): a later write asks for
 * a new RW layout, which unseals the file first.
 */
static bool file_quiet(struct mds_ec *ec, const struct mds_attr *a)
{
	struct braid_mds *mds = ec->mds;
	uint64_t after = mds->set.ec_seal_after_ms;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	int64_t age_ms = (now.tv_sec - a->ctime.sec) * 1000 +
			 ((int64_t)now.tv_nsec - (int64_t)a->ctime.nsec) / 1000000;
	if (age_ms < (int64_t)after)
		return false;
	pthread_mutex_lock(&ec->mu);
	uint64_t last = slot_of(ec, a->ino)->last_ns;
	pthread_mutex_unlock(&ec->mu);
	if (last && nfsd_now_ns() - last < after * 1000000)
		return false;
	if (mds_state_ino_open_write(mds, a->ino))
		return false;
	/* a write delegation's holder may still have writes to send, the
	 * file closed: recalled (it writes back, then returns it), sealed on a
	 * later pass */
	if (mds_deleg_break_write(mds, a->ino, 0) == -EAGAIN)
		return false;
	if (!mds_layout_rw_held(mds, a->ino, 0))
		return true;
	struct ec_slot *sl = slot_of(ec, a->ino);
	uint64_t now_ns = nfsd_now_ns();
	if (!sl->recall_ns || now_ns - sl->recall_ns >= EC_RECALL_NS) {
		sl->recall_ns = now_ns;
		mds_layout_recall_file(mds, a->ino);
	}
	return false;
}

/* a's objects on data server id: the ranges of segments [0, nsegs) that
 * own[] does not give to id freed, or, when none is id's, the object
 * removed and id out of the file's set. */
static int member_free(struct braid_mds *mds, const struct mds_attr *a, unsigned shift,
		       const uint32_t *own, uint64_t nsegs, uint32_t id)
{
	struct ds_objid oid;
	mds_data_objid(a, &oid);
	bool named = false;
	for (uint64_t n = 0; n < nsegs && !named; n++)
		named = own[n] == id;
	int rc;
	struct mds_ds_conn *dc = mds_ds_conn_get(mds, id, &rc);
	if (!dc)
		return rc ? rc : -EAGAIN;
	if (!named) {
		rc = ds_ctl_remove(dc->clnt, &mds->key, &oid);
		mds_ds_conn_put(dc);
		if (rc && rc != -ENOENT)
			return rc;
		return mds_data_member_drop(mds, a->ino, id);
	}
	for (uint64_t n = 0; !rc && n < nsegs;) {
		if (own[n] == id) {
			n++;
			continue;
		}
		uint64_t e = n;
		while (e < nsegs && own[e] != id)
			e++;
		rc = ds_ctl_deallocate(dc->clnt, &mds->key, &oid, n << shift, (e - n) << shift);
		n = e;
	}
	mds_ds_conn_put(dc);
	return rc;
}

static int seg_owner(void *arg, uint64_t seg, const struct mds_layout_seg *l)
{
	uint32_t *own = ((void **)arg)[0];
	const uint64_t *nsegs = ((void **)arg)[1];
	if (seg >= *nsegs)
		return 0;
	if (l->nds != 1)
		return -EAGAIN; /* not trimmed (a rebuild's?): later */
	own[seg] = l->ds[0];
	return 0;
}

/*
 * A sealed file mirrored while hot gives back its extra copies, in steps a
 * later scan redoes while the file stays in the set (a crash anywhere
 * leaves bytes that nobody names, freed then; never a named one freed):
 * 1. its segment records keep mirror 0 only (durable: layouts, reads,
 *    EC_LOCATE and rebuild see one copy); a scan that trimmed stops here,
 *    so the MDS's own I/O begun from the old records ends first;
 * 2. once no client holds a layout of the file (they are recalled) and
 *    held against writes (mds_ec_hold), every member's object loses the
 *    ranges of the segments it no longer holds (DEALLOCATE), or is removed
 *    when it holds none, the member then leaving the file's set.
 * 0 when done; 1 or -errno (-EAGAIN: unsealed meanwhile) while not.
 */
static int copies_free(struct mds_ec *ec, const struct mds_attr *a, uint64_t w0)
{
	struct braid_mds *mds = ec->mds;
	unsigned trimmed;
	int rc = mds_data_segments_trim(mds, a->ino, &trimmed);
	if (rc || trimmed)
		return rc ? rc : 1;
	if (mds_layout_held(mds, a->ino)) {
		struct ec_slot *sl = slot_of(ec, a->ino);
		uint64_t now_ns = nfsd_now_ns();
		if (!sl->recall_ns || now_ns - sl->recall_ns >= EC_RECALL_NS) {
			sl->recall_ns = now_ns;
			mds_layout_recall_file(mds, a->ino);
		}
		return 1;
	}
	struct mds_file_map map;
	if ((rc = mds_data_map(mds, a->ino, &map)))
		return rc;
	unsigned shift = map.pol.seg_shift;
	uint64_t nsegs = a->size ? ((a->size - 1) >> shift) + 1 : 0;
	uint32_t *own = calloc(nsegs ? nsegs : 1, sizeof(*own));
	if (!own)
		return -ENOMEM;
	if ((rc = mds_ec_hold(mds, a->ino, w0))) {
		free(own);
		return rc;
	}
	if (mds_ec_rebuild_held(mds, a->ino)) {
		/* a rebuild may be writing a chunk onto a member: later (the
		 * rebuild's hold looks at this one too: mds/ec_rebuild.c) */
		mds_ec_unhold(mds, a->ino);
		free(own);
		return 1;
	}
	void *arg[2] = {own, &nsegs};
	rc = mds_layout_list(mds->store, a->ino, seg_owner, arg);
	rc = rc < 0 ? rc : 0;
	for (unsigned i = 0; !rc && i < map.nset; i++)
		rc = member_free(mds, a, shift, own, nsegs, map.set[i] & MDS_LAYOUT_ID);
	mds_ec_unhold(mds, a->ino);
	free(own);
	if (rc && rc != -EAGAIN)
		mds_log("inode %llu: freeing its mirror copies once sealed: %s",
			(unsigned long long)a->ino, strerror(-rc));
	return rc;
}

static void seal_one(struct mds_ec *ec, uint64_t ino)
{
	struct braid_mds *mds = ec->mds;
	uint64_t w0 = slot_writes(ec, ino); /* before anything is looked at */
	if (slot_of(ec, ino)->retry_ns > nfsd_now_ns())
		return;
	struct mds_attr a;
	int rc = mds_inode_getattr(mds->store, ino, &a);
	if (rc == -ESTALE || rc == -ENOENT) {
		mds_ecseal_clear(mds->store, ino);
		return;
	}
	if (rc)
		return;
	struct mds_file_map map;
	struct mds_ec_file f;
	if (a.type != MDS_REG || a.nlink == 0 || mds_data_map(mds, ino, &map) ||
	    !layout_is_ec(&map.pol)) {
		set_clear_if(ec, ino, w0); /* nothing (more) to encode */
		return;
	}
	if (!rec_get(mds, ino, &f) && f.sealed) {
		/* sealed: its extra mirror copies go before it leaves the set */
		if (map.pol.mirrors > 1 && (rc = copies_free(ec, &a, w0))) {
			if (rc < 0 && rc != -EAGAIN)
				slot_of(ec, ino)->retry_ns = nfsd_now_ns() + EC_RETRY_NS;
			return;
		}
		set_clear_if(ec, ino, w0);
		return;
	}
	if (!file_quiet(ec, &a))
		return;
	/* mirrored: a stale mirror (missed writes) may be a data chunk's
	 * holder; the resilver (or the move) finishes first */
	for (unsigned i = 0; map.pol.mirrors > 1 && i < map.nset; i++)
		if (map.set[i] & (MDS_LAYOUT_STALE | MDS_LAYOUT_TARGET | MDS_LAYOUT_LEAVING))
			return;
	/* the MDS's own writes under way finish first; later ones count */
	mds_data_write_gate(mds, ino, MDS_GATE_FREEZE);
	mds_data_write_gate(mds, ino, MDS_GATE_OPEN);
	rc = file_encode(ec, &a, &map, w0);
	if (rc) {
		if (rc != -EAGAIN && rc != -EINTR) {
			atomic_fetch_add(&ec->failures, 1);
			nfsd_metric_add(ec->m_fail, 1);
			slot_of(ec, ino)->retry_ns = nfsd_now_ns() + EC_RETRY_NS;
		}
		return; /* still in the set: tried again at a later scan */
	}
	pthread_mutex_lock(&ec->mu);
	struct mds_attr cur;
	bool clean = slot_of(ec, ino)->writes == w0 && !mds_layout_rw_held(mds, ino, 0) &&
		     !mds_inode_getattr(mds->store, ino, &cur) && cur.change == a.change &&
		     cur.size == a.size;
	/* mirrored while hot: it stays in the set until copies_free is done */
	if (clean && !(rc = rec_put(mds, ino, true, a.change, a.size)) && map.pol.mirrors == 1)
		rc = mds_ecseal_clear(mds->store, ino);
	pthread_mutex_unlock(&ec->mu);
	if (clean && !rc) {
		nfsd_metric_add(ec->m_sealed, 1);
		mds_space_note(mds, ino); /* its parity objects count */
	} else if (rc)
		mds_log("inode %llu: recording it sealed: %s", (unsigned long long)ino,
			strerror(-rc));
}

struct ino_vec {
	uint64_t v[EC_SCAN_MAX];
	unsigned n;
};

static int ino_collect(void *arg, uint64_t ino)
{
	struct ino_vec *iv = arg;
	if (iv->n == EC_SCAN_MAX)
		return 1;
	iv->v[iv->n++] = ino;
	return 0;
}

static void *ec_main(void *arg)
{
	struct mds_ec *ec = arg;
	struct ino_vec *iv = malloc(sizeof(*iv));
	while (iv) {
		pthread_mutex_lock(&ec->mu);
		if (!ec->stop) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += EC_SCAN_MS * 1000000L;
			ts.tv_sec += ts.tv_nsec / 1000000000L;
			ts.tv_nsec %= 1000000000L;
			pthread_cond_timedwait(&ec->cond, &ec->mu, &ts);
		}
		bool stop = ec->stop;
		pthread_mutex_unlock(&ec->mu);
		if (stop)
			break;
		iv->n = 0;
		if (mds_ecseal_list(ec->mds->store, ino_collect, iv) < 0)
			continue;
		atomic_store(&ec->to_seal, iv->n);
		nfsd_metric_set(ec->m_files, iv->n);
		for (unsigned i = 0; i < iv->n && !ec_stopping(ec); i++)
			seal_one(ec, iv->v[i]);
	}
	free(iv);
	return NULL;
}

/* ------------------------------------------------------------- reads */

int mds_ec_substitute(struct braid_mds *mds, const struct mds_attr *a,
		      const struct mds_file_map *map, uint64_t n,
		      bool (*ok)(void *arg, uint32_t id), void *arg, uint32_t *out)
{
	struct mds_ec *ec = mds->ec;
	const struct layout_policy *p = &map->pol;
	struct mds_ec_file f;
	if (!ec || !layout_is_ec(p) || rec_get(mds, a->ino, &f) || !f.sealed)
		return -ENOENT;
	uint64_t s = n / p->ec_k;
	uint32_t ids[EC_CHUNKS], par[LAYOUT_EC_M_MAX], dat[LAYOUT_EC_K_MAX];
	unsigned npar = 0, ndat = 0, total = (unsigned)p->ec_k + p->ec_m;
	int rc = stripe_ids(mds, a->ino, p, s, ids);
	if (rc)
		return rc == -ENOENT ? -ENOENT : rc;
	for (unsigned i = 0; i < total; i++) {
		if (!ids[i] || !ok(arg, ids[i]))
			continue;
		if (i >= p->ec_k)
			par[npar++] = ids[i];
		else
			dat[ndat++] = ids[i];
	}
	if (npar + ndat < p->ec_k) {
		/* more than m chunks gone: an error, never zeros */
		pthread_mutex_lock(&ec->mu);
		bool said = false;
		for (unsigned i = 0; i < ec->nsaid && i < EC_SAID; i++)
			said = said || ec->said[i] == a->ino;
		if (!said)
			ec->said[ec->nsaid++ % EC_SAID] = a->ino;
		pthread_mutex_unlock(&ec->mu);
		if (!said)
			mds_log("inode %llu: stripe %llu has %u of its %u chunks on data servers "
				"that can serve them, fewer than the %u it needs: its bytes cannot "
				"be read until one comes back",
				(unsigned long long)a->ino, (unsigned long long)s, npar + ndat,
				total, p->ec_k);
		return -EIO;
	}
	uint64_t t = atomic_fetch_add(&ec->rr, 1);
	*out = npar ? par[t % npar] : dat[t % ndat];
	nfsd_metric_add(ec->m_degraded, 1);
	return 0;
}

/* ------------------------------------------------------------- removal */

struct par_set {
	uint32_t id[64];
	unsigned n;
};

static int par_add(void *arg, uint64_t seg, const struct mds_layout_seg *l)
{
	struct par_set *ps = arg;
	if (seg < MDS_EC_PARITY || seg >= MDS_EC_REC)
		return 0;
	for (uint32_t i = 0; i < l->nds; i++)
		if (!id_in(ps->id, ps->n, l->ds[i]) && ps->n < 64)
			ps->id[ps->n++] = l->ds[i];
	return 0;
}

int mds_ec_objects_remove(struct braid_mds *mds, const struct mds_attr *a)
{
	struct par_set ps = {.n = 0};
	int rc = mds_layout_list(mds->store, a->ino, par_add, &ps);
	if (rc < 0)
		return rc;
	struct ds_objid id, pid;
	mds_data_objid(a, &id);
	ds_objid_parity(&id, &pid);
	int left = 0;
	for (unsigned i = 0; i < ps.n; i++) {
		struct mds_ds_conn *dc = mds_ds_conn_get(mds, ps.id[i], &rc);
		if (dc) {
			rc = ds_ctl_remove(dc->clnt, &mds->key, &pid);
			mds_ds_conn_put(dc);
		}
		if (rc && rc != -ENOENT && rc != -ESTALE)
			left = rc;
	}
	return left;
}

int mds_ec_parity_holders(struct braid_mds *mds, uint64_t ino, uint32_t *ids, unsigned max)
{
	struct par_set ps = {.n = 0};
	int rc = mds_layout_list(mds->store, ino, par_add, &ps);
	if (rc < 0)
		return rc;
	unsigned n = ps.n < max ? ps.n : max;
	memcpy(ids, ps.id, n * sizeof(ids[0]));
	return (int)n;
}

/* ------------------------------------------------------------- holds */

int mds_ec_hold(struct braid_mds *mds, uint64_t ino, uint64_t w0)
{
	struct mds_ec *ec = mds->ec;
	if (!ec)
		return -EAGAIN;
	pthread_mutex_lock(&ec->mu);
	while (ec->held && !ec->stop)
		pthread_cond_wait(&ec->held_cond, &ec->mu);
	struct ec_slot *sl = slot_of(ec, ino);
	int rc = ec->stop ? -EINTR : sl->writes != w0 ? -EAGAIN : 0;
	if (!rc) {
		ec->held = ino;
		/* a begin that counted before w0 was read may not have
		 * unsealed yet: it finishes first, and the record says */
		while (sl->begins && !ec->stop)
			pthread_cond_wait(&ec->held_cond, &ec->mu);
	}
	pthread_mutex_unlock(&ec->mu);
	if (rc)
		return rc;
	struct mds_ec_file f;
	if (rec_get(mds, ino, &f) || !f.sealed || mds_layout_rw_held(mds, ino, 0)) {
		mds_ec_unhold(mds, ino);
		return -EAGAIN;
	}
	return 0;
}

bool mds_ec_held(struct braid_mds *mds, uint64_t ino)
{
	struct mds_ec *ec = mds->ec;
	if (!ec)
		return false;
	pthread_mutex_lock(&ec->mu);
	bool held = ec->held == ino;
	pthread_mutex_unlock(&ec->mu);
	return held;
}

void mds_ec_unhold(struct braid_mds *mds, uint64_t ino)
{
	struct mds_ec *ec = mds->ec;
	pthread_mutex_lock(&ec->mu);
	if (ec->held == ino)
		ec->held = 0;
	pthread_cond_broadcast(&ec->held_cond);
	pthread_mutex_unlock(&ec->mu);
}

/* ------------------------------------------------------------- EC_LOCATE */

static braid_ctl_stat locate(struct braid_mds *mds, struct nfsd_req *req,
			     const braid_ctl_ec_locate_args *a, braid_ctl_ec_stripe *out)
{
	struct mds_attr at;
	int rc = mds_inode_getattr(mds->store, a->el_ino, &at);
	if (rc == -ESTALE || rc == -ENOENT || (!rc && at.type != MDS_REG))
		return BRAID_CTL_NOENT;
	if (rc)
		return BRAID_CTL_DELAY;
	if (memcmp(at.objkey, a->el_obj.oi_key, sizeof(at.objkey)))
		return BRAID_CTL_NOENT;
	if (at.generation != a->el_obj.oi_gen)
		return BRAID_CTL_STALE;
	struct mds_file_map map;
	struct mds_ec_file f;
	if ((rc = mds_data_map(mds, at.ino, &map)))
		return BRAID_CTL_DELAY;
	if (!layout_is_ec(&map.pol) || rec_get(mds, at.ino, &f) || !f.sealed)
		return BRAID_CTL_NOENT;
	if (a->el_offset >= at.size)
		return BRAID_CTL_INVAL;
	uint64_t s = layout_ec_stripe(&map.pol, a->el_offset);
	uint32_t ids[EC_CHUNKS];
	if ((rc = stripe_ids(mds, at.ino, &map.pol, s, ids)))
		return rc == -ENOENT ? BRAID_CTL_NOENT : BRAID_CTL_DELAY;
	struct ec_desc *d = xdr_arena_alloc(&req->arena, sizeof(*d));
	if (!d)
		return BRAID_CTL_DELAY;
	stripe_describe(mds, &at, &map.pol, map.epoch, s, at.size, ids, d, out);
	return BRAID_CTL_OK;
}

int mds_ec_locate(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	braid_ctl_ec_locate_res *res = resp;
	/* a data server's call, signed with the cluster key: nobody else may
	 * learn where a file's chunks are or its fence ids */
	if (req->cred.flavor != NFSD_AUTH_BRAID)
		res->el_status = BRAID_CTL_ACCESS;
	else if (!mds->ec)
		res->el_status = BRAID_CTL_NOENT;
	else
		res->el_status = locate(mds, req, argp, &res->u.el_stripe);
	return NFSD_SUCCESS;
}

/* ------------------------------------------------------------- life */

void mds_ec_stats(struct braid_mds *mds, struct mds_ec_stats *out)
{
	struct mds_ec *ec = mds->ec;
	memset(out, 0, sizeof(*out));
	if (!ec)
		return;
	out->sealed = nfsd_metric_value(ec->m_sealed);
	out->unsealed = nfsd_metric_value(ec->m_unsealed);
	out->encode_bytes = nfsd_metric_value(ec->m_bytes);
	out->degraded = nfsd_metric_value(ec->m_degraded);
	out->failures = atomic_load(&ec->failures);
	out->to_seal = atomic_load(&ec->to_seal);
}

int mds_ec_init(struct braid_mds *mds, char *msg, size_t msglen)
{
	struct mds_ec *ec = calloc(1, sizeof(*ec));
	if (!ec) {
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	ec->mds = mds;
	pthread_mutex_init(&ec->mu, NULL);
	pthread_cond_init(&ec->cond, NULL);
	pthread_cond_init(&ec->held_cond, NULL);
	struct nfsd_metrics *mt = mds->metrics;
	ec->m_sealed =
	    nfsd_metrics_counter(mt, "braid_mds_ec_sealed_total",
				 "Erasure-coded files sealed (parity made current).", NULL);
	ec->m_unsealed = nfsd_metrics_counter(
	    mt, "braid_mds_ec_unsealed_total",
	    "Sealed erasure-coded files unsealed by a write (unprotected until sealed again).",
	    NULL);
	ec->m_bytes =
	    nfsd_metrics_counter(mt, "braid_mds_ec_encode_bytes_total",
				 "Parity bytes the data servers wrote when sealing.", NULL);
	ec->m_degraded = nfsd_metrics_counter(
	    mt, "braid_mds_ec_degraded_layouts_total",
	    "READ layouts naming a reconstructing handle in place of a data server that "
	    "cannot serve.",
	    NULL);
	ec->m_fail = nfsd_metrics_counter(mt, "braid_mds_ec_encode_failures_total",
					  "Sealing attempts that failed (tried again).", NULL);
	ec->m_files = nfsd_metrics_gauge(mt, "braid_mds_ec_files",
					 "Erasure-coded files by state, at the last scan.",
					 "state=\"to_seal\"");
	mds->ec = ec;
	int rc = -pthread_create(&ec->thread, NULL, ec_main, ec);
	if (rc) {
		snprintf(msg, msglen, "erasure-coding thread: %s", strerror(-rc));
		return rc;
	}
	ec->running = true;
	return 0;
}

void mds_ec_stop(struct braid_mds *mds)
{
	struct mds_ec *ec = mds->ec;
	if (!ec || !ec->running)
		return;
	pthread_mutex_lock(&ec->mu);
	ec->stop = true;
	pthread_cond_broadcast(&ec->cond);
	pthread_cond_broadcast(&ec->held_cond);
	pthread_mutex_unlock(&ec->mu);
	pthread_join(ec->thread, NULL);
	ec->running = false;
}

void mds_ec_release(struct braid_mds *mds)
{
	struct mds_ec *ec = mds->ec;
	if (!ec)
		return;
	mds_ec_stop(mds);
	pthread_cond_destroy(&ec->cond);
	pthread_cond_destroy(&ec->held_cond);
	pthread_mutex_destroy(&ec->mu);
	free(ec);
	mds->ec = NULL;
}
