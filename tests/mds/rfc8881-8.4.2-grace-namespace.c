/* SPDX-License-Identifier: MIT */
/*
 * During the grace period after a restart (RFC 8881 §8.4.2) REMOVE and
 * RENAME answer NFS4ERR_GRACE, as knfsd does: a client reclaiming an open
 * by name (CLAIM_PREVIOUS, CLAIM_DELEGATE_PREV) must still find it.  Other
 * namespace ops go on; once grace is over both work again.
 */
#include "config.h"

#include "tests/mds/mds-test.h"
#include "tests/mds/dir-test.h"

int main(void)
{
	struct mt t;
	mt_start(&t, "/ *(rw,no_root_squash,insecure)\n", NULL);
	uint64_t d = dt_store_make(&t, dt_root(&t), "d", MDS_DIR, 0755, 0, 0);
	dt_store_make(&t, d, "f", MDS_REG, 0644, 0, 0);
	dt_store_make(&t, d, "g", MDS_REG, 0644, 0, 0);
	/* a client that held state before the restart: the next boot has a grace period */
	struct mds_client_rec rec = {.clientid = 0x1234};
	struct mds_client_args ca = {.owner = "earlier-client", .owner_len = 14, .rec = &rec};
	CHECK(mds_client_put(braid_mds_store(t.mds), &ca) == 0);
	struct nfs41c_session *s = mt_session_noreclaim(&t, "grace-ns", 0, 0);
	nfs41c_session_destroy(s);
	mt_stop(&t);
	mt_set_grace(&t, "2s");
	mt_boot(&t);

	s = mt_session_noreclaim(&t, "grace-ns", 0, 0);
	struct dt_fh dfh, x;
	CHECK_EQ(dt_walk(s, "d", &dfh), NFS4_OK);
	CHECK_EQ(dt_do(s, &dfh, dt_remove("f")), NFS4ERR_GRACE);
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	COMPOUND4res res;
	CHECK_EQ(dt_do2(s, &dfh, &dfh, dt_rename("f", "h"), &res, &ar), NFS4ERR_GRACE);
	CHECK_EQ(dt_do(s, &dfh, dt_mkdir("sub")), NFS4_OK);
	CHECK_EQ(dt_walk(s, "d/f", &x), NFS4_OK);
	struct mds_attr a;
	CHECK_EQ(dt_store_lookup(&t, d, "f", &a), 0);

	/* grace ends after grace_time (nobody reclaims) */
	nfsstat4 st = NFS4ERR_GRACE;
	for (int i = 0; i < 100 && st == NFS4ERR_GRACE; i++) {
		st = dt_do(s, &dfh, dt_remove("f"));
		if (st == NFS4ERR_GRACE)
			usleep(100 * 1000);
	}
	CHECK_EQ(st, NFS4_OK);
	CHECK_EQ(dt_do2(s, &dfh, &dfh, dt_rename("g", "h"), &res, &ar), NFS4_OK);
	CHECK_EQ(dt_store_lookup(&t, d, "h", &a), 0);
	xdr_arena_release(&ar);

	nfs41c_session_destroy(s);
	mt_finish(&t);
	return 0;
}
