/* SPDX-License-Identifier: MIT */
/*
 * Metrics: counters, gauges and fixed-bucket latency histograms, exposed
 * in the Prometheus text format (version 0.0.4), or OpenMetrics 1.0.0 to a
 * scraper that asks for it, at GET /metrics (served by libmicrohttpd).
 *
 * A registry (struct nfsd_metrics) belongs to one daemon instance; the
 * daemon hands it to the RPC engine (nfsd_server_opts.metrics) and to the
 * NFSv4.1 session layer (nfs41_server_opts.metrics), which record every
 * call and every COMPOUND operation:
 *
 *	braid_rpc_requests_total{program,version,procedure}      counter
 *	braid_rpc_errors_total{...}        replies other than SUCCESS
 *	braid_rpc_duration_seconds{...}    histogram, decode to reply
 *	braid_nfs4_ops_total{minorversion,op}                    counter
 *	braid_nfs4_op_errors_total{...}    results other than NFS4_OK
 *	braid_nfs4_op_duration_seconds{...} histogram
 *	braid_nfs4_op_bytes_total{...}     READ, WRITE, READ_PLUS data moved
 *
 * Daemons add their own series by name (nfsd_metrics_counter, _gauge,
 * _histogram: registered once, then updated lock-free) and collectors,
 * functions that write families at scrape time from state they already
 * keep (per client, per data server).
 *
 * Recording is lock-free: one table of atomic counters per (program,
 * version, procedure) or (minor version, op), found by hashing; a series
 * is made on first use, and beyond NFSD_METRICS_SLOTS distinct keys new
 * ones are dropped (and counted in braid_metrics_dropped_total).
 * Histograms have fixed buckets, 25 us to 10 s, plus +Inf.
 *
 * Threads: recording and nfsd_metric_* from any thread.  Registration
 * takes the registry's mutex.  Collectors run on an HTTP thread (or
 * whoever renders) with no lock of this module held except the render
 * lock: they must not register series or add/remove collectors.
 */
#ifndef BRAID_NFSD_METRICS_H
#define BRAID_NFSD_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define NFSD_METRICS_SLOTS   1024 /* distinct procedures and ops recorded */
#define NFSD_METRICS_BUCKETS 18	  /* histogram buckets before +Inf */

struct nfsd_metrics;
struct nfsd_server;

struct nfsd_metrics *nfsd_metrics_new(void);
/* After everything that records into it has stopped. */
void nfsd_metrics_free(struct nfsd_metrics *m);

/* The buckets' upper bounds in nanoseconds (le="..." in seconds). */
extern const uint64_t nfsd_metrics_bucket_ns[NFSD_METRICS_BUCKETS];

/*
 * One RPC call served (the engine): accept_stat is the reply's
 * (NFSD_SUCCESS ...), ns from the record's arrival to the reply.  Names
 * must be static strings (the program's and procedure table's).
 */
void nfsd_metrics_rpc(struct nfsd_metrics *m, uint32_t prog, const char *prog_name, uint32_t vers,
		      uint32_t proc, const char *proc_name, uint32_t accept_stat, uint64_t ns);
/* One NFSv4 operation of a COMPOUND: its status, time, and for operations
 * that move file data the bytes moved (NULL for the others). */
void nfsd_metrics_nfs4_op(struct nfsd_metrics *m, uint32_t minor, uint32_t op, const char *op_name,
			  uint32_t status, uint64_t ns, const uint64_t *bytes);

/*
 * Registered series.  name: [a-zA-Z_:][a-zA-Z0-9_:]*; labels: NULL or
 * preformatted 'k="v",k2="v2"' with values escaped (nfsd_metrics_escape).
 * The same name and labels again give the same series; NULL when the
 * name is taken by another type, the arguments are malformed, or memory
 * runs out.  The nfsd_metric_* calls accept NULL and do nothing then.
 */
struct nfsd_metric;
struct nfsd_metric *nfsd_metrics_counter(struct nfsd_metrics *m, const char *name, const char *help,
					 const char *labels);
struct nfsd_metric *nfsd_metrics_gauge(struct nfsd_metrics *m, const char *name, const char *help,
				       const char *labels);
struct nfsd_metric *nfsd_metrics_histogram(struct nfsd_metrics *m, const char *name,
					   const char *help, const char *labels);
