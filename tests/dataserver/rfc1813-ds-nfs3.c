/* SPDX-License-Identifier: MIT */
/*
 * braid-ds NFSv3 data service (RFC 1813 procedures a flexfiles client uses,
 * RFC 8435 §2.2 fencing) through our own client: every procedure, handles
 * that are forged, altered, truncated or stale, fenced credentials,
 * oversized requests, a corrupted block, and a page the kernel cannot read
 * under a READ (EIO on the worker thread, the server lives on).
 */
#include "config.h"

#include <dirent.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "tests/dataserver/ds-test.h"

static struct dt T;

static void t_null_and_unavail(void)
{
	CHECK_EQ(dt_nfs3(T.c, NFSPROC3_NULL, NULL, NULL, NULL, 0, 0), 0);
	/* a DS has no namespace: LOOKUP is not a procedure it serves */
	LOOKUP3args la;
	memset(&la, 0, sizeof(la));
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	LOOKUP3res lr;
	CHECK_EQ(dt_nfs3(T.c, NFSPROC3_LOOKUP, &la, &lr, &ar, 0, 0),
		 NFSD_CALL_ERR_ACCEPT | NFSD_PROC_UNAVAIL);
	xdr_arena_release(&ar);
}

static void t_write_read_commit(const uint8_t *fh, uint32_t fhlen)
{
	static uint8_t buf[1 << 20], back[1 << 20];
	uint8_t v1[8], v2[8], v3[8];
	/* the three stabilities; each answers with the boot verifier */
	dt_fill(buf, 0, sizeof(buf), 1);
	CHECK_EQ(dt_write(T.c, fh, fhlen, 0, buf, 65536, UNSTABLE, v1, DT_UID), NFS3_OK);
	dt_fill(buf, 65536, 65536, 1);
	CHECK_EQ(dt_write(T.c, fh, fhlen, 65536, buf, 65536, DATA_SYNC, v2, DT_UID), NFS3_OK);
	dt_fill(buf, 131072, 1 << 20, 1);
	CHECK_EQ(dt_write(T.c, fh, fhlen, 131072, buf, 1 << 20, FILE_SYNC, v3, DT_UID), NFS3_OK);
	CHECK(memcmp(v1, v2, 8) == 0 && memcmp(v2, v3, 8) == 0);
	uint8_t sv[8];
	ds_store_verifier(braid_ds_store(T.ds), sv);
	CHECK(memcmp(sv, v1, 8) == 0);

	/* read it all back across the three writes; eof at the end */
	uint32_t n;
	bool eof;
	CHECK_EQ(dt_read(T.c, fh, fhlen, 0, 1 << 20, back, &n, &eof, DT_UID), NFS3_OK);
	CHECK_EQ(n, 1 << 20);
	CHECK(!eof);
	CHECK(dt_check(back, 0, n, 1));
	CHECK_EQ(dt_read(T.c, fh, fhlen, 1 << 20, 1 << 20, back, &n, &eof, DT_UID), NFS3_OK);
	CHECK_EQ(n, 131072);
	CHECK(eof);
	CHECK(dt_check(back, 1 << 20, n, 1));
	/* past the end: nothing, eof */
	CHECK_EQ(dt_read(T.c, fh, fhlen, 5 << 20, 4096, back, &n, &eof, DT_UID), NFS3_OK);
	CHECK_EQ(n, 0);
	CHECK(eof);
	/* unaligned small read is copied, not referenced: still right */
	CHECK_EQ(dt_read(T.c, fh, fhlen, 12345, 100, back, &n, &eof, DT_UID), NFS3_OK);
	CHECK_EQ(n, 100);
	CHECK(dt_check(back, 12345, 100, 1));

	/* COMMIT returns the same verifier */
	COMMIT3args ca = { .file = dt_fh3(fh, fhlen), .offset = 0, .count = 0 };
	COMMIT3res cr;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	CHECK_EQ(dt_nfs3(T.c, NFSPROC3_COMMIT, &ca, &cr, &ar, DT_UID, DT_GID), 0);
	CHECK_EQ(cr.status, NFS3_OK);
	CHECK(memcmp(cr.u.resok.verf, v1, 8) == 0);
	xdr_arena_release(&ar);
}

