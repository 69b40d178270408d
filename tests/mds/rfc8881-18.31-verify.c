/* SPDX-License-Identifier: MIT */
/*
 * VERIFY and NVERIFY (RFC 8881 §18.31, §18.15): the attributes GETATTR
 * returned verify (NVERIFY: NFS4ERR_SAME); a different value does not
 * (VERIFY: NFS4ERR_NOT_SAME) and ends the COMPOUND; rdattr_error and
 * write-only attributes are NFS4ERR_INVAL, unsupported ones
 * NFS4ERR_ATTRNOTSUPP, a malformed attrlist NFS4ERR_BADXDR; the cache
 * check the Linux client makes (NVERIFY of change, then GETATTR) works;
 * random bitmaps and attrlists get only the errors the RFC allows.
 */
#include "config.h"

#include "tests/mds/attr-test.h"

static struct mt t;
static struct at a;
static struct xdr_arena arena;

static nfsstat4 run(uint32_t op, const nfs_fh4 *fh, fattr4 f, unsigned *nres)
{
	nfs_argop4 ops[3] = {
	    mt_putfh(fh), {.argop = op}, at_getattr(mt_bitmap(&arena, FATTR4_SIZE, -1))};
	if (op == OP_VERIFY)
		ops[1].u.opverify.obj_attributes = f;
	else
		ops[1].u.opnverify.obj_attributes = f;
	COMPOUND4res res;
	at_compound(&a, 1, &at_root, ops, 3, &res, &arena);
	CHECK_EQ(at_status(&res, 0), NFS4_OK);
	if (nres)
		*nres = res.resarray.len - 1;
	return at_status(&res, 1);
}

/* The fattr4 GETATTR returns for want. */
static fattr4 current(const nfs_fh4 *fh, bitmap4 want)
{
	nfs_argop4 ops[2] = {mt_putfh(fh), at_getattr(want)};
	COMPOUND4res res;
	at_compound(&a, 1, &at_root, ops, 2, &res, &arena);
	CHECK_EQ(at_status(&res, 1), NFS4_OK);
	return res.resarray.val[2].u.opgetattr.u.resok4.obj_attributes;
}

static fattr4 one_u32(unsigned n, uint32_t v)
{
	uint32_t *w = xdr_arena_alloc(&arena, 3 * sizeof(uint32_t));
	uint8_t *p = xdr_arena_alloc(&arena, 4);
	CHECK(w && p);
	w[n / 32] = 1u << (n % 32);
	xdr_put32(p, v);
	fattr4 f = {{n / 32 + 1, w}, {4, p}};
	return f;
}

