/* SPDX-License-Identifier: MIT */
/*
 * bench/ec: erasure coding (issue 19).  The codec (layout/ec.h) on one
 * core, beside memcpy of the same bytes on the same core, with 1 MiB
 * chunks, single-threaded:
 *
 *  - memcpy: the 4 data chunks of a 4+2 stripe copied to 4 others (the
 *    ceiling: the least any pass over those bytes costs);
 *  - ec_encode: parity of 4+2 and 8+3 stripes, MB/s of data encoded;
 *  - ec_rebuild: 2 lost data chunks of 4+2 and 8+3 stripes from k
 *    survivors (parity among them), MB/s of survivors read (k chunks, the
 *    same basis as encode);
 *  - ec_rebuild's per-call setup (inverting the survivors' matrix, building
 *    the decode tables), microseconds per call, from a 16+4 stripe with 4
 *    chunks lost and 1-byte chunks: what a cache of decode tables would
 *    save per call.
 *
 * The phases run interleaved, in rounds (--rounds, 5 unless --quick):
 * each round measures every phase once, so drift on a shared box hits all
 * of them alike.  --seconds is each codec phase's measured time in all (5
 * s, 0.6 s with --quick), split evenly between the rounds.  A codec figure
 * is its samples' bytes over the measuring thread's CPU seconds (MB/s on
 * one core, decimal MB), a ratio that of two figures; every round's
 * figure and ratio is printed too, and wall-clock MB/s beside it (lower
 * when the box took the core away).  The chunks stay in cache (4+2: 6
 * MiB), for memcpy and the codec alike.
 *
 * The cluster phases (ec_cluster.c), in the same rounds: braid-mds and
 * --data-servers braid-ds (7: a 4+2 stripe and one more, where a lost
 * server's chunks can go) as child processes, a directory with the policy
 * ec,k=4,m=2,segment_size=1M and [mds] ec_seal_after = 1, --ec-size bytes
 * of files (--ec-file-size each) written through our client (ffclient)
 * and waited on until the MDS's metrics count every one sealed.  Each
 * round then measures:
 *
 *  - the loopback TCP ceiling (bench/common.h, 1 stream), the limit of any
 *    one connection here;
 *  - a normal read: every file read whole through a fresh ffclient mount
 *    (16 READs of 1 MiB in flight, straight to the data servers), every
 *    byte checked against the pattern it was written with; again (a cache
 *    drop before each) until the reads took 2 s (1 s with --quick);
 *  - a degraded read: the data server holding the most data segments
 *    (braidctl layout; the same one each round, so that rounds compare
 *    alike) SIGKILLed, and once the MDS counts it down, the same read: the
 *    MDS lays out that server's segments on a surviving holder of the
 *    stripe with a reconstructing handle, which rebuilds them from k
 *    others.  The round fails unless the MDS's degraded layouts and the
 *    data servers' reconstructed bytes moved.  Then the server starts
 *    again on its store, with its chunks, for the next round.
 *
 * A read figure is wall-clock MB/s of file bytes (the client, the MDS and
 * the data servers share the box's cores); over all rounds, all bytes
 * over all seconds of the rounds whose reads worked; the loopback figure,
 * the mean of its samples.  Every round's figures and ratios are printed.
 * Before each read the data servers' page cache of their stores is
 * dropped (sync, then POSIX_FADV_DONTNEED on every store file), so both
 * reads come from the disk; --warm keeps it (both then read memory).
 * After the rounds: the space overhead (bytes allocated in the data
 * servers' stores over the files' bytes; (k+m)/k = 1.5 expected), then
 * the fullest data server SIGKILLed for good and `braidctl ds lost`
 * (retried while the MDS still counts it up, not timed): the rebuild rate
 * is the chunk bytes braidctl rebuild counts rebuilt (its ec.bytes_done)
 * over the time from ds lost to the poll that saw the last of them (the
 * time until it shows nothing left, and the bytes the lost store held,
 * beside it); then every file is read once more, byte-checked, and must
 * get no degraded layout.  A braid-mds that makes no progress for
 * --rebuild-idle seconds (60; 30 with --quick) does not rebuild
 * erasure-coded chunks, and rebuild_MBps is then null with why.
 *
 * Usage: ec [--seconds N] [--rounds N] [--quick] [--no-cluster]
 *           [--ec-size SIZE] [--ec-file-size SIZE] [--data-servers N] [--warm]
 *           [--rebuild-idle S] [--dir PATH] [--keep]
 *           [--braid-mds PATH] [--braid-ds PATH] [--braidctl PATH]
 * Last line of output: one JSON object with the figures and ratios.  The
 * exit status is 1 when a cluster read failed or read wrong bytes.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/common.h"
#include "bench/ec.h"
#include "layout/ec.h"

#define CHUNK	   (1u << 20)
#define MB	   1e6
#define ROUNDS_MAX 16

/* ---------------------------------------------------------------- options */

