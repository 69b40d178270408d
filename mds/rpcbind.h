/* SPDX-License-Identifier: MIT */
/*
 * Registration with the local rpcbind (RFC 1833 version 3 SET and UNSET),
 * through libtirpc.  This header uses plain C types only: libtirpc's
 * headers and Braid's XDR both define XDR, so only mds/rpcbind.c includes
 * libtirpc and no file includes both.
 *
 * Every call is bounded by the timeout given to mds_rpcb_new(): a hung
 * rpcbind delays the caller by at most that much per call.
 */
#ifndef BRAID_MDS_RPCBIND_H
#define BRAID_MDS_RPCBIND_H

#include <stdint.h>

struct mds_rpcb;

/*
 * Connect to the rpcbind of this host: its local socket (which needs no
 * privilege), else 127.0.0.1:111 from a reserved port (rpcbind takes SET
 * over TCP only from one).  NULL with *err = -ECONNREFUSED or -ENOENT when
 * none runs, -ETIMEDOUT, or another -errno.
 */
struct mds_rpcb *mds_rpcb_new(unsigned timeout_ms, int *err);
void mds_rpcb_free(struct mds_rpcb *b);
/* "local socket" or "127.0.0.1:111", for log lines. */
const char *mds_rpcb_where(const struct mds_rpcb *b);

/*
 * Map prog/vers on netid ("tcp", "tcp6") to uaddr (RFC 1833 §2: universal
 * address, "h1.h2.h3.h4.p1.p2" or "ipv6.p1.p2").  0; -EEXIST when rpcbind
 * refused (a mapping for prog/vers/netid exists, or it does not trust the
 * caller); -ETIMEDOUT; -EIO for another RPC failure.
 */
int mds_rpcb_set(struct mds_rpcb *b, uint32_t prog, uint32_t vers, const char *netid,
		 const char *uaddr);
/* Remove the mapping of prog/vers on netid.  0, or -ENOENT when there was
 * none (or it is another owner's), -ETIMEDOUT, -EIO. */
int mds_rpcb_unset(struct mds_rpcb *b, uint32_t prog, uint32_t vers, const char *netid);
/* The universal address prog/vers on netid maps to (from DUMP), into uaddr
 * (len bytes).  0, -ENOENT (no mapping), -ENAMETOOLONG, -ETIMEDOUT, -EIO. */
int mds_rpcb_getaddr(struct mds_rpcb *b, uint32_t prog, uint32_t vers, const char *netid,
		     char *uaddr, size_t len);

#endif
