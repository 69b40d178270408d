/* SPDX-License-Identifier: MIT */
/*
 * Mirrors, error and statistics reports, device lists (RFC 8435 §8, §9;
 * RFC 7862 §15.6, §15.7; RFC 8881 §18.41, §18.44) with four real braid-ds:
 *  - mirroring: N mirrors on N distinct data servers, most efficient first;
 *    writes through each mirror land in each object; the MDS's own WRITE
 *    reaches every mirror; segment striping with mirrors keeps each
 *    segment's copies apart;
 *  - LAYOUTRETURN with an ff_layoutreturn4 body: its I/O errors and
 *    statistics counted per client and per data server; a malformed body
 *    is NFS4ERR_BADXDR and returns nothing;
 *  - LAYOUTERROR (NFSv4.2 only) steers the reporting client's new
 *    layouts away from the data server reported failing: READ of a
 *    mirrored file names only the healthy mirror, RW gets
 *    NFS4ERR_LAYOUTUNAVAILABLE (its I/O goes through the MDS), new files go
 *    to other data servers; other clients keep the server until a second
 *    client reports it, then RW gets NFS4ERR_LAYOUTTRYLATER for everybody;
 *    NOSPC and DQUOT make the client's RW layouts of files there fail with
 *    that status until space is freed; LAYOUTSTATS is counted;
 *  - an object lost before its first write (a data server crash): the
 *    client's report of NFS4ERR_STALE from it (LAYOUTERROR, or a
 *    LAYOUTRETURN's ff_ioerr4) makes the MDS create it again, so the
 *    write it sends next lands, as the stock client's resend does; one
 *    that may have held bytes below the size is not made again empty, nor
 *    is an object on a data server that holds nothing of the file, nor an
 *    erasure-coded file's chunk (its rebuild's);
 *  - GETDEVICELIST pages through every data server's device ID.
 */
#include "config.h"

#include "tests/mds/layout-test.h"

#include "tests/dataserver/store-test.h"

#include "mds/data.h"
#include "mds/fh.h"
#include "mds/layout.h"

#define CONF "heartbeat_interval = 1s\nds_timeout = 3s\n"

static struct lt L;
static struct nfs41c_session *S;
static uint8_t *buf, *rbuf;

static void run42_on(struct nfs41c_session *s, const nfs_argop4 *ops, unsigned n,
		     COMPOUND4res *res, struct xdr_arena *ar)
{
	xdr_arena_init(ar, NULL, 0, 1u << 20);
	CHECK_EQ(nfs41c_compound_ex(s, NULL, NFS41C_MINOR2, ops, n, res, ar), 0);
}

static void run42(const nfs_argop4 *ops, unsigned n, COMPOUND4res *res, struct xdr_arena *ar)
{
	run42_on(S, ops, n, res, ar);
}

static void t_mirrors(void)
{
	struct ts_fh dir;
	lt_mkdir_policy(&L, "mirrored", "whole,mirrors=3", &dir);
	struct ts_openres o;
	lt_create(S, &dir, "m", &o);
	struct lt_layout l;
	CHECK_EQ(lt_get_page(S, &o.fh, LAYOUTIOMODE4_RW, 0, &o.sid, &l), NFS4_OK);
	CHECK(l.nmirrors == 3 && l.nstripes == 1);
	struct cds *d[3];
	for (unsigned m = 0; m < 3; m++) {
		d[m] = lt_ds_of_dev(&L, S, l.ds[m].dev);
		for (unsigned j = 0; j < m; j++)
			CHECK(d[m] != d[j]);
		if (m)
			CHECK(l.ds[m].efficiency < l.ds[m - 1].efficiency);
		CHECK(!memcmp(l.ds[m].fh, l.ds[0].fh, DS_FH_SIZE) && l.ds[m].uid == l.ds[0].uid);
	}
	/* the client writes every mirror */
	dt_fill(buf, 0, MiB, 71);
	for (unsigned m = 0; m < 3; m++)
		CHECK_EQ(
		    lt_ds_write(d[m], &l.ds[m], 0, buf, MiB, FILE_SYNC, l.ds[m].uid, l.ds[m].gid),
		    NFS3_OK);
	CHECK_EQ(lt_layoutcommit(S, &o.fh, 0, MiB, &l.sid, MiB - 1, NULL, NULL), NFS4_OK);
	/* the MDS's WRITE reaches all three too */
	dt_fill(buf, MiB, 4096, 72);
	CHECK_EQ(lt_mds_write(S, &o.fh, MiB, buf, 4096), NFS4_OK);
	for (unsigned m = 0; m < 3; m++) {
		uint32_t n;
		CHECK_EQ(lt_ds_read(d[m], &l.ds[m], MiB, rbuf, 4096, l.ds[m].uid, l.ds[m].gid, &n),
			 NFS3_OK);
		CHECK(n == 4096 && dt_check(rbuf, MiB, 4096, 72));
		CHECK_EQ(lt_ds_read(d[m], &l.ds[m], 0, rbuf, 4096, l.ds[m].uid, l.ds[m].gid, &n),
			 NFS3_OK);
		CHECK(n == 4096 && dt_check(rbuf, 0, 4096, 71));
	}
	CHECK_EQ(lt_return_all(S, &o.fh, &l.sid), NFS4_OK);

	/* segments with two mirrors: each segment's pair distinct, round-robin */
	lt_mkdir_policy(&L, "segmirror", "segments,segment_size=1M,mirrors=2", &dir);
	lt_create(S, &dir, "sm", &o);
	stateid4 sid = o.sid;
	struct cds *p[5][2];
	for (unsigned k = 0; k < 5; k++) {
		CHECK_EQ(lt_get_page(S, &o.fh, LAYOUTIOMODE4_RW, (uint64_t)k * MiB, &sid, &l),
			 NFS4_OK);
		CHECK(l.nmirrors == 2 && l.offset == (uint64_t)k * MiB && l.length == MiB);
		p[k][0] = lt_ds_of_dev(&L, S, l.ds[0].dev);
		p[k][1] = lt_ds_of_dev(&L, S, l.ds[1].dev);
		CHECK(p[k][0] != p[k][1]);
		sid = l.sid;
	}
	for (unsigned k = 0; k < 4; k++)
		CHECK(p[k][1] == p[k + 1][0]); /* the next segment starts where this one's
						  second copy is */
	CHECK(p[4][0] == p[0][0]);
	CHECK_EQ(lt_return_all(S, &o.fh, &sid), NFS4_OK);
}