struct bench_opts {
	double secs;	 /* each phase's measured time, all rounds together */
	unsigned rounds; /* interleaved rounds */
	bool cluster;	 /* the cluster phases too */
	bool keep;	 /* keep the cluster's directory */
	struct ec_cluster_opts cl;
};

static void usage(void)
{
	fprintf(stderr,
		"usage: ec [--seconds N] [--rounds N] [--quick] [--no-cluster]\n"
		"          [--ec-size SIZE] [--ec-file-size SIZE] [--data-servers N] [--warm]\n"
		"          [--rebuild-idle S] [--dir PATH] [--keep]\n"
		"          [--braid-mds PATH] [--braid-ds PATH] [--braidctl PATH]\n");
	exit(2);
}

/* A size in whole MiB, at least 1 MiB. */
static bool mib_parse(const char *s, uint64_t *out)
{
	if (!bench_size_parse(s, out))
		return false;
	*out = *out / CHUNK * CHUNK;
	return *out >= CHUNK;
}

static void opts_parse(struct bench_opts *o, int argc, char **argv)
{
	bool quick = false, have_secs = false, have_rounds = false, have_size = false,
	     have_idle = false;
	const char *tmp = getenv("TMPDIR");
	struct ec_cluster_opts *c = &o->cl;
	o->secs = 5;
	o->rounds = 5;
	o->cluster = true;
	o->keep = false;
	c->size = 256ull << 20;
	c->file_size = 16ull << 20;
	c->nds = EC_K + EC_M + 1;
	c->warm = false;
	c->loop_secs = 2;
	c->read_secs = 2;
	c->rebuild_idle_s = 60;
	c->dir = tmp && *tmp ? tmp : "/var/tmp";
	bench_cluster_opts_init(&c->cl);
	c->cl.mds_conf = EC_SEAL_CONF;
	c->cl.metrics = true;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--quick")) {
			quick = true;
		} else if (!strcmp(a, "--no-cluster")) {
			o->cluster = false;
		} else if (!strcmp(a, "--warm")) {
			c->warm = true;
		} else if (!strcmp(a, "--keep")) {
			o->keep = true;
		} else if (!v) {
			usage();
		} else if (!strcmp(a, "--seconds")) {
			o->secs = atof(v);
			have_secs = o->secs > 0;
			if (!have_secs)
				usage();
			i++;
		} else if (!strcmp(a, "--rounds")) {
			if (!bench_uint_parse(v, 1, ROUNDS_MAX, &o->rounds))
				usage();
			have_rounds = true;
			i++;
		} else if (!strcmp(a, "--ec-size")) {
			if (!mib_parse(v, &c->size))
				usage();
			have_size = true;
			i++;
		} else if (!strcmp(a, "--ec-file-size")) {
			if (!mib_parse(v, &c->file_size))
				usage();
			i++;
		} else if (!strcmp(a, "--data-servers")) {
			if (!bench_uint_parse(v, EC_K + EC_M, EC_NDS_MAX, &c->nds))
				usage();
			i++;
		} else if (!strcmp(a, "--rebuild-idle")) {
			c->rebuild_idle_s = atof(v);
			if (c->rebuild_idle_s <= 0)
				usage();
			have_idle = true;
			i++;
		} else if (!strcmp(a, "--dir")) {
			c->dir = v;
			i++;
		} else if (bench_cluster_opts_arg(&c->cl, a, v)) {
			i++;
		} else {
			usage();
		}
	}
	if (quick) {
		if (!have_secs)
			o->secs = 0.6;
		if (!have_rounds)
			o->rounds = 2;
		if (!have_size)
			c->size = 128ull << 20;
		if (!have_idle)
			c->rebuild_idle_s = 30;
		c->loop_secs = 1;
		c->read_secs = 1;
	}
	if (c->size < c->file_size)
		usage();
}

/* ---------------------------------------------------------------- rows */

