/* SPDX-License-Identifier: MIT */
/*
 * Space accounting (mds/space.c) and object counts, braid-mds and two
 * braid-ds in this process, files written through client/ffclient:
 *  - GETATTR's space_used (RFC 8881 §5.8.2, bytes; st_blocks on Linux)
 *    follows the data servers within SPACE_WAIT_S of the change (the
 *    MDS_SPACE_SETTLE_MS delay plus one round of STATs, with room for a
 *    loaded machine), without moving the change attribute: a 2 MiB file
 *    written through layouts reaches 2 MiB; a sparse file shows far less
 *    than its size; a file with two mirrors counts both copies; a file
 *    written through the MDS (no layouts) is counted too; a truncation
 *    lowers it; the sums of files noted together are recorded together
 *    (16 files, at most 4 store commits);
 *  - braidctl's DS_LIST shows each data server's objects as its store
 *    holds them (braid_ctl LIST), within a few heartbeats; a removal
 *    lowers the count;
 *  - a data server down: mds_space_update() says -EAGAIN and the file
 *    keeps its value; the data server restarts with an object and data
 *    added behind the MDS's back: its count (taken by its store at start)
 *    and the file's space_used (the retry, every MDS_SPACE_RETRY_MS) show
 *    them.
 */
#include "config.h"

#include "tests/mds/mds-ds-test.h"
#include "tests/mds/admin-test.h"
#include "client/ffclient.h"

#include "mds/layout.h"
#include "mds/space.h"
#include "nfsd/bytes.h"

#define KiB	     1024u
#define MiB	     (1u << 20)
#define CONF	     "heartbeat_interval = 1s\nds_timeout = 3s\n"
#define SPACE_WAIT_S 5.0

static struct mt M;
static struct cds A, B;
static struct nfs41c_session *S;

struct fa {
	uint64_t change, size, space_used;
};

/* GETATTR of path's change, size and space_used over the wire. */
static struct fa getattr(const char *path)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 16);
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", path);
	nfs_argop4 ops[8];
	unsigned n = 0;
	ops[n++] = mt_putrootfh();
	for (char *save, *t = strtok_r(buf, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
		CHECK(n < 7);
		ops[n++] = mt_lookup(t);
	}
	nfs_argop4 g = {.argop = OP_GETATTR};
	g.u.opgetattr.attr_request =
	    mt_bitmap(&ar, FATTR4_CHANGE, FATTR4_SIZE, FATTR4_SPACE_USED, -1);
	ops[n++] = g;
	COMPOUND4res res;
	mt_compound(S, ops, n, &res, &ar);
	for (unsigned i = 0; i < n; i++)
		CHECK_EQ(mt_status(&res, i), NFS4_OK);
	const fattr4 *f = &res.resarray.val[n].u.opgetattr.u.resok4.obj_attributes;
	CHECK_EQ(f->attr_vals.len, 24); /* in attribute order: 3, 4, 45 */
	struct fa out = {get_be64(f->attr_vals.val), get_be64(f->attr_vals.val + 8),
			 get_be64(f->attr_vals.val + 16)};
	xdr_arena_release(&ar);
	return out;
}

/* Until path's space_used is in [lo, hi) (SPACE_WAIT_S at most, plus
 * extra_s); its attributes then. */
static struct fa wait_space(const char *path, uint64_t lo, uint64_t hi, double extra_s)
{
	double t0 = cl_now();
	for (;;) {
		struct fa a = getattr(path);
		if (a.space_used >= lo && a.space_used < hi) {
			fprintf(stderr,
				"space-accounting: %s: size %llu, space_used %llu after %.2f s\n",
				path, (unsigned long long)a.size, (unsigned long long)a.space_used,
				cl_now() - t0);
			return a;
		}
		if (cl_now() - t0 > SPACE_WAIT_S + extra_s) {
			fprintf(stderr, "%s: space_used %llu, want [%llu, %llu)\n", path,
				(unsigned long long)a.space_used, (unsigned long long)lo,
				(unsigned long long)hi);
			CHECK(0);
		}
		usleep(50000);
	}
}

/* Write [off, off + len) of path (seed) through c; created when new. */
static void put(struct ffc *c, const char *path, uint64_t off, size_t len, unsigned seed)
{
	uint8_t *b = malloc(len);
	CHECK(b);
	dt_fill(b, off, len, seed);
	int err = 0;
	struct ffc_file *f = ffc_open(c, path, FFC_RDWR | FFC_CREAT, 0644, &err);
	if (!f)
		fprintf(stderr, "open %s: %s\n", path, strerror(-err));
	CHECK(f);
	CHECK_EQ(ffc_pwrite(f, b, len, off), (ssize_t)len);
	CHECK_EQ(ffc_close(f), 0);
	free(b);
}

static uint64_t ino_of(const char *path)
{
	struct mds_store *s = braid_mds_store(M.mds);
	uint64_t ino = mds_store_root(s);
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *save, *t = strtok_r(buf, "/", &save); t; t = strtok_r(NULL, "/", &save))
		CHECK_EQ(mds_dir_lookup(s, ino, t, strlen(t), &ino, NULL), 0);
	return ino;
}

