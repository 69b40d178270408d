/* SPDX-License-Identifier: MIT */
/*
 * Metrics registry, its exposition (Prometheus text 0.0.4, OpenMetrics
 * 1.0.0) and GET /metrics over libmicrohttpd.  See nfsd/metrics.h.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "nfsd/metrics.h"
#include "nfsd/rpc.h"
#include "nfsd/bytes.h"

const uint64_t nfsd_metrics_bucket_ns[NFSD_METRICS_BUCKETS] = {
    25000ull,	  50000ull,	100000ull,     250000ull,     500000ull,     1000000ull,
    2500000ull,	  5000000ull,	10000000ull,   25000000ull,   50000000ull,   100000000ull,
    250000000ull, 500000000ull, 1000000000ull, 2500000000ull, 5000000000ull, 10000000000ull,
};

/* A fixed-bucket histogram: counts per bucket (not cumulative), the last
 * one +Inf, and the sum of observations. */
struct hist {
	_Atomic uint64_t b[NFSD_METRICS_BUCKETS + 1];
	_Atomic uint64_t sum_ns;
};

static void hist_observe(struct hist *h, uint64_t ns)
{
	unsigned i = 0;
	while (i < NFSD_METRICS_BUCKETS && ns > nfsd_metrics_bucket_ns[i])
		i++;
	atomic_fetch_add_explicit(&h->b[i], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_ns, ns, memory_order_relaxed);
}

enum { KIND_RPC = 1, KIND_NFS4 = 2 };

/*
 * One procedure or op.  key is 0 while the slot is free and never changes
 * once set (CAS); the names are written before 'ready' is released, and
 * renders skip slots not ready.
 */
struct slot {
	_Atomic uint64_t key;
	atomic_bool ready;
	uint8_t kind;
	bool io; /* has a bytes series */
	uint32_t prog, vers, proc;
	const char *prog_name, *name;
	_Atomic uint64_t count, errors, bytes;
	struct hist h;
};

enum { M_COUNTER = 1, M_GAUGE, M_HISTOGRAM };
#define COLLECTORS_MAX 32

/* A registered series: fields constant after registration but the values. */
struct nfsd_metric {
	struct nfsd_metric *next;
	int type;
	char *name, *help, *labels; /* labels "" for none */
	_Atomic int64_t v;
	struct hist h;
};

struct collector {
	struct collector *next;
	nfsd_metrics_collect_fn fn;
	void *arg;
};

/*
 * mu guards series and collectors (the lists; values are atomic);
 * render_mu is held while collectors run, so removing one waits for a
 * render in progress.  Order: render_mu, then mu.
 */
struct nfsd_metrics {
	struct slot slots[NFSD_METRICS_SLOTS];
	_Atomic uint64_t dropped;
	pthread_mutex_t mu, render_mu;
	struct nfsd_metric *series;
	struct collector *collectors;
	uint64_t start_s; /* wall clock at creation */
};

struct nfsd_metrics *nfsd_metrics_new(void)
{
	struct nfsd_metrics *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	pthread_mutex_init(&m->mu, NULL);
	pthread_mutex_init(&m->render_mu, NULL);
	m->start_s = (uint64_t)time(NULL);
	return m;
}

void nfsd_metrics_free(struct nfsd_metrics *m)
{
	if (!m)
		return;
	while (m->series) {
		struct nfsd_metric *s = m->series;
		m->series = s->next;
		free(s->name);
		free(s->help);
		free(s->labels);
		free(s);
	}
	while (m->collectors) {
		struct collector *c = m->collectors;
		m->collectors = c->next;
		free(c);
	}
	pthread_mutex_destroy(&m->mu);
	pthread_mutex_destroy(&m->render_mu);
	free(m);
}

/* ------------------------------------------------------------ recording */

/* The slot of (kind, prog, vers, proc), made on first use; NULL when full. */
static struct slot *slot_get(struct nfsd_metrics *m, uint8_t kind, uint32_t prog, uint32_t vers,
			     uint32_t proc, const char *prog_name, const char *name, bool io)
{
	uint64_t key = (uint64_t)kind << 60 | (uint64_t)prog << 24 | (uint64_t)(vers & 0xff) << 16 |
		       (proc & 0xffff);
	if (vers > 0xff || proc > 0xffff) {
		atomic_fetch_add_explicit(&m->dropped, 1, memory_order_relaxed);
		return NULL;
	}
	unsigned h = (unsigned)nfsd_mix64(key);
	for (unsigned i = 0; i < NFSD_METRICS_SLOTS; i++) {
		struct slot *s = &m->slots[(h + i) % NFSD_METRICS_SLOTS];
		uint64_t k = atomic_load_explicit(&s->key, memory_order_acquire);
		if (k == key)
			return s;
		if (k)
			continue;
		uint64_t zero = 0;
		if (atomic_compare_exchange_strong(&s->key, &zero, key)) {
			s->kind = kind;
			s->prog = prog;
			s->vers = vers;
			s->proc = proc;
			s->prog_name = prog_name ? prog_name : "unknown";
			s->name = name ? name : "unknown";
			s->io = io;
			atomic_store_explicit(&s->ready, true, memory_order_release);
			return s;
		}
		if (zero == key)
			return s;
	}
	atomic_fetch_add_explicit(&m->dropped, 1, memory_order_relaxed);
	return NULL;
}