static void t_attrs(const uint8_t *fh, uint32_t fhlen)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	GETATTR3args ga = { .object = dt_fh3(fh, fhlen) };
	GETATTR3res gr;
	CHECK_EQ(dt_nfs3(T.c, NFSPROC3_GETATTR, &ga, &gr, &ar, DT_UID, DT_GID), 0);
	CHECK_EQ(gr.status, NFS3_OK);
	const fattr3 *a = &gr.u.resok.obj_attributes;
	CHECK_EQ(a->type, NF3REG);
	CHECK_EQ(a->mode, 0600);
	CHECK_EQ(a->uid, DT_UID);
	CHECK_EQ(a->gid, DT_GID);
	CHECK_EQ(a->size, (1 << 20) + 131072);
	CHECK(a->used >= a->size);
	nfstime3 mtime = a->mtime;

	/* SETATTR size: truncate, with wcc before and after */
	SETATTR3args sa;
	memset(&sa, 0, sizeof(sa));
	sa.object = dt_fh3(fh, fhlen);
	sa.new_attributes.size.set_it = true;
	sa.new_attributes.size.u.size = 100000;
	SETATTR3res sr;
	CHECK_EQ(dt_nfs3(T.c, NFSPROC3_SETATTR, &sa, &sr, &ar, DT_UID, DT_GID), 0);
	CHECK_EQ(sr.status, NFS3_OK);
	CHECK(sr.u.resok.obj_wcc.before.attributes_follow);
	CHECK_EQ(sr.u.resok.obj_wcc.before.u.attributes.size, (1 << 20) + 131072);
	CHECK(sr.u.resok.obj_wcc.after.attributes_follow);
	CHECK_EQ(sr.u.resok.obj_wcc.after.u.attributes.size, 100000);
	/* a guard with a stale ctime: NOT_SYNC, nothing changed */
	sa.guard.check = true;
	sa.guard.u.obj_ctime = mtime;
	sa.new_attributes.size.u.size = 5;
	CHECK_EQ(dt_nfs3(T.c, NFSPROC3_SETATTR, &sa, &sr, &ar, DT_UID, DT_GID), 0);
	CHECK_EQ(sr.status, NFS3ERR_NOT_SYNC);
	CHECK_EQ(sr.u.resfail.obj_wcc.after.u.attributes.size, 100000);
	/* the fence is the MDS's: no mode or owner change from clients */
	memset(&sa.new_attributes, 0, sizeof(sa.new_attributes));
	sa.guard.check = false;
	sa.new_attributes.mode.set_it = true;
	sa.new_attributes.mode.u.mode = 0666;
	CHECK_EQ(dt_nfs3(T.c, NFSPROC3_SETATTR, &sa, &sr, &ar, DT_UID, DT_GID), 0);
	CHECK_EQ(sr.status, NFS3ERR_PERM);
	/* truncate by someone else: ACCES */
	memset(&sa.new_attributes, 0, sizeof(sa.new_attributes));
	sa.new_attributes.size.set_it = true;
	sa.new_attributes.size.u.size = 0;
	CHECK_EQ(dt_nfs3(T.c, NFSPROC3_SETATTR, &sa, &sr, &ar, 999, 999), 0);
	CHECK_EQ(sr.status, NFS3ERR_ACCES);

	/* ACCESS: the owner may read and write, others nothing */
	ACCESS3args aa = { .object = dt_fh3(fh, fhlen), .access = 0x3f };
	ACCESS3res arr;
	CHECK_EQ(dt_nfs3(T.c, NFSPROC3_ACCESS, &aa, &arr, &ar, DT_UID, DT_GID), 0);
	CHECK_EQ(arr.status, NFS3_OK);
	CHECK_EQ(arr.u.resok.access, ACCESS3_READ | ACCESS3_MODIFY | ACCESS3_EXTEND);
	CHECK_EQ(dt_nfs3(T.c, NFSPROC3_ACCESS, &aa, &arr, &ar, 999, 999), 0);
	CHECK_EQ(arr.u.resok.access, 0);

	FSINFO3args fa = { .fsroot = dt_fh3(fh, fhlen) };
	FSINFO3res fr;
	CHECK_EQ(dt_nfs3(T.c, NFSPROC3_FSINFO, &fa, &fr, &ar, DT_UID, DT_GID), 0);
	CHECK_EQ(fr.status, NFS3_OK);
	CHECK_EQ(fr.u.resok.rtmax, 1 << 20);
	CHECK_EQ(fr.u.resok.wtmax, 1 << 20);
	CHECK_EQ(fr.u.resok.rtmult, 4096);
	FSSTAT3args fsa = { .fsroot = dt_fh3(fh, fhlen) };
	FSSTAT3res fsr;
	CHECK_EQ(dt_nfs3(T.c, NFSPROC3_FSSTAT, &fsa, &fsr, &ar, DT_UID, DT_GID), 0);
	CHECK_EQ(fsr.status, NFS3_OK);
	CHECK(fsr.u.resok.tbytes > 0 && fsr.u.resok.fbytes <= fsr.u.resok.tbytes);
	PATHCONF3args pa = { .object = dt_fh3(fh, fhlen) };
	PATHCONF3res pr;
	CHECK_EQ(dt_nfs3(T.c, NFSPROC3_PATHCONF, &pa, &pr, &ar, DT_UID, DT_GID), 0);
	CHECK_EQ(pr.status, NFS3_OK);
	CHECK_EQ(pr.u.resok.name_max, 255);
	xdr_arena_release(&ar);
}

