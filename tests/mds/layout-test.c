/* SPDX-License-Identifier: MIT */
/* Helpers for the layout tests (tests/mds/layout-test.h). */
#include "config.h"

#include "tests/mds/layout-test.h"

void lt_start(struct lt *L, const char *exports, const char *conf, unsigned nds)
{
	memset(L, 0, sizeof(*L));
	mt_start(&L->m, exports, conf);
	cl_pin_port(&L->m, conf);
	L->nds = nds;
	for (unsigned i = 0; i < nds; i++) {
		char name[16];
		snprintf(name, sizeof(name), "ds-%c", 'a' + i);
		cds_prepare(&L->m, &L->ds[i], name, NULL);
		cds_start(&L->m, &L->ds[i]);
	}
}

void lt_finish(struct lt *L)
{
	for (unsigned i = 0; i < L->nds; i++)
		cds_stop(&L->ds[i]);
	mt_finish(&L->m);
}

struct cds *lt_ds_by_id(struct lt *L, uint32_t id)
{
	for (unsigned i = 0; i < L->nds; i++)
		if (L->ds[i].id == id)
			return &L->ds[i];
	return NULL;
}

struct cds *lt_ds_by_port(struct lt *L, int port)
{
	for (unsigned i = 0; i < L->nds; i++)
		if (L->ds[i].ds && L->ds[i].port == port)
			return &L->ds[i];
	return NULL;
}

int lt_uaddr_port(const char *ua)
{
	const char *p2 = strrchr(ua, '.');
	CHECK(p2);
	const char *p1 = p2 - 1;
	while (p1 > ua && *p1 != '.')
		p1--;
	return atoi(p1 + 1) * 256 + atoi(p2 + 1);
}

