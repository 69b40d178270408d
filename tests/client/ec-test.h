/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the erasure-coding cluster tests (tests/client/ec-*.c):
 * braid-mds and data servers in this process (tests/mds/mds-ds-test.h),
 * a file of dt_fill's pattern under an ec,k=K,m=M,segment_size=1M policy.
 * Include "config.h" first.
 */
#ifndef BRAID_TESTS_CLIENT_EC_TEST_H
#define BRAID_TESTS_CLIENT_EC_TEST_H

#include "tests/client/ffc-test.h"

/* The cluster: its MDS, its nds data servers, the files' geometry. */
struct ect {
	struct mt *m;
	struct cds *d;
	unsigned nds, k, pm;
};

/* braid-mds with conf's [mds] lines, its nds data servers "ds-I", and
 * our client mounted. */
struct ffc *ect_start(const struct ect *e, const char *conf);

/* The data server with id (the test fails if none). */
struct cds *ect_cds(const struct ect *e, uint32_t id);
bool ect_sealed(const struct ect *e, uint64_t ino);
/* Until ino is sealed (30 s at most); prints how long it took. */
void ect_wait_sealed(const struct ect *e, uint64_t ino, const char *what);
/* Segment n's data server. */
uint32_t ect_seg_ds(const struct ect *e, uint64_t ino, uint64_t n);
/* Stripe s's holders, chunk order (k data, then pm parity). */
void ect_stripe_ids(const struct ect *e, uint64_t ino, uint64_t s, uint32_t *ids);
/* Chunk i of stripe s (1 MiB) read straight from its holder's store as
 * the file's fence (a data chunk past the end: what the object holds). */
void ect_chunk_read(const struct ect *e, uint64_t ino, uint64_t s, unsigned i, uint8_t *out);
/* The path of chunk i of stripe s's object file on its holder's disk. */
void ect_chunk_file(const struct ect *e, uint64_t ino, uint64_t s, unsigned i, char *out,
		    size_t outlen);

/*
 * Every parity chunk of ino's file (size bytes of pattern seed), read
 * from its holder's store, equals the codec's parity of the stripe's data
 * (zero-padded past the end), and a stripe's chunks are on distinct
 * servers.
 */
void ect_parity_check(const struct ect *e, uint64_t ino, uint64_t size, unsigned seed);
/*
 * Every combination of k of each stripe's k + pm chunks, as the stores
 * hold them, decodes to the stripe's data: size bytes of pattern seed.
 */
void ect_subsets_check(const struct ect *e, uint64_t ino, uint64_t size, unsigned seed);

#endif
