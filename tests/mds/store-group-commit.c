/* SPDX-License-Identifier: MIT */
/*
 * Group commit: 8 threads each doing 300 synchronous changes share
 * syncs (fewer fdatasync()s than ops, batches of more than one op); in
 * one batch, ops that fail for a protocol reason do not affect the
 * others; and an op that fails after writing (the map is full) fails
 * alone: the batch is redone one op per transaction and everything else
 * in it commits.  An applied_only op (LAYOUTCOMMIT's size) is visible when
 * it returns, and the writer's idle sync still makes it durable: it
 * survives a close and reopen.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>

#include "tests/mds/store-test.h"

#define NTHREADS 8
#define NOPS	 250

static struct mds_store *s;
static uint64_t root;
static _Atomic int errors;
static _Atomic uint64_t changes; /* ops submitted by the workers */

static void *worker_main(void *arg)
{
	int id = (int)(intptr_t)arg;
	char name[32];
	snprintf(name, sizeof(name), "dir%d", id);
	int64_t d = t_create(s, root, name, MDS_DIR);
	atomic_fetch_add(&changes, 1);
	if (d < 0) {
		atomic_fetch_add(&errors, 1);
		return NULL;
	}
	for (int i = 1; i < NOPS; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		int rc;
		if (i % 5 == 4) {
			rc = t_remove(s, (uint64_t)d, name) == -ENOENT ? 0 : -1;
			snprintf(name, sizeof(name), "f%d", i - 1);
			struct mds_setattr_args sa = {.ino =
							  (uint64_t)t_lookup(s, (uint64_t)d, name),
						      .mask = MDS_SET_MODE,
						      .mode = 0600};
			if (!rc)
				rc = mds_inode_setattr(s, &sa, NULL);
			atomic_fetch_add(&changes, 2);
		} else {
			rc = t_create(s, (uint64_t)d, name, MDS_REG) > 0 ? 0 : -1;
			atomic_fetch_add(&changes, 1);
		}
		if (rc)
			atomic_fetch_add(&errors, 1);
	}
	return NULL;
}

static void test_shared_syncs(const char *path)
{
	s = test_open(path, 0);
	root = mds_store_root(s);
	struct mds_store_stats a, b;
	mds_store_stats(s, &a);
	pthread_t th[NTHREADS];
	double t0 = test_now();
	for (int i = 0; i < NTHREADS; i++)
		CHECK_EQ(pthread_create(&th[i], NULL, worker_main, (void *)(intptr_t)i), 0);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	double t1 = test_now();
	mds_store_stats(s, &b);
	CHECK_EQ(atomic_load(&errors), 0);
	uint64_t ops = b.ops - a.ops, syncs = b.syncs - a.syncs;
	printf("%d threads, synchronous ops: %llu ops, %llu fdatasyncs, %llu batches, "
	       "largest %llu, %.0f ops/s\n",
	       NTHREADS, (unsigned long long)ops, (unsigned long long)syncs,
	       (unsigned long long)(b.batches - a.batches), (unsigned long long)b.max_batch,
	       ops / (t1 - t0));
	CHECK_EQ(ops, atomic_load(&changes));
	CHECK(syncs < ops);
	CHECK(b.max_batch > 1);
	CHECK_EQ(b.fallbacks, 0);
	mds_store_close(s);
}

/* Protocol errors inside one batch touch nobody else. */
static void test_mixed_batch(const char *path)
{
	s = test_open(path, 0);
	root = mds_store_root(s);
	static struct mds_op ops[6];
	static const char *names[6] = {"m1", "m1", "m2", "nope", "m3", "m2"};
	for (int i = 0; i < 6; i++) {
		ops[i] = (struct mds_op){.type = MDS_OP_CREATE};
		ops[i].args.create = (struct mds_create_args){
		    .dir = root, .name = names[i], .name_len = strlen(names[i]), .type = MDS_REG};
	}
	ops[3].type = MDS_OP_REMOVE;
	ops[3].args.remove = (struct mds_remove_args){.dir = root, .name = "nope", .name_len = 4};
	ops[5].type = MDS_OP_RENAME;
	ops[5].args.rename = (struct mds_rename_args){.src_dir = root,
						      .src_name = "m2",
						      .src_len = 2,
						      .dst_dir = root,
						      .dst_name = "m9",
						      .dst_len = 2};
	t_run_all(s, ops, 6);
	CHECK_EQ(ops[0].status, 0);
	CHECK_EQ(ops[1].status, -EEXIST);
	CHECK_EQ(ops[2].status, 0);
	CHECK_EQ(ops[3].status, -ENOENT);
	CHECK_EQ(ops[4].status, 0);
	CHECK_EQ(ops[5].status, 0);
	CHECK(t_lookup(s, root, "m1") > 0);
	CHECK_EQ(t_lookup(s, root, "m2"), -ENOENT);
	CHECK(t_lookup(s, root, "m3") > 0);
	CHECK_EQ(t_lookup(s, root, "m9"), (int64_t)ops[2].res.create.attr.ino);
	mds_store_close(s);
}

/*
 * An op failing after it wrote (MDB_MAP_FULL) fails alone.  The map is
 * filled with 32 KiB xattrs, two are removed (room for small ops, not for
 * a 64 KiB value), then one batch mixes creates with 64 KiB xattrs.
 */
