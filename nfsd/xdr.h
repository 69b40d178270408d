/* SPDX-License-Identifier: MIT */
/*
 * XDR runtime (RFC 4506) shared by all generated code.
 *
 * Decoding reads a bounded buffer: opaques and strings point into it (no copy,
 * no malloc); variable arrays and optional data come from a per-request arena
 * whose total size is capped, so no input can make a decoder allocate beyond
 * the arena's limit.  Every length is checked against the bound written in the
 * .x file (or the defaults below) and against the bytes that remain.
 *
 * Encoding emits into an iovec list: small items are copied into scratch
 * space, large opaques (>= XDR_REF_MIN bytes) are referenced in place, so a
 * READ payload is never copied.  Referenced memory must stay valid until the
 * encoded message has been sent (its owner is the request that encodes it).
 *
 * Errors: functions return 0 or a negative errno (-EBADMSG for malformed or
 * over-bound input, -ENOMEM when the arena limit is reached, -ENOBUFS when an
 * encoder runs out of iovecs or scratch).
 */
#ifndef BRAID_NFSD_XDR_H
#define BRAID_NFSD_XDR_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

/* Bound applied to "T name<>" arrays written without a maximum. */
#ifndef XDR_MAX_ARRAY_DEFAULT
#define XDR_MAX_ARRAY_DEFAULT 8192u
#endif
/* Bound applied to "opaque<>" and "string<>" written without a maximum. */
#ifndef XDR_MAX_OPAQUE_DEFAULT
#define XDR_MAX_OPAQUE_DEFAULT (16u << 20)
#endif
/* Nesting bound for optional data that is not a tail-linked list. */
#define XDR_MAX_DEPTH 64u
/* Opaques at least this long are referenced by the encoder, not copied. */
#define XDR_REF_MIN 1024u

/* ---------------------------------------------------------------- arena */

/*
 * A bump allocator for one request.  The first chunk is usually caller
 * storage (embedded in the request); further chunks are malloc'd up to
 * 'limit' bytes in total and freed by reset/release.  Not thread safe: owned
 * by exactly one request at a time.
 */
struct xdr_arena_chunk;
struct xdr_arena {
	uint8_t *base;                  /* current chunk */
	size_t size, used;              /* of the current chunk */
	size_t limit;                   /* cap on bytes handed out, all chunks */
	size_t total;                   /* bytes handed out so far */
	uint8_t *first;                 /* caller storage, never freed */
	size_t first_size;
	struct xdr_arena_chunk *chunks; /* malloc'd chunks, newest first */
};

void xdr_arena_init(struct xdr_arena *a, void *buf, size_t size, size_t limit);
/* 8-byte aligned, zeroed memory; NULL when the limit would be passed. */
void *xdr_arena_alloc(struct xdr_arena *a, size_t n);
/* Forget every allocation; keep the first chunk, free the others. */
void xdr_arena_reset(struct xdr_arena *a);
void xdr_arena_release(struct xdr_arena *a);

/* --------------------------------------------------------- basic types */

/* opaque<> and string<>: points into the decoded buffer or caller memory. */
typedef struct xdr_opaque {
	uint32_t len;
	const uint8_t *val;
} xdr_opaque;
typedef xdr_opaque xdr_string; /* not NUL-terminated */

static inline xdr_opaque xdr_opaque_of(const void *p, size_t len)
{
	return (xdr_opaque){ .len = (uint32_t)len, .val = p };
}
static inline xdr_string xdr_string_of(const char *s)
{
	return (xdr_string){ .len = (uint32_t)strlen(s), .val = (const uint8_t *)s };
}
static inline bool xdr_opaque_eq(xdr_opaque a, xdr_opaque b)
{
	return a.len == b.len && (a.len == 0 || memcmp(a.val, b.val, a.len) == 0);
}

/* -------------------------------------------------------------- decoder */

struct xdr_dec {
	const uint8_t *p, *end;
	struct xdr_arena *arena;
	unsigned depth; /* optional-data nesting, see XDR_MAX_DEPTH */
};

