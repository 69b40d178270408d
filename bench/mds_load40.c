/* SPDX-License-Identifier: MIT */
/*
 * bench/mds's NFSv4.0 series (RFC 7530; "v4.0" in the table, nfs40_* keys):
 * braid-mds after its NFSv4.1 series, in a directory of its own
 * (mds-bench-v40 under the root), with the same sizes and schedule, as an
 * NFSv4.0 client must work:
 *
 *  - a client ID from SETCLIENTID + SETCLIENTID_CONFIRM (no callback: an
 *    empty address, so no delegations);
 *  - creates: each of --inflight open-owners runs its creates one after
 *    the other, as seqids require (RFC 7530 §9.1.7): {PUTFH dir, OPEN
 *    (GUARDED4), GETFH}, then {PUTFH file, CLOSE} (4.0 has no current
 *    stateid); an owner's first OPEN is confirmed (OPEN_CONFIRM) before its
 *    CLOSE;
 *  - lookups: {PUTFH dir, LOOKUP, GETFH, GETATTR}, --inflight in flight;
 *  - READDIR entries per second, by chained cookies, as the 4.1 walk.
 *
 * Every COMPOUND is minor version 0 without SEQUENCE, AUTH_SYS --uid/--gid,
 * on --conns connections.  A RENEW before each lookup and walk phase keeps
 * the lease (creates renew it themselves).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/mds4.h"
#include "nfsd/nfs41_clnt.h"

#define DIR_NAME40 "mds-bench-v40"

/* One open-owner: its creates run one after the other. */
struct owner40 {
	uint32_t seqid; /* the next one to send */
	bool confirmed;
};

struct m40 {
	struct nfsd_server *eng;
	struct nfsd_clnt *c[CONNS_MAX];
	unsigned nconn;
	uint32_t uid, gid;
	uint64_t clientid;
	pid_t server;
	struct server_res *res;
	uint32_t dirfhlen;
	uint8_t dirfh[NFS4_FHSIZE];
	uint64_t nfiles;
	unsigned nowners;
	struct owner40 *owners;
	struct bench_mds_window win; /* a chain per owner */
};

/* "NFS4ERR 10008 in OPEN", or the transport error. */
static void err_of(int rc, const COMPOUND4res *res, char *out, size_t len)
{
	char eb[64];
	if (rc) {
		bench_strfmt(out, len, "%s", bench_call_err_str(rc, eb, sizeof(eb)));
		return;
	}
	int op = res->resarray.len ? res->resarray.val[res->resarray.len - 1].resop : -1;
	bench_strfmt(out, len, "nfsstat4 %d in op %d", (int)res->status, op);
}

/* One synchronous 4.0 COMPOUND; 0, or -EIO with why set. */
static int sync40(struct m40 *m, const nfs_argop4 *ops, unsigned n, COMPOUND4res *res,
		  struct xdr_arena *ar, char *why, size_t len)
{
	int rc = nfs41c_compound_raw_sys(m->c[0], m->uid, m->gid, 0, ops, n, res, ar);
	if (!rc && res->status == NFS4_OK)
		return 0;
	err_of(rc, res, why, len);
	return -EIO;
}

/* ------------------------------------------------------------------- loads */

enum job40 {
	J_OPEN,	   /* PUTFH dir, OPEN, GETFH */
	J_CONFIRM, /* PUTFH file, OPEN_CONFIRM (an owner's first open) */
	J_CLOSE,   /* PUTFH file, CLOSE */
	J_LOOKUP,  /* PUTFH dir, LOOKUP, GETFH, GETATTR */
};

/* One open-owner's create (its chain is the owner), or a lookup. */
struct call40 {
	struct bench_mds_call head;
	struct m40 *m;
	enum job40 job;
	stateid4 sid;
	uint32_t fhlen;
	uint8_t fh[NFS4_FHSIZE];
};

static bool status_moves_seqid(nfsstat4 st)
{
	switch (st) {
	case NFS4ERR_STALE_CLIENTID:
	case NFS4ERR_STALE_STATEID:
	case NFS4ERR_BAD_STATEID:
	case NFS4ERR_BAD_SEQID:
	case NFS4ERR_BADXDR:
	case NFS4ERR_RESOURCE:
	case NFS4ERR_NOFILEHANDLE:
	case NFS4ERR_MOVED:
		return false;
	default:
		return true;
	}
}

