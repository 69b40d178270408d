/* SPDX-License-Identifier: MIT */
/*
 * The MDS metadata store: inodes, hashed directories, file layout maps,
 * extended attributes and client records in one LMDB environment.
 *
 * Reads (lookup, getattr, readdir, ...) run in the calling thread on their
 * own read-only LMDB snapshot: many at once, never blocked by writers, no
 * directory-wide lock.  Each thread that reads holds one of 1024 LMDB
 * reader slots while it lives (-EAGAIN beyond).
 *
 * Changes are 'struct mds_op's queued to the store's writer thread, which
 * applies every pending op in one write transaction (group commit) and
 * completes each op only after a sync covering that transaction has
 * returned: when op->done() runs, the change is durable.  One op failing
 * (say -EEXIST) does not affect the others in its batch.  One process per
 * store.
 *
 * Errors are 0 or -errno.  Conventions used throughout:
 *   -ESTALE        an inode number that names no inode (stale filehandle)
 *   -ENOENT        a name that is not in the directory
 *   -ENOTDIR       a directory was required
 *   -EINVAL        a name that is empty, ".", "..", or contains '/' or NUL
 *   -ENAMETOOLONG  a name longer than MDS_NAME_MAX
 *
 * Readers may see a change after its transaction commits and before its
 * sync returns (at most the batch being synced); the op's own reply, which
 * the protocol layer sends from done(), always waits for the sync.
 *
 * Directory cookies (READDIR, RFC 8881 §18.23): see mds_dir_readdir().
 */
#ifndef BRAID_MDS_STORE_H
#define BRAID_MDS_STORE_H

#include <semaphore.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MDS_NAME_MAX	    255	  /* bytes in one directory entry name */
#define MDS_SYMLINK_MAX	    4096  /* bytes in a symlink target */
#define MDS_XATTR_NAME_MAX  255	  /* RFC 8276 xattrkey4 */
#define MDS_XATTR_VALUE_MAX 65536 /* bytes in one xattr value */
#define MDS_OWNER_MAX	    1024  /* client owner, NFS4_OPAQUE_LIMIT */
#define MDS_CLIENT_DATA_MAX 1024  /* opaque bytes of one client record */
#define MDS_LAYOUT_MAX_DS   16	  /* data servers holding one segment */

/* File types, numbered as nfs_ftype4 (RFC 8881 §3.3). */
enum mds_type {
	MDS_REG = 1,
	MDS_DIR = 2,
	MDS_BLK = 3,
	MDS_CHR = 4,
	MDS_LNK = 5,
	MDS_SOCK = 6,
	MDS_FIFO = 7,
};

struct mds_time {
	int64_t sec;
	uint32_t nsec;
};

/* One inode's attributes, as stored. */
struct mds_attr {
	uint64_t ino;
	uint8_t type;	/* enum mds_type */
	uint32_t mode;	/* permission bits only (07777) */
	uint32_t nlink; /* dirs: 2 + subdirectories */
	uint32_t uid, gid;
	uint64_t size; /* dirs: number of entries */
	uint64_t space_used;
	struct mds_time atime, mtime, ctime, btime;
	uint64_t change; /* moves on every change (RFC 8881 §5.8.1.4) */
	uint32_t rdev_major, rdev_minor;
	uint64_t generation; /* store boot count when created */
	uint64_t parent;     /* dirs: the parent directory (root: itself) */
	uint8_t objkey[16];  /* names this file's objects on the data servers */
	uint8_t verf[8];     /* EXCLUSIVE4_1 create verifier (RFC 8881 §18.16.3) */
};

/* A directory's change attribute around one op (change_info4). */
struct mds_cinfo {
	uint64_t before, after;
};

/* Data servers holding one segment of a file (mirrors; the first is preferred). */
struct mds_layout_seg {
	uint32_t flags; /* owned by the layout layer */
	uint32_t nds;	/* 1..MDS_LAYOUT_MAX_DS */
	uint32_t ds[MDS_LAYOUT_MAX_DS];
};
#define MDS_LAYOUT_ALL UINT64_MAX /* mds_layout_remove(): every segment */

