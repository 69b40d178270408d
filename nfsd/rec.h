/* SPDX-License-Identifier: MIT */
/*
 * RFC 5531 §11 record marking over a byte stream, reassembled in place.
 *
 * The caller owns a buffer holding received bytes [0, end).  nfsd_rec_next()
 * parses from the cursor, moving the data of later fragments down so that a
 * record's fragments become one contiguous run (a single-fragment record is
 * never moved).  No allocation; every length is checked against max_record.
 */
#ifndef BRAID_NFSD_REC_H
#define BRAID_NFSD_REC_H

#include <stddef.h>
#include <stdint.h>

#define NFSD_REC_LAST 0x80000000u
#define NFSD_REC_MAX_FRAGS 1024u /* fragments per record */

struct nfsd_rec {
	uint32_t max_record; /* record bytes (without marks) allowed */
	size_t scan;         /* next unparsed byte */
	size_t rec_off;      /* where the current record's data starts */
	size_t rec_len;      /* record bytes assembled so far */
	uint32_t frag_left;  /* bytes of the current fragment not yet seen */
	unsigned nfrags;
	int in_frag, last;
};

enum nfsd_rec_result {
	NFSD_REC_MORE = 0,    /* need more bytes */
	NFSD_REC_READY = 1,   /* *off, *len name a complete record */
	NFSD_REC_TOOBIG = -1, /* record exceeds max_record: drop the connection */
	NFSD_REC_BADFRAG = -2 /* too many fragments */
};

void nfsd_rec_init(struct nfsd_rec *r, uint32_t max_record);
/* Parse buf[scan, end).  On READY the record is buf[*off, *off + *len). */
int nfsd_rec_next(struct nfsd_rec *r, uint8_t *buf, size_t end, size_t *off, size_t *len);
/*
 * First byte still needed by the parser (the start of a partial record, or
 * the cursor): the caller may discard everything before it and call
 * nfsd_rec_shift() with the number of bytes it dropped from the front.
 */
size_t nfsd_rec_keep_from(const struct nfsd_rec *r);
void nfsd_rec_shift(struct nfsd_rec *r, size_t n);
/* Bytes the caller's buffer must hold from keep_from to finish this record. */
size_t nfsd_rec_need(const struct nfsd_rec *r);

#endif
