/* SPDX-License-Identifier: MIT */
/*
 * The NFSv3 load generator of the benchmarks (see nfs3load.h): READs or
 * WRITEs of 1 MiB over the engine's client, 16 in flight per connection.
 *
 * Each connection's calls and callbacks run on its client loop thread; the
 * counters they share with the thread that runs the load are atomics.
 */
#include "config.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "bench/nfs3load.h"
#include "nfsd/xdr/nfs3_prot.h"

/* ------------------------------------------------------------ the pattern */

/*
 * Test data: each 8-byte little-endian word holds its own file offset, so
 * any misplaced, stale or torn block shows up wherever it is read.
 */
void nfs3_pattern_fill(uint8_t *p, uint64_t off, size_t len)
{
	for (size_t i = 0; i + 8 <= len; i += 8) {
		uint64_t v = htole64(off + i);
		memcpy(p + i, &v, 8);
	}
}

/* full: every word; else the first, a middle and the last word. */
bool nfs3_pattern_ok(const uint8_t *p, uint64_t off, size_t len, bool full)
{
	size_t n = len / 8;
	if (!n)
		return true;
	if (!full) {
		size_t idx[3] = {0, n / 2, n - 1};
		for (int k = 0; k < 3; k++) {
			uint64_t v;
			memcpy(&v, p + idx[k] * 8, 8);
			if (le64toh(v) != off + idx[k] * 8)
				return false;
		}
		return true;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t v;
		memcpy(&v, p + i * 8, 8);
		if (le64toh(v) != off + i * 8)
			return false;
	}
	return true;
}

/* Write the pattern file with plain buffered writes, then make it durable so
 * a later O_DIRECT read finds it on the disk, not only in dirty pages. */
int nfs3_pattern_file_create(const char *path, uint64_t size, uint32_t uid, uint32_t gid)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	uint8_t *buf = malloc(NFS3_LOAD_IO);
	int rc = buf ? 0 : -ENOMEM;
	for (uint64_t off = 0; !rc && off < size; off += NFS3_LOAD_IO) {
		nfs3_pattern_fill(buf, off, NFS3_LOAD_IO);
		ssize_t w = pwrite(fd, buf, NFS3_LOAD_IO, (off_t)off);
		if (w != (ssize_t)NFS3_LOAD_IO)
			rc = w < 0 ? -errno : -EIO;
	}
	if (!rc && fdatasync(fd) < 0)
		rc = -errno;
	/* The NFS loads authenticate as uid/gid; let them own it (only root
	 * may give it away, and only a root-run Ganesha serves it anyway). */
	if (!rc && fchown(fd, uid, gid) < 0 && errno != EPERM)
		rc = -errno;
	free(buf);
	close(fd);
	return rc;
}

const struct xdr_proc_desc *nfs3_proc_desc(uint32_t proc)
{
	return &xdr_desc_NFS_PROGRAM_NFS_V3.procs[proc];
}

struct nfsd_call_opts nfs3_call_opts(uint32_t proc, const void *args, uint32_t uid, uint32_t gid)
{
	return (struct nfsd_call_opts){
	    .prog = NFS_PROGRAM,
	    .vers = NFS_V3,
	    .proc = proc,
	    .enc_args = args ? nfs3_proc_desc(proc)->enc_arg : NULL,
	    .args = args,
	    .timeout_ms = BENCH_CALL_TIMEOUT_MS,
	    .flavor = NFSD_AUTH_SYS,
	    .uid = uid,
	    .gid = gid,
	};
}

/* -------------------------------------------------------- NFSv3 load generator */

struct load;
struct load_slot {
	struct load *l;
	struct nfsd_clnt *c;
	uint64_t rng;
	uint64_t off;
	unsigned n;    /* completions, for sampling full verification */
	uint8_t *wbuf; /* WRITE payload */
	READ3args ra;
	WRITE3args wa;
	struct nfsd_call_opts o;
	struct xdr_arena arena;
	uint8_t arena_buf[2048];
};

/* Shared by all slots; counters are atomics because slots on different
 * client loops complete concurrently.  'why' is guarded by 'lock'. */
struct load {
	const struct nfs3_load_cfg *cfg;
	uint64_t nblocks;
	atomic_bool stop;
	atomic_uint inflight;
	atomic_ullong next_block;
	atomic_ullong bytes, ops, verified, short_io;
	atomic_int failed;
	atomic_bool have_verf;
	uint8_t verf[NFS3_WRITEVERFSIZE];
	pthread_mutex_t lock;
	char why[256];
};

static void load_fail(struct load *l, const char *fmt, ...)
{
	pthread_mutex_lock(&l->lock);
	if (!atomic_load(&l->failed)) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(l->why, sizeof(l->why), fmt, ap);
		va_end(ap);
		atomic_store(&l->failed, 1);
	}
	pthread_mutex_unlock(&l->lock);
	atomic_store(&l->stop, true);
}

