/* SPDX-License-Identifier: MIT */
/*
 * READ, WRITE and COMMIT in the braid-ds object store: whole blocks,
 * every one verified against its CRC on the way in and out.
 */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dataserver/store_impl.h"

/* ------------------------------------------------------------- iovecs */

/* Append to dst[*dcnt..] the segments of src covering bytes [skip, skip + len). */
static void iov_slice(const struct iovec *src, int cnt, size_t skip, size_t len, struct iovec *dst,
		      int *dcnt)
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

/* -------------------------------------------------------- verification */

/*
 * Check blocks b0 .. b0 + nb - 1, whose data is iov (nb * bs bytes) and
 * whose entries are ents.  Logs each bad block; returns how many.
 */
uint64_t st_verify_blocks(struct ds_store *st, const struct ds_obj *o, const struct iovec *iov,
			  const struct crc_ent *ents, uint64_t b0, uint64_t nb, bool stop_first,
			  uint64_t *first_bad)
{
	struct cur c = {.iov = iov};
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
			st_log("object %s gen %llu block %llu (offset %llu): CRC mismatch "
			       "(stored %08x, data %08x)",
			       o->name, (unsigned long long)o->gen, (unsigned long long)(b0 + i),
			       (unsigned long long)((b0 + i) << st->bs_shift), want, ~crc);
		else
			st_log("object %s gen %llu block %llu (offset %llu): %s", o->name,
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
 * Allocate blocks [b0, b0 + nb) of data and their CRC entries before any
 * byte of them is touched, so that a full filesystem refuses the write
 * here (-ENOSPC, -EDQUOT) and leaves the old bytes and CRCs as they were.
 * FALLOC_FL_KEEP_SIZE: the files' lengths stay what writes make them (I1,
 * I2).  [0, o->resv_hi) is known allocated (a prefix only grows by
 * reservations that touch it, and cuts lower it), so a sequential writer
 * or an overwrite pays no system call.  A filesystem without fallocate
 * keeps the old risk: a write that fails midway may leave blocks whose CRC
 * no longer matches.  Caller holds the range lock exclusive.
 */
static int obj_reserve(struct ds_store *st, struct ds_obj *o, uint64_t b0, uint64_t nb)
{
	uint64_t a = b0 << st->bs_shift, z = (b0 + nb) << st->bs_shift;
	pthread_mutex_lock(&o->mu);
	uint64_t hi = o->resv_hi;
	pthread_mutex_unlock(&o->mu);
	if (z <= hi)
		return 0;
	if (fallocate(o->dfd, FALLOC_FL_KEEP_SIZE, (off_t)a, (off_t)(z - a)) ||
	    fallocate(o->mfd, FALLOC_FL_KEEP_SIZE, (off_t)(OBJ_TABLE_OFF + b0 * 8),
		      (off_t)(nb * 8))) {
		int e = errno;
		if (e == EOPNOTSUPP || e == ENOSYS)
			return 0;
		return -e;
	}
	pthread_mutex_lock(&o->mu);
	if (a <= o->resv_hi && z > o->resv_hi)
		o->resv_hi = z;
	pthread_mutex_unlock(&o->mu);
	return 0;
}

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

	/* the blocks are known good again once written (store_mapped.c);
	 * the disk-read count as of before any of it is read */
	uint64_t mark = st->direct ? DREADS_NONE : st_disk_reads(st);
	st_rl_lock(st, o, a, z, true, &held);
	st_vbits_forget(o, b0, nb);
	if ((rc = obj_reserve(st, o, b0, nb)))
		goto unlock;
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
		rv[nops] = (struct iovec){head, bs};
		st_iop_rw(&ops[nops], IOP_READ, o->dfd, &rv[nops], 1, a);
		ops[nops++].direct = st->direct;
	}
	if (rd_tail) {
		rv[nops] = (struct iovec){tail, bs};
		st_iop_rw(&ops[nops], IOP_READ, o->dfd, &rv[nops], 1, z - bs);
		ops[nops++].direct = st->direct;
	}
	if (nops) {
		rv[nops] = (struct iovec){ents, nb * sizeof(*ents)};
		st_iop_rw(&ops[nops], IOP_READ, o->mfd, &rv[nops], 1, OBJ_TABLE_OFF + b0 * 8);
		nops++;
		rc = st_io_run(st, r, ops, nops);
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
		struct iovec one = {head, bs};
		if (rd_head && st_verify_blocks(st, o, &one, &ents[0], b0, 1, true, NULL))
			rc = -EIO;
		one.iov_base = tail;
		if (rd_tail && st_verify_blocks(st, o, &one, &ents[nb - 1], b1, 1, true, NULL))
			rc = -EIO;
		if (rc)
			goto unlock;
		ctr_add(&st->ctr.rmw_blocks, rd_head + rd_tail);
	}

	/* merge the caller's bytes and lay out the whole-block write */
	if (bounce) {
		iov_gather(iov, iovcnt, 0, big + (off - a), len);
		wiov[0] = (struct iovec){big, nb * bs};
		wcnt = 1;
	} else {
		if (head_part) {
			uint64_t hend = end < a + bs ? end : a + bs;
			iov_gather(iov, iovcnt, 0, head + (off - a), hend - off);
			wiov[0] = (struct iovec){head, bs};
			wcnt = 1;
		}
		if (wcnt == 0)
			memmove(wiov, wiov + 1, (size_t)mcnt * sizeof(*wiov));
		wcnt += mcnt;
		if (tail_part) {
			iov_gather(iov, iovcnt, z - bs - off, tail, end - (z - bs));
			wiov[wcnt++] = (struct iovec){tail, bs};
		}
	}
	struct cur c = {.iov = wiov};
	for (uint64_t i = 0; i < nb; i++) {
		uint32_t crc = ~0u;
		cur_take(&c, bs, &crc);
		ents[i].crc = htole32(~crc);
		ents[i].tag = htole32(CRC_VALID);
	}

	struct iovec ev = {ents, nb * sizeof(*ents)};
	st_iop_rw(&ops[0], IOP_WRITE, o->dfd, wiov, wcnt, a);
	ops[0].direct = st->direct;
	st_iop_rw(&ops[1], IOP_WRITE, o->mfd, &ev, 1, OBJ_TABLE_OFF + b0 * 8);
	rc = st_io_run(st, r, ops, 2);
	if (rc) {
		st_log("object %s: write at %llu: %s (blocks %llu..%llu may now fail their "
		       "CRCs)",
		       o->name, (unsigned long long)off, strerror(-rc), (unsigned long long)b0,
		       (unsigned long long)b1);
		goto unlock;
	}
	pthread_mutex_lock(&o->mu);
	if (end > o->size)
		o->size = end;
	st_obj_touch_locked(o);
	pthread_mutex_unlock(&o->mu);
	st_vbits_set(o, b0, nb, mark);
