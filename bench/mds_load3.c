/* SPDX-License-Identifier: MIT */
/*
 * bench/mds's NFSv3 load (RFC 1813): the export's root handle from MOUNT
 * v3 MNT, a directory of its own (DIR_NAME3) made by MKDIR, creates as
 * CREATE GUARDED and lookups as LOOKUP with --inflight calls in flight
 * over --conns connections, READDIRPLUS walks by chained cookies and
 * cookie verifier, and the series of sizes (mds_load.c's schedule) run on
 * them.  The benchmark is described in mds.c.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/mds.h"
#include "bench/nfs3load.h"
#include "nfsd/xdr/mount_prot.h"
#include "nfsd/xdr/nfs3_prot.h"

/* ------------------------------------------------------------ NFSv3 names */

static const struct {
	int code;
	const char *name;
} status3_names[] = {
    {NFS3ERR_PERM, "NFS3ERR_PERM"},
    {NFS3ERR_NOENT, "NFS3ERR_NOENT"},
    {NFS3ERR_IO, "NFS3ERR_IO"},
    {NFS3ERR_NXIO, "NFS3ERR_NXIO"},
    {NFS3ERR_ACCES, "NFS3ERR_ACCES"},
    {NFS3ERR_EXIST, "NFS3ERR_EXIST"},
    {NFS3ERR_XDEV, "NFS3ERR_XDEV"},
    {NFS3ERR_NODEV, "NFS3ERR_NODEV"},
    {NFS3ERR_NOTDIR, "NFS3ERR_NOTDIR"},
    {NFS3ERR_ISDIR, "NFS3ERR_ISDIR"},
    {NFS3ERR_INVAL, "NFS3ERR_INVAL"},
    {NFS3ERR_FBIG, "NFS3ERR_FBIG"},
    {NFS3ERR_NOSPC, "NFS3ERR_NOSPC"},
    {NFS3ERR_ROFS, "NFS3ERR_ROFS"},
    {NFS3ERR_MLINK, "NFS3ERR_MLINK"},
    {NFS3ERR_NAMETOOLONG, "NFS3ERR_NAMETOOLONG"},
    {NFS3ERR_NOTEMPTY, "NFS3ERR_NOTEMPTY"},
    {NFS3ERR_DQUOT, "NFS3ERR_DQUOT"},
    {NFS3ERR_STALE, "NFS3ERR_STALE"},
    {NFS3ERR_REMOTE, "NFS3ERR_REMOTE"},
    {NFS3ERR_BADHANDLE, "NFS3ERR_BADHANDLE"},
    {NFS3ERR_NOT_SYNC, "NFS3ERR_NOT_SYNC"},
    {NFS3ERR_BAD_COOKIE, "NFS3ERR_BAD_COOKIE"},
    {NFS3ERR_NOTSUPP, "NFS3ERR_NOTSUPP"},
    {NFS3ERR_TOOSMALL, "NFS3ERR_TOOSMALL"},
    {NFS3ERR_SERVERFAULT, "NFS3ERR_SERVERFAULT"},
    {NFS3ERR_BADTYPE, "NFS3ERR_BADTYPE"},
    {NFS3ERR_JUKEBOX, "NFS3ERR_JUKEBOX"},
};

static const char *status3_str(int st, char *buf, size_t len)
{
	for (size_t i = 0; i < sizeof(status3_names) / sizeof(status3_names[0]); i++)
		if (status3_names[i].code == st)
			return status3_names[i].name;
	bench_strfmt(buf, len, "nfsstat3 %d", st);
	return buf;
}

static const char *mnt_status_str(int st, char *buf, size_t len)
{
	switch (st) {
	case MNT3ERR_PERM:
		return "MNT3ERR_PERM";
	case MNT3ERR_NOENT:
		return "MNT3ERR_NOENT";
	case MNT3ERR_IO:
		return "MNT3ERR_IO";
	case MNT3ERR_ACCES:
		return "MNT3ERR_ACCES";
	case MNT3ERR_NOTDIR:
		return "MNT3ERR_NOTDIR";
	case MNT3ERR_INVAL:
		return "MNT3ERR_INVAL";
	case MNT3ERR_NAMETOOLONG:
		return "MNT3ERR_NAMETOOLONG";
	case MNT3ERR_NOTSUPP:
		return "MNT3ERR_NOTSUPP";
	case MNT3ERR_SERVERFAULT:
		return "MNT3ERR_SERVERFAULT";
	}
	bench_strfmt(buf, len, "mountstat3 %d", st);
	return buf;
}

/* Why a call failed: its own error (err), or the status it was answered with. */
static void call3_err(int err, int st, char *out, size_t len)
{
	char eb[64];
	if (err)
		bench_strfmt(out, len, "%s", bench_call_err_str(err, eb, sizeof(eb)));
	else
		bench_strfmt(out, len, "%s", status3_str(st, eb, sizeof(eb)));
}

