/* SPDX-License-Identifier: MIT */
/*
 * Space accounting (mds/space.h): a queue of inodes whose data changed,
 * and one thread that sums what their objects take on the data servers
 * into space_used.
 *
 * The queue is a fixed pool of MDS_SPACE_QUEUE_MAX entries, hashed by
 * inode (one entry per inode) and linked in two FIFOs: fresh notes, due
 * MDS_SPACE_SETTLE_MS after the note, and retries, due MDS_SPACE_RETRY_MS
 * after the failure.  Each list's delay is constant, so its head is its
 * first due; the thread takes whichever head is due.  An inode taken off
 * the queue may be noted again while its STATs run: it then comes round
 * once more, so a change during a round is never missed.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/client.h"
#include "ctl/objid.h"
#include "mds/data.h"
#include "mds/dsreg.h"
#include "mds/ec.h"
#include "mds/mds_impl.h"
#include "mds/space.h"
#include "nfsd/bytes.h"
#include "nfsd/metrics.h"

#define SP_NIL	   UINT32_MAX
#define SP_BUCKETS MDS_SPACE_QUEUE_MAX /* a power of 2 */
#define SP_MAX_DS  64
#define SP_ROUND   256 /* files summed in one round, at most */

_Static_assert((SP_BUCKETS & (SP_BUCKETS - 1)) == 0, "buckets: a power of 2");

/* One queued inode; an entry is on exactly one list (free, fresh, retry). */
struct sp_ent {
	uint64_t ino;
	uint64_t due_ns; /* CLOCK_MONOTONIC */
	uint32_t next;	 /* its list */
	uint32_t hnext;	 /* its hash chain (fresh and retry entries) */
	uint32_t tries;	 /* rounds that failed */
};

struct sp_list {
	uint32_t head, tail;
};

/* mu guards everything below it; the metrics are lock-free. */
struct mds_space {
	struct braid_mds *mds;
	pthread_mutex_t mu;
	pthread_cond_t cond; /* CLOCK_MONOTONIC: a note, or stop */
	struct sp_ent *ents;
	uint32_t *buckets;
	uint32_t free;
	struct sp_list fresh, retry;
	unsigned queued;
	bool stop, running;
	pthread_t thread;

	struct nfsd_metric *m_updates, *m_retries, *m_dropped, *m_queued;
};

static uint32_t *bucket(struct mds_space *sp, uint64_t ino)
{
	return &sp->buckets[nfsd_mix64(ino) & (SP_BUCKETS - 1)];
}

static bool sp_find(struct mds_space *sp, uint64_t ino)
{
	for (uint32_t i = *bucket(sp, ino); i != SP_NIL; i = sp->ents[i].hnext)
		if (sp->ents[i].ino == ino)
			return true;
	return false;
}

/* A free entry queued at the tail of l for ino (not queued yet): false
 * when the pool is used up. */
static bool sp_push(struct mds_space *sp, struct sp_list *l, uint64_t ino, uint64_t due,
		    uint32_t tries)
{
	uint32_t i = sp->free;
	if (i == SP_NIL)
		return false;
	struct sp_ent *e = &sp->ents[i];
	sp->free = e->next;
	*e = (struct sp_ent){.ino = ino, .due_ns = due, .next = SP_NIL, .tries = tries};
	uint32_t *b = bucket(sp, ino);
	e->hnext = *b;
	*b = i;
	if (l->tail == SP_NIL)
		l->head = i;
	else
		sp->ents[l->tail].next = i;
	l->tail = i;
	nfsd_metric_set(sp->m_queued, ++sp->queued);
	return true;
}

/* l's head off its list and the hash, back to the pool; its inode and tries. */
static uint64_t sp_pop(struct mds_space *sp, struct sp_list *l, uint32_t *tries)
{
	uint32_t i = l->head;
	struct sp_ent *e = &sp->ents[i];
	l->head = e->next;
	if (l->head == SP_NIL)
		l->tail = SP_NIL;
	uint32_t *pp = bucket(sp, e->ino);
	while (*pp != i)
		pp = &sp->ents[*pp].hnext;
	*pp = e->hnext;
	e->next = sp->free;
	sp->free = i;
	nfsd_metric_set(sp->m_queued, --sp->queued);
	*tries = e->tries;
	return e->ino;
}

