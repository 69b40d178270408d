/* SPDX-License-Identifier: MIT */
/*
 * Reading another data server's objects, for the data mover (COPY,
 * mover.c) and erasure coding (EC_COMPUTE and reconstructing READs,
 * ec.c).  The peer is read with NFSv3 READ (RFC 1813 §3.3.6), the path
 * clients use: it checks every block's CRC (a bad block is NFS3ERR_IO,
 * never data) and sends from its page cache.  The handle is minted here
 * (ctl/fh.h: both hold the cluster key) and READs go as the file's fence
 * uid/gid.  Each READ is received straight into the caller's buffer (a
 * sink, nfsd/rpc.h); replies arrive on the loop thread of one client
 * engine per data server (made at first use), which runs the caller's
 * done callback.
 *
 * Also what both write here: a buffer written over an object, blocks that
 * hold what the object holds already (zeros over a hole) left alone.
 */
#include "config.h"

#include "braid_ctl.h"
#include "nfs3_prot.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataserver/ds_impl.h"

struct nfsd_server *ds_peer_engine(struct braid_ds *ds)
{
	pthread_mutex_lock(&ds->peer_mu);
	if (!ds->peer_eng) {
		int err = 0;
		ds->peer_eng = nfsd_client_engine_new(1, 0, &err);
	}
	struct nfsd_server *e = ds->peer_eng;
	pthread_mutex_unlock(&ds->peer_mu);
	return e;
}

bool ds_addr_is_self(const struct braid_ds *ds, const struct sockaddr_storage *ss)
{
	for (unsigned i = 0; i < ds->set.listen.n; i++) {
		const struct sockaddr_storage *l = &ds->set.listen.addr[i];
		if (l->ss_family != ss->ss_family)
			continue;
		if (l->ss_family == AF_INET) {
			const struct sockaddr_in *a = (const void *)l, *b = (const void *)ss;
			if (a->sin_port == b->sin_port &&
			    (a->sin_addr.s_addr == b->sin_addr.s_addr ||
			     (a->sin_addr.s_addr == htonl(INADDR_ANY) &&
			      (ntohl(b->sin_addr.s_addr) >> 24) == 127)))
				return true;
		} else {
			const struct sockaddr_in6 *a = (const void *)l, *b = (const void *)ss;
			if (a->sin6_port == b->sin6_port &&
			    (!memcmp(&a->sin6_addr, &b->sin6_addr, sizeof(b->sin6_addr)) ||
			     (IN6_IS_ADDR_UNSPECIFIED(&a->sin6_addr) &&
			      IN6_IS_ADDR_LOOPBACK(&b->sin6_addr))))
				return true;
		}
	}
	return false;
}

/*
 * Whether a connection to ss completes within ms: nfsd_clnt_new connects
 * blocking, which to a host that does not answer takes minutes.
 */
static int connect_probe(const struct sockaddr_storage *ss, socklen_t len, unsigned ms)
{
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int rc = 0;
	if (connect(fd, (const struct sockaddr *)ss, len) < 0) {
		if (errno != EINPROGRESS) {
			rc = -errno;
		} else {
			struct pollfd p = {.fd = fd, .events = POLLOUT};
			int n;
			do
				n = poll(&p, 1, (int)ms);
			while (n < 0 && errno == EINTR);
			if (n == 0) {
				rc = -ETIMEDOUT;
			} else if (n < 0) {
				rc = -errno;
			} else {
				int e = 0;
				socklen_t el = sizeof(e);
				getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el);
				rc = -e;
			}
		}
	}
	close(fd);
	return rc;
}

struct nfsd_clnt *ds_peer_connect(struct braid_ds *ds, const struct sockaddr_storage *ss,
				  socklen_t sl, unsigned ms)
{
	struct nfsd_server *eng = ds_peer_engine(ds);
	if (!eng || connect_probe(ss, sl, ms))
		return NULL;
	struct nfsd_clnt_opts co = {.timeout_ms = ms, .reconnect = false, .connect_timeout_ms = ms};
	int err = 0;
	return nfsd_clnt_new(eng, (const struct sockaddr *)ss, sl, &co, &err);
}

