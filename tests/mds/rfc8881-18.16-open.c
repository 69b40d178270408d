/* SPDX-License-Identifier: MIT */
/*
 * OPEN (RFC 8881 §18.16) with CLOSE (§18.2) and OPEN_DOWNGRADE (§18.18):
 * the create modes (UNCHECKED4 finds, GUARDED4 refuses, EXCLUSIVE4_1
 * replays with its verifier; EXCLUSIVE4 is refused by a pNFS server),
 * NOCREATE, CLAIM_FH, delegation claims with an open's stateid, file
 * types, permissions, share reservations between clients and against
 * anonymous I/O (§9.7), upgrades that keep the stateid's "other" (§9.9),
 * downgrades, truncation by createattrs, delegation wants (none without
 * a back channel), and the stateid rules of §8.2 (OLD_STATEID,
 * BAD_STATEID, seqid 0, the current stateid, the invalid special stateid
 * CLOSE returns); DESTROY_CLIENTID of a client
 * with opens is NFS4ERR_CLIENTID_BUSY (§18.50.3); an OPEN before the
 * client's RECLAIM_COMPLETE is NFS4ERR_GRACE (§18.51.3).
 */
#include "config.h"

#include "tests/mds/mds-test.h"
#include "tests/mds/state-test.h"

#include "mds/state.h"

#define RD	 OPEN4_SHARE_ACCESS_READ
#define WR	 OPEN4_SHARE_ACCESS_WRITE
#define RW	 OPEN4_SHARE_ACCESS_BOTH
#define DN	 OPEN4_SHARE_DENY_NONE
#define DR	 OPEN4_SHARE_DENY_READ
#define DW	 OPEN4_SHARE_DENY_WRITE
#define MODE_BIT (1u << (FATTR4_MODE - 32))

static uint64_t fh_ino(const struct ts_fh *f)
{
	uint64_t v;
	CHECK_EQ(f->len, 40);
	memcpy(&v, f->b + 16, 8);
	return be64toh(v);
}

static struct mds_attr attr_of(struct mt *t, uint64_t ino)
{
	struct mds_attr a;
	CHECK_EQ(mds_inode_getattr(braid_mds_store(t->mds), ino, &a), 0);
	return a;
}

static void store_make(struct mt *t, const char *name, uint8_t type)
{
	struct mds_store *s = braid_mds_store(t->mds);
	struct mds_create_args a = {.dir = mds_store_root(s),
				    .name = name,
				    .name_len = strlen(name),
				    .type = type,
				    .how = MDS_CREATE_GUARDED,
				    .mode = 0755,
				    .symlink = "target",
				    .symlink_len = 6};
	CHECK_EQ(mds_dir_create(s, &a, NULL), 0);
}

static struct ts_open opn(const char *owner, const char *name, uint32_t access, uint32_t deny)
{
	struct ts_open o = {
	    .owner = owner, .name = name, .access = access, .deny = deny, .mode = -1, .size = -1};
	return o;
}

/* SETATTR size with a stateid: its check is mds_state_check_io's. */
static nfsstat4 set_size(struct nfs41c_session *s, const struct ts_fh *f, const stateid4 *sid,
			 uint64_t size)
{
	struct ts_attrs ab;
	nfs_argop4 ops[2] = {ts_put(f), ts_op(OP_SETATTR)};
	ops[1].u.opsetattr.stateid = *sid;
	ops[1].u.opsetattr.obj_attributes = ts_fattr(&ab, -1, (int64_t)size);
	COMPOUND4res res;
	struct xdr_arena ar;
	ts_run(s, ops, 2, &res, &ar);
	nfsstat4 st = ts_st(&res, 1);
	xdr_arena_release(&ar);
	return st;
}

