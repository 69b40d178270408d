/* SPDX-License-Identifier: MIT */
/*
 * The RPC-over-RDMA version 1 transport header (RFC 8166 §4), decoded
 * into fixed arrays with every limit checked, and the pieces of the
 * headers we send.  No rdma-core here: unit tests and the fuzz target
 * use it on any machine.
 */
#ifndef BRAID_NFSD_RDMA_HDR_H
#define BRAID_NFSD_RDMA_HDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	RDMA_MSG = 0,
	RDMA_NOMSG = 1,
	RDMA_MSGP = 2, /* obsolete (RFC 8166 §4.6): refused */
	RDMA_DONE = 3, /* obsolete: refused */
	RDMA_ERROR = 4,
};
enum { RDMA_ERR_VERS = 1, RDMA_ERR_CHUNK = 2 };

/* RFC 8797: the connection's private message, and what it says. */
#define RDMA_CMP_MAGIC 0xf6ab0e18u

#define RDMA_MAX_SEGS 64 /* segments per list we take */
#define RDMA_MAX_WCH 4	 /* write chunks per call we take */

struct rdma_seg {
	uint32_t handle, length;
	uint64_t offset;
};

struct rdma_hdr {
	uint32_t xid, vers, credits, proc;
	unsigned nread; /* read segments, in order; read_pos[i] each one's position */
	struct rdma_seg read[RDMA_MAX_SEGS];
	uint32_t read_pos[RDMA_MAX_SEGS];
	unsigned nwch; /* write chunks: wch[k] = segments wseg[first..first+n) */
	struct {
		unsigned first, n;
	} wch[RDMA_MAX_WCH];
	struct rdma_seg wseg[RDMA_MAX_SEGS];
	bool has_reply;
	unsigned nreply;
	struct rdma_seg reply[RDMA_MAX_SEGS];
};

/* rdma_hdr_decode's results besides 0 (a call or reply to take) */
enum {
	RDMA_DECODE_SHORT = 1,	/* fewer than 16 bytes: no header */
	RDMA_DECODE_VERS,	/* not version 1 (xid set): ERR_VERS */
	RDMA_DECODE_ERRMSG,	/* an RDMA_ERROR */
	RDMA_DECODE_BAD,	/* malformed, over a limit, or a refused proc: ERR_CHUNK */
};

/*
 * Decode the header at p[0..n); *hl is its length (the RPC message, for
 * RDMA_MSG, follows).  Checks: discriminators 0 or 1; at most
 * RDMA_MAX_SEGS segments per list and RDMA_MAX_WCH write chunks; read
 * positions multiples of 4, in order; RDMA_MSG without position-zero
 * chunks, RDMA_NOMSG with position-zero chunks only (and at least one).
 */
int rdma_hdr_decode(const uint8_t *p, size_t n, struct rdma_hdr *h, size_t *hl);

static inline uint32_t rdma_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint8_t *rdma_hdr_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
	return p + 4;
}
/* xid, version 1, credits, proc */
uint8_t *rdma_hdr_put_fixed(uint8_t *p, uint32_t xid, uint32_t credits, uint32_t proc);
uint8_t *rdma_hdr_put_seg(uint8_t *p, const struct rdma_seg *s);
/* An RDMA_ERROR: 20 bytes (ERR_CHUNK) or 28 (ERR_VERS, versions 1..1); its length */
size_t rdma_hdr_error(uint8_t *p, uint32_t xid, uint32_t credits, uint32_t err);
/* RFC 8797 private message: 8 bytes with our inline sizes */
void rdma_cmp_encode(uint8_t *p, unsigned send_size, unsigned recv_size);

#endif