/* A client's recovery record (RFC 8881 §8.4.2.1), keyed by its owner.
 * Records with MDS_CLIENT_NSM in flags are NLM's (mds/nlm.c: the hosts
 * holding NLM locks and this server's NSM state), not NFSv4 clients'. */
#define MDS_CLIENT_NSM 1u
struct mds_client_rec {
	uint64_t clientid;
	uint32_t flags;
	uint32_t data_len;
	uint8_t data[MDS_CLIENT_DATA_MAX];
};

/*
 * Store.
 */
struct mds_store;

struct mds_store_opts {
	const char *path;   /* directory holding data.mdb and lock.mdb */
	uint64_t map_size;  /* bytes at first; 0: 64 GiB (address space, not disk) */
	uint64_t map_max;   /* it doubles, when nearly full, up to this; 0: 16 TiB;
			     * map_size or less: it never grows (full: -ENOSPC) */
	unsigned max_batch; /* ops per write transaction; 0: 4096 */
	unsigned hash_bits; /* test hook: 0 normal, 1..16 a tiny name hash */
};

/*
 * Opens (creating if need be) a store; counts one boot.  -EBUSY: another
 * process has it open (one process per store).
 */
int mds_store_open(const struct mds_store_opts *opts, struct mds_store **out);
/* Completes every queued op, syncs and closes.  No call may be in flight. */
void mds_store_close(struct mds_store *s);

uint64_t mds_store_root(const struct mds_store *s);
uint64_t mds_store_boot_count(const struct mds_store *s);

/* Monotonic counters, for tests and metrics. */
struct mds_store_stats {
	uint64_t ops;	    /* ops completed */
	uint64_t batches;   /* write transactions that changed something */
	uint64_t syncs;	    /* fdatasync()s: one per such commit, plus idle syncs */
	uint64_t fallbacks; /* batches redone one op per transaction */
	uint64_t max_batch; /* most ops in one transaction */
	uint64_t map_size;  /* the map's size now, bytes */
	uint64_t map_grows; /* times it grew */
};
void mds_store_stats(const struct mds_store *s, struct mds_store_stats *st);

/*
 * Reads.  Each runs on one consistent snapshot.
 */

/* 'attr' may be NULL. */
int mds_dir_lookup(struct mds_store *s, uint64_t dir, const char *name, size_t len, uint64_t *ino,
		   struct mds_attr *attr);
int mds_inode_getattr(struct mds_store *s, uint64_t ino, struct mds_attr *attr);
/* Copies at most 'size' bytes (no NUL); *len is the target's length.  -EINVAL: not a symlink. */
int mds_inode_readlink(struct mds_store *s, uint64_t ino, char *buf, size_t size, size_t *len);

/*
 * READDIR.  Entries come in cookie order, which is bucket order:
 *
 *   cookie = bucket << 10 | collision index
 *   bucket = top 53 bits of SipHash-2-4(store key, name)   (0 becomes 1)
 *
 * except in a store made with ordered buckets (format 2: every store made
 * since they exist, but for the test hook's narrow hash), where a name
 * whose last run of decimal digits has 1 to 10 of them has
 *
 *   bucket = top (53 - b) bits of SipHash-2-4(store key, the name without
 *            that run, with the run's place and length) << b | the run's value
 *
 * b being the bits that hold that many digits (4 for one, 34 for ten).
 * Names that differ only in that number (img_000041.jpg, img_000042.jpg)
 * are then neighbours in the B-tree and come back in numeric order, and a
 * directory filled in that order writes one leaf after another instead of
 * a random leaf per name: creates stay flat as it grows to 10^7 and past.
 * Other names are hashed whole, as before.  Which scheme a store uses never
 * changes (entries are found by it); a format 1 store keeps hashing every
 * name whole, and a binary that knows only format 1 refuses format 2.
 *
 * Cookies are unique within a directory, stay < 2^63 (they fit a signed
 * off_t), and are never 0, 1 or 2 (RFC 8881 §18.23.3 reserves those; NFSv3
 * may use 1 and 2 for "." and "..").  An entry keeps its cookie until it is
 * removed: entries with the same bucket get the lowest free collision index
 * and are never renumbered.  Resuming after a cookie returns exactly the
 * entries with larger cookies, so an entry present for a whole walk is
 * returned once, whatever was added or removed meanwhile, even if the
 * cookie's own entry is gone.
 *
 * The cookie verifier is therefore constant for the life of the store
 * (derived from its hash key); it changes only if the store is replaced,
 * which is exactly when old cookies stop meaning anything (NFS4ERR_NOT_SAME).
 */
