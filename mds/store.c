/* SPDX-License-Identifier: MIT */
/*
 * The metadata store: LMDB environment, name hashing, the group-commit
 * writer thread, and the read side.  The ops themselves are in store_ops.c.
 *
 * Group commit.  Submitters append ops to one queue.  The writer thread
 * takes everything queued (up to max_batch), applies it in one write
 * transaction and commits.  The environment has MDB_NOMETASYNC: a commit
 * fdatasync()s its data pages and then writes its meta page unsynced, so
 * after commit N the transactions before N are durable and N is durable
 * once the next fdatasync returns.  The writer therefore completes batch
 * N-1 right after commit N, and when the queue is empty it calls
 * mdb_env_sync() to complete N.  Under load that is one fdatasync per
 * batch; alone, an op costs two (as LMDB's default does).  An op marked
 * applied_only is done at its own commit, before the sync that makes it
 * durable (the idle sync still follows).  A transaction
 * reuses only pages freed before its predecessor, so the pages of the last
 * synced meta page stay intact: a crash at any moment leaves a consistent
 * store holding every completed op.  A failed sync is final (-EIO for
 * every op after it): a later fdatasync() may succeed having lost data.
 *
 * Isolation between ops of a batch: every op checks everything before its
 * first write, so an op failing for a protocol reason (-EEXIST, ...)
 * leaves the transaction untouched.  An op failing after writing (LMDB
 * out of space, I/O error) aborts the batch, which is then redone one op
 * per transaction so that only the failing op fails.
 *
 * The map.  LMDB reads through a mapping of fixed size, and a transaction
 * that would need pages past it fails (MDB_MAP_FULL).  The map starts at
 * 64 GiB of address space (not disk) and the writer doubles it, up to 16
 * TiB, between transactions once less than a quarter is left, or when an
 * op ran out of map (that op is then tried again).  LMDB resizes only with
 * no transaction active in the process: readers hold map_lock shared for
 * each read transaction, and the writer takes it exclusive for the resize.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mds/store_impl.h"
#include "nfsd/mac.h"
#include "nfsd/rpc.h"
#include "nfsd/trace.h"

/* SipHash-2-4 (nfsd/mac.c) with the store's key layout. */
uint64_t mds_siphash24(const uint64_t key[2], const void *data, size_t len)
{
	const struct siphash_key k = { { key[0], key[1] } };
	return siphash24(&k, data, len);
}

#define MAP_FIRST (64ULL << 30) /* the map's size when opts.map_size is 0 */
#define MAP_MAX	  (16ULL << 40) /* and what it grows to when opts.map_max is 0 */

/* LMDB's codes to -errno. */
int mds_lmdb_err(int rc)
{
	switch (rc) {
	case 0:
		return 0;
	case MDB_NOTFOUND:
		return -ENOENT;
	case MDB_MAP_FULL:
	case MDB_TXN_FULL:
	case MDB_CURSOR_FULL:
	case MDB_PAGE_FULL:
		return -ENOSPC;
	case MDB_READERS_FULL:
		return -EAGAIN;
	case MDB_KEYEXIST:
		return -EEXIST;
	case MDB_BAD_VALSIZE:
		return -EINVAL;
	default:
		return rc > 0 ? -rc : -EIO;
	}
}

