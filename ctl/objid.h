/* SPDX-License-Identifier: MIT */
/*
 * Data-server object IDs: how braid-mds names the object that holds one
 * file's bytes on one data server (braid_ctl.x braid_ctl_objid).  Part of
 * the contract between the MDS and the data servers (ctl/), which both
 * daemons and braidctl link.
 */
#ifndef BRAID_CTL_OBJID_H
#define BRAID_CTL_OBJID_H

#include <stdint.h>

#define DS_KEY_SIZE 16 /* BRAID_CTL_KEY_SIZE */

/* braid_ctl_objid: a 16-byte key and a generation; a data server holds at
 * most one object per key. */
struct ds_objid {
	uint8_t key[DS_KEY_SIZE];
	uint64_t gen;
};

/*
 * The parity object of an erasure-coded file (braid_ctl.x EC_COMPUTE):
 * the file's key with the top bit of its first byte flipped, same
 * generation.  Keys are random, so it names no other file's object.
 */
static inline void ds_objid_parity(const struct ds_objid *data, struct ds_objid *parity)
{
	*parity = *data;
	parity->key[0] ^= 0x80;
}

/* One entry of a data server's object list (BRAID_CTLPROC_LIST). */
struct ds_list_entry {
	struct ds_objid id;
	uint64_t size;
};

#endif
