/* SPDX-License-Identifier: MIT */
/* braid-mds administration and metrics (mds/admin.c). */
#ifndef BRAID_MDS_ADMIN_H
#define BRAID_MDS_ADMIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct braid_mds;
struct nfsd_program;

/*
 * Administration (admin.c): the braid_admin.x program braidctl calls (only
 * AUTH_BRAID callers: holders of the cluster key), and collectors that put
 * data servers, clients and layouts in the metrics.
 */
int mds_admin_init(struct braid_mds *mds, char *msg, size_t msglen);
void mds_admin_release(struct braid_mds *mds);
const struct nfsd_program *mds_admin_program(struct braid_mds *mds);
/* A layout recall ended after ns: returned by the client, or revoked
 * (braid_mds_layout_recall_duration_seconds; op_layout.c calls it). */
void mds_metrics_recall_done(struct braid_mds *mds, uint64_t ns, bool revoked);

#endif
