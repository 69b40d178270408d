/* SPDX-License-Identifier: MIT */
/*
 * ffclient: opens and the calls on them (OPEN, pread and pwrite through the
 * I/O engine, fsync, CLOSE with the last open's LAYOUTRETURN), and the
 * calls by name (mkdir, remove).  Locks: ffclient_impl.h.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "client/ffclient_impl.h"

static const stateid4 current_stateid = {.seqid = 1}; /* RFC 8881 §16.2.3.1.2 */

/* createattrs: size (when want_size) and mode, in bitmap order. */
static fattr4 attrs_create(uint32_t w[3], uint8_t vals[12], bool want_size, uint64_t size,
			   bool want_mode, uint32_t mode)
{
	unsigned list[2], n = 0;
	uint32_t len = 0;
	if (want_size) {
		list[n++] = FATTR4_SIZE;
		xdr_put32(vals, (uint32_t)(size >> 32));
		xdr_put32(vals + 4, (uint32_t)size);
		len = 8;
	}
	if (want_mode) {
		list[n++] = FATTR4_MODE;
		xdr_put32(vals + len, mode & 07777);
		len += 4;
	}
	return (fattr4){.attrmask = ffc_bm_of(w, list, n), .attr_vals = xdr_opaque_of(vals, len)};
}

/* ------------------------------------------------------------- paths */

struct walk {
	nfs_argop4 ops[FFC_PATH_DEPTH_MAX + 8];
	unsigned n;
	const char *last;
	uint32_t lastlen;
};

/* PUTROOTFH and a LOOKUP per directory of path; the last component is left
 * in w->last.  -EINVAL for an empty path, -ENAMETOOLONG, -ELOOP (depth). */
static int walk_build(struct walk *w, const char *path)
{
	w->n = 0;
	w->ops[w->n++] = (nfs_argop4){.argop = OP_PUTROOTFH};
	w->last = NULL;
	const char *p = path;
	for (;;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		const char *q = strchr(p, '/');
		size_t len = q ? (size_t)(q - p) : strlen(p);
		if (len > 255)
			return -ENAMETOOLONG;
		if (w->last) {
			if (w->n >= FFC_PATH_DEPTH_MAX)
				return -ELOOP;
			nfs_argop4 *o = &w->ops[w->n++];
			*o = (nfs_argop4){.argop = OP_LOOKUP};
			o->u.oplookup.objname = xdr_opaque_of(w->last, w->lastlen);
		}
		w->last = p;
		w->lastlen = (uint32_t)len;
		p += len;
	}
	return w->last ? 0 : -EINVAL;
}

/* ------------------------------------------------------------ file calls */

/* The inode of fh, with one more open counted; a new one when none is. */
static struct ffc_inode *ino_open(struct ffc *c, const nfs_fh4 *fh)
{
	pthread_mutex_lock(&c->mu);
	struct ffc_inode *f;
	for (f = c->inodes; f; f = f->next)
		if (f->fhlen == fh->len && !memcmp(f->fh, fh->val, fh->len))
			break;
	if (f) {
		f->opens++;
		ffc_ino_get(f);
		pthread_mutex_unlock(&c->mu);
		return f;
	}
	f = calloc(1, sizeof(*f));
	if (f) {
		f->c = c;
		atomic_init(&f->ref, 1);
		pthread_mutex_init(&f->mu, NULL);
		memcpy(f->fh, fh->val, fh->len);
		f->fhlen = fh->len;
		f->opens = 1;
		f->next = c->inodes;
		if (c->inodes)
			c->inodes->prev = f;
		c->inodes = f;
	}
	pthread_mutex_unlock(&c->mu);
	return f;
}

/* One open fewer; true when it was the last (f is then off the list, and
 * its layouts are to be returned). */
