/* SPDX-License-Identifier: MIT */
/*
 * Every metadata store operation and its error cases: create of each type
 * (GUARDED, UNCHECKED, EXCLUSIVE4_1 - RFC 8881 §18.16.3), lookup, remove
 * (nlink, orphans and reap), link, getattr/setattr (change and ctime),
 * readlink, xattrs (RFC 8276), layout maps, client records, and an op
 * submitted asynchronously.  Also the SipHash-2-4 reference vectors.
 */
#include "config.h"

#include <semaphore.h>

#include "mds/store_impl.h"
#include "tests/mds/store-test.h"

static void test_siphash(void)
{
	/* Reference vectors: key 00..0f, messages 00..(n-1). */
	uint8_t kb[16], msg[64];
	for (int i = 0; i < 16; i++)
		kb[i] = (uint8_t)i;
	for (int i = 0; i < 64; i++)
		msg[i] = (uint8_t)i;
	uint64_t key[2] = {get_le64(kb), get_le64(kb + 8)};
	CHECK(mds_siphash24(key, msg, 0) == 0x726fdb47dd0e0e31ULL);
	CHECK(mds_siphash24(key, msg, 1) == 0x74f839c593dc67fdULL);
	CHECK(mds_siphash24(key, msg, 8) == 0x93f5f5799a932462ULL);
	CHECK(mds_siphash24(key, msg, 15) == 0xa129ca6149be45e5ULL);
	CHECK(mds_siphash24(key, msg, 63) == 0x958a324ceb064572ULL);
}

static void test_root(struct mds_store *s)
{
	uint64_t root = mds_store_root(s);
	struct mds_attr a = t_attr(s, root);
	CHECK_EQ(a.type, MDS_DIR);
	CHECK_EQ(a.nlink, 2);
	CHECK_EQ(a.parent, root);
	CHECK_EQ(a.size, 0);
	CHECK_EQ(mds_store_boot_count(s), 1);
}

