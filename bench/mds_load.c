/* SPDX-License-Identifier: MIT */
/*
 * bench/mds's load generator: one NFSv4.1 session to a server and the
 * directory it works in, creates and lookups with --inflight COMPOUNDs in
 * flight (mds_window.c keeps them there), READDIR walks by chained
 * cookies, and the series of sizes run on it (the stage of one server).  The schedule of sizes
 * (bench_mds_series_run) is the NFSv3 load's too (mds_load3.c).  The
 * benchmark is described in mds.c.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/mds4.h"
#include "nfsd/nfs41_clnt.h"

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

fattr4 bench_mds4_mode(bool dir)
{
	const uint8_t *mode = dir ? mode_dir : mode_file;
	return (fattr4){.attrmask = {2, mode_bits}, .attr_vals = xdr_opaque_of(mode, 4)};
}

bool bench_mds_random_names;

void bench_mds_file_name(uint32_t idx, char *out, size_t len)
{
	if (!bench_mds_random_names) {
		bench_strfmt(out, len, "f%010u", idx);
		return;
	}
	/* splitmix64's finaliser: a bijection, so names never repeat */
	uint64_t z = idx + 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	bench_strfmt(out, len, "r%016llx", (unsigned long long)z);
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
	struct bench_mds_window win; /* sends wait for a slot */
};

nfs_argop4 bench_mds4_putfh(const uint8_t *fh, uint32_t len)
{
	nfs_argop4 a = {.argop = OP_PUTFH};
	a.u.opputfh.object = xdr_opaque_of(fh, len);
	return a;
}

nfs_argop4 bench_mds4_op(nfs_opnum4 op)
{
	return (nfs_argop4){.argop = op};
}

unsigned bench_mds4_lookup_ops(nfs_argop4 *ops, const uint8_t *dirfh, uint32_t dirfhlen,
			       const char *name)
{
	ops[0] = bench_mds4_putfh(dirfh, dirfhlen);
	ops[1] = bench_mds4_op(OP_LOOKUP);
	ops[1].u.oplookup.objname = xdr_string_of(name);
	ops[2] = bench_mds4_op(OP_GETFH);
	ops[3] = bench_mds4_op(OP_GETATTR);
	ops[3].u.opgetattr.attr_request = (bitmap4){1, lookup_bits};
	return 4;
}

unsigned bench_mds4_readdir_ops(nfs_argop4 *ops, const uint8_t *dirfh, uint32_t dirfhlen,
				const struct bench_mds_page *pg)
{
	ops[0] = bench_mds4_putfh(dirfh, dirfhlen);
	ops[1] = bench_mds4_op(OP_READDIR);
	READDIR4args *ra = &ops[1].u.opreaddir;
	ra->cookie = pg->cookie;
	memcpy(ra->cookieverf, pg->verf, sizeof(pg->verf));
	ra->dircount = READDIR_DIRCOUNT;
	ra->maxcount = READDIR_MAXCOUNT;
	ra->attr_request = (bitmap4){1, readdir_bits};
	return 2;
}

void bench_mds4_readdir_take(struct bench_mds_page *pg, const READDIR4resok *ok)
{
	for (const entry4 *e = ok->reply.entries; e; e = e->nextentry) {
		pg->cookie = e->cookie;
		pg->got++;
	}
	pg->counted = pg->got;
	pg->eof = ok->reply.eof;
	memcpy(pg->verf, ok->cookieverf, sizeof(pg->verf));
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
	o->openhow.u.how.u.createattrs = bench_mds4_mode(false);
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

/* One COMPOUND in flight, or queued for the window to send. */
struct mcall {
	struct bench_mds_call head;
	enum mop op;
	stateid4 sid; /* MOP_CLOSE */
	uint32_t fhlen;
	uint8_t fh[NFS4_FHSIZE];
};

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
	char why[200] = "";
	uint64_t delegs = 0;
	enum bench_mds_end end = BENCH_MDS_FAIL;
	if (!rc && res->status == NFS4ERR_DELAY && res->resarray.len &&
	    res->resarray.val[res->resarray.len - 1].resop != OP_CLOSE) {
		/* not done: send it again (an answered CLOSE of a create
		 * would make the retried OPEN find the name) */
		end = BENCH_MDS_DELAY;
	} else if (rc || res->status != NFS4_OK) {
		compound_err(rc, res, why, sizeof(why));
	} else if (mcall_check(k, res, why, sizeof(why), &delegs)) {
		end = k->op == MOP_OPEN ? BENCH_MDS_NEXT : BENCH_MDS_DONE;
		if (k->op == MOP_OPEN)
			k->op = MOP_CLOSE;
	}
	bench_mds_call_end(&k->head, end, delegs, why);
}

