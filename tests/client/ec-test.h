/* SPDX-License-Identifier: MIT */
/*
 * The erasure-coding cluster tests' fixture (tests/client/ec-*.c): which
 * data server holds what of a file under ec,k=K,m=M,segment_size=1m, and
 * its chunks checked straight from the data servers' stores against the
 * codec.  Include "config.h" first.
 */
#ifndef BRAID_TESTS_CLIENT_EC_TEST_H
#define BRAID_TESTS_CLIENT_EC_TEST_H

#include "tests/client/ffc-test.h"

/* The cluster: m's MDS and its data servers d[0..nds), k + pm per stripe. */
struct ect {
	struct mt *m;
	struct cds *d;
	unsigned nds, k, pm;
};

/* The data server with id (one of e's). */
struct cds *ect_cds(const struct ect *e, uint32_t id);
bool ect_sealed(const struct ect *e, uint64_t ino);
/* Until ino is sealed (30 s at most), printing how long it took. */
void ect_wait_sealed(const struct ect *e, uint64_t ino, const char *what);
/* Segment n's data server. */
uint32_t ect_seg_ds(const struct ect *e, uint64_t ino, uint64_t n);
/* Stripe s's holders, chunk order (k + pm of them). */
void ect_stripe_ids(const struct ect *e, uint64_t ino, uint64_t s, uint32_t *ids);
/*
 * Every stripe of ino (size bytes of dt_fill's pattern seed) has its
 * chunks on k + pm distinct data servers, each parity chunk read straight
 * from its holder's store is the codec's parity of the stripe's data
 * (zero-padded past the end), and, with data, each data chunk in its
 * holder's object is the pattern.
 */
void ect_stripes_check(const struct ect *e, uint64_t ino, uint64_t size, unsigned seed, bool data);

#endif
