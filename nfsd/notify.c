/* SPDX-License-Identifier: MIT */
/* sd_notify(3)'s protocol; see nfsd/notify.h. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "nfsd/notify.h"

int nfsd_notify(const char *state)
{
	const char *e = getenv("NOTIFY_SOCKET");
	if (!e || !*e)
		return 0;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t n = strlen(e);
	if ((e[0] != '/' && e[0] != '@') || n >= sizeof(sa.sun_path))
		return -EINVAL;
	memcpy(sa.sun_path, e, n);
	if (e[0] == '@')
		sa.sun_path[0] = 0; /* abstract namespace: no NUL terminator counts */
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (e[0] == '/'));
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	ssize_t r;
	do
		r = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, len);
	while (r < 0 && errno == EINTR);
	int rc = r < 0 ? -errno : 1;
	close(fd);
	return rc;
}

int nfsd_notifyf(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return nfsd_notify(buf);
}

void nfsd_daemon_signals(sigset_t *sigs)
{
	sigemptyset(sigs);
	sigaddset(sigs, SIGTERM);
	sigaddset(sigs, SIGINT);
	sigaddset(sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
}

void nfsd_daemon_ready(const char *prog, int ready_fd, const int *ports, unsigned nports,
		       const char *status)
{
	if (ready_fd >= 0) {
		char line[16 + 8 * 64];
		size_t n = (size_t)snprintf(line, sizeof(line), "READY");
		for (unsigned i = 0; i < nports && i < 64; i++)
			n += (size_t)snprintf(line + n, sizeof(line) - n, " %d", ports[i]);
		line[n++] = '\n';
		if (write(ready_fd, line, n) != (ssize_t)n)
			fprintf(stderr, "%s: --ready-fd: %s\n", prog, strerror(errno));
		close(ready_fd);
	}
	int rc = nfsd_notifyf("READY=1\nSTATUS=%s", status);
	if (rc < 0)
		fprintf(stderr, "%s: NOTIFY_SOCKET: %s\n", prog, strerror(-rc));
}
