/* SPDX-License-Identifier: MIT */
/*
 * ffclient: NFSv4.1 + pNFS flexible files in userspace (see ffclient.h):
 * the mount, calls on the MDS session, attributes, the service thread.
 * Opens and file calls are in ffclient_file.c, the I/O engine in
 * ffclient_io.c.  Locks: ffclient_impl.h.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "client/ffclient_impl.h"
#include "nfsd/clock.h"

/* ------------------------------------------------------------------ helpers */

uint64_t ffc_now_ms(void)
{
	return nfsd_now_ns() / 1000000u;
}

void ffc_sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* nfsstat4 -> -errno for callers (RFC 8881 §15.1 meanings). */
int ffc_nfs4_errno(nfsstat4 s)
{
	switch (s) {
	case NFS4_OK:
		return 0;
	case NFS4ERR_PERM:
		return -EPERM;
	case NFS4ERR_NOENT:
		return -ENOENT;
	case NFS4ERR_NXIO:
		return -ENXIO;
	case NFS4ERR_ACCESS:
		return -EACCES;
	case NFS4ERR_EXIST:
		return -EEXIST;
	case NFS4ERR_XDEV:
		return -EXDEV;
	case NFS4ERR_NOTDIR:
		return -ENOTDIR;
	case NFS4ERR_ISDIR:
		return -EISDIR;
	case NFS4ERR_INVAL:
		return -EINVAL;
	case NFS4ERR_FBIG:
		return -EFBIG;
	case NFS4ERR_NOSPC:
		return -ENOSPC;
	case NFS4ERR_ROFS:
		return -EROFS;
	case NFS4ERR_MLINK:
		return -EMLINK;
	case NFS4ERR_NAMETOOLONG:
		return -ENAMETOOLONG;
	case NFS4ERR_NOTEMPTY:
		return -ENOTEMPTY;
	case NFS4ERR_DQUOT:
		return -EDQUOT;
	case NFS4ERR_STALE:
		return -ESTALE;
	case NFS4ERR_NOTSUPP:
		return -EOPNOTSUPP;
	case NFS4ERR_DELAY:
	case NFS4ERR_GRACE:
		return -EAGAIN;
	case NFS4ERR_SYMLINK:
		return -ELOOP;
	case NFS4ERR_WRONG_TYPE:
		return -EINVAL;
	case NFS4ERR_BADNAME:
		return -EINVAL;
	default:
		return -EIO;
	}
}

/* A call's return (nfsd_clnt_call / nfs41c_*) -> -errno. */
int ffc_call_errno(int rc)
{
	if (rc <= 0)
		return rc;
	if ((rc & ~0xff) == NFSD_CALL_ERR_DENIED)
		return -EACCES;
	return -EPROTO;
}

/* The result of op i (0-based, after SEQUENCE), if it ran and is that op. */
nfs_resop4 *ffc_resop(const COMPOUND4res *r, unsigned i, nfs_opnum4 op)
{
	if (i + 1 >= r->resarray.len || r->resarray.val[i + 1].resop != op)
		return NULL;
	return &r->resarray.val[i + 1];
}

/* The status of op i, or the COMPOUND's when it did not run that far. */
nfsstat4 ffc_opstatus(const COMPOUND4res *r, unsigned i, nfs_opnum4 op)
{
	nfs_resop4 *o = ffc_resop(r, i, op);
	if (o)
		return o->u.opillegal.status;
	return r->status ? r->status : NFS4ERR_SERVERFAULT;
}

void ffc_arena_new(struct xdr_arena *a)
{
	xdr_arena_init(a, NULL, 0, 64u << 20);
}

/*
 * SEQUENCE + ops on the MDS session.  NFS4ERR_DELAY and NFS4ERR_GRACE are
 * waited out (a few seconds at most).  0 with *res (whose status may be an
 * error), or -errno when no reply came.
 */
