/* SPDX-License-Identifier: MIT */
/*
 * Byte-range locks (RFC 8881 §9, LOCK §18.10, LOCKT §18.11, LOCKU §18.12)
 * between two clients: conflicts report the holder (its real client ID,
 * owner, range and type), disjoint ranges coexist, read locks share, a
 * lock-owner upgrades, downgrades, splits with LOCKU and merges touching
 * ranges (POSIX semantics), "to EOF" is length NFS4_UINT64_MAX, bad ranges
 * are NFS4ERR_INVAL, a write lock needs an open for write
 * (NFS4ERR_OPENMODE), WRITEW_LT does not block, lock stateids keep their
 * "other" and count their changes; FREE_STATEID (§18.38) refuses stateids
 * with locks, TEST_STATEID (§18.48) reports each stateid's status, and CLOSE
 * refuses to leave locks behind (§18.2.3).
 */
#include "config.h"

#include "tests/mds/mds-test.h"
#include "tests/mds/state-test.h"

#define RD OPEN4_SHARE_ACCESS_READ
#define RW OPEN4_SHARE_ACCESS_BOTH
#define DN OPEN4_SHARE_DENY_NONE

static void denied_is(const struct ts_denied *d, uint64_t off, uint64_t len, nfs_lock_type4 type,
		      uint64_t clientid, const char *owner)
{
	CHECK_EQ(d->offset, off);
	CHECK_EQ((long long)d->length, (long long)len);
	CHECK_EQ(d->type, type);
	CHECK_EQ(d->clientid, clientid);
	CHECK(!strcmp(d->owner, owner));
}

