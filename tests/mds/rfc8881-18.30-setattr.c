/* SPDX-License-Identifier: MIT */
/*
 * SETATTR (RFC 8881 §18.30): mode, owner, group, times and size are set and
 * reported in attrsset; numeric owners only (§5.9, NFS4ERR_BADOWNER);
 * unsupported attributes NFS4ERR_ATTRNOTSUPP, read-only ones NFS4ERR_INVAL,
 * malformed values NFS4ERR_BADXDR; size on a directory NFS4ERR_ISDIR and on
 * a symlink NFS4ERR_INVAL; NFS4ERR_ROFS on a read-only export and on the
 * pseudo filesystem.  Permissions as POSIX for a non-root AUTH_SYS user:
 * only the owner changes the mode or sets client times, only root gives a
 * file away, the owner may change the group to one of its groups, server
 * times and size need write access; chown and chmod drop set-id bits as
 * chown(2)/chmod(2) do; mode_set_masked changes just the masked bits.
 * createattrs decode by the same rules, and take mode_umask (RFC 8275).
 */
#include "config.h"

#include <time.h>

#include "tests/mds/attr-test.h"

#include "mds/attr.h"

static struct mt t;
static struct at a;
static struct xdr_arena arena;

/* A fattr4 being built: bits and values in attribute order. */
struct fb {
	uint32_t w[4];
	struct at_fb b;
};
static void fb_init(struct fb *f)
{
	memset(f->w, 0, sizeof(f->w));
	at_fb_init(&f->b, &arena);
}
static void fb_bit(struct fb *f, unsigned n)
{
	f->w[n / 32] |= 1u << (n % 32);
}
static fattr4 fb_done(struct fb *f)
{
	unsigned len = 4;
	while (len && !f->w[len - 1])
		len--;
	uint32_t *w = xdr_arena_alloc(&arena, 4 * sizeof(uint32_t));
	CHECK(w);
	memcpy(w, f->w, sizeof(f->w));
	fattr4 r = {.attrmask = {len, w}, .attr_vals = at_fb_vals(&f->b, &arena)};
	return r;
}

static fattr4 f_mode(uint32_t mode)
{
	struct fb f;
	fb_init(&f);
	fb_bit(&f, FATTR4_MODE);
	xdr_enc_uint32(&f.b.e, mode);
	return fb_done(&f);
}
static fattr4 f_owner(const char *owner, const char *group)
{
	struct fb f;
	fb_init(&f);
	if (owner) {
		fb_bit(&f, FATTR4_OWNER);
		utf8str_mixed s = at_str(owner);
		xdr_enc_utf8str_mixed(&f.b.e, &s);
	}
	if (group) {
		fb_bit(&f, FATTR4_OWNER_GROUP);
		utf8str_mixed s = at_str(group);
		xdr_enc_utf8str_mixed(&f.b.e, &s);
	}
	return fb_done(&f);
}
static fattr4 f_size(uint64_t size)
{
	struct fb f;
	fb_init(&f);
	fb_bit(&f, FATTR4_SIZE);
	xdr_enc_uint64(&f.b.e, size);
	return fb_done(&f);
}
/* atime/mtime: how < 0 leaves it out; 0 server time; 1 client time sec */
static fattr4 f_times(int ahow, int64_t asec, int mhow, int64_t msec)
{
	struct fb f;
	fb_init(&f);
	if (ahow >= 0) {
		fb_bit(&f, FATTR4_TIME_ACCESS_SET);
		settime4 s = {.set_it = ahow};
		s.u.time.seconds = asec;
		s.u.time.nseconds = 7;
		xdr_enc_settime4(&f.b.e, &s);
	}
	if (mhow >= 0) {
		fb_bit(&f, FATTR4_TIME_MODIFY_SET);
		settime4 s = {.set_it = mhow};
		s.u.time.seconds = msec;
		s.u.time.nseconds = 9;
		xdr_enc_settime4(&f.b.e, &s);
	}
	return fb_done(&f);
}