static void test_create(struct mds_store *s, uint64_t root)
{
	static const struct {
		const char *name;
		int type;
	} types[] = {
	    {"reg", MDS_REG}, {"dir", MDS_DIR},	  {"lnk", MDS_LNK},   {"blk", MDS_BLK},
	    {"chr", MDS_CHR}, {"sock", MDS_SOCK}, {"fifo", MDS_FIFO},
	};
	uint64_t d = (uint64_t)t_create(s, root, "c", MDS_DIR);
	CHECK(t_create(s, root, "c", MDS_DIR) == -EEXIST);
	struct mds_attr da = t_attr(s, d);
	CHECK_EQ(da.parent, root);
	CHECK_EQ(t_attr(s, root).nlink, 3);
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct mds_create_args a = {
		    .dir = d,
		    .name = types[i].name,
		    .name_len = strlen(types[i].name),
		    .type = (uint8_t)types[i].type,
		    .mode = 0100640,
		    .uid = 7,
		    .gid = 8,
		    .rdev_major = 9,
		    .rdev_minor = 10,
		    .symlink = "../some/where",
		    .symlink_len = 13,
		};
		struct mds_create_res r;
		uint64_t before = t_attr(s, d).change;
		CHECK_EQ(mds_dir_create(s, &a, &r), 0);
		CHECK(!r.existed);
		CHECK_EQ(r.cinfo.before, before);
		CHECK_EQ(r.cinfo.after, before + 1);
		CHECK_EQ(t_attr(s, d).change, r.cinfo.after);
		struct mds_attr x = t_attr(s, r.attr.ino);
		CHECK_EQ(x.type, types[i].type);
		CHECK_EQ(x.mode, 0640); /* permission bits only */
		CHECK_EQ(x.uid, 7);
		CHECK_EQ(x.gid, 8);
		CHECK_EQ(x.nlink, types[i].type == MDS_DIR ? 2 : 1);
		CHECK_EQ(x.change, 1);
		CHECK_EQ(x.generation, 1);
		CHECK(x.ctime.sec > 0 && x.btime.sec == x.ctime.sec);
		CHECK(memcmp(x.objkey, r.attr.objkey, 16) == 0);
		if (types[i].type == MDS_BLK || types[i].type == MDS_CHR) {
			CHECK_EQ(x.rdev_major, 9);
			CHECK_EQ(x.rdev_minor, 10);
		} else {
			CHECK_EQ(x.rdev_major, 0);
		}
		CHECK_EQ(t_lookup(s, d, types[i].name), (int64_t)r.attr.ino);
		uint64_t ino;
		struct mds_attr la;
		CHECK_EQ(mds_dir_lookup(s, d, types[i].name, strlen(types[i].name), &ino, &la), 0);
		CHECK_EQ(la.ino, ino);
		CHECK_EQ(la.change, x.change);
		char buf[64];
		size_t len = 0;
		if (types[i].type == MDS_LNK) {
			CHECK_EQ(mds_inode_readlink(s, ino, buf, sizeof(buf), &len), 0);
			CHECK_EQ(len, 13);
			CHECK(memcmp(buf, "../some/where", 13) == 0);
			CHECK_EQ(x.size, 13);
			CHECK_EQ(mds_inode_readlink(s, ino, buf, 4, &len), 0);
			CHECK_EQ(len, 13);
		} else {
			CHECK_EQ(mds_inode_readlink(s, ino, buf, sizeof(buf), &len), -EINVAL);
		}
	}
	da = t_attr(s, d);
	CHECK_EQ(da.size, 7);  /* entries */
	CHECK_EQ(da.nlink, 3); /* one subdirectory */
	/* Object keys differ between files. */
	struct mds_attr r1 = t_attr(s, (uint64_t)t_lookup(s, d, "reg"));
	struct mds_attr r2 = t_attr(s, (uint64_t)t_lookup(s, d, "fifo"));
	CHECK(memcmp(r1.objkey, r2.objkey, 16) != 0);

	/* Errors. */
	char longname[MDS_NAME_MAX + 2];
	memset(longname, 'x', sizeof(longname));
	longname[MDS_NAME_MAX + 1] = 0;
	CHECK_EQ(t_create(s, d, longname, MDS_REG), -ENAMETOOLONG);
	longname[MDS_NAME_MAX] = 0;
	CHECK(t_create(s, d, longname, MDS_REG) > 0);
	CHECK(t_lookup(s, d, longname) > 0);
	CHECK_EQ(t_create(s, d, ".", MDS_REG), -EINVAL);
	CHECK_EQ(t_create(s, d, "..", MDS_REG), -EINVAL);
	CHECK_EQ(t_create(s, d, "", MDS_REG), -EINVAL);
	CHECK_EQ(t_create(s, d, "a/b", MDS_REG), -EINVAL);
	struct mds_create_args nul = {.dir = d, .name = "a\0b", .name_len = 3, .type = MDS_REG};
	CHECK_EQ(mds_dir_create(s, &nul, NULL), -EINVAL);
	CHECK_EQ(t_create(s, d, "...", MDS_REG) > 0, 1); /* only . and .. are special */
	CHECK_EQ(t_create(s, (uint64_t)t_lookup(s, d, "reg"), "x", MDS_REG), -ENOTDIR);
	CHECK_EQ(t_create(s, 999999, "x", MDS_REG), -ESTALE);
	CHECK_EQ(t_create(s, d, "bad", 0), -EINVAL);
	CHECK_EQ(t_create(s, d, "bad", 8), -EINVAL);
	struct mds_create_args nolink = {.dir = d, .name = "l", .name_len = 1, .type = MDS_LNK};
	CHECK_EQ(mds_dir_create(s, &nolink, NULL), -EINVAL);
	CHECK_EQ(t_lookup(s, d, "bad"), -ENOENT);
	CHECK_EQ(t_lookup(s, d, "nope"), -ENOENT);
	CHECK_EQ(t_lookup(s, 999999, "nope"), -ESTALE);
	CHECK_EQ(t_lookup(s, (uint64_t)t_lookup(s, d, "reg"), "x"), -ENOTDIR);
	CHECK_EQ(t_lookup(s, d, ".."), -EINVAL);
	CHECK_EQ(t_attr(s, d).size, 9);

	/* UNCHECKED4 returns an existing file; EXCLUSIVE4_1 only with its verifier. */
	struct mds_create_args u = {
	    .dir = d, .name = "reg", .name_len = 3, .type = MDS_REG, .how = MDS_CREATE_UNCHECKED};
	struct mds_create_res ur;
	uint64_t dchange = t_attr(s, d).change;
	CHECK_EQ(mds_dir_create(s, &u, &ur), 0);
	CHECK(ur.existed);
	CHECK_EQ(ur.attr.ino, (uint64_t)t_lookup(s, d, "reg"));
	CHECK_EQ(ur.cinfo.before, dchange);
	CHECK_EQ(ur.cinfo.after, dchange);
	u.name = "dir";
	CHECK_EQ(mds_dir_create(s, &u, &ur), -EEXIST);
	u.name = "newu";
	u.name_len = 4;
	CHECK_EQ(mds_dir_create(s, &u, &ur), 0);
	CHECK(!ur.existed);
	struct mds_create_args e = {.dir = d,
				    .name = "excl",
				    .name_len = 4,
				    .type = MDS_REG,
				    .how = MDS_CREATE_EXCLUSIVE,
				    .verf = "12345678"};
	struct mds_create_res er, er2;
	CHECK_EQ(mds_dir_create(s, &e, &er), 0);
	CHECK(!er.existed);
	CHECK(memcmp(t_attr(s, er.attr.ino).verf, "12345678", 8) == 0);
	CHECK_EQ(mds_dir_create(s, &e, &er2), 0); /* a retry */
	CHECK(er2.existed);
	CHECK_EQ(er2.attr.ino, er.attr.ino);
	memcpy(e.verf, "87654321", 8);
	CHECK_EQ(mds_dir_create(s, &e, &er2), -EEXIST);
}