static bool lt_numeric(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static void lt_copy_str(char *dst, size_t size, xdr_string s)
{
	CHECK(s.len < size);
	memcpy(dst, s.val, s.len);
	dst[s.len] = 0;
}

nfsstat4 lt_layoutget(struct nfs41c_session *s, const struct ts_fh *f, const struct lt_get *g,
		      struct lt_layout *out)
{
	nfs_argop4 ops[2] = {ts_put(f), ts_op(OP_LAYOUTGET)};
	LAYOUTGET4args *a = &ops[1].u.oplayoutget;
	a->loga_signal_layout_avail = false;
	a->loga_layout_type = g->type ? g->type : LAYOUT4_FLEX_FILES;
	a->loga_iomode = g->iomode;
	a->loga_offset = g->offset;
	a->loga_length = g->length;
	a->loga_minlength = g->minlength;
	a->loga_stateid = g->sid;
	a->loga_maxcount = g->maxcount ? g->maxcount : 4096;
	COMPOUND4res res;
	struct xdr_arena ar;
	ts_run(s, ops, 2, &res, &ar);
	nfsstat4 st = ts_st(&res, 1);
	if (!st && out) {
		const LAYOUTGET4resok *ok = &res.resarray.val[2].u.oplayoutget.u.logr_resok4;
		memset(out, 0, sizeof(*out));
		out->roc = ok->logr_return_on_close;
		out->sid = ok->logr_stateid;
		out->nlayouts = ok->logr_layout.len;
		CHECK(ok->logr_layout.len >= 1);
		const layout4 *l = &ok->logr_layout.val[0];
		out->offset = l->lo_offset;
		out->length = l->lo_length;
		out->iomode = l->lo_iomode;
		CHECK_EQ(l->lo_content.loc_type, LAYOUT4_FLEX_FILES);
		ff_layout4 fl;
		struct xdr_dec d;
		xdr_dec_init(&d, l->lo_content.loc_body.val, l->lo_content.loc_body.len, &ar);
		CHECK_EQ(xdr_dec_ff_layout4(&d, &fl), 0);
		CHECK_EQ(xdr_dec_left(&d), 0);
		out->stripe_unit = fl.ffl_stripe_unit;
		out->flags = fl.ffl_flags;
		out->nmirrors = fl.ffl_mirrors.len;
		CHECK(out->nmirrors >= 1);
		out->nstripes = fl.ffl_mirrors.val[0].ffm_data_servers.len;
		CHECK(out->nmirrors * out->nstripes <= 16);
		for (unsigned m = 0; m < out->nmirrors; m++) {
			const ff_mirror4 *mi = &fl.ffl_mirrors.val[m];
			CHECK_EQ(mi->ffm_data_servers.len, out->nstripes);
			for (unsigned k = 0; k < out->nstripes; k++) {
				const ff_data_server4 *x = &mi->ffm_data_servers.val[k];
				struct lt_ds *o = &out->ds[m * out->nstripes + k];
				memcpy(o->dev, x->ffds_deviceid, sizeof(o->dev));
				o->efficiency = x->ffds_efficiency;
				o->sid = x->ffds_stateid;
				o->nfh = x->ffds_fh_vers.len;
				CHECK(o->nfh >= 1 && x->ffds_fh_vers.val[0].len <= NFS4_FHSIZE);
				o->fhlen = x->ffds_fh_vers.val[0].len;
				memcpy(o->fh, x->ffds_fh_vers.val[0].val, o->fhlen);
				lt_copy_str(o->user, sizeof(o->user), x->ffds_user);
				lt_copy_str(o->group, sizeof(o->group), x->ffds_group);
				CHECK(lt_numeric(o->user) && lt_numeric(o->group));
				o->uid = (uint32_t)strtoul(o->user, NULL, 10);
				o->gid = (uint32_t)strtoul(o->group, NULL, 10);
			}
		}
	}
	xdr_arena_release(&ar);
	return st;
}

nfsstat4 lt_get_page(struct nfs41c_session *s, const struct ts_fh *f, layoutiomode4 mode,
		     uint64_t off, const stateid4 *sid, struct lt_layout *out)
{
	struct lt_get g = {
	    .iomode = mode, .offset = off, .length = 4096, .minlength = 4096, .sid = *sid};
	return lt_layoutget(s, f, &g, out);
}

nfsstat4 lt_getdeviceinfo(struct nfs41c_session *s, const deviceid4 dev, uint32_t maxcount,
			  uint32_t notify, struct lt_dev *out)
{
	nfs_argop4 op = ts_op(OP_GETDEVICEINFO);
	GETDEVICEINFO4args *a = &op.u.opgetdeviceinfo;
	memcpy(a->gdia_device_id, dev, sizeof(deviceid4));
	a->gdia_layout_type = LAYOUT4_FLEX_FILES;
	a->gdia_maxcount = maxcount;
	uint32_t w = notify;
	a->gdia_notify_types.len = notify ? 1 : 0;
	a->gdia_notify_types.val = &w;
	COMPOUND4res res;
	struct xdr_arena ar;
	ts_run(s, &op, 1, &res, &ar);
	nfsstat4 st = ts_st(&res, 0);
	memset(out, 0, sizeof(*out));
	const GETDEVICEINFO4res *r = &res.resarray.val[1].u.opgetdeviceinfo;
	if (st == NFS4ERR_TOOSMALL)
		out->mincount = r->u.gdir_mincount;
	if (!st) {
		const GETDEVICEINFO4resok *ok = &r->u.gdir_resok4;
		CHECK_EQ(ok->gdir_device_addr.da_layout_type, LAYOUT4_FLEX_FILES);
		out->notification = ok->gdir_notification.len ? ok->gdir_notification.val[0] : 0;
		out->body_len = ok->gdir_device_addr.da_addr_body.len;
		if (out->body_len) {
			ff_device_addr4 da;
			struct xdr_dec d;
			xdr_dec_init(&d, ok->gdir_device_addr.da_addr_body.val, out->body_len, &ar);
			CHECK_EQ(xdr_dec_ff_device_addr4(&d, &da), 0);
			CHECK_EQ(xdr_dec_left(&d), 0);
			CHECK(da.ffda_netaddrs.len <= 16 && da.ffda_versions.len <= 8);
			out->naddrs = da.ffda_netaddrs.len;
			for (unsigned i = 0; i < out->naddrs; i++) {
				lt_copy_str(out->netid[i], 33, da.ffda_netaddrs.val[i].na_r_netid);
				lt_copy_str(out->uaddr[i], 65, da.ffda_netaddrs.val[i].na_r_addr);
			}
			out->nvers = da.ffda_versions.len;
			memcpy(out->vers, da.ffda_versions.val, out->nvers * sizeof(out->vers[0]));
		}
	}
	xdr_arena_release(&ar);
	return st;
}

struct cds *lt_ds_of_dev(struct lt *L, struct nfs41c_session *s, const deviceid4 dev)
{
	struct lt_dev d;
	CHECK_EQ(lt_getdeviceinfo(s, dev, 4096, 0, &d), NFS4_OK);
	CHECK(d.naddrs >= 1);
	struct cds *x = lt_ds_by_port(L, lt_uaddr_port(d.uaddr[0]));
	CHECK(x);
	return x;
}

nfsstat4 lt_layoutcommit(struct nfs41c_session *s, const struct ts_fh *f, uint64_t off,
			 uint64_t len, const stateid4 *sid, int64_t lwo, bool *changed,
			 uint64_t *size)
{
	nfs_argop4 ops[2] = {ts_put(f), ts_op(OP_LAYOUTCOMMIT)};
	LAYOUTCOMMIT4args *a = &ops[1].u.oplayoutcommit;
	a->loca_offset = off;
	a->loca_length = len;
	a->loca_reclaim = false;
	a->loca_stateid = *sid;
	a->loca_last_write_offset.no_newoffset = lwo >= 0;
	a->loca_last_write_offset.u.no_offset = lwo >= 0 ? (uint64_t)lwo : 0;
	a->loca_time_modify.nt_timechanged = false;
	a->loca_layoutupdate.lou_type = LAYOUT4_FLEX_FILES;
	COMPOUND4res res;
	struct xdr_arena ar;
	ts_run(s, ops, 2, &res, &ar);
	nfsstat4 st = ts_st(&res, 1);
	if (!st) {
		const newsize4 *n =
		    &res.resarray.val[2].u.oplayoutcommit.u.locr_resok4.locr_newsize;
		if (changed)
			*changed = n->ns_sizechanged;
		if (size && n->ns_sizechanged)
			*size = n->u.ns_size;
	}
	xdr_arena_release(&ar);
	return st;
}

nfsstat4 lt_layoutreturn(struct nfs41c_session *s, const struct ts_fh *f, layoutiomode4 mode,
			 uint64_t off, uint64_t len, const stateid4 *sid, xdr_opaque body,
			 bool *present, stateid4 *out)
{
	nfs_argop4 ops[2] = {ts_put(f), ts_op(OP_LAYOUTRETURN)};
	LAYOUTRETURN4args *a = &ops[1].u.oplayoutreturn;
	a->lora_reclaim = false;
	a->lora_layout_type = LAYOUT4_FLEX_FILES;
	a->lora_iomode = mode;
	a->lora_layoutreturn.lr_returntype = LAYOUTRETURN4_FILE;
	layoutreturn_file4 *rf = &a->lora_layoutreturn.u.lr_layout;
	rf->lrf_offset = off;
	rf->lrf_length = len;
	rf->lrf_stateid = *sid;
	rf->lrf_body = body;
	COMPOUND4res res;
	struct xdr_arena ar;
	ts_run(s, ops, 2, &res, &ar);
	nfsstat4 st = ts_st(&res, 1);
	if (!st) {
		const layoutreturn_stateid *r =
		    &res.resarray.val[2].u.oplayoutreturn.u.lorr_stateid;
		if (present)
			*present = r->lrs_present;
		if (out && r->lrs_present)
			*out = r->u.lrs_stateid;
	}
	xdr_arena_release(&ar);
	return st;
}

nfsstat4 lt_return_all(struct nfs41c_session *s, const struct ts_fh *f, const stateid4 *sid)
{
	return lt_layoutreturn(s, f, LAYOUTIOMODE4_ANY, 0, NFS4_UINT64_MAX, sid,
			       xdr_opaque_of(NULL, 0), NULL, NULL);
}

int lt_ds_write(struct cds *d, const struct lt_ds *x, uint64_t off, const void *buf, uint32_t len,
		stable_how how, uint32_t uid, uint32_t gid)
{
	WRITE3args a = {.file = dt_fh3(x->fh, x->fhlen),
			.offset = off,
			.count = len,
			.stable = how,
			.data = xdr_opaque_of(buf, len)};
	WRITE3res r;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	int rc = dt_nfs3(d->c, NFSPROC3_WRITE, &a, &r, &ar, uid, gid);
	int st = rc ? -1 : (int)r.status;
	if (!st)
		CHECK_EQ(r.u.resok.count, len);
	xdr_arena_release(&ar);
	return st;
}

int lt_ds_read(struct cds *d, const struct lt_ds *x, uint64_t off, void *buf, uint32_t len,
	       uint32_t uid, uint32_t gid, uint32_t *n)
{
	READ3args a = {.file = dt_fh3(x->fh, x->fhlen), .offset = off, .count = len};
	READ3res r;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 8u << 20);
	int rc = dt_nfs3(d->c, NFSPROC3_READ, &a, &r, &ar, uid, gid);
	int st = rc ? -1 : (int)r.status;
	if (!st) {
		*n = r.u.resok.data.len;
		memcpy(buf, r.u.resok.data.val, *n);
	}
	xdr_arena_release(&ar);
	return st;
}

