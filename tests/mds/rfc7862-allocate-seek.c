/* SPDX-License-Identifier: MIT */
/*
 * NFSv4.2 data ops through the MDS with a real braid-ds behind it
 * (RFC 7862): ALLOCATE (§15.1) extends the file and makes its object,
 * DEALLOCATE (§15.4) makes a range read as zeros without changing the size,
 * SEEK (§15.11) finds data and holes (NFS4ERR_NXIO past the end), READ_PLUS
 * (§15.10) returns READ's contents as data and hole segments.
 */
#include "config.h"

#include "tests/mds/mds-ds-test.h"

#include "mds/mds_impl.h"

#define CONF "heartbeat_interval = 1s\nds_timeout = 3s\n"
#define MiB  (1u << 20)
#define KiB  1024u

static struct mt M;
static struct cds A;
static struct nfs41c_session *S;

static nfsstat4 op42(const struct cfile *f, nfs_argop4 op, nfs_resop4 *out, struct xdr_arena *ar)
{
	return cl_op(S, NFS41C_MINOR2, f, op, out, ar);
}

static nfsstat4 allocate(const struct cfile *f, uint64_t off, uint64_t len)
{
	nfs_argop4 op = {.argop = OP_ALLOCATE};
	op.u.opallocate.aa_offset = off;
	op.u.opallocate.aa_length = len;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	nfsstat4 st = op42(f, op, NULL, &ar);
	xdr_arena_release(&ar);
	return st;
}

static nfsstat4 deallocate(const struct cfile *f, uint64_t off, uint64_t len)
{
	nfs_argop4 op = {.argop = OP_DEALLOCATE};
	op.u.opdeallocate.da_offset = off;
	op.u.opdeallocate.da_length = len;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	nfsstat4 st = op42(f, op, NULL, &ar);
	xdr_arena_release(&ar);
	return st;
}

static nfsstat4 seek(const struct cfile *f, uint64_t off, data_content4 what, uint64_t *pos,
		     bool *eof)
{
	nfs_argop4 op = {.argop = OP_SEEK};
	op.u.opseek.sa_offset = off;
	op.u.opseek.sa_what = what;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	nfs_resop4 r;
	nfsstat4 st = op42(f, op, &r, &ar);
	if (!st) {
		*pos = r.u.opseek.u.resok4.sr_offset;
		*eof = r.u.opseek.u.resok4.sr_eof;
	}
	xdr_arena_release(&ar);
	return st;
}

/* READ_PLUS: the segments flattened into buf (holes as zeros), checked to
 * tile [off, off + *n) in order; *ndata and *nhole count the kinds. */
static nfsstat4 read_plus(const struct cfile *f, uint64_t off, uint32_t count, uint8_t *buf,
			  uint32_t *n, bool *eof, unsigned *ndata, unsigned *nhole)
{
	nfs_argop4 op = {.argop = OP_READ_PLUS};
	op.u.opread_plus.rpa_offset = off;
	op.u.opread_plus.rpa_count = count;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 4 * MiB);
	nfs_resop4 r;
	nfsstat4 st = op42(f, op, &r, &ar);
	if (!st) {
		const read_plus_res4 *ok = &r.u.opread_plus.u.rp_resok4;
		*eof = ok->rpr_eof;
		*ndata = *nhole = 0;
		uint64_t at = off;
		for (uint32_t i = 0; i < ok->rpr_contents.len; i++) {
			const read_plus_content *c = &ok->rpr_contents.val[i];
			if (c->rpc_content == NFS4_CONTENT_DATA) {
				CHECK_EQ(c->u.rpc_data.d_offset, at);
				memcpy(buf + (at - off), c->u.rpc_data.d_data.val,
				       c->u.rpc_data.d_data.len);
				at += c->u.rpc_data.d_data.len;
				(*ndata)++;
			} else {
				CHECK_EQ(c->rpc_content, NFS4_CONTENT_HOLE);
				CHECK_EQ(c->u.rpc_hole.di_offset, at);
				memset(buf + (at - off), 0, c->u.rpc_hole.di_length);
				at += c->u.rpc_hole.di_length;
				(*nhole)++;
			}
			CHECK(at - off <= count);
		}
		*n = (uint32_t)(at - off);
	}
	xdr_arena_release(&ar);
	return st;
}