static int orphan_count_fn(void *arg, const struct mds_attr *a)
{
	(void)a;
	(*(int *)arg)++;
	return 0;
}

static int orphans(struct mds_store *s)
{
	int n = 0;
	CHECK_EQ(mds_orphan_list(s, orphan_count_fn, &n), 0);
	return n;
}

static void test_remove_link(struct mds_store *s, uint64_t root)
{
	uint64_t d = (uint64_t)t_create(s, root, "r", MDS_DIR);
	uint64_t sub = (uint64_t)t_create(s, d, "sub", MDS_DIR);
	uint64_t f = (uint64_t)t_create(s, sub, "f", MDS_REG);
	uint64_t l = (uint64_t)t_create(s, d, "lnk", MDS_LNK);
	CHECK_EQ(t_attr(s, d).nlink, 3);

	CHECK_EQ(t_remove(s, d, "nope"), -ENOENT);
	CHECK_EQ(t_remove(s, d, "sub"), -ENOTEMPTY);
	CHECK_EQ(t_remove(s, 999999, "sub"), -ESTALE);
	CHECK_EQ(t_remove(s, f, "x"), -ENOTDIR);
	CHECK_EQ(t_remove(s, d, "."), -EINVAL);
	struct mds_remove_args ra = {
	    .dir = sub, .name = "f", .name_len = 1, .flags = MDS_REMOVE_DIR};
	CHECK_EQ(mds_dir_remove(s, &ra, NULL), -ENOTDIR);
	ra = (struct mds_remove_args){
	    .dir = d, .name = "sub", .name_len = 3, .flags = MDS_REMOVE_NONDIR};
	CHECK_EQ(mds_dir_remove(s, &ra, NULL), -EISDIR);

	/* link: a second name for f. */
	struct mds_link_args la = {.ino = f, .dir = d, .name = "f2", .name_len = 2};
	struct mds_link_res lr;
	struct mds_attr fa = t_attr(s, f);
	uint64_t dchange = t_attr(s, d).change;
	CHECK_EQ(mds_dir_link(s, &la, &lr), 0);
	CHECK_EQ(lr.cinfo.before, dchange);
	CHECK_EQ(lr.cinfo.after, dchange + 1);
	CHECK_EQ(lr.attr.nlink, 2);
	CHECK_EQ(t_attr(s, f).nlink, 2);
	CHECK_EQ(t_attr(s, f).change, fa.change + 1);
	CHECK_EQ(t_lookup(s, d, "f2"), (int64_t)f);
	CHECK_EQ(mds_dir_link(s, &la, NULL), -EEXIST);
	la.ino = sub;
	la.name = "subl";
	la.name_len = 4;
	CHECK_EQ(mds_dir_link(s, &la, NULL), -EISDIR);
	la.ino = 999999;
	CHECK_EQ(mds_dir_link(s, &la, NULL), -ESTALE);
	la = (struct mds_link_args){.ino = f, .dir = f, .name = "x", .name_len = 1};
	CHECK_EQ(mds_dir_link(s, &la, NULL), -ENOTDIR);
	la = (struct mds_link_args){.ino = f, .dir = 999999, .name = "x", .name_len = 1};
	CHECK_EQ(mds_dir_link(s, &la, NULL), -ESTALE);

	/* One link goes: the file stays, not orphaned. */
	struct mds_remove_res rr;
	ra = (struct mds_remove_args){.dir = sub, .name = "f", .name_len = 1};
	CHECK_EQ(mds_dir_remove(s, &ra, &rr), 0);
	CHECK_EQ(rr.victim.ino, f);
	CHECK_EQ(rr.victim.nlink, 1);
	CHECK(!rr.victim.orphaned);
	CHECK_EQ(t_attr(s, f).nlink, 1);
	CHECK_EQ(t_attr(s, sub).size, 0);

	/* rmdir of the now-empty subdirectory. */
	ra = (struct mds_remove_args){
	    .dir = d, .name = "sub", .name_len = 3, .flags = MDS_REMOVE_DIR};
	dchange = t_attr(s, d).change;
	CHECK_EQ(mds_dir_remove(s, &ra, &rr), 0);
	CHECK_EQ(rr.cinfo.before, dchange);
	CHECK_EQ(rr.cinfo.after, dchange + 1);
	CHECK_EQ(rr.victim.type, MDS_DIR);
	CHECK(!rr.victim.orphaned);
	CHECK_EQ(mds_inode_getattr(s, sub, &fa), -ESTALE);
	CHECK_EQ(t_attr(s, d).nlink, 2);
	CHECK_EQ(t_lookup(s, d, "sub"), -ENOENT);

	/* Last link of a regular file: an orphan until reaped. */
	struct mds_layout_args lay = {.ino = f, .seg = 0, .l = {.nds = 1, .ds = {4}}};
	CHECK_EQ(mds_layout_set(s, &lay), 0);
	struct mds_xattr_args xa = {
	    .ino = f, .name = "user.a", .name_len = 6, .value = "v", .value_len = 1};
	CHECK_EQ(mds_xattr_set(s, &xa), 0);
	CHECK_EQ(orphans(s), 0);
	CHECK_EQ(mds_inode_reap(s, f), -EBUSY);
	ra = (struct mds_remove_args){.dir = d, .name = "f2", .name_len = 2};
	CHECK_EQ(mds_dir_remove(s, &ra, &rr), 0);
	CHECK(rr.victim.orphaned);
	CHECK_EQ(rr.victim.nlink, 0);
	CHECK(memcmp(rr.victim.objkey, t_attr(s, f).objkey, 16) == 0);
	CHECK_EQ(t_attr(s, f).nlink, 0); /* open filehandles still work */
	CHECK_EQ(orphans(s), 1);
	la = (struct mds_link_args){.ino = f, .dir = d, .name = "back", .name_len = 4};
	CHECK_EQ(mds_dir_link(s, &la, NULL), -ENOENT);
	struct mds_setattr_args sa = {.ino = f, .mask = MDS_SET_SIZE, .size = 10};
	CHECK_EQ(mds_inode_setattr(s, &sa, NULL), 0);
	CHECK_EQ(mds_inode_reap(s, f), 0);
	CHECK_EQ(mds_inode_getattr(s, f, &fa), -ESTALE);
	CHECK_EQ(orphans(s), 0);
	struct mds_layout_seg seg;
	CHECK_EQ(mds_layout_get(s, f, 0, &seg), -ENOENT);
	char v[8];
	size_t vlen;
	CHECK_EQ(mds_xattr_get(s, f, "user.a", 6, v, sizeof(v), &vlen), -ESTALE);
	CHECK_EQ(mds_inode_reap(s, f), -ESTALE);

	/* A symlink's last link deletes it at once. */
	ra = (struct mds_remove_args){
	    .dir = d, .name = "lnk", .name_len = 3, .flags = MDS_REMOVE_NONDIR};
	CHECK_EQ(mds_dir_remove(s, &ra, &rr), 0);
	CHECK(!rr.victim.orphaned);
	CHECK_EQ(mds_inode_getattr(s, l, &fa), -ESTALE);
	CHECK_EQ(t_attr(s, d).size, 0);
	CHECK_EQ(t_remove(s, root, "r"), 0);
}