static void create_modes(struct mt *t, struct nfs41c_session *a)
{
	struct ts_openres r, r2;
	stateid4 x;

	/* UNCHECKED4 creates with the attributes given; the directory changes */
	CHECK_EQ(ts_open_name(a, NULL, "cm", "f1", RW, DN, true, &r), NFS4_OK);
	CHECK(r.cinfo.atomic);
	CHECK(r.cinfo.after > r.cinfo.before);
	CHECK_EQ(r.rflags, OPEN4_RESULT_LOCKTYPE_POSIX | OPEN4_RESULT_PRESERVE_UNLINKED);
	CHECK(r.attrset_len >= 2 && (r.attrset[1] & MODE_BIT));
	CHECK_EQ(r.dtype, OPEN_DELEGATE_NONE);
	CHECK_EQ(r.sid.seqid, 1);
	uint64_t f1 = fh_ino(&r.fh);
	CHECK_EQ(attr_of(t, f1).type, MDS_REG);
	CHECK_EQ(attr_of(t, f1).mode, 0644);
	CHECK_EQ(attr_of(t, f1).uid, 0);

	/* UNCHECKED4 of an existing file opens it, leaving its attributes */
	struct ts_open o = opn("cm2", "f1", RD, DN);
	o.create = true;
	o.how = UNCHECKED4;
	o.mode = 0600;
	CHECK_EQ(ts_open(a, NULL, &o, &r2), NFS4_OK);
	CHECK_EQ(fh_ino(&r2.fh), f1);
	CHECK_EQ(attr_of(t, f1).mode, 0644);
	CHECK_EQ(r2.attrset_len, 0);
	CHECK_EQ(r2.cinfo.before, r2.cinfo.after);
	CHECK(!ts_sid_eq_other(&r.sid, &r2.sid)); /* another open-owner: its own stateid */
	CHECK_EQ(ts_close(a, &r2.fh, &r2.sid, NULL), NFS4_OK);

	/* GUARDED4: the name exists */
	o.how = GUARDED4;
	CHECK_EQ(ts_open(a, NULL, &o, NULL), NFS4ERR_EXIST);
	/* NOCREATE of a missing name */
	struct ts_open nc = opn("cm", "missing", RD, DN);
	CHECK_EQ(ts_open(a, NULL, &nc, NULL), NFS4ERR_NOENT);
	/* GUARDED4 of a new name creates */
	o.name = "f-guarded";
	CHECK_EQ(ts_open(a, NULL, &o, &r2), NFS4_OK);
	CHECK_EQ(attr_of(t, fh_ino(&r2.fh)).mode, 0600);
	CHECK_EQ(ts_close(a, &r2.fh, &r2.sid, NULL), NFS4_OK);

	/* EXCLUSIVE4_1: attributes set; a retry with the verifier finds the
	 * same file; another verifier is NFS4ERR_EXIST */
	struct ts_open ex = opn("ex", "f-excl", RW, DN);
	ex.create = true;
	ex.how = EXCLUSIVE4_1;
	ex.mode = 0640;
	memcpy(ex.verf, "verif-01", 8);
	CHECK_EQ(ts_open(a, NULL, &ex, &r2), NFS4_OK);
	uint64_t fx = fh_ino(&r2.fh);
	CHECK_EQ(attr_of(t, fx).mode, 0640);
	CHECK(r2.attrset_len >= 2 && (r2.attrset[1] & MODE_BIT));
	CHECK(r2.cinfo.after > r2.cinfo.before);
	struct ts_openres r3;
	CHECK_EQ(ts_open(a, NULL, &ex, &r3), NFS4_OK);
	CHECK_EQ(fh_ino(&r3.fh), fx);
	CHECK(ts_sid_eq_other(&r2.sid, &r3.sid)); /* same owner, same file: upgraded */
	memcpy(ex.verf, "verif-02", 8);
	CHECK_EQ(ts_open(a, NULL, &ex, NULL), NFS4ERR_EXIST);
	CHECK_EQ(ts_close(a, &r3.fh, &r3.sid, NULL), NFS4_OK);
	/* EXCLUSIVE4 is refused on a pNFS server's client IDs (table 10) */
	ex.how = EXCLUSIVE4;
	ex.name = "f-excl4";
	CHECK_EQ(ts_open(a, NULL, &ex, NULL), NFS4ERR_INVAL);

	/* truncation: UNCHECKED4 with size 0 on an existing file, only when
	 * opening for write */
	struct ts_open tr = opn("tr", "f-trunc", RW, DN);
	tr.create = true;
	tr.how = UNCHECKED4;
	tr.mode = 0644;
	tr.size = 100;
	CHECK_EQ(ts_open(a, NULL, &tr, &r2), NFS4_OK);
	uint64_t ft = fh_ino(&r2.fh);
	CHECK_EQ(attr_of(t, ft).size, 100);
	CHECK_EQ(ts_close(a, &r2.fh, &r2.sid, NULL), NFS4_OK);
	tr.size = 0;
	tr.access = RD;
	CHECK_EQ(ts_open(a, NULL, &tr, NULL), NFS4ERR_INVAL);
	CHECK_EQ(attr_of(t, ft).size, 100);
	tr.access = RW;
	CHECK_EQ(ts_open(a, NULL, &tr, &r2), NFS4_OK);
	CHECK_EQ(attr_of(t, ft).size, 0);
	CHECK_EQ(r2.attrset_len, 1);
	CHECK_EQ(r2.attrset[0], 1u << FATTR4_SIZE);
	CHECK_EQ(ts_close(a, &r2.fh, &r2.sid, NULL), NFS4_OK);

	/* CLAIM_FH opens by filehandle; it cannot create */
	struct ts_open fo = opn("fh", NULL, RD, DN);
	fo.claim = CLAIM_FH;
	CHECK_EQ(ts_open(a, &r.fh, &fo, &r2), NFS4_OK);
	CHECK_EQ(fh_ino(&r2.fh), f1);
	CHECK_EQ(ts_close(a, &r2.fh, &r2.sid, &x), NFS4_OK);
	fo.create = true;
	fo.how = UNCHECKED4;
	CHECK_EQ(ts_open(a, &r.fh, &fo, NULL), NFS4ERR_INVAL);
	/* CLAIM_NULL needs a directory */
	struct ts_open nd = opn("nd", "x", RD, DN);
	CHECK_EQ(ts_open(a, &r.fh, &nd, NULL), NFS4ERR_NOTDIR);
	CHECK_EQ(ts_close(a, &r.fh, &r.sid, NULL), NFS4_OK);

	/* only regular files open */
	store_make(t, "d-dir", MDS_DIR);
	store_make(t, "d-link", MDS_LNK);
	store_make(t, "d-fifo", MDS_FIFO);
	nd.name = "d-dir";
	CHECK_EQ(ts_open(a, NULL, &nd, NULL), NFS4ERR_ISDIR);
	nd.create = true;
	nd.how = UNCHECKED4;
	CHECK_EQ(ts_open(a, NULL, &nd, NULL), NFS4ERR_ISDIR);
	nd.create = false;
	nd.name = "d-link";
	CHECK_EQ(ts_open(a, NULL, &nd, NULL), NFS4ERR_SYMLINK);
	nd.name = "d-fifo";
	CHECK_EQ(ts_open(a, NULL, &nd, NULL), NFS4ERR_WRONG_TYPE);
	nd.name = "";
	CHECK_EQ(ts_open(a, NULL, &nd, NULL), NFS4ERR_INVAL);
	nd.name = "..";
	CHECK_EQ(ts_open(a, NULL, &nd, NULL), NFS4ERR_BADNAME);
}

