/* SPDX-License-Identifier: MIT */
/*
 * Administration: the braid_admin.x program braidctl(8) calls, served on
 * the MDS's listen addresses, and the collectors that put data servers,
 * clients and layouts in the metrics (nfsd/metrics.h).
 *
 * Only holders of the cluster key may administer: every procedure but
 * NULL checks that the call came with AUTH_BRAID (nfsd/auth_braid.c has
 * verified the signature before a handler runs) and answers
 * BRAID_ADMIN_ACCESS otherwise.
 *
 * Handlers run on worker threads (they read the store and may write it).
 * Results point into the request's arena, or at MDS memory that lives as
 * long as the MDS (settings): every snapshot taken under another module's
 * lock is copied there before the handler returns and the reply is
 * encoded.
 */
#include "config.h"

#include "braid_admin.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "layout/policy.h"
#include "mds/admin.h"
#include "mds/data.h"
#include "mds/dsreg.h"
#include "mds/ec.h"
#include "mds/ec_scrub.h"
#include "mds/layout.h"
#include "mds/mds_impl.h"
#include "mds/ec.h"
#include "mds/resilver.h"
#include "mds/state.h"
#include "nfsd/auth_gss.h"
#include "nfsd/metrics.h"

#define NOAUTH                                                                                     \
	"administration needs the cluster key: run braidctl as root on a node of the cluster "     \
	"(calls must be signed, AUTH_BRAID)"
#define WALK_MAX (BRAID_ADMIN_PATH_MAX / 2 + 1) /* components of a path, the root included */

/* Constant from mds_admin_init to mds_admin_release (the metrics they
 * point to are updated atomically). */
struct mds_admin {
	struct braid_mds *mds;
	struct nfsd_program prog;
	/* recalls (mds_metrics_recall_done) */
	struct nfsd_metric *recall_seconds, *recalls_returned, *recalls_revoked;
};

/* ------------------------------------------------------------ helpers */

/* A string for the reply, in the request's arena ("" when it is full). */
static xdr_string astr(struct nfsd_req *req, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static xdr_string astr(struct nfsd_req *req, const char *fmt, ...)
{
	char buf[BRAID_ADMIN_MSG_MAX + 1];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	char *p = xdr_arena_alloc(&req->arena, (size_t)n + 1);
	if (!p)
		return xdr_string_of("");
	memcpy(p, buf, (size_t)n);
	return xdr_opaque_of(p, (size_t)n);
}

/* A copy of s (at most max bytes) in the arena. */
static xdr_string acopy(struct nfsd_req *req, const char *s, size_t max)
{
	size_t n = strnlen(s, max);
	char *p = xdr_arena_alloc(&req->arena, n + 1);
	if (!p)
		return xdr_string_of("");
	memcpy(p, s, n);
	return xdr_opaque_of(p, n);
}

static void *aalloc(struct nfsd_req *req, size_t n, size_t size)
{
	return n ? xdr_arena_alloc(&req->arena, n * size) : NULL;
}

static braid_admin_stat stat_of(int err)
{
	switch (err) {
	case 0:
		return BRAID_ADMIN_OK;
	case -ENOENT:
	case -ESTALE:
		return BRAID_ADMIN_NOENT;
	case -ENOTDIR:
		return BRAID_ADMIN_NOTDIR;
	case -EISDIR:
		return BRAID_ADMIN_ISDIR;
	case -EINVAL:
	case -ENAMETOOLONG:
		return BRAID_ADMIN_INVAL;
	case -EBUSY:
		return BRAID_ADMIN_BUSY;
	case -EAGAIN:
		return BRAID_ADMIN_DELAY;
	case -ENOTSUP:
		return BRAID_ADMIN_NOTSUPP;
	case -EIO:
	case -ENOSPC:
	case -EROFS:
	case -EDQUOT:
		return BRAID_ADMIN_IO;
	default:
		return BRAID_ADMIN_SERVERFAULT;
	}
}

static bool authorized(const struct nfsd_req *req)
{
	return req->cred.flavor == NFSD_AUTH_BRAID;
}

/* Union results: status, then u.ok or u.why. */
#define FAIL(res, st, ...)                                                                         \
	do {                                                                                       \
		(res)->status = (st);                                                              \
		(res)->u.why = astr(req, __VA_ARGS__);                                             \
		return NFSD_SUCCESS;                                                               \
	} while (0)
/* braid_admin_res: status and message. */
#define DONE(res, st, ...)                                                                         \
	do {                                                                                       \
		(res)->status = (st);                                                              \
		(res)->message = astr(req, __VA_ARGS__);                                           \
		return NFSD_SUCCESS;                                                               \
	} while (0)

/* A socket address as an RFC 5665 universal address ("h1.h2.h3.h4.p1.p2"). */
static void uaddr_of(const struct sockaddr_storage *ss, int port, char *buf, size_t size,
		     const char **netid)
{
	char host[INET6_ADDRSTRLEN] = "?";
	if (ss->ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, host,
			  sizeof(host));
		*netid = "tcp6";
	} else {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, host, sizeof(host));
		*netid = "tcp";
	}
	snprintf(buf, size, "%s.%d.%d", host, (port >> 8) & 255, port & 255);
}

static int sa_port(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? ntohs(((const struct sockaddr_in6 *)ss)->sin6_port)
					 : ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

static braid_admin_netaddr netaddr_of(struct nfsd_req *req, const struct sockaddr_storage *ss,
				      int port)
{
	char ua[80];
	const char *netid;
	uaddr_of(ss, port, ua, sizeof(ua), &netid);
	return (braid_admin_netaddr){xdr_string_of(netid), acopy(req, ua, BRAID_ADMIN_UADDR_MAX)};
}

static void policy_out(struct nfsd_req *req, const struct layout_policy *p, braid_admin_policy *o)
{
	char t[BRAID_ADMIN_POLICY_MAX + 1];
	layout_policy_format(p, t, sizeof(t));
	*o = (braid_admin_policy){
	    .lp_mode = p->mode,
	    .lp_seg_shift = p->seg_shift,
	    .lp_mirrors = p->mirrors,
	    .lp_width = p->width,
	    .lp_stripes = p->stripes,
	    .lp_unit_shift = p->unit_shift,
	    .lp_text = acopy(req, t, BRAID_ADMIN_POLICY_MAX),
	    .lp_ec_k = p->ec_k,
	    .lp_ec_m = p->ec_m,
	};
}

/* Every data server known, malloc'd; how many in *n. */
static struct mds_ds_info *ds_snapshot(struct braid_mds *mds, unsigned *n)
{
	for (;;) {
		unsigned want = mds_dsreg_list(mds, NULL, 0);
		struct mds_ds_info *v = malloc((want ? want : 1) * sizeof(*v));
		if (!v)
			return NULL;
		unsigned got = mds_dsreg_list(mds, v, want);
		if (got <= want) {
			*n = got;
			return v;
		}
		free(v); /* one registered meanwhile */
	}
}

/*
 * A path of the namespace: each component's inode in w->ino (the root
 * first) and the length of the path naming it in w->end; the last one's
 * attributes in *a.  0, or -errno with a reason in why.
 */
struct walk {
	unsigned n;
	uint64_t ino[WALK_MAX];
	size_t end[WALK_MAX];
};

static int path_walk(struct braid_mds *mds, xdr_string path, struct walk *w, struct mds_attr *a,
		     char *why, size_t whylen)
{
	const char *p = (const char *)path.val;
	size_t len = path.len;
	w->n = 0;
	if (!len || p[0] != '/') {
		snprintf(why, whylen, "'%.*s' is not an absolute path (it must start with '/')",
			 (int)(len > 200 ? 200 : len), len ? p : "");
		return -EINVAL;
	}
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f) {
			snprintf(why, whylen, "the path holds a control character at byte %zu", i);
			return -EINVAL;
		}
	struct mds_store *s = mds->store;
	w->n = 1;
	w->ino[0] = mds_store_root(s);
	w->end[0] = 1;
	int rc = mds_inode_getattr(s, w->ino[0], a);
	if (rc) {
		snprintf(why, whylen, "the root directory: %s", strerror(-rc));
		return rc;
	}
	size_t i = 0;
	while (i < len) {
		while (i < len && p[i] == '/')
			i++;
		if (i == len)
			break;
		size_t st = i;
		while (i < len && p[i] != '/')
			i++;
		size_t cl = i - st;
		if ((cl == 1 && p[st] == '.') || (cl == 2 && p[st] == '.' && p[st + 1] == '.')) {
			snprintf(why, whylen, "%.*s: '.' and '..' are not allowed in paths", (int)i,
				 p);
			return -EINVAL;
		}
		if (a->type != MDS_DIR) {
			snprintf(why, whylen, "%.*s: not a directory", (int)w->end[w->n - 1], p);
			return -ENOTDIR;
		}
		if (w->n == WALK_MAX) {
			snprintf(why, whylen, "the path has too many components");
			return -EINVAL;
		}
		uint64_t ino;
		rc = mds_dir_lookup(s, w->ino[w->n - 1], p + st, cl, &ino, a);
		if (rc) {
			snprintf(why, whylen, "%.*s: %s", (int)i, p,
				 rc == -ENOENT	       ? "no such file or directory"
				 : rc == -ENAMETOOLONG ? "a name is too long"
						       : strerror(-rc));
			return rc;
		}
		w->ino[w->n] = ino;
		w->end[w->n++] = i;
	}
	return 0;
}

/* path_walk to the last component only: its inode and attributes. */
static int path_ino(struct braid_mds *mds, xdr_string path, struct mds_attr *a, uint64_t *ino,
		    char *why, size_t whylen)
{
	struct walk *w = malloc(sizeof(*w));
	if (!w) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	int rc = path_walk(mds, path, w, a, why, whylen);
	*ino = rc ? 0 : w->ino[w->n - 1];
	free(w);
	return rc;
}

/* ------------------------------------------------------------- STATUS */

static int a_null(struct nfsd_req *req, void *args, void *res)
{
	(void)req, (void)args, (void)res;
	return NFSD_SUCCESS;
}

