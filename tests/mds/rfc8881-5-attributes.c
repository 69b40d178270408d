/* SPDX-License-Identifier: MIT */
/*
 * File attributes (RFC 8881 §5): GETATTR of every supported attribute on a
 * directory, a file, a symlink, a device and the root, through two exports
 * and as NFSv4.1 and 4.2: supported_attrs lists exactly what a GETATTR of
 * everything returns (each attribute decodes, nothing is left over), the
 * REQUIRED ones are there, 4.2's only in 4.2; unsupported attributes asked
 * for are left out, write-only ones are NFS4ERR_INVAL; types, numeric
 * owners (§5.9), fileid, filehandle, rawdev are the object's; one fsid for
 * the whole namespace, the same after a restart; change moves on every
 * change of the object and never goes back.
 */
#include "config.h"

#include "tests/mds/attr-test.h"

static bitmap4 readable(struct xdr_arena *arena, const bitmap4 *supp)
{
	uint32_t *w = xdr_arena_alloc(arena, 4 * sizeof(uint32_t));
	CHECK(w && supp->len <= 4);
	memcpy(w, supp->val, supp->len * sizeof(uint32_t));
	unsigned wo[] = {FATTR4_TIME_ACCESS_SET, FATTR4_TIME_MODIFY_SET, FATTR4_MODE_SET_MASKED,
			 FATTR4_MODE_UMASK};
	for (unsigned i = 0; i < 4; i++)
		if (wo[i] / 32 < supp->len)
			w[wo[i] / 32] &= ~(1u << (wo[i] % 32));
	return (bitmap4){.len = supp->len, .val = w};
}

/* Everything the server says it supports, plus bits it does not know. */
static bitmap4 everything(struct xdr_arena *arena, const bitmap4 *readable)
{
	uint32_t *w = xdr_arena_alloc(arena, 4 * sizeof(uint32_t));
	CHECK(w);
	memcpy(w, readable->val, readable->len * sizeof(uint32_t));
	w[0] |= 1u << FATTR4_ACL | 1u << FATTR4_ARCHIVE | 1u << FATTR4_HIDDEN;
	w[1] |= 1u << (FATTR4_MIMETYPE - 32) | 1u << (FATTR4_QUOTA_USED - 32);
	w[2] |= 1u << (FATTR4_SEC_LABEL - 64) | 1u << 31;
	w[3] = 0x80000001u;
	return (bitmap4){.len = 4, .val = w};
}

static void check_mask_is(const bitmap4 *got, const bitmap4 *want)
{
	for (unsigned n = 0; n < 128; n++)
		if (at_has(got, n) != at_has(want, n)) {
			fprintf(stderr, "attribute %u: returned %d, expected %d\n", n,
				at_has(got, n), at_has(want, n));
			CHECK(0);
		}
}

struct obj {
	const char *what;
	uint64_t ino;
	uint32_t export_id;
	uint8_t type;
};

/*
 * mdsthreshold (RFC 8881 §5.12.15): one flexfiles item whose only hint is
 * threshold4_write_size, want (big-endian length4, the hint list's one
 * value), the size under which Linux writes a file through the MDS.
 */
/* The one hint's value: the hint list's 8 bytes, big-endian. */
static uint64_t hint_value(const threshold_item4 *it)
{
	CHECK_EQ(it->thi_hintlist.len, 8);
	uint64_t v = 0;
	for (unsigned i = 0; i < 8; i++)
		v = v << 8 | ((const uint8_t *)it->thi_hintlist.val)[i];
	return v;
}

static void check_threshold(const struct at_attrs *g, uint64_t want)
{
	CHECK(at_has(&g->mask, FATTR4_MDSTHRESHOLD));
	CHECK_EQ(g->mdsthreshold.mth_hints.len, 1);
	const threshold_item4 *it = &g->mdsthreshold.mth_hints.val[0];
	CHECK_EQ(it->thi_layout_type, LAYOUT4_FLEX_FILES);
	CHECK_EQ(it->thi_hintset.len, 1);
	CHECK_EQ(it->thi_hintset.val[0], 1u << TH4_WRITE_SIZE);
	CHECK_EQ(hint_value(it), want);
}

/* Restarts t's MDS with its config plus line: whether it offers mdsthreshold
 * (supported_attrs, 4.1 and 4.2), and its value on fh when it does. */