void nfsd_metrics_rpc(struct nfsd_metrics *m, uint32_t prog, const char *prog_name, uint32_t vers,
		      uint32_t proc, const char *proc_name, uint32_t accept_stat, uint64_t ns)
{
	if (!m)
		return;
	struct slot *s = slot_get(m, KIND_RPC, prog, vers, proc, prog_name, proc_name, false);
	if (!s)
		return;
	atomic_fetch_add_explicit(&s->count, 1, memory_order_relaxed);
	if (accept_stat != NFSD_SUCCESS)
		atomic_fetch_add_explicit(&s->errors, 1, memory_order_relaxed);
	hist_observe(&s->h, ns);
}

void nfsd_metrics_nfs4_op(struct nfsd_metrics *m, uint32_t minor, uint32_t op, const char *op_name,
			  uint32_t status, uint64_t ns, const uint64_t *bytes)
{
	if (!m)
		return;
	struct slot *s = slot_get(m, KIND_NFS4, 100003, minor, op, "nfs", op_name, bytes != NULL);
	if (!s)
		return;
	atomic_fetch_add_explicit(&s->count, 1, memory_order_relaxed);
	if (status)
		atomic_fetch_add_explicit(&s->errors, 1, memory_order_relaxed);
	if (bytes)
		atomic_fetch_add_explicit(&s->bytes, *bytes, memory_order_relaxed);
	hist_observe(&s->h, ns);
}

unsigned nfsd_metrics_opstats(struct nfsd_metrics *m, struct nfsd_metrics_opstat *out, unsigned max)
{
	unsigned n = 0;
	for (unsigned i = 0; m && i < NFSD_METRICS_SLOTS && n < max; i++) {
		struct slot *s = &m->slots[i];
		if (!atomic_load_explicit(&s->ready, memory_order_acquire))
			continue;
		out[n++] = (struct nfsd_metrics_opstat){
		    .kind = s->kind,
		    .prog = s->prog,
		    .vers = s->vers,
		    .proc = s->proc,
		    .prog_name = s->prog_name,
		    .name = s->name,
		    .count = atomic_load_explicit(&s->count, memory_order_relaxed),
		    .errors = atomic_load_explicit(&s->errors, memory_order_relaxed),
		    .sum_ns = atomic_load_explicit(&s->h.sum_ns, memory_order_relaxed),
		    .bytes = atomic_load_explicit(&s->bytes, memory_order_relaxed),
		};
	}
	return n;
}

/* ---------------------------------------------------- registered series */

