/* SPDX-License-Identifier: MIT */
/*
 * pNFS flexible-file layouts (RFC 8435) for the stock Linux client
 * (DESIGN.md "Layouts", research/linux-client-pnfs.md): LAYOUTGET,
 * LAYOUTCOMMIT, LAYOUTRETURN, GETDEVICEINFO, GETDEVICELIST (RFC 8881
 * §18.40-18.44), LAYOUTSTATS and LAYOUTERROR (RFC 7862 §15.6, §15.7); the
 * layout state of each (client, file); recalls (CB_LAYOUTRECALL, §12.5.5),
 * fencing (RFC 8435 §2.2) and device notifications (CB_NOTIFY_DEVICEID).
 *
 * Geometry comes from the file's policy (layout/policy.h) and its maps in
 * the store (mds/data.h, "File objects"): a LAYOUTGET answers exactly one
 * ff_layout4, the grid segment holding loga_offset, never reaching into a
 * neighbour on another data server.  READ and RW layouts of a range name
 * the same objects.  Loosely coupled (§2.2): each data server is told the
 * file's synthetic uid/gid (layout/fence.h), the anonymous stateid and the
 * object's handle once per NFS version it speaks.  logr_return_on_close
 * is false: layouts outlive CLOSE, and go by LAYOUTRETURN, recall, or the
 * client's end.
 *
 * This file fills plain structs (layout/type.h) and calls the layout
 * type's ops, which encode them and decode the bodies clients send
 * (LAYOUT4_FLEX_FILES: layout/flexfiles.c).
 *
 * Devices: one device ID per data server and address list (and versions,
 * layout/devid.h), so an ID never changes its address list: a data server
 * registering other addresses gets a new ID.  The old one is then
 * recalled: layouts naming it are recalled, and clients that asked for
 * notifications get CB_NOTIFY_DEVICEID(DELETE) once none of their layouts
 * name it.
 *
 * Layout stateids (§12.5.3): one per (client, file), "other" = 'L', 3
 * bytes of this instance, 8 bytes of a keyed PRF of a counter; seqid 1 at
 * the first LAYOUTGET, moved by every later LAYOUTGET, by a LAYOUTRETURN
 * that leaves layouts, and by a CB_LAYOUTRECALL (which carries the new
 * value).  A LAYOUTGET presents an open, lock or layout stateid; seqids at
 * or below the current one are accepted (LAYOUTGETs run in parallel), a
 * later one is NFS4ERR_BAD_STATEID.  The state goes when its last range is
 * returned (lrs_present FALSE), at revocation, or with the client.
 *
 * Recall (§12.5.5): of one file (truncation to a smaller size, removal of
 * its last link, braidctl) or of one client (braidctl).  The background
 * thread (layout_state.c) sends CB_LAYOUTRECALL (FILE, iomode ANY,
 * [0, all)), each from a thread of its own so that a client slow to answer
 * holds up no other, and retries NFS4ERR_DELAY, a missing back channel or
 * no answer with a growing back-off; a LAYOUTGET of a file under recall gets
 * NFS4ERR_RECALLCONFLICT.  A client that has not returned within a lease
 * loses the layout (revoked) and, if it held an RW layout, the file is
 * fenced: a new epoch's uid/gid is recorded and set on every data server
 * (ds_ctl_setfence), so its I/O there fails with ACCESS and the next
 * LAYOUTGET carries the new pair.  A client whose lease expires is treated
 * the same way for every file it held RW layouts of.
 *
 * Errors reported by clients (LAYOUTRETURN's ff_ioerr4, LAYOUTERROR) are
 * counted per client and per data server.  A report that a data server is
 * failing (NXIO, IO, SERVERFAULT) steers that client alone for ds_timeout
 * (at least 10 s): its new segments go elsewhere, its READ layouts leave
 * the server out when another mirror holds the data, and where nothing
 * else would do it gets NFS4ERR_LAYOUTUNAVAILABLE (its I/O goes through
 * the MDS, data_io = proxy) or LAYOUTTRYLATER.  Only a second client's
 * report within that time marks the server failing for everybody: one
 * client's network, or a hostile client, never stalls the others.  A
 * report of NOSPC or DQUOT makes that client's RW LAYOUTGETs of segments
 * on the server answer the same status until space is freed there
 * (mds_layout_ds_space_freed: a removal or truncation, or its heartbeat),
 * so the application's write fails at once, as on a local filesystem,
 * instead of retrying a layout that fails again; placement leaves out
 * servers whose heartbeats say lowspace or full (mds/dsreg.c).
 * NFS4ERR_ACCESS from a client holding the current pair fences the file
 * anew (at most once a second), so the next LAYOUTGET answers differently.
 *
 * A directory's policy (mds_layout_policy_set, an export's layout=
 * option) is recorded on it and copied to each regular file OPEN creates
 * below it; a file without one takes [mds] layout when first laid out.
 *
 * State and locking: mds/layout_impl.h.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/fh.h"
#include "layout/devid.h"
#include "ctl/cap.h"
#include "layout/type.h"
#include "mds/data.h"
#include "mds/dsreg.h"
#include "mds/ec.h"
#include "mds/fh.h"
#include "mds/layout.h"
#include "mds/layout_impl.h"
#include "mds/space.h"
#include "mds/state.h"
#include "nfsd/trace.h"

/* ------------------------------------------------------------- policies */

void mds_layout_policy_default(struct braid_mds *mds, struct layout_policy *p)
{
	if (mds->layout)
		*p = mds->layout->dflt;
	else
		layout_policy_default(p);
}

/* [mds] layout, layout_segment_size ... as a policy; -EINVAL and why. */
int lo_settings_policy(const struct mds_settings *set, struct layout_policy *p, char *why,
		       size_t whylen)
{
	layout_policy_default(p);
	p->mode = (uint8_t)(set->layout + 1);
	p->mirrors = (uint8_t)set->layout_mirrors;
	uint64_t seg = set->layout_segment_size, unit = set->layout_stripe_unit;
	switch (p->mode) {
	case LAYOUT_SEGMENTS:
		if (!seg || (seg & (seg - 1))) {
			snprintf(why, whylen, "[mds] layout_segment_size must be a power of two");
			return -EINVAL;
		}
		p->seg_shift = (uint8_t)__builtin_ctzll(seg);
		p->width = (uint8_t)set->layout_width;
		break;
	case LAYOUT_STRIPED:
		if (!unit || (unit & (unit - 1))) {
			snprintf(why, whylen, "[mds] layout_stripe_unit must be a power of two");
			return -EINVAL;
		}
		p->unit_shift = (uint8_t)__builtin_ctzll(unit);
		p->stripes = (uint8_t)set->layout_stripes;
		p->width = (uint8_t)set->layout_width;
		break;
	}
	char w[200];
	if (layout_policy_check(p, w, sizeof(w))) {
		snprintf(why, whylen, "[mds] layout: %s", w);
		return -EINVAL;
	}
	return 0;
}

int mds_layout_policy_set(struct braid_mds *mds, uint64_t dir, const struct layout_policy *p)
{
	struct mds_attr a;
	int rc = mds_inode_getattr(mds->store, dir, &a);
	if (rc)
		return rc;
	if (a.type != MDS_DIR)
		return -ENOTDIR;
	struct mds_layout_args la = {.ino = dir, .seg = MDS_LAYOUT_REC};
	if (!p) {
		rc = mds_layout_remove(mds->store, &la);
		return rc == -ENOENT ? 0 : rc;
	}
	if (layout_policy_check(p, NULL, 0))
		return -EINVAL;
	la.l.flags = layout_policy_encode(p);
	la.l.nds = 1;
	return mds_layout_set(mds->store, &la);
}

int mds_layout_policy_inherited(struct braid_mds *mds, uint64_t dir, struct layout_policy *p)
{
	uint64_t root = mds_store_root(mds->store);
	for (unsigned depth = 0; depth < 4096; depth++) {
		struct mds_layout_seg l;
		int rc = mds_layout_get(mds->store, dir, MDS_LAYOUT_REC, &l);
		if (!rc)
			return layout_policy_decode(l.flags, p) ? -EIO : 0;
		if (rc != -ENOENT || dir == root)
			return rc;
		struct mds_attr a;
		if ((rc = mds_inode_getattr(mds->store, dir, &a)))
			return rc;
		if (a.type != MDS_DIR)
			return -ENOTDIR;
		dir = a.parent;
	}
	return -ELOOP;
}

