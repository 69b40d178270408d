/* SPDX-License-Identifier: MIT */
/*
 * bench/gss: what Kerberos costs braid-ds.  1 MiB NFSv4.1 READs and WRITEs
 * of one object, through our own client (nfsd_clnt, nfs41c), under
 * AUTH_SYS and RPCSEC_GSS krb5, krb5i and krb5p (nfsd/clnt_gss.h), in one
 * run: throughput, and the data server's CPU seconds per GiB (from
 * /proc/PID/stat: braid-ds runs as our child), with the client's beside it.
 *
 * Every case uses the same connections (--conns, 1 unless said), sessions
 * and slots, --inflight (16) calls in flight on each, at random 1 MiB
 * offsets (--sequential: in order), as a pNFS client's data-server I/O:
 * SEQUENCE, PUTFH, READ or WRITE.  The Kerberos calls carry the stateid a
 * metadata server would put in a tightly coupled layout (a capability,
 * ctl/cap.h, minted from the cluster key the bench gives braid-ds);
 * AUTH_SYS calls carry the object owner's ids (the anonymous stateid), as
 * a loosely coupled layout's.  READ replies go into a buffer per call, as
 * a client's would: received into it (a sink) under sys and krb5, copied
 * into it from the checked or unsealed reply under krb5i and krb5p.
 * WRITEs are UNSTABLE, and a COMMIT under the same flavor closes each
 * WRITE sample (its time counts).  Each sample runs a 0.2 s warm-up, then
 * measures its window.
 *
 * The cases are interleaved in rounds (--rounds, 5 unless --quick): each
 * round measures READ under sys, krb5, krb5i and krb5p; then the WRITE
 * rounds likewise.  A figure is its samples' bytes over their time, a
 * ratio that of two figures; every sample is printed, and each round's
 * ratio to the same round's sys sample.  --seconds is each case's
 * measured time in all (10, or 1 with --quick), split between rounds.
 * --flavors and --ops run a part of it (to profile one case; the rest is
 * null).
 *
 * Before the rounds, each flavor's data path is checked end to end: a READ
 * of a known block under it, and a block it WRITEs read back under sys;
 * every READ of the rounds is spot-checked against the object's pattern.
 * After them, MIT's own per-message speed on one core is measured (MIC,
 * its check, seal, unseal of 1 MiB), and the same through nfsd/k5msg.c
 * (OpenSSL), which the daemons and our client use.  From k5msg's speed
 * and the sys case's CPU per GiB comes the ceiling each Kerberos case has
 * on this machine (ceiling_ratio), printed beside what it reached.
 *
 * The realm (a KDC on loopback, braid-ds's keytab, the client's keys) is
 * bench/gss.sh's, which runs this program; without one (--no-krb5 WHY)
 * only sys is measured and the rest is null, with the reason.
 *
 * Usage: gss --ds-keytab KT --client-keytab KT --principal NAME
 *            [--seconds N] [--rounds N] [--quick] [--size SIZE[KMG]] [--conns N]
 *            [--inflight N] [--sequential] [--flavors sys,krb5,krb5i,krb5p]
 *            [--ops read,write] [--dir PATH] [--keep] [--braid-ds PATH] [--no-krb5 WHY]
 * Last line of output: one JSON object; a figure that was not measured is
 * null and the reason is printed.
 */
#include "config.h"

#include <errno.h>
#include <gssapi/gssapi.h>
#include <gssapi/gssapi_ext.h>
#include <gssapi/gssapi_krb5.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/common.h"
#include "bench/nfs3load.h"
#include "ctl/cap.h"
#include "ctl/client.h"
#include "nfsd/clnt_gss.h"
#include "nfsd/k5msg.h"
#include "nfsd/nfs41_clnt.h"

#define IO	   (1u << 20)
#define MB	   1e6
#define GIB	   (1024.0 * 1024.0 * 1024.0)
#define ROUNDS_MAX 16
#define CONNS_MAX  8
#define INFL_MAX   64
#define WARMUP_S   0.2
#define OBJ_UID	   1000u /* the object's owner and group (the RW fence ids) */
#define OBJ_GID	   1000u
#define OBJ_MODE   0640 /* as the MDS makes objects (LAYOUT_FENCE_MODE) */

enum flavor { F_SYS, F_KRB5, F_KRB5I, F_KRB5P, F_N };
enum op { O_READ, O_WRITE, O_N };
static const char *const fname[F_N] = {"sys", "krb5", "krb5i", "krb5p"};
static const char *const oname[O_N] = {"READ", "WRITE"};
static const char *const olow[O_N] = {"read", "write"};

/* ---------------------------------------------------------------- options */

struct opts {
	double secs;
	unsigned rounds, conns, inflight;
	uint64_t size;
	bool sequential, keep;
	bool want[F_N], want_op[O_N];
	const char *dir, *ds_keytab, *client_keytab, *principal, *no_krb5;
	char ds_path[PATH_MAX];
};

/* ---------------------------------------------------------------- results */

struct sample {
	double mbps, secs, cpu_s, ccpu_s;
};

struct row {
	bool ok, failed;
	unsigned n;
	double bytes, secs, cpu_s, ccpu_s;
	struct sample smp[ROUNDS_MAX];
	char why[256];
};

static struct row rows[O_N][F_N];

static void row_add(int o, int f, const struct sample *s)
{
	struct row *w = &rows[o][f];
	if (w->failed || w->n == ROUNDS_MAX)
		return;
	w->smp[w->n++] = *s;
	w->bytes += s->mbps * MB * s->secs;
	w->secs += s->secs;
	w->cpu_s += s->cpu_s;
	w->ccpu_s += s->ccpu_s;
	w->ok = true;
}

static void row_fail(int o, int f, const char *fmt, ...)
{
	struct row *w = &rows[o][f];
	if (w->failed)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(w->why, sizeof(w->why), fmt, ap);
	va_end(ap);
	w->failed = true;
	w->ok = false;
}

static bool row_mbps(int o, int f, double *v)
{
	const struct row *w = &rows[o][f];
	if (!w->ok || w->secs <= 0)
		return false;
	*v = w->bytes / MB / w->secs;
	return true;
}

static bool row_cpu_gib(int o, int f, bool client, double *v)
{
	const struct row *w = &rows[o][f];
	if (!w->ok || w->bytes <= 0)
		return false;
	*v = (client ? w->ccpu_s : w->cpu_s) / (w->bytes / GIB);
	return true;
}

static bool ratio(int o, int f, double *v)
{
	double a, b;
	if (!row_mbps(o, f, &a) || !row_mbps(o, F_SYS, &b) || b <= 0)
		return false;
	*v = a / b;
	return true;
}

static bool round_ratio(int o, int f, unsigned k, double *v)
{
	const struct row *w = &rows[o][f], *s = &rows[o][F_SYS];
	if (!w->ok || !s->ok || k >= w->n || k >= s->n || s->smp[k].mbps <= 0)
		return false;
	*v = w->smp[k].mbps / s->smp[k].mbps;
	return true;
}

/* ------------------------------------------------------------- braid-ds */

struct bds {
	struct bench_child ch;
	int port;
	char dir[PATH_MAX];
	char store[PATH_MAX + 16], key_file[PATH_MAX + 16], conf[PATH_MAX + 16];
	char log[PATH_MAX + 16];
	struct braid_key key;
	struct ds_objid id;
	uint8_t fh[DS_CTL_FH_MAX];
	uint32_t fhlen;
	uint8_t cap_read[12], cap_rw[12]; /* the capabilities an MDS would mint */
	char why[512];
};

