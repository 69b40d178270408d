/* SPDX-License-Identifier: MIT */
/*
 * Layout recall and fencing (RFC 8881 §12.5.5, §20.3, §20.12; RFC 8435
 * §2.2), over a test back channel, with four real braid-ds:
 *  - truncation to a smaller size recalls the file's layouts: CB_LAYOUTRECALL
 *    (FILE, iomode ANY, [0, all), the layout stateid one seqid on);
 *    LAYOUTGET meanwhile is NFS4ERR_RECALLCONFLICT; LAYOUTRETURN ends it
 *    and a new layout state starts at seqid 1; an extension recalls nothing;
 *  - a client answering NFS4ERR_DELAY is called again until it answers OK;
 *  - a layout not returned within a lease is revoked and the file fenced:
 *    the old synthetic uid/gid get NFS3ERR_ACCES on the data server, the
 *    next LAYOUTGET carries a fresh pair that works, the MDS's own I/O
 *    follows, and the revoked stateid is NFS4ERR_BAD_STATEID;
 *  - REMOVE of the last link keeps the objects while a layout is out
 *    (recalled with clora_changed), and removes them once it is returned;
 *  - a client whose lease expires with an RW layout gets fenced;
 *  - mds_layout_recall_client() recalls what one client holds;
 *  - a data server coming back on other addresses gets a new device ID:
 *    layouts naming the old one are recalled, then the client that asked
 *    for notifications gets CB_NOTIFY_DEVICEID(DELETE) of it.
 */
#include "config.h"

#include "nfsd/metrics.h"
#include "tests/mds/layout-test.h"

#include "mds/data.h"
#include "mds/layout.h"

#define CONF "heartbeat_interval = 1s\nds_timeout = 3s\nlease_time = 3s\n"

static struct lt L;
static struct nfs41c_session *S;
static uint8_t *buf;

/* SEQUENCE alone: keeps S's lease while a test waits. */
static void ping(void)
{
	COMPOUND4res res;
	struct xdr_arena ar;
	ts_run(S, NULL, 0, &res, &ar);
	CHECK_EQ(res.status, NFS4_OK);
	xdr_arena_release(&ar);
}

static void wait_renewing(double secs)
{
	double t0 = cl_now();
	while (cl_now() - t0 < secs) {
		ping();
		usleep(200000);
	}
}

static nfsstat4 setsize(const struct ts_fh *f, const stateid4 *sid, uint64_t size)
{
	nfs_argop4 ops[2] = {ts_put(f), ts_op(OP_SETATTR)};
	struct ts_attrs ab;
	ops[1].u.opsetattr.stateid = *sid;
	ops[1].u.opsetattr.obj_attributes = ts_fattr(&ab, -1, (int64_t)size);
	COMPOUND4res res;
	struct xdr_arena ar;
	ts_run(S, ops, 2, &res, &ar);
	nfsstat4 st = ts_st(&res, 1);
	xdr_arena_release(&ar);
	return st;
}

static CB_LAYOUTRECALL4args last_recall(void)
{
	pthread_mutex_lock(&lt_cbs.mu);
	CB_LAYOUTRECALL4args a = lt_cbs.last;
	pthread_mutex_unlock(&lt_cbs.mu);
	return a;
}

/* An RW layout of a new file, 1 MiB written through it and committed. */
static void file_with_layout(const char *name, struct ts_openres *o, struct lt_layout *l,
			     struct cds **d)
{
	lt_create(S, NULL, name, o);
	CHECK_EQ(lt_get_page(S, &o->fh, LAYOUTIOMODE4_RW, 0, &o->sid, l), NFS4_OK);
	*d = lt_ds_of_dev(&L, S, l->ds[0].dev);
	dt_fill(buf, 0, MiB, 5);
	CHECK_EQ(lt_ds_write(*d, &l->ds[0], 0, buf, MiB, FILE_SYNC, l->ds[0].uid, l->ds[0].gid),
		 NFS3_OK);
	CHECK_EQ(lt_layoutcommit(S, &o->fh, 0, MiB, &l->sid, MiB - 1, NULL, NULL), NFS4_OK);
}