static int a_status(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	braid_admin_status_res *res = resp;
	(void)argp;
	if (!authorized(req))
		FAIL(res, BRAID_ADMIN_ACCESS, NOAUTH);
	braid_admin_status_resok *ok = &res->u.ok;
	ok->st_version = xdr_string_of(PACKAGE_VERSION);
	ok->st_server_owner = xdr_opaque_of(mds->so_major, mds->so_major_len);
	uint64_t now = (uint64_t)time(NULL);
	ok->st_uptime_s = now > mds->boot_sec ? now - mds->boot_sec : 0;
	ok->st_listen.val = aalloc(req, mds->nports, sizeof(braid_admin_netaddr));
	for (unsigned i = 0; ok->st_listen.val && i < mds->nports; i++)
		ok->st_listen.val[ok->st_listen.len++] =
		    netaddr_of(req, &mds->set.listen.addr[i], mds->ports[i]);
	unsigned nm = mds->metrics_http ? mds->set.metrics_listen.n : 0;
	ok->st_metrics.val = aalloc(req, nm, sizeof(braid_admin_netaddr));
	for (unsigned i = 0; ok->st_metrics.val && i < nm; i++)
		ok->st_metrics.val[ok->st_metrics.len++] = netaddr_of(
		    req, &mds->set.metrics_listen.addr[i], braid_mds_metrics_port(mds, i));
	ok->st_store_dir = xdr_string_of(mds->set.store_dir);
	ok->st_exports_file = xdr_string_of(mds->set.exports);
	struct mds_exports *x = mds_exports_get(mds);
	ok->st_exports = x->n;
	mds_exports_put(x);
	ok->st_lease_s = (uint32_t)(mds->set.lease_ms / 1000);
	ok->st_in_grace = mds_state_in_grace(mds);
	ok->st_clients = nfs41_client_list(mds->v41, NULL, 0);
	unsigned n = 0;
	struct mds_ds_info *v = ds_snapshot(mds, &n);
	if (!v)
		FAIL(res, BRAID_ADMIN_SERVERFAULT, "out of memory");
	ok->st_ds_known = n;
	for (unsigned i = 0; i < n; i++) {
		ok->st_ds_drained += v[i].drained;
		if (v[i].up) {
			ok->st_ds_up++;
			ok->st_capacity += v[i].capacity;
			ok->st_free += v[i].free;
		}
	}
	free(v);
	ok->st_layouts = mds->layout != NULL;
	struct layout_policy p;
	mds_layout_policy_default(mds, &p);
	policy_out(req, &p, &ok->st_layout_default);
	res->status = BRAID_ADMIN_OK;
	return NFSD_SUCCESS;
}

/* ------------------------------------------------------------ DS_LIST */

static void addrs_out(struct nfsd_req *req, const struct mds_ds_addr *a, unsigned n,
		      braid_admin_netaddr **out, uint32_t *nout)
{
	*out = aalloc(req, n, sizeof(**out));
	*nout = 0;
	for (unsigned i = 0; *out && i < n; i++)
		(*out)[(*nout)++] =
		    (braid_admin_netaddr){acopy(req, a[i].netid, BRAID_ADMIN_NETID_MAX),
					  acopy(req, a[i].uaddr, BRAID_ADMIN_UADDR_MAX)};
}

static void ds_out(struct nfsd_req *req, const struct mds_ds_info *i, braid_admin_ds *d)
{
	d->ds_id = i->id;
	memcpy(d->ds_uuid, i->uuid, sizeof(d->ds_uuid));
	d->ds_hostname = acopy(req, i->hostname, BRAID_ADMIN_HOSTNAME_MAX);
	d->ds_registered = i->registered;
	d->ds_up = i->up;
	d->ds_drained = i->drained;
	d->ds_lost = i->lost;
	d->ds_health = i->health;
	d->ds_capacity = i->capacity;
	d->ds_free = i->free;
	d->ds_objects = i->objects;
	d->ds_since_heartbeat_ms = i->since_heartbeat_ms;
	addrs_out(req, i->addrs, i->naddrs, &d->ds_addrs.val, &d->ds_addrs.len);
	addrs_out(req, i->ctl_addrs, i->nctl_addrs, &d->ds_ctl_addrs.val, &d->ds_ctl_addrs.len);
	d->ds_protos.val = aalloc(req, i->nprotos, sizeof(braid_admin_proto));
	for (unsigned k = 0; d->ds_protos.val && k < i->nprotos; k++)
		d->ds_protos.val[d->ds_protos.len++] =
		    (braid_admin_proto){i->protos[k].version, i->protos[k].minorversion,
					i->protos[k].rsize, i->protos[k].wsize};
}

#define LIST_MAX_CHECK(res, a)                                                                     \
	do {                                                                                       \
		if ((a)->la_max == 0)                                                              \
			FAIL(res, BRAID_ADMIN_INVAL, "la_max must be 1 or more");                  \
		if ((a)->la_max > BRAID_ADMIN_LIST_MAX)                                            \
			(a)->la_max = BRAID_ADMIN_LIST_MAX;                                        \
	} while (0)

static int a_ds_list(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	braid_admin_list_args *a = argp;
	braid_admin_ds_list_res *res = resp;
	if (!authorized(req))
		FAIL(res, BRAID_ADMIN_ACCESS, NOAUTH);
	LIST_MAX_CHECK(res, a);
	unsigned n;
	struct mds_ds_info *v = ds_snapshot(mds, &n);
	braid_admin_ds_list_resok *ok = &res->u.ok;
	if (!v || !(ok->dl_entries.val = aalloc(req, a->la_max, sizeof(braid_admin_ds)))) {
		free(v);
		FAIL(res, BRAID_ADMIN_SERVERFAULT, "out of memory");
	}
	ok->dl_eof = true;
	ok->dl_cookie = a->la_cookie;
	for (unsigned i = 0; i < n; i++) {
		if (v[i].id <= a->la_cookie)
			continue;
		if (ok->dl_entries.len == a->la_max) {
			ok->dl_eof = false;
			break;
		}
		ds_out(req, &v[i], &ok->dl_entries.val[ok->dl_entries.len++]);
		ok->dl_cookie = v[i].id;
	}
	free(v);
	res->status = BRAID_ADMIN_OK;
	return NFSD_SUCCESS;
}

/* ------------------------------------------- DS_ADD, DS_DRAIN, DS_REMOVE */

static int ds_drain(struct nfsd_req *req, braid_admin_ds_args *a, braid_admin_res *res, bool drain)
{
	struct braid_mds *mds = req->priv;
	if (!authorized(req))
		DONE(res, BRAID_ADMIN_ACCESS, NOAUTH);
	struct mds_ds_info i;
	if (mds_dsreg_get(mds, a->da_id, &i))
		DONE(res, BRAID_ADMIN_NOENT, "no data server %u ('braidctl ds list' shows the ids)",
		     a->da_id);
	int rc = mds_dsreg_drain(mds, a->da_id, drain);
	if (rc == -ENOENT)
		DONE(res, BRAID_ADMIN_NOENT, "data server %u was removed meanwhile", a->da_id);
	if (rc)
		DONE(res, stat_of(rc), "data server %u: recording the change in %s: %s", a->da_id,
		     mds->set.store_dir, strerror(-rc));
	mds_resilver_kick(mds);
	if (drain)
		DONE(
		    res, BRAID_ADMIN_OK,
		    "data server %u (%s) drained: new files and segments go to other data servers, "
		    "and what it holds moves to them while it stays in use ('braidctl rebuild' "
		    "shows the progress)",
		    a->da_id, i.hostname[0] ? i.hostname : "?");
	DONE(res, BRAID_ADMIN_OK, "data server %u (%s) admitted: placement may choose it again%s",
	     a->da_id, i.hostname[0] ? i.hostname : "?",
	     i.up ? "" : " once it is up (it is down now)");
}

static int a_ds_add(struct nfsd_req *req, void *argp, void *resp)
{
	return ds_drain(req, argp, resp, false);
}

static int a_ds_drain(struct nfsd_req *req, void *argp, void *resp)
{
	return ds_drain(req, argp, resp, true);
}

/* Files whose segment maps name data server 'id'. */
struct ds_uses {
	uint32_t id;
	uint64_t files, last;
	uint64_t sample[3];
	unsigned nsample;
};

static int uses_count(void *arg, uint64_t ino, uint64_t seg, const struct mds_layout_seg *l)
{
	struct ds_uses *u = arg;
	/* records hold policies and sets, not data, but for an erasure-coded
	 * stripe's parity holders (mds/ec.h) */
	bool parity = seg >= MDS_EC_PARITY && seg < MDS_EC_REC;
	if ((seg >= MDS_LAYOUT_SEG_END && !parity) || (u->files && u->last == ino))
		return 0;
	for (uint32_t k = 0; k < l->nds; k++)
		if (l->ds[k] == u->id) {
			u->files++;
			u->last = ino;
			if (u->nsample < 3)
				u->sample[u->nsample++] = ino;
			break;
		}
	return 0;
}

