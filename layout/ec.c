/* SPDX-License-Identifier: MIT */
/*
 * The erasure-coding codec (layout/ec.h) on isa-l: the encode matrix and
 * its parity tables are made once per code; a rebuild solves for the lost
 * data chunks (ec_rebuild_missing), builds one row per wanted chunk and
 * multiplies them in one ec_encode_data() pass.  Pure functions: no locks,
 * no I/O.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <isa-l/erasure_code.h>

#include "layout/ec.h"

#define EC_N_MAX    (EC_K_MAX + EC_M_MAX)
#define EC_TBL_SIZE 32 /* bytes of isa-l table per coefficient */
/* ec_encode_data() takes an int length: longer buffers go in pieces. */
#define EC_PIECE_MAX ((size_t)1 << 30)

/* Immutable after ec_code_new(): read by any number of threads. */
struct ec_code {
	unsigned k, m;
	uint8_t mat[EC_N_MAX * EC_K_MAX];		  /* (k + m) x k, row i = chunk i */
	uint8_t ptbls[EC_TBL_SIZE * EC_K_MAX * EC_M_MAX]; /* rows k..k+m-1 of mat */
};

int ec_code_new(unsigned k, unsigned m, struct ec_code **out)
{
	*out = NULL;
	if (k < 1 || k > EC_K_MAX || m < 1 || m > EC_M_MAX)
		return -EINVAL;
	struct ec_code *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->k = k;
	c->m = m;
	/* [I; C] with C[i][j] = 1 / (i ^ j) over i = k..k+m-1, j = 0..k-1 */
	gf_gen_cauchy1_matrix(c->mat, (int)(k + m), (int)k);
	ec_init_tables((int)k, (int)m, &c->mat[k * k], c->ptbls);
	*out = c;
	return 0;
}

void ec_code_free(struct ec_code *c)
{
	free(c);
}

unsigned ec_code_k(const struct ec_code *c)
{
	return c->k;
}

unsigned ec_code_m(const struct ec_code *c)
{
	return c->m;
}

uint8_t ec_code_coef(const struct ec_code *c, unsigned i, unsigned j)
{
	return i < c->k + c->m && j < c->k ? c->mat[i * c->k + j] : 0;
}

/*
 * dst[0..rows) = tbls' rows times src[0..k), len bytes each, in pieces
 * that fit ec_encode_data()'s int.  isa-l reads the sources only; its
 * prototype just lacks the const.
 */
static void ec_mul(unsigned k, unsigned rows, const uint8_t *tbls, size_t len,
		   const uint8_t *const *src, uint8_t *const *dst)
{
	unsigned char *s[EC_K_MAX], *d[EC_M_MAX];
	for (size_t off = 0; off < len; off += EC_PIECE_MAX) {
		size_t n = len - off < EC_PIECE_MAX ? len - off : EC_PIECE_MAX;
		for (unsigned i = 0; i < k; i++)
			s[i] = (unsigned char *)src[i] + off;
		for (unsigned i = 0; i < rows; i++)
			d[i] = dst[i] + off;
		ec_encode_data((int)n, (int)k, (int)rows, (unsigned char *)tbls, s, d);
	}
}

void ec_encode(const struct ec_code *c, size_t len, const uint8_t *const *data,
	       uint8_t *const *parity)
{
	ec_mul(c->k, c->m, c->ptbls, len, data, parity);
}

/*
 * The wanted chunks that are not available, in one pass over the k we have.
 *
 * Not by inverting the k x k matrix of the chunks we have (O(k^3) field
 * products: 18 us for 16+4, what encoding some 300 KiB costs), but the e x e
 * system of the e data chunks lost and the e parity chunks that stand in
 * for them: with the known data D_j, parity chunk p = sum_j C[p][j] D_j
 * gives, over the e parity chunks p_a we have and the lost data chunks l_b,
 *
 *	sum_b C[p_a][l_b] D_l_b = P_p_a + sum_{j known} C[p_a][j] D_j,
 *
 * so D_l_b = sum_a X[b][a] (P_p_a + sum_{j known} C[p_a][j] D_j) with X the
 * inverse of M[a][b] = C[p_a][l_b] (a square submatrix of the Cauchy
 * matrix C, so invertible).  A wanted parity chunk w is then its encode
 * row over the data, with each lost D_l_b replaced by that row.
 */