int mds_layout_exports_apply(struct braid_mds *mds, const struct mds_exports *x, char *msg,
			     size_t msglen)
{
	struct layout_policy *pol = calloc(x->n ? x->n : 1, sizeof(*pol));
	bool *has = calloc(x->n ? x->n : 1, sizeof(*has));
	int rc = pol && has ? 0 : -ENOMEM;
	if (rc)
		snprintf(msg, msglen, "out of memory");
	for (unsigned i = 0; !rc && i < x->n; i++) {
		const struct export_entry *e = x->v[i].e;
		const struct export_client *first = NULL;
		for (unsigned k = 0; !rc && k < e->nclients; k++) {
			const struct export_client *cl = &e->clients[k];
			if (!cl->layout[0])
				continue;
			if (first && strcmp(first->layout, cl->layout)) {
				snprintf(msg, msglen,
					 "%s:%u: layout=%s differs from line %u's layout=%s "
					 "(one policy per export)",
					 mds->set.exports, cl->line, cl->layout, first->line,
					 first->layout);
				rc = -EINVAL;
				break;
			}
			if (first)
				continue;
			first = cl;
			char text[sizeof(cl->layout)], why[200];
			memcpy(text, cl->layout, sizeof(text));
			for (char *p = text; *p; p++)
				*p = *p == ':' ? ',' : *p;
			if (layout_policy_parse(text, &pol[i], why, sizeof(why))) {
				snprintf(msg, msglen, "%s:%u: layout=%s: %s", mds->set.exports,
					 cl->line, cl->layout, why);
				rc = -EINVAL;
			}
			has[i] = true;
		}
	}
	for (unsigned i = 0; !rc && i < x->n; i++) {
		int err;
		if (has[i] && (err = mds_layout_policy_set(mds, x->v[i].root_ino, &pol[i])))
			mds_log("export %s: setting its layout policy: %s", x->v[i].e->path,
				strerror(-err));
	}
	free(pol);
	free(has);
	return rc;
}

int mds_layout_policy_for_create(struct braid_mds *mds, uint64_t dir, struct mds_layout_seg *rec)
{
	struct layout_policy p;
	int rc = mds_layout_policy_inherited(mds, dir, &p);
	if (rc)
		return rc == -ENOENT ? 0 : rc; /* none: the [mds] default applies when laid out */
	memset(rec, 0, sizeof(*rec));
	rec->flags = layout_policy_encode(&p);
	rec->nds = 1; /* fence epoch 0, no set yet */
	return 1;
}

/* ---------------------------------------------------------------- devices */

/* A current device ID: 0, the data server's info and it as a device, or
 * -ENOENT. */
static int dev_lookup(struct braid_mds *mds, const uint8_t id[NFS4_DEVICEID4_SIZE],
		      struct mds_ds_info *info, struct layout_device *dev)
{
	uint32_t ds = layout_devid_ds(id);
	uint8_t cur[NFS4_DEVICEID4_SIZE];
	if (!ds || mds_dsreg_get(mds, ds, info) || !info->registered)
		return -ENOENT;
	mds_dsreg_device(info, dev);
	dev->tight = layout_devid_tight(id);
	layout_devid_make(dev, cur);
	return memcmp(cur, id, NFS4_DEVICEID4_SIZE) ? -ENOENT : 0;
}

/* RFC 8881 §18.40 */
/*
 * A client gets the data servers' addresses of its own transport: one that
 * reached us over RDMA gets their RDMA addresses (netid rdma/rdma6), or
 * TCP where a data server has none; one over TCP never sees an RDMA
 * address (it may have no RDMA device, and would wait on each before
 * falling back).
 */
static void dev_addrs_for_transport(struct layout_device *dev, bool rdma)
{
	unsigned n = 0, have = 0;
	for (unsigned k = 0; k < dev->naddrs; k++)
		have += !strncmp(dev->addrs[k].netid, "rdma", 4) == rdma;
	if (!have)
		rdma = false;
	for (unsigned k = 0; k < dev->naddrs; k++)
		if (!strncmp(dev->addrs[k].netid, "rdma", 4) == rdma)
			dev->addrs[n++] = dev->addrs[k];
	dev->naddrs = n;
}

static nfsstat4 op_getdeviceinfo(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	GETDEVICEINFO4args *a = &arg->u.opgetdeviceinfo;
	GETDEVICEINFO4res *r = &res->u.opgetdeviceinfo;
	struct braid_mds *mds = mds_of(c);
	const struct layout_type_ops *ops = layout_type_find(a->gdia_layout_type);
	if (!ops)
		return NFS4ERR_UNKNOWN_LAYOUTTYPE;
	struct mds_ds_info *info = xdr_arena_alloc(c->arena, sizeof(*info));
	struct layout_device *dev = xdr_arena_alloc(c->arena, sizeof(*dev));
	if (!info || !dev)
		return NFS4ERR_SERVERFAULT;
	if (dev_lookup(mds, a->gdia_device_id, info, dev) || !ops->device_versions(dev))
		return NFS4ERR_NOENT;
	dev_addrs_for_transport(dev, !strcmp(nfsd_conn_xprt_name(c->req->conn), "rdma"));
	xdr_opaque body;
	if (ops->encode_devaddr(dev, c->arena, &body))
		return NFS4ERR_SERVERFAULT;
	/* device_addr4: type, body length, body and its padding */
	uint32_t need = 8 + ((body.len + 3) & ~3u);
	if (a->gdia_maxcount && need > a->gdia_maxcount) {
		r->u.gdir_mincount = need;
		return NFS4ERR_TOOSMALL;
	}
	GETDEVICEINFO4resok *ok = &r->u.gdir_resok4;
	ok->gdir_device_addr.da_layout_type = ops->type;
	/* maxcount 0: the client only renews its notifications */
	ok->gdir_device_addr.da_addr_body = a->gdia_maxcount ? body : xdr_opaque_of(NULL, 0);
	uint32_t want = a->gdia_notify_types.len ? a->gdia_notify_types.val[0] : 0;
	uint32_t grant = want & ops->notify_types;
	ok->gdir_notification.len = 0;
	if (grant) {
		uint32_t *w = xdr_arena_alloc(c->arena, sizeof(*w));
		if (!w)
			return NFS4ERR_SERVERFAULT;
		*w = grant;
		ok->gdir_notification.len = 1;
		ok->gdir_notification.val = w;
		lo_dev_watch(mds->layout, a->gdia_device_id, info->id, c->clientid);
	}
	return NFS4_OK;
}

static uint32_t getdeviceinfo_bound(const nfs_argop4 *arg)
{
	(void)arg;
	return 64 + LAYOUT_BODY_MAX;
}

/* RFC 8881 §18.41: the current devices, by data server id (the cookie). */
static nfsstat4 op_getdevicelist(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	GETDEVICELIST4args *a = &arg->u.opgetdevicelist;
	GETDEVICELIST4resok *ok = &res->u.opgetdevicelist.u.gdlr_resok4;
	struct braid_mds *mds = mds_of(c);
	struct mds_layout *lo = mds->layout;
	nfsstat4 st = mds_cfh(c, NULL, NULL, NULL);
	if (st)
		return st;
	const struct layout_type_ops *ops = layout_type_find(a->gdla_layout_type);
	if (!ops)
		return NFS4ERR_UNKNOWN_LAYOUTTYPE;
	if (!a->gdla_maxdevices)
		return NFS4ERR_INVAL;
	if (a->gdla_cookie && memcmp(a->gdla_cookieverf, lo->verf, NFS4_VERIFIER_SIZE))
		return NFS4ERR_NOT_SAME;
	if (a->gdla_cookie > UINT32_MAX)
		return NFS4ERR_BAD_COOKIE;
	unsigned n = mds_dsreg_list(mds, NULL, 0);
	struct mds_ds_info *v = n ? xdr_arena_alloc(c->arena, n * sizeof(*v)) : NULL;
	if (n && !v)
		return NFS4ERR_SERVERFAULT;
	unsigned listed = mds_dsreg_list(mds, v, n);
	n = listed < n ? listed : n;
	uint32_t max = a->gdla_maxdevices < 1024 ? a->gdla_maxdevices : 1024;
	deviceid4 *ids = xdr_arena_alloc(c->arena, max * sizeof(*ids));
	if (!ids)
		return NFS4ERR_SERVERFAULT;
	uint32_t got = 0;
	uint64_t cookie = a->gdla_cookie;
	bool eof = true;
	struct layout_device dev;
	for (unsigned k = 0; k < n; k++) {
		if (v[k].id <= a->gdla_cookie || !v[k].registered)
			continue;
		mds_dsreg_device(&v[k], &dev);
		if (!ops->device_versions(&dev))
			continue;
		if (got == max) {
			eof = false;
			break;
		}
		layout_devid_make(&dev, ids[got++]);
		cookie = v[k].id;
	}
	ok->gdlr_cookie = cookie;
	memcpy(ok->gdlr_cookieverf, lo->verf, NFS4_VERIFIER_SIZE);
	ok->gdlr_deviceid_list.len = got;
	ok->gdlr_deviceid_list.val = ids;
	ok->gdlr_eof = eof;
	return NFS4_OK;
}

