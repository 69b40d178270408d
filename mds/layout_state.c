/* SPDX-License-Identifier: MIT */
/*
 * Layout state (mds/layout_impl.h): layout stateids per (client, file) and
 * the ranges they hold, device IDs handed out, per-data-server marks and
 * counters; recalls (CB_LAYOUTRECALL, RFC 8881 §12.5.5), revocation and
 * fencing (RFC 8435 §2.2), the client's end, CB_NOTIFY_DEVICEID (§20.12),
 * and the background thread that drives them.  mds/op_layout.c's top
 * comment describes the whole.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "layout/devid.h"
#include "mds/admin.h"
#include "mds/callback.h"
#include "mds/data.h"
#include "mds/dsreg.h"
#include "mds/fh.h"
#include "mds/layout.h"
#include "mds/layout_impl.h"
#include "mds/space.h"
#include "nfsd/trace.h"

/* ---------------------------------------------------------------- ranges */

static int ranges_reserve(struct lo_ranges *r, unsigned n)
{
	if (n <= r->cap)
		return 0;
	unsigned cap = r->cap ? r->cap : 4;
	while (cap < n)
		cap *= 2;
	struct lo_range *v = realloc(r->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	r->v = v;
	r->cap = cap;
	return 0;
}

/* Adds [s, e), merging what it overlaps or touches; past LO_RANGES_MAX
 * ranges it widens the nearest one instead (holding more is harmless). */
int lo_ranges_add(struct lo_ranges *r, uint64_t s, uint64_t e)
{
	unsigned i = 0;
	while (i < r->n && r->v[i].end < s)
		i++;
	unsigned j = i;
	uint64_t ns = s, ne = e;
	while (j < r->n && r->v[j].start <= e) {
		ns = r->v[j].start < ns ? r->v[j].start : ns;
		ne = r->v[j].end > ne ? r->v[j].end : ne;
		j++;
	}
	if (j > i) {
		r->v[i] = (struct lo_range){ns, ne};
		memmove(r->v + i + 1, r->v + j, (r->n - j) * sizeof(*r->v));
		r->n -= j - i - 1;
		return 0;
	}
	if (r->n >= LO_RANGES_MAX) {
		/* i is where it would go: widen the neighbour before or after */
		if (i > 0 && (i == r->n || s - r->v[i - 1].end <= r->v[i].start - e))
			r->v[i - 1].end = e;
		else
			r->v[i].start = s;
		return 0;
	}
	if (ranges_reserve(r, r->n + 1))
		return -ENOMEM;
	memmove(r->v + i + 1, r->v + i, (r->n - i) * sizeof(*r->v));
	r->v[i] = (struct lo_range){s, e};
	r->n++;
	return 0;
}

/* Whether one range holds all of [s, e). */
bool lo_ranges_cover(const struct lo_ranges *r, uint64_t s, uint64_t e)
{
	for (unsigned i = 0; i < r->n; i++)
		if (r->v[i].start <= s && r->v[i].end >= e)
			return true;
	return false;
}

/* Removes [s, e) (splitting a range that holds it in its middle). */
int lo_ranges_sub(struct lo_ranges *r, uint64_t s, uint64_t e)
{
	for (unsigned i = 0; i < r->n; i++) {
		struct lo_range x = r->v[i];
		if (x.end <= s || x.start >= e)
			continue;
		if (x.start < s && x.end > e) {
			if (ranges_reserve(r, r->n + 1))
				return -ENOMEM;
			memmove(r->v + i + 2, r->v + i + 1, (r->n - i - 1) * sizeof(*r->v));
			r->v[i] = (struct lo_range){x.start, s};
			r->v[i + 1] = (struct lo_range){e, x.end};
			r->n++;
			return 0;
		}
		if (x.start < s) {
			r->v[i].end = s;
		} else if (x.end > e) {
			r->v[i].start = e;
		} else {
			memmove(r->v + i, r->v + i + 1, (r->n - i - 1) * sizeof(*r->v));
			r->n--;
			i--;
		}
	}
	return 0;
}

/* --------------------------------------------------------------- objects */

struct lo_client *lo_client_find(struct mds_layout *lo, uint64_t id)
{
	return (struct lo_client *)htab_find(&lo->clients, nfsd_mix64(id));
}

struct lo_client *lo_client_get(struct mds_layout *lo, uint64_t id)
{
	struct lo_client *cl = lo_client_find(lo, id);
	if (!cl && (cl = calloc(1, sizeof(*cl)))) {
		cl->id = id;
		htab_add(&lo->clients, &cl->h, nfsd_mix64(id));
	}
	return cl;
}

struct lo_file *lo_file_find(struct mds_layout *lo, uint64_t ino)
{
	return (struct lo_file *)htab_find(&lo->files, nfsd_mix64(ino));
}

struct lo_file *lo_file_get(struct mds_layout *lo, uint64_t ino)
{
	struct lo_file *f = lo_file_find(lo, ino);
	if (!f && (f = calloc(1, sizeof(*f)))) {
		f->ino = ino;
		htab_add(&lo->files, &f->h, nfsd_mix64(ino));
	}
	return f;
}

void lo_file_put_unused(struct mds_layout *lo, struct lo_file *f)
{
	if (f->states || f->pins || f->fencing || f->release)
		return;
	if (f->wmark == LO_WM_MARKED && !f->wpending) {
		/* no layout out and none being granted: the mark can go */
		struct lo_release *r = malloc(sizeof(*r));
		if (r) {
			r->ino = f->ino;
			r->next = lo->wclears;
			lo->wclears = r;
			f->wmark = LO_WM_CLEARING;
			lo_kick(lo);
		}
		return;
	}
	if (f->wmark == LO_WM_NONE) {
		htab_del(&lo->files, &f->h);
		free(f);
	}
}

void lo_wmark_begin(struct mds_layout *lo, struct lo_file *f, struct lo_wmark_wait *w)
{
	memset(w, 0, sizeof(*w));
	pthread_mutex_lock(&lo->mu);
	while (f->wmark == LO_WM_MARKING || f->wmark == LO_WM_CLEARING)
		pthread_cond_wait(&lo->wcv, &lo->mu);
	bool mark = f->wmark == LO_WM_NONE;
	if (mark)
		f->wmark = LO_WM_MARKING;
	pthread_mutex_unlock(&lo->mu);
	if (!mark)
		return;
	w->op.type = MDS_OP_WLAYOUT_MARK;
	w->op.args.ino = f->ino;
	w->started = true;
	mds_store_begin(lo->mds->store, &w->op, &w->sem);
}

int lo_wmark_end(struct mds_layout *lo, struct lo_file *f, struct lo_wmark_wait *w)
{
	if (!w->started)
		return 0;
	int rc = mds_store_wait(&w->op);
	w->started = false;
	pthread_mutex_lock(&lo->mu);
	f->wmark = rc ? LO_WM_NONE : LO_WM_MARKED;
	pthread_cond_broadcast(&lo->wcv);
	pthread_mutex_unlock(&lo->mu);
	return rc;
}

struct lo_state *lo_sid_lookup(struct mds_layout *lo, const uint8_t *other)
{
	uint64_t h = get_le64(other + 4);
	for (struct htab_node *n = htab_find(&lo->sids, h); n; n = htab_next(n, h)) {
		struct lo_state *s = (struct lo_state *)n;
		if (!memcmp(s->other, other, NFS4_OTHER_SIZE))
			return s;
	}
	return NULL;
}

struct lo_state *lo_state_of(struct lo_file *f, uint64_t clientid)
{
	for (struct lo_state *s = f->states; s; s = s->fnext)
		if (s->cl->id == clientid)
			return s;
	return NULL;
}

struct lo_state *lo_state_new(struct mds_layout *lo, struct lo_client *cl, struct lo_file *f)
{
	struct lo_state *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->other[0] = 'L'; /* never special (all zeros or all ones) */
	memcpy(s->other + 1, lo->tag, 3);
	do {
		uint64_t n = lo->next_sid++;
		uint64_t prf = siphash24(&lo->key, &n, sizeof(n));
		memcpy(s->other + 4, &prf, 8);
	} while (lo_sid_lookup(lo, s->other));
	s->seqid = 1;
	s->cl = cl;
	s->f = f;
	s->fnext = f->states;
	f->states = s;
	s->cnext = cl->states;
	cl->states = s;
	htab_add(&lo->sids, &s->h, get_le64(s->other + 4));
	return s;
}

void lo_state_bump(struct lo_state *s)
{
	s->seqid = s->seqid == UINT32_MAX ? 1 : s->seqid + 1;
}

void lo_sid_out(const struct lo_state *s, stateid4 *out)
{
	out->seqid = s->seqid;
	memcpy(out->other, s->other, NFS4_OTHER_SIZE);
}

bool lo_state_holds(const struct lo_state *s)
{
	return s->held[0].n || s->held[1].n;
}

void lo_kick(struct mds_layout *lo)
{
	lo->kick = true;
	pthread_cond_signal(&lo->cond);
}

/*
 * After a state of f went: the file-wide recall ends when no state of it
 * is still being recalled; a release waiting for the layouts runs once
 * none is left.
 */
void lo_file_settle(struct mds_layout *lo, struct lo_file *f)
{
	bool recalling = false;
	for (struct lo_state *s = f->states; s; s = s->fnext)
		recalling |= s->recalling;
	if (!recalling)
		f->recall = false;
	if (!f->states && f->release) {
		struct lo_release *r = malloc(sizeof(*r));
		if (r) {
			r->ino = f->ino;
			r->next = lo->releases;
			lo->releases = r;
			lo_kick(lo);
		}
		f->release = false;
	}
	lo_file_put_unused(lo, f);
}

/* Frees s; the caller settles its file (file_settle) unless noted. */
void lo_state_free(struct mds_layout *lo, struct lo_state *s)
{
	htab_del(&lo->sids, &s->h);
	for (struct lo_state **pp = &s->f->states; *pp; pp = &(*pp)->fnext)
		if (*pp == s) {
			*pp = s->fnext;
			break;
		}
	for (struct lo_state **pp = &s->cl->states; *pp; pp = &(*pp)->cnext)
		if (*pp == s) {
			*pp = s->cnext;
			break;
		}
	/* a recall ends when its state goes: returned, or revoked */
	if (s->recalling)
		mds_metrics_recall_done(lo->mds, nfsd_now_ns() - s->recall_start_ns, s->revoked);
	for (struct lo_state **pp = &lo->recalls; s->recalling && *pp; pp = &(*pp)->rnext)
		if (*pp == s) {
			*pp = s->rnext;
			break;
		}
	/* returned (all of a client's at once), revoked or expired: the
	 * writes through an RW layout are over */
	if (s->had_rw)
		mds_space_note(lo->mds, s->f->ino);
	free(s->held[0].v);
	free(s->held[1].v);
	free(s);
}

bool lo_state_names_ds(const struct lo_state *s, uint32_t id)
{
	if (s->ds_overflow)
		return true;
	for (unsigned i = 0; i < s->nds; i++)
		if (s->ds[i] == id)
			return true;
	return false;
}

void lo_state_note_ds(struct lo_state *s, uint32_t id)
{
	if (lo_state_names_ds(s, id))
		return;
	if (s->nds < LO_DS_MAX)
		s->ds[s->nds++] = id;
	else
		s->ds_overflow = true;
}

struct lo_dsmark *lo_mark_get(struct mds_layout *lo, uint32_t id)
{
	for (unsigned i = 0; i < lo->nmarks; i++)
		if (lo->marks[i].id == id)
			return &lo->marks[i];
	if (lo->nmarks == lo->marks_cap) {
		unsigned cap = lo->marks_cap ? 2 * lo->marks_cap : 16;
		struct lo_dsmark *v = realloc(lo->marks, cap * sizeof(*v));
		if (!v)
			return NULL;
		lo->marks = v;
		lo->marks_cap = cap;
	}
	struct lo_dsmark *m = &lo->marks[lo->nmarks++];
	memset(m, 0, sizeof(*m));
	m->id = id;
	return m;
}

bool lo_ds_avoided(struct mds_layout *lo, uint32_t id, uint64_t now)
{
	for (unsigned i = 0; i < lo->nmarks; i++)
		if (lo->marks[i].id == id)
			return lo->marks[i].avoid_until_ns > now;
	return false;
}

static bool space_status(uint32_t status)
{
	return status == NFS4ERR_NOSPC || status == NFS4ERR_DQUOT;
}

static bool clmark_live(struct mds_layout *lo, const struct lo_clmark *m, uint64_t now)
{
	if (!m->status || m->until_ns <= now)
		return false;
	if (!space_status(m->status))
		return true;
	struct lo_dsmark *dm = lo_mark_get(lo, m->ds);
	return !dm || dm->space_gen == m->space_gen;
}

const struct lo_clmark *lo_clmark_find(struct mds_layout *lo, const struct lo_client *cl,
				       uint32_t ds, uint64_t now)
{
	for (unsigned i = 0; cl && i < LO_CL_MARKS; i++)
		if (cl->marks[i].ds == ds && clmark_live(lo, &cl->marks[i], now))
			return &cl->marks[i];
	return NULL;
}

bool lo_clmark_set(struct mds_layout *lo, struct lo_client *cl, uint32_t ds, uint32_t status,
		   uint64_t now)
{
	struct lo_clmark *slot = NULL;
	bool fresh = true;
	for (unsigned i = 0; i < LO_CL_MARKS && !slot; i++)
		if (cl->marks[i].ds == ds && cl->marks[i].status) {
			slot = &cl->marks[i];
			fresh = !clmark_live(lo, slot, now) || slot->status != status;
		}
	for (unsigned i = 0; i < LO_CL_MARKS && !slot; i++)
		if (!clmark_live(lo, &cl->marks[i], now))
			slot = &cl->marks[i];
	for (unsigned i = 0; i < LO_CL_MARKS && !slot; i++)
		if (!slot || cl->marks[i].until_ns < slot->until_ns)
			slot = &cl->marks[i];
	if (!slot)
		slot = &cl->marks[0];
	struct lo_dsmark *dm = lo_mark_get(lo, ds);
	*slot = (struct lo_clmark){.ds = ds,
				   .status = status,
				   .until_ns = now + lo->steer_ns,
				   .space_gen = dm ? dm->space_gen : 0};
	return fresh;
}

void mds_layout_resilver_begin(struct braid_mds *mds, uint64_t ino)
{
	struct mds_layout *lo = mds->layout;
	if (!lo)
		return;
	pthread_mutex_lock(&lo->mu);
	struct lo_file *f = lo_file_get(lo, ino);
	if (f) {
		f->pins++;
		f->resilver = true;
		f->gen++; /* grants in progress give up */
		lo_recall_file(lo, f, false);
	}
	pthread_mutex_unlock(&lo->mu);
}

bool mds_layout_rw_held(struct braid_mds *mds, uint64_t ino, uint64_t but)
{
	struct mds_layout *lo = mds->layout;
	if (!lo)
		return false;
	pthread_mutex_lock(&lo->mu);
	struct lo_file *f = lo_file_find(lo, ino);
	bool held = false;
	for (struct lo_state *st = f ? f->states : NULL; st && !held; st = st->fnext)
		held = st->cl->id != but && st->held[LAYOUTIOMODE4_RW - 1].n > 0;
	pthread_mutex_unlock(&lo->mu);
	return held;
}

void mds_layout_note_shrink(struct braid_mds *mds, uint64_t ino)
{
	struct mds_layout *lo = mds->layout;
	if (!lo)
		return;
	pthread_mutex_lock(&lo->mu);
	struct lo_file *f = lo_file_find(lo, ino);
	for (struct lo_state *st = f ? f->states : NULL; st; st = st->fnext)
		st->shrunk = true;
	pthread_mutex_unlock(&lo->mu);
}

void mds_layout_resilver_end(struct braid_mds *mds, uint64_t ino)
{
	struct mds_layout *lo = mds->layout;
	if (!lo)
		return;
	pthread_mutex_lock(&lo->mu);
	struct lo_file *f = lo_file_find(lo, ino);
	if (f && f->resilver) {
		f->resilver = false;
		f->pins--;
		lo_file_put_unused(lo, f);
	}
	pthread_mutex_unlock(&lo->mu);
}

void mds_layout_ds_space_freed(struct braid_mds *mds, uint32_t ds_id)
{
	struct mds_layout *lo = mds->layout;
	if (!lo)
		return;
	pthread_mutex_lock(&lo->mu);
	struct lo_dsmark *dm = lo_mark_get(lo, ds_id);
	if (dm)
		dm->space_gen++;
	pthread_mutex_unlock(&lo->mu);
}

void lo_fence_queue(struct mds_layout *lo, uint64_t ino, bool apply, uint64_t at)
{
	for (struct lo_fence *x = lo->fences; x; x = x->next)
		if (x->ino == ino) {
			x->apply = x->apply && apply; /* a new epoch wins over a retry */
			if (at < x->next_ns)
				x->next_ns = at;
			lo_kick(lo);
			return;
		}
	struct lo_fence *x = calloc(1, sizeof(*x));
	if (!x) {
		mds_log("inode %llu: out of memory queueing a fence", (unsigned long long)ino);
		return;
	}
	x->ino = ino;
	x->apply = apply;
	x->next_ns = at;
	x->next = lo->fences;
	lo->fences = x;
	lo_kick(lo);
}

/* Starts recalling s (CB_LAYOUTRECALL from the thread); its seqid moves,
 * and the callback carries the new value (RFC 8881 §12.5.5.2.1). */
void lo_recall_start(struct mds_layout *lo, struct lo_state *s, bool changed, uint64_t now)
{
	if (s->recalling)
		return;
	s->recalling = true;
	s->cb_ok = false;
	s->changed = changed;
	s->deadline_ns = now + lo->mds->set.lease_ms * 1000000ull;
	s->recall_start_ns = now;
	s->next_ns = now;
	s->backoff_ms = LO_BACKOFF_MIN;
	s->rnext = lo->recalls;
	lo->recalls = s;
	lo_state_bump(s);
	s->cl->ctr.recalls++;
	lo_kick(lo);
	/* CB_LAYOUTRECALL names the whole file, any iomode (send_recall) */
	BRAID_TRACE(layout__recall, s->f->ino, s->cl->id, (uint32_t)LAYOUTIOMODE4_ANY, 0,
		    NFS4_UINT64_MAX, changed);
}

/* Why a layout was revoked: probe layout__revoke's reason (docs/tracing.md). */
enum { LO_REVOKE_UNRETURNED = 1, LO_REVOKE_EXPIRED = 2 };

/* The strongest iomode s holds (LAYOUTIOMODE4_RW or _READ), 0 for none. */
static uint32_t held_iomode(const struct lo_state *s)
{
	return s->held[LAYOUTIOMODE4_RW - 1].n	   ? LAYOUTIOMODE4_RW
	       : s->held[LAYOUTIOMODE4_READ - 1].n ? LAYOUTIOMODE4_READ
						   : 0;
}

int lo_recall_file(struct mds_layout *lo, struct lo_file *f, bool changed)
{
	if (!f->states)
		return -ENOENT;
	uint64_t now = nfsd_now_ns();
	f->recall = true;
	f->gen++;
	for (struct lo_state *s = f->states; s; s = s->fnext)
		lo_recall_start(lo, s, changed, now);
	return 0;
}

/* -------------------------------------------------------------- device IDs */

/* The record of a device ID handed out (made on first use); with lo->mu held. */
struct lo_dev *lo_dev_get(struct mds_layout *lo, const uint8_t id[NFS4_DEVICEID4_SIZE],
			  uint32_t ds_id)
{
	struct lo_dev *d = lo->devs;
	while (d && memcmp(d->id, id, NFS4_DEVICEID4_SIZE))
		d = d->next;
	if (!d && (d = calloc(1, sizeof(*d)))) {
		memcpy(d->id, id, NFS4_DEVICEID4_SIZE);
		d->ds_id = ds_id;
		d->next = lo->devs;
		lo->devs = d;
	}
	return d;
}

/* Remember that clientid wants notifications about device id. */
void lo_dev_watch(struct mds_layout *lo, const uint8_t id[NFS4_DEVICEID4_SIZE], uint32_t ds_id,
		  uint64_t clientid)
{
	pthread_mutex_lock(&lo->mu);
	struct lo_dev *d = lo_dev_get(lo, id, ds_id);
	bool have = false;
	for (unsigned k = 0; d && k < d->nclients; k++)
		have |= d->clients[k] == clientid;
	if (d && !have) {
		if (d->nclients == d->cap) {
			unsigned cap = d->cap ? 2 * d->cap : 4;
			uint64_t *v = realloc(d->clients, cap * sizeof(*v));
			if (v) {
				d->clients = v;
				d->cap = cap;
			}
		}
		if (d->nclients < d->cap)
			d->clients[d->nclients++] = clientid;
	}
	pthread_mutex_unlock(&lo->mu);
}

/* ------------------------------------------------ recalls, ends, releases */

bool mds_layout_held(struct braid_mds *mds, uint64_t ino)
{
	struct mds_layout *lo = mds->layout;
	if (!lo)
		return false;
	pthread_mutex_lock(&lo->mu);
	struct lo_file *f = lo_file_find(lo, ino);
	bool held = f && f->states;
	pthread_mutex_unlock(&lo->mu);
	return held;
}

int mds_layout_recall_file(struct braid_mds *mds, uint64_t ino)
{
	struct mds_layout *lo = mds->layout;
	if (!lo)
		return -ENOENT;
	pthread_mutex_lock(&lo->mu);
	struct lo_file *f = lo_file_find(lo, ino);
	int rc = f ? lo_recall_file(lo, f, false) : -ENOENT;
	pthread_mutex_unlock(&lo->mu);
	return rc;
}

int mds_layout_recall_client(struct braid_mds *mds, uint64_t clientid)
{
	struct mds_layout *lo = mds->layout;
	if (!lo)
		return -ENOENT;
	pthread_mutex_lock(&lo->mu);
	struct lo_client *cl = lo_client_find(lo, clientid);
	int rc = cl && cl->states ? 0 : -ENOENT;
	uint64_t now = nfsd_now_ns();
	for (struct lo_state *s = cl ? cl->states : NULL; s; s = s->cnext) {
		s->f->gen++;
		lo_recall_start(lo, s, false, now);
	}
	pthread_mutex_unlock(&lo->mu);
	return rc;
}

bool mds_layout_release_hold(struct braid_mds *mds, uint64_t ino)
{
	struct mds_layout *lo = mds->layout;
	if (!lo)
		return false;
	pthread_mutex_lock(&lo->mu);
	struct lo_file *f = lo_file_find(lo, ino);
	bool held = f && f->states;
	if (held) {
		/* clora_changed: the objects go, nothing is to be written back */
		f->release = true;
		lo_recall_file(lo, f, true);
	}
	pthread_mutex_unlock(&lo->mu);
	return held;
}

void mds_layout_client_expired(struct braid_mds *mds, uint64_t clientid)
{
	struct mds_layout *lo = mds->layout;
	if (!lo)
		return;
	pthread_mutex_lock(&lo->mu);
	struct lo_client *cl = lo_client_find(lo, clientid);
	if (cl) {
		uint64_t now = nfsd_now_ns();
		while (cl->states) {
			struct lo_state *s = cl->states;
			struct lo_file *f = s->f;
			/* RFC 8435 §2.2: its writes must stop reaching the data */
			bool fence = s->held[LAYOUTIOMODE4_RW - 1].n != 0;
			if (fence)
				lo_fence_queue(lo, f->ino, false, now);
			BRAID_TRACE(layout__revoke, f->ino, clientid, held_iomode(s), fence,
				    LO_REVOKE_EXPIRED);
			lo_state_free(lo, s);
			lo_file_settle(lo, f);
		}
		htab_del(&lo->clients, &cl->h);
		free(cl);
	}
	for (struct lo_dev *d = lo->devs; d; d = d->next)
		for (unsigned k = 0; k < d->nclients; k++)
			if (d->clients[k] == clientid)
				d->clients[k--] = d->clients[--d->nclients];
	pthread_mutex_unlock(&lo->mu);
}

uint64_t mds_layout_dup_delayed(struct braid_mds *mds)
{
	struct mds_layout *lo = mds->layout;
	if (!lo)
		return 0;
	pthread_mutex_lock(&lo->mu);
	uint64_t n = lo->dup_delayed;
	pthread_mutex_unlock(&lo->mu);
	return n;
}

uint64_t mds_layout_lgopen_deferred(struct braid_mds *mds)
{
	struct mds_layout *lo = mds->layout;
	if (!lo)
		return 0;
	pthread_mutex_lock(&lo->mu);
	uint64_t n = lo->lgopen_deferred;
	pthread_mutex_unlock(&lo->mu);
	return n;
}

uint64_t mds_layout_outstanding(struct braid_mds *mds)
{
	struct mds_layout *lo = mds->layout;
	if (!lo)
		return 0;
	pthread_mutex_lock(&lo->mu);
	uint64_t n = lo->sids.n;
	pthread_mutex_unlock(&lo->mu);
	return n;
}

bool mds_layout_client_has_state(struct braid_mds *mds, uint64_t clientid)
{
	struct mds_layout *lo = mds->layout;
	if (!lo)
		return false;
	pthread_mutex_lock(&lo->mu);
	struct lo_client *cl = lo_client_find(lo, clientid);
	bool has = cl && cl->states;
	pthread_mutex_unlock(&lo->mu);
	return has;
}

/* §8.2.2 for TEST_STATEID: 0 or the current seqid is fine, an older one is old. */
static nfsstat4 sid_lookup_test(struct mds_layout *lo, uint64_t clientid, const stateid4 *sid,
				struct lo_state **out)
{
	struct lo_state *s = lo_sid_lookup(lo, sid->other);
	*out = NULL;
	if (!s || s->cl->id != clientid)
		return NFS4ERR_BAD_STATEID;
	if (sid->seqid && sid->seqid != s->seqid)
		return (int32_t)(sid->seqid - s->seqid) < 0 ? NFS4ERR_OLD_STATEID
							    : NFS4ERR_BAD_STATEID;
	*out = s;
	return NFS4_OK;
}

nfsstat4 mds_layout_sid_test(struct braid_mds *mds, uint64_t clientid, const stateid4 *sid)
{
	struct mds_layout *lo = mds->layout;
	if (!lo)
		return NFS4ERR_BAD_STATEID;
	struct lo_state *s;
	pthread_mutex_lock(&lo->mu);
	nfsstat4 st = sid_lookup_test(lo, clientid, sid, &s);
	pthread_mutex_unlock(&lo->mu);
	return st;
}

nfsstat4 mds_layout_sid_free(struct braid_mds *mds, uint64_t clientid, const stateid4 *sid)
{
	struct mds_layout *lo = mds->layout;
	if (!lo)
		return NFS4ERR_BAD_STATEID;
	struct lo_state *s;
	pthread_mutex_lock(&lo->mu);
	nfsstat4 st = sid_lookup_test(lo, clientid, sid, &s);
	if (!st && lo_state_holds(s))
		st = NFS4ERR_LOCKS_HELD;
	if (!st) {
		struct lo_file *f = s->f;
		lo_state_free(lo, s);
		lo_file_settle(lo, f);
	}
	pthread_mutex_unlock(&lo->mu);
	return st;
}

int mds_layout_counters_client(struct braid_mds *mds, uint64_t clientid,
			       struct mds_layout_counters *out)
{
	struct mds_layout *lo = mds->layout;
	memset(out, 0, sizeof(*out));
	if (!lo)
		return -ENOENT;
	pthread_mutex_lock(&lo->mu);
	struct lo_client *cl = lo_client_find(lo, clientid);
	if (cl)
		*out = cl->ctr;
	pthread_mutex_unlock(&lo->mu);
	return cl ? 0 : -ENOENT;
}

void mds_layout_counters_ds(struct braid_mds *mds, uint32_t ds_id, struct mds_layout_counters *out)
{
	struct mds_layout *lo = mds->layout;
	memset(out, 0, sizeof(*out));
	if (!lo)
		return;
	pthread_mutex_lock(&lo->mu);
	for (unsigned i = 0; i < lo->nmarks; i++)
		if (lo->marks[i].id == ds_id)
			*out = lo->marks[i].ctr;
	pthread_mutex_unlock(&lo->mu);
}

/* ------------------------------------------------------------ the thread */

struct cb_job {
	uint64_t clientid;
	uint8_t other[NFS4_OTHER_SIZE];
	stateid4 sid;
	uint8_t fh[MDS_FH_SIZE];
	bool changed;
};

/* CB_LAYOUTRECALL (RFC 8881 §20.3) of one file's layouts: 0 and the
 * client's status, or mds_cb_compound's -errno. */
static int send_recall(struct braid_mds *mds, const struct cb_job *j, nfsstat4 *status)
{
	uint8_t buf[2048];
	struct xdr_arena ar;
	xdr_arena_init(&ar, buf, sizeof(buf), 1u << 16);
	nfs_cb_argop4 op;
	memset(&op, 0, sizeof(op));
	op.argop = OP_CB_LAYOUTRECALL;
	CB_LAYOUTRECALL4args *la = &op.u.opcblayoutrecall;
	la->clora_type = LAYOUT4_FLEX_FILES;
	la->clora_iomode = LAYOUTIOMODE4_ANY;
	la->clora_changed = j->changed;
	la->clora_recall.lor_recalltype = LAYOUTRECALL4_FILE;
	layoutrecall_file4 *rf = &la->clora_recall.u.lor_layout;
	rf->lor_fh = xdr_opaque_of(j->fh, MDS_FH_SIZE);
	rf->lor_offset = 0;
	rf->lor_length = NFS4_UINT64_MAX;
	rf->lor_stateid = j->sid;
	CB_COMPOUND4res res;
	int rc = mds_cb_compound(mds, j->clientid, &op, 1, &res, &ar);
	if (!rc) {
		if (res.resarray.len >= 2 && res.resarray.val[1].resop == OP_CB_LAYOUTRECALL)
			*status = res.resarray.val[1].u.opcblayoutrecall.clorr_status;
		else
			*status = res.status ? res.status : NFS4ERR_SERVERFAULT;
	}
	xdr_arena_release(&ar);
	return rc;
}

/* CB_NOTIFY_DEVICEID with NOTIFY_DEVICEID4_DELETE (§20.12); best effort. */
static void send_dev_delete(struct braid_mds *mds, uint64_t clientid,
			    const uint8_t id[NFS4_DEVICEID4_SIZE])
{
	uint8_t buf[2048], vb[64];
	struct xdr_arena ar;
	xdr_arena_init(&ar, buf, sizeof(buf), 1u << 16);
	notify_deviceid_delete4 dd = {.ndd_layouttype = LAYOUT4_FLEX_FILES};
	memcpy(dd.ndd_deviceid, id, NFS4_DEVICEID4_SIZE);
	struct iovec iov[4];
	struct xdr_enc e;
	xdr_enc_init(&e, iov, 4, vb, sizeof(vb), NULL);
	xdr_enc_notify_deviceid_delete4(&e, &dd);
	uint8_t flat[64];
	if (e.err || e.len > sizeof(flat)) {
		xdr_arena_release(&ar);
		return;
	}
	xdr_enc_flatten(&e, flat);
	uint32_t mask = 1u << NOTIFY_DEVICEID4_DELETE;
	notify4 n = {.notify_mask = {1, &mask}, .notify_vals = xdr_opaque_of(flat, e.len)};
	nfs_cb_argop4 op;
	memset(&op, 0, sizeof(op));
	op.argop = OP_CB_NOTIFY_DEVICEID;
	op.u.opcbnotify_deviceid.cnda_changes.len = 1;
	op.u.opcbnotify_deviceid.cnda_changes.val = &n;
	CB_COMPOUND4res res;
	mds_cb_compound(mds, clientid, &op, 1, &res, &ar);
	xdr_arena_release(&ar);
}

/* Revokes s (not returned within a lease): fenced if it could write. */
static void revoke_locked(struct mds_layout *lo, struct lo_state *s, uint64_t now)
{
	struct lo_file *f = s->f;
	mds_log("client %016llx did not return its layout of inode %llu: revoked%s",
		(unsigned long long)s->cl->id, (unsigned long long)f->ino,
		s->held[LAYOUTIOMODE4_RW - 1].n ? ", fencing it" : "");
	bool fence = s->held[LAYOUTIOMODE4_RW - 1].n != 0;
	if (fence)
		lo_fence_queue(lo, f->ino, false, now);
	BRAID_TRACE(layout__revoke, f->ino, s->cl->id, held_iomode(s), fence, LO_REVOKE_UNRETURNED);
	s->cl->ctr.revoked++;
	s->revoked = true;
	lo_state_free(lo, s);
	lo_file_settle(lo, f);
}

/* The client's answer to a CB_LAYOUTRECALL of s (looked up again: it may
 * have gone meanwhile). */
static void recall_answered(struct mds_layout *lo, const struct cb_job *j, int rc, nfsstat4 status)
{
	uint64_t t = nfsd_now_ns();
	struct lo_state *s = lo_sid_lookup(lo, j->other);
	if (!s || !s->recalling)
		return;
	BRAID_TRACE(layout__recall__reply, s->f->ino, j->clientid, rc, (uint32_t)status,
		    (t - s->recall_start_ns) / 1000);
	s->cb_busy = false;
	if (!rc && status == NFS4ERR_NOMATCHING_LAYOUT) {
		/* §20.3.4: it holds none; as if returned */
		struct lo_file *f = s->f;
		lo_state_free(lo, s);
		lo_file_settle(lo, f);
	} else if (!rc && status == NFS4_OK) {
		s->cb_ok = true; /* its LAYOUTRETURN follows */
	} else {
		/* NFS4ERR_DELAY (it has LAYOUTGETs in flight), no back channel,
		 * no answer: again, until the lease runs out */
		s->next_ns = t + s->backoff_ms * 1000000ull;
		s->backoff_ms =
		    s->backoff_ms * 2 > LO_BACKOFF_MAX ? LO_BACKOFF_MAX : s->backoff_ms * 2;
	}
}

struct cb_task {
	struct mds_layout *lo;
	struct cb_job j;
};

/* One CB_LAYOUTRECALL in its own thread: a client slow to answer (a
 * callback may wait CB_TIMEOUT_MS) holds up no other. */
static void *recall_thread(void *arg)
{
	struct cb_task *t = arg;
	struct mds_layout *lo = t->lo;
	nfsstat4 status = NFS4ERR_SERVERFAULT;
	int rc = send_recall(lo->mds, &t->j, &status);
	pthread_mutex_lock(&lo->mu);
	recall_answered(lo, &t->j, rc, status);
	lo->cb_inflight--;
	lo_kick(lo); /* wakes mds_layout_stop too */
	pthread_mutex_unlock(&lo->mu);
	free(t);
	return NULL;
}

static void recalls_run(struct mds_layout *lo, uint64_t now)
{
	struct braid_mds *mds = lo->mds;
	struct cb_task *todo[LO_CB_PAR];
	unsigned n = 0;
	pthread_mutex_lock(&lo->mu);
	for (struct lo_state *s = lo->recalls, *next; s; s = next) {
		next = s->rnext;
		if (now >= s->deadline_ns) {
			revoke_locked(lo, s, now);
			continue;
		}
		if (s->cb_ok || s->cb_busy || s->next_ns > now || lo->cb_inflight >= LO_CB_PAR)
			continue;
		struct cb_task *t = malloc(sizeof(*t));
		if (!t)
			break;
		t->lo = lo;
		struct cb_job *j = &t->j;
		j->clientid = s->cl->id;
		memcpy(j->other, s->other, NFS4_OTHER_SIZE);
		lo_sid_out(s, &j->sid);
		struct mds_fh h = {.ino = s->f->ino, .gen = s->igen, .export_id = s->export_id};
		mds_fh_make(mds, &h, j->fh);
		j->changed = s->changed;
		s->cb_busy = true;
		lo->cb_inflight++;
		todo[n++] = t;
	}
	pthread_mutex_unlock(&lo->mu);
	for (unsigned i = 0; i < n; i++) {
		pthread_t th;
		pthread_attr_t at;
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&th, &at, recall_thread, todo[i]))
			recall_thread(todo[i]); /* no thread: here, then */
		pthread_attr_destroy(&at);
	}
}

