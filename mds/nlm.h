/* SPDX-License-Identifier: MIT */
/* braid-mds NLM v4 and NSM (mds/nlm.c). */
#ifndef BRAID_MDS_NLM_H
#define BRAID_MDS_NLM_H

#include <stdbool.h>
#include <stddef.h>

struct braid_mds;
struct nfsd_program;

/*
 * After mds_state_init: the NSM state number advanced (durably, odd while
 * up) and the hosts recorded before the restart loaded (their reclaims hold
 * the grace period its whole time).  No-op with [mds] nlm = no or nfs3 =
 * no.  -errno with a reason in msg.
 */
int mds_nlm_init(struct braid_mds *mds, char *msg, size_t msglen);
/* NLM v4 (100021) and NSM v1 (100024, SM_NOTIFY only); NULL when off. */
const struct nfsd_program *mds_nlm_program(struct braid_mds *mds);
const struct nfsd_program *mds_nsm_program(struct braid_mds *mds);
/* After the server listens: the thread that grants blocked locks, sends
 * the _RES and GRANTED calls and notifies recorded hosts (SM_NOTIFY). */
int mds_nlm_start(struct braid_mds *mds, char *msg, size_t msglen);
/* Stops the thread (it calls clients): before the RPC server goes. */
void mds_nlm_stop(struct braid_mds *mds);
/* Drops every NLM lock and frees NLM: before mds_state_release. */
void mds_nlm_release(struct braid_mds *mds);
/* Locks went from a file (any thread, any lock held but NLM's): blocked
 * NLM requests are tried again soon.  No-op when NLM is off. */
void mds_nlm_kick(struct braid_mds *mds);

#endif
