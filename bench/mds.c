/* SPDX-License-Identifier: MIT */
/*
 * bench/mds: metadata operations per second in one directory as it grows
 * to 10^3, 10^5, 10^6 and 10^7 entries, for braid-mds and, in the same run
 * and up to 10^6, for NFS-Ganesha (FSAL VFS exporting a directory of the
 * same filesystem):
 *
 *  - creates: one COMPOUND each, {SEQUENCE, PUTFH dir, OPEN (GUARDED4,
 *    CLAIM_NULL), GETFH, CLOSE (the current stateid, RFC 8881 §16.2.3.1.2)};
 *    a server that refuses the current stateid gets OPEN and CLOSE as two
 *    COMPOUNDs instead (said in the table);
 *  - lookups of random existing names: {SEQUENCE, PUTFH dir, LOOKUP,
 *    GETFH, GETATTR (type, change, size, fileid)};
 *  - READDIR entries per second: the whole directory walked by chained
 *    cookies (type and fileid of each entry), one request at a time as a
 *    client listing it does; at 10^7 the walk stops at --readdir-cap.
 *
 * The directory grows by creates to N minus the timed batch, the timed
 * batch brings it to exactly N, then the lookups and the walk run at N.
 * Creates and lookups keep --inflight COMPOUNDs in flight over one NFSv4.1
 * session (nfsd/nfs41_clnt.h), on --conns connections.  Both servers run as
 * our children, one at a time, so /proc/PID/stat gives their CPU alone and
 * each has every core.
 *
 * Ganesha's creates are ext4's: for a minute or more after many inodes
 * were freed (an earlier run's directory removed), ext4's inode allocator
 * skips them (recently_deleted()) and each create costs several times the
 * CPU, so a run right after another shows Ganesha slower than it is.
 *
 * Usage: mds [--quick] [--max N] [--sizes N,N,...] [--ganesha-max N]
 *            [--dir PATH] [--keep] [--uid N] [--gid N] [--inflight N]
 *            [--conns N] [--lookups N] [--readdir-cap N] [--two-compound]
 *            [--only braid|ganesha] [--braid-mds PATH]
 * Last line of output: one JSON object; a figure that could not be measured
 * is null and the reason is printed (never a made-up number).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/common.h"
#include "nfsd/nfs41_clnt.h"
#include "nfsd/rpc.h"
#include "nfsd/xdr/nfs4_prot.h"

#define NSIZES_MAX	 8
#define CONNS_MAX	 4
#define INFLIGHT_DEF	 64
#define BATCH_MIN	 1000  /* timed creates at a size, at least */
#define BATCH_MAX	 20000 /* and at most (a tenth of the size between) */
#define LOOKUPS_DEF	 20000
#define WALK_CAP_DEF	 2000000
#define DIR_NAME	 "mds-bench"
#define READDIR_DIRCOUNT 32768
#define READDIR_MAXCOUNT 65536
#define PROGRESS_S	 10.0
#define WALK_MIN_ENTRIES 100000 /* a small directory is walked again up to this */

/* ---------------------------------------------------------------- options */

struct mds_opts {
	uint64_t sizes[NSIZES_MAX]; /* ascending */
	unsigned nsizes;
	uint64_t max;	     /* sizes above it are not run */
	const char *max_why; /* and why: "--quick stops at 1e6" */
	uint64_t ganesha_max;
	const char *dir;
	bool keep;
	uint32_t uid, gid;
	unsigned inflight, conns;
	uint64_t lookups;
	uint64_t walk_cap; /* 0: none */
	bool two_compound; /* OPEN and CLOSE in two COMPOUNDs on every server */
	bool run_braid, run_ganesha;
	char mds_path[PATH_MAX];
};

/* "1e6" for the JSON keys and the table. */
static void size_key(uint64_t n, char *out, size_t len)
{
	int e = 0;
	uint64_t m = n;
	while (m >= 10 && m % 10 == 0) {
		m /= 10;
		e++;
	}
	if (m < 10 && e > 0)
		bench_strfmt(out, len, "%ue%d", (unsigned)m, e);
	else
		bench_strfmt(out, len, "%llu", (unsigned long long)n);
}

/* ---------------------------------------------------------------- results */

struct phase {
	bool ok;
	uint64_t ops;	/* creates, lookups or entries */
	double secs;	/* wall time */
	double srv_cpu; /* the server's CPU seconds in it */
	double cli_cpu; /* ours */
	char why[256];	/* when !ok */
};

struct at_size {
	uint64_t n;
	bool run;
	struct phase create, lookup, readdir;
	bool walk_capped;
	unsigned walks;	      /* whole READDIR walks timed together */
	double populate_rate; /* creates/s while growing to it (not timed) */
};

struct server_res {
	const char *name;
	bool ran;	   /* it served: the figures below are its */
	char why[512];	   /* why it did not */
	unsigned slots;	   /* fore channel slots granted */
	unsigned conns;	   /* connections used */
	bool two_compound; /* creates as OPEN, then CLOSE */
	char two_why[128];
	uint64_t delegs, delays;
	struct at_size at[NSIZES_MAX];
};

static struct server_res braid_res = {.name = "braid-mds"};
static struct server_res ganesha_res = {.name = "ganesha"};

static double phase_rate(const struct phase *p)
{
	return p->ok && p->secs > 0 ? (double)p->ops / p->secs : 0;
}

/* ------------------------------------------------------------ NFSv4 names */

static const struct {
	int code;
	const char *name;
} status_names[] = {
    {NFS4_OK, "NFS4_OK"},
    {NFS4ERR_PERM, "NFS4ERR_PERM"},
    {NFS4ERR_NOENT, "NFS4ERR_NOENT"},
    {NFS4ERR_IO, "NFS4ERR_IO"},
    {NFS4ERR_ACCESS, "NFS4ERR_ACCESS"},
    {NFS4ERR_EXIST, "NFS4ERR_EXIST"},
    {NFS4ERR_NOTDIR, "NFS4ERR_NOTDIR"},
    {NFS4ERR_ISDIR, "NFS4ERR_ISDIR"},
    {NFS4ERR_INVAL, "NFS4ERR_INVAL"},
    {NFS4ERR_NOSPC, "NFS4ERR_NOSPC"},
    {NFS4ERR_ROFS, "NFS4ERR_ROFS"},
    {NFS4ERR_MLINK, "NFS4ERR_MLINK"},
    {NFS4ERR_NAMETOOLONG, "NFS4ERR_NAMETOOLONG"},
    {NFS4ERR_DQUOT, "NFS4ERR_DQUOT"},
    {NFS4ERR_STALE, "NFS4ERR_STALE"},
    {NFS4ERR_BADHANDLE, "NFS4ERR_BADHANDLE"},
    {NFS4ERR_BAD_COOKIE, "NFS4ERR_BAD_COOKIE"},
    {NFS4ERR_NOTSUPP, "NFS4ERR_NOTSUPP"},
    {NFS4ERR_TOOSMALL, "NFS4ERR_TOOSMALL"},
    {NFS4ERR_SERVERFAULT, "NFS4ERR_SERVERFAULT"},
    {NFS4ERR_BADTYPE, "NFS4ERR_BADTYPE"},
    {NFS4ERR_DELAY, "NFS4ERR_DELAY"},
    {NFS4ERR_DENIED, "NFS4ERR_DENIED"},
    {NFS4ERR_EXPIRED, "NFS4ERR_EXPIRED"},
    {NFS4ERR_GRACE, "NFS4ERR_GRACE"},
    {NFS4ERR_SHARE_DENIED, "NFS4ERR_SHARE_DENIED"},
    {NFS4ERR_WRONGSEC, "NFS4ERR_WRONGSEC"},
    {NFS4ERR_RESOURCE, "NFS4ERR_RESOURCE"},
    {NFS4ERR_NOFILEHANDLE, "NFS4ERR_NOFILEHANDLE"},
    {NFS4ERR_MINOR_VERS_MISMATCH, "NFS4ERR_MINOR_VERS_MISMATCH"},
    {NFS4ERR_STALE_CLIENTID, "NFS4ERR_STALE_CLIENTID"},
    {NFS4ERR_OLD_STATEID, "NFS4ERR_OLD_STATEID"},
    {NFS4ERR_BAD_STATEID, "NFS4ERR_BAD_STATEID"},
    {NFS4ERR_BAD_SEQID, "NFS4ERR_BAD_SEQID"},
    {NFS4ERR_BADXDR, "NFS4ERR_BADXDR"},
    {NFS4ERR_OP_ILLEGAL, "NFS4ERR_OP_ILLEGAL"},
    {NFS4ERR_BADSESSION, "NFS4ERR_BADSESSION"},
    {NFS4ERR_BADSLOT, "NFS4ERR_BADSLOT"},
    {NFS4ERR_COMPLETE_ALREADY, "NFS4ERR_COMPLETE_ALREADY"},
    {NFS4ERR_CONN_NOT_BOUND_TO_SESSION, "NFS4ERR_CONN_NOT_BOUND_TO_SESSION"},
    {NFS4ERR_SEQ_MISORDERED, "NFS4ERR_SEQ_MISORDERED"},
    {NFS4ERR_SEQUENCE_POS, "NFS4ERR_SEQUENCE_POS"},
    {NFS4ERR_REQ_TOO_BIG, "NFS4ERR_REQ_TOO_BIG"},
    {NFS4ERR_REP_TOO_BIG, "NFS4ERR_REP_TOO_BIG"},
    {NFS4ERR_TOO_MANY_OPS, "NFS4ERR_TOO_MANY_OPS"},
    {NFS4ERR_OP_NOT_IN_SESSION, "NFS4ERR_OP_NOT_IN_SESSION"},
    {NFS4ERR_DEADSESSION, "NFS4ERR_DEADSESSION"},
    {NFS4ERR_NOT_ONLY_OP, "NFS4ERR_NOT_ONLY_OP"},
};

