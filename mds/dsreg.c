/* SPDX-License-Identifier: MIT */
/*
 * Data servers: the REGISTER/HEARTBEAT side of the control protocol
 * (nfsd/xdr/braid_ctl.x), the table of data servers, placement, the MDS's
 * connections to them, and the life of file objects (creation, truncation,
 * removal of orphans, fencing) with the maps that say where each segment
 * of a file lives (mds_impl.h "File objects"; layout/policy.h places
 * them).
 *
 * Identity.  A data server is named by the uuid it keeps with its storage;
 * the MDS binds each uuid to an id (1, 2, ...; never reused) at its first
 * REGISTER and keeps the binding in <store_dir>/data-servers, written with
 * fsync + rename + fsync of the directory before the REGISTER reply, so the
 * id survives restarts of both sides.  Each line is "id uuid", then
 * "drained" for a data server the administrator drained (placement skips
 * it) or "removed" for one forgotten (a tombstone: its id is never given
 * again, and its uuid registering anew gets a new id).  Everything else about a data server
 * (addresses, versions, space, boot verifier) is soft state: after an MDS
 * restart each data server's next HEARTBEAT is answered STALE and it
 * registers again.
 *
 * Only holders of the cluster key may call: REGISTER and HEARTBEAT without
 * an AUTH_BRAID credential (which nfsd/auth_braid.c has verified before a
 * handler runs) get BRAID_CTL_ACCESS, as braid-ds does for its procedures.
 *
 * A data server is up while it has registered since this MDS started and
 * its last REGISTER or HEARTBEAT is younger than [mds] ds_timeout.  The MDS
 * calls a data server (control calls, and NFSv3 for the MDS's own I/O) on
 * its first TCP control address, over one reconnecting client made at the
 * first use after each REGISTER; each call times out after ds_timeout
 * (between 5 and 30 s), so a dead data server costs a caller at most that.
 *
 * A background thread notes data servers going down and, outside the grace
 * period, retries the removal of orphans' objects (at start, after every
 * REGISTER, and every minute).  An orphan whose layouts clients still hold
 * waits until they are returned or fenced (mds_layout_release_hold).
 *
 * Segments.  A file's set of data servers is chosen when it is first laid
 * out and each segment is placed when first reached (a WRITE through the
 * MDS or a LAYOUTGET), both under the inode's object lock; placement skips
 * data servers that are down, draining, read-only, without NFSv3 (the MDS
 * proxies over it) or reported failing by clients.
 */
#include "config.h"

#include "braid_ctl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl/client.h"
#include "layout/fence.h"
#include "layout/policy.h"
#include "mds/mds_impl.h"

#define DSREG_FILE	  "data-servers"
#define OBJ_LOCKS	  64
#define SWEEP_INTERVAL_NS (60ull * 1000000000ull)
#define SWEEP_BATCH	  1024
#define RELEASE_MAX_DS	  64

/* One data server.  Every field is guarded by mds_dsreg.mu. */
struct ds_ent {
	struct mds_ds_info i;		/* up and since_heartbeat_ms are computed on copy */
	uint64_t hb_ns;			/* CLOCK_MONOTONIC of the last REGISTER or HEARTBEAT */
	bool was_up;			/* as the background thread last saw it (logging) */
	struct sockaddr_storage ctl_sa; /* the first TCP control address */
	socklen_t ctl_salen;
	uint64_t epoch;		  /* moves at every REGISTER */
	struct mds_ds_conn *conn; /* the table's reference; NULL until first use */
	bool removed;		  /* forgotten (mds_dsreg_forget): a tombstone */
};

/*
 * Locks: reg_mu serializes REGISTERs (id assignment and the file), taken
 * before mu; mu guards ents[], nents and every ds_ent; obj_mu[ino % 64]
 * serializes creating, repairing and removing one inode's objects (held
 * across control calls, never while holding mu); tmu guards stop and kick.
 * Entries are only ever added, so an ds_ent pointer stays valid.
 */
struct mds_dsreg {
	struct braid_mds *mds;
	struct nfsd_program prog;
	struct nfsd_server *eng; /* client engine: the MDS's calls to data servers */
	char path[PATH_MAX + 32];
	unsigned call_timeout_ms;

	pthread_mutex_t reg_mu;
	pthread_mutex_t mu;
	struct ds_ent **ents;
	unsigned nents, cap;
	uint32_t next_id;

	pthread_mutex_t obj_mu[OBJ_LOCKS];

	pthread_mutex_t tmu;
	pthread_cond_t tcond;
	bool stop, kick;
	bool running;
	pthread_t thread;
	atomic_ullong rng;
};

/* Tombstones included: ids are unique among every entry. */
static struct ds_ent *ent_find_any(struct mds_dsreg *r, uint32_t id)
{
	for (unsigned i = 0; i < r->nents; i++)
		if (r->ents[i]->i.id == id)
			return r->ents[i];
	return NULL;
}

static struct ds_ent *ent_find(struct mds_dsreg *r, uint32_t id)
{
	struct ds_ent *e = ent_find_any(r, id);
	return e && !e->removed ? e : NULL;
}

static struct ds_ent *ent_find_uuid(struct mds_dsreg *r, const uint8_t uuid[16])
{
	for (unsigned i = 0; i < r->nents; i++)
		if (!r->ents[i]->removed && !memcmp(r->ents[i]->i.uuid, uuid, 16))
			return r->ents[i];
	return NULL;
}

static bool ent_up(const struct mds_dsreg *r, const struct ds_ent *e, uint64_t now)
{
	return !e->removed && e->i.registered &&
	       now - e->hb_ns < r->mds->set.ds_timeout_ms * 1000000ull;
}

static int ent_add(struct mds_dsreg *r, uint32_t id, const uint8_t uuid[16])
{
	if (r->nents == r->cap) {
		unsigned cap = r->cap ? 2 * r->cap : 8;
		struct ds_ent **v = realloc(r->ents, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		r->ents = v;
		r->cap = cap;
	}
	struct ds_ent *e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->i.id = id;
	memcpy(e->i.uuid, uuid, 16);
	r->ents[r->nents++] = e;
	if (id >= r->next_id)
		r->next_id = id + 1;
	return 0;
}

static void ent_copy(const struct mds_dsreg *r, const struct ds_ent *e, uint64_t now,
		     struct mds_ds_info *out)
{
	*out = e->i;
	out->up = ent_up(r, e, now);
	out->since_heartbeat_ms = e->i.registered ? (now - e->hb_ns) / 1000000ull : 0;
}

/* ------------------------------------------------------- the bindings file */

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Reads "id uuid" lines; a missing file is an empty table. */
static int bindings_load(struct mds_dsreg *r, char *msg, size_t msglen)
{
	FILE *f = fopen(r->path, "re");
	if (!f) {
		if (errno == ENOENT)
			return 0;
		int rc = -errno;
		snprintf(msg, msglen, "%s: %s", r->path, strerror(-rc));
		return rc;
	}
	char line[256];
	unsigned lineno = 0;
	int rc = 0;
	while (!rc && fgets(line, sizeof(line), f)) {
		lineno++;
		char *p = line;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '#' || *p == '\n' || *p == 0)
			continue;
		unsigned long id;
		char hex[64], flag[16] = "";
		uint8_t uuid[16];
		char extra;
		int nf = sscanf(p, "%lu %63s %15s %c", &id, hex, flag, &extra);
		bool drained = !strcmp(flag, "drained"), removed = !strcmp(flag, "removed");
		bool ok = (nf == 2 || (nf == 3 && (drained || removed))) && id > 0 &&
			  id < UINT32_MAX && strlen(hex) == 32;
		for (int k = 0; ok && k < 16; k++) {
			int hi = hexval(hex[2 * k]), lo = hexval(hex[2 * k + 1]);
			ok = hi >= 0 && lo >= 0;
			uuid[k] = (uint8_t)(hi << 4 | lo);
		}
		if (ok && (ent_find_any(r, (uint32_t)id) || (!removed && ent_find_uuid(r, uuid)))) {
			snprintf(msg, msglen, "%s:%u: id or uuid listed twice", r->path, lineno);
			rc = -EINVAL;
		} else if (!ok) {
			snprintf(msg, msglen,
				 "%s:%u: expected \"id uuid\" (32 hex digits), then "
				 "\"drained\" or \"removed\" or nothing",
				 r->path, lineno);
			rc = -EINVAL;
		} else if ((rc = ent_add(r, (uint32_t)id, uuid))) {
			snprintf(msg, msglen, "out of memory");
		} else {
			r->ents[r->nents - 1]->i.drained = drained;
			r->ents[r->nents - 1]->removed = removed;
		}
	}
	if (!rc && ferror(f)) {
		rc = -EIO;
		snprintf(msg, msglen, "%s: read error", r->path);
	}
	fclose(f);
	return rc;
}