static double recall_metric(const char *series);

static void t_truncate_recall(void)
{
	struct ts_openres o;
	struct lt_layout l;
	struct cds *d;
	file_with_layout("trunc", &o, &l, &d);
	CHECK(recall_metric("\nbraid_mds_layouts_outstanding ") >= 1);
	int n0 = atomic_load(&lt_cbs.recalls);
	CHECK_EQ(setsize(&o.fh, &o.sid, 4096), NFS4_OK);
	lt_wait_count(&lt_cbs.recalls, n0 + 1, 5);
	CB_LAYOUTRECALL4args a = last_recall();
	CHECK_EQ(a.clora_type, LAYOUT4_FLEX_FILES);
	CHECK_EQ(a.clora_iomode, LAYOUTIOMODE4_ANY);
	CHECK(!a.clora_changed);
	CHECK_EQ(a.clora_recall.lor_recalltype, LAYOUTRECALL4_FILE);
	const layoutrecall_file4 *rf = &a.clora_recall.u.lor_layout;
	CHECK(rf->lor_fh.len == o.fh.len && !memcmp(rf->lor_fh.val, o.fh.b, o.fh.len));
	CHECK(rf->lor_offset == 0 && rf->lor_length == NFS4_UINT64_MAX);
	CHECK(!memcmp(rf->lor_stateid.other, l.sid.other, NFS4_OTHER_SIZE));
	CHECK_EQ(rf->lor_stateid.seqid, l.sid.seqid + 1);
	/* a recall is outstanding */
	CHECK_EQ(lt_get_page(S, &o.fh, LAYOUTIOMODE4_RW, 0, &l.sid, NULL), NFS4ERR_RECALLCONFLICT);
	bool present = true;
	CHECK_EQ(lt_layoutreturn(S, &o.fh, LAYOUTIOMODE4_ANY, 0, NFS4_UINT64_MAX, &rf->lor_stateid,
				 xdr_opaque_of(NULL, 0), &present, NULL),
		 NFS4_OK);
	CHECK(!present);
	/* gone: a fresh layout state */
	CHECK_EQ(lt_return_all(S, &o.fh, &rf->lor_stateid), NFS4ERR_BAD_STATEID);
	struct lt_layout l2;
	CHECK_EQ(lt_get_page(S, &o.fh, LAYOUTIOMODE4_RW, 0, &o.sid, &l2), NFS4_OK);
	CHECK_EQ(l2.sid.seqid, 1);
	CHECK(memcmp(l2.sid.other, l.sid.other, NFS4_OTHER_SIZE));
	/* an extension changes no mapping: no recall */
	int n1 = atomic_load(&lt_cbs.recalls);
	CHECK_EQ(setsize(&o.fh, &o.sid, 3 * MiB), NFS4_OK);
	wait_renewing(0.5);
	CHECK_EQ(atomic_load(&lt_cbs.recalls), n1);

	/* a client that answers NFS4ERR_DELAY (LAYOUTGETs in flight) is asked again */
	atomic_store(&lt_cbs.delays, 2);
	atomic_store(&lt_cbs.mode, LT_CB_DELAY);
	CHECK_EQ(setsize(&o.fh, &o.sid, 100), NFS4_OK);
	lt_wait_count(&lt_cbs.recalls, n1 + 3, 5);
	CHECK_EQ(atomic_load(&lt_cbs.delays), 0);
	atomic_store(&lt_cbs.mode, LT_CB_OK);
	a = last_recall();
	CHECK_EQ(lt_return_all(S, &o.fh, &a.clora_recall.u.lor_layout.lor_stateid), NFS4_OK);
	wait_renewing(0.5);
	CHECK_EQ(atomic_load(&lt_cbs.recalls), n1 + 3); /* nothing more once returned */

	/* NFS4ERR_NOMATCHING_LAYOUT: as good as returned */
	CHECK_EQ(lt_get_page(S, &o.fh, LAYOUTIOMODE4_RW, 0, &o.sid, &l2), NFS4_OK);
	atomic_store(&lt_cbs.mode, LT_CB_NOMATCH);
	CHECK_EQ(setsize(&o.fh, &o.sid, 10), NFS4_OK);
	lt_wait_count(&lt_cbs.recalls, n1 + 4, 5);
	double t0 = cl_now();
	while (lt_get_page(S, &o.fh, LAYOUTIOMODE4_RW, 0, &o.sid, &l2) == NFS4ERR_RECALLCONFLICT)
		CHECK(cl_now() - t0 < 3);
	atomic_store(&lt_cbs.mode, LT_CB_OK);
	CHECK_EQ(l2.sid.seqid, 1);
	CHECK_EQ(lt_return_all(S, &o.fh, &l2.sid), NFS4_OK);
}

