/* SPDX-License-Identifier: MIT */
/*
 * bench/mds's report: the table of rates and CPU per op, the ratios, and
 * the JSON line the benchmark ends with.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>

#include "bench/mds.h"

/* ------------------------------------------------------------------ output */

static double phase_rate(const struct phase *p)
{
	return p->ok && p->secs > 0 ? (double)p->ops / p->secs : 0;
}

static void cell_rate(char *out, size_t len, const struct phase *p)
{
	if (p->ok)
		bench_strfmt(out, len, "%.0f", phase_rate(p));
	else
		bench_strfmt(out, len, "-");
}

static void cell_us(char *out, size_t len, const struct phase *p, double cpu)
{
	if (p->ok && p->ops)
		bench_strfmt(out, len, "%.1f", cpu * 1e6 / (double)p->ops);
	else
		bench_strfmt(out, len, "-");
}

static void row_print(const struct server_res *r, const struct at_size *a, const char *what,
		      const struct phase *p, const char *note)
{
	char key[24], rate[32], su[32], cu[32], secs[32];
	bench_mds_size_key(a->n, key, sizeof(key));
	cell_rate(rate, sizeof(rate), p);
	cell_us(su, sizeof(su), p, p->srv_cpu);
	cell_us(cu, sizeof(cu), p, p->cli_cpu);
	bench_strfmt(secs, sizeof(secs), p->ok ? "%.2f" : "-", p->secs);
	if (!p->ok) {
		printf("%-10s %-5s %-16s %10s  %s\n", r->name, key, what, "-",
		       p->why[0] ? p->why : (r->why[0] ? r->why : "not measured"));
		return;
	}
	printf("%-10s %-5s %-16s %10s %10s %10s %10llu %8s %s\n", r->name, key, what, rate, su, cu,
	       (unsigned long long)p->ops, secs, note);
}

void bench_mds_table_print(const struct mds_opts *o)
{
	printf("%-10s %-5s %-16s %10s %10s %10s %10s %8s %s\n", "server", "size", "op", "per s",
	       "srv us/op", "cli us/op", "ops", "secs", "");
	const struct server_res *rs[2] = {&braid_res, &ganesha_res};
	for (int s = 0; s < 2; s++) {
		const struct server_res *r = rs[s];
		if (!r->ran) {
			printf("%-10s %-5s %-16s %10s  %s\n", r->name, "all", "-", "-", r->why);
			continue;
		}
		for (unsigned i = 0; i < NSIZES_MAX && r->at[i].n; i++) {
			const struct at_size *a = &r->at[i];
			char note[96] = "", key[24];
			if (!a->run) {
				bench_mds_size_key(a->n, key, sizeof(key));
				printf("%-10s %-5s %-16s %10s  %s\n", r->name, key, "all", "-",
				       a->create.why);
				continue;
			}
			row_print(r, a, r->two_compound ? "create (2 cmpd)" : "create", &a->create,
				  "");
			row_print(r, a, "lookup", &a->lookup, "");
			if (a->walk_capped) {
				bench_mds_size_key(o->walk_cap, key, sizeof(key));
				bench_strfmt(note, sizeof(note), "(walk capped at %s entries)",
					     key);
			} else if (a->walks > 1) {
				bench_strfmt(note, sizeof(note), "(%u whole walks)", a->walks);
			}
			row_print(r, a, "readdir entries", &a->readdir, note);
		}
	}
}

/* JSON output (bench_json_*): a figure that was not measured is null. */

enum what { W_CREATE, W_LOOKUP, W_READDIR };

static const struct phase *phase_of(const struct at_size *a, enum what w)
{
	return w == W_CREATE ? &a->create : w == W_LOOKUP ? &a->lookup : &a->readdir;
}

static const struct at_size *at_of(const struct server_res *r, uint64_t n)
{
	for (unsigned i = 0; i < NSIZES_MAX && r->at[i].n; i++)
		if (r->at[i].n == n && r->at[i].run)
			return &r->at[i];
	return NULL;
}

/* Per-second figure of w at size n, with why it is missing. */
static bool rate_at(const struct server_res *r, uint64_t n, enum what w, double *v, char *why,
		    size_t len)
{
	const struct at_size *a = at_of(r, n);
	char key[24];
	bench_mds_size_key(n, key, sizeof(key));
	if (!r->ran) {
		bench_strfmt(why, len, "%s: %s", r->name, r->why);
		return false;
	}
	if (!a) {
		bench_strfmt(why, len, "%s: %s not run", r->name, key);
		return false;
	}
	const struct phase *p = phase_of(a, w);
	if (!p->ok) {
		bench_strfmt(why, len, "%s at %s: %s", r->name, key, p->why);
		return false;
	}
	*v = phase_rate(p);
	return true;
}

