/* SPDX-License-Identifier: MIT */
/*
 * The erasure-coding codec (layout/ec.h), with no server: for each code of
 * a range of (k, m) and lengths from 1 byte to past 64 KiB, on unaligned
 * buffers, parity is the encode matrix ([I; Cauchy]) times the data,
 * checked against a plain GF(2^8) product; then every pattern of 1..m lost
 * chunks (data and parity alike) is rebuilt from k survivors, two
 * different choices of them in shuffled order where more than k survive,
 * and compared byte for byte.  A wanted chunk that is available is copied
 * (also onto itself); threads share one code; bad arguments are -EINVAL
 * and write nothing.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "layout/ec.h"
#include "tests/check.h"

#define N_MAX (EC_K_MAX + EC_M_MAX)

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void fill(uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(rng() >> 24);
}

/* GF(2^8) with x^8 + x^4 + x^3 + x^2 + 1 (0x11d), as isa-l's: shift and add. */
static uint8_t gf_mul_ref(uint8_t a, uint8_t b)
{
	uint8_t p = 0;
	while (b) {
		if (b & 1)
			p ^= a;
		a = (uint8_t)((a << 1) ^ (a & 0x80 ? 0x1d : 0));
		b >>= 1;
	}
	return p;
}

/* One stripe: chunks[i] is chunk i, each len bytes at an odd address. */
struct stripe {
	unsigned k, m, n;
	size_t len;
	uint8_t *mem[N_MAX], *chunks[N_MAX];
	uint8_t *outmem[N_MAX], *out[N_MAX];
};

static void stripe_new(struct stripe *s, unsigned k, unsigned m, size_t len)
{
	memset(s, 0, sizeof(*s));
	s->k = k;
	s->m = m;
	s->n = k + m;
	s->len = len;
	for (unsigned i = 0; i < s->n; i++) {
		s->mem[i] = malloc(len + 1);
		s->outmem[i] = malloc(len + 1);
		CHECK(s->mem[i] && s->outmem[i]);
		s->chunks[i] = s->mem[i] + 1;
		s->out[i] = s->outmem[i] + 1;
	}
	for (unsigned i = 0; i < k; i++)
		fill(s->chunks[i], len);
}

static void stripe_free(struct stripe *s)
{
	for (unsigned i = 0; i < s->n; i++) {
		free(s->mem[i]);
		free(s->outmem[i]);
	}
}

/* Parity = the encode matrix's rows k.. times the data, byte by byte;
 * and the matrix is systematic. */
static void check_parity_ref(const struct ec_code *c, const struct stripe *s)
{
	for (unsigned i = 0; i < s->k; i++)
		for (unsigned j = 0; j < s->k; j++)
			CHECK_EQ(ec_code_coef(c, i, j), i == j);
	for (unsigned p = s->k; p < s->n; p++)
		for (size_t b = 0; b < s->len; b++) {
			uint8_t v = 0;
			for (unsigned j = 0; j < s->k; j++)
				v ^= gf_mul_ref(ec_code_coef(c, p, j), s->chunks[j][b]);
			CHECK_EQ(s->chunks[p][b], v);
		}
}

static void shuffle(unsigned *a, unsigned n)
{
	for (unsigned i = n; i > 1; i--) {
		unsigned j = (unsigned)(rng() % i), t = a[i - 1];
		a[i - 1] = a[j];
		a[j] = t;
	}
}

/*
 * Rebuild the chunks of lost (a bit per chunk) from k survivors: the first
 * k (choice 0) or the last k (choice 1), shuffled; the wanted chunks in
 * shuffled order, and with extra an available chunk too (copied).
 */
