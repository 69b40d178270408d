/* SPDX-License-Identifier: MIT */
/* braid-mds callbacks over the clients' back channels (mds/callback.c). */
#ifndef BRAID_MDS_CALLBACK_H
#define BRAID_MDS_CALLBACK_H

#include <stdint.h>

#include "nfs4_prot.h"

struct braid_mds;
struct xdr_arena;

/*
 * Callbacks (callback.c), from worker threads (they wait for the reply).
 * Return 0 when the client replied (CB_COMPOUND: its status in res), or
 * -ENOTCONN (no back channel: the client's SEQUENCE then sees
 * CB_PATH_DOWN), -ETIMEDOUT, -ECONNRESET, -EPROTO.
 */
int mds_cb_init(struct braid_mds *mds);
void mds_cb_release(struct braid_mds *mds);
int mds_cb_null(struct braid_mds *mds, uint64_t clientid);
/* CB_SEQUENCE, then ops; res (and what it points to) in arena. */
int mds_cb_compound(struct braid_mds *mds, uint64_t clientid, const nfs_cb_argop4 *ops,
		    unsigned nops, CB_COMPOUND4res *res, struct xdr_arena *arena);

#endif