static int bds_start(const struct opts *o, struct bds *d, struct nfsd_server *eng)
{
	bench_strfmt(d->store, sizeof(d->store), "%s/store", d->dir);
	bench_strfmt(d->key_file, sizeof(d->key_file), "%s/key", d->dir);
	bench_strfmt(d->conf, sizeof(d->conf), "%s/ds.conf", d->dir);
	bench_strfmt(d->log, sizeof(d->log), "%s/braid-ds.log", d->dir);
	if (access(o->ds_path, X_OK)) {
		bench_strfmt(d->why, sizeof(d->why), "braid-ds not built yet (%s)", o->ds_path);
		return -ENOENT;
	}
	if (mkdir(d->dir, 0755) && errno != EEXIST) {
		bench_strfmt(d->why, sizeof(d->why), "mkdir %s: %s", d->dir, strerror(errno));
		return -errno;
	}
	int rc = bench_key_write(d->key_file);
	if (rc) {
		bench_strfmt(d->why, sizeof(d->why), "key file: %s", strerror(-rc));
		return rc;
	}
	d->port = bench_port_pick();
	FILE *f = fopen(d->conf, "w");
	if (!f) {
		bench_strfmt(d->why, sizeof(d->why), "%s: %s", d->conf, strerror(errno));
		return -errno;
	}
	fprintf(f,
		"# Written by bench/gss.\n"
		"[ds]\n"
		"store_dir = %s\n"
		"listen = 127.0.0.1:%d\n"
		"key_file = %s\n"
		"keytab = %s\n"
		"nfs3 = no\n"
		"nfs41 = yes\n",
		d->store, d->port, d->key_file, o->ds_keytab ? o->ds_keytab : "");
	if (fclose(f)) {
		bench_strfmt(d->why, sizeof(d->why), "%s: %s", d->conf, strerror(errno));
		return -EIO;
	}
	char *argv[] = {(char *)o->ds_path, "-c", d->conf, NULL};
	rc = bench_child_spawn(&d->ch, "braid-ds", argv, d->log, -1);
	if (rc) {
		bench_strfmt(d->why, sizeof(d->why), "cannot start %s: %s", o->ds_path,
			     strerror(-rc));
		return rc;
	}
	int st = 0;
	rc = bench_wait_null(eng, &d->ch, d->port, NFS4_PROGRAM, 4, 30, &st);
	if (rc) {
		bench_child_not_ready(&d->ch, rc, st, NULL, "braid-ds", "nothing logged", d->why,
				      sizeof(d->why));
		return rc;
	}
	char msg[256];
	rc = braid_key_load(d->key_file, &d->key, msg, sizeof(msg));
	if (rc) {
		bench_strfmt(d->why, sizeof(d->why), "%s", msg);
		return rc;
	}
	/* the object, owned by the RW fence ids, mode as the MDS sets it */
	int err = 0;
	struct nfsd_clnt *c = bench_clnt_open(eng, d->port, &err);
	memcpy(d->id.key, "bench/gss object", sizeof(d->id.key));
	d->id.gen = 1;
	rc = c ? ds_ctl_create(c, &d->key, &d->id, OBJ_UID, OBJ_GID, OBJ_MODE, d->fh, &d->fhlen)
	       : err;
	nfsd_clnt_free(c);
	if (rc) {
		char eb[64];
		bench_strfmt(d->why, sizeof(d->why), "control CREATE: %s",
			     bench_call_err_str(rc, eb, sizeof(eb)));
		return rc < 0 ? rc : -EPROTO;
	}
	ctl_cap_make(&d->key.cap, &d->id, OBJ_UID, OBJ_GID, CTL_CAP_READ, d->cap_read);
	ctl_cap_make(&d->key.cap, &d->id, OBJ_UID, OBJ_GID, CTL_CAP_RW, d->cap_rw);
	return 0;
}

static void bds_stop(struct bds *d)
{
	if (d->ch.pid > 0 && !bench_child_stop(&d->ch, 20))
		fprintf(stderr, "bench/gss: braid-ds needed SIGKILL\n");
}

/* ------------------------------------------------------------- the client */

struct client {
	struct nfsd_server *eng;
	struct nfsd_clnt *c[CONNS_MAX];
	struct nfs41c_session *s[CONNS_MAX];
	struct nfsd_gss_clnt *gss; /* NULL without a realm */
	unsigned n;
	struct bds *d;
};

/* Make every session's COMPOUNDs flavor f. */
static void client_flavor(struct client *cl, enum flavor f)
{
	for (unsigned i = 0; i < cl->n; i++) {
		if (f == F_SYS) {
			nfs41c_session_set_cred(cl->s[i], OBJ_UID, OBJ_GID);
		} else {
			enum nfsd_gss_service svc = f == F_KRB5	   ? NFSD_GSS_SVC_NONE
						    : f == F_KRB5I ? NFSD_GSS_SVC_INTEGRITY
								   : NFSD_GSS_SVC_PRIVACY;
			nfs41c_session_set_auth(cl->s[i], nfsd_gss_clnt_auth(cl->gss, svc));
		}
	}
}

static void stateid_of(const struct bds *d, enum flavor f, enum op o, stateid4 *sid)
{
	memset(sid, 0, sizeof(*sid));
	if (f == F_SYS)
		return; /* anonymous: the DS goes by the caller's ids */
	sid->seqid = CTL_CAP_SEQID;
	memcpy(sid->other, o == O_READ ? d->cap_read : d->cap_rw, sizeof(sid->other));
}

/* SEQUENCE (added by nfs41c), PUTFH, READ or WRITE. */
static void ops_of(const struct bds *d, enum flavor f, enum op o, uint64_t off, const uint8_t *data,
		   nfs_argop4 ops[2])
{
	memset(ops, 0, 2 * sizeof(*ops));
	ops[0].argop = OP_PUTFH;
	ops[0].u.opputfh.object = xdr_opaque_of(d->fh, d->fhlen);
	if (o == O_READ) {
		ops[1].argop = OP_READ;
		stateid_of(d, f, o, &ops[1].u.opread.stateid);
		ops[1].u.opread.offset = off;
		ops[1].u.opread.count = IO;
	} else {
		ops[1].argop = OP_WRITE;
		stateid_of(d, f, o, &ops[1].u.opwrite.stateid);
		ops[1].u.opwrite.offset = off;
		ops[1].u.opwrite.stable = UNSTABLE4;
		ops[1].u.opwrite.data = xdr_opaque_of(data, IO);
	}
}

/* Where a READ reply's data starts: SEQUENCE, PUTFH, READ, all OK (the
 * engine hands sinks to krb5 and sys calls only: their results are plain). */
static int locate_read(const uint8_t *rec, size_t have, size_t rec_len, size_t *off, size_t *len)
{
	(void)rec_len;
	size_t at = 0;
	bool ok = true, more = false;
#define GET(v)                                                                                     \
	do {                                                                                       \
		if (at + 4 > have) {                                                               \
			more = true;                                                               \
			goto done;                                                                 \
		}                                                                                  \
		v = xdr_get32(rec + at);                                                           \
		at += 4;                                                                           \
	} while (0)
	uint32_t x, vl, tl;
	GET(x);
	GET(x);
	ok = ok && x == 1;
	GET(x);
	ok = ok && x == 0;
	GET(x);
	GET(vl);
	ok = ok && vl <= 400;
	if (!ok)
		goto done;
	at += (vl + 3) & ~3u;
	GET(x);
	ok = ok && x == 0; /* SUCCESS */
	GET(x);
	ok = ok && x == NFS4_OK;
	GET(tl);
	ok = ok && tl <= 64;
	if (!ok)
		goto done;
	at += (tl + 3) & ~3u;
	GET(x);
	ok = ok && x == 3;
	GET(x);
	ok = ok && x == OP_SEQUENCE;
	GET(x);
	ok = ok && x == NFS4_OK;
	at += NFS4_SESSIONID_SIZE + 5 * 4;
	GET(x);
	ok = ok && x == OP_PUTFH;
	GET(x);
	ok = ok && x == NFS4_OK;
	GET(x);
	ok = ok && x == OP_READ;
	GET(x);
	ok = ok && x == NFS4_OK;
	GET(x);
	ok = ok && x <= 1;
	GET(x);
	*len = x;
	*off = at;
done:
#undef GET
	if (!ok)
		return -1;
	return more ? 0 : 1;
}

/* One call's buffer and state. */
struct slot {
	struct load *ld;
	unsigned conn, idx;
	uint8_t *buf; /* IO bytes: the READ's destination, the WRITE's source */
	size_t got;
	struct nfsd_sink sink;
	uint64_t off;
};

