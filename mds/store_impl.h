/* SPDX-License-Identifier: MIT */
/*
 * Inside the metadata store: the store struct, on-disk formats and the
 * helpers store.c (environment, commit queue, reads) and store_ops.c (the
 * ops applied by the writer thread) share.  Not for use outside mds/store*.
 *
 * On-disk formats.  Keys are big-endian so LMDB's memcmp order is numeric
 * order; values are little-endian.
 *
 *   db        key                               value
 *   meta      ASCII name                        see META_* below
 *   inodes    ino (8)                           inode record (INODE_REC_LEN
 *                                               bytes, then a symlink target)
 *   dirents   dir ino (8), cookie (8)           child ino (8), type (1), 0 (1),
 *                                               name length (2), name
 *   layouts   ino (8), segment (8)              flags (4), nds (4), ds ids (4 each)
 *   xattrs    ino (8), name                     value
 *   clients   SipHash-2-4 of owner under two    clientid (8), flags (4), owner
 *             keys (16)                         length (4), data length (4),
 *                                               owner, data
 *   orphans   ino (8)                           empty
 *
 *   meta keys: format (STORE_FORMAT_*), hash_key, obj_key, hash_bits,
 *   root_ino, next_ino, boot_count
 */
#ifndef BRAID_MDS_STORE_IMPL_H
#define BRAID_MDS_STORE_IMPL_H

#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>

#include "mds/store.h"
#include "nfsd/bytes.h"

/* Formats: 1, names hashed whole; 2, ordered buckets (mds_name_bucket()).
 * A binary that knows only 1 refuses a 2 (it would look names up in the
 * wrong buckets). */
#define STORE_FORMAT_PLAIN   1
#define STORE_FORMAT_ORDERED 2

/* Cookies: bucket << COOKIE_COLL_BITS | collision index; see store.h. */
#define COOKIE_COLL_BITS  10
#define COOKIE_COLL_MAX	  (1u << COOKIE_COLL_BITS)
#define HASH_BITS_DEFAULT 53 /* 53 + 10 = 63: cookies fit a signed off_t */

/* Inode record v1: fixed part; a symlink's target follows it. */
#define INODE_REC_V1  1
#define INODE_REC_LEN 144

#define DIRENT_KEY_LEN 16
#define DIRENT_VAL_HDR 12
#define LAYOUT_VAL_HDR 8
#define CLIENT_VAL_HDR 20

struct mds_store {
	/* Set by mds_store_open(), then read-only: any thread. */
	MDB_env *env;
	int lock_fd; /* flock()ed: one process per store */
	MDB_dbi db_meta, db_inodes, db_dirents, db_layouts, db_xattrs, db_clients, db_orphans,
	    db_wlayouts, db_stale, db_ecseal;
	uint64_t hash_key[2]; /* names -> buckets; never changes */
	uint64_t obj_key[2];  /* ino -> objkey */
	unsigned hash_bits;
	bool name_order; /* STORE_FORMAT_ORDERED: see mds_name_bucket() */
	unsigned max_batch;
	uint64_t root;
	uint64_t boot;
	uint8_t verf[8]; /* cookie verifier, from hash_key */

	/* The queue of submitted ops: guarded by qlock. */
	pthread_mutex_t qlock;
	pthread_cond_t qcond; /* writer waits for ops or stopping */
	struct mds_op *qhead, *qtail;
	bool stopping;

	/* Writer thread only. */
	pthread_t writer;
	uint64_t next_ino;
	/* Committed, not yet covered by a sync; completed after the next one. */
	struct mds_op *unacked, **unacked_tail;
	bool unsynced; /* writer only: a commit whose meta page is not yet synced */
	int failed; /* -EIO once a sync failed: every later op fails */

	/*
	 * The map, LMDB's address space for data.mdb: the writer grows it
	 * between its transactions once it is nearly full (store_map_grow).
	 * LMDB resizes only with no transaction active in the process, so
	 * every read transaction holds map_lock shared (rtxn_begin/rtxn_end)
	 * and the writer takes it exclusive to resize.
	 */
	pthread_rwlock_t map_lock;
	uint64_t map_max; /* constant */
	size_t page_size; /* constant: LMDB's */

	/* Statistics: relaxed atomics. */
	_Atomic uint64_t st_ops, st_batches, st_syncs, st_fallbacks, st_max_batch;
	_Atomic uint64_t st_map_size, st_map_grows;
};

/* An inode with its symlink target, copied out of LMDB. */
struct mds_irec {
	struct mds_attr a;
	size_t link_len;
	char link[MDS_SYMLINK_MAX];
};

/* One write transaction as the writer applies an op in it. */
struct mds_wtx {
	struct mds_store *s;
	MDB_txn *txn;
	struct mds_time now; /* this op's time */
	bool wrote;	     /* this op has called put/del: its failure poisons txn */
};

/* A name looked up in its bucket. */
struct mds_dfind {
	bool found;
	uint64_t cookie; /* found: its cookie; else the free one (0: bucket full) */
	uint64_t ino;
	uint8_t type;
};

/* store.c */
uint64_t mds_siphash24(const uint64_t key[2], const void *data, size_t len);
int mds_lmdb_err(int rc);
int mds_name_check(const char *name, size_t len);
uint64_t mds_name_bucket(const struct mds_store *s, const char *name, size_t len);
void mds_dirent_key(uint8_t key[DIRENT_KEY_LEN], uint64_t dir, uint64_t cookie);
int mds_dirent_find(const struct mds_store *s, MDB_txn *txn, uint64_t dir, const char *name,
		    size_t len, struct mds_dfind *f);
int mds_inode_read(const struct mds_store *s, MDB_txn *txn, uint64_t ino, struct mds_attr *a);
int mds_inode_load(const struct mds_store *s, MDB_txn *txn, uint64_t ino, struct mds_irec *r);
size_t mds_inode_encode(const struct mds_irec *r, uint8_t *buf);
void mds_client_key(const struct mds_store *s, const void *owner, size_t len, uint8_t key[16]);
int mds_client_decode(const MDB_val *v, const uint8_t **owner, size_t *owner_len,
		      struct mds_client_rec *rec);

/* store_ops.c: apply one op in w->txn; 0 or -errno, res filled. */
int mds_op_apply(struct mds_wtx *w, struct mds_op *op);

#endif