struct mds_dirent {
	uint64_t cookie;
	uint64_t ino;
	uint8_t type;
	const char *name; /* not NUL-terminated */
	size_t name_len;
	const struct mds_attr *attr; /* with MDS_READDIR_ATTRS, else NULL */
};
#define MDS_READDIR_ATTRS 0x1u /* read each entry's inode in the same snapshot */
#define MDS_READDIR_FULL  1    /* callback: entry does not fit, stop before it */
/*
 * Returns 0 to take the entry, MDS_READDIR_FULL to end the reply without
 * it (so a reply fills the client's maxcount), or -errno to abort.  Runs
 * inside a read transaction: it must not call into the store.
 */
typedef int (*mds_readdir_fn)(void *arg, const struct mds_dirent *e);

/*
 * Walks 'dir' from after 'cookie' (0: from the start).  Returns the number
 * of entries taken or -errno; *eof says the walk reached the end.  0 taken
 * with !*eof means the first entry did not fit (NFS4ERR_TOOSMALL).
 * -EINVAL for a cookie mds_dir_cookie_check() calls bad.
 */
int mds_dir_readdir(struct mds_store *s, uint64_t dir, uint64_t cookie, unsigned flags,
		    mds_readdir_fn fn, void *arg, bool *eof);

enum mds_cookie_check {
	MDS_COOKIE_OK = 0,
	MDS_COOKIE_BAD,	     /* never issued: NFS4ERR_BAD_COOKIE */
	MDS_COOKIE_NOT_SAME, /* verifier from another store: NFS4ERR_NOT_SAME */
};
/* The verifier is ignored for cookie 0 (RFC 8881 §18.23.3). */
enum mds_cookie_check mds_dir_cookie_check(const struct mds_store *s, uint64_t cookie,
					   const uint8_t verf[8]);
void mds_store_cookieverf(const struct mds_store *s, uint8_t verf[8]);

/* -ENODATA: no such xattr; -ERANGE: 'size' too small (*len says what is needed). */
int mds_xattr_get(struct mds_store *s, uint64_t ino, const char *name, size_t name_len, void *buf,
		  size_t size, size_t *len);
/* Names in byte order; fn returns nonzero to stop (and that is returned). */
int mds_xattr_list(struct mds_store *s, uint64_t ino,
		   int (*fn)(void *arg, const char *name, size_t len), void *arg);

/* -ENOENT: no map for that segment. */
int mds_layout_get(struct mds_store *s, uint64_t ino, uint64_t seg, struct mds_layout_seg *out);
int mds_layout_list(struct mds_store *s, uint64_t ino,
		    int (*fn)(void *arg, uint64_t seg, const struct mds_layout_seg *l), void *arg);
/* Every map of every inode, in (ino, seg) order, on one snapshot (braidctl
 * ds remove: does any file still name a data server?).  fn returns nonzero
 * to stop (and that is returned). */
int mds_layout_scan(struct mds_store *s,
		    int (*fn)(void *arg, uint64_t ino, uint64_t seg,
			      const struct mds_layout_seg *l),
		    void *arg);

int mds_client_get(struct mds_store *s, const void *owner, size_t owner_len,
		   struct mds_client_rec *out);
int mds_client_list(struct mds_store *s,
		    int (*fn)(void *arg, const void *owner, size_t owner_len,
			      const struct mds_client_rec *rec),
		    void *arg);

/* Regular files with no links left whose data-server objects await mds_inode_reap(). */
int mds_orphan_list(struct mds_store *s, int (*fn)(void *arg, const struct mds_attr *attr),
		    void *arg);

