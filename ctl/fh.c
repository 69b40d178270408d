/* SPDX-License-Identifier: MIT */
#include "ctl/fh.h"

#include <errno.h>
#include <string.h>

#include "nfsd/xdr.h"

#define FH_VERSION     1

static void fh_make(const struct braid_key *key, const struct ds_objid *id, uint8_t type,
		    uint8_t fh[DS_FH_SIZE])
{
	memset(fh, 0, DS_FH_SIZE);
	fh[0] = FH_VERSION;
	fh[1] = type;
	xdr_put32(fh + 4, key->id);
	memcpy(fh + 8, id->key, DS_KEY_SIZE);
	xdr_put32(fh + 24, (uint32_t)(id->gen >> 32));
	xdr_put32(fh + 28, (uint32_t)id->gen);
	siphash24_128(&key->fh, fh, 32, fh + 32);
}

void ds_fh_make(const struct braid_key *key, const struct ds_objid *id, uint8_t fh[DS_FH_SIZE])
{
	fh_make(key, id, DS_FH_OBJECT, fh);
}

void ds_fh_make_ec(const struct braid_key *key, const struct ds_objid *id, uint8_t fh[DS_FH_SIZE])
{
	fh_make(key, id, DS_FH_EC, fh);
}

int ds_fh_parse_type(const struct braid_key *key, const void *p, uint32_t len,
		     struct ds_objid *id, int *type)
{
	const uint8_t *fh = p;
	if (len != DS_FH_SIZE || fh[0] != FH_VERSION ||
	    (fh[1] != DS_FH_OBJECT && fh[1] != DS_FH_EC) || fh[2] || fh[3] ||
	    xdr_get32(fh + 4) != key->id)
		return -EBADMSG;
	uint8_t mac[16];
	siphash24_128(&key->fh, fh, 32, mac);
	if (!mac_equal(mac, fh + 32, 16))
		return -EBADMSG;
	memcpy(id->key, fh + 8, DS_KEY_SIZE);
	id->gen = (uint64_t)xdr_get32(fh + 24) << 32 | xdr_get32(fh + 28);
	*type = fh[1];
	return 0;
}

int ds_fh_parse(const struct braid_key *key, const void *p, uint32_t len, struct ds_objid *id)
{
	int type;
	int rc = ds_fh_parse_type(key, p, len, id, &type);
	return rc ? rc : type == DS_FH_OBJECT ? 0 : -EBADMSG;
}
