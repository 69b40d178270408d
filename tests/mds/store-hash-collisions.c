/* SPDX-License-Identifier: MIT */
/*
 * Forced hash collisions through the test hook (a 4-bit name hash: 15
 * buckets for hundreds of names): lookups, EEXIST and rename within
 * crowded buckets; removing entries in the middle of a bucket renumbers
 * nobody; a new name takes the lowest free collision index; paged readdir
 * across crowded buckets returns each entry once; a full bucket (1-bit
 * hash, 1024 names) says -ENOSPC; the hash width is fixed at creation.
 */
#include "config.h"

#include "tests/mds/store-test.h"

#define N    400
#define NMAX (N + 100)

static uint64_t cookie_of[NMAX];

struct pager {
	int left;
	uint64_t last;
	int n;
};

/* Records each "f<i>" entry's cookie; an entry seen twice fails. */
static int page_fn(void *arg, const struct mds_dirent *e)
{
	struct pager *pg = arg;
	char buf[16];
	if (pg->left == 0)
		return MDS_READDIR_FULL;
	CHECK(e->name_len < sizeof(buf));
	memcpy(buf, e->name, e->name_len);
	buf[e->name_len] = 0;
	int i = atoi(buf + 1);
	CHECK(buf[0] == 'f' && i >= 0 && i < NMAX);
	CHECK_EQ(cookie_of[i], 0);
	CHECK(e->cookie > pg->last);
	cookie_of[i] = e->cookie;
	uint64_t bucket = e->cookie >> 10;
	CHECK(bucket >= 1 && bucket < 16);
	pg->last = e->cookie;
	pg->left--;
	pg->n++;
	return 0;
}

/* A paged walk of 'page' entries per reply; returns the number of entries. */
static int walk(struct mds_store *s, uint64_t d, int page)
{
	memset(cookie_of, 0, sizeof(cookie_of));
	uint64_t cookie = 0;
	int total = 0;
	bool eof = false;
	while (!eof) {
		struct pager pg = {.left = page, .last = cookie};
		int got = mds_dir_readdir(s, d, cookie, 0, page_fn, &pg, &eof);
		CHECK_EQ(got, pg.n);
		CHECK(got > 0 || eof);
		total += got;
		cookie = pg.last;
	}
	return total;
}

static void fname(char *buf, int i)
{
	snprintf(buf, 16, "f%d", i);
}

static void create_range(struct mds_store *s, uint64_t d, int from, int to, int expect)
{
	int n = to - from;
	struct mds_op *ops = calloc((size_t)n, sizeof(*ops));
	char(*names)[16] = calloc((size_t)n, 16);
	CHECK(ops && names);
	for (int i = 0; i < n; i++) {
		fname(names[i], from + i);
		ops[i].type = MDS_OP_CREATE;
		ops[i].args.create = (struct mds_create_args){
		    .dir = d, .name = names[i], .name_len = strlen(names[i]), .type = MDS_REG};
	}
	t_run_all(s, ops, (size_t)n);
	for (int i = 0; i < n; i++)
		CHECK_EQ(ops[i].status, expect);
	free(ops);
	free(names);
}

