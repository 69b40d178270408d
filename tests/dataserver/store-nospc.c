/* SPDX-License-Identifier: MIT */
/*
 * A full filesystem under the object store (issue 21): a write that does
 * not fit fails with -ENOSPC before it touches a byte, so every byte
 * written before still reads back and passes its CRC; an overwrite of
 * space already held still succeeds; the store says it is full until
 * space is freed, and new writes succeed once it is.
 *
 * The store sits on a 2 MiB tmpfs mounted in a mount namespace of our
 * own (as root, or in a user namespace where the kernel allows one), so
 * nothing outside the test sees it and it goes when the test exits.
 */
#include "config.h"

#include <sys/mount.h>
#include <sys/stat.h>

#include "tests/dataserver/store-test.h"

#define FS_SIZE (2u << 20)
#define A_LEN	(256u << 10)

static void private_tmpfs(const char *dir)
{
	st_private_mounts();
	char opt[32];
	snprintf(opt, sizeof(opt), "size=%u", FS_SIZE);
	if (mount("tmpfs", dir, "tmpfs", 0, opt))
		SKIP("mount tmpfs on %s: %s\n", dir, strerror(errno));
}

/* Read [off, off + len) of id and check it is the pattern seed. */
static void check_pattern(struct ds_store *st, const struct ds_objid *id, uint64_t off,
			  size_t len, unsigned seed)
{
	uint8_t *got = malloc(len), *want = malloc(len);
	CHECK(got && want);
	bool eof;
	CHECK_EQ(ds_store_read(st, id, 0, 0, off, len, got, &eof), (ssize_t)len);
	st_fill(want, off, len, seed);
	CHECK(memcmp(got, want, len) == 0);
	free(got);
	free(want);
}

int main(void)
{
	const char *dir = st_subdir("small");
	private_tmpfs(dir);
	struct ds_store *st = st_open(dir, false, DS_STORE_IO_URING);
	uint64_t total, avail;
	CHECK_EQ(ds_store_space(st, &total, &avail), 0);
	CHECK(total <= FS_SIZE);
	CHECK(!ds_store_full(st, avail));

	/* A: the bytes that must survive */
	struct ds_objid a = st_id(1, 1), b = st_id(2, 1);
	CHECK_EQ(ds_store_create(st, &a, 0, 0, 0600), 0);
	uint8_t *buf = malloc(1u << 20);
	CHECK(buf);
	st_fill(buf, 0, A_LEN, 1);
	CHECK_EQ(st_write(st, &a, 0, 0, 0, buf, A_LEN, DS_FILE_SYNC), (ssize_t)A_LEN);

	/* B fills the filesystem: every write fits whole or fails whole */
	CHECK_EQ(ds_store_create(st, &b, 0, 0, 0600), 0);
	uint64_t boff = 0;
	size_t chunk = 256u << 10;
	while (chunk >= 4096) {
		st_fill(buf, boff, chunk, 2);
		ssize_t n = st_write(st, &b, 0, 0, boff, buf, chunk, DS_UNSTABLE);
		if (n == -ENOSPC) {
			chunk /= 2;
			continue;
		}
		CHECK_EQ(n, (ssize_t)chunk);
		boff += chunk;
	}
	CHECK(boff > 0 && boff < FS_SIZE);
	CHECK_EQ(ds_store_commit(st, &b, 0, 0), 0);
	CHECK_EQ(ds_store_space(st, NULL, &avail), 0);
	CHECK(ds_store_full(st, avail));
	struct ds_store_counters c;
	ds_store_counters(st, &c);
	CHECK(c.nospc > 0);
	printf("full after %llu bytes of B, %llu bytes free\n", (unsigned long long)boff,
	       (unsigned long long)avail);

	/* a write over A's last 64 KiB and past its end: refused whole, A
	 * (old bytes and their CRCs) reads as before */
	st_fill(buf, A_LEN - (64u << 10), 1u << 20, 3);
	CHECK_EQ(st_write(st, &a, 0, 0, A_LEN - (64u << 10), buf, 1u << 20, DS_UNSTABLE),
		 -ENOSPC);
	/* unaligned, with partial edge blocks */
	st_fill(buf, 1000, 600000, 3);
	CHECK_EQ(st_write(st, &a, 0, 0, 1000, buf, 600000, DS_FILE_SYNC), -ENOSPC);
	struct ds_obj_stat os;
	CHECK_EQ(ds_store_stat(st, &a, &os), 0);
	CHECK_EQ(os.size, A_LEN);
	check_pattern(st, &a, 0, A_LEN, 1);
	check_pattern(st, &b, 0, boff, 2);

	/* an overwrite of space A already holds needs none: it succeeds */
	st_fill(buf, 4096 + 100, 8192, 4);
	CHECK_EQ(st_write(st, &a, 0, 0, 4096 + 100, buf, 8192, DS_FILE_SYNC), 8192);
	check_pattern(st, &a, 4096 + 100, 8192, 4);
	check_pattern(st, &a, 0, 4096 + 100, 1);
	check_pattern(st, &a, 4096 + 100 + 8192, A_LEN - (4096 + 100 + 8192), 1);

	/* space freed: no longer full, and A grows */
	CHECK_EQ(ds_store_remove(st, &b), 0);
	CHECK_EQ(ds_store_space(st, NULL, &avail), 0);
	CHECK(!ds_store_full(st, avail));
	st_fill(buf, A_LEN, 1u << 20, 5);
	CHECK_EQ(st_write(st, &a, 0, 0, A_LEN, buf, 1u << 20, DS_FILE_SYNC), (ssize_t)(1u << 20));
	check_pattern(st, &a, A_LEN, 1u << 20, 5);
	check_pattern(st, &a, 0, 4096 + 100, 1);

	/* a truncation frees space too */
	CHECK_EQ(ds_store_create(st, &b, 0, 0, 0600), 0);
	boff = 0;
	for (chunk = 256u << 10; chunk >= 4096;) {
		st_fill(buf, boff, chunk, 6);
		ssize_t n = st_write(st, &b, 0, 0, boff, buf, chunk, DS_UNSTABLE);
		if (n == -ENOSPC) {
			chunk /= 2;
			continue;
		}
		CHECK_EQ(n, (ssize_t)chunk);
		boff += chunk;
	}
	CHECK_EQ(ds_store_space(st, NULL, &avail), 0);
	CHECK(ds_store_full(st, avail));
	CHECK_EQ(ds_store_truncate(st, &b, 0), 0);
	CHECK_EQ(ds_store_space(st, NULL, &avail), 0);
	CHECK(!ds_store_full(st, avail));
	st_fill(buf, 0, 64u << 10, 7);
	CHECK_EQ(st_write(st, &b, 0, 0, 0, buf, 64u << 10, DS_FILE_SYNC), (ssize_t)(64u << 10));
	check_pattern(st, &b, 0, 64u << 10, 7);

	free(buf);
	CHECK_EQ(ds_store_close(st), 0);
	umount2(dir, MNT_DETACH);
	printf("ok\n");
	return 0;
}
