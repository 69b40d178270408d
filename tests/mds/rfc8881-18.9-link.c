/* SPDX-License-Identifier: MIT */
/*
 * LINK (RFC 8881 §18.9): the saved filehandle is the object, the current
 * one the directory that gets the new name.  The link count moves, the
 * directory's change_info brackets the change, an existing name is
 * NFS4ERR_EXIST, a directory NFS4ERR_ISDIR, a non-directory target
 * NFS4ERR_NOTDIR, no saved filehandle NFS4ERR_NOFILEHANDLE, another export
 * NFS4ERR_XDEV, a read-only export NFS4ERR_ROFS, no write permission on
 * the directory NFS4ERR_ACCESS.
 */
#include "config.h"

#include "tests/mds/mds-test.h"
#include "tests/mds/dir-test.h"

static nfsstat4 link2(struct nfs41c_session *s, const struct dt_fh *obj, const struct dt_fh *dir,
		      const char *name, change_info4 *ci)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	COMPOUND4res res;
	nfsstat4 st = dt_do2(s, obj, dir, dt_link(name), &res, &ar);
	if (!st && ci)
		*ci = res.resarray.val[4].u.oplink.u.resok4.cinfo;
	/* the current filehandle stays the directory (§18.9.3) */
	xdr_arena_release(&ar);
	return st;
}

int main(void)
{
	struct mt t;
	mt_start(&t,
		 "/ *(rw,no_root_squash,insecure)\n/other *(rw,no_root_squash,insecure)\n"
		 "/ro *(ro,no_root_squash,insecure)\n",
		 NULL);
	struct nfs41c_session *s = mt_session(&t, "link-root", 0, 0);
	struct nfs41c_session *user = mt_session(&t, "link-user", 1000, 1000);
	uint64_t root = dt_root(&t);
	uint64_t d1 = dt_store_make(&t, root, "d1", MDS_DIR, 0755, 0, 0);
	uint64_t d2 = dt_store_make(&t, root, "d2", MDS_DIR, 0755, 0, 0);
	uint64_t f = dt_store_make(&t, d1, "f", MDS_REG, 0644, 0, 0);
	dt_store_make(&t, d1, "sub", MDS_DIR, 0755, 0, 0);
	struct dt_fh d1fh, d2fh, ffh, subfh;
	CHECK_EQ(dt_walk(s, "d1", &d1fh), NFS4_OK);
	CHECK_EQ(dt_walk(s, "d2", &d2fh), NFS4_OK);
	CHECK_EQ(dt_walk(s, "d1/f", &ffh), NFS4_OK);
	CHECK_EQ(dt_walk(s, "d1/sub", &subfh), NFS4_OK);

	uint64_t before = dt_store_attr(&t, d2).change;
	change_info4 ci;
	CHECK_EQ(link2(s, &ffh, &d2fh, "g", &ci), NFS4_OK);
	struct mds_attr a;
	CHECK(dt_store_lookup(&t, d2, "g", &a) == 0);
	CHECK_EQ(a.ino, f);
	CHECK_EQ(a.nlink, 2);
	CHECK(ci.atomic);
	CHECK_EQ(ci.before, before);
	CHECK_EQ(ci.after, dt_store_attr(&t, d2).change);
	CHECK(ci.after > ci.before);
	CHECK_EQ(link2(s, &ffh, &d1fh, "f2", NULL), NFS4_OK);
	CHECK_EQ(dt_store_attr(&t, f).nlink, 3);

	CHECK_EQ(link2(s, &ffh, &d2fh, "g", NULL), NFS4ERR_EXIST);
	CHECK_EQ(link2(s, &subfh, &d2fh, "s", NULL), NFS4ERR_ISDIR);
	CHECK_EQ(link2(s, &ffh, &ffh, "x", NULL), NFS4ERR_NOTDIR);
	CHECK_EQ(link2(s, &ffh, &d2fh, ".", NULL), NFS4ERR_BADNAME);
	CHECK_EQ(link2(s, &ffh, &d2fh, "", NULL), NFS4ERR_INVAL);
	CHECK_EQ(link2(s, &ffh, &d2fh, "a/b", NULL), NFS4ERR_BADCHAR);
	CHECK_EQ(dt_do(s, &d2fh, dt_link("x")), NFS4ERR_NOFILEHANDLE);

	struct dt_fh other, rofh, rofile;
	CHECK_EQ(dt_walk(s, "other", &other), NFS4_OK);
	CHECK_EQ(link2(s, &ffh, &other, "x", NULL), NFS4ERR_XDEV);
	struct mds_attr ro;
	CHECK(dt_store_lookup(&t, root, "ro", &ro) == 0);
	dt_store_make(&t, ro.ino, "z", MDS_REG, 0644, 0, 0);
	CHECK_EQ(dt_walk(s, "ro", &rofh), NFS4_OK);
	CHECK_EQ(dt_walk(s, "ro/z", &rofile), NFS4_OK);
	CHECK_EQ(link2(s, &rofile, &rofh, "z2", NULL), NFS4ERR_ROFS);

	struct dt_fh uf, ud;
	CHECK_EQ(dt_walk(user, "d1/f", &uf), NFS4_OK);
	CHECK_EQ(dt_walk(user, "d2", &ud), NFS4_OK);
	CHECK_EQ(link2(user, &uf, &ud, "u", NULL), NFS4ERR_ACCESS);
	CHECK_EQ(dt_store_attr(&t, f).nlink, 3);

	nfs41c_session_destroy(s);
	nfs41c_session_destroy(user);
	mt_finish(&t);
	return 0;
}
