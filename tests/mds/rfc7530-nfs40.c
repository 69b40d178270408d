/* SPDX-License-Identifier: MIT */
/*
 * NFSv4.0 on braid-mds (RFC 7530), through our own client's raw minor
 * version 0 COMPOUNDs, with lease_time = 2s and data_io = refuse:
 *  - 4.1 operations (SEQUENCE, EXCHANGE_ID) are OP_ILLEGAL in 4.0, the
 *    4.0-only ones NOTSUPP in 4.1; GETATTR's supported_attrs stops at 55;
 *  - SETCLIENTID's case table (§16.33.5): new client, callback update with
 *    the same verifier, CLID_INUSE for another principal while the ID holds
 *    state, a client reboot (a new verifier: the old ID and its state end
 *    at the confirmation); SETCLIENTID_CONFIRM with a wrong verifier is
 *    STALE_CLIENTID; 4.0 and 4.1 client IDs differ;
 *  - seqids (§9.1.7): OPEN needing OPEN_CONFIRM, its stateid unusable
 *    before; retransmitted OPEN, OPEN_CONFIRM, LOCK, LOCKU and CLOSE get
 *    the same reply byte for byte; BAD_SEQID; OLD_STATEID and STALE_STATEID;
 *  - RELEASE_LOCKOWNER with (LOCKS_HELD) and without locks;
 *  - RENEW, leases renewed by operations naming a stateid, expiry;
 *  - READ, WRITE and COMMIT through the MDS to a data server, although
 *    data_io = refuse (a 4.1 client gets PNFS_NO_LAYOUT);
 *  - callbacks: CB_NULL after SETCLIENTID_CONFIRM on a connection the MDS
 *    opens to 127.0.0.1; a read delegation recalled (CB_RECALL, minor
 *    version 0, the callback_ident) by another client's OPEN for write and
 *    returned, or not returned and revoked; RENEW's CB_PATH_DOWN; a
 *    callback address other than the client's source address is never
 *    dialed (a listener on 127.0.0.2 sees no connection) and no delegation
 *    is granted;
 *  - reclaim after an MDS restart: CLAIM_PREVIOUS and a reclaim LOCK in
 *    grace with a new client ID, other opens NFS4ERR_GRACE.
 */
#include "config.h"

#include <poll.h>
#include <stdatomic.h>

#include "tests/mds/mds-ds-test.h"
#include "tests/mds/state-test.h"

#define CONF	 "lease_time = 2s\ndata_io = refuse\nheartbeat_interval = 1s\nds_timeout = 3s\n"
#define CBPROG	 0x40000123u
#define RW	 OPEN4_SHARE_ACCESS_BOTH
#define RD	 OPEN4_SHARE_ACCESS_READ
#define ROOT_UID 0

static struct mt M;

/* ------------------------------------------------------------ calls */

/* A minor version 0 COMPOUND as AUTH_SYS uid; the reply in res (from ar). */
static void call40(uint32_t uid, const nfs_argop4 *ops, unsigned n, COMPOUND4res *res,
		   struct xdr_arena *ar)
{
	COMPOUND4args args = {
	    .tag = xdr_string_of("v40"),
	    .minorversion = 0,
	    .argarray = {n, (nfs_argop4 *)ops},
	};
	struct nfsd_call_opts o = {
	    .prog = NFS4_PROGRAM,
	    .vers = 4,
	    .proc = 1,
	    .enc_args = xdr_desc_NFS4_PROGRAM_NFS_V4.procs[1].enc_arg,
	    .args = &args,
	    .timeout_ms = 20000,
	    .flavor = NFSD_AUTH_SYS,
	    .uid = uid,
	    .gid = uid,
	    .machine = "v40-test",
	};
	xdr_arena_init(ar, NULL, 0, 1u << 20);
	memset(res, 0, sizeof(*res));
	CHECK_EQ(nfsd_clnt_call(M.c, &o, xdr_desc_NFS4_PROGRAM_NFS_V4.procs[1].dec_res, res, ar),
		 0);
}

/* The status of the last result (the COMPOUND's status). */
static nfsstat4 run40(uint32_t uid, const nfs_argop4 *ops, unsigned n)
{
	COMPOUND4res res;
	struct xdr_arena ar;
	call40(uid, ops, n, &res, &ar);
	nfsstat4 st = res.status;
	xdr_arena_release(&ar);
	return st;
}

/* An op's encoded result, to compare replies byte for byte. */
struct raw {
	uint8_t b[2048];
	size_t n;
};

static void raw_of(const nfs_resop4 *r, struct raw *out)
{
	struct iovec iov[8];
	struct xdr_enc e;
	xdr_enc_init(&e, iov, 8, out->b, sizeof(out->b), NULL);
	CHECK_EQ(xdr_enc_nfs_resop4(&e, r), 0);
	CHECK(e.len <= sizeof(out->b));
	xdr_enc_flatten(&e, out->b);
	out->n = e.len;
}

static bool raw_eq(const struct raw *a, const struct raw *b)
{
	return a->n == b->n && !memcmp(a->b, b->b, a->n);
}

/* ------------------------------------------------------------ client IDs */

struct cl40 {
	uint32_t uid;
	uint64_t id;
	verifier4 confirm;
};

static nfsstat4 setclientid(struct cl40 *c, const char *owner, uint64_t verf, const char *netid,
			    const char *uaddr)
{
	nfs_argop4 op = ts_op(OP_SETCLIENTID);
	SETCLIENTID4args *a = &op.u.opsetclientid;
	memcpy(a->client.verifier, &verf, 8);
	a->client.id = xdr_opaque_of(owner, (uint32_t)strlen(owner));
	a->callback.cb_program = CBPROG;
	a->callback.cb_location.na_r_netid = xdr_string_of(netid);
	a->callback.cb_location.na_r_addr = xdr_string_of(uaddr);
	a->callback_ident = 0x1234;
	COMPOUND4res res;
	struct xdr_arena ar;
	call40(c->uid, &op, 1, &res, &ar);
	nfsstat4 st = res.status;
	if (!st) {
		c->id = res.resarray.val[0].u.opsetclientid.u.resok4.clientid;
		memcpy(c->confirm, res.resarray.val[0].u.opsetclientid.u.resok4.setclientid_confirm,
		       8);
	}
	xdr_arena_release(&ar);
	return st;
}