static void t_allocate(void)
{
	struct cfile f;
	cl_mkfile(&M, "alloc", 0644, &f);
	uint64_t ch = cl_attr(&M, f.ino).change;
	CHECK_EQ(allocate(&f, 0, MiB), NFS4_OK);
	struct mds_attr a = cl_attr(&M, f.ino);
	CHECK_EQ(a.size, MiB);
	CHECK(a.change > ch);
	/* its object exists, grown to the size */
	uint64_t osz;
	CHECK_EQ(cl_obj_stat(&M, &A, &f, &osz), 0);
	CHECK_EQ(osz, MiB);
	/* inside the file: nothing moves */
	CHECK_EQ(allocate(&f, 4096, 4096), NFS4_OK);
	CHECK_EQ(cl_attr(&M, f.ino).size, MiB);
	CHECK_EQ(cl_attr(&M, f.ino).change, a.change);
	CHECK_EQ(allocate(&f, 3 * MiB, 5), NFS4_OK);
	CHECK_EQ(cl_attr(&M, f.ino).size, 3 * MiB + 5);
	/* allocated ranges read as zeros */
	uint8_t *b = malloc(MiB);
	CHECK(b);
	uint32_t n;
	bool eof;
	CHECK_EQ(cl_do_read(S, &f, 2 * MiB, MiB, b, &n, &eof), NFS4_OK);
	CHECK(n == MiB && !eof && cl_is_zero(b, n));
	free(b);
	CHECK_EQ(allocate(&f, 0, 0), NFS4ERR_INVAL);
	CHECK_EQ(allocate(&f, MDS_FILE_MAX, 1), NFS4ERR_FBIG);
	CHECK_EQ(allocate(&f, UINT64_MAX, 1), NFS4ERR_FBIG);
	CHECK_EQ(allocate(&f, 1, UINT64_MAX), NFS4ERR_FBIG);
	/* on a directory */
	struct cfile dir = {.ino = mds_store_root(braid_mds_store(M.mds))};
	cl_fh_of(&M, dir.ino, cl_attr(&M, dir.ino).generation, &dir);
	CHECK_EQ(allocate(&dir, 0, 1), NFS4ERR_ISDIR);
}

