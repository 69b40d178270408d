/* SPDX-License-Identifier: MIT */
/*
 * An NFSv3 load generator for benchmarks, over the engine's client
 * (nfsd/rpc.h) and the generated NFSv3 codecs: 1 MiB READs, or WRITEs with
 * a chosen stable_how followed by COMMIT, on C connections with 16 calls in
 * flight on each, at random or sequential 1 MiB-aligned offsets of one file,
 * for a given time.
 *
 * The file holds a known pattern (nfs3_pattern_fill: each 8-byte word is
 * its own offset); every READ reply is spot-checked against it and one in
 * 16 is checked whole, and WRITEs write it, so a later READ still checks.
 *
 * Functions return 0 or -errno; calls may also return a positive
 * NFSD_CALL_ERR_* (nfsd/rpc.h).
 */
#ifndef BRAID_BENCH_NFS3LOAD_H
#define BRAID_BENCH_NFS3LOAD_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bench/common.h"
#include "nfsd/rpc.h"

#define NFS3_LOAD_IO	   (1u << 20) /* every READ and WRITE */
#define NFS3_LOAD_INFLIGHT 16	      /* calls in flight per connection */
#define NFS3_LOAD_CONN_MAX 16

/* ---------------------------------------------------------------- pattern */

void nfs3_pattern_fill(uint8_t *p, uint64_t off, size_t len);
/* full: every word; else the first, a middle and the last one. */
bool nfs3_pattern_ok(const uint8_t *p, uint64_t off, size_t len, bool full);
/* Write the pattern file (size bytes), fdatasync it, chown it to uid/gid. */
int nfs3_pattern_file_create(const char *path, uint64_t size, uint32_t uid, uint32_t gid);

/* ------------------------------------------------------------------ calls */

/* The generated descriptor of NFSPROC3_<proc> (codecs). */
const struct xdr_proc_desc *nfs3_proc_desc(uint32_t proc);
/* NFSv3 call options with AUTH_SYS uid/gid (args: NULL for void). */
struct nfsd_call_opts nfs3_call_opts(uint32_t proc, const void *args, uint32_t uid, uint32_t gid);

/* ------------------------------------------------------------------- load */

enum nfs3_load_op { NFS3_LOAD_READ, NFS3_LOAD_WRITE };

struct nfs3_load_cfg {
	int port; /* on 127.0.0.1 */
	const uint8_t *fh;
	uint32_t fhlen;
	uint64_t file_size; /* a multiple of NFS3_LOAD_IO */
	unsigned nconn;	    /* 1..NFS3_LOAD_CONN_MAX */
	double secs;	    /* measured window, after a 0.3 s warm-up */
	enum nfs3_load_op op;
	int32_t stable;	   /* WRITE: stable_how; COMMIT follows the window */
	bool random;	   /* random 1 MiB-aligned offsets, else sequential */
	bool once;	   /* fill: every block once, in order, then stop */
	uint32_t uid, gid; /* AUTH_SYS */
	pid_t server;	   /* whose CPU time to measure; 0 for none */
};

struct nfs3_load_res {
	bool ok;
	double secs;  /* the measured window */
	double mbps;  /* 1e6 bytes per second */
	double cpu_s; /* the server's CPU seconds in the window */
	double client_cpu_s; /* this process's (the load's client threads) */
	uint64_t bytes, ops;
	uint64_t verified; /* READ replies checked whole */
	uint64_t short_io; /* replies under NFS3_LOAD_IO */
	char why[256];	   /* set when !ok */
};

/*
 * Run one load.  Timed loads count the bytes acknowledged in the window;
 * a WRITE load's window ends when the COMMITs that follow it return, so
 * unstable data counts once the server says it is durable.  A fill
 * (once) is timed as a whole.  The first error (transport, nfsstat3,
 * wrong data, a changed write verifier) stops the load: res->ok false and
 * res->why say so.
 */
void nfs3_load_run(const struct nfs3_load_cfg *cfg, struct nfs3_load_res *res);

#endif /* BRAID_BENCH_NFS3LOAD_H */
