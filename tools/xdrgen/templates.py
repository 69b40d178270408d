# SPDX-License-Identifier: MIT
"""The fixed C of NAME_rt.c and NAME_fuzz.c, which emit_tests.py fills in.

The generated files point here as "RT_MAIN in xdrgen.py" and "FUZZ_MAIN in
xdrgen.py".  Identifiers used here are reserved for .x names (names.py).
"""

# ------------------------------------------------- random values (rt, fuzz)

RND_HELPERS = r'''
/* ------------------------------------------------ random valid values */

#define RND_MAXDEPTH 3u /* optional/recursive nesting of random values */
#define RND_UNUSED __attribute__((unused))

struct rnd {
	uint64_t s;
	struct xdr_arena *a;
	size_t budget; /* bytes; when spent, arrays and opaques stay empty */
};

RND_UNUSED static uint64_t rnd_u64(struct rnd *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

RND_UNUSED static uint32_t rnd_u32(struct rnd *r)
{
	return (uint32_t)(rnd_u64(r) >> 32);
}

/* Uniform in [0, n). */
RND_UNUSED static uint32_t rnd_below(struct rnd *r, uint32_t n)
{
	return (uint32_t)(((uint64_t)rnd_u32(r) * n) >> 32);
}

/* Integers biased towards edge values. */
RND_UNUSED static uint32_t rnd_int32(struct rnd *r)
{
	switch (rnd_below(r, 8)) {
	case 0:
		return 0;
	case 1:
		return 0xffffffffu;
	case 2:
		return 0x80000000u;
	case 3:
		return rnd_below(r, 16);
	default:
		return rnd_u32(r);
	}
}

RND_UNUSED static uint64_t rnd_int64(struct rnd *r)
{
	switch (rnd_below(r, 8)) {
	case 0:
		return 0;
	case 1:
		return ~0ull;
	case 2:
		return 1ull << 63;
	case 3:
		return rnd_below(r, 16);
	default:
		return rnd_u64(r);
	}
}

RND_UNUSED static float rnd_float(struct rnd *r)
{
	uint32_t b = rnd_u32(r);
	float f;

	memcpy(&f, &b, sizeof(f));
	return f;
}

RND_UNUSED static double rnd_double(struct rnd *r)
{
	uint64_t b = rnd_u64(r);
	double f;

	memcpy(&f, &b, sizeof(f));
	return f;
}

RND_UNUSED static void *rnd_alloc(struct rnd *r, size_t n)
{
	void *p = xdr_arena_alloc(r->a, n);

	if (!p) {
		fprintf(stderr, "xdr random values: arena exhausted\n");
		abort();
	}
	r->budget = r->budget > n ? r->budget - n : 0;
	return p;
}

RND_UNUSED static void rnd_bytes(struct rnd *r, uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd_u32(r);
}

/* Element count of a variable array: 0..min(max, 4). */
RND_UNUSED static uint32_t rnd_count(struct rnd *r, uint32_t max, bool deeper, unsigned depth)
{
	uint32_t lim = max < 4 ? max : 4;

	if (!r->budget || (deeper && depth >= RND_MAXDEPTH))
		return 0;
	return rnd_below(r, lim + 1);
}

/* Is optional data present? */
RND_UNUSED static bool rnd_more(struct rnd *r, unsigned depth)
{
	return r->budget && depth < RND_MAXDEPTH && rnd_below(r, 2);
}

/* 0..min(max, 3000) bytes, so that some are referenced by the encoder. */
RND_UNUSED static xdr_opaque rnd_opaque(struct rnd *r, uint32_t max, bool str)
{
	uint32_t lim = rnd_below(r, 2) ? 40 : 3000, len;
	uint8_t *p = NULL;

	if (lim > max)
		lim = max;
	if (!r->budget)
		lim = 0;
	len = rnd_below(r, lim + 1);
	if (len) {
		p = rnd_alloc(r, len);
		for (uint32_t i = 0; i < len; i++)
			p[i] = str ? (uint8_t)('a' + rnd_below(r, 26)) : (uint8_t)rnd_u32(r);
	}
	return (xdr_opaque){ .len = len, .val = p };
}
'''