/* One phase's samples, a sample per round. */
struct sample {
	double bytes; /* counted bytes (see the row) */
	double calls;
	double cpu_s; /* the measuring thread's */
	double wall_s;
};

struct row {
	const char *name;
	const char *key; /* JSON: "<key>_MBps_per_core" (or "_us" for per-call rows) */
	int vs;		 /* the row it is judged against, or -1 */
	bool per_call;	 /* report microseconds per call, not MB/s */
	struct sample smp[ROUNDS_MAX];
	unsigned n;
};

enum { R_MEMCPY, R_ENC42, R_ENC83, R_DEC42, R_DEC83, R_SETUP, R_COUNT };

static struct row rows[R_COUNT] = {
    [R_MEMCPY] = {"memcpy, 4 x 1 MiB", "memcpy", -1, false, {{0}}, 0},
    [R_ENC42] = {"ec_encode 4+2", "encode", R_MEMCPY, false, {{0}}, 0},
    [R_ENC83] = {"ec_encode 8+3", "encode_8_3", R_MEMCPY, false, {{0}}, 0},
    [R_DEC42] = {"ec_rebuild 4+2, 2 data lost", "decode", R_MEMCPY, false, {{0}}, 0},
    [R_DEC83] = {"ec_rebuild 8+3, 2 data lost", "decode_8_3", R_MEMCPY, false, {{0}}, 0},
    [R_SETUP] = {"ec_rebuild setup, 16+4, 4 lost", "rebuild_setup", -1, true, {{0}}, 0},
};

static double thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* MB per CPU-second of row r: all samples, or (k >= 0) round k's. */
static bool row_mbps(int r, int k, double *v)
{
	double b = 0, c = 0;
	for (unsigned i = 0; i < rows[r].n; i++)
		if (k < 0 || (unsigned)k == i) {
			b += rows[r].smp[i].bytes;
			c += rows[r].smp[i].cpu_s;
		}
	if (c <= 0 || b <= 0)
		return false;
	*v = b / c / MB;
	return true;
}

static bool row_wall_mbps(int r, double *v)
{
	double b = 0, w = 0;
	for (unsigned i = 0; i < rows[r].n; i++) {
		b += rows[r].smp[i].bytes;
		w += rows[r].smp[i].wall_s;
	}
	if (w <= 0 || b <= 0)
		return false;
	*v = b / w / MB;
	return true;
}

/* CPU microseconds per call of a per-call row. */
static bool row_us(int r, double *v)
{
	double n = 0, c = 0;
	for (unsigned i = 0; i < rows[r].n; i++) {
		n += rows[r].smp[i].calls;
		c += rows[r].smp[i].cpu_s;
	}
	if (n <= 0)
		return false;
	*v = c / n * 1e6;
	return true;
}

/* Row r over its ceiling: all samples, or (k >= 0) round k's. */
static bool row_ratio(int r, int k, double *v)
{
	double a, b;
	if (rows[r].vs < 0 || !row_mbps(r, k, &a) || !row_mbps(rows[r].vs, k, &b))
		return false;
	*v = a / b;
	return true;
}

/*
 * One sample of row r: op(arg) once to warm up, then as often as fits in
 * secs; each call counts bytes.
 */
static void measure(int r, double secs, void (*op)(void *), void *arg, double bytes)
{
	op(arg);
	double t0 = bench_now_s(), c0 = thread_cpu_s(), t;
	double calls = 0;
	do {
		op(arg);
		calls++;
		t = bench_now_s();
	} while (t - t0 < secs);
	struct row *w = &rows[r];
	w->smp[w->n++] = (struct sample){
	    .bytes = calls * bytes, .calls = calls, .cpu_s = thread_cpu_s() - c0, .wall_s = t - t0};
}

/* ---------------------------------------------------------------- phases */

/* A stripe of 1 MiB chunks (chunk i: data for i < k, then parity). */
struct stripe {
	struct ec_code *c;
	unsigned k, m;
	size_t len;
	uint8_t *chunk[EC_K_MAX + EC_M_MAX];
	uint8_t *out[EC_K_MAX + EC_M_MAX]; /* memcpy's and rebuild's outputs */
	/* the rebuild: have k survivors, want the first 'nlost' data chunks */
	unsigned have_idx[EC_K_MAX], want_idx[EC_M_MAX], nlost;
	const uint8_t *have[EC_K_MAX];
};