/* One line of the bindings file. */
struct binding {
	uint32_t id;
	uint8_t uuid[16];
	bool drained, removed;
};

/* The table's bindings (with room for one more at the end): malloc'd. */
static struct binding *bindings_snapshot(struct mds_dsreg *r, unsigned *n)
{
	pthread_mutex_lock(&r->mu);
	struct binding *b = malloc((r->nents + 1) * sizeof(*b));
	for (unsigned k = 0; b && k < r->nents; k++) {
		const struct ds_ent *e = r->ents[k];
		b[k] =
		    (struct binding){.id = e->i.id, .drained = e->i.drained, .removed = e->removed};
		memcpy(b[k].uuid, e->i.uuid, 16);
	}
	*n = r->nents;
	pthread_mutex_unlock(&r->mu);
	return b;
}

/* Writes the n bindings durably. */
static int bindings_save(struct mds_dsreg *r, const struct binding *b, unsigned n)
{
	char tmp[sizeof(r->path) + 8];
	snprintf(tmp, sizeof(tmp), "%s.tmp", r->path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		int rc = -errno;
		close(fd);
		unlink(tmp);
		return rc;
	}
	fprintf(f, "# braid-mds: data server id and uuid, one per line (written by braid-mds)\n");
	for (unsigned i = 0; i < n; i++) {
		fprintf(f, "%u ", b[i].id);
		for (int k = 0; k < 16; k++)
			fprintf(f, "%02x", b[i].uuid[k]);
		fputs(b[i].removed ? " removed\n" : b[i].drained ? " drained\n" : "\n", f);
	}
	int rc = 0;
	if (fflush(f) || fsync(fd))
		rc = -errno;
	if (fclose(f) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, r->path))
		rc = -errno;
	if (rc) {
		unlink(tmp);
		return rc;
	}
	int dfd = open(r->mds->set.store_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (fsync(dfd))
		rc = -errno;
	close(dfd);
	return rc;
}

/* ------------------------------------------------------------- REGISTER */

/* A bounded XDR string as a C string: false if it holds a NUL or control byte. */
static bool str_copy(char *dst, size_t size, xdr_string s)
{
	if (s.len >= size)
		return false;
	for (uint32_t i = 0; i < s.len; i++)
		if (s.val[i] < 0x20 || s.val[i] == 0x7f)
			return false;
	memcpy(dst, s.val, s.len);
	dst[s.len] = 0;
	return true;
}

/* "h1.h2.h3.h4.p1.p2" (or an IPv6 host) under netid: 0 and the socket address. */
static int uaddr_parse(const char *netid, const char *ua, struct sockaddr_storage *ss,
		       socklen_t *len)
{
	int af;
	if (!strcmp(netid, "tcp") || !strcmp(netid, "rdma"))
		af = AF_INET;
	else if (!strcmp(netid, "tcp6") || !strcmp(netid, "rdma6"))
		af = AF_INET6;
	else
		return -EINVAL;
	const char *p2 = strrchr(ua, '.');
	if (!p2 || p2 == ua)
		return -EINVAL;
	const char *p1 = p2 - 1;
	while (p1 > ua && *p1 != '.')
		p1--;
	if (*p1 != '.' || p1 == ua)
		return -EINVAL;
	unsigned port[2];
	const char *parts[2] = {p1 + 1, p2 + 1};
	for (int k = 0; k < 2; k++) {
		const char *q = parts[k];
		unsigned v = 0, nd = 0;
		while (*q >= '0' && *q <= '9' && nd < 4) {
			v = v * 10 + (unsigned)(*q++ - '0');
			nd++;
		}
		if (!nd || v > 255 || (*q != (k ? 0 : '.')))
			return -EINVAL;
		port[k] = v;
	}
	char host[INET6_ADDRSTRLEN + 1];
	size_t hl = (size_t)(p1 - ua);
	if (hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, ua, hl);
	host[hl] = 0;
	memset(ss, 0, sizeof(*ss));
	uint16_t p = htons((uint16_t)(port[0] << 8 | port[1]));
	if (af == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;
		in->sin_family = AF_INET;
		in->sin_port = p;
		if (inet_pton(AF_INET, host, &in->sin_addr) != 1)
			return -EINVAL;
		*len = sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = p;
		if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
			return -EINVAL;
		*len = sizeof(*in6);
	}
	return 0;
}

static int addrs_copy(const braid_ctl_netaddr *v, uint32_t n, struct mds_ds_addr *out,
		      unsigned *nout)
{
	if (n == 0 || n > MDS_DS_ADDRS_MAX)
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++) {
		struct sockaddr_storage ss;
		socklen_t len;
		if (!str_copy(out[i].netid, sizeof(out[i].netid), v[i].na_r_netid) ||
		    !str_copy(out[i].uaddr, sizeof(out[i].uaddr), v[i].na_r_addr) ||
		    uaddr_parse(out[i].netid, out[i].uaddr, &ss, &len))
			return -EINVAL;
	}
	*nout = n;
	return 0;
}

/* Versions a layout can name: NFSv3, NFSv4.1, NFSv4.2 (RFC 8435 §5.1). */
static bool proto_usable(const struct mds_ds_proto *p)
{
	bool v = (p->version == 3 && p->minorversion == 0) ||
		 (p->version == 4 && (p->minorversion == 1 || p->minorversion == 2));
	return v && p->rsize && p->wsize;
}

/* The arguments as a table entry (soft state only): a braid_ctl_stat. */
static int32_t reg_parse(const braid_ctl_register_args *a, struct ds_ent *n)
{
	memset(n, 0, sizeof(*n));
	memcpy(n->i.uuid, a->rr_ds_uuid, 16);
	if (a->rr_hostname.len == 0 ||
	    !str_copy(n->i.hostname, sizeof(n->i.hostname), a->rr_hostname) ||
	    addrs_copy(a->rr_addrs.val, a->rr_addrs.len, n->i.addrs, &n->i.naddrs) ||
	    addrs_copy(a->rr_ctl_addrs.val, a->rr_ctl_addrs.len, n->i.ctl_addrs, &n->i.nctl_addrs))
		return BRAID_CTL_INVAL;
	/* the MDS calls over TCP: the first TCP control address */
	for (unsigned k = 0; k < n->i.nctl_addrs && !n->ctl_salen; k++)
		if (!strncmp(n->i.ctl_addrs[k].netid, "tcp", 3))
			uaddr_parse(n->i.ctl_addrs[k].netid, n->i.ctl_addrs[k].uaddr, &n->ctl_sa,
				    &n->ctl_salen);
	if (!n->ctl_salen)
		return BRAID_CTL_INVAL;
	bool usable = false;
	for (uint32_t k = 0; k < a->rr_protos.len && k < MDS_DS_PROTOS_MAX; k++) {
		const braid_ctl_proto *p = &a->rr_protos.val[k];
		struct mds_ds_proto *q = &n->i.protos[n->i.nprotos++];
		*q = (struct mds_ds_proto){p->bp_version, p->bp_minorversion, p->bp_rsize,
					   p->bp_wsize};
		usable |= proto_usable(q);
	}
	if (!usable)
		return BRAID_CTL_BADVERS;
	n->i.capacity = a->rr_capacity;
	n->i.free = a->rr_free;
	memcpy(n->i.boot_verifier, a->rr_boot_verifier, 8);
	return BRAID_CTL_OK;
}