/* SETATTR on fh as cr; its status, attrsset in *set when not NULL. */
static nfsstat4 setattr(uint32_t minor, const struct at_cred *cr, const nfs_fh4 *fh, fattr4 f,
			bitmap4 *set)
{
	nfs_argop4 ops[2] = {mt_putfh(fh), at_setattr(&f)};
	COMPOUND4res res;
	at_compound(&a, minor, cr, ops, 2, &res, &arena);
	CHECK_EQ(at_status(&res, 0), NFS4_OK);
	nfsstat4 st = at_status(&res, 1);
	if (set)
		*set = res.resarray.val[2].u.opsetattr.attrsset;
	if (st)
		CHECK_EQ(res.resarray.val[2].u.opsetattr.attrsset.len, 0);
	return st;
}

static void check_set_is(const bitmap4 *set, const fattr4 *f)
{
	for (unsigned n = 0; n < 96; n++)
		CHECK_EQ(at_has(set, n), at_has(&f->attrmask, n));
}

/*
 * createattrs (OPEN, CREATE) go through mds_attr_decode_set(), which reads
 * only the COMPOUND's minor version and arena: called directly.
 */
static nfsstat4 createattrs(uint32_t minor, fattr4 f, struct mds_setattr_args *sa, bitmap4 *set)
{
	struct nfs41_compound c;
	memset(&c, 0, sizeof(c));
	c.minorversion = minor;
	c.arena = &arena;
	memset(sa, 0, sizeof(*sa));
	return mds_attr_decode_set(&c, &f, sa, set);
}

static fattr4 f_u32pair(unsigned n, uint32_t x, uint32_t y)
{
	struct fb f;
	fb_init(&f);
	fb_bit(&f, n);
	xdr_enc_uint32(&f.b.e, x);
	xdr_enc_uint32(&f.b.e, y);
	return fb_done(&f);
}

static void check_createattrs(void)
{
	struct mds_setattr_args sa;
	bitmap4 set;
	fattr4 f = f_u32pair(FATTR4_MODE_UMASK, 0777, 022); /* RFC 8275 */
	CHECK_EQ(createattrs(2, f, &sa, &set), NFS4_OK);
	CHECK_EQ(sa.mask, MDS_SET_MODE);
	CHECK_EQ(sa.mode, 0755);
	check_set_is(&set, &f);
	CHECK_EQ(createattrs(1, f, &sa, &set), NFS4ERR_ATTRNOTSUPP); /* not in 4.1 */
	f = f_u32pair(FATTR4_MODE_SET_MASKED, 0751, 0707);
	CHECK_EQ(createattrs(1, f, &sa, &set), NFS4_OK);
	CHECK_EQ(sa.mode, 0701);
	f = f_mode(0640);
	CHECK_EQ(createattrs(1, f, &sa, &set), NFS4_OK);
	CHECK(sa.mask == MDS_SET_MODE && sa.mode == 0640);
	f = f_owner("12", "34");
	CHECK_EQ(createattrs(1, f, &sa, &set), NFS4_OK);
	CHECK(sa.mask == (MDS_SET_UID | MDS_SET_GID) && sa.uid == 12 && sa.gid == 34);
	check_set_is(&set, &f);
	CHECK_EQ(createattrs(1, f_owner("root", NULL), &sa, &set), NFS4ERR_BADOWNER);
	f = f_times(0, 0, 1, 99);
	CHECK_EQ(createattrs(1, f, &sa, &set), NFS4_OK);
	CHECK(sa.mask == (MDS_SET_ATIME_NOW | MDS_SET_MTIME) && sa.mtime.sec == 99);
	f = f_size(0);
	CHECK_EQ(createattrs(1, f, &sa, &set), NFS4_OK);
	CHECK(sa.mask == MDS_SET_SIZE && sa.size == 0);
	CHECK_EQ(createattrs(1, f_u32pair(FATTR4_ACL, 0, 0), &sa, &set), NFS4ERR_ATTRNOTSUPP);
	CHECK_EQ(createattrs(1, f_u32pair(FATTR4_NUMLINKS, 1, 0), &sa, &set), NFS4ERR_INVAL);
	fattr4 sh = f_mode(0644);
	sh.attr_vals.len = 1;
	CHECK_EQ(createattrs(1, sh, &sa, &set), NFS4ERR_BADXDR);
	fattr4 none = {{0, NULL}, {0, NULL}};
	CHECK_EQ(createattrs(1, none, &sa, &set), NFS4_OK);
	CHECK(sa.mask == 0 && set.len == 0);
}