static int a_ds_remove(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	braid_admin_ds_remove_args *a = argp;
	braid_admin_res *res = resp;
	if (!authorized(req))
		DONE(res, BRAID_ADMIN_ACCESS, NOAUTH);
	struct mds_ds_info i;
	if (mds_dsreg_get(mds, a->dr_id, &i))
		DONE(res, BRAID_ADMIN_NOENT, "no data server %u ('braidctl ds list' shows the ids)",
		     a->dr_id);
	const char *host = i.hostname[0] ? i.hostname : "?";
	if (!i.drained && !a->dr_force)
		DONE(
		    res, BRAID_ADMIN_BUSY,
		    "data server %u (%s) is not drained: run 'braidctl ds drain %u' first, so that "
		    "no new file goes there",
		    a->dr_id, host, a->dr_id);
	if (i.up && !a->dr_force)
		DONE(res, BRAID_ADMIN_BUSY,
		     "data server %u (%s) is up: stop braid-ds there first (a running data server "
		     "would register again, as a new one)",
		     a->dr_id, host);
	struct ds_uses u = {.id = a->dr_id};
	int rc = mds_layout_scan(mds->store, uses_count, &u);
	if (rc)
		DONE(res, stat_of(rc), "reading the layout maps: %s", strerror(-rc));
	if (u.files && !a->dr_force) {
		char s[96] = "";
		int n = 0;
		for (unsigned k = 0; k < u.nsample; k++)
			n += snprintf(s + n, sizeof(s) - (size_t)n, "%s%llu", k ? ", " : "",
				      (unsigned long long)u.sample[k]);
		DONE(res, BRAID_ADMIN_BUSY,
		     "data server %u (%s) still holds data of %llu file(s) (inode %s%s): remove or "
		     "rewrite them first; 'braidctl ds remove --force %u' forgets it anyway and "
		     "their data there is lost",
		     a->dr_id, host, (unsigned long long)u.files, s,
		     u.files > u.nsample ? ", ..." : "", a->dr_id);
	}
	if ((rc = mds_dsreg_forget(mds, a->dr_id)))
		DONE(res, stat_of(rc), "data server %u: recording the change in %s: %s", a->dr_id,
		     mds->set.store_dir, strerror(-rc));
	if (u.files)
		DONE(res, BRAID_ADMIN_OK,
		     "data server %u (%s) removed; %llu file(s) lost the data they had there",
		     a->dr_id, host, (unsigned long long)u.files);
	DONE(res, BRAID_ADMIN_OK, "data server %u (%s) removed", a->dr_id, host);
}

/* ------------------------------------------------------------ EXPORTS */

/* A client entry's options, as exports(5) writes them. */
static void export_options(const struct export_client *c, char *b, size_t size)
{
	int n = snprintf(b, size, "%s,%s,%s%s,%s", c->flags & EXPORT_RW ? "rw" : "ro",
			 c->flags & EXPORT_ROOT_SQUASH ? "root_squash" : "no_root_squash",
			 c->flags & EXPORT_ALL_SQUASH ? "all_squash," : "",
			 c->flags & EXPORT_ASYNC ? "async" : "sync",
			 c->flags & EXPORT_INSECURE ? "insecure" : "secure");
	if (c->flags & EXPORT_SUBTREE_CHECK)
		n += snprintf(b + n, size - (size_t)n, ",subtree_check");
	if (c->flags & EXPORT_PNFS)
		n += snprintf(b + n, size - (size_t)n, ",pnfs");
	n += snprintf(b + n, size - (size_t)n, ",sec=");
	for (unsigned i = 0; i < c->nsec; i++) {
		uint32_t f = c->sec[i];
		const char *name = f == EXPORT_SEC_NONE	   ? "none"
				   : f == EXPORT_SEC_SYS   ? "sys"
				   : f == EXPORT_SEC_KRB5  ? "krb5"
				   : f == EXPORT_SEC_KRB5I ? "krb5i"
				   : f == EXPORT_SEC_KRB5P ? "krb5p"
							   : "?";
		n += snprintf(b + n, size - (size_t)n, "%s%s", i ? ":" : "", name);
	}
	n += snprintf(b + n, size - (size_t)n, ",anonuid=%u,anongid=%u", c->anonuid, c->anongid);
	if (c->fsid_kind == EXPORT_FSID_ROOT)
		snprintf(b + n, size - (size_t)n, ",fsid=root");
	else if (c->fsid_kind == EXPORT_FSID_NUM)
		snprintf(b + n, size - (size_t)n, ",fsid=%u", c->fsid);
	else if (c->fsid_kind == EXPORT_FSID_UUID) {
		n += snprintf(b + n, size - (size_t)n, ",fsid=");
		for (int k = 0; k < 16 && (size_t)n < size; k++)
			n += snprintf(b + n, size - (size_t)n, "%02x", c->uuid[k]);
	}
}

static int a_exports_list(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	braid_admin_list_args *a = argp;
	braid_admin_exports_res *res = resp;
	if (!authorized(req))
		FAIL(res, BRAID_ADMIN_ACCESS, NOAUTH);
	LIST_MAX_CHECK(res, a);
	braid_admin_exports_resok *ok = &res->u.ok;
	ok->el_file = xdr_string_of(mds->set.exports);
	struct mds_exports *x = mds_exports_get(mds);
	uint64_t first = a->la_cookie < x->n ? a->la_cookie : x->n;
	uint64_t last = first + a->la_max < x->n ? first + a->la_max : x->n;
	ok->el_entries.val = aalloc(req, (size_t)(last - first), sizeof(braid_admin_export));
	for (uint64_t i = first; ok->el_entries.val && i < last; i++) {
		const struct mds_export *e = &x->v[i];
		braid_admin_export *o = &ok->el_entries.val[ok->el_entries.len++];
		o->ex_path = acopy(req, e->e->path, BRAID_ADMIN_PATH_MAX);
		o->ex_id = e->id;
		o->ex_root = e->root_ino;
		o->ex_line = e->e->line;
		unsigned nc = e->e->nclients < BRAID_ADMIN_EXPORT_CLIENTS_MAX
				  ? e->e->nclients
				  : BRAID_ADMIN_EXPORT_CLIENTS_MAX;
		o->ex_clients.val = aalloc(req, nc, sizeof(braid_admin_export_client));
		for (unsigned k = 0; o->ex_clients.val && k < nc; k++) {
			char opts[BRAID_ADMIN_OPTIONS_MAX + 1];
			export_options(&e->e->clients[k], opts, sizeof(opts));
			o->ex_clients.val[o->ex_clients.len++] = (braid_admin_export_client){
			    acopy(req, e->e->clients[k].spec, BRAID_ADMIN_OPTIONS_MAX),
			    acopy(req, opts, BRAID_ADMIN_OPTIONS_MAX)};
		}
	}
	ok->el_cookie = last;
	ok->el_eof = last >= x->n;
	mds_exports_put(x);
	res->status = BRAID_ADMIN_OK;
	return NFSD_SUCCESS;
}

static int a_exports_reload(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	braid_admin_res *res = resp;
	(void)argp;
	if (!authorized(req))
		DONE(res, BRAID_ADMIN_ACCESS, NOAUTH);
	char msg[512];
	int rc = braid_mds_exports_reload(mds, msg, sizeof(msg));
	if (rc) {
		mds_log("exports not reloaded: %s", msg);
		DONE(res,
		     rc == -ENOENT   ? BRAID_ADMIN_NOENT
		     : rc == -EINVAL ? BRAID_ADMIN_INVAL
				     : stat_of(rc),
		     "exports not reloaded (the old ones stay in force): %s", msg);
	}
	struct mds_exports *x = mds_exports_get(mds);
	unsigned n = x->n;
	mds_exports_put(x);
	mds_log("exports reloaded by the administrator: %u export(s)", n);
	DONE(res, BRAID_ADMIN_OK, "%u export(s) in force from %s", n, mds->set.exports);
}

/* ------------------------------------------------------------ CLIENTS */

/* The clients alive, by id, malloc'd; how many in *n. */
static struct nfs41_client_info *client_snapshot(struct braid_mds *mds, unsigned *n)
{
	for (;;) {
		unsigned want = nfs41_client_list(mds->v41, NULL, 0) + 8;
		struct nfs41_client_info *v = malloc(want * sizeof(*v));
		if (!v)
			return NULL;
		unsigned got = nfs41_client_list(mds->v41, v, want);
		if (got <= want) {
			*n = got;
			return v;
		}
		free(v);
	}
}

static int client_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct nfs41_client_info *)a)->clientid;
	uint64_t y = ((const struct nfs41_client_info *)b)->clientid;
	return x < y ? -1 : x > y;
}

static void client_out(struct nfsd_req *req, struct braid_mds *mds,
		       const struct nfs41_client_info *i, braid_admin_client *o)
{
	o->cl_clientid = i->clientid;
	uint32_t shown = i->owner_len < sizeof(i->owner) ? i->owner_len : sizeof(i->owner);
	uint8_t *ow = aalloc(req, shown, 1);
	if (ow)
		memcpy(ow, i->owner, shown);
	o->cl_owner = xdr_opaque_of(ow, ow ? shown : 0);
	o->cl_owner_len = i->owner_len;
	o->cl_confirmed = i->confirmed;
	o->cl_flavor = i->flavor;
	o->cl_uid = i->uid;
	o->cl_principal = acopy(req, i->principal, BRAID_ADMIN_PRINCIPAL_MAX);
	o->cl_mach_cred = i->mach_cred;
	o->cl_lease_left_ms = i->lease_left_ms;
	o->cl_sessions = i->sessions;
	if (i->has_peer) {
		char ua[80];
		const char *netid;
		uaddr_of(&i->peer, sa_port(&i->peer), ua, sizeof(ua), &netid);
		o->cl_peer = acopy(req, ua, BRAID_ADMIN_UADDR_MAX);
		o->cl_transport = acopy(req, i->transport, 8);
	}
	unsigned opens = 0, locks = 0, delegs = 0;
	mds_state_client_counts(mds, i->clientid, &opens, &locks, &delegs);
	o->cl_opens = opens;
	o->cl_locks = locks;
	o->cl_delegations = delegs;
	o->cl_layouts = mds_layout_client_has_state(mds, i->clientid);
	struct mds_layout_counters c;
	if (!mds_layout_counters_client(mds, i->clientid, &c)) {
		o->cl_layoutgets = c.layoutgets;
		o->cl_layoutreturns = c.layoutreturns;
		o->cl_recalls = c.recalls;
		o->cl_revoked = c.revoked;
		o->cl_ioerrors = c.ioerrors;
		o->cl_read_bytes = c.read_bytes;
		o->cl_write_bytes = c.write_bytes;
	}
}

