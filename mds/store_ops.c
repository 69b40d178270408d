/* SPDX-License-Identifier: MIT */
/*
 * The store's changes, applied by its writer thread inside the batch's
 * write transaction (see store.c).
 *
 * Rule for every op here: check everything, then write.  An op that
 * returns an error must not have called wtx_put()/wtx_del() unless LMDB
 * itself failed; the writer then redoes the batch one op per transaction.
 * Records read from LMDB are copied (struct mds_irec) before any write,
 * because a write may move the pages they point into.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "mds/store_impl.h"

static int wtx_put(struct mds_wtx *w, MDB_dbi db, const void *k, size_t klen, const void *v,
		   size_t vlen)
{
	MDB_val key = {klen, (void *)k}, val = {vlen, (void *)v};
	w->wrote = true;
	return mds_lmdb_err(mdb_put(w->txn, db, &key, &val, 0));
}

/* -ENOENT when absent (nothing written). */
static int wtx_del(struct mds_wtx *w, MDB_dbi db, const void *k, size_t klen)
{
	MDB_val key = {klen, (void *)k}, val;
	int rc = mdb_get(w->txn, db, &key, &val);
	if (rc)
		return mds_lmdb_err(rc);
	w->wrote = true;
	return mds_lmdb_err(mdb_del(w->txn, db, &key, NULL));
}

static int inode_store(struct mds_wtx *w, const struct mds_irec *r)
{
	uint8_t kb[8], vb[INODE_REC_LEN + MDS_SYMLINK_MAX];
	put_be64(kb, r->a.ino);
	return wtx_put(w, w->s->db_inodes, kb, sizeof(kb), vb, mds_inode_encode(r, vb));
}

static int dirent_put(struct mds_wtx *w, uint64_t dir, uint64_t cookie, uint64_t ino, uint8_t type,
		      const char *name, size_t len)
{
	uint8_t kb[DIRENT_KEY_LEN], vb[DIRENT_VAL_HDR + MDS_NAME_MAX];
	mds_dirent_key(kb, dir, cookie);
	put_le64(vb, ino);
	vb[8] = type;
	vb[9] = 0;
	put_le16(vb + 10, (uint16_t)len);
	memcpy(vb + DIRENT_VAL_HDR, name, len);
	return wtx_put(w, w->s->db_dirents, kb, sizeof(kb), vb, DIRENT_VAL_HDR + len);
}

static int dirent_del(struct mds_wtx *w, uint64_t dir, uint64_t cookie)
{
	uint8_t kb[DIRENT_KEY_LEN];
	mds_dirent_key(kb, dir, cookie);
	return wtx_del(w, w->s->db_dirents, kb, sizeof(kb));
}

/* Deletes every key of db that starts with ino. */
static int range_del(struct mds_wtx *w, MDB_dbi db, uint64_t ino)
{
	uint8_t kb[8];
	MDB_cursor *c;
	int rc = mdb_cursor_open(w->txn, db, &c);
	if (rc)
		return mds_lmdb_err(rc);
	put_be64(kb, ino);
	for (;;) {
		MDB_val k = {sizeof(kb), kb}, v;
		rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
		if (rc || k.mv_size < 8 || get_be64(k.mv_data) != ino)
			break;
		w->wrote = true;
		if ((rc = mdb_cursor_del(c, 0)))
			break;
	}
	mdb_cursor_close(c);
	return rc == MDB_NOTFOUND ? 0 : mds_lmdb_err(rc);
}

/* Deletes an inode and everything keyed by it. */
static int inode_purge(struct mds_wtx *w, uint64_t ino)
{
	struct mds_store *s = w->s;
	uint8_t kb[8];
	int rc;
	put_be64(kb, ino);
	if ((rc = wtx_del(w, s->db_inodes, kb, sizeof(kb))) ||
	    (rc = range_del(w, s->db_xattrs, ino)) || (rc = range_del(w, s->db_layouts, ino)))
		return rc;
	rc = wtx_del(w, s->db_orphans, kb, sizeof(kb));
	if (rc && rc != -ENOENT)
		return rc;
	rc = wtx_del(w, s->db_wlayouts, kb, sizeof(kb));
	if (rc && rc != -ENOENT)
		return rc;
	rc = wtx_del(w, s->db_stale, kb, sizeof(kb));
	if (rc && rc != -ENOENT)
		return rc;
	rc = wtx_del(w, s->db_ecseal, kb, sizeof(kb));
	return rc == -ENOENT ? 0 : rc;
}