static nfsstat4 scconfirm(const struct cl40 *c, uint64_t id, const uint8_t *verf)
{
	nfs_argop4 op = ts_op(OP_SETCLIENTID_CONFIRM);
	op.u.opsetclientid_confirm.clientid = id;
	memcpy(op.u.opsetclientid_confirm.setclientid_confirm, verf, 8);
	return run40(c->uid, &op, 1);
}

static nfsstat4 renew(const struct cl40 *c, uint64_t id)
{
	nfs_argop4 op = ts_op(OP_RENEW);
	op.u.oprenew.clientid = id;
	return run40(c->uid, &op, 1);
}

/* A confirmed client of owner with its callback at uaddr ("" : none). */
static struct cl40 client(const char *owner, uint64_t verf, const char *uaddr)
{
	struct cl40 c = {.uid = ROOT_UID};
	CHECK_EQ(setclientid(&c, owner, verf, "tcp", uaddr), NFS4_OK);
	CHECK_EQ(scconfirm(&c, c.id, c.confirm), NFS4_OK);
	return c;
}

/* ------------------------------------------------------------ opens and locks */

struct o40 {
	stateid4 sid;
	struct ts_fh fh;
	uint32_t rflags;
	open_delegation_type4 dtype;
	stateid4 dsid;
	struct raw raw; /* OPEN's result */
};

static nfs_argop4 open_op(const struct cl40 *c, const char *owner, uint32_t seqid, const char *name,
			  uint32_t access, bool create)
{
	nfs_argop4 op = ts_op(OP_OPEN);
	OPEN4args *oa = &op.u.opopen;
	oa->seqid = seqid;
	oa->share_access = access;
	oa->share_deny = OPEN4_SHARE_DENY_NONE;
	oa->owner.clientid = c->id;
	oa->owner.owner = xdr_opaque_of(owner, (uint32_t)strlen(owner));
	oa->openhow.opentype = create ? OPEN4_CREATE : OPEN4_NOCREATE;
	oa->openhow.u.how.mode = UNCHECKED4;
	oa->claim.claim = CLAIM_NULL;
	oa->claim.u.file = xdr_opaque_of(name, (uint32_t)strlen(name));
	return op;
}

/* PUTROOTFH, OPEN, GETFH: OPEN's status. */
static nfsstat4 open40(const struct cl40 *c, const char *owner, uint32_t seqid, const char *name,
		       uint32_t access, bool create, struct o40 *out)
{
	nfs_argop4 ops[3] = {ts_op(OP_PUTROOTFH), open_op(c, owner, seqid, name, access, create),
			     ts_op(OP_GETFH)};
	COMPOUND4res res;
	struct xdr_arena ar;
	call40(c->uid, ops, 3, &res, &ar);
	nfsstat4 st = res.resarray.len >= 2 ? res.resarray.val[1].u.opopen.status : res.status;
	if (out && res.resarray.len >= 2) {
		memset(out, 0, sizeof(*out));
		raw_of(&res.resarray.val[1], &out->raw);
	}
	if (out && !st) {
		const OPEN4resok *ok = &res.resarray.val[1].u.opopen.u.resok4;
		out->sid = ok->stateid;
		out->rflags = ok->rflags;
		out->dtype = ok->delegation.delegation_type;
		if (out->dtype == OPEN_DELEGATE_READ)
			out->dsid = ok->delegation.u.read.stateid;
		const nfs_fh4 *fh = &res.resarray.val[2].u.opgetfh.u.resok4.object;
		memcpy(out->fh.b, fh->val, fh->len);
		out->fh.len = fh->len;
	}
	xdr_arena_release(&ar);
	return st;
}

/* PUTFH f, op: op's status, its result's bytes in *raw, a stateid it returns in *sid. */
static nfsstat4 on_file(const struct cl40 *c, const struct ts_fh *f, nfs_argop4 op, struct raw *raw,
			stateid4 *sid)
{
	nfs_argop4 ops[2] = {ts_put(f), op};
	COMPOUND4res res;
	struct xdr_arena ar;
	call40(c->uid, ops, 2, &res, &ar);
	nfsstat4 st = res.status;
	if (res.resarray.len == 2) {
		const nfs_resop4 *r = &res.resarray.val[1];
		if (raw)
			raw_of(r, raw);
		if (!st && sid) {
			switch (op.argop) {
			case OP_OPEN_CONFIRM:
				*sid = r->u.opopen_confirm.u.resok4.open_stateid;
				break;
			case OP_OPEN_DOWNGRADE:
				*sid = r->u.opopen_downgrade.u.resok4.open_stateid;
				break;
			case OP_LOCK:
				*sid = r->u.oplock.u.resok4.lock_stateid;
				break;
			case OP_LOCKU:
				*sid = r->u.oplocku.u.lock_stateid;
				break;
			default:
				break;
			}
		}
	}
	xdr_arena_release(&ar);
	return st;
}

static nfs_argop4 confirm_op(const stateid4 *sid, uint32_t seqid)
{
	nfs_argop4 op = ts_op(OP_OPEN_CONFIRM);
	op.u.opopen_confirm.open_stateid = *sid;
	op.u.opopen_confirm.seqid = seqid;
	return op;
}

static nfs_argop4 close_op(const stateid4 *sid, uint32_t seqid)
{
	nfs_argop4 op = ts_op(OP_CLOSE);
	op.u.opclose.open_stateid = *sid;
	op.u.opclose.seqid = seqid;
	return op;
}