static int a_clients(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	braid_admin_list_args *a = argp;
	braid_admin_clients_res *res = resp;
	if (!authorized(req))
		FAIL(res, BRAID_ADMIN_ACCESS, NOAUTH);
	LIST_MAX_CHECK(res, a);
	unsigned n;
	struct nfs41_client_info *v = client_snapshot(mds, &n);
	braid_admin_clients_resok *ok = &res->u.ok;
	if (!v || !(ok->cs_entries.val = aalloc(req, a->la_max, sizeof(braid_admin_client)))) {
		free(v);
		FAIL(res, BRAID_ADMIN_SERVERFAULT, "out of memory");
	}
	qsort(v, n, sizeof(*v), client_cmp);
	ok->cs_eof = true;
	ok->cs_cookie = a->la_cookie;
	for (unsigned i = 0; i < n; i++) {
		if (v[i].clientid <= a->la_cookie)
			continue;
		if (ok->cs_entries.len == a->la_max) {
			ok->cs_eof = false;
			break;
		}
		client_out(req, mds, &v[i], &ok->cs_entries.val[ok->cs_entries.len++]);
		ok->cs_cookie = v[i].clientid;
	}
	free(v);
	res->status = BRAID_ADMIN_OK;
	return NFSD_SUCCESS;
}

/* ------------------------------------------------------------ OPSTATS */

/* A client owner as a short printable name: the Linux client's is
 * "Linux NFSv4.2 <hostname>"; other bytes become '.'. */
static xdr_string owner_name(struct nfsd_req *req, const struct nfs41_client_info *i)
{
	uint32_t n = i->owner_len < sizeof(i->owner) ? i->owner_len : sizeof(i->owner);
	if (n > BRAID_ADMIN_NAME_MAX)
		n = BRAID_ADMIN_NAME_MAX;
	char s[BRAID_ADMIN_NAME_MAX + 1];
	for (uint32_t k = 0; k < n; k++)
		s[k] = i->owner[k] >= 0x20 && i->owner[k] < 0x7f ? (char)i->owner[k] : '.';
	s[n] = 0;
	return acopy(req, s, BRAID_ADMIN_NAME_MAX);
}

static int a_opstats(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	braid_admin_opstats_res *res = resp;
	(void)argp;
	if (!authorized(req))
		FAIL(res, BRAID_ADMIN_ACCESS, NOAUTH);
	braid_admin_opstats_resok *ok = &res->u.ok;
	memset(ok, 0, sizeof(*ok));
	uint64_t now = nfsd_now_ns();
	ok->ot_now_ms = now / 1000000ull;
	struct nfsd_metrics_opstat *ops = calloc(BRAID_ADMIN_OPS_MAX, sizeof(*ops));
	unsigned nops = ops ? nfsd_metrics_opstats(mds->metrics, ops, BRAID_ADMIN_OPS_MAX) : 0;
	unsigned ncl;
	struct nfs41_client_info *cl = client_snapshot(mds, &ncl);
	unsigned nds = mds_dsreg_list(mds, NULL, 0);
	struct mds_ds_info *ds = nds ? calloc(nds, sizeof(*ds)) : NULL;
	if (ds)
		nds = mds_dsreg_list(mds, ds, nds);
	else
		nds = 0;
	if (ncl > BRAID_ADMIN_LIST_MAX)
		ncl = BRAID_ADMIN_LIST_MAX;
	if (nds > BRAID_ADMIN_LIST_MAX)
		nds = BRAID_ADMIN_LIST_MAX;
	if (!ops || !cl ||
	    (nops && !(ok->ot_ops.val = aalloc(req, nops, sizeof(*ok->ot_ops.val)))) ||
	    (ncl && !(ok->ot_clients.val = aalloc(req, ncl, sizeof(*ok->ot_clients.val)))) ||
	    (nds && !(ok->ot_ds.val = aalloc(req, nds, sizeof(*ok->ot_ds.val))))) {
		free(ops);
		free(cl);
		free(ds);
		FAIL(res, BRAID_ADMIN_SERVERFAULT, "out of memory");
	}
	for (unsigned i = 0; i < nops; i++)
		ok->ot_ops.val[ok->ot_ops.len++] = (braid_admin_opstat){
		    .os_kind = ops[i].kind,
		    .os_prog = ops[i].prog,
		    .os_vers = ops[i].vers,
		    .os_proc = ops[i].proc,
		    .os_prog_name = acopy(req, ops[i].prog_name ? ops[i].prog_name : "",
					  BRAID_ADMIN_NAME_MAX),
		    .os_name = acopy(req, ops[i].name ? ops[i].name : "", BRAID_ADMIN_NAME_MAX),
		    .os_count = ops[i].count,
		    .os_errors = ops[i].errors,
		    .os_ns = ops[i].sum_ns,
		    .os_bytes = ops[i].bytes,
		};
	for (unsigned i = 0; i < ncl; i++) {
		braid_admin_client_ops *o = &ok->ot_clients.val[ok->ot_clients.len++];
		memset(o, 0, sizeof(*o));
		o->co_clientid = cl[i].clientid;
		o->co_name = owner_name(req, &cl[i]);
		o->co_addr = xdr_string_of("");
		o->co_ops = cl[i].ops;
		o->co_errors = cl[i].op_errors;
		o->co_ns = cl[i].op_ns;
		if (cl[i].has_peer) {
			char ua[80];
			const char *netid;
			uaddr_of(&cl[i].peer, sa_port(&cl[i].peer), ua, sizeof(ua), &netid);
			o->co_addr = acopy(req, ua, BRAID_ADMIN_UADDR_MAX);
		}
		struct mds_layout_counters c;
		if (!mds_layout_counters_client(mds, cl[i].clientid, &c)) {
			o->co_read_bytes = c.read_bytes;
			o->co_write_bytes = c.write_bytes;
		}
	}
	for (unsigned i = 0; i < nds; i++) {
		const struct mds_ds_iostats *io = &ds[i].io;
		ok->ot_ds.val[ok->ot_ds.len++] = (braid_admin_ds_ops){
		    .do_id = ds[i].id,
		    .do_host = acopy(req, ds[i].hostname, BRAID_ADMIN_HOSTNAME_MAX),
		    .do_up = ds[i].up,
		    .do_at_ms = io->at_ns / 1000000ull,
		    .do_reads = io->reads,
		    .do_read_bytes = io->read_bytes,
		    .do_read_ns = io->read_ns,
		    .do_writes = io->writes,
		    .do_write_bytes = io->write_bytes,
		    .do_write_ns = io->write_ns,
		    .do_commits = io->commits,
		};
	}
	free(ops);
	free(cl);
	free(ds);
	res->status = BRAID_ADMIN_OK;
	return NFSD_SUCCESS;
}

/* ------------------------------------------------------------- LAYOUT */

struct seg_take {
	struct nfsd_req *req;
	const struct layout_policy *pol;
	uint64_t from;
	unsigned max;
	braid_admin_segment *v;
	unsigned n;
	bool more;
	uint64_t next;
};

static int seg_take(void *arg, uint64_t seg, const struct mds_layout_seg *l)
{
	struct seg_take *t = arg;
	if (seg >= MDS_LAYOUT_SEG_END || seg < t->from)
		return 0;
	if (t->n == t->max) {
		t->more = true;
		t->next = seg;
		return 1;
	}
	braid_admin_segment *s = &t->v[t->n++];
	s->sg_index = seg;
	layout_seg_bounds(t->pol, seg, &s->sg_offset, &s->sg_length);
	uint32_t nds = l->nds < BRAID_ADMIN_SEG_DS_MAX ? l->nds : BRAID_ADMIN_SEG_DS_MAX;
	s->sg_ds.val = aalloc(t->req, nds, sizeof(braid_admin_dsid));
	for (uint32_t k = 0; s->sg_ds.val && k < nds; k++)
		s->sg_ds.val[s->sg_ds.len++] = l->ds[k];
	return 0;
}

static void device_note(struct nfsd_req *req, struct braid_mds *mds, braid_admin_layout_resok *ok,
			uint32_t id)
{
	for (uint32_t i = 0; i < ok->ly_devices.len; i++)
		if (ok->ly_devices.val[i].dv_id == id)
			return;
	if (ok->ly_devices.len == BRAID_ADMIN_DEVICES_MAX)
		return;
	braid_admin_device *d = &ok->ly_devices.val[ok->ly_devices.len++];
	struct mds_ds_info i;
	d->dv_id = id;
	d->dv_addr = (braid_admin_netaddr){xdr_string_of(""), xdr_string_of("")};
	if (mds_dsreg_get(mds, id, &i)) {
		d->dv_hostname = xdr_string_of("(removed)");
		return;
	}
	d->dv_hostname = acopy(req, i.hostname, BRAID_ADMIN_HOSTNAME_MAX);
	d->dv_up = i.up;
	d->dv_drained = i.drained;
	d->dv_lost = i.lost;
	if (i.naddrs)
		d->dv_addr =
		    (braid_admin_netaddr){acopy(req, i.addrs[0].netid, BRAID_ADMIN_NETID_MAX),
					  acopy(req, i.addrs[0].uaddr, BRAID_ADMIN_UADDR_MAX)};
}

/* An erasure-coded file's state and the stripes of the segments t took
 * (mds/ec.h), their holders among the devices. */
static int ec_stripes_out(struct nfsd_req *req, struct braid_mds *mds, uint64_t ino,
			  const struct layout_policy *p, const struct seg_take *t,
			  braid_admin_layout_resok *ok)
{
	struct mds_ec_file f;
	int rc = mds_ec_file_get(mds, ino, &f);
	if (rc && rc != -ENOENT)
		return rc;
	ok->ly_ec_state = rc ? 0 : f.sealed ? 2 : 1;
	ok->ly_ec_change = !rc && f.sealed ? f.change : 0;
	if (!t->n)
		return 0;
	uint64_t s0 = t->v[0].sg_index / p->ec_k, s1 = t->v[t->n - 1].sg_index / p->ec_k;
	unsigned n = (unsigned)(s1 - s0 + 1), total = (unsigned)p->ec_k + p->ec_m;
	ok->ly_ec_stripes.val = aalloc(req, n, sizeof(braid_admin_ec_stripe));
	if (!ok->ly_ec_stripes.val)
		return -ENOMEM;
	for (uint64_t s = s0; s <= s1; s++) {
		uint32_t ids[LAYOUT_EC_K_MAX + LAYOUT_EC_M_MAX] = {0};
		rc = mds_ec_stripe_ids(mds, ino, p, s, ids);
		if (rc && rc != -ENOENT)
			return rc;
		if (rc) /* no parity placed: none to show */
			memset(ids + p->ec_k, 0, p->ec_m * sizeof(ids[0]));
		braid_admin_ec_stripe *es = &ok->ly_ec_stripes.val[ok->ly_ec_stripes.len++];
		es->es_index = s;
		es->es_ds.val = aalloc(req, total, sizeof(braid_admin_dsid));
		if (!es->es_ds.val)
			return -ENOMEM;
		es->es_ds.len = total;
		for (unsigned i = 0; i < total; i++) {
			es->es_ds.val[i] = ids[i];
			if (ids[i])
				device_note(req, mds, ok, ids[i]);
		}
	}
	return 0;
}

