/* SPDX-License-Identifier: MIT */
/*
 * ffclient's pNFS side (RFC 8881 chapter 12, RFC 8435): the back channel
 * (CB_LAYOUTRECALL, CB_RECALL_ANY, CB_NOTIFY_DEVICEID), devices
 * (GETDEVICEINFO, connections, NFSv4.1 data-server sessions), layout
 * segments (LAYOUTGET, LAYOUTRETURN with ff_ioerr4), and the write side's
 * COMMITs and LAYOUTCOMMIT.  Locks: ffclient_impl.h.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/ffclient_impl.h"

/* ---------------------------------------------------------- back channel */

struct ffc_inode *ffc_ino_get(struct ffc_inode *f)
{
	atomic_fetch_add(&f->ref, 1);
	return f;
}

static void seg_free(struct seg *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < s->nmirrors; i++)
		free(s->m[i].ds);
	free(s->m);
	free(s);
}

void ffc_ino_put(struct ffc_inode *f)
{
	if (atomic_fetch_sub(&f->ref, 1) != 1)
		return;
	for (unsigned i = 0; i < f->nsegs; i++)
		seg_free(f->segs[i]);
	free(f->segs);
	free(f->dirty);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

static struct ffc_dev *dev_find_locked(struct ffc *c, const uint8_t *id)
{
	for (unsigned i = 0; i < c->ndevs; i++)
		if (!memcmp(c->devs[i]->id, id, NFS4_DEVICEID4_SIZE))
			return c->devs[i];
	return NULL;
}

/* CB_LAYOUTRECALL (RFC 8881 §20.3): mark matching files; the service thread
 * (or the file's own next call) flushes and returns after the I/O in
 * progress.  NFS4ERR_NOMATCHING_LAYOUT when we hold none that match. */
static nfsstat4 cb_layoutrecall(struct ffc *c, const CB_LAYOUTRECALL4args *a)
{
	if (a->clora_type != LAYOUT4_FLEX_FILES)
		return NFS4ERR_NOMATCHING_LAYOUT;
	int bits = a->clora_iomode == LAYOUTIOMODE4_READ ? 1
		   : a->clora_iomode == LAYOUTIOMODE4_RW ? 2
							 : 3;
	const layoutrecall4 *r = &a->clora_recall;
	bool any = false;
	atomic_fetch_add(&c->layoutrecall, 1);
	pthread_mutex_lock(&c->mu);
	for (struct ffc_inode *f = c->inodes; f; f = f->next) {
		if (!atomic_load(&f->has_layout))
			continue;
		if (r->lor_recalltype == LAYOUTRECALL4_FILE) {
			if (!xdr_opaque_eq(r->u.lor_layout.lor_fh, xdr_opaque_of(f->fh, f->fhlen)))
				continue;
			/* §12.5.5.2.1: the recall moved the layout stateid on */
			f->recall_sid = r->u.lor_layout.lor_stateid;
			f->have_recall_sid = true;
		}
		atomic_fetch_or(&f->recall, bits);
		any = true;
	}
	if (any)
		pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	return any ? NFS4_OK : NFS4ERR_NOMATCHING_LAYOUT;
}

/* CB_NOTIFY_DEVICEID (RFC 8881 §20.12): the device is refreshed at next use. */
static nfsstat4 cb_notify_deviceid(struct ffc *c, const CB_NOTIFY_DEVICEID4args *a,
				   struct xdr_arena *ar)
{
	for (uint32_t i = 0; i < a->cnda_changes.len; i++) {
		const notify4 *n = &a->cnda_changes.val[i];
		struct xdr_dec d;
		xdr_dec_init(&d, n->notify_vals.val, n->notify_vals.len, ar);
		for (uint32_t w = 0; w < n->notify_mask.len; w++) {
			for (unsigned b = 0; b < 32; b++) {
				if (!(n->notify_mask.val[w] & (1u << b)))
					continue;
				unsigned type = w * 32 + b;
				deviceid4 id;
				if (type == NOTIFY_DEVICEID4_CHANGE) {
					notify_deviceid_change4 ch;
					if (xdr_dec_notify_deviceid_change4(&d, &ch))
						return NFS4ERR_BADXDR;
					memcpy(id, ch.ndc_deviceid, sizeof(id));
				} else if (type == NOTIFY_DEVICEID4_DELETE) {
					notify_deviceid_delete4 dl;
					if (xdr_dec_notify_deviceid_delete4(&d, &dl))
						return NFS4ERR_BADXDR;
					memcpy(id, dl.ndd_deviceid, sizeof(id));
				} else {
					return NFS4ERR_INVAL;
				}
				pthread_mutex_lock(&c->devlist_mu);
				struct ffc_dev *dv = dev_find_locked(c, id);
				if (dv)
					atomic_store(&dv->stale, true);
				pthread_mutex_unlock(&c->devlist_mu);
			}
		}
	}
	return NFS4_OK;
}

static int cb_null(struct nfsd_req *r, void *a, void *res)
{
	(void)r;
	(void)a;
	(void)res;
	return NFSD_SUCCESS;
}

/* CB_COMPOUND (RFC 8881 §20.2): CB_SEQUENCE first, on slot 0 of the one we
 * offered; then the ops, stopping at the first that fails. */
static int cb_compound(struct nfsd_req *r, void *av, void *resv)
{
	struct ffc *c = r->priv;
	CB_COMPOUND4args *a = av;
	CB_COMPOUND4res *res = resv;
	memset(res, 0, sizeof(*res));
	res->tag = a->tag;
	if (a->minorversion != 1 && a->minorversion != 2) {
		res->status = NFS4ERR_MINOR_VERS_MISMATCH;
		return NFSD_SUCCESS;
	}
	uint32_t n = a->argarray.len;
	nfs_cb_resop4 *ro = n ? xdr_arena_alloc(&r->arena, n * sizeof(*ro)) : NULL;
	if (n && !ro)
		return NFSD_SYSTEM_ERR;
	res->resarray.val = ro;
	nfsstat4 st = NFS4_OK;
	for (uint32_t i = 0; i < n && st == NFS4_OK; i++) {
		const nfs_cb_argop4 *op = &a->argarray.val[i];
		nfs_cb_resop4 *o = &ro[i];
		memset(o, 0, sizeof(*o));
		o->resop = op->argop;
		res->resarray.len = i + 1;
		if (i == 0 && op->argop != OP_CB_SEQUENCE) {
			st = NFS4ERR_OP_NOT_IN_SESSION;
		} else if (i > 0 && op->argop == OP_CB_SEQUENCE) {
			st = NFS4ERR_SEQUENCE_POS;
		} else {
			switch (op->argop) {
			case OP_CB_SEQUENCE: {
				const CB_SEQUENCE4args *sa = &op->u.opcbsequence;
				if (memcmp(sa->csa_sessionid, c->info.sessionid,
					   NFS4_SESSIONID_SIZE))
					st = NFS4ERR_BADSESSION;
				else if (sa->csa_slotid != 0)
					st = NFS4ERR_BADSLOT;
				else if (sa->csa_sequenceid != c->cb_seqid + 1 &&
					 sa->csa_sequenceid != c->cb_seqid)
					st = NFS4ERR_SEQ_MISORDERED;
				if (st == NFS4_OK) {
					/* a replay re-runs: our callback ops are idempotent */
					c->cb_seqid = sa->csa_sequenceid;
					CB_SEQUENCE4resok *ok = &o->u.opcbsequence.u.csr_resok4;
					memcpy(ok->csr_sessionid, sa->csa_sessionid,
					       NFS4_SESSIONID_SIZE);
					ok->csr_sequenceid = sa->csa_sequenceid;
				}
				break;
			}
			case OP_CB_LAYOUTRECALL:
				st = cb_layoutrecall(c, &op->u.opcblayoutrecall);
				break;
			case OP_CB_RECALL_ANY:
				/* we hold layouts only of open files, and Linux
				 * keeps those too (§20.6: a best effort) */
				st = NFS4_OK;
				break;
			case OP_CB_NOTIFY_DEVICEID:
				st = cb_notify_deviceid(c, &op->u.opcbnotify_deviceid, &r->arena);
				break;
			case OP_CB_RECALL:
				st = NFS4ERR_BAD_STATEID; /* we return delegations at once */
				break;
			case OP_CB_GETATTR:
				st = NFS4ERR_BADHANDLE;
				break;
			default:
				if (op->argop >= OP_CB_GETATTR && op->argop <= OP_CB_OFFLOAD) {
					st = NFS4ERR_NOTSUPP;
				} else { /* §20.1: answered as CB_ILLEGAL */
					o->resop = OP_CB_ILLEGAL;
					st = NFS4ERR_OP_ILLEGAL;
				}
				break;
			}
		}
		o->u.opcbillegal.status = st;
	}
	res->status = st;
	return NFSD_SUCCESS;
}

static struct nfsd_proc cb_procs[2] = {
    {.name = "CB_NULL", .fn = cb_null, .flags = NFSD_PROC_INLINE},
    {.name = "CB_COMPOUND", .fn = cb_compound, .flags = NFSD_PROC_INLINE},
};
static struct nfsd_version cb_vers = {.vers = 1, .procs = cb_procs, .nprocs = 2};
static pthread_once_t cb_once = PTHREAD_ONCE_INIT;

static void cb_bind(void)
{
	nfsd_procs_bind(cb_procs, 2, &xdr_desc_NFS4_CALLBACK_NFS_CB);
}

void ffc_cb_program(struct ffc *c, struct nfsd_program *p)
{
	pthread_once(&cb_once, cb_bind);
	*p = (struct nfsd_program){.prog = FFC_CB_PROG,
				   .name = "nfs4_cb",
				   .versions = &cb_vers,
				   .nversions = 1,
				   .priv = c};
}

/* --------------------------------------------------------------- devices */

/* "h1.h2.h3.h4.p1.p2" (tcp) or "v6addr.p1.p2" (tcp6), RFC 5665 §5.2.3. */
static int uaddr_parse(const netaddr4 *na, struct sockaddr_storage *ss, socklen_t *len)
{
	char netid[16], ua[128];
	if (na->na_r_netid.len >= sizeof(netid) || na->na_r_addr.len >= sizeof(ua))
		return -EINVAL;
	memcpy(netid, na->na_r_netid.val, na->na_r_netid.len);
	netid[na->na_r_netid.len] = 0;
	memcpy(ua, na->na_r_addr.val, na->na_r_addr.len);
	ua[na->na_r_addr.len] = 0;
	bool v6 = !strcmp(netid, "tcp6");
	if (!v6 && strcmp(netid, "tcp"))
		return -EAFNOSUPPORT;
	char *p2 = strrchr(ua, '.');
	if (!p2)
		return -EINVAL;
	*p2++ = 0;
	char *p1 = strrchr(ua, '.');
	if (!p1)
		return -EINVAL;
	*p1++ = 0;
	char *e1, *e2;
	unsigned long hi = strtoul(p1, &e1, 10), lo = strtoul(p2, &e2, 10);
	if (*e1 || *e2 || e1 == p1 || e2 == p2 || hi > 255 || lo > 255)
		return -EINVAL;
	uint16_t port = (uint16_t)(hi << 8 | lo);
	memset(ss, 0, sizeof(*ss));
	if (v6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		if (inet_pton(AF_INET6, ua, &s6->sin6_addr) != 1)
			return -EINVAL;
		*len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		if (inet_pton(AF_INET, ua, &s4->sin_addr) != 1)
			return -EINVAL;
		*len = sizeof(*s4);
	}
	return 0;
}

void ffc_dev_retire(struct ffc *c, struct ffc_dev *d)
{
	pthread_mutex_lock(&d->smu);
	struct ffc_dssess *sess = d->sess;
	d->sess = NULL;
	pthread_mutex_unlock(&d->smu);
	if (!d->nclnt && !sess)
		return;
	struct grave *g = calloc(1, sizeof(*g));
	if (g) {
		memcpy(g->clnt, d->clnt, sizeof(g->clnt));
		g->nclnt = d->nclnt;
		g->sess = sess;
		pthread_mutex_lock(&c->mu);
		g->next = c->graves;
		c->graves = g;
		pthread_mutex_unlock(&c->mu);
	} /* else: leaked rather than freed under a user (out of memory) */
	memset(d->clnt, 0, sizeof(d->clnt));
	d->nclnt = 0;
}

/*
 * GETDEVICEINFO (RFC 8881 §18.40) and connect (dev_mu held): the first
 * version of ffda_versions we speak (the server lists its preferred first,
 * and Linux uses only that one), then the first address that connects
 * (extra NFSv3 addresses are connect-time failover, as on Linux).
 */
static int dev_resolve_locked(struct ffc *c, struct ffc_dev *d)
{
	uint32_t notify[1] = {1u << NOTIFY_DEVICEID4_CHANGE | 1u << NOTIFY_DEVICEID4_DELETE};
	uint32_t maxcount = FFC_GDI_MAXCOUNT;
	struct xdr_arena ar;
	ffc_arena_new(&ar);
	int rc = 0;
	COMPOUND4res res;
	GETDEVICEINFO4resok *ok = NULL;
	for (int tries = 0; tries < 2; tries++) {
		nfs_argop4 op = {.argop = OP_GETDEVICEINFO};
		GETDEVICEINFO4args *ga = &op.u.opgetdeviceinfo;
		memcpy(ga->gdia_device_id, d->id, NFS4_DEVICEID4_SIZE);
		ga->gdia_layout_type = LAYOUT4_FLEX_FILES;
		ga->gdia_maxcount = maxcount;
		ga->gdia_notify_types = (bitmap4){.len = 1, .val = notify};
		atomic_fetch_add(&c->getdeviceinfo, 1);
		if ((rc = ffc_mds_call(c, &op, 1, &res, &ar)))
			goto out;
		nfs_resop4 *o = ffc_resop(&res, 0, OP_GETDEVICEINFO);
		nfsstat4 st = ffc_opstatus(&res, 0, OP_GETDEVICEINFO);
		if (st == NFS4ERR_TOOSMALL && o &&
		    o->u.opgetdeviceinfo.u.gdir_mincount > maxcount &&
		    o->u.opgetdeviceinfo.u.gdir_mincount <= (1u << 20)) {
			maxcount = o->u.opgetdeviceinfo.u.gdir_mincount;
			continue;
		}
		if (st) {
			rc = ffc_nfs4_errno(st);
			goto out;
		}
		ok = &o->u.opgetdeviceinfo.u.gdir_resok4;
		break;
	}
	if (!ok || ok->gdir_device_addr.da_layout_type != LAYOUT4_FLEX_FILES) {
		rc = -EPROTO;
		goto out;
	}
	ff_device_addr4 da;
	struct xdr_dec dd;
	xdr_dec_init(&dd, ok->gdir_device_addr.da_addr_body.val,
		     ok->gdir_device_addr.da_addr_body.len, &ar);
	if (xdr_dec_ff_device_addr4(&dd, &da) || xdr_dec_left(&dd)) {
		rc = -EPROTO;
		goto out;
	}
	const ff_device_versions4 *v = NULL;
	for (int pass = c->o.ds_version ? 0 : 1; pass < 2 && !v; pass++) {
		for (uint32_t i = 0; i < da.ffda_versions.len && !v; i++) {
			const ff_device_versions4 *x = &da.ffda_versions.val[i];
			if (((x->ffdv_version == 3 && x->ffdv_minorversion == 0) ||
			     (x->ffdv_version == 4 &&
			      (x->ffdv_minorversion == 1 || x->ffdv_minorversion == 2))) &&
			    (pass || x->ffdv_version == c->o.ds_version))
				v = x;
		}
	}
	if (!v) {
		rc = -EPROTONOSUPPORT;
		goto out;
	}
	/* Linux's nfs_io_size(): under 1024 is 4 KiB, above 1 MiB is 1 MiB */
	uint32_t rs = v->ffdv_rsize < 1024	   ? 4096
		      : v->ffdv_rsize > FFC_IO_MAX ? FFC_IO_MAX
						   : v->ffdv_rsize;
	uint32_t ws = v->ffdv_wsize < 1024	   ? 4096
		      : v->ffdv_wsize > FFC_IO_MAX ? FFC_IO_MAX
						   : v->ffdv_wsize;

	rc = -EHOSTUNREACH;
	for (uint32_t l = 0; l < da.ffda_netaddrs.len && rc; l++) {
		const netaddr4 *na = &da.ffda_netaddrs.val[l];
		struct sockaddr_storage ss;
		socklen_t sl;
		if (uaddr_parse(na, &ss, &sl))
			continue;
		char addr[80];
		snprintf(addr, sizeof(addr), "%.*s %.*s", (int)na->na_r_netid.len,
			 (const char *)na->na_r_netid.val, (int)na->na_r_addr.len,
			 (const char *)na->na_r_addr.val);
		if (atomic_load(&d->ready) && !strcmp(addr, d->addr) &&
		    d->vers == v->ffdv_version && d->minor == v->ffdv_minorversion) {
			rc = 0; /* unchanged: keep the connections */
			break;
		}
		unsigned want = v->ffdv_version == 3 ? (c->o.nconnect ? c->o.nconnect : 1) : 1;
		if (want > FFC_NCONN_MAX)
			want = FFC_NCONN_MAX;
		struct nfsd_clnt *cl[FFC_NCONN_MAX] = {0};
		struct nfsd_clnt_opts co = {.timeout_ms = c->o.ds_timeout_ms, .reconnect = true};
		int err = 0;
		unsigned k;
		for (k = 0; k < want; k++) {
			cl[k] = nfsd_clnt_new(c->eng, (struct sockaddr *)&ss, sl, &co, &err);
			if (!cl[k])
				break;
		}
		if (k < want) {
			for (unsigned j = 0; j < k; j++)
				nfsd_clnt_free(cl[j]);
			rc = err ? err : -EHOSTUNREACH;
			continue;
		}
		ffc_dev_retire(c, d);
		memcpy(d->clnt, cl, sizeof(cl));
		d->nclnt = want;
		snprintf(d->addr, sizeof(d->addr), "%s", addr);
		rc = 0;
	}
	if (!rc) {
		d->vers = v->ffdv_version;
		d->minor = v->ffdv_minorversion;
		d->rsize = rs;
		d->wsize = ws;
		d->tight = v->ffdv_tightly_coupled;
	}
out:
	xdr_arena_release(&ar);
	return rc;
}

/* The device of ref, resolved and connected; NULL when unusable now. */
struct ffc_dev *ffc_dev_get(struct ffc *c, const uint8_t *id)
{
	pthread_mutex_lock(&c->devlist_mu);
	struct ffc_dev *d = dev_find_locked(c, id);
	if (!d) {
		if (c->ndevs == c->capdevs) {
			unsigned cap = c->capdevs ? c->capdevs * 2 : 16;
			struct ffc_dev **nd = realloc(c->devs, cap * sizeof(*nd));
			if (!nd) {
				pthread_mutex_unlock(&c->devlist_mu);
				return NULL;
			}
			c->devs = nd;
			c->capdevs = cap;
		}
		d = calloc(1, sizeof(*d));
		if (!d) {
			pthread_mutex_unlock(&c->devlist_mu);
			return NULL;
		}
		memcpy(d->id, id, NFS4_DEVICEID4_SIZE);
		pthread_mutex_init(&d->smu, NULL);
		c->devs[c->ndevs++] = d;
	}
	pthread_mutex_unlock(&c->devlist_mu);
	if (atomic_load(&d->unavail_until) > ffc_now_ms())
		return NULL;
	if (atomic_load(&d->ready) && !atomic_load(&d->stale))
		return d;
	pthread_mutex_lock(&c->dev_mu);
	if (!atomic_load(&d->ready) || atomic_load(&d->stale)) {
		if (d->err && ffc_now_ms() < d->retry_at) {
			pthread_mutex_unlock(&c->dev_mu);
			return NULL;
		}
		atomic_store(&d->stale, false);
		d->err = dev_resolve_locked(c, d);
		if (d->err) {
			d->retry_at = ffc_now_ms() + 5000;
			atomic_store(&d->ready, false);
		} else {
			atomic_store(&d->ready, true);
		}
	}
	pthread_mutex_unlock(&c->dev_mu);
	return atomic_load(&d->ready) ? d : NULL;
}

/* The NFSv4.1 data-server session of d for uid/gid (RFC 8881 §13.6): the
 * reply must carry EXCHGID4_FLAG_USE_PNFS_DS (Linux refuses it otherwise). */
struct nfs41c_session *ffc_dev_session(struct ffc *c, struct ffc_dev *d, uint32_t uid, uint32_t gid,
				       int *err)
{
	pthread_mutex_lock(&d->smu);
	struct ffc_dssess *s;
	for (s = d->sess; s; s = s->next)
		if (s->uid == uid && s->gid == gid)
			break;
	if (!s) {
		char owner[200];
		char hex[33];
		for (int i = 0; i < 16; i++)
			snprintf(hex + 2 * i, 3, "%02x", d->id[i]);
		snprintf(owner, sizeof(owner), "%s/ds-%s/%u:%u", c->owner, hex, uid, gid);
		struct nfs41c_session_opts so = {.owner = owner,
						 .exchgid_flags = EXCHGID4_FLAG_USE_PNFS_DS};
		struct nfs41c_session *ns = NULL;
		struct nfsd_clnt *cl = d->clnt[0];
		int rc = cl ? nfs41c_session_create_opts(cl, &so, &ns) : -EIO;
		if (rc) {
			*err = rc > 0 ? -EIO : rc;
		} else {
			struct nfs41c_session_info info;
			nfs41c_session_info(ns, &info);
			if (!(info.exchgid_flags & EXCHGID4_FLAG_USE_PNFS_DS)) {
				nfs41c_session_destroy(ns);
				*err = -ENODEV;
			} else if (!(s = calloc(1, sizeof(*s)))) {
				nfs41c_session_destroy(ns);
				*err = -ENOMEM;
			} else {
				nfs41c_session_set_cred(ns, uid, gid);
				s->uid = uid;
				s->gid = gid;
				s->sess = ns;
				s->next = d->sess;
				d->sess = s;
			}
		}
	}
	pthread_mutex_unlock(&d->smu);
	return s ? s->sess : NULL;
}

/* ---------------------------------------------------------------- layouts */

int ffc_iomode_idx(int iomode)
{
	return iomode == LAYOUTIOMODE4_RW ? 1 : 0;
}

void ffc_ioerr_add(struct ffc_inode *f, uint64_t off, uint64_t len, const uint8_t *devid,
		   nfsstat4 st, nfs_opnum4 op)
{
	/* merge with one for the same device, status and op (Linux does) */
	for (unsigned i = 0; i < f->nerrs; i++) {
		struct ioerr *e = &f->errs[i];
		if (e->status == st && e->op == op &&
		    !memcmp(e->devid, devid, NFS4_DEVICEID4_SIZE)) {
			uint64_t end = off + len > e->off + e->len ? off + len : e->off + e->len;
			e->off = off < e->off ? off : e->off;
			e->len = end - e->off;
			return;
		}
	}
	if (f->nerrs == FFC_IOERR_MAX)
		return;
	struct ioerr *e = &f->errs[f->nerrs++];
	e->off = off;
	e->len = len;
	memcpy(e->devid, devid, NFS4_DEVICEID4_SIZE);
	e->status = st;
	e->op = op;
}

static void segs_drop(struct ffc_inode *f, int iomode)
{
	unsigned k = 0;
	for (unsigned i = 0; i < f->nsegs; i++) {
		if (iomode == LAYOUTIOMODE4_ANY || f->segs[i]->iomode == iomode)
			seg_free(f->segs[i]);
		else
			f->segs[k++] = f->segs[i];
	}
	f->nsegs = k;
	atomic_store(&f->has_layout, f->lo_valid && k > 0);
}

/* The first segment containing off (RFC 8881 §12.2.9): RW for writes;
 * READ or RW for reads. */
struct seg *ffc_seg_find(struct ffc_inode *f, uint64_t off, bool write)
{
	for (unsigned i = 0; i < f->nsegs; i++) {
		struct seg *s = f->segs[i];
		if (off < s->off || off >= s->end)
			continue;
		if (write && s->iomode != LAYOUTIOMODE4_RW)
			continue;
		return s;
	}
	return NULL;
}

/* Numeric owner strings only (RFC 8435 §5.1; Linux rejects the layout). */
static int owner_parse(xdr_opaque s, uint32_t *id)
{
	if (!s.len || s.len > 10)
		return -EINVAL;
	uint64_t v = 0;
	for (uint32_t i = 0; i < s.len; i++) {
		if (s.val[i] < '0' || s.val[i] > '9')
			return -EINVAL;
		v = v * 10 + (s.val[i] - '0');
	}
	if (v > UINT32_MAX)
		return -EINVAL;
	*id = (uint32_t)v;
	return 0;
}

/* One layout4 of a LAYOUTGET reply into a segment; -EPROTO when it is not
 * one we can use. */
static int seg_parse(const layout4 *lo, struct xdr_arena *ar, struct seg **out)
{
	if (lo->lo_content.loc_type != LAYOUT4_FLEX_FILES || !lo->lo_length ||
	    (lo->lo_iomode != LAYOUTIOMODE4_READ && lo->lo_iomode != LAYOUTIOMODE4_RW))
		return -EPROTO;
	if (lo->lo_length != NFS4_UINT64_MAX && lo->lo_offset + lo->lo_length < lo->lo_offset)
		return -EPROTO;
	ff_layout4 fl;
	struct xdr_dec d;
	xdr_dec_init(&d, lo->lo_content.loc_body.val, lo->lo_content.loc_body.len, ar);
	if (xdr_dec_ff_layout4(&d, &fl) || xdr_dec_left(&d))
		return -EPROTO;
	if (!fl.ffl_mirrors.len || fl.ffl_mirrors.len > FFC_MIRRORS_MAX)
		return -EPROTO;
	struct seg *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->off = lo->lo_offset;
	s->end = lo->lo_length == NFS4_UINT64_MAX ? UINT64_MAX : lo->lo_offset + lo->lo_length;
	s->iomode = lo->lo_iomode;
	s->flags = fl.ffl_flags;
	s->stripe_unit = fl.ffl_stripe_unit;
	s->m = calloc(fl.ffl_mirrors.len, sizeof(*s->m));
	if (!s->m) {
		free(s);
		return -ENOMEM;
	}
	s->nmirrors = fl.ffl_mirrors.len;
	int rc = 0;
	uint32_t width = fl.ffl_mirrors.val[0].ffm_data_servers.len;
	for (uint32_t i = 0; i < fl.ffl_mirrors.len && !rc; i++) {
		const ff_mirror4 *m = &fl.ffl_mirrors.val[i];
		/* every mirror striped alike (RFC 8435 §6); a stripe unit when striped */
		if (!m->ffm_data_servers.len || m->ffm_data_servers.len != width ||
		    (width > 1 && !fl.ffl_stripe_unit)) {
			rc = -EPROTO;
			break;
		}
		s->m[i].ds = calloc(width, sizeof(struct dsref));
		if (!s->m[i].ds) {
			rc = -ENOMEM;
			break;
		}
		s->m[i].nds = width;
		for (uint32_t k = 0; k < width && !rc; k++) {
			const ff_data_server4 *ds = &m->ffm_data_servers.val[k];
			struct dsref *t = &s->m[i].ds[k];
			/* only ffds_fh_vers[0] is used, as Linux */
			if (!ds->ffds_fh_vers.len || !ds->ffds_fh_vers.val[0].len ||
			    ds->ffds_fh_vers.val[0].len > NFS4_FHSIZE ||
			    owner_parse(ds->ffds_user, &t->uid) ||
			    owner_parse(ds->ffds_group, &t->gid)) {
				rc = -EPROTO;
				break;
			}
			memcpy(t->devid, ds->ffds_deviceid, NFS4_DEVICEID4_SIZE);
			t->efficiency = ds->ffds_efficiency;
			t->sid = ds->ffds_stateid;
			t->fhlen = ds->ffds_fh_vers.val[0].len;
			memcpy(t->fh, ds->ffds_fh_vers.val[0].val, t->fhlen);
		}
	}
	if (rc) {
		seg_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

/* Keep s; the server's newest word replaces overlapping segments of its
 * iomode. */
static int seg_insert(struct ffc_inode *f, struct seg *s)
{
	unsigned k = 0;
	for (unsigned i = 0; i < f->nsegs; i++) {
		struct seg *o = f->segs[i];
		if (o->iomode == s->iomode && o->off < s->end && s->off < o->end)
			seg_free(o);
		else
			f->segs[k++] = o;
	}
	f->nsegs = k;
	if (f->nsegs == f->capsegs) {
		unsigned cap = f->capsegs ? f->capsegs * 2 : 8;
		struct seg **n = realloc(f->segs, cap * sizeof(*n));
		if (!n) {
			seg_free(s);
			return -ENOMEM;
		}
		f->segs = n;
		f->capsegs = cap;
	}
	f->segs[f->nsegs++] = s;
	return 0;
}

/*
 * LAYOUTGET (RFC 8881 §18.43) for [off, off + len) in iomode, as Linux asks:
 * page-aligned offset, minlength one page (for READ: what is left of the
 * file), the open stateid first and the layout stateid after.  0 when a
 * segment now covers off; -errno otherwise (the I/O then goes through the
 * MDS).
 */
int ffc_layoutget(struct ffc_inode *f, const stateid4 *osid, int iomode, uint64_t off, uint64_t len)
{
	struct ffc *c = f->c;
	int mi = ffc_iomode_idx(iomode);
	uint64_t aoff = off & ~4095ull;
	uint64_t alen = off - aoff + len;
	alen = alen > NFS4_UINT64_MAX - 4095 ? NFS4_UINT64_MAX : (alen + 4095) & ~4095ull;
	if (aoff + alen < aoff)
		alen = NFS4_UINT64_MAX;
	uint64_t minlen = alen < 4096 ? alen : 4096;
	if (iomode == LAYOUTIOMODE4_READ)
		minlen = aoff >= f->size ? 0 : (f->size - aoff < minlen ? f->size - aoff : minlen);
	unsigned wait = 100;
	uint32_t maxcount = FFC_LG_MAXCOUNT;
	bool stateid_retry = false;
	struct xdr_arena ar;
	ffc_arena_new(&ar);
	int rc;
	for (int tries = 0;; tries++) {
		nfs_argop4 ops[2] = {{.argop = OP_PUTFH}, {.argop = OP_LAYOUTGET}};
		ops[0].u.opputfh.object = xdr_opaque_of(f->fh, f->fhlen);
		LAYOUTGET4args *la = &ops[1].u.oplayoutget;
		la->loga_signal_layout_avail = false;
		la->loga_layout_type = LAYOUT4_FLEX_FILES;
		la->loga_iomode = iomode;
		la->loga_offset = aoff;
		la->loga_length = alen;
		la->loga_minlength = minlen;
		la->loga_stateid = f->lo_valid ? f->lo_sid : *osid;
		la->loga_maxcount = maxcount;
		COMPOUND4res res;
		atomic_fetch_add(&c->layoutget, 1);
		if ((rc = ffc_mds_call(c, ops, 2, &res, &ar)))
			break;
		nfsstat4 st = ffc_opstatus(&res, 1, OP_LAYOUTGET);
		if (st == NFS4_OK) {
			const LAYOUTGET4resok *ok =
			    &ffc_resop(&res, 1, OP_LAYOUTGET)->u.oplayoutget.u.logr_resok4;
			/* the server's word on the layout stateid wins (§12.5.3) */
			f->lo_sid = ok->logr_stateid;
			f->lo_valid = true;
			rc = ok->logr_layout.len ? 0 : -EPROTO;
			for (uint32_t i = 0; i < ok->logr_layout.len && !rc; i++) {
				struct seg *s;
				rc = seg_parse(&ok->logr_layout.val[i], &ar, &s);
				/* never an RW request answered with READ */
				if (!rc && iomode == LAYOUTIOMODE4_RW &&
				    s->iomode != LAYOUTIOMODE4_RW) {
					seg_free(s);
					rc = -EPROTO;
				}
				if (!rc)
					rc = seg_insert(f, s);
			}
			atomic_store(&f->has_layout, f->nsegs > 0);
			if (!rc && !ffc_seg_find(f, off, iomode == LAYOUTIOMODE4_RW))
				rc = -EPROTO; /* not containing loga_offset: as BADLAYOUT */
			if (rc) {
				/* a layout we cannot use: hand it back */
				f->lo_bad[mi] = true;
				atomic_store(&c->layoutget_last_err, NFS4ERR_BADLAYOUT);
			} else {
				atomic_fetch_add(&c->layoutget_ok, 1);
			}
			break;
		}
		atomic_store(&c->layoutget_last_err, st);
		rc = ffc_nfs4_errno(st);
		switch (st) {
		case NFS4ERR_NOTSUPP:
		case NFS4ERR_UNKNOWN_LAYOUTTYPE:
			/* no flexfiles layouts from this server at all */
			atomic_store(&c->pnfs, false);
			pthread_mutex_lock(&c->mu);
			snprintf(c->pnfs_why, sizeof(c->pnfs_why), "LAYOUTGET: %s",
				 st == NFS4ERR_NOTSUPP ? "NFS4ERR_NOTSUPP"
						       : "NFS4ERR_UNKNOWN_LAYOUTTYPE");
			pthread_mutex_unlock(&c->mu);
			break;
		case NFS4ERR_LAYOUTUNAVAILABLE:
			f->fail_until[mi] = ffc_now_ms() + FFC_FAIL_RETRY_MS;
			break;
		case NFS4ERR_TOOSMALL:
			if (maxcount < (64u << 10)) {
				maxcount = 64u << 10;
				continue;
			}
			break;
		case NFS4ERR_LAYOUTTRYLATER:
		case NFS4ERR_RECALLCONFLICT:
		case NFS4ERR_RETURNCONFLICT:
			if (tries < 5) {
				ffc_sleep_ms(wait);
				wait *= 2;
				continue;
			}
			break;
		case NFS4ERR_BAD_STATEID:
		case NFS4ERR_OLD_STATEID:
		case NFS4ERR_EXPIRED:
			/* our layout stateid is no good: start over from the open's */
			if (f->lo_valid && !stateid_retry) {
				f->lo_valid = false;
				segs_drop(f, LAYOUTIOMODE4_ANY);
				stateid_retry = true;
				continue;
			}
			break;
		default:
			break;
		}
		break;
	}
	xdr_arena_release(&ar);
	return rc;
}

/*
 * LAYOUTRETURN (RFC 8881 §18.44) of the whole file for iomode, with the
 * errors seen in an ff_layoutreturn4 (RFC 8435 §9.1), as Linux always
 * returns [0, ALL).  The segments go whatever the answer.
 */
void ffc_layoutreturn(struct ffc_inode *f, int iomode)
{
	struct ffc *c = f->c;
	if (!f->lo_valid) {
		segs_drop(f, iomode);
		f->nerrs = 0;
		return;
	}
	struct xdr_arena ar;
	ffc_arena_new(&ar);
	ff_ioerr4 ie[FFC_IOERR_MAX];
	device_error4 de[FFC_IOERR_MAX];
	for (unsigned i = 0; i < f->nerrs; i++) {
		memcpy(de[i].de_deviceid, f->errs[i].devid, NFS4_DEVICEID4_SIZE);
		de[i].de_status = f->errs[i].status;
		de[i].de_opnum = f->errs[i].op;
		ie[i] = (ff_ioerr4){.ffie_offset = f->errs[i].off,
				    .ffie_length = f->errs[i].len,
				    .ffie_stateid = f->lo_sid,
				    .ffie_errors = {1, &de[i]}};
	}
	ff_layoutreturn4 body = {.fflr_ioerr_report = {f->nerrs, ie}};
	struct iovec iov[64];
	uint8_t scratch[4096];
	struct xdr_enc e;
	xdr_enc_init(&e, iov, 64, scratch, sizeof(scratch), &ar);
	xdr_enc_ff_layoutreturn4(&e, &body);
	uint8_t *flat = e.err ? NULL : xdr_arena_alloc(&ar, e.len ? e.len : 1);
	if (flat)
		xdr_enc_flatten(&e, flat);

	nfs_argop4 ops[2] = {{.argop = OP_PUTFH}, {.argop = OP_LAYOUTRETURN}};
	ops[0].u.opputfh.object = xdr_opaque_of(f->fh, f->fhlen);
	LAYOUTRETURN4args *ra = &ops[1].u.oplayoutreturn;
	ra->lora_reclaim = false;
	ra->lora_layout_type = LAYOUT4_FLEX_FILES;
	ra->lora_iomode = iomode;
	ra->lora_layoutreturn.lr_returntype = LAYOUTRETURN4_FILE;
	layoutreturn_file4 *lf = &ra->lora_layoutreturn.u.lr_layout;
	lf->lrf_offset = 0;
	lf->lrf_length = NFS4_UINT64_MAX;
	lf->lrf_stateid = f->lo_sid;
	lf->lrf_body = flat ? xdr_opaque_of(flat, e.len) : xdr_opaque_of(NULL, 0);
	COMPOUND4res res;
	atomic_fetch_add(&c->layoutreturn, 1);
	if (!ffc_mds_call(c, ops, 2, &res, &ar)) {
		nfsstat4 st = ffc_opstatus(&res, 1, OP_LAYOUTRETURN);
		nfs_resop4 *o = ffc_resop(&res, 1, OP_LAYOUTRETURN);
		if (st == NFS4_OK && o && o->u.oplayoutreturn.u.lorr_stateid.lrs_present)
			f->lo_sid = o->u.oplayoutreturn.u.lorr_stateid.u.lrs_stateid;
		else
			f->lo_valid = false; /* all returned, or the stateid is gone */
	} else {
		f->lo_valid = false;
	}
	xdr_arena_release(&ar);
	f->nerrs = 0;
	if (iomode == LAYOUTIOMODE4_ANY)
		f->lo_valid = false;
	segs_drop(f, iomode);
	if (iomode == LAYOUTIOMODE4_ANY) {
		f->lo_bad[0] = f->lo_bad[1] = false;
	} else {
		f->lo_bad[ffc_iomode_idx(iomode)] = false;
	}
	atomic_store(&f->has_layout, f->lo_valid && f->nsegs > 0);
}

/* Whether I/O of this iomode may ask for layouts now. */
bool ffc_layouts_on(struct ffc_inode *f, int iomode)
{
	return atomic_load(&f->c->pnfs) && ffc_now_ms() >= f->fail_until[ffc_iomode_idx(iomode)];
}

/* ----------------------------------------------------------- commits */

struct dirty *ffc_dirty_get(struct ffc_inode *f, const struct rpc *r)
{
	for (unsigned i = 0; i < f->ndirty; i++) {
		struct dirty *d = &f->dirty[i];
		if (d->dev == r->dev && d->fhlen == r->t.fhlen &&
		    !memcmp(d->fh, r->t.fh, d->fhlen) && d->uid == r->t.uid && d->gid == r->t.gid)
			return d;
	}
	struct dirty *n = realloc(f->dirty, (f->ndirty + 1) * sizeof(*n));
	if (!n)
		return NULL;
	f->dirty = n;
	struct dirty *d = &f->dirty[f->ndirty++];
	memset(d, 0, sizeof(*d));
	d->dev = r->dev;
	memcpy(d->fh, r->t.fh, r->t.fhlen);
	d->fhlen = r->t.fhlen;
	d->uid = r->t.uid;
	d->gid = r->t.gid;
	d->sid = r->t.sid;
	return d;
}

/* COMMIT (offset 0, count 0) to one data server; 0, or the nfsstat
 * (positive), or -errno of the transport.  *verf on success. */
static int ds_commit(struct ffc *c, struct dirty *d, uint8_t verf[8])
{
	struct xdr_arena ar;
	ffc_arena_new(&ar);
	int rc;
	if (!d->dev->nclnt || !d->dev->clnt[0]) {
		rc = -ENOTCONN;
	} else if (atomic_load(&d->dev->unavail_until) > ffc_now_ms()) {
		rc = -EHOSTDOWN; /* it failed in transport: what it held unstable is lost to us */
	} else if (d->dev->vers == 3) {
		COMMIT3args a = {.file.data = xdr_opaque_of(d->fh, d->fhlen)};
		struct nfsd_call_opts o = {
		    .prog = NFS_PROGRAM,
		    .vers = NFS_V3,
		    .proc = NFSPROC3_COMMIT,
		    .enc_args = xdr_desc_NFS_PROGRAM_NFS_V3.procs[NFSPROC3_COMMIT].enc_arg,
		    .args = &a,
		    .timeout_ms = c->o.ds_timeout_ms,
		    .flavor = NFSD_AUTH_SYS,
		    .uid = d->uid,
		    .gid = d->gid};
		COMMIT3res r;
		rc = nfsd_clnt_call(d->dev->clnt[0], &o,
				    xdr_desc_NFS_PROGRAM_NFS_V3.procs[NFSPROC3_COMMIT].dec_res, &r,
				    &ar);
		rc = ffc_call_errno(rc);
		if (!rc && r.status)
			rc = r.status;
		else if (!rc)
			memcpy(verf, r.u.resok.verf, 8);
	} else {
		int err = 0;
		struct nfs41c_session *s = ffc_dev_session(c, d->dev, d->uid, d->gid, &err);
		if (!s) {
			rc = err ? err : -EIO;
		} else {
			nfs_argop4 ops[2] = {{.argop = OP_PUTFH}, {.argop = OP_COMMIT}};
			ops[0].u.opputfh.object = xdr_opaque_of(d->fh, d->fhlen);
			COMPOUND4res res;
			unsigned fl = d->dev->minor == 2 ? NFS41C_MINOR2 : 0;
			rc = ffc_call_errno(nfs41c_compound_ex(s, NULL, fl, ops, 2, &res, &ar));
			if (!rc) {
				nfsstat4 st = ffc_opstatus(&res, 1, OP_COMMIT);
				if (st)
					rc = (int)st;
				else
					memcpy(verf,
					       ffc_resop(&res, 1, OP_COMMIT)
						   ->u.opcommit.u.resok4.writeverf,
					       8);
			}
		}
	}
	xdr_arena_release(&ar);
	atomic_fetch_add(&d->dev->commits, 1);
	return rc;
}

/* COMMIT through the MDS (its WRITEs were UNSTABLE). */
static int mds_commit(struct ffc_inode *f)
{
	struct xdr_arena ar;
	ffc_arena_new(&ar);
	nfs_argop4 ops[2] = {{.argop = OP_PUTFH}, {.argop = OP_COMMIT}};
	ops[0].u.opputfh.object = xdr_opaque_of(f->fh, f->fhlen);
	COMPOUND4res res;
	int rc = ffc_mds_call(f->c, ops, 2, &res, &ar);
	if (!rc) {
		nfsstat4 st = ffc_opstatus(&res, 1, OP_COMMIT);
		if (st)
			rc = ffc_nfs4_errno(st);
		else if (f->mds_have_verf &&
			 memcmp(ffc_resop(&res, 1, OP_COMMIT)->u.opcommit.u.resok4.writeverf,
				f->mds_verf, 8))
			rc = -EIO; /* the server restarted: unstable data may be gone */
	}
	xdr_arena_release(&ar);
	return rc;
}

/*
 * LAYOUTCOMMIT (RFC 8881 §18.42) as Linux sends it: offset 0, length the
 * last byte written + 1, loca_last_write_offset that byte, no time, an
 * empty flexfiles layoutupdate (RFC 8435 §4.1); with GETATTR of the size.
 */
static int layoutcommit(struct ffc_inode *f)
{
	struct ffc *c = f->c;
	struct xdr_arena ar;
	ffc_arena_new(&ar);
	uint32_t w[3];
	unsigned want[] = {FATTR4_SIZE};
	nfs_argop4 ops[3] = {
	    {.argop = OP_PUTFH}, {.argop = OP_LAYOUTCOMMIT}, {.argop = OP_GETATTR}};
	ops[0].u.opputfh.object = xdr_opaque_of(f->fh, f->fhlen);
	LAYOUTCOMMIT4args *a = &ops[1].u.oplayoutcommit;
	a->loca_offset = 0;
	a->loca_length = f->lwb;
	a->loca_reclaim = false;
	a->loca_stateid = f->lo_sid;
	a->loca_last_write_offset.no_newoffset = f->lwb > 0;
	a->loca_last_write_offset.u.no_offset = f->lwb ? f->lwb - 1 : 0;
	a->loca_time_modify.nt_timechanged = false;
	a->loca_layoutupdate.lou_type = LAYOUT4_FLEX_FILES;
	ops[2].u.opgetattr.attr_request = ffc_bm_of(w, want, 1);
	COMPOUND4res res;
	atomic_fetch_add(&c->layoutcommit, 1);
	int rc = ffc_mds_call(c, ops, 3, &res, &ar);
	if (!rc) {
		nfsstat4 st = ffc_opstatus(&res, 1, OP_LAYOUTCOMMIT);
		rc = ffc_nfs4_errno(st);
		nfs_resop4 *g = ffc_resop(&res, 2, OP_GETATTR);
		struct attrs at;
		if (!rc && g && !g->u.opgetattr.status &&
		    !ffc_attrs_decode(&g->u.opgetattr.u.resok4.obj_attributes, &at, &ar) &&
		    ffc_attr_has(&at, FATTR4_SIZE) && at.size > f->size)
			f->size = at.size;
	}
	xdr_arena_release(&ar);
	return rc;
}

/*
 * fsync under f->mu: COMMIT every data server written UNSTABLE (a changed
 * verifier means the data server restarted and lost what it had not made
 * durable: -EIO, since we keep no copy), then LAYOUTCOMMIT, then the MDS's
 * COMMIT.  Returns the first error, the sticky one included, and clears it.
 */
int ffc_flush_locked(struct ffc_inode *f)
{
	struct ffc *c = f->c;
	int ret = f->err;
	f->err = 0;
	for (unsigned i = 0; i < f->ndirty; i++) {
		struct dirty *d = &f->dirty[i];
		if (!d->need_commit)
			continue;
		uint8_t v[8];
		int rc;
		unsigned wait = 50;
		for (int t = 0;; t++) {
			rc = ds_commit(c, d, v);
			bool again = d->dev->vers == 3 ? rc == NFS3ERR_JUKEBOX
						       : rc == NFS4ERR_DELAY || rc == NFS4ERR_GRACE;
			if (!again || t >= 20)
				break;
			ffc_sleep_ms(wait);
			wait = wait * 2 > 1000 ? 1000 : wait * 2;
		}
		d->need_commit = false;
		if (rc) {
			atomic_fetch_add(&c->ds_errors, 1);
			atomic_fetch_add(&d->dev->errors, 1);
			ffc_ioerr_add(f, 0, NFS4_UINT64_MAX, d->dev->id,
				      rc < 0 ? NFS4ERR_NXIO : (nfsstat4)rc, OP_COMMIT);
			f->lo_bad[1] = true;
			if (!ret)
				ret = -EIO;
		} else if (memcmp(v, d->verf, 8)) {
			if (!ret)
				ret = -EIO;
		}
	}
	if (f->need_layoutcommit && f->lo_valid) {
		int rc = layoutcommit(f);
		if (rc && !ret)
			ret = rc;
		f->need_layoutcommit = false;
		f->lwb = 0;
	}
	if (f->mds_unstable) {
		int rc = mds_commit(f);
		if (rc && !ret)
			ret = rc;
		f->mds_unstable = false;
		f->mds_have_verf = false;
	}
	return ret;
}

/* Return layouts of iomode after an error or a recall: flush first, so
 * what went to the data servers is durable and accounted for. */
void ffc_return_locked(struct ffc_inode *f, int iomode)
{
	if (iomode != LAYOUTIOMODE4_READ) {
		int rc = ffc_flush_locked(f);
		if (rc && !f->err)
			f->err = rc;
	}
	ffc_layoutreturn(f, iomode);
}

/* A recall noted by the back channel: answer it now, unless I/O of the
 * file is in progress (ino->mu held). */
void ffc_recall_check(struct ffc_inode *f)
{
	if (f->io_active) /* after the I/O in progress (§12.5.5.1) */
		return;
	int bits = atomic_exchange(&f->recall, 0);
	if (!bits)
		return;
	struct ffc *c = f->c;
	pthread_mutex_lock(&c->mu);
	if (f->have_recall_sid && f->lo_valid &&
	    !memcmp(f->recall_sid.other, f->lo_sid.other, NFS4_OTHER_SIZE) &&
	    (int32_t)(f->recall_sid.seqid - f->lo_sid.seqid) > 0)
		f->lo_sid = f->recall_sid;
	f->have_recall_sid = false;
	pthread_mutex_unlock(&c->mu);
	ffc_return_locked(f, bits == 1	 ? LAYOUTIOMODE4_READ
			     : bits == 2 ? LAYOUTIOMODE4_RW
					 : LAYOUTIOMODE4_ANY);
}
