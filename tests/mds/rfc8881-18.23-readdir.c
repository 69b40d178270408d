/* SPDX-License-Identifier: MIT */
/*
 * READDIR (RFC 8881 §18.23) over the wire:
 *  - a directory of 2,000 entries walked with a small maxcount returns
 *    every name exactly once, each with its attributes (type, fileid, its
 *    own filehandle, rdattr_error, mounted_on_fileid) and the filehandle
 *    LOOKUP gives;
 *  - maxcount bounds the encoded READDIR4resok byte for byte, and a reply
 *    that is not the last holds every entry that fits: the next one would
 *    not have; with the Linux client's attributes and a 1 MiB maxcount,
 *    replies well past 128 KiB go through;
 *  - cookies stay the same while entries are added and removed between
 *    calls (even the one a walk resumes from), and entries present for the
 *    whole walk come back once;
 *  - cookies 1, 2 and ones never issued are NFS4ERR_BAD_COOKIE, another
 *    cookie verifier NFS4ERR_NOT_SAME, a maxcount too small for one entry
 *    NFS4ERR_TOOSMALL; dircount ends a reply after the first entry past
 *    it; a file is NFS4ERR_NOTDIR, no read permission NFS4ERR_ACCESS,
 *    asking for write-only attributes NFS4ERR_INVAL;
 *  - the pseudo filesystem lists only the directories leading to exports.
 */
#include "config.h"

#include <pthread.h>

#include "tests/mds/mds-test.h"
#include "tests/mds/dir-test.h"

#define NENT 2000
#define NNEW 300

/* Entries made straight in the store, all queued at once (group commit). */
struct many {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int left, err;
};

static void many_done(struct mds_op *op)
{
	struct many *m = op->priv;
	pthread_mutex_lock(&m->mu);
	if (op->status)
		m->err = op->status;
	m->left--;
	pthread_cond_signal(&m->cv);
	pthread_mutex_unlock(&m->mu);
}

static char ename[NENT][8];

static void make_many(struct mt *t, uint64_t dir)
{
	struct many m = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NENT, 0};
	static struct mds_op ops[NENT];
	for (int i = 0; i < NENT; i++) {
		snprintf(ename[i], sizeof(ename[i]), "e%04d", i);
		struct mds_op *op = &ops[i];
		memset(op, 0, sizeof(*op));
		op->type = MDS_OP_CREATE;
		op->args.create = (struct mds_create_args){
		    .dir = dir,
		    .name = ename[i],
		    .name_len = 5,
		    .type = i % 10 == 0 ? MDS_DIR : MDS_REG,
		    .how = MDS_CREATE_GUARDED,
		    .mode = 0755,
		};
		op->done = many_done;
		op->priv = &m;
		mds_store_submit(braid_mds_store(t->mds), op);
	}
	pthread_mutex_lock(&m.mu);
	while (m.left)
		pthread_cond_wait(&m.cv, &m.mu);
	pthread_mutex_unlock(&m.mu);
	CHECK_EQ(m.err, 0);
}

static int name_index(const component4 *n)
{
	char b[8] = {0};
	if (n->len != 5 || n->val[0] != 'e')
		return -1;
	memcpy(b, n->val + 1, 4);
	return atoi(b);
}

static bitmap4 want_attrs(struct xdr_arena *ar)
{
	return mt_bitmap(ar, FATTR4_TYPE, FATTR4_RDATTR_ERROR, FATTR4_FILEHANDLE, FATTR4_FILEID,
			 FATTR4_MOUNTED_ON_FILEID, -1);
}

/* What the Linux client asks of READDIR (fs/nfs/nfs4xdr.c, readdirplus). */
static bitmap4 linux_attrs(struct xdr_arena *ar)
{
	return mt_bitmap(ar, FATTR4_TYPE, FATTR4_CHANGE, FATTR4_SIZE, FATTR4_FSID,
			 FATTR4_RDATTR_ERROR, FATTR4_FILEHANDLE, FATTR4_FILEID, FATTR4_MODE,
			 FATTR4_NUMLINKS, FATTR4_OWNER, FATTR4_OWNER_GROUP, FATTR4_RAWDEV,
			 FATTR4_SPACE_USED, FATTR4_TIME_ACCESS, FATTR4_TIME_METADATA,
			 FATTR4_TIME_MODIFY, FATTR4_MOUNTED_ON_FILEID, -1);
}

