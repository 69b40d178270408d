/* SPDX-License-Identifier: MIT */
/* MDS filehandles: layout and rules in mds/fh.h. */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

#include "mds/fh.h"
#include "mds/mds_impl.h"

#define FH_VERSION 1
#define FH_TYPE_INODE 2

static uint64_t fh_mac(const struct braid_mds *mds, const uint8_t *b)
{
	return siphash24(&mds->key.fh, b, 32);
}

void mds_fh_make(const struct braid_mds *mds, const struct mds_fh *fh, uint8_t out[MDS_FH_SIZE])
{
	memset(out, 0, MDS_FH_SIZE);
	out[0] = FH_VERSION;
	out[1] = FH_TYPE_INODE;
	uint32_t kid = htobe32(mds->key.id), xid = htobe32(fh->export_id);
	uint64_t ino = htobe64(fh->ino), gen = htobe64(fh->gen);
	memcpy(out + 4, &kid, 4);
	memcpy(out + 8, &xid, 4);
	memcpy(out + 16, &ino, 8);
	memcpy(out + 24, &gen, 8);
	uint64_t mac = htole64(fh_mac(mds, out));
	memcpy(out + 32, &mac, 8);
}

int mds_fh_parse(const struct braid_mds *mds, const void *p, uint32_t len, struct mds_fh *fh)
{
	const uint8_t *b = p;
	if (len != MDS_FH_SIZE || b[0] != FH_VERSION || b[1] != FH_TYPE_INODE || b[2] || b[3])
		return -EBADMSG;
	uint32_t kid, xid, zero;
	memcpy(&kid, b + 4, 4);
	memcpy(&zero, b + 12, 4);
	if (be32toh(kid) != mds->key.id || zero)
		return -EBADMSG;
	uint64_t mac = htole64(fh_mac(mds, b));
	if (!mac_equal(&mac, b + 32, 8))
		return -EBADMSG;
	uint64_t ino, gen;
	memcpy(&xid, b + 8, 4);
	memcpy(&ino, b + 16, 8);
	memcpy(&gen, b + 24, 8);
	fh->export_id = be32toh(xid);
	fh->ino = be64toh(ino);
	fh->gen = be64toh(gen);
	return 0;
}
