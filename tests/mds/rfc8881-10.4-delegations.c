/* SPDX-License-Identifier: MIT */
/*
 * Read and write delegations (RFC 8881 §10.4, §18.16.3, §18.6, §20.2,
 * §20.6), over test back channels that answer CB_RECALL and CB_RECALL_ANY:
 *  - an OPEN for reading by a client with a back channel gets a read
 *    delegation, good for TEST_STATEID, not freed by FREE_STATEID while
 *    held; another open of the same client gets the same one; several
 *    clients may hold one; the _WANT_ flags get OPEN_DELEGATE_NONE_EXT with
 *    the reason (NOT_WANTED, CANCELLED, WRITE_DELEG_NOT_SUPP_FTYPE); a
 *    client without a back channel gets none (RESOURCE), nor does anyone
 *    while another client has the file open for writing (CONTENTION);
 *  - another client's OPEN for writing gets NFS4ERR_DELAY and the holder
 *    CB_RECALL (its stateid, the file's handle) until it returns the
 *    delegation, then goes ahead; the holder's own write open recalls
 *    nothing; it may open under the delegation (CLAIM_DELEG_CUR_FH) while
 *    being recalled; a client answering CB_RECALL with NFS4ERR_DELAY is
 *    called again;
 *  - another client's SETATTR, REMOVE, RENAME (of the file and over it),
 *    LINK and an extended attribute change recall it the same way, and
 *    NFSv3's SETATTR and REMOVE (NFS3ERR_JUKEBOX) and mds_deleg_break (the
 *    hook NFSv3 WRITE calls) too; the holder's own SETATTR does not;
 *  - hostile stateids: another client's delegation, one on another file,
 *    an open's: NFS4ERR_BAD_STATEID for DELEGRETURN and the claims;
 *  - a holder that never returns it has it revoked a lease after the
 *    recall: the conflicting OPEN then goes ahead, the stateid answers
 *    NFS4ERR_DELEG_REVOKED, SEQUENCE shows RECALLABLE_STATE_REVOKED until
 *    FREE_STATEID;
 *  - a holder whose back channel connection dies loses its delegations a
 *    lease later (they are revoked), and gets no new one;
 *  - past delegations_max, no more are granted (RESOURCE); past
 *    recall_any_above, the holders get CB_RECALL_ANY;
 *  - the counters (granted, recalled, returned, revoked) follow;
 *  - an OPEN for writing gets a write delegation (space_limit by size,
 *    small_file_threshold), good for SETATTR of the size and for another
 *    open of the same client; not while another client has the file open
 *    or holds a delegation of it; a read delegation's holder opening for
 *    writing gets none; WANT_READ_DELEG on a write open: NONE_EXT;
 *  - another client's OPEN (for reading too), GETATTR of the size or times
 *    (not of the mode alone), READ with the anonymous stateid, NFSv3
 *    GETATTR and READ recall a write delegation; the holder's own do not;
 *  - delegations = off grants none; delegations = read and data_io =
 *    refuse no write ones;
 *  - after a restart, during grace, CLAIM_PREVIOUS with a read or write
 *    delegation gets it back (pre-recalled for a client without a back
 *    channel), a NONE_EXT one is NFS4ERR_RECLAIM_BAD, and the reclaimed
 *    delegation is recalled on a conflict like any other (§10.2.1).
 */
#include "config.h"

#include "tests/mds/mds-test.h"
#include "tests/mds/state-test.h"

#include "tests/mds/deleg-test.h"
#include "tests/mds/nfs3-test.h"

#include "mds/state.h"

#define RD	  OPEN4_SHARE_ACCESS_READ
#define RW	  OPEN4_SHARE_ACCESS_BOTH
#define DN	  OPEN4_SHARE_DENY_NONE
#define WANT_READ OPEN4_SHARE_ACCESS_WANT_READ_DELEG

static struct mt T;
static struct nfs41c_session *A, *B, *C; /* A, B: back channels 0, 1; C: none */
static struct h3 R3;			 /* the root, for NFSv3 */

static struct mds_deleg_counters counters(void)
{
	struct mds_deleg_counters c;
	mds_deleg_counters(T.mds, &c);
	return c;
}

/* A read delegation for s (back channel i) of nm: its open and delegation. */
static void deleg_of(struct nfs41c_session *s, const char *owner, const char *nm,
		     struct ts_openres *r)
{
	CHECK_EQ(dt_open_read(s, owner, nm, 0, r), NFS4_OK);
	CHECK_EQ(r->dtype, OPEN_DELEGATE_READ);
	CHECK(!r->drecall);
}

static nfsstat4 test_sid(struct nfs41c_session *s, const stateid4 *sid)
{
	nfsstat4 code;
	CHECK_EQ(ts_test(s, sid, 1, &code), NFS4_OK);
	return code;
}

/* SEQUENCE on s while waiting (keeps its lease). */
static void wait_renewing(struct nfs41c_session *s, double secs)
{
	double t0 = ts_now();
	while (ts_now() - t0 < secs) {
		dt_seq_flags(s);
		usleep(100000);
	}
}

static nfsstat4 open_rw(struct nfs41c_session *s, const char *owner, const char *nm,
			struct ts_openres *r)
{
	return ts_open_name(s, NULL, owner, nm, RW, DN, false, r);
}