int main(void)
{
	mt_start(&t, "/ *(rw,no_root_squash,insecure)\n/ro *(ro,no_root_squash,insecure)\n", NULL);
	uint8_t ab[1 << 16];
	xdr_arena_init(&arena, ab, sizeof(ab), 256u << 20);
	at_open(&a, &t, "setattr");
	uint64_t root = mds_store_root(braid_mds_store(t.mds));
	uint32_t rid = at_export_id(&t, "/");
	uint64_t dir = at_make(&t, root, "d", MDS_DIR, 0755, 1000, 100);
	uint64_t file = at_make(&t, dir, "f", MDS_REG, 0644, 1000, 100);
	uint64_t lnk = at_make(&t, dir, "l", MDS_LNK, 0777, 1000, 100);
	nfs_fh4 dfh = at_fh(&t, &arena, dir, rid), ffh = at_fh(&t, &arena, file, rid);
	nfs_fh4 lfh = at_fh(&t, &arena, lnk, rid);
	const struct at_cred owner = {1000, 100, 1, {200}};
	const struct at_cred other = {3000, 300, 0, {0}};
	const struct at_cred group_member = {3001, 100, 0, {0}};
	bitmap4 set;

	/* root: mode, owner, group; attrsset says what was set */
	fattr4 f = f_mode(0600);
	uint64_t change0 = at_stat(&t, file).change;
	CHECK_EQ(setattr(1, &at_root, &ffh, f, &set), NFS4_OK);
	check_set_is(&set, &f);
	CHECK_EQ(at_stat(&t, file).mode, 0600);
	CHECK(at_stat(&t, file).change > change0);
	f = f_owner("2000", "2001");
	CHECK_EQ(setattr(1, &at_root, &ffh, f, &set), NFS4_OK);
	check_set_is(&set, &f);
	CHECK_EQ(at_stat(&t, file).uid, 2000);
	CHECK_EQ(at_stat(&t, file).gid, 2001);
	CHECK_EQ(setattr(1, &at_root, &ffh, f_owner("1000", "100"), NULL), NFS4_OK);

	/* owners are numeric (§5.9) */
	CHECK_EQ(setattr(1, &at_root, &ffh, f_owner("alice", NULL), NULL), NFS4ERR_BADOWNER);
	CHECK_EQ(setattr(1, &at_root, &ffh, f_owner("1000@example.com", NULL), NULL),
		 NFS4ERR_BADOWNER);
	CHECK_EQ(setattr(1, &at_root, &ffh, f_owner(NULL, "-1"), NULL), NFS4ERR_BADOWNER);
	CHECK_EQ(setattr(1, &at_root, &ffh, f_owner("", NULL), NULL), NFS4ERR_BADOWNER);
	CHECK_EQ(setattr(1, &at_root, &ffh, f_owner("4294967296", NULL), NULL), NFS4ERR_BADOWNER);
	CHECK_EQ(at_stat(&t, file).uid, 1000);

	/* times: client's and server's */
	f = f_times(1, 1000000, 1, 2000000);
	CHECK_EQ(setattr(1, &at_root, &ffh, f, &set), NFS4_OK);
	check_set_is(&set, &f);
	struct mds_attr m = at_stat(&t, file);
	CHECK(m.atime.sec == 1000000 && m.atime.nsec == 7);
	CHECK(m.mtime.sec == 2000000 && m.mtime.nsec == 9);
	CHECK_EQ(setattr(1, &at_root, &ffh, f_times(0, 0, 0, 0), NULL), NFS4_OK);
	m = at_stat(&t, file);
	time_t now = time(NULL);
	CHECK(m.atime.sec >= now - 60 && m.atime.sec <= now + 1);
	CHECK(m.mtime.sec >= now - 60 && m.mtime.sec <= now + 1);

	/* size, with the anonymous stateid */
	f = f_size(12345);
	CHECK_EQ(setattr(1, &at_root, &ffh, f, &set), NFS4_OK);
	check_set_is(&set, &f);
	CHECK_EQ(at_stat(&t, file).size, 12345);
	CHECK_EQ(setattr(1, &at_root, &ffh, f_size(0), NULL), NFS4_OK);
	CHECK_EQ(at_stat(&t, file).size, 0);
	CHECK_EQ(setattr(1, &at_root, &dfh, f_size(0), NULL), NFS4ERR_ISDIR);
	CHECK_EQ(setattr(1, &at_root, &lfh, f_size(0), NULL), NFS4ERR_INVAL);
	CHECK_EQ(setattr(1, &at_root, &ffh, f_size(1ull << 62), NULL), NFS4ERR_FBIG);

	/* the owner, not root */
	CHECK_EQ(setattr(1, &owner, &ffh, f_mode(0640), NULL), NFS4_OK);
	CHECK_EQ(at_stat(&t, file).mode, 0640);
	CHECK_EQ(setattr(1, &owner, &ffh, f_owner("2000", NULL), NULL), NFS4ERR_PERM);
	CHECK_EQ(setattr(1, &owner, &ffh, f_owner("1000", NULL), NULL), NFS4_OK); /* no-op */
	CHECK_EQ(setattr(1, &owner, &ffh, f_owner(NULL, "555"), NULL), NFS4ERR_PERM);
	CHECK_EQ(setattr(1, &owner, &ffh, f_owner(NULL, "200"), NULL), NFS4_OK); /* its group */
	CHECK_EQ(at_stat(&t, file).gid, 200);
	CHECK_EQ(setattr(1, &owner, &ffh, f_owner(NULL, "100"), NULL), NFS4_OK);
	CHECK_EQ(setattr(1, &owner, &ffh, f_times(1, 5, 1, 6), NULL), NFS4_OK);
	CHECK_EQ(at_stat(&t, file).mtime.sec, 6);
	CHECK_EQ(setattr(1, &owner, &ffh, f_size(10), NULL), NFS4_OK);
	/* chmod(2): S_ISGID of a group the owner is not in is dropped */
	CHECK_EQ(setattr(1, &at_root, &ffh, f_owner(NULL, "4242"), NULL), NFS4_OK);
	CHECK_EQ(setattr(1, &owner, &ffh, f_mode(02755), NULL), NFS4_OK);
	CHECK_EQ(at_stat(&t, file).mode, 0755);
	CHECK_EQ(setattr(1, &at_root, &ffh, f_mode(02755), NULL), NFS4_OK);
	CHECK_EQ(at_stat(&t, file).mode, 02755);
	/* chown(2) drops set-id bits of an executable */
	CHECK_EQ(setattr(1, &at_root, &ffh, f_mode(06755), NULL), NFS4_OK);
	CHECK_EQ(setattr(1, &at_root, &ffh, f_owner(NULL, "100"), NULL), NFS4_OK);
	CHECK_EQ(at_stat(&t, file).mode, 0755);
	CHECK_EQ(setattr(1, &at_root, &ffh, f_mode(0644), NULL), NFS4_OK);

	/* someone else */
	CHECK_EQ(setattr(1, &other, &ffh, f_mode(0777), NULL), NFS4ERR_PERM);
	CHECK_EQ(setattr(1, &other, &ffh, f_owner("3000", NULL), NULL), NFS4ERR_PERM);
	CHECK_EQ(setattr(1, &other, &ffh, f_owner(NULL, "300"), NULL), NFS4ERR_PERM);
	CHECK_EQ(setattr(1, &other, &ffh, f_times(1, 1, -1, 0), NULL), NFS4ERR_PERM);
	CHECK_EQ(setattr(1, &other, &ffh, f_times(0, 0, 0, 0), NULL), NFS4ERR_ACCESS);
	CHECK_EQ(setattr(1, &other, &ffh, f_size(0), NULL), NFS4ERR_ACCESS);
	CHECK_EQ(setattr(1, &group_member, &ffh, f_size(0), NULL), NFS4ERR_ACCESS);
	CHECK_EQ(at_stat(&t, file).mode, 0644);
	CHECK_EQ(setattr(1, &at_root, &ffh, f_mode(0666), NULL), NFS4_OK);
	CHECK_EQ(setattr(1, &other, &ffh, f_times(0, 0, 0, 0), NULL), NFS4_OK); /* touch */
	CHECK_EQ(setattr(1, &other, &ffh, f_times(1, 1, 1, 1), NULL), NFS4ERR_PERM);
	CHECK_EQ(setattr(1, &other, &ffh, f_size(3), NULL), NFS4_OK);
	CHECK_EQ(at_stat(&t, file).size, 3);
	CHECK_EQ(setattr(1, &at_root, &ffh, f_mode(0660), NULL), NFS4_OK);
	CHECK_EQ(setattr(1, &group_member, &ffh, f_size(4), NULL), NFS4_OK);
	CHECK_EQ(setattr(1, &other, &ffh, f_size(5), NULL), NFS4ERR_ACCESS);

	/* attributes that cannot be set */
	{
		struct fb b;
		fb_init(&b);
		fb_bit(&b, FATTR4_TYPE);
		xdr_enc_uint32(&b.b.e, NF4REG);
		CHECK_EQ(setattr(1, &at_root, &ffh, fb_done(&b), NULL), NFS4ERR_INVAL);
		fb_init(&b);
		fb_bit(&b, FATTR4_CHANGE);
		xdr_enc_uint64(&b.b.e, 5);
		CHECK_EQ(setattr(1, &at_root, &ffh, fb_done(&b), NULL), NFS4ERR_INVAL);
		fb_init(&b);
		fb_bit(&b, FATTR4_MODE);
		fb_bit(&b, FATTR4_TIME_MODIFY);
		xdr_enc_uint32(&b.b.e, 0644);
		nfstime4 tm = {1, 1};
		xdr_enc_nfstime4(&b.b.e, &tm);
		CHECK_EQ(setattr(1, &at_root, &ffh, fb_done(&b), NULL), NFS4ERR_INVAL);
		/* not supported: the ACL, a bit past every attribute */
		fb_init(&b);
		fb_bit(&b, FATTR4_ACL);
		xdr_enc_uint32(&b.b.e, 0);
		CHECK_EQ(setattr(1, &at_root, &ffh, fb_done(&b), NULL), NFS4ERR_ATTRNOTSUPP);
		fb_init(&b);
		fb_bit(&b, 127);
		CHECK_EQ(setattr(1, &at_root, &ffh, fb_done(&b), NULL), NFS4ERR_ATTRNOTSUPP);
		/* mode_umask is for creating (RFC 8275 §3); in 4.1 it does not exist */
		fb_init(&b);
		fb_bit(&b, FATTR4_MODE_UMASK);
		mode_umask4 mu = {0777, 022};
		xdr_enc_uint32(&b.b.e, mu.mu_mode);
		xdr_enc_uint32(&b.b.e, mu.mu_umask);
		fattr4 um = fb_done(&b);
		CHECK_EQ(setattr(2, &at_root, &ffh, um, NULL), NFS4ERR_INVAL);
		CHECK_EQ(setattr(1, &at_root, &ffh, um, NULL), NFS4ERR_ATTRNOTSUPP);
		/* bad values */
		CHECK_EQ(setattr(1, &at_root, &ffh, f_mode(010000), NULL), NFS4ERR_INVAL);
		fattr4 tt = f_times(1, 5, -1, 0);
		uint8_t *p = (uint8_t *)tt.attr_vals.val; /* nseconds = 2e9 */
		xdr_put32(p + 12, 2000000000u);
		CHECK_EQ(setattr(1, &at_root, &ffh, tt, NULL), NFS4ERR_INVAL);
		/* malformed: short, long, a time_how out of range */
		fattr4 sh = f_mode(0644);
		sh.attr_vals.len = 3;
		CHECK_EQ(setattr(1, &at_root, &ffh, sh, NULL), NFS4ERR_BADXDR);
		fb_init(&b);
		fb_bit(&b, FATTR4_MODE);
		xdr_enc_uint32(&b.b.e, 0644);
		xdr_enc_uint32(&b.b.e, 0);
		CHECK_EQ(setattr(1, &at_root, &ffh, fb_done(&b), NULL), NFS4ERR_BADXDR);
		fattr4 bh = f_times(0, 0, -1, 0);
		xdr_put32((uint8_t *)bh.attr_vals.val, 7);
		CHECK_EQ(setattr(1, &at_root, &ffh, bh, NULL), NFS4ERR_BADXDR);
		fb_init(&b);
		fb_bit(&b, FATTR4_OWNER);
		xdr_enc_uint32(&b.b.e, 1000); /* a string longer than what follows */
		CHECK_EQ(setattr(1, &at_root, &ffh, fb_done(&b), NULL), NFS4ERR_BADXDR);
		CHECK_EQ(at_stat(&t, file).mode, 0660);
	}

	/* mode_set_masked (§6.2.4): only the masked bits move */
	{
		struct fb b;
		fb_init(&b);
		fb_bit(&b, FATTR4_MODE_SET_MASKED);
		xdr_enc_uint32(&b.b.e, 01000 | 0002);
		xdr_enc_uint32(&b.b.e, 01000);
		fattr4 mm = fb_done(&b);
		CHECK_EQ(setattr(1, &owner, &dfh, mm, &set), NFS4_OK);
		check_set_is(&set, &mm);
		CHECK_EQ(at_stat(&t, dir).mode, 01755);
		CHECK_EQ(setattr(1, &other, &dfh, mm, NULL), NFS4ERR_PERM);
		fb_init(&b);
		fb_bit(&b, FATTR4_MODE);
		fb_bit(&b, FATTR4_MODE_SET_MASKED);
		xdr_enc_uint32(&b.b.e, 0700);
		xdr_enc_uint32(&b.b.e, 0);
		xdr_enc_uint32(&b.b.e, 01000);
		CHECK_EQ(setattr(1, &at_root, &dfh, fb_done(&b), NULL), NFS4ERR_INVAL);
		CHECK_EQ(at_stat(&t, dir).mode, 01755);
	}

	/* several at once, in one change */
	{
		struct fb b;
		fb_init(&b);
		fb_bit(&b, FATTR4_SIZE);
		fb_bit(&b, FATTR4_MODE);
		fb_bit(&b, FATTR4_OWNER);
		fb_bit(&b, FATTR4_TIME_MODIFY_SET);
		xdr_enc_uint64(&b.b.e, 77);
		xdr_enc_uint32(&b.b.e, 0604);
		utf8str_mixed s = at_str("1234");
		xdr_enc_utf8str_mixed(&b.b.e, &s);
		settime4 tm = {.set_it = SET_TO_CLIENT_TIME4};
		tm.u.time.seconds = 42;
		xdr_enc_settime4(&b.b.e, &tm);
		fattr4 all = fb_done(&b);
		uint64_t c0 = at_stat(&t, file).change;
		CHECK_EQ(setattr(2, &at_root, &ffh, all, &set), NFS4_OK);
		check_set_is(&set, &all);
		m = at_stat(&t, file);
		CHECK(m.size == 77 && m.mode == 0604 && m.uid == 1234 && m.mtime.sec == 42);
		CHECK_EQ(m.change, c0 + 1);
	}

	/* an empty SETATTR sets nothing */
	{
		fattr4 none = {{0, NULL}, {0, NULL}};
		CHECK_EQ(setattr(1, &at_root, &ffh, none, &set), NFS4_OK);
		CHECK_EQ(set.len, 0);
	}

	/* read-only export, pseudo filesystem */
	uint64_t ro = at_export_root(&t, "/ro");
	nfs_fh4 rofh = at_fh(&t, &arena, ro, at_export_id(&t, "/ro"));
	CHECK_EQ(setattr(1, &at_root, &rofh, f_mode(0700), NULL), NFS4ERR_ROFS);
	CHECK_EQ(at_stat(&t, ro).mode, 0755);
	nfs_fh4 pfh = at_fh(&t, &arena, root, 0);
	CHECK_EQ(setattr(1, &at_root, &pfh, f_mode(0700), NULL), NFS4ERR_ROFS);

	check_createattrs();

	/* root squashed: root is nobody */
	at_close(&a);
	mt_stop(&t);
	mt_write_file(t.exports_path, "/ *(rw,insecure)\n", 0644);
	mt_boot(&t);
	at_open(&a, &t, "setattr-squash");
	ffh = at_fh(&t, &arena, file, at_export_id(&t, "/"));
	CHECK_EQ(setattr(1, &at_root, &ffh, f_owner("0", NULL), NULL), NFS4ERR_PERM);
	CHECK_EQ(setattr(1, &at_root, &ffh, f_mode(0777), NULL), NFS4ERR_PERM);

	at_close(&a);
	xdr_arena_release(&arena);
	mt_finish(&t);
	return 0;
}
