/* SPDX-License-Identifier: MIT */
/*
 * DLIO's model of a training job (training.h): an emulated accelerator
 * takes a batch of samples from its prefetch queue, "computes" (sleeps)
 * for the step's compute time, and takes the next; its reader threads keep
 * the queue filled, each reading a sample (a whole file, or with
 * multi-sample files the next sample of the file it is on) whenever the
 * queue has room.  AU is the share of the accelerator's time spent
 * computing.  All accelerators of a trial share one mount (one ffc), as
 * the processes of one host share its kernel client.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/cluster.h"
#include "bench/training.h"

#define THREAD_STACK (1u << 20)

struct trial;

/*
 * One emulated accelerator and its prefetch queue.  mu guards ready,
 * reading, order[] and pos; take[] and ntake are the accelerator thread's
 * until it is joined.
 */
struct accel {
	struct trial *x;
	pthread_t th;
	pthread_t rd[TR_READERS_MAX];
	unsigned nrd; /* readers started */
	pthread_mutex_t mu;
	pthread_cond_t have;  /* ready grew, or the trial stops */
	pthread_cond_t space; /* ready shrank, or the trial stops */
	unsigned ready;	      /* samples read and not taken */
	unsigned reading;     /* samples being read */
	unsigned cap;	      /* ready + reading at most */
	unsigned *order;      /* this epoch's file order */
	unsigned pos;
	uint64_t rng;
	double *take; /* when each step's compute began */
	unsigned ntake, take_cap;
	atomic_bool started; /* its first batch taken */
};

/* A trial's state: tr_trial_run's, or, once its threads are left stuck in
 * calls to a server, theirs (never freed). */
struct trial {
	struct ffc *c;
	const struct tr_dataset *d;
	struct accel *a; /* n of them */
	unsigned n;
	atomic_bool stop;
	unsigned *orders;	    /* every accelerator's order[], one allocation */
	atomic_uint_fast64_t bytes; /* read by every reader so far */
	pthread_mutex_t err_mu;
	int err; /* the first failure (guarded by err_mu), why in t->why */
	struct tr_trial *t;
	uint64_t buf_bytes; /* a reader's buffer */
};

/* The trial's first failure ("<what> <path>: <error>"); the trial stops. */
static void trial_fail(struct trial *x, int err, const char *what, const char *path)
{
	pthread_mutex_lock(&x->err_mu);
	if (!x->err) {
		x->err = err;
		bench_strfmt(x->t->why, sizeof(x->t->why), "%s%s%s: %s", what, path ? " " : "",
			     path ? path : "", strerror(-err));
	}
	pthread_mutex_unlock(&x->err_mu);
	atomic_store(&x->stop, true);
}

/* The next file of a's order; a new shuffle at each epoch's end.  a->mu held. */
static unsigned next_file(struct accel *a)
{
	unsigned n = a->x->d->nfiles;
	if (a->pos == n) {
		for (unsigned i = n - 1; i > 0; i--) {
			unsigned j = (unsigned)(bench_rand64(&a->rng) % (i + 1));
			unsigned v = a->order[i];
			a->order[i] = a->order[j];
			a->order[j] = v;
		}
		a->pos = 0;
	}
	return a->order[a->pos++];
}

/* Room for one more sample in a's queue, counted as being read; false when
 * the trial stops. */
static bool slot_get(struct accel *a)
{
	struct trial *x = a->x;
	pthread_mutex_lock(&a->mu);
	while (a->ready + a->reading >= a->cap && !atomic_load(&x->stop))
		pthread_cond_wait(&a->space, &a->mu);
	bool go = !atomic_load(&x->stop);
	if (go)
		a->reading++;
	pthread_mutex_unlock(&a->mu);
	return go;
}

static void slot_done(struct accel *a, bool read)
{
	pthread_mutex_lock(&a->mu);
	a->reading--;
	if (read)
		a->ready++;
	pthread_cond_signal(&a->have);
	pthread_mutex_unlock(&a->mu);
}

static int chunk_read(struct trial *x, struct ffc_file *f, uint8_t *buf, uint64_t off, uint64_t len,
		      const char *path)
{
	while (len) {
		size_t n = len < x->buf_bytes ? (size_t)len : (size_t)x->buf_bytes;
		ssize_t got = ffc_pread(f, buf, n, off);
		if (got != (ssize_t)n) {
			int rc = got < 0 ? (int)got : -EIO;
			trial_fail(x, rc, got < 0 ? "read" : "short read of", path);
			return rc;
		}
		atomic_fetch_add(&x->bytes, n);
		off += n;
		len -= n;
	}
	return 0;
}

