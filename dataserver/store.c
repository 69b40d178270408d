/* SPDX-License-Identifier: MIT */
/*
 * The braid-ds object store (see store.h for the contract; store_impl.h
 * for the on-disk format and which file holds what): open and close, the
 * store.meta file, the store's identity and counters.
 */
#include "config.h"

/* before <sys/stat.h>, whose st_mtime macro would rename a member in it */
#include "braid_ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "dataserver/store_impl.h"

_Static_assert(DS_KEY_SIZE == BRAID_CTL_KEY_SIZE, "object key size");
_Static_assert(DS_VERIFIER_SIZE == BRAID_CTL_VERIFIER_SIZE, "verifier size");
_Static_assert(DS_UUID_SIZE == BRAID_CTL_UUID_SIZE, "uuid size");

static const char store_magic[8] = "BRAIDSTO";

void st_log(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("braid-ds: store: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* --------------------------------------------------------- store.meta */

struct store_meta {
	unsigned block_size;
	uint8_t uuid[DS_UUID_SIZE];
	uint64_t boot, last_unclean;
	bool clean;
};

static int meta_read(int dirfd, struct store_meta *m)
{
	uint8_t b[STORE_META_SIZE];
	int fd = openat(dirfd, "store.meta", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = pread(fd, b, sizeof(b), 0);
	int err = errno;
	close(fd);
	if (n < 0)
		return -err;
	if (n != sizeof(b) || memcmp(b, store_magic, 8) || get_le32(b + 8) != STORE_VERSION ||
	    get_le32(b + 60) != crc32c(b, 60)) {
		st_log("store.meta: not a version %d store, or damaged", STORE_VERSION);
		return -EIO;
	}
	m->block_size = get_le32(b + 12);
	memcpy(m->uuid, b + 16, DS_UUID_SIZE);
	m->boot = get_le64(b + 32);
	m->last_unclean = get_le64(b + 40);
	m->clean = get_le32(b + 48) != 0;
	return 0;
}

static int fsync_at(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = fsync(fd) ? -errno : 0;
	close(fd);
	return rc;
}

/* Replace store.meta durably: temporary file, fsync, rename, fsync the directory. */
static int meta_write(int dirfd, const struct store_meta *m)
{
	uint8_t b[STORE_META_SIZE] = {0};
	memcpy(b, store_magic, 8);
	put_le32(b + 8, STORE_VERSION);
	put_le32(b + 12, m->block_size);
	memcpy(b + 16, m->uuid, DS_UUID_SIZE);
	put_le64(b + 32, m->boot);
	put_le64(b + 40, m->last_unclean);
	put_le32(b + 48, m->clean);
	put_le32(b + 60, crc32c(b, 60));
	int fd = openat(dirfd, "store.meta.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int rc = 0;
	if (pwrite(fd, b, sizeof(b), 0) != sizeof(b) || fsync(fd))
		rc = errno ? -errno : -EIO;
	close(fd);
	if (!rc && renameat(dirfd, "store.meta.tmp", dirfd, "store.meta"))
		rc = -errno;
	if (!rc)
		rc = fsync_at(dirfd, ".");
	return rc;
}

static int store_init(int dirfd, const struct ds_store_opts *o, struct store_meta *m)
{
	int rc;
	*m = (struct store_meta){.block_size = o->block_size ? o->block_size : DS_BLOCK_DEFAULT,
				 .clean = true};
	if (getrandom(m->uuid, sizeof(m->uuid), 0) != sizeof(m->uuid))
		return -EIO;
	if (mkdirat(dirfd, "objects", 0700) && errno != EEXIST)
		return -errno;
	int ofd = openat(dirfd, "objects", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ofd < 0)
		return -errno;
	for (unsigned i = 0; i < NSUB; i++) {
		char n[3];
		snprintf(n, sizeof(n), "%02x", i);
		if (mkdirat(ofd, n, 0700) && errno != EEXIST) {
			rc = -errno;
			close(ofd);
			return rc;
		}
	}
	rc = fsync(ofd) ? -errno : 0;
	close(ofd);
	return rc ? rc : meta_write(dirfd, m);
}

/* ------------------------------------------------------- open and close */

void ds_store_verifier(const struct ds_store *st, uint8_t verf[DS_VERIFIER_SIZE])
{
	memcpy(verf, st->verf, DS_VERIFIER_SIZE);
}

void ds_store_uuid(const struct ds_store *st, uint8_t uuid[DS_UUID_SIZE])
{
	memcpy(uuid, st->uuid, DS_UUID_SIZE);
}

unsigned ds_store_block_size(const struct ds_store *st)
{
	return st->bs;
}

bool ds_store_direct(const struct ds_store *st)
{
	return st->direct;
}

uint64_t ds_store_objects(const struct ds_store *st)
{
	return __atomic_load_n(&st->nobjects, __ATOMIC_RELAXED);
}

void ds_store_counters(const struct ds_store *st, struct ds_store_counters *out)
{
	const uint64_t *src = (const uint64_t *)&st->ctr;
	uint64_t *dst = (uint64_t *)out;
	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

int ds_store_space(const struct ds_store *st, uint64_t *total, uint64_t *avail)
{
	struct statvfs sv;
	if (fstatvfs(st->dirfd, &sv))
		return -errno;
	if (total)
		*total = (uint64_t)sv.f_blocks * sv.f_frsize;
	if (avail)
		*avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	return 0;
}

/* ------------------------------------------------------------- fullness */

void st_note_nospc(struct ds_store *st)
{
	ctr_add(&st->ctr.nospc, 1);
	uint64_t avail = 0;
	ds_store_space(st, NULL, &avail);
	/* the lowest free space seen refused: growth is measured from it */
	uint64_t cur = atomic_load(&st->nospc_avail);
	bool was_full = cur != 0;
	while ((!cur || avail + 1 < cur) &&
	       !atomic_compare_exchange_weak(&st->nospc_avail, &cur, avail + 1))
		;
	if (!was_full && st->space_changed)
		st->space_changed(st->space_arg);
}

void st_note_freed(struct ds_store *st)
{
	atomic_store(&st->nospc_avail, 0);
	if (st->space_changed)
		st->space_changed(st->space_arg);
}

bool ds_store_full(struct ds_store *st, uint64_t avail)
{
	uint64_t v = atomic_load(&st->nospc_avail);
	if (!v)
		return false;
	if (avail <= v - 1 + DS_STORE_FULL_SLACK)
		return true;
	atomic_compare_exchange_strong(&st->nospc_avail, &v, 0);
	return false;
}

/* Whether the filesystem under dirfd takes O_DIRECT (open and one aligned write). */
static bool probe_direct(int dirfd)
{
	const char *name = "store.direct-probe";
	int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0600);
	void *b = abuf(DS_STORE_ALIGN);
	bool ok = false;
	if (fd >= 0 && b) {
		memset(b, 0, DS_STORE_ALIGN);
		ok = pwrite(fd, b, DS_STORE_ALIGN, 0) == DS_STORE_ALIGN;
	}
	free(b);
	if (fd >= 0)
		close(fd);
	unlinkat(dirfd, name, 0);
	return ok;
}

static void store_free(struct ds_store *st)
{
	for (unsigned i = 0; i < NSUB; i++)
		if (st->subfd[i] >= 0)
			close(st->subfd[i]);
	for (unsigned i = 0; i < NSHARDS; i++) {
		free(st->shards[i].buckets);
		pthread_mutex_destroy(&st->shards[i].mu);
	}
	for (unsigned i = 0; i < NRLOCKS; i++)
		pthread_rwlock_destroy(&st->rlocks[i]);
	while (st->ring_free) {
		struct ds_ring *r = st->ring_free;
		st->ring_free = r->next;
		st_ring_free(r);
	}
	pthread_mutex_destroy(&st->ring_mu);
	if (st->lockfd >= 0)
		close(st->lockfd); /* releases the flock */
	if (st->dreads_fd >= 0)
		close(st->dreads_fd);
	if (st->dirfd >= 0)
		close(st->dirfd);
	free(st);
}

int ds_store_open(const char *dir, const struct ds_store_opts *opts, struct ds_store **out)
{
	static const struct ds_store_opts defaults;
	const struct ds_store_opts *o = opts ? opts : &defaults;
	struct store_meta m;
	int rc;

	if (!dir || !out)
		return -EINVAL;
	if (o->block_size && (o->block_size < 4096 || o->block_size > (1u << 20) ||
			      (o->block_size & (o->block_size - 1))))
		return -EINVAL;
	struct ds_store *st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->lockfd = -1;
	st->dreads_fd = -1;
	for (unsigned i = 0; i < NSUB; i++)
		st->subfd[i] = -1;
	pthread_mutex_init(&st->ring_mu, NULL);
	for (unsigned i = 0; i < NRLOCKS; i++)
		pthread_rwlock_init(&st->rlocks[i], NULL);
	unsigned max_open = o->max_open ? o->max_open : 1024;
	st->lru_max = max_open / NSHARDS > 2 ? max_open / NSHARDS : 2;
	unsigned nbuckets = 16;
	while (nbuckets < 2 * st->lru_max)
		nbuckets *= 2;
	bool nomem = false;
	for (unsigned i = 0; i < NSHARDS; i++) {
		pthread_mutex_init(&st->shards[i].mu, NULL);
		st->shards[i].nbuckets = nbuckets;
		st->shards[i].buckets = calloc(nbuckets, sizeof(struct ds_obj *));
		nomem |= !st->shards[i].buckets;
	}
	st->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (st->dirfd < 0 || nomem) {
		rc = nomem ? -ENOMEM : -errno;
		goto fail;
	}

	/* nothing is created in a directory that holds no store unless asked */
	rc = meta_read(st->dirfd, &m);
	if (rc && (rc != -ENOENT || !o->create))
		goto fail;
	st->lockfd = openat(st->dirfd, "store.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (st->lockfd < 0 || flock(st->lockfd, LOCK_EX | LOCK_NB)) {
		rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
		goto fail;
	}
	rc = meta_read(st->dirfd, &m);
	if (rc == -ENOENT && o->create)
		rc = store_init(st->dirfd, o, &m);
	if (rc)
		goto fail;
	if (o->block_size && o->block_size != m.block_size)
		st_log("%s: keeps its block size %u (asked for %u)", dir, m.block_size,
		       o->block_size);
	st->bs = m.block_size;
	if (st->bs < 4096 || st->bs > (1u << 20) || (st->bs & (st->bs - 1))) {
		rc = -EIO;
		goto fail;
	}
	st->bs_shift = (unsigned)__builtin_ctz(st->bs);
	st->region_shift = st->bs_shift > REGION_SHIFT ? st->bs_shift : REGION_SHIFT;

	/* a new boot; remember whether the last one ended without ds_store_close */
	if (!m.clean) {
		m.last_unclean = m.boot;
		st_log("%s: not closed cleanly (boot %llu); change values move on", dir,
		       (unsigned long long)m.boot);
	}
	m.boot++;
	m.clean = false;
	rc = meta_write(st->dirfd, &m);
	if (rc)
		goto fail;
	st->boot = m.boot;
	st->last_unclean = m.last_unclean;
	memcpy(st->uuid, m.uuid, DS_UUID_SIZE);
	uint32_t rnd;
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd)) {
		rc = -EIO;
		goto fail;
	}
	put_le64(st->verf, st->boot << 32 | rnd);

	int ofd = openat(st->dirfd, "objects", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ofd < 0) {
		rc = -errno;
		goto fail;
	}
	for (unsigned i = 0; i < NSUB; i++) {
		char n[3];
		snprintf(n, sizeof(n), "%02x", i);
		st->subfd[i] = openat(ofd, n, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (st->subfd[i] < 0) {
			rc = -errno;
			close(ofd);
			goto fail;
		}
	}
	close(ofd);
	if ((rc = st_scan_count(st, &st->nobjects))) {
		st_log("%s: counting the objects: %s", dir, strerror(-rc));
		goto fail;
	}

	st->io = o->io;
	st->test_mapped_hook = o->test_mapped_hook;
	st->test_arg = o->test_arg;
	st->test_disk_reads = o->test_disk_reads;
	st_disk_reads_open(st, st->dirfd);
	st->space_changed = o->space_changed;
	st->space_arg = o->space_arg;
	st_map_sigbus_install();
	if (st->io == DS_STORE_IO_URING) {
		struct ds_ring *r = st_ring_get(st);
		if (!r) {
			rc = -ENOMEM;
			goto fail;
		}
		if (!r->uring) {
			st_log("%s: io_uring unavailable; using plain syscalls", dir);
			st->io = DS_STORE_IO_PSYNC;
		}
		st_ring_put(st, r);
	}
	st->direct_ok = probe_direct(st->dirfd);
	st->direct = o->direct && st->direct_ok;
	if (o->direct && !st->direct_ok)
		st_log("%s: the filesystem refuses O_DIRECT; data I/O goes through the page "
		       "cache",
		       dir);
	*out = st;
	return 0;
fail:
	store_free(st);
	return rc;
}

int ds_store_close(struct ds_store *st)
{
	int rc = 0;
	if (!st)
		return 0;
	struct ds_ring *r = st_ring_get(st);
	for (unsigned i = 0; i < NSHARDS; i++) {
		struct ds_shard *sh = &st->shards[i];
		for (unsigned j = 0; j < sh->nbuckets; j++) {
			while (sh->buckets[j]) {
				struct ds_obj *o = sh->buckets[j];
				sh->buckets[j] = o->hnext;
				if (o->refs)
					st_log("object %s: still in use at close", o->name);
				int orc = r ? st_obj_release(st, r, o) : -ENOMEM;
				rc = rc ? rc : orc;
			}
		}
	}
	if (r)
		st_ring_put(st, r);
	/* unstable writes too: a clean close leaves nothing for the next boot to doubt */
	if (syncfs(st->dirfd) && !rc)
		rc = -errno;
	struct store_meta m;
	int mrc = meta_read(st->dirfd, &m);
	if (!mrc && !rc) {
		m.clean = true;
		mrc = meta_write(st->dirfd, &m);
	}
	rc = rc ? rc : mrc;
	store_free(st);
	return rc;
}
