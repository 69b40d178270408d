/* SPDX-License-Identifier: MIT */
/*
 * The data mover: COPY (braid_ctl.x), by which the MDS has this data server
 * (the destination) copy an object from another one (the source), for
 * resilver, rebuild, drain and rebalance.  The MDS only directs: the bytes
 * go from the source to here.
 *
 * The source is read with NFSv3 READ (RFC 1813 §3.3.6), the path clients
 * use, so it checks every block's CRC (a bad block is NFS3ERR_IO, never
 * data) and sends from its page cache, and needs no code for copies.  The
 * handle is minted here (ctl/fh.h: both hold the cluster key) and READs go
 * as the file's fence uid/gid.  MV_WINDOW READs of MV_READ bytes are in
 * flight on one connection, each received straight into its own buffer
 * (a sink, nfsd/rpc.h), while MV_WRITERS threads write the buffers that
 * came back, leave blocks of zeros as holes (the object was cut to the
 * call's offset first, so they read as zeros), and start their write-back
 * (ds_store_writeback): dirty pages that pile up get the writer throttled
 * by the kernel, and the commit ending the call would wait for them all.
 *
 * Bounds: a call moves at most BRAID_CTL_COPY_MAX bytes and issues no READ
 * after MV_BUDGET_MS; every source call (connecting, GETATTR, each READ)
 * has MV_SOURCE_TIMEOUT_MS.  At most MV_COPIES_MAX calls run at once, one
 * per object; another gets DELAY.
 *
 * Threads: a COPY runs on an RPC worker, with MV_WRITERS - 1 helper
 * threads for its transfer; the source's replies arrive on the loop thread
 * of the mover's own client engine (made at the first COPY), which fills
 * in a slot and wakes them.  A transfer's state is under its mv_copy's mu.
 */
#include "config.h"

#include "braid_ctl.h"
#include "nfs3_prot.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl/netaddr.h"
#include "dataserver/ds_impl.h"
#include "nfsd/clock.h"

#define MV_READ		     (1u << 20)	 /* bytes per READ */
#define MV_WINDOW	     8		 /* READs in flight */
#define MV_BUDGET_MS	     2000	 /* no READ issued after this much of a call */
#define MV_SOURCE_TIMEOUT_MS 2000	 /* connect, GETATTR, each READ */
#define MV_COPIES_MAX	     8		 /* COPY calls at once */
#define MV_RATE_MIN	     (64u << 10) /* bytes/s: a lower cp_rate counts as this */
#define MV_WRITERS	     2		 /* threads writing a call's data */

/* The mover of one data server.  mu guards eng (made once) and busy. */
struct ds_mover {
	pthread_mutex_t mu;
	struct nfsd_server *eng;
	unsigned nbusy;
	uint8_t busy[MV_COPIES_MAX][DS_KEY_SIZE]; /* keys being copied */
	struct nfsd_metric *calls, *read_bytes, *written_bytes, *errors[3];
};

int ds_mover_new(struct braid_ds *ds)
{
	struct ds_mover *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->mu, NULL);
	m->calls = nfsd_metrics_counter(
	    ds->metrics, "braid_ds_copy_calls_total",
	    "COPY calls served (data copied here from another data server).", NULL);
	m->read_bytes = nfsd_metrics_counter(ds->metrics, "braid_ds_copy_read_bytes_total",
					     "Bytes COPY read from source data servers.", NULL);
	m->written_bytes = nfsd_metrics_counter(
	    ds->metrics, "braid_ds_copy_written_bytes_total",
	    "Bytes COPY wrote here (blocks of zeros are left as holes).", NULL);
	static const char *const sides[3] = {"side=\"dest\"", "side=\"source\"",
					     "side=\"source_down\""};
	for (int i = 0; i < 3; i++)
		m->errors[i] =
		    nfsd_metrics_counter(ds->metrics, "braid_ds_copy_errors_total",
					 "COPY calls that failed, by whose error.", sides[i]);
	ds->mover = m;
	return 0;
}