static int a_layout(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	braid_admin_layout_args *a = argp;
	braid_admin_layout_res *res = resp;
	if (!authorized(req))
		FAIL(res, BRAID_ADMIN_ACCESS, NOAUTH);
	if (a->lg_max == 0)
		FAIL(res, BRAID_ADMIN_INVAL, "lg_max must be 1 or more");
	if (a->lg_max > BRAID_ADMIN_LIST_MAX)
		a->lg_max = BRAID_ADMIN_LIST_MAX;
	struct mds_attr at;
	char why[512];
	uint64_t ino;
	int rc = path_ino(mds, a->lg_path, &at, &ino, why, sizeof(why));
	if (rc)
		FAIL(res, stat_of(rc), "%s", why);
	if (at.type == MDS_DIR)
		FAIL(
		    res, BRAID_ADMIN_ISDIR,
		    "%.*s is a directory: its files have layouts ('braidctl policy get' shows what "
		    "new files there take)",
		    (int)a->lg_path.len, (const char *)a->lg_path.val);
	if (at.type != MDS_REG)
		FAIL(res, BRAID_ADMIN_INVAL, "%.*s is not a regular file: only files have layouts",
		     (int)a->lg_path.len, (const char *)a->lg_path.val);
	struct mds_file_map m;
	if ((rc = mds_data_map(mds, ino, &m)))
		FAIL(res, stat_of(rc), "reading the layout of inode %llu: %s",
		     (unsigned long long)ino, strerror(-rc));
	braid_admin_layout_resok *ok = &res->u.ok;
	ok->ly_ino = ino;
	ok->ly_size = at.size;
	policy_out(req, &m.pol, &ok->ly_policy);
	ok->ly_recorded = m.recorded;
	ok->ly_laid_out = m.laid_out;
	ok->ly_fence_epoch = m.epoch;
	ok->ly_set.val = aalloc(req, m.nset, sizeof(braid_admin_set_member));
	for (unsigned k = 0; ok->ly_set.val && k < m.nset; k++)
		ok->ly_set.val[ok->ly_set.len++] = (braid_admin_set_member){
		    m.set[k] & MDS_LAYOUT_ID, (m.set[k] & MDS_LAYOUT_CREATED) != 0,
		    (m.set[k] & MDS_LAYOUT_STALE) != 0};
	struct seg_take t = {.req = req,
			     .pol = &m.pol,
			     .from = a->lg_cookie,
			     .max = a->lg_max,
			     .v = aalloc(req, a->lg_max, sizeof(braid_admin_segment))};
	if (!t.v)
		FAIL(res, BRAID_ADMIN_SERVERFAULT, "out of memory");
	rc = mds_layout_list(mds->store, ino, seg_take, &t);
	if (rc < 0)
		FAIL(res, stat_of(rc), "reading the layout maps of inode %llu: %s",
		     (unsigned long long)ino, strerror(-rc));
	ok->ly_segments.val = t.v;
	ok->ly_segments.len = t.n;
	ok->ly_eof = !t.more;
	ok->ly_cookie = t.more ? t.next : (t.n ? t.v[t.n - 1].sg_index + 1 : a->lg_cookie);
	ok->ly_devices.val = aalloc(req, BRAID_ADMIN_DEVICES_MAX, sizeof(braid_admin_device));
	if (!ok->ly_devices.val)
		FAIL(res, BRAID_ADMIN_SERVERFAULT, "out of memory");
	for (uint32_t k = 0; k < ok->ly_set.len; k++)
		device_note(req, mds, ok, ok->ly_set.val[k].sm_id);
	for (unsigned s = 0; s < t.n; s++)
		for (uint32_t k = 0; k < t.v[s].sg_ds.len; k++)
			device_note(req, mds, ok, t.v[s].sg_ds.val[k]);
	if (layout_is_ec(&m.pol) && (rc = ec_stripes_out(req, mds, ino, &m.pol, &t, ok)))
		FAIL(res, stat_of(rc), "reading the parity records of inode %llu: %s",
		     (unsigned long long)ino, strerror(-rc));
	res->status = BRAID_ADMIN_OK;
	return NFSD_SUCCESS;
}

/* ------------------------------------------------------------ POLICY */

/* The directory's own policy: 0, -ENOENT (none), or -errno. */
static int policy_own(struct braid_mds *mds, uint64_t dir, struct layout_policy *p)
{
	struct mds_layout_seg l;
	int rc = mds_layout_get(mds->store, dir, MDS_LAYOUT_REC, &l);
	if (!rc && layout_policy_decode(l.flags, p))
		rc = -EIO;
	return rc;
}

static int a_policy_get(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	braid_admin_path_args *a = argp;
	braid_admin_policy_res *res = resp;
	if (!authorized(req))
		FAIL(res, BRAID_ADMIN_ACCESS, NOAUTH);
	if (!mds->layout)
		FAIL(res, BRAID_ADMIN_NOTSUPP, "layouts are not available in this build");
	struct walk *w = malloc(sizeof(*w));
	if (!w)
		FAIL(res, BRAID_ADMIN_SERVERFAULT, "out of memory");
	struct mds_attr at;
	char why[512];
	int rc = path_walk(mds, a->pa_path, w, &at, why, sizeof(why));
	if (!rc && at.type != MDS_DIR) {
		rc = -ENOTDIR;
		snprintf(why, sizeof(why),
			 "%.*s is not a directory: policies are set on directories (a file's own "
			 "layout: 'braidctl layout')",
			 (int)a->pa_path.len, (const char *)a->pa_path.val);
	}
	braid_admin_policy_resok *ok = &res->u.ok;
	struct layout_policy p;
	/* the nearest directory on the path with a policy of its own */
	for (unsigned k = rc ? 0 : w->n; !rc && k-- > 0;) {
		int r = policy_own(mds, w->ino[k], &p);
		if (r == -ENOENT)
			continue;
		if (r) {
			rc = r;
			snprintf(why, sizeof(why), "reading a directory's policy: %s",
				 strerror(-r));
			break;
		}
		if (k == w->n - 1) {
			ok->pg_has_own = true;
			policy_out(req, &p, &ok->pg_own);
		}
		policy_out(req, &p, &ok->pg_effective);
		ok->pg_from = acopy(req, (const char *)a->pa_path.val, w->end[k]);
		break;
	}
	free(w);
	if (rc)
		FAIL(res, stat_of(rc), "%s", why);
	if (!ok->pg_from.val) {
		mds_layout_policy_default(mds, &p);
		policy_out(req, &p, &ok->pg_effective);
		ok->pg_from = xdr_string_of("");
	}
	if (!ok->pg_has_own)
		ok->pg_own.lp_text = xdr_string_of("");
	res->status = BRAID_ADMIN_OK;
	return NFSD_SUCCESS;
}

static int a_policy_set(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	braid_admin_policy_set_args *a = argp;
	braid_admin_res *res = resp;
	if (!authorized(req))
		DONE(res, BRAID_ADMIN_ACCESS, NOAUTH);
	if (!mds->layout)
		DONE(res, BRAID_ADMIN_NOTSUPP, "layouts are not available in this build");
	char text[BRAID_ADMIN_POLICY_MAX + 1], why[256];
	memcpy(text, a->ps_policy.val, a->ps_policy.len);
	text[a->ps_policy.len] = 0;
	struct layout_policy p;
	bool remove = !a->ps_policy.len;
	if (!remove &&
	    (strlen(text) != a->ps_policy.len || layout_policy_parse(text, &p, why, sizeof(why))))
		DONE(res, BRAID_ADMIN_INVAL, "policy '%s': %s", text,
		     strlen(text) != a->ps_policy.len ? "holds a NUL byte" : why);
	struct walk *w = malloc(sizeof(*w));
	if (!w)
		DONE(res, BRAID_ADMIN_SERVERFAULT, "out of memory");
	struct mds_attr at;
	char wwhy[512];
	int rc = path_walk(mds, a->ps_path, w, &at, wwhy, sizeof(wwhy));
	uint64_t dir = rc ? 0 : w->ino[w->n - 1];
	free(w);
	if (rc)
		DONE(res, stat_of(rc), "%s", wwhy);
	const char *path = (const char *)a->ps_path.val;
	int plen = (int)a->ps_path.len;
	if (at.type != MDS_DIR)
		DONE(res, BRAID_ADMIN_NOTDIR,
		     "%.*s is not a directory: policies are set on directories, and files take "
		     "theirs when they are created",
		     plen, path);
	rc = mds_layout_policy_set(mds, dir, remove ? NULL : &p);
	if (rc == -EINVAL)
		DONE(res, BRAID_ADMIN_INVAL, "policy '%s' is not consistent", text);
	if (rc)
		DONE(res, stat_of(rc), "%.*s: %s", plen, path, strerror(-rc));
	if (remove) {
		mds_log("%.*s: layout policy removed by the administrator", plen, path);
		DONE(res, BRAID_ADMIN_OK,
		     "%.*s: its own policy removed: new files take the nearest parent's, or the "
		     "default",
		     plen, path);
	}
	char t[BRAID_ADMIN_POLICY_MAX + 1];
	layout_policy_format(&p, t, sizeof(t));
	mds_log("%.*s: layout policy %s set by the administrator", plen, path, t);
	DONE(res, BRAID_ADMIN_OK, "%.*s: new files below it take %s (existing files keep theirs)",
	     plen, path, t);
}

