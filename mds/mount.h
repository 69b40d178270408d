/* SPDX-License-Identifier: MIT */
/* braid-mds MOUNT v3 and rpcbind registration (mds/mount.c). */
#ifndef BRAID_MDS_MOUNT_H
#define BRAID_MDS_MOUNT_H

#include <stddef.h>

struct braid_mds;
struct nfsd_program;

int mds_mount_init(struct braid_mds *mds, char *msg, size_t msglen);
void mds_mount_release(struct braid_mds *mds);
/* MOUNT v3 (100005), or NULL when [mds] mount = no. */
const struct nfsd_program *mds_mount_program(struct braid_mds *mds);
/* After the server listens: register NFS and MOUNT with rpcbind when
 * [mds] rpcbind = yes and one runs (none running is not an error). */
void mds_mount_rpcbind_set(struct braid_mds *mds);
void mds_mount_rpcbind_unset(struct braid_mds *mds);

#endif
