/* SPDX-License-Identifier: MIT */
/*
 * The erasure-coding codec: systematic Reed-Solomon over GF(2^8), k data
 * chunks and m parity chunks per stripe, on isa-l's erasure_code SIMD
 * kernels.  Data servers call it to compute parity and to rebuild lost
 * chunks; it knows nothing of files, stripes on disk or data servers.
 *
 * Chunk indices: 0..k-1 are the data chunks, k..k+m-1 the parity chunks.
 * The encode matrix is [I; C]: the k x k identity (data stays plain) over
 * an m x k Cauchy matrix (isa-l's gf_gen_cauchy1_matrix), whose every
 * square submatrix is invertible, so every k x k submatrix of [I; C] is:
 * any k of the k + m chunks give back all the others (MDS).  The matrix
 * is part of the on-disk format: parity written by one build must rebuild
 * in another, so it never changes for a given (k, m).
 *
 * A struct ec_code is immutable once made: any number of threads may
 * encode and rebuild with one at the same time.  Pure functions: no
 * locks, no I/O.  Errors are 0 or -errno.
 */
#ifndef BRAID_LAYOUT_EC_H
#define BRAID_LAYOUT_EC_H

#include <stddef.h>
#include <stdint.h>

#define EC_K_MAX 16 /* data chunks per stripe */
#define EC_M_MAX 4  /* parity chunks per stripe */

struct ec_code;

/* A code for k data and m parity chunks: 1 <= k <= EC_K_MAX,
 * 1 <= m <= EC_M_MAX.  -EINVAL, -ENOMEM. */
int ec_code_new(unsigned k, unsigned m, struct ec_code **out);
void ec_code_free(struct ec_code *c);
unsigned ec_code_k(const struct ec_code *c);
unsigned ec_code_m(const struct ec_code *c);
/* Coefficient of data chunk j in chunk i (i < k + m, j < k): row i of
 * the encode matrix, for tests and for tools that check parity. */
uint8_t ec_code_coef(const struct ec_code *c, unsigned i, unsigned j);

/*
 * parity[0..m) from data[0..k), every buffer len bytes (any len, no
 * alignment needed).  Parity buffers must not overlap the data.
 */
void ec_encode(const struct ec_code *c, size_t len, const uint8_t *const *data,
	       uint8_t *const *parity);

/*
 * Chunks want_idx[0..nwant) made from k available chunks: have[i] is chunk
 * have_idx[i] (i < k), indices distinct and in any order.  Want indices
 * must be distinct (nwant <= k + m); a wanted chunk that is available is
 * copied (out[i] may then be have[j] itself), every other one (at most m:
 * data and parity alike) is computed in one pass over the k inputs, so any
 * pattern of up to m lost chunks is rebuilt.  Outputs must not overlap the
 * inputs, except as said, nor each other.
 *
 * -EINVAL on an index out of range, a duplicate, or nwant > k + m; nothing
 * is written then.  The decode tables (about 2.5 KiB) are built on the
 * stack per call, so a shared ec_code needs no lock and this never fails
 * for memory; building them solves only for the lost data chunks (an
 * e x e system, e <= m) and costs about 1.5 us for 16+4 with 4 lost
 * (bench/ec's rebuild_setup_us), so there is no cache of them.
 */
int ec_rebuild(const struct ec_code *c, size_t len, const unsigned *have_idx,
	       const uint8_t *const *have, unsigned nwant, const unsigned *want_idx,
	       uint8_t *const *out);

#endif /* BRAID_LAYOUT_EC_H */
