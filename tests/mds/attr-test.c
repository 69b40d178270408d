/* SPDX-License-Identifier: MIT */
/* Helpers for the attribute tests (tests/mds/attr-test.h). */
#include "config.h"

#include "tests/mds/attr-test.h"

const struct at_cred at_root = {0, 0, 0, {0}};

void at_open(struct at *a, struct mt *t, const char *owner)
{
	memset(a, 0, sizeof(*a));
	a->t = t;
	CHECK(nfs41c_session_create(t->c, owner, 0, &a->s) == 0);
	struct nfs41c_session_info info;
	nfs41c_session_info(a->s, &info);
	memcpy(a->sid, info.sessionid, sizeof(a->sid));
}

void at_close(struct at *a)
{
	if (a->s)
		nfs41c_session_destroy(a->s); /* frees it whatever the server says */
	a->s = NULL;
}

static int at_enc_args(struct xdr_enc *e, const void *v)
{
	return xdr_enc_COMPOUND4args(e, v);
}

static int at_dec_res(struct xdr_dec *d, void *v)
{
	return xdr_dec_COMPOUND4res(d, v);
}

void at_compound(struct at *a, uint32_t minor, const struct at_cred *cr, const nfs_argop4 *ops,
		 unsigned n, COMPOUND4res *res, struct xdr_arena *arena)
{
	nfs_argop4 all[16];
	CHECK(n + 1 <= 16);
	memset(all, 0, sizeof(all));
	all[0].argop = OP_SEQUENCE;
	SEQUENCE4args *sa = &all[0].u.opsequence;
	memcpy(sa->sa_sessionid, a->sid, sizeof(a->sid));
	sa->sa_sequenceid = ++a->seqid;
	memcpy(&all[1], ops, n * sizeof(*ops));
	COMPOUND4args args = {
	    .tag = xdr_string_of(""),
	    .minorversion = minor,
	    .argarray = {n + 1, all},
	};
	struct nfsd_call_opts o = {
	    .prog = NFS4_PROGRAM,
	    .vers = 4,
	    .proc = NFSPROC4_COMPOUND,
	    .enc_args = at_enc_args,
	    .args = &args,
	    .flavor = NFSD_AUTH_SYS,
	    .uid = cr->uid,
	    .gid = cr->gid,
	    .gids = cr->gids,
	    .ngids = cr->ngids,
	};
	memset(res, 0, sizeof(*res));
	int rc = nfsd_clnt_call(a->t->c, &o, at_dec_res, res, arena);
	if (rc)
		fprintf(stderr, "compound: %d\n", rc);
	CHECK(rc == 0);
	CHECK(res->resarray.len >= 1);
	CHECK_EQ(res->resarray.val[0].u.opsequence.sr_status, NFS4_OK);
}

nfsstat4 at_status(const COMPOUND4res *res, unsigned i)
{
	CHECK(res->resarray.len > i + 1);
	return res->resarray.val[i + 1].u.opillegal.status;
}

uint32_t at_export_id(struct mt *t, const char *path)
{
	struct mds_exports *x = mds_exports_get(t->mds);
	uint32_t id = 0;
	for (unsigned i = 0; i < x->n; i++)
		if (strcmp(x->v[i].e->path, path) == 0)
			id = x->v[i].id;
	mds_exports_put(x);
	CHECK(id != 0);
	return id;
}

uint64_t at_export_root(struct mt *t, const char *path)
{
	struct mds_exports *x = mds_exports_get(t->mds);
	uint64_t ino = 0;
	for (unsigned i = 0; i < x->n; i++)
		if (strcmp(x->v[i].e->path, path) == 0)
			ino = x->v[i].root_ino;
	mds_exports_put(x);
	CHECK(ino != 0);
	return ino;
}

nfs_fh4 at_fh(struct mt *t, struct xdr_arena *arena, uint64_t ino, uint32_t export_id)
{
	struct mds_attr a;
	CHECK(mds_inode_getattr(braid_mds_store(t->mds), ino, &a) == 0);
	struct mds_fh f = {.ino = ino, .gen = a.generation, .export_id = export_id};
	uint8_t *b = xdr_arena_alloc(arena, MDS_FH_SIZE);
	CHECK(b);
	mds_fh_make(t->mds, &f, b);
	return xdr_opaque_of(b, MDS_FH_SIZE);
}