int main(void)
{
	mt_start(&t, "/ *(rw,no_root_squash,insecure)\n", NULL);
	uint8_t ab[1 << 16];
	xdr_arena_init(&arena, ab, sizeof(ab), 64u << 20);
	at_open(&a, &t, "verify");
	uint64_t root = mds_store_root(braid_mds_store(t.mds));
	uint64_t file = at_make(&t, root, "f", MDS_REG, 0644, 1000, 100);
	nfs_fh4 fh = at_fh(&t, &arena, file, at_export_id(&t, "/"));
	unsigned nres;

	/* what GETATTR says verifies, one attribute or many */
	bitmap4 many = mt_bitmap(&arena, FATTR4_TYPE, FATTR4_CHANGE, FATTR4_SIZE, FATTR4_FSID,
				 FATTR4_FILEHANDLE, FATTR4_FILEID, FATTR4_MODE, FATTR4_OWNER,
				 FATTR4_OWNER_GROUP, FATTR4_TIME_MODIFY, FATTR4_NO_TRUNC,
				 FATTR4_SUPPORTED_ATTRS, -1);
	fattr4 now = current(&fh, many);
	CHECK_EQ(run(OP_VERIFY, &fh, now, &nres), NFS4_OK);
	CHECK_EQ(nres, 3); /* PUTFH VERIFY GETATTR all ran */
	CHECK_EQ(run(OP_NVERIFY, &fh, now, &nres), NFS4ERR_SAME);
	CHECK_EQ(nres, 2); /* stopped there */
	CHECK_EQ(run(OP_VERIFY, &fh, one_u32(FATTR4_MODE, 0644), NULL), NFS4_OK);
	CHECK_EQ(run(OP_VERIFY, &fh, one_u32(FATTR4_TYPE, NF4REG), NULL), NFS4_OK);

	/* a different value */
	CHECK_EQ(run(OP_VERIFY, &fh, one_u32(FATTR4_MODE, 0600), &nres), NFS4ERR_NOT_SAME);
	CHECK_EQ(nres, 2);
	CHECK_EQ(run(OP_NVERIFY, &fh, one_u32(FATTR4_MODE, 0600), &nres), NFS4_OK);
	CHECK_EQ(nres, 3);
	CHECK_EQ(run(OP_VERIFY, &fh, one_u32(FATTR4_TYPE, NF4DIR), NULL), NFS4ERR_NOT_SAME);

	/* the client's cache check: NVERIFY change, GETATTR only if it moved */
	fattr4 ch = current(&fh, mt_bitmap(&arena, FATTR4_CHANGE, -1));
	CHECK_EQ(run(OP_NVERIFY, &fh, ch, NULL), NFS4ERR_SAME);
	struct mds_setattr_args sa = {.ino = file, .mask = MDS_SET_MODE, .mode = 0600};
	CHECK(mds_inode_setattr(braid_mds_store(t.mds), &sa, NULL) == 0);
	CHECK_EQ(run(OP_NVERIFY, &fh, ch, &nres), NFS4_OK);
	CHECK_EQ(nres, 3);
	CHECK_EQ(run(OP_VERIFY, &fh, now, NULL), NFS4ERR_NOT_SAME);

	/* not comparable */
	CHECK_EQ(run(OP_VERIFY, &fh, one_u32(FATTR4_RDATTR_ERROR, 0), NULL), NFS4ERR_INVAL);
	CHECK_EQ(run(OP_NVERIFY, &fh, one_u32(FATTR4_RDATTR_ERROR, 0), NULL), NFS4ERR_INVAL);
	CHECK_EQ(run(OP_VERIFY, &fh, one_u32(FATTR4_TIME_MODIFY_SET, 0), NULL), NFS4ERR_INVAL);
	CHECK_EQ(run(OP_VERIFY, &fh, one_u32(FATTR4_ACL, 0), NULL), NFS4ERR_ATTRNOTSUPP);
	CHECK_EQ(run(OP_NVERIFY, &fh, one_u32(FATTR4_HIDDEN, 0), NULL), NFS4ERR_ATTRNOTSUPP);
	CHECK_EQ(run(OP_VERIFY, &fh, one_u32(FATTR4_XATTR_SUPPORT, 1), NULL),
		 NFS4ERR_ATTRNOTSUPP); /* a 4.2 attribute in 4.1 */

	/* malformed */
	fattr4 sh = one_u32(FATTR4_MODE, 0600);
	sh.attr_vals.len = 2;
	CHECK_EQ(run(OP_VERIFY, &fh, sh, NULL), NFS4ERR_BADXDR);
	CHECK_EQ(run(OP_NVERIFY, &fh, sh, NULL), NFS4ERR_BADXDR);
	fattr4 lg = current(&fh, mt_bitmap(&arena, FATTR4_MODE, -1));
	uint8_t *p = xdr_arena_alloc(&arena, lg.attr_vals.len + 4);
	memcpy(p, lg.attr_vals.val, lg.attr_vals.len);
	lg.attr_vals = xdr_opaque_of(p, lg.attr_vals.len + 4);
	CHECK_EQ(run(OP_NVERIFY, &fh, lg, NULL), NFS4ERR_BADXDR);
	CHECK_EQ(run(OP_VERIFY, &fh, one_u32(FATTR4_NO_TRUNC, 2), NULL), NFS4ERR_BADXDR);
	CHECK_EQ(run(OP_VERIFY, &fh, one_u32(FATTR4_OWNER, 4000), NULL), NFS4ERR_BADXDR);

	/* an empty attribute set is the same */
	fattr4 none = {{0, NULL}, {0, NULL}};
	CHECK_EQ(run(OP_VERIFY, &fh, none, NULL), NFS4_OK);
	CHECK_EQ(run(OP_NVERIFY, &fh, none, NULL), NFS4ERR_SAME);

	/* hostile attrlists: random bitmaps and bytes never crash the
	 * server, and answer only what the RFC allows */
	uint64_t rnd = 0x9e3779b97f4a7c15ull;
	uint64_t victim = at_make(&t, root, "victim", MDS_REG, 0644, 1000, 100);
	nfs_fh4 vfh = at_fh(&t, &arena, victim, at_export_id(&t, "/"));
	const struct at_cred other = {3000, 3000, 0, {0}};
	struct at_attrs sup;
	CHECK_EQ(at_get(&a, 2, &at_root, &vfh, mt_bitmap(&arena, FATTR4_SUPPORTED_ATTRS, -1),
			&arena, &sup),
		 NFS4_OK);
	unsigned counts[4] = {0}; /* OK/SAME/NOT_SAME, BADXDR, ATTRNOTSUPP, others */
	for (int i = 0; i < 300; i++) {
		uint32_t *w = xdr_arena_alloc(&arena, 4 * sizeof(uint32_t));
		uint8_t *vals = xdr_arena_alloc(&arena, 64);
		CHECK(w && vals);
		for (unsigned k = 0; k < 3; k++) {
			rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
			w[k] = (uint32_t)(rnd >> 32) & (uint32_t)(rnd >> 7); /* sparse */
			if (i % 4 != 0) /* mostly attributes the server knows */
				w[k] &= k < sup.supported.len ? sup.supported.val[k] : 0;
		}
		uint32_t len = (uint32_t)(rnd >> 40) % 64;
		for (uint32_t k = 0; k < len; k++) {
			rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
			vals[k] = (uint8_t)(rnd >> 56) & (k % 4 == 3 ? 0xff : 0x03);
		}
		fattr4 f = {{3, w}, {len, vals}};
		uint32_t minor = 1 + (uint32_t)(i / 4 % 2);
		if (i % 4 == 1) {
			/* well formed: what GETATTR says, readable attributes only,
			 * now and then with one byte changed */
			w[0] &= ~(1u << FATTR4_RDATTR_ERROR);
			w[1] &= ~(1u << (FATTR4_TIME_ACCESS_SET - 32) |
				  1u << (FATTR4_TIME_MODIFY_SET - 32));
			w[2] &=
			    ~(1u << (FATTR4_MODE_SET_MASKED - 64) | 1u << (FATTR4_MODE_UMASK - 64));
			if (minor == 1)
				w[2] &= ~(1u << (FATTR4_CHANGE_ATTR_TYPE - 64) |
					  1u << (FATTR4_XATTR_SUPPORT - 64));
			nfs_argop4 g[2] = {mt_putfh(&vfh), at_getattr((bitmap4){3, w})};
			COMPOUND4res gr;
			at_compound(&a, minor, &at_root, g, 2, &gr, &arena);
			CHECK_EQ(at_status(&gr, 1), NFS4_OK);
			f = gr.resarray.val[2].u.opgetattr.u.resok4.obj_attributes;
			if (i % 8 == 5 && f.attr_vals.len) {
				uint8_t *c = xdr_arena_alloc(&arena, f.attr_vals.len);
				memcpy(c, f.attr_vals.val, f.attr_vals.len);
				c[(rnd >> 20) % f.attr_vals.len] ^= 0x01;
				f.attr_vals.val = c;
			}
		}
		uint32_t op = i % 3 == 0 ? OP_VERIFY : i % 3 == 1 ? OP_NVERIFY : OP_SETATTR;
		nfs_argop4 ops[2] = {mt_putfh(&vfh), {.argop = op}};
		if (op == OP_VERIFY)
			ops[1].u.opverify.obj_attributes = f;
		else if (op == OP_NVERIFY)
			ops[1].u.opnverify.obj_attributes = f;
		else
			ops[1].u.opsetattr.obj_attributes = f;
		COMPOUND4res res;
		at_compound(&a, minor, &other, ops, 2, &res, &arena);
		nfsstat4 st = at_status(&res, 1);
		CHECK(st == NFS4_OK || st == NFS4ERR_SAME || st == NFS4ERR_NOT_SAME ||
		      st == NFS4ERR_INVAL || st == NFS4ERR_ATTRNOTSUPP || st == NFS4ERR_BADXDR ||
		      st == NFS4ERR_BADOWNER || st == NFS4ERR_PERM || st == NFS4ERR_ACCESS ||
		      st == NFS4ERR_FBIG);
		counts[st == NFS4_OK || st == NFS4ERR_SAME || st == NFS4ERR_NOT_SAME ? 0
		       : st == NFS4ERR_BADXDR					     ? 1
		       : st == NFS4ERR_ATTRNOTSUPP				     ? 2
										     : 3]++;
		if (st == NFS4_OK && op == OP_SETATTR)
			CHECK_EQ(res.resarray.val[2].u.opsetattr.attrsset.len > 0,
				 w[0] | w[1] | w[2] ? 1 : 0);
	}
	for (unsigned k = 0; k < 4; k++)
		CHECK(counts[k] > 0); /* each kind of answer came up */
	CHECK_EQ(run(OP_VERIFY, &fh, one_u32(FATTR4_TYPE, NF4REG), NULL), NFS4_OK);

	at_close(&a);
	xdr_arena_release(&arena);
	mt_finish(&t);
	return 0;
}
