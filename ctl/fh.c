/* SPDX-License-Identifier: MIT */
#include "ctl/fh.h"

#include <errno.h>
#include <string.h>

#include "nfsd/xdr.h"

#define FH_VERSION     1

/* A handle of type with its body (32 bytes, 40 with the inode for
 * DS_FH_EC) and the MAC over it. */
static void fh_make(const struct braid_key *key, const struct ds_objid *id, uint8_t type,
		    uint64_t ino, uint8_t *fh)
{
	uint32_t body = type == DS_FH_EC ? 40 : 32;
	memset(fh, 0, body + 16);
	fh[0] = FH_VERSION;
	fh[1] = type;
	xdr_put32(fh + 4, key->id);
	memcpy(fh + 8, id->key, DS_KEY_SIZE);
	xdr_put32(fh + 24, (uint32_t)(id->gen >> 32));
	xdr_put32(fh + 28, (uint32_t)id->gen);
	if (type == DS_FH_EC) {
		xdr_put32(fh + 32, (uint32_t)(ino >> 32));
		xdr_put32(fh + 36, (uint32_t)ino);
	}
	siphash24_128(&key->fh, fh, body, fh + body);
}

void ds_fh_make(const struct braid_key *key, const struct ds_objid *id, uint8_t fh[DS_FH_SIZE])
{
	fh_make(key, id, DS_FH_OBJECT, 0, fh);
}

void ds_fh_make_ec(const struct braid_key *key, const struct ds_objid *id, uint64_t ino,
		   uint8_t fh[DS_FH_EC_SIZE])
{
	fh_make(key, id, DS_FH_EC, ino, fh);
}

int ds_fh_parse_type(const struct braid_key *key, const void *p, uint32_t len,
		     struct ds_objid *id, int *type, uint64_t *ino)
{
	const uint8_t *fh = p;
	if (len < 2 || fh[0] != FH_VERSION)
		return -EBADMSG;
	uint32_t body = fh[1] == DS_FH_OBJECT ? 32 : fh[1] == DS_FH_EC ? 40 : 0;
	if (!body || len != body + 16 || fh[2] || fh[3] || xdr_get32(fh + 4) != key->id)
		return -EBADMSG;
	uint8_t mac[16];
	siphash24_128(&key->fh, fh, body, mac);
	if (!mac_equal(mac, fh + body, 16))
		return -EBADMSG;
	memcpy(id->key, fh + 8, DS_KEY_SIZE);
	id->gen = (uint64_t)xdr_get32(fh + 24) << 32 | xdr_get32(fh + 28);
	*type = fh[1];
	*ino = fh[1] == DS_FH_EC ? (uint64_t)xdr_get32(fh + 32) << 32 | xdr_get32(fh + 36) : 0;
	return 0;
}

int ds_fh_parse(const struct braid_key *key, const void *p, uint32_t len, struct ds_objid *id)
{
	int type;
	uint64_t ino;
	int rc = ds_fh_parse_type(key, p, len, id, &type, &ino);
	return rc ? rc : type == DS_FH_OBJECT ? 0 : -EBADMSG;
}
