/* SPDX-License-Identifier: MIT */
/*
 * Service manager notification, the sd_notify(3) protocol without
 * libsystemd: when $NOTIFY_SOCKET names a unix datagram socket (a path, or
 * an abstract name when it starts with '@'), send it one datagram of
 * newline-separated assignments, e.g. "READY=1" once the daemon serves
 * (systemd's Type=notify), "STOPPING=1" when it begins to stop,
 * "RELOADING=1" and "READY=1" around a reload, "STATUS=..." for
 * systemctl status.
 */
#ifndef BRAID_NFSD_NOTIFY_H
#define BRAID_NFSD_NOTIFY_H

#include <signal.h>

/*
 * 1 when sent, 0 when $NOTIFY_SOCKET is unset or empty (nothing to do),
 * -errno when it is set but the datagram could not be sent (-EINVAL for a
 * socket name that is neither absolute nor abstract, or too long).
 */
int nfsd_notify(const char *state);

/* The same with printf-style formatting ("STATUS=serving %u exports"). */
int nfsd_notifyf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * What braid-mds and braid-ds share around their serving life.
 *
 * nfsd_daemon_signals: block SIGTERM, SIGINT and SIGHUP in this thread and
 * every thread started after it (they are taken by sigwait on *sigs, not
 * by handlers) and ignore SIGPIPE.  Call before starting any thread.
 *
 * nfsd_daemon_ready: tell whoever waits that prog serves: the line
 * "READY <port> <port>...\n" (up to 64 ports) on ready_fd, then closed (a test's or a
 * launcher's --ready-fd; -1 for none), and "READY=1\nSTATUS=<status>" to
 * the service manager (systemd's Type=notify).  Failures are reported on
 * stderr under prog's name; the daemon goes on serving.
 */
void nfsd_daemon_signals(sigset_t *sigs);
void nfsd_daemon_ready(const char *prog, int ready_fd, const int *ports, unsigned nports,
		       const char *status);

#endif
