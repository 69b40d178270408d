/* SPDX-License-Identifier: MIT */
/* RPC-over-RDMA version 1 headers (RFC 8166 §4): see rdma_hdr.h. */
#include "config.h"

#include "nfsd/rdma_hdr.h"

struct rd {
	const uint8_t *p, *end;
	bool bad;
};

static uint32_t rd32(struct rd *r)
{
	if (r->end - r->p < 4) {
		r->bad = true;
		return 0;
	}
	uint32_t v = rdma_get32(r->p);
	r->p += 4;
	return v;
}

static void rdseg(struct rd *r, struct rdma_seg *s)
{
	s->handle = rd32(r);
	s->length = rd32(r);
	uint64_t hi = rd32(r);
	s->offset = hi << 32 | rd32(r);
}

/* a discriminator: 0 or 1, else malformed */
static int rddisc(struct rd *r)
{
	uint32_t v = rd32(r);
	if (v > 1)
		r->bad = true;
	return r->bad ? 0 : (int)v;
}

int rdma_hdr_decode(const uint8_t *p, size_t n, struct rdma_hdr *h, size_t *hl)
{
	struct rd r = { p, p + n, false };
	h->nread = h->nwch = h->nreply = 0;
	h->has_reply = false;
	h->xid = h->vers = h->credits = h->proc = 0;
	if (n >= 4)
		h->xid = rdma_get32(p);
	if (n < 16)
		return RDMA_DECODE_SHORT;
	h->xid = rd32(&r);
	h->vers = rd32(&r);
	h->credits = rd32(&r);
	h->proc = rd32(&r);
	if (h->vers != 1)
		return RDMA_DECODE_VERS;
	if (h->proc == RDMA_ERROR)
		return RDMA_DECODE_ERRMSG;
	if (h->proc != RDMA_MSG && h->proc != RDMA_NOMSG)
		return RDMA_DECODE_BAD;
	/* read list */
	uint32_t last = 0;
	while (rddisc(&r)) {
		if (h->nread == RDMA_MAX_SEGS)
			return RDMA_DECODE_BAD;
		uint32_t pos = rd32(&r);
		rdseg(&r, &h->read[h->nread]);
		if (r.bad || (pos & 3) || pos < last)
			return RDMA_DECODE_BAD;
		if ((h->proc == RDMA_MSG) != (pos != 0))
			return RDMA_DECODE_BAD;
		h->read_pos[h->nread++] = pos;
		last = pos;
	}
	/* write list */
	unsigned nseg = 0;
	while (rddisc(&r)) {
		uint32_t cnt = rd32(&r);
		if (r.bad || h->nwch == RDMA_MAX_WCH || cnt > RDMA_MAX_SEGS - nseg)
			return RDMA_DECODE_BAD;
		h->wch[h->nwch].first = nseg;
		h->wch[h->nwch].n = cnt;
		for (uint32_t i = 0; i < cnt; i++)
			rdseg(&r, &h->wseg[nseg++]);
		h->nwch++;
	}
	/* reply chunk */
	if (rddisc(&r)) {
		uint32_t cnt = rd32(&r);
		if (r.bad || cnt > RDMA_MAX_SEGS)
			return RDMA_DECODE_BAD;
		h->has_reply = true;
		h->nreply = cnt;
		for (uint32_t i = 0; i < cnt; i++)
			rdseg(&r, &h->reply[i]);
	}
	if (r.bad)
		return RDMA_DECODE_BAD;
	if (h->proc == RDMA_NOMSG && !h->nread)
		return RDMA_DECODE_BAD;
	*hl = (size_t)(r.p - p);
	return 0;
}

uint8_t *rdma_hdr_put_fixed(uint8_t *p, uint32_t xid, uint32_t credits, uint32_t proc)
{
	p = rdma_hdr_put32(p, xid);
	p = rdma_hdr_put32(p, 1);
	p = rdma_hdr_put32(p, credits);
	return rdma_hdr_put32(p, proc);
}

uint8_t *rdma_hdr_put_seg(uint8_t *p, const struct rdma_seg *s)
{
	p = rdma_hdr_put32(p, s->handle);
	p = rdma_hdr_put32(p, s->length);
	p = rdma_hdr_put32(p, (uint32_t)(s->offset >> 32));
	return rdma_hdr_put32(p, (uint32_t)s->offset);
}

size_t rdma_hdr_error(uint8_t *p, uint32_t xid, uint32_t credits, uint32_t err)
{
	uint8_t *q = rdma_hdr_put_fixed(p, xid, credits, RDMA_ERROR);
	q = rdma_hdr_put32(q, err);
	if (err == RDMA_ERR_VERS) {
		q = rdma_hdr_put32(q, 1);
		q = rdma_hdr_put32(q, 1);
	}
	return (size_t)(q - p);
}

void rdma_cmp_encode(uint8_t *p, unsigned send_size, unsigned recv_size)
{
	rdma_hdr_put32(p, RDMA_CMP_MAGIC);
	p[4] = 1; /* version */
	p[5] = 0; /* flags: no remote invalidation */
	p[6] = (uint8_t)(send_size / 1024 - 1);
	p[7] = (uint8_t)(recv_size / 1024 - 1);
}
