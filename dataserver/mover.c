/* SPDX-License-Identifier: MIT */
/*
 * The data mover: COPY (braid_ctl.x), by which the MDS has this data server
 * (the destination) copy an object from another one (the source), for
 * resilver, rebuild, drain and rebalance.  The MDS only directs: the bytes
 * go from the source to here.
 *
 * The source is read with NFSv3 READ as the file's fence uid/gid (peer.c:
 * CRC-checked at the source, no code there for copies).  MV_WINDOW READs
 * of MV_READ bytes are in flight on one connection, each received straight
 * into its own buffer, while MV_WRITERS threads write the buffers that
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
#include <stdlib.h>
#include <string.h>

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

/* The mover of one data server.  mu guards busy. */
struct ds_mover {
	pthread_mutex_t mu;
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
	pthread_mutex_destroy(&m->mu);
	free(m);
}

/* --------------------------------------------------------- one copy */

struct mv_copy;

/* One READ in flight (rd.buf: MV_READ bytes, DS_STORE_ALIGN-aligned).
 * rd's results are written by the callback, and read by the thread that
 * took the slot once it saw 'ready' (cp->mu). */
struct mv_slot {
	struct ds_peer_read rd; /* first: the callback's pointer is the slot's */
	struct mv_copy *cp;
	bool out;   /* cp->mu: issued, its callback not yet run */
	bool ready; /* cp->mu: its callback ran, not yet processed */
	bool taken; /* cp->mu: a thread is writing its data */
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

static void mv_read_done(struct ds_peer_read *rd)
{
	struct mv_slot *s = (struct mv_slot *)rd;
	struct mv_copy *cp = s->cp;
	pthread_mutex_lock(&cp->mu);
	s->out = false;
	s->ready = true;
	cp->out--;
	pthread_cond_broadcast(&cp->cv);
	pthread_mutex_unlock(&cp->mu);
}

/* Send a READ for [off, off + len) into s.  Caller holds cp->mu. */
static int mv_issue(struct mv_copy *cp, struct mv_slot *s, uint64_t off, uint32_t len)
{
	s->rd.done = mv_read_done;
	s->out = true;
	s->ready = false;
	cp->out++;
	int rc = ds_peer_read(cp->c, cp->fh, cp->uid, cp->gid, MV_SOURCE_TIMEOUT_MS, &s->rd, off,
			      len);
	if (rc) {
		s->out = false;
		cp->out--;
	}
	return rc;
}

/* ------------------------------------------------------------ errors */

static braid_ctl_stat store_stat(int e)
{
	return (braid_ctl_stat)ds_ctl_store_stat(e);
}

/* A source call's outcome as (side, status); OK for a good reply. */
static braid_ctl_stat source_stat(int rc, uint32_t nfs_status, braid_ctl_copy_side *side)
{
	enum ds_peer_whose w;
	braid_ctl_stat st = (braid_ctl_stat)ds_peer_stat(rc, nfs_status, &w);
	*side = w == DS_PEER_DOWN ? BRAID_CTL_COPY_SOURCE_DOWN
		: w == DS_PEER_HERE ? BRAID_CTL_COPY_DEST
				    : BRAID_CTL_COPY_SOURCE;
	return st;
}

static void fail(braid_ctl_copy_res *r, braid_ctl_stat st, braid_ctl_copy_side side, uint64_t off)
{
	r->cp_status = st;
	r->u.cp_fail.cf_side = side;
	r->u.cp_fail.cf_offset = off;
}

/* --------------------------------------------------------- the source */

/*
 * Connect to the first source address that answers GETATTR, into cp->c,
 * and return the object's attributes there.  OK, or a status and side.
 */
static braid_ctl_stat source_open(struct mv_copy *cp, const struct sockaddr_storage *ss,
				  const socklen_t *sl, unsigned n, fattr3 *attr,
				  braid_ctl_copy_side *side)
{
	*side = BRAID_CTL_COPY_DEST;
	if (!ds_peer_engine(cp->ds))
		return BRAID_CTL_SERVERFAULT;
	braid_ctl_stat st = BRAID_CTL_IO;
	*side = BRAID_CTL_COPY_SOURCE_DOWN;
	for (unsigned i = 0; i < n; i++) {
		struct nfsd_clnt *c = ds_peer_connect(cp->ds, &ss[i], sl[i], MV_SOURCE_TIMEOUT_MS);
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
	braid_ctl_stat st = source_stat(s->rd.rc, s->rd.status, &side);
	uint64_t n = s->rd.count;
	if (st) {
		run_fail(u, st, side, s->rd.off);
		return;
	}
	if (!n && !s->rd.eof && s->rd.off < u->end) {
		/* nothing and not the end: a source that would keep us here */
		run_fail(u, BRAID_CTL_SERVERFAULT, BRAID_CTL_COPY_SOURCE, s->rd.off);
		return;
	}
	u->read += n;
	if (n < s->rd.len && s->rd.eof && s->rd.off + n < u->end) {
		/* the source shrank since GETATTR: it ends here */
		u->end = s->rd.off + n;
		u->src_size = u->end;
	}
	if (s->rd.off >= u->end)
		return;
	if (n > u->end - s->rd.off)
		n = u->end - s->rd.off;
	uint64_t written = 0;
	pthread_mutex_unlock(&cp->mu);
	/* past the call's offset the object reads as zeros: holes stay */
	int rc = n ? ds_write_sparse(cp->ds->store, &cp->id, cp->uid, cp->gid, s->rd.off,
				     s->rd.buf, (size_t)n, NULL, &written)
		   : 0;
	pthread_mutex_lock(&cp->mu);
	u->written += written;
	if (rc) {
		run_fail(u, store_stat(rc), BRAID_CTL_COPY_DEST, s->rd.off);
		return;
	}
	uint64_t rest = s->rd.off + n, rend = s->rd.off + s->rd.len < u->end ? s->rd.off + s->rd.len : u->end;
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
		    ds_addr_is_self(ds, &ss[i]))
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
			if (!(cp->slot[i].rd.buf = aligned_alloc(DS_STORE_ALIGN, MV_READ))) {
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
		free(cp->slot[i].rd.buf);
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
