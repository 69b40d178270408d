/* SPDX-License-Identifier: MIT */
/*
 * Inside the braid-ds object store (see store.h for the contract): the
 * structs, on-disk constants and helpers its files share.  Not for use
 * outside dataserver/store*.c.
 *
 *   store.c         open and close, store.meta, identity, counters
 *   store_ring.c    the ring pool and I/O batches (io_uring or syscalls)
 *   store_obj.c     the object table and its idle LRU, object headers,
 *                   load, lock, permission
 *   store_lock.c    range locks
 *   store_io.c      READ and WRITE (COMMIT too), CRC verification
 *   store_mapped.c  mapped READ: the object's mapping, the SIGBUS handler
 *   store_meta.c    create, remove, truncate, setfence, stat
 *   store_scan.c    the object directories walked: the count at open,
 *                   LIST and scrub
 *   store_writeback.c  write-back started early (COPY's long write runs)
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
 * st_obj_hdr_write for the offsets).  The object's size is the header's, not
 * the data file's length.
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
#ifndef BRAID_DATASERVER_STORE_IMPL_H
#define BRAID_DATASERVER_STORE_IMPL_H

#include <endian.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <isa-l/crc.h>
#include <liburing.h>

#include "dataserver/store.h"
#include "nfsd/bytes.h"

#define STORE_VERSION	1
#define STORE_META_SIZE 64
#define OBJ_HDR_SIZE	128
#define OBJ_TABLE_OFF	4096ull
#define OBJ_HDR_NAME_OWED 1u /* header flags (offset 96): ds_obj.name_owed */
#define CRC_VALID	0x4b4c4231u /* "1BLK" */
#define NSUB		256	    /* object directories */
#define NSHARDS		64	    /* object table shards */
#define NRLOCKS		1024	    /* hashed range locks */
#define REGION_SHIFT	20	    /* range lock granule: 1 MiB (or the block) */
#define RL_MAX		((DS_STORE_MAX_IO >> REGION_SHIFT) + 2)
#define RING_DEPTH	8
#define SCRUB_CHUNK	(1u << 20)

/* ------------------------------------------------------------ utilities */

/* CRC32C (Castagnoli, as iSCSI, ext4 and NVMe); chain with crc_update. */
static inline uint32_t crc_update(uint32_t crc, const void *p, size_t n)
{
	return crc32_iscsi((unsigned char *)p, (int)n, crc);
}

static inline uint32_t crc32c(const void *p, size_t n)
{
	return ~crc_update(~0u, p, n);
}

static inline bool all_zero(const uint8_t *p, size_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

static inline void *abuf(size_t n)
{
	void *p;
	return posix_memalign(&p, DS_STORE_ALIGN, n) ? NULL : p;
}

/*
 * Part of the on-disk format: picks the directory (top byte) and orders
 * LIST (its cookies are hash values).  Never change it.
 */
static inline uint64_t objhash(const uint8_t key[DS_KEY_SIZE])
{
	return nfsd_mix64(get_le64(key) ^ nfsd_mix64(get_le64(key + 8) + 0x9e3779b97f4a7c15ull));
}

static inline size_t iov_total(const struct iovec *iov, int cnt)
{
	size_t n = 0;
	for (int i = 0; i < cnt; i++) {
		if (iov[i].iov_len > SIZE_MAX - n)
			return SIZE_MAX;
		n += iov[i].iov_len;
	}
	return n;
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
	bool uring;	      /* false: plain syscalls */
	bool broken;	      /* submit or wait failed: free it, never reuse it */
	struct io_uring ring;
};

enum obj_state {
	OBJ_UNKNOWN, /* not looked up on disk yet (or the last load failed) */
	OBJ_ABSENT,
	OBJ_PRESENT,
};

/*
 * The in-memory handle of one key.  Lock order: lock, then names_mu, then
 * range locks (st->rlocks, in index order), then hdr_mu, then mu.  shard->mu is taken
 * holding no object's lock (st_obj_get, st_obj_put); under it, eviction
 * takes an idle object's hdr_mu and mu.
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
	int dfd, mfd;	       /* data (O_DIRECT when st->direct), .meta */
	struct obj_vmap *vmap; /* mu: dfd mapped for READs, while dfd is open */
	unsigned closes;       /* counts closings of dfd/mfd (remove, failed create) */

	/* Serializes header writes, so an older header never lands last. */
	pthread_mutex_t hdr_mu;
	/* Serializes st_obj_names_sync, so that a second first write cannot
	 * sync a .meta the first one has put CRCs in meanwhile. */
	pthread_mutex_t names_mu;

	/* mu: a leaf lock, for the fields writers update under lock shared. */
	pthread_mutex_t mu;
	uint64_t size;
	struct timespec mtime;
	uint64_t change;
	uint64_t hdr_seq, hdr_written;	/* header dirty while they differ */
	uint64_t write_seq, synced_seq; /* writes done; covered by a whole sync */
	/* created and not yet synced: its names (data file, .meta) are not
	 * known durable, so its first sync syncs its directory too (kept in
	 * the header, OBJ_HDR_NAME_OWED, across an eviction or a restart) */
	bool name_owed;
	uint64_t resv_hi; /* [0, resv_hi) of data and its CRC entries is allocated */
	/*
	 * Blocks whose page-cache pages hold bytes known good (verified by a
	 * mapped READ, or written by the store) as of the store's disk-read
	 * count vmark (st_disk_reads): while the count has not moved, no page
	 * of the object can have come from the disk since, so a mapped READ of
	 * such blocks, all cached, need not verify them again (store_mapped.c).
	 * One bit per block, vbits_nb blocks; set and tested with atomics.
	 */
	uint64_t *vbits, vbits_nb, vmark;
};

