/* SPDX-License-Identifier: MIT */
/* Being written: see mds_impl.h for what this file owns. */
#include "config.h"

#include "mds/mds_impl.h"

int mds_mount_init(struct braid_mds *mds, char *msg, size_t msglen)
{
	(void)mds, (void)msg, (void)msglen;
	return 0;
}
void mds_mount_release(struct braid_mds *mds)
{
	(void)mds;
}
const struct nfsd_program *mds_mount_program(struct braid_mds *mds)
{
	(void)mds;
	return NULL;
}
void mds_mount_rpcbind_set(struct braid_mds *mds)
{
	(void)mds;
}
void mds_mount_rpcbind_unset(struct braid_mds *mds)
{
	(void)mds;
}
