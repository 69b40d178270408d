/* SPDX-License-Identifier: MIT */
/*
 * bench/mds's report: the table of rates and CPU per op, the ratios, and
 * the JSON line the benchmark ends with.  The NFSv3 series' rows, ratios
 * and keys (v3, nfs3_*) come beside the NFSv4.1 ones, which keep their
 * form and names.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

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
		      const struct phase *p, const char *note, const char *series_why)
{
	char key[24], rate[32], su[32], cu[32], secs[32];
	bench_mds_size_key(a->n, key, sizeof(key));
	cell_rate(rate, sizeof(rate), p);
	cell_us(su, sizeof(su), p, p->srv_cpu);
	cell_us(cu, sizeof(cu), p, p->cli_cpu);
	bench_strfmt(secs, sizeof(secs), p->ok ? "%.2f" : "-", p->secs);
	if (!p->ok) {
		printf("%-10s %-5s %-16s %10s  %s\n", r->name, key, what, "-",
		       p->why[0] ? p->why : (series_why[0] ? series_why : "not measured"));
		return;
	}
	printf("%-10s %-5s %-16s %10s %10s %10s %10llu %8s %s\n", r->name, key, what, rate, su, cu,
	       (unsigned long long)p->ops, secs, note);
}

/* The walk's note: capped, or several whole walks timed together. */
static void walk_note(const struct mds_opts *o, const struct at_size *a, char *note, size_t len)
{
	char key[24];
	note[0] = 0;
	if (a->walk_capped) {
		bench_mds_size_key(o->walk_cap, key, sizeof(key));
		bench_strfmt(note, len, "(walk capped at %s entries)", key);
	} else if (a->walks > 1) {
		bench_strfmt(note, len, "(%u whole walks)", a->walks);
	}
}

/* The NFSv4.1 rows of size i (as they were before the NFSv3 ones came). */
static void rows41_print(const struct mds_opts *o, const struct server_res *r, unsigned i)
{
	const struct at_size *a = &r->at[i];
	char note[96], key[24];
	if (!a->run) {
		bench_mds_size_key(a->n, key, sizeof(key));
		printf("%-10s %-5s %-16s %10s  %s\n", r->name, key, "all", "-", a->create.why);
		return;
	}
	row_print(r, a, r->two_compound ? "create (2 cmpd)" : "create", &a->create, "", r->why);
	row_print(r, a, "lookup", &a->lookup, "", r->why);
	walk_note(o, a, note, sizeof(note));
	row_print(r, a, "readdir entries", &a->readdir, note, r->why);
}

/* The NFSv3 rows of size i; a size not run was said by its NFSv4.1 line
 * when that series ran. */
static void rows3_print(const struct mds_opts *o, const struct server_res *r, unsigned i)
{
	const struct at_size *a = &r->at3[i];
	char note[96], key[24];
	if (!a->run) {
		bench_mds_size_key(a->n, key, sizeof(key));
		if (!r->ran)
			printf("%-10s %-5s %-16s %10s  %s\n", r->name, key, "v3 all", "-",
			       a->create.why);
		return;
	}
	row_print(r, a, "v3 create", &a->create, "", r->why3);
	row_print(r, a, "v3 lookup", &a->lookup, "", r->why3);
	walk_note(o, a, note, sizeof(note));
	row_print(r, a, "v3 readdirplus", &a->readdir, note, r->why3);
}

/* The NFSv4.0 rows of size i (braid-mds only). */
static void rows40_print(const struct mds_opts *o, const struct server_res *r, unsigned i)
{
	const struct at_size *a = &r->at40[i];
	char note[96];
	if (!a->run)
		return; /* said by its NFSv4.1 line */
	row_print(r, a, "v4.0 create", &a->create, "", r->why40);
	row_print(r, a, "v4.0 lookup", &a->lookup, "", r->why40);
	walk_note(o, a, note, sizeof(note));
	row_print(r, a, "v4.0 readdir", &a->readdir, note, r->why40);
}

