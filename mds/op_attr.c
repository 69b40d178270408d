/* SPDX-License-Identifier: MIT */
/*
 * Attributes: the fattr4 codec (RFC 8881 §5) and GETATTR, SETATTR, VERIFY,
 * NVERIFY and ACCESS; the extended attribute ops of RFC 8276 (NFSv4.2).
 *
 * The whole namespace is one file system: one fsid, derived from the
 * server owner (so the same across restarts), whichever export a handle
 * came through, so the Linux client sees no submounts.  Owners are numeric
 * strings (RFC 8881 §5.9): the stock client sends them so under AUTH_SYS.
 * change only increases (the store adds one per change), hence
 * change_attr_type NFS4_CHANGE_TYPE_IS_MONOTONIC_INCR.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "mds/attr.h"
#include "mds/data.h"
#include "mds/dsreg.h"
#include "mds/ec.h"
#include "mds/fh.h"
#include "mds/layout.h"
#include "mds/mds_impl.h"
#include "mds/state.h"

/* Attribute n's bit in word 0, 1 or 2 of a bitmap4. */
#define A0(n) (1u << (n))
#define A1(n) (1u << ((n)-32))
#define A2(n) (1u << ((n)-64))
#define NW    3 /* bitmap words holding the attributes we know: 0..95 */

static const uint32_t attr_supp[NW] = {
    A0(FATTR4_SUPPORTED_ATTRS) | A0(FATTR4_TYPE) | A0(FATTR4_FH_EXPIRE_TYPE) | A0(FATTR4_CHANGE) |
	A0(FATTR4_SIZE) | A0(FATTR4_LINK_SUPPORT) | A0(FATTR4_SYMLINK_SUPPORT) |
	A0(FATTR4_NAMED_ATTR) | A0(FATTR4_FSID) | A0(FATTR4_UNIQUE_HANDLES) |
	A0(FATTR4_LEASE_TIME) | A0(FATTR4_RDATTR_ERROR) | A0(FATTR4_ACLSUPPORT) |
	A0(FATTR4_CANSETTIME) | A0(FATTR4_CASE_INSENSITIVE) | A0(FATTR4_CASE_PRESERVING) |
	A0(FATTR4_CHOWN_RESTRICTED) | A0(FATTR4_FILEHANDLE) | A0(FATTR4_FILEID) |
	A0(FATTR4_FILES_AVAIL) | A0(FATTR4_FILES_FREE) | A0(FATTR4_FILES_TOTAL) |
	A0(FATTR4_HOMOGENEOUS) | A0(FATTR4_MAXFILESIZE) | A0(FATTR4_MAXLINK) | A0(FATTR4_MAXNAME) |
	A0(FATTR4_MAXREAD) | A0(FATTR4_MAXWRITE),
    A1(FATTR4_MODE) | A1(FATTR4_NO_TRUNC) | A1(FATTR4_NUMLINKS) | A1(FATTR4_OWNER) |
	A1(FATTR4_OWNER_GROUP) | A1(FATTR4_RAWDEV) | A1(FATTR4_SPACE_AVAIL) |
	A1(FATTR4_SPACE_FREE) | A1(FATTR4_SPACE_TOTAL) | A1(FATTR4_SPACE_USED) |
	A1(FATTR4_TIME_ACCESS) | A1(FATTR4_TIME_ACCESS_SET) | A1(FATTR4_TIME_CREATE) |
	A1(FATTR4_TIME_DELTA) | A1(FATTR4_TIME_METADATA) | A1(FATTR4_TIME_MODIFY) |
	A1(FATTR4_TIME_MODIFY_SET) | A1(FATTR4_MOUNTED_ON_FILEID) | A1(FATTR4_FS_LAYOUT_TYPES),
    A2(FATTR4_LAYOUT_BLKSIZE) | A2(FATTR4_LAYOUT_ALIGNMENT) | A2(FATTR4_MODE_SET_MASKED) |
	A2(FATTR4_SUPPATTR_EXCLCREAT) | A2(FATTR4_CHANGE_ATTR_TYPE) | A2(FATTR4_MODE_UMASK) |
	A2(FATTR4_XATTR_SUPPORT) | A2(FATTR4_MDSTHRESHOLD),
};
/* NFSv4.2 only (RFC 7862 §12.2, RFC 8275, RFC 8276 §8.2): not in 4.1. */
static const uint32_t attr_v42[NW] = {
    0,
    0,
    A2(FATTR4_CHANGE_ATTR_TYPE) | A2(FATTR4_MODE_UMASK) | A2(FATTR4_XATTR_SUPPORT),
};
/* Write-only: GETATTR, READDIR and VERIFY asking for them is NFS4ERR_INVAL. */
static const uint32_t attr_wo[NW] = {
    0,
    A1(FATTR4_TIME_ACCESS_SET) | A1(FATTR4_TIME_MODIFY_SET),
    A2(FATTR4_MODE_SET_MASKED) | A2(FATTR4_MODE_UMASK),
};
/* Settable by SETATTR and createattrs (every one also in EXCLUSIVE4_1:
 * the create verifier is stored apart from the times).  time_create is
 * read-only here: the store sets btime once. */
static const uint32_t attr_set[NW] = {
    A0(FATTR4_SIZE),
    A1(FATTR4_MODE) | A1(FATTR4_OWNER) | A1(FATTR4_OWNER_GROUP) | A1(FATTR4_TIME_ACCESS_SET) |
	A1(FATTR4_TIME_MODIFY_SET),
    A2(FATTR4_MODE_SET_MASKED) | A2(FATTR4_MODE_UMASK),
};

/* files_*: inodes cost store space only; store bytes per inode and entry */
#define MDS_INODE_BYTES 512

static bool has(const uint32_t *w, unsigned n)
{
	return n < 32 * NW && (w[n / 32] >> (n % 32) & 1);
}

/* RFC 7530 §5: NFSv4.0 has attributes 0 to 55 (mounted_on_fileid);
 * those after are 4.1's (RFC 8881 §5.8.2) or 4.2's. */
#define ATTR_V40_LAST FATTR4_MOUNTED_ON_FILEID

/*
 * mdsthreshold (RFC 8881 §5.12.15) is offered only while the MDS serves
 * file data ([mds] data_io = proxy) and small_file_threshold is set: a
 * client that knows of it asks for it in every OPEN (Linux since 3.5) and
 * sends the data of files below it to the MDS instead of asking for
 * layouts.
 */
static bool threshold_on(const struct braid_mds *mds)
{
	return mds->set.data_io == MDS_DATA_PROXY && mds->set.small_file_threshold;
}

/* The attributes minor version 'minor' supports; mds NULL: mdsthreshold
 * counted in (decoding attributes to set, where it is read-only either way). */
static void supported_of(uint32_t minor, const struct braid_mds *mds, uint32_t out[NW])
{
	for (unsigned i = 0; i < NW; i++) {
		out[i] = attr_supp[i] & (minor >= 2 ? ~0u : ~attr_v42[i]);
		if (i == FATTR4_MDSTHRESHOLD / 32 && mds && !threshold_on(mds))
			out[i] &= ~A2(FATTR4_MDSTHRESHOLD);
		if (minor == 0 && 32 * i > ATTR_V40_LAST)
			out[i] = 0;
		else if (minor == 0 && 32 * i + 31 > ATTR_V40_LAST)
			out[i] &= (2u << (ATTR_V40_LAST % 32)) - 1;
	}
}

