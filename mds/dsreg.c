/* SPDX-License-Identifier: MIT */
/*
 * Data servers: the REGISTER/HEARTBEAT side of the control protocol
 * (nfsd/xdr/braid_ctl.x), the table of data servers, placement, and the
 * MDS's connections to them.  What they hold for each file (objects, and
 * the maps that say where each segment lives) is mds/data.c's.
 *
 * Identity.  A data server is named by the uuid it keeps with its storage;
 * the MDS binds each uuid to an id (1, 2, ...; never reused) at its first
 * REGISTER and keeps the binding in <store_dir>/data-servers, written with
 * fsync + rename + fsync of the directory before the REGISTER reply, so the
 * id survives restarts of both sides.  Each line is "id uuid", then
 * "drained" for a data server the administrator drained (placement skips
 * it), "lost" for one declared lost (its copies are rebuilt elsewhere,
 * mds/resilver.h; placement skips it until 'braidctl ds add') or "removed" for one forgotten (a tombstone: its id is never given
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
 * One whose port refuses (a braid-ds that died, before ds_timeout counts it
 * down) fails calls at once (fail_unreachable): placement then leaves it
 * out of a new file's segment (mds_data_segment).
 *
 * A background thread notes data servers going down and, outside the grace
 * period, retries the removal of orphans' objects (mds_data_orphan_sweep:
 * at start, after every REGISTER, and every minute).
 *
 * Placement draws on this table: mds_dsreg_place for one object,
 * mds_dsreg_candidates for the segments mds/data.c places.
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
#include "layout/devid.h"
#include "layout/policy.h"
#include "mds/data.h"
#include "mds/dsreg.h"
#include "mds/ec.h"
#include "mds/io_gss.h"
#include "mds/layout.h"
#include "mds/mds_impl.h"
#include "mds/resilver.h"
#include "mds/state.h"
#include "nfsd/metrics.h"

#define DSREG_FILE	  "data-servers"
#define SWEEP_INTERVAL_NS (60ull * 1000000000ull)

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
 * before mu; mu guards ents[], nents and every ds_ent; tmu guards stop and
 * kick.  mds/data.c's object locks are taken before these, never while
 * holding them.  Entries are only ever added, so an ds_ent pointer stays
 * valid.
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

/* Short of space: below its reserve (lowspace) or refusing writes (full). */
#define SPACE_FREED_WAIT_MS 200 /* mds_dsreg_space_freed: a short server's fresh HEARTBEAT */

static bool ent_short(const struct ds_ent *e)
{
	return e->i.health & (BRAID_CTL_HEALTH_LOWSPACE | BRAID_CTL_HEALTH_FULL);
}

/* Up and taking new objects, whatever its space. */
static bool ent_takes(const struct mds_dsreg *r, const struct ds_ent *e, uint64_t now)
{
	return ent_up(r, e, now) && !e->i.drained && !e->i.lost &&
	       !(e->i.health & (BRAID_CTL_HEALTH_DRAINING | BRAID_CTL_HEALTH_READONLY));
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
		bool lost = !strcmp(flag, "lost");
		bool ok = (nf == 2 || (nf == 3 && (drained || removed || lost))) && id > 0 &&
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
				 "\"drained\", \"lost\", \"removed\" or nothing",
				 r->path, lineno);
			rc = -EINVAL;
		} else if ((rc = ent_add(r, (uint32_t)id, uuid))) {
			snprintf(msg, msglen, "out of memory");
		} else {
			r->ents[r->nents - 1]->i.drained = drained;
			r->ents[r->nents - 1]->i.lost = lost;
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
	bool drained, removed, lost;
};