/* LOCK of [off, off + len): a new lock-owner's from the open stateid, or
 * (lock_owner NULL) with the lock stateid. */
static nfs_argop4 lock_op(const struct cl40 *c, const stateid4 *sid, uint32_t seqid,
			  const char *lock_owner, uint32_t lock_seqid, uint64_t off, uint64_t len,
			  bool reclaim)
{
	nfs_argop4 op = ts_op(OP_LOCK);
	LOCK4args *la = &op.u.oplock;
	la->locktype = WRITE_LT;
	la->reclaim = reclaim;
	la->offset = off;
	la->length = len;
	la->locker.new_lock_owner = lock_owner != NULL;
	if (lock_owner) {
		open_to_lock_owner4 *o = &la->locker.u.open_owner;
		o->open_seqid = seqid;
		o->open_stateid = *sid;
		o->lock_seqid = lock_seqid;
		o->lock_owner.clientid = c->id;
		o->lock_owner.owner = xdr_opaque_of(lock_owner, (uint32_t)strlen(lock_owner));
	} else {
		la->locker.u.lock_owner.lock_stateid = *sid;
		la->locker.u.lock_owner.lock_seqid = seqid;
	}
	return op;
}

static nfs_argop4 locku_op(const stateid4 *sid, uint32_t seqid, uint64_t off, uint64_t len)
{
	nfs_argop4 op = ts_op(OP_LOCKU);
	op.u.oplocku.locktype = WRITE_LT;
	op.u.oplocku.seqid = seqid;
	op.u.oplocku.lock_stateid = *sid;
	op.u.oplocku.offset = off;
	op.u.oplocku.length = len;
	return op;
}

static nfsstat4 release_lockowner(const struct cl40 *c, const char *owner)
{
	nfs_argop4 op = ts_op(OP_RELEASE_LOCKOWNER);
	op.u.oprelease_lockowner.lock_owner.clientid = c->id;
	op.u.oprelease_lockowner.lock_owner.owner = xdr_opaque_of(owner, (uint32_t)strlen(owner));
	return run40(c->uid, &op, 1);
}

/* READ of 4 bytes at 0 with sid: its status. */
static nfsstat4 read40(const struct cl40 *c, const struct ts_fh *f, const stateid4 *sid)
{
	nfs_argop4 op = ts_op(OP_READ);
	op.u.opread.stateid = *sid;
	op.u.opread.offset = 0;
	op.u.opread.count = 4;
	return on_file(c, f, op, NULL, NULL);
}

/* OPEN + OPEN_CONFIRM of a new owner: the confirmed open stateid. */
static struct o40 open_confirmed(const struct cl40 *c, const char *owner, const char *name,
				 uint32_t access, bool create)
{
	struct o40 o;
	CHECK_EQ(open40(c, owner, 1, name, access, create, &o), NFS4_OK);
	CHECK(o.rflags & OPEN4_RESULT_CONFIRM);
	CHECK_EQ(on_file(c, &o.fh, confirm_op(&o.sid, 2), NULL, &o.sid), NFS4_OK);
	return o;
}

/* ------------------------------------------------------------ 4.0 and 4.1 */

static void t_minor_versions(void)
{
	/* SEQUENCE and EXCHANGE_ID are not 4.0's */
	nfs_argop4 op = ts_op(OP_SEQUENCE);
	COMPOUND4res res;
	struct xdr_arena ar;
	call40(ROOT_UID, &op, 1, &res, &ar);
	CHECK_EQ(res.status, NFS4ERR_OP_ILLEGAL);
	CHECK_EQ(res.resarray.len, 1);
	CHECK_EQ(res.resarray.val[0].resop, OP_ILLEGAL);
	xdr_arena_release(&ar);
	nfs_argop4 two[2] = {ts_op(OP_PUTROOTFH), ts_op(OP_EXCHANGE_ID)};
	call40(ROOT_UID, two, 2, &res, &ar);
	CHECK_EQ(res.status, NFS4ERR_OP_ILLEGAL);
	CHECK_EQ(res.resarray.len, 2);
	CHECK_EQ(res.resarray.val[1].resop, OP_ILLEGAL);
	xdr_arena_release(&ar);

	/* no session needed: PUTROOTFH + GETATTR, 4.0's attributes only */
	nfs_argop4 ga[2] = {ts_op(OP_PUTROOTFH), ts_op(OP_GETATTR)};
	struct xdr_arena bar;
	xdr_arena_init(&bar, NULL, 0, 1u << 16);
	ga[1].u.opgetattr.attr_request = mt_bitmap(&bar, FATTR4_SUPPORTED_ATTRS, -1);
	call40(ROOT_UID, ga, 2, &res, &ar);
	CHECK_EQ(res.status, NFS4_OK);
	const fattr4 *fa = &res.resarray.val[1].u.opgetattr.u.resok4.obj_attributes;
	CHECK(fa->attr_vals.len >= 8);
	uint32_t words = xdr_get32(fa->attr_vals.val);
	CHECK(words >= 1 && words <= 2);
	CHECK(xdr_get32(fa->attr_vals.val + 4) & 1u << FATTR4_SIZE);
	if (words == 2)
		CHECK_EQ(xdr_get32(fa->attr_vals.val + 8) >> (56 - 32), 0); /* none past 55 */
	xdr_arena_release(&ar);
	xdr_arena_release(&bar);

	/* the 4.0-only operations are NOTSUPP in 4.1 (RFC 8881 §18) */
	struct nfs41c_session *s = mt_session(&M, "v41-client", 0, 0);
	nfs_argop4 v40ops[] = {ts_op(OP_RENEW), ts_op(OP_SETCLIENTID_CONFIRM),
			       ts_op(OP_RELEASE_LOCKOWNER)};
	for (unsigned i = 0; i < 3; i++) {
		ts_run(s, &v40ops[i], 1, &res, &ar);
		CHECK_EQ(ts_st(&res, 0), NFS4ERR_NOTSUPP);
		xdr_arena_release(&ar);
	}
	/* a 4.0 client ID is no 4.1 one: no session for it */
	struct cl40 c = client("v40-minor", 1, "");
	CHECK(c.id != ts_clientid(s));
	nfs41c_session_destroy(s);
}