/* Polls a write with ids until the data server refuses it (the fence). */
static void wait_fenced(struct cds *d, const struct lt_ds *x, uint32_t uid, uint32_t gid)
{
	double t0 = cl_now();
	for (;;) {
		int st = lt_ds_write(d, x, 0, buf, 4096, FILE_SYNC, uid, gid);
		if (st == NFS3ERR_ACCES)
			return;
		CHECK_EQ(st, NFS3_OK);
		CHECK(cl_now() - t0 < 10);
		ping();
		usleep(200000);
	}
}

/* The ids objects had before they came from the cluster key: a hash
 * under a key fixed in the source, of what the data-server file handle
 * shows in clear (object key, generation) and the epoch.  A fenced client
 * could compute the next epoch's this way. */
static void public_creds(const struct ds_objid *o, uint32_t epoch, uint32_t *uid, uint32_t *gid)
{
	static const struct siphash_key k = {{0x6272616964666e63ULL, 0x652d7569642d6731ULL}};
	uint8_t b[28];
	memcpy(b, o->key, 16);
	for (int i = 0; i < 8; i++)
		b[16 + i] = (uint8_t)(o->gen >> (8 * i));
	for (int i = 0; i < 4; i++)
		b[24 + i] = (uint8_t)(epoch >> (8 * i));
	uint64_t h = siphash24(&k, b, epoch ? 28 : 24);
	*uid = 0x40000000u | (uint32_t)(h & 0x3fffffffu);
	*gid = 0x40000000u | (uint32_t)((h >> 32) & 0x3fffffffu);
}

/* ids that must neither read nor write x's object on d */
static void refused(struct cds *d, const struct lt_ds *x, uint32_t uid, uint32_t gid)
{
	uint32_t n;
	uint8_t r[4096];
	CHECK_EQ(lt_ds_read(d, x, 0, r, 4096, uid, gid, &n), NFS3ERR_ACCES);
	CHECK_EQ(lt_ds_write(d, x, 0, buf, 4096, FILE_SYNC, uid, gid), NFS3ERR_ACCES);
}

