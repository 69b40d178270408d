/* SPDX-License-Identifier: MIT */
/*
 * XDR runtime: the arena, the out-of-line decode and encode primitives, and
 * the helpers generated code links against.  See nfsd/xdr.h for the contract.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nfsd/xdr.h"

/* ---------------------------------------------------------------- arena */

/* A malloc'd chunk; its data follows the header, 8-byte aligned. */
struct xdr_arena_chunk {
	struct xdr_arena_chunk *next;
	size_t size;
};

/* Default size of a malloc'd chunk; bigger requests get a chunk of their own. */
#define XDR_ARENA_CHUNK 16384u
#define XDR_ENC_SCRATCH 4096u
/* Later scratch chunks grow with the message up to this, so a long run of
 * small items (a READDIR reply) takes a few iovecs, not one per 4 KiB. */
#define XDR_ENC_SCRATCH_MAX 65536u

static size_t xdr_align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

static void xdr_arena_free_chunks(struct xdr_arena *a)
{
	struct xdr_arena_chunk *c = a->chunks, *next;

	for (; c; c = next) {
		next = c->next;
		free(c);
	}
	a->chunks = NULL;
}

/* Point the arena back at its first chunk, aligned to 8 bytes. */
static void xdr_arena_rewind(struct xdr_arena *a)
{
	uintptr_t off = a->first ? (-(uintptr_t)a->first) & 7 : 0;

	if (!a->first || a->first_size < off) {
		a->base = NULL;
		a->size = 0;
	} else {
		a->base = a->first + off;
		a->size = (a->first_size - off) & ~(size_t)7;
	}
	a->used = 0;
	a->total = 0;
}

void xdr_arena_init(struct xdr_arena *a, void *buf, size_t size, size_t limit)
{
	a->first = buf;
	a->first_size = buf ? size : 0;
	a->limit = limit;
	a->chunks = NULL;
	xdr_arena_rewind(a);
}

void *xdr_arena_alloc(struct xdr_arena *a, size_t n)
{
	uint8_t *p;

	/* Zero-byte requests still get a distinct, valid pointer. */
	if (n == 0)
		n = 1;
	if (n > SIZE_MAX - 7)
		return NULL;
	n = xdr_align8(n);
	/* Invariant: total <= limit. */
	if (n > a->limit - a->total)
		return NULL;
	if (a->size - a->used < n) {
		size_t csize = XDR_ARENA_CHUNK, room = a->limit - a->total;
		struct xdr_arena_chunk *c;

		/* Never malloc much beyond what the limit still allows. */
		if (csize > room)
			csize = xdr_align8(room);
		if (csize < n)
			csize = n;
		if (csize > SIZE_MAX - sizeof(*c))
			return NULL;
		c = malloc(sizeof(*c) + csize);
		if (!c)
			return NULL;
		c->next = a->chunks;
		c->size = csize;
		a->chunks = c;
		a->base = (uint8_t *)(c + 1);
		a->size = csize;
		a->used = 0;
	}
	p = a->base + a->used;
	a->used += n;
	a->total += n;
	memset(p, 0, n);
	return p;
}

void xdr_arena_reset(struct xdr_arena *a)
{
	xdr_arena_free_chunks(a);
	xdr_arena_rewind(a);
}

void xdr_arena_release(struct xdr_arena *a)
{
	xdr_arena_free_chunks(a);
	a->first = NULL;
	a->first_size = 0;
	xdr_arena_rewind(a);
}

/* -------------------------------------------------------------- decoder */

int xdr_dec_void(struct xdr_dec *d, void *v)
{
	(void)d;
	(void)v;
	return 0;
}

int xdr_dec_float(struct xdr_dec *d, float *v)
{
	uint32_t x;
	int err = xdr_dec_uint32(d, &x);

	if (err)
		return err;
	memcpy(v, &x, sizeof(*v));
	return 0;
}