static void t_deallocate_seek_read_plus(void)
{
	struct cfile f;
	cl_mkfile(&M, "dealloc", 0644, &f);
	uint8_t *b = malloc(2 * MiB), *r = malloc(2 * MiB);
	CHECK(b && r);
	dt_fill(b, 0, 2 * MiB, 3);
	for (unsigned i = 0; i < 2; i++)
		CHECK_EQ(
		    cl_do_write(S, &f, i * MiB, FILE_SYNC4, b + i * MiB, MiB, NULL, NULL, NULL),
		    NFS4_OK);
	uint64_t pos;
	bool eof;
	CHECK_EQ(seek(&f, 0, NFS4_CONTENT_DATA, &pos, &eof), NFS4_OK);
	CHECK(pos == 0 && !eof);
	CHECK_EQ(seek(&f, 5, NFS4_CONTENT_HOLE, &pos, &eof), NFS4_OK);
	CHECK(pos == 2 * MiB && eof);
	CHECK_EQ(seek(&f, 2 * MiB, NFS4_CONTENT_DATA, &pos, &eof), NFS4ERR_NXIO);
	CHECK_EQ(seek(&f, 2 * MiB + 1, NFS4_CONTENT_HOLE, &pos, &eof), NFS4ERR_NXIO);
	CHECK_EQ(seek(&f, 0, (data_content4)7, &pos, &eof), NFS4ERR_UNION_NOTSUPP);

	/* inside: zeros there, the rest untouched, the size kept */
	uint64_t ch = cl_attr(&M, f.ino).change;
	CHECK_EQ(deallocate(&f, 512 * KiB, 256 * KiB), NFS4_OK);
	struct mds_attr a = cl_attr(&M, f.ino);
	CHECK_EQ(a.size, 2 * MiB);
	CHECK(a.change > ch);
	memset(b + 512 * KiB, 0, 256 * KiB);
	uint32_t n;
	CHECK_EQ(cl_do_read(S, &f, 0, MiB, r, &n, &eof), NFS4_OK);
	CHECK(n == MiB && memcmp(r, b, MiB) == 0);
	/* past the end: cut at it, the object's tail goes */
	CHECK_EQ(deallocate(&f, 3 * MiB / 2, 10 * MiB), NFS4_OK);
	CHECK_EQ(cl_attr(&M, f.ino).size, 2 * MiB);
	uint64_t osz;
	CHECK_EQ(cl_obj_stat(&M, &A, &f, &osz), 0);
	CHECK_EQ(osz, 3 * MiB / 2);
	memset(b + 3 * MiB / 2, 0, MiB / 2);
	CHECK_EQ(cl_do_read(S, &f, MiB, MiB, r, &n, &eof), NFS4_OK);
	CHECK(n == MiB && eof && memcmp(r, b + MiB, MiB) == 0);
	CHECK_EQ(deallocate(&f, 5 * MiB, 1), NFS4_OK); /* wholly past EOF: nothing */
	CHECK_EQ(deallocate(&f, 0, 0), NFS4ERR_INVAL);
	CHECK_EQ(deallocate(&f, 0, UINT64_MAX), NFS4ERR_FBIG);

	/* SEEK sees where the object ends */
	CHECK_EQ(seek(&f, 0, NFS4_CONTENT_HOLE, &pos, &eof), NFS4_OK);
	CHECK(pos == 3 * MiB / 2 && !eof);
	CHECK_EQ(seek(&f, 3 * MiB / 2 + 7, NFS4_CONTENT_HOLE, &pos, &eof), NFS4_OK);
	CHECK(pos == 3 * MiB / 2 + 7 && !eof);
	CHECK_EQ(seek(&f, 3 * MiB / 2 + 7, NFS4_CONTENT_DATA, &pos, &eof), NFS4_OK);
	CHECK(eof);

	/* READ_PLUS: data, then a hole where the object ends */
	unsigned nd, nh;
	CHECK_EQ(read_plus(&f, 0, MiB, r, &n, &eof, &nd, &nh), NFS4_OK);
	CHECK(n == MiB && !eof && nd == 1 && nh == 0 && memcmp(r, b, MiB) == 0);
	CHECK_EQ(read_plus(&f, MiB, MiB, r, &n, &eof, &nd, &nh), NFS4_OK);
	CHECK(n == MiB && eof && nd == 1 && nh == 1 && memcmp(r, b + MiB, MiB) == 0);
	CHECK_EQ(read_plus(&f, 2 * MiB, MiB, r, &n, &eof, &nd, &nh), NFS4_OK);
	CHECK(n == 0 && eof && nd == 0 && nh == 0);
	CHECK_EQ(read_plus(&f, 2 * MiB - 100, 4 * MiB, r, &n, &eof, &nd, &nh), NFS4_OK);
	CHECK(n == 100 && eof && nd == 0 && nh == 1 && cl_is_zero(r, 100));

	/* a file with a size and no object: all hole */
	struct cfile g;
	cl_mkfile(&M, "holes", 0644, &g);
	struct mds_setattr_args sa = {.ino = g.ino, .mask = MDS_SET_SIZE, .size = 8192};
	CHECK_EQ(mds_inode_setattr(braid_mds_store(M.mds), &sa, NULL), 0);
	CHECK_EQ(seek(&g, 0, NFS4_CONTENT_DATA, &pos, &eof), NFS4_OK);
	CHECK(eof);
	CHECK_EQ(seek(&g, 100, NFS4_CONTENT_HOLE, &pos, &eof), NFS4_OK);
	CHECK(pos == 100 && !eof);
	memset(r, 0xaa, 8192);
	CHECK_EQ(read_plus(&g, 0, 65536, r, &n, &eof, &nd, &nh), NFS4_OK);
	CHECK(n == 8192 && eof && nd == 0 && nh == 1 && cl_is_zero(r, 8192));
	CHECK_EQ(deallocate(&g, 0, 100), NFS4_OK);

	/* NFSv4.2 ops in a 4.1 COMPOUND are illegal there */
	nfs_argop4 op = {.argop = OP_SEEK};
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	nfs_argop4 ops[2] = {mt_putfh(&f.fh), op};
	COMPOUND4res res;
	mt_compound(S, ops, 2, &res, &ar);
	CHECK_EQ(res.status, NFS4ERR_OP_ILLEGAL);
	xdr_arena_release(&ar);
	free(b);
	free(r);
}

int main(void)
{
	mt_start(&M, "/ *(rw,no_root_squash,insecure)\n", CONF);
	cds_prepare(&M, &A, "ds-a", NULL);
	cds_start(&M, &A);
	S = mt_session(&M, "v42", 0, 0);
	t_allocate();
	t_deallocate_seek_read_plus();
	nfs41c_session_destroy(S);
	cds_stop(&A);
	mt_finish(&M);
	printf("ok\n");
	return 0;
}