static uint32_t getdevicelist_bound(const nfs_argop4 *arg)
{
	uint32_t max = arg->u.opgetdevicelist.gdla_maxdevices;
	max = max < 1024 ? max : 1024;
	return 64 + max * NFS4_DEVICEID4_SIZE;
}

/* -------------------------------------------------------------- LAYOUTGET */

/*
 * A layout stateid of this client for ino, seqid not ahead of the state
 * (§12.5.3: earlier ones are fine, LAYOUTGETs and returns cross).  With
 * lo->mu held.  NULL with *st = NFS4ERR_BAD_STATEID when it names another
 * client's or file's state or a seqid never handed out; NULL with
 * *st = NFS4_OK when it is no layout stateid of ours at all.
 */
static struct lo_state *sid_check(struct mds_layout *lo, const stateid4 *id, uint64_t clientid,
				  uint64_t ino, nfsstat4 *st)
{
	*st = NFS4_OK;
	struct lo_state *s = lo_sid_lookup(lo, id->other);
	if (!s)
		return NULL;
	if (s->cl->id != clientid || s->f->ino != ino || id->seqid == 0 ||
	    (int32_t)(id->seqid - s->seqid) > 0) {
		*st = NFS4ERR_BAD_STATEID;
		return NULL;
	}
	return s;
}

/* One data server of the segment being laid out. */
struct seg_ds {
	uint32_t id;
	struct mds_ds_info *info; /* arena memory */
	uint8_t dev[NFS4_DEVICEID4_SIZE];
	unsigned nvers; /* versions the layout type names it by */
	bool healthy;	/* up, not avoided, speaks a version we can name */
	bool nogss;	/* a tightly coupled layout cannot name it: no keytab */
	bool stale;	/* its copy misses writes: neither read nor written */
	bool lost;	/* on a data server declared lost */
	bool ec;	/* named by a reconstructing handle (mds/ec.h: degraded READ) */
	bool others;	/* unusable for everybody (down, avoided, no version) */
	nfsstat4 space; /* NOSPC/DQUOT this client was told there, else 0 */
};

/*
 * The layout of one segment: mirrors in the order given (order[0..nm)),
 * each with its stripes' data servers, encoded by the layout type.
 */
static nfsstat4 segment_encode(struct nfs41_compound *c, const struct layout_type_ops *ops,
			       const struct mds_attr *a, const struct mds_file_map *map,
			       const struct seg_ds *sd, const unsigned *order, unsigned nm, bool rw,
			       bool tight, xdr_opaque *out)
{
	struct braid_mds *mds = mds_of(c);
	unsigned S = map->pol.stripes;
	struct layout_mirror *mir = xdr_arena_alloc(c->arena, nm * sizeof(*mir));
	struct layout_dserver *dsv = xdr_arena_alloc(c->arena, nm * S * sizeof(*dsv));
	uint8_t *fh = xdr_arena_alloc(c->arena, DS_FH_SIZE);
	uint8_t *ecfh = xdr_arena_alloc(c->arena, DS_FH_EC_SIZE);
	if (!mir || !dsv || !fh || !ecfh)
		return NFS4ERR_SERVERFAULT;
	struct ds_objid oid;
	mds_data_objid(a, &oid);
	ds_fh_make(&mds->key, &oid, fh);
	ds_fh_make_ec(&mds->key, &oid, a->ino, ecfh);
	/* §2.2: READ layouts get ids the data servers let read, never write.
	 * Tightly coupled (an RPCSEC_GSS client): a capability for the
	 * iomode, made over the RW ids the objects are owned by, in the
	 * stateid, and no ids (ctl/cap.h). */
	uint32_t uid, gid;
	struct layout_stateid sid = {0};
	if (tight) {
		uint32_t ouid, ogid;
		mds_data_fence_epoch(mds, a, map->epoch, &ouid, &ogid);
		sid.seqid = CTL_CAP_SEQID;
		ctl_cap_make(&mds->key.cap, &oid, ouid, ogid, rw ? CTL_CAP_RW : CTL_CAP_READ,
			     sid.other);
		uid = gid = 65534;
	} else if (rw) {
		mds_data_fence_epoch(mds, a, map->epoch, &uid, &gid);
	} else {
		mds_data_fence_read(mds, a, map->epoch, &uid, &gid);
	}
	for (unsigned p = 0; p < nm; p++) {
		mir[p].nds = S;
		mir[p].ds = dsv + p * S;
		for (unsigned s = 0; s < S; s++) {
			const struct seg_ds *d = &sd[order[p] * S + s];
			struct layout_dserver *x = &dsv[p * S + s];
			memcpy(x->devid, d->dev, NFS4_DEVICEID4_SIZE);
			/* the client reads from the most efficient: the order given */
			x->efficiency = nm - p;
			/* §5.1: loosely coupled, the anonymous stateid */
			x->stateid = sid;
			x->fh = d->ec ? ecfh : fh;
			x->fhlen = d->ec ? DS_FH_EC_SIZE : DS_FH_SIZE;
			x->nversions = d->nvers;
			x->uid = uid;
			x->gid = gid;
		}
	}
	struct layout_segment seg = {
	    .stripe_unit = S > 1 ? 1ull << map->pol.unit_shift : 0,
	    .mirrors = mir,
	    .nmirrors = nm,
	    .flags = mds->set.data_io == MDS_DATA_REFUSE ? LAYOUT_FLAG_NO_IO_THRU_MDS : 0,
	};
	return ops->encode_layout(&seg, c->arena, out) ? NFS4ERR_SERVERFAULT : NFS4_OK;
}

/*
 * Data server id as this client's layout would name it, into *d: its
 * device and versions, and whether it can serve (info: a description of
 * it already in the arena, or NULL).
 */
static nfsstat4 seg_ds_fill(struct nfs41_compound *c, const struct layout_type_ops *ops,
			    bool tight, const struct mds_file_map *map, uint64_t now, uint32_t id,
			    struct mds_ds_info *info, struct seg_ds *d)
{
	struct braid_mds *mds = mds_of(c);
	struct mds_layout *lo = mds->layout;
	struct layout_device ld;
	memset(d, 0, sizeof(*d));
	d->id = id;
	d->info = info;
	if (!d->info && !(d->info = xdr_arena_alloc(c->arena, sizeof(*d->info))))
		return NFS4ERR_SERVERFAULT;
	if (mds_dsreg_get(mds, id, d->info))
		return NFS4ERR_LAYOUTUNAVAILABLE; /* a map naming no data server */
	mds_dsreg_device(d->info, &ld);
	if (tight) { /* usable but for Kerberos: this client's problem only */
		d->nogss = ops->device_versions(&ld) > 0;
		ld.tight = true;
	}
	layout_devid_make(&ld, d->dev);
	d->nvers = ops->device_versions(&ld);
	d->nogss = d->nogss && !d->nvers;
	pthread_mutex_lock(&lo->mu);
	bool avoided = lo_ds_avoided(lo, id, now);
	const struct lo_clmark *cm = lo_clmark_find(lo, lo_client_find(lo, c->clientid), id, now);
	bool space = cm && (cm->status == NFS4ERR_NOSPC || cm->status == NFS4ERR_DQUOT);
	if (space)
		d->space = (nfsstat4)cm->status;
	pthread_mutex_unlock(&lo->mu);
	d->others = !d->info->up || avoided || (!d->nvers && !d->nogss);
	d->healthy = !d->others && !d->nogss && (!cm || space);
	d->stale = mds_data_map_stale(map, id);
	d->lost = d->info->lost;
	return NFS4_OK;
}

/* A degraded READ (mds/ec.h): the chunk holders of the stripe, described
 * as they are asked about. */
struct ec_look {
	struct nfs41_compound *c;
	const struct layout_type_ops *ops;
	bool tight;
	const struct mds_file_map *map;
	uint64_t now;
	struct seg_ds d[LAYOUT_EC_K_MAX + LAYOUT_EC_M_MAX];
	unsigned n;
};

static bool ec_look_ok(void *arg, uint32_t id)
{
	struct ec_look *l = arg;
	if (l->n == LAYOUT_EC_K_MAX + LAYOUT_EC_M_MAX)
		return false;
	struct seg_ds *d = &l->d[l->n];
	if (seg_ds_fill(l->c, l->ops, l->tight, l->map, l->now, id, NULL, d))
		return false;
	l->n++;
	return d->healthy && !d->stale;
}

