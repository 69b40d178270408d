/* SPDX-License-Identifier: MIT */
/*
 * NFSv3 on braid-mds (RFC 1813 §3.3), on the handles MOUNT gives, through
 * our RPC client against an in-process MDS (no data servers: file data is
 * tests/mds/rfc1813-nfs3-data): every procedure with its errors and its
 * weak cache consistency data; CREATE's three modes, an EXCLUSIVE
 * retransmission answered with the file and another verifier with EXIST
 * (§3.3.8); SETATTR's guard (NOT_SYNC); READDIR and READDIRPLUS over 1500
 * entries in small replies, "." and ".." first, cookies that neither skip
 * nor repeat an entry while others come and go, verifiers; a retransmitted
 * REMOVE and MKDIR (same xid) answered from the reply cache, not NOENT or
 * EXIST; exports: ro, root_squash, all_squash with anonuid, "secure", a
 * sec= the call's flavor is not in, a nested export's rules on LOOKUP, a
 * handle of an export gone (STALE) and of NFSv4's pseudo filesystem.
 */
#include "config.h"

#include "mds/mds_impl.h"
#include "tests/mds/mds-test.h"
#include "tests/mds/nfs3-test.h"

static const char exports_text[] = "/ex *(rw,no_root_squash,insecure)\n"
				   "/ex/rosub *(ro,no_root_squash,insecure)\n"
				   "/ex/sq *(rw,root_squash,insecure)\n"
				   "/ex/all *(rw,all_squash,anonuid=1234,anongid=1235,insecure)\n"
				   "/ex/sec *(rw,no_root_squash)\n"
				   "/ex/k5 *(rw,no_root_squash,sec=krb5,insecure)\n";

static struct xdr_arena arena;

static void arena_reset(void)
{
	xdr_arena_release(&arena);
	xdr_arena_init(&arena, NULL, 0, 8u << 20);
}

/* A handle of h's object reached through export path (as if LOOKUP had
 * entered it there), made as the MDS makes them. */
static struct h3 fh_in(struct mt *t, const struct h3 *h, const char *path)
{
	struct mds_fh f;
	CHECK_EQ(mds_fh_parse(t->mds, h->b, h->len, &f), 0);
	struct mds_exports *x = mds_exports_get(t->mds);
	const struct export_entry *e = exports_find(x->ex, path);
	CHECK(e);
	f.export_id = 0;
	for (unsigned i = 0; i < x->n; i++)
		if (x->v[i].e == e)
			f.export_id = x->v[i].id;
	mds_exports_put(x);
	CHECK(f.export_id);
	struct h3 o = {.len = MDS_FH_SIZE};
	mds_fh_make(t->mds, &f, o.b);
	return o;
}

static bool same_fh(const struct h3 *a, const struct h3 *b)
{
	return a->len == b->len && !memcmp(a->b, b->b, a->len);
}

static void check_wcc(const wcc_data *w)
{
	CHECK(w->before.attributes_follow);
	CHECK(w->after.attributes_follow);
}

static void check_create(struct mt *t, const struct h3 *root, struct h3 *f)
{
	CREATE3res r;
	CHECK_EQ(n3_create_as(t, 0, root, "f", UNCHECKED, 0640, NULL, f, &r), NFS3_OK);
	check_wcc(&r.u.resok.dir_wcc);
	/* the directory changed: its pre-op ctime, then its new one */
	const wcc_data *w = &r.u.resok.dir_wcc;
	CHECK(w->after.u.attributes.ctime.seconds > w->before.u.attributes.ctime.seconds ||
	      (w->after.u.attributes.ctime.seconds == w->before.u.attributes.ctime.seconds &&
	       w->after.u.attributes.ctime.nseconds > w->before.u.attributes.ctime.nseconds));
	CHECK(r.u.resok.obj_attributes.attributes_follow);
	CHECK_EQ(r.u.resok.obj_attributes.u.attributes.type, NF3REG);
	CHECK_EQ(r.u.resok.obj_attributes.u.attributes.mode, 0640);
	fattr3 fa = n3_getattr(t, f);
	CHECK_EQ(fa.type, NF3REG);
	CHECK_EQ(fa.mode, 0640);
	CHECK_EQ(fa.size, 0);

	struct h3 g;
	CHECK_EQ(n3_create_as(t, 0, root, "f", GUARDED, 0600, NULL, NULL, NULL), NFS3ERR_EXIST);
	CHECK_EQ(n3_create_as(t, 0, root, "f", UNCHECKED, 0600, NULL, &g, NULL), NFS3_OK);
	CHECK(same_fh(f, &g));
	CHECK_EQ(n3_getattr(t, f).mode, 0640); /* UNCHECKED on a file: only a size applies */
	CHECK_EQ(n3_create_as(t, 0, root, ".", UNCHECKED, 0600, NULL, NULL, NULL), NFS3ERR_EXIST);
	CHECK_EQ(n3_create_as(t, 0, root, "a/b", UNCHECKED, 0600, NULL, NULL, NULL), NFS3ERR_INVAL);
	char longname[300];
	memset(longname, 'n', 299);
	longname[299] = 0;
	CHECK_EQ(n3_create_as(t, 0, root, longname, UNCHECKED, 0600, NULL, NULL, NULL),
		 NFS3ERR_NAMETOOLONG);

	/* §3.3.8 EXCLUSIVE: the verifier makes a retransmission succeed */
	static const uint8_t va[8] = "verf-one", vb[8] = "verf-two";
	struct h3 x1, x2;
	CHECK_EQ(n3_create_as(t, 0, root, "x", EXCLUSIVE, 0, va, &x1, NULL), NFS3_OK);
	CHECK_EQ(n3_create_as(t, 0, root, "x", EXCLUSIVE, 0, va, &x2, NULL), NFS3_OK);
	CHECK(same_fh(&x1, &x2));
	CHECK_EQ(n3_create_as(t, 0, root, "x", EXCLUSIVE, 0, vb, NULL, NULL), NFS3ERR_EXIST);
	CHECK_EQ(n3_create_as(t, 0, root, "f", EXCLUSIVE, 0, va, NULL, NULL), NFS3ERR_EXIST);
}

