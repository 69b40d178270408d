/* SPDX-License-Identifier: MIT */
/*
 * CREATE (RFC 8881 §18.4): directories, symlinks, block and character
 * devices, sockets and FIFOs, each becoming the current filehandle, with
 * the directory's change_info (before = its change before, after = its
 * change after); regular files (and anything else) are NFS4ERR_BADTYPE;
 * an existing name NFS4ERR_EXIST; createattrs are applied and reported in
 * attrset; the owner is the request's credential after squashing; write
 * and search permission on the directory are needed (a non-root AUTH_SYS
 * user in a root-owned 0755 directory gets NFS4ERR_ACCESS); a read-only
 * export and the pseudo filesystem are NFS4ERR_ROFS.
 */
#include "config.h"

#include "tests/mds/mds-test.h"
#include "tests/mds/dir-test.h"

#define MODE_BIT  (FATTR4_MODE - 32)
#define OWNER_BIT (FATTR4_OWNER - 32)

/* PUTFH(dir) CREATE GETFH; the new handle and cinfo/attrset when it worked. */
static nfsstat4 create(struct nfs41c_session *s, const struct dt_fh *dir, nfs_argop4 op,
		       struct dt_fh *out, change_info4 *ci, uint32_t *attrset1)
{
	nfs_argop4 ops[3] = {dt_op(OP_PUTFH), op, mt_getfh()};
	ops[0].u.opputfh.object = dt_fh4(dir);
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	COMPOUND4res res;
	mt_compound(s, ops, 3, &res, &ar);
	nfsstat4 st = res.status;
	if (!st) {
		const CREATE4resok *ok = &res.resarray.val[2].u.opcreate.u.resok4;
		if (ci)
			*ci = ok->cinfo;
		if (attrset1)
			*attrset1 = ok->attrset.len > 1 ? ok->attrset.val[1] : 0;
		if (out)
			*out = dt_getfh_res(&res, 2);
	} else {
		CHECK_EQ(mt_status(&res, 1), st); /* CREATE itself failed */
	}
	xdr_arena_release(&ar);
	return st;
}

/* createattrs: mode and/or owner (word 1 of the bitmap). */
struct cattrs {
	uint32_t mask[2];
	uint8_t vals[64];
};
static fattr4 cattrs(struct cattrs *c, int mode, const char *owner)
{
	memset(c, 0, sizeof(*c));
	uint32_t n = 0;
	if (mode >= 0) {
		c->mask[1] |= 1u << MODE_BIT;
		xdr_put32(c->vals + n, (uint32_t)mode);
		n += 4;
	}
	if (owner) {
		uint32_t len = (uint32_t)strlen(owner);
		c->mask[1] |= 1u << OWNER_BIT;
		xdr_put32(c->vals + n, len);
		memcpy(c->vals + n + 4, owner, len);
		n += 4 + ((len + 3) & ~3u);
	}
	fattr4 f = {.attrmask = {.len = 2, .val = c->mask}, .attr_vals = xdr_opaque_of(c->vals, n)};
	return f;
}

static void every_type(struct mt *t, struct nfs41c_session *s, const struct dt_fh *root)
{
	static const struct {
		nfs_ftype4 t;
		const char *name;
		uint8_t mt;
	} types[] = {
	    {NF4DIR, "dir", MDS_DIR}, {NF4LNK, "lnk", MDS_LNK},	   {NF4BLK, "blk", MDS_BLK},
	    {NF4CHR, "chr", MDS_CHR}, {NF4SOCK, "sock", MDS_SOCK}, {NF4FIFO, "fifo", MDS_FIFO},
	};
	for (unsigned i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		nfs_argop4 op = dt_create(types[i].t, types[i].name);
		if (types[i].t == NF4LNK)
			op.u.opcreate.objtype.u.linkdata = dt_name("some/target");
		if (types[i].t == NF4BLK || types[i].t == NF4CHR) {
			op.u.opcreate.objtype.u.devdata.specdata1 = 8 + i;
			op.u.opcreate.objtype.u.devdata.specdata2 = 64 + i;
		}
		uint64_t before = dt_store_attr(t, dt_root(t)).change;
		struct dt_fh fh;
		change_info4 ci;
		uint32_t set1 = 1;
		CHECK_EQ(create(s, root, op, &fh, &ci, &set1), NFS4_OK);
		CHECK_EQ(set1, 0); /* no createattrs: nothing set */
		struct mds_attr a;
		CHECK(dt_store_lookup(t, dt_root(t), types[i].name, &a) == 0);
		CHECK_EQ(a.type, types[i].mt);
		CHECK_EQ(dt_fh_ino(&fh), a.ino); /* the new object is the current fh */
		CHECK_EQ(dt_fh_export(&fh), dt_fh_export(root));
		CHECK_EQ(a.uid, 0);
		CHECK(ci.atomic);
		CHECK_EQ(ci.before, before);
		CHECK_EQ(ci.after, dt_store_attr(t, dt_root(t)).change);
		CHECK(ci.after > ci.before);
		if (types[i].t == NF4BLK || types[i].t == NF4CHR) {
			CHECK_EQ(a.rdev_major, 8 + i);
			CHECK_EQ(a.rdev_minor, 64 + i);
		}
		if (types[i].t == NF4LNK) {
			char buf[64];
			size_t len;
			CHECK(mds_inode_readlink(braid_mds_store(t->mds), a.ino, buf, sizeof(buf),
						 &len) == 0);
			CHECK(len == 11 && memcmp(buf, "some/target", 11) == 0);
		}
	}
	/* the new directory is the current fh: create inside it at once */
	nfs_argop4 ops[4] = {dt_op(OP_PUTFH), dt_mkdir("outer"), dt_mkdir("inner"), mt_getfh()};
	ops[0].u.opputfh.object = dt_fh4(root);
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	COMPOUND4res res;
	mt_compound(s, ops, 4, &res, &ar);
	CHECK_EQ(res.status, NFS4_OK);
	struct dt_fh inner = dt_getfh_res(&res, 3);
	xdr_arena_release(&ar);
	struct mds_attr outer, in;
	CHECK(dt_store_lookup(t, dt_root(t), "outer", &outer) == 0);
	CHECK(dt_store_lookup(t, outer.ino, "inner", &in) == 0);
	CHECK_EQ(dt_fh_ino(&inner), in.ino);
	CHECK_EQ(in.parent, outer.ino);
}

