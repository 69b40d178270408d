/* SPDX-License-Identifier: MIT */
/*
 * Client state of braid-mds, shared by mds/op_state.c (clients, grace,
 * stateids, opens and share reservations), mds/state_lock.c (byte-range
 * locks) and mds/deleg.c (delegations, their recalls and its thread).
 * RFC 8881 chapters 8, 9 and 10.  Its users elsewhere see only
 * mds/state.h's mds_state_* and mds_deleg_* calls.
 *
 * Locking: one mutex, st->mu, guards every structure below and every field
 * of struct mds_state not marked otherwise.  It is held only for in-memory
 * work: never across store I/O or a data-server call.  It may be held while
 * calling nfs41_client_owner(), which takes the session layer's lock; the
 * session layer never calls our hooks with its lock held, so the order is
 * always mu, then the session layer's lock; and mu before the layout
 * layer's lo->mu.  st->rec_mu, never held with mu, makes each
 * read-then-write of a client record in the store atomic.  Callbacks
 * (CB_RECALL, CB_RECALL_ANY) are sent without mu.
 *
 * Lifetimes: a client lives from its first state operation (or
 * RECLAIM_COMPLETE) to the session layer's client_expired hook; its owners
 * live while a stateid names them; a file lives while it has an open or a
 * lock stateid or a delegation; a stateid from the operation that made it
 * to CLOSE, DELEGRETURN, FREE_STATEID or its client's end.  A revoked
 * delegation leaves its file but keeps its stateid (answering
 * NFS4ERR_DELEG_REVOKED) until FREE_STATEID or its client's end.  Nothing
 * here outlives a restart except the client records in the store
 * (mds_client_put: RFC 8881 §8.4.2.1).
 */
#ifndef BRAID_MDS_STATE_IMPL_H
#define BRAID_MDS_STATE_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "mds/mds_impl.h"
#include "mds/state.h"
#include "nfsd/bytes.h"
#include "nfsd/htab.h"

/* OPEN's share_access bits asking to be told when a delegation may be had
 * (§18.16.3); never done, but they ask for OPEN_DELEGATE_NONE_EXT. */
#define ST_WANT_SIGNAL_FLAGS                                                                       \
	(OPEN4_SHARE_ACCESS_WANT_SIGNAL_DELEG_WHEN_RESRC_AVAIL |                                   \
	 OPEN4_SHARE_ACCESS_WANT_PUSH_DELEG_WHEN_UNCONTENDED)

struct st_deleg;
struct st_file;
struct st_sid;

/* A client ID holding state (RFC 8881 §2.4, §8.1). */
struct st_client {
	struct htab_node h; /* in st->clients, by id */
	uint64_t id;
	struct st_sid *sids;   /* every stateid of the client (cnext) */
	bool reclaim_complete; /* sent a global RECLAIM_COMPLETE (§18.51) */
	bool v40;	       /* an NFSv4.0 client ID (RFC 7530): no RECLAIM_COMPLETE */
	bool recorded;	       /* the store's record of its owner names this id */
	unsigned ndelegs;      /* delegations it holds (not revoked) */
	unsigned nrevoked;     /* revoked delegations not yet freed (SEQ4_STATUS_...) */
	uint64_t recall_any_ns; /* CB_RECALL_ANY: not again before this (deleg.c) */
	uint64_t cbdown_ns;	/* its back channel seen down since (deleg.c); 0: up */
	uint64_t probe_ns;	/* CB_NULL of its back channel: not again before this */
	int prev;	       /* 1 + index in st->prev of its owner's record from before
				* the restart; 0: none (only meaningful in grace) */
	uint32_t owner_len;
	uint8_t owner[MDS_OWNER_MAX]; /* co_ownerid (NFS4_OPAQUE_LIMIT bytes at most) */
};

enum { ST_OPEN_OWNER = 1, ST_LOCK_OWNER = 2, ST_NLM_OWNER = 3 };

/*
 * An open-owner or lock-owner: the client's opaque name for it (§2.4).
 * An NLM owner (ST_NLM_OWNER, state_lock.c) is (nlm_host, nlm_svid, name =
 * the oh netobj), has no client (cl NULL), is in no table and belongs to
 * the one ST_SID_NLM stateid that names it.
 */
struct st_owner {
	struct htab_node h; /* in st->owners, by (client, kind, name) */
	struct st_client *cl;
	uint8_t kind;
	unsigned refs; /* stateids naming it; freed at 0 (NFSv4.1) */
	/* NFSv4.0 (op_v40.c, RFC 7530 §9.1.7): kept, with its seqid and last
	 * reply, until its client ends or RELEASE_LOCKOWNER */
	bool v40;
	bool confirmed; /* open-owner: OPEN_CONFIRM done (§16.18) */
	bool seq_valid; /* seqid holds the last request's */
	bool has_closed;
	uint32_t seqid;
	uint8_t *reply; /* the last request's encoded nfs_resop4, malloc'd */
	uint32_t reply_len;
	uint8_t closed[NFS4_OTHER_SIZE]; /* the open stateid its last CLOSE ended */
	/* NLM (nlm.c): the host and svid of an NLM owner, else NULL */
	const struct mds_nlm_holder *nlm_host;
	int32_t nlm_svid;
	uint32_t len;
	uint8_t name[]; /* at most NFS4_OPAQUE_LIMIT bytes (the XDR bound) */
};