static uint8_t *buf_new(size_t len)
{
	uint8_t *p = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);
	if (!p) {
		fprintf(stderr, "%s: out of memory\n", bench_prog);
		exit(99);
	}
	return p;
}

static void stripe_new(struct stripe *s, unsigned k, unsigned m, size_t len, unsigned nlost)
{
	memset(s, 0, sizeof(*s));
	int rc = ec_code_new(k, m, &s->c);
	if (rc) {
		fprintf(stderr, "%s: ec_code_new(%u, %u): %s\n", bench_prog, k, m, strerror(-rc));
		exit(99);
	}
	s->k = k;
	s->m = m;
	s->len = len;
	uint64_t seed = 0x2545f4914f6cdd1dull + k;
	for (unsigned i = 0; i < k + m; i++) {
		s->chunk[i] = buf_new(len);
		s->out[i] = buf_new(len);
		for (size_t b = 0; b < len; b += 8) {
			uint64_t v = bench_rand64(&seed);
			memcpy(s->chunk[i] + b, &v, len - b < 8 ? len - b : 8);
		}
	}
	ec_encode(s->c, len, (const uint8_t *const *)s->chunk, &s->chunk[k]);
	s->nlost = nlost;
	for (unsigned i = 0; i < nlost; i++)
		s->want_idx[i] = i;
	for (unsigned i = 0; i < k; i++) {
		s->have_idx[i] = nlost + i;
		s->have[i] = s->chunk[nlost + i];
	}
	/* the bench's own check: the rebuild gives the lost chunks back */
	rc = ec_rebuild(s->c, len, s->have_idx, s->have, nlost, s->want_idx, s->out);
	for (unsigned i = 0; !rc && i < nlost; i++)
		if (memcmp(s->out[i], s->chunk[i], len))
			rc = -EIO;
	if (rc) {
		fprintf(stderr, "%s: %u+%u rebuild: %s\n", bench_prog, k, m, strerror(-rc));
		exit(99);
	}
}

static void stripe_free(struct stripe *s)
{
	for (unsigned i = 0; i < s->k + s->m; i++) {
		free(s->chunk[i]);
		free(s->out[i]);
	}
	ec_code_free(s->c);
}

static void op_memcpy(void *arg)
{
	struct stripe *s = arg;
	for (unsigned i = 0; i < s->k; i++)
		memcpy(s->out[i], s->chunk[i], s->len);
}

static void op_encode(void *arg)
{
	struct stripe *s = arg;
	ec_encode(s->c, s->len, (const uint8_t *const *)s->chunk, &s->chunk[s->k]);
}

static void op_rebuild(void *arg)
{
	struct stripe *s = arg;
	if (ec_rebuild(s->c, s->len, s->have_idx, s->have, s->nlost, s->want_idx, s->out)) {
		fprintf(stderr, "%s: ec_rebuild failed\n", bench_prog);
		exit(99);
	}
}

/* ---------------------------------------------------------------- output */

static void table_print(void)
{
	printf("%-34s %9s %9s %7s %s\n", "case (1 MiB chunks, 1 thread)", "MB/CPU-s", "MB/s wall",
	       "ratio", "vs");
	for (int r = 0; r < R_COUNT; r++) {
		const struct row *w = &rows[r];
		double v;
		if (w->per_call) {
			if (row_us(r, &v))
				printf("%-34s %9.2f us/call (CPU), %.0f calls\n", w->name, v,
				       w->smp[0].calls);
			continue;
		}
		char mb[16] = "-", wall[16] = "-", rat[16] = "-";
		if (row_mbps(r, -1, &v))
			bench_strfmt(mb, sizeof(mb), "%.0f", v);
		if (row_wall_mbps(r, &v))
			bench_strfmt(wall, sizeof(wall), "%.0f", v);
		if (w->vs < 0)
			bench_strfmt(rat, sizeof(rat), "1.00");
		else if (row_ratio(r, -1, &v))
			bench_strfmt(rat, sizeof(rat), "%.2f", v);
		printf("%-34s %9s %9s %7s %s\n", w->name, mb, wall, rat,
		       w->vs < 0 ? "(ceiling)" : rows[w->vs].name);
	}
}

