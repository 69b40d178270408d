/* SPDX-License-Identifier: MIT */
/*
 * RENAME (RFC 8881 §18.26): the saved filehandle is the source directory,
 * the current one the target directory.  Within a directory and across
 * directories, the object keeps its inode; each change_info holds its
 * directory's change before and after; an existing target is replaced when
 * compatible (file over file, directory over empty directory), a
 * non-empty directory target is NFS4ERR_NOTEMPTY, a file over a directory
 * or back NFS4ERR_EXIST; names that are links to one file make it a no-op;
 * a directory moved into its own subtree is NFS4ERR_INVAL; across exports
 * (and for an export's root) NFS4ERR_XDEV; without a saved filehandle
 * NFS4ERR_NOFILEHANDLE; the usual name, permission (including write
 * access to a directory that changes parent) and read-only checks.
 */
#include "config.h"

#include "tests/mds/mds-test.h"
#include "tests/mds/dir-test.h"

static nfsstat4 rename2(struct nfs41c_session *s, const struct dt_fh *from, const char *oldname,
			const struct dt_fh *to, const char *newname, RENAME4resok *ok)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	COMPOUND4res res;
	nfsstat4 st = dt_do2(s, from, to, dt_rename(oldname, newname), &res, &ar);
	if (!st && ok)
		*ok = res.resarray.val[4].u.oprename.u.resok4;
	xdr_arena_release(&ar);
	return st;
}

static uint64_t ino_of(struct mt *t, uint64_t dir, const char *name)
{
	struct mds_attr a;
	int rc = dt_store_lookup(t, dir, name, &a);
	return rc ? 0 : a.ino;
}

