/* SPDX-License-Identifier: MIT */
/*
 * LAYOUTGET, GETDEVICEINFO and LAYOUTCOMMIT (RFC 8881 §18.43, §18.40,
 * §18.42; RFC 8435 §4.1, §5.1) against braid-mds with four real braid-ds,
 * driven as the Linux client does, the data written straight to the data
 * servers over NFSv3 with the layout's handle and synthetic uid/gid:
 *  - whole-file placement: one ff_layout4 [0, all) with one data server,
 *    return_on_close FALSE, layout stateid seqid 1 then 2, the anonymous
 *    stateid and numeric user/group of the file's fence, the object's
 *    handle once per version; the bytes land in the object, LAYOUTCOMMIT
 *    moves the size, and READ through the MDS returns them;
 *  - segment striping (a directory's policy, inherited by the file
 *    OPEN creates): each reply exactly one grid segment holding the asked
 *    offset, consecutive segments on distinct data servers in
 *    round-robin order, READ and RW of a range on the same object; data
 *    written segment by segment to the data servers reads back through the
 *    MDS, across segment boundaries (the proxy follows the same grid);
 *  - GETDEVICEINFO: every advertised address, the versions with 1 MiB
 *    rsize/wsize, both notifications granted, NFS4ERR_TOOSMALL with the
 *    size needed, NFS4ERR_NOENT for a device that is not ours;
 *  - the LAYOUTGET inside an OPEN's COMPOUND, as Linux sends it when it
 *    creates a file: LAYOUTTRYLATER while the file has no byte and no
 *    placement (nothing placed, no object made, the counter moves); the
 *    first write's own LAYOUTGET places it; once placed, or with bytes,
 *    the OPEN's LAYOUTGET is granted;
 *  - the errors: BADIOMODE, UNKNOWN_LAYOUTTYPE, INVAL, TOOSMALL (maxcount),
 *    BAD_STATEID (special, ahead of the state, another file's), OPENMODE
 *    (RW under a read-only open), BADLAYOUT (minlength past the segment;
 *    a LAYOUTCOMMIT of a range never laid out RW), ISDIR.
 */
#include "config.h"

#include <unistd.h>

#include "tests/mds/layout-test.h"

#include "mds/data.h"
#include "mds/fh.h"
#include "mds/layout.h"
#include "dataserver/ds.h"
#include "dataserver/store.h"

#define CONF "heartbeat_interval = 1s\nds_timeout = 3s\n"

static struct lt L;
static uint8_t *buf, *rbuf;

