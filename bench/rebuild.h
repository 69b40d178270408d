/* SPDX-License-Identifier: MIT */
/*
 * bench/rebuild's two halves: rebuild.c (options, the ceilings, the data
 * mover driven directly, the report) and rebuild_mds.c (a cluster whose
 * braid-mds rebuilds and drains, as a user sees it through braidctl).
 */
#ifndef BRAID_BENCH_REBUILD_H
#define BRAID_BENCH_REBUILD_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/cluster.h"

#define RB_MiB	      (1u << 20)
#define RB_ROUNDS_MAX 8
#define RB_NDS_MAX    4 /* the cluster's data servers at once */

struct rb_opts {
	uint64_t size;	    /* bytes of each measure, a multiple of 1 MiB */
	unsigned objects;   /* the mover's source objects (size in all) */
	uint64_t file_size; /* the cluster's files (size in all, 2 copies each) */
	unsigned nds;	    /* the cluster's data servers (3 or 4) */
	unsigned rounds;
	double loop_secs; /* each loopback sample */
	const char *dir;
	bool keep;
	struct bench_cluster_opts cl; /* the daemons and braidctl */
};

/* One rebuild or drain by braid-mds, as braidctl shows it. */
struct rb_move {
	bool ok;
	char why[256];
	uint32_t from;	       /* the data server lost or drained (its id) */
	unsigned files;	       /* copies moved off it (braidctl's moved_files, delta) */
	uint64_t file_bytes;   /* their bytes: files x the file size */
	uint64_t copied_bytes; /* resilvered_bytes delta: each copy's two passes */
	unsigned ndest;	       /* data servers whose object count grew */
	unsigned failures;     /* passes that failed (retried by the MDS) */
	double secs;	       /* ds lost / ds drain to the last copy made current */
	double shown_secs;     /* ... to braidctl showing it all done */
	double wait_secs;      /* ds lost refused while the MDS counted it up (not in secs) */
};

struct rb_cluster;

/*
 * braid-mds and o->nds braid-ds under work/cluster, and o->size bytes of
 * files (o->file_size each) written through ffclient into /data, whose
 * policy is whole,mirrors=2.  0 and *out, or -errno and why.
 */
int rb_cluster_start(const struct rb_opts *o, const char *work, struct rb_cluster **out, char *why,
		     size_t len);
/* The data server holding the most copies SIGKILLed, declared lost, and
 * its copies rebuilt; then a fresh data server takes its place. */
void rb_cluster_rebuild(struct rb_cluster *k, struct rb_move *m);
/* The data server holding the most copies drained; once it holds none it
 * is stopped and a fresh data server takes its place. */
void rb_cluster_drain(struct rb_cluster *k, struct rb_move *m);
/* Every file's first, middle and last MiB read back through ffclient. */
int rb_cluster_check(struct rb_cluster *k, char *why, size_t len);
unsigned rb_cluster_files(const struct rb_cluster *k);
/* Stop the daemons (SIGTERM, then SIGKILL) and free k. */
void rb_cluster_stop(struct rb_cluster *k);

#endif /* BRAID_BENCH_REBUILD_H */