struct load {
	struct client *cl;
	enum op op;
	enum flavor f;
	bool random, check, once; /* once: every block, in order, then stop */
	uint64_t size, next_seq;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned inflight[CONNS_MAX];
	unsigned freel[CONNS_MAX][INFL_MAX], nfree[CONNS_MAX];
	struct slot slots[CONNS_MAX][INFL_MAX];
	bool stop;
	atomic_uint_fast64_t bytes, ops;
	atomic_int errors;
	char why[256];
	uint64_t seed;
};

static void load_error(struct load *ld, const char *fmt, ...)
{
	pthread_mutex_lock(&ld->mu);
	if (!ld->why[0]) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(ld->why, sizeof(ld->why), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&ld->mu);
	atomic_fetch_add(&ld->errors, 1);
}

static void io_done(void *ctx, int rc, COMPOUND4res *res)
{
	struct slot *s = ctx;
	struct load *ld = s->ld;
	char eb[64];
	if (rc) {
		load_error(ld, "%s: %s", oname[ld->op], bench_call_err_str(rc, eb, sizeof(eb)));
	} else if (res->status != NFS4_OK || res->resarray.len != 3) {
		load_error(ld, "%s: nfsstat4 %d (%u results)", oname[ld->op], (int)res->status,
			   res->resarray.len);
	} else if (ld->op == O_READ) {
		const READ4resok *r = &res->resarray.val[2].u.opread.u.resok4;
		size_t n = s->got ? s->got : r->data.len;
		if (!s->got && r->data.len)
			memcpy(s->buf, r->data.val, r->data.len); /* into the caller's buffer */
		if (n != IO)
			load_error(ld, "READ of %zu bytes at %llu", n, (unsigned long long)s->off);
		else if (ld->check && !nfs3_pattern_ok(s->buf, s->off, n, false))
			load_error(ld, "READ at %llu: wrong data", (unsigned long long)s->off);
		else
			atomic_fetch_add(&ld->bytes, n);
	} else {
		uint32_t n = res->resarray.val[2].u.opwrite.u.resok4.count;
		if (n != IO)
			load_error(ld, "WRITE of %u bytes", n);
		else
			atomic_fetch_add(&ld->bytes, n);
	}
	atomic_fetch_add(&ld->ops, 1);
	pthread_mutex_lock(&ld->mu);
	ld->freel[s->conn][ld->nfree[s->conn]++] = s->idx;
	ld->inflight[s->conn]--;
	pthread_cond_broadcast(&ld->cv);
	pthread_mutex_unlock(&ld->mu);
}

/* The next block's offset; UINT64_MAX when a once load is done. */
static uint64_t load_offset(struct load *ld)
{
	uint64_t blocks = ld->size / IO;
	pthread_mutex_lock(&ld->mu);
	uint64_t k;
	if (ld->once) {
		k = ld->next_seq < blocks ? ld->next_seq++ : UINT64_MAX;
	} else if (ld->random) {
		ld->seed = ld->seed * 6364136223846793005ull + 1442695040888963407ull;
		k = (ld->seed >> 33) % blocks;
	} else {
		k = ld->next_seq++ % blocks;
	}
	pthread_mutex_unlock(&ld->mu);
	return k == UINT64_MAX ? k : k * IO;
}

struct issuer {
	struct load *ld;
	unsigned conn, inflight;
};

/* Keep inflight calls going on one connection until the load stops. */
static void *issuer_main(void *arg)
{
	struct issuer *is = arg;
	struct load *ld = is->ld;
	struct client *cl = ld->cl;
	unsigned c = is->conn;
	for (;;) {
		pthread_mutex_lock(&ld->mu);
		while (!ld->stop && !ld->nfree[c])
			pthread_cond_wait(&ld->cv, &ld->mu);
		if (ld->stop) {
			pthread_mutex_unlock(&ld->mu);
			break;
		}
		struct slot *s = &ld->slots[c][ld->freel[c][--ld->nfree[c]]];
		ld->inflight[c]++;
		pthread_mutex_unlock(&ld->mu);
		s->off = load_offset(ld);
		s->got = 0;
		if (s->off == UINT64_MAX) {
			pthread_mutex_lock(&ld->mu);
			ld->freel[c][ld->nfree[c]++] = s->idx;
			ld->inflight[c]--;
			pthread_cond_broadcast(&ld->cv);
			pthread_mutex_unlock(&ld->mu);
			break;
		}
		if (ld->once && ld->op == O_WRITE)
			nfs3_pattern_fill(s->buf, s->off, IO); /* the object's pattern */
		nfs_argop4 ops[2];
		ops_of(cl->d, ld->f, ld->op, s->off, s->buf, ops);
		int rc;
		if (ld->op == O_READ) {
			s->sink = (struct nfsd_sink){s->buf, IO, locate_read, &s->got};
			rc = nfs41c_compound_async_sink(cl->s[c], NULL, 0, ops, 2, &s->sink,
							io_done, s);
		} else {
			rc = nfs41c_compound_async(cl->s[c], NULL, 0, ops, 2, io_done, s);
		}
		if (rc) {
			char eb[64];
			load_error(ld, "send: %s", bench_call_err_str(rc, eb, sizeof(eb)));
			pthread_mutex_lock(&ld->mu);
			ld->freel[c][ld->nfree[c]++] = s->idx;
			ld->inflight[c]--;
			ld->stop = true;
			pthread_cond_broadcast(&ld->cv);
			pthread_mutex_unlock(&ld->mu);
			break;
		}
	}
	return NULL;
}

/* COMMIT the whole object under the sessions' flavor, on connection 0. */
static int commit_all(struct client *cl, char *why, size_t len)
{
	nfs_argop4 ops[2];
	memset(ops, 0, sizeof(ops));
	ops[0].argop = OP_PUTFH;
	ops[0].u.opputfh.object = xdr_opaque_of(cl->d->fh, cl->d->fhlen);
	ops[1].argop = OP_COMMIT;
	COMPOUND4res res;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	int rc = nfs41c_compound(cl->s[0], ops, 2, &res, &ar);
	if (!rc && res.status != NFS4_OK)
		rc = -EIO;
	if (rc) {
		char eb[64];
		bench_strfmt(why, len, "COMMIT: %s (nfsstat4 %d)",
			     bench_call_err_str(rc, eb, sizeof(eb)), rc ? 0 : (int)res.status);
	}
	xdr_arena_release(&ar);
	return rc;
}

/*
 * One sample: op under flavor f for secs after the warm-up (secs 0: every
 * block once, in order, timed whole); the window's bytes, time and CPU
 * (the server's, ours) in *s.  WRITE: the COMMIT that follows is in the
 * window.  0, or -1 with why.
 */