static bool threshold_after(struct mt *t, struct at *a, const char *line, uint64_t file,
			    uint32_t export_id, struct xdr_arena *arena, uint64_t *value)
{
	static char base[20000];
	if (!base[0]) { /* the config as mt_prepare wrote it, once */
		FILE *f = fopen(t->conf_path, "r");
		CHECK(f);
		size_t n = fread(base, 1, sizeof(base) - 1, f);
		CHECK(n > 0 && n < sizeof(base) - 1 && fclose(f) == 0);
		base[n] = 0;
	}
	char conf[sizeof(base) + 128];
	snprintf(conf, sizeof(conf), "%s%s", base, line);
	at_close(a);
	mt_stop(t);
	mt_write_file(t->conf_path, conf, 0644);
	mt_boot(t);
	at_open(a, t, "attrs-threshold");
	nfs_fh4 fh = at_fh(t, arena, file, export_id);
	bool on[3] = {false, false, false};
	for (uint32_t minor = 1; minor <= 2; minor++) {
		struct at_attrs g;
		CHECK_EQ(at_get(a, minor, &at_root, &fh,
				mt_bitmap(arena, FATTR4_SUPPORTED_ATTRS, FATTR4_MDSTHRESHOLD, -1), arena,
				&g),
			 NFS4_OK);
		on[minor] = at_has(&g.supported, FATTR4_MDSTHRESHOLD);
		/* asked for but not supported: left out of the answer */
		CHECK_EQ(at_has(&g.mask, FATTR4_MDSTHRESHOLD), on[minor]);
		if (on[minor]) {
			CHECK_EQ(g.mdsthreshold.mth_hints.len, 1);
			*value = hint_value(&g.mdsthreshold.mth_hints.val[0]);
		}
	}
	CHECK_EQ(on[1], on[2]);
	return on[1];
}

