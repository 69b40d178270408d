/* SPDX-License-Identifier: MIT */
/*
 * READLINK (RFC 8881 §18.24): the target a symlink was created with, byte
 * for byte, up to the longest the server keeps (4096 bytes; one more is
 * NFS4ERR_NAMETOOLONG at CREATE); anything but a symlink is
 * NFS4ERR_WRONG_TYPE (NFSv4.1's answer; NFSv4.0 said INVAL).
 */
#include "config.h"

#include "tests/mds/mds-test.h"
#include "tests/mds/dir-test.h"

/* PUTFH(dir) CREATE(NF4LNK name -> target) READLINK: READLINK's status. */
static nfsstat4 mklink_read(struct nfs41c_session *s, const struct dt_fh *dir, const char *name,
			    const char *target, size_t len)
{
	nfs_argop4 ops[3] = {dt_op(OP_PUTFH), dt_symlink(name, ""), dt_op(OP_READLINK)};
	ops[0].u.opputfh.object = dt_fh4(dir);
	ops[1].u.opcreate.objtype.u.linkdata = xdr_opaque_of(target, len);
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	COMPOUND4res res;
	mt_compound(s, ops, 3, &res, &ar);
	nfsstat4 st = res.status;
	if (!st) {
		const linktext4 *l = &res.resarray.val[3].u.opreadlink.u.resok4.link;
		CHECK_EQ(l->len, len);
		CHECK(memcmp(l->val, target, len) == 0);
	}
	xdr_arena_release(&ar);
	return st;
}

int main(void)
{
	struct mt t;
	mt_start(&t, "/ *(rw,no_root_squash,insecure)\n", NULL);
	struct nfs41c_session *s = mt_session(&t, "readlink", 0, 0);
	struct dt_fh root, f;
	CHECK_EQ(dt_walk(s, "", &root), NFS4_OK);

	CHECK_EQ(mklink_read(s, &root, "rel", "../x/y", 6), NFS4_OK);
	CHECK_EQ(mklink_read(s, &root, "abs", "/etc/passwd", 11), NFS4_OK);
	CHECK_EQ(mklink_read(s, &root, "odd", "\xc3\xa9 \t spaces ", 12), NFS4_OK);
	static char longest[4097];
	for (size_t i = 0; i < sizeof(longest); i++)
		longest[i] = (char)('a' + i % 26);
	CHECK_EQ(mklink_read(s, &root, "long", longest, 4096), NFS4_OK);
	CHECK_EQ(mklink_read(s, &root, "toolong", longest, 4097), NFS4ERR_NAMETOOLONG);

	/* a later READLINK through the handle LOOKUP gives */
	struct dt_fh l;
	CHECK_EQ(dt_walk(s, "rel", &l), NFS4_OK);
	CHECK_EQ(dt_do(s, &l, dt_op(OP_READLINK)), NFS4_OK);

	dt_store_make(&t, dt_root(&t), "file", MDS_REG, 0644, 0, 0);
	dt_store_make(&t, dt_root(&t), "fifo", MDS_FIFO, 0644, 0, 0);
	CHECK_EQ(dt_walk(s, "file", &f), NFS4_OK);
	CHECK_EQ(dt_do(s, &f, dt_op(OP_READLINK)), NFS4ERR_WRONG_TYPE);
	CHECK_EQ(dt_walk(s, "fifo", &f), NFS4_OK);
	CHECK_EQ(dt_do(s, &f, dt_op(OP_READLINK)), NFS4ERR_WRONG_TYPE);
	CHECK_EQ(dt_do(s, &root, dt_op(OP_READLINK)), NFS4ERR_WRONG_TYPE);

	nfs41c_session_destroy(s);
	mt_finish(&t);
	return 0;
}