static int load_run(struct client *cl, const struct opts *o, enum op op, enum flavor f, double secs,
		    bool check, struct sample *smp, char *why, size_t wlen)
{
	struct load *ld = calloc(1, sizeof(*ld));
	if (!ld) {
		bench_strfmt(why, wlen, "out of memory");
		return -1;
	}
	ld->cl = cl;
	ld->op = op;
	ld->f = f;
	ld->random = !o->sequential;
	ld->check = check;
	ld->once = secs <= 0;
	ld->size = o->size;
	ld->seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)(bench_now_s() * 1e6);
	pthread_mutex_init(&ld->mu, NULL);
	pthread_cond_init(&ld->cv, NULL);
	int rc = 0;
	for (unsigned c = 0; c < cl->n && !rc; c++) {
		for (unsigned i = 0; i < o->inflight; i++) {
			struct slot *s = &ld->slots[c][i];
			s->ld = ld;
			s->conn = c;
			s->idx = i;
			s->buf = aligned_alloc(4096, IO);
			if (!s->buf) {
				rc = -ENOMEM;
				break;
			}
			if (op == O_WRITE && secs > 0)
				nfs3_pattern_fill(s->buf, (uint64_t)i * IO, IO);
			ld->freel[c][ld->nfree[c]++] = i;
		}
	}
	client_flavor(cl, f);
	pthread_t thr[CONNS_MAX];
	struct issuer is[CONNS_MAX];
	unsigned started = 0;
	for (unsigned c = 0; c < cl->n && !rc; c++) {
		is[c] = (struct issuer){ld, c, o->inflight};
		if (pthread_create(&thr[c], NULL, issuer_main, &is[c]))
			break;
		started++;
	}
	if (!ld->once)
		bench_sleep_s(WARMUP_S);
	double t0 = bench_now_s(), cpu0 = bench_proc_cpu_s(cl->d->ch.pid),
	       ccpu0 = bench_self_cpu_s();
	uint64_t b0 = atomic_load(&ld->bytes);
	if (ld->once) {
		for (unsigned c = 0; c < started; c++)
			pthread_join(thr[c], NULL);
		pthread_mutex_lock(&ld->mu);
		for (unsigned c = 0; c < cl->n; c++)
			while (ld->inflight[c])
				pthread_cond_wait(&ld->cv, &ld->mu);
		pthread_mutex_unlock(&ld->mu);
		started = 0;
	}
	while (!ld->once && bench_now_s() - t0 < secs && !atomic_load(&ld->errors))
		bench_sleep_s(0.01);
	uint64_t b1 = atomic_load(&ld->bytes);
	double t1 = bench_now_s();
	pthread_mutex_lock(&ld->mu);
	ld->stop = true;
	pthread_cond_broadcast(&ld->cv);
	pthread_mutex_unlock(&ld->mu);
	for (unsigned c = 0; c < started; c++)
		pthread_join(thr[c], NULL);
	if (op == O_WRITE && !atomic_load(&ld->errors)) {
		/* the window ends once what it wrote is durable */
		pthread_mutex_lock(&ld->mu);
		for (unsigned c = 0; c < cl->n; c++)
			while (ld->inflight[c])
				pthread_cond_wait(&ld->cv, &ld->mu);
		pthread_mutex_unlock(&ld->mu);
		char cw[256];
		if (commit_all(cl, cw, sizeof(cw)))
			load_error(ld, "%s", cw);
		t1 = bench_now_s();
	}
	double cpu1 = bench_proc_cpu_s(cl->d->ch.pid), ccpu1 = bench_self_cpu_s();
	/* the rest drain */
	pthread_mutex_lock(&ld->mu);
	for (unsigned c = 0; c < cl->n; c++)
		while (ld->inflight[c])
			pthread_cond_wait(&ld->cv, &ld->mu);
	pthread_mutex_unlock(&ld->mu);
	if (rc)
		bench_strfmt(why, wlen, "%s", strerror(-rc));
	else if (atomic_load(&ld->errors))
		bench_strfmt(why, wlen, "%s", ld->why);
	else if (!ld->once && started < cl->n)
		bench_strfmt(why, wlen, "pthread_create failed");
	else
		*smp = (struct sample){.mbps = (double)(b1 - b0) / MB / (t1 - t0),
				       .secs = t1 - t0,
				       .cpu_s = cpu1 - cpu0,
				       .ccpu_s = ccpu1 - ccpu0};
	bool bad = rc || atomic_load(&ld->errors) || (!ld->once && started < cl->n);
	for (unsigned c = 0; c < cl->n; c++)
		for (unsigned i = 0; i < o->inflight; i++)
			free(ld->slots[c][i].buf);
	pthread_cond_destroy(&ld->cv);
	pthread_mutex_destroy(&ld->mu);
	free(ld);
	return bad ? -1 : 0;
}

/* One synchronous READ or WRITE of block off under f: 0 or why. */
static int io_once(struct client *cl, enum flavor f, enum op op, uint64_t off, uint8_t *buf,
		   char *why, size_t len)
{
	nfs_argop4 ops[2];
	ops_of(cl->d, f, op, off, buf, ops);
	client_flavor(cl, f);
	COMPOUND4res res;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 4u << 20);
	int rc = nfs41c_compound(cl->s[0], ops, 2, &res, &ar);
	char eb[64];
	if (rc) {
		bench_strfmt(why, len, "%s %s: %s", oname[op], fname[f],
			     bench_call_err_str(rc, eb, sizeof(eb)));
	} else if (res.status != NFS4_OK) {
		bench_strfmt(why, len, "%s %s: nfsstat4 %d", oname[op], fname[f], (int)res.status);
		rc = -EIO;
	} else if (op == O_READ) {
		const READ4resok *r = &res.resarray.val[2].u.opread.u.resok4;
		if (r->data.len != IO) {
			bench_strfmt(why, len, "READ %s: %u bytes", fname[f], r->data.len);
			rc = -EIO;
		} else {
			memcpy(buf, r->data.val, IO);
		}
	}
	xdr_arena_release(&ar);
	return rc;
}

/*
 * Each flavor's data path end to end: a block written under sys read
 * under it, and a block it writes read under sys.  False (and the flavor's
 * rows missing) when either is wrong.
 */
static bool flavor_check(struct client *cl, enum flavor f)
{
	uint8_t *buf = malloc(IO);
	char why[256] = "";
	uint64_t a = 5ull * IO, b = (6ull + (unsigned)f) * IO;
	bool ok = buf && !io_once(cl, f, O_READ, a, buf, why, sizeof(why));
	if (ok && !nfs3_pattern_ok(buf, a, IO, true)) {
		bench_strfmt(why, sizeof(why), "READ under %s: wrong data", fname[f]);
		ok = false;
	}
	if (ok) {
		nfs3_pattern_fill(buf, b, IO);
		ok = !io_once(cl, f, O_WRITE, b, buf, why, sizeof(why));
	}
	if (ok) {
		memset(buf, 0, IO);
		ok = !io_once(cl, F_SYS, O_READ, b, buf, why, sizeof(why));
		if (ok && !nfs3_pattern_ok(buf, b, IO, true)) {
			bench_strfmt(why, sizeof(why), "WRITE under %s read back wrong", fname[f]);
			ok = false;
		}
	}
	if (!ok)
		for (int o = 0; o < O_N; o++)
			row_fail(o, f, "%s", why[0] ? why : "out of memory");
	free(buf);
	return ok;
}

/* Fill the object with the pattern: WRITEs under sys, in order, then COMMIT. */
static int fill(struct client *cl, const struct opts *o, char *why, size_t len)
{
	struct sample s;
	return load_run(cl, o, O_WRITE, F_SYS, 0, false, &s, why, len);
}

static int client_open(struct client *cl, const struct opts *o, struct bds *d, char *why,
		       size_t len)
{
	int err = 0;
	cl->d = d;
	cl->eng = nfsd_client_engine_new(1, 0, &err);
	if (!cl->eng) {
		bench_strfmt(why, len, "client engine: %s", strerror(-err));
		return err;
	}
	for (unsigned i = 0; i < o->conns; i++) {
		cl->c[i] = bench_clnt_open(cl->eng, d->port, &err);
		if (!cl->c[i]) {
			bench_strfmt(why, len, "connect: %s", strerror(-err));
			return err;
		}
		cl->n = i + 1;
		char owner[64];
		bench_strfmt(owner, sizeof(owner), "bench/gss %d %u", (int)getpid(), i);
		struct nfs41c_session_opts so = {.owner = owner,
						 .exchgid_flags = EXCHGID4_FLAG_USE_PNFS_DS};
		int rc = nfs41c_session_create_opts(cl->c[i], &so, &cl->s[i]);
		if (rc) {
			char eb[64];
			bench_strfmt(why, len, "session: %s",
				     bench_call_err_str(rc, eb, sizeof(eb)));
			cl->s[i] = NULL;
			return rc < 0 ? rc : -EPROTO;
		}
	}
	return 0;
}

static int client_gss(struct client *cl, const struct opts *o, char *why, size_t len)
{
	int err = 0;
	struct nfsd_gss_clnt_opts go = {
	    .prog = NFS4_PROGRAM,
	    .vers = 4,
	    .service = "nfs@localhost",
	    .principal = o->principal,
	    .keytab = o->client_keytab,
	    .timeout_ms = 10000,
	};
	cl->gss = nfsd_gss_clnt_new(cl->c[0], &go, why, len, &err);
	return cl->gss ? 0 : err;
}

static void client_close(struct client *cl)
{
	nfsd_gss_clnt_free(cl->gss);
	for (unsigned i = 0; i < cl->n; i++) {
		if (cl->s[i]) {
			nfs41c_session_set_cred(cl->s[i], OBJ_UID, OBJ_GID);
			nfs41c_session_destroy(cl->s[i]);
		}
		nfsd_clnt_free(cl->c[i]);
	}
	if (cl->eng)
		nfsd_server_free(cl->eng);
}

