/* SPDX-License-Identifier: MIT */
/*
 * client/ffclient against braid-mds and two braid-ds in this process: files
 * of several sizes written (one large pwrite, or many small unaligned
 * ones), fsynced, closed, reopened and read back whole and in pieces; the
 * bytes end up in the file's object on a data server (ds_ctl_stat).
 *
 * Which path carries the data depends on the MDS, and each round asserts
 * the one its op table says (mds->ops[OP_LAYOUTGET].fn):
 *  - LAYOUTGET served: the client asks for flexfiles layouts (RFC 8881
 *    §18.43, RFC 8435) and every byte goes straight to the data servers
 *    (the client's per-device counters), none through the MDS, with
 *    GETDEVICEINFO, LAYOUTCOMMIT and LAYOUTRETURN on the way;
 *  - not served: the MDS's fs_layout_types is empty, so the client (as
 *    Linux) never asks and all I/O goes through the MDS; and a client made
 *    to ask anyway gets NFS4ERR_NOTSUPP and falls back to the MDS for the
 *    very I/O that asked.
 * The suite runs with the MDS as built, then again with LAYOUTGET taken
 * out of the MDS's op table after start: fs_layout_types (built from that
 * table) then lacks flexfiles, so the fallback path is proven whatever the
 * build has.  (The session layer dispatches from its own copy of the
 * table, so the NOTSUPP answer to a forced LAYOUTGET is checked only when
 * the build itself has no LAYOUTGET.)
 * Plus the open paths: EXCLUSIVE4_1 on an existing name (EEXIST), no
 * CREATE on a missing one (ENOENT), UNCHECKED4 with size 0 (truncation),
 * TRUNC without CREATE (SETATTR), a directory (EISDIR), and REMOVE.
 */
#include "config.h"

#include "tests/mds/mds-ds-test.h"
#include "client/ffclient.h"

#define MiB (1u << 20)

static struct mt M;
static struct cds A, B;

/* The object of path's file on its data server: its size (-1: none). */
static int64_t obj_size(const char *dir, const char *name)
{
	struct mds_store *s = braid_mds_store(M.mds);
	uint64_t dino, ino;
	CHECK_EQ(mds_dir_lookup(s, mds_store_root(s), dir, strlen(dir), &dino, NULL), 0);
	struct cfile f;
	CHECK_EQ(mds_dir_lookup(s, dino, name, strlen(name), &ino, &f.attr), 0);
	struct mds_layout_seg seg;
	if (mds_layout_get(s, ino, 0, &seg))
		return -1;
	CHECK(seg.nds >= 1);
	struct cds *d = seg.ds[0] == A.id ? &A : seg.ds[0] == B.id ? &B : NULL;
	CHECK(d);
	uint64_t size;
	CHECK_EQ(cl_obj_stat(&M, d, &f, &size), 0);
	return (int64_t)size;
}

/* Write size bytes (seed) as one pwrite or as unaligned pieces, fsync,
 * close; read back in full and at odd offsets; the object holds them. */
static void one_file(struct ffc *c, const char *dir, const char *name, uint64_t size, unsigned seed,
		     bool pieces)
{
	char path[128];
	snprintf(path, sizeof(path), "/%s/%s", dir, name);
	uint8_t *buf = malloc(size + 1), *rb = malloc(size + 4096);
	CHECK(buf && rb);
	dt_fill(buf, 0, size, seed);
	int err = 0;
	struct ffc_file *f = ffc_open(c, path, FFC_RDWR | FFC_CREAT | FFC_EXCL, 0644, &err);
	if (!f)
		fprintf(stderr, "open %s: %s\n", path, strerror(-err));
	CHECK(f);
	if (pieces) {
		/* 100 KiB + 3 at a time: every RPC boundary unaligned */
		for (uint64_t off = 0; off < size;) {
			uint64_t n = size - off < 102403 ? size - off : 102403;
			CHECK_EQ(ffc_pwrite(f, buf + off, n, off), (ssize_t)n);
			off += n;
		}
	} else if (size) {
		CHECK_EQ(ffc_pwrite(f, buf, size, 0), (ssize_t)size);
	}
	CHECK_EQ(ffc_file_size(f), size);
	CHECK_EQ(ffc_fsync(f), 0);
	CHECK_EQ(ffc_close(f), 0);

	f = ffc_open(c, path, FFC_RDONLY, 0, &err);
	CHECK(f);
	CHECK_EQ(ffc_file_size(f), size); /* the MDS's size: LAYOUTCOMMIT reached it */
	memset(rb, 0xa5, size + 4096);
	CHECK_EQ(ffc_pread(f, rb, size + 4096, 0), (ssize_t)size);
	CHECK(dt_check(rb, 0, size, seed));
	if (size > 7) {
		uint64_t off = size / 3 + 1, n = size / 2;
		CHECK_EQ(ffc_pread(f, rb, n, off), (ssize_t)n);
		CHECK(dt_check(rb, off, n, seed));
	}
	CHECK_EQ(ffc_pread(f, rb, 10, size), 0); /* at the end of the file */
	CHECK_EQ(ffc_pwrite(f, buf, 1, 0), -EBADF);
	CHECK_EQ(ffc_close(f), 0);
	if (size)
		CHECK_EQ(obj_size(dir, name), (int64_t)size);
	free(buf);
	free(rb);
}