/* ------------------------------------------------------------- RECALL */

static int a_recall(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	braid_admin_recall_args *a = argp;
	braid_admin_res *res = resp;
	if (!authorized(req))
		DONE(res, BRAID_ADMIN_ACCESS, NOAUTH);
	if (!mds->layout)
		DONE(res, BRAID_ADMIN_NOTSUPP, "layouts are not available in this build");
	unsigned lease = (unsigned)(mds->set.lease_ms / 1000);
	if (a->type == BRAID_ADMIN_RECALL_CLIENT) {
		int rc = mds_layout_recall_client(mds, a->u.ra_clientid);
		if (rc == -ENOENT)
			DONE(res, BRAID_ADMIN_NOENT,
			     "client 0x%016llx holds no layout (or there is no such client: "
			     "'braidctl clients' lists them)",
			     (unsigned long long)a->u.ra_clientid);
		if (rc)
			DONE(res, stat_of(rc), "client 0x%016llx: %s",
			     (unsigned long long)a->u.ra_clientid, strerror(-rc));
		mds_log("recall of client 0x%016llx's layouts started by the administrator",
			(unsigned long long)a->u.ra_clientid);
		DONE(res, BRAID_ADMIN_OK,
		     "recall of client 0x%016llx's layouts started: layouts not returned within "
		     "%u s are revoked and their files fenced",
		     (unsigned long long)a->u.ra_clientid, lease);
	}
	if (a->type != BRAID_ADMIN_RECALL_FILE)
		DONE(res, BRAID_ADMIN_INVAL, "unknown recall type %d", a->type);
	struct walk *w = malloc(sizeof(*w));
	if (!w)
		DONE(res, BRAID_ADMIN_SERVERFAULT, "out of memory");
	struct mds_attr at;
	char why[512];
	int rc = path_walk(mds, a->u.ra_path, w, &at, why, sizeof(why));
	uint64_t ino = rc ? 0 : w->ino[w->n - 1];
	free(w);
	if (rc)
		DONE(res, stat_of(rc), "%s", why);
	const char *path = (const char *)a->u.ra_path.val;
	int plen = (int)a->u.ra_path.len;
	if (at.type != MDS_REG)
		DONE(res, at.type == MDS_DIR ? BRAID_ADMIN_ISDIR : BRAID_ADMIN_INVAL,
		     "%.*s is not a regular file: only files have layouts", plen, path);
	rc = mds_layout_recall_file(mds, ino);
	if (rc == -ENOENT)
		DONE(res, BRAID_ADMIN_NOENT, "no client holds a layout of %.*s", plen, path);
	if (rc)
		DONE(res, stat_of(rc), "%.*s: %s", plen, path, strerror(-rc));
	mds_log("recall of the layouts of %.*s started by the administrator", plen, path);
	DONE(res, BRAID_ADMIN_OK,
	     "recall of the layouts of %.*s started: layouts not returned within %u s are "
	     "revoked and the file fenced",
	     plen, path, lease);
}

/* --------------------------------------------------- DS_LOST, PROTECTION */

static int a_ds_lost(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	braid_admin_ds_args *a = argp;
	braid_admin_res *res = resp;
	if (!authorized(req))
		DONE(res, BRAID_ADMIN_ACCESS, NOAUTH);
	struct mds_ds_info i;
	if (mds_dsreg_get(mds, a->da_id, &i))
		DONE(res, BRAID_ADMIN_NOENT, "no data server %u ('braidctl ds list' shows the ids)",
		     a->da_id);
	const char *host = i.hostname[0] ? i.hostname : "?";
	if (i.up)
		DONE(res, BRAID_ADMIN_BUSY,
		     "data server %u (%s) is up: stop braid-ds there first (to move data off a "
		     "running server, drain it)",
		     a->da_id, host);
	int rc = mds_dsreg_lost(mds, a->da_id, "by the administrator");
	if (rc == -ENOENT)
		DONE(res, BRAID_ADMIN_NOENT, "data server %u was removed meanwhile", a->da_id);
	if (rc)
		DONE(res, stat_of(rc), "data server %u: recording the change in %s: %s", a->da_id,
		     mds->set.store_dir, strerror(-rc));
	mds_resilver_kick(mds);
	DONE(res, BRAID_ADMIN_OK,
	     "data server %u (%s) declared lost: its copies are being rebuilt on the others "
	     "('braidctl rebuild' shows the progress)",
	     a->da_id, host);
}

static int a_protection(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	braid_admin_protection_res *res = resp;
	(void)argp;
	if (!authorized(req)) {
		res->status = BRAID_ADMIN_ACCESS;
		res->u.why = xdr_string_of(NOAUTH);
		return NFSD_SUCCESS;
	}
	struct mds_resilver_stats st;
	mds_resilver_stats(mds, &st);
	braid_admin_protection_resok *ok = &res->u.ok;
	*ok = (braid_admin_protection_resok){
	    .pr_lost_servers = st.lost_servers,
	    .pr_rebuild_files = st.rebuild_files,
	    .pr_moved_files = st.moved_files,
	    .pr_stale_files = st.stale_files,
	    .pr_stale_bytes = st.stale_bytes,
	    .pr_resilvered_files = st.files_done,
	    .pr_resilvered_bytes = st.bytes_copied,
	    .pr_failures = st.failures,
	    .pr_rate = st.rate_Bps,
	    .pr_copies = st.copies,
	    .pr_inflight_ino = st.inflight_ino,
	    .pr_inflight_to = st.inflight_to,
	    .pr_inflight_bytes = st.inflight_bytes,
	    .pr_unrecoverable = st.unrecoverable,
	    .pr_ec_files = st.ec_files,
	    .pr_ec_chunks = st.ec_chunks,
	    .pr_ec_bytes_todo = st.ec_bytes_todo,
	    .pr_ec_files_done = st.ec_files_done,
	    .pr_ec_chunks_done = st.ec_chunks_done,
	    .pr_ec_bytes = st.ec_bytes,
	};
	struct mds_lost_file *lf = aalloc(req, BRAID_ADMIN_LIST_MAX, sizeof(*lf));
	braid_admin_lost_file *v = aalloc(req, BRAID_ADMIN_LIST_MAX, sizeof(*v));
	unsigned n = lf && v ? mds_resilver_lost_files(mds, lf, BRAID_ADMIN_LIST_MAX) : 0;
	for (unsigned k = 0; k < n; k++)
		v[k] = (braid_admin_lost_file){.lf_ino = lf[k].ino,
					       .lf_ds = lf[k].ds,
					       .lf_path = xdr_string_of(lf[k].path)};
	ok->pr_lost.val = v;
	ok->pr_lost.len = n;
	res->status = BRAID_ADMIN_OK;
	return NFSD_SUCCESS;
}

static int a_rebalance(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	braid_admin_res *res = resp;
	(void)argp;
	if (!authorized(req))
		DONE(res, BRAID_ADMIN_ACCESS, NOAUTH);
	int rc = mds_resilver_rebalance(mds);
	if (rc)
		DONE(res, stat_of(rc), "recording the rebalance in %s: %s", mds->set.store_dir,
		     strerror(-rc));
	DONE(res, BRAID_ADMIN_OK,
	     "rebalance started: copies move from the fullest data servers to the emptiest "
	     "('braidctl rebuild' shows the progress)");
}

/* ------------------------------------------------------------ EC */

static int a_ec_scrub(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	braid_admin_path_args *a = argp;
	braid_admin_ec_scrub_res *res = resp;
	if (!authorized(req))
		FAIL(res, BRAID_ADMIN_ACCESS, NOAUTH);
	struct mds_attr at;
	char why[512];
	uint64_t ino;
	int rc = path_ino(mds, a->pa_path, &at, &ino, why, sizeof(why));
	if (rc)
		FAIL(res, stat_of(rc), "%s", why);
	if (at.type == MDS_DIR)
		FAIL(res, BRAID_ADMIN_ISDIR, "%.*s is a directory: scrub its files one by one",
		     (int)a->pa_path.len, (const char *)a->pa_path.val);
	struct mds_ec_scrub_res r;
	rc = mds_ec_scrub_file(mds, ino, &r);
	if (rc == -EINVAL)
		FAIL(res, BRAID_ADMIN_INVAL, "%.*s is not an erasure-coded regular file",
		     (int)a->pa_path.len, (const char *)a->pa_path.val);
	if (rc)
		FAIL(res, stat_of(rc), "scrubbing inode %llu: %s", (unsigned long long)ino,
		     strerror(-rc));
	res->u.ok = (braid_admin_ec_scrub_resok){r.sealed, r.stripes, r.mismatches, r.repairs,
						 r.errors};
	res->status = BRAID_ADMIN_OK;
	return NFSD_SUCCESS;
}

static int a_ec_status(struct nfsd_req *req, void *argp, void *resp)
{
	(void)argp;
	struct braid_mds *mds = req->priv;
	braid_admin_ec_status_res *res = resp;
	if (!authorized(req))
		FAIL(res, BRAID_ADMIN_ACCESS, NOAUTH);
	struct mds_ec_space sp;
	int rc = mds_ec_space_tally(mds, &sp);
	if (rc)
		FAIL(res, stat_of(rc), "reading the layout maps: %s", strerror(-rc));
	struct mds_ec_stats es;
	struct mds_ec_scrub_pass lp;
	mds_ec_stats(mds, &es);
	mds_ec_scrub_last(mds, &lp);
	res->u.ok = (braid_admin_ec_status_resok){
	    .es_sealed_total = es.sealed,
	    .es_unsealed_total = es.unsealed,
	    .es_encode_bytes = es.encode_bytes,
	    .es_encode_failures = es.failures,
	    .es_to_seal = es.to_seal,
	    .es_scrub_interval_s = mds->set.ec_scrub_interval_ms / 1000,
	    .es_passes = lp.passes,
	    .es_pass_running = lp.running,
	    .es_pass_started = lp.started,
	    .es_pass_ended = lp.ended,
	    .es_pass_files = lp.res.files,
	    .es_pass_stripes = lp.res.stripes,
	    .es_pass_mismatches = lp.res.mismatches,
	    .es_pass_repairs = lp.res.repairs,
	    .es_pass_errors = lp.res.errors,
	    .es_files = sp.files,
	    .es_raw = sp.raw,
	    .es_logical = sp.logical,
	    .es_ec_files = sp.ec_files,
	    .es_ec_sealed = sp.ec_sealed,
	    .es_ec_raw = sp.ec_raw,
	    .es_ec_logical = sp.ec_logical,
	};
	res->status = BRAID_ADMIN_OK;
	return NFSD_SUCCESS;
}