static void claims_and_args(struct nfs41c_session *a)
{
	struct ts_openres r, r2;
	CHECK_EQ(ts_open_name(a, NULL, "cl", "f-claims", RW, DN, true, &r), NFS4_OK);

	/* §8.2.4: an open's stateid is no delegation to claim */
	struct ts_open o = opn("cl2", "f-claims", RD, DN);
	o.deleg_sid = r.sid;
	o.claim = CLAIM_DELEG_CUR_FH;
	CHECK_EQ(ts_open(a, &r.fh, &o, NULL), NFS4ERR_BAD_STATEID);
	o.claim = CLAIM_DELEGATE_CUR;
	CHECK_EQ(ts_open(a, NULL, &o, NULL), NFS4ERR_BAD_STATEID);
	/* the optional claims of a restarted client's delegations */
	o.claim = CLAIM_DELEG_PREV_FH;
	CHECK_EQ(ts_open(a, &r.fh, &o, NULL), NFS4ERR_NOTSUPP);
	o.claim = CLAIM_DELEGATE_PREV;
	CHECK_EQ(ts_open(a, NULL, &o, NULL), NFS4ERR_NOTSUPP);
	/* a reclaim with no grace period in progress (§8.4.2.1) */
	o.claim = CLAIM_PREVIOUS;
	o.prev_deleg = OPEN_DELEGATE_NONE;
	CHECK_EQ(ts_open(a, &r.fh, &o, NULL), NFS4ERR_NO_GRACE);

	/* §18.16.4: share_access and share_deny values */
	o = opn("cl2", "f-claims", 0, DN);
	CHECK_EQ(ts_open(a, NULL, &o, NULL), NFS4ERR_INVAL);
	o = opn("cl2", "f-claims", RD | 4, DN);
	CHECK_EQ(ts_open(a, NULL, &o, NULL), NFS4ERR_INVAL);
	o = opn("cl2", "f-claims", RD, 4);
	CHECK_EQ(ts_open(a, NULL, &o, NULL), NFS4ERR_INVAL);
	o = opn("cl2", "f-claims", RD | 0x600, DN);
	CHECK_EQ(ts_open(a, NULL, &o, NULL), NFS4ERR_INVAL);

	/* the _WANT_ flags are answered with OPEN_DELEGATE_NONE_EXT and why */
	o = opn("cl3", "f-claims", RD | OPEN4_SHARE_ACCESS_WANT_NO_DELEG, DN);
	CHECK_EQ(ts_open(a, NULL, &o, &r2), NFS4_OK);
	CHECK_EQ(r2.dtype, OPEN_DELEGATE_NONE_EXT);
	CHECK_EQ(r2.why, WND4_NOT_WANTED);
	/* no back channel: a delegation could not be recalled (§10.2.2) */
	o.access = RD | OPEN4_SHARE_ACCESS_WANT_READ_DELEG;
	CHECK_EQ(ts_open(a, NULL, &o, &r2), NFS4_OK);
	CHECK_EQ(r2.dtype, OPEN_DELEGATE_NONE_EXT);
	CHECK_EQ(r2.why, WND4_RESOURCE);
	o.access = RD | OPEN4_SHARE_ACCESS_WANT_CANCEL;
	CHECK_EQ(ts_open(a, NULL, &o, &r2), NFS4_OK);
	CHECK_EQ(r2.why, WND4_CANCELLED);
	CHECK_EQ(ts_close(a, &r2.fh, &r2.sid, NULL), NFS4_OK);

	/* DELEGRETURN of an open's stateid */
	nfs_argop4 ops[2] = {ts_put(&r.fh), ts_op(OP_DELEGRETURN)};
	ops[1].u.opdelegreturn.deleg_stateid = r.sid;
	COMPOUND4res res;
	struct xdr_arena ar;
	ts_run(a, ops, 2, &res, &ar);
	CHECK_EQ(ts_st(&res, 1), NFS4ERR_BAD_STATEID);
	xdr_arena_release(&ar);
	CHECK_EQ(ts_close(a, &r.fh, &r.sid, NULL), NFS4_OK);
}