static void dir_touch(struct mds_irec *d, struct mds_time now)
{
	d->a.mtime = d->a.ctime = now;
	d->a.change++;
}

/* -ESTALE, -ENOTDIR, or 0. */
static int dir_load(struct mds_wtx *w, uint64_t ino, struct mds_irec *d)
{
	int rc = mds_inode_load(w->s, w->txn, ino, d);
	if (rc)
		return rc;
	return d->a.type == MDS_DIR ? 0 : -ENOTDIR;
}

/* An entry's inode: its absence means the store is inconsistent. */
static int child_load(struct mds_wtx *w, uint64_t ino, struct mds_irec *r)
{
	int rc = mds_inode_load(w->s, w->txn, ino, r);
	return rc == -ESTALE ? -EIO : rc;
}

static void objkey_make(const struct mds_store *s, uint64_t ino, uint64_t gen, uint8_t out[16])
{
	uint8_t b[17];
	put_le64(b, ino);
	put_le64(b + 8, gen);
	b[16] = 0;
	put_le64(out, mds_siphash24(s->obj_key, b, sizeof(b)));
	b[16] = 1;
	put_le64(out + 8, mds_siphash24(s->obj_key, b, sizeof(b)));
}

/*
 * Drops one link to 'v', whose entry in 'd' the caller has removed.  A
 * directory (necessarily empty) goes at once and takes d's link from its
 * "..".  A regular file's last link makes it an orphan.
 */
static int inode_unlink(struct mds_wtx *w, struct mds_irec *v, struct mds_irec *d,
			struct mds_unlinked *out)
{
	uint8_t kb[8];
	int rc;
	out->ino = v->a.ino;
	out->type = v->a.type;
	memcpy(out->objkey, v->a.objkey, 16);
	if (v->a.type == MDS_DIR) {
		d->a.nlink--;
		out->nlink = 0;
		return inode_purge(w, v->a.ino);
	}
	v->a.nlink--;
	v->a.ctime = w->now;
	v->a.change++;
	out->nlink = v->a.nlink;
	if (v->a.nlink)
		return inode_store(w, v);
	if (v->a.type != MDS_REG)
		return inode_purge(w, v->a.ino);
	out->orphaned = true;
	put_be64(kb, v->a.ino);
	if ((rc = inode_store(w, v)))
		return rc;
	return wtx_put(w, w->s->db_orphans, kb, sizeof(kb), "", 0);
}

/* UNCHECKED4 / EXCLUSIVE4_1 retries find the file they made (RFC 8881 §18.16.3). */
static int create_existing(struct mds_wtx *w, const struct mds_create_args *a,
			   struct mds_create_res *res, const struct mds_irec *d,
			   const struct mds_dfind *f)
{
	if (a->how == MDS_CREATE_GUARDED || a->type != MDS_REG || f->type != MDS_REG)
		return -EEXIST;
	int rc = mds_inode_read(w->s, w->txn, f->ino, &res->attr);
	if (rc)
		return rc == -ESTALE ? -EIO : rc;
	if (a->how == MDS_CREATE_EXCLUSIVE && memcmp(res->attr.verf, a->verf, 8))
		return -EEXIST;
	res->existed = true;
	res->cinfo.before = res->cinfo.after = d->a.change;
	return 0;
}

static bool layout_valid(uint64_t seg, const struct mds_layout_seg *l)
{
	return l->nds && l->nds <= MDS_LAYOUT_MAX_DS && seg != MDS_LAYOUT_ALL;
}

/* Segment seg of ino's layout map is l (checked by layout_valid). */
static int layout_put(struct mds_wtx *w, uint64_t ino, uint64_t seg,
		      const struct mds_layout_seg *l)
{
	uint8_t kb[16], vb[LAYOUT_VAL_HDR + 4 * MDS_LAYOUT_MAX_DS];
	put_be64(kb, ino);
	put_be64(kb + 8, seg);
	put_le32(vb, l->flags);
	put_le32(vb + 4, l->nds);
	for (uint32_t i = 0; i < l->nds; i++)
		put_le32(vb + LAYOUT_VAL_HDR + 4 * i, l->ds[i]);
	return wtx_put(w, w->s->db_layouts, kb, sizeof(kb), vb, LAYOUT_VAL_HDR + 4 * l->nds);
}

