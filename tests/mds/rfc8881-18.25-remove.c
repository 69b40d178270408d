/* SPDX-License-Identifier: MIT */
/*
 * REMOVE (RFC 8881 §18.25): files and empty directories go, with the
 * directory's change_info; a non-empty directory is NFS4ERR_NOTEMPTY, a
 * missing name NFS4ERR_NOENT, bad names as LOOKUP's; write permission on
 * the directory is needed, and in a sticky directory (mode 01000) a user
 * removes only what it or the directory's owner owns; read-only exports
 * are NFS4ERR_ROFS; an export's root, mounted on as the client sees it,
 * is not removed (NFS4ERR_FILE_OPEN, as knfsd says for a mount point).
 */
#include "config.h"

#include "tests/mds/mds-test.h"
#include "tests/mds/dir-test.h"

static nfsstat4 remove_in(struct nfs41c_session *s, const struct dt_fh *dir, const char *name,
			  change_info4 *ci)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	COMPOUND4res res;
	nfsstat4 st = dt_on(s, dir, dt_remove(name), &res, &ar);
	if (!st && ci)
		*ci = res.resarray.val[2].u.opremove.u.resok4.cinfo;
	xdr_arena_release(&ar);
	return st;
}

int main(void)
{
	struct mt t;
	mt_start(&t,
		 "/ *(rw,no_root_squash,insecure)\n/ro *(ro,no_root_squash,insecure)\n"
		 "/ex *(rw,insecure)\n",
		 NULL);
	struct nfs41c_session *s = mt_session(&t, "remove-root", 0, 0);
	struct nfs41c_session *user = mt_session(&t, "remove-user", 1000, 1000);
	uint64_t d = dt_store_make(&t, dt_root(&t), "d", MDS_DIR, 0755, 0, 0);
	uint64_t f = dt_store_make(&t, d, "f", MDS_REG, 0644, 0, 0);
	uint64_t sub = dt_store_make(&t, d, "sub", MDS_DIR, 0755, 0, 0);
	dt_store_make(&t, sub, "x", MDS_REG, 0644, 0, 0);
	uint64_t empty = dt_store_make(&t, d, "empty", MDS_DIR, 0755, 0, 0);
	uint64_t fifo = dt_store_make(&t, d, "fifo", MDS_FIFO, 0644, 0, 0);
	struct dt_fh dfh, ffh, ufh;
	CHECK_EQ(dt_walk(s, "d", &dfh), NFS4_OK);
	CHECK_EQ(dt_walk(s, "d/f", &ffh), NFS4_OK);

	/* a file: the name goes, the inode has no links left */
	uint64_t before = dt_store_attr(&t, d).change;
	change_info4 ci;
	CHECK_EQ(remove_in(s, &dfh, "f", &ci), NFS4_OK);
	CHECK(ci.atomic);
	CHECK_EQ(ci.before, before);
	CHECK_EQ(ci.after, dt_store_attr(&t, d).change);
	CHECK(ci.after > ci.before);
	struct mds_attr a;
	CHECK_EQ(dt_store_lookup(&t, d, "f", &a), -ENOENT);
	int rc = mds_inode_getattr(braid_mds_store(t.mds), f, &a);
	CHECK(rc == -ESTALE || (rc == 0 && a.nlink == 0));
	CHECK_EQ(remove_in(s, &dfh, "f", NULL), NFS4ERR_NOENT);

	/* other types go at once; directories only when empty */
	CHECK_EQ(remove_in(s, &dfh, "fifo", NULL), NFS4_OK);
	CHECK_EQ(mds_inode_getattr(braid_mds_store(t.mds), fifo, &a), -ESTALE);
	CHECK_EQ(remove_in(s, &dfh, "sub", NULL), NFS4ERR_NOTEMPTY);
	CHECK_EQ(dt_store_lookup(&t, d, "sub", &a), 0);
	CHECK_EQ(remove_in(s, &dfh, "empty", NULL), NFS4_OK);
	CHECK_EQ(mds_inode_getattr(braid_mds_store(t.mds), empty, &a), -ESTALE);
	CHECK_EQ(dt_store_attr(&t, d).nlink, 3); /* 2 + "sub" */

	/* names and types */
	CHECK_EQ(remove_in(s, &dfh, ".", NULL), NFS4ERR_BADNAME);
	CHECK_EQ(remove_in(s, &dfh, "..", NULL), NFS4ERR_BADNAME);
	CHECK_EQ(remove_in(s, &dfh, "", NULL), NFS4ERR_INVAL);
	CHECK_EQ(remove_in(s, &dfh, "sub/x", NULL), NFS4ERR_BADCHAR);
	dt_store_make(&t, d, "g", MDS_REG, 0644, 0, 0);
	struct dt_fh gfh;
	CHECK_EQ(dt_walk(s, "d/g", &gfh), NFS4_OK);
	CHECK_EQ(remove_in(s, &gfh, "x", NULL), NFS4ERR_NOTDIR);

	/* permissions: "d" is root's, 0755 */
	CHECK_EQ(dt_walk(user, "d", &ufh), NFS4_OK);
	CHECK_EQ(remove_in(user, &ufh, "g", NULL), NFS4ERR_ACCESS);
	CHECK_EQ(dt_store_lookup(&t, d, "g", &a), 0);

	/* sticky: 01777, entries of uid 1000 and 1001 */
	uint64_t tmp = dt_store_make(&t, dt_root(&t), "tmp", MDS_DIR, 01777, 0, 0);
	dt_store_make(&t, tmp, "theirs", MDS_REG, 0666, 1001, 1001);
	dt_store_make(&t, tmp, "mine", MDS_REG, 0644, 1000, 1000);
	dt_store_make(&t, tmp, "theirs2", MDS_REG, 0666, 1001, 1001);
	struct dt_fh tfh, rtfh;
	CHECK_EQ(dt_walk(user, "tmp", &tfh), NFS4_OK);
	CHECK_EQ(remove_in(user, &tfh, "theirs", NULL), NFS4ERR_ACCESS);
	CHECK_EQ(remove_in(user, &tfh, "mine", NULL), NFS4_OK);
	CHECK_EQ(dt_walk(s, "tmp", &rtfh), NFS4_OK);
	CHECK_EQ(remove_in(s, &rtfh, "theirs", NULL), NFS4_OK);
	/* the directory's owner may, too */
	uint64_t own = dt_store_make(&t, dt_root(&t), "own", MDS_DIR, 01777, 1000, 1000);
	dt_store_make(&t, own, "theirs", MDS_REG, 0666, 1001, 1001);
	CHECK_EQ(dt_walk(user, "own", &tfh), NFS4_OK);
	CHECK_EQ(remove_in(user, &tfh, "theirs", NULL), NFS4_OK);

	/* read-only export */
	struct mds_attr ro;
	CHECK(dt_store_lookup(&t, dt_root(&t), "ro", &ro) == 0);
	dt_store_make(&t, ro.ino, "z", MDS_REG, 0644, 0, 0);
	struct dt_fh rofh;
	CHECK_EQ(dt_walk(s, "ro", &rofh), NFS4_OK);
	CHECK_EQ(remove_in(s, &rofh, "z", NULL), NFS4ERR_ROFS);
	CHECK_EQ(dt_store_lookup(&t, ro.ino, "z", &a), 0);

	/* an export root */
	struct dt_fh rootfh;
	CHECK_EQ(dt_walk(s, "", &rootfh), NFS4_OK);
	CHECK_EQ(remove_in(s, &rootfh, "ex", NULL), NFS4ERR_FILE_OPEN);
	CHECK_EQ(dt_store_lookup(&t, dt_root(&t), "ex", &a), 0);

	nfs41c_session_destroy(s);
	nfs41c_session_destroy(user);
	mt_finish(&t);
	return 0;
}
