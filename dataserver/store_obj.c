/* SPDX-License-Identifier: MIT */
/*
 * The object table of the braid-ds object store: handles by key in
 * shards, idle ones kept open on an LRU; object headers, loading, the
 * object lock and the permission check.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dataserver/store_impl.h"

static const char obj_magic[8] = "BRAIDOBJ";

static void key_hex(const uint8_t key[DS_KEY_SIZE], char out[2 * DS_KEY_SIZE + 1])
{
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < DS_KEY_SIZE; i++) {
		out[2 * i] = hex[key[i] >> 4];
		out[2 * i + 1] = hex[key[i] & 15];
	}
	out[2 * DS_KEY_SIZE] = 0;
}

/* ---------------------------------------------------------- object table */

static void obj_free(struct ds_obj *o)
{
	pthread_rwlock_destroy(&o->lock);
	pthread_mutex_destroy(&o->hdr_mu);
	pthread_mutex_destroy(&o->names_mu);
	pthread_mutex_destroy(&o->mu);
	free(o->vbits);
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
	pthread_mutex_init(&o->names_mu, NULL);
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
struct ds_obj *st_obj_get(struct ds_store *st, const uint8_t key[DS_KEY_SIZE])
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

/* Drop an unreferenced handle from memory: header written back, files closed. */
int st_obj_release(struct ds_store *st, struct ds_ring *r, struct ds_obj *o)
{
	int rc = 0;
	if (o->state == OBJ_PRESENT)
		rc = st_obj_hdr_write(st, r, o);
	if (rc)
		st_log("object %s: header write-back: %s", o->name, strerror(-rc));
	st_obj_vmap_drop(o);
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
void st_obj_put(struct ds_store *st, struct ds_ring *r, struct ds_obj *o)
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
		st_obj_release(st, r, v);
		ctr_add(&st->ctr.evictions, 1);
	}
	pthread_mutex_unlock(&sh->mu);
}

/* ------------------------------------------------------- object header */

void st_obj_touch_locked(struct ds_obj *o)
{
	clock_gettime(CLOCK_REALTIME, &o->mtime);
	o->change++;
	o->hdr_seq++;
	o->write_seq++;
}