static void t_grant(void)
{
	struct ts_fh fh;
	struct ts_openres r, r2, rb;
	dt_create(A, "g", &fh);
	struct mds_deleg_counters c0 = counters();
	deleg_of(A, "ga", "g", &r);
	CHECK(!ts_sid_eq_other(&r.sid, &r.dsid));
	CHECK_EQ(test_sid(A, &r.dsid), NFS4_OK);
	CHECK_EQ(test_sid(B, &r.dsid), NFS4ERR_BAD_STATEID); /* not B's */
	CHECK_EQ(ts_free_stateid(A, &r.dsid), NFS4ERR_LOCKS_HELD);
	/* another open-owner of the same client: the same delegation */
	deleg_of(A, "ga2", "g", &r2);
	CHECK(ts_sid_eq_other(&r.dsid, &r2.dsid));
	/* the _WANT_ flags */
	CHECK_EQ(dt_open_read(A, "ga3", "g", OPEN4_SHARE_ACCESS_WANT_NO_DELEG, &r2), NFS4_OK);
	CHECK_EQ(r2.dtype, OPEN_DELEGATE_NONE_EXT);
	CHECK_EQ(r2.why, WND4_NOT_WANTED);
	CHECK_EQ(dt_open_read(A, "ga3", "g", OPEN4_SHARE_ACCESS_WANT_CANCEL, &r2), NFS4_OK);
	CHECK_EQ(r2.why, WND4_CANCELLED);
	CHECK_EQ(dt_open_read(A, "ga3", "g", OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG, &r2), NFS4_OK);
	CHECK_EQ(r2.dtype, OPEN_DELEGATE_NONE_EXT);
	CHECK_EQ(r2.why, WND4_WRITE_DELEG_NOT_SUPP_FTYPE);
	CHECK_EQ(dt_open_read(A, "ga3", "g", WANT_READ, &r2), NFS4_OK);
	CHECK_EQ(r2.dtype, OPEN_DELEGATE_READ);
	CHECK_EQ(ts_close(A, &fh, &r2.sid, NULL), NFS4_OK);
	/* its own open for writing recalls nothing, gets none */
	int n0 = atomic_load(&dt_cbs[0].recalls);
	CHECK_EQ(open_rw(A, "ga4", "g", &r2), NFS4_OK);
	CHECK_EQ(r2.dtype, OPEN_DELEGATE_NONE);
	CHECK_EQ(ts_close(A, &fh, &r2.sid, NULL), NFS4_OK);
	/* B too: read delegations are shared */
	deleg_of(B, "gb", "g", &rb);
	CHECK(!ts_sid_eq_other(&r.dsid, &rb.dsid));
	/* no back channel: none (the client asking is told why) */
	CHECK_EQ(dt_open_read(C, "gc", "g", 0, &r2), NFS4_OK);
	CHECK_EQ(r2.dtype, OPEN_DELEGATE_NONE);
	CHECK_EQ(dt_open_read(C, "gc", "g", WANT_READ, &r2), NFS4_OK);
	CHECK_EQ(r2.dtype, OPEN_DELEGATE_NONE_EXT);
	CHECK_EQ(r2.why, WND4_RESOURCE);
	CHECK_EQ(ts_close(C, &fh, &r2.sid, NULL), NFS4_OK);
	CHECK_EQ(atomic_load(&dt_cbs[0].recalls), n0);
	struct mds_deleg_counters c1 = counters();
	CHECK_EQ(c1.granted, c0.granted + 2);
	CHECK_EQ(c1.outstanding, c0.outstanding + 2);
	unsigned opens, locks, delegs;
	CHECK_EQ(mds_state_client_counts(T.mds, ts_clientid(A), &opens, &locks, &delegs), 0);
	CHECK_EQ(delegs, 1);
	/* returned: the stateid is gone, a second return is BAD_STATEID */
	CHECK_EQ(dt_delegreturn(A, &fh, &r.dsid), NFS4_OK);
	CHECK_EQ(dt_delegreturn(A, &fh, &r.dsid), NFS4ERR_BAD_STATEID);
	CHECK_EQ(test_sid(A, &r.dsid), NFS4ERR_BAD_STATEID);
	CHECK_EQ(dt_delegreturn(B, &fh, &rb.dsid), NFS4_OK);
	CHECK_EQ(counters().returned, c0.returned + 2);
	CHECK_EQ(counters().outstanding, c0.outstanding);
	CHECK_EQ(ts_close(A, &fh, &r.sid, NULL), NFS4_OK);
	CHECK_EQ(ts_close(B, &fh, &rb.sid, NULL), NFS4_OK);

	/* another client with the file open for writing (no delegation of
	 * its own, which A's open would recall): none */
	struct ts_openres w;
	CHECK_EQ(ts_open_name(B, NULL, "gw", "g", RW | OPEN4_SHARE_ACCESS_WANT_NO_DELEG, DN, false,
			      &w),
		 NFS4_OK);
	CHECK_EQ(w.dtype, OPEN_DELEGATE_NONE_EXT);
	CHECK_EQ(w.why, WND4_NOT_WANTED);
	CHECK_EQ(dt_open_read(A, "ga", "g", 0, &r2), NFS4_OK);
	CHECK_EQ(r2.dtype, OPEN_DELEGATE_NONE);
	CHECK_EQ(dt_open_read(A, "ga", "g", WANT_READ, &r2), NFS4_OK);
	CHECK_EQ(r2.dtype, OPEN_DELEGATE_NONE_EXT);
	CHECK_EQ(r2.why, WND4_CONTENTION);
	CHECK_EQ(ts_close(A, &fh, &r2.sid, NULL), NFS4_OK);
	CHECK_EQ(ts_close(B, &fh, &w.sid, NULL), NFS4_OK);
}

