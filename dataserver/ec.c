/* SPDX-License-Identifier: MIT */
/*
 * Erasure coding on the data server (layout/policy.h ec,k=,m=; issue 19):
 *  - EC_COMPUTE (braid_ctl.x): the MDS has this data server make part of
 *    one chunk of a stripe (a parity chunk: encoding; any chunk: rebuild)
 *    from es_k other chunks, read from their data servers;
 *  - READ through a reconstructing handle (ctl/fh.h DS_FH_EC): the file's
 *    bytes, rebuilt here on the fly for a client whose data server is
 *    down; where the chunks are comes from the MDS (EC_LOCATE), cached a
 *    few seconds per stripe.
 *
 * Both read the same in-chunk range of k chunks (peer.c: NFSv3 READ as the
 * file's fence uid/gid, CRC-checked at the source, all k in flight at
 * once; a chunk this data server holds is read from its store) and decode
 * them with layout/ec.h.  A data chunk's bytes at or past es_size are
 * zeros and never read.  Sources are the data chunks first, then as few
 * parity chunks as the missing ones need (a parity chunk from the k data
 * chunks is plain encoding).
 *
 * Bounds: every source READ and the EC_LOCATE call have EC_TIMEOUT_MS; an
 * EC_COMPUTE call starts no piece after EC_BUDGET_MS and makes at most
 * BRAID_CTL_EC_COMPUTE_MAX bytes; at most EC_COMPUTES_MAX calls and
 * EC_READS_MAX reconstructing READs run at once (DELAY / JUKEBOX beyond).
 *
 * Threads: both run on RPC workers (they block on the store and on the
 * peers); peer replies arrive on the peer engine's loop thread, which
 * fills in a source and wakes the worker (struct ec_job's mu).
 */
#include "config.h"

#include "braid_ctl.h"
#include "nfs3_prot.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/client.h"
#include "ctl/netaddr.h"
#include "dataserver/ds_impl.h"
#include "layout/ec.h"
#include "layout/policy.h"
#include "nfsd/clock.h"

#define EC_PIECE	(1u << 20) /* bytes of a chunk read and decoded at a time */
#define EC_BUDGET_MS	2000	   /* EC_COMPUTE starts no piece after this */
#define EC_TIMEOUT_MS	2000	   /* each source READ, connect, and EC_LOCATE */
#define EC_COMPUTES_MAX 4	   /* EC_COMPUTE calls at once */
#define EC_READS_MAX	16	   /* reconstructing READs at once */
#define EC_CACHE_MS	10000	   /* how long an EC_LOCATE answer is used */
#define EC_CACHE_N	32	   /* stripes remembered */
#define EC_ADDRS	4	   /* addresses kept per chunk */
#define EC_CHUNKS	BRAID_CTL_EC_CHUNKS_MAX

_Static_assert(LAYOUT_EC_K_MAX <= EC_K_MAX && LAYOUT_EC_M_MAX <= EC_M_MAX,
	       "the codec takes every stripe the layouts make");

/* --------------------------------------------------------- a stripe */

/* One chunk's data server: none (ds 0), this one (local), or addresses. */
struct ec_where {
	uint32_t ds;
	bool local;
	unsigned naddrs;
	struct sockaddr_storage ss[EC_ADDRS];
	socklen_t sl[EC_ADDRS];
};

/* braid_ctl_ec_stripe, checked and with its addresses parsed. */
struct ec_stripe {
	struct ds_objid obj;
	uint32_t uid, gid;
	unsigned k, m, shift;
	uint64_t stripe, size;
	struct ec_where at[EC_CHUNKS];
};

/*
 * Check and parse s: -EINVAL for geometry no layout makes (k, m, the
 * chunk count, the segment size, a stripe past the largest object) or an
 * address that does not parse.
 */
