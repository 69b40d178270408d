/* SPDX-License-Identifier: MIT */
/*
 * Acknowledged means synced, not just committed.  SIGKILL keeps the page
 * cache, so store-crash-sigkill cannot tell the two apart; this test can.
 * It interposes the writes LMDB makes to the store's data.mdb (pwrite,
 * write, writev after lseek) and fdatasync()/fsync(), and keeps a
 * "durable image" that receives a write only when an fdatasync() of the
 * file returns: the file as a power cut would leave it if no unsynced
 * write reached the disk.  Four threads run synchronous changes (the plan
 * of t_plan_step()); at random moments the image is copied.  Each copy
 * must open as a store holding every op acknowledged before the copy.
 * Last, fdatasync() fails once: that op and every later one get -EIO.
 */
#include "config.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "tests/mds/store-test.h"

#define NTHREADS 4
#define MAXK	 20000
#define NSNAPS	 12

/*
 * The interposer.  shim_lock guards the pending list and the image, so a
 * copy taken under it sees whole fdatasync()s only.
 */
static pthread_mutex_t shim_lock = PTHREAD_MUTEX_INITIALIZER;
static char live_path[4200]; /* .../live/data.mdb; set before the store opens */
static int image_fd = -1;
struct pending {
	off_t off;
	size_t len;
	uint8_t *data;
};
static struct pending *pend;
static size_t npend, pend_cap;
static uint64_t synced_writes, dsync_writes;
static _Atomic bool fail_syncs; /* fdatasync() of data.mdb says EIO */

static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static int (*real_fdatasync)(int);
static int (*real_fsync)(int);