static bitmap4 bitmap_copy(struct xdr_arena *arena, const uint32_t w[NW])
{
	unsigned len = NW;
	while (len && !w[len - 1])
		len--;
	bitmap4 b = {.len = 0, .val = NULL};
	if (len && (b.val = xdr_arena_alloc(arena, len * sizeof(uint32_t)))) {
		memcpy(b.val, w, len * sizeof(uint32_t));
		b.len = len;
	}
	return b;
}

void mds_attr_supported(bitmap4 *out, struct xdr_arena *arena)
{
	*out = bitmap_copy(arena, attr_supp);
}

uint64_t mds_fsid(const struct braid_mds *mds)
{
	static const struct siphash_key k = {{0x6272616964667369ULL, 0x642d6f662d6d6473ULL}};
	return siphash24(&k, mds->so_major, mds->so_major_len);
}

/* One fsid for the namespace (RFC 8881 §5.8.1.9), stable across restarts. */
static fsid4 fsid_of(const struct braid_mds *mds)
{
	fsid4 f = {.major = mds_fsid(mds), .minor = 0};
	return f;
}

/*
 * Encoding.
 */
struct enc {
	struct nfs41_compound *c;
	struct braid_mds *mds;
	const struct mds_attr *a;
	const void *fh;
	uint32_t fhlen;
	bool have_space, have_files;
	uint64_t space_total, space_avail;
	uint64_t files_total, files_free, files_avail;
};

/*
 * Space as a writer sees it: the data servers' bytes (those new files may
 * go to, for avail and free: mds_dsreg_space) over the copies each byte
 * takes, the mirrors of the policy new files here take (a directory's) or
 * this file has; under erasure coding, k data bytes take k + m raw ones.
 */
void mds_fs_space(struct braid_mds *mds, const struct mds_attr *a, uint64_t *total,
		  uint64_t *avail)
{
	mds_dsreg_space(mds, total, avail);
	struct layout_policy p;
	struct mds_file_map m;
	if (a->type == MDS_DIR) {
		if (mds_layout_policy_inherited(mds, a->ino, &p))
			mds_layout_policy_default(mds, &p);
	} else if (a->type == MDS_REG && !mds_data_map(mds, a->ino, &m)) {
		p = m.pol;
	} else {
		mds_layout_policy_default(mds, &p);
	}
	if (layout_is_ec(&p)) {
		/* k + m at most 18: no overflow below 2^59 bytes */
		*total = *total / (p.ec_k + p.ec_m) * p.ec_k;
		*avail = *avail / (p.ec_k + p.ec_m) * p.ec_k;
		return;
	}
	unsigned copies = p.mirrors ? p.mirrors : 1;
	*total /= copies;
	*avail /= copies;
}

void mds_fs_files(const struct braid_mds *mds, uint64_t *total, uint64_t *free_,
		  uint64_t *avail)
{
	struct statvfs sv;
	*total = *free_ = *avail = 0;
	if (statvfs(mds->set.store_dir, &sv) == 0) {
		uint64_t f = sv.f_frsize ? sv.f_frsize : sv.f_bsize;
		*total = (uint64_t)sv.f_blocks * f / MDS_INODE_BYTES;
		*free_ = (uint64_t)sv.f_bfree * f / MDS_INODE_BYTES;
		*avail = (uint64_t)sv.f_bavail * f / MDS_INODE_BYTES;
	}
}

static void enc_space(struct enc *x)
{
	if (x->have_space)
		return;
	mds_fs_space(x->mds, x->a, &x->space_total, &x->space_avail);
	x->have_space = true;
}

static void enc_files(struct enc *x)
{
	if (x->have_files)
		return;
	mds_fs_files(x->mds, &x->files_total, &x->files_free, &x->files_avail);
	x->have_files = true;
}

static nfstime4 t4(struct mds_time t)
{
	nfstime4 r = {.seconds = t.sec, .nseconds = t.nsec};
	return r;
}

static int enc_id(struct xdr_enc *e, uint32_t id)
{
	char b[16];
	int n = snprintf(b, sizeof(b), "%u", id);
	utf8str_mixed s = xdr_opaque_of(b, (size_t)n);
	return xdr_enc_utf8str_mixed(e, &s); /* short: copied at once */
}

static int enc_bitmap(struct xdr_enc *e, const uint32_t w[NW])
{
	unsigned len = NW;
	while (len && !w[len - 1])
		len--;
	bitmap4 b = {.len = len, .val = (uint32_t *)w};
	return xdr_enc_bitmap4(e, &b);
}