static int stripe_parse(struct braid_ds *ds, const braid_ctl_ec_stripe *s, struct ec_stripe *o)
{
	if (s->es_k < 2 || s->es_k > LAYOUT_EC_K_MAX || s->es_m < 1 || s->es_m > LAYOUT_EC_M_MAX ||
	    s->es_chunks.len != s->es_k + s->es_m || s->es_shift < LAYOUT_SEG_SHIFT_MIN ||
	    s->es_shift > LAYOUT_SEG_SHIFT_MAX ||
	    s->es_stripe >= (DS_STORE_MAX_SIZE >> s->es_shift) / s->es_k)
		return -EINVAL;
	memcpy(o->obj.key, s->es_obj.oi_key, DS_KEY_SIZE);
	o->obj.gen = s->es_obj.oi_gen;
	o->uid = s->es_uid;
	o->gid = s->es_gid;
	o->k = s->es_k;
	o->m = s->es_m;
	o->shift = s->es_shift;
	o->stripe = s->es_stripe;
	o->size = s->es_size;
	uint32_t self = braid_ds_id(ds);
	for (unsigned i = 0; i < s->es_chunks.len; i++) {
		const braid_ctl_ec_chunk *c = &s->es_chunks.val[i];
		struct ec_where *w = &o->at[i];
		memset(w, 0, sizeof(*w));
		w->ds = c->ec_ds;
		w->local = self && c->ec_ds == self;
		for (unsigned a = 0; a < c->ec_addrs.len; a++) {
			const braid_ctl_netaddr *na = &c->ec_addrs.val[a];
			struct sockaddr_storage ss;
			socklen_t sl;
			if (ds_netaddr_parse((const char *)na->na_r_netid.val, na->na_r_netid.len,
					     (const char *)na->na_r_addr.val, na->na_r_addr.len,
					     &ss, &sl))
				return -EINVAL;
			w->local = w->local || ds_addr_is_self(ds, &ss);
			if (w->naddrs < EC_ADDRS) {
				w->ss[w->naddrs] = ss;
				w->sl[w->naddrs++] = sl;
			}
		}
		if (w->ds && !w->naddrs && !w->local)
			w->ds = 0; /* nowhere to read it */
	}
	return 0;
}

/* Where chunk i is: its object, and the object offset of its byte 0. */
static void chunk_at(const struct ec_stripe *s, unsigned i, struct ds_objid *obj, uint64_t *base)
{
	if (i < s->k) {
		*obj = s->obj;
		*base = (s->stripe * s->k + i) << s->shift;
	} else {
		ds_objid_parity(&s->obj, obj);
		*base = s->stripe << s->shift;
	}
}

/* Bytes of chunk i that hold data: a data chunk ends at the file's end. */
static uint64_t chunk_valid(const struct ec_stripe *s, unsigned i)
{
	uint64_t len = 1ull << s->shift, base = (s->stripe * s->k + i) << s->shift;
	if (i >= s->k)
		return len;
	return s->size <= base ? 0 : s->size - base < len ? s->size - base : len;
}

/* ---------------------------------------------------------- sources */

struct ec_job;

/* One chunk read as a source.  rd's results: see ec_job. */
struct ec_src {
	struct ds_peer_read rd; /* first: the callback's pointer is the source's */
	struct ec_job *job;
	unsigned idx;
	struct ds_objid obj;
	uint8_t fh[DS_FH_SIZE];
	uint64_t base, valid;
	struct nfsd_clnt *c; /* a peer's, connected at first use */
	uint8_t *buf;	     /* the piece; owned by the job unless 'borrowed' */
	bool borrowed;
	uint32_t want, got; /* job->mu: bytes of the piece to read, read */
	bool out;	    /* job->mu: a READ in flight */
};

/*
 * Reading k chunks of one stripe, piece by piece.  mu guards each source's
 * out/got and rd results while a READ is in flight, and nout; the worker
 * owns the rest.
 */
struct ec_job {
	struct braid_ds *ds;
	const struct ec_stripe *s;
	const struct ec_code *code;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a READ came back */
	unsigned nout;
	unsigned n;
	struct ec_src src[EC_K_MAX];
	uint64_t read; /* bytes read from peers */
	/* the first error: its control status and the chunk it is about */
	int st;
	unsigned bad;
};

static void job_read_done(struct ds_peer_read *rd)
{
	struct ec_src *c = (struct ec_src *)rd;
	struct ec_job *j = c->job;
	pthread_mutex_lock(&j->mu);
	c->out = false;
	j->nout--;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
}

static void job_fail(struct ec_job *j, int st, unsigned idx)
{
	if (!j->st) {
		j->st = st;
		j->bad = idx;
	}
}

/*
 * Choose the sources of want (a chunk index, or UINT32_MAX for none) from
 * the chunks with a data server that are not in skip (a bit per index):
 * the data chunks, data past the file's end (zeros, read from nowhere)
 * counting as there, then parity.  want itself when it can be read (and
 * direct); else k others.  0, or -EINVAL when too few are left.
 */