/* ------------------------------------------------------------ program */

static struct nfsd_proc admin_procs[BRAID_ADMINPROC_EC_STATUS + 1] = {
    [BRAID_ADMINPROC_NULL] = {.name = "NULL", .fn = a_null, .flags = NFSD_PROC_INLINE},
    [BRAID_ADMINPROC_STATUS] = {.name = "STATUS", .fn = a_status},
    [BRAID_ADMINPROC_DS_LIST] = {.name = "DS_LIST", .fn = a_ds_list},
    [BRAID_ADMINPROC_DS_ADD] = {.name = "DS_ADD", .fn = a_ds_add},
    [BRAID_ADMINPROC_DS_DRAIN] = {.name = "DS_DRAIN", .fn = a_ds_drain},
    [BRAID_ADMINPROC_DS_REMOVE] = {.name = "DS_REMOVE", .fn = a_ds_remove},
    [BRAID_ADMINPROC_EXPORTS_LIST] = {.name = "EXPORTS_LIST", .fn = a_exports_list},
    [BRAID_ADMINPROC_EXPORTS_RELOAD] = {.name = "EXPORTS_RELOAD", .fn = a_exports_reload},
    [BRAID_ADMINPROC_CLIENTS] = {.name = "CLIENTS", .fn = a_clients},
    [BRAID_ADMINPROC_LAYOUT] = {.name = "LAYOUT", .fn = a_layout},
    [BRAID_ADMINPROC_POLICY_GET] = {.name = "POLICY_GET", .fn = a_policy_get},
    [BRAID_ADMINPROC_POLICY_SET] = {.name = "POLICY_SET", .fn = a_policy_set},
    [BRAID_ADMINPROC_RECALL] = {.name = "RECALL", .fn = a_recall},
    [BRAID_ADMINPROC_DS_LOST] = {.name = "DS_LOST", .fn = a_ds_lost},
    [BRAID_ADMINPROC_PROTECTION] = {.name = "PROTECTION", .fn = a_protection},
    [BRAID_ADMINPROC_REBALANCE] = {.name = "REBALANCE", .fn = a_rebalance},
    [BRAID_ADMINPROC_OPSTATS] = {.name = "OPSTATS", .fn = a_opstats},
    [BRAID_ADMINPROC_EC_SCRUB] = {.name = "EC_SCRUB", .fn = a_ec_scrub},
    [BRAID_ADMINPROC_EC_STATUS] = {.name = "EC_STATUS", .fn = a_ec_status},
};
static const struct nfsd_version admin_versions[] = {
    {.vers = BRAID_ADMIN_V1, .procs = admin_procs, .nprocs = BRAID_ADMINPROC_EC_STATUS + 1},
};

const struct nfsd_program *mds_admin_program(struct braid_mds *mds)
{
	return &mds->admin->prog;
}

/* ------------------------------------------------------------ metrics */

struct fam {
	const char *name, *type, *help;
};

static const struct fam ds_fams[] = {
    {"braid_mds_ds_up", "gauge",
     "1 while the data server is registered and heard from within [mds] ds_timeout."},
    {"braid_mds_ds_drained", "gauge", "1 when the administrator drained the data server."},
    {"braid_mds_ds_health", "gauge", "BRAID_CTL_HEALTH_* flags of its last HEARTBEAT."},
    {"braid_mds_ds_capacity_bytes", "gauge", "Bytes of the data server's storage."},
    {"braid_mds_ds_free_bytes", "gauge", "Bytes free on the data server."},
    {"braid_mds_ds_objects", "gauge", "Objects the data server holds, as it reported."},
    {"braid_mds_ds_heartbeat_age_seconds", "gauge", "Since its last REGISTER or HEARTBEAT."},
    {"braid_mds_ds_layoutstats_read_bytes_total", "counter",
     "Bytes clients read from the data server, as they reported (LAYOUTSTATS, LAYOUTRETURN)."},
    {"braid_mds_ds_layoutstats_write_bytes_total", "counter",
     "Bytes clients wrote to the data server, as they reported."},
    {"braid_mds_ds_layoutstats_read_ops_total", "counter",
     "READs clients sent the data server, as they reported."},
    {"braid_mds_ds_layoutstats_write_ops_total", "counter",
     "WRITEs clients sent the data server, as they reported."},
    {"braid_mds_ds_layout_errors_total", "counter",
     "I/O errors clients reported on the data server (LAYOUTERROR, LAYOUTRETURN)."},
    {"braid_mds_ds_layout_errors_access_total", "counter",
     "Of those, NFS4ERR_ACCESS: I/O with a fenced credential."},
};
#define DS_FAMS (sizeof(ds_fams) / sizeof(ds_fams[0]))

static const struct fam client_fams[] = {
    {"braid_mds_client_sessions", "gauge", "Sessions of the client ID."},
    {"braid_mds_client_lease_remaining_seconds", "gauge",
     "Until the client's lease runs out (negative: expired, not yet reaped)."},
    {"braid_mds_client_opens", "gauge", "Open stateids the client holds."},
    {"braid_mds_client_locks", "gauge", "Lock stateids the client holds."},
    {"braid_mds_client_holds_layouts", "gauge", "1 while the client holds layouts."},
    {"braid_mds_client_layoutgets_total", "counter", "Layouts granted to the client."},
    {"braid_mds_client_layoutreturns_total", "counter", "LAYOUTRETURNs from the client."},
    {"braid_mds_client_layout_recalls_total", "counter", "Layout recalls sent to the client."},
    {"braid_mds_client_layouts_revoked_total", "counter",
     "Layouts revoked from the client (not returned in time)."},
    {"braid_mds_client_layout_errors_total", "counter",
     "I/O errors the client reported (LAYOUTERROR, LAYOUTRETURN)."},
    {"braid_mds_client_layoutstats_read_bytes_total", "counter",
     "Bytes the client read from data servers, as it reported."},
    {"braid_mds_client_layoutstats_write_bytes_total", "counter",
     "Bytes the client wrote to data servers, as it reported."},
    {"braid_mds_client_layoutgets_delayed_total", "counter",
     "LAYOUTGETs for a range just granted to the client, answered NFS4ERR_DELAY."},
    {"braid_mds_client_delegations", "gauge", "Read delegations the client holds."},
};
#define CLIENT_FAMS (sizeof(client_fams) / sizeof(client_fams[0]))

#define LABELS_MAX 320

/* Families f[0..nf) over n subjects: labels[i], vals[i * nf + k]. */
static void emit_table(struct nfsd_metrics_out *o, const struct fam *f, unsigned nf,
		       char (*labels)[LABELS_MAX], const int64_t *vals, unsigned n)
{
	for (unsigned k = 0; k < nf; k++) {
		nfsd_metrics_family(o, f[k].name, f[k].type, f[k].help);
		for (unsigned i = 0; i < n; i++)
			nfsd_metrics_sample(o, f[k].name, labels[i], vals[(size_t)i * nf + k]);
	}
}

static void collect_ds(struct braid_mds *mds, struct nfsd_metrics_out *o)
{
	unsigned n;
	struct mds_ds_info *v = ds_snapshot(mds, &n);
	char(*labels)[LABELS_MAX] = v ? malloc((n ? n : 1) * sizeof(*labels)) : NULL;
	int64_t *vals = labels ? malloc((n ? n : 1) * DS_FAMS * sizeof(*vals)) : NULL;
	if (!vals) {
		free(labels);
		free(v);
		return;
	}
	unsigned up = 0, drained = 0;
	for (unsigned i = 0; i < n; i++) {
		char host[300];
		nfsd_metrics_escape(host, sizeof(host), v[i].hostname, sizeof(v[i].hostname));
		snprintf(labels[i], LABELS_MAX, "ds=\"%u\",host=\"%s\"", v[i].id, host);
		struct mds_layout_counters c;
		mds_layout_counters_ds(mds, v[i].id, &c);
		int64_t *x = &vals[(size_t)i * DS_FAMS];
		x[0] = v[i].up;
		x[1] = v[i].drained;
		x[2] = v[i].health;
		x[3] = (int64_t)v[i].capacity;
		x[4] = (int64_t)v[i].free;
		x[5] = (int64_t)v[i].objects;
		x[6] = (int64_t)(v[i].since_heartbeat_ms / 1000);
		x[7] = (int64_t)c.read_bytes;
		x[8] = (int64_t)c.write_bytes;
		x[9] = (int64_t)c.read_ops;
		x[10] = (int64_t)c.write_ops;
		x[11] = (int64_t)c.ioerrors;
		x[12] = (int64_t)c.ioerr_access;
		up += v[i].up;
		drained += v[i].drained;
	}
	nfsd_metrics_family(o, "braid_mds_data_servers", "gauge",
			    "Data servers known, up, and drained by the administrator.");
	nfsd_metrics_sample(o, "braid_mds_data_servers", "state=\"known\"", n);
	nfsd_metrics_sample(o, "braid_mds_data_servers", "state=\"up\"", up);
	nfsd_metrics_sample(o, "braid_mds_data_servers", "state=\"drained\"", drained);
	emit_table(o, ds_fams, DS_FAMS, labels, vals, n);
	free(vals);
	free(labels);
	free(v);
}