static void test_fallback(const char *path)
{
	/* a map that never grows (store-map-grow tests growing) */
	struct mds_store_opts o = {.path = path, .map_size = 1 << 20, .map_max = 1 << 20};
	CHECK_EQ(mds_store_open(&o, &s), 0);
	root = mds_store_root(s);
	uint64_t f = (uint64_t)t_create(s, root, "f", MDS_REG);
	static char big[MDS_XATTR_VALUE_MAX];
	char xn[16];
	memset(big, 'x', sizeof(big));
	int nfill = 0, rc;
	do {
		snprintf(xn, sizeof(xn), "fill%d", nfill++);
		struct mds_xattr_args xa = {
		    .ino = f, .name = xn, .name_len = strlen(xn), .value = big, .value_len = 32768};
		rc = mds_xattr_set(s, &xa);
	} while (rc == 0 && nfill < 100);
	CHECK_EQ(rc, -ENOSPC);
	for (int i = 0; i < 2; i++) {
		snprintf(xn, sizeof(xn), "fill%d", i);
		struct mds_xattr_args xa = {.ino = f, .name = xn, .name_len = strlen(xn)};
		CHECK_EQ(mds_xattr_remove(s, &xa), 0);
	}
	/* Pages freed by a transaction are reused two transactions later. */
	CHECK(t_create(s, root, "pad0", MDS_REG) > 0);
	CHECK(t_create(s, root, "pad1", MDS_REG) > 0);

	enum { N = 9 };
	static struct mds_op ops[N];
	static char names[N][16];
	struct mds_store_stats st0, st;
	mds_store_stats(s, &st0);
	for (int i = 0; i < N; i++) {
		snprintf(names[i], 16, "x%d", i);
		if (i % 2) {
			ops[i] = (struct mds_op){.type = MDS_OP_XATTR_SET};
			ops[i].args.xattr = (struct mds_xattr_args){.ino = f,
								    .name = names[i],
								    .name_len = strlen(names[i]),
								    .value = big,
								    .value_len = sizeof(big)};
		} else {
			ops[i] = (struct mds_op){.type = MDS_OP_CREATE};
			ops[i].args.create = (struct mds_create_args){.dir = root,
								      .name = names[i],
								      .name_len = strlen(names[i]),
								      .type = MDS_REG};
		}
	}
	t_run_all(s, ops, N);
	int full = 0;
	for (int i = 0; i < N; i++) {
		if (i % 2 == 0) {
			CHECK_EQ(ops[i].status, 0);
			CHECK_EQ(t_lookup(s, root, names[i]), (int64_t)ops[i].res.create.attr.ino);
		} else if (ops[i].status) {
			CHECK_EQ(ops[i].status, -ENOSPC);
			full++;
		}
	}
	mds_store_stats(s, &st);
	printf("1 MiB map: %d of %d 64 KiB xattrs refused (-ENOSPC), creates in the same "
	       "batch all made; %llu fallbacks\n",
	       full, N / 2, (unsigned long long)(st.fallbacks - st0.fallbacks));
	CHECK(full > 0);
	CHECK(st.fallbacks > st0.fallbacks);
	/* Still consistent after a reopen. */
	CHECK_EQ(t_attr(s, root).size, 3 + (N + 1) / 2);
	mds_store_close(s);
	CHECK_EQ(mds_store_open(&o, &s), 0);
	CHECK_EQ(t_attr(s, root).size, 3 + (N + 1) / 2);
	for (int i = 0; i < N; i += 2)
		CHECK_EQ(t_lookup(s, root, names[i]), (int64_t)ops[i].res.create.attr.ino);
	mds_store_close(s);
}

static void test_applied_only(const char *path)
{
	struct mds_store_opts o = {.path = path};
	CHECK_EQ(mds_store_open(&o, &s), 0);
	root = mds_store_root(s);
	int64_t f = t_create(s, root, "lc", MDS_REG);
	CHECK(f > 0);
	struct mds_store_stats a, b;
	mds_store_stats(s, &a);
	struct mds_setattr_args sa = {.ino = (uint64_t)f, .mask = MDS_SET_SIZE_MAX, .size = 12345};
	struct mds_setattr_res sr;
	CHECK_EQ(mds_inode_setattr_applied(s, &sa, &sr), 0);
	CHECK(sr.attr.size == 12345 && sr.old_size == 0);
	CHECK_EQ(t_attr(s, (uint64_t)f).size, 12345); /* visible once it returns */
	/* the idle sync follows though nothing waits for it: commit + sync */
	double t0 = test_now();
	for (;;) {
		mds_store_stats(s, &b);
		if (b.syncs - a.syncs >= 2)
			break;
		CHECK(test_now() - t0 < 10.0);
		usleep(1000);
	}
	CHECK_EQ(b.ops - a.ops, 1);
	mds_store_close(s);
	CHECK_EQ(mds_store_open(&o, &s), 0);
	CHECK_EQ(t_attr(s, (uint64_t)f).size, 12345);
	mds_store_close(s);
}

int main(void)
{
	const char *path = test_dir_make("group-commit");
	char p[4200];
	snprintf(p, sizeof(p), "%s/a", path);
	test_shared_syncs(p);
	snprintf(p, sizeof(p), "%s/b", path);
	test_mixed_batch(p);
	snprintf(p, sizeof(p), "%s/c", path);
	test_fallback(p);
	snprintf(p, sizeof(p), "%s/d", path);
	test_applied_only(p);
	printf("store-group-commit: ok\n");
	return 0;
}