static void t_whole(struct nfs41c_session *s)
{
	struct ts_openres o;
	lt_create(s, NULL, "whole", &o);
	struct lt_layout l;
	CHECK_EQ(lt_get_page(s, &o.fh, LAYOUTIOMODE4_RW, 0, &o.sid, &l), NFS4_OK);
	CHECK_EQ(l.nlayouts, 1);
	CHECK(!l.roc);
	CHECK_EQ(l.sid.seqid, 1);
	CHECK(memcmp(l.sid.other, o.sid.other, NFS4_OTHER_SIZE));
	CHECK(l.offset == 0 && l.length == NFS4_UINT64_MAX && l.iomode == LAYOUTIOMODE4_RW);
	CHECK(l.nmirrors == 1 && l.nstripes == 1 && l.stripe_unit == 0 && l.flags == 0);
	/* loosely coupled (RFC 8435 §5.1): anonymous stateid, the fence's ids */
	CHECK_EQ(l.ds[0].sid.seqid, 0);
	for (int i = 0; i < NFS4_OTHER_SIZE; i++)
		CHECK_EQ(l.ds[0].sid.other[i], 0);
	struct mds_attr at = cl_attr(&L.m, lt_ino(&L, &o.fh));
	uint32_t uid, gid;
	mds_data_fence(L.m.mds, &at, &uid, &gid);
	CHECK(l.ds[0].uid == uid && l.ds[0].gid == gid);
	struct ds_objid id;
	uint8_t fh[DS_FH_SIZE];
	mds_data_objid(&at, &id);
	ds_fh_make(&L.m.key, &id, fh);
	CHECK(l.ds[0].fhlen == DS_FH_SIZE && !memcmp(l.ds[0].fh, fh, DS_FH_SIZE));
	CHECK_EQ(l.ds[0].nfh, 1); /* our data servers here speak NFSv3 only */

	/* the device: its addresses and versions (RFC 8435 §4.1) */
	struct cds *d = lt_ds_of_dev(&L, s, l.ds[0].dev);
	struct lt_dev dv;
	CHECK_EQ(lt_getdeviceinfo(s, l.ds[0].dev, 4096, LT_NOTIFY_BOTH, &dv), NFS4_OK);
	CHECK_EQ(dv.notification, LT_NOTIFY_BOTH);
	CHECK_EQ(dv.naddrs, 1);
	CHECK(!strcmp(dv.netid[0], "tcp"));
	char ua[64];
	snprintf(ua, sizeof(ua), "127.0.0.1.%d.%d", d->port >> 8, d->port & 255);
	CHECK(!strcmp(dv.uaddr[0], ua));
	CHECK_EQ(dv.nvers, 1);
	CHECK(dv.vers[0].ffdv_version == 3 && dv.vers[0].ffdv_minorversion == 0);
	CHECK(dv.vers[0].ffdv_rsize <= MiB && dv.vers[0].ffdv_rsize >= 1024);
	CHECK(dv.vers[0].ffdv_wsize <= MiB && !dv.vers[0].ffdv_tightly_coupled);
	/* only what is asked for is granted */
	CHECK_EQ(lt_getdeviceinfo(s, l.ds[0].dev, 4096, 1u << NOTIFY_DEVICEID4_DELETE, &dv),
		 NFS4_OK);
	CHECK_EQ(dv.notification, 1u << NOTIFY_DEVICEID4_DELETE);
	/* too small a maxcount: the size it takes; 0 renews notifications only */
	CHECK_EQ(lt_getdeviceinfo(s, l.ds[0].dev, 20, 0, &dv), NFS4ERR_TOOSMALL);
	uint32_t need = dv.mincount;
	CHECK(need > 20);
	CHECK_EQ(lt_getdeviceinfo(s, l.ds[0].dev, need, 0, &dv), NFS4_OK);
	CHECK(dv.body_len > 0 && dv.body_len + 8 <= need);
	CHECK_EQ(lt_getdeviceinfo(s, l.ds[0].dev, need - 1, 0, &dv), NFS4ERR_TOOSMALL);
	CHECK_EQ(lt_getdeviceinfo(s, l.ds[0].dev, 0, LT_NOTIFY_BOTH, &dv), NFS4_OK);
	CHECK(dv.body_len == 0 && dv.notification == LT_NOTIFY_BOTH);
	deviceid4 bogus;
	memcpy(bogus, l.ds[0].dev, sizeof(bogus));
	bogus[7] ^= 1;
	CHECK_EQ(lt_getdeviceinfo(s, bogus, 4096, 0, &dv), NFS4ERR_NOENT);

	/* I/O straight to the data server as the layout says */
	dt_fill(buf, 0, MiB, 21);
	CHECK_EQ(lt_ds_write(d, &l.ds[0], 0, buf, MiB, UNSTABLE, uid, gid), NFS3_OK);
	CHECK_EQ(lt_ds_commit(d, &l.ds[0], uid, gid), NFS3_OK);
	CHECK_EQ(lt_ds_write(d, &l.ds[0], 0, buf, 10, UNSTABLE, uid + 1, gid), NFS3ERR_ACCES);
	uint64_t osz;
	struct cfile cf = {.attr = at};
	CHECK_EQ(cl_obj_stat(&L.m, d, &cf, &osz), 0);
	CHECK_EQ(osz, MiB);
	/* the MDS learns the size from LAYOUTCOMMIT only */
	CHECK_EQ(cl_attr(&L.m, at.ino).size, 0);
	uint64_t ch = cl_attr(&L.m, at.ino).change;
	bool changed = false;
	uint64_t size = 0;
	CHECK_EQ(lt_layoutcommit(s, &o.fh, 0, MiB, &l.sid, MiB - 1, &changed, &size), NFS4_OK);
	CHECK(changed && size == MiB);
	at = cl_attr(&L.m, at.ino);
	CHECK(at.size == MiB && at.change > ch);
	/* again: nothing moves; an earlier offset never shrinks it */
	CHECK_EQ(lt_layoutcommit(s, &o.fh, 0, MiB, &l.sid, 100, &changed, &size), NFS4_OK);
	CHECK(!changed);
	CHECK_EQ(cl_attr(&L.m, at.ino).size, MiB);
	CHECK_EQ(lt_layoutcommit(s, &o.fh, 0, MiB, &l.sid, -1, &changed, NULL), NFS4_OK);
	CHECK(!changed);
	/* the last write offset must lie in the range committed */
	CHECK_EQ(lt_layoutcommit(s, &o.fh, 0, MiB, &l.sid, MiB, NULL, NULL), NFS4ERR_INVAL);
	/* the MDS's proxy reads the object the layout named */
	uint32_t n;
	CHECK_EQ(lt_mds_read(s, &o.fh, 0, MiB, rbuf, &n), NFS4_OK);
	CHECK(n == MiB && !memcmp(rbuf, buf, MiB));

	/* the next LAYOUTGET with the layout stateid: seqid 2; READ of the
	 * same range names the same object */
	struct lt_layout r;
	CHECK_EQ(lt_get_page(s, &o.fh, LAYOUTIOMODE4_READ, 8192, &l.sid, &r), NFS4_OK);
	CHECK(!memcmp(r.sid.other, l.sid.other, NFS4_OTHER_SIZE));
	CHECK_EQ(r.sid.seqid, 2);
	CHECK(r.iomode == LAYOUTIOMODE4_READ && r.offset == 0);
	CHECK(!memcmp(r.ds[0].dev, l.ds[0].dev, sizeof(deviceid4)));
	CHECK(!memcmp(r.ds[0].fh, l.ds[0].fh, DS_FH_SIZE));
	/* an older seqid is fine (LAYOUTGETs cross), a later one is not; the
	 * range just granted, asked with the stateid from before the grant,
	 * is a second thread's duplicate: DELAY for a second (see
	 * rfc8881-12.5.3-layoutget-dup), then granted */
	CHECK_EQ(lt_get_page(s, &o.fh, LAYOUTIOMODE4_READ, 0, &l.sid, &r), NFS4ERR_DELAY);
	usleep(1100 * 1000);
	CHECK_EQ(lt_get_page(s, &o.fh, LAYOUTIOMODE4_READ, 0, &l.sid, &r), NFS4_OK);
	CHECK_EQ(r.sid.seqid, 3);
	stateid4 ahead = r.sid;
	ahead.seqid += 5;
	CHECK_EQ(lt_get_page(s, &o.fh, LAYOUTIOMODE4_READ, 0, &ahead, &r), NFS4ERR_BAD_STATEID);
	/* the open stateid again (past the duplicate window): the same layout
	 * state */
	usleep(1100 * 1000);
	CHECK_EQ(lt_get_page(s, &o.fh, LAYOUTIOMODE4_READ, 0, &o.sid, &r), NFS4_OK);
	CHECK(r.sid.seqid == 4 && !memcmp(r.sid.other, l.sid.other, NFS4_OTHER_SIZE));

	/* argument errors (§18.43.3) */
	struct lt_get g = {
	    .iomode = LAYOUTIOMODE4_ANY, .length = 4096, .minlength = 4096, .sid = o.sid};
	CHECK_EQ(lt_layoutget(s, &o.fh, &g, NULL), NFS4ERR_BADIOMODE);
	g.iomode = LAYOUTIOMODE4_READ;
	g.type = LAYOUT4_NFSV4_1_FILES;
	CHECK_EQ(lt_layoutget(s, &o.fh, &g, NULL), NFS4ERR_UNKNOWN_LAYOUTTYPE);
	g.type = 0;
	g.length = 0;
	CHECK_EQ(lt_layoutget(s, &o.fh, &g, NULL), NFS4ERR_INVAL);
	g.length = 4096;
	g.minlength = 8192;
	CHECK_EQ(lt_layoutget(s, &o.fh, &g, NULL), NFS4ERR_INVAL);
	g.minlength = 0;
	g.offset = UINT64_MAX - 10;
	CHECK_EQ(lt_layoutget(s, &o.fh, &g, NULL), NFS4ERR_INVAL);
	g.offset = 0;
	g.maxcount = 40;
	CHECK_EQ(lt_layoutget(s, &o.fh, &g, NULL), NFS4ERR_TOOSMALL);
	g.maxcount = 0;
	g.sid = ts_sid_special(0, 0);
	CHECK_EQ(lt_layoutget(s, &o.fh, &g, NULL), NFS4ERR_BAD_STATEID);
	g.sid = ts_sid_special(UINT32_MAX, 0xff);
	CHECK_EQ(lt_layoutget(s, &o.fh, &g, NULL), NFS4ERR_BAD_STATEID);

	/* a read-only open gets READ layouts only */
	struct ts_openres ro;
	CHECK_EQ(ts_open_name(s, NULL, "lt-reader", "whole", OPEN4_SHARE_ACCESS_READ,
			      OPEN4_SHARE_DENY_NONE, false, &ro),
		 NFS4_OK);
	struct ts_openres o2;
	lt_create(s, NULL, "other", &o2);
	CHECK_EQ(ts_open_name(s, NULL, "lt-reader2", "other", OPEN4_SHARE_ACCESS_READ,
			      OPEN4_SHARE_DENY_NONE, false, &ro),
		 NFS4_OK);
	CHECK_EQ(lt_get_page(s, &o2.fh, LAYOUTIOMODE4_RW, 0, &ro.sid, NULL), NFS4ERR_OPENMODE);
	CHECK_EQ(lt_get_page(s, &o2.fh, LAYOUTIOMODE4_READ, 0, &ro.sid, &r), NFS4_OK);
	/* a layout stateid of another file */
	CHECK_EQ(lt_get_page(s, &o2.fh, LAYOUTIOMODE4_READ, 0, &l.sid, NULL), NFS4ERR_BAD_STATEID);
	/* a directory */
	struct ts_fh root = {.len = 0};
	struct cfile rc;
	cl_fh_of(&L.m, mds_store_root(braid_mds_store(L.m.mds)),
		 cl_attr(&L.m, mds_store_root(braid_mds_store(L.m.mds))).generation, &rc);
	memcpy(root.b, rc.fhb, MDS_FH_SIZE);
	root.len = MDS_FH_SIZE;
	CHECK_EQ(lt_get_page(s, &root, LAYOUTIOMODE4_READ, 0, &o.sid, NULL), NFS4ERR_ISDIR);
	/* TEST_STATEID knows layout stateids (§18.48); FREE_STATEID of one
	 * holding layouts is LOCKS_HELD (§18.38.3) */
	nfsstat4 codes[3];
	stateid4 t3[3] = {r.sid, l.sid, r.sid};
	t3[2].seqid += 9;
	CHECK_EQ(ts_test(s, t3, 3, codes), NFS4_OK);
	CHECK(codes[0] == NFS4_OK && codes[1] == NFS4ERR_OLD_STATEID &&
	      codes[2] == NFS4ERR_BAD_STATEID);
	CHECK_EQ(ts_free_stateid(s, &r.sid), NFS4ERR_LOCKS_HELD);
	/* LAYOUTCOMMIT wants the layout stateid */
	CHECK_EQ(lt_layoutcommit(s, &o.fh, 0, MiB, &o.sid, 10, NULL, NULL), NFS4ERR_BAD_STATEID);
	/* READ layouts only: nothing was laid out for writing */
	CHECK_EQ(lt_layoutcommit(s, &o2.fh, 0, MiB, &r.sid, 10, NULL, NULL), NFS4ERR_BADLAYOUT);
}