unlock:
	st_rl_unlock(st, &held);
out:
	free(big ? NULL : head);
	free(big ? NULL : tail);
	free(big);
	free(ents);
	free(wiov);
	return rc;
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
	int rc = st_obj_begin(st, id, false, &r, &o);
	if (rc)
		return rc;
	rc = st_obj_access(o, uid, gid, 2);
	/* a new object's first UNSTABLE write: its names first, so a crash
	 * after it leaves the object the client resends to (a stable write
	 * syncs them with its data, below) */
	if (!rc && len && how == DS_UNSTABLE)
		rc = st_obj_names_sync(st, r, o);
	if (!rc && len)
		rc = obj_write(st, r, o, off, iov, iovcnt, len);
	if (!rc && how != DS_UNSTABLE)
		rc = st_obj_sync(st, r, o, how == DS_DATA_SYNC);
	st_obj_end(st, r, o);
	if (!rc) {
		ctr_add(&st->ctr.writes, 1);
		ctr_add(&st->ctr.bytes_written, len);
	} else if (rc == -ENOSPC || rc == -EDQUOT) {
		st_note_nospc(st);
	}
	return rc ? rc : (ssize_t)len;
}

int ds_store_commit(struct ds_store *st, const struct ds_objid *id, uint64_t off, uint64_t len)
{
	if (!id)
		return -EINVAL;
	struct ds_ring *r;
	struct ds_obj *o;
	int rc = st_obj_begin(st, id, false, &r, &o);
	if (rc)
		return rc;
	/* the whole object, a superset of [off, off + len) (RFC 1813 §3.3.21) */
	rc = st_obj_sync(st, r, o, false);
	st_obj_end(st, r, o);
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

	bool bounce =
	    st->direct && mid_hi > mid_lo && (uintptr_t)(buf + (mid_lo - off)) % DS_STORE_ALIGN;
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
		riov[rcnt++] = (struct iovec){big, nb * bs};
	} else {
		if (head_part)
			riov[rcnt++] = (struct iovec){head, bs};
		if (mid_hi > mid_lo)
			riov[rcnt++] = (struct iovec){buf + (mid_lo - off), mid_hi - mid_lo};
		if (tail_part)
			riov[rcnt++] = (struct iovec){tail, bs};
	}
	struct iovec v[3], ev = {ents, nb * sizeof(*ents)};
	memcpy(v, riov, sizeof(v));
	struct iop ops[2];
	st_iop_rw(&ops[0], IOP_READ, o->dfd, v, rcnt, a);
	ops[0].direct = st->direct;
	st_iop_rw(&ops[1], IOP_READ, o->mfd, &ev, 1, OBJ_TABLE_OFF + b0 * 8);

	st_rl_lock(st, o, a, z, false, &held);
	rc = st_io_run(st, r, ops, 2);
	if (!rc) {
		/* past the end of either file: zeros, and holes in the table */
		iov_zero_from(riov, rcnt, ops[0].done);
		memset((uint8_t *)ents + ops[1].done, 0, nb * sizeof(*ents) - ops[1].done);
		if (st_verify_blocks(st, o, riov, ents, b0, nb, true, NULL))
			rc = -EIO;
	}
	st_rl_unlock(st, &held);
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
 * What ds_store_read and ds_store_read_mapped share: the object, the
 * permission, the bytes below size, eof and the counters; the blocks are
 * read into buf, or mapped into m when m is given.
 */
ssize_t st_read(struct ds_store *st, const struct ds_objid *id, uint32_t uid, uint32_t gid,
		uint64_t off, size_t len, void *buf, struct ds_store_map *m, const void **data,
		bool *eof)
{
	struct ds_ring *r;
	struct ds_obj *o;
	size_t n = 0;
	int rc = st_obj_begin(st, id, false, &r, &o);
	if (rc)
		return rc;
	rc = st_obj_access(o, uid, gid, 4);
	pthread_mutex_lock(&o->mu);
	uint64_t size = o->size;
	pthread_mutex_unlock(&o->mu);
	if (!rc && off < size) {
		n = size - off < len ? (size_t)(size - off) : len;
		if (n)
			rc = m ? st_obj_map(st, r, o, off, n, m, data)
			       : obj_read(st, r, o, off, n, buf);
	}
	if (!rc && eof)
		*eof = off + n >= size;
	st_obj_end(st, r, o);
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
	return st_read(st, id, uid, gid, off, len, buf, NULL, NULL, eof);
}