int xdr_dec_double(struct xdr_dec *d, double *v)
{
	uint64_t x;
	int err = xdr_dec_uint64(d, &x);

	if (err)
		return err;
	memcpy(v, &x, sizeof(*v));
	return 0;
}

int xdr_dec_opaque_fixed(struct xdr_dec *d, uint8_t *dst, uint32_t len)
{
	if (xdr_dec_left(d) < len)
		return -EBADMSG;
	if (len)
		memcpy(dst, d->p, len);
	d->p += len;
	return xdr_dec_pad(d, len);
}

int xdr_dec_opaque(struct xdr_dec *d, xdr_opaque *o, uint32_t max)
{
	uint32_t len;

	if (xdr_dec_uint32(d, &len))
		return -EBADMSG;
	if (len > max || len > xdr_dec_left(d))
		return -EBADMSG;
	o->len = len;
	o->val = d->p;
	d->p += len;
	return xdr_dec_pad(d, len);
}

int xdr_dec_string(struct xdr_dec *d, xdr_string *s, uint32_t max)
{
	return xdr_dec_opaque(d, s, max);
}

int xdr_dec_array(struct xdr_dec *d, uint32_t *count, void **val, uint32_t max,
		  size_t elem_size, uint32_t min_wire)
{
	uint32_t n;
	void *p;

	if (xdr_dec_uint32(d, &n))
		return -EBADMSG;
	if (n > max)
		return -EBADMSG;
	/* Each element takes at least min_wire bytes: no count past the data. */
	if (min_wire && n > xdr_dec_left(d) / min_wire)
		return -EBADMSG;
	if (n == 0) {
		*count = 0;
		*val = NULL;
		return 0;
	}
	if (elem_size && n > SIZE_MAX / elem_size)
		return -ENOMEM;
	p = xdr_dec_alloc(d, (size_t)n * elem_size);
	if (!p)
		return -ENOMEM;
	*count = n;
	*val = p;
	return 0;
}

void *xdr_dec_alloc(struct xdr_dec *d, size_t n)
{
	if (!d->arena)
		return NULL;
	return xdr_arena_alloc(d->arena, n);
}

/* -------------------------------------------------------------- encoder */

void xdr_enc_init(struct xdr_enc *e, struct iovec *iov, unsigned maxiov, void *buf,
		  size_t buf_size, struct xdr_arena *arena)
{
	e->iov = iov;
	e->niov = 0;
	e->maxiov = maxiov;
	e->buf = buf;
	e->buf_used = 0;
	e->buf_size = buf ? buf_size : 0;
	e->arena = arena;
	e->len = 0;
	e->err = 0;
	e->ref_always = NULL;
}

int xdr_enc_void(struct xdr_enc *e, const void *v)
{
	(void)v;
	return e->err;
}

/* Append [p, p + n) to the iovec list, merging with the last one if adjacent. */
static int xdr_enc_append(struct xdr_enc *e, const void *p, size_t n)
{
	struct iovec *last = e->niov ? &e->iov[e->niov - 1] : NULL;

	if (last && (const uint8_t *)last->iov_base + last->iov_len == (const uint8_t *)p) {
		last->iov_len += n;
	} else {
		if (e->niov >= e->maxiov)
			return xdr_enc_error(e, -ENOBUFS);
		e->iov[e->niov].iov_base = (void *)p;
		e->iov[e->niov].iov_len = n;
		e->niov++;
	}
	e->len += n;
	return 0;
}