/* An ff_layoutreturn4 body: two errors on dev, one iostats report. */
static xdr_opaque return_body(const deviceid4 dev, const stateid4 *sid, uint8_t *mem, size_t size)
{
	device_error4 errs[2];
	memcpy(errs[0].de_deviceid, dev, sizeof(deviceid4));
	errs[0].de_status = NFS4ERR_IO;
	errs[0].de_opnum = OP_WRITE;
	memcpy(errs[1].de_deviceid, dev, sizeof(deviceid4));
	errs[1].de_status = NFS4ERR_ACCESS;
	errs[1].de_opnum = OP_READ;
	ff_ioerr4 ie = {
	    .ffie_offset = 0, .ffie_length = MiB, .ffie_stateid = *sid, .ffie_errors = {2, errs}};
	ff_iostats4 is;
	memset(&is, 0, sizeof(is));
	is.ffis_length = MiB;
	is.ffis_stateid = *sid;
	is.ffis_read = (io_info4){3, 300};
	is.ffis_write = (io_info4){2, 200};
	memcpy(is.ffis_deviceid, dev, sizeof(deviceid4));
	is.ffis_layoutupdate.ffl_addr.na_r_netid = xdr_string_of("tcp");
	is.ffis_layoutupdate.ffl_addr.na_r_addr = xdr_string_of("127.0.0.1.8.1");
	ff_layoutreturn4 r = {.fflr_ioerr_report = {1, &ie}, .fflr_iostats_report = {1, &is}};
	struct iovec iov[16];
	struct xdr_enc e;
	xdr_enc_init(&e, iov, 16, mem, size, NULL);
	CHECK_EQ(xdr_enc_ff_layoutreturn4(&e, &r), 0);
	CHECK(e.len <= size);
	xdr_enc_flatten(&e, mem + size); /* the caller gave twice the room */
	return xdr_opaque_of(mem + size, e.len);
}

/* An ff_layoutreturn4 body with one error: NFS4ERR_STALE from dev on WRITE. */
static xdr_opaque stale_body(const deviceid4 dev, const stateid4 *sid, uint8_t *mem, size_t size)
{
	device_error4 err;
	memcpy(err.de_deviceid, dev, sizeof(deviceid4));
	err.de_status = NFS4ERR_STALE;
	err.de_opnum = OP_WRITE;
	ff_ioerr4 ie = {
	    .ffie_offset = 0, .ffie_length = 8192, .ffie_stateid = *sid, .ffie_errors = {1, &err}};
	ff_layoutreturn4 r = {.fflr_ioerr_report = {1, &ie}, .fflr_iostats_report = {0, NULL}};
	struct iovec iov[16];
	struct xdr_enc e;
	xdr_enc_init(&e, iov, 16, mem, size, NULL);
	CHECK_EQ(xdr_enc_ff_layoutreturn4(&e, &r), 0);
	CHECK(e.len <= size);
	xdr_enc_flatten(&e, mem + size);
	return xdr_opaque_of(mem + size, e.len);
}