static const char *status_str(int st, char *buf, size_t len)
{
	for (size_t i = 0; i < sizeof(status_names) / sizeof(status_names[0]); i++)
		if (status_names[i].code == st)
			return status_names[i].name;
	bench_strfmt(buf, len, "nfsstat4 %d", st);
	return buf;
}

static const char *op_str(int op)
{
	switch (op) {
	case OP_SEQUENCE:
		return "SEQUENCE";
	case OP_PUTFH:
		return "PUTFH";
	case OP_PUTROOTFH:
		return "PUTROOTFH";
	case OP_OPEN:
		return "OPEN";
	case OP_GETFH:
		return "GETFH";
	case OP_CLOSE:
		return "CLOSE";
	case OP_LOOKUP:
		return "LOOKUP";
	case OP_GETATTR:
		return "GETATTR";
	case OP_READDIR:
		return "READDIR";
	case OP_CREATE:
		return "CREATE";
	case OP_RECLAIM_COMPLETE:
		return "RECLAIM_COMPLETE";
	default:
		return "op";
	}
}

/*
 * Why a COMPOUND that was answered failed: the op it stopped at (the last
 * result, RFC 8881 §16.2.3) and its status.  rc is the call's own error.
 */
static void compound_err(int rc, const COMPOUND4res *res, char *out, size_t len)
{
	char eb[64];
	if (rc)
		bench_strfmt(out, len, "%s", bench_call_err_str(rc, eb, sizeof(eb)));
	else if (res->resarray.len == 0)
		bench_strfmt(out, len, "%s with no results",
			     status_str(res->status, eb, sizeof(eb)));
	else
		bench_strfmt(out, len, "%s: %s",
			     op_str(res->resarray.val[res->resarray.len - 1].resop),
			     status_str(res->status, eb, sizeof(eb)));
}

/* ---------------------------------------------------------------- the ops */

static uint32_t mode_bits[2] = {0, 1u << (FATTR4_MODE - 32)};
static const uint8_t mode_file[4] = {0, 0, 0x01, 0xa4}; /* 0644 */
static const uint8_t mode_dir[4] = {0, 0, 0x01, 0xed};	/* 0755 */
/* what each LOOKUP's GETATTR asks for, and each READDIR entry */
static uint32_t lookup_bits[1] = {1u << FATTR4_TYPE | 1u << FATTR4_CHANGE | 1u << FATTR4_SIZE |
				  1u << FATTR4_FILEID};
static uint32_t readdir_bits[1] = {1u << FATTR4_TYPE | 1u << FATTR4_FILEID};

static fattr4 mode_attr(const uint8_t *mode)
{
	return (fattr4){.attrmask = {2, mode_bits}, .attr_vals = xdr_opaque_of(mode, 4)};
}

static void file_name(uint32_t idx, char *out, size_t len)
{
	bench_strfmt(out, len, "f%010u", idx);
}

/* A session and the directory it works in: one per server. */
struct mctx {
	struct nfsd_server *eng;
	struct nfsd_clnt *c[CONNS_MAX];
	unsigned nconn;
	struct nfs41c_session *sess;
	clientid4 clientid;
	unsigned inflight; /* open owners: one per slot we may use */
	pid_t server;
	bool two_compound;
	uint32_t dirfhlen;
	uint8_t dirfh[NFS4_FHSIZE];
	uint64_t nfiles; /* f0000000000 .. nfiles - 1 exist */
	struct server_res *res;
};

static nfs_argop4 op_putfh(const uint8_t *fh, uint32_t len)
{
	nfs_argop4 a = {.argop = OP_PUTFH};
	a.u.opputfh.object = xdr_opaque_of(fh, len);
	return a;
}

static nfs_argop4 op_plain(nfs_opnum4 op)
{
	return (nfs_argop4){.argop = op};
}

/* OPEN name for writing, creating it (GUARDED4: an existing name is an
 * error, so every timed create really adds an entry). */
static nfs_argop4 op_open_create(const struct mctx *m, const char *name, const char *owner)
{
	nfs_argop4 a = {.argop = OP_OPEN};
	OPEN4args *o = &a.u.opopen;
	o->share_access = OPEN4_SHARE_ACCESS_WRITE;
	o->share_deny = OPEN4_SHARE_DENY_NONE;
	o->owner.clientid = m->clientid;
	o->owner.owner = xdr_opaque_of(owner, strlen(owner));
	o->openhow.opentype = OPEN4_CREATE;
	o->openhow.u.how.mode = GUARDED4;
	o->openhow.u.how.u.createattrs = mode_attr(mode_file);
	o->claim.claim = CLAIM_NULL;
	o->claim.u.file = xdr_string_of(name);
	return a;
}

/* CLOSE of sid; NULL: the current stateid (seqid 1, other all zero). */
static nfs_argop4 op_close(const stateid4 *sid)
{
	nfs_argop4 a = {.argop = OP_CLOSE};
	if (sid)
		a.u.opclose.open_stateid = *sid;
	else
		a.u.opclose.open_stateid.seqid = 1;
	return a;
}

/* ------------------------------------------------------------------- loads */

enum mop {
	MOP_CREATE, /* PUTFH dir, OPEN, GETFH, CLOSE */
	MOP_OPEN,   /* PUTFH dir, OPEN, GETFH; a MOP_CLOSE follows */
	MOP_CLOSE,  /* PUTFH file, CLOSE */
	MOP_LOOKUP, /* PUTFH dir, LOOKUP, GETFH, GETATTR */
};

struct load;

/* One COMPOUND in flight, or queued for the driver to send. */
struct mcall {
	struct load *l;
	enum mop op;
	uint32_t idx;
	struct mcall *next; /* in load.queue */
	stateid4 sid;	    /* MOP_CLOSE */
	uint32_t fhlen;
	uint8_t fh[NFS4_FHSIZE];
};

/*
 * Callbacks run on the client loop thread; the driver (the thread that
 * runs load_drive) sends, since taking a slot may wait.  lock guards every
 * field below it.
 */
struct load {
	struct mctx *m;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t issued, done; /* COMPOUNDs sent, and answered or failed */
	uint64_t completed;    /* creates or lookups finished */
	uint64_t delegs, delays;
	struct mcall *queue; /* CLOSEs and NFS4ERR_DELAY retries to send */
	bool failed;
	char why[256];
};