int ffc_mds_call(struct ffc *c, const nfs_argop4 *ops, unsigned n, COMPOUND4res *res,
		 struct xdr_arena *ar)
{
	unsigned wait = 20;
	for (unsigned try = 0;; try++) {
		int rc = nfs41c_compound(c->sess, ops, n, res, ar);
		atomic_store(&c->last_call_ms, ffc_now_ms());
		if (rc)
			return rc > 0 ? ffc_call_errno(rc) : rc;
		if ((res->status == NFS4ERR_DELAY || res->status == NFS4ERR_GRACE) && try < 14) {
			ffc_sleep_ms(wait);
			wait = wait * 2 > 1000 ? 1000 : wait * 2;
			continue;
		}
		return 0;
	}
}

/* ------------------------------------------------------------ attributes */

bitmap4 ffc_bm_of(uint32_t w[3], const unsigned *attrs, unsigned n)
{
	memset(w, 0, 3 * sizeof(uint32_t));
	unsigned len = 0;
	for (unsigned i = 0; i < n; i++) {
		w[attrs[i] / 32] |= 1u << (attrs[i] % 32);
		if (attrs[i] / 32 + 1 > len)
			len = attrs[i] / 32 + 1;
	}
	return (bitmap4){.len = len, .val = w};
}

/* The attributes we ask for, in bitmap order; anything else: -EPROTO. */
int ffc_attrs_decode(const fattr4 *fa, struct attrs *a, struct xdr_arena *ar)
{
	memset(a, 0, sizeof(*a));
	struct xdr_dec d;
	xdr_dec_init(&d, fa->attr_vals.val, fa->attr_vals.len, ar);
	for (unsigned w = 0; w < fa->attrmask.len; w++) {
		for (unsigned b = 0; b < 32; b++) {
			if (!(fa->attrmask.val[w] & (1u << b)))
				continue;
			unsigned n = w * 32 + b;
			int rc;
			switch (n) {
			case FATTR4_TYPE:
				rc = xdr_dec_uint32(&d, &a->type);
				break;
			case FATTR4_CHANGE:
				rc = xdr_dec_uint64(&d, &a->change);
				break;
			case FATTR4_SIZE:
				rc = xdr_dec_uint64(&d, &a->size);
				break;
			case FATTR4_LEASE_TIME:
				rc = xdr_dec_uint32(&d, &a->lease);
				break;
			case FATTR4_MAXREAD:
				rc = xdr_dec_uint64(&d, &a->maxread);
				break;
			case FATTR4_MAXWRITE:
				rc = xdr_dec_uint64(&d, &a->maxwrite);
				break;
			case FATTR4_SPACE_AVAIL:
				rc = xdr_dec_uint64(&d, &a->space_avail);
				break;
			case FATTR4_SPACE_FREE:
				rc = xdr_dec_uint64(&d, &a->space_free);
				break;
			case FATTR4_SPACE_TOTAL:
				rc = xdr_dec_uint64(&d, &a->space_total);
				break;
			case FATTR4_FS_LAYOUT_TYPES: {
				fattr4_fs_layout_types lt;
				rc = xdr_dec_fattr4_fs_layout_types(&d, &lt);
				for (uint32_t i = 0; !rc && i < lt.len; i++)
					if (lt.val[i] == LAYOUT4_FLEX_FILES)
						a->flexfiles = true;
				break;
			}
			default:
				return -EPROTO;
			}
			if (rc)
				return -EPROTO;
			if (n < 96)
				a->have[n / 32] |= 1u << (n % 32);
		}
	}
	return xdr_dec_left(&d) ? -EPROTO : 0;
}

bool ffc_attr_has(const struct attrs *a, unsigned n)
{
	return n < 96 && (a->have[n / 32] & (1u << (n % 32)));
}

