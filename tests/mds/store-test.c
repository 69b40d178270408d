/* SPDX-License-Identifier: MIT */
/* Helpers for the metadata store tests (tests/mds/store-test.h). */
#include "config.h"

#include "tests/mds/store-test.h"

char test_dir[4096];

static int test_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void test_dir_cleanup(void)
{
	if (test_dir[0])
		nftw(test_dir, test_rm_one, 16, FTW_DEPTH | FTW_PHYS);
	test_dir[0] = 0;
}

const char *test_dir_make(const char *name)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(test_dir, sizeof(test_dir), "%s/braid-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp",
		 name);
	CHECK(mkdtemp(test_dir));
	atexit(test_dir_cleanup);
	return test_dir;
}

struct mds_store *test_open(const char *path, unsigned hash_bits)
{
	struct mds_store_opts o = {.path = path, .hash_bits = hash_bits, .map_size = 4ULL << 30};
	struct mds_store *s = NULL;
	int rc = mds_store_open(&o, &s);
	if (rc)
		fprintf(stderr, "mds_store_open(%s): %s\n", path, strerror(-rc));
	CHECK(rc == 0);
	return s;
}

double test_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int64_t t_create(struct mds_store *s, uint64_t dir, const char *name, int type)
{
	struct mds_create_args a = {.dir = dir,
				    .name = name,
				    .name_len = strlen(name),
				    .type = (uint8_t)type,
				    .mode = 0644};
	struct mds_create_res r;
	if (type == MDS_LNK) {
		a.symlink = "target";
		a.symlink_len = 6;
	}
	int rc = mds_dir_create(s, &a, &r);
	return rc ? rc : (int64_t)r.attr.ino;
}

int64_t t_lookup(struct mds_store *s, uint64_t dir, const char *name)
{
	uint64_t ino;
	int rc = mds_dir_lookup(s, dir, name, strlen(name), &ino, NULL);
	return rc ? rc : (int64_t)ino;
}

int t_remove(struct mds_store *s, uint64_t dir, const char *name)
{
	struct mds_remove_args a = {.dir = dir, .name = name, .name_len = strlen(name)};
	return mds_dir_remove(s, &a, NULL);
}

int t_rename(struct mds_store *s, uint64_t sd, const char *sn, uint64_t dd, const char *dn,
	     struct mds_rename_res *res)
{
	struct mds_rename_args a = {.src_dir = sd,
				    .src_name = sn,
				    .src_len = strlen(sn),
				    .dst_dir = dd,
				    .dst_name = dn,
				    .dst_len = strlen(dn)};
	return mds_dir_rename(s, &a, res);
}

struct mds_attr t_attr(struct mds_store *s, uint64_t ino)
{
	struct mds_attr a;
	CHECK_EQ(mds_inode_getattr(s, ino, &a), 0);
	return a;
}

int t_plan_step(struct mds_store *s, uint64_t dir, unsigned t, uint32_t k)
{
	char name[32], name2[32];
	if (k % 4 != 3) {
		snprintf(name, sizeof(name), "t%u-%u", t, k);
		int64_t ino = t_create(s, dir, name, MDS_REG);
		return ino > 0 ? 0 : (int)ino;
	}
	if (k % 8 == 3) {
		snprintf(name, sizeof(name), "t%u-%u", t, k - 2);
		return t_remove(s, dir, name);
	}
	snprintf(name, sizeof(name), "t%u-%u", t, k - 3);
	snprintf(name2, sizeof(name2), "u%u-%u", t, k - 3);
	return t_rename(s, dir, name, dir, name2, NULL);
}

void t_plan_apply(uint8_t *state, uint32_t k)
{
	if (k % 4 != 3)
		state[k] = T_NAME;
	else if (k % 8 == 3)
		state[k - 2] = T_ABSENT;
	else
		state[k - 3] = U_NAME;
}

void t_plan_seen(uint8_t *state, size_t maxk, unsigned nthreads, const struct mds_dirent *e)
{
	char buf[32];
	unsigned t, k;
	CHECK(e->name_len < sizeof(buf));
	memcpy(buf, e->name, e->name_len);
	buf[e->name_len] = 0;
	CHECK(buf[0] == 't' || buf[0] == 'u');
	CHECK(sscanf(buf + 1, "%u-%u", &t, &k) == 2);
	CHECK(t < nthreads && k < maxk);
	CHECK_EQ(state[t * maxk + k], T_ABSENT);
	state[t * maxk + k] = buf[0] == 't' ? T_NAME : U_NAME;
}

static void t_all_done(struct mds_op *op)
{
	sem_post(op->priv);
}

void t_run_all(struct mds_store *s, struct mds_op *ops, size_t n)
{
	sem_t sem;
	sem_init(&sem, 0, 0);
	for (size_t i = 0; i < n; i++) {
		ops[i].done = t_all_done;
		ops[i].priv = &sem;
		mds_store_submit(s, &ops[i]);
	}
	for (size_t i = 0; i < n; i++)
		while (sem_wait(&sem))
			;
	sem_destroy(&sem);
}
