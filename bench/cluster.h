/* SPDX-License-Identifier: MIT */
/*
 * A Braid cluster for the benchmarks that need one (bench/rebuild,
 * bench/ec): braid-mds and braid-ds as child processes of this program
 * (they die with it: bench_child_spawn), driven as a user drives them,
 * through braidctl and our client (client/ffclient.h), and read through
 * their metrics endpoints.
 *
 * Under dir: the cluster key, mds/ (its config, exports, store and log)
 * and one dsN/ per data server started (config, store, log).  Every data
 * server the MDS has known stays in its registry: one restarted on its
 * store keeps its id; a fresh one (a new store) gets a new id.
 *
 * One thread uses a cluster.  Functions return 0 or -errno with why
 * unless said otherwise.
 */
#ifndef BRAID_BENCH_CLUSTER_H
#define BRAID_BENCH_CLUSTER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/common.h"

#define BENCH_CLUSTER_DS_MAX  24	  /* data servers started, all told */
#define BENCH_CLUSTER_OUT_MAX (64u << 10) /* braidctl's output kept */
#define BENCH_CLUSTER_UP_S    30.0	  /* a data server up (or down) at the MDS */

struct bench_cluster_opts {
	/* braid-mds, braid-ds, braidctl: beside this program unless told */
	char mds_path[PATH_MAX], ds_path[PATH_MAX], ctl_path[PATH_MAX];
	/* More [mds] lines ("ec_seal_after = 1\n"), or NULL. */
	const char *mds_conf;
	/* metrics_listen on 127.0.0.1 for every daemon (bench_cluster_metric). */
	bool metrics;
};

/* The paths beside this program ($(builddir)); the rest zero. */
void bench_cluster_opts_init(struct bench_cluster_opts *o);
/* Option a (value v) when it is --braid-mds, --braid-ds or --braidctl:
 * taken (true) or not ours (false). */
bool bench_cluster_opts_arg(struct bench_cluster_opts *o, const char *a, const char *v);
/* Whether the three are built (executable); why not. */
bool bench_cluster_opts_check(const struct bench_cluster_opts *o, char *why, size_t len);

struct bench_cluster_ds {
	struct bench_child ch; /* pid 0 while stopped */
	uint32_t id;	       /* the MDS's, once registered */
	int metrics_port;      /* 0: none */
	char host[16];	       /* "dsN": the N-th started */
	char dir[PATH_MAX], conf[PATH_MAX + 16], log[PATH_MAX + 16];
};

/* out holds braidctl's last output. */
struct bench_cluster {
	struct bench_cluster_opts o;
	char dir[PATH_MAX], key[PATH_MAX + 16];
	struct bench_child mds;
	int mds_port, mds_metrics_port;
	char mds_conf[PATH_MAX + 16], mds_log[PATH_MAX + 16];
	struct bench_cluster_ds ds[BENCH_CLUSTER_DS_MAX];
	unsigned nstarted;
	char out[BENCH_CLUSTER_OUT_MAX];
};

/* A data server as `braidctl --json ds list` shows it. */
struct bench_cluster_ent {
	uint32_t id;
	char host[32];
	bool up, drained, lost;
	uint64_t objects;
};

/*
 * dir (made here, under an existing one) with braid-mds and nds fresh
 * braid-ds, each up at the MDS.  *out is set even on failure, for
 * bench_cluster_stop().
 */
int bench_cluster_start(const struct bench_cluster_opts *o, const char *dir, unsigned nds,
			struct bench_cluster **out, char *why, size_t len);
/* Stop the daemons (SIGTERM, then SIGKILL) and free k (NULL: nothing). */
void bench_cluster_stop(struct bench_cluster *k);

/*
 * braidctl --mds 127.0.0.1:PORT --key KEY [--json] ARGS (ARGS split at
 * spaces): its exit status (0: done; -1: it did not run to the end), what
 * it printed (stdout and stderr) in k->out.
 */