/* Every handle-taking procedure refuses h with want. */
static void all_refuse(const uint8_t *h, uint32_t len, int want)
{
	uint8_t buf[4096];
	uint32_t n;
	bool eof;
	CHECK_EQ(dt_read(T.c, h, len, 0, 4096, buf, &n, &eof, DT_UID), want);
	memset(buf, 7, sizeof(buf));
	CHECK_EQ(dt_write(T.c, h, len, 0, buf, 4096, FILE_SYNC, NULL, DT_UID), want);
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	GETATTR3args ga = { .object = dt_fh3(h, len) };
	GETATTR3res gr;
	CHECK_EQ(dt_nfs3(T.c, NFSPROC3_GETATTR, &ga, &gr, &ar, DT_UID, DT_GID), 0);
	CHECK_EQ(gr.status, want);
	COMMIT3args ca = { .file = dt_fh3(h, len) };
	COMMIT3res cr;
	CHECK_EQ(dt_nfs3(T.c, NFSPROC3_COMMIT, &ca, &cr, &ar, DT_UID, DT_GID), 0);
	CHECK_EQ(cr.status, want);
	xdr_arena_release(&ar);
}

static void t_handles(const uint8_t *fh, uint32_t fhlen)
{
	uint8_t h[64];
	/* every single-bit change anywhere in the handle is caught */
	for (unsigned bit = 0; bit < fhlen * 8; bit += 7) {
		memcpy(h, fh, fhlen);
		h[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		uint8_t buf[16];
		uint32_t n;
		bool eof;
		CHECK_EQ(dt_read(T.c, h, fhlen, 0, 16, buf, &n, &eof, DT_UID), NFS3ERR_BADHANDLE);
	}
	memcpy(h, fh, fhlen);
	h[20] ^= 1; /* another object key, same MAC */
	all_refuse(h, fhlen, NFS3ERR_BADHANDLE);
	all_refuse(fh, fhlen - 1, NFS3ERR_BADHANDLE); /* truncated */
	all_refuse(fh, 0, NFS3ERR_BADHANDLE);         /* empty */
	/* a well-formed handle signed with another key (a forger's) */
	struct braid_key other;
	uint8_t raw[BRAID_KEY_BYTES];
	memset(raw, 0x5a, sizeof(raw));
	braid_key_from_bytes(&other, raw);
	struct ds_objid id = dt_id(1, 1);
	ds_fh_make(&other, &id, h);
	all_refuse(h, DS_FH_SIZE, NFS3ERR_BADHANDLE);
	/* the same key's id with a forged tag */
	ds_fh_make(&T.key, &id, h);
	memset(h + 32, 0, 16);
	all_refuse(h, DS_FH_SIZE, NFS3ERR_BADHANDLE);

	/* genuine handles of objects that are gone or another generation: STALE */
	struct ds_objid gone = dt_id(77, 1);
	uint8_t gfh[DS_CTL_FH_MAX];
	uint32_t glen;
	dt_create(&T, &gone, gfh, &glen);
	CHECK_EQ(ds_ctl_remove(T.c, &T.key, &gone), 0);
	all_refuse(gfh, glen, NFS3ERR_STALE);
	struct ds_objid never = dt_id(78, 1);
	ds_fh_make(&T.key, &never, h);
	all_refuse(h, DS_FH_SIZE, NFS3ERR_STALE);
	struct ds_objid newer = dt_id(1, 2); /* object 1 exists at generation 1 */
	ds_fh_make(&T.key, &newer, h);
	all_refuse(h, DS_FH_SIZE, NFS3ERR_STALE);
}

static void t_fencing(void)
{
	struct ds_objid id = dt_id(5, 1);
	uint8_t fh[DS_CTL_FH_MAX], buf[8192];
	uint32_t fhlen, n;
	bool eof;
	dt_create(&T, &id, fh, &fhlen);
	dt_fill(buf, 0, sizeof(buf), 5);
	CHECK_EQ(dt_write(T.c, fh, fhlen, 0, buf, 8192, FILE_SYNC, NULL, DT_UID), NFS3_OK);
	/* another uid in the same group has no rights under 0600 */
	CHECK_EQ(dt_read(T.c, fh, fhlen, 0, 8192, buf, &n, &eof, DT_UID + 1), NFS3ERR_ACCES);
	CHECK_EQ(dt_write(T.c, fh, fhlen, 0, buf, 8192, UNSTABLE, NULL, DT_UID + 1), NFS3ERR_ACCES);
	/* the MDS fences DT_UID: its I/O now fails, the new owner's works */
	CHECK_EQ(ds_ctl_setfence(T.c, &T.key, &id, DT_UID + 100, DT_GID + 100, 0600), 0);
	CHECK_EQ(dt_read(T.c, fh, fhlen, 0, 8192, buf, &n, &eof, DT_UID), NFS3ERR_ACCES);
	CHECK_EQ(dt_write(T.c, fh, fhlen, 0, buf, 8192, FILE_SYNC, NULL, DT_UID), NFS3ERR_ACCES);
	READ3args a = { .file = dt_fh3(fh, fhlen), .offset = 0, .count = 8192 };
	READ3res r;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	CHECK_EQ(dt_nfs3(T.c, NFSPROC3_READ, &a, &r, &ar, DT_UID + 100, DT_GID + 100), 0);
	CHECK_EQ(r.status, NFS3_OK);
	CHECK(dt_check(r.u.resok.data.val, 0, 8192, 5));
	/* AUTH_NONE is nobody */
	struct nfsd_call_opts o = {
		.prog = NFS_PROGRAM, .vers = NFS_V3, .proc = NFSPROC3_READ,
		.enc_args = xdr_desc_NFS_PROGRAM_NFS_V3.procs[NFSPROC3_READ].enc_arg, .args = &a,
	};
	CHECK_EQ(nfsd_clnt_call(T.c, &o, xdr_desc_NFS_PROGRAM_NFS_V3.procs[NFSPROC3_READ].dec_res,
				&r, &ar),
		 0);
	CHECK_EQ(r.status, NFS3ERR_ACCES);
	xdr_arena_release(&ar);
}

static void t_oversized(const uint8_t *fh, uint32_t fhlen)
{
	/* READ over rtmax: a short read of rtmax (RFC 1813 §3.3.6) */
	static uint8_t big[2 << 20];
	uint32_t n;
	bool eof;
	struct ds_objid id = dt_id(9, 1);
	uint8_t f2[DS_CTL_FH_MAX];
	uint32_t l2;
	dt_create(&T, &id, f2, &l2);
	dt_fill(big, 0, sizeof(big), 9);
	for (unsigned i = 0; i < 2; i++)
		CHECK_EQ(dt_write(T.c, f2, l2, (uint64_t)i << 20, big + ((size_t)i << 20), 1 << 20,
				  UNSTABLE, NULL, DT_UID),
			 NFS3_OK);
	CHECK_EQ(dt_read(T.c, f2, l2, 0, 64u << 20, big, &n, &eof, DT_UID), NFS3_OK);
	CHECK_EQ(n, 1 << 20);
	CHECK(!eof);
	/* WRITE whose count disagrees with its data, or over wtmax: INVAL */
	WRITE3args wa = { .file = dt_fh3(fh, fhlen), .offset = 0, .count = 100,
			  .stable = UNSTABLE, .data = xdr_opaque_of(big, 50) };
	WRITE3res wr;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	CHECK_EQ(dt_nfs3(T.c, NFSPROC3_WRITE, &wa, &wr, &ar, DT_UID, DT_GID), 0);
	CHECK_EQ(wr.status, NFS3ERR_INVAL);
	wa.count = (1 << 20) + 4096;
	wa.data = xdr_opaque_of(big, wa.count);
	CHECK_EQ(dt_nfs3(T.c, NFSPROC3_WRITE, &wa, &wr, &ar, DT_UID, DT_GID), 0);
	CHECK_EQ(wr.status, NFS3ERR_INVAL);
	/* a record larger than the server takes: this connection is dropped,
	 * the server and other clients go on */
	struct nfsd_clnt *c2 = dt_connect(&T, T.port);
	wa.count = 2u << 20;
	wa.data = xdr_opaque_of(big, wa.count);
	int rc = dt_nfs3(c2, NFSPROC3_WRITE, &wa, &wr, &ar, DT_UID, DT_GID);
	CHECK(rc != 0);
	nfsd_clnt_free(c2);
	CHECK_EQ(dt_read(T.c, f2, l2, 1 << 20, 4096, big, &n, &eof, DT_UID), NFS3_OK);
	CHECK(dt_check(big, 1 << 20, 4096, 9));
	xdr_arena_release(&ar);
}

/* Flip a byte of the object's data file on disk: READ answers IO, never data. */
static void t_corrupt_block(void)
{
	struct ds_objid id = dt_id(11, 1);
	uint8_t fh[DS_CTL_FH_MAX], buf[65536];
	uint32_t fhlen, n;
	bool eof;
	dt_create(&T, &id, fh, &fhlen);
	dt_fill(buf, 0, sizeof(buf), 11);
	CHECK_EQ(dt_write(T.c, fh, fhlen, 0, buf, 65536, FILE_SYNC, NULL, DT_UID), NFS3_OK);
	char hex[2 * DS_KEY_SIZE + 1], pat[8400];
	for (int i = 0; i < DS_KEY_SIZE; i++)
		snprintf(hex + 2 * i, 3, "%02x", id.key[i]);
	snprintf(pat, sizeof(pat), "%s/store/objects/*/%s", T.dir, hex);
	glob_t g;
	CHECK(glob(pat, 0, NULL, &g) == 0 && g.gl_pathc == 1);
	int fd = open(g.gl_pathv[0], O_RDWR);
	CHECK(fd >= 0);
	uint8_t b;
	CHECK(pread(fd, &b, 1, 20000) == 1);
	b ^= 0x40;
	CHECK(pwrite(fd, &b, 1, 20000) == 1);
	close(fd);
	globfree(&g);
	/* drop cached state: restart the DS so the object is read from disk */
	dt_stop(&T);
	dt_start(&T);
	CHECK_EQ(dt_read(T.c, fh, fhlen, 16384, 4096, buf, &n, &eof, DT_UID), NFS3ERR_IO);
	CHECK_EQ(dt_read(T.c, fh, fhlen, 0, 65536, buf, &n, &eof, DT_UID), NFS3ERR_IO);
	/* blocks around it are fine */
	CHECK_EQ(dt_read(T.c, fh, fhlen, 0, 16384, buf, &n, &eof, DT_UID), NFS3_OK);
	CHECK(dt_check(buf, 0, 16384, 11));
	CHECK_EQ(dt_read(T.c, fh, fhlen, 24576, 4096, buf, &n, &eof, DT_UID), NFS3_OK);
	CHECK(dt_check(buf, 24576, 4096, 11));
	struct ds_store_counters cn;
	ds_store_counters(braid_ds_store(T.ds), &cn);
	CHECK(cn.crc_errors >= 2);
	/* scrub names it */
	struct ds_scrub_stats ss;
	CHECK_EQ(braid_ds_scrub(T.ds, &ss), 0);
	CHECK_EQ(ss.bad_objects, 1);
	CHECK_EQ(ss.bad_blocks, 1);
	/* rewriting the block heals it */
	dt_fill(buf, 16384, 4096, 11);
	CHECK_EQ(dt_write(T.c, fh, fhlen, 16384, buf, 4096, FILE_SYNC, NULL, DT_UID), NFS3_OK);
	CHECK_EQ(dt_read(T.c, fh, fhlen, 0, 65536, buf, &n, &eof, DT_UID), NFS3_OK);
	CHECK(dt_check(buf, 0, 65536, 11));
}

/* test_mapped_hook: cut the data file to nothing, once, under a READ */
static atomic_int cut_armed;
static void cut_once(int dfd, void *arg)
{
	(void)arg;
	if (atomic_exchange(&cut_armed, 0))
		CHECK_EQ(ftruncate(dfd, 0), 0);
}

/*
 * A page the kernel cannot fill while a READ verifies it (a disk I/O
 * error; here the data file cut short outside braid-ds, in the window
 * before the verify pass): the READ, on a worker thread, answers IO and
 * the server lives on.
 */
static void t_unreadable_page(void)
{
	dt_stop(&T);
	T.set.store_test_mapped_hook = cut_once;
	dt_start(&T);
	struct ds_objid a = dt_id(12, 1), b = dt_id(13, 1);
	uint8_t fa[DS_CTL_FH_MAX], fb[DS_CTL_FH_MAX], buf[65536];
	uint32_t la, lb, n;
	bool eof;
	dt_create(&T, &a, fa, &la);
	dt_create(&T, &b, fb, &lb);
	dt_fill(buf, 0, sizeof(buf), 12);
	CHECK_EQ(dt_write(T.c, fa, la, 0, buf, 65536, FILE_SYNC, NULL, DT_UID), NFS3_OK);
	CHECK_EQ(dt_write(T.c, fb, lb, 0, buf, 65536, FILE_SYNC, NULL, DT_UID), NFS3_OK);
	struct ds_store_counters c0, c1;
	ds_store_counters(braid_ds_store(T.ds), &c0);
	atomic_store(&cut_armed, 1);
	CHECK_EQ(dt_read(T.c, fa, la, 0, 65536, buf, &n, &eof, DT_UID), NFS3ERR_IO);
	CHECK_EQ(atomic_load(&cut_armed), 0);
	ds_store_counters(braid_ds_store(T.ds), &c1);
	CHECK_EQ(c1.read_faults, c0.read_faults + 1);
	/* still serving */
	CHECK_EQ(dt_read(T.c, fb, lb, 0, 65536, buf, &n, &eof, DT_UID), NFS3_OK);
	CHECK(n == 65536 && dt_check(buf, 0, 65536, 12));
	dt_stop(&T);
	T.set.store_test_mapped_hook = NULL;
	dt_start(&T);
}

int main(void)
{
	dt_prepare(&T, NULL);
	dt_start(&T);
	t_null_and_unavail();
	struct ds_objid id = dt_id(1, 1);
	uint8_t fh[DS_CTL_FH_MAX];
	uint32_t fhlen;
	dt_create(&T, &id, fh, &fhlen);
	/* CREATE is idempotent: the same handle again */
	uint8_t fh2[DS_CTL_FH_MAX];
	uint32_t fhlen2;
	dt_create(&T, &id, fh2, &fhlen2);
	CHECK(fhlen == fhlen2 && memcmp(fh, fh2, fhlen) == 0);
	t_write_read_commit(fh, fhlen);
	t_attrs(fh, fhlen);
	t_handles(fh, fhlen);
	t_fencing();
	t_oversized(fh, fhlen);
	t_corrupt_block();
	t_unreadable_page();
	dt_finish(&T);
	printf("ok\n");
	return 0;
}
