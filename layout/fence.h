/* SPDX-License-Identifier: MIT */
/*
 * Fencing credentials (RFC 8435 §2.2, loosely coupled): the synthetic
 * uid/gid a file's objects on the data servers are owned by, and the ids
 * clients send in AUTH_SYS to them.  Revoking a layout moves the file to a
 * new fence epoch (its number is kept in the file's layout record, mds/);
 * the objects are then owned by the new pair and I/O under the old ids
 * fails with ACCESS.
 *
 * The ids are a keyed hash (the cluster key's fence key, nfsd/mac.h) of
 * the object and the epoch, so nothing a client sees (file handles, the
 * ids of other epochs or other files) lets it compute another epoch's or
 * iomode's ids.  Objects are mode LAYOUT_FENCE_MODE: the owner reads and
 * writes, the group reads.  RW layouts carry (uid, gid); READ layouts
 * carry (read_uid, gid), a uid that is never the owner's (§2.2 allows
 * distinct ids per iomode), so a client holding only READ layouts can read
 * but never write.
 */
#ifndef BRAID_LAYOUT_FENCE_H
#define BRAID_LAYOUT_FENCE_H

#include <stdint.h>

#include "ctl/objid.h"
#include "nfsd/mac.h"

#define LAYOUT_FENCE_MODE 0640 /* objects: owner rw (RW layouts), group r (READ) */

struct layout_fence {
	uint32_t uid;	   /* the owner: RW layouts */
	uint32_t gid;	   /* the group: both */
	uint32_t read_uid; /* READ layouts: never uid */
};

/*
 * Object obj's ids under fence epoch 'epoch' and key k: each in
 * [2^30, 2^31), the same for the same input on every MDS and across
 * restarts, unrelated for another epoch, object or key.
 */
void layout_fence_creds(const struct siphash_key *k, const struct ds_objid *obj, uint32_t epoch,
			struct layout_fence *out);

#endif
