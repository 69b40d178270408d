/* SPDX-License-Identifier: MIT */
/*
 * bench/ec: the erasure-coding codec (layout/ec.h) on one core, beside
 * memcpy of the same bytes on the same core.  Measured now, with 1 MiB
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
 * Later phases, added as more rows of the same rounds: normal and
 * degraded reads of erasure-coded files through the data servers, and
 * rebuild of a lost data server's chunks.
 *
 * The phases run interleaved, in rounds (--rounds, 5 unless --quick):
 * each round measures every phase once, so drift on a shared box hits all
 * of them alike.  --seconds is each phase's measured time in all (5 s, 0.6
 * s with --quick), split evenly between the rounds.  A figure is its
 * samples' bytes over the measuring thread's CPU seconds (MB/s on one
 * core, decimal MB), a ratio that of two figures; every round's figure and
 * ratio is printed too, and wall-clock MB/s beside it (lower when the box
 * took the core away).  The chunks stay in cache (4+2: 6 MiB), for
 * memcpy and the codec alike.
 *
 * Usage: ec [--seconds N] [--rounds N] [--quick]
 * Last line of output: one JSON object with the figures and ratios.
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
#include "layout/ec.h"

#define CHUNK	   (1u << 20)
#define MB	   1e6
#define ROUNDS_MAX 16

/* ---------------------------------------------------------------- options */

struct bench_opts {
	double secs;	 /* each phase's measured time, all rounds together */
	unsigned rounds; /* interleaved rounds */
};

static void usage(void)
{
	fprintf(stderr, "usage: ec [--seconds N] [--rounds N] [--quick]\n");
	exit(2);
}

static void opts_parse(struct bench_opts *o, int argc, char **argv)
{
	bool quick = false, have_secs = false, have_rounds = false;
	o->secs = 5;
	o->rounds = 5;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--quick")) {
			quick = true;
		} else if (!v) {
			usage();
		} else if (!strcmp(a, "--seconds")) {
			o->secs = atof(v);
			have_secs = o->secs > 0;
			if (!have_secs)
				usage();
			i++;
		} else if (!strcmp(a, "--rounds")) {
			char *end;
			unsigned long n = strtoul(v, &end, 10);
			if (*end || n < 1 || n > ROUNDS_MAX)
				usage();
			o->rounds = (unsigned)n;
			have_rounds = true;
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
	}
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
	printf("}\n");
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	bench_init("bench/ec");
	opts_parse(&o, argc, argv);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	struct stripe s42, s83, s164;
	stripe_new(&s42, 4, 2, CHUNK, 2);
	stripe_new(&s83, 8, 3, CHUNK, 2);
	stripe_new(&s164, 16, 4, 1, 4);

	double ss = o.secs / o.rounds;
	double busy = bench_settle(5);
	if (busy >= 0.1)
		printf("bench/ec: the box was still %.0f%% busy after 5 s; measuring anyway\n",
		       busy * 100);
	for (unsigned k = 0; k < o.rounds; k++) {
		measure(R_MEMCPY, ss, op_memcpy, &s42, 4.0 * CHUNK);
		measure(R_ENC42, ss, op_encode, &s42, 4.0 * CHUNK);
		measure(R_ENC83, ss, op_encode, &s83, 8.0 * CHUNK);
		measure(R_DEC42, ss, op_rebuild, &s42, 4.0 * CHUNK);
		measure(R_DEC83, ss, op_rebuild, &s83, 8.0 * CHUNK);
		measure(R_SETUP, ss, op_rebuild, &s164, 0);
	}

	printf("bench/ec: %u rounds, %.2f s per phase per round, %ld cores\n", o.rounds, ss, ncpu);
	table_print();
	rounds_print(&o);
	json_print(&o, ncpu);

	stripe_free(&s42);
	stripe_free(&s83);
	stripe_free(&s164);
	return 0;
}
