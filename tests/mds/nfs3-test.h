/* SPDX-License-Identifier: MIT */
/*
 * Helpers for braid-mds's NFSv3 tests: calls of program 100003 v3 through
 * our RPC client as an AUTH_SYS user, MOUNT's handles, and raw calls with
 * a chosen xid (a retransmission, for the reply cache).
 *
 * Include "config.h" and tests/mds/mds-test.h before this header.
 */
#ifndef BRAID_TESTS_MDS_NFS3_TEST_H
#define BRAID_TESTS_MDS_NFS3_TEST_H

#include "nfs3_prot.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mds/fh.h"
#include "nfsd/bytes.h"

/* after mds-test.h, whose parameters are named like its typedefs */
#include "mount_prot.h"

/* A handle kept beyond an arena. */
struct h3 {
	uint8_t b[NFS3_FHSIZE];
	uint32_t len;
};

static inline nfs_fh3 h3_fh(const struct h3 *h)
{
	nfs_fh3 f = {.data = xdr_opaque_of(h->b, h->len)};
	return f;
}

static inline struct h3 h3_of(const nfs_fh3 *f)
{
	struct h3 h = {.len = f->data.len};
	CHECK(f->data.len <= NFS3_FHSIZE);
	memcpy(h.b, f->data.val, f->data.len);
	return h;
}

/* An NFSv3 call on c as AUTH_SYS uid/gid; 0 or the client's error. */
static inline int n3_call_on(struct nfsd_clnt *c, uint32_t uid, uint32_t gid, uint32_t proc,
			     const void *args, void *res, struct xdr_arena *ar)
{
	const struct xdr_proc_desc *d = &xdr_desc_NFS_PROGRAM_NFS_V3.procs[proc];
	struct nfsd_call_opts o = {
	    .prog = NFS_PROGRAM,
	    .vers = NFS_V3,
	    .proc = proc,
	    .enc_args = d->arg_size ? d->enc_arg : NULL,
	    .args = args,
	    .timeout_ms = 30000,
	    .flavor = NFSD_AUTH_SYS,
	    .uid = uid,
	    .gid = gid,
	    .machine = "nfs3-test",
	};
	return nfsd_clnt_call(c, &o, d->res_size ? d->dec_res : xdr_dec_void, res, ar);
}

/* The same as root on t's default connection; the call must go through. */
static inline void n3(struct mt *t, uint32_t proc, const void *args, void *res,
		      struct xdr_arena *ar)
{
	CHECK_EQ(n3_call_on(t->c, 0, 0, proc, args, res, ar), 0);
}

/* MOUNT v3 MNT of path: its handle (status must be MNT3_OK). */
static inline struct h3 n3_mount(struct mt *t, const char *path)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	const struct xdr_proc_desc *d = &xdr_desc_MOUNT_PROGRAM_MOUNT_V3.procs[MOUNTPROC3_MNT];
	dirpath p = xdr_opaque_of(path, strlen(path));
	mountres3 r;
	memset(&r, 0, sizeof(r));
	struct nfsd_call_opts o = {.prog = MOUNT_PROGRAM,
				   .vers = MOUNT_V3,
				   .proc = MOUNTPROC3_MNT,
				   .enc_args = d->enc_arg,
				   .args = &p,
				   .timeout_ms = 30000};
	CHECK_EQ(nfsd_clnt_call(t->c, &o, d->dec_res, &r, &ar), 0);
	CHECK_EQ(r.fhs_status, MNT3_OK);
	struct h3 h = {.len = r.u.mountinfo.fhandle.len};
	memcpy(h.b, r.u.mountinfo.fhandle.val, h.len);
	xdr_arena_release(&ar);
	return h;
}

static inline diropargs3 n3_where(const struct h3 *dir, const char *nm)
{
	diropargs3 w = {.dir = h3_fh(dir), .name = xdr_opaque_of(nm, strlen(nm))};
	return w;
}