/*
 * Changes: ops and their arguments.  Pointers in the arguments are
 * borrowed until the op completes.
 */
enum mds_op_type {
	MDS_OP_CREATE = 1,
	MDS_OP_REMOVE,
	MDS_OP_RENAME,
	MDS_OP_LINK,
	MDS_OP_SETATTR,
	MDS_OP_REAP,
	MDS_OP_XATTR_SET,
	MDS_OP_XATTR_REMOVE,
	MDS_OP_LAYOUT_SET,
	MDS_OP_LAYOUT_REMOVE,
	MDS_OP_CLIENT_PUT,
	MDS_OP_CLIENT_REMOVE,
	MDS_OP_WLAYOUT_MARK,
	MDS_OP_WLAYOUT_CLEAR,
	MDS_OP_STALE_MARK,
	MDS_OP_STALE_CLEAR,
	MDS_OP_ECSEAL_MARK,
	MDS_OP_ECSEAL_CLEAR,
};

/* RFC 8881 §18.16.3 createmode4. */
enum mds_create_how {
	MDS_CREATE_GUARDED = 0, /* -EEXIST if the name exists */
	MDS_CREATE_UNCHECKED,	/* an existing regular file is returned (existed) */
	MDS_CREATE_EXCLUSIVE,	/* as GUARDED, but the same verf returns the file */
};

struct mds_create_args {
	uint64_t dir;
	const char *name;
	size_t name_len;
	uint8_t type; /* enum mds_type */
	uint8_t how;  /* enum mds_create_how */
	uint32_t mode, uid, gid;
	uint32_t rdev_major, rdev_minor; /* MDS_BLK, MDS_CHR */
	const char *symlink;		 /* MDS_LNK target */
	size_t symlink_len;
	uint8_t verf[8]; /* MDS_CREATE_EXCLUSIVE */
	/* Optional: a layout record the new inode gets in the same transaction
	 * (segment layout_seg; braid-mds puts a regular file's inherited
	 * layout policy there), so a crash never leaves the inode without it.
	 * Not written when the name already exists. */
	const struct mds_layout_seg *layout;
	uint64_t layout_seg;
};
struct mds_create_res {
	struct mds_attr attr; /* the new (or existing) inode */
	struct mds_cinfo cinfo;
	bool existed;
};

/* What an unlink (REMOVE, or RENAME over a target) did to the inode. */
struct mds_unlinked {
	uint64_t ino;
	uint8_t type;
	uint32_t nlink; /* links left */
	/*
	 * A regular file with no links: kept (open filehandles still work)
	 * and listed by mds_orphan_list() until the caller has removed its
	 * data-server objects and calls mds_inode_reap().  Other types with
	 * no links are deleted at once.
	 */
	bool orphaned;
	uint8_t objkey[16];
};

#define MDS_REMOVE_NONDIR 0x1u /* -EISDIR for a directory (NFSv3 REMOVE) */
#define MDS_REMOVE_DIR	  0x2u /* -ENOTDIR for a non-directory (NFSv3 RMDIR) */
struct mds_remove_args {
	uint64_t dir;
	const char *name;
	size_t name_len;
	unsigned flags;
};
struct mds_remove_res {
	struct mds_cinfo cinfo;
	struct mds_unlinked victim;
};

struct mds_rename_args {
	uint64_t src_dir;
	const char *src_name;
	size_t src_len;
	uint64_t dst_dir;
	const char *dst_name;
	size_t dst_len;
};
struct mds_rename_res {
	struct mds_cinfo src_cinfo, dst_cinfo;
	uint64_t ino;  /* the inode moved */
	bool noop;     /* both names were links to the same inode */
	bool replaced; /* an existing target was unlinked: see victim */
	struct mds_unlinked victim;
};

struct mds_link_args {
	uint64_t ino;
	uint64_t dir;
	const char *name;
	size_t name_len;
};
struct mds_link_res {
	struct mds_cinfo cinfo;
	struct mds_attr attr;
};

/* What a SETATTR sets (mask); every setattr moves change and ctime, but
 * one of MDS_SET_SPACE_USED alone (mds/space.h) moves neither. */
