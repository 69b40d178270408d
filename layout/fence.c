/* SPDX-License-Identifier: MIT */
/* Fencing credentials (layout/fence.h).  Pure functions: no locks, no I/O. */
#include "config.h"

#include <string.h>

#include "layout/fence.h"
#include "nfsd/mac.h"

void layout_fence_creds(const struct ds_objid *obj, uint32_t epoch, uint32_t *uid, uint32_t *gid)
{
	/* fixed, not secret: clients see the pair in layouts anyway */
	static const struct siphash_key k = {{0x6272616964666e63ULL, 0x652d7569642d6731ULL}};
	uint8_t b[28];
	size_t n = 24;
	memcpy(b, obj->key, 16);
	for (int i = 0; i < 8; i++)
		b[16 + i] = (uint8_t)(obj->gen >> (8 * i));
	if (epoch) { /* epoch 0 keeps the pair files had before fencing existed */
		for (int i = 0; i < 4; i++)
			b[24 + i] = (uint8_t)(epoch >> (8 * i));
		n = 28;
	}
	uint64_t h = siphash24(&k, b, n);
	*uid = 0x40000000u | (uint32_t)(h & 0x3fffffffu);
	*gid = 0x40000000u | (uint32_t)((h >> 32) & 0x3fffffffu);
}