static int job_choose(struct ec_job *j, unsigned want, uint32_t skip, bool direct)
{
	const struct ec_stripe *s = j->s;
	unsigned pick[EC_CHUNKS], n = 0;
	if (direct && want < s->k + s->m && !(skip >> want & 1) &&
	    (s->at[want].ds || !chunk_valid(s, want)))
		pick[n++] = want;
	for (unsigned i = 0; i < s->k + s->m && n < s->k && !direct; i++)
		if (i != want && !(skip >> i & 1) && (s->at[i].ds || !chunk_valid(s, i)))
			pick[n++] = i;
	if (n < (direct ? 1 : s->k))
		return -EINVAL;
	j->n = n;
	for (unsigned i = 0; i < n; i++) {
		struct ec_src *c = &j->src[i];
		memset(c, 0, sizeof(*c));
		c->job = j;
		c->idx = pick[i];
		c->valid = chunk_valid(s, pick[i]);
		chunk_at(s, pick[i], &c->obj, &c->base);
		ds_fh_make(&j->ds->key, &c->obj, c->fh);
		c->rd.done = job_read_done;
	}
	return 0;
}

static void job_init(struct ec_job *j, struct braid_ds *ds, const struct ec_stripe *s,
		     const struct ec_code *code)
{
	memset(j, 0, sizeof(*j));
	j->ds = ds;
	j->s = s;
	j->code = code;
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL); /* waits are untimed: each READ has its timeout */
}

/* Close the sources' connections and free their buffers (no READ is out). */
static void job_drop_sources(struct ec_job *j)
{
	for (unsigned i = 0; i < j->n; i++) {
		struct ec_src *c = &j->src[i];
		if (c->c)
			nfsd_clnt_free(c->c);
		if (!c->borrowed)
			free(c->buf);
		c->c = NULL;
		c->buf = NULL;
	}
	j->n = 0;
}

static void job_release(struct ec_job *j)
{
	job_drop_sources(j);
	pthread_cond_destroy(&j->cv);
	pthread_mutex_destroy(&j->mu);
}

/* Issue the READ of the rest of c's piece.  Caller holds j->mu. */
static void src_issue(struct ec_job *j, struct ec_src *c, uint64_t inner)
{
	const struct ec_stripe *s = j->s;
	c->rd.buf = c->buf + c->got;
	c->out = true;
	j->nout++;
	if (ds_peer_read(c->c, c->fh, s->uid, s->gid, EC_TIMEOUT_MS, &c->rd,
			 c->base + inner + c->got, c->want - c->got)) {
		c->out = false;
		j->nout--;
		job_fail(j, BRAID_CTL_SERVERFAULT, c->idx);
	}
}

/* Connect to a peer source: its first address that answers. */
static int src_connect(struct ec_job *j, struct ec_src *c)
{
	const struct ec_where *w = &j->s->at[c->idx];
	for (unsigned a = 0; a < w->naddrs && !c->c; a++)
		c->c = ds_peer_connect(j->ds, &w->ss[a], w->sl[a], EC_TIMEOUT_MS);
	return c->c ? 0 : -EHOSTUNREACH;
}

/*
 * Read [inner, inner + len) of every source into its buffer: zeros past
 * the data, a local chunk from the store (as the fence), a peer's with all
 * READs in flight at once, short ones read on.  0, or j->st and j->bad set.
 */
static int job_read(struct ec_job *j, uint64_t inner, uint32_t len)
{
	const struct ec_stripe *s = j->s;
	for (unsigned i = 0; i < j->n; i++) {
		struct ec_src *c = &j->src[i];
		if (!c->buf && !(c->buf = aligned_alloc(DS_STORE_ALIGN, EC_PIECE))) {
			job_fail(j, BRAID_CTL_SERVERFAULT, c->idx);
			break;
		}
		c->want = c->valid > inner
			      ? (c->valid - inner < len ? (uint32_t)(c->valid - inner) : len)
			      : 0;
		c->got = 0;
		memset(c->buf + c->want, 0, len - c->want);
		if (!c->want || s->at[c->idx].local)
			continue;
		if (!c->c && src_connect(j, c)) {
			job_fail(j, BRAID_CTL_IO, c->idx);
			break;
		}
		pthread_mutex_lock(&j->mu);
		src_issue(j, c, inner);
		pthread_mutex_unlock(&j->mu);
	}
	/* the local chunks while the peers' READs are out */
	for (unsigned i = 0; i < j->n && !j->st; i++) {
		struct ec_src *c = &j->src[i];
		if (!c->want || !s->at[c->idx].local)
			continue;
		bool eof = false;
		ssize_t n = ds_store_read(j->ds->store, &c->obj, s->uid, s->gid, c->base + inner,
					  c->want, c->buf, &eof);
		if (n < 0)
			job_fail(j, ds_ctl_store_stat((int)n), c->idx);
		else if ((uint32_t)n < c->want)
			memset(c->buf + n, 0, c->want - (size_t)n); /* past the object's end */
	}
	pthread_mutex_lock(&j->mu);
	for (;;) {
		while (j->nout)
			pthread_cond_wait(&j->cv, &j->mu);
		bool again = false;
		for (unsigned i = 0; i < j->n; i++) {
			struct ec_src *c = &j->src[i];
			if (!c->want || s->at[c->idx].local || c->got >= c->want || !c->rd.len)
				continue;
			enum ds_peer_whose whose;
			int st = ds_peer_stat(c->rd.rc, c->rd.status, &whose);
			c->rd.len = 0; /* its result is taken */
			if (st) {
				job_fail(j, st, c->idx);
				continue;
			}
			c->got += c->rd.count;
			j->read += c->rd.count;
			if (c->got < c->want && c->rd.eof) {
				memset(c->buf + c->got, 0, c->want - c->got); /* past its end */
				c->got = c->want;
			} else if (c->got < c->want && !c->rd.count) {
				job_fail(j, BRAID_CTL_IO, c->idx); /* nothing, and not the end */
			} else if (c->got < c->want && !j->st) {
				src_issue(j, c, inner); /* a smaller rsize: READ the rest */
				again = true;
			}
		}
		if (!again)
			break;
	}
	pthread_mutex_unlock(&j->mu);
	return j->st ? -EIO : 0;
}

