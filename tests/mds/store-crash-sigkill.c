/* SPDX-License-Identifier: MIT */
/*
 * Crash safety: a child process runs 4 threads of synchronous changes
 * (create, remove, rename: t_plan_step()) in one shared directory and writes the id of
 * each op to a pipe after the store acknowledged it; the parent kills it
 * with SIGKILL at a random moment, reopens the store and checks that every
 * acknowledged op is there.  Each thread's ops follow a fixed plan, so its
 * names must be exactly the plan's state after its last acknowledged op,
 * or after the one following it (in flight when the child died).  Several
 * rounds, each in a new directory, re-checking the earlier ones; the
 * directories' entry and link counts must agree with their entries.
 * BRAID_CRASH_SEED reproduces a run.
 */
#include "config.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "tests/mds/store-test.h"

#define ROUNDS	 4
#define NTHREADS 4
#define MAXK	 30000 /* ops per thread at most */

/* One acknowledged op: thread t finished plan step k (see t_plan_step()). */
struct ack {
	uint32_t round, thread, k;
};

struct child_thread {
	struct mds_store *s;
	uint64_t dir;
	uint32_t round, id;
	int fd;
};

static void *child_main(void *arg)
{
	struct child_thread *c = arg;
	for (uint32_t k = 0; k < MAXK; k++) {
		if (t_plan_step(c->s, c->dir, c->id, k))
			_exit(3);
		struct ack a = {c->round, c->id, k};
		if (write(c->fd, &a, sizeof(a)) != sizeof(a))
			_exit(4);
	}
	return NULL;
}