static int enc_one(struct xdr_enc *e, struct enc *x, unsigned n)
{
	const struct mds_attr *a = x->a;
	uint32_t w[NW];
	nfstime4 t;
	switch (n) {
	case FATTR4_SUPPORTED_ATTRS:
		supported_of(x->c->minorversion, x->mds, w);
		return enc_bitmap(e, w);
	case FATTR4_TYPE:
		return xdr_enc_uint32(e, a->type);
	case FATTR4_FH_EXPIRE_TYPE:
		return xdr_enc_uint32(e, FH4_PERSISTENT);
	case FATTR4_CHANGE:
		return xdr_enc_uint64(e, a->change);
	case FATTR4_SIZE:
		return xdr_enc_uint64(e, a->size);
	case FATTR4_LINK_SUPPORT:
	case FATTR4_SYMLINK_SUPPORT:
	case FATTR4_CANSETTIME:
	case FATTR4_CASE_PRESERVING:
	case FATTR4_CHOWN_RESTRICTED:
	case FATTR4_HOMOGENEOUS:
	case FATTR4_NO_TRUNC:
	case FATTR4_XATTR_SUPPORT:
		return xdr_enc_bool(e, true);
	case FATTR4_NAMED_ATTR:
	case FATTR4_CASE_INSENSITIVE:
		return xdr_enc_bool(e, false);
	case FATTR4_FSID: {
		fsid4 f = fsid_of(x->mds);
		return xdr_enc_fsid4(e, &f);
	}
	case FATTR4_UNIQUE_HANDLES: {
		/* A handle carries the export it was reached through: with two
		 * exports an object moved between them has two handles. */
		struct mds_exports *ex = mds_exports_get(x->mds);
		bool unique = ex->n <= 1;
		mds_exports_put(ex);
		return xdr_enc_bool(e, unique);
	}
	case FATTR4_LEASE_TIME:
		return xdr_enc_uint32(e, (uint32_t)(x->mds->set.lease_ms / 1000));
	case FATTR4_RDATTR_ERROR:
		return xdr_enc_uint32(e, NFS4_OK);
	case FATTR4_ACLSUPPORT:
		return xdr_enc_uint32(e, 0);
	case FATTR4_FILEHANDLE: {
		nfs_fh4 fh = xdr_opaque_of(x->fh, x->fhlen);
		return xdr_enc_nfs_fh4(e, &fh);
	}
	case FATTR4_FILEID:
	case FATTR4_MOUNTED_ON_FILEID: /* one file system: nothing is mounted on */
		return xdr_enc_uint64(e, a->ino);
	case FATTR4_FILES_AVAIL:
		enc_files(x);
		return xdr_enc_uint64(e, x->files_avail);
	case FATTR4_FILES_FREE:
		enc_files(x);
		return xdr_enc_uint64(e, x->files_free);
	case FATTR4_FILES_TOTAL:
		enc_files(x);
		return xdr_enc_uint64(e, x->files_total);
	case FATTR4_MAXFILESIZE:
		return xdr_enc_uint64(e, MDS_FILE_MAX);
	case FATTR4_MAXLINK:
		return xdr_enc_uint32(e, UINT32_MAX);
	case FATTR4_MAXNAME:
		return xdr_enc_uint32(e, MDS_NAME_MAX);
	case FATTR4_MAXREAD:
	case FATTR4_MAXWRITE:
		return xdr_enc_uint64(e, MDS_IO_MAX);
	case FATTR4_MODE:
		return xdr_enc_uint32(e, a->mode & 07777);
	case FATTR4_NUMLINKS:
		return xdr_enc_uint32(e, a->nlink);
	case FATTR4_OWNER:
		return enc_id(e, a->uid);
	case FATTR4_OWNER_GROUP:
		return enc_id(e, a->gid);
	case FATTR4_RAWDEV: {
		specdata4 d = {.specdata1 = a->rdev_major, .specdata2 = a->rdev_minor};
		return xdr_enc_specdata4(e, &d);
	}
	case FATTR4_SPACE_AVAIL:
	case FATTR4_SPACE_FREE:
		enc_space(x);
		return xdr_enc_uint64(e, x->space_avail);
	case FATTR4_SPACE_TOTAL:
		enc_space(x);
		return xdr_enc_uint64(e, x->space_total);
	case FATTR4_SPACE_USED:
		return xdr_enc_uint64(e, a->space_used);
	case FATTR4_TIME_ACCESS:
		t = t4(a->atime);
		return xdr_enc_nfstime4(e, &t);
	case FATTR4_TIME_CREATE:
		t = t4(a->btime);
		return xdr_enc_nfstime4(e, &t);
	case FATTR4_TIME_DELTA: /* the store keeps clock_gettime() nanoseconds */
		t = (nfstime4){.seconds = 0, .nseconds = 1};
		return xdr_enc_nfstime4(e, &t);
	case FATTR4_TIME_METADATA:
		t = t4(a->ctime);
		return xdr_enc_nfstime4(e, &t);
	case FATTR4_TIME_MODIFY:
		t = t4(a->mtime);
		return xdr_enc_nfstime4(e, &t);
	case FATTR4_FS_LAYOUT_TYPES: {
		/* Offer flexfiles only once LAYOUTGET is served: a client told
		 * of a layout type asks for layouts on every I/O and falls back
		 * only after each fails (RFC 8881 §5.12.1). */
		layouttype4 lt = LAYOUT4_FLEX_FILES;
		fattr4_fs_layout_types l = {.len = mds_of(x->c)->ops[OP_LAYOUTGET].fn ? 1 : 0,
					    .val = &lt};
		return xdr_enc_fattr4_fs_layout_types(e, &l);
	}
	case FATTR4_LAYOUT_BLKSIZE:
		return xdr_enc_uint32(e, MDS_IO_MAX);
	case FATTR4_LAYOUT_ALIGNMENT:
		return xdr_enc_uint32(e, MDS_IO_MAX);
	case FATTR4_SUPPATTR_EXCLCREAT:
		supported_of(x->c->minorversion, x->mds, w);
		for (unsigned i = 0; i < NW; i++)
			w[i] &= attr_set[i];
		return enc_bitmap(e, w);
	case FATTR4_CHANGE_ATTR_TYPE:
		return xdr_enc_uint32(e, NFS4_CHANGE_TYPE_IS_MONOTONIC_INCR);
	case FATTR4_MDSTHRESHOLD: {
		/* one hint, threshold4_write_size: a file smaller than it has
		 * its data written through the MDS; reads keep their layouts
		 * (the OPEN hands out the read layout of a whole file) */
		uint64_t thr = x->mds->set.small_file_threshold;
		uint8_t v[8];
		for (unsigned i = 0; i < 8; i++)
			v[i] = (uint8_t)(thr >> (56 - 8 * i));
		uint32_t hints = 1u << TH4_WRITE_SIZE;
		threshold_item4 it = {.thi_layout_type = LAYOUT4_FLEX_FILES,
				      .thi_hintset = {.len = 1, .val = &hints},
				      .thi_hintlist = xdr_opaque_of(v, sizeof(v))};
		fattr4_mdsthreshold m = {.mth_hints = {.len = 1, .val = &it}};
		return xdr_enc_fattr4_mdsthreshold(e, &m);
	}
	}
	return xdr_enc_error(e, -ENOTSUP); /* a supported attribute without a case */
}

/*
 * Encodes the attributes in w (all supported, none write-only) into
 * arena memory of exactly their size: a READDIR of thousands of entries
 * spends on attributes about what its reply holds.
 */
#define ENC_STACK 1024
#define ENC_IOV	  16
static nfsstat4 encode_words(struct enc *x, const uint32_t w[NW], fattr4 *out)
{
	struct nfs41_compound *c = x->c;
	uint8_t stack[ENC_STACK];
	struct iovec iov[ENC_IOV];
	struct xdr_enc e;
	xdr_enc_init(&e, iov, ENC_IOV, stack, sizeof(stack), c->arena);
	for (unsigned n = 0; n < 32 * NW && !e.err; n++)
		if (has(w, n))
			enc_one(&e, x, n);
	memset(out, 0, sizeof(*out));
	if (e.err)
		return NFS4ERR_SERVERFAULT;
	if (e.len) {
		uint8_t *p = xdr_arena_alloc(c->arena, e.len);
		if (!p)
			return NFS4ERR_SERVERFAULT;
		xdr_enc_flatten(&e, p);
		out->attr_vals = xdr_opaque_of(p, e.len);
	}
	out->attrmask = bitmap_copy(c->arena, w);
	if (out->attrmask.len == 0 && (w[0] | w[1] | w[2]))
		return NFS4ERR_SERVERFAULT;
	return NFS4_OK;
}

/* want ∩ supported, in NW words; NFS4ERR_INVAL if it has a write-only one. */
static nfsstat4 want_words(const struct nfs41_compound *c, const bitmap4 *want, uint32_t w[NW])
{
	uint32_t s[NW];
	supported_of(c->minorversion, mds_of(c), s);
	for (unsigned i = 0; i < NW; i++) {
		w[i] = (i < want->len ? want->val[i] : 0) & s[i];
		if (w[i] & attr_wo[i])
			return NFS4ERR_INVAL; /* RFC 8881 §18.7.3 */
	}
	return NFS4_OK;
}

