/* SPDX-License-Identifier: MIT */
/* Being written: see mds_impl.h for what this file owns. */
#include "config.h"

#include "mds/mds_impl.h"

int mds_dsreg_init(struct braid_mds *mds, char *msg, size_t msglen)
{
	(void)mds, (void)msg, (void)msglen;
	return 0;
}
void mds_dsreg_release(struct braid_mds *mds)
{
	(void)mds;
}
const struct nfsd_program *mds_dsreg_program(struct braid_mds *mds)
{
	(void)mds;
	return NULL;
}
void mds_dsreg_space(struct braid_mds *mds, uint64_t *total, uint64_t *avail)
{
	(void)mds;
	*total = *avail = 0;
}
void mds_data_release(struct braid_mds *mds, uint64_t ino)
{
	(void)mds, (void)ino;
}
int mds_data_truncate(struct braid_mds *mds, const struct mds_attr *attr, uint64_t old_size)
{
	(void)mds, (void)attr, (void)old_size;
	return 0;
}