static void load_fail_locked(struct load *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void load_fail_locked(struct load *l, const char *fmt, ...)
{
	if (l->failed)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(l->why, sizeof(l->why), fmt, ap);
	va_end(ap);
	l->failed = true;
}

static const char *mop_str(enum mop op)
{
	switch (op) {
	case MOP_CREATE:
		return "create";
	case MOP_OPEN:
		return "OPEN";
	case MOP_CLOSE:
		return "CLOSE";
	case MOP_LOOKUP:
		return "lookup";
	}
	return "?";
}

/* The result checks of one answered call; true when it did what it should. */
static bool mcall_check(struct mcall *k, const COMPOUND4res *res, char *why, size_t len,
			uint64_t *delegs)
{
	unsigned want = k->op == MOP_CLOSE ? 3 : k->op == MOP_OPEN ? 4 : 5;
	if (res->resarray.len != want) {
		bench_strfmt(why, len, "%u results for %u ops", res->resarray.len, want);
		return false;
	}
	const nfs_resop4 *r = res->resarray.val;
	switch (k->op) {
	case MOP_CREATE:
	case MOP_OPEN:
		if (r[2].u.opopen.u.resok4.delegation.delegation_type != OPEN_DELEGATE_NONE)
			(*delegs)++;
		if (k->op == MOP_OPEN) {
			const nfs_fh4 *fh = &r[3].u.opgetfh.u.resok4.object;
			if (fh->len > sizeof(k->fh)) {
				bench_strfmt(why, len, "file handle of %u bytes", fh->len);
				return false;
			}
			k->sid = r[2].u.opopen.u.resok4.stateid;
			memcpy(k->fh, fh->val, fh->len);
			k->fhlen = fh->len;
		}
		return true;
	case MOP_LOOKUP: {
		const attrlist4 *av = &r[4].u.opgetattr.u.resok4.obj_attributes.attr_vals;
		/* type is the first attribute asked for: 4 bytes, NF4REG */
		if (av->len < 4 || av->val[0] || av->val[1] || av->val[2] || av->val[3] != NF4REG) {
			bench_strfmt(why, len, "GETATTR type is not NF4REG");
			return false;
		}
		return true;
	}
	case MOP_CLOSE:
		return true;
	}
	return false;
}

static void mcall_done(void *ctx, int rc, COMPOUND4res *res)
{
	struct mcall *k = ctx;
	struct load *l = k->l;
	char why[200] = "", name[16];
	uint64_t delegs = 0;
	bool retry = false, ok = false;
	if (!rc && res->status == NFS4ERR_DELAY && res->resarray.len &&
	    res->resarray.val[res->resarray.len - 1].resop != OP_CLOSE) {
		/* not done: send it again (an answered CLOSE of a create
		 * would make the retried OPEN find the name) */
		retry = true;
	} else if (rc || res->status != NFS4_OK) {
		compound_err(rc, res, why, sizeof(why));
	} else {
		ok = mcall_check(k, res, why, sizeof(why), &delegs);
	}
	pthread_mutex_lock(&l->lock);
	l->done++;
	l->delegs += delegs;
	if (retry) {
		l->delays++;
		k->next = l->queue;
		l->queue = k;
		k = NULL;
	} else if (!ok) {
		file_name(k->idx, name, sizeof(name));
		load_fail_locked(l, "%s %s: %s", mop_str(k->op), name, why);
	} else if (k->op == MOP_OPEN) {
		k->op = MOP_CLOSE;
		k->next = l->queue;
		l->queue = k;
		k = NULL;
	} else {
		l->completed++;
	}
	pthread_cond_signal(&l->cond);
	pthread_mutex_unlock(&l->lock);
	free(k);
}

/* Send k on the next connection; its result comes to mcall_done. */
static int mcall_send(struct mctx *m, struct mcall *k, unsigned *rr)
{
	char name[16], owner[24];
	nfs_argop4 ops[4];
	unsigned n = 0;
	file_name(k->idx, name, sizeof(name));
	/* an open owner per slot we keep busy, so that no server serializes
	 * our OPENs on one owner */
	bench_strfmt(owner, sizeof(owner), "bench-mds-%u", k->idx % m->inflight);
	switch (k->op) {
	case MOP_CREATE:
	case MOP_OPEN:
		ops[n++] = op_putfh(m->dirfh, m->dirfhlen);
		ops[n++] = op_open_create(m, name, owner);
		ops[n++] = op_plain(OP_GETFH);
		if (k->op == MOP_CREATE)
			ops[n++] = op_close(NULL);
		break;
	case MOP_CLOSE:
		ops[n++] = op_putfh(k->fh, k->fhlen);
		ops[n++] = op_close(&k->sid);
		break;
	case MOP_LOOKUP:
		ops[n++] = op_putfh(m->dirfh, m->dirfhlen);
		ops[n] = op_plain(OP_LOOKUP);
		ops[n++].u.oplookup.objname = xdr_string_of(name);
		ops[n++] = op_plain(OP_GETFH);
		ops[n] = op_plain(OP_GETATTR);
		ops[n++].u.opgetattr.attr_request = (bitmap4){1, lookup_bits};
		break;
	}
	struct nfsd_clnt *c = m->c[(*rr)++ % m->nconn];
	/* the arguments are encoded before this returns: ops may go */
	return nfs41c_compound_async(m->sess, c, 0, ops, n, mcall_done, k);
}

static uint64_t xorshift64(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/*
 * count creates of names first.., or count lookups of random existing
 * names, with as many COMPOUNDs in flight as the session has slots.  ph
 * gets the wall time, CPU times and the count; label (not NULL) prints
 * progress on stderr.  Returns 0 or -EIO (ph->why says why).
 */
static int load_drive(struct mctx *m, bool lookup, uint64_t first, uint64_t count,
		      const char *label, struct phase *ph)
{
	struct load l = {.m = m};
	pthread_mutex_init(&l.lock, NULL);
	pthread_cond_init(&l.cond, NULL);
	uint64_t next = 0, rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)(bench_now_s() * 1e9);
	unsigned rr = 0;
	double t0 = bench_now_s(), c0 = bench_proc_cpu_s(m->server), u0 = bench_self_cpu_s();
	double tprog = t0 + PROGRESS_S;
	uint64_t prog_done = 0;
	for (;;) {
		struct mcall *k = NULL;
		pthread_mutex_lock(&l.lock);
		for (;;) {
			if (l.failed)
				break;
			if (l.queue) {
				k = l.queue;
				l.queue = k->next;
				break;
			}
			if (next < count || l.done == l.issued)
				break;
			pthread_cond_wait(&l.cond, &l.lock);
		}
		bool stop = l.failed || (!k && next >= count);
		if (!stop)
			l.issued++;
		pthread_mutex_unlock(&l.lock);
		if (stop)
			break;
		if (!k) {
			k = calloc(1, sizeof(*k));
			if (!k) {
				pthread_mutex_lock(&l.lock);
				l.issued--;
				load_fail_locked(&l, "out of memory");
				pthread_mutex_unlock(&l.lock);
				break;
			}
			k->l = &l;
			if (lookup) {
				k->op = MOP_LOOKUP;
				k->idx = (uint32_t)(xorshift64(&rng) % m->nfiles);
			} else {
				k->op = m->two_compound ? MOP_OPEN : MOP_CREATE;
				k->idx = (uint32_t)(first + next);
			}
			next++;
		}
		int rc = mcall_send(m, k, &rr);
		if (rc) {
			char eb[64], name[16];
			file_name(k->idx, name, sizeof(name));
			pthread_mutex_lock(&l.lock);
			l.issued--;
			load_fail_locked(&l, "send %s %s: %s", mop_str(k->op), name,
					 bench_call_err_str(rc, eb, sizeof(eb)));
			pthread_mutex_unlock(&l.lock);
			free(k);
			break;
		}
		if (label && (next & 1023) == 0 && bench_now_s() >= tprog) {
			double t = bench_now_s();
			pthread_mutex_lock(&l.lock);
			uint64_t d = l.completed;
			pthread_mutex_unlock(&l.lock);
			fprintf(stderr, "%s: %s: %llu of %llu, %.0f/s\n", bench_prog, label,
				(unsigned long long)(first + d),
				(unsigned long long)(first + count),
				(double)(d - prog_done) / (t - tprog + PROGRESS_S));
			prog_done = d;
			tprog = t + PROGRESS_S;
		}
	}
	/* after a failure: let what is in flight come back before l goes */
	pthread_mutex_lock(&l.lock);
	while (l.done < l.issued)
		pthread_cond_wait(&l.cond, &l.lock);
	while (l.queue) {
		struct mcall *k = l.queue;
		l.queue = k->next;
		free(k);
	}
	pthread_mutex_unlock(&l.lock);
	double t1 = bench_now_s();
	ph->srv_cpu = bench_proc_cpu_s(m->server) - c0;
	ph->cli_cpu = bench_self_cpu_s() - u0;
	ph->secs = t1 - t0;
	ph->ops = l.completed;
	ph->ok = !l.failed;
	if (l.failed)
		bench_strfmt(ph->why, sizeof(ph->why), "%s", l.why);
	m->res->delegs += l.delegs;
	m->res->delays += l.delays;
	if (!lookup)
		m->nfiles = first + l.completed;
	pthread_cond_destroy(&l.cond);
	pthread_mutex_destroy(&l.lock);
	return l.failed ? -EIO : 0;
}

/* --------------------------------------------------------------- READDIR */

/*
 * Walk the directory by chained cookies, up to cap entries (0: all),
 * counting them, and walk it again while all walks together returned
 * fewer than WALK_MIN_ENTRIES (one walk of 10^3 entries is one or two
 * round trips: too short to time); ph gets entries per second.
 */
static int readdir_walk(struct mctx *m, uint64_t cap, struct phase *ph, bool *capped,
			unsigned *walks)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 16u << 20);
	nfs_cookie4 cookie = 0;
	verifier4 verf = {0};
	uint64_t seen = 0, total = 0;
	bool eof = false;
	int rc = 0;
	char why[200] = "";
	*capped = false;
	*walks = 1;
	double t0 = bench_now_s(), c0 = bench_proc_cpu_s(m->server), u0 = bench_self_cpu_s();
	for (;;) {
		if (eof) {
			if (seen != m->nfiles && *walks == 1)
				fprintf(stderr,
					"%s: warning: %s READDIR walk returned %llu entries, the "
					"directory has %llu\n",
					bench_prog, m->res->name, (unsigned long long)seen,
					(unsigned long long)m->nfiles);
			total += seen;
			if (total >= WALK_MIN_ENTRIES || !seen)
				break;
			(*walks)++;
			seen = cookie = 0;
			memset(verf, 0, sizeof(verf));
			eof = false;
		}
		if (cap && seen >= cap) {
			*capped = true;
			break;
		}
		nfs_argop4 ops[2] = {op_putfh(m->dirfh, m->dirfhlen), op_plain(OP_READDIR)};
		READDIR4args *ra = &ops[1].u.opreaddir;
		ra->cookie = cookie;
		memcpy(ra->cookieverf, verf, sizeof(verf));
		ra->dircount = READDIR_DIRCOUNT;
		ra->maxcount = READDIR_MAXCOUNT;
		ra->attr_request = (bitmap4){1, readdir_bits};
		COMPOUND4res res;
		xdr_arena_reset(&ar);
		rc = nfs41c_compound_ex(m->sess, m->c[0], 0, ops, 2, &res, &ar);
		if (rc || res.status != NFS4_OK) {
			compound_err(rc, &res, why, sizeof(why));
			rc = -EIO;
			break;
		}
		if (res.resarray.len != 3) {
			bench_strfmt(why, sizeof(why), "READDIR: %u results", res.resarray.len);
			rc = -EIO;
			break;
		}
		const READDIR4resok *ok = &res.resarray.val[2].u.opreaddir.u.resok4;
		uint64_t got = 0;
		for (const entry4 *e = ok->reply.entries; e; e = e->nextentry) {
			cookie = e->cookie;
			got++;
		}
		seen += got;
		eof = ok->reply.eof;
		memcpy(verf, ok->cookieverf, sizeof(verf));
		if (!got && !eof) {
			bench_strfmt(why, sizeof(why), "READDIR: no entries and no eof at %llu",
				     (unsigned long long)seen);
			rc = -EIO;
			break;
		}
	}
	ph->secs = bench_now_s() - t0;
	ph->srv_cpu = bench_proc_cpu_s(m->server) - c0;
	ph->cli_cpu = bench_self_cpu_s() - u0;
	ph->ops = eof ? total : total + seen;
	ph->ok = !rc;
	if (rc)
		bench_strfmt(ph->why, sizeof(ph->why), "walk %u, after %llu entries: %s", *walks,
			     (unsigned long long)seen, why);
	xdr_arena_release(&ar);
	return rc;
}

