/* SPDX-License-Identifier: MIT */
/*
 * The RPC-over-RDMA version 1 header decoder (nfsd/rdma_hdr.c) against
 * RFC 8166 §4: a call with every list decodes field by field; each limit
 * and each malformation the transport must answer with ERR_CHUNK or
 * ERR_VERS is refused with the right result; a header cut short at every
 * byte is refused; the headers we send (RDMA_ERROR, RFC 8797's private
 * message) have the RFC's bytes.
 */
#include <string.h>

#include "nfsd/rdma_hdr.h"
#include "tests/check.h"

struct w {
	uint8_t b[8192];
	size_t n;
};

static void p32(struct w *w, uint32_t v)
{
	rdma_hdr_put32(w->b + w->n, v);
	w->n += 4;
}

static void pseg(struct w *w, uint32_t h, uint32_t len, uint64_t off)
{
	p32(w, h);
	p32(w, len);
	p32(w, (uint32_t)(off >> 32));
	p32(w, (uint32_t)off);
}

static void fixed(struct w *w, uint32_t xid, uint32_t vers, uint32_t proc)
{
	w->n = 0;
	p32(w, xid);
	p32(w, vers);
	p32(w, 32);
	p32(w, proc);
}

static int dec(const struct w *w, struct rdma_hdr *h, size_t *hl)
{
	return rdma_hdr_decode(w->b, w->n, h, hl);
}

/* a call with every list: reads at 100 (2 segments) and 200, one write
 * chunk of 3 segments, a reply chunk of 2; then 12 bytes of RPC message */
static void full_call(struct w *w)
{
	fixed(w, 0x11223344, 1, RDMA_MSG);
	p32(w, 1), p32(w, 100), pseg(w, 7, 4096, 0x100000000ull);
	p32(w, 1), p32(w, 100), pseg(w, 8, 100, 0x2000);
	p32(w, 1), p32(w, 200), pseg(w, 9, 5, 0x3000);
	p32(w, 0);
	p32(w, 1), p32(w, 3);
	pseg(w, 10, 65536, 1), pseg(w, 11, 65536, 2), pseg(w, 12, 1, 3);
	p32(w, 0);
	p32(w, 1), p32(w, 2), pseg(w, 13, 2048, 4), pseg(w, 14, 2048, 5);
	p32(w, 0xaaaaaaaa), p32(w, 0), p32(w, 0);
}