static void t_return_reports(void)
{
	struct ts_openres o;
	lt_create(S, NULL, "reported", &o);
	struct lt_layout l;
	CHECK_EQ(lt_get_page(S, &o.fh, LAYOUTIOMODE4_RW, 0, &o.sid, &l), NFS4_OK);
	struct cds *d = lt_ds_of_dev(&L, S, l.ds[0].dev);
	struct mds_layout_counters c0, d0, c1, d1;
	CHECK_EQ(mds_layout_counters_client(L.m.mds, ts_clientid(S), &c0), 0);
	mds_layout_counters_ds(L.m.mds, d->id, &d0);
	/* garbage: nothing is returned */
	uint8_t junk[7] = {0, 0, 0, 9, 1, 2, 3};
	CHECK_EQ(lt_layoutreturn(S, &o.fh, LAYOUTIOMODE4_ANY, 0, NFS4_UINT64_MAX, &l.sid,
				 xdr_opaque_of(junk, sizeof(junk)), NULL, NULL),
		 NFS4ERR_BADXDR);
	static uint8_t mem[8192];
	xdr_opaque body = return_body(l.ds[0].dev, &l.sid, mem, 4096);
	bool present = true;
	CHECK_EQ(lt_layoutreturn(S, &o.fh, LAYOUTIOMODE4_ANY, 0, NFS4_UINT64_MAX, &l.sid, body,
				 &present, NULL),
		 NFS4_OK);
	CHECK(!present);
	CHECK_EQ(mds_layout_counters_client(L.m.mds, ts_clientid(S), &c1), 0);
	mds_layout_counters_ds(L.m.mds, d->id, &d1);
	CHECK_EQ(c1.ioerrors - c0.ioerrors, 2);
	CHECK_EQ(c1.ioerr_access - c0.ioerr_access, 1);
	CHECK_EQ(c1.read_ops - c0.read_ops, 3);
	CHECK_EQ(c1.read_bytes - c0.read_bytes, 300);
	CHECK_EQ(c1.write_ops - c0.write_ops, 2);
	CHECK_EQ(c1.write_bytes - c0.write_bytes, 200);
	CHECK_EQ(c1.layoutreturns - c0.layoutreturns, 1);
	CHECK_EQ(d1.ioerrors - d0.ioerrors, 2);
	CHECK_EQ(d1.write_bytes - d0.write_bytes, 200);

	/* NFS4ERR_IO there: this client's layouts avoid that data server a
	 * while, so the file it holds gets no layout for now: this client
	 * alone cannot use it, so its I/O goes through the MDS (once the
	 * fencing the ACCESS report started is done: TRYLATER meanwhile) */
	nfsstat4 st = NFS4ERR_LAYOUTTRYLATER;
	for (int i = 0; i < 100 && st == NFS4ERR_LAYOUTTRYLATER; i++) {
		if (i)
			usleep(50 * 1000);
		st = lt_get_page(S, &o.fh, LAYOUTIOMODE4_RW, 0, &o.sid, NULL);
	}
	CHECK_EQ(st, NFS4ERR_LAYOUTUNAVAILABLE);

	/* a partial return keeps the stateid, one seqid on (a new file: it
	 * goes elsewhere) */
	lt_create(S, NULL, "partial", &o);
	CHECK_EQ(lt_get_page(S, &o.fh, LAYOUTIOMODE4_RW, 0, &o.sid, &l), NFS4_OK);
	CHECK(lt_ds_of_dev(&L, S, l.ds[0].dev) != d);
	struct lt_layout r;
	CHECK_EQ(lt_get_page(S, &o.fh, LAYOUTIOMODE4_READ, 0, &l.sid, &r), NFS4_OK);
	stateid4 left;
	CHECK_EQ(lt_layoutreturn(S, &o.fh, LAYOUTIOMODE4_RW, 0, NFS4_UINT64_MAX, &r.sid,
				 xdr_opaque_of(NULL, 0), &present, &left),
		 NFS4_OK);
	CHECK(present && left.seqid == r.sid.seqid + 1);
	/* the READ layout is still held: RW ones are not */
	CHECK_EQ(lt_layoutcommit(S, &o.fh, 0, MiB, &left, 10, NULL, NULL), NFS4_OK);
	CHECK_EQ(lt_layoutreturn(S, &o.fh, LAYOUTIOMODE4_READ, 0, NFS4_UINT64_MAX, &left,
				 xdr_opaque_of(NULL, 0), &present, NULL),
		 NFS4_OK);
	CHECK(!present);
	CHECK(!mds_layout_client_has_state(L.m.mds, ts_clientid(S)));

	/* LAYOUTRETURN4_FSID and _ALL: every layout of the client, at once */
	for (int type = LAYOUTRETURN4_FSID; type <= LAYOUTRETURN4_ALL; type++) {
		struct ts_openres f1, f2;
		char n1[16], n2[16];
		snprintf(n1, sizeof(n1), "bulk%d-1", type);
		snprintf(n2, sizeof(n2), "bulk%d-2", type);
		lt_create(S, NULL, n1, &f1);
		lt_create(S, NULL, n2, &f2);
		CHECK_EQ(lt_get_page(S, &f1.fh, LAYOUTIOMODE4_RW, 0, &f1.sid, &l), NFS4_OK);
		CHECK_EQ(lt_get_page(S, &f2.fh, LAYOUTIOMODE4_READ, 0, &f2.sid, &r), NFS4_OK);
		CHECK(mds_layout_client_has_state(L.m.mds, ts_clientid(S)));
		nfs_argop4 ops[2] = {ts_put(&f1.fh), ts_op(OP_LAYOUTRETURN)};
		LAYOUTRETURN4args *a = &ops[1].u.oplayoutreturn;
		a->lora_layout_type = LAYOUT4_FLEX_FILES;
		a->lora_iomode = LAYOUTIOMODE4_ANY;
		a->lora_layoutreturn.lr_returntype = type;
		COMPOUND4res res;
		struct xdr_arena ar;
		/* ALL needs no filehandle: send it alone */
		if (type == LAYOUTRETURN4_ALL)
			ts_run(S, ops + 1, 1, &res, &ar);
		else
			ts_run(S, ops, 2, &res, &ar);
		CHECK_EQ(ts_st(&res, type == LAYOUTRETURN4_ALL ? 0 : 1), NFS4_OK);
		xdr_arena_release(&ar);
		CHECK(!mds_layout_client_has_state(L.m.mds, ts_clientid(S)));
		CHECK_EQ(lt_return_all(S, &f1.fh, &l.sid), NFS4ERR_BAD_STATEID);
	}
}

