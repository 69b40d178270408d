/* SPDX-License-Identifier: MIT */
/* Helpers for the metadata store tests: a scratch directory and short op wrappers. */
#ifndef BRAID_TESTS_MDS_STORE_TEST_H
#define BRAID_TESTS_MDS_STORE_TEST_H

/* Include "config.h" (which defines _GNU_SOURCE) before this header. */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mds/store.h"
#include "tests/check.h"

/* The scratch directory test_dir_make() made, "" if none; a forked child
 * empties it so that only the parent removes the directory at exit. */
extern char test_dir[4096];

/* mkdtemp under $TMPDIR (or /tmp), removed at exit. */
const char *test_dir_make(const char *name);
/* Removes the scratch directory now (before exit, for a test that makes another). */
void test_dir_cleanup(void);

/* mds_store_open() of path with 4 GiB of map; the test fails if it does not open. */
struct mds_store *test_open(const char *path, unsigned hash_bits);
/* CLOCK_MONOTONIC, in seconds. */
double test_now(void);

/* create(dir, name, type) -> ino, or -errno. */
int64_t t_create(struct mds_store *s, uint64_t dir, const char *name, int type);
int64_t t_lookup(struct mds_store *s, uint64_t dir, const char *name);
int t_remove(struct mds_store *s, uint64_t dir, const char *name);
int t_rename(struct mds_store *s, uint64_t sd, const char *sn, uint64_t dd, const char *dn,
	     struct mds_rename_res *res);
struct mds_attr t_attr(struct mds_store *s, uint64_t ino);

#include <semaphore.h>

/*
 * A fixed plan of synchronous changes for one thread, so a checker can
 * compute the names it must find after any prefix of it.  Step k: k % 4 in
 * {0,1,2} creates "t<t>-<k>"; k % 8 == 3 removes "t<t>-<k-2>"; k % 8 == 7
 * renames "t<t>-<k-3>" to "u<t>-<k-3>".
 */
enum { T_ABSENT = 0, T_NAME, U_NAME };

/* Runs step k of thread t's plan in dir: 0 or -errno. */
int t_plan_step(struct mds_store *s, uint64_t dir, unsigned t, uint32_t k);

/* state[k]: what step k's name is after the plan's step k ran. */
void t_plan_apply(uint8_t *state, uint32_t k);

/* Parses a plan name into state[t][k]; checks one name per step. */
void t_plan_seen(uint8_t *state, size_t maxk, unsigned nthreads, const struct mds_dirent *e);

/* Submits n ops at once (one group commit or a few) and waits for all. */
void t_run_all(struct mds_store *s, struct mds_op *ops, size_t n);

#endif