static void t_segments(struct nfs41c_session *s)
{
	struct ts_fh dir;
	lt_mkdir_policy(&L, "striped", "segments,segment_size=1M", &dir);
	struct ts_openres o;
	lt_create(s, &dir, "f", &o);
	uint64_t ino = lt_ino(&L, &o.fh);
	struct mds_file_map map;
	CHECK_EQ(mds_data_map(L.m.mds, ino, &map), 0);
	CHECK(map.recorded && !map.laid_out && map.pol.mode == LAYOUT_SEGMENTS &&
	      map.pol.seg_shift == 20);

	/* segment k: one reply covering exactly [k MiB, (k+1) MiB) */
	struct lt_layout l[8];
	struct cds *d[8];
	stateid4 sid = o.sid;
	for (unsigned k = 0; k < 8; k++) {
		/* an offset inside the segment still gets the whole segment */
		uint64_t off = (uint64_t)k * MiB + (k % 2 ? MiB / 2 : 0);
		CHECK_EQ(lt_get_page(s, &o.fh, LAYOUTIOMODE4_RW, off, &sid, &l[k]), NFS4_OK);
		CHECK_EQ(l[k].nlayouts, 1);
		CHECK_EQ(l[k].offset, (uint64_t)k * MiB);
		CHECK_EQ(l[k].length, MiB);
		CHECK(l[k].nmirrors == 1 && l[k].nstripes == 1);
		CHECK_EQ(l[k].sid.seqid, k + 1);
		sid = l[k].sid;
		d[k] = lt_ds_of_dev(&L, s, l[k].ds[0].dev);
	}
	/* four data servers: four distinct, then round and round */
	for (unsigned k = 0; k < 4; k++)
		for (unsigned j = 0; j < k; j++)
			CHECK(d[k] != d[j]);
	for (unsigned k = 4; k < 8; k++)
		CHECK(d[k] == d[k - 4]);
	/* every segment names the same file's object, with the same fence */
	for (unsigned k = 1; k < 8; k++) {
		CHECK(!memcmp(l[k].ds[0].fh, l[0].ds[0].fh, DS_FH_SIZE));
		CHECK(l[k].ds[0].uid == l[0].ds[0].uid);
	}
	/* recorded: segment k's map on that data server */
	for (unsigned k = 0; k < 8; k++) {
		struct mds_layout_seg seg;
		CHECK_EQ(mds_layout_get(braid_mds_store(L.m.mds), ino, k, &seg), 0);
		CHECK(seg.nds == 1 && seg.ds[0] == d[k]->id);
	}
	/* READ of a segment: the same data server as RW */
	struct lt_layout r;
	CHECK_EQ(lt_get_page(s, &o.fh, LAYOUTIOMODE4_READ, 5 * MiB, &sid, &r), NFS4_OK);
	CHECK(r.offset == 5 * MiB && r.length == MiB && lt_ds_of_dev(&L, s, r.ds[0].dev) == d[5]);
	sid = r.sid;
	/* never reaching into the next segment: minlength past its end */
	struct lt_get g = {.iomode = LAYOUTIOMODE4_RW,
			   .offset = 2 * MiB - 4096,
			   .length = 8192,
			   .minlength = 8192,
			   .sid = sid};
	CHECK_EQ(lt_layoutget(s, &o.fh, &g, NULL), NFS4ERR_BADLAYOUT);

	/* the bytes: 256 KiB at 100 KiB into each segment, straight to the
	 * data servers */
	const uint32_t chunk = 256 * 1024;
	for (unsigned k = 0; k < 8; k++) {
		uint64_t off = (uint64_t)k * MiB + 100 * 1024;
		dt_fill(buf, off, chunk, 33);
		CHECK_EQ(lt_ds_write(d[k], &l[k].ds[0], off, buf, chunk, FILE_SYNC, l[k].ds[0].uid,
				     l[k].ds[0].gid),
			 NFS3_OK);
	}
	/* one more, across the boundary of segments 6 and 7 as a client
	 * splits it: the tail of 6 and the head of 7 */
	dt_fill(buf, 7 * MiB - 4096, 8192, 33);
	CHECK_EQ(lt_ds_write(d[6], &l[6].ds[0], 7 * MiB - 4096, buf, 4096, FILE_SYNC,
			     l[6].ds[0].uid, l[6].ds[0].gid),
		 NFS3_OK);
	CHECK_EQ(lt_ds_write(d[7], &l[7].ds[0], 7 * MiB, buf + 4096, 4096, FILE_SYNC,
			     l[7].ds[0].uid, l[7].ds[0].gid),
		 NFS3_OK);
	uint64_t end = 7 * MiB + 100 * 1024 + chunk;
	bool changed;
	uint64_t size;
	CHECK_EQ(lt_layoutcommit(s, &o.fh, 0, end, &sid, (int64_t)end - 1, &changed, &size),
		 NFS4_OK);
	CHECK(changed && size == end);
	/* a range never laid out RW */
	CHECK_EQ(lt_layoutcommit(s, &o.fh, 64 * MiB, MiB, &sid, -1, NULL, NULL), NFS4ERR_BADLAYOUT);

	/* read back through the MDS in 1 MiB reads that straddle segments:
	 * proof that the proxy follows the same grid */
	for (uint64_t off = MiB / 2; off < end; off += MiB) {
		uint32_t want = end - off < MiB ? (uint32_t)(end - off) : MiB, n;
		CHECK_EQ(lt_mds_read(s, &o.fh, off, want, rbuf, &n), NFS4_OK);
		CHECK_EQ(n, want);
		for (uint32_t i = 0; i < n; i++) {
			uint64_t at = off + i, in = at % MiB;
			bool written = (in >= 100 * 1024 && in < 100 * 1024 + chunk) ||
				       (at >= 7 * MiB - 4096 && at < 7 * MiB + 4096);
			uint8_t want_b = written ? dt_pat(at, 33) : 0;
			if (rbuf[i] != want_b) {
				fprintf(stderr, "offset %llu: %u, expected %u\n",
					(unsigned long long)at, rbuf[i], want_b);
				CHECK(0);
			}
		}
	}
	/* and a WRITE through the MDS across a boundary lands on both data
	 * servers, each at the file's offsets */
	dt_fill(buf, 3 * MiB - 1000, 2000, 44);
	CHECK_EQ(lt_mds_write(s, &o.fh, 3 * MiB - 1000, buf, 2000), NFS4_OK);
	uint32_t n;
	CHECK_EQ(lt_ds_read(d[2], &l[2].ds[0], 3 * MiB - 1000, rbuf, 1000, l[2].ds[0].uid,
			    l[2].ds[0].gid, &n),
		 NFS3_OK);
	CHECK(n == 1000 && dt_check(rbuf, 3 * MiB - 1000, 1000, 44));
	CHECK_EQ(
	    lt_ds_read(d[3], &l[3].ds[0], 3 * MiB, rbuf, 1000, l[3].ds[0].uid, l[3].ds[0].gid, &n),
	    NFS3_OK);
	CHECK(n == 1000 && dt_check(rbuf, 3 * MiB, 1000, 44));
	/* a file's objects: one per data server */
	uint32_t ids[64];
	CHECK_EQ(mds_data_ds_list(L.m.mds, ino, ids, 64), 4);
}