static void test_setattr(struct mds_store *s, uint64_t root)
{
	uint64_t f = (uint64_t)t_create(s, root, "sa", MDS_REG);
	uint64_t d = (uint64_t)t_create(s, root, "sad", MDS_DIR);
	uint64_t l = (uint64_t)t_create(s, root, "sal", MDS_LNK);
	struct mds_attr a0 = t_attr(s, f);
	struct mds_setattr_res r;
	struct mds_setattr_args sa = {.ino = f,
				      .mask = MDS_SET_MODE | MDS_SET_UID | MDS_SET_GID,
				      .mode = 0104755,
				      .uid = 1000,
				      .gid = 100};
	usleep(2000);
	CHECK_EQ(mds_inode_setattr(s, &sa, &r), 0);
	CHECK_EQ(r.attr.mode, 04755);
	CHECK_EQ(r.attr.uid, 1000);
	CHECK_EQ(r.attr.gid, 100);
	CHECK_EQ(r.attr.change, a0.change + 1);
	CHECK(r.attr.ctime.sec > a0.ctime.sec ||
	      (r.attr.ctime.sec == a0.ctime.sec && r.attr.ctime.nsec > a0.ctime.nsec));
	CHECK(r.attr.mtime.sec == a0.mtime.sec && r.attr.mtime.nsec == a0.mtime.nsec);
	struct mds_attr a1 = t_attr(s, f);
	CHECK_EQ(a1.change, a0.change + 1);

	/* Size: truncate moves mtime; SIZE_MAX only grows. */
	sa = (struct mds_setattr_args){.ino = f, .mask = MDS_SET_SIZE, .size = 4096};
	CHECK_EQ(mds_inode_setattr(s, &sa, &r), 0);
	CHECK_EQ(r.old_size, 0);
	CHECK_EQ(r.attr.size, 4096);
	CHECK(r.attr.mtime.sec != a1.mtime.sec || r.attr.mtime.nsec != a1.mtime.nsec);
	sa = (struct mds_setattr_args){.ino = f,
				       .mask = MDS_SET_SIZE_MAX | MDS_SET_SPACE_USED,
				       .size = 100,
				       .space_used = 8192};
	CHECK_EQ(mds_inode_setattr(s, &sa, &r), 0);
	CHECK_EQ(r.attr.size, 4096);
	CHECK_EQ(r.attr.space_used, 8192);
	sa.size = 1 << 20;
	CHECK_EQ(mds_inode_setattr(s, &sa, &r), 0);
	CHECK_EQ(r.old_size, 4096);
	CHECK_EQ(r.attr.size, 1 << 20);
	sa = (struct mds_setattr_args){.ino = f, .mask = MDS_SET_SIZE, .size = 10};
	CHECK_EQ(mds_inode_setattr(s, &sa, &r), 0);
	CHECK_EQ(r.old_size, 1 << 20);
	CHECK_EQ(t_attr(s, f).size, 10);

	/* Times. */
	sa = (struct mds_setattr_args){.ino = f,
				       .mask = MDS_SET_ATIME | MDS_SET_MTIME,
				       .atime = {1000, 5},
				       .mtime = {2000, 6}};
	CHECK_EQ(mds_inode_setattr(s, &sa, &r), 0);
	CHECK(r.attr.atime.sec == 1000 && r.attr.atime.nsec == 5);
	CHECK(r.attr.mtime.sec == 2000 && r.attr.mtime.nsec == 6);
	sa = (struct mds_setattr_args){.ino = f, .mask = MDS_SET_ATIME_NOW | MDS_SET_MTIME_NOW};
	CHECK_EQ(mds_inode_setattr(s, &sa, &r), 0);
	CHECK(r.attr.atime.sec > 1000 && r.attr.mtime.sec > 2000);
	sa = (struct mds_setattr_args){.ino = f, .mask = MDS_SET_MTIME, .mtime = {1, 1000000000}};
	CHECK_EQ(mds_inode_setattr(s, &sa, &r), -EINVAL);

	/* Guard, wrong types, stale. */
	uint64_t ch = t_attr(s, f).change;
	sa = (struct mds_setattr_args){
	    .ino = f, .mask = MDS_SET_CHANGE_GUARD | MDS_SET_MODE, .guard = ch - 1, .mode = 0600};
	CHECK_EQ(mds_inode_setattr(s, &sa, &r), -EAGAIN);
	CHECK_EQ(t_attr(s, f).change, ch);
	sa.guard = ch;
	CHECK_EQ(mds_inode_setattr(s, &sa, &r), 0);
	CHECK_EQ(r.attr.mode, 0600);
	sa = (struct mds_setattr_args){.ino = d, .mask = MDS_SET_SIZE, .size = 0};
	CHECK_EQ(mds_inode_setattr(s, &sa, &r), -EISDIR);
	sa.ino = l;
	CHECK_EQ(mds_inode_setattr(s, &sa, &r), -EINVAL);
	sa.ino = 999999;
	CHECK_EQ(mds_inode_setattr(s, &sa, &r), -ESTALE);
	/* A symlink keeps its target through a setattr. */
	sa = (struct mds_setattr_args){.ino = l, .mask = MDS_SET_UID, .uid = 5};
	CHECK_EQ(mds_inode_setattr(s, &sa, &r), 0);
	char buf[16];
	size_t len;
	CHECK_EQ(mds_inode_readlink(s, l, buf, sizeof(buf), &len), 0);
	CHECK(len == 6 && memcmp(buf, "target", 6) == 0);
	sa = (struct mds_setattr_args){.ino = d, .mask = MDS_SET_MODE, .mode = 0700};
	CHECK_EQ(mds_inode_setattr(s, &sa, &r), 0);
	CHECK_EQ(r.attr.type, MDS_DIR);
	CHECK_EQ(r.attr.mode, 0700);
}

