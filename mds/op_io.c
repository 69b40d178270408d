/* SPDX-License-Identifier: MIT */
/*
 * File data through the MDS: READ, WRITE and COMMIT (RFC 8881 §18.22,
 * §18.32, §18.3) and NFSv4.2's ALLOCATE, DEALLOCATE, SEEK and READ_PLUS
 * (RFC 7862 §15.1, §15.4, §15.11, §15.10).
 *
 * The data lives on the data servers (mds/data.h, "File objects"): the MDS
 * proxies each request to the data server holding the file's object,
 * through the connection dsreg.c keeps, with the request's protection
 * (the hop, mds/io.h): over NFSv3 (RFC 1813) as the object's fence uid/gid
 * (AUTH_SYS) for an AUTH_SYS request; for an RPCSEC_GSS one, over NFSv4.1
 * under RPCSEC_GSS as the MDS's principal with a capability stateid
 * (mds/io_gss.c, ctl/cap.h), krb5p for krb5p and krb5i for krb5 and krb5i,
 * where the data server takes GSS.  Where it does not, krb5p gets DELAY
 * (-ENOKEY, hop_pick), never plaintext; krb5 and krb5i go as AUTH_SYS.  Clients with layouts go to the data servers
 * themselves; this path serves the others and the Linux client's fallbacks.
 * With [mds] data_io = refuse, READ, WRITE, COMMIT and READ_PLUS answer
 * NFS4ERR_PNFS_NO_LAYOUT: the client must do its I/O through a layout.
 * NFSv4.0 clients have no layouts: their I/O is always served here.
 *
 * The size is the MDS's (mds_attr.size); an object may be shorter (it is
 * made lazily, and DEALLOCATE or a truncation may cut it), and what it does
 * not hold below the size reads as zeros.  A WRITE moves the size (up only:
 * MDS_SET_SIZE_MAX), mtime and change in the store, durably, before it
 * replies, stable or not; so COMMIT only has the data servers to flush.
 *
 * Write verifiers are the data servers' (a data server restart changes its
 * verifier, so clients resend what they had not committed): for a file on
 * one data server, its verifier; for a file on several, a hash of every
 * one's (the same for WRITE and COMMIT, so a client never sees them
 * differ while no data server restarts); a file with no object yet
 * answers with a verifier of this MDS instance.
 *
 * Errors: a data server that is down, unreachable or times out is
 * NFS4ERR_DELAY, never a hang (calls time out, see dsreg.c), unless the
 * file is mirrored: then reads go to a mirror that answers, and a write or
 * COMMIT goes on without the mirror it cannot reach, which is marked stale
 * first (mds_data_stale_mark: durable before the reply; refused when no
 * current copy would be left) and is neither read nor written again until
 * a resilver brings it up to date; an object on a
 * data server without NFSv3 cannot be proxied: NFS4ERR_PNFS_NO_LAYOUT.  A
 * data server refusing our uid/gid (NFS3ERR_ACCES) means the file was
 * fenced meanwhile, or a SETFENCE missed that data server: the pair is read
 * again, or set again, and the call retried once.
 *
 * The file's layout (layout/policy.h) is followed: a request is cut where
 * a segment (or, striped, a stripe unit) ends, and each piece goes to the
 * data server holding it, one per mirror.  Writes go to every mirror,
 * reads to the first that answers.  A segment not laid out reads as zeros
 * and is laid out by the first write reaching it.
 */
#include "config.h"

#include "nfs3_prot.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/cap.h"
#include "ctl/client.h"
#include "ctl/fh.h"
#include "mds/data.h"
#include "mds/dsreg.h"
#include "mds/ec.h"
#include "mds/io.h"
#include "mds/io_gss.h"
#include "mds/layout.h"
#include "mds/mds_impl.h"
#include "mds/space.h"
#include "mds/state.h"
#include "nfsd/clnt_gss.h"
#include "nfsd/metrics.h"

#define DEALLOC_ZERO_MAX (1ull << 30) /* interior DEALLOCATE written as zeros, at most */

/* A file's objects, as the MDS calls them. */
struct obj {
	struct braid_mds *mds;
	const struct mds_attr *a;
	struct mds_file_map map;
	struct ds_objid id;
	uint8_t fh[DS_FH_EC_SIZE];
	uint32_t fhlen;	   /* DS_FH_SIZE, or DS_FH_EC_SIZE: reconstructing (ec_read) */
	uint32_t uid, gid; /* the fence: AUTH_SYS of our NFSv3 calls, and capabilities' */
	enum mds_hop hop;  /* the request's (mds_io_hop) */
};

static int obj_init(struct obj *o, struct braid_mds *mds, const struct mds_attr *a)
{
	o->mds = mds;
	o->a = a;
	o->hop = MDS_HOP_SYS;
	mds_data_objid(a, &o->id);
	ds_fh_make(&mds->key, &o->id, o->fh);
	o->fhlen = DS_FH_SIZE;
	int rc = mds_data_map(mds, a->ino, &o->map);
	mds_data_fence_epoch(mds, a, o->map.epoch, &o->uid, &o->gid);
	return rc;
}

/*
 * A data server refused our pair (NFS3ERR_ACCES): the file was fenced
 * since we read its map (take the new pair), or a SETFENCE missed that
 * data server (set the pair again).  0: worth one more try.
 */
static int obj_refence(struct obj *o)
{
	struct mds_file_map m;
	int rc = mds_data_map(o->mds, o->a->ino, &m);
	if (rc)
		return rc;
	if (m.epoch != o->map.epoch) {
		o->map.epoch = m.epoch;
		mds_data_fence_epoch(o->mds, o->a, m.epoch, &o->uid, &o->gid);
		return 0;
	}
	rc = mds_data_fence_apply(o->mds, o->a);
	return rc == -EAGAIN ? -EACCES : rc;
}

/* The verifier of a write or commit to a file with no object. */
static void mds_verf(const struct braid_mds *mds, uint8_t v[8])
{
	for (int i = 0; i < 8; i++)
		v[i] = (uint8_t)(mds->boot_sec >> (56 - 8 * i));
}

/* Verifiers data servers answered during one request. */
struct verfs {
	unsigned n;
	uint32_t id[MDS_LAYOUT_MAX_DS * 4];
	uint8_t v[MDS_LAYOUT_MAX_DS * 4][8];
};

