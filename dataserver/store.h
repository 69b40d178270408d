/* SPDX-License-Identifier: MIT */
/*
 * The braid-ds object store: one local directory of objects, I/O through
 * io_uring (page-cache writes excepted, see st_io_run in store_ring.c), a
 * CRC32C per block checked on every read.
 *
 * An object is one Braid data file on this DS, named by the MDS's object id
 * (braid_ctl.x: a 16-byte key and a 64-bit generation).  The store holds at
 * most one object per key.  Calls that name an object return -ENOENT when no
 * object has the key and -ESTALE when the object has another generation
 * (BRAID_CTL_NOENT / BRAID_CTL_STALE); create returns -EEXIST for another
 * generation.
 *
 * Offsets are the file's own: pNFS segment striping writes each segment at
 * the file offset, so an object is sparse and holes read as zeros.
 *
 * Durability (RFC 1813 §3.3.7, RFC 8881 §18.32): a DS_DATA_SYNC or
 * DS_FILE_SYNC write, and ds_store_commit(), return only after the data and
 * what is needed to read it back (size, CRCs) are on stable storage, with
 * the object's own existence; remove, truncate and setfence are durable on
 * return (braid_ctl.x).  A create is durable with the object's first write
 * (a stable one syncs its names with its data; an UNSTABLE one syncs them
 * before it) or sync: a crash before it may undo the create of an object
 * never written, which holds nothing.  UNSTABLE
 * writes may be lost by a crash; the write verifier changes on every open so
 * that clients resend what they did not commit.
 *
 * Integrity: a block whose data does not match its CRC is never returned:
 * the read fails with -EIO and the mismatch is logged and counted.
 *
 * Fencing (RFC 8435 §2.2, loosely coupled): each object has an owner uid/gid
 * and permission bits; READ and WRITE are checked against them as POSIX
 * does (owner, else group, else other; no supplementary groups, no root
 * override) and fail with -EACCES.  The MDS fences a client by changing the
 * owner (ds_store_setfence), which waits for I/O in progress.
 *
 * Threads: every function may be called from any number of threads at once,
 * except ds_store_open/ds_store_close.  Functions return 0 (or a count) on
 * success and -errno on failure; none sets errno as its interface.
 *
 * On-disk format: see the comment at the top of store_impl.h.
 */
#ifndef BRAID_DATASERVER_STORE_H
#define BRAID_DATASERVER_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#include "ctl/objid.h"

#define DS_VERIFIER_SIZE  8  /* NFS3_WRITEVERFSIZE, NFS4_VERIFIER_SIZE */
#define DS_UUID_SIZE      16 /* BRAID_CTL_UUID_SIZE */
#define DS_BLOCK_DEFAULT  4096
#define DS_STORE_ALIGN    4096              /* buffers so aligned avoid bounce copies */
#define DS_STORE_MAX_IO   (16u << 20)       /* largest single read or write */
#define DS_STORE_MAX_SIZE (1ull << 48)      /* largest object size (256 TiB) */

struct ds_store;

/* Values equal stable_how (RFC 1813 §3.3.7) and stable_how4. */
enum ds_stable {
	DS_UNSTABLE = 0,
	DS_DATA_SYNC = 1,
	DS_FILE_SYNC = 2,
};

enum ds_store_io {
	DS_STORE_IO_URING = 0, /* io_uring; plain syscalls if it cannot be set up */
	DS_STORE_IO_PSYNC = 1, /* preadv/pwritev/fsync */
};