/* Chunk want's piece (len bytes) into out, from the sources' pieces. */
static int job_decode(struct ec_job *j, unsigned want, size_t len, uint8_t *out)
{
	if (j->n == 1 && j->src[0].idx == want) {
		if (j->src[0].buf != out)
			memcpy(out, j->src[0].buf, len);
		return 0;
	}
	unsigned idx[EC_K_MAX];
	const uint8_t *have[EC_K_MAX];
	for (unsigned i = 0; i < j->n; i++) {
		idx[i] = j->src[i].idx;
		have[i] = j->src[i].buf;
	}
	uint8_t *outs[1] = {out};
	return ec_rebuild(j->code, len, idx, have, 1, &want, outs);
}

/* ------------------------------------------------------ the service */

/* One remembered EC_LOCATE answer, for the file (ino, s.obj). */
struct ec_cached {
	uint64_t expires; /* ns (nfsd_now_ns); 0: empty */
	uint64_t ino;
	struct ec_stripe s;
};

/*
 * Erasure coding of one data server.  mu guards everything below it: the
 * codes (made at first use, freed with it), the counts of calls running,
 * the MDS client (made at first use) and the cache.
 */
struct ds_ec {
	struct nfsd_metric *calls, *read_bytes, *written_bytes, *mismatch_bytes, *errors;
	struct nfsd_metric *reads, *read_bytes_rec, *read_errors, *locates;
	pthread_mutex_t mu;
	struct ec_code *code[LAYOUT_EC_K_MAX + 1][LAYOUT_EC_M_MAX + 1];
	unsigned ncompute, nread;
	struct nfsd_clnt *mds;
	struct ec_cached cache[EC_CACHE_N];
};

int ds_ec_new(struct braid_ds *ds)
{
	struct ds_ec *e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	pthread_mutex_init(&e->mu, NULL);
	struct nfsd_metrics *m = ds->metrics;
	e->calls =
	    nfsd_metrics_counter(m, "braid_ds_ec_compute_calls_total",
				 "EC_COMPUTE calls served (erasure-coded chunks made here).", NULL);
	e->read_bytes =
	    nfsd_metrics_counter(m, "braid_ds_ec_compute_read_bytes_total",
				 "Bytes EC_COMPUTE read from other data servers.", NULL);
	e->written_bytes = nfsd_metrics_counter(
	    m, "braid_ds_ec_compute_written_bytes_total",
	    "Bytes EC_COMPUTE wrote here (blocks that already held them are left alone).", NULL);
	e->mismatch_bytes = nfsd_metrics_counter(
	    m, "braid_ds_ec_compute_mismatch_bytes_total",
	    "Bytes EC_COMPUTE's verify found differing from what it computed.", NULL);
	e->errors = nfsd_metrics_counter(m, "braid_ds_ec_compute_errors_total",
					 "EC_COMPUTE calls that failed.", NULL);
	e->reads = nfsd_metrics_counter(m, "braid_ds_ec_reads_total",
					"READs through reconstructing handles.", NULL);
	e->read_bytes_rec = nfsd_metrics_counter(
	    m, "braid_ds_ec_read_bytes_total",
	    "Bytes READs through reconstructing handles returned (rebuilt here, or read "
	    "straight from a chunk's own server when it answers).",
	    NULL);
	e->read_errors = nfsd_metrics_counter(
	    m, "braid_ds_ec_read_errors_total",
	    "READs through reconstructing handles that failed (access refusals included).", NULL);
	e->locates = nfsd_metrics_counter(m, "braid_ds_ec_locate_calls_total",
					  "EC_LOCATE calls made to the MDS.", NULL);
	ds->ec = e;
	return 0;
}

