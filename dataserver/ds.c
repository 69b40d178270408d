/* SPDX-License-Identifier: MIT */
/*
 * braid-ds: settings, start and stop, READ buffers, and registration with
 * the MDS (REGISTER at start and whenever a HEARTBEAT says STALE).
 */
#include "config.h"

#include "braid_ctl.h"
#include "nfs3_prot.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ctl/client.h"
#include "dataserver/ds_impl.h"
#include "nfsd/auth_gss.h"
#include "nfsd/nfs41.h"
#include "nfsd/trace.h"

static const char *const io_modes[] = { "uring", "psync", NULL };

#define S(m) CONF_AT(struct ds_settings, m)
const struct conf_schema ds_conf_schema[] = {
	{ "ds", NULL, "store_dir", CONF_STRING, .def = "/var/lib/braid/ds", S(store_dir),
	  .desc = "Directory of the object store (one per data disk)." },
	{ "ds", NULL, "create", CONF_BOOL, .def = "yes", S(create),
	  .desc = "Make a new store when store_dir holds none (no: refuse, e.g. to catch an "
		  "unmounted disk)." },
	{ "ds", NULL, "direct_io", CONF_BOOL, .def = "no", S(direct_io),
	  .desc = "Read and write object data with O_DIRECT where the filesystem allows it." },
	{ "ds", NULL, "io", CONF_ENUM, .values = io_modes, .def = "uring", S(io),
	  .desc = "Storage I/O engine: io_uring, or plain preadv/pwritev." },
	{ "ds", NULL, "block_size", CONF_SIZE, .min = 4096, .max = 1 << 20, .def = "4k",
	  S(block_size), .desc = "CRC block of a new store (a power of two)." },
	{ "ds", NULL, "max_open", CONF_INT, .min = 16, .max = 1 << 20, .def = "1024", S(max_open),
	  .desc = "Idle objects kept open." },
	{ "ds", NULL, "listen", CONF_ADDRS, CONF_REPEAT, .def = "0.0.0.0:2049", S(listen),
	  .desc = "Addresses to serve NFS and the control protocol on (port 0: any free port)." },
	{ "ds", NULL, "rdma_listen", CONF_ADDRS, CONF_REPEAT, S(rdma_listen),
	  .desc = "Addresses of RDMA devices (a RoCE NIC's, soft-RoCE's netdev's) to serve NFS on "
		  "over RPC-over-RDMA, port 20049 by convention; advertised to clients that reach "
		  "the MDS over RDMA (netid rdma); none: TCP only." },
	{ "ds", NULL, "advertise", CONF_ADDRS, CONF_REPEAT, S(advertise),
	  .desc = "Addresses clients are told to use, when they differ from listen (NAT, "
		  "wildcard listen); default: listen." },
	{ "ds", NULL, "ctl_advertise", CONF_ADDRS, CONF_REPEAT, S(ctl_advertise),
	  .desc = "Addresses the MDS calls this data server at; default: advertise." },
	{ "ds", NULL, "key_file", CONF_STRING, .def = "/etc/braid/cluster.key", S(key_file),
	  .desc = "The cluster key shared with braid-mds (64 hex digits, mode 0600)." },
	{ "ds", NULL, "keytab", CONF_STRING, .def = "", S(keytab),
	  .desc = "Kerberos keytab holding this server's nfs/HOST@REALM keys: enables RPCSEC_GSS "
		  "(krb5, krb5i, krb5p) for clients whose MDS mount uses Kerberos; empty: AUTH_SYS only." },
	{ "ds", NULL, "mds", CONF_ADDRS, S(mds),
	  .desc = "Control address of braid-mds to register with; none: stand alone." },
	{ "ds", NULL, "hostname", CONF_STRING, S(hostname),
	  .desc = "Name given to the MDS; default: the host name." },
	{ "ds", NULL, "nfs3", CONF_BOOL, .def = "yes", S(nfs3),
	  .desc = "Serve NFSv3 data access." },
	{ "ds", NULL, "nfs41", CONF_BOOL, .def = "yes", S(nfs41),
	  .desc = "Serve NFSv4.1/4.2 data access." },
	{ "ds", NULL, "max_io", CONF_SIZE, .min = 4096, .max = 1 << 20, .def = "1m", S(max_io),
	  .desc = "Largest READ and WRITE (rsize and wsize given to clients)." },
	{ "ds", NULL, "loops", CONF_INT, .min = 0, .max = 256, .def = "0", S(loops),
	  .desc = "Network event loops; 0: one per core." },
	{ "ds", NULL, "workers", CONF_INT, .min = 0, .max = 4096, .def = "0", S(workers),
	  .desc = "Threads doing storage I/O; 0: 16 per core." },
	{ "ds", NULL, "read_window", CONF_INT, .min = 0, .max = 4096, .def = "3", S(read_window),
	  .desc = "READs from the page cache in progress per connection (their CRC check "
		  "kept just ahead of the send); 0: no limit.  Not with direct_io." },
	{ "ds", NULL, "reserve", CONF_SIZE, .def = "0", S(reserve),
	  .desc = "Free space below which the MDS places no new objects here (lowspace); 0: 1% "
		  "of the filesystem, at most 1g." },
	{ "ds", NULL, "scrub_interval", CONF_DURATION, .def = "0", S(scrub_interval_ms),
	  .desc = "Verify every block this often in the background; 0: never." },
	{ "ds", NULL, "metrics_listen", CONF_ADDRS, S(metrics_listen),
	  .desc = "Addresses to serve Prometheus metrics on, over HTTP (GET /metrics); "
		  "none: no metrics server." },
	{ 0 }
};
#undef S