struct ds_shard {
	pthread_mutex_t mu;
	/* mu: */
	struct ds_obj **buckets;
	unsigned nbuckets;		    /* power of 2 */
	struct ds_obj *lru_head, *lru_tail; /* idle PRESENT objects, oldest first */
	unsigned nlru;
};

struct ds_store {
	/* Immutable after open. */
	int dirfd, lockfd, subfd[NSUB];
	unsigned bs, bs_shift, region_shift;
	bool direct;	/* data fds are O_DIRECT */
	bool direct_ok; /* the filesystem takes O_DIRECT (scrub uses it) */
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
	bool ring_warned;	   /* ring_mu */

	struct ds_store_counters ctr; /* updated with atomics, no lock */
	/*
	 * Free bytes when a write was last refused for space, plus one; 0
	 * once space was freed since (ds_store_full).  space_changed: opts'.
	 */
	_Atomic uint64_t nospc_avail;
	void (*space_changed)(void *arg);
	void *space_arg;
	/* Objects held (.meta files): counted at open (st_scan_count), then
	 * moved by create and remove, with atomics. */
	uint64_t nobjects;
	void (*test_mapped_hook)(int data_fd, void *arg);
	void *test_arg;
	/* The store's block device's statistics (/sys/dev/block/M:m/stat),
	 * whose sectors read stand for "has any page come from the disk":
	 * -1 where there is none (tmpfs, a network or multi-device file
	 * system), and mapped READs always verify. */
	int dreads_fd;
	uint64_t (*test_disk_reads)(void *arg);
};

static inline void ctr_add(uint64_t *c, uint64_t v)
{
	__atomic_fetch_add(c, v, __ATOMIC_RELAXED);
}

/* A write or create was refused for space (-ENOSPC, -EDQUOT): note it. */
void st_note_nospc(struct ds_store *st);
/* Space was freed (an object removed or cut): the store is no longer full. */
void st_note_freed(struct ds_store *st);

static inline int sub_of(const struct ds_store *st, const struct ds_obj *o)
{
	return st->subfd[o->h >> 56];
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
	bool direct; /* O_DIRECT fd (a short read that ends misaligned is the end) */
	bool eof, fin;
};

/* ----------------------------------------------------------- range locks */

struct rl_held {
	unsigned n;
	uint16_t idx[RL_MAX];
};