struct names {
	int n;
	char seen[8][16];
};

static int xattr_name_fn(void *arg, const char *name, size_t len)
{
	struct names *nm = arg;
	CHECK(nm->n < 8 && len < 16);
	memcpy(nm->seen[nm->n], name, len);
	nm->seen[nm->n++][len] = 0;
	return 0;
}

static void test_xattr(struct mds_store *s, uint64_t root)
{
	uint64_t f = (uint64_t)t_create(s, root, "xa", MDS_REG);
	char buf[32];
	size_t len;
	struct mds_xattr_args a = {
	    .ino = f, .name = "user.b", .name_len = 6, .value = "hello", .value_len = 5};
	CHECK_EQ(mds_xattr_get(s, f, "user.b", 6, buf, sizeof(buf), &len), -ENODATA);
	a.flags = MDS_XATTR_REPLACE;
	CHECK_EQ(mds_xattr_set(s, &a), -ENODATA);
	a.flags = MDS_XATTR_CREATE;
	uint64_t ch = t_attr(s, f).change;
	CHECK_EQ(mds_xattr_set(s, &a), 0);
	CHECK_EQ(t_attr(s, f).change, ch + 1);
	CHECK_EQ(mds_xattr_set(s, &a), -EEXIST);
	CHECK_EQ(mds_xattr_get(s, f, "user.b", 6, buf, sizeof(buf), &len), 0);
	CHECK(len == 5 && memcmp(buf, "hello", 5) == 0);
	CHECK_EQ(mds_xattr_get(s, f, "user.b", 6, buf, 2, &len), -ERANGE);
	CHECK_EQ(len, 5);
	a.flags = MDS_XATTR_REPLACE;
	a.value = "";
	a.value_len = 0;
	CHECK_EQ(mds_xattr_set(s, &a), 0);
	CHECK_EQ(mds_xattr_get(s, f, "user.b", 6, buf, sizeof(buf), &len), 0);
	CHECK_EQ(len, 0);
	a.flags = 0;
	a.name = "user.a";
	CHECK_EQ(mds_xattr_set(s, &a), 0);
	a.flags = MDS_XATTR_CREATE | MDS_XATTR_REPLACE;
	CHECK_EQ(mds_xattr_set(s, &a), -EINVAL);
	a.flags = 0;
	a.value_len = MDS_XATTR_VALUE_MAX + 1;
	CHECK_EQ(mds_xattr_set(s, &a), -E2BIG);
	a.value_len = 0;
	a.name_len = 0;
	CHECK_EQ(mds_xattr_set(s, &a), -EINVAL);
	a.name_len = 6;
	a.ino = 999999;
	CHECK_EQ(mds_xattr_set(s, &a), -ESTALE);

	struct names nm = {0};
	CHECK_EQ(mds_xattr_list(s, f, xattr_name_fn, &nm), 0);
	CHECK_EQ(nm.n, 2);
	CHECK(strcmp(nm.seen[0], "user.a") == 0 && strcmp(nm.seen[1], "user.b") == 0);
	/* Another inode's xattrs are not listed. */
	uint64_t g = (uint64_t)t_create(s, root, "xb", MDS_REG);
	nm.n = 0;
	CHECK_EQ(mds_xattr_list(s, g, xattr_name_fn, &nm), 0);
	CHECK_EQ(nm.n, 0);

	struct mds_xattr_args r = {.ino = f, .name = "user.a", .name_len = 6};
	ch = t_attr(s, f).change;
	CHECK_EQ(mds_xattr_remove(s, &r), 0);
	CHECK_EQ(t_attr(s, f).change, ch + 1);
	CHECK_EQ(mds_xattr_remove(s, &r), -ENODATA);
	nm.n = 0;
	CHECK_EQ(mds_xattr_list(s, f, xattr_name_fn, &nm), 0);
	CHECK_EQ(nm.n, 1);
}