static nfsstat4 layouterror_on(struct nfs41c_session *s, const struct ts_fh *f,
			       const stateid4 *sid, const deviceid4 dev, nfsstat4 status, bool v42)
{
	nfs_argop4 ops[2] = {ts_put(f), ts_op(OP_LAYOUTERROR)};
	device_error4 e;
	memcpy(e.de_deviceid, dev, sizeof(deviceid4));
	e.de_status = status;
	e.de_opnum = status == NFS4ERR_NOSPC ? OP_WRITE : OP_READ;
	LAYOUTERROR4args *a = &ops[1].u.oplayouterror;
	a->lea_offset = 0;
	a->lea_length = MiB;
	a->lea_stateid = *sid;
	a->lea_errors.len = 1;
	a->lea_errors.val = &e;
	COMPOUND4res res;
	struct xdr_arena ar;
	if (v42)
		run42_on(s, ops, 2, &res, &ar);
	else
		ts_run(s, ops, 2, &res, &ar);
	nfsstat4 st = ts_st(&res, 1);
	xdr_arena_release(&ar);
	return st;
}

static nfsstat4 layouterror(const struct ts_fh *f, const stateid4 *sid, const deviceid4 dev,
			    nfsstat4 status, bool v42)
{
	return layouterror_on(S, f, sid, dev, status, v42);
}

static nfsstat4 layoutstats(const struct ts_fh *f, const stateid4 *sid, const deviceid4 dev,
			    layouttype4 type)
{
	nfs_argop4 ops[2] = {ts_put(f), ts_op(OP_LAYOUTSTATS)};
	LAYOUTSTATS4args *a = &ops[1].u.oplayoutstats;
	a->lsa_offset = 0;
	a->lsa_length = NFS4_UINT64_MAX;
	a->lsa_stateid = *sid;
	a->lsa_read = (io_info4){10, 10 * MiB};
	a->lsa_write = (io_info4){4, 4 * MiB};
	memcpy(a->lsa_deviceid, dev, sizeof(deviceid4));
	a->lsa_layoutupdate.lou_type = type;
	ff_layoutupdate4 u;
	memset(&u, 0, sizeof(u));
	u.ffl_addr.na_r_netid = xdr_string_of("tcp");
	u.ffl_addr.na_r_addr = xdr_string_of("127.0.0.1.8.1");
	u.ffl_read.ffil_ops_completed = 10;
	uint8_t mem[1024], flat[1024];
	struct iovec iov[8];
	struct xdr_enc e;
	xdr_enc_init(&e, iov, 8, mem, sizeof(mem), NULL);
	CHECK_EQ(xdr_enc_ff_layoutupdate4(&e, &u), 0);
	xdr_enc_flatten(&e, flat);
	a->lsa_layoutupdate.lou_body = xdr_opaque_of(flat, e.len);
	COMPOUND4res res;
	struct xdr_arena ar;
	run42(ops, 2, &res, &ar);
	nfsstat4 st = ts_st(&res, 1);
	xdr_arena_release(&ar);
	return st;
}