static void permissions(struct nfs41c_session *root, struct nfs41c_session *user)
{
	struct ts_openres r, r2;
	struct ts_open o = opn("p", "f-secret", RW, DN);
	o.create = true;
	o.how = UNCHECKED4;
	o.mode = 0600;
	CHECK_EQ(ts_open(root, NULL, &o, &r), NFS4_OK);
	o = opn("pu", "f-secret", RD, DN);
	CHECK_EQ(ts_open(user, NULL, &o, NULL), NFS4ERR_ACCESS);
	CHECK_EQ(ts_close(root, &r.fh, &r.sid, NULL), NFS4_OK);

	CHECK_EQ(ts_open_name(root, NULL, "p", "f-public", RW, DN, true, &r), NFS4_OK);
	o = opn("pu", "f-public", RD, DN);
	CHECK_EQ(ts_open(user, NULL, &o, &r2), NFS4_OK);
	CHECK_EQ(ts_close(user, &r2.fh, &r2.sid, NULL), NFS4_OK);
	o.access = WR;
	CHECK_EQ(ts_open(user, NULL, &o, NULL), NFS4ERR_ACCESS);
	CHECK_EQ(ts_close(root, &r.fh, &r.sid, NULL), NFS4_OK);

	/* creating needs write permission on the directory (root's, 0755) */
	CHECK_EQ(ts_open_name(user, NULL, "pu", "f-user", RW, DN, true, NULL), NFS4ERR_ACCESS);
}