/* GETATTR of the root (PUTROOTFH first). */
static int root_attrs(struct ffc *c, const unsigned *want, unsigned n, struct attrs *at)
{
	struct xdr_arena ar;
	ffc_arena_new(&ar);
	uint32_t w[3];
	nfs_argop4 ops[2] = {{.argop = OP_PUTROOTFH}, {.argop = OP_GETATTR}};
	ops[1].u.opgetattr.attr_request = ffc_bm_of(w, want, n);
	COMPOUND4res res;
	int rc = ffc_mds_call(c, ops, 2, &res, &ar);
	if (!rc)
		rc = ffc_nfs4_errno(ffc_opstatus(&res, 1, OP_GETATTR));
	if (!rc)
		rc = ffc_attrs_decode(
		    &ffc_resop(&res, 1, OP_GETATTR)->u.opgetattr.u.resok4.obj_attributes, at, &ar);
	xdr_arena_release(&ar);
	return rc;
}

int ffc_statfs(struct ffc *c, uint64_t *total, uint64_t *avail)
{
	unsigned want[] = {FATTR4_SPACE_AVAIL, FATTR4_SPACE_TOTAL};
	struct attrs at;
	int rc = root_attrs(c, want, 2, &at);
	if (!rc) {
		*total = at.space_total;
		*avail = at.space_avail;
	}
	return rc;
}

/* --------------------------------------------------------- the service */

/*
 * The service thread: answers recalls for files nobody is using (a file's
 * own next call answers them too), and keeps the lease with a bare
 * SEQUENCE when nothing else was sent for a quarter of it.
 */