/* {"1e3":x,...} over the sizes of r (the ones not run are null). */
static void jobj(const char *k, const struct server_res *r, enum what w, bool cpu)
{
	bench_json_key(k);
	putchar('{');
	for (unsigned i = 0; i < NSIZES_MAX && r->at[i].n; i++) {
		const struct at_size *a = &r->at[i];
		const struct phase *p = phase_of(a, w);
		char key[24];
		bench_mds_size_key(a->n, key, sizeof(key));
		printf("%s\"%s\":", i ? "," : "", key);
		bool ok = r->ran && a->run && p->ok && p->ops > 0;
		if (cpu)
			bench_json_val(ok, ok ? p->srv_cpu * 1e6 / (double)p->ops : 0, 2);
		else
			bench_json_val(ok, phase_rate(p), 1);
	}
	putchar('}');
}

/* How many whole walks each READDIR figure timed, and whether they were
 * cut at --readdir-cap, by size. */
static void jwalks(const char *k_walks, const char *k_capped, const struct server_res *r)
{
	for (int pass = 0; pass < 2; pass++) {
		bench_json_key(pass ? k_capped : k_walks);
		putchar('{');
		for (unsigned i = 0; i < NSIZES_MAX && r->at[i].n; i++) {
			const struct at_size *a = &r->at[i];
			char key[24];
			bench_mds_size_key(a->n, key, sizeof(key));
			printf("%s\"%s\":", i ? "," : "", key);
			if (!r->ran || !a->readdir.ok)
				printf("null");
			else if (pass)
				printf("%s", a->walk_capped ? "true" : "false");
			else
				printf("%u", a->walks);
		}
		putchar('}');
	}
}

struct ratio_def {
	const char *key;
	const struct server_res *a, *b;
	uint64_t na, nb;
	enum what w;
};

static bool ratio_eval(const struct ratio_def *d, double *v, char *why, size_t len)
{
	double x, y;
	if (!rate_at(d->a, d->na, d->w, &x, why, len) || !rate_at(d->b, d->nb, d->w, &y, why, len))
		return false;
	if (y <= 0) {
		bench_strfmt(why, len, "zero denominator");
		return false;
	}
	*v = x / y;
	return true;
}

static const struct ratio_def ratios[] = {
    {"creates_1e7_vs_1e3", &braid_res, &braid_res, 10000000, 1000, W_CREATE},
    {"lookups_1e7_vs_1e3", &braid_res, &braid_res, 10000000, 1000, W_LOOKUP},
    {"readdir_1e7_vs_1e3", &braid_res, &braid_res, 10000000, 1000, W_READDIR},
    {"creates_1e6_vs_ganesha", &braid_res, &ganesha_res, 1000000, 1000000, W_CREATE},
    {"lookups_1e6_vs_ganesha", &braid_res, &ganesha_res, 1000000, 1000000, W_LOOKUP},
    {"readdir_1e6_vs_ganesha", &braid_res, &ganesha_res, 1000000, 1000000, W_READDIR},
    {"ganesha_creates_1e6_vs_1e3", &ganesha_res, &ganesha_res, 1000000, 1000, W_CREATE},
    {"ganesha_lookups_1e6_vs_1e3", &ganesha_res, &ganesha_res, 1000000, 1000, W_LOOKUP},
    {"ganesha_readdir_1e6_vs_1e3", &ganesha_res, &ganesha_res, 1000000, 1000, W_READDIR},
};
#define NRATIOS (sizeof(ratios) / sizeof(ratios[0]))

void bench_mds_ratios_print(void)
{
	printf("\n%-28s %8s  %s\n", "ratio", "value", "");
	for (size_t i = 0; i < NRATIOS; i++) {
		double v;
		char why[400];
		if (ratio_eval(&ratios[i], &v, why, sizeof(why)))
			printf("%-28s %8.3f\n", ratios[i].key, v);
		else
			printf("%-28s %8s  %s\n", ratios[i].key, "null", why);
	}
	/* every size both ran at, side by side */
	for (unsigned i = 0; i < NSIZES_MAX && braid_res.at[i].n; i++) {
		uint64_t n = braid_res.at[i].n;
		if (n == 1000000 || !at_of(&ganesha_res, n) || !braid_res.ran || !ganesha_res.ran)
			continue;
		static const char *const wn[] = {"creates", "lookups", "readdir"};
		for (int w = 0; w < 3; w++) {
			struct ratio_def d = {NULL, &braid_res, &ganesha_res, n, n, (enum what)w};
			char key[64], sk[24], why[400];
			double v;
			bench_mds_size_key(n, sk, sizeof(sk));
			bench_strfmt(key, sizeof(key), "%s_%s_vs_ganesha", wn[w], sk);
			if (ratio_eval(&d, &v, why, sizeof(why)))
				printf("%-28s %8.3f\n", key, v);
			else
				printf("%-28s %8s  %s\n", key, "null", why);
		}
	}
}

