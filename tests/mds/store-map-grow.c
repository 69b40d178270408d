/* SPDX-License-Identifier: MIT */
/*
 * The store's map grows (mds/store.c, "The map"): a store opened with a 1
 * MiB map takes 20000 entries with long names, about 10 times that, while
 * 4 threads look names up and list the directory all along (each read
 * transaction holds the map against a resize); every create succeeds,
 * every entry reads back, the map grew more than once, and the store
 * opens again with a 1 MiB map asked for (LMDB maps at least the file).
 * A store whose map may not grow past 4 MiB refuses with -ENOSPC once
 * full (removes too: LMDB copies pages on write), still reads, and takes
 * more once opened with a higher cap.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>

#include "tests/mds/store-test.h"

#define NFILES	 20000
#define NREADERS 4

static struct mds_store *s;
static uint64_t root;
static _Atomic int created; /* files made so far: f0 .. created-1 */
static _Atomic bool done;
static _Atomic int read_errors;
static _Atomic uint64_t reads;

static void name_of(int i, char *buf, size_t len)
{
	/* 200 bytes: entries take room fast */
	snprintf(buf, len, "f%06d-%0192d", i, 0);
}

static int page_fn(void *arg, const struct mds_dirent *e)
{
	(void)e;
	int *n = arg;
	return ++*n > 16 ? MDS_READDIR_FULL : 0;
}

static void *reader_main(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	char name[256];
	while (!atomic_load(&done)) {
		int n = atomic_load(&created);
		if (n == 0)
			continue;
		int i = (int)(rand_r(&seed) % (unsigned)n);
		name_of(i, name, sizeof(name));
		if (t_lookup(s, root, name) <= 0)
			atomic_fetch_add(&read_errors, 1);
		if (i % 64 == 0) {
			/* a directory page too */
			int got = 0;
			bool eof;
			if (mds_dir_readdir(s, root, 0, 0, page_fn, &got, &eof) <= 0)
				atomic_fetch_add(&read_errors, 1);
		}
		atomic_fetch_add(&reads, 1);
		usleep(50); /* reading all along, leaving the writer a core */
	}
	return NULL;
}

static void test_grow(const char *path)
{
	struct mds_store_opts o = {.path = path, .map_size = 1 << 20};
	CHECK_EQ(mds_store_open(&o, &s), 0);
	root = mds_store_root(s);
	pthread_t th[NREADERS];
	for (int i = 0; i < NREADERS; i++)
		CHECK_EQ(pthread_create(&th[i], NULL, reader_main, (void *)(uintptr_t)(i + 1)), 0);
	char name[256];
	int fails = 0;
	for (int i = 0; i < NFILES; i++) {
		name_of(i, name, sizeof(name));
		int64_t ino = t_create(s, root, name, MDS_REG);
		if (ino <= 0 && fails++ < 5)
			printf("create %d: %lld\n", i, (long long)ino);
		atomic_store(&created, i + 1);
	}
	atomic_store(&done, true);
	for (int i = 0; i < NREADERS; i++)
		pthread_join(th[i], NULL);
	struct mds_store_stats st;
	mds_store_stats(s, &st);
	printf("%d creates of 200-byte names from a 1 MiB map: %d failed; map now %llu MiB after "
	       "%llu grows; %llu lookups meanwhile, %d failed\n",
	       NFILES, fails, (unsigned long long)(st.map_size >> 20),
	       (unsigned long long)st.map_grows, (unsigned long long)atomic_load(&reads),
	       atomic_load(&read_errors));
	CHECK_EQ(fails, 0);
	CHECK_EQ(atomic_load(&read_errors), 0);
	CHECK(st.map_grows >= 2);
	CHECK(st.map_size >= 8 << 20);
	CHECK_EQ(t_attr(s, root).size, NFILES);
	mds_store_close(s);

	/* again, asking for 1 MiB: the file's size is mapped */
	CHECK_EQ(mds_store_open(&o, &s), 0);
	mds_store_stats(s, &st);
	CHECK(st.map_size >= 4 << 20);
	int missing = 0;
	for (int i = 0; i < NFILES; i++) {
		name_of(i, name, sizeof(name));
		missing += t_lookup(s, root, name) <= 0;
	}
	CHECK_EQ(missing, 0);
	name_of(NFILES, name, sizeof(name));
	CHECK(t_create(s, root, name, MDS_REG) > 0);
	mds_store_close(s);
}

static void test_capped(const char *path)
{
	struct mds_store_opts o = {.path = path, .map_size = 1 << 20, .map_max = 4 << 20};
	CHECK_EQ(mds_store_open(&o, &s), 0);
	root = mds_store_root(s);
	char name[256];
	int64_t rc = 0;
	int n = 0;
	while (n < 100000 && (rc = t_create(s, root, (name_of(n, name, sizeof(name)), name),
					    MDS_REG)) > 0)
		n++;
	struct mds_store_stats st;
	mds_store_stats(s, &st);
	printf("map capped at 4 MiB: %d creates, then %lld; map %llu MiB\n", n, (long long)rc,
	       (unsigned long long)(st.map_size >> 20));
	CHECK_EQ(rc, -ENOSPC);
	CHECK(n > 1000);
	CHECK_EQ(st.map_size, 4u << 20);
	/* full: reads go on; reopened with a higher cap, it takes more */
	name_of(0, name, sizeof(name));
	CHECK(t_lookup(s, root, name) > 0);
	mds_store_close(s);
	o.map_max = 8 << 20;
	CHECK_EQ(mds_store_open(&o, &s), 0);
	name_of(n, name, sizeof(name));
	CHECK(t_create(s, root, name, MDS_REG) > 0);
	name_of(0, name, sizeof(name));
	CHECK_EQ(t_remove(s, root, name), 0);
	CHECK_EQ(t_attr(s, root).size, n);
	mds_store_close(s);
}

int main(void)
{
	char path[4200];
	const char *dir = test_dir_make("store-map-grow");
	snprintf(path, sizeof(path), "%s/grow", dir);
	test_grow(path);
	snprintf(path, sizeof(path), "%s/capped", dir);
	test_capped(path);
	printf("store-map-grow: ok\n");
	return 0;
}
