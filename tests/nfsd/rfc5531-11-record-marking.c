/* SPDX-License-Identifier: MIT */
/*
 * RFC 5531 §11 record marking, parsed in place: single and multi-fragment
 * records, byte-at-a-time arrival, zero-length fragments, records over the
 * limit and too many fragments.  Unit tier: no sockets.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nfsd/rec.h"
#include "nfsd/xdr.h"
#include "tests/check.h"

/* Append a record split into fragments of at most 'frag' bytes. */
static size_t put_record(uint8_t *out, const uint8_t *data, size_t len, size_t frag)
{
	size_t o = 0, i = 0;
	do {
		size_t n = len - i < frag ? len - i : frag;
		bool last = i + n == len;
		xdr_put32(out + o, (last ? NFSD_REC_LAST : 0) | (uint32_t)n);
		memcpy(out + o + 4, data + i, n);
		o += 4 + n;
		i += n;
	} while (i < len);
	return o;
}

/* Feed 'stream' in chunks of 'step' bytes; collect records into out. */
static int parse_all(uint8_t *stream, size_t total, size_t step, uint32_t max,
		     uint8_t **recs, size_t *lens, int maxrecs)
{
	struct nfsd_rec r;
	nfsd_rec_init(&r, max);
	size_t end = 0;
	int n = 0;
	while (end < total || 1) {
		size_t off, len;
		int rc = nfsd_rec_next(&r, stream, end, &off, &len);
		if (rc < 0)
			return rc;
		if (rc == NFSD_REC_READY) {
			CHECK(n < maxrecs);
			recs[n] = malloc(len ? len : 1);
			memcpy(recs[n], stream + off, len);
			lens[n++] = len;
			continue;
		}
		if (end == total)
			break;
		end = end + step < total ? end + step : total;
	}
	return n;
}

int main(void)
{
	static uint8_t data[3][70000], stream[300000];
	size_t dlen[3] = { 0, 1, 70000 };
	for (int k = 0; k < 3; k++)
		for (size_t i = 0; i < dlen[k]; i++)
			data[k][i] = (uint8_t)(i * 7 + k);
	size_t frags[] = { 1, 3, 4, 1000, 100000 };
	size_t steps[] = { 1, 2, 5, 4096, 300000 };
	for (unsigned f = 0; f < 5; f++) {
		for (unsigned s = 0; s < 5; s++) {
			if (frags[f] == 1 && steps[s] == 1)
				continue; /* 70000 one-byte fragments exceed the cap */
			size_t total = 0;
			for (int k = 0; k < 3; k++)
				total += put_record(stream + total, data[k], dlen[k],
						    k == 2 && frags[f] < 100 ? 100 : frags[f]);
			uint8_t *recs[8];
			size_t lens[8];
			int n = parse_all(stream, total, steps[s], 1 << 20, recs, lens, 8);
			CHECK_EQ(n, 3);
			for (int k = 0; k < 3; k++) {
				CHECK_EQ(lens[k], dlen[k]);
				CHECK(memcmp(recs[k], data[k], dlen[k]) == 0);
				free(recs[k]);
			}
		}
	}

	/* Zero-length non-last fragments are legal. */
	size_t o = 0;
	xdr_put32(stream + o, 0);
	o += 4;
	xdr_put32(stream + o, 0);
	o += 4;
	o += put_record(stream + o, data[2], 10, 10);
	uint8_t *recs[4];
	size_t lens[4];
	CHECK_EQ(parse_all(stream, o, 3, 1 << 20, recs, lens, 4), 1);
	CHECK_EQ(lens[0], 10u);
	free(recs[0]);

	/* Over the limit: rejected at the fragment header, before any data. */
	o = put_record(stream, data[2], 1001, 1001);
	CHECK_EQ(parse_all(stream, 4, 4, 1000, recs, lens, 4), NFSD_REC_TOOBIG);
	/* ... also when the fragments only add up to too much. */
	o = put_record(stream, data[2], 1001, 100);
	CHECK_EQ(parse_all(stream, o, 7, 1000, recs, lens, 4), NFSD_REC_TOOBIG);
	/* A hostile 0x7fffffff fragment. */
	xdr_put32(stream, 0xffffffffu);
	CHECK_EQ(parse_all(stream, 4, 4, 1 << 20, recs, lens, 4), NFSD_REC_TOOBIG);

	/* Endless empty fragments are cut off. */
	for (unsigned i = 0; i <= NFSD_REC_MAX_FRAGS; i++)
		xdr_put32(stream + 4 * i, 0);
	CHECK_EQ(parse_all(stream, 4 * (NFSD_REC_MAX_FRAGS + 1), 64, 1 << 20, recs, lens, 4),
		 NFSD_REC_BADFRAG);

	/* keep_from / shift: a partial record survives compaction. */
	struct nfsd_rec r;
	nfsd_rec_init(&r, 1 << 20);
	o = put_record(stream, data[1], 1, 1);
	size_t o2 = put_record(stream + o, data[2], 5000, 1000);
	size_t off, len;
	CHECK_EQ(nfsd_rec_next(&r, stream, o + 2500, &off, &len), NFSD_REC_READY);
	CHECK_EQ(nfsd_rec_next(&r, stream, o + 2500, &off, &len), NFSD_REC_MORE);
	size_t keep = nfsd_rec_keep_from(&r);
	CHECK_EQ(keep, o + 4);
	CHECK(nfsd_rec_need(&r) > 2500 - 8);
	memmove(stream, stream + keep, o + o2 - keep);
	nfsd_rec_shift(&r, keep);
	CHECK_EQ(nfsd_rec_next(&r, stream, o + o2 - keep, &off, &len), NFSD_REC_READY);
	CHECK_EQ(len, 5000u);
	CHECK(memcmp(stream + off, data[2], 5000) == 0);
	printf("rfc5531-11-record-marking: ok\n");
	return 0;
}
