/* SPDX-License-Identifier: MIT */
/*
 * Where a file's bytes live: layout policies as plain C structs, with no
 * protocol in sight (mds/op_layout.c describes a segment of them as a
 * struct layout_segment that layout/flexfiles.c encodes, mds/data.c
 * records them in the metadata store).
 *
 * Every policy is a grid of segments over the file's offsets.  Segment n
 * is [n * S, (n + 1) * S) for a segment size S = 2^seg_shift, or the whole
 * file ([0, NFS4 "all")) when seg_shift is 0.  Each segment is held by
 * mirrors * stripes data servers, listed mirror by mirror:
 *
 *	slot(m, off) = m * stripes + (off / unit) % stripes
 *
 * is the data server of byte 'off' in mirror m (RFC 8435 §5.1: stripe
 * index from the file offset, not the segment's).  Every data server
 * keeps one object per file whose offsets are the file's (sparse), so one
 * object serves every segment and every mode.
 *
 * Modes (DESIGN.md, "Layouts"):
 *   LAYOUT_WHOLE     one segment [0, all) on mirrors data servers: each
 *                    file on one data server (per mirror), files spread by
 *                    free space.
 *   LAYOUT_SEGMENTS  a fixed grid (16 MiB by default); consecutive segments
 *                    go round-robin over a per-file set of 'width' data
 *                    servers.  One data server per mirror per segment, as
 *                    the Linux client before 6.18 requires.
 *   LAYOUT_STRIPED   RFC 8435 striping: 'stripes' data servers per mirror
 *                    with a stripe unit (clients from Linux 6.18); on a grid
 *                    or, with seg_shift 0, one segment.
 *
 * Erasure coding (ec_m > 0, on LAYOUT_SEGMENTS): the file is written as
 * segments ('mirrors' copies while hot), and once sealed each stripe of
 * ec_k consecutive segments gets ec_m Reed-Solomon parity chunks
 * (layout/ec.h) of one segment size each, on data servers that hold no
 * other chunk of the stripe (layout_ec_place).  Stripe s is segments
 * [s * k, (s + 1) * k); chunk j < k is segment s * k + j, held in the
 * file's object at the file's offsets; parity chunk r (chunk k + r) is in
 * the file's parity object (ctl/objid.h ds_objid_parity) at offset
 * s << seg_shift.  A file's set needs k + m data servers.
 *
 * Placement (layout_seg_place): the per-file set is chosen once, weighted
 * by free space; slot j of segment n goes to set[(n + j) % nset], so the
 * mirrors of a segment are distinct data servers whenever nset >= the
 * segment's width, and consecutive segments move round the set.  A data
 * server that cannot take the segment (down, draining, steered away from)
 * is replaced by the next usable one of the set, then by any usable one.
 *
 * Errors: 0 or -EINVAL (with a reason where a buffer is given); placement
 * -EAGAIN when not enough distinct data servers are usable.
 */
#ifndef BRAID_LAYOUT_POLICY_H
#define BRAID_LAYOUT_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum layout_mode {
	LAYOUT_WHOLE = 1,
	LAYOUT_SEGMENTS = 2,
	LAYOUT_STRIPED = 3,
};

#define LAYOUT_SEG_SHIFT_MIN  20 /* 1 MiB: a 1 MiB client RPC never straddles two */
#define LAYOUT_SEG_SHIFT_MAX  46 /* 64 TiB */
#define LAYOUT_SEG_SHIFT_DEF  24 /* 16 MiB */
#define LAYOUT_UNIT_SHIFT_MIN 12 /* 4 KiB */
#define LAYOUT_UNIT_SHIFT_MAX 30 /* 1 GiB */
#define LAYOUT_MIRRORS_MAX    8
#define LAYOUT_STRIPES_MAX    16
#define LAYOUT_SEG_DS_MAX     16	 /* mirrors * stripes: MDS_LAYOUT_MAX_DS */
#define LAYOUT_SET_MAX	      15	 /* data servers in one file's set */
#define LAYOUT_ALL	      UINT64_MAX /* length of the last (or only) segment */
#define LAYOUT_EC_K_MAX	      14	 /* data chunks per stripe (k + m <= LAYOUT_SET_MAX) */
#define LAYOUT_EC_M_MAX	      4		 /* parity chunks per stripe (layout/ec.h EC_M_MAX) */

struct layout_policy {
	uint8_t mode;	    /* enum layout_mode */
	uint8_t seg_shift;  /* 0: one segment for the whole file; else 20..46 */
	uint8_t mirrors;    /* 1..LAYOUT_MIRRORS_MAX */
	uint8_t width;	    /* data servers per file; 0: as many as are usable (at most 15) */
	uint8_t stripes;    /* data servers per mirror: 1, or 2..16 for LAYOUT_STRIPED */
	uint8_t unit_shift; /* LAYOUT_STRIPED: log2 of the stripe unit; else 0 */
	uint8_t ec_k;	    /* erasure coding: data chunks per stripe, 2..14; else 0 */
	uint8_t ec_m;	    /* erasure coding: parity chunks per stripe, 1..4; else 0 */
};

/* Whole file, one mirror: what a file with no recorded policy has. */
void layout_policy_default(struct layout_policy *p);
/* 0 when p is consistent (the ranges above, mirrors * stripes <= 16,
 * a set wide enough, the mode's shape); else -EINVAL and why. */