static void *svc_main(void *arg)
{
	struct ffc *c = arg;
	pthread_mutex_lock(&c->mu);
	while (!c->stop) {
		struct ffc_inode *pick = NULL;
		for (struct ffc_inode *f = c->inodes; f && !pick; f = f->next)
			if (atomic_load(&f->recall))
				pick = ffc_ino_get(f);
		if (pick) {
			pthread_mutex_unlock(&c->mu);
			pthread_mutex_lock(&pick->mu);
			bool busy = pick->io_active > 0;
			if (!pick->closed && !busy)
				ffc_recall_check(pick);
			pthread_mutex_unlock(&pick->mu);
			ffc_ino_put(pick);
			/* busy: its I/O thread answers when its RPCs are in */
			if (busy)
				ffc_sleep_ms(20);
			pthread_mutex_lock(&c->mu);
			continue;
		}
		uint64_t quarter = c->lease_ms / 4;
		uint64_t last = atomic_load(&c->last_call_ms), now = ffc_now_ms();
		if (now - last >= quarter) {
			pthread_mutex_unlock(&c->mu);
			struct xdr_arena ar;
			ffc_arena_new(&ar);
			COMPOUND4res res;
			ffc_mds_call(c, NULL, 0, &res, &ar);
			xdr_arena_release(&ar);
			pthread_mutex_lock(&c->mu);
			continue;
		}
		uint64_t wake = last + quarter - now;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += (time_t)(wake / 1000);
		ts.tv_nsec += (long)(wake % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&c->cv, &c->mu, &ts);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* ------------------------------------------------------------ the mount */

static int resolve_host(const char *host, int port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	char ps[16];
	snprintf(ps, sizeof(ps), "%d", port);
	int rc = getaddrinfo(host, ps, &hints, &ai);
	if (rc || !ai)
		return -EHOSTUNREACH;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

static void ffc_free(struct ffc *c)
{
	if (c->svc_started) {
		pthread_mutex_lock(&c->mu);
		c->stop = true;
		pthread_cond_broadcast(&c->cv);
		pthread_mutex_unlock(&c->mu);
		pthread_join(c->svc, NULL);
	}
	for (unsigned i = 0; i < c->ndevs; i++) {
		struct ffc_dev *d = c->devs[i];
		ffc_dev_retire(c, d);
		pthread_mutex_destroy(&d->smu);
		free(d);
	}
	free(c->devs);
	while (c->graves) {
		struct grave *g = c->graves;
		c->graves = g->next;
		while (g->sess) {
			struct ffc_dssess *s = g->sess;
			g->sess = s->next;
			nfs41c_session_destroy(s->sess);
			free(s);
		}
		for (unsigned k = 0; k < g->nclnt; k++)
			nfsd_clnt_free(g->clnt[k]);
		free(g);
	}
	if (c->sess)
		nfs41c_session_destroy(c->sess);
	if (c->clnt)
		nfsd_clnt_free(c->clnt);
	if (c->eng)
		nfsd_server_free(c->eng);
	pthread_mutex_destroy(&c->dev_mu);
	pthread_mutex_destroy(&c->devlist_mu);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

struct ffc *ffc_mount(const char *host, int port, const struct ffc_opts *opts, int *err)
{
	struct ffc *c = calloc(1, sizeof(*c));
	if (!c) {
		*err = -ENOMEM;
		return NULL;
	}
	if (opts)
		c->o = *opts;
	if (!c->o.inflight)
		c->o.inflight = FFC_INFLIGHT_DEF;
	if (c->o.inflight > FFC_INFLIGHT_MAX)
		c->o.inflight = FFC_INFLIGHT_MAX;
	if (!c->o.io_size || c->o.io_size > FFC_IO_MAX)
		c->o.io_size = FFC_IO_MAX;
	if (!c->o.timeout_ms)
		c->o.timeout_ms = FFC_TIMEOUT_DEF_MS;
	if (!c->o.ds_timeout_ms)
		c->o.ds_timeout_ms = c->o.timeout_ms;
	if (!c->o.loops)
		c->o.loops = 1;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	pthread_mutex_init(&c->dev_mu, NULL);
	pthread_mutex_init(&c->devlist_mu, NULL);
	if (c->o.owner) {
		snprintf(c->owner, sizeof(c->owner), "%s", c->o.owner);
	} else {
		uint64_t r = 0;
		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			r = ffc_now_ms();
		snprintf(c->owner, sizeof(c->owner), "ffclient-%d-%016llx", (int)getpid(),
			 (unsigned long long)r);
	}
	c->o.owner = NULL;

	struct sockaddr_storage ss;
	socklen_t sl;
	int rc = resolve_host(host, port, &ss, &sl);
	if (rc)
		goto fail;
	c->eng = nfsd_client_engine_new(c->o.loops, 0, &rc);
	if (!c->eng)
		goto fail;
	ffc_cb_program(c, &c->cb_prog);
	struct nfsd_clnt_opts co = {.timeout_ms = c->o.timeout_ms,
				    .reconnect = true,
				    .backchannel = &c->cb_prog,
				    .backchannel_priv = c};
	c->clnt = nfsd_clnt_new(c->eng, (struct sockaddr *)&ss, sl, &co, &rc);
	if (!c->clnt)
		goto fail;
	struct nfs41c_session_opts so = {.owner = c->owner,
					 .create_flags = CREATE_SESSION4_FLAG_CONN_BACK_CHAN,
					 .cb_program = FFC_CB_PROG};
	rc = nfs41c_session_create_opts(c->clnt, &so, &c->sess);
	if (rc) {
		c->sess = NULL;
		rc = rc > 0 ? ((rc & ~0xff) == NFSD_CALL_ERR_ACCEPT ||
				       (rc & ~0xff) == NFSD_CALL_ERR_DENIED
				   ? ffc_call_errno(rc)
				   : ffc_nfs4_errno((nfsstat4)rc))
			    : rc;
		goto fail;
	}
	nfs41c_session_info(c->sess, &c->info);
	nfs41c_session_set_cred(c->sess, c->o.uid, c->o.gid);
	atomic_store(&c->last_call_ms, ffc_now_ms());

	struct xdr_arena ar;
	ffc_arena_new(&ar);
	nfs_argop4 rcop = {.argop = OP_RECLAIM_COMPLETE};
	rcop.u.opreclaim_complete.rca_one_fs = false;
	COMPOUND4res res;
	rc = ffc_mds_call(c, &rcop, 1, &res, &ar);
	xdr_arena_release(&ar);
	if (rc)
		goto fail;

	unsigned want[] = {FATTR4_LEASE_TIME, FATTR4_MAXREAD, FATTR4_MAXWRITE,
			   FATTR4_FS_LAYOUT_TYPES};
	struct attrs at;
	if ((rc = root_attrs(c, want, 4, &at)))
		goto fail;
	c->lease_ms = ffc_attr_has(&at, FATTR4_LEASE_TIME) && at.lease ? at.lease * 1000ull : 90000;
	c->mds_rsize = at.maxread && at.maxread < FFC_MDS_IO_MAX_DEF ? (uint32_t)at.maxread
								     : FFC_MDS_IO_MAX_DEF;
	c->mds_wsize = at.maxwrite && at.maxwrite < FFC_MDS_IO_MAX_DEF ? (uint32_t)at.maxwrite
								       : FFC_MDS_IO_MAX_DEF;
	bool mds_role = c->info.exchgid_flags & EXCHGID4_FLAG_USE_PNFS_MDS;
	if (c->o.no_pnfs) {
		snprintf(c->pnfs_why, sizeof(c->pnfs_why), "pNFS off by option");
	} else if (c->o.force_layoutget) {
		atomic_store(&c->pnfs, true);
	} else if (!mds_role) {
		snprintf(c->pnfs_why, sizeof(c->pnfs_why),
			 "EXCHANGE_ID: the server is no pNFS MDS (no EXCHGID4_FLAG_USE_PNFS_MDS)");
	} else if (!at.flexfiles) {
		snprintf(c->pnfs_why, sizeof(c->pnfs_why),
			 "fs_layout_types of the root lacks LAYOUT4_FLEX_FILES");
	} else {
		atomic_store(&c->pnfs, true);
	}
	if (pthread_create(&c->svc, NULL, svc_main, c)) {
		rc = -EAGAIN;
		goto fail;
	}
	c->svc_started = true;
	return c;
fail:
	ffc_free(c);
	*err = rc ? rc : -EIO;
	return NULL;
}

void ffc_unmount(struct ffc *c)
{
	if (c)
		ffc_free(c);
}

void ffc_stats_get(struct ffc *c, struct ffc_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->pnfs = atomic_load(&c->pnfs);
	pthread_mutex_lock(&c->mu);
	snprintf(st->pnfs_why, sizeof(st->pnfs_why), "%s", st->pnfs ? "" : c->pnfs_why);
	pthread_mutex_unlock(&c->mu);
	st->layoutget = atomic_load(&c->layoutget);
	st->layoutget_ok = atomic_load(&c->layoutget_ok);
	st->layoutget_last_err = atomic_load(&c->layoutget_last_err);
	st->getdeviceinfo = atomic_load(&c->getdeviceinfo);
	st->layoutcommit = atomic_load(&c->layoutcommit);
	st->layoutreturn = atomic_load(&c->layoutreturn);
	st->layoutrecall = atomic_load(&c->layoutrecall);
	st->ds_errors = atomic_load(&c->ds_errors);
	st->fallbacks = atomic_load(&c->fallbacks);
	st->mds_read_bytes = atomic_load(&c->mds_read_bytes);
	st->mds_write_bytes = atomic_load(&c->mds_write_bytes);
	st->ds_read_bytes = atomic_load(&c->ds_read_bytes);
	st->ds_write_bytes = atomic_load(&c->ds_write_bytes);
	pthread_mutex_lock(&c->devlist_mu);
	st->ndev = c->ndevs;
	for (unsigned i = 0; i < c->ndevs && i < FFC_STATS_DEV_MAX; i++) {
		struct ffc_dev *d = c->devs[i];
		struct ffc_dev_stats *s = &st->dev[i];
		memcpy(s->deviceid, d->id, 16);
		if (atomic_load(&d->ready)) {
			snprintf(s->addr, sizeof(s->addr), "%s", d->addr);
			s->version = d->vers;
			s->minorversion = d->minor;
		}
		s->read_bytes = atomic_load(&d->read_bytes);
		s->write_bytes = atomic_load(&d->write_bytes);
		s->reads = atomic_load(&d->reads);
		s->writes = atomic_load(&d->writes);
		s->commits = atomic_load(&d->commits);
		s->errors = atomic_load(&d->errors);
	}
	pthread_mutex_unlock(&c->devlist_mu);
}