static void t_layouterror_steers(void)
{
	struct ts_fh dir;
	lt_mkdir_policy(&L, "steer", "whole,mirrors=2", &dir);
	struct ts_openres o;
	lt_create(S, &dir, "s", &o);
	struct lt_layout l;
	CHECK_EQ(lt_get_page(S, &o.fh, LAYOUTIOMODE4_RW, 0, &o.sid, &l), NFS4_OK);
	CHECK_EQ(l.nmirrors, 2);
	struct cds *bad = lt_ds_of_dev(&L, S, l.ds[0].dev),
		   *good = lt_ds_of_dev(&L, S, l.ds[1].dev);
	/* NFSv4.2 only; an error report holds errors; a layout stateid */
	CHECK_EQ(layouterror(&o.fh, &l.sid, l.ds[0].dev, NFS4ERR_NXIO, false), NFS4ERR_OP_ILLEGAL);
	CHECK_EQ(layouterror(&o.fh, &l.sid, l.ds[0].dev, NFS4_OK, true), NFS4ERR_INVAL);
	CHECK_EQ(layouterror(&o.fh, &o.sid, l.ds[0].dev, NFS4ERR_NXIO, true), NFS4ERR_BAD_STATEID);
	/* statistics first, while all is well */
	struct mds_layout_counters c0, c1;
	CHECK_EQ(mds_layout_counters_client(L.m.mds, ts_clientid(S), &c0), 0);
	CHECK_EQ(layoutstats(&o.fh, &l.sid, l.ds[0].dev, LAYOUT4_FLEX_FILES), NFS4_OK);
	CHECK_EQ(layoutstats(&o.fh, &l.sid, l.ds[0].dev, LAYOUT4_BLOCK_VOLUME),
		 NFS4ERR_UNKNOWN_LAYOUTTYPE);
	CHECK_EQ(mds_layout_counters_client(L.m.mds, ts_clientid(S), &c1), 0);
	CHECK_EQ(c1.read_bytes - c0.read_bytes, 10 * MiB);
	CHECK_EQ(c1.write_ops - c0.write_ops, 4);

	/* the first mirror's data server fails, as this client sees it */
	CHECK_EQ(layouterror(&o.fh, &l.sid, l.ds[0].dev, NFS4ERR_NXIO, true), NFS4_OK);
	struct mds_layout_counters dc;
	mds_layout_counters_ds(L.m.mds, bad->id, &dc);
	CHECK(dc.ioerrors >= 1);
	/* READ: the other mirror only; RW needs both: this client alone
	 * cannot reach one, so its I/O goes through the MDS */
	struct lt_layout r;
	CHECK_EQ(lt_get_page(S, &o.fh, LAYOUTIOMODE4_READ, 0, &l.sid, &r), NFS4_OK);
	CHECK_EQ(r.nmirrors, 1);
	CHECK(lt_ds_of_dev(&L, S, r.ds[0].dev) == good);
	CHECK_EQ(lt_get_page(S, &o.fh, LAYOUTIOMODE4_RW, 0, &r.sid, NULL),
		 NFS4ERR_LAYOUTUNAVAILABLE);
	/* one client's report does not take the server from the others */
	struct nfs41c_session *S2 = mt_session(&L.m, "lt-reports-2", 0, 0);
	struct ts_openres o2;
	lt_create(S2, &dir, "s", &o2);
	struct lt_layout l2;
	CHECK_EQ(lt_get_page(S2, &o2.fh, LAYOUTIOMODE4_RW, 0, &o2.sid, &l2), NFS4_OK);
	CHECK_EQ(l2.nmirrors, 2);
	CHECK(lt_ds_of_dev(&L, S2, l2.ds[0].dev) == bad || lt_ds_of_dev(&L, S2, l2.ds[1].dev) == bad);
	/* a second client's report does: for everybody, the file is now
	 * written without that mirror, which goes stale (durably) and the
	 * layouts naming it are recalled first */
	const uint8_t *bad_dev = lt_ds_of_dev(&L, S2, l2.ds[0].dev) == bad ? l2.ds[0].dev : l2.ds[1].dev;
	CHECK_EQ(layouterror_on(S2, &o2.fh, &l2.sid, bad_dev, NFS4ERR_IO, true), NFS4_OK);
	CHECK_EQ(lt_get_page(S2, &o2.fh, LAYOUTIOMODE4_RW, 0, &l2.sid, NULL),
		 NFS4ERR_RECALLCONFLICT);
	struct mds_file_map fm;
	CHECK_EQ(mds_data_map(L.m.mds, lt_ino(&L, &o.fh), &fm), 0);
	CHECK(mds_data_map_stale(&fm, bad->id) && !mds_data_map_stale(&fm, good->id));
	CHECK_EQ(lt_return_all(S2, &o2.fh, &l2.sid), NFS4_OK);
	CHECK_EQ(lt_return_all(S, &o.fh, &r.sid), NFS4_OK);
	CHECK_EQ(lt_get_page(S2, &o2.fh, LAYOUTIOMODE4_RW, 0, &o2.sid, &l2), NFS4_OK);
	CHECK_EQ(l2.nmirrors, 1);
	CHECK(lt_ds_of_dev(&L, S2, l2.ds[0].dev) == good);
	CHECK_EQ(lt_get_page(S, &o.fh, LAYOUTIOMODE4_READ, 0, &o.sid, &r), NFS4_OK);
	CHECK_EQ(r.nmirrors, 1);
	CHECK(lt_ds_of_dev(&L, S, r.ds[0].dev) == good);
	CHECK_EQ(lt_return_all(S2, &o2.fh, &l2.sid), NFS4_OK);
	nfs41c_session_destroy(S2);
	/* new files stay off it */
	for (unsigned i = 0; i < 8; i++) {
		char name[16];
		snprintf(name, sizeof(name), "avoid%u", i);
		struct ts_openres f;
		lt_create(S, NULL, name, &f);
		struct lt_layout nl;
		CHECK_EQ(lt_get_page(S, &f.fh, LAYOUTIOMODE4_RW, 0, &f.sid, &nl), NFS4_OK);
		CHECK(lt_ds_of_dev(&L, S, nl.ds[0].dev) != bad);
		CHECK_EQ(lt_return_all(S, &f.fh, &nl.sid), NFS4_OK);
	}
	CHECK_EQ(lt_return_all(S, &o.fh, &r.sid), NFS4_OK);
}