static int seg_count_fn(void *arg, uint64_t seg, const struct mds_layout_seg *l)
{
	uint64_t *sum = arg;
	*sum += seg * 100 + l->ds[0];
	return 0;
}

static void test_layouts(struct mds_store *s, uint64_t root)
{
	uint64_t f = (uint64_t)t_create(s, root, "lay", MDS_REG);
	uint64_t g = (uint64_t)t_create(s, root, "lay2", MDS_REG);
	struct mds_layout_args a = {
	    .ino = f, .seg = 3, .l = {.flags = 7, .nds = 3, .ds = {11, 12, 13}}};
	struct mds_layout_seg l;
	CHECK_EQ(mds_layout_get(s, f, 3, &l), -ENOENT);
	CHECK_EQ(mds_layout_set(s, &a), 0);
	CHECK_EQ(mds_layout_get(s, f, 3, &l), 0);
	CHECK(l.flags == 7 && l.nds == 3 && l.ds[0] == 11 && l.ds[1] == 12 && l.ds[2] == 13);
	a.l = (struct mds_layout_seg){.nds = 1, .ds = {21}};
	CHECK_EQ(mds_layout_set(s, &a), 0); /* replaces */
	CHECK_EQ(mds_layout_get(s, f, 3, &l), 0);
	CHECK(l.nds == 1 && l.ds[0] == 21);
	a.seg = 1;
	a.l.ds[0] = 1;
	CHECK_EQ(mds_layout_set(s, &a), 0);
	a.ino = g;
	a.seg = 0;
	CHECK_EQ(mds_layout_set(s, &a), 0);
	uint64_t sum = 0;
	CHECK_EQ(mds_layout_list(s, f, seg_count_fn, &sum), 0);
	CHECK_EQ(sum, 300 + 21 + 100 + 1);
	a.l.nds = 0;
	CHECK_EQ(mds_layout_set(s, &a), -EINVAL);
	a.l.nds = MDS_LAYOUT_MAX_DS + 1;
	CHECK_EQ(mds_layout_set(s, &a), -EINVAL);
	a.l.nds = 1;
	a.ino = 999999;
	CHECK_EQ(mds_layout_set(s, &a), -ESTALE);

	struct mds_layout_args r = {.ino = f, .seg = 3};
	CHECK_EQ(mds_layout_remove(s, &r), 0);
	CHECK_EQ(mds_layout_remove(s, &r), -ENOENT);
	CHECK_EQ(mds_layout_get(s, f, 1, &l), 0);
	r.seg = MDS_LAYOUT_ALL;
	CHECK_EQ(mds_layout_remove(s, &r), 0);
	CHECK_EQ(mds_layout_get(s, f, 1, &l), -ENOENT);
	CHECK_EQ(mds_layout_get(s, g, 0, &l), 0); /* another file's map stays */
}