int ds_settings_load(const char *path, struct ds_settings *s, struct conf_error *err)
{
	memset(s, 0, sizeof(*s));
	return conf_load(ds_conf_schema, s, path, err);
}

void ds_log(const char *fmt, ...)
{
	char buf[1024];
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	int n = (int)strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ braid-ds: ", &tm);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", buf);
}

void ds_req_ids(const struct nfsd_req *req, uint32_t *uid, uint32_t *gid)
{
	if (req->cred.flavor == NFSD_AUTH_SYS) {
		*uid = req->cred.uid;
		*gid = req->cred.gid;
	} else {
		*uid = *gid = 65534; /* nobody: other-permission bits only */
	}
}

/* ---------------------------------------------------------------- buffers */

#define BUF_HDR	 4096	   /* below the data; its first word names the pool */
#define BUF_HUGE (2u << 20) /* a transparent huge page */
#define BUF_KEEP 64	   /* free buffers kept (each holds BUF_HUGE or more) */

/*
 * The data of a buffer starts on a 2 MiB boundary in memory asked for as
 * huge pages (MADV_HUGEPAGE), so it is physically contiguous.  An O_DIRECT
 * READ of 1 MiB into 4 KiB pages scattered in memory needs 256 segments,
 * and a virtio disk takes 254 per request: every READ became two requests
 * to the disk, the second of 8 KiB, and braid-ds read ~15% slower than fio
 * at the same depth.  Without huge pages the buffer still works, split.
 */
static size_t buf_span(const struct ds_bufpool *p)
{
	return ((size_t)p->size + BUF_HUGE - 1) & ~((size_t)BUF_HUGE - 1);
}

static void *buf_alloc(struct ds_bufpool *p)
{
	size_t span = buf_span(p), len = BUF_HUGE + span;
	uint8_t *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	uintptr_t a = ((uintptr_t)m + BUF_HDR + BUF_HUGE - 1) & ~((uintptr_t)BUF_HUGE - 1);
	uint8_t *data = (uint8_t *)a, *hdr = data - BUF_HDR, *end = m + len;
	if (hdr > m)
		munmap(m, (size_t)(hdr - m));
	if (end > data + span)
		munmap(data + span, (size_t)(end - (data + span)));
#ifdef MADV_HUGEPAGE
	madvise(data, span, MADV_HUGEPAGE);
#endif
	*(struct ds_bufpool **)hdr = p;
	if (p->srv)
		nfsd_server_rdma_register(p->srv, data, span);
	return data;
}

static void buf_unmap(struct ds_bufpool *p, void *b)
{
	if (p->srv)
		nfsd_server_rdma_unregister(p->srv, b);
	munmap((uint8_t *)b - BUF_HDR, BUF_HDR + buf_span(p));
}

/* A buffer of at least max_io bytes, 2 MiB aligned; NULL if none. */
static void *buf_get(struct braid_ds *ds)
{
	struct ds_bufpool *p = &ds->bufs;
	void *b = NULL;
	pthread_mutex_lock(&p->mu);
	if (p->nfree)
		b = p->free[--p->nfree];
	pthread_mutex_unlock(&p->mu);
	return b ? b : buf_alloc(p);
}

/* The request's on_free hook: back to the pool once the reply is sent. */
static void buf_release(void *b)
{
	struct ds_bufpool *p = *(struct ds_bufpool **)((uint8_t *)b - BUF_HDR);
	pthread_mutex_lock(&p->mu);
	if (p->nfree < p->cap) {
		p->free[p->nfree++] = b;
		b = NULL;
	}
	pthread_mutex_unlock(&p->mu);
	if (b)
		buf_unmap(p, b);
}

void *ds_req_buf(struct braid_ds *ds, struct nfsd_req *req)
{
	void *buf = buf_get(ds);
	if (buf && nfsd_req_on_free(req, buf_release, buf)) {
		buf_release(buf);
		buf = NULL;
	}
	return buf;
}

/* ------------------------------------------------------- READ and WRITE */

uint32_t ds_nfs_status(int err)
{
	switch (err) {
	case 0:
		return NFS3_OK;
	case -ENOENT:
	case -ESTALE:
		return NFS3ERR_STALE;
	case -EACCES:
		return NFS3ERR_ACCES;
	case -EPERM:
		return NFS3ERR_PERM;
	case -EFBIG:
		return NFS3ERR_FBIG;
	case -ENOSPC:
		return NFS3ERR_NOSPC;
	case -EDQUOT:
		return NFS3ERR_DQUOT;
	case -EROFS:
		return NFS3ERR_ROFS;
	case -EINVAL:
		return NFS3ERR_INVAL;
	case -EAGAIN:
	case -EBUSY:
		return NFS3ERR_JUKEBOX;
	case -EIO:
	default:
		return NFS3ERR_IO;
	}
}

uint64_t ds_obj_fileid(const struct ds_objid *id)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | id->key[i];
	return v ^ id->gen;
}

static void map_release(void *arg)
{
	struct ds_store_map *m = arg;
	ds_store_unmap(m);
	free(m);
}

/* Probes ds__read, ds__write, ds__commit (docs/tracing.md): an object is
 * named by the first 8 bytes of its key, big-endian. */
static uint64_t trace_key(const struct ds_objid *id)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | id->key[i];
	return v;
}

