/* SPDX-License-Identifier: MIT */
/*
 * MOUNT v3 (RFC 1813 Appendix I) and rpcbind registration.
 *
 * braid-mds serves NFSv4 only; MOUNT is here so that the tools built on
 * it work as they do against knfsd: `showmount -e` lists the exports with
 * their client specs (EXPORT), `showmount -a` the recorded mounts (DUMP),
 * and MNT hands out the export root's handle (an NFSv4 handle of the MDS:
 * PUTFH takes it).
 *
 * MNT follows rpc.mountd: the path is normalized as realpath() would
 * (without symlinks: a symlink on the way is MNT3ERR_NOTDIR), the export
 * is the longest export path that contains it (a subdirectory of an export
 * may be mounted), and the client must be admitted by that export's client
 * list, from a reserved port unless the entry says "insecure".  A path in
 * no export is MNT3ERR_ACCES when it exists (as a directory) and
 * MNT3ERR_NOENT when it does not.
 *
 * Mounts recorded by MNT (peer address as text, normalized path) are kept
 * in memory and in <store_dir>/rmtab, rewritten whole (write, fsync,
 * rename) on each change, so DUMP survives restarts as knfsd's rmtab does.
 * The list is advisory (a client that goes away without UMNT stays listed)
 * and bounded: past MNT_RECS_MAX the oldest record goes.
 */
#include "config.h"

#include "mount_prot.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mds/fh.h"
#include "mds/mds_impl.h"
#include "mds/mount.h"
#include "mds/nlm.h"
#include "mds/rpcbind.h"

#define MNT_RECS_MAX 4096
/* DUMP and EXPORT stop listing past this many encoded bytes, so that the
 * list, its encoding and the flat copy (reply_flat) fit the request arena
 * (4 MiB, mds.c). */
#define MNT_REPLY_BUDGET (512u << 10)
#define RPCB_TIMEOUT_MS 2000

struct mnt_rec {
	char host[INET6_ADDRSTRLEN]; /* the peer's address as text */
	char *dir;		     /* normalized, as mounted */
};

struct mnt_reg {
	uint32_t prog, vers;
	const char *netid;
	char uaddr[INET6_ADDRSTRLEN + 16]; /* ours, as registered */
};

struct mds_mount {
	struct braid_mds *mds;
	struct nfsd_proc procs[MOUNTPROC3_EXPORT + 1];
	struct nfsd_version vers[1];
	struct nfsd_program prog;
	char rmtab[PATH_MAX + 8];

	pthread_mutex_t mu;   /* guards recs, n and writes of the rmtab file */
	struct mnt_rec *recs; /* oldest first */
	unsigned n;

	/* What rpcbind has from us: written by mds_mount_rpcbind_set at start,
	 * read by _unset at stop, both on the thread that starts and stops. */
	struct mnt_reg reg[10]; /* NFS v4, v3, MOUNT v3, NLM v4, NSM v1 on tcp and tcp6 */
	unsigned nreg;
};

/*
 * Paths and the namespace.
 */

/*
 * dirpath -> absolute path with '//' collapsed, no trailing '/', '.'
 * dropped and '..' taking the previous component off (at "/" it stays).
 * out holds MNTPATHLEN + 1 bytes; the result is never longer than the input.
 */