static bool name_ok(const char *n)
{
	if (!n || !*n)
		return false;
	for (const char *p = n; *p; p++) {
		char ch = *p;
		bool alpha =
		    (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' || ch == ':';
		if (!alpha && !(p != n && ch >= '0' && ch <= '9'))
			return false;
	}
	return true;
}

static struct nfsd_metric *series_get(struct nfsd_metrics *m, int type, const char *name,
				      const char *help, const char *labels)
{
	if (!m || !name_ok(name))
		return NULL;
	if (!labels)
		labels = "";
	if (strchr(labels, '\n'))
		return NULL;
	pthread_mutex_lock(&m->mu);
	struct nfsd_metric *s;
	for (s = m->series; s; s = s->next) {
		if (strcmp(s->name, name))
			continue;
		if (s->type != type) {
			s = NULL;
			goto out;
		}
		if (!strcmp(s->labels, labels))
			goto out;
	}
	if (!(s = calloc(1, sizeof(*s))))
		goto out;
	s->type = type;
	s->name = strdup(name);
	s->help = strdup(help ? help : "");
	s->labels = strdup(labels);
	if (!s->name || !s->help || !s->labels) {
		free(s->name);
		free(s->help);
		free(s->labels);
		free(s);
		s = NULL;
		goto out;
	}
	/* appended: families render in registration order */
	struct nfsd_metric **pp = &m->series;
	while (*pp)
		pp = &(*pp)->next;
	*pp = s;
out:
	pthread_mutex_unlock(&m->mu);
	return s;
}

struct nfsd_metric *nfsd_metrics_counter(struct nfsd_metrics *m, const char *name, const char *help,
					 const char *labels)
{
	return series_get(m, M_COUNTER, name, help, labels);
}

struct nfsd_metric *nfsd_metrics_gauge(struct nfsd_metrics *m, const char *name, const char *help,
				       const char *labels)
{
	return series_get(m, M_GAUGE, name, help, labels);
}

struct nfsd_metric *nfsd_metrics_histogram(struct nfsd_metrics *m, const char *name,
					   const char *help, const char *labels)
{
	return series_get(m, M_HISTOGRAM, name, help, labels);
}

void nfsd_metric_add(struct nfsd_metric *c, int64_t n)
{
	if (c && c->type != M_HISTOGRAM && (c->type == M_GAUGE || n >= 0))
		atomic_fetch_add_explicit(&c->v, n, memory_order_relaxed);
}

void nfsd_metric_set(struct nfsd_metric *g, int64_t v)
{
	if (g && g->type == M_GAUGE)
		atomic_store_explicit(&g->v, v, memory_order_relaxed);
}

void nfsd_metric_observe_ns(struct nfsd_metric *h, uint64_t ns)
{
	if (h && h->type == M_HISTOGRAM)
		hist_observe(&h->h, ns);
}

uint64_t nfsd_metric_value(const struct nfsd_metric *c)
{
	return c ? (uint64_t)atomic_load_explicit(&((struct nfsd_metric *)c)->v,
						  memory_order_relaxed)
		 : 0;
}

int nfsd_metrics_collector_add(struct nfsd_metrics *m, nfsd_metrics_collect_fn fn, void *arg)
{
	struct collector *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fn = fn;
	c->arg = arg;
	pthread_mutex_lock(&m->mu);
	unsigned n = 0;
	struct collector **pp = &m->collectors;
	for (; *pp; pp = &(*pp)->next)
		n++;
	if (n < COLLECTORS_MAX)
		*pp = c;
	pthread_mutex_unlock(&m->mu);
	if (n >= COLLECTORS_MAX) {
		free(c);
		return -ENOSPC;
	}
	return 0;
}

void nfsd_metrics_collector_remove(struct nfsd_metrics *m, nfsd_metrics_collect_fn fn, void *arg)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->render_mu);
	pthread_mutex_lock(&m->mu);
	for (struct collector **pp = &m->collectors; *pp; pp = &(*pp)->next)
		if ((*pp)->fn == fn && (*pp)->arg == arg) {
			struct collector *c = *pp;
			*pp = c->next;
			free(c);
			break;
		}
	pthread_mutex_unlock(&m->mu);
	pthread_mutex_unlock(&m->render_mu);
}

/* ------------------------------------------------------------ rendering */

/* One rendering: the text so far, and the family being written. */
struct nfsd_metrics_out {
	char *p;
	size_t len, cap;
	bool oom;
	bool om;      /* OpenMetrics */
	bool counter; /* the family is a counter: OpenMetrics samples end in _total */
};

static void out_printf(struct nfsd_metrics_out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void out_printf(struct nfsd_metrics_out *o, const char *fmt, ...)
{
	if (o->oom)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(o->p + o->len, o->cap - o->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			o->oom = true;
			return;
		}
		if ((size_t)n < o->cap - o->len) {
			o->len += (size_t)n;
			return;
		}
		size_t cap = o->cap * 2 + (size_t)n;
		char *p = realloc(o->p, cap);
		if (!p) {
			o->oom = true;
			return;
		}
		o->p = p;
		o->cap = cap;
	}
}

void nfsd_metrics_escape(char *dst, size_t size, const char *src, size_t len)
{
	size_t j = 0;
	if (!size)
		return;
	for (size_t i = 0; i < len && src[i]; i++) {
		unsigned char ch = (unsigned char)src[i];
		const char *esc = ch == '\\'   ? "\\\\"
				  : ch == '"'  ? "\\\""
				  : ch == '\n' ? "\\n"
					       : NULL;
		if (esc) {
			if (j + 2 >= size)
				break;
			dst[j++] = esc[0];
			dst[j++] = esc[1];
			continue;
		}
		if (j + 1 >= size)
			break;
		dst[j++] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
	}
	dst[j] = 0;
}

/* "# HELP" text: backslash and newline escaped, and in OpenMetrics '"'. */
static void out_help(struct nfsd_metrics_out *o, const char *name, int name_len, const char *help)
{
	out_printf(o, "# HELP %.*s ", name_len, name);
	for (const char *p = help; *p; p++) {
		if (*p == '\\')
			out_printf(o, "\\\\");
		else if (*p == '\n')
			out_printf(o, "\\n");
		else if (*p == '"' && o->om)
			out_printf(o, "\\\"");
		else
			out_printf(o, "%c", *p);
	}
	out_printf(o, "\n");
}