static bool ino_close(struct ffc_inode *f)
{
	struct ffc *c = f->c;
	pthread_mutex_lock(&c->mu);
	bool last = --f->opens == 0;
	if (last) {
		if (f->prev)
			f->prev->next = f->next;
		else if (c->inodes == f)
			c->inodes = f->next;
		if (f->next)
			f->next->prev = f->prev;
		f->next = f->prev = NULL;
	}
	pthread_mutex_unlock(&c->mu);
	return last;
}

static void file_free(struct ffc_file *f)
{
	pthread_mutex_destroy(&f->mu);
	free(f);
}

/* CLOSE (RFC 8881 §18.2) of an open. */
static int close_open(struct ffc *c, const uint8_t *fh, uint32_t fhlen, const stateid4 *sid,
		      struct xdr_arena *ar)
{
	nfs_argop4 ops[2] = {{.argop = OP_PUTFH}, {.argop = OP_CLOSE}};
	ops[0].u.opputfh.object = xdr_opaque_of(fh, fhlen);
	ops[1].u.opclose = (CLOSE4args){.seqid = 0, .open_stateid = *sid};
	COMPOUND4res res;
	int rc = ffc_mds_call(c, ops, 2, &res, ar);
	return rc ? rc : ffc_nfs4_errno(ffc_opstatus(&res, 1, OP_CLOSE));
}

struct ffc_file *ffc_open(struct ffc *c, const char *path, int flags, uint32_t mode, int *err)
{
	int acc = flags & FFC_ACCMODE;
	if (acc == FFC_ACCMODE || (flags & FFC_EXCL && !(flags & FFC_CREAT))) {
		*err = -EINVAL;
		return NULL;
	}
	struct walk w;
	int rc = walk_build(&w, path);
	if (rc) {
		*err = rc;
		return NULL;
	}
	struct ffc_file *f = calloc(1, sizeof(*f));
	if (!f) {
		*err = -ENOMEM;
		return NULL;
	}
	f->c = c;
	f->acc = acc;
	pthread_mutex_init(&f->mu, NULL);
	pthread_mutex_lock(&c->mu);
	snprintf(f->owner, sizeof(f->owner), "ffc-open-%u", ++c->nopen_seq);
	pthread_mutex_unlock(&c->mu);