void ds_ec_free(struct ds_ec *e)
{
	if (!e)
		return;
	if (e->mds)
		nfsd_clnt_free(e->mds);
	for (unsigned k = 0; k <= LAYOUT_EC_K_MAX; k++)
		for (unsigned m = 0; m <= LAYOUT_EC_M_MAX; m++)
			if (e->code[k][m])
				ec_code_free(e->code[k][m]);
	pthread_mutex_destroy(&e->mu);
	free(e);
}

/* The code of a checked stripe (made once); NULL without memory. */
static const struct ec_code *code_of(struct ds_ec *e, const struct ec_stripe *s)
{
	pthread_mutex_lock(&e->mu);
	struct ec_code **c = &e->code[s->k][s->m];
	if (!*c && ec_code_new(s->k, s->m, c))
		*c = NULL;
	const struct ec_code *code = *c;
	pthread_mutex_unlock(&e->mu);
	return code;
}

/* Take one of max places counted by *n; false when all are taken. */
static bool slot_take(struct ds_ec *e, unsigned *n, unsigned max)
{
	pthread_mutex_lock(&e->mu);
	bool ok = *n < max;
	*n += ok;
	pthread_mutex_unlock(&e->mu);
	return ok;
}

static void slot_drop(struct ds_ec *e, unsigned *n)
{
	pthread_mutex_lock(&e->mu);
	(*n)--;
	pthread_mutex_unlock(&e->mu);
}

/* -------------------------------------------------------- EC_COMPUTE */

/* The chunk being made here and what the call got to. */
struct ec_target {
	unsigned idx;
	struct ds_objid obj;
	uint64_t base, len; /* object offset of byte 0; bytes to make (data: to the file's end) */
	bool existed;	    /* the object was here before the call */
	uint32_t uid, gid;  /* writes go as the object's owner */
	uint64_t written, mismatch;
};

/* Make the target object exist (owned by the fence); who writes it. */
static int target_open(struct braid_ds *ds, const struct ec_stripe *s, struct ec_target *t,
		       uint32_t mode, bool verify)
{
	struct ds_obj_stat os;
	int rc = ds_store_stat(ds->store, &t->obj, &os);
	t->existed = rc == 0;
	t->uid = rc ? s->uid : os.uid;
	t->gid = rc ? s->gid : os.gid;
	if (rc != -ENOENT || verify) /* verify compares a missing one with zeros */
		return rc == -ENOENT ? 0 : rc;
	return ds_store_create(ds->store, &t->obj, s->uid, s->gid, mode);
}

/*
 * One piece of the target: what the object holds there now (old; zeros
 * where it holds nothing), then compare (verify) or write what differs.
 */
static int target_piece(struct braid_ds *ds, struct ec_target *t, uint64_t inner,
			const uint8_t *buf, size_t n, uint8_t *old, bool verify)
{
	const uint8_t *cmp = NULL;
	if (t->existed) {
		bool eof;
		ssize_t got = ds_store_read(ds->store, &t->obj, t->uid, t->gid, t->base + inner, n,
					    old, &eof);
		if (got == -EIO && !verify) {
			/* a block here fails its CRC: rewrite every block,
			 * zeros too (an old unlike buf everywhere) */
			for (size_t i = 0; i < n; i++)
				old[i] = (uint8_t)~buf[i];
		} else if (got < 0) {
			return (int)got;
		} else {
			memset(old + got, 0, n - (size_t)got);
		}
		cmp = old;
	}
	if (verify) {
		for (size_t i = 0; i < n; i++)
			t->mismatch += buf[i] != (cmp ? cmp[i] : 0);
		return 0;
	}
	return ds_write_sparse(ds->store, &t->obj, t->uid, t->gid, t->base + inner, buf, n, cmp,
			       &t->written);
}

/* Durable before the reply; a finished chunk is as long as its data. */
static int target_finish(struct braid_ds *ds, struct ec_target *t, uint64_t from, uint64_t next,
			 bool done)
{
	struct ds_obj_stat os;
	int rc = ds_store_stat(ds->store, &t->obj, &os);
	if (!rc && done && os.size < t->base + t->len)
		return ds_store_truncate(ds->store, &t->obj, t->base + t->len); /* syncs */
	return rc ? rc : ds_store_commit(ds->store, &t->obj, t->base + from, next - from);
}

static void compute_fail(braid_ctl_ec_compute_res *r, int st, unsigned chunk)
{
	r->ecc_status = (braid_ctl_stat)st;
	r->u.ecf_chunk = chunk;
}