static void rounds_print(const struct bench_opts *o)
{
	printf("each round, MB/CPU-s (ratio to the same round's memcpy):\n");
	for (int r = 0; r < R_COUNT; r++) {
		const struct row *w = &rows[r];
		printf("  %-32s", w->name);
		for (unsigned k = 0; k < o->rounds; k++) {
			double v, q;
			if (w->per_call) {
				if (k < w->n && w->smp[k].calls > 0)
					printf(" %6.2f us",
					       w->smp[k].cpu_s / w->smp[k].calls * 1e6);
			} else if (!row_mbps(r, (int)k, &v)) {
				printf(" %13s", "-");
			} else if (row_ratio(r, (int)k, &q)) {
				printf(" %6.0f (%4.2f)", v, q);
			} else {
				printf(" %13.0f", v);
			}
		}
		printf("\n");
	}
}

static void jrow(int r)
{
	char k[64];
	double v = 0;
	bool ok;
	if (rows[r].per_call) {
		ok = row_us(r, &v);
		bench_strfmt(k, sizeof(k), "%s_us", rows[r].key);
		bench_json_num(k, ok, v, 3);
		return;
	}
	ok = row_mbps(r, -1, &v);
	/* memcpy_MBps: the ceiling is per core by definition */
	bench_strfmt(k, sizeof(k), rows[r].vs < 0 ? "%s_MBps" : "%s_MBps_per_core", rows[r].key);
	bench_json_num(k, ok, v, 1);
	if (rows[r].vs < 0)
		return;
	ok = row_ratio(r, -1, &v);
	bench_strfmt(k, sizeof(k), "%s_vs_%s", rows[r].key, rows[rows[r].vs].key);
	bench_json_num(k, ok, v, 3);
}

static void jrounds(const struct bench_opts *o, int r)
{
	char k[64];
	bench_strfmt(k, sizeof(k), "%s_vs_%s_rounds", rows[r].key, rows[rows[r].vs].key);
	bench_json_key(k);
	putchar('[');
	for (unsigned i = 0; i < o->rounds; i++) {
		double v = 0;
		bool ok = row_ratio(r, (int)i, &v);
		if (i)
			putchar(',');
		bench_json_val(ok, v, 3);
	}
	putchar(']');
}

/* ---------------------------------------------------------------- the cluster */

/* What the cluster phases saw; why[] says why they did not run. */
static struct {
	bool ran;
	char why[512];
	char work[PATH_MAX];
	struct ec_round rd[ROUNDS_MAX];
	unsigned nrd;
	bool space_ok;
	uint64_t raw, logical;
	struct ec_rebuild rb;
} cls;

enum { C_LOOP, C_NORMAL, C_DEGRADED };

static double cl_val(const struct ec_round *r, int which)
{
	return which == C_LOOP	   ? r->loop_mbps
	       : which == C_NORMAL ? r->normal_mbps
				   : r->degraded_mbps;
}

/*
 * Over the rounds whose reads both worked: the loopback's mean (equal
 * windows), the reads' harmonic mean (each round reads the same bytes:
 * all bytes over all seconds).
 */
static bool cl_agg(int which, double *v)
{
	double sum = 0;
	unsigned n = 0;
	for (unsigned i = 0; i < cls.nrd; i++) {
		double x = cl_val(&cls.rd[i], which);
		if (!cls.rd[i].ok || x <= 0)
			continue;
		sum += which == C_LOOP ? x : 1 / x;
		n++;
	}
	if (!n)
		return false;
	*v = which == C_LOOP ? sum / n : n / sum;
	return true;
}

static bool cl_ratio(int a, int b, double *v)
{
	double x, y;
	if (!cl_agg(a, &x) || !cl_agg(b, &y))
		return false;
	*v = x / y;
	return true;
}

static bool cl_round_ratio(unsigned i, int a, int b, double *v)
{
	const struct ec_round *r = &cls.rd[i];
	if (i >= cls.nrd || !r->ok || cl_val(r, a) <= 0 || cl_val(r, b) <= 0)
		return false;
	*v = cl_val(r, a) / cl_val(r, b);
	return true;
}

static bool cl_space(double *v)
{
	if (!cls.space_ok)
		return false;
	*v = (double)cls.raw / (double)cls.logical;
	return true;
}

static bool cl_rebuild_mbps(double *v)
{
	if (!cls.rb.ok)
		return false;
	*v = (double)cls.rb.written_bytes / cls.rb.secs / MB;
	return true;
}