/*
 * NFS4ERR_NOSPC reported by a client: its RW layouts of files on that data
 * server answer NFS4ERR_NOSPC (the write fails at once, as on a local
 * filesystem) until space is freed there; its READ layouts and other
 * clients are not affected; its new files go to other data servers.
 */
static void t_nospc(void)
{
	struct ts_fh dir;
	lt_mkdir_policy(&L, "full", "whole", &dir);
	struct ts_openres o;
	lt_create(S, &dir, "n1", &o);
	struct lt_layout l;
	CHECK_EQ(lt_get_page(S, &o.fh, LAYOUTIOMODE4_RW, 0, &o.sid, &l), NFS4_OK);
	struct cds *full = lt_ds_of_dev(&L, S, l.ds[0].dev);
	CHECK_EQ(layouterror(&o.fh, &l.sid, l.ds[0].dev, NFS4ERR_NOSPC, true), NFS4_OK);
	CHECK_EQ(lt_get_page(S, &o.fh, LAYOUTIOMODE4_RW, 0, &l.sid, NULL), NFS4ERR_NOSPC);
	struct lt_layout r;
	CHECK_EQ(lt_get_page(S, &o.fh, LAYOUTIOMODE4_READ, 0, &l.sid, &r), NFS4_OK);
	CHECK(lt_ds_of_dev(&L, S, r.ds[0].dev) == full);
	/* DQUOT the same way, and it replaces the mark */
	CHECK_EQ(layouterror(&o.fh, &l.sid, l.ds[0].dev, NFS4ERR_DQUOT, true), NFS4_OK);
	CHECK_EQ(lt_get_page(S, &o.fh, LAYOUTIOMODE4_RW, 0, &l.sid, NULL), NFS4ERR_DQUOT);
	CHECK_EQ(layouterror(&o.fh, &l.sid, l.ds[0].dev, NFS4ERR_NOSPC, true), NFS4_OK);
	/* another client: its own writes will tell it */
	struct nfs41c_session *S2 = mt_session(&L.m, "lt-nospc-2", 0, 0);
	struct ts_openres o2;
	lt_create(S2, &dir, "n1", &o2);
	struct lt_layout l2;
	CHECK_EQ(lt_get_page(S2, &o2.fh, LAYOUTIOMODE4_RW, 0, &o2.sid, &l2), NFS4_OK);
	CHECK_EQ(lt_return_all(S2, &o2.fh, &l2.sid), NFS4_OK);
	nfs41c_session_destroy(S2);
	/* this client's new files go to servers with room */
	for (unsigned i = 0; i < 8; i++) {
		char name[16];
		snprintf(name, sizeof(name), "room%u", i);
		struct ts_openres f;
		lt_create(S, &dir, name, &f);
		struct lt_layout nl;
		CHECK_EQ(lt_get_page(S, &f.fh, LAYOUTIOMODE4_RW, 0, &f.sid, &nl), NFS4_OK);
		CHECK(lt_ds_of_dev(&L, S, nl.ds[0].dev) != full);
		CHECK_EQ(lt_return_all(S, &f.fh, &nl.sid), NFS4_OK);
	}
	/* space freed there (a removal, a truncation, its heartbeat) */
	mds_layout_ds_space_freed(L.m.mds, full->id);
	usleep(1100 * 1000); /* past the window where a repeat is a duplicate (DELAY) */
	CHECK_EQ(lt_get_page(S, &o.fh, LAYOUTIOMODE4_RW, 0, &l.sid, &r), NFS4_OK);
	CHECK(lt_ds_of_dev(&L, S, r.ds[0].dev) == full);
	CHECK_EQ(lt_return_all(S, &o.fh, &r.sid), NFS4_OK);
}

