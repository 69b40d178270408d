/* SPDX-License-Identifier: MIT */
/*
 * ffclient's I/O engine: the RPCs of one pread or pwrite, to the data
 * servers (NFSv3 or NFSv4.1) or the MDS, routed by layout segment, with
 * retries, short transfers continued, and the fallback to the MDS after a
 * data-server error.  Locks: ffclient_impl.h.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/ffclient_impl.h"

/* ------------------------------------------------------------- RPCs */

static void rpc_done(struct rpc *r)
{
	struct io *io = r->io;
	if (r->kind != RK_MDS &&
	    (r->rc || (r->status && r->status != NFS4ERR_DELAY && r->status != NFS3ERR_JUKEBOX)))
		atomic_store(&io->ds_failed, true);
	pthread_mutex_lock(&io->mu);
	io->inflight--;
	if (io->inflight < io->below)
		pthread_cond_signal(&io->cv);
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
	struct peek k = {rec, have, 0, false};
	bool ok = peek_reply_ok(&k) && peek32(&k) == 0;
	uint32_t attrs = peek32(&k);
	ok = ok && attrs <= 1;
	if (attrs == 1)
		peek_skip(&k, 84); /* fattr3 */
	peek32(&k);		   /* count */
	ok = ok && peek32(&k) <= 1;
	return peek_result(&k, ok, off, len);
}

/* COMPOUND4res of SEQUENCE, PUTFH, READ, all OK: READ4resok's data. */
static int locate_read4(const uint8_t *rec, size_t have, size_t rec_len, size_t *off, size_t *len)
{
	(void)rec_len;
	struct peek k = {rec, have, 0, false};
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
	io->below = below;
	while (io->inflight >= below)
		pthread_cond_wait(&io->cv, &io->mu);
	io->below = 0;
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
	r->sink = (struct nfsd_sink){.buf = r->rbuf,
				     .len = r->len,
				     .locate = r->kind == RK_DS3 ? locate_read3 : locate_read4,
				     .got = &r->sunk};
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
int ffc_io_run(struct ffc_inode *f, const stateid4 *osid, bool write, uint8_t *buf, uint64_t len,
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