#define MDS_SET_MODE	     0x001u
#define MDS_SET_UID	     0x002u
#define MDS_SET_GID	     0x004u
#define MDS_SET_SIZE	     0x008u /* truncate or extend; moves mtime if size changes */
#define MDS_SET_SIZE_MAX     0x010u /* size = max(size, .size): LAYOUTCOMMIT */
#define MDS_SET_ATIME	     0x020u
#define MDS_SET_ATIME_NOW    0x040u
#define MDS_SET_MTIME	     0x080u
#define MDS_SET_MTIME_NOW    0x100u
#define MDS_SET_SPACE_USED   0x200u
#define MDS_SET_CHANGE_GUARD 0x400u /* -EAGAIN unless change == .guard */
struct mds_setattr_args {
	uint64_t ino;
	uint32_t mask;
	uint32_t mode, uid, gid;
	uint64_t size;
	uint64_t space_used;
	struct mds_time atime, mtime;
	uint64_t guard;
};
struct mds_setattr_res {
	struct mds_attr attr;
	uint64_t old_size; /* so the caller can truncate data-server objects */
};

#define MDS_XATTR_CREATE  0x1u /* -EEXIST if present (RFC 8276 SETXATTR4_CREATE) */
#define MDS_XATTR_REPLACE 0x2u /* -ENODATA if absent (SETXATTR4_REPLACE) */
struct mds_xattr_args {
	uint64_t ino;
	const char *name;
	size_t name_len;
	const void *value; /* XATTR_SET */
	size_t value_len;
	unsigned flags;
};

struct mds_layout_args {
	uint64_t ino;
	uint64_t seg;		 /* LAYOUT_REMOVE: or MDS_LAYOUT_ALL */
	struct mds_layout_seg l; /* LAYOUT_SET */
};

struct mds_client_args {
	const void *owner;
	size_t owner_len;
	const struct mds_client_rec *rec; /* CLIENT_PUT */
};

/*
 * One change.  Fill 'type' and the matching args member, set 'done', and
 * mds_store_submit() it; 'status' and 'res' are valid in done().  From
 * submit until done() the op belongs to the store.  done() runs on the
 * store's writer thread once the change is durable: it must be short and
 * must not wait for another op (it may submit one, or read).  Ops are
 * applied in submission order.
 */
struct mds_op {
	enum mds_op_type type;
	union {
		struct mds_create_args create;
		struct mds_remove_args remove;
		struct mds_rename_args rename;
		struct mds_link_args link;
		struct mds_setattr_args setattr;
		uint64_t reap;		       /* ino */
		struct mds_xattr_args xattr;   /* XATTR_SET, XATTR_REMOVE */
		struct mds_layout_args layout; /* LAYOUT_SET, LAYOUT_REMOVE */
		struct mds_client_args client; /* CLIENT_PUT, CLIENT_REMOVE */
		uint64_t ino;		       /* WLAYOUT_MARK, WLAYOUT_CLEAR */
	} args;
	int status;
	union {
		struct mds_create_res create;
		struct mds_remove_res remove;
		struct mds_rename_res rename;
		struct mds_link_res link;
		struct mds_setattr_res setattr;
	} res;
	void (*done)(struct mds_op *op);
	void *priv;	     /* the caller's */
	/* done() once the op's transaction is committed (visible to every
	 * reader, its pages written and synced) instead of once it is durable
	 * (its meta page synced by the next commit or the idle sync): one
	 * fdatasync less for a lone op, and a crash may undo it.  Only for
	 * changes that something else restores after a crash (LAYOUTCOMMIT's
	 * size: the write mark makes the restart reconcile it from the data
	 * servers). */
	bool applied_only;
	struct mds_op *next; /* store-private queue link */
};

void mds_store_submit(struct mds_store *s, struct mds_op *op);
/* Submits and waits; returns op->status.  Overwrites op->done and op->priv. */
int mds_store_run(struct mds_store *s, struct mds_op *op);
/* mds_store_run in two halves, for work to do while op commits: begin
 * submits it (sem, initialised here, lives until the wait); wait returns
 * op->status once done.  Every begin is waited for. */
