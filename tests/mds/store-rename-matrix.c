/* SPDX-License-Identifier: MIT */
/*
 * RENAME with POSIX rename(2) semantics (RFC 8881 §18.26.3): every
 * combination of source type and target (none, file, empty directory,
 * non-empty directory), within and across directories, the no-op cases
 * (same link, two links to one file), a directory into its own subtree,
 * and the bad-argument errors.  After each step a walk of the tree checks
 * that each directory's entry count, link count and parent pointers agree.
 */
#include "config.h"

#include "tests/mds/store-test.h"

struct walk {
	struct mds_store *s;
	uint64_t dir;
	uint64_t entries, subdirs;
	uint64_t subs[64];
};

static int walk_fn(void *arg, const struct mds_dirent *e)
{
	struct walk *w = arg;
	CHECK(e->attr);
	CHECK_EQ(e->attr->type, e->type);
	CHECK(e->attr->nlink > 0);
	w->entries++;
	if (e->type == MDS_DIR) {
		CHECK_EQ(e->attr->parent, w->dir);
		CHECK(w->subdirs < 64);
		w->subs[w->subdirs++] = e->ino;
	}
	return 0;
}

/* The invariants every directory keeps: size = entries, nlink = 2 + subdirectories. */
static void fsck(struct mds_store *s, uint64_t dir)
{
	struct walk w = {.s = s, .dir = dir};
	bool eof;
	CHECK(mds_dir_readdir(s, dir, 0, MDS_READDIR_ATTRS, walk_fn, &w, &eof) >= 0);
	CHECK(eof);
	struct mds_attr a = t_attr(s, dir);
	CHECK_EQ(a.size, w.entries);
	CHECK_EQ(a.nlink, 2 + w.subdirs);
	for (uint64_t i = 0; i < w.subdirs; i++)
		fsck(s, w.subs[i]);
}

static uint64_t mk(struct mds_store *s, uint64_t dir, const char *name, int type)
{
	int64_t ino = t_create(s, dir, name, type);
	CHECK(ino > 0);
	return (uint64_t)ino;
}