/* B's OPEN for writing while A holds a delegation. */
static void t_recall_open(void)
{
	struct ts_fh fh, other;
	struct ts_openres r, w, x;
	dt_create(A, "ro", &fh);
	dt_create(A, "ro-other", &other);
	deleg_of(A, "roa", "ro", &r);
	struct mds_deleg_counters c0 = counters();
	int n0 = atomic_load(&dt_cbs[0].recalls);
	CHECK_EQ(open_rw(B, "rob", "ro", &w), NFS4ERR_DELAY);
	dt_wait(&dt_cbs[0].recalls, n0 + 1, 5);
	dt_check_recall(0, &r.dsid, &fh);
	CHECK_EQ(counters().recalled, c0.recalled + 1);
	CHECK_EQ(open_rw(B, "rob", "ro", &w), NFS4ERR_DELAY); /* still held */
	/* no new delegation of it meanwhile, to A either */
	CHECK_EQ(dt_open_read(A, "roa2", "ro", WANT_READ, &x), NFS4_OK);
	CHECK_EQ(x.dtype, OPEN_DELEGATE_NONE_EXT);
	CHECK_EQ(x.why, WND4_CONTENTION);
	CHECK_EQ(ts_close(A, &fh, &x.sid, NULL), NFS4_OK);
	/* hostile: B returning or claiming A's, A's on another file, an open's */
	CHECK_EQ(dt_delegreturn(B, &fh, &r.dsid), NFS4ERR_BAD_STATEID);
	CHECK_EQ(dt_delegreturn(A, &other, &r.dsid), NFS4ERR_BAD_STATEID);
	CHECK_EQ(dt_delegreturn(A, &fh, &r.sid), NFS4ERR_BAD_STATEID);
	struct ts_open o = {
	    .owner = "rob2", .access = RD, .deny = DN, .mode = -1, .size = -1, .name = "ro"};
	o.claim = CLAIM_DELEG_CUR_FH;
	o.deleg_sid = r.dsid;
	CHECK_EQ(ts_open(B, &fh, &o, NULL), NFS4ERR_BAD_STATEID);
	CHECK_EQ(ts_open(A, &other, &o, NULL), NFS4ERR_BAD_STATEID);
	o.claim = CLAIM_DELEGATE_CUR;
	CHECK_EQ(ts_open(B, NULL, &o, NULL), NFS4ERR_BAD_STATEID);
	/* A turns a local open into a real one under its delegation */
	o.owner = "roa3";
	CHECK_EQ(ts_open(A, NULL, &o, &x), NFS4_OK);
	CHECK_EQ(x.dtype, OPEN_DELEGATE_NONE);
	CHECK(!memcmp(x.fh.b, fh.b, fh.len));
	o.claim = CLAIM_DELEG_CUR_FH;
	o.owner = "roa4";
	struct ts_openres y;
	CHECK_EQ(ts_open(A, &fh, &o, &y), NFS4_OK);
	/* then returns it: B's retry goes ahead */
	CHECK_EQ(dt_delegreturn(A, &fh, &r.dsid), NFS4_OK);
	CHECK_EQ(open_rw(B, "rob", "ro", &w), NFS4_OK);
	CHECK_EQ(counters().returned, c0.returned + 1);
	CHECK_EQ(counters().revoked, c0.revoked);
	CHECK_EQ(ts_close(B, &fh, &w.sid, NULL), NFS4_OK);
	CHECK_EQ(ts_close(A, &fh, &x.sid, NULL), NFS4_OK);
	CHECK_EQ(ts_close(A, &fh, &y.sid, NULL), NFS4_OK);
	CHECK_EQ(ts_close(A, &fh, &r.sid, NULL), NFS4_OK);

	/* a holder answering CB_RECALL with NFS4ERR_DELAY is called again */
	deleg_of(A, "roa", "ro", &r);
	n0 = atomic_load(&dt_cbs[0].recalls);
	atomic_store(&dt_cbs[0].mode, DT_CB_DELAY);
	CHECK_EQ(open_rw(B, "rob", "ro", &w), NFS4ERR_DELAY);
	dt_wait(&dt_cbs[0].recalls, n0 + 3, 5);
	atomic_store(&dt_cbs[0].mode, DT_CB_OK);
	dt_wait(&dt_cbs[0].recalls, n0 + 4, 5);
	usleep(300000);
	int n1 = atomic_load(&dt_cbs[0].recalls);
	usleep(500000);
	CHECK_EQ(atomic_load(&dt_cbs[0].recalls), n1); /* answered: no more calls */
	CHECK_EQ(dt_delegreturn(A, &fh, &r.dsid), NFS4_OK);
	CHECK_EQ(open_rw(B, "rob", "ro", &w), NFS4_OK);
	CHECK_EQ(ts_close(B, &fh, &w.sid, NULL), NFS4_OK);
	CHECK_EQ(ts_close(A, &fh, &r.sid, NULL), NFS4_OK);
}

/* A's write delegation of nm (its open for writing too). */
static void wdeleg_of(const char *owner, const char *nm, struct ts_openres *r)
{
	CHECK_EQ(open_rw(A, owner, nm, r), NFS4_OK);
	CHECK_EQ(r->dtype, OPEN_DELEGATE_WRITE);
	CHECK(!r->drecall);
}

/* conflict() by B on A's read (or write) delegation of nm: DELAY,
 * CB_RECALL, return, OK. */
static void recall_of(const char *nm, const char *what, nfsstat4 (*conflict)(const char *),
		      bool write)
{
	struct ts_openres r;
	struct ts_fh fh;
	dt_create(A, nm, &fh);
	if (write)
		wdeleg_of("wa", nm, &r);
	else
		deleg_of(A, "oa", nm, &r);
	int n0 = atomic_load(&dt_cbs[0].recalls);
	if (conflict(nm) != NFS4ERR_DELAY) {
		fprintf(stderr, "%s did not recall the %s delegation\n", what,
			write ? "write" : "read");
		CHECK(0);
	}
	dt_wait(&dt_cbs[0].recalls, n0 + 1, 5);
	dt_check_recall(0, &r.dsid, &fh);
	CHECK_EQ(conflict(nm), NFS4ERR_DELAY);
	CHECK_EQ(dt_delegreturn(A, &fh, &r.dsid), NFS4_OK);
	nfsstat4 st = conflict(nm);
	if (st != NFS4_OK) {
		fprintf(stderr, "%s after DELEGRETURN: %d\n", what, (int)st);
		CHECK(0);
	}
	CHECK_EQ(ts_close(A, &fh, &r.sid, NULL), NFS4_OK);
}

static void recall_by(const char *nm, const char *what, nfsstat4 (*conflict)(const char *))
{
	recall_of(nm, what, conflict, false);
}

static void wrecall_by(const char *nm, const char *what, nfsstat4 (*conflict)(const char *))
{
	recall_of(nm, what, conflict, true);
}

static nfsstat4 b_chmod(const char *nm)
{
	nfs_argop4 ops[3] = {ts_put(NULL), mt_lookup(nm), ts_op(OP_SETATTR)};
	struct ts_attrs ab;
	ops[2].u.opsetattr.stateid = ts_sid_special(0, 0);
	ops[2].u.opsetattr.obj_attributes = ts_fattr(&ab, 0640, -1);
	return dt_run(B, ops, 3);
}