/* LOOKUP as uid/gid: the status, the handle in *out on success. */
static inline nfsstat3 n3_lookup_as(struct mt *t, uint32_t uid, const struct h3 *dir,
				    const char *nm, struct h3 *out)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	LOOKUP3args a = {.what = n3_where(dir, nm)};
	LOOKUP3res r;
	CHECK_EQ(n3_call_on(t->c, uid, uid, NFSPROC3_LOOKUP, &a, &r, &ar), 0);
	if (r.status == NFS3_OK && out)
		*out = h3_of(&r.u.resok.object);
	xdr_arena_release(&ar);
	return r.status;
}

static inline nfsstat3 n3_lookup(struct mt *t, const struct h3 *dir, const char *nm,
				 struct h3 *out)
{
	return n3_lookup_as(t, 0, dir, nm, out);
}

/* GETATTR as root: must succeed. */
static inline fattr3 n3_getattr(struct mt *t, const struct h3 *h)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	GETATTR3args a = {.object = h3_fh(h)};
	GETATTR3res r;
	n3(t, NFSPROC3_GETATTR, &a, &r, &ar);
	CHECK_EQ(r.status, NFS3_OK);
	fattr3 f = r.u.resok.obj_attributes;
	xdr_arena_release(&ar);
	return f;
}

static inline sattr3 n3_mode(uint32_t mode)
{
	sattr3 s;
	memset(&s, 0, sizeof(s));
	s.mode.set_it = true;
	s.mode.u.mode = mode;
	return s;
}

/* CREATE (UNCHECKED or GUARDED with mode, or EXCLUSIVE with verf) as uid. */
static inline nfsstat3 n3_create_as(struct mt *t, uint32_t uid, const struct h3 *dir,
				    const char *nm, createmode3 how, uint32_t mode,
				    const uint8_t *verf, struct h3 *out, CREATE3res *res_out)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	CREATE3args a;
	memset(&a, 0, sizeof(a));
	a.where = n3_where(dir, nm);
	a.how.mode = how;
	if (how == EXCLUSIVE)
		memcpy(a.how.u.verf, verf, 8);
	else
		a.how.u.obj_attributes = n3_mode(mode);
	CREATE3res r;
	CHECK_EQ(n3_call_on(t->c, uid, uid, NFSPROC3_CREATE, &a, &r, &ar), 0);
	if (r.status == NFS3_OK && out) {
		CHECK(r.u.resok.obj.handle_follows);
		*out = h3_of(&r.u.resok.obj.u.handle);
	}
	if (res_out) {
		*res_out = r; /* without its handle's memory */
		res_out->u.resok.obj.handle_follows = false;
	}
	xdr_arena_release(&ar);
	return r.status;
}

static inline nfsstat3 n3_mkdir_as(struct mt *t, uint32_t uid, const struct h3 *dir,
				   const char *nm, uint32_t mode, struct h3 *out)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	MKDIR3args a = {.where = n3_where(dir, nm), .attributes = n3_mode(mode)};
	MKDIR3res r;
	CHECK_EQ(n3_call_on(t->c, uid, uid, NFSPROC3_MKDIR, &a, &r, &ar), 0);
	if (r.status == NFS3_OK && out)
		*out = h3_of(&r.u.resok.obj.u.handle);
	xdr_arena_release(&ar);
	return r.status;
}

static inline nfsstat3 n3_remove_as(struct mt *t, uint32_t uid, const struct h3 *dir,
				    const char *nm)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	REMOVE3args a = {.object = n3_where(dir, nm)};
	REMOVE3res r;
	CHECK_EQ(n3_call_on(t->c, uid, uid, NFSPROC3_REMOVE, &a, &r, &ar), 0);
	xdr_arena_release(&ar);
	return r.status;
}