static void t_devicelist(void)
{
	struct ts_fh root;
	struct cfile rc;
	uint64_t ri = mds_store_root(braid_mds_store(L.m.mds));
	cl_fh_of(&L.m, ri, cl_attr(&L.m, ri).generation, &rc);
	memcpy(root.b, rc.fhb, MDS_FH_SIZE);
	root.len = MDS_FH_SIZE;
	deviceid4 seen[8];
	unsigned nseen = 0;
	uint64_t cookie = 0;
	verifier4 verf = {0};
	bool eof = false;
	for (int round = 0; !eof; round++) {
		CHECK(round < 4);
		nfs_argop4 ops[2] = {ts_put(&root), ts_op(OP_GETDEVICELIST)};
		GETDEVICELIST4args *a = &ops[1].u.opgetdevicelist;
		a->gdla_layout_type = LAYOUT4_FLEX_FILES;
		a->gdla_maxdevices = 3;
		a->gdla_cookie = cookie;
		memcpy(a->gdla_cookieverf, verf, sizeof(verf));
		COMPOUND4res res;
		struct xdr_arena ar;
		ts_run(S, ops, 2, &res, &ar);
		CHECK_EQ(ts_st(&res, 1), NFS4_OK);
		const GETDEVICELIST4resok *ok =
		    &res.resarray.val[2].u.opgetdevicelist.u.gdlr_resok4;
		CHECK(ok->gdlr_deviceid_list.len <= 3);
		for (uint32_t i = 0; i < ok->gdlr_deviceid_list.len; i++)
			memcpy(seen[nseen++], ok->gdlr_deviceid_list.val[i], sizeof(deviceid4));
		cookie = ok->gdlr_cookie;
		memcpy(verf, ok->gdlr_cookieverf, sizeof(verf));
		eof = ok->gdlr_eof;
		xdr_arena_release(&ar);
	}
	CHECK_EQ(nseen, 4);
	for (unsigned i = 0; i < 4; i++) {
		struct cds *d = lt_ds_of_dev(&L, S, seen[i]);
		for (unsigned j = 0; j < i; j++)
			CHECK(d != lt_ds_of_dev(&L, S, seen[j]));
	}
	/* a cookie with another verifier */
	nfs_argop4 ops[2] = {ts_put(&root), ts_op(OP_GETDEVICELIST)};
	GETDEVICELIST4args *a = &ops[1].u.opgetdevicelist;
	a->gdla_layout_type = LAYOUT4_FLEX_FILES;
	a->gdla_maxdevices = 3;
	a->gdla_cookie = 1;
	memset(a->gdla_cookieverf, 0x5a, sizeof(a->gdla_cookieverf));
	COMPOUND4res res;
	struct xdr_arena ar;
	ts_run(S, ops, 2, &res, &ar);
	CHECK_EQ(ts_st(&res, 1), NFS4ERR_NOT_SAME);
	xdr_arena_release(&ar);
}

/* The data server crashed after the object's create and before the
 * header reached the disk: an empty .meta, which it reads as no object. */
static void lose_object(struct cds *d, uint64_t ino)
{
	struct mds_attr a = cl_attr(&L.m, ino);
	struct ds_objid id;
	mds_data_objid(&a, &id);
	char p[PATH_MAX];
	st_obj_path(d->set.store_dir, &id, ".meta", p, sizeof(p));
	cds_stop(d);
	CHECK_EQ(truncate(p, 0), 0);
	cds_start(&L.m, d);
}

static int ds_write8k(struct cds *d, const struct lt_layout *l)
{
	return lt_ds_write(d, &l->ds[0], 0, buf, 8192, FILE_SYNC, l->ds[0].uid, l->ds[0].gid);
}