static nfsstat4 b_remove(const char *nm)
{
	return dt_remove(B, nm);
}

static nfsstat4 b_rename_from(const char *nm)
{
	char to[64];
	snprintf(to, sizeof(to), "%s-moved", nm);
	return dt_rename(B, nm, to);
}

static nfsstat4 b_rename_over(const char *nm)
{
	struct ts_fh fh;
	char from[64];
	snprintf(from, sizeof(from), "%s-src", nm);
	static int made;
	if (!made++)
		dt_create(B, from, &fh);
	nfsstat4 st = dt_rename(B, from, nm);
	if (st == NFS4_OK)
		made = 0;
	return st;
}

static nfsstat4 b_link(const char *nm)
{
	nfs_argop4 ops[5] = {ts_put(NULL), mt_lookup(nm), ts_op(OP_SAVEFH), ts_put(NULL),
			     ts_op(OP_LINK)};
	char to[64];
	snprintf(to, sizeof(to), "%s-link", nm);
	ops[4].u.oplink.newname = xdr_opaque_of(to, strlen(to));
	return dt_run(B, ops, 5);
}

static nfsstat4 b_setxattr(const char *nm)
{
	nfs_argop4 ops[3] = {ts_put(NULL), mt_lookup(nm), ts_op(OP_SETXATTR)};
	ops[2].u.opsetxattr.sxa_option = SETXATTR4_EITHER;
	ops[2].u.opsetxattr.sxa_key = xdr_opaque_of("user.k", 6);
	ops[2].u.opsetxattr.sxa_value = xdr_opaque_of("v", 1);
	COMPOUND4res res;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	CHECK_EQ(nfs41c_compound_ex(B, NULL, NFS41C_MINOR2, ops, 3, &res, &ar), 0);
	nfsstat4 st = ts_st(&res, 2);
	xdr_arena_release(&ar);
	return st;
}

/* NFSv3 as braid-mds's NFSv3 service sees it: NFS3ERR_JUKEBOX while recalling */
static nfsstat4 v3_status(nfsstat3 st)
{
	return st == NFS3ERR_JUKEBOX ? NFS4ERR_DELAY : (nfsstat4)st;
}

static nfsstat4 v3_setattr(const char *nm)
{
	struct h3 f;
	CHECK_EQ(n3_lookup(&T, &R3, nm, &f), NFS3_OK);
	SETATTR3args a;
	memset(&a, 0, sizeof(a));
	a.object = h3_fh(&f);
	a.new_attributes = n3_mode(0640);
	SETATTR3res r;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	n3(&T, NFSPROC3_SETATTR, &a, &r, &ar);
	xdr_arena_release(&ar);
	return v3_status(r.status);
}

static nfsstat4 v3_remove(const char *nm)
{
	return v3_status(n3_remove_as(&T, 0, &R3, nm));
}

/* The hook NFSv3 WRITE calls (a write needs data servers, which this test has none of). */
static nfsstat4 v3_write(const char *nm)
{
	uint64_t ino;
	CHECK_EQ(mds_dir_lookup(braid_mds_store(T.mds), mds_store_root(braid_mds_store(T.mds)),
				nm, strlen(nm), &ino, NULL),
		 0);
	int rc = mds_deleg_break(T.mds, ino, 0, MDS_DELEG_WRITE);
	CHECK(rc == 0 || rc == -EAGAIN);
	return rc ? NFS4ERR_DELAY : NFS4_OK;
}

static void t_recall_ops(void)
{
	recall_by("op-setattr", "SETATTR", b_chmod);
	recall_by("op-remove", "REMOVE", b_remove);
	recall_by("op-rename", "RENAME", b_rename_from);
	recall_by("op-over", "RENAME over", b_rename_over);
	recall_by("op-link", "LINK", b_link);
	recall_by("op-xattr", "SETXATTR", b_setxattr);
	recall_by("op-v3-write", "NFSv3 write", v3_write);
	recall_by("op-v3-setattr", "NFSv3 SETATTR", v3_setattr);
	recall_by("op-v3-remove", "NFSv3 REMOVE", v3_remove);
	/* the holder's own changes recall nothing */
	struct ts_openres r;
	struct ts_fh fh;
	dt_create(A, "op-own", &fh);
	deleg_of(A, "oa", "op-own", &r);
	int n0 = atomic_load(&dt_cbs[0].recalls);
	CHECK_EQ(dt_chmod(A, &fh, 0600), NFS4_OK);
	CHECK_EQ(dt_link(A, &fh, "op-own-link"), NFS4_OK);
	CHECK_EQ(atomic_load(&dt_cbs[0].recalls), n0);
	CHECK_EQ(dt_delegreturn(A, &fh, &r.dsid), NFS4_OK);
	CHECK_EQ(ts_close(A, &fh, &r.sid, NULL), NFS4_OK);
}

/* ------------------------------------------------------------ write delegations */

/* B's GETATTR of nm asking for attr alone. */
static nfsstat4 b_getattr(const char *nm, int attr)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	nfs_argop4 ops[3] = {ts_put(NULL), mt_lookup(nm), ts_op(OP_GETATTR)};
	ops[2].u.opgetattr.attr_request = mt_bitmap(&ar, attr, -1);
	nfsstat4 st = dt_run(B, ops, 3);
	xdr_arena_release(&ar);
	return st;
}

static nfsstat4 b_getattr_size(const char *nm)
{
	return b_getattr(nm, FATTR4_SIZE);
}

static nfsstat4 b_getattr_change(const char *nm)
{
	return b_getattr(nm, FATTR4_CHANGE);
}

static nfsstat4 b_getattr_mtime(const char *nm)
{
	return b_getattr(nm, FATTR4_TIME_MODIFY);
}

static nfsstat4 b_open_read(const char *nm)
{
	struct ts_openres r;
	nfsstat4 st = dt_open_read(B, "wb-read", nm, OPEN4_SHARE_ACCESS_WANT_NO_DELEG, &r);
	if (st == NFS4_OK)
		CHECK_EQ(ts_close(B, &r.fh, &r.sid, NULL), NFS4_OK);
	return st;
}