/*
 * Where a READ3res's data starts (struct nfsd_sink's locate): only a
 * successful reply with no attributes or a fattr3, as the data servers
 * send; anything else is received whole.
 */
static uint32_t peek32(const uint8_t *p, size_t have, size_t *at, bool *short_)
{
	if (*at + 4 > have) {
		*short_ = true;
		return 0xffffffffu;
	}
	uint32_t v = xdr_get32(p + *at);
	*at += 4;
	return v;
}

static int locate_read3(const uint8_t *rec, size_t have, size_t rec_len, size_t *off, size_t *len)
{
	(void)rec_len;
	size_t at = 4; /* xid */
	bool sh = false;
	bool ok = peek32(rec, have, &at, &sh) == NFSD_RPC_REPLY &&
		  peek32(rec, have, &at, &sh) == NFSD_MSG_ACCEPTED;
	peek32(rec, have, &at, &sh); /* verifier flavor */
	uint32_t vl = peek32(rec, have, &at, &sh);
	ok = ok && vl <= 400;
	at += ok ? (vl + 3) & ~3u : 0;
	ok = ok && peek32(rec, have, &at, &sh) == NFSD_SUCCESS;
	ok = ok && peek32(rec, have, &at, &sh) == NFS3_OK;
	uint32_t attrs = peek32(rec, have, &at, &sh);
	ok = ok && attrs <= 1;
	if (attrs == 1)
		at += 84;			     /* fattr3 */
	peek32(rec, have, &at, &sh);		     /* count */
	ok = ok && peek32(rec, have, &at, &sh) <= 1; /* eof */
	uint32_t n = peek32(rec, have, &at, &sh);
	if (sh)
		return 0;
	if (!ok)
		return -1;
	*len = n;
	*off = at;
	return 1;
}

static void peer_read_done(void *ctx, int err, struct xdr_dec *d)
{
	struct ds_peer_read *r = ctx;
	uint32_t status = 0, count = 0;
	bool eof = false;
	if (!err) {
		uint8_t ab[512];
		struct xdr_arena ar;
		xdr_arena_init(&ar, ab, sizeof(ab), 64u << 10);
		d->arena = &ar;
		READ3res rr;
		if (xdr_dec_READ3res(d, &rr) < 0) {
			err = -EBADMSG;
		} else if ((status = rr.status) == NFS3_OK) {
			size_t have = r->sunk ? r->sunk : rr.u.resok.data.len;
			/* the count must describe the data, within what we asked */
			if (have != rr.u.resok.count || have > r->len) {
				err = -EBADMSG;
			} else {
				if (!r->sunk && have)
					memcpy(r->buf, rr.u.resok.data.val, have);
				count = (uint32_t)have;
				eof = rr.u.resok.eof;
			}
		}
		xdr_arena_release(&ar);
	}
	r->rc = err;
	r->status = status;
	r->count = count;
	r->eof = eof;
	r->done(r);
}

int ds_peer_read(struct nfsd_clnt *c, const uint8_t fh[DS_FH_SIZE], uint32_t uid, uint32_t gid,
		 unsigned timeout_ms, struct ds_peer_read *r, uint64_t off, uint32_t len)
{
	r->off = off;
	r->len = len;
	r->sunk = 0;
	r->sink =
	    (struct nfsd_sink){.buf = r->buf, .len = len, .locate = locate_read3, .got = &r->sunk};
	READ3args ra = {
	    .file = {.data = xdr_opaque_of(fh, DS_FH_SIZE)}, .offset = off, .count = len};
	struct nfsd_call_opts o = {
	    .prog = NFS_PROGRAM,
	    .vers = NFS_V3,
	    .proc = NFSPROC3_READ,
	    .enc_args = xdr_desc_NFS_PROGRAM_NFS_V3.procs[NFSPROC3_READ].enc_arg,
	    .args = &ra,
	    .timeout_ms = timeout_ms,
	    .flavor = NFSD_AUTH_SYS,
	    .uid = uid,
	    .gid = gid,
	    .sink = &r->sink,
	};
	/* posted to the engine's loop: the callback runs there, later */
	return nfsd_clnt_call_async(c, &o, peer_read_done, r);
}