/*
 * RFC 8435 striping (clients from Linux 6.18): one mirror over several
 * data servers with a stripe unit; stripe k of the file on data server
 * k % stripes, at the file's offsets; the MDS's proxy uses the same.
 */
static void t_striped(struct nfs41c_session *s)
{
	struct ts_fh dir;
	lt_mkdir_policy(&L, "stripes", "striped,stripes=3,stripe_unit=64k", &dir);
	struct ts_openres o;
	lt_create(s, &dir, "st", &o);
	struct lt_layout l;
	CHECK_EQ(lt_get_page(s, &o.fh, LAYOUTIOMODE4_RW, 5 * MiB, &o.sid, &l), NFS4_OK);
	CHECK(l.offset == 0 && l.length == NFS4_UINT64_MAX);
	CHECK(l.nmirrors == 1 && l.nstripes == 3 && l.stripe_unit == 65536);
	struct cds *d[3];
	for (unsigned k = 0; k < 3; k++) {
		d[k] = lt_ds_of_dev(&L, s, l.ds[k].dev);
		for (unsigned j = 0; j < k; j++)
			CHECK(d[k] != d[j]);
	}
	/* 12 stripe units, each to its data server (the client's split) */
	const uint32_t unit = 65536;
	dt_fill(buf, 0, 12 * unit, 61);
	for (unsigned u = 0; u < 12; u++)
		CHECK_EQ(lt_ds_write(d[u % 3], &l.ds[u % 3], (uint64_t)u * unit, buf + u * unit,
				     unit, FILE_SYNC, l.ds[0].uid, l.ds[0].gid),
			 NFS3_OK);
	CHECK_EQ(lt_layoutcommit(s, &o.fh, 0, 12 * unit, &l.sid, 12 * unit - 1, NULL, NULL),
		 NFS4_OK);
	/* through the MDS: gathered from the three */
	uint32_t n;
	CHECK_EQ(lt_mds_read(s, &o.fh, 1000, 10 * unit, rbuf, &n), NFS4_OK);
	CHECK(n == 10 * unit && !memcmp(rbuf, buf + 1000, n));
	/* a WRITE through the MDS over three units lands on three servers */
	dt_fill(buf, unit - 10, unit + 20, 62);
	CHECK_EQ(lt_mds_write(s, &o.fh, unit - 10, buf, unit + 20), NFS4_OK);
	CHECK_EQ(lt_ds_read(d[0], &l.ds[0], unit - 10, rbuf, 10, l.ds[0].uid, l.ds[0].gid, &n),
		 NFS3_OK);
	CHECK(n == 10 && dt_check(rbuf, unit - 10, 10, 62));
	CHECK_EQ(lt_ds_read(d[1], &l.ds[1], unit, rbuf, unit, l.ds[0].uid, l.ds[0].gid, &n),
		 NFS3_OK);
	CHECK(n == unit && dt_check(rbuf, unit, unit, 62));
	CHECK_EQ(lt_ds_read(d[2], &l.ds[2], 2 * unit, rbuf, 10, l.ds[0].uid, l.ds[0].gid, &n),
		 NFS3_OK);
	CHECK(n == 10 && dt_check(rbuf, 2 * unit, 10, 62));
	CHECK_EQ(lt_return_all(s, &o.fh, &l.sid), NFS4_OK);
}