struct ds_store_opts {
	bool create;           /* make a new store if dir holds none (else -ENOENT) */
	bool direct;           /* O_DIRECT data I/O where the filesystem allows it */
	unsigned block_size;   /* CRC block of a new store: power of 2, 4 KiB..1 MiB;
				* 0 = DS_BLOCK_DEFAULT; an existing store keeps its own */
	unsigned max_open;     /* idle objects kept open; 0 = 1024 */
	enum ds_store_io io;
	/* Called (from the thread that saw it, no store lock held) when the
	 * store becomes full (a write refused for space), and whenever space
	 * is freed (a remove, a truncate that cuts): what ds_store_full and
	 * ds_store_space say may have changed. */
	void (*space_changed)(void *arg);
	void *space_arg;
	/* Tests only: called with an object's data file descriptor after a
	 * mapped READ has checked the file's length and before it verifies the
	 * blocks, the window where a file cut short behind the store's back
	 * makes the verify pass fault (SIGBUS).  With it set, every mapped
	 * READ verifies (none is served as known good). */
	void (*test_mapped_hook)(int data_fd, void *arg);
	void *test_arg;
	/* Tests only: the disk-read count (st_disk_reads) instead of the
	 * device's, with test_arg; return UINT64_MAX for "unknown". */
	uint64_t (*test_disk_reads)(void *arg);
};

struct ds_obj_stat {
	struct ds_objid id;
	uint64_t size;
	struct timespec mtime; /* last change of data or size */
	uint64_t change;       /* changes with data or size; survives restarts */
	uint64_t used;         /* bytes of storage, data and CRCs */
	uint32_t uid, gid, mode;
};

struct ds_scrub_stats {
	uint64_t objects;     /* objects checked */
	uint64_t blocks;      /* blocks checked */
	uint64_t bad_objects; /* objects with a bad block or an unreadable header */
	uint64_t bad_blocks;
	uint64_t orphans;     /* leftover files of interrupted creates, removed */
};

/* Counters since open; each is updated atomically. */
struct ds_store_counters {
	uint64_t reads, writes, commits;
	uint64_t bytes_read, bytes_written;
	uint64_t rmw_blocks;  /* partial blocks read back to recompute a CRC */
	uint64_t bounced;     /* O_DIRECT requests copied through an aligned buffer */
	uint64_t fsyncs;      /* completed fsync calls (FILE_SYNC, COMMIT, metadata) */
	uint64_t fdatasyncs;  /* completed fdatasync calls (DATA_SYNC, metadata) */
	uint64_t crc_errors;  /* blocks that failed verification */
	uint64_t read_faults; /* mapped READs the kernel could not fill (SIGBUS) */
	uint64_t reads_uncached; /* READs copied since their pages were not cached */
	/* blocks mapped READs sent without verifying them again: cached and
	 * known good since the disk was last read (struct ds_obj's vbits) */
	uint64_t verify_skipped;
	uint64_t loads, evictions;
	uint64_t nospc; /* writes and creates refused for space (ENOSPC, EDQUOT) */
};

/*
 * Open (with opts->create, make) the store in dir.  opts may be NULL
 * (defaults, no create).  -ENOENT: dir holds no store and opts->create is
 * false (an unmounted data disk is not silently replaced by an empty store);
 * -EBUSY: the store is open already (this process or another).  The first
 * open installs a SIGBUS handler for the process (ds_store_read_mapped); a
 * SIGBUS that is not the store's goes to the handler it replaced.
 */
int ds_store_open(const char *dir, const struct ds_store_opts *opts, struct ds_store **out);

/*
 * Write back cached metadata, sync the filesystem and mark the store cleanly
 * closed; frees st even on error.  No other call may be in progress.
 */
int ds_store_close(struct ds_store *st);

/* New on every open: boot counter and random bits (NFS write verifier). */
void ds_store_verifier(const struct ds_store *st, uint8_t verf[DS_VERIFIER_SIZE]);

/* The store's identity, made once with it (braid_ctl REGISTER rr_ds_uuid). */
void ds_store_uuid(const struct ds_store *st, uint8_t uuid[DS_UUID_SIZE]);

unsigned ds_store_block_size(const struct ds_store *st);

/* Whether data I/O is O_DIRECT (asked for and allowed by the filesystem). */
bool ds_store_direct(const struct ds_store *st);

void ds_store_counters(const struct ds_store *st, struct ds_store_counters *out);

/* Objects the store holds: counted in its directories at open, then moved
 * by every create and remove (braid_ctl HEARTBEAT hb_objects). */