	struct xdr_arena ar;
	ffc_arena_new(&ar);
	unsigned iopen = w.n;
	nfs_argop4 *o = &w.ops[w.n++];
	*o = (nfs_argop4){.argop = OP_OPEN};
	OPEN4args *oa = &o->u.opopen;
	oa->seqid = 0;
	oa->share_access = acc == FFC_RDONLY   ? OPEN4_SHARE_ACCESS_READ
			   : acc == FFC_WRONLY ? OPEN4_SHARE_ACCESS_WRITE
					       : OPEN4_SHARE_ACCESS_BOTH;
	/* this client neither keeps nor returns delegations: it asks for
	 * none (RFC 8881 §18.16.3), so no recall of ours waits on it */
	oa->share_access |= OPEN4_SHARE_ACCESS_WANT_NO_DELEG;
	oa->share_deny = OPEN4_SHARE_DENY_NONE;
	oa->owner.clientid = c->info.clientid;
	oa->owner.owner = xdr_opaque_of(f->owner, strlen(f->owner));
	uint32_t cw[3];
	uint8_t cv[12];
	if (flags & FFC_CREAT) {
		oa->openhow.opentype = OPEN4_CREATE;
		createhow4 *h = &oa->openhow.u.how;
		if (flags & FFC_EXCL) {
			/* RFC 8881 §18.16.3: EXCLUSIVE4_1, verifier and attributes */
			h->mode = EXCLUSIVE4_1;
			if (getrandom(h->u.ch_createboth.cva_verf, 8, 0) != 8) {
				uint64_t t = ffc_now_ms() ^ (uint64_t)getpid() << 32;
				memcpy(h->u.ch_createboth.cva_verf, &t, 8);
			}
			h->u.ch_createboth.cva_attrs = attrs_create(cw, cv, false, 0, true, mode);
		} else {
			/* UNCHECKED4; size 0 truncates an existing file */
			h->mode = UNCHECKED4;
			h->u.createattrs = attrs_create(cw, cv, flags & FFC_TRUNC, 0, true, mode);
		}
	} else {
		oa->openhow.opentype = OPEN4_NOCREATE;
	}
	oa->claim.claim = CLAIM_NULL;
	oa->claim.u.file = xdr_opaque_of(w.last, w.lastlen);
	unsigned igetfh = w.n;
	w.ops[w.n++] = (nfs_argop4){.argop = OP_GETFH};
	uint32_t tw[3], gw[3];
	uint8_t tv[12];
	int isetattr = -1;
	if ((flags & FFC_TRUNC) && !(flags & FFC_CREAT)) {
		isetattr = (int)w.n;
		nfs_argop4 *s = &w.ops[w.n++];
		*s = (nfs_argop4){.argop = OP_SETATTR};
		s->u.opsetattr.stateid = current_stateid;
		s->u.opsetattr.obj_attributes = attrs_create(tw, tv, true, 0, false, 0);
	}
	unsigned igetattr = w.n;
	unsigned want[] = {FATTR4_TYPE, FATTR4_CHANGE, FATTR4_SIZE};
	nfs_argop4 *g = &w.ops[w.n++];
	*g = (nfs_argop4){.argop = OP_GETATTR};
	g->u.opgetattr.attr_request = ffc_bm_of(gw, want, 3);
	COMPOUND4res res;
	rc = ffc_mds_call(c, w.ops, w.n, &res, &ar);
	if (rc)
		goto fail;
	/* a LOOKUP of the walk that failed is the COMPOUND's status */
	nfsstat4 st = ffc_opstatus(&res, iopen, OP_OPEN);
	if (st) {
		rc = ffc_nfs4_errno(st);
		goto fail;
	}
	const OPEN4resok *ok = &ffc_resop(&res, iopen, OP_OPEN)->u.opopen.u.resok4;
	f->open_sid = ok->stateid;
	nfs_resop4 *gf = ffc_resop(&res, igetfh, OP_GETFH);
	const nfs_fh4 *fh = gf && !gf->u.opgetfh.status ? &gf->u.opgetfh.u.resok4.object : NULL;
	if (!fh || !fh->len || fh->len > NFS4_FHSIZE) {
		/* an open we cannot name: nothing to CLOSE it with */
		rc = fh ? -EPROTO : ffc_nfs4_errno(ffc_opstatus(&res, igetfh, OP_GETFH));
		goto fail;
	}
	if (ok->delegation.delegation_type == OPEN_DELEGATE_READ ||
	    ok->delegation.delegation_type == OPEN_DELEGATE_WRITE) {
		/* we keep no delegations: give it back at once */
		nfs_argop4 dops[2] = {{.argop = OP_PUTFH}, {.argop = OP_DELEGRETURN}};
		dops[0].u.opputfh.object = *fh;
		dops[1].u.opdelegreturn.deleg_stateid =
		    ok->delegation.delegation_type == OPEN_DELEGATE_READ
			? ok->delegation.u.read.stateid
			: ok->delegation.u.write.stateid;
		COMPOUND4res dr;
		ffc_mds_call(c, dops, 2, &dr, &ar);
	}
	if (isetattr >= 0 && (st = ffc_opstatus(&res, (unsigned)isetattr, OP_SETATTR))) {
		rc = ffc_nfs4_errno(st);
		goto close;
	}
	struct attrs at;
	if ((st = ffc_opstatus(&res, igetattr, OP_GETATTR)))
		rc = ffc_nfs4_errno(st);
	else
		rc = ffc_attrs_decode(
		    &ffc_resop(&res, igetattr, OP_GETATTR)->u.opgetattr.u.resok4.obj_attributes,
		    &at, &ar);
	if (!rc && at.type != NF4REG)
		rc = at.type == NF4DIR ? -EISDIR : -EINVAL;
	if (rc)
		goto close;
	if (!(f->ino = ino_open(c, fh))) {
		rc = -ENOMEM;
		goto close;
	}
	pthread_mutex_lock(&f->ino->mu);
	/* our own writes not yet LAYOUTCOMMITted may be past the MDS's size */
	if (at.size > f->ino->size || !f->ino->need_layoutcommit || isetattr >= 0 ||
	    (flags & FFC_TRUNC))
		f->ino->size = at.size;
	pthread_mutex_unlock(&f->ino->mu);
	xdr_arena_release(&ar);
	return f;
close:
	close_open(c, fh->val, fh->len, &f->open_sid, &ar);
fail:
	xdr_arena_release(&ar);
	file_free(f);
	*err = rc ? rc : -EIO;
	return NULL;
}