nfsstat4 mds_attr_encode_fh(struct nfs41_compound *c, const struct mds_attr *attr, const void *fh,
			    uint32_t fhlen, const bitmap4 *want, fattr4 *out)
{
	uint32_t w[NW];
	nfsstat4 st = want_words(c, want, w);
	if (st)
		return st;
	struct enc x = {.c = c, .mds = mds_of(c), .a = attr, .fh = fh, .fhlen = fhlen};
	return encode_words(&x, w, out);
}

nfsstat4 mds_attr_encode(struct nfs41_compound *c, const struct mds_attr *attr, const bitmap4 *want,
			 fattr4 *out)
{
	return mds_attr_encode_fh(c, attr, c->fh, c->fhlen, want, out);
}

nfsstat4 mds_attr_encode_error(struct nfs41_compound *c, nfsstat4 err, const bitmap4 *want,
			       fattr4 *out)
{
	if (want->len < 1 || !(want->val[0] & A0(FATTR4_RDATTR_ERROR)))
		return err;
	static const uint32_t w[NW] = {A0(FATTR4_RDATTR_ERROR), 0, 0};
	uint8_t *p = xdr_arena_alloc(c->arena, 4);
	if (!p)
		return NFS4ERR_SERVERFAULT;
	xdr_put32(p, (uint32_t)err);
	memset(out, 0, sizeof(*out));
	out->attrmask = bitmap_copy(c->arena, w);
	out->attr_vals = xdr_opaque_of(p, 4);
	return out->attrmask.len ? NFS4_OK : NFS4ERR_SERVERFAULT;
}

/*
 * Decoding settable attributes.
 */
/* An attrlist may be empty with no buffer behind it. */
static void vals_dec_init(struct xdr_dec *d, const attrlist4 *v, struct xdr_arena *arena)
{
	static const uint8_t none[1];
	xdr_dec_init(d, v->len ? v->val : none, v->len, arena);
}

struct attr_in {
	struct mds_setattr_args *a; /* mode, uid, gid, size, times go here */
	uint32_t bits[NW];	    /* the attributes given */
	bool mode, masked, umask;
	uint32_t mm_value, mm_mask; /* mode_set_masked */
	uint32_t mu_mode, mu_umask; /* mode_umask (RFC 8275) */
};