/*
 * Segment n of a sealed erasure-coded file whose own data server cannot
 * serve it: *sd becomes one surviving holder of its stripe, named with a
 * reconstructing handle.  NFS4ERR_IO when too few chunks survive; nonzero
 * *none when the file has no parity to rebuild from (not sealed).
 */
static nfsstat4 ec_degraded(struct nfs41_compound *c, const struct layout_type_ops *ops,
			    bool tight, const struct mds_attr *a, const struct mds_file_map *map,
			    uint64_t n, uint64_t now, struct seg_ds *sd, bool *none)
{
	struct ec_look *l = xdr_arena_alloc(c->arena, sizeof(*l));
	if (!l)
		return NFS4ERR_SERVERFAULT;
	*l = (struct ec_look){.c = c, .ops = ops, .tight = tight, .map = map, .now = now};
	uint32_t id;
	int rc = mds_ec_substitute(mds_of(c), a, map, n, ec_look_ok, l, &id);
	*none = rc == -ENOENT;
	if (rc)
		return rc == -EIO ? NFS4ERR_IO : rc == -ENOENT ? NFS4_OK : NFS4ERR_LAYOUTTRYLATER;
	for (unsigned i = 0; i < l->n; i++)
		if (l->d[i].id == id) {
			*sd = l->d[i];
			sd->ec = true;
			return NFS4_OK;
		}
	return NFS4ERR_SERVERFAULT;
}

/* The data servers clientid's new segments avoid: those marked failing
 * for everybody or by its own error reports (lo_clmark), into v. */
static unsigned avoided_list(struct mds_layout *lo, uint64_t clientid, uint32_t *v, unsigned max)
{
	uint64_t now = nfsd_now_ns();
	unsigned n = 0;
	pthread_mutex_lock(&lo->mu);
	for (unsigned i = 0; i < lo->nmarks && n < max; i++)
		if (lo->marks[i].avoid_until_ns > now)
			v[n++] = lo->marks[i].id;
	struct lo_client *cl = lo_client_find(lo, clientid);
	for (unsigned i = 0; cl && i < LO_CL_MARKS && n < max; i++)
		if (lo_clmark_find(lo, cl, cl->marks[i].ds, now) == &cl->marks[i])
			v[n++] = cl->marks[i].ds;
	pthread_mutex_unlock(&lo->mu);
	return n;
}

static nfsstat4 layout_errno(int rc)
{
	switch (rc) {
	case -EAGAIN:
	case -EBUSY:
	case -ETIMEDOUT:
	case -ECONNREFUSED:
	case -ENOTCONN:
		return NFS4ERR_LAYOUTTRYLATER;
	case -ENOENT:
		return NFS4ERR_STALE;
	case -ENOTSUP:
		return NFS4ERR_LAYOUTUNAVAILABLE;
	default:
		return mds_nfs4_status(rc);
	}
}

static void unpin(struct mds_layout *lo, struct lo_file *f)
{
	pthread_mutex_lock(&lo->mu);
	f->pins--;
	lo_file_put_unused(lo, f);
	pthread_mutex_unlock(&lo->mu);
}

/*
 * A LAYOUTGET for exactly a range this client was granted a moment ago, and
 * still holds: two of its threads asked for one segment at once (Linux 6.1
 * serialises only a file's first LAYOUTGET, and with several LAYOUTGETs out
 * it may process their replies out of order, so the stateid it sends tells
 * nothing).  Granting it again hands the client an identical segment, which
 * it merges with the one it holds; the merge invalidates the older segment,
 * and every write on it not yet committed is sent to the data servers again
 * (ff_lseg_merge, pnfs_generic_layout_insert_lseg).  DELAY instead: the
 * client retries by looking in its layout cache first, where the segment
 * now is.  Only within LO_DUP_WINDOW_NS of that grant: a client that lost
 * the reply, or dropped the segment, gets it again after that.
 */
#define LO_DUP_WINDOW_NS (1000ull * 1000 * 1000)
static bool dup_layoutget(const struct lo_state *mine, layoutiomode4 iomode, uint64_t s0,
			  uint64_t end, uint64_t now)
{
	for (unsigned i = 0; i < LO_RECENT; i++) {
		const struct lo_grant *g = &mine->recent[i];
		if (g->ns && g->iomode == iomode && g->s == s0 && g->e == end &&
		    now - g->ns < LO_DUP_WINDOW_NS)
			return lo_ranges_cover(&mine->held[iomode - 1], s0, end);
	}
	return false;
}