int bench_cluster_ctl(struct bench_cluster *k, bool json, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* braidctl's last output as one line, for a message. */
const char *bench_cluster_ctl_said(struct bench_cluster *k);

/* Where "key": is in [text, end) (end NULL: to the end), or NULL; its
 * value as a number (0 when missing) or a boolean. */
const char *bench_json_find(const char *text, const char *end, const char *key);
uint64_t bench_json_u64(const char *text, const char *end, const char *key);
bool bench_json_bool(const char *text, const char *end, const char *key);

/* Every data server the MDS knows: how many (0: braidctl failed). */
unsigned bench_cluster_ds_list(struct bench_cluster *k, struct bench_cluster_ent *v, unsigned max);
const struct bench_cluster_ent *bench_cluster_ent_of(const struct bench_cluster_ent *v, unsigned n,
						     uint32_t id);
/* A running data server of ours by its MDS id, or NULL. */
struct bench_cluster_ds *bench_cluster_ds_by_id(struct bench_cluster *k, uint32_t id);
/* Of v (a ds list), the server up, in placement, running here, holding
 * the most objects; NULL when none holds any. */
struct bench_cluster_ds *bench_cluster_ds_fullest(struct bench_cluster *k,
						  const struct bench_cluster_ent *v, unsigned n);

/* A fresh data server (a store of its own), up at the MDS: its id known. */
int bench_cluster_ds_add(struct bench_cluster *k, char *why, size_t len);
/* d, stopped, started again on its store; up at the MDS under its id. */
int bench_cluster_ds_restart(struct bench_cluster *k, struct bench_cluster_ds *d, char *why,
			     size_t len);
/* SIGKILL (and reaped) or SIGTERM with a grace period; its store stays. */
void bench_cluster_ds_stop(struct bench_cluster_ds *d, bool kill_it);
/* Wait (at most BENCH_CLUSTER_UP_S) until ds list shows d down, not up;
 * the seconds it took. */
int bench_cluster_ds_wait_down(struct bench_cluster *k, const struct bench_cluster_ds *d,
			       double *secs, char *why, size_t len);
/*
 * Bytes allocated on disk under d's store (st_blocks of every file:
 * objects are sparse).  With drop, each file's pages are also dropped
 * from the page cache (after a sync), so the next reads go to the disk.
 */
uint64_t bench_cluster_ds_store_bytes(const struct bench_cluster_ds *d, bool drop);

/*
 * The value of one series, "name" or "name{labels}" exactly as the
 * daemon listening on 127.0.0.1:port writes it on GET /metrics.  -ENOENT
 * when it has no such series.
 */
int bench_cluster_metric(int port, const char *series, double *v);
/* The sum over the running data servers (a missing series counts 0). */
double bench_cluster_ds_metric_sum(struct bench_cluster *k, const char *series);

/*
 * d SIGKILLed and `braidctl ds lost` (refused until the MDS counts it
 * down, so retried for up to BENCH_CLUSTER_UP_S): *t_lost the time it was
 * accepted, *wait_s from the kill to then.
 */
int bench_cluster_ds_lose(struct bench_cluster *k, struct bench_cluster_ds *d, double *t_lost,
			  double *wait_s, char *why, size_t len);

/* What `braidctl --json rebuild` shows (counts since the MDS started). */
struct bench_cluster_prot {
	uint64_t moved;		/* moved_files: copies moved off lost or drained servers */
	uint64_t rebuild;	/* rebuild_files: files still naming a lost server */
	uint64_t stale;		/* stale_files */
	uint64_t files, bytes;	/* resilvered_files, resilvered_bytes */
	uint64_t failures;	/* failures */
	uint64_t unrecoverable; /* unrecoverable */
};
bool bench_cluster_prot_get(struct bench_cluster *k, struct bench_cluster_prot *p);

/* ------------------------------------------------------------ files */

/* A client of the MDS (ffc_opts defaults), or NULL and *err. */
struct ffc *bench_cluster_mount(struct bench_cluster *k, int *err);
/* dir made through our client and given policy with braidctl. */
int bench_cluster_dir_make(struct bench_cluster *k, const char *dir, const char *policy, char *why,
			   size_t len);

/* dir/fNNNN, the i-th file of a data set. */
void bench_cluster_file_path(char *p, size_t len, const char *dir, unsigned i);
/* The bytes of file i at off: every word differs from every other file's
 * and offset's, and none is a block of zeros (the mover leaves those as
 * holes).  len a multiple of 8. */
void bench_cluster_pattern(uint8_t *p, unsigned i, uint64_t off, size_t len);

/* What a pass over a data set through one mount did. */
struct bench_cluster_io {
	double secs;	     /* wall clock, first open to last close */
	uint64_t bytes;	     /* file bytes moved */
	uint64_t ds_bytes;   /* ... of which to or from the data servers */
	uint64_t mds_bytes;  /* ... through the MDS */
	uint64_t layoutgets; /* LAYOUTGETs sent */
};

/* nfiles new files of size bytes each (pattern) in dir, which exists. */
int bench_cluster_files_write(struct bench_cluster *k, const char *dir, unsigned nfiles,
			      uint64_t size, struct bench_cluster_io *io, char *why, size_t len);
/*
 * Read the data set back through a fresh mount and check every byte read
 * against the pattern: all of each file (whole), else its first, middle
 * and last MiB.  -EIO and why (the file and offset) on the first
 * difference.
 */
int bench_cluster_files_read(struct bench_cluster *k, const char *dir, unsigned nfiles,
			     uint64_t size, bool whole, struct bench_cluster_io *io, char *why,
			     size_t len);

#endif /* BRAID_BENCH_CLUSTER_H */