static void shares(struct nfs41c_session *a, struct nfs41c_session *b)
{
	struct ts_openres ra, rb, rb2;
	/* a reads and denies writes */
	CHECK_EQ(ts_open_name(a, NULL, "sa", "f-share", RD, DW, true, &ra), NFS4_OK);
	CHECK_EQ(ts_open_name(b, NULL, "sb", "f-share", WR, DN, false, NULL), NFS4ERR_SHARE_DENIED);
	CHECK_EQ(ts_open_name(b, NULL, "sb", "f-share", RW, DN, false, NULL), NFS4ERR_SHARE_DENIED);
	CHECK_EQ(ts_open_name(b, NULL, "sb", "f-share", RD, DN, false, &rb), NFS4_OK);
	/* b may not deny reads a already does */
	CHECK_EQ(ts_open_name(b, NULL, "sb2", "f-share", RD, DR, false, NULL),
		 NFS4ERR_SHARE_DENIED);
	/* nor may a itself upgrade past its own deny (§18.16.3: no exception) */
	CHECK_EQ(ts_open_name(a, NULL, "sa", "f-share", WR, DN, false, NULL), NFS4ERR_SHARE_DENIED);

	/* anonymous I/O meets the reservation (§8.2.3); stateids are the
	 * client's own (§8.2.4) and an open for read does not write */
	stateid4 anon = ts_sid_special(0, 0);
	CHECK_EQ(set_size(b, &ra.fh, &anon, 0), NFS4ERR_LOCKED);
	CHECK_EQ(set_size(b, &ra.fh, &ra.sid, 0), NFS4ERR_BAD_STATEID);
	CHECK_EQ(set_size(b, &rb.fh, &rb.sid, 0), NFS4ERR_OPENMODE);

	CHECK_EQ(ts_close(a, &ra.fh, &ra.sid, NULL), NFS4_OK);
	CHECK_EQ(ts_open_name(b, NULL, "sb2", "f-share", WR, DN, false, &rb2), NFS4_OK);
	CHECK_EQ(set_size(b, &rb2.fh, &rb2.sid, 0), NFS4_OK);
	CHECK_EQ(set_size(b, &rb2.fh, &anon, 0), NFS4_OK);
	CHECK_EQ(ts_close(b, &rb.fh, &rb.sid, NULL), NFS4_OK);
	CHECK_EQ(ts_close(b, &rb2.fh, &rb2.sid, NULL), NFS4_OK);
}

