/* SPDX-License-Identifier: MIT */
/*
 * bench/ec's two halves: ec.c (options, the codec on one core, the
 * report) and ec_cluster.c (an erasure-coded cluster: normal and degraded
 * reads through the data servers, space, rebuild of a lost server).
 */
#ifndef BRAID_BENCH_EC_H
#define BRAID_BENCH_EC_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/cluster.h"

#define EC_K	     4
#define EC_M	     2
#define EC_NDS_MAX   12
#define EC_DIR	     "/ec"
#define EC_POLICY    "ec,k=4,m=2,segment_size=1M"
#define EC_SEAL_CONF "ec_seal_after = 1\n"

struct ec_cluster_opts {
	uint64_t size;	       /* bytes of files in all */
	uint64_t file_size;    /* each */
	unsigned nds;	       /* data servers (k + m + 1: a lost one's chunks have a place) */
	bool warm;	       /* keep the data servers' page cache between reads */
	double read_secs;      /* each read measure: whole reads of the data set, this long */
	double loop_secs;      /* each round's loopback sample */
	double rebuild_idle_s; /* a rebuild with no progress this long: not done */
	const char *dir;       /* where the cluster lives (a disk, not tmpfs) */
	struct bench_cluster_opts cl; /* the daemons, braidctl, [mds] ec_seal_after */
};

/* One round of reads, normal then degraded. */
struct ec_round {
	bool ok;
	char why[256];
	double loop_mbps;	      /* loopback TCP, 1 stream, just before */
	double normal_mbps;	      /* every file read through ffclient, all servers up */
	double degraded_mbps;	      /* the same with one data server SIGKILLed */
	uint32_t killed;	      /* its id */
	unsigned killed_segs, segs;   /* data segments on it, of all the data set's */
	double down_s;		      /* SIGKILL to the MDS counting it down */
	uint64_t degraded_layouts;    /* braid_mds_ec_degraded_layouts_total, delta */
	uint64_t reconstructed_bytes; /* the data servers' braid_ds_ec_read_bytes_total, delta */
};

/* The lost server's chunks made again elsewhere. */
struct ec_rebuild {
	bool ok;
	char why[256];		 /* why not (ok false) */
	uint32_t lost;		 /* the data server declared lost */
	uint64_t lost_bytes;	 /* what its store held (allocated bytes) */
	uint64_t chunks;	 /* braidctl rebuild's ec.chunks_done, delta */
	uint64_t written_bytes;	 /* its ec.bytes_done, delta (else the data servers'
				  * braid_ds_ec_compute_written_bytes_total) */
	double secs;		 /* ds lost to the last chunk counted */
	double shown_secs;	 /* ... to braidctl rebuild showing nothing left */
	uint64_t degraded_after; /* degraded layouts of a read after it (0 expected) */
	bool read_failed;	 /* that read failed or read wrong bytes */
};

/* The caller's; ec_cluster_start() fills it in. */
struct ec_cluster {
	const struct ec_cluster_opts *o;
	struct bench_cluster *c; /* NULL: not started */
	unsigned nfiles;
	char broken[256]; /* why the next rounds cannot run ("" while they can) */
};

/*
 * braid-mds (o->cl: ec_seal_after 1, metrics) and o->nds braid-ds under
 * o->dir, EC_DIR with the policy EC_POLICY, o->size bytes of files
 * written there through ffclient and every one of them sealed.  0, or
 * -errno and why (ec_cluster_stop() still to be called).
 */
int ec_cluster_start(struct ec_cluster *k, const struct ec_cluster_opts *o, char *why, size_t len);
/* A round: the loopback, a normal read, the server holding the most data
 * segments killed, a degraded read, that server back on its store. */
void ec_cluster_round(struct ec_cluster *k, struct ec_round *res);
/* Bytes allocated on the data servers' stores over the files' bytes. */
bool ec_cluster_space(struct ec_cluster *k, uint64_t *raw, uint64_t *logical);
/* The fullest data server killed for good, declared lost, and its chunks
 * rebuilt; ok false with why when braid-mds does not (yet) do it. */
void ec_cluster_rebuild(struct ec_cluster *k, struct ec_rebuild *res);
/* Stop the daemons; k may be started again. */
void ec_cluster_stop(struct ec_cluster *k);

#endif /* BRAID_BENCH_EC_H */
