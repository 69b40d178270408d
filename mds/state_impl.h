/* SPDX-License-Identifier: MIT */
/*
 * Client state of braid-mds, shared by mds/op_state.c (clients, grace,
 * stateids, opens and share reservations) and mds/state_lock.c (byte-range
 * locks).  RFC 8881 chapters 8 and 9; no delegations are ever granted.
 * Its users elsewhere see only mds/state.h's mds_state_* calls.
 *
 * Locking: one mutex, st->mu, guards every structure below and every field
 * of struct mds_state not marked otherwise.  It is held only for in-memory
 * work: never across store I/O or a data-server call.  It may be held while
 * calling nfs41_client_owner(), which takes the session layer's lock; the
 * session layer never calls our hooks with its lock held, so the order is
 * always mu, then the session layer's lock.  st->rec_mu, never held with mu,
 * makes each read-then-write of a client record in the store atomic.
 *
 * Lifetimes: a client lives from its first state operation (or
 * RECLAIM_COMPLETE) to the session layer's client_expired hook; its owners
 * live while a stateid names them; a file lives while it has an open or a
 * lock stateid; a stateid from the operation that made it to CLOSE,
 * FREE_STATEID or its client's end.  Nothing here outlives a restart except
 * the client records in the store (mds_client_put: RFC 8881 §8.4.2.1).
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

struct st_file;
struct st_sid;

/* A client ID holding state (RFC 8881 §2.4, §8.1). */
struct st_client {
	struct htab_node h; /* in st->clients, by id */
	uint64_t id;
	struct st_sid *sids;   /* every stateid of the client (cnext) */
	bool reclaim_complete; /* sent a global RECLAIM_COMPLETE (§18.51) */
	bool recorded;	       /* the store's record of its owner names this id */
	int prev;	       /* 1 + index in st->prev of its owner's record from before
				* the restart; 0: none (only meaningful in grace) */
	uint32_t owner_len;
	uint8_t owner[MDS_OWNER_MAX]; /* co_ownerid (NFS4_OPAQUE_LIMIT bytes at most) */
};

enum { ST_OPEN_OWNER = 1, ST_LOCK_OWNER = 2 };

/* An open-owner or lock-owner: the client's opaque name for it (§2.4). */
struct st_owner {
	struct htab_node h; /* in st->owners, by (client, kind, name) */
	struct st_client *cl;
	uint8_t kind;
	unsigned refs; /* stateids naming it; freed at 0 */
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

enum { ST_SID_OPEN = 1, ST_SID_LOCK = 2 };

/*
 * A stateid (§8.2): an open (per open-owner and file) or a set of
 * byte-range locks (per lock-owner and file).  "other" is 4 bytes naming this
 * server instance, then 8 bytes of a keyed PRF of a counter: unique within
 * the instance and not guessable.
 */
struct st_sid {
	struct htab_node h; /* in st->sids, by the PRF half of other */
	uint8_t other[NFS4_OTHER_SIZE];
	uint32_t seqid; /* current; 1 at creation, never 0 (wraps to 1) */
	uint8_t type;
	struct st_client *cl;
	struct st_owner *owner;
	struct st_file *file;
	struct st_sid *fnext, **fpprev; /* in file->opens or file->lockers */
	struct st_sid *cnext, **cpprev; /* in cl->sids */
	/* ST_SID_OPEN: the share reservation (§9.7) */
	uint32_t access, deny;
	uint8_t access_bmap, deny_bmap; /* bit v: an OPEN asked for value v (§18.18.3) */
	/* ST_SID_LOCK */
	struct st_sid *open; /* the open stateid it was derived from */
	unsigned nranges;    /* its ranges in file->ranges */
};

/* A file with opens or locks. */
struct st_file {
	struct htab_node h; /* in st->files, by ino */
	uint64_t ino;
	struct st_sid *opens;	 /* open stateids */
	struct st_sid *lockers;	 /* lock stateids */
	struct st_range *ranges; /* every byte-range lock on it, by start */
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
	struct st_prev *prev;  /* records found at start; freed when grace ends */
	unsigned nprev, nprev_complete, prev_cap;
};

/* op_state.c, for state_lock.c; all with st->mu held unless said otherwise. */
/* The COMPOUND's client, made on first use; NULL only when out of memory. */
struct st_client *st_client_get(struct mds_state *st, struct nfs41_compound *c);
struct st_owner *st_owner_get(struct mds_state *st, struct st_client *cl, uint8_t kind,
			      const xdr_opaque *name, bool create);
/* Frees ow (may be NULL) if no stateid names it. */
void st_owner_put_unused(struct mds_state *st, struct st_owner *ow);
struct st_sid *st_sid_new(struct mds_state *st, uint8_t type, struct st_owner *ow,
			  struct st_file *f);
void st_sid_free(struct mds_state *st, struct st_sid *s);
void st_sid_bump(struct st_sid *s);
/* Finds a stateid of this client of the given type (0: any) on ino (0: any
 * file) and checks its seqid (§8.2.4); special stateids are BAD_STATEID. */
nfsstat4 st_sid_find(struct mds_state *st, uint64_t clientid, const stateid4 *id, uint8_t type,
		     uint64_t ino, struct st_sid **out);
struct st_file *st_file_get(struct mds_state *st, uint64_t ino, bool create);
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

/* state_lock.c */
nfsstat4 mds_op_lock(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r);
nfsstat4 mds_op_lockt(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r);
nfsstat4 mds_op_locku(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r);
/* Frees a lock stateid's ranges (client expiry). */
void st_ranges_drop(struct st_sid *lock);

#endif
