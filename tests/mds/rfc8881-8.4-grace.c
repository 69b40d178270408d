/* SPDX-License-Identifier: MIT */
/*
 * Server restart and state reclaim (RFC 8881 §8.4.2, §8.4.2.1, §18.51).
 * A client opens (denying writes) and locks; the MDS stops and starts
 * again on the same store with grace_time = 5s.  During grace a client
 * without a record cannot reclaim (NFS4ERR_RECLAIM_BAD) nor get new state
 * (NFS4ERR_GRACE, also after its own RECLAIM_COMPLETE, and for LOCKT and
 * anonymous I/O); the recorded client reclaims its open (CLAIM_PREVIOUS) and
 * (its write delegation granted back, pre-recalled) and its lock (reclaim =
 * TRUE) and cannot take new locks yet; its
 * RECLAIM_COMPLETE ends grace at once, after which reclaims are
 * NFS4ERR_NO_GRACE, a second RECLAIM_COMPLETE NFS4ERR_COMPLETE_ALREADY, and
 * the other client meets the reclaimed deny mode and lock.  After a second
 * restart nobody comes back: grace runs its full time, then new state is
 * granted and the records of the clients that did not return are gone.
 */
#include "config.h"

#include "tests/mds/mds-test.h"
#include "tests/mds/state-test.h"

#define RD OPEN4_SHARE_ACCESS_READ
#define WR OPEN4_SHARE_ACCESS_WRITE
#define RW OPEN4_SHARE_ACCESS_BOTH
#define DN OPEN4_SHARE_DENY_NONE
#define DW OPEN4_SHARE_DENY_WRITE

static bool has_record(struct mt *t, const char *owner)
{
	struct mds_client_rec rec;
	int rc = mds_client_get(braid_mds_store(t->mds), owner, strlen(owner), &rec);
	CHECK(rc == 0 || rc == -ENOENT);
	return rc == 0;
}

static nfsstat4 reclaim_open(struct nfs41c_session *s, const struct ts_fh *f, uint32_t access,
			     uint32_t deny, open_delegation_type4 deleg, struct ts_openres *out)
{
	struct ts_open o = {.owner = "oa",
			    .access = access,
			    .deny = deny,
			    .claim = CLAIM_PREVIOUS,
			    .prev_deleg = deleg,
			    .mode = -1,
			    .size = -1};
	return ts_open(s, f, &o, out);
}

static nfsstat4 set_size_anon(struct nfs41c_session *s, const struct ts_fh *f)
{
	struct ts_attrs ab;
	nfs_argop4 ops[2] = {ts_put(f), ts_op(OP_SETATTR)};
	ops[1].u.opsetattr.stateid = ts_sid_special(0, 0);
	ops[1].u.opsetattr.obj_attributes = ts_fattr(&ab, -1, 0);
	COMPOUND4res res;
	struct xdr_arena ar;
	ts_run(s, ops, 2, &res, &ar);
	nfsstat4 st = ts_st(&res, 1);
	xdr_arena_release(&ar);
	return st;
}