static void t_lost_object(void)
{
	struct ts_openres o;
	lt_create(S, NULL, "lost", &o);
	struct lt_layout l;
	CHECK_EQ(lt_get_page(S, &o.fh, LAYOUTIOMODE4_RW, 0, &o.sid, &l), NFS4_OK);
	CHECK_EQ(l.nmirrors, 1);
	struct cds *d = lt_ds_of_dev(&L, S, l.ds[0].dev);
	uint64_t ino = lt_ino(&L, &o.fh);
	struct cfile cf = {.ino = ino, .attr = cl_attr(&L.m, ino)};
	cl_fh_of(&L.m, ino, cf.attr.generation, &cf);
	dt_fill(buf, 0, 8192, 33);

	/* made by the LAYOUTGET, lost before the first write */
	lose_object(d, ino);
	CHECK_EQ(cl_obj_stat(&L.m, d, &cf, NULL), -ENOENT);
	CHECK_EQ(ds_write8k(d, &l), NFS3ERR_STALE);
	/* a report naming a data server without an object of the file makes none */
	struct cds *other = NULL;
	struct lt_layout lo2;
	for (int i = 0; i < 32 && !other; i++) {
		char name[16];
		struct ts_openres o2;
		snprintf(name, sizeof(name), "elsewhere%d", i);
		lt_create(S, NULL, name, &o2);
		CHECK_EQ(lt_get_page(S, &o2.fh, LAYOUTIOMODE4_RW, 0, &o2.sid, &lo2), NFS4_OK);
		if (lt_ds_of_dev(&L, S, lo2.ds[0].dev) != d)
			other = lt_ds_of_dev(&L, S, lo2.ds[0].dev);
		CHECK_EQ(lt_return_all(S, &o2.fh, &lo2.sid), NFS4_OK);
	}
	CHECK(other);
	CHECK_EQ(layouterror(&o.fh, &l.sid, lo2.ds[0].dev, NFS4ERR_STALE, true), NFS4_OK);
	CHECK_EQ(cl_obj_stat(&L.m, other, &cf, NULL), -ENOENT);
	/* the client's report makes it again; the write it resends lands */
	CHECK_EQ(layouterror(&o.fh, &l.sid, l.ds[0].dev, NFS4ERR_STALE, true), NFS4_OK);
	CHECK_EQ(cl_obj_stat(&L.m, d, &cf, NULL), 0);
	CHECK_EQ(ds_write8k(d, &l), NFS3_OK);
	bool changed;
	uint64_t size;
	CHECK_EQ(lt_layoutcommit(S, &o.fh, 0, 8192, &l.sid, 8191, &changed, &size), NFS4_OK);
	CHECK(changed && size == 8192);
	uint32_t n;
	CHECK_EQ(lt_ds_read(d, &l.ds[0], 0, rbuf, 8192, l.ds[0].uid, l.ds[0].gid, &n), NFS3_OK);
	CHECK(n == 8192 && !memcmp(buf, rbuf, 8192));
	/* a report of an object that is there changes nothing */
	CHECK_EQ(layouterror(&o.fh, &l.sid, l.ds[0].dev, NFS4ERR_STALE, true), NFS4_OK);
	CHECK_EQ(lt_ds_read(d, &l.ds[0], 0, rbuf, 8192, l.ds[0].uid, l.ds[0].gid, &n), NFS3_OK);
	CHECK(n == 8192 && !memcmp(buf, rbuf, 8192));

	/* lost once it held bytes below the size: never made again empty, by
	 * LAYOUTRETURN's report either */
	lose_object(d, ino);
	CHECK_EQ(ds_write8k(d, &l), NFS3ERR_STALE);
	CHECK_EQ(layouterror(&o.fh, &l.sid, l.ds[0].dev, NFS4ERR_STALE, true), NFS4_OK);
	CHECK_EQ(cl_obj_stat(&L.m, d, &cf, NULL), -ENOENT);
	CHECK_EQ(ds_write8k(d, &l), NFS3ERR_STALE);
	CHECK_EQ(lt_return_all(S, &o.fh, &l.sid), NFS4_OK);

	/* the same loss reported by LAYOUTRETURN, for an object never written */
	struct ts_openres o3;
	lt_create(S, NULL, "lost-returned", &o3);
	CHECK_EQ(lt_get_page(S, &o3.fh, LAYOUTIOMODE4_RW, 0, &o3.sid, &l), NFS4_OK);
	d = lt_ds_of_dev(&L, S, l.ds[0].dev);
	ino = lt_ino(&L, &o3.fh);
	cf = (struct cfile){.ino = ino, .attr = cl_attr(&L.m, ino)};
	cl_fh_of(&L.m, ino, cf.attr.generation, &cf);
	lose_object(d, ino);
	CHECK_EQ(ds_write8k(d, &l), NFS3ERR_STALE);
	uint8_t mem[4096];
	CHECK_EQ(lt_layoutreturn(S, &o3.fh, LAYOUTIOMODE4_RW, 0, NFS4_UINT64_MAX, &l.sid,
				 stale_body(l.ds[0].dev, &l.sid, mem, sizeof(mem) / 2), NULL, NULL),
		 NFS4_OK);
	CHECK_EQ(cl_obj_stat(&L.m, d, &cf, NULL), 0);
	CHECK_EQ(lt_get_page(S, &o3.fh, LAYOUTIOMODE4_RW, 0, &o3.sid, &l), NFS4_OK);
	CHECK_EQ(ds_write8k(d, &l), NFS3_OK);
	CHECK_EQ(lt_return_all(S, &o3.fh, &l.sid), NFS4_OK);

	/* an erasure-coded file's lost chunk is its rebuild's, not made empty here */
	struct ts_fh ecdir;
	lt_mkdir_policy(&L, "ec-lost", "ec,k=2,m=1", &ecdir);
	struct ts_openres o4;
	lt_create(S, &ecdir, "e", &o4);
	CHECK_EQ(lt_get_page(S, &o4.fh, LAYOUTIOMODE4_RW, 0, &o4.sid, &l), NFS4_OK);
	d = lt_ds_of_dev(&L, S, l.ds[0].dev);
	ino = lt_ino(&L, &o4.fh);
	cf = (struct cfile){.ino = ino, .attr = cl_attr(&L.m, ino)};
	cl_fh_of(&L.m, ino, cf.attr.generation, &cf);
	CHECK_EQ(cl_obj_stat(&L.m, d, &cf, NULL), 0);
	lose_object(d, ino);
	CHECK_EQ(layouterror(&o4.fh, &l.sid, l.ds[0].dev, NFS4ERR_STALE, true), NFS4_OK);
	CHECK_EQ(cl_obj_stat(&L.m, d, &cf, NULL), -ENOENT);
	CHECK_EQ(lt_return_all(S, &o4.fh, &l.sid), NFS4_OK);
}

int main(void)
{
	buf = malloc(2 * MiB);
	rbuf = malloc(2 * MiB);
	CHECK(buf && rbuf);
	lt_start(&L, "/ *(rw,no_root_squash,insecure)\n", CONF, 4);
	S = mt_session(&L.m, "lt-reports", 0, 0);
	t_mirrors();
	t_return_reports();
	t_devicelist();
	t_nospc();
	t_lost_object();
	t_layouterror_steers(); /* last: the failing data server stays avoided */
	nfs41c_session_destroy(S);
	lt_finish(&L);
	free(buf);
	free(rbuf);
	return 0;
}
