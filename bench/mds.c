/* SPDX-License-Identifier: MIT */
/*
 * bench/mds: metadata operations per second in one directory as it grows
 * to 10^3, 10^5, 10^6 and 10^7 entries, for braid-mds and, in the same run
 * and up to 10^6, for NFS-Ganesha (FSAL VFS exporting a directory of the
 * same filesystem), over NFSv4.1 and then NFSv3:
 *
 *  - creates: one COMPOUND each, {SEQUENCE, PUTFH dir, OPEN (GUARDED4,
 *    CLAIM_NULL), GETFH, CLOSE (the current stateid, RFC 8881 §16.2.3.1.2)};
 *    a server that refuses the current stateid gets OPEN and CLOSE as two
 *    COMPOUNDs instead (said in the table);
 *  - lookups of random existing names: {SEQUENCE, PUTFH dir, LOOKUP,
 *    GETFH, GETATTR (type, change, size, fileid)};
 *  - READDIR entries per second: the whole directory walked by chained
 *    cookies (type and fileid of each entry), one request at a time as a
 *    client listing it does; at 10^7 the walk stops at --readdir-cap.
 *
 * Names are f0000000042 (numbered, as training datasets are), or with
 * --names random 16 hex digits in no order (braid-mds keeps numbered names
 * next to each other in its B-tree, mds/store.h, and random ones cannot
 * be: the JSON's "names" says which ran).
 *
 * The directory grows by creates to N minus the timed batch, the timed
 * batch brings it to exactly N, then the lookups and the walk run at N.
 * Creates and lookups keep --inflight COMPOUNDs in flight over one NFSv4.1
 * session (nfsd/nfs41_clnt.h), on --conns connections.  Both servers run as
 * our children, one at a time, so /proc/PID/stat gives their CPU alone and
 * each has every core.
 *
 * The NFSv3 rows (RFC 1813; "v3" in the table, nfs3_* keys) come from the
 * same server after its NFSv4.1 series, in a directory of their own
 * (mds-bench-v3, made by MKDIR under the root handle MOUNT v3 MNT gives),
 * with the same sizes and schedule: creates are CREATE (GUARDED, one call
 * each) and lookups LOOKUP (the object's attributes in the reply), with
 * --inflight calls in flight on --conns connections; the walk is
 * READDIRPLUS (attributes and handle of each entry) by chained cookies and
 * cookie verifier, with the same dircount and maxcount, counting files.
 * braid-mds serves MOUNT on its NFS port; Ganesha serves NFSv3 and MOUNT
 * when it can register them with rpcbind (one that runs, or one we start),
 * else its v3 figures are null with the reason.
 *
 * Ganesha's creates are ext4's: for a minute or more after many inodes
 * were freed (an earlier run's directory removed), ext4's inode allocator
 * skips them (recently_deleted()) and each create costs several times the
 * CPU, so a run right after another shows Ganesha slower than it is.
 *
 * Usage: mds [--quick] [--max N] [--sizes N,N,...] [--ganesha-max N]
 *            [--dir PATH] [--keep] [--uid N] [--gid N] [--inflight N]
 *            [--conns N] [--lookups N] [--readdir-cap N] [--two-compound]
 *            [--only braid|ganesha] [--braid-mds PATH] [--names seq|random]
 * Last line of output: one JSON object; a figure that could not be measured
 * is null and the reason is printed (never a made-up number; the NFSv3
 * ratios' reasons are in the JSON too, nfs3_why_null).
 *
 * The parts: this file (options, main), mds_load.c (the NFSv4.1 load
 * generator and the schedule of sizes), mds_load3.c (the NFSv3 load),
 * mds_load40.c (the NFSv4.0 load), mds_window.c (the calls in flight that
 * the three loads' creates and lookups share), mds_servers.c (braid-mds
 * and Ganesha as children), mds_report.c (the table and the JSON line);
 * what they share is in mds.h.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/mds.h"

/* "1e6" for the JSON keys and the table. */
void bench_mds_size_key(uint64_t n, char *out, size_t len)
{
	int e = 0;
	uint64_t m = n;
	while (m >= 10 && m % 10 == 0) {
		m /= 10;
		e++;
	}
	if (m < 10 && e > 0)
		bench_strfmt(out, len, "%ue%d", (unsigned)m, e);
	else
		bench_strfmt(out, len, "%llu", (unsigned long long)n);
}

/* ---------------------------------------------------------------- results */

struct server_res braid_res = {.name = "braid-mds"};
struct server_res ganesha_res = {.name = "ganesha"};

/* ------------------------------------------------------------------- setup */

static void usage(void)
{
	fprintf(stderr, "usage: mds [--quick] [--max N] [--sizes N,N,...] [--ganesha-max N]\n"
			"           [--dir PATH] [--keep] [--uid N] [--gid N] [--inflight N]\n"
			"           [--conns N] [--lookups N] [--readdir-cap N] [--two-compound]\n"
			"           [--only braid|ganesha] [--braid-mds PATH]\n"
			"           [--names seq|random]\n");
	exit(2);
}