# ------------------------------------------------------ round-trip test

RT_MAIN = r'''
/* ----------------------------------------------------- the test proper */

#define RT_ITERS 100u          /* random values per type */
#define RT_HOSTILE_ITERS 30u   /* of which also get prefix and overwrite checks */
#define RT_MAXIOV 65536u
#define RT_LIMIT (256u << 20)  /* decoder arena for valid input */
#define RT_HOSTILE_LIMIT (4u << 20)
#define RT_BUDGET (64u << 10)  /* bytes of random data per value */
#define RT_BOUND_SKIP (1u << 16) /* bounds this large are not filled */

struct rt;
struct rt_type {
	const char *name;
	size_t size;
	unsigned narms;
	void (*rnd)(struct rnd *, void *, int);
	int (*dec)(struct xdr_dec *, void *);
	int (*enc)(struct xdr_enc *, const void *);
	int (*bounds)(struct rt *);
};

struct rt {
	struct rnd r;
	struct xdr_arena va, da, ea;
	struct iovec *iov;
	const struct rt_type *ty;
	unsigned long cases;
	unsigned iter;
};

static int rt_roundtrip(struct rt *t, const void *v, bool small, bool hostile);
static int rt_overbound(struct rt *t, const void *v, int (*wire)(struct xdr_enc *, const void *),
			const char *site);
static int rt_baddisc(struct rt *t, const void *v, int (*wire)(struct xdr_enc *, const void *));
@TYPES@
static uint8_t rt_first[1u << 16] __attribute__((aligned(8)));
static uint8_t rt_scratch[1u << 16];

static int rt_fail(struct rt *t, const char *what, long a, long b)
{
	fprintf(stderr, "xdr-roundtrip @BASE@: type %s, iteration %u: %s (%ld, %ld)\n",
		t->ty->name, t->iter, what, a, b);
	return -1;
}

/* Encode v into a malloc'd buffer; small scratch forces arena chunks. */
static int rt_encode(struct rt *t, int (*enc)(struct xdr_enc *, const void *), const void *v,
		     bool small, uint8_t **out, size_t *len)
{
	struct xdr_enc e;
	int err;

	*out = NULL;
	*len = 0;
	xdr_arena_reset(&t->ea);
	xdr_enc_init(&e, t->iov, RT_MAXIOV, rt_scratch, small ? 64 : sizeof(rt_scratch), &t->ea);
	err = enc(&e, v);
	if (err != e.err) {
		rt_fail(t, "encoder result differs from e->err", err, e.err);
		exit(1);
	}
	if (err)
		return err;
	*out = malloc(e.len ? e.len : 1);
	if (!*out)
		abort();
	xdr_enc_flatten(&e, *out);
	*len = e.len;
	return 0;
}

/* Decode w[0..n) (an exact-size allocation, so ASan sees any overread). */
static int rt_decode(struct rt *t, const uint8_t *w, size_t n, size_t limit, void **out,
		     size_t *used)
{
	struct xdr_dec d;
	void *v;
	int err;

	xdr_arena_release(&t->da);
	xdr_arena_init(&t->da, rt_first, sizeof(rt_first), limit);
	v = xdr_arena_alloc(&t->da, t->ty->size);
	if (!v)
		abort();
	xdr_dec_init(&d, w, n, &t->da);
	err = t->ty->dec(&d, v);
	if (d.p < w || d.p > d.end || t->da.total > limit) {
		rt_fail(t, "decoder overran its input or arena", (long)(d.p - w), (long)n);
		exit(1);
	}
	*out = v;
	*used = (size_t)(d.p - w);
	return err;
}

static uint8_t *rt_dup(const uint8_t *w, size_t n)
{
	uint8_t *c = malloc(n ? n : 1);

	if (!c)
		abort();
	if (n)
		memcpy(c, w, n);
	return c;
}

/* A hostile decode either fails or yields a value that re-encodes exactly. */
static int rt_hostile_one(struct rt *t, const uint8_t *w, size_t n)
{
	uint8_t *c = rt_dup(w, n), *w2;
	size_t used, n2;
	void *v;
	int err, rc = 0;

	err = rt_decode(t, c, n, RT_HOSTILE_LIMIT, &v, &used);
	if (!err) {
		err = rt_encode(t, t->ty->enc, v, false, &w2, &n2);
		if (err)
			rc = rt_fail(t, "hostile input decoded but does not re-encode", err, 0);
		else if (n2 != used || memcmp(w2, c, used))
			rc = rt_fail(t, "hostile input decoded but re-encodes differently", (long)n2, (long)used);
		free(w2);
	}
	free(c);
	return rc;
}

static int rt_hostile(struct rt *t, const uint8_t *w, size_t n)
{
	size_t nw = n / 4;
	void *v;
	size_t used;

	/* Every strict prefix must fail (sampled for long encodings). */
	for (size_t k = 0; k < n; k++) {
		size_t plen = k;
		uint8_t *c;
		int err;

		if (n > 96) {
			if (k >= 64)
				break;
			plen = k < 16 ? k : k < 32 ? n - 1 - (k - 16) : rnd_below(&t->r, (uint32_t)n);
		}
		c = rt_dup(w, plen);
		err = rt_decode(t, c, plen, RT_HOSTILE_LIMIT, &v, &used);
		free(c);
		if (!err)
			return rt_fail(t, "a strict prefix decoded", (long)plen, (long)n);
	}
	/* Overwrite aligned words with huge values. */
	for (size_t k = 0; k < nw && k < 48; k++) {
		size_t word = nw > 48 ? rnd_below(&t->r, (uint32_t)nw) : k;
		static const uint32_t pat[] = { 0xffffffffu, 0x80000000u };

		for (unsigned j = 0; j < 2; j++) {
			uint8_t *c = rt_dup(w, n);
			int rc;

			xdr_put32(c + 4 * word, pat[j]);
			rc = rt_hostile_one(t, c, n);
			free(c);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* encode -> flatten -> decode (all bytes) -> encode -> same bytes. */
static int rt_roundtrip(struct rt *t, const void *v, bool small, bool hostile)
{
	uint8_t *w1, *w2;
	size_t n1, n2, used;
	void *dv;
	int err, rc = 0;

	err = rt_encode(t, t->ty->enc, v, small, &w1, &n1);
	if (err)
		return rt_fail(t, "encode failed", err, 0);
	err = rt_decode(t, w1, n1, RT_LIMIT, &dv, &used);
	if (err)
		rc = rt_fail(t, "decode failed", err, (long)n1);
	else if (used != n1)
		rc = rt_fail(t, "decode did not consume every byte", (long)used, (long)n1);
	if (!rc) {
		err = rt_encode(t, t->ty->enc, dv, !small, &w2, &n2);
		if (err)
			rc = rt_fail(t, "re-encode failed", err, 0);
		else if (n2 != n1 || memcmp(w1, w2, n1))
			rc = rt_fail(t, "re-encode differs", (long)n2, (long)n1);
		free(w2);
	}
	if (!rc && hostile)
		rc = rt_hostile(t, w1, n1);
	free(w1);
	t->cases++;
	return rc;
}

/*
 * v holds a member of length bound + 1: the encoder must refuse it, and
 * the same bytes written without the check must not decode.
 */
RND_UNUSED static int rt_overbound(struct rt *t, const void *v,
				   int (*wire)(struct xdr_enc *, const void *), const char *site)
{
	uint8_t *w;
	size_t n, used;
	void *dv;
	int err;

	err = rt_encode(t, t->ty->enc, v, false, &w, &n);
	free(w);
	if (err != -EMSGSIZE) {
		fprintf(stderr, "xdr-roundtrip @BASE@: %s: ", site);
		return rt_fail(t, "encoder did not refuse length bound + 1", err, -EMSGSIZE);
	}
	err = rt_encode(t, wire, v, false, &w, &n);
	if (err)
		return rt_fail(t, "over-bound wire form not built", err, 0);
	err = rt_decode(t, w, n, RT_LIMIT, &dv, &used);
	free(w);
	if (err != -EBADMSG) {
		fprintf(stderr, "xdr-roundtrip @BASE@: %s: ", site);
		return rt_fail(t, "decoder did not reject length bound + 1", err, -EBADMSG);
	}
	t->cases += 2;
	return 0;
}

/* A union whose discriminant matches no arm: neither encoded nor decoded. */
RND_UNUSED static int rt_baddisc(struct rt *t, const void *v,
				 int (*wire)(struct xdr_enc *, const void *))
{
	uint8_t *w;
	size_t n, used;
	void *dv;
	int err;

	err = rt_encode(t, t->ty->enc, v, false, &w, &n);
	free(w);
	if (err != -EBADMSG)
		return rt_fail(t, "encoder accepted a discriminant that matches no arm", err, -EBADMSG);
	err = rt_encode(t, wire, v, false, &w, &n);
	if (err)
		return rt_fail(t, "bad-discriminant wire form not built", err, 0);
	err = rt_decode(t, w, n, RT_LIMIT, &dv, &used);
	free(w);
	if (err != -EBADMSG)
		return rt_fail(t, "decoder accepted a discriminant that matches no arm", err, -EBADMSG);
	t->cases += 2;
	return 0;
}

int main(void)
{
	struct rt t;
	unsigned ntypes = sizeof(rt_types) / sizeof(rt_types[0]);

	memset(&t, 0, sizeof(t));
	t.iov = calloc(RT_MAXIOV, sizeof(*t.iov));
	if (!t.iov)
		abort();
	xdr_arena_init(&t.va, NULL, 0, 512u << 20);
	xdr_arena_init(&t.ea, NULL, 0, 512u << 20);
	xdr_arena_init(&t.da, NULL, 0, RT_LIMIT);
	t.r.a = &t.va;
	for (unsigned i = 0; i < ntypes; i++) {
		const struct rt_type *ty = &rt_types[i];
		unsigned iters = ty->narms > RT_ITERS ? ty->narms : RT_ITERS;

		t.ty = ty;
		t.r.s = 0x62726169640000ull + i; /* fixed seed per type */
		for (t.iter = 0; t.iter < iters; t.iter++) {
			void *v;

			xdr_arena_reset(&t.va);
			t.r.budget = RT_BUDGET;
			v = rnd_alloc(&t.r, ty->size);
			ty->rnd(&t.r, v, (int)t.iter);
			if (rt_roundtrip(&t, v, t.iter & 1, t.iter < RT_HOSTILE_ITERS))
				return 1;
		}
		if (ty->bounds && ty->bounds(&t))
			return 1;
	}
	xdr_arena_release(&t.va);
	xdr_arena_release(&t.ea);
	xdr_arena_release(&t.da);
	free(t.iov);
	printf("xdr-roundtrip @BASE@: %u types, %lu cases: ok\n", ntypes, t.cases);
	return 0;
}
'''