uint8_t *xdr_enc_reserve(struct xdr_enc *e, size_t n)
{
	uint8_t *p;

	if (e->err)
		return NULL;
	if (n > 65536) {
		xdr_enc_error(e, -EINVAL);
		return NULL;
	}
	if (!e->buf || e->buf_size - e->buf_used < n) {
		size_t size = XDR_ENC_SCRATCH;
		while (size < XDR_ENC_SCRATCH_MAX && size < e->len)
			size *= 2;
		if (size < n)
			size = n;
		uint8_t *buf = e->arena ? xdr_arena_alloc(e->arena, size) : NULL;

		if (!buf) {
			xdr_enc_error(e, -ENOBUFS);
			return NULL;
		}
		e->buf = buf;
		e->buf_size = size;
		e->buf_used = 0;
	}
	p = e->buf + e->buf_used;
	if (n && xdr_enc_append(e, p, n))
		return NULL;
	e->buf_used += n;
	return p;
}

int xdr_enc_ref(struct xdr_enc *e, const void *p, size_t n)
{
	if (e->err)
		return e->err;
	if (n == 0)
		return 0;
	return xdr_enc_append(e, p, n);
}

int xdr_enc_bytes(struct xdr_enc *e, const void *p, size_t n)
{
	const uint8_t *src = p;

	while (n) {
		size_t k = n > 65536 ? 65536 : n;
		uint8_t *dst = xdr_enc_reserve(e, k);

		if (!dst)
			return e->err;
		memcpy(dst, src, k);
		src += k;
		n -= k;
	}
	return e->err;
}

void xdr_enc_flatten(const struct xdr_enc *e, void *dst)
{
	uint8_t *out = dst;

	for (unsigned i = 0; i < e->niov; i++) {
		if (e->iov[i].iov_len)
			memcpy(out, e->iov[i].iov_base, e->iov[i].iov_len);
		out += e->iov[i].iov_len;
	}
}

int xdr_enc_float(struct xdr_enc *e, float v)
{
	uint32_t x;

	memcpy(&x, &v, sizeof(x));
	return xdr_enc_uint32(e, x);
}

int xdr_enc_double(struct xdr_enc *e, double v)
{
	uint64_t x;

	memcpy(&x, &v, sizeof(x));
	return xdr_enc_uint64(e, x);
}

int xdr_enc_pad(struct xdr_enc *e, uint32_t len)
{
	uint32_t pad = (4 - (len & 3)) & 3;
	uint8_t *p;

	if (!pad)
		return e->err;
	p = xdr_enc_reserve(e, pad);
	if (!p)
		return e->err;
	memset(p, 0, pad);
	return 0;
}

/* Bytes and padding: copied when small, referenced from XDR_REF_MIN up. */
static int xdr_enc_body(struct xdr_enc *e, const uint8_t *src, uint32_t len, uint32_t prefix)
{
	uint32_t pad = (4 - (len & 3)) & 3;
	uint8_t *p;

	if (len >= XDR_REF_MIN || (len && src == e->ref_always)) {
		if (prefix) {
			p = xdr_enc_reserve(e, 4);
			if (!p)
				return e->err;
			xdr_put32(p, len);
		}
		if (xdr_enc_ref(e, src, len))
			return e->err;
		return xdr_enc_pad(e, len);
	}
	if (!prefix && !len)
		return 0;
	p = xdr_enc_reserve(e, (prefix ? 4 : 0) + (size_t)len + pad);
	if (!p)
		return e->err;
	if (prefix) {
		xdr_put32(p, len);
		p += 4;
	}
	if (len)
		memcpy(p, src, len);
	memset(p + len, 0, pad);
	return 0;
}

int xdr_enc_opaque_fixed(struct xdr_enc *e, const uint8_t *src, uint32_t len)
{
	if (e->err)
		return e->err;
	return xdr_enc_body(e, src, len, 0);
}

int xdr_enc_opaque(struct xdr_enc *e, const xdr_opaque *o, uint32_t max)
{
	if (e->err)
		return e->err;
	if (o->len > max)
		return xdr_enc_error(e, -EMSGSIZE);
	return xdr_enc_body(e, o->val, o->len, 1);
}

int xdr_enc_string(struct xdr_enc *e, const xdr_string *s, uint32_t max)
{
	return xdr_enc_opaque(e, s, max);
}