/* ------------------------------------------------------------- MIT's speed */

/*
 * The ceiling Kerberos puts on a core, beside the loads: MIT's
 * per-message calls on 1 MiB, as krb5i (gss_get_mic_iov, and
 * gss_verify_mic_iov at the other end) and krb5p (gss_wrap_iov,
 * gss_unwrap_iov) use them, on a context this process makes with itself
 * (the client's keys to braid-ds's), each timed alone on one thread.
 */
#define CEIL_WIN 32 /* blocks of the region the ceiling streams through */

struct ceiling {
	bool ok;
	double mic, verify, wrap, unwrap; /* MB/s */
	char enctype[48];
	char why[256];
	/* the same four through nfsd/k5msg.c (OpenSSL), which the daemons
	 * and our client use */
	bool k_ok;
	double k_mic, k_verify, k_wrap, k_unwrap;
	char k_why[128];
};

static const char *enctype_name(unsigned e)
{
	switch (e) {
	case 17:
		return "aes128-cts-hmac-sha1-96";
	case 18:
		return "aes256-cts-hmac-sha1-96";
	case 19:
		return "aes128-cts-hmac-sha256-128";
	case 20:
		return "aes256-cts-hmac-sha384-192";
	case 25:
		return "camellia128-cts-cmac";
	case 26:
		return "camellia256-cts-cmac";
	default:
		return NULL;
	}
}

/* The context's enctype (GSS_C_INQ_SSPI_SESSION_KEY: the key, then an OID
 * 1.2.840.113554.1.2.2.4 whose one more arc is the enctype). */
static void ceiling_enctype(gss_ctx_id_t ctx, struct ceiling *c)
{
	OM_uint32 min;
	gss_buffer_set_t set = GSS_C_NO_BUFFER_SET;
	bench_strfmt(c->enctype, sizeof(c->enctype), "unknown");
	if (GSS_ERROR(
		gss_inquire_sec_context_by_oid(&min, ctx, GSS_C_INQ_SSPI_SESSION_KEY, &set)) ||
	    !set || set->count < 2 || set->elements[1].length <= 10) {
		gss_release_buffer_set(&min, &set);
		return;
	}
	const uint8_t *p = set->elements[1].value;
	unsigned e = 0;
	for (size_t i = 10; i < set->elements[1].length; i++)
		e = e << 7 | (p[i] & 0x7f);
	const char *n = enctype_name(e);
	if (n)
		bench_strfmt(c->enctype, sizeof(c->enctype), "%s", n);
	else
		bench_strfmt(c->enctype, sizeof(c->enctype), "enctype %u", e);
	gss_release_buffer_set(&min, &set);
}

static bool ceiling_cred(const char *kind, const char *path, const char *who, gss_cred_usage_t use,
			 gss_cred_id_t *cred, struct ceiling *c)
{
	OM_uint32 maj, min;
	gss_name_t name = GSS_C_NO_NAME;
	if (who) {
		gss_buffer_desc b = {strlen(who), (void *)who};
		if (GSS_ERROR(
			gss_import_name(&min, &b, (gss_OID)GSS_KRB5_NT_PRINCIPAL_NAME, &name)))
			return false;
	}
	gss_key_value_element_desc kv[2] = {{kind, path}, {"ccache", "MEMORY:bench-gss-ceiling"}};
	gss_key_value_set_desc store = {use == GSS_C_INITIATE ? 2 : 1, kv};
	maj = gss_acquire_cred_from(&min, name, GSS_C_INDEFINITE, GSS_C_NO_OID_SET, use, &store,
				    cred, NULL, NULL);
	if (name != GSS_C_NO_NAME)
		gss_release_name(&min, &name);
	if (GSS_ERROR(maj))
		bench_strfmt(c->why, sizeof(c->why),
			     "gss_acquire_cred_from(%s): major %#x minor %u", path, maj, min);
	return !GSS_ERROR(maj);
}

/* The four calls again through nfsd/k5msg.c, on the same contexts. */
static void ceiling_k5msg(gss_ctx_id_t *ictx, gss_ctx_id_t *actx, uint8_t *buf, struct ceiling *c)
{
	struct k5msg *ki = k5msg_new(ictx), *ka = k5msg_new(actx);
	if (!ki || !ka || !k5msg_fast(ki) || !k5msg_fast(ka)) {
		bench_strfmt(c->k_why, sizeof(c->k_why), "%s is MIT's",
			     ki ? k5msg_enctype(ki) : "the context");
		goto out;
	}
	static uint8_t mic[CEIL_WIN][64];
	size_t ml = 0, hl = 0, tl = 0;
	k5msg_mic_len(ki, &ml);
	k5msg_wrap_len(ki, IO - 256, &hl, &tl);
	if (ml > sizeof(mic[0]) || hl + IO - 256 + tl > IO) {
		bench_strfmt(c->k_why, sizeof(c->k_why), "tokens larger than expected");
		goto out;
	}
	double t, spent;
	unsigned n;
	for (int pass = 0; pass < 2; pass++) {
		spent = 0;
		for (n = 0; spent < 0.4 || n < CEIL_WIN; n++) {
			struct iovec v = {buf + (size_t)(n % CEIL_WIN) * IO, IO};
			t = bench_now_s();
			OM_uint32 maj = pass ? k5msg_verify_mic(ka, &v, 1, mic[n % CEIL_WIN], ml)
					     : k5msg_get_mic(ki, &v, 1, mic[n % CEIL_WIN], ml);
			spent += bench_now_s() - t;
			if (GSS_ERROR(maj)) {
				bench_strfmt(c->k_why, sizeof(c->k_why), "k5msg %s: major %#x",
					     pass ? "verify" : "MIC", maj);
				goto out;
			}
		}
		*(pass ? &c->k_verify : &c->k_mic) = n * (double)IO / MB / spent;
	}
	double wspent = 0, uspent = 0;
	unsigned wn = 0, un = 0;
	while (wspent < 0.4 || uspent < 0.4) {
		for (unsigned i = 0; i < CEIL_WIN; i++, wn++) {
			uint8_t *p = buf + (size_t)i * IO;
			t = bench_now_s();
			OM_uint32 maj = k5msg_wrap(ki, p, p + hl, IO - 256, p + hl + IO - 256);
			wspent += bench_now_s() - t;
			if (GSS_ERROR(maj)) {
				bench_strfmt(c->k_why, sizeof(c->k_why), "k5msg wrap: major %#x", maj);
				goto out;
			}
		}
		for (unsigned i = 0; i < CEIL_WIN; i++, un++) {
			uint8_t *p = buf + (size_t)i * IO, *d = NULL;
			size_t dl = 0;
			t = bench_now_s();
			OM_uint32 maj = k5msg_unwrap(ka, p, hl + IO - 256 + tl, &d, &dl);
			uspent += bench_now_s() - t;
			if (GSS_ERROR(maj) || dl != IO - 256) {
				bench_strfmt(c->k_why, sizeof(c->k_why), "k5msg unwrap: major %#x",
					     maj);
				goto out;
			}
			memmove(p + hl, d, IO - 256);
		}
	}
	c->k_wrap = wn * (double)(IO - 256) / MB / wspent;
	c->k_unwrap = un * (double)(IO - 256) / MB / uspent;
	c->k_ok = true;
out:
	k5msg_free(ki);
	k5msg_free(ka);
}

/*
 * The most a Kerberos case can do beside sys on this machine, from the
 * crypto's cost alone: with every core busy in the sys case (client and
 * server on one box), each GiB costs sys's CPU (server and client) plus
 * the sender's MIC or seal and the receiver's check or unseal at
 * k5msg's one-core speed, so the case runs at most sys x S / (S + crypto).
 */
static bool ceiling_ratio(int op, int f, const struct ceiling *cz, double *v)
{
	double ss, sc;
	if (!cz->k_ok || (f != F_KRB5I && f != F_KRB5P) || !row_cpu_gib(op, F_SYS, false, &ss) ||
	    !row_cpu_gib(op, F_SYS, true, &sc))
		return false;
	double a = f == F_KRB5I ? cz->k_mic : cz->k_wrap;
	double b = f == F_KRB5I ? cz->k_verify : cz->k_unwrap;
	double crypto = GIB / MB / a + GIB / MB / b, sys = ss + sc;
	*v = sys / (sys + crypto);
	return true;
}