static int op_create(struct mds_wtx *w, struct mds_op *op)
{
	struct mds_store *s = w->s;
	const struct mds_create_args *a = &op->args.create;
	struct mds_create_res *res = &op->res.create;
	struct mds_irec d, n;
	struct mds_dfind f;
	int rc;
	memset(res, 0, sizeof(*res));
	if ((rc = mds_name_check(a->name, a->name_len)))
		return rc;
	if (a->type < MDS_REG || a->type > MDS_FIFO || a->how > MDS_CREATE_EXCLUSIVE)
		return -EINVAL;
	if (a->type == MDS_LNK && (a->symlink_len == 0 || a->symlink_len > MDS_SYMLINK_MAX))
		return a->symlink_len ? -ENAMETOOLONG : -EINVAL;
	if (a->layout && !layout_valid(a->layout_seg, a->layout))
		return -EINVAL;
	if ((rc = dir_load(w, a->dir, &d)) ||
	    (rc = mds_dirent_find(s, w->txn, a->dir, a->name, a->name_len, &f)))
		return rc;
	if (f.found)
		return create_existing(w, a, res, &d, &f);
	if (!f.cookie)
		return -ENOSPC; /* 1024 names in one bucket: only with a tiny test hash */
	if (a->type == MDS_DIR && d.a.nlink == UINT32_MAX)
		return -EMLINK;

	n.a = (struct mds_attr){
	    .ino = s->next_ino++,
	    .type = a->type,
	    .mode = a->mode & 07777,
	    .nlink = a->type == MDS_DIR ? 2 : 1,
	    .uid = a->uid,
	    .gid = a->gid,
	    .atime = w->now,
	    .mtime = w->now,
	    .ctime = w->now,
	    .btime = w->now,
	    .change = 1,
	    .generation = s->boot,
	    .parent = a->type == MDS_DIR ? a->dir : 0,
	};
	n.link_len = 0;
	if (a->type == MDS_BLK || a->type == MDS_CHR) {
		n.a.rdev_major = a->rdev_major;
		n.a.rdev_minor = a->rdev_minor;
	} else if (a->type == MDS_LNK) {
		memcpy(n.link, a->symlink, a->symlink_len);
		n.link_len = a->symlink_len;
		n.a.size = n.a.space_used = a->symlink_len;
	}
	if (a->how == MDS_CREATE_EXCLUSIVE)
		memcpy(n.a.verf, a->verf, 8);
	objkey_make(s, n.a.ino, n.a.generation, n.a.objkey);

	res->cinfo.before = d.a.change;
	d.a.size++;
	if (a->type == MDS_DIR)
		d.a.nlink++;
	dir_touch(&d, w->now);
	if ((rc = inode_store(w, &n)) ||
	    (rc = dirent_put(w, a->dir, f.cookie, n.a.ino, n.a.type, a->name, a->name_len)) ||
	    (rc = inode_store(w, &d)) ||
	    (a->layout && (rc = layout_put(w, n.a.ino, a->layout_seg, a->layout))))
		return rc;
	res->cinfo.after = d.a.change;
	res->attr = n.a;
	return 0;
}

static int op_remove(struct mds_wtx *w, struct mds_op *op)
{
	const struct mds_remove_args *a = &op->args.remove;
	struct mds_remove_res *res = &op->res.remove;
	struct mds_irec d, v;
	struct mds_dfind f;
	int rc;
	memset(res, 0, sizeof(*res));
	if ((rc = mds_name_check(a->name, a->name_len)) || (rc = dir_load(w, a->dir, &d)) ||
	    (rc = mds_dirent_find(w->s, w->txn, a->dir, a->name, a->name_len, &f)))
		return rc;
	if (!f.found)
		return -ENOENT;
	if ((rc = child_load(w, f.ino, &v)))
		return rc;
	if (v.a.type == MDS_DIR) {
		if (a->flags & MDS_REMOVE_NONDIR)
			return -EISDIR;
		if (v.a.size)
			return -ENOTEMPTY;
	} else if (a->flags & MDS_REMOVE_DIR) {
		return -ENOTDIR;
	}

	res->cinfo.before = d.a.change;
	d.a.size--;
	dir_touch(&d, w->now);
	if ((rc = dirent_del(w, a->dir, f.cookie)) ||
	    (rc = inode_unlink(w, &v, &d, &res->victim)) || (rc = inode_store(w, &d)))
		return rc;
	res->cinfo.after = d.a.change;
	return 0;
}