static void slot_done(void *ctx, int err, struct xdr_dec *d);

/* Issue the slot's next call, or retire it when the load is over. */
static void slot_issue(struct load_slot *s)
{
	struct load *l = s->l;
	const struct nfs3_load_cfg *cfg = l->cfg;
	uint64_t blk;
	if (atomic_load_explicit(&l->stop, memory_order_relaxed))
		goto retire;
	if (cfg->once) {
		blk = atomic_fetch_add(&l->next_block, 1);
		if (blk >= l->nblocks)
			goto retire;
	} else if (cfg->random) {
		blk = bench_rand64(&s->rng) % l->nblocks;
	} else {
		blk = atomic_fetch_add(&l->next_block, 1) % l->nblocks;
	}
	s->off = blk * NFS3_LOAD_IO;
	if (cfg->op == NFS3_LOAD_WRITE) {
		/* The engine copies the call when it encodes it, so wbuf is
		 * free again as soon as nfsd_clnt_call_async returns. */
		nfs3_pattern_fill(s->wbuf, s->off, NFS3_LOAD_IO);
		s->wa.offset = s->off;
	} else {
		s->ra.offset = s->off;
	}
	int rc = nfsd_clnt_call_async(s->c, &s->o, slot_done, s);
	if (rc) {
		char eb[64];
		load_fail(l, "call failed: %s", bench_call_err_str(rc, eb, sizeof(eb)));
		goto retire;
	}
	return;
retire:
	atomic_fetch_sub(&l->inflight, 1);
}

static void slot_read_done(struct load_slot *s, struct xdr_dec *d)
{
	struct load *l = s->l;
	READ3res r;
	if (xdr_dec_READ3res(d, &r) < 0) {
		load_fail(l, "READ reply does not decode");
		return;
	}
	if (r.status != NFS3_OK) {
		load_fail(l, "READ at %llu: nfsstat3 %d", (unsigned long long)s->off,
			  (int)r.status);
		return;
	}
	const READ3resok *ok = &r.u.resok;
	if (ok->data.len != ok->count) {
		load_fail(l, "READ count %u but %u bytes of data", ok->count, ok->data.len);
		return;
	}
	if (ok->count < NFS3_LOAD_IO)
		atomic_fetch_add(&l->short_io, 1);
	bool full = (s->n++ % 16) == 0;
	if (!nfs3_pattern_ok(ok->data.val, s->off, ok->data.len, full)) {
		load_fail(l, "READ at %llu returned wrong data", (unsigned long long)s->off);
		return;
	}
	if (full)
		atomic_fetch_add(&l->verified, 1);
	atomic_fetch_add_explicit(&l->bytes, ok->data.len, memory_order_relaxed);
	atomic_fetch_add_explicit(&l->ops, 1, memory_order_relaxed);
}

static void slot_write_done(struct load_slot *s, struct xdr_dec *d)
{
	struct load *l = s->l;
	WRITE3res r;
	if (xdr_dec_WRITE3res(d, &r) < 0) {
		load_fail(l, "WRITE reply does not decode");
		return;
	}
	if (r.status != NFS3_OK) {
		load_fail(l, "WRITE at %llu: nfsstat3 %d", (unsigned long long)s->off,
			  (int)r.status);
		return;
	}
	const WRITE3resok *ok = &r.u.resok;
	if (ok->count < NFS3_LOAD_IO)
		atomic_fetch_add(&l->short_io, 1);
	/* RFC 1813 §3.3.7: one verifier for the run, or the server restarted
	 * and unstable data may be lost. */
	if (!atomic_load(&l->have_verf)) {
		pthread_mutex_lock(&l->lock);
		if (!atomic_load(&l->have_verf)) {
			memcpy(l->verf, ok->verf, sizeof(l->verf));
			atomic_store(&l->have_verf, true);
		}
		pthread_mutex_unlock(&l->lock);
	}
	if (memcmp(l->verf, ok->verf, sizeof(l->verf))) {
		load_fail(l, "WRITE verifier changed during the run");
		return;
	}
	atomic_fetch_add_explicit(&l->bytes, ok->count, memory_order_relaxed);
	atomic_fetch_add_explicit(&l->ops, 1, memory_order_relaxed);
}