uint64_t at_make(struct mt *t, uint64_t dir, const char *name, uint8_t type, uint32_t mode,
		 uint32_t uid, uint32_t gid)
{
	struct mds_create_args ca = {
	    .dir = dir,
	    .name = name,
	    .name_len = strlen(name),
	    .type = type,
	    .how = MDS_CREATE_GUARDED,
	    .mode = mode,
	    .uid = uid,
	    .gid = gid,
	    .rdev_major = type == MDS_CHR || type == MDS_BLK ? 5 : 0,
	    .rdev_minor = type == MDS_CHR || type == MDS_BLK ? 1 : 0,
	    .symlink = type == MDS_LNK ? "target/of/link" : NULL,
	    .symlink_len = type == MDS_LNK ? strlen("target/of/link") : 0,
	};
	struct mds_create_res cr;
	CHECK(mds_dir_create(braid_mds_store(t->mds), &ca, &cr) == 0);
	return cr.attr.ino;
}

struct mds_attr at_stat(struct mt *t, uint64_t ino)
{
	struct mds_attr a;
	CHECK(mds_inode_getattr(braid_mds_store(t->mds), ino, &a) == 0);
	return a;
}

void at_fb_init(struct at_fb *b, struct xdr_arena *arena)
{
	xdr_enc_init(&b->e, b->iov, 64, b->buf, sizeof(b->buf), arena);
}

attrlist4 at_fb_vals(struct at_fb *b, struct xdr_arena *arena)
{
	CHECK(b->e.err == 0);
	uint8_t *p = xdr_arena_alloc(arena, b->e.len + 1);
	CHECK(p);
	xdr_enc_flatten(&b->e, p);
	return xdr_opaque_of(p, b->e.len);
}

static void at_str_copy(char *dst, size_t size, const utf8str_mixed *s)
{
	CHECK(s->len < size);
	memcpy(dst, s->val, s->len);
	dst[s->len] = 0;
}

