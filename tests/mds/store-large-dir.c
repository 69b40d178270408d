/* SPDX-License-Identifier: MIT */
/*
 * One directory of 200,000 entries created by 4 threads at once (each
 * keeping up to 128 creates in flight, as a server's request threads
 * would), while a fifth thread looks names up: no directory-wide lock,
 * readers never wait for the writer.  Then every entry is found by lookup
 * (4 threads) and a paged readdir returns each exactly once.  Prints
 * creates/s and lookups/s.  BRAID_LARGE_DIR_N overrides the entry count.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>

#include "tests/mds/store-test.h"

#define NTHREADS 4
#define WINDOW	 128

static struct mds_store *s;
static uint64_t dir;
static int per_thread;
static _Atomic int errors;
static _Atomic uint64_t created; /* acknowledged creates, all threads */
static _Atomic bool creating;

struct worker {
	int id;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int nfree;
	int free[WINDOW];
	struct mds_op ops[WINDOW];
	char names[WINDOW][16];
};

static void name_of(char *buf, int thread, int i)
{
	snprintf(buf, 16, "t%d-%d", thread, i);
}

static void create_done(struct mds_op *op)
{
	struct worker *w = op->priv;
	if (op->status)
		atomic_fetch_add(&errors, 1);
	atomic_fetch_add(&created, 1);
	pthread_mutex_lock(&w->lock);
	w->free[w->nfree++] = (int)(op - w->ops);
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static void *create_main(void *arg)
{
	struct worker *w = arg;
	for (int i = 0; i < per_thread; i++) {
		pthread_mutex_lock(&w->lock);
		while (w->nfree == 0)
			pthread_cond_wait(&w->cond, &w->lock);
		int slot = w->free[--w->nfree];
		pthread_mutex_unlock(&w->lock);
		struct mds_op *op = &w->ops[slot];
		name_of(w->names[slot], w->id, i);
		*op = (struct mds_op){.type = MDS_OP_CREATE, .done = create_done, .priv = w};
		op->args.create = (struct mds_create_args){.dir = dir,
							   .name = w->names[slot],
							   .name_len = strlen(w->names[slot]),
							   .type = MDS_REG,
							   .mode = 0644};
		mds_store_submit(s, op);
	}
	pthread_mutex_lock(&w->lock);
	while (w->nfree < WINDOW)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* Looks names up while the creates go on; a name not made yet is -ENOENT. */
static void *reader_main(void *arg)
{
	uint64_t *lookups = arg;
	char name[16];
	uint64_t ino;
	unsigned seed = 1;
	while (atomic_load(&creating)) {
		int t = (int)(rand_r(&seed) % NTHREADS), i = (int)(rand_r(&seed) % per_thread);
		name_of(name, t, i);
		int rc = mds_dir_lookup(s, dir, name, strlen(name), &ino, NULL);
		if (rc && rc != -ENOENT)
			atomic_fetch_add(&errors, 1);
		(*lookups)++;
	}
	return NULL;
}

static void *lookup_main(void *arg)
{
	int id = (int)(intptr_t)arg;
	char name[16];
	uint64_t ino;
	for (int i = 0; i < per_thread; i++) {
		name_of(name, id, i);
		if (mds_dir_lookup(s, dir, name, strlen(name), &ino, NULL))
			atomic_fetch_add(&errors, 1);
	}
	return NULL;
}

static uint8_t *seen;

struct page {
	int left;
	uint64_t last;
};

static int readdir_fn(void *arg, const struct mds_dirent *e)
{
	struct page *p = arg;
	if (p->left == 0)
		return MDS_READDIR_FULL;
	char buf[16];
	CHECK(e->name_len < sizeof(buf) && e->name[0] == 't');
	memcpy(buf, e->name, e->name_len);
	buf[e->name_len] = 0;
	int t = atoi(buf + 1), i = atoi(strchr(buf, '-') + 1);
	CHECK(t >= 0 && t < NTHREADS && i >= 0 && i < per_thread);
	CHECK(e->cookie > p->last);
	seen[(size_t)t * per_thread + i]++;
	p->last = e->cookie;
	p->left--;
	return 0;
}

int main(void)
{
	const char *n_env = getenv("BRAID_LARGE_DIR_N");
	int total = n_env ? atoi(n_env) : 200000;
	per_thread = total / NTHREADS;
	total = per_thread * NTHREADS;
	const char *path = test_dir_make("large-dir");
	s = test_open(path, 0);
	dir = (uint64_t)t_create(s, mds_store_root(s), "big", MDS_DIR);

	static struct worker w[NTHREADS];
	pthread_t th[NTHREADS], rd;
	uint64_t concurrent_lookups = 0;
	struct mds_store_stats st0, st1;
	mds_store_stats(s, &st0);
	atomic_store(&creating, true);
	CHECK_EQ(pthread_create(&rd, NULL, reader_main, &concurrent_lookups), 0);
	double t0 = test_now();
	for (int i = 0; i < NTHREADS; i++) {
		w[i].id = i;
		pthread_mutex_init(&w[i].lock, NULL);
		pthread_cond_init(&w[i].cond, NULL);
		for (int j = 0; j < WINDOW; j++)
			w[i].free[j] = j;
		w[i].nfree = WINDOW;
		CHECK_EQ(pthread_create(&th[i], NULL, create_main, &w[i]), 0);
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	double t1 = test_now();
	atomic_store(&creating, false);
	pthread_join(rd, NULL);
	mds_store_stats(s, &st1);
	CHECK_EQ(atomic_load(&errors), 0);
	CHECK_EQ(t_attr(s, dir).size, (uint64_t)total);
	uint64_t ops = st1.ops - st0.ops, syncs = st1.syncs - st0.syncs;
	printf("%d creates from %d threads: %.2f s, %.0f creates/s; %llu syncs, "
	       "largest batch %llu; %llu lookups ran alongside\n",
	       total, NTHREADS, t1 - t0, total / (t1 - t0), (unsigned long long)syncs,
	       (unsigned long long)st1.max_batch, (unsigned long long)concurrent_lookups);
	CHECK(syncs < ops / 4);
	CHECK_EQ(st1.fallbacks, 0);

	/* Every name, by lookup, from 4 threads. */
	t0 = test_now();
	for (int i = 0; i < NTHREADS; i++)
		CHECK_EQ(pthread_create(&th[i], NULL, lookup_main, (void *)(intptr_t)i), 0);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	t1 = test_now();
	CHECK_EQ(atomic_load(&errors), 0);
	printf("%d lookups from %d threads: %.2f s, %.0f lookups/s\n", total, NTHREADS, t1 - t0,
	       total / (t1 - t0));

	/* Every entry exactly once by readdir, 1000 per reply. */
	seen = calloc((size_t)total, 1);
	CHECK(seen);
	uint64_t cookie = 0;
	bool eof = false;
	int replies = 0, got_total = 0;
	t0 = test_now();
	while (!eof) {
		struct page p = {.left = 1000, .last = cookie};
		int got = mds_dir_readdir(s, dir, cookie, 0, readdir_fn, &p, &eof);
		CHECK(got >= 0);
		got_total += got;
		cookie = p.last;
		replies++;
	}
	t1 = test_now();
	CHECK_EQ(got_total, total);
	for (int i = 0; i < total; i++)
		CHECK_EQ(seen[i], 1);
	printf("readdir: %d entries in %d replies, %.2f s, %.0f entries/s\n", got_total, replies,
	       t1 - t0, got_total / (t1 - t0));
	free(seen);
	mds_store_close(s);
	printf("store-large-dir: ok\n");
	return 0;
}