/* ---------------------------------------------------------------- session */

/* One synchronous COMPOUND; 0, or -EIO with why set. */
static int sync_compound(struct mctx *m, const nfs_argop4 *ops, unsigned n, COMPOUND4res *res,
			 struct xdr_arena *ar, char *why, size_t len)
{
	int rc = nfs41c_compound(m->sess, ops, n, res, ar);
	if (!rc && res->status == NFS4_OK)
		return 0;
	compound_err(rc, res, why, len);
	return -EIO;
}

/*
 * Connect, make the session, create the directory and the first file.
 * The first create finds out whether the server takes the current
 * stateid in CLOSE; one that does not gets two COMPOUNDs per create.
 */
static int mctx_open(struct mctx *m, const struct mds_opts *o, int port, char *why, size_t len)
{
	int err = 0;
	char eb[64];
	m->nconn = 0;
	for (unsigned i = 0; i < o->conns; i++) {
		m->c[i] = bench_clnt_open(m->eng, port, &err);
		if (!m->c[i]) {
			bench_strfmt(why, len, "connect to port %d: %s", port, strerror(-err));
			return -EIO;
		}
		m->nconn++;
	}
	char owner[64];
	bench_strfmt(owner, sizeof(owner), "braid-bench-mds-%d-%s", (int)getpid(), m->res->name);
	struct nfs41c_session_opts so = {.owner = owner, .slots = o->inflight};
	err = nfs41c_session_create_opts(m->c[0], &so, &m->sess);
	if (err) {
		if (err > 0 && err < NFSD_CALL_ERR_ACCEPT)
			bench_strfmt(why, len, "EXCHANGE_ID/CREATE_SESSION: %s",
				     status_str(err, eb, sizeof(eb)));
		else
			bench_strfmt(why, len, "EXCHANGE_ID/CREATE_SESSION: %s",
				     bench_call_err_str(err, eb, sizeof(eb)));
		m->sess = NULL;
		return -EIO;
	}
	struct nfs41c_session_info info;
	nfs41c_session_info(m->sess, &info);
	m->clientid = info.clientid;
	m->res->slots = info.fore.ca_maxrequests;
	m->inflight = m->res->slots ? m->res->slots : 1;
	nfs41c_session_set_cred(m->sess, o->uid, o->gid);
	for (unsigned i = 1; i < m->nconn; i++) {
		channel_dir_from_server4 got;
		err = nfs41c_session_bind(m->sess, m->c[i], CDFC4_FORE, &got);
		if (err) {
			fprintf(stderr, "%s: %s: BIND_CONN_TO_SESSION: %s; %u connection(s)\n",
				bench_prog, m->res->name,
				err < NFSD_CALL_ERR_ACCEPT && err > 0
				    ? status_str(err, eb, sizeof(eb))
				    : bench_call_err_str(err, eb, sizeof(eb)),
				i);
			for (unsigned k = i; k < m->nconn; k++)
				nfsd_clnt_free(m->c[k]);
			m->nconn = i;
			break;
		}
	}
	m->res->conns = m->nconn;

	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	COMPOUND4res res;
	char w[200];
	int rc;
	/* RFC 8881 §18.51.3: before the first OPEN of a new client ID */
	nfs_argop4 rcop = op_plain(OP_RECLAIM_COMPLETE);
	rcop.u.opreclaim_complete.rca_one_fs = false;
	if (sync_compound(m, &rcop, 1, &res, &ar, w, sizeof(w)) &&
	    res.status != NFS4ERR_COMPLETE_ALREADY)
		fprintf(stderr, "%s: %s: RECLAIM_COMPLETE: %s (going on)\n", bench_prog,
			m->res->name, w);

	/* the directory, under the export's root */
	nfs_argop4 mk[3] = {op_plain(OP_PUTROOTFH), op_plain(OP_CREATE), op_plain(OP_GETFH)};
	CREATE4args *ca = &mk[1].u.opcreate;
	ca->objtype.type = NF4DIR;
	ca->objname = xdr_string_of(DIR_NAME);
	ca->createattrs = mode_attr(mode_dir);
	/* a server still in its grace period says so for a while */
	double end = bench_now_s() + 120;
	for (;;) {
		xdr_arena_reset(&ar);
		rc = sync_compound(m, mk, 3, &res, &ar, w, sizeof(w));
		if (!rc || (res.status != NFS4ERR_GRACE && res.status != NFS4ERR_DELAY) ||
		    bench_now_s() > end)
			break;
		bench_sleep_s(1);
	}
	if (rc) {
		bench_strfmt(why, len, "create directory /%s: %s", DIR_NAME, w);
		xdr_arena_release(&ar);
		return -EIO;
	}
	const nfs_fh4 *dfh = &res.resarray.val[3].u.opgetfh.u.resok4.object;
	m->dirfhlen = dfh->len <= sizeof(m->dirfh) ? dfh->len : 0;
	memcpy(m->dirfh, dfh->val, m->dirfhlen);

	/* the first file: one COMPOUND, or OPEN then CLOSE */
	char name[16];
	file_name(0, name, sizeof(name));
	nfs_argop4 cr[4] = {op_putfh(m->dirfh, m->dirfhlen), op_open_create(m, name, "bench-mds-0"),
			    op_plain(OP_GETFH), op_close(NULL)};
	end = bench_now_s() + 120;
	for (;;) {
		xdr_arena_reset(&ar);
		rc = sync_compound(m, cr, o->two_compound ? 3 : 4, &res, &ar, w, sizeof(w));
		if (!rc || (res.status != NFS4ERR_GRACE && res.status != NFS4ERR_DELAY) ||
		    res.resarray.len > 3 || bench_now_s() > end)
			break;
		bench_sleep_s(1);
	}
	if (rc && res.resarray.len != 5) {
		bench_strfmt(why, len, "create %s: %s", name, w);
		xdr_arena_release(&ar);
		return -EIO;
	}
	m->two_compound = o->two_compound || rc;
	if (o->two_compound)
		bench_strfmt(m->res->two_why, sizeof(m->res->two_why), "--two-compound");
	else if (rc)
		bench_strfmt(m->res->two_why, sizeof(m->res->two_why),
			     "current stateid refused: %s", w);
	m->res->two_compound = m->two_compound;
	if (m->two_compound) {
		stateid4 sid = res.resarray.val[2].u.opopen.u.resok4.stateid;
		const nfs_fh4 *ffh = &res.resarray.val[3].u.opgetfh.u.resok4.object;
		uint8_t fh[NFS4_FHSIZE];
		uint32_t fl = ffh->len <= sizeof(fh) ? ffh->len : 0;
		memcpy(fh, ffh->val, fl);
		nfs_argop4 cl[2] = {op_putfh(fh, fl), op_close(&sid)};
		xdr_arena_reset(&ar);
		if (sync_compound(m, cl, 2, &res, &ar, w, sizeof(w))) {
			bench_strfmt(why, len, "CLOSE %s: %s", name, w);
			xdr_arena_release(&ar);
			return -EIO;
		}
		fprintf(stderr, "%s: %s: creates are OPEN, then CLOSE (%s)\n", bench_prog,
			m->res->name, m->res->two_why);
	}
	xdr_arena_release(&ar);
	m->nfiles = 1;
	return 0;
}