/* One byte-range lock (§9.2): [start, end], end inclusive, UINT64_MAX for "to EOF". */
struct st_range {
	struct st_range *next; /* in file->ranges, sorted by start */
	struct st_sid *lock;   /* its lock stateid, hence lock-owner and client */
	uint64_t start, end;
	int32_t type; /* READ_LT or WRITE_LT */
};

/* ST_SID_NLM: the locks of one NLM owner on one file (state_lock.c); not a
 * stateid any client sees: in no table, cl NULL, on file->nlm and on its
 * host's list (cnext, cpprev: struct mds_nlm_holder.sids). */
enum { ST_SID_OPEN = 1, ST_SID_LOCK = 2, ST_SID_DELEG = 3, ST_SID_NLM = 4 };

/* A delegation's recall (deleg.c): like a layout's (layout_impl.h). */
struct st_dl {
	struct st_sid *rnext; /* in st->recalls while recalling */
	uint32_t export_id;   /* the handle CB_RECALL names */
	uint64_t igen;
	bool recalling; /* CB_RECALL sent or to be sent; DELEGRETURN ends it */
	bool cb_busy;	/* a CB_RECALL is in flight */
	bool cb_ok;	/* the client answered it: its DELEGRETURN follows */
	bool revoked;	/* not returned in time: off its file, NFS4ERR_DELEG_REVOKED */
	uint64_t deadline_ns, next_ns, start_ns; /* CLOCK_MONOTONIC */
	unsigned backoff_ms;
};

/*
 * A stateid (§8.2): an open (per open-owner and file), a set of
 * byte-range locks (per lock-owner and file) or a read delegation (per
 * client and file, no owner).  "other" is 4 bytes naming this
 * server instance, then 8 bytes of a keyed PRF of a counter: unique within
 * the instance and not guessable.
 */
struct st_sid {
	struct htab_node h; /* in st->sids, by the PRF half of other */
	uint8_t other[NFS4_OTHER_SIZE];
	uint32_t seqid; /* current; 1 at creation, never 0 (wraps to 1) */
	uint8_t type;
	struct st_client *cl;
	struct st_owner *owner;		/* NULL for a delegation */
	struct st_file *file;		/* NULL for a revoked delegation */
	uint64_t ino;			/* the file's, kept after revocation */
	struct st_sid *fnext, **fpprev; /* in file->opens, ->lockers or ->delegs */
	struct st_sid *cnext, **cpprev; /* in cl->sids */
	/* ST_SID_OPEN: the share reservation (§9.7); ST_SID_DELEG: access READ */
	uint32_t access, deny;
	uint8_t access_bmap, deny_bmap; /* bit v: an OPEN asked for value v (§18.18.3) */
	/* ST_SID_LOCK */
	struct st_sid *open; /* the open stateid it was derived from */
	unsigned nranges;    /* its ranges in file->ranges */
	/* ST_SID_DELEG */
	struct st_dl dl;
};

/* A file with opens or locks. */
struct st_file {
	struct htab_node h; /* in st->files, by ino */
	uint64_t ino;
	struct st_sid *opens;	 /* open stateids */
	struct st_sid *lockers;	 /* lock stateids */
	struct st_sid *delegs;	 /* delegation stateids, none revoked */
	struct st_sid *nlm;	 /* NLM owners' locks (ST_SID_NLM) */
	struct st_range *ranges; /* every byte-range lock on it, NFSv4's and NLM's, by start */
};

/* A client that held state before the restart (its store record). */
struct st_prev {
	uint64_t clientid; /* the id it had then, as recorded */
	bool complete;	   /* its new incarnation sent RECLAIM_COMPLETE */
	uint32_t owner_len;
	uint8_t *owner;
};

struct mds_state {
	struct braid_mds *mds;	/* constant */
	uint8_t tag[4];		/* constant: other[0..3] of this instance */
	struct siphash_key key; /* constant: other's PRF, owner hashing */
	atomic_bool grace;	/* mirrors in_grace, read without mu */
	pthread_mutex_t rec_mu; /* the store's client records; held across store I/O */
	pthread_mutex_t mu;
	uint64_t next_sid;
	struct htab sids, clients, owners, files;
	/* grace (§8.4.2.1) */
	bool in_grace;
	uint64_t grace_end_ns; /* CLOCK_MONOTONIC */
	bool grace_full;       /* NLM hosts may reclaim: no early end (mds_state_grace_hold) */
	struct st_prev *prev;  /* records found at start; freed when grace ends */
	unsigned nprev, nprev_complete, prev_cap;
	/* delegations (deleg.c) */
	struct st_deleg *dlg;
	atomic_uint nrevoked; /* revoked delegations not freed, all clients (read without mu) */
};