static void ceiling_measure(const struct opts *o, struct ceiling *c)
{
	OM_uint32 maj, min;
	gss_cred_id_t icred = GSS_C_NO_CREDENTIAL, acred = GSS_C_NO_CREDENTIAL;
	gss_ctx_id_t ictx = GSS_C_NO_CONTEXT, actx = GSS_C_NO_CONTEXT;
	gss_name_t target = GSS_C_NO_NAME;
	uint8_t *buf = malloc((size_t)CEIL_WIN * IO);
	if (!buf ||
	    !ceiling_cred("client_keytab", o->client_keytab, o->principal, GSS_C_INITIATE, &icred,
			  c) ||
	    !ceiling_cred("keytab", o->ds_keytab, NULL, GSS_C_ACCEPT, &acred, c))
		goto out;
	gss_buffer_desc sn = {strlen("nfs@localhost"), "nfs@localhost"};
	gss_import_name(&min, &sn, GSS_C_NT_HOSTBASED_SERVICE, &target);
	gss_buffer_desc in = GSS_C_EMPTY_BUFFER, out = GSS_C_EMPTY_BUFFER,
			back = GSS_C_EMPTY_BUFFER;
	for (int round = 0; round < 4; round++) {
		maj = gss_init_sec_context(&min, icred, &ictx, target, (gss_OID)gss_mech_krb5,
					   GSS_C_MUTUAL_FLAG, 0, GSS_C_NO_CHANNEL_BINDINGS, &back,
					   NULL, &out, NULL, NULL);
		gss_release_buffer(&min, &back);
		if (GSS_ERROR(maj) || maj == GSS_S_COMPLETE)
			break;
		in = out;
		maj = gss_accept_sec_context(&min, &actx, acred, &in, GSS_C_NO_CHANNEL_BINDINGS,
					     NULL, NULL, &back, NULL, NULL, NULL);
		gss_release_buffer(&min, &out);
		if (GSS_ERROR(maj))
			break;
	}
	gss_release_buffer(&min, &out);
	gss_release_buffer(&min, &back);
	if (GSS_ERROR(maj) || maj != GSS_S_COMPLETE) {
		bench_strfmt(c->why, sizeof(c->why), "a context with ourselves: major %#x minor %u",
			     maj, min);
		goto out;
	}
	ceiling_enctype(ictx, c);
	/* the data streams from memory, as a READ's from the page cache: a
	 * region of CEIL_WIN blocks, each used in turn */
	memset(buf, 0x5a, (size_t)CEIL_WIN * IO);
	double t, spent;
	unsigned n;
	gss_iov_buffer_desc iov[4];
	/* MIC, then its check at the other end */
	static uint8_t mic[CEIL_WIN][64];
	iov[0] = (gss_iov_buffer_desc){GSS_IOV_BUFFER_TYPE_DATA, {IO, buf}};
	iov[1] = (gss_iov_buffer_desc){GSS_IOV_BUFFER_TYPE_MIC_TOKEN, {0, NULL}};
	maj = gss_get_mic_iov_length(&min, ictx, GSS_C_QOP_DEFAULT, iov, 2);
	size_t miclen = iov[1].buffer.length;
	if (GSS_ERROR(maj) || miclen > sizeof(mic[0])) {
		bench_strfmt(c->why, sizeof(c->why), "gss_get_mic_iov_length: major %#x", maj);
		goto out;
	}
	for (int pass = 0; pass < 2; pass++) {
		spent = 0;
		for (n = 0; spent < 0.4 || n < CEIL_WIN; n++) {
			iov[0].buffer.value = buf + (size_t)(n % CEIL_WIN) * IO;
			iov[1].buffer = (gss_buffer_desc){miclen, mic[n % CEIL_WIN]};
			t = bench_now_s();
			maj = pass ? gss_verify_mic_iov(&min, actx, NULL, iov, 2)
				   : gss_get_mic_iov(&min, ictx, GSS_C_QOP_DEFAULT, iov, 2);
			spent += bench_now_s() - t;
			if (GSS_ERROR(maj)) {
				bench_strfmt(c->why, sizeof(c->why), "%s: major %#x",
					     pass ? "gss_verify_mic_iov" : "gss_get_mic_iov", maj);
				goto out;
			}
		}
		*(pass ? &c->verify : &c->mic) = n * (double)IO / MB / spent;
	}
	/* seal every block of the region in place, then unseal each once */
	int conf = 0;
	iov[0] = (gss_iov_buffer_desc){GSS_IOV_BUFFER_TYPE_HEADER, {0, NULL}};
	iov[1] = (gss_iov_buffer_desc){GSS_IOV_BUFFER_TYPE_DATA, {IO - 256, NULL}};
	iov[2] = (gss_iov_buffer_desc){GSS_IOV_BUFFER_TYPE_PADDING, {0, NULL}};
	iov[3] = (gss_iov_buffer_desc){GSS_IOV_BUFFER_TYPE_TRAILER, {0, NULL}};
	maj = gss_wrap_iov_length(&min, ictx, 1, GSS_C_QOP_DEFAULT, &conf, iov, 4);
	size_t hl = iov[0].buffer.length, pl = iov[2].buffer.length, tl = iov[3].buffer.length;
	size_t toklen = hl + (IO - 256) + pl + tl;
	if (GSS_ERROR(maj) || toklen > IO) {
		bench_strfmt(c->why, sizeof(c->why), "gss_wrap_iov_length: major %#x", maj);
		goto out;
	}
	double wspent = 0, uspent = 0;
	unsigned wn = 0, un = 0;
	while (wspent < 0.4 || uspent < 0.4) {
		for (unsigned i = 0; i < CEIL_WIN; i++, wn++) {
			uint8_t *p = buf + (size_t)i * IO;
			iov[0] = (gss_iov_buffer_desc){GSS_IOV_BUFFER_TYPE_HEADER, {hl, p}};
			iov[1] =
			    (gss_iov_buffer_desc){GSS_IOV_BUFFER_TYPE_DATA, {IO - 256, p + hl}};
			iov[2] = (gss_iov_buffer_desc){GSS_IOV_BUFFER_TYPE_PADDING,
						       {pl, p + hl + IO - 256}};
			iov[3] = (gss_iov_buffer_desc){GSS_IOV_BUFFER_TYPE_TRAILER,
						       {tl, p + hl + IO - 256 + pl}};
			t = bench_now_s();
			maj = gss_wrap_iov(&min, ictx, 1, GSS_C_QOP_DEFAULT, &conf, iov, 4);
			wspent += bench_now_s() - t;
			if (GSS_ERROR(maj) || !conf) {
				bench_strfmt(c->why, sizeof(c->why), "gss_wrap_iov: major %#x",
					     maj);
				goto out;
			}
		}
		for (unsigned i = 0; i < CEIL_WIN; i++, un++) {
			iov[0] = (gss_iov_buffer_desc){GSS_IOV_BUFFER_TYPE_STREAM,
						       {toklen, buf + (size_t)i * IO}};
			iov[1] = (gss_iov_buffer_desc){GSS_IOV_BUFFER_TYPE_DATA, {0, NULL}};
			t = bench_now_s();
			maj = gss_unwrap_iov(&min, actx, &conf, NULL, iov, 2);
			uspent += bench_now_s() - t;
			if (GSS_ERROR(maj) || !conf || iov[1].buffer.length != IO - 256) {
				bench_strfmt(c->why, sizeof(c->why), "gss_unwrap_iov: major %#x",
					     maj);
				goto out;
			}
			/* back where the next seal expects its data */
			memmove(buf + (size_t)i * IO + hl, iov[1].buffer.value, IO - 256);
		}
	}
	c->wrap = wn * (double)(IO - 256) / MB / wspent;
	c->unwrap = un * (double)(IO - 256) / MB / uspent;
	c->ok = true;
	ceiling_k5msg(&ictx, &actx, buf, c);
out:
	if (ictx != GSS_C_NO_CONTEXT)
		gss_delete_sec_context(&min, &ictx, GSS_C_NO_BUFFER);
	if (actx != GSS_C_NO_CONTEXT)
		gss_delete_sec_context(&min, &actx, GSS_C_NO_BUFFER);
	if (target != GSS_C_NO_NAME)
		gss_release_name(&min, &target);
	if (icred != GSS_C_NO_CREDENTIAL)
		gss_release_cred(&min, &icred);
	if (acred != GSS_C_NO_CREDENTIAL)
		gss_release_cred(&min, &acred);
	if (!c->ok && !c->why[0])
		bench_strfmt(c->why, sizeof(c->why), "out of memory");
	free(buf);
}