static unsigned hb_interval_s(const struct braid_mds *mds)
{
	uint64_t s = mds->set.heartbeat_ms / 1000;
	return s ? (unsigned)s : 1;
}

static void thread_kick(struct mds_dsreg *r)
{
	pthread_mutex_lock(&r->tmu);
	r->kick = true;
	pthread_cond_signal(&r->tcond);
	pthread_mutex_unlock(&r->tmu);
}

/* A new uuid: the next id, made durable before anyone learns it. */
static int32_t reg_bind(struct mds_dsreg *r, const uint8_t uuid[16], uint32_t *id)
{
	unsigned n;
	struct binding *b = bindings_snapshot(r, &n);
	if (!b)
		return BRAID_CTL_SERVERFAULT;
	pthread_mutex_lock(&r->mu);
	b[n] = (struct binding){.id = r->next_id};
	memcpy(b[n].uuid, uuid, 16);
	pthread_mutex_unlock(&r->mu);
	/* reg_mu is held: no other REGISTER (or administrator) changes the
	 * table's bindings meanwhile */
	int rc = bindings_save(r, b, n + 1);
	if (!rc) {
		pthread_mutex_lock(&r->mu);
		rc = ent_add(r, b[n].id, uuid);
		pthread_mutex_unlock(&r->mu);
	}
	if (rc)
		mds_log("data server registration: %s: %s", r->path, strerror(-rc));
	*id = b[n].id;
	free(b);
	return rc ? BRAID_CTL_SERVERFAULT : BRAID_CTL_OK;
}

static int c_null(struct nfsd_req *req, void *args, void *res)
{
	(void)req, (void)args, (void)res;
	return NFSD_SUCCESS;
}

static int c_register(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	struct mds_dsreg *r = mds->dsreg;
	braid_ctl_register_res *res = resp;
	if (req->cred.flavor != NFSD_AUTH_BRAID) {
		res->rr_status = BRAID_CTL_ACCESS;
		return NFSD_SUCCESS;
	}
	struct ds_ent *n = malloc(sizeof(*n));
	if (!n)
		return NFSD_SYSTEM_ERR;
	if ((res->rr_status = reg_parse(argp, n))) {
		free(n);
		return NFSD_SUCCESS;
	}
	pthread_mutex_lock(&r->reg_mu);
	pthread_mutex_lock(&r->mu);
	struct ds_ent *e = ent_find_uuid(r, n->i.uuid);
	pthread_mutex_unlock(&r->mu);
	uint32_t id = e ? e->i.id : 0;
	if (!e && (res->rr_status = reg_bind(r, n->i.uuid, &id))) {
		pthread_mutex_unlock(&r->reg_mu);
		free(n);
		return NFSD_SUCCESS;
	}
	pthread_mutex_lock(&r->mu);
	e = ent_find(r, id);
	struct mds_ds_conn *old = e->conn;
	bool restarted = e->i.registered && memcmp(e->i.boot_verifier, n->i.boot_verifier, 8);
	n->i.id = id;
	n->i.registered = true;
	n->i.drained = e->i.drained; /* the administrator's, not the data server's */
	n->i.health = 0;
	n->hb_ns = now_ns();
	n->was_up = e->was_up;
	n->epoch = e->epoch + 1;
	n->conn = NULL; /* made afresh at the next use: addresses may have changed */
	*e = *n;
	pthread_mutex_unlock(&r->mu);
	pthread_mutex_unlock(&r->reg_mu);
	if (old)
		mds_ds_conn_put(old);
	mds_log("data server %u (%s, %s) registered%s", id, n->i.hostname, n->i.addrs[0].uaddr,
		restarted ? " after a restart" : "");
	free(n);
	thread_kick(r);
	res->u.rr_resok.rr_ds_id = id;
	res->u.rr_resok.rr_heartbeat_interval = hb_interval_s(mds);
	return NFSD_SUCCESS;
}

static int c_heartbeat(struct nfsd_req *req, void *argp, void *resp)
{
	struct braid_mds *mds = req->priv;
	struct mds_dsreg *r = mds->dsreg;
	braid_ctl_heartbeat_args *a = argp;
	braid_ctl_heartbeat_res *res = resp;
	if (req->cred.flavor != NFSD_AUTH_BRAID) {
		res->hb_status = BRAID_CTL_ACCESS;
		return NFSD_SUCCESS;
	}
	pthread_mutex_lock(&r->mu);
	struct ds_ent *e = ent_find(r, a->hb_ds_id);
	/* unknown, not registered since we started, or restarted: REGISTER again */
	if (!e || !e->i.registered || memcmp(e->i.boot_verifier, a->hb_boot_verifier, 8)) {
		res->hb_status = BRAID_CTL_STALE;
	} else {
		e->i.capacity = a->hb_capacity;
		e->i.free = a->hb_free;
		e->i.objects = a->hb_objects;
		e->i.health = a->hb_health;
		e->hb_ns = now_ns();
		res->hb_status = BRAID_CTL_OK;
		res->u.hb_heartbeat_interval = hb_interval_s(mds);
	}
	pthread_mutex_unlock(&r->mu);
	return NFSD_SUCCESS;
}

/* The MDS's side of the program: NULL, REGISTER, HEARTBEAT; the data
 * servers' procedures answer PROC_UNAVAIL here. */
static struct nfsd_proc dsreg_procs[BRAID_CTLPROC_LIST + 1] = {
    [BRAID_CTLPROC_NULL] = {.name = "NULL", .fn = c_null, .flags = NFSD_PROC_INLINE},
    [BRAID_CTLPROC_REGISTER] = {.name = "REGISTER", .fn = c_register},
    [BRAID_CTLPROC_HEARTBEAT] = {.name = "HEARTBEAT", .fn = c_heartbeat, .flags = NFSD_PROC_INLINE},
};
static const struct nfsd_version dsreg_versions[] = {
    {.vers = BRAID_CTL_V1, .procs = dsreg_procs, .nprocs = BRAID_CTLPROC_LIST + 1},
};

const struct nfsd_program *mds_dsreg_program(struct braid_mds *mds)
{
	return mds->dsreg ? &mds->dsreg->prog : NULL;
}

/* ------------------------------------------------------- table queries */

unsigned mds_dsreg_list(struct braid_mds *mds, struct mds_ds_info *out, unsigned max)
{
	struct mds_dsreg *r = mds->dsreg;
	uint64_t now = now_ns();
	pthread_mutex_lock(&r->mu);
	unsigned n = 0;
	/* in id order: ids are assigned increasingly and entries appended */
	for (unsigned i = 0; i < r->nents; i++) {
		if (r->ents[i]->removed)
			continue;
		if (n < max)
			ent_copy(r, r->ents[i], now, &out[n]);
		n++;
	}
	pthread_mutex_unlock(&r->mu);
	return n;
}

