/* SPDX-License-Identifier: MIT */
/*
 * Persistence across close and reopen: attributes, directory entries with
 * the same cookies and cookie verifier (RFC 8881 §18.23.3: cookies from
 * before a restart stay valid), symlink targets, xattrs, layout maps,
 * client records and orphans all survive; the boot count moves; inode
 * numbers are never reused; a new inode's generation is the new boot.
 */
#include "config.h"

#include "tests/mds/store-test.h"

#define NFILES 500

struct snap {
	int n;
	uint64_t cookie[NFILES + 8];
	uint64_t ino[NFILES + 8];
	char name[NFILES + 8][16];
};

static int snap_fn(void *arg, const struct mds_dirent *e)
{
	struct snap *sn = arg;
	CHECK(sn->n < NFILES + 8 && e->name_len < 16);
	sn->cookie[sn->n] = e->cookie;
	sn->ino[sn->n] = e->ino;
	memcpy(sn->name[sn->n], e->name, e->name_len);
	sn->name[sn->n][e->name_len] = 0;
	sn->n++;
	return 0;
}

static int orphan_fn(void *arg, const struct mds_attr *a)
{
	*(uint64_t *)arg = a->ino;
	return 0;
}

static int client_fn(void *arg, const void *owner, size_t len, const struct mds_client_rec *r)
{
	(*(int *)arg)++;
	CHECK(len == 6 && memcmp(owner, "client", 6) == 0);
	CHECK_EQ(r->clientid, 77);
	return 0;
}

static bool attr_eq(const struct mds_attr *a, const struct mds_attr *b)
{
	return a->ino == b->ino && a->type == b->type && a->mode == b->mode &&
	       a->nlink == b->nlink && a->uid == b->uid && a->gid == b->gid && a->size == b->size &&
	       a->space_used == b->space_used && a->change == b->change &&
	       a->generation == b->generation && a->parent == b->parent &&
	       a->mtime.sec == b->mtime.sec && a->mtime.nsec == b->mtime.nsec &&
	       a->ctime.sec == b->ctime.sec && a->ctime.nsec == b->ctime.nsec &&
	       a->atime.sec == b->atime.sec && a->btime.nsec == b->btime.nsec &&
	       memcmp(a->objkey, b->objkey, 16) == 0 && a->rdev_major == b->rdev_major &&
	       a->rdev_minor == b->rdev_minor;
}