/* -EINVAL if 'dir' is 'ino' or below it (rename of a directory into itself). */
static int subtree_check(struct mds_wtx *w, uint64_t ino, uint64_t dir)
{
	struct mds_attr a;
	for (unsigned depth = 0; depth < (1u << 20); depth++) {
		if (dir == ino)
			return -EINVAL;
		if (dir == w->s->root)
			return 0;
		int rc = mds_inode_read(w->s, w->txn, dir, &a);
		if (rc)
			return rc == -ESTALE ? -EIO : rc;
		if (a.parent == dir)
			return 0;
		dir = a.parent;
	}
	return -ELOOP;
}

/*
 * Both directories are modified in one place: when src_dir == dst_dir,
 * dd points at sd.  Neither the moved inode nor a replaced target can be
 * one of the directories (the checks exclude it before any write).
 */
static int op_rename(struct mds_wtx *w, struct mds_op *op)
{
	struct mds_store *s = w->s;
	const struct mds_rename_args *a = &op->args.rename;
	struct mds_rename_res *res = &op->res.rename;
	struct mds_irec sdir, ddir, si, ti;
	struct mds_irec *sd = &sdir, *dd = &ddir;
	struct mds_dfind sf, df;
	int rc;
	memset(res, 0, sizeof(*res));
	if ((rc = mds_name_check(a->src_name, a->src_len)) ||
	    (rc = mds_name_check(a->dst_name, a->dst_len)) || (rc = dir_load(w, a->src_dir, sd)))
		return rc;
	if (a->dst_dir == a->src_dir)
		dd = sd;
	else if ((rc = dir_load(w, a->dst_dir, dd)))
		return rc;
	if ((rc = mds_dirent_find(s, w->txn, a->src_dir, a->src_name, a->src_len, &sf)) ||
	    (rc = mds_dirent_find(s, w->txn, a->dst_dir, a->dst_name, a->dst_len, &df)))
		return rc;
	if (!sf.found)
		return -ENOENT;
	res->ino = sf.ino;
	if (df.found && df.ino == sf.ino) {
		/* The same file: no action (RFC 8881 §18.26.3, POSIX rename()). */
		res->noop = true;
		res->src_cinfo.before = res->src_cinfo.after = sd->a.change;
		res->dst_cinfo.before = res->dst_cinfo.after = dd->a.change;
		return 0;
	}
	if ((rc = child_load(w, sf.ino, &si)))
		return rc;
	if (si.a.type == MDS_DIR && sd != dd && (rc = subtree_check(w, si.a.ino, dd->a.ino)))
		return rc;
	if (df.found) {
		if ((rc = child_load(w, df.ino, &ti)))
			return rc;
		if (si.a.type == MDS_DIR && ti.a.type != MDS_DIR)
			return -ENOTDIR;
		if (si.a.type != MDS_DIR && ti.a.type == MDS_DIR)
			return -EISDIR;
		if (ti.a.type == MDS_DIR && ti.a.size)
			return -ENOTEMPTY;
	} else {
		if (!df.cookie)
			return -ENOSPC;
		if (si.a.type == MDS_DIR && sd != dd && dd->a.nlink == UINT32_MAX)
			return -EMLINK;
	}

	res->src_cinfo.before = sd->a.change;
	res->dst_cinfo.before = dd->a.change;
	sd->a.size--;
	if (df.found) {
		res->replaced = true;
		if ((rc = inode_unlink(w, &ti, dd, &res->victim)))
			return rc;
	} else {
		dd->a.size++;
	}
	if (si.a.type == MDS_DIR && sd != dd) {
		sd->a.nlink--;
		dd->a.nlink++;
		si.a.parent = dd->a.ino;
	}
	si.a.ctime = w->now;
	si.a.change++;
	dir_touch(sd, w->now);
	if (dd != sd)
		dir_touch(dd, w->now);
	if ((rc = dirent_del(w, a->src_dir, sf.cookie)) ||
	    (rc = dirent_put(w, a->dst_dir, df.cookie, si.a.ino, si.a.type, a->dst_name,
			     a->dst_len)) ||
	    (rc = inode_store(w, &si)) || (rc = inode_store(w, sd)) ||
	    (dd != sd && (rc = inode_store(w, dd))))
		return rc;
	res->src_cinfo.after = sd->a.change;
	res->dst_cinfo.after = dd->a.change;
	return 0;
}