/* "1e6", "1000000", "2e5". */
static bool count_parse(const char *s, uint64_t *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || v < 1 || v > 4e9 || v != (double)(uint64_t)v)
		return false;
	*out = (uint64_t)v;
	return true;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void opts_parse(struct mds_opts *o, int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");
	static const uint64_t def_sizes[] = {1000, 100000, 1000000, 10000000};
	bool quick = false, have_max = false;
	memcpy(o->sizes, def_sizes, sizeof(def_sizes));
	o->nsizes = 4;
	o->max = UINT64_MAX;
	o->ganesha_max = 1000000;
	o->dir = tmp && *tmp ? tmp : "/var/tmp";
	o->uid = o->gid = 0; /* both servers export with no root squashing */
	o->inflight = INFLIGHT_DEF;
	o->conns = 1;
	o->lookups = LOOKUPS_DEF;
	o->walk_cap = WALK_CAP_DEF;
	o->run_braid = o->run_ganesha = true;
	bench_exe_sibling("braid-mds", o->mds_path, sizeof(o->mds_path));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t n;
		if (!strcmp(a, "--quick")) {
			quick = true;
			continue;
		} else if (!strcmp(a, "--keep")) {
			o->keep = true;
			continue;
		} else if (!strcmp(a, "--two-compound")) {
			o->two_compound = true;
			continue;
		} else if (!v) {
			usage();
		}
		i++;
		if (!strcmp(a, "--max")) {
			if (!count_parse(v, &o->max))
				usage();
			have_max = true;
		} else if (!strcmp(a, "--sizes")) {
			char buf[256];
			bench_strfmt(buf, sizeof(buf), "%s", v);
			o->nsizes = 0;
			for (char *save = NULL, *t = strtok_r(buf, ",", &save); t;
			     t = strtok_r(NULL, ",", &save)) {
				if (o->nsizes == NSIZES_MAX || !count_parse(t, &n))
					usage();
				o->sizes[o->nsizes++] = n;
			}
			if (!o->nsizes)
				usage();
			qsort(o->sizes, o->nsizes, sizeof(o->sizes[0]), cmp_u64);
		} else if (!strcmp(a, "--ganesha-max")) {
			if (!count_parse(v, &o->ganesha_max))
				usage();
		} else if (!strcmp(a, "--dir")) {
			o->dir = v;
		} else if (!strcmp(a, "--uid")) {
			o->uid = (uint32_t)strtoul(v, NULL, 0);
		} else if (!strcmp(a, "--gid")) {
			o->gid = (uint32_t)strtoul(v, NULL, 0);
		} else if (!strcmp(a, "--inflight")) {
			if (!count_parse(v, &n) || n > 1024)
				usage();
			o->inflight = (unsigned)n;
		} else if (!strcmp(a, "--conns")) {
			if (!count_parse(v, &n) || n > CONNS_MAX)
				usage();
			o->conns = (unsigned)n;
		} else if (!strcmp(a, "--lookups")) {
			if (!count_parse(v, &o->lookups))
				usage();
		} else if (!strcmp(a, "--readdir-cap")) {
			if (!strcmp(v, "0"))
				o->walk_cap = 0;
			else if (!count_parse(v, &o->walk_cap))
				usage();
		} else if (!strcmp(a, "--only")) {
			if (!strcmp(v, "braid"))
				o->run_ganesha = false;
			else if (!strcmp(v, "ganesha"))
				o->run_braid = false;
			else
				usage();
		} else if (!strcmp(a, "--names")) {
			if (!strcmp(v, "random"))
				o->random_names = true;
			else if (strcmp(v, "seq"))
				usage();
			bench_mds_random_names = o->random_names;
		} else if (!strcmp(a, "--braid-mds")) {
			bench_strfmt(o->mds_path, sizeof(o->mds_path), "%s", v);
		} else {
			usage();
		}
	}
	if (quick && (!have_max || o->max > 1000000)) {
		o->max = 1000000;
		o->max_why = "--quick stops at 1e6";
	} else if (have_max) {
		o->max_why = "above --max";
	}
	for (unsigned i = 1; i < o->nsizes; i++)
		if (o->sizes[i] == o->sizes[i - 1])
			usage();
}

/* The sizes r runs: all of o's, the ones above limit marked with why. */
static void sizes_plan(const struct mds_opts *o, struct server_res *r, uint64_t limit,
		       const char *limit_why, bool enabled)
{
	for (unsigned i = 0; i < o->nsizes; i++) {
		struct at_size *a = &r->at[i];
		a->n = o->sizes[i];
		a->run = enabled && a->n <= o->max && a->n <= limit;
		const char *why = !enabled	  ? "not run (--only)"
				  : a->n > o->max ? o->max_why
				  : a->n > limit  ? limit_why
						  : NULL;
		if (why)
			bench_mds_at_fail(a, why);
	}
	/* the NFSv3 and NFSv4.0 series run the same sizes */
	memcpy(r->at3, r->at, sizeof(r->at));
	memcpy(r->at40, r->at, sizeof(r->at));
}

