/* SPDX-License-Identifier: MIT */
/*
 * braid-mds and braid-ds as processes, for tests that SIGKILL them
 * (tests/client/drain-crash.c, ec-crash.c), and braidctl --json to ask
 * braid-mds.  Include "config.h" first.  BRAID_TEST_LOGS set: the
 * daemons' logs go to stderr.
 */
#ifndef BRAID_TESTS_CLIENT_PROC_TEST_H
#define BRAID_TESTS_CLIENT_PROC_TEST_H

#include <sys/types.h>

#include "tests/client/ffc-test.h"

#define PC_DS_MAX 8

struct pc {
	char dir[256], bin_mds[1024], bin_ds[1024], bin_ctl[1024], key[300];
	const char *mds_extra; /* more [mds] lines */
	int mds_port;
	pid_t mds_pid;
	int ds_port[PC_DS_MAX];
	pid_t ds_pid[PC_DS_MAX];
};

/* The binaries in $top_builddir (else SKIP), a scratch directory named
 * after name, a cluster key and exports; starts nothing. */
void pc_init(struct pc *p, const char *name, const char *exports);
/* braid-mds (again: on the same store and port), until it is READY. */
void pc_start_mds(struct pc *p);
/* braid-ds i, its store p->dir/dsI. */
void pc_start_ds(struct pc *p, unsigned i);
void pc_kill_wait(pid_t pid, int sig);
/* braidctl --json ARGS: its output (a static buffer). */
const char *pc_ctl(struct pc *p, const char *args);
/* The number after "k": in JSON text (0 if absent). */
uint64_t pc_jnum(const char *text, const char *k);
/* Until braidctl ds list shows n data servers up (30 s at most). */
void pc_wait_up(struct pc *p, unsigned n);
/* The data server id of braid-ds i. */
uint32_t pc_ds_id(struct pc *p, unsigned i);
/* Our client mounted (30 s of tries at most). */
struct ffc *pc_mount(struct pc *p);
/* Every daemon stopped (SIGTERM), the directory removed. */
void pc_finish(struct pc *p, unsigned nds);

#endif