static void child_run(const char *path, uint32_t round, int fd)
{
	struct mds_store *s = test_open(path, 0);
	char dn[16];
	snprintf(dn, sizeof(dn), "round%u", round);
	int64_t d = t_create(s, mds_store_root(s), dn, MDS_DIR);
	if (d < 0)
		_exit(2);
	struct ack start = {round, UINT32_MAX, 0};
	if (write(fd, &start, sizeof(start)) != sizeof(start))
		_exit(4);
	struct child_thread c[NTHREADS];
	pthread_t th[NTHREADS];
	for (uint32_t i = 0; i < NTHREADS; i++) {
		c[i] = (struct child_thread){s, (uint64_t)d, round, i, fd};
		pthread_create(&th[i], NULL, child_main, &c[i]);
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	mds_store_close(s);
	_exit(0);
}

/* last[round][thread]: the highest acknowledged step, -1 for none. */
static int64_t last[ROUNDS][NTHREADS];
static bool round_started[ROUNDS];

struct seen {
	uint8_t (*state)[MAXK]; /* [NTHREADS][MAXK] */
	uint64_t entries;
};

static int seen_fn(void *arg, const struct mds_dirent *e)
{
	struct seen *sn = arg;
	t_plan_seen(&sn->state[0][0], MAXK, NTHREADS, e);
	CHECK_EQ(e->type, MDS_REG);
	CHECK_EQ(e->attr->nlink, 1);
	sn->entries++;
	return 0;
}

static uint8_t expect_a[MAXK], expect_b[MAXK];

static void verify(const char *path, int rounds_done)
{
	struct mds_store *s = test_open(path, 0);
	uint64_t root = mds_store_root(s);
	static uint8_t state[NTHREADS][MAXK];
	int dirs = 0;
	for (int r = 0; r < rounds_done; r++) {
		char dn[16];
		snprintf(dn, sizeof(dn), "round%d", r);
		int64_t d = t_lookup(s, root, dn);
		if (!round_started[r]) {
			/* Killed before it said its directory was made: either way. */
			CHECK(d > 0 || d == -ENOENT);
			dirs += d > 0;
			continue;
		}
		CHECK(d > 0);
		dirs++;
		memset(state, 0, sizeof(state));
		struct seen sn = {state, 0};
		bool eof;
		CHECK(mds_dir_readdir(s, (uint64_t)d, 0, MDS_READDIR_ATTRS, seen_fn, &sn, &eof) >=
		      0);
		CHECK(eof);
		struct mds_attr da = t_attr(s, (uint64_t)d);
		CHECK_EQ(da.size, sn.entries);
		CHECK_EQ(da.nlink, 2);
		for (int t = 0; t < NTHREADS; t++) {
			memset(expect_a, 0, sizeof(expect_a));
			for (int64_t k = 0; k <= last[r][t]; k++)
				t_plan_apply(expect_a, (uint32_t)k);
			memcpy(expect_b, expect_a, sizeof(expect_b));
			if (last[r][t] + 1 < MAXK)
				t_plan_apply(expect_b, (uint32_t)(last[r][t] + 1));
			bool a = memcmp(state[t], expect_a, MAXK) == 0;
			bool b = memcmp(state[t], expect_b, MAXK) == 0;
			if (!a && !b) {
				for (int k = 0; k < MAXK; k++)
					if (state[t][k] != expect_a[k])
						fprintf(stderr,
							"round %d thread %d step %d: have %d, "
							"acknowledged state %d\n",
							r, t, k, state[t][k], expect_a[k]);
				CHECK(a || b);
			}
		}
	}
	struct mds_attr ra = t_attr(s, root);
	CHECK_EQ(ra.size, (uint64_t)dirs);
	CHECK_EQ(ra.nlink, 2 + (uint64_t)dirs);
	mds_store_close(s);
}

int main(void)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s", test_dir_make("crash"));
	const char *seed_env = getenv("BRAID_CRASH_SEED");
	unsigned seed =
	    seed_env ? (unsigned)atoi(seed_env) : (unsigned)time(NULL) ^ (unsigned)getpid();
	printf("seed %u\n", seed);
	fflush(stdout);
	srand(seed);
	memset(last, 0xff, sizeof(last));

	uint64_t total_acks = 0;
	for (uint32_t round = 0; round < ROUNDS; round++) {
		int p[2];
		CHECK_EQ(pipe(p), 0);
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			test_dir[0] = 0; /* the parent cleans up */
			close(p[0]);
			child_run(path, round, p[1]);
		}
		close(p[1]);
		/* Read acknowledgements until the chosen moment, then kill. */
		int kill_ms = 100 + rand() % 400;
		double deadline = test_now() + kill_ms / 1000.0;
		static uint8_t buf[1 << 16];
		size_t have = 0;
		bool eof = false, killed = false;
		while (!eof) {
			double now = test_now();
			if (!killed && now >= deadline) {
				kill(pid, SIGKILL);
				killed = true;
			}
			struct pollfd pfd = {p[0], POLLIN, 0};
			int wait_ms = killed ? 1000 : (int)((deadline - now) * 1000) + 1;
			if (poll(&pfd, 1, wait_ms) <= 0)
				continue;
			ssize_t n = read(p[0], buf + have, sizeof(buf) - have);
			CHECK(n >= 0);
			if (n == 0) {
				eof = true;
				break;
			}
			have += (size_t)n;
			size_t whole = have / sizeof(struct ack) * sizeof(struct ack);
			for (size_t off = 0; off < whole; off += sizeof(struct ack)) {
				struct ack a;
				memcpy(&a, buf + off, sizeof(a));
				CHECK_EQ(a.round, round);
				if (a.thread == UINT32_MAX) {
					round_started[round] = true;
					continue;
				}
				CHECK(a.thread < NTHREADS);
				CHECK_EQ(a.k, last[round][a.thread] + 1); /* in order per thread */
				last[round][a.thread] = a.k;
				total_acks++;
			}
			memmove(buf, buf + whole, have - whole);
			have -= whole;
		}
		close(p[0]);
		int status;
		CHECK_EQ(waitpid(pid, &status, 0), pid);
		CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ||
		      (WIFEXITED(status) && WEXITSTATUS(status) == 0));
		printf("round %u: killed after %d ms; acknowledged steps per thread:", round,
		       kill_ms);
		for (int t = 0; t < NTHREADS; t++)
			printf(" %lld", (long long)last[round][t] + 1);
		printf("\n");
		fflush(stdout);
		verify(path, (int)round + 1);
	}
	printf("store-crash-sigkill: ok (%llu acknowledged ops, all present)\n",
	       (unsigned long long)total_acks);
	return 0;
}
