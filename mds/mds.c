/* SPDX-License-Identifier: MIT */
/*
 * braid-mds: settings, start and stop, exports, the op table, credentials
 * and the one -errno -> nfsstat4 table.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mds/admin.h"
#include "mds/callback.h"
#include "mds/data.h"
#include "mds/dsreg.h"
#include "mds/ec.h"
#include "mds/ec_scrub.h"
#include "mds/fh.h"
#include "mds/layout.h"
#include "mds/mds_impl.h"
#include "mds/mount.h"
#include "mds/nfs3.h"
#include "mds/nlm.h"
#include "mds/resilver.h"
#include "mds/space.h"
#include "mds/state.h"
#include "nfsd/auth_gss.h"
#include "nfsd/metrics.h"

static const char *const data_io_modes[] = { "proxy", "refuse", NULL };
static const char *const layout_modes[] = { "whole", "segments", "striped", NULL };
static const char *const deleg_modes[] = { "on", "read", "off", NULL };

#define S(m) CONF_AT(struct mds_settings, m)
const struct conf_schema mds_conf_schema[] = {
	{ "mds", NULL, "store_dir", CONF_STRING, .def = "/var/lib/braid/mds", S(store_dir),
	  .desc = "Directory of the metadata store (LMDB); created when missing." },
	{ "mds", NULL, "listen", CONF_ADDRS, CONF_REPEAT, .def = "0.0.0.0:2049", S(listen),
	  .desc = "Addresses to serve NFSv4.1/4.2, MOUNT and the data servers' control "
		  "protocol on (port 0: any free port)." },
	{ "mds", NULL, "rdma_listen", CONF_ADDRS, CONF_REPEAT, S(rdma_listen),
	  .desc = "Addresses to serve NFS on over RPC-over-RDMA (RFC 8166), port 20049 by "
		  "convention: an RDMA device's address, or 0.0.0.0 for every RDMA device; "
		  "none: TCP only." },
	{ "mds", NULL, "exports", CONF_STRING, .def = "/etc/braid/exports", S(exports),
	  .desc = "Exports file, in /etc/exports syntax (braid-exports(5))." },
	{ "mds", NULL, "key_file", CONF_STRING, .def = "/etc/braid/cluster.key", S(key_file),
	  .desc = "The cluster key shared with the data servers (64 hex digits, mode 0600)." },
	{ "mds", NULL, "keytab", CONF_STRING, .def = "", S(keytab),
	  .desc = "Kerberos keytab holding this server's nfs/HOST@REALM keys: enables RPCSEC_GSS "
		  "(krb5, krb5i, krb5p) for exports with sec=krb5*; empty: AUTH_SYS only." },
	{ "mds", NULL, "lease_time", CONF_DURATION, .min = 2000, .max = 3600000, .def = "90s",
	  S(lease_ms), .desc = "NFSv4 lease: a client silent this long loses its state." },
	{ "mds", NULL, "grace_time", CONF_DURATION, .min = 0, .max = 3600000, .def = "90s",
	  S(grace_ms),
	  .desc = "Grace period after a restart, during which clients reclaim their opens and "
		  "locks and new state is refused; it ends early once every client has sent "
		  "RECLAIM_COMPLETE." },
	{ "mds", NULL, "loops", CONF_INT, .min = 0, .max = 256, .def = "0", S(loops),
	  .desc = "Network event loops; 0: one per core." },
	{ "mds", NULL, "workers", CONF_INT, .min = 0, .max = 4096, .def = "0", S(workers),
	  .desc = "Threads running COMPOUNDs; 0: 32 per core." },
	{ "mds", NULL, "mount", CONF_BOOL, .def = "yes", S(mount),
	  .desc = "Serve MOUNT v3, so showmount -e lists the exports." },
	{ "mds", NULL, "nfs3", CONF_BOOL, .def = "yes", S(nfs3),
	  .desc = "Serve NFSv3 (RFC 1813) beside NFSv4.1/4.2, its file data through the MDS "
		  "to the data servers." },
	{ "mds", NULL, "rpcbind", CONF_BOOL, .def = "yes", S(rpcbind),
	  .desc = "Register NFS, MOUNT, NLM and NSM with rpcbind when one runs (rpcinfo -p)." },
	{ "mds", NULL, "nlm", CONF_BOOL, .def = "yes", S(nlm),
	  .desc = "With nfs3: serve NLM v4 (program 100021, NFSv3 clients' fcntl locks, in "
		  "the table of NFSv4's locks) and NSM's SM_NOTIFY (program 100024), and "
		  "notify the hosts that held NLM locks after a restart." },
	{ "mds", NULL, "nsm_name", CONF_STRING, .def = "", S(nsm_name),
	  .desc = "The name this server gives in SM_NOTIFY after a restart; empty: to each "
		  "host, the server address its requests came to (what Linux clients "
		  "monitor), else the host name." },
	{ "mds", NULL, "nlm_rpcbind_port", CONF_INT, .min = 1, .max = 65535, .def = "111",
	  S(nlm_rpcbind_port),
	  .desc = "The port of the clients' rpcbind, asked (at the address a client's request "
		  "came from, never another) for its NLM and NSM ports before calling it back; "
		  "for tests." },
	{ "mds", NULL, "data_io", CONF_ENUM, .values = data_io_modes, .def = "proxy", S(data_io),
	  .desc = "READ/WRITE of file data sent to the MDS: proxy them to the data server, or "
		  "refuse them (to prove that clients use layouts)." },
	{ "mds", NULL, "small_file_threshold", CONF_SIZE, .max = 1ll << 40, .def = "1M",
	  S(small_file_threshold),
	  .desc = "With data_io = proxy: NFSv4.1 and 4.2 clients write files smaller than "
		  "this through the MDS instead of asking for a layout (the mdsthreshold "
		  "attribute, RFC 8881 §5.12.15; Linux honours it): a small file costs its "
		  "writer no LAYOUTGET and LAYOUTCOMMIT round trips.  Reads still go to the "
		  "data servers.  0: every write through layouts." },
	{ "mds", NULL, "heartbeat_interval", CONF_DURATION, .min = 1000, .max = 600000,
	  .def = "5s", S(heartbeat_ms), .desc = "How often data servers report in." },
	{ "mds", NULL, "ds_timeout", CONF_DURATION, .min = 2000, .max = 3600000, .def = "20s",
	  S(ds_timeout_ms),
	  .desc = "A data server silent this long is down: new files go elsewhere." },
	{ "mds", NULL, "ds_lost_after", CONF_DURATION, .def = "0", S(ds_lost_after_ms),
	  .desc = "A data server down this long is declared lost: its copies are rebuilt on "
		  "the others (braidctl ds lost does it at once); 0: never by itself." },
	{ "mds", NULL, "ec_seal_after", CONF_DURATION, .min = 0, .max = 86400000, .def = "60s",
	  S(ec_seal_after_ms),
	  .desc = "An erasure-coded file unchanged this long, and open for writing by nobody, "
		  "is sealed: its parity is computed, and its bytes survive the loss of m data "
		  "servers." },
	{ "mds", NULL, "ec_scrub_interval", CONF_DURATION, .min = 0, .max = 31536000000ll,
	  .def = "168h", S(ec_scrub_interval_ms),
	  .desc = "A background scrub verifies every sealed erasure-coded file's parity against "
		  "its data this often (and repairs what differs or fails its CRC); 0: never "
		  "(braidctl ec scrub still does one file)." },
	{ "mds", NULL, "resilver_rate", CONF_SIZE, .def = "0", S(resilver_rate),
	  .desc = "Bytes per second each resilver copy reads from its source (a stale mirror "
		  "brought up to date); 0: no bound." },
	{ "mds", NULL, "resilver_copies", CONF_INT, .min = 1, .max = 64, .def = "8",
	  S(resilver_copies),
	  .desc = "Copies (resilver, rebuild, drain, rebalance) made at once, of distinct "
		  "files." },
	{ "mds", NULL, "resilver_copies_per_ds", CONF_INT, .min = 1, .max = 16, .def = "2",
	  S(resilver_copies_per_ds),
	  .desc = "Of those, at most this many into any one data server." },
	{ "mds", NULL, "layout", CONF_ENUM, .values = layout_modes, .def = "whole", S(layout),
	  .desc = "Where new files' bytes go, unless a directory says otherwise: whole (each "
		  "file on one data server, files spread by free space), segments (a grid of "
		  "segments round-robin over a set of data servers) or striped (RFC 8435 "
		  "stripes, for Linux 6.18 and later clients)." },
	{ "mds", NULL, "layout_segment_size", CONF_SIZE, .min = 1 << 20, .max = 1ll << 46,
	  .def = "16M", S(layout_segment_size),
	  .desc = "layout = segments: bytes per segment, a power of two." },
	{ "mds", NULL, "layout_width", CONF_INT, .min = 0, .max = 15, .def = "0",
	  S(layout_width),
	  .desc = "layout = segments or striped: data servers per file; 0: every one up "
		  "(at most 15)." },
	{ "mds", NULL, "layout_mirrors", CONF_INT, .min = 1, .max = 8, .def = "1",
	  S(layout_mirrors),
	  .desc = "Copies of each file's data, on distinct data servers (clients write all, "
		  "read one)." },
	{ "mds", NULL, "layout_stripes", CONF_INT, .min = 2, .max = 16, .def = "2",
	  S(layout_stripes), .desc = "layout = striped: data servers per mirror." },
	{ "mds", NULL, "layout_stripe_unit", CONF_SIZE, .min = 4096, .max = 1 << 30,
	  .def = "1M", S(layout_stripe_unit),
	  .desc = "layout = striped: bytes per stripe unit, a power of two." },
	{ "mds", NULL, "delegations", CONF_ENUM, .values = deleg_modes, .def = "on",
	  S(delegations),
	  .desc = "Delegations OPEN may grant (RFC 8881 §10.4): on (read delegations for "
		  "reading, write delegations for writing), read (read delegations only), or "
		  "off.  A read delegation lets a client open and cache a file without asking "
		  "again until another client's write, SETATTR, REMOVE, RENAME or LINK recalls "
		  "it; a write delegation lets it cache writes too (close does not wait for "
		  "them), until another client's open or look at the file recalls it." },
	{ "mds", NULL, "delegations_max", CONF_INT, .min = 0, .max = 1 << 24, .def = "16384",
	  S(delegations_max),
	  .desc = "Delegations outstanding at most; past it OPEN grants none "
		  "(OPEN_DELEGATE_NONE_EXT, WND4_RESOURCE)." },
	{ "mds", NULL, "recall_any_above", CONF_INT, .min = 0, .max = 1 << 30, .def = "12288",
	  S(recall_any_above),
	  .desc = "When more delegations and layouts than this are outstanding, CB_RECALL_ANY "
		  "(at most once a lease per client) asks the clients holding them to return "
		  "those they do not use; 0: never." },
	{ "mds", NULL, "metrics_listen", CONF_ADDRS, S(metrics_listen),
	  .desc = "Addresses to serve Prometheus metrics on, over HTTP (GET /metrics); "
		  "none: no metrics server." },
	{ 0 }
};
#undef S

void mds_settings_default(struct mds_settings *s)
{
	struct conf_error err;
	memset(s, 0, sizeof(*s));
	conf_load_string(mds_conf_schema, s, "(defaults)", "", &err);
}

int mds_settings_load(const char *path, struct mds_settings *s, struct conf_error *err)
{
	memset(s, 0, sizeof(*s));
	return conf_load(mds_conf_schema, s, path, err);
}

void mds_log(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "braid-mds: %s\n", buf);
}

nfsstat4 mds_reg_file(const struct mds_attr *a)
{
	switch (a->type) {
	case MDS_REG:
		return NFS4_OK;
	case MDS_DIR:
		return NFS4ERR_ISDIR;
	case MDS_LNK:
		return NFS4ERR_SYMLINK;
	default:
		return NFS4ERR_WRONG_TYPE;
	}
}

/*
 * The one -errno -> nfsstat4 table (RFC 8881 §15.1).  Handlers narrow it
 * where §15.2 lists fewer errors for their op.
 */