static void mctx_close(struct mctx *m)
{
	if (m->sess)
		nfs41c_session_destroy(m->sess); /* whatever it says: the server goes next */
	m->sess = NULL;
	for (unsigned i = 0; i < m->nconn; i++)
		nfsd_clnt_free(m->c[i]);
	m->nconn = 0;
}

/* ----------------------------------------------------------- the schedule */

static uint64_t batch_at(uint64_t n)
{
	uint64_t b = n / 10;
	if (b < BATCH_MIN)
		b = BATCH_MIN;
	if (b > BATCH_MAX)
		b = BATCH_MAX;
	return b < n ? b : n;
}

static void at_fail(struct at_size *a, const char *why)
{
	struct phase *ps[3] = {&a->create, &a->lookup, &a->readdir};
	for (int i = 0; i < 3; i++)
		if (!ps[i]->ok && !ps[i]->why[0])
			bench_strfmt(ps[i]->why, sizeof(ps[i]->why), "%s", why);
}

/*
 * Every size of r->at, in order, on one session to one server: grow the
 * directory, time a batch of creates that ends at the size, then lookups
 * and a READDIR walk there.  The first failure ends the series (the later
 * sizes say why).
 */
static void series_run(struct mctx *m, const struct mds_opts *o, struct server_res *r)
{
	char stop_why[300] = "";
	for (unsigned i = 0; i < NSIZES_MAX && r->at[i].n; i++) {
		struct at_size *a = &r->at[i];
		char key[24], label[64];
		size_key(a->n, key, sizeof(key));
		if (!a->run)
			continue;
		if (stop_why[0]) {
			at_fail(a, stop_why);
			continue;
		}
		uint64_t batch = batch_at(a->n);
		if (m->nfiles + batch > a->n)
			batch = a->n - m->nfiles;
		uint64_t grow = a->n - batch - m->nfiles;
		if (grow) {
			struct phase pop = {0};
			bench_strfmt(label, sizeof(label), "%s: growing the directory to %s",
				     r->name, key);
			fprintf(stderr, "%s: %s (%llu creates)\n", bench_prog, label,
				(unsigned long long)grow);
			if (load_drive(m, false, m->nfiles, grow, label, &pop)) {
				bench_strfmt(stop_why, sizeof(stop_why), "growing to %s: %s", key,
					     pop.why);
				at_fail(a, stop_why);
				continue;
			}
			a->populate_rate = pop.secs > 0 ? (double)pop.ops / pop.secs : 0;
		}
		fprintf(stderr, "%s: %s at %s: %llu timed creates, %llu lookups, READDIR walk\n",
			bench_prog, r->name, key, (unsigned long long)batch,
			(unsigned long long)o->lookups);
		if (load_drive(m, false, m->nfiles, batch, NULL, &a->create)) {
			bench_strfmt(stop_why, sizeof(stop_why), "after create failure at %s: %s",
				     key, a->create.why);
			at_fail(a, stop_why);
			continue;
		}
		load_drive(m, true, 0, o->lookups, NULL, &a->lookup);
		uint64_t cap = o->walk_cap && o->walk_cap < a->n ? o->walk_cap : 0;
		readdir_walk(m, cap, &a->readdir, &a->walk_capped, &a->walks);
	}
}

/* ------------------------------------------------------------- braid-mds */

struct braid {
	struct bench_child ch;
	int port;
	char dir[PATH_MAX];
	char store[PATH_MAX + 16], exports[PATH_MAX + 16], key_file[PATH_MAX + 16];
	char conf[PATH_MAX + 16], log[PATH_MAX + 16];
};

static int braid_conf_write(struct braid *d)
{
	FILE *f = fopen(d->exports, "w");
	if (!f)
		return -errno;
	fprintf(f, "/ *(rw,no_root_squash,insecure)\n");
	if (fclose(f))
		return -errno;
	f = fopen(d->conf, "w");
	if (!f)
		return -errno;
	fprintf(f,
		"# Written by bench/mds.\n"
		"[mds]\n"
		"store_dir = %s\n"
		"listen = 127.0.0.1:0\n"
		"exports = %s\n"
		"key_file = %s\n"
		"# a fresh store: nothing to reclaim (Ganesha runs Graceless too)\n"
		"grace_time = 0s\n"
		"# a bench server: leave the system's rpcbind alone\n"
		"rpcbind = no\n",
		d->store, d->exports, d->key_file);
	return fclose(f) ? -errno : 0;
}

/*
 * Start braid-mds -c conf --ready-fd N; it writes "READY <port>" there
 * once serving.  Gives up when it exits or after timeout seconds.
 */
static int braid_start(const struct mds_opts *o, const char *work, struct braid *d, char *why,
		       size_t len)
{
	if (access(o->mds_path, X_OK)) {
		bench_strfmt(why, len, "%s not built (%s)", o->mds_path, strerror(errno));
		return -ENOENT;
	}
	bench_strfmt(d->dir, sizeof(d->dir), "%s/braid-mds", work);
	bench_strfmt(d->store, sizeof(d->store), "%s/store", d->dir);
	bench_strfmt(d->exports, sizeof(d->exports), "%s/exports", d->dir);
	bench_strfmt(d->key_file, sizeof(d->key_file), "%s/key", d->dir);
	bench_strfmt(d->conf, sizeof(d->conf), "%s/mds.conf", d->dir);
	bench_strfmt(d->log, sizeof(d->log), "%s/braid-mds.log", d->dir);
	if ((mkdir(d->dir, 0755) && errno != EEXIST) ||
	    (mkdir(d->store, 0700) && errno != EEXIST)) {
		bench_strfmt(why, len, "mkdir %s: %s", d->store, strerror(errno));
		return -errno;
	}
	int rc = bench_key_write(d->key_file);
	if (!rc)
		rc = braid_conf_write(d);
	if (rc) {
		bench_strfmt(why, len, "write %s: %s", d->dir, strerror(-rc));
		return rc;
	}
	int ready_fd;
	rc = bench_daemon_spawn(&d->ch, "braid-mds", o->mds_path, d->conf, d->log, &ready_fd, why,
				len);
	if (rc)
		return rc;
	char line[128];
	rc = bench_daemon_ready(ready_fd, 60, &d->port, line, sizeof(line));
	if (!rc)
		return 0;
	char last[400], sb[64] = "";
	int st = 0;
	bool exited;
	if (rc == -ECHILD) {
		/* the pipe closed: it exits, or has */
		st = bench_child_wait(&d->ch, 5);
		exited = st != -ETIMEDOUT;
	} else {
		exited = bench_child_exited(&d->ch, &st);
	}
	if (exited) {
		bench_status_str(st, sb, sizeof(sb));
	} else if (rc == -ECHILD) {
		bench_strfmt(sb, sizeof(sb), "closed --ready-fd without READY");
	} else if (rc == -EPROTO) {
		line[strcspn(line, "\n")] = 0;
		bench_strfmt(sb, sizeof(sb), "ready line \"%.40s\"", line);
	} else {
		bench_strfmt(sb, sizeof(sb), "no READY in 60 s");
	}
	bench_log_tail_errors(d->log, NULL, last, sizeof(last));
	bench_strfmt(why, len, "braid-mds failed (%s): %s", sb, last[0] ? last : "nothing logged");
	bench_child_stop(&d->ch, 10);
	bench_log_dump("braid-mds", d->log);
	return rc;
}

/* ---------------------------------------------------------------- Ganesha */

struct ganesha {
	struct bench_child ch;
	int port;
	char dir[PATH_MAX], export_dir[PATH_MAX + 16];
	char conf[PATH_MAX + 16], log[PATH_MAX + 16], pidf[PATH_MAX + 16], recov[PATH_MAX + 16];
};

/*
 * NFSv4.1 and 4.2 on 127.0.0.1 only (no rpcbind needed: without one it
 * logs that it cannot register and serves), one VFS export as the pseudo
 * root, no grace period, numeric owners.
 */
static int ganesha_conf_write(struct ganesha *g)
{
	FILE *f = fopen(g->conf, "w");
	if (!f)
		return -errno;
	fprintf(f,
		"# Written by bench/mds.\n"
		"NFS_CORE_PARAM {\n"
		"\tProtocols = 4;\n"
		"\tNFS_Port = %d;\n"
		"\tBind_addr = 127.0.0.1;\n"
		"\tEnable_NLM = false;\n"
		"\tEnable_RQUOTA = false;\n"
		"\tEnable_UDP = false;\n"
		"}\n"
		"NFSv4 {\n"
		"\tGraceless = true;\n"
		"\tOnly_Numeric_Owners = true;\n"
		"\tMinor_Versions = 1, 2;\n"
		"\tRecoveryBackend = fs;\n"
		"\tRecoveryRoot = \"%s\";\n"
		"}\n"
		"NFS_KRB5 {\n"
		"\tActive_krb5 = false;\n"
		"}\n"
		"EXPORT {\n"
		"\tExport_Id = 1;\n"
		"\tPath = \"%s\";\n"
		"\tPseudo = \"/\";\n"
		"\tProtocols = 4;\n"
		"\tTransports = TCP;\n"
		"\tAccess_Type = RW;\n"
		"\tSquash = No_Root_Squash;\n"
		"\tSecType = sys;\n"
		"\tFSAL {\n"
		"\t\tName = VFS;\n"
		"\t}\n"
		"}\n",
		g->port, g->recov, g->export_dir);
	return fclose(f) ? -errno : 0;
}