struct page {
	nfsstat4 status;
	READDIR4resok ok;
	uint32_t size; /* encoded READDIR4resok */
};

static nfsstat4 rd(struct nfs41c_session *s, const struct dt_fh *dir, uint64_t cookie,
		   const uint8_t verf[8], uint32_t dircount, uint32_t maxcount, bool attrs,
		   struct page *p, struct xdr_arena *ar)
{
	nfs_argop4 op = dt_op(OP_READDIR);
	op.u.opreaddir.cookie = cookie;
	if (verf)
		memcpy(op.u.opreaddir.cookieverf, verf, 8);
	op.u.opreaddir.dircount = dircount;
	op.u.opreaddir.maxcount = maxcount;
	if (attrs)
		op.u.opreaddir.attr_request = want_attrs(ar);
	COMPOUND4res res;
	memset(p, 0, sizeof(*p));
	p->status = dt_on(s, dir, op, &res, ar);
	if (p->status)
		return p->status;
	p->ok = res.resarray.val[2].u.opreaddir.u.resok4;
	/* measure it as the server sent it */
	static uint8_t buf[1 << 20];
	struct iovec iov[8];
	struct xdr_enc e;
	xdr_enc_init(&e, iov, 8, buf, sizeof(buf), NULL);
	CHECK(xdr_enc_READDIR4resok(&e, &p->ok) == 0);
	p->size = (uint32_t)e.len;
	return NFS4_OK;
}

static uint32_t entry_size(const entry4 *e)
{
	return 4 + 8 + 4 + ((e->name.len + 3) & ~3u) + 4 + 4 * e->attrs.attrmask.len + 4 +
	       ((e->attrs.attr_vals.len + 3) & ~3u);
}

/* The attributes asked for, in attribute-number order. */
static void check_attrs(const entry4 *e, uint8_t want_type)
{
	const bitmap4 *m = &e->attrs.attrmask;
	CHECK(m->len >= 2);
	CHECK_EQ(m->val[0], (1u << FATTR4_TYPE) | (1u << FATTR4_RDATTR_ERROR) |
				(1u << FATTR4_FILEHANDLE) | (1u << FATTR4_FILEID));
	CHECK_EQ(m->val[1], 1u << (FATTR4_MOUNTED_ON_FILEID - 32));
	struct xdr_dec d;
	xdr_dec_init(&d, e->attrs.attr_vals.val, e->attrs.attr_vals.len, NULL);
	uint32_t type, err;
	xdr_opaque fh;
	uint64_t fileid, mounted_on;
	CHECK(xdr_dec_uint32(&d, &type) == 0 && xdr_dec_uint32(&d, &err) == 0 &&
	      xdr_dec_opaque(&d, &fh, NFS4_FHSIZE) == 0 && xdr_dec_uint64(&d, &fileid) == 0 &&
	      xdr_dec_uint64(&d, &mounted_on) == 0);
	CHECK_EQ(xdr_dec_left(&d), 0);
	CHECK_EQ(type, want_type);
	CHECK_EQ(err, NFS4_OK);
	struct dt_fh f = {.len = fh.len};
	CHECK(fh.len == 40);
	memcpy(f.b, fh.val, fh.len);
	CHECK_EQ(dt_fh_ino(&f), fileid); /* the entry's own handle */
	CHECK_EQ(mounted_on, fileid);
}

static uint64_t baseline_cookie[NENT];