/* READ with the anonymous stateid: through the MDS, an empty file */
static nfsstat4 b_read_anon(const char *nm)
{
	nfs_argop4 ops[3] = {ts_put(NULL), mt_lookup(nm), ts_op(OP_READ)};
	ops[2].u.opread.stateid = ts_sid_special(0, 0);
	ops[2].u.opread.offset = 0;
	ops[2].u.opread.count = 4096;
	return dt_run(B, ops, 3);
}

static nfsstat4 v3_getattr(const char *nm)
{
	struct h3 f;
	CHECK_EQ(n3_lookup(&T, &R3, nm, &f), NFS3_OK);
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	GETATTR3args a = {.object = h3_fh(&f)};
	GETATTR3res r;
	n3(&T, NFSPROC3_GETATTR, &a, &r, &ar);
	xdr_arena_release(&ar);
	return v3_status(r.status);
}

static nfsstat4 v3_read(const char *nm)
{
	struct h3 f;
	CHECK_EQ(n3_lookup(&T, &R3, nm, &f), NFS3_OK);
	char buf[16];
	uint32_t n;
	bool eof;
	return v3_status(n3_read(&T, &f, 0, sizeof(buf), buf, &n, &eof));
}

static void t_write(void)
{
	struct ts_fh fh;
	struct ts_openres r, r2, x;
	dt_create(A, "w", &fh);
	struct mds_deleg_counters c0 = counters();
	wdeleg_of("wa", "w", &r);
	CHECK(!ts_sid_eq_other(&r.sid, &r.dsid));
	/* §10.4.1: the client flushes on close past small_file_threshold */
	CHECK_EQ(r.dlimit_by, NFS_LIMIT_SIZE);
	CHECK_EQ(r.dlimit, 1u << 20);
	struct mds_deleg_counters c1 = counters();
	CHECK_EQ(c1.granted_write, c0.granted_write + 1);
	CHECK_EQ(c1.outstanding_write, c0.outstanding_write + 1);
	CHECK_EQ(test_sid(A, &r.dsid), NFS4_OK);
	/* the holder sets the size with it, and its own GETATTR recalls nothing */
	int n0 = atomic_load(&dt_cbs[0].recalls);
	nfs_argop4 sa = ts_op(OP_SETATTR);
	struct ts_attrs ab;
	sa.u.opsetattr.stateid = r.dsid;
	sa.u.opsetattr.obj_attributes = ts_fattr(&ab, -1, 100);
	CHECK_EQ(ts_on_file(A, &fh, sa, NULL), NFS4_OK);
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	nfs_argop4 ga[2] = {ts_put(&fh), ts_op(OP_GETATTR)};
	ga[1].u.opgetattr.attr_request = mt_bitmap(&ar, FATTR4_SIZE, FATTR4_CHANGE, -1);
	CHECK_EQ(dt_run(A, ga, 2), NFS4_OK);
	xdr_arena_release(&ar);
	/* another open of A's, for reading too: the same delegation */
	CHECK_EQ(dt_open_read(A, "wa2", "w", 0, &r2), NFS4_OK);
	CHECK_EQ(r2.dtype, OPEN_DELEGATE_WRITE);
	CHECK(ts_sid_eq_other(&r.dsid, &r2.dsid));
	CHECK_EQ(ts_close(A, &fh, &r2.sid, NULL), NFS4_OK);
	/* B's GETATTR of what the holder cannot change recalls nothing */
	CHECK_EQ(b_getattr("w", FATTR4_MODE), NFS4_OK);
	CHECK_EQ(b_getattr("w", FATTR4_FILEID), NFS4_OK);
	CHECK_EQ(atomic_load(&dt_cbs[0].recalls), n0);
	CHECK_EQ(dt_delegreturn(A, &fh, &r.dsid), NFS4_OK);
	CHECK_EQ(counters().outstanding_write, c0.outstanding_write);
	CHECK_EQ(ts_close(A, &fh, &r.sid, NULL), NFS4_OK);

	/* WANT_READ_DELEG on an open for writing: told why not */
	CHECK_EQ(ts_open_name(A, NULL, "wa4", "w", RW | WANT_READ, DN, false, &x), NFS4_OK);
	CHECK_EQ(x.dtype, OPEN_DELEGATE_NONE_EXT);
	CHECK_EQ(x.why, WND4_CONTENTION);
	CHECK_EQ(ts_close(A, &fh, &x.sid, NULL), NFS4_OK);

	/* another client has it open (for reading): none, told why */
	struct ts_openres b;
	CHECK_EQ(dt_open_read(B, "wb", "w", OPEN4_SHARE_ACCESS_WANT_NO_DELEG, &b), NFS4_OK);
	CHECK_EQ(ts_open_name(A, NULL, "wa5", "w", RW | OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG, DN,
			      false, &x),
		 NFS4_OK);
	CHECK_EQ(x.dtype, OPEN_DELEGATE_NONE_EXT);
	CHECK_EQ(x.why, WND4_CONTENTION);
	CHECK_EQ(ts_close(A, &fh, &x.sid, NULL), NFS4_OK);
	CHECK_EQ(ts_close(B, &fh, &b.sid, NULL), NFS4_OK);
	/* A holds a read delegation (and no open): another client's open for
	 * writing recalls it first, then gets a write delegation (a file A's
	 * SETATTR above did not touch: that blocks new ones a moment) */
	struct ts_openres rd;
	struct ts_fh fh2;
	dt_create(A, "w2", &fh2);
	CHECK_EQ(dt_open_read(A, "wa6", "w2", 0, &rd), NFS4_OK);
	CHECK_EQ(rd.dtype, OPEN_DELEGATE_READ);
	CHECK_EQ(ts_close(A, &fh2, &rd.sid, NULL), NFS4_OK);
	CHECK_EQ(open_rw(B, "wb2", "w2", &b), NFS4ERR_DELAY);
	CHECK_EQ(dt_delegreturn(A, &fh2, &rd.dsid), NFS4_OK);
	CHECK_EQ(open_rw(B, "wb2", "w2", &b), NFS4_OK);
	CHECK_EQ(b.dtype, OPEN_DELEGATE_WRITE); /* now B's */
	CHECK_EQ(dt_delegreturn(B, &fh2, &b.dsid), NFS4_OK);
	CHECK_EQ(ts_close(B, &fh2, &b.sid, NULL), NFS4_OK);

	/* what recalls a write delegation and not a read one */
	wrecall_by("w-open-read", "OPEN for reading", b_open_read);
	wrecall_by("w-getattr-size", "GETATTR size", b_getattr_size);
	wrecall_by("w-getattr-change", "GETATTR change", b_getattr_change);
	wrecall_by("w-getattr-mtime", "GETATTR time_modify", b_getattr_mtime);
	wrecall_by("w-read-anon", "READ, anonymous stateid", b_read_anon);
	wrecall_by("w-v3-getattr", "NFSv3 GETATTR", v3_getattr);
	wrecall_by("w-v3-read", "NFSv3 READ", v3_read);
	/* and what recalls both */
	wrecall_by("w-open-rw", "OPEN for writing", b_chmod);
	wrecall_by("w-remove", "REMOVE", b_remove);
	wrecall_by("w-v3-write", "NFSv3 write", v3_write);
}