static int client_fn(void *arg, const void *owner, size_t len, const struct mds_client_rec *r)
{
	int *n = arg;
	CHECK(len >= 1);
	CHECK_EQ(r->clientid, ((const char *)owner)[0] == 'a' ? 42 : 43);
	(*n)++;
	return 0;
}

static void test_clients(struct mds_store *s)
{
	static struct mds_client_rec rec, got;
	char big[MDS_OWNER_MAX];
	memset(big, 'b', sizeof(big));
	rec.clientid = 42;
	rec.flags = 1;
	rec.data_len = 5;
	memcpy(rec.data, "hello", 5);
	struct mds_client_args a = {.owner = "alpha", .owner_len = 5, .rec = &rec};
	CHECK_EQ(mds_client_get(s, "alpha", 5, &got), -ENOENT);
	CHECK_EQ(mds_client_put(s, &a), 0);
	CHECK_EQ(mds_client_get(s, "alpha", 5, &got), 0);
	CHECK(got.clientid == 42 && got.flags == 1 && got.data_len == 5);
	CHECK(memcmp(got.data, "hello", 5) == 0);
	rec.flags = 2;
	CHECK_EQ(mds_client_put(s, &a), 0); /* overwrite */
	CHECK_EQ(mds_client_get(s, "alpha", 5, &got), 0);
	CHECK_EQ(got.flags, 2);
	rec.clientid = 43;
	rec.data_len = MDS_CLIENT_DATA_MAX;
	struct mds_client_args b = {.owner = big, .owner_len = sizeof(big), .rec = &rec};
	CHECK_EQ(mds_client_put(s, &b), 0);
	CHECK_EQ(mds_client_get(s, big, sizeof(big), &got), 0);
	CHECK_EQ(got.clientid, 43);
	CHECK_EQ(got.data_len, MDS_CLIENT_DATA_MAX);
	int n = 0;
	CHECK_EQ(mds_client_list(s, client_fn, &n), 0);
	CHECK_EQ(n, 2);
	b.owner_len = MDS_OWNER_MAX + 1;
	CHECK_EQ(mds_client_put(s, &b), -EINVAL);
	b.owner_len = 0;
	CHECK_EQ(mds_client_put(s, &b), -EINVAL);
	CHECK_EQ(mds_client_remove(s, &a), 0);
	CHECK_EQ(mds_client_remove(s, &a), -ENOENT);
	CHECK_EQ(mds_client_get(s, "alpha", 5, &got), -ENOENT);
	n = 0;
	CHECK_EQ(mds_client_list(s, client_fn, &n), 0);
	CHECK_EQ(n, 1);
}

