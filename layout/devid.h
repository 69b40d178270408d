/* SPDX-License-Identifier: MIT */
/*
 * pNFS devices (RFC 8881 §12.2.10): a data server as layouts name it, and
 * its device ID.  Plain C; the metadata server fills a struct
 * layout_device from what the data server registered.
 *
 * A device ID is per data server and address list (and versions):
 *	0  4  data server id, big-endian
 *	4  8  SipHash of its uuid, addresses and versions
 *	12 4  "bRd\1", or "bRd\2" for the tightly coupled device
 * so an ID never changes its address list: a data server registering
 * other addresses gets a new ID (DESIGN.md "Layouts": mint a new ID,
 * never change an address list).  The hash is under a fixed key, so an
 * ID survives restarts of the metadata server.
 */
#ifndef BRAID_LAYOUT_DEVID_H
#define BRAID_LAYOUT_DEVID_H

#include <stdbool.h>
#include <stdint.h>

#define LAYOUT_DEVID_SIZE    16 /* NFS4_DEVICEID4_SIZE */
#define LAYOUT_DEV_ADDRS_MAX 16 /* MDS_DS_ADDRS_MAX, BRAID_CTL_ADDRS_MAX */
#define LAYOUT_DEV_VERS_MAX  8	/* MDS_DS_PROTOS_MAX, BRAID_CTL_PROTOS_MAX */

/* An RFC 5665 network address: netid ("tcp", "tcp6", "rdma", "rdma6") and
 * universal address, port included; NUL-terminated. */
struct layout_netaddr {
	char netid[33];
	char uaddr[65];
};

/* One NFS version a data server speaks, with its largest READ and WRITE. */
struct layout_version {
	uint32_t version, minorversion, rsize, wsize;
	bool gss; /* takes RPCSEC_GSS: may serve tightly coupled layouts */
};

/*
 * A data server as a device: the addresses clients reach it on and the
 * versions it speaks, in its order (the preferred first).  naddrs and
 * nversions are what it registered; at most the _MAX first are used.
 */
struct layout_device {
	uint32_t ds_id; /* the MDS's id of the data server, never 0 */
	bool tight;	/* the device of tightly coupled layouts (RPCSEC_GSS
			 * clients, layout/fence.h): only versions with gss,
			 * ffdv_tightly_coupled set; its own device ID */
	uint8_t uuid[16];
	unsigned naddrs, nversions;
	struct layout_netaddr addrs[LAYOUT_DEV_ADDRS_MAX];
	struct layout_version versions[LAYOUT_DEV_VERS_MAX];
};

/* The device ID of d as it is now. */
void layout_devid_make(const struct layout_device *d, uint8_t out[LAYOUT_DEVID_SIZE]);
/* The data server a device ID names, whatever its address list (0: not
 * one of ours). */
uint32_t layout_devid_ds(const uint8_t id[LAYOUT_DEVID_SIZE]);
/* Does the ID name a tightly coupled device? */
bool layout_devid_tight(const uint8_t id[LAYOUT_DEVID_SIZE]);

#endif