static bool ends_total(const char *name)
{
	size_t n = strlen(name);
	return n > 6 && !strcmp(name + n - 6, "_total");
}

void nfsd_metrics_family(struct nfsd_metrics_out *o, const char *name, const char *type,
			 const char *help)
{
	int n = (int)strlen(name);
	o->counter = !strcmp(type, "counter");
	if (o->om) {
		/* OpenMetrics 1.0 Counter: the family name without _total */
		if (o->counter && ends_total(name))
			n -= 6;
		if (!strcmp(type, "untyped"))
			type = "unknown";
	}
	out_help(o, name, n, help ? help : "");
	out_printf(o, "# TYPE %.*s %s\n", n, name, type);
}

static void sample_head(struct nfsd_metrics_out *o, const char *name, const char *labels)
{
	const char *suffix = o->om && o->counter && !ends_total(name) ? "_total" : "";
	if (labels && *labels)
		out_printf(o, "%s%s{%s} ", name, suffix, labels);
	else
		out_printf(o, "%s%s ", name, suffix);
}

void nfsd_metrics_sample(struct nfsd_metrics_out *o, const char *name, const char *labels,
			 int64_t v)
{
	sample_head(o, name, labels);
	out_printf(o, "%lld\n", (long long)v);
}

void nfsd_metrics_sample_u64(struct nfsd_metrics_out *o, const char *name, const char *labels,
			     uint64_t v)
{
	sample_head(o, name, labels);
	out_printf(o, "%llu\n", (unsigned long long)v);
}

/* Seconds from nanoseconds, exactly. */
static void out_seconds(struct nfsd_metrics_out *o, uint64_t ns)
{
	out_printf(o, "%llu.%09llu", (unsigned long long)(ns / 1000000000ull),
		   (unsigned long long)(ns % 1000000000ull));
}

static void out_le(struct nfsd_metrics_out *o, uint64_t ns)
{
	if (o->om && ns && ns < 100000) {
		/* OpenMetrics' canonical numbers (Go's shortest 'g'): below
		 * 1e-4 in exponent form, 2.5e-05 */
		int e = 9; /* ns = d * 10^-e seconds */
		uint64_t d = ns;
		while (d % 10 == 0) {
			d /= 10;
			e--;
		}
		char dg[24];
		int k = snprintf(dg, sizeof(dg), "%llu", (unsigned long long)d);
		out_printf(o, "%c%s%se-%02d", dg[0], k > 1 ? "." : "", dg + 1, e - (k - 1));
		return;
	}
	/* the shortest decimal: 0.000025, 0.5, 10; OpenMetrics 10.0 */
	char b[32];
	snprintf(b, sizeof(b), "%llu.%09llu", (unsigned long long)(ns / 1000000000ull),
		 (unsigned long long)(ns % 1000000000ull));
	size_t n = strlen(b);
	while (b[n - 1] == '0')
		b[--n] = 0;
	if (b[n - 1] == '.')
		b[--n] = 0;
	out_printf(o, "%s%s", b, o->om && !strchr(b, '.') ? ".0" : "");
}

static void out_hist(struct nfsd_metrics_out *o, const char *name, const char *labels,
		     const struct hist *h)
{
	const char *sep = labels && *labels ? "," : "";
	uint64_t cum = 0;
	for (unsigned i = 0; i <= NFSD_METRICS_BUCKETS; i++) {
		cum += atomic_load_explicit(&((struct hist *)h)->b[i], memory_order_relaxed);
		out_printf(o, "%s_bucket{%s%sle=\"", name, labels ? labels : "", sep);
		if (i < NFSD_METRICS_BUCKETS)
			out_le(o, nfsd_metrics_bucket_ns[i]);
		else
			out_printf(o, "+Inf");
		out_printf(o, "\"} %llu\n", (unsigned long long)cum);
	}
	out_printf(o, labels && *labels ? "%s_sum{%s} " : "%s_sum%s ", name, labels ? labels : "");
	out_seconds(o, atomic_load_explicit(&((struct hist *)h)->sum_ns, memory_order_relaxed));
	out_printf(o, "\n");
	out_printf(o, labels && *labels ? "%s_count{%s} %llu\n" : "%s_count%s %llu\n", name,
		   labels ? labels : "", (unsigned long long)cum);
}

