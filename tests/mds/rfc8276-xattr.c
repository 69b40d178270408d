/* SPDX-License-Identifier: MIT */
/*
 * Extended attributes over NFSv4.2 (RFC 8276 §8.4): SETXATTR with EITHER,
 * CREATE (NFS4ERR_EXIST) and REPLACE (NFS4ERR_NOXATTR) and the file's
 * change_info; GETXATTR of a value up to the 64 KiB limit (NFS4ERR_NOXATTR
 * when absent, NFS4ERR_XATTR2BIG past the limit); LISTXATTRS returns the
 * names as set (no "user." prefix: the Linux client adds it), paged by
 * cookie under lxa_maxcount, which counts the whole result, every name
 * exactly once (NFS4ERR_TOOSMALL when not even one fits, NFS4ERR_BAD_COOKIE
 * past the end); REMOVEXATTR; names checked (empty: NFS4ERR_INVAL, over 255
 * bytes: NFS4ERR_NAMETOOLONG); reading needs read permission, writing
 * write permission (NFS4ERR_ACCESS), a read-only export NFS4ERR_ROFS; only
 * regular files and directories carry them; the ops are NFSv4.2's.
 */
#include "config.h"

#include "tests/mds/attr-test.h"

static struct mt t;
static struct at a;
static struct xdr_arena arena;

static COMPOUND4res res;

static nfsstat4 two(uint32_t minor, const struct at_cred *cr, const nfs_fh4 *fh, nfs_argop4 op)
{
	nfs_argop4 ops[2] = {mt_putfh(fh), op};
	at_compound(&a, minor, cr, ops, 2, &res, &arena);
	CHECK_EQ(at_status(&res, 0), NFS4_OK);
	return at_status(&res, 1);
}

static nfsstat4 setx(const struct at_cred *cr, const nfs_fh4 *fh, int how, const char *name,
		     const void *val, size_t len, change_info4 *ci)
{
	nfs_argop4 op = {.argop = OP_SETXATTR};
	op.u.opsetxattr.sxa_option = how;
	op.u.opsetxattr.sxa_key = at_str(name);
	op.u.opsetxattr.sxa_value = xdr_opaque_of(val, len);
	nfsstat4 st = two(2, cr, fh, op);
	if (st == NFS4_OK && ci)
		*ci = res.resarray.val[2].u.opsetxattr.u.sxr_info;
	return st;
}

static nfsstat4 getx(const struct at_cred *cr, const nfs_fh4 *fh, const char *name, xattrvalue4 *v)
{
	nfs_argop4 op = {.argop = OP_GETXATTR};
	op.u.opgetxattr.gxa_name = at_str(name);
	nfsstat4 st = two(2, cr, fh, op);
	if (st == NFS4_OK && v)
		*v = res.resarray.val[2].u.opgetxattr.u.gxr_value;
	return st;
}

static nfsstat4 rmx(const struct at_cred *cr, const nfs_fh4 *fh, const char *name, change_info4 *ci)
{
	nfs_argop4 op = {.argop = OP_REMOVEXATTR};
	op.u.opremovexattr.rxa_name = at_str(name);
	nfsstat4 st = two(2, cr, fh, op);
	if (st == NFS4_OK && ci)
		*ci = res.resarray.val[2].u.opremovexattr.u.rxr_info;
	return st;
}

static nfsstat4 listx(const struct at_cred *cr, const nfs_fh4 *fh, uint64_t cookie,
		      uint32_t maxcount, LISTXATTRS4resok *out)
{
	nfs_argop4 op = {.argop = OP_LISTXATTRS};
	op.u.oplistxattrs.lxa_cookie = cookie;
	op.u.oplistxattrs.lxa_maxcount = maxcount;
	nfsstat4 st = two(2, cr, fh, op);
	if (st == NFS4_OK) {
		*out = res.resarray.val[2].u.oplistxattrs.u.lxr_value;
		/* the result fits lxa_maxcount */
		uint64_t size = 8 + 4 + 4;
		for (uint32_t i = 0; i < out->lxr_names.len; i++)
			size += 4 + ((out->lxr_names.val[i].len + 3u) & ~3u);
		CHECK(size <= maxcount);
	}
	return st;
}

