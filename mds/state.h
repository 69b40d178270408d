/* SPDX-License-Identifier: MIT */
/* braid-mds client state (mds/op_state.c, mds/state_lock.c, mds/deleg.c;
 * their shared structures are in mds/state_impl.h): what the rest of the
 * MDS calls. */
#ifndef BRAID_MDS_STATE_H
#define BRAID_MDS_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nfs4_prot.h"

struct braid_mds;
struct nfs41_compound;

/*
 * State (op_state.c).  Stateids: RFC 8881 §8.2; the special stateids
 * (anonymous all-zeros, READ bypass all-ones) are accepted for I/O subject
 * to share reservations.
 */
int mds_state_init(struct braid_mds *mds, char *msg, size_t msglen);
/* Stops the delegation thread (it calls clients back): before the RPC
 * server and the session layer go. */
void mds_state_stop(struct braid_mds *mds);
void mds_state_release(struct braid_mds *mds);
void mds_state_client_expired(void *mds, uint64_t clientid);
bool mds_state_client_has_state(void *mds, uint64_t clientid);
/* SEQUENCE's status flags from this state: SEQ4_STATUS_RECALLABLE_STATE_REVOKED
 * while the client has a revoked delegation it has not freed (§18.46.3). */
uint32_t mds_state_seq_flags(void *mds, uint64_t clientid);
/* READ/WRITE/SETATTR(size)/ALLOCATE...: is 'sid' (already resolved from the
 * current stateid) good for I/O of 'write' kind on ino by this client?
 * NFS4ERR_BAD_STATEID, _OLD_STATEID, _EXPIRED, _OPENMODE, _LOCKED (a
 * mandatory conflict is not enforced: Braid locks are advisory), _GRACE... */
nfsstat4 mds_state_check_io(struct nfs41_compound *c, const stateid4 *sid, uint64_t ino,
			    bool write);
/* Does any client hold an open of ino?  (REMOVE keeps an open file's data.) */
bool mds_state_ino_open(struct braid_mds *mds, uint64_t ino);
/* Does any client hold an open of ino with write access?  (mds/ec.c seals
 * only files nobody may write; a write delegation it recalls first.) */
bool mds_state_ino_open_write(struct braid_mds *mds, uint64_t ino);
/* The grace period after a restart is in progress (new state: NFS4ERR_GRACE). */
bool mds_state_in_grace(struct braid_mds *mds);
/* NLM hosts recorded before the restart may reclaim (mds/nlm.c): begin the
 * grace period if it has not begun (and grace_time is not 0), and let it
 * run its whole grace_time (NLM has no RECLAIM_COMPLETE).  At start. */
void mds_state_grace_hold(struct braid_mds *mds);
/* Open and lock stateids and delegations a client holds (braidctl
 * clients): 0, or -ENOENT when it holds no state. */
int mds_state_client_counts(struct braid_mds *mds, uint64_t clientid, unsigned *opens,
			    unsigned *locks, unsigned *delegs);

/*
 * NFSv4.0 (op_v40.c; RFC 7530 §9): the session layer's hooks around each
 * operation of a 4.0 COMPOUND (client IDs named by owners and stateids,
 * seqids and their replies), and RENEW's NFS4ERR_CB_PATH_DOWN.
 */
nfsstat4 mds_v40_begin(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r, bool *done);
void mds_v40_end(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r, nfsstat4 st);
bool mds_v40_cb_path_down(void *mds, uint64_t clientid);

/*
 * NLM locks (mds/nlm.c) live in the table of NFSv4's byte-range locks
 * (state_lock.c), so each conflicts with the other both ways.  An NLM
 * owner is (host, svid, oh); the host is NLM's struct mds_nlm_holder, which
 * lists the host's locks.  Ranges are [start, end], end inclusive,
 * UINT64_MAX to the end of the file.  Called without the state lock.
 */
struct st_sid;
struct mds_nlm_holder {
	struct st_sid *sids; /* its owners' locks, one entry per (owner, file); state lock */
};
struct mds_nlm_owner {
	const struct mds_nlm_holder *host;
	int32_t svid;
	const uint8_t *oh;
	uint32_t oh_len; /* at most MDS_LOCK_OH_MAX */
};
#define MDS_LOCK_OH_MAX 1024 /* NLM's MAXNETOBJ_SZ, NFSv4's NFS4_OPAQUE_LIMIT */
/* A conflicting lock, for NLM TEST and NFS4ERR_DENIED. */
struct mds_lock_conflict {
	bool exclusive;
	bool nlm;	   /* an NLM owner's: svid and oh are its; else an NFSv4
			    * lock-owner's: clientid and oh its owner name */
	int32_t svid;
	uint64_t clientid;
	uint64_t start, end;
	uint32_t oh_len;
	uint8_t oh[MDS_LOCK_OH_MAX];
};
/* Take [start, end] for host's owner (POSIX: replaces what the owner held
 * there, merges, never blocks).  0; -EAGAIN: a conflicting lock, in *x
 * when x is not NULL; -ENOMEM. */