static void check_setattr(struct mt *t, const struct h3 *root, const struct h3 *f)
{
	fattr3 before = n3_getattr(t, f);
	SETATTR3args a;
	memset(&a, 0, sizeof(a));
	a.object = h3_fh(f);
	a.new_attributes = n3_mode(0604);
	a.guard.check = true;
	a.guard.u.obj_ctime = before.ctime;
	SETATTR3res r;
	arena_reset();
	n3(t, NFSPROC3_SETATTR, &a, &r, &arena);
	CHECK_EQ(r.status, NFS3_OK);
	check_wcc(&r.u.resok.obj_wcc);
	CHECK_EQ(r.u.resok.obj_wcc.before.u.attributes.ctime.seconds, before.ctime.seconds);
	CHECK_EQ(r.u.resok.obj_wcc.before.u.attributes.ctime.nseconds, before.ctime.nseconds);
	CHECK_EQ(r.u.resok.obj_wcc.after.u.attributes.mode, 0604);
	/* the same guard again: the ctime moved, so NOT_SYNC and nothing changes */
	a.new_attributes = n3_mode(0666);
	n3(t, NFSPROC3_SETATTR, &a, &r, &arena);
	CHECK_EQ(r.status, NFS3ERR_NOT_SYNC);
	check_wcc(&r.u.resfail.obj_wcc);
	CHECK_EQ(n3_getattr(t, f).mode, 0604);
	/* times to the client's, without a guard */
	memset(&a.new_attributes, 0, sizeof(a.new_attributes));
	a.guard.check = false;
	a.new_attributes.mtime.set_it = SET_TO_CLIENT_TIME;
	a.new_attributes.mtime.u.mtime.seconds = 1000000000;
	n3(t, NFSPROC3_SETATTR, &a, &r, &arena);
	CHECK_EQ(r.status, NFS3_OK);
	CHECK_EQ(n3_getattr(t, f).mtime.seconds, 1000000000);
	/* a size on a directory; a chmod by another user */
	a.object = h3_fh(root);
	memset(&a.new_attributes, 0, sizeof(a.new_attributes));
	a.new_attributes.size.set_it = true;
	n3(t, NFSPROC3_SETATTR, &a, &r, &arena);
	CHECK_EQ(r.status, NFS3ERR_ISDIR);
	a.object = h3_fh(f);
	a.new_attributes = n3_mode(0777);
	CHECK_EQ(n3_call_on(t->c, 1000, 1000, NFSPROC3_SETATTR, &a, &r, &arena), 0);
	CHECK_EQ(r.status, NFS3ERR_PERM);
	/* a truncation by the owner, seen in size */
	memset(&a.new_attributes, 0, sizeof(a.new_attributes));
	a.new_attributes.size.set_it = true;
	a.new_attributes.size.u.size = 0;
	n3(t, NFSPROC3_SETATTR, &a, &r, &arena);
	CHECK_EQ(r.status, NFS3_OK);
}