static int op_link(struct mds_wtx *w, struct mds_op *op)
{
	const struct mds_link_args *a = &op->args.link;
	struct mds_link_res *res = &op->res.link;
	struct mds_irec d, i;
	struct mds_dfind f;
	int rc;
	memset(res, 0, sizeof(*res));
	if ((rc = mds_name_check(a->name, a->name_len)) ||
	    (rc = mds_inode_load(w->s, w->txn, a->ino, &i)))
		return rc;
	if (i.a.type == MDS_DIR)
		return -EISDIR;
	if (i.a.nlink == 0)
		return -ENOENT;
	if (i.a.nlink == UINT32_MAX)
		return -EMLINK;
	if ((rc = dir_load(w, a->dir, &d)) ||
	    (rc = mds_dirent_find(w->s, w->txn, a->dir, a->name, a->name_len, &f)))
		return rc;
	if (f.found)
		return -EEXIST;
	if (!f.cookie)
		return -ENOSPC;

	res->cinfo.before = d.a.change;
	i.a.nlink++;
	i.a.ctime = w->now;
	i.a.change++;
	d.a.size++;
	dir_touch(&d, w->now);
	if ((rc = dirent_put(w, a->dir, f.cookie, i.a.ino, i.a.type, a->name, a->name_len)) ||
	    (rc = inode_store(w, &i)) || (rc = inode_store(w, &d)))
		return rc;
	res->cinfo.after = d.a.change;
	res->attr = i.a;
	return 0;
}

static int op_setattr(struct mds_wtx *w, struct mds_op *op)
{
	const struct mds_setattr_args *a = &op->args.setattr;
	struct mds_setattr_res *res = &op->res.setattr;
	struct mds_irec i;
	bool resized = false;
	int rc;
	memset(res, 0, sizeof(*res));
	if (((a->mask & MDS_SET_ATIME) && a->atime.nsec >= 1000000000u) ||
	    ((a->mask & MDS_SET_MTIME) && a->mtime.nsec >= 1000000000u))
		return -EINVAL;
	if ((rc = mds_inode_load(w->s, w->txn, a->ino, &i)))
		return rc;
	if ((a->mask & MDS_SET_CHANGE_GUARD) && i.a.change != a->guard)
		return -EAGAIN;
	if (a->mask & (MDS_SET_SIZE | MDS_SET_SIZE_MAX)) {
		if (i.a.type == MDS_DIR)
			return -EISDIR;
		if (i.a.type != MDS_REG)
			return -EINVAL;
	}

	res->old_size = i.a.size;
	if (a->mask & MDS_SET_MODE)
		i.a.mode = a->mode & 07777;
	if (a->mask & MDS_SET_UID)
		i.a.uid = a->uid;
	if (a->mask & MDS_SET_GID)
		i.a.gid = a->gid;
	if ((a->mask & MDS_SET_SIZE) && i.a.size != a->size) {
		i.a.size = a->size;
		resized = true;
	}
	if ((a->mask & MDS_SET_SIZE_MAX) && a->size > i.a.size) {
		i.a.size = a->size;
		resized = true;
	}
	if (a->mask & MDS_SET_SPACE_USED)
		i.a.space_used = a->space_used;
	if (a->mask & MDS_SET_ATIME)
		i.a.atime = a->atime;
	else if (a->mask & MDS_SET_ATIME_NOW)
		i.a.atime = w->now;
	if (a->mask & MDS_SET_MTIME)
		i.a.mtime = a->mtime;
	else if ((a->mask & MDS_SET_MTIME_NOW) || resized)
		i.a.mtime = w->now;
	/* space_used alone is bookkeeping of what the data servers hold (the
	 * write that moved it moved change already): a client seeing change
	 * move would drop its cached data for nothing */
	if (a->mask != MDS_SET_SPACE_USED) {
		i.a.ctime = w->now;
		i.a.change++;
	}
	if ((rc = inode_store(w, &i)))
		return rc;
	res->attr = i.a;
	return 0;
}