int lt_ds_commit(struct cds *d, const struct lt_ds *x, uint32_t uid, uint32_t gid)
{
	COMMIT3args a = {.file = dt_fh3(x->fh, x->fhlen), .offset = 0, .count = 0};
	COMMIT3res r;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 16);
	int rc = dt_nfs3(d->c, NFSPROC3_COMMIT, &a, &r, &ar, uid, gid);
	int st = rc ? -1 : (int)r.status;
	xdr_arena_release(&ar);
	return st;
}

nfsstat4 lt_mds_read(struct nfs41c_session *s, const struct ts_fh *f, uint64_t off, uint32_t len,
		     void *buf, uint32_t *n)
{
	struct cfile cf = {.fh = ts_fh4(f)};
	bool eof;
	return cl_do_read(s, &cf, off, len, buf, n, &eof);
}

nfsstat4 lt_mds_write(struct nfs41c_session *s, const struct ts_fh *f, uint64_t off,
		      const void *buf, uint32_t len)
{
	struct cfile cf = {.fh = ts_fh4(f)};
	uint32_t count;
	nfsstat4 st = cl_do_write(s, &cf, off, FILE_SYNC4, buf, len, &count, NULL, NULL);
	if (!st)
		CHECK_EQ(count, len);
	return st;
}