/* SETATTR of the size, with the anonymous stateid. */
static void set_size(const char *path, uint64_t size)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 16);
	uint8_t v[8];
	put_be64(v, size);
	nfs_argop4 ops[3] = {mt_putrootfh(), mt_lookup(path + 1), {.argop = OP_SETATTR}};
	ops[2].u.opsetattr.obj_attributes.attrmask = mt_bitmap(&ar, FATTR4_SIZE, -1);
	ops[2].u.opsetattr.obj_attributes.attr_vals = xdr_opaque_of(v, 8);
	COMPOUND4res res;
	mt_compound(S, ops, 3, &res, &ar);
	CHECK_EQ(mt_status(&res, 2), NFS4_OK);
	xdr_arena_release(&ar);
}

/* Objects on d, by LIST (what its store holds). */
static uint64_t listed(struct cds *d)
{
	uint64_t n = 0, cookie = 0;
	bool eof = false;
	while (!eof) {
		struct ds_list_entry e[64];
		unsigned got = 0;
		CHECK_EQ(ds_ctl_list(d->c, &M.key, cookie, 64, e, &got, &cookie, &eof), 0);
		n += got;
	}
	return n;
}

/* DS_LIST's objects of data server id. */
static uint64_t admin_objects(uint32_t id)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	braid_admin_list_args a = {0, BRAID_ADMIN_LIST_MAX};
	braid_admin_ds_list_res r;
	at_call(&M, BRAID_ADMINPROC_DS_LIST, &a, &r, &ar);
	CHECK_EQ(r.status, BRAID_ADMIN_OK);
	uint64_t n = UINT64_MAX;
	for (uint32_t i = 0; i < r.u.ok.dl_entries.len; i++)
		if (r.u.ok.dl_entries.val[i].ds_id == id)
			n = r.u.ok.dl_entries.val[i].ds_objects;
	CHECK(n != UINT64_MAX);
	xdr_arena_release(&ar);
	return n;
}

/* Until DS_LIST shows each data server's objects as LIST finds them
 * (5 s at most: heartbeats every second); the total then. */
static uint64_t wait_objects(void)
{
	double t0 = cl_now();
	for (;;) {
		uint64_t la = listed(&A), lb = listed(&B);
		uint64_t ca = admin_objects(A.id), cb = admin_objects(B.id);
		if (la == ca && lb == cb) {
			fprintf(stderr, "space-accounting: objects %llu + %llu after %.2f s\n",
				(unsigned long long)ca, (unsigned long long)cb, cl_now() - t0);
			return ca + cb;
		}
		if (cl_now() - t0 > 5) {
			fprintf(stderr, "DS_LIST objects %llu, %llu; stores hold %llu, %llu\n",
				(unsigned long long)ca, (unsigned long long)cb,
				(unsigned long long)la, (unsigned long long)lb);
			CHECK(0);
		}
		usleep(100000);
	}
}

/* The data server holding ino's only object. */
static struct cds *holder(uint64_t ino)
{
	struct mds_layout_seg seg;
	CHECK_EQ(mds_layout_get(braid_mds_store(M.mds), ino, 0, &seg), 0);
	CHECK_EQ(seg.nds, 1);
	return seg.ds[0] == A.id ? &A : &B;
}

