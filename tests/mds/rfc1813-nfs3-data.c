/* SPDX-License-Identifier: MIT */
/*
 * NFSv3 file data on braid-mds (RFC 1813 §3.3.6, §3.3.7, §3.3.21) with two
 * braid-ds in this process, beside NFSv4.1 clients with layouts on the
 * same files.  The MDS runs with data_io = refuse, so NFSv4.1 READ/WRITE
 * through the MDS fail and the userspace client's bytes can only come from
 * and go to the data servers (its counters say so), while NFSv3, which has
 * no layouts, is served through the MDS:
 *  - WRITE UNSTABLE, DATA_SYNC and FILE_SYNC (committed at least as asked),
 *    one write verifier for WRITE and COMMIT, WCC data with the size before
 *    and after, READ back with eof at the end;
 *  - bytes written over NFSv3 read over NFSv4.1 from the data servers with
 *    a layout, and bytes written over NFSv4.1 with a layout (LAYOUTCOMMIT)
 *    read over NFSv3, with the sizes each side sees;
 *  - an NFSv3 append while an NFSv4.1 client holds the file's RW layout,
 *    and an NFSv3 truncation, seen by a later NFSv4.1 open;
 *  - permissions: another user's file (ACCES), the owner's own read-only
 *    file (allowed, knfsd's owner override), a directory (ISDIR), a count
 *    that does not describe the data (INVAL).
 */
#include "config.h"

#include "client/ffclient.h"
#include "tests/mds/mds-ds-test.h"
#include "tests/mds/nfs3-test.h"

#define MiB (1u << 20)

static struct mt M;
static struct cds A, B;

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
}

/* The whole file over NFSv3, in 1 MiB READs: must be want (size bytes). */
static void read3_all(const struct h3 *f, const uint8_t *want, size_t size)
{
	uint8_t *b = malloc(MiB);
	CHECK(b);
	uint64_t off = 0;
	bool eof = false;
	while (!eof) {
		uint32_t n = 0;
		CHECK_EQ(n3_read(&M, f, off, MiB, b, &n, &eof), NFS3_OK);
		CHECK(off + n <= size);
		CHECK(!memcmp(b, want + off, n));
		off += n;
		CHECK(n > 0 || eof);
	}
	CHECK_EQ(off, size);
	free(b);
}

static struct ffc *v4_mount(void)
{
	struct ffc_opts o = {.uid = 0, .gid = 0};
	int err = 0;
	struct ffc *c = ffc_mount("127.0.0.1", M.port, &o, &err);
	CHECK(c);
	return c;
}

/* NFSv3 writes (three stabilities), verifiers, WCC; then NFSv4.1 reads them. */
static void v3_to_v4(const struct h3 *root)
{
	size_t size = 3 * MiB + 123;
	uint8_t *data = malloc(size);
	CHECK(data);
	fill(data, size, 3);
	struct h3 f;
	CHECK_EQ(n3_create_as(&M, 0, root, "v3file", GUARDED, 0644, NULL, &f, NULL), NFS3_OK);
	static const stable_how how[] = {UNSTABLE, DATA_SYNC, FILE_SYNC, UNSTABLE};
	uint8_t verf0[8];
	for (unsigned i = 0; i * MiB < size; i++) {
		uint64_t off = (uint64_t)i * MiB;
		uint32_t len = size - off < MiB ? (uint32_t)(size - off) : MiB;
		struct xdr_arena ar;
		xdr_arena_init(&ar, NULL, 0, 1 << 16);
		WRITE3args a = {.file = h3_fh(&f),
				.offset = off,
				.count = len,
				.stable = how[i],
				.data = xdr_opaque_of(data + off, len)};
		WRITE3res r;
		n3(&M, NFSPROC3_WRITE, &a, &r, &ar);
		CHECK_EQ(r.status, NFS3_OK);
		CHECK_EQ(r.u.resok.count, len);
		CHECK(r.u.resok.committed >= how[i]);
		const wcc_data *w = &r.u.resok.file_wcc;
		CHECK(w->before.attributes_follow && w->after.attributes_follow);
		CHECK_EQ(w->before.u.attributes.size, off);
		CHECK_EQ(w->after.u.attributes.size, off + len);
		if (i == 0)
			memcpy(verf0, r.u.resok.verf, 8);
		CHECK(!memcmp(verf0, r.u.resok.verf, 8));
		xdr_arena_release(&ar);
	}
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	COMMIT3args ca = {.file = h3_fh(&f)};
	COMMIT3res cr;
	n3(&M, NFSPROC3_COMMIT, &ca, &cr, &ar);
	CHECK_EQ(cr.status, NFS3_OK);
	CHECK(!memcmp(cr.u.resok.verf, verf0, 8)); /* no data server restarted */
	CHECK(cr.u.resok.file_wcc.after.attributes_follow);
	xdr_arena_release(&ar);
	CHECK_EQ(n3_getattr(&M, &f).size, size);
	read3_all(&f, data, size);
	/* a READ past the end: nothing, eof */
	uint8_t b[16];
	uint32_t n;
	bool eof;
	CHECK_EQ(n3_read(&M, &f, size + 10, 16, b, &n, &eof), NFS3_OK);
	CHECK_EQ(n, 0);
	CHECK(eof);

	/* NFSv4.1 with a layout: from the data servers, not through the MDS */
	struct ffc *c = v4_mount();
	int err;
	struct ffc_file *ff = ffc_open(c, "/v3file", FFC_RDONLY, 0, &err);
	CHECK(ff);
	CHECK_EQ(ffc_file_size(ff), size);
	uint8_t *rb = malloc(size);
	CHECK(rb);
	CHECK_EQ(ffc_pread(ff, rb, size, 0), (ssize_t)size);
	CHECK(!memcmp(rb, data, size));
	CHECK_EQ(ffc_close(ff), 0);
	struct ffc_stats st;
	ffc_stats_get(c, &st);
	CHECK(st.pnfs);
	CHECK(st.layoutget_ok > 0);
	CHECK_EQ(st.mds_read_bytes, 0);
	CHECK(st.ds_read_bytes >= size);
	ffc_unmount(c);
	free(rb);
	free(data);
}