static void fences_run(struct mds_layout *lo, uint64_t now)
{
	struct braid_mds *mds = lo->mds;
	struct lo_fence *due = NULL;
	pthread_mutex_lock(&lo->mu);
	for (struct lo_fence **pp = &lo->fences; *pp;) {
		struct lo_fence *x = *pp;
		if (x->next_ns <= now) {
			*pp = x->next;
			x->next = due;
			due = x;
		} else {
			pp = &x->next;
		}
	}
	pthread_mutex_unlock(&lo->mu);
	while (due) {
		struct lo_fence *x = due;
		due = x->next;
		struct mds_attr a;
		int rc = mds_inode_getattr(mds->store, x->ino, &a);
		if (rc || a.type != MDS_REG) {
			free(x); /* gone: nothing to protect */
			continue;
		}
		struct lo_file *f = NULL;
		uint32_t epoch = 0;
		if (!x->apply) {
			pthread_mutex_lock(&lo->mu);
			if ((f = lo_file_get(lo, x->ino))) {
				f->fencing = true;
				f->gen++;
				f->pins++;
			}
			pthread_mutex_unlock(&lo->mu);
			rc = mds_data_fence_new(mds, &a, &epoch);
			/* once recorded, new layouts carry the new pair */
			if (!rc || rc == -EAGAIN)
				mds_log("inode %llu fenced: epoch %u%s", (unsigned long long)x->ino,
					epoch, rc ? " (some data servers later)" : "");
		} else {
			rc = mds_data_fence_apply(mds, &a);
		}
		pthread_mutex_lock(&lo->mu);
		if (f) {
			f->fencing = false;
			f->pins--;
			lo_file_put_unused(lo, f);
		}
		if (rc && ++x->attempts >= LO_FENCE_TRIES) {
			mds_log("inode %llu: giving up fencing after %u attempts: %s",
				(unsigned long long)x->ino, x->attempts, strerror(-rc));
		} else if (rc) {
			/* -EAGAIN: a data server missed it; else the store failed */
			x->apply = x->apply || rc == -EAGAIN;
			x->next_ns = nfsd_now_ns() + LO_FENCE_RETRY * 1000000ull;
			x->next = lo->fences;
			lo->fences = x;
			x = NULL;
		}
		pthread_mutex_unlock(&lo->mu);
		free(x);
	}
}

