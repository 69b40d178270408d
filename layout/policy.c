/* SPDX-License-Identifier: MIT */
/*
 * Layout policies: checks, the stored form, text, segment geometry and
 * placement (layout/policy.h).  Pure functions: no locks, no I/O.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout/policy.h"

static int why_set(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int why_set(char *why, size_t len, const char *fmt, ...)
{
	if (why && len) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

void layout_policy_default(struct layout_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->mode = LAYOUT_WHOLE;
	p->mirrors = 1;
	p->stripes = 1;
}

int layout_policy_check(const struct layout_policy *p, char *why, size_t whylen)
{
	if (p->mode < LAYOUT_WHOLE || p->mode > LAYOUT_STRIPED)
		return why_set(why, whylen, "unknown layout mode %u", p->mode);
	if (p->mirrors < 1 || p->mirrors > LAYOUT_MIRRORS_MAX)
		return why_set(why, whylen, "mirrors must be 1..%u", LAYOUT_MIRRORS_MAX);
	if (p->seg_shift &&
	    (p->seg_shift < LAYOUT_SEG_SHIFT_MIN || p->seg_shift > LAYOUT_SEG_SHIFT_MAX))
		return why_set(why, whylen, "segment size must be a power of two from 1M to 64T");
	if (p->width > LAYOUT_SET_MAX)
		return why_set(why, whylen, "width must be 0..%u", LAYOUT_SET_MAX);
	switch (p->mode) {
	case LAYOUT_WHOLE:
		if (p->seg_shift || p->stripes != 1 || p->unit_shift || p->width)
			return why_set(why, whylen, "whole-file placement takes only mirrors");
		break;
	case LAYOUT_SEGMENTS:
		if (!p->seg_shift)
			return why_set(why, whylen, "segment striping needs a segment size");
		if (p->stripes != 1 || p->unit_shift)
			return why_set(why, whylen,
				       "segment striping has one data server per mirror");
		break;
	case LAYOUT_STRIPED:
		if (p->stripes < 2 || p->stripes > LAYOUT_STRIPES_MAX)
			return why_set(why, whylen, "striping needs 2..%u stripes",
				       LAYOUT_STRIPES_MAX);
		if (p->unit_shift < LAYOUT_UNIT_SHIFT_MIN || p->unit_shift > LAYOUT_UNIT_SHIFT_MAX)
			return why_set(why, whylen,
				       "stripe unit must be a power of two from 4K to 1G");
		if (p->seg_shift && p->seg_shift < p->unit_shift)
			return why_set(why, whylen, "a segment must hold whole stripe units");
		break;
	}
	if (p->ec_k || p->ec_m) {
		if (p->mode != LAYOUT_SEGMENTS)
			return why_set(why, whylen, "erasure coding is on a segment grid");
		if (p->ec_k < 2 || p->ec_k > LAYOUT_EC_K_MAX)
			return why_set(why, whylen, "k must be 2..%u", LAYOUT_EC_K_MAX);
		if (p->ec_m < 1 || p->ec_m > LAYOUT_EC_M_MAX)
			return why_set(why, whylen, "m must be 1..%u", LAYOUT_EC_M_MAX);
		if (p->ec_k + p->ec_m > LAYOUT_SET_MAX)
			return why_set(why, whylen, "k + m must be at most %u", LAYOUT_SET_MAX);
		if (p->width && p->width < p->ec_k + p->ec_m)
			return why_set(why, whylen, "width %u is less than k + m (%u)", p->width,
				       p->ec_k + p->ec_m);
	}
	unsigned w = layout_seg_width(p);
	if (w > LAYOUT_SEG_DS_MAX)
		return why_set(why, whylen, "mirrors x stripes must be at most %u",
			       LAYOUT_SEG_DS_MAX);
	if (w > LAYOUT_SET_MAX)
		return why_set(why, whylen, "mirrors x stripes must be at most %u", LAYOUT_SET_MAX);
	if (p->width && p->width < w)
		return why_set(why, whylen, "width %u is less than mirrors x stripes (%u)",
			       p->width, w);
	return 0;
}

uint32_t layout_policy_encode(const struct layout_policy *p)
{
	return (uint32_t)(p->mode & 3) | (uint32_t)(p->seg_shift & 63) << 2 |
	       (uint32_t)((p->mirrors - 1) & 7) << 8 | (uint32_t)(p->width & 15) << 11 |
	       (uint32_t)((p->stripes - 1) & 15) << 15 | (uint32_t)(p->unit_shift & 31) << 19 |
	       (p->ec_m ? (uint32_t)((p->ec_k - 1) & 15) << 24 | (uint32_t)(p->ec_m & 7) << 28 : 0) |
	       1u << 31;
}

int layout_policy_decode(uint32_t v, struct layout_policy *p)
{
	if (!(v & 1u << 31) || (!(v >> 28 & 7) && (v & 0x0f000000u)))
		return -EINVAL;
	struct layout_policy q = {
	    .mode = (uint8_t)(v & 3),
	    .seg_shift = (uint8_t)(v >> 2 & 63),
	    .mirrors = (uint8_t)((v >> 8 & 7) + 1),
	    .width = (uint8_t)(v >> 11 & 15),
	    .stripes = (uint8_t)((v >> 15 & 15) + 1),
	    .unit_shift = (uint8_t)(v >> 19 & 31),
	    .ec_k = (uint8_t)(v >> 28 & 7 ? (v >> 24 & 15) + 1 : 0),
	    .ec_m = (uint8_t)(v >> 28 & 7),
	};
	if (layout_policy_check(&q, NULL, 0))
		return -EINVAL;
	*p = q;
	return 0;
}

/* "16M" -> 24; -1 for anything but a power of two. */
static int size_shift(const char *s, size_t len)
{
	uint64_t v = 0;
	size_t i = 0;
	while (i < len && s[i] >= '0' && s[i] <= '9') {
		if (v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(s[i++] - '0');
	}
	if (!i)
		return -1;
	int mult = 0;
	if (i < len) {
		switch (s[i++] | 0x20) {
		case 'k':
			mult = 10;
			break;
		case 'm':
			mult = 20;
			break;
		case 'g':
			mult = 30;
			break;
		case 't':
			mult = 40;
			break;
		default:
			return -1;
		}
		if (i < len)
			return -1;
	}
	if (!v || (v & (v - 1)))
		return -1;
	int sh = __builtin_ctzll(v) + mult;
	return sh > 62 ? -1 : sh;
}

static int small_int(const char *s, size_t len, unsigned max)
{
	unsigned v = 0;
	if (!len || len > 3)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	return v > max ? -1 : (int)v;
}

int layout_policy_parse(const char *s, struct layout_policy *p, char *why, size_t whylen)
{
	struct layout_policy q;
	layout_policy_default(&q);
	char colons[160];
	if (!strncmp(s, "ec:", 3) && strlen(s) < sizeof(colons)) {
		/* the "ec:k=4:m=2" spelling */
		strcpy(colons, s);
		for (char *c = colons; *c; c++)
			if (*c == ':')
				*c = ',';
		s = colons;
	}
	size_t n = strcspn(s, ",");
	if (n == 5 && !strncmp(s, "whole", 5))
		q.mode = LAYOUT_WHOLE;
	else if (n == 8 && !strncmp(s, "segments", 8)) {
		q.mode = LAYOUT_SEGMENTS;
		q.seg_shift = LAYOUT_SEG_SHIFT_DEF;
	} else if (n == 7 && !strncmp(s, "striped", 7)) {
		q.mode = LAYOUT_STRIPED;
		q.unit_shift = 20;
	} else if (n == 2 && !strncmp(s, "ec", 2)) {
		q.mode = LAYOUT_SEGMENTS;
		q.seg_shift = LAYOUT_SEG_SHIFT_DEF;
		q.ec_k = 4;
		q.ec_m = 2;
	} else
		return why_set(why, whylen, "\"%.*s\": layout is whole, segments, striped or ec",
			       (int)(n > 32 ? 32 : n), s);
	for (const char *o = s + n; *o;) {
		o++; /* the ',' */
		size_t len = strcspn(o, ",");
		const char *eq = memchr(o, '=', len);
		if (!eq)
			return why_set(why, whylen, "\"%.*s\": expected name=value",
				       (int)(len > 32 ? 32 : len), o);
		size_t kl = (size_t)(eq - o), vl = len - kl - 1;
		const char *v = eq + 1;
		int x = -1;
		if (kl == 12 && !strncmp(o, "segment_size", kl)) {
			if ((x = size_shift(v, vl)) >= 0)
				q.seg_shift = (uint8_t)x;
		} else if (kl == 11 && !strncmp(o, "stripe_unit", kl)) {
			if ((x = size_shift(v, vl)) >= 0)
				q.unit_shift = (uint8_t)x;
		} else if (kl == 7 && !strncmp(o, "mirrors", kl)) {
			if ((x = small_int(v, vl, 255)) >= 0)
				q.mirrors = (uint8_t)x;
		} else if (kl == 7 && !strncmp(o, "stripes", kl)) {
			if ((x = small_int(v, vl, 255)) >= 0)
				q.stripes = (uint8_t)x;
		} else if (kl == 1 && *o == 'k' && q.ec_m) {
			if ((x = small_int(v, vl, 255)) >= 0)
				q.ec_k = (uint8_t)x;
		} else if (kl == 1 && *o == 'm' && q.ec_m) {
			if ((x = small_int(v, vl, 255)) >= 0)
				q.ec_m = (uint8_t)x;
		} else if (kl == 5 && !strncmp(o, "width", kl)) {
			if ((x = small_int(v, vl, 255)) >= 0)
				q.width = (uint8_t)x;
		} else {
			return why_set(why, whylen, "unknown layout option \"%.*s\"",
				       (int)(kl > 32 ? 32 : kl), o);
		}
		if (x < 0)
			return why_set(why, whylen, "%.*s: \"%.*s\" is not a valid value",
				       (int)(kl > 32 ? 32 : kl), o, (int)(vl > 32 ? 32 : vl), v);
		o += len;
	}
	int rc = layout_policy_check(&q, why, whylen);
	if (!rc)
		*p = q;
	return rc;
}

/* 24 -> "16M" */
static void shift_text(unsigned sh, char *b, size_t len)
{
	static const char suffix[] = "KMGT";
	if (sh < 10) {
		snprintf(b, len, "%u", 1u << sh);
		return;
	}
	unsigned k = sh / 10 > 4 ? 4 : sh / 10;
	snprintf(b, len, "%llu%c", 1ull << (sh - 10 * k), suffix[k - 1]);
}

void layout_policy_format(const struct layout_policy *p, char *buf, size_t len)
{
	char seg[24], unit[24];
	shift_text(p->seg_shift, seg, sizeof(seg));
	shift_text(p->unit_shift, unit, sizeof(unit));
	switch (p->mode) {
	case LAYOUT_WHOLE:
		snprintf(buf, len, "whole,mirrors=%u", p->mirrors);
		break;
	case LAYOUT_SEGMENTS:
		if (p->ec_m)
			snprintf(buf, len, "ec,k=%u,m=%u,segment_size=%s,width=%u,mirrors=%u",
				 p->ec_k, p->ec_m, seg, p->width, p->mirrors);
		else
			snprintf(buf, len, "segments,segment_size=%s,width=%u,mirrors=%u", seg,
				 p->width, p->mirrors);
		break;
	case LAYOUT_STRIPED:
		if (p->seg_shift)
			snprintf(buf, len,
				 "striped,stripes=%u,stripe_unit=%s,segment_size=%s,width=%u,"
				 "mirrors=%u",
				 p->stripes, unit, seg, p->width, p->mirrors);
		else
			snprintf(buf, len, "striped,stripes=%u,stripe_unit=%s,width=%u,mirrors=%u",
				 p->stripes, unit, p->width, p->mirrors);
		break;
	default:
		snprintf(buf, len, "invalid");
	}
}

void layout_seg_bounds(const struct layout_policy *p, uint64_t n, uint64_t *start, uint64_t *len)
{
	if (!p->seg_shift) {
		*start = 0;
		*len = LAYOUT_ALL;
		return;
	}
	*start = n << p->seg_shift;
	*len = 1ull << p->seg_shift;
}

uint64_t layout_piece_end(const struct layout_policy *p, uint64_t off)
{
	uint64_t end = UINT64_MAX;
	if (p->seg_shift) {
		uint64_t s = (off >> p->seg_shift) + 1;
		if (s < 1ull << (64 - p->seg_shift))
			end = s << p->seg_shift;
	}
	if (p->stripes > 1) {
		uint64_t u = (off >> p->unit_shift) + 1;
		if (u < 1ull << (64 - p->unit_shift) && u << p->unit_shift < end)
			end = u << p->unit_shift;
	}
	return end;
}

unsigned layout_set_choose(const struct layout_cand *cands, unsigned n, unsigned k,
			   layout_rng_fn rng, void *rng_arg, uint32_t *out)
{
	/* weighted sampling without replacement: each draw picks among those
	 * left in proportion to weight + 1 (a full data server still counts) */
	bool taken[256] = {false};
	unsigned got = 0;
	if (n > 256)
		n = 256;
	while (got < k && got < n) {
		uint64_t total = 0;
		for (unsigned i = 0; i < n; i++)
			if (!taken[i])
				total += (cands[i].weight >> 20) + 1; /* MiB: no overflow */
		uint64_t pick = rng(rng_arg) % total;
		for (unsigned i = 0; i < n; i++) {
			if (taken[i])
				continue;
			uint64_t w = (cands[i].weight >> 20) + 1;
			if (pick < w) {
				taken[i] = true;
				out[got++] = cands[i].id;
				break;
			}
			pick -= w;
		}
	}
	return got;
}

unsigned layout_set_size(const struct layout_policy *p, unsigned nusable)
{
	unsigned w = layout_seg_width(p);
	if (p->ec_m && p->ec_k + p->ec_m > w)
		w = p->ec_k + p->ec_m; /* room for every chunk of a stripe */
	unsigned want = p->mode == LAYOUT_WHOLE ? w : p->width ? p->width : nusable;
	if (want > LAYOUT_SET_MAX)
		want = LAYOUT_SET_MAX;
	if (want > nusable)
		want = nusable;
	return want < w ? 0 : want;
}

static bool in(const uint32_t *v, unsigned n, uint32_t id)
{
	for (unsigned i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

static bool usable_has(const struct layout_cand *u, unsigned nu, uint32_t id)
{
	for (unsigned i = 0; i < nu; i++)
		if (u[i].id == id)
			return true;
	return false;
}

int layout_seg_place(const struct layout_policy *p, const uint32_t *set, unsigned nset, uint64_t n,
		     const struct layout_cand *usable, unsigned nu, uint32_t *out)
{
	unsigned w = layout_seg_width(p);
	for (unsigned j = 0; j < w; j++) {
		bool found = false;
		/* the set, starting at this slot's round-robin position */
		for (unsigned k = 0; k < nset && !found; k++) {
			uint32_t id = set[(unsigned)((n + j + k) % nset)];
			if (usable_has(usable, nu, id) && !in(out, j, id)) {
				out[j] = id;
				found = true;
			}
		}
		/* then the heaviest usable data server outside the segment */
		const struct layout_cand *best = NULL;
		for (unsigned i = 0; i < nu && !found; i++)
			if (!in(out, j, usable[i].id) && (!best || usable[i].weight > best->weight))
				best = &usable[i];
		if (!found && !best)
			return -EAGAIN;
		if (!found)
			out[j] = best->id;
	}
	return 0;
}

int layout_ec_place(const struct layout_policy *p, const uint32_t *set, unsigned nset, uint64_t s,
		    const uint32_t *data, unsigned nd, const struct layout_cand *usable, unsigned nu,
		    uint32_t *out)
{
	for (unsigned r = 0; r < p->ec_m; r++) {
		bool found = false;
		uint64_t base = s * p->ec_k + p->ec_k + r;
		for (unsigned j = 0; j < nset && !found; j++) {
			uint32_t id = set[(unsigned)((base + j) % nset)];
			if (usable_has(usable, nu, id) && !in(data, nd, id) && !in(out, r, id)) {
				out[r] = id;
				found = true;
			}
		}
		const struct layout_cand *best = NULL;
		for (unsigned i = 0; i < nu && !found; i++)
			if (!in(data, nd, usable[i].id) && !in(out, r, usable[i].id) &&
			    (!best || usable[i].weight > best->weight))
				best = &usable[i];
		if (!found && !best)
			return -EAGAIN;
		if (!found)
			out[r] = best->id;
	}
	return 0;
}