void nfsd_metric_add(struct nfsd_metric *c, int64_t n); /* counter (n >= 0) or gauge */
void nfsd_metric_set(struct nfsd_metric *g, int64_t v); /* gauge */
void nfsd_metric_observe_ns(struct nfsd_metric *h, uint64_t ns);
uint64_t nfsd_metric_value(const struct nfsd_metric *c); /* counter or gauge, for tests */

/*
 * Collectors write whole families: nfsd_metrics_family() once, then its
 * samples.  type: "counter", "gauge" or "untyped".  Family names must not
 * collide with registered series or other collectors'.
 */
struct nfsd_metrics_out;
typedef void (*nfsd_metrics_collect_fn)(void *arg, struct nfsd_metrics_out *out);
int nfsd_metrics_collector_add(struct nfsd_metrics *m, nfsd_metrics_collect_fn fn, void *arg);
/* Returns once no render is running fn. */
void nfsd_metrics_collector_remove(struct nfsd_metrics *m, nfsd_metrics_collect_fn fn, void *arg);
void nfsd_metrics_family(struct nfsd_metrics_out *o, const char *name, const char *type,
			 const char *help);
void nfsd_metrics_sample(struct nfsd_metrics_out *o, const char *name, const char *labels,
			 int64_t v);
void nfsd_metrics_sample_u64(struct nfsd_metrics_out *o, const char *name, const char *labels,
			     uint64_t v);
/* The engine's own counters (connections, calls, malformed records). */
void nfsd_metrics_collect_server(struct nfsd_metrics_out *o, struct nfsd_server *s);

/* A label value with '\', '"' and newline escaped and other control bytes
 * as '?': at most size - 1 bytes, always NUL-terminated. */
void nfsd_metrics_escape(char *dst, size_t size, const char *src, size_t len);

/* What each procedure (kind 1) and NFSv4 operation (kind 2) counted so
 * far, for live views (braidctl top): up to max into out, how many. */
struct nfsd_metrics_opstat {
	uint8_t kind; /* 1: RPC procedure, 2: NFSv4 operation (vers: minor version) */
	uint32_t prog, vers, proc;
	const char *prog_name, *name; /* static strings */
	uint64_t count, errors, sum_ns, bytes;
};
unsigned nfsd_metrics_opstats(struct nfsd_metrics *m, struct nfsd_metrics_opstat *out, unsigned max);

/*
 * The exposition formats.  OpenMetrics names a counter's family without
 * its _total suffix (the samples carry it; one registered without gets
 * it), says "unknown" for "untyped", escapes '"' in HELP, writes le in
 * canonical form (1.0, 2.5e-05) and ends with "# EOF".
 */
enum nfsd_metrics_format {
	NFSD_METRICS_PROMETHEUS,  /* text/plain; version=0.0.4 */
	NFSD_METRICS_OPENMETRICS, /* application/openmetrics-text; version=1.0.0 */
};

/* The whole exposition, malloc'd and NUL-terminated: 0 or -ENOMEM. */
int nfsd_metrics_render_format(struct nfsd_metrics *m, enum nfsd_metrics_format f, char **text,
			       size_t *len);
/* The same in the Prometheus format. */
int nfsd_metrics_render(struct nfsd_metrics *m, char **text, size_t *len);

/*
 * The HTTP server (libmicrohttpd): on each address a daemon whose one
 * thread serves GET and HEAD /metrics, in OpenMetrics when the Accept
 * header asks for it.  Other paths get 404, other methods 405; the
 * library refuses malformed requests (400) and oversized headers (431)
 * and drops connections idle for 5 s.  Its threads block signals.
 */
struct nfsd_metrics_http;
/* -errno with a reason in msg (the address that could not be bound). */
int nfsd_metrics_http_start(struct nfsd_metrics *m, const struct sockaddr_storage *addrs,
			    unsigned naddrs, struct nfsd_metrics_http **out, char *msg,
			    size_t msglen);
/* The port bound for address idx (port 0 picks one); -1 past the end. */
int nfsd_metrics_http_port(const struct nfsd_metrics_http *h, unsigned idx);
void nfsd_metrics_http_stop(struct nfsd_metrics_http *h);

#endif