/* Write the header if it changed since the last write.  Caller holds lock. */
int st_obj_hdr_write(struct ds_store *st, struct ds_ring *r, struct ds_obj *o)
{
	uint8_t b[OBJ_HDR_SIZE] = {0};
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
	put_le32(b + 96, o->name_owed ? OBJ_HDR_NAME_OWED : 0);
	pthread_mutex_unlock(&o->mu);
	put_le32(b + 124, crc32c(b, 124));
	int rc = st_io_pwrite(st, r, o->mfd, b, sizeof(b), 0);
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
int st_obj_sync(struct ds_store *st, struct ds_ring *r, struct ds_obj *o, bool datasync)
{
	pthread_mutex_lock(&o->mu);
	uint64_t ws = o->write_seq;
	bool owed = o->name_owed;
	bool clean = ws == o->synced_seq && o->hdr_seq == o->hdr_written && !owed;
	pthread_mutex_unlock(&o->mu);
	if (clean)
		return 0;
	int rc = st_obj_hdr_write(st, r, o);
	if (rc)
		return rc;
	/* a new object's names with its first sync: its directory, alongside */
	struct iop ops[3];
	st_iop_sync(&ops[0], datasync, o->dfd);
	st_iop_sync(&ops[1], datasync, o->mfd);
	if (owed)
		st_iop_sync(&ops[2], false, sub_of(st, o));
	rc = st_io_run(st, r, ops, owed ? 3 : 2);
	if (rc) {
		st_log("object %s: sync: %s", o->name, strerror(-rc));
		return rc;
	}
	pthread_mutex_lock(&o->mu);
	if (o->synced_seq < ws)
		o->synced_seq = ws;
	/* the header on disk says owed until it is next written for another
	 * reason: a load before that syncs the directory once more, harmless */
	if (owed)
		o->name_owed = false;
	pthread_mutex_unlock(&o->mu);
	return 0;
}
static bool names_owed(struct ds_obj *o)
{
	pthread_mutex_lock(&o->mu);
	bool owed = o->name_owed;
	pthread_mutex_unlock(&o->mu);
	return owed;
}

int st_obj_names_sync(struct ds_store *st, struct ds_ring *r, struct ds_obj *o)
{
	if (!names_owed(o))
		return 0; /* every write but an object's first */
	/*
	 * Looked at again under names_mu: writers hold lock shared, and a
	 * second first write that found the debt before this one paid it must
	 * not sync the .meta once this one has written CRCs there without
	 * their data.  Owed, nothing was written yet (a write, truncate or
	 * deallocate syncs it whole): the header is the create's.
	 */
	pthread_mutex_lock(&o->names_mu);
	int rc = 0;
	if (names_owed(o) && !(rc = st_obj_hdr_write(st, r, o))) {
		struct iop ops[2];
		st_iop_sync(&ops[0], false, o->mfd);
		st_iop_sync(&ops[1], false, sub_of(st, o));
		if ((rc = st_io_run(st, r, ops, 2))) {
			st_log("object %s: sync of its names: %s", o->name, strerror(-rc));
		} else {
			pthread_mutex_lock(&o->mu);
			o->name_owed = false;
			pthread_mutex_unlock(&o->mu);
		}
	}
	pthread_mutex_unlock(&o->names_mu);
	return rc;
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
	rc = st_io_pread(st, r, mfd, b, sizeof(b), 0, &got);
	if (rc) {
		close(mfd);
		return rc;
	}
	if (!got) {
		/*
		 * An empty .meta: a create whose names were never synced, cut
		 * short by a crash before its header reached the disk (a header
		 * once synced is never cut: obj_cut keeps the table's offset).
		 * Nothing of it was ever acknowledged durable: no object.
		 */
		st_log("object %s: created but never synced before a crash: removed", o->name);
		close(mfd);
		unlinkat(sub, mname, 0);
		unlinkat(sub, o->name, 0);
		o->state = OBJ_ABSENT;
		return 0;
	}
	if (got != sizeof(b) || memcmp(b, obj_magic, 8) || get_le32(b + 8) != STORE_VERSION ||
	    get_le32(b + 124) != crc32c(b, 124) || memcmp(b + 16, o->key, DS_KEY_SIZE) ||
	    get_le32(b + 12) != st->bs) {
		st_log("object %s: header unreadable or damaged", o->name);
		close(mfd);
		return -EIO;
	}
	int flags = O_RDWR | O_CLOEXEC | (st->direct ? O_DIRECT : 0);
	int dfd = openat(sub, o->name, flags);
	if (dfd < 0 && errno == ENOENT) {
		st_log("object %s: data file missing; recreated empty (its blocks will fail "
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
	o->name_owed = get_le32(b + 96) & OBJ_HDR_NAME_OWED;
	o->hdr_seq = o->hdr_written = 0;
	if (get_le64(b + 88) <= st->last_unclean) {
		/* the header may lag data written before the crash */
		uint64_t fresh = st->boot << 32;
		o->change = o->change + 1 > fresh ? o->change + 1 : fresh;
		o->hdr_seq = 1;
	}
	o->write_seq = 1; /* unknown: the first COMMIT syncs */
	o->synced_seq = 0;
	o->resv_hi = 0;
	o->dfd = dfd;
	o->mfd = mfd;
	o->state = OBJ_PRESENT;
	ctr_add(&st->ctr.loads, 1);
	return 0;
}

/* Take o->lock (loading the object if needed). */
int st_obj_lock(struct ds_store *st, struct ds_ring *r, struct ds_obj *o, bool excl)
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
	st_obj_put(st, r, o);
}

/* Get and lock the object named by id; -ENOENT, -ESTALE as braid_ctl.x. */
static int obj_open(struct ds_store *st, struct ds_ring *r, const struct ds_objid *id, bool excl,
		    struct ds_obj **out)
{
	struct ds_obj *o = st_obj_get(st, id->key);
	if (!o)
		return -ENOMEM;
	int rc = st_obj_lock(st, r, o, excl);
	if (rc) {
		st_obj_put(st, r, o);
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
int st_obj_access(const struct ds_obj *o, uint32_t uid, uint32_t gid, unsigned want)
{
	unsigned bits = uid == o->uid ? o->mode >> 6 : gid == o->gid ? o->mode >> 3 : o->mode;
	return (bits & want) == want ? 0 : -EACCES;
}

int ds_store_access(struct ds_store *st, const struct ds_objid *id, uint32_t uid, uint32_t gid,
		    unsigned want)
{
	struct ds_ring *r;
	struct ds_obj *o;
	int rc = st_obj_begin(st, id, false, &r, &o);
	if (rc)
		return rc;
	rc = st_obj_access(o, uid, gid, want);
	st_obj_end(st, r, o);
	return rc;
}

/* Borrow a ring and open the object (exclusively for size and fence
 * changes); on failure nothing is held. */
int st_obj_begin(struct ds_store *st, const struct ds_objid *id, bool excl, struct ds_ring **rp,
		 struct ds_obj **op)
{
	struct ds_ring *r = st_ring_get(st);
	if (!r)
		return -ENOMEM;
	int rc = obj_open(st, r, id, excl, op);
	if (rc) {
		st_ring_put(st, r);
		return rc;
	}
	*rp = r;
	return 0;
}

void st_obj_end(struct ds_store *st, struct ds_ring *r, struct ds_obj *o)
{
	obj_close(st, r, o);
	st_ring_put(st, r);
}
