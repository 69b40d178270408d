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

/*
 * 1 when sent, 0 when $NOTIFY_SOCKET is unset or empty (nothing to do),
 * -errno when it is set but the datagram could not be sent (-EINVAL for a
 * socket name that is neither absolute nor abstract, or too long).
 */
int nfsd_notify(const char *state);

/* The same with printf-style formatting ("STATUS=serving %u exports"). */
int nfsd_notifyf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
