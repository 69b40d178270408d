/* SPDX-License-Identifier: MIT */
/*
 * SipHash-2-4 against the reference test vectors (Aumasson and Bernstein,
 * vectors.h: key 00..0f, message 00..len-1), 64- and 128-bit outputs, and
 * the cluster key file: format checks and the refusal of a readable file.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nfsd/mac.h"
#include "tests/check.h"

static const uint8_t v128_0[16] = { 0xa3, 0x81, 0x7f, 0x04, 0xba, 0x25, 0xa8, 0xe6,
				    0x6d, 0xf6, 0x72, 0x14, 0xc7, 0x55, 0x02, 0x93 };
static const uint8_t v128_1[16] = { 0xda, 0x87, 0xc1, 0xd8, 0x6b, 0x99, 0xaf, 0x44,
				    0x34, 0x76, 0x59, 0x11, 0x9b, 0x22, 0xfc, 0x45 };

static void write_key(const char *path, const char *text, mode_t mode)
{
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, mode);
	CHECK(fd >= 0);
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
	CHECK(chmod(path, mode) == 0);
}

int main(void)
{
	uint8_t kb[16], msg[64], out[16];
	for (int i = 0; i < 16; i++)
		kb[i] = (uint8_t)i;
	for (int i = 0; i < 64; i++)
		msg[i] = (uint8_t)i;
	struct siphash_key k;
	siphash_key_from_bytes(&k, kb);
	CHECK(siphash24(&k, msg, 0) == 0x726fdb47dd0e0e31ULL);
	CHECK(siphash24(&k, msg, 1) == 0x74f839c593dc67fdULL);
	CHECK(siphash24(&k, msg, 63) == 0x958a324ceb064572ULL);
	siphash24_128(&k, msg, 0, out);
	CHECK(memcmp(out, v128_0, 16) == 0);
	siphash24_128(&k, msg, 1, out);
	CHECK(memcmp(out, v128_1, 16) == 0);
	CHECK(mac_equal(v128_0, v128_0, 16));
	CHECK(!mac_equal(v128_0, v128_1, 16));

	char dir[] = "/tmp/braid-mac-XXXXXX", path[64], msgbuf[256];
	CHECK(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/k", dir);
	struct braid_key a, b;
	CHECK(braid_key_create(path) == 0);
	CHECK(braid_key_create(path) == -EEXIST);
	CHECK(braid_key_load(path, &a, msgbuf, sizeof(msgbuf)) == 0);
	struct stat sb;
	CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600);
	/* two keys differ in every part */
	unlink(path);
	CHECK(braid_key_create(path) == 0);
	CHECK(braid_key_load(path, &b, msgbuf, sizeof(msgbuf)) == 0);
	CHECK(a.id != b.id && memcmp(&a.fh, &b.fh, sizeof(a.fh)) && memcmp(&a.ctl, &b.ctl, sizeof(a.ctl)));
	/* comments and spaces are fine; the halves are independent keys */
	write_key(path,
		  "# comment\n000102030405060708090a0b0c0d0e0f\n 10 11 12 13 14 15 16 17 18 19 1a 1b 1c "
		  "1d 1e 1f\n",
		  0600);
	CHECK(braid_key_load(path, &a, msgbuf, sizeof(msgbuf)) == 0);
	CHECK(a.fh.k[0] == k.k[0] && a.fh.k[1] == k.k[1]);
	CHECK(a.ctl.k[0] != a.fh.k[0]);
	write_key(path, "00112233\n", 0600);
	CHECK(braid_key_load(path, &a, msgbuf, sizeof(msgbuf)) == -EINVAL);
	CHECK(strstr(msgbuf, "found 8"));
	write_key(path, "zz0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n", 0600);
	CHECK(braid_key_load(path, &a, msgbuf, sizeof(msgbuf)) == -EINVAL);
	write_key(path, "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n", 0640);
	CHECK(braid_key_load(path, &a, msgbuf, sizeof(msgbuf)) == -EPERM);
	CHECK(strstr(msgbuf, "chmod 600"));
	unlink(path);
	CHECK(braid_key_load(path, &a, msgbuf, sizeof(msgbuf)) == -ENOENT);
	rmdir(dir);
	printf("ok\n");
	return 0;
}