/* ------------------------------------------------------------- output */

static void table_print(const struct opts *o, const struct ceiling *cz)
{
	printf("\n%-12s %9s %15s %15s %8s\n", "case", "MB/s", "server s/GiB", "client s/GiB",
	       "vs sys");
	for (int op = 0; op < O_N; op++) {
		for (int f = 0; f < F_N; f++) {
			char name[32];
			bench_strfmt(name, sizeof(name), "%s %s", oname[op], fname[f]);
			const struct row *w = &rows[op][f];
			if (!w->ok) {
				printf("%-12s %9s  %s\n", name, "-",
				       w->why[0] ? w->why : "not run");
				continue;
			}
			double v = 0, sc = 0, cc = 0, r = 0;
			row_mbps(op, f, &v);
			row_cpu_gib(op, f, false, &sc);
			row_cpu_gib(op, f, true, &cc);
			char rs[16] = "-";
			if (ratio(op, f, &r))
				bench_strfmt(rs, sizeof(rs), "%.3f", r);
			printf("%-12s %9.0f %15.3f %15.3f %8s\n", name, v, sc, cc, rs);
		}
	}
	if (cz->ok)
		printf("\nMIT krb5 on one core, 1 MiB, %s: MIC %.0f MB/s, its check %.0f, "
		       "seal %.0f, unseal %.0f\n",
		       cz->enctype, cz->mic, cz->verify, cz->wrap, cz->unwrap);
	else
		printf("\nMIT krb5 on one core: not measured (%s)\n", cz->why);
	if (cz->k_ok) {
		printf("braid (nfsd/k5msg.c, OpenSSL) on one core, the same: MIC %.0f MB/s, its "
		       "check %.0f, seal %.0f, unseal %.0f\n",
		       cz->k_mic, cz->k_verify, cz->k_wrap, cz->k_unwrap);
		printf("the ceiling on this machine (every core busy in sys; sys's CPU per GiB "
		       "plus the crypto's):\n");
		for (int op = 0; op < O_N; op++)
			for (int f = F_KRB5I; f < F_N; f++) {
				double c, r;
				if (!ceiling_ratio(op, f, cz, &c))
					continue;
				printf("  %-5s %-5s at most %.3f of sys", oname[op], fname[f], c);
				if (ratio(op, f, &r))
					printf("; measured %.3f, %.2f of the ceiling", r, r / c);
				printf("\n");
			}
	} else if (cz->ok) {
		printf("braid (nfsd/k5msg.c): not measured (%s)\n", cz->k_why);
	}
	printf("\nevery sample (MB/s; server CPU s/GiB; ratio to the round's sys sample):\n");
	for (int op = 0; op < O_N; op++) {
		for (unsigned k = 0; k < o->rounds; k++) {
			printf("%-5s round %2u:", oname[op], k + 1);
			for (int f = 0; f < F_N; f++) {
				const struct row *w = &rows[op][f];
				if (!w->ok || k >= w->n) {
					printf("  %5s %7s", fname[f], "-");
					continue;
				}
				const struct sample *s = &w->smp[k];
				double r;
				char rs[16] = "";
				if (f != F_SYS && round_ratio(op, f, k, &r))
					bench_strfmt(rs, sizeof(rs), " x%.3f", r);
				printf("  %5s %7.0f %5.2f%s", fname[f], s->mbps,
				       s->mbps > 0 ? s->cpu_s / (s->mbps * MB * s->secs / GIB) : 0,
				       rs);
			}
			printf("\n");
		}
	}
}

static void json_print(const struct opts *o, const struct ceiling *cz)
{
	putchar('{');
	bench_json_str("bench", "gss");
	bench_json_num("seconds", true, o->secs, 1);
	bench_json_num("rounds", true, o->rounds, 0);
	bench_json_num("conns", true, o->conns, 0);
	bench_json_num("inflight", true, o->inflight, 0);
	bench_json_num("io_bytes", true, IO, 0);
	bench_json_num("object_MiB", true, (double)(o->size >> 20), 0);
	bench_json_num("cores", true, (double)sysconf(_SC_NPROCESSORS_ONLN), 0);
	bench_json_str("offsets", o->sequential ? "sequential" : "random");
	char k[64];
	double v = 0;
	for (int op = 0; op < O_N; op++) {
		for (int f = 0; f < F_N; f++) {
			bench_strfmt(k, sizeof(k), "%s_%s_MBps", fname[f], olow[op]);
			bool ok = row_mbps(op, f, &v);
			bench_json_num(k, ok, v, 1);
		}
	}
	/* READ ratios under their issue names, then WRITE's */
	for (int op = 0; op < O_N; op++) {
		for (int f = F_KRB5; f < F_N; f++) {
			if (op == O_READ)
				bench_strfmt(k, sizeof(k), "%s_vs_sys", fname[f]);
			else
				bench_strfmt(k, sizeof(k), "%s_write_vs_sys", fname[f]);
			bool ok = ratio(op, f, &v);
			bench_json_num(k, ok, v, 3);
		}
	}
	for (int op = 0; op < O_N; op++) {
		for (int f = 0; f < F_N; f++) {
			bench_strfmt(k, sizeof(k), "%s_%s_server_cpu_s_per_GiB", fname[f],
				     olow[op]);
			bool ok = row_cpu_gib(op, f, false, &v);
			bench_json_num(k, ok, v, 4);
			bench_strfmt(k, sizeof(k), "%s_%s_client_cpu_s_per_GiB", fname[f],
				     olow[op]);
			ok = row_cpu_gib(op, f, true, &v);
			bench_json_num(k, ok, v, 4);
		}
	}
	for (int op = 0; op < O_N; op++) {
		for (int f = F_KRB5; f < F_N; f++) {
			bench_strfmt(k, sizeof(k), "%s_%s_vs_sys_rounds", fname[f], olow[op]);
			bench_json_key(k);
			putchar('[');
			for (unsigned r = 0; r < o->rounds; r++) {
				bool ok = round_ratio(op, f, r, &v);
				if (r)
					putchar(',');
				bench_json_val(ok, v, 3);
			}
			putchar(']');
		}
	}
	bench_json_str("enctype", cz->ok ? cz->enctype : NULL);
	bench_json_num("mit_mic_MBps", cz->ok, cz->mic, 1);
	bench_json_num("mit_verify_mic_MBps", cz->ok, cz->verify, 1);
	bench_json_num("mit_wrap_MBps", cz->ok, cz->wrap, 1);
	bench_json_num("mit_unwrap_MBps", cz->ok, cz->unwrap, 1);
	bench_json_num("k5msg_mic_MBps", cz->k_ok, cz->k_mic, 1);
	bench_json_num("k5msg_verify_mic_MBps", cz->k_ok, cz->k_verify, 1);
	bench_json_num("k5msg_wrap_MBps", cz->k_ok, cz->k_wrap, 1);
	bench_json_num("k5msg_unwrap_MBps", cz->k_ok, cz->k_unwrap, 1);
	for (int op = 0; op < O_N; op++) {
		for (int f = F_KRB5I; f < F_N; f++) {
			double c = 0, r = 0;
			bool ok = ceiling_ratio(op, f, cz, &c);
			bench_strfmt(k, sizeof(k), "%s%s_ceiling_vs_sys", fname[f],
				     op == O_READ ? "" : "_write");
			bench_json_num(k, ok, c, 3);
			ok = ok && ratio(op, f, &r);
			bench_strfmt(k, sizeof(k), "%s%s_vs_ceiling", fname[f],
				     op == O_READ ? "" : "_write");
			bench_json_num(k, ok, ok ? r / c : 0, 3);
		}
	}
	for (int f = 0; f < F_N; f++) {
		bench_strfmt(k, sizeof(k), "%s_missing", fname[f]);
		const struct row *w = &rows[O_READ][f];
		bench_json_str(k, w->ok ? NULL : (w->why[0] ? w->why : "not run"));
	}
	printf("}\n");
}

