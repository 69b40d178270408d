/* SPDX-License-Identifier: MIT */
/*
 * The NFSv4 ops that bench/mds's NFSv4.1 load (mds_load.c, where they are
 * defined) and NFSv4.0 load (mds_load40.c) both send.  An op's strings and
 * handles point at the caller's memory: it lives until the COMPOUND is
 * encoded.
 */
#ifndef BRAID_BENCH_MDS4_H
#define BRAID_BENCH_MDS4_H

#include "bench/mds.h"
#include "nfsd/xdr/nfs4_prot.h"

/* op with its arguments zeroed, for the caller to fill. */
nfs_argop4 bench_mds4_op(nfs_opnum4 op);
nfs_argop4 bench_mds4_putfh(const uint8_t *fh, uint32_t len);
/* The attributes a create sets: mode 0755 (dir), else 0644. */
fattr4 bench_mds4_mode(bool dir);
/* A lookup of name in dir: {PUTFH, LOOKUP, GETFH, GETATTR (type, change,
 * size, fileid)} into ops; returns the count (4). */
unsigned bench_mds4_lookup_ops(nfs_argop4 *ops, const uint8_t *dirfh, uint32_t dirfhlen,
			       const char *name);
/* A page of the walk from pg: {PUTFH, READDIR (type and fileid of each
 * entry)} into ops; returns the count (2). */
unsigned bench_mds4_readdir_ops(nfs_argop4 *ops, const uint8_t *dirfh, uint32_t dirfhlen,
				const struct bench_mds_page *pg);
/* pg from READDIR's answer: every entry counted. */
void bench_mds4_readdir_take(struct bench_mds_page *pg, const READDIR4resok *ok);

#endif /* BRAID_BENCH_MDS4_H */
