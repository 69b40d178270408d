/* SPDX-License-Identifier: MIT */
/* NFSv4.1 data service: being written (nfsd/nfs41.c session layer first). */
#include "config.h"

#include <errno.h>
#include <stdio.h>

#include "dataserver/ds_impl.h"

int ds_nfs41_start(struct braid_ds *ds, char *msg, size_t msglen)
{
	(void)ds;
	snprintf(msg, msglen, "[ds] nfs41: NFSv4.1 data service not built yet; set nfs41 = no");
	return -ENOTSUP;
}

void ds_nfs41_stop(struct braid_ds *ds)
{
	(void)ds;
}