int main(void)
{
	struct mt t;
	mt_prepare(&t, "/ *(rw,no_root_squash,insecure)\n", NULL);
	mt_set_grace(&t, "5s");
	mt_boot(&t);

	/* before: a opens f denying writes and write-locks [0, 10); g too */
	struct nfs41c_session *a = ts_session(&t, "grace-a", 0, 0);
	struct ts_openres of, og;
	stateid4 lk;
	CHECK_EQ(ts_open_name(a, NULL, "oa", "f", RW, DW, true, &of), NFS4_OK);
	CHECK_EQ(ts_lock(a, &of.fh, WRITE_LT, false, 0, 10, &of.sid, "la", &lk, NULL), NFS4_OK);
	CHECK_EQ(ts_open_name(a, NULL, "oa", "g", RW, DN, true, &og), NFS4_OK);
	CHECK(has_record(&t, "grace-a"));
	CHECK(!has_record(&t, "grace-b"));
	/* the session goes; the client ID, holding state, stays (§18.50.3) */
	CHECK_EQ(nfs41c_session_destroy(a), NFS4ERR_CLIENTID_BUSY);

	mt_stop(&t);
	mt_boot(&t);
	double boot = ts_now();
	CHECK(has_record(&t, "grace-a"));

	/* b never held state: no reclaim, and no new state during grace */
	struct nfs41c_session *b = mt_session_noreclaim(&t, "grace-b", 0, 0);
	struct ts_openres r;
	CHECK_EQ(ts_open_name(b, NULL, "ob", "new", RW, DN, true, NULL), NFS4ERR_GRACE);
	CHECK_EQ(ts_open_name(b, NULL, "ob", "f", RD, DN, false, NULL), NFS4ERR_GRACE);
	CHECK_EQ(reclaim_open(b, &of.fh, RD, DN, OPEN_DELEGATE_NONE, NULL), NFS4ERR_RECLAIM_BAD);
	CHECK_EQ(ts_reclaim_complete(b), NFS4_OK);
	CHECK_EQ(ts_open_name(b, NULL, "ob", "f", RD, DN, false, NULL), NFS4ERR_GRACE);
	CHECK_EQ(ts_lockt(b, &of.fh, WRITE_LT, 0, 1, "lb", NULL), NFS4ERR_GRACE);
	CHECK_EQ(set_size_anon(b, &og.fh), NFS4ERR_GRACE);
	/* nothing was created by the refused OPEN */
	uint64_t ino;
	CHECK_EQ(mds_dir_lookup(braid_mds_store(t.mds), mds_store_root(braid_mds_store(t.mds)),
				"new", 3, &ino, NULL),
		 -ENOENT);

	/* a comes back (same owner, new client ID) and reclaims */
	a = mt_session_noreclaim(&t, "grace-a", 0, 0);
	/* its open, and its write delegation granted back (§10.2.1),
	 * pre-recalled: a has no back channel; it returns it */
	CHECK_EQ(reclaim_open(a, &of.fh, RW, DW, OPEN_DELEGATE_WRITE, &r), NFS4_OK);
	CHECK_EQ(r.dtype, OPEN_DELEGATE_WRITE);
	CHECK(r.drecall);
	CHECK_EQ(r.sid.seqid, 1);
	CHECK(!memcmp(r.fh.b, of.fh.b, of.fh.len));
	nfs_argop4 dr = ts_op(OP_DELEGRETURN);
	dr.u.opdelegreturn.deleg_stateid = r.dsid;
	CHECK_EQ(ts_on_file(a, &of.fh, dr, NULL), NFS4_OK);
	stateid4 fsid = r.sid;
	/* a new lock is still refused, a reclaimed one granted */
	CHECK_EQ(ts_lock(a, &of.fh, WRITE_LT, false, 20, 10, &fsid, "la", NULL, NULL),
		 NFS4ERR_GRACE);
	CHECK_EQ(ts_lock(a, &of.fh, WRITE_LT, true, 0, 10, &fsid, "la", &lk, NULL), NFS4_OK);
	/* reclaimed state is good for I/O during grace (§8.4.2.1) */
	CHECK_EQ(reclaim_open(a, &og.fh, RW, DN, OPEN_DELEGATE_NONE, &r), NFS4_OK);
	stateid4 gsid = r.sid;
	CHECK(ts_now() - boot < 4.0);
	CHECK_EQ(ts_open_name(b, NULL, "ob", "f", RD, DN, false, NULL), NFS4ERR_GRACE);

	/* its RECLAIM_COMPLETE ends grace: it was the only recorded client */
	CHECK_EQ(ts_reclaim_complete(a), NFS4_OK);
	CHECK_EQ(ts_reclaim_complete(a), NFS4ERR_COMPLETE_ALREADY);
	CHECK_EQ(reclaim_open(a, &og.fh, RW, DN, OPEN_DELEGATE_NONE, NULL), NFS4ERR_NO_GRACE);
	CHECK_EQ(ts_lock(a, &of.fh, WRITE_LT, true, 40, 10, &lk, NULL, NULL, NULL),
		 NFS4ERR_NO_GRACE);
	/* b meets what a reclaimed: the deny mode and the lock */
	CHECK_EQ(ts_open_name(b, NULL, "ob", "f", RW, DN, false, NULL), NFS4ERR_SHARE_DENIED);
	CHECK_EQ(ts_open_name(b, NULL, "ob", "f", RD, DN, false, &r), NFS4_OK);
	struct ts_denied d;
	CHECK_EQ(ts_lock(b, &of.fh, READ_LT, false, 5, 1, &r.sid, "lb", NULL, &d), NFS4ERR_DENIED);
	CHECK_EQ(d.offset, 0);
	CHECK_EQ(d.length, 10);
	CHECK_EQ(d.clientid, ts_clientid(a));
	CHECK_EQ(ts_open_name(b, NULL, "ob", "new", RW, DN, true, NULL), NFS4_OK);
	CHECK(ts_now() - boot < 4.5); /* well before grace_time */
	CHECK(has_record(&t, "grace-a"));
	CHECK(has_record(&t, "grace-b"));
	CHECK_EQ(ts_close(a, &og.fh, &gsid, NULL), NFS4_OK);

	/* a second restart: this time nobody comes back */
	CHECK_EQ(nfs41c_session_destroy(a), NFS4ERR_CLIENTID_BUSY);
	CHECK_EQ(nfs41c_session_destroy(b), NFS4ERR_CLIENTID_BUSY);
	mt_stop(&t);
	mt_boot(&t);
	boot = ts_now();
	struct nfs41c_session *c = ts_session(&t, "grace-c", 0, 0);
	CHECK_EQ(ts_open_name(c, NULL, "oc", "h", RW, DN, true, NULL), NFS4ERR_GRACE);
	nfsstat4 st;
	do {
		struct timespec ts = {0, 200 * 1000 * 1000};
		nanosleep(&ts, NULL);
		st = ts_open_name(c, NULL, "oc", "h", RW, DN, true, &r);
	} while (st == NFS4ERR_GRACE && ts_now() - boot < 20);
	CHECK_EQ(st, NFS4_OK);
	CHECK(ts_now() - boot >= 4.5);
	/* grace is over: the records of a and b went, c's is there */
	CHECK(!has_record(&t, "grace-a"));
	CHECK(!has_record(&t, "grace-b"));
	CHECK(has_record(&t, "grace-c"));
	CHECK_EQ(reclaim_open(c, &of.fh, RD, DN, OPEN_DELEGATE_NONE, NULL), NFS4ERR_NO_GRACE);
	/* a's old state is gone with the restart: f opens for write now */
	struct ts_openres w;
	CHECK_EQ(ts_open_name(c, NULL, "oc", "f", WR, DN, false, &w), NFS4_OK);
	CHECK_EQ(ts_close(c, &w.fh, &w.sid, NULL), NFS4_OK);
	CHECK_EQ(ts_close(c, &r.fh, &r.sid, NULL), NFS4_OK);
	/* with nothing held, its client ID can go, and its record with it */
	CHECK_EQ(nfs41c_session_destroy(c), NFS4_OK);
	CHECK(!has_record(&t, "grace-c"));
	mt_finish(&t);
	return 0;
}