static void releases_run(struct mds_layout *lo)
{
	pthread_mutex_lock(&lo->mu);
	struct lo_release *r = lo->releases;
	lo->releases = NULL;
	pthread_mutex_unlock(&lo->mu);
	while (r) {
		struct lo_release *next = r->next;
		/* stopping: what is left stays for the orphan sweep of the next
		 * start, rather than a call each to data servers that may be
		 * gone already (each waits up to ds_timeout) */
		pthread_mutex_lock(&lo->mu);
		bool stop = lo->stop;
		pthread_mutex_unlock(&lo->mu);
		if (!stop)
			mds_data_release(lo->mds, r->ino);
		free(r);
		r = next;
	}
}

/* Marks of files left with no layout: cleared in the store, one by one. */
static void wclears_run(struct mds_layout *lo)
{
	pthread_mutex_lock(&lo->mu);
	struct lo_release *r = lo->wclears;
	lo->wclears = NULL;
	pthread_mutex_unlock(&lo->mu);
	while (r) {
		struct lo_release *next = r->next;
		int rc = mds_wlayout_clear(lo->mds->store, r->ino);
		if (rc)
			mds_log("inode %llu: clearing its RW-layout mark: %s",
				(unsigned long long)r->ino, strerror(-rc));
		pthread_mutex_lock(&lo->mu);
		struct lo_file *f = lo_file_find(lo, r->ino);
		if (f) {
			/* kept marked on failure: tried again when a layout of it goes */
			f->wmark = rc ? LO_WM_MARKED : LO_WM_NONE;
			pthread_cond_broadcast(&lo->wcv);
			if (!rc)
				lo_file_put_unused(lo, f);
		}
		pthread_mutex_unlock(&lo->mu);
		free(r);
		r = next;
	}
}