/* RFC 8881 §5.9: "1000"; anything else (names, signs, > 2^32-1): BADOWNER. */
static bool parse_id(const utf8str_mixed *s, uint32_t *id)
{
	if (s->len == 0 || s->len > 10)
		return false;
	uint64_t v = 0;
	for (uint32_t i = 0; i < s->len; i++) {
		if (s->val[i] < '0' || s->val[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s->val[i] - '0');
	}
	if (v > UINT32_MAX || (s->len > 1 && s->val[0] == '0'))
		return false;
	*id = (uint32_t)v;
	return true;
}

static nfsstat4 dec_time(struct xdr_dec *d, uint32_t set_bit, uint32_t now_bit, struct mds_time *t,
			 uint32_t *mask)
{
	settime4 s;
	if (xdr_dec_settime4(d, &s))
		return NFS4ERR_BADXDR;
	if (s.set_it == SET_TO_SERVER_TIME4) {
		*mask |= now_bit;
		return NFS4_OK;
	}
	if (s.set_it != SET_TO_CLIENT_TIME4)
		return NFS4ERR_BADXDR; /* the union's void arm: no such time_how4 */
	if (s.u.time.nseconds >= 1000000000u)
		return NFS4ERR_INVAL;
	t->sec = s.u.time.seconds;
	t->nsec = s.u.time.nseconds;
	*mask |= set_bit;
	return NFS4_OK;
}

/*
 * RFC 8881 §18.30.3: an attribute the server does not support is
 * NFS4ERR_ATTRNOTSUPP (checked first: its value cannot be skipped), a
 * read-only one NFS4ERR_INVAL.  'create': OPEN/CREATE, which alone may
 * carry mode_umask (RFC 8275 §3).
 */
static nfsstat4 decode_set(struct nfs41_compound *c, const fattr4 *in, bool create,
			   struct attr_in *r)
{
	struct mds_setattr_args *a = r->a;
	uint32_t s[NW];
	supported_of(c->minorversion, NULL, s);
	memset(r->bits, 0, sizeof(r->bits));
	for (uint32_t i = 0; i < in->attrmask.len; i++) {
		uint32_t v = in->attrmask.val[i];
		if (i >= NW ? v != 0 : (v & ~s[i]) != 0)
			return NFS4ERR_ATTRNOTSUPP;
		if (i < NW)
			r->bits[i] = v;
	}
	for (unsigned i = 0; i < NW; i++)
		if (r->bits[i] & ~attr_set[i])
			return NFS4ERR_INVAL;
	if (!create && has(r->bits, FATTR4_MODE_UMASK))
		return NFS4ERR_INVAL;

	struct xdr_dec d;
	vals_dec_init(&d, &in->attr_vals, c->arena);
	nfsstat4 st = NFS4_OK, owner_st = NFS4_OK;
	for (unsigned n = 0; n < 32 * NW && !st; n++) {
		if (!has(r->bits, n))
			continue;
		switch (n) {
		case FATTR4_SIZE:
			if (xdr_dec_uint64(&d, &a->size))
				return NFS4ERR_BADXDR;
			a->mask |= MDS_SET_SIZE;
			break;
		case FATTR4_MODE:
			if (xdr_dec_uint32(&d, &a->mode))
				return NFS4ERR_BADXDR;
			if (a->mode & ~07777u)
				st = NFS4ERR_INVAL;
			a->mask |= MDS_SET_MODE;
			r->mode = true;
			break;
		case FATTR4_OWNER:
		case FATTR4_OWNER_GROUP: {
			utf8str_mixed o;
			uint32_t id;
			if (xdr_dec_utf8str_mixed(&d, &o))
				return NFS4ERR_BADXDR;
			if (!parse_id(&o, &id)) {
				owner_st = NFS4ERR_BADOWNER; /* after the rest is decoded */
			} else if (n == FATTR4_OWNER) {
				a->uid = id;
				a->mask |= MDS_SET_UID;
			} else {
				a->gid = id;
				a->mask |= MDS_SET_GID;
			}
			break;
		}
		case FATTR4_TIME_ACCESS_SET:
			st = dec_time(&d, MDS_SET_ATIME, MDS_SET_ATIME_NOW, &a->atime, &a->mask);
			break;
		case FATTR4_TIME_MODIFY_SET:
			st = dec_time(&d, MDS_SET_MTIME, MDS_SET_MTIME_NOW, &a->mtime, &a->mask);
			break;
		case FATTR4_MODE_SET_MASKED: {
			mode_masked4 m;
			if (xdr_dec_mode_masked4(&d, &m))
				return NFS4ERR_BADXDR;
			if ((m.mm_value_to_set | m.mm_mask_bits) & ~07777u)
				st = NFS4ERR_INVAL;
			r->masked = true;
			r->mm_value = m.mm_value_to_set;
			r->mm_mask = m.mm_mask_bits;
			break;
		}
		case FATTR4_MODE_UMASK: {
			mode_umask4 m;
			if (xdr_dec_mode_umask4(&d, &m))
				return NFS4ERR_BADXDR;
			if ((m.mu_mode | m.mu_umask) & ~07777u)
				st = NFS4ERR_INVAL;
			r->umask = true;
			r->mu_mode = m.mu_mode;
			r->mu_umask = m.mu_umask;
			break;
		}
		default:
			return NFS4ERR_SERVERFAULT; /* settable without a case */
		}
	}
	if (st)
		return st;
	if (xdr_dec_left(&d))
		return NFS4ERR_BADXDR; /* values beyond what the bitmap says */
	if (owner_st)
		return owner_st;
	/* one way to say the mode (RFC 8881 §6.2.4 mode_set_masked, RFC 8275 §3) */
	if ((r->mode + r->masked + r->umask) > 1)
		return NFS4ERR_INVAL;
	return NFS4_OK;
}

nfsstat4 mds_attr_decode_set(struct nfs41_compound *c, const fattr4 *in, struct mds_setattr_args *a,
			     bitmap4 *set)
{
	struct attr_in r = {.a = a};
	nfsstat4 st = decode_set(c, in, true, &r);
	if (st)
		return st;
	/* a new object has no earlier mode bits to keep */
	if (r.masked) {
		a->mode = r.mm_value & r.mm_mask;
		a->mask |= MDS_SET_MODE;
	}
	if (r.umask) {
		a->mode = r.mu_mode & ~r.mu_umask; /* no inheritable ACLs here */
		a->mask |= MDS_SET_MODE;
	}
	*set = bitmap_copy(c->arena, r.bits);
	if (!set->len && (r.bits[0] | r.bits[1] | r.bits[2]))
		return NFS4ERR_SERVERFAULT;
	return NFS4_OK;
}

/*
 * GETATTR (RFC 8881 §18.7): unsupported attributes asked for are left out.
 */
static bool bit_in(const bitmap4 *b, unsigned n)
{
	return n / 32 < b->len && (b->val[n / 32] >> (n % 32) & 1);
}

static nfsstat4 op_getattr(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	struct mds_attr a;
	nfsstat4 st = mds_cfh(c, NULL, &a, NULL);
	if (st)
		return st;
	/* §10.4.3: another client's write delegation may hold a newer size
	 * and times; recalled first (braid-mds sends no CB_GETATTR) */
	const bitmap4 *rq = &arg->u.opgetattr.attr_request;
	if (a.type == MDS_REG &&
	    (bit_in(rq, FATTR4_CHANGE) || bit_in(rq, FATTR4_SIZE) ||
	     bit_in(rq, FATTR4_SPACE_USED) || bit_in(rq, FATTR4_TIME_METADATA) ||
	     bit_in(rq, FATTR4_TIME_MODIFY)) &&
	    mds_deleg_break_write(mds_of(c), a.ino, c->clientid) == -EAGAIN)
		return NFS4ERR_DELAY;
	return mds_attr_encode(c, &a, &arg->u.opgetattr.attr_request,
			       &res->u.opgetattr.u.resok4.obj_attributes);
}

/*
 * SETATTR (RFC 8881 §18.30).  Permissions as POSIX and knfsd: the owner or
 * root changes the mode and sets times to client times; anyone with write
 * access sets them to the server's time; only root gives a file away, and
 * the owner may change its group to one of its own; a size change needs
 * write access (or ownership: an owner's open for writing of a read-only
 * file).  A chown or a truncation by non-root clears set-id bits.
 */
static bool in_group(const struct mds_cred *cr, uint32_t gid)
{
	if (cr->gid == gid)
		return true;
	for (uint32_t i = 0; i < cr->ngroups; i++)
		if (cr->groups[i] == gid)
			return true;
	return false;
}

static nfsstat4 setattr_check(const struct mds_cred *cr, const struct mds_attr *at,
			      const struct mds_setattr_how *how, struct mds_setattr_args *x)
{
	bool root = cr->uid == 0, owner = cr->uid == at->uid;
	bool mode_given = how->mode || how->masked;
	if (mode_given) {
		if (!root && !owner)
			return NFS4ERR_PERM;
		uint32_t m = how->masked ? (at->mode & ~how->mm_mask) | (how->mm_value & how->mm_mask)
					 : x->mode;
		uint32_t gid = (x->mask & MDS_SET_GID) ? x->gid : at->gid;
		/* chmod(2): outside the file's group, S_ISGID is dropped */
		if (!root && at->type != MDS_DIR && !in_group(cr, gid))
			m &= ~(uint32_t)S_ISGID;
		x->mode = m;
		x->mask |= MDS_SET_MODE;
	}
	if ((x->mask & MDS_SET_UID) && !root && !(owner && x->uid == at->uid))
		return NFS4ERR_PERM;
	if ((x->mask & MDS_SET_GID) && !root &&
	    !(owner && (x->gid == at->gid || in_group(cr, x->gid))))
		return NFS4ERR_PERM;
	if ((x->mask & (MDS_SET_ATIME | MDS_SET_MTIME)) && !root && !owner)
		return NFS4ERR_PERM;
	if ((x->mask & (MDS_SET_ATIME_NOW | MDS_SET_MTIME_NOW)) && !root && !owner &&
	    !mds_access(cr, at, ACCESS4_MODIFY))
		return NFS4ERR_ACCESS;
	if ((x->mask & MDS_SET_SIZE) && !root && !owner && !mds_access(cr, at, ACCESS4_MODIFY))
		return NFS4ERR_ACCESS;

	bool chown = ((x->mask & MDS_SET_UID) && x->uid != at->uid) ||
		     ((x->mask & MDS_SET_GID) && x->gid != at->gid);
	bool resize = (x->mask & MDS_SET_SIZE) && x->size != at->size && !root;
	if (!mode_given && at->type == MDS_REG && (chown || resize)) {
		uint32_t m = at->mode & ~(uint32_t)S_ISUID;
		if (m & S_IXGRP)
			m &= ~(uint32_t)S_ISGID; /* without group x it marks locking */
		if (m != at->mode) {
			x->mode = m;
			x->mask |= MDS_SET_MODE;
		}
	}
	return NFS4_OK;
}

static uint32_t setattr_bound(const nfs_argop4 *arg)
{
	(void)arg;
	return 4 + 4 + 4 + 4 * NW; /* resop, status, attrsset */
}

static nfsstat4 op_setattr(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	SETATTR4args *sa = &arg->u.opsetattr;
	struct braid_mds *mds = mds_of(c);
	struct mds_fh fh;
	struct mds_attr at;
	struct mds_cred cr;
	nfsstat4 st = mds_cfh(c, &fh, &at, &cr);
	if (st)
		return st;
	struct mds_setattr_args a;
	memset(&a, 0, sizeof(a));
	struct attr_in in = {.a = &a};
	if ((st = decode_set(c, &sa->obj_attributes, false, &in)))
		return st;
	if (cr.pseudo || !cr.rw)
		return NFS4ERR_ROFS;
	if (a.mask & MDS_SET_SIZE) {
		if (at.type == MDS_DIR)
			return NFS4ERR_ISDIR;
		if (at.type != MDS_REG)
			return NFS4ERR_INVAL;
		if (a.size > MDS_FILE_MAX)
			return NFS4ERR_FBIG;
		/* the stateid matters for size only (§18.30.3) */
		stateid4 sid = sa->stateid;
		if ((st = nfs41_compound_stateid(c, &sid)) ||
		    (st = mds_state_check_io(c, &sid, fh.ino, true)))
			return st;
	}
	if (!(in.bits[0] | in.bits[1] | in.bits[2]))
		return NFS4_OK; /* nothing to set: attrsset is empty */

	struct mds_setattr_how how = {
	    .mode = in.mode, .masked = in.masked, .mm_value = in.mm_value, .mm_mask = in.mm_mask};
	if ((st = mds_setattr_run(mds, &cr, &fh, &at, &a, &how, NULL)))
		return st;
	res->u.opsetattr.attrsset = bitmap_copy(c->arena, in.bits);
	return NFS4_OK;
}

nfsstat4 mds_setattr_run(struct braid_mds *mds, const struct mds_cred *cr, const struct mds_fh *fh,
			 struct mds_attr *at, const struct mds_setattr_args *a,
			 const struct mds_setattr_how *how, struct mds_setattr_res *out)
{
	/* §10.4.4: other clients' read delegations cache these (NFSv3: all) */
	nfsstat4 dst;
	if (at->type == MDS_REG &&
	    (dst = mds_deleg_break_op(mds, fh->ino, cr->clientid, MDS_DELEG_SETATTR)))
		return dst;
	/* a size change changes bytes: an erasure-coded file is unsealed
	 * first (mds/ec.h) */
	int erc;
	if (at->type == MDS_REG && (a->mask & MDS_SET_SIZE) &&
	    (erc = mds_ec_write_begin_ino(mds, fh->ino)))
		return mds_nfs4_status(erc);
	/* The checks read 'at'; the guard makes the change apply to that
	 * version of the inode or not at all, and a race is retried. */
	for (int tries = 0; tries < 16; tries++) {
		struct mds_setattr_args x = *a;
		nfsstat4 st;
		if (how->ctime_guard && (at->ctime.sec != how->ctime_guard->sec ||
					 at->ctime.nsec != how->ctime_guard->nsec))
			return NFS4ERR_NOT_SAME; /* NFSv3's NOT_SYNC (RFC 1813 §3.3.2) */
		if ((st = setattr_check(cr, at, how, &x)))
			return st;
		x.ino = fh->ino;
		x.mask |= MDS_SET_CHANGE_GUARD;
		x.guard = at->change;
		struct mds_setattr_res sr;
		/* before the cut, so that a LAYOUTCOMMIT racing it is checked:
		 * the objects may hold more than the size says (written, not
		 * yet committed), and every size set cuts them */
		if ((x.mask & MDS_SET_SIZE) && at->type == MDS_REG)
			mds_layout_note_shrink(mds, fh->ino);
		int rc = mds_inode_setattr(mds->store, &x, &sr);
		if (rc == -EAGAIN) {
			if ((rc = mds_inode_getattr(mds->store, fh->ino, at)))
				return mds_nfs4_status(rc);
			if (at->generation != fh->gen)
				return NFS4ERR_STALE;
			continue;
		}
		if (rc)
			return mds_nfs4_status(rc);
		*at = sr.attr;
		/* the same size too while RW layouts are out: their writes not
		 * yet committed may lie past it */
		if ((x.mask & MDS_SET_SIZE) &&
		    (sr.old_size != sr.attr.size || mds_layout_rw_held(mds, fh->ino, 0)) &&
		    (rc = mds_data_truncate(mds, &sr.attr, sr.old_size)))
			return mds_nfs4_status(rc);
		if (out)
			*out = sr;
		return NFS4_OK;
	}
	return NFS4ERR_DELAY;
}

/*
 * VERIFY and NVERIFY (RFC 8881 §18.31, §18.15): the client's fattr4 is
 * checked well-formed attribute by attribute, then compared with ours
 * byte for byte (XDR is canonical: equal values, equal bytes).
 */
static int skip_one(struct xdr_dec *d, unsigned n)
{
	union {
		bitmap4 b;
		uint32_t u32;
		uint64_t u64;
		bool b1;
		fsid4 fsid;
		specdata4 sd;
		nfs_fh4 fh;
		utf8str_mixed s;
		nfstime4 t;
		fattr4_fs_layout_types lt;
		fattr4_mdsthreshold th;
	} u;
	switch (n) {
	case FATTR4_SUPPORTED_ATTRS:
	case FATTR4_SUPPATTR_EXCLCREAT:
		return xdr_dec_bitmap4(d, &u.b);
	case FATTR4_TYPE:
	case FATTR4_FH_EXPIRE_TYPE:
	case FATTR4_LEASE_TIME:
	case FATTR4_ACLSUPPORT:
	case FATTR4_MAXLINK:
	case FATTR4_MAXNAME:
	case FATTR4_MODE:
	case FATTR4_NUMLINKS:
	case FATTR4_LAYOUT_BLKSIZE:
	case FATTR4_LAYOUT_ALIGNMENT:
	case FATTR4_CHANGE_ATTR_TYPE:
		return xdr_dec_uint32(d, &u.u32);
	case FATTR4_CHANGE:
	case FATTR4_SIZE:
	case FATTR4_FILEID:
	case FATTR4_FILES_AVAIL:
	case FATTR4_FILES_FREE:
	case FATTR4_FILES_TOTAL:
	case FATTR4_MAXFILESIZE:
	case FATTR4_MAXREAD:
	case FATTR4_MAXWRITE:
	case FATTR4_SPACE_AVAIL:
	case FATTR4_SPACE_FREE:
	case FATTR4_SPACE_TOTAL:
	case FATTR4_SPACE_USED:
	case FATTR4_MOUNTED_ON_FILEID:
		return xdr_dec_uint64(d, &u.u64);
	case FATTR4_LINK_SUPPORT:
	case FATTR4_SYMLINK_SUPPORT:
	case FATTR4_NAMED_ATTR:
	case FATTR4_UNIQUE_HANDLES:
	case FATTR4_CANSETTIME:
	case FATTR4_CASE_INSENSITIVE:
	case FATTR4_CASE_PRESERVING:
	case FATTR4_CHOWN_RESTRICTED:
	case FATTR4_HOMOGENEOUS:
	case FATTR4_NO_TRUNC:
	case FATTR4_XATTR_SUPPORT:
		return xdr_dec_bool(d, &u.b1);
	case FATTR4_FSID:
		return xdr_dec_fsid4(d, &u.fsid);
	case FATTR4_RAWDEV:
		return xdr_dec_specdata4(d, &u.sd);
	case FATTR4_FILEHANDLE:
		return xdr_dec_nfs_fh4(d, &u.fh);
	case FATTR4_OWNER:
	case FATTR4_OWNER_GROUP:
		return xdr_dec_utf8str_mixed(d, &u.s);
	case FATTR4_TIME_ACCESS:
	case FATTR4_TIME_CREATE:
	case FATTR4_TIME_DELTA:
	case FATTR4_TIME_METADATA:
	case FATTR4_TIME_MODIFY:
		return xdr_dec_nfstime4(d, &u.t);
	case FATTR4_FS_LAYOUT_TYPES:
		return xdr_dec_fattr4_fs_layout_types(d, &u.lt);
	case FATTR4_MDSTHRESHOLD:
		return xdr_dec_fattr4_mdsthreshold(d, &u.th);
	}
	return -ENOTSUP;
}

static nfsstat4 verify_same(struct nfs41_compound *c, const fattr4 *in, bool *same)
{
	struct mds_attr a;
	nfsstat4 st = mds_cfh(c, NULL, &a, NULL);
	if (st)
		return st;
	uint32_t s[NW], w[NW] = {0};
	supported_of(c->minorversion, mds_of(c), s);
	for (uint32_t i = 0; i < in->attrmask.len; i++) {
		uint32_t v = in->attrmask.val[i];
		if (i >= NW ? v != 0 : (v & ~s[i]) != 0)
			return NFS4ERR_ATTRNOTSUPP;
		if (i < NW)
			w[i] = v;
	}
	if (has(w, FATTR4_RDATTR_ERROR)) /* §18.31.3 */
		return NFS4ERR_INVAL;
	for (unsigned i = 0; i < NW; i++)
		if (w[i] & attr_wo[i])
			return NFS4ERR_INVAL;
	struct xdr_dec d;
	vals_dec_init(&d, &in->attr_vals, c->arena);
	for (unsigned n = 0; n < 32 * NW; n++) {
		if (!has(w, n))
			continue;
		int rc = skip_one(&d, n);
		if (rc == -ENOTSUP)
			return NFS4ERR_SERVERFAULT;
		if (rc)
			return rc == -ENOMEM ? NFS4ERR_SERVERFAULT : NFS4ERR_BADXDR;
	}
	if (xdr_dec_left(&d))
		return NFS4ERR_BADXDR;
	fattr4 ours;
	struct enc x = {.c = c, .mds = mds_of(c), .a = &a, .fh = c->fh, .fhlen = c->fhlen};
	if ((st = encode_words(&x, w, &ours)))
		return st;
	*same = xdr_opaque_eq(ours.attr_vals, in->attr_vals);
	return NFS4_OK;
}

static nfsstat4 op_verify(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	(void)res;
	bool same = false;
	nfsstat4 st = verify_same(c, &arg->u.opverify.obj_attributes, &same);
	return st ? st : same ? NFS4_OK : NFS4ERR_NOT_SAME;
}

static nfsstat4 op_nverify(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	(void)res;
	bool same = false;
	nfsstat4 st = verify_same(c, &arg->u.opnverify.obj_attributes, &same);
	return st ? st : same ? NFS4ERR_SAME : NFS4_OK;
}

/*
 * ACCESS (RFC 8881 §18.1; the XA bits: RFC 8276 §8.3, NFSv4.2 only).
 * Every defined bit asked for is evaluated, so supported is what was asked.
 */
#define ACCESS41_ALL                                                                               \
	(ACCESS4_READ | ACCESS4_LOOKUP | ACCESS4_MODIFY | ACCESS4_EXTEND | ACCESS4_DELETE |        \
	 ACCESS4_EXECUTE)
#define ACCESS42_ALL (ACCESS41_ALL | ACCESS4_XAREAD | ACCESS4_XAWRITE | ACCESS4_XALIST)

static nfsstat4 op_access(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	uint32_t want = arg->u.opaccess.access;
	uint32_t all = c->minorversion >= 2 ? ACCESS42_ALL : ACCESS41_ALL;
	if (want & ~all)
		return NFS4ERR_INVAL;
	struct mds_attr a;
	struct mds_cred cr;
	nfsstat4 st = mds_cfh(c, NULL, &a, &cr);
	if (st)
		return st;
	ACCESS4resok *ok = &res->u.opaccess.u.resok4;
	ok->supported = want;
	ok->access = mds_access(&cr, &a, want);
	return NFS4_OK;
}

/*
 * Extended attributes (RFC 8276 §8.4).  Names travel without a namespace
 * (the Linux client maps them to and from "user.") and are stored as sent.
 * As Linux's user namespace: only regular files and directories carry
 * them, and in a sticky directory only the owner (or root) changes them.
 */
static nfsstat4 xattr_name(const xattrkey4 *k)
{
	if (k->len == 0 || memchr(k->val, 0, k->len))
		return NFS4ERR_INVAL;
	if (k->len > MDS_XATTR_NAME_MAX)
		return NFS4ERR_NAMETOOLONG;
	return NFS4_OK;
}

static bool xattr_type_ok(const struct mds_attr *a)
{
	return a->type == MDS_REG || a->type == MDS_DIR;
}

/* The current fh for a change of its xattrs: ROFS, type and permission. */
static nfsstat4 xattr_writable(struct nfs41_compound *c, struct mds_fh *fh, struct mds_attr *a)
{
	struct mds_cred cr;
	nfsstat4 st = mds_cfh(c, fh, a, &cr);
	if (st)
		return st;
	if (cr.pseudo || !cr.rw)
		return NFS4ERR_ROFS;
	if (!xattr_type_ok(a))
		return NFS4ERR_PERM;
	if (a->type == MDS_DIR && (a->mode & S_ISVTX) && cr.uid != 0 && cr.uid != a->uid)
		return NFS4ERR_PERM;
	if (!mds_access(&cr, a, ACCESS4_XAWRITE))
		return NFS4ERR_ACCESS;
	return NFS4_OK;
}

static nfsstat4 op_getxattr(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	const xattrkey4 *k = &arg->u.opgetxattr.gxa_name;
	struct braid_mds *mds = mds_of(c);
	struct mds_fh fh;
	struct mds_attr a;
	struct mds_cred cr;
	nfsstat4 st = mds_cfh(c, &fh, &a, &cr);
	if (st || (st = xattr_name(k)))
		return st;
	if (!mds_access(&cr, &a, ACCESS4_XAREAD))
		return NFS4ERR_ACCESS;
	if (!xattr_type_ok(&a))
		return NFS4ERR_NOXATTR;
	size_t size = 1024, len = 0;
	for (int tries = 0; tries < 8; tries++) {
		uint8_t *buf = xdr_arena_alloc(c->arena, size);
		if (!buf)
			return NFS4ERR_SERVERFAULT;
		int rc = mds_xattr_get(mds->store, fh.ino, (const char *)k->val, k->len, buf, size,
				       &len);
		if (rc == -ERANGE) {
			size = len; /* grew meanwhile or bigger than the first try */
			continue;
		}
		if (rc)
			return rc == -ENODATA ? NFS4ERR_NOXATTR : mds_nfs4_status(rc);
		res->u.opgetxattr.u.gxr_value = xdr_opaque_of(buf, len);
		return NFS4_OK;
	}
	return NFS4ERR_DELAY;
}

/* change_info4 of an xattr change: before from the check, after re-read. */
static void xattr_cinfo(struct braid_mds *mds, uint64_t ino, uint64_t before, change_info4 *ci)
{
	struct mds_attr after;
	ci->atomic = false;
	ci->before = before;
	ci->after = mds_inode_getattr(mds->store, ino, &after) ? before + 1 : after.change;
}

static uint32_t xattr_change_bound(const nfs_argop4 *arg)
{
	(void)arg;
	return 4 + 4 + 4 + 8 + 8; /* resop, status, change_info4 */
}

static nfsstat4 op_setxattr(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	const SETXATTR4args *sa = &arg->u.opsetxattr;
	struct braid_mds *mds = mds_of(c);
	unsigned flags;
	switch (sa->sxa_option) {
	case SETXATTR4_EITHER:
		flags = 0;
		break;
	case SETXATTR4_CREATE:
		flags = MDS_XATTR_CREATE;
		break;
	case SETXATTR4_REPLACE:
		flags = MDS_XATTR_REPLACE;
		break;
	default:
		return NFS4ERR_INVAL;
	}
	struct mds_fh fh;
	struct mds_attr a;
	nfsstat4 st = xattr_writable(c, &fh, &a);
	if (st || (st = xattr_name(&sa->sxa_key)))
		return st;
	if (sa->sxa_value.len > MDS_XATTR_VALUE_MAX)
		return NFS4ERR_XATTR2BIG;
	/* RFC 8276 §6.2: the change attribute moves, which delegations cache */
	if (a.type == MDS_REG && (st = mds_deleg_break_op(mds, fh.ino, c->clientid, MDS_DELEG_XATTR)))
		return st;
	struct mds_xattr_args xa = {
	    .ino = fh.ino,
	    .name = (const char *)sa->sxa_key.val,
	    .name_len = sa->sxa_key.len,
	    .value = sa->sxa_value.val,
	    .value_len = sa->sxa_value.len,
	    .flags = flags,
	};
	int rc = mds_xattr_set(mds->store, &xa);
	if (rc)
		return rc == -ENODATA ? NFS4ERR_NOXATTR : mds_nfs4_status(rc);
	xattr_cinfo(mds, fh.ino, a.change, &res->u.opsetxattr.u.sxr_info);
	return NFS4_OK;
}

static nfsstat4 op_removexattr(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	const xattrkey4 *k = &arg->u.opremovexattr.rxa_name;
	struct braid_mds *mds = mds_of(c);
	struct mds_fh fh;
	struct mds_attr a;
	nfsstat4 st = xattr_writable(c, &fh, &a);
	if (st || (st = xattr_name(k)))
		return st;
	if (a.type == MDS_REG && (st = mds_deleg_break_op(mds, fh.ino, c->clientid, MDS_DELEG_XATTR)))
		return st;
	struct mds_xattr_args xa = {
	    .ino = fh.ino, .name = (const char *)k->val, .name_len = k->len};
	int rc = mds_xattr_remove(mds->store, &xa);
	if (rc)
		return rc == -ENODATA ? NFS4ERR_NOXATTR : mds_nfs4_status(rc);
	xattr_cinfo(mds, fh.ino, a.change, &res->u.opremovexattr.u.rxr_info);
	return NFS4_OK;
}

/*
 * LISTXATTRS (RFC 8276 §8.4.3).  Names come in byte order; a cookie is the
 * count of names before the next one to return.  lxa_maxcount bounds the
 * whole LISTXATTRS4resok: cookie, array count, the names, eof.
 */
#define LIST_FIXED (8 + 4 + 4)

struct list_walk {
	struct xdr_arena *arena;
	uint64_t cookie, idx; /* names to skip; names seen */
	uint32_t room;	      /* bytes left for names */
	xattrkey4 *names;
	uint32_t n, cap;
	bool full, nomem;
};

static int list_one(void *arg, const char *name, size_t len)
{
	struct list_walk *w = arg;
	if (w->idx++ < w->cookie)
		return 0;
	uint64_t cost = 4 + ((len + 3) & ~(size_t)3);
	if (cost > w->room) {
		w->full = true;
		return 1;
	}
	if (w->n == w->cap) {
		uint32_t cap = w->cap ? 2 * w->cap : 16;
		xattrkey4 *v = xdr_arena_alloc(w->arena, cap * sizeof(*v));
		if (!v) {
			w->nomem = true;
			return 1;
		}
		if (w->n)
			memcpy(v, w->names, w->n * sizeof(*v));
		w->names = v;
		w->cap = cap;
	}
	uint8_t *p = xdr_arena_alloc(w->arena, len ? len : 1); /* the name lives in a txn */
	if (!p) {
		w->nomem = true;
		return 1;
	}
	memcpy(p, name, len);
	w->names[w->n++] = xdr_opaque_of(p, len);
	w->room -= (uint32_t)cost;
	return 0;
}

static nfsstat4 op_listxattrs(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	const LISTXATTRS4args *la = &arg->u.oplistxattrs;
	struct braid_mds *mds = mds_of(c);
	struct mds_fh fh;
	struct mds_attr a;
	struct mds_cred cr;
	nfsstat4 st = mds_cfh(c, &fh, &a, &cr);
	if (st)
		return st;
	if (!mds_access(&cr, &a, ACCESS4_XALIST))
		return NFS4ERR_ACCESS;
	if (la->lxa_maxcount < LIST_FIXED)
		return NFS4ERR_TOOSMALL;
	LISTXATTRS4resok *ok = &res->u.oplistxattrs.u.lxr_value;
	struct list_walk w = {
	    .arena = c->arena,
	    .cookie = la->lxa_cookie,
	    .room = la->lxa_maxcount - LIST_FIXED,
	};
	if (xattr_type_ok(&a)) {
		int rc = mds_xattr_list(mds->store, fh.ino, list_one, &w);
		if (w.nomem)
			return NFS4ERR_SERVERFAULT;
		if (rc < 0)
			return mds_nfs4_status(rc);
	}
	if (!w.full && la->lxa_cookie > w.idx)
		return NFS4ERR_BAD_COOKIE; /* past the end: never handed out */
	if (w.full && w.n == 0)
		return NFS4ERR_TOOSMALL;
	ok->lxr_cookie = la->lxa_cookie + w.n;
	ok->lxr_names.len = w.n;
	ok->lxr_names.val = w.names;
	ok->lxr_eof = !w.full;
	return NFS4_OK;
}

const struct mds_opdef mds_ops_attr[] = {
    {OP_ACCESS, {.fn = op_access, .flags = NFS41_OP_NEEDS_FH | NFS41_OP_INLINE}},
    {OP_GETATTR, {.fn = op_getattr, .flags = NFS41_OP_NEEDS_FH | NFS41_OP_INLINE}},
    {OP_SETATTR, {.fn = op_setattr, .flags = NFS41_OP_NEEDS_FH, .res_bound = setattr_bound}},
    {OP_VERIFY, {.fn = op_verify, .flags = NFS41_OP_NEEDS_FH}},
    {OP_NVERIFY, {.fn = op_nverify, .flags = NFS41_OP_NEEDS_FH}},
    {OP_GETXATTR, {.fn = op_getxattr, .flags = NFS41_OP_NEEDS_FH}},
    {OP_SETXATTR, {.fn = op_setxattr, .flags = NFS41_OP_NEEDS_FH, .res_bound = xattr_change_bound}},
    {OP_LISTXATTRS, {.fn = op_listxattrs, .flags = NFS41_OP_NEEDS_FH}},
    {OP_REMOVEXATTR,
     {.fn = op_removexattr, .flags = NFS41_OP_NEEDS_FH, .res_bound = xattr_change_bound}},
    {0},
};
