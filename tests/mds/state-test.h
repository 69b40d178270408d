/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the state tests (mds/op_state.c, mds/state_lock.c): OPEN,
 * CLOSE, OPEN_DOWNGRADE, LOCK, LOCKT, LOCKU, TEST_STATEID, FREE_STATEID and
 * RECLAIM_COMPLETE as one call each, their results copied out of the reply
 * so that nothing points into a released arena.
 *
 * Include "config.h" and "tests/mds/mds-test.h" before this header.
 */
#ifndef BRAID_TESTS_MDS_STATE_TEST_H
#define BRAID_TESTS_MDS_STATE_TEST_H

#include <endian.h>
#include <time.h>

struct ts_fh {
	uint8_t b[NFS4_FHSIZE];
	uint32_t len;
};

static inline nfs_fh4 ts_fh4(const struct ts_fh *f)
{
	return xdr_opaque_of(f->b, f->len);
}

static inline nfs_argop4 ts_op(nfs_opnum4 op)
{
	nfs_argop4 a;
	memset(&a, 0, sizeof(a));
	a.argop = op;
	return a;
}

/* The directory (NULL: the root) or file an operation starts from. */
static inline nfs_argop4 ts_put(const struct ts_fh *f)
{
	if (!f)
		return ts_op(OP_PUTROOTFH);
	nfs_argop4 a = ts_op(OP_PUTFH);
	a.u.opputfh.object = ts_fh4(f);
	return a;
}

/* The status of op i after SEQUENCE, or the COMPOUND's when it stopped before. */
nfsstat4 ts_st(const COMPOUND4res *res, unsigned i);

/* SEQUENCE + ops; the reply in *res, from *ar (initialised here, released by the caller). */
void ts_run(struct nfs41c_session *s, const nfs_argop4 *ops, unsigned n, COMPOUND4res *res,
	    struct xdr_arena *ar);

/* The client ID of s. */
uint64_t ts_clientid(struct nfs41c_session *s);

static inline bool ts_sid_eq_other(const stateid4 *a, const stateid4 *b)
{
	return !memcmp(a->other, b->other, NFS4_OTHER_SIZE);
}

/* The special stateids (RFC 8881 §8.2.3). */
static inline stateid4 ts_sid_special(uint32_t seqid, uint8_t fill)
{
	stateid4 s;
	s.seqid = seqid;
	memset(s.other, fill, sizeof(s.other));
	return s;
}

/* createattrs: mode, and a size when size >= 0 (values in bit order). */
struct ts_attrs {
	uint32_t words[2];
	uint8_t vals[12];
};

/* Those attributes (-1: left out), their words and values in *b. */
fattr4 ts_fattr(struct ts_attrs *b, int mode, int64_t size);

struct ts_open {
	const char *owner; /* open-owner */
	uint32_t access, deny;
	open_claim_type4 claim; /* CLAIM_NULL unless set */
	const char *name;	/* CLAIM_NULL */
	bool create;
	createmode4 how;
	int mode;     /* createattrs mode, -1: none */
	int64_t size; /* createattrs size, -1: none */
	uint8_t verf[8];
	open_delegation_type4 prev_deleg; /* CLAIM_PREVIOUS */
	stateid4 deleg_sid;		  /* CLAIM_DELEG_CUR_FH */
};

struct ts_openres {
	stateid4 sid;
	struct ts_fh fh;
	change_info4 cinfo;
	uint32_t rflags;
	uint32_t attrset[3];
	uint32_t attrset_len;
	open_delegation_type4 dtype;
	why_no_delegation4 why;
	stateid4 dsid; /* OPEN_DELEGATE_READ or _WRITE: the delegation stateid */
	bool drecall;  /* and its recall flag (§10.2.1) */
	limit_by4 dlimit_by; /* _WRITE: its space_limit (NFS_LIMIT_SIZE: dlimit bytes) */
	uint64_t dlimit;
};

/* PUTFH dir (NULL: root) or the file, OPEN, GETFH: OPEN's status. */
nfsstat4 ts_open(struct nfs41c_session *s, const struct ts_fh *at, const struct ts_open *o,
		 struct ts_openres *out);

/* A plain OPEN of 'name' in dir: create it (UNCHECKED4, mode 0644) if asked. */
nfsstat4 ts_open_name(struct nfs41c_session *s, const struct ts_fh *dir, const char *owner,
		      const char *name, uint32_t access, uint32_t deny, bool create,
		      struct ts_openres *out);

/* An op on a file with one stateid in, one stateid out (CLOSE, OPEN_DOWNGRADE, LOCKU). */
nfsstat4 ts_on_file(struct nfs41c_session *s, const struct ts_fh *f, nfs_argop4 op, stateid4 *out);

/* CLOSE of open stateid sid; *out: the stateid it returns. */
nfsstat4 ts_close(struct nfs41c_session *s, const struct ts_fh *f, const stateid4 *sid,
		  stateid4 *out);

/* OPEN_DOWNGRADE of sid to access/deny; *out: the new open stateid. */
nfsstat4 ts_downgrade(struct nfs41c_session *s, const struct ts_fh *f, const stateid4 *sid,
		      uint32_t access, uint32_t deny, stateid4 *out);

/* LOCKU of [off, off + len) with lock stateid lsid; *out: the new lock stateid. */
nfsstat4 ts_locku(struct nfs41c_session *s, const struct ts_fh *f, const stateid4 *lsid,
		  uint64_t off, uint64_t len, stateid4 *out);

/* What NFS4ERR_DENIED reported. */
struct ts_denied {
	uint64_t offset, length;
	nfs_lock_type4 type;
	uint64_t clientid;
	char owner[64];
};

/*
 * LOCK: with lock_owner set, a new lock-owner's first lock from the open
 * stateid 'sid'; otherwise 'sid' is the lock stateid.  *out: the lock
 * stateid; *den: the conflict on NFS4ERR_DENIED.
 */
nfsstat4 ts_lock(struct nfs41c_session *s, const struct ts_fh *f, nfs_lock_type4 type, bool reclaim,
		 uint64_t off, uint64_t len, const stateid4 *sid, const char *lock_owner,
		 stateid4 *out, struct ts_denied *den);

/* LOCKT as lock_owner; *den: the conflict on NFS4ERR_DENIED. */
nfsstat4 ts_lockt(struct nfs41c_session *s, const struct ts_fh *f, nfs_lock_type4 type,
		  uint64_t off, uint64_t len, const char *lock_owner, struct ts_denied *den);

/* TEST_STATEID: its status; each stateid's in codes[]. */
nfsstat4 ts_test(struct nfs41c_session *s, const stateid4 *sids, unsigned n, nfsstat4 *codes);

/* FREE_STATEID: its status. */
nfsstat4 ts_free_stateid(struct nfs41c_session *s, const stateid4 *sid);

/* RECLAIM_COMPLETE (of every file system): its status. */
nfsstat4 ts_reclaim_complete(struct nfs41c_session *s);

/* A session whose client has said RECLAIM_COMPLETE (RFC 8881 §18.51.3). */
struct nfs41c_session *ts_session(struct mt *t, const char *owner, uint32_t uid, uint32_t gid);

/* CLOCK_MONOTONIC, in seconds. */
double ts_now(void);

#endif