int main(void)
{
	mt_start(&M, "/ *(rw,no_root_squash,insecure)\n", CONF);
	cds_prepare(&M, &A, "ds-a", NULL);
	cds_start(&M, &A);
	cds_prepare(&M, &B, "ds-b", NULL);
	cds_start(&M, &B);
	S = mt_session(&M, "space", 0, 0);
	struct ffc_opts o = {0};
	int err = 0;
	struct ffc *c = ffc_mount("127.0.0.1", M.port, &o, &err);
	CHECK(c);

	/* 2 MiB through layouts; change does not move with the count */
	put(c, "/big", 0, 2 * MiB, 1);
	struct fa a0 = getattr("/big");
	CHECK_EQ(a0.size, 2 * MiB);
	struct fa a1 = wait_space("/big", 2 * MiB, 4 * MiB, 0);
	CHECK_EQ(a1.change, a0.change);
	struct ffc_stats st;
	ffc_stats_get(c, &st);
	CHECK(st.layoutget_ok > 0 && st.mds_write_bytes == 0);

	/* sparse: 8 KiB in a 64 MiB file */
	put(c, "/sparse", 0, 4 * KiB, 2);
	put(c, "/sparse", 64 * MiB - 4 * KiB, 4 * KiB, 3);
	struct fa sp = wait_space("/sparse", 8 * KiB, MiB, 0);
	CHECK_EQ(sp.size, 64 * MiB);

	/* two mirrors: each copy is storage spent */
	CHECK_EQ(ffc_mkdir(c, "/m", 0755), 0);
	struct layout_policy pol;
	char why[200];
	CHECK_EQ(layout_policy_parse("whole,mirrors=2", &pol, why, sizeof(why)), 0);
	CHECK_EQ(mds_layout_policy_set(M.mds, ino_of("/m"), &pol), 0);
	put(c, "/m/f", 0, MiB, 4);
	wait_space("/m/f", 2 * MiB, 3 * MiB, 0);

	/* through the MDS (no layouts): WRITE and COMMIT proxied */
	struct ffc_opts np = {.no_pnfs = true};
	struct ffc *cp = ffc_mount("127.0.0.1", M.port, &np, &err);
	CHECK(cp);
	put(cp, "/proxied", 0, MiB, 5);
	ffc_stats_get(cp, &st);
	CHECK(st.mds_write_bytes >= MiB && st.ds_write_bytes == 0);
	wait_space("/proxied", MiB, 2 * MiB, 0);

	/* truncation frees */
	set_size("/big", 512 * KiB);
	wait_space("/big", 512 * KiB, MiB, 0);

	/* objects: big, sparse, proxied one each, m/f two */
	CHECK_EQ(wait_objects(), 5);
	CHECK_EQ(ffc_remove(cp, "/proxied"), 0);
	CHECK_EQ(wait_objects(), 4);

	/* the data server of /big goes down */
	uint64_t big = ino_of("/big");
	struct cds *d = holder(big);
	uint64_t before = admin_objects(d->id);
	cds_stop(d);
	cl_wait_down(&M, d->id);
	CHECK_EQ(mds_space_update(M.mds, big), -EAGAIN);
	/* behind the MDS's back: 1 MiB more of /big's data, and a stray object */
	char dir[4300];
	snprintf(dir, sizeof(dir), "%s/%s-store", M.dir, d->name);
	struct ds_store *store;
	CHECK_EQ(ds_store_open(dir, NULL, &store), 0);
	struct mds_attr at = cl_attr(&M, big);
	struct mds_file_map map;
	CHECK_EQ(mds_data_map(M.mds, big, &map), 0);
	struct ds_objid id, stray = {.gen = 1};
	uint32_t uid, gid;
	mds_data_objid(&at, &id);
	mds_data_fence_epoch(M.mds, &at, map.epoch, &uid, &gid);
	uint8_t *b = malloc(MiB);
	CHECK(b);
	dt_fill(b, MiB, MiB, 6);
	struct iovec iov = {b, MiB};
	CHECK_EQ(ds_store_write(store, &id, uid, gid, MiB, &iov, 1, DS_FILE_SYNC), MiB);
	free(b);
	memset(stray.key, 0xee, sizeof(stray.key));
	CHECK_EQ(ds_store_create(store, &stray, 1, 1, 0600), 0);
	CHECK_EQ(ds_store_close(store), 0);
	/* noted while its data server is down: the old value stays */
	mds_space_note(M.mds, big);
	usleep((MDS_SPACE_SETTLE_MS + 500) * 1000);
	struct fa kept = getattr("/big");
	CHECK(kept.space_used >= 512 * KiB && kept.space_used < MiB);
	/* back: the retry counts the new data, the heartbeat the new object */
	cds_start(&M, d);
	wait_space("/big", 3 * MiB / 2, 3 * MiB, MDS_SPACE_RETRY_MS / 1000.0);
	CHECK_EQ(wait_objects(), 5);
	CHECK_EQ(admin_objects(d->id), before + 1);

	/* a round's sums are recorded together: 16 files whose recorded value
	 * is wrong, noted at once, cost a commit or two, not 16 */
	{
		uint64_t inos[16];
		for (unsigned i = 0; i < 16; i++) {
			char path[32];
			snprintf(path, sizeof(path), "/round%u", i);
			put(cp, path, 0, 64 * KiB, 10 + i);
			wait_space(path, 64 * KiB, MiB, 0);
			inos[i] = ino_of(path);
		}
		struct mds_store *ms = braid_mds_store(M.mds);
		for (unsigned i = 0; i < 16; i++) {
			struct mds_setattr_args sa = {
			    .ino = inos[i], .mask = MDS_SET_SPACE_USED, .space_used = 1};
			CHECK_EQ(mds_inode_setattr(ms, &sa, NULL), 0);
		}
		struct mds_store_stats s0, s1;
		mds_store_stats(ms, &s0);
		for (unsigned i = 0; i < 16; i++)
			mds_space_note(M.mds, inos[i]);
		for (unsigned i = 0; i < 16; i++) {
			char path[32];
			snprintf(path, sizeof(path), "/round%u", i);
			wait_space(path, 64 * KiB, MiB, 0);
		}
		mds_store_stats(ms, &s1);
		fprintf(stderr, "space-accounting: 16 sums recorded in %llu commits\n",
			(unsigned long long)(s1.batches - s0.batches));
		CHECK(s1.batches - s0.batches <= 4);
	}

	ffc_unmount(cp);
	ffc_unmount(c);
	nfs41c_session_destroy(S);
	cds_stop(&A);
	cds_stop(&B);
	mt_finish(&M);
	printf("space-accounting: ok\n");
	return 0;
}