static int op_reap(struct mds_wtx *w, struct mds_op *op)
{
	struct mds_attr a;
	int rc = mds_inode_read(w->s, w->txn, op->args.reap, &a);
	if (rc)
		return rc;
	if (a.nlink)
		return -EBUSY;
	return inode_purge(w, a.ino);
}

static int xattr_key(const struct mds_xattr_args *a, uint8_t *kb)
{
	if (a->name_len == 0)
		return -EINVAL;
	if (a->name_len > MDS_XATTR_NAME_MAX)
		return -ENAMETOOLONG;
	put_be64(kb, a->ino);
	memcpy(kb + 8, a->name, a->name_len);
	return 0;
}

/* RFC 8276 §8.4.2 (SETXATTR) and §8.4.4 (REMOVEXATTR): both move change. */
static int op_xattr(struct mds_wtx *w, struct mds_op *op)
{
	const struct mds_xattr_args *a = &op->args.xattr;
	uint8_t kb[8 + MDS_XATTR_NAME_MAX];
	struct mds_irec i;
	MDB_val v;
	int rc;
	if ((rc = xattr_key(a, kb)))
		return rc;
	MDB_val k = {8 + a->name_len, kb};
	if (op->type == MDS_OP_XATTR_SET && (a->value_len > MDS_XATTR_VALUE_MAX ||
					     (a->flags & (MDS_XATTR_CREATE | MDS_XATTR_REPLACE)) ==
						 (MDS_XATTR_CREATE | MDS_XATTR_REPLACE)))
		return a->value_len > MDS_XATTR_VALUE_MAX ? -E2BIG : -EINVAL;
	if ((rc = mds_inode_load(w->s, w->txn, a->ino, &i)))
		return rc;
	rc = mdb_get(w->txn, w->s->db_xattrs, &k, &v);
	if (rc && rc != MDB_NOTFOUND)
		return mds_lmdb_err(rc);
	bool exists = rc == 0;
	if (op->type == MDS_OP_XATTR_SET) {
		if (exists && (a->flags & MDS_XATTR_CREATE))
			return -EEXIST;
		if (!exists && (a->flags & MDS_XATTR_REPLACE))
			return -ENODATA;
		rc = wtx_put(w, w->s->db_xattrs, kb, k.mv_size, a->value, a->value_len);
	} else {
		if (!exists)
			return -ENODATA;
		rc = wtx_del(w, w->s->db_xattrs, kb, k.mv_size);
	}
	if (rc)
		return rc;
	i.a.ctime = w->now;
	i.a.change++;
	return inode_store(w, &i);
}

static int op_layout(struct mds_wtx *w, struct mds_op *op)
{
	const struct mds_layout_args *a = &op->args.layout;
	struct mds_attr attr;
	int rc;
	if (op->type == MDS_OP_LAYOUT_REMOVE) {
		uint8_t kb[16];
		if (a->seg == MDS_LAYOUT_ALL)
			return range_del(w, w->s->db_layouts, a->ino);
		put_be64(kb, a->ino);
		put_be64(kb + 8, a->seg);
		return wtx_del(w, w->s->db_layouts, kb, sizeof(kb));
	}
	if (!layout_valid(a->seg, &a->l))
		return -EINVAL;
	if ((rc = mds_inode_read(w->s, w->txn, a->ino, &attr)))
		return rc;
	return layout_put(w, a->ino, a->seg, &a->l);
}