nfsstat4 mds_nfs4_status(int err)
{
	switch (err) {
	case 0:
		return NFS4_OK;
	case -EPERM:
		return NFS4ERR_PERM;
	case -ENOENT:
		return NFS4ERR_NOENT;
	case -EIO:
	case -EREMOTEIO:
		return NFS4ERR_IO;
	case -ENXIO:
		return NFS4ERR_NXIO;
	case -EACCES:
		return NFS4ERR_ACCESS;
	case -EEXIST:
		return NFS4ERR_EXIST;
	case -EXDEV:
		return NFS4ERR_XDEV;
	case -ENOTDIR:
		return NFS4ERR_NOTDIR;
	case -EISDIR:
		return NFS4ERR_ISDIR;
	case -EINVAL:
		return NFS4ERR_INVAL;
	case -EFBIG:
		return NFS4ERR_FBIG;
	case -ENOSPC:
		return NFS4ERR_NOSPC;
	case -EROFS:
		return NFS4ERR_ROFS;
	case -EMLINK:
		return NFS4ERR_MLINK;
	case -ENAMETOOLONG:
		return NFS4ERR_NAMETOOLONG;
	case -ENOTEMPTY:
		return NFS4ERR_NOTEMPTY;
	case -EDQUOT:
		return NFS4ERR_DQUOT;
	case -ESTALE:
		return NFS4ERR_STALE;
	case -EBADMSG:
		return NFS4ERR_BADHANDLE;
	case -ENOTSUP:
		return NFS4ERR_NOTSUPP;
	case -ENODATA:
		return NFS4ERR_NOXATTR;
	case -E2BIG:
		return NFS4ERR_XATTR2BIG;
	case -ERANGE:
		return NFS4ERR_TOOSMALL;
	case -EAGAIN:
	case -EBUSY:
	case -ETIMEDOUT:
	case -ECONNREFUSED:
	case -ECONNRESET:
	case -EHOSTUNREACH:
	case -ENOTCONN:
		return NFS4ERR_DELAY;
	case -ENOMEM:
	default:
		return NFS4ERR_SERVERFAULT;
	}
}

