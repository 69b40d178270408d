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

#include <stdbool.h>
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

/*
 * Tightly coupled layouts (RFC 8435 §2.3), for clients whose MDS mount uses
 * RPCSEC_GSS: the client sends its own (Kerberos) credential to the data
 * server, as the Linux client does with ffdv_tightly_coupled, so the
 * synthetic ids above cannot name it.  The layout's ffds_stateid instead
 * carries a capability: its 12 "other" bytes are a MAC, under the cluster
 * key's capability key, of the object, the iomode and the object's current
 * fence ids (uid, gid: the RW pair).  A data server recomputes it from the
 * object's owner and group: a READ capability never passes for WRITE, and a
 * fence (new ids) invalidates every capability issued before it.  The
 * capability says nothing of who may use it: the data server also requires
 * an RPCSEC_GSS caller, and on krb5p mounts the stateid never crosses the
 * network in clear (docs/architecture.md, "Kerberos and layouts").
 */
#define LAYOUT_CAP_SEQID 1u /* the stateid's seqid: fixed, never checked */
enum layout_cap_iomode { LAYOUT_CAP_READ = 1, LAYOUT_CAP_RW = 2 };
void layout_cap_make(const struct siphash_key *k, const struct ds_objid *obj,
		     const struct layout_fence *f, enum layout_cap_iomode iomode, uint8_t other[12]);
/* Does 'other' grant iomode (READ: a READ or an RW capability) on obj
 * owned by uid:gid?  Constant time. */
bool layout_cap_check(const struct siphash_key *k, const struct ds_objid *obj, uint32_t uid,
		      uint32_t gid, enum layout_cap_iomode iomode, const uint8_t other[12]);

#endif