/*
 * Files marked when the MDS started: their size from their data servers'
 * objects (RFC 8435 §4 with the MDS's crash: what clients wrote through RW
 * layouts and never LAYOUTCOMMITted).  One whose data servers cannot all
 * be asked yet is tried again a second later.
 */
static void reconciles_run(struct mds_layout *lo, uint64_t now)
{
	if (now < lo->next_reconcile_ns)
		return;
	lo->next_reconcile_ns = now + 1000000000ull;
	pthread_mutex_lock(&lo->mu);
	struct lo_release *r = lo->reconciles, *left = NULL;
	lo->reconciles = NULL;
	pthread_mutex_unlock(&lo->mu);
	while (r) {
		struct lo_release *next = r->next;
		int rc = mds_data_size_reconcile(lo->mds, r->ino);
		pthread_mutex_lock(&lo->mu);
		if (rc) {
			r->next = left;
			left = r;
		} else {
			struct lo_file *f = lo_file_find(lo, r->ino);
			if (f) {
				f->wpending = false;
				lo_file_put_unused(lo, f);
			}
			free(r);
		}
		pthread_mutex_unlock(&lo->mu);
		r = next;
	}
	pthread_mutex_lock(&lo->mu);
	while (left) {
		struct lo_release *next = left->next;
		left->next = lo->reconciles;
		lo->reconciles = left;
		left = next;
	}
	pthread_mutex_unlock(&lo->mu);
}