/*
 * Exports.
 */
static uint32_t export_id_of(const char *path)
{
	/* fixed, not secret: ids must survive restarts and key changes */
	static const struct siphash_key k = { { 0x6272616964657870ULL, 0x6f72742d69642d31ULL } };
	uint64_t h = siphash24(&k, path, strlen(path));
	uint32_t id = (uint32_t)(h ^ (h >> 32));
	return id ? id : 1;
}

struct mds_exports *mds_exports_get(struct braid_mds *mds)
{
	pthread_mutex_lock(&mds->ex_mu);
	struct mds_exports *x = mds->ex;
	atomic_fetch_add(&x->ref, 1);
	pthread_mutex_unlock(&mds->ex_mu);
	return x;
}

static void exports_snapshot_free(struct mds_exports *x)
{
	if (!x)
		return;
	exports_free(x->ex);
	free(x->v);
	free(x);
}

void mds_exports_put(struct mds_exports *x)
{
	if (x && atomic_fetch_sub(&x->ref, 1) == 1)
		exports_snapshot_free(x);
}

const struct mds_export *mds_export_by_id(const struct mds_exports *x, uint32_t id)
{
	for (unsigned i = 0; i < x->n; i++)
		if (x->v[i].id == id)
			return &x->v[i];
	return NULL;
}

const struct mds_export *mds_export_by_root(const struct mds_exports *x, uint64_t ino)
{
	for (unsigned i = 0; i < x->n; i++)
		if (x->v[i].root_ino == ino)
			return &x->v[i];
	return NULL;
}

uint32_t mds_export_of_dir(struct braid_mds *mds, const struct mds_exports *x, uint64_t dir)
{
	uint64_t root = mds_store_root(mds->store);
	for (unsigned depth = 0; depth < 4096; depth++) {
		const struct mds_export *e = mds_export_by_root(x, dir);
		if (e)
			return e->id;
		if (dir == root)
			return 0;
		struct mds_attr a;
		if (mds_inode_getattr(mds->store, dir, &a) || a.type != MDS_DIR)
			return 0;
		dir = a.parent;
	}
	return 0;
}

bool mds_export_on_path(struct braid_mds *mds, const struct mds_exports *x, uint64_t dir)
{
	/* dir is on the way to an export when some export root has it as an ancestor */
	uint64_t root = mds_store_root(mds->store);
	for (unsigned i = 0; i < x->n; i++) {
		uint64_t ino = x->v[i].root_ino;
		for (unsigned depth = 0; depth < 4096; depth++) {
			if (ino == dir)
				return true;
			if (ino == root)
				break;
			struct mds_attr a;
			if (mds_inode_getattr(mds->store, ino, &a))
				break;
			ino = a.parent;
		}
	}
	return false;
}

