/* SPDX-License-Identifier: MIT */
/*
 * The bounded pool of threads for procedures that may block (disk, LMDB,
 * calls to other servers).  FIFO; a request returns to its loop through
 * nfsd_req_done().
 */
#include "config.h"

#include <signal.h>
#include <stdlib.h>

#include "nfsd/engine.h"

void nfsd_thread_block_signals(void)
{
	static const int faults[] = { SIGBUS, SIGSEGV, SIGFPE, SIGILL, SIGTRAP, SIGSYS };
	sigset_t set;
	sigfillset(&set);
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
		sigdelset(&set, faults[i]);
	/* SETMASK: unblocked even when the creating thread blocked them */
	pthread_sigmask(SIG_SETMASK, &set, NULL);
}

static void *worker_main(void *arg)
{
	struct nfsd_worker_pool *wp = arg;
	nfsd_thread_block_signals();
	pthread_mutex_lock(&wp->lock);
	for (;;) {
		while (!wp->head && !wp->stop) {
			wp->idle++;
			pthread_cond_wait(&wp->cond, &wp->lock);
			wp->idle--;
		}
		if (!wp->head)
			break;
		struct nfsd_req *r = wp->head;
		wp->head = r->next;
		if (!wp->head)
			wp->tail = NULL;
		wp->queued--;
		pthread_mutex_unlock(&wp->lock);
		nfsd_req_run(r);
		pthread_mutex_lock(&wp->lock);
	}
	pthread_mutex_unlock(&wp->lock);
	return NULL;
}

int nfsd_workers_start(struct nfsd_server *s)
{
	struct nfsd_worker_pool *wp = &s->wp;
	pthread_mutex_init(&wp->lock, NULL);
	pthread_cond_init(&wp->cond, NULL);
	wp->thr = calloc(s->opts.nworkers, sizeof(*wp->thr));
	if (!wp->thr)
		return -ENOMEM;
	for (unsigned i = 0; i < s->opts.nworkers; i++) {
		int rc = pthread_create(&wp->thr[i], NULL, worker_main, wp);
		if (rc) {
			nfsd_workers_stop(s);
			return -rc;
		}
		wp->n++;
	}
	return 0;
}

/* Finishes queued work first, so no request is lost. */
void nfsd_workers_stop(struct nfsd_server *s)
{
	struct nfsd_worker_pool *wp = &s->wp;
	pthread_mutex_lock(&wp->lock);
	wp->stop = true;
	pthread_cond_broadcast(&wp->cond);
	pthread_mutex_unlock(&wp->lock);
	for (unsigned i = 0; i < wp->n; i++)
		pthread_join(wp->thr[i], NULL);
	free(wp->thr);
	wp->thr = NULL;
	wp->n = 0;
	pthread_cond_destroy(&wp->cond);
	pthread_mutex_destroy(&wp->lock);
}

void nfsd_workers_queue(struct nfsd_server *s, struct nfsd_req *r)
{
	struct nfsd_worker_pool *wp = &s->wp;
	r->next = NULL;
	pthread_mutex_lock(&wp->lock);
	if (wp->tail)
		wp->tail->next = r;
	else
		wp->head = r;
	wp->tail = r;
	wp->queued++;
	bool wake = wp->idle > 0;
	pthread_mutex_unlock(&wp->lock);
	/*
	 * Signalled after the unlock, and only when a worker waits: a worker
	 * woken while the lock is still held blocks on it at once and is woken
	 * a second time by the unlock (two context switches per request, the
	 * most contended lock of a create-heavy load).  A busy worker takes
	 * the request when it comes back for more.
	 */
	if (wake)
		pthread_cond_signal(&wp->cond);
}