/* The table's bindings (with room for one more at the end): malloc'd. */
static struct binding *bindings_snapshot(struct mds_dsreg *r, unsigned *n)
{
	pthread_mutex_lock(&r->mu);
	struct binding *b = malloc((r->nents + 1) * sizeof(*b));
	for (unsigned k = 0; b && k < r->nents; k++) {
		const struct ds_ent *e = r->ents[k];
		b[k] = (struct binding){.id = e->i.id,
					.drained = e->i.drained,
					.removed = e->removed,
					.lost = e->i.lost};
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
		fputs(b[i].removed ? " removed\n"
		      : b[i].lost  ? " lost\n"
		      : b[i].drained ? " drained\n"
				     : "\n",
		      f);
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
					   p->bp_wsize, (p->bp_flags & BRAID_CTL_PROTO_GSS) != 0};
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
	n->i.lost = e->i.lost;
	n->i.health = 0;
	/* REGISTER carries no count: the last HEARTBEAT's stands until the next
	 * (same id, same store) */
	n->i.objects = e->i.objects;
	n->hb_ns = nfsd_now_ns();
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
	mds_resilver_kick(mds); /* its stale copies can be brought up to date */
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
	bool freed = false;
	pthread_mutex_lock(&r->mu);
	struct ds_ent *e = ent_find(r, a->hb_ds_id);
	/* unknown, not registered since we started, or restarted: REGISTER again */
	if (!e || !e->i.registered || memcmp(e->i.boot_verifier, a->hb_boot_verifier, 8)) {
		res->hb_status = BRAID_CTL_STALE;
	} else {
		/* no longer full, or room for another full-sized write */
		freed = ((e->i.health & BRAID_CTL_HEALTH_FULL) &&
			 !(a->hb_health & BRAID_CTL_HEALTH_FULL)) ||
			a->hb_free > e->i.free + (1u << 20);
		e->i.capacity = a->hb_capacity;
		e->i.free = a->hb_free;
		e->i.objects = a->hb_objects;
		e->i.health = a->hb_health;
		e->hb_ns = nfsd_now_ns();
		e->i.io = (struct mds_ds_iostats){
		    .reads = a->hb_io.io_reads,
		    .read_bytes = a->hb_io.io_read_bytes,
		    .read_ns = a->hb_io.io_read_ns,
		    .writes = a->hb_io.io_writes,
		    .write_bytes = a->hb_io.io_write_bytes,
		    .write_ns = a->hb_io.io_write_ns,
		    .commits = a->hb_io.io_commits,
		    .at_ns = e->hb_ns,
		};
		res->hb_status = BRAID_CTL_OK;
		res->u.hb_heartbeat_interval = hb_interval_s(mds);
	}
	pthread_mutex_unlock(&r->mu);
	if (freed)
		mds_layout_ds_space_freed(mds, a->hb_ds_id);
	return NFSD_SUCCESS;
}

/* The MDS's side of the program: NULL, REGISTER, HEARTBEAT, EC_LOCATE
 * (mds/ec.c: store reads, on a worker); the data servers' procedures
 * answer PROC_UNAVAIL here. */
#define DSREG_NPROCS (BRAID_CTLPROC_EC_LOCATE + 1)
static struct nfsd_proc dsreg_procs[DSREG_NPROCS] = {
    [BRAID_CTLPROC_NULL] = {.name = "NULL", .fn = c_null, .flags = NFSD_PROC_INLINE},
    [BRAID_CTLPROC_REGISTER] = {.name = "REGISTER", .fn = c_register},
    [BRAID_CTLPROC_HEARTBEAT] = {.name = "HEARTBEAT", .fn = c_heartbeat, .flags = NFSD_PROC_INLINE},
    [BRAID_CTLPROC_EC_LOCATE] = {.name = "EC_LOCATE", .fn = mds_ec_locate},
};
static const struct nfsd_version dsreg_versions[] = {
    {.vers = BRAID_CTL_V1, .procs = dsreg_procs, .nprocs = DSREG_NPROCS},
};

const struct nfsd_program *mds_dsreg_program(struct braid_mds *mds)
{
	return mds->dsreg ? &mds->dsreg->prog : NULL;
}