/* Each export path as a directory of the namespace, made when missing. */
static int export_resolve(struct braid_mds *mds, const char *path, uint64_t *out, char *msg,
			  size_t msglen)
{
	uint64_t dir = mds_store_root(mds->store);
	const char *p = path;
	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		const char *end = strchr(p, '/');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		uint64_t ino;
		struct mds_attr a;
		int rc = mds_dir_lookup(mds->store, dir, p, len, &ino, &a);
		if (rc == -ENOENT) {
			struct mds_create_args ca = {
				.dir = dir,
				.name = p,
				.name_len = len,
				.type = MDS_DIR,
				.how = MDS_CREATE_UNCHECKED,
				.mode = 0755,
			};
			struct mds_create_res cr;
			rc = mds_dir_create(mds->store, &ca, &cr);
			if (rc == -EEXIST)
				rc = mds_dir_lookup(mds->store, dir, p, len, &ino, &a);
			else if (!rc) {
				ino = cr.attr.ino;
				a = cr.attr;
			}
		}
		if (!rc && a.type != MDS_DIR)
			rc = -ENOTDIR;
		if (rc) {
			snprintf(msg, msglen, "export %s: %.*s: %s", path, (int)len, p,
				 strerror(-rc));
			return rc;
		}
		dir = ino;
		p += len;
	}
	*out = dir;
	return 0;
}