/* RFC 8881 §18.43, RFC 8435 §5: one segment per reply. */
static nfsstat4 op_layoutget(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	LAYOUTGET4args *a = &arg->u.oplayoutget;
	LAYOUTGET4resok *ok = &res->u.oplayoutget.u.logr_resok4;
	struct braid_mds *mds = mds_of(c);
	struct mds_layout *lo = mds->layout;
	struct mds_fh fh;
	struct mds_attr at;
	nfsstat4 st = mds_cfh(c, &fh, &at, NULL);
	if (st || (st = mds_reg_file(&at)))
		return st;
	const struct layout_type_ops *ops = layout_type_find(a->loga_layout_type);
	if (!ops)
		return NFS4ERR_UNKNOWN_LAYOUTTYPE;
	if (a->loga_iomode != LAYOUTIOMODE4_READ && a->loga_iomode != LAYOUTIOMODE4_RW)
		return NFS4ERR_BADIOMODE;
	if (!a->loga_length || a->loga_length < a->loga_minlength ||
	    (a->loga_length != NFS4_UINT64_MAX && a->loga_offset > UINT64_MAX - a->loga_length))
		return NFS4ERR_INVAL;
	if (a->loga_offset >= MDS_FILE_MAX)
		return NFS4ERR_BADLAYOUT; /* no data server stores bytes there */
	/* §18.43.3: new layouts are not handed out in the grace period */
	if (mds_state_in_grace(mds))
		return NFS4ERR_GRACE;
	bool rw = a->loga_iomode == LAYOUTIOMODE4_RW;
	/* a Kerberos client sends its data with its own credential: tightly
	 * coupled devices and capabilities (layout/fence.h) */
	bool tight = c->req->cred.flavor == NFSD_RPCSEC_GSS;
	stateid4 sid = a->loga_stateid;
	if ((st = nfs41_compound_stateid(c, &sid)))
		return st;
	if (mds_sid_special(&sid))
		return NFS4ERR_BAD_STATEID;
	pthread_mutex_lock(&lo->mu);
	struct lo_state *ls = sid_check(lo, &sid, c->clientid, at.ino, &st);
	pthread_mutex_unlock(&lo->mu);
	if (st)
		return st;
	/* an open, lock or (unused here) delegation stateid of this file */
	if (!ls && (st = mds_state_check_io(c, &sid, at.ino, rw)))
		return st;
	/*
	 * The LAYOUTGET Linux puts in the OPEN of a file it creates (or opens
	 * for writing) asks for [0, ALL) before there is any byte to write.
	 * A file with no byte and no placement yet is placed when a write
	 * first needs it: its data servers, objects and write mark would cost
	 * the create three durable steps and a data-server round trip, and an
	 * empty file (`: > f`, lock and marker files) would hold objects for
	 * nothing.  LAYOUTTRYLATER there only drops the OPEN's layout
	 * (pnfs_parse_lgopen); the first write sends its own LAYOUTGET.
	 */
	if (rw && !at.size && nfs41_compound_ran_op(c, OP_OPEN)) {
		struct mds_file_map m0;
		if (!mds_data_map(mds, at.ino, &m0) && !m0.laid_out) {
			pthread_mutex_lock(&lo->mu);
			lo->lgopen_deferred++;
			pthread_mutex_unlock(&lo->mu);
			return NFS4ERR_LAYOUTTRYLATER;
		}
	}

	pthread_mutex_lock(&lo->mu);
	struct lo_file *f = lo_file_get(lo, at.ino);
	if (!f) {
		pthread_mutex_unlock(&lo->mu);
		return NFS4ERR_SERVERFAULT;
	}
	struct lo_state *mine = lo_state_of(f, c->clientid);
	st = f->recall || (mine && mine->recalling) ? NFS4ERR_RECALLCONFLICT
	     : f->fencing || (rw && f->resilver)    ? NFS4ERR_LAYOUTTRYLATER
						    : NFS4_OK;
	if (st) {
		lo_file_put_unused(lo, f);
		pthread_mutex_unlock(&lo->mu);
		return st;
	}
	f->pins++;
	uint64_t gen0 = f->gen;
	bool pending = rw && f->wpending;
	pthread_mutex_unlock(&lo->mu);

	/*
	 * Durably marked before an RW layout leaves: after a crash, the size
	 * is reconciled from the data servers (mds_data_size_reconcile).  A
	 * file marked when the MDS started is reconciled before it is laid
	 * out for writing again, here if the thread has not yet.
	 */
	int rc = 0;
	if (pending) {
		if (mds_data_size_reconcile(mds, at.ino)) {
			unpin(lo, f);
			return NFS4ERR_LAYOUTTRYLATER; /* a data server of it is not up */
		}
		pthread_mutex_lock(&lo->mu);
		f->wpending = false;
		pthread_mutex_unlock(&lo->mu);
	}
	/* the mark is submitted now and waited for once the segment is
	 * placed: one commit usually carries both */
	struct lo_wmark_wait ww = {.started = false};
	if (rw)
		lo_wmark_begin(lo, f, &ww);
	/* the segment holding loga_offset, laid out if need be */
	struct mds_file_map map;
	struct mds_layout_seg seg;
	uint32_t avoid[64];
	unsigned navoid = avoided_list(lo, c->clientid, avoid, 64);
	rc = mds_data_map(mds, at.ino, &map);
	/* an erasure-coded file is unsealed before an RW layout of it leaves
	 * (mds/ec.h): its parity is stale from the first byte the client
	 * writes to the data servers, which the MDS never sees */
	if (!rc && rw)
		rc = mds_ec_write_begin(mds, at.ino, &map.pol);
	uint64_t n = 0, s0 = 0, len = 0;
	nfsstat4 early = NFS4_OK;
	if (!rc) {
		n = layout_seg_index(&map.pol, a->loga_offset);
		layout_seg_bounds(&map.pol, n, &s0, &len);
		/* §18.43.3: at least minlength from the offset, or nothing */
		if (len != LAYOUT_ALL && a->loga_minlength > s0 + len - a->loga_offset)
			early = NFS4ERR_BADLAYOUT;
		else
			rc = mds_data_segment(mds, &at, n, true, avoid, navoid, &map, &seg);
	}
	int mrc = lo_wmark_end(lo, f, &ww);
	if (!rc && !early)
		rc = mrc;
	if (rc || early) {
		unpin(lo, f);
		return rc ? layout_errno(rc) : early;
	}
	unsigned S = map.pol.stripes, W = layout_seg_width(&map.pol);
	unsigned M = seg.nds / S < map.pol.mirrors ? seg.nds / S : map.pol.mirrors;
	struct seg_ds *sd = xdr_arena_alloc(c->arena, W * sizeof(*sd));
	if (!M || !sd) {
		unpin(lo, f);
		return M ? NFS4ERR_SERVERFAULT : NFS4ERR_LAYOUTUNAVAILABLE;
	}
	uint64_t now = nfsd_now_ns();
	nfsstat4 space_st = NFS4_OK; /* this client was told NOSPC/DQUOT there */
	bool own_only = true;	     /* what keeps mirrors out is this client's marks */
	for (unsigned j = 0; j < M * S; j++) {
		struct mds_ds_info *known = NULL;
		for (unsigned k = 0; k < j && !known; k++)
			if (sd[k].id == seg.ds[j])
				known = sd[k].info;
		if ((st = seg_ds_fill(c, ops, tight, &map, now, seg.ds[j], known, &sd[j]))) {
			unpin(lo, f);
			return st;
		}
		if (sd[j].space && !space_st)
			space_st = sd[j].space;
		own_only = own_only && (!sd[j].others || sd[j].stale);
	}
	/* a write that needs a server this client was just told is out of
	 * space fails at once, as a local filesystem's would, instead of
	 * handing out the layout that fails again (cleared when space is
	 * freed there: mds_layout_ds_space_freed) */
	if (rw && space_st) {
		unpin(lo, f);
		return space_st;
	}
	/*
	 * The mirrors to name: current (not stale) and healthy.  READ leaves
	 * out the others.  RW must write every current mirror (RFC 8435
	 * §8.1): a current one that cannot be written is marked stale first,
	 * durably, and the file's layouts recalled (they may name it), so the
	 * grant goes out degraded and nobody reads that copy until a resilver
	 * brings it up to date.  A stale mirror is never named.
	 */
	unsigned order[LAYOUT_MIRRORS_MAX], nm = 0, nbad = 0;
	uint32_t lost[LAYOUT_MIRRORS_MAX * LAYOUT_STRIPES_MAX];
	unsigned nlost = 0, nnogss = 0;
	uint32_t nogss_ds = 0;
	bool gone = true; /* every current mirror has a copy on a server lost for good */
	for (unsigned m = 0; m < M; m++) {
		bool cur = true, good = true, on_lost = false, nogss = false;
		for (unsigned s = 0; s < S; s++) {
			cur = cur && !sd[m * S + s].stale;
			good = good && sd[m * S + s].healthy;
			on_lost = on_lost || sd[m * S + s].lost;
			if (sd[m * S + s].nogss) {
				nogss = true;
				nogss_ds = sd[m * S + s].id;
			}
		}
		if (cur && !on_lost)
			gone = false;
		if (cur && nogss) {
			/* a Kerberos client cannot reach this copy: never a
			 * reason to mark it stale */
			nnogss++;
		} else if (cur && good) {
			order[nm++] = m;
		} else if (cur) {
			nbad++;
			for (unsigned s = 0; s < S; s++)
				if (!sd[m * S + s].healthy)
					lost[nlost++] = sd[m * S + s].id;
		}
	}
	/* only this client fails to use servers the others use: it does its
	 * I/O through the MDS (RFC 8881 §12.2.9) where the MDS proxies (and
	 * writes every mirror); otherwise degraded, or it waits */
	bool via_mds = own_only && mds->set.data_io == MDS_DATA_PROXY;
	/* a Kerberos client and a copy it must write, or the only copies it
	 * could read, on data servers without a keytab: no layout (its I/O
	 * goes through the MDS where it proxies, else fails), said once */
	if (nnogss && (rw || !nm)) {
		static atomic_bool said;
		if (!atomic_exchange(&said, true))
			mds_log("data server %u takes no RPCSEC_GSS (no [ds] keytab): Kerberos "
				"clients get no layouts that name it%s",
				nogss_ds,
				mds->set.data_io == MDS_DATA_PROXY
				    ? " and do their I/O through the MDS"
				    : ", and with data_io = refuse cannot read or write such files");
		unpin(lo, f);
		return NFS4ERR_LAYOUTUNAVAILABLE;
	}
	/* a sealed erasure-coded file's chunk on a server that cannot serve
	 * it: read through a surviving holder of its stripe, which rebuilds
	 * the bytes (mds/ec.h) */
	bool ec_none = true;
	if (!rw && !nm && layout_is_ec(&map.pol)) {
		if ((st = ec_degraded(c, ops, tight, &at, &map, n, now, &sd[0], &ec_none))) {
			unpin(lo, f);
			return st;
		}
		if (!ec_none) {
			order[0] = 0;
			nm = 1;
		}
	}
	if (!nm && gone) {
		/* no copy of this segment survives (mds/resilver.h: unrecoverable):
		 * an error, never zeros, and never a wait for ever */
		unpin(lo, f);
		return NFS4ERR_IO;
	}
	if (!nm || (rw && nbad && via_mds)) {
		unpin(lo, f);
		return via_mds ? NFS4ERR_LAYOUTUNAVAILABLE : NFS4ERR_LAYOUTTRYLATER;
	}
	if (rw && nbad) {
		bool newly;
		rc = mds_data_stale_mark(mds, at.ino, lost, nlost, &newly);
		if (rc) {
			unpin(lo, f);
			return layout_errno(rc);
		}
		/* a recall bumps f->gen: the grant below then answers
		 * RECALLCONFLICT, and the client asks again once they are in */
		if (newly)
			mds_layout_recall_file(mds, at.ino);
	}
	xdr_opaque body;
	if ((st = segment_encode(c, ops, &at, &map, sd, order, nm, rw, tight, &body))) {
		unpin(lo, f);
		return st;
	}
	/* LAYOUTGET4resok: return_on_close, stateid, one layout4 */
	uint32_t need = 4 + 16 + 4 + 8 + 8 + 4 + 4 + 4 + ((body.len + 3) & ~3u);
	if (need > a->loga_maxcount) {
		unpin(lo, f);
		return NFS4ERR_TOOSMALL;
	}

	/* grant, unless a recall or fence began meanwhile */
	pthread_mutex_lock(&lo->mu);
	f->pins--;
	mine = lo_state_of(f, c->clientid);
	if (f->gen != gen0 || f->recall || f->fencing || (rw && f->resilver) ||
	    (mine && mine->recalling)) {
		st = f->fencing || (rw && f->resilver) ? NFS4ERR_LAYOUTTRYLATER
						       : NFS4ERR_RECALLCONFLICT;
		lo_file_put_unused(lo, f);
		pthread_mutex_unlock(&lo->mu);
		return st;
	}
	uint64_t end = len == LAYOUT_ALL ? UINT64_MAX : s0 + len;
	if (mine && dup_layoutget(mine, a->loga_iomode, s0, end, now)) {
		mine->cl->ctr.dup_delayed++;
		lo->dup_delayed++;
		lo_file_put_unused(lo, f);
		pthread_mutex_unlock(&lo->mu);
		return NFS4ERR_DELAY;
	}
	struct lo_client *cl = lo_client_get(lo, c->clientid);
	bool fresh = !mine;
	if (cl && !mine)
		mine = lo_state_new(lo, cl, f);
	if (!mine || lo_ranges_add(&mine->held[a->loga_iomode - 1], s0, end)) {
		if (mine && fresh && !lo_state_holds(mine))
			lo_state_free(lo, mine);
		lo_file_put_unused(lo, f);
		pthread_mutex_unlock(&lo->mu);
		return NFS4ERR_SERVERFAULT;
	}
	if (!fresh)
		lo_state_bump(mine);
	mine->recent[mine->recent_next++ % LO_RECENT] =
	    (struct lo_grant){.s = s0, .e = end, .ns = now, .iomode = a->loga_iomode};
	mine->export_id = fh.export_id;
	mine->igen = at.generation;
	if (rw) {
		mine->rw_lo = !mine->had_rw || s0 < mine->rw_lo ? s0 : mine->rw_lo;
		mine->rw_hi = !mine->had_rw || end > mine->rw_hi ? end : mine->rw_hi;
		mine->had_rw = true;
	}
	for (unsigned p = 0; p < nm; p++)
		for (unsigned s = 0; s < S; s++) {
			const struct seg_ds *x = &sd[order[p] * S + s];
			lo_state_note_ds(mine, x->id);
			/* watched for address changes (the thread), asked or not */
			lo_dev_get(lo, x->dev, x->id);
		}
	cl->ctr.layoutgets++;
	for (unsigned p = 0; p < nm; p++) {
		struct lo_dsmark *mk = lo_mark_get(lo, sd[order[p] * S].id);
		if (mk)
			mk->ctr.layoutgets++;
	}
	lo_sid_out(mine, &ok->logr_stateid);
	pthread_mutex_unlock(&lo->mu);
	if (rw) /* the race rule (mds/ec.h): a grant during a seal counts */
		mds_ec_write_note(mds, at.ino, &map.pol);

	layout4 *l = xdr_arena_alloc(c->arena, sizeof(*l));
	if (!l)
		return NFS4ERR_SERVERFAULT;
	l->lo_offset = s0;
	l->lo_length = len == LAYOUT_ALL ? NFS4_UINT64_MAX : len;
	l->lo_iomode = a->loga_iomode;
	l->lo_content.loc_type = ops->type;
	l->lo_content.loc_body = body;
	/* layouts outlive CLOSE (DESIGN.md: a return costs every segment) */
	ok->logr_return_on_close = false;
	ok->logr_layout.len = 1;
	ok->logr_layout.val = l;
	nfs41_compound_set_stateid(c, &ok->logr_stateid);
	/* its write delegation goes: a holder writing through layouts may
	 * send a LAYOUTCOMMIT after its own truncation (mds/deleg.c) */
	if (rw)
		mds_deleg_layout_rw(mds, at.ino, c->clientid);
	BRAID_TRACE(layout__grant, at.ino, c->clientid, (uint32_t)a->loga_iomode, s0, l->lo_length,
		    nm);
	return NFS4_OK;
}

