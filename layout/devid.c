/* SPDX-License-Identifier: MIT */
/* Device IDs (layout/devid.h).  Pure functions: no locks, no I/O. */
#include "config.h"

#include <string.h>

#include "layout/devid.h"
#include "nfsd/mac.h"
#include "nfsd/xdr.h"

/* the last 4 bytes of our device IDs */
#define LAYOUT_DEVID_MAGIC	 "bRd\1"
#define LAYOUT_DEVID_MAGIC_TIGHT "bRd\2"

void layout_devid_make(const struct layout_device *d, uint8_t out[LAYOUT_DEVID_SIZE])
{
	uint8_t b[16 + 4 + LAYOUT_DEV_ADDRS_MAX * 100 + 4 + LAYOUT_DEV_VERS_MAX * 16];
	size_t n = 0;
	memcpy(b, d->uuid, 16);
	n = 16;
	xdr_put32(b + n, d->naddrs);
	n += 4;
	for (unsigned k = 0; k < d->naddrs && k < LAYOUT_DEV_ADDRS_MAX; k++) {
		size_t l1 = strnlen(d->addrs[k].netid, sizeof(d->addrs[k].netid));
		size_t l2 = strnlen(d->addrs[k].uaddr, sizeof(d->addrs[k].uaddr));
		b[n++] = (uint8_t)l1;
		memcpy(b + n, d->addrs[k].netid, l1);
		n += l1;
		b[n++] = (uint8_t)l2;
		memcpy(b + n, d->addrs[k].uaddr, l2);
		n += l2;
	}
	xdr_put32(b + n, d->nversions);
	n += 4;
	for (unsigned k = 0; k < d->nversions && k < LAYOUT_DEV_VERS_MAX; k++) {
		xdr_put32(b + n, d->versions[k].version);
		xdr_put32(b + n + 4, d->versions[k].minorversion);
		xdr_put32(b + n + 8, d->versions[k].rsize);
		/* the tightly coupled device names only versions with gss */
		bool g = d->tight && d->versions[k].gss;
		xdr_put32(b + n + 12, d->versions[k].wsize | (g ? 1u << 31 : 0));
		n += 16;
	}
	/* fixed, not secret: an ID must survive restarts of the MDS */
	static const struct siphash_key devkey = {{0x6272616964646576ULL, 0x6963652d69642d31ULL}};
	uint64_t h = siphash24(&devkey, b, n);
	xdr_put32(out, d->ds_id);
	for (int k = 0; k < 8; k++)
		out[4 + k] = (uint8_t)(h >> (56 - 8 * k));
	memcpy(out + 12, d->tight ? LAYOUT_DEVID_MAGIC_TIGHT : LAYOUT_DEVID_MAGIC, 4);
}

uint32_t layout_devid_ds(const uint8_t id[LAYOUT_DEVID_SIZE])
{
	bool ours = !memcmp(id + 12, LAYOUT_DEVID_MAGIC, 4) ||
		    !memcmp(id + 12, LAYOUT_DEVID_MAGIC_TIGHT, 4);
	return ours ? xdr_get32(id) : 0;
}

bool layout_devid_tight(const uint8_t id[LAYOUT_DEVID_SIZE])
{
	return !memcmp(id + 12, LAYOUT_DEVID_MAGIC_TIGHT, 4);
}
