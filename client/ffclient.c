/* SPDX-License-Identifier: MIT */
/*
 * ffclient: NFSv4.1 + pNFS flexible files in userspace (see ffclient.h):
 * the mount, opens, and the I/O engine.  Locks: ffclient_impl.h.
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

static const stateid4 current_stateid = {.seqid = 1}; /* RFC 8881 §16.2.3.1.2 */

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

/* createattrs: size (when want_size) and mode, in bitmap order. */
static fattr4 attrs_create(uint32_t w[3], uint8_t vals[12], bool want_size, uint64_t size,
			   bool want_mode, uint32_t mode)
{
	unsigned list[2], n = 0;
	uint32_t len = 0;
	if (want_size) {
		list[n++] = FATTR4_SIZE;
		xdr_put32(vals, (uint32_t)(size >> 32));
		xdr_put32(vals + 4, (uint32_t)size);
		len = 8;
	}
	if (want_mode) {
		list[n++] = FATTR4_MODE;
		xdr_put32(vals + len, mode & 07777);
		len += 4;
	}
	return (fattr4){.attrmask = ffc_bm_of(w, list, n), .attr_vals = xdr_opaque_of(vals, len)};
}

/* ------------------------------------------------------------- paths */

struct walk {
	nfs_argop4 ops[FFC_PATH_DEPTH_MAX + 8];
	unsigned n;
	const char *last;
	uint32_t lastlen;
};

/* PUTROOTFH and a LOOKUP per directory of path; the last component is left
 * in w->last.  -EINVAL for an empty path, -ENAMETOOLONG, -ELOOP (depth). */
static int walk_build(struct walk *w, const char *path)
{
	w->n = 0;
	w->ops[w->n++] = (nfs_argop4){.argop = OP_PUTROOTFH};
	w->last = NULL;
	const char *p = path;
	for (;;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		const char *q = strchr(p, '/');
		size_t len = q ? (size_t)(q - p) : strlen(p);
		if (len > 255)
			return -ENAMETOOLONG;
		if (w->last) {
			if (w->n >= FFC_PATH_DEPTH_MAX)
				return -ELOOP;
			nfs_argop4 *o = &w->ops[w->n++];
			*o = (nfs_argop4){.argop = OP_LOOKUP};
			o->u.oplookup.objname = xdr_opaque_of(w->last, w->lastlen);
		}
		w->last = p;
		w->lastlen = (uint32_t)len;
		p += len;
	}
	return w->last ? 0 : -EINVAL;
}

/* ------------------------------------------------------------- RPCs */

static void rpc_done(struct rpc *r)
{
	struct io *io = r->io;
	if (r->kind != RK_MDS &&
	    (r->rc || (r->status && r->status != NFS4ERR_DELAY && r->status != NFS3ERR_JUKEBOX)))
		atomic_store(&io->ds_failed, true);
	pthread_mutex_lock(&io->mu);
	io->inflight--;
	pthread_cond_broadcast(&io->cv);
	pthread_mutex_unlock(&io->mu);
}

/* The READ data of a reply into r->rbuf: never more than asked for.  Data
 * the engine placed there itself (r->sunk) is not copied. */
static void rpc_take_data(struct rpc *r, xdr_opaque data, uint32_t count, bool eof)
{
	size_t have = r->sunk ? r->sunk : data.len;
	uint32_t n = have < count ? (uint32_t)have : count;
	if (n > r->len)
		n = r->len;
	if (!r->sunk)
		memcpy(r->rbuf, data.val, n);
	r->count = n;
	r->eof = eof;
}

/*
 * Where a READ reply's data starts (struct nfsd_sink's locate): a cursor
 * over the reply's first bytes.  Only the shapes we sent are accepted,
 * all succeeding: anything else is received whole and decoded as usual.
 */
struct peek {
	const uint8_t *p;
	size_t have, at;
	bool short_;
};

static uint32_t peek32(struct peek *k)
{
	if (k->at + 4 > k->have) {
		k->short_ = true;
		return 0xffffffffu;
	}
	uint32_t v = (uint32_t)k->p[k->at] << 24 | (uint32_t)k->p[k->at + 1] << 16 |
		     (uint32_t)k->p[k->at + 2] << 8 | k->p[k->at + 3];
	k->at += 4;
	return v;
}

static void peek_skip(struct peek *k, size_t n)
{
	if (k->at + n > k->have)
		k->short_ = true;
	k->at += n;
}

/* xid, REPLY, MSG_ACCEPTED, a verifier, SUCCESS: false if not that. */
static bool peek_reply_ok(struct peek *k)
{
	peek32(k); /* xid */
	if (peek32(k) != 1 || peek32(k) != 0)
		return false;
	peek32(k); /* verifier flavor */
	uint32_t vl = peek32(k);
	if (vl > 400)
		return false;
	peek_skip(k, (vl + 3) & ~3u);
	return peek32(k) == 0;
}

static int peek_result(struct peek *k, bool ok, size_t *off, size_t *len)
{
	if (k->short_)
		return 0;
	if (!ok)
		return -1;
	*len = peek32(k);
	if (k->short_)
		return 0;
	*off = k->at;
	return 1;
}

/* READ3res: status OK, post_op_attr, count, eof, then the data. */
static int locate_read3(const uint8_t *rec, size_t have, size_t rec_len, size_t *off, size_t *len)
{
	(void)rec_len;
	struct peek k = { rec, have, 0, false };
	bool ok = peek_reply_ok(&k) && peek32(&k) == 0;
	uint32_t attrs = peek32(&k);
	ok = ok && attrs <= 1;
	if (attrs == 1)
		peek_skip(&k, 84); /* fattr3 */
	peek32(&k); /* count */
	ok = ok && peek32(&k) <= 1;
	return peek_result(&k, ok, off, len);
}