/* ------------------------------------------------------------ SETCLIENTID */

static void t_setclientid(void)
{
	struct cl40 a = {.uid = ROOT_UID}, other = {.uid = 1000};
	/* new client: unconfirmed until SETCLIENTID_CONFIRM */
	CHECK_EQ(setclientid(&a, "v40-scid", 7, "tcp", ""), NFS4_OK);
	CHECK_EQ(renew(&a, a.id), NFS4ERR_STALE_CLIENTID);
	uint8_t bad[8];
	memcpy(bad, a.confirm, 8);
	bad[0] ^= 1;
	CHECK_EQ(scconfirm(&a, a.id, bad), NFS4ERR_STALE_CLIENTID);
	CHECK_EQ(scconfirm(&a, a.id + 1, a.confirm), NFS4ERR_STALE_CLIENTID);
	CHECK_EQ(scconfirm(&a, a.id, a.confirm), NFS4_OK);
	CHECK_EQ(scconfirm(&a, a.id, a.confirm), NFS4_OK); /* a retransmission */
	CHECK_EQ(renew(&a, a.id), NFS4_OK);
	/* braidctl clients lists it, with the address it came from */
	static struct nfs41_client_info info[64];
	unsigned n = nfs41_client_list(M.mds->v41, info, 64);
	bool listed = false;
	for (unsigned i = 0; i < n && i < 64; i++)
		if (info[i].clientid == a.id)
			listed = info[i].confirmed && info[i].has_peer && !info[i].sessions &&
				 info[i].peer.ss_family == AF_INET;
	CHECK(listed);

	/* callback update: the same verifier keeps the client ID */
	struct cl40 upd = a;
	CHECK_EQ(setclientid(&upd, "v40-scid", 7, "tcp", ""), NFS4_OK);
	CHECK_EQ(upd.id, a.id);
	CHECK(memcmp(upd.confirm, a.confirm, 8));
	CHECK_EQ(scconfirm(&upd, upd.id, upd.confirm), NFS4_OK);

	/* state under the ID: another principal gets CLID_INUSE */
	struct o40 o = open_confirmed(&a, "scid-owner", "scid-file", RW, true);
	CHECK_EQ(setclientid(&other, "v40-scid", 7, "tcp", ""), NFS4ERR_CLID_INUSE);
	CHECK_EQ(setclientid(&other, "v40-scid", 8, "tcp", ""), NFS4ERR_CLID_INUSE);

	/* reboot: a new verifier is a new client ID; the old one lives
	 * until the new one is confirmed, then it and its state are gone */
	struct cl40 b = {.uid = ROOT_UID};
	CHECK_EQ(setclientid(&b, "v40-scid", 8, "tcp", ""), NFS4_OK);
	CHECK(b.id != a.id);
	CHECK_EQ(renew(&a, a.id), NFS4_OK);
	CHECK_EQ(read40(&a, &o.fh, &o.sid), NFS4_OK);
	CHECK_EQ(scconfirm(&b, b.id, b.confirm), NFS4_OK);
	CHECK_EQ(renew(&a, a.id), NFS4ERR_STALE_CLIENTID);
	CHECK_EQ(read40(&a, &o.fh, &o.sid), NFS4ERR_BAD_STATEID);
	CHECK_EQ(renew(&b, b.id), NFS4_OK);
	/* b holds nothing: another principal may take the name over */
	CHECK_EQ(setclientid(&other, "v40-scid", 9, "tcp", ""), NFS4_OK);
	CHECK_EQ(scconfirm(&other, other.id, other.confirm), NFS4_OK);
	CHECK_EQ(renew(&b, b.id), NFS4ERR_STALE_CLIENTID);
}

/* ------------------------------------------------------------ seqids */