static inline void xdr_dec_init(struct xdr_dec *d, const void *buf, size_t len,
				struct xdr_arena *arena)
{
	d->p = buf;
	d->end = d->p + len;
	d->arena = arena;
	d->depth = 0;
}

static inline size_t xdr_dec_left(const struct xdr_dec *d)
{
	return (size_t)(d->end - d->p);
}

static inline uint32_t xdr_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline void xdr_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline int xdr_dec_uint32(struct xdr_dec *d, uint32_t *v)
{
	if (xdr_dec_left(d) < 4)
		return -EBADMSG;
	*v = xdr_get32(d->p);
	d->p += 4;
	return 0;
}
static inline int xdr_dec_int32(struct xdr_dec *d, int32_t *v)
{
	return xdr_dec_uint32(d, (uint32_t *)v);
}
static inline int xdr_dec_uint64(struct xdr_dec *d, uint64_t *v)
{
	if (xdr_dec_left(d) < 8)
		return -EBADMSG;
	*v = (uint64_t)xdr_get32(d->p) << 32 | xdr_get32(d->p + 4);
	d->p += 8;
	return 0;
}
static inline int xdr_dec_int64(struct xdr_dec *d, int64_t *v)
{
	return xdr_dec_uint64(d, (uint64_t *)v);
}
/* RFC 4506 §4.4: only 0 and 1 are valid. */
static inline int xdr_dec_bool(struct xdr_dec *d, bool *v)
{
	uint32_t x;
	if (xdr_dec_uint32(d, &x) || x > 1)
		return -EBADMSG;
	*v = x;
	return 0;
}
/* Enumerations decode any value; unions and handlers judge validity. */
static inline int xdr_dec_enum(struct xdr_dec *d, int32_t *v)
{
	return xdr_dec_int32(d, v);
}
int xdr_dec_float(struct xdr_dec *d, float *v);
/* For procedures without arguments or results (xdr_proc_desc). */
int xdr_dec_void(struct xdr_dec *d, void *v);
int xdr_dec_double(struct xdr_dec *d, double *v);

/* Skip padding to the next 4-byte boundary; pad bytes must be zero. */
static inline int xdr_dec_pad(struct xdr_dec *d, uint32_t len)
{
	uint32_t pad = (4 - (len & 3)) & 3;
	if (xdr_dec_left(d) < pad)
		return -EBADMSG;
	for (uint32_t i = 0; i < pad; i++)
		if (d->p[i])
			return -EBADMSG;
	d->p += pad;
	return 0;
}
int xdr_dec_opaque_fixed(struct xdr_dec *d, uint8_t *dst, uint32_t len);
int xdr_dec_opaque(struct xdr_dec *d, xdr_opaque *o, uint32_t max);
int xdr_dec_string(struct xdr_dec *d, xdr_string *s, uint32_t max);
/* Array length prefix: checks max, and that count elements of at least
 * min_wire bytes each fit in what remains; allocates count * elem_size. */
int xdr_dec_array(struct xdr_dec *d, uint32_t *count, void **val, uint32_t max,
		  size_t elem_size, uint32_t min_wire);
void *xdr_dec_alloc(struct xdr_dec *d, size_t n);

/* -------------------------------------------------------------- encoder */

/*
 * Output is iov[0..niov).  Scratch space is [buf, buf + buf_size); when it
 * runs out and an arena is set, a new scratch chunk comes from the arena.
 * The first error sticks in 'err' and later calls do nothing, so callers may
 * check once at the end.
 */
struct xdr_enc {
	struct iovec *iov;
	unsigned niov, maxiov;
	uint8_t *buf;
	size_t buf_used, buf_size;
	struct xdr_arena *arena;
	size_t len; /* total bytes encoded */
	int err;
	/* an opaque whose bytes are here is referenced however short (a
	 * READ's data: a transport may move it by itself, nfsd_req_payload) */
	const void *ref_always;
};