int mds_name_check(const char *name, size_t len)
{
	if (len == 0 || (len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.'))
		return -EINVAL;
	if (len > MDS_NAME_MAX)
		return -ENAMETOOLONG;
	if (memchr(name, '/', len) || memchr(name, '\0', len))
		return -EINVAL;
	return 0;
}

/*
 * Bits that hold a run of d decimal digits (10^d - 1 < 2^bits): the low
 * part of an ordered bucket.  Runs of more than NAME_RUN_MAX digits are
 * hashed whole, so the hashed part keeps at least 53 - 34 = 19 bits.
 */
#define NAME_RUN_MAX 10
static const uint8_t run_bits[NAME_RUN_MAX + 1] = {0, 4, 7, 10, 14, 17, 20, 24, 27, 30, 34};

/*
 * A name's bucket, never 0 (cookies 0-2 are reserved).  Plain: the top
 * hash_bits of the name's keyed hash.  Ordered (name_order, see store.h):
 * a name whose last run of digits has 1..NAME_RUN_MAX of them gets the
 * keyed hash of everything else (the run's place and length included) in
 * the high bits and the run's value in the low bits, so img_000041.jpg and
 * img_000042.jpg are neighbours in the B-tree and a directory filled in
 * numeric order writes one leaf page after another instead of a random
 * one per name.
 */
uint64_t mds_name_bucket(const struct mds_store *s, const char *name, size_t len)
{
	size_t end = len, start = len;
	if (s->name_order && len <= MDS_NAME_MAX) {
		while (end > 0 && (name[end - 1] < '0' || name[end - 1] > '9'))
			end--;
		for (start = end; start > 0 && name[start - 1] >= '0' && name[start - 1] <= '9';
		     start--)
			;
	}
	size_t d = end - start;
	uint64_t b;
	if (d == 0 || d > NAME_RUN_MAX) {
		b = mds_siphash24(s->hash_key, name, len) >> (64 - s->hash_bits);
	} else {
		uint8_t buf[3 + MDS_NAME_MAX];
		uint64_t num = 0;
		for (size_t i = start; i < end; i++)
			num = num * 10 + (uint64_t)(name[i] - '0');
		buf[0] = (uint8_t)d;
		put_le16(buf + 1, (uint16_t)start);
		memcpy(buf + 3, name, start);
		memcpy(buf + 3 + start, name + end, len - end);
		unsigned nb = run_bits[d];
		uint64_t h = mds_siphash24(s->hash_key, buf, 3 + len - d);
		b = (h >> (64 - (s->hash_bits - nb))) << nb | num;
	}
	return b ? b : 1;
}

void mds_dirent_key(uint8_t key[DIRENT_KEY_LEN], uint64_t dir, uint64_t cookie)
{
	put_be64(key, dir);
	put_be64(key + 8, cookie);
}

/*
 * Scans the name's bucket (normally one entry).  Collision indices are
 * kept in order by the key, so the first gap is the lowest free index.
 */
int mds_dirent_find(const struct mds_store *s, MDB_txn *txn, uint64_t dir, const char *name,
		    size_t len, struct mds_dfind *f)
{
	uint64_t base = mds_name_bucket(s, name, len) << COOKIE_COLL_BITS;
	uint64_t end = base + COOKIE_COLL_MAX, expect = base;
	bool gap = false;
	uint8_t kb[DIRENT_KEY_LEN];
	MDB_cursor *c;
	int rc = mdb_cursor_open(txn, s->db_dirents, &c);
	if (rc)
		return mds_lmdb_err(rc);
	mds_dirent_key(kb, dir, base);
	MDB_val k = {sizeof(kb), kb}, v;
	memset(f, 0, sizeof(*f));
	for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		if (k.mv_size != DIRENT_KEY_LEN || v.mv_size < DIRENT_VAL_HDR) {
			rc = EIO;
			break;
		}
		const uint8_t *kp = k.mv_data, *vp = v.mv_data;
		uint64_t cookie = get_be64(kp + 8);
		if (get_be64(kp) != dir || cookie >= end)
			break;
		if (!gap) {
			if (cookie == expect)
				expect++;
			else
				gap = true;
		}
		size_t nlen = get_le16(vp + 10);
		if (nlen == len && DIRENT_VAL_HDR + nlen <= v.mv_size &&
		    memcmp(vp + DIRENT_VAL_HDR, name, len) == 0) {
			f->found = true;
			f->cookie = cookie;
			f->ino = get_le64(vp);
			f->type = vp[8];
			mdb_cursor_close(c);
			return 0;
		}
	}
	mdb_cursor_close(c);
	if (rc && rc != MDB_NOTFOUND)
		return mds_lmdb_err(rc);
	f->cookie = expect < end ? expect : 0;
	return 0;
}

static void inode_decode_attr(const uint8_t *p, uint64_t ino, struct mds_attr *a)
{
	a->ino = ino;
	a->type = p[1];
	a->mode = get_le32(p + 4);
	a->nlink = get_le32(p + 8);
	a->uid = get_le32(p + 12);
	a->gid = get_le32(p + 16);
	a->rdev_major = get_le32(p + 20);
	a->rdev_minor = get_le32(p + 24);
	a->size = get_le64(p + 32);
	a->space_used = get_le64(p + 40);
	a->change = get_le64(p + 48);
	a->generation = get_le64(p + 56);
	a->parent = get_le64(p + 64);
	struct mds_time *t[4] = {&a->atime, &a->mtime, &a->ctime, &a->btime};
	for (int i = 0; i < 4; i++) {
		t[i]->sec = (int64_t)get_le64(p + 72 + 12 * i);
		t[i]->nsec = get_le32(p + 80 + 12 * i);
	}
	memcpy(a->objkey, p + 120, 16);
	memcpy(a->verf, p + 136, 8);
}

size_t mds_inode_encode(const struct mds_irec *r, uint8_t *p)
{
	const struct mds_attr *a = &r->a;
	memset(p, 0, INODE_REC_LEN);
	p[0] = INODE_REC_V1;
	p[1] = a->type;
	put_le32(p + 4, a->mode);
	put_le32(p + 8, a->nlink);
	put_le32(p + 12, a->uid);
	put_le32(p + 16, a->gid);
	put_le32(p + 20, a->rdev_major);
	put_le32(p + 24, a->rdev_minor);
	put_le64(p + 32, a->size);
	put_le64(p + 40, a->space_used);
	put_le64(p + 48, a->change);
	put_le64(p + 56, a->generation);
	put_le64(p + 64, a->parent);
	const struct mds_time *t[4] = {&a->atime, &a->mtime, &a->ctime, &a->btime};
	for (int i = 0; i < 4; i++) {
		put_le64(p + 72 + 12 * i, (uint64_t)t[i]->sec);
		put_le32(p + 80 + 12 * i, t[i]->nsec);
	}
	memcpy(p + 120, a->objkey, 16);
	memcpy(p + 136, a->verf, 8);
	memcpy(p + INODE_REC_LEN, r->link, r->link_len);
	return INODE_REC_LEN + r->link_len;
}

static int inode_get_raw(const struct mds_store *s, MDB_txn *txn, uint64_t ino, MDB_val *v)
{
	uint8_t kb[8];
	put_be64(kb, ino);
	MDB_val k = {sizeof(kb), kb};
	int rc = mdb_get(txn, s->db_inodes, &k, v);
	if (rc == MDB_NOTFOUND)
		return -ESTALE;
	if (rc)
		return mds_lmdb_err(rc);
	const uint8_t *p = v->mv_data;
	if (v->mv_size < INODE_REC_LEN || p[0] != INODE_REC_V1 ||
	    v->mv_size - INODE_REC_LEN > MDS_SYMLINK_MAX)
		return -EIO;
	return 0;
}

int mds_inode_read(const struct mds_store *s, MDB_txn *txn, uint64_t ino, struct mds_attr *a)
{
	MDB_val v;
	int rc = inode_get_raw(s, txn, ino, &v);
	if (rc)
		return rc;
	inode_decode_attr(v.mv_data, ino, a);
	return 0;
}

int mds_inode_load(const struct mds_store *s, MDB_txn *txn, uint64_t ino, struct mds_irec *r)
{
	MDB_val v;
	int rc = inode_get_raw(s, txn, ino, &v);
	if (rc)
		return rc;
	inode_decode_attr(v.mv_data, ino, &r->a);
	r->link_len = v.mv_size - INODE_REC_LEN;
	memcpy(r->link, (const uint8_t *)v.mv_data + INODE_REC_LEN, r->link_len);
	return 0;
}

/* 128 bits: owners are up to 1024 bytes, LMDB keys at most 511. */
void mds_client_key(const struct mds_store *s, const void *owner, size_t len, uint8_t key[16])
{
	uint64_t k2[2] = {s->hash_key[1], s->hash_key[0] ^ 0x636c69656e74ULL};
	put_be64(key, mds_siphash24(s->hash_key, owner, len));
	put_be64(key + 8, mds_siphash24(k2, owner, len));
}

int mds_client_decode(const MDB_val *v, const uint8_t **owner, size_t *owner_len,
		      struct mds_client_rec *rec)
{
	const uint8_t *p = v->mv_data;
	if (v->mv_size < CLIENT_VAL_HDR)
		return -EIO;
	uint32_t olen = get_le32(p + 12), dlen = get_le32(p + 16);
	if (olen > MDS_OWNER_MAX || dlen > MDS_CLIENT_DATA_MAX ||
	    v->mv_size != (size_t)CLIENT_VAL_HDR + olen + dlen)
		return -EIO;
	*owner = p + CLIENT_VAL_HDR;
	*owner_len = olen;
	if (rec) {
		rec->clientid = get_le64(p);
		rec->flags = get_le32(p + 8);
		rec->data_len = dlen;
		memcpy(rec->data, p + CLIENT_VAL_HDR + olen, dlen);
	}
	return 0;
}

/*
 * Open and close.
 */
static int meta_get(MDB_txn *txn, MDB_dbi db, const char *name, void *buf, size_t len)
{
	MDB_val k = {strlen(name), (void *)name}, v;
	int rc = mdb_get(txn, db, &k, &v);
	if (rc)
		return mds_lmdb_err(rc);
	if (v.mv_size != len)
		return -EIO;
	memcpy(buf, v.mv_data, len);
	return 0;
}

static int meta_get64(MDB_txn *txn, MDB_dbi db, const char *name, uint64_t *out)
{
	uint8_t b[8];
	int rc = meta_get(txn, db, name, b, sizeof(b));
	if (!rc)
		*out = get_le64(b);
	return rc;
}

static int meta_put(MDB_txn *txn, MDB_dbi db, const char *name, const void *buf, size_t len)
{
	MDB_val k = {strlen(name), (void *)name}, v = {len, (void *)buf};
	return mds_lmdb_err(mdb_put(txn, db, &k, &v, 0));
}

static int meta_put64(MDB_txn *txn, MDB_dbi db, const char *name, uint64_t val)
{
	uint8_t b[8];
	put_le64(b, val);
	return meta_put(txn, db, name, b, sizeof(b));
}

/* Keys as bytes: the same value on every host. */
static void key_decode(const uint8_t b[16], uint64_t k[2])
{
	k[0] = get_le64(b);
	k[1] = get_le64(b + 8);
}

static int store_create_root(struct mds_store *s, MDB_txn *txn)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct mds_time now = {ts.tv_sec, (uint32_t)ts.tv_nsec};
	struct mds_irec *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->a = (struct mds_attr){
	    .ino = s->root,
	    .type = MDS_DIR,
	    .mode = 0755,
	    .nlink = 2,
	    .change = 1,
	    .atime = now,
	    .mtime = now,
	    .ctime = now,
	    .btime = now,
	    .generation = s->boot,
	    .parent = s->root,
	};
	uint8_t kb[8], vb[INODE_REC_LEN];
	put_be64(kb, s->root);
	MDB_val k = {sizeof(kb), kb}, v = {mds_inode_encode(r, vb), vb};
	free(r);
	return mds_lmdb_err(mdb_put(txn, s->db_inodes, &k, &v, MDB_NOOVERWRITE));
}