int main(void)
{
	struct mt t;
	mt_start(&t, "/ *(rw,no_root_squash,insecure)\n/data *(rw,no_root_squash,insecure)\n",
		 NULL);
	struct mds_store *st = braid_mds_store(t.mds);
	uint8_t ab[1 << 16];
	struct xdr_arena arena;
	xdr_arena_init(&arena, ab, sizeof(ab), 64u << 20);
	struct at a;
	at_open(&a, &t, "attrs");

	uint32_t root_id = at_export_id(&t, "/"), data_id = at_export_id(&t, "/data");
	uint64_t root = mds_store_root(st), data = at_export_root(&t, "/data");
	uint64_t dir = at_make(&t, data, "dir", MDS_DIR, 0750, 1000, 100);
	uint64_t file = at_make(&t, dir, "file", MDS_REG, 0640, 1000, 100);
	uint64_t lnk = at_make(&t, dir, "link", MDS_LNK, 0777, 1001, 101);
	uint64_t chr = at_make(&t, root, "tty", MDS_CHR, 0620, 0, 5);
	struct obj objs[] = {
	    {"root", root, root_id, MDS_DIR}, {"data", data, data_id, MDS_DIR},
	    {"dir", dir, data_id, MDS_DIR},   {"file", file, data_id, MDS_REG},
	    {"link", lnk, data_id, MDS_LNK},  {"chr", chr, root_id, MDS_CHR},
	};

	/* supported_attrs, 4.1 and 4.2 */
	struct at_attrs s41, s42;
	nfs_fh4 rootfh = at_fh(&t, &arena, root, root_id);
	CHECK_EQ(at_get(&a, 1, &at_root, &rootfh,
			mt_bitmap(&arena, FATTR4_SUPPORTED_ATTRS, FATTR4_SUPPATTR_EXCLCREAT, -1),
			&arena, &s41),
		 NFS4_OK);
	CHECK_EQ(at_get(&a, 2, &at_root, &rootfh,
			mt_bitmap(&arena, FATTR4_SUPPORTED_ATTRS, FATTR4_SUPPATTR_EXCLCREAT, -1),
			&arena, &s42),
		 NFS4_OK);
	static const int required[] = {
	    FATTR4_SUPPORTED_ATTRS,
	    FATTR4_TYPE,
	    FATTR4_FH_EXPIRE_TYPE,
	    FATTR4_CHANGE,
	    FATTR4_SIZE,
	    FATTR4_LINK_SUPPORT,
	    FATTR4_SYMLINK_SUPPORT,
	    FATTR4_NAMED_ATTR,
	    FATTR4_FSID,
	    FATTR4_UNIQUE_HANDLES,
	    FATTR4_LEASE_TIME,
	    FATTR4_RDATTR_ERROR,
	    FATTR4_FILEHANDLE,
	    FATTR4_SUPPATTR_EXCLCREAT,
	    /* RECOMMENDED ones the Linux client asks for */
	    FATTR4_FILEID,
	    FATTR4_MODE,
	    FATTR4_NUMLINKS,
	    FATTR4_OWNER,
	    FATTR4_OWNER_GROUP,
	    FATTR4_RAWDEV,
	    FATTR4_SPACE_USED,
	    FATTR4_TIME_ACCESS,
	    FATTR4_TIME_METADATA,
	    FATTR4_TIME_MODIFY,
	    FATTR4_MOUNTED_ON_FILEID,
	    FATTR4_FILES_AVAIL,
	    FATTR4_FILES_FREE,
	    FATTR4_FILES_TOTAL,
	    FATTR4_SPACE_AVAIL,
	    FATTR4_SPACE_FREE,
	    FATTR4_SPACE_TOTAL,
	    FATTR4_MAXFILESIZE,
	    FATTR4_MAXNAME,
	    FATTR4_MAXREAD,
	    FATTR4_MAXWRITE,
	    FATTR4_TIME_DELTA,
	    FATTR4_FS_LAYOUT_TYPES,
	    FATTR4_LAYOUT_BLKSIZE,
	    FATTR4_TIME_ACCESS_SET,
	    FATTR4_TIME_MODIFY_SET,
	    FATTR4_CANSETTIME,
	};
	for (unsigned i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
		if (!at_has(&s41.supported, (unsigned)required[i]))
			fprintf(stderr, "attribute %d not supported\n", required[i]);
		CHECK(at_has(&s41.supported, (unsigned)required[i]));
		CHECK(at_has(&s42.supported, (unsigned)required[i]));
	}
	const int only42[] = {FATTR4_CHANGE_ATTR_TYPE, FATTR4_XATTR_SUPPORT, FATTR4_MODE_UMASK};
	for (unsigned i = 0; i < 3; i++) {
		CHECK(!at_has(&s41.supported, (unsigned)only42[i]));
		CHECK(at_has(&s42.supported, (unsigned)only42[i]));
	}
	CHECK(!at_has(&s42.supported, FATTR4_ACL));
	/* exclusive-create attributes are settable ones, and supported */
	CHECK(at_has(&s42.exclcreat, FATTR4_MODE) && at_has(&s42.exclcreat, FATTR4_OWNER));
	CHECK(!at_has(&s42.exclcreat, FATTR4_TYPE) && !at_has(&s42.exclcreat, FATTR4_CHANGE));
	for (unsigned n = 0; n < 96; n++)
		if (at_has(&s41.exclcreat, n))
			CHECK(at_has(&s41.supported, n));

	/* GETATTR of everything, on each object, both minor versions */
	fsid4 fsid = {0, 0};
	for (uint32_t minor = 1; minor <= 2; minor++) {
		const bitmap4 *supp = minor == 1 ? &s41.supported : &s42.supported;
		bitmap4 rd = readable(&arena, supp), all = everything(&arena, &rd);
		for (unsigned i = 0; i < sizeof(objs) / sizeof(objs[0]); i++) {
			struct obj *o = &objs[i];
			struct mds_attr m = at_stat(&t, o->ino);
			nfs_fh4 fh = at_fh(&t, &arena, o->ino, o->export_id);
			struct at_attrs g;
			CHECK_EQ(at_get(&a, minor, &at_root, &fh, all, &arena, &g), NFS4_OK);
			check_mask_is(&g.mask, &rd); /* exactly the supported ones */
			CHECK_EQ(g.type, o->type);
			CHECK_EQ(g.fileid, o->ino);
			CHECK_EQ(g.mounted_on_fileid, o->ino);
			CHECK_EQ(g.mode, m.mode);
			CHECK_EQ(g.numlinks, m.nlink);
			CHECK_EQ(g.size, m.size);
			CHECK_EQ(g.change, m.change);
			char id[16];
			snprintf(id, sizeof(id), "%u", m.uid);
			CHECK(strcmp(g.owner, id) == 0);
			snprintf(id, sizeof(id), "%u", m.gid);
			CHECK(strcmp(g.group, id) == 0);
			CHECK(xdr_opaque_eq(g.fh, fh));
			CHECK_EQ(g.fh_expire_type, FH4_PERSISTENT);
			CHECK_EQ(g.lease_time, 90);
			CHECK_EQ(g.rdattr_error, NFS4_OK);
			CHECK(g.link_support && g.symlink_support && !g.named_attr);
			CHECK(!g.unique_handles); /* two exports: a moved file has two handles */
			CHECK(g.cansettime && !g.case_insensitive && g.case_preserving);
			CHECK(g.chown_restricted && g.homogeneous && g.no_trunc);
			CHECK_EQ(g.maxname, 255);
			CHECK_EQ(g.maxread, 1 << 20);
			CHECK_EQ(g.maxwrite, 1 << 20);
			CHECK(g.maxfilesize >= (1ull << 40));
			CHECK(g.files_avail <= g.files_free && g.files_free <= g.files_total);
			CHECK(g.space_avail <= g.space_total);
			/* flexfiles is offered exactly when LAYOUTGET is served */
			if (t.mds->ops[OP_LAYOUTGET].fn) {
				CHECK_EQ(g.layout_types.len, 1);
				CHECK_EQ(g.layout_types.val[0], LAYOUT4_FLEX_FILES);
			} else {
				CHECK_EQ(g.layout_types.len, 0);
			}
			CHECK_EQ(g.layout_blksize, 1 << 20);
			CHECK(g.delta.seconds == 0 && g.delta.nseconds > 0);
			CHECK_EQ(g.mtime.seconds, m.mtime.sec);
			CHECK_EQ(g.mtime.nseconds, m.mtime.nsec);
			CHECK_EQ(g.ctime.seconds, m.ctime.sec);
			CHECK_EQ(g.atime.seconds, m.atime.sec);
			CHECK_EQ(g.btime.seconds, m.btime.sec);
			if (o->type == MDS_CHR)
				CHECK(g.rawdev.specdata1 == 5 && g.rawdev.specdata2 == 1);
			check_threshold(&g, 1 << 20); /* small_file_threshold's default */
			if (minor == 2) {
				CHECK_EQ(g.change_attr_type, NFS4_CHANGE_TYPE_IS_MONOTONIC_INCR);
				CHECK(g.xattr_support);
			}
			/* one fsid, whichever export and object */
			if (!fsid.major && !fsid.minor)
				fsid = g.fsid;
			CHECK(g.fsid.major == fsid.major && g.fsid.minor == fsid.minor);
		}
	}
	CHECK(fsid.major || fsid.minor);

	/* the pseudo-filesystem view of the root: same fsid */
	{
		nfs_fh4 pfh = at_fh(&t, &arena, root, 0);
		struct at_attrs g;
		CHECK_EQ(
		    at_get(&a, 1, &at_root, &pfh, mt_bitmap(&arena, FATTR4_FSID, -1), &arena, &g),
		    NFS4_OK);
		CHECK(g.fsid.major == fsid.major && g.fsid.minor == fsid.minor);
	}

	/* write-only attributes cannot be read (§18.7.3) */
	nfs_fh4 filefh = at_fh(&t, &arena, file, data_id);
	CHECK_EQ(at_get(&a, 1, &at_root, &filefh, mt_bitmap(&arena, FATTR4_TIME_ACCESS_SET, -1),
			&arena, NULL),
		 NFS4ERR_INVAL);
	CHECK_EQ(at_get(&a, 2, &at_root, &filefh,
			mt_bitmap(&arena, FATTR4_SIZE, FATTR4_MODE_SET_MASKED, -1), &arena, NULL),
		 NFS4ERR_INVAL);
	/* mode_umask does not exist in 4.1: left out, not an error */
	{
		struct at_attrs g;
		CHECK_EQ(at_get(&a, 1, &at_root, &filefh,
				mt_bitmap(&arena, FATTR4_SIZE, FATTR4_MODE_UMASK, -1), &arena, &g),
			 NFS4_OK);
		check_mask_is(&g.mask, &(bitmap4){1, (uint32_t[]){1u << FATTR4_SIZE}});
	}
	/* an empty request is an empty answer */
	{
		struct at_attrs g;
		CHECK_EQ(at_get(&a, 1, &at_root, &filefh, (bitmap4){0, NULL}, &arena, &g), NFS4_OK);
		CHECK_EQ(g.mask.len, 0);
	}

	/* change moves on every change and never goes back (§5.8.1.4) */
	bitmap4 ch = mt_bitmap(&arena, FATTR4_CHANGE, FATTR4_TIME_METADATA, -1);
	struct at_attrs g0, g1;
	CHECK_EQ(at_get(&a, 2, &at_root, &filefh, ch, &arena, &g0), NFS4_OK);
	struct mds_setattr_args sa = {.ino = file, .mask = MDS_SET_MODE, .mode = 0600};
	CHECK(mds_inode_setattr(st, &sa, NULL) == 0);
	CHECK_EQ(at_get(&a, 2, &at_root, &filefh, ch, &arena, &g1), NFS4_OK);
	CHECK(g1.change > g0.change);
	struct mds_xattr_args xa = {
	    .ino = file, .name = "k", .name_len = 1, .value = "v", .value_len = 1};
	CHECK(mds_xattr_set(st, &xa) == 0);
	CHECK_EQ(at_get(&a, 2, &at_root, &filefh, ch, &arena, &g0), NFS4_OK);
	CHECK(g0.change > g1.change);
	nfs_fh4 dirfh = at_fh(&t, &arena, dir, data_id);
	CHECK_EQ(at_get(&a, 2, &at_root, &dirfh, ch, &arena, &g0), NFS4_OK);
	at_make(&t, dir, "another", MDS_REG, 0644, 0, 0);
	CHECK_EQ(at_get(&a, 2, &at_root, &dirfh, ch, &arena, &g1), NFS4_OK);
	CHECK(g1.change > g0.change);
	struct mds_link_args la = {.ino = file, .dir = data, .name = "hard", .name_len = 4};
	CHECK_EQ(at_get(&a, 2, &at_root, &filefh,
			mt_bitmap(&arena, FATTR4_CHANGE, FATTR4_NUMLINKS, -1), &arena, &g0),
		 NFS4_OK);
	CHECK(mds_dir_link(st, &la, NULL) == 0);
	CHECK_EQ(at_get(&a, 2, &at_root, &filefh,
			mt_bitmap(&arena, FATTR4_CHANGE, FATTR4_NUMLINKS, -1), &arena, &g1),
		 NFS4_OK);
	CHECK(g1.change > g0.change);
	CHECK_EQ(g1.numlinks, g0.numlinks + 1);

	/* the fsid and change survive a restart */
	uint64_t change_before = g1.change;
	at_close(&a);
	mt_stop(&t);
	mt_boot(&t);
	at_open(&a, &t, "attrs-again");
	filefh = at_fh(&t, &arena, file, data_id);
	CHECK_EQ(at_get(&a, 1, &at_root, &filefh, mt_bitmap(&arena, FATTR4_FSID, FATTR4_CHANGE, -1),
			&arena, &g0),
		 NFS4_OK);
	CHECK(g0.fsid.major == fsid.major && g0.fsid.minor == fsid.minor);
	CHECK_EQ(g0.change, change_before);

	/* one export: handles are unique */
	at_close(&a);
	mt_stop(&t);
	mt_write_file(t.exports_path, "/data *(rw,no_root_squash,insecure)\n", 0644);
	mt_boot(&t);
	at_open(&a, &t, "attrs-one");
	filefh = at_fh(&t, &arena, file, at_export_id(&t, "/data"));
	CHECK_EQ(at_get(&a, 1, &at_root, &filefh, mt_bitmap(&arena, FATTR4_UNIQUE_HANDLES, -1),
			&arena, &g0),
		 NFS4_OK);
	CHECK(g0.unique_handles);

	/* mdsthreshold follows small_file_threshold, and only while the MDS
	 * serves file data (data_io = proxy) */
	{
		uint32_t did = at_export_id(&t, "/data");
		uint64_t v = 0;
		CHECK(threshold_after(&t, &a, "small_file_threshold = 64k\n", file, did, &arena, &v));
		CHECK_EQ(v, 64 << 10);
		CHECK(!threshold_after(&t, &a, "small_file_threshold = 0\n", file, did, &arena, &v));
		CHECK(threshold_after(&t, &a, "small_file_threshold = 3m\n", file, did, &arena, &v));
		CHECK_EQ(v, 3 << 20);
		CHECK(!threshold_after(&t, &a, "data_io = refuse\n", file, did, &arena, &v));
	}

	at_close(&a);
	xdr_arena_release(&arena);
	mt_finish(&t);
	return 0;
}