/* store.c */
void st_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* store_ring.c: a ring borrowed per call; batches of I/O run on it. */
struct ds_ring *st_ring_get(struct ds_store *st);
void st_ring_put(struct ds_store *st, struct ds_ring *r);
void st_ring_free(struct ds_ring *r);
void st_iop_rw(struct iop *op, enum iop_kind kind, int fd, struct iovec *iov, int cnt,
	       uint64_t off);
void st_iop_sync(struct iop *op, bool datasync, int fd);
int st_io_run(struct ds_store *st, struct ds_ring *r, struct iop *ops, unsigned n);
int st_io_pread(struct ds_store *st, struct ds_ring *r, int fd, void *buf, size_t len, uint64_t off,
		size_t *got);
int st_io_pwrite(struct ds_store *st, struct ds_ring *r, int fd, const void *buf, size_t len,
		 uint64_t off);
int st_io_fsync(struct ds_store *st, struct ds_ring *r, int fd, bool datasync);

/* store_obj.c: handles by key, their headers, lock and permission. */
struct ds_obj *st_obj_get(struct ds_store *st, const uint8_t key[DS_KEY_SIZE]);
void st_obj_put(struct ds_store *st, struct ds_ring *r, struct ds_obj *o);
int st_obj_release(struct ds_store *st, struct ds_ring *r, struct ds_obj *o);
void st_obj_touch_locked(struct ds_obj *o);
int st_obj_hdr_write(struct ds_store *st, struct ds_ring *r, struct ds_obj *o);
int st_obj_sync(struct ds_store *st, struct ds_ring *r, struct ds_obj *o, bool datasync);
/* A created object's names and empty header made durable before its first
 * UNSTABLE write (nothing when they are): a crash then keeps the object
 * the client's resent writes go to.  Caller holds lock. */
int st_obj_names_sync(struct ds_store *st, struct ds_ring *r, struct ds_obj *o);
int st_obj_lock(struct ds_store *st, struct ds_ring *r, struct ds_obj *o, bool excl);
int st_obj_access(const struct ds_obj *o, uint32_t uid, uint32_t gid, unsigned want);
int st_obj_begin(struct ds_store *st, const struct ds_objid *id, bool excl, struct ds_ring **rp,
		 struct ds_obj **op);
void st_obj_end(struct ds_store *st, struct ds_ring *r, struct ds_obj *o);

/* store_lock.c */
void st_rl_lock(struct ds_store *st, const struct ds_obj *o, uint64_t a, uint64_t z, bool excl,
		struct rl_held *h);
void st_rl_unlock(struct ds_store *st, struct rl_held *h);

/* store_io.c */
uint64_t st_verify_blocks(struct ds_store *st, const struct ds_obj *o, const struct iovec *iov,
			  const struct crc_ent *ents, uint64_t b0, uint64_t nb, bool stop_first,
			  uint64_t *first_bad);
ssize_t st_read(struct ds_store *st, const struct ds_objid *id, uint32_t uid, uint32_t gid,
		uint64_t off, size_t len, void *buf, struct ds_store_map *m, const void **data,
		bool *eof);

/* store_scan.c: the objects in the directories (their .meta files). */
int st_scan_count(struct ds_store *st, uint64_t *n);

/* store_mapped.c */
void st_map_sigbus_install(void);
void st_obj_vmap_drop(struct ds_obj *o);
/* The verified blocks (struct ds_obj's vbits): the disk-read count, or
 * DREADS_NONE where it cannot be known (nothing is then taken as known
 * good); the count's source, found at open; blocks [b0, b0 + nb) known
 * good as of mark (a count read before they were verified or written);
 * forgetting some or all (caller holds o->lock or the range's lock
 * exclusive, or the object is not shared yet). */
#define DREADS_NONE UINT64_MAX
uint64_t st_disk_reads(struct ds_store *st);
void st_disk_reads_open(struct ds_store *st, int dirfd);
void st_vbits_set(struct ds_obj *o, uint64_t b0, uint64_t nb, uint64_t mark);
void st_vbits_forget(struct ds_obj *o, uint64_t b0, uint64_t nb);
void st_vbits_clear(struct ds_obj *o);
int st_obj_map(struct ds_store *st, struct ds_ring *r, struct ds_obj *o, uint64_t off, size_t n,
	       struct ds_store_map *m, const void **data);

#endif