void ds_mover_free(struct ds_mover *m)
{
	if (!m)
		return;
	if (m->eng)
		nfsd_server_free(m->eng);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

/* --------------------------------------------------------- one copy */

struct mv_copy;

/* One READ in flight.  Fields below 'taken' are written by the callback,
 * and read by the thread that took the slot once it saw 'ready' (cp->mu). */
struct mv_slot {
	struct mv_copy *cp;
	uint8_t *buf; /* MV_READ bytes, DS_STORE_ALIGN-aligned */
	uint64_t off;
	uint32_t len;
	size_t sunk; /* bytes the engine placed in buf itself */
	struct nfsd_sink sink;
	bool out;   /* cp->mu: issued, its callback not yet run */
	bool ready; /* cp->mu: its callback ran, not yet processed */
	bool taken; /* cp->mu: a thread is writing its data */
	int rc;	    /* 0, a transport -errno or NFSD_CALL_ERR_* */
	uint32_t status;
	uint32_t count;
	bool eof;
};

/*
 * The transfer of one call, under cp->mu.  end moves down when the source
 * turns out shorter than its GETATTR said.
 */
struct mv_run {
	uint64_t start, end, issue; /* the call's range; the next offset to READ */
	uint64_t src_size;
	uint64_t read, written;
	uint64_t t0, budget, rate; /* ns; no READ issued after budget; bytes/s */
	uint64_t fail_off;	   /* lowest offset not copied after an error */
	braid_ctl_stat st;	   /* the first error */
	braid_ctl_copy_side side;
	bool stop; /* issue nothing more */
};

struct mv_copy {
	struct braid_ds *ds;
	struct nfsd_clnt *c;
	struct ds_objid id;
	uint8_t fh[DS_FH_SIZE];
	uint32_t uid, gid;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a slot became ready (CLOCK_MONOTONIC) */
	unsigned out;	   /* mu: slots out */
	struct mv_run u;   /* mu */
	struct mv_slot slot[MV_WINDOW];
};

static void run_loop(struct mv_copy *cp);

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

static void mv_read_done(void *ctx, int err, struct xdr_dec *d)
{
	struct mv_slot *s = ctx;
	struct mv_copy *cp = s->cp;
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
			size_t have = s->sunk ? s->sunk : rr.u.resok.data.len;
			/* the count must describe the data, within what we asked */
			if (have != rr.u.resok.count || have > s->len) {
				err = -EBADMSG;
			} else {
				if (!s->sunk && have)
					memcpy(s->buf, rr.u.resok.data.val, have);
				count = (uint32_t)have;
				eof = rr.u.resok.eof;
			}
		}
		xdr_arena_release(&ar);
	}
	pthread_mutex_lock(&cp->mu);
	s->rc = err;
	s->status = status;
	s->count = count;
	s->eof = eof;
	s->out = false;
	s->ready = true;
	cp->out--;
	pthread_cond_broadcast(&cp->cv);
	pthread_mutex_unlock(&cp->mu);
}

/* Send a READ for [off, off + len) into s.  Caller holds cp->mu. */
static int mv_issue(struct mv_copy *cp, struct mv_slot *s, uint64_t off, uint32_t len)
{
	s->off = off;
	s->len = len;
	s->sink =
	    (struct nfsd_sink){.buf = s->buf, .len = len, .locate = locate_read3, .got = &s->sunk};
	READ3args ra = {
	    .file = {.data = xdr_opaque_of(cp->fh, DS_FH_SIZE)}, .offset = off, .count = len};
	struct nfsd_call_opts o = {
	    .prog = NFS_PROGRAM,
	    .vers = NFS_V3,
	    .proc = NFSPROC3_READ,
	    .enc_args = xdr_desc_NFS_PROGRAM_NFS_V3.procs[NFSPROC3_READ].enc_arg,
	    .args = &ra,
	    .timeout_ms = MV_SOURCE_TIMEOUT_MS,
	    .flavor = NFSD_AUTH_SYS,
	    .uid = cp->uid,
	    .gid = cp->gid,
	    .sink = &s->sink,
	};
	s->out = true;
	s->ready = false;
	cp->out++;
	/* posted to the engine's loop: its callback runs there, later */
	int rc = nfsd_clnt_call_async(cp->c, &o, mv_read_done, s);
	if (rc) {
		s->out = false;
		cp->out--;
	}
	return rc;
}

