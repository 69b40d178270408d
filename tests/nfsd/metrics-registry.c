/* SPDX-License-Identifier: MIT */
/*
 * The metrics registry and its Prometheus text (nfsd/metrics.c): counters,
 * gauges and histograms registered by name and labels (the same pair
 * gives the same series; malformed names and a type clash give none),
 * histogram buckets cumulative with exact sums, per-procedure and per-op
 * series from the recording calls (errors, bytes), label escaping,
 * collectors added and removed, the slot table's overflow counted, and
 * recording from many threads at once losing nothing.  Every rendering is
 * checked to be well-formed exposition, in both formats; the OpenMetrics
 * one names counters' families without _total, writes le canonically,
 * says "unknown" for "untyped" and ends with # EOF.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>

#include "nfsd/metrics.h"
#include "nfsd/rpc.h"
#include "tests/nfsd/metrics-test.h"

static char *render_om(struct nfsd_metrics *m)
{
	char *t;
	size_t len;
	CHECK_EQ(nfsd_metrics_render_format(m, NFSD_METRICS_OPENMETRICS, &t, &len), 0);
	CHECK_EQ(strlen(t), len);
	mx_check_openmetrics(t);
	return t;
}

/* The Prometheus text; the OpenMetrics one checked too. */
static char *render(struct nfsd_metrics *m)
{
	char *t;
	size_t len;
	CHECK_EQ(nfsd_metrics_render(m, &t, &len), 0);
	CHECK_EQ(strlen(t), len);
	mx_check_format(t);
	free(render_om(m));
	return t;
}