static bool is(const xdr_opaque *o, const char *s)
{
	return o->len == strlen(s) && memcmp(o->val, s, o->len) == 0;
}

int main(void)
{
	mt_start(&t, "/ *(rw,no_root_squash,insecure)\n/ro *(ro,no_root_squash,insecure)\n", NULL);
	uint8_t ab[1 << 16];
	xdr_arena_init(&arena, ab, sizeof(ab), 256u << 20);
	at_open(&a, &t, "xattr");
	struct mds_store *st = braid_mds_store(t.mds);
	uint64_t root = mds_store_root(st);
	uint32_t rid = at_export_id(&t, "/");
	uint64_t file = at_make(&t, root, "f", MDS_REG, 0644, 1000, 100);
	uint64_t dir = at_make(&t, root, "d", MDS_DIR, 0755, 1000, 100);
	uint64_t lnk = at_make(&t, root, "l", MDS_LNK, 0777, 1000, 100);
	nfs_fh4 ffh = at_fh(&t, &arena, file, rid), dfh = at_fh(&t, &arena, dir, rid);
	nfs_fh4 lfh = at_fh(&t, &arena, lnk, rid);
	const struct at_cred owner = {1000, 100, 0, {0}};
	const struct at_cred other = {3000, 3000, 0, {0}};
	change_info4 ci;
	xattrvalue4 v;

	/* set, get, with the file's change around it */
	uint64_t c0 = at_stat(&t, file).change;
	CHECK_EQ(setx(&owner, &ffh, SETXATTR4_EITHER, "colour", "blue", 4, &ci), NFS4_OK);
	CHECK_EQ(ci.before, c0);
	CHECK(ci.after > ci.before);
	CHECK_EQ(ci.after, at_stat(&t, file).change);
	CHECK_EQ(getx(&owner, &ffh, "colour", &v), NFS4_OK);
	CHECK(is(&v, "blue"));
	/* stored under the name as sent: no namespace prefix added */
	char buf[16];
	size_t len;
	CHECK(mds_xattr_get(st, file, "colour", 6, buf, sizeof(buf), &len) == 0);
	CHECK(len == 4 && memcmp(buf, "blue", 4) == 0);

	/* CREATE and REPLACE */
	CHECK_EQ(setx(&owner, &ffh, SETXATTR4_CREATE, "colour", "red", 3, NULL), NFS4ERR_EXIST);
	CHECK_EQ(setx(&owner, &ffh, SETXATTR4_REPLACE, "shape", "round", 5, NULL), NFS4ERR_NOXATTR);
	CHECK_EQ(setx(&owner, &ffh, SETXATTR4_REPLACE, "colour", "green", 5, NULL), NFS4_OK);
	CHECK_EQ(getx(&owner, &ffh, "colour", &v), NFS4_OK);
	CHECK(is(&v, "green"));
	CHECK_EQ(setx(&owner, &ffh, SETXATTR4_CREATE, "shape", "", 0, NULL), NFS4_OK);
	CHECK_EQ(getx(&owner, &ffh, "shape", &v), NFS4_OK);
	CHECK_EQ(v.len, 0);
	CHECK_EQ(setx(&owner, &ffh, 3, "colour", "x", 1, NULL), NFS4ERR_INVAL);
	CHECK_EQ(getx(&owner, &ffh, "size", NULL), NFS4ERR_NOXATTR);

	/* values up to the limit, not beyond */
	size_t big = MDS_XATTR_VALUE_MAX;
	uint8_t *val = xdr_arena_alloc(&arena, big + 1);
	for (size_t i = 0; i <= big; i++)
		val[i] = (uint8_t)(i * 7 + 3);
	CHECK_EQ(setx(&owner, &ffh, SETXATTR4_EITHER, "big", val, big, NULL), NFS4_OK);
	CHECK_EQ(getx(&owner, &ffh, "big", &v), NFS4_OK);
	CHECK(v.len == big && memcmp(v.val, val, big) == 0);
	CHECK_EQ(setx(&owner, &ffh, SETXATTR4_EITHER, "bigger", val, big + 1, NULL),
		 NFS4ERR_XATTR2BIG);
	CHECK_EQ(getx(&owner, &ffh, "bigger", NULL), NFS4ERR_NOXATTR);

	/* names */
	char longname[300];
	memset(longname, 'n', sizeof(longname) - 1);
	longname[256] = 0;
	CHECK_EQ(setx(&owner, &ffh, SETXATTR4_EITHER, longname, "v", 1, NULL), NFS4ERR_NAMETOOLONG);
	longname[255] = 0;
	CHECK_EQ(setx(&owner, &ffh, SETXATTR4_EITHER, longname, "v", 1, NULL), NFS4_OK);
	CHECK_EQ(rmx(&owner, &ffh, longname, NULL), NFS4_OK);
	CHECK_EQ(setx(&owner, &ffh, SETXATTR4_EITHER, "", "v", 1, NULL), NFS4ERR_INVAL);
	CHECK_EQ(getx(&owner, &ffh, "", NULL), NFS4ERR_INVAL);

	/* permissions */
	CHECK_EQ(getx(&other, &ffh, "colour", &v), NFS4_OK); /* 0644: others read */
	CHECK_EQ(setx(&other, &ffh, SETXATTR4_EITHER, "colour", "black", 5, NULL), NFS4ERR_ACCESS);
	CHECK_EQ(rmx(&other, &ffh, "colour", NULL), NFS4ERR_ACCESS);
	struct mds_setattr_args sa = {.ino = file, .mask = MDS_SET_MODE, .mode = 0600};
	CHECK(mds_inode_setattr(st, &sa, NULL) == 0);
	CHECK_EQ(getx(&other, &ffh, "colour", NULL), NFS4ERR_ACCESS);
	LISTXATTRS4resok l;
	CHECK_EQ(listx(&other, &ffh, 0, 4096, &l), NFS4ERR_ACCESS);
	CHECK_EQ(getx(&at_root, &ffh, "colour", NULL), NFS4_OK);
	sa.mode = 0644;
	CHECK(mds_inode_setattr(st, &sa, NULL) == 0);

	/* directories carry them, symlinks do not (as Linux's user namespace) */
	CHECK_EQ(setx(&owner, &dfh, SETXATTR4_EITHER, "dirattr", "1", 1, NULL), NFS4_OK);
	CHECK_EQ(getx(&other, &dfh, "dirattr", &v), NFS4_OK);
	CHECK(is(&v, "1"));
	CHECK_EQ(setx(&at_root, &lfh, SETXATTR4_EITHER, "a", "1", 1, NULL), NFS4ERR_PERM);
	CHECK_EQ(getx(&at_root, &lfh, "a", NULL), NFS4ERR_NOXATTR);
	CHECK_EQ(listx(&at_root, &lfh, 0, 4096, &l), NFS4_OK);
	CHECK(l.lxr_names.len == 0 && l.lxr_eof);

	/* LISTXATTRS: all names, as set, in one reply */
	CHECK_EQ(rmx(&owner, &ffh, "big", NULL), NFS4_OK);
	const char *names[] = {"colour", "shape",  "a",	      "bb",	  "ccc",   "dddd",
			       "eeeee",	 "ffffff", "ggggggg", "hhhhhhhh", "i.j.k", "zz"};
	unsigned nnames = sizeof(names) / sizeof(names[0]);
	for (unsigned i = 2; i < nnames; i++)
		CHECK_EQ(setx(&owner, &ffh, SETXATTR4_CREATE, names[i], "x", 1, NULL), NFS4_OK);
	CHECK_EQ(listx(&other, &ffh, 0, 65536, &l), NFS4_OK);
	CHECK_EQ(l.lxr_names.len, nnames);
	CHECK(l.lxr_eof);
	for (unsigned i = 0; i < nnames; i++) {
		unsigned found = 0;
		for (uint32_t j = 0; j < l.lxr_names.len; j++)
			found += is(&l.lxr_names.val[j], names[i]);
		CHECK_EQ(found, 1);
	}
	for (uint32_t j = 1; j < l.lxr_names.len; j++) { /* byte order */
		const xdr_opaque *p = &l.lxr_names.val[j - 1], *q = &l.lxr_names.val[j];
		int c = memcmp(p->val, q->val, p->len < q->len ? p->len : q->len);
		CHECK(c < 0 || (c == 0 && p->len < q->len));
	}

	/* paged: every name once, each page within maxcount */
	for (uint32_t maxcount = 8 + 4 + 4 + 12; maxcount < 120; maxcount += 5) {
		uint64_t cookie = 0;
		unsigned seen[16] = {0}, pages = 0;
		for (;;) {
			CHECK_EQ(listx(&owner, &ffh, cookie, maxcount, &l), NFS4_OK);
			CHECK(l.lxr_names.len > 0 || l.lxr_eof);
			for (uint32_t j = 0; j < l.lxr_names.len; j++)
				for (unsigned i = 0; i < nnames; i++)
					seen[i] += is(&l.lxr_names.val[j], names[i]);
			cookie = l.lxr_cookie;
			CHECK(++pages < 100);
			if (l.lxr_eof)
				break;
		}
		for (unsigned i = 0; i < nnames; i++)
			CHECK_EQ(seen[i], 1);
	}
	/* too small for the first name; a cookie past the end */
	CHECK_EQ(listx(&owner, &ffh, 0, 8 + 4 + 4 + 4, &l), NFS4ERR_TOOSMALL);
	CHECK_EQ(listx(&owner, &ffh, 0, 10, &l), NFS4ERR_TOOSMALL);
	CHECK_EQ(listx(&owner, &ffh, nnames, 4096, &l), NFS4_OK);
	CHECK(l.lxr_names.len == 0 && l.lxr_eof);
	CHECK_EQ(listx(&owner, &ffh, nnames + 1, 4096, &l), NFS4ERR_BAD_COOKIE);

	/* remove */
	uint64_t c1 = at_stat(&t, file).change;
	CHECK_EQ(rmx(&owner, &ffh, "colour", &ci), NFS4_OK);
	CHECK_EQ(ci.before, c1);
	CHECK(ci.after > c1);
	CHECK_EQ(getx(&owner, &ffh, "colour", NULL), NFS4ERR_NOXATTR);
	CHECK_EQ(rmx(&owner, &ffh, "colour", NULL), NFS4ERR_NOXATTR);
	CHECK_EQ(listx(&owner, &ffh, 0, 65536, &l), NFS4_OK);
	CHECK_EQ(l.lxr_names.len, nnames - 1);

	/* read-only export */
	uint64_t ro = at_export_root(&t, "/ro");
	nfs_fh4 rofh = at_fh(&t, &arena, ro, at_export_id(&t, "/ro"));
	CHECK_EQ(setx(&at_root, &rofh, SETXATTR4_EITHER, "a", "1", 1, NULL), NFS4ERR_ROFS);
	CHECK_EQ(rmx(&at_root, &rofh, "a", NULL), NFS4ERR_ROFS);
	CHECK_EQ(getx(&at_root, &rofh, "a", NULL), NFS4ERR_NOXATTR);

	/* NFSv4.2 only: in a 4.1 COMPOUND they are illegal */
	{
		nfs_argop4 op = {.argop = OP_GETXATTR};
		op.u.opgetxattr.gxa_name = at_str("shape");
		nfs_argop4 ops[2] = {mt_putfh(&ffh), op};
		at_compound(&a, 1, &owner, ops, 2, &res, &arena);
		CHECK_EQ(res.status, NFS4ERR_OP_ILLEGAL);
	}

	at_close(&a);
	xdr_arena_release(&arena);
	mt_finish(&t);
	return 0;
}