static void call_done(void *ctx, int rc, COMPOUND4res *res)
{
	struct call40 *k = ctx;
	struct m40 *m = k->m;
	char why[200] = "";
	enum bench_mds_end end = BENCH_MDS_FAIL;
	if (!rc && k->job != J_LOOKUP && status_moves_seqid(res->status))
		m->owners[k->head.chain].seqid++; /* one call per owner at a time */
	if (!rc && res->status == NFS4ERR_DELAY) {
		end = BENCH_MDS_DELAY; /* the same job again, with the next seqid */
	} else if (rc || res->status != NFS4_OK) {
		err_of(rc, res, why, sizeof(why));
	} else {
		const nfs_resop4 *r = res->resarray.val;
		switch (k->job) {
		case J_OPEN: {
			const OPEN4resok *ok = &r[1].u.opopen.u.resok4;
			const nfs_fh4 *fh = &r[2].u.opgetfh.u.resok4.object;
			k->sid = ok->stateid;
			k->fhlen = fh->len <= sizeof(k->fh) ? fh->len : 0;
			memcpy(k->fh, fh->val, k->fhlen);
			k->job = (ok->rflags & OPEN4_RESULT_CONFIRM) ? J_CONFIRM : J_CLOSE;
			end = BENCH_MDS_NEXT;
			break;
		}
		case J_CONFIRM:
			k->sid = r[1].u.opopen_confirm.u.resok4.open_stateid;
			m->owners[k->head.chain].confirmed = true;
			k->job = J_CLOSE;
			end = BENCH_MDS_NEXT;
			break;
		case J_CLOSE:
		case J_LOOKUP:
			end = BENCH_MDS_DONE; /* the chain goes on with its next file */
			break;
		}
	}
	bench_mds_call_end(&k->head, end, 0, why);
}

static int call_send(void *ctx, struct bench_mds_call *head, unsigned seq)
{
	struct m40 *m = ctx;
	struct call40 *k = (struct call40 *)head;
	char name[16], owner[24];
	nfs_argop4 ops[4];
	unsigned n = 0;
	struct owner40 *ow = &m->owners[head->chain];
	bench_mds_file_name(head->idx, name, sizeof(name));
	switch (k->job) {
	case J_OPEN: {
		bench_strfmt(owner, sizeof(owner), "bench-mds40-%u", head->chain);
		ops[n++] = bench_mds4_putfh(m->dirfh, m->dirfhlen);
		nfs_argop4 a = {.argop = OP_OPEN};
		OPEN4args *o = &a.u.opopen;
		o->seqid = ow->seqid;
		o->share_access = OPEN4_SHARE_ACCESS_WRITE;
		o->share_deny = OPEN4_SHARE_DENY_NONE;
		o->owner.clientid = m->clientid;
		o->owner.owner = xdr_opaque_of(owner, (uint32_t)strlen(owner));
		o->openhow.opentype = OPEN4_CREATE;
		o->openhow.u.how.mode = GUARDED4;
		o->openhow.u.how.u.createattrs = bench_mds4_mode(false);
		o->claim.claim = CLAIM_NULL;
		o->claim.u.file = xdr_string_of(name);
		ops[n++] = a;
		ops[n++] = bench_mds4_op(OP_GETFH);
		break;
	}
	case J_CONFIRM:
		ops[n++] = bench_mds4_putfh(k->fh, k->fhlen);
		ops[n] = bench_mds4_op(OP_OPEN_CONFIRM);
		ops[n].u.opopen_confirm.open_stateid = k->sid;
		ops[n++].u.opopen_confirm.seqid = ow->seqid;
		break;
	case J_CLOSE:
		ops[n++] = bench_mds4_putfh(k->fh, k->fhlen);
		ops[n] = bench_mds4_op(OP_CLOSE);
		ops[n].u.opclose.open_stateid = k->sid;
		ops[n++].u.opclose.seqid = ow->seqid;
		break;
	case J_LOOKUP:
		n = bench_mds4_lookup_ops(ops, m->dirfh, m->dirfhlen, name);
		break;
	}
	struct nfsd_clnt *c = m->c[seq % m->nconn];
	return nfs41c_compound_raw_sys_async(c, m->uid, m->gid, 0, ops, n, call_done, k);
}

static void call_begin(void *ctx, struct bench_mds_call *head)
{
	struct call40 *k = (struct call40 *)head;
	k->m = ctx;
	k->job = head->lookup ? J_LOOKUP : J_OPEN;
}

static const char *call_what(const struct bench_mds_call *head)
{
	return head->lookup ? "lookup" : "create";
}

static const struct bench_mds_window_ops call40_ops = {
    .call_size = sizeof(struct call40),
    .begin = call_begin,
    .send = call_send,
    .what = call_what,
};

static void renew40(void *ctx)
{
	struct m40 *m = ctx;
	nfs_argop4 op = bench_mds4_op(OP_RENEW);
	op.u.oprenew.clientid = m->clientid;
	COMPOUND4res res;
	struct xdr_arena ar;
	char w[200];
	xdr_arena_init(&ar, NULL, 0, 1u << 16);
	if (sync40(m, &op, 1, &res, &ar, w, sizeof(w)))
		fprintf(stderr, "%s: NFSv4.0 RENEW: %s\n", bench_prog, w);
	xdr_arena_release(&ar);
}

static int readdir_page40(void *ctx, struct bench_mds_page *pg, struct xdr_arena *ar, char *why,
			  size_t len)
{
	struct m40 *m = ctx;
	nfs_argop4 ops[2];
	unsigned n = bench_mds4_readdir_ops(ops, m->dirfh, m->dirfhlen, pg);
	COMPOUND4res res;
	if (sync40(m, ops, n, &res, ar, why, len))
		return -EIO;
	bench_mds4_readdir_take(pg, &res.resarray.val[1].u.opreaddir.u.resok4);
	return 0;
}

