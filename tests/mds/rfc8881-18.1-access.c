/* SPDX-License-Identifier: MIT */
/*
 * ACCESS (RFC 8881 §18.1; the XA bits of RFC 8276 §8.3): rights follow the
 * mode bits for the owner, the group (primary or supplementary) and others;
 * root has all but EXECUTE of a file without x bits; every bit asked for
 * is in supported and no right beyond what was asked is granted; a
 * read-only export and the pseudo filesystem grant nothing that writes;
 * undefined bits (and the XA bits in NFSv4.1) are NFS4ERR_INVAL.
 */
#include "config.h"

#include "tests/mds/attr-test.h"

static struct mt t;
static struct at a;
static struct xdr_arena arena;

#define R     ACCESS4_READ
#define L     ACCESS4_LOOKUP
#define M     ACCESS4_MODIFY
#define E     ACCESS4_EXTEND
#define D     ACCESS4_DELETE
#define X     ACCESS4_EXECUTE
#define XR    ACCESS4_XAREAD
#define XW    ACCESS4_XAWRITE
#define XL    ACCESS4_XALIST
#define ALL41 (R | L | M | E | D | X)
#define ALL42 (ALL41 | XR | XW | XL)

/* ACCESS want on fh as cr: its status; the rights granted in *got. */
static nfsstat4 do_access(uint32_t minor, const struct at_cred *cr, const nfs_fh4 *fh,
			  uint32_t want, uint32_t *got)
{
	nfs_argop4 ops[2] = {mt_putfh(fh), {.argop = OP_ACCESS}};
	ops[1].u.opaccess.access = want;
	COMPOUND4res res;
	at_compound(&a, minor, cr, ops, 2, &res, &arena);
	CHECK_EQ(at_status(&res, 0), NFS4_OK);
	nfsstat4 st = at_status(&res, 1);
	if (st == NFS4_OK) {
		ACCESS4resok *ok = &res.resarray.val[2].u.opaccess.u.resok4;
		CHECK_EQ(ok->supported, want);
		CHECK_EQ(ok->access & ~want, 0);
		*got = ok->access;
	}
	return st;
}

static uint32_t granted(uint32_t minor, const struct at_cred *cr, const nfs_fh4 *fh)
{
	uint32_t got = 0;
	CHECK_EQ(do_access(minor, cr, fh, minor >= 2 ? ALL42 : ALL41, &got), NFS4_OK);
	return got;
}

int main(void)
{
	mt_start(&t, "/ *(rw,no_root_squash,insecure)\n/ro *(ro,no_root_squash,insecure)\n", NULL);
	uint8_t ab[1 << 16];
	xdr_arena_init(&arena, ab, sizeof(ab), 64u << 20);
	at_open(&a, &t, "access");
	uint64_t root = mds_store_root(braid_mds_store(t.mds));
	uint32_t rid = at_export_id(&t, "/");
	uint64_t dir = at_make(&t, root, "d", MDS_DIR, 0750, 1000, 100);
	uint64_t f640 = at_make(&t, dir, "f640", MDS_REG, 0640, 1000, 100);
	uint64_t f755 = at_make(&t, dir, "f755", MDS_REG, 0755, 1000, 100);
	uint64_t f604 = at_make(&t, dir, "f604", MDS_REG, 0604, 1000, 100);
	nfs_fh4 dfh = at_fh(&t, &arena, dir, rid);
	nfs_fh4 h640 = at_fh(&t, &arena, f640, rid), h755 = at_fh(&t, &arena, f755, rid);
	nfs_fh4 h604 = at_fh(&t, &arena, f604, rid);
	const struct at_cred owner = {1000, 100, 0, {0}};
	const struct at_cred member = {2000, 2000, 2, {7, 100}}; /* supplementary */
	const struct at_cred other = {3000, 3000, 0, {0}};

	/* files */
	CHECK_EQ(granted(1, &owner, &h640), R | M | E);
	CHECK_EQ(granted(1, &member, &h640), R);
	CHECK_EQ(granted(1, &other, &h640), 0);
	CHECK_EQ(granted(1, &at_root, &h640), R | M | E); /* no x bit: no EXECUTE even for root */
	CHECK_EQ(granted(1, &at_root, &h755), R | M | E | X);
	CHECK_EQ(granted(1, &other, &h755), R | X);
	CHECK_EQ(granted(1, &other, &h604), R);
	CHECK_EQ(granted(1, &member, &h604), 0); /* the group's bits apply, not others' */
	CHECK_EQ(granted(2, &owner, &h640), R | M | E | XR | XW | XL);
	CHECK_EQ(granted(2, &member, &h640), R | XR | XL);

	/* a directory */
	CHECK_EQ(granted(1, &owner, &dfh), R | L | M | E | D);
	CHECK_EQ(granted(1, &member, &dfh), R | L);
	CHECK_EQ(granted(1, &other, &dfh), 0);
	CHECK_EQ(granted(1, &at_root, &dfh), R | L | M | E | D);

	/* only what is asked */
	uint32_t got;
	CHECK_EQ(do_access(1, &owner, &h640, R, &got), NFS4_OK);
	CHECK_EQ(got, R);
	CHECK_EQ(do_access(1, &owner, &h640, X, &got), NFS4_OK);
	CHECK_EQ(got, 0);
	CHECK_EQ(do_access(1, &owner, &h640, 0, &got), NFS4_OK);
	CHECK_EQ(got, 0);

	/* undefined bits; the XA bits are NFSv4.2's */
	CHECK_EQ(do_access(1, &owner, &h640, R | 0x200, &got), NFS4ERR_INVAL);
	CHECK_EQ(do_access(2, &owner, &h640, 0x80000000u, &got), NFS4ERR_INVAL);
	CHECK_EQ(do_access(1, &owner, &h640, XR, &got), NFS4ERR_INVAL);

	/* read-only export and pseudo filesystem: nothing that writes */
	uint64_t ro = at_export_root(&t, "/ro");
	nfs_fh4 rofh = at_fh(&t, &arena, ro, at_export_id(&t, "/ro"));
	CHECK_EQ(granted(2, &at_root, &rofh), R | L | XR | XL);
	nfs_fh4 pfh = at_fh(&t, &arena, root, 0);
	CHECK_EQ(granted(1, &at_root, &pfh), R | L);

	at_close(&a);
	xdr_arena_release(&arena);
	mt_finish(&t);
	return 0;
}
