/* SPDX-License-Identifier: MIT */
/*
 * Lease expiry (RFC 8881 §8.3, §8.4.1) with lease_time = 2s: a client that
 * opened (denying writes) and write-locked a range goes silent.  Another
 * client, renewing its own lease, is denied the range and the write open
 * until the silent client's lease has run out; then its locks and opens are
 * gone, the other client gets both, the silent client's record is dropped
 * from the store, and its session is no more.
 */
#include "config.h"

#include "tests/mds/mds-test.h"
#include "tests/mds/state-test.h"

#define RW OPEN4_SHARE_ACCESS_BOTH
#define RD OPEN4_SHARE_ACCESS_READ
#define DN OPEN4_SHARE_DENY_NONE
#define DW OPEN4_SHARE_DENY_WRITE

static bool has_record(struct mt *t, const char *owner)
{
	struct mds_client_rec rec;
	int rc = mds_client_get(braid_mds_store(t->mds), owner, strlen(owner), &rec);
	CHECK(rc == 0 || rc == -ENOENT);
	return rc == 0;
}

int main(void)
{
	struct mt t;
	mt_start(&t, "/ *(rw,no_root_squash,insecure)\n", "lease_time = 2s\n");
	struct nfs41c_session *a = ts_session(&t, "lease-a", 0, 0);
	struct nfs41c_session *b = ts_session(&t, "lease-b", 0, 0);
	uint64_t ida = ts_clientid(a);
	struct ts_openres oa, ob;
	struct ts_denied d;
	stateid4 la, lb;

	CHECK_EQ(ts_open_name(a, NULL, "oa", "f", RW, DW, true, &oa), NFS4_OK);
	CHECK_EQ(ts_lock(a, &oa.fh, WRITE_LT, false, 0, 100, &oa.sid, "la", &la, NULL), NFS4_OK);
	CHECK(has_record(&t, "lease-a"));
	double silent = ts_now();

	CHECK_EQ(ts_open_name(b, NULL, "ob", "f", RD, DN, false, &ob), NFS4_OK);
	CHECK_EQ(ts_lock(b, &oa.fh, READ_LT, false, 10, 1, &ob.sid, "lb", NULL, &d),
		 NFS4ERR_DENIED);
	CHECK_EQ(d.clientid, ida);

	/* b polls, renewing its lease each time, until a's state is gone */
	nfsstat4 st;
	do {
		struct timespec ts = {0, 250 * 1000 * 1000};
		nanosleep(&ts, NULL);
		st = ts_lock(b, &oa.fh, READ_LT, false, 10, 1, &ob.sid, "lb", &lb, NULL);
	} while (st == NFS4ERR_DENIED && ts_now() - silent < 15);
	CHECK_EQ(st, NFS4_OK);
	/* not before a's lease could have run out */
	CHECK(ts_now() - silent >= 1.9);
	/* a's deny mode went too, and so did its record */
	struct ts_openres w;
	CHECK_EQ(ts_open_name(b, NULL, "ob2", "f", RW, DN, false, &w), NFS4_OK);
	CHECK_EQ(ts_lock(b, &oa.fh, WRITE_LT, false, 50, 10, &w.sid, "lb2", NULL, NULL), NFS4_OK);
	CHECK(!has_record(&t, "lease-a"));
	CHECK(has_record(&t, "lease-b"));

	/* a's session died with its client ID */
	CHECK(nfs41c_session_destroy(a) != NFS4_OK);
	nfs41c_session_destroy(b);
	mt_finish(&t);
	return 0;
}
