/* SPDX-License-Identifier: MIT */
/*
 * File objects (mds/data.h): the life of a regular file's objects on the
 * data servers (creation, repair, truncation, size reconciliation,
 * fencing, removal of orphans) with the maps that say where each segment
 * of a file lives; layout/policy.h places them among the data servers
 * mds/dsreg.c offers, over its connections.
 *
 * Segments.  A file's set of data servers is chosen when it is first laid
 * out and each segment is placed when first reached (a WRITE through the
 * MDS or a LAYOUTGET), both under the inode's object lock; placement skips
 * data servers that are down, draining, read-only, without NFSv3 (the MDS
 * proxies over it) or reported failing by clients.
 *
 * Orphans.  The data-server thread (mds/dsreg.c) retries the removal of
 * orphans' objects outside the grace period (at start, after every
 * REGISTER, and every minute).  An orphan whose layouts clients still hold
 * waits until they are returned or fenced (mds_layout_release_hold).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
#include "nfsd/rpc.h"

#define OBJ_LOCKS      64
#define SWEEP_BATCH    1024
#define RELEASE_MAX_DS 64

/*
 * obj_mu[ino % 64] serializes creating, repairing and removing one inode's
 * objects (held across control calls, never taken while holding
 * mds/dsreg.c's locks).
 */
struct mds_data {
	pthread_mutex_t obj_mu[OBJ_LOCKS];
	pthread_rwlock_t gate[OBJ_LOCKS]; /* mds_data_write_gate */
	/* the releaser (mds_data_release_later): a ring of inodes */
	pthread_mutex_t rel_mu;
	pthread_cond_t rel_cv;
	pthread_t rel_thread;
	bool rel_running, rel_stop;
	uint64_t rel_q[MDS_DATA_RELEASE_QUEUE];
	unsigned rel_head, rel_n;
};

struct mds_data *mds_data_new(void)
{
	struct mds_data *d = calloc(1, sizeof(*d));
	for (int i = 0; d && i < OBJ_LOCKS; i++) {
		pthread_mutex_init(&d->obj_mu[i], NULL);
		pthread_rwlock_init(&d->gate[i], NULL);
	}
	if (d) {
		pthread_mutex_init(&d->rel_mu, NULL);
		pthread_cond_init(&d->rel_cv, NULL);
	}
	return d;
}

void mds_data_write_gate(struct braid_mds *mds, uint64_t ino, enum mds_gate how)
{
	pthread_rwlock_t *g = &mds->data->gate[(ino ^ (ino >> 17)) % OBJ_LOCKS];
	if (how == MDS_GATE_WRITE)
		pthread_rwlock_rdlock(g);
	else if (how == MDS_GATE_FREEZE)
		pthread_rwlock_wrlock(g);
	else
		pthread_rwlock_unlock(g);
}

void mds_data_free(struct mds_data *d)
{
	if (!d)
		return;
	for (int i = 0; i < OBJ_LOCKS; i++) {
		pthread_mutex_destroy(&d->obj_mu[i]);
		pthread_rwlock_destroy(&d->gate[i]);
	}
	pthread_cond_destroy(&d->rel_cv);
	pthread_mutex_destroy(&d->rel_mu);
	free(d);
}

/* ------------------------------------------------------------- objects */

void mds_data_objid(const struct mds_attr *a, struct ds_objid *id)
{
	memcpy(id->key, a->objkey, DS_KEY_SIZE);
	id->gen = a->generation;
}

static struct layout_fence fence_of(struct braid_mds *mds, const struct mds_attr *a,
				    uint32_t epoch)
{
	struct ds_objid id;
	struct layout_fence f;
	mds_data_objid(a, &id);
	layout_fence_creds(&mds->key.fence, &id, epoch, &f);
	return f;
}

void mds_data_fence_epoch(struct braid_mds *mds, const struct mds_attr *a, uint32_t epoch,
			  uint32_t *uid, uint32_t *gid)
{
	struct layout_fence f = fence_of(mds, a, epoch);
	*uid = f.uid;
	*gid = f.gid;
}

void mds_data_fence(struct braid_mds *mds, const struct mds_attr *a, uint32_t *uid, uint32_t *gid)
{
	mds_data_fence_epoch(mds, a, 0, uid, gid);
}

void mds_data_fence_read(struct braid_mds *mds, const struct mds_attr *a, uint32_t epoch,
			 uint32_t *uid, uint32_t *gid)
{
	struct layout_fence f = fence_of(mds, a, epoch);
	*uid = f.read_uid;
	*gid = f.gid;
}

static pthread_mutex_t *obj_lock(struct braid_mds *mds, uint64_t ino)
{
	return &mds->data->obj_mu[(ino ^ (ino >> 17)) % OBJ_LOCKS];
}

/* CREATE of a's object on data server ds_id (idempotent), owned by the
 * fence of that epoch. */
static int obj_create(struct braid_mds *mds, uint32_t ds_id, const struct mds_attr *a,
		      uint32_t epoch)
{
	int rc;
	struct mds_ds_conn *dc = mds_ds_conn_get(mds, ds_id, &rc);
	if (!dc)
		return rc;
	struct ds_objid id;
	uint32_t uid, gid, fhlen;
	uint8_t fh[DS_CTL_FH_MAX];
	mds_data_objid(a, &id);
	mds_data_fence_epoch(mds, a, epoch, &uid, &gid);
	rc = ds_ctl_create(dc->clnt, &mds->key, &id, uid, gid, LAYOUT_FENCE_MODE, fh, &fhlen);
	mds_ds_conn_put(dc);
	if (rc == -EEXIST) {
		/* the key is derived from (ino, generation): another generation
		 * there means the data server holds a stale object */
		mds_log("data server %u holds inode %llu's key at another generation", ds_id,
			(unsigned long long)a->ino);
		rc = -EIO;
	}
	return rc;
}

int mds_data_map(struct braid_mds *mds, uint64_t ino, struct mds_file_map *m)
{
	memset(m, 0, sizeof(*m));
	struct mds_layout_seg l;
	int rc = mds_layout_get(mds->store, ino, MDS_LAYOUT_REC, &l);
	if (!rc) {
		if (layout_policy_decode(l.flags, &m->pol)) {
			mds_log("inode %llu: layout record %#x is not a policy",
				(unsigned long long)ino, l.flags);
			return -EIO;
		}
		m->recorded = true;
		m->epoch = l.ds[0];
		for (uint32_t k = 1; k < l.nds && m->nset < LAYOUT_SET_MAX; k++)
			m->set[m->nset++] = l.ds[k];
		m->laid_out = m->nset > 0;
		return 0;
	}
	if (rc != -ENOENT)
		return rc;
	/* no record: whole-file on segment 0's data servers, or not laid out */
	rc = mds_layout_get(mds->store, ino, 0, &l);
	if (rc == -ENOENT) {
		mds_layout_policy_default(mds, &m->pol);
		return 0;
	}
	if (rc)
		return rc;
	layout_policy_default(&m->pol);
	m->pol.mirrors = (uint8_t)(l.nds < LAYOUT_MIRRORS_MAX ? l.nds : LAYOUT_MIRRORS_MAX);
	m->laid_out = true;
	for (uint32_t k = 0; k < l.nds && m->nset < LAYOUT_SET_MAX; k++)
		m->set[m->nset++] = l.ds[k];
	return 0;
}