/*
 * A directory's policy reaches files created anywhere below it (the
 * nearest directory with one wins), as an export root's would; a file
 * keeps what it was created with.
 */
static void t_inherited(struct nfs41c_session *s)
{
	struct ts_fh top, mid, low, own;
	lt_mkdir_policy(&L, "tree", "segments,segment_size=2M,width=3", &top);
	lt_mkdir_in(&L, &top, "mid", NULL, &mid);
	lt_mkdir_in(&L, &mid, "low", NULL, &low);
	lt_mkdir_in(&L, &mid, "own", "whole,mirrors=2", &own);
	struct ts_openres a, b;
	lt_create(s, &low, "deep", &a);
	lt_create(s, &own, "near", &b);
	struct mds_file_map m;
	CHECK_EQ(mds_data_map(L.m.mds, lt_ino(&L, &a.fh), &m), 0);
	CHECK(m.recorded && m.pol.mode == LAYOUT_SEGMENTS && m.pol.seg_shift == 21 &&
	      m.pol.width == 3);
	CHECK_EQ(mds_data_map(L.m.mds, lt_ino(&L, &b.fh), &m), 0);
	CHECK(m.recorded && m.pol.mode == LAYOUT_WHOLE && m.pol.mirrors == 2);
	struct lt_layout l;
	CHECK_EQ(lt_get_page(s, &a.fh, LAYOUTIOMODE4_RW, 3 * MiB, &a.sid, &l), NFS4_OK);
	CHECK(l.offset == 2 * MiB && l.length == 2 * MiB);
	/* the policy changes: files made before keep theirs */
	struct mds_fh th;
	CHECK_EQ(mds_fh_parse(L.m.mds, top.b, top.len, &th), 0);
	CHECK_EQ(mds_layout_policy_set(L.m.mds, th.ino, NULL), 0);
	struct layout_policy p;
	layout_policy_default(&p);
	CHECK_EQ(mds_layout_policy_inherited(L.m.mds, th.ino, &p), -ENOENT);
	CHECK_EQ(mds_data_map(L.m.mds, lt_ino(&L, &a.fh), &m), 0);
	CHECK(m.pol.mode == LAYOUT_SEGMENTS && m.nset == 3);
	struct ts_openres c;
	lt_create(s, &low, "later", &c);
	CHECK_EQ(mds_data_map(L.m.mds, lt_ino(&L, &c.fh), &m), 0);
	CHECK(!m.recorded && m.pol.mode == LAYOUT_WHOLE); /* [mds] layout: whole */
	/* only directories carry one */
	CHECK_EQ(mds_layout_policy_set(L.m.mds, lt_ino(&L, &c.fh), &p), -ENOTDIR);
	CHECK_EQ(lt_return_all(s, &a.fh, &l.sid), NFS4_OK);
}