/* A file per sample: claim a slot, read the next file whole, repeat. */
static void reader_files(struct accel *a, uint8_t *buf)
{
	struct trial *x = a->x;
	while (slot_get(a)) {
		pthread_mutex_lock(&a->mu);
		unsigned i = next_file(a);
		pthread_mutex_unlock(&a->mu);
		char path[128];
		bench_cluster_file_path(path, sizeof(path), x->d->dir, i);
		int err = 0;
		struct ffc_file *f = ffc_open(x->c, path, FFC_RDONLY, 0, &err);
		if (!f) {
			trial_fail(x, err ? err : -EIO, "open", path);
			slot_done(a, false);
			return;
		}
		int rc = chunk_read(x, f, buf, 0, x->d->size[i], path);
		int rcl = ffc_close(f);
		if (!rc && rcl)
			trial_fail(x, rc = rcl, "close", path);
		slot_done(a, !rc);
		if (rc)
			return;
	}
}

/* Multi-sample files (TFRecord): the next file, its samples in order, a
 * slot each. */
static void reader_records(struct accel *a, uint8_t *buf)
{
	struct trial *x = a->x;
	const struct tr_dataset *d = x->d;
	while (!atomic_load(&x->stop)) {
		pthread_mutex_lock(&a->mu);
		unsigned i = next_file(a);
		pthread_mutex_unlock(&a->mu);
		char path[128];
		bench_cluster_file_path(path, sizeof(path), d->dir, i);
		int err = 0, rc = 0;
		struct ffc_file *f = ffc_open(x->c, path, FFC_RDONLY, 0, &err);
		if (!f) {
			trial_fail(x, err ? err : -EIO, "open", path);
			return;
		}
		for (unsigned s = 0; s < d->spf && !rc && slot_get(a); s++) {
			rc = chunk_read(x, f, buf, s * d->sample_bytes, d->sample_bytes, path);
			slot_done(a, !rc);
		}
		int rcl = ffc_close(f);
		if (!rc && rcl)
			trial_fail(x, rc = rcl, "close", path);
		if (rc)
			return;
	}
}

static void *reader_main(void *arg)
{
	struct accel *a = arg;
	uint8_t *buf = malloc(a->x->buf_bytes);
	if (!buf) {
		trial_fail(a->x, -ENOMEM, "a reader's buffer", NULL);
		return NULL;
	}
	if (a->x->d->spf > 1)
		reader_records(a, buf);
	else
		reader_files(a, buf);
	free(buf);
	return NULL;
}

/* Take a batch, compute, again, until the trial stops. */
static void *accel_main(void *arg)
{
	struct accel *a = arg;
	struct trial *x = a->x;
	unsigned batch = x->d->w->batch;
	long long c_ns = (long long)(x->d->compute_s * 1e9);
	for (;;) {
		pthread_mutex_lock(&a->mu);
		while (a->ready < batch && !atomic_load(&x->stop))
			pthread_cond_wait(&a->have, &a->mu);
		bool stop = atomic_load(&x->stop);
		if (!stop) {
			a->ready -= batch;
			pthread_cond_broadcast(&a->space);
		}
		pthread_mutex_unlock(&a->mu);
		if (stop)
			break;
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		double t = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
		if (a->ntake == a->take_cap) {
			unsigned cap = a->take_cap ? a->take_cap * 2 : 256;
			double *v = realloc(a->take, cap * sizeof(*v));
			if (!v) {
				trial_fail(x, -ENOMEM, "step times", NULL);
				break;
			}
			a->take = v;
			a->take_cap = cap;
		}
		a->take[a->ntake++] = t;
		atomic_store(&a->started, true);
		/* the compute: until t + compute_s, whatever the wake-up costs */
		long long end = (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec + c_ns;
		ts.tv_sec = (time_t)(end / 1000000000ll);
		ts.tv_nsec = (long)(end % 1000000000ll);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
	return NULL;
}

static void trial_stop(struct trial *x)
{
	atomic_store(&x->stop, true);
	for (unsigned i = 0; i < x->n; i++) {
		struct accel *a = &x->a[i];
		pthread_mutex_lock(&a->mu);
		pthread_cond_broadcast(&a->have);
		pthread_cond_broadcast(&a->space);
		pthread_mutex_unlock(&a->mu);
	}
}

bool tr_thread_join(pthread_t th, double deadline)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	double left = deadline - bench_now_s();
	long long ns = (long long)ts.tv_nsec + (left > 0 ? (long long)(left * 1e9) : 0);
	ts.tv_sec += (time_t)(ns / 1000000000ll);
	ts.tv_nsec = (long)(ns % 1000000000ll);
	return pthread_timedjoin_np(th, NULL, &ts) == 0;
}

bool tr_thread_start(pthread_t *th, void *(*fn)(void *), void *arg)
{
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, THREAD_STACK);
	int rc = pthread_create(th, &at, fn, arg);
	pthread_attr_destroy(&at);
	return rc == 0;
}