/* A walk while nothing changes: each name once, replies full to the byte. */
static void walk_exact(struct nfs41c_session *s, const struct dt_fh *dir, uint32_t maxcount,
		       bool attrs)
{
	static int seen[NENT];
	memset(seen, 0, sizeof(seen));
	uint64_t cookie = 0, last = 0;
	uint8_t verf[8] = {0};
	uint32_t prev_size = 0;
	bool first_page = true;
	int pages = 0;
	for (;;) {
		struct xdr_arena ar;
		xdr_arena_init(&ar, NULL, 0, 4 << 20);
		struct page p;
		CHECK_EQ(rd(s, dir, cookie, verf, 0, maxcount, attrs, &p, &ar), NFS4_OK);
		CHECK(p.size <= maxcount);
		pages++;
		const entry4 *e = p.ok.reply.entries;
		/* the previous reply stopped because this entry did not fit */
		if (!first_page && e)
			CHECK(prev_size + entry_size(e) > maxcount);
		for (; e; e = e->nextentry) {
			int i = name_index(&e->name);
			CHECK(i >= 0 && i < NENT);
			CHECK_EQ(seen[i], 0);
			seen[i]++;
			CHECK(e->cookie > 2 && e->cookie > last);
			last = e->cookie;
			if (baseline_cookie[i])
				CHECK_EQ(e->cookie, baseline_cookie[i]);
			baseline_cookie[i] = e->cookie;
			if (attrs)
				check_attrs(e, i % 10 == 0 ? NF4DIR : NF4REG);
			else
				CHECK_EQ(e->attrs.attrmask.len, 0);
			cookie = e->cookie;
		}
		memcpy(verf, p.ok.cookieverf, 8);
		prev_size = p.size;
		first_page = false;
		bool eof = p.ok.reply.eof;
		xdr_arena_release(&ar);
		if (eof)
			break;
		CHECK(pages < 10 * NENT);
	}
	for (int i = 0; i < NENT; i++)
		CHECK_EQ(seen[i], 1);
	CHECK(pages > 1);
}

/* Replies far larger than 64 KiB: every name once, each reply within maxcount. */
static void walk_large(struct nfs41c_session *s, const struct dt_fh *dir)
{
	static int seen[NENT];
	memset(seen, 0, sizeof(seen));
	uint64_t cookie = 0;
	uint8_t verf[8] = {0};
	uint32_t largest = 0;
	for (bool eof = false; !eof;) {
		struct xdr_arena ar;
		xdr_arena_init(&ar, NULL, 0, 16 << 20);
		nfs_argop4 op = dt_op(OP_READDIR);
		op.u.opreaddir.cookie = cookie;
		memcpy(op.u.opreaddir.cookieverf, verf, 8);
		op.u.opreaddir.dircount = 1 << 20;
		op.u.opreaddir.maxcount = 1 << 20;
		op.u.opreaddir.attr_request = linux_attrs(&ar);
		COMPOUND4res res;
		CHECK_EQ(dt_on(s, dir, op, &res, &ar), NFS4_OK);
		const READDIR4resok *ok = &res.resarray.val[2].u.opreaddir.u.resok4;
		uint32_t size = 16;
		for (const entry4 *e = ok->reply.entries; e; e = e->nextentry) {
			int i = name_index(&e->name);
			CHECK(i >= 0 && i < NENT);
			CHECK_EQ(seen[i], 0);
			seen[i]++;
			cookie = e->cookie;
			size += entry_size(e);
		}
		CHECK(size <= 1 << 20);
		if (size > largest)
			largest = size;
		memcpy(verf, ok->cookieverf, 8);
		eof = ok->reply.eof;
		xdr_arena_release(&ar);
	}
	for (int i = 0; i < NENT; i++)
		CHECK_EQ(seen[i], 1);
	CHECK(largest > 128 * 1024);
}