void mds_store_begin(struct mds_store *s, struct mds_op *op, sem_t *sem);
int mds_store_wait(struct mds_op *op);

/*
 * Synchronous forms: each submits one op and waits until it is durable.
 * 'res' may be NULL where present.
 */
int mds_dir_create(struct mds_store *s, const struct mds_create_args *a,
		   struct mds_create_res *res);
/*
 * Unlinks a name (NFSv4 REMOVE: file or empty directory).  -ENOTEMPTY for
 * a directory with entries; see struct mds_unlinked for what is left.
 */
int mds_dir_remove(struct mds_store *s, const struct mds_remove_args *a,
		   struct mds_remove_res *res);
/*
 * POSIX rename(2) semantics (RFC 8881 §18.26.3): an existing target is
 * replaced if compatible (-EISDIR: file over directory, -ENOTDIR: directory
 * over file, -ENOTEMPTY: over a non-empty directory); links to the same
 * inode make it a no-op; -EINVAL moves a directory into its own subtree.
 */
int mds_dir_rename(struct mds_store *s, const struct mds_rename_args *a,
		   struct mds_rename_res *res);
/* -EISDIR: a directory; -ENOENT: an inode with no links left; -EMLINK. */
int mds_dir_link(struct mds_store *s, const struct mds_link_args *a, struct mds_link_res *res);
/* -EISDIR / -EINVAL for a size on a directory / non-regular file. */
int mds_inode_setattr(struct mds_store *s, const struct mds_setattr_args *a,
		      struct mds_setattr_res *res);
/* The same, returning once applied, not durable (mds_op.applied_only). */
int mds_inode_setattr_applied(struct mds_store *s, const struct mds_setattr_args *a,
			      struct mds_setattr_res *res);
/*
 * Deletes an orphan (its attributes, layout maps and xattrs) once its
 * data-server objects are gone.  -EBUSY: it has links.
 */
int mds_inode_reap(struct mds_store *s, uint64_t ino);
int mds_xattr_set(struct mds_store *s, const struct mds_xattr_args *a);
int mds_xattr_remove(struct mds_store *s, const struct mds_xattr_args *a);
/* -ESTALE for an inode that does not exist; -EINVAL for nds out of range. */
int mds_layout_set(struct mds_store *s, const struct mds_layout_args *a);
int mds_layout_remove(struct mds_store *s, const struct mds_layout_args *a);
/*
 * Files that may hold data the MDS has not counted: an RW layout was
 * granted and not all returned since (RFC 8435 §4, after a crash the size
 * is reconciled from the data servers).  MARK is durable before it
 * returns; a file's removal (mds_inode_reap) drops its mark.
 */
int mds_wlayout_mark(struct mds_store *s, uint64_t ino);
int mds_wlayout_clear(struct mds_store *s, uint64_t ino);
int mds_wlayout_list(struct mds_store *s, int (*fn)(void *arg, uint64_t ino), void *arg);
/*
 * Files with a stale mirror: an object on some data server missed writes
 * (mds/data.h MDS_LAYOUT_STALE says which), to be brought up to date.
 * MARK is durable before it returns; reaping a file drops its mark.
 */
int mds_stale_mark(struct mds_store *s, uint64_t ino);
int mds_stale_clear(struct mds_store *s, uint64_t ino);
int mds_stale_list(struct mds_store *s, int (*fn)(void *arg, uint64_t ino), void *arg);
/*
 * Erasure-coded files to seal (mds/ec.h): written, or unsealed by a
 * write, and not yet encoded.  MARK is durable before it returns; reaping
 * a file drops its mark.
 */
int mds_ecseal_mark(struct mds_store *s, uint64_t ino);
int mds_ecseal_clear(struct mds_store *s, uint64_t ino);
int mds_ecseal_list(struct mds_store *s, int (*fn)(void *arg, uint64_t ino), void *arg);
int mds_client_put(struct mds_store *s, const struct mds_client_args *a);
int mds_client_remove(struct mds_store *s, const struct mds_client_args *a);

#endif