int main(void)
{
	struct mt t;
	mt_start(&t,
		 "/ *(rw,no_root_squash,insecure)\n/other *(rw,no_root_squash,insecure)\n"
		 "/ro *(ro,no_root_squash,insecure)\n",
		 NULL);
	struct nfs41c_session *s = mt_session(&t, "rename-root", 0, 0);
	struct nfs41c_session *user = mt_session(&t, "rename-user", 1000, 1000);
	struct mds_store *st = braid_mds_store(t.mds);
	uint64_t root = dt_root(&t);
	uint64_t sd = dt_store_make(&t, root, "s", MDS_DIR, 0755, 0, 0);
	uint64_t td = dt_store_make(&t, root, "t", MDS_DIR, 0755, 0, 0);
	uint64_t a = dt_store_make(&t, sd, "a", MDS_REG, 0644, 0, 0);
	uint64_t b = dt_store_make(&t, td, "b", MDS_REG, 0644, 0, 0);
	uint64_t dir1 = dt_store_make(&t, sd, "dir1", MDS_DIR, 0755, 0, 0);
	uint64_t deep = dt_store_make(&t, dir1, "deep", MDS_DIR, 0755, 0, 0);
	uint64_t full = dt_store_make(&t, td, "full", MDS_DIR, 0755, 0, 0);
	dt_store_make(&t, full, "x", MDS_REG, 0644, 0, 0);
	uint64_t emptyd = dt_store_make(&t, td, "emptyd", MDS_DIR, 0755, 0, 0);
	dt_store_make(&t, sd, "dir2", MDS_DIR, 0755, 0, 0);
	dt_store_make(&t, sd, "file", MDS_REG, 0644, 0, 0);
	struct dt_fh sfh, tfh, fullfh;
	CHECK_EQ(dt_walk(s, "s", &sfh), NFS4_OK);
	CHECK_EQ(dt_walk(s, "t", &tfh), NFS4_OK);
	CHECK_EQ(dt_walk(s, "t/full", &fullfh), NFS4_OK);

	/* within one directory: both change_infos are that directory's */
	RENAME4resok ok;
	uint64_t sbefore = dt_store_attr(&t, sd).change;
	CHECK_EQ(rename2(s, &sfh, "a", &sfh, "a2", &ok), NFS4_OK);
	CHECK_EQ(ino_of(&t, sd, "a"), 0);
	CHECK_EQ(ino_of(&t, sd, "a2"), a);
	CHECK_EQ(ok.source_cinfo.before, sbefore);
	CHECK_EQ(ok.source_cinfo.after, dt_store_attr(&t, sd).change);
	CHECK_EQ(ok.target_cinfo.after, dt_store_attr(&t, sd).change);
	CHECK(ok.source_cinfo.atomic && ok.target_cinfo.atomic);

	/* across directories */
	sbefore = dt_store_attr(&t, sd).change;
	uint64_t tbefore = dt_store_attr(&t, td).change;
	CHECK_EQ(rename2(s, &sfh, "a2", &tfh, "a3", &ok), NFS4_OK);
	CHECK_EQ(ino_of(&t, sd, "a2"), 0);
	CHECK_EQ(ino_of(&t, td, "a3"), a);
	CHECK_EQ(ok.source_cinfo.before, sbefore);
	CHECK_EQ(ok.source_cinfo.after, dt_store_attr(&t, sd).change);
	CHECK_EQ(ok.target_cinfo.before, tbefore);
	CHECK_EQ(ok.target_cinfo.after, dt_store_attr(&t, td).change);
	CHECK(ok.source_cinfo.after > ok.source_cinfo.before);
	CHECK(ok.target_cinfo.after > ok.target_cinfo.before);

	/* over an existing file: it loses its link */
	CHECK_EQ(rename2(s, &tfh, "a3", &tfh, "b", &ok), NFS4_OK);
	CHECK_EQ(ino_of(&t, td, "b"), a);
	CHECK_EQ(ino_of(&t, td, "a3"), 0);
	struct mds_attr at;
	int rc = mds_inode_getattr(st, b, &at);
	CHECK(rc == -ESTALE || (rc == 0 && at.nlink == 0));

	/* directories: over an empty one, not over a full one; a directory moved
	 * to another parent has its parent changed */
	CHECK_EQ(rename2(s, &sfh, "dir1", &tfh, "emptyd", NULL), NFS4_OK);
	CHECK_EQ(ino_of(&t, td, "emptyd"), dir1);
	CHECK_EQ(mds_inode_getattr(st, emptyd, &at), -ESTALE);
	CHECK_EQ(dt_store_attr(&t, dir1).parent, td);
	CHECK_EQ(rename2(s, &sfh, "dir2", &tfh, "full", NULL), NFS4ERR_NOTEMPTY);
	CHECK_EQ(rename2(s, &sfh, "file", &tfh, "full", NULL), NFS4ERR_EXIST);
	CHECK_EQ(rename2(s, &sfh, "dir2", &tfh, "b", NULL), NFS4ERR_EXIST);
	CHECK(ino_of(&t, sd, "dir2") && ino_of(&t, sd, "file") && ino_of(&t, td, "full"));

	/* into its own subtree */
	struct dt_fh deepfh;
	CHECK_EQ(dt_walk(s, "t/emptyd/deep", &deepfh), NFS4_OK);
	CHECK_EQ(dt_fh_ino(&deepfh), deep);
	CHECK_EQ(rename2(s, &tfh, "emptyd", &deepfh, "loop", NULL), NFS4ERR_INVAL);
	CHECK_EQ(ino_of(&t, td, "emptyd"), dir1);

	/* two links to one file: nothing happens */
	struct mds_link_args la = {
	    .ino = ino_of(&t, sd, "file"), .dir = sd, .name = "h", .name_len = 1};
	CHECK(mds_dir_link(st, &la, NULL) == 0);
	CHECK_EQ(rename2(s, &sfh, "file", &sfh, "h", &ok), NFS4_OK);
	CHECK_EQ(ok.source_cinfo.before, ok.source_cinfo.after);
	CHECK(ino_of(&t, sd, "file") && ino_of(&t, sd, "h"));

	/* names, missing source, no saved filehandle, a file as source dir */
	CHECK_EQ(rename2(s, &sfh, "nothere", &tfh, "x", NULL), NFS4ERR_NOENT);
	CHECK_EQ(rename2(s, &sfh, ".", &tfh, "x", NULL), NFS4ERR_BADNAME);
	CHECK_EQ(rename2(s, &sfh, "file", &tfh, "..", NULL), NFS4ERR_BADNAME);
	CHECK_EQ(rename2(s, &sfh, "file", &tfh, "", NULL), NFS4ERR_INVAL);
	CHECK_EQ(rename2(s, &sfh, "file", &tfh, "x/y", NULL), NFS4ERR_BADCHAR);
	struct dt_fh filefh;
	CHECK_EQ(dt_walk(s, "s/file", &filefh), NFS4_OK);
	CHECK_EQ(rename2(s, &filefh, "x", &tfh, "y", NULL), NFS4ERR_NOTDIR);
	CHECK_EQ(rename2(s, &sfh, "file", &filefh, "y", NULL), NFS4ERR_NOTDIR);
	CHECK_EQ(dt_do(s, &tfh, dt_rename("b", "c")), NFS4ERR_NOFILEHANDLE);

	/* exports */
	struct dt_fh otherfh, rootfh, rofh;
	CHECK_EQ(dt_walk(s, "other", &otherfh), NFS4_OK);
	CHECK(dt_fh_export(&otherfh) != dt_fh_export(&sfh));
	CHECK_EQ(rename2(s, &sfh, "file", &otherfh, "file", NULL), NFS4ERR_XDEV);
	CHECK_EQ(dt_walk(s, "", &rootfh), NFS4_OK);
	CHECK_EQ(rename2(s, &rootfh, "other", &rootfh, "other2", NULL), NFS4ERR_XDEV);
	CHECK_EQ(rename2(s, &rootfh, "s", &rootfh, "ro", NULL), NFS4ERR_XDEV);
	CHECK_EQ(dt_walk(s, "ro", &rofh), NFS4_OK);
	struct mds_attr ro;
	CHECK(dt_store_lookup(&t, root, "ro", &ro) == 0);
	dt_store_make(&t, ro.ino, "z", MDS_REG, 0644, 0, 0);
	CHECK_EQ(rename2(s, &rofh, "z", &rofh, "z2", NULL), NFS4ERR_ROFS);

	/* permissions: s and t are root's, 0755 */
	struct dt_fh us, ut;
	CHECK_EQ(dt_walk(user, "s", &us), NFS4_OK);
	CHECK_EQ(dt_walk(user, "t", &ut), NFS4_OK);
	CHECK_EQ(rename2(user, &us, "file", &ut, "file", NULL), NFS4ERR_ACCESS);
	uint64_t p1 = dt_store_make(&t, root, "p1", MDS_DIR, 0777, 0, 0);
	dt_store_make(&t, root, "p2", MDS_DIR, 0777, 0, 0);
	dt_store_make(&t, p1, "rdir", MDS_DIR, 0755, 0, 0);	  /* root's */
	dt_store_make(&t, p1, "udir", MDS_DIR, 0755, 1000, 1000); /* the user's */
	struct dt_fh p1fh, p2fh;
	CHECK_EQ(dt_walk(user, "p1", &p1fh), NFS4_OK);
	CHECK_EQ(dt_walk(user, "p2", &p2fh), NFS4_OK);
	CHECK_EQ(rename2(user, &p1fh, "rdir", &p2fh, "rdir", NULL), NFS4ERR_ACCESS);
	CHECK_EQ(rename2(user, &p1fh, "rdir", &p1fh, "rdir2", NULL), NFS4_OK);
	CHECK_EQ(rename2(user, &p1fh, "udir", &p2fh, "udir", NULL), NFS4_OK);
	/* sticky target: another user's entry is not replaced */
	uint64_t stk = dt_store_make(&t, root, "stk", MDS_DIR, 01777, 0, 0);
	dt_store_make(&t, stk, "theirs", MDS_REG, 0644, 1001, 1001);
	dt_store_make(&t, stk, "mine", MDS_REG, 0644, 1000, 1000);
	struct dt_fh stkfh;
	CHECK_EQ(dt_walk(user, "stk", &stkfh), NFS4_OK);
	CHECK_EQ(rename2(user, &stkfh, "mine", &stkfh, "theirs", NULL), NFS4ERR_ACCESS);
	CHECK_EQ(rename2(user, &stkfh, "theirs", &stkfh, "x", NULL), NFS4ERR_ACCESS);
	CHECK_EQ(rename2(user, &stkfh, "mine", &stkfh, "mine2", NULL), NFS4_OK);

	nfs41c_session_destroy(s);
	nfs41c_session_destroy(user);
	mt_finish(&t);
	return 0;
}