int layout_policy_check(const struct layout_policy *p, char *why, size_t whylen);

/*
 * The 32-bit form kept in the metadata store (a layout record's flags,
 * which store.h leaves to the layout layer):
 *
 *	bits  0-1   mode
 *	bits  2-7   seg_shift
 *	bits  8-10  mirrors - 1
 *	bits 11-14  width
 *	bits 15-18  stripes - 1
 *	bits 19-23  unit_shift
 *	bits 24-27  ec_k - 1 (0 unless erasure coded)
 *	bits 28-30  ec_m (0: not erasure coded)
 *	bit  31     1 (a policy, never the 0 of an unlabelled record)
 */
uint32_t layout_policy_encode(const struct layout_policy *p);
int layout_policy_decode(uint32_t v, struct layout_policy *p);

/*
 * Text, for settings and tools: a mode name then comma-separated options,
 *	whole[,mirrors=N]
 *	segments[,segment_size=16M][,width=N][,mirrors=N]
 *	striped,stripes=N[,stripe_unit=1M][,segment_size=S][,width=N][,mirrors=N]
 *	ec,k=K,m=M[,segment_size=16M][,width=N][,mirrors=N]
 * ("ec:k=4:m=2:segment_size=1M", with colons, is read as the same.)
 * Sizes take k, m, g, t suffixes (powers of 1024) and must be powers of two.
 */
int layout_policy_parse(const char *s, struct layout_policy *p, char *why, size_t whylen);
/* The same text back (at most 128 bytes with the NUL). */
void layout_policy_format(const struct layout_policy *p, char *buf, size_t len);

static inline bool layout_is_ec(const struct layout_policy *p)
{
	return p->ec_m != 0;
}

/* The erasure-coded stripe holding byte off (layout_is_ec). */
static inline uint64_t layout_ec_stripe(const struct layout_policy *p, uint64_t off)
{
	return (off >> p->seg_shift) / p->ec_k;
}

/* Data servers holding one segment: mirrors * stripes. */
static inline unsigned layout_seg_width(const struct layout_policy *p)
{
	return (unsigned)p->mirrors * p->stripes;
}

/* The segment holding byte off. */
static inline uint64_t layout_seg_index(const struct layout_policy *p, uint64_t off)
{
	return p->seg_shift ? off >> p->seg_shift : 0;
}

/* Segment n's range: *len is LAYOUT_ALL for the whole-file segment. */
void layout_seg_bounds(const struct layout_policy *p, uint64_t n, uint64_t *start, uint64_t *len);

/* Index into a segment's data servers of byte off in mirror m. */
static inline unsigned layout_ds_slot(const struct layout_policy *p, unsigned m, uint64_t off)
{
	unsigned s = p->stripes > 1 ? (unsigned)((off >> p->unit_shift) % p->stripes) : 0;
	return m * p->stripes + s;
}

/*
 * The end of the run of bytes from off that one data server per mirror
 * holds: the end of off's segment, and of its stripe unit when striped.
 * UINT64_MAX when nothing ends it.
 */
uint64_t layout_piece_end(const struct layout_policy *p, uint64_t off);

/* A data server placement may use, with its weight (free space). */
struct layout_cand {
	uint32_t id;
	uint64_t weight;
};

/* A random 64-bit number (placement spreads load by it). */
typedef uint64_t (*layout_rng_fn)(void *arg);

/*
 * The per-file set: k distinct data servers of cands[0..n) in a random
 * order weighted by weight (a heavier one is likelier to come early).
 * Returns how many were chosen (min(k, n)).
 */
unsigned layout_set_choose(const struct layout_cand *cands, unsigned n, unsigned k,
			   layout_rng_fn rng, void *rng_arg, uint32_t *out);

/* How wide a new file's set is: width, or every usable one, at most 15;
 * never less than a segment's width (0: not enough usable ones). */
unsigned layout_set_size(const struct layout_policy *p, unsigned nusable);

/*
 * The data servers of segment n (layout_seg_width(p) of them, into out):
 * slot j is set[(n + j) % nset] unless that one is not in usable[0..nu),
 * or is already in the segment; then the next member of the set that is,
 * then the usable one outside the set that weighs most.  -EAGAIN when
 * fewer distinct usable data servers exist than the segment needs.
 */
int layout_seg_place(const struct layout_policy *p, const uint32_t *set, unsigned nset, uint64_t n,
		     const struct layout_cand *usable, unsigned nu, uint32_t *out);

/*
 * The parity holders of erasure-coded stripe s (p->ec_m of them, into
 * out): data[0..nd) are the data servers holding the stripe's data chunks
 * (any mirror), which parity never shares.  Parity chunk r goes to
 * set[(s * k + k + r) % nset] unless that one is not usable or already in
 * the stripe; then the next member of the set that is, then the heaviest
 * usable data server outside the stripe.  -EAGAIN when fewer distinct
 * usable data servers exist than the stripe needs.
 */
int layout_ec_place(const struct layout_policy *p, const uint32_t *set, unsigned nset, uint64_t s,
		    const uint32_t *data, unsigned nd, const struct layout_cand *usable, unsigned nu,
		    uint32_t *out);

#endif