/* A never returns it: revoked a lease after the recall. */
static void t_revoke(void)
{
	struct ts_fh fh;
	struct ts_openres r, w;
	dt_create(A, "rv", &fh);
	deleg_of(A, "rva", "rv", &r);
	struct mds_deleg_counters c0 = counters();
	int n0 = atomic_load(&dt_cbs[0].recalls);
	CHECK(!(dt_seq_flags(A) & SEQ4_STATUS_RECALLABLE_STATE_REVOKED));
	double t0 = ts_now();
	CHECK_EQ(open_rw(B, "rvb", "rv", &w), NFS4ERR_DELAY);
	dt_wait(&dt_cbs[0].recalls, n0 + 1, 5);
	nfsstat4 st;
	while ((st = open_rw(B, "rvb", "rv", &w)) == NFS4ERR_DELAY) {
		CHECK(ts_now() - t0 < 8);
		wait_renewing(A, 0.2); /* A stays alive, only its delegation goes */
	}
	CHECK_EQ(st, NFS4_OK);
	CHECK(ts_now() - t0 >= 2.5); /* a lease (3 s) after the recall */
	CHECK_EQ(counters().revoked, c0.revoked + 1);
	CHECK(dt_seq_flags(A) & SEQ4_STATUS_RECALLABLE_STATE_REVOKED);
	CHECK(!(dt_seq_flags(B) & SEQ4_STATUS_RECALLABLE_STATE_REVOKED));
	CHECK_EQ(test_sid(A, &r.dsid), NFS4ERR_DELEG_REVOKED);
	CHECK_EQ(dt_delegreturn(A, &fh, &r.dsid), NFS4ERR_DELEG_REVOKED);
	/* its open stays */
	CHECK_EQ(test_sid(A, &r.sid), NFS4_OK);
	CHECK_EQ(ts_free_stateid(A, &r.dsid), NFS4_OK);
	CHECK(!(dt_seq_flags(A) & SEQ4_STATUS_RECALLABLE_STATE_REVOKED));
	CHECK_EQ(test_sid(A, &r.dsid), NFS4ERR_BAD_STATEID);
	CHECK_EQ(ts_close(B, &fh, &w.sid, NULL), NFS4_OK);
	CHECK_EQ(ts_close(A, &fh, &r.sid, NULL), NFS4_OK);
}

/* A client whose back channel connection dies: its delegation is revoked
 * a lease later; it gets no new one meanwhile. */
static void t_cb_down(void)
{
	struct ts_fh fh;
	dt_create(A, "cbd", &fh);
	struct nfsd_clnt *fore = mt_connect(&T), *back = dt_conn(&T, 2);
	struct nfs41c_session_opts so = {.owner = "deleg-d", .cb_program = DT_CBPROG};
	struct nfs41c_session *D;
	CHECK_EQ(nfs41c_session_create_opts(fore, &so, &D), 0);
	nfs41c_session_set_cred(D, 0, 0);
	mt_reclaim_complete(D);
	CHECK(dt_seq_flags(D) & SEQ4_STATUS_CB_PATH_DOWN);
	struct ts_openres r, r2;
	CHECK_EQ(dt_open_read(D, "d", "cbd", WANT_READ, &r), NFS4_OK);
	CHECK_EQ(r.why, WND4_RESOURCE);
	channel_dir_from_server4 got;
	CHECK_EQ(nfs41c_session_bind(D, back, CDFC4_BACK_OR_BOTH, &got), 0);
	CHECK(!(dt_seq_flags(D) & SEQ4_STATUS_CB_PATH_DOWN));
	deleg_of(D, "d2", "cbd", &r);
	struct mds_deleg_counters c0 = counters();
	nfsd_clnt_free(back);
	double t0 = ts_now();
	while (!(dt_seq_flags(D) & SEQ4_STATUS_RECALLABLE_STATE_REVOKED)) {
		CHECK(ts_now() - t0 < 10);
		dt_seq_flags(A); /* the others' leases (3 s) too */
		dt_seq_flags(B);
		usleep(100000);
	}
	CHECK(ts_now() - t0 >= 2.5); /* a lease with the path down */
	CHECK(dt_seq_flags(D) & SEQ4_STATUS_CB_PATH_DOWN);
	CHECK_EQ(counters().revoked, c0.revoked + 1);
	CHECK_EQ(test_sid(D, &r.dsid), NFS4ERR_DELEG_REVOKED);
	CHECK_EQ(dt_open_read(D, "d3", "cbd", WANT_READ, &r2), NFS4_OK);
	CHECK_EQ(r2.why, WND4_RESOURCE);
	CHECK_EQ(ts_free_stateid(D, &r.dsid), NFS4_OK);
	CHECK_EQ(ts_close(D, &fh, &r.sid, NULL), NFS4_OK);
	CHECK_EQ(ts_close(D, &fh, &r2.sid, NULL), NFS4_OK);
	nfs41c_session_destroy(D);
	nfsd_clnt_free(fore);
}

