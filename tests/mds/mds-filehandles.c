/* SPDX-License-Identifier: MIT */
/*
 * Filehandles (mds/fh.h, RFC 8881 §4.2.3, §15.1.2): PUTFH of a
 * handle that is not genuine (any bit flipped, cut short, grown, all
 * zeros, made under another cluster key or key id) is NFS4ERR_BADHANDLE;
 * a genuine handle of an inode that is gone, of another generation of the
 * inode number, or reached through an export that no longer exists is
 * NFS4ERR_STALE; GETFH gives back what PUTFH set.
 */
#include "config.h"

#include "mds/fh.h"
#include "mds/mds_impl.h"
#include "tests/mds/mds-test.h"
#include "tests/mds/dir-test.h"

static nfsstat4 putfh(struct nfs41c_session *s, const void *fh, uint32_t len)
{
	nfs_argop4 ops[2] = {dt_op(OP_PUTFH), mt_getfh()};
	ops[0].u.opputfh.object = xdr_opaque_of(fh, len);
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	COMPOUND4res res;
	mt_compound(s, ops, 2, &res, &ar);
	nfsstat4 st = mt_status(&res, 0);
	if (!st) {
		const nfs_fh4 *o = &res.resarray.val[2].u.opgetfh.u.resok4.object;
		CHECK(o->len == len && memcmp(o->val, fh, len) == 0);
	}
	xdr_arena_release(&ar);
	return st;
}

int main(void)
{
	struct mt t;
	mt_start(&t, "/ *(rw,no_root_squash,insecure)\n/e *(rw,no_root_squash,insecure)\n", NULL);
	struct nfs41c_session *s = mt_session(&t, "filehandles", 0, 0);
	uint64_t f = dt_store_make(&t, dt_root(&t), "f", MDS_REG, 0644, 0, 0);
	struct dt_fh fh, efh;
	CHECK_EQ(dt_walk(s, "f", &fh), NFS4_OK);
	CHECK_EQ(fh.len, MDS_FH_SIZE);
	CHECK_EQ(putfh(s, fh.b, fh.len), NFS4_OK);

	/* every single bit */
	for (unsigned i = 0; i < fh.len * 8; i++) {
		struct dt_fh b = fh;
		b.b[i / 8] ^= (uint8_t)(1u << (i % 8));
		CHECK_EQ(putfh(s, b.b, b.len), NFS4ERR_BADHANDLE);
	}
	/* every length but the right one, up to NFS4_FHSIZE */
	uint8_t big[NFS4_FHSIZE] = {0};
	memcpy(big, fh.b, fh.len);
	for (uint32_t len = 0; len <= NFS4_FHSIZE; len++)
		if (len != fh.len)
			CHECK_EQ(putfh(s, big, len), NFS4ERR_BADHANDLE);
	uint8_t zeros[MDS_FH_SIZE] = {0};
	CHECK_EQ(putfh(s, zeros, sizeof(zeros)), NFS4ERR_BADHANDLE);

	/* well formed, under another key; and under this key id with other bits */
	struct mds_fh in = {
	    .ino = f, .gen = dt_store_attr(&t, f).generation, .export_id = dt_fh_export(&fh)};
	struct braid_mds *other = calloc(1, sizeof(*other));
	CHECK(other);
	char path[4300], msg[256];
	snprintf(path, sizeof(path), "%s/other.key", t.dir);
	CHECK(braid_key_create(path) == 0);
	CHECK(braid_key_load(path, &other->key, msg, sizeof(msg)) == 0);
	uint8_t forged[MDS_FH_SIZE];
	mds_fh_make(other, &in, forged);
	CHECK_EQ(putfh(s, forged, sizeof(forged)), NFS4ERR_BADHANDLE);
	other->key.id = t.key.id;
	mds_fh_make(other, &in, forged);
	CHECK_EQ(putfh(s, forged, sizeof(forged)), NFS4ERR_BADHANDLE);
	free(other);

	/* genuine, but another generation of the inode number */
	struct mds_fh gen = in;
	gen.gen++;
	mds_fh_make(t.mds, &gen, forged);
	CHECK_EQ(putfh(s, forged, sizeof(forged)), NFS4ERR_STALE);
	mds_fh_make(t.mds, &in, forged);
	CHECK_EQ(putfh(s, forged, sizeof(forged)), NFS4_OK);

	/* the inode is gone */
	dt_store_make(&t, dt_root(&t), "gone", MDS_DIR, 0755, 0, 0);
	struct dt_fh gone;
	CHECK_EQ(dt_walk(s, "gone", &gone), NFS4_OK);
	struct mds_remove_args ra = {.dir = dt_root(&t), .name = "gone", .name_len = 4};
	CHECK(mds_dir_remove(braid_mds_store(t.mds), &ra, NULL) == 0);
	CHECK_EQ(putfh(s, gone.b, gone.len), NFS4ERR_STALE);
	CHECK_EQ(dt_do(s, &gone, mt_lookup("x")), NFS4ERR_STALE);

	/* the export it came through is no longer exported */
	CHECK_EQ(dt_walk(s, "e", &efh), NFS4_OK);
	CHECK(dt_fh_export(&efh) != dt_fh_export(&fh));
	CHECK_EQ(putfh(s, efh.b, efh.len), NFS4_OK);
	dt_exports(&t, "/ *(rw,no_root_squash,insecure)\n");
	CHECK_EQ(putfh(s, efh.b, efh.len), NFS4ERR_STALE);
	CHECK_EQ(putfh(s, fh.b, fh.len), NFS4_OK);

	nfs41c_session_destroy(s);
	mt_finish(&t);
	return 0;
}