int main(void)
{
	const char *path = test_dir_make("reopen");
	struct mds_store *s = test_open(path, 0);
	uint64_t root = mds_store_root(s);
	CHECK_EQ(mds_store_boot_count(s), 1);
	uint64_t d = (uint64_t)t_create(s, root, "d", MDS_DIR);
	uint64_t later = (uint64_t)t_create(s, root, "later", MDS_DIR);
	static struct mds_op ops[NFILES];
	static char names[NFILES][16];
	for (int i = 0; i < NFILES; i++) {
		snprintf(names[i], 16, "f%d", i);
		ops[i].type = MDS_OP_CREATE;
		ops[i].args.create = (struct mds_create_args){.dir = d,
							      .name = names[i],
							      .name_len = strlen(names[i]),
							      .type = MDS_REG,
							      .mode = 0600,
							      .uid = (uint32_t)i};
	}
	t_run_all(s, ops, NFILES);
	uint64_t lnk = (uint64_t)t_create(s, d, "lnk", MDS_LNK);
	uint64_t dev = (uint64_t)t_create(s, d, "dev", MDS_CHR);
	uint64_t f0 = (uint64_t)t_lookup(s, d, "f0");
	struct mds_link_args la = {.ino = f0, .dir = root, .name = "f0link", .name_len = 6};
	CHECK_EQ(mds_dir_link(s, &la, NULL), 0);
	struct mds_xattr_args xa = {
	    .ino = f0, .name = "user.k", .name_len = 6, .value = "val", .value_len = 3};
	CHECK_EQ(mds_xattr_set(s, &xa), 0);
	struct mds_layout_args lay = {.ino = f0, .seg = 9, .l = {.nds = 2, .ds = {3, 4}}};
	CHECK_EQ(mds_layout_set(s, &lay), 0);
	static struct mds_client_rec rec = {.clientid = 77, .data_len = 2, .data = "xy"};
	struct mds_client_args ca = {.owner = "client", .owner_len = 6, .rec = &rec};
	CHECK_EQ(mds_client_put(s, &ca), 0);
	uint64_t orphan = (uint64_t)t_lookup(s, d, "f1");
	CHECK_EQ(t_remove(s, d, "f1"), 0);

	static struct snap before, after;
	bool eof;
	CHECK_EQ(mds_dir_readdir(s, d, 0, 0, snap_fn, &before, &eof), NFILES + 1);
	static struct mds_attr attrs[NFILES + 8];
	for (int i = 0; i < before.n; i++)
		attrs[i] = t_attr(s, before.ino[i]);
	struct mds_attr root_a = t_attr(s, root), d_a = t_attr(s, d);
	uint8_t verf[8], verf2[8];
	mds_store_cookieverf(s, verf);
	uint64_t max_ino = 0;
	for (int i = 0; i < before.n; i++)
		if (before.ino[i] > max_ino)
			max_ino = before.ino[i];
	mds_store_close(s);

	for (int boot = 2; boot <= 3; boot++) {
		s = test_open(path, 0);
		CHECK_EQ(mds_store_boot_count(s), boot);
		CHECK_EQ(mds_store_root(s), root);
		mds_store_cookieverf(s, verf2);
		CHECK(memcmp(verf, verf2, 8) == 0);
		CHECK_EQ(mds_dir_cookie_check(s, before.cookie[7], verf), MDS_COOKIE_OK);
		memset(&after, 0, sizeof(after));
		CHECK_EQ(mds_dir_readdir(s, d, 0, 0, snap_fn, &after, &eof), NFILES + 1);
		CHECK(eof);
		for (int i = 0; i < before.n; i++) {
			CHECK_EQ(after.cookie[i], before.cookie[i]);
			CHECK_EQ(after.ino[i], before.ino[i]);
			CHECK(strcmp(after.name[i], before.name[i]) == 0);
			struct mds_attr a = t_attr(s, after.ino[i]);
			CHECK(attr_eq(&a, &attrs[i]));
			CHECK_EQ(t_lookup(s, d, after.name[i]), (int64_t)after.ino[i]);
		}
		/* Resuming a walk with a cookie from the previous boot. */
		struct snap part = {0};
		CHECK_EQ(mds_dir_readdir(s, d, before.cookie[99], 0, snap_fn, &part, &eof),
			 NFILES + 1 - 100);
		CHECK_EQ(part.cookie[0], before.cookie[100]);
		struct mds_attr ra = t_attr(s, root), da = t_attr(s, d);
		CHECK(attr_eq(&ra, &root_a));
		CHECK(attr_eq(&da, &d_a));
		char buf[16];
		size_t len;
		CHECK_EQ(mds_inode_readlink(s, lnk, buf, sizeof(buf), &len), 0);
		CHECK(len == 6 && memcmp(buf, "target", 6) == 0);
		CHECK_EQ(t_attr(s, dev).type, MDS_CHR);
		CHECK_EQ(t_lookup(s, root, "f0link"), (int64_t)f0);
		CHECK_EQ(t_attr(s, f0).nlink, 2);
		CHECK_EQ(mds_xattr_get(s, f0, "user.k", 6, buf, sizeof(buf), &len), 0);
		CHECK(len == 3 && memcmp(buf, "val", 3) == 0);
		struct mds_layout_seg l;
		CHECK_EQ(mds_layout_get(s, f0, 9, &l), 0);
		CHECK(l.nds == 2 && l.ds[0] == 3 && l.ds[1] == 4);
		int nclients = 0;
		CHECK_EQ(mds_client_list(s, client_fn, &nclients), 0);
		CHECK_EQ(nclients, 1);
		uint64_t o = 0;
		CHECK_EQ(mds_orphan_list(s, orphan_fn, &o), 0);
		CHECK_EQ(o, orphan);
		CHECK_EQ(t_attr(s, orphan).nlink, 0);

		/* New inodes: never a number used before; generation = this boot. */
		char nn[16];
		snprintf(nn, sizeof(nn), "new%d", boot);
		int64_t ni = t_create(s, later, nn, MDS_REG);
		CHECK(ni > (int64_t)max_ino);
		max_ino = (uint64_t)ni;
		CHECK_EQ(t_attr(s, (uint64_t)ni).generation, boot);
		mds_store_close(s);
	}
	printf("store-reopen: ok\n");
	return 0;
}