static void collect_clients(struct braid_mds *mds, struct nfsd_metrics_out *o)
{
	unsigned n;
	struct nfs41_client_info *v = client_snapshot(mds, &n);
	char(*labels)[LABELS_MAX] = v ? malloc((n ? n : 1) * sizeof(*labels)) : NULL;
	int64_t *vals = labels ? malloc((n ? n : 1) * CLIENT_FAMS * sizeof(*vals)) : NULL;
	if (!vals) {
		free(labels);
		free(v);
		return;
	}
	qsort(v, n, sizeof(*v), client_cmp);
	unsigned holding = 0;
	for (unsigned i = 0; i < n; i++) {
		char peer[INET6_ADDRSTRLEN] = "";
		if (v[i].has_peer && v[i].peer.ss_family == AF_INET6)
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&v[i].peer)->sin6_addr, peer,
				  sizeof(peer));
		else if (v[i].has_peer)
			inet_ntop(AF_INET, &((struct sockaddr_in *)&v[i].peer)->sin_addr, peer,
				  sizeof(peer));
		snprintf(labels[i], LABELS_MAX, "client=\"0x%016llx\",peer=\"%s\"",
			 (unsigned long long)v[i].clientid, peer);
		unsigned opens = 0, locks = 0, delegs = 0;
		mds_state_client_counts(mds, v[i].clientid, &opens, &locks, &delegs);
		struct mds_layout_counters c;
		if (mds_layout_counters_client(mds, v[i].clientid, &c))
			memset(&c, 0, sizeof(c));
		bool held = mds_layout_client_has_state(mds, v[i].clientid);
		holding += held;
		int64_t *x = &vals[(size_t)i * CLIENT_FAMS];
		x[0] = v[i].sessions;
		x[1] = v[i].lease_left_ms / 1000;
		x[2] = opens;
		x[3] = locks;
		x[4] = held;
		x[5] = (int64_t)c.layoutgets;
		x[6] = (int64_t)c.layoutreturns;
		x[7] = (int64_t)c.recalls;
		x[8] = (int64_t)c.revoked;
		x[9] = (int64_t)c.ioerrors;
		x[10] = (int64_t)c.read_bytes;
		x[11] = (int64_t)c.write_bytes;
		x[12] = (int64_t)c.dup_delayed;
		x[13] = delegs;
	}
	nfsd_metrics_family(o, "braid_mds_clients", "gauge", "NFSv4.1 client IDs alive.");
	nfsd_metrics_sample(o, "braid_mds_clients", NULL, n);
	nfsd_metrics_family(o, "braid_mds_clients_holding_layouts", "gauge",
			    "Client IDs holding layouts (layouts outstanding).");
	nfsd_metrics_sample(o, "braid_mds_clients_holding_layouts", NULL, holding);
	nfsd_metrics_family(o, "braid_mds_layouts_outstanding", "gauge",
			    "Layout stateids alive: (client, file) pairs holding layouts.");
	nfsd_metrics_sample(o, "braid_mds_layouts_outstanding", NULL,
			    (int64_t)mds_layout_outstanding(mds));
	nfsd_metrics_family(o, "braid_mds_layoutgets_delayed_total", "counter",
			    "LAYOUTGETs for a range just granted to the same client, sent with the"
			    " stateid from before that grant, answered NFS4ERR_DELAY.");
	nfsd_metrics_sample(o, "braid_mds_layoutgets_delayed_total", NULL,
			    (int64_t)mds_layout_dup_delayed(mds));
	nfsd_metrics_family(o, "braid_mds_layoutgets_deferred_total", "counter",
			    "LAYOUTGETs inside an OPEN's COMPOUND for a file with no byte and no"
			    " placement yet, answered NFS4ERR_LAYOUTTRYLATER: the file is placed"
			    " when a write first needs it.");
	nfsd_metrics_sample(o, "braid_mds_layoutgets_deferred_total", NULL,
			    (int64_t)mds_layout_lgopen_deferred(mds));
	emit_table(o, client_fams, CLIENT_FAMS, labels, vals, n);
	free(vals);
	free(labels);
	free(v);
}

/* Delegations (mds/deleg.c), as the layout counters. */
static void collect_delegations(struct braid_mds *mds, struct nfsd_metrics_out *o)
{
	struct mds_deleg_counters d;
	mds_deleg_counters(mds, &d);
	nfsd_metrics_family(o, "braid_mds_delegations_outstanding", "gauge",
			    "Delegations (read and write) granted and neither returned nor revoked.");
	nfsd_metrics_sample_u64(o, "braid_mds_delegations_outstanding", NULL, d.outstanding);
	nfsd_metrics_family(o, "braid_mds_write_delegations_outstanding", "gauge",
			    "Of those, write delegations.");
	nfsd_metrics_sample_u64(o, "braid_mds_write_delegations_outstanding", NULL,
				d.outstanding_write);
	nfsd_metrics_family(o, "braid_mds_write_delegations_total", "counter",
			    "Write delegations granted by OPEN (also counted as granted).");
	nfsd_metrics_sample_u64(o, "braid_mds_write_delegations_total", NULL, d.granted_write);
	nfsd_metrics_family(o, "braid_mds_delegations_total", "counter",
			    "Delegation events: granted by OPEN, recalled (CB_RECALL, on a "
			    "conflict), returned (DELEGRETURN), revoked (not returned in time).");
	nfsd_metrics_sample_u64(o, "braid_mds_delegations_total", "event=\"granted\"", d.granted);
	nfsd_metrics_sample_u64(o, "braid_mds_delegations_total", "event=\"recalled\"",
				d.recalled);
	nfsd_metrics_sample_u64(o, "braid_mds_delegations_total", "event=\"returned\"",
				d.returned);
	nfsd_metrics_sample_u64(o, "braid_mds_delegations_total", "event=\"revoked\"", d.revoked);
	nfsd_metrics_family(o, "braid_mds_recall_any_total", "counter",
			    "CB_RECALL_ANY calls sent: delegations and layouts past recall_any_above.");
	nfsd_metrics_sample_u64(o, "braid_mds_recall_any_total", NULL, d.recall_any);
}

static void collect(void *arg, struct nfsd_metrics_out *o)
{
	struct braid_mds *mds = arg;
	nfsd_metrics_collect_server(o, mds->srv);
	nfsd_gss_metrics(o, mds->gss);
	nfsd_metrics_family(o, "braid_mds_in_grace", "gauge",
			    "1 during the grace period after a restart (new state refused).");
	nfsd_metrics_sample(o, "braid_mds_in_grace", NULL, mds_state_in_grace(mds));
	struct mds_exports *x = mds_exports_get(mds);
	nfsd_metrics_family(o, "braid_mds_exports", "gauge", "Exports in force.");
	nfsd_metrics_sample(o, "braid_mds_exports", NULL, x->n);
	mds_exports_put(x);
	uint64_t total, avail;
	mds_dsreg_space(mds, &total, &avail);
	nfsd_metrics_family(o, "braid_mds_capacity_bytes", "gauge",
			    "Bytes of storage over the data servers up.");
	nfsd_metrics_sample_u64(o, "braid_mds_capacity_bytes", NULL, total);
	nfsd_metrics_family(o, "braid_mds_free_bytes", "gauge",
			    "Bytes free over the data servers up.");
	nfsd_metrics_sample_u64(o, "braid_mds_free_bytes", NULL, avail);
	struct mds_store_stats ss;
	mds_store_stats(braid_mds_store(mds), &ss);
	nfsd_metrics_family(o, "braid_mds_store_map_bytes", "gauge",
			    "The metadata store's map (address space, not disk): it doubles"
			    " when nearly full.");
	nfsd_metrics_sample_u64(o, "braid_mds_store_map_bytes", NULL, ss.map_size);
	nfsd_metrics_family(o, "braid_mds_store_map_grows_total", "counter",
			    "Times the metadata store's map grew.");
	nfsd_metrics_sample_u64(o, "braid_mds_store_map_grows_total", NULL, ss.map_grows);
	collect_ds(mds, o);
	collect_clients(mds, o);
	collect_delegations(mds, o);
}

void mds_metrics_recall_done(struct braid_mds *mds, uint64_t ns, bool revoked)
{
	struct mds_admin *ad = mds->admin;
	if (!ad)
		return;
	nfsd_metric_observe_ns(ad->recall_seconds, ns);
	nfsd_metric_add(revoked ? ad->recalls_revoked : ad->recalls_returned, 1);
}

/* ------------------------------------------------------------ start, stop */

int mds_admin_init(struct braid_mds *mds, char *msg, size_t msglen)
{
	struct mds_admin *ad = calloc(1, sizeof(*ad));
	if (!ad) {
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	ad->mds = mds;
	mds->admin = ad;
	nfsd_procs_bind(admin_procs, BRAID_ADMINPROC_EC_STATUS + 1,
			&xdr_desc_BRAID_ADMIN_PROGRAM_BRAID_ADMIN_V1);
	ad->prog = (struct nfsd_program){
	    .prog = BRAID_ADMIN_PROGRAM,
	    .name = "braid_admin",
	    .versions = admin_versions,
	    .nversions = 1,
	    .priv = mds,
	};
	struct nfsd_metrics *m = mds->metrics;
	ad->recall_seconds = nfsd_metrics_histogram(
	    m, "braid_mds_layout_recall_duration_seconds",
	    "From CB_LAYOUTRECALL to the layouts' return or revocation.", NULL);
	ad->recalls_returned =
	    nfsd_metrics_counter(m, "braid_mds_layout_recalls_completed_total",
				 "Layout recalls that ended, by outcome.", "outcome=\"returned\"");
	ad->recalls_revoked = nfsd_metrics_counter(m, "braid_mds_layout_recalls_completed_total",
						   NULL, "outcome=\"revoked\"");
	int rc = m ? nfsd_metrics_collector_add(m, collect, mds) : 0;
	if (rc) {
		snprintf(msg, msglen, "metrics: %s", strerror(-rc));
		return rc;
	}
	return 0;
}

void mds_admin_release(struct braid_mds *mds)
{
	if (!mds->admin)
		return;
	nfsd_metrics_collector_remove(mds->metrics, collect, mds);
	free(mds->admin);
	mds->admin = NULL;
}