int main(void)
{
	static struct w w;
	static struct rdma_hdr h;
	size_t hl = 0;

	full_call(&w);
	CHECK_EQ(dec(&w, &h, &hl), 0);
	CHECK_EQ(hl, w.n - 12);
	CHECK_EQ(h.xid, 0x11223344);
	CHECK_EQ(h.credits, 32);
	CHECK_EQ(h.proc, RDMA_MSG);
	CHECK_EQ(h.nread, 3);
	CHECK_EQ(h.read_pos[0], 100);
	CHECK_EQ(h.read_pos[2], 200);
	CHECK_EQ(h.read[0].handle, 7);
	CHECK_EQ(h.read[0].length, 4096);
	CHECK(h.read[0].offset == 0x100000000ull);
	CHECK_EQ(h.read[1].length, 100);
	CHECK_EQ(h.nwch, 1);
	CHECK_EQ(h.wch[0].first, 0);
	CHECK_EQ(h.wch[0].n, 3);
	CHECK_EQ(h.wseg[2].handle, 12);
	CHECK(h.has_reply);
	CHECK_EQ(h.nreply, 2);
	CHECK_EQ(h.reply[1].handle, 14);
	CHECK_EQ(h.reply[1].offset, 5);

	/* cut short anywhere inside the header: refused, never read past n */
	for (size_t n = 0; n < hl; n++) {
		int r = rdma_hdr_decode(w.b, n, &h, &hl);
		CHECK(r == (n < 16 ? RDMA_DECODE_SHORT : RDMA_DECODE_BAD));
		if (n >= 4)
			CHECK_EQ(h.xid, 0x11223344);
	}

	/* a plain call: no lists */
	fixed(&w, 5, 1, RDMA_MSG);
	p32(&w, 0), p32(&w, 0), p32(&w, 0);
	CHECK_EQ(dec(&w, &h, &hl), 0);
	CHECK_EQ(hl, 28);
	CHECK(!h.nread && !h.nwch && !h.has_reply);

	/* version 2: ERR_VERS, with the xid to answer */
	fixed(&w, 6, 2, RDMA_MSG);
	p32(&w, 0), p32(&w, 0), p32(&w, 0);
	CHECK_EQ(dec(&w, &h, &hl), RDMA_DECODE_VERS);
	CHECK_EQ(h.xid, 6);
	/* RDMA_ERROR from the peer; the obsolete procedures and unknown ones */
	fixed(&w, 7, 1, RDMA_ERROR);
	p32(&w, RDMA_ERR_CHUNK);
	CHECK_EQ(dec(&w, &h, &hl), RDMA_DECODE_ERRMSG);
	for (uint32_t proc = RDMA_MSGP; proc <= 9; proc++) {
		if (proc == RDMA_ERROR)
			continue;
		fixed(&w, 8, 1, proc);
		p32(&w, 0), p32(&w, 0), p32(&w, 0);
		CHECK_EQ(dec(&w, &h, &hl), RDMA_DECODE_BAD);
	}
	/* a discriminator that is not a boolean, in each list */
	for (int list = 0; list < 3; list++) {
		fixed(&w, 9, 1, RDMA_MSG);
		for (int k = 0; k < 3; k++)
			p32(&w, k == list ? 2 : 0);
		CHECK_EQ(dec(&w, &h, &hl), RDMA_DECODE_BAD);
	}
	/* read positions: unaligned, out of order, zero in RDMA_MSG */
	uint32_t bad_pos[][2] = { { 102, 200 }, { 200, 100 }, { 0, 100 } };
	for (unsigned k = 0; k < 3; k++) {
		fixed(&w, 10, 1, RDMA_MSG);
		p32(&w, 1), p32(&w, bad_pos[k][0]), pseg(&w, 1, 8, 0);
		p32(&w, 1), p32(&w, bad_pos[k][1]), pseg(&w, 1, 8, 0);
		p32(&w, 0), p32(&w, 0), p32(&w, 0);
		CHECK_EQ(dec(&w, &h, &hl), RDMA_DECODE_BAD);
	}
	/* RDMA_NOMSG: position zero only, and at least one segment */
	fixed(&w, 11, 1, RDMA_NOMSG);
	p32(&w, 1), p32(&w, 0), pseg(&w, 1, 8000, 0);
	p32(&w, 0), p32(&w, 0), p32(&w, 1), p32(&w, 1), pseg(&w, 2, 8000, 0);
	CHECK_EQ(dec(&w, &h, &hl), 0);
	CHECK_EQ(h.proc, RDMA_NOMSG);
	CHECK_EQ(h.nread, 1);
	CHECK_EQ(h.nreply, 1);
	fixed(&w, 12, 1, RDMA_NOMSG);
	p32(&w, 1), p32(&w, 8), pseg(&w, 1, 8000, 0);
	p32(&w, 0), p32(&w, 0), p32(&w, 0);
	CHECK_EQ(dec(&w, &h, &hl), RDMA_DECODE_BAD);
	fixed(&w, 13, 1, RDMA_NOMSG);
	p32(&w, 0), p32(&w, 0), p32(&w, 0);
	CHECK_EQ(dec(&w, &h, &hl), RDMA_DECODE_BAD);

	/* limits: RDMA_MAX_SEGS read segments pass, one more does not */
	for (unsigned extra = 0; extra < 2; extra++) {
		fixed(&w, 14, 1, RDMA_MSG);
		for (unsigned i = 0; i < RDMA_MAX_SEGS + extra; i++)
			p32(&w, 1), p32(&w, 4), pseg(&w, i, 1, 0);
		p32(&w, 0), p32(&w, 0), p32(&w, 0);
		CHECK_EQ(dec(&w, &h, &hl), extra ? RDMA_DECODE_BAD : 0);
	}
	/* write list: segments summed over chunks, and the chunk count */
	fixed(&w, 15, 1, RDMA_MSG);
	p32(&w, 0);
	p32(&w, 1), p32(&w, RDMA_MAX_SEGS - 1);
	for (unsigned i = 0; i < RDMA_MAX_SEGS - 1; i++)
		pseg(&w, i, 1, 0);
	p32(&w, 1), p32(&w, 2), pseg(&w, 1, 1, 0), pseg(&w, 1, 1, 0);
	p32(&w, 0), p32(&w, 0);
	CHECK_EQ(dec(&w, &h, &hl), RDMA_DECODE_BAD);
	fixed(&w, 16, 1, RDMA_MSG);
	p32(&w, 0);
	for (unsigned k = 0; k < RDMA_MAX_WCH + 1; k++)
		p32(&w, 1), p32(&w, 1), pseg(&w, k, 1, 0);
	p32(&w, 0), p32(&w, 0);
	CHECK_EQ(dec(&w, &h, &hl), RDMA_DECODE_BAD);
	/* a huge segment count announced in a short message */
	fixed(&w, 17, 1, RDMA_MSG);
	p32(&w, 0), p32(&w, 0), p32(&w, 1), p32(&w, 0xffffffff);
	CHECK_EQ(dec(&w, &h, &hl), RDMA_DECODE_BAD);

	/* what we send */
	uint8_t b[32];
	CHECK_EQ(rdma_hdr_error(b, 0x01020304, 64, RDMA_ERR_VERS), 28);
	static const uint8_t vers_err[28] = { 1, 2, 3, 4, 0, 0, 0, 1, 0, 0, 0, 64, 0, 0,
					      0, 4, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1 };
	CHECK(!memcmp(b, vers_err, 28));
	CHECK_EQ(rdma_hdr_error(b, 9, 64, RDMA_ERR_CHUNK), 20);
	CHECK_EQ(rdma_get32(b + 12), RDMA_ERROR);
	CHECK_EQ(rdma_get32(b + 16), RDMA_ERR_CHUNK);
	rdma_cmp_encode(b, 4096, 1024);
	static const uint8_t cmp[8] = { 0xf6, 0xab, 0x0e, 0x18, 1, 0, 3, 0 };
	CHECK(!memcmp(b, cmp, 8));
	printf("rdma-hdr: ok\n");
	return 0;
}