int main(int argc, char **argv)
{
	struct mds_opts o = {0};
	bench_init("bench/mds");
	opts_parse(&o, argc, argv);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	char work[PATH_MAX], fstype[32];
	bench_strfmt(work, sizeof(work), "%s/braid-bench-mds.XXXXXX", o.dir);
	if (!mkdtemp(work)) {
		fprintf(stderr, "%s: mkdtemp %s: %s\n", bench_prog, work, strerror(errno));
		return 99;
	}
	/* Ganesha's export dir and its handle lookups need the path resolved */
	chmod(work, 0755);
	bench_fstype(work, fstype, sizeof(fstype));
	int err = 0;
	/* one client loop: the servers get the other core */
	struct nfsd_server *eng = nfsd_client_engine_new(1, 0, &err);
	if (!eng) {
		fprintf(stderr, "%s: client engine: %s\n", bench_prog, strerror(-err));
		return 99;
	}
	char gkey[24], gwhy[64];
	bench_mds_size_key(o.ganesha_max, gkey, sizeof(gkey));
	bench_strfmt(gwhy, sizeof(gwhy), "Ganesha runs up to %s", gkey);
	sizes_plan(&o, &braid_res, UINT64_MAX, NULL, o.run_braid);
	sizes_plan(&o, &ganesha_res, o.ganesha_max, gwhy, o.run_ganesha);

	if (o.run_braid)
		bench_mds_braid_stage(&o, eng, work);
	else
		bench_mds_series_missing(&braid_res, "not run (--only ganesha)");
	if (!o.run_braid) {
		bench_mds_series3_missing(&braid_res, "not run (--only ganesha)");
		bench_mds_series40_missing(&braid_res, "not run (--only ganesha)");
	}
	bench_mds_series40_missing(&ganesha_res, "braid-mds only");
	if (o.run_ganesha)
		bench_mds_ganesha_stage(&o, eng, work);
	else
		bench_mds_series_missing(&ganesha_res, "not run (--only braid)");
	if (!o.run_ganesha)
		bench_mds_series3_missing(&ganesha_res, "not run (--only braid)");

	printf("bench/mds: one directory, creates (GUARDED4 OPEN + CLOSE) and lookups with "
	       "%u in flight over one NFSv4.1 session on %u connection(s), READDIR by chained "
	       "cookies (%u/%u bytes); %ld cores; %s (%s); AUTH_SYS %u/%u\n",
	       o.inflight, o.conns, READDIR_DIRCOUNT, READDIR_MAXCOUNT, ncpu, o.dir, fstype, o.uid,
	       o.gid);
	const struct server_res *rs[2] = {&braid_res, &ganesha_res};
	for (int s = 0; s < 2; s++)
		if (rs[s]->ran) {
			printf("bench/mds: %s granted %u slots; %u connection(s); creates as %s",
			       rs[s]->name, rs[s]->slots, rs[s]->conns,
			       rs[s]->two_compound ? "OPEN, then CLOSE" : "one COMPOUND");
			if (rs[s]->two_compound)
				printf(" (%s)", rs[s]->two_why);
			if (rs[s]->delegs)
				printf("; %llu OPENs returned a delegation (not returned)",
				       (unsigned long long)rs[s]->delegs);
			if (rs[s]->delays)
				printf("; %llu NFS4ERR_DELAY retries",
				       (unsigned long long)rs[s]->delays);
			printf("\n");
		}
	printf("bench/mds: the v3 rows: NFSv3 on the same server after those, directory %s, "
	       "CREATE (GUARDED) and LOOKUP with %u in flight on %u connection(s), READDIRPLUS "
	       "by chained cookies and verifier (%u/%u bytes), the root handle from MOUNT v3\n",
	       DIR_NAME3, o.inflight, o.conns, READDIR_DIRCOUNT, READDIR_MAXCOUNT);
	if (braid_res.ran40)
		printf("bench/mds: the v4.0 rows: NFSv4.0 on braid-mds after its NFSv4.1 series, "
		       "directory mds-bench-v40, %u open-owners each creating in turn (OPEN, "
		       "OPEN_CONFIRM once, CLOSE: seqids), LOOKUP with %u in flight, on %u "
		       "connection(s)%s\n",
		       o.inflight, o.inflight, braid_res.conns40,
		       braid_res.delays40 ? "; NFS4ERR_DELAY retries happened" : "");
	for (int s = 0; s < 2; s++)
		if (rs[s]->ran3 && rs[s]->delays3)
			printf("bench/mds: %s: %llu NFS3ERR_JUKEBOX retries (NFSv3)\n", rs[s]->name,
			       (unsigned long long)rs[s]->delays3);
	bench_mds_table_print(&o);
	printf("(per s: creates or lookups, or entries a READDIR walk returned (v3 readdirplus: "
	       "files, not . and ..); srv and cli us/op: "
	       "CPU of the server and of this client per op or entry, from /proc in 10 ms ticks, "
	       "so rough for rows that took well under a second)\n");
	bench_mds_ratios_print(&o);
	bench_mds_json_print(&o, fstype, ncpu);

	nfsd_server_free(eng);
	if (o.keep)
		fprintf(stderr, "%s: kept %s\n", bench_prog, work);
	else
		bench_tree_remove(work);
	return 0;
}
