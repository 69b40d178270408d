/* SPDX-License-Identifier: MIT */
/*
 * Fencing credentials (RFC 8435 §2.2, loosely coupled): the synthetic
 * uid/gid a file's objects on the data servers are owned by, and clients
 * send in AUTH_SYS to them.  Revoking a layout moves the file to a new
 * fence epoch (its number is kept in the file's layout record, mds/); the
 * objects are then owned by the new pair and I/O under the old one fails
 * with ACCESS.
 */
#ifndef BRAID_LAYOUT_FENCE_H
#define BRAID_LAYOUT_FENCE_H

#include <stdint.h>

#include "ctl/objid.h"

/*
 * The uid/gid of object obj's file under fence epoch 'epoch': a SipHash of
 * the object key, generation and epoch (epoch 0: of the key and
 * generation only), each in [2^30, 2^31); another epoch gives another
 * pair.  The same for the same input, on every MDS and across restarts.
 */
void layout_fence_creds(const struct ds_objid *obj, uint32_t epoch, uint32_t *uid, uint32_t *gid);

#endif