int main(void)
{
	struct mt t;
	mt_start(&t, "/ *(rw,no_root_squash,insecure)\n", NULL);
	struct nfs41c_session *a = ts_session(&t, "locks-a", 0, 0);
	struct nfs41c_session *b = ts_session(&t, "locks-b", 0, 0);
	uint64_t ida = ts_clientid(a), idb = ts_clientid(b);
	struct ts_openres oa, ob;
	struct ts_denied d;
	stateid4 la, lb, x;

	CHECK_EQ(ts_open_name(a, NULL, "oa", "f-lock", RW, DN, true, &oa), NFS4_OK);
	CHECK_EQ(ts_open_name(b, NULL, "ob", "f-lock", RW, DN, false, &ob), NFS4_OK);
	const struct ts_fh *f = &oa.fh;

	/* a: write [0, 100); b's read over it is denied and told who holds it */
	CHECK_EQ(ts_lock(a, f, WRITE_LT, false, 0, 100, &oa.sid, "lo-a", &la, NULL), NFS4_OK);
	CHECK_EQ(la.seqid, 1);
	CHECK(!ts_sid_eq_other(&la, &oa.sid));
	CHECK_EQ(ts_lock(b, f, READ_LT, false, 50, 10, &ob.sid, "lo-b", NULL, &d), NFS4ERR_DENIED);
	denied_is(&d, 0, 100, WRITE_LT, ida, "lo-a");
	/* blocking types are answered at once */
	CHECK_EQ(ts_lock(b, f, WRITEW_LT, false, 99, 1, &ob.sid, "lo-b", NULL, &d), NFS4ERR_DENIED);
	/* disjoint ranges coexist */
	CHECK_EQ(ts_lock(b, f, WRITE_LT, false, 100, 50, &ob.sid, "lo-b", &lb, NULL), NFS4_OK);

	/* LOCKT reports the holder; the tester's own locks do not count */
	CHECK_EQ(ts_lockt(a, f, WRITE_LT, 120, 1, "lo-a", &d), NFS4ERR_DENIED);
	denied_is(&d, 100, 50, WRITE_LT, idb, "lo-b");
	CHECK_EQ(ts_lockt(a, f, WRITE_LT, 0, 100, "lo-a", NULL), NFS4_OK);
	CHECK_EQ(ts_lockt(a, f, READW_LT, 150, 10, "lo-a", NULL), NFS4_OK);
	CHECK_EQ(ts_lockt(b, f, READ_LT, 99, 2, "lo-other", &d), NFS4ERR_DENIED);
	denied_is(&d, 0, 100, WRITE_LT, ida, "lo-a");

	/* downgrade: a's range becomes a read lock, which b's reads share */
	CHECK_EQ(ts_lock(a, f, READ_LT, false, 0, 100, &la, NULL, &x, NULL), NFS4_OK);
	CHECK(ts_sid_eq_other(&la, &x));
	CHECK_EQ(x.seqid, 2);
	la = x;
	CHECK_EQ(ts_lock(b, f, READ_LT, false, 50, 10, &lb, NULL, &x, NULL), NFS4_OK);
	lb = x;
	/* upgrade: refused while b reads part of it, granted once b lets go */
	CHECK_EQ(ts_lock(a, f, WRITE_LT, false, 0, 100, &la, NULL, NULL, &d), NFS4ERR_DENIED);
	denied_is(&d, 50, 10, READ_LT, idb, "lo-b");
	CHECK_EQ(ts_locku(b, f, &lb, 50, 10, &x), NFS4_OK);
	CHECK(ts_sid_eq_other(&lb, &x));
	lb = x;
	CHECK_EQ(ts_lock(a, f, WRITE_LT, false, 0, 100, &la, NULL, &x, NULL), NFS4_OK);
	la = x;

	/* split: unlocking the middle leaves [0, 40) and [60, 100) */
	CHECK_EQ(ts_locku(a, f, &la, 40, 20, &x), NFS4_OK);
	la = x;
	CHECK_EQ(ts_lock(b, f, WRITE_LT, false, 45, 10, &lb, NULL, &x, NULL), NFS4_OK);
	lb = x;
	CHECK_EQ(ts_lockt(b, f, WRITE_LT, 30, 5, "lo-b", &d), NFS4ERR_DENIED);
	denied_is(&d, 0, 40, WRITE_LT, ida, "lo-a");
	CHECK_EQ(ts_lockt(b, f, WRITE_LT, 65, 1, "lo-b", &d), NFS4ERR_DENIED);
	denied_is(&d, 60, 40, WRITE_LT, ida, "lo-a");
	/* unlocking what is not locked is fine (POSIX) */
	CHECK_EQ(ts_locku(a, f, &la, 500, 10, &x), NFS4_OK);
	la = x;

	/* merge: touching read locks of one owner become one range */
	CHECK_EQ(ts_locku(a, f, &la, 0, UINT64_MAX, &x), NFS4_OK);
	la = x;
	CHECK_EQ(ts_locku(b, f, &lb, 0, UINT64_MAX, &x), NFS4_OK);
	lb = x;
	CHECK_EQ(ts_lock(a, f, READ_LT, false, 0, 10, &la, NULL, &x, NULL), NFS4_OK);
	la = x;
	CHECK_EQ(ts_lock(a, f, READ_LT, false, 10, 10, &la, NULL, &x, NULL), NFS4_OK);
	la = x;
	CHECK_EQ(ts_lockt(b, f, WRITE_LT, 15, 1, "lo-b", &d), NFS4ERR_DENIED);
	denied_is(&d, 0, 20, READ_LT, ida, "lo-a");

	/* to EOF */
	CHECK_EQ(ts_lock(b, f, WRITE_LT, false, 1000, UINT64_MAX, &lb, NULL, &x, NULL), NFS4_OK);
	lb = x;
	CHECK_EQ(ts_lockt(a, f, READ_LT, 1ull << 40, 1, "lo-a", &d), NFS4ERR_DENIED);
	denied_is(&d, 1000, UINT64_MAX, WRITE_LT, idb, "lo-b");
	/* §18.10.3: length 0, or past 2^64 - 1 */
	CHECK_EQ(ts_lock(a, f, READ_LT, false, 0, 0, &la, NULL, NULL, NULL), NFS4ERR_INVAL);
	CHECK_EQ(ts_lock(a, f, READ_LT, false, 10, UINT64_MAX - 5, &la, NULL, NULL, NULL),
		 NFS4ERR_INVAL);
	CHECK_EQ(ts_lockt(a, f, READ_LT, 2, UINT64_MAX - 1, "lo-a", NULL), NFS4ERR_INVAL);
	CHECK_EQ(ts_locku(a, f, &la, 1, 0, NULL), NFS4ERR_INVAL);

	/* stateid types: a lock stateid is no open stateid and vice versa */
	CHECK_EQ(ts_locku(a, f, &oa.sid, 0, 10, NULL), NFS4ERR_BAD_STATEID);
	CHECK_EQ(ts_lock(a, f, READ_LT, false, 0, 10, &oa.sid, NULL, NULL, NULL),
		 NFS4ERR_BAD_STATEID);
	CHECK_EQ(ts_lock(a, f, READ_LT, false, 0, 10, &la, "lo-a2", NULL, NULL),
		 NFS4ERR_BAD_STATEID);
	CHECK_EQ(ts_lock(b, f, READ_LT, false, 0, 10, &la, NULL, NULL, NULL), NFS4ERR_BAD_STATEID);
	stateid4 old = la;
	old.seqid = 1;
	CHECK_EQ(ts_locku(a, f, &old, 0, 10, NULL), NFS4ERR_OLD_STATEID);

	/* a write lock needs an open for write (§18.10.4, POSIX) */
	struct ts_openres ro;
	CHECK_EQ(ts_open_name(a, NULL, "oro", "f-lock", RD, DN, false, &ro), NFS4_OK);
	CHECK_EQ(ts_lock(a, f, WRITE_LT, false, 500, 1, &ro.sid, "lo-ro", NULL, NULL),
		 NFS4ERR_OPENMODE);
	CHECK_EQ(ts_lock(a, f, READ_LT, false, 500, 1, &ro.sid, "lo-ro", &x, NULL), NFS4_OK);
	CHECK_EQ(ts_locku(a, f, &x, 500, 1, &x), NFS4_OK);
	CHECK_EQ(ts_free_stateid(a, &x), NFS4_OK);
	CHECK_EQ(ts_close(a, f, &ro.sid, NULL), NFS4_OK);

	/* TEST_STATEID: each stateid's own status */
	stateid4 forged = la;
	forged.other[5] ^= 0x40;
	stateid4 zero = oa.sid;
	zero.seqid = 0;
	stateid4 sids[7] = {la, oa.sid, old, lb, ts_sid_special(0, 0), forged, zero};
	nfsstat4 codes[7];
	CHECK_EQ(ts_test(a, sids, 7, codes), NFS4_OK);
	CHECK_EQ(codes[0], NFS4_OK);
	CHECK_EQ(codes[1], NFS4_OK);
	CHECK_EQ(codes[2], NFS4ERR_OLD_STATEID);
	CHECK_EQ(codes[3], NFS4ERR_BAD_STATEID); /* b's */
	CHECK_EQ(codes[4], NFS4ERR_BAD_STATEID); /* special */
	CHECK_EQ(codes[5], NFS4ERR_BAD_STATEID);
	CHECK_EQ(codes[6], NFS4_OK); /* seqid 0: the current one */

	/* locks held: no CLOSE, no FREE_STATEID; an open is a lock itself */
	CHECK_EQ(ts_close(a, f, &oa.sid, NULL), NFS4ERR_LOCKS_HELD);
	CHECK_EQ(ts_free_stateid(a, &la), NFS4ERR_LOCKS_HELD);
	CHECK_EQ(ts_free_stateid(a, &oa.sid), NFS4ERR_LOCKS_HELD);
	/* §8.2.4: a lock stateid outlives its last lock until freed */
	CHECK_EQ(ts_locku(a, f, &la, 0, UINT64_MAX, &x), NFS4_OK);
	la = x;
	CHECK_EQ(ts_test(a, &la, 1, codes), NFS4_OK);
	CHECK_EQ(codes[0], NFS4_OK);
	CHECK_EQ(ts_free_stateid(a, &la), NFS4_OK);
	CHECK_EQ(ts_test(a, &la, 1, codes), NFS4_OK);
	CHECK_EQ(codes[0], NFS4ERR_BAD_STATEID);
	CHECK_EQ(ts_locku(a, f, &la, 0, 1, NULL), NFS4ERR_BAD_STATEID);
	/* the lock-owner starts over from its open */
	CHECK_EQ(ts_lock(a, f, WRITE_LT, false, 0, 10, &oa.sid, "lo-a", &x, NULL), NFS4_OK);
	CHECK(!ts_sid_eq_other(&x, &la));
	CHECK_EQ(x.seqid, 1);
	CHECK_EQ(ts_locku(a, f, &x, 0, 10, NULL), NFS4_OK);
	/* CLOSE takes the lock stateids of the open with it */
	CHECK_EQ(ts_close(a, f, &oa.sid, NULL), NFS4_OK);
	CHECK_EQ(ts_test(a, &x, 1, codes), NFS4_OK);
	CHECK_EQ(codes[0], NFS4ERR_BAD_STATEID);

	/* b's to-EOF lock is still there, a's reads meet it */
	CHECK_EQ(ts_open_name(a, NULL, "oa", "f-lock", RW, DN, false, &oa), NFS4_OK);
	CHECK_EQ(ts_lock(a, f, READ_LT, false, 2000, 1, &oa.sid, "lo-a", NULL, &d), NFS4ERR_DENIED);
	denied_is(&d, 1000, UINT64_MAX, WRITE_LT, idb, "lo-b");

	nfs41c_session_destroy(a);
	nfs41c_session_destroy(b);
	mt_finish(&t);
	return 0;
}