/* At start: every marked file waits for its size to be reconciled. */
static int wmark_load(void *arg, uint64_t ino)
{
	struct mds_layout *lo = arg;
	struct lo_file *f = lo_file_get(lo, ino);
	struct lo_release *r = malloc(sizeof(*r));
	if (!f || !r) {
		free(r);
		return -ENOMEM;
	}
	f->wmark = LO_WM_MARKED;
	f->wpending = true;
	r->ino = ino;
	r->next = lo->reconciles;
	lo->reconciles = r;
	return 0;
}

struct dev_job {
	uint64_t clientid;
	uint8_t id[NFS4_DEVICEID4_SIZE];
};

/*
 * Devices whose data server now has another ID (new addresses): recall
 * the layouts naming it, then tell the clients that asked (once none of
 * their layouts names it any more) that the old ID is gone.
 */
static void devices_run(struct mds_layout *lo)
{
	struct braid_mds *mds = lo->mds;
	struct {
		uint8_t id[NFS4_DEVICEID4_SIZE];
		uint32_t ds;
	} seen[64];
	unsigned ns = 0;
	pthread_mutex_lock(&lo->mu);
	for (struct lo_dev *d = lo->devs; d && ns < 64; d = d->next) {
		memcpy(seen[ns].id, d->id, NFS4_DEVICEID4_SIZE);
		seen[ns++].ds = d->ds_id;
	}
	pthread_mutex_unlock(&lo->mu);
	struct mds_ds_info *info = malloc(sizeof(*info));
	struct layout_device *dev = malloc(sizeof(*dev));
	if (!info || !dev) {
		free(info);
		free(dev);
		return;
	}
	struct dev_job jobs[64];
	unsigned nj = 0;
	for (unsigned i = 0; i < ns; i++) {
		uint8_t cur[NFS4_DEVICEID4_SIZE];
		if (mds_dsreg_get(mds, seen[i].ds, info) || !info->registered)
			continue; /* not registered since we started: nothing to compare */
		mds_dsreg_device(info, dev);
		dev->tight = layout_devid_tight(seen[i].id);
		layout_devid_make(dev, cur);
		if (!memcmp(cur, seen[i].id, NFS4_DEVICEID4_SIZE))
			continue;
		pthread_mutex_lock(&lo->mu);
		struct lo_dev **pp = &lo->devs;
		while (*pp && memcmp((*pp)->id, seen[i].id, NFS4_DEVICEID4_SIZE))
			pp = &(*pp)->next;
		struct lo_dev *d = *pp;
		if (d && !d->recalled) {
			d->stale = d->recalled = true;
			mds_log("data server %u has new addresses: recalling layouts of its old "
				"device ID",
				d->ds_id);
			for (size_t b = 0; b <= lo->sids.mask; b++)
				for (struct htab_node *x = lo->sids.b[b]; x; x = x->next) {
					struct lo_state *s = (struct lo_state *)x;
					if (lo_state_names_ds(s, d->ds_id) && !s->f->recall)
						lo_recall_file(lo, s->f, true);
				}
		}
		for (unsigned k = 0; d && k < d->nclients && nj < 64; k++) {
			struct lo_client *cl = lo_client_find(lo, d->clients[k]);
			bool names = false;
			for (struct lo_state *s = cl ? cl->states : NULL; s && !names; s = s->cnext)
				names = lo_state_names_ds(s, d->ds_id);
			if (names)
				continue;
			jobs[nj].clientid = d->clients[k];
			memcpy(jobs[nj++].id, d->id, NFS4_DEVICEID4_SIZE);
			d->clients[k--] = d->clients[--d->nclients];
		}
		if (d && !d->nclients) {
			*pp = d->next;
			free(d->clients);
			free(d);
		}
		pthread_mutex_unlock(&lo->mu);
	}
	free(info);
	free(dev);
	for (unsigned i = 0; i < nj; i++)
		send_dev_delete(mds, jobs[i].clientid, jobs[i].id);
}