static uint32_t layoutget_bound(const nfs_argop4 *arg)
{
	(void)arg;
	return 96 + LAYOUT_BODY_MAX;
}

/* ----------------------------------------------------------- LAYOUTCOMMIT */

/*
 * RFC 8881 §18.42 (RFC 8435 §5.1: no layoutupdate body): the size moves
 * to the last byte written + 1 if that is past it, mtime and change from
 * our clock, durably before the reply.  The range must be one this
 * layout stateid was granted RW (else NFS4ERR_BADLAYOUT); what the client
 * returned since still counts (it commits before returning).
 */
static nfsstat4 op_layoutcommit(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	LAYOUTCOMMIT4args *a = &arg->u.oplayoutcommit;
	LAYOUTCOMMIT4resok *ok = &res->u.oplayoutcommit.u.locr_resok4;
	struct braid_mds *mds = mds_of(c);
	struct mds_layout *lo = mds->layout;
	struct mds_fh fh;
	struct mds_attr at;
	struct mds_cred cred;
	nfsstat4 st = mds_cfh(c, &fh, &at, &cred);
	if (st || (st = mds_reg_file(&at)))
		return st;
	if (!layout_type_find(a->loca_layoutupdate.lou_type))
		return NFS4ERR_UNKNOWN_LAYOUTTYPE;
	bool newoff = a->loca_last_write_offset.no_newoffset;
	uint64_t lwo = a->loca_last_write_offset.u.no_offset;
	/* Length 0 without a new offset names no range: Linux sends it (offset
	 * 0) to commit the times only while it knows no last write (UNSTABLE
	 * writes not yet committed); RFC 5661 errata 3067/3068 deprecate the
	 * range.  Only the layout stateid is checked then. */
	bool norange = !a->loca_length && !newoff;
	if ((!a->loca_length && newoff) ||
	    (a->loca_length != NFS4_UINT64_MAX && a->loca_offset > UINT64_MAX - a->loca_length))
		return NFS4ERR_INVAL;
	uint64_t end =
	    a->loca_length == NFS4_UINT64_MAX ? UINT64_MAX : a->loca_offset + a->loca_length;
	if (newoff && (lwo < a->loca_offset || lwo >= end || lwo >= MDS_FILE_MAX))
		return NFS4ERR_INVAL;
	if (!cred.rw || cred.pseudo)
		return NFS4ERR_ROFS;
	bool grace = mds_state_in_grace(mds), shrunk = false;
	if (a->loca_reclaim) {
		/* §18.42.3: a layout of the previous instance, in its grace */
		if (!grace)
			return NFS4ERR_NO_GRACE;
	} else {
		if (grace)
			return NFS4ERR_GRACE;
		stateid4 sid = a->loca_stateid;
		if ((st = nfs41_compound_stateid(c, &sid)))
			return st;
		pthread_mutex_lock(&lo->mu);
		struct lo_state *ls = sid_check(lo, &sid, c->clientid, at.ino, &st);
		if (!st && !ls)
			st = NFS4ERR_BAD_STATEID; /* §18.42.3: a layout stateid */
		else if (!st && (!ls->had_rw ||
				 (!norange && (a->loca_offset >= ls->rw_hi || end <= ls->rw_lo))))
			st = NFS4ERR_BADLAYOUT;
		else if (!st)
			shrunk = ls->shrunk;
		pthread_mutex_unlock(&lo->mu);
		if (st)
			return st;
	}
	struct mds_setattr_args sa = {.ino = at.ino, .mask = MDS_SET_MTIME_NOW};
	if (newoff) {
		sa.mask |= MDS_SET_SIZE_MAX;
		sa.size = lwo + 1;
	}
	/*
	 * The file was cut since this layout was granted, and the report
	 * would extend it: the write it reports may be one the cut undid (a
	 * client that let its LAYOUTCOMMIT go after its own truncation, as
	 * Linux does holding a write delegation).  The objects say what is
	 * there: the size goes no further than their end.  A data server that
	 * cannot say leaves the client's word.
	 */
	uint64_t oend;
	if (shrunk && newoff && sa.size > at.size && !mds_data_objects_end(mds, &at, &oend) &&
	    oend < sa.size) {
		mds_log("inode %llu: LAYOUTCOMMIT to %llu after a truncation, objects end at %llu",
			(unsigned long long)at.ino, (unsigned long long)sa.size,
			(unsigned long long)oend);
		sa.size = oend;
	}
	/*
	 * Outside a reclaim the client holds an RW layout, so the file's write
	 * mark is durable and stays until every layout is back (its clearing
	 * is a durable step after this one): a crash that undid this change
	 * leaves the mark, and the restart reconciles size and mtime from the
	 * data servers.  So it returns once applied, one fdatasync sooner.
	 */
	struct mds_setattr_res sr;
	int rc = a->loca_reclaim ? mds_inode_setattr(mds->store, &sa, &sr)
				 : mds_inode_setattr_applied(mds->store, &sa, &sr);
	if (rc)
		return mds_nfs4_status(rc);
	mds_space_note(mds, at.ino); /* what the client wrote is on its data servers */
	ok->locr_newsize.ns_sizechanged = newoff && sr.attr.size != sr.old_size;
	if (ok->locr_newsize.ns_sizechanged)
		ok->locr_newsize.u.ns_size = sr.attr.size;
	return NFS4_OK;
}