ssize_t ffc_pwrite(struct ffc_file *f, const void *buf, size_t len, uint64_t off)
{
	if (f->acc == FFC_RDONLY)
		return -EBADF;
	if (!len)
		return 0;
	if (off + len < off || len > SSIZE_MAX)
		return -EFBIG;
	pthread_mutex_lock(&f->mu);
	pthread_mutex_lock(&f->ino->mu);
	ffc_recall_check(f->ino);
	pthread_mutex_unlock(&f->ino->mu);
	int rc = ffc_io_run(f->ino, &f->open_sid, true, (uint8_t *)(uintptr_t)buf, len, off);
	pthread_mutex_unlock(&f->mu);
	return rc < 0 ? rc : (ssize_t)len;
}

/* The size from the MDS (GETATTR), when a read reaches past what we know
 * (ino->mu held). */
static int size_refresh(struct ffc_inode *f)
{
	struct xdr_arena ar;
	ffc_arena_new(&ar);
	uint32_t w[3];
	unsigned want[] = {FATTR4_SIZE};
	nfs_argop4 ops[2] = {{.argop = OP_PUTFH}, {.argop = OP_GETATTR}};
	ops[0].u.opputfh.object = xdr_opaque_of(f->fh, f->fhlen);
	ops[1].u.opgetattr.attr_request = ffc_bm_of(w, want, 1);
	COMPOUND4res res;
	int rc = ffc_mds_call(f->c, ops, 2, &res, &ar);
	if (!rc) {
		nfsstat4 st = ffc_opstatus(&res, 1, OP_GETATTR);
		struct attrs at;
		rc = ffc_nfs4_errno(st);
		if (!rc)
			rc = ffc_attrs_decode(
			    &ffc_resop(&res, 1, OP_GETATTR)->u.opgetattr.u.resok4.obj_attributes,
			    &at, &ar);
		/* our own writes not yet LAYOUTCOMMITted count too */
		if (!rc && ffc_attr_has(&at, FATTR4_SIZE) &&
		    (at.size > f->size || !f->need_layoutcommit))
			f->size = at.size;
	}
	xdr_arena_release(&ar);
	return rc;
}

ssize_t ffc_pread(struct ffc_file *f, void *buf, size_t len, uint64_t off)
{
	if (f->acc == FFC_WRONLY)
		return -EBADF;
	if (!len)
		return 0;
	if (off + len < off || len > SSIZE_MAX)
		return -EINVAL;
	pthread_mutex_lock(&f->mu);
	struct ffc_inode *ino = f->ino;
	pthread_mutex_lock(&ino->mu);
	ffc_recall_check(ino);
	int rc = 0;
	if (off + len > ino->size)
		rc = size_refresh(ino);
	uint64_t size = ino->size;
	pthread_mutex_unlock(&ino->mu);
	uint64_t n = 0;
	if (!rc && off < size) {
		n = size - off < len ? size - off : len;
		rc = ffc_io_run(ino, &f->open_sid, false, buf, n, off);
	}
	pthread_mutex_unlock(&f->mu);
	return rc < 0 ? rc : (ssize_t)n;
}