static void upgrade_downgrade(struct nfs41c_session *a, struct nfs41c_session *b)
{
	struct ts_openres r1, r2;
	stateid4 s3, out;
	CHECK_EQ(ts_open_name(a, NULL, "ud", "f-up", RD, DN, true, &r1), NFS4_OK);
	CHECK_EQ(r1.sid.seqid, 1);
	/* §9.9: the same owner again: the same "other", the seqid moves */
	CHECK_EQ(ts_open_name(a, NULL, "ud", "f-up", WR, DN, false, &r2), NFS4_OK);
	CHECK(ts_sid_eq_other(&r1.sid, &r2.sid));
	CHECK_EQ(r2.sid.seqid, 2);
	/* §18.18.3: only to the union of some of the OPENs' values */
	CHECK_EQ(ts_downgrade(a, &r1.fh, &r2.sid, RW, DW, NULL), NFS4ERR_INVAL);
	CHECK_EQ(ts_downgrade(a, &r1.fh, &r2.sid, RD, DN, &s3), NFS4_OK);
	CHECK(ts_sid_eq_other(&r1.sid, &s3));
	CHECK_EQ(s3.seqid, 3);
	CHECK_EQ(ts_downgrade(a, &r1.fh, &s3, WR, DN, NULL), NFS4ERR_INVAL);
	CHECK_EQ(ts_downgrade(a, &r1.fh, &s3, 0, DN, NULL), NFS4ERR_INVAL);

	/* §8.2.2: an older seqid is OLD_STATEID, a newer one BAD_STATEID */
	CHECK_EQ(ts_close(a, &r1.fh, &r1.sid, NULL), NFS4ERR_OLD_STATEID);
	stateid4 future = s3;
	future.seqid = 9;
	CHECK_EQ(ts_close(a, &r1.fh, &future, NULL), NFS4ERR_BAD_STATEID);
	/* §8.2.4: another client's stateid, one never issued, a special one */
	CHECK_EQ(ts_close(b, &r1.fh, &s3, NULL), NFS4ERR_BAD_STATEID);
	stateid4 forged = s3;
	forged.other[11] ^= 1;
	CHECK_EQ(ts_close(a, &r1.fh, &forged, NULL), NFS4ERR_BAD_STATEID);
	stateid4 anon = ts_sid_special(0, 0);
	CHECK_EQ(ts_close(a, &r1.fh, &anon, NULL), NFS4ERR_BAD_STATEID);
	stateid4 invalid = ts_sid_special(UINT32_MAX, 0);
	CHECK_EQ(ts_close(a, &r1.fh, &invalid, NULL), NFS4ERR_BAD_STATEID);
	/* a stateid used on another file */
	struct ts_openres other;
	CHECK_EQ(ts_open_name(a, NULL, "ud", "f-up2", RD, DN, true, &other), NFS4_OK);
	CHECK_EQ(ts_close(a, &other.fh, &s3, NULL), NFS4ERR_BAD_STATEID);
	CHECK_EQ(ts_close(a, &other.fh, &other.sid, NULL), NFS4_OK);

	/* seqid 0: whatever is current; CLOSE returns the invalid stateid */
	stateid4 zero = s3;
	zero.seqid = 0;
	CHECK_EQ(ts_close(a, &r1.fh, &zero, &out), NFS4_OK);
	CHECK_EQ(out.seqid, UINT32_MAX);
	CHECK(!memcmp(out.other, anon.other, NFS4_OTHER_SIZE));
	CHECK_EQ(ts_close(a, &r1.fh, &s3, NULL), NFS4ERR_BAD_STATEID);

	/* an open made BOTH at once cannot be cut down to READ */
	CHECK_EQ(ts_open_name(a, NULL, "ud", "f-up3", RW, DN, true, &r1), NFS4_OK);
	CHECK_EQ(ts_downgrade(a, &r1.fh, &r1.sid, RD, DN, NULL), NFS4ERR_INVAL);
	CHECK_EQ(ts_close(a, &r1.fh, &r1.sid, NULL), NFS4_OK);
}