/* Reads or creates the meta db; counts one boot. */
static int store_init_meta(struct mds_store *s, MDB_txn *txn, unsigned hash_bits)
{
	uint64_t format, bits;
	uint8_t kb[16];
	int rc = meta_get64(txn, s->db_meta, "format", &format);
	if (rc == -ENOENT) {
		/* A new store. */
		bits = hash_bits ? hash_bits : HASH_BITS_DEFAULT;
		/* ordered buckets need the whole 53 bits; the test hook's tiny
		 * hash stays plain */
		format = bits == HASH_BITS_DEFAULT ? STORE_FORMAT_ORDERED : STORE_FORMAT_PLAIN;
		if (getrandom(kb, sizeof(kb), 0) != sizeof(kb))
			return -EIO;
		if ((rc = meta_put(txn, s->db_meta, "hash_key", kb, sizeof(kb))))
			return rc;
		if (getrandom(kb, sizeof(kb), 0) != sizeof(kb))
			return -EIO;
		if ((rc = meta_put(txn, s->db_meta, "obj_key", kb, sizeof(kb))) ||
		    (rc = meta_put64(txn, s->db_meta, "format", format)) ||
		    (rc = meta_put64(txn, s->db_meta, "hash_bits", bits)) ||
		    (rc = meta_put64(txn, s->db_meta, "root_ino", 1)) ||
		    (rc = meta_put64(txn, s->db_meta, "next_ino", 2)) ||
		    (rc = meta_put64(txn, s->db_meta, "boot_count", 0)))
			return rc;
		s->root = 1;
		if ((rc = store_create_root(s, txn)))
			return rc;
	} else if (rc) {
		return rc;
	} else if (format != STORE_FORMAT_PLAIN && format != STORE_FORMAT_ORDERED) {
		return -EPROTO;
	}
	if ((rc = meta_get64(txn, s->db_meta, "hash_bits", &bits)) ||
	    (rc = meta_get64(txn, s->db_meta, "root_ino", &s->root)) ||
	    (rc = meta_get64(txn, s->db_meta, "next_ino", &s->next_ino)) ||
	    (rc = meta_get64(txn, s->db_meta, "boot_count", &s->boot)))
		return rc;
	/* The hash decides where entries are: it can never change. */
	if (bits < 1 || bits > HASH_BITS_DEFAULT || (hash_bits && hash_bits != bits))
		return -EINVAL;
	s->hash_bits = (unsigned)bits;
	/* a store made before ordered buckets (format 1) keeps hashing names whole */
	if (format == STORE_FORMAT_ORDERED && bits != HASH_BITS_DEFAULT)
		return -EINVAL;
	s->name_order = format == STORE_FORMAT_ORDERED;
	if ((rc = meta_get(txn, s->db_meta, "hash_key", kb, sizeof(kb))))
		return rc;
	key_decode(kb, s->hash_key);
	if ((rc = meta_get(txn, s->db_meta, "obj_key", kb, sizeof(kb))))
		return rc;
	key_decode(kb, s->obj_key);
	s->boot++;
	return meta_put64(txn, s->db_meta, "boot_count", s->boot);
}

static int store_open_env(struct mds_store *s, const struct mds_store_opts *o)
{
	static const struct {
		const char *name;
		size_t off;
	} dbs[] = {
	    {"meta", offsetof(struct mds_store, db_meta)},
	    {"inodes", offsetof(struct mds_store, db_inodes)},
	    {"dirents", offsetof(struct mds_store, db_dirents)},
	    {"layouts", offsetof(struct mds_store, db_layouts)},
	    {"xattrs", offsetof(struct mds_store, db_xattrs)},
	    {"clients", offsetof(struct mds_store, db_clients)},
	    {"orphans", offsetof(struct mds_store, db_orphans)},
	    {"wlayouts", offsetof(struct mds_store, db_wlayouts)},
	    {"stale", offsetof(struct mds_store, db_stale)},
	    {"ecseal", offsetof(struct mds_store, db_ecseal)},
	};
	char lock[4096];
	MDB_txn *txn;
	int rc, dead;
	if (mkdir(o->path, 0700) && errno != EEXIST)
		return -errno;
	/* One process per store: the writer's state (next_ino) is in memory. */
	if (snprintf(lock, sizeof(lock), "%s/mds.lock", o->path) >= (int)sizeof(lock))
		return -ENAMETOOLONG;
	s->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (s->lock_fd < 0)
		return -errno;
	if (flock(s->lock_fd, LOCK_EX | LOCK_NB))
		return errno == EWOULDBLOCK ? -EBUSY : -errno;
	if ((rc = mdb_env_create(&s->env)))
		return mds_lmdb_err(rc);
	if ((rc = mdb_env_set_maxdbs(s->env, 12)) || (rc = mdb_env_set_maxreaders(s->env, 1024)) ||
	    (rc = mdb_env_set_mapsize(s->env, o->map_size ? o->map_size : MAP_FIRST)) ||
	    (rc = mdb_env_open(s->env, o->path, MDB_NOMETASYNC | MDB_NORDAHEAD, 0600)))
		return mds_lmdb_err(rc);
	/* LMDB maps at least the file: a store that grew opens at its size */
	MDB_envinfo ei;
	MDB_stat es;
	if ((rc = mdb_env_info(s->env, &ei)) || (rc = mdb_env_stat(s->env, &es)))
		return mds_lmdb_err(rc);
	s->page_size = es.ms_psize;
	s->map_max = o->map_max ? o->map_max : MAP_MAX;
	atomic_store_explicit(&s->st_map_size, ei.me_mapsize, memory_order_relaxed);
	/* Reader slots left by a killed process would pin old pages. */
	mdb_reader_check(s->env, &dead);
	if ((rc = mdb_txn_begin(s->env, NULL, 0, &txn)))
		return mds_lmdb_err(rc);
	for (size_t i = 0; i < sizeof(dbs) / sizeof(dbs[0]); i++) {
		MDB_dbi *dbi = (MDB_dbi *)((char *)s + dbs[i].off);
		if ((rc = mdb_dbi_open(txn, dbs[i].name, MDB_CREATE, dbi))) {
			mdb_txn_abort(txn);
			return mds_lmdb_err(rc);
		}
	}
	if ((rc = store_init_meta(s, txn, o->hash_bits))) {
		mdb_txn_abort(txn);
		return rc;
	}
	if ((rc = mdb_txn_commit(txn)))
		return mds_lmdb_err(rc);
	/* The commit left its meta page unsynced (MDB_NOMETASYNC). */
	return mds_lmdb_err(mdb_env_sync(s->env, 1));
}