static void verfs_note(struct verfs *vs, uint32_t id, const uint8_t v[8])
{
	unsigned i = 0;
	while (i < vs->n && vs->id[i] != id)
		i++;
	if (i == vs->n) {
		if (vs->n == sizeof(vs->id) / sizeof(vs->id[0]))
			return;
		vs->id[vs->n++] = id;
	}
	memcpy(vs->v[i], v, 8);
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/*
 * The file's verifier (see the top): over every data server holding a
 * segment of it, each one's as answered now, else as it registered.
 */
static void file_verf(const struct obj *o, const struct verfs *vs, uint8_t out[8])
{
	uint32_t ids[64];
	int n = mds_data_ds_list(o->mds, o->a->ino, ids, 64);
	if (n <= 0) {
		/* no list (an error): what answered is all we know */
		n = (int)vs->n;
		memcpy(ids, vs->id, vs->n * sizeof(ids[0]));
	}
	if (n == 0) {
		mds_verf(o->mds, out);
		return;
	}
	qsort(ids, (size_t)n, sizeof(ids[0]), u32_cmp);
	uint8_t b[64 * 12];
	for (int k = 0; k < n; k++) {
		const uint8_t *v = NULL;
		for (unsigned i = 0; i < vs->n && !v; i++)
			if (vs->id[i] == ids[k])
				v = vs->v[i];
		struct mds_ds_info info;
		if (!v && !mds_dsreg_get(o->mds, ids[k], &info))
			v = info.boot_verifier;
		xdr_put32(b + 12 * k, ids[k]);
		if (v)
			memcpy(b + 12 * k + 4, v, 8);
		else
			memset(b + 12 * k + 4, 0, 8);
		if (n == 1) {
			memcpy(out, b + 4, 8);
			return;
		}
	}
	static const struct siphash_key k = {{0x6272616964766572ULL, 0x662d6d6972726f72ULL}};
	uint64_t h = siphash24(&k, b, (size_t)n * 12);
	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(h >> (56 - 8 * i));
}

/* ------------------------------------------------------------- the hop */

enum mds_hop mds_io_hop(const struct nfsd_cred *cred)
{
	if (cred->flavor != NFSD_RPCSEC_GSS)
		return MDS_HOP_SYS;
	return cred->gss_service == NFSD_GSS_SVC_PRIVACY ? MDS_HOP_KRB5P : MDS_HOP_KRB5I;
}

/*
 * The hop o's calls to dc take: o's where dc takes RPCSEC_GSS; where it
 * does not, krb5 and krb5i requests go as AUTH_SYS (as before the
 * Kerberos hop: the back end must then be private), a krb5p request never
 * does: -ENOKEY (DELAY, JUKEBOX), logged once a minute at most.
 */
static int hop_pick(const struct obj *o, const struct mds_ds_conn *dc, enum mds_hop *h)
{
	*h = o->hop;
	if (o->hop == MDS_HOP_SYS || (dc->wsize41g && o->mds->set.keytab[0]))
		return 0;
	if (o->hop != MDS_HOP_KRB5P) {
		*h = MDS_HOP_SYS;
		return 0;
	}
	static _Atomic uint64_t logged;
	uint64_t now = nfsd_now_ns(), then = atomic_load(&logged);
	if ((!then || now - then > 60ull * 1000000000) &&
	    atomic_compare_exchange_strong(&logged, &then, now))
		mds_log("data server %u takes no RPCSEC_GSS (no [ds] keytab): krb5p I/O through "
			"the MDS to its objects waits (DELAY), never in clear",
			dc->id);
	return -ENOKEY;
}

static void hop_count(struct braid_mds *mds, enum mds_hop h)
{
	nfsd_metric_add(mds->m_proxy_calls[h], 1);
}

static int nfs4_errno(nfsstat4 s)
{
	switch (s) {
	case NFS4_OK:
		return 0;
	case NFS4ERR_STALE:
	case NFS4ERR_BADHANDLE:
	case NFS4ERR_NOENT:
		return -ESTALE;
	case NFS4ERR_ACCESS:
	case NFS4ERR_PERM:
		return -EACCES; /* a capability of an old fence */
	case NFS4ERR_NOSPC:
		return -ENOSPC;
	case NFS4ERR_DQUOT:
		return -EDQUOT;
	case NFS4ERR_FBIG:
		return -EFBIG;
	case NFS4ERR_DELAY:
		return -EAGAIN;
	case NFS4ERR_WRONGSEC:
		return -ENOKEY;
	default:
		return -EIO;
	}
}

/* The capability for iomode on o's object (ctl/cap.h), as LAYOUTGET makes
 * for a tightly coupled client. */
static stateid4 obj_cap(const struct obj *o, enum ctl_cap_iomode iomode)
{
	stateid4 s = {.seqid = CTL_CAP_SEQID};
	ctl_cap_make(&o->mds->key.cap, &o->id, o->uid, o->gid, iomode, s.other);
	return s;
}

/* PUTFH of o's object and op, under RPCSEC_GSS (hop h): *r the op's result. */
static int gss_call(const struct obj *o, struct mds_ds_conn *dc, enum mds_hop h,
		    const nfs_argop4 *op, struct xdr_arena *ar, nfs_resop4 **r)
{
	nfs_argop4 ops[2] = {{.argop = OP_PUTFH}, *op};
	ops[0].u.opputfh.object = xdr_opaque_of(o->fh, o->fhlen);
	COMPOUND4res res;
	int rc = mds_io_gss_compound(o->mds, dc, h, ops, 2, &res, ar);
	if (rc || (rc = nfs4_errno(res.status)))
		return rc;
	if (res.resarray.len != 3 || res.resarray.val[2].resop != op->argop)
		return -EIO;
	*r = &res.resarray.val[2];
	return 0;
}

/* ------------------------------------------------------------- NFSv3 */

static int nfs3_errno(nfsstat3 s)
{
	switch (s) {
	case NFS3_OK:
		return 0;
	case NFS3ERR_STALE:
	case NFS3ERR_BADHANDLE:
	case NFS3ERR_NOENT:
		return -ESTALE; /* the object is missing */
	case NFS3ERR_ACCES:
		return -EACCES; /* not our fence pair (any more) */
	case NFS3ERR_NOSPC:
		return -ENOSPC;
	case NFS3ERR_DQUOT:
		return -EDQUOT;
	case NFS3ERR_FBIG:
		return -EFBIG;
	case NFS3ERR_JUKEBOX:
		return -EAGAIN;
	default:
		return -EIO;
	}
}

/*
 * One NFSv3 call to the object as its fence.  Transport trouble (timeout,
 * connection lost or refused) is -EAGAIN; RPC-level refusals -EIO.
 */
static int nfs3_call(const struct obj *o, struct mds_ds_conn *dc, uint32_t proc, const void *args,
		     void *res, struct xdr_arena *ar)
{
	const struct xdr_proc_desc *d = &xdr_desc_NFS_PROGRAM_NFS_V3.procs[proc];
	struct nfsd_call_opts co = {
	    .prog = NFS_PROGRAM,
	    .vers = NFS_V3,
	    .proc = proc,
	    .enc_args = d->enc_arg,
	    .args = args,
	    .timeout_ms = dc->timeout_ms,
	    .flavor = NFSD_AUTH_SYS,
	    .uid = o->uid,
	    .gid = o->gid,
	};
	int rc = nfsd_clnt_call(dc->clnt, &co, d->dec_res, res, ar);
	if (rc > 0) {
		mds_log("data server %u refused %s: rpc error %#x", dc->id, d->name, (unsigned)rc);
		return -EIO;
	}
	if (rc == -ENOMEM || rc == -EBADMSG)
		return rc == -EBADMSG ? -EIO : rc;
	return rc ? -EAGAIN : 0;
}

static nfs_fh3 obj_fh3(const struct obj *o)
{
	nfs_fh3 h = {.data = xdr_opaque_of(o->fh, o->fhlen)};
	return h;
}

static int ds_read(const struct obj *o, struct mds_ds_conn *dc, enum mds_hop h, uint64_t off,
		   uint32_t len, struct xdr_arena *ar, xdr_opaque *data, bool *eof)
{
	hop_count(o->mds, h);
	if (h != MDS_HOP_SYS) {
		nfs_argop4 op = {.argop = OP_READ};
		op.u.opread.stateid = obj_cap(o, CTL_CAP_READ);
		op.u.opread.offset = off;
		op.u.opread.count = len;
		nfs_resop4 *r;
		int rc = gss_call(o, dc, h, &op, ar, &r);
		if (rc)
			return rc;
		const READ4resok *ok = &r->u.opread.u.resok4;
		if (ok->data.len > len)
			return -EIO;
		*data = ok->data;
		*eof = ok->eof;
		return 0;
	}
	READ3args a = {.file = obj_fh3(o), .offset = off, .count = len};
	READ3res r;
	int rc = nfs3_call(o, dc, NFSPROC3_READ, &a, &r, ar);
	if (rc || (rc = nfs3_errno(r.status)))
		return rc;
	if (r.u.resok.data.len > len)
		return -EIO;
	*data = r.u.resok.data;
	*eof = r.u.resok.eof;
	return 0;
}

static int ds_write(const struct obj *o, struct mds_ds_conn *dc, enum mds_hop h, uint64_t off,
		    const uint8_t *p, uint32_t len, uint32_t stable, uint32_t *count,
		    uint32_t *committed, uint8_t verf[8])
{
	hop_count(o->mds, h);
	if (h != MDS_HOP_SYS) {
		nfs_argop4 op = {.argop = OP_WRITE};
		op.u.opwrite.stateid = obj_cap(o, CTL_CAP_RW);
		op.u.opwrite.offset = off;
		op.u.opwrite.stable = (stable_how4)stable;
		op.u.opwrite.data = xdr_opaque_of(p, len);
		struct xdr_arena ar;
		xdr_arena_init(&ar, NULL, 0, 64u << 10);
		nfs_resop4 *r;
		int rc = gss_call(o, dc, h, &op, &ar, &r);
		if (!rc) {
			const WRITE4resok *ok = &r->u.opwrite.u.resok4;
			if (ok->count > len || ok->committed > FILE_SYNC4) {
				rc = -EIO;
			} else {
				*count = ok->count;
				*committed = (uint32_t)ok->committed;
				memcpy(verf, ok->writeverf, 8);
			}
		}
		xdr_arena_release(&ar);
		return rc;
	}
	WRITE3args a = {.file = obj_fh3(o),
			.offset = off,
			.count = len,
			.stable = (stable_how)stable,
			.data = xdr_opaque_of(p, len)};
	WRITE3res r;
	uint8_t abuf[1024];
	struct xdr_arena ar;
	xdr_arena_init(&ar, abuf, sizeof(abuf), 64u << 10);
	int rc = nfs3_call(o, dc, NFSPROC3_WRITE, &a, &r, &ar);
	if (!rc && !(rc = nfs3_errno(r.status))) {
		if (r.u.resok.count > len || r.u.resok.committed > FILE_SYNC) {
			rc = -EIO;
		} else {
			*count = r.u.resok.count;
			*committed = (uint32_t)r.u.resok.committed;
			memcpy(verf, r.u.resok.verf, 8);
		}
	}
	xdr_arena_release(&ar);
	return rc;
}

static int ds_commit(const struct obj *o, struct mds_ds_conn *dc, enum mds_hop h, uint64_t off,
		     uint32_t count, uint8_t verf[8])
{
	hop_count(o->mds, h);
	if (h != MDS_HOP_SYS) {
		nfs_argop4 op = {.argop = OP_COMMIT};
		op.u.opcommit.offset = off;
		op.u.opcommit.count = count;
		struct xdr_arena ar;
		xdr_arena_init(&ar, NULL, 0, 64u << 10);
		nfs_resop4 *r;
		int rc = gss_call(o, dc, h, &op, &ar, &r);
		if (!rc)
			memcpy(verf, r->u.opcommit.u.resok4.writeverf, 8);
		xdr_arena_release(&ar);
		return rc;
	}
	COMMIT3args a = {.file = obj_fh3(o), .offset = off, .count = count};
	COMMIT3res r;
	uint8_t abuf[1024];
	struct xdr_arena ar;
	xdr_arena_init(&ar, abuf, sizeof(abuf), 64u << 10);
	int rc = nfs3_call(o, dc, NFSPROC3_COMMIT, &a, &r, &ar);
	if (!rc && !(rc = nfs3_errno(r.status)))
		memcpy(verf, r.u.resok.verf, 8);
	xdr_arena_release(&ar);
	return rc;
}

/* ------------------------------------------------------------- the data path */

/* A connection to a data server we proxy to over NFSv3. */
static int conn_get(struct obj *o, uint32_t id, struct mds_ds_conn **dc)
{
	int rc;
	if (!(*dc = mds_ds_conn_get(o->mds, id, &rc)))
		return rc;
	if (!(*dc)->wsize3) {
		mds_ds_conn_put(*dc);
		*dc = NULL;
		return -ENOTSUP;
	}
	return 0;
}

/* Segment n of the file into *seg (laid out when create), cached in *cur. */
static int seg_of(struct obj *o, uint64_t n, bool create, struct mds_layout_seg *seg, uint64_t *cur)
{
	if (*cur == n)
		return 0;
	int rc;
	if (create) {
		struct mds_file_map m;
		rc = mds_data_segment(o->mds, o->a, n, true, NULL, 0, &m, seg);
		if (!rc)
			o->map.laid_out = true;
	} else {
		rc = mds_layout_get(o->mds->store, o->a->ino, n, seg);
	}
	*cur = rc ? UINT64_MAX : n;
	return rc;
}

/* Mirrors of a segment as recorded (a short legacy record has fewer). */
static unsigned seg_mirrors(const struct obj *o, const struct mds_layout_seg *seg)
{
	unsigned m = seg->nds / o->map.pol.stripes;
	return m < o->map.pol.mirrors ? m : o->map.pol.mirrors;
}

/*
 * [off, off + want) of the object from one data server, in rsize pieces:
 * into dst when given, else into arena memory (the reply's, referenced
 * without a copy when one call covers it).  *out is want bytes (zeros
 * past the object's end) and *ndata how many came from the object.
 */
static int read_from(const struct obj *o, struct mds_ds_conn *dc, uint64_t off, uint32_t want,
		     struct xdr_arena *ar, uint8_t *dst, xdr_opaque *out, uint32_t *ndata)
{
	enum mds_hop h;
	int hrc = hop_pick(o, dc, &h);
	if (hrc)
		return hrc;
	uint32_t rsize = h == MDS_HOP_SYS ? dc->rsize3 : dc->rsize41g;
	if (!rsize)
		return -ENOTSUP;
	uint8_t *buf = dst;
	uint32_t done = 0;
	bool eof = false;
	while (done < want && !eof) {
		uint32_t n = want - done < rsize ? want - done : rsize;
		xdr_opaque d;
		int rc;
		if (!buf && n == want) {
			/* one call covers it: decode into the reply's arena, no copy */
			if ((rc = ds_read(o, dc, h, off, n, ar, &d, &eof)))
				return rc;
			if (d.len == want) {
				*out = d;
				*ndata = want;
				return 0;
			}
			if (!(buf = xdr_arena_alloc(ar, want)))
				return -ENOMEM;
			memcpy(buf, d.val, d.len);
		} else {
			if (!buf && !(buf = xdr_arena_alloc(ar, want)))
				return -ENOMEM;
			struct xdr_arena tmp;
			xdr_arena_init(&tmp, NULL, 0, (size_t)n + 65536);
			rc = ds_read(o, dc, h, off + done, n, &tmp, &d, &eof);
			if (!rc)
				memcpy(buf + done, d.val, d.len);
			xdr_arena_release(&tmp);
			if (rc)
				return rc;
		}
		if (!d.len)
			break;
		done += d.len;
	}
	if (dst && done < want)
		memset(dst + done, 0, want - done);
	*out = xdr_opaque_of(buf, want);
	*ndata = done;
	return 0;
}


static bool ec_holder_up(void *arg, uint32_t id)
{
	struct mds_ds_info info;
	return !mds_dsreg_get(arg, id, &info) && info.up && !info.lost;
}

/*
 * A sealed erasure-coded file's piece whose data server cannot serve it:
 * read through a surviving holder of its stripe with a reconstructing
 * handle (mds/ec.h), over NFSv3 as the READ ids, as a degraded READ
 * layout would have the client do.  -ENOENT: not sealed (nothing to
 * rebuild from).  A Kerberos request's hop must be RPCSEC_GSS (mds/io.h),
 * which reconstructing handles do not take yet: -EAGAIN (DELAY, JUKEBOX)
 * until the server is back or the chunk rebuilt, never its bytes in clear.
 */
static int ec_read(const struct obj *o, uint64_t off, uint32_t want, struct xdr_arena *ar,
		   uint8_t *dst, xdr_opaque *out, uint32_t *ndata)
{
	if (o->hop != MDS_HOP_SYS)
		return -EAGAIN;
	uint32_t id;
	int rc = mds_ec_substitute(o->mds, o->a, &o->map, layout_seg_index(&o->map.pol, off),
				   ec_holder_up, o->mds, &id);
	if (rc)
		return rc;
	struct obj e = *o;
	e.hop = MDS_HOP_SYS;
	e.fhlen = DS_FH_EC_SIZE;
	ds_fh_make_ec(&o->mds->key, &o->id, o->a->ino, e.fh);
	mds_data_fence_read(o->mds, o->a, o->map.epoch, &e.uid, &e.gid);
	struct mds_ds_conn *dc = mds_ds_conn_get(o->mds, id, &rc);
	if (!dc)
		return rc;
	rc = read_from(&e, dc, off, want, ar, dst, out, ndata);
	mds_ds_conn_put(dc);
	return rc;
}

/* One piece (one data server per mirror) from the first mirror that answers. */
static int piece_read(struct obj *o, const struct mds_layout_seg *seg, uint64_t off, uint32_t want,
		      struct xdr_arena *ar, uint8_t *dst, xdr_opaque *out, uint32_t *ndata)
{
	int rc = -EAGAIN;
	bool refenced = false;
	unsigned nm = seg_mirrors(o, seg);
	for (unsigned m = 0; m < nm; m++) {
		uint32_t id = seg->ds[layout_ds_slot(&o->map.pol, m, off)];
		if (mds_data_map_stale(&o->map, id))
			continue; /* misses writes: never read */
		struct mds_ds_conn *dc = mds_ds_conn_get(o->mds, id, &rc);
		if (!dc)
			continue;
		rc = read_from(o, dc, off, want, ar, dst, out, ndata);
		if (rc == -EACCES && !refenced) {
			refenced = true;
			if (!(rc = obj_refence(o)))
				rc = read_from(o, dc, off, want, ar, dst, out, ndata);
		}
		mds_ds_conn_put(dc);
		/* a mirror that cannot answer, failed its checksums, or cannot
		 * be reached at the request's protection sends us to the next */
		if (rc != -EAGAIN && rc != -ENOTSUP && rc != -EIO && rc != -ENOKEY)
			break;
	}
	if (rc == -EAGAIN) {
		/* none answered: if every current copy is on a data server lost
		 * for good, this waits for nothing (mds/resilver.h): EIO */
		bool gone = true;
		for (unsigned m = 0; m < nm && gone; m++) {
			uint32_t id = seg->ds[layout_ds_slot(&o->map.pol, m, off)];
			struct mds_ds_info info;
			if (!mds_data_map_stale(&o->map, id))
				gone = !mds_dsreg_get(o->mds, id, &info) && info.lost;
		}
		if (gone)
			rc = -EIO;
	}
	if ((rc == -EAGAIN || rc == -EIO || mds_ds_unreachable(rc)) && layout_is_ec(&o->map.pol)) {
		int erc = ec_read(o, off, want, ar, dst, out, ndata);
		if (erc != -ENOENT)
			rc = erc;
	}
	return rc;
}

/* [off, off + want) of a's file (want > 0, within the size), as read_from. */
static int data_read(struct braid_mds *mds, const struct mds_attr *a, enum mds_hop hop,
		     uint64_t off, uint32_t want, struct xdr_arena *ar, xdr_opaque *out,
		     uint32_t *ndata)
{
	struct obj o;
	*ndata = 0;
	int rc = obj_init(&o, mds, a);
	if (rc)
		return rc;
	o.hop = hop;
	uint64_t end = off + want, cur = UINT64_MAX;
	/* one piece: possibly without a copy; else pieces gathered in buf */
	bool one = !o.map.laid_out || layout_piece_end(&o.map.pol, off) >= end;
	uint8_t *buf = one ? NULL : xdr_arena_alloc(ar, want);
	if (!one && !buf)
		return -ENOMEM;
	for (uint64_t p = off; o.map.laid_out && p < end;) {
		uint64_t pe = layout_piece_end(&o.map.pol, p);
		pe = pe < end ? pe : end;
		struct mds_layout_seg seg;
		rc = seg_of(&o, layout_seg_index(&o.map.pol, p), false, &seg, &cur);
		uint32_t got = 0;
		xdr_opaque d;
		if (!rc)
			rc = piece_read(&o, &seg, p, (uint32_t)(pe - p), ar,
					buf ? buf + (p - off) : NULL, &d, &got);
		if (rc == -ENOENT || rc == -ESTALE) {
			/* no segment (yet), or its object is missing: zeros */
			rc = 0;
			got = 0;
			if (one)
				break;
		} else if (rc) {
			return rc;
		} else if (one) {
			*out = d;
			*ndata = got;
			return 0;
		}
		if (got)
			*ndata = (uint32_t)(p - off) + got;
		p = pe;
	}
	if (one && !(buf = xdr_arena_alloc(ar, want)))
		return -ENOMEM;
	*out = xdr_opaque_of(buf, want); /* arena memory is zeroed */
	return 0;
}

struct wres {
	uint32_t count;
	uint32_t committed;
	uint8_t verf[8];
};

/* [off, off + len) of one piece to one data server, in wsize pieces. */
static int write_to(struct obj *o, uint32_t id, uint64_t off, const uint8_t *p, uint32_t len,
		    uint32_t stable, uint32_t *count, uint32_t *committed, struct verfs *vs)
{
	struct mds_ds_conn *dc;
	int rc = conn_get(o, id, &dc);
	if (rc)
		return rc;
	enum mds_hop h;
	if ((rc = hop_pick(o, dc, &h))) {
		mds_ds_conn_put(dc);
		return rc;
	}
	uint32_t wsize = h == MDS_HOP_SYS ? dc->wsize3 : dc->wsize41g;
	bool repaired = false, refenced = false;
	uint32_t done = 0;
	uint8_t v[8];
	while (!rc && done < len) {
		uint32_t n = len - done < wsize ? len - done : wsize, cnt, cm;
		rc = ds_write(o, dc, h, off + done, p + done, n, stable, &cnt, &cm, v);
		if (rc == -ESTALE && !repaired) {
			/* the map was recorded but the object is missing */
			repaired = true;
			if (!(rc = mds_data_object_repair(o->mds, o->a, id)))
				rc = ds_write(o, dc, h, off + done, p + done, n, stable, &cnt, &cm,
					      v);
		}
		if (rc == -EACCES && !refenced) {
			refenced = true;
			if (!(rc = obj_refence(o)))
				rc = ds_write(o, dc, h, off + done, p + done, n, stable, &cnt, &cm,
					      v);
		}
		if (rc)
			break;
		verfs_note(vs, id, v);
		*committed = cm < *committed ? cm : *committed;
		done += cnt;
		if (cnt < n)
			break; /* a short write */
	}
	mds_ds_conn_put(dc);
	*count = done;
	return done ? 0 : rc;
}

/* ids[0..n) of o's file missed a write the other mirrors took: stale
 * (mds_data_stale_mark), and the layouts naming them recalled. */
static int mirrors_lost(struct obj *o, const uint32_t *ids, unsigned n)
{
	bool newly;
	int rc = mds_data_stale_mark(o->mds, o->a->ino, ids, n, &newly);
	if (rc)
		return rc;
	if (newly)
		mds_layout_recall_file(o->mds, o->a->ino);
	/* later pieces of this write skip them too */
	mds_data_map(o->mds, o->a->ino, &o->map);
	return 0;
}

/* Writes p to every current mirror of the segments it spans (laid out if
 * need be); a mirror whose server cannot be reached goes stale. */
static int data_write(struct braid_mds *mds, const struct mds_attr *a, enum mds_hop hop,
		      uint64_t off, const uint8_t *p, uint32_t len, uint32_t stable, struct wres *w)
{
	struct obj o;
	int rc = obj_init(&o, mds, a);
	/* within the write gate (mds_io_write): an erasure-coded file is
	 * unsealed before its bytes change (mds/ec.h) */
	if (!rc)
		rc = mds_ec_write_begin(mds, a->ino, &o.map.pol);
	if (rc)
		return rc;
	o.hop = hop;
	struct verfs vs = {0};
	uint64_t end = off + len, cur = UINT64_MAX;
	uint32_t done = 0, committed = FILE_SYNC4;
	for (uint64_t q = off; !rc && q < end;) {
		uint64_t qe = layout_piece_end(&o.map.pol, q);
		qe = qe < end ? qe : end;
		struct mds_layout_seg seg;
		if ((rc = seg_of(&o, layout_seg_index(&o.map.pol, q), true, &seg, &cur)))
			break;
		uint32_t n = (uint32_t)(qe - q), least = n;
		unsigned nm = seg_mirrors(&o, &seg), nok = 0;
		uint32_t down[LAYOUT_MIRRORS_MAX];
		unsigned ndown = 0;
		int first = 0;
		for (unsigned m = 0; m < nm; m++) {
			uint32_t cnt = 0, id = seg.ds[layout_ds_slot(&o.map.pol, m, q)];
			if (mds_data_map_stale(&o.map, id))
				continue; /* brought up to date later, whole */
			int r = write_to(&o, id, q, p + (q - off), n, stable, &cnt, &committed, &vs);
			if (mds_ds_unreachable(r) && nm > 1) {
				down[ndown++] = id;
				continue;
			}
			if (r) {
				first = first ? first : r;
				continue;
			}
			nok++;
			least = cnt < least ? cnt : least;
		}
		/* mirrors that could not be reached miss this write: stale,
		 * durably, before it is acknowledged (refused if that would
		 * leave no current copy: then the write fails, DELAY) */
		if (!first && ndown)
			first = mirrors_lost(&o, down, ndown);
		if ((rc = first ? first : nok ? 0 : -EAGAIN))
			break;
		done += least;
		if (least < n)
			break; /* a short write: report what all of them took */
		q = qe;
	}
	if (!done)
		return rc ? rc : -EIO;
	w->count = done;
	w->committed = committed;
	file_verf(&o, &vs, w->verf);
	return 0;
}

static int data_commit(struct braid_mds *mds, const struct mds_attr *a, enum mds_hop hop,
		       uint64_t off, uint32_t count, uint8_t out[8])
{
	struct obj o;
	int rc = obj_init(&o, mds, a);
	if (rc)
		return rc;
	o.hop = hop;
	uint32_t ids[64];
	int n = mds_data_ds_list(mds, a->ino, ids, 64);
	if (n < 0)
		return n;
	struct verfs vs = {0};
	uint32_t down[64];
	unsigned ndown = 0;
	for (int k = 0; !rc && k < n; k++) {
		struct mds_ds_conn *dc;
		uint8_t v[8];
		if (mds_data_map_stale(&o.map, ids[k]))
			continue; /* holds nothing current to flush */
		/* a mirror's server gone (below, or unreachable): what it held
		 * unstable is lost there, and its mirrors hold it (committed
		 * here), so it goes stale */
		if ((rc = conn_get(&o, ids[k], &dc))) {
			if (mds_ds_unreachable(rc) && o.map.pol.mirrors > 1) {
				down[ndown++] = ids[k];
				rc = 0;
				continue;
			}
			break;
		}
		enum mds_hop h;
		if (!(rc = hop_pick(&o, dc, &h))) {
			rc = ds_commit(&o, dc, h, off, count, v);
			if (rc == -EACCES && !(rc = obj_refence(&o)))
				rc = ds_commit(&o, dc, h, off, count, v);
		}
		mds_ds_conn_put(dc);
		if (rc == -ESTALE) {
			/* the object is missing: nothing of ours to flush there */
			mds_verf(mds, v);
			rc = 0;
		}
		if (mds_ds_unreachable(rc) && o.map.pol.mirrors > 1) {
			down[ndown++] = ids[k];
			rc = 0;
			continue;
		}
		if (!rc)
			verfs_note(&vs, ids[k], v);
	}
	if (!rc && ndown)
		rc = mirrors_lost(&o, down, ndown);
	if (!rc)
		file_verf(&o, &vs, out);
	return rc;
}

/* The size of the object on one data server (-ESTALE: missing). */
static int obj_size(struct braid_mds *mds, const struct obj *o, struct mds_ds_conn *dc,
		    uint64_t *size)
{
	struct ds_ctl_stat st;
	int rc = ds_ctl_stat(dc->clnt, &mds->key, &o->id, &st);
	if (rc == -ENOENT)
		return -ESTALE;
	if (!rc)
		*size = st.size;
	return rc;
}

/* --------------------------------------------------------------- checks */

/* The anonymous (all zeros) and READ bypass (all ones) stateids, §8.2.3. */
static bool stateid_special(const stateid4 *s)
{
	uint8_t b = s->other[0];
	if (b != 0 && b != 0xff)
		return false;
	for (size_t i = 1; i < sizeof(s->other); i++)
		if (s->other[i] != b)
			return false;
	return b == 0 ? s->seqid == 0 : s->seqid == 0xffffffffu;
}

/* io_status: errors below the protocol line as the data ops report them. */
static nfsstat4 io_status(int err)
{
	switch (err) {
	case -ENOTSUP:
		return NFS4ERR_PNFS_NO_LAYOUT; /* an object we cannot reach over NFSv3 */
	case -EAGAIN:
	case -ENOKEY: /* a krb5p request, a data server hop we cannot seal */
		return NFS4ERR_DELAY;
	case -ENOENT:
		return NFS4ERR_STALE; /* the inode went away meanwhile */
	default:
		return mds_nfs4_status(err);
	}
}

/*
 * The current filehandle as a regular file this request may do I/O on:
 * its stateid (RFC 8881 §8.2.2, through op_state.c), and for the special
 * stateids, which carry no open, the file's permissions.
 */
static nfsstat4 io_begin(struct nfs41_compound *c, const stateid4 *sid_in, bool write,
			 struct mds_attr *a)
{
	struct mds_cred cred;
	nfsstat4 st = mds_cfh(c, NULL, a, &cred);
	if (st || (st = mds_reg_file(a)))
		return st;
	if (write && (!cred.rw || cred.pseudo))
		return NFS4ERR_ROFS;
	stateid4 sid = *sid_in;
	if ((st = nfs41_compound_stateid(c, &sid)) ||
	    (st = mds_state_check_io(c, &sid, a->ino, write)))
		return st;
	if (stateid_special(&sid)) {
		uint32_t want = write ? ACCESS4_MODIFY : ACCESS4_READ | ACCESS4_EXECUTE;
		if (!mds_access(&cred, a, want))
			return NFS4ERR_ACCESS;
	}
	return NFS4_OK;
}

/* data_io = refuse is for clients that have layouts: an NFSv4.0 client
 * (no pNFS) is always proxied, as NFSv3's are (mds/nfs3.c). */
static bool refused(struct nfs41_compound *c)
{
	return c->minorversion != 0 && mds_of(c)->set.data_io == MDS_DATA_REFUSE;
}

/* Data changed (and maybe the size): mtime and change move, durably, and
 * space_used follows (mds/space.h). */
static int file_touch(struct braid_mds *mds, uint64_t ino, uint64_t size_max)
{
	struct mds_setattr_args sa = {.ino = ino, .mask = MDS_SET_MTIME_NOW};
	if (size_max) {
		sa.mask |= MDS_SET_SIZE_MAX;
		sa.size = size_max;
	}
	int rc = mds_inode_setattr(mds->store, &sa, NULL);
	mds_space_note(mds, ino);
	return rc;
}

/* ---------------------------------------------------------------- READ */

static uint32_t read_want(uint64_t off, uint32_t count, uint64_t size)
{
	if (off >= size)
		return 0;
	uint64_t n = count < MDS_IO_MAX ? count : MDS_IO_MAX;
	return (uint32_t)(n < size - off ? n : size - off);
}

int mds_io_read(struct braid_mds *mds, const struct mds_attr *at, enum mds_hop hop, uint64_t off,
		uint32_t count, struct xdr_arena *ar, xdr_opaque *data, bool *eof)
{
	uint32_t want = read_want(off, count, at->size), ndata;
	*data = xdr_opaque_of(NULL, 0);
	if (want) {
		int rc = data_read(mds, at, hop, off, want, ar, data, &ndata);
		if (rc)
			return rc;
	}
	/* RFC 8881 §18.22.3, RFC 1813 §3.3.6: eof when the read reaches the end */
	*eof = off + want >= at->size;
	return 0;
}

static nfsstat4 op_read(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	READ4args *a = &arg->u.opread;
	READ4resok *ok = &res->u.opread.u.resok4;
	struct mds_attr at;
	nfsstat4 st = io_begin(c, &a->stateid, false, &at);
	if (st)
		return st;
	if (refused(c))
		return NFS4ERR_PNFS_NO_LAYOUT;
	bool eof;
	int rc = mds_io_read(mds_of(c), &at, mds_io_hop(&c->req->cred), a->offset, a->count,
			     c->arena, &ok->data, &eof);
	if (rc)
		return io_status(rc);
	ok->eof = eof;
	/* RFC 8267: over RDMA, into the client's write chunk */
	nfsd_req_payload(c->req, ok->data.val, ok->data.len);
	return NFS4_OK;
}

static uint32_t read_bound(const nfs_argop4 *arg)
{
	uint32_t n = arg->u.opread.count < MDS_IO_MAX ? arg->u.opread.count : MDS_IO_MAX;
	return 16 + n + 4; /* resop, status, eof, length, data and its padding */
}

/* --------------------------------------------------------------- WRITE */

int mds_io_write(struct braid_mds *mds, const struct mds_attr *at, enum mds_hop hop, uint64_t off,
		 const uint8_t *p, uint32_t len, uint32_t stable, struct mds_io_wres *res)
{
	if (off > MDS_FILE_MAX || len > MDS_FILE_MAX - off)
		return -EFBIG;
	if (!len) {
		res->count = 0;
		res->committed = FILE_SYNC4;
		mds_verf(mds, res->verf);
		return 0;
	}
	struct wres w;
	mds_data_write_gate(mds, at->ino, MDS_GATE_WRITE);
	int rc = data_write(mds, at, hop, off, p, len, stable, &w);
	mds_data_write_gate(mds, at->ino, MDS_GATE_OPEN);
	if (!rc)
		rc = file_touch(mds, at->ino, off + w.count);
	if (rc)
		return rc;
	res->count = w.count;
	res->committed = w.committed;
	memcpy(res->verf, w.verf, 8);
	return 0;
}

static nfsstat4 op_write(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	WRITE4args *a = &arg->u.opwrite;
	WRITE4resok *ok = &res->u.opwrite.u.resok4;
	struct mds_attr at;
	nfsstat4 st = io_begin(c, &a->stateid, true, &at);
	if (st)
		return st;
	if (refused(c))
		return NFS4ERR_PNFS_NO_LAYOUT;
	if (a->stable < UNSTABLE4 || a->stable > FILE_SYNC4)
		return NFS4ERR_INVAL;
	/* §18.32.3: the server may write less than asked (maxwrite) */
	uint32_t len = a->data.len < MDS_IO_MAX ? a->data.len : MDS_IO_MAX;
	struct mds_io_wres w;
	int rc = mds_io_write(mds_of(c), &at, mds_io_hop(&c->req->cred), a->offset, a->data.val,
			      len, (uint32_t)a->stable, &w);
	if (rc)
		return io_status(rc);
	ok->count = w.count;
	ok->committed = (stable_how4)w.committed;
	memcpy(ok->writeverf, w.verf, 8);
	return NFS4_OK;
}

/* -------------------------------------------------------------- COMMIT */

int mds_io_commit(struct braid_mds *mds, const struct mds_attr *at, enum mds_hop hop, uint64_t off,
		  uint32_t count, uint8_t verf[8])
{
	/* offset + count must not pass the largest offset (§18.3.3) */
	if (count && off > UINT64_MAX - count)
		return -EINVAL;
	int rc = data_commit(mds, at, hop, off, count, verf);
	mds_space_note(mds, at->ino);
	return rc;
}

static nfsstat4 op_commit(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	COMMIT4args *a = &arg->u.opcommit;
	struct mds_attr at;
	nfsstat4 st = mds_cfh(c, NULL, &at, NULL);
	if (st || (st = mds_reg_file(&at)))
		return st;
	if (refused(c))
		return NFS4ERR_PNFS_NO_LAYOUT;
	int rc = mds_io_commit(mds_of(c), &at, mds_io_hop(&c->req->cred), a->offset, a->count,
			       res->u.opcommit.u.resok4.writeverf);
	return rc ? io_status(rc) : NFS4_OK;
}

/* ------------------------------------------------------------ ALLOCATE */

/*
 * RFC 7862 §15.1: the range is backed and may extend the file.  The data
 * servers have no reservation, so the guarantee is approximate: the range
 * must fit in their free space now.  A file it extends gets the objects
 * holding its new last byte grown to the new size (a hole).
 */
static nfsstat4 op_allocate(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	ALLOCATE4args *a = &arg->u.opallocate;
	struct braid_mds *mds = mds_of(c);
	struct mds_attr at;
	(void)res;
	nfsstat4 st = io_begin(c, &a->aa_stateid, true, &at);
	if (st)
		return st;
	if (!a->aa_length)
		return NFS4ERR_INVAL;
	if (a->aa_offset > MDS_FILE_MAX || a->aa_length > MDS_FILE_MAX - a->aa_offset)
		return NFS4ERR_FBIG;
	uint64_t end = a->aa_offset + a->aa_length, cur = UINT64_MAX;
	struct obj o;
	struct mds_layout_seg seg;
	int rc = obj_init(&o, mds, &at);
	if (!rc)
		rc = seg_of(&o, layout_seg_index(&o.map.pol, end - 1), true, &seg, &cur);
	if (rc)
		return io_status(rc);
	unsigned nm = seg_mirrors(&o, &seg);
	mds_data_write_gate(mds, at.ino, MDS_GATE_WRITE);
	rc = mds_ec_write_begin(mds, at.ino, &o.map.pol);
	for (unsigned m = 0; !rc && m < nm; m++) {
		uint32_t id = seg.ds[layout_ds_slot(&o.map.pol, m, end - 1)];
		struct mds_ds_conn *dc;
		if (mds_data_map_stale(&o.map, id))
			continue; /* its resilver copies the size too */
		if ((rc = conn_get(&o, id, &dc)))
			break;
		struct mds_ds_info info;
		uint64_t osz = 0;
		if (!mds_dsreg_get(mds, id, &info) && info.free < a->aa_length && end > at.size)
			rc = -ENOSPC;
		if (!rc && end > at.size) {
			rc = obj_size(mds, &o, dc, &osz);
			if (rc == -ESTALE && !(rc = mds_data_object_repair(mds, &at, id)))
				osz = 0;
			if (!rc && osz < end)
				rc = ds_ctl_truncate(dc->clnt, &mds->key, &o.id, end);
		}
		mds_ds_conn_put(dc);
	}
	mds_data_write_gate(mds, at.ino, MDS_GATE_OPEN);
	if (!rc && end > at.size)
		rc = file_touch(mds, at.ino, end);
	return rc ? io_status(rc) : NFS4_OK;
}

/* ---------------------------------------------------------- DEALLOCATE */

static uint8_t zeros[MDS_IO_MAX]; /* never written */

/* [off, end) of one data server's object reads as zeros afterwards. */
static int zero_range(struct braid_mds *mds, const struct obj *o, struct mds_ds_conn *dc,
		      uint64_t off, uint64_t end)
{
	uint64_t osz;
	int rc = obj_size(mds, o, dc, &osz);
	if (rc == -ESTALE || (!rc && off >= osz))
		return 0; /* nothing stored there */
	if (rc)
		return rc;
	if (end >= osz) /* the object's tail: cut it (the file's size is the MDS's) */
		return ds_ctl_truncate(dc->clnt, &mds->key, &o->id, off);
	if (end - off > DEALLOC_ZERO_MAX)
		return -EOPNOTSUPP;
	uint8_t v[8];
	for (uint64_t p = off; p < end;) {
		uint32_t n = end - p < dc->wsize3 ? (uint32_t)(end - p) : dc->wsize3, cnt, cm;
		if ((rc = ds_write(o, dc, MDS_HOP_SYS, p, zeros, n, UNSTABLE4, &cnt, &cm, v)))
			return rc;
		if (!cnt)
			return -EIO;
		p += cnt;
	}
	return ds_commit(o, dc, MDS_HOP_SYS, off, 0, v);
}

/*
 * RFC 7862 §15.4: the range reads as zeros afterwards; the size does not
 * change (a range past the end is cut at it).  The data servers cannot punch
 * holes: a piece reaching the end of an object truncates the object, one
 * inside it is written with zeros (at most DEALLOC_ZERO_MAX bytes, else
 * NFS4ERR_NOTSUPP).  Segments never laid out hold zeros already.
 */
static nfsstat4 op_deallocate(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	DEALLOCATE4args *a = &arg->u.opdeallocate;
	struct braid_mds *mds = mds_of(c);
	struct mds_attr at;
	(void)res;
	nfsstat4 st = io_begin(c, &a->da_stateid, true, &at);
	if (st)
		return st;
	if (!a->da_length)
		return NFS4ERR_INVAL;
	/* as ALLOCATE (and Linux's fallocate): the range must fit a file */
	if (a->da_offset > MDS_FILE_MAX || a->da_length > MDS_FILE_MAX - a->da_offset)
		return NFS4ERR_FBIG;
	if (a->da_offset >= at.size)
		return NFS4_OK;
	uint64_t end =
	    a->da_length > at.size - a->da_offset ? at.size : a->da_offset + a->da_length;
	struct obj o;
	int rc = obj_init(&o, mds, &at);
	if (rc)
		return io_status(rc);
	if (!o.map.laid_out)
		return NFS4_OK; /* no object: all zeros already */
	uint64_t cur = UINT64_MAX;
	mds_data_write_gate(mds, at.ino, MDS_GATE_WRITE);
	rc = mds_ec_write_begin(mds, at.ino, &o.map.pol);
	for (uint64_t q = a->da_offset; !rc && q < end;) {
		uint64_t qe = layout_piece_end(&o.map.pol, q);
		qe = qe < end ? qe : end;
		struct mds_layout_seg seg;
		rc = seg_of(&o, layout_seg_index(&o.map.pol, q), false, &seg, &cur);
		if (rc == -ENOENT) {
			rc = 0; /* never laid out: zeros */
		} else if (!rc) {
			unsigned nm = seg_mirrors(&o, &seg);
			for (unsigned m = 0; !rc && m < nm; m++) {
				struct mds_ds_conn *dc;
				uint32_t id = seg.ds[layout_ds_slot(&o.map.pol, m, q)];
				if (mds_data_map_stale(&o.map, id))
					continue;
				if (!(rc = conn_get(&o, id, &dc))) {
					rc = zero_range(mds, &o, dc, q, qe);
					mds_ds_conn_put(dc);
				}
			}
		}
		q = qe;
	}
	mds_data_write_gate(mds, at.ino, MDS_GATE_OPEN);
	if (rc == -EOPNOTSUPP)
		return NFS4ERR_NOTSUPP;
	if (!rc)
		rc = file_touch(mds, at.ino, 0);
	return rc ? io_status(rc) : NFS4_OK;
}

/* ---------------------------------------------------------------- SEEK */

/*
 * RFC 7862 §15.11.  Data is what the objects hold below the size (up to the
 * largest object, as STAT reports it; the file's size when one cannot be
 * asked), the rest is a hole, ending with the one at EOF.  Past the end:
 * NFS4ERR_NXIO; no data past sa_offset: NFS4_OK with sr_eof.
 */
static nfsstat4 op_seek(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	SEEK4args *a = &arg->u.opseek;
	seek_res4 *ok = &res->u.opseek.u.resok4;
	struct braid_mds *mds = mds_of(c);
	struct mds_attr at;
	nfsstat4 st = io_begin(c, &a->sa_stateid, false, &at);
	if (st)
		return st;
	if (a->sa_what != NFS4_CONTENT_DATA && a->sa_what != NFS4_CONTENT_HOLE)
		return NFS4ERR_UNION_NOTSUPP;
	if (a->sa_offset >= at.size)
		return NFS4ERR_NXIO;
	uint64_t dend = 0; /* data is [0, dend) */
	struct obj o;
	uint32_t ids[64];
	int n = obj_init(&o, mds, &at) ? -EIO : mds_data_ds_list(mds, at.ino, ids, 64);
	if (n < 0)
		dend = at.size;
	for (int k = 0; k < n && dend < at.size; k++) {
		int rc;
		uint64_t osz = at.size;
		struct mds_ds_conn *dc = mds_ds_conn_get(mds, ids[k], &rc);
		if (dc) {
			rc = obj_size(mds, &o, dc, &osz);
			mds_ds_conn_put(dc);
		}
		if (rc == -ESTALE)
			osz = 0; /* missing: holds nothing */
		else if (rc)
			osz = at.size; /* cannot tell: call it data */
		dend = osz > dend ? osz : dend;
	}
	dend = dend < at.size ? dend : at.size;
	if (a->sa_what == NFS4_CONTENT_DATA) {
		ok->sr_eof = a->sa_offset >= dend;
		ok->sr_offset = ok->sr_eof ? at.size : a->sa_offset;
	} else {
		ok->sr_offset = a->sa_offset < dend ? dend : a->sa_offset;
		ok->sr_eof = ok->sr_offset >= at.size;
	}
	return NFS4_OK;
}

/* ----------------------------------------------------------- READ_PLUS */

/*
 * RFC 7862 §15.10: READ's contents as data and hole segments: what the
 * object holds, then a hole for what it does not (past its end, or all of
 * it when the file has no object).
 */
static nfsstat4 op_read_plus(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	READ_PLUS4args *a = &arg->u.opread_plus;
	read_plus_res4 *ok = &res->u.opread_plus.u.rp_resok4;
	struct mds_attr at;
	nfsstat4 st = io_begin(c, &a->rpa_stateid, false, &at);
	if (st)
		return st;
	if (refused(c))
		return NFS4ERR_PNFS_NO_LAYOUT;
	uint32_t want = read_want(a->rpa_offset, a->rpa_count, at.size), ndata = 0;
	ok->rpr_eof = a->rpa_offset + want >= at.size;
	ok->rpr_contents.len = 0;
	if (!want)
		return NFS4_OK;
	xdr_opaque data;
	int rc = data_read(mds_of(c), &at, mds_io_hop(&c->req->cred), a->rpa_offset, want, c->arena,
			   &data, &ndata);
	if (rc)
		return io_status(rc);
	read_plus_content *v = xdr_arena_alloc(c->arena, 2 * sizeof(*v));
	if (!v)
		return NFS4ERR_SERVERFAULT;
	unsigned n = 0;
	if (ndata) {
		v[n].rpc_content = NFS4_CONTENT_DATA;
		v[n].u.rpc_data.d_offset = a->rpa_offset;
		v[n++].u.rpc_data.d_data = xdr_opaque_of(data.val, ndata);
	}
	if (ndata < want) {
		v[n].rpc_content = NFS4_CONTENT_HOLE;
		v[n].u.rpc_hole.di_offset = a->rpa_offset + ndata;
		v[n++].u.rpc_hole.di_length = want - ndata;
	}
	ok->rpr_contents.len = n;
	ok->rpr_contents.val = v;
	return NFS4_OK;
}

static uint32_t read_plus_bound(const nfs_argop4 *arg)
{
	uint32_t n = arg->u.opread_plus.rpa_count;
	n = n < MDS_IO_MAX ? n : MDS_IO_MAX;
	/* resop, status, eof, count; a data segment (kind, offset, length,
	 * data, padding) and a hole (kind, offset, length) */
	return 16 + 16 + n + 4 + 20;
}

const struct mds_opdef mds_ops_io[] = {
    {OP_READ, {.fn = op_read, .flags = NFS41_OP_NEEDS_FH, .res_bound = read_bound}},
    {OP_WRITE, {.fn = op_write, .flags = NFS41_OP_NEEDS_FH}},
    {OP_COMMIT, {.fn = op_commit, .flags = NFS41_OP_NEEDS_FH}},
    {OP_ALLOCATE, {.fn = op_allocate, .flags = NFS41_OP_NEEDS_FH}},
    {OP_DEALLOCATE, {.fn = op_deallocate, .flags = NFS41_OP_NEEDS_FH}},
    {OP_SEEK, {.fn = op_seek, .flags = NFS41_OP_NEEDS_FH}},
    {OP_READ_PLUS, {.fn = op_read_plus, .flags = NFS41_OP_NEEDS_FH, .res_bound = read_plus_bound}},
    {0},
};