static void t_revoke_and_fence(void)
{
	struct ts_openres o;
	struct lt_layout l;
	struct cds *d;
	file_with_layout("fenced", &o, &l, &d);
	uint64_t ino = lt_ino(&L, &o.fh);
	/* RFC 8435 §2.2: a READ layout's ids (another uid) read, never write */
	struct lt_layout lr;
	CHECK_EQ(lt_get_page(S, &o.fh, LAYOUTIOMODE4_READ, 0, &l.sid, &lr), NFS4_OK);
	CHECK(lr.ds[0].uid != l.ds[0].uid && lr.ds[0].gid == l.ds[0].gid);
	uint32_t rn;
	uint8_t rb[4096];
	CHECK_EQ(lt_ds_read(d, &lr.ds[0], 0, rb, 4096, lr.ds[0].uid, lr.ds[0].gid, &rn), NFS3_OK);
	CHECK(rn == 4096 && dt_check(rb, 0, 4096, 5));
	CHECK_EQ(lt_ds_write(d, &lr.ds[0], 0, buf, 4096, FILE_SYNC, lr.ds[0].uid, lr.ds[0].gid),
		 NFS3ERR_ACCES);
	CHECK_EQ(lt_ds_commit(d, &lr.ds[0], lr.ds[0].uid, lr.ds[0].gid), NFS3ERR_ACCES);
	int n0 = atomic_load(&lt_cbs.recalls);
	CHECK_EQ(setsize(&o.fh, &o.sid, MiB / 2), NFS4_OK);
	lt_wait_count(&lt_cbs.recalls, n0 + 1, 5);
	stateid4 rsid = last_recall().clora_recall.u.lor_layout.lor_stateid;
	/* we never return it: a lease later it is revoked, the file fenced */
	wait_fenced(d, &l.ds[0], l.ds[0].uid, l.ds[0].gid);
	CHECK_EQ(lt_return_all(S, &o.fh, &rsid), NFS4ERR_BAD_STATEID);
	struct mds_layout_counters c;
	CHECK_EQ(mds_layout_counters_client(L.m.mds, ts_clientid(S), &c), 0);
	CHECK(c.revoked >= 1 && c.recalls >= 1);
	struct mds_file_map map;
	CHECK_EQ(mds_data_map(L.m.mds, ino, &map), 0);
	CHECK(map.epoch >= 1);
	/* the old ids (the READ layout's too) and ids worked out from them or
	 * from the handle are refused */
	refused(d, &lr.ds[0], lr.ds[0].uid, lr.ds[0].gid);
	refused(d, &l.ds[0], l.ds[0].uid, l.ds[0].gid);
	refused(d, &l.ds[0], l.ds[0].uid + 1, l.ds[0].gid + 1);
	refused(d, &l.ds[0], lr.ds[0].uid, lr.ds[0].gid + 1);
	struct ds_objid oid;
	struct mds_attr at0 = cl_attr(&L.m, ino);
	mds_data_objid(&at0, &oid);
	for (uint32_t e = 0; e <= map.epoch + 1; e++) {
		uint32_t pu, pg;
		public_creds(&oid, e, &pu, &pg);
		refused(d, &l.ds[0], pu, pg);
	}
	/* the next layout carries the new pair, which works */
	struct lt_layout l2;
	CHECK_EQ(lt_get_page(S, &o.fh, LAYOUTIOMODE4_RW, 0, &o.sid, &l2), NFS4_OK);
	CHECK(l2.ds[0].uid != l.ds[0].uid || l2.ds[0].gid != l.ds[0].gid);
	struct mds_attr at = cl_attr(&L.m, ino);
	uint32_t uid, gid;
	mds_data_fence_epoch(L.m.mds, &at, map.epoch, &uid, &gid);
	CHECK(l2.ds[0].uid == uid && l2.ds[0].gid == gid);
	dt_fill(buf, 0, 4096, 6);
	CHECK_EQ(lt_ds_write(d, &l2.ds[0], 0, buf, 4096, FILE_SYNC, uid, gid), NFS3_OK);
	/* and the new epoch's READ ids read, never write */
	struct lt_layout l2r;
	CHECK_EQ(lt_get_page(S, &o.fh, LAYOUTIOMODE4_READ, 0, &l2.sid, &l2r), NFS4_OK);
	CHECK(l2r.ds[0].uid != uid && l2r.ds[0].gid == gid && l2r.ds[0].uid != lr.ds[0].uid);
	CHECK_EQ(lt_ds_read(d, &l2r.ds[0], 0, rb, 4096, l2r.ds[0].uid, gid, &rn), NFS3_OK);
	CHECK(rn == 4096 && dt_check(rb, 0, 4096, 6));
	CHECK_EQ(lt_ds_write(d, &l2r.ds[0], 0, buf, 4096, FILE_SYNC, l2r.ds[0].uid, gid),
		 NFS3ERR_ACCES);
	l2.sid = l2r.sid;
	/* so does the MDS's own I/O */
	uint32_t n;
	uint8_t r[4096];
	CHECK_EQ(lt_mds_read(S, &o.fh, 0, 4096, r, &n), NFS4_OK);
	CHECK(n == 4096 && dt_check(r, 0, 4096, 6));
	CHECK_EQ(lt_mds_write(S, &o.fh, 8192, buf, 4096), NFS4_OK);
	CHECK_EQ(lt_return_all(S, &o.fh, &l2.sid), NFS4_OK);
}