/* where: how the store moved the bytes */
enum { DS_TRACE_CACHE = 0, DS_TRACE_DISK = 1 };

/* READ from the page cache through the object's mapping, else into a
 * pooled buffer (O_DIRECT, or pages not cached: the disk) */
static int io_read(struct braid_ds *ds, struct nfsd_req *req, const struct ds_objid *id,
		   uint32_t uid, uint32_t gid, uint64_t off, size_t len, xdr_opaque *data, bool *eof,
		   unsigned *where)
{
	*where = DS_TRACE_CACHE;
	/* from the page cache straight to the socket: verified in a mapping */
	struct ds_store_map *m = malloc(sizeof(*m));
	if (m) {
		const void *p;
		ssize_t n = ds_store_read_mapped(ds->store, id, uid, gid, off, len, m, &p, eof);
		if (n >= 0 && nfsd_req_on_free(req, map_release, m)) {
			ds_store_unmap(m);
			n = -ENOMEM;
		}
		if (n >= 0) {
			*data = xdr_opaque_of(p, (size_t)n);
			return 0;
		}
		free(m);
		if (n != -EOPNOTSUPP)
			return (int)n;
	}
	*where = DS_TRACE_DISK;
	nfsd_req_unbulk(req); /* from disk: no reason to hold the next READ back */
	void *buf = ds_req_buf(ds, req);
	if (!buf)
		return -EAGAIN;
	ssize_t n = ds_store_read(ds->store, id, uid, gid, off, len, buf, eof);
	if (n < 0)
		return (int)n;
	*data = xdr_opaque_of(buf, (size_t)n);
	return 0;
}

int ds_io_read(struct braid_ds *ds, struct nfsd_req *req, const struct ds_objid *id,
	       uint32_t uid, uint32_t gid, uint64_t off, uint32_t count, xdr_opaque *data,
	       bool *eof)
{
	size_t len = count < ds->set.max_io ? count : ds->set.max_io;
	*eof = false;
	if (!len) {
		struct ds_obj_stat os;
		int rc = ds_store_stat(ds->store, id, &os);
		if (rc)
			return rc;
		*eof = off >= os.size;
		*data = xdr_opaque_of(NULL, 0);
		return 0;
	}
	uint64_t t0 = BRAID_TRACE_ENABLED(ds__read) ? nfsd_now_ns() : 0;
	unsigned where;
	int rc = io_read(ds, req, id, uid, gid, off, len, data, eof, &where);
	BRAID_TRACE(ds__read, trace_key(id), off, rc ? 0 : data->len, rc, where,
		    BRAID_TRACE_US(t0, nfsd_now_ns()));
	return rc;
}

ssize_t ds_io_write(struct braid_ds *ds, const struct ds_objid *id, uint32_t uid, uint32_t gid,
		    uint64_t off, xdr_opaque data, uint32_t stable)
{
	if (data.len > ds->set.max_io || stable > DS_FILE_SYNC)
		return -EINVAL;
	struct iovec iov = { .iov_base = (void *)data.val, .iov_len = data.len };
	uint64_t t0 = BRAID_TRACE_ENABLED(ds__write) ? nfsd_now_ns() : 0;
	ssize_t n = ds_store_write(ds->store, id, uid, gid, off, &iov, 1, (enum ds_stable)stable);
	BRAID_TRACE(ds__write, trace_key(id), off, n < 0 ? 0 : n, n < 0 ? n : 0,
		    ds_store_direct(ds->store) ? DS_TRACE_DISK : DS_TRACE_CACHE,
		    BRAID_TRACE_US(t0, nfsd_now_ns()), stable);
	return n;
}

int ds_io_commit(struct braid_ds *ds, const struct ds_objid *id, uint32_t uid, uint32_t gid,
		 uint64_t off, uint64_t count)
{
	uint64_t t0 = BRAID_TRACE_ENABLED(ds__commit) ? nfsd_now_ns() : 0;
	int rc = ds_store_access(ds->store, id, uid, gid, 2);
	if (!rc)
		rc = ds_store_commit(ds->store, id, off, count);
	BRAID_TRACE(ds__commit, trace_key(id), off, count, rc,
		    ds_store_direct(ds->store) ? DS_TRACE_DISK : DS_TRACE_CACHE,
		    BRAID_TRACE_US(t0, nfsd_now_ns()));
	return rc;
}

static void bufpool_release(struct ds_bufpool *p)
{
	for (unsigned i = 0; i < p->nfree; i++)
		buf_unmap(p, p->free[i]);
	free(p->free);
	pthread_mutex_destroy(&p->mu);
}

/* ----------------------------------------------------------- addresses */

/* RFC 5665 universal address and netid of sa. */
static int uaddr_of(const struct sockaddr_storage *ss, char *addr, size_t alen, const char **netid)
{
	char host[INET6_ADDRSTRLEN];
	unsigned port;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)ss;
		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
		*netid = "tcp";
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)ss;
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
		*netid = "tcp6";
	} else {
		return -EAFNOSUPPORT;
	}
	snprintf(addr, alen, "%s.%u.%u", host, port >> 8, port & 255);
	return 0;
}

static bool addr_is_wildcard(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ((const struct sockaddr_in *)ss)->sin_addr.s_addr == htonl(INADDR_ANY);
	const struct sockaddr_in6 *in6 = (const void *)ss;
	return IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr);
}

static void addr_set_port(struct sockaddr_storage *ss, int port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
}

static unsigned addr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
}

