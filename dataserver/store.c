/* SPDX-License-Identifier: MIT */
/*
 * The braid-ds object store (see store.h for the contract).
 *
 * On-disk format, version 1 (all integers little-endian):
 *
 *   DIR/store.lock             flock()ed while a process has the store open
 *   DIR/store.meta             64 bytes: magic "BRAIDSTO", version, block size,
 *                              uuid, boot counter, last unclean boot, clean
 *                              flag, CRC32C; replaced by rename
 *   DIR/objects/HH/            256 directories, HH = objhash(key) >> 56 in hex
 *   DIR/objects/HH/K           data: object byte x at file offset x (sparse)
 *   DIR/objects/HH/K.meta      header in bytes 0..127, CRC table from 4096
 *   DIR/objects/HH/K.meta.tmp  a create in progress
 *
 * K is the key in lowercase hex.  The generation is in the header, not in the
 * name: a DS holds at most one object per key (braid_ctl.x), so one lookup by
 * name answers NOENT, STALE and EXIST.  The .meta file is the commit point:
 * the object exists iff it does.
 *
 * Header: magic "BRAIDOBJ", version, block size, key, generation, uid, gid,
 * mode, size, mtime, change, the boot that wrote it, CRC32C of the rest (see
 * obj_hdr_write for the offsets).  The object's size is the header's, not the
 * data file's length.
 *
 * CRC table: entry b (8 bytes at 4096 + 8b) covers data [b*bs, (b+1)*bs):
 * the CRC32C of the whole block (zeros past the data file's end) and a tag,
 * CRC_VALID, or 0 for a block never written (a hole), whose data must read
 * as zeros.  A block that does not match is never returned.
 *
 * Block size: 4 KiB by default.  The Linux NFS client writes whole pages, so
 * nearly every WRITE covers whole blocks and needs no read-modify-write;
 * 4 KiB is also the flash page and the O_DIRECT alignment, and a write torn
 * by a crash spoils only the blocks it was writing.  The cost is 8 bytes of
 * table per 4 KiB (0.2%), as btrfs pays (a CRC32C per 4 KiB sector).  With
 * 64 KiB blocks a 4 KiB write would read back and rewrite 60 KiB.
 *
 * Invariants, outside the window of an unsynced write lost by a crash:
 *  I1  data bytes in [size, roundup(size, bs)) are zero and the data file is
 *      no longer than roundup(size, bs);
 *  I2  table entries at and past roundup(size, bs) / bs are zero.
 * Writes write whole blocks (partial ones merged with the old data), so the
 * CRC of each block is computed over exactly what is on disk.
 *
 * Crash behaviour: an UNSTABLE write lost by a crash can leave a block whose
 * data and CRC entry disagree; reading it fails with -EIO and scrub reports
 * it until it is rewritten (the client resends it: the verifier changed).  A
 * partial-block rewrite of such a block fails too: the old data cannot be
 * verified.  Closing this needs ordering (a journal, or CRCs made durable
 * ahead of their data), which this version does not have.
 *
 * Change counter: kept in the header, written lazily (before every sync, on
 * eviction and at close).  After a crash a header may lag its data, so an
 * object whose header predates the last unclean shutdown takes a change value
 * never used before: max(change + 1, boot << 32).
 */
#include "config.h"

/* before <sys/stat.h>, whose st_mtime macro would rename a member in it */
#include "braid_ctl.h"

#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <isa-l/crc.h>
#include <liburing.h>

#include "dataserver/store.h"

_Static_assert(DS_KEY_SIZE == BRAID_CTL_KEY_SIZE, "object key size");
_Static_assert(DS_VERIFIER_SIZE == BRAID_CTL_VERIFIER_SIZE, "verifier size");
_Static_assert(DS_UUID_SIZE == BRAID_CTL_UUID_SIZE, "uuid size");

#define STORE_VERSION   1
#define STORE_META_SIZE 64
#define OBJ_HDR_SIZE    128
#define OBJ_TABLE_OFF   4096ull
#define CRC_VALID       0x4b4c4231u /* "1BLK" */
#define NSUB            256         /* object directories */
#define NSHARDS         64          /* object table shards */
#define NRLOCKS         1024        /* hashed range locks */
#define REGION_SHIFT    20          /* range lock granule: 1 MiB (or the block) */
#define RL_MAX          ((DS_STORE_MAX_IO >> REGION_SHIFT) + 2)
#define RING_DEPTH      8
#define SCRUB_CHUNK     (1u << 20)

static const char store_magic[8] = "BRAIDSTO";
static const char obj_magic[8] = "BRAIDOBJ";

/* ------------------------------------------------------------ utilities */

static void store_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void store_log(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("braid-ds: store: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void put_le32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static void put_le64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

static uint32_t get_le32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return le32toh(v);
}

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return le64toh(v);
}

/* CRC32C (Castagnoli, as iSCSI, ext4 and NVMe); chain with crc_update. */
static uint32_t crc_update(uint32_t crc, const void *p, size_t n)
{
	return crc32_iscsi((unsigned char *)p, (int)n, crc);
}

static uint32_t crc32c(const void *p, size_t n)
{
	return ~crc_update(~0u, p, n);
}