/* ------------------------------------------------------------ the context */

/* The connections and the directory the NFSv3 load works in: one per server. */
struct m3ctx {
	struct nfsd_server *eng;
	struct nfsd_clnt *c[CONNS_MAX];
	unsigned nconn;
	uint32_t uid, gid;
	pid_t server;
	uint32_t dirfhlen;
	uint8_t dirfh[NFS3_FHSIZE];
	uint64_t nfiles; /* f0000000000 .. nfiles - 1 exist */
	struct server_res *res;
	struct bench_mds_window win; /* --inflight calls over c[] */
};

static diropargs3 dirop(const struct m3ctx *m, const char *fname)
{
	return (diropargs3){.dir.data = xdr_opaque_of(m->dirfh, m->dirfhlen),
			    .name = xdr_string_of(fname)};
}

/* ------------------------------------------------------------------- loads */

/* The reply's checks: done, sent again (NFS3ERR_JUKEBOX, RFC 1813 §2.6),
 * or failed with why. */
static enum bench_mds_end call3_check(const struct bench_mds_call *k, struct xdr_dec *d, char *why,
				      size_t len)
{
	int st;
	if (k->lookup) {
		LOOKUP3res r;
		if (xdr_dec_LOOKUP3res(d, &r) < 0) {
			bench_strfmt(why, len, "reply does not decode");
			return BENCH_MDS_FAIL;
		}
		st = r.status;
		/* as the NFSv4.1 lookup's GETATTR: the object's attributes */
		if (st == NFS3_OK && !r.u.resok.obj_attributes.attributes_follow) {
			bench_strfmt(why, len, "no attributes in the reply");
			return BENCH_MDS_FAIL;
		}
		if (st == NFS3_OK && r.u.resok.obj_attributes.u.attributes.type != NF3REG) {
			bench_strfmt(why, len, "type is not NF3REG");
			return BENCH_MDS_FAIL;
		}
	} else {
		CREATE3res r;
		if (xdr_dec_CREATE3res(d, &r) < 0) {
			bench_strfmt(why, len, "reply does not decode");
			return BENCH_MDS_FAIL;
		}
		st = r.status;
	}
	if (st == NFS3_OK)
		return BENCH_MDS_DONE;
	if (st == NFS3ERR_JUKEBOX)
		return BENCH_MDS_DELAY;
	call3_err(0, st, why, len);
	return BENCH_MDS_FAIL;
}

static void call3_done(void *ctx, int err, struct xdr_dec *d)
{
	struct bench_mds_call *k = ctx; /* NFSv3 needs no more than the head */
	char why[200] = "";
	enum bench_mds_end end = BENCH_MDS_FAIL;
	if (err) {
		call3_err(err, 0, why, sizeof(why));
	} else {
		uint8_t ab[2048];
		struct xdr_arena ar;
		xdr_arena_init(&ar, ab, sizeof(ab), 64u << 10);
		d->arena = &ar;
		end = call3_check(k, d, why, sizeof(why));
		xdr_arena_release(&ar);
	}
	bench_mds_call_end(k, end, 0, why);
}

/* Send k on the next connection; its result comes to call3_done. */
static int call3_send(void *ctx, struct bench_mds_call *k, unsigned seq)
{
	struct m3ctx *m = ctx;
	char fname[16];
	bench_mds_file_name(k->idx, fname, sizeof(fname));
	struct nfsd_call_opts co;
	CREATE3args ca;
	LOOKUP3args la;
	if (k->lookup) {
		la = (LOOKUP3args){.what = dirop(m, fname)};
		co = nfs3_call_opts(NFSPROC3_LOOKUP, &la, m->uid, m->gid);
	} else {
		/* GUARDED: an existing name is an error, so every timed
		 * create really adds an entry (§3.3.8) */
		ca = (CREATE3args){.where = dirop(m, fname), .how.mode = GUARDED};
		ca.how.u.obj_attributes.mode.set_it = true;
		ca.how.u.obj_attributes.mode.u.mode = 0644;
		co = nfs3_call_opts(NFSPROC3_CREATE, &ca, m->uid, m->gid);
	}
	struct nfsd_clnt *c = m->c[seq % m->nconn];
	/* the arguments are encoded before this returns: ca and la may go */
	return nfsd_clnt_call_async(c, &co, call3_done, k);
}

static const char *call3_what(const struct bench_mds_call *k)
{
	return k->lookup ? "LOOKUP" : "CREATE";
}

static const struct bench_mds_window_ops call3_ops = {
    .call_size = sizeof(struct bench_mds_call),
    .send = call3_send,
    .what = call3_what,
};

/* ------------------------------------------------------------ READDIRPLUS */