static void check_lookup_access(struct mt *t, const struct h3 *root, const struct h3 *f)
{
	struct h3 h;
	CHECK_EQ(n3_lookup(t, root, "f", &h), NFS3_OK);
	CHECK(same_fh(&h, f));
	CHECK_EQ(n3_lookup(t, root, ".", &h), NFS3_OK);
	CHECK(same_fh(&h, root));
	CHECK_EQ(n3_lookup(t, root, "..", &h), NFS3_OK); /* never above the export */
	CHECK(same_fh(&h, root));
	CHECK_EQ(n3_lookup(t, root, "nope", NULL), NFS3ERR_NOENT);
	CHECK_EQ(n3_lookup(t, f, "x", NULL), NFS3ERR_NOTDIR);
	LOOKUP3args la = {.what = n3_where(root, "nope")};
	LOOKUP3res lr;
	arena_reset();
	n3(t, NFSPROC3_LOOKUP, &la, &lr, &arena);
	CHECK(lr.u.resfail.dir_attributes.attributes_follow);

	/* f is 0604, owned by root */
	ACCESS3args aa = {.object = h3_fh(f), .access = ACCESS3_READ | ACCESS3_MODIFY};
	ACCESS3res ar;
	n3(t, NFSPROC3_ACCESS, &aa, &ar, &arena);
	CHECK_EQ(ar.status, NFS3_OK);
	CHECK_EQ(ar.u.resok.access, ACCESS3_READ | ACCESS3_MODIFY);
	CHECK(ar.u.resok.obj_attributes.attributes_follow);
	CHECK_EQ(n3_call_on(t->c, 1000, 1000, NFSPROC3_ACCESS, &aa, &ar, &arena), 0);
	CHECK_EQ(ar.u.resok.access, ACCESS3_READ);
	aa.access = 0x3f;
	aa.object = h3_fh(root);
	CHECK_EQ(n3_call_on(t->c, 1000, 1000, NFSPROC3_ACCESS, &aa, &ar, &arena), 0);
	CHECK_EQ(ar.u.resok.access, ACCESS3_READ | ACCESS3_LOOKUP);
}

static void check_make(struct mt *t, const struct h3 *root, const struct h3 *f, struct h3 *d)
{
	CHECK_EQ(n3_mkdir_as(t, 0, root, "d", 0750, d), NFS3_OK);
	CHECK_EQ(n3_getattr(t, d).type, NF3DIR);
	CHECK_EQ(n3_getattr(t, d).mode, 0750);
	CHECK_EQ(n3_mkdir_as(t, 0, root, "d", 0750, NULL), NFS3ERR_EXIST);
	CHECK_EQ(n3_mkdir_as(t, 0, f, "e", 0750, NULL), NFS3ERR_NOTDIR);

	arena_reset();
	SYMLINK3args sa = {.where = n3_where(root, "l")};
	sa.symlink.symlink_data = xdr_string_of("some/target");
	SYMLINK3res sr;
	n3(t, NFSPROC3_SYMLINK, &sa, &sr, &arena);
	CHECK_EQ(sr.status, NFS3_OK);
	check_wcc(&sr.u.resok.dir_wcc);
	CHECK_EQ(sr.u.resok.obj_attributes.u.attributes.type, NF3LNK);
	struct h3 l = h3_of(&sr.u.resok.obj.u.handle);
	READLINK3args ra = {.symlink = h3_fh(&l)};
	READLINK3res rr;
	n3(t, NFSPROC3_READLINK, &ra, &rr, &arena);
	CHECK_EQ(rr.status, NFS3_OK);
	CHECK(rr.u.resok.data.len == 11 && !memcmp(rr.u.resok.data.val, "some/target", 11));
	ra.symlink = h3_fh(f);
	n3(t, NFSPROC3_READLINK, &ra, &rr, &arena);
	CHECK_EQ(rr.status, NFS3ERR_INVAL);

	/* MKNOD: devices, sockets and fifos; a regular file is BADTYPE */
	MKNOD3args ma;
	memset(&ma, 0, sizeof(ma));
	ma.where = n3_where(root, "p");
	ma.what.type = NF3FIFO;
	ma.what.u.pipe_attributes = n3_mode(0620);
	MKNOD3res mr;
	n3(t, NFSPROC3_MKNOD, &ma, &mr, &arena);
	CHECK_EQ(mr.status, NFS3_OK);
	CHECK_EQ(mr.u.resok.obj_attributes.u.attributes.type, NF3FIFO);
	CHECK_EQ(mr.u.resok.obj_attributes.u.attributes.mode, 0620);
	ma.where = n3_where(root, "c");
	ma.what.type = NF3CHR;
	ma.what.u.device.dev_attributes = n3_mode(0600);
	ma.what.u.device.spec.specdata1 = 7;
	ma.what.u.device.spec.specdata2 = 9;
	n3(t, NFSPROC3_MKNOD, &ma, &mr, &arena);
	CHECK_EQ(mr.status, NFS3_OK);
	CHECK_EQ(mr.u.resok.obj_attributes.u.attributes.type, NF3CHR);
	CHECK_EQ(mr.u.resok.obj_attributes.u.attributes.rdev.specdata1, 7);
	CHECK_EQ(mr.u.resok.obj_attributes.u.attributes.rdev.specdata2, 9);
	ma.where = n3_where(root, "r");
	ma.what.type = NF3REG;
	n3(t, NFSPROC3_MKNOD, &ma, &mr, &arena);
	CHECK_EQ(mr.status, NFS3ERR_BADTYPE);
	ma.what.type = NF3DIR;
	n3(t, NFSPROC3_MKNOD, &ma, &mr, &arena);
	CHECK_EQ(mr.status, NFS3ERR_BADTYPE);
}