int mds_dsreg_drain(struct braid_mds *mds, uint32_t id, bool drain)
{
	struct mds_dsreg *r = mds->dsreg;
	pthread_mutex_lock(&r->reg_mu); /* the file's writers take turns */
	pthread_mutex_lock(&r->mu);
	struct ds_ent *e = ent_find(r, id);
	bool was = e && e->i.drained;
	if (e)
		e->i.drained = drain;
	pthread_mutex_unlock(&r->mu);
	int rc = e ? 0 : -ENOENT;
	if (e && was != drain) {
		unsigned n;
		struct binding *b = bindings_snapshot(r, &n);
		rc = b ? bindings_save(r, b, n) : -ENOMEM;
		free(b);
		if (rc) { /* not durable: not done */
			pthread_mutex_lock(&r->mu);
			e->i.drained = was;
			pthread_mutex_unlock(&r->mu);
		}
	}
	pthread_mutex_unlock(&r->reg_mu);
	if (!rc && was != drain)
		mds_log("data server %u %s by the administrator", id,
			drain ? "drained (no new objects go there)"
			      : "admitted back into placement");
	return rc;
}

int mds_dsreg_forget(struct braid_mds *mds, uint32_t id)
{
	struct mds_dsreg *r = mds->dsreg;
	pthread_mutex_lock(&r->reg_mu);
	pthread_mutex_lock(&r->mu);
	struct ds_ent *e = ent_find(r, id);
	if (e)
		e->removed = true;
	pthread_mutex_unlock(&r->mu);
	int rc = e ? 0 : -ENOENT;
	struct mds_ds_conn *conn = NULL;
	if (e) {
		unsigned n;
		struct binding *b = bindings_snapshot(r, &n);
		rc = b ? bindings_save(r, b, n) : -ENOMEM;
		free(b);
		pthread_mutex_lock(&r->mu);
		if (rc) {
			e->removed = false;
		} else {
			/* a tombstone from now on: never found, never up */
			conn = e->conn;
			e->conn = NULL;
			e->was_up = false;
			e->i.registered = false;
			e->epoch++;
		}
		pthread_mutex_unlock(&r->mu);
	}
	pthread_mutex_unlock(&r->reg_mu);
	mds_ds_conn_put(conn);
	if (!rc)
		mds_log("data server %u removed by the administrator", id);
	return rc;
}

int mds_dsreg_get(struct braid_mds *mds, uint32_t id, struct mds_ds_info *out)
{
	struct mds_dsreg *r = mds->dsreg;
	pthread_mutex_lock(&r->mu);
	struct ds_ent *e = ent_find(r, id);
	if (e)
		ent_copy(r, e, now_ns(), out);
	pthread_mutex_unlock(&r->mu);
	return e ? 0 : -ENOENT;
}

void mds_dsreg_device(const struct mds_ds_info *i, struct layout_device *d)
{
	_Static_assert(sizeof(i->addrs[0].netid) == sizeof(d->addrs[0].netid) &&
			   sizeof(i->addrs[0].uaddr) == sizeof(d->addrs[0].uaddr) &&
			   MDS_DS_ADDRS_MAX == LAYOUT_DEV_ADDRS_MAX &&
			   MDS_DS_PROTOS_MAX == LAYOUT_DEV_VERS_MAX,
		       "struct layout_device holds a struct mds_ds_info's addresses");
	memset(d, 0, sizeof(*d));
	d->ds_id = i->id;
	memcpy(d->uuid, i->uuid, 16);
	d->naddrs = i->naddrs;
	d->nversions = i->nprotos;
	for (unsigned k = 0; k < i->naddrs && k < MDS_DS_ADDRS_MAX; k++) {
		memcpy(d->addrs[k].netid, i->addrs[k].netid, sizeof(d->addrs[k].netid));
		memcpy(d->addrs[k].uaddr, i->addrs[k].uaddr, sizeof(d->addrs[k].uaddr));
	}
	for (unsigned k = 0; k < i->nprotos && k < MDS_DS_PROTOS_MAX; k++)
		d->versions[k] =
		    (struct layout_version){i->protos[k].version, i->protos[k].minorversion,
					    i->protos[k].rsize, i->protos[k].wsize};
}

void mds_dsreg_space(struct braid_mds *mds, uint64_t *total, uint64_t *avail)
{
	struct mds_dsreg *r = mds->dsreg;
	*total = *avail = 0;
	if (!r)
		return;
	uint64_t now = now_ns();
	pthread_mutex_lock(&r->mu);
	for (unsigned i = 0; i < r->nents; i++)
		if (ent_up(r, r->ents[i], now)) {
			*total += r->ents[i]->i.capacity;
			*avail += r->ents[i]->i.free;
		}
	pthread_mutex_unlock(&r->mu);
}

static bool ent_nfs3(const struct ds_ent *e, uint32_t *rsize, uint32_t *wsize)
{
	for (unsigned k = 0; k < e->i.nprotos; k++)
		if (e->i.protos[k].version == 3 && proto_usable(&e->i.protos[k])) {
			*rsize = e->i.protos[k].rsize;
			*wsize = e->i.protos[k].wsize;
			return true;
		}
	return false;
}