static void t_seqids(void)
{
	struct cl40 c = client("v40-seq", 1, "");
	/* a new open-owner's OPEN must be confirmed; its retransmission gets
	 * the same reply */
	struct o40 o, again;
	CHECK_EQ(open40(&c, "seq-owner", 10, "seq-file", RW, true, &o), NFS4_OK);
	CHECK(o.rflags & OPEN4_RESULT_CONFIRM);
	CHECK(!(o.rflags & OPEN4_RESULT_PRESERVE_UNLINKED));
	CHECK_EQ(open40(&c, "seq-owner", 10, "seq-file", RW, true, &again), NFS4_OK);
	CHECK(raw_eq(&o.raw, &again.raw));
	CHECK_EQ(read40(&c, &o.fh, &o.sid), NFS4ERR_BAD_STATEID); /* not confirmed */
	CHECK_EQ(on_file(&c, &o.fh, confirm_op(&o.sid, 12), NULL, NULL), NFS4ERR_BAD_SEQID);
	struct raw r1, r2;
	stateid4 sid;
	CHECK_EQ(on_file(&c, &o.fh, confirm_op(&o.sid, 11), &r1, &sid), NFS4_OK);
	CHECK_EQ(sid.seqid, o.sid.seqid + 1);
	CHECK_EQ(on_file(&c, &o.fh, confirm_op(&o.sid, 11), &r2, NULL), NFS4_OK);
	CHECK(raw_eq(&r1, &r2));
	CHECK_EQ(read40(&c, &o.fh, &sid), NFS4_OK);
	CHECK_EQ(read40(&c, &o.fh, &o.sid), NFS4ERR_OLD_STATEID);
	stateid4 stale = sid;
	stale.other[0] ^= 0x80; /* another server instance's */
	CHECK_EQ(read40(&c, &o.fh, &stale), NFS4ERR_STALE_STATEID);

	/* a confirmed owner's next OPEN needs no confirmation */
	struct o40 o2;
	CHECK_EQ(open40(&c, "seq-owner", 12, "seq-file", RW, false, &o2), NFS4_OK);
	CHECK(!(o2.rflags & OPEN4_RESULT_CONFIRM));
	sid = o2.sid;
	/* a seqid neither next nor last */
	CHECK_EQ(open40(&c, "seq-owner", 20, "seq-file", RW, false, NULL), NFS4ERR_BAD_SEQID);
	CHECK_EQ(on_file(&c, &o.fh, close_op(&sid, 14), NULL, NULL), NFS4ERR_BAD_SEQID);

	/* LOCK by a new lock-owner (the open-owner's seqid), replayed */
	stateid4 lsid, lsid2;
	CHECK_EQ(on_file(&c, &o.fh, lock_op(&c, &sid, 13, "seq-lo", 0, 0, 100, false), &r1, &lsid),
		 NFS4_OK);
	CHECK_EQ(on_file(&c, &o.fh, lock_op(&c, &sid, 13, "seq-lo", 0, 0, 100, false), &r2, &lsid2),
		 NFS4_OK);
	CHECK(raw_eq(&r1, &r2));
	/* the lock-owner's own seqids follow its first */
	CHECK_EQ(on_file(&c, &o.fh, lock_op(&c, &lsid, 5, NULL, 0, 200, 10, false), NULL, NULL),
		 NFS4ERR_BAD_SEQID);
	CHECK_EQ(on_file(&c, &o.fh, lock_op(&c, &lsid, 1, NULL, 0, 200, 10, false), &r1, &lsid2),
		 NFS4_OK);
	CHECK_EQ(on_file(&c, &o.fh, lock_op(&c, &lsid, 1, NULL, 0, 200, 10, false), &r2, NULL),
		 NFS4_OK);
	CHECK(raw_eq(&r1, &r2));
	lsid = lsid2;
	/* another owner of another client is denied; its replay too */
	struct cl40 d = client("v40-seq-d", 1, "");
	struct o40 od = open_confirmed(&d, "seq-d", "seq-file", RW, false);
	CHECK_EQ(
	    on_file(&d, &od.fh, lock_op(&d, &od.sid, 3, "seq-d-lo", 0, 0, 1, false), &r1, NULL),
	    NFS4ERR_DENIED);
	CHECK_EQ(
	    on_file(&d, &od.fh, lock_op(&d, &od.sid, 3, "seq-d-lo", 0, 0, 1, false), &r2, NULL),
	    NFS4ERR_DENIED);
	CHECK(raw_eq(&r1, &r2));

	/* RELEASE_LOCKOWNER: not while it holds locks */
	CHECK_EQ(release_lockowner(&c, "seq-lo"), NFS4ERR_LOCKS_HELD);
	CHECK_EQ(on_file(&c, &o.fh, locku_op(&lsid, 2, 0, UINT64_MAX), &r1, &lsid2), NFS4_OK);
	CHECK_EQ(on_file(&c, &o.fh, locku_op(&lsid, 2, 0, UINT64_MAX), &r2, NULL), NFS4_OK);
	CHECK(raw_eq(&r1, &r2));
	CHECK_EQ(release_lockowner(&c, "seq-lo"), NFS4_OK);
	CHECK_EQ(on_file(&c, &o.fh, locku_op(&lsid2, 3, 0, 1), NULL, NULL), NFS4ERR_BAD_STATEID);
	CHECK_EQ(release_lockowner(&c, "never-used"), NFS4_OK);

	/* CLOSE, replayed after the stateid is gone */
	CHECK_EQ(on_file(&c, &o.fh, close_op(&sid, 14), &r1, NULL), NFS4_OK);
	CHECK_EQ(on_file(&c, &o.fh, close_op(&sid, 14), &r2, NULL), NFS4_OK);
	CHECK(raw_eq(&r1, &r2));
	CHECK_EQ(read40(&c, &o.fh, &sid), NFS4ERR_BAD_STATEID);
	CHECK_EQ(on_file(&d, &od.fh, close_op(&od.sid, 4), NULL, NULL), NFS4_OK);
}

/* ------------------------------------------------------------ leases */

static void t_leases(void)
{
	struct cl40 idle = client("v40-idle", 1, ""), busy = client("v40-busy", 1, "");
	struct o40 oi = open_confirmed(&idle, "idle-o", "lease-file", RD, true);
	struct o40 ob = open_confirmed(&busy, "busy-o", "lease-file", RD, false);
	/* busy only READs with its stateid (§9.5: that renews its lease) */
	for (int i = 0; i < 8; i++) {
		usleep(500 * 1000);
		CHECK_EQ(read40(&busy, &ob.fh, &ob.sid), NFS4_OK);
	}
	CHECK_EQ(renew(&busy, busy.id), NFS4_OK);
	CHECK_EQ(renew(&idle, idle.id), NFS4ERR_STALE_CLIENTID);
	CHECK_EQ(read40(&idle, &oi.fh, &oi.sid), NFS4ERR_BAD_STATEID);
	CHECK_EQ(on_file(&busy, &ob.fh, close_op(&ob.sid, 3), NULL, NULL), NFS4_OK);
}

/* ------------------------------------------------------------ I/O */

