/* SPDX-License-Identifier: MIT */
/*
 * braid-ds as a process: SIGKILL with uncommitted data, restart, and the
 * client sees a new write verifier (RFC 1813 §3.3.7: it must resend what it
 * did not commit); what was FILE_SYNC or COMMITted survives.  Then SIGTERM
 * stops it cleanly, and bad settings stop startup with file:line.
 */
#include "config.h"

#include <signal.h>
#include <sys/wait.h>

#include "tests/dataserver/ds-test.h"

static struct dt T;
static char bin[4200];

/* Start braid-ds -c conf; returns its pid and the bound port. */
static pid_t spawn(int *port)
{
	int p[2];
	CHECK(pipe(p) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		char fd[16];
		snprintf(fd, sizeof(fd), "%d", p[1]);
		execl(bin, "braid-ds", "-c", T.conf_path, "--ready-fd", fd, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	char line[256] = { 0 };
	ssize_t n = 0, r;
	while (n < (ssize_t)sizeof(line) - 1 && (r = read(p[0], line + n, sizeof(line) - 1 - (size_t)n)) > 0)
		n += r;
	close(p[0]);
	CHECK(sscanf(line, "READY %d", port) == 1);
	return pid;
}

/*
 * Run braid-ds -c conf [extra] to its exit, with its stream fd (1 or 2)
 * captured in out; returns its exit status.
 */
static int run_ds(const char *conf, const char *extra, int fd, char *out, size_t outlen)
{
	int p[2];
	CHECK(pipe(p) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(p[1], fd);
		close(p[0]);
		execl(bin, "braid-ds", "-c", conf, extra, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	ssize_t n = 0, r;
	while (n < (ssize_t)outlen - 1 && (r = read(p[0], out + n, outlen - 1 - (size_t)n)) > 0)
		n += r;
	out[n] = 0;
	close(p[0]);
	int ws;
	CHECK(waitpid(pid, &ws, 0) == pid);
	return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

/* braid-ds --scrub on the stopped store: exit 0 when clean, 1 with a bad block. */
static int scrub_cli(char *out, size_t outlen)
{
	return run_ds(T.conf_path, "--scrub", 1, out, outlen);
}

static void t_scrub_cli(void)
{
	char out[512];
	CHECK_EQ(scrub_cli(out, sizeof(out)), 0);
	CHECK(strstr(out, "objects 1 "));
	CHECK(strstr(out, "bad_objects 0"));
	/* damage one block of the object's data */
	char pat[4400];
	snprintf(pat, sizeof(pat), "%s/store/objects/*/*", T.dir);
	glob_t g;
	CHECK(glob(pat, 0, NULL, &g) == 0);
	bool done = false;
	for (size_t i = 0; i < g.gl_pathc && !done; i++) {
		if (strstr(g.gl_pathv[i], ".meta"))
			continue;
		int fd = open(g.gl_pathv[i], O_RDWR);
		CHECK(fd >= 0);
		uint8_t b;
		CHECK(pread(fd, &b, 1, 5000) == 1);
		b ^= 1;
		CHECK(pwrite(fd, &b, 1, 5000) == 1);
		close(fd);
		done = true;
	}
	globfree(&g);
	CHECK(done);
	CHECK_EQ(scrub_cli(out, sizeof(out)), 1);
	CHECK(strstr(out, "bad_objects 1 bad_blocks 1"));
}

static void t_crash(void)
{
	int port;
	pid_t pid = spawn(&port);
	int err = 0;
	T.eng = nfsd_client_engine_new(1, 0, &err);
	CHECK(T.eng);
	T.c = dt_connect(&T, port);
	struct ds_objid id = dt_id(1, 1);
	uint8_t fh[DS_CTL_FH_MAX];
	uint32_t fhlen;
	dt_create(&T, &id, fh, &fhlen);
	static uint8_t buf[1 << 20], back[1 << 20];
	uint8_t v1[8], v2[8], vc[8];
	/* 0..1M stable, 1M..2M unstable but committed, 2M..3M unstable only */
	dt_fill(buf, 0, sizeof(buf), 1);
	CHECK_EQ(dt_write(T.c, fh, fhlen, 0, buf, 1 << 20, FILE_SYNC, v1, DT_UID), NFS3_OK);
	dt_fill(buf, 1 << 20, sizeof(buf), 1);
	CHECK_EQ(dt_write(T.c, fh, fhlen, 1 << 20, buf, 1 << 20, UNSTABLE, NULL, DT_UID), NFS3_OK);
	COMMIT3args ca = { .file = dt_fh3(fh, fhlen) };
	COMMIT3res cr;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	CHECK_EQ(dt_nfs3(T.c, NFSPROC3_COMMIT, &ca, &cr, &ar, DT_UID, DT_GID), 0);
	CHECK_EQ(cr.status, NFS3_OK);
	memcpy(vc, cr.u.resok.verf, 8);
	CHECK(memcmp(vc, v1, 8) == 0);
	dt_fill(buf, 2 << 20, sizeof(buf), 1);
	CHECK_EQ(dt_write(T.c, fh, fhlen, 2 << 20, buf, 1 << 20, UNSTABLE, NULL, DT_UID), NFS3_OK);

	CHECK(kill(pid, SIGKILL) == 0);
	int ws;
	CHECK(waitpid(pid, &ws, 0) == pid);
	nfsd_clnt_free(T.c);

	pid = spawn(&port);
	T.c = dt_connect(&T, port);
	/* the client learns of the restart from the verifier of its next COMMIT */
	CHECK_EQ(dt_nfs3(T.c, NFSPROC3_COMMIT, &ca, &cr, &ar, DT_UID, DT_GID), 0);
	CHECK_EQ(cr.status, NFS3_OK);
	CHECK(memcmp(cr.u.resok.verf, v1, 8) != 0);
	/* so it resends the uncommitted range, as the Linux client does */
	CHECK_EQ(dt_write(T.c, fh, fhlen, 2 << 20, buf, 1 << 20, UNSTABLE, v2, DT_UID), NFS3_OK);
	CHECK(memcmp(v2, v1, 8) != 0);
	CHECK_EQ(dt_nfs3(T.c, NFSPROC3_COMMIT, &ca, &cr, &ar, DT_UID, DT_GID), 0);
	CHECK(memcmp(cr.u.resok.verf, v2, 8) == 0);
	/* and everything reads back: the stable and committed ranges survived */
	for (unsigned i = 0; i < 3; i++) {
		uint32_t n;
		bool eof;
		CHECK_EQ(dt_read(T.c, fh, fhlen, (uint64_t)i << 20, 1 << 20, back, &n, &eof, DT_UID),
			 NFS3_OK);
		CHECK_EQ(n, 1 << 20);
		CHECK(dt_check(back, (uint64_t)i << 20, n, 1));
	}
	xdr_arena_release(&ar);
	nfsd_clnt_free(T.c);
	T.c = NULL;
	/* SIGTERM: a clean stop */
	CHECK(kill(pid, SIGTERM) == 0);
	CHECK(waitpid(pid, &ws, 0) == pid);
	CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
	nfsd_server_free(T.eng);
	T.eng = NULL;
	t_scrub_cli();
}

/* Run braid-ds with conf text; returns the exit status and stderr. */
static int run_conf(const char *text, char *errbuf, size_t errlen)
{
	char path[4300];
	snprintf(path, sizeof(path), "%s/bad.conf", T.dir);
	dt_write_file(path, text, 0644);
	return run_ds(path, NULL, 2, errbuf, errlen);
}

static void t_bad_settings(void)
{
	char err[2048], text[8192];
	/* an unknown key stops startup at its line */
	snprintf(text, sizeof(text), "[ds]\nstore_dir = %s/store\nblock_sise = 4k\n", T.dir);
	CHECK(run_conf(text, err, sizeof(err)) != 0);
	CHECK(strstr(err, "bad.conf:3"));
	CHECK(strstr(err, "block_sise"));
	/* a bad value, with its reason */
	snprintf(text, sizeof(text), "[ds]\nstore_dir = %s/store\n\nmax_io = 9q\n", T.dir);
	CHECK(run_conf(text, err, sizeof(err)) != 0);
	CHECK(strstr(err, "bad.conf:4"));
	snprintf(text, sizeof(text), "[ds]\nmax_io = 4m\n");
	CHECK(run_conf(text, err, sizeof(err)) != 0);
	CHECK(strstr(err, "bad.conf:2"));
	/* a cluster key others can read is refused, saying how to fix it */
	char key2[4300];
	snprintf(key2, sizeof(key2), "%s/open.key", T.dir);
	CHECK(braid_key_create(key2) == 0);
	CHECK(chmod(key2, 0644) == 0);
	snprintf(text, sizeof(text),
		 "[ds]\nstore_dir = %s/store\nkey_file = %s\nlisten = 127.0.0.1:0\nnfs41 = no\n",
		 T.dir, key2);
	CHECK(run_conf(text, err, sizeof(err)) == 1);
	CHECK(strstr(err, "chmod 600"));
	/* a missing key file */
	snprintf(text, sizeof(text),
		 "[ds]\nstore_dir = %s/store\nkey_file = %s/nokey\nlisten = 127.0.0.1:0\nnfs41 = no\n",
		 T.dir, T.dir);
	CHECK(run_conf(text, err, sizeof(err)) == 1);
	CHECK(strstr(err, "No such file"));
	/* an unmounted data disk is not replaced by an empty store */
	snprintf(text, sizeof(text),
		 "[ds]\nstore_dir = %s/nostore\ncreate = no\nkey_file = %s\nlisten = 127.0.0.1:0\n"
		 "nfs41 = no\n",
		 T.dir, T.key_path);
	CHECK(run_conf(text, err, sizeof(err)) == 1);
	CHECK(strstr(err, "create = no"));
	/* a wildcard listen with an MDS needs advertise */
	snprintf(text, sizeof(text),
		 "[ds]\nstore_dir = %s/store\nkey_file = %s\nlisten = 0.0.0.0:0\nmds = "
		 "127.0.0.1:1\nnfs41 = no\n",
		 T.dir, T.key_path);
	CHECK(run_conf(text, err, sizeof(err)) == 1);
	CHECK(strstr(err, "advertise"));
}

int main(void)
{
	const char *b = getenv("top_builddir");
	snprintf(bin, sizeof(bin), "%s/braid-ds", b && *b ? b : ".");
	if (access(bin, X_OK))
		SKIP("%s not built", bin);
	dt_prepare(&T, NULL);
	t_crash();
	t_bad_settings();
	printf("ok\n");
	return 0;
}
