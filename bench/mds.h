/* SPDX-License-Identifier: MIT */
/*
 * What bench/mds's files share (the benchmark is described in mds.c):
 *
 *   mds.c          options, the plan of sizes, main
 *   mds_load.c     the load generator: one NFSv4.1 session to a server,
 *                  creates, lookups and READDIR walks, the series of sizes
 *   mds_load3.c    the NFSv3 load: MOUNT, CREATE, LOOKUP and READDIRPLUS
 *                  walks, the same series in a directory of its own
 *   mds_load40.c   the NFSv4.0 load: SETCLIENTID, seqids, OPEN_CONFIRM
 *   mds_window.c   the three loads' creates and lookups: calls kept in
 *                  flight, sent again, counted and timed
 *   mds_servers.c  braid-mds and NFS-Ganesha as our children, a stage each
 *   mds_report.c   the table, the ratios and the JSON line
 *
 * The results are the main thread's alone: the stages fill them, one
 * server at a time, and the report reads them after.
 */
#ifndef BRAID_BENCH_MDS_H
#define BRAID_BENCH_MDS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bench/common.h"
#include "nfsd/rpc.h"

#define NSIZES_MAX	 8
#define CONNS_MAX	 4
#define INFLIGHT_DEF	 64
#define BATCH_MIN	 1000  /* timed creates at a size, at least */
#define BATCH_MAX	 20000 /* and at most (a tenth of the size between) */
#define LOOKUPS_DEF	 20000
#define WALK_CAP_DEF	 2000000
#define DIR_NAME	 "mds-bench"
#define DIR_NAME3	 "mds-bench-v3" /* the NFSv3 series' own directory */
#define READDIR_DIRCOUNT 32768
#define READDIR_MAXCOUNT 65536
#define PROGRESS_S	 10.0
#define WALK_MIN_ENTRIES 100000 /* a small directory is walked again up to this */

/* ---------------------------------------------------------------- options */

struct mds_opts {
	uint64_t sizes[NSIZES_MAX]; /* ascending */
	unsigned nsizes;
	uint64_t max;	     /* sizes above it are not run */
	const char *max_why; /* and why: "--quick stops at 1e6" */
	uint64_t ganesha_max;
	const char *dir;
	bool keep;
	uint32_t uid, gid;
	unsigned inflight, conns;
	uint64_t lookups;
	uint64_t walk_cap; /* 0: none */
	bool two_compound; /* OPEN and CLOSE in two COMPOUNDs on every server */
	bool random_names; /* --names random: see bench_mds_file_name */
	bool run_braid, run_ganesha;
	char mds_path[PATH_MAX];
};

/* ---------------------------------------------------------------- results */

struct phase {
	bool ok;
	uint64_t ops;	/* creates, lookups or entries */
	double secs;	/* wall time */
	double srv_cpu; /* the server's CPU seconds in it */
	double cli_cpu; /* ours */
	char why[256];	/* when !ok */
};

#define CREATE_ROUNDS	 3
#define CREATE_ROUND_MIN 2000 /* creates in a round, at least */

struct at_size {
	uint64_t n;
	bool run;
	struct phase create, lookup, readdir;
	bool walk_capped;
	unsigned walks;	      /* whole READDIR walks timed together */
	double populate_rate; /* creates/s while growing to it (not timed) */
	/* the timed creates in rounds (CREATE_ROUNDS, one below
	 * CREATE_ROUND_MIN creates): each round's creates/s; create is the
	 * median round's */
	double create_rounds[CREATE_ROUNDS];
	unsigned ncreate_rounds;
};

struct server_res {
	const char *name;
	bool ran;	   /* it served: the figures below are its */
	char why[512];	   /* why it did not */
	unsigned slots;	   /* fore channel slots granted */
	unsigned conns;	   /* connections used */
	bool two_compound; /* creates as OPEN, then CLOSE */
	char two_why[128];
	uint64_t delegs, delays;
	struct at_size at[NSIZES_MAX];
	/* NFSv3, on the same server after the NFSv4.1 series */
	bool ran3;	  /* it served NFSv3: at3 is its */
	char why3[512];	  /* why it did not */
	unsigned conns3;  /* connections used */
	uint64_t delays3; /* NFS3ERR_JUKEBOX retries */
	struct at_size at3[NSIZES_MAX];
	/* NFSv4.0, braid-mds only, after the NFSv4.1 series */
	bool ran40;	   /* at40 is its */
	char why40[512];   /* why not */
	unsigned conns40;  /* connections used */
	uint64_t delays40; /* NFS4ERR_DELAY retries */
	struct at_size at40[NSIZES_MAX];
};