/* COMPOUND4res of SEQUENCE, PUTFH, READ, all OK: READ4resok's data. */
static int locate_read4(const uint8_t *rec, size_t have, size_t rec_len, size_t *off, size_t *len)
{
	(void)rec_len;
	struct peek k = { rec, have, 0, false };
	bool ok = peek_reply_ok(&k) && peek32(&k) == NFS4_OK;
	uint32_t tl = peek32(&k);
	ok = ok && tl <= NFS4_OPAQUE_LIMIT;
	peek_skip(&k, ok ? (tl + 3) & ~3u : 0);
	ok = ok && peek32(&k) == 3;
	ok = ok && peek32(&k) == OP_SEQUENCE && peek32(&k) == NFS4_OK;
	peek_skip(&k, NFS4_SESSIONID_SIZE + 5 * 4);
	ok = ok && peek32(&k) == OP_PUTFH && peek32(&k) == NFS4_OK;
	ok = ok && peek32(&k) == OP_READ && peek32(&k) == NFS4_OK;
	ok = ok && peek32(&k) <= 1; /* eof */
	return peek_result(&k, ok, off, len);
}

static void ds3_done(void *ctx, int err, struct xdr_dec *d)
{
	struct rpc *r = ctx;
	r->rc = err;
	if (!err) {
		uint8_t ab[2048];
		struct xdr_arena ar;
		xdr_arena_init(&ar, ab, sizeof(ab), 64u << 10);
		d->arena = &ar;
		if (r->write) {
			WRITE3res w;
			if (xdr_dec_WRITE3res(d, &w) < 0) {
				r->rc = -EBADMSG;
			} else if ((r->status = w.status) == NFS3_OK) {
				r->count = w.u.resok.count > r->len ? r->len : w.u.resok.count;
				r->committed = w.u.resok.committed;
				memcpy(r->verf, w.u.resok.verf, 8);
			}
		} else {
			READ3res rr;
			if (xdr_dec_READ3res(d, &rr) < 0)
				r->rc = -EBADMSG;
			else if ((r->status = rr.status) == NFS3_OK)
				rpc_take_data(r, rr.u.resok.data, rr.u.resok.count, rr.u.resok.eof);
		}
		xdr_arena_release(&ar);
	}
	rpc_done(r);
}

/* PUTFH + READ/WRITE replies (data server v4 and MDS). */
static void v4_done(void *ctx, int rc, COMPOUND4res *res)
{
	struct rpc *r = ctx;
	r->rc = rc > 0 ? ffc_call_errno(rc) : rc;
	if (!rc) {
		nfs_opnum4 op = r->write ? OP_WRITE : OP_READ;
		nfs_resop4 *o = ffc_resop(res, 1, op);
		r->status = ffc_opstatus(res, 1, op);
		if (!r->status && !o) {
			r->status = NFS4ERR_SERVERFAULT;
		} else if (!r->status && r->write) {
			const WRITE4resok *w = &o->u.opwrite.u.resok4;
			r->count = w->count > r->len ? r->len : w->count;
			r->committed = w->committed;
			memcpy(r->verf, w->writeverf, 8);
		} else if (!r->status) {
			const READ4resok *rd = &o->u.opread.u.resok4;
			rpc_take_data(r, rd->data, UINT32_MAX, rd->eof); /* v4: the data's length */
		}
	}
	rpc_done(r);
}

static void io_init(struct io *io)
{
	memset(io, 0, sizeof(*io));
	pthread_mutex_init(&io->mu, NULL);
	pthread_cond_init(&io->cv, NULL);
}

static void io_release(struct io *io)
{
	pthread_cond_destroy(&io->cv);
	pthread_mutex_destroy(&io->mu);
}

/* Wait until fewer than 'below' RPCs are out. */
static void io_wait(struct io *io, unsigned below)
{
	pthread_mutex_lock(&io->mu);
	while (io->inflight >= below)
		pthread_cond_wait(&io->cv, &io->mu);
	pthread_mutex_unlock(&io->mu);
}