/* Pages of maxcount while entries come and go between them. */
static void walk_changing(struct mt *t, struct nfs41c_session *s, const struct dt_fh *dir,
			  uint64_t dino)
{
	static int seen[NENT], seen_new[NNEW];
	static bool removed[NENT];
	memset(seen, 0, sizeof(seen));
	memset(seen_new, 0, sizeof(seen_new));
	struct mds_store *st = braid_mds_store(t->mds);
	uint64_t cookie = 0;
	uint8_t verf[8] = {0};
	int nnew = 0, page = 0;
	for (;;) {
		struct xdr_arena ar;
		xdr_arena_init(&ar, NULL, 0, 4 << 20);
		struct page p;
		CHECK_EQ(rd(s, dir, cookie, verf, 0, 900, true, &p, &ar), NFS4_OK);
		CHECK(p.size <= 900);
		int last_i = -1;
		for (const entry4 *e = p.ok.reply.entries; e; e = e->nextentry) {
			char nm[16] = {0};
			CHECK(e->name.len < sizeof(nm));
			memcpy(nm, e->name.val, e->name.len);
			if (nm[0] == 'n') {
				int k = atoi(nm + 1);
				CHECK(k >= 0 && k < nnew);
				CHECK_EQ(seen_new[k], 0);
				seen_new[k]++;
				continue;
			}
			int i = name_index(&e->name);
			CHECK(i >= 0 && i < NENT);
			CHECK(!removed[i]);
			CHECK_EQ(seen[i], 0);
			seen[i]++;
			CHECK_EQ(e->cookie, baseline_cookie[i]); /* unchanged by the churn */
			last_i = i;
		}
		for (const entry4 *e = p.ok.reply.entries; e; e = e->nextentry)
			cookie = e->cookie;
		memcpy(verf, p.ok.cookieverf, 8);
		bool eof = p.ok.reply.eof;
		xdr_arena_release(&ar);
		if (eof)
			break;
		page++;
		/* churn: add three, remove two not yet seen and, every third page,
		 * the entry this walk resumes after */
		for (int k = 0; k < 3 && nnew < NNEW; k++, nnew++) {
			char nm[16];
			snprintf(nm, sizeof(nm), "n%d", nnew);
			dt_store_make(t, dino, nm, MDS_REG, 0644, 0, 0);
		}
		for (int k = 0, j = (page * 37) % NENT, tries = 0; k < 2 && tries < NENT;
		     j = (j + 1) % NENT, tries++) {
			if (seen[j] || removed[j])
				continue;
			struct mds_remove_args ra = {.dir = dino, .name = ename[j], .name_len = 5};
			CHECK(mds_dir_remove(st, &ra, NULL) == 0);
			removed[j] = true;
			k++;
		}
		if (page % 3 == 0 && last_i >= 0) {
			struct mds_remove_args ra = {
			    .dir = dino, .name = ename[last_i], .name_len = 5};
			CHECK(mds_dir_remove(st, &ra, NULL) == 0);
			removed[last_i] = true;
		}
	}
	int stayed = 0;
	for (int i = 0; i < NENT; i++) {
		if (removed[i]) {
			CHECK(seen[i] <= 1);
		} else {
			CHECK_EQ(seen[i], 1);
			stayed++;
		}
	}
	CHECK(stayed > NENT / 2 && nnew > 0);
}