/* Compute time of a in [w0, w1). */
static double accel_busy(const struct accel *a, double c, double w0, double w1)
{
	double busy = 0;
	for (unsigned k = 0; k < a->ntake; k++) {
		double s = a->take[k] < w0 ? w0 : a->take[k];
		double e = a->take[k] + c > w1 ? w1 : a->take[k] + c;
		if (e > s)
			busy += e - s;
	}
	return busy;
}

static uint64_t dataset_max_file(const struct tr_dataset *d)
{
	uint64_t m = 0;
	for (unsigned i = 0; i < d->nfiles; i++)
		m = d->size[i] > m ? d->size[i] : m;
	return m;
}

/*
 * Wait until until (bench_now_s()), or the trial stops, or (with all) every
 * accelerator has its first batch; the server's processes are checked
 * every 0.1 s.
 */
static void trial_wait(struct trial *x, const struct tr_target *g, double until, bool all)
{
	double next_check = 0;
	for (double now = bench_now_s(); !atomic_load(&x->stop) && now < until;
	     now = bench_now_s()) {
		unsigned k = 0;
		while (all && k < x->n && atomic_load(&x->a[k].started))
			k++;
		if (all && k == x->n)
			return;
		if (now >= next_check) {
			if (g->alive && !g->alive(g->arg))
				trial_fail(x, -ECONNRESET, "the server stopped running", NULL);
			next_check = now + 0.1;
		}
		bench_sleep_s(all ? 0.002 : 0.01);
	}
}

/* Every thread joined, or (false) some still in calls to the server after
 * TR_JOIN_MAX_S: x is then left to them, and no more failures are taken. */
static bool trial_join(struct trial *x, unsigned started)
{
	double deadline = bench_now_s() + TR_JOIN_MAX_S;
	unsigned stuck = 0;
	for (unsigned i = 0; i < started; i++) {
		stuck += !tr_thread_join(x->a[i].th, deadline);
		for (unsigned r = 0; r < x->a[i].nrd; r++)
			stuck += !tr_thread_join(x->a[i].rd[r], deadline);
	}
	if (!stuck)
		return true;
	pthread_mutex_lock(&x->err_mu);
	char first[sizeof(x->t->why)];
	bench_strfmt(first, sizeof(first), "%s", x->t->why);
	bench_strfmt(x->t->why, sizeof(x->t->why),
		     "%u threads still in calls to the server %.0f s after the trial stopped%s%s",
		     stuck, TR_JOIN_MAX_S, x->err ? "; first: " : "", x->err ? first : "");
	x->err = x->err ? x->err : -ETIMEDOUT;
	pthread_mutex_unlock(&x->err_mu);
	return false;
}

static void trial_free(struct trial *x)
{
	for (unsigned i = 0; i < x->n; i++) {
		struct accel *a = &x->a[i];
		free(a->take);
		pthread_mutex_destroy(&a->mu);
		pthread_cond_destroy(&a->have);
		pthread_cond_destroy(&a->space);
	}
	pthread_mutex_destroy(&x->err_mu);
	free(x->orders);
	free(x->a);
	free(x);
}

