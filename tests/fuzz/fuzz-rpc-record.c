/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the record layer: the input is a byte stream delivered in
 * chunks whose sizes come from the input itself.  Invariants: every record
 * returned lies inside the bytes received, the parser never claims more
 * record bytes than arrived, and compaction (keep_from/shift) keeps it
 * consistent.  Each record's RPC header is then decoded as the server does.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nfsd/rec.h"
#include "nfsd/xdr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	uint32_t max = 1u + (uint32_t)data[0] * 97u;
	unsigned step = 1u + data[1];
	data += 2;
	size -= 2;
	uint8_t *buf = malloc(size + 1);
	struct nfsd_rec r;
	nfsd_rec_init(&r, max);
	size_t end = 0, fed = 0, got = 0;
	for (;;) {
		size_t off, len;
		int rc = nfsd_rec_next(&r, buf, end, &off, &len);
		if (rc < 0)
			break;
		if (rc == NFSD_REC_READY) {
			if (off > end || len > end - off || len > max)
				abort();
			got += len;
			if (got > fed)
				abort();
			struct xdr_dec d;
			uint32_t v;
			xdr_opaque o;
			xdr_dec_init(&d, buf + off, len, NULL);
			for (int i = 0; i < 6 && !xdr_dec_uint32(&d, &v); i++)
				;
			if (!xdr_dec_opaque(&d, &o, 400) && o.len && (o.val < buf || o.val + o.len > buf + end))
				abort();
			continue;
		}
		if (fed == size)
			break;
		/* compact like a connection does, then receive the next chunk */
		size_t keep = nfsd_rec_keep_from(&r);
		memmove(buf, buf + keep, end - keep);
		nfsd_rec_shift(&r, keep);
		end -= keep;
		size_t n = size - fed < step ? size - fed : step;
		memcpy(buf + end, data + fed, n);
		end += n;
		fed += n;
	}
	free(buf);
	return 0;
}