static uint64_t rng_next(struct mds_dsreg *r)
{
	/* splitmix64 over an atomic counter: thread safe, good enough to spread load */
	uint64_t z = atomic_fetch_add(&r->rng, 0x9e3779b97f4a7c15ull) + 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int mds_dsreg_place(struct braid_mds *mds, bool nfs3, uint32_t *id)
{
	struct mds_dsreg *r = mds->dsreg;
	uint64_t now = now_ns();
	int rc = -EAGAIN;
	pthread_mutex_lock(&r->mu);
	/* tier 0: not low on space; tier 1: any that takes new objects */
	for (int tier = 0; tier < 2 && rc; tier++) {
		uint64_t total = 0;
		for (int pass = 0; pass < 2 && rc; pass++) {
			uint64_t pick = pass ? rng_next(r) % total : 0;
			for (unsigned i = 0; i < r->nents; i++) {
				const struct ds_ent *e = r->ents[i];
				uint32_t rs, ws;
				if (!ent_up(r, e, now) || e->i.drained ||
				    (e->i.health &
				     (BRAID_CTL_HEALTH_DRAINING | BRAID_CTL_HEALTH_READONLY)) ||
				    (tier == 0 && (e->i.health & BRAID_CTL_HEALTH_LOWSPACE)) ||
				    (nfs3 && !ent_nfs3(e, &rs, &ws)))
					continue;
				uint64_t w = (e->i.free >> 20) + 1; /* MiB: sums cannot overflow */
				if (!pass) {
					total += w;
				} else if (pick < w) {
					*id = e->i.id;
					rc = 0;
					break;
				} else {
					pick -= w;
				}
			}
			if (!total)
				break;
		}
	}
	pthread_mutex_unlock(&r->mu);
	return rc;
}

/* --------------------------------------------------------- connections */

void mds_ds_conn_put(struct mds_ds_conn *dc)
{
	if (dc && atomic_fetch_sub(&dc->ref, 1) == 1) {
		nfsd_clnt_free(dc->clnt);
		free(dc);
	}
}

struct mds_ds_conn *mds_ds_conn_get(struct braid_mds *mds, uint32_t id, int *err)
{
	struct mds_dsreg *r = mds->dsreg;
	pthread_mutex_lock(&r->mu);
	struct ds_ent *e = ent_find(r, id);
	if (!e || !ent_up(r, e, now_ns())) {
		pthread_mutex_unlock(&r->mu);
		*err = e ? -EAGAIN : -EIO;
		return NULL;
	}
	struct mds_ds_conn *dc = e->conn;
	if (dc) {
		atomic_fetch_add(&dc->ref, 1);
		pthread_mutex_unlock(&r->mu);
		return dc;
	}
	struct sockaddr_storage sa = e->ctl_sa;
	socklen_t salen = e->ctl_salen;
	uint64_t epoch = e->epoch;
	uint32_t rs = 0, ws = 0;
	ent_nfs3(e, &rs, &ws);
	pthread_mutex_unlock(&r->mu);

	if (!(dc = calloc(1, sizeof(*dc)))) {
		*err = -ENOMEM;
		return NULL;
	}
	struct nfsd_clnt_opts o = {.timeout_ms = r->call_timeout_ms, .reconnect = true};
	int rc = 0;
	/* connect outside the lock: it may take a while */
	if (!(dc->clnt = nfsd_clnt_new(r->eng, (const struct sockaddr *)&sa, salen, &o, &rc))) {
		free(dc);
		*err = rc == -ECONNREFUSED || rc == -ETIMEDOUT || rc == -EHOSTUNREACH ||
			       rc == -ENETUNREACH
			   ? -EAGAIN
			   : rc;
		return NULL;
	}
	atomic_init(&dc->ref, 2); /* the table's and the caller's */
	dc->id = id;
	dc->rsize3 = rs < MDS_IO_MAX ? rs : MDS_IO_MAX;
	dc->wsize3 = ws < MDS_IO_MAX ? ws : MDS_IO_MAX;
	dc->timeout_ms = r->call_timeout_ms;
	struct mds_ds_conn *other = NULL;
	bool installed = false;
	pthread_mutex_lock(&r->mu);
	if (e->epoch == epoch && !e->conn) {
		e->conn = dc;
		installed = true;
	} else {
		/* raced with another caller or a new REGISTER */
		if (e->epoch == epoch && (other = e->conn))
			atomic_fetch_add(&other->ref, 1);
		atomic_store(&dc->ref, 1);
	}
	pthread_mutex_unlock(&r->mu);
	if (installed)
		return dc;
	mds_ds_conn_put(dc);
	if (!other)
		*err = -EAGAIN;
	return other;
}

/* ------------------------------------------------------------- objects */

void mds_data_objid(const struct mds_attr *a, struct ds_objid *id)
{
	memcpy(id->key, a->objkey, DS_KEY_SIZE);
	id->gen = a->generation;
}

void mds_data_fence_epoch(const struct mds_attr *a, uint32_t epoch, uint32_t *uid, uint32_t *gid)
{
	struct ds_objid id;
	mds_data_objid(a, &id);
	layout_fence_creds(&id, epoch, uid, gid);
}

void mds_data_fence(const struct mds_attr *a, uint32_t *uid, uint32_t *gid)
{
	mds_data_fence_epoch(a, 0, uid, gid);
}

static pthread_mutex_t *obj_lock(struct braid_mds *mds, uint64_t ino)
{
	return &mds->dsreg->obj_mu[(ino ^ (ino >> 17)) % OBJ_LOCKS];
}

/* CREATE of a's object on data server ds_id (idempotent), owned by the
 * fence of that epoch. */
static int obj_create(struct braid_mds *mds, uint32_t ds_id, const struct mds_attr *a,
		      uint32_t epoch)
{
	int rc;
	struct mds_ds_conn *dc = mds_ds_conn_get(mds, ds_id, &rc);
	if (!dc)
		return rc;
	struct ds_objid id;
	uint32_t uid, gid, fhlen;
	uint8_t fh[DS_CTL_FH_MAX];
	mds_data_objid(a, &id);
	mds_data_fence_epoch(a, epoch, &uid, &gid);
	rc = ds_ctl_create(dc->clnt, &mds->key, &id, uid, gid, 0600, fh, &fhlen);
	mds_ds_conn_put(dc);
	if (rc == -EEXIST) {
		/* the key is derived from (ino, generation): another generation
		 * there means the data server holds a stale object */
		mds_log("data server %u holds inode %llu's key at another generation", ds_id,
			(unsigned long long)a->ino);
		rc = -EIO;
	}
	return rc;
}

int mds_data_map(struct braid_mds *mds, uint64_t ino, struct mds_file_map *m)
{
	memset(m, 0, sizeof(*m));
	struct mds_layout_seg l;
	int rc = mds_layout_get(mds->store, ino, MDS_LAYOUT_REC, &l);
	if (!rc) {
		if (layout_policy_decode(l.flags, &m->pol)) {
			mds_log("inode %llu: layout record %#x is not a policy",
				(unsigned long long)ino, l.flags);
			return -EIO;
		}
		m->recorded = true;
		m->epoch = l.ds[0];
		for (uint32_t k = 1; k < l.nds && m->nset < LAYOUT_SET_MAX; k++)
			m->set[m->nset++] = l.ds[k];
		m->laid_out = m->nset > 0;
		return 0;
	}
	if (rc != -ENOENT)
		return rc;
	/* no record: whole-file on segment 0's data servers, or not laid out */
	rc = mds_layout_get(mds->store, ino, 0, &l);
	if (rc == -ENOENT) {
		mds_layout_policy_default(mds, &m->pol);
		return 0;
	}
	if (rc)
		return rc;
	layout_policy_default(&m->pol);
	m->pol.mirrors = (uint8_t)(l.nds < LAYOUT_MIRRORS_MAX ? l.nds : LAYOUT_MIRRORS_MAX);
	m->laid_out = true;
	for (uint32_t k = 0; k < l.nds && m->nset < LAYOUT_SET_MAX; k++)
		m->set[m->nset++] = l.ds[k];
	return 0;
}

/* The record of m (flags, epoch, set) for ino. */
static void map_args(uint64_t ino, const struct mds_file_map *m, struct mds_layout_args *la)
{
	memset(la, 0, sizeof(*la));
	la->ino = ino;
	la->seg = MDS_LAYOUT_REC;
	la->l.flags = layout_policy_encode(&m->pol);
	la->l.nds = 1 + m->nset;
	la->l.ds[0] = m->epoch;
	memcpy(la->l.ds + 1, m->set, m->nset * sizeof(m->set[0]));
}

static int map_record(struct braid_mds *mds, uint64_t ino, const struct mds_file_map *m)
{
	struct mds_layout_args la;
	map_args(ino, m, &la);
	return mds_layout_set(mds->store, &la);
}

/* Two waits for two ops submitted together: one commit usually covers both. */
struct two_ops {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int left;
};

static void two_ops_done(struct mds_op *op)
{
	struct two_ops *t = op->priv;
	pthread_mutex_lock(&t->mu);
	t->left--;
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->mu);
}

/* LAYOUT_SET of a, then of b (in that order), durably; the first error. */
static int layout_set_two(struct braid_mds *mds, const struct mds_layout_args *a,
			  const struct mds_layout_args *b)
{
	struct two_ops t = {.left = 2};
	pthread_mutex_init(&t.mu, NULL);
	pthread_cond_init(&t.cond, NULL);
	struct mds_op op[2] = {{.type = MDS_OP_LAYOUT_SET, .args.layout = *a},
			       {.type = MDS_OP_LAYOUT_SET, .args.layout = *b}};
	for (int i = 0; i < 2; i++) {
		op[i].done = two_ops_done;
		op[i].priv = &t;
		mds_store_submit(mds->store, &op[i]);
	}
	pthread_mutex_lock(&t.mu);
	while (t.left)
		pthread_cond_wait(&t.cond, &t.mu);
	pthread_mutex_unlock(&t.mu);
	pthread_cond_destroy(&t.cond);
	pthread_mutex_destroy(&t.mu);
	return op[0].status ? op[0].status : op[1].status;
}

