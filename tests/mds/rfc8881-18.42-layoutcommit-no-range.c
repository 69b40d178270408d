/* SPDX-License-Identifier: MIT */
/*
 * LAYOUTCOMMIT with no byte range (RFC 8881 §18.42; RFC 5661 errata 3067
 * and 3068 deprecate loca_offset and loca_length): the stock Linux client
 * sends offset 0, length 0 and no new offset while it knows no last write
 * (its UNSTABLE writes to the data servers not yet committed), on fsync,
 * close and stat.  Refused, the stat(2) behind it fails with EINVAL (seen
 * in the Linux client tier's pNFS data check, over NFSv4.2).  Here,
 * against braid-mds with one real braid-ds:
 *  - length 0, no new offset, the layout stateid of an RW layout: NFS4_OK,
 *    the size stays, the change attribute moves (the times are committed);
 *  - length 0 with a new offset: NFS4ERR_INVAL (an offset needs a range);
 *  - the stateid is still checked: an open stateid is BAD_STATEID, and a
 *    file laid out for reading only is BADLAYOUT;
 *  - a later LAYOUTCOMMIT with the last write offset still moves the size.
 */
#include "config.h"

#include "tests/mds/layout-test.h"

static struct lt L;

int main(void)
{
	lt_start(&L, "/ *(rw,no_root_squash,insecure)\n", "", 1);
	struct nfs41c_session *s = mt_session(&L.m, "lc-client", 0, 0);

	struct ts_openres o;
	lt_create(s, NULL, "f", &o);
	struct lt_layout l;
	CHECK_EQ(lt_get_page(s, &o.fh, LAYOUTIOMODE4_RW, 0, &o.sid, &l), NFS4_OK);
	uint64_t ino = lt_ino(&L, &o.fh);
	uint64_t ch = cl_attr(&L.m, ino).change;

	bool changed = true;
	CHECK_EQ(lt_layoutcommit(s, &o.fh, 0, 0, &l.sid, -1, &changed, NULL), NFS4_OK);
	CHECK(!changed);
	struct mds_attr at = cl_attr(&L.m, ino);
	CHECK_EQ(at.size, 0);
	CHECK(at.change > ch);

	/* a new offset needs a range */
	CHECK_EQ(lt_layoutcommit(s, &o.fh, 0, 0, &l.sid, 0, NULL, NULL), NFS4ERR_INVAL);
	/* the layout stateid is still required */
	CHECK_EQ(lt_layoutcommit(s, &o.fh, 0, 0, &o.sid, -1, NULL, NULL), NFS4ERR_BAD_STATEID);

	/* READ layouts only: nothing was laid out for writing */
	struct ts_openres o2, ro;
	lt_create(s, NULL, "g", &o2);
	CHECK_EQ(ts_open_name(s, NULL, "lc-reader", "g", OPEN4_SHARE_ACCESS_READ,
			      OPEN4_SHARE_DENY_NONE, false, &ro),
		 NFS4_OK);
	struct lt_layout r;
	CHECK_EQ(lt_get_page(s, &o2.fh, LAYOUTIOMODE4_READ, 0, &ro.sid, &r), NFS4_OK);
	CHECK_EQ(lt_layoutcommit(s, &o2.fh, 0, 0, &r.sid, -1, NULL, NULL), NFS4ERR_BADLAYOUT);

	/* then the client learns its last write: the size moves */
	uint64_t size = 0;
	CHECK_EQ(lt_layoutcommit(s, &o.fh, 0, MiB, &l.sid, MiB - 1, &changed, &size), NFS4_OK);
	CHECK(changed && size == MiB);
	CHECK_EQ(cl_attr(&L.m, ino).size, MiB);

	nfs41c_session_destroy(s);
	lt_finish(&L);
	return 0;
}