void at_decode(const fattr4 *f, struct xdr_arena *arena, struct at_attrs *o)
{
	memset(o, 0, sizeof(*o));
	o->mask = f->attrmask;
	struct xdr_dec d;
	xdr_dec_init(&d, f->attr_vals.val, f->attr_vals.len, arena);
	utf8str_mixed s;
	for (unsigned n = 0; n < 32 * f->attrmask.len; n++) {
		if (!at_has(&f->attrmask, n))
			continue;
		int rc;
		switch (n) {
		case FATTR4_SUPPORTED_ATTRS:
			rc = xdr_dec_bitmap4(&d, &o->supported);
			break;
		case FATTR4_SUPPATTR_EXCLCREAT:
			rc = xdr_dec_bitmap4(&d, &o->exclcreat);
			break;
		case FATTR4_TYPE:
			rc = xdr_dec_uint32(&d, &o->type);
			break;
		case FATTR4_FH_EXPIRE_TYPE:
			rc = xdr_dec_uint32(&d, &o->fh_expire_type);
			break;
		case FATTR4_LEASE_TIME:
			rc = xdr_dec_uint32(&d, &o->lease_time);
			break;
		case FATTR4_RDATTR_ERROR:
			rc = xdr_dec_uint32(&d, &o->rdattr_error);
			break;
		case FATTR4_ACLSUPPORT:
			rc = xdr_dec_uint32(&d, &o->aclsupport);
			break;
		case FATTR4_MAXLINK:
			rc = xdr_dec_uint32(&d, &o->maxlink);
			break;
		case FATTR4_MAXNAME:
			rc = xdr_dec_uint32(&d, &o->maxname);
			break;
		case FATTR4_MODE:
			rc = xdr_dec_uint32(&d, &o->mode);
			break;
		case FATTR4_NUMLINKS:
			rc = xdr_dec_uint32(&d, &o->numlinks);
			break;
		case FATTR4_LAYOUT_BLKSIZE:
			rc = xdr_dec_uint32(&d, &o->layout_blksize);
			break;
		case FATTR4_LAYOUT_ALIGNMENT:
			rc = xdr_dec_uint32(&d, &o->layout_alignment);
			break;
		case FATTR4_CHANGE_ATTR_TYPE:
			rc = xdr_dec_uint32(&d, &o->change_attr_type);
			break;
		case FATTR4_CHANGE:
			rc = xdr_dec_uint64(&d, &o->change);
			break;
		case FATTR4_SIZE:
			rc = xdr_dec_uint64(&d, &o->size);
			break;
		case FATTR4_FILEID:
			rc = xdr_dec_uint64(&d, &o->fileid);
			break;
		case FATTR4_FILES_AVAIL:
			rc = xdr_dec_uint64(&d, &o->files_avail);
			break;
		case FATTR4_FILES_FREE:
			rc = xdr_dec_uint64(&d, &o->files_free);
			break;
		case FATTR4_FILES_TOTAL:
			rc = xdr_dec_uint64(&d, &o->files_total);
			break;
		case FATTR4_MAXFILESIZE:
			rc = xdr_dec_uint64(&d, &o->maxfilesize);
			break;
		case FATTR4_MAXREAD:
			rc = xdr_dec_uint64(&d, &o->maxread);
			break;
		case FATTR4_MAXWRITE:
			rc = xdr_dec_uint64(&d, &o->maxwrite);
			break;
		case FATTR4_SPACE_AVAIL:
			rc = xdr_dec_uint64(&d, &o->space_avail);
			break;
		case FATTR4_SPACE_FREE:
			rc = xdr_dec_uint64(&d, &o->space_free);
			break;
		case FATTR4_SPACE_TOTAL:
			rc = xdr_dec_uint64(&d, &o->space_total);
			break;
		case FATTR4_SPACE_USED:
			rc = xdr_dec_uint64(&d, &o->space_used);
			break;
		case FATTR4_MOUNTED_ON_FILEID:
			rc = xdr_dec_uint64(&d, &o->mounted_on_fileid);
			break;
		case FATTR4_LINK_SUPPORT:
			rc = xdr_dec_bool(&d, &o->link_support);
			break;
		case FATTR4_SYMLINK_SUPPORT:
			rc = xdr_dec_bool(&d, &o->symlink_support);
			break;
		case FATTR4_NAMED_ATTR:
			rc = xdr_dec_bool(&d, &o->named_attr);
			break;
		case FATTR4_UNIQUE_HANDLES:
			rc = xdr_dec_bool(&d, &o->unique_handles);
			break;
		case FATTR4_CANSETTIME:
			rc = xdr_dec_bool(&d, &o->cansettime);
			break;
		case FATTR4_CASE_INSENSITIVE:
			rc = xdr_dec_bool(&d, &o->case_insensitive);
			break;
		case FATTR4_CASE_PRESERVING:
			rc = xdr_dec_bool(&d, &o->case_preserving);
			break;
		case FATTR4_CHOWN_RESTRICTED:
			rc = xdr_dec_bool(&d, &o->chown_restricted);
			break;
		case FATTR4_HOMOGENEOUS:
			rc = xdr_dec_bool(&d, &o->homogeneous);
			break;
		case FATTR4_NO_TRUNC:
			rc = xdr_dec_bool(&d, &o->no_trunc);
			break;
		case FATTR4_XATTR_SUPPORT:
			rc = xdr_dec_bool(&d, &o->xattr_support);
			break;
		case FATTR4_FSID:
			rc = xdr_dec_fsid4(&d, &o->fsid);
			break;
		case FATTR4_RAWDEV:
			rc = xdr_dec_specdata4(&d, &o->rawdev);
			break;
		case FATTR4_FILEHANDLE:
			rc = xdr_dec_nfs_fh4(&d, &o->fh);
			break;
		case FATTR4_OWNER:
			rc = xdr_dec_utf8str_mixed(&d, &s);
			if (!rc)
				at_str_copy(o->owner, sizeof(o->owner), &s);
			break;
		case FATTR4_OWNER_GROUP:
			rc = xdr_dec_utf8str_mixed(&d, &s);
			if (!rc)
				at_str_copy(o->group, sizeof(o->group), &s);
			break;
		case FATTR4_TIME_ACCESS:
			rc = xdr_dec_nfstime4(&d, &o->atime);
			break;
		case FATTR4_TIME_CREATE:
			rc = xdr_dec_nfstime4(&d, &o->btime);
			break;
		case FATTR4_TIME_DELTA:
			rc = xdr_dec_nfstime4(&d, &o->delta);
			break;
		case FATTR4_TIME_METADATA:
			rc = xdr_dec_nfstime4(&d, &o->ctime);
			break;
		case FATTR4_TIME_MODIFY:
			rc = xdr_dec_nfstime4(&d, &o->mtime);
			break;
		case FATTR4_FS_LAYOUT_TYPES:
			rc = xdr_dec_fattr4_fs_layout_types(&d, &o->layout_types);
			break;
		case FATTR4_MDSTHRESHOLD:
			rc = xdr_dec_fattr4_mdsthreshold(&d, &o->mdsthreshold);
			break;
		default:
			fprintf(stderr, "attribute %u returned but unknown to the test\n", n);
			rc = -1;
		}
		if (rc)
			fprintf(stderr, "attribute %u does not decode\n", n);
		CHECK(rc == 0);
	}
	CHECK_EQ(xdr_dec_left(&d), 0);
}

nfsstat4 at_get(struct at *a, uint32_t minor, const struct at_cred *cr, const nfs_fh4 *fh,
		bitmap4 want, struct xdr_arena *arena, struct at_attrs *out)
{
	nfs_argop4 ops[2] = {mt_putfh(fh), at_getattr(want)};
	COMPOUND4res res;
	at_compound(a, minor, cr, ops, 2, &res, arena);
	CHECK_EQ(at_status(&res, 0), NFS4_OK);
	nfsstat4 st = at_status(&res, 1);
	if (st == NFS4_OK && out)
		at_decode(&res.resarray.val[2].u.opgetattr.u.resok4.obj_attributes, arena, out);
	return st;
}