static void t_remove_waits(void)
{
	struct ts_openres o;
	struct lt_layout l;
	struct cds *d;
	file_with_layout("doomed", &o, &l, &d);
	struct cfile cf = {.attr = cl_attr(&L.m, lt_ino(&L, &o.fh))};
	CHECK_EQ(ts_close(S, &o.fh, &o.sid, NULL), NFS4_OK);
	int n0 = atomic_load(&lt_cbs.recalls);
	nfs_argop4 ops[2] = {ts_put(NULL), ts_op(OP_REMOVE)};
	ops[1].u.opremove.target = xdr_opaque_of("doomed", 6);
	COMPOUND4res res;
	struct xdr_arena ar;
	ts_run(S, ops, 2, &res, &ar);
	CHECK_EQ(ts_st(&res, 1), NFS4_OK);
	xdr_arena_release(&ar);
	/* the layout is out: the object stays, the layout is recalled */
	lt_wait_count(&lt_cbs.recalls, n0 + 1, 5);
	CB_LAYOUTRECALL4args a = last_recall();
	CHECK(a.clora_changed);
	uint64_t osz;
	CHECK_EQ(cl_obj_stat(&L.m, d, &cf, &osz), 0);
	/* the client may still write through it */
	CHECK_EQ(lt_ds_write(d, &l.ds[0], 0, buf, 4096, FILE_SYNC, l.ds[0].uid, l.ds[0].gid),
		 NFS3_OK);
	CHECK_EQ(lt_return_all(S, &o.fh, &a.clora_recall.u.lor_layout.lor_stateid), NFS4_OK);
	/* then the objects go, and the inode with them */
	double t0 = cl_now();
	struct mds_attr gone;
	while (cl_obj_stat(&L.m, d, &cf, &osz) != -ENOENT ||
	       mds_inode_getattr(braid_mds_store(L.m.mds), cf.attr.ino, &gone) != -ESTALE) {
		CHECK(cl_now() - t0 < 5);
		usleep(20000);
	}
}

static void t_lease_expiry_fences(void)
{
	/* a client without a back channel that goes silent */
	struct nfs41c_session *s2 = mt_session(&L.m, "lt-silent", 0, 0);
	struct ts_openres o;
	CHECK_EQ(ts_open_name(s2, NULL, "lt-silent-owner", "silent", OPEN4_SHARE_ACCESS_BOTH,
			      OPEN4_SHARE_DENY_NONE, true, &o),
		 NFS4_OK);
	struct lt_layout l;
	CHECK_EQ(lt_get_page(s2, &o.fh, LAYOUTIOMODE4_RW, 0, &o.sid, &l), NFS4_OK);
	struct cds *d = lt_ds_of_dev(&L, s2, l.ds[0].dev);
	CHECK_EQ(lt_ds_write(d, &l.ds[0], 0, buf, 4096, FILE_SYNC, l.ds[0].uid, l.ds[0].gid),
		 NFS3_OK);
	uint64_t id2 = ts_clientid(s2);
	CHECK(mds_layout_client_has_state(L.m.mds, id2));
	/* its lease runs out while S keeps talking (which reaps it) */
	wait_fenced(d, &l.ds[0], l.ds[0].uid, l.ds[0].gid);
	CHECK(!mds_layout_client_has_state(L.m.mds, id2));
	/* the session is gone with the client: free ours without a reply */
	nfs41c_session_destroy(s2);
}