/* OPEN then CLOSE of the current stateid in one COMPOUND (§16.2.3.1.2). */
static void current_stateid(struct nfs41c_session *a)
{
	nfs_argop4 ops[4] = {ts_op(OP_PUTROOTFH), ts_op(OP_OPEN), ts_op(OP_CLOSE),
			     ts_op(OP_TEST_STATEID)};
	OPEN4args *oa = &ops[1].u.opopen;
	oa->share_access = RW;
	oa->owner.owner = xdr_opaque_of("cur", 3);
	oa->openhow.opentype = OPEN4_CREATE;
	oa->openhow.u.how.mode = GUARDED4;
	oa->claim.claim = CLAIM_NULL;
	oa->claim.u.file = xdr_opaque_of("f-current", 9);
	ops[2].u.opclose.open_stateid = ts_sid_special(1, 0);
	COMPOUND4res res;
	struct xdr_arena ar;
	ts_run(a, ops, 3, &res, &ar);
	CHECK_EQ(ts_st(&res, 1), NFS4_OK);
	CHECK_EQ(ts_st(&res, 2), NFS4_OK);
	stateid4 sid = res.resarray.val[2].u.opopen.u.resok4.stateid;
	xdr_arena_release(&ar);
	nfsstat4 code;
	CHECK_EQ(ts_test(a, &sid, 1, &code), NFS4_OK);
	CHECK_EQ(code, NFS4ERR_BAD_STATEID);

	/* without an earlier stateid in the COMPOUND there is no current one */
	ops[0] = ts_op(OP_PUTROOTFH);
	ops[1] = ops[2];
	ts_run(a, ops, 2, &res, &ar);
	CHECK_EQ(ts_st(&res, 1), NFS4ERR_BAD_STATEID);
	xdr_arena_release(&ar);
}

/* §18.16.3 OPEN4_RESULT_PRESERVE_UNLINKED: a removed file lives while
 * open (CLAIM_FH still opens it); its last CLOSE lets it go. */
static void preserve_unlinked(struct mt *t, struct nfs41c_session *a)
{
	struct ts_openres r, r2;
	CHECK_EQ(ts_open_name(a, NULL, "pu", "f-orphan", RW, DN, true, &r), NFS4_OK);
	uint64_t ino = fh_ino(&r.fh);
	nfs_argop4 ops[2] = {ts_op(OP_PUTROOTFH), ts_op(OP_REMOVE)};
	ops[1].u.opremove.target = xdr_opaque_of("f-orphan", 8);
	COMPOUND4res res;
	struct xdr_arena ar;
	ts_run(a, ops, 2, &res, &ar);
	CHECK_EQ(ts_st(&res, 1), NFS4_OK);
	xdr_arena_release(&ar);
	CHECK_EQ(attr_of(t, ino).nlink, 0);
	struct ts_open o = opn("pu2", NULL, RD, DN);
	o.claim = CLAIM_FH;
	CHECK_EQ(ts_open(a, &r.fh, &o, &r2), NFS4_OK);
	CHECK_EQ(ts_close(a, &r.fh, &r.sid, NULL), NFS4_OK);
	CHECK_EQ(attr_of(t, ino).nlink, 0); /* still open by pu2 */
	CHECK_EQ(ts_close(a, &r2.fh, &r2.sid, NULL), NFS4_OK);
	/* reaped by the releaser thread, off the CLOSE's reply path */
	struct mds_attr gone;
	double t0 = ts_now();
	while (mds_inode_getattr(braid_mds_store(t->mds), ino, &gone) != -ESTALE) {
		CHECK(ts_now() - t0 < 10.0);
		usleep(10 * 1000);
	}
}

/* With "/" no longer exported the root is the pseudo fs (§7.3): it shows
 * only the way to exports, and nothing is created there. */
