/* SPDX-License-Identifier: MIT */
/*
 * Ordered name buckets (mds_name_bucket(), store.h): a new store puts a
 * name's last run of digits in the low bits of its bucket, so names that
 * differ only in that number are neighbours in the B-tree (a directory
 * filled in numeric order appends instead of writing a random leaf per
 * name) and READDIR returns them in numeric order, whatever order they
 * were made in.  Names of every other shape (no digits, a run longer than
 * ten digits, leading zeros, several runs, the longest name) are found,
 * listed once and removed like any other.  A store made before ordered
 * buckets (no name_order in its meta) keeps its plain hash across
 * reopens, and every entry it made is still found; a format this
 * binary does not know is refused.
 */
#include "config.h"

#include <lmdb.h>

#include "tests/mds/store-test.h"

#define N 1000

struct listing {
	int n, left;
	char names[N + 64][MDS_NAME_MAX + 1];
	uint64_t cookies[N + 64];
};

static int list_fn(void *arg, const struct mds_dirent *e)
{
	struct listing *l = arg;
	if (l->left-- == 0)
		return MDS_READDIR_FULL;
	CHECK(l->n < N + 64);
	CHECK(e->name_len <= MDS_NAME_MAX);
	memcpy(l->names[l->n], e->name, e->name_len);
	l->names[l->n][e->name_len] = 0;
	l->cookies[l->n] = e->cookie;
	l->n++;
	return 0;
}

/* The whole directory, in pages of 7 entries (chained cookies). */
static void list_dir(struct mds_store *s, uint64_t d, struct listing *l)
{
	l->n = 0;
	uint64_t cookie = 0;
	bool eof = false;
	while (!eof) {
		int before = l->n;
		l->left = 7;
		int rc = mds_dir_readdir(s, d, cookie, 0, list_fn, l, &eof);
		CHECK(rc >= 0);
		if (l->n > before)
			cookie = l->cookies[l->n - 1];
		CHECK(eof || l->n > before);
	}
}

/* A permutation of 0..N-1 (multiplier coprime to N). */
static int shuffled(int i)
{
	return (int)((i * 7919L + 13) % N);
}

static void make_images(struct mds_store *s, uint64_t d, int n)
{
	char name[32];
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "img_%06d.jpg", shuffled(i));
		CHECK(t_create(s, d, name, MDS_REG) > 0);
	}
}

/* How many neighbours in the listing are out of numeric order. */
static int inversions(const struct listing *l)
{
	int inv = 0;
	for (int i = 1; i < l->n; i++)
		inv += atoi(l->names[i] + 4) < atoi(l->names[i - 1] + 4);
	return inv;
}

