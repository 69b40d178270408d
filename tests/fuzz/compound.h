/* SPDX-License-Identifier: MIT */
/*
 * What the COMPOUND fuzz targets (fuzz-nfs41-compound.c and
 * fuzz-mds-compound.c) share: a request over a body, a COMPOUND body's
 * encoding and operation count, the invariants of a SUCCESS reply, and
 * the seeding of $BRAID_FUZZ_SEED_DIR.  Compiled once, into
 * tests/libtestfuzz.a, with the targets' FUZZ_CFLAGS (libFuzzer's coverage).
 */
#ifndef BRAID_TESTS_FUZZ_COMPOUND_H
#define BRAID_TESTS_FUZZ_COMPOUND_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nfsd/nfs41.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);
size_t braid_fuzz_seed(uint64_t seed, uint8_t *buf, size_t cap);

/* r's arena, decoder (over body) and encoder; the rest of r is the caller's. */
void fuzz_req_init(struct nfsd_req *r, const uint8_t *body, size_t len);

/* Encode a COMPOUND body into buf; its length, 0 if it does not fit. */
size_t fuzz_compound_encode(uint8_t *buf, size_t cap, const COMPOUND4args *args);

/* The operation count of a COMPOUND body (0 when it has none to read). */
uint32_t fuzz_compound_nops(const uint8_t *b, size_t n);

/*
 * Decode a SUCCESS reply into *res, from *a (initialised here, released by
 * the caller), and abort() unless it is exactly one COMPOUND4res with no
 * more results than the request's nops operations and the status of its
 * last result (NFS4_OK or MINOR_VERS_MISMATCH when it has none).
 */
void fuzz_compound_reply_check(struct xdr_arena *a, const uint8_t *out, size_t len, uint32_t nops,
			       COMPOUND4res *res);

/* When $BRAID_FUZZ_SEED_DIR names an empty directory, fill it with
 * braid_fuzz_seed(0 .. n - 1) as seed-<name>-NNNNN. */
void fuzz_seed_dir_fill(const char *name, uint64_t n);

#endif /* BRAID_TESTS_FUZZ_COMPOUND_H */