static void open_paths(struct ffc *c, const char *dir)
{
	int err = 0;
	uint8_t b[5000];
	char p[64];
	snprintf(p, sizeof(p), "/%s/f1", dir);
	CHECK(!ffc_open(c, p, FFC_RDWR | FFC_CREAT | FFC_EXCL, 0644, &err));
	CHECK_EQ(err, -EEXIST);
	snprintf(p, sizeof(p), "/%s/nope", dir);
	CHECK(!ffc_open(c, p, FFC_RDONLY, 0, &err));
	CHECK_EQ(err, -ENOENT);
	CHECK(!ffc_open(c, "/nodir/x", FFC_RDWR | FFC_CREAT, 0644, &err));
	CHECK_EQ(err, -ENOENT);
	snprintf(p, sizeof(p), "/%s", dir);
	CHECK(!ffc_open(c, p, FFC_RDONLY, 0, &err));
	CHECK_EQ(err, -EISDIR);

	/* UNCHECKED4 with size 0 truncates (RFC 8881 §18.16.3) */
	snprintf(p, sizeof(p), "/%s/f3", dir);
	struct ffc_file *f = ffc_open(c, p, FFC_RDWR | FFC_CREAT | FFC_TRUNC, 0644, &err);
	CHECK(f);
	CHECK_EQ(ffc_file_size(f), 0);
	dt_fill(b, 0, sizeof(b), 9);
	CHECK_EQ(ffc_pwrite(f, b, sizeof(b), 0), (ssize_t)sizeof(b));
	CHECK_EQ(ffc_close(f), 0);
	/* TRUNC without CREAT: OPEN then SETATTR of the size */
	f = ffc_open(c, p, FFC_RDWR | FFC_TRUNC, 0, &err);
	CHECK(f);
	CHECK_EQ(ffc_file_size(f), 0);
	CHECK_EQ(ffc_pread(f, b, sizeof(b), 0), 0);
	CHECK_EQ(ffc_close(f), 0);
	CHECK_EQ(ffc_remove(c, p), 0);
	CHECK(!ffc_open(c, p, FFC_RDONLY, 0, &err));
	CHECK_EQ(err, -ENOENT);
}

/* Every file and open path through a fresh mount, then (with 'forced') a
 * mount that asks for layouts anyway; the counters say the data took the
 * path 'served' implies. */