/* Runs on the client loop thread of the slot's connection. */
static void slot_done(void *ctx, int err, struct xdr_dec *d)
{
	struct load_slot *s = ctx;
	struct load *l = s->l;
	if (err) {
		/* nfsd_clnt_free cancels what is still out after a stop */
		if (!(atomic_load(&l->stop) && err == -ECANCELED)) {
			char eb[64];
			load_fail(
			    l, "%s at %llu: %s", l->cfg->op == NFS3_LOAD_READ ? "READ" : "WRITE",
			    (unsigned long long)s->off, bench_call_err_str(err, eb, sizeof(eb)));
		}
		atomic_fetch_sub(&l->inflight, 1);
		return;
	}
	xdr_arena_reset(&s->arena);
	d->arena = &s->arena;
	if (l->cfg->op == NFS3_LOAD_READ)
		slot_read_done(s, d);
	else
		slot_write_done(s, d);
	slot_issue(s);
}

/* COMMIT the whole file (offset 0, count 0) on one connection. */
static int load_commit(struct load *l, struct nfsd_clnt *c)
{
	const struct nfs3_load_cfg *cfg = l->cfg;
	COMMIT3args a = {.file.data = xdr_opaque_of(cfg->fh, cfg->fhlen)};
	struct nfsd_call_opts o = nfs3_call_opts(NFSPROC3_COMMIT, &a, cfg->uid, cfg->gid);
	COMMIT3res r;
	uint8_t ab[2048];
	struct xdr_arena ar;
	xdr_arena_init(&ar, ab, sizeof(ab), 1 << 20);
	int err = nfsd_clnt_call(c, &o, nfs3_proc_desc(NFSPROC3_COMMIT)->dec_res, &r, &ar);
	if (err) {
		char eb[64];
		load_fail(l, "COMMIT: %s", bench_call_err_str(err, eb, sizeof(eb)));
	} else if (r.status != NFS3_OK) {
		load_fail(l, "COMMIT: nfsstat3 %d", (int)r.status);
		err = -EIO;
	} else if (atomic_load(&l->have_verf) && memcmp(r.u.resok.verf, l->verf, sizeof(l->verf))) {
		load_fail(l, "COMMIT verifier differs from WRITE's: server restarted");
		err = -EIO;
	}
	xdr_arena_release(&ar);
	return err;
}

static void load_drain(struct load *l, double timeout)
{
	double end = bench_now_s() + timeout;
	while (atomic_load(&l->inflight) && bench_now_s() < end)
		bench_sleep_s(0.005);
}

/*
 * Run one load.  Timed loads warm up for 0.3 s, then count the bytes
 * acknowledged in the window of cfg->secs.  A WRITE load's window ends when
 * the COMMITs that follow it return, so unstable data is counted only once
 * the server says it is durable.  A fill (cfg->once) is timed as a whole.
 */