void bench_mds_table_print(const struct mds_opts *o)
{
	printf("%-10s %-5s %-16s %10s %10s %10s %10s %8s %s\n", "server", "size", "op", "per s",
	       "srv us/op", "cli us/op", "ops", "secs", "");
	const struct server_res *rs[2] = {&braid_res, &ganesha_res};
	for (int s = 0; s < 2; s++) {
		const struct server_res *r = rs[s];
		if (!r->ran)
			printf("%-10s %-5s %-16s %10s  %s\n", r->name, "all", "-", "-", r->why);
		if (!r->ran3)
			printf("%-10s %-5s %-16s %10s  %s\n", r->name, "all", "v3", "-", r->why3);
		if (!r->ran40 && r == &braid_res)
			printf("%-10s %-5s %-16s %10s  %s\n", r->name, "all", "v4.0", "-",
			       r->why40);
		for (unsigned i = 0; i < NSIZES_MAX && r->at[i].n; i++) {
			if (r->ran)
				rows41_print(o, r, i);
			if (r->ran40)
				rows40_print(o, r, i);
			if (r->ran3)
				rows3_print(o, r, i);
		}
	}
}

/* JSON output (bench_json_*): a figure that was not measured is null. */

enum what { W_CREATE, W_LOOKUP, W_READDIR };

static const struct phase *phase_of(const struct at_size *a, enum what w)
{
	return w == W_CREATE ? &a->create : w == W_LOOKUP ? &a->lookup : &a->readdir;
}

/* r's series: NFSv3's (v3) or NFSv4.1's. */
static const struct at_size *series_of(const struct server_res *r, bool v3)
{
	return v3 ? r->at3 : r->at;
}

static bool series_ran(const struct server_res *r, bool v3)
{
	return v3 ? r->ran3 : r->ran;
}

static const struct at_size *at_of(const struct server_res *r, uint64_t n, bool v3)
{
	const struct at_size *at = series_of(r, v3);
	for (unsigned i = 0; i < NSIZES_MAX && at[i].n; i++)
		if (at[i].n == n && at[i].run)
			return &at[i];
	return NULL;
}

/* Per-second figure of w at size n, with why it is missing. */
static bool rate_at(const struct server_res *r, uint64_t n, enum what w, bool v3, double *v,
		    char *why, size_t len)
{
	const struct at_size *a = at_of(r, n, v3);
	const char *pre = v3 ? " NFSv3" : "";
	char key[24];
	bench_mds_size_key(n, key, sizeof(key));
	if (!series_ran(r, v3)) {
		bench_strfmt(why, len, "%s%s: %s", r->name, pre, v3 ? r->why3 : r->why);
		return false;
	}
	if (!a) {
		bench_strfmt(why, len, "%s%s: %s not run", r->name, pre, key);
		return false;
	}
	const struct phase *p = phase_of(a, w);
	if (!p->ok) {
		bench_strfmt(why, len, "%s%s at %s: %s", r->name, pre, key, p->why);
		return false;
	}
	*v = phase_rate(p);
	return true;
}

/* {"1e3":x,...} over the sizes of r (the ones not run are null). */
static void jobj(const char *k, const struct server_res *r, enum what w, bool cpu, bool v3)
{
	const struct at_size *at = series_of(r, v3);
	bench_json_key(k);
	putchar('{');
	for (unsigned i = 0; i < NSIZES_MAX && at[i].n; i++) {
		const struct at_size *a = &at[i];
		const struct phase *p = phase_of(a, w);
		char key[24];
		bench_mds_size_key(a->n, key, sizeof(key));
		printf("%s\"%s\":", i ? "," : "", key);
		bool ok = series_ran(r, v3) && a->run && p->ok && p->ops > 0;
		if (cpu)
			bench_json_val(ok, ok ? p->srv_cpu * 1e6 / (double)p->ops : 0, 2);
		else
			bench_json_val(ok, phase_rate(p), 1);
	}
	putchar('}');
}

/* The key of size a, the i-th of a JSON object by size: "1e6": */
static void jsize_key(unsigned i, const struct at_size *a)
{
	char key[24];
	bench_mds_size_key(a->n, key, sizeof(key));
	printf("%s\"%s\":", i ? "," : "", key);
}

/* How many whole walks each READDIR figure timed, and whether they were
 * cut at --readdir-cap, by size. */
static void jwalks(const char *k_walks, const char *k_capped, const struct server_res *r, bool v3)
{
	const struct at_size *at = series_of(r, v3);
	for (int pass = 0; pass < 2; pass++) {
		bench_json_key(pass ? k_capped : k_walks);
		putchar('{');
		for (unsigned i = 0; i < NSIZES_MAX && at[i].n; i++) {
			const struct at_size *a = &at[i];
			jsize_key(i, a);
			if (!series_ran(r, v3) || !a->readdir.ok)
				printf("null");
			else if (pass)
				printf("%s", a->walk_capped ? "true" : "false");
			else
				printf("%u", a->walks);
		}
		putchar('}');
	}
}