/* op_state.c, for state_lock.c and op_v40.c; all with st->mu held unless said otherwise. */
struct st_client *st_client_find(struct mds_state *st, uint64_t id);
/* Frees an owner no stateid names, NFSv4.0 ones too. */
void st_owner_free(struct mds_state *st, struct st_owner *ow);
/* The COMPOUND's client, made on first use; NULL only when out of memory. */
struct st_client *st_client_get(struct mds_state *st, struct nfs41_compound *c);
struct st_owner *st_owner_get(struct mds_state *st, struct st_client *cl, uint8_t kind,
			      const xdr_opaque *name, bool create);
/* Frees ow (may be NULL) if no stateid names it. */
void st_owner_put_unused(struct mds_state *st, struct st_owner *ow);
/* A new stateid of cl (ow: its owner, NULL for a delegation) on f. */
struct st_sid *st_sid_new(struct mds_state *st, uint8_t type, struct st_client *cl,
			  struct st_owner *ow, struct st_file *f);
void st_sid_free(struct mds_state *st, struct st_sid *s);
/* The stateid whose "other" this is, or NULL. */
struct st_sid *st_sid_lookup(struct mds_state *st, const uint8_t *other);
void st_sid_bump(struct st_sid *s);
/* Finds a stateid of this client of the given type (0: any) on ino (0: any
 * file) and checks its seqid (§8.2.4); special stateids are BAD_STATEID, a
 * revoked delegation's NFS4ERR_DELEG_REVOKED. */
nfsstat4 st_sid_find(struct mds_state *st, uint64_t clientid, const stateid4 *id, uint8_t type,
		     uint64_t ino, struct st_sid **out);
struct st_file *st_file_get(struct mds_state *st, uint64_t ino, bool create);
/* Frees f (may be NULL) when no stateid is on it. */
void st_file_put_unused(struct mds_state *st, struct st_file *f);
/* Without mu: the stateid of the arguments, "current stateid" replaced
 * (§16.2.3.1.2); its seqid becomes 0 unless keep_seqid (CLOSE, OPEN_DOWNGRADE). */
nfsstat4 st_sid_arg(struct nfs41_compound *c, const stateid4 *in, bool keep_seqid, stateid4 *out);
/* Without mu: ends the grace period when due (and drops the records of
 * clients that did not come back).  Returns whether grace is in effect. */
bool st_grace_poll(struct mds_state *st);
/* May this client reclaim now?  NFS4_OK, NFS4ERR_NO_GRACE or _RECLAIM_BAD. */
nfsstat4 st_reclaim_check(struct mds_state *st, const struct st_client *cl);
/* Without mu: record the client in the store before it first holds state. */
nfsstat4 st_client_record(struct mds_state *st, struct nfs41_compound *c);

/* deleg.c, with mu held unless said otherwise */
/* Without mu: the thread and its state; stopped before the clients go. */
int st_deleg_init(struct mds_state *st, char *msg, size_t msglen);
void st_deleg_stop(struct mds_state *st);
void st_deleg_release(struct mds_state *st);
/* RFC 8881 §10.4.4 for an OPEN by cl of f with access/deny: other clients'
 * delegations it conflicts with are recalled (NFS4ERR_DELAY), else OK. */
nfsstat4 st_deleg_open_conflict(struct mds_state *st, struct st_client *cl, struct st_file *f,
				uint32_t access, uint32_t deny);
/* What an OPEN is told of delegations (§18.16.3). */
struct st_deleg_req {
	uint32_t share_access; /* with its _WANT_ bits */
	int prev;	       /* CLAIM_PREVIOUS: the delegate_type it held (§10.2.1), else -1 */
	bool deleg_cur;	       /* CLAIM_DELEGATE_CUR / _DELEG_CUR_FH: it holds one */
	uint32_t export_id;    /* the handle CB_RECALL names */
	uint64_t igen;
};
/* Without mu, after the OPEN got its open stateid: a read delegation of
 * ino for c's client, or OPEN_DELEGATE_NONE(_EXT) and why. */
void st_deleg_answer(struct mds_state *st, struct nfs41_compound *c, uint64_t ino,
		     const struct st_deleg_req *q, open_delegation4 *out);
/* A delegation stateid goes (DELEGRETURN, FREE_STATEID, the client's end). */
void st_deleg_free(struct mds_state *st, struct st_sid *d, bool returned);

/* op_v40.c (RFC 7530; its hooks are in state.h) */
/* mu held: an unconfirmed 4.0 open-owner's stateid is not usable yet */
static inline bool st_sid_unconfirmed(const struct st_sid *s)
{
	return s->type == ST_SID_OPEN && s->owner->v40 && !s->owner->confirmed;
}
/* mu held: cl's NFSv4.0 owners go (its end) */
void st_v40_owners_free(struct mds_state *st, struct st_client *cl);

/* state_lock.c */
nfsstat4 mds_op_lock(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r);
nfsstat4 mds_op_lockt(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r);
nfsstat4 mds_op_locku(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r);
/* Frees a lock stateid's ranges (client expiry). */
void st_ranges_drop(struct st_sid *lock);

#endif