static int slot_cmp(const void *a, const void *b)
{
	const struct slot *x = *(const struct slot *const *)a, *y = *(const struct slot *const *)b;
	if (x->prog != y->prog)
		return x->prog < y->prog ? -1 : 1;
	if (x->vers != y->vers)
		return x->vers < y->vers ? -1 : 1;
	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	return 0;
}

static void slot_labels(const struct slot *s, char *buf, size_t size)
{
	char name[96];
	nfsd_metrics_escape(name, sizeof(name), s->name, strlen(s->name));
	if (s->kind == KIND_RPC) {
		char prog[64];
		nfsd_metrics_escape(prog, sizeof(prog), s->prog_name, strlen(s->prog_name));
		snprintf(buf, size, "program=\"%s\",version=\"%u\",procedure=\"%s\"", prog, s->vers,
			 name);
	} else {
		snprintf(buf, size, "minorversion=\"%u\",op=\"%s\"", s->vers, name);
	}
}

static void render_slots(struct nfsd_metrics_out *o, struct slot **v, unsigned n, uint8_t kind)
{
	static const struct {
		const char *names[4], *help[4];
	} fam[3] = {
	    [KIND_RPC] = {{"braid_rpc_requests_total", "braid_rpc_errors_total",
			   "braid_rpc_duration_seconds", NULL},
			  {"RPC calls served, by program, version and procedure.",
			   "RPC calls answered with an accept status other than SUCCESS.",
			   "Time from a call's arrival to its reply.", NULL}},
	    [KIND_NFS4] = {{"braid_nfs4_ops_total", "braid_nfs4_op_errors_total",
			    "braid_nfs4_op_duration_seconds", "braid_nfs4_op_bytes_total"},
			   {"NFSv4 operations run in COMPOUNDs, by minor version and operation.",
			    "NFSv4 operations whose status was not NFS4_OK.",
			    "Time to run one NFSv4 operation.",
			    "File data moved by READ, WRITE and READ_PLUS."}},
	};
	char labels[256];
	for (unsigned f = 0; f < 4; f++) {
		const char *name = fam[kind].names[f];
		if (!name)
			continue;
		bool any = false;
		for (unsigned i = 0; i < n; i++) {
			struct slot *s = v[i];
			if (s->kind != kind || (f == 3 && !s->io))
				continue;
			if (!any) {
				nfsd_metrics_family(o, name, f == 2 ? "histogram" : "counter",
						    fam[kind].help[f]);
				any = true;
			}
			slot_labels(s, labels, sizeof(labels));
			if (f == 2) {
				out_hist(o, name, labels, &s->h);
				continue;
			}
			_Atomic uint64_t *c = f == 0 ? &s->count : f == 1 ? &s->errors : &s->bytes;
			nfsd_metrics_sample_u64(o, name, labels,
						atomic_load_explicit(c, memory_order_relaxed));
		}
	}
}

static void render_series(struct nfsd_metrics_out *o, struct nfsd_metrics *m)
{
	pthread_mutex_lock(&m->mu);
	/* families in first-registration order, their series together */
	for (struct nfsd_metric *s = m->series; s; s = s->next) {
		bool first = true;
		for (struct nfsd_metric *p = m->series; p != s; p = p->next)
			if (!strcmp(p->name, s->name)) {
				first = false;
				break;
			}
		if (!first)
			continue;
		static const char *const types[] = {NULL, "counter", "gauge", "histogram"};
		nfsd_metrics_family(o, s->name, types[s->type], s->help);
		for (struct nfsd_metric *q = s; q; q = q->next) {
			if (strcmp(q->name, s->name))
				continue;
			if (q->type == M_HISTOGRAM)
				out_hist(o, q->name, q->labels, &q->h);
			else
				nfsd_metrics_sample(
				    o, q->name, q->labels,
				    atomic_load_explicit(&q->v, memory_order_relaxed));
		}
	}
	pthread_mutex_unlock(&m->mu);
}

