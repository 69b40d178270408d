/* SPDX-License-Identifier: MIT */
/*
 * Service-manager notification (nfsd/notify.c, systemd's sd_notify(3)
 * protocol, for Type=notify units): nfsd_notify() sends one datagram to
 * $NOTIFY_SOCKET, a path or an abstract name ('@'), does nothing without
 * it and refuses a relative name; braid-mds and braid-ds run as processes
 * with NOTIFY_SOCKET set (and no --ready-fd) send READY=1 once they serve,
 * RELOADING=1 then READY=1 around braid-mds's SIGHUP, and STOPPING=1 at
 * SIGTERM, and exit 0.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nfsd/notify.h"
#include "tests/check.h"

static char dir[] = "/tmp/braid-notify-XXXXXX";

/* A datagram socket bound to name (a path, or "@abstract"). */
static int listener(const char *name)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	CHECK(fd >= 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t n = strlen(name);
	CHECK(n < sizeof(sa.sun_path));
	memcpy(sa.sun_path, name, n);
	if (name[0] == '@')
		sa.sun_path[0] = 0;
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (name[0] == '/'));
	CHECK_EQ(bind(fd, (struct sockaddr *)&sa, len), 0);
	return fd;
}

/* The next datagram within secs, NUL-terminated in buf; false on timeout. */
static bool next_msg(int fd, char *buf, size_t size, int secs)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	if (poll(&p, 1, secs * 1000) != 1)
		return false;
	ssize_t n = recv(fd, buf, size - 1, 0);
	CHECK(n >= 0);
	buf[n] = 0;
	return true;
}

static void t_library(void)
{
	unsetenv("NOTIFY_SOCKET");
	CHECK_EQ(nfsd_notify("READY=1"), 0);
	setenv("NOTIFY_SOCKET", "", 1);
	CHECK_EQ(nfsd_notify("READY=1"), 0);
	setenv("NOTIFY_SOCKET", "relative/sock", 1);
	CHECK_EQ(nfsd_notify("READY=1"), -EINVAL);
	char path[256];
	snprintf(path, sizeof(path), "%s/none", dir);
	setenv("NOTIFY_SOCKET", path, 1);
	CHECK_EQ(nfsd_notify("READY=1"), -ENOENT);

	char buf[1024];
	snprintf(path, sizeof(path), "%s/notify", dir);
	int fd = listener(path);
	setenv("NOTIFY_SOCKET", path, 1);
	CHECK_EQ(nfsd_notifyf("STATUS=%d things", 3), 1);
	CHECK(next_msg(fd, buf, sizeof(buf), 5));
	CHECK(!strcmp(buf, "STATUS=3 things"));
	close(fd);

	char abs[64];
	snprintf(abs, sizeof(abs), "@braid-notify-test-%d", (int)getpid());
	fd = listener(abs);
	setenv("NOTIFY_SOCKET", abs, 1);
	CHECK_EQ(nfsd_notify("READY=1"), 1);
	CHECK(next_msg(fd, buf, sizeof(buf), 5));
	CHECK(!strcmp(buf, "READY=1"));
	close(fd);
}

static void write_file(const char *name, const char *text, mode_t mode)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	CHECK(fd >= 0);
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
	CHECK_EQ(chmod(path, mode), 0);
}

/* Run daemon -c conf with NOTIFY_SOCKET = sock (abstract); its pid. */
static pid_t run(const char *bin, const char *conf, const char *sock)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s.log", dir, strrchr(bin, '/') + 1);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		int log = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (log >= 0)
			dup2(log, 2);
		setenv("NOTIFY_SOCKET", sock, 1);
		execl(bin, bin, "-c", conf, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void t_daemon(const char *bin, const char *conf, bool reload)
{
	if (access(bin, X_OK)) {
		fprintf(stderr, "%s: not built\n", bin);
		exit(99);
	}
	char sock[64], buf[1024];
	snprintf(sock, sizeof(sock), "@braid-notify-%s-%d", strrchr(bin, '/') + 1, (int)getpid());
	int fd = listener(sock);
	pid_t pid = run(bin, conf, sock);
	if (!next_msg(fd, buf, sizeof(buf), 20)) {
		fprintf(stderr, "%s sent nothing (see %s/*.log)\n", bin, dir);
		kill(pid, SIGKILL);
		CHECK(0);
	}
	fprintf(stderr, "%s: %s\n", bin, buf);
	CHECK(!strncmp(buf, "READY=1\nSTATUS=serving ", 23));
	if (reload) {
		CHECK_EQ(kill(pid, SIGHUP), 0);
		CHECK(next_msg(fd, buf, sizeof(buf), 10));
		CHECK(!strcmp(buf, "RELOADING=1"));
		CHECK(next_msg(fd, buf, sizeof(buf), 10));
		CHECK(!strcmp(buf, "READY=1"));
	}
	CHECK_EQ(kill(pid, SIGTERM), 0);
	CHECK(next_msg(fd, buf, sizeof(buf), 10));
	CHECK(!strcmp(buf, "STOPPING=1"));
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(fd);
}

int main(void)
{
	CHECK(mkdtemp(dir));
	t_library();

	const char *b = getenv("top_builddir") ? getenv("top_builddir") : ".";
	char mds[512], ds[512], conf[2048];
	snprintf(mds, sizeof(mds), "%s/braid-mds", b);
	snprintf(ds, sizeof(ds), "%s/braid-ds", b);
	write_file("cluster.key",
		   "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n", 0600);
	write_file("exports", "/ *(rw)\n", 0644);
	snprintf(
	    conf, sizeof(conf),
	    "[mds]\nstore_dir = %s/mds-store\nkey_file = %s/cluster.key\nexports = %s/exports\n"
	    "listen = 127.0.0.1:0\nrpcbind = no\ngrace_time = 0\n",
	    dir, dir, dir);
	write_file("mds.conf", conf, 0644);
	snprintf(conf, sizeof(conf),
		 "[ds]\nstore_dir = %s/ds-store\nkey_file = %s/cluster.key\nlisten = 127.0.0.1:0\n"
		 "io = psync\n",
		 dir, dir);
	write_file("ds.conf", conf, 0644);
	char path[256];
	snprintf(path, sizeof(path), "%s/mds.conf", dir);
	t_daemon(mds, path, true);
	snprintf(path, sizeof(path), "%s/ds.conf", dir);
	t_daemon(ds, path, false);

	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", dir);
	return 0;
}