/* k: {size: [creates/s of each timed round], ...} (null: not run) */
static void jrounds(const char *k, const struct server_res *r, bool v3)
{
	const struct at_size *at = series_of(r, v3);
	bench_json_key(k);
	putchar('{');
	for (unsigned i = 0; i < NSIZES_MAX && at[i].n; i++) {
		const struct at_size *a = &at[i];
		jsize_key(i, a);
		if (!series_ran(r, v3) || !a->create.ok || !a->ncreate_rounds) {
			printf("null");
			continue;
		}
		putchar('[');
		for (unsigned j = 0; j < a->ncreate_rounds; j++)
			printf("%s%.1f", j ? "," : "", a->create_rounds[j]);
		putchar(']');
	}
	putchar('}');
}

struct ratio_def {
	const char *key;
	const struct server_res *a, *b;
	uint64_t na, nb;
	enum what w;
	bool v3; /* the NFSv3 series' figures */
};

static bool ratio_eval(const struct ratio_def *d, double *v, char *why, size_t len)
{
	double x, y;
	if (!rate_at(d->a, d->na, d->w, d->v3, &x, why, len) ||
	    !rate_at(d->b, d->nb, d->w, d->v3, &y, why, len))
		return false;
	if (y <= 0) {
		bench_strfmt(why, len, "zero denominator");
		return false;
	}
	*v = x / y;
	return true;
}

static const struct ratio_def ratios[] = {
    {"creates_1e7_vs_1e3", &braid_res, &braid_res, 10000000, 1000, W_CREATE, false},
    {"lookups_1e7_vs_1e3", &braid_res, &braid_res, 10000000, 1000, W_LOOKUP, false},
    {"readdir_1e7_vs_1e3", &braid_res, &braid_res, 10000000, 1000, W_READDIR, false},
    {"creates_1e6_vs_ganesha", &braid_res, &ganesha_res, 1000000, 1000000, W_CREATE, false},
    {"lookups_1e6_vs_ganesha", &braid_res, &ganesha_res, 1000000, 1000000, W_LOOKUP, false},
    {"readdir_1e6_vs_ganesha", &braid_res, &ganesha_res, 1000000, 1000000, W_READDIR, false},
    {"ganesha_creates_1e6_vs_1e3", &ganesha_res, &ganesha_res, 1000000, 1000, W_CREATE, false},
    {"ganesha_lookups_1e6_vs_1e3", &ganesha_res, &ganesha_res, 1000000, 1000, W_LOOKUP, false},
    {"ganesha_readdir_1e6_vs_1e3", &ganesha_res, &ganesha_res, 1000000, 1000, W_READDIR, false},
};
#define NRATIOS (sizeof(ratios) / sizeof(ratios[0]))

/* The NFSv3 ratios: braid-mds over Ganesha at every size of the run and
 * at 1e6 (whether run or not: a key of its own), then each server's
 * largest size over its 1e3, as the NFSv4.1 ones. */
#define NRATIOS3_MAX (3 * (NSIZES_MAX + 1) + 6)
struct ratio3 {
	char key[48];
	struct ratio_def d;
};

static unsigned ratios3_make(const struct mds_opts *o, struct ratio3 *out)
{
	static const char *const wn[] = {"creates", "lookups", "readdirplus"};
	uint64_t sizes[NSIZES_MAX + 1];
	unsigned ns = 0, n = 0;
	bool have_1e6 = false;
	for (unsigned i = 0; i < o->nsizes; i++) {
		if (!have_1e6 && o->sizes[i] >= 1000000) {
			have_1e6 = true;
			if (o->sizes[i] != 1000000)
				sizes[ns++] = 1000000;
		}
		sizes[ns++] = o->sizes[i];
	}
	if (!have_1e6)
		sizes[ns++] = 1000000;
	for (unsigned i = 0; i < ns; i++) {
		char sk[24];
		bench_mds_size_key(sizes[i], sk, sizeof(sk));
		for (int w = 0; w < 3; w++, n++) {
			bench_strfmt(out[n].key, sizeof(out[n].key), "nfs3_%s_%s_vs_ganesha", wn[w],
				     sk);
			out[n].d = (struct ratio_def){
			    NULL, &braid_res, &ganesha_res, sizes[i], sizes[i], (enum what)w, true};
		}
	}
	for (int w = 0; w < 3; w++, n++) {
		bench_strfmt(out[n].key, sizeof(out[n].key), "nfs3_%s_1e7_vs_1e3", wn[w]);
		out[n].d = (struct ratio_def){NULL, &braid_res,	  &braid_res, 10000000,
					      1000, (enum what)w, true};
	}
	for (int w = 0; w < 3; w++, n++) {
		bench_strfmt(out[n].key, sizeof(out[n].key), "ganesha_nfs3_%s_1e6_vs_1e3", wn[w]);
		out[n].d = (struct ratio_def){NULL, &ganesha_res, &ganesha_res, 1000000,
					      1000, (enum what)w, true};
	}
	for (unsigned i = 0; i < n; i++)
		out[i].d.key = out[i].key;
	return n;
}