/* Sets one little-endian meta value, as an older or newer binary would have. */
static void meta_set(const char *path, const char *key, uint64_t val)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	CHECK_EQ(mdb_env_create(&env), 0);
	CHECK_EQ(mdb_env_set_maxdbs(env, 12), 0);
	CHECK_EQ(mdb_env_set_mapsize(env, 4ULL << 30), 0);
	CHECK_EQ(mdb_env_open(env, path, 0, 0600), 0);
	CHECK_EQ(mdb_txn_begin(env, NULL, 0, &txn), 0);
	CHECK_EQ(mdb_dbi_open(txn, "meta", 0, &dbi), 0);
	MDB_val k = {strlen(key), (void *)key};
	uint8_t b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(val >> (8 * i));
	MDB_val v = {8, b};
	CHECK_EQ(mdb_put(txn, dbi, &k, &v, 0), 0);
	CHECK_EQ(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

static struct listing lst;

int main(void)
{
	const char *path = test_dir_make("nameorder");
	char pnew[4200], pold[4200], name[MDS_NAME_MAX + 1];
	snprintf(pnew, sizeof(pnew), "%s/new", path);
	snprintf(pold, sizeof(pold), "%s/old", path);

	/* 1. A new store: READDIR in numeric order, neighbours in adjacent buckets. */
	struct mds_store *s = test_open(pnew, 0);
	uint64_t d = (uint64_t)t_create(s, mds_store_root(s), "train", MDS_DIR);
	make_images(s, d, N);
	list_dir(s, d, &lst);
	CHECK_EQ(lst.n, N);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "img_%06d.jpg", i);
		CHECK(strcmp(lst.names[i], name) == 0);
		if (i)
			CHECK_EQ(lst.cookies[i] - lst.cookies[i - 1], 1ULL << 10);
	}

	/* 2. Every other shape of name. */
	static const char *odd[] = {
	    "nodigits", "f1", "f01", "f001", "1", "01", "0", "a1b2", "a1b3", "a2b2", "ab1c",
	    "a1bc", "x1234567890", "x12345678901", "9999999999", "0000000000", "99999999999",
	    "img_000041.jpg", /* also made by step 1 */
	    "img_41.jpg", "img_000041.png", "img_000041.jpg.1", "run-7-of-1024", "run-8-of-1024",
	};
	size_t nodd = sizeof(odd) / sizeof(odd[0]);
	int64_t ino[sizeof(odd) / sizeof(odd[0]) + 1];
	for (size_t i = 0; i < nodd; i++) {
		int64_t r = t_create(s, d, odd[i], MDS_REG);
		if (!strcmp(odd[i], "img_000041.jpg"))
			CHECK_EQ(r, -EEXIST);
		else
			CHECK(r > 0);
	}
	memset(name, 'n', MDS_NAME_MAX);
	memcpy(name + MDS_NAME_MAX - 10, "0123456789", 10);
	name[MDS_NAME_MAX] = 0;
	CHECK(t_create(s, d, name, MDS_REG) > 0);
	for (size_t i = 0; i < nodd; i++) {
		ino[i] = t_lookup(s, d, odd[i]);
		CHECK(ino[i] > 0);
		for (size_t j = 0; j < i; j++)
			CHECK(ino[j] != ino[i]);
	}
	ino[nodd] = t_lookup(s, d, name);
	CHECK(ino[nodd] > 0);
	CHECK_EQ(t_lookup(s, d, "f0001"), -ENOENT);
	CHECK_EQ(t_lookup(s, d, "img_000041.jp"), -ENOENT);
	list_dir(s, d, &lst);
	CHECK_EQ(lst.n, N + (int)nodd);
	for (size_t i = 0; i < nodd; i++) {
		int seen = 0;
		for (int j = 0; j < lst.n; j++)
			seen += strcmp(lst.names[j], odd[i]) == 0;
		CHECK_EQ(seen, 1);
	}
	for (size_t i = 0; i < nodd; i++)
		if (strcmp(odd[i], "img_000041.jpg"))
			CHECK_EQ(t_remove(s, d, odd[i]), 0);
	CHECK_EQ(t_remove(s, d, name), 0);
	list_dir(s, d, &lst);
	CHECK_EQ(lst.n, N);
	CHECK_EQ(inversions(&lst), 0);
	mds_store_close(s);

	/* 3. A store from before ordered buckets (format 1) keeps its plain hash. */
	s = test_open(pold, 0);
	mds_store_close(s);
	meta_set(pold, "format", 1);
	s = test_open(pold, 0);
	d = (uint64_t)t_create(s, mds_store_root(s), "train", MDS_DIR);
	make_images(s, d, N);
	list_dir(s, d, &lst);
	CHECK_EQ(lst.n, N);
	int inv_old = inversions(&lst);
	CHECK(inv_old > N / 4); /* hash order: about half the neighbours */
	mds_store_close(s);
	s = test_open(pold, 0);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "img_%06d.jpg", i);
		CHECK(t_lookup(s, d, name) > 0);
	}
	CHECK(t_create(s, d, "img_001000.jpg", MDS_REG) > 0);
	list_dir(s, d, &lst);
	CHECK_EQ(lst.n, N + 1);
	CHECK(inversions(&lst) > N / 4);
	mds_store_close(s);

	/* 4. A format this binary does not know is refused. */
	meta_set(pold, "format", 3);
	struct mds_store_opts o = {.path = pold, .map_size = 4ULL << 30};
	struct mds_store *bad = NULL;
	CHECK_EQ(mds_store_open(&o, &bad), -EPROTO);
	/* ...and so is format 2 with a hash narrower than 53 bits */
	meta_set(pold, "format", 2);
	meta_set(pold, "hash_bits", 20);
	CHECK_EQ(mds_store_open(&o, &bad), -EINVAL);

	printf("store-name-order: ok (plain hash: %d of %d neighbours out of order)\n", inv_old,
	       N - 1);
	return 0;
}
