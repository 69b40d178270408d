/* SPDX-License-Identifier: MIT */
/*
 * braid_ctl_netaddr (braid_ctl.x), as NFSv4's netaddr4 (RFC 8881 §3.3.9):
 * an RPC netid (RFC 5665 §5.1: "tcp", "tcp6") and a universal address,
 * "h1.h2.h3.h4.p1.p2" for IPv4 and the RFC 5952 text of an IPv6 address
 * followed by ".p1.p2", the port being p1 * 256 + p2.
 */
#ifndef BRAID_CTL_NETADDR_H
#define BRAID_CTL_NETADDR_H

#include <stddef.h>
#include <sys/socket.h>

/*
 * The socket address of netid/uaddr (netid_len and uaddr_len bytes, not
 * NUL-terminated: they come off the wire).  0, or -EINVAL for anything
 * malformed, a netid other than tcp/tcp6 included.
 */
int ds_netaddr_parse(const char *netid, size_t netid_len, const char *uaddr, size_t uaddr_len,
		     struct sockaddr_storage *ss, socklen_t *len);

#endif