static void check_link_rename_remove(struct mt *t, const struct h3 *root, const struct h3 *f,
				     const struct h3 *d)
{
	arena_reset();
	LINK3args la = {.file = h3_fh(f), .link = n3_where(root, "f2")};
	LINK3res lr;
	n3(t, NFSPROC3_LINK, &la, &lr, &arena);
	CHECK_EQ(lr.status, NFS3_OK);
	CHECK_EQ(lr.u.resok.file_attributes.u.attributes.nlink, 2);
	check_wcc(&lr.u.resok.linkdir_wcc);
	la.file = h3_fh(d);
	la.link = n3_where(root, "d2");
	n3(t, NFSPROC3_LINK, &la, &lr, &arena);
	CHECK_EQ(lr.status, NFS3ERR_ISDIR);
	la.file = h3_fh(f);
	la.link = n3_where(root, "f2");
	n3(t, NFSPROC3_LINK, &la, &lr, &arena);
	CHECK_EQ(lr.status, NFS3ERR_EXIST);

	RENAME3args ra = {.from = n3_where(root, "f2"), .to = n3_where(d, "f3")};
	RENAME3res rr;
	n3(t, NFSPROC3_RENAME, &ra, &rr, &arena);
	CHECK_EQ(rr.status, NFS3_OK);
	check_wcc(&rr.u.resok.fromdir_wcc);
	check_wcc(&rr.u.resok.todir_wcc);
	CHECK_EQ(n3_lookup(t, root, "f2", NULL), NFS3ERR_NOENT);
	CHECK_EQ(n3_lookup(t, d, "f3", NULL), NFS3_OK);
	ra.from = n3_where(root, "d");
	ra.to = n3_where(root, "f"); /* a directory over a file */
	n3(t, NFSPROC3_RENAME, &ra, &rr, &arena);
	CHECK_EQ(rr.status, NFS3ERR_NOTDIR);
	ra.from = n3_where(root, "f");
	ra.to = n3_where(root, "d"); /* a file over a directory */
	n3(t, NFSPROC3_RENAME, &ra, &rr, &arena);
	CHECK_EQ(rr.status, NFS3ERR_ISDIR);
	ra.from = n3_where(root, ".");
	n3(t, NFSPROC3_RENAME, &ra, &rr, &arena);
	CHECK_EQ(rr.status, NFS3ERR_INVAL);
	ra.from = n3_where(root, "gone");
	ra.to = n3_where(root, "g2");
	n3(t, NFSPROC3_RENAME, &ra, &rr, &arena);
	CHECK_EQ(rr.status, NFS3ERR_NOENT);
	check_wcc(&rr.u.resfail.fromdir_wcc);

	/* REMOVE is for non-directories, RMDIR for directories */
	CHECK_EQ(n3_remove_as(t, 0, root, "d"), NFS3ERR_ISDIR);
	CHECK_EQ(n3_remove_as(t, 0, root, "nope"), NFS3ERR_NOENT);
	CHECK_EQ(n3_remove_as(t, 0, root, ".."), NFS3ERR_ACCES);
	RMDIR3args da = {.object = n3_where(root, "d")};
	RMDIR3res dr;
	n3(t, NFSPROC3_RMDIR, &da, &dr, &arena);
	CHECK_EQ(dr.status, NFS3ERR_NOTEMPTY);
	check_wcc(&dr.u.resfail.dir_wcc);
	da.object = n3_where(root, "f");
	n3(t, NFSPROC3_RMDIR, &da, &dr, &arena);
	CHECK_EQ(dr.status, NFS3ERR_NOTDIR);
	CHECK_EQ(n3_remove_as(t, 0, d, "f3"), NFS3_OK);
	CHECK_EQ(n3_getattr(t, f).nlink, 1);
	da.object = n3_where(root, "d");
	n3(t, NFSPROC3_RMDIR, &da, &dr, &arena);
	CHECK_EQ(dr.status, NFS3_OK);
	check_wcc(&dr.u.resok.dir_wcc);

	/* a handle of what is gone, and one that is not ours */
	GETATTR3args ga = {.object = h3_fh(d)};
	GETATTR3res gr;
	n3(t, NFSPROC3_GETATTR, &ga, &gr, &arena);
	CHECK_EQ(gr.status, NFS3ERR_STALE);
	struct h3 bad = *f;
	bad.b[20] ^= 1;
	ga.object = h3_fh(&bad);
	n3(t, NFSPROC3_GETATTR, &ga, &gr, &arena);
	CHECK_EQ(gr.status, NFS3ERR_BADHANDLE);
}

/* ---------------------------------------------------------------- READDIR */

#define NBIG 1500

struct seen {
	unsigned char n[NBIG + 20];
	unsigned dots, total;
};

static int name_index(const xdr_string *s)
{
	char b[32];
	if (s->len >= sizeof(b))
		return -1;
	memcpy(b, s->val, s->len);
	b[s->len] = 0;
	int i;
	if (sscanf(b, "e%d", &i) == 1 && i >= 0 && i < NBIG + 20)
		return i;
	return -1;
}

static void seen_one(struct seen *s, const xdr_string *nm, uint64_t cookie)
{
	s->total++;
	if ((nm->len == 1 && nm->val[0] == '.') ||
	    (nm->len == 2 && !memcmp(nm->val, "..", 2))) {
		CHECK_EQ(cookie, nm->len); /* "." 1, ".." 2 */
		s->dots++;
		return;
	}
	int i = name_index(nm);
	CHECK(i >= 0);
	CHECK(s->n[i] < 255);
	s->n[i]++;
}

