/* SPDX-License-Identifier: MIT */
/*
 * What bench/training's files share (the benchmark is described in
 * training.c):
 *
 *   training.c       options, the two servers, the data sets, the
 *                    checkpoint phase, the rounds, the table, the JSON line
 *   training_dlio.c  DLIO's model: emulated accelerators fed by reader
 *                    threads through one mount, a trial of N of them, and
 *                    the search for the most that keep their AU target
 *
 * One thread runs the bench; a trial's threads are its own and are joined
 * before it returns, unless they are stuck in calls to a server that no
 * longer answers (tr_trial_run).
 */
#ifndef BRAID_BENCH_TRAINING_H
#define BRAID_BENCH_TRAINING_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/ffclient.h"

#define TR_ACCEL_MAX   64	   /* emulated accelerators in one trial, at most */
#define TR_TRIALS_MAX  16	   /* trials in one search (doubling, then bisecting) */
#define TR_READERS_MAX 8	   /* reader threads per accelerator, at most */
#define TR_READ_CHUNK  (16u << 20) /* one ffc_pread of a whole-file read: 16 RPCs in flight */
#define TR_JOIN_MAX_S  60.0	   /* a thread not ended by then: stuck in a call */

/* A workload as MLPerf Storage's DLIO configurations run it (H100), and
 * the scale it is run at here. */
struct tr_workload {
	const char *name;
	double sample_mb, sample_sd_mb; /* decimal MB; sd 0: every sample alike */
	unsigned samples_per_file;	/* 1: a file per sample, read whole */
	unsigned batch;			/* samples per step */
	double compute_s;		/* emulated compute per step */
	double au_target;		/* accelerator utilisation to keep */
	unsigned readers;		/* reader threads per accelerator */
};

/* A data set as written to one server.  The owner (training.c) fills it
 * and frees size[]. */
struct tr_dataset {
	const struct tr_workload *w;
	char dir[64]; /* "/training/unet3d" */
	unsigned nfiles;
	uint64_t *size;	       /* each file's bytes */
	unsigned spf;	       /* samples per file (1: the file is the sample) */
	uint64_t sample_bytes; /* with spf > 1: each sample's bytes */
	double compute_s;      /* per step, scaled as the samples are */
	uint64_t bytes;	       /* all files */
};

/* One trial: n accelerators for a measured window. */
struct tr_trial {
	unsigned n;
	bool ok;	  /* it ran (its figures mean something) */
	bool stuck;	  /* threads were left in calls to the server (see tr_trial_run) */
	char why[256];	  /* why not: a read failed, a thread hung */
	double au_mean;	  /* mean over the accelerators of compute / window */
	double au_min;	  /* the worst accelerator's */
	double samples_s; /* samples consumed per s: compute time in the window x batch / compute */
	double mbps;	  /* bytes read by all readers in the window, MB/s */
	double warmup_s;  /* start to the last accelerator's first batch */
	double window_s;  /* the measured window */
	double capacity;  /* samples_s over what one accelerator takes at the target */
};

/* A search over n for one workload on one server. */
struct tr_search {
	struct tr_trial t[TR_TRIALS_MAX];
	unsigned nt;
	bool ok;	 /* every trial ran */
	bool stuck;	 /* the last one left threads in calls to the server */
	char why[256];	 /* the first trial's failure */
	unsigned accel;	 /* the most accelerators whose mean AU kept the target */
	bool capped;	 /* ... and TR_ACCEL_MAX kept it too */
	double capacity; /* the best trial's */
};

/* The server a trial runs on, as its caller sees it. */
struct tr_target {
	struct ffc *c; /* the mount every accelerator reads through */
	/* Whether the server's processes all still run: checked every 0.1 s
	 * of a trial, which stops when it says no.  NULL: not checked. */
	bool (*alive)(void *arg);
	/* After each trial of a search, or NULL. */
	void (*progress)(const struct tr_dataset *d, const struct tr_trial *t, void *arg);
	void *arg;
};

/*
 * n accelerators of d's workload through g->c: each with its readers, its
 * own shuffled file order (from seed and its index, so every server is
 * read in the same order) and its prefetch queue; after the last one's
 * first batch (at most warmup_max_s), a window of window_s seconds is
 * measured.  Every thread is joined before it returns, unless some are
 * still in calls to the server TR_JOIN_MAX_S after the trial stopped
 * (t->stuck): they are left running with the trial's memory, and g->c must
 * then never be unmounted.
 */
void tr_trial_run(const struct tr_target *g, const struct tr_dataset *d, unsigned n,
		  double window_s, double warmup_max_s, uint64_t seed, struct tr_trial *t);
/*
 * n = 1, 2, 4, ... while the mean AU keeps the target, then bisect between
 * the last n kept and the first missed.  When even n = 1 misses, n = 2 is
 * run too, for the capacity.  A failed trial ends the search.
 */
void tr_search_run(const struct tr_target *g, const struct tr_dataset *d, double window_s,
		   double warmup_max_s, uint64_t seed, struct tr_search *s);

/* pthread_create with a small stack; false when it failed. */
bool tr_thread_start(pthread_t *th, void *(*fn)(void *), void *arg);
/* Join th by deadline (a bench_now_s() time): false when it has not ended
 * by then, and is left running. */
bool tr_thread_join(pthread_t th, double deadline);

#endif /* BRAID_BENCH_TRAINING_H */