/* delegations_max = 3, recall_any_above = 2 */
static void t_limits(void)
{
	struct ts_fh fh[4];
	struct ts_openres r[4];
	char nm[16];
	CHECK_EQ(counters().outstanding, 0);
	int any0 = atomic_load(&dt_cbs[0].recall_anys);
	uint64_t sent0 = counters().recall_any;
	for (int i = 0; i < 2; i++) {
		snprintf(nm, sizeof(nm), "lim%d", i);
		dt_create(A, nm, &fh[i]);
		deleg_of(A, "la", nm, &r[i]);
	}
	/* at the limit, not past it: no CB_RECALL_ANY */
	wait_renewing(A, 1.5);
	CHECK_EQ(atomic_load(&dt_cbs[0].recall_anys), any0);
	for (int i = 2; i < 4; i++) {
		snprintf(nm, sizeof(nm), "lim%d", i);
		dt_create(A, nm, &fh[i]);
	}
	deleg_of(A, "la", "lim2", &r[2]);
	/* past delegations_max: none */
	CHECK_EQ(dt_open_read(A, "la", "lim3", WANT_READ, &r[3]), NFS4_OK);
	CHECK_EQ(r[3].dtype, OPEN_DELEGATE_NONE_EXT);
	CHECK_EQ(r[3].why, WND4_RESOURCE);
	/* past recall_any_above: A is asked to keep its share of half */
	dt_wait(&dt_cbs[0].recall_anys, any0 + 1, 5);
	pthread_mutex_lock(&dt_cbs[0].mu);
	CHECK_EQ(dt_cbs[0].any_keep, 1);
	CHECK(dt_cbs[0].any_mask & (1u << RCA4_TYPE_MASK_RDATA_DLG));
	pthread_mutex_unlock(&dt_cbs[0].mu);
	CHECK(counters().recall_any > sent0);
	CHECK_EQ(atomic_load(&dt_cbs[1].recall_anys), 0); /* B holds none */
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(dt_delegreturn(A, &fh[i], &r[i].dsid), NFS4_OK);
		CHECK_EQ(ts_close(A, &fh[i], &r[i].sid, NULL), NFS4_OK);
	}
	CHECK_EQ(ts_close(A, &fh[3], &r[3].sid, NULL), NFS4_OK);
	CHECK_EQ(counters().outstanding, 0);
}

/* A server started with conf grants no write delegation, read ones still. */
static void no_write_delegations(const char *conf, const char *owner)
{
	struct mt t;
	mt_start(&t, "/ *(rw,no_root_squash,insecure)\n", conf);
	struct nfsd_clnt *conn;
	struct nfs41c_session *s = dt_session(&t, owner, 3, &conn, false);
	struct ts_fh fh;
	struct ts_openres r, rr;
	dt_create(s, "f", &fh);
	CHECK_EQ(ts_open_name(s, NULL, "o", "f", RW, DN, false, &r), NFS4_OK);
	CHECK_EQ(r.dtype, OPEN_DELEGATE_NONE);
	CHECK_EQ(ts_open_name(s, NULL, "o2", "f", RW | OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG, DN,
			      false, &r),
		 NFS4_OK);
	CHECK_EQ(r.dtype, OPEN_DELEGATE_NONE_EXT);
	CHECK_EQ(r.why, WND4_WRITE_DELEG_NOT_SUPP_FTYPE);
	CHECK_EQ(ts_close(s, &fh, &r.sid, NULL), NFS4_OK);
	CHECK_EQ(dt_open_read(s, "o3", "f", 0, &rr), NFS4_OK);
	CHECK_EQ(rr.dtype, OPEN_DELEGATE_READ);
	CHECK_EQ(dt_delegreturn(s, &fh, &rr.dsid), NFS4_OK);
	nfs41c_session_destroy(s);
	mt_stop(&t);
	nfsd_clnt_free(conn);
	mt_finish(&t);
}

static void t_off(void)
{
	struct mt t;
	mt_start(&t, "/ *(rw,no_root_squash,insecure)\n", "delegations = off\n");
	struct nfsd_clnt *conn;
	struct nfs41c_session *s = dt_session(&t, "off-a", 3, &conn, false);
	struct ts_fh fh;
	struct ts_openres r;
	dt_create(s, "f", &fh);
	CHECK_EQ(dt_open_read(s, "o", "f", 0, &r), NFS4_OK);
	CHECK_EQ(r.dtype, OPEN_DELEGATE_NONE);
	CHECK_EQ(dt_open_read(s, "o", "f", WANT_READ, &r), NFS4_OK);
	CHECK_EQ(r.dtype, OPEN_DELEGATE_NONE_EXT);
	CHECK_EQ(r.why, WND4_NOT_SUPP_FTYPE);
	CHECK_EQ(ts_close(s, &fh, &r.sid, NULL), NFS4_OK);
	nfs41c_session_destroy(s);
	mt_stop(&t);
	nfsd_clnt_free(conn);
	mt_finish(&t);

	no_write_delegations("delegations = read\n", "read-a");
	/* data_io = refuse (every write through layouts): none either
	 * (mds/deleg.c: LAYOUTCOMMITs a holder may send after its own
	 * truncation) */
	no_write_delegations("data_io = refuse\n", "refuse-a");
}

/* OPEN with CLAIM_PREVIOUS of f: the open and the delegation it had (§10.2.1). */
static nfsstat4 reclaim(struct nfs41c_session *s, const struct ts_fh *f, const char *owner,
			uint32_t access, open_delegation_type4 had, struct ts_openres *out)
{
	struct ts_open o = {.owner = owner,
			    .access = access,
			    .deny = DN,
			    .claim = CLAIM_PREVIOUS,
			    .prev_deleg = had,
			    .mode = -1,
			    .size = -1};
	return ts_open(s, f, &o, out);
}

