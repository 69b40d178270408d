/* SPDX-License-Identifier: MIT */
/*
 * bench/mds's creates and lookups, for each protocol's load: one driver
 * thread sends, the client's loop threads answer (bench_mds_call_end),
 * calls to send again wait in a queue for the driver.  The protocol says
 * how a call is built, sent and checked (struct bench_mds_window_ops).
 * The benchmark is described in mds.c.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/mds.h"

/*
 * One run of bench_mds_window_run, on the driver's stack.  lock guards
 * every field below it; the callbacks queue, the driver sends (taking a
 * slot may wait).
 */
struct bench_mds_flight {
	const struct bench_mds_window *w;
	bool lookup;
	uint64_t first, count;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t rng;		      /* lookups' picks */
	uint64_t next;		      /* files handed out */
	uint64_t issued, done;	      /* calls sent, and answered or failed */
	uint64_t completed;	      /* creates or lookups finished */
	uint64_t delays, delegs;      /* BENCH_MDS_DELAY answers; delegations */
	struct bench_mds_call *queue; /* calls to send (again) */
	bool failed;
	char why[256];
};

static void flight_fail_locked(struct bench_mds_flight *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void flight_fail_locked(struct bench_mds_flight *f, const char *fmt, ...)
{
	if (f->failed)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->why, sizeof(f->why), fmt, ap);
	va_end(ap);
	f->failed = true;
}

/* lock held: k takes the next file, or false when all are out. */
static bool flight_next_locked(struct bench_mds_flight *f, struct bench_mds_call *k)
{
	if (f->next >= f->count || f->failed)
		return false;
	k->lookup = f->lookup;
	k->idx = (uint32_t)(f->lookup ? bench_rand64(&f->rng) % *f->w->nfiles : f->first + f->next);
	f->next++;
	if (f->w->ops->begin)
		f->w->ops->begin(f->w->ctx, k);
	return true;
}

/* lock held: a new call for the next file, or NULL (f failed, or all are out). */
static struct bench_mds_call *flight_call_new_locked(struct bench_mds_flight *f, unsigned chain)
{
	struct bench_mds_call *k = calloc(1, f->w->ops->call_size);
	if (!k) {
		flight_fail_locked(f, "out of memory");
		return NULL;
	}
	k->f = f;
	k->chain = chain;
	if (!flight_next_locked(f, k)) {
		free(k);
		return NULL;
	}
	return k;
}

static void flight_queue_locked(struct bench_mds_flight *f, struct bench_mds_call *k)
{
	k->next = f->queue;
	f->queue = k;
}

void bench_mds_call_end(struct bench_mds_call *k, enum bench_mds_end end, uint64_t delegs,
			const char *why)
{
	struct bench_mds_flight *f = k->f;
	pthread_mutex_lock(&f->lock);
	f->done++;
	f->delegs += delegs;
	if (end == BENCH_MDS_DELAY)
		f->delays++;
	if (end == BENCH_MDS_FAIL) {
		char name[16];
		bench_mds_file_name(k->idx, name, sizeof(name));
		flight_fail_locked(f, "%s %s: %s", f->w->ops->what(k), name, why);
	} else if (end == BENCH_MDS_DONE) {
		f->completed++;
		/* a chain goes on with its next file */
		if (f->w->chains && flight_next_locked(f, k)) {
			flight_queue_locked(f, k);
			k = NULL;
		}
	} else {
		flight_queue_locked(f, k);
		k = NULL;
	}
	pthread_cond_signal(&f->cond);
	pthread_mutex_unlock(&f->lock);
	free(k);
}

/*
 * lock held: wait for the next call to send, a queued one or (no chains)
 * a new one; NULL when the load is over or failed.
 */