static void cl_print(const struct bench_opts *o)
{
	const struct ec_cluster_opts *c = &o->cl;
	if (!cls.ran) {
		printf("cluster phases: not run: %s\n", cls.why);
		return;
	}
	printf("\ncluster: braid-mds and %u braid-ds, %s, %u files of %.0f MiB through ffclient, "
	       "reads %s\n",
	       c->nds, EC_POLICY, (unsigned)(c->size / c->file_size), (double)c->file_size / CHUNK,
	       c->warm ? "from the page cache (--warm)"
		       : "cold (the data servers' page cache dropped before each)");
	printf("%-6s %9s %9s %9s %8s %8s %12s %7s %8s %10s\n", "round", "loopback", "normal",
	       "degraded", "deg/norm", "norm/lo", "killed(segs)", "down s", "deg lays", "recon MB");
	for (unsigned i = 0; i < cls.nrd; i++) {
		const struct ec_round *r = &cls.rd[i];
		char lo[16], no[16], de[16], q1[16], q2[16];
		double v = 0;
		bool ok;
		bench_fig_str(lo, sizeof(lo), r->loop_mbps > 0, r->loop_mbps, 0);
		bench_fig_str(no, sizeof(no), r->normal_mbps > 0, r->normal_mbps, 0);
		bench_fig_str(de, sizeof(de), r->degraded_mbps > 0, r->degraded_mbps, 0);
		ok = cl_round_ratio(i, C_DEGRADED, C_NORMAL, &v);
		bench_fig_str(q1, sizeof(q1), ok, v, 2);
		ok = cl_round_ratio(i, C_NORMAL, C_LOOP, &v);
		bench_fig_str(q2, sizeof(q2), ok, v, 2);
		char kil[32];
		bench_strfmt(kil, sizeof(kil), "%u (%u/%u)", r->killed, r->killed_segs, r->segs);
		printf("%-6u %9s %9s %9s %8s %8s %12s %7.1f %8llu %10.1f\n", i + 1, lo, no, de, q1,
		       q2, kil, r->down_s, (unsigned long long)r->degraded_layouts,
		       (double)r->reconstructed_bytes / MB);
		if (!r->ok)
			printf("       FAILED: %s\n", r->why);
	}
	char a[16], b[16];
	double v = 0, w = 0;
	bool ok;
	printf("%-40s %9s %s\n", "figure (rounds whose reads worked)", "MB/s", "ratio");
	ok = cl_agg(C_LOOP, &v);
	bench_fig_str(a, sizeof(a), ok, v, 0);
	printf("%-40s %9s (ceiling of one connection)\n", "loopback TCP, 1 stream", a);
	ok = cl_agg(C_NORMAL, &v);
	bench_fig_str(a, sizeof(a), ok, v, 0);
	ok = cl_ratio(C_NORMAL, C_LOOP, &w);
	bench_fig_str(b, sizeof(b), ok, w, 2);
	printf("%-40s %9s %s of loopback\n", "normal read, all data servers up", a, b);
	ok = cl_agg(C_DEGRADED, &v);
	bench_fig_str(a, sizeof(a), ok, v, 0);
	ok = cl_ratio(C_DEGRADED, C_NORMAL, &w);
	bench_fig_str(b, sizeof(b), ok, w, 2);
	printf("%-40s %9s %s of normal (target 0.50)\n", "degraded read, one data server down", a,
	       b);
	if (cl_rebuild_mbps(&v))
		printf("%-40s %9.0f %llu chunks, %.1f MiB, in %.2f s (ds lost to the last "
		       "chunk; braidctl shows it done at %.2f s); the lost store held %.1f MiB; "
		       "all files read back right after it, none degraded\n",
		       "rebuild of a lost data server", v, (unsigned long long)cls.rb.chunks,
		       (double)cls.rb.written_bytes / CHUNK, cls.rb.secs, cls.rb.shown_secs,
		       (double)cls.rb.lost_bytes / CHUNK);
	else
		printf("%-40s %9s %s\n", "rebuild of a lost data server", "null", cls.rb.why);
	if (cl_space(&v))
		printf("%-40s %9.3f raw %.1f MiB / logical %.1f MiB ((k+m)/k = %.2f)\n",
		       "space overhead", v, (double)cls.raw / CHUNK, (double)cls.logical / CHUNK,
		       (double)(EC_K + EC_M) / EC_K);
	else
		printf("%-40s %9s\n", "space overhead", "-");
}