/* Send r (its result fields are reset); completion through rpc_done. */
static void rpc_issue(struct rpc *r)
{
	struct ffc *c = r->f->c;
	r->rc = 0;
	r->status = 0;
	r->count = 0;
	r->eof = false;
	r->sunk = 0;
	/* a READ's data straight into the caller's buffer */
	r->sink = (struct nfsd_sink){ .buf = r->rbuf,
				      .len = r->len,
				      .locate = r->kind == RK_DS3 ? locate_read3 : locate_read4,
				      .got = &r->sunk };
	pthread_mutex_lock(&r->io->mu);
	r->io->inflight++;
	pthread_mutex_unlock(&r->io->mu);
	int rc;
	if (r->kind == RK_DS3) {
		WRITE3args wa;
		READ3args ra;
		struct nfsd_call_opts o = {
		    .prog = NFS_PROGRAM,
		    .vers = NFS_V3,
		    .timeout_ms = c->o.ds_timeout_ms,
		    .flavor = NFSD_AUTH_SYS,
		    .uid = r->t.uid,
		    .gid = r->t.gid,
		};
		nfs_fh3 fh = {.data = xdr_opaque_of(r->t.fh, r->t.fhlen)};
		if (r->write) {
			wa = (WRITE3args){.file = fh,
					  .offset = r->off,
					  .count = r->len,
					  .stable = r->stable,
					  .data = xdr_opaque_of(r->wbuf, r->len)};
			o.proc = NFSPROC3_WRITE;
			o.args = &wa;
		} else {
			ra = (READ3args){.file = fh, .offset = r->off, .count = r->len};
			o.proc = NFSPROC3_READ;
			o.args = &ra;
			o.sink = &r->sink;
		}
		o.enc_args = xdr_desc_NFS_PROGRAM_NFS_V3.procs[o.proc].enc_arg;
		unsigned n = r->dev->nclnt;
		struct nfsd_clnt *cl =
		    n ? r->dev->clnt[atomic_fetch_add(&r->dev->rr, 1) % n] : NULL;
		rc = cl ? nfsd_clnt_call_async(cl, &o, ds3_done, r) : -ENOTCONN;
	} else {
		struct nfs41c_session *s = c->sess;
		nfs_argop4 ops[2] = {{.argop = OP_PUTFH}};
		stateid4 sid = r->osid;
		if (r->kind == RK_DS4) {
			ops[0].u.opputfh.object = xdr_opaque_of(r->t.fh, r->t.fhlen);
			sid = r->t.sid;
			int err = 0;
			s = ffc_dev_session(c, r->dev, r->t.uid, r->t.gid, &err);
			if (!s) {
				r->rc = err ? err : -EIO;
				rpc_done(r);
				return;
			}
		} else {
			ops[0].u.opputfh.object = xdr_opaque_of(r->f->fh, r->f->fhlen);
			atomic_store(&c->last_call_ms, ffc_now_ms());
		}
		if (r->write) {
			ops[1].argop = OP_WRITE;
			ops[1].u.opwrite = (WRITE4args){.stateid = sid,
							.offset = r->off,
							.stable = r->stable,
							.data = xdr_opaque_of(r->wbuf, r->len)};
		} else {
			ops[1].argop = OP_READ;
			ops[1].u.opread =
			    (READ4args){.stateid = sid, .offset = r->off, .count = r->len};
		}
		/* a 4.2 device is spoken to in 4.2 (RFC 7862 §1) */
		unsigned fl = r->kind == RK_DS4 && r->dev->minor == 2 ? NFS41C_MINOR2 : 0;
		rc = nfs41c_compound_async_sink(s, NULL, fl, ops, 2, r->write ? NULL : &r->sink,
						v4_done, r);
	}
	if (rc) {
		r->rc = rc > 0 ? ffc_call_errno(rc) : rc;
		rpc_done(r);
	}
}

/* Send r and wait for it alone. */
static void rpc_sync(struct rpc *r)
{
	struct io io;
	io_init(&io);
	struct io *saved = r->io;
	r->io = &io;
	rpc_issue(r);
	io_wait(&io, 1);
	r->io = saved;
	io_release(&io);
}

static bool rpc_retryable(const struct rpc *r)
{
	if (r->rc)
		return false;
	if (r->kind == RK_DS3)
		return r->status == NFS3ERR_JUKEBOX;
	return r->status == NFS4ERR_DELAY || r->status == NFS4ERR_GRACE;
}

/* ------------------------------------------------------------------ I/O */

/* Where the next chunk of an I/O goes: ntargets data servers (a write goes
 * to every mirror) or the MDS (ntargets 0). */
struct route {
	unsigned n;
	struct rpc tmpl[FFC_MIRRORS_MAX];
	uint32_t len;
};

/* Data servers for [pos, pos + want) from segment s; -errno when a device
 * cannot be used (recorded for the LAYOUTRETURN). */
static int route_ds(struct ffc_inode *f, struct seg *s, bool write, uint64_t pos, uint64_t want,
		    struct route *r)
{
	struct ffc *c = f->c;
	uint64_t n = s->end - pos < want ? s->end - pos : want;
	unsigned idx = 0;
	unsigned width = s->m[0].nds;
	if (width > 1) {
		/* RFC 8435 §6: sparse striping, DS index (L / U) mod W */
		idx = (unsigned)((pos / s->stripe_unit) % width);
		uint64_t left = s->stripe_unit - pos % s->stripe_unit;
		if (left < n)
			n = left;
	}
	uint32_t io = c->o.io_size;
	unsigned order[FFC_MIRRORS_MAX];
	unsigned nm = 0;
	if (write && !(s->flags & FF_FLAGS_WRITE_ONE_MIRROR)) {
		for (unsigned i = 0; i < s->nmirrors; i++)
			order[nm++] = i;
	} else {
		/* one mirror: the most efficient (RFC 8435 §5.1) */
		unsigned best = 0;
		for (unsigned i = 1; i < s->nmirrors; i++)
			if (s->m[i].ds[idx].efficiency > s->m[best].ds[idx].efficiency)
				best = i;
		order[nm++] = best;
	}
	r->n = 0;
	for (unsigned k = 0; k < nm; k++) {
		const struct dsref *t = &s->m[order[k]].ds[idx];
		struct ffc_dev *d = ffc_dev_get(c, t->devid);
		if (!d && !write && s->nmirrors > 1) {
			/* a read may use another mirror */
			for (unsigned i = 0; i < s->nmirrors && !d; i++) {
				if (i == order[k])
					continue;
				t = &s->m[i].ds[idx];
				d = ffc_dev_get(c, t->devid);
			}
		}
		if (!d) {
			/* Linux: NXIO against the device (OP_ILLEGAL), then MDS I/O */
			ffc_ioerr_add(f, pos, n, t->devid, NFS4ERR_NXIO, OP_ILLEGAL);
			f->lo_bad[ffc_iomode_idx(s->iomode)] = true;
			return -ENXIO;
		}
		uint32_t lim = write ? d->wsize : d->rsize;
		if (lim < io)
			io = lim;
		struct rpc *p = &r->tmpl[r->n++];
		memset(p, 0, sizeof(*p));
		p->kind = d->vers == 3 ? RK_DS3 : RK_DS4;
		p->dev = d;
		p->t = *t;
		if (d->tight) {
			p->t.uid = c->o.uid;
			p->t.gid = c->o.gid;
		}
		p->seg_flags = s->flags;
	}
	r->len = (uint32_t)(n < io ? n : io);
	return 0;
}