static void rebuild_one(const struct ec_code *c, struct stripe *s, uint32_t lost, int choice,
			bool extra)
{
	unsigned surv[N_MAX], ns = 0, want[N_MAX], nw = 0;
	for (unsigned i = 0; i < s->n; i++) {
		if (lost & (UINT32_C(1) << i))
			want[nw++] = i;
		else
			surv[ns++] = i;
	}
	CHECK(ns >= s->k);
	unsigned have_idx[EC_K_MAX];
	const uint8_t *have[EC_K_MAX];
	for (unsigned i = 0; i < s->k; i++)
		have_idx[i] = surv[choice ? ns - s->k + i : i];
	shuffle(have_idx, s->k);
	for (unsigned i = 0; i < s->k; i++)
		have[i] = s->chunks[have_idx[i]];
	if (extra)
		want[nw++] = have_idx[rng() % s->k];
	shuffle(want, nw);
	uint8_t *out[N_MAX];
	for (unsigned i = 0; i < nw; i++) {
		out[i] = s->out[i];
		memset(out[i], 0xa5, s->len);
	}
	CHECK_EQ(ec_rebuild(c, s->len, have_idx, have, nw, want, out), 0);
	for (unsigned i = 0; i < nw; i++)
		if (memcmp(out[i], s->chunks[want[i]], s->len)) {
			fprintf(stderr, "k=%u m=%u len=%zu lost=%#x choice %d: chunk %u differs\n",
				s->k, s->m, s->len, lost, choice, want[i]);
			CHECK(0);
		}
}

/* Every pattern of 1..m lost chunks; over 4 KiB about 32 of them, spread. */
static unsigned check_code(unsigned k, unsigned m, size_t len)
{
	struct ec_code *c;
	CHECK_EQ(ec_code_new(k, m, &c), 0);
	CHECK_EQ(ec_code_k(c), k);
	CHECK_EQ(ec_code_m(c), m);
	struct stripe s;
	stripe_new(&s, k, m, len);
	ec_encode(c, len, (const uint8_t *const *)s.chunks, &s.chunks[k]);
	if (len <= 4096)
		check_parity_ref(c, &s);
	unsigned npat = 0, seen = 0, done = 0;
	for (uint32_t lost = 1; lost < (UINT32_C(1) << s.n); lost++)
		npat += (unsigned)__builtin_popcount(lost) <= m;
	unsigned stride = len > 4096 && npat > 32 ? npat / 32 : 1;
	for (uint32_t lost = 1; lost < (UINT32_C(1) << s.n); lost++) {
		unsigned nl = (unsigned)__builtin_popcount(lost);
		if (nl > m || seen++ % stride)
			continue;
		rebuild_one(c, &s, lost, 0, seen % 5 == 0);
		if (s.n - nl > k)
			rebuild_one(c, &s, lost, 1, seen % 7 == 0);
		done++;
	}
	stripe_free(&s);
	ec_code_free(c);
	return done;
}

/* A wanted chunk that is available, with out[] its own buffer: left as is. */
static void check_copy_in_place(void)
{
	struct ec_code *c;
	CHECK_EQ(ec_code_new(3, 2, &c), 0);
	struct stripe s;
	stripe_new(&s, 3, 2, 100);
	ec_encode(c, s.len, (const uint8_t *const *)s.chunks, &s.chunks[3]);
	unsigned have_idx[3] = {4, 0, 2}, want[2] = {0, 1};
	const uint8_t *have[3] = {s.chunks[4], s.chunks[0], s.chunks[2]};
	uint8_t *out[2] = {s.chunks[0], s.out[0]};
	uint8_t keep[100];
	memcpy(keep, s.chunks[0], sizeof(keep));
	CHECK_EQ(ec_rebuild(c, s.len, have_idx, have, 2, want, out), 0);
	CHECK(!memcmp(s.chunks[0], keep, sizeof(keep)));
	CHECK(!memcmp(s.out[0], s.chunks[1], s.len));
	/* nothing wanted, and length 0: nothing to do */
	CHECK_EQ(ec_rebuild(c, s.len, have_idx, have, 0, want, out), 0);
	CHECK_EQ(ec_rebuild(c, 0, have_idx, have, 2, want, out), 0);
	stripe_free(&s);
	ec_code_free(c);
}