int nfsd_metrics_render_format(struct nfsd_metrics *m, enum nfsd_metrics_format f, char **text,
			       size_t *len)
{
	struct nfsd_metrics_out o = {.cap = 16384, .om = f == NFSD_METRICS_OPENMETRICS};
	if (!(o.p = malloc(o.cap)))
		return -ENOMEM;
	o.p[0] = 0;
	struct slot **v = malloc(NFSD_METRICS_SLOTS * sizeof(*v));
	if (!v) {
		free(o.p);
		return -ENOMEM;
	}
	unsigned n = 0;
	for (unsigned i = 0; i < NFSD_METRICS_SLOTS; i++)
		if (atomic_load_explicit(&m->slots[i].ready, memory_order_acquire))
			v[n++] = &m->slots[i];
	qsort(v, n, sizeof(*v), slot_cmp);

	nfsd_metrics_family(&o, "braid_build_info", "gauge", "Braid's version.");
	nfsd_metrics_sample(&o, "braid_build_info", "version=\"" PACKAGE_VERSION "\"", 1);
	nfsd_metrics_family(&o, "process_start_time_seconds", "gauge",
			    "Start time of the process since the epoch, in seconds.");
	nfsd_metrics_sample_u64(&o, "process_start_time_seconds", NULL, m->start_s);
	render_slots(&o, v, n, KIND_RPC);
	render_slots(&o, v, n, KIND_NFS4);
	free(v);
	nfsd_metrics_family(&o, "braid_metrics_dropped_total", "counter",
			    "Procedures or operations not recorded: the series table was full.");
	nfsd_metrics_sample_u64(&o, "braid_metrics_dropped_total", NULL,
				atomic_load_explicit(&m->dropped, memory_order_relaxed));

	pthread_mutex_lock(&m->render_mu);
	render_series(&o, m);
	/* a snapshot: collectors run without mu (they may take locks that
	 * are held elsewhere around registrations) */
	struct collector cs[COLLECTORS_MAX];
	unsigned nc = 0;
	pthread_mutex_lock(&m->mu);
	for (struct collector *c = m->collectors; c && nc < COLLECTORS_MAX; c = c->next)
		cs[nc++] = *c;
	pthread_mutex_unlock(&m->mu);
	for (unsigned i = 0; i < nc; i++)
		cs[i].fn(cs[i].arg, &o);
	pthread_mutex_unlock(&m->render_mu);
	if (o.om)
		out_printf(&o, "# EOF\n");
	if (o.oom) {
		free(o.p);
		return -ENOMEM;
	}
	*text = o.p;
	*len = o.len;
	return 0;
}

int nfsd_metrics_render(struct nfsd_metrics *m, char **text, size_t *len)
{
	return nfsd_metrics_render_format(m, NFSD_METRICS_PROMETHEUS, text, len);
}

void nfsd_metrics_collect_server(struct nfsd_metrics_out *o, struct nfsd_server *s)
{
	struct nfsd_server_stats st;
	nfsd_server_stats(s, &st);
	static const struct {
		const char *name, *help;
		size_t off;
	} f[] = {
	    {"braid_rpc_calls_received_total", "RPC call records received.",
	     offsetof(struct nfsd_server_stats, calls)},
	    {"braid_rpc_garbage_total", "Records that were not well-formed RPC calls.",
	     offsetof(struct nfsd_server_stats, garbage)},
	    {"braid_rpc_auth_errors_total", "Calls refused by authentication.",
	     offsetof(struct nfsd_server_stats, auth_errors)},
	    {"braid_rpc_records_too_big_total", "Records over the size limit (connection closed).",
	     offsetof(struct nfsd_server_stats, records_too_big)},
	    {"braid_connections_accepted_total", "Connections accepted (TCP and RDMA).",
	     offsetof(struct nfsd_server_stats, conns_accepted)},
	    {"braid_connections_closed_total", "Connections closed (TCP and RDMA).",
	     offsetof(struct nfsd_server_stats, conns_closed)},
	};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		uint64_t v;
		memcpy(&v, (const char *)&st + f[i].off, sizeof(v));
		nfsd_metrics_family(o, f[i].name, "counter", f[i].help);
		nfsd_metrics_sample_u64(o, f[i].name, NULL, v);
	}
	/* per transport: TCP, and RPC-over-RDMA (nfsd/rdma.c) */
	nfsd_metrics_family(o, "braid_transport_calls_total", "counter",
			    "RPC calls received, by transport.");
	nfsd_metrics_sample_u64(o, "braid_transport_calls_total", "transport=\"tcp\"",
				st.calls - st.rdma_calls);
	nfsd_metrics_sample_u64(o, "braid_transport_calls_total", "transport=\"rdma\"",
				st.rdma_calls);
	nfsd_metrics_family(o, "braid_transport_bytes_total", "counter",
			    "Bytes received (in) and sent (out), by transport; for RDMA, "
			    "inline messages and RDMA Read and Write data together.");
	nfsd_metrics_sample_u64(o, "braid_transport_bytes_total",
				"transport=\"tcp\",direction=\"in\"", st.tcp_bytes_in);
	nfsd_metrics_sample_u64(o, "braid_transport_bytes_total",
				"transport=\"tcp\",direction=\"out\"", st.tcp_bytes_out);
	nfsd_metrics_sample_u64(o, "braid_transport_bytes_total",
				"transport=\"rdma\",direction=\"in\"",
				st.rdma_inline_in_bytes + st.rdma_read_bytes);
	nfsd_metrics_sample_u64(o, "braid_transport_bytes_total",
				"transport=\"rdma\",direction=\"out\"",
				st.rdma_inline_bytes + st.rdma_write_bytes + st.rdma_reply_chunk_bytes);
	nfsd_metrics_family(o, "braid_rdma_connections_accepted_total", "counter",
			    "RPC-over-RDMA connections accepted.");
	nfsd_metrics_sample_u64(o, "braid_rdma_connections_accepted_total", NULL, st.rdma_conns);
	nfsd_metrics_family(o, "braid_rdma_bytes_total", "counter",
			    "RPC-over-RDMA bytes by how they moved: inline sends received "
			    "(inline_in) and sent (inline_out), read chunks pulled by RDMA Read, "
			    "write chunks and reply chunks pushed by RDMA Write.");
	nfsd_metrics_sample_u64(o, "braid_rdma_bytes_total", "kind=\"inline_in\"",
				st.rdma_inline_in_bytes);
	nfsd_metrics_sample_u64(o, "braid_rdma_bytes_total", "kind=\"inline_out\"",
				st.rdma_inline_bytes);
	nfsd_metrics_sample_u64(o, "braid_rdma_bytes_total", "kind=\"read_chunk\"",
				st.rdma_read_bytes);
	nfsd_metrics_sample_u64(o, "braid_rdma_bytes_total", "kind=\"write_chunk\"",
				st.rdma_write_bytes);
	nfsd_metrics_sample_u64(o, "braid_rdma_bytes_total", "kind=\"reply_chunk\"",
				st.rdma_reply_chunk_bytes);
	nfsd_metrics_family(o, "braid_rdma_errors_sent_total", "counter",
			    "RDMA_ERROR replies sent (ERR_VERS, ERR_CHUNK).");
	nfsd_metrics_sample_u64(o, "braid_rdma_errors_sent_total", NULL, st.rdma_errors);
	nfsd_metrics_family(o, "braid_rdma_write_zerocopy_bytes_total", "counter",
			    "Of the write-chunk bytes, those sent by RDMA Write from where the "
			    "READ's data lay (registered memory), not from a copy.");
	nfsd_metrics_sample_u64(o, "braid_rdma_write_zerocopy_bytes_total", NULL,
				st.rdma_write_zerocopy_bytes);
}

