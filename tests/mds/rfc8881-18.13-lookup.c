/* SPDX-License-Identifier: MIT */
/*
 * LOOKUP and LOOKUPP (RFC 8881 §18.13, §18.14): names are checked as
 * §14.2 says (empty or not UTF-8: INVAL; '/' or NUL: BADCHAR; "." and
 * "..": BADNAME; over 255 bytes: NAMETOOLONG); a file is NOTDIR, a
 * symlink SYMLINK; search permission is needed (ACCESS); LOOKUPP at the
 * root is NOENT.  Exports: a handle carries the export it was reached
 * through, inherited by LOOKUP until an export root and recomputed by
 * LOOKUPP out of one; with only "/a/b" exported the root is the pseudo
 * filesystem (export 0), where LOOKUP finds only the way to the export;
 * an export that does not admit the client is pseudo fs on the way to
 * one that does, and NFS4ERR_ACCESS elsewhere.
 */
#include "config.h"

#include "tests/mds/mds-test.h"
#include "tests/mds/dir-test.h"

static nfsstat4 lookup_in(struct nfs41c_session *s, const struct dt_fh *dir, const void *name,
			  uint32_t len)
{
	nfs_argop4 op = dt_op(OP_LOOKUP);
	op.u.oplookup.objname = xdr_opaque_of(name, len);
	return dt_do(s, dir, op);
}

static nfsstat4 lookup_s(struct nfs41c_session *s, const struct dt_fh *dir, const char *name)
{
	return lookup_in(s, dir, name, (uint32_t)strlen(name));
}

/* PUTFH(fh) LOOKUPP GETFH */
static nfsstat4 lookupp(struct nfs41c_session *s, const struct dt_fh *fh, struct dt_fh *out)
{
	nfs_argop4 ops[3] = {dt_op(OP_PUTFH), dt_lookupp(), mt_getfh()};
	ops[0].u.opputfh.object = dt_fh4(fh);
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	COMPOUND4res res;
	mt_compound(s, ops, 3, &res, &ar);
	nfsstat4 st = res.status;
	if (!st)
		*out = dt_getfh_res(&res, 2);
	xdr_arena_release(&ar);
	return st;
}