int mds_lock_nlm(struct braid_mds *mds, uint64_t ino, const struct mds_nlm_owner *ow,
		 bool exclusive, uint64_t start, uint64_t end, struct mds_lock_conflict *x);
/* The same question without taking it (NLM TEST): 0 or -EAGAIN. */
int mds_lock_nlm_test(struct braid_mds *mds, uint64_t ino, const struct mds_nlm_owner *ow,
		      bool exclusive, uint64_t start, uint64_t end, struct mds_lock_conflict *x);
/* Release [start, end] of the owner's locks on ino (none held: no error).
 * -ENOMEM only when a range must be split and no memory is left. */
int mds_lock_nlm_unlock(struct braid_mds *mds, uint64_t ino, const struct mds_nlm_owner *ow,
			uint64_t start, uint64_t end);
/* Every lock of the host goes (FREE_ALL, its reboot, the end of NLM). */
void mds_lock_nlm_drop_host(struct braid_mds *mds, struct mds_nlm_holder *host);
/* Does the host hold any lock? */
bool mds_lock_nlm_host_busy(struct braid_mds *mds, const struct mds_nlm_holder *host);
/* Would a share reservation of access/deny (OPEN4_SHARE_ACCESS_*,
 * OPEN4_SHARE_DENY_* bits) conflict with an NFSv4 open of ino (§9.7)? */
bool mds_state_share_conflict(struct braid_mds *mds, uint64_t ino, uint32_t access,
			      uint32_t deny);

/*
 * Delegations (deleg.c; RFC 8881 §10.4): [mds] delegations = on (read and
 * write) | read | off, at most delegations_max outstanding.
 *
 * mds_deleg_break: an operation that conflicts with other clients'
 * delegations of ino (§10.4.4: a write, a change of attributes, REMOVE,
 * RENAME or LINK of the file) is about to run for clientid (0: no NFSv4
 * client, e.g. NFSv3).  0: none is held by another client, go ahead (and no
 * new one is granted on ino for a moment, so none slips in before the
 * change); -EAGAIN: their recall has started (CB_RECALL), answer
 * NFS4ERR_DELAY / NFS3ERR_JUKEBOX and let the client retry.  A holder that
 * does not return the delegation within a lease has it revoked, and the
 * retry proceeds.  Never blocks.
 */
enum mds_deleg_why {
	MDS_DELEG_OPEN = 1, /* an OPEN for write or denying read */
	MDS_DELEG_WRITE,    /* I/O with a special stateid, or NFSv3 WRITE */
	MDS_DELEG_SETATTR,
	MDS_DELEG_REMOVE,
	MDS_DELEG_RENAME,
	MDS_DELEG_LINK,
	MDS_DELEG_XATTR,
	MDS_DELEG_LOCK,	   /* an NLM lock (the holder locks locally) */
	MDS_DELEG_CB_DOWN, /* the holder's back channel was down a lease */
	MDS_DELEG_LIMIT,   /* CB_RECALL_ANY: too many outstanding */
};
int mds_deleg_break(struct braid_mds *mds, uint64_t ino, uint64_t clientid, enum mds_deleg_why why);
/* The same as an op's status: NFS4_OK or NFS4ERR_DELAY (NFSv3: JUKEBOX). */
nfsstat4 mds_deleg_break_op(struct braid_mds *mds, uint64_t ino, uint64_t clientid,
			    enum mds_deleg_why why);
/* An operation that reads what a write delegation's holder may have cached
 * (another client's GETATTR of the size or times, its READ): 0, or -EAGAIN
 * when other clients' write delegations of ino are being recalled (answer
 * DELAY / JUKEBOX).  Takes no lock while no write delegation is out. */
int mds_deleg_break_write(struct braid_mds *mds, uint64_t ino, uint64_t clientid);
/* clientid asks for an RW layout of ino: its own write delegation of it is
 * recalled (writes through layouts end in LAYOUTCOMMITs, which a holder
 * may send late; see deleg.c).  The LAYOUTGET goes ahead. */
void mds_deleg_layout_rw(struct braid_mds *mds, uint64_t ino, uint64_t clientid);

/* Counters since start (metrics). */
struct mds_deleg_counters {
	uint64_t outstanding; /* granted, not returned nor revoked */
	uint64_t outstanding_write; /* of which write delegations */
	uint64_t granted, recalled, returned, revoked;
	uint64_t granted_write; /* of granted */
	uint64_t recall_any; /* CB_RECALL_ANY calls sent */
};
void mds_deleg_counters(struct braid_mds *mds, struct mds_deleg_counters *out);

#endif