static void compute_call(struct braid_ds *ds, const braid_ctl_ec_compute_args *a,
			 braid_ctl_ec_compute_res *r, struct ec_stripe *s)
{
	struct ds_ec *e = ds->ec;
	unsigned ti = a->ecc_target;
	compute_fail(r, BRAID_CTL_INVAL, ti);
	if (stripe_parse(ds, &a->ecc_stripe, s) || ti >= s->k + s->m || (a->ecc_mode & ~0777u) ||
	    !a->ecc_count || a->ecc_offset > 1ull << s->shift)
		return;
	const struct ec_code *code = code_of(e, s);
	if (!code) {
		compute_fail(r, BRAID_CTL_SERVERFAULT, ti);
		return;
	}
	struct ec_target t = {.idx = ti, .len = chunk_valid(s, ti)};
	chunk_at(s, ti, &t.obj, &t.base);
	struct ec_job j;
	job_init(&j, ds, s, code);
	uint8_t *out = NULL, *old = NULL;
	/* data past the file's end are zeros anywhere: counted as there */
	if (job_choose(&j, ti, 0, false))
		goto out;
	if (!slot_take(e, &e->ncompute, EC_COMPUTES_MAX)) {
		compute_fail(r, BRAID_CTL_DELAY, ti);
		goto out;
	}
	int rc = target_open(ds, s, &t, a->ecc_mode, a->ecc_verify);
	if (!rc && (!(out = aligned_alloc(DS_STORE_ALIGN, EC_PIECE)) ||
		    !(old = aligned_alloc(DS_STORE_ALIGN, EC_PIECE))))
		rc = -ENOMEM;
	uint64_t off = a->ecc_offset < t.len ? a->ecc_offset : t.len, next = off;
	uint64_t count =
	    a->ecc_count < BRAID_CTL_EC_COMPUTE_MAX ? a->ecc_count : BRAID_CTL_EC_COMPUTE_MAX;
	uint64_t end = t.len - off > count ? off + count : t.len;
	uint64_t budget = nfsd_now_ns() + EC_BUDGET_MS * 1000000ull;
	while (!rc && next < end && (next == off || nfsd_now_ns() < budget)) {
		uint32_t n = (uint32_t)(EC_PIECE - next % EC_PIECE);
		if (n > end - next)
			n = (uint32_t)(end - next);
		if (job_read(&j, next, n))
			break;
		if (job_decode(&j, ti, n, out)) {
			job_fail(&j, BRAID_CTL_SERVERFAULT, ti);
			break;
		}
		rc = target_piece(ds, &t, next, out, n, old, a->ecc_verify);
		next += n;
	}
	bool done = next >= t.len;
	if (!rc && !j.st && !a->ecc_verify && (next > off || done))
		rc = target_finish(ds, &t, off, next, done);
	nfsd_metric_add(e->read_bytes, (int64_t)j.read);
	nfsd_metric_add(e->written_bytes, (int64_t)t.written);
	nfsd_metric_add(e->mismatch_bytes, (int64_t)t.mismatch);
	slot_drop(e, &e->ncompute);
	if (rc)
		compute_fail(r, ds_ctl_store_stat(rc), ti);
	else if (j.st)
		compute_fail(r, j.st, j.bad);
	else {
		r->ecc_status = BRAID_CTL_OK;
		r->u.ecc_resok =
		    (braid_ctl_ec_compute_resok){.ecc_next = done ? 1ull << s->shift : next,
						 .ecc_done = done,
						 .ecc_read = j.read,
						 .ecc_written = t.written,
						 .ecc_mismatch = t.mismatch};
	}
out:
	free(out);
	free(old);
	job_release(&j);
}

int ds_ec_compute_proc(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_ds *ds = req->priv;
	braid_ctl_ec_compute_args *a = argp;
	braid_ctl_ec_compute_res *r = resp;
	nfsd_metric_add(ds->ec->calls, 1);
	if (req->cred.flavor != NFSD_AUTH_BRAID) {
		compute_fail(r, BRAID_CTL_ACCESS, a->ecc_target);
	} else {
		struct ec_stripe *s = malloc(sizeof(*s));
		if (s)
			compute_call(ds, a, r, s);
		else
			compute_fail(r, BRAID_CTL_SERVERFAULT, a->ecc_target);
		free(s);
	}
	if (r->ecc_status)
		nfsd_metric_add(ds->ec->errors, 1);
	return NFSD_SUCCESS;
}

/* ---------------------------------------------- reconstructing READs */