static void check_readdir(struct mt *t, const struct h3 *root)
{
	struct h3 big;
	CHECK_EQ(n3_mkdir_as(t, 0, root, "big", 0755, &big), NFS3_OK);
	for (int i = 0; i < NBIG; i++) {
		char nm[16];
		snprintf(nm, sizeof(nm), "e%d", i);
		CHECK_EQ(n3_create_as(t, 0, &big, nm, GUARDED, 0644, NULL, NULL, NULL), NFS3_OK);
	}
	uint8_t verf[8];
	memset(verf, 0, 8);

	/* READDIR in 4 KiB replies; between the first two, 10 entries not yet
	 * returned go and 10 new ones come: every entry there all along is
	 * returned exactly once */
	struct seen s = {0};
	uint64_t cookie = 0;
	unsigned replies = 0;
	bool eof = false, churned = false;
	while (!eof) {
		arena_reset();
		READDIR3args a = {.dir = h3_fh(&big), .cookie = cookie, .count = 4096};
		memcpy(a.cookieverf, verf, 8);
		READDIR3res r;
		n3(t, NFSPROC3_READDIR, &a, &r, &arena);
		CHECK_EQ(r.status, NFS3_OK);
		CHECK(r.u.resok.dir_attributes.attributes_follow);
		memcpy(verf, r.u.resok.cookieverf, 8);
		unsigned n = 0;
		for (const entry3 *e = r.u.resok.reply.entries; e; e = e->nextentry, n++) {
			seen_one(&s, &e->name, e->cookie);
			cookie = e->cookie;
		}
		CHECK(n > 0);
		eof = r.u.resok.reply.eof;
		replies++;
		if (!churned) {
			churned = true;
			CHECK_EQ(s.dots, 2);
			unsigned gone = 0;
			for (int i = NBIG - 1; i >= 0 && gone < 10; i--) {
				if (s.n[i])
					continue;
				char nm[16];
				snprintf(nm, sizeof(nm), "e%d", i);
				CHECK_EQ(n3_remove_as(t, 0, &big, nm), NFS3_OK);
				s.n[i] = 100; /* gone: may or may not be seen */
				gone++;
			}
			for (int i = NBIG; i < NBIG + 10; i++) {
				char nm[16];
				snprintf(nm, sizeof(nm), "e%d", i);
				CHECK_EQ(
				    n3_create_as(t, 0, &big, nm, GUARDED, 0644, NULL, NULL, NULL),
				    NFS3_OK);
				s.n[i] = 100; /* new: may or may not be seen */
			}
		}
	}
	CHECK(replies > 10);
	CHECK_EQ(s.dots, 2);
	for (int i = 0; i < NBIG + 10; i++)
		CHECK(s.n[i] == 1 || s.n[i] == 100 || s.n[i] == 101);

	/* a verifier that is not ours with a cookie: BAD_COOKIE; a cookie never issued */
	arena_reset();
	READDIR3args a = {.dir = h3_fh(&big), .cookie = cookie, .count = 4096};
	memset(a.cookieverf, 0x5a, 8);
	READDIR3res r;
	n3(t, NFSPROC3_READDIR, &a, &r, &arena);
	CHECK_EQ(r.status, NFS3ERR_BAD_COOKIE);
	memcpy(a.cookieverf, verf, 8);
	a.cookie = 3;
	n3(t, NFSPROC3_READDIR, &a, &r, &arena);
	CHECK_EQ(r.status, NFS3ERR_BAD_COOKIE);
	a.cookie = 0;
	a.count = 20;
	n3(t, NFSPROC3_READDIR, &a, &r, &arena);
	CHECK_EQ(r.status, NFS3ERR_TOOSMALL);
	a.dir = h3_fh(root);
	struct h3 f;
	CHECK_EQ(n3_lookup(t, root, "f", &f), NFS3_OK);
	a.dir = h3_fh(&f);
	a.count = 4096;
	n3(t, NFSPROC3_READDIR, &a, &r, &arena);
	CHECK_EQ(r.status, NFS3ERR_NOTDIR);

	/* READDIRPLUS: handles and attributes, dircount bounding each reply */
	struct seen p = {0};
	cookie = 0;
	memset(verf, 0, 8);
	eof = false;
	replies = 0;
	unsigned checked = 0;
	while (!eof) {
		arena_reset();
		READDIRPLUS3args pa = {
		    .dir = h3_fh(&big), .cookie = cookie, .dircount = 1024, .maxcount = 32768};
		memcpy(pa.cookieverf, verf, 8);
		READDIRPLUS3res pr;
		n3(t, NFSPROC3_READDIRPLUS, &pa, &pr, &arena);
		CHECK_EQ(pr.status, NFS3_OK);
		memcpy(verf, pr.u.resok.cookieverf, 8);
		unsigned n = 0, dirbytes = 0;
		for (const entryplus3 *e = pr.u.resok.reply.entries; e; e = e->nextentry, n++) {
			seen_one(&p, &e->name, e->cookie);
			dirbytes += 8 + 4 + ((e->name.len + 3) & ~3u) + 8;
			cookie = e->cookie;
			if (e->name.len == 2 && !memcmp(e->name.val, "..", 2))
				continue; /* the export root's parent: outside, no handle */
			CHECK(e->name_attributes.attributes_follow);
			CHECK(e->name_handle.handle_follows);
			CHECK_EQ(e->name_attributes.u.attributes.fileid, e->fileid);
			if (checked < 20 && e->name.len > 2) {
				char nm[32];
				memcpy(nm, e->name.val, e->name.len);
				nm[e->name.len] = 0;
				struct h3 want, got = h3_of(&e->name_handle.u.handle);
				CHECK_EQ(n3_lookup(t, &big, nm, &want), NFS3_OK);
				CHECK(same_fh(&want, &got));
				checked++;
			}
		}
		CHECK(n > 0);
		CHECK(n == 1 || dirbytes <= 1024);
		eof = pr.u.resok.reply.eof;
		replies++;
	}
	CHECK(replies > 20);
	CHECK_EQ(p.dots, 2);
	CHECK_EQ(p.total, NBIG + 2);
	for (int i = 0; i < NBIG + 10; i++) {
		if (i >= NBIG)
			CHECK_EQ(p.n[i], 1); /* made during the first walk */
		else if (s.n[i] >= 100)
			CHECK_EQ(p.n[i], 0); /* removed during the first walk */
		else
			CHECK_EQ(p.n[i], 1);
	}
}