/* {PUTROOTFH, OPEN name for RW (created if absent), GETFH, LAYOUTGET RW
 * [0, ALL) with the current stateid}, as Linux 6.1 sends a creating open
 * (pnfs_lgopen_prepare): the LAYOUTGET's status; the OPEN's in *out. */
static nfsstat4 open_lgopen(struct nfs41c_session *s, const char *name, struct ts_openres *out,
			    struct lt_layout *l)
{
	struct ts_attrs ab;
	nfs_argop4 ops[4] = {ts_op(OP_PUTROOTFH), ts_op(OP_OPEN), ts_op(OP_GETFH),
			     ts_op(OP_LAYOUTGET)};
	OPEN4args *oa = &ops[1].u.opopen;
	oa->share_access = OPEN4_SHARE_ACCESS_BOTH;
	oa->share_deny = OPEN4_SHARE_DENY_NONE;
	oa->owner.owner = xdr_opaque_of("lgopen-owner", 12);
	oa->claim.claim = CLAIM_NULL;
	oa->claim.u.file = xdr_opaque_of(name, strlen(name));
	oa->openhow.opentype = OPEN4_CREATE;
	oa->openhow.u.how.mode = UNCHECKED4;
	oa->openhow.u.how.u.createattrs = ts_fattr(&ab, 0644, -1);
	LAYOUTGET4args *a = &ops[3].u.oplayoutget;
	a->loga_layout_type = LAYOUT4_FLEX_FILES;
	a->loga_iomode = LAYOUTIOMODE4_RW;
	a->loga_offset = 0;
	a->loga_length = NFS4_UINT64_MAX;
	a->loga_minlength = 0;
	a->loga_stateid = ts_sid_special(1, 0); /* the current stateid */
	a->loga_maxcount = 4096;
	COMPOUND4res res;
	struct xdr_arena ar;
	ts_run(s, ops, 4, &res, &ar);
	CHECK_EQ(ts_st(&res, 1), NFS4_OK);
	CHECK_EQ(ts_st(&res, 2), NFS4_OK);
	memset(out, 0, sizeof(*out));
	out->sid = res.resarray.val[2].u.opopen.u.resok4.stateid;
	const nfs_fh4 *f = &res.resarray.val[3].u.opgetfh.u.resok4.object;
	CHECK(f->len <= NFS4_FHSIZE);
	memcpy(out->fh.b, f->val, f->len);
	out->fh.len = f->len;
	nfsstat4 st = ts_st(&res, 3);
	if (!st && l) {
		const LAYOUTGET4resok *ok = &res.resarray.val[4].u.oplayoutget.u.logr_resok4;
		memset(l, 0, sizeof(*l));
		l->sid = ok->logr_stateid;
		CHECK(ok->logr_layout.len >= 1);
		l->offset = ok->logr_layout.val[0].lo_offset;
		l->length = ok->logr_layout.val[0].lo_length;
		l->iomode = ok->logr_layout.val[0].lo_iomode;
	}
	xdr_arena_release(&ar);
	return st;
}