/* WRITE as root: the status; count, committed and verf on success. */
static inline nfsstat3 n3_write(struct mt *t, const struct h3 *f, uint64_t off, const void *p,
				uint32_t len, stable_how how, uint32_t *count,
				stable_how *committed, uint8_t verf[8])
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	WRITE3args a = {.file = h3_fh(f),
			.offset = off,
			.count = len,
			.stable = how,
			.data = xdr_opaque_of(p, len)};
	WRITE3res r;
	n3(t, NFSPROC3_WRITE, &a, &r, &ar);
	if (r.status == NFS3_OK) {
		if (count)
			*count = r.u.resok.count;
		if (committed)
			*committed = r.u.resok.committed;
		if (verf)
			memcpy(verf, r.u.resok.verf, 8);
	}
	xdr_arena_release(&ar);
	return r.status;
}

/* READ as root into buf: the status; *n and *eof on success. */
static inline nfsstat3 n3_read(struct mt *t, const struct h3 *f, uint64_t off, uint32_t count,
			       void *buf, uint32_t *n, bool *eof)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 4u << 20);
	READ3args a = {.file = h3_fh(f), .offset = off, .count = count};
	READ3res r;
	n3(t, NFSPROC3_READ, &a, &r, &ar);
	if (r.status == NFS3_OK) {
		CHECK_EQ(r.u.resok.count, r.u.resok.data.len);
		CHECK(r.u.resok.data.len <= count);
		memcpy(buf, r.u.resok.data.val, r.u.resok.data.len);
		*n = r.u.resok.count;
		*eof = r.u.resok.eof;
	}
	xdr_arena_release(&ar);
	return r.status;
}

/*
 * A raw call on its own connection, with the xid given: what a client's
 * retransmission is.  AUTH_SYS root.  The reply record (without its mark)
 * goes to out (size bytes); returns its length.
 */
static inline size_t n3_raw(int port, uint32_t xid, uint32_t proc, const void *args, uint8_t *out,
			    size_t size)
{
	const struct xdr_proc_desc *d = &xdr_desc_NFS_PROGRAM_NFS_V3.procs[proc];
	uint8_t abuf[4096], msg[8192];
	struct iovec iov[16];
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	struct xdr_enc e;
	xdr_enc_init(&e, iov, 16, abuf, sizeof(abuf), &ar);
	CHECK(d->enc_arg(&e, args) == 0 && !e.err);
	static const uint32_t hdr_words[] = {0 /* xid */,
					     0 /* CALL */,
					     2,
					     NFS_PROGRAM,
					     NFS_V3,
					     0 /* proc */,
					     1 /* AUTH_SYS */,
					     24,
					     0 /* stamp */,
					     1 /* machine name length */,
					     0x74000000 /* "t" */,
					     0 /* uid */,
					     0 /* gid */,
					     0 /* gids */,
					     0,
					     0};
	size_t n = 4;
	for (unsigned i = 0; i < sizeof(hdr_words) / 4; i++, n += 4)
		xdr_put32(msg + n, hdr_words[i]);
	xdr_put32(msg + 4, xid);
	xdr_put32(msg + 4 + 20, proc);
	CHECK(n + e.len <= sizeof(msg));
	xdr_enc_flatten(&e, msg + n);
	n += e.len;
	xdr_put32(msg, 0x80000000u | (uint32_t)(n - 4));
	xdr_arena_release(&ar);

	int fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(fd >= 0);
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(write(fd, msg, n) == (ssize_t)n);
	uint8_t mark[4];
	size_t got = 0;
	while (got < 4) {
		ssize_t k = read(fd, mark + got, 4 - got);
		CHECK(k > 0);
		got += (size_t)k;
	}
	size_t len = xdr_get32(mark) & 0x7fffffffu;
	CHECK(len <= size);
	for (got = 0; got < len;) {
		ssize_t k = read(fd, out + got, len - got);
		CHECK(k > 0);
		got += (size_t)k;
	}
	close(fd);
	return len;
}

/* The nfsstat3 of a raw reply (AUTH_NONE verifier, SUCCESS). */
static inline nfsstat3 n3_raw_status(const uint8_t *rep, size_t len)
{
	CHECK(len >= 28);
	CHECK_EQ(xdr_get32(rep + 20), 0); /* accept_stat SUCCESS */
	return (nfsstat3)xdr_get32(rep + 24);
}

#endif
