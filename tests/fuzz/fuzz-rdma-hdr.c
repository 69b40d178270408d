/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for RPC-over-RDMA version 1 headers from a peer
 * (nfsd/rdma_hdr.c, what nfsd/rdma.c decodes every received message
 * with).  Invariants: no crash and no read outside the input; a header
 * taken as a call has its length inside the input, at most RDMA_MAX_SEGS
 * segments per list and RDMA_MAX_WCH write chunks whose segments lie
 * within the decoded ones, read positions multiples of 4 in order (zero
 * exactly for RDMA_NOMSG), and an RDMA_NOMSG with a read chunk.  The
 * seeds are calls of each shape the Linux client sends.
 */
#include <stdlib.h>
#include <string.h>

#include "nfsd/rdma_hdr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t braid_fuzz_seed(uint64_t seed, uint8_t *buf, size_t cap);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rdma_hdr h;
	size_t hl = 0;
	/* a copy of exactly size bytes: ASan sees any read past it */
	uint8_t *p = malloc(size ? size : 1);
	if (!p)
		return 0;
	memcpy(p, data, size);
	int r = rdma_hdr_decode(p, size, &h, &hl);
	if (r == 0) {
		if (hl > size || hl < 28 || h.vers != 1)
			abort();
		if (h.proc != RDMA_MSG && h.proc != RDMA_NOMSG)
			abort();
		if (h.nread > RDMA_MAX_SEGS || h.nwch > RDMA_MAX_WCH || h.nreply > RDMA_MAX_SEGS)
			abort();
		if (h.proc == RDMA_NOMSG && !h.nread)
			abort();
		for (unsigned i = 0; i < h.nread; i++)
			if ((h.read_pos[i] & 3) || (i && h.read_pos[i] < h.read_pos[i - 1]) ||
			    (h.read_pos[i] == 0) != (h.proc == RDMA_NOMSG))
				abort();
		unsigned segs = 0;
		for (unsigned k = 0; k < h.nwch; k++) {
			if (h.wch[k].first != segs || h.wch[k].n > RDMA_MAX_SEGS - segs)
				abort();
			segs += h.wch[k].n;
		}
	} else if (r != RDMA_DECODE_SHORT && r != RDMA_DECODE_VERS && r != RDMA_DECODE_ERRMSG &&
		   r != RDMA_DECODE_BAD) {
		abort();
	}
	free(p);
	return 0;
}

static uint8_t *put(uint8_t *p, uint32_t v)
{
	return rdma_hdr_put32(p, v);
}

/* seeds: a plain call, a WRITE (read chunk), a READ (write chunk), a
 * READDIR (reply chunk), a long call (RDMA_NOMSG), an error */
size_t braid_fuzz_seed(uint64_t seed, uint8_t *buf, size_t cap)
{
	if (cap < 256)
		return 0;
	unsigned kind = (unsigned)(seed % 6);
	struct rdma_seg sg = { (uint32_t)seed | 1, 4096 << (seed % 8), seed << 12 };
	uint8_t *p = rdma_hdr_put_fixed(buf, (uint32_t)(seed >> 8), 128,
					kind == 4 ? RDMA_NOMSG : kind == 5 ? RDMA_ERROR : RDMA_MSG);
	if (kind == 5)
		return (size_t)(put(p, RDMA_ERR_CHUNK) - buf);
	if (kind == 1 || kind == 4) {
		p = put(p, 1);
		p = put(p, kind == 4 ? 0 : 132);
		p = rdma_hdr_put_seg(p, &sg);
	}
	p = put(p, 0);
	if (kind == 2) {
		p = put(p, 1);
		p = put(p, 2);
		p = rdma_hdr_put_seg(p, &sg);
		p = rdma_hdr_put_seg(p, &sg);
	}
	p = put(p, 0);
	if (kind == 3 || kind == 4) {
		p = put(p, 1);
		p = put(p, 1);
		p = rdma_hdr_put_seg(p, &sg);
	} else {
		p = put(p, 0);
	}
	if (kind != 4)
		for (int i = 0; i < 40; i++)
			p = put(p, (uint32_t)(seed * 7 + (uint64_t)i));
	return (size_t)(p - buf);
}