/* Send k on the next connection; its result comes to mcall_done. */
static int mcall_send(void *ctx, struct bench_mds_call *head, unsigned seq)
{
	struct mctx *m = ctx;
	struct mcall *k = (struct mcall *)head;
	char name[16], owner[24];
	nfs_argop4 ops[4];
	unsigned n = 0;
	bench_mds_file_name(head->idx, name, sizeof(name));
	/* an open owner per slot we keep busy, so that no server serializes
	 * our OPENs on one owner */
	bench_strfmt(owner, sizeof(owner), "bench-mds-%u", head->idx % m->inflight);
	switch (k->op) {
	case MOP_CREATE:
	case MOP_OPEN:
		ops[n++] = bench_mds4_putfh(m->dirfh, m->dirfhlen);
		ops[n++] = op_open_create(m, name, owner);
		ops[n++] = bench_mds4_op(OP_GETFH);
		if (k->op == MOP_CREATE)
			ops[n++] = op_close(NULL);
		break;
	case MOP_CLOSE:
		ops[n++] = bench_mds4_putfh(k->fh, k->fhlen);
		ops[n++] = op_close(&k->sid);
		break;
	case MOP_LOOKUP:
		n = bench_mds4_lookup_ops(ops, m->dirfh, m->dirfhlen, name);
		break;
	}
	struct nfsd_clnt *c = m->c[seq % m->nconn];
	/* the arguments are encoded before this returns: ops may go */
	return nfs41c_compound_async(m->sess, c, 0, ops, n, mcall_done, k);
}

/* A new create or lookup's first COMPOUND. */
static void mcall_begin(void *ctx, struct bench_mds_call *head)
{
	const struct mctx *m = ctx;
	struct mcall *k = (struct mcall *)head;
	k->op = head->lookup ? MOP_LOOKUP : m->two_compound ? MOP_OPEN : MOP_CREATE;
}

static const char *mcall_what(const struct bench_mds_call *head)
{
	return mop_str(((const struct mcall *)head)->op);
}

static const struct bench_mds_window_ops mcall_ops = {
    .call_size = sizeof(struct mcall),
    .begin = mcall_begin,
    .send = mcall_send,
    .what = mcall_what,
};

/* --------------------------------------------------------------- READDIR */

int bench_mds_walk(void *ctx, bench_mds_page_fn page, const char *what, const char *unit,
		   const char *name, pid_t server, uint64_t nfiles, uint64_t cap, struct phase *ph,
		   bool *capped, unsigned *walks)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 16u << 20);
	struct bench_mds_page pg = {0};
	uint64_t seen = 0, total = 0;
	int rc = 0;
	char why[200] = "";
	*capped = false;
	*walks = 1;
	double t0 = bench_now_s(), c0 = bench_proc_cpu_s(server), u0 = bench_self_cpu_s();
	for (;;) {
		if (pg.eof) {
			if (seen != nfiles && *walks == 1)
				fprintf(stderr,
					"%s: warning: %s %s walk returned %llu %s, the "
					"directory has %llu\n",
					bench_prog, name, what, (unsigned long long)seen, unit,
					(unsigned long long)nfiles);
			total += seen;
			if (total >= WALK_MIN_ENTRIES || !seen)
				break;
			(*walks)++;
			seen = 0;
			memset(&pg, 0, sizeof(pg));
		}
		if (cap && seen >= cap) {
			*capped = true;
			break;
		}
		xdr_arena_reset(&ar);
		pg.got = pg.counted = 0;
		if ((rc = page(ctx, &pg, &ar, why, sizeof(why))))
			break;
		seen += pg.counted;
		if (!pg.got && !pg.eof) {
			bench_strfmt(why, sizeof(why), "%s: no entries and no eof after %llu %s",
				     what, (unsigned long long)seen, unit);
			rc = -EIO;
			break;
		}
	}
	ph->secs = bench_now_s() - t0;
	ph->srv_cpu = bench_proc_cpu_s(server) - c0;
	ph->cli_cpu = bench_self_cpu_s() - u0;
	ph->ops = pg.eof ? total : total + seen;
	ph->ok = !rc;
	if (rc)
		bench_strfmt(ph->why, sizeof(ph->why), "walk %u, after %llu %s: %s", *walks,
			     (unsigned long long)seen, unit, why);
	xdr_arena_release(&ar);
	return rc;
}