static void route_mds(struct ffc_inode *f, bool write, uint64_t want, struct route *r)
{
	uint32_t io = write ? f->c->mds_wsize : f->c->mds_rsize;
	if (f->c->o.io_size < io)
		io = f->c->o.io_size;
	r->n = 0;
	r->len = (uint32_t)(want < io ? want : io);
}

/*
 * Route the chunk at pos: a cached segment, else LAYOUTGET, else the MDS.
 * *mds_only is set once this I/O has fallen back, so the rest of it does
 * not ask again.
 */
static void route_get(struct ffc_inode *f, const stateid4 *osid, bool write, uint64_t pos,
		      uint64_t end, bool *mds_only, struct route *r)
{
	int iomode = write ? LAYOUTIOMODE4_RW : LAYOUTIOMODE4_READ;
	uint64_t want = end - pos;
	/* a recalled layout takes no new I/O (RFC 8881 §12.5.5.1) */
	if (!*mds_only && ffc_layouts_on(f, iomode) && !f->lo_bad[ffc_iomode_idx(iomode)] &&
	    !atomic_load(&f->recall)) {
		struct seg *s = ffc_seg_find(f, pos, write);
		if (!s && !ffc_layoutget(f, osid, iomode, pos, want))
			s = ffc_seg_find(f, pos, write);
		if (s && !route_ds(f, s, write, pos, want, r))
			return;
		atomic_fetch_add(&f->c->fallbacks, 1);
		*mds_only = true;
	}
	route_mds(f, write, want, r);
}

/* Account one successful RPC; a write's verifier joins its commit set. */
static void rpc_account(struct ffc_inode *f, struct rpc *r)
{
	struct ffc *c = f->c;
	if (r->kind == RK_MDS) {
		atomic_fetch_add(r->write ? &c->mds_write_bytes : &c->mds_read_bytes, r->count);
		if (r->write && r->committed == UNSTABLE4) {
			if (f->mds_have_verf && memcmp(f->mds_verf, r->verf, 8) && !f->err)
				f->err = -EIO; /* the MDS's data server restarted */
			memcpy(f->mds_verf, r->verf, 8);
			f->mds_have_verf = true;
			f->mds_unstable = true;
		}
	} else {
		atomic_fetch_add(r->write ? &c->ds_write_bytes : &c->ds_read_bytes, r->count);
		atomic_fetch_add(r->write ? &r->dev->write_bytes : &r->dev->read_bytes, r->count);
		atomic_fetch_add(r->write ? &r->dev->writes : &r->dev->reads, 1);
		if (r->write) {
			if (r->committed == UNSTABLE4) {
				struct dirty *d = ffc_dirty_get(f, r);
				if (!d) {
					if (!f->err)
						f->err = -ENOMEM;
				} else {
					if (d->need_commit && memcmp(d->verf, r->verf, 8) &&
					    !f->err)
						f->err = -EIO; /* restarted between writes */
					memcpy(d->verf, r->verf, 8);
					d->need_commit = true;
				}
			}
			/* LAYOUTCOMMIT even after FILE_SYNC (RFC 8435 §2.3.1, erratum 2751) */
			if (!(r->seg_flags & FF_FLAGS_NO_LAYOUTCOMMIT)) {
				if (r->off + r->count > f->lwb)
					f->lwb = r->off + r->count;
				f->need_layoutcommit = true;
			}
		}
	}
	if (r->write && r->off + r->count > f->size)
		f->size = r->off + r->count;
}

/* Retry r alone while the server says later (JUKEBOX / DELAY). */
static void rpc_retry(struct rpc *r)
{
	unsigned wait = 100;
	for (int t = 0; t < 30 && rpc_retryable(r); t++) {
		ffc_sleep_ms(wait);
		wait = wait * 2 > 2000 ? 2000 : wait * 2;
		rpc_sync(r);
	}
}

/*
 * Finish one RPC of an I/O: retries, short transfers continued on the same
 * server, a read's end of file.  Returns 0, 1 when a data server failed
 * (r is then to be redone through the MDS), or -errno for the caller.
 */
static int rpc_finish(struct ffc_inode *f, struct rpc *r)
{
	for (;;) {
		if (rpc_retryable(r))
			rpc_retry(r);
		if (r->rc || r->status) {
			if (r->kind == RK_MDS)
				return r->rc ? r->rc : ffc_nfs4_errno(r->status);
			atomic_fetch_add(&f->c->ds_errors, 1);
			atomic_fetch_add(&r->dev->errors, 1);
			nfsstat4 st = r->rc ? NFS4ERR_NXIO : (nfsstat4)r->status;
			if (r->rc)
				atomic_store(&r->dev->unavail_until,
					     ffc_now_ms() + FFC_FAIL_RETRY_MS);
			ffc_ioerr_add(f, r->off, r->len, r->dev->id, st,
				      r->write ? OP_WRITE : OP_READ);
			f->lo_bad[r->write ? 1 : 0] = true;
			return 1;
		}
		rpc_account(f, r);
		if (r->count >= r->len)
			return 0;
		if (!r->write && (r->eof || r->count == 0)) {
			/* past the object's end but inside the file: a hole */
			memset(r->rbuf + r->count, 0, r->len - r->count);
			return 0;
		}
		if (r->write && r->count == 0) {
			if (r->kind == RK_MDS)
				return -EIO;
			r->status = NFS4ERR_IO; /* no progress: a data-server failure */
			continue;
		}
		/* short: continue with the rest */
		r->off += r->count;
		r->len -= r->count;
		if (r->write)
			r->wbuf += r->count;
		else
			r->rbuf += r->count;
		rpc_sync(r);
	}
}