# -------------------------------------------------------------- fuzzing

FUZZ_MAIN = r'''
/* ------------------------------------------------------------ the target */

struct fz_type {
	const char *name;
	size_t size;
	void (*rnd)(struct rnd *, void *, int);
	int (*dec)(struct xdr_dec *, void *);
	int (*enc)(struct xdr_enc *, const void *);
};

@TABLE@

#define FZ_NTYPES (sizeof(fz_types) / sizeof(fz_types[0]))
/* Selector: one byte, or two (big-endian) when there are more than 256 types. */
#define FZ_SEL (FZ_NTYPES > 256 ? 2u : 1u)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);
size_t braid_fuzz_seed(uint64_t seed, uint8_t *buf, size_t cap);

static uint8_t fz_first[1u << 16] __attribute__((aligned(8)));

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct fz_type *ft;
	struct xdr_arena a, ea;
	struct xdr_dec d;
	struct xdr_enc e;
	struct iovec *iov;
	uint8_t *out;
	size_t used, maxiov;
	void *v;
	int err;

	if (size < FZ_SEL)
		return 0;
	ft = &fz_types[(FZ_SEL == 2 ? (size_t)data[0] << 8 | data[1] : data[0]) % FZ_NTYPES];
	data += FZ_SEL;
	size -= FZ_SEL;
	xdr_arena_init(&a, fz_first, sizeof(fz_first), 1u << 20);
	v = xdr_arena_alloc(&a, ft->size);
	if (!v)
		abort();
	xdr_dec_init(&d, data, size, &a);
	err = ft->dec(&d, v);
	if (d.p < data || d.p > d.end || a.total > a.limit)
		abort();
	if (err) {
		xdr_arena_release(&a);
		return 0;
	}
	/* What decodes must encode to exactly the bytes consumed. */
	used = (size_t)(d.p - data);
	maxiov = used / 256 + 16;
	iov = calloc(maxiov, sizeof(*iov));
	out = malloc(used ? used : 1);
	if (!iov || !out)
		abort();
	xdr_arena_init(&ea, NULL, 0, (64u << 20) + 4 * used);
	xdr_enc_init(&e, iov, (unsigned)maxiov, NULL, 0, &ea);
	err = ft->enc(&e, v);
	if (err || e.err || e.len != used) {
		fprintf(stderr, "%s: decoded %zu bytes but encoding gives %zu (err %d)\n",
			ft->name, used, e.len, err);
		abort();
	}
	xdr_enc_flatten(&e, out);
	if (used && memcmp(out, data, used)) {
		fprintf(stderr, "%s: re-encoding differs from the input\n", ft->name);
		abort();
	}
	free(out);
	free(iov);
	xdr_arena_release(&ea);
	xdr_arena_release(&a);
	return 0;
}

/* One seed input: selector and a valid encoding of a random value. */
size_t braid_fuzz_seed(uint64_t seed, uint8_t *buf, size_t cap)
{
	size_t ti = (size_t)(seed % FZ_NTYPES), n = 0;
	const struct fz_type *ft = &fz_types[ti];
	struct xdr_arena va, ea;
	struct xdr_enc e;
	struct rnd r;
	struct iovec *iov;
	void *v;

	iov = calloc(4096, sizeof(*iov));
	if (!iov)
		abort();
	xdr_arena_init(&va, NULL, 0, 64u << 20);
	xdr_arena_init(&ea, NULL, 0, 64u << 20);
	r.s = seed * 0x9e3779b97f4a7c15ull + 0x62726169;
	r.a = &va;
	r.budget = 4096 + (size_t)(seed % 5) * 4096;
	v = rnd_alloc(&r, ft->size);
	ft->rnd(&r, v, (int)((seed / FZ_NTYPES) & 0x7fffffff));
	xdr_enc_init(&e, iov, 4096, NULL, 0, &ea);
	if (!ft->enc(&e, v) && e.len + FZ_SEL <= cap) {
		if (FZ_SEL == 2) {
			buf[0] = (uint8_t)(ti >> 8);
			buf[1] = (uint8_t)ti;
		} else {
			buf[0] = (uint8_t)ti;
		}
		xdr_enc_flatten(&e, buf + FZ_SEL);
		n = e.len + FZ_SEL;
	}
	xdr_arena_release(&va);
	xdr_arena_release(&ea);
	free(iov);
	return n;
}

/* Fill an empty $BRAID_FUZZ_SEED_DIR with valid inputs of every type. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("BRAID_FUZZ_SEED_DIR");
	size_t cap = 1u << 16, nseeds = FZ_NTYPES * 2 < 300 ? 300 : FZ_NTYPES * 2;
	struct dirent *de;
	uint8_t *buf;
	DIR *dh;

	(void)argc;
	(void)argv;
	if (!dir || !*dir)
		return 0;
	dh = opendir(dir);
	if (!dh)
		return 0;
	while ((de = readdir(dh)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			break;
	closedir(dh);
	if (de)
		return 0;
	buf = malloc(cap);
	if (!buf)
		abort();
	for (size_t i = 0; i < nseeds; i++) {
		size_t n = braid_fuzz_seed(i, buf, cap);
		char path[4096];
		FILE *f;

		if (!n)
			continue;
		snprintf(path, sizeof(path), "%s/seed-@BASE@-%05zu", dir, i);
		f = fopen(path, "wb");
		if (!f)
			break;
		fwrite(buf, 1, n, f);
		fclose(f);
	}
	free(buf);
	return 0;
}
'''