uint64_t lt_ino(struct lt *L, const struct ts_fh *f)
{
	struct mds_fh h;
	CHECK_EQ(mds_fh_parse(L->m.mds, f->b, f->len, &h), 0);
	return h.ino;
}

struct lt_cb lt_cbs;

static int lt_cb_null(struct nfsd_req *r, void *a, void *res)
{
	(void)r, (void)a, (void)res;
	return NFSD_SUCCESS;
}

static int lt_cb_compound(struct nfsd_req *r, void *a, void *resv)
{
	struct lt_cb *cb = &lt_cbs;
	CB_COMPOUND4args *args = a;
	CB_COMPOUND4res *res = resv;
	nfs_cb_resop4 *ro = mt_cb_reply(r, args, res);
	for (uint32_t i = 1; i < args->argarray.len; i++) {
		const nfs_cb_argop4 *op = &args->argarray.val[i];
		ro[i].resop = op->argop;
		res->resarray.len = i + 1;
		if (op->argop == OP_CB_LAYOUTRECALL) {
			pthread_mutex_lock(&cb->mu);
			cb->last = op->u.opcblayoutrecall;
			const nfs_fh4 *fh = &cb->last.clora_recall.u.lor_layout.lor_fh;
			if (cb->last.clora_recall.lor_recalltype == LAYOUTRECALL4_FILE &&
			    fh->len <= NFS4_FHSIZE) {
				memcpy(cb->last_fh, fh->val, fh->len);
				cb->last.clora_recall.u.lor_layout.lor_fh.val = cb->last_fh;
			}
			pthread_mutex_unlock(&cb->mu);
			nfsstat4 st = NFS4_OK;
			if (atomic_load(&cb->mode) == LT_CB_DELAY && atomic_load(&cb->delays) > 0) {
				atomic_fetch_sub(&cb->delays, 1);
				st = NFS4ERR_DELAY;
			} else if (atomic_load(&cb->mode) == LT_CB_NOMATCH) {
				st = NFS4ERR_NOMATCHING_LAYOUT;
			}
			ro[i].u.opcblayoutrecall.clorr_status = st;
			res->status = st;
			atomic_fetch_add(&cb->recalls, 1);
			if (st)
				break;
		} else if (op->argop == OP_CB_NOTIFY_DEVICEID) {
			const CB_NOTIFY_DEVICEID4args *n = &op->u.opcbnotify_deviceid;
			for (uint32_t k = 0; k < n->cnda_changes.len; k++) {
				const notify4 *x = &n->cnda_changes.val[k];
				if (x->notify_mask.len &&
				    x->notify_mask.val[0] == 1u << NOTIFY_DEVICEID4_DELETE) {
					notify_deviceid_delete4 dd;
					struct xdr_dec d;
					xdr_dec_init(&d, x->notify_vals.val, x->notify_vals.len,
						     &r->arena);
					CHECK_EQ(xdr_dec_notify_deviceid_delete4(&d, &dd), 0);
					CHECK_EQ(dd.ndd_layouttype, LAYOUT4_FLEX_FILES);
					pthread_mutex_lock(&cb->mu);
					memcpy(cb->last_deleted, dd.ndd_deviceid,
					       sizeof(deviceid4));
					pthread_mutex_unlock(&cb->mu);
					atomic_fetch_add(&cb->deleted, 1);
				}
			}
			ro[i].u.opcbnotify_deviceid.cndr_status = NFS4_OK;
			atomic_fetch_add(&cb->notifies, 1);
		} else {
			ro[i].u.opcbillegal.status = NFS4ERR_OP_ILLEGAL;
			res->status = NFS4ERR_OP_ILLEGAL;
			break;
		}
	}
	return NFSD_SUCCESS;
}