static void t_io(void)
{
	struct cds ds;
	cds_prepare(&M, &ds, "ds-v40", NULL);
	cds_start(&M, &ds);
	struct cl40 c = client("v40-io", 1, "");
	struct o40 o = open_confirmed(&c, "io-o", "io-file", RW, true);
	static uint8_t data[65536], back[65536];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 3);
	nfs_argop4 w = ts_op(OP_WRITE);
	w.u.opwrite.stateid = o.sid;
	w.u.opwrite.offset = 4096;
	w.u.opwrite.stable = UNSTABLE4;
	w.u.opwrite.data = xdr_opaque_of(data, sizeof(data));
	CHECK_EQ(on_file(&c, &o.fh, w, NULL, NULL), NFS4_OK);
	nfs_argop4 cm = ts_op(OP_COMMIT);
	CHECK_EQ(on_file(&c, &o.fh, cm, NULL, NULL), NFS4_OK);
	nfs_argop4 ops[2] = {ts_put(&o.fh), ts_op(OP_READ)};
	ops[1].u.opread.stateid = o.sid;
	ops[1].u.opread.offset = 4096;
	ops[1].u.opread.count = sizeof(back);
	COMPOUND4res res;
	struct xdr_arena ar;
	call40(c.uid, ops, 2, &res, &ar);
	CHECK_EQ(res.status, NFS4_OK);
	const READ4resok *rd = &res.resarray.val[1].u.opread.u.resok4;
	CHECK_EQ(rd->data.len, sizeof(back));
	CHECK(!memcmp(rd->data.val, data, sizeof(data)));
	CHECK(rd->eof);
	xdr_arena_release(&ar);
	/* data_io = refuse is for 4.1 clients: they must use layouts */
	struct nfs41c_session *s = mt_session(&M, "v41-io", 0, 0);
	nfs_argop4 r41[2] = {ts_put(&o.fh), ts_op(OP_READ)};
	r41[1].u.opread.stateid = ts_sid_special(0, 0);
	r41[1].u.opread.count = 16;
	ts_run(s, r41, 2, &res, &ar);
	CHECK_EQ(ts_st(&res, 1), NFS4ERR_PNFS_NO_LAYOUT);
	xdr_arena_release(&ar);
	nfs41c_session_destroy(s);
	CHECK_EQ(on_file(&c, &o.fh, close_op(&o.sid, 3), NULL, NULL), NFS4_OK);
	cds_stop(&ds);
}

/* ------------------------------------------------------------ callbacks */

/* What a callback listener saw. */
struct cbl {
	struct nfsd_server *srv;
	int port;
	atomic_int nulls, recalls, bad;
	pthread_mutex_t mu;
	stateid4 last_sid;
	bool answer; /* CB_RECALL answered NFS4_OK */
};
static struct cbl L;

static int cb_null(struct nfsd_req *r, void *a, void *res)
{
	(void)r, (void)a, (void)res;
	atomic_fetch_add(&L.nulls, 1);
	return NFSD_SUCCESS;
}

static int cb_compound(struct nfsd_req *r, void *a, void *resv)
{
	CB_COMPOUND4args *args = a;
	CB_COMPOUND4res *res = resv;
	memset(res, 0, sizeof(*res));
	/* RFC 7530 §16.33: minor version 0, our callback_ident, no CB_SEQUENCE */
	if (args->minorversion != 0 || args->callback_ident != 0x1234 || args->argarray.len != 1 ||
	    args->argarray.val[0].argop != OP_CB_RECALL) {
		atomic_fetch_add(&L.bad, 1);
		res->status = NFS4ERR_OP_ILLEGAL;
		return NFSD_SUCCESS;
	}
	nfs_cb_resop4 *ro = xdr_arena_alloc(&r->arena, sizeof(*ro));
	CHECK(ro);
	memset(ro, 0, sizeof(*ro));
	ro->resop = OP_CB_RECALL;
	pthread_mutex_lock(&L.mu);
	L.last_sid = args->argarray.val[0].u.opcbrecall.stateid;
	pthread_mutex_unlock(&L.mu);
	ro->u.opcbrecall.status = NFS4_OK;
	res->resarray.len = 1;
	res->resarray.val = ro;
	atomic_fetch_add(&L.recalls, 1);
	return NFSD_SUCCESS;
}

static struct nfsd_proc cb_procs[2] = {
    {.name = "CB_NULL", .fn = cb_null, .flags = NFSD_PROC_INLINE},
    {.name = "CB_COMPOUND", .fn = cb_compound, .flags = NFSD_PROC_INLINE},
};
static struct nfsd_version cb_vers = {.vers = 1, .procs = cb_procs, .nprocs = 2};
static struct nfsd_program cb_prog = {
    .prog = CBPROG, .name = "cb40", .versions = &cb_vers, .nversions = 1};