/* One READDIR of the walk (type and fileid of each entry). */
static int readdir_page(void *ctx, struct bench_mds_page *pg, struct xdr_arena *ar, char *why,
			size_t len)
{
	struct mctx *m = ctx;
	nfs_argop4 ops[2];
	unsigned n = bench_mds4_readdir_ops(ops, m->dirfh, m->dirfhlen, pg);
	COMPOUND4res res;
	int rc = nfs41c_compound_ex(m->sess, m->c[0], 0, ops, n, &res, ar);
	if (rc || res.status != NFS4_OK) {
		compound_err(rc, &res, why, len);
		return -EIO;
	}
	if (res.resarray.len != 3) {
		bench_strfmt(why, len, "READDIR: %u results", res.resarray.len);
		return -EIO;
	}
	bench_mds4_readdir_take(pg, &res.resarray.val[2].u.opreaddir.u.resok4);
	return 0;
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
	nfs_argop4 rcop = bench_mds4_op(OP_RECLAIM_COMPLETE);
	rcop.u.opreclaim_complete.rca_one_fs = false;
	if (sync_compound(m, &rcop, 1, &res, &ar, w, sizeof(w)) &&
	    res.status != NFS4ERR_COMPLETE_ALREADY)
		fprintf(stderr, "%s: %s: RECLAIM_COMPLETE: %s (going on)\n", bench_prog,
			m->res->name, w);

	/* the directory, under the export's root */
	nfs_argop4 mk[3] = {bench_mds4_op(OP_PUTROOTFH), bench_mds4_op(OP_CREATE),
			    bench_mds4_op(OP_GETFH)};
	CREATE4args *ca = &mk[1].u.opcreate;
	ca->objtype.type = NF4DIR;
	ca->objname = xdr_string_of(DIR_NAME);
	ca->createattrs = bench_mds4_mode(true);
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
	bench_mds_file_name(0, name, sizeof(name));
	nfs_argop4 cr[4] = {bench_mds4_putfh(m->dirfh, m->dirfhlen),
			    op_open_create(m, name, "bench-mds-0"), bench_mds4_op(OP_GETFH),
			    op_close(NULL)};
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
		nfs_argop4 cl[2] = {bench_mds4_putfh(fh, fl), op_close(&sid)};
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

void bench_mds_at_fail(struct at_size *a, const char *why)
{
	struct phase *ps[3] = {&a->create, &a->lookup, &a->readdir};
	for (int i = 0; i < 3; i++)
		if (!ps[i]->ok && !ps[i]->why[0])
			bench_strfmt(ps[i]->why, sizeof(ps[i]->why), "%s", why);
}

void bench_mds_series_run(const struct mds_load_ops *ops, const struct bench_mds_window *w,
			  const struct mds_opts *o, const char *who, struct at_size *at)
{
	char stop_why[300] = "";
	for (unsigned i = 0; i < NSIZES_MAX && at[i].n; i++) {
		struct at_size *a = &at[i];
		char key[24], label[96];
		bench_mds_size_key(a->n, key, sizeof(key));
		if (!a->run)
			continue;
		if (stop_why[0]) {
			bench_mds_at_fail(a, stop_why);
			continue;
		}
		uint64_t nfiles = *w->nfiles;
		uint64_t batch = batch_at(a->n);
		if (nfiles + batch > a->n)
			batch = a->n - nfiles;
		uint64_t grow = a->n - batch - nfiles;
		if (grow) {
			struct phase pop = {0};
			bench_strfmt(label, sizeof(label), "%s: growing the directory to %s", who,
				     key);
			fprintf(stderr, "%s: %s (%llu creates)\n", bench_prog, label,
				(unsigned long long)grow);
			if (bench_mds_window_run(w, false, nfiles, grow, label, &pop)) {
				bench_strfmt(stop_why, sizeof(stop_why), "growing to %s: %s", key,
					     pop.why);
				bench_mds_at_fail(a, stop_why);
				continue;
			}
			a->populate_rate = pop.secs > 0 ? (double)pop.ops / pop.secs : 0;
		}
		fprintf(stderr, "%s: %s at %s: %llu timed creates, %llu lookups, %s walk\n",
			bench_prog, who, key, (unsigned long long)batch,
			(unsigned long long)o->lookups, ops->walk_name);
		/* in rounds, each reported: the first creates after a long
		 * growth can pay for it (the kernel's writeback of what the
		 * growth left dirty), which one batch would take as the rate */
		unsigned nr = batch >= (uint64_t)CREATE_ROUNDS * CREATE_ROUND_MIN ? CREATE_ROUNDS : 1;
		struct phase rp[CREATE_ROUNDS];
		bool failed = false;
		for (unsigned r = 0; r < nr && !failed; r++) {
			uint64_t part = batch / nr + (r < batch % nr);
			memset(&rp[r], 0, sizeof(rp[r]));
			if (bench_mds_window_run(w, false, *w->nfiles, part, NULL, &rp[r])) {
				a->create = rp[r];
				failed = true;
			}
			a->create_rounds[r] = rp[r].secs > 0 ? (double)rp[r].ops / rp[r].secs : 0;
		}
		if (failed) {
			bench_strfmt(stop_why, sizeof(stop_why), "after create failure at %s: %s",
				     key, a->create.why);
			bench_mds_at_fail(a, stop_why);
			continue;
		}
		a->ncreate_rounds = nr;
		unsigned med = 0; /* the round with the median rate */
		for (unsigned r = 0; r < nr; r++) {
			unsigned below = 0, same = 0;
			for (unsigned q = 0; q < nr; q++) {
				below += a->create_rounds[q] < a->create_rounds[r];
				same += q < r && a->create_rounds[q] == a->create_rounds[r];
			}
			if (below + same == nr / 2)
				med = r;
		}
		a->create = rp[med];
		if (nr > 1) {
			fprintf(stderr, "%s: %s at %s: creates/s round by round:", bench_prog, who,
				key);
			for (unsigned r = 0; r < nr; r++)
				fprintf(stderr, " %.0f", a->create_rounds[r]);
			fprintf(stderr, " (the median stands)\n");
		}
		if (ops->renew)
			ops->renew(w->ctx);
		bench_mds_window_run(w, true, 0, o->lookups, NULL, &a->lookup);
		uint64_t cap = o->walk_cap && o->walk_cap < a->n ? o->walk_cap : 0;
		if (ops->renew)
			ops->renew(w->ctx);
		ops->walk(w->ctx, cap, &a->readdir, &a->walk_capped, &a->walks);
	}
}

/* The NFSv4.1 session's walk, for the series. */
static int v41_walk(void *ctx, uint64_t cap, struct phase *ph, bool *capped, unsigned *walks)
{
	struct mctx *m = ctx;
	return bench_mds_walk(m, readdir_page, "READDIR", "entries", m->res->name, m->server,
			      m->nfiles, cap, ph, capped, walks);
}

static const struct mds_load_ops v41_ops = {
    .walk = v41_walk,
    .walk_name = "READDIR",
};

/* ----------------------------------------------------------------- stages */

void bench_mds_series_missing(struct server_res *r, const char *why)
{
	bench_strfmt(r->why, sizeof(r->why), "%s", why);
}

void bench_mds_stage_run(const struct mds_opts *o, struct nfsd_server *eng, struct server_res *r,
			 int port, pid_t pid)
{
	struct mctx m = {.eng = eng, .server = pid, .res = r};
	m.win = (struct bench_mds_window){.ops = &mcall_ops,
					  .ctx = &m,
					  .server = pid,
					  .nfiles = &m.nfiles,
					  .delays = &r->delays,
					  .delegs = &r->delegs};
	char why[512];
	if (mctx_open(&m, o, port, why, sizeof(why))) {
		bench_mds_series_missing(r, why);
		mctx_close(&m);
		return;
	}
	r->ran = true;
	bench_mds_series_run(&v41_ops, &m.win, o, r->name, r->at);
	mctx_close(&m);
}