static int ganesha_start(struct nfsd_server *eng, const char *work, struct ganesha *g, char *why,
			 size_t len)
{
	char exe[PATH_MAX];
	int rc = bench_ganesha_find(exe, sizeof(exe), why, len);
	if (rc)
		return rc;
	bench_strfmt(g->dir, sizeof(g->dir), "%s/ganesha", work);
	bench_strfmt(g->export_dir, sizeof(g->export_dir), "%s/export", g->dir);
	bench_strfmt(g->recov, sizeof(g->recov), "%s/recov", g->dir);
	bench_strfmt(g->conf, sizeof(g->conf), "%s/ganesha.conf", g->dir);
	bench_strfmt(g->log, sizeof(g->log), "%s/ganesha.log", g->dir);
	bench_strfmt(g->pidf, sizeof(g->pidf), "%s/ganesha.pid", g->dir);
	const char *mk[] = {g->dir, g->export_dir, g->recov};
	for (int i = 0; i < 3; i++)
		if (mkdir(mk[i], 0755) && errno != EEXIST) {
			bench_strfmt(why, len, "mkdir %s: %s", mk[i], strerror(errno));
			return -errno;
		}
	g->port = bench_port_pick();
	rc = ganesha_conf_write(g);
	if (rc) {
		bench_strfmt(why, len, "write %s: %s", g->conf, strerror(-rc));
		return rc;
	}
	char *argv[] = {exe,  "-F",    "-L", g->log,	  "-f", g->conf,
			"-p", g->pidf, "-N", "NIV_EVENT", NULL};
	rc = bench_child_spawn(&g->ch, "ganesha.nfsd", argv, g->log, -1);
	if (rc) {
		bench_strfmt(why, len, "cannot start ganesha.nfsd: %s", strerror(-rc));
		return rc;
	}
	int st = 0;
	rc = bench_wait_null(eng, &g->ch, g->port, NFS4_PROGRAM, 4, 30, &st);
	if (rc)
		bench_child_not_ready(&g->ch, rc, st, bench_ganesha_err_marks, "ganesha.nfsd",
				      "no error logged", why, len);
	return rc;
}

/* ----------------------------------------------------------------- stages */

static void server_stop(struct bench_child *ch, const char *log)
{
	if (ch->pid <= 0)
		return;
	pid_t pid = ch->pid;
	int st = 0;
	/* still running, as it should be: stop it */
	if (bench_child_exited(ch, &st)) {
		char sb[64];
		bench_status_str(st, sb, sizeof(sb));
		fprintf(stderr, "%s: %s (pid %d) had exited during the run (%s)\n", bench_prog,
			ch->name, (int)pid, sb);
		bench_log_dump(ch->name, log);
		return;
	}
	if (!bench_child_stop(ch, 20))
		fprintf(stderr, "%s: %s needed SIGKILL\n", bench_prog, ch->name);
}

static void series_missing(struct server_res *r, const char *why)
{
	bench_strfmt(r->why, sizeof(r->why), "%s", why);
}

static void stage_run(const struct mds_opts *o, struct nfsd_server *eng, struct server_res *r,
		      int port, pid_t pid)
{
	struct mctx m = {.eng = eng, .server = pid, .res = r};
	char why[512];
	if (mctx_open(&m, o, port, why, sizeof(why))) {
		series_missing(r, why);
		mctx_close(&m);
		return;
	}
	r->ran = true;
	series_run(&m, o, r);
	mctx_close(&m);
}

static void braid_stage(const struct mds_opts *o, struct nfsd_server *eng, const char *work)
{
	struct braid d = {0};
	char why[512];
	if (braid_start(o, work, &d, why, sizeof(why))) {
		series_missing(&braid_res, why);
		return;
	}
	fprintf(stderr, "%s: braid-mds serving on port %d\n", bench_prog, d.port);
	stage_run(o, eng, &braid_res, d.port, d.ch.pid);
	server_stop(&d.ch, d.log);
	if (!o->keep)
		bench_tree_remove(d.dir);
}

static void ganesha_stage(const struct mds_opts *o, struct nfsd_server *eng, const char *work)
{
	struct ganesha g = {0};
	char why[512];
	if (ganesha_start(eng, work, &g, why, sizeof(why))) {
		series_missing(&ganesha_res, why);
		return;
	}
	fprintf(stderr, "%s: ganesha.nfsd serving %s on port %d\n", bench_prog, g.export_dir,
		g.port);
	stage_run(o, eng, &ganesha_res, g.port, g.ch.pid);
	server_stop(&g.ch, g.log);
	if (!o->keep) {
		fprintf(stderr, "%s: removing %s\n", bench_prog, g.dir);
		bench_tree_remove(g.dir);
	}
}

/* ------------------------------------------------------------------ output */

static void cell_rate(char *out, size_t len, const struct phase *p)
{
	if (p->ok)
		bench_strfmt(out, len, "%.0f", phase_rate(p));
	else
		bench_strfmt(out, len, "-");
}

static void cell_us(char *out, size_t len, const struct phase *p, double cpu)
{
	if (p->ok && p->ops)
		bench_strfmt(out, len, "%.1f", cpu * 1e6 / (double)p->ops);
	else
		bench_strfmt(out, len, "-");
}

static void row_print(const struct server_res *r, const struct at_size *a, const char *what,
		      const struct phase *p, const char *note)
{
	char key[24], rate[32], su[32], cu[32], secs[32];
	size_key(a->n, key, sizeof(key));
	cell_rate(rate, sizeof(rate), p);
	cell_us(su, sizeof(su), p, p->srv_cpu);
	cell_us(cu, sizeof(cu), p, p->cli_cpu);
	bench_strfmt(secs, sizeof(secs), p->ok ? "%.2f" : "-", p->secs);
	if (!p->ok) {
		printf("%-10s %-5s %-16s %10s  %s\n", r->name, key, what, "-",
		       p->why[0] ? p->why : (r->why[0] ? r->why : "not measured"));
		return;
	}
	printf("%-10s %-5s %-16s %10s %10s %10s %10llu %8s %s\n", r->name, key, what, rate, su, cu,
	       (unsigned long long)p->ops, secs, note);
}

static void table_print(const struct mds_opts *o)
{
	printf("%-10s %-5s %-16s %10s %10s %10s %10s %8s %s\n", "server", "size", "op", "per s",
	       "srv us/op", "cli us/op", "ops", "secs", "");
	const struct server_res *rs[2] = {&braid_res, &ganesha_res};
	for (int s = 0; s < 2; s++) {
		const struct server_res *r = rs[s];
		if (!r->ran) {
			printf("%-10s %-5s %-16s %10s  %s\n", r->name, "all", "-", "-", r->why);
			continue;
		}
		for (unsigned i = 0; i < NSIZES_MAX && r->at[i].n; i++) {
			const struct at_size *a = &r->at[i];
			char note[96] = "", key[24];
			if (!a->run) {
				size_key(a->n, key, sizeof(key));
				printf("%-10s %-5s %-16s %10s  %s\n", r->name, key, "all", "-",
				       a->create.why);
				continue;
			}
			row_print(r, a, r->two_compound ? "create (2 cmpd)" : "create", &a->create,
				  "");
			row_print(r, a, "lookup", &a->lookup, "");
			if (a->walk_capped) {
				size_key(o->walk_cap, key, sizeof(key));
				bench_strfmt(note, sizeof(note), "(walk capped at %s entries)",
					     key);
			} else if (a->walks > 1) {
				bench_strfmt(note, sizeof(note), "(%u whole walks)", a->walks);
			}
			row_print(r, a, "readdir entries", &a->readdir, note);
		}
	}
}

/* JSON output (bench_json_*): a figure that was not measured is null. */

enum what { W_CREATE, W_LOOKUP, W_READDIR };

static const struct phase *phase_of(const struct at_size *a, enum what w)
{
	return w == W_CREATE ? &a->create : w == W_LOOKUP ? &a->lookup : &a->readdir;
}

static const struct at_size *at_of(const struct server_res *r, uint64_t n)
{
	for (unsigned i = 0; i < NSIZES_MAX && r->at[i].n; i++)
		if (r->at[i].n == n && r->at[i].run)
			return &r->at[i];
	return NULL;
}