/* ------------------------------------------------------------------ HTTP */

#define HTTP_MAX_LISTEN	 16
#define HTTP_TIMEOUT_S	 5     /* a connection idle this long is closed */
#define HTTP_CONNECTIONS 64    /* at once, per address */
#define HTTP_CONN_MEMORY 16384 /* per connection: a request head too big gets 431/414 */

/* One address: its libmicrohttpd daemon, which owns the socket. */
struct http_listen {
	struct MHD_Daemon *d;
	int port;
	atomic_bool started; /* libmicrohttpd's messages ignored from here on */
	char why[160];	     /* its first message while starting */
};

/* Constant once started, but for each listener's why (http_log). */
struct nfsd_metrics_http {
	struct http_listen l[HTTP_MAX_LISTEN];
	unsigned n; /* daemons running */
};

static const char http_prometheus[] = "text/plain; version=0.0.4; charset=utf-8";
static const char http_openmetrics[] = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/* MHD_LogCallback: the reason a daemon did not start; after, a scraper's
 * bad request is no news for the operator. */
static void http_log(void *cls, const char *fmt, va_list ap)
{
	struct http_listen *l = cls;
	if (atomic_load(&l->started) || l->why[0])
		return;
	vsnprintf(l->why, sizeof(l->why), fmt, ap);
	l->why[strcspn(l->why, "\n")] = 0;
}

static enum MHD_Result http_text(struct MHD_Connection *c, unsigned status, const char *text,
				 const char *allow)
{
	struct MHD_Response *r =
	    MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	if (allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	enum MHD_Result rc = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return rc;
}

/* MHD_AccessHandlerCallback, once the request's head is in (a body, if
 * any, is never read: every answer is queued on the first call). */
static enum MHD_Result http_request(void *cls, struct MHD_Connection *c, const char *url,
				    const char *method, const char *version, const char *upload,
				    size_t *upload_len, void **req)
{
	struct nfsd_metrics *m = cls;
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return http_text(c, MHD_HTTP_METHOD_NOT_ALLOWED,
				 "405 Method Not Allowed: use GET\n", "GET, HEAD");
	if (strcmp(url, "/metrics")) /* the query string is not in url */
		return http_text(c, MHD_HTTP_NOT_FOUND,
				 "404 Not Found: the metrics are at /metrics\n", NULL);
	/* Prometheus lists OpenMetrics first when it can parse it */
	const char *accept =
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	bool om = accept && strcasestr(accept, "application/openmetrics-text");
	char *body;
	size_t len;
	if (nfsd_metrics_render_format(m, om ? NFSD_METRICS_OPENMETRICS : NFSD_METRICS_PROMETHEUS,
				       &body, &len))
		return http_text(c, MHD_HTTP_SERVICE_UNAVAILABLE,
				 "503 Service Unavailable: out of memory\n", NULL);
	/* HEAD: libmicrohttpd sends the Content-Length of body without it */
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				om ? http_openmetrics : http_prometheus);
	enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return rc;
}

