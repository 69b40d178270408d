/* SPDX-License-Identifier: MIT */
/*
 * READDIR cookies (RFC 8881 §18.23): cookies are unique, never 0, 1 or 2,
 * below 2^63 and increasing along a walk; a walk paged by cookie while
 * other entries are added and removed between pages (including the entry
 * whose cookie the walk resumes from) returns every entry present for the
 * whole walk exactly once and no entry twice; entries keep their cookies;
 * the cookie verifier says NOT_SAME only for a verifier from another store;
 * replies fill a byte budget (maxcount) exactly, and a budget too small for
 * one entry returns none (NFS4ERR_TOOSMALL).
 */
#include "config.h"

#include "tests/mds/store-test.h"

#define NSTABLE	 3000
#define NVOL0	 1500 /* volatile names at the start */
#define NVOL_MAX 20000
#define NPAGE	 97

/* "s<i>" stay for the whole walk; "v<i>" come and go during it. */
struct ent {
	uint64_t cookie;
	int seen;
	bool present;
};
static struct ent stable[NSTABLE], vol[NVOL_MAX];

static struct ent *ent_of(const char *name, size_t len, bool *is_stable, int *idx)
{
	char buf[32];
	CHECK(len < sizeof(buf));
	memcpy(buf, name, len);
	buf[len] = 0;
	int i = atoi(buf + 1);
	*idx = i;
	*is_stable = buf[0] == 's';
	if (*is_stable) {
		CHECK(i >= 0 && i < NSTABLE);
		return &stable[i];
	}
	CHECK(buf[0] == 'v' && i >= 0 && i < NVOL_MAX);
	return &vol[i];
}

struct page {
	int n, max;
	uint64_t last;
	bool last_stable;
	int last_idx;
};

static int page_fn(void *arg, const struct mds_dirent *e)
{
	struct page *p = arg;
	bool st;
	int idx;
	if (p->n == p->max)
		return MDS_READDIR_FULL;
	CHECK(e->cookie > 2);
	CHECK(e->cookie < (1ULL << 63));
	CHECK(e->cookie > p->last); /* increasing along the walk */
	struct ent *x = ent_of(e->name, e->name_len, &st, &idx);
	x->seen++;
	if (st)
		CHECK_EQ(x->cookie, e->cookie); /* unchanged by other inserts/removes */
	p->last = e->cookie;
	p->last_stable = st;
	p->last_idx = idx;
	p->n++;
	return 0;
}

static int record_fn(void *arg, const struct mds_dirent *e)
{
	int *n = arg, idx;
	bool st;
	ent_of(e->name, e->name_len, &st, &idx)->cookie = e->cookie;
	(*n)++;
	return 0;
}

/* An NFSv4 entry4 on the wire: cookie, name (XDR padded), two attr words, next flag. */
static size_t entry4_size(const struct mds_dirent *e)
{
	return 8 + 4 + ((e->name_len + 3) & ~(size_t)3) + 4 + 4 + 8 + 4;
}

struct budget {
	size_t left, used, refused;
	uint64_t last;
};

static int budget_fn(void *arg, const struct mds_dirent *e)
{
	struct budget *b = arg;
	size_t need = entry4_size(e);
	if (need > b->left) {
		b->refused = need;
		return MDS_READDIR_FULL;
	}
	b->left -= need;
	b->used += need;
	b->last = e->cookie;
	return 0;
}

static void vname(char *buf, size_t size, char kind, int i)
{
	snprintf(buf, size, "%c%d", kind, i);
}

static void create_many(struct mds_store *s, uint64_t d, char kind, int from, int to)
{
	int n = to - from;
	struct mds_op *ops = calloc((size_t)n, sizeof(*ops));
	char(*names)[16] = calloc((size_t)n, 16);
	CHECK(ops && names);
	for (int i = 0; i < n; i++) {
		vname(names[i], 16, kind, from + i);
		ops[i].type = MDS_OP_CREATE;
		ops[i].args.create = (struct mds_create_args){
		    .dir = d, .name = names[i], .name_len = strlen(names[i]), .type = MDS_REG};
	}
	t_run_all(s, ops, (size_t)n);
	for (int i = 0; i < n; i++)
		CHECK_EQ(ops[i].status, 0);
	free(ops);
	free(names);
}

