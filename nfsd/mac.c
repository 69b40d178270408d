/* SPDX-License-Identifier: MIT */
#include "nfsd/mac.h"
#include "nfsd/bytes.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

static inline uint64_t rotl64(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

static inline void sipround(uint64_t v[4])
{
	v[0] += v[1];
	v[1] = rotl64(v[1], 13);
	v[1] ^= v[0];
	v[0] = rotl64(v[0], 32);
	v[2] += v[3];
	v[3] = rotl64(v[3], 16);
	v[3] ^= v[2];
	v[0] += v[3];
	v[3] = rotl64(v[3], 21);
	v[3] ^= v[0];
	v[2] += v[1];
	v[1] = rotl64(v[1], 17);
	v[1] ^= v[2];
	v[2] = rotl64(v[2], 32);
}

/* Initialise and absorb the message (c = 2 compression rounds). */
static void sip_absorb(uint64_t v[4], const struct siphash_key *key, const void *data, size_t len,
		       bool wide)
{
	v[0] = 0x736f6d6570736575ULL ^ key->k[0];
	v[1] = 0x646f72616e646f6dULL ^ key->k[1];
	v[2] = 0x6c7967656e657261ULL ^ key->k[0];
	v[3] = 0x7465646279746573ULL ^ key->k[1];
	if (wide)
		v[1] ^= 0xee;
	const uint8_t *p = data;
	size_t nblocks = len / 8;
	for (size_t i = 0; i < nblocks; i++, p += 8) {
		uint64_t m = get_le64(p);
		v[3] ^= m;
		sipround(v);
		sipround(v);
		v[0] ^= m;
	}
	uint64_t b = (uint64_t)len << 56;
	for (size_t i = 0; i < (len & 7); i++)
		b |= (uint64_t)p[i] << (8 * i);
	v[3] ^= b;
	sipround(v);
	sipround(v);
	v[0] ^= b;
}

uint64_t siphash24(const struct siphash_key *key, const void *data, size_t len)
{
	uint64_t v[4];
	sip_absorb(v, key, data, len, false);
	v[2] ^= 0xff;
	for (int i = 0; i < 4; i++)
		sipround(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

void siphash24_128(const struct siphash_key *key, const void *data, size_t len, uint8_t out[16])
{
	uint64_t v[4];
	sip_absorb(v, key, data, len, true);
	v[2] ^= 0xee;
	for (int i = 0; i < 4; i++)
		sipround(v);
	put_le64(out, v[0] ^ v[1] ^ v[2] ^ v[3]);
	v[1] ^= 0xdd;
	for (int i = 0; i < 4; i++)
		sipround(v);
	put_le64(out + 8, v[0] ^ v[1] ^ v[2] ^ v[3]);
}

void siphash_key_from_bytes(struct siphash_key *key, const uint8_t b[16])
{
	key->k[0] = get_le64(b);
	key->k[1] = get_le64(b + 8);
}

bool mac_equal(const void *a, const void *b, size_t n)
{
	const volatile uint8_t *x = a, *y = b;
	uint8_t d = 0;
	for (size_t i = 0; i < n; i++)
		d |= x[i] ^ y[i];
	return d == 0;
}

void braid_key_from_bytes(struct braid_key *key, const uint8_t raw[BRAID_KEY_BYTES])
{
	siphash_key_from_bytes(&key->fh, raw);
	siphash_key_from_bytes(&key->ctl, raw + 16);
	static const char label[] = "braid fence credentials v1";
	uint8_t fk[16];
	siphash24_128(&key->ctl, label, sizeof(label) - 1, fk);
	siphash_key_from_bytes(&key->fence, fk);
	static const char cap_label[] = "braid layout capabilities v1";
	siphash24_128(&key->ctl, cap_label, sizeof(cap_label) - 1, fk);
	siphash_key_from_bytes(&key->cap, fk);
	/* A public name for the key: a hash of it under a fixed key, so two
	 * daemons with different key files tell "wrong key" from "forged". */
	static const struct siphash_key idk = { { 0x6272616964206b65ULL, 0x79206964656e7469ULL } };
	key->id = (uint32_t)siphash24(&idk, raw, BRAID_KEY_BYTES);
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int braid_key_load(const char *path, struct braid_key *key, char *msg, size_t msglen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		snprintf(msg, msglen, "%s: %s", path, strerror(e));
		return -e;
	}
	struct stat sb;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		snprintf(msg, msglen, "%s: not a regular file", path);
		close(fd);
		return -EINVAL;
	}
	if (sb.st_mode & 077) {
		snprintf(msg, msglen,
			 "%s: readable by group or others (mode %04o); the cluster key must be "
			 "private: chmod 600 %s",
			 path, (unsigned)(sb.st_mode & 07777), path);
		close(fd);
		return -EPERM;
	}
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0) {
		int e = errno;
		snprintf(msg, msglen, "%s: %s", path, strerror(e));
		return -e;
	}
	buf[n] = 0;
	uint8_t raw[BRAID_KEY_BYTES];
	unsigned nd = 0;
	bool comment = false;
	for (ssize_t i = 0; i < n; i++) {
		int c = (unsigned char)buf[i];
		if (comment) {
			comment = c != '\n';
			continue;
		}
		if (c == '#') {
			comment = true;
			continue;
		}
		if (isspace(c))
			continue;
		int h = hexval(c);
		if (h < 0 || nd >= 2 * BRAID_KEY_BYTES) {
			snprintf(msg, msglen, "%s: expected %d hex digits", path,
				 2 * BRAID_KEY_BYTES);
			return -EINVAL;
		}
		if (nd % 2 == 0)
			raw[nd / 2] = (uint8_t)(h << 4);
		else
			raw[nd / 2] |= (uint8_t)h;
		nd++;
	}
	if (nd != 2 * BRAID_KEY_BYTES) {
		snprintf(msg, msglen, "%s: expected %d hex digits, found %u", path,
			 2 * BRAID_KEY_BYTES, nd);
		return -EINVAL;
	}
	braid_key_from_bytes(key, raw);
	memset(raw, 0, sizeof(raw));
	return 0;
}

int braid_key_create(const char *path)
{
	uint8_t raw[BRAID_KEY_BYTES];
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return -EIO;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	char hex[2 * BRAID_KEY_BYTES + 64];
	int len = snprintf(hex, sizeof(hex), "# braid cluster key: keep private\n");
	for (int i = 0; i < BRAID_KEY_BYTES; i++)
		len += snprintf(hex + len, sizeof(hex) - (size_t)len, "%02x", raw[i]);
	hex[len++] = '\n';
	memset(raw, 0, sizeof(raw));
	int rc = write(fd, hex, (size_t)len) == len ? 0 : -EIO;
	if (!rc && fsync(fd) < 0)
		rc = -errno;
	close(fd);
	if (rc)
		unlink(path);
	return rc;
}