static void *store_writer_main(void *arg);

int mds_store_open(const struct mds_store_opts *o, struct mds_store **out)
{
	if (!o->path || o->hash_bits > 16)
		return -EINVAL;
	struct mds_store *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->max_batch = o->max_batch ? o->max_batch : 4096;
	s->unacked_tail = &s->unacked;
	s->lock_fd = -1;
	pthread_rwlock_init(&s->map_lock, NULL);
	int rc = store_open_env(s, o);
	if (rc)
		goto fail;
	static const char tag[] = "braid readdir cookie verifier";
	put_le64(s->verf, mds_siphash24(s->hash_key, tag, sizeof(tag) - 1) | 1);
	pthread_mutex_init(&s->qlock, NULL);
	pthread_cond_init(&s->qcond, NULL);
	rc = pthread_create(&s->writer, NULL, store_writer_main, s);
	if (rc) {
		rc = -rc;
		pthread_cond_destroy(&s->qcond);
		pthread_mutex_destroy(&s->qlock);
		goto fail;
	}
	*out = s;
	return 0;
fail:
	if (s->env)
		mdb_env_close(s->env);
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	pthread_rwlock_destroy(&s->map_lock);
	free(s);
	return rc;
}

void mds_store_close(struct mds_store *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->qlock);
	s->stopping = true;
	pthread_cond_signal(&s->qcond);
	pthread_mutex_unlock(&s->qlock);
	pthread_join(s->writer, NULL);
	pthread_cond_destroy(&s->qcond);
	pthread_mutex_destroy(&s->qlock);
	pthread_rwlock_destroy(&s->map_lock);
	mdb_env_close(s->env);
	close(s->lock_fd);
	free(s);
}

uint64_t mds_store_root(const struct mds_store *s)
{
	return s->root;
}

uint64_t mds_store_boot_count(const struct mds_store *s)
{
	return s->boot;
}

void mds_store_stats(const struct mds_store *s, struct mds_store_stats *st)
{
	st->ops = atomic_load_explicit(&s->st_ops, memory_order_relaxed);
	st->batches = atomic_load_explicit(&s->st_batches, memory_order_relaxed);
	st->syncs = atomic_load_explicit(&s->st_syncs, memory_order_relaxed);
	st->fallbacks = atomic_load_explicit(&s->st_fallbacks, memory_order_relaxed);
	st->max_batch = atomic_load_explicit(&s->st_max_batch, memory_order_relaxed);
	st->map_size = atomic_load_explicit(&s->st_map_size, memory_order_relaxed);
	st->map_grows = atomic_load_explicit(&s->st_map_grows, memory_order_relaxed);
}