/* ------------------------------------------------- error and stats reports */

/* Device errors that say the data server itself is in trouble. */
static bool status_steers(nfsstat4 s)
{
	switch (s) {
	case NFS4ERR_NXIO:
	case NFS4ERR_IO:
	case NFS4ERR_SERVERFAULT:
	case NFS4ERR_NOSPC:
	case NFS4ERR_DQUOT:
		return true;
	default:
		return false;
	}
}

/*
 * One device error of a client about ino: counted for the client and
 * the data server; steering and refencing as the top of this file says.
 * With lo->mu held.
 */
static void report_error(struct mds_layout *lo, struct lo_client *cl, uint64_t ino,
			 const struct layout_ioerr *e, uint64_t now)
{
	nfsstat4 status = (nfsstat4)e->status;
	uint32_t ds = layout_devid_ds(e->devid);
	struct lo_dsmark *mk = ds ? lo_mark_get(lo, ds) : NULL;
	uint64_t clid = cl ? cl->id : 0;
	if (cl) {
		cl->ctr.ioerrors++;
		cl->ctr.ioerr_access += status == NFS4ERR_ACCESS;
	}
	if (mk) {
		mk->ctr.ioerrors++;
		mk->ctr.ioerr_access += status == NFS4ERR_ACCESS;
	}
	bool space = status == NFS4ERR_NOSPC || status == NFS4ERR_DQUOT;
	if (mk && cl && status_steers(status) && lo_clmark_set(lo, cl, ds, status, now))
		mds_log("client %016llx reports error %d from data server %u (inode %llu): %s",
			(unsigned long long)clid, (int)status, ds, (unsigned long long)ino,
			space ? "its writes there fail with it until space is freed there"
			      : "its new layouts avoid that server");
	/* one client alone never takes a server away from the others (it may
	 * be the one at fault: its network, or a hostile client); a second
	 * client's report within steer_ns does.  Space is the data server's
	 * own word (HEARTBEAT's lowspace and full) */
	if (mk && status_steers(status) && !space) {
		if (mk->reporter && mk->reporter != clid && now - mk->report_ns < lo->steer_ns) {
			if (mk->avoid_until_ns <= now)
				mds_log("data server %u: clients %016llx and %016llx report "
					"errors: new layouts avoid it for %llu s",
					ds, (unsigned long long)mk->reporter,
					(unsigned long long)clid,
					(unsigned long long)(lo->steer_ns / 1000000000ull));
			mk->avoid_until_ns = now + lo->steer_ns;
		}
		mk->reporter = clid;
		mk->report_ns = now;
	}
	if (status == NFS4ERR_ACCESS && ino) {
		struct lo_file *f = lo_file_get(lo, ino);
		if (f && now - f->refence_ns >= LO_REFENCE_GAP * 1000000ull) {
			f->refence_ns = now;
			lo_fence_queue(lo, ino, false, now);
		}
		if (f)
			lo_file_put_unused(lo, f);
	}
}

/*
 * Data servers a client reported NFS4ERR_STALE from, for one file: its
 * object there is missing, and is made again once lo->mu is dropped
 * (mds_data_object_reported_missing), so that the stock client's next
 * LAYOUTGET and resent write find it.
 */
#define STALE_MAX 8
struct stale_reports {
	uint32_t ds[STALE_MAX];
	unsigned n;
};

static void stale_note(struct stale_reports *sr, uint64_t ino, const struct layout_ioerr *e)
{
	uint32_t ds = layout_devid_ds(e->devid);
	if (!ino || !ds || e->status != NFS4ERR_STALE || sr->n == STALE_MAX)
		return;
	for (unsigned i = 0; i < sr->n; i++)
		if (sr->ds[i] == ds)
			return;
	sr->ds[sr->n++] = ds;
}

static void stale_repair(struct braid_mds *mds, uint64_t ino, const struct stale_reports *sr)
{
	for (unsigned i = 0; i < sr->n; i++) {
		int rc = mds_data_object_reported_missing(mds, ino, sr->ds[i]);
		if (rc && rc != -EIO && rc != -EINVAL && rc != -ESTALE)
			mds_log("inode %llu: its object on data server %u, reported missing, "
				"could not be made again: %s",
				(unsigned long long)ino, sr->ds[i], strerror(-rc));
	}
}

static void report_io(struct mds_layout *lo, struct lo_client *cl, const struct layout_iostat *io)
{
	uint32_t ds = layout_devid_ds(io->devid);
	struct lo_dsmark *mk = ds ? lo_mark_get(lo, ds) : NULL;
	struct mds_layout_counters *v[2] = {cl ? &cl->ctr : NULL, mk ? &mk->ctr : NULL};
	for (int i = 0; i < 2; i++)
		if (v[i]) {
			v[i]->read_ops += io->read_count;
			v[i]->read_bytes += io->read_bytes;
			v[i]->write_ops += io->write_count;
			v[i]->write_bytes += io->write_bytes;
		}
}

/* RFC 7862 §15.6 */
static nfsstat4 op_layouterror(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	LAYOUTERROR4args *a = &arg->u.oplayouterror;
	struct mds_layout *lo = mds_of(c)->layout;
	struct mds_attr at;
	(void)res;
	nfsstat4 st = mds_cfh(c, NULL, &at, NULL);
	if (st || (st = mds_reg_file(&at)))
		return st;
	if (a->lea_length != NFS4_UINT64_MAX && a->lea_offset > UINT64_MAX - a->lea_length)
		return NFS4ERR_INVAL;
	stateid4 sid = a->lea_stateid;
	if ((st = nfs41_compound_stateid(c, &sid)))
		return st;
	for (uint32_t i = 0; i < a->lea_errors.len; i++)
		if (a->lea_errors.val[i].de_status == NFS4_OK)
			return NFS4ERR_INVAL; /* §15.6.3: errors, not successes */
	uint64_t now = nfsd_now_ns();
	struct stale_reports sr = {.n = 0};
	pthread_mutex_lock(&lo->mu);
	struct lo_state *ls = sid_check(lo, &sid, c->clientid, at.ino, &st);
	if (!st && !ls)
		st = NFS4ERR_BAD_STATEID;
	for (uint32_t i = 0; !st && i < a->lea_errors.len; i++) {
		const device_error4 *de = &a->lea_errors.val[i];
		struct layout_ioerr e = {.status = (uint32_t)de->de_status,
					 .opnum = (uint32_t)de->de_opnum};
		memcpy(e.devid, de->de_deviceid, NFS4_DEVICEID4_SIZE);
		report_error(lo, ls->cl, at.ino, &e, now);
		stale_note(&sr, at.ino, &e);
	}
	pthread_mutex_unlock(&lo->mu);
	if (!st)
		stale_repair(mds_of(c), at.ino, &sr);
	return st;
}

/* RFC 7862 §15.7; the body is the layout type's (flexfiles: an
 * ff_layoutupdate4, RFC 8435 §9.2.2). */
static nfsstat4 op_layoutstats(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	LAYOUTSTATS4args *a = &arg->u.oplayoutstats;
	struct mds_layout *lo = mds_of(c)->layout;
	struct mds_attr at;
	(void)res;
	nfsstat4 st = mds_cfh(c, NULL, &at, NULL);
	if (st || (st = mds_reg_file(&at)))
		return st;
	const struct layout_type_ops *ops = layout_type_find(a->lsa_layoutupdate.lou_type);
	if (!ops)
		return NFS4ERR_UNKNOWN_LAYOUTTYPE;
	if (a->lsa_length != NFS4_UINT64_MAX && a->lsa_offset > UINT64_MAX - a->lsa_length)
		return NFS4ERR_INVAL;
	if (a->lsa_layoutupdate.lou_body.len &&
	    ops->decode_update(a->lsa_layoutupdate.lou_body, c->arena))
		return NFS4ERR_BADXDR;
	stateid4 sid = a->lsa_stateid;
	if ((st = nfs41_compound_stateid(c, &sid)))
		return st;
	pthread_mutex_lock(&lo->mu);
	struct lo_state *ls = sid_check(lo, &sid, c->clientid, at.ino, &st);
	if (!st && !ls)
		st = NFS4ERR_BAD_STATEID;
	if (!st) {
		struct layout_iostat io = {.read_count = a->lsa_read.ii_count,
					   .read_bytes = a->lsa_read.ii_bytes,
					   .write_count = a->lsa_write.ii_count,
					   .write_bytes = a->lsa_write.ii_bytes};
		memcpy(io.devid, a->lsa_deviceid, NFS4_DEVICEID4_SIZE);
		report_io(lo, ls->cl, &io);
	}
	pthread_mutex_unlock(&lo->mu);
	return st;
}