/* ------------------------------------------------------- table queries */

unsigned mds_dsreg_list(struct braid_mds *mds, struct mds_ds_info *out, unsigned max)
{
	struct mds_dsreg *r = mds->dsreg;
	uint64_t now = nfsd_now_ns();
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
	bool was = e && e->i.drained, was_lost = e && e->i.lost;
	if (e) {
		e->i.drained = drain;
		if (!drain)
			e->i.lost = false; /* readmitted: an empty server */
	}
	pthread_mutex_unlock(&r->mu);
	int rc = e ? 0 : -ENOENT;
	if (e && (was != drain || was_lost != e->i.lost)) {
		unsigned n;
		struct binding *b = bindings_snapshot(r, &n);
		rc = b ? bindings_save(r, b, n) : -ENOMEM;
		free(b);
		if (rc) { /* not durable: not done */
			pthread_mutex_lock(&r->mu);
			e->i.drained = was;
			e->i.lost = was_lost;
			pthread_mutex_unlock(&r->mu);
		}
	}
	pthread_mutex_unlock(&r->reg_mu);
	if (!rc && was_lost && !drain)
		mds_log("data server %u, declared lost, admitted back by the administrator (as "
			"an empty server)",
			id);
	else if (!rc && was != drain)
		mds_log("data server %u %s by the administrator", id,
			drain ? "drained (no new objects go there)"
			      : "admitted back into placement");
	return rc;
}

int mds_dsreg_lost(struct braid_mds *mds, uint32_t id, const char *why)
{
	struct mds_dsreg *r = mds->dsreg;
	pthread_mutex_lock(&r->reg_mu);
	pthread_mutex_lock(&r->mu);
	struct ds_ent *e = ent_find(r, id);
	bool was = e && e->i.lost;
	if (e)
		e->i.lost = true;
	pthread_mutex_unlock(&r->mu);
	int rc = e ? 0 : -ENOENT;
	if (e && !was) {
		unsigned n;
		struct binding *b = bindings_snapshot(r, &n);
		rc = b ? bindings_save(r, b, n) : -ENOMEM;
		free(b);
		if (rc) {
			pthread_mutex_lock(&r->mu);
			e->i.lost = false;
			pthread_mutex_unlock(&r->mu);
		}
	}
	pthread_mutex_unlock(&r->reg_mu);
	if (!rc && !was)
		mds_log("data server %u declared lost (%s): its copies are rebuilt on the others",
			id, why);
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
		ent_copy(r, e, nfsd_now_ns(), out);
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
					    i->protos[k].rsize, i->protos[k].wsize, i->protos[k].gss};
}