static void names_and_types(struct mt *t, struct nfs41c_session *root, struct nfs41c_session *user)
{
	uint64_t d = dt_store_make(t, dt_root(t), "d", MDS_DIR, 0755, 0, 0);
	uint64_t f = dt_store_make(t, d, "f", MDS_REG, 0644, 0, 0);
	dt_store_make(t, d, "l", MDS_LNK, 0777, 0, 0);
	dt_store_make(t, d, "\xc3\xbc\x6e\xc3\xaf", MDS_REG, 0644, 0, 0); /* "ünï" */
	uint64_t p = dt_store_make(t, dt_root(t), "private", MDS_DIR, 0700, 0, 0);
	dt_store_make(t, p, "x", MDS_REG, 0644, 0, 0);

	struct dt_fh rootfh, dfh, ffh, lfh, up;
	CHECK_EQ(dt_walk(root, "", &rootfh), NFS4_OK);
	CHECK_EQ(dt_fh_ino(&rootfh), dt_root(t));
	CHECK(dt_fh_export(&rootfh) != 0); /* "/" is exported: not the pseudo fs */
	CHECK_EQ(dt_walk(root, "d", &dfh), NFS4_OK);
	CHECK_EQ(dt_fh_ino(&dfh), d);
	CHECK_EQ(dt_fh_export(&dfh), dt_fh_export(&rootfh));
	CHECK_EQ(dt_walk(root, "d/f", &ffh), NFS4_OK);
	CHECK_EQ(dt_fh_ino(&ffh), f);
	CHECK_EQ(dt_walk(root, "d/l", &lfh), NFS4_OK);

	CHECK_EQ(lookup_s(root, &dfh, "missing"), NFS4ERR_NOENT);
	CHECK_EQ(lookup_s(root, &dfh, "\xc3\xbc\x6e\xc3\xaf"), NFS4_OK);
	CHECK_EQ(lookup_in(root, &dfh, "", 0), NFS4ERR_INVAL);
	CHECK_EQ(lookup_s(root, &dfh, "."), NFS4ERR_BADNAME);
	CHECK_EQ(lookup_s(root, &dfh, ".."), NFS4ERR_BADNAME);
	CHECK_EQ(lookup_s(root, &dfh, "d/f"), NFS4ERR_BADCHAR);
	CHECK_EQ(lookup_in(root, &dfh, "f\0g", 3), NFS4ERR_BADCHAR);
	CHECK_EQ(lookup_s(root, &dfh, "\xff"), NFS4ERR_INVAL);
	CHECK_EQ(lookup_s(root, &dfh, "\xc0\xaf"), NFS4ERR_INVAL);     /* overlong '/' */
	CHECK_EQ(lookup_s(root, &dfh, "\xed\xa0\x80"), NFS4ERR_INVAL); /* a surrogate */
	CHECK_EQ(lookup_s(root, &dfh, "\xc3"), NFS4ERR_INVAL);	       /* cut short */
	char longname[300];
	memset(longname, 'a', sizeof(longname));
	CHECK_EQ(lookup_in(root, &dfh, longname, 256), NFS4ERR_NAMETOOLONG);
	CHECK_EQ(lookup_in(root, &dfh, longname, 255), NFS4ERR_NOENT);

	CHECK_EQ(lookup_s(root, &ffh, "x"), NFS4ERR_NOTDIR);
	CHECK_EQ(lookup_s(root, &lfh, "x"), NFS4ERR_SYMLINK);

	/* search permission: 0700 root-owned, as uid 1000 */
	struct dt_fh pfh, xfh;
	CHECK_EQ(dt_walk(user, "private", &pfh), NFS4_OK);
	CHECK_EQ(lookup_s(user, &pfh, "x"), NFS4ERR_ACCESS);
	CHECK_EQ(dt_walk(user, "private/x", &xfh), NFS4ERR_ACCESS);
	CHECK_EQ(dt_walk(root, "private/x", &xfh), NFS4_OK);

	/* no current filehandle */
	nfs_argop4 op = mt_lookup("d");
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	COMPOUND4res res;
	mt_compound(root, &op, 1, &res, &ar);
	CHECK_EQ(res.status, NFS4ERR_NOFILEHANDLE);
	xdr_arena_release(&ar);

	/* LOOKUPP */
	CHECK_EQ(lookupp(root, &ffh, &up), NFS4ERR_NOTDIR);
	CHECK_EQ(lookupp(root, &dfh, &up), NFS4_OK);
	CHECK_EQ(dt_fh_ino(&up), dt_root(t));
	CHECK_EQ(dt_fh_export(&up), dt_fh_export(&rootfh));
	CHECK_EQ(lookupp(root, &rootfh, &up), NFS4ERR_NOENT);
}