int ds_peer_stat(int rc, uint32_t nfs_status, enum ds_peer_whose *whose)
{
	*whose = DS_PEER_SOURCE;
	if (rc < 0 && rc != -EBADMSG && rc != -ENOMEM) {
		*whose = DS_PEER_DOWN; /* reset, refused, timed out */
		return BRAID_CTL_IO;
	}
	if (rc == -ENOMEM) {
		*whose = DS_PEER_HERE;
		return BRAID_CTL_SERVERFAULT;
	}
	if (rc) /* a reply we cannot read, or an RPC-level refusal */
		return (rc & NFSD_CALL_ERR_DENIED) ? BRAID_CTL_ACCESS : BRAID_CTL_SERVERFAULT;
	switch (nfs_status) {
	case NFS3_OK:
		return BRAID_CTL_OK;
	case NFS3ERR_STALE:
	case NFS3ERR_NOENT:
		return BRAID_CTL_NOENT;
	case NFS3ERR_ACCES:
	case NFS3ERR_PERM:
	case NFS3ERR_BADHANDLE: /* another cluster key */
		return BRAID_CTL_ACCESS;
	case NFS3ERR_IO:
		return BRAID_CTL_IO;
	case NFS3ERR_JUKEBOX:
		return BRAID_CTL_DELAY;
	default:
		return BRAID_CTL_SERVERFAULT;
	}
}

int ds_ctl_store_stat(int e)
{
	switch (e) {
	case 0:
		return BRAID_CTL_OK;
	case -ENOENT:
		return BRAID_CTL_NOENT;
	case -ESTALE:
	case -EEXIST: /* another generation made meanwhile */
		return BRAID_CTL_STALE;
	case -EINVAL:
	case -EFBIG:
		return BRAID_CTL_INVAL;
	case -ENOSPC:
	case -EDQUOT:
		return BRAID_CTL_NOSPC;
	case -EACCES:
		return BRAID_CTL_ACCESS;
	case -EIO:
		return BRAID_CTL_IO;
	case -EAGAIN:
	case -EBUSY:
		return BRAID_CTL_DELAY;
	default:
		return BRAID_CTL_SERVERFAULT;
	}
}

bool ds_zeros(const uint8_t *p, size_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/* Whether the block at buf[i..i+p) needs no write: it equals old's (or,
 * without old, is zeros over what reads as zeros). */
static bool same(const uint8_t *buf, const uint8_t *old, size_t i, size_t p)
{
	return old ? !memcmp(buf + i, old + i, p) : ds_zeros(buf + i, p);
}

int ds_write_sparse(struct ds_store *st, const struct ds_objid *id, uint32_t uid, uint32_t gid,
		    uint64_t off, const uint8_t *buf, size_t n, const uint8_t *old,
		    uint64_t *written)
{
	unsigned bs = ds_store_block_size(st);
	size_t i = 0;
	while (i < n) {
		size_t p = bs - (size_t)((off + i) % bs);
		if (p > n - i)
			p = n - i;
		if (same(buf, old, i, p)) {
			i += p;
			continue;
		}
		size_t j = i + p;
		while (j < n) {
			size_t q = bs - (size_t)((off + j) % bs);
			if (q > n - j)
				q = n - j;
			if (same(buf, old, j, q))
				break;
			j += q;
		}
		struct iovec v = {.iov_base = (void *)(buf + i), .iov_len = j - i};
		ssize_t w = ds_store_write(st, id, uid, gid, off + i, &v, 1, DS_UNSTABLE);
		if (w < 0)
			return (int)w;
		*written += j - i;
		ds_store_writeback(st, id, off + i, j - i); /* a hint: errors come at commit */
		i = j;
	}
	return 0;
}