static void check_einval(void)
{
	struct ec_code *c = (struct ec_code *)1;
	CHECK_EQ(ec_code_new(0, 1, &c), -EINVAL);
	CHECK(c == NULL);
	CHECK_EQ(ec_code_new(1, 0, &c), -EINVAL);
	CHECK_EQ(ec_code_new(EC_K_MAX + 1, 1, &c), -EINVAL);
	CHECK_EQ(ec_code_new(4, EC_M_MAX + 1, &c), -EINVAL);
	CHECK_EQ(ec_code_new(EC_K_MAX, EC_M_MAX, &c), 0);
	ec_code_free(c);
	ec_code_free(NULL);

	CHECK_EQ(ec_code_new(4, 2, &c), 0);
	struct stripe s;
	stripe_new(&s, 4, 2, 64);
	ec_encode(c, s.len, (const uint8_t *const *)s.chunks, &s.chunks[4]);
	const uint8_t *have[4] = {s.chunks[0], s.chunks[1], s.chunks[2], s.chunks[4]};
	uint8_t *out[7] = {s.out[0], s.out[1], s.out[2], s.out[3], s.out[4], s.out[5], s.out[5]};
	static const struct {
		unsigned have_idx[4], nwant, want[7];
	} bad[] = {
	    {{0, 1, 1, 4}, 1, {3}},		      /* duplicate have */
	    {{0, 1, 2, 6}, 1, {3}},		      /* have out of range */
	    {{0, 1, 2, 4}, 1, {6}},		      /* want out of range */
	    {{0, 1, 2, 4}, 2, {3, 3}},		      /* duplicate want */
	    {{0, 1, 2, 4}, 7, {0, 1, 2, 3, 4, 5, 0}}, /* more than k + m */
	};
	for (size_t t = 0; t < sizeof(bad) / sizeof(bad[0]); t++) {
		for (unsigned i = 0; i < 6; i++)
			memset(s.out[i], 0x5a, s.len);
		CHECK_EQ(
		    ec_rebuild(c, s.len, bad[t].have_idx, have, bad[t].nwant, bad[t].want, out),
		    -EINVAL);
		for (unsigned i = 0; i < 6; i++)
			for (size_t b = 0; b < s.len; b++)
				CHECK_EQ(s.out[i][b], 0x5a);
	}
	stripe_free(&s);
	ec_code_free(c);
}

/* Threads rebuilding with one shared code at once. */
struct thr {
	const struct ec_code *c;
	const struct stripe *s;
	unsigned seed, fails;
};

static void *thr_main(void *arg)
{
	struct thr *t = arg;
	const struct stripe *s = t->s;
	uint8_t *buf = malloc(2 * s->len);
	CHECK(buf);
	for (unsigned r = 0; r < 300; r++) {
		/* lose two chunks: r picks which */
		unsigned a = (t->seed + r) % s->n, b = (a + 1 + r % (s->n - 1)) % s->n;
		unsigned have_idx[EC_K_MAX], nh = 0, want[2] = {a, b};
		const uint8_t *have[EC_K_MAX];
		for (unsigned i = 0; i < s->n && nh < s->k; i++)
			if (i != a && i != b) {
				have_idx[nh] = i;
				have[nh++] = s->chunks[i];
			}
		uint8_t *out[2] = {buf, buf + s->len};
		if (ec_rebuild(t->c, s->len, have_idx, have, 2, want, out) ||
		    memcmp(out[0], s->chunks[a], s->len) || memcmp(out[1], s->chunks[b], s->len))
			t->fails++;
	}
	free(buf);
	return NULL;
}

static void check_threads(void)
{
	struct ec_code *c;
	CHECK_EQ(ec_code_new(8, 3, &c), 0);
	struct stripe s;
	stripe_new(&s, 8, 3, 4096 + 3);
	ec_encode(c, s.len, (const uint8_t *const *)s.chunks, &s.chunks[8]);
	struct thr t[4];
	pthread_t tid[4];
	for (unsigned i = 0; i < 4; i++) {
		t[i] = (struct thr){.c = c, .s = &s, .seed = i * 3};
		CHECK_EQ(pthread_create(&tid[i], NULL, thr_main, &t[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++) {
		CHECK_EQ(pthread_join(tid[i], NULL), 0);
		CHECK_EQ(t[i].fails, 0);
	}
	stripe_free(&s);
	ec_code_free(c);
}

int main(void)
{
	static const unsigned codes[][2] = {
	    {1, 1}, {2, 1}, {2, 2}, {3, 2}, {4, 2}, {6, 3}, {8, 4}, {10, 4}, {16, 4},
	};
	static const size_t lens[] = {1, 7, 4096, 65536 + 13};
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		unsigned k = codes[i][0], m = codes[i][1], patterns = 0;
		for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
			patterns += check_code(k, m, lens[l]);
		printf("k=%u m=%u: %u loss patterns rebuilt\n", k, m, patterns);
	}
	check_copy_in_place();
	check_einval();
	check_threads();
	printf("ok\n");
	return 0;
}