static void listener_start(void)
{
	nfsd_procs_bind(cb_procs, 2, &xdr_desc_NFS4_CALLBACK_NFS_CB);
	pthread_mutex_init(&L.mu, NULL);
	struct nfsd_server_opts o;
	nfsd_server_opts_default(&o);
	o.nloops = 1;
	int err = 0;
	CHECK((L.srv = nfsd_server_new(&o, &err)));
	CHECK_EQ(nfsd_server_add_program(L.srv, &cb_prog), 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK_EQ(nfsd_server_listen(L.srv, (struct sockaddr *)&sa, sizeof(sa)), 0);
	CHECK_EQ(nfsd_server_start(L.srv), 0);
	L.port = nfsd_server_listen_port(L.srv, 0);
}

static void wait_for(atomic_int *v, int n, double secs)
{
	double t0 = cl_now();
	while (atomic_load(v) < n) {
		CHECK(cl_now() - t0 < secs);
		usleep(20 * 1000);
	}
}

static void uaddr_of(const char *ip, int port, char *out, size_t n)
{
	snprintf(out, n, "%s.%d.%d", ip, port >> 8, port & 255);
}

static nfsstat4 delegreturn(const struct cl40 *c, const struct ts_fh *f, const stateid4 *sid)
{
	nfs_argop4 op = ts_op(OP_DELEGRETURN);
	op.u.opdelegreturn.deleg_stateid = *sid;
	return on_file(c, f, op, NULL, NULL);
}

/* A 4.1 client's OPEN for write of name, retried while NFS4ERR_DELAY for
 * at most secs (renewing a's lease): its status, the seconds it took. */
static nfsstat4 open_write_41(struct nfs41c_session *s, const char *owner, const char *name,
			      const struct cl40 *a, double secs, double *took)
{
	double t0 = cl_now();
	for (;;) {
		struct ts_openres r;
		nfsstat4 st = ts_open_name(s, NULL, owner, name, RW, 0, false, &r);
		if (st != NFS4ERR_DELAY || cl_now() - t0 > secs) {
			*took = cl_now() - t0;
			if (!st)
				CHECK_EQ(ts_close(s, &r.fh, &r.sid, NULL), NFS4_OK);
			return st;
		}
		if (a)
			renew(a, a->id);
		usleep(200 * 1000);
	}
}

static void t_callbacks(void)
{
	listener_start();
	char ua[64];
	uaddr_of("127.0.0.1", L.port, ua, sizeof(ua));
	struct cl40 a = client("v40-cb", 1, ua);
	wait_for(&L.nulls, 1, 5); /* the probe after SETCLIENTID_CONFIRM */
	struct nfs41c_session *w = mt_session(&M, "v41-writer", 0, 0);

	/* a read delegation, recalled by a writer and returned */
	struct o40 o;
	CHECK_EQ(open40(&a, "cb-o", 1, "cb-file", RD, true, &o), NFS4_OK);
	CHECK_EQ(on_file(&a, &o.fh, confirm_op(&o.sid, 2), NULL, &o.sid), NFS4_OK);
	CHECK_EQ(on_file(&a, &o.fh, close_op(&o.sid, 3), NULL, NULL), NFS4_OK);
	struct o40 r;
	CHECK_EQ(open40(&a, "cb-o", 4, "cb-file", RD, false, &r), NFS4_OK);
	CHECK_EQ(r.dtype, OPEN_DELEGATE_READ);
	/* an open under the delegation (CLAIM_DELEGATE_CUR), by another owner */
	nfs_argop4 dc[2] = {ts_op(OP_PUTROOTFH), open_op(&a, "cb-dc", 1, "cb-file", RD, false)};
	dc[1].u.opopen.claim.claim = CLAIM_DELEGATE_CUR;
	dc[1].u.opopen.claim.u.delegate_cur_info.delegate_stateid = r.dsid;
	dc[1].u.opopen.claim.u.delegate_cur_info.file = xdr_opaque_of("cb-file", 7);
	COMPOUND4res res;
	struct xdr_arena ar;
	call40(a.uid, dc, 2, &res, &ar);
	CHECK_EQ(res.status, NFS4_OK);
	stateid4 dcsid = res.resarray.val[1].u.opopen.u.resok4.stateid;
	xdr_arena_release(&ar);
	CHECK_EQ(on_file(&a, &r.fh, confirm_op(&dcsid, 2), NULL, &dcsid), NFS4_OK);
	CHECK_EQ(on_file(&a, &r.fh, close_op(&dcsid, 3), NULL, NULL), NFS4_OK);
	/* delegations do not survive a restart: nothing to purge */
	nfs_argop4 dp = ts_op(OP_DELEGPURGE);
	dp.u.opdelegpurge.clientid = a.id;
	CHECK_EQ(run40(a.uid, &dp, 1), NFS4ERR_NOTSUPP);
	struct ts_openres wr;
	CHECK_EQ(ts_open_name(w, NULL, "w-o", "cb-file", RW, 0, false, &wr), NFS4ERR_DELAY);
	wait_for(&L.recalls, 1, 5);
	pthread_mutex_lock(&L.mu);
	CHECK(ts_sid_eq_other(&L.last_sid, &r.dsid));
	pthread_mutex_unlock(&L.mu);
	CHECK_EQ(delegreturn(&a, &r.fh, &r.dsid), NFS4_OK);
	double took;
	CHECK_EQ(open_write_41(w, "w-o", "cb-file", &a, 5, &took), NFS4_OK);
	CHECK(took < 1.5);
	CHECK_EQ(on_file(&a, &r.fh, close_op(&r.sid, 5), NULL, NULL), NFS4_OK);

	/* not returned: revoked a lease after the recall, the writer goes on */
	struct o40 r2;
	CHECK_EQ(open40(&a, "cb-o", 6, "cb-file2", RD, true, &r2), NFS4_OK);
	CHECK_EQ(r2.dtype, OPEN_DELEGATE_READ);
	int before = atomic_load(&L.recalls);
	CHECK_EQ(open_write_41(w, "w-o2", "cb-file2", &a, 10, &took), NFS4_OK);
	CHECK(atomic_load(&L.recalls) > before);
	CHECK(took >= 1.5); /* lease_time = 2s */
	CHECK_EQ(delegreturn(&a, &r2.fh, &r2.dsid), NFS4ERR_BAD_STATEID);
	CHECK_EQ(on_file(&a, &r2.fh, close_op(&r2.sid, 7), NULL, NULL), NFS4_OK);
	CHECK_EQ(atomic_load(&L.bad), 0);

	/* a callback address that is not the client's own: never dialed,
	 * and no delegation */
	struct sockaddr_in sa2 = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000002)};
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	CHECK(lfd >= 0);
	CHECK_EQ(bind(lfd, (struct sockaddr *)&sa2, sizeof(sa2)), 0);
	CHECK_EQ(listen(lfd, 4), 0);
	socklen_t sl = sizeof(sa2);
	CHECK_EQ(getsockname(lfd, (struct sockaddr *)&sa2, &sl), 0);
	uaddr_of("127.0.0.2", ntohs(sa2.sin_port), ua, sizeof(ua));
	struct cl40 far = client("v40-far", 1, ua);
	struct o40 of = open_confirmed(&far, "far-o", "far-file", RD, true);
	CHECK_EQ(on_file(&far, &of.fh, close_op(&of.sid, 3), NULL, NULL), NFS4_OK);
	struct o40 of2;
	CHECK_EQ(open40(&far, "far-o", 4, "far-file", RD, false, &of2), NFS4_OK);
	CHECK_EQ(of2.dtype, OPEN_DELEGATE_NONE);
	CHECK_EQ(renew(&far, far.id), NFS4_OK); /* no delegations: no CB_PATH_DOWN */
	for (int i = 0; i < 5; i++) {
		usleep(300 * 1000);
		CHECK_EQ(renew(&a, a.id), NFS4_OK);
	}
	struct pollfd pf = {.fd = lfd, .events = POLLIN};
	CHECK_EQ(poll(&pf, 1, 0), 0); /* no connection was ever attempted */
	close(lfd);

	/* the listener gone, a delegation holder's RENEW says CB_PATH_DOWN
	 * once a probe has failed */
	struct o40 r3;
	CHECK_EQ(open40(&a, "cb-o", 8, "cb-file3", RD, true, &r3), NFS4_OK);
	CHECK_EQ(r3.dtype, OPEN_DELEGATE_READ);
	nfsd_server_free(L.srv);
	double t0 = cl_now();
	nfsstat4 st;
	while ((st = renew(&a, a.id)) == NFS4_OK && cl_now() - t0 < 8)
		usleep(200 * 1000);
	CHECK_EQ(st, NFS4ERR_CB_PATH_DOWN);
	nfs41c_session_destroy(w);
}