static void refusals(struct mt *t, struct nfs41c_session *s, const struct dt_fh *root)
{
	CHECK_EQ(create(s, root, dt_create(NF4REG, "reg"), NULL, NULL, NULL), NFS4ERR_BADTYPE);
	CHECK_EQ(create(s, root, dt_create(NF4ATTRDIR, "ad"), NULL, NULL, NULL), NFS4ERR_BADTYPE);
	CHECK_EQ(create(s, root, dt_create(NF4NAMEDATTR, "na"), NULL, NULL, NULL), NFS4ERR_BADTYPE);
	CHECK_EQ(create(s, root, dt_create(99, "bogus"), NULL, NULL, NULL), NFS4ERR_BADTYPE);
	struct mds_attr a;
	CHECK_EQ(dt_store_lookup(t, dt_root(t), "reg", &a), -ENOENT);
	CHECK_EQ(create(s, root, dt_mkdir("dir"), NULL, NULL, NULL), NFS4ERR_EXIST);
	CHECK_EQ(create(s, root, dt_create(NF4FIFO, "lnk"), NULL, NULL, NULL), NFS4ERR_EXIST);
	CHECK_EQ(create(s, root, dt_mkdir("."), NULL, NULL, NULL), NFS4ERR_BADNAME);
	CHECK_EQ(create(s, root, dt_mkdir(".."), NULL, NULL, NULL), NFS4ERR_BADNAME);
	CHECK_EQ(create(s, root, dt_mkdir(""), NULL, NULL, NULL), NFS4ERR_INVAL);
	CHECK_EQ(create(s, root, dt_mkdir("a/b"), NULL, NULL, NULL), NFS4ERR_BADCHAR);
	CHECK_EQ(create(s, root, dt_symlink("empty", ""), NULL, NULL, NULL), NFS4ERR_INVAL);
	struct dt_fh fifo;
	CHECK_EQ(dt_walk(s, "fifo", &fifo), NFS4_OK);
	CHECK_EQ(create(s, &fifo, dt_mkdir("x"), NULL, NULL, NULL), NFS4ERR_NOTDIR);
}

static void attrs_and_owner(struct mt *t, struct nfs41c_session *root_s,
			    struct nfs41c_session *user, const struct dt_fh *root)
{
	struct cattrs ca;
	uint32_t set1 = 0;
	struct dt_fh fh;
	nfs_argop4 op = dt_mkdir("m700");
	op.u.opcreate.createattrs = cattrs(&ca, 0700, NULL);
	CHECK_EQ(create(root_s, root, op, &fh, NULL, &set1), NFS4_OK);
	CHECK_EQ(set1, 1u << MODE_BIT);
	struct mds_attr a;
	CHECK(dt_store_lookup(t, dt_root(t), "m700", &a) == 0);
	CHECK_EQ(a.mode, 0700);

	op = dt_create(NF4FIFO, "given");
	op.u.opcreate.createattrs = cattrs(&ca, 0640, "1234");
	CHECK_EQ(create(root_s, root, op, &fh, NULL, &set1), NFS4_OK);
	CHECK_EQ(set1, (1u << MODE_BIT) | (1u << OWNER_BIT));
	CHECK(dt_store_lookup(t, dt_root(t), "given", &a) == 0);
	CHECK_EQ(a.uid, 1234);
	CHECK_EQ(a.mode, 0640);