static void t_reclaim(void)
{
	struct mt t;
	mt_start(&t, "/ *(rw,no_root_squash,insecure)\n", "lease_time = 3s\ngrace_time = 10s\n");
	struct nfsd_clnt *ca, *cb;
	struct nfs41c_session *a = dt_session(&t, "rc-a", 0, &ca, false);
	struct nfs41c_session *b = dt_session(&t, "rc-b", 1, &cb, false);
	struct nfs41c_session *c = ts_session(&t, "rc-c", 0, 0);
	struct ts_fh p, q;
	struct ts_openres r, w, x;
	dt_create(a, "p", &p);
	deleg_of(a, "pa", "p", &r);
	CHECK_EQ(ts_open_name(b, NULL, "qb", "q", RW, DN, true, &w), NFS4_OK);
	CHECK_EQ(w.dtype, OPEN_DELEGATE_WRITE);
	q = w.fh;
	CHECK_EQ(dt_open_read(c, "pc", "p", 0, &x), NFS4_OK);
	CHECK_EQ(x.dtype, OPEN_DELEGATE_NONE); /* no back channel */
	/* the sessions go; the client IDs, holding state, stay (§18.50.3) */
	CHECK_EQ(nfs41c_session_destroy(a), NFS4ERR_CLIENTID_BUSY);
	CHECK_EQ(nfs41c_session_destroy(b), NFS4ERR_CLIENTID_BUSY);
	CHECK_EQ(nfs41c_session_destroy(c), NFS4ERR_CLIENTID_BUSY);

	mt_stop(&t);
	nfsd_clnt_free(ca);
	nfsd_clnt_free(cb);
	mt_boot(&t);
	CHECK(mds_state_in_grace(t.mds));
	a = dt_session(&t, "rc-a", 0, &ca, true);
	b = dt_session(&t, "rc-b", 1, &cb, true);
	c = mt_session_noreclaim(&t, "rc-c", 0, 0);
	CHECK_EQ(reclaim(a, &p, "pa", RD, OPEN_DELEGATE_READ, &r), NFS4_OK);
	CHECK_EQ(r.dtype, OPEN_DELEGATE_READ);
	CHECK(!r.drecall);
	CHECK_EQ(test_sid(a, &r.dsid), NFS4_OK);
	/* no such delegation type */
	CHECK_EQ(reclaim(a, &p, "pa2", RD, OPEN_DELEGATE_NONE_EXT, NULL), NFS4ERR_RECLAIM_BAD);
	/* without a back channel: granted back, pre-recalled; returned */
	CHECK_EQ(reclaim(c, &p, "pc", RD, OPEN_DELEGATE_READ, &x), NFS4_OK);
	CHECK_EQ(x.dtype, OPEN_DELEGATE_READ);
	CHECK(x.drecall);
	CHECK_EQ(dt_delegreturn(c, &p, &x.dsid), NFS4_OK);
	/* b's write delegation of q comes back as it was */
	CHECK_EQ(reclaim(b, &q, "qb", RW, OPEN_DELEGATE_WRITE, &w), NFS4_OK);
	CHECK_EQ(w.dtype, OPEN_DELEGATE_WRITE);
	CHECK(!w.drecall);
	CHECK_EQ(test_sid(b, &w.dsid), NFS4_OK);
	CHECK_EQ(open_rw(b, "pb", "p", NULL), NFS4ERR_GRACE);
	mt_reclaim_complete(a);
	mt_reclaim_complete(b);
	mt_reclaim_complete(c);
	CHECK(!mds_state_in_grace(t.mds));
	/* the reclaimed delegation is recalled as any other */
	int n0 = atomic_load(&dt_cbs[0].recalls);
	struct ts_openres wp;
	CHECK_EQ(open_rw(b, "pb", "p", &wp), NFS4ERR_DELAY);
	dt_wait(&dt_cbs[0].recalls, n0 + 1, 5);
	dt_check_recall(0, &r.dsid, &p);
	CHECK_EQ(dt_delegreturn(a, &p, &r.dsid), NFS4_OK);
	CHECK_EQ(open_rw(b, "pb", "p", &wp), NFS4_OK);
	CHECK_EQ(ts_close(b, &p, &wp.sid, NULL), NFS4_OK);
	/* and the reclaimed write delegation too, by a's open for reading */
	n0 = atomic_load(&dt_cbs[1].recalls);
	struct ts_openres rq;
	CHECK_EQ(dt_open_read(a, "qa", "q", 0, &rq), NFS4ERR_DELAY);
	dt_wait(&dt_cbs[1].recalls, n0 + 1, 5);
	dt_check_recall(1, &w.dsid, &q);
	CHECK_EQ(dt_delegreturn(b, &q, &w.dsid), NFS4_OK);
	CHECK_EQ(dt_open_read(a, "qa", "q", 0, &rq), NFS4_OK);
	CHECK_EQ(ts_close(a, &q, &rq.sid, NULL), NFS4_OK);
	CHECK_EQ(ts_close(b, &q, &w.sid, NULL), NFS4_OK);
	CHECK_EQ(ts_close(a, &p, &r.sid, NULL), NFS4_OK);
	CHECK_EQ(ts_close(c, &p, &x.sid, NULL), NFS4_OK);
	nfs41c_session_destroy(a);
	nfs41c_session_destroy(b);
	nfs41c_session_destroy(c);
	mt_stop(&t);
	nfsd_clnt_free(ca);
	nfsd_clnt_free(cb);
	mt_finish(&t);
}

int main(void)
{
	mt_start(&T, "/ *(rw,no_root_squash,insecure)\n",
		 "lease_time = 3s\ndelegations_max = 3\nrecall_any_above = 2\n");
	struct nfsd_clnt *ca, *cb;
	A = dt_session(&T, "deleg-a", 0, &ca, false);
	B = dt_session(&T, "deleg-b", 1, &cb, false);
	C = ts_session(&T, "deleg-c", 0, 0);
	R3 = n3_mount(&T, "/");
	t_grant();
	t_recall_open();
	t_recall_ops();
	t_write();
	t_revoke();
	t_cb_down();
	t_limits();
	nfs41c_session_destroy(A);
	nfs41c_session_destroy(B);
	nfs41c_session_destroy(C);
	mt_stop(&T);
	nfsd_clnt_free(ca);
	nfsd_clnt_free(cb);
	mt_finish(&T);
	t_off();
	t_reclaim();
	return 0;
}