/* The record of m (flags, epoch, set) for ino. */
static void map_args(uint64_t ino, const struct mds_file_map *m, struct mds_layout_args *la)
{
	memset(la, 0, sizeof(*la));
	la->ino = ino;
	la->seg = MDS_LAYOUT_REC;
	la->l.flags = layout_policy_encode(&m->pol);
	la->l.nds = 1 + m->nset;
	la->l.ds[0] = m->epoch;
	memcpy(la->l.ds + 1, m->set, m->nset * sizeof(m->set[0]));
}

static int map_record(struct braid_mds *mds, uint64_t ino, const struct mds_file_map *m)
{
	struct mds_layout_args la;
	map_args(ino, m, &la);
	return mds_layout_set(mds->store, &la);
}

/* LAYOUT_SET of a, then of b (in that order), durably; the first error.
 * Submitted together: one commit usually covers both. */
static int layout_set_two(struct braid_mds *mds, const struct mds_layout_args *a,
			  const struct mds_layout_args *b)
{
	struct mds_op op[2] = {{.type = MDS_OP_LAYOUT_SET, .args.layout = *a},
			       {.type = MDS_OP_LAYOUT_SET, .args.layout = *b}};
	sem_t sem[2];
	for (int i = 0; i < 2; i++)
		mds_store_begin(mds->store, &op[i], &sem[i]);
	int r0 = mds_store_wait(&op[0]), r1 = mds_store_wait(&op[1]);
	return r0 ? r0 : r1;
}

