/* SPDX-License-Identifier: MIT */
/* Helpers for the namespace op tests (tests/mds/dir-test.h). */
#include "config.h"

#include "tests/mds/mds-test.h"
#include "tests/mds/dir-test.h"

uint64_t dt_fh_ino(const struct dt_fh *f)
{
	uint64_t v;
	CHECK(f->len == 40);
	memcpy(&v, f->b + 16, 8);
	return be64toh(v);
}

uint32_t dt_fh_export(const struct dt_fh *f)
{
	uint32_t v;
	CHECK(f->len == 40);
	memcpy(&v, f->b + 8, 4);
	return be32toh(v);
}

struct dt_fh dt_getfh_res(const COMPOUND4res *res, unsigned i)
{
	struct dt_fh f;
	CHECK_EQ(mt_status(res, i), NFS4_OK);
	const nfs_fh4 *o = &res->resarray.val[i + 1].u.opgetfh.u.resok4.object;
	CHECK(o->len <= NFS4_FHSIZE);
	memcpy(f.b, o->val, o->len);
	f.len = o->len;
	return f;
}

nfsstat4 dt_walk(struct nfs41c_session *s, const char *path, struct dt_fh *out)
{
	nfs_argop4 ops[34];
	char names[32][256];
	unsigned n = 0;
	ops[n++] = mt_putrootfh();
	for (const char *p = path; *p;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		size_t len = strcspn(p, "/");
		CHECK(n < 33 && len < 256);
		memcpy(names[n], p, len);
		names[n][len] = 0;
		ops[n] = mt_lookup(names[n]);
		n++;
		p += len;
	}
	ops[n++] = mt_getfh();
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	COMPOUND4res res;
	mt_compound(s, ops, n, &res, &ar);
	nfsstat4 st = res.status;
	if (st == NFS4_OK)
		*out = dt_getfh_res(&res, n - 1);
	xdr_arena_release(&ar);
	return st;
}

nfsstat4 dt_on(struct nfs41c_session *s, const struct dt_fh *fh, nfs_argop4 op, COMPOUND4res *res,
	       struct xdr_arena *ar)
{
	nfs_argop4 ops[2] = {dt_op(OP_PUTFH), op};
	ops[0].u.opputfh.object = dt_fh4(fh);
	mt_compound(s, ops, 2, res, ar);
	if (res->resarray.len < 3) /* PUTFH failed */
		return res->status;
	return mt_status(res, 1);
}

nfsstat4 dt_do(struct nfs41c_session *s, const struct dt_fh *fh, nfs_argop4 op)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	COMPOUND4res res;
	nfsstat4 st = dt_on(s, fh, op, &res, &ar);
	xdr_arena_release(&ar);
	return st;
}

nfsstat4 dt_do2(struct nfs41c_session *s, const struct dt_fh *src, const struct dt_fh *dst,
		nfs_argop4 op, COMPOUND4res *res, struct xdr_arena *ar)
{
	nfs_argop4 ops[4] = {dt_op(OP_PUTFH), dt_savefh(), dt_op(OP_PUTFH), op};
	ops[0].u.opputfh.object = dt_fh4(src);
	ops[2].u.opputfh.object = dt_fh4(dst);
	mt_compound(s, ops, 4, res, ar);
	if (res->resarray.len < 5)
		return res->status;
	return mt_status(res, 3);
}

uint64_t dt_store_make(struct mt *t, uint64_t dir, const char *name, uint8_t type, uint32_t mode,
		       uint32_t uid, uint32_t gid)
{
	struct mds_create_args a = {
	    .dir = dir,
	    .name = name,
	    .name_len = strlen(name),
	    .type = type,
	    .how = MDS_CREATE_GUARDED,
	    .mode = mode,
	    .uid = uid,
	    .gid = gid,
	    .symlink = "target",
	    .symlink_len = 6,
	};
	struct mds_create_res r;
	int rc = mds_dir_create(braid_mds_store(t->mds), &a, &r);
	if (rc)
		fprintf(stderr, "store create %s: %d\n", name, rc);
	CHECK(rc == 0);
	return r.attr.ino;
}

int dt_store_lookup(struct mt *t, uint64_t dir, const char *name, struct mds_attr *attr)
{
	uint64_t ino;
	return mds_dir_lookup(braid_mds_store(t->mds), dir, name, strlen(name), &ino, attr);
}

struct mds_attr dt_store_attr(struct mt *t, uint64_t ino)
{
	struct mds_attr a;
	CHECK(mds_inode_getattr(braid_mds_store(t->mds), ino, &a) == 0);
	return a;
}

void dt_exports(struct mt *t, const char *text)
{
	char msg[512];
	mt_write_file(t->exports_path, text, 0644);
	int rc = braid_mds_exports_reload(t->mds, msg, sizeof(msg));
	if (rc)
		fprintf(stderr, "exports reload: %s\n", msg);
	CHECK(rc == 0);
}

uint64_t dt_root(struct mt *t)
{
	return mds_store_root(braid_mds_store(t->mds));
}
