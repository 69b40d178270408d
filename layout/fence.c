/* SPDX-License-Identifier: MIT */
/* Fencing credentials (layout/fence.h).  Pure functions: no locks, no I/O. */
#include "config.h"

#include <string.h>

#include "layout/fence.h"

void layout_fence_creds(const struct siphash_key *k, const struct ds_objid *obj, uint32_t epoch,
			struct layout_fence *out)
{
	uint8_t b[28], h[16];
	memcpy(b, obj->key, 16);
	for (int i = 0; i < 8; i++)
		b[16 + i] = (uint8_t)(obj->gen >> (8 * i));
	for (int i = 0; i < 4; i++)
		b[24 + i] = (uint8_t)(epoch >> (8 * i));
	siphash24_128(k, b, sizeof(b), h);
	uint32_t w[3];
	for (int i = 0; i < 3; i++)
		w[i] = (uint32_t)h[4 * i] | (uint32_t)h[4 * i + 1] << 8 |
		       (uint32_t)h[4 * i + 2] << 16 | (uint32_t)h[4 * i + 3] << 24;
	out->uid = 0x40000000u | (w[0] & 0x3fffffffu);
	out->gid = 0x40000000u | (w[1] & 0x3fffffffu);
	out->read_uid = 0x40000000u | (w[2] & 0x3fffffffu);
	if (out->read_uid == out->uid)
		out->read_uid ^= 1; /* never the owner */
}