void tr_trial_run(const struct tr_target *g, const struct tr_dataset *d, unsigned n,
		  double window_s, double warmup_max_s, uint64_t seed, struct tr_trial *t)
{
	memset(t, 0, sizeof(*t));
	t->n = n;
	struct trial *x = calloc(1, sizeof(*x));
	if (x) {
		x->a = calloc(n, sizeof(*x->a));
		x->orders = calloc((size_t)n * d->nfiles, sizeof(unsigned));
	}
	if (!x || !x->a || !x->orders) {
		bench_strfmt(t->why, sizeof(t->why), "no memory");
		if (x) {
			free(x->a);
			free(x->orders);
		}
		free(x);
		return;
	}
	x->c = g->c;
	x->d = d;
	x->n = n;
	x->t = t;
	pthread_mutex_init(&x->err_mu, NULL);
	uint64_t big = d->spf > 1 ? d->sample_bytes : dataset_max_file(d);
	x->buf_bytes = big < TR_READ_CHUNK ? big : TR_READ_CHUNK;
	const struct tr_workload *w = d->w;
	/* readers prefetch up to 2 batches, and never fewer than 2 samples each */
	unsigned cap = 2 * w->batch > 2 * w->readers ? 2 * w->batch : 2 * w->readers;
	for (unsigned i = 0; i < n; i++) {
		struct accel *a = &x->a[i];
		a->x = x;
		a->cap = cap;
		a->order = x->orders + (size_t)i * d->nfiles;
		for (unsigned j = 0; j < d->nfiles; j++)
			a->order[j] = j;
		a->pos = d->nfiles; /* shuffle before the first */
		a->rng = (seed ^ (0x9e3779b97f4a7c15ull * (i + 1))) | 1;
		pthread_mutex_init(&a->mu, NULL);
		pthread_cond_init(&a->have, NULL);
		pthread_cond_init(&a->space, NULL);
	}
	unsigned started = 0;
	double t0 = bench_now_s();
	for (unsigned i = 0; i < n && !atomic_load(&x->stop); i++) {
		struct accel *a = &x->a[i];
		if (!tr_thread_start(&a->th, accel_main, a)) {
			trial_fail(x, -EAGAIN, "start a thread", NULL);
			break;
		}
		started = i + 1;
		for (unsigned r = 0; r < w->readers; r++) {
			if (!tr_thread_start(&a->rd[r], reader_main, a)) {
				trial_fail(x, -EAGAIN, "start a thread", NULL);
				break;
			}
			a->nrd = r + 1;
		}
	}
	/* warm-up: until every accelerator has its first batch; then the window */
	trial_wait(x, g, t0 + warmup_max_s, true);
	double w0 = bench_now_s();
	uint64_t b0 = atomic_load(&x->bytes);
	trial_wait(x, g, w0 + window_s, false);
	double w1 = bench_now_s();
	uint64_t b1 = atomic_load(&x->bytes);
	trial_stop(x);
	if (!trial_join(x, started)) {
		t->stuck = true;
		return; /* x stays with the threads */
	}
	if (!x->err && started == n) {
		double au_sum = 0, min = 1e9, win = w1 - w0;
		for (unsigned i = 0; i < n; i++) {
			double au = accel_busy(&x->a[i], d->compute_s, w0, w1) / win;
			au_sum += au;
			min = au < min ? au : min;
		}
		t->ok = true;
		t->au_mean = au_sum / n;
		t->au_min = min;
		t->window_s = win;
		t->warmup_s = w0 - t0;
		/* a second of compute consumes batch / compute_s samples (partial
		 * steps count their share, which steps begun would not) */
		t->samples_s = au_sum * w->batch / d->compute_s;
		t->mbps = (double)(b1 - b0) / win / 1e6;
		/* one accelerator at the target takes batch x target / compute_s */
		t->capacity = au_sum / w->au_target;
	}
	trial_free(x);
}

void tr_search_run(const struct tr_target *g, const struct tr_dataset *d, double window_s,
		   double warmup_max_s, uint64_t seed, struct tr_search *s)
{
	memset(s, 0, sizeof(*s));
	s->ok = true;
	unsigned lo = 0, hi = TR_ACCEL_MAX + 1, n = 1;
	bool capacity_only = false;
	while (s->nt < TR_TRIALS_MAX) {
		struct tr_trial *t = &s->t[s->nt++];
		/* the same orders on every server: the seed is the caller's and n's */
		tr_trial_run(g, d, n, window_s, warmup_max_s, seed + n, t);
		if (g->progress)
			g->progress(d, t, g->arg);
		if (!t->ok) {
			s->ok = false;
			s->stuck = t->stuck;
			bench_strfmt(s->why, sizeof(s->why), "%u accelerators: %s", n, t->why);
			break;
		}
		if (t->capacity > s->capacity)
			s->capacity = t->capacity;
		if (capacity_only)
			break;
		if (t->au_mean >= d->w->au_target)
			lo = n;
		else
			hi = n;
		if (hi == lo + 1) {
			if (lo > 0)
				break;
			n = 2; /* one missed: two more readers, for the capacity */
			capacity_only = true;
			continue;
		}
		n = hi == TR_ACCEL_MAX + 1 ? (2 * n > TR_ACCEL_MAX ? TR_ACCEL_MAX : 2 * n)
					   : (lo + hi) / 2;
	}
	s->accel = lo;
	s->capped = lo == TR_ACCEL_MAX;
}