/* ------------------------------------------------------------ file systems */

static void check_fs(struct mt *t, const struct h3 *root, const struct h3 *f)
{
	arena_reset();
	FSSTAT3args sa = {.fsroot = h3_fh(root)};
	FSSTAT3res sr;
	n3(t, NFSPROC3_FSSTAT, &sa, &sr, &arena);
	CHECK_EQ(sr.status, NFS3_OK);
	CHECK(sr.u.resok.obj_attributes.attributes_follow);
	CHECK(sr.u.resok.tfiles > 0);
	CHECK(sr.u.resok.abytes <= sr.u.resok.tbytes);
	FSINFO3args ia = {.fsroot = h3_fh(root)};
	FSINFO3res ir;
	n3(t, NFSPROC3_FSINFO, &ia, &ir, &arena);
	CHECK_EQ(ir.status, NFS3_OK);
	CHECK_EQ(ir.u.resok.rtmax, 1 << 20);
	CHECK_EQ(ir.u.resok.wtmax, 1 << 20);
	CHECK(ir.u.resok.properties & FSF3_LINK);
	CHECK(ir.u.resok.properties & FSF3_SYMLINK);
	CHECK(ir.u.resok.properties & FSF3_CANSETTIME);
	CHECK(ir.u.resok.maxfilesize > (1ull << 40));
	PATHCONF3args pa = {.object = h3_fh(f)};
	PATHCONF3res pr;
	n3(t, NFSPROC3_PATHCONF, &pa, &pr, &arena);
	CHECK_EQ(pr.status, NFS3_OK);
	CHECK_EQ(pr.u.resok.name_max, 255);
	CHECK(pr.u.resok.no_trunc);
	CHECK(!pr.u.resok.case_insensitive);
	CHECK(pr.u.resok.case_preserving);
	/* the same on every handle: one file system */
	CHECK_EQ(n3_getattr(t, root).fsid, n3_getattr(t, f).fsid);

	/* an empty file reads as nothing and needs no data server */
	uint8_t b[16];
	uint32_t n;
	bool eof;
	CHECK_EQ(n3_read(t, f, 0, 16, b, &n, &eof), NFS3_OK);
	CHECK_EQ(n, 0);
	CHECK(eof);
	CHECK_EQ(n3_read(t, root, 0, 16, b, &n, &eof), NFS3ERR_ISDIR);
	COMMIT3args ca = {.file = h3_fh(f)};
	COMMIT3res cr;
	n3(t, NFSPROC3_COMMIT, &ca, &cr, &arena);
	CHECK_EQ(cr.status, NFS3_OK);
	check_wcc(&cr.u.resok.file_wcc);

	/* NULL */
	CHECK_EQ(n3_call_on(t->c, 0, 0, NFSPROC3_NULL, NULL, NULL, &arena), 0);
}

/* -------------------------------------------------------- the reply cache */

