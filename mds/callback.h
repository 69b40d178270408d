/* SPDX-License-Identifier: MIT */
/* braid-mds callbacks over the clients' back channels (mds/callback.c). */
#ifndef BRAID_MDS_CALLBACK_H
#define BRAID_MDS_CALLBACK_H

#include <stdbool.h>
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
/* Waits for the NFSv4.0 probe threads (each ends within a connect and a
 * call timeout): after the RPC server, before the session layer goes. */
void mds_cb_stop(struct braid_mds *mds);
void mds_cb_release(struct braid_mds *mds);
int mds_cb_null(struct braid_mds *mds, uint64_t clientid);
/* The client's callbacks can reach it: a 4.1 back channel connection, or
 * a 4.0 callback address whose last call (CB_NULL probe) got a reply. */
bool mds_cb_up(struct braid_mds *mds, uint64_t clientid);
/* Hooks of the session layer (nfs41_server_opts.cb40_changed): a 4.0
 * client's callback was confirmed: probe it (CB_NULL, in a thread). */
void mds_cb40_changed(void *mds, uint64_t clientid);
/* Its client ID ended: forget its 4.0 callback path. */
void mds_cb_client_gone(struct braid_mds *mds, uint64_t clientid);
/* 4.1: CB_SEQUENCE, then ops; 4.0: ops alone (minor version 0).  res (and
 * what it points to) in arena. */
int mds_cb_compound(struct braid_mds *mds, uint64_t clientid, const nfs_cb_argop4 *ops,
		    unsigned nops, CB_COMPOUND4res *res, struct xdr_arena *arena);

#endif