static int exports_build(struct braid_mds *mds, struct mds_exports **out, char *msg,
			 size_t msglen)
{
	struct conf_error cerr;
	struct exports *ex = NULL;
	int rc = exports_load(mds->set.exports, &ex, &cerr);
	if (rc) {
		if (cerr.line)
			snprintf(msg, msglen, "%s:%u: %s", cerr.file, cerr.line, cerr.msg);
		else
			snprintf(msg, msglen, "exports %s: %s", mds->set.exports,
				 cerr.msg[0] ? cerr.msg : strerror(-rc));
		return rc;
	}
	struct mds_exports *x = calloc(1, sizeof(*x));
	if (!x || !(x->v = calloc(ex->n ? ex->n : 1, sizeof(*x->v)))) {
		free(x);
		exports_free(ex);
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	atomic_init(&x->ref, 1);
	x->ex = ex;
	for (unsigned i = 0; i < ex->n; i++) {
		struct mds_export *e = &x->v[x->n];
		e->e = &ex->v[i];
		e->id = export_id_of(ex->v[i].path);
		for (unsigned j = 0; j < x->n; j++)
			if (x->v[j].id == e->id) {
				snprintf(msg, msglen, "exports %s: %s and %s hash alike; rename one",
					 mds->set.exports, x->v[j].e->path, e->e->path);
				exports_snapshot_free(x);
				return -EINVAL;
			}
		for (unsigned j = 0; j < ex->v[i].nclients; j++) {
			const struct export_client *cl = &ex->v[i].clients[j];
			x->names |= cl->kind == EXPORT_CLIENT_WILDCARD ||
				    (cl->kind == EXPORT_CLIENT_HOST && !cl->family);
		}
		if ((rc = export_resolve(mds, ex->v[i].path, &e->root_ino, msg, msglen))) {
			exports_snapshot_free(x);
			return rc;
		}
		x->n++;
	}
	/* layout= options: checked, then set on the export roots (op_layout.c) */
	if ((rc = mds_layout_exports_apply(mds, x, msg, msglen))) {
		exports_snapshot_free(x);
		return rc;
	}
	*out = x;
	return 0;
}

int braid_mds_exports_reload(struct braid_mds *mds, char *msg, size_t msglen)
{
	struct mds_exports *x;
	int rc = exports_build(mds, &x, msg, msglen);
	if (rc)
		return rc;
	pthread_mutex_lock(&mds->ex_mu);
	struct mds_exports *old = mds->ex;
	mds->ex = x;
	pthread_mutex_unlock(&mds->ex_mu);
	mds_exports_put(old);
	return 0;
}

/*
 * Client names for exports(5) host names and wildcards: reverse lookups of
 * peer addresses, cached (misses too) for a minute so a name-matched export
 * costs one lookup per client per minute, not one per request.
 */
#define NAME_CACHE   64
#define NAME_TTL_SEC 60
struct name_entry {
	struct sockaddr_storage addr;
	char name[NI_MAXHOST]; /* "" when the address has no name */
	time_t expires;
};
static struct name_entry name_cache[NAME_CACHE];
static unsigned name_next;
static pthread_mutex_t name_mu = PTHREAD_MUTEX_INITIALIZER; /* guards name_cache, name_next */

static bool addr_same(const struct sockaddr_storage *a, const struct sockaddr *b)
{
	if (a->ss_family != b->sa_family)
		return false;
	if (b->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (b->sa_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
	return false;
}

static bool peer_name(const struct sockaddr *peer, char *name, size_t size)
{
	time_t now = time(NULL);
	pthread_mutex_lock(&name_mu);
	for (unsigned i = 0; i < NAME_CACHE; i++)
		if (name_cache[i].expires > now && addr_same(&name_cache[i].addr, peer)) {
			snprintf(name, size, "%s", name_cache[i].name);
			pthread_mutex_unlock(&name_mu);
			return name[0] != 0;
		}
	pthread_mutex_unlock(&name_mu);
	socklen_t len = peer->sa_family == AF_INET ? sizeof(struct sockaddr_in)
						   : sizeof(struct sockaddr_in6);
	char host[NI_MAXHOST];
	if (getnameinfo(peer, len, host, sizeof(host), NULL, 0, NI_NAMEREQD))
		host[0] = 0;
	pthread_mutex_lock(&name_mu);
	struct name_entry *e = &name_cache[name_next++ % NAME_CACHE];
	memset(&e->addr, 0, sizeof(e->addr));
	memcpy(&e->addr, peer, len);
	snprintf(e->name, sizeof(e->name), "%s", host);
	e->expires = now + NAME_TTL_SEC;
	pthread_mutex_unlock(&name_mu);
	snprintf(name, size, "%s", host);
	return host[0] != 0;
}

const struct export_client *mds_exports_match(const struct mds_exports *x, const char *path,
					      const struct sockaddr *peer)
{
	const struct export_entry *e = exports_find(x->ex, path);
	bool names = false;
	for (unsigned i = 0; e && i < e->nclients && !names; i++)
		names = e->clients[i].kind == EXPORT_CLIENT_WILDCARD ||
			(e->clients[i].kind == EXPORT_CLIENT_HOST && !e->clients[i].family);
	char name[NI_MAXHOST];
	if (names && (peer->sa_family == AF_INET || peer->sa_family == AF_INET6) &&
	    peer_name(peer, name, sizeof(name)))
		return exports_match(x->ex, path, peer, name);
	return exports_match(x->ex, path, peer, NULL);
}

/*
 * Credentials and filehandles in a COMPOUND.
 */
static bool flavor_allowed(const struct export_client *cl, uint32_t flavor)
{
	for (unsigned i = 0; i < cl->nsec; i++) {
		if (cl->sec[i] == flavor)
			return true;
		/* AUTH_NONE is served where AUTH_SYS is, as the anonymous user */
		if (flavor == EXPORT_SEC_NONE && cl->sec[i] == EXPORT_SEC_SYS)
			return true;
	}
	return false;
}

int mds_peer_text(const struct sockaddr_storage *ss, char host[INET6_ADDRSTRLEN])
{
	if (host)
		strcpy(host, "?");
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
		if (host)
			inet_ntop(AF_INET, &in->sin_addr, host, INET6_ADDRSTRLEN);
		return ntohs(in->sin_port);
	}
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
		if (host && IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
			inet_ntop(AF_INET, in6->sin6_addr.s6_addr + 12, host, INET6_ADDRSTRLEN);
		else if (host)
			inet_ntop(AF_INET6, &in6->sin6_addr, host, INET6_ADDRSTRLEN);
		return ntohs(in6->sin6_port);
	}
	return -1;
}

/*
 * exports(5) "secure" (the default), as knfsd applies it to every NFS
 * request: AUTH_SYS and AUTH_NONE calls only from a reserved port, the
 * kernel client's; RPCSEC_GSS proves who calls by itself.  A refusal is
 * NFS4ERR_PERM, logged at most every 10 s.
 */
static bool port_ok(const struct export_client *cl, uint32_t flavor, const struct sockaddr *peer)
{
	if (cl->flags & EXPORT_INSECURE || flavor == NFSD_RPCSEC_GSS)
		return true;
	const struct sockaddr_storage *ss = (const struct sockaddr_storage *)peer;
	int port = mds_peer_text(ss, NULL); /* every op: no text unless logged */
	if (port >= 0 && port < IPPORT_RESERVED)
		return true;
	static _Atomic uint64_t last_ns;
	static atomic_uint quiet;
	uint64_t now = nfsd_now_ns(), then = atomic_load(&last_ns);
	if ((then && now - then < 10000000000ull) ||
	    !atomic_compare_exchange_strong(&last_ns, &then, now)) {
		atomic_fetch_add(&quiet, 1);
		return false;
	}
	char host[INET6_ADDRSTRLEN];
	mds_peer_text(ss, host);
	mds_log("refused a request from %s port %d: the export is \"secure\" (the default) and "
		"the port is not reserved; \"insecure\" allows it (%u more refused since the "
		"last line)",
		host, port, atomic_exchange(&quiet, 0));
	return false;
}

/* nfs41_server_opts.inline_ok: no export matching by name (getnameinfo) */
static bool mds_inline_ok(void *priv, const struct nfsd_req *req)
{
	struct mds_exports *x = mds_exports_get(priv);
	bool ok = !x->names;
	mds_exports_put(x);
	return ok;
}

nfsstat4 mds_req_cred(struct nfs41_compound *c, uint32_t export_id, struct mds_cred *cred)
{
	nfsstat4 st = mds_call_cred(mds_of(c), c->req, export_id, cred);
	cred->clientid = c->clientid;
	return st;
}

nfsstat4 mds_call_cred(struct braid_mds *mds, const struct nfsd_req *req, uint32_t export_id,
		       struct mds_cred *cred)
{
	const struct nfsd_cred *rc = &req->cred;
	memset(cred, 0, sizeof(*cred));
	cred->flavor = nfsd_cred_pseudoflavor(rc);
	cred->export_id = export_id;
	if (rc->flavor == NFSD_AUTH_SYS || rc->flavor == NFSD_RPCSEC_GSS) {
		cred->uid = rc->uid;
		cred->gid = rc->gid;
		cred->ngroups = rc->ngroups < MDS_CRED_GROUPS ? rc->ngroups : MDS_CRED_GROUPS;
		for (uint32_t i = 0; i < cred->ngroups; i++)
			cred->groups[i] = rc->groups[i];
	} else {
		cred->uid = cred->gid = 65534;
	}
	if (export_id == 0) {
		cred->pseudo = true;
		return NFS4_OK;
	}
	struct mds_exports *x = mds_exports_get(mds);
	nfsstat4 st = NFS4_OK;
	const struct mds_export *e = mds_export_by_id(x, export_id);
	if (!e) {
		st = NFS4ERR_STALE; /* no longer exported */
		goto out;
	}
	struct sockaddr_in any = { .sin_family = AF_INET };
	const struct sockaddr *peer = req->conn ? (const struct sockaddr *)nfsd_req_peer(req)
						 : (const struct sockaddr *)&any;
	const struct export_client *cl = mds_exports_match(x, e->e->path, peer);
	if (!cl) {
		st = NFS4ERR_ACCESS;
		goto out;
	}
	if (!flavor_allowed(cl, cred->flavor) && !rc->sp4_allow) {
		st = NFS4ERR_WRONGSEC;
		goto out;
	}
	if (req->conn && !port_ok(cl, rc->flavor, peer)) {
		st = NFS4ERR_PERM;
		goto out;
	}
	if (rc->flavor != NFSD_AUTH_SYS && rc->flavor != NFSD_RPCSEC_GSS) {
		cred->uid = cl->anonuid;
		cred->gid = cl->anongid;
	}
	export_squash(cl, &cred->uid, &cred->gid, cred->groups, &cred->ngroups);
	cred->rw = (cl->flags & EXPORT_RW) != 0;
out:
	mds_exports_put(x);
	return st;
}

nfsstat4 mds_call_fh(struct braid_mds *mds, const struct nfsd_req *req, const uint8_t *p,
		     uint32_t len, struct mds_fh *fhp, struct mds_attr *attrp, struct mds_cred *credp)
{
	struct mds_fh fh;
	struct mds_attr a;
	struct mds_cred cr;
	if (mds_fh_parse(mds, p, len, &fh))
		return NFS4ERR_BADHANDLE;
	int rc = mds_inode_getattr(mds->store, fh.ino, &a);
	if (rc)
		return rc == -ESTALE ? NFS4ERR_STALE : mds_nfs4_status(rc);
	if (a.generation != fh.gen)
		return NFS4ERR_STALE;
	nfsstat4 st = mds_call_cred(mds, req, fh.export_id, &cr);
	if (st)
		return st;
	if (fhp)
		*fhp = fh;
	if (attrp)
		*attrp = a;
	if (credp)
		*credp = cr;
	return NFS4_OK;
}

nfsstat4 mds_cfh(struct nfs41_compound *c, struct mds_fh *fh, struct mds_attr *attr,
		 struct mds_cred *cred)
{
	if (!c->have_fh)
		return NFS4ERR_NOFILEHANDLE;
	nfsstat4 st = mds_call_fh(mds_of(c), c->req, c->fh, c->fhlen, fh, attr, cred);
	if (!st && cred)
		cred->clientid = c->clientid;
	return st;
}

nfsstat4 mds_sfh(struct nfs41_compound *c, struct mds_fh *fh, struct mds_attr *attr,
		 struct mds_cred *cred)
{
	if (!c->have_saved_fh)
		return NFS4ERR_NOFILEHANDLE;
	nfsstat4 st = mds_call_fh(mds_of(c), c->req, c->saved_fh, c->saved_fhlen, fh, attr, cred);
	if (!st && cred)
		cred->clientid = c->clientid;
	return st;
}

void mds_set_cfh(struct nfs41_compound *c, uint64_t ino, uint64_t gen, uint32_t export_id)
{
	uint8_t b[MDS_FH_SIZE];
	struct mds_fh fh = { .ino = ino, .gen = gen, .export_id = export_id };
	mds_fh_make(mds_of(c), &fh, b);
	nfs41_compound_set_fh(c, b, sizeof(b));
}

uint32_t mds_access(const struct mds_cred *cred, const struct mds_attr *attr, uint32_t want)
{
	uint32_t mode = attr->mode;
	unsigned bits; /* rwx that apply */
	if (cred->uid == 0) {
		bits = 7;
		if (attr->type != MDS_DIR && !(mode & 0111))
			bits &= ~1u;
	} else if (cred->uid == attr->uid) {
		bits = (mode >> 6) & 7;
	} else {
		bool in_group = cred->gid == attr->gid;
		for (uint32_t i = 0; !in_group && i < cred->ngroups; i++)
			in_group = cred->groups[i] == attr->gid;
		bits = in_group ? (mode >> 3) & 7 : mode & 7;
	}
	uint32_t ok = 0;
	if (bits & 4)
		ok |= ACCESS4_READ | ACCESS4_XAREAD | ACCESS4_XALIST;
	if (bits & 2)
		ok |= ACCESS4_MODIFY | ACCESS4_EXTEND | ACCESS4_XAWRITE;
	if ((bits & 2) && attr->type == MDS_DIR)
		ok |= ACCESS4_DELETE;
	if (bits & 1)
		ok |= attr->type == MDS_DIR ? ACCESS4_LOOKUP : ACCESS4_EXECUTE;
	if (!cred->rw || cred->pseudo)
		ok &= ~(uint32_t)(ACCESS4_MODIFY | ACCESS4_EXTEND | ACCESS4_DELETE |
				  ACCESS4_XAWRITE);
	return ok & want;
}

/*
 * Start and stop.
 */
static int op_table_build(struct braid_mds *mds, char *msg, size_t msglen)
{
	const struct mds_opdef *groups[] = { mds_ops_attr, mds_ops_dir, mds_ops_state,
					     mds_ops_io, mds_ops_layout, mds_ops_v40 };
	for (unsigned g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
		for (const struct mds_opdef *d = groups[g]; d->op; d++) {
			if (d->op > OP_REMOVEXATTR || mds->ops[d->op].fn) {
				snprintf(msg, msglen, "op table: op %u defined twice", d->op);
				return -EINVAL;
			}
			mds->ops[d->op] = d->row;
		}
	return 0;
}

/* Listen on one address, TCP or RPC-over-RDMA; the error says where and why. */
static int listen_one(struct braid_mds *mds, const struct sockaddr_storage *ss, bool rdma,
		      char *msg, size_t msglen)
{
	socklen_t len = ss->ss_family == AF_INET ? sizeof(struct sockaddr_in)
						 : sizeof(struct sockaddr_in6);
	int rc = rdma ? nfsd_server_listen_rdma(mds->srv, (const struct sockaddr *)ss, len)
		      : nfsd_server_listen(mds->srv, (const struct sockaddr *)ss, len);
	if (rc) {
		char a[INET6_ADDRSTRLEN] = "?";
		const void *ap = ss->ss_family == AF_INET
					 ? (const void *)&((const struct sockaddr_in *)ss)->sin_addr
					 : (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr;
		inet_ntop(ss->ss_family, ap, a, sizeof(a));
		snprintf(msg, msglen, "%s on %s: %s%s", rdma ? "rdma_listen" : "listen", a,
			 strerror(-rc), rdma ? nfsd_rdma_listen_hint(rc) : "");
	}
	return rc;
}

static int listen_all(struct braid_mds *mds, char *msg, size_t msglen)
{
	int rc;
	for (unsigned i = 0; i < mds->set.listen.n; i++) {
		if ((rc = listen_one(mds, &mds->set.listen.addr[i], false, msg, msglen)))
			return rc;
		mds->ports[i] = nfsd_server_listen_port(mds->srv, i);
	}
	mds->nports = mds->set.listen.n;
	for (unsigned i = 0; i < mds->set.rdma_listen.n; i++)
		if ((rc = listen_one(mds, &mds->set.rdma_listen.addr[i], true, msg, msglen)))
			return rc;
	return 0;
}

int braid_mds_start(const struct mds_settings *set, struct braid_mds **out, char *msg,
		    size_t msglen)
{
	struct braid_mds *mds = calloc(1, sizeof(*mds));
	if (!mds) {
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	mds->set = *set;
	mds->boot_sec = (uint64_t)time(NULL);
	pthread_mutex_init(&mds->ex_mu, NULL);
	int rc;
	if ((rc = braid_key_load(set->key_file, &mds->key, msg, msglen)))
		goto fail;
	if (mkdir(set->store_dir, 0700) && errno != EEXIST) {
		rc = -errno;
		snprintf(msg, msglen, "store %s: %s", set->store_dir, strerror(-rc));
		goto fail;
	}
	struct mds_store_opts so = { .path = set->store_dir };
	if ((rc = mds_store_open(&so, &mds->store))) {
		snprintf(msg, msglen, "store %s: %s%s", set->store_dir, strerror(-rc),
			 rc == -EBUSY ? " (another braid-mds has it open)" : "");
		goto fail;
	}
	/* server_owner and scope: the same on every address and across restarts */
	uint8_t verf[8];
	mds_store_cookieverf(mds->store, verf);
	int n = snprintf((char *)mds->so_major, sizeof(mds->so_major), "braid-mds:");
	for (int i = 0; i < 8; i++)
		n += snprintf((char *)mds->so_major + n, sizeof(mds->so_major) - (size_t)n,
			      "%02x", verf[i]);
	mds->so_major_len = (size_t)n;
	if ((rc = exports_build(mds, &mds->ex, msg, msglen)))
		goto fail;
	if ((rc = op_table_build(mds, msg, msglen)))
		goto fail;

	if (!(mds->metrics = nfsd_metrics_new())) {
		rc = -ENOMEM;
		snprintf(msg, msglen, "out of memory");
		goto fail;
	}
	struct nfsd_server_opts o;
	nfsd_server_opts_default(&o);
	o.metrics = mds->metrics;
	o.nloops = (unsigned)set->loops;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	o.nworkers = set->workers ? (unsigned)set->workers : (unsigned)(ncpu > 0 ? ncpu : 1) * 32;
	o.max_record = (1u << 20) + 64 * 1024;
	o.arena_limit = 4u << 20;
	if (!(mds->srv = nfsd_server_new(&o, &rc))) {
		snprintf(msg, msglen, "RPC server: %s", strerror(-rc));
		goto fail;
	}
	if (!(mds->auth = braid_auth_new(&mds->key))) {
		rc = -ENOMEM;
		snprintf(msg, msglen, "out of memory");
		goto fail;
	}
	nfsd_server_add_flavor(mds->srv, braid_auth_flavor(mds->auth));
	if (set->keytab[0]) {
		struct nfsd_gss_opts go = { .keytab = set->keytab };
		if (!(mds->gss = nfsd_gss_new(&go, &rc))) {
			snprintf(msg, msglen, "keytab %s: %s", set->keytab,
				 rc == -ENOENT ? "no usable keys (missing, unreadable, or no "
						 "nfs/ principal)"
					       : strerror(-rc));
			goto fail;
		}
		nfsd_server_add_flavor(mds->srv, nfsd_gss_flavor(mds->gss));
	}

	if ((rc = mds_cb_init(mds))) {
		snprintf(msg, msglen, "out of memory");
		goto fail;
	}
	if (!(mds->data = mds_data_new())) {
		rc = -ENOMEM;
		snprintf(msg, msglen, "out of memory");
		goto fail;
	}
	if ((rc = mds_state_init(mds, msg, msglen)) || (rc = mds_dsreg_init(mds, msg, msglen)) ||
	    (rc = mds_space_init(mds, msg, msglen)) || (rc = mds_layout_init(mds, msg, msglen)) ||
	    (rc = mds_resilver_init(mds, msg, msglen)) || (rc = mds_ec_init(mds, msg, msglen)) ||
	    (rc = mds_ec_scrub_init(mds, msg, msglen)) ||
	    (rc = mds_ec_rebuild_init(mds, msg, msglen)) ||
	    (rc = mds_mount_init(mds, msg, msglen)) || (rc = mds_nlm_init(mds, msg, msglen)) ||
	    (rc = mds_admin_init(mds, msg, msglen)))
		goto fail;
	if ((rc = mds_data_releaser_start(mds))) {
		snprintf(msg, msglen, "the releaser thread: %s", strerror(-rc));
		goto fail;
	}

	struct nfs41_server_opts no = {
		.so_major = mds->so_major,
		.so_major_len = mds->so_major_len,
		.scope = mds->so_major,
		.scope_len = mds->so_major_len,
		.exchgid_flags = EXCHGID4_FLAG_USE_PNFS_MDS,
		.lease_s = (unsigned)(set->lease_ms / 1000),
		.max_slots = 64,
		.callbacks = true,
		.ops = mds->ops,
		.nops = OP_REMOVEXATTR + 1,
		.priv = mds,
		.client_expired = mds_state_client_expired,
		.client_has_state = mds_state_client_has_state,
		.status_flags = mds_state_seq_flags,
		.inline_ok = mds_inline_ok,
		.metrics = mds->metrics,
		/* NFSv4.0 (RFC 7530): mds/op_v40.c, mds/callback.c */
		.v40 = true,
		.v40_begin = mds_v40_begin,
		.v40_end = mds_v40_end,
		.cb40_changed = mds_cb40_changed,
		.cb_path_down = mds_v40_cb_path_down,
		.gss = mds->gss,
	};
	if (!(mds->v41 = nfs41_server_new(&no, &rc))) {
		snprintf(msg, msglen, "NFSv4.1 service: %s", strerror(-rc));
		goto fail;
	}
	/* NFS is one program number: v3 here and v4 from the session layer,
	 * each version with its own handler state */
	unsigned nv = 0;
	if (set->nfs3 && (rc = mds_nfs3_init(mds, &mds->nfs_vers[nv++]))) {
		snprintf(msg, msglen, "out of memory");
		goto fail;
	}
	mds->nfs_vers[nv++] = nfs41_server_program(mds->v41)->versions[0];
	mds->nfs_prog = *nfs41_server_program(mds->v41);
	mds->nfs_prog.versions = mds->nfs_vers;
	mds->nfs_prog.nversions = nv;
	if ((rc = nfsd_server_add_program(mds->srv, &mds->nfs_prog)))
		goto fail_prog;
	const struct nfsd_program *cp = mds_dsreg_program(mds);
	if (cp && (rc = nfsd_server_add_program(mds->srv, cp)))
		goto fail_prog;
	const struct nfsd_program *mp = mds_mount_program(mds);
	if (mp && (rc = nfsd_server_add_program(mds->srv, mp)))
		goto fail_prog;
	if (mds_nlm_program(mds) &&
	    ((rc = nfsd_server_add_program(mds->srv, mds_nlm_program(mds))) ||
	     (rc = nfsd_server_add_program(mds->srv, mds_nsm_program(mds)))))
		goto fail_prog;
	if ((rc = nfsd_server_add_program(mds->srv, mds_admin_program(mds))))
		goto fail_prog;
	if ((rc = listen_all(mds, msg, msglen)))
		goto fail;
	if ((rc = nfsd_server_start(mds->srv))) {
		snprintf(msg, msglen, "RPC server start: %s", strerror(-rc));
		goto fail;
	}
	if ((rc = mds_nlm_start(mds, msg, msglen)))
		goto fail;
	if (set->metrics_listen.n &&
	    (rc = nfsd_metrics_http_start(mds->metrics, set->metrics_listen.addr,
					  set->metrics_listen.n, &mds->metrics_http, msg, msglen)))
		goto fail;
	mds_mount_rpcbind_set(mds);
	*out = mds;
	return 0;
fail_prog:
	snprintf(msg, msglen, "adding RPC programs: %s", strerror(-rc));
fail:
	braid_mds_stop(mds);
	return rc;
}

void braid_mds_stop(struct braid_mds *mds)
{
	if (!mds)
		return;
	nfsd_metrics_http_stop(mds->metrics_http); /* no render runs a collector past here */
	if (mds->srv && mds->nports)
		mds_mount_rpcbind_unset(mds);
	mds_data_releaser_stop(mds); /* it calls data servers and the layout layer */
	mds_resilver_stop(mds); /* its thread calls data servers and the layout layer */
	mds_ec_scrub_stop(mds); /* the scrub calls data servers and holds files */
	mds_ec_stop(mds);	/* so does the sealer */
	mds_layout_stop(mds); /* its thread calls clients back and data servers */
	mds_state_stop(mds);  /* the delegation thread calls clients back */
	mds_nlm_stop(mds);    /* its thread calls NFSv3 clients back */
	mds_space_stop(mds);  /* its thread calls data servers; notes stop counting */
	if (mds->srv)
		nfsd_server_free(mds->srv);
	mds_cb_stop(mds); /* NFSv4.0 callback probes ask the session layer */
	if (mds->v41)
		nfs41_server_free(mds->v41);
	mds_admin_release(mds);
	mds_nfs3_release(mds);
	mds_nlm_release(mds); /* its locks are in the state's table */
	mds_mount_release(mds);
	mds_resilver_release(mds);
	mds_ec_scrub_release(mds);
	mds_ec_release(mds);
	mds_ec_rebuild_release(mds); /* after the resilver, whose workers rebuild */
	mds_dsreg_release(mds);
	mds_layout_release(mds); /* after dsreg's thread, which asks it */
	mds_space_release(mds);	 /* after everything that notes */
	mds_data_free(mds->data); /* after both threads, which use it */
	mds_state_release(mds);
	mds_cb_release(mds);
	braid_auth_free(mds->auth);
	if (mds->gss)
		nfsd_gss_free(mds->gss); /* after the server: no call holds a context */
	mds_exports_put(mds->ex);
	if (mds->store)
		mds_store_close(mds->store);
	pthread_mutex_destroy(&mds->ex_mu);
	nfsd_metrics_free(mds->metrics);
	memset(&mds->key, 0, sizeof(mds->key));
	free(mds);
}

int braid_mds_port(const struct braid_mds *mds, unsigned idx)
{
	return idx < mds->nports ? mds->ports[idx] : -1;
}

unsigned braid_mds_nports(const struct braid_mds *mds)
{
	return mds->nports;
}

int braid_mds_metrics_port(const struct braid_mds *mds, unsigned idx)
{
	return nfsd_metrics_http_port(mds->metrics_http, idx);
}

struct mds_store *braid_mds_store(struct braid_mds *mds)
{
	return mds->store;
}