static void stat_add(_Atomic uint64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/*
 * The writer thread.
 */

/* Completes a list of ops (next is read before done(), which may reuse the op). */
static void writer_complete(struct mds_store *s, struct mds_op *list, int err)
{
	while (list) {
		struct mds_op *op = list;
		list = op->next;
		if (err && op->status == 0)
			op->status = err;
		stat_add(&s->st_ops, 1);
		op->done(op);
	}
}

/*
 * Grows the map, between transactions, once what LMDB has used of it
 * leaves less than a quarter free (full: a transaction ran out of map,
 * when at least half of it is used): doubled, up to map_max, with every
 * read transaction held off meanwhile.  0 when it grew; -ENOSPC at
 * map_max, or when there was no need.
 */
static int store_map_grow(struct mds_store *s, bool full)
{
	MDB_envinfo ei;
	if (mdb_env_info(s->env, &ei))
		return -ENOSPC;
	uint64_t map = ei.me_mapsize, used = ((uint64_t)ei.me_last_pgno + 1) * s->page_size;
	if (full ? used < map / 2 : used < map - map / 4)
		return -ENOSPC;
	if (map >= s->map_max)
		return -ENOSPC;
	uint64_t next = map > s->map_max / 2 ? s->map_max : map * 2;
	pthread_rwlock_wrlock(&s->map_lock);
	int rc = mdb_env_set_mapsize(s->env, next);
	pthread_rwlock_unlock(&s->map_lock);
	if (rc) {
		fprintf(stderr, "braid-mds: store: the map cannot grow from %llu to %llu MiB: %s\n",
			(unsigned long long)(map >> 20), (unsigned long long)(next >> 20),
			mdb_strerror(rc));
		return -ENOSPC;
	}
	atomic_store_explicit(&s->st_map_size, next, memory_order_relaxed);
	stat_add(&s->st_map_grows, 1);
	fprintf(stderr, "braid-mds: store: map grown from %llu to %llu MiB (%llu MiB used)\n",
		(unsigned long long)(map >> 20), (unsigned long long)(next >> 20),
		(unsigned long long)(used >> 20));
	return 0;
}

/* Persists next_ino with the transaction when ops allocated inodes. */
static int writer_commit(struct mds_store *s, MDB_txn *txn, uint64_t ino_at_begin)
{
	int rc = 0;
	if (s->next_ino != ino_at_begin)
		rc = meta_put64(txn, s->db_meta, "next_ino", s->next_ino);
	if (rc) {
		mdb_txn_abort(txn);
		return rc;
	}
	rc = mds_lmdb_err(mdb_txn_commit(txn));
	if (rc == -EIO)
		s->failed = -EIO; /* a write or its fdatasync failed */
	return rc;
}

static bool writer_apply_alone1(struct mds_store *s, struct mds_op *op);

/* Applies one op in a transaction of its own (the fallback path); true if
 * it committed.  One that ran out of map is tried again once it grew. */
static bool writer_apply_alone(struct mds_store *s, struct mds_op *op)
{
	if (writer_apply_alone1(s, op))
		return true;
	return op->status == -ENOSPC && !s->failed && store_map_grow(s, true) == 0 &&
	       writer_apply_alone1(s, op);
}

static bool writer_apply_alone1(struct mds_store *s, struct mds_op *op)
{
	uint64_t ino0 = s->next_ino;
	struct mds_wtx w = {.s = s};
	if (s->failed)
		return false;
	int rc = mdb_txn_begin(s->env, NULL, 0, &w.txn);
	if (rc) {
		op->status = mds_lmdb_err(rc);
		return false;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	w.now = (struct mds_time){ts.tv_sec, (uint32_t)ts.tv_nsec};
	op->status = mds_op_apply(&w, op);
	if (op->status || !w.wrote) {
		mdb_txn_abort(w.txn);
		s->next_ino = ino0;
		return false;
	}
	op->status = writer_commit(s, w.txn, ino0);
	if (op->status) {
		s->next_ino = ino0;
		return false;
	}
	return true;
}

/*
 * Applies a batch in one transaction.  Returns how many commits (each one
 * fdatasync) it made: 0 when nothing changed.
 */
static unsigned writer_apply(struct mds_store *s, struct mds_op *batch)
{
	uint64_t ino0 = s->next_ino;
	struct mds_wtx w = {.s = s};
	bool any = false;
	int rc = mdb_txn_begin(s->env, NULL, 0, &w.txn);
	if (rc) {
		for (struct mds_op *op = batch; op; op = op->next)
			op->status = mds_lmdb_err(rc);
		return 0;
	}
	for (struct mds_op *op = batch; op; op = op->next) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		w.now = (struct mds_time){ts.tv_sec, (uint32_t)ts.tv_nsec};
		w.wrote = false;
		op->status = mds_op_apply(&w, op);
		if (op->status && w.wrote)
			goto redo;
		any |= w.wrote;
	}
	if (!any) {
		mdb_txn_abort(w.txn);
		return 0;
	}
	if (writer_commit(s, w.txn, ino0) == 0)
		return 1;
	w.txn = NULL;
	if (s->failed) {
		s->next_ino = ino0;
		return 0;
	}
redo:
	if (w.txn)
		mdb_txn_abort(w.txn);
	s->next_ino = ino0;
	stat_add(&s->st_fallbacks, 1);
	unsigned commits = 0;
	for (struct mds_op *op = batch; op; op = op->next)
		commits += writer_apply_alone(s, op);
	return commits;
}

static void writer_batch(struct mds_store *s, struct mds_op *batch, unsigned n)
{
	if (s->failed) {
		for (struct mds_op *op = batch; op; op = op->next)
			op->status = s->failed;
		writer_complete(s, batch, 0);
		return;
	}
	uint64_t mx = atomic_load_explicit(&s->st_max_batch, memory_order_relaxed);
	if (n > mx)
		atomic_store_explicit(&s->st_max_batch, n, memory_order_relaxed);
	uint64_t t0 = BRAID_TRACE_ENABLED(store__commit) ? nfsd_now_ns() : 0;
	unsigned commits = writer_apply(s, batch);
	BRAID_TRACE(store__commit, n, commits, BRAID_TRACE_US(t0, nfsd_now_ns()), s->failed);
	if (s->failed) {
		struct mds_op *done = s->unacked;
		s->unacked = NULL;
		s->unacked_tail = &s->unacked;
		writer_complete(s, done, s->failed);
		writer_complete(s, batch, s->failed);
		return;
	}
	/* applied_only ops are done now: their transaction is committed */
	struct mds_op *applied = NULL, **ap = &applied, **pp = &batch, *tail = NULL;
	while (*pp) {
		struct mds_op *op = *pp;
		if (op->applied_only) {
			*pp = op->next;
			op->next = NULL;
			*ap = op;
			ap = &op->next;
		} else {
			tail = op;
			pp = &op->next;
		}
	}
	if (commits) {
		/* Its fdatasync made everything committed before it durable. */
		s->unsynced = true;
		stat_add(&s->st_batches, 1);
		stat_add(&s->st_syncs, commits);
		struct mds_op *done = s->unacked;
		if (batch) {
			s->unacked = batch;
			s->unacked_tail = &tail->next;
		} else {
			s->unacked = NULL;
			s->unacked_tail = &s->unacked;
		}
		writer_complete(s, done, 0);
	} else if (batch) {
		/* Nothing written: these depend only on what is already committed. */
		*s->unacked_tail = batch;
		s->unacked_tail = &tail->next;
	}
	writer_complete(s, applied, 0);
}

/* The queue is empty: make the last commit durable and complete its ops. */
static void writer_sync(struct mds_store *s)
{
	uint64_t t0 = BRAID_TRACE_ENABLED(store__sync) ? nfsd_now_ns() : 0;
	int rc = mdb_env_sync(s->env, 1);
	stat_add(&s->st_syncs, 1);
	s->unsynced = false;
	if (rc)
		s->failed = -EIO;
	unsigned n = 0;
	if (t0)
		for (const struct mds_op *op = s->unacked; op; op = op->next)
			n++;
	BRAID_TRACE(store__sync, n, BRAID_TRACE_US(t0, nfsd_now_ns()), s->failed);
	struct mds_op *done = s->unacked;
	s->unacked = NULL;
	s->unacked_tail = &s->unacked;
	writer_complete(s, done, rc ? -EIO : 0);
}

static void *store_writer_main(void *arg)
{
	struct mds_store *s = arg;
	nfsd_thread_block_signals();
	pthread_mutex_lock(&s->qlock);
	for (;;) {
		if (!s->qhead) {
			if (s->unacked || s->unsynced) {
				pthread_mutex_unlock(&s->qlock);
				writer_sync(s);
				pthread_mutex_lock(&s->qlock);
				continue;
			}
			if (s->stopping)
				break;
			pthread_cond_wait(&s->qcond, &s->qlock);
			continue;
		}
		struct mds_op *batch = s->qhead, *last = batch;
		unsigned n = 1;
		while (last->next && n < s->max_batch) {
			last = last->next;
			n++;
		}
		s->qhead = last->next;
		if (!s->qhead)
			s->qtail = NULL;
		last->next = NULL;
		pthread_mutex_unlock(&s->qlock);
		store_map_grow(s, false); /* before it fills */
		writer_batch(s, batch, n);
		pthread_mutex_lock(&s->qlock);
	}
	pthread_mutex_unlock(&s->qlock);
	return NULL;
}

void mds_store_submit(struct mds_store *s, struct mds_op *op)
{
	op->next = NULL;
	op->status = 0;
	pthread_mutex_lock(&s->qlock);
	bool wake = !s->qtail;
	if (s->qtail)
		s->qtail->next = op;
	else
		s->qhead = op;
	s->qtail = op;
	pthread_mutex_unlock(&s->qlock);
	/* after the unlock: signalled under it, the writer would wake only to
	 * block on qlock and be woken again (the writer looks at the queue
	 * under qlock before it waits, so nothing is missed) */
	if (wake)
		pthread_cond_signal(&s->qcond);
}

static void store_run_done(struct mds_op *op)
{
	sem_post(op->priv);
}

void mds_store_begin(struct mds_store *s, struct mds_op *op, sem_t *sem)
{
	sem_init(sem, 0, 0);
	op->done = store_run_done;
	op->priv = sem;
	mds_store_submit(s, op);
}

int mds_store_wait(struct mds_op *op)
{
	sem_t *sem = op->priv;
	while (sem_wait(sem) && errno == EINTR)
		;
	sem_destroy(sem);
	return op->status;
}

int mds_store_run(struct mds_store *s, struct mds_op *op)
{
	sem_t sem;
	mds_store_begin(s, op, &sem);
	return mds_store_wait(op);
}

/*
 * Synchronous forms.
 */
int mds_dir_create(struct mds_store *s, const struct mds_create_args *a, struct mds_create_res *res)
{
	struct mds_op op = {.type = MDS_OP_CREATE, .args.create = *a};
	int rc = mds_store_run(s, &op);
	if (res)
		*res = op.res.create;
	return rc;
}

int mds_dir_remove(struct mds_store *s, const struct mds_remove_args *a, struct mds_remove_res *res)
{
	struct mds_op op = {.type = MDS_OP_REMOVE, .args.remove = *a};
	int rc = mds_store_run(s, &op);
	if (res)
		*res = op.res.remove;
	return rc;
}

int mds_dir_rename(struct mds_store *s, const struct mds_rename_args *a, struct mds_rename_res *res)
{
	struct mds_op op = {.type = MDS_OP_RENAME, .args.rename = *a};
	int rc = mds_store_run(s, &op);
	if (res)
		*res = op.res.rename;
	return rc;
}

int mds_dir_link(struct mds_store *s, const struct mds_link_args *a, struct mds_link_res *res)
{
	struct mds_op op = {.type = MDS_OP_LINK, .args.link = *a};
	int rc = mds_store_run(s, &op);
	if (res)
		*res = op.res.link;
	return rc;
}

int mds_inode_setattr(struct mds_store *s, const struct mds_setattr_args *a,
		      struct mds_setattr_res *res)
{
	struct mds_op op = {.type = MDS_OP_SETATTR, .args.setattr = *a};
	int rc = mds_store_run(s, &op);
	if (res)
		*res = op.res.setattr;
	return rc;
}

int mds_inode_setattr_applied(struct mds_store *s, const struct mds_setattr_args *a,
			      struct mds_setattr_res *res)
{
	struct mds_op op = {.type = MDS_OP_SETATTR, .args.setattr = *a, .applied_only = true};
	int rc = mds_store_run(s, &op);
	if (res)
		*res = op.res.setattr;
	return rc;
}

int mds_inode_reap(struct mds_store *s, uint64_t ino)
{
	struct mds_op op = {.type = MDS_OP_REAP, .args.reap = ino};
	return mds_store_run(s, &op);
}

int mds_xattr_set(struct mds_store *s, const struct mds_xattr_args *a)
{
	struct mds_op op = {.type = MDS_OP_XATTR_SET, .args.xattr = *a};
	return mds_store_run(s, &op);
}

int mds_xattr_remove(struct mds_store *s, const struct mds_xattr_args *a)
{
	struct mds_op op = {.type = MDS_OP_XATTR_REMOVE, .args.xattr = *a};
	return mds_store_run(s, &op);
}

int mds_layout_set(struct mds_store *s, const struct mds_layout_args *a)
{
	struct mds_op op = {.type = MDS_OP_LAYOUT_SET, .args.layout = *a};
	return mds_store_run(s, &op);
}

int mds_layout_remove(struct mds_store *s, const struct mds_layout_args *a)
{
	struct mds_op op = {.type = MDS_OP_LAYOUT_REMOVE, .args.layout = *a};
	return mds_store_run(s, &op);
}

int mds_wlayout_mark(struct mds_store *s, uint64_t ino)
{
	struct mds_op op = {.type = MDS_OP_WLAYOUT_MARK, .args.ino = ino};
	return mds_store_run(s, &op);
}

int mds_wlayout_clear(struct mds_store *s, uint64_t ino)
{
	struct mds_op op = {.type = MDS_OP_WLAYOUT_CLEAR, .args.ino = ino};
	return mds_store_run(s, &op);
}

int mds_stale_mark(struct mds_store *s, uint64_t ino)
{
	struct mds_op op = {.type = MDS_OP_STALE_MARK, .args.ino = ino};
	return mds_store_run(s, &op);
}

int mds_stale_clear(struct mds_store *s, uint64_t ino)
{
	struct mds_op op = {.type = MDS_OP_STALE_CLEAR, .args.ino = ino};
	return mds_store_run(s, &op);
}

int mds_ecseal_mark(struct mds_store *s, uint64_t ino)
{
	struct mds_op op = {.type = MDS_OP_ECSEAL_MARK, .args.ino = ino};
	return mds_store_run(s, &op);
}

int mds_ecseal_clear(struct mds_store *s, uint64_t ino)
{
	struct mds_op op = {.type = MDS_OP_ECSEAL_CLEAR, .args.ino = ino};
	return mds_store_run(s, &op);
}

int mds_client_put(struct mds_store *s, const struct mds_client_args *a)
{
	struct mds_op op = {.type = MDS_OP_CLIENT_PUT, .args.client = *a};
	return mds_store_run(s, &op);
}

int mds_client_remove(struct mds_store *s, const struct mds_client_args *a)
{
	struct mds_op op = {.type = MDS_OP_CLIENT_REMOVE, .args.client = *a};
	return mds_store_run(s, &op);
}

/*
 * Reads.
 */
/* A read transaction holds the map (map_lock shared) until rtxn_end. */
static int rtxn_begin(struct mds_store *s, MDB_txn **txn)
{
	pthread_rwlock_rdlock(&s->map_lock);
	int rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, txn);
	if (rc)
		pthread_rwlock_unlock(&s->map_lock);
	return mds_lmdb_err(rc);
}