/* The OPEN's LAYOUTGET of a file with no byte and no placement waits for
 * the first write's (a create costs no placement, no object, no write
 * mark); with a placement, or bytes, it is granted. */
static void t_lgopen(struct nfs41c_session *s)
{
	struct ts_openres o;
	struct lt_layout l;
	uint64_t d0 = mds_layout_lgopen_deferred(L.m.mds);
	CHECK_EQ(open_lgopen(s, "lgopen", &o, &l), NFS4ERR_LAYOUTTRYLATER);
	CHECK_EQ(mds_layout_lgopen_deferred(L.m.mds), d0 + 1);
	uint64_t ino = lt_ino(&L, &o.fh);
	struct mds_file_map m;
	CHECK_EQ(mds_data_map(L.m.mds, ino, &m), 0);
	CHECK(!m.laid_out);
	/* no object made for the empty file */
	struct mds_attr at = cl_attr(&L.m, ino);
	struct ds_objid id;
	mds_data_objid(&at, &id);
	for (unsigned i = 0; i < L.nds; i++) {
		struct ds_obj_stat os;
		CHECK_EQ(ds_store_stat(braid_ds_store(L.ds[i].ds), &id, &os), -ENOENT);
	}
	/* opened again (UNCHECKED4: the same file), still nothing to place */
	struct ts_openres o2;
	CHECK_EQ(open_lgopen(s, "lgopen", &o2, &l), NFS4ERR_LAYOUTTRYLATER);
	CHECK_EQ(mds_layout_lgopen_deferred(L.m.mds), d0 + 2);
	/* the first write's own LAYOUTGET places the file and is granted */
	struct lt_layout w;
	CHECK_EQ(lt_get_page(s, &o.fh, LAYOUTIOMODE4_RW, 0, &o2.sid, &w), NFS4_OK);
	CHECK_EQ(mds_data_map(L.m.mds, ino, &m), 0);
	CHECK(m.laid_out);
	struct cds *d = lt_ds_of_dev(&L, s, w.ds[0].dev);
	dt_fill(buf, 0, 64 << 10, 77);
	CHECK_EQ(lt_ds_write(d, &w.ds[0], 0, buf, 64 << 10, FILE_SYNC, w.ds[0].uid, w.ds[0].gid),
		 NFS3_OK);
	uint64_t size = 0;
	CHECK_EQ(lt_layoutcommit(s, &o.fh, 0, 64 << 10, &w.sid, (64 << 10) - 1, NULL, &size),
		 NFS4_OK);
	CHECK_EQ(size, 64u << 10);
	/* returned (Linux sends no LAYOUTGET in OPEN while it holds a layout) */
	CHECK_EQ(lt_return_all(s, &o.fh, &w.sid), NFS4_OK);
	/* placed and written: the OPEN's LAYOUTGET is granted [0, ALL) */
	struct ts_openres o3;
	CHECK_EQ(open_lgopen(s, "lgopen", &o3, &l), NFS4_OK);
	CHECK(l.offset == 0 && l.length == NFS4_UINT64_MAX && l.iomode == LAYOUTIOMODE4_RW);
	CHECK_EQ(mds_layout_lgopen_deferred(L.m.mds), d0 + 2);
	/* placed but still empty: granted as well (nothing left to defer) */
	struct ts_openres e;
	CHECK_EQ(open_lgopen(s, "lgopen-empty", &e, &l), NFS4ERR_LAYOUTTRYLATER);
	CHECK_EQ(lt_return_all(s, &o.fh, &l.sid), NFS4_OK);
	CHECK_EQ(lt_get_page(s, &e.fh, LAYOUTIOMODE4_RW, 0, &e.sid, &w), NFS4_OK);
	CHECK_EQ(lt_return_all(s, &e.fh, &w.sid), NFS4_OK);
	CHECK_EQ(open_lgopen(s, "lgopen-empty", &e, &l), NFS4_OK);
	CHECK_EQ(mds_layout_lgopen_deferred(L.m.mds), d0 + 3);
	CHECK_EQ(lt_return_all(s, &e.fh, &l.sid), NFS4_OK);
}

