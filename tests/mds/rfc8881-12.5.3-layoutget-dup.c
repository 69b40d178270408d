/* SPDX-License-Identifier: MIT */
/*
 * Two LAYOUTGETs for one segment at once.  Linux 6.1 serialises only a
 * file's first LAYOUTGET: two of its threads (writeback and fsync) can ask
 * for the same segment with the same layout stateid (RFC 8881 §12.5.3).
 * Granted twice, the client merges the identical segments, the merge
 * invalidates the older one, and every write on it not yet committed goes
 * to the data servers again (seen in tests/linux-client/pnfs-*.sh).
 * braid-mds answers the second NFS4ERR_DELAY: the client retries from its
 * layout cache, where the segment now is.  The stateid it sends cannot
 * tell (Linux may process several LAYOUTGET replies out of order), so the
 * rule is the range: the same range and mode granted to the same client
 * less than a second ago, and still held.  Here, with 1 MiB segments:
 *  - segment 1 granted; asked again with the stateid from before the
 *    grant: NFS4ERR_DELAY, and the delayed counters (the client's and the
 *    server's) move;
 *  - asked again with the current stateid: NFS4ERR_DELAY too;
 *  - a segment not held, with the old stateid: granted (concurrent
 *    LAYOUTGETs of distinct segments are normal);
 *  - segment 1 for READ: granted (another mode);
 *  - a segment returned is granted again at once;
 *  - another client is never delayed by this one's grants;
 *  - a second after the grant, segment 1 is granted again (a client that
 *    lost the reply, or dropped the segment).
 */
#include "config.h"

#include <unistd.h>

#include "tests/mds/layout-test.h"

#include "mds/layout.h"

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

	/* the same segment, the stateid from before its grant, or the current */
	CHECK_EQ(delayed(s), 0);
	CHECK_EQ(mds_layout_dup_delayed(L.m.mds), 0);
	CHECK_EQ(lt_get_page(s, &o.fh, LAYOUTIOMODE4_RW, MiB + 4096, &old, &c), NFS4ERR_DELAY);
	CHECK_EQ(delayed(s), 1);
	CHECK_EQ(lt_get_page(s, &o.fh, LAYOUTIOMODE4_RW, MiB, &b.sid, &c), NFS4ERR_DELAY);
	CHECK_EQ(delayed(s), 2);
	CHECK_EQ(mds_layout_dup_delayed(L.m.mds), 2);
	/* a segment not held, the same old stateid */
	CHECK_EQ(lt_get_page(s, &o.fh, LAYOUTIOMODE4_RW, 2 * MiB, &old, &c), NFS4_OK);
	CHECK(c.offset == 2 * MiB && c.sid.seqid == 3);
	/* another mode */
	CHECK_EQ(lt_get_page(s, &o.fh, LAYOUTIOMODE4_READ, MiB, &c.sid, &c), NFS4_OK);
	CHECK(c.offset == MiB && c.iomode == LAYOUTIOMODE4_READ && c.sid.seqid == 4);
	/* returned, then asked again at once */
	stateid4 cur = c.sid;
	CHECK_EQ(lt_layoutreturn(s, &o.fh, LAYOUTIOMODE4_RW, 2 * MiB, MiB, &cur,
				 xdr_opaque_of(NULL, 0), NULL, &cur),
		 NFS4_OK);
	CHECK_EQ(lt_get_page(s, &o.fh, LAYOUTIOMODE4_RW, 2 * MiB, &cur, &c), NFS4_OK);
	CHECK(c.offset == 2 * MiB && c.length == MiB);
	CHECK_EQ(delayed(s), 2);

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

	/* past the window, segment 1 is granted again */
	usleep(1100 * 1000);
	CHECK_EQ(lt_get_page(s, &o.fh, LAYOUTIOMODE4_RW, MiB, &old, &c), NFS4_OK);
	CHECK(c.offset == MiB && c.length == MiB);
	CHECK_EQ(delayed(s), 2);

	nfs41c_session_destroy(s2);
	nfs41c_session_destroy(s);
	lt_finish(&L);
	return 0;
}