static void errors(struct mt *t, struct nfs41c_session *s, struct nfs41c_session *user,
		   const struct dt_fh *dir)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 4 << 20);
	struct page p;
	uint8_t verf[8];
	CHECK_EQ(rd(s, dir, 0, NULL, 0, 4096, false, &p, &ar), NFS4_OK);
	memcpy(verf, p.ok.cookieverf, 8);
	uint64_t c0 = p.ok.reply.entries->cookie;

	CHECK_EQ(rd(s, dir, 1, verf, 0, 4096, false, &p, &ar), NFS4ERR_BAD_COOKIE);
	CHECK_EQ(rd(s, dir, 2, verf, 0, 4096, false, &p, &ar), NFS4ERR_BAD_COOKIE);
	CHECK_EQ(rd(s, dir, 1023, verf, 0, 4096, false, &p, &ar), NFS4ERR_BAD_COOKIE);
	CHECK_EQ(rd(s, dir, 1ull << 63, verf, 0, 4096, false, &p, &ar), NFS4ERR_BAD_COOKIE);
	uint8_t other[8];
	memcpy(other, verf, 8);
	other[3] ^= 0x40;
	CHECK_EQ(rd(s, dir, c0, other, 0, 4096, false, &p, &ar), NFS4ERR_NOT_SAME);
	CHECK_EQ(rd(s, dir, 0, other, 0, 4096, false, &p, &ar), NFS4_OK); /* ignored at 0 */
	CHECK_EQ(rd(s, dir, c0, verf, 0, 4096, false, &p, &ar), NFS4_OK);
	CHECK(p.ok.reply.entries && p.ok.reply.entries->cookie > c0);

	/* too small for one entry: 16 bytes of frame, each entry at least 32 */
	CHECK_EQ(rd(s, dir, 0, NULL, 0, 0, false, &p, &ar), NFS4ERR_TOOSMALL);
	CHECK_EQ(rd(s, dir, 0, NULL, 0, 40, false, &p, &ar), NFS4ERR_TOOSMALL);
	CHECK_EQ(rd(s, dir, 0, NULL, 0, 16 + 32, false, &p, &ar), NFS4_OK);
	CHECK(p.ok.reply.entries && !p.ok.reply.entries->nextentry);
	CHECK_EQ(p.size, 48);
	CHECK_EQ(rd(s, dir, 0, NULL, 0, 100, true, &p, &ar), NFS4ERR_TOOSMALL);

	/* dircount (cookies and names, 20 bytes an entry here) ends a reply */
	CHECK_EQ(rd(s, dir, 0, NULL, 1, 8192, false, &p, &ar), NFS4_OK);
	CHECK(p.ok.reply.entries && !p.ok.reply.entries->nextentry);
	CHECK_EQ(rd(s, dir, 0, NULL, 20 * 5, 8192, false, &p, &ar), NFS4_OK);
	int n = 0;
	for (const entry4 *e = p.ok.reply.entries; e; e = e->nextentry)
		n++;
	CHECK_EQ(n, 5);

	/* write-only attributes cannot be read: the request fails, not an entry */
	nfs_argop4 op = dt_op(OP_READDIR);
	op.u.opreaddir.maxcount = 4096;
	op.u.opreaddir.attr_request =
	    mt_bitmap(&ar, FATTR4_RDATTR_ERROR, FATTR4_TIME_ACCESS_SET, -1);
	COMPOUND4res res;
	CHECK_EQ(dt_on(s, dir, op, &res, &ar), NFS4ERR_INVAL);

	/* an empty directory: no entries, eof, in 16 bytes */
	dt_store_make(t, dt_root(t), "empty", MDS_DIR, 0755, 0, 0);
	struct dt_fh efh, ffh, pfh;
	CHECK_EQ(dt_walk(s, "empty", &efh), NFS4_OK);
	CHECK_EQ(rd(s, &efh, 0, NULL, 0, 16, true, &p, &ar), NFS4_OK);
	CHECK(!p.ok.reply.entries && p.ok.reply.eof);
	CHECK_EQ(p.size, 16);
	CHECK_EQ(rd(s, &efh, 0, NULL, 0, 15, true, &p, &ar), NFS4ERR_TOOSMALL);

	dt_store_make(t, dt_root(t), "file", MDS_REG, 0644, 0, 0);
	CHECK_EQ(dt_walk(s, "file", &ffh), NFS4_OK);
	CHECK_EQ(rd(s, &ffh, 0, NULL, 0, 4096, false, &p, &ar), NFS4ERR_NOTDIR);
	dt_store_make(t, dt_root(t), "private", MDS_DIR, 0711, 0, 0);
	CHECK_EQ(dt_walk(user, "private", &pfh), NFS4_OK);
	CHECK_EQ(rd(user, &pfh, 0, NULL, 0, 4096, false, &p, &ar), NFS4ERR_ACCESS);
	CHECK_EQ(rd(s, &pfh, 0, NULL, 0, 4096, false, &p, &ar), NFS4_OK);
	xdr_arena_release(&ar);
}