/* NFSv4.1 writes with a layout; NFSv3 sees the size and reads them; an
 * NFSv3 append under the RW layout and a truncation, seen by NFSv4.1. */
static void v4_to_v3(const struct h3 *root)
{
	size_t size = 2 * MiB + 7, more = 100;
	uint8_t *data = malloc(size + more);
	CHECK(data);
	fill(data, size + more, 4);
	struct ffc *c = v4_mount();
	int err;
	struct ffc_file *ff = ffc_open(c, "/v4file", FFC_RDWR | FFC_CREAT | FFC_EXCL, 0644, &err);
	CHECK(ff);
	CHECK_EQ(ffc_pwrite(ff, data, size, 0), (ssize_t)size);
	CHECK_EQ(ffc_fsync(ff), 0); /* COMMIT to the data servers, LAYOUTCOMMIT */
	struct ffc_stats st;
	ffc_stats_get(c, &st);
	CHECK_EQ(st.mds_write_bytes, 0);
	CHECK_EQ(st.ds_write_bytes, size);

	struct h3 f;
	CHECK_EQ(n3_lookup(&M, root, "v4file", &f), NFS3_OK);
	CHECK_EQ(n3_getattr(&M, &f).size, size);
	read3_all(&f, data, size);

	/* an append over NFSv3 while the NFSv4.1 client holds its RW layout:
	 * through the write gate to the same objects */
	uint32_t cnt = 0;
	stable_how committed = UNSTABLE;
	CHECK_EQ(
	    n3_write(&M, &f, size, data + size, (uint32_t)more, FILE_SYNC, &cnt, &committed, NULL),
	    NFS3_OK);
	CHECK_EQ(cnt, more);
	CHECK_EQ(committed, FILE_SYNC);
	CHECK_EQ(n3_getattr(&M, &f).size, size + more);
	CHECK_EQ(ffc_close(ff), 0);
	ff = ffc_open(c, "/v4file", FFC_RDONLY, 0, &err);
	CHECK(ff);
	CHECK_EQ(ffc_file_size(ff), size + more);
	uint8_t *rb = malloc(size + more);
	CHECK(rb);
	CHECK_EQ(ffc_pread(ff, rb, size + more, 0), (ssize_t)(size + more));
	CHECK(!memcmp(rb, data, size + more));
	CHECK_EQ(ffc_close(ff), 0);

	/* an NFSv3 truncation reaches the data servers and NFSv4.1 */
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	SETATTR3args sa;
	memset(&sa, 0, sizeof(sa));
	sa.object = h3_fh(&f);
	sa.new_attributes.size.set_it = true;
	sa.new_attributes.size.u.size = MiB;
	SETATTR3res sr;
	n3(&M, NFSPROC3_SETATTR, &sa, &sr, &ar);
	CHECK_EQ(sr.status, NFS3_OK);
	CHECK_EQ(sr.u.resok.obj_wcc.before.u.attributes.size, size + more);
	CHECK_EQ(sr.u.resok.obj_wcc.after.u.attributes.size, MiB);
	xdr_arena_release(&ar);
	read3_all(&f, data, MiB);
	ff = ffc_open(c, "/v4file", FFC_RDONLY, 0, &err);
	CHECK(ff);
	CHECK_EQ(ffc_file_size(ff), MiB);
	CHECK_EQ(ffc_pread(ff, rb, 2 * MiB, 0), (ssize_t)MiB);
	CHECK(!memcmp(rb, data, MiB));
	CHECK_EQ(ffc_close(ff), 0);
	/* extended again over NFSv3: the cut bytes read as zeros */
	CHECK_EQ(n3_write(&M, &f, 2 * MiB, "z", 1, FILE_SYNC, NULL, NULL, NULL), NFS3_OK);
	uint32_t n;
	bool eof;
	CHECK_EQ(n3_read(&M, &f, MiB, 4096, rb, &n, &eof), NFS3_OK);
	CHECK_EQ(n, 4096);
	CHECK(cl_is_zero(rb, 4096));
	ffc_stats_get(c, &st);
	CHECK_EQ(st.mds_read_bytes, 0);
	CHECK_EQ(st.mds_write_bytes, 0);
	ffc_unmount(c);
	free(rb);
	free(data);
}