void xdr_enc_init(struct xdr_enc *e, struct iovec *iov, unsigned maxiov, void *buf,
		  size_t buf_size, struct xdr_arena *arena);
/* Reserve n contiguous bytes (n <= 64 KiB) for direct writing or later patching. */
uint8_t *xdr_enc_reserve(struct xdr_enc *e, size_t n);
/* Append a reference to caller memory (kept until the message is sent). */
int xdr_enc_ref(struct xdr_enc *e, const void *p, size_t n);
/* Copy n bytes. */
int xdr_enc_bytes(struct xdr_enc *e, const void *p, size_t n);
/* Gather the output into one buffer of at least e->len bytes. */
void xdr_enc_flatten(const struct xdr_enc *e, void *dst);

static inline int xdr_enc_uint32(struct xdr_enc *e, uint32_t v)
{
	uint8_t *p = xdr_enc_reserve(e, 4);
	if (!p)
		return e->err;
	xdr_put32(p, v);
	return 0;
}
static inline int xdr_enc_int32(struct xdr_enc *e, int32_t v)
{
	return xdr_enc_uint32(e, (uint32_t)v);
}
static inline int xdr_enc_uint64(struct xdr_enc *e, uint64_t v)
{
	uint8_t *p = xdr_enc_reserve(e, 8);
	if (!p)
		return e->err;
	xdr_put32(p, (uint32_t)(v >> 32));
	xdr_put32(p + 4, (uint32_t)v);
	return 0;
}
static inline int xdr_enc_int64(struct xdr_enc *e, int64_t v)
{
	return xdr_enc_uint64(e, (uint64_t)v);
}
static inline int xdr_enc_bool(struct xdr_enc *e, bool v)
{
	return xdr_enc_uint32(e, v ? 1 : 0);
}
static inline int xdr_enc_enum(struct xdr_enc *e, int32_t v)
{
	return xdr_enc_int32(e, v);
}
/* Record an error; the first one sticks and is returned. */
static inline int xdr_enc_error(struct xdr_enc *e, int err)
{
	if (!e->err)
		e->err = err;
	return e->err;
}
/* Array length prefix: -EMSGSIZE when len > max (as for opaques). */
static inline int xdr_enc_array_len(struct xdr_enc *e, uint32_t len, uint32_t max)
{
	if (len > max)
		return xdr_enc_error(e, -EMSGSIZE);
	return xdr_enc_uint32(e, len);
}
int xdr_enc_void(struct xdr_enc *e, const void *v);
int xdr_enc_float(struct xdr_enc *e, float v);
int xdr_enc_double(struct xdr_enc *e, double v);
int xdr_enc_opaque_fixed(struct xdr_enc *e, const uint8_t *src, uint32_t len);
/* Fails with -EMSGSIZE when len > max: we never emit what we cannot decode. */
int xdr_enc_opaque(struct xdr_enc *e, const xdr_opaque *o, uint32_t max);
int xdr_enc_string(struct xdr_enc *e, const xdr_string *s, uint32_t max);
int xdr_enc_pad(struct xdr_enc *e, uint32_t len);

/* ---------------------------------------------- generated descriptors */

typedef int (*xdr_dec_fn)(struct xdr_dec *, void *);
typedef int (*xdr_enc_fn)(struct xdr_enc *, const void *);

/* One row per procedure of a program version, emitted by the generator. */
struct xdr_proc_desc {
	uint32_t proc;
	const char *name;
	size_t arg_size, res_size; /* 0 for void */
	xdr_dec_fn dec_arg, dec_res;
	xdr_enc_fn enc_arg, enc_res;
};

struct xdr_vers_desc {
	uint32_t prog, vers;
	const char *name;
	const struct xdr_proc_desc *procs; /* indexed by procedure number */
	uint32_t nprocs;                   /* highest procedure number + 1 */
};

#endif /* BRAID_NFSD_XDR_H */