static int cache_find(struct ds_ec *e, const struct ds_objid *id, uint64_t ino, uint64_t off,
		      struct ec_stripe *out)
{
	uint64_t now = nfsd_now_ns();
	int rc = -ENOENT;
	pthread_mutex_lock(&e->mu);
	for (unsigned i = 0; i < EC_CACHE_N && rc; i++) {
		const struct ec_cached *c = &e->cache[i];
		if (c->expires > now && c->ino == ino && !memcmp(&c->s.obj, id, sizeof(*id)) &&
		    (off >> c->s.shift) / c->s.k == c->s.stripe) {
			*out = c->s;
			rc = 0;
		}
	}
	pthread_mutex_unlock(&e->mu);
	return rc;
}

static void cache_put(struct ds_ec *e, uint64_t ino, const struct ec_stripe *s)
{
	uint64_t now = nfsd_now_ns();
	pthread_mutex_lock(&e->mu);
	struct ec_cached *v = &e->cache[0];
	for (unsigned i = 0; i < EC_CACHE_N; i++) {
		struct ec_cached *c = &e->cache[i];
		if (c->expires <= now || (c->ino == ino && c->s.stripe == s->stripe &&
					  !memcmp(&c->s.obj, &s->obj, sizeof(s->obj)))) {
			v = c;
			break;
		}
		if (c->expires < v->expires)
			v = c; /* the oldest goes */
	}
	v->s = *s;
	v->ino = ino;
	v->expires = now + EC_CACHE_MS * 1000000ull;
	pthread_mutex_unlock(&e->mu);
}

/* Forget the stripe: a source failed, the next READ asks the MDS again. */
static void cache_drop(struct ds_ec *e, const struct ec_stripe *s)
{
	pthread_mutex_lock(&e->mu);
	for (unsigned i = 0; i < EC_CACHE_N; i++) {
		struct ec_cached *c = &e->cache[i];
		if (!memcmp(&c->s.obj, &s->obj, sizeof(s->obj)) && c->s.stripe == s->stripe)
			c->expires = 0;
	}
	pthread_mutex_unlock(&e->mu);
}

/* The MDS client (made at first use); NULL when it cannot be reached. */
static struct nfsd_clnt *mds_clnt(struct braid_ds *ds)
{
	struct ds_ec *e = ds->ec;
	pthread_mutex_lock(&e->mu);
	struct nfsd_clnt *c = e->mds;
	pthread_mutex_unlock(&e->mu);
	if (c || !ds->set.mds.n)
		return c;
	struct nfsd_server *eng = ds_peer_engine(ds);
	const struct sockaddr_storage *ss = &ds->set.mds.addr[0];
	socklen_t sl =
	    ss->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	struct nfsd_clnt_opts co = {
	    .timeout_ms = EC_TIMEOUT_MS, .reconnect = true, .connect_timeout_ms = EC_TIMEOUT_MS};
	int err = 0;
	c = eng ? nfsd_clnt_new(eng, (const struct sockaddr *)ss, sl, &co, &err) : NULL;
	if (!c)
		return NULL;
	pthread_mutex_lock(&e->mu);
	if (e->mds) { /* another thread's came first */
		nfsd_clnt_free(c);
		c = e->mds;
	} else {
		e->mds = c;
	}
	pthread_mutex_unlock(&e->mu);
	return c;
}

/*
 * EC_LOCATE: the stripe of id holding off, checked.  0; -ESTALE (no such
 * file, another generation, not erasure coded and sealed); -ERANGE (off
 * past the file's end); -EAGAIN (the MDS busy, unreachable or silent);
 * -EIO (an answer that makes no sense, or no MDS configured).
 */
static int locate(struct braid_ds *ds, const struct ds_objid *id, uint64_t ino, uint64_t off,
		  struct ec_stripe *s)
{
	if (!cache_find(ds->ec, id, ino, off, s))
		return 0;
	if (!ds->set.mds.n)
		return -EIO;
	struct nfsd_clnt *c = mds_clnt(ds);
	if (!c)
		return -EAGAIN;
	nfsd_metric_add(ds->ec->locates, 1);
	braid_ctl_ec_locate_args a = {.el_ino = ino, .el_offset = off};
	memcpy(a.el_obj.oi_key, id->key, DS_KEY_SIZE);
	a.el_obj.oi_gen = id->gen;
	braid_ctl_ec_locate_res r;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 18);
	int rc = ds_ctl_call(c, &ds->key, BRAID_CTLPROC_EC_LOCATE, &a, &r, &ar);
	if (rc)
		rc = rc == -EPROTO || rc == -EKEYREJECTED || rc == -EBADMSG ? -EIO : -EAGAIN;
	else if (r.el_status == BRAID_CTL_NOENT || r.el_status == BRAID_CTL_STALE)
		rc = -ESTALE;
	else if (r.el_status == BRAID_CTL_INVAL)
		rc = -ERANGE;
	else if (r.el_status == BRAID_CTL_DELAY)
		rc = -EAGAIN;
	else if (r.el_status != BRAID_CTL_OK)
		rc = -EIO;
	else if (stripe_parse(ds, &r.u.el_stripe, s) || memcmp(&s->obj, id, sizeof(*id)) ||
		 (off >> s->shift) / s->k != s->stripe)
		rc = -EIO;
	xdr_arena_release(&ar);
	if (!rc)
		cache_put(ds->ec, ino, s);
	return rc;
}