/* The two servers' results, named "braid-mds" and "ganesha" (mds.c). */
extern struct server_res braid_res, ganesha_res;

/* ------------------------------------------------------------------ mds.c */

/* "1e6" for the JSON keys and the table. */
void bench_mds_size_key(uint64_t n, char *out, size_t len);

/* ------------------------------------------------------------- mds_load.c */

struct bench_mds_window;

/*
 * What else one protocol's load does on one server, for
 * bench_mds_series_run (its creates and lookups are a bench_mds_window's,
 * ctx that window's): a walk of the whole directory up to cap entries
 * (0: no cap) by chained cookies, returning 0, or -EIO with ph->why; and
 * before each size's lookups and walk, renew (NULL: nothing to renew).
 */
struct mds_load_ops {
	int (*walk)(void *ctx, uint64_t cap, struct phase *ph, bool *capped, unsigned *walks);
	void (*renew)(void *ctx); /* NFSv4.0: RENEW, the lease */
	const char *walk_name;	  /* "READDIR" */
};

/* The name of file idx: "f0000000042". */
/* File idx's name: f0000000042 (--names seq, the default: numbered, as
 * training datasets are) or, with bench_mds_random_names set (--names
 * random), 16 hex digits of a bijective mix of idx (r1f3a...: no order a
 * server could keep). */
extern bool bench_mds_random_names;
void bench_mds_file_name(uint32_t idx, char *out, size_t len);
/* Every phase of a not measured, and with no reason yet, gets why. */
void bench_mds_at_fail(struct at_size *a, const char *why);
/*
 * Every size of at (ascending, ended by n 0), in order, on w with ops:
 * grow the directory untimed to the size minus a timed batch of creates
 * that ends at the size, then lookups and a walk there.  The first failure
 * ends the series (the later sizes say why).  who: "braid-mds", for
 * progress lines.
 */
void bench_mds_series_run(const struct mds_load_ops *ops, const struct bench_mds_window *w,
			  const struct mds_opts *o, const char *who, struct at_size *at);
/* r did not run at all, for why. */
void bench_mds_series_missing(struct server_res *r, const char *why);
/* A session to the server on port (pid: whose CPU to count), r's sizes run
 * on it in order, then closed: r->ran, or r->why. */
void bench_mds_stage_run(const struct mds_opts *o, struct nfsd_server *eng, struct server_res *r,
			 int port, pid_t pid);

/* ------------------------------------------------------------ mds_load40.c */

/* r's NFSv4.0 series was not run, for why. */
void bench_mds_series40_missing(struct server_res *r, const char *why);
/* NFSv4.0 (RFC 7530: SETCLIENTID, seqids, OPEN_CONFIRM) to the server on
 * port (pid: whose CPU to count); r's sizes (at40) in order: r->ran40, or
 * r->why40. */
void bench_mds_stage40_run(const struct mds_opts *o, struct nfsd_server *eng, struct server_res *r,
			   int port, pid_t pid);

/* ------------------------------------------------------------ mds_load3.c */

/* r served no NFSv3, for why. */
void bench_mds_series3_missing(struct server_res *r, const char *why);
/* NFSv3 to the server on port, its root handle from MOUNT v3 MNT of
 * mnt_path on mnt_port (pid: whose CPU to count); r's sizes (at3) run in
 * order: r->ran3, or r->why3. */
void bench_mds_stage3_run(const struct mds_opts *o, struct nfsd_server *eng, struct server_res *r,
			  int port, int mnt_port, const char *mnt_path, pid_t pid);

/*
 * One page of a directory listing for bench_mds_walk: from cookie and verf,
 * the last entry's cookie, the new verifier, the entries returned (got) and
 * those the walk counts (counted: NFSv3 leaves "." and ".." out), eof.
 */
struct bench_mds_page {
	uint64_t cookie;
	uint8_t verf[8];
	uint64_t got, counted;
	bool eof;
};
/* 0, or -EIO with why set. */
typedef int (*bench_mds_page_fn)(void *ctx, struct bench_mds_page *pg, struct xdr_arena *ar,
				 char *why, size_t len);