uint64_t ds_store_objects(const struct ds_store *st);

/* Bytes of the store's filesystem, total and available. */
int ds_store_space(const struct ds_store *st, uint64_t *total, uint64_t *avail);

/*
 * Whether the store is full: a write was refused for space and, since,
 * no object was removed or cut and avail (ds_store_space's) has not grown
 * by DS_STORE_FULL_SLACK.  A write is never started without the space for
 * all of it (ds_store_write), so "full" says a client has seen ENOSPC.
 */
#define DS_STORE_FULL_SLACK (1u << 20)
bool ds_store_full(struct ds_store *st, uint64_t avail);

/*
 * Create an empty object owned by uid/gid with permission bits mode (within
 * 0777).  Idempotent: an existing object with this id is left as it is.
 * -EEXIST: the key is held at another generation.  Durable with the
 * object's first write (or commit, truncate, setfence), not on return:
 * until then a crash may leave no object (top of this file).
 */
int ds_store_create(struct ds_store *st, const struct ds_objid *id, uint32_t uid, uint32_t gid,
		    uint32_t mode);

/* Remove the object and its data.  Durable on return. */
int ds_store_remove(struct ds_store *st, const struct ds_objid *id);

/*
 * Set the size: data beyond it is discarded; growing adds a hole.  mtime and
 * change move when the size changes.  -EINVAL beyond DS_STORE_MAX_SIZE.
 * Durable on return.
 */
int ds_store_truncate(struct ds_store *st, const struct ds_objid *id, uint64_t size);
/* The same as uid/gid, who need write permission (an NFS SETATTR of size). */
int ds_store_truncate_as(struct ds_store *st, const struct ds_objid *id, uint32_t uid,
			 uint32_t gid, uint64_t size);

/*
 * Free [off, off + len) of the object (off and len whole blocks, len > 0;
 * the part past the end of the object is nothing): those blocks read as
 * zeros, as blocks never written do, and no longer use storage; the size
 * stays.  mtime and change move.  Repeating it is harmless.  -EINVAL:
 * not whole blocks, or beyond DS_STORE_MAX_SIZE.  Durable on return
 * (braid_ctl DEALLOCATE: the MDS frees the mirror copies of a sealed
 * erasure-coded file this way).
 */
int ds_store_deallocate(struct ds_store *st, const struct ds_objid *id, uint64_t off,
			uint64_t len);

/*
 * Make uid/gid the owner and mode (0777 at most; DS_STORE_MODE_KEEP: the
 * mode it has) its permission bits.  On return no READ or WRITE checked
 * against the old owner or mode is in progress, and later ones use the new
 * ones.  Durable on return.  -EINVAL: other bits in mode.
 */
#define DS_STORE_MODE_KEEP UINT32_MAX
int ds_store_setfence(struct ds_store *st, const struct ds_objid *id, uint32_t uid,
		      uint32_t gid, uint32_t mode);

int ds_store_stat(struct ds_store *st, const struct ds_objid *id, struct ds_obj_stat *out);

/*
 * Write iov[0..iovcnt) at off, as uid/gid (needs write permission).  Returns
 * the byte count, all of it, once the promise of how is kept (a stable write
 * syncs the whole object, earlier UNSTABLE writes included).  -EFBIG past
 * DS_STORE_MAX_SIZE; -EINVAL over DS_STORE_MAX_IO; -EIO when a partially
 * overwritten block fails its CRC (nothing is written then); -ENOSPC or
 * -EDQUOT when the filesystem has no room for all of it: the space is
 * allocated before any byte is touched, so the old bytes and their CRCs
 * stay as they were (the store becomes full: ds_store_full).
 */
ssize_t ds_store_write(struct ds_store *st, const struct ds_objid *id, uint32_t uid, uint32_t gid,
		       uint64_t off, const struct iovec *iov, int iovcnt, enum ds_stable how);