static void check_drc(struct mt *t, const struct h3 *root)
{
	CHECK_EQ(n3_create_as(t, 0, root, "drc", GUARDED, 0644, NULL, NULL, NULL), NFS3_OK);
	REMOVE3args a = {.object = n3_where(root, "drc")};
	uint8_t r1[1024], r2[1024], r3[1024];
	size_t n1 = n3_raw(t->port, 0x5eed0001, NFSPROC3_REMOVE, &a, r1, sizeof(r1));
	CHECK_EQ(n3_raw_status(r1, n1), NFS3_OK);
	/* the retransmission (same xid, same arguments, another connection):
	 * the first reply, byte for byte, not NOENT */
	size_t n2 = n3_raw(t->port, 0x5eed0001, NFSPROC3_REMOVE, &a, r2, sizeof(r2));
	CHECK_EQ(n2, n1);
	CHECK(!memcmp(r1, r2, n1));
	/* a new call (another xid) runs: the name is gone */
	size_t n3n = n3_raw(t->port, 0x5eed0002, NFSPROC3_REMOVE, &a, r3, sizeof(r3));
	CHECK_EQ(n3_raw_status(r3, n3n), NFS3ERR_NOENT);
	/* the same xid with other arguments is another call */
	REMOVE3args b = {.object = n3_where(root, "drc-other")};
	n3n = n3_raw(t->port, 0x5eed0001, NFSPROC3_REMOVE, &b, r3, sizeof(r3));
	CHECK_EQ(n3_raw_status(r3, n3n), NFS3ERR_NOENT);

	MKDIR3args m = {.where = n3_where(root, "drc-dir"), .attributes = n3_mode(0755)};
	n1 = n3_raw(t->port, 0x5eed0003, NFSPROC3_MKDIR, &m, r1, sizeof(r1));
	CHECK_EQ(n3_raw_status(r1, n1), NFS3_OK);
	n2 = n3_raw(t->port, 0x5eed0003, NFSPROC3_MKDIR, &m, r2, sizeof(r2));
	CHECK_EQ(n3_raw_status(r2, n2), NFS3_OK); /* not EXIST */
	CHECK(n1 == n2 && !memcmp(r1, r2, n1));
	n3n = n3_raw(t->port, 0x5eed0004, NFSPROC3_MKDIR, &m, r3, sizeof(r3));
	CHECK_EQ(n3_raw_status(r3, n3n), NFS3ERR_EXIST);
	/* idempotent procedures run again: GETATTR sees the new state */
	GETATTR3args g = {.object = h3_fh(root)};
	n1 = n3_raw(t->port, 0x5eed0005, NFSPROC3_GETATTR, &g, r1, sizeof(r1));
	CHECK_EQ(n3_raw_status(r1, n1), NFS3_OK);
	CHECK_EQ(n3_mkdir_as(t, 0, root, "drc-dir2", 0755, NULL), NFS3_OK);
	n2 = n3_raw(t->port, 0x5eed0005, NFSPROC3_GETATTR, &g, r2, sizeof(r2));
	CHECK(n1 != n2 || memcmp(r1, r2, n1)); /* nlink and times moved */
}

/* ---------------------------------------------------------------- exports */