static struct bench_mds_call *flight_take_locked(struct bench_mds_flight *f)
{
	const struct bench_mds_window *w = f->w;
	for (;;) {
		if (f->failed)
			return NULL;
		bool room = !w->limit || f->issued - f->done < w->limit;
		if (room && f->queue) {
			struct bench_mds_call *k = f->queue;
			f->queue = k->next;
			return k;
		}
		if (room && !w->chains && f->next < f->count)
			return flight_call_new_locked(f, 0);
		if ((w->chains || f->next >= f->count) && !f->queue && f->done == f->issued)
			return NULL;
		pthread_cond_wait(&f->cond, &f->lock);
	}
}

int bench_mds_window_run(const struct bench_mds_window *w, bool lookup, uint64_t first,
			 uint64_t count, const char *label, struct phase *ph)
{
	struct bench_mds_flight f = {.w = w, .lookup = lookup, .first = first, .count = count};
	f.rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)(bench_now_s() * 1e9);
	pthread_mutex_init(&f.lock, NULL);
	pthread_cond_init(&f.cond, NULL);
	unsigned seq = 0;
	uint64_t sent = 0, prog_done = 0;
	double t0 = bench_now_s(), c0 = bench_proc_cpu_s(w->server), u0 = bench_self_cpu_s();
	double tprog = t0 + PROGRESS_S;
	/* each chain's first file (the last chain's is sent first) */
	pthread_mutex_lock(&f.lock);
	for (unsigned i = 0; i < w->chains; i++) {
		struct bench_mds_call *k = flight_call_new_locked(&f, i);
		if (!k)
			break;
		flight_queue_locked(&f, k);
	}
	pthread_mutex_unlock(&f.lock);
	for (;;) {
		pthread_mutex_lock(&f.lock);
		struct bench_mds_call *k = flight_take_locked(&f);
		if (k)
			f.issued++;
		pthread_mutex_unlock(&f.lock);
		if (!k)
			break;
		int rc = w->ops->send(w->ctx, k, seq++);
		if (rc) {
			char eb[64], name[16];
			bench_mds_file_name(k->idx, name, sizeof(name));
			pthread_mutex_lock(&f.lock);
			f.issued--;
			flight_fail_locked(&f, "send %s %s: %s", w->ops->what(k), name,
					   bench_call_err_str(rc, eb, sizeof(eb)));
			pthread_mutex_unlock(&f.lock);
			free(k);
			break;
		}
		if (label && (++sent & 1023) == 0 && bench_now_s() >= tprog) {
			double t = bench_now_s();
			pthread_mutex_lock(&f.lock);
			uint64_t d = f.completed;
			pthread_mutex_unlock(&f.lock);
			fprintf(stderr, "%s: %s: %llu of %llu, %.0f/s\n", bench_prog, label,
				(unsigned long long)(first + d),
				(unsigned long long)(first + count),
				(double)(d - prog_done) / (t - tprog + PROGRESS_S));
			prog_done = d;
			tprog = t + PROGRESS_S;
		}
	}
	pthread_mutex_lock(&f.lock);
	/* after a failure: let what is in flight come back before f goes */
	while (f.done < f.issued)
		pthread_cond_wait(&f.cond, &f.lock);
	while (f.queue) {
		struct bench_mds_call *k = f.queue;
		f.queue = k->next;
		free(k);
	}
	pthread_mutex_unlock(&f.lock);
	ph->srv_cpu = bench_proc_cpu_s(w->server) - c0;
	ph->cli_cpu = bench_self_cpu_s() - u0;
	ph->secs = bench_now_s() - t0;
	ph->ops = f.completed;
	ph->ok = !f.failed;
	if (f.failed)
		bench_strfmt(ph->why, sizeof(ph->why), "%s", f.why);
	*w->delays += f.delays;
	if (w->delegs)
		*w->delegs += f.delegs;
	if (!lookup)
		*w->nfiles = first + f.completed;
	pthread_cond_destroy(&f.cond);
	pthread_mutex_destroy(&f.lock);
	return f.failed ? -EIO : 0;
}