static void addr_text(const struct sockaddr_storage *ss, char *buf, size_t size)
{
	char a[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)ss;
		inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
		port = ntohs(in->sin_port);
		snprintf(buf, size, "%s:%u", a, port);
	} else {
		const struct sockaddr_in6 *in6 = (const void *)ss;
		inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof(a));
		port = ntohs(in6->sin6_port);
		snprintf(buf, size, "[%s]:%u", a, port);
	}
}

/* A listening TCP socket bound to exactly ss (IPv6: that address only):
 * the fd, with *port filled in, or -errno. */
static int http_listen_fd(const struct sockaddr_storage *ss, int *port)
{
	socklen_t len =
	    ss->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    (ss->ss_family == AF_INET6 &&
	     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one))) ||
	    bind(fd, (const struct sockaddr *)ss, len) || listen(fd, HTTP_CONNECTIONS)) {
		int rc = -errno;
		close(fd);
		return rc;
	}
	struct sockaddr_storage b;
	socklen_t bl = sizeof(b);
	getsockname(fd, (struct sockaddr *)&b, &bl);
	*port = b.ss_family == AF_INET ? ntohs(((struct sockaddr_in *)&b)->sin_port)
				       : ntohs(((struct sockaddr_in6 *)&b)->sin6_port);
	return fd;
}

int nfsd_metrics_http_start(struct nfsd_metrics *m, const struct sockaddr_storage *addrs,
			    unsigned naddrs, struct nfsd_metrics_http **out, char *msg,
			    size_t msglen)
{
	if (naddrs > HTTP_MAX_LISTEN) {
		snprintf(msg, msglen, "metrics: at most %d addresses", HTTP_MAX_LISTEN);
		return -EINVAL;
	}
	struct nfsd_metrics_http *h = calloc(1, sizeof(*h));
	if (!h) {
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	/* libmicrohttpd's threads inherit the mask: no SIGTERM, SIGHUP or
	 * SIGPIPE lands on them (it sends with MSG_NOSIGNAL besides) */
	sigset_t mask;
	pthread_sigmask(SIG_SETMASK, NULL, &mask);
	nfsd_thread_block_signals();
	int rc = 0;
	for (unsigned i = 0; i < naddrs; i++) {
		struct http_listen *l = &h->l[i];
		char a[80];
		addr_text(&addrs[i], a, sizeof(a));
		int fd = http_listen_fd(&addrs[i], &l->port);
		if (fd < 0) {
			rc = fd;
			snprintf(msg, msglen, "metrics_listen %s: %s", a, strerror(-rc));
			break;
		}
		/* From here the daemon owns fd: MHD_stop_daemon closes it, and
		 * so does a start that fails once our (fixed) options pass. */
		l->d = MHD_start_daemon(
		    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG, 0, NULL,
		    NULL, http_request, m, MHD_OPTION_LISTEN_SOCKET, fd,
		    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_TIMEOUT_S,
		    MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_CONNECTIONS,
		    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONN_MEMORY,
		    MHD_OPTION_EXTERNAL_LOGGER, http_log, l, MHD_OPTION_END);
		atomic_store(&l->started, true);
		if (!l->d) {
			rc = -EIO;
			snprintf(msg, msglen, "metrics_listen %s: libmicrohttpd: %s", a,
				 l->why[0] ? l->why : "could not start");
			break;
		}
		h->n++;
	}
	pthread_sigmask(SIG_SETMASK, &mask, NULL);
	if (rc) {
		nfsd_metrics_http_stop(h);
		return rc;
	}
	*out = h;
	return 0;
}

int nfsd_metrics_http_port(const struct nfsd_metrics_http *h, unsigned idx)
{
	return h && idx < h->n ? h->l[idx].port : -1;
}

/* MHD_stop_daemon returns once its thread has: no render runs after. */
void nfsd_metrics_http_stop(struct nfsd_metrics_http *h)
{
	if (!h)
		return;
	for (unsigned i = 0; i < h->n; i++)
		MHD_stop_daemon(h->l[i].d);
	free(h);
}