void bench_mds_json_print(const struct mds_opts *o, const char *fstype, long ncpu)
{
	putchar('{');
	bench_json_str("bench", "mds");
	bench_json_key("sizes");
	putchar('[');
	for (unsigned i = 0; i < o->nsizes; i++)
		printf("%s%llu", i ? "," : "", (unsigned long long)o->sizes[i]);
	putchar(']');
	bench_json_num("max_size", o->max != UINT64_MAX, (double)o->max, 0);
	bench_json_num("inflight", true, o->inflight, 0);
	bench_json_num("conns", true, o->conns, 0);
	bench_json_num("lookups_per_size", true, (double)o->lookups, 0);
	bench_json_num("readdir_walk_cap", o->walk_cap > 0, (double)o->walk_cap, 0);
	bench_json_num("cores", true, (double)ncpu, 0);
	bench_json_str("fs", fstype);
	/* braid-mds */
	jobj("creates_per_s", &braid_res, W_CREATE, false);
	jobj("lookups_per_s", &braid_res, W_LOOKUP, false);
	jobj("readdir_entries_per_s", &braid_res, W_READDIR, false);
	jobj("create_cpu_us", &braid_res, W_CREATE, true);
	jobj("lookup_cpu_us", &braid_res, W_LOOKUP, true);
	jobj("readdir_cpu_us_per_entry", &braid_res, W_READDIR, true);
	jwalks("readdir_walks", "readdir_walk_capped", &braid_res);
	/* Ganesha */
	jobj("ganesha_creates_per_s", &ganesha_res, W_CREATE, false);
	jobj("ganesha_lookups_per_s", &ganesha_res, W_LOOKUP, false);
	jobj("ganesha_readdir_entries_per_s", &ganesha_res, W_READDIR, false);
	jobj("ganesha_create_cpu_us", &ganesha_res, W_CREATE, true);
	jobj("ganesha_lookup_cpu_us", &ganesha_res, W_LOOKUP, true);
	jobj("ganesha_readdir_cpu_us_per_entry", &ganesha_res, W_READDIR, true);
	jwalks("ganesha_readdir_walks", "ganesha_readdir_walk_capped", &ganesha_res);
	double v;
	char why[400];
	bool ok = rate_at(&ganesha_res, 1000000, W_CREATE, &v, why, sizeof(why));
	bench_json_num("ganesha_creates_per_s_1e6", ok, v, 1);
	ok = rate_at(&ganesha_res, 1000000, W_LOOKUP, &v, why, sizeof(why));
	bench_json_num("ganesha_lookups_per_s_1e6", ok, v, 1);
	ok = rate_at(&ganesha_res, 1000000, W_READDIR, &v, why, sizeof(why));
	bench_json_num("ganesha_readdir_entries_per_s_1e6", ok, v, 1);
	for (size_t i = 0; i < NRATIOS; i++) {
		ok = ratio_eval(&ratios[i], &v, why, sizeof(why));
		bench_json_num(ratios[i].key, ok, v, 3);
	}
	const struct server_res *rs[2] = {&braid_res, &ganesha_res};
	const char *pre[2] = {"braid", "ganesha"};
	for (int s = 0; s < 2; s++) {
		char k[64];
		bench_strfmt(k, sizeof(k), "%s_slots", pre[s]);
		bench_json_num(k, rs[s]->ran, rs[s]->slots, 0);
		bench_strfmt(k, sizeof(k), "%s_create_compounds", pre[s]);
		bench_json_num(k, rs[s]->ran, rs[s]->two_compound ? 2 : 1, 0);
		bench_strfmt(k, sizeof(k), "%s_delegations", pre[s]);
		bench_json_num(k, rs[s]->ran, (double)rs[s]->delegs, 0);
		bench_strfmt(k, sizeof(k), "%s_delay_retries", pre[s]);
		bench_json_num(k, rs[s]->ran, (double)rs[s]->delays, 0);
	}
	bench_json_str("braid_mds_missing", braid_res.ran ? NULL : braid_res.why);
	bench_json_str("ganesha_missing", ganesha_res.ran ? NULL : ganesha_res.why);
	printf("}\n");
}