static mountstat3 path_norm(const dirpath *in, char *out)
{
	if (in->len == 0 || in->val[0] != '/' || memchr(in->val, '\0', in->len))
		return MNT3ERR_INVAL;
	size_t o = 0, i = 0;
	while (i < in->len) {
		while (i < in->len && in->val[i] == '/')
			i++;
		size_t start = i;
		while (i < in->len && in->val[i] != '/')
			i++;
		size_t n = i - start;
		const char *comp = (const char *)in->val + start;
		if (n == 0 || (n == 1 && comp[0] == '.'))
			continue;
		if (n == 2 && comp[0] == '.' && comp[1] == '.') {
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--;
			continue;
		}
		if (n > MDS_NAME_MAX)
			return MNT3ERR_NAMETOOLONG;
		out[o++] = '/';
		memcpy(out + o, comp, n);
		o += n;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	return MNT3_OK;
}

/* The export with the longest path containing 'path'; *rest: what follows it. */
static const struct mds_export *export_under(const struct mds_exports *x, const char *path,
					     const char **rest)
{
	const struct mds_export *best = NULL;
	size_t best_len = 0;
	for (unsigned i = 0; i < x->n; i++) {
		const char *ep = x->v[i].e->path;
		size_t n = strcmp(ep, "/") ? strlen(ep) : 0;
		if (strncmp(path, ep, n) || (path[n] != '\0' && path[n] != '/'))
			continue;
		if (!best || n > best_len) {
			best = &x->v[i];
			best_len = n;
		}
	}
	*rest = path + best_len;
	return best;
}

/* Walk 'rest' ("/a/b" or "") down from directory dir; every step a directory. */
static int walk(struct mds_store *s, uint64_t dir, const char *rest, struct mds_attr *a)
{
	int rc = mds_inode_getattr(s, dir, a);
	if (rc)
		return rc;
	while (*rest) {
		while (*rest == '/')
			rest++;
		if (!*rest)
			break;
		size_t n = strcspn(rest, "/");
		uint64_t ino;
		if ((rc = mds_dir_lookup(s, dir, rest, n, &ino, a)))
			return rc;
		if (a->type != MDS_DIR)
			return -ENOTDIR;
		dir = ino;
		rest += n;
	}
	return 0;
}

static mountstat3 mnt_status(int err)
{
	switch (err) {
	case 0:
		return MNT3_OK;
	case -ENOENT:
	case -ESTALE:
		return MNT3ERR_NOENT;
	case -ENOTDIR:
		return MNT3ERR_NOTDIR;
	case -EACCES:
	case -EPERM:
		return MNT3ERR_ACCES;
	case -ENAMETOOLONG:
		return MNT3ERR_NAMETOOLONG;
	case -EINVAL:
		return MNT3ERR_INVAL;
	case -EIO:
		return MNT3ERR_IO;
	default:
		return MNT3ERR_SERVERFAULT;
	}
}

/* The peer's address as text (IPv4-mapped IPv6 as IPv4) and its port. */
/*
 * The rmtab file: one "host path" line per record, the path with bytes
 * below '!', DEL and '\' written as \ooo.  Lines that do not parse are
 * skipped at load (the list is advisory; a bad line must not stop the MDS).
 */
static void put_escaped(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p <= ' ' || *p == 0x7f || *p == '\\')
			fprintf(f, "\\%03o", *p);
		else
			fputc(*p, f);
	}
}

/* m->mu held. */
static void rmtab_save(struct mds_mount *m)
{
	char tmp[sizeof(m->rmtab) + 8];
	snprintf(tmp, sizeof(tmp), "%s.new", m->rmtab);
	FILE *f = fopen(tmp, "we");
	if (!f) {
		mds_log("rmtab %s: %s", tmp, strerror(errno));
		return;
	}
	fprintf(f, "# braid-mds: clients that mounted with MOUNT v3 (address path)\n");
	for (unsigned i = 0; i < m->n; i++) {
		fprintf(f, "%s ", m->recs[i].host);
		put_escaped(f, m->recs[i].dir);
		fputc('\n', f);
	}
	int err = 0;
	if (fflush(f) || fsync(fileno(f)))
		err = errno;
	if (fclose(f) && !err)
		err = errno;
	if (!err && rename(tmp, m->rmtab))
		err = errno;
	if (err) {
		mds_log("rmtab %s: %s", m->rmtab, strerror(err));
		unlink(tmp);
	}
}

static bool octal(char c)
{
	return c >= '0' && c <= '7';
}

