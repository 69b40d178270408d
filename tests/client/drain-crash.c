/* SPDX-License-Identifier: MIT */
/*
 * Drain and rebalance survive crashes (issue 15 item 4): braid-mds and
 * three braid-ds as processes, our client writing, braidctl directing.
 * Moves are throttled ([mds] resilver_rate) so that the crashes land in
 * the middle of one.
 *
 *  1. Six files of 12 MiB (three with one copy, three with two mirrors); a
 *     writer appends to each in turn.  Data server A is drained.  While a
 *     move runs (braidctl rebuild names the file being copied), braid-mds
 *     is SIGKILLed and started again (the writer pauses and mounts again,
 *     as a client would after the server's restart); then, during the next
 *     move, the data server the copy goes to is SIGKILLed and started
 *     again.  The drain must finish: no file names A, A holds no object.
 *  2. A is added back and a rebalance started; braid-mds is SIGKILLed in
 *     the middle of it and restarted; the rebalance must resume (its flag
 *     is durable) and give A copies.
 * At the end of each, every file reads back as the writer wrote it.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>

#include "tests/client/proc-test.h"

#define MiB	(1u << 20)
#define NFILES	6
#define BOUND_S 120.0

static struct pc P;
static struct ffc *C;
static pthread_mutex_t cmu = PTHREAD_MUTEX_INITIALIZER; /* C and the sizes */
static uint64_t sizes[NFILES];
static char paths[NFILES][32];
static atomic_int stop_writer, appends;

static void *writer(void *arg)
{
	(void)arg;
	uint8_t *buf = malloc(256 << 10);
	CHECK(buf);
	while (!atomic_load(&stop_writer)) {
		for (unsigned i = 0; i < NFILES && !atomic_load(&stop_writer); i++) {
			pthread_mutex_lock(&cmu);
			dt_fill(buf, sizes[i], 256 << 10, 20 + i);
			double secs;
			int rc = ffct_write_sync(C, paths[i], buf, sizes[i], 256 << 10, false, &secs);
			/* Our client keeps no copy of what it wrote UNSTABLE: a data
			 * server killed between the WRITE and the COMMIT makes fsync
			 * fail with EIO, as it must, and the application, which still
			 * has its buffer, writes it again (the Linux client resends
			 * from its page cache instead).  Any other error, or EIO
			 * again and again, fails the test; sizes[] counts only
			 * appends that fsync made durable. */
			for (int t = 0; rc == -EIO && t < 5; t++) {
				fprintf(stderr, "append to %s: fsync said EIO, writing it again\n",
					paths[i]);
				usleep(500 * 1000);
				rc = ffct_write_sync(C, paths[i], buf, sizes[i], 256 << 10, false, &secs);
			}
			if (rc)
				fprintf(stderr, "append to %s: %s\n", paths[i], strerror(-rc));
			CHECK_EQ(rc, 0);
			sizes[i] += 256 << 10;
			pthread_mutex_unlock(&cmu);
			atomic_fetch_add(&appends, 1);
			usleep(50 * 1000);
		}
	}
	free(buf);
	return NULL;
}

/* Until a move's copy is running (braidctl rebuild names its file). */
static void wait_copying(const char *what)
{
	double t0 = cl_now();
	while (!pc_jnum(pc_ctl(&P, "rebuild"), "copying_inode")) {
		CHECK(cl_now() - t0 < BOUND_S);
		usleep(20 * 1000);
	}
	printf("%s: a copy is running after %.2f s\n", what, cl_now() - t0);
}

static void crash_mds(void)
{
	pthread_mutex_lock(&cmu); /* the writer pauses */
	/* our client cannot reclaim across a server restart (it would start
	 * over, as this does): it goes first, and comes back after */
	ffc_unmount(C);
	pc_kill_wait(P.mds_pid, SIGKILL);
	pc_start_mds(&P);
	C = pc_mount(&P);
	pthread_mutex_unlock(&cmu);
	printf("braid-mds SIGKILLed mid-move and started again\n");
}

static void check_files(void)
{
	pthread_mutex_lock(&cmu);
	for (unsigned i = 0; i < NFILES; i++)
		ffct_read_check(C, paths[i], sizes[i], 20 + i);
	pthread_mutex_unlock(&cmu);
}