static void check_exports(struct mt *t, const struct h3 *root)
{
	/* a nested ro export: LOOKUP enters it with its rules */
	struct h3 ro, ro_rw, r;
	CHECK_EQ(n3_lookup(t, root, "rosub", &ro), NFS3_OK);
	ro_rw = fh_in(t, &ro, "/ex"); /* the same directory reached as /ex's */
	CHECK_EQ(n3_create_as(t, 0, &ro_rw, "r", GUARDED, 0666, NULL, &r, NULL), NFS3_OK);
	CHECK_EQ(n3_create_as(t, 0, &ro, "r2", GUARDED, 0666, NULL, NULL, NULL), NFS3ERR_ROFS);
	CHECK_EQ(n3_remove_as(t, 0, &ro, "r"), NFS3ERR_ROFS);
	CHECK_EQ(n3_mkdir_as(t, 0, &ro, "rd", 0755, NULL), NFS3ERR_ROFS);
	struct h3 rf;
	CHECK_EQ(n3_lookup(t, &ro, "r", &rf), NFS3_OK);
	uint8_t b[8];
	uint32_t cnt;
	bool eof;
	CHECK_EQ(n3_read(t, &rf, 0, 8, b, &cnt, &eof), NFS3_OK);
	CHECK_EQ(n3_write(t, &rf, 0, "x", 1, FILE_SYNC, NULL, NULL, NULL), NFS3ERR_ROFS);
	SETATTR3args sa;
	memset(&sa, 0, sizeof(sa));
	sa.object = h3_fh(&rf);
	sa.new_attributes = n3_mode(0600);
	SETATTR3res sr;
	arena_reset();
	n3(t, NFSPROC3_SETATTR, &sa, &sr, &arena);
	CHECK_EQ(sr.status, NFS3ERR_ROFS);
	ACCESS3args aa = {.object = h3_fh(&rf), .access = ACCESS3_READ | ACCESS3_MODIFY};
	ACCESS3res ar;
	n3(t, NFSPROC3_ACCESS, &aa, &ar, &arena);
	CHECK_EQ(ar.u.resok.access, ACCESS3_READ);

	/* root_squash: root is nobody (65534) in /ex/sq; other users are themselves */
	struct h3 sq, sq_rw;
	CHECK_EQ(n3_lookup(t, root, "sq", &sq), NFS3_OK);
	CHECK_EQ(n3_create_as(t, 0, &sq, "root-made", GUARDED, 0644, NULL, NULL, NULL),
		 NFS3ERR_ACCES); /* a 0755 directory of root's */
	sq_rw = fh_in(t, &sq, "/ex");
	sa.object = h3_fh(&sq_rw);
	sa.new_attributes = n3_mode(0777);
	n3(t, NFSPROC3_SETATTR, &sa, &sr, &arena);
	CHECK_EQ(sr.status, NFS3_OK);
	struct h3 h;
	CHECK_EQ(n3_create_as(t, 0, &sq, "root-made", GUARDED, 0644, NULL, &h, NULL), NFS3_OK);
	CHECK_EQ(n3_getattr(t, &h).uid, 65534);
	CHECK_EQ(n3_getattr(t, &h).gid, 65534);
	CHECK_EQ(n3_create_as(t, 1000, &sq, "user-made", GUARDED, 0644, NULL, &h, NULL), NFS3_OK);
	CHECK_EQ(n3_getattr(t, &h).uid, 1000);

	/* all_squash, anonuid/anongid: everyone is 1234:1235 */
	struct h3 all, all_rw;
	CHECK_EQ(n3_lookup(t, root, "all", &all), NFS3_OK);
	all_rw = fh_in(t, &all, "/ex");
	sa.object = h3_fh(&all_rw);
	n3(t, NFSPROC3_SETATTR, &sa, &sr, &arena);
	CHECK_EQ(sr.status, NFS3_OK);
	CHECK_EQ(n3_create_as(t, 1000, &all, "a", GUARDED, 0644, NULL, &h, NULL), NFS3_OK);
	CHECK_EQ(n3_getattr(t, &h).uid, 1234);
	CHECK_EQ(n3_getattr(t, &h).gid, 1235);

	/* "secure" (the default): our port is not reserved, so PERM */
	CHECK_EQ(n3_lookup(t, root, "sec", NULL), NFS3ERR_PERM);
	CHECK_EQ(n3_lookup(t, root, "k5", &h), NFS3ERR_ACCES); /* sec=krb5 only: AUTH_SYS refused */
	struct h3 any;
	CHECK_EQ(n3_lookup(t, root, "rosub", &any), NFS3_OK);
	struct h3 sec = fh_in(t, &any, "/ex/sec"), k5 = fh_in(t, &any, "/ex/k5");
	GETATTR3args ga = {.object = h3_fh(&sec)};
	GETATTR3res gr;
	n3(t, NFSPROC3_GETATTR, &ga, &gr, &arena);
	CHECK_EQ(gr.status, NFS3ERR_PERM);
	ga.object = h3_fh(&k5);
	n3(t, NFSPROC3_GETATTR, &ga, &gr, &arena);
	CHECK_EQ(gr.status, NFS3ERR_ACCES);

	/* NFSv4's pseudo filesystem (export id 0) is not NFSv3's */
	struct mds_fh pf;
	CHECK_EQ(mds_fh_parse(t->mds, root->b, root->len, &pf), 0);
	pf.export_id = 0;
	struct h3 pseudo = {.len = MDS_FH_SIZE};
	mds_fh_make(t->mds, &pf, pseudo.b);
	ga.object = h3_fh(&pseudo);
	n3(t, NFSPROC3_GETATTR, &ga, &gr, &arena);
	CHECK_EQ(gr.status, NFS3ERR_STALE);

	/* an export removed by a reload: its handles are STALE */
	mt_write_file(t->exports_path, "/ex *(rw,no_root_squash,insecure)\n", 0644);
	char msg[256];
	CHECK_EQ(braid_mds_exports_reload(t->mds, msg, sizeof(msg)), 0);
	ga.object = h3_fh(&ro);
	n3(t, NFSPROC3_GETATTR, &ga, &gr, &arena);
	CHECK_EQ(gr.status, NFS3ERR_STALE);
	ga.object = h3_fh(root);
	n3(t, NFSPROC3_GETATTR, &ga, &gr, &arena);
	CHECK_EQ(gr.status, NFS3_OK);
	/* and a client the export no longer admits: ACCES */
	mt_write_file(t->exports_path, "/ex 10.9.9.9(rw,insecure)\n", 0644);
	CHECK_EQ(braid_mds_exports_reload(t->mds, msg, sizeof(msg)), 0);
	n3(t, NFSPROC3_GETATTR, &ga, &gr, &arena);
	CHECK_EQ(gr.status, NFS3ERR_ACCES);
}

int main(void)
{
	struct mt t;
	xdr_arena_init(&arena, NULL, 0, 8u << 20);
	mt_start(&t, exports_text, NULL);
	struct h3 root = n3_mount(&t, "/ex"), f, d;
	CHECK_EQ(n3_getattr(&t, &root).type, NF3DIR);
	check_create(&t, &root, &f);
	check_setattr(&t, &root, &f);
	check_lookup_access(&t, &root, &f);
	check_make(&t, &root, &f, &d);
	check_link_rename_remove(&t, &root, &f, &d);
	check_readdir(&t, &root);
	check_fs(&t, &root, &f);
	check_drc(&t, &root);
	check_exports(&t, &root);
	xdr_arena_release(&arena);
	mt_finish(&t);
	return 0;
}