/* One line (no newline) -> rec; false when it does not parse. */
static bool rmtab_parse(char *line, struct mnt_rec *rec)
{
	char *sp = strchr(line, ' ');
	if (!sp || (size_t)(sp - line) >= sizeof(rec->host))
		return false;
	*sp = '\0';
	uint8_t addr[16];
	if (inet_pton(AF_INET, line, addr) != 1 && inet_pton(AF_INET6, line, addr) != 1)
		return false;
	strcpy(rec->host, line);
	char *in = sp + 1, *out = sp + 1;
	while (*in) {
		if (in[0] == '\\') {
			if (!octal(in[1]) || !octal(in[2]) || !octal(in[3]))
				return false;
			unsigned v = (unsigned)(in[1] - '0') * 64 + (unsigned)(in[2] - '0') * 8 +
				     (unsigned)(in[3] - '0');
			if (v == 0 || v > 255)
				return false;
			*out++ = (char)v;
			in += 4;
		} else {
			*out++ = *in++;
		}
	}
	*out = '\0';
	size_t len = (size_t)(out - (sp + 1));
	if (len == 0 || len > MNTPATHLEN || sp[1] != '/')
		return false;
	return (rec->dir = strdup(sp + 1)) != NULL;
}

static void rmtab_load(struct mds_mount *m)
{
	FILE *f = fopen(m->rmtab, "re");
	if (!f) {
		if (errno != ENOENT)
			mds_log("rmtab %s: %s", m->rmtab, strerror(errno));
		return;
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	unsigned bad = 0;
	while ((len = getline(&line, &cap, f)) >= 0) {
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (len == 0 || line[0] == '#')
			continue;
		struct mnt_rec r;
		if (m->n == MNT_RECS_MAX || !rmtab_parse(line, &r)) {
			bad++;
			continue;
		}
		m->recs[m->n++] = r;
	}
	free(line);
	fclose(f);
	if (bad)
		mds_log("rmtab %s: %u line(s) skipped (unreadable, or past %u records)", m->rmtab,
			bad, MNT_RECS_MAX);
}

static void rec_add(struct mds_mount *m, const char *host, const char *dir)
{
	pthread_mutex_lock(&m->mu);
	for (unsigned i = 0; i < m->n; i++)
		if (!strcmp(m->recs[i].host, host) && !strcmp(m->recs[i].dir, dir))
			goto out; /* already recorded: a remount */
	char *d = strdup(dir);
	if (!d)
		goto out;
	if (m->n == MNT_RECS_MAX) {
		free(m->recs[0].dir);
		memmove(m->recs, m->recs + 1, (m->n - 1) * sizeof(*m->recs));
		m->n--;
	}
	struct mnt_rec *r = &m->recs[m->n++];
	snprintf(r->host, sizeof(r->host), "%s", host);
	r->dir = d;
	rmtab_save(m);
out:
	pthread_mutex_unlock(&m->mu);
}

/* Remove host's records of dir, or all of host's with dir NULL. */
static void rec_remove(struct mds_mount *m, const char *host, const char *dir)
{
	pthread_mutex_lock(&m->mu);
	unsigned o = 0;
	for (unsigned i = 0; i < m->n; i++) {
		struct mnt_rec *r = &m->recs[i];
		if (!strcmp(r->host, host) && (!dir || !strcmp(r->dir, dir)))
			free(r->dir);
		else
			m->recs[o++] = *r;
	}
	if (o != m->n) {
		m->n = o;
		rmtab_save(m);
	}
	pthread_mutex_unlock(&m->mu);
}

/*
 * The procedures (RFC 1813 §5.2).  priv is the struct braid_mds.
 */
/*
 * DUMP and EXPORT encode their lists themselves (their enc_res is NULL):
 * the engine's reply holds 32 iovecs, and a list encoded through the arena
 * can take one per 4 KiB.  Encoded with its own iovecs, then flattened into
 * one buffer the reply references.  'bytes' bounds the encoded size: the
 * encoder needs an iovec per 4 KiB scratch buffer it fills 3000 bytes or more
 * of, and two per string it references (XDR_REF_MIN bytes or more).
 */
static int reply_flat(struct nfsd_req *req, uint32_t proc, const void *res, size_t bytes)
{
	unsigned niov = (unsigned)(2 * (bytes / XDR_REF_MIN + 1) + bytes / 3000 + 8);
	struct iovec *iov = xdr_arena_alloc(&req->arena, niov * sizeof(*iov));
	if (!iov)
		return NFSD_SYSTEM_ERR;
	struct xdr_enc e;
	xdr_enc_init(&e, iov, niov, NULL, 0, &req->arena);
	if (xdr_desc_MOUNT_PROGRAM_MOUNT_V3.procs[proc].enc_res(&e, res) < 0)
		return NFSD_SYSTEM_ERR;
	uint8_t *flat = xdr_arena_alloc(&req->arena, e.len);
	if (!flat)
		return NFSD_SYSTEM_ERR;
	xdr_enc_flatten(&e, flat);
	return xdr_enc_ref(&req->enc, flat, e.len) ? NFSD_SYSTEM_ERR : NFSD_SUCCESS;
}

static int m_null(struct nfsd_req *req, void *args, void *res)
{
	(void)req, (void)args, (void)res;
	return NFSD_SUCCESS;
}

/* §5.2.1 MNT: the handle of the directory and the flavors its export takes. */
static int m_mnt(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	const dirpath *arg = argp;
	mountres3 *res = resp;
	char path[MNTPATHLEN + 1], host[INET6_ADDRSTRLEN];
	int port = mds_peer_text(nfsd_req_peer(req), host);
	if ((res->fhs_status = path_norm(arg, path)))
		return NFSD_SUCCESS;

	struct mds_exports *x = mds_exports_get(mds);
	const char *rest;
	const struct mds_export *e = export_under(x, path, &rest);
	struct mds_attr a;
	if (!e) {
		/* as mountd: an existing directory that is not exported is ACCES */
		int rc = walk(mds->store, mds_store_root(mds->store), path, &a);
		res->fhs_status = rc ? MNT3ERR_NOENT : MNT3ERR_ACCES;
		if (!rc)
			mds_log("refused mount request from %s for %s: not exported", host, path);
		goto out;
	}
	const struct export_client *cl =
		mds_exports_match(x, e->e->path, (const struct sockaddr *)nfsd_req_peer(req));
	if (!cl) {
		mds_log("refused mount request from %s for %s (%s): unmatched host", host, path,
			e->e->path);
		res->fhs_status = MNT3ERR_ACCES;
		goto out;
	}
	/* exports(5) "secure": from a port below IPPORT_RESERVED */
	if (!(cl->flags & EXPORT_INSECURE) && (port < 0 || port >= IPPORT_RESERVED)) {
		mds_log("refused mount request from %s for %s (%s): illegal port %d", host, path,
			e->e->path, port);
		res->fhs_status = MNT3ERR_ACCES;
		goto out;
	}
	int rc = walk(mds->store, e->root_ino, rest, &a);
	if ((res->fhs_status = mnt_status(rc)))
		goto out;
	uint8_t *fh = xdr_arena_alloc(&req->arena, MDS_FH_SIZE);
	int32_t *fl = xdr_arena_alloc(&req->arena, (cl->nsec ? cl->nsec : 1) * sizeof(int32_t));
	if (!fh || !fl) {
		res->fhs_status = MNT3ERR_SERVERFAULT;
		goto out;
	}
	struct mds_fh f = { .ino = a.ino, .gen = a.generation, .export_id = e->id };
	mds_fh_make(mds, &f, fh);
	for (unsigned i = 0; i < cl->nsec; i++)
		fl[i] = (int32_t)cl->sec[i];
	res->u.mountinfo.fhandle = xdr_opaque_of(fh, MDS_FH_SIZE);
	res->u.mountinfo.auth_flavors.len = cl->nsec;
	res->u.mountinfo.auth_flavors.val = fl;
	rec_add(mds->mount, host, path);
out:
	mds_exports_put(x);
	return NFSD_SUCCESS;
}

/* §5.2.2 DUMP: the recorded mounts, oldest first. */
static int m_dump(struct nfsd_req *req, void *argp, void *resp)
{
	(void)argp, (void)resp;
	struct braid_mds *mds = req->priv;
	struct mds_mount *m = mds->mount;
	mountlist ml = NULL;
	mountbody **tail = &ml;
	size_t bytes = 0;
	int st = NFSD_SUCCESS;
	/* the list points into the records: encoded before the lock goes */
	pthread_mutex_lock(&m->mu);
	for (unsigned i = 0; i < m->n && bytes < MNT_REPLY_BUDGET; i++) {
		const struct mnt_rec *r = &m->recs[i];
		mountbody *b = xdr_arena_alloc(&req->arena, sizeof(*b));
		if (!b) {
			st = NFSD_SYSTEM_ERR;
			break;
		}
		b->ml_hostname = xdr_opaque_of(r->host, strlen(r->host));
		b->ml_directory = xdr_opaque_of(r->dir, strlen(r->dir));
		*tail = b;
		tail = &b->ml_next;
		bytes += 20 + b->ml_hostname.len + b->ml_directory.len; /* at most, encoded */
	}
	if (!st)
		st = reply_flat(req, MOUNTPROC3_DUMP, &ml, 4 + bytes);
	pthread_mutex_unlock(&m->mu);
	return st;
}

/* §5.2.3 UMNT: forget this client's mount of the path. */
static int m_umnt(struct nfsd_req *req, void *argp, void *resp)
{
	(void)resp;
	struct braid_mds *mds = req->priv;
	char path[MNTPATHLEN + 1], host[INET6_ADDRSTRLEN];
	mds_peer_text(nfsd_req_peer(req), host);
	if (path_norm(argp, path) == MNT3_OK)
		rec_remove(mds->mount, host, path);
	return NFSD_SUCCESS;
}

/* §5.2.4 UMNTALL: forget all of this client's mounts. */
static int m_umntall(struct nfsd_req *req, void *argp, void *resp)
{
	(void)argp, (void)resp;
	struct braid_mds *mds = req->priv;
	char host[INET6_ADDRSTRLEN];
	mds_peer_text(nfsd_req_peer(req), host);
	rec_remove(mds->mount, host, NULL);
	return NFSD_SUCCESS;
}

/*
 * §5.2.5 EXPORT: every export with its client specs as written, in file
 * order, as knfsd's mountd lists them ("/srv  10.0.0.0/8,*.lab").  An
 * export that cannot be listed exactly (a path over MNTPATHLEN, a spec over
 * MNTNAMLEN) is left out rather than shown with fewer clients: no groups at
 * all would read as "everyone".
 */
static bool export_listable(const struct export_entry *ee)
{
	if (strlen(ee->path) > MNTPATHLEN)
		return false;
	for (unsigned j = 0; j < ee->nclients; j++)
		if (strlen(ee->clients[j].spec) > MNTNAMLEN)
			return false;
	return true;
}

static int m_export(struct nfsd_req *req, void *argp, void *resp)
{
	(void)argp, (void)resp;
	struct braid_mds *mds = req->priv;
	exports list = NULL;
	exportnode **tail = &list;
	size_t bytes = 0;
	int st = NFSD_SUCCESS;
	/* the list points into the snapshot: encoded before it is put */
	struct mds_exports *x = mds_exports_get(mds);
	for (unsigned i = 0; i < x->ex->n && bytes < MNT_REPLY_BUDGET && !st; i++) {
		const struct export_entry *ee = &x->ex->v[i];
		if (!export_listable(ee))
			continue;
		exportnode *en = xdr_arena_alloc(&req->arena, sizeof(*en));
		if (!en) {
			st = NFSD_SYSTEM_ERR;
			break;
		}
		en->ex_dir = xdr_opaque_of(ee->path, strlen(ee->path));
		bytes += 16 + en->ex_dir.len; /* at most, encoded */
		groupnode **gt = &en->ex_groups;
		for (unsigned j = 0; j < ee->nclients; j++) {
			groupnode *g = xdr_arena_alloc(&req->arena, sizeof(*g));
			if (!g) {
				st = NFSD_SYSTEM_ERR;
				break;
			}
			g->gr_name = xdr_opaque_of(ee->clients[j].spec, strlen(ee->clients[j].spec));
			*gt = g;
			gt = &g->gr_next;
			bytes += 12 + g->gr_name.len;
		}
		*tail = en;
		tail = &en->ex_next;
	}
	if (!st)
		st = reply_flat(req, MOUNTPROC3_EXPORT, &list, 4 + bytes);
	mds_exports_put(x);
	return st;
}

/*
 * Start and stop.
 */
int mds_mount_init(struct braid_mds *mds, char *msg, size_t msglen)
{
	struct mds_mount *m = calloc(1, sizeof(*m));
	if (m)
		m->recs = calloc(MNT_RECS_MAX, sizeof(*m->recs));
	if (!m || !m->recs) {
		free(m);
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	m->mds = mds;
	pthread_mutex_init(&m->mu, NULL);
	if (snprintf(m->rmtab, sizeof(m->rmtab), "%s/rmtab", mds->set.store_dir) >=
	    (int)sizeof(m->rmtab)) {
		pthread_mutex_destroy(&m->mu);
		free(m->recs);
		free(m);
		snprintf(msg, msglen, "store %s: path too long", mds->set.store_dir);
		return -ENAMETOOLONG;
	}
	/* never blocks (EXPORT: an exports reference and memory) or on a worker */
	m->procs[MOUNTPROC3_NULL] = (struct nfsd_proc){ .name = "NULL", .fn = m_null,
							.flags = NFSD_PROC_INLINE };
	m->procs[MOUNTPROC3_MNT] = (struct nfsd_proc){ .name = "MNT", .fn = m_mnt };
	m->procs[MOUNTPROC3_DUMP] = (struct nfsd_proc){ .name = "DUMP", .fn = m_dump };
	m->procs[MOUNTPROC3_UMNT] = (struct nfsd_proc){ .name = "UMNT", .fn = m_umnt };
	m->procs[MOUNTPROC3_UMNTALL] = (struct nfsd_proc){ .name = "UMNTALL", .fn = m_umntall };
	m->procs[MOUNTPROC3_EXPORT] = (struct nfsd_proc){ .name = "EXPORT", .fn = m_export,
							  .flags = NFSD_PROC_INLINE };
	nfsd_procs_bind(m->procs, MOUNTPROC3_EXPORT + 1, &xdr_desc_MOUNT_PROGRAM_MOUNT_V3);
	/* lists: encoded by the handlers (reply_flat) */
	m->procs[MOUNTPROC3_DUMP].enc_res = m->procs[MOUNTPROC3_EXPORT].enc_res = NULL;
	m->procs[MOUNTPROC3_DUMP].res_size = m->procs[MOUNTPROC3_EXPORT].res_size = 0;
	m->vers[0] = (struct nfsd_version){ .vers = MOUNT_V3,
					    .procs = m->procs,
					    .nprocs = MOUNTPROC3_EXPORT + 1 };
	m->prog = (struct nfsd_program){ .prog = MOUNT_PROGRAM,
					 .name = "mount",
					 .versions = m->vers,
					 .nversions = 1,
					 .priv = mds };
	if (mds->set.mount)
		rmtab_load(m);
	mds->mount = m;
	return 0;
}

void mds_mount_release(struct braid_mds *mds)
{
	struct mds_mount *m = mds->mount;
	if (!m)
		return;
	for (unsigned i = 0; i < m->n; i++)
		free(m->recs[i].dir);
	free(m->recs);
	pthread_mutex_destroy(&m->mu);
	free(m);
	mds->mount = NULL;
}

const struct nfsd_program *mds_mount_program(struct braid_mds *mds)
{
	return mds->mount && mds->set.mount ? &mds->mount->prog : NULL;
}

/* RFC 1833 §2 universal address of listen address i: "a.b.c.d.p1.p2". */
static void uaddr_of(const struct braid_mds *mds, unsigned i, char *buf, size_t len)
{
	const struct sockaddr_storage *ss = &mds->set.listen.addr[i];
	char a[INET6_ADDRSTRLEN] = "";
	if (ss->ss_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, a, sizeof(a));
	else
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, a, sizeof(a));
	int port = mds->ports[i];
	snprintf(buf, len, "%s.%d.%d", a, (port >> 8) & 255, port & 255);
}

/*
 * NFS v4 and v3 and MOUNT v3 on "tcp" at the first IPv4 listen address and on
 * "tcp6" at the first IPv6 one (IPv6 sockets are v6-only).  A mapping left
 * by an earlier run, or by another server, is replaced: rpcbind refuses a
 * SET over an existing one.  NLM v4 and NSM v1 (mds/nlm.c) are registered
 * the same way unless another service holds them (the host's own lockd or
 * rpc.statd, which its NFS client needs): then they are left to it.
 */
void mds_mount_rpcbind_set(struct braid_mds *mds)
{
	struct mds_mount *m = mds->mount;
	if (!m || !mds->set.rpcbind || !mds->nports || m->nreg)
		return;
	int err = 0;
	struct mds_rpcb *b = mds_rpcb_new(RPCB_TIMEOUT_MS, &err);
	if (!b) {
		if (err == -ECONNREFUSED || err == -ENOENT)
			mds_log("rpcbind: none running; NFS and MOUNT not registered");
		else
			mds_log("rpcbind: %s; NFS and MOUNT not registered", strerror(-err));
		return;
	}
	static const struct {
		const char *netid;
		int family;
	} nets[] = { { "tcp", AF_INET }, { "tcp6", AF_INET6 } };
	struct mnt_reg progs[5] = { { NFS4_PROGRAM, NFS_V4, NULL, "" } };
	unsigned nprogs = 1, nmust;
	if (mds->set.nfs3)
		progs[nprogs++] = (struct mnt_reg){ NFS4_PROGRAM, 3, NULL, "" };
	if (mds->set.mount)
		progs[nprogs++] = (struct mnt_reg){ MOUNT_PROGRAM, MOUNT_V3, NULL, "" };
	nmust = nprogs; /* past these: only when nobody else holds them */
	if (mds_nlm_program(mds)) {
		progs[nprogs++] = (struct mnt_reg){ 100021, 4, NULL, "" };
		progs[nprogs++] = (struct mnt_reg){ 100024, 1, NULL, "" };
	}
	char done[128] = "";
	size_t dl = 0;
	for (unsigned k = 0; k < sizeof(nets) / sizeof(nets[0]); k++) {
		unsigned i = 0;
		while (i < mds->nports && mds->set.listen.addr[i].ss_family != nets[k].family)
			i++;
		if (i == mds->nports)
			continue;
		char uaddr[INET6_ADDRSTRLEN + 16];
		uaddr_of(mds, i, uaddr, sizeof(uaddr));
		unsigned before = m->nreg;
		for (unsigned p = 0; p < nprogs; p++) {
			if (p >= nmust) {
				char now[INET6_ADDRSTRLEN + 16];
				int g = mds_rpcb_getaddr(b, progs[p].prog, progs[p].vers,
							 nets[k].netid, now, sizeof(now));
				if (g == -ETIMEDOUT)
					goto out;
				if (!g && strcmp(now, uaddr)) {
					mds_log("rpcbind: %u v%u on %s maps to %s (the host's "
						"own %s?): left to it",
						progs[p].prog, progs[p].vers, nets[k].netid, now,
						progs[p].prog == 100024 ? "rpc.statd" : "lockd");
					continue;
				}
			}
			int rc = mds_rpcb_unset(b, progs[p].prog, progs[p].vers, nets[k].netid);
			if (rc != -ETIMEDOUT)
				rc = mds_rpcb_set(b, progs[p].prog, progs[p].vers, nets[k].netid,
						  uaddr);
			if (rc) {
				mds_log("rpcbind (%s): registering %u v%u on %s %s: %s",
					mds_rpcb_where(b), progs[p].prog, progs[p].vers,
					nets[k].netid, uaddr,
					rc == -EEXIST ? "refused" : strerror(-rc));
				if (rc == -ETIMEDOUT)
					goto out;
				continue;
			}
			struct mnt_reg *r = &m->reg[m->nreg++];
			*r = (struct mnt_reg){ progs[p].prog, progs[p].vers, nets[k].netid, "" };
			snprintf(r->uaddr, sizeof(r->uaddr), "%s", uaddr);
		}
		if (m->nreg > before && dl < sizeof(done))
			dl += (size_t)snprintf(done + dl, sizeof(done) - dl, "%s%s port %d",
					       dl ? ", " : "", nets[k].netid, mds->ports[i]);
	}
out:
	mds_rpcb_free(b);
	if (m->nreg)
		mds_log("rpcbind: registered NFS v4%s%s%s on %s", mds->set.nfs3 ? ", v3" : "",
			mds->set.mount ? ", MOUNT v3" : "",
			mds_nlm_program(mds) ? ", NLM v4, NSM v1 (unless held)" : "", done);
}

void mds_mount_rpcbind_unset(struct braid_mds *mds)
{
	struct mds_mount *m = mds->mount;
	if (!m || !m->nreg)
		return;
	int err = 0;
	struct mds_rpcb *b = mds_rpcb_new(RPCB_TIMEOUT_MS, &err);
	if (!b) {
		mds_log("rpcbind: %s; NFS and MOUNT left registered", strerror(-err));
		m->nreg = 0;
		return;
	}
	for (unsigned i = 0; i < m->nreg; i++) {
		const struct mnt_reg *r = &m->reg[i];
		/* only ours: another server may have registered since (a
		 * restart of ours on another port, or another NFS server) */
		char now[sizeof(r->uaddr)];
		int rc = mds_rpcb_getaddr(b, r->prog, r->vers, r->netid, now, sizeof(now));
		if (rc && rc != -ENOENT)
			mds_log("rpcbind: looking up %u v%u on %s: %s; left as it is", r->prog,
				r->vers, r->netid, strerror(-rc));
		if (rc == -ETIMEDOUT)
			break;
		if (rc)
			continue; /* none, or unknown: nothing of ours to remove */
		if (strcmp(now, r->uaddr)) {
			mds_log("rpcbind: %u v%u on %s maps to %s now, not to us (%s): left as it is",
				r->prog, r->vers, r->netid, now, r->uaddr);
			continue;
		}
		rc = mds_rpcb_unset(b, r->prog, r->vers, r->netid);
		if (rc && rc != -ENOENT) {
			mds_log("rpcbind: unregistering %u v%u on %s: %s", r->prog, r->vers,
				r->netid, strerror(-rc));
			if (rc == -ETIMEDOUT)
				break;
		}
	}
	m->nreg = 0;
	mds_rpcb_free(b);
}