/* Redo a failed data-server RPC through the MDS (writes FILE_SYNC, as
 * Linux resends them to the MDS stable). */
static int rpc_redo_mds(struct ffc_inode *f, struct rpc *r)
{
	struct ffc *c = f->c;
	uint64_t pos = r->off, end = r->off + r->len;
	atomic_fetch_add(&c->fallbacks, 1);
	while (pos < end) {
		struct rpc m;
		memset(&m, 0, sizeof(m));
		m.f = f;
		m.osid = r->osid;
		m.kind = RK_MDS;
		m.write = r->write;
		m.stable = FILE_SYNC4;
		m.off = pos;
		uint32_t io = r->write ? c->mds_wsize : c->mds_rsize;
		m.len = (uint32_t)(end - pos < io ? end - pos : io);
		if (r->write)
			m.wbuf = r->wbuf + (pos - r->off);
		else
			m.rbuf = r->rbuf + (pos - r->off);
		rpc_sync(&m);
		int rc = rpc_finish(f, &m);
		if (rc)
			return rc < 0 ? rc : -EIO;
		pos += m.len;
	}
	return 0;
}

/*
 * One pread/pwrite of an open (osid its stateid): RPCs of at most the
 * server's size, up to 'inflight' out at a time, each to the data servers
 * of the segment that covers it or to the MDS.  After a data-server error:
 * the rest goes to the MDS, what was written is flushed, the layouts of
 * that iomode are returned with the error, and the failed RPCs are redone
 * through the MDS.  f->mu is taken to route and to account, never while
 * waiting for the data RPCs.
 */
static int io_run(struct ffc_inode *f, const stateid4 *osid, bool write, uint8_t *buf, uint64_t len,
		  uint64_t off)
{
	struct ffc *c = f->c;
	struct io io;
	io_init(&io);
	struct rpc **v = NULL;
	size_t nv = 0, capv = 0;
	uint64_t pos = off, end = off + len;
	bool mds_only = false;
	int ret = 0;
	pthread_mutex_lock(&f->mu);
	f->io_active++;
	pthread_mutex_unlock(&f->mu);
	while (pos < end) {
		if (atomic_load(&io.ds_failed))
			mds_only = true;
		struct route r;
		pthread_mutex_lock(&f->mu);
		route_get(f, osid, write, pos, end, &mds_only, &r);
		pthread_mutex_unlock(&f->mu);
		unsigned nt = r.n ? r.n : 1;
		for (unsigned k = 0; k < nt; k++) {
			struct rpc *p = malloc(sizeof(*p));
			if (nv == capv) {
				size_t cap = capv ? capv * 2 : 64;
				struct rpc **nvv = realloc(v, cap * sizeof(*nvv));
				if (nvv) {
					v = nvv;
					capv = cap;
				}
			}
			if (!p || nv == capv) {
				free(p);
				ret = -ENOMEM;
				goto wait;
			}
			if (r.n) {
				*p = r.tmpl[k];
			} else {
				memset(p, 0, sizeof(*p));
				p->kind = RK_MDS;
			}
			p->io = &io;
			p->f = f;
			p->osid = *osid;
			p->write = write;
			p->stable = UNSTABLE4;
			p->off = pos;
			p->len = r.len;
			if (write)
				p->wbuf = buf + (pos - off);
			else
				p->rbuf = buf + (pos - off);
			v[nv++] = p;
			io_wait(&io, c->o.inflight);
			rpc_issue(p);
		}
		pos += r.len;
	}
wait:
	io_wait(&io, 1);
	/* results, in order; failed data-server RPCs wait for the return */
	pthread_mutex_lock(&f->mu);
	bool ds_err = false;
	for (size_t i = 0; i < nv; i++) {
		int rc = rpc_finish(f, v[i]);
		if (rc < 0 && !ret)
			ret = rc;
		if (rc == 1)
			ds_err = true;
		else
			v[i]->kind = RK_MDS; /* done: not to be redone */
	}
	if (ds_err || f->lo_bad[0] || f->lo_bad[1]) {
		int iomode = f->lo_bad[0] && f->lo_bad[1] ? LAYOUTIOMODE4_ANY
			     : f->lo_bad[1]		  ? LAYOUTIOMODE4_RW
							  : LAYOUTIOMODE4_READ;
		ffc_return_locked(f, iomode);
		for (size_t i = 0; i < nv && !ret; i++) {
			if (v[i]->kind == RK_MDS)
				continue;
			/* one redo per chunk, not one per mirror */
			bool dup = false;
			for (size_t k = 0; k < i; k++)
				if (v[k]->kind != RK_MDS && v[k]->off == v[i]->off)
					dup = true;
			if (!dup)
				ret = rpc_redo_mds(f, v[i]);
		}
	}
	/* a recall that came meanwhile is answered now that nothing is out */
	f->io_active--;
	ffc_recall_check(f);
	pthread_mutex_unlock(&f->mu);
	for (size_t i = 0; i < nv; i++)
		free(v[i]);
	free(v);
	io_release(&io);
	return ret;
}