	/* a user's objects are its own; it may not give them away */
	dt_store_make(t, dt_root(t), "pub", MDS_DIR, 0777, 0, 0);
	struct dt_fh pub;
	CHECK_EQ(dt_walk(user, "pub", &pub), NFS4_OK);
	CHECK_EQ(create(user, &pub, dt_create(NF4SOCK, "mine"), NULL, NULL, NULL), NFS4_OK);
	CHECK(dt_store_lookup(t, dt_fh_ino(&pub), "mine", &a) == 0);
	CHECK_EQ(a.uid, 1000);
	CHECK_EQ(a.gid, 1000);
	op = dt_create(NF4SOCK, "theirs");
	op.u.opcreate.createattrs = cattrs(&ca, -1, "0");
	CHECK_EQ(create(user, &pub, op, NULL, NULL, NULL), NFS4ERR_PERM);
	op.u.opcreate.createattrs = cattrs(&ca, -1, "root");
	CHECK_EQ(create(user, &pub, op, NULL, NULL, NULL), NFS4ERR_BADOWNER);

	/* write permission on the directory: "/" is root's, 0755 */
	CHECK_EQ(create(user, root, dt_mkdir("nope"), NULL, NULL, NULL), NFS4ERR_ACCESS);
	CHECK_EQ(dt_store_lookup(t, dt_root(t), "nope", &a), -ENOENT);

	/* a setgid directory passes on its group, and the bit to directories */
	dt_store_make(t, dt_root(t), "sg", MDS_DIR, 02777, 0, 500);
	struct dt_fh sg;
	CHECK_EQ(dt_walk(user, "sg", &sg), NFS4_OK);
	CHECK_EQ(create(user, &sg, dt_mkdir("sub"), NULL, NULL, NULL), NFS4_OK);
	CHECK(dt_store_lookup(t, dt_fh_ino(&sg), "sub", &a) == 0);
	CHECK_EQ(a.gid, 500);
	CHECK(a.mode & 02000);
}

static void squash_and_rofs(struct mt *t, struct nfs41c_session *s)
{
	/* root_squash (the default): root creates as 65534 */
	struct dt_fh sq, ro, pseudo;
	CHECK_EQ(dt_walk(s, "sq", &sq), NFS4_OK);
	struct mds_setattr_args sa = {.ino = dt_fh_ino(&sq), .mask = MDS_SET_MODE, .mode = 0777};
	CHECK(mds_inode_setattr(braid_mds_store(t->mds), &sa, NULL) == 0);
	CHECK_EQ(create(s, &sq, dt_mkdir("squashed"), NULL, NULL, NULL), NFS4_OK);
	struct mds_attr a;
	CHECK(dt_store_lookup(t, dt_fh_ino(&sq), "squashed", &a) == 0);
	CHECK_EQ(a.uid, 65534);
	CHECK_EQ(a.gid, 65534);

	CHECK_EQ(dt_walk(s, "ro", &ro), NFS4_OK);
	CHECK_EQ(create(s, &ro, dt_mkdir("x"), NULL, NULL, NULL), NFS4ERR_ROFS);

	dt_exports(t, "/a/b *(rw,insecure)\n");
	CHECK_EQ(dt_walk(s, "", &pseudo), NFS4_OK);
	CHECK_EQ(dt_fh_export(&pseudo), 0);
	CHECK_EQ(create(s, &pseudo, dt_mkdir("x"), NULL, NULL, NULL), NFS4ERR_ROFS);
	CHECK_EQ(dt_walk(s, "a", &pseudo), NFS4_OK);
	CHECK_EQ(create(s, &pseudo, dt_mkdir("x"), NULL, NULL, NULL), NFS4ERR_ROFS);
}

int main(void)
{
	struct mt t;
	mt_start(&t,
		 "/ *(rw,no_root_squash,insecure)\n/ro *(ro,no_root_squash,insecure)\n"
		 "/sq *(rw,insecure)\n",
		 NULL);
	struct nfs41c_session *s = mt_session(&t, "create-root", 0, 0);
	struct nfs41c_session *user = mt_session(&t, "create-user", 1000, 1000);
	struct dt_fh root;
	CHECK_EQ(dt_walk(s, "", &root), NFS4_OK);
	every_type(&t, s, &root);
	refusals(&t, s, &root);
	attrs_and_owner(&t, s, user, &root);
	squash_and_rofs(&t, s);
	nfs41c_session_destroy(s);
	nfs41c_session_destroy(user);
	mt_finish(&t);
	return 0;
}
