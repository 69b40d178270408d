/* SPDX-License-Identifier: MIT */
/* Being written: see mds_impl.h for what this file owns. */
#include "config.h"

#include "mds/mds_impl.h"

const struct mds_opdef mds_ops_state[] = {
	{ 0 },
};

int mds_state_init(struct braid_mds *mds, char *msg, size_t msglen)
{
	(void)mds, (void)msg, (void)msglen;
	return 0;
}
void mds_state_release(struct braid_mds *mds)
{
	(void)mds;
}
void mds_state_client_expired(void *mds, uint64_t clientid)
{
	(void)mds, (void)clientid;
}
bool mds_state_client_has_state(void *mds, uint64_t clientid)
{
	(void)mds, (void)clientid;
	return false;
}
nfsstat4 mds_state_check_io(struct nfs41_compound *c, const stateid4 *sid, uint64_t ino,
			    bool write)
{
	(void)c, (void)sid, (void)ino, (void)write;
	return NFS4_OK;
}
bool mds_state_ino_open(struct braid_mds *mds, uint64_t ino)
{
	(void)mds, (void)ino;
	return false;
}
bool mds_state_in_grace(struct braid_mds *mds)
{
	(void)mds;
	return false;
}