static bool name_is_dot(const filename3 *n)
{
	return (n->len == 1 && n->val[0] == '.') ||
	       (n->len == 2 && n->val[0] == '.' && n->val[1] == '.');
}

/* One READDIRPLUS of the walk (RFC 1813 §3.3.17): "." and ".." not counted. */
static int readdirplus_page(void *ctx, struct bench_mds_page *pg, struct xdr_arena *ar, char *why,
			    size_t len)
{
	struct m3ctx *m = ctx;
	READDIRPLUS3args a = {.dir.data = xdr_opaque_of(m->dirfh, m->dirfhlen),
			      .cookie = pg->cookie,
			      .dircount = READDIR_DIRCOUNT,
			      .maxcount = READDIR_MAXCOUNT};
	memcpy(a.cookieverf, pg->verf, sizeof(pg->verf));
	struct nfsd_call_opts co = nfs3_call_opts(NFSPROC3_READDIRPLUS, &a, m->uid, m->gid);
	READDIRPLUS3res res;
	int err = nfsd_clnt_call(m->c[0], &co, nfs3_proc_desc(NFSPROC3_READDIRPLUS)->dec_res, &res,
				 ar);
	if (err || res.status != NFS3_OK) {
		call3_err(err, err ? 0 : res.status, why, len);
		return -EIO;
	}
	const READDIRPLUS3resok *ok = &res.u.resok;
	for (const entryplus3 *e = ok->reply.entries; e; e = e->nextentry) {
		pg->cookie = e->cookie;
		pg->got++;
		pg->counted += !name_is_dot(&e->name);
	}
	pg->eof = ok->reply.eof;
	memcpy(pg->verf, ok->cookieverf, sizeof(pg->verf));
	return 0;
}

/* ------------------------------------------------------------ the series */

static int v3_walk(void *ctx, uint64_t cap, struct phase *ph, bool *capped, unsigned *walks)
{
	struct m3ctx *m = ctx;
	return bench_mds_walk(m, readdirplus_page, "NFSv3 READDIRPLUS", "files", m->res->name,
			      m->server, m->nfiles, cap, ph, capped, walks);
}

static const struct mds_load_ops v3_ops = {
    .walk = v3_walk,
    .walk_name = "READDIRPLUS",
};

/* ------------------------------------------------------------ connections */

/* MOUNT v3 MNT of path (RFC 1813 §5.2.1): the root handle into m->dirfh. */
static int mnt_root(struct m3ctx *m, int mnt_port, const char *path, char *why, size_t len)
{
	int err = 0;
	char eb[64];
	struct nfsd_clnt *mc = bench_clnt_open(m->eng, mnt_port, &err);
	if (!mc) {
		bench_strfmt(why, len, "connect to MOUNT port %d: %s", mnt_port, strerror(-err));
		return -EIO;
	}
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	const struct xdr_proc_desc *pd = &xdr_desc_MOUNT_PROGRAM_MOUNT_V3.procs[MOUNTPROC3_MNT];
	dirpath dp = xdr_string_of(path);
	struct nfsd_call_opts co = {
	    .prog = MOUNT_PROGRAM,
	    .vers = MOUNT_V3,
	    .proc = MOUNTPROC3_MNT,
	    .enc_args = pd->enc_arg,
	    .args = &dp,
	    .timeout_ms = BENCH_CALL_TIMEOUT_MS,
	    .flavor = NFSD_AUTH_SYS,
	    .uid = m->uid,
	    .gid = m->gid,
	};
	mountres3 mr;
	err = nfsd_clnt_call(mc, &co, pd->dec_res, &mr, &ar);
	int rc = 0;
	if (err || mr.fhs_status != MNT3_OK) {
		bench_strfmt(why, len, "MOUNT MNT %s: %s", path,
			     err ? bench_call_err_str(err, eb, sizeof(eb))
				 : mnt_status_str(mr.fhs_status, eb, sizeof(eb)));
		rc = -EIO;
	} else if (mr.u.mountinfo.fhandle.len > sizeof(m->dirfh)) {
		bench_strfmt(why, len, "MOUNT MNT %s: handle of %u bytes", path,
			     mr.u.mountinfo.fhandle.len);
		rc = -EIO;
	} else {
		memcpy(m->dirfh, mr.u.mountinfo.fhandle.val, mr.u.mountinfo.fhandle.len);
		m->dirfhlen = mr.u.mountinfo.fhandle.len;
	}
	xdr_arena_release(&ar);
	nfsd_clnt_free(mc);
	return rc;
}

/* MKDIR DIR_NAME3 (0755) under the root handle in m->dirfh, which becomes
 * the directory's handle. */
