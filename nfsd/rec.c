/* SPDX-License-Identifier: MIT */
#include "nfsd/rec.h"

#include <string.h>

#include "nfsd/xdr.h"

void nfsd_rec_init(struct nfsd_rec *r, uint32_t max_record)
{
	memset(r, 0, sizeof(*r));
	r->max_record = max_record;
}

int nfsd_rec_next(struct nfsd_rec *r, uint8_t *buf, size_t end, size_t *off, size_t *len)
{
	for (;;) {
		if (!r->in_frag) {
			if (end - r->scan < 4)
				return NFSD_REC_MORE;
			uint32_t mark = xdr_get32(buf + r->scan);
			uint32_t flen = mark & ~NFSD_REC_LAST;
			if (r->nfrags == 0) {
				r->rec_off = r->scan + 4;
				r->rec_len = 0;
			}
			if (++r->nfrags > NFSD_REC_MAX_FRAGS)
				return NFSD_REC_BADFRAG;
			if ((uint64_t)r->rec_len + flen > r->max_record)
				return NFSD_REC_TOOBIG;
			r->scan += 4;
			r->frag_left = flen;
			r->last = !!(mark & NFSD_REC_LAST);
			r->in_frag = 1;
		}
		size_t avail = end - r->scan;
		size_t n = avail < r->frag_left ? avail : r->frag_left;
		size_t dst = r->rec_off + r->rec_len;
		if (n && dst != r->scan)
			memmove(buf + dst, buf + r->scan, n); /* close the gap of a mark */
		r->scan += n;
		r->rec_len += n;
		r->frag_left -= (uint32_t)n;
		if (r->frag_left)
			return NFSD_REC_MORE;
		r->in_frag = 0;
		if (r->last) {
			*off = r->rec_off;
			*len = r->rec_len;
			r->nfrags = 0;
			r->last = 0;
			return NFSD_REC_READY;
		}
	}
}

size_t nfsd_rec_keep_from(const struct nfsd_rec *r)
{
	return r->nfrags ? r->rec_off : r->scan;
}

void nfsd_rec_shift(struct nfsd_rec *r, size_t n)
{
	r->scan -= n;
	if (r->nfrags)
		r->rec_off -= n;
}

size_t nfsd_rec_need(const struct nfsd_rec *r)
{
	if (!r->nfrags)
		return 4;
	/* assembled data, unparsed bytes that follow, the current fragment */
	size_t have = r->scan - r->rec_off;
	return have + (r->in_frag ? r->frag_left : 4);
}