static int ec_rebuild_missing(const struct ec_code *c, size_t len, const unsigned *have_at,
			      const unsigned *have_idx, const uint8_t *const *have, unsigned nwant,
			      const unsigned *want_idx, uint8_t *const *out)
{
	unsigned k = c->k;
	unsigned lost[EC_M_MAX], lost_at[EC_K_MAX], ph[EC_M_MAX], e = 0, np = 0;
	for (unsigned j = 0; j < k; j++)
		if (!have_at[j]) {
			lost_at[j] = e;
			lost[e++] = j;
		}
	for (unsigned i = 0; i < k; i++)
		if (have_idx[i] >= k)
			ph[np++] = have_idx[i];
	/* k distinct chunks held, k - e of them data: np == e <= m */

	/* lrow[b]: lost data chunk l_b over the chunks we have (by position) */
	uint8_t lrow[EC_M_MAX][EC_K_MAX];
	if (e) {
		uint8_t mm[EC_M_MAX * EC_M_MAX], x[EC_M_MAX * EC_M_MAX];
		for (unsigned a = 0; a < e; a++)
			for (unsigned b = 0; b < e; b++)
				mm[a * e + b] = c->mat[ph[a] * k + lost[b]];
		if (gf_invert_matrix(mm, x, (int)e))
			return -EINVAL; /* cannot happen: C's square submatrices are invertible */
		for (unsigned b = 0; b < e; b++) {
			memset(lrow[b], 0, k);
			for (unsigned a = 0; a < e; a++)
				lrow[b][have_at[ph[a]] - 1] = x[b * e + a];
			for (unsigned j = 0; j < k; j++) {
				if (!have_at[j])
					continue;
				uint8_t v = 0;
				for (unsigned a = 0; a < e; a++)
					v ^= gf_mul(x[b * e + a], c->mat[ph[a] * k + j]);
				lrow[b][have_at[j] - 1] = v;
			}
		}
	}

	/* one row per missing wanted chunk, all in one ec_encode_data() pass */
	uint8_t rows[EC_M_MAX * EC_K_MAX];
	uint8_t *dst[EC_M_MAX];
	unsigned r = 0;
	for (unsigned i = 0; i < nwant; i++) {
		unsigned w = want_idx[i];
		if (have_at[w])
			continue;
		uint8_t *row = &rows[r * k];
		if (w < k) {
			memcpy(row, lrow[lost_at[w]], k);
		} else {
			memset(row, 0, k);
			for (unsigned j = 0; j < k; j++) {
				uint8_t cw = c->mat[w * k + j];
				if (have_at[j]) {
					row[have_at[j] - 1] ^= cw;
					continue;
				}
				for (unsigned pos = 0; pos < k; pos++)
					row[pos] ^= gf_mul(cw, lrow[lost_at[j]][pos]);
			}
		}
		dst[r++] = out[i];
	}
	uint8_t tbls[EC_TBL_SIZE * EC_K_MAX * EC_M_MAX];
	ec_init_tables((int)k, (int)r, rows, tbls);
	ec_mul(k, r, tbls, len, have, dst);
	return 0;
}

int ec_rebuild(const struct ec_code *c, size_t len, const unsigned *have_idx,
	       const uint8_t *const *have, unsigned nwant, const unsigned *want_idx,
	       uint8_t *const *out)
{
	unsigned k = c->k, n = c->k + c->m;
	/* have_at[i]: 1 + the position in have[] of chunk i, or 0 */
	unsigned have_at[EC_N_MAX] = {0};
	for (unsigned i = 0; i < k; i++) {
		if (have_idx[i] >= n || have_at[have_idx[i]])
			return -EINVAL;
		have_at[have_idx[i]] = i + 1;
	}
	if (nwant > n)
		return -EINVAL;
	uint32_t seen = 0;
	unsigned nmiss = 0;
	for (unsigned i = 0; i < nwant; i++) {
		if (want_idx[i] >= n || (seen & (UINT32_C(1) << want_idx[i])))
			return -EINVAL;
		seen |= UINT32_C(1) << want_idx[i];
		nmiss += !have_at[want_idx[i]];
	}

	if (nmiss) {
		int rc = ec_rebuild_missing(c, len, have_at, have_idx, have, nwant, want_idx, out);
		if (rc)
			return rc;
	}
	for (unsigned i = 0; i < nwant; i++) {
		unsigned a = have_at[want_idx[i]];
		if (a && out[i] != have[a - 1])
			memcpy(out[i], have[a - 1], len);
	}
	return 0;
}