static bool id_in(const uint32_t *v, unsigned n, uint32_t id)
{
	for (unsigned i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

static uint64_t rng_cb(void *arg)
{
	return mds_dsreg_random(arg);
}

/*
 * With the inode's object lock held: places segment n of the file (and
 * its set, for a file not yet laid out), records the maps, then makes the
 * objects the set does not yet know to exist.  Maps are recorded before
 * objects are made, so a crash between the two leaves a map whose object
 * is missing (repaired on use), never an object no map names.
 */
/* usable[0..nu) but the data servers holding the other data chunks of
 * segment n's erasure-coded stripe, into out: how many. */
static unsigned stripe_apart(struct braid_mds *mds, uint64_t ino, const struct layout_policy *p,
			     uint64_t n, const struct layout_cand *usable, unsigned nu,
			     struct layout_cand *out)
{
	uint32_t taken[LAYOUT_EC_K_MAX];
	unsigned nt = 0, no = 0;
	uint64_t first = n / p->ec_k * p->ec_k;
	for (uint64_t j = first; j < first + p->ec_k; j++) {
		struct mds_layout_seg l;
		if (j != n && !mds_layout_get(mds->store, ino, j, &l) && l.nds)
			taken[nt++] = l.ds[0];
	}
	for (unsigned i = 0; i < nu; i++)
		if (!id_in(taken, nt, usable[i].id))
			out[no++] = usable[i];
	return no;
}

static int segment_make_locked(struct braid_mds *mds, const struct mds_attr *a, uint64_t n,
			       const uint32_t *avoid, unsigned navoid, struct mds_file_map *m,
			       struct mds_layout_seg *seg, uint32_t *failed)
{
	int rc = mds_data_map(mds, a->ino, m);
	if (rc)
		return rc;
	if ((rc = mds_layout_get(mds->store, a->ino, n, seg)) != -ENOENT)
		return rc; /* made meanwhile, or an error */
	if (n && !m->pol.seg_shift)
		return -EINVAL; /* one segment: only segment 0 exists */
	struct mds_attr cur;
	if ((rc = mds_inode_getattr(mds->store, a->ino, &cur)))
		return rc;
	if (cur.generation != a->generation)
		return -ESTALE;
	if (cur.type != MDS_REG)
		return -EINVAL;
	struct layout_cand usable[256];
	bool space_short;
	unsigned nu = mds_dsreg_candidates(mds, avoid, navoid, usable, 256, &space_short);
	bool rec = !m->recorded;
	uint32_t ids[LAYOUT_SET_MAX];
	if (!m->nset) {
		unsigned k = layout_set_size(&m->pol, nu);
		if (!k)
			return space_short ? -ENOSPC : -EAGAIN;
		m->nset = layout_set_choose(usable, nu, k, rng_cb, mds, m->set);
		rec = true;
	}
	/* a stale member (missing writes, or a move's target) takes no new
	 * segment: it is neither read nor written until current */
	uint32_t place[LAYOUT_SET_MAX];
	unsigned np = 0;
	for (unsigned i = 0; i < m->nset; i++) {
		ids[i] = m->set[i] & MDS_LAYOUT_ID;
		if (m->set[i] & MDS_LAYOUT_STALE) {
			for (unsigned k = 0; k < nu; k++)
				if (usable[k].id == ids[i])
					usable[k--] = usable[--nu];
		} else {
			place[np++] = ids[i];
		}
	}
	unsigned w = layout_seg_width(&m->pol);
	memset(seg, 0, sizeof(*seg));
	rc = -EAGAIN;
	if (layout_is_ec(&m->pol)) {
		/* an erasure-coded stripe's data chunks on distinct servers, so
		 * that losing one server loses one chunk of it; the set's round
		 * robin already does so unless a server was replaced */
		struct layout_cand apart[256];
		unsigned na = stripe_apart(mds, a->ino, &m->pol, n, usable, nu, apart);
		rc = layout_seg_place(&m->pol, place, np, n, apart, na, seg->ds);
	}
	if (rc && (rc = layout_seg_place(&m->pol, place, np, n, usable, nu, seg->ds)))
		return rc == -EAGAIN && space_short ? -ENOSPC : rc;
	seg->nds = w;
	/* a substitute from outside the set joins it while there is room */
	for (unsigned j = 0; j < w; j++)
		if (!id_in(ids, m->nset, seg->ds[j]) && m->nset < LAYOUT_SET_MAX) {
			ids[m->nset] = seg->ds[j];
			m->set[m->nset++] = seg->ds[j];
			rec = true;
		}
	struct mds_layout_args la = {.ino = a->ino, .seg = n, .l = *seg}, ra;
	if (rec) {
		map_args(a->ino, m, &ra);
		if ((rc = layout_set_two(mds, &ra, &la))) {
			/* never a segment without the record that says how to read it */
			struct mds_layout_args rm = {.ino = a->ino, .seg = n};
			mds_layout_remove(mds->store, &rm);
			return rc;
		}
	} else if ((rc = mds_layout_set(mds->store, &la))) {
		return rc;
	}
	bool bits = false;
	for (unsigned j = 0; j < w && !rc; j++) {
		unsigned i = 0;
		while (i < m->nset && ids[i] != seg->ds[j])
			i++;
		if (i < m->nset && (m->set[i] & MDS_LAYOUT_STALE))
			continue; /* its resilver makes it */
		if (i < m->nset && (m->set[i] & MDS_LAYOUT_CREATED))
			continue;
		if ((rc = obj_create(mds, seg->ds[j], &cur, m->epoch))) {
			*failed = seg->ds[j];
			break;
		}
		/* one segment: nothing would ever ask again */
		if (i < m->nset && m->pol.seg_shift) {
			m->set[i] |= MDS_LAYOUT_CREATED;
			bits = true;
		}
	}
	if (rc) {
		struct mds_layout_args rm = {.ino = a->ino, .seg = n};
		mds_layout_remove(mds->store, &rm);
		return rc;
	}
	if (bits)
		map_record(mds, a->ino, m); /* best effort: CREATE is idempotent */
	return 0;
}

int mds_data_segment(struct braid_mds *mds, const struct mds_attr *a, uint64_t n, bool create,
		     const uint32_t *avoid, unsigned navoid, struct mds_file_map *map,
		     struct mds_layout_seg *seg)
{
	int rc = mds_data_map(mds, a->ino, map);
	if (rc)
		return rc;
	if (n && !map->pol.seg_shift)
		return -EINVAL;
	rc = mds_layout_get(mds->store, a->ino, n, seg);
	if (rc != -ENOENT || !create)
		return rc;
	/*
	 * A data server that does not answer the CREATE (died before the MDS
	 * counts it down, ds_timeout after its last heartbeat) is left out of
	 * a new try, twice at most: a new file's first write is placed on the
	 * servers that answer.  A segment of a file whose set already names
	 * the server goes there again, and fails (repaired on use later).
	 */
	uint32_t av[64 + 2];
	unsigned nav = navoid < 64 ? navoid : 64;
	if (nav)
		memcpy(av, avoid, nav * sizeof(av[0]));
	pthread_mutex_t *mu = obj_lock(mds, a->ino);
	for (unsigned tries = 0;; tries++) {
		uint32_t failed = 0;
		pthread_mutex_lock(mu);
		rc = segment_make_locked(mds, a, n, av, nav, map, seg, &failed);
		pthread_mutex_unlock(mu);
		if (!rc || !failed || tries == 2 || !mds_ds_unreachable(rc))
			return rc;
		mds_log("inode %llu: data server %u did not answer the CREATE of its object (%s):"
			" placed without it", (unsigned long long)a->ino, failed, strerror(-rc));
		av[nav++] = failed;
	}
}

int mds_data_object(struct braid_mds *mds, const struct mds_attr *a, bool create,
		    struct mds_layout_seg *seg)
{
	struct mds_file_map m;
	return mds_data_segment(mds, a, 0, create, NULL, 0, &m, seg);
}

int mds_data_object_repair(struct braid_mds *mds, const struct mds_attr *a, uint32_t ds_id)
{
	pthread_mutex_t *mu = obj_lock(mds, a->ino);
	pthread_mutex_lock(mu);
	struct mds_attr cur;
	struct mds_file_map m;
	int rc = mds_inode_getattr(mds->store, a->ino, &cur);
	if (!rc && cur.generation != a->generation)
		rc = -ESTALE;
	/* an orphan nobody holds open is being released: never bring it back */
	if (!rc && cur.nlink == 0 && !mds_state_ino_open(mds, a->ino))
		rc = -ESTALE;
	if (!rc)
		rc = mds_data_map(mds, a->ino, &m);
	if (!rc) {
		mds_log("inode %llu: object missing on data server %u, creating it again",
			(unsigned long long)a->ino, ds_id);
		rc = obj_create(mds, ds_id, &cur, m.epoch);
	}
	pthread_mutex_unlock(mu);
	return rc;
}

/* Whether a segment on one data server starts below the size. */
struct seg_below {
	const struct layout_policy *pol;
	uint32_t ds;
	uint64_t size;
	bool below;
};

static int seg_below_one(void *arg, uint64_t seg, const struct mds_layout_seg *l)
{
	struct seg_below *b = arg;
	if (seg >= MDS_LAYOUT_SEG_END)
		return 0; /* the file's record names no segment */
	uint64_t s0, len;
	layout_seg_bounds(b->pol, seg, &s0, &len);
	for (uint32_t k = 0; k < l->nds && k < MDS_LAYOUT_MAX_DS; k++)
		if (l->ds[k] == b->ds && s0 < b->size) {
			b->below = true;
			return 1;
		}
	return 0;
}

int mds_data_object_reported_missing(struct braid_mds *mds, uint64_t ino, uint32_t ds_id)
{
	struct mds_attr a;
	struct mds_file_map m;
	int rc = mds_inode_getattr(mds->store, ino, &a);
	if (!rc && a.type != MDS_REG)
		rc = -EINVAL;
	if (!rc)
		rc = mds_data_map(mds, ino, &m);
	if (rc)
		return rc;
	int in = -1;
	for (unsigned i = 0; i < m.nset; i++)
		if ((m.set[i] & MDS_LAYOUT_ID) == ds_id)
			in = (int)i;
	if (in < 0)
		return -EINVAL;
	/* a stale mirror is its resilver's; an erasure-coded file's chunks
	 * (parity among them, named otherwise) are its rebuild's (mds/ec.h) */
	if ((m.set[in] & MDS_LAYOUT_STALE) || layout_is_ec(&m.pol))
		return 0;
	struct seg_below b = {.pol = &m.pol, .ds = ds_id, .size = a.size};
	if ((rc = mds_layout_list(mds->store, ino, seg_below_one, &b)) < 0)
		return rc;
	/* acted on, and said, only when it is really gone: the report may be
	 * old, wrong or hostile */
	struct mds_ds_conn *dc = mds_ds_conn_get(mds, ds_id, &rc);
	if (!dc)
		return rc;
	struct ds_objid id;
	struct ds_ctl_stat st;
	mds_data_objid(&a, &id);
	rc = ds_ctl_stat(dc->clnt, &mds->key, &id, &st);
	mds_ds_conn_put(dc);
	if (rc != -ENOENT)
		return rc;
	if (!b.below)
		return mds_data_object_repair(mds, &a, ds_id);
	mds_log("inode %llu: its object on data server %u is missing, and bytes below the "
		"size (%llu) may have been there: not made again empty",
		(unsigned long long)ino, ds_id, (unsigned long long)a.size);
	return -EIO;
}

struct ds_set {
	uint32_t id[RELEASE_MAX_DS];
	unsigned n;
	bool overflow;
};

static int ds_set_add(void *arg, uint64_t seg, const struct mds_layout_seg *l)
{
	struct ds_set *s = arg;
	if (seg >= MDS_LAYOUT_SEG_END)
		return 0; /* the file's record names no segment */
	for (uint32_t k = 0; k < l->nds && k < MDS_LAYOUT_MAX_DS; k++) {
		unsigned j = 0;
		while (j < s->n && s->id[j] != l->ds[k])
			j++;
		if (j < s->n)
			continue;
		if (s->n == RELEASE_MAX_DS) {
			s->overflow = true;
			return 1;
		}
		s->id[s->n++] = l->ds[k];
	}
	return 0;
}

/* Every data server a's file has objects on (deduplicated). */
static int ds_set_of(struct braid_mds *mds, uint64_t ino, struct ds_set *s)
{
	memset(s, 0, sizeof(*s));
	int rc = mds_layout_list(mds->store, ino, ds_set_add, s);
	if (rc < 0)
		return rc;
	return s->overflow ? -E2BIG : 0;
}

int mds_data_ds_list(struct braid_mds *mds, uint64_t ino, uint32_t *ids, unsigned max)
{
	struct ds_set s;
	int rc = ds_set_of(mds, ino, &s);
	if (rc)
		return rc;
	if (s.n > max)
		return -E2BIG;
	memcpy(ids, s.id, s.n * sizeof(ids[0]));
	return (int)s.n;
}

/* ------------------------------------------------------------- stale mirrors */

bool mds_data_map_stale(const struct mds_file_map *m, uint32_t id)
{
	for (unsigned i = 0; i < m->nset; i++)
		if ((m->set[i] & MDS_LAYOUT_ID) == id)
			return (m->set[i] & MDS_LAYOUT_STALE) != 0;
	return false;
}

/* Whether every segment keeps a current copy with going stale too. */
struct stale_check {
	const struct mds_file_map *m;
	const uint32_t *going;
	unsigned ngoing;
	bool orphaned;
};

static int stale_check_seg(void *arg, uint64_t seg, const struct mds_layout_seg *l)
{
	struct stale_check *c = arg;
	if (seg >= MDS_LAYOUT_SEG_END)
		return 0;
	unsigned S = c->m->pol.stripes ? c->m->pol.stripes : 1;
	unsigned M = l->nds / S;
	/* each stripe position needs one mirror whose server stays current */
	for (unsigned s = 0; s < S; s++) {
		bool kept = false;
		for (unsigned mi = 0; mi < M && !kept; mi++) {
			uint32_t id = l->ds[mi * S + s];
			kept = !mds_data_map_stale(c->m, id) && !id_in(c->going, c->ngoing, id);
		}
		if (!kept) {
			c->orphaned = true;
			return 1;
		}
	}
	return 0;
}

/* mds_data_stale_mark with the object lock held. */
static int stale_mark_locked(struct braid_mds *mds, uint64_t ino, const uint32_t *ids,
			     unsigned n, bool *newly)
{
	*newly = false;
	struct mds_file_map m;
	int rc = mds_data_map(mds, ino, &m);
	uint32_t going[LAYOUT_SET_MAX];
	unsigned ng = 0;
	for (unsigned k = 0; !rc && k < n; k++)
		for (unsigned i = 0; i < m.nset; i++)
			if ((m.set[i] & MDS_LAYOUT_ID) == ids[k] && !(m.set[i] & MDS_LAYOUT_STALE) &&
			    ng < LAYOUT_SET_MAX)
				going[ng++] = ids[k];
	if (rc || !ng)
		goto out;
	struct stale_check c = {.m = &m, .going = going, .ngoing = ng};
	if ((rc = mds_layout_list(mds->store, ino, stale_check_seg, &c)) < 0)
		goto out;
	rc = 0;
	if (c.orphaned) {
		rc = -EAGAIN; /* that would leave bytes with no current copy */
		goto out;
	}
	if ((rc = mds_stale_mark(mds->store, ino)))
		goto out;
	for (unsigned i = 0; i < m.nset; i++)
		if (id_in(going, ng, m.set[i] & MDS_LAYOUT_ID))
			m.set[i] |= MDS_LAYOUT_STALE;
	if (!(rc = map_record(mds, ino, &m))) {
		*newly = true;
		for (unsigned k = 0; k < ng; k++)
			mds_log("inode %llu: its copy on data server %u is stale (missing writes)",
				(unsigned long long)ino, going[k]);
	}
out:
	return rc;
}

int mds_data_stale_mark(struct braid_mds *mds, uint64_t ino, const uint32_t *ids, unsigned n,
			bool *newly)
{
	pthread_mutex_t *mu = obj_lock(mds, ino);
	pthread_mutex_lock(mu);
	int rc = stale_mark_locked(mds, ino, ids, n, newly);
	pthread_mutex_unlock(mu);
	return rc;
}

int mds_data_stale_clear(struct braid_mds *mds, uint64_t ino, uint32_t id)
{
	pthread_mutex_t *mu = obj_lock(mds, ino);
	pthread_mutex_lock(mu);
	struct mds_file_map m;
	int rc = mds_data_map(mds, ino, &m);
	bool any = false, changed = false;
	for (unsigned i = 0; !rc && i < m.nset; i++) {
		if ((m.set[i] & MDS_LAYOUT_ID) == id && (m.set[i] & MDS_LAYOUT_STALE)) {
			m.set[i] &= ~MDS_LAYOUT_STALE;
			changed = true;
		}
		any = any || (m.set[i] & MDS_LAYOUT_STALE);
	}
	if (!rc && changed)
		rc = map_record(mds, ino, &m);
	if (!rc && !any)
		rc = mds_stale_clear(mds->store, ino);
	pthread_mutex_unlock(mu);
	return rc == -ENOENT ? 0 : rc;
}

/* The segments of a file that name one data server (mds_layout_list). */
struct seg_naming {
	uint32_t id;
	struct mds_layout_args *v;
	unsigned n, cap;
	int err;
};

static int seg_naming_add(void *arg, uint64_t seg, const struct mds_layout_seg *l)
{
	struct seg_naming *c = arg;
	if (seg >= MDS_LAYOUT_SEG_END || !id_in(l->ds, l->nds, c->id))
		return 0;
	if (c->n == c->cap) {
		unsigned cap = c->cap ? 2 * c->cap : 16;
		struct mds_layout_args *v = realloc(c->v, cap * sizeof(*v));
		if (!v) {
			c->err = -ENOMEM;
			return 1;
		}
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n++] = (struct mds_layout_args){.seg = seg, .l = *l};
	return 0;
}

/* Every segment of ino naming data server from names to instead (each map
 * durable in turn; a retry finishes what a crash left). 0 or -errno. */
static int segs_switch(struct braid_mds *mds, uint64_t ino, uint32_t from, uint32_t to)
{
	struct seg_naming segs = {.id = from};
	int rc = mds_layout_list(mds->store, ino, seg_naming_add, &segs);
	rc = rc < 0 ? rc : segs.err;
	for (unsigned k = 0; !rc && k < segs.n; k++) {
		struct mds_layout_args *la = &segs.v[k];
		la->ino = ino;
		for (uint32_t j = 0; j < la->l.nds; j++)
			if (la->l.ds[j] == from)
				la->l.ds[j] = to;
		rc = mds_layout_set(mds->store, la);
	}
	free(segs.v);
	return rc;
}

int mds_data_member_replace(struct braid_mds *mds, uint64_t ino, uint32_t from, uint32_t to)
{
	pthread_mutex_t *mu = obj_lock(mds, ino);
	pthread_mutex_lock(mu);
	struct mds_file_map m;
	int rc = mds_data_map(mds, ino, &m);
	int ifrom = -1, ito = -1;
	for (unsigned i = 0; !rc && i < m.nset; i++) {
		if ((m.set[i] & MDS_LAYOUT_ID) == from)
			ifrom = (int)i;
		if ((m.set[i] & MDS_LAYOUT_ID) == to)
			ito = (int)i;
	}
	if (rc || ifrom < 0)
		goto out; /* nothing (left) to move */
	/* some segment with no current copy but from's: its bytes are lost */
	struct stale_check c = {.m = &m, .going = &from, .ngoing = 1};
	if ((rc = mds_layout_list(mds->store, ino, stale_check_seg, &c)) < 0)
		goto out;
	rc = 0;
	if (c.orphaned) {
		rc = -ENODATA;
		goto out;
	}
	/* 1: to joins the set, stale (the stale set first) */
	if (ito < 0) {
		if (m.nset == LAYOUT_SET_MAX) {
			rc = -E2BIG;
			goto out;
		}
		if ((rc = mds_stale_mark(mds->store, ino)))
			goto out;
		m.set[m.nset++] = to | MDS_LAYOUT_STALE;
		if ((rc = map_record(mds, ino, &m)))
			goto out;
	} else if (!(m.set[ito] & MDS_LAYOUT_STALE)) {
		rc = -EEXIST; /* a current member: not a place for from's copies */
		goto out;
	}
	/* 2: every segment naming from names to instead */
	if ((rc = segs_switch(mds, ino, from, to)))
		goto out;
	/* 3: from leaves the set */
	if (!rc) {
		memmove(&m.set[ifrom], &m.set[ifrom + 1], (m.nset - (unsigned)ifrom - 1) * sizeof(m.set[0]));
		m.nset--;
		rc = map_record(mds, ino, &m);
	}
	if (!rc)
		mds_log("inode %llu: its copy on data server %u moves to data server %u (stale until "
			"resilvered)",
			(unsigned long long)ino, from, to);
out:
	pthread_mutex_unlock(mu);
	if (!rc && ifrom >= 0)
		mds_layout_recall_file(mds, ino);
	return rc;
}

int mds_data_segment_move(struct braid_mds *mds, uint64_t ino, uint64_t n, uint32_t from,
			  uint32_t to)
{
	pthread_mutex_t *mu = obj_lock(mds, ino);
	pthread_mutex_lock(mu);
	struct mds_file_map m;
	struct mds_layout_args la = {.ino = ino, .seg = n};
	int rc = mds_data_map(mds, ino, &m);
	if (!rc)
		rc = mds_layout_get(mds->store, ino, n, &la.l);
	if (!rc && !id_in(la.l.ds, la.l.nds, from))
		rc = id_in(la.l.ds, la.l.nds, to) ? 0 : -ENOENT; /* done before, or moved on */
	else if (!rc && id_in(la.l.ds, la.l.nds, to))
		rc = -EEXIST;
	else if (!rc) {
		/* 1: to joins the set, its object made (by the caller) */
		int ito = -1;
		for (unsigned i = 0; i < m.nset; i++)
			if ((m.set[i] & MDS_LAYOUT_ID) == to)
				ito = (int)i;
		if (ito < 0 && m.nset == LAYOUT_SET_MAX)
			rc = -E2BIG;
		else if (ito < 0)
			m.set[m.nset++] = to | MDS_LAYOUT_CREATED;
		else
			m.set[ito] |= MDS_LAYOUT_CREATED;
		if (!rc)
			rc = map_record(mds, ino, &m);
		/* 2: the segment names it */
		for (uint32_t j = 0; !rc && j < la.l.nds; j++)
			if (la.l.ds[j] == from)
				la.l.ds[j] = to;
		if (!rc)
			rc = mds_layout_set(mds->store, &la);
	}
	pthread_mutex_unlock(mu);
	return rc;
}

/* Segments recorded with more than one copy (mds_layout_list). */
struct seg_multi {
	uint64_t *v;
	unsigned n, cap;
	int err;
};

static int seg_multi_add(void *arg, uint64_t seg, const struct mds_layout_seg *l)
{
	struct seg_multi *c = arg;
	if (seg >= MDS_LAYOUT_SEG_END || l->nds < 2)
		return 0;
	if (c->n == c->cap) {
		unsigned cap = c->cap ? 2 * c->cap : 64;
		uint64_t *v = realloc(c->v, cap * sizeof(*v));
		if (!v) {
			c->err = -ENOMEM;
			return 1;
		}
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n++] = seg;
	return 0;
}

int mds_data_segments_trim(struct braid_mds *mds, uint64_t ino, unsigned *trimmed)
{
	pthread_mutex_t *mu = obj_lock(mds, ino);
	pthread_mutex_lock(mu);
	struct seg_multi sm = {.v = NULL};
	int rc = mds_layout_list(mds->store, ino, seg_multi_add, &sm);
	rc = rc < 0 ? rc : sm.err;
	*trimmed = 0;
	for (unsigned i = 0; !rc && i < sm.n; i++) {
		struct mds_layout_args la = {.ino = ino, .seg = sm.v[i]};
		if ((rc = mds_layout_get(mds->store, ino, sm.v[i], &la.l)) || la.l.nds < 2)
			continue;
		la.l.nds = 1;
		if (!(rc = mds_layout_set(mds->store, &la)))
			(*trimmed)++;
	}
	free(sm.v);
	pthread_mutex_unlock(mu);
	return rc == -ENOENT ? 0 : rc;
}

int mds_data_member_drop(struct braid_mds *mds, uint64_t ino, uint32_t id)
{
	pthread_mutex_t *mu = obj_lock(mds, ino);
	pthread_mutex_lock(mu);
	struct mds_file_map m;
	struct seg_naming segs = {.id = id};
	int rc = mds_data_map(mds, ino, &m);
	if (!rc) {
		rc = mds_layout_list(mds->store, ino, seg_naming_add, &segs);
		rc = rc < 0 ? rc : segs.err;
	}
	if (!rc && segs.n)
		rc = -EBUSY;
	for (unsigned i = 0; !rc && i < m.nset; i++)
		if ((m.set[i] & MDS_LAYOUT_ID) == id) {
			memmove(&m.set[i], &m.set[i + 1], (m.nset - i - 1) * sizeof(m.set[0]));
			m.nset--;
			rc = map_record(mds, ino, &m);
			break;
		}
	free(segs.v);
	pthread_mutex_unlock(mu);
	return rc;
}

int mds_data_move_begin(struct braid_mds *mds, uint64_t ino, uint32_t from, uint32_t to)
{
	pthread_mutex_t *mu = obj_lock(mds, ino);
	pthread_mutex_lock(mu);
	struct mds_file_map m;
	int rc = mds_data_map(mds, ino, &m);
	int ifrom = -1;
	for (unsigned i = 0; !rc && i < m.nset; i++) {
		uint32_t id = m.set[i] & MDS_LAYOUT_ID;
		if (id == to || (m.set[i] & MDS_LAYOUT_TARGET))
			rc = -EEXIST; /* one move at a time per file */
		if (id == from)
			ifrom = (int)i;
	}
	if (!rc && ifrom < 0)
		rc = -ENOENT;
	if (!rc && (m.set[ifrom] & MDS_LAYOUT_LEAVING))
		rc = -EEXIST;
	if (!rc && m.nset == LAYOUT_SET_MAX)
		rc = -E2BIG;
	if (!rc)
		rc = mds_stale_mark(mds->store, ino);
	if (!rc) {
		m.set[ifrom] |= MDS_LAYOUT_LEAVING;
		m.set[m.nset++] = to | MDS_LAYOUT_STALE | MDS_LAYOUT_TARGET;
		rc = map_record(mds, ino, &m);
	}
	pthread_mutex_unlock(mu);
	if (!rc)
		mds_log("inode %llu: its copy on data server %u moves to data server %u",
			(unsigned long long)ino, from, to);
	return rc;
}

int mds_data_move_finish(struct braid_mds *mds, uint64_t ino, uint32_t to, uint32_t *from_out)
{
	pthread_mutex_t *mu = obj_lock(mds, ino);
	pthread_mutex_lock(mu);
	struct mds_file_map m;
	int rc = mds_data_map(mds, ino, &m);
	int ito = -1, ifrom = -1;
	for (unsigned i = 0; !rc && i < m.nset; i++) {
		if ((m.set[i] & MDS_LAYOUT_ID) == to && (m.set[i] & MDS_LAYOUT_TARGET))
			ito = (int)i;
		if (m.set[i] & MDS_LAYOUT_LEAVING)
			ifrom = (int)i;
	}
	if (!rc && (ito < 0 || ifrom < 0))
		rc = -ENOENT;
	if (rc)
		goto out;
	uint32_t from = m.set[ifrom] & MDS_LAYOUT_ID;
	*from_out = from;
	/* 1: every segment naming from names to */
	if ((rc = segs_switch(mds, ino, from, to)))
		goto out;
	/* 2: to current (its object made by the copy), from out of the set */
	if (!rc) {
		m.set[ito] = to | MDS_LAYOUT_CREATED;
		memmove(&m.set[ifrom], &m.set[ifrom + 1],
			(m.nset - (unsigned)ifrom - 1) * sizeof(m.set[0]));
		m.nset--;
		rc = map_record(mds, ino, &m);
	}
	bool any = false;
	for (unsigned i = 0; !rc && i < m.nset; i++)
		any = any || (m.set[i] & MDS_LAYOUT_STALE);
	if (!rc && !any)
		rc = mds_stale_clear(mds->store, ino);
out:
	pthread_mutex_unlock(mu);
	return rc;
}

/* SETFENCE of uid/gid on object id at data server ds: 0 (also when it has
 * no such object: it is made with the new pair), -EAGAIN or -EIO. */
static int fence_one(struct braid_mds *mds, const struct mds_attr *a, uint32_t ds,
		     const struct ds_objid *id, uint32_t uid, uint32_t gid)
{
	int err;
	struct mds_ds_conn *dc = mds_ds_conn_get(mds, ds, &err);
	if (dc) {
		err = ds_ctl_setfence(dc->clnt, &mds->key, id, uid, gid, LAYOUT_FENCE_MODE);
		mds_ds_conn_put(dc);
	}
	if (!err || err == -ENOENT)
		return 0;
	if (err != -EAGAIN)
		mds_log("inode %llu: fencing on data server %u: %s", (unsigned long long)a->ino, ds,
			strerror(-err));
	return err == -ESTALE ? -EIO : -EAGAIN;
}

/* With the object lock held: SETFENCE of the current epoch's pair on every
 * data server of the file, its parity objects' holders included (EC_COMPUTE
 * and reconstructing reads read parity as the fence); -EAGAIN when one
 * could not be reached. */
static int fence_apply_locked(struct braid_mds *mds, const struct mds_attr *a, uint32_t epoch)
{
	struct ds_set s;
	int rc = ds_set_of(mds, a->ino, &s);
	if (rc)
		return rc;
	uint32_t par[RELEASE_MAX_DS];
	int np = mds_ec_parity_holders(mds, a->ino, par, RELEASE_MAX_DS);
	if (np < 0)
		return np;
	struct ds_objid id, pid;
	uint32_t uid, gid;
	mds_data_objid(a, &id);
	ds_objid_parity(&id, &pid);
	mds_data_fence_epoch(mds, a, epoch, &uid, &gid);
	for (unsigned k = 0; k < s.n; k++) {
		int err = fence_one(mds, a, s.id[k], &id, uid, gid);
		rc = err ? err : rc;
	}
	for (int k = 0; k < np; k++) {
		int err = fence_one(mds, a, par[k], &pid, uid, gid);
		rc = err ? err : rc;
	}
	return rc;
}

int mds_data_fence_new(struct braid_mds *mds, const struct mds_attr *a, uint32_t *epoch)
{
	pthread_mutex_t *mu = obj_lock(mds, a->ino);
	pthread_mutex_lock(mu);
	struct mds_file_map m;
	int rc = mds_data_map(mds, a->ino, &m);
	if (!rc && m.laid_out) {
		/* recorded first: a crash after it leaves the objects to the old
		 * pair, which the retry (or the next I/O's repair) moves */
		m.epoch = m.epoch + 1 ? m.epoch + 1 : 1;
		if (!(rc = map_record(mds, a->ino, &m)))
			rc = fence_apply_locked(mds, a, m.epoch);
	}
	if (epoch)
		*epoch = m.epoch;
	pthread_mutex_unlock(mu);
	return rc;
}

int mds_data_fence_apply(struct braid_mds *mds, const struct mds_attr *a)
{
	pthread_mutex_t *mu = obj_lock(mds, a->ino);
	pthread_mutex_lock(mu);
	struct mds_file_map m;
	int rc = mds_data_map(mds, a->ino, &m);
	if (!rc && m.laid_out)
		rc = fence_apply_locked(mds, a, m.epoch);
	pthread_mutex_unlock(mu);
	return rc;
}

/* Space freed on a data server: it takes new objects, and clients it
 * refused for space may write there again. */
static void data_space_freed(struct braid_mds *mds, uint32_t ds_id)
{
	mds_dsreg_space_freed(mds, ds_id);
	mds_layout_ds_space_freed(mds, ds_id);
}

/* mds_data_release, the inode's reap only with reap: true when its
 * objects are gone and the reap is what is left to do. */
static bool release(struct braid_mds *mds, uint64_t ino, bool reap)
{
	struct mds_attr a;
	if (!mds->dsreg || mds_inode_getattr(mds->store, ino, &a) || a.nlink || a.type != MDS_REG)
		return false;
	if (mds_state_ino_open(mds, ino))
		return false; /* the last CLOSE calls again */
	/* clients may still write through layouts: the objects go once those
	 * are returned or fenced, and the layout layer calls again */
	if (mds_layout_release_hold(mds, ino))
		return false;
	pthread_mutex_t *mu = obj_lock(mds, ino);
	pthread_mutex_lock(mu);
	struct ds_set s;
	int rc = ds_set_of(mds, ino, &s);
	bool left = rc != 0;
	struct ds_objid id;
	mds_data_objid(&a, &id);
	for (unsigned k = 0; !rc && k < s.n; k++) {
		int err;
		struct mds_ds_conn *dc = mds_ds_conn_get(mds, s.id[k], &err);
		if (!dc) {
			left = true;
			continue;
		}
		err = ds_ctl_remove(dc->clnt, &mds->key, &id);
		mds_ds_conn_put(dc);
		if (!err)
			data_space_freed(mds, s.id[k]);
		/* NOENT: removed already (a repeat); STALE: not our generation there */
		if (err && err != -ENOENT && err != -ESTALE) {
			mds_log("inode %llu: removing its object from data server %u: %s",
				(unsigned long long)ino, s.id[k], strerror(-err));
			left = true;
		}
	}
	/* an erasure-coded file's parity objects (mds/ec.h) go with it */
	if (!left && !rc && mds_ec_objects_remove(mds, &a))
		left = true;
	if (!left && reap && (rc = mds_inode_reap(mds->store, ino)) && rc != -ESTALE &&
	    rc != -EBUSY)
		mds_log("inode %llu: reap: %s", (unsigned long long)ino, strerror(-rc));
	pthread_mutex_unlock(mu);
	return !left && !reap;
}

void mds_data_release(struct braid_mds *mds, uint64_t ino)
{
	release(mds, ino, true);
}

static void *releaser_main(void *arg)
{
	struct braid_mds *mds = arg;
	struct mds_data *d = mds->data;
	nfsd_thread_block_signals();
	pthread_mutex_lock(&d->rel_mu);
	for (;;) {
		while (!d->rel_stop && !d->rel_n)
			pthread_cond_wait(&d->rel_cv, &d->rel_mu);
		if (d->rel_stop)
			break;
		uint64_t ino = d->rel_q[d->rel_head];
		d->rel_head = (d->rel_head + 1) % MDS_DATA_RELEASE_QUEUE;
		d->rel_n--;
		pthread_mutex_unlock(&d->rel_mu);
		mds_data_release(mds, ino);
		pthread_mutex_lock(&d->rel_mu);
	}
	pthread_mutex_unlock(&d->rel_mu);
	return NULL;
}

int mds_data_releaser_start(struct braid_mds *mds)
{
	struct mds_data *d = mds->data;
	int rc = pthread_create(&d->rel_thread, NULL, releaser_main, mds);
	if (rc)
		return -rc;
	pthread_mutex_lock(&d->rel_mu);
	d->rel_running = true;
	pthread_mutex_unlock(&d->rel_mu);
	return 0;
}

void mds_data_releaser_stop(struct braid_mds *mds)
{
	struct mds_data *d = mds->data;
	if (!d)
		return;
	pthread_mutex_lock(&d->rel_mu);
	bool running = d->rel_running;
	d->rel_stop = true;
	d->rel_n = 0; /* the next start's orphan sweep takes them */
	pthread_cond_signal(&d->rel_cv);
	pthread_mutex_unlock(&d->rel_mu);
	if (running)
		pthread_join(d->rel_thread, NULL);
	pthread_mutex_lock(&d->rel_mu);
	d->rel_running = false;
	pthread_mutex_unlock(&d->rel_mu);
}

void mds_data_release_later(struct braid_mds *mds, uint64_t ino)
{
	struct mds_data *d = mds->data;
	/* the objects now, so that their space is free when the client hears
	 * of the unlink (a full cluster's rm, then write, must work); the
	 * reap's commit is the releaser's (it runs the whole release again:
	 * nothing can bring an object back unnoticed meanwhile) */
	if (!release(mds, ino, false))
		return;
	pthread_mutex_lock(&d->rel_mu);
	if (d->rel_stop) {
		pthread_mutex_unlock(&d->rel_mu); /* stopping: the sweep's */
		return;
	}
	bool queued = d->rel_running && d->rel_n < MDS_DATA_RELEASE_QUEUE;
	if (queued) {
		d->rel_q[(d->rel_head + d->rel_n) % MDS_DATA_RELEASE_QUEUE] = ino;
		d->rel_n++;
		pthread_cond_signal(&d->rel_cv);
	}
	pthread_mutex_unlock(&d->rel_mu);
	if (!queued)
		mds_data_release(mds, ino);
}

int mds_data_objects_end(struct braid_mds *mds, const struct mds_attr *at, uint64_t *end)
{
	struct ds_set s;
	int rc = ds_set_of(mds, at->ino, &s);
	if (rc)
		return rc;
	struct ds_objid id;
	mds_data_objid(at, &id);
	*end = 0;
	for (unsigned k = 0; k < s.n; k++) {
		int err;
		struct ds_ctl_stat st;
		struct mds_ds_conn *dc = mds_ds_conn_get(mds, s.id[k], &err);
		if (!dc)
			return err ? err : -EAGAIN; /* that data server is not up yet */
		err = ds_ctl_stat(dc->clnt, &mds->key, &id, &st);
		mds_ds_conn_put(dc);
		/* NOENT: no object there, nothing written; STALE: not ours */
		if (err == -ENOENT || err == -ESTALE)
			continue;
		if (err)
			return err;
		if (st.size > *end)
			*end = st.size;
	}
	return 0;
}

int mds_data_size_reconcile(struct braid_mds *mds, uint64_t ino)
{
	for (unsigned tries = 0; tries < 8; tries++) {
		struct mds_attr at;
		int rc = mds_inode_getattr(mds->store, ino, &at);
		if (rc == -ENOENT || (!rc && at.type != MDS_REG))
			return 0; /* gone: nothing to count */
		if (rc)
			return rc;
		uint64_t end;
		if ((rc = mds_data_objects_end(mds, &at, &end)))
			return rc;
		mds_space_note(mds, ino); /* written before a stop: not yet counted */
		if (end <= at.size)
			return 0;
		/* guarded: a truncation meanwhile may have cut the objects */
		struct mds_setattr_args sa = {.ino = ino,
					      .mask = MDS_SET_SIZE_MAX | MDS_SET_MTIME_NOW |
						      MDS_SET_CHANGE_GUARD,
					      .size = end,
					      .guard = at.change};
		struct mds_setattr_res sr;
		rc = mds_inode_setattr(mds->store, &sa, &sr);
		if (rc == -EAGAIN)
			continue;
		if (!rc)
			mds_log("inode %llu: size %llu -> %llu, from its data servers' objects",
				(unsigned long long)ino, (unsigned long long)sr.old_size,
				(unsigned long long)sr.attr.size);
		return rc == -ENOENT ? 0 : rc;
	}
	return -EAGAIN;
}

int mds_data_truncate(struct braid_mds *mds, const struct mds_attr *attr, uint64_t old_size)
{
	if (attr->type != MDS_REG)
		return 0;
	/* every object is cut to the size: LAYOUTCOMMITs of writes before
	 * are checked against them (callers that did not note it yet) */
	mds_layout_note_shrink(mds, attr->ino);
	mds_data_write_gate(mds, attr->ino, MDS_GATE_WRITE);
	pthread_mutex_t *mu = obj_lock(mds, attr->ino);
	pthread_mutex_lock(mu);
	struct ds_set s;
	int rc = ds_set_of(mds, attr->ino, &s);
	struct mds_file_map fm;
	if (!rc)
		rc = mds_data_map(mds, attr->ino, &fm);
	uint32_t down[RELEASE_MAX_DS];
	unsigned ndown = 0;
	if (!rc && s.n == 0) {
		/* no object: a missing object reads as zeros, so only an
		 * extension makes one, holding the new end (best effort: its data
		 * servers may all be down, and the file reads right without it) */
		struct mds_layout_seg seg;
		struct mds_file_map m;
		uint64_t n = attr->size ? attr->size - 1 : 0;
		uint32_t failed = 0;
		if (attr->size <= old_size || (rc = mds_data_map(mds, attr->ino, &m)) ||
		    segment_make_locked(mds, attr, layout_seg_index(&m.pol, n), NULL, 0, &m,
					&seg, &failed)) {
			pthread_mutex_unlock(mu);
			mds_data_write_gate(mds, attr->ino, MDS_GATE_OPEN);
			return 0;
		}
		for (uint32_t k = 0; k < seg.nds; k++)
			s.id[s.n++] = seg.ds[k];
	}
	struct ds_objid id;
	mds_data_objid(attr, &id);
	for (unsigned k = 0; !rc && k < s.n; k++) {
		int err;
		if (mds_data_map_stale(&fm, s.id[k]))
			continue; /* its resilver copies the size */
		struct mds_ds_conn *dc = mds_ds_conn_get(mds, s.id[k], &err);
		if (dc) {
			/* each object is the file's bytes at the file's offsets
			 * (sparse), so every one is cut (or grown) to the size */
			err = ds_ctl_truncate(dc->clnt, &mds->key, &id, attr->size);
			mds_ds_conn_put(dc);
			if (!err && attr->size < old_size)
				data_space_freed(mds, s.id[k]);
		}
		/* a mirror's server gone: it misses the cut, so goes stale */
		if ((err == -EAGAIN || err == -ETIMEDOUT || err == -ECONNREFUSED) &&
		    fm.pol.mirrors > 1) {
			down[ndown++] = s.id[k];
			continue;
		}
		/* NOENT: the object is missing, nothing beyond the size to drop */
		if (err && err != -ENOENT)
			rc = err == -ESTALE ? -EIO : err;
	}
	bool newly = false;
	if (!rc && ndown)
		rc = stale_mark_locked(mds, attr->ino, down, ndown, &newly);
	pthread_mutex_unlock(mu);
	mds_data_write_gate(mds, attr->ino, MDS_GATE_OPEN);
	if (newly)
		mds_layout_recall_file(mds, attr->ino);
	mds_space_note(mds, attr->ino); /* even a partial cut freed some */
	/* RFC 8881 §12.5.5: layouts of a shrunk file are recalled, so clients
	 * drop what they cached of it; an extension changes no mapping */
	if (!rc && attr->size < old_size)
		mds_layout_recall_file(mds, attr->ino);
	return rc;
}

/* ---------------------------------------------------------------- orphans */

struct ino_vec {
	uint64_t *v;
	unsigned n, cap;
};

static int orphan_collect(void *arg, const struct mds_attr *a)
{
	struct ino_vec *iv = arg;
	if (iv->n == iv->cap)
		return 1; /* the rest next time */
	iv->v[iv->n++] = a->ino;
	return 0;
}

void mds_data_orphan_sweep(struct braid_mds *mds, bool (*stop)(void *arg), void *arg)
{
	struct ino_vec iv = {.cap = SWEEP_BATCH};
	if (!(iv.v = malloc(SWEEP_BATCH * sizeof(*iv.v))))
		return;
	mds_orphan_list(mds->store, orphan_collect, &iv);
	for (unsigned i = 0; i < iv.n; i++) {
		if (stop(arg))
			break;
		mds_data_release(mds, iv.v[i]);
	}
	free(iv.v);
}
