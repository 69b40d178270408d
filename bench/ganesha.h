/* SPDX-License-Identifier: MIT */
/*
 * NFS-Ganesha for the benchmarks that measure braid beside it (bench/mds,
 * bench/ds, bench/training): Debian's ganesha.nfsd (4.3, FSAL VFS) as our
 * child (so /proc gives its CPU time alone), one export of a directory as
 * the NFSv4 pseudo root, on 127.0.0.1 only, TCP only, no grace period,
 * numeric owners, root not squashed, Kerberos off.  One place writes its
 * configuration, so that every bench compares with the same server.
 *
 * Functions return 0 or -errno with why unless said otherwise.
 */
#ifndef BRAID_BENCH_GANESHA_H
#define BRAID_BENCH_GANESHA_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "bench/common.h"

/* What one start serves. */
struct bench_ganesha_cfg {
	bool v3;	 /* NFSv3, and MOUNT v3 on mnt_port: needs an rpcbind */
	bool v4;	 /* NFSv4.1 and 4.2 (no rpcbind needed) */
	unsigned max_io; /* MaxRead and MaxWrite of the export; 0: Ganesha's own */
};

/* One ganesha.nfsd: paths and ports from bench_ganesha_init(). */
struct bench_ganesha {
	struct bench_child ch;	 /* pid 0 while not running */
	struct bench_child rpcb; /* rpcbind, when we had to start one */
	int port, mnt_port;	 /* NFS (every version), MOUNT v3 */
	char dir[PATH_MAX];	 /* its config, log, pid file and recovery dir */
	char export_dir[PATH_MAX];
	char conf[PATH_MAX + 16], log[PATH_MAX + 16], pidf[PATH_MAX + 16], recov[PATH_MAX + 16];
};

/* Where ganesha.nfsd is (into exe), and that we may run it (FSAL VFS needs
 * root); -ENOENT or -EPERM with why. */
int bench_ganesha_find(char *exe, size_t exe_len, char *why, size_t len);
/*
 * An rpcbind on 127.0.0.1:111, which Ganesha needs to serve NFSv3: the one
 * that runs, or one we start as rpcb (its log in dir; rpcb->pid 0 when
 * none was started), for the caller to stop.
 */
int bench_rpcbind_ensure(struct bench_child *rpcb, const char *dir, char *why, size_t len);
/* What NFS-Ganesha's log lines that matter look like. */
extern const char *const bench_ganesha_err_marks[];

/* g zeroed, its directory dir and export_dir made (when missing, with the
 * recovery directory), two free ports picked. */
int bench_ganesha_init(struct bench_ganesha *g, const char *dir, const char *export_dir, char *why,
		       size_t len);
/*
 * Write g->conf for cfg and start exe (bench_ganesha_find) on it: 0 once it
 * answers NULL on every protocol cfg names (30 s for the first, 10 s for
 * each after).  On failure it is stopped, the end of its log is on stderr
 * and why says what its log said.  May be called again after a failure.
 */
int bench_ganesha_start(struct nfsd_server *eng, struct bench_ganesha *g, const char *exe,
			const struct bench_ganesha_cfg *cfg, char *why, size_t len);
/* SIGTERM, 20 s, then SIGKILL (false: it needed that); and the rpcbind we
 * started, if any. */
bool bench_ganesha_stop(struct bench_ganesha *g);

#endif /* BRAID_BENCH_GANESHA_H */
