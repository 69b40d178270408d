/* SPDX-License-Identifier: MIT */
/*
 * Two LAYOUTGETs for one segment at once.  Linux 6.1 serialises only a
 * file's first LAYOUTGET: two of its threads (writeback and fsync) can ask
 * for the same segment with the same layout stateid (RFC 8881 §12.5.3).
 * Granted twice, the client merges the identical segments, the merge
 * invalidates the older one, and every write on it not yet committed goes
 * to the data servers again (seen in tests/linux-client/pnfs-*.sh).
 * braid-mds answers the second NFS4ERR_DELAY: the client retries from its
 * layout cache, where the segment now is.  Here, with 1 MiB segments:
 *  - segment 1 granted with the stateid of seqid 1; asked again with that
 *    same stateid (the grant's seqid 2 not yet seen): NFS4ERR_DELAY, and
 *    the client's delayed counter moves;
 *  - a segment not held, with that old stateid: granted (concurrent
 *    LAYOUTGETs of distinct segments are normal);
 *  - segment 1 with the current stateid: granted (a client that dropped
 *    its copy asks again having seen every grant);
 *  - segment 1 with the old stateid a second after the last grant: granted
 *    (a client that lost a reply is not delayed for ever);
 *  - another client is never delayed by this one's grants.
 */
#include "config.h"

#include <unistd.h>

#include "tests/mds/layout-test.h"

static struct lt L;

static uint64_t delayed(struct nfs41c_session *s)
{
	struct nfs41c_session_info info;
	nfs41c_session_info(s, &info);
	struct mds_layout_counters c;
	CHECK_EQ(mds_layout_counters_client(L.m.mds, info.clientid, &c), 0);
	return c.dup_delayed;
}

int main(void)
{
	lt_start(&L, "/ *(rw,no_root_squash,insecure)\n", "", 2);
	struct nfs41c_session *s = mt_session(&L.m, "dup-client", 0, 0);
	struct ts_fh dir;
	lt_mkdir_policy(&L, "striped", "segments,segment_size=1M", &dir);
	struct ts_openres o;
	lt_create(s, &dir, "f", &o);

	struct lt_layout a, b, c;
	CHECK_EQ(lt_get_page(s, &o.fh, LAYOUTIOMODE4_RW, 0, &o.sid, &a), NFS4_OK);
	CHECK_EQ(a.sid.seqid, 1);
	stateid4 old = a.sid;
	CHECK_EQ(lt_get_page(s, &o.fh, LAYOUTIOMODE4_RW, MiB, &old, &b), NFS4_OK);
	CHECK(b.offset == MiB && b.length == MiB && b.sid.seqid == 2);

	/* the same segment, the stateid from before its grant */
	CHECK_EQ(delayed(s), 0);
	CHECK_EQ(lt_get_page(s, &o.fh, LAYOUTIOMODE4_RW, MiB + 4096, &old, &c), NFS4ERR_DELAY);
	CHECK_EQ(delayed(s), 1);
	/* a segment not held, the same old stateid */
	CHECK_EQ(lt_get_page(s, &o.fh, LAYOUTIOMODE4_RW, 2 * MiB, &old, &c), NFS4_OK);
	CHECK(c.offset == 2 * MiB && c.sid.seqid == 3);
	/* the held segment with the current stateid */
	stateid4 cur = c.sid;
	CHECK_EQ(lt_get_page(s, &o.fh, LAYOUTIOMODE4_RW, MiB, &cur, &c), NFS4_OK);
	CHECK(c.offset == MiB && c.sid.seqid == 4);
	CHECK_EQ(delayed(s), 1);

	/* another client, the same segment: its own layout, no delay */
	struct nfs41c_session *s2 = mt_session(&L.m, "dup-client-2", 0, 0);
	struct ts_openres o2;
	CHECK_EQ(ts_open_name(s2, &dir, "dup-client-2", "f", OPEN4_SHARE_ACCESS_BOTH,
			      OPEN4_SHARE_DENY_NONE, false, &o2),
		 NFS4_OK);
	struct lt_layout d;
	CHECK_EQ(lt_get_page(s2, &o2.fh, LAYOUTIOMODE4_RW, MiB, &o2.sid, &d), NFS4_OK);
	CHECK_EQ(lt_get_page(s2, &o2.fh, LAYOUTIOMODE4_RW, 3 * MiB, &d.sid, &d), NFS4_OK);
	CHECK_EQ(delayed(s2), 0);

	/* past the window, the old stateid is granted again */
	usleep(1100 * 1000);
	CHECK_EQ(lt_get_page(s, &o.fh, LAYOUTIOMODE4_RW, MiB, &old, &c), NFS4_OK);
	CHECK_EQ(c.sid.seqid, 5);
	CHECK_EQ(delayed(s), 1);

	nfs41c_session_destroy(s2);
	nfs41c_session_destroy(s);
	lt_finish(&L);
	return 0;
}
