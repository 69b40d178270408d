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
 *  - a later LAYOUTCOMMIT with the last write offset still moves the size;
 *  - a LAYOUTCOMMIT that arrives after the client's own truncation (Linux,
 *    holding a write delegation, lets the one for its earlier writes go
 *    while it truncates): the size goes no further than the objects' end,
 *    the cut having undone the write (12 bytes written, SETATTR to 5 while
 *    the MDS still says 0, then the report of the 12: the size is 5, read
 *    back "hello"); a truncation to the size the MDS already has cuts the
 *    objects too; a write after the truncation still moves the size;
 *  - which is why a write delegation's holder asking for an RW layout (not
 *    a READ one) has the delegation recalled.
 */
#include "config.h"

#include "tests/mds/layout-test.h"

#include "mds/state.h"

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

	/* the client's LAYOUTCOMMIT after its own truncation */
	struct ts_openres t;
	lt_create(s, NULL, "t", &t);
	struct lt_layout tl;
	CHECK_EQ(lt_get_page(s, &t.fh, LAYOUTIOMODE4_RW, 0, &t.sid, &tl), NFS4_OK);
	uint64_t tino = lt_ino(&L, &t.fh);
	struct mds_attr tat = cl_attr(&L.m, tino);
	uint32_t uid, gid;
	mds_data_fence(L.m.mds, &tat, &uid, &gid);
	struct cds *d = lt_ds_of_dev(&L, s, tl.ds[0].dev);
	CHECK_EQ(lt_ds_write(d, &tl.ds[0], 0, "hello world\n", 12, FILE_SYNC, uid, gid), NFS3_OK);
	nfs_argop4 sa = ts_op(OP_SETATTR);
	struct ts_attrs ab;
	sa.u.opsetattr.stateid = t.sid;
	sa.u.opsetattr.obj_attributes = ts_fattr(&ab, -1, 5);
	CHECK_EQ(ts_on_file(s, &t.fh, sa, NULL), NFS4_OK);
	CHECK_EQ(cl_attr(&L.m, tino).size, 5);
	CHECK_EQ(lt_layoutcommit(s, &t.fh, 0, 12, &tl.sid, 11, &changed, &size), NFS4_OK);
	CHECK(!changed);
	CHECK_EQ(cl_attr(&L.m, tino).size, 5);
	char got[16];
	uint32_t n = 0;
	CHECK_EQ(lt_mds_read(s, &t.fh, 0, 16, got, &n), NFS4_OK);
	CHECK(n == 5 && !memcmp(got, "hello", 5));
	/* to the size the MDS has (0 here): the objects are cut all the same */
	struct ts_openres u;
	lt_create(s, NULL, "u", &u);
	struct lt_layout ul;
	CHECK_EQ(lt_get_page(s, &u.fh, LAYOUTIOMODE4_RW, 0, &u.sid, &ul), NFS4_OK);
	struct mds_attr uat = cl_attr(&L.m, lt_ino(&L, &u.fh));
	mds_data_fence(L.m.mds, &uat, &uid, &gid);
	d = lt_ds_of_dev(&L, s, ul.ds[0].dev);
	CHECK_EQ(lt_ds_write(d, &ul.ds[0], 0, "hello world\n", 12, FILE_SYNC, uid, gid), NFS3_OK);
	sa.u.opsetattr.stateid = u.sid;
	sa.u.opsetattr.obj_attributes = ts_fattr(&ab, -1, 0);
	CHECK_EQ(ts_on_file(s, &u.fh, sa, NULL), NFS4_OK);
	CHECK_EQ(lt_layoutcommit(s, &u.fh, 0, 12, &ul.sid, 11, &changed, &size), NFS4_OK);
	CHECK(!changed);
	CHECK_EQ(cl_attr(&L.m, uat.ino).size, 0);
	/* a write after the cut still counts */
	CHECK_EQ(lt_ds_write(d, &ul.ds[0], 0, "bye\n", 4, FILE_SYNC, uid, gid), NFS3_OK);
	CHECK_EQ(lt_layoutcommit(s, &u.fh, 0, 4, &ul.sid, 3, &changed, &size), NFS4_OK);
	CHECK(changed && size == 4);

	/* so a write delegation's holder that asks for an RW layout has it
	 * recalled (mds/deleg.c): its writes then end in LAYOUTCOMMITs */
	struct nfsd_clnt *cbc;
	struct nfs41c_session *w = lt_session_cb(&L, "lc-deleg", &cbc);
	struct ts_openres wo;
	CHECK_EQ(ts_open_name(w, NULL, "wd", "wd", OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_NONE,
			      true, &wo),
		 NFS4_OK);
	CHECK_EQ(wo.dtype, OPEN_DELEGATE_WRITE);
	struct mds_deleg_counters d0, d1;
	mds_deleg_counters(L.m.mds, &d0);
	struct lt_layout wl;
	CHECK_EQ(lt_get_page(w, &wo.fh, LAYOUTIOMODE4_READ, 0, &wo.sid, &wl), NFS4_OK);
	mds_deleg_counters(L.m.mds, &d1);
	CHECK_EQ(d1.recalled, d0.recalled); /* a read layout: kept */
	CHECK_EQ(lt_get_page(w, &wo.fh, LAYOUTIOMODE4_RW, 0, &wo.sid, &wl), NFS4_OK);
	mds_deleg_counters(L.m.mds, &d1);
	CHECK_EQ(d1.recalled, d0.recalled + 1);
	nfs_argop4 dr = ts_op(OP_DELEGRETURN);
	dr.u.opdelegreturn.deleg_stateid = wo.dsid;
	CHECK_EQ(ts_on_file(w, &wo.fh, dr, NULL), NFS4_OK);
	CHECK_EQ(lt_return_all(w, &wo.fh, &wl.sid), NFS4_OK);
	CHECK_EQ(ts_close(w, &wo.fh, &wo.sid, NULL), NFS4_OK);
	nfs41c_session_destroy(w);
	nfsd_clnt_free(cbc);

	nfs41c_session_destroy(s);
	lt_finish(&L);
	return 0;
}