/* The fence as the store applies it to a 0640 object: the owner, or its
 * group (primary or supplementary) reads.  AUTH_SYS callers only. */
static bool may_read(const struct nfsd_req *req, const struct ec_stripe *s)
{
	const struct nfsd_cred *cr = &req->cred;
	if (cr->flavor != NFSD_AUTH_SYS)
		return false;
	if (cr->uid == s->uid || cr->gid == s->gid)
		return true;
	for (uint32_t i = 0; i < cr->ngroups; i++)
		if (cr->groups[i] == s->gid)
			return true;
	return false;
}

/*
 * [inner, inner + len) of data chunk want into out: from want itself when
 * it has a data server, else rebuilt from k others; a source that fails
 * is left out and the next choice tried, while k are left.
 */
static int ec_read_chunk(struct braid_ds *ds, const struct ec_stripe *s, unsigned want,
			 uint64_t inner, uint32_t len, uint8_t *out)
{
	const struct ec_code *code = code_of(ds->ec, s);
	if (!code)
		return -ENOMEM;
	struct ec_job j;
	job_init(&j, ds, s, code);
	uint32_t skip = 0;
	int rc = -EIO;
	for (bool direct = true;; direct = false) {
		if (job_choose(&j, want, skip, direct)) {
			if (direct)
				continue;
			break;
		}
		if (direct) { /* straight into the reply */
			j.src[0].buf = out;
			j.src[0].borrowed = true;
		}
		j.st = 0;
		if (!job_read(&j, inner, len)) {
			rc = job_decode(&j, want, len, out) ? -EIO : 0;
			break;
		}
		skip |= 1u << j.bad;
		cache_drop(ds->ec, s);
		job_drop_sources(&j);
	}
	job_release(&j);
	return rc;
}

int ds_ec_read(struct braid_ds *ds, struct nfsd_req *req, const struct ds_objid *id, uint64_t ino,
	       uint64_t off, uint32_t count, xdr_opaque *data, bool *eof)
{
	struct ds_ec *e = ds->ec;
	nfsd_metric_add(e->reads, 1);
	nfsd_req_unbulk(req); /* not from the page cache: hold no other READ back */
	*eof = false;
	*data = xdr_opaque_of(NULL, 0);
	int rc = -EACCES;
	if (req->cred.flavor != NFSD_AUTH_SYS)
		goto out; /* RPCSEC_GSS: no capability scheme for these yet */
	if (!slot_take(e, &e->nread, EC_READS_MAX)) {
		rc = -EAGAIN;
		goto out;
	}
	struct ec_stripe *s = malloc(sizeof(*s));
	rc = s ? locate(ds, id, ino, off, s) : -ENOMEM;
	if (rc == -ERANGE) {
		/* past the end: the fence is the file's first stripe's */
		rc = locate(ds, id, ino, 0, s);
		if (!rc && !may_read(req, s))
			rc = -EACCES;
		*eof = !rc || rc == -ERANGE; /* an empty file: nothing to hide */
		rc = *eof ? 0 : rc;
	} else if (!rc && !may_read(req, s)) {
		rc = -EACCES;
	} else if (!rc && off >= s->size) {
		*eof = true;
	} else if (!rc) {
		uint64_t seg = 1ull << s->shift, inner = off & (seg - 1);
		unsigned want = (unsigned)((off >> s->shift) - s->stripe * s->k);
		uint64_t len = ds->set.max_io < count ? ds->set.max_io : count;
		if (len > seg - inner)
			len = seg - inner; /* a short READ at the segment's end */
		if (len > s->size - off)
			len = s->size - off;
		uint8_t *buf = len ? ds_req_buf(ds, req) : NULL;
		if (len && !buf)
			rc = -EAGAIN;
		else if (len)
			rc = ec_read_chunk(ds, s, want, inner, (uint32_t)len, buf);
		if (!rc) {
			*data = xdr_opaque_of(buf, (size_t)len);
			*eof = off + len >= s->size;
			nfsd_metric_add(e->read_bytes_rec, len);
		}
	}
	free(s);
	slot_drop(e, &e->nread);
out:
	if (rc)
		nfsd_metric_add(e->read_errors, 1);
	return rc;
}