static int mkdir3(struct m3ctx *m, char *why, size_t len)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	MKDIR3args a = {.where = dirop(m, DIR_NAME3)};
	a.attributes.mode.set_it = true;
	a.attributes.mode.u.mode = 0755;
	struct nfsd_call_opts co = nfs3_call_opts(NFSPROC3_MKDIR, &a, m->uid, m->gid);
	MKDIR3res r;
	int err, rc = -EIO;
	/* a server that is not ready yet says NFS3ERR_JUKEBOX for a while */
	double end = bench_now_s() + 120;
	for (;;) {
		xdr_arena_reset(&ar);
		err =
		    nfsd_clnt_call(m->c[0], &co, nfs3_proc_desc(NFSPROC3_MKDIR)->dec_res, &r, &ar);
		if (err || r.status != NFS3ERR_JUKEBOX || bench_now_s() > end)
			break;
		bench_sleep_s(1);
	}
	char w[128];
	if (err || r.status != NFS3_OK) {
		call3_err(err, err ? 0 : r.status, w, sizeof(w));
		bench_strfmt(why, len, "MKDIR /%s: %s", DIR_NAME3, w);
	} else if (!r.u.resok.obj.handle_follows) {
		/* the RFC lets a server leave it out: LOOKUP finds it */
		LOOKUP3args la = {.what = dirop(m, DIR_NAME3)};
		struct nfsd_call_opts lo = nfs3_call_opts(NFSPROC3_LOOKUP, &la, m->uid, m->gid);
		LOOKUP3res lr;
		err = nfsd_clnt_call(m->c[0], &lo, nfs3_proc_desc(NFSPROC3_LOOKUP)->dec_res, &lr,
				     &ar);
		if (err || lr.status != NFS3_OK) {
			call3_err(err, err ? 0 : lr.status, w, sizeof(w));
			bench_strfmt(why, len, "LOOKUP /%s: %s", DIR_NAME3, w);
		} else if (lr.u.resok.object.data.len > sizeof(m->dirfh)) {
			bench_strfmt(why, len, "LOOKUP /%s: handle of %u bytes", DIR_NAME3,
				     lr.u.resok.object.data.len);
		} else {
			memcpy(m->dirfh, lr.u.resok.object.data.val, lr.u.resok.object.data.len);
			m->dirfhlen = lr.u.resok.object.data.len;
			rc = 0;
		}
	} else if (r.u.resok.obj.u.handle.data.len > sizeof(m->dirfh)) {
		bench_strfmt(why, len, "MKDIR /%s: handle of %u bytes", DIR_NAME3,
			     r.u.resok.obj.u.handle.data.len);
	} else {
		memcpy(m->dirfh, r.u.resok.obj.u.handle.data.val, r.u.resok.obj.u.handle.data.len);
		m->dirfhlen = r.u.resok.obj.u.handle.data.len;
		rc = 0;
	}
	xdr_arena_release(&ar);
	return rc;
}

/* Connect, mount, and make the directory. */
static int m3ctx_open(struct m3ctx *m, const struct mds_opts *o, int port, int mnt_port,
		      const char *mnt_path, char *why, size_t len)
{
	int err = 0;
	for (unsigned i = 0; i < o->conns; i++) {
		m->c[i] = bench_clnt_open(m->eng, port, &err);
		if (!m->c[i]) {
			bench_strfmt(why, len, "connect to port %d: %s", port, strerror(-err));
			return -EIO;
		}
		m->nconn++;
	}
	if (mnt_root(m, mnt_port, mnt_path, why, len) || mkdir3(m, why, len))
		return -EIO;
	m->nfiles = 0;
	return 0;
}

static void m3ctx_close(struct m3ctx *m)
{
	for (unsigned i = 0; i < m->nconn; i++)
		nfsd_clnt_free(m->c[i]);
	m->nconn = 0;
}

/* ----------------------------------------------------------------- stages */

void bench_mds_series3_missing(struct server_res *r, const char *why)
{
	bench_strfmt(r->why3, sizeof(r->why3), "%s", why);
}

void bench_mds_stage3_run(const struct mds_opts *o, struct nfsd_server *eng, struct server_res *r,
			  int port, int mnt_port, const char *mnt_path, pid_t pid)
{
	struct m3ctx m = {.eng = eng, .uid = o->uid, .gid = o->gid, .server = pid, .res = r};
	m.win = (struct bench_mds_window){.ops = &call3_ops,
					  .ctx = &m,
					  .limit = o->inflight,
					  .server = pid,
					  .nfiles = &m.nfiles,
					  .delays = &r->delays3};
	char why[512], who[64];
	if (m3ctx_open(&m, o, port, mnt_port, mnt_path, why, sizeof(why))) {
		bench_mds_series3_missing(r, why);
		m3ctx_close(&m);
		return;
	}
	r->ran3 = true;
	r->conns3 = m.nconn;
	bench_strfmt(who, sizeof(who), "%s NFSv3", r->name);
	bench_mds_series_run(&v3_ops, &m.win, o, who, r->at3);
	m3ctx_close(&m);
}
