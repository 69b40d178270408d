/* SPDX-License-Identifier: MIT */
/* Capabilities (ctl/cap.h).  Pure functions: no locks, no I/O. */
#include "config.h"

#include <string.h>

#include "ctl/cap.h"

void ctl_cap_make(const struct siphash_key *k, const struct ds_objid *obj, uint32_t uid,
		  uint32_t gid, enum ctl_cap_iomode iomode, uint8_t other[12])
{
	uint8_t b[36], h[16];
	memcpy(b, obj->key, 16);
	for (int i = 0; i < 8; i++)
		b[16 + i] = (uint8_t)(obj->gen >> (8 * i));
	for (int i = 0; i < 4; i++) {
		b[24 + i] = (uint8_t)(uid >> (8 * i));
		b[28 + i] = (uint8_t)(gid >> (8 * i));
		b[32 + i] = (uint8_t)((uint32_t)iomode >> (8 * i));
	}
	siphash24_128(k, b, sizeof(b), h);
	memcpy(other, h, 12);
}

bool ctl_cap_check(const struct siphash_key *k, const struct ds_objid *obj, uint32_t uid,
		   uint32_t gid, enum ctl_cap_iomode iomode, const uint8_t other[12])
{
	uint8_t m[12];
	ctl_cap_make(k, obj, uid, gid, CTL_CAP_RW, m);
	bool ok = mac_equal(m, other, 12);
	if (iomode == CTL_CAP_READ) {
		ctl_cap_make(k, obj, uid, gid, CTL_CAP_READ, m);
		ok |= mac_equal(m, other, 12);
	}
	return ok;
}