static void t_recall_client(void)
{
	struct ts_openres o;
	struct lt_layout l;
	struct cds *d;
	file_with_layout("byclient", &o, &l, &d);
	int n0 = atomic_load(&lt_cbs.recalls);
	CHECK_EQ(mds_layout_recall_client(L.m.mds, ts_clientid(S)), 0);
	lt_wait_count(&lt_cbs.recalls, n0 + 1, 5);
	CB_LAYOUTRECALL4args a = last_recall();
	CHECK(!memcmp(a.clora_recall.u.lor_layout.lor_stateid.other, l.sid.other, NFS4_OTHER_SIZE));
	CHECK_EQ(lt_return_all(S, &o.fh, &a.clora_recall.u.lor_layout.lor_stateid), NFS4_OK);
	CHECK_EQ(mds_layout_recall_client(L.m.mds, ts_clientid(S)), -ENOENT);
	CHECK_EQ(mds_layout_recall_file(L.m.mds, lt_ino(&L, &o.fh)), -ENOENT);
}

static void t_new_addresses(void)
{
	struct ts_openres o;
	struct lt_layout l;
	struct cds *d;
	file_with_layout("moving", &o, &l, &d);
	struct lt_dev dv;
	CHECK_EQ(lt_getdeviceinfo(S, l.ds[0].dev, 4096, LT_NOTIFY_BOTH, &dv), NFS4_OK);
	int old_port = d->port;
	int n0 = atomic_load(&lt_cbs.recalls), d0 = atomic_load(&lt_cbs.deleted);
	/* back on another port (listen 127.0.0.1:0) */
	cds_stop(d);
	cds_start(&L.m, d);
	CHECK(d->port != old_port);
	while (atomic_load(&lt_cbs.recalls) < n0 + 1) {
		ping();
		usleep(50000);
	}
	CB_LAYOUTRECALL4args a = last_recall();
	/* not told of the deletion while a layout names the device */
	wait_renewing(1.5);
	CHECK_EQ(atomic_load(&lt_cbs.deleted), d0);
	CHECK_EQ(lt_return_all(S, &o.fh, &a.clora_recall.u.lor_layout.lor_stateid), NFS4_OK);
	double t0 = cl_now();
	while (atomic_load(&lt_cbs.deleted) < d0 + 1) {
		CHECK(cl_now() - t0 < 5);
		ping();
		usleep(50000);
	}
	pthread_mutex_lock(&lt_cbs.mu);
	CHECK(!memcmp(lt_cbs.last_deleted, l.ds[0].dev, sizeof(deviceid4)));
	pthread_mutex_unlock(&lt_cbs.mu);
	CHECK_EQ(lt_getdeviceinfo(S, l.ds[0].dev, 4096, 0, &dv), NFS4ERR_NOENT);
	struct lt_layout l2;
	CHECK_EQ(lt_get_page(S, &o.fh, LAYOUTIOMODE4_READ, 0, &o.sid, &l2), NFS4_OK);
	CHECK(memcmp(l2.ds[0].dev, l.ds[0].dev, sizeof(deviceid4)));
	CHECK(lt_ds_of_dev(&L, S, l2.ds[0].dev) == d);
	uint32_t n;
	uint8_t r[4096];
	CHECK_EQ(lt_ds_read(d, &l2.ds[0], 0, r, 4096, l2.ds[0].uid, l2.ds[0].gid, &n), NFS3_OK);
	CHECK(n == 4096 && dt_check(r, 0, 4096, 5));
	CHECK_EQ(lt_return_all(S, &o.fh, &l2.sid), NFS4_OK);
}

