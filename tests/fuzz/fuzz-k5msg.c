/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the RFC 4121 tokens a peer sends (nfsd/k5msg.c): MIC
 * tokens to k5msg_verify_mic and Wrap tokens to k5msg_unwrap, on contexts
 * of known keys for each AES enctype, with and without an acceptor
 * subkey.  Input: a selector byte (bits 0-1 the enctype, bit 2 the
 * acceptor subkey, bit 3 MIC or Wrap), then for a MIC two bytes of data
 * length, the data and the token; for a Wrap the token.  The seeds are
 * valid tokens from the peer's side, which the fuzzer then changes.
 * Invariants: no crash, no leak, no read or write outside the input; an
 * accepted Wrap token's data lies inside the token.
 */
#include <stdlib.h>
#include <string.h>

#include "nfsd/k5msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t braid_fuzz_seed(uint64_t seed, uint8_t *buf, size_t cap);

static const unsigned enctypes[4] = {17, 18, 19, 20};

/* [enctype][asub][0 us (acceptor), 1 the peer (initiator)] */
static struct k5msg *ctx(unsigned e, unsigned asub, int peer)
{
	static struct k5msg *k[4][2][2];
	if (!k[e][asub][peer]) {
		uint8_t key[32], sub[32];
		for (int i = 0; i < 32; i++) {
			key[i] = (uint8_t)(i * 29 + 3);
			sub[i] = (uint8_t)(i * 17 + 11);
		}
		size_t kl = enctypes[e] == 17 || enctypes[e] == 19 ? 16 : 32;
		k[e][asub][peer] = k5msg_from_keys(enctypes[e], peer, key, kl, asub ? sub : NULL,
						   kl, 77);
		if (!k[e][asub][peer])
			abort();
	}
	return k[e][asub][peer];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned sel = data[0], e = sel & 3, asub = sel >> 2 & 1;
	struct k5msg *k = ctx(e, asub, 0);
	data++, size--;
	if (sel & 8) {
		if (size < 2)
			return 0;
		size_t dl = (size_t)data[0] << 8 | data[1];
		if (dl > size - 2)
			return 0;
		/* copies, so reads past them are caught */
		uint8_t *d = malloc(dl ? dl : 1), *t = malloc(size - 2 - dl ? size - 2 - dl : 1);
		if (!d || !t)
			abort();
		memcpy(d, data + 2, dl);
		memcpy(t, data + 2 + dl, size - 2 - dl);
		struct iovec iov = {d, dl};
		k5msg_verify_mic(k, &iov, 1, t, size - 2 - dl);
		free(d);
		free(t);
		return 0;
	}
	uint8_t *t = malloc(size ? size : 1), *out = NULL;
	size_t ol = 0;
	if (!t)
		abort();
	memcpy(t, data, size);
	if (k5msg_unwrap(k, t, size, &out, &ol) == GSS_S_COMPLETE &&
	    (out < t || out + ol > t + size))
		abort();
	free(t);
	return 0;
}

/* Valid tokens from the peer: a MIC or a Wrap of 0 to 200 bytes. */
size_t braid_fuzz_seed(uint64_t seed, uint8_t *buf, size_t cap)
{
	unsigned sel = (unsigned)(seed & 15), e = sel & 3, asub = sel >> 2 & 1;
	size_t dl = (size_t)(seed >> 4) % 201;
	struct k5msg *p = ctx(e, asub, 1);
	uint8_t msg[200];
	for (size_t i = 0; i < dl; i++)
		msg[i] = (uint8_t)(seed * 31 + i);
	if (sel & 8) {
		size_t ml;
		k5msg_mic_len(p, &ml);
		if (cap < 3 + dl + ml)
			return 0;
		buf[0] = (uint8_t)sel;
		buf[1] = (uint8_t)(dl >> 8);
		buf[2] = (uint8_t)dl;
		memcpy(buf + 3, msg, dl);
		struct iovec iov = {msg, dl};
		if (k5msg_get_mic(p, &iov, 1, buf + 3 + dl, ml) != GSS_S_COMPLETE)
			abort();
		return 3 + dl + ml;
	}
	size_t hl, tl;
	k5msg_wrap_len(p, dl, &hl, &tl);
	if (cap < 1 + hl + dl + tl)
		return 0;
	buf[0] = (uint8_t)sel;
	memcpy(buf + 1 + hl, msg, dl);
	if (k5msg_wrap(p, buf + 1, buf + 1 + hl, dl, buf + 1 + hl + dl) != GSS_S_COMPLETE)
		abort();
	return 1 + hl + dl + tl;
}