static int v40_walk(void *ctx, uint64_t cap, struct phase *ph, bool *capped, unsigned *walks)
{
	struct m40 *m = ctx;
	return bench_mds_walk(m, readdir_page40, "READDIR", "entries", m->res->name, m->server,
			      m->nfiles, cap, ph, capped, walks);
}

static const struct mds_load_ops v40_ops = {
    .walk = v40_walk,
    .renew = renew40,
    .walk_name = "READDIR",
};

/* ----------------------------------------------------------------- stage */

/* Connect, get a confirmed client ID, make the directory. */
static int m40_open(struct m40 *m, const struct mds_opts *o, int port, char *why, size_t len)
{
	int err = 0;
	for (unsigned i = 0; i < o->conns; i++) {
		if (!(m->c[i] = bench_clnt_open(m->eng, port, &err))) {
			bench_strfmt(why, len, "connect to port %d: %s", port, strerror(-err));
			return -EIO;
		}
		m->nconn++;
	}
	m->res->conns40 = m->nconn;
	m->nowners = o->inflight ? o->inflight : 1;
	if (!(m->owners = calloc(m->nowners, sizeof(*m->owners)))) {
		bench_strfmt(why, len, "out of memory");
		return -EIO;
	}
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	COMPOUND4res res;
	char w[200], id[64];
	bench_strfmt(id, sizeof(id), "braid-bench-mds40-%d", (int)getpid());
	nfs_argop4 sc = bench_mds4_op(OP_SETCLIENTID);
	uint64_t verf = (uint64_t)getpid() << 32 | (uint32_t)(bench_now_s() * 1000);
	memcpy(sc.u.opsetclientid.client.verifier, &verf, 8);
	sc.u.opsetclientid.client.id = xdr_opaque_of(id, (uint32_t)strlen(id));
	sc.u.opsetclientid.callback.cb_location.na_r_netid = xdr_string_of("tcp");
	sc.u.opsetclientid.callback.cb_location.na_r_addr = xdr_string_of("");
	if (sync40(m, &sc, 1, &res, &ar, w, sizeof(w))) {
		bench_strfmt(why, len, "SETCLIENTID: %s", w);
		xdr_arena_release(&ar);
		return -EIO;
	}
	m->clientid = res.resarray.val[0].u.opsetclientid.u.resok4.clientid;
	nfs_argop4 cf = bench_mds4_op(OP_SETCLIENTID_CONFIRM);
	cf.u.opsetclientid_confirm.clientid = m->clientid;
	memcpy(cf.u.opsetclientid_confirm.setclientid_confirm,
	       res.resarray.val[0].u.opsetclientid.u.resok4.setclientid_confirm, 8);
	xdr_arena_reset(&ar);
	if (sync40(m, &cf, 1, &res, &ar, w, sizeof(w))) {
		bench_strfmt(why, len, "SETCLIENTID_CONFIRM: %s", w);
		xdr_arena_release(&ar);
		return -EIO;
	}
	nfs_argop4 mk[3] = {bench_mds4_op(OP_PUTROOTFH), bench_mds4_op(OP_CREATE),
			    bench_mds4_op(OP_GETFH)};
	CREATE4args *ca = &mk[1].u.opcreate;
	ca->objtype.type = NF4DIR;
	ca->objname = xdr_string_of(DIR_NAME40);
	ca->createattrs = bench_mds4_mode(true);
	xdr_arena_reset(&ar);
	if (sync40(m, mk, 3, &res, &ar, w, sizeof(w))) {
		bench_strfmt(why, len, "create directory /%s: %s", DIR_NAME40, w);
		xdr_arena_release(&ar);
		return -EIO;
	}
	const nfs_fh4 *dfh = &res.resarray.val[2].u.opgetfh.u.resok4.object;
	m->dirfhlen = dfh->len <= sizeof(m->dirfh) ? dfh->len : 0;
	memcpy(m->dirfh, dfh->val, m->dirfhlen);
	xdr_arena_release(&ar);
	return 0;
}

void bench_mds_series40_missing(struct server_res *r, const char *why)
{
	bench_strfmt(r->why40, sizeof(r->why40), "%s", why);
}

void bench_mds_stage40_run(const struct mds_opts *o, struct nfsd_server *eng, struct server_res *r,
			   int port, pid_t pid)
{
	struct m40 m = {.eng = eng, .server = pid, .res = r, .uid = o->uid, .gid = o->gid};
	char why[512];
	if (m40_open(&m, o, port, why, sizeof(why))) {
		bench_mds_series40_missing(r, why);
	} else {
		r->ran40 = true;
		m.win = (struct bench_mds_window){.ops = &call40_ops,
						  .ctx = &m,
						  .chains = m.nowners,
						  .server = pid,
						  .nfiles = &m.nfiles,
						  .delays = &r->delays40};
		bench_mds_series_run(&v40_ops, &m.win, o, "braid-mds NFSv4.0", r->at40);
	}
	for (unsigned i = 0; i < m.nconn; i++)
		nfsd_clnt_free(m.c[i]);
	free(m.owners);
}