/*
 * Walk a directory of nfiles by chained cookies, a page at a time, up to
 * cap counted entries (0: all), and walk it again while all walks together
 * counted fewer than WALK_MIN_ENTRIES (one walk of 10^3 entries is one or
 * two round trips: too short to time); ph gets entries per second, with
 * server's CPU.  what ("READDIR") and unit ("entries") name them in
 * messages, name the server.
 */
int bench_mds_walk(void *ctx, bench_mds_page_fn page, const char *what, const char *unit,
		   const char *name, pid_t server, uint64_t nfiles, uint64_t cap, struct phase *ph,
		   bool *capped, unsigned *walks);

/* ----------------------------------------------------------- mds_window.c */

struct bench_mds_flight;

/*
 * The head of one protocol's call: the first member of its own struct (or
 * the whole call), so that the protocol's functions may cast.  The window
 * owns it while it is queued, the protocol from its send until
 * bench_mds_call_end.
 */
struct bench_mds_call {
	struct bench_mds_flight *f;
	bool lookup;		     /* a lookup of f<idx>, else its create */
	uint32_t idx;		     /* the file: bench_mds_file_name */
	unsigned chain;		     /* its chain, with bench_mds_window.chains */
	struct bench_mds_call *next; /* in the window's queue */
};

/* How a call ends, for bench_mds_call_end. */
enum bench_mds_end {
	BENCH_MDS_DONE,	 /* its create or lookup is finished */
	BENCH_MDS_NEXT,	 /* send it again for its next step (CLOSE after OPEN) */
	BENCH_MDS_DELAY, /* send it again: the server said later (counted) */
	BENCH_MDS_FAIL,	 /* the load stops, with why */
};

/* What a protocol does for the window; ctx is bench_mds_window.ctx. */
struct bench_mds_window_ops {
	size_t call_size; /* its call, struct bench_mds_call first */
	/* k holds a new file (k->idx, k->lookup): set its first step
	 * (NULL: nothing to set). */
	void (*begin)(void *ctx, struct bench_mds_call *k);
	/* Send k, the seq'th send of the load (to pick a connection); its
	 * answer goes to bench_mds_call_end.  0, or the call error. */
	int (*send)(void *ctx, struct bench_mds_call *k, unsigned seq);
	/* k's step, for messages: "create", "LOOKUP". */
	const char *(*what)(const struct bench_mds_call *k);
};

/* One protocol's creates and lookups on one server. */
struct bench_mds_window {
	const struct bench_mds_window_ops *ops;
	void *ctx;
	/* calls in flight at most; 0: ops->send waits for room itself */
	unsigned limit;
	/* not 0: this many chains instead, each one call at a time that takes
	 * the next file when its own is done (an NFSv4.0 open-owner's seqids) */
	unsigned chains;
	pid_t server;	  /* whose CPU a phase counts */
	uint64_t *nfiles; /* f0000000000 .. *nfiles - 1 exist; creates add */
	uint64_t *delays; /* += calls sent again (BENCH_MDS_DELAY) */
	uint64_t *delegs; /* += delegations granted; NULL: none can be */
};

/*
 * count creates of names first.., or count lookups of random existing
 * names, on w.  ph gets the wall time, CPU times and the count; label (not
 * NULL) prints progress on stderr.  Returns 0 or -EIO (ph->why says why).
 */
int bench_mds_window_run(const struct bench_mds_window *w, bool lookup, uint64_t first,
			 uint64_t count, const char *label, struct phase *ph);
/* k's answer (from any thread): end, with delegs granted, and why when it
 * failed ("NFS4ERR_IO", said as "create f0000000042: NFS4ERR_IO"). */
void bench_mds_call_end(struct bench_mds_call *k, enum bench_mds_end end, uint64_t delegs,
			const char *why);

/* ---------------------------------------------------------- mds_servers.c */

/* Start the server under work, run its stage, stop it; its files go
 * unless --keep.  What failed is in braid_res / ganesha_res. */
void bench_mds_braid_stage(const struct mds_opts *o, struct nfsd_server *eng, const char *work);
void bench_mds_ganesha_stage(const struct mds_opts *o, struct nfsd_server *eng, const char *work);

/* ----------------------------------------------------------- mds_report.c */

void bench_mds_table_print(const struct mds_opts *o);
void bench_mds_ratios_print(const struct mds_opts *o);
void bench_mds_json_print(const struct mds_opts *o, const char *fstype, long ncpu);

#endif /* BRAID_BENCH_MDS_H */
