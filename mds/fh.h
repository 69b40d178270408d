/* SPDX-License-Identifier: MIT */
/* braid-mds filehandles (mds/fh.c). */
#ifndef BRAID_MDS_FH_H
#define BRAID_MDS_FH_H

#include <stdint.h>

struct braid_mds;

/*
 * Filehandles.  40 bytes:
 *
 *	0   1   version (1)
 *	1   1   type (2: MDS inode)
 *	2   2   0
 *	4   4   id of the cluster key (braid_key.id)
 *	8   4   export id (0: pseudo filesystem)
 *	12  4   0
 *	16  8   inode number, big-endian
 *	24  8   inode generation, big-endian (mds_attr.generation)
 *	32  8   SipHash-2-4-64 of bytes 0..31 under the key's fh half
 *
 * Not ours (length, version, type, key, MAC): NFS4ERR_BADHANDLE.  Ours but
 * the inode is gone or has another generation: NFS4ERR_STALE.
 */
#define MDS_FH_SIZE 40
struct mds_fh {
	uint64_t ino;
	uint64_t gen;
	uint32_t export_id;
};
void mds_fh_make(const struct braid_mds *mds, const struct mds_fh *fh, uint8_t out[MDS_FH_SIZE]);
/* 0, or -EBADMSG for a handle that is not genuine. */
int mds_fh_parse(const struct braid_mds *mds, const void *p, uint32_t len, struct mds_fh *fh);

#endif