static int op_client(struct mds_wtx *w, struct mds_op *op)
{
	const struct mds_client_args *a = &op->args.client;
	uint8_t kb[16], vb[CLIENT_VAL_HDR + MDS_OWNER_MAX + MDS_CLIENT_DATA_MAX];
	const uint8_t *o;
	size_t olen;
	MDB_val v;
	if (a->owner_len == 0 || a->owner_len > MDS_OWNER_MAX)
		return -EINVAL;
	mds_client_key(w->s, a->owner, a->owner_len, kb);
	MDB_val k = {sizeof(kb), kb};
	int rc = mdb_get(w->txn, w->s->db_clients, &k, &v);
	if (rc && rc != MDB_NOTFOUND)
		return mds_lmdb_err(rc);
	bool exists = rc == 0;
	if (exists) {
		if ((rc = mds_client_decode(&v, &o, &olen, NULL)))
			return rc;
		/* Another owner under the same 128-bit keyed hash: never in practice. */
		if (olen != a->owner_len || memcmp(o, a->owner, olen))
			return op->type == MDS_OP_CLIENT_PUT ? -EEXIST : -ENOENT;
	}
	if (op->type == MDS_OP_CLIENT_REMOVE) {
		if (!exists)
			return -ENOENT;
		return wtx_del(w, w->s->db_clients, kb, sizeof(kb));
	}
	const struct mds_client_rec *r = a->rec;
	if (!r || r->data_len > MDS_CLIENT_DATA_MAX)
		return -EINVAL;
	put_le64(vb, r->clientid);
	put_le32(vb + 8, r->flags);
	put_le32(vb + 12, (uint32_t)a->owner_len);
	put_le32(vb + 16, r->data_len);
	memcpy(vb + CLIENT_VAL_HDR, a->owner, a->owner_len);
	memcpy(vb + CLIENT_VAL_HDR + a->owner_len, r->data, r->data_len);
	return wtx_put(w, w->s->db_clients, kb, sizeof(kb), vb,
		       CLIENT_VAL_HDR + a->owner_len + r->data_len);
}

/* The inode sets: wlayouts, stale and ecseal. */
static int op_ino_set(struct mds_wtx *w, struct mds_op *op)
{
	uint8_t kb[8];
	put_be64(kb, op->args.ino);
	bool stale = op->type == MDS_OP_STALE_MARK || op->type == MDS_OP_STALE_CLEAR;
	bool ec = op->type == MDS_OP_ECSEAL_MARK || op->type == MDS_OP_ECSEAL_CLEAR;
	MDB_dbi db = ec ? w->s->db_ecseal : stale ? w->s->db_stale : w->s->db_wlayouts;
	if (op->type == MDS_OP_WLAYOUT_CLEAR || op->type == MDS_OP_STALE_CLEAR ||
	    op->type == MDS_OP_ECSEAL_CLEAR) {
		int rc = wtx_del(w, db, kb, sizeof(kb));
		return rc == -ENOENT ? 0 : rc;
	}
	struct mds_attr a;
	int rc = mds_inode_read(w->s, w->txn, op->args.ino, &a);
	if (rc)
		return rc;
	return wtx_put(w, db, kb, sizeof(kb), "", 0);
}

int mds_op_apply(struct mds_wtx *w, struct mds_op *op)
{
	switch (op->type) {
	case MDS_OP_CREATE:
		return op_create(w, op);
	case MDS_OP_REMOVE:
		return op_remove(w, op);
	case MDS_OP_RENAME:
		return op_rename(w, op);
	case MDS_OP_LINK:
		return op_link(w, op);
	case MDS_OP_SETATTR:
		return op_setattr(w, op);
	case MDS_OP_REAP:
		return op_reap(w, op);
	case MDS_OP_XATTR_SET:
	case MDS_OP_XATTR_REMOVE:
		return op_xattr(w, op);
	case MDS_OP_LAYOUT_SET:
	case MDS_OP_LAYOUT_REMOVE:
		return op_layout(w, op);
	case MDS_OP_CLIENT_PUT:
	case MDS_OP_CLIENT_REMOVE:
		return op_client(w, op);
	case MDS_OP_WLAYOUT_MARK:
	case MDS_OP_WLAYOUT_CLEAR:
	case MDS_OP_STALE_MARK:
	case MDS_OP_STALE_CLEAR:
	case MDS_OP_ECSEAL_MARK:
	case MDS_OP_ECSEAL_CLEAR:
		return op_ino_set(w, op);
	}
	return -EINVAL;
}