/* The MDS's own writes lay out segments as LAYOUTGET does, and a later
 * LAYOUTGET names what they laid out. */
static void t_proxy_lays_out(struct nfs41c_session *s)
{
	struct ts_fh dir;
	lt_mkdir_policy(&L, "proxied", "segments,segment_size=1M,width=2", &dir);
	struct ts_openres o;
	lt_create(s, &dir, "p", &o);
	uint64_t ino = lt_ino(&L, &o.fh);
	dt_fill(buf, 0, 3 * MiB, 55);
	for (unsigned k = 0; k < 3; k++)
		CHECK_EQ(lt_mds_write(s, &o.fh, (uint64_t)k * MiB, buf + k * MiB, MiB), NFS4_OK);
	struct mds_layout_seg seg[3];
	for (unsigned k = 0; k < 3; k++)
		CHECK_EQ(mds_layout_get(braid_mds_store(L.m.mds), ino, k, &seg[k]), 0);
	/* width 2: two data servers, alternating */
	CHECK(seg[0].ds[0] != seg[1].ds[0] && seg[2].ds[0] == seg[0].ds[0]);
	struct lt_layout l;
	CHECK_EQ(lt_get_page(s, &o.fh, LAYOUTIOMODE4_READ, 2 * MiB, &o.sid, &l), NFS4_OK);
	struct cds *d = lt_ds_of_dev(&L, s, l.ds[0].dev);
	CHECK_EQ(d->id, seg[2].ds[0]);
	uint32_t n;
	CHECK_EQ(lt_ds_read(d, &l.ds[0], 2 * MiB, rbuf, MiB, l.ds[0].uid, l.ds[0].gid, &n),
		 NFS3_OK);
	CHECK(n == MiB && !memcmp(rbuf, buf + 2 * MiB, MiB));
}

int main(void)
{
	buf = malloc(8 * MiB);
	rbuf = malloc(8 * MiB);
	CHECK(buf && rbuf);
	lt_start(&L, "/ *(rw,no_root_squash,insecure)\n", CONF, 4);
	struct nfs41c_session *s = mt_session(&L.m, "lt-client", 0, 0);
	t_whole(s);
	t_segments(s);
	t_striped(s);
	t_inherited(s);
	t_proxy_lays_out(s);
	t_lgopen(s);
	nfs41c_session_destroy(s);
	lt_finish(&L);
	free(buf);
	free(rbuf);
	return 0;
}
