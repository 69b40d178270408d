/* SPDX-License-Identifier: MIT */
/*
 * rpcbind SET/UNSET through libtirpc (see mds/rpcbind.h).  This file
 * includes libtirpc and nothing of Braid's XDR.
 *
 * libtirpc's rpcb_set() cannot be bounded (a 60 s total timeout, and with
 * no rpcbind it falls back to UDP and retries), so the connection is made
 * here with a deadline and the calls go through clnt_call() with ours.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <rpc/rpc.h>
#include <rpc/rpcb_prot.h>

#include "mds/rpcbind.h"

struct mds_rpcb {
	CLIENT *clnt; /* owns the socket (CLSET_FD_CLOSE) */
	struct timeval timeout;
	const char *where;
};

/* connect() with a deadline; the socket is left blocking.  0 or -errno. */
static int connect_timed(int fd, const struct sockaddr *sa, socklen_t len, unsigned timeout_ms)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	int rc = 0;
	if (connect(fd, sa, len) < 0) {
		if (errno != EINPROGRESS)
			return -errno;
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		int n;
		do
			n = poll(&p, 1, (int)timeout_ms);
		while (n < 0 && errno == EINTR);
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ETIMEDOUT;
		int soerr = 0;
		socklen_t sl = sizeof(soerr);
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
			return -errno;
		rc = -soerr;
	}
	if (!rc && fcntl(fd, F_SETFL, fl) < 0)
		rc = -errno;
	return rc;
}

static int connect_local(const char *path, unsigned timeout_ms, struct sockaddr_un *sun)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_LOCAL;
	if (strlen(path) >= sizeof(sun->sun_path))
		return -ENAMETOOLONG;
	strcpy(sun->sun_path, path);
	int fd = socket(AF_LOCAL, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int rc = connect_timed(fd, (struct sockaddr *)sun, sizeof(*sun), timeout_ms);
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

/* rpcbind takes SET/UNSET over TCP only from a loopback reserved port. */
static int connect_loopback(unsigned timeout_ms, struct sockaddr_in *sin)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(111);
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (geteuid() == 0) {
		struct sockaddr_in me = { .sin_family = AF_INET };
		(void)bindresvport(fd, &me); /* best effort: else rpcbind refuses the SET */
	}
	int rc = connect_timed(fd, (struct sockaddr *)sin, sizeof(*sin), timeout_ms);
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

struct mds_rpcb *mds_rpcb_new(unsigned timeout_ms, int *err)
{
	struct mds_rpcb *b = calloc(1, sizeof(*b));
	if (!b) {
		*err = -ENOMEM;
		return NULL;
	}
	b->timeout.tv_sec = timeout_ms / 1000;
	b->timeout.tv_usec = (long)(timeout_ms % 1000) * 1000;

	/* Debian's rpcbind listens on /run/rpcbind.sock; libtirpc names the
	 * /var/run path, a link to it on most systems */
	static const char *const paths[] = { "/run/rpcbind.sock", _PATH_RPCBINDSOCK };
	struct sockaddr_un sun;
	struct sockaddr_in sin;
	struct netbuf nb;
	int fd = -ENOENT;
	for (unsigned i = 0; i < sizeof(paths) / sizeof(paths[0]) && fd < 0; i++) {
		fd = connect_local(paths[i], timeout_ms, &sun);
		b->where = "local socket";
		nb.buf = &sun;
		nb.len = nb.maxlen = sizeof(sun);
	}
	if (fd < 0) {
		int lerr = fd;
		fd = connect_loopback(timeout_ms, &sin);
		b->where = "127.0.0.1:111";
		nb.buf = &sin;
		nb.len = nb.maxlen = sizeof(sin);
		/* both refused or absent: none runs; say so with the local error */
		if (fd == -ECONNREFUSED && (lerr == -ECONNREFUSED || lerr == -ENOENT))
			fd = lerr;
	}
	if (fd < 0) {
		*err = fd;
		free(b);
		return NULL;
	}
	b->clnt = clnt_vc_create(fd, &nb, RPCBPROG, RPCBVERS, 0, 0);
	if (!b->clnt) {
		close(fd);
		free(b);
		*err = -EIO;
		return NULL;
	}
	CLNT_CONTROL(b->clnt, CLSET_FD_CLOSE, NULL);
	CLNT_CONTROL(b->clnt, CLSET_TIMEOUT, (char *)&b->timeout);
	return b;
}

void mds_rpcb_free(struct mds_rpcb *b)
{
	if (!b)
		return;
	if (b->clnt)
		CLNT_DESTROY(b->clnt);
	free(b);
}

const char *mds_rpcb_where(const struct mds_rpcb *b)
{
	return b->where;
}

static int rpcb_call(struct mds_rpcb *b, rpcproc_t proc, uint32_t prog, uint32_t vers,
		     const char *netid, const char *uaddr)
{
	RPCB parms = {
		.r_prog = prog,
		.r_vers = vers,
		.r_netid = (char *)netid,
		.r_addr = (char *)(uaddr ? uaddr : ""),
		.r_owner = (char *)"braid-mds", /* rpcbind records the caller's uid instead */
	};
	bool_t ok = FALSE;
	enum clnt_stat st = clnt_call(b->clnt, proc, (xdrproc_t)xdr_rpcb, (char *)&parms,
				      (xdrproc_t)xdr_bool, (char *)&ok, b->timeout);
	if (st == RPC_TIMEDOUT)
		return -ETIMEDOUT;
	if (st != RPC_SUCCESS)
		return -EIO;
	if (!ok)
		return proc == RPCBPROC_SET ? -EEXIST : -ENOENT;
	return 0;
}

int mds_rpcb_set(struct mds_rpcb *b, uint32_t prog, uint32_t vers, const char *netid,
		 const char *uaddr)
{
	return rpcb_call(b, RPCBPROC_SET, prog, vers, netid, uaddr);
}

int mds_rpcb_unset(struct mds_rpcb *b, uint32_t prog, uint32_t vers, const char *netid)
{
	return rpcb_call(b, RPCBPROC_UNSET, prog, vers, netid, NULL);
}

static bool_t xdr_none(XDR *x, void *p)
{
	(void)x, (void)p;
	return TRUE;
}

int mds_rpcb_getaddr(struct mds_rpcb *b, uint32_t prog, uint32_t vers, const char *netid,
		     char *uaddr, size_t len)
{
	/* DUMP, not GETADDR: rpcbind answers GETADDR for the netid of the
	 * connection asked on (ours may be its local socket), not r_netid */
	rpcblist_ptr list = NULL;
	enum clnt_stat st = clnt_call(b->clnt, RPCBPROC_DUMP, (xdrproc_t)xdr_none, NULL,
				      (xdrproc_t)xdr_rpcblist_ptr, (char *)&list, b->timeout);
	if (st == RPC_TIMEDOUT)
		return -ETIMEDOUT;
	if (st != RPC_SUCCESS)
		return -EIO;
	int rc = -ENOENT;
	for (rpcblist_ptr p = list; p && rc == -ENOENT; p = p->rpcb_next) {
		const RPCB *m = &p->rpcb_map;
		if (m->r_prog != prog || m->r_vers != vers || !m->r_netid || !m->r_addr ||
		    strcmp(m->r_netid, netid))
			continue;
		rc = strlen(m->r_addr) >= len ? -ENAMETOOLONG : 0;
		if (!rc)
			memcpy(uaddr, m->r_addr, strlen(m->r_addr) + 1);
	}
	xdr_free((xdrproc_t)xdr_rpcblist_ptr, (char *)&list);
	return rc;
}