static void permissions(const struct h3 *root)
{
	struct h3 f, own;
	CHECK_EQ(n3_create_as(&M, 0, root, "roots", GUARDED, 0644, NULL, &f, NULL), NFS3_OK);
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	WRITE3args a = {
	    .file = h3_fh(&f), .count = 1, .stable = FILE_SYNC, .data = xdr_opaque_of("a", 1)};
	WRITE3res r;
	CHECK_EQ(n3_call_on(M.c, 1000, 1000, NFSPROC3_WRITE, &a, &r, &ar), 0);
	CHECK_EQ(r.status, NFS3ERR_ACCES);
	CHECK(r.u.resfail.file_wcc.before.attributes_follow);
	/* the owner writes its read-only file (open(O_CREAT, 0444) then write) */
	SETATTR3args sa;
	memset(&sa, 0, sizeof(sa));
	sa.object = h3_fh(root);
	sa.new_attributes = n3_mode(0777);
	SETATTR3res sr;
	n3(&M, NFSPROC3_SETATTR, &sa, &sr, &ar);
	CHECK_EQ(sr.status, NFS3_OK);
	CHECK_EQ(n3_create_as(&M, 1000, root, "own", GUARDED, 0444, NULL, &own, NULL), NFS3_OK);
	a.file = h3_fh(&own);
	CHECK_EQ(n3_call_on(M.c, 1000, 1000, NFSPROC3_WRITE, &a, &r, &ar), 0);
	CHECK_EQ(r.status, NFS3_OK);
	CHECK_EQ(n3_call_on(M.c, 1001, 1001, NFSPROC3_WRITE, &a, &r, &ar), 0);
	CHECK_EQ(r.status, NFS3ERR_ACCES);
	READ3args ra = {.file = h3_fh(&own), .count = 1};
	READ3res rr;
	CHECK_EQ(n3_call_on(M.c, 1000, 1000, NFSPROC3_READ, &ra, &rr, &ar), 0);
	CHECK_EQ(rr.status, NFS3_OK);
	CHECK_EQ(rr.u.resok.count, 1);
	/* a directory; a count that is not the data's */
	a.file = h3_fh(root);
	n3(&M, NFSPROC3_WRITE, &a, &r, &ar);
	CHECK_EQ(r.status, NFS3ERR_ISDIR);
	a.file = h3_fh(&f);
	a.count = 2;
	n3(&M, NFSPROC3_WRITE, &a, &r, &ar);
	CHECK_EQ(r.status, NFS3ERR_INVAL);
	xdr_arena_release(&ar);
}

int main(void)
{
	mt_start(&M, "/ *(rw,no_root_squash,insecure)\n",
		 "heartbeat_interval = 1s\nds_timeout = 3s\ndata_io = refuse\n");
	cds_prepare(&M, &A, "ds-a", NULL);
	cds_start(&M, &A);
	cds_prepare(&M, &B, "ds-b", NULL);
	cds_start(&M, &B);
	struct h3 root = n3_mount(&M, "/");
	v3_to_v4(&root);
	v4_to_v3(&root);
	permissions(&root);
	cds_stop(&A);
	cds_stop(&B);
	mt_finish(&M);
	return 0;
}