static void rtxn_end(struct mds_store *s, MDB_txn *txn)
{
	mdb_txn_abort(txn);
	pthread_rwlock_unlock(&s->map_lock);
}

/* -ESTALE, -ENOTDIR, or 0 with the directory's attributes. */
static int dir_check(struct mds_store *s, MDB_txn *txn, uint64_t dir, struct mds_attr *a)
{
	int rc = mds_inode_read(s, txn, dir, a);
	if (rc)
		return rc;
	return a->type == MDS_DIR ? 0 : -ENOTDIR;
}

int mds_inode_getattr(struct mds_store *s, uint64_t ino, struct mds_attr *attr)
{
	MDB_txn *txn;
	int rc = rtxn_begin(s, &txn);
	if (rc)
		return rc;
	rc = mds_inode_read(s, txn, ino, attr);
	rtxn_end(s, txn);
	return rc;
}

int mds_inode_readlink(struct mds_store *s, uint64_t ino, char *buf, size_t size, size_t *len)
{
	MDB_txn *txn;
	MDB_val v;
	int rc = rtxn_begin(s, &txn);
	if (rc)
		return rc;
	rc = inode_get_raw(s, txn, ino, &v);
	if (!rc && ((const uint8_t *)v.mv_data)[1] != MDS_LNK)
		rc = -EINVAL;
	if (!rc) {
		*len = v.mv_size - INODE_REC_LEN;
		memcpy(buf, (const uint8_t *)v.mv_data + INODE_REC_LEN, *len < size ? *len : size);
	}
	rtxn_end(s, txn);
	return rc;
}

int mds_dir_lookup(struct mds_store *s, uint64_t dir, const char *name, size_t len, uint64_t *ino,
		   struct mds_attr *attr)
{
	struct mds_dfind f;
	struct mds_attr da;
	MDB_txn *txn;
	int rc = mds_name_check(name, len);
	if (rc)
		return rc;
	if ((rc = rtxn_begin(s, &txn)))
		return rc;
	rc = mds_dirent_find(s, txn, dir, name, len, &f);
	/* An entry proves 'dir' is a directory; only a miss reads it. */
	if (!rc && !f.found && !(rc = dir_check(s, txn, dir, &da)))
		rc = -ENOENT;
	if (!rc) {
		*ino = f.ino;
		if (attr)
			rc = mds_inode_read(s, txn, f.ino, attr);
	}
	rtxn_end(s, txn);
	return rc;
}