/* ---------------------------------------------------------- registration */

struct reg_addrs {
	braid_ctl_netaddr na[BRAID_CTL_ADDRS_MAX];
	char buf[BRAID_CTL_ADDRS_MAX][BRAID_CTL_UADDR_MAX + 1];
	unsigned n;
};

static void reg_addrs_fill(const struct conf_addrs *a, struct reg_addrs *r)
{
	r->n = 0;
	for (unsigned i = 0; i < a->n && r->n < BRAID_CTL_ADDRS_MAX; i++) {
		const char *netid;
		if (uaddr_of(&a->addr[i], r->buf[r->n], sizeof(r->buf[0]), &netid))
			continue;
		r->na[r->n].na_r_netid = xdr_string_of(netid);
		r->na[r->n].na_r_addr = xdr_string_of(r->buf[r->n]);
		r->n++;
	}
}

/* Free space below which the store is lowspace (no new placements). */
static uint64_t ds_reserve(const struct braid_ds *ds, uint64_t total)
{
	if (ds->set.reserve)
		return ds->set.reserve;
	uint64_t r = total / 100;
	return r < (1ull << 30) ? r : 1ull << 30;
}

/* The store refused a write for space, or freed some: when that changes
 * whether it is short of space (lowspace or full) from what the MDS was
 * last told, tell it now, not at the next beat. */
static void reg_kick(void *arg)
{
	struct braid_ds *ds = arg;
	uint64_t total = 0, avail = 0;
	ds_store_space(ds->store, &total, &avail);
	bool short_now = ds_store_full(ds->store, avail) || avail < ds_reserve(ds, total);
	if (short_now == atomic_load(&ds->short_reported))
		return;
	pthread_mutex_lock(&ds->reg_mu);
	ds->reg_kick = true;
	pthread_cond_broadcast(&ds->reg_cond);
	pthread_mutex_unlock(&ds->reg_mu);
}


/* HEARTBEAT's health flags. */
static uint32_t ds_health(struct braid_ds *ds, uint64_t total, uint64_t avail)
{
	struct ds_store_counters cn;
	ds_store_counters(ds->store, &cn);
	uint32_t h = cn.crc_errors || cn.read_faults ? BRAID_CTL_HEALTH_DEGRADED : 0;
	if (avail < ds_reserve(ds, total))
		h |= BRAID_CTL_HEALTH_LOWSPACE;
	if (ds_store_full(ds->store, avail))
		h |= BRAID_CTL_HEALTH_FULL;
	return h;
}

/* Wait up to ms, until stop or a kick; true when stopping. */
static bool reg_sleep(struct braid_ds *ds, unsigned ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&ds->reg_mu);
	while (!ds->reg_stop && !ds->reg_kick &&
	       pthread_cond_timedwait(&ds->reg_cond, &ds->reg_mu, &ts) == 0)
		;
	ds->reg_kick = false;
	bool stop = ds->reg_stop;
	pthread_mutex_unlock(&ds->reg_mu);
	return stop;
}

/* Its own I/O counters for HEARTBEAT: READ/WRITE/COMMIT as its engine
 * counted and timed them (NFSv3 procedures and NFSv4.1 operations), the
 * store's bytes. */
static void ds_iostats(struct braid_ds *ds, braid_ctl_iostats *io)
{
	memset(io, 0, sizeof(*io));
	struct nfsd_metrics_opstat *v = calloc(NFSD_METRICS_SLOTS, sizeof(*v));
	unsigned n = v ? nfsd_metrics_opstats(ds->metrics, v, NFSD_METRICS_SLOTS) : 0;
	for (unsigned i = 0; i < n; i++) {
		bool nfs = v[i].prog == 100003 && v[i].name;
		if (nfs && !strcmp(v[i].name, "READ")) {
			io->io_reads += v[i].count;
			io->io_read_ns += v[i].sum_ns;
		} else if (nfs && !strcmp(v[i].name, "WRITE")) {
			io->io_writes += v[i].count;
			io->io_write_ns += v[i].sum_ns;
		} else if (nfs && !strcmp(v[i].name, "COMMIT")) {
			io->io_commits += v[i].count;
		}
	}
	free(v);
	struct ds_store_counters c;
	ds_store_counters(ds->store, &c);
	io->io_read_bytes = c.bytes_read;
	io->io_write_bytes = c.bytes_written;
}