/* When the thread has something to do next (at most a second away). */
static uint64_t next_event(struct mds_layout *lo, uint64_t now)
{
	uint64_t t = now + 1000000000ull;
	for (struct lo_state *s = lo->recalls; s; s = s->rnext) {
		if (s->deadline_ns < t)
			t = s->deadline_ns;
		if (!s->cb_ok && !s->cb_busy && s->next_ns < t)
			t = s->next_ns;
	}
	for (struct lo_fence *x = lo->fences; x; x = x->next)
		if (x->next_ns < t)
			t = x->next_ns;
	if (lo->releases || lo->wclears)
		t = now;
	if (lo->reconciles && lo->next_reconcile_ns < t)
		t = lo->next_reconcile_ns;
	return t > now ? t : now;
}

static void *layout_main(void *arg)
{
	struct mds_layout *lo = arg;
	for (;;) {
		pthread_mutex_lock(&lo->mu);
		uint64_t now = nfsd_now_ns(), until = next_event(lo, now);
		while (!lo->stop && !lo->kick && until > now) {
			struct timespec ts = {.tv_sec = (time_t)(until / 1000000000ull),
					      .tv_nsec = (long)(until % 1000000000ull)};
			pthread_cond_timedwait(&lo->cond, &lo->mu, &ts);
			now = nfsd_now_ns();
		}
		bool stop = lo->stop;
		lo->kick = false;
		pthread_mutex_unlock(&lo->mu);
		if (stop)
			break;
		now = nfsd_now_ns();
		recalls_run(lo, now);
		fences_run(lo, now);
		releases_run(lo);
		wclears_run(lo);
		reconciles_run(lo, now);
		if (now >= lo->next_scan_ns) {
			devices_run(lo);
			lo->next_scan_ns = now + LO_SCAN_MS * 1000000ull;
		}
	}
	return NULL;
}