/* ----------------------------------------------------------- LAYOUTRETURN */

/* The layout type's body (flexfiles: ff_layoutreturn4, RFC 8435 §9.3):
 * counted, and errors acted on. */
static nfsstat4 return_body(struct nfs41_compound *c, const struct layout_type_ops *ops,
			    const xdr_opaque *body, uint64_t ino)
{
	if (!body->len)
		return NFS4_OK;
	struct mds_layout *lo = mds_of(c)->layout;
	struct layout_report r;
	int rc = ops->decode_return(*body, c->arena, &r);
	if (rc)
		return rc == -EBADMSG ? NFS4ERR_BADXDR : NFS4ERR_SERVERFAULT;
	uint64_t now = nfsd_now_ns();
	struct stale_reports sr = {.n = 0};
	pthread_mutex_lock(&lo->mu);
	struct lo_client *cl = lo_client_get(lo, c->clientid);
	for (unsigned i = 0; i < r.nerrors; i++) {
		report_error(lo, cl, ino, &r.errors[i], now);
		stale_note(&sr, ino, &r.errors[i]);
	}
	for (unsigned i = 0; i < r.nstats; i++)
		report_io(lo, cl, &r.stats[i]);
	pthread_mutex_unlock(&lo->mu);
	stale_repair(mds_of(c), ino, &sr);
	return NFS4_OK;
}

/* Drops every layout of cl (LAYOUTRETURN4_FSID and _ALL: one fsid here). */
static void return_all_locked(struct mds_layout *lo, struct lo_client *cl, layoutiomode4 mode)
{
	struct lo_state *next;
	for (struct lo_state *s = cl->states; s; s = next) {
		next = s->cnext;
		if (mode == LAYOUTIOMODE4_ANY) {
			s->held[0].n = s->held[1].n = 0;
		} else {
			s->held[mode - 1].n = 0;
		}
		if (!lo_state_holds(s)) {
			struct lo_file *f = s->f;
			lo_state_free(lo, s);
			lo_file_settle(lo, f);
		}
	}
}

/* RFC 8881 §18.44 */
static nfsstat4 op_layoutreturn(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	LAYOUTRETURN4args *a = &arg->u.oplayoutreturn;
	layoutreturn_stateid *out = &res->u.oplayoutreturn.u.lorr_stateid;
	struct braid_mds *mds = mds_of(c);
	struct mds_layout *lo = mds->layout;
	const layoutreturn4 *lr = &a->lora_layoutreturn;
	const struct layout_type_ops *ops = layout_type_find(a->lora_layout_type);
	if (!ops)
		return NFS4ERR_UNKNOWN_LAYOUTTYPE;
	if (a->lora_iomode != LAYOUTIOMODE4_READ && a->lora_iomode != LAYOUTIOMODE4_RW &&
	    a->lora_iomode != LAYOUTIOMODE4_ANY)
		return NFS4ERR_BADIOMODE;
	if (lr->lr_returntype != LAYOUTRETURN4_FILE && lr->lr_returntype != LAYOUTRETURN4_FSID &&
	    lr->lr_returntype != LAYOUTRETURN4_ALL)
		return NFS4ERR_INVAL;
	out->lrs_present = false;
	struct mds_attr at;
	nfsstat4 st;
	if (lr->lr_returntype != LAYOUTRETURN4_ALL) {
		/* FILE and FSID name the current filehandle (§18.44.3) */
		if ((st = mds_cfh(c, NULL, &at, NULL)))
			return st;
		if (lr->lr_returntype == LAYOUTRETURN4_FILE && (st = mds_reg_file(&at)))
			return st;
	}
	/* §18.44.3: a reclaim returns what the previous instance granted,
	 * which holds nothing now */
	if (a->lora_reclaim)
		return mds_state_in_grace(mds) ? NFS4_OK : NFS4ERR_NO_GRACE;
	if (lr->lr_returntype != LAYOUTRETURN4_FILE) {
		pthread_mutex_lock(&lo->mu);
		struct lo_client *cl = lo_client_find(lo, c->clientid);
		if (cl) {
			cl->ctr.layoutreturns++;
			return_all_locked(lo, cl, a->lora_iomode);
		}
		pthread_mutex_unlock(&lo->mu);
		BRAID_TRACE(layout__return, 0, c->clientid, (uint32_t)a->lora_iomode, 0,
			    NFS4_UINT64_MAX, (uint32_t)lr->lr_returntype);
		return NFS4_OK;
	}
	const layoutreturn_file4 *rf = &lr->u.lr_layout;
	if (!rf->lrf_length ||
	    (rf->lrf_length != NFS4_UINT64_MAX && rf->lrf_offset > UINT64_MAX - rf->lrf_length))
		return NFS4ERR_INVAL;
	uint64_t end =
	    rf->lrf_length == NFS4_UINT64_MAX ? UINT64_MAX : rf->lrf_offset + rf->lrf_length;
	stateid4 sid = rf->lrf_stateid;
	if ((st = nfs41_compound_stateid(c, &sid)))
		return st;
	pthread_mutex_lock(&lo->mu);
	struct lo_state *ls = sid_check(lo, &sid, c->clientid, at.ino, &st);
	if (!st && !ls)
		st = NFS4ERR_BAD_STATEID;
	pthread_mutex_unlock(&lo->mu);
	if (st)
		return st;
	/* the report first: a malformed body returns nothing */
	if ((st = return_body(c, ops, &rf->lrf_body, at.ino)))
		return st;
	pthread_mutex_lock(&lo->mu);
	/* looked up again: the thread may have revoked it meanwhile */
	if (!(ls = sid_check(lo, &sid, c->clientid, at.ino, &st))) {
		pthread_mutex_unlock(&lo->mu);
		return st ? st : NFS4ERR_BAD_STATEID;
	}
	int rc = 0;
	for (int m = 0; m < 2 && !rc; m++)
		if (a->lora_iomode == LAYOUTIOMODE4_ANY || a->lora_iomode == m + 1)
			rc = lo_ranges_sub(&ls->held[m], rf->lrf_offset, end);
	if (ls->had_rw && a->lora_iomode != LAYOUTIOMODE4_READ)
		mds_space_note(mds, at.ino); /* writes through it are done */
	ls->cl->ctr.layoutreturns++;
	if (rc) {
		pthread_mutex_unlock(&lo->mu);
		return NFS4ERR_SERVERFAULT;
	}
	if (lo_state_holds(ls)) {
		/* some layouts remain: the stateid lives on, one seqid later */
		lo_state_bump(ls);
		out->lrs_present = true;
		lo_sid_out(ls, &out->u.lrs_stateid);
	} else {
		struct lo_file *f = ls->f;
		lo_state_free(lo, ls);
		lo_file_settle(lo, f);
	}
	pthread_mutex_unlock(&lo->mu);
	if (out->lrs_present)
		nfs41_compound_set_stateid(c, &out->u.lrs_stateid);
	BRAID_TRACE(layout__return, at.ino, c->clientid, (uint32_t)a->lora_iomode, rf->lrf_offset,
		    rf->lrf_length, (uint32_t)LAYOUTRETURN4_FILE);
	return NFS4_OK;
}

/* ----------------------------------------------------------------- ops */

static uint32_t small_bound(const nfs_argop4 *arg)
{
	(void)arg;
	return 64;
}

const struct mds_opdef mds_ops_layout[] = {
    {OP_LAYOUTGET, {.fn = op_layoutget, .flags = NFS41_OP_NEEDS_FH, .res_bound = layoutget_bound}},
    {OP_LAYOUTCOMMIT,
     {.fn = op_layoutcommit, .flags = NFS41_OP_NEEDS_FH, .res_bound = small_bound}},
    {OP_LAYOUTRETURN, {.fn = op_layoutreturn, .res_bound = small_bound}},
    {OP_GETDEVICEINFO, {.fn = op_getdeviceinfo, .res_bound = getdeviceinfo_bound}},
    {OP_GETDEVICELIST,
     {.fn = op_getdevicelist, .flags = NFS41_OP_NEEDS_FH, .res_bound = getdevicelist_bound}},
    {OP_LAYOUTERROR, {.fn = op_layouterror, .flags = NFS41_OP_NEEDS_FH, .res_bound = small_bound}},
    {OP_LAYOUTSTATS, {.fn = op_layoutstats, .flags = NFS41_OP_NEEDS_FH, .res_bound = small_bound}},
    {0},
};