void bench_mds_ratios_print(const struct mds_opts *o)
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
		if (n == 1000000 || !at_of(&ganesha_res, n, false) || !braid_res.ran ||
		    !ganesha_res.ran)
			continue;
		static const char *const wn[] = {"creates", "lookups", "readdir"};
		for (int w = 0; w < 3; w++) {
			struct ratio_def d = {NULL, &braid_res,	  &ganesha_res, n,
					      n,    (enum what)w, false};
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
	struct ratio3 r3[NRATIOS3_MAX];
	unsigned n3 = ratios3_make(o, r3);
	printf("\n%-36s %8s  %s\n", "NFSv3 ratio", "value", "");
	for (unsigned i = 0; i < n3; i++) {
		double v;
		char why[400];
		if (ratio_eval(&r3[i].d, &v, why, sizeof(why)))
			printf("%-36s %8.3f\n", r3[i].key, v);
		else
			printf("%-36s %8s  %s\n", r3[i].key, "null", why);
	}
}

/* The NFSv3 keys: as the NFSv4.1 ones with nfs3_ after the server's
 * prefix, and why each ratio that is null is. */
static void json3_print(const struct mds_opts *o)
{
	static const char *const pre[2] = {"", "ganesha_"};
	const struct server_res *rs[2] = {&braid_res, &ganesha_res};
	char k[80];
	for (int s = 0; s < 2; s++) {
		const struct server_res *r = rs[s];
		bench_strfmt(k, sizeof(k), "%snfs3_creates_per_s", pre[s]);
		jobj(k, r, W_CREATE, false, true);
		bench_strfmt(k, sizeof(k), "%snfs3_lookups_per_s", pre[s]);
		jobj(k, r, W_LOOKUP, false, true);
		bench_strfmt(k, sizeof(k), "%snfs3_readdirplus_entries_per_s", pre[s]);
		jobj(k, r, W_READDIR, false, true);
		bench_strfmt(k, sizeof(k), "%snfs3_create_cpu_us", pre[s]);
		jobj(k, r, W_CREATE, true, true);
		bench_strfmt(k, sizeof(k), "%snfs3_lookup_cpu_us", pre[s]);
		jobj(k, r, W_LOOKUP, true, true);
		bench_strfmt(k, sizeof(k), "%snfs3_readdirplus_cpu_us_per_entry", pre[s]);
		jobj(k, r, W_READDIR, true, true);
		char kc[80];
		bench_strfmt(k, sizeof(k), "%snfs3_readdirplus_walks", pre[s]);
		bench_strfmt(kc, sizeof(kc), "%snfs3_readdirplus_walk_capped", pre[s]);
		jwalks(k, kc, r, true);
	}
	double v;
	char why[400];
	bool ok = rate_at(&ganesha_res, 1000000, W_CREATE, true, &v, why, sizeof(why));
	bench_json_num("ganesha_nfs3_creates_per_s_1e6", ok, v, 1);
	ok = rate_at(&ganesha_res, 1000000, W_LOOKUP, true, &v, why, sizeof(why));
	bench_json_num("ganesha_nfs3_lookups_per_s_1e6", ok, v, 1);
	ok = rate_at(&ganesha_res, 1000000, W_READDIR, true, &v, why, sizeof(why));
	bench_json_num("ganesha_nfs3_readdirplus_entries_per_s_1e6", ok, v, 1);
	struct ratio3 r3[NRATIOS3_MAX];
	unsigned n3 = ratios3_make(o, r3);
	for (unsigned i = 0; i < n3; i++) {
		ok = ratio_eval(&r3[i].d, &v, why, sizeof(why));
		bench_json_num(r3[i].key, ok, v, 3);
	}
	bench_json_key("nfs3_why_null");
	putchar('{');
	bool first = true;
	for (unsigned i = 0; i < n3; i++) {
		if (ratio_eval(&r3[i].d, &v, why, sizeof(why)))
			continue;
		printf("%s", first ? "" : ",");
		bench_json_quote(r3[i].key);
		putchar(':');
		bench_json_quote(why);
		first = false;
	}
	putchar('}');
	for (int s = 0; s < 2; s++) {
		const char *p = s ? "ganesha" : "braid";
		bench_strfmt(k, sizeof(k), "%s_nfs3_conns", p);
		bench_json_num(k, rs[s]->ran3, rs[s]->conns3, 0);
		bench_strfmt(k, sizeof(k), "%s_nfs3_jukebox_retries", p);
		bench_json_num(k, rs[s]->ran3, (double)rs[s]->delays3, 0);
		bench_strfmt(k, sizeof(k), "%s_nfs3_missing", p);
		bench_json_str(k, rs[s]->ran3 ? NULL : rs[s]->why3);
	}
}