/* Only /a/b exported: the pseudo fs leads to it and nowhere else. */
static void pseudo_fs(struct mt *t, struct nfs41c_session *s)
{
	dt_exports(t, "/a/b *(rw,insecure)\n");
	struct mds_attr a, b;
	CHECK(dt_store_lookup(t, dt_root(t), "a", &a) == 0);
	CHECK(dt_store_lookup(t, a.ino, "b", &b) == 0);
	dt_store_make(t, dt_root(t), "x", MDS_DIR, 0755, 0, 0);
	dt_store_make(t, a.ino, "y", MDS_DIR, 0755, 0, 0);
	dt_store_make(t, a.ino, "file", MDS_REG, 0644, 0, 0);
	uint64_t c = dt_store_make(t, b.ino, "c", MDS_DIR, 0755, 0, 0);

	struct dt_fh rootfh, afh, bfh, cfh, up;
	CHECK_EQ(dt_walk(s, "", &rootfh), NFS4_OK);
	CHECK_EQ(dt_fh_export(&rootfh), 0);
	CHECK_EQ(dt_walk(s, "x", &up), NFS4ERR_NOENT);
	CHECK_EQ(dt_walk(s, "d", &up), NFS4ERR_NOENT); /* exists, not on the way */
	CHECK_EQ(dt_walk(s, "a", &afh), NFS4_OK);
	CHECK_EQ(dt_fh_export(&afh), 0);
	CHECK_EQ(dt_walk(s, "a/y", &up), NFS4ERR_NOENT);
	CHECK_EQ(dt_walk(s, "a/file", &up), NFS4ERR_NOENT);
	CHECK_EQ(dt_walk(s, "a/b", &bfh), NFS4_OK);
	CHECK_EQ(dt_fh_ino(&bfh), b.ino);
	CHECK(dt_fh_export(&bfh) != 0);
	CHECK_EQ(dt_walk(s, "a/b/c", &cfh), NFS4_OK);
	CHECK_EQ(dt_fh_ino(&cfh), c);
	CHECK_EQ(dt_fh_export(&cfh), dt_fh_export(&bfh));

	CHECK_EQ(lookupp(s, &cfh, &up), NFS4_OK);
	CHECK_EQ(dt_fh_ino(&up), b.ino);
	CHECK_EQ(dt_fh_export(&up), dt_fh_export(&bfh));
	CHECK_EQ(lookupp(s, &bfh, &up), NFS4_OK); /* out of the export: pseudo again */
	CHECK_EQ(dt_fh_ino(&up), a.ino);
	CHECK_EQ(dt_fh_export(&up), 0);
	CHECK_EQ(lookupp(s, &afh, &up), NFS4_OK);
	CHECK_EQ(dt_fh_ino(&up), dt_root(t));
	CHECK_EQ(dt_fh_export(&up), 0);
}

/* "/" and "/a/b" exported: crossing into /a/b changes the export. */
static void nested_exports(struct mt *t, struct nfs41c_session *s)
{
	dt_exports(t, "/ *(rw,no_root_squash,insecure)\n/a/b *(rw,insecure)\n");
	struct dt_fh rootfh, afh, bfh, up;
	CHECK_EQ(dt_walk(s, "", &rootfh), NFS4_OK);
	CHECK(dt_fh_export(&rootfh) != 0);
	CHECK_EQ(dt_walk(s, "a", &afh), NFS4_OK);
	CHECK_EQ(dt_fh_export(&afh), dt_fh_export(&rootfh));
	CHECK_EQ(dt_walk(s, "x", &up), NFS4_OK); /* the whole namespace now */
	CHECK_EQ(dt_walk(s, "a/b", &bfh), NFS4_OK);
	CHECK(dt_fh_export(&bfh) != 0 && dt_fh_export(&bfh) != dt_fh_export(&rootfh));
	CHECK_EQ(lookupp(s, &bfh, &up), NFS4_OK);
	CHECK_EQ(dt_fh_ino(&up), dt_fh_ino(&afh));
	CHECK_EQ(dt_fh_export(&up), dt_fh_export(&rootfh));
}

/* Exports that do not admit this client (it connects from 127.0.0.1). */
static void not_admitted(struct mt *t, struct nfs41c_session *s)
{
	dt_exports(t, "/a 10.99.99.99(rw)\n/a/b *(rw,insecure)\n/q 10.99.99.99(rw)\n");
	struct dt_fh afh, bfh, qfh;
	CHECK_EQ(dt_walk(s, "a", &afh), NFS4_OK); /* on the way to /a/b: pseudo */
	CHECK_EQ(dt_fh_export(&afh), 0);
	CHECK_EQ(dt_walk(s, "a/b", &bfh), NFS4_OK);
	CHECK(dt_fh_export(&bfh) != 0);
	CHECK_EQ(dt_walk(s, "q", &qfh), NFS4ERR_ACCESS);
}

int main(void)
{
	struct mt t;
	mt_start(&t, "/ *(rw,no_root_squash,insecure)\n", NULL);
	struct nfs41c_session *root = mt_session(&t, "lookup-root", 0, 0);
	struct nfs41c_session *user = mt_session(&t, "lookup-user", 1000, 1000);
	names_and_types(&t, root, user);
	pseudo_fs(&t, root);
	nested_exports(&t, root);
	not_admitted(&t, root);
	nfs41c_session_destroy(root);
	nfs41c_session_destroy(user);
	mt_finish(&t);
	return 0;
}