/* The handle in an entry's attributes is the one LOOKUP gives. */
static void same_handles(struct nfs41c_session *s, const struct dt_fh *dir)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 4 << 20);
	struct page p;
	CHECK_EQ(rd(s, dir, 0, NULL, 0, 2048, true, &p, &ar), NFS4_OK);
	int checked = 0;
	for (const entry4 *e = p.ok.reply.entries; e; e = e->nextentry, checked++) {
		struct xdr_dec d;
		xdr_dec_init(&d, e->attrs.attr_vals.val, e->attrs.attr_vals.len, NULL);
		uint32_t type, err;
		xdr_opaque fh;
		CHECK(xdr_dec_uint32(&d, &type) == 0 && xdr_dec_uint32(&d, &err) == 0 &&
		      xdr_dec_opaque(&d, &fh, NFS4_FHSIZE) == 0);
		char path[32];
		snprintf(path, sizeof(path), "big/%.*s", (int)e->name.len, e->name.val);
		struct dt_fh lf;
		CHECK_EQ(dt_walk(s, path, &lf), NFS4_OK);
		CHECK(lf.len == fh.len && memcmp(lf.b, fh.val, fh.len) == 0);
	}
	CHECK(checked > 3);
	xdr_arena_release(&ar);
}

/* With only /a/b exported the root lists "a", and "a" lists "b". */
static void pseudo(struct mt *t, struct nfs41c_session *s)
{
	dt_exports(t, "/a/b *(rw,insecure)\n/q 10.99.99.99(rw)\n");
	struct mds_attr a;
	CHECK(dt_store_lookup(t, dt_root(t), "a", &a) == 0);
	dt_store_make(t, a.ino, "sibling", MDS_DIR, 0755, 0, 0);
	dt_store_make(t, a.ino, "afile", MDS_REG, 0644, 0, 0);
	struct dt_fh root, afh;
	CHECK_EQ(dt_walk(s, "", &root), NFS4_OK);
	CHECK_EQ(dt_fh_export(&root), 0);
	CHECK_EQ(dt_walk(s, "a", &afh), NFS4_OK);
	const struct {
		const struct dt_fh *dir;
		const char *only;
		bool export_root;
	} cases[] = {{&root, "a", false}, {&afh, "b", true}};
	for (unsigned k = 0; k < 2; k++) {
		struct xdr_arena ar;
		xdr_arena_init(&ar, NULL, 0, 4 << 20);
		struct page p;
		CHECK_EQ(rd(s, cases[k].dir, 0, NULL, 0, 65536, true, &p, &ar), NFS4_OK);
		CHECK(p.ok.reply.eof);
		const entry4 *e = p.ok.reply.entries;
		CHECK(e && !e->nextentry);
		CHECK(e->name.len == 1 && e->name.val[0] == cases[k].only[0]);
		struct xdr_dec d;
		xdr_dec_init(&d, e->attrs.attr_vals.val, e->attrs.attr_vals.len, NULL);
		uint32_t type, err;
		xdr_opaque fh;
		CHECK(xdr_dec_uint32(&d, &type) == 0 && xdr_dec_uint32(&d, &err) == 0 &&
		      xdr_dec_opaque(&d, &fh, NFS4_FHSIZE) == 0);
		struct dt_fh f = {.len = fh.len};
		memcpy(f.b, fh.val, fh.len);
		if (cases[k].export_root)
			CHECK(dt_fh_export(&f) != 0);
		else
			CHECK_EQ(dt_fh_export(&f), 0);
		xdr_arena_release(&ar);
	}
}

int main(void)
{
	struct mt t;
	mt_start(&t, "/ *(rw,no_root_squash,insecure)\n", NULL);
	struct nfs41c_session *s = mt_session(&t, "readdir-root", 0, 0);
	struct nfs41c_session *user = mt_session(&t, "readdir-user", 1000, 1000);
	uint64_t big = dt_store_make(&t, dt_root(&t), "big", MDS_DIR, 0755, 0, 0);
	make_many(&t, big);
	struct dt_fh dir;
	CHECK_EQ(dt_walk(s, "big", &dir), NFS4_OK);

	walk_exact(s, &dir, 4096, true);
	walk_exact(s, &dir, 1000, true); /* cookies as in the first walk */
	walk_exact(s, &dir, 333, false);
	walk_large(s, &dir);
	same_handles(s, &dir);
	errors(&t, s, user, &dir);
	walk_changing(&t, s, &dir, big);
	pseudo(&t, s);

	nfs41c_session_destroy(s);
	nfs41c_session_destroy(user);
	mt_finish(&t);
	return 0;
}