static void t_series(void)
{
	struct nfsd_metrics *m = nfsd_metrics_new();
	CHECK(m);
	struct nfsd_metric *c = nfsd_metrics_counter(m, "t_things_total", "Things.", "k=\"a\"");
	struct nfsd_metric *c2 = nfsd_metrics_counter(m, "t_things_total", NULL, "k=\"b\"");
	CHECK(c && c2 && c != c2);
	CHECK(nfsd_metrics_counter(m, "t_things_total", NULL, "k=\"a\"") == c);
	CHECK(!nfsd_metrics_gauge(m, "t_things_total", NULL, NULL)); /* another type */
	CHECK(!nfsd_metrics_counter(m, "9bad", NULL, NULL));
	CHECK(!nfsd_metrics_counter(m, "bad-name", NULL, NULL));
	CHECK(!nfsd_metrics_counter(m, "", NULL, NULL));
	CHECK(!nfsd_metrics_counter(m, "t_x", NULL, "a=\"1\"\nb=\"2\""));
	nfsd_metric_add(c, 5);
	nfsd_metric_add(c, -3); /* counters only go up */
	nfsd_metric_add(c2, 1);
	nfsd_metric_add(NULL, 1);
	CHECK_EQ(nfsd_metric_value(c), 5);
	struct nfsd_metric *g = nfsd_metrics_gauge(m, "t_level", "A level.", NULL);
	nfsd_metric_set(g, 42);
	nfsd_metric_add(g, -50);
	struct nfsd_metric *h = nfsd_metrics_histogram(m, "t_wait_seconds", "Waits.", "q=\"x\"");
	CHECK(h);
	nfsd_metric_observe_ns(h, 30000);	/* 30 us: le 0.00005 */
	nfsd_metric_observe_ns(h, 2000000);	/* 2 ms: le 0.0025 */
	nfsd_metric_observe_ns(h, 20000000000); /* 20 s: +Inf only */
	nfsd_metric_observe_ns(g, 1);		/* not a histogram: ignored */
	struct nfsd_metric *ev = nfsd_metrics_counter(m, "t_events", "Say \"hi\".", NULL);
	nfsd_metric_add(ev, 2);

	char *t = render(m);
	CHECK_EQ(mx_value(t, "t_things_total{k=\"a\"}"), 5);
	CHECK_EQ(mx_value(t, "t_things_total{k=\"b\"}"), 1);
	CHECK(strstr(t, "# HELP t_things_total Things.\n# TYPE t_things_total counter\n"));
	CHECK_EQ(mx_value(t, "t_level"), -8);
	CHECK(strstr(t, "# TYPE t_level gauge\n"));
	CHECK(strstr(t, "# TYPE t_wait_seconds histogram\n"));
	CHECK_EQ(mx_value(t, "t_wait_seconds_bucket{q=\"x\",le=\"0.000025\"}"), 0);
	CHECK_EQ(mx_value(t, "t_wait_seconds_bucket{q=\"x\",le=\"0.00005\"}"), 1);
	CHECK_EQ(mx_value(t, "t_wait_seconds_bucket{q=\"x\",le=\"0.001\"}"), 1);
	CHECK_EQ(mx_value(t, "t_wait_seconds_bucket{q=\"x\",le=\"0.0025\"}"), 2);
	CHECK_EQ(mx_value(t, "t_wait_seconds_bucket{q=\"x\",le=\"10\"}"), 2);
	CHECK_EQ(mx_value(t, "t_wait_seconds_bucket{q=\"x\",le=\"+Inf\"}"), 3);
	CHECK(strstr(t, "\nt_wait_seconds_sum{q=\"x\"} 20.002030000\n"));
	CHECK_EQ(mx_value(t, "t_wait_seconds_count{q=\"x\"}"), 3);
	CHECK(strstr(t, "braid_build_info{version=\"" PACKAGE_VERSION "\"} 1\n"));
	CHECK(strstr(t, "# HELP t_events Say \"hi\".\n# TYPE t_events counter\nt_events 2\n"));
	free(t);

	/* OpenMetrics: counters' families without _total, their samples with
	 * it; canonical le; '"' escaped in HELP; # EOF at the end */
	t = render_om(m);
	CHECK(strstr(t, "# HELP t_things Things.\n# TYPE t_things counter\n"));
	CHECK_EQ(mx_value(t, "t_things_total{k=\"a\"}"), 5);
	CHECK(strstr(t, "# HELP t_events Say \\\"hi\\\".\n# TYPE t_events counter\n"
			"t_events_total 2\n"));
	CHECK(strstr(t, "# TYPE braid_metrics_dropped counter\n"));
	CHECK(strstr(t, "# TYPE t_wait_seconds histogram\n"));
	CHECK_EQ(mx_value(t, "t_wait_seconds_bucket{q=\"x\",le=\"2.5e-05\"}"), 0);
	CHECK_EQ(mx_value(t, "t_wait_seconds_bucket{q=\"x\",le=\"5e-05\"}"), 1);
	CHECK_EQ(mx_value(t, "t_wait_seconds_bucket{q=\"x\",le=\"0.0001\"}"), 1);
	CHECK_EQ(mx_value(t, "t_wait_seconds_bucket{q=\"x\",le=\"0.0025\"}"), 2);
	CHECK_EQ(mx_value(t, "t_wait_seconds_bucket{q=\"x\",le=\"1.0\"}"), 2);
	CHECK_EQ(mx_value(t, "t_wait_seconds_bucket{q=\"x\",le=\"10.0\"}"), 2);
	CHECK_EQ(mx_value(t, "t_wait_seconds_bucket{q=\"x\",le=\"+Inf\"}"), 3);
	CHECK(strstr(t, "\nt_wait_seconds_sum{q=\"x\"} 20.002030000\n"));
	CHECK_EQ(mx_value(t, "t_level"), -8);
	size_t tl = strlen(t);
	CHECK(tl > 7 && !strcmp(t + tl - 7, "\n# EOF\n"));
	free(t);
	nfsd_metrics_free(m);
}