static void async_done(struct mds_op *op)
{
	sem_post(op->priv);
}

static void test_async(struct mds_store *s, uint64_t root)
{
	struct mds_op ops[3];
	sem_t sem;
	sem_init(&sem, 0, 0);
	static const char *names[3] = {"as1", "as2", "as1"};
	for (int i = 0; i < 3; i++) {
		ops[i] = (struct mds_op){.type = MDS_OP_CREATE, .done = async_done, .priv = &sem};
		ops[i].args.create = (struct mds_create_args){
		    .dir = root, .name = names[i], .name_len = 3, .type = MDS_REG};
		mds_store_submit(s, &ops[i]);
	}
	for (int i = 0; i < 3; i++)
		sem_wait(&sem);
	sem_destroy(&sem);
	/* Applied in submission order: the second "as1" lost. */
	CHECK_EQ(ops[0].status, 0);
	CHECK_EQ(ops[1].status, 0);
	CHECK_EQ(ops[2].status, -EEXIST);
	CHECK_EQ(t_lookup(s, root, "as1"), (int64_t)ops[0].res.create.attr.ino);
	CHECK(ops[1].res.create.attr.ino != ops[0].res.create.attr.ino);
}

static int count_fn(void *arg, const struct mds_dirent *e)
{
	(void)e;
	(*(int *)arg)++;
	return 0;
}

int main(void)
{
	const char *dir = test_dir_make("store-ops");
	test_siphash();
	struct mds_store *s = test_open(dir, 0);
	uint64_t root = mds_store_root(s);
	test_root(s);
	test_create(s, root);
	test_remove_link(s, root);
	test_setattr(s, root);
	test_xattr(s, root);
	test_layouts(s, root);
	test_clients(s);
	test_async(s, root);

	int n = 0;
	bool eof;
	CHECK_EQ(mds_dir_readdir(s, 999999, 0, 0, count_fn, &n, &eof), -ESTALE);
	CHECK_EQ(mds_dir_readdir(s, (uint64_t)t_lookup(s, root, "sa"), 0, 0, count_fn, &n, &eof),
		 -ENOTDIR);
	CHECK_EQ(mds_dir_readdir(s, root, 0, 0, count_fn, &n, &eof), n);
	CHECK(eof);
	CHECK_EQ(n, (int)t_attr(s, root).size);

	struct mds_store_stats st;
	mds_store_stats(s, &st);
	CHECK(st.ops > 100);
	CHECK_EQ(st.fallbacks, 0);
	mds_store_close(s);
	printf("store-ops: ok (%llu ops, %llu syncs)\n", (unsigned long long)st.ops,
	       (unsigned long long)st.syncs);
	return 0;
}