static bool id_in(const uint32_t *v, unsigned n, uint32_t id)
{
	for (unsigned i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

/*
 * Data servers new segments may go to: up, taking new objects, serving
 * NFSv3 (the MDS proxies I/O over it) and not in avoid; those low on space
 * only when no other is usable, those in avoid only when nothing else is.
 * Weighted by free space.
 */
static unsigned usable_list(struct mds_dsreg *r, const uint32_t *avoid, unsigned navoid,
			    struct layout_cand *out, unsigned max)
{
	uint64_t now = now_ns();
	unsigned n = 0;
	pthread_mutex_lock(&r->mu);
	/* tier 2: those avoided too, rather than none at all */
	for (int tier = 0; tier < 3 && !n; tier++)
		for (unsigned i = 0; i < r->nents && n < max; i++) {
			const struct ds_ent *e = r->ents[i];
			uint32_t rs, ws;
			if (!ent_up(r, e, now) || e->i.drained ||
			    (e->i.health &
			     (BRAID_CTL_HEALTH_DRAINING | BRAID_CTL_HEALTH_READONLY)) ||
			    (tier == 0 && (e->i.health & BRAID_CTL_HEALTH_LOWSPACE)) ||
			    !ent_nfs3(e, &rs, &ws) || (tier < 2 && id_in(avoid, navoid, e->i.id)))
				continue;
			out[n++] = (struct layout_cand){e->i.id, e->i.free};
		}
	pthread_mutex_unlock(&r->mu);
	return n;
}

static uint64_t rng_cb(void *arg)
{
	return rng_next(arg);
}

/*
 * With the inode's object lock held: places segment n of the file (and
 * its set, for a file not yet laid out), records the maps, then makes the
 * objects the set does not yet know to exist.  Maps are recorded before
 * objects are made, so a crash between the two leaves a map whose object
 * is missing (repaired on use), never an object no map names.
 */
static int segment_make_locked(struct braid_mds *mds, const struct mds_attr *a, uint64_t n,
			       const uint32_t *avoid, unsigned navoid, struct mds_file_map *m,
			       struct mds_layout_seg *seg)
{
	struct mds_dsreg *r = mds->dsreg;
	int rc = mds_data_map(mds, a->ino, m);
	if (rc)
		return rc;
	if ((rc = mds_layout_get(mds->store, a->ino, n, seg)) != -ENOENT)
		return rc; /* made meanwhile, or an error */
	if (n && !m->pol.seg_shift)
		return -EINVAL; /* one segment: only segment 0 exists */
	struct mds_attr cur;
	if ((rc = mds_inode_getattr(mds->store, a->ino, &cur)))
		return rc;
	if (cur.generation != a->generation)
		return -ESTALE;
	if (cur.type != MDS_REG)
		return -EINVAL;
	struct layout_cand usable[256];
	unsigned nu = usable_list(r, avoid, navoid, usable, 256);
	bool rec = !m->recorded;
	uint32_t ids[LAYOUT_SET_MAX];
	if (!m->nset) {
		unsigned k = layout_set_size(&m->pol, nu);
		if (!k)
			return -EAGAIN;
		m->nset = layout_set_choose(usable, nu, k, rng_cb, r, m->set);
		rec = true;
	}
	for (unsigned i = 0; i < m->nset; i++)
		ids[i] = m->set[i] & ~MDS_LAYOUT_CREATED;
	unsigned w = layout_seg_width(&m->pol);
	memset(seg, 0, sizeof(*seg));
	if ((rc = layout_seg_place(&m->pol, ids, m->nset, n, usable, nu, seg->ds)))
		return rc;
	seg->nds = w;
	/* a substitute from outside the set joins it while there is room */
	for (unsigned j = 0; j < w; j++)
		if (!id_in(ids, m->nset, seg->ds[j]) && m->nset < LAYOUT_SET_MAX) {
			ids[m->nset] = seg->ds[j];
			m->set[m->nset++] = seg->ds[j];
			rec = true;
		}
	struct mds_layout_args la = {.ino = a->ino, .seg = n, .l = *seg}, ra;
	if (rec) {
		map_args(a->ino, m, &ra);
		if ((rc = layout_set_two(mds, &ra, &la))) {
			/* never a segment without the record that says how to read it */
			struct mds_layout_args rm = {.ino = a->ino, .seg = n};
			mds_layout_remove(mds->store, &rm);
			return rc;
		}
	} else if ((rc = mds_layout_set(mds->store, &la))) {
		return rc;
	}
	bool bits = false;
	for (unsigned j = 0; j < w && !rc; j++) {
		unsigned i = 0;
		while (i < m->nset && ids[i] != seg->ds[j])
			i++;
		if (i < m->nset && (m->set[i] & MDS_LAYOUT_CREATED))
			continue;
		if ((rc = obj_create(mds, seg->ds[j], &cur, m->epoch)))
			break;
		/* one segment: nothing would ever ask again */
		if (i < m->nset && m->pol.seg_shift) {
			m->set[i] |= MDS_LAYOUT_CREATED;
			bits = true;
		}
	}
	if (rc) {
		struct mds_layout_args rm = {.ino = a->ino, .seg = n};
		mds_layout_remove(mds->store, &rm);
		return rc;
	}
	if (bits)
		map_record(mds, a->ino, m); /* best effort: CREATE is idempotent */
	return 0;
}

int mds_data_segment(struct braid_mds *mds, const struct mds_attr *a, uint64_t n, bool create,
		     const uint32_t *avoid, unsigned navoid, struct mds_file_map *map,
		     struct mds_layout_seg *seg)
{
	int rc = mds_data_map(mds, a->ino, map);
	if (rc)
		return rc;
	if (n && !map->pol.seg_shift)
		return -EINVAL;
	rc = mds_layout_get(mds->store, a->ino, n, seg);
	if (rc != -ENOENT || !create)
		return rc;
	pthread_mutex_t *mu = obj_lock(mds, a->ino);
	pthread_mutex_lock(mu);
	rc = segment_make_locked(mds, a, n, avoid, navoid, map, seg);
	pthread_mutex_unlock(mu);
	return rc;
}

int mds_data_object(struct braid_mds *mds, const struct mds_attr *a, bool create,
		    struct mds_layout_seg *seg)
{
	struct mds_file_map m;
	return mds_data_segment(mds, a, 0, create, NULL, 0, &m, seg);
}

int mds_data_object_repair(struct braid_mds *mds, const struct mds_attr *a, uint32_t ds_id)
{
	pthread_mutex_t *mu = obj_lock(mds, a->ino);
	pthread_mutex_lock(mu);
	struct mds_attr cur;
	struct mds_file_map m;
	int rc = mds_inode_getattr(mds->store, a->ino, &cur);
	if (!rc && cur.generation != a->generation)
		rc = -ESTALE;
	/* an orphan nobody holds open is being released: never bring it back */
	if (!rc && cur.nlink == 0 && !mds_state_ino_open(mds, a->ino))
		rc = -ESTALE;
	if (!rc)
		rc = mds_data_map(mds, a->ino, &m);
	if (!rc) {
		mds_log("inode %llu: object missing on data server %u, creating it again",
			(unsigned long long)a->ino, ds_id);
		rc = obj_create(mds, ds_id, &cur, m.epoch);
	}
	pthread_mutex_unlock(mu);
	return rc;
}

struct ds_set {
	uint32_t id[RELEASE_MAX_DS];
	unsigned n;
	bool overflow;
};

static int ds_set_add(void *arg, uint64_t seg, const struct mds_layout_seg *l)
{
	struct ds_set *s = arg;
	if (seg >= MDS_LAYOUT_REC)
		return 0; /* the file's record names no segment */
	for (uint32_t k = 0; k < l->nds && k < MDS_LAYOUT_MAX_DS; k++) {
		unsigned j = 0;
		while (j < s->n && s->id[j] != l->ds[k])
			j++;
		if (j < s->n)
			continue;
		if (s->n == RELEASE_MAX_DS) {
			s->overflow = true;
			return 1;
		}
		s->id[s->n++] = l->ds[k];
	}
	return 0;
}

/* Every data server a's file has objects on (deduplicated). */
static int ds_set_of(struct braid_mds *mds, uint64_t ino, struct ds_set *s)
{
	memset(s, 0, sizeof(*s));
	int rc = mds_layout_list(mds->store, ino, ds_set_add, s);
	if (rc < 0)
		return rc;
	return s->overflow ? -E2BIG : 0;
}

int mds_data_ds_list(struct braid_mds *mds, uint64_t ino, uint32_t *ids, unsigned max)
{
	struct ds_set s;
	int rc = ds_set_of(mds, ino, &s);
	if (rc)
		return rc;
	if (s.n > max)
		return -E2BIG;
	memcpy(ids, s.id, s.n * sizeof(ids[0]));
	return (int)s.n;
}

/* With the object lock held: SETFENCE of the current epoch's pair on every
 * data server of the file; -EAGAIN when one could not be reached. */
static int fence_apply_locked(struct braid_mds *mds, const struct mds_attr *a, uint32_t epoch)
{
	struct ds_set s;
	int rc = ds_set_of(mds, a->ino, &s);
	if (rc)
		return rc;
	struct ds_objid id;
	uint32_t uid, gid;
	mds_data_objid(a, &id);
	mds_data_fence_epoch(a, epoch, &uid, &gid);
	for (unsigned k = 0; k < s.n; k++) {
		int err;
		struct mds_ds_conn *dc = mds_ds_conn_get(mds, s.id[k], &err);
		if (dc) {
			err = ds_ctl_setfence(dc->clnt, &mds->key, &id, uid, gid);
			mds_ds_conn_put(dc);
		}
		/* NOENT: no object there yet; it is made with the new pair */
		if (err && err != -ENOENT) {
			if (err != -EAGAIN)
				mds_log("inode %llu: fencing on data server %u: %s",
					(unsigned long long)a->ino, s.id[k], strerror(-err));
			rc = err == -ESTALE ? -EIO : -EAGAIN;
		}
	}
	return rc;
}

int mds_data_fence_new(struct braid_mds *mds, const struct mds_attr *a, uint32_t *epoch)
{
	pthread_mutex_t *mu = obj_lock(mds, a->ino);
	pthread_mutex_lock(mu);
	struct mds_file_map m;
	int rc = mds_data_map(mds, a->ino, &m);
	if (!rc && m.laid_out) {
		/* recorded first: a crash after it leaves the objects to the old
		 * pair, which the retry (or the next I/O's repair) moves */
		m.epoch = m.epoch + 1 ? m.epoch + 1 : 1;
		if (!(rc = map_record(mds, a->ino, &m)))
			rc = fence_apply_locked(mds, a, m.epoch);
	}
	if (epoch)
		*epoch = m.epoch;
	pthread_mutex_unlock(mu);
	return rc;
}

int mds_data_fence_apply(struct braid_mds *mds, const struct mds_attr *a)
{
	pthread_mutex_t *mu = obj_lock(mds, a->ino);
	pthread_mutex_lock(mu);
	struct mds_file_map m;
	int rc = mds_data_map(mds, a->ino, &m);
	if (!rc && m.laid_out)
		rc = fence_apply_locked(mds, a, m.epoch);
	pthread_mutex_unlock(mu);
	return rc;
}

void mds_data_release(struct braid_mds *mds, uint64_t ino)
{
	struct mds_attr a;
	if (!mds->dsreg || mds_inode_getattr(mds->store, ino, &a) || a.nlink || a.type != MDS_REG)
		return;
	if (mds_state_ino_open(mds, ino))
		return; /* the last CLOSE calls again */
	/* clients may still write through layouts: the objects go once those
	 * are returned or fenced, and the layout layer calls again */
	if (mds_layout_release_hold(mds, ino))
		return;
	pthread_mutex_t *mu = obj_lock(mds, ino);
	pthread_mutex_lock(mu);
	struct ds_set s;
	int rc = ds_set_of(mds, ino, &s);
	bool left = rc != 0;
	struct ds_objid id;
	mds_data_objid(&a, &id);
	for (unsigned k = 0; !rc && k < s.n; k++) {
		int err;
		struct mds_ds_conn *dc = mds_ds_conn_get(mds, s.id[k], &err);
		if (!dc) {
			left = true;
			continue;
		}
		err = ds_ctl_remove(dc->clnt, &mds->key, &id);
		mds_ds_conn_put(dc);
		/* NOENT: removed already (a repeat); STALE: not our generation there */
		if (err && err != -ENOENT && err != -ESTALE) {
			mds_log("inode %llu: removing its object from data server %u: %s",
				(unsigned long long)ino, s.id[k], strerror(-err));
			left = true;
		}
	}
	if (!left && (rc = mds_inode_reap(mds->store, ino)) && rc != -ESTALE && rc != -EBUSY)
		mds_log("inode %llu: reap: %s", (unsigned long long)ino, strerror(-rc));
	pthread_mutex_unlock(mu);
}

int mds_data_size_reconcile(struct braid_mds *mds, uint64_t ino)
{
	for (unsigned tries = 0; tries < 8; tries++) {
		struct mds_attr at;
		int rc = mds_inode_getattr(mds->store, ino, &at);
		if (rc == -ENOENT || (!rc && at.type != MDS_REG))
			return 0; /* gone: nothing to count */
		if (rc)
			return rc;
		struct ds_set s;
		if ((rc = ds_set_of(mds, ino, &s)))
			return rc;
		struct ds_objid id;
		mds_data_objid(&at, &id);
		uint64_t end = 0;
		for (unsigned k = 0; k < s.n; k++) {
			int err;
			struct ds_ctl_stat st;
			struct mds_ds_conn *dc = mds_ds_conn_get(mds, s.id[k], &err);
			if (!dc)
				return err ? err : -EAGAIN; /* that data server is not up yet */
			err = ds_ctl_stat(dc->clnt, &mds->key, &id, &st);
			mds_ds_conn_put(dc);
			/* NOENT: no object there, nothing written; STALE: not ours */
			if (err == -ENOENT || err == -ESTALE)
				continue;
			if (err)
				return err;
			if (st.size > end)
				end = st.size;
		}
		if (end <= at.size)
			return 0;
		/* guarded: a truncation meanwhile may have cut the objects */
		struct mds_setattr_args sa = {.ino = ino,
					      .mask = MDS_SET_SIZE_MAX | MDS_SET_MTIME_NOW |
						      MDS_SET_CHANGE_GUARD,
					      .size = end,
					      .guard = at.change};
		struct mds_setattr_res sr;
		rc = mds_inode_setattr(mds->store, &sa, &sr);
		if (rc == -EAGAIN)
			continue;
		if (!rc)
			mds_log("inode %llu: size %llu -> %llu, from its data servers' objects",
				(unsigned long long)ino, (unsigned long long)sr.old_size,
				(unsigned long long)sr.attr.size);
		return rc == -ENOENT ? 0 : rc;
	}
	return -EAGAIN;
}

int mds_data_truncate(struct braid_mds *mds, const struct mds_attr *attr, uint64_t old_size)
{
	if (attr->type != MDS_REG)
		return 0;
	pthread_mutex_t *mu = obj_lock(mds, attr->ino);
	pthread_mutex_lock(mu);
	struct ds_set s;
	int rc = ds_set_of(mds, attr->ino, &s);
	if (!rc && s.n == 0) {
		/* no object: a missing object reads as zeros, so only an
		 * extension makes one, holding the new end (best effort: its data
		 * servers may all be down, and the file reads right without it) */
		struct mds_layout_seg seg;
		struct mds_file_map m;
		uint64_t n = attr->size ? attr->size - 1 : 0;
		if (attr->size <= old_size || (rc = mds_data_map(mds, attr->ino, &m)) ||
		    segment_make_locked(mds, attr, layout_seg_index(&m.pol, n), NULL, 0, &m,
					&seg)) {
			pthread_mutex_unlock(mu);
			return 0;
		}
		for (uint32_t k = 0; k < seg.nds; k++)
			s.id[s.n++] = seg.ds[k];
	}
	struct ds_objid id;
	mds_data_objid(attr, &id);
	for (unsigned k = 0; !rc && k < s.n; k++) {
		int err;
		struct mds_ds_conn *dc = mds_ds_conn_get(mds, s.id[k], &err);
		if (dc) {
			/* each object is the file's bytes at the file's offsets
			 * (sparse), so every one is cut (or grown) to the size */
			err = ds_ctl_truncate(dc->clnt, &mds->key, &id, attr->size);
			mds_ds_conn_put(dc);
		}
		/* NOENT: the object is missing, nothing beyond the size to drop */
		if (err && err != -ENOENT)
			rc = err == -ESTALE ? -EIO : err;
	}
	pthread_mutex_unlock(mu);
	/* RFC 8881 §12.5.5: layouts of a shrunk file are recalled, so clients
	 * drop what they cached of it; an extension changes no mapping */
	if (!rc && attr->size < old_size)
		mds_layout_recall_file(mds, attr->ino);
	return rc;
}

/* ------------------------------------------------ the background thread */

struct ino_vec {
	uint64_t *v;
	unsigned n, cap;
};

static int orphan_collect(void *arg, const struct mds_attr *a)
{
	struct ino_vec *iv = arg;
	if (iv->n == iv->cap)
		return 1; /* the rest next time */
	iv->v[iv->n++] = a->ino;
	return 0;
}

static void orphan_sweep(struct mds_dsreg *r)
{
	struct ino_vec iv = {.cap = SWEEP_BATCH};
	if (!(iv.v = malloc(SWEEP_BATCH * sizeof(*iv.v))))
		return;
	mds_orphan_list(r->mds->store, orphan_collect, &iv);
	for (unsigned i = 0; i < iv.n; i++) {
		pthread_mutex_lock(&r->tmu);
		bool stop = r->stop;
		pthread_mutex_unlock(&r->tmu);
		if (stop)
			break;
		mds_data_release(r->mds, iv.v[i]);
	}
	free(iv.v);
}

static void note_transitions(struct mds_dsreg *r)
{
	uint64_t now = now_ns();
	char lines[8][320];
	unsigned nl = 0;
	pthread_mutex_lock(&r->mu);
	for (unsigned i = 0; i < r->nents; i++) {
		struct ds_ent *e = r->ents[i];
		bool up = ent_up(r, e, now);
		if (up != e->was_up && nl < 8)
			snprintf(lines[nl++], sizeof(lines[0]), "data server %u (%s) is %s",
				 e->i.id, e->i.hostname, up ? "up" : "down: no heartbeat");
		e->was_up = up;
	}
	pthread_mutex_unlock(&r->mu);
	for (unsigned i = 0; i < nl; i++)
		mds_log("%s", lines[i]);
}

static void *dsreg_main(void *arg)
{
	struct mds_dsreg *r = arg;
	uint64_t next_sweep = 0;
	for (;;) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_mutex_lock(&r->tmu);
		while (!r->stop && !r->kick && pthread_cond_timedwait(&r->tcond, &r->tmu, &ts) == 0)
			;
		bool stop = r->stop, kick = r->kick;
		r->kick = false;
		pthread_mutex_unlock(&r->tmu);
		if (stop)
			break;
		note_transitions(r);
		uint64_t now = now_ns();
		if ((kick || now >= next_sweep) && !mds_state_in_grace(r->mds)) {
			orphan_sweep(r);
			next_sweep = now + SWEEP_INTERVAL_NS;
		}
	}
	return NULL;
}

/* ----------------------------------------------------------- start, stop */

int mds_dsreg_init(struct braid_mds *mds, char *msg, size_t msglen)
{
	struct mds_dsreg *r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	r->mds = mds;
	mds->dsreg = r;
	pthread_mutex_init(&r->reg_mu, NULL);
	pthread_mutex_init(&r->mu, NULL);
	for (int i = 0; i < OBJ_LOCKS; i++)
		pthread_mutex_init(&r->obj_mu[i], NULL);
	pthread_mutex_init(&r->tmu, NULL);
	pthread_cond_init(&r->tcond, NULL);
	r->next_id = 1;
	uint64_t t = mds->set.ds_timeout_ms;
	r->call_timeout_ms = (unsigned)(t < 5000 ? 5000 : t > 30000 ? 30000 : t);
	atomic_init(&r->rng, now_ns() ^ (uint64_t)getpid() << 32);
	snprintf(r->path, sizeof(r->path), "%s/%s", mds->set.store_dir, DSREG_FILE);
	int rc = bindings_load(r, msg, msglen);
	if (rc)
		return rc;
	if (!(r->eng = nfsd_client_engine_new(2, 0, &rc))) {
		snprintf(msg, msglen, "data server client: %s", strerror(-rc));
		return rc;
	}
	nfsd_procs_bind(dsreg_procs, BRAID_CTLPROC_LIST + 1,
			&xdr_desc_BRAID_CTL_PROGRAM_BRAID_CTL_V1);
	r->prog = (struct nfsd_program){
	    .prog = BRAID_CTL_PROGRAM,
	    .name = "braid_ctl",
	    .versions = dsreg_versions,
	    .nversions = 1,
	    .priv = mds,
	};
	if ((rc = -pthread_create(&r->thread, NULL, dsreg_main, r))) {
		snprintf(msg, msglen, "data server thread: %s", strerror(-rc));
		return rc;
	}
	r->running = true;
	return 0;
}

void mds_dsreg_release(struct braid_mds *mds)
{
	struct mds_dsreg *r = mds->dsreg;
	if (!r)
		return;
	pthread_mutex_lock(&r->tmu);
	r->stop = true;
	pthread_cond_broadcast(&r->tcond);
	pthread_mutex_unlock(&r->tmu);
	if (r->running)
		pthread_join(r->thread, NULL);
	for (unsigned i = 0; i < r->nents; i++) {
		mds_ds_conn_put(r->ents[i]->conn);
		free(r->ents[i]);
	}
	free(r->ents);
	if (r->eng)
		nfsd_server_free(r->eng);
	for (int i = 0; i < OBJ_LOCKS; i++)
		pthread_mutex_destroy(&r->obj_mu[i]);
	pthread_cond_destroy(&r->tcond);
	pthread_mutex_destroy(&r->tmu);
	pthread_mutex_destroy(&r->mu);
	pthread_mutex_destroy(&r->reg_mu);
	free(r);
	mds->dsreg = NULL;
}