static void t_recording(void)
{
	struct nfsd_metrics *m = nfsd_metrics_new();
	nfsd_metrics_rpc(m, 100005, "mount", 3, 1, "MNT", NFSD_SUCCESS, 1000);
	nfsd_metrics_rpc(m, 100005, "mount", 3, 1, "MNT", NFSD_GARBAGE_ARGS, 3000000);
	nfsd_metrics_rpc(m, 100005, "mount", 3, 5, "EXPORT", NFSD_SUCCESS, 1000);
	nfsd_metrics_rpc(m, 7, "x", 300, 1, "TOO", 0, 1); /* version past the table: dropped */
	uint64_t n = 4096;
	nfsd_metrics_nfs4_op(m, 1, 25, "READ", 0, 5000, &n);
	n = 100;
	nfsd_metrics_nfs4_op(m, 1, 25, "READ", 0, 5000, &n);
	nfsd_metrics_nfs4_op(m, 2, 25, "READ", 0, 5000, &n);
	nfsd_metrics_nfs4_op(m, 1, 15, "LOOKUP", 2, 5000, NULL);
	nfsd_metrics_rpc(NULL, 1, "x", 1, 1, "X", 0, 1); /* no registry: nothing */
	char *t = render(m);
	const char *mnt = "{program=\"mount\",version=\"3\",procedure=\"MNT\"}";
	char s[256];
	snprintf(s, sizeof(s), "braid_rpc_requests_total%s", mnt);
	CHECK_EQ(mx_value(t, s), 2);
	snprintf(s, sizeof(s), "braid_rpc_errors_total%s", mnt);
	CHECK_EQ(mx_value(t, s), 1);
	snprintf(s, sizeof(s), "braid_rpc_duration_seconds_count%s", mnt);
	CHECK_EQ(mx_value(t, s), 2);
	snprintf(s, sizeof(s), "\nbraid_rpc_duration_seconds_sum%s 0.003001000\n", mnt);
	CHECK(strstr(t, s));
	CHECK_EQ(mx_value(t, "braid_rpc_requests_total{program=\"mount\",version=\"3\","
			     "procedure=\"EXPORT\"}"),
		 1);
	CHECK(!strstr(t, "TOO"));
	CHECK_EQ(mx_value(t, "braid_nfs4_ops_total{minorversion=\"1\",op=\"READ\"}"), 2);
	CHECK_EQ(mx_value(t, "braid_nfs4_ops_total{minorversion=\"2\",op=\"READ\"}"), 1);
	CHECK_EQ(mx_value(t, "braid_nfs4_op_bytes_total{minorversion=\"1\",op=\"READ\"}"), 4196);
	CHECK_EQ(mx_value(t, "braid_nfs4_op_errors_total{minorversion=\"1\",op=\"LOOKUP\"}"), 1);
	CHECK_EQ(mx_value(t, "braid_nfs4_op_errors_total{minorversion=\"1\",op=\"READ\"}"), 0);
	/* ops that move no data have no bytes series */
	CHECK_EQ(mx_value(t, "braid_nfs4_op_bytes_total{minorversion=\"1\",op=\"LOOKUP\"}"), -1);
	CHECK_EQ(mx_value(t, "braid_metrics_dropped_total"), 1); /* "TOO" */
	free(t);

	/* more distinct procedures than slots: the rest dropped, and counted */
	for (uint32_t p = 0; p < NFSD_METRICS_SLOTS + 10; p++)
		nfsd_metrics_rpc(m, 0x20000001, "many", 1, p, "P", 0, 1);
	t = render(m);
	CHECK(mx_value(t, "braid_metrics_dropped_total") >= 10 + 6);
	free(t);
	nfsd_metrics_free(m);
}

static void t_escape(void)
{
	char b[64];
	nfsd_metrics_escape(b, sizeof(b), "a\"b\\c\nd\x01", 8);
	CHECK(!strcmp(b, "a\\\"b\\\\c\\nd?"));
	nfsd_metrics_escape(b, 4, "\"\"\"", 3); /* never half an escape */
	CHECK(!strcmp(b, "\\\""));
	nfsd_metrics_escape(b, sizeof(b), "stop\0here", 9);
	CHECK(!strcmp(b, "stop"));
}

