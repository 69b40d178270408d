/* SPDX-License-Identifier: MIT */
/*
 * Object metadata operations of the braid-ds object store: create,
 * remove, truncate, setfence and stat, each durable on return but create,
 * which is durable with the object's first write (obj_create_files; the
 * store's own store.meta is store.c's).
 */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dataserver/store_impl.h"

/* ------------------------------------------------- create, remove, ... */

static int obj_create_files(struct ds_store *st, struct ds_ring *r, struct ds_obj *o, uint64_t gen,
			    uint32_t uid, uint32_t gid, uint32_t mode)
{
	char mname[sizeof(o->name) + 5], tname[sizeof(o->name) + 9];
	int sub = sub_of(st, o), rc;
	snprintf(mname, sizeof(mname), "%s.meta", o->name);
	snprintf(tname, sizeof(tname), "%s.meta.tmp", o->name);

	o->resv_hi = 0;
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
	st_vbits_clear(o);
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
	o->name_owed = true;
	pthread_mutex_unlock(&o->mu);
	/*
	 * Not synced here: the object's names and header become durable with
	 * its first write (st_obj_sync with a stable one, which syncs the
	 * directory too; st_obj_names_sync before an UNSTABLE one) or metadata
	 * change.  Until then a crash may undo the create of an object that
	 * holds nothing (obj_load drops the empty .meta such a crash can
	 * leave).  A create costs no disk flush, and a file's first write
	 * pays one, as on a local filesystem.
	 */
	rc = st_obj_hdr_write(st, r, o);
	if (rc)
		goto fail;
	if (renameat(sub, tname, sub, mname)) {
		rc = -errno;
		goto fail;
	}
	/* the .meta is in place: an object, durable or not yet */
	__atomic_add_fetch(&st->nobjects, 1, __ATOMIC_RELAXED);
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
	struct ds_ring *r = st_ring_get(st);
	if (!r)
		return -ENOMEM;
	struct ds_obj *o = st_obj_get(st, id->key);
	int rc = o ? st_obj_lock(st, r, o, true) : -ENOMEM;
	if (rc)
		goto out;
	if (o->state == OBJ_PRESENT)
		rc = o->gen == id->gen ? 0 : -EEXIST;
	else
		rc = obj_create_files(st, r, o, id->gen, uid, gid, mode);
	pthread_rwlock_unlock(&o->lock);
out:
	if (o)
		st_obj_put(st, r, o);
	st_ring_put(st, r);
	if (rc == -ENOSPC || rc == -EDQUOT)
		st_note_nospc(st);
	return rc;
}

