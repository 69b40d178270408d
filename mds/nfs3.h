/* SPDX-License-Identifier: MIT */
/* braid-mds NFSv3, RFC 1813 (mds/nfs3.c). */
#ifndef BRAID_MDS_NFS3_H
#define BRAID_MDS_NFS3_H

#include "nfs3_prot.h"
#include "nfs4_prot.h"

struct braid_mds;
struct nfsd_version;

/* Version 3 of program 100003 into *v, with its reply cache.  0 or -ENOMEM. */
int mds_nfs3_init(struct braid_mds *mds, struct nfsd_version *v);
void mds_nfs3_release(struct braid_mds *mds);
/* The nfsstat3 of an NFSv4 status (knfsd's nfsd3_map_status): the same
 * number where both define it, the nearest NFSv3 status otherwise. */
nfsstat3 mds_nfs3_status(nfsstat4 st);

#endif