int main(void)
{
	pc_init(&P, "drain-crash", "/ *(rw,no_root_squash,insecure)\n");
	P.mds_extra = "resilver_rate = 16m\n";
	pc_start_mds(&P);
	for (unsigned i = 0; i < 3; i++)
		pc_start_ds(&P, i);
	pc_wait_up(&P, 3);
	C = pc_mount(&P);
	CHECK_EQ(ffc_mkdir(C, "/one", 0755), 0);
	CHECK_EQ(ffc_mkdir(C, "/two", 0755), 0);
	CHECK(strstr(pc_ctl(&P, "policy set /two whole,mirrors=2"), "error") == NULL);
	uint8_t *buf = malloc(16 * MiB);
	CHECK(buf);
	for (unsigned i = 0; i < NFILES; i++) {
		snprintf(paths[i], sizeof(paths[i]), "/%s/f%u", i % 2 ? "two" : "one", i);
		sizes[i] = 12 * MiB;
		dt_fill(buf, 0, sizes[i], 20 + i);
		double secs;
		CHECK_EQ(ffct_write_sync(C, paths[i], buf, 0, sizes[i], true, &secs), 0);
	}
	free(buf);
	pthread_t w;
	CHECK_EQ(pthread_create(&w, NULL, writer, NULL), 0);

	/* ---- 1. drain A, with braid-mds and then a target killed mid-move */
	uint32_t a = pc_ds_id(&P, 0);
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "ds drain %u", a);
	pc_ctl(&P, cmd);
	wait_copying("drain");
	crash_mds();
	wait_copying("drain, after the restart");
	uint32_t to = (uint32_t)pc_jnum(pc_ctl(&P, "rebuild"), "copying_to");
	for (unsigned i = 0; i < 3; i++)
		if (to && pc_ds_id(&P, i) == to) {
			pc_kill_wait(P.ds_pid[i], SIGKILL);
			printf("braid-ds %u (id %u, the copy's target) SIGKILLed mid-move\n", i, to);
			sleep(1);
			pc_start_ds(&P, i);
		}
	double t0 = cl_now();
	for (;;) {
		const char *r = pc_ctl(&P, "rebuild");
		const char *l = pc_ctl(&P, "ds list");
		char pat[64];
		snprintf(pat, sizeof(pat), "\"id\": %u,", a);
		const char *e = strstr(l, pat);
		uint64_t objs = e ? pc_jnum(e, "objects") : 1;
		if (!pc_jnum(r, "stale_files") && !pc_jnum(r, "rebuild_files") && !objs)
			break;
		CHECK(cl_now() - t0 < BOUND_S);
		usleep(200 * 1000);
	}
	printf("drain done %.2f s after the crashes, %d appends so far\n", cl_now() - t0,
	       atomic_load(&appends));
	check_files();

	/* ---- 2. rebalance onto A, braid-mds killed in the middle */
	snprintf(cmd, sizeof(cmd), "ds add %u", a);
	pc_ctl(&P, cmd);
	pc_ctl(&P, "rebalance");
	wait_copying("rebalance");
	crash_mds();
	t0 = cl_now();
	for (;;) {
		const char *l = pc_ctl(&P, "ds list");
		char pat[64];
		snprintf(pat, sizeof(pat), "\"id\": %u,", a);
		const char *e = strstr(l, pat);
		char flag[300];
		snprintf(flag, sizeof(flag), "%s/mds/rebalance", P.dir);
		if (e && pc_jnum(e, "objects") && access(flag, F_OK) && !pc_jnum(pc_ctl(&P, "rebuild"), "stale_files"))
			break;
		CHECK(cl_now() - t0 < BOUND_S);
		usleep(200 * 1000);
	}
	printf("rebalance done %.2f s after the crash\n", cl_now() - t0);
	atomic_store(&stop_writer, 1);
	pthread_join(w, NULL);
	check_files();
	printf("%d appends, every byte read back\n", atomic_load(&appends));

	ffc_unmount(C);
	pc_finish(&P, 3);
	printf("ok\n");
	return 0;
}