void mds_store_cookieverf(const struct mds_store *s, uint8_t verf[8])
{
	memcpy(verf, s->verf, 8);
}

enum mds_cookie_check mds_dir_cookie_check(const struct mds_store *s, uint64_t cookie,
					   const uint8_t verf[8])
{
	if (cookie == 0)
		return MDS_COOKIE_OK;
	uint64_t bucket = cookie >> COOKIE_COLL_BITS;
	if (bucket == 0 || bucket >> s->hash_bits)
		return MDS_COOKIE_BAD;
	if (!verf || memcmp(verf, s->verf, 8))
		return MDS_COOKIE_NOT_SAME;
	return MDS_COOKIE_OK;
}

int mds_dir_readdir(struct mds_store *s, uint64_t dir, uint64_t cookie, unsigned flags,
		    mds_readdir_fn fn, void *arg, bool *eof)
{
	struct mds_attr da, ea;
	uint8_t kb[DIRENT_KEY_LEN];
	MDB_cursor *c;
	MDB_txn *txn;
	int rc, taken = 0;
	*eof = false;
	if (mds_dir_cookie_check(s, cookie, s->verf) != MDS_COOKIE_OK)
		return -EINVAL;
	if ((rc = rtxn_begin(s, &txn)))
		return rc;
	if ((rc = dir_check(s, txn, dir, &da)) ||
	    (rc = mds_lmdb_err(mdb_cursor_open(txn, s->db_dirents, &c)))) {
		rtxn_end(s, txn);
		return rc;
	}
	/* Strictly after 'cookie': the entry it named may be gone. */
	mds_dirent_key(kb, dir, cookie ? cookie + 1 : 0);
	MDB_val k = {sizeof(kb), kb}, v;
	for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		const uint8_t *kp = k.mv_data, *vp = v.mv_data;
		if (k.mv_size != DIRENT_KEY_LEN || get_be64(kp) != dir)
			break;
		if (v.mv_size < DIRENT_VAL_HDR || (size_t)DIRENT_VAL_HDR + get_le16(vp + 10) > v.mv_size) {
			rc = EIO;
			break;
		}
		struct mds_dirent e = {
		    .cookie = get_be64(kp + 8),
		    .ino = get_le64(vp),
		    .type = vp[8],
		    .name = (const char *)vp + DIRENT_VAL_HDR,
		    .name_len = get_le16(vp + 10),
		};
		if (flags & MDS_READDIR_ATTRS) {
			int r = mds_inode_read(s, txn, e.ino, &ea);
			if (r) {
				rc = -r;
				break;
			}
			e.attr = &ea;
		}
		int r = fn(arg, &e);
		if (r > 0) {
			rc = 0;
			goto out;
		}
		if (r < 0) {
			rc = -r;
			break;
		}
		taken++;
	}
	if (rc == 0 || rc == MDB_NOTFOUND) {
		*eof = true;
		rc = 0;
	}
out:
	mdb_cursor_close(c);
	rtxn_end(s, txn);
	if (rc)
		return rc > 0 ? -rc : mds_lmdb_err(rc);
	return taken;
}

int mds_xattr_get(struct mds_store *s, uint64_t ino, const char *name, size_t name_len, void *buf,
		  size_t size, size_t *len)
{
	struct mds_attr a;
	uint8_t kb[8 + MDS_XATTR_NAME_MAX];
	MDB_txn *txn;
	MDB_val v;
	if (name_len == 0 || name_len > MDS_XATTR_NAME_MAX)
		return -EINVAL;
	int rc = rtxn_begin(s, &txn);
	if (rc)
		return rc;
	if ((rc = mds_inode_read(s, txn, ino, &a)))
		goto out;
	put_be64(kb, ino);
	memcpy(kb + 8, name, name_len);
	MDB_val k = {8 + name_len, kb};
	rc = mdb_get(txn, s->db_xattrs, &k, &v);
	if (rc) {
		rc = rc == MDB_NOTFOUND ? -ENODATA : mds_lmdb_err(rc);
		goto out;
	}
	*len = v.mv_size;
	if (v.mv_size > size)
		rc = -ERANGE;
	else
		memcpy(buf, v.mv_data, v.mv_size);
out:
	rtxn_end(s, txn);
	return rc;
}

/* Walks the keys that start with 'ino' in db; fn returns nonzero to stop. */
static int prefix_walk(struct mds_store *s, MDB_dbi db, uint64_t ino,
		       int (*fn)(void *arg, const MDB_val *k, const MDB_val *v), void *arg)
{
	uint8_t kb[8];
	MDB_cursor *c;
	MDB_txn *txn;
	int rc = rtxn_begin(s, &txn);
	if (rc)
		return rc;
	if ((rc = mdb_cursor_open(txn, db, &c))) {
		rtxn_end(s, txn);
		return mds_lmdb_err(rc);
	}
	put_be64(kb, ino);
	MDB_val k = {sizeof(kb), kb}, v;
	int r = 0;
	for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		if (k.mv_size < 8 || get_be64(k.mv_data) != ino)
			break;
		if ((r = fn(arg, &k, &v)))
			break;
	}
	mdb_cursor_close(c);
	rtxn_end(s, txn);
	if (r)
		return r;
	return rc == MDB_NOTFOUND ? 0 : mds_lmdb_err(rc);
}

struct xattr_walk {
	int (*fn)(void *arg, const char *name, size_t len);
	void *arg;
};

static int xattr_walk_one(void *arg, const MDB_val *k, const MDB_val *v)
{
	struct xattr_walk *xw = arg;
	return xw->fn(xw->arg, (const char *)k->mv_data + 8, k->mv_size - 8);
}

int mds_xattr_list(struct mds_store *s, uint64_t ino,
		   int (*fn)(void *arg, const char *name, size_t len), void *arg)
{
	struct mds_attr a;
	int rc = mds_inode_getattr(s, ino, &a);
	if (rc)
		return rc;
	struct xattr_walk xw = {fn, arg};
	return prefix_walk(s, s->db_xattrs, ino, xattr_walk_one, &xw);
}

static int layout_decode(const MDB_val *v, struct mds_layout_seg *l)
{
	const uint8_t *p = v->mv_data;
	if (v->mv_size < LAYOUT_VAL_HDR)
		return -EIO;
	l->flags = get_le32(p);
	l->nds = get_le32(p + 4);
	if (l->nds == 0 || l->nds > MDS_LAYOUT_MAX_DS ||
	    v->mv_size != LAYOUT_VAL_HDR + 4 * (size_t)l->nds)
		return -EIO;
	for (uint32_t i = 0; i < l->nds; i++)
		l->ds[i] = get_le32(p + LAYOUT_VAL_HDR + 4 * i);
	return 0;
}