static int collected;

static void collect(void *arg, struct nfsd_metrics_out *o)
{
	collected++;
	nfsd_metrics_family(o, "t_collected", "gauge", (const char *)arg);
	nfsd_metrics_sample(o, "t_collected", "who=\"a\\\"b\"", 7);
	nfsd_metrics_sample_u64(o, "t_collected", "who=\"c\"", UINT64_MAX);
	nfsd_metrics_family(o, "t_odd", "untyped", "Of no type.");
	nfsd_metrics_sample(o, "t_odd", NULL, 3);
	nfsd_metrics_family(o, "t_seen_total", "counter", "Seen.");
	nfsd_metrics_sample(o, "t_seen_total", NULL, 4);
}

static void t_collectors(void)
{
	struct nfsd_metrics *m = nfsd_metrics_new();
	CHECK_EQ(nfsd_metrics_collector_add(m, collect, "Collected\\here."), 0);
	char *t = render(m);
	CHECK_EQ(collected, 2); /* render() makes both formats */
	CHECK(strstr(t, "# HELP t_collected Collected\\\\here.\n"));
	CHECK_EQ(mx_value(t, "t_collected{who=\"a\\\"b\"}"), 7);
	CHECK(strstr(t, "t_collected{who=\"c\"} 18446744073709551615\n"));
	CHECK(strstr(t, "# TYPE t_odd untyped\nt_odd 3\n"));
	CHECK(strstr(t, "# TYPE t_seen_total counter\nt_seen_total 4\n"));
	free(t);
	t = render_om(m);
	CHECK(strstr(t, "# TYPE t_odd unknown\nt_odd 3\n"));
	CHECK(strstr(t, "# TYPE t_seen counter\nt_seen_total 4\n"));
	free(t);
	nfsd_metrics_collector_remove(m, collect, "Collected\\here.");
	t = render(m);
	CHECK_EQ(collected, 3);
	CHECK(!strstr(t, "t_collected"));
	free(t);
	nfsd_metrics_free(m);
}

/* Many threads recording one procedure and one counter: nothing lost. */
#define THREADS 8
#define EACH	20000
static struct nfsd_metrics *shared;
static struct nfsd_metric *shared_c;

static void *hammer(void *arg)
{
	static const char *const names[3] = {"R0", "R1", "R2"};
	uint32_t proc = (uint32_t)(uintptr_t)arg % 3;
	for (int i = 0; i < EACH; i++) {
		nfsd_metrics_rpc(shared, 0x20000002, "race", 1, proc, names[proc], 0, 100);
		nfsd_metric_add(shared_c, 1);
	}
	return NULL;
}

static void t_threads(void)
{
	shared = nfsd_metrics_new();
	shared_c = nfsd_metrics_counter(shared, "t_hammered_total", "", NULL);
	pthread_t th[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		CHECK_EQ(pthread_create(&th[i], NULL, hammer, (void *)i), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	char *t = render(shared);
	double total = 0;
	for (int p = 0; p < 3; p++) {
		char s[160];
		snprintf(
		    s, sizeof(s),
		    "braid_rpc_requests_total{program=\"race\",version=\"1\",procedure=\"R%d\"}",
		    p);
		double v = mx_value(t, s);
		CHECK(v > 0);
		total += v;
		snprintf(s, sizeof(s),
			 "braid_rpc_duration_seconds_count{program=\"race\",version=\"1\","
			 "procedure=\"R%d\"}",
			 p);
		CHECK_EQ(mx_value(t, s), v);
	}
	CHECK_EQ(total, THREADS * EACH);
	CHECK_EQ(mx_value(t, "t_hammered_total"), THREADS * EACH);
	free(t);
	nfsd_metrics_free(shared);
}

int main(void)
{
	t_series();
	t_recording();
	t_escape();
	t_collectors();
	t_threads();
	return 0;
}