int main(void)
{
	const char *path = test_dir_make("collide");
	char p4[4200], p1[4200], name[16];
	snprintf(p4, sizeof(p4), "%s/h4", path);
	snprintf(p1, sizeof(p1), "%s/h1", path);
	struct mds_store *s = test_open(p4, 4);
	uint64_t root = mds_store_root(s);
	uint64_t d = (uint64_t)t_create(s, root, "d", MDS_DIR);

	create_range(s, d, 0, N, 0);
	CHECK_EQ(walk(s, d, 7), N);
	static uint64_t before[NMAX];
	memcpy(before, cookie_of, sizeof(before));
	/* Crowded buckets: many entries share one; indices count up from 0. */
	int max_idx = 0;
	for (int i = 0; i < N; i++)
		if ((int)(before[i] & 1023) > max_idx)
			max_idx = (int)(before[i] & 1023);
	CHECK(max_idx >= 10);
	for (int i = 0; i < N; i++) {
		fname(name, i);
		CHECK(t_lookup(s, d, name) > 0);
	}
	fname(name, 123);
	CHECK_EQ(t_create(s, d, name, MDS_REG), -EEXIST);
	CHECK_EQ(t_lookup(s, d, "f99999"), -ENOENT);

	/* Remove from the middle of buckets: index 1 of each and every 5th entry. */
	int removed = 0;
	static bool gone[NMAX];
	uint64_t freed[16] = {0};
	for (int i = 0; i < N; i++) {
		if ((before[i] & 1023) == 1 || i % 5 == 0) {
			fname(name, i);
			CHECK_EQ(t_remove(s, d, name), 0);
			gone[i] = true;
			removed++;
			if ((before[i] & 1023) == 1)
				freed[before[i] >> 10] = before[i];
		}
	}
	CHECK_EQ(walk(s, d, 11), N - removed);
	for (int i = 0; i < N; i++) {
		fname(name, i);
		if (gone[i]) {
			CHECK_EQ(cookie_of[i], 0);
			CHECK_EQ(t_lookup(s, d, name), -ENOENT);
		} else {
			CHECK_EQ(cookie_of[i], before[i]); /* nobody renumbered */
			CHECK(t_lookup(s, d, name) > 0);
		}
	}

	/* New names fill the lowest free index of their bucket. */
	create_range(s, d, N, NMAX, 0);
	CHECK_EQ(walk(s, d, 13), NMAX - removed);
	for (int i = N; i < NMAX; i++) {
		uint64_t bucket = cookie_of[i] >> 10, idx = cookie_of[i] & 1023;
		/* Every index below it in the bucket is taken. */
		for (uint64_t j = 0; j < idx; j++) {
			bool taken = false;
			for (int k = 0; k < NMAX && !taken; k++)
				taken = cookie_of[k] == (bucket << 10 | j);
			CHECK(taken);
		}
	}
	/* ...so a hole left by a removal is refilled (the first new name of its bucket). */
	int reused = 0;
	for (int k = 0; k < 16; k++)
		for (int i = N; i < NMAX && freed[k]; i++)
			reused += cookie_of[i] == freed[k];
	printf("holes reused: %d\n", reused);

	/* Rename within and between crowded buckets. */
	struct mds_rename_res rr;
	int a = -1, b = -1;
	for (int i = 0; i < N && (a < 0 || b < 0); i++) {
		if (gone[i])
			continue;
		if (a < 0)
			a = i;
		else if ((before[i] >> 10) == (before[a] >> 10))
			b = i;
	}
	CHECK(a >= 0 && b >= 0);
	char na[16], nb[16];
	fname(na, a);
	fname(nb, b);
	int64_t ib = t_lookup(s, d, nb);
	CHECK_EQ(t_rename(s, d, nb, d, na, &rr), 0); /* same bucket, replaces */
	CHECK(rr.replaced);
	CHECK_EQ(t_lookup(s, d, na), ib);
	CHECK_EQ(t_lookup(s, d, nb), -ENOENT);
	CHECK_EQ(t_rename(s, d, na, d, "moved", &rr), 0);
	CHECK_EQ(t_lookup(s, d, "moved"), ib);
	CHECK_EQ(t_rename(s, d, "moved", d, nb, &rr), 0);
	CHECK_EQ(t_lookup(s, d, nb), ib);
	CHECK_EQ(t_attr(s, d).size, (uint64_t)(NMAX - removed - 1));

	/* The width is fixed at creation. */
	mds_store_close(s);
	struct mds_store_opts o = {.path = p4, .hash_bits = 5};
	struct mds_store *bad = NULL;
	CHECK_EQ(mds_store_open(&o, &bad), -EINVAL);
	s = test_open(p4, 0); /* 0: what the store was made with */
	fname(name, N + 5);
	CHECK(t_lookup(s, d, name) > 0);
	CHECK_EQ(mds_dir_cookie_check(s, 16ULL << 10, NULL), MDS_COOKIE_BAD);
	mds_store_close(s);

	/* A 1-bit hash puts every name in one bucket: 1024 fit, then -ENOSPC. */
	s = test_open(p1, 1);
	d = (uint64_t)t_create(s, mds_store_root(s), "d", MDS_DIR);
	create_range(s, d, 0, 1024, 0);
	CHECK_EQ(t_create(s, d, "one-more", MDS_REG), -ENOSPC);
	CHECK_EQ(t_remove(s, d, "f500"), 0);
	CHECK(t_create(s, d, "one-more", MDS_REG) > 0);
	CHECK_EQ(t_lookup(s, d, "one-more") > 0, 1);
	CHECK_EQ(mds_dir_cookie_check(s, 1ULL << 10 | 500, NULL), MDS_COOKIE_NOT_SAME);
	uint8_t verf[8];
	mds_store_cookieverf(s, verf);
	CHECK_EQ(mds_dir_cookie_check(s, 2ULL << 10, verf), MDS_COOKIE_BAD);
	mds_store_close(s);
	printf("store-hash-collisions: ok (largest collision index %d)\n", max_idx);
	return 0;
}