static void pseudo_fs(struct mt *t, struct nfs41c_session *a)
{
	char msg[256];
	mt_write_file(t->exports_path, "/ex *(rw,no_root_squash,insecure)\n", 0644);
	CHECK_EQ(braid_mds_exports_reload(t->mds, msg, sizeof(msg)), 0);
	struct ts_open o = opn("ps", "f1", RD, DN);
	CHECK_EQ(ts_open(a, NULL, &o, NULL), NFS4ERR_NOENT);
	o.name = "d-dir";
	CHECK_EQ(ts_open(a, NULL, &o, NULL), NFS4ERR_NOENT);
	o.name = "ex";
	CHECK_EQ(ts_open(a, NULL, &o, NULL), NFS4ERR_ISDIR);
	o.name = "f-pseudo";
	o.create = true;
	o.how = UNCHECKED4;
	CHECK_EQ(ts_open(a, NULL, &o, NULL), NFS4ERR_ROFS);
	/* inside the export, files open as before */
	struct ts_fh ex;
	nfs_argop4 ops[3] = {ts_op(OP_PUTROOTFH), mt_lookup("ex"), ts_op(OP_GETFH)};
	COMPOUND4res res;
	struct xdr_arena ar;
	ts_run(a, ops, 3, &res, &ar);
	CHECK_EQ(res.status, NFS4_OK);
	const nfs_fh4 *f = &res.resarray.val[3].u.opgetfh.u.resok4.object;
	memcpy(ex.b, f->val, f->len);
	ex.len = f->len;
	xdr_arena_release(&ar);
	struct ts_openres r;
	CHECK_EQ(ts_open(a, &ex, &o, &r), NFS4_OK);
	CHECK_EQ(ts_close(a, &r.fh, &r.sid, NULL), NFS4_OK);
}

int main(void)
{
	struct mt t;
	mt_start(&t, "/ *(rw,no_root_squash,insecure)\n", NULL);
	struct nfs41c_session *a = ts_session(&t, "open-a", 0, 0);
	struct nfs41c_session *b = ts_session(&t, "open-b", 0, 0);
	struct nfs41c_session *u = ts_session(&t, "open-user", 1000, 1000);

	create_modes(&t, a);
	claims_and_args(a);
	permissions(a, u);
	shares(a, b);
	upgrade_downgrade(a, b);
	current_stateid(a);
	preserve_unlinked(&t, a);

	/* §18.50.3: a client holding opens cannot be destroyed */
	struct nfs41c_session *c = ts_session(&t, "open-c", 0, 0);
	struct ts_openres r;
	CHECK_EQ(ts_open_name(c, NULL, "busy", "f-busy", RW, DN, true, &r), NFS4_OK);
	CHECK_EQ(nfs41c_session_destroy(c), NFS4ERR_CLIENTID_BUSY);
	/* and one with no state left can */
	struct nfs41c_session *d = ts_session(&t, "open-d", 0, 0);
	CHECK_EQ(ts_open_name(d, NULL, "idle", "f-idle", RW, DN, true, &r), NFS4_OK);
	CHECK_EQ(ts_close(d, &r.fh, &r.sid, NULL), NFS4_OK);
	CHECK_EQ(nfs41c_session_destroy(d), NFS4_OK);

	/* §18.51.3: before its RECLAIM_COMPLETE a new client ID's OPEN gets
	 * NFS4ERR_GRACE (no grace period here) and creates nothing */
	struct nfs41c_session *e = mt_session_noreclaim(&t, "open-e", 0, 0);
	CHECK(!mds_state_in_grace(t.mds));
	CHECK_EQ(ts_open_name(e, NULL, "early", "f-early", RW, DN, true, &r), NFS4ERR_GRACE);
	uint64_t ino;
	struct mds_store *st = braid_mds_store(t.mds);
	CHECK_EQ(mds_dir_lookup(st, mds_store_root(st), "f-early", 7, &ino, NULL), -ENOENT);
	CHECK_EQ(ts_open_name(e, NULL, "early", "f-idle", RD, DN, false, &r), NFS4ERR_GRACE);
	CHECK_EQ(ts_reclaim_complete(e), NFS4_OK);
	CHECK_EQ(ts_open_name(e, NULL, "early", "f-early", RW, DN, true, &r), NFS4_OK);
	CHECK_EQ(ts_close(e, &r.fh, &r.sid, NULL), NFS4_OK);
	CHECK_EQ(nfs41c_session_destroy(e), NFS4_OK);

	pseudo_fs(&t, a);

	nfs41c_session_destroy(a);
	nfs41c_session_destroy(b);
	nfs41c_session_destroy(u);
	mt_finish(&t);
	return 0;
}