static void *reg_main(void *arg)
{
	struct braid_ds *ds = arg;
	int err = 0;
	struct nfsd_server *eng = nfsd_client_engine_new(1, 0, &err);
	if (!eng) {
		ds_log("cannot start the MDS client: %s", strerror(-err));
		return NULL;
	}
	const struct sockaddr_storage *mds = &ds->set.mds.addr[0];
	struct nfsd_clnt_opts co = { .timeout_ms = 10000, .reconnect = true };
	struct nfsd_clnt *c = nfsd_clnt_new(eng, (const struct sockaddr *)mds, sizeof(*mds), &co,
					    &err);
	if (!c) {
		ds_log("cannot reach the MDS: %s", strerror(-err));
		nfsd_server_free(eng);
		return NULL;
	}
	struct reg_addrs adv, ctl;
	reg_addrs_fill(ds->set.advertise.n ? &ds->set.advertise : &ds->set.listen, &adv);
	/* RDMA addresses too, under netid rdma/rdma6: the MDS gives them to
	 * clients that reach it over RDMA */
	for (unsigned i = 0; i < ds->set.rdma_listen.n && adv.n < BRAID_CTL_ADDRS_MAX; i++) {
		const char *netid;
		if (uaddr_of(&ds->set.rdma_listen.addr[i], adv.buf[adv.n], sizeof(adv.buf[0]),
			     &netid))
			continue;
		adv.na[adv.n].na_r_netid = xdr_string_of(strcmp(netid, "tcp6") ? "rdma" : "rdma6");
		adv.na[adv.n].na_r_addr = xdr_string_of(adv.buf[adv.n]);
		adv.n++;
	}
	reg_addrs_fill(ds->set.ctl_advertise.n ? &ds->set.ctl_advertise
					       : ds->set.advertise.n ? &ds->set.advertise
								     : &ds->set.listen,
		       &ctl);
	braid_ctl_proto protos[2];
	unsigned nprotos = 0;
	uint32_t io = (uint32_t)ds->set.max_io;
	if (ds->set.nfs41 && ds->v41)
		protos[nprotos++] =
		    (braid_ctl_proto){ 4, 1, io, io, ds->gss ? BRAID_CTL_PROTO_GSS : 0 };
	if (ds->set.nfs3)
		protos[nprotos++] = (braid_ctl_proto){ 3, 0, io, io, 0 };
	char host[256];
	if (ds->set.hostname[0])
		snprintf(host, sizeof(host), "%s", ds->set.hostname);
	else if (gethostname(host, sizeof(host)))
		snprintf(host, sizeof(host), "braid-ds");
	host[sizeof(host) - 1] = 0;
	uint8_t verf[DS_VERIFIER_SIZE];
	ds_store_verifier(ds->store, verf);

	unsigned interval = 0, backoff = 250;
	bool registered = false;
	while (!reg_sleep(ds, registered ? interval * 1000 : 0)) {
		uint64_t total = 0, avail = 0;
		ds_store_space(ds->store, &total, &avail);
		struct xdr_arena arena;
		xdr_arena_init(&arena, NULL, 0, 1u << 16);
		int rc;
		int32_t st;
		if (!registered) {
			braid_ctl_register_args a = {
				.rr_hostname = xdr_string_of(host),
				.rr_addrs = { adv.n, adv.na },
				.rr_ctl_addrs = { ctl.n, ctl.na },
				.rr_protos = { nprotos, protos },
				.rr_capacity = total,
				.rr_free = avail,
			};
			memcpy(a.rr_ds_uuid, ds->uuid, DS_UUID_SIZE);
			memcpy(a.rr_boot_verifier, verf, DS_VERIFIER_SIZE);
			braid_ctl_register_res r;
			rc = ds_ctl_call(c, &ds->key, BRAID_CTLPROC_REGISTER, &a, &r, &arena);
			st = rc ? -1 : r.rr_status;
			if (!rc && st == BRAID_CTL_OK) {
				registered = true;
				interval = r.u.rr_resok.rr_heartbeat_interval;
				interval = interval ? interval : 1;
				atomic_store(&ds->ds_id, r.u.rr_resok.rr_ds_id);
				ds_log("registered with the MDS as data server %u (heartbeat %us)",
				       r.u.rr_resok.rr_ds_id, interval);
				backoff = 250;
			}
		} else {
			braid_ctl_heartbeat_args a = {
				.hb_ds_id = atomic_load(&ds->ds_id),
				.hb_capacity = total,
				.hb_free = avail,
				.hb_objects = ds_store_objects(ds->store),
				.hb_health = ds_health(ds, total, avail),
			};
			ds_iostats(ds, &a.hb_io);
			atomic_store(&ds->short_reported,
				     (a.hb_health &
				      (BRAID_CTL_HEALTH_LOWSPACE | BRAID_CTL_HEALTH_FULL)) != 0);
			memcpy(a.hb_boot_verifier, verf, DS_VERIFIER_SIZE);
			braid_ctl_heartbeat_res r;
			rc = ds_ctl_call(c, &ds->key, BRAID_CTLPROC_HEARTBEAT, &a, &r, &arena);
			st = rc ? -1 : r.hb_status;
			atomic_fetch_add(rc || st != BRAID_CTL_OK ? &ds->heartbeat_failures
								  : &ds->heartbeats,
					 1);
			if (!rc && st == BRAID_CTL_OK && r.u.hb_heartbeat_interval)
				interval = r.u.hb_heartbeat_interval;
			else if (!rc && st == BRAID_CTL_STALE)
				registered = false; /* the MDS forgot us: register again */
		}
		xdr_arena_release(&arena);
		if (rc || (st != BRAID_CTL_OK && st != BRAID_CTL_STALE)) {
			if (rc)
				ds_log("MDS call failed: %s", strerror(-rc));
			else
				ds_log("MDS refused %s: status %d",
				       registered ? "HEARTBEAT" : "REGISTER", st);
			if (!registered && reg_sleep(ds, backoff))
				break;
			backoff = backoff < 8000 ? backoff * 2 : backoff;
		}
	}
	nfsd_clnt_free(c);
	nfsd_server_free(eng);
	return NULL;
}

/* ---------------------------------------------------------------- scrub */

static void scrub_bad(void *arg, const struct ds_objid *id, uint64_t first_bad, uint64_t nbad)
{
	(void)arg;
	char hex[2 * DS_KEY_SIZE + 1];
	for (int i = 0; i < DS_KEY_SIZE; i++)
		snprintf(hex + 2 * i, 3, "%02x", id->key[i]);
	if (first_bad == UINT64_MAX)
		ds_log("scrub: object %s gen %llu: header unreadable", hex,
		       (unsigned long long)id->gen);
	else
		ds_log("scrub: object %s gen %llu: %llu bad block(s), first at offset %llu", hex,
		       (unsigned long long)id->gen, (unsigned long long)nbad,
		       (unsigned long long)first_bad);
}