/* braid-mds's NFSv4.0 series: {"1e3":x,...} per figure, null when not
 * measured (braid_nfs40_missing says why, when the series did not run). */
static void json40_print(void)
{
	static const struct {
		const char *key;
		enum what w;
		bool cpu;
	} keys[] = {
	    {"braid_nfs40_creates_per_s", W_CREATE, false},
	    {"braid_nfs40_lookups_per_s", W_LOOKUP, false},
	    {"braid_nfs40_readdir_entries_per_s", W_READDIR, false},
	    {"braid_nfs40_create_cpu_us", W_CREATE, true},
	};
	const struct server_res *r = &braid_res;
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		bench_json_key(keys[k].key);
		putchar('{');
		for (unsigned i = 0; i < NSIZES_MAX && r->at40[i].n; i++) {
			const struct at_size *a = &r->at40[i];
			const struct phase *p = phase_of(a, keys[k].w);
			char key[24];
			bench_mds_size_key(a->n, key, sizeof(key));
			printf("%s\"%s\":", i ? "," : "", key);
			bool ok = r->ran40 && a->run && p->ok && p->ops > 0;
			if (keys[k].cpu)
				bench_json_val(ok, ok ? p->srv_cpu * 1e6 / (double)p->ops : 0, 2);
			else
				bench_json_val(ok, phase_rate(p), 1);
		}
		putchar('}');
	}
	bench_json_num("braid_nfs40_delay_retries", r->ran40, (double)r->delays40, 0);
	bench_json_str("braid_nfs40_missing", r->ran40 ? NULL : r->why40);
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
	jobj("creates_per_s", &braid_res, W_CREATE, false, false);
	jobj("lookups_per_s", &braid_res, W_LOOKUP, false, false);
	jobj("readdir_entries_per_s", &braid_res, W_READDIR, false, false);
	jobj("create_cpu_us", &braid_res, W_CREATE, true, false);
	jobj("lookup_cpu_us", &braid_res, W_LOOKUP, true, false);
	jobj("readdir_cpu_us_per_entry", &braid_res, W_READDIR, true, false);
	jwalks("readdir_walks", "readdir_walk_capped", &braid_res, false);
	jrounds("create_rounds_per_s", &braid_res, false);
	jrounds("nfs3_create_rounds_per_s", &braid_res, true);
	/* Ganesha */
	jobj("ganesha_creates_per_s", &ganesha_res, W_CREATE, false, false);
	jobj("ganesha_lookups_per_s", &ganesha_res, W_LOOKUP, false, false);
	jobj("ganesha_readdir_entries_per_s", &ganesha_res, W_READDIR, false, false);
	jobj("ganesha_create_cpu_us", &ganesha_res, W_CREATE, true, false);
	jobj("ganesha_lookup_cpu_us", &ganesha_res, W_LOOKUP, true, false);
	jobj("ganesha_readdir_cpu_us_per_entry", &ganesha_res, W_READDIR, true, false);
	jwalks("ganesha_readdir_walks", "ganesha_readdir_walk_capped", &ganesha_res, false);
	double v;
	char why[400];
	bool ok = rate_at(&ganesha_res, 1000000, W_CREATE, false, &v, why, sizeof(why));
	bench_json_num("ganesha_creates_per_s_1e6", ok, v, 1);
	ok = rate_at(&ganesha_res, 1000000, W_LOOKUP, false, &v, why, sizeof(why));
	bench_json_num("ganesha_lookups_per_s_1e6", ok, v, 1);
	ok = rate_at(&ganesha_res, 1000000, W_READDIR, false, &v, why, sizeof(why));
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
	json40_print();
	bench_json_str("names", o->random_names ? "random" : "seq");
	bench_json_str("braid_mds_missing", braid_res.ran ? NULL : braid_res.why);
	bench_json_str("ganesha_missing", ganesha_res.ran ? NULL : ganesha_res.why);
	json3_print(o);
	printf("}\n");
}