void nfs3_load_run(const struct nfs3_load_cfg *cfg, struct nfs3_load_res *res)
{
	memset(res, 0, sizeof(*res));
	struct load l = {.cfg = cfg, .nblocks = cfg->file_size / NFS3_LOAD_IO};
	pthread_mutex_init(&l.lock, NULL);
	unsigned nslots = cfg->nconn * NFS3_LOAD_INFLIGHT;
	struct nfsd_clnt *conns[NFS3_LOAD_CONN_MAX] = {0};
	struct load_slot *slots = calloc(nslots, sizeof(*slots));
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	/* Like bench/rpc: the client gets half the cores, so the server keeps
	 * the rest; one loop for one connection. */
	unsigned loops = cfg->nconn == 1 ? 1 : (unsigned)(ncpu > 1 ? ncpu / 2 : 1);
	if (loops > cfg->nconn)
		loops = cfg->nconn;
	int err = 0;
	struct nfsd_server *eng = NULL;
	if (!slots || !l.nblocks || !cfg->nconn || cfg->nconn > NFS3_LOAD_CONN_MAX) {
		bench_strfmt(res->why, sizeof(res->why), "bad load parameters");
		goto out;
	}
	eng = nfsd_client_engine_new(loops, 0, &err);
	if (!eng) {
		bench_strfmt(res->why, sizeof(res->why), "client engine: %s", strerror(-err));
		goto out;
	}
	for (unsigned i = 0; i < cfg->nconn; i++) {
		conns[i] = bench_clnt_open(eng, cfg->port, &err);
		if (!conns[i]) {
			bench_strfmt(res->why, sizeof(res->why), "connect to port %d: %s",
				     cfg->port, strerror(-err));
			goto out;
		}
	}
	uint64_t seed = 0;
	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = (uint64_t)bench_now_s();
	for (unsigned i = 0; i < nslots; i++) {
		struct load_slot *s = &slots[i];
		s->l = &l;
		s->c = conns[i / NFS3_LOAD_INFLIGHT];
		s->rng = (seed ^ (0x9e3779b97f4a7c15ull * (i + 1))) | 1;
		xdr_arena_init(&s->arena, s->arena_buf, sizeof(s->arena_buf), 64 << 10);
		xdr_opaque fh = xdr_opaque_of(cfg->fh, cfg->fhlen);
		if (cfg->op == NFS3_LOAD_WRITE) {
			if (posix_memalign((void **)&s->wbuf, 4096, NFS3_LOAD_IO)) {
				bench_strfmt(res->why, sizeof(res->why), "out of memory");
				goto out;
			}
			s->wa = (WRITE3args){.file.data = fh,
					     .count = NFS3_LOAD_IO,
					     .stable = cfg->stable,
					     .data = xdr_opaque_of(s->wbuf, NFS3_LOAD_IO)};
			s->o = nfs3_call_opts(NFSPROC3_WRITE, &s->wa, cfg->uid, cfg->gid);
		} else {
			s->ra = (READ3args){.file.data = fh, .count = NFS3_LOAD_IO};
			s->o = nfs3_call_opts(NFSPROC3_READ, &s->ra, cfg->uid, cfg->gid);
		}
	}

	double t0 = 0, t1, c0 = 0, c1 = 0, m0 = 0, m1;
	uint64_t b0 = 0, b1, o0 = 0, o1;
	atomic_store(&l.inflight, nslots);
	if (cfg->once) {
		m0 = bench_self_cpu_s();
		t0 = bench_now_s();
		if (cfg->server)
			c0 = bench_proc_cpu_s(cfg->server);
	}
	for (unsigned i = 0; i < nslots; i++)
		slot_issue(&slots[i]);
	if (!cfg->once) {
		bench_sleep_s(0.3);
		b0 = atomic_load(&l.bytes);
		o0 = atomic_load(&l.ops);
		if (cfg->server)
			c0 = bench_proc_cpu_s(cfg->server);
		m0 = bench_self_cpu_s();
		t0 = bench_now_s();
		double end = t0 + cfg->secs;
		while (!atomic_load(&l.failed) && bench_now_s() < end)
			bench_sleep_s(0.02);
		atomic_store(&l.stop, true);
	}
	if (cfg->op == NFS3_LOAD_READ && !cfg->once) {
		b1 = atomic_load(&l.bytes);
		o1 = atomic_load(&l.ops);
		t1 = bench_now_s();
		m1 = bench_self_cpu_s();
		if (cfg->server)
			c1 = bench_proc_cpu_s(cfg->server);
		load_drain(&l, BENCH_CALL_TIMEOUT_MS / 1000.0 + 5);
	} else {
		/* wait for every reply (a fill ends by itself), then COMMIT */
		while (atomic_load(&l.inflight) && !atomic_load(&l.failed))
			bench_sleep_s(0.005);
		load_drain(&l, BENCH_CALL_TIMEOUT_MS / 1000.0 + 5);
		if (cfg->op == NFS3_LOAD_WRITE && !atomic_load(&l.failed))
			for (unsigned i = 0; i < cfg->nconn; i++)
				load_commit(&l, conns[i]);
		b1 = atomic_load(&l.bytes);
		o1 = atomic_load(&l.ops);
		t1 = bench_now_s();
		m1 = bench_self_cpu_s();
		if (cfg->server)
			c1 = bench_proc_cpu_s(cfg->server);
	}
	if (atomic_load(&l.inflight))
		load_fail(&l, "%u calls still unanswered after the run", atomic_load(&l.inflight));
	if (atomic_load(&l.failed)) {
		pthread_mutex_lock(&l.lock);
		bench_strfmt(res->why, sizeof(res->why), "%s", l.why);
		pthread_mutex_unlock(&l.lock);
	} else {
		res->ok = true;
	}
	res->secs = t1 - t0;
	res->bytes = b1 - b0;
	res->ops = o1 - o0;
	res->mbps = res->secs > 0 ? (double)res->bytes / 1e6 / res->secs : 0;
	res->cpu_s = c1 - c0;
	res->client_cpu_s = m1 - m0;
	res->verified = atomic_load(&l.verified);
	res->short_io = atomic_load(&l.short_io);
	if (res->ok && res->short_io)
		fprintf(stderr, "bench/ds: note: %llu short %s replies (under 1 MiB)\n",
			(unsigned long long)res->short_io,
			cfg->op == NFS3_LOAD_READ ? "READ" : "WRITE");
out:
	atomic_store(&l.stop, true);
	for (unsigned i = 0; i < NFS3_LOAD_CONN_MAX; i++)
		nfsd_clnt_free(conns[i]); /* cancels, and waits for, what is left */
	if (eng)
		nfsd_server_free(eng);
	if (slots)
		for (unsigned i = 0; i < nslots; i++) {
			free(slots[i].wbuf);
			xdr_arena_release(&slots[i].arena);
		}
	free(slots);
	pthread_mutex_destroy(&l.lock);
}