static struct nfsd_proc lt_cb_procs[2] = {
    {.name = "CB_NULL", .fn = lt_cb_null, .flags = NFSD_PROC_INLINE},
    {.name = "CB_COMPOUND", .fn = lt_cb_compound, .flags = NFSD_PROC_INLINE},
};
static struct nfsd_version lt_cb_vers = {.vers = 1, .procs = lt_cb_procs, .nprocs = 2};
static struct nfsd_program lt_cb_prog = {
    .prog = LT_CBPROG, .name = "cb", .versions = &lt_cb_vers, .nversions = 1};

struct nfs41c_session *lt_session_cb(struct lt *L, const char *owner, struct nfsd_clnt **conn)
{
	static bool bound;
	if (!bound) {
		nfsd_procs_bind(lt_cb_procs, 2, &xdr_desc_NFS4_CALLBACK_NFS_CB);
		pthread_mutex_init(&lt_cbs.mu, NULL);
		bound = true;
	}
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)L->m.port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct nfsd_clnt_opts o = {.timeout_ms = 20000, .backchannel = &lt_cb_prog};
	int err = 0;
	*conn = nfsd_clnt_new(L->m.eng, (struct sockaddr *)&sa, sizeof(sa), &o, &err);
	CHECK(*conn);
	struct nfs41c_session_opts so = {.owner = owner,
					 .create_flags = CREATE_SESSION4_FLAG_CONN_BACK_CHAN,
					 .cb_program = LT_CBPROG};
	struct nfs41c_session *s;
	CHECK_EQ(nfs41c_session_create_opts(*conn, &so, &s), 0);
	nfs41c_session_set_cred(s, 0, 0);
	mt_reclaim_complete(s); /* before any OPEN, as clients do */
	return s;
}

void lt_wait_count(atomic_int *counter, int n, double secs)
{
	double t0 = cl_now();
	while (atomic_load(counter) < n) {
		if (cl_now() - t0 > secs) {
			fprintf(stderr, "waited %.1f s for %d, have %d\n", secs, n,
				atomic_load(counter));
			CHECK(0);
		}
		usleep(10000);
	}
}

void lt_create(struct nfs41c_session *s, const struct ts_fh *dir, const char *name,
	       struct ts_openres *o)
{
	CHECK_EQ(ts_open_name(s, dir, "lt-owner", name, OPEN4_SHARE_ACCESS_BOTH,
			      OPEN4_SHARE_DENY_NONE, true, o),
		 NFS4_OK);
}

void lt_mkdir_in(struct lt *L, const struct ts_fh *parent, const char *name, const char *policy,
		 struct ts_fh *out)
{
	struct mds_store *st = braid_mds_store(L->m.mds);
	uint64_t pino = mds_store_root(st);
	if (parent) {
		struct mds_fh h;
		CHECK_EQ(mds_fh_parse(L->m.mds, parent->b, parent->len, &h), 0);
		pino = h.ino;
	}
	struct mds_create_args ca = {.dir = pino,
				     .name = name,
				     .name_len = strlen(name),
				     .type = MDS_DIR,
				     .how = MDS_CREATE_GUARDED,
				     .mode = 0777};
	struct mds_create_res cr;
	CHECK_EQ(mds_dir_create(st, &ca, &cr), 0);
	if (policy) {
		struct layout_policy p;
		char why[200];
		CHECK_EQ(layout_policy_parse(policy, &p, why, sizeof(why)), 0);
		CHECK_EQ(mds_layout_policy_set(L->m.mds, cr.attr.ino, &p), 0);
	}
	struct cfile cf;
	cl_fh_of(&L->m, cr.attr.ino, cr.attr.generation, &cf);
	memcpy(out->b, cf.fhb, MDS_FH_SIZE);
	out->len = MDS_FH_SIZE;
}

void lt_mkdir_policy(struct lt *L, const char *name, const char *policy, struct ts_fh *out)
{
	lt_mkdir_in(L, NULL, name, policy, out);
}