int main(void)
{
	const char *path = test_dir_make("rename");
	struct mds_store *s = test_open(path, 0);
	uint64_t root = mds_store_root(s);
	struct mds_rename_res r;
	struct mds_attr a;
	uint64_t A = mk(s, root, "A", MDS_DIR), B = mk(s, root, "B", MDS_DIR);

	/* File to a new name, same directory. */
	uint64_t f = mk(s, A, "f", MDS_REG);
	struct mds_attr fa = t_attr(s, f), Aa = t_attr(s, A);
	CHECK_EQ(t_rename(s, A, "f", A, "g", &r), 0);
	CHECK(!r.noop && !r.replaced);
	CHECK_EQ(r.ino, f);
	CHECK_EQ(r.src_cinfo.before, Aa.change);
	CHECK_EQ(r.src_cinfo.after, Aa.change + 1);
	CHECK_EQ(r.dst_cinfo.before, Aa.change);
	CHECK_EQ(r.dst_cinfo.after, Aa.change + 1);
	CHECK_EQ(t_lookup(s, A, "f"), -ENOENT);
	CHECK_EQ(t_lookup(s, A, "g"), (int64_t)f);
	CHECK_EQ(t_attr(s, f).change, fa.change + 1); /* ctime moves */
	fsck(s, root);

	/* File to a new name in another directory. */
	uint64_t Bch = t_attr(s, B).change;
	CHECK_EQ(t_rename(s, A, "g", B, "g", &r), 0);
	CHECK_EQ(r.dst_cinfo.before, Bch);
	CHECK_EQ(r.dst_cinfo.after, Bch + 1);
	CHECK_EQ(t_lookup(s, A, "g"), -ENOENT);
	CHECK_EQ(t_lookup(s, B, "g"), (int64_t)f);
	fsck(s, root);

	/* File over file, both directories: the target's last link goes. */
	uint64_t t1 = mk(s, B, "t1", MDS_REG);
	CHECK_EQ(t_rename(s, B, "g", B, "t1", &r), 0);
	CHECK(r.replaced);
	CHECK_EQ(r.victim.ino, t1);
	CHECK(r.victim.orphaned);
	CHECK_EQ(t_attr(s, t1).nlink, 0);
	CHECK_EQ(mds_inode_reap(s, t1), 0);
	CHECK_EQ(t_lookup(s, B, "t1"), (int64_t)f);
	CHECK_EQ(t_lookup(s, B, "g"), -ENOENT);
	uint64_t t2 = mk(s, A, "t2", MDS_REG);
	CHECK_EQ(t_rename(s, B, "t1", A, "t2", &r), 0);
	CHECK(r.replaced && r.victim.ino == t2 && r.victim.orphaned);
	CHECK_EQ(t_lookup(s, A, "t2"), (int64_t)f);
	fsck(s, root);

	/* File over a file with another link: not orphaned. */
	uint64_t t3 = mk(s, A, "t3", MDS_REG);
	struct mds_link_args la = {.ino = t3, .dir = B, .name = "t3link", .name_len = 6};
	CHECK_EQ(mds_dir_link(s, &la, NULL), 0);
	CHECK_EQ(t_rename(s, A, "t2", A, "t3", &r), 0);
	CHECK(r.replaced && !r.victim.orphaned);
	CHECK_EQ(r.victim.nlink, 1);
	CHECK_EQ(t_attr(s, t3).nlink, 1);
	CHECK_EQ(t_lookup(s, B, "t3link"), (int64_t)t3);
	fsck(s, root);

	/* Same link, and two links to one file: no-ops. */
	CHECK_EQ(t_lookup(s, A, "t3"), (int64_t)f);
	CHECK_EQ(t_lookup(s, A, "t2"), -ENOENT);
	uint64_t Ach = t_attr(s, A).change;
	CHECK_EQ(t_rename(s, A, "t3", A, "t3", &r), 0);
	CHECK(r.noop);
	CHECK_EQ(r.src_cinfo.before, Ach);
	CHECK_EQ(r.src_cinfo.after, Ach);
	la = (struct mds_link_args){.ino = f, .dir = B, .name = "f2", .name_len = 2};
	CHECK_EQ(mds_dir_link(s, &la, NULL), 0);
	Ach = t_attr(s, A).change;
	uint64_t Bch2 = t_attr(s, B).change;
	CHECK_EQ(t_rename(s, A, "t3", B, "f2", &r), 0);
	CHECK(r.noop);
	CHECK_EQ(t_attr(s, A).change, Ach);
	CHECK_EQ(t_attr(s, B).change, Bch2);
	CHECK_EQ(t_lookup(s, A, "t3"), (int64_t)f); /* both names stay */
	CHECK_EQ(t_lookup(s, B, "f2"), (int64_t)f);
	CHECK_EQ(t_attr(s, f).nlink, 2);
	fsck(s, root);

	/* Type mismatches and non-empty targets. */
	uint64_t D = mk(s, A, "D", MDS_DIR), E = mk(s, A, "E", MDS_DIR);
	mk(s, E, "inE", MDS_REG);
	CHECK_EQ(t_rename(s, A, "t3", A, "D", &r), -EISDIR);
	CHECK_EQ(t_rename(s, A, "D", A, "t3", &r), -ENOTDIR);
	CHECK_EQ(t_rename(s, A, "D", A, "E", &r), -ENOTEMPTY);
	CHECK_EQ(t_rename(s, A, "D", B, "t3link", &r), -ENOTDIR);
	CHECK_EQ(t_lookup(s, A, "D"), (int64_t)D);
	fsck(s, root);

	/* Directory over an empty directory, same parent then across parents. */
	uint64_t F = mk(s, A, "F", MDS_DIR);
	mk(s, D, "inD", MDS_REG);
	CHECK_EQ(t_rename(s, A, "D", A, "F", &r), 0);
	CHECK(r.replaced && r.victim.ino == F && r.victim.type == MDS_DIR && !r.victim.orphaned);
	CHECK_EQ(mds_inode_getattr(s, F, &a), -ESTALE);
	CHECK_EQ(t_lookup(s, A, "F"), (int64_t)D);
	CHECK_EQ(t_attr(s, D).parent, A);
	fsck(s, root);
	uint64_t G = mk(s, B, "G", MDS_DIR);
	CHECK_EQ(t_rename(s, A, "F", B, "G", &r), 0);
	CHECK(r.replaced && r.victim.ino == G);
	CHECK_EQ(t_attr(s, D).parent, B);
	CHECK_EQ(t_lookup(s, D, "inD") > 0, 1);
	fsck(s, root);

	/* Directory to a new name across parents: link counts move. */
	uint64_t An = t_attr(s, A).nlink, Bn = t_attr(s, B).nlink;
	CHECK_EQ(t_rename(s, B, "G", A, "H", &r), 0);
	CHECK_EQ(t_attr(s, A).nlink, An + 1);
	CHECK_EQ(t_attr(s, B).nlink, Bn - 1);
	CHECK_EQ(t_attr(s, D).parent, A);
	fsck(s, root);

	/* Into its own subtree. */
	uint64_t sub = mk(s, D, "sub", MDS_DIR);
	uint64_t subsub = mk(s, sub, "subsub", MDS_DIR);
	CHECK_EQ(t_rename(s, A, "H", D, "x", &r), -EINVAL);
	CHECK_EQ(t_rename(s, A, "H", sub, "x", &r), -EINVAL);
	CHECK_EQ(t_rename(s, A, "H", subsub, "x", &r), -EINVAL);
	CHECK_EQ(t_rename(s, root, "A", subsub, "x", &r), -EINVAL);
	/* Up and out of it is fine; the parent of the source as target is not empty. */
	CHECK_EQ(t_rename(s, D, "sub", A, "H", &r), -ENOTEMPTY);
	CHECK_EQ(t_rename(s, sub, "subsub", root, "A", &r), -ENOTEMPTY);
	CHECK_EQ(t_rename(s, sub, "subsub", root, "up", &r), 0);
	CHECK_EQ(t_attr(s, subsub).parent, root);
	CHECK_EQ(t_rename(s, root, "up", subsub, "x", &r), -EINVAL);
	fsck(s, root);

	/* A symlink keeps its target. */
	mk(s, A, "sym", MDS_LNK);
	CHECK_EQ(t_rename(s, A, "sym", B, "sym2", &r), 0);
	char buf[16];
	size_t len;
	CHECK_EQ(mds_inode_readlink(s, r.ino, buf, sizeof(buf), &len), 0);
	CHECK(len == 6 && memcmp(buf, "target", 6) == 0);

	/* Bad arguments. */
	CHECK_EQ(t_rename(s, A, "nope", A, "x", &r), -ENOENT);
	CHECK_EQ(t_rename(s, 999999, "t3", A, "x", &r), -ESTALE);
	CHECK_EQ(t_rename(s, A, "t3", 999999, "x", &r), -ESTALE);
	CHECK_EQ(t_rename(s, f, "x", A, "x", &r), -ENOTDIR);
	CHECK_EQ(t_rename(s, A, "t3", f, "x", &r), -ENOTDIR);
	CHECK_EQ(t_rename(s, A, "t3", A, "..", &r), -EINVAL);
	CHECK_EQ(t_rename(s, A, ".", A, "x", &r), -EINVAL);
	CHECK_EQ(t_rename(s, A, "t3", A, "a/b", &r), -EINVAL);
	fsck(s, root);

	struct mds_store_stats st;
	mds_store_stats(s, &st);
	CHECK_EQ(st.fallbacks, 0);
	mds_store_close(s);
	printf("store-rename-matrix: ok\n");
	return 0;
}