/* Unlink the object: .meta first (the commit point), made durable, then the data. */
static int obj_unlink(struct ds_store *st, struct ds_ring *r, struct ds_obj *o)
{
	char mname[sizeof(o->name) + 5], tname[sizeof(o->name) + 9];
	int sub = sub_of(st, o);
	snprintf(mname, sizeof(mname), "%s.meta", o->name);
	snprintf(tname, sizeof(tname), "%s.meta.tmp", o->name);
	if (unlinkat(sub, mname, 0)) {
		if (errno != ENOENT)
			return -errno;
	} else {
		__atomic_sub_fetch(&st->nobjects, 1, __ATOMIC_RELAXED);
	}
	int rc = st_io_fsync(st, r, sub, false);
	if (rc)
		return rc;
	if (unlinkat(sub, o->name, 0) && errno != ENOENT)
		st_log("object %s: unlink data: %s (left as an orphan)", o->name, strerror(errno));
	unlinkat(sub, tname, 0);
	st_obj_vmap_drop(o);
	st_vbits_clear(o);
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
	struct ds_ring *r = st_ring_get(st);
	if (!r)
		return -ENOMEM;
	struct ds_obj *o = st_obj_get(st, id->key);
	int rc = o ? st_obj_lock(st, r, o, true) : -ENOMEM;
	if (rc == -EIO) {
		/* a damaged header: the MDS still gets to remove the object */
		pthread_rwlock_wrlock(&o->lock);
		st_log("object %s: removing it despite its damaged header", o->name);
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
		st_obj_put(st, r, o);
	st_ring_put(st, r);
	if (!rc)
		st_note_freed(st);
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
		struct iovec v[2] = {{blk, st->bs}, {&e, sizeof(e)}};
		struct iop ops[2];
		st_iop_rw(&ops[0], IOP_READ, o->dfd, &v[0], 1, bi << st->bs_shift);
		ops[0].direct = st->direct;
		st_iop_rw(&ops[1], IOP_READ, o->mfd, &v[1], 1, OBJ_TABLE_OFF + bi * 8);
		rc = st_io_run(st, r, ops, 2);
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
				struct iovec one = {blk, st->bs};
				st_verify_blocks(st, o, &one, &e, bi, 1, true, NULL);
				rc = -EIO;
			} else if (match && !tail_zero) {
				e.crc = htole32(cut);
				rc = st_io_pwrite(st, r, o->mfd, &e, sizeof(e),
						  OBJ_TABLE_OFF + bi * 8);
				if (!rc)
					rc = st_io_fsync(st, r, o->mfd, true);
			}
		}
		free(blk);
		if (rc)
			return rc;
	}
	uint64_t nblocks = (at + st->bs - 1) >> st->bs_shift;
	pthread_mutex_lock(&o->mu);
	uint64_t keep = at >> st->bs_shift << st->bs_shift; /* the blocks wholly kept */
	if (o->resv_hi > keep)
		o->resv_hi = keep;
	pthread_mutex_unlock(&o->mu);
	if (ftruncate(o->dfd, (off_t)at) || ftruncate(o->mfd, (off_t)(OBJ_TABLE_OFF + nblocks * 8)))
		return -errno;
	return 0;
}

static int obj_truncate(struct ds_store *st, const struct ds_objid *id, uint64_t size, bool check,
			uint32_t uid, uint32_t gid)
{
	if (!id || size > DS_STORE_MAX_SIZE)
		return -EINVAL;
	struct ds_ring *r;
	struct ds_obj *o;
	int rc = st_obj_begin(st, id, true, &r, &o);
	if (rc)
		return rc;
	/* checked under the exclusive lock, so a fence change cannot pass it */
	if (check && (rc = st_obj_access(o, uid, gid, 2))) {
		st_obj_end(st, r, o);
		return rc;
	}
	/* lock is exclusive: no writer changes size now */
	uint64_t cur = o->size;
	if (size != cur) {
		st_vbits_clear(o);
		rc = obj_cut(st, r, o, size < cur ? size : cur);
		if (!rc) {
			pthread_mutex_lock(&o->mu);
			o->size = size;
			st_obj_touch_locked(o);
			pthread_mutex_unlock(&o->mu);
		}
	}
	if (!rc)
		rc = st_obj_sync(st, r, o, false);
	st_obj_end(st, r, o);
	if (!rc && size < cur)
		st_note_freed(st);
	return rc;
}

int ds_store_truncate(struct ds_store *st, const struct ds_objid *id, uint64_t size)
{
	return obj_truncate(st, id, size, false, 0, 0);
}

int ds_store_truncate_as(struct ds_store *st, const struct ds_objid *id, uint32_t uid, uint32_t gid,
			 uint64_t size)
{
	return obj_truncate(st, id, size, true, uid, gid);
}

/*
 * Punch [off, off + len), whole blocks, cut at the object's end: the data
 * file's blocks are freed (PUNCH_HOLE, the length kept) and their CRC
 * entries zeroed, so they read as never-written blocks.  The reservation
 * prefix (resv_hi) drops to off: those blocks are no longer allocated.
 */