/* "<key>": [one per round]. */
static void jcl_rounds(const char *key, int a, int b)
{
	bench_json_key(key);
	putchar('[');
	for (unsigned i = 0; i < cls.nrd; i++) {
		double v = 0;
		bool ok =
		    b < 0 ? cls.rd[i].ok && cl_val(&cls.rd[i], a) > 0 : cl_round_ratio(i, a, b, &v);
		if (b < 0)
			v = cl_val(&cls.rd[i], a);
		if (i)
			putchar(',');
		bench_json_val(ok, v, b < 0 ? 1 : 3);
	}
	putchar(']');
}

static void jcluster(const struct bench_opts *o)
{
	double v = 0;
	bool ok;
	bench_json_str("cluster_why", cls.ran ? NULL : cls.why);
	bench_json_num("data_servers", true, o->cl.nds, 0);
	bench_json_str("policy", EC_POLICY);
	bench_json_num("ec_MiB", true, (double)o->cl.size / CHUNK, 0);
	bench_json_num("ec_file_MiB", true, (double)o->cl.file_size / CHUNK, 0);
	bench_json_str("page_cache", o->cl.warm ? "kept" : "dropped");
	ok = cl_agg(C_NORMAL, &v);
	bench_json_num("normal_read_MBps", ok, v, 1);
	ok = cl_agg(C_DEGRADED, &v);
	bench_json_num("degraded_read_MBps", ok, v, 1);
	ok = cl_ratio(C_DEGRADED, C_NORMAL, &v);
	bench_json_num("degraded_read_vs_normal", ok, v, 3);
	ok = cl_agg(C_LOOP, &v);
	bench_json_num("loopback_MBps", ok, v, 1);
	ok = cl_ratio(C_NORMAL, C_LOOP, &v);
	bench_json_num("normal_read_vs_loopback", ok, v, 3);
	ok = cl_ratio(C_DEGRADED, C_LOOP, &v);
	bench_json_num("degraded_read_vs_loopback", ok, v, 3);
	ok = cl_rebuild_mbps(&v);
	bench_json_num("rebuild_MBps", ok, v, 1);
	bench_json_str("rebuild_why", ok	      ? NULL
				      : cls.rb.why[0] ? cls.rb.why
				      : cls.ran	      ? "not run"
						      : cls.why);
	bench_json_num("rebuild_s", ok, cls.rb.secs, 2);
	bench_json_num("rebuild_shown_s", ok, cls.rb.shown_secs, 2);
	bench_json_num("rebuild_chunks", ok, (double)cls.rb.chunks, 0);
	bench_json_num("rebuild_MiB", ok, (double)cls.rb.written_bytes / CHUNK, 1);
	bench_json_num("rebuild_lost_MiB", cls.rb.lost_bytes > 0, (double)cls.rb.lost_bytes / CHUNK,
		       1);
	ok = cl_space(&v);
	bench_json_num("space_overhead", ok, v, 3);
	bench_json_num("raw_bytes", ok, (double)cls.raw, 0);
	bench_json_num("logical_bytes", ok, (double)cls.logical, 0);
	jcl_rounds("loopback_MBps_rounds", C_LOOP, -1);
	jcl_rounds("normal_read_MBps_rounds", C_NORMAL, -1);
	jcl_rounds("degraded_read_MBps_rounds", C_DEGRADED, -1);
	jcl_rounds("degraded_read_vs_normal_rounds", C_DEGRADED, C_NORMAL);
	jcl_rounds("normal_read_vs_loopback_rounds", C_NORMAL, C_LOOP);
}

/* The cluster up and filled, or cls.why; cls.ran says which. */
static void cl_begin(struct bench_opts *o, struct ec_cluster *k)
{
	struct ec_cluster_opts *c = &o->cl;
	if (!bench_cluster_opts_check(&c->cl, cls.why, sizeof(cls.why)))
		return;
	bench_strfmt(cls.work, sizeof(cls.work), "%s/braid-bench-ec.XXXXXX", c->dir);
	if (!mkdtemp(cls.work)) {
		bench_strfmt(cls.why, sizeof(cls.why), "mkdtemp %s: %s", cls.work, strerror(errno));
		cls.work[0] = 0;
		return;
	}
	char fstype[32];
	bench_fstype(cls.work, fstype, sizeof(fstype));
	if (!strcmp(fstype, "tmpfs"))
		printf("bench/ec: %s is tmpfs: cold reads are memory's (use --dir)\n", c->dir);
	c->dir = cls.work;
	char why[400];
	if (ec_cluster_start(k, c, why, sizeof(why))) {
		bench_strfmt(cls.why, sizeof(cls.why), "the cluster: %s", why);
		ec_cluster_stop(k);
		return;
	}
	cls.ran = true;
}