int main(void)
{
	const char *path = test_dir_make("cookies");
	struct mds_store *s = test_open(path, 0);
	uint64_t root = mds_store_root(s);
	uint64_t d = (uint64_t)t_create(s, root, "d", MDS_DIR);
	char name[32];
	bool eof;

	create_many(s, d, 's', 0, NSTABLE);
	create_many(s, d, 'v', 0, NVOL0);
	int nvol = NVOL0, vol_lo = 0;
	for (int i = 0; i < NVOL0; i++)
		vol[i].present = true;

	/* Each entry's cookie; all distinct. */
	int n = 0;
	CHECK_EQ(mds_dir_readdir(s, d, 0, 0, record_fn, &n, &eof), NSTABLE + NVOL0);
	CHECK(eof);

	/* The paged walk, with churn between pages. */
	uint8_t verf[8], zero[8] = {0};
	mds_store_cookieverf(s, verf);
	CHECK(memcmp(verf, zero, 8) != 0);
	struct page p = {.max = NPAGE};
	uint64_t cookie = 0;
	int pages = 0, resume_gone = 0;
	for (;;) {
		CHECK_EQ(mds_dir_cookie_check(s, cookie, verf), MDS_COOKIE_OK);
		p.n = 0;
		int got = mds_dir_readdir(s, d, cookie, 0, page_fn, &p, &eof);
		CHECK_EQ(got, p.n);
		pages++;
		if (eof)
			break;
		CHECK_EQ(got, NPAGE);
		cookie = p.last;
		/* The entry we resume after goes, when it may. */
		if (!p.last_stable) {
			vname(name, sizeof(name), 'v', p.last_idx);
			CHECK_EQ(t_remove(s, d, name), 0);
			vol[p.last_idx].present = false;
			resume_gone++;
		}
		/* 20 new names, and the 20 oldest volatile ones go. */
		CHECK(nvol + 20 <= NVOL_MAX);
		create_many(s, d, 'v', nvol, nvol + 20);
		for (int i = 0; i < 20; i++)
			vol[nvol++].present = true;
		for (int i = 0; i < 20; vol_lo++) {
			if (!vol[vol_lo].present)
				continue;
			vname(name, sizeof(name), 'v', vol_lo);
			CHECK_EQ(t_remove(s, d, name), 0);
			vol[vol_lo].present = false;
			i++;
		}
	}
	for (int i = 0; i < NSTABLE; i++)
		CHECK_EQ(stable[i].seen, 1);
	for (int i = 0; i < nvol; i++)
		CHECK(vol[i].seen <= 1);
	CHECK(resume_gone > 0);
	printf("walk: %d pages, %d names added, %d resumed after a removed entry\n", pages,
	       nvol - NVOL0, resume_gone);
	/* Stable entries kept their cookies through all of it. */
	static uint64_t saved[NSTABLE];
	for (int i = 0; i < NSTABLE; i++)
		saved[i] = stable[i].cookie;
	n = 0;
	CHECK(mds_dir_readdir(s, d, 0, 0, record_fn, &n, &eof) > 0);
	CHECK_EQ(n, (int)t_attr(s, d).size);
	for (int i = 0; i < NSTABLE; i++)
		CHECK_EQ(stable[i].cookie, saved[i]);

	/* Verifier and bad cookies. */
	CHECK_EQ(mds_dir_cookie_check(s, 0, zero), MDS_COOKIE_OK);
	CHECK_EQ(mds_dir_cookie_check(s, 0, NULL), MDS_COOKIE_OK);
	CHECK_EQ(mds_dir_cookie_check(s, 1, verf), MDS_COOKIE_BAD);
	CHECK_EQ(mds_dir_cookie_check(s, 2, verf), MDS_COOKIE_BAD);
	CHECK_EQ(mds_dir_cookie_check(s, 1023, verf), MDS_COOKIE_BAD);
	CHECK_EQ(mds_dir_cookie_check(s, 1ULL << 63, verf), MDS_COOKIE_BAD);
	CHECK_EQ(mds_dir_cookie_check(s, stable[0].cookie, verf), MDS_COOKIE_OK);
	CHECK_EQ(mds_dir_cookie_check(s, stable[0].cookie, zero), MDS_COOKIE_NOT_SAME);
	CHECK_EQ(mds_dir_readdir(s, d, 1, 0, page_fn, &p, &eof), -EINVAL);
	CHECK_EQ(mds_dir_readdir(s, d, 2, 0, page_fn, &p, &eof), -EINVAL);

	/* maxcount: each reply is as full as the budget allows. */
	struct budget b;
	int total = 0, replies = 0;
	cookie = 0;
	for (;;) {
		b = (struct budget){.left = 1000};
		int got = mds_dir_readdir(s, d, cookie, 0, budget_fn, &b, &eof);
		CHECK(got > 0);
		total += got;
		replies++;
		if (eof)
			break;
		CHECK(b.refused > b.left); /* the next entry really did not fit */
		CHECK(b.used + b.refused > 1000);
		cookie = b.last;
	}
	CHECK_EQ(total, (int)t_attr(s, d).size);
	CHECK(replies > 1);
	b = (struct budget){.left = 10};
	CHECK_EQ(mds_dir_readdir(s, d, 0, 0, budget_fn, &b, &eof), 0); /* TOOSMALL */
	CHECK(!eof);

	/* Resuming after the cookie of a removed entry. */
	uint64_t c0 = stable[10].cookie;
	vname(name, sizeof(name), 's', 10);
	CHECK_EQ(t_remove(s, d, name), 0);
	p = (struct page){.max = 1, .last = c0};
	CHECK_EQ(mds_dir_readdir(s, d, c0, 0, page_fn, &p, &eof), 1);
	CHECK(p.last > c0);

	/* An empty directory: eof at once. */
	uint64_t e = (uint64_t)t_create(s, root, "empty", MDS_DIR);
	p = (struct page){.max = 10};
	CHECK_EQ(mds_dir_readdir(s, e, 0, 0, page_fn, &p, &eof), 0);
	CHECK(eof);
	mds_store_close(s);
	printf("rfc8881-18.23-readdir-cookies: ok\n");
	return 0;
}