/* ------------------------------------------------------------ reclaim */

static void conf_set(const char *extra)
{
	char conf[16384];
	snprintf(conf, sizeof(conf),
		 "[mds]\nstore_dir = %s/store\nkey_file = %s\nexports = %s\n"
		 "listen = 127.0.0.1:%d\nrpcbind = no\n%s",
		 M.dir, M.key_path, M.exports_path, M.port, extra);
	mt_write_file(M.conf_path, conf, 0644);
}

static void t_reclaim(void)
{
	struct cl40 c = client("v40-reclaim", 1, "");
	struct o40 o = open_confirmed(&c, "rc-o", "rc-file", RW, true);
	stateid4 lsid;
	CHECK_EQ(on_file(&c, &o.fh, lock_op(&c, &o.sid, 3, "rc-lo", 0, 0, 10, false), NULL, &lsid),
		 NFS4_OK);
	mt_stop(&M);
	conf_set(CONF "grace_time = 6s\n");
	mt_boot(&M);
	CHECK_EQ(renew(&c, c.id), NFS4ERR_STALE_CLIENTID);
	CHECK_EQ(read40(&c, &o.fh, &o.sid), NFS4ERR_STALE_STATEID);
	struct cl40 n = client("v40-reclaim", 2, "");
	CHECK(n.id != c.id);
	/* a new open in grace: GRACE */
	struct cl40 other = client("v40-newcomer", 1, "");
	CHECK_EQ(open40(&other, "nc-o", 1, "rc-file", RD, false, NULL), NFS4ERR_GRACE);
	/* the reclaims */
	nfs_argop4 op = ts_op(OP_OPEN);
	OPEN4args *oa = &op.u.opopen;
	oa->seqid = 1;
	oa->share_access = RW;
	oa->owner.clientid = n.id;
	oa->owner.owner = xdr_opaque_of("rc-o", 4);
	oa->claim.claim = CLAIM_PREVIOUS;
	oa->claim.u.delegate_type = OPEN_DELEGATE_NONE;
	nfs_argop4 ops[2] = {ts_put(&o.fh), op};
	COMPOUND4res res;
	struct xdr_arena ar;
	call40(n.uid, ops, 2, &res, &ar);
	CHECK_EQ(res.status, NFS4_OK);
	stateid4 sid = res.resarray.val[1].u.opopen.u.resok4.stateid;
	CHECK(res.resarray.val[1].u.opopen.u.resok4.rflags & OPEN4_RESULT_CONFIRM);
	xdr_arena_release(&ar);
	CHECK_EQ(on_file(&n, &o.fh, confirm_op(&sid, 2), NULL, &sid), NFS4_OK);
	CHECK_EQ(on_file(&n, &o.fh, lock_op(&n, &sid, 3, "rc-lo", 0, 0, 10, true), NULL, &lsid),
		 NFS4_OK);
	/* a reclaim from a client that held nothing before */
	nfs_argop4 ops2[2] = {ts_put(&o.fh), op};
	ops2[1].u.opopen.owner.clientid = other.id;
	ops2[1].u.opopen.owner.owner = xdr_opaque_of("nc-o", 4);
	ops2[1].u.opopen.share_access = RD;
	ops2[1].u.opopen.seqid = 2;
	CHECK_EQ(run40(other.uid, ops2, 2), NFS4ERR_RECLAIM_BAD);
	/* after grace, new state again */
	double t0 = cl_now();
	uint32_t seq = 3;
	while (open40(&other, "nc-o", seq++, "rc-file", RD, false, NULL) == NFS4ERR_GRACE) {
		CHECK(cl_now() - t0 < 10);
		renew(&n, n.id);
		usleep(300 * 1000);
	}
	CHECK_EQ(on_file(&n, &o.fh, locku_op(&lsid, 1, 0, 10), NULL, &lsid), NFS4_OK);
	CHECK_EQ(on_file(&n, &o.fh, close_op(&sid, 4), NULL, NULL), NFS4_OK);
}

int main(void)
{
	mt_start(&M, "/ *(rw,no_root_squash,insecure)\n", CONF);
	cl_pin_port(&M, CONF);
	t_minor_versions();
	t_setclientid();
	t_seqids();
	t_leases();
	t_io();
	t_callbacks();
	t_reclaim();
	mt_finish(&M);
	printf("ok\n");
	return 0;
}