/* ---------------------------------------------------------- start, stop */

int mds_layout_init(struct braid_mds *mds, char *msg, size_t msglen)
{
	struct mds_layout *lo = calloc(1, sizeof(*lo));
	if (!lo) {
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	lo->mds = mds;
	mds->layout = lo;
	pthread_mutex_init(&lo->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&lo->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&lo->wcv, NULL);
	int rc = lo_settings_policy(&mds->set, &lo->dflt, msg, msglen);
	if (rc)
		return rc;
	/* instance-unique, unguessable stateids: a key from the clock, pid
	 * and the cluster key's fh half */
	uint64_t seed[4] = {nfsd_now_ns(), (uint64_t)getpid(), mds->boot_sec,
			    siphash24(&mds->key.fh, "braid-layout", 12)};
	struct siphash_key k0 = {{0x6272616964206c61ULL, 0x796f75742073696dULL}};
	lo->key.k[0] = siphash24(&k0, seed, sizeof(seed));
	seed[0] ^= 0x5555555555555555ull;
	lo->key.k[1] = siphash24(&k0, seed, sizeof(seed));
	uint64_t t = siphash24(&lo->key, "tag", 3);
	memcpy(lo->tag, &t, 3);
	for (int i = 0; i < 8; i++)
		lo->verf[i] = (uint8_t)(mds->boot_sec >> (56 - 8 * i));
	uint64_t steer = mds->set.ds_timeout_ms > 10000 ? mds->set.ds_timeout_ms : 10000;
	lo->steer_ns = steer * 1000000ull;
	if (htab_init(&lo->sids, 64) || htab_init(&lo->files, 64) || htab_init(&lo->clients, 64)) {
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	if ((rc = mds_wlayout_list(mds->store, wmark_load, lo))) {
		snprintf(msg, msglen, "files with RW layouts at the last stop: %s", strerror(-rc));
		return rc;
	}
	if (lo->reconciles)
		mds_log("sizes of files written through layouts before the last stop:"
			" reconciling from the data servers");
	if ((rc = -pthread_create(&lo->thread, NULL, layout_main, lo))) {
		snprintf(msg, msglen, "layout thread: %s", strerror(-rc));
		return rc;
	}
	lo->running = true;
	return 0;
}

void mds_layout_stop(struct braid_mds *mds)
{
	struct mds_layout *lo = mds->layout;
	if (!lo || !lo->running)
		return;
	pthread_mutex_lock(&lo->mu);
	lo->stop = true;
	pthread_cond_broadcast(&lo->cond);
	pthread_mutex_unlock(&lo->mu);
	pthread_join(lo->thread, NULL);
	lo->running = false;
	/* callbacks in flight end within CB_TIMEOUT_MS */
	pthread_mutex_lock(&lo->mu);
	while (lo->cb_inflight)
		pthread_cond_wait(&lo->cond, &lo->mu);
	pthread_mutex_unlock(&lo->mu);
}

void mds_layout_release(struct braid_mds *mds)
{
	struct mds_layout *lo = mds->layout;
	if (!lo)
		return;
	mds_layout_stop(mds);
	for (size_t b = 0; lo->clients.b && b <= lo->clients.mask; b++)
		while (lo->clients.b[b]) {
			struct lo_client *cl = (struct lo_client *)lo->clients.b[b];
			while (cl->states) {
				struct lo_state *s = cl->states;
				struct lo_file *f = s->f;
				lo_state_free(lo, s);
				f->release = false;
				lo_file_put_unused(lo, f);
			}
			htab_del(&lo->clients, &cl->h);
			free(cl);
		}
	for (size_t b = 0; lo->files.b && b <= lo->files.mask; b++)
		while (lo->files.b[b]) {
			struct lo_file *f = (struct lo_file *)lo->files.b[b];
			htab_del(&lo->files, &f->h);
			free(f);
		}
	while (lo->devs) {
		struct lo_dev *d = lo->devs;
		lo->devs = d->next;
		free(d->clients);
		free(d);
	}
	while (lo->fences) {
		struct lo_fence *x = lo->fences;
		lo->fences = x->next;
		free(x);
	}
	struct lo_release **lists[] = {&lo->releases, &lo->wclears, &lo->reconciles};
	for (unsigned i = 0; i < 3; i++)
		while (*lists[i]) {
			struct lo_release *r = *lists[i];
			*lists[i] = r->next;
			free(r);
		}
	free(lo->marks);
	htab_release(&lo->sids);
	htab_release(&lo->files);
	htab_release(&lo->clients);
	pthread_cond_destroy(&lo->cond);
	pthread_cond_destroy(&lo->wcv);
	pthread_mutex_destroy(&lo->mu);
	free(lo);
	mds->layout = NULL;
}