/*
 * What outlives a restart of the MDS: a file's fence epoch (layouts keep
 * naming the pair its objects have) and device IDs (RFC 8881 §12.2.10: the
 * same data server at the same addresses, the same ID).
 */
static void t_restart(void)
{
	struct ts_openres o;
	CHECK_EQ(ts_open_name(S, NULL, "lt-owner", "fenced", OPEN4_SHARE_ACCESS_BOTH,
			      OPEN4_SHARE_DENY_NONE, false, &o),
		 NFS4_OK);
	struct lt_layout before;
	CHECK_EQ(lt_get_page(S, &o.fh, LAYOUTIOMODE4_RW, 0, &o.sid, &before), NFS4_OK);
	struct mds_file_map map;
	CHECK_EQ(mds_data_map(L.m.mds, lt_ino(&L, &o.fh), &map), 0);
	CHECK(map.epoch >= 1);
	mt_stop(&L.m);
	mt_boot(&L.m);
	for (unsigned i = 0; i < L.nds; i++)
		cds_wait_up(&L.m, &L.ds[i]);
	struct nfs41c_session *s = mt_session(&L.m, "lt-after", 0, 0);
	CHECK_EQ(ts_open_name(s, NULL, "lt-owner", "fenced", OPEN4_SHARE_ACCESS_BOTH,
			      OPEN4_SHARE_DENY_NONE, false, &o),
		 NFS4_OK);
	struct lt_layout after;
	CHECK_EQ(lt_get_page(s, &o.fh, LAYOUTIOMODE4_RW, 0, &o.sid, &after), NFS4_OK);
	CHECK(after.ds[0].uid == before.ds[0].uid && after.ds[0].gid == before.ds[0].gid);
	CHECK(!memcmp(after.ds[0].dev, before.ds[0].dev, sizeof(deviceid4)));
	struct cds *d = lt_ds_of_dev(&L, s, after.ds[0].dev);
	CHECK_EQ(
	    lt_ds_write(d, &after.ds[0], 0, buf, 4096, FILE_SYNC, after.ds[0].uid, after.ds[0].gid),
	    NFS3_OK);
	CHECK_EQ(lt_return_all(s, &o.fh, &after.sid), NFS4_OK);
	nfs41c_session_destroy(s);
}

/* A series' value in the MDS's metrics (recalls end as returned or revoked). */
static double recall_metric(const char *series)
{
	char *text = NULL;
	size_t len = 0;
	CHECK_EQ(nfsd_metrics_render(L.m.mds->metrics, &text, &len), 0);
	double v = 0;
	const char *p = strstr(text, series);
	if (p)
		v = strtod(p + strlen(series), NULL);
	free(text);
	return v;
}

int main(void)
{
	buf = malloc(MiB);
	CHECK(buf);
	lt_start(&L, "/ *(rw,no_root_squash,insecure)\n", CONF, 4);
	struct nfsd_clnt *conn;
	S = lt_session_cb(&L, "lt-recall", &conn);
	t_truncate_recall();
	/* every recall answered by LAYOUTRETURN was timed as returned */
	CHECK(recall_metric("braid_mds_layout_recalls_completed_total{outcome=\"returned\"} ") >= 2);
	CHECK(recall_metric("braid_mds_layout_recall_duration_seconds_count ") >= 2);
	t_revoke_and_fence();
	CHECK(recall_metric("braid_mds_layout_recalls_completed_total{outcome=\"revoked\"} ") >= 1);
	t_remove_waits();
	t_lease_expiry_fences();
	t_recall_client();
	t_new_addresses();
	t_restart(); /* last: S dies with the MDS */
	nfs41c_session_destroy(S);
	nfsd_clnt_free(conn);
	lt_finish(&L);
	free(buf);
	return 0;
}
