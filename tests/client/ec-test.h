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

/* The MDS (exports "/" to everyone, conf its [mds] lines, its port kept
 * across restarts) and e's data servers started; our client mounted. */
struct ffc *ect_start(const struct ect *e, const char *conf);
/* A new file dir_path/name (dir the directory's inode) of size bytes of
 * dt_fill's pattern seed (made in buf), written and synced: its inode. */
uint64_t ect_write(const struct ect *e, struct ffc *c, const char *dir_path, uint64_t dir,
		   const char *name, uint8_t *buf, uint64_t size, unsigned seed);
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
/* Chunk i of stripe s (1 MiB) read straight from its holder's store as
 * the file's fence (a data chunk past the end: what the object holds). */
void ect_chunk_read(const struct ect *e, uint64_t ino, uint64_t s, unsigned i, uint8_t *out);
/* The path of chunk i of stripe s's object file on its holder's disk. */
void ect_chunk_file(const struct ect *e, uint64_t ino, uint64_t s, unsigned i, char *out,
		    size_t outlen);
/*
 * Every combination of k of each stripe's k + pm chunks, as the stores
 * hold them, decodes to the stripe's data: size bytes of pattern seed.
 */
void ect_subsets_check(const struct ect *e, uint64_t ino, uint64_t size, unsigned seed);

#endif