static void shim_init(void)
{
	if (!real_pwrite) {
		real_pwrite =
		    (ssize_t(*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
		real_write = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
		real_writev =
		    (ssize_t(*)(int, const struct iovec *, int))dlsym(RTLD_NEXT, "writev");
		real_fdatasync = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
		real_fsync = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
	}
}

static bool is_live(int fd)
{
	char p[64], target[4200];
	if (!live_path[0])
		return false;
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(p, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = 0;
	return strcmp(target, live_path) == 0;
}

static void image_write(off_t off, const void *buf, size_t len)
{
	CHECK(real_pwrite(image_fd, buf, len, off) == (ssize_t)len);
}

/* Records 'len' bytes written at 'off' (the write already happened). */
static void shim_record(int fd, off_t off, const struct iovec *iov, int iovcnt, size_t len)
{
	if (len == 0 || !is_live(fd))
		return;
	pthread_mutex_lock(&shim_lock);
	bool dsync = fcntl(fd, F_GETFL) & O_DSYNC;
	for (int i = 0; i < iovcnt && len; i++) {
		size_t n = iov[i].iov_len < len ? iov[i].iov_len : len;
		if (dsync) {
			image_write(off, iov[i].iov_base, n); /* synchronous write: durable now */
			dsync_writes++;
		} else {
			if (npend == pend_cap) {
				pend_cap = pend_cap ? 2 * pend_cap : 256;
				pend = realloc(pend, pend_cap * sizeof(*pend));
				CHECK(pend);
			}
			uint8_t *copy = malloc(n);
			CHECK(copy);
			memcpy(copy, iov[i].iov_base, n);
			pend[npend++] = (struct pending){off, n, copy};
		}
		off += (off_t)n;
		len -= n;
	}
	pthread_mutex_unlock(&shim_lock);
}

static ssize_t shim_pwrite(int fd, const void *buf, size_t len, off_t off)
{
	shim_init();
	ssize_t r = real_pwrite(fd, buf, len, off);
	struct iovec iov = {(void *)buf, len};
	if (r > 0)
		shim_record(fd, off, &iov, 1, (size_t)r);
	return r;
}

ssize_t write(int fd, const void *buf, size_t len)
{
	shim_init();
	off_t off = live_path[0] ? lseek(fd, 0, SEEK_CUR) : -1;
	ssize_t r = real_write(fd, buf, len);
	struct iovec iov = {(void *)buf, len};
	if (r > 0 && off >= 0)
		shim_record(fd, off, &iov, 1, (size_t)r);
	return r;
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	shim_init();
	off_t off = live_path[0] ? lseek(fd, 0, SEEK_CUR) : -1;
	ssize_t r = real_writev(fd, iov, iovcnt);
	if (r > 0 && off >= 0)
		shim_record(fd, off, iov, iovcnt, (size_t)r);
	return r;
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	return shim_pwrite(fd, buf, len, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off)
{
	return shim_pwrite(fd, buf, len, off);
}

/* A completed sync makes every earlier write durable, in order. */
static void shim_synced(int fd)
{
	if (!is_live(fd))
		return;
	pthread_mutex_lock(&shim_lock);
	for (size_t i = 0; i < npend; i++) {
		image_write(pend[i].off, pend[i].data, pend[i].len);
		free(pend[i].data);
	}
	synced_writes += npend;
	npend = 0;
	pthread_mutex_unlock(&shim_lock);
}

int fdatasync(int fd)
{
	shim_init();
	if (atomic_load(&fail_syncs) && is_live(fd)) {
		errno = EIO;
		return -1;
	}
	int r = real_fdatasync(fd);
	if (r == 0)
		shim_synced(fd);
	return r;
}

int fsync(int fd)
{
	shim_init();
	int r = real_fsync(fd);
	if (r == 0)
		shim_synced(fd);
	return r;
}

/* The workload. */
static struct mds_store *s;
static uint64_t dir;
static _Atomic uint32_t done_k[NTHREADS]; /* steps acknowledged */
static _Atomic bool stop;

static void *worker_main(void *arg)
{
	unsigned t = (unsigned)(intptr_t)arg;
	for (uint32_t k = 0; k < MAXK && !atomic_load(&stop); k++) {
		CHECK_EQ(t_plan_step(s, dir, t, k), 0);
		atomic_store(&done_k[t], k + 1);
	}
	return NULL;
}

struct snap {
	char path[4300];
	uint32_t lo[NTHREADS], hi[NTHREADS]; /* acknowledged before / after the copy */
	size_t pending;
};

static void snap_take(struct snap *sn, const char *base, int i)
{
	char file[4400];
	snprintf(sn->path, sizeof(sn->path), "%s/snap%d", base, i);
	CHECK_EQ(mkdir(sn->path, 0700), 0);
	snprintf(file, sizeof(file), "%.4300s/data.mdb", sn->path);
	for (int t = 0; t < NTHREADS; t++)
		sn->lo[t] = atomic_load(&done_k[t]);
	pthread_mutex_lock(&shim_lock);
	sn->pending = npend;
	int out = open(file, O_WRONLY | O_CREAT | O_EXCL, 0600);
	CHECK(out >= 0);
	static uint8_t buf[1 << 16];
	ssize_t n;
	for (off_t off = 0; (n = pread(image_fd, buf, sizeof(buf), off)) > 0; off += n)
		CHECK(real_pwrite(out, buf, (size_t)n, off) == n);
	CHECK(n == 0);
	close(out);
	pthread_mutex_unlock(&shim_lock);
	for (int t = 0; t < NTHREADS; t++)
		sn->hi[t] = atomic_load(&done_k[t]);
}

static uint8_t state[NTHREADS][MAXK], expect[MAXK];

static int seen_fn(void *arg, const struct mds_dirent *e)
{
	t_plan_seen(&state[0][0], MAXK, NTHREADS, e);
	(*(uint64_t *)arg)++;
	return 0;
}

/* The copy holds each thread's plan run to some step M, lo <= M <= hi + 1. */
static void snap_verify(const struct snap *sn)
{
	struct mds_store *c = test_open(sn->path, 0);
	int64_t d = t_lookup(c, mds_store_root(c), "d");
	CHECK(d > 0);
	memset(state, 0, sizeof(state));
	uint64_t entries = 0;
	bool eof;
	CHECK(mds_dir_readdir(c, (uint64_t)d, 0, 0, seen_fn, &entries, &eof) >= 0);
	CHECK(eof);
	CHECK_EQ(t_attr(c, (uint64_t)d).size, entries);
	for (int t = 0; t < NTHREADS; t++) {
		memset(expect, 0, sizeof(expect));
		for (uint32_t k = 0; k < sn->lo[t]; k++)
			t_plan_apply(expect, k);
		bool ok = memcmp(state[t], expect, MAXK) == 0;
		for (uint32_t m = sn->lo[t]; !ok && m <= sn->hi[t] && m < MAXK; m++) {
			t_plan_apply(expect, m);
			ok = memcmp(state[t], expect, MAXK) == 0;
		}
		if (!ok)
			fprintf(stderr,
				"%s: thread %d lacks acknowledged steps (acknowledged %u)\n",
				sn->path, t, sn->lo[t]);
		CHECK(ok);
	}
	mds_store_close(c);
}

int main(void)
{
	char base[4096], live[4200], image[4200];
	snprintf(base, sizeof(base), "%s", test_dir_make("power-loss"));
	snprintf(live, sizeof(live), "%s/live", base);
	snprintf(image, sizeof(image), "%s/image.mdb", base);
	CHECK_EQ(mkdir(live, 0700), 0);
	/* readlink() of the fd gives the canonical path. */
	char *real_base = realpath(base, NULL);
	CHECK(real_base);
	snprintf(live_path, sizeof(live_path), "%s/live/data.mdb", real_base);
	free(real_base);
	shim_init();
	image_fd = open(image, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(image_fd >= 0);

	s = test_open(live, 0);
	dir = (uint64_t)t_create(s, mds_store_root(s), "d", MDS_DIR);
	pthread_t th[NTHREADS];
	for (int t = 0; t < NTHREADS; t++)
		CHECK_EQ(pthread_create(&th[t], NULL, worker_main, (void *)(intptr_t)t), 0);
	static struct snap snaps[NSNAPS];
	unsigned seed = (unsigned)getpid();
	int with_pending = 0;
	for (int i = 0; i < NSNAPS; i++) {
		usleep(10000 + rand_r(&seed) % 40000);
		snap_take(&snaps[i], base, i);
		with_pending += snaps[i].pending > 0;
	}
	atomic_store(&stop, true);
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	/* A failed sync is final: a later one may "succeed" having lost the data. */
	atomic_store(&fail_syncs, true);
	CHECK_EQ(t_create(s, dir, "eio1", MDS_REG), -EIO);
	atomic_store(&fail_syncs, false);
	CHECK_EQ(t_create(s, dir, "eio2", MDS_REG), -EIO);
	struct mds_setattr_args sa = {.ino = dir, .mask = MDS_SET_MODE, .mode = 0700};
	CHECK_EQ(mds_inode_setattr(s, &sa, NULL), -EIO);
	mds_store_close(s);
	live_path[0] = 0;
	/* The failed commit left no trace; the store opens and works. */
	s = test_open(live, 0);
	CHECK_EQ(t_lookup(s, dir, "eio1"), -ENOENT);
	CHECK(t_create(s, dir, "eio1", MDS_REG) > 0);
	mds_store_close(s);

	CHECK(synced_writes > 0);
	for (int i = 0; i < NSNAPS; i++)
		snap_verify(&snaps[i]);
	uint32_t total = 0;
	for (int t = 0; t < NTHREADS; t++)
		total += atomic_load(&done_k[t]);
	printf("store-power-loss: ok (%u ops; %d copies, %d of them taken with unsynced writes "
	       "outstanding; %llu writes synced, %llu O_DSYNC)\n",
	       total, NSNAPS, with_pending, (unsigned long long)synced_writes,
	       (unsigned long long)dsync_writes);
	return 0;
}