void mds_space_note(struct braid_mds *mds, uint64_t ino)
{
	struct mds_space *sp = mds->space;
	if (!sp)
		return;
	pthread_mutex_lock(&sp->mu);
	bool woke = false, dropped = false;
	if (!sp->stop && !sp_find(sp, ino)) {
		woke = sp->fresh.head == SP_NIL;
		dropped = !sp_push(sp, &sp->fresh, ino,
				   nfsd_now_ns() + MDS_SPACE_SETTLE_MS * 1000000ull, 0);
	}
	pthread_mutex_unlock(&sp->mu);
	if (woke && !dropped)
		pthread_cond_signal(&sp->cond); /* after the unlock: one wakeup, not two */
	if (dropped)
		nfsd_metric_add(sp->m_dropped, 1);
}

/* The op's own: the value is bookkeeping, no caller waits for it. */
static void set_done(struct mds_op *op)
{
	free(op);
}

/* STATs ino's objects; *rec: the op recording a new sum, to submit (NULL
 * when the sum is unchanged).  mds_space_update's errors. */
static int space_sum(struct braid_mds *mds, uint64_t ino, struct mds_op **rec)
{
	*rec = NULL;
	struct mds_attr at;
	int rc = mds_inode_getattr(mds->store, ino, &at);
	if (rc == -ENOENT || rc == -ESTALE || (!rc && at.type != MDS_REG))
		return 0; /* gone (its objects go with it), or not a file */
	if (rc)
		return rc;
	uint32_t ids[SP_MAX_DS];
	int n = mds_data_ds_list(mds, ino, ids, SP_MAX_DS);
	if (n < 0)
		return n;
	/* erasure coding: the parity objects on their holders count too
	 * (raw: what the cluster spends) */
	int np = mds_ec_parity_holders(mds, ino, ids + n, (unsigned)(SP_MAX_DS - n));
	if (np < 0)
		return np;
	struct ds_objid id, pid;
	mds_data_objid(&at, &id);
	ds_objid_parity(&id, &pid);
	uint64_t sum = 0;
	for (int k = 0; k < n + np; k++) {
		int err;
		struct ds_ctl_stat st;
		struct mds_ds_conn *dc = mds_ds_conn_get(mds, ids[k], &err);
		if (!dc) {
			if (err == -EIO)
				continue; /* forgotten (ds remove --force): nothing there */
			return err ? err : -EAGAIN;
		}
		err = ds_ctl_stat(dc->clnt, &mds->key, k < n ? &id : &pid, &st);
		mds_ds_conn_put(dc);
		/* NOENT: never made there (or not yet); STALE: not this file's */
		if (err == -ENOENT || err == -ESTALE)
			continue;
		if (err)
			return err;
		sum += st.used;
	}
	if (sum == at.space_used)
		return 0;
	struct mds_op *op = calloc(1, sizeof(*op));
	if (!op)
		return -ENOMEM;
	op->type = MDS_OP_SETATTR;
	op->args.setattr =
	    (struct mds_setattr_args){.ino = ino, .mask = MDS_SET_SPACE_USED, .space_used = sum};
	op->done = set_done;
	*rec = op;
	return 0;
}

int mds_space_update(struct braid_mds *mds, uint64_t ino)
{
	struct mds_op *op;
	int rc = space_sum(mds, ino, &op);
	if (op)
		mds_store_submit(mds->store, op);
	return rc;
}

/* The list whose head is due for the round under way: a fresh entry due
 * before horizon, else a retry due now; NULL when neither.  With mu. */
static struct sp_list *sp_next(struct mds_space *sp, uint64_t horizon, uint64_t now)
{
	if (sp->fresh.head != SP_NIL && sp->ents[sp->fresh.head].due_ns <= horizon)
		return &sp->fresh;
	if (sp->retry.head != SP_NIL && sp->ents[sp->retry.head].due_ns <= now)
		return &sp->retry;
	return NULL;
}