/* Per-second figure of w at size n, with why it is missing. */
static bool rate_at(const struct server_res *r, uint64_t n, enum what w, double *v, char *why,
		    size_t len)
{
	const struct at_size *a = at_of(r, n);
	char key[24];
	size_key(n, key, sizeof(key));
	if (!r->ran) {
		bench_strfmt(why, len, "%s: %s", r->name, r->why);
		return false;
	}
	if (!a) {
		bench_strfmt(why, len, "%s: %s not run", r->name, key);
		return false;
	}
	const struct phase *p = phase_of(a, w);
	if (!p->ok) {
		bench_strfmt(why, len, "%s at %s: %s", r->name, key, p->why);
		return false;
	}
	*v = phase_rate(p);
	return true;
}

/* {"1e3":x,...} over the sizes of r (the ones not run are null). */
static void jobj(const char *k, const struct server_res *r, enum what w, bool cpu)
{
	bench_json_key(k);
	putchar('{');
	for (unsigned i = 0; i < NSIZES_MAX && r->at[i].n; i++) {
		const struct at_size *a = &r->at[i];
		const struct phase *p = phase_of(a, w);
		char key[24];
		size_key(a->n, key, sizeof(key));
		printf("%s\"%s\":", i ? "," : "", key);
		bool ok = r->ran && a->run && p->ok && p->ops > 0;
		if (cpu)
			bench_json_val(ok, ok ? p->srv_cpu * 1e6 / (double)p->ops : 0, 2);
		else
			bench_json_val(ok, phase_rate(p), 1);
	}
	putchar('}');
}

/* How many whole walks each READDIR figure timed, and whether they were
 * cut at --readdir-cap, by size. */
static void jwalks(const char *k_walks, const char *k_capped, const struct server_res *r)
{
	for (int pass = 0; pass < 2; pass++) {
		bench_json_key(pass ? k_capped : k_walks);
		putchar('{');
		for (unsigned i = 0; i < NSIZES_MAX && r->at[i].n; i++) {
			const struct at_size *a = &r->at[i];
			char key[24];
			size_key(a->n, key, sizeof(key));
			printf("%s\"%s\":", i ? "," : "", key);
			if (!r->ran || !a->readdir.ok)
				printf("null");
			else if (pass)
				printf("%s", a->walk_capped ? "true" : "false");
			else
				printf("%u", a->walks);
		}
		putchar('}');
	}
}

struct ratio_def {
	const char *key;
	const struct server_res *a, *b;
	uint64_t na, nb;
	enum what w;
};

static bool ratio_eval(const struct ratio_def *d, double *v, char *why, size_t len)
{
	double x, y;
	if (!rate_at(d->a, d->na, d->w, &x, why, len) || !rate_at(d->b, d->nb, d->w, &y, why, len))
		return false;
	if (y <= 0) {
		bench_strfmt(why, len, "zero denominator");
		return false;
	}
	*v = x / y;
	return true;
}

static const struct ratio_def ratios[] = {
    {"creates_1e7_vs_1e3", &braid_res, &braid_res, 10000000, 1000, W_CREATE},
    {"lookups_1e7_vs_1e3", &braid_res, &braid_res, 10000000, 1000, W_LOOKUP},
    {"readdir_1e7_vs_1e3", &braid_res, &braid_res, 10000000, 1000, W_READDIR},
    {"creates_1e6_vs_ganesha", &braid_res, &ganesha_res, 1000000, 1000000, W_CREATE},
    {"lookups_1e6_vs_ganesha", &braid_res, &ganesha_res, 1000000, 1000000, W_LOOKUP},
    {"readdir_1e6_vs_ganesha", &braid_res, &ganesha_res, 1000000, 1000000, W_READDIR},
    {"ganesha_creates_1e6_vs_1e3", &ganesha_res, &ganesha_res, 1000000, 1000, W_CREATE},
    {"ganesha_lookups_1e6_vs_1e3", &ganesha_res, &ganesha_res, 1000000, 1000, W_LOOKUP},
    {"ganesha_readdir_1e6_vs_1e3", &ganesha_res, &ganesha_res, 1000000, 1000, W_READDIR},
};
#define NRATIOS (sizeof(ratios) / sizeof(ratios[0]))

static void ratios_print(void)
{
	printf("\n%-28s %8s  %s\n", "ratio", "value", "");
	for (size_t i = 0; i < NRATIOS; i++) {
		double v;
		char why[400];
		if (ratio_eval(&ratios[i], &v, why, sizeof(why)))
			printf("%-28s %8.3f\n", ratios[i].key, v);
		else
			printf("%-28s %8s  %s\n", ratios[i].key, "null", why);
	}
	/* every size both ran at, side by side */
	for (unsigned i = 0; i < NSIZES_MAX && braid_res.at[i].n; i++) {
		uint64_t n = braid_res.at[i].n;
		if (n == 1000000 || !at_of(&ganesha_res, n) || !braid_res.ran || !ganesha_res.ran)
			continue;
		static const char *const wn[] = {"creates", "lookups", "readdir"};
		for (int w = 0; w < 3; w++) {
			struct ratio_def d = {NULL, &braid_res, &ganesha_res, n, n, (enum what)w};
			char key[64], sk[24], why[400];
			double v;
			size_key(n, sk, sizeof(sk));
			bench_strfmt(key, sizeof(key), "%s_%s_vs_ganesha", wn[w], sk);
			if (ratio_eval(&d, &v, why, sizeof(why)))
				printf("%-28s %8.3f\n", key, v);
			else
				printf("%-28s %8s  %s\n", key, "null", why);
		}
	}
}

static void json_print(const struct mds_opts *o, const char *fstype, long ncpu)
{
	putchar('{');
	bench_json_str("bench", "mds");
	bench_json_key("sizes");
	putchar('[');
	for (unsigned i = 0; i < o->nsizes; i++)
		printf("%s%llu", i ? "," : "", (unsigned long long)o->sizes[i]);
	putchar(']');
	bench_json_num("max_size", o->max != UINT64_MAX, (double)o->max, 0);
	bench_json_num("inflight", true, o->inflight, 0);
	bench_json_num("conns", true, o->conns, 0);
	bench_json_num("lookups_per_size", true, (double)o->lookups, 0);
	bench_json_num("readdir_walk_cap", o->walk_cap > 0, (double)o->walk_cap, 0);
	bench_json_num("cores", true, (double)ncpu, 0);
	bench_json_str("fs", fstype);
	/* braid-mds */
	jobj("creates_per_s", &braid_res, W_CREATE, false);
	jobj("lookups_per_s", &braid_res, W_LOOKUP, false);
	jobj("readdir_entries_per_s", &braid_res, W_READDIR, false);
	jobj("create_cpu_us", &braid_res, W_CREATE, true);
	jobj("lookup_cpu_us", &braid_res, W_LOOKUP, true);
	jobj("readdir_cpu_us_per_entry", &braid_res, W_READDIR, true);
	jwalks("readdir_walks", "readdir_walk_capped", &braid_res);
	/* Ganesha */
	jobj("ganesha_creates_per_s", &ganesha_res, W_CREATE, false);
	jobj("ganesha_lookups_per_s", &ganesha_res, W_LOOKUP, false);
	jobj("ganesha_readdir_entries_per_s", &ganesha_res, W_READDIR, false);
	jobj("ganesha_create_cpu_us", &ganesha_res, W_CREATE, true);
	jobj("ganesha_lookup_cpu_us", &ganesha_res, W_LOOKUP, true);
	jobj("ganesha_readdir_cpu_us_per_entry", &ganesha_res, W_READDIR, true);
	jwalks("ganesha_readdir_walks", "ganesha_readdir_walk_capped", &ganesha_res);
	double v;
	char why[400];
	bool ok = rate_at(&ganesha_res, 1000000, W_CREATE, &v, why, sizeof(why));
	bench_json_num("ganesha_creates_per_s_1e6", ok, v, 1);
	ok = rate_at(&ganesha_res, 1000000, W_LOOKUP, &v, why, sizeof(why));
	bench_json_num("ganesha_lookups_per_s_1e6", ok, v, 1);
	ok = rate_at(&ganesha_res, 1000000, W_READDIR, &v, why, sizeof(why));
	bench_json_num("ganesha_readdir_entries_per_s_1e6", ok, v, 1);
	for (size_t i = 0; i < NRATIOS; i++) {
		ok = ratio_eval(&ratios[i], &v, why, sizeof(why));
		bench_json_num(ratios[i].key, ok, v, 3);
	}
	const struct server_res *rs[2] = {&braid_res, &ganesha_res};
	const char *pre[2] = {"braid", "ganesha"};
	for (int s = 0; s < 2; s++) {
		char k[64];
		bench_strfmt(k, sizeof(k), "%s_slots", pre[s]);
		bench_json_num(k, rs[s]->ran, rs[s]->slots, 0);
		bench_strfmt(k, sizeof(k), "%s_create_compounds", pre[s]);
		bench_json_num(k, rs[s]->ran, rs[s]->two_compound ? 2 : 1, 0);
		bench_strfmt(k, sizeof(k), "%s_delegations", pre[s]);
		bench_json_num(k, rs[s]->ran, (double)rs[s]->delegs, 0);
		bench_strfmt(k, sizeof(k), "%s_delay_retries", pre[s]);
		bench_json_num(k, rs[s]->ran, (double)rs[s]->delays, 0);
	}
	bench_json_str("braid_mds_missing", braid_res.ran ? NULL : braid_res.why);
	bench_json_str("ganesha_missing", ganesha_res.ran ? NULL : ganesha_res.why);
	printf("}\n");
}

