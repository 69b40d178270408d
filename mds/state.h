/* SPDX-License-Identifier: MIT */
/* braid-mds client state (mds/op_state.c, mds/state_lock.c; their shared
 * structures are in mds/state_impl.h): what the rest of the MDS calls. */
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
void mds_state_release(struct braid_mds *mds);
void mds_state_client_expired(void *mds, uint64_t clientid);
bool mds_state_client_has_state(void *mds, uint64_t clientid);
/* READ/WRITE/SETATTR(size)/ALLOCATE...: is 'sid' (already resolved from the
 * current stateid) good for I/O of 'write' kind on ino by this client?
 * NFS4ERR_BAD_STATEID, _OLD_STATEID, _EXPIRED, _OPENMODE, _LOCKED (a
 * mandatory conflict is not enforced: Braid locks are advisory), _GRACE... */
nfsstat4 mds_state_check_io(struct nfs41_compound *c, const stateid4 *sid, uint64_t ino,
			    bool write);
/* Does any client hold an open of ino?  (REMOVE keeps an open file's data.) */
bool mds_state_ino_open(struct braid_mds *mds, uint64_t ino);
/* The grace period after a restart is in progress (new state: NFS4ERR_GRACE). */
bool mds_state_in_grace(struct braid_mds *mds);
/* Open and lock stateids a client holds (braidctl clients): 0, or -ENOENT
 * when it holds no state. */
int mds_state_client_counts(struct braid_mds *mds, uint64_t clientid, unsigned *opens,
			    unsigned *locks);

#endif