int braid_ds_scrub(struct braid_ds *ds, struct ds_scrub_stats *st)
{
	struct ds_scrub_stats local;
	int rc = ds_store_scrub(ds->store, scrub_bad, ds, st ? st : &local);
	if (!st)
		st = &local;
	ds_log("scrub: %llu objects, %llu blocks checked: %llu bad objects, %llu bad blocks",
	       (unsigned long long)st->objects, (unsigned long long)st->blocks,
	       (unsigned long long)st->bad_objects, (unsigned long long)st->bad_blocks);
	return rc;
}

static void *scrub_main(void *arg)
{
	struct braid_ds *ds = arg;
	while (!reg_sleep(ds, (unsigned)ds->set.scrub_interval_ms))
		braid_ds_scrub(ds, NULL);
	return NULL;
}

/* --------------------------------------------------------------- metrics */

static void ds_collect(void *arg, struct nfsd_metrics_out *o)
{
	struct braid_ds *ds = arg;
	nfsd_metrics_collect_server(o, ds->srv);
	nfsd_gss_metrics(o, ds->gss);
	struct ds_store_counters c;
	ds_store_counters(ds->store, &c);
	uint64_t total = 0, avail = 0;
	ds_store_space(ds->store, &total, &avail);
	const struct {
		const char *name, *type, *help;
		uint64_t v;
	} f[] = {
		{"braid_ds_read_bytes_total", "counter", "Bytes read from the object store.",
		 c.bytes_read},
		{"braid_ds_written_bytes_total", "counter", "Bytes written to the object store.",
		 c.bytes_written},
		{"braid_ds_reads_total", "counter", "Reads of the object store.", c.reads},
		{"braid_ds_writes_total", "counter", "Writes to the object store.", c.writes},
		{"braid_ds_commits_total", "counter", "COMMITs served.", c.commits},
		{"braid_ds_fsyncs_total", "counter", "fsync calls completed.", c.fsyncs},
		{"braid_ds_fdatasyncs_total", "counter", "fdatasync calls completed.", c.fdatasyncs},
		{"braid_ds_crc_errors_total", "counter", "Blocks that failed CRC verification.",
		 c.crc_errors},
		{"braid_ds_read_faults_total", "counter",
		 "READs whose page-cache pages could not be read (disk I/O error).",
		 c.read_faults},
		{"braid_ds_reads_uncached_total", "counter",
		 "READs on a page-cache store read from disk into a buffer, their pages not cached.",
		 c.reads_uncached},
		{"braid_ds_verify_skipped_blocks_total", "counter",
		 "Blocks READs sent from the page cache without verifying their CRCs again: "
		 "verified or written since, and the disk not read since.",
		 c.verify_skipped},
		{"braid_ds_nospc_total", "counter",
		 "Writes and creates refused for lack of space (ENOSPC, EDQUOT).", c.nospc},
		{"braid_ds_full", "gauge",
		 "1 while the store is full: a write was refused for space, none freed since.",
		 ds_store_full(ds->store, avail)},
		{"braid_ds_rmw_blocks_total", "counter",
		 "Partial blocks read back to recompute a CRC.", c.rmw_blocks},
		{"braid_ds_objects", "gauge", "Objects the store holds.",
		 ds_store_objects(ds->store)},
		{"braid_ds_capacity_bytes", "gauge", "Bytes of the store's filesystem.", total},
		{"braid_ds_free_bytes", "gauge", "Bytes available on the store's filesystem.", avail},
		{"braid_ds_id", "gauge", "The id the MDS assigned (0: not registered).",
		 atomic_load(&ds->ds_id)},
		{"braid_ds_heartbeats_total", "counter", "HEARTBEATs the MDS accepted.",
		 atomic_load(&ds->heartbeats)},
		{"braid_ds_heartbeat_failures_total", "counter",
		 "HEARTBEATs that failed or that the MDS refused.",
		 atomic_load(&ds->heartbeat_failures)},
	};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		nfsd_metrics_family(o, f[i].name, f[i].type, f[i].help);
		nfsd_metrics_sample_u64(o, f[i].name, NULL, f[i].v);
	}
}

int braid_ds_metrics_port(const struct braid_ds *ds, unsigned idx)
{
	return nfsd_metrics_http_port(ds->metrics_http, idx);
}

/* ---------------------------------------------------------- start, stop */

static uint64_t fsid_of(const uint8_t uuid[DS_UUID_SIZE])
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | (uint64_t)(uuid[i] ^ uuid[i + 8]);
	return v;
}