/* ------------------------------------------------------------ file calls */

/* The inode of fh, with one more open counted; a new one when none is. */
static struct ffc_inode *ino_open(struct ffc *c, const nfs_fh4 *fh)
{
	pthread_mutex_lock(&c->mu);
	struct ffc_inode *f;
	for (f = c->inodes; f; f = f->next)
		if (f->fhlen == fh->len && !memcmp(f->fh, fh->val, fh->len))
			break;
	if (f) {
		f->opens++;
		ffc_ino_get(f);
		pthread_mutex_unlock(&c->mu);
		return f;
	}
	f = calloc(1, sizeof(*f));
	if (f) {
		f->c = c;
		atomic_init(&f->ref, 1);
		pthread_mutex_init(&f->mu, NULL);
		memcpy(f->fh, fh->val, fh->len);
		f->fhlen = fh->len;
		f->opens = 1;
		f->next = c->inodes;
		if (c->inodes)
			c->inodes->prev = f;
		c->inodes = f;
	}
	pthread_mutex_unlock(&c->mu);
	return f;
}

/* One open fewer; true when it was the last (f is then off the list, and
 * its layouts are to be returned). */
static bool ino_close(struct ffc_inode *f)
{
	struct ffc *c = f->c;
	pthread_mutex_lock(&c->mu);
	bool last = --f->opens == 0;
	if (last) {
		if (f->prev)
			f->prev->next = f->next;
		else if (c->inodes == f)
			c->inodes = f->next;
		if (f->next)
			f->next->prev = f->prev;
		f->next = f->prev = NULL;
	}
	pthread_mutex_unlock(&c->mu);
	return last;
}

static void file_free(struct ffc_file *f)
{
	pthread_mutex_destroy(&f->mu);
	free(f);
}

/* CLOSE (RFC 8881 §18.2) of an open. */
static int close_open(struct ffc *c, const uint8_t *fh, uint32_t fhlen, const stateid4 *sid,
		      struct xdr_arena *ar)
{
	nfs_argop4 ops[2] = {{.argop = OP_PUTFH}, {.argop = OP_CLOSE}};
	ops[0].u.opputfh.object = xdr_opaque_of(fh, fhlen);
	ops[1].u.opclose = (CLOSE4args){.seqid = 0, .open_stateid = *sid};
	COMPOUND4res res;
	int rc = ffc_mds_call(c, ops, 2, &res, ar);
	return rc ? rc : ffc_nfs4_errno(ffc_opstatus(&res, 1, OP_CLOSE));
}

struct ffc_file *ffc_open(struct ffc *c, const char *path, int flags, uint32_t mode, int *err)
{
	int acc = flags & FFC_ACCMODE;
	if (acc == FFC_ACCMODE || (flags & FFC_EXCL && !(flags & FFC_CREAT))) {
		*err = -EINVAL;
		return NULL;
	}
	struct walk w;
	int rc = walk_build(&w, path);
	if (rc) {
		*err = rc;
		return NULL;
	}
	struct ffc_file *f = calloc(1, sizeof(*f));
	if (!f) {
		*err = -ENOMEM;
		return NULL;
	}
	f->c = c;
	f->acc = acc;
	pthread_mutex_init(&f->mu, NULL);
	pthread_mutex_lock(&c->mu);
	snprintf(f->owner, sizeof(f->owner), "ffc-open-%u", ++c->nopen_seq);
	pthread_mutex_unlock(&c->mu);

