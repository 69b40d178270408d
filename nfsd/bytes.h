/* SPDX-License-Identifier: MIT */
/*
 * Byte order of integers in on-disk and on-wire records that are not XDR
 * (XDR's big-endian 32-bit words: xdr_get32/xdr_put32 in nfsd/xdr.h), and
 * the one 64-bit mixing function hash tables and on-disk hashes use.
 * Unaligned pointers are fine.
 */
#ifndef BRAID_NFSD_BYTES_H
#define BRAID_NFSD_BYTES_H

#include <stdint.h>

static inline void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline uint16_t get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

static inline uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

static inline uint64_t get_le64(const uint8_t *p)
{
	return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

static inline void put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static inline uint64_t get_be64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/*
 * MurmurHash3's 64-bit finalizer: every input bit affects every output bit.
 * Never change it: braid-ds's on-disk layout (which directory holds an
 * object, the order of LIST cookies) depends on it.
 */
static inline uint64_t nfsd_mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

#endif
