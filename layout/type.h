/* SPDX-License-Identifier: MIT */
/*
 * Layout types (RFC 8881 §3.3.13 layouttype4): each is a small const ops
 * table, in the shape of Linux nfsd's struct nfsd4_layout_ops, that turns
 * plain C structs into the opaque bodies the NFSv4.1 operations carry and
 * back.  The metadata server decides what a layout says (which data
 * servers, which mirrors first, which credentials: layout/policy.h,
 * layout/fence.h) and fills the structs below; the type's generated XDR
 * encodes them.  Layout state (stateids, recalls, revocation) is the
 * metadata server's, beside its other client state.
 *
 * Types: LAYOUT4_FLEX_FILES (layout_ff_ops, layout/flexfiles.h).  A second
 * type, or another version of one, is another table in layout_type_find's
 * list.
 *
 * Errors: 0 or -errno: -ENOMEM when the arena is spent, -EBADMSG for a
 * body that does not decode.
 */
#ifndef BRAID_LAYOUT_TYPE_H
#define BRAID_LAYOUT_TYPE_H

#include <stdint.h>

#include "layout/devid.h"
#include "nfsd/xdr.h"

/* The largest body an encoder produces (a reply's size bound). */
#define LAYOUT_BODY_MAX 4096

/* A stateid (RFC 8881 §8.2); all zeros is the anonymous one. */
struct layout_stateid {
	uint32_t seqid;
	uint8_t other[12];
};

/* One data server of a mirror, and what a client sends it. */
struct layout_dserver {
	uint8_t devid[LAYOUT_DEVID_SIZE];
	uint32_t efficiency; /* higher is better: clients read from the highest */
	struct layout_stateid stateid;
	/* the object's handle, the same for every version the device offers
	 * (nversions of them: the device's usable versions) */
	const uint8_t *fh;
	uint32_t fhlen;
	unsigned nversions;
	uint32_t uid, gid; /* AUTH_SYS credentials when loosely coupled; tightly
			    * coupled, unused by clients (nobody) */
};

/* A copy of the segment's data, striped over nds data servers. */
struct layout_mirror {
	struct layout_dserver *ds;
	unsigned nds;
};

/* Layout flags (struct layout_segment.flags). */
#define LAYOUT_FLAG_NO_IO_THRU_MDS 0x1 /* clients must not fall back to MDS I/O */

/* What one layout4 of a LAYOUTGET says: its mirrors, most efficient first. */
struct layout_segment {
	uint64_t stripe_unit; /* bytes; 0 when mirrors are not striped */
	struct layout_mirror *mirrors;
	unsigned nmirrors;
	uint32_t flags; /* LAYOUT_FLAG_* */
};

/* A device error a client reports (RFC 7862 §15.6 device_error4). */
struct layout_ioerr {
	uint8_t devid[LAYOUT_DEVID_SIZE];
	uint32_t status; /* nfsstat4 */
	uint32_t opnum;	 /* nfs_opnum4 */
};

/* I/O a client reports on a device (RFC 7862 io_info4, read and write). */
struct layout_iostat {
	uint8_t devid[LAYOUT_DEVID_SIZE];
	uint64_t read_count, read_bytes, write_count, write_bytes;
};

/* A LAYOUTRETURN body's reports, in the order the client gave them. */
struct layout_report {
	struct layout_ioerr *errors;
	unsigned nerrors;
	struct layout_iostat *stats;
	unsigned nstats;
};

struct layout_type_ops {
	uint32_t type; /* layouttype4 */
	const char *name;
	/* device notifications granted (bits 1 << notify_deviceid_type4) */
	uint32_t notify_types;
	/* Versions of d a layout of this type can name (0: none, the device
	 * is left out of layouts and device lists). */
	unsigned (*device_versions)(const struct layout_device *d);
	/* loc_body of a layout_content4 (LAYOUTGET), in arena memory. */
	int (*encode_layout)(const struct layout_segment *seg, struct xdr_arena *arena,
			     xdr_opaque *out);
	/* da_addr_body of d's device_addr4 (GETDEVICEINFO), in arena memory. */
	int (*encode_devaddr)(const struct layout_device *d, struct xdr_arena *arena,
			      xdr_opaque *out);
	/* lrf_body of a layoutreturn_file4 (LAYOUTRETURN), not empty: the
	 * reports it carries, in arena memory. */
	int (*decode_return)(xdr_opaque body, struct xdr_arena *arena, struct layout_report *out);
	/* lou_body of a layoutupdate4 (LAYOUTSTATS), not empty: 0 when it
	 * decodes. */
	int (*decode_update)(xdr_opaque body, struct xdr_arena *arena);
};

/* The ops of a layout type, or NULL for one we do not serve. */
const struct layout_type_ops *layout_type_find(uint32_t type);

#endif