/* ------------------------------------------------------------------- setup */

static void usage(void)
{
	fprintf(stderr, "usage: mds [--quick] [--max N] [--sizes N,N,...] [--ganesha-max N]\n"
			"           [--dir PATH] [--keep] [--uid N] [--gid N] [--inflight N]\n"
			"           [--conns N] [--lookups N] [--readdir-cap N] [--two-compound]\n"
			"           [--only braid|ganesha] [--braid-mds PATH]\n");
	exit(2);
}

/* "1e6", "1000000", "2e5". */
static bool count_parse(const char *s, uint64_t *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || v < 1 || v > 4e9 || v != (double)(uint64_t)v)
		return false;
	*out = (uint64_t)v;
	return true;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void opts_parse(struct mds_opts *o, int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");
	static const uint64_t def_sizes[] = {1000, 100000, 1000000, 10000000};
	bool quick = false, have_max = false;
	memcpy(o->sizes, def_sizes, sizeof(def_sizes));
	o->nsizes = 4;
	o->max = UINT64_MAX;
	o->ganesha_max = 1000000;
	o->dir = tmp && *tmp ? tmp : "/var/tmp";
	o->uid = o->gid = 0; /* both servers export with no root squashing */
	o->inflight = INFLIGHT_DEF;
	o->conns = 1;
	o->lookups = LOOKUPS_DEF;
	o->walk_cap = WALK_CAP_DEF;
	o->run_braid = o->run_ganesha = true;
	bench_exe_sibling("braid-mds", o->mds_path, sizeof(o->mds_path));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t n;
		if (!strcmp(a, "--quick")) {
			quick = true;
			continue;
		} else if (!strcmp(a, "--keep")) {
			o->keep = true;
			continue;
		} else if (!strcmp(a, "--two-compound")) {
			o->two_compound = true;
			continue;
		} else if (!v) {
			usage();
		}
		i++;
		if (!strcmp(a, "--max")) {
			if (!count_parse(v, &o->max))
				usage();
			have_max = true;
		} else if (!strcmp(a, "--sizes")) {
			char buf[256];
			bench_strfmt(buf, sizeof(buf), "%s", v);
			o->nsizes = 0;
			for (char *save = NULL, *t = strtok_r(buf, ",", &save); t;
			     t = strtok_r(NULL, ",", &save)) {
				if (o->nsizes == NSIZES_MAX || !count_parse(t, &n))
					usage();
				o->sizes[o->nsizes++] = n;
			}
			if (!o->nsizes)
				usage();
			qsort(o->sizes, o->nsizes, sizeof(o->sizes[0]), cmp_u64);
		} else if (!strcmp(a, "--ganesha-max")) {
			if (!count_parse(v, &o->ganesha_max))
				usage();
		} else if (!strcmp(a, "--dir")) {
			o->dir = v;
		} else if (!strcmp(a, "--uid")) {
			o->uid = (uint32_t)strtoul(v, NULL, 0);
		} else if (!strcmp(a, "--gid")) {
			o->gid = (uint32_t)strtoul(v, NULL, 0);
		} else if (!strcmp(a, "--inflight")) {
			if (!count_parse(v, &n) || n > 1024)
				usage();
			o->inflight = (unsigned)n;
		} else if (!strcmp(a, "--conns")) {
			if (!count_parse(v, &n) || n > CONNS_MAX)
				usage();
			o->conns = (unsigned)n;
		} else if (!strcmp(a, "--lookups")) {
			if (!count_parse(v, &o->lookups))
				usage();
		} else if (!strcmp(a, "--readdir-cap")) {
			if (!strcmp(v, "0"))
				o->walk_cap = 0;
			else if (!count_parse(v, &o->walk_cap))
				usage();
		} else if (!strcmp(a, "--only")) {
			if (!strcmp(v, "braid"))
				o->run_ganesha = false;
			else if (!strcmp(v, "ganesha"))
				o->run_braid = false;
			else
				usage();
		} else if (!strcmp(a, "--braid-mds")) {
			bench_strfmt(o->mds_path, sizeof(o->mds_path), "%s", v);
		} else {
			usage();
		}
	}
	if (quick && (!have_max || o->max > 1000000)) {
		o->max = 1000000;
		o->max_why = "--quick stops at 1e6";
	} else if (have_max) {
		o->max_why = "above --max";
	}
	for (unsigned i = 1; i < o->nsizes; i++)
		if (o->sizes[i] == o->sizes[i - 1])
			usage();
}

/* The sizes r runs: all of o's, the ones above limit marked with why. */
static void sizes_plan(const struct mds_opts *o, struct server_res *r, uint64_t limit,
		       const char *limit_why, bool enabled)
{
	for (unsigned i = 0; i < o->nsizes; i++) {
		struct at_size *a = &r->at[i];
		a->n = o->sizes[i];
		a->run = enabled && a->n <= o->max && a->n <= limit;
		const char *why = !enabled	  ? "not run (--only)"
				  : a->n > o->max ? o->max_why
				  : a->n > limit  ? limit_why
						  : NULL;
		if (why)
			at_fail(a, why);
	}
}

int main(int argc, char **argv)
{
	struct mds_opts o = {0};
	bench_init("bench/mds");
	opts_parse(&o, argc, argv);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	char work[PATH_MAX], fstype[32];
	bench_strfmt(work, sizeof(work), "%s/braid-bench-mds.XXXXXX", o.dir);
	if (!mkdtemp(work)) {
		fprintf(stderr, "%s: mkdtemp %s: %s\n", bench_prog, work, strerror(errno));
		return 99;
	}
	/* Ganesha's export dir and its handle lookups need the path resolved */
	chmod(work, 0755);
	bench_fstype(work, fstype, sizeof(fstype));
	int err = 0;
	/* one client loop: the servers get the other core */
	struct nfsd_server *eng = nfsd_client_engine_new(1, 0, &err);
	if (!eng) {
		fprintf(stderr, "%s: client engine: %s\n", bench_prog, strerror(-err));
		return 99;
	}
	char gkey[24], gwhy[64];
	size_key(o.ganesha_max, gkey, sizeof(gkey));
	bench_strfmt(gwhy, sizeof(gwhy), "Ganesha runs up to %s", gkey);
	sizes_plan(&o, &braid_res, UINT64_MAX, NULL, o.run_braid);
	sizes_plan(&o, &ganesha_res, o.ganesha_max, gwhy, o.run_ganesha);

	if (o.run_braid)
		braid_stage(&o, eng, work);
	else
		series_missing(&braid_res, "not run (--only ganesha)");
	if (o.run_ganesha)
		ganesha_stage(&o, eng, work);
	else
		series_missing(&ganesha_res, "not run (--only braid)");

	printf("bench/mds: one directory, creates (GUARDED4 OPEN + CLOSE) and lookups with "
	       "%u in flight over one NFSv4.1 session on %u connection(s), READDIR by chained "
	       "cookies (%u/%u bytes); %ld cores; %s (%s); AUTH_SYS %u/%u\n",
	       o.inflight, o.conns, READDIR_DIRCOUNT, READDIR_MAXCOUNT, ncpu, o.dir, fstype, o.uid,
	       o.gid);
	const struct server_res *rs[2] = {&braid_res, &ganesha_res};
	for (int s = 0; s < 2; s++)
		if (rs[s]->ran) {
			printf("bench/mds: %s granted %u slots; %u connection(s); creates as %s",
			       rs[s]->name, rs[s]->slots, rs[s]->conns,
			       rs[s]->two_compound ? "OPEN, then CLOSE" : "one COMPOUND");
			if (rs[s]->two_compound)
				printf(" (%s)", rs[s]->two_why);
			if (rs[s]->delegs)
				printf("; %llu OPENs returned a delegation (not returned)",
				       (unsigned long long)rs[s]->delegs);
			if (rs[s]->delays)
				printf("; %llu NFS4ERR_DELAY retries",
				       (unsigned long long)rs[s]->delays);
			printf("\n");
		}
	table_print(&o);
	printf("(per s: creates or lookups, or entries a READDIR walk returned; srv and cli us/op: "
	       "CPU of the server and of this client per op or entry, from /proc in 10 ms ticks, "
	       "so rough for rows that took well under a second)\n");
	ratios_print();
	json_print(&o, fstype, ncpu);

	nfsd_server_free(eng);
	if (o.keep)
		fprintf(stderr, "%s: kept %s\n", bench_prog, work);
	else
		bench_tree_remove(work);
	return 0;
}
