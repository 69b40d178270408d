/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "ctl/netaddr.h"

/* One decimal byte of a universal address's port: 1 to 3 digits, <= 255. */
static int port_byte(const char *p, size_t n, unsigned *v)
{
	if (n < 1 || n > 3)
		return -EINVAL;
	*v = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -EINVAL;
		*v = *v * 10 + (unsigned)(p[i] - '0');
	}
	return *v <= 255 ? 0 : -EINVAL;
}

int ds_netaddr_parse(const char *netid, size_t netid_len, const char *uaddr, size_t uaddr_len,
		     struct sockaddr_storage *ss, socklen_t *len)
{
	int af;
	if (netid_len == 3 && !memcmp(netid, "tcp", 3))
		af = AF_INET;
	else if (netid_len == 4 && !memcmp(netid, "tcp6", 4))
		af = AF_INET6;
	else
		return -EINVAL;
	/* host "." p1 "." p2: the last two dots */
	size_t d2 = uaddr_len, d1;
	while (d2 > 0 && uaddr[d2 - 1] != '.')
		d2--;
	if (d2 < 2)
		return -EINVAL;
	d1 = d2 - 1;
	while (d1 > 0 && uaddr[d1 - 1] != '.')
		d1--;
	if (d1 < 2)
		return -EINVAL;
	unsigned p1, p2;
	if (port_byte(uaddr + d1, d2 - 1 - d1, &p1) || port_byte(uaddr + d2, uaddr_len - d2, &p2))
		return -EINVAL;
	char host[INET6_ADDRSTRLEN];
	size_t hl = d1 - 1;
	if (hl >= sizeof(host) || memchr(uaddr, 0, hl))
		return -EINVAL;
	memcpy(host, uaddr, hl);
	host[hl] = 0;
	memset(ss, 0, sizeof(*ss));
	uint16_t port = htons((uint16_t)(p1 << 8 | p2));
	if (af == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;
		in->sin_family = AF_INET;
		in->sin_port = port;
		if (inet_pton(AF_INET, host, &in->sin_addr) != 1)
			return -EINVAL;
		*len = sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = port;
		if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
			return -EINVAL;
		*len = sizeof(*in6);
	}
	return 0;
}