static void cl_end(const struct bench_opts *o, struct ec_cluster *k)
{
	if (cls.ran) {
		cls.space_ok = ec_cluster_space(k, &cls.raw, &cls.logical);
		printf("bench/ec: rebuild: a data server SIGKILLed for good and declared lost\n");
		ec_cluster_rebuild(k, &cls.rb);
		ec_cluster_stop(k);
	}
	if (!cls.work[0])
		return;
	if (o->keep)
		fprintf(stderr, "bench/ec: kept %s\n", cls.work);
	else
		bench_tree_remove(cls.work);
}

static void json_print(const struct bench_opts *o, long ncpu)
{
	printf("{");
	bench_json_str("bench", "ec");
	bench_json_num("seconds", true, o->secs, 1);
	bench_json_num("rounds", true, o->rounds, 0);
	bench_json_num("chunk_bytes", true, CHUNK, 0);
	bench_json_num("cores", true, (double)ncpu, 0);
	for (int r = 0; r < R_COUNT; r++)
		jrow(r);
	jrounds(o, R_ENC42);
	jrounds(o, R_DEC42);
	jcluster(o);
	printf("}\n");
}

int main(int argc, char **argv)
{
	static struct bench_opts o;
	bench_init("bench/ec");
	opts_parse(&o, argc, argv);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	struct stripe s42, s83, s164;
	stripe_new(&s42, 4, 2, CHUNK, 2);
	stripe_new(&s83, 8, 3, CHUNK, 2);
	stripe_new(&s164, 16, 4, 1, 4);

	static struct ec_cluster k;
	if (o.cluster)
		cl_begin(&o, &k);
	else
		bench_strfmt(cls.why, sizeof(cls.why), "--no-cluster");
	if (o.cluster && !cls.ran)
		fprintf(stderr, "bench/ec: %s\n", cls.why);

	double ss = o.secs / o.rounds;
	double busy = bench_settle(5);
	if (busy >= 0.1)
		printf("bench/ec: the box was still %.0f%% busy after 5 s; measuring anyway\n",
		       busy * 100);
	for (unsigned r = 0; r < o.rounds; r++) {
		measure(R_MEMCPY, ss, op_memcpy, &s42, 4.0 * CHUNK);
		measure(R_ENC42, ss, op_encode, &s42, 4.0 * CHUNK);
		measure(R_ENC83, ss, op_encode, &s83, 8.0 * CHUNK);
		measure(R_DEC42, ss, op_rebuild, &s42, 4.0 * CHUNK);
		measure(R_DEC83, ss, op_rebuild, &s83, 8.0 * CHUNK);
		measure(R_SETUP, ss, op_rebuild, &s164, 0);
		if (cls.ran) {
			struct ec_round *rd = &cls.rd[cls.nrd++];
			ec_cluster_round(&k, rd);
			printf("bench/ec: round %u: normal %.0f MB/s, degraded %.0f MB/s (data "
			       "server %u down), loopback %.0f MB/s%s%s\n",
			       r + 1, rd->normal_mbps, rd->degraded_mbps, rd->killed, rd->loop_mbps,
			       rd->ok ? "" : ": FAILED: ", rd->ok ? "" : rd->why);
		}
	}
	cl_end(&o, &k);

	printf("bench/ec: %u rounds, %.2f s per phase per round, %ld cores\n", o.rounds, ss, ncpu);
	table_print();
	rounds_print(&o);
	cl_print(&o);
	bool failed = o.cluster && !cls.ran;
	for (unsigned i = 0; i < cls.nrd; i++)
		failed |= !cls.rd[i].ok;
	failed |= cls.rb.read_failed;
	/* before the JSON line, which ends the output */
	if (failed) {
		fflush(stdout);
		fprintf(stderr, "bench/ec: FAILED: %s\n",
			cls.ran ? "a cluster read failed or read wrong bytes (above)" : cls.why);
	}
	json_print(&o, ncpu);

	stripe_free(&s42);
	stripe_free(&s83);
	stripe_free(&s164);
	return failed ? 1 : 0;
}