	struct xdr_arena ar;
	ffc_arena_new(&ar);
	unsigned iopen = w.n;
	nfs_argop4 *o = &w.ops[w.n++];
	*o = (nfs_argop4){.argop = OP_OPEN};
	OPEN4args *oa = &o->u.opopen;
	oa->seqid = 0;
	oa->share_access = acc == FFC_RDONLY   ? OPEN4_SHARE_ACCESS_READ
			   : acc == FFC_WRONLY ? OPEN4_SHARE_ACCESS_WRITE
					       : OPEN4_SHARE_ACCESS_BOTH;
	oa->share_deny = OPEN4_SHARE_DENY_NONE;
	oa->owner.clientid = c->info.clientid;
	oa->owner.owner = xdr_opaque_of(f->owner, strlen(f->owner));
	uint32_t cw[3];
	uint8_t cv[12];
	if (flags & FFC_CREAT) {
		oa->openhow.opentype = OPEN4_CREATE;
		createhow4 *h = &oa->openhow.u.how;
		if (flags & FFC_EXCL) {
			/* RFC 8881 §18.16.3: EXCLUSIVE4_1, verifier and attributes */
			h->mode = EXCLUSIVE4_1;
			if (getrandom(h->u.ch_createboth.cva_verf, 8, 0) != 8) {
				uint64_t t = ffc_now_ms() ^ (uint64_t)getpid() << 32;
				memcpy(h->u.ch_createboth.cva_verf, &t, 8);
			}
			h->u.ch_createboth.cva_attrs = attrs_create(cw, cv, false, 0, true, mode);
		} else {
			/* UNCHECKED4; size 0 truncates an existing file */
			h->mode = UNCHECKED4;
			h->u.createattrs = attrs_create(cw, cv, flags & FFC_TRUNC, 0, true, mode);
		}
	} else {
		oa->openhow.opentype = OPEN4_NOCREATE;
	}
	oa->claim.claim = CLAIM_NULL;
	oa->claim.u.file = xdr_opaque_of(w.last, w.lastlen);
	unsigned igetfh = w.n;
	w.ops[w.n++] = (nfs_argop4){.argop = OP_GETFH};
	uint32_t tw[3], gw[3];
	uint8_t tv[12];
	int isetattr = -1;
	if ((flags & FFC_TRUNC) && !(flags & FFC_CREAT)) {
		isetattr = (int)w.n;
		nfs_argop4 *s = &w.ops[w.n++];
		*s = (nfs_argop4){.argop = OP_SETATTR};
		s->u.opsetattr.stateid = current_stateid;
		s->u.opsetattr.obj_attributes = attrs_create(tw, tv, true, 0, false, 0);
	}
	unsigned igetattr = w.n;
	unsigned want[] = {FATTR4_TYPE, FATTR4_CHANGE, FATTR4_SIZE};
	nfs_argop4 *g = &w.ops[w.n++];
	*g = (nfs_argop4){.argop = OP_GETATTR};
	g->u.opgetattr.attr_request = ffc_bm_of(gw, want, 3);
	COMPOUND4res res;
	rc = ffc_mds_call(c, w.ops, w.n, &res, &ar);
	if (rc)
		goto fail;
	/* a LOOKUP of the walk that failed is the COMPOUND's status */
	nfsstat4 st = ffc_opstatus(&res, iopen, OP_OPEN);
	if (st) {
		rc = ffc_nfs4_errno(st);
		goto fail;
	}
	const OPEN4resok *ok = &ffc_resop(&res, iopen, OP_OPEN)->u.opopen.u.resok4;
	f->open_sid = ok->stateid;
	nfs_resop4 *gf = ffc_resop(&res, igetfh, OP_GETFH);
	const nfs_fh4 *fh = gf && !gf->u.opgetfh.status ? &gf->u.opgetfh.u.resok4.object : NULL;
	if (!fh || !fh->len || fh->len > NFS4_FHSIZE) {
		/* an open we cannot name: nothing to CLOSE it with */
		rc = fh ? -EPROTO : ffc_nfs4_errno(ffc_opstatus(&res, igetfh, OP_GETFH));
		goto fail;
	}
	if (ok->delegation.delegation_type == OPEN_DELEGATE_READ ||
	    ok->delegation.delegation_type == OPEN_DELEGATE_WRITE) {
		/* we keep no delegations: give it back at once */
		nfs_argop4 dops[2] = {{.argop = OP_PUTFH}, {.argop = OP_DELEGRETURN}};
		dops[0].u.opputfh.object = *fh;
		dops[1].u.opdelegreturn.deleg_stateid =
		    ok->delegation.delegation_type == OPEN_DELEGATE_READ
			? ok->delegation.u.read.stateid
			: ok->delegation.u.write.stateid;
		COMPOUND4res dr;
		ffc_mds_call(c, dops, 2, &dr, &ar);
	}
	if (isetattr >= 0 && (st = ffc_opstatus(&res, (unsigned)isetattr, OP_SETATTR))) {
		rc = ffc_nfs4_errno(st);
		goto close;
	}
	struct attrs at;
	if ((st = ffc_opstatus(&res, igetattr, OP_GETATTR)))
		rc = ffc_nfs4_errno(st);
	else
		rc = ffc_attrs_decode(
		    &ffc_resop(&res, igetattr, OP_GETATTR)->u.opgetattr.u.resok4.obj_attributes,
		    &at, &ar);
	if (!rc && at.type != NF4REG)
		rc = at.type == NF4DIR ? -EISDIR : -EINVAL;
	if (rc)
		goto close;
	if (!(f->ino = ino_open(c, fh))) {
		rc = -ENOMEM;
		goto close;
	}
	pthread_mutex_lock(&f->ino->mu);
	/* our own writes not yet LAYOUTCOMMITted may be past the MDS's size */
	if (at.size > f->ino->size || !f->ino->need_layoutcommit || isetattr >= 0 ||
	    (flags & FFC_TRUNC))
		f->ino->size = at.size;
	pthread_mutex_unlock(&f->ino->mu);
	xdr_arena_release(&ar);
	return f;
close:
	close_open(c, fh->val, fh->len, &f->open_sid, &ar);
fail:
	xdr_arena_release(&ar);
	file_free(f);
	*err = rc ? rc : -EIO;
	return NULL;
}

ssize_t ffc_pwrite(struct ffc_file *f, const void *buf, size_t len, uint64_t off)
{
	if (f->acc == FFC_RDONLY)
		return -EBADF;
	if (!len)
		return 0;
	if (off + len < off || len > SSIZE_MAX)
		return -EFBIG;
	pthread_mutex_lock(&f->mu);
	pthread_mutex_lock(&f->ino->mu);
	ffc_recall_check(f->ino);
	pthread_mutex_unlock(&f->ino->mu);
	int rc = io_run(f->ino, &f->open_sid, true, (uint8_t *)(uintptr_t)buf, len, off);
	pthread_mutex_unlock(&f->mu);
	return rc < 0 ? rc : (ssize_t)len;
}

/* The size from the MDS (GETATTR), when a read reaches past what we know
 * (ino->mu held). */