/* ------------------------------------------------------------ errors */

static braid_ctl_stat store_stat(int e)
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

/* A source call's outcome as (side, status); OK for a good reply. */
static braid_ctl_stat source_stat(int rc, uint32_t nfs_status, braid_ctl_copy_side *side)
{
	*side = BRAID_CTL_COPY_SOURCE;
	if (rc < 0 && rc != -EBADMSG && rc != -ENOMEM) {
		*side = BRAID_CTL_COPY_SOURCE_DOWN; /* reset, refused, timed out */
		return BRAID_CTL_IO;
	}
	if (rc == -ENOMEM) {
		*side = BRAID_CTL_COPY_DEST;
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

static void fail(braid_ctl_copy_res *r, braid_ctl_stat st, braid_ctl_copy_side side, uint64_t off)
{
	r->cp_status = st;
	r->u.cp_fail.cf_side = side;
	r->u.cp_fail.cf_offset = off;
}

/* --------------------------------------------------------- the source */

/* Whether ss is one of the addresses this data server listens on. */
static bool addr_is_self(const struct braid_ds *ds, const struct sockaddr_storage *ss)
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

static struct nfsd_server *mover_engine(struct ds_mover *m)
{
	pthread_mutex_lock(&m->mu);
	if (!m->eng) {
		int err = 0;
		m->eng = nfsd_client_engine_new(1, 0, &err);
	}
	struct nfsd_server *e = m->eng;
	pthread_mutex_unlock(&m->mu);
	return e;
}

/*
 * Connect to the first source address that answers GETATTR, into cp->c,
 * and return the object's attributes there.  OK, or a status and side.
 */
static braid_ctl_stat source_open(struct mv_copy *cp, const struct sockaddr_storage *ss,
				  const socklen_t *sl, unsigned n, fattr3 *attr,
				  braid_ctl_copy_side *side)
{
	struct nfsd_server *eng = mover_engine(cp->ds->mover);
	*side = BRAID_CTL_COPY_DEST;
	if (!eng)
		return BRAID_CTL_SERVERFAULT;
	braid_ctl_stat st = BRAID_CTL_IO;
	*side = BRAID_CTL_COPY_SOURCE_DOWN;
	for (unsigned i = 0; i < n; i++) {
		if (connect_probe(&ss[i], sl[i], MV_SOURCE_TIMEOUT_MS))
			continue;
		struct nfsd_clnt_opts co = {.timeout_ms = MV_SOURCE_TIMEOUT_MS, .reconnect = false};
		int err = 0;
		struct nfsd_clnt *c =
		    nfsd_clnt_new(eng, (const struct sockaddr *)&ss[i], sl[i], &co, &err);
		if (!c)
			continue;
		GETATTR3args ga = {.object = {.data = xdr_opaque_of(cp->fh, DS_FH_SIZE)}};
		GETATTR3res gr;
		const struct xdr_proc_desc *d =
		    &xdr_desc_NFS_PROGRAM_NFS_V3.procs[NFSPROC3_GETATTR];
		struct nfsd_call_opts o = {
		    .prog = NFS_PROGRAM,
		    .vers = NFS_V3,
		    .proc = NFSPROC3_GETATTR,
		    .enc_args = d->enc_arg,
		    .args = &ga,
		    .timeout_ms = MV_SOURCE_TIMEOUT_MS,
		    .flavor = NFSD_AUTH_SYS,
		    .uid = cp->uid,
		    .gid = cp->gid,
		};
		uint8_t ab[1024];
		struct xdr_arena ar;
		xdr_arena_init(&ar, ab, sizeof(ab), 64u << 10);
		int rc = nfsd_clnt_call(c, &o, d->dec_res, &gr, &ar);
		xdr_arena_release(&ar);
		st = source_stat(rc, rc ? 0 : gr.status, side);
		if (*side == BRAID_CTL_COPY_SOURCE_DOWN) {
			nfsd_clnt_free(c);
			continue;
		}
		if (st) {
			nfsd_clnt_free(c);
			return st;
		}
		*attr = gr.u.resok.obj_attributes;
		cp->c = c;
		return BRAID_CTL_OK;
	}
	return st;
}

/* ---------------------------------------------------- the destination */

static bool zeros(const uint8_t *p, size_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/*
 * Write buf (n bytes, object offset off) as the owner, skipping blocks of
 * zeros: past the call's offset the object reads as zeros already.  Adds
 * what it wrote to *written.
 */
static int dest_write(struct mv_copy *cp, uint64_t off, const uint8_t *buf, size_t n,
		      uint64_t *written)
{
	struct ds_store *st = cp->ds->store;
	unsigned bs = ds_store_block_size(st);
	size_t i = 0;
	while (i < n) {
		size_t p = bs - (size_t)((off + i) % bs);
		if (p > n - i)
			p = n - i;
		if (zeros(buf + i, p)) {
			i += p;
			continue;
		}
		size_t j = i + p;
		while (j < n) {
			size_t q = bs - (size_t)((off + j) % bs);
			if (q > n - j)
				q = n - j;
			if (zeros(buf + j, q))
				break;
			j += q;
		}
		struct iovec v = {.iov_base = (void *)(buf + i), .iov_len = j - i};
		ssize_t w =
		    ds_store_write(st, &cp->id, cp->uid, cp->gid, off + i, &v, 1, DS_UNSTABLE);
		if (w < 0)
			return (int)w;
		*written += j - i;
		ds_store_writeback(st, &cp->id, off + i, j - i); /* a hint: errors come at commit */
		i = j;
	}
	return 0;
}

/* Make the object exist, owned by uid/gid, and cut to size. */
static int dest_prepare(struct mv_copy *cp, bool exists, uint32_t mode, uint64_t size)
{
	struct ds_store *st = cp->ds->store;
	int rc;
	if (!exists) {
		rc = ds_store_create(st, &cp->id, cp->uid, cp->gid, mode);
	} else {
		struct ds_obj_stat os;
		rc = ds_store_stat(st, &cp->id, &os);
		if (!rc && (os.uid != cp->uid || os.gid != cp->gid || os.mode != mode))
			rc = ds_store_setfence(st, &cp->id, cp->uid, cp->gid, mode);
	}
	return rc ? rc : ds_store_truncate(st, &cp->id, size);
}

/* ----------------------------------------------------------- the call */

static bool busy_take(struct ds_mover *m, const uint8_t key[DS_KEY_SIZE])
{
	bool ok = false;
	pthread_mutex_lock(&m->mu);
	if (m->nbusy < MV_COPIES_MAX) {
		ok = true;
		for (unsigned i = 0; i < m->nbusy && ok; i++)
			ok = memcmp(m->busy[i], key, DS_KEY_SIZE) != 0;
		if (ok)
			memcpy(m->busy[m->nbusy++], key, DS_KEY_SIZE);
	}
	pthread_mutex_unlock(&m->mu);
	return ok;
}

static void busy_drop(struct ds_mover *m, const uint8_t key[DS_KEY_SIZE])
{
	pthread_mutex_lock(&m->mu);
	for (unsigned i = 0; i < m->nbusy; i++)
		if (!memcmp(m->busy[i], key, DS_KEY_SIZE)) {
			memcpy(m->busy[i], m->busy[--m->nbusy], DS_KEY_SIZE);
			break;
		}
	pthread_mutex_unlock(&m->mu);
}

/* A thread of the transfer: MV_WRITERS of them write what comes back. */
static void *run_thread(void *arg)
{
	run_loop(arg);
	return NULL;
}

static void run_fail(struct mv_run *u, braid_ctl_stat st, braid_ctl_copy_side side, uint64_t off)
{
	if (!u->st) {
		u->st = st;
		u->side = side;
	}
	if (off < u->fail_off)
		u->fail_off = off;
	u->stop = true;
}

/*
 * Issue READs into the free slots, as far as the range, the time budget
 * and the rate allow.  Returns when the rate allows the next one (ns), or
 * 0.  Caller holds cp->mu.
 */
static uint64_t run_issue(struct mv_copy *cp)
{
	struct mv_run *u = &cp->u;
	for (unsigned i = 0; i < MV_WINDOW && !u->stop && u->issue < u->end; i++) {
		struct mv_slot *s = &cp->slot[i];
		if (s->out || s->ready || s->taken)
			continue;
		uint64_t now = nfsd_now_ns();
		if (now >= u->budget) {
			u->stop = true;
			break;
		}
		/* READs aligned to MV_READ, the first one excepted; under a
		 * rate, no more than a second's worth each */
		uint64_t len = MV_READ - u->issue % MV_READ;
		if (u->rate && len > u->rate)
			len = u->rate;
		if (len > u->end - u->issue)
			len = u->end - u->issue;
		if (u->rate) {
			/* the READ's last byte may leave at t0 + bytes / rate */
			uint64_t bytes = u->issue - u->start + len;
			uint64_t at = u->t0 + (uint64_t)((double)bytes * 1e9 / (double)u->rate);
			if (at > u->budget) {
				u->stop = true;
				break;
			}
			if (at > now)
				return at;
		}
		if (mv_issue(cp, s, u->issue, (uint32_t)len)) {
			run_fail(u, BRAID_CTL_SERVERFAULT, BRAID_CTL_COPY_DEST, u->issue);
			break;
		}
		u->issue += len;
	}
	return 0;
}

/*
 * A READ came back (s taken by this thread): write its data with cp->mu
 * dropped, or note the error; READ again the rest of a short one.  Caller
 * holds cp->mu.
 */
static void run_reply(struct mv_copy *cp, struct mv_slot *s)
{
	struct mv_run *u = &cp->u;
	braid_ctl_copy_side side;
	braid_ctl_stat st = source_stat(s->rc, s->status, &side);
	uint64_t n = s->count;
	if (st) {
		run_fail(u, st, side, s->off);
		return;
	}
	if (!n && !s->eof && s->off < u->end) {
		/* nothing and not the end: a source that would keep us here */
		run_fail(u, BRAID_CTL_SERVERFAULT, BRAID_CTL_COPY_SOURCE, s->off);
		return;
	}
	u->read += n;
	if (n < s->len && s->eof && s->off + n < u->end) {
		/* the source shrank since GETATTR: it ends here */
		u->end = s->off + n;
		u->src_size = u->end;
	}
	if (s->off >= u->end)
		return;
	if (n > u->end - s->off)
		n = u->end - s->off;
	uint64_t written = 0;
	pthread_mutex_unlock(&cp->mu);
	int rc = n ? dest_write(cp, s->off, s->buf, (size_t)n, &written) : 0;
	pthread_mutex_lock(&cp->mu);
	u->written += written;
	if (rc) {
		run_fail(u, store_stat(rc), BRAID_CTL_COPY_DEST, s->off);
		return;
	}
	uint64_t rest = s->off + n, rend = s->off + s->len < u->end ? s->off + s->len : u->end;
	if (rest < rend) {
		/* a short READ (the source's rsize is smaller): READ the rest,
		 * past the time budget too (it was issued before) */
		if (u->st)
			run_fail(u, u->st, u->side, rest);
		else if (mv_issue(cp, s, rest, (uint32_t)(rend - rest)))
			run_fail(u, BRAID_CTL_SERVERFAULT, BRAID_CTL_COPY_DEST, rest);
	}
}

/*
 * What every thread of a transfer runs until nothing is left to do: issue
 * READs, write the buffers that came back, and wait.  MV_WRITERS threads
 * run it, so that one blocked in a write (allocating page cache, or
 * starting write-back on a disk whose queue is full) does not hold up the
 * buffers that keep arriving.
 */
static void run_loop(struct mv_copy *cp)
{
	struct mv_run *u = &cp->u;
	pthread_mutex_lock(&cp->mu);
	for (;;) {
		uint64_t due = run_issue(cp);
		struct mv_slot *s = NULL;
		unsigned taken = 0;
		for (unsigned i = 0; i < MV_WINDOW; i++) {
			if (cp->slot[i].ready && !s)
				s = &cp->slot[i];
			taken += cp->slot[i].taken;
		}
		if (s) {
			s->ready = false;
			s->taken = true;
			run_reply(cp, s);
			s->taken = false;
			pthread_cond_broadcast(&cp->cv);
			continue;
		}
		if (!cp->out && !taken && !due && (u->stop || u->issue >= u->end))
			break;
		if (!due) {
			pthread_cond_wait(&cp->cv, &cp->mu);
			continue;
		}
		struct timespec ts = {.tv_sec = (time_t)(due / 1000000000ull),
				      .tv_nsec = (long)(due % 1000000000ull)};
		pthread_cond_timedwait(&cp->cv, &cp->mu, &ts);
	}
	pthread_cond_broadcast(&cp->cv);
	pthread_mutex_unlock(&cp->mu);
}

/* The transfer of one call: this thread and MV_WRITERS - 1 helpers. */
static void run_transfer(struct mv_copy *cp)
{
	pthread_t t[MV_WRITERS];
	unsigned n = 0;
	cp->u.t0 = nfsd_now_ns();
	cp->u.budget = cp->u.t0 + MV_BUDGET_MS * 1000000ull;
	for (; n + 1 < MV_WRITERS; n++)
		if (pthread_create(&t[n], NULL, run_thread, cp))
			break; /* fewer writers */
	run_loop(cp);
	for (unsigned i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

static void copy_call(struct braid_ds *ds, const braid_ctl_copy_args *a, braid_ctl_copy_res *r)
{
	uint64_t off = a->cp_offset;
	fail(r, BRAID_CTL_INVAL, BRAID_CTL_COPY_DEST, off);
	if ((a->cp_mode & ~0777u) || !a->cp_count || off > DS_STORE_MAX_SIZE ||
	    !a->cp_src_addrs.len || a->cp_src_addrs.len > BRAID_CTL_ADDRS_MAX)
		return;
	struct sockaddr_storage ss[BRAID_CTL_ADDRS_MAX];
	socklen_t sl[BRAID_CTL_ADDRS_MAX];
	for (unsigned i = 0; i < a->cp_src_addrs.len; i++) {
		const braid_ctl_netaddr *na = &a->cp_src_addrs.val[i];
		if (ds_netaddr_parse((const char *)na->na_r_netid.val, na->na_r_netid.len,
				     (const char *)na->na_r_addr.val, na->na_r_addr.len, &ss[i],
				     &sl[i]) ||
		    addr_is_self(ds, &ss[i]))
			return;
	}
	struct mv_copy *cp = calloc(1, sizeof(*cp));
	if (!cp) {
		fail(r, BRAID_CTL_SERVERFAULT, BRAID_CTL_COPY_DEST, off);
		return;
	}
	cp->ds = ds;
	memcpy(cp->id.key, a->cp_obj.oi_key, DS_KEY_SIZE);
	cp->id.gen = a->cp_obj.oi_gen;
	cp->uid = a->cp_uid;
	cp->gid = a->cp_gid;
	ds_fh_make(&ds->key, &cp->id, cp->fh);
	pthread_mutex_init(&cp->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cp->cv, &ca);
	pthread_condattr_destroy(&ca);
	bool busy = false;

	/* the destination first: another generation here is left alone */
	struct ds_obj_stat os;
	int rc = ds_store_stat(ds->store, &cp->id, &os);
	if (rc && rc != -ENOENT) {
		fail(r, store_stat(rc), BRAID_CTL_COPY_DEST, off);
		goto out;
	}
	bool exists = rc == 0;
	if (!(busy = busy_take(ds->mover, cp->id.key))) {
		fail(r, BRAID_CTL_DELAY, BRAID_CTL_COPY_DEST, off);
		goto out;
	}
	fattr3 attr;
	memset(&attr, 0, sizeof(attr));
	braid_ctl_copy_side side;
	braid_ctl_stat st = source_open(cp, ss, sl, a->cp_src_addrs.len, &attr, &side);
	if (st) {
		fail(r, st, side, off);
		goto out;
	}
	if (attr.fsid == ds->fsid) { /* the source is this data server */
		fail(r, BRAID_CTL_INVAL, BRAID_CTL_COPY_DEST, off);
		goto out;
	}
	if (attr.type != NF3REG) {
		fail(r, BRAID_CTL_SERVERFAULT, BRAID_CTL_COPY_SOURCE, off);
		goto out;
	}
	struct mv_run *u = &cp->u;
	*u = (struct mv_run){.start = off,
			     .issue = off,
			     .src_size = attr.size,
			     .rate =
				 a->cp_rate && a->cp_rate < MV_RATE_MIN ? MV_RATE_MIN : a->cp_rate,
			     .fail_off = UINT64_MAX};
	uint64_t count = a->cp_count < BRAID_CTL_COPY_MAX ? a->cp_count : BRAID_CTL_COPY_MAX;
	u->end = off >= attr.size ? attr.size : attr.size - off > count ? off + count : attr.size;
	if ((rc = dest_prepare(cp, exists, a->cp_mode, off < attr.size ? off : attr.size))) {
		fail(r, store_stat(rc), BRAID_CTL_COPY_DEST, off);
		goto out;
	}
	if (u->start < u->end) {
		for (unsigned i = 0; i < MV_WINDOW; i++) {
			cp->slot[i].cp = cp;
			if (!(cp->slot[i].buf = aligned_alloc(DS_STORE_ALIGN, MV_READ))) {
				fail(r, BRAID_CTL_SERVERFAULT, BRAID_CTL_COPY_DEST, off);
				goto out;
			}
		}
		run_transfer(cp);
	}
	nfsd_metric_add(ds->mover->read_bytes, (int64_t)u->read);
	nfsd_metric_add(ds->mover->written_bytes, (int64_t)u->written);
	if (u->st) {
		fail(r, u->st, u->side, u->fail_off < u->issue ? u->fail_off : u->issue);
		goto out;
	}
	/* stopped early (count, time, rate): done up to what was issued, as
	 * every READ issued came back and was written */
	if (u->issue < u->end)
		u->end = u->issue;
	bool done = u->end >= u->src_size;
	/* durable before the reply: the size when done (its sync takes the
	 * data along), else the data */
	rc = done ? ds_store_truncate(ds->store, &cp->id, u->src_size)
		  : ds_store_commit(ds->store, &cp->id, off, u->end - off);
	if (rc) {
		fail(r, store_stat(rc), BRAID_CTL_COPY_DEST, off);
		goto out;
	}
	r->cp_status = BRAID_CTL_OK;
	r->u.cp_resok = (braid_ctl_copy_resok){.cp_next = u->end,
					       .cp_done = done,
					       .cp_src_size = u->src_size,
					       .cp_read = u->read,
					       .cp_written = u->written};
out:
	if (cp->c)
		nfsd_clnt_free(cp->c); /* no READ is out: run_transfer waited for all */
	for (unsigned i = 0; i < MV_WINDOW; i++)
		free(cp->slot[i].buf);
	if (busy)
		busy_drop(ds->mover, cp->id.key);
	pthread_cond_destroy(&cp->cv);
	pthread_mutex_destroy(&cp->mu);
	free(cp);
}

int ds_mover_copy_proc(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_ds *ds = req->priv;
	braid_ctl_copy_args *a = argp;
	braid_ctl_copy_res *r = resp;
	nfsd_metric_add(ds->mover->calls, 1);
	if (req->cred.flavor != NFSD_AUTH_BRAID)
		fail(r, BRAID_CTL_ACCESS, BRAID_CTL_COPY_DEST, a->cp_offset);
	else
		copy_call(ds, a, r);
	if (r->cp_status)
		nfsd_metric_add(ds->mover->errors[r->u.cp_fail.cf_side], 1);
	return NFSD_SUCCESS;
}
