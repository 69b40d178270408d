/* SPDX-License-Identifier: MIT */
#include "ctl/fh.h"

#include <errno.h>
#include <string.h>

#include "nfsd/xdr.h"

#define FH_VERSION     1
#define FH_TYPE_OBJECT 1

void ds_fh_make(const struct braid_key *key, const struct ds_objid *id, uint8_t fh[DS_FH_SIZE])
{
	memset(fh, 0, DS_FH_SIZE);
	fh[0] = FH_VERSION;
	fh[1] = FH_TYPE_OBJECT;
	xdr_put32(fh + 4, key->id);
	memcpy(fh + 8, id->key, DS_KEY_SIZE);
	xdr_put32(fh + 24, (uint32_t)(id->gen >> 32));
	xdr_put32(fh + 28, (uint32_t)id->gen);
	siphash24_128(&key->fh, fh, 32, fh + 32);
}

int ds_fh_parse(const struct braid_key *key, const void *p, uint32_t len, struct ds_objid *id)
{
	const uint8_t *fh = p;
	if (len != DS_FH_SIZE || fh[0] != FH_VERSION || fh[1] != FH_TYPE_OBJECT || fh[2] || fh[3] ||
	    xdr_get32(fh + 4) != key->id)
		return -EBADMSG;
	uint8_t mac[16];
	siphash24_128(&key->fh, fh, 32, mac);
	if (!mac_equal(mac, fh + 32, 16))
		return -EBADMSG;
	memcpy(id->key, fh + 8, DS_KEY_SIZE);
	id->gen = (uint64_t)xdr_get32(fh + 24) << 32 | xdr_get32(fh + 28);
	return 0;
}
