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

/* One entry of a data server's object list (BRAID_CTLPROC_LIST). */
struct ds_list_entry {
	struct ds_objid id;
	uint64_t size;
};

#endif