static void *space_main(void *arg)
{
	struct mds_space *sp = arg;
	pthread_mutex_lock(&sp->mu);
	while (!sp->stop) {
		uint64_t now = nfsd_now_ns(), until = UINT64_MAX;
		struct sp_list *l = NULL;
		if (sp->fresh.head != SP_NIL) {
			uint64_t d = sp->ents[sp->fresh.head].due_ns;
			if (d <= now)
				l = &sp->fresh;
			until = d;
		}
		if (!l && sp->retry.head != SP_NIL) {
			uint64_t d = sp->ents[sp->retry.head].due_ns;
			if (d <= now)
				l = &sp->retry;
			until = d < until ? d : until;
		}
		if (!l) {
			if (until == UINT64_MAX) {
				pthread_cond_wait(&sp->cond, &sp->mu);
			} else {
				struct timespec ts = {.tv_sec = (time_t)(until / 1000000000ull),
						      .tv_nsec = (long)(until % 1000000000ull)};
				pthread_cond_timedwait(&sp->cond, &sp->mu, &ts);
			}
			continue;
		}
		/*
		 * A round: the due entry, and the fresh ones due within
		 * MDS_SPACE_BATCH_MS, their new sums recorded together (one
		 * store commit for the round, not one per file beside the
		 * clients' own).
		 */
		struct mds_op *recs[SP_ROUND];
		unsigned nrec = 0, taken = 0;
		uint64_t horizon = now + MDS_SPACE_BATCH_MS * 1000000ull;
		while (l && taken < SP_ROUND && !sp->stop) {
			uint32_t tries;
			uint64_t ino = sp_pop(sp, l, &tries);
			taken++;
			pthread_mutex_unlock(&sp->mu);
			struct mds_op *rec;
			int rc = space_sum(sp->mds, ino, &rec);
			if (rec)
				recs[nrec++] = rec;
			if (!rc)
				nfsd_metric_add(sp->m_updates, 1);
			pthread_mutex_lock(&sp->mu);
			/* noted again meanwhile: that note's round comes anyway */
			if (rc && !sp->stop && !sp_find(sp, ino)) {
				bool again =
				    tries + 1 < MDS_SPACE_TRIES &&
				    sp_push(sp, &sp->retry, ino,
					    nfsd_now_ns() + MDS_SPACE_RETRY_MS * 1000000ull, tries + 1);
				nfsd_metric_add(again ? sp->m_retries : sp->m_dropped, 1);
				if (!again && rc != -EAGAIN)
					mds_log("inode %llu: space used not summed: %s; it stays until "
						"the file changes again",
						(unsigned long long)ino, strerror(-rc));
			}
			l = sp_next(sp, horizon, nfsd_now_ns());
		}
		pthread_mutex_unlock(&sp->mu);
		for (unsigned i = 0; i < nrec; i++)
			mds_store_submit(sp->mds->store, recs[i]);
		pthread_mutex_lock(&sp->mu);
	}
	pthread_mutex_unlock(&sp->mu);
	return NULL;
}

int mds_space_init(struct braid_mds *mds, char *msg, size_t msglen)
{
	struct mds_space *sp = calloc(1, sizeof(*sp));
	if (!sp || !(sp->ents = malloc(MDS_SPACE_QUEUE_MAX * sizeof(*sp->ents))) ||
	    !(sp->buckets = malloc(SP_BUCKETS * sizeof(*sp->buckets)))) {
		if (sp)
			free(sp->ents);
		free(sp);
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	sp->mds = mds;
	pthread_mutex_init(&sp->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sp->cond, &ca);
	pthread_condattr_destroy(&ca);
	for (uint32_t i = 0; i < MDS_SPACE_QUEUE_MAX; i++)
		sp->ents[i].next = i + 1 < MDS_SPACE_QUEUE_MAX ? i + 1 : SP_NIL;
	for (uint32_t i = 0; i < SP_BUCKETS; i++)
		sp->buckets[i] = SP_NIL;
	sp->fresh = sp->retry = (struct sp_list){SP_NIL, SP_NIL};
	struct nfsd_metrics *m = mds->metrics;
	sp->m_updates = nfsd_metrics_counter(
	    m, "braid_mds_space_updates_total",
	    "Files whose space used was summed from their data servers.", NULL);
	sp->m_retries = nfsd_metrics_counter(
	    m, "braid_mds_space_retries_total",
	    "Space-used sums tried again later: a data server of the file was down.", NULL);
	sp->m_dropped = nfsd_metrics_counter(
	    m, "braid_mds_space_dropped_total",
	    "Space-used sums not made: the queue was full, or every try failed.", NULL);
	sp->m_queued = nfsd_metrics_gauge(m, "braid_mds_space_queued",
					  "Files waiting for their space used to be summed.", NULL);
	mds->space = sp;
	int rc = -pthread_create(&sp->thread, NULL, space_main, sp);
	if (rc) {
		snprintf(msg, msglen, "space accounting thread: %s", strerror(-rc));
		return rc;
	}
	sp->running = true;
	return 0;
}

void mds_space_stop(struct braid_mds *mds)
{
	struct mds_space *sp = mds->space;
	if (!sp)
		return;
	pthread_mutex_lock(&sp->mu);
	sp->stop = true;
	pthread_cond_broadcast(&sp->cond);
	pthread_mutex_unlock(&sp->mu);
	if (sp->running)
		pthread_join(sp->thread, NULL);
	sp->running = false;
}

void mds_space_release(struct braid_mds *mds)
{
	struct mds_space *sp = mds->space;
	if (!sp)
		return;
	mds_space_stop(mds);
	pthread_cond_destroy(&sp->cond);
	pthread_mutex_destroy(&sp->mu);
	free(sp->ents);
	free(sp->buckets);
	free(sp);
	mds->space = NULL;
}