void mds_dsreg_space(struct braid_mds *mds, uint64_t *total, uint64_t *avail)
{
	struct mds_dsreg *r = mds->dsreg;
	*total = *avail = 0;
	if (!r)
		return;
	uint64_t now = nfsd_now_ns();
	pthread_mutex_lock(&r->mu);
	for (unsigned i = 0; i < r->nents; i++) {
		const struct ds_ent *e = r->ents[i];
		if (!ent_up(r, e, now))
			continue;
		*total += e->i.capacity;
		/* what new files can take: not a server placement leaves out */
		if (ent_takes(r, e, now) && !ent_short(e))
			*avail += e->i.free;
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

/* Its NFSv4.1 under RPCSEC_GSS, the Kerberos hop's (mds/io_gss.h). */
static bool ent_nfs41_gss(const struct ds_ent *e, uint32_t *rsize, uint32_t *wsize)
{
	for (unsigned k = 0; k < e->i.nprotos; k++) {
		const struct mds_ds_proto *p = &e->i.protos[k];
		if (p->version == 4 && p->minorversion == 1 && p->gss && proto_usable(p)) {
			*rsize = p->rsize;
			*wsize = p->wsize;
			return true;
		}
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
	uint64_t now = nfsd_now_ns();
	uint64_t total = 0;
	bool short_only = false;
	int rc = -EAGAIN;
	pthread_mutex_lock(&r->mu);
	for (int pass = 0; pass < 2 && rc; pass++) {
		uint64_t pick = pass ? rng_next(r) % total : 0;
		for (unsigned i = 0; i < r->nents; i++) {
			const struct ds_ent *e = r->ents[i];
			uint32_t rs, ws;
			if (!ent_takes(r, e, now) || (nfs3 && !ent_nfs3(e, &rs, &ws)))
				continue;
			if (ent_short(e)) {
				short_only = true;
				continue;
			}
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
	pthread_mutex_unlock(&r->mu);
	return rc && short_only ? -ENOSPC : rc;
}

void mds_dsreg_space_freed(struct braid_mds *mds, uint32_t id)
{
	struct mds_dsreg *r = mds->dsreg;
	if (!r)
		return;
	uint64_t t0 = nfsd_now_ns();
	pthread_mutex_lock(&r->mu);
	struct ds_ent *e = ent_find(r, id);
	bool was_short = e && ent_short(e);
	if (e)
		e->i.health &= ~(uint32_t)BRAID_CTL_HEALTH_FULL; /* by definition */
	pthread_mutex_unlock(&r->mu);
	/* lowspace is the data server's to say: its store heartbeats at once
	 * when space is freed, so wait for that one, briefly, and a placement
	 * right after an rm sees the room it made (or that there is too
	 * little) */
	for (int i = 0; was_short && i < SPACE_FREED_WAIT_MS / 5; i++) {
		usleep(5000);
		pthread_mutex_lock(&r->mu);
		e = ent_find(r, id);
		bool fresh = !e || e->hb_ns > t0;
		pthread_mutex_unlock(&r->mu);
		if (fresh)
			break;
	}
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
 * NFSv3 (the MDS proxies I/O over it), with room (neither lowspace nor
 * full) and not in avoid; those in avoid only when nothing else is.
 * Weighted by free space.  *space_short: none usable, and some were left
 * out only for want of space.
 */
unsigned mds_dsreg_candidates(struct braid_mds *mds, const uint32_t *avoid, unsigned navoid,
			      struct layout_cand *out, unsigned max, bool *space_short)
{
	struct mds_dsreg *r = mds->dsreg;
	uint64_t now = nfsd_now_ns();
	unsigned n = 0;
	bool shorted = false;
	pthread_mutex_lock(&r->mu);
	/* tier 1: those avoided too, rather than none at all */
	for (int tier = 0; tier < 2 && !n; tier++)
		for (unsigned i = 0; i < r->nents && n < max; i++) {
			const struct ds_ent *e = r->ents[i];
			uint32_t rs, ws;
			if (!ent_takes(r, e, now) || !ent_nfs3(e, &rs, &ws) ||
			    (tier < 1 && id_in(avoid, navoid, e->i.id)))
				continue;
			if (ent_short(e)) {
				shorted = true;
				continue;
			}
			out[n++] = (struct layout_cand){e->i.id, e->i.free};
		}
	pthread_mutex_unlock(&r->mu);
	if (space_short)
		*space_short = !n && shorted;
	return n;
}
uint64_t mds_dsreg_random(struct braid_mds *mds)
{
	return rng_next(mds->dsreg);
}

/* --------------------------------------------------------- connections */

void mds_ds_conn_put(struct mds_ds_conn *dc)
{
	if (dc && atomic_fetch_sub(&dc->ref, 1) == 1) {
		mds_io_gss_free(dc->gss);
		pthread_mutex_destroy(&dc->gss_mu);
		nfsd_clnt_free(dc->clnt);
		free(dc);
	}
}

struct mds_ds_conn *mds_ds_conn_get(struct braid_mds *mds, uint32_t id, int *err)
{
	struct mds_dsreg *r = mds->dsreg;
	pthread_mutex_lock(&r->mu);
	struct ds_ent *e = ent_find(r, id);
	if (!e || !ent_up(r, e, nfsd_now_ns())) {
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
	uint32_t rs = 0, ws = 0, rsg = 0, wsg = 0;
	ent_nfs3(e, &rs, &ws);
	ent_nfs41_gss(e, &rsg, &wsg);
	char host[sizeof(e->i.hostname)];
	memcpy(host, e->i.hostname, sizeof(host));
	pthread_mutex_unlock(&r->mu);

	if (!(dc = calloc(1, sizeof(*dc)))) {
		*err = -ENOMEM;
		return NULL;
	}
	/* a data server that died (its port refuses) fails calls at once, not
	 * at ds_timeout: a placement then moves on, a release is swept later */
	struct nfsd_clnt_opts o = {
	    .timeout_ms = r->call_timeout_ms, .reconnect = true, .fail_unreachable = true};
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
	pthread_mutex_init(&dc->gss_mu, NULL);
	dc->id = id;
	dc->rsize3 = rs < MDS_IO_MAX ? rs : MDS_IO_MAX;
	dc->wsize3 = ws < MDS_IO_MAX ? ws : MDS_IO_MAX;
	dc->rsize41g = rsg < MDS_IO_MAX ? rsg : MDS_IO_MAX;
	dc->wsize41g = wsg < MDS_IO_MAX ? wsg : MDS_IO_MAX;
	memcpy(dc->host, host, sizeof(dc->host));
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

static void note_transitions(struct mds_dsreg *r)
{
	uint64_t now = nfsd_now_ns();
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

static bool thread_stopping(void *arg)
{
	struct mds_dsreg *r = arg;
	pthread_mutex_lock(&r->tmu);
	bool stop = r->stop;
	pthread_mutex_unlock(&r->tmu);
	return stop;
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
		uint64_t now = nfsd_now_ns();
		if ((kick || now >= next_sweep) && !mds_state_in_grace(r->mds)) {
			mds_data_orphan_sweep(r->mds, thread_stopping, r);
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
	pthread_mutex_init(&r->tmu, NULL);
	pthread_cond_init(&r->tcond, NULL);
	r->next_id = 1;
	uint64_t t = mds->set.ds_timeout_ms;
	r->call_timeout_ms = (unsigned)(t < 5000 ? 5000 : t > 30000 ? 30000 : t);
	atomic_init(&r->rng, nfsd_now_ns() ^ (uint64_t)getpid() << 32);
	snprintf(r->path, sizeof(r->path), "%s/%s", mds->set.store_dir, DSREG_FILE);
	int rc = bindings_load(r, msg, msglen);
	if (rc)
		return rc;
	static const char *const sec[] = {"sec=\"sys\"", "sec=\"krb5i\"", "sec=\"krb5p\""};
	for (unsigned i = 0; i < 3; i++)
		mds->m_proxy_calls[i] = nfsd_metrics_counter(
		    mds->metrics, "braid_mds_proxy_calls_total",
		    "Data server calls of I/O the MDS proxies, by the hop's protection: sys "
		    "(NFSv3 AUTH_SYS), krb5i or krb5p (NFSv4.1, RPCSEC_GSS).",
		    sec[i]);
	if (!(r->eng = nfsd_client_engine_new(2, 0, &rc))) {
		snprintf(msg, msglen, "data server client: %s", strerror(-rc));
		return rc;
	}
	nfsd_procs_bind(dsreg_procs, DSREG_NPROCS,
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
	pthread_cond_destroy(&r->tcond);
	pthread_mutex_destroy(&r->tmu);
	pthread_mutex_destroy(&r->mu);
	pthread_mutex_destroy(&r->reg_mu);
	free(r);
	mds->dsreg = NULL;
}