static int obj_punch(struct ds_store *st, struct ds_ring *r, struct ds_obj *o, uint64_t off,
		     uint64_t end)
{
	uint64_t b0 = off >> st->bs_shift, nb = (end - off) >> st->bs_shift;
	st_vbits_forget(o, b0, nb);
	pthread_mutex_lock(&o->mu);
	if (o->resv_hi > off)
		o->resv_hi = off;
	pthread_mutex_unlock(&o->mu);
	if (fallocate(o->dfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off,
		      (off_t)(end - off)))
		return -errno;
	/* the table's entries: zeros, written (a table shorter than the range
	 * reads zeros past its end already) */
	struct stat ms;
	if (fstat(o->mfd, &ms))
		return -errno;
	uint64_t tend = (uint64_t)ms.st_size, t0 = OBJ_TABLE_OFF + b0 * 8;
	uint64_t t1 = t0 + nb * 8 < tend ? t0 + nb * 8 : tend;
	static const uint8_t zeros[4096];
	for (uint64_t t = t0; t < t1;) {
		size_t n = t1 - t < sizeof(zeros) ? (size_t)(t1 - t) : sizeof(zeros);
		int rc = st_io_pwrite(st, r, o->mfd, zeros, n, t);
		if (rc)
			return rc;
		t += n;
	}
	return 0;
}

int ds_store_deallocate(struct ds_store *st, const struct ds_objid *id, uint64_t off,
			uint64_t len)
{
	if (!id || !len || off > DS_STORE_MAX_SIZE || len > DS_STORE_MAX_SIZE - off)
		return -EINVAL;
	if ((off | len) & (st->bs - 1))
		return -EINVAL;
	struct ds_ring *r;
	struct ds_obj *o;
	int rc = st_obj_begin(st, id, true, &r, &o);
	if (rc)
		return rc;
	/* lock is exclusive: no READ or WRITE is in progress */
	uint64_t end = off + len, size = o->size;
	uint64_t cap = (size + st->bs - 1) >> st->bs_shift << st->bs_shift;
	end = end < cap ? end : cap;
	if (off < end) {
		rc = obj_punch(st, r, o, off, end);
		if (!rc) {
			pthread_mutex_lock(&o->mu);
			st_obj_touch_locked(o);
			pthread_mutex_unlock(&o->mu);
			rc = st_obj_sync(st, r, o, false);
		}
	}
	st_obj_end(st, r, o);
	if (!rc && off < end)
		st_note_freed(st);
	return rc;
}

int ds_store_setfence(struct ds_store *st, const struct ds_objid *id, uint32_t uid, uint32_t gid,
		      uint32_t mode)
{
	if (!id || (mode != DS_STORE_MODE_KEEP && (mode & ~0777u)))
		return -EINVAL;
	struct ds_ring *r;
	struct ds_obj *o;
	int rc = st_obj_begin(st, id, true, &r, &o);
	if (rc)
		return rc;
	/* lock is exclusive: no READ or WRITE is in progress */
	if (o->uid != uid || o->gid != gid ||
		 (mode != DS_STORE_MODE_KEEP && o->mode != mode)) {
		o->uid = uid;
		o->gid = gid;
		if (mode != DS_STORE_MODE_KEEP)
			o->mode = mode;
		pthread_mutex_lock(&o->mu);
		o->hdr_seq++;
		pthread_mutex_unlock(&o->mu);
	}
	pthread_mutex_lock(&o->mu);
	bool dirty = o->hdr_seq != o->hdr_written;
	pthread_mutex_unlock(&o->mu);
	if (dirty) {
		rc = st_obj_hdr_write(st, r, o);
		if (!rc)
			rc = st_io_fsync(st, r, o->mfd, true);
	}
	st_obj_end(st, r, o);
	return rc;
}

int ds_store_stat(struct ds_store *st, const struct ds_objid *id, struct ds_obj_stat *out)
{
	if (!id || !out)
		return -EINVAL;
	struct ds_ring *r;
	struct ds_obj *o;
	int rc = st_obj_begin(st, id, false, &r, &o);
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
	st_obj_end(st, r, o);
	return rc;
}