int braid_ds_start(const struct ds_settings *set, struct braid_ds **out, char *msg, size_t msglen)
{
	struct braid_ds *ds = calloc(1, sizeof(*ds));
	if (!ds) {
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	ds->set = *set;
	pthread_mutex_init(&ds->reg_mu, NULL);
	pthread_cond_init(&ds->reg_cond, NULL);
	pthread_mutex_init(&ds->bufs.mu, NULL);
	pthread_mutex_init(&ds->peer_mu, NULL);
	ds->bufs.size = set->max_io;
	ds->bufs.cap = BUF_KEEP;
	ds->bufs.free = calloc(BUF_KEEP, sizeof(void *));
	int rc = ds->bufs.free ? 0 : -ENOMEM;
	if (rc) {
		snprintf(msg, msglen, "out of memory");
		goto fail;
	}
	if (!set->nfs3 && !set->nfs41) {
		snprintf(msg, msglen, "[ds] nfs3 and nfs41 are both off: nothing to serve");
		rc = -EINVAL;
		goto fail;
	}
	if ((rc = braid_key_load(set->key_file, &ds->key, msg, msglen)))
		goto fail;
	if (!set->advertise.n)
		for (unsigned i = 0; i < set->listen.n; i++)
			if (addr_is_wildcard(&set->listen.addr[i]) && set->mds.n) {
				snprintf(msg, msglen,
					 "[ds] listen has a wildcard address: set [ds] advertise to "
					 "the addresses clients should use");
				rc = -EINVAL;
				goto fail;
			}
	struct ds_store_opts so = {
		.create = set->create,
		.direct = set->direct_io,
		.block_size = (unsigned)set->block_size,
		.max_open = (unsigned)set->max_open,
		.io = set->io == DS_IO_PSYNC ? DS_STORE_IO_PSYNC : DS_STORE_IO_URING,
		.space_changed = reg_kick,
		.space_arg = ds,
		.test_mapped_hook = set->store_test_mapped_hook,
		.test_arg = set->store_test_arg,
	};
	if (set->create && mkdir(set->store_dir, 0700) && errno != EEXIST) {
		rc = -errno;
		snprintf(msg, msglen, "store %s: %s", set->store_dir, strerror(-rc));
		goto fail;
	}
	if ((rc = ds_store_open(set->store_dir, &so, &ds->store))) {
		snprintf(msg, msglen, "store %s: %s%s", set->store_dir, strerror(-rc),
			 rc == -ENOENT ? " (no store there and [ds] create = no)"
			 : rc == -EBUSY ? " (another braid-ds has it open)"
					: "");
		goto fail;
	}
	ds_store_uuid(ds->store, ds->uuid);
	ds->fsid = fsid_of(ds->uuid);

	if (!(ds->metrics = nfsd_metrics_new()) ||
	    nfsd_metrics_collector_add(ds->metrics, ds_collect, ds) || ds_mover_new(ds) ||
	    ds_ec_new(ds)) {
		rc = -ENOMEM;
		snprintf(msg, msglen, "out of memory");
		goto fail;
	}
	struct nfsd_server_opts o;
	nfsd_server_opts_default(&o);
	o.metrics = ds->metrics;
	o.nloops = (unsigned)set->loops;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	o.nworkers = set->workers ? (unsigned)set->workers : (unsigned)(ncpu > 0 ? ncpu : 1) * 16;
	o.max_record = (uint32_t)set->max_io + 64 * 1024;
	o.arena_limit = 1u << 20;
	/* READs verify in the page cache just ahead of the send; O_DIRECT
	 * READs need the disk's depth instead */
	o.bulk_window = set->direct_io ? 0 : (unsigned)set->read_window;
	ds->srv = nfsd_server_new(&o, &rc);
	if (!ds->srv) {
		snprintf(msg, msglen, "RPC server: %s", strerror(-rc));
		goto fail;
	}
	if (!(ds->auth = braid_auth_new(&ds->key))) {
		rc = -ENOMEM;
		snprintf(msg, msglen, "out of memory");
		goto fail;
	}
	nfsd_server_add_flavor(ds->srv, braid_auth_flavor(ds->auth));
	if (set->keytab[0]) {
		struct nfsd_gss_opts go = { .keytab = set->keytab };
		if (!(ds->gss = nfsd_gss_new(&go, &rc))) {
			snprintf(msg, msglen, "keytab %s: %s", set->keytab,
				 rc == -ENOENT ? "no usable keys (missing, unreadable, or no "
						 "nfs/ principal)"
					       : strerror(-rc));
			goto fail;
		}
		nfsd_server_add_flavor(ds->srv, nfsd_gss_flavor(ds->gss));
	}
	nfsd_procs_bind(ds_nfs3_procs, 22, &xdr_desc_NFS_PROGRAM_NFS_V3);
	nfsd_procs_bind(ds_ctl_procs, DS_CTL_NPROCS, &xdr_desc_BRAID_CTL_PROGRAM_BRAID_CTL_V1);
	/* the engine hands handlers the program's priv: this ds */
	ds->nfs3_prog = ds_nfs3_program;
	ds->nfs3_prog.priv = ds;
	ds->ctl_prog = ds_ctl_program;
	ds->ctl_prog.priv = ds;
	if ((rc = nfsd_server_add_program(ds->srv, &ds->ctl_prog)))
		goto fail_prog;
	/* NFS is one program number: v3 here and v4 from the session layer,
	 * each version with its own handler state */
	unsigned nv = 0;
	if (set->nfs3) {
		ds->nfs_vers[nv] = ds_nfs3_program.versions[0];
		ds->nfs_vers[nv++].priv = ds;
	}
	if (set->nfs41) {
		if ((rc = ds_nfs41_start(ds, msg, msglen)))
			goto fail;
		ds->nfs_vers[nv++] = nfs41_server_program(ds->v41)->versions[0];
	}
	ds->nfs3_prog.versions = ds->nfs_vers;
	ds->nfs3_prog.nversions = nv;
	if ((rc = nfsd_server_add_program(ds->srv, &ds->nfs3_prog)))
		goto fail_prog;
	for (unsigned i = 0; i < set->listen.n; i++) {
		const struct sockaddr_storage *ss = &set->listen.addr[i];
		socklen_t len = ss->ss_family == AF_INET ? sizeof(struct sockaddr_in)
							 : sizeof(struct sockaddr_in6);
		if ((rc = nfsd_server_listen(ds->srv, (const struct sockaddr *)ss, len))) {
			char a[80];
			const char *netid;
			uaddr_of(ss, a, sizeof(a), &netid);
			snprintf(msg, msglen, "listen on %s: %s", a, strerror(-rc));
			goto fail;
		}
		ds->ports[i] = nfsd_server_listen_port(ds->srv, i);
		/* advertise what was bound when listen asked for any port */
		if (!addr_port(ss))
			addr_set_port(&ds->set.listen.addr[i], ds->ports[i]);
	}
	ds->nports = set->listen.n;
	for (unsigned i = 0; i < set->rdma_listen.n; i++) {
		const struct sockaddr_storage *ss = &set->rdma_listen.addr[i];
		char a[INET6_ADDRSTRLEN] = "?";
		inet_ntop(ss->ss_family,
			  ss->ss_family == AF_INET
				  ? (const void *)&((const struct sockaddr_in *)ss)->sin_addr
				  : (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr,
			  a, sizeof(a));
		if (addr_is_wildcard(ss)) {
			snprintf(msg, msglen, "[ds] rdma_listen %s: give the RDMA device's own address", a);
			rc = -EINVAL;
			goto fail;
		}
		socklen_t len = ss->ss_family == AF_INET ? sizeof(struct sockaddr_in)
							 : sizeof(struct sockaddr_in6);
		if ((rc = nfsd_server_listen_rdma(ds->srv, (const struct sockaddr *)ss, len))) {
			snprintf(msg, msglen, "rdma_listen on %s: %s%s", a, strerror(-rc),
				 nfsd_rdma_listen_hint(rc));
			goto fail;
		}
		if (!addr_port(ss))
			addr_set_port(&ds->set.rdma_listen.addr[i],
				      nfsd_server_listen_rdma_port(ds->srv, i));
	}
	ds->bufs.srv = ds->srv; /* its RDMA listeners are set up */
	if ((rc = nfsd_server_start(ds->srv))) {
		snprintf(msg, msglen, "RPC server start: %s", strerror(-rc));
		goto fail;
	}
	if (set->metrics_listen.n &&
	    (rc = nfsd_metrics_http_start(ds->metrics, set->metrics_listen.addr,
					  set->metrics_listen.n, &ds->metrics_http, msg, msglen)))
		goto fail;
	if (set->mds.n) {
		if ((rc = -pthread_create(&ds->reg_thread, NULL, reg_main, ds))) {
			snprintf(msg, msglen, "registration thread: %s", strerror(-rc));
			goto fail;
		}
		ds->reg_running = true;
	}
	if (set->scrub_interval_ms) {
		if ((rc = -pthread_create(&ds->scrub_thread, NULL, scrub_main, ds))) {
			snprintf(msg, msglen, "scrub thread: %s", strerror(-rc));
			goto fail;
		}
		ds->scrub_running = true;
	}
	*out = ds;
	return 0;
fail_prog:
	snprintf(msg, msglen, "adding RPC programs: %s", strerror(-rc));
fail:
	braid_ds_stop(ds);
	return rc;
}

int braid_ds_stop(struct braid_ds *ds)
{
	if (!ds)
		return 0;
	nfsd_metrics_http_stop(ds->metrics_http); /* no collector runs past here */
	pthread_mutex_lock(&ds->reg_mu);
	ds->reg_stop = true;
	pthread_cond_broadcast(&ds->reg_cond);
	pthread_mutex_unlock(&ds->reg_mu);
	if (ds->reg_running)
		pthread_join(ds->reg_thread, NULL);
	if (ds->scrub_running)
		pthread_join(ds->scrub_thread, NULL);
	if (ds->srv)
		nfsd_server_free(ds->srv); /* (with it every RDMA registration) */
	ds->bufs.srv = NULL;
	ds_mover_free(ds->mover); /* no COPY runs: the workers are gone */
	ds_ec_free(ds->ec);
	if (ds->peer_eng)
		nfsd_server_free(ds->peer_eng); /* no peer READ is out: their callers are gone */
	pthread_mutex_destroy(&ds->peer_mu);
	ds_nfs41_stop(ds);
	braid_auth_free(ds->auth);
	if (ds->gss)
		nfsd_gss_free(ds->gss);
	int rc = 0;
	if (ds->store)
		rc = ds_store_close(ds->store);
	if (ds->bufs.free)
		bufpool_release(&ds->bufs);
	pthread_cond_destroy(&ds->reg_cond);
	pthread_mutex_destroy(&ds->reg_mu);
	nfsd_metrics_free(ds->metrics);
	memset(&ds->key, 0, sizeof(ds->key));
	free(ds);
	return rc;
}

int braid_ds_port(const struct braid_ds *ds, unsigned idx)
{
	return idx < ds->nports ? ds->ports[idx] : -1;
}

unsigned braid_ds_nports(const struct braid_ds *ds)
{
	return ds->nports;
}

struct ds_store *braid_ds_store(struct braid_ds *ds)
{
	return ds->store;
}

uint32_t braid_ds_id(const struct braid_ds *ds)
{
	return atomic_load(&((struct braid_ds *)ds)->ds_id);
}