/* ------------------------------------------------------------- setup */

static bool size_parse(const char *s, uint64_t *out)
{
	if (!bench_size_parse(s, out))
		return false;
	*out = *out / IO * IO;
	return *out >= 16ull * IO;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: gss --ds-keytab KT --client-keytab KT --principal NAME\n"
		"           [--seconds N] [--rounds N] [--quick] [--size SIZE[KMG]] [--conns N]\n"
		"           [--inflight N] [--sequential] [--flavors sys,krb5,krb5i,krb5p]\n"
		"           [--ops read,write]\n"
		"           [--dir PATH] [--keep] [--braid-ds PATH] [--no-krb5 WHY]\n");
	exit(2);
}

static void opts_parse(struct opts *o, int argc, char **argv)
{
	bool quick = false, have_secs = false, have_rounds = false, have_size = false;
	const char *tmp = getenv("TMPDIR");
	o->secs = 10;
	o->rounds = 5;
	o->conns = 1;
	o->inflight = 16;
	o->size = 256ull << 20;
	o->dir = tmp && *tmp ? tmp : "/var/tmp";
	for (int f = 0; f < F_N; f++)
		o->want[f] = true;
	o->want_op[O_READ] = o->want_op[O_WRITE] = true;
	bench_exe_sibling("braid-ds", o->ds_path, sizeof(o->ds_path));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--quick")) {
			quick = true;
			continue;
		} else if (!strcmp(a, "--sequential")) {
			o->sequential = true;
			continue;
		} else if (!strcmp(a, "--keep")) {
			o->keep = true;
			continue;
		}
		if (!v)
			usage();
		i++;
		if (!strcmp(a, "--seconds")) {
			o->secs = atof(v);
			have_secs = true;
			if (o->secs <= 0)
				usage();
		} else if (!strcmp(a, "--rounds")) {
			o->rounds = (unsigned)atoi(v);
			have_rounds = true;
			if (o->rounds < 1 || o->rounds > ROUNDS_MAX)
				usage();
		} else if (!strcmp(a, "--size")) {
			if (!size_parse(v, &o->size))
				usage();
			have_size = true;
		} else if (!strcmp(a, "--conns")) {
			o->conns = (unsigned)atoi(v);
			if (o->conns < 1 || o->conns > CONNS_MAX)
				usage();
		} else if (!strcmp(a, "--inflight")) {
			o->inflight = (unsigned)atoi(v);
			if (o->inflight < 1 || o->inflight > INFL_MAX)
				usage();
		} else if (!strcmp(a, "--flavors")) {
			for (int f = 0; f < F_N; f++)
				o->want[f] = false;
			char list[128];
			bench_strfmt(list, sizeof(list), "%s", v);
			for (char *sv, *t = strtok_r(list, ",", &sv); t;
			     t = strtok_r(NULL, ",", &sv)) {
				int f = 0;
				while (f < F_N && strcmp(t, fname[f]))
					f++;
				if (f == F_N)
					usage();
				o->want[f] = true;
			}
		} else if (!strcmp(a, "--ops")) {
			o->want_op[O_READ] = strstr(v, "read") != NULL;
			o->want_op[O_WRITE] = strstr(v, "write") != NULL;
			if (!o->want_op[O_READ] && !o->want_op[O_WRITE])
				usage();
		} else if (!strcmp(a, "--dir")) {
			o->dir = v;
		} else if (!strcmp(a, "--ds-keytab")) {
			o->ds_keytab = v;
		} else if (!strcmp(a, "--client-keytab")) {
			o->client_keytab = v;
		} else if (!strcmp(a, "--principal")) {
			o->principal = v;
		} else if (!strcmp(a, "--braid-ds")) {
			bench_strfmt(o->ds_path, sizeof(o->ds_path), "%s", v);
		} else if (!strcmp(a, "--no-krb5")) {
			o->no_krb5 = v;
		} else {
			usage();
		}
	}
	if (quick) {
		if (!have_secs)
			o->secs = 1;
		if (!have_rounds)
			o->rounds = 1;
		if (!have_size)
			o->size = 64ull << 20;
	}
	if (!o->no_krb5 && (!o->ds_keytab || !o->client_keytab || !o->principal))
		usage();
}

int main(int argc, char **argv)
{
	struct opts o = {0};
	bench_init("bench/gss");
	opts_parse(&o, argc, argv);
	char work[PATH_MAX], why[512] = "";
	bench_strfmt(work, sizeof(work), "%s/braid-bench-gss.XXXXXX", o.dir);
	if (!mkdtemp(work)) {
		fprintf(stderr, "bench/gss: mkdtemp %s: %s\n", work, strerror(errno));
		return 99;
	}
	struct bds d = {0};
	struct client cl = {0};
	bench_strfmt(d.dir, sizeof(d.dir), "%s/braid-ds", work);
	int err = 0;
	struct nfsd_server *ctl = nfsd_client_engine_new(1, 0, &err);
	int rc = ctl ? bds_start(&o, &d, ctl) : err;
	if (rc && !d.why[0])
		bench_strfmt(d.why, sizeof(d.why), "client engine: %s", strerror(-rc));
	if (!rc)
		rc = client_open(&cl, &o, &d, d.why, sizeof(d.why));
	if (!rc)
		rc = fill(&cl, &o, d.why, sizeof(d.why));
	bool krb5 = !rc && !o.no_krb5;
	if (!rc && o.no_krb5)
		bench_strfmt(why, sizeof(why), "%s", o.no_krb5);
	if (krb5 && client_gss(&cl, &o, why, sizeof(why)))
		krb5 = false;
	for (int op = 0; op < O_N; op++) {
		for (int f = 0; f < F_N; f++) {
			if (rc)
				row_fail(op, f, "%s", d.why);
			else if (!o.want[f] || !o.want_op[op])
				row_fail(op, f, "not asked for (--flavors, --ops)");
			else if (f != F_SYS && !krb5)
				row_fail(op, f, "no Kerberos: %s", why);
		}
	}
	bool run[F_N];
	for (int f = 0; f < F_N; f++)
		run[f] = !rc && o.want[f] && (f == F_SYS || krb5) && flavor_check(&cl, f);

	double ss = o.secs / o.rounds;
	if (!rc) {
		double busy = bench_settle(10);
		if (busy >= 0.1)
			printf("bench/gss: the box was still %.0f%% busy after 10 s; measuring "
			       "anyway\n",
			       busy * 100);
	}
	for (int op = 0; op < O_N && !rc; op++) {
		for (unsigned k = 0; k < o.rounds; k++) {
			for (int f = 0; f < F_N; f++) {
				if (!run[f] || rows[op][f].failed)
					continue;
				struct sample s;
				char w[256];
				if (load_run(&cl, &o, (enum op)op, (enum flavor)f, ss, op == O_READ,
					     &s, w, sizeof(w)))
					row_fail(op, f, "%s", w);
				else
					row_add(op, f, &s);
			}
		}
	}
	client_close(&cl);
	bds_stop(&d);
	if (ctl)
		nfsd_server_free(ctl);
	struct ceiling cz = {0};
	if (krb5)
		ceiling_measure(&o, &cz);
	else
		bench_strfmt(cz.why, sizeof(cz.why), "no Kerberos: %s", rc ? d.why : why);

	printf("bench/gss: braid-ds 1 MiB NFSv4.1 %s READ and WRITE through our client, %u "
	       "connection%s, %u in flight each, %u rounds of %.1f s per case, %llu MiB object, "
	       "%ld cores\n",
	       o.sequential ? "sequential" : "random", o.conns, o.conns > 1 ? "s" : "", o.inflight,
	       o.rounds, ss, (unsigned long long)(o.size >> 20), sysconf(_SC_NPROCESSORS_ONLN));
	table_print(&o, &cz);
	json_print(&o, &cz);
	if (o.keep)
		fprintf(stderr, "bench/gss: kept %s\n", work);
	else
		bench_tree_remove(work);
	return 0;
}