int mds_layout_get(struct mds_store *s, uint64_t ino, uint64_t seg, struct mds_layout_seg *out)
{
	uint8_t kb[16];
	MDB_txn *txn;
	MDB_val v;
	int rc = rtxn_begin(s, &txn);
	if (rc)
		return rc;
	put_be64(kb, ino);
	put_be64(kb + 8, seg);
	MDB_val k = {sizeof(kb), kb};
	rc = mds_lmdb_err(mdb_get(txn, s->db_layouts, &k, &v));
	if (!rc)
		rc = layout_decode(&v, out);
	rtxn_end(s, txn);
	return rc;
}

struct layout_walk {
	int (*fn)(void *arg, uint64_t seg, const struct mds_layout_seg *l);
	void *arg;
};

static int layout_walk_one(void *arg, const MDB_val *k, const MDB_val *v)
{
	struct layout_walk *lw = arg;
	struct mds_layout_seg l;
	if (k->mv_size != 16 || layout_decode(v, &l))
		return -EIO;
	return lw->fn(lw->arg, get_be64((const uint8_t *)k->mv_data + 8), &l);
}

int mds_layout_list(struct mds_store *s, uint64_t ino,
		    int (*fn)(void *arg, uint64_t seg, const struct mds_layout_seg *l), void *arg)
{
	struct layout_walk lw = {fn, arg};
	return prefix_walk(s, s->db_layouts, ino, layout_walk_one, &lw);
}

int mds_layout_scan(struct mds_store *s,
		    int (*fn)(void *arg, uint64_t ino, uint64_t seg,
			      const struct mds_layout_seg *l),
		    void *arg)
{
	struct mds_layout_seg l;
	MDB_cursor *c;
	MDB_txn *txn;
	MDB_val k, v;
	int rc, r = 0;
	if ((rc = rtxn_begin(s, &txn)))
		return rc;
	if ((rc = mdb_cursor_open(txn, s->db_layouts, &c))) {
		rtxn_end(s, txn);
		return mds_lmdb_err(rc);
	}
	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		if (k.mv_size != 16 || layout_decode(&v, &l)) {
			r = -EIO;
			break;
		}
		if ((r = fn(arg, get_be64(k.mv_data), get_be64((const uint8_t *)k.mv_data + 8),
			    &l)))
			break;
	}
	mdb_cursor_close(c);
	rtxn_end(s, txn);
	if (r)
		return r;
	return rc == MDB_NOTFOUND ? 0 : mds_lmdb_err(rc);
}

int mds_client_get(struct mds_store *s, const void *owner, size_t owner_len,
		   struct mds_client_rec *out)
{
	uint8_t kb[16];
	const uint8_t *o;
	size_t olen;
	MDB_txn *txn;
	MDB_val v;
	if (owner_len == 0 || owner_len > MDS_OWNER_MAX)
		return -EINVAL;
	int rc = rtxn_begin(s, &txn);
	if (rc)
		return rc;
	mds_client_key(s, owner, owner_len, kb);
	MDB_val k = {sizeof(kb), kb};
	rc = mds_lmdb_err(mdb_get(txn, s->db_clients, &k, &v));
	if (!rc)
		rc = mds_client_decode(&v, &o, &olen, out);
	if (!rc && (olen != owner_len || memcmp(o, owner, olen)))
		rc = -ENOENT;
	rtxn_end(s, txn);
	return rc;
}

int mds_client_list(struct mds_store *s,
		    int (*fn)(void *arg, const void *owner, size_t owner_len,
			      const struct mds_client_rec *rec),
		    void *arg)
{
	struct mds_client_rec *rec = malloc(sizeof(*rec));
	const uint8_t *o;
	size_t olen;
	MDB_cursor *c;
	MDB_txn *txn;
	MDB_val k, v;
	int rc, r = 0;
	if (!rec)
		return -ENOMEM;
	if ((rc = rtxn_begin(s, &txn))) {
		free(rec);
		return rc;
	}
	if ((rc = mdb_cursor_open(txn, s->db_clients, &c))) {
		rtxn_end(s, txn);
		free(rec);
		return mds_lmdb_err(rc);
	}
	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		if ((r = mds_client_decode(&v, &o, &olen, rec)) || (r = fn(arg, o, olen, rec)))
			break;
	}
	mdb_cursor_close(c);
	rtxn_end(s, txn);
	free(rec);
	if (r)
		return r;
	return rc == MDB_NOTFOUND ? 0 : mds_lmdb_err(rc);
}

/* Each inode number keyed in db (a set: 8-byte keys), in a read txn. */
static int ino_set_walk(struct mds_store *s, MDB_dbi db,
			int (*fn)(struct mds_store *s, MDB_txn *txn, uint64_t ino, void *arg),
			void *arg)
{
	MDB_cursor *c;
	MDB_txn *txn;
	MDB_val k, v;
	int rc, r = 0;
	if ((rc = rtxn_begin(s, &txn)))
		return rc;
	if ((rc = mdb_cursor_open(txn, db, &c))) {
		rtxn_end(s, txn);
		return mds_lmdb_err(rc);
	}
	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		if (k.mv_size != 8) {
			r = -EIO;
			break;
		}
		if ((r = fn(s, txn, get_be64(k.mv_data), arg)))
			break;
	}
	mdb_cursor_close(c);
	rtxn_end(s, txn);
	if (r)
		return r;
	return rc == MDB_NOTFOUND ? 0 : mds_lmdb_err(rc);
}

struct ino_cb {
	int (*ino)(void *arg, uint64_t ino);
	int (*attr)(void *arg, const struct mds_attr *attr);
	void *arg;
};

static int wlayout_one(struct mds_store *s, MDB_txn *txn, uint64_t ino, void *arg)
{
	(void)s, (void)txn;
	const struct ino_cb *cb = arg;
	return cb->ino(cb->arg, ino);
}

int mds_wlayout_list(struct mds_store *s, int (*fn)(void *arg, uint64_t ino), void *arg)
{
	struct ino_cb cb = {.ino = fn, .arg = arg};
	return ino_set_walk(s, s->db_wlayouts, wlayout_one, &cb);
}

int mds_stale_list(struct mds_store *s, int (*fn)(void *arg, uint64_t ino), void *arg)
{
	struct ino_cb cb = {.ino = fn, .arg = arg};
	return ino_set_walk(s, s->db_stale, wlayout_one, &cb);
}

int mds_ecseal_list(struct mds_store *s, int (*fn)(void *arg, uint64_t ino), void *arg)
{
	struct ino_cb cb = {.ino = fn, .arg = arg};
	return ino_set_walk(s, s->db_ecseal, wlayout_one, &cb);
}

static int orphan_one(struct mds_store *s, MDB_txn *txn, uint64_t ino, void *arg)
{
	const struct ino_cb *cb = arg;
	struct mds_attr a;
	int r = mds_inode_read(s, txn, ino, &a);
	return r ? r : cb->attr(cb->arg, &a);
}

int mds_orphan_list(struct mds_store *s, int (*fn)(void *arg, const struct mds_attr *attr),
		    void *arg)
{
	struct ino_cb cb = {.attr = fn, .arg = arg};
	return ino_set_walk(s, s->db_orphans, orphan_one, &cb);
}