static int size_refresh(struct ffc_inode *f)
{
	struct xdr_arena ar;
	ffc_arena_new(&ar);
	uint32_t w[3];
	unsigned want[] = {FATTR4_SIZE};
	nfs_argop4 ops[2] = {{.argop = OP_PUTFH}, {.argop = OP_GETATTR}};
	ops[0].u.opputfh.object = xdr_opaque_of(f->fh, f->fhlen);
	ops[1].u.opgetattr.attr_request = ffc_bm_of(w, want, 1);
	COMPOUND4res res;
	int rc = ffc_mds_call(f->c, ops, 2, &res, &ar);
	if (!rc) {
		nfsstat4 st = ffc_opstatus(&res, 1, OP_GETATTR);
		struct attrs at;
		rc = ffc_nfs4_errno(st);
		if (!rc)
			rc = ffc_attrs_decode(
			    &ffc_resop(&res, 1, OP_GETATTR)->u.opgetattr.u.resok4.obj_attributes,
			    &at, &ar);
		/* our own writes not yet LAYOUTCOMMITted count too */
		if (!rc && ffc_attr_has(&at, FATTR4_SIZE) &&
		    (at.size > f->size || !f->need_layoutcommit))
			f->size = at.size;
	}
	xdr_arena_release(&ar);
	return rc;
}

ssize_t ffc_pread(struct ffc_file *f, void *buf, size_t len, uint64_t off)
{
	if (f->acc == FFC_WRONLY)
		return -EBADF;
	if (!len)
		return 0;
	if (off + len < off || len > SSIZE_MAX)
		return -EINVAL;
	pthread_mutex_lock(&f->mu);
	struct ffc_inode *ino = f->ino;
	pthread_mutex_lock(&ino->mu);
	ffc_recall_check(ino);
	int rc = 0;
	if (off + len > ino->size)
		rc = size_refresh(ino);
	uint64_t size = ino->size;
	pthread_mutex_unlock(&ino->mu);
	uint64_t n = 0;
	if (!rc && off < size) {
		n = size - off < len ? size - off : len;
		rc = io_run(ino, &f->open_sid, false, buf, n, off);
	}
	pthread_mutex_unlock(&f->mu);
	return rc < 0 ? rc : (ssize_t)n;
}

/* After a flush, return what an error left marked for return (ino->mu). */
static void return_bad(struct ffc_inode *f)
{
	if (f->lo_bad[0] || f->lo_bad[1])
		ffc_return_locked(f, f->lo_bad[0] && f->lo_bad[1] ? LAYOUTIOMODE4_ANY
				     : f->lo_bad[1]		  ? LAYOUTIOMODE4_RW
								  : LAYOUTIOMODE4_READ);
}

int ffc_fsync(struct ffc_file *f)
{
	pthread_mutex_lock(&f->mu);
	pthread_mutex_lock(&f->ino->mu);
	ffc_recall_check(f->ino);
	int rc = ffc_flush_locked(f->ino);
	return_bad(f->ino);
	pthread_mutex_unlock(&f->ino->mu);
	pthread_mutex_unlock(&f->mu);
	return rc;
}

/* flush; at the last close of the file LAYOUTRETURN of everything; CLOSE. */
int ffc_close(struct ffc_file *f)
{
	struct ffc *c = f->c;
	struct ffc_inode *ino = f->ino;
	pthread_mutex_lock(&f->mu);
	pthread_mutex_lock(&ino->mu);
	int rc = ffc_flush_locked(ino);
	return_bad(ino);
	if (ino_close(ino)) {
		atomic_store(&ino->recall, 0);
		if (ino->lo_valid || ino->nsegs)
			ffc_layoutreturn(ino, LAYOUTIOMODE4_ANY);
		ino->closed = true;
	}
	pthread_mutex_unlock(&ino->mu);
	struct xdr_arena ar;
	ffc_arena_new(&ar);
	int crc = close_open(c, ino->fh, ino->fhlen, &f->open_sid, &ar);
	xdr_arena_release(&ar);
	pthread_mutex_unlock(&f->mu);
	ffc_ino_put(ino);
	file_free(f);
	return rc ? rc : crc;
}

uint64_t ffc_file_size(const struct ffc_file *f)
{
	pthread_mutex_lock(&f->ino->mu);
	uint64_t size = f->ino->size;
	pthread_mutex_unlock(&f->ino->mu);
	return size;
}

/* PUTROOTFH, LOOKUPs, then op on the parent with the last name. */
static int name_op(struct ffc *c, const char *path, nfs_argop4 op, nfs_opnum4 opnum)
{
	struct walk w;
	int rc = walk_build(&w, path);
	if (rc)
		return rc;
	if (opnum == OP_CREATE)
		op.u.opcreate.objname = xdr_opaque_of(w.last, w.lastlen);
	else
		op.u.opremove.target = xdr_opaque_of(w.last, w.lastlen);
	unsigned i = w.n;
	w.ops[w.n++] = op;
	struct xdr_arena ar;
	ffc_arena_new(&ar);
	COMPOUND4res res;
	rc = ffc_mds_call(c, w.ops, w.n, &res, &ar);
	if (!rc)
		rc = ffc_nfs4_errno(ffc_opstatus(&res, i, opnum));
	xdr_arena_release(&ar);
	return rc;
}

int ffc_mkdir(struct ffc *c, const char *path, uint32_t mode)
{
	uint32_t w[3];
	uint8_t v[12];
	nfs_argop4 op = {.argop = OP_CREATE};
	op.u.opcreate.objtype.type = NF4DIR;
	op.u.opcreate.createattrs = attrs_create(w, v, false, 0, true, mode);
	return name_op(c, path, op, OP_CREATE);
}

int ffc_remove(struct ffc *c, const char *path)
{
	return name_op(c, path, (nfs_argop4){.argop = OP_REMOVE}, OP_REMOVE);
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
