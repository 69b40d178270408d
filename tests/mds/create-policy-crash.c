/* SPDX-License-Identifier: MIT */
/*
 * A file OPEN creates (RFC 8881 §18.16) takes its directory's layout
 * policy in the create's own transaction: a crash at any moment leaves
 * either no file or a file with the policy, never a file that silently
 * has the default one.
 *
 * A child process runs braid-mds in-process, gives directory /d the policy
 * "segments,segment_size=4M,width=2", then OPEN-creates /d/f.  It
 * interposes fdatasync() and fsync() of the store's data.mdb: the k-th
 * sync after the OPEN is sent that succeeds ends the process at once
 * (_exit, before LMDB's next write).  The parent then opens the store and
 * checks /d/f: if it exists, its layout record holds /d's policy.  k runs
 * over every sync the OPEN makes, and at least one k must leave the file
 * (else the test proves nothing).
 */
#include "config.h"

#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "tests/mds/mds-test.h"
#include "tests/mds/state-test.h"

#include "mds/data.h"
#include "mds/layout.h"
#include "mds/mds_impl.h"

#define POLICY "segments,segment_size=4M,width=2"

static atomic_int armed; /* syncs of data.mdb left before the crash; 0: off */

static bool is_data_mdb(int fd)
{
	char link[64], path[PATH_MAX];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return false;
	path[n] = 0;
	return n >= 9 && !strcmp(path + n - 9, "/data.mdb");
}

static void synced(int fd, int rc)
{
	if (rc == 0 && atomic_load(&armed) > 0 && is_data_mdb(fd) &&
	    atomic_fetch_sub(&armed, 1) == 1)
		_exit(0); /* the crash: nothing after this sync reaches the file */
}

int fdatasync(int fd)
{
	static int (*real)(int);
	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
	int rc = real(fd);
	synced(fd, rc);
	return rc;
}

int fsync(int fd)
{
	static int (*real)(int);
	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
	int rc = real(fd);
	synced(fd, rc);
	return rc;
}

static struct layout_policy policy(void)
{
	struct layout_policy p;
	char why[200];
	CHECK_EQ(layout_policy_parse(POLICY, &p, why, sizeof(why)), 0);
	return p;
}

/* The child: exits 0 from the crash, 3 when the OPEN finished first. */
static void child(const char *dir, int k)
{
	struct mt t;
	setenv("TMPDIR", dir, 1); /* the MDS's scratch folder goes under dir */
	mt_start(&t, "/ *(rw,no_root_squash,insecure)\n", NULL);
	struct mds_create_args ca = {.dir = mds_store_root(t.mds->store),
				     .name = "d",
				     .name_len = 1,
				     .type = MDS_DIR,
				     .mode = 0777};
	struct mds_create_res cr;
	CHECK_EQ(mds_dir_create(t.mds->store, &ca, &cr), 0);
	struct layout_policy p = policy();
	CHECK_EQ(mds_layout_policy_set(t.mds, cr.attr.ino, &p), 0);

	struct nfs41c_session *s = mt_session_noreclaim(&t, "crash", 0, 0);
	CHECK_EQ(ts_reclaim_complete(s), NFS4_OK);
	struct ts_fh d;
	nfs_argop4 ops[3] = {ts_op(OP_PUTROOTFH), mt_lookup("d"), ts_op(OP_GETFH)};
	COMPOUND4res res;
	struct xdr_arena ar;
	ts_run(s, ops, 3, &res, &ar);
	CHECK_EQ(ts_st(&res, 2), NFS4_OK);
	const nfs_fh4 *f = &res.resarray.val[3].u.opgetfh.u.resok4.object;
	memcpy(d.b, f->val, f->len);
	d.len = f->len;
	xdr_arena_release(&ar);

	atomic_store(&armed, k);
	CHECK_EQ(ts_open_name(s, &d, "o", "f", OPEN4_SHARE_ACCESS_BOTH, 0, true, NULL), NFS4_OK);
	/* give a sync that completes the OPEN's batch after the reply its chance */
	usleep(200 * 1000);
	_exit(3);
}

/* After the crash: 1 when /d/f exists (with the policy), 0 when it does not. */
static int check_store(const char *dir)
{
	char pattern[4200];
	snprintf(pattern, sizeof(pattern), "%s/braid-mds-*/store", dir);
	glob_t g;
	CHECK_EQ(glob(pattern, 0, NULL, &g), 0);
	CHECK_EQ(g.gl_pathc, 1);
	struct mds_store_opts so = {.path = g.gl_pathv[0]};
	struct mds_store *st;
	CHECK_EQ(mds_store_open(&so, &st), 0);
	uint64_t d, f;
	CHECK_EQ(mds_dir_lookup(st, mds_store_root(st), "d", 1, &d, NULL), 0);
	int rc = mds_dir_lookup(st, d, "f", 1, &f, NULL);
	int found = rc == 0;
	if (found) {
		struct mds_layout_seg l;
		rc = mds_layout_get(st, f, MDS_LAYOUT_REC, &l);
		if (rc)
			fprintf(stderr, "/d/f exists without its layout record (%d)\n", rc);
		CHECK_EQ(rc, 0);
		struct layout_policy want = policy(), got;
		CHECK_EQ(layout_policy_decode(l.flags, &got), 0);
		CHECK_EQ(layout_policy_encode(&got), layout_policy_encode(&want));
	} else {
		CHECK_EQ(rc, -ENOENT);
	}
	mds_store_close(st);
	globfree(&g);
	return found;
}

int main(void)
{
	int with_file = 0, finished = 0;
	for (int k = 1; k <= 8 && !finished; k++) {
		char dir[] = "/tmp/braid-create-crash-XXXXXX";
		CHECK(mkdtemp(dir));
		fflush(NULL);
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0)
			child(dir, k);
		int status;
		CHECK_EQ(waitpid(pid, &status, 0), pid);
		CHECK(WIFEXITED(status));
		CHECK(WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3);
		finished = WEXITSTATUS(status) == 3;
		int found = check_store(dir);
		fprintf(stderr, "crash after sync %d: %s\n", k,
			finished ? "none (the OPEN finished)"
			: found	 ? "file with its policy"
				 : "no file");
		with_file += found;
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		CHECK_EQ(system(cmd), 0);
	}
	CHECK(finished);       /* every sync of the OPEN was crashed after */
	CHECK(with_file >= 2); /* some crash left the file (and so did the finish) */
	return 0;
}