/* After a flush, return what an error left marked for return (ino->mu). */
static void return_bad(struct ffc_inode *f)
{
	if (f->lo_bad[0] || f->lo_bad[1])
		ffc_return_locked(f, f->lo_bad[0] && f->lo_bad[1] ? LAYOUTIOMODE4_ANY
				     : f->lo_bad[1]		  ? LAYOUTIOMODE4_RW
								  : LAYOUTIOMODE4_READ);
}

int ffc_fsync(struct ffc_file *f)
{
	pthread_mutex_lock(&f->mu);
	pthread_mutex_lock(&f->ino->mu);
	ffc_recall_check(f->ino);
	int rc = ffc_flush_locked(f->ino);
	return_bad(f->ino);
	pthread_mutex_unlock(&f->ino->mu);
	pthread_mutex_unlock(&f->mu);
	return rc;
}

/* flush; at the last close of the file LAYOUTRETURN of everything; CLOSE. */
int ffc_close(struct ffc_file *f)
{
	struct ffc *c = f->c;
	struct ffc_inode *ino = f->ino;
	pthread_mutex_lock(&f->mu);
	pthread_mutex_lock(&ino->mu);
	int rc = ffc_flush_locked(ino);
	return_bad(ino);
	if (ino_close(ino)) {
		atomic_store(&ino->recall, 0);
		if (ino->lo_valid || ino->nsegs)
			ffc_layoutreturn(ino, LAYOUTIOMODE4_ANY);
		ino->closed = true;
	}
	pthread_mutex_unlock(&ino->mu);
	struct xdr_arena ar;
	ffc_arena_new(&ar);
	int crc = close_open(c, ino->fh, ino->fhlen, &f->open_sid, &ar);
	xdr_arena_release(&ar);
	pthread_mutex_unlock(&f->mu);
	ffc_ino_put(ino);
	file_free(f);
	return rc ? rc : crc;
}

uint64_t ffc_file_size(const struct ffc_file *f)
{
	pthread_mutex_lock(&f->ino->mu);
	uint64_t size = f->ino->size;
	pthread_mutex_unlock(&f->ino->mu);
	return size;
}

/* PUTROOTFH, LOOKUPs, then op on the parent with the last name. */
static int name_op(struct ffc *c, const char *path, nfs_argop4 op, nfs_opnum4 opnum)
{
	struct walk w;
	int rc = walk_build(&w, path);
	if (rc)
		return rc;
	if (opnum == OP_CREATE)
		op.u.opcreate.objname = xdr_opaque_of(w.last, w.lastlen);
	else
		op.u.opremove.target = xdr_opaque_of(w.last, w.lastlen);
	unsigned i = w.n;
	w.ops[w.n++] = op;
	struct xdr_arena ar;
	ffc_arena_new(&ar);
	COMPOUND4res res;
	rc = ffc_mds_call(c, w.ops, w.n, &res, &ar);
	if (!rc)
		rc = ffc_nfs4_errno(ffc_opstatus(&res, i, opnum));
	xdr_arena_release(&ar);
	return rc;
}

int ffc_mkdir(struct ffc *c, const char *path, uint32_t mode)
{
	uint32_t w[3];
	uint8_t v[12];
	nfs_argop4 op = {.argop = OP_CREATE};
	op.u.opcreate.objtype.type = NF4DIR;
	op.u.opcreate.createattrs = attrs_create(w, v, false, 0, true, mode);
	return name_op(c, path, op, OP_CREATE);
}

int ffc_remove(struct ffc *c, const char *path)
{
	return name_op(c, path, (nfs_argop4){.argop = OP_REMOVE}, OP_REMOVE);
}