static bool all_zero(const uint8_t *p, size_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

static void *abuf(size_t n)
{
	void *p;
	return posix_memalign(&p, DS_STORE_ALIGN, n) ? NULL : p;
}

static uint64_t fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

/*
 * Part of the on-disk format: picks the directory (top byte) and orders
 * LIST (its cookies are hash values).  Never change it.
 */
static uint64_t objhash(const uint8_t key[DS_KEY_SIZE])
{
	return fmix64(get_le64(key) ^ fmix64(get_le64(key + 8) + 0x9e3779b97f4a7c15ull));
}

static void key_hex(const uint8_t key[DS_KEY_SIZE], char out[2 * DS_KEY_SIZE + 1])
{
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < DS_KEY_SIZE; i++) {
		out[2 * i] = hex[key[i] >> 4];
		out[2 * i + 1] = hex[key[i] & 15];
	}
	out[2 * DS_KEY_SIZE] = 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static bool key_parse(const char *s, uint8_t key[DS_KEY_SIZE])
{
	for (int i = 0; i < DS_KEY_SIZE; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		key[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

/* ------------------------------------------------------------- iovecs */

static size_t iov_total(const struct iovec *iov, int cnt)
{
	size_t n = 0;
	for (int i = 0; i < cnt; i++) {
		if (iov[i].iov_len > SIZE_MAX - n)
			return SIZE_MAX;
		n += iov[i].iov_len;
	}
	return n;
}

/* Append to dst[*dcnt..] the segments of src covering bytes [skip, skip + len). */
static void iov_slice(const struct iovec *src, int cnt, size_t skip, size_t len,
		      struct iovec *dst, int *dcnt)
{
	for (int i = 0; i < cnt && len; i++) {
		size_t l = src[i].iov_len;
		if (skip >= l) {
			skip -= l;
			continue;
		}
		size_t n = l - skip < len ? l - skip : len;
		dst[*dcnt].iov_base = (uint8_t *)src[i].iov_base + skip;
		dst[*dcnt].iov_len = n;
		(*dcnt)++;
		len -= n;
		skip = 0;
	}
}

/* Copy bytes [skip, skip + len) of src to dst. */
static void iov_gather(const struct iovec *src, int cnt, size_t skip, void *dst, size_t len)
{
	uint8_t *d = dst;
	for (int i = 0; i < cnt && len; i++) {
		size_t l = src[i].iov_len;
		if (skip >= l) {
			skip -= l;
			continue;
		}
		size_t n = l - skip < len ? l - skip : len;
		memcpy(d, (const uint8_t *)src[i].iov_base + skip, n);
		d += n;
		len -= n;
		skip = 0;
	}
}

/* Zero bytes [skip, end) of iov. */
static void iov_zero_from(const struct iovec *iov, int cnt, size_t skip)
{
	for (int i = 0; i < cnt; i++) {
		size_t l = iov[i].iov_len;
		if (skip >= l) {
			skip -= l;
			continue;
		}
		memset((uint8_t *)iov[i].iov_base + skip, 0, l - skip);
		skip = 0;
	}
}

static bool iov_aligned(const struct iovec *iov, int cnt)
{
	for (int i = 0; i < cnt; i++)
		if ((uintptr_t)iov[i].iov_base % DS_STORE_ALIGN || iov[i].iov_len % DS_STORE_ALIGN)
			return false;
	return true;
}

/* A read position in an iovec list. */
struct cur {
	const struct iovec *iov;
	int i;
	size_t off;
};

/* Feed the next len bytes to crc (when crc != NULL) or check they are zero. */
static bool cur_take(struct cur *c, size_t len, uint32_t *crc)
{
	bool zero = true;
	while (len) {
		const struct iovec *v = &c->iov[c->i];
		size_t n = v->iov_len - c->off < len ? v->iov_len - c->off : len;
		const uint8_t *p = (const uint8_t *)v->iov_base + c->off;
		if (crc)
			*crc = crc_update(*crc, p, n);
		else if (zero)
			zero = all_zero(p, n);
		c->off += n;
		len -= n;
		if (c->off == v->iov_len) {
			c->i++;
			c->off = 0;
		}
	}
	return zero;
}

/* ----------------------------------------------------------- structures */

struct crc_ent {
	uint32_t crc; /* little-endian on disk and here */
	uint32_t tag;
};

/*
 * One io_uring, used by one call at a time (submit, then wait).  A call takes
 * one from the store's pool and gives it back; the pool grows to the peak
 * number of concurrent calls (the worker threads), so in effect each worker
 * has its own ring, without thread-local state.
 */
struct ds_ring {
	struct ds_ring *next; /* st->ring_free link, under st->ring_mu */
	bool uring;           /* false: plain syscalls */
	bool broken;          /* submit or wait failed: free it, never reuse it */
	struct io_uring ring;
};

enum obj_state {
	OBJ_UNKNOWN, /* not looked up on disk yet (or the last load failed) */
	OBJ_ABSENT,
	OBJ_PRESENT,
};

/*
 * The in-memory handle of one key.  Lock order: lock, then range locks
 * (st->rlocks, in index order), then hdr_mu, then mu.  shard->mu is taken
 * holding no object's lock (obj_get, obj_put); under it, eviction takes an
 * idle object's hdr_mu and mu.
 */
struct ds_obj {
	/* Immutable. */
	uint8_t key[DS_KEY_SIZE];
	uint64_t h;
	char name[2 * DS_KEY_SIZE + 1];
	struct ds_shard *shard;

	/* shard->mu: table membership and the idle list. */
	struct ds_obj *hnext;
	struct ds_obj *lru_prev, *lru_next;
	unsigned refs;

	/*
	 * Held shared by READ, WRITE, COMMIT and STAT; exclusive by load,
	 * create, remove, truncate and setfence, so a fence change waits for
	 * the I/O checked against the old owner.  Prefers writers.
	 */
	pthread_rwlock_t lock;
	/* Written with lock exclusive; read with lock held. */
	enum obj_state state;
	uint64_t gen;
	uint32_t uid, gid, mode;
	int dfd, mfd; /* data (O_DIRECT when st->direct), .meta */
	struct obj_vmap *vmap; /* mu: dfd mapped for READs, while dfd is open */
	unsigned closes; /* counts closings of dfd/mfd (remove, failed create) */

	/* Serializes header writes, so an older header never lands last. */
	pthread_mutex_t hdr_mu;

	/* mu: a leaf lock, for the fields writers update under lock shared. */
	pthread_mutex_t mu;
	uint64_t size;
	struct timespec mtime;
	uint64_t change;
	uint64_t hdr_seq, hdr_written; /* header dirty while they differ */
	uint64_t write_seq, synced_seq; /* writes done; covered by a whole sync */
};

struct ds_shard {
	pthread_mutex_t mu;
	/* mu: */
	struct ds_obj **buckets;
	unsigned nbuckets; /* power of 2 */
	struct ds_obj *lru_head, *lru_tail; /* idle PRESENT objects, oldest first */
	unsigned nlru;
};

struct ds_store {
	/* Immutable after open. */
	int dirfd, lockfd, subfd[NSUB];
	unsigned bs, bs_shift, region_shift;
	bool direct;     /* data fds are O_DIRECT */
	bool direct_ok;  /* the filesystem takes O_DIRECT (scrub uses it) */
	enum ds_store_io io;
	unsigned lru_max; /* idle objects per shard */
	uint8_t verf[DS_VERIFIER_SIZE];
	uint8_t uuid[DS_UUID_SIZE];
	uint64_t boot, last_unclean;

	struct ds_shard shards[NSHARDS];
	/*
	 * Range locks, hashed by (object, region): a region's blocks and CRC
	 * entries.  Shared by reads and scrub, exclusive by writes.
	 */
	pthread_rwlock_t rlocks[NRLOCKS];

	pthread_mutex_t ring_mu;
	struct ds_ring *ring_free; /* ring_mu */
	bool ring_warned;          /* ring_mu */

	struct ds_store_counters ctr; /* updated with atomics, no lock */
	void (*test_mapped_hook)(int data_fd, void *arg);
	void *test_arg;
};

static void ctr_add(uint64_t *c, uint64_t v)
{
	__atomic_fetch_add(c, v, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------- rings */

static struct ds_ring *ring_get(struct ds_store *st)
{
	struct ds_ring *r;
	pthread_mutex_lock(&st->ring_mu);
	r = st->ring_free;
	if (r)
		st->ring_free = r->next;
	pthread_mutex_unlock(&st->ring_mu);
	if (r)
		return r;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	if (st->io == DS_STORE_IO_URING) {
		int rc = io_uring_queue_init(RING_DEPTH, &r->ring, 0);
		r->uring = rc == 0;
		if (rc) {
			pthread_mutex_lock(&st->ring_mu);
			if (!st->ring_warned)
				store_log("io_uring_queue_init: %s; syscalls instead",
					  strerror(-rc));
			st->ring_warned = true;
			pthread_mutex_unlock(&st->ring_mu);
		}
	}
	return r;
}

static void ring_free(struct ds_ring *r)
{
	if (r->uring)
		io_uring_queue_exit(&r->ring);
	free(r);
}

static void ring_put(struct ds_store *st, struct ds_ring *r)
{
	if (r->broken) {
		ring_free(r);
		return;
	}
	pthread_mutex_lock(&st->ring_mu);
	r->next = st->ring_free;
	st->ring_free = r;
	pthread_mutex_unlock(&st->ring_mu);
}

/* ------------------------------------------------------------ I/O batch */

enum iop_kind { IOP_READ, IOP_WRITE, IOP_FSYNC, IOP_FDATASYNC };

/* One operation of a batch; iov is the caller's and is advanced in place. */
struct iop {
	enum iop_kind kind;
	int fd;
	struct iovec *iov;
	int iovcnt;
	uint64_t off;
	uint64_t len;  /* bytes left to read or write */
	uint64_t done; /* bytes transferred */
	int err;
	bool direct;   /* O_DIRECT fd (a short read that ends misaligned is the end) */
	bool eof, fin;
};

static void iop_rw(struct iop *op, enum iop_kind kind, int fd, struct iovec *iov, int cnt,
		   uint64_t off)
{
	*op = (struct iop){ .kind = kind, .fd = fd, .iov = iov, .iovcnt = cnt, .off = off,
			    .len = iov_total(iov, cnt) };
}

static void iop_sync(struct iop *op, bool datasync, int fd)
{
	*op = (struct iop){ .kind = datasync ? IOP_FDATASYNC : IOP_FSYNC, .fd = fd };
}

static void iop_complete(struct ds_store *st, struct iop *op, int res)
{
	if (res == -EINTR || res == -EAGAIN)
		return; /* run it again */
	if (res < 0) {
		op->err = res;
		op->fin = true;
		return;
	}
	if (op->kind == IOP_FSYNC || op->kind == IOP_FDATASYNC) {
		ctr_add(op->kind == IOP_FSYNC ? &st->ctr.fsyncs : &st->ctr.fdatasyncs, 1);
		op->fin = true;
		return;
	}
	if (res == 0) {
		if (op->kind == IOP_READ)
			op->eof = true;
		else
			op->err = -EIO;
		op->fin = true;
		return;
	}
	size_t n = (size_t)res;
	op->done += n;
	op->off += n;
	op->len -= n;
	while (n) {
		size_t k = op->iov->iov_len < n ? op->iov->iov_len : n;
		op->iov->iov_base = (uint8_t *)op->iov->iov_base + k;
		op->iov->iov_len -= k;
		n -= k;
		if (op->iov->iov_len == 0) {
			op->iov++;
			op->iovcnt--;
		}
	}
	while (op->iovcnt && op->iov->iov_len == 0) {
		op->iov++;
		op->iovcnt--;
	}
	/* resubmitting there would fail with EINVAL: the file ends there */
	if (op->len && op->kind == IOP_READ && op->direct && op->off % DS_STORE_ALIGN)
		op->eof = true;
	op->fin = op->len == 0 || op->eof;
}

static int iop_syscall(const struct iop *op)
{
	ssize_t rc;
	switch (op->kind) {
	case IOP_READ:
		rc = preadv(op->fd, op->iov, op->iovcnt, (off_t)op->off);
		break;
	case IOP_WRITE:
		rc = pwritev(op->fd, op->iov, op->iovcnt, (off_t)op->off);
		break;
	case IOP_FSYNC:
		rc = fsync(op->fd);
		break;
	default:
		rc = fdatasync(op->fd);
		break;
	}
	return rc < 0 ? -errno : (int)rc;
}

static void iop_prep(struct io_uring_sqe *sqe, const struct iop *op)
{
	switch (op->kind) {
	case IOP_READ:
		io_uring_prep_readv(sqe, op->fd, op->iov, (unsigned)op->iovcnt, op->off);
		break;
	case IOP_WRITE:
		io_uring_prep_writev(sqe, op->fd, op->iov, (unsigned)op->iovcnt, op->off);
		break;
	default:
		io_uring_prep_fsync(sqe, op->fd,
				    op->kind == IOP_FDATASYNC ? IORING_FSYNC_DATASYNC : 0);
		break;
	}
}

/*
 * Whether op runs as a plain syscall.  Page-cache writes do: io_uring hands
 * them to a worker thread on filesystems without async buffered writes (ext4:
 * 33 us instead of 4 us per 4 KiB write, measured), and the caller waits for
 * the batch anyway.  O_DIRECT I/O, page-cache reads and syncs use the ring.
 */
static bool iop_inline(const struct ds_ring *r, const struct iop *op)
{
	return !r->uring || (op->kind == IOP_WRITE && !op->direct);
}

static void io_fail_all(struct ds_ring *r, struct iop *ops, unsigned n, int rc, const char *what)
{
	/* completions may still be owed: never reuse this ring */
	store_log("%s: %s", what, strerror(-rc));
	r->broken = true;
	for (unsigned i = 0; i < n; i++)
		if (!ops[i].fin) {
			ops[i].err = rc;
			ops[i].fin = true;
		}
}

/*
 * Run ops[0..n) to completion: the ring's submitted together, the inline ones
 * run while they are in flight, then all waited for; partial transfers are
 * resubmitted.  Returns the first error.
 */
static int io_run(struct ds_store *st, struct ds_ring *r, struct iop *ops, unsigned n)
{
	for (;;) {
		unsigned pending = 0, left = 0;
		for (unsigned i = 0; i < n; i++) {
			if (ops[i].fin || iop_inline(r, &ops[i]))
				continue;
			struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
			iop_prep(sqe, &ops[i]);
			io_uring_sqe_set_data64(sqe, i);
			pending++;
		}
		while (pending && io_uring_sq_ready(&r->ring)) {
			int rc = io_uring_submit(&r->ring);
			if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
				io_fail_all(r, ops, n, rc, "io_uring_submit");
				return rc;
			}
		}
		for (unsigned i = 0; i < n; i++)
			if (!ops[i].fin && iop_inline(r, &ops[i]))
				iop_complete(st, &ops[i], iop_syscall(&ops[i]));
		while (pending) {
			struct io_uring_cqe *cqe;
			int rc = io_uring_wait_cqe(&r->ring, &cqe);
			if (rc == -EINTR || rc == -EAGAIN)
				continue;
			if (rc < 0) {
				io_fail_all(r, ops, n, rc, "io_uring_wait_cqe");
				return rc;
			}
			iop_complete(st, &ops[io_uring_cqe_get_data64(cqe)], cqe->res);
			io_uring_cqe_seen(&r->ring, cqe);
			pending--;
		}
		for (unsigned i = 0; i < n; i++)
			left += !ops[i].fin;
		if (!left)
			break;
	}
	for (unsigned i = 0; i < n; i++)
		if (ops[i].err)
			return ops[i].err;
	return 0;
}

/* Read len bytes at off into buf; *got is what the file had (the rest is zeroed). */
static int io_pread(struct ds_store *st, struct ds_ring *r, int fd, void *buf, size_t len,
		    uint64_t off, size_t *got)
{
	struct iovec v = { buf, len };
	struct iop op;
	iop_rw(&op, IOP_READ, fd, &v, 1, off);
	int rc = io_run(st, r, &op, 1);
	if (rc)
		return rc;
	memset((uint8_t *)buf + op.done, 0, len - op.done);
	if (got)
		*got = op.done;
	return 0;
}

static int io_pwrite(struct ds_store *st, struct ds_ring *r, int fd, const void *buf, size_t len,
		     uint64_t off)
{
	struct iovec v = { (void *)buf, len };
	struct iop op;
	iop_rw(&op, IOP_WRITE, fd, &v, 1, off);
	return io_run(st, r, &op, 1);
}

static int io_fsync(struct ds_store *st, struct ds_ring *r, int fd, bool datasync)
{
	struct iop op;
	iop_sync(&op, datasync, fd);
	return io_run(st, r, &op, 1);
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
		store_log("store.meta: not a version %d store, or damaged", STORE_VERSION);
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
	uint8_t b[STORE_META_SIZE] = { 0 };
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
	*m = (struct store_meta){ .block_size = o->block_size ? o->block_size : DS_BLOCK_DEFAULT,
				  .clean = true };
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

/* ---------------------------------------------------------- object table */

/*
 * A data file mapped once for the READs of the object, not per READ: a
 * mapping and unmapping per READ cost page-table work and TLB shootdowns
 * across the daemon's threads.  One reference is the object's (while dfd
 * is open and the file fits); each READ's reply holds one until sent.
 */
struct obj_vmap {
	atomic_uint refs;
	void *base;
	size_t len;
};

static void vmap_put(struct obj_vmap *v)
{
	if (v && atomic_fetch_sub_explicit(&v->refs, 1, memory_order_acq_rel) == 1) {
		munmap(v->base, v->len);
		free(v);
	}
}

/* The object's files close (or it shrinks): later READs map afresh. */
static void obj_vmap_drop(struct ds_obj *o)
{
	pthread_mutex_lock(&o->mu);
	struct obj_vmap *v = o->vmap;
	o->vmap = NULL;
	pthread_mutex_unlock(&o->mu);
	vmap_put(v);
}

static void obj_free(struct ds_obj *o)
{
	pthread_rwlock_destroy(&o->lock);
	pthread_mutex_destroy(&o->hdr_mu);
	pthread_mutex_destroy(&o->mu);
	free(o);
}

static struct ds_obj *obj_alloc(struct ds_store *st, const uint8_t key[DS_KEY_SIZE], uint64_t h)
{
	struct ds_obj *o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	memcpy(o->key, key, DS_KEY_SIZE);
	o->h = h;
	key_hex(key, o->name);
	o->shard = &st->shards[h % NSHARDS];
	o->dfd = o->mfd = -1;
	pthread_rwlockattr_t a;
	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&o->lock, &a);
	pthread_rwlockattr_destroy(&a);
	pthread_mutex_init(&o->hdr_mu, NULL);
	pthread_mutex_init(&o->mu, NULL);
	return o;
}

static struct ds_obj **bucket(struct ds_shard *sh, uint64_t h)
{
	return &sh->buckets[(h / NSHARDS) & (sh->nbuckets - 1)];
}

static void lru_unlink(struct ds_shard *sh, struct ds_obj *o)
{
	if (o->lru_prev)
		o->lru_prev->lru_next = o->lru_next;
	else
		sh->lru_head = o->lru_next;
	if (o->lru_next)
		o->lru_next->lru_prev = o->lru_prev;
	else
		sh->lru_tail = o->lru_prev;
	o->lru_prev = o->lru_next = NULL;
	sh->nlru--;
}

static void hash_unlink(struct ds_shard *sh, struct ds_obj *o)
{
	struct ds_obj **pp = bucket(sh, o->h);
	while (*pp != o)
		pp = &(*pp)->hnext;
	*pp = o->hnext;
}

/* A referenced handle for key (state may be OBJ_UNKNOWN); NULL: no memory. */
static struct ds_obj *obj_get(struct ds_store *st, const uint8_t key[DS_KEY_SIZE])
{
	uint64_t h = objhash(key);
	struct ds_shard *sh = &st->shards[h % NSHARDS];
	struct ds_obj *o;
	pthread_mutex_lock(&sh->mu);
	for (o = *bucket(sh, h); o; o = o->hnext)
		if (o->h == h && !memcmp(o->key, key, DS_KEY_SIZE))
			break;
	if (o) {
		if (o->refs++ == 0 && o->state == OBJ_PRESENT)
			lru_unlink(sh, o);
	} else {
		o = obj_alloc(st, key, h);
		if (o) {
			o->refs = 1;
			o->hnext = *bucket(sh, h);
			*bucket(sh, h) = o;
		}
	}
	pthread_mutex_unlock(&sh->mu);
	return o;
}

static int obj_hdr_write(struct ds_store *st, struct ds_ring *r, struct ds_obj *o);

/* Drop an unreferenced handle from memory: header written back, files closed. */
static int obj_release(struct ds_store *st, struct ds_ring *r, struct ds_obj *o)
{
	int rc = 0;
	if (o->state == OBJ_PRESENT)
		rc = obj_hdr_write(st, r, o);
	if (rc)
		store_log("object %s: header write-back: %s", o->name, strerror(-rc));
	obj_vmap_drop(o);
	if (o->dfd >= 0)
		close(o->dfd);
	if (o->mfd >= 0)
		close(o->mfd);
	obj_free(o);
	return rc;
}

/*
 * Drop a reference.  Idle objects that exist stay open on the shard's idle
 * list, up to st->lru_max; the oldest beyond that are released.
 */
static void obj_put(struct ds_store *st, struct ds_ring *r, struct ds_obj *o)
{
	struct ds_shard *sh = o->shard;
	pthread_mutex_lock(&sh->mu);
	if (--o->refs) {
		pthread_mutex_unlock(&sh->mu);
		return;
	}
	if (o->state != OBJ_PRESENT) {
		hash_unlink(sh, o);
		obj_free(o); /* no files open */
		pthread_mutex_unlock(&sh->mu);
		return;
	}
	o->lru_prev = sh->lru_tail;
	o->lru_next = NULL;
	if (sh->lru_tail)
		sh->lru_tail->lru_next = o;
	else
		sh->lru_head = o;
	sh->lru_tail = o;
	sh->nlru++;
	while (sh->nlru > st->lru_max) {
		struct ds_obj *v = sh->lru_head;
		lru_unlink(sh, v);
		hash_unlink(sh, v);
		/* under sh->mu, so no new handle reads the header before it lands */
		obj_release(st, r, v);
		ctr_add(&st->ctr.evictions, 1);
	}
	pthread_mutex_unlock(&sh->mu);
}

/* ------------------------------------------------------- object header */

static void obj_touch_locked(struct ds_obj *o)
{
	clock_gettime(CLOCK_REALTIME, &o->mtime);
	o->change++;
	o->hdr_seq++;
	o->write_seq++;
}

/* Write the header if it changed since the last write.  Caller holds lock. */
static int obj_hdr_write(struct ds_store *st, struct ds_ring *r, struct ds_obj *o)
{
	uint8_t b[OBJ_HDR_SIZE] = { 0 };
	pthread_mutex_lock(&o->hdr_mu);
	pthread_mutex_lock(&o->mu);
	uint64_t seq = o->hdr_seq;
	if (seq == o->hdr_written) {
		pthread_mutex_unlock(&o->mu);
		pthread_mutex_unlock(&o->hdr_mu);
		return 0;
	}
	memcpy(b, obj_magic, 8);
	put_le32(b + 8, STORE_VERSION);
	put_le32(b + 12, st->bs);
	memcpy(b + 16, o->key, DS_KEY_SIZE);
	put_le64(b + 32, o->gen);
	put_le32(b + 40, o->uid);
	put_le32(b + 44, o->gid);
	put_le32(b + 48, o->mode);
	put_le64(b + 56, o->size);
	put_le64(b + 64, (uint64_t)o->mtime.tv_sec);
	put_le32(b + 72, (uint32_t)o->mtime.tv_nsec);
	put_le64(b + 80, o->change);
	put_le64(b + 88, st->boot);
	pthread_mutex_unlock(&o->mu);
	put_le32(b + 124, crc32c(b, 124));
	int rc = io_pwrite(st, r, o->mfd, b, sizeof(b), 0);
	if (!rc) {
		pthread_mutex_lock(&o->mu);
		if (o->hdr_written < seq)
			o->hdr_written = seq;
		pthread_mutex_unlock(&o->mu);
	}
	pthread_mutex_unlock(&o->hdr_mu);
	return rc;
}

/*
 * Make every write that has returned durable, with the header: data and .meta
 * synced together, whole (a range sync of the data would leave CRCs of other
 * unsynced writes durable without their data).  Nothing to do when nothing
 * changed since the last sync.  Caller holds lock.
 */
static int obj_sync(struct ds_store *st, struct ds_ring *r, struct ds_obj *o, bool datasync)
{
	pthread_mutex_lock(&o->mu);
	uint64_t ws = o->write_seq;
	bool clean = ws == o->synced_seq && o->hdr_seq == o->hdr_written;
	pthread_mutex_unlock(&o->mu);
	if (clean)
		return 0;
	int rc = obj_hdr_write(st, r, o);
	if (rc)
		return rc;
	struct iop ops[2];
	iop_sync(&ops[0], datasync, o->dfd);
	iop_sync(&ops[1], datasync, o->mfd);
	rc = io_run(st, r, ops, 2);
	if (rc) {
		store_log("object %s: sync: %s", o->name, strerror(-rc));
		return rc;
	}
	pthread_mutex_lock(&o->mu);
	if (o->synced_seq < ws)
		o->synced_seq = ws;
	pthread_mutex_unlock(&o->mu);
	return 0;
}

static int sub_of(const struct ds_store *st, const struct ds_obj *o)
{
	return st->subfd[o->h >> 56];
}

/* Look the object up on disk.  Caller holds lock exclusive; state is UNKNOWN. */
static int obj_load(struct ds_store *st, struct ds_ring *r, struct ds_obj *o)
{
	char mname[sizeof(o->name) + 5];
	uint8_t b[OBJ_HDR_SIZE];
	size_t got;
	int sub = sub_of(st, o), rc;

	snprintf(mname, sizeof(mname), "%s.meta", o->name);
	int mfd = openat(sub, mname, O_RDWR | O_CLOEXEC);
	if (mfd < 0) {
		if (errno != ENOENT)
			return -errno;
		o->state = OBJ_ABSENT;
		return 0;
	}
	rc = io_pread(st, r, mfd, b, sizeof(b), 0, &got);
	if (rc) {
		close(mfd);
		return rc;
	}
	if (got != sizeof(b) || memcmp(b, obj_magic, 8) || get_le32(b + 8) != STORE_VERSION ||
	    get_le32(b + 124) != crc32c(b, 124) || memcmp(b + 16, o->key, DS_KEY_SIZE) ||
	    get_le32(b + 12) != st->bs) {
		store_log("object %s: header unreadable or damaged", o->name);
		close(mfd);
		return -EIO;
	}
	int flags = O_RDWR | O_CLOEXEC | (st->direct ? O_DIRECT : 0);
	int dfd = openat(sub, o->name, flags);
	if (dfd < 0 && errno == ENOENT) {
		store_log("object %s: data file missing; recreated empty (its blocks will fail "
			  "their CRCs)",
			  o->name);
		dfd = openat(sub, o->name, flags | O_CREAT, 0600);
	}
	if (dfd < 0) {
		rc = -errno;
		close(mfd);
		return rc;
	}
	o->gen = get_le64(b + 32);
	o->uid = get_le32(b + 40);
	o->gid = get_le32(b + 44);
	o->mode = get_le32(b + 48);
	o->size = get_le64(b + 56);
	o->mtime.tv_sec = (time_t)get_le64(b + 64);
	o->mtime.tv_nsec = get_le32(b + 72);
	o->change = get_le64(b + 80);
	o->hdr_seq = o->hdr_written = 0;
	if (get_le64(b + 88) <= st->last_unclean) {
		/* the header may lag data written before the crash */
		uint64_t fresh = st->boot << 32;
		o->change = o->change + 1 > fresh ? o->change + 1 : fresh;
		o->hdr_seq = 1;
	}
	o->write_seq = 1; /* unknown: the first COMMIT syncs */
	o->synced_seq = 0;
	o->dfd = dfd;
	o->mfd = mfd;
	o->state = OBJ_PRESENT;
	ctr_add(&st->ctr.loads, 1);
	return 0;
}

/* Take o->lock (loading the object if needed). */
static int obj_lock(struct ds_store *st, struct ds_ring *r, struct ds_obj *o, bool excl)
{
	for (;;) {
		if (excl)
			pthread_rwlock_wrlock(&o->lock);
		else
			pthread_rwlock_rdlock(&o->lock);
		if (o->state != OBJ_UNKNOWN)
			return 0;
		if (!excl) {
			pthread_rwlock_unlock(&o->lock);
			pthread_rwlock_wrlock(&o->lock);
		}
		int rc = o->state == OBJ_UNKNOWN ? obj_load(st, r, o) : 0;
		if (rc || !excl)
			pthread_rwlock_unlock(&o->lock);
		if (rc)
			return rc;
		if (excl)
			return 0;
	}
}

static void obj_close(struct ds_store *st, struct ds_ring *r, struct ds_obj *o)
{
	pthread_rwlock_unlock(&o->lock);
	obj_put(st, r, o);
}

/* Get and lock the object named by id; -ENOENT, -ESTALE as braid_ctl.x. */
static int obj_open(struct ds_store *st, struct ds_ring *r, const struct ds_objid *id, bool excl,
		    struct ds_obj **out)
{
	struct ds_obj *o = obj_get(st, id->key);
	if (!o)
		return -ENOMEM;
	int rc = obj_lock(st, r, o, excl);
	if (rc) {
		obj_put(st, r, o);
		return rc;
	}
	if (o->state != OBJ_PRESENT)
		rc = -ENOENT;
	else if (o->gen != id->gen)
		rc = -ESTALE;
	if (rc) {
		obj_close(st, r, o);
		return rc;
	}
	*out = o;
	return 0;
}

/* POSIX permission check against the fence (RFC 8435 §2.2); want: 4 read, 2 write. */
static int obj_access(const struct ds_obj *o, uint32_t uid, uint32_t gid, unsigned want)
{
	unsigned bits = uid == o->uid ? o->mode >> 6 : gid == o->gid ? o->mode >> 3 : o->mode;
	return (bits & want) == want ? 0 : -EACCES;
}

/* ----------------------------------------------------------- range locks */

struct rl_held {
	unsigned n;
	uint16_t idx[RL_MAX];
};

/* Lock the regions of o that [a, z) touches, in index order (no deadlock). */
static void rl_lock(struct ds_store *st, const struct ds_obj *o, uint64_t a, uint64_t z, bool excl,
		    struct rl_held *h)
{
	h->n = 0;
	for (uint64_t g = a >> st->region_shift; g <= (z - 1) >> st->region_shift; g++) {
		uint16_t x = (uint16_t)(fmix64(o->h + g) % NRLOCKS);
		unsigned i = h->n;
		while (i > 0 && h->idx[i - 1] > x)
			i--;
		if (i > 0 && h->idx[i - 1] == x)
			continue;
		memmove(&h->idx[i + 1], &h->idx[i], (h->n - i) * sizeof(h->idx[0]));
		h->idx[i] = x;
		h->n++;
	}
	for (unsigned i = 0; i < h->n; i++) {
		if (excl)
			pthread_rwlock_wrlock(&st->rlocks[h->idx[i]]);
		else
			pthread_rwlock_rdlock(&st->rlocks[h->idx[i]]);
	}
}

static void rl_unlock(struct ds_store *st, struct rl_held *h)
{
	for (unsigned i = h->n; i-- > 0;)
		pthread_rwlock_unlock(&st->rlocks[h->idx[i]]);
}

/* -------------------------------------------------------- verification */

/*
 * Check blocks b0 .. b0 + nb - 1, whose data is iov (nb * bs bytes) and
 * whose entries are ents.  Logs each bad block; returns how many.
 */
static uint64_t verify_blocks(struct ds_store *st, const struct ds_obj *o,
			      const struct iovec *iov, const struct crc_ent *ents, uint64_t b0,
			      uint64_t nb, bool stop_first, uint64_t *first_bad)
{
	struct cur c = { .iov = iov };
	uint64_t bad = 0;
	for (uint64_t i = 0; i < nb; i++) {
		uint32_t tag = le32toh(ents[i].tag), want = le32toh(ents[i].crc), crc = ~0u;
		bool ok;
		if (tag == CRC_VALID) {
			cur_take(&c, st->bs, &crc);
			ok = ~crc == want;
		} else {
			ok = cur_take(&c, st->bs, NULL) && tag == 0;
		}
		if (ok)
			continue;
		if (tag == CRC_VALID)
			store_log("object %s gen %llu block %llu (offset %llu): CRC mismatch "
				  "(stored %08x, data %08x)",
				  o->name, (unsigned long long)o->gen, (unsigned long long)(b0 + i),
				  (unsigned long long)((b0 + i) << st->bs_shift), want, ~crc);
		else
			store_log("object %s gen %llu block %llu (offset %llu): %s", o->name,
				  (unsigned long long)o->gen, (unsigned long long)(b0 + i),
				  (unsigned long long)((b0 + i) << st->bs_shift),
				  tag ? "damaged CRC entry" : "data in a block never written");
		ctr_add(&st->ctr.crc_errors, 1);
		if (!bad++ && first_bad)
			*first_bad = b0 + i;
		if (stop_first)
			break;
	}
	return bad;
}

/* ----------------------------------------------------------------- write */

/*
 * Write [off, off + len) as whole blocks [a, z): partial edge blocks are read,
 * verified and merged; the new CRCs go to the table in the same batch.
 * Caller holds o->lock shared.
 */
static int obj_write(struct ds_store *st, struct ds_ring *r, struct ds_obj *o, uint64_t off,
		     const struct iovec *iov, int iovcnt, size_t len)
{
	unsigned bs = st->bs;
	uint64_t end = off + len, b0 = off >> st->bs_shift, b1 = (end - 1) >> st->bs_shift;
	uint64_t nb = b1 - b0 + 1, a = b0 << st->bs_shift, z = (b1 + 1) << st->bs_shift;
	bool head_part = off != a || (nb == 1 && end != z), tail_part = nb > 1 && end != z;
	uint64_t mid_lo = head_part ? a + bs : a, mid_hi = tail_part ? z - bs : z;
	uint8_t *head = NULL, *tail = NULL, *big = NULL;
	struct crc_ent *ents = calloc(nb, sizeof(*ents));
	struct iovec *wiov = calloc((size_t)iovcnt + 2, sizeof(*wiov));
	struct rl_held held;
	int wcnt = 0, mcnt = 0, rc = 0;

	if (!ents || !wiov) {
		rc = -ENOMEM;
		goto out;
	}
	/* the middle, whole blocks straight from the caller's buffers */
	if (mid_hi > mid_lo)
		iov_slice(iov, iovcnt, mid_lo - off, mid_hi - mid_lo, wiov + 1, &mcnt);
	bool bounce = st->direct && !iov_aligned(wiov + 1, mcnt);
	if (bounce) {
		big = abuf(nb * bs);
		head = big;
		tail = big + (nb - 1) * bs;
		ctr_add(&st->ctr.bounced, 1);
	} else {
		head = head_part ? abuf(bs) : NULL;
		tail = tail_part ? abuf(bs) : NULL;
	}
	if ((bounce && !big) || (head_part && !head) || (tail_part && !tail)) {
		rc = -ENOMEM;
		goto out;
	}

	rl_lock(st, o, a, z, true, &held);
	pthread_mutex_lock(&o->mu);
	uint64_t size = o->size;
	pthread_mutex_unlock(&o->mu);

	/* read back partial blocks that hold data (past size they are zero: I1, I2) */
	struct iovec rv[3];
	struct iop ops[3];
	unsigned nops = 0;
	bool rd_head = head_part && a < size, rd_tail = tail_part && z - bs < size;
	if (head_part && !rd_head)
		memset(head, 0, bs);
	if (tail_part && !rd_tail)
		memset(tail, 0, bs);
	if (rd_head) {
		rv[nops] = (struct iovec){ head, bs };
		iop_rw(&ops[nops], IOP_READ, o->dfd, &rv[nops], 1, a);
		ops[nops++].direct = st->direct;
	}
	if (rd_tail) {
		rv[nops] = (struct iovec){ tail, bs };
		iop_rw(&ops[nops], IOP_READ, o->dfd, &rv[nops], 1, z - bs);
		ops[nops++].direct = st->direct;
	}
	if (nops) {
		rv[nops] = (struct iovec){ ents, nb * sizeof(*ents) };
		iop_rw(&ops[nops], IOP_READ, o->mfd, &rv[nops], 1, OBJ_TABLE_OFF + b0 * 8);
		nops++;
		rc = io_run(st, r, ops, nops);
		if (rc)
			goto unlock;
		unsigned k = 0;
		if (rd_head) {
			memset(head + ops[k].done, 0, bs - ops[k].done);
			k++;
		}
		if (rd_tail)
			memset(tail + ops[k].done, 0, bs - ops[k].done);
		memset((uint8_t *)ents + ops[nops - 1].done, 0,
		       nb * sizeof(*ents) - ops[nops - 1].done);
		struct iovec one = { head, bs };
		if (rd_head && verify_blocks(st, o, &one, &ents[0], b0, 1, true, NULL))
			rc = -EIO;
		one.iov_base = tail;
		if (rd_tail && verify_blocks(st, o, &one, &ents[nb - 1], b1, 1, true, NULL))
			rc = -EIO;
		if (rc)
			goto unlock;
		ctr_add(&st->ctr.rmw_blocks, rd_head + rd_tail);
	}

	/* merge the caller's bytes and lay out the whole-block write */
	if (bounce) {
		iov_gather(iov, iovcnt, 0, big + (off - a), len);
		wiov[0] = (struct iovec){ big, nb * bs };
		wcnt = 1;
	} else {
		if (head_part) {
			uint64_t hend = end < a + bs ? end : a + bs;
			iov_gather(iov, iovcnt, 0, head + (off - a), hend - off);
			wiov[0] = (struct iovec){ head, bs };
			wcnt = 1;
		}
		if (wcnt == 0)
			memmove(wiov, wiov + 1, (size_t)mcnt * sizeof(*wiov));
		wcnt += mcnt;
		if (tail_part) {
			iov_gather(iov, iovcnt, z - bs - off, tail, end - (z - bs));
			wiov[wcnt++] = (struct iovec){ tail, bs };
		}
	}
	struct cur c = { .iov = wiov };
	for (uint64_t i = 0; i < nb; i++) {
		uint32_t crc = ~0u;
		cur_take(&c, bs, &crc);
		ents[i].crc = htole32(~crc);
		ents[i].tag = htole32(CRC_VALID);
	}

	struct iovec ev = { ents, nb * sizeof(*ents) };
	iop_rw(&ops[0], IOP_WRITE, o->dfd, wiov, wcnt, a);
	ops[0].direct = st->direct;
	iop_rw(&ops[1], IOP_WRITE, o->mfd, &ev, 1, OBJ_TABLE_OFF + b0 * 8);
	rc = io_run(st, r, ops, 2);
	if (rc) {
		store_log("object %s: write at %llu: %s (blocks %llu..%llu may now fail their "
			  "CRCs)",
			  o->name, (unsigned long long)off, strerror(-rc), (unsigned long long)b0,
			  (unsigned long long)b1);
		goto unlock;
	}
	pthread_mutex_lock(&o->mu);
	if (end > o->size)
		o->size = end;
	obj_touch_locked(o);
	pthread_mutex_unlock(&o->mu);
unlock:
	rl_unlock(st, &held);
out:
	free(big ? NULL : head);
	free(big ? NULL : tail);
	free(big);
	free(ents);
	free(wiov);
	return rc;
}

/* Borrow a ring and open the object (exclusively for size and fence
 * changes); on failure nothing is held. */
static int obj_begin(struct ds_store *st, const struct ds_objid *id, bool excl,
		     struct ds_ring **rp, struct ds_obj **op)
{
	struct ds_ring *r = ring_get(st);
	if (!r)
		return -ENOMEM;
	int rc = obj_open(st, r, id, excl, op);
	if (rc) {
		ring_put(st, r);
		return rc;
	}
	*rp = r;
	return 0;
}

static void obj_end(struct ds_store *st, struct ds_ring *r, struct ds_obj *o)
{
	obj_close(st, r, o);
	ring_put(st, r);
}

ssize_t ds_store_write(struct ds_store *st, const struct ds_objid *id, uint32_t uid, uint32_t gid,
		       uint64_t off, const struct iovec *iov, int iovcnt, enum ds_stable how)
{
	if (!id || iovcnt < 0 || iovcnt > IOV_MAX - 2 || (iovcnt && !iov) ||
	    (how != DS_UNSTABLE && how != DS_DATA_SYNC && how != DS_FILE_SYNC))
		return -EINVAL;
	size_t len = iov_total(iov, iovcnt);
	if (len > DS_STORE_MAX_IO)
		return -EINVAL;
	if (off > DS_STORE_MAX_SIZE || len > DS_STORE_MAX_SIZE - off)
		return -EFBIG;
	struct ds_ring *r;
	struct ds_obj *o;
	int rc = obj_begin(st, id, false, &r, &o);
	if (rc)
		return rc;
	rc = obj_access(o, uid, gid, 2);
	if (!rc && len)
		rc = obj_write(st, r, o, off, iov, iovcnt, len);
	if (!rc && how != DS_UNSTABLE)
		rc = obj_sync(st, r, o, how == DS_DATA_SYNC);
	obj_end(st, r, o);
	if (!rc) {
		ctr_add(&st->ctr.writes, 1);
		ctr_add(&st->ctr.bytes_written, len);
	}
	return rc ? rc : (ssize_t)len;
}

int ds_store_commit(struct ds_store *st, const struct ds_objid *id, uint64_t off, uint64_t len)
{
	if (!id)
		return -EINVAL;
	struct ds_ring *r;
	struct ds_obj *o;
	int rc = obj_begin(st, id, false, &r, &o);
	if (rc)
		return rc;
	/* the whole object, a superset of [off, off + len) (RFC 1813 §3.3.21) */
	rc = obj_sync(st, r, o, false);
	obj_end(st, r, o);
	if (!rc)
		ctr_add(&st->ctr.commits, 1);
	return rc;
}

/* ------------------------------------------------------------------ read */

/*
 * Read and verify the whole blocks under [off, off + n) into buf; partial
 * edge blocks (and, for O_DIRECT, a misaligned buf) go through bounce
 * buffers.  Caller holds o->lock shared; n > 0 and the range is below size.
 */
static int obj_read(struct ds_store *st, struct ds_ring *r, struct ds_obj *o, uint64_t off,
		    size_t n, uint8_t *buf)
{
	unsigned bs = st->bs;
	uint64_t end = off + n, b0 = off >> st->bs_shift, b1 = (end - 1) >> st->bs_shift;
	uint64_t nb = b1 - b0 + 1, a = b0 << st->bs_shift, z = (b1 + 1) << st->bs_shift;
	bool head_part = off != a || (nb == 1 && end != z), tail_part = nb > 1 && end != z;
	uint64_t mid_lo = head_part ? a + bs : a, mid_hi = tail_part ? z - bs : z;
	uint8_t *head = NULL, *tail = NULL, *big = NULL;
	struct crc_ent *ents = malloc(nb * sizeof(*ents));
	struct iovec riov[3];
	struct rl_held held;
	int rcnt = 0, rc = 0;

	bool bounce = st->direct && mid_hi > mid_lo &&
		      (uintptr_t)(buf + (mid_lo - off)) % DS_STORE_ALIGN;
	if (bounce) {
		big = abuf(nb * bs);
		ctr_add(&st->ctr.bounced, 1);
	} else {
		head = head_part ? abuf(bs) : NULL;
		tail = tail_part ? abuf(bs) : NULL;
	}
	if (!ents || (bounce && !big) || (head_part && !bounce && !head) ||
	    (tail_part && !bounce && !tail)) {
		rc = -ENOMEM;
		goto out;
	}
	if (bounce) {
		riov[rcnt++] = (struct iovec){ big, nb * bs };
	} else {
		if (head_part)
			riov[rcnt++] = (struct iovec){ head, bs };
		if (mid_hi > mid_lo)
			riov[rcnt++] = (struct iovec){ buf + (mid_lo - off), mid_hi - mid_lo };
		if (tail_part)
			riov[rcnt++] = (struct iovec){ tail, bs };
	}
	struct iovec v[3], ev = { ents, nb * sizeof(*ents) };
	memcpy(v, riov, sizeof(v));
	struct iop ops[2];
	iop_rw(&ops[0], IOP_READ, o->dfd, v, rcnt, a);
	ops[0].direct = st->direct;
	iop_rw(&ops[1], IOP_READ, o->mfd, &ev, 1, OBJ_TABLE_OFF + b0 * 8);

	rl_lock(st, o, a, z, false, &held);
	rc = io_run(st, r, ops, 2);
	if (!rc) {
		/* past the end of either file: zeros, and holes in the table */
		iov_zero_from(riov, rcnt, ops[0].done);
		memset((uint8_t *)ents + ops[1].done, 0, nb * sizeof(*ents) - ops[1].done);
		if (verify_blocks(st, o, riov, ents, b0, nb, true, NULL))
			rc = -EIO;
	}
	rl_unlock(st, &held);
	if (rc) {
		memset(buf, 0, n); /* unverified bytes may have landed there */
		goto out;
	}
	if (bounce) {
		memcpy(buf, big + (off - a), n);
	} else {
		if (head_part) {
			uint64_t hend = end < a + bs ? end : a + bs;
			memcpy(buf, head + (off - a), hend - off);
		}
		if (tail_part)
			memcpy(buf + (z - bs - off), tail, end - (z - bs));
	}
out:
	free(head);
	free(tail);
	free(big);
	free(ents);
	return rc;
}


/*
 * A page of a mapping that the kernel cannot fill raises SIGBUS on the
 * thread that touches it: a disk I/O error, or a data file cut short
 * outside the store (the store's own truncations hold o->lock exclusive, so
 * none runs under a verify pass).  obj_map arms map_recover around its
 * verify pass, the only place this process reads a mapping, and that READ
 * gets -EIO.  Any other SIGBUS goes to the handler there was before, or
 * kills the process as it would have.  SA_NODEFER, so leaving by
 * siglongjmp leaves the signal mask as it was without saving it per READ.
 */
static __thread sigjmp_buf *map_recover;
static struct sigaction map_prev_bus;
static pthread_once_t map_bus_once = PTHREAD_ONCE_INIT;

static void map_on_sigbus(int sig, siginfo_t *si, void *uc)
{
	sigjmp_buf *j = map_recover;
	if (j) {
		map_recover = NULL;
		siglongjmp(*j, 1);
	}
	if (map_prev_bus.sa_flags & SA_SIGINFO) {
		map_prev_bus.sa_sigaction(sig, si, uc);
		return;
	}
	if (map_prev_bus.sa_handler != SIG_DFL && map_prev_bus.sa_handler != SIG_IGN) {
		map_prev_bus.sa_handler(sig);
		return;
	}
	/* as if never caught: a fault repeats on return, a kill(2) is raised */
	signal(SIGBUS, SIG_DFL);
	if (si->si_code <= 0)
		raise(sig);
}

static void map_bus_install(void)
{
	struct sigaction sa = { .sa_sigaction = map_on_sigbus,
				.sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &map_prev_bus);
}

/*
 * Whether every page of [a, z) of a mapping at base is in the page cache.
 * Only such a range is served from the mapping: a missing page would be
 * read by the verify pass's fault, one at a time and with the mapping's
 * read-around (read_ahead_kb on either side: 8 MiB on our VMs, for a
 * 1 MiB READ), so data larger than memory read at random came at a
 * fraction of the disk's rate.  The caller reads the rest with io_uring
 * into a buffer instead: exactly the range, with many READs in flight.
 * mincore reads the PTEs the mapping already has, and the page cache only
 * for pages it has not yet touched.
 */
static bool range_resident(const uint8_t *base, uint64_t a, uint64_t z, uint64_t pg)
{
	unsigned char vec[256];
	uint64_t off = a & ~(pg - 1), end = (z + pg - 1) & ~(pg - 1);
	while (off < end) {
		uint64_t n = (end - off) / pg;
		if (n > sizeof(vec))
			n = sizeof(vec);
		if (mincore((void *)(base + off), n * pg, vec))
			return false;
		for (uint64_t i = 0; i < n; i++)
			if (!(vec[i] & 1))
				return false;
		off += n * pg;
	}
	return true;
}

/*
 * obj_read's blocks mapped instead of read: [a, z) of the data file, the
 * whole blocks under [off, off + n), verified in place.  Caller holds
 * o->lock shared (no truncation meanwhile); n > 0, the range below size.
 */
static int obj_map(struct ds_store *st, struct ds_ring *r, struct ds_obj *o, uint64_t off,
		   size_t n, struct ds_store_map *m, const void **data)
{
	uint64_t end = off + n, b0 = off >> st->bs_shift, b1 = (end - 1) >> st->bs_shift;
	uint64_t nb = b1 - b0 + 1, a = b0 << st->bs_shift, z = (b1 + 1) << st->bs_shift;
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	struct stat sb;
	if (fstat(o->dfd, &sb))
		return -errno;
	/* a page wholly past the data file's end would fault: copy instead */
	uint64_t flen = ((uint64_t)sb.st_size + pg - 1) & ~(pg - 1);
	if (z > flen)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&o->mu);
	struct obj_vmap *vm = o->vmap;
	if (vm && vm->len >= z)
		atomic_fetch_add_explicit(&vm->refs, 1, memory_order_relaxed);
	else
		vm = NULL;
	pthread_mutex_unlock(&o->mu);
	if (!vm) {
		/* the whole file as it is now; a larger one is mapped anew */
		struct obj_vmap *nv = malloc(sizeof(*nv));
		void *p = nv ? mmap(NULL, flen, PROT_READ, MAP_SHARED, o->dfd, 0) : MAP_FAILED;
		if (p == MAP_FAILED) {
			free(nv);
			return -EOPNOTSUPP;
		}
		nv->base = p;
		nv->len = flen;
		atomic_init(&nv->refs, 2); /* the object's and ours */
		pthread_mutex_lock(&o->mu);
		struct obj_vmap *old = o->vmap;
		o->vmap = nv;
		pthread_mutex_unlock(&o->mu);
		vmap_put(old);
		vm = nv;
	}
	/* No MADV_POPULATE_READ: the mapping outlives the READ, so its pages
	 * stay mapped and a walk of all 256 of a MiB's PTEs on every READ was
	 * 7% of braid-ds's CPU.  The range is all in the page cache (else the
	 * caller copies), so the verify pass at most maps cached pages. */
	uint8_t *p = (uint8_t *)vm->base + a;
	if (!range_resident(vm->base, a, z, pg)) {
		vmap_put(vm);
		ctr_add(&st->ctr.reads_uncached, 1);
		return -EOPNOTSUPP;
	}
	struct crc_ent *ents = malloc(nb * sizeof(*ents));
	if (!ents) {
		vmap_put(vm);
		return -ENOMEM;
	}
	struct iovec v = { p, z - a }, ev = { ents, nb * sizeof(*ents) };
	struct iop op;
	iop_rw(&op, IOP_READ, o->mfd, &ev, 1, OBJ_TABLE_OFF + b0 * 8);
	struct rl_held held;
	rl_lock(st, o, a, z, false, &held);
	int rc = io_run(st, r, &op, 1);
	if (!rc) {
		memset((uint8_t *)ents + op.done, 0, nb * sizeof(*ents) - op.done);
		if (st->test_mapped_hook)
			st->test_mapped_hook(o->dfd, st->test_arg);
		sigjmp_buf jb;
		if (sigsetjmp(jb, 0)) {
			/* map_on_sigbus came back here; nothing above changed */
			store_log("object %s gen %llu: bytes %llu..%llu unreadable in the page cache "
				  "(disk I/O error, or the data file cut short outside braid-ds)",
				  o->name, (unsigned long long)o->gen, (unsigned long long)a,
				  (unsigned long long)z - 1);
			ctr_add(&st->ctr.read_faults, 1);
			rc = -EIO;
		} else {
			map_recover = &jb;
			uint64_t bad = verify_blocks(st, o, &v, ents, b0, nb, true, NULL);
			map_recover = NULL;
			if (bad)
				rc = -EIO;
		}
	}
	rl_unlock(st, &held);
	free(ents);
	if (rc) {
		vmap_put(vm);
		return rc;
	}
	m->vmap = vm;
	m->base = p;
	m->len = z - a;
	*data = p + (off - a);
	return 0;
}

/*
 * What ds_store_read and ds_store_read_mapped share: the object, the
 * permission, the bytes below size, eof and the counters; the blocks are
 * read into buf, or mapped into m when m is given.
 */
static ssize_t store_read(struct ds_store *st, const struct ds_objid *id, uint32_t uid,
			  uint32_t gid, uint64_t off, size_t len, void *buf, struct ds_store_map *m,
			  const void **data, bool *eof)
{
	struct ds_ring *r;
	struct ds_obj *o;
	size_t n = 0;
	int rc = obj_begin(st, id, false, &r, &o);
	if (rc)
		return rc;
	rc = obj_access(o, uid, gid, 4);
	pthread_mutex_lock(&o->mu);
	uint64_t size = o->size;
	pthread_mutex_unlock(&o->mu);
	if (!rc && off < size) {
		n = size - off < len ? (size_t)(size - off) : len;
		if (n)
			rc = m ? obj_map(st, r, o, off, n, m, data) : obj_read(st, r, o, off, n, buf);
	}
	if (!rc && eof)
		*eof = off + n >= size;
	obj_end(st, r, o);
	if (!rc) {
		ctr_add(&st->ctr.reads, 1);
		ctr_add(&st->ctr.bytes_read, n);
	}
	return rc ? rc : (ssize_t)n;
}

ssize_t ds_store_read(struct ds_store *st, const struct ds_objid *id, uint32_t uid, uint32_t gid,
		      uint64_t off, size_t len, void *buf, bool *eof)
{
	if (!id || (len && !buf) || len > DS_STORE_MAX_IO)
		return -EINVAL;
	return store_read(st, id, uid, gid, off, len, buf, NULL, NULL, eof);
}

ssize_t ds_store_read_mapped(struct ds_store *st, const struct ds_objid *id, uint32_t uid,
			     uint32_t gid, uint64_t off, size_t len, struct ds_store_map *m,
			     const void **data, bool *eof)
{
	m->vmap = NULL;
	m->base = NULL;
	m->len = 0;
	*data = NULL;
	if (!id || len > DS_STORE_MAX_IO)
		return -EINVAL;
	if (st->direct || st->bs < (unsigned)sysconf(_SC_PAGESIZE))
		return -EOPNOTSUPP;
	return store_read(st, id, uid, gid, off, len, NULL, m, data, eof);
}

void ds_store_unmap(struct ds_store_map *m)
{
	vmap_put(m->vmap);
	m->vmap = NULL;
	m->base = NULL;
	m->len = 0;
}

/* ------------------------------------------------- create, remove, ... */

static int obj_create_files(struct ds_store *st, struct ds_ring *r, struct ds_obj *o,
			    uint64_t gen, uint32_t uid, uint32_t gid, uint32_t mode)
{
	char mname[sizeof(o->name) + 5], tname[sizeof(o->name) + 9];
	int sub = sub_of(st, o), rc;
	snprintf(mname, sizeof(mname), "%s.meta", o->name);
	snprintf(tname, sizeof(tname), "%s.meta.tmp", o->name);

	/* O_TRUNC: a data file without .meta is left from an interrupted create */
	o->dfd = openat(sub, o->name,
			O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | (st->direct ? O_DIRECT : 0), 0600);
	if (o->dfd < 0)
		return -errno;
	o->mfd = openat(sub, tname, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (o->mfd < 0) {
		rc = -errno;
		goto fail;
	}
	o->gen = gen;
	o->uid = uid;
	o->gid = gid;
	o->mode = mode;
	pthread_mutex_lock(&o->mu);
	o->size = 0;
	o->change = (st->boot << 32) + 1;
	clock_gettime(CLOCK_REALTIME, &o->mtime);
	o->hdr_seq = 1;
	o->hdr_written = 0;
	o->write_seq = o->synced_seq = 0;
	pthread_mutex_unlock(&o->mu);
	rc = obj_sync(st, r, o, false);
	if (rc)
		goto fail;
	if (renameat(sub, tname, sub, mname)) {
		rc = -errno;
		goto fail;
	}
	rc = io_fsync(st, r, sub, false);
	if (rc) {
		/* renamed but not known durable: find out again next time */
		close(o->dfd);
		close(o->mfd);
		o->dfd = o->mfd = -1;
		o->closes++;
		o->state = OBJ_UNKNOWN;
		return rc;
	}
	o->state = OBJ_PRESENT;
	return 0;
fail:
	if (o->mfd >= 0)
		close(o->mfd);
	close(o->dfd);
	o->dfd = o->mfd = -1;
	unlinkat(sub, tname, 0);
	unlinkat(sub, o->name, 0);
	return rc;
}

int ds_store_create(struct ds_store *st, const struct ds_objid *id, uint32_t uid, uint32_t gid,
		    uint32_t mode)
{
	if (!id || mode & ~0777u)
		return -EINVAL;
	struct ds_ring *r = ring_get(st);
	if (!r)
		return -ENOMEM;
	struct ds_obj *o = obj_get(st, id->key);
	int rc = o ? obj_lock(st, r, o, true) : -ENOMEM;
	if (rc)
		goto out;
	if (o->state == OBJ_PRESENT)
		rc = o->gen == id->gen ? 0 : -EEXIST;
	else
		rc = obj_create_files(st, r, o, id->gen, uid, gid, mode);
	pthread_rwlock_unlock(&o->lock);
out:
	if (o)
		obj_put(st, r, o);
	ring_put(st, r);
	return rc;
}

/* Unlink the object: .meta first (the commit point), made durable, then the data. */
static int obj_unlink(struct ds_store *st, struct ds_ring *r, struct ds_obj *o)
{
	char mname[sizeof(o->name) + 5], tname[sizeof(o->name) + 9];
	int sub = sub_of(st, o);
	snprintf(mname, sizeof(mname), "%s.meta", o->name);
	snprintf(tname, sizeof(tname), "%s.meta.tmp", o->name);
	if (unlinkat(sub, mname, 0) && errno != ENOENT)
		return -errno;
	int rc = io_fsync(st, r, sub, false);
	if (rc)
		return rc;
	if (unlinkat(sub, o->name, 0) && errno != ENOENT)
		store_log("object %s: unlink data: %s (left as an orphan)", o->name,
			  strerror(errno));
	unlinkat(sub, tname, 0);
	obj_vmap_drop(o);
	if (o->dfd >= 0)
		close(o->dfd);
	if (o->mfd >= 0)
		close(o->mfd);
	o->dfd = o->mfd = -1;
	o->closes++;
	o->state = OBJ_ABSENT;
	return 0;
}

int ds_store_remove(struct ds_store *st, const struct ds_objid *id)
{
	if (!id)
		return -EINVAL;
	struct ds_ring *r = ring_get(st);
	if (!r)
		return -ENOMEM;
	struct ds_obj *o = obj_get(st, id->key);
	int rc = o ? obj_lock(st, r, o, true) : -ENOMEM;
	if (rc == -EIO) {
		/* a damaged header: the MDS still gets to remove the object */
		pthread_rwlock_wrlock(&o->lock);
		store_log("object %s: removing it despite its damaged header", o->name);
		rc = o->state == OBJ_UNKNOWN ? obj_unlink(st, r, o) : -EIO;
		pthread_rwlock_unlock(&o->lock);
		goto out;
	}
	if (rc)
		goto out;
	if (o->state != OBJ_PRESENT)
		rc = -ENOENT;
	else if (o->gen != id->gen)
		rc = -ESTALE;
	else
		rc = obj_unlink(st, r, o);
	pthread_rwlock_unlock(&o->lock);
out:
	if (o)
		obj_put(st, r, o);
	ring_put(st, r);
	return rc;
}

/*
 * Discard everything at and past at (at <= size): recompute the CRC of a
 * partial last block over its zeroed tail, made durable before the data is
 * cut so that a crash between the two leaves a state the retry accepts.
 * Caller holds o->lock exclusive.
 */
static int obj_cut(struct ds_store *st, struct ds_ring *r, struct ds_obj *o, uint64_t at)
{
	uint64_t bi = at >> st->bs_shift, rem = at & (st->bs - 1);
	int rc = 0;
	if (rem) {
		uint8_t *blk = abuf(st->bs);
		struct crc_ent e;
		if (!blk)
			return -ENOMEM;
		struct iovec v[2] = { { blk, st->bs }, { &e, sizeof(e) } };
		struct iop ops[2];
		iop_rw(&ops[0], IOP_READ, o->dfd, &v[0], 1, bi << st->bs_shift);
		ops[0].direct = st->direct;
		iop_rw(&ops[1], IOP_READ, o->mfd, &v[1], 1, OBJ_TABLE_OFF + bi * 8);
		rc = io_run(st, r, ops, 2);
		if (!rc) {
			memset(blk + ops[0].done, 0, st->bs - ops[0].done);
			if (ops[1].done < sizeof(e))
				e.tag = 0;
		}
		if (!rc && le32toh(e.tag) == CRC_VALID) {
			bool tail_zero = all_zero(blk + rem, st->bs - rem);
			bool match = crc32c(blk, st->bs) == le32toh(e.crc);
			memset(blk + rem, 0, st->bs - rem);
			uint32_t cut = crc32c(blk, st->bs);
			if (!match && cut != le32toh(e.crc)) {
				struct iovec one = { blk, st->bs };
				verify_blocks(st, o, &one, &e, bi, 1, true, NULL);
				rc = -EIO;
			} else if (match && !tail_zero) {
				e.crc = htole32(cut);
				rc = io_pwrite(st, r, o->mfd, &e, sizeof(e),
					       OBJ_TABLE_OFF + bi * 8);
				if (!rc)
					rc = io_fsync(st, r, o->mfd, true);
			}
		}
		free(blk);
		if (rc)
			return rc;
	}
	uint64_t nblocks = (at + st->bs - 1) >> st->bs_shift;
	if (ftruncate(o->dfd, (off_t)at) || ftruncate(o->mfd, (off_t)(OBJ_TABLE_OFF + nblocks * 8)))
		return -errno;
	return 0;
}

static int obj_truncate(struct ds_store *st, const struct ds_objid *id, uint64_t size,
			bool check, uint32_t uid, uint32_t gid)
{
	if (!id || size > DS_STORE_MAX_SIZE)
		return -EINVAL;
	struct ds_ring *r;
	struct ds_obj *o;
	int rc = obj_begin(st, id, true, &r, &o);
	if (rc)
		return rc;
	/* checked under the exclusive lock, so a fence change cannot pass it */
	if (check && (rc = obj_access(o, uid, gid, 2))) {
		obj_end(st, r, o);
		return rc;
	}
	/* lock is exclusive: no writer changes size now */
	uint64_t cur = o->size;
	if (size != cur) {
		rc = obj_cut(st, r, o, size < cur ? size : cur);
		if (!rc) {
			pthread_mutex_lock(&o->mu);
			o->size = size;
			obj_touch_locked(o);
			pthread_mutex_unlock(&o->mu);
		}
	}
	if (!rc)
		rc = obj_sync(st, r, o, false);
	obj_end(st, r, o);
	return rc;
}

int ds_store_truncate(struct ds_store *st, const struct ds_objid *id, uint64_t size)
{
	return obj_truncate(st, id, size, false, 0, 0);
}

int ds_store_truncate_as(struct ds_store *st, const struct ds_objid *id, uint32_t uid,
			 uint32_t gid, uint64_t size)
{
	return obj_truncate(st, id, size, true, uid, gid);
}

int ds_store_setfence(struct ds_store *st, const struct ds_objid *id, uint32_t uid,
		      uint32_t gid)
{
	if (!id)
		return -EINVAL;
	struct ds_ring *r;
	struct ds_obj *o;
	int rc = obj_begin(st, id, true, &r, &o);
	if (rc)
		return rc;
	/* lock is exclusive: no READ or WRITE is in progress */
	if (o->uid != uid || o->gid != gid) {
		o->uid = uid;
		o->gid = gid;
		pthread_mutex_lock(&o->mu);
		o->hdr_seq++;
		pthread_mutex_unlock(&o->mu);
	}
	pthread_mutex_lock(&o->mu);
	bool dirty = o->hdr_seq != o->hdr_written;
	pthread_mutex_unlock(&o->mu);
	if (dirty) {
		rc = obj_hdr_write(st, r, o);
		if (!rc)
			rc = io_fsync(st, r, o->mfd, true);
	}
	obj_end(st, r, o);
	return rc;
}

int ds_store_stat(struct ds_store *st, const struct ds_objid *id, struct ds_obj_stat *out)
{
	if (!id || !out)
		return -EINVAL;
	struct ds_ring *r;
	struct ds_obj *o;
	int rc = obj_begin(st, id, false, &r, &o);
	if (rc)
		return rc;
	struct stat ds, ms;
	if (fstat(o->dfd, &ds) || fstat(o->mfd, &ms)) {
		rc = -errno;
	} else {
		memset(out, 0, sizeof(*out));
		memcpy(out->id.key, o->key, DS_KEY_SIZE);
		out->id.gen = o->gen;
		out->uid = o->uid;
		out->gid = o->gid;
		out->mode = o->mode;
		out->used = ((uint64_t)ds.st_blocks + (uint64_t)ms.st_blocks) * 512;
		pthread_mutex_lock(&o->mu);
		out->size = o->size;
		out->mtime = o->mtime;
		out->change = o->change;
		pthread_mutex_unlock(&o->mu);
	}
	obj_end(st, r, o);
	return rc;
}

/* ------------------------------------------------------- list and scrub */

enum { SCAN_META = 1, SCAN_DATA = 2, SCAN_TMP = 4 };

struct scan_ent {
	uint64_t h;
	uint8_t key[DS_KEY_SIZE];
	unsigned flags;
};

static int scan_cmp(const void *x, const void *y)
{
	const struct scan_ent *a = x, *b = y;
	if (a->h != b->h)
		return a->h < b->h ? -1 : 1;
	return memcmp(a->key, b->key, DS_KEY_SIZE);
}

/* The keys in one object directory, sorted by (hash, key), one entry per key. */
static int scan_sub(struct ds_store *st, unsigned sub, struct scan_ent **out, size_t *count)
{
	int fd = openat(st->subfd[sub], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		int rc = -errno;
		close(fd);
		return rc;
	}
	struct scan_ent *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int rc = 0;
	while ((de = readdir(d))) {
		const char *s = de->d_name;
		struct scan_ent e = { 0 };
		size_t l = strlen(s);
		if (l < 2 * DS_KEY_SIZE || !key_parse(s, e.key))
			continue;
		s += 2 * DS_KEY_SIZE;
		if (!*s)
			e.flags = SCAN_DATA;
		else if (!strcmp(s, ".meta"))
			e.flags = SCAN_META;
		else if (!strcmp(s, ".meta.tmp"))
			e.flags = SCAN_TMP;
		else
			continue;
		e.h = objhash(e.key);
		if (e.h >> 56 != sub)
			continue; /* not ours to judge */
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 64;
			struct scan_ent *nv = realloc(v, nc * sizeof(*v));
			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			v = nv;
			cap = nc;
		}
		v[n++] = e;
	}
	closedir(d);
	if (rc) {
		free(v);
		return rc;
	}
	if (n)
		qsort(v, n, sizeof(*v), scan_cmp);
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (m && !scan_cmp(&v[m - 1], &v[i]))
			v[m - 1].flags |= v[i].flags;
		else
			v[m++] = v[i];
	}
	*out = v;
	*count = m;
	return 0;
}

int ds_store_list(struct ds_store *st, uint64_t cookie, struct ds_list_entry *ents, unsigned max,
		  unsigned *n, uint64_t *next, bool *eof)
{
	if (!max || !ents || !n || !next || !eof)
		return -EINVAL;
	struct ds_ring *r = ring_get(st);
	if (!r)
		return -ENOMEM;
	int rc = 0;
	*n = 0;
	*eof = true;
	*next = cookie;
	for (unsigned sub = (unsigned)(cookie >> 56); sub < NSUB && *eof && !rc; sub++) {
		struct scan_ent *v;
		size_t cnt;
		rc = scan_sub(st, sub, &v, &cnt);
		for (size_t i = 0; !rc && i < cnt; i++) {
			if (!(v[i].flags & SCAN_META) || v[i].h < cookie)
				continue;
			if (*n == max) {
				/* cookies are hashes: stable across restarts */
				*next = v[i].h;
				*eof = false;
				break;
			}
			struct ds_obj *o = obj_get(st, v[i].key);
			if (!o) {
				rc = -ENOMEM;
				break;
			}
			int lrc = obj_lock(st, r, o, false);
			if (!lrc) {
				if (o->state == OBJ_PRESENT) {
					memcpy(ents[*n].id.key, o->key, DS_KEY_SIZE);
					ents[*n].id.gen = o->gen;
					pthread_mutex_lock(&o->mu);
					ents[*n].size = o->size;
					pthread_mutex_unlock(&o->mu);
					(*n)++;
				}
				pthread_rwlock_unlock(&o->lock);
			}
			obj_put(st, r, o);
		}
		free(v);
	}
	ring_put(st, r);
	return rc;
}

/* Remove the files of an interrupted create (no .meta); 1 if any were removed. */
static int scrub_orphan(struct ds_store *st, struct ds_ring *r, const struct scan_ent *e)
{
	struct ds_obj *o = obj_get(st, e->key);
	if (!o)
		return -ENOMEM;
	int rc = obj_lock(st, r, o, true);
	if (rc) {
		obj_put(st, r, o);
		return rc == -EIO ? 0 : rc; /* a .meta appeared: scrub_obj's business */
	}
	if (o->state == OBJ_ABSENT) {
		/* lock exclusive: no create of this key is in progress */
		char tname[sizeof(o->name) + 9];
		snprintf(tname, sizeof(tname), "%s.meta.tmp", o->name);
		int sub = sub_of(st, o);
		bool data = !unlinkat(sub, o->name, 0);
		bool tmp = !unlinkat(sub, tname, 0);
		rc = data || tmp;
		if (rc)
			store_log("object %s: removed the files of an interrupted create", o->name);
	}
	pthread_rwlock_unlock(&o->lock);
	obj_put(st, r, o);
	return rc;
}

/* Verify one object, a chunk at a time so fences and truncates get in between. */
static int scrub_obj(struct ds_store *st, struct ds_ring *r, const struct scan_ent *e,
		     uint8_t *buf, struct crc_ent *ents, ds_scrub_bad_fn bad, void *arg,
		     struct ds_scrub_stats *ss)
{
	struct ds_obj *o = obj_get(st, e->key);
	struct ds_objid id = { .gen = 0 };
	memcpy(id.key, e->key, DS_KEY_SIZE);
	if (!o)
		return -ENOMEM;
	int rc = obj_lock(st, r, o, false);
	if (rc == -EIO) {
		ss->objects++;
		ss->bad_objects++;
		if (bad)
			bad(arg, &id, UINT64_MAX, 0);
		obj_put(st, r, o);
		return 0;
	}
	if (rc || o->state != OBJ_PRESENT) {
		if (!rc)
			pthread_rwlock_unlock(&o->lock);
		obj_put(st, r, o);
		return rc;
	}
	id.gen = o->gen;
	unsigned closes = o->closes;
	/* read the media, not the page cache, where the filesystem allows it */
	int fd = o->dfd;
	bool own_fd = false, gone = false;
	if (!st->direct && st->direct_ok) {
		int dfd = openat(sub_of(st, o), o->name, O_RDONLY | O_DIRECT | O_CLOEXEC);
		if (dfd >= 0) {
			fd = dfd;
			own_fd = true;
		}
	}
	uint64_t nbad = 0, first_bad = 0, b = 0, chunk = SCRUB_CHUNK >> st->bs_shift;
	if (!chunk)
		chunk = 1;
	/* o->lock is held shared at the top of each pass and at every break */
	for (;;) {
		pthread_mutex_lock(&o->mu);
		uint64_t nblocks = (o->size + st->bs - 1) >> st->bs_shift;
		pthread_mutex_unlock(&o->mu);
		if (b >= nblocks)
			break;
		uint64_t nb = nblocks - b < chunk ? nblocks - b : chunk, fb = 0;
		struct iovec v[2] = { { buf, nb << st->bs_shift }, { ents, nb * sizeof(*ents) } };
		struct iovec full = v[0];
		struct iop ops[2];
		struct rl_held held;
		iop_rw(&ops[0], IOP_READ, fd, &v[0], 1, b << st->bs_shift);
		ops[0].direct = st->direct || own_fd;
		iop_rw(&ops[1], IOP_READ, o->mfd, &v[1], 1, OBJ_TABLE_OFF + b * 8);
		rl_lock(st, o, b << st->bs_shift, (b + nb) << st->bs_shift, false, &held);
		rc = io_run(st, r, ops, 2);
		if (!rc) {
			memset(buf + ops[0].done, 0, full.iov_len - ops[0].done);
			memset((uint8_t *)ents + ops[1].done, 0, nb * sizeof(*ents) - ops[1].done);
			uint64_t k = verify_blocks(st, o, &full, ents, b, nb, false, &fb);
			if (k && !nbad)
				first_bad = fb;
			nbad += k;
		}
		rl_unlock(st, &held);
		if (rc)
			break;
		ss->blocks += nb;
		b += nb;
		/* let fences and truncates in between chunks */
		pthread_rwlock_unlock(&o->lock);
		pthread_rwlock_rdlock(&o->lock);
		if (o->state != OBJ_PRESENT || o->closes != closes) {
			gone = true; /* removed (maybe recreated) meanwhile; fd is stale */
			break;
		}
	}
	pthread_rwlock_unlock(&o->lock);
	if (own_fd)
		close(fd);
	obj_put(st, r, o);
	if (rc || gone)
		return rc;
	ss->objects++;
	if (nbad) {
		ss->bad_objects++;
		ss->bad_blocks += nbad;
		if (bad)
			bad(arg, &id, first_bad << st->bs_shift, nbad);
	}
	return 0;
}

int ds_store_scrub(struct ds_store *st, ds_scrub_bad_fn bad, void *arg,
		   struct ds_scrub_stats *stats)
{
	struct ds_scrub_stats ss = { 0 };
	uint64_t chunk = SCRUB_CHUNK > st->bs ? SCRUB_CHUNK : st->bs;
	uint8_t *buf = abuf(chunk);
	struct crc_ent *ents = malloc((chunk >> st->bs_shift) * sizeof(*ents));
	struct ds_ring *r = ring_get(st);
	int rc = 0;
	if (!buf || !ents || !r) {
		rc = -ENOMEM;
		goto out;
	}
	for (unsigned sub = 0; sub < NSUB && !rc; sub++) {
		struct scan_ent *v;
		size_t cnt;
		rc = scan_sub(st, sub, &v, &cnt);
		for (size_t i = 0; !rc && i < cnt; i++) {
			if (v[i].flags & SCAN_META) {
				rc = scrub_obj(st, r, &v[i], buf, ents, bad, arg, &ss);
			} else {
				rc = scrub_orphan(st, r, &v[i]);
				if (rc > 0)
					ss.orphans++;
				rc = rc > 0 ? 0 : rc;
			}
		}
		free(v);
	}
out:
	if (r)
		ring_put(st, r);
	free(buf);
	free(ents);
	if (stats)
		*stats = ss;
	return rc;
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
		ring_free(r);
	}
	pthread_mutex_destroy(&st->ring_mu);
	if (st->lockfd >= 0)
		close(st->lockfd); /* releases the flock */
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
		store_log("%s: keeps its block size %u (asked for %u)", dir, m.block_size,
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
		store_log("%s: not closed cleanly (boot %llu); change values move on", dir,
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

	st->io = o->io;
	st->test_mapped_hook = o->test_mapped_hook;
	st->test_arg = o->test_arg;
	pthread_once(&map_bus_once, map_bus_install);
	if (st->io == DS_STORE_IO_URING) {
		struct ds_ring *r = ring_get(st);
		if (!r) {
			rc = -ENOMEM;
			goto fail;
		}
		if (!r->uring) {
			store_log("%s: io_uring unavailable; using plain syscalls", dir);
			st->io = DS_STORE_IO_PSYNC;
		}
		ring_put(st, r);
	}
	st->direct_ok = probe_direct(st->dirfd);
	st->direct = o->direct && st->direct_ok;
	if (o->direct && !st->direct_ok)
		store_log("%s: the filesystem refuses O_DIRECT; data I/O goes through the page "
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
	struct ds_ring *r = ring_get(st);
	for (unsigned i = 0; i < NSHARDS; i++) {
		struct ds_shard *sh = &st->shards[i];
		for (unsigned j = 0; j < sh->nbuckets; j++) {
			while (sh->buckets[j]) {
				struct ds_obj *o = sh->buckets[j];
				sh->buckets[j] = o->hnext;
				if (o->refs)
					store_log("object %s: still in use at close", o->name);
				int orc = r ? obj_release(st, r, o) : -ENOMEM;
				rc = rc ? rc : orc;
			}
		}
	}
	if (r)
		ring_put(st, r);
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
