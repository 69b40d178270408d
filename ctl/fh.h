/* SPDX-License-Identifier: MIT */
/*
 * File handles of data-server objects.
 *
 * braid-ds returns an object's handle in the CREATE reply (braid_ctl.x) and
 * braid-mds hands it to clients in layouts (or computes it itself: both
 * hold the cluster key).  The handle names the object and carries a MAC,
 * so a client can neither forge a handle nor alter one to reach another
 * object; it is the same for NFSv3 and NFSv4.1 and survives restarts.
 *
 *	offset size
 *	0      1    version (1)
 *	1      1    type (DS_FH_OBJECT: the data-server object;
 *	            DS_FH_EC: the same file's bytes, reconstructed)
 *	2      2    0
 *	4      4    id of the cluster key that signed it (braid_key.id)
 *	8      16   object key
 *	24     8    object generation, big-endian
 *	32     16   SipHash-2-4-128 of bytes 0..31 under the key's fh half
 *
 * A reconstructing handle (type DS_FH_EC) is 56 bytes: the same first 32,
 * then the file's inode number on the MDS (8 bytes, big-endian: what the
 * data server names in EC_LOCATE), then the MAC of bytes 0..39.
 *
 * A handle of another length, version or type, signed by another key or
 * whose MAC does not match is not one of ours: NFS3ERR_BADHANDLE /
 * NFS4ERR_BADHANDLE.  A genuine handle whose object is gone (or has another
 * generation) is stale: NFS3ERR_STALE / NFS4ERR_STALE.
 */
#ifndef BRAID_CTL_FH_H
#define BRAID_CTL_FH_H

#include <stdint.h>

#include "ctl/objid.h"
#include "nfsd/mac.h"

#define DS_FH_SIZE    48
#define DS_FH_EC_SIZE 56

enum ds_fh_type {
	DS_FH_OBJECT = 1, /* the object id on this data server */
	/*
	 * Erasure coding (layout/policy.h): READ through it returns the
	 * file's bytes at the file's offsets, reconstructed by this data
	 * server from the other chunks of each stripe (braid_ctl.x
	 * EC_LOCATE says where they are), for a chunk whose own server is
	 * down.  The MDS puts it in a READ layout in that server's place.
	 */
	DS_FH_EC = 2,
};

void ds_fh_make(const struct braid_key *key, const struct ds_objid *id, uint8_t fh[DS_FH_SIZE]);
void ds_fh_make_ec(const struct braid_key *key, const struct ds_objid *id, uint64_t ino,
		   uint8_t fh[DS_FH_EC_SIZE]);
/* 0 and *id, or -EBADMSG for a handle that is not genuine or not of
 * type DS_FH_OBJECT. */
int ds_fh_parse(const struct braid_key *key, const void *fh, uint32_t len, struct ds_objid *id);
/* Either type: 0, *id, *type (enum ds_fh_type) and *ino (DS_FH_EC's; 0
 * for DS_FH_OBJECT), or -EBADMSG. */
int ds_fh_parse_type(const struct braid_key *key, const void *fh, uint32_t len,
		     struct ds_objid *id, int *type, uint64_t *ino);

#endif