/*
 * Make every write that has returned durable (RFC 1813 §3.3.21): the whole
 * object is synced, a superset of [off, off + len), and nothing when nothing
 * changed since the last sync.  No permission check (committing cannot
 * change data).
 */
int ds_store_commit(struct ds_store *st, const struct ds_objid *id, uint64_t off, uint64_t len);
/* Whether uid/gid may (want: 4 read, 2 write) by the object's owner, group
 * and mode: 0, -EACCES, or -ENOENT, -ESTALE as the others. */
int ds_store_access(struct ds_store *st, const struct ds_objid *id, uint32_t uid, uint32_t gid,
		    unsigned want);

/*
 * Start writing back to the disk what earlier writes left in the page cache
 * for [off, off + len), without waiting for it and without a permission
 * check (like commit, it cannot change data): a long run of UNSTABLE writes
 * then overlaps the disk, and the commit ending it waits for little.
 * Durability still needs ds_store_commit.
 */
int ds_store_writeback(struct ds_store *st, const struct ds_objid *id, uint64_t off, uint64_t len);

/*
 * Read up to len bytes at off into buf, as uid/gid (needs read permission).
 * Returns the count (short only at the end of the object) and sets *eof when
 * the read reaches the end.  Every block touched is verified: -EIO if any
 * fails (buf is then zeroed).  With O_DIRECT, a DS_STORE_ALIGN-aligned buf
 * and block-aligned off and len avoid a copy.
 */
ssize_t ds_store_read(struct ds_store *st, const struct ds_objid *id, uint32_t uid, uint32_t gid,
		      uint64_t off, size_t len, void *buf, bool *eof);

/*
 * ds_store_read without the copy, for a store on the page cache: the blocks
 * under the range are mapped read-only (MAP_SHARED) and verified in place,
 * and *data points at byte off in the mapping, valid until
 * ds_store_unmap(m) (a READ reply sends straight from the page cache).
 * Returns as ds_store_read; -EOPNOTSUPP where a mapping cannot serve (an
 * O_DIRECT store, blocks smaller than a page, blocks past the end of the
 * object's data file, mmap failing): the caller copies with ds_store_read.
 * A page that cannot be read while the blocks are verified (a disk I/O
 * error, or the data file cut short behind the store's back) is -EIO and
 * logged: the store catches the SIGBUS on the verifying thread (see
 * ds_store_open) and passes any other SIGBUS on as it was.  A truncation
 * after the return may leave the mapping short: a later access by the
 * kernel fails (EFAULT for a send), never a signal, but this process must
 * not touch *data after it returns.
 */
struct obj_vmap;
struct ds_store_map {
	struct obj_vmap *vmap; /* the object's mapping, held */
	void *base;
	size_t len;
};
ssize_t ds_store_read_mapped(struct ds_store *st, const struct ds_objid *id, uint32_t uid,
			     uint32_t gid, uint64_t off, size_t len, struct ds_store_map *m,
			     const void **data, bool *eof);
void ds_store_unmap(struct ds_store_map *m);

/*
 * Walk the objects (braid_ctl LIST): start with cookie 0 and pass *next back
 * until *eof.  Fills at most max entries (max >= 1), *n of them.  Every
 * object that exists for the whole walk is returned at least once; cookies
 * stay valid across restarts.
 */
int ds_store_list(struct ds_store *st, uint64_t cookie, struct ds_list_entry *ents, unsigned max,
		  unsigned *n, uint64_t *next, bool *eof);

/*
 * Verify every block of every object, reading the media where O_DIRECT is
 * possible.  bad (may be NULL) is called once per bad object with the
 * offset of its first bad block (UINT64_MAX: header unreadable) and the
 * number of bad blocks.  Also removes files left by interrupted creates.
 * stats may be NULL.
 */
typedef void (*ds_scrub_bad_fn)(void *arg, const struct ds_objid *id, uint64_t first_bad_off,
				uint64_t nbad);
int ds_store_scrub(struct ds_store *st, ds_scrub_bad_fn bad, void *arg,
		   struct ds_scrub_stats *stats);

#endif