static void suite(bool served, bool forced, const char *dir)
{
	fprintf(stderr, "ffclient-basic: LAYOUTGET %s: testing the %s path\n",
		served ? "served" : "not served", served ? "pNFS (data servers)" : "MDS fallback");
	struct ffc_opts o = {.uid = 0, .gid = 0};
	int err = 0;
	struct ffc *c = ffc_mount("127.0.0.1", M.port, &o, &err);
	if (!c)
		fprintf(stderr, "mount: %s\n", strerror(-err));
	CHECK(c);
	char d[32];
	snprintf(d, sizeof(d), "/%s", dir);
	CHECK_EQ(ffc_mkdir(c, d, 0755), 0);
	CHECK_EQ(ffc_mkdir(c, d, 0755), -EEXIST);

	static const uint64_t sizes[] = {0, 1, 4095, 4096, 65537, MiB, 3 * MiB + 12345, 9 * MiB};
	uint64_t total = 0;
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char name[16];
		snprintf(name, sizeof(name), "f%u", i);
		one_file(c, dir, name, sizes[i], i + 1, i % 2);
		total += sizes[i];
	}
	open_paths(c, dir);
	struct ffc_stats st;
	ffc_stats_get(c, &st);
	fprintf(stderr,
		"ffclient-basic: pnfs %d (%s) LAYOUTGET %llu ok %llu GETDEVICEINFO %llu "
		"LAYOUTCOMMIT %llu LAYOUTRETURN %llu fallbacks %llu; MDS %llu/%llu, DS %llu/%llu "
		"bytes written/read\n",
		st.pnfs, st.pnfs_why, (unsigned long long)st.layoutget,
		(unsigned long long)st.layoutget_ok, (unsigned long long)st.getdeviceinfo,
		(unsigned long long)st.layoutcommit, (unsigned long long)st.layoutreturn,
		(unsigned long long)st.fallbacks, (unsigned long long)st.mds_write_bytes,
		(unsigned long long)st.mds_read_bytes, (unsigned long long)st.ds_write_bytes,
		(unsigned long long)st.ds_read_bytes);
	/* what open_paths wrote, through whichever path */
	uint64_t extra = 5000;
	if (served) {
		/* every byte straight to the data servers, none through the MDS */
		CHECK(st.pnfs);
		CHECK(st.layoutget_ok > 0);
		CHECK(st.getdeviceinfo > 0);
		CHECK(st.layoutcommit > 0);
		CHECK(st.layoutreturn > 0);
		CHECK_EQ(st.fallbacks, 0);
		CHECK_EQ(st.mds_write_bytes, 0);
		CHECK_EQ(st.mds_read_bytes, 0);
		CHECK(st.ds_write_bytes >= total + extra);
		CHECK(st.ds_read_bytes >= total);
		uint64_t w = 0;
		for (unsigned i = 0; i < st.ndev && i < FFC_STATS_DEV_MAX; i++)
			w += st.dev[i].write_bytes;
		CHECK_EQ(w, st.ds_write_bytes);
	} else {
		/* the stock client's reading of an empty fs_layout_types: no
		 * LAYOUTGET at all, every byte through the MDS */
		CHECK(!st.pnfs);
		CHECK(strstr(st.pnfs_why, "fs_layout_types"));
		CHECK_EQ(st.layoutget, 0);
		CHECK_EQ(st.ds_write_bytes, 0);
		CHECK_EQ(st.ds_read_bytes, 0);
		CHECK_EQ(st.mds_write_bytes, total + extra);
		CHECK(st.mds_read_bytes >= total);
	}
	ffc_unmount(c);
	if (!forced)
		return;

	/* A client that asks for layouts whatever fs_layout_types says. */
	o.force_layoutget = true;
	c = ffc_mount("127.0.0.1", M.port, &o, &err);
	CHECK(c);
	one_file(c, dir, "forced", 2 * MiB + 7, 77, false);
	ffc_stats_get(c, &st);
	CHECK(st.layoutget >= 1);
	if (served) {
		CHECK(st.pnfs);
		CHECK(st.layoutget_ok >= 1);
		CHECK_EQ(st.mds_write_bytes, 0);
		CHECK_EQ(st.ds_write_bytes, 2 * MiB + 7);
	} else {
		/* LAYOUTGET -> NFS4ERR_NOTSUPP -> that same write through the
		 * MDS, and no more LAYOUTGETs on this mount */
		CHECK_EQ(st.layoutget, 1);
		CHECK_EQ(st.layoutget_ok, 0);
		CHECK_EQ(st.layoutget_last_err, NFS4ERR_NOTSUPP);
		CHECK(!st.pnfs);
		CHECK(strstr(st.pnfs_why, "NOTSUPP"));
		CHECK_EQ(st.fallbacks, 1);
		CHECK_EQ(st.mds_write_bytes, 2 * MiB + 7);
		CHECK_EQ(st.ds_write_bytes, 0);
	}
	ffc_unmount(c);
}

int main(void)
{
	mt_start(&M, "/ *(rw,no_root_squash,insecure)\n",
		 "heartbeat_interval = 1s\nds_timeout = 3s\n");
	cds_prepare(&M, &A, "ds-a", NULL);
	cds_start(&M, &A);
	cds_prepare(&M, &B, "ds-b", NULL);
	cds_start(&M, &B);

	/* the MDS as built */
	bool served = M.mds->ops[OP_LAYOUTGET].fn != NULL;
	suite(served, true, "dir1");
	/* and as an MDS that advertises no layouts */
	if (served) {
		struct nfs41_op saved = M.mds->ops[OP_LAYOUTGET];
		memset(&M.mds->ops[OP_LAYOUTGET], 0, sizeof(saved));
		suite(false, false, "dir2");
		M.mds->ops[OP_LAYOUTGET] = saved;
	}

	cds_stop(&A);
	cds_stop(&B);
	mt_finish(&M);
	return 0;
}
