/* SPDX-License-Identifier: MIT */
/*
 * Object store I/O against a model: writes and reads at unaligned offsets
 * and sizes through several iovecs, sparse holes (pNFS segment striping
 * writes at the file's own offsets), truncate down and up, stat, remove,
 * the NOENT/STALE/EXIST rules of braid_ctl.x, LIST cookies, and the store
 * lock.  Runs in page-cache mode on io_uring and on plain syscalls, and in
 * O_DIRECT mode where the filesystem allows it.
 */
#include "config.h"

#include <sys/stat.h>

#include "tests/dataserver/store-test.h"

#define UID 1000
#define GID 1000
#define MODEL_SIZE (600u << 10)

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(uint64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return n ? rng % n : 0;
}

static void check_read(struct ds_store *st, const struct ds_objid *id, const uint8_t *model,
		       uint64_t size, uint64_t off, size_t len, uint8_t *buf)
{
	bool eof = false;
	ssize_t n = ds_store_read(st, id, UID, GID, off, len, buf, &eof);
	size_t want = off >= size ? 0 : (size - off < len ? (size_t)(size - off) : len);
	if (n != (ssize_t)want)
		fprintf(stderr, "read %llu+%zu: got %zd, want %zu (size %llu)\n",
			(unsigned long long)off, len, n, want, (unsigned long long)size);
	CHECK_EQ(n, want);
	CHECK_EQ(eof, off + want >= size);
	if (want && memcmp(buf, model + off, want)) {
		for (size_t i = 0; i < want; i++)
			if (buf[i] != model[off + i]) {
				fprintf(stderr, "read %llu+%zu differs at %llu: %02x != %02x\n",
					(unsigned long long)off, len,
					(unsigned long long)(off + i), buf[i], model[off + i]);
				break;
			}
		CHECK(0);
	}
}

/* Random writes (1-3 iovecs, odd buffer addresses) and reads against a model. */
static void model_run(struct ds_store *st, const struct ds_objid *id, bool aligned_bufs)
{
	uint8_t *model = calloc(1, MODEL_SIZE);
	uint8_t *src, *buf;
	uint64_t size = 0;
	CHECK(model);
	CHECK(posix_memalign((void **)&src, 4096, 2 * 80 * 1024) == 0);
	CHECK(posix_memalign((void **)&buf, 4096, MODEL_SIZE + 8192) == 0);

	for (int it = 0; it < 400; it++) {
		uint64_t off, len;
		switch (rnd(4)) {
		case 0: /* whole blocks */
			off = rnd(MODEL_SIZE / 4096 - 20) * 4096;
			len = (1 + rnd(16)) * 4096;
			break;
		case 1: /* tiny */
			off = rnd(MODEL_SIZE - 16);
			len = 1 + rnd(15);
			break;
		default:
			off = rnd(MODEL_SIZE - 70000);
			len = 1 + rnd(70000);
			break;
		}
		size_t skew = aligned_bufs ? 0 : rnd(64);
		uint8_t *p = src + skew;
		st_fill(p, off, len, (unsigned)it);
		struct iovec v[3];
		int cnt = 1 + (int)rnd(3);
		size_t done = 0;
		for (int i = 0; i < cnt; i++) {
			size_t piece = i == cnt - 1 ? len - done : rnd(len - done + 1);
			if (aligned_bufs && i < cnt - 1)
				piece &= ~(size_t)4095;
			v[i] = (struct iovec){ p + done, piece };
			done += piece;
		}
		enum ds_stable how = (enum ds_stable)(rnd(8) == 0 ? 1 + rnd(2) : 0);
		CHECK_EQ(ds_store_write(st, id, UID, GID, off, v, cnt, how), len);
		memcpy(model + off, p, len);
		if (off + len > size)
			size = off + len;

		uint64_t roff = rnd(size + 5000);
		size_t rlen = 1 + rnd(90000);
		check_read(st, id, model, size, roff, rlen, buf + (aligned_bufs ? 0 : rnd(64)));
		if (it % 50 == 0) {
			struct ds_obj_stat sb;
			CHECK_EQ(ds_store_stat(st, id, &sb), 0);
			CHECK_EQ(sb.size, size);
		}
	}
	check_read(st, id, model, size, 0, MODEL_SIZE, buf);
	CHECK_EQ(ds_store_commit(st, id, 0, 0), 0);

	/* truncate down to an unaligned size, then up: the tail reads as zeros */
	uint64_t cut = size / 3 + 777;
	CHECK_EQ(ds_store_truncate(st, id, cut), 0);
	memset(model + cut, 0, MODEL_SIZE - cut);
	check_read(st, id, model, cut, 0, MODEL_SIZE, buf);
	check_read(st, id, model, cut, cut - 10, 100, buf);
	CHECK_EQ(ds_store_truncate(st, id, cut + 100000), 0);
	check_read(st, id, model, cut + 100000, 0, MODEL_SIZE, buf);
	/* a write past the old end in the same block keeps the zeros */
	st_fill(src, cut + 50, 10, 9);
	CHECK_EQ(st_write(st, id, UID, GID, cut + 50, src, 10, DS_UNSTABLE), 10);
	memcpy(model + cut + 50, src, 10);
	check_read(st, id, model, cut + 100000, cut - 4096, 12000, buf);
	CHECK_EQ(ds_store_truncate(st, id, 0), 0);
	check_read(st, id, model, 0, 0, 100, buf);

	free(model);
	free(src);
	free(buf);
}

static void sparse(struct ds_store *st)
{
	struct ds_objid id = st_id(2, 1);
	uint8_t *buf = calloc(1, (3u << 20) + 200);
	uint8_t data[300];
	bool eof = true;
	CHECK(buf);
	CHECK_EQ(ds_store_create(st, &id, UID, GID, 0600), 0);
	/* a segment far out, as striping writes it: offset (2 MiB + 100) */
	st_fill(data, (2u << 20) + 100, sizeof(data), 3);
	CHECK_EQ(st_write(st, &id, UID, GID, (2u << 20) + 100, data, sizeof(data), DS_FILE_SYNC),
		 sizeof(data));
	memset(buf, 0xee, (2u << 20) + 400);
	CHECK_EQ(ds_store_read(st, &id, UID, GID, 0, (2u << 20) + 400, buf, &eof),
		 (2u << 20) + 400);
	CHECK(eof);
	for (size_t i = 0; i < (2u << 20) + 100; i++)
		if (buf[i]) {
			fprintf(stderr, "hole byte %zu = %02x\n", i, buf[i]);
			CHECK(0);
		}
	CHECK(memcmp(buf + (2u << 20) + 100, data, sizeof(data)) == 0);
	struct ds_obj_stat sb;
	CHECK_EQ(ds_store_stat(st, &id, &sb), 0);
	CHECK_EQ(sb.size, (2u << 20) + 400);
	CHECK(sb.used < (1u << 20)); /* the hole takes no space */
	/* a read entirely inside the hole, and past the end */
	CHECK_EQ(ds_store_read(st, &id, UID, GID, 4096, 8192, buf, &eof), 8192);
	CHECK(!eof);
	CHECK_EQ(ds_store_read(st, &id, UID, GID, (2u << 20) + 400, 10, buf, &eof), 0);
	CHECK(eof);
	CHECK_EQ(ds_store_read(st, &id, UID, GID, 5u << 20, 10, buf, &eof), 0);
	CHECK(eof);
	/* grow by truncate: a hole after the data */
	CHECK_EQ(ds_store_truncate(st, &id, 3u << 20), 0);
	CHECK_EQ(ds_store_read(st, &id, UID, GID, (2u << 20) + 100, 1u << 20, buf, &eof),
		 (1u << 20) - 100);
	CHECK(eof);
	CHECK(memcmp(buf, data, sizeof(data)) == 0);
	for (size_t i = sizeof(data); i < (1u << 20) - 100; i++)
		CHECK(buf[i] == 0);
	free(buf);
}

static void naming(struct ds_store *st)
{
	struct ds_objid a = st_id(3, 7), other = st_id(3, 8), none = st_id(4, 7);
	struct ds_obj_stat sb;
	uint8_t b[16] = { 0 };
	bool eof;
	CHECK_EQ(ds_store_create(st, &a, 10, 20, 0640), 0);
	CHECK_EQ(ds_store_create(st, &a, 11, 21, 0600), 0); /* idempotent, unchanged */
	CHECK_EQ(ds_store_stat(st, &a, &sb), 0);
	CHECK_EQ(sb.uid, 10);
	CHECK_EQ(sb.gid, 20);
	CHECK_EQ(sb.mode, 0640);
	CHECK_EQ(sb.size, 0);
	CHECK_EQ(sb.id.gen, 7);
	CHECK(memcmp(sb.id.key, a.key, DS_KEY_SIZE) == 0);
	CHECK_EQ(ds_store_create(st, &other, 10, 20, 0640), -EEXIST);
	CHECK_EQ(ds_store_create(st, &a, 10, 20, 01777), -EINVAL);
	CHECK_EQ(ds_store_stat(st, &other, &sb), -ESTALE);
	CHECK_EQ(ds_store_read(st, &other, 10, 20, 0, 1, b, &eof), -ESTALE);
	CHECK_EQ(st_write(st, &other, 10, 20, 0, b, 1, DS_UNSTABLE), -ESTALE);
	CHECK_EQ(ds_store_truncate(st, &other, 5), -ESTALE);
	CHECK_EQ(ds_store_setfence(st, &other, 1, 1, DS_STORE_MODE_KEEP), -ESTALE);
	CHECK_EQ(ds_store_commit(st, &other, 0, 0), -ESTALE);
	CHECK_EQ(ds_store_remove(st, &other), -ESTALE);
	CHECK_EQ(ds_store_stat(st, &none, &sb), -ENOENT);
	CHECK_EQ(ds_store_read(st, &none, 10, 20, 0, 1, b, &eof), -ENOENT);
	CHECK_EQ(st_write(st, &none, 10, 20, 0, b, 1, DS_UNSTABLE), -ENOENT);
	CHECK_EQ(ds_store_remove(st, &none), -ENOENT);
	CHECK_EQ(ds_store_truncate(st, &a, DS_STORE_MAX_SIZE + 1), -EINVAL);
	CHECK_EQ(st_write(st, &a, 10, 20, DS_STORE_MAX_SIZE, b, 1, DS_UNSTABLE), -EFBIG);

	/* remove, then the key is free for another generation */
	CHECK_EQ(st_write(st, &a, 10, 20, 100, "abc", 3, DS_UNSTABLE), 3);
	CHECK_EQ(ds_store_remove(st, &a), 0);
	CHECK_EQ(ds_store_remove(st, &a), -ENOENT); /* a repeated REMOVE */
	CHECK_EQ(ds_store_stat(st, &a, &sb), -ENOENT);
	CHECK_EQ(ds_store_create(st, &other, 10, 20, 0600), 0);
	CHECK_EQ(ds_store_stat(st, &other, &sb), 0);
	CHECK_EQ(sb.size, 0);
	CHECK_EQ(ds_store_read(st, &other, 10, 20, 0, 16, b, &eof), 0);
	CHECK(eof);
	CHECK_EQ(ds_store_remove(st, &other), 0);
}

static void stat_times(struct ds_store *st)
{
	struct ds_objid id = st_id(5, 1);
	struct ds_obj_stat s0, s1, s2, s3;
	CHECK_EQ(ds_store_create(st, &id, UID, GID, 0600), 0);
	CHECK_EQ(ds_store_stat(st, &id, &s0), 0);
	usleep(2000);
	CHECK_EQ(st_write(st, &id, UID, GID, 10, "xyz", 3, DS_UNSTABLE), 3);
	CHECK_EQ(ds_store_stat(st, &id, &s1), 0);
	CHECK(s1.change != s0.change);
	CHECK(s1.mtime.tv_sec > s0.mtime.tv_sec ||
	      (s1.mtime.tv_sec == s0.mtime.tv_sec && s1.mtime.tv_nsec > s0.mtime.tv_nsec));
	CHECK_EQ(s1.size, 13);
	/* a truncate to the same size changes nothing; a real one does */
	CHECK_EQ(ds_store_truncate(st, &id, 13), 0);
	CHECK_EQ(ds_store_stat(st, &id, &s2), 0);
	CHECK_EQ(s2.change, s1.change);
	CHECK_EQ(ds_store_truncate(st, &id, 12), 0);
	CHECK_EQ(ds_store_stat(st, &id, &s3), 0);
	CHECK(s3.change != s2.change);
	CHECK_EQ(s3.size, 12);
	/* a fence change is not a data change */
	CHECK_EQ(ds_store_setfence(st, &id, 5, 5, DS_STORE_MODE_KEEP), 0);
	CHECK_EQ(ds_store_stat(st, &id, &s2), 0);
	CHECK_EQ(s2.change, s3.change);
	CHECK_EQ(s2.uid, 5);
	CHECK_EQ(ds_store_remove(st, &id), 0);
}

static void listing(struct ds_store *st)
{
	enum { N = 300 };
	static unsigned seen[N];
	struct ds_list_entry ents[7];
	uint64_t cookie = 0, next;
	unsigned n, calls = 0, others = 0, others_after = 0;
	bool eof = false;

	memset(seen, 0, sizeof(seen));
	for (unsigned i = 0; i < N; i++) {
		struct ds_objid id = st_id(1000 + i, i + 1);
		CHECK_EQ(ds_store_create(st, &id, UID, GID, 0600), 0);
		CHECK_EQ(st_write(st, &id, UID, GID, i, "q", 1, DS_UNSTABLE), 1);
	}
	CHECK_EQ(ds_store_list(st, 0, ents, 0, &n, &next, &eof), -EINVAL);
	while (!eof) {
		CHECK_EQ(ds_store_list(st, cookie, ents, 7, &n, &next, &eof), 0);
		CHECK(n <= 7);
		CHECK(eof || n == 7);
		for (unsigned k = 0; k < n; k++) {
			unsigned i = (unsigned)ents[k].id.gen - 1;
			struct ds_objid id = st_id(1000 + i, i + 1);
			if (i >= N || memcmp(id.key, ents[k].id.key, DS_KEY_SIZE)) {
				others++; /* made by the other cases */
				continue;
			}
			CHECK_EQ(ents[k].size, i + 1);
			seen[i]++;
		}
		cookie = next;
		CHECK(++calls < 1000);
	}
	for (unsigned i = 0; i < N; i++)
		CHECK_EQ(seen[i], 1);
	for (unsigned i = 0; i < N; i++) {
		struct ds_objid id = st_id(1000 + i, i + 1);
		CHECK_EQ(ds_store_remove(st, &id), 0);
	}
	eof = false;
	for (cookie = 0; !eof; cookie = next) {
		CHECK_EQ(ds_store_list(st, cookie, ents, 7, &n, &next, &eof), 0);
		others_after += n;
	}
	CHECK_EQ(others_after, others);
}

/* O_DIRECT: aligned requests go straight to the caller's buffers. */
static void direct_alignment(struct ds_store *st)
{
	struct ds_objid id = st_id(6, 1);
	struct ds_store_counters c0, c1;
	uint8_t *buf;
	bool eof;
	CHECK(posix_memalign((void **)&buf, 4096, 1u << 20) == 0);
	CHECK_EQ(ds_store_create(st, &id, UID, GID, 0600), 0);
	st_fill(buf, 0, 1u << 20, 5);
	ds_store_counters(st, &c0);
	CHECK_EQ(st_write(st, &id, UID, GID, 0, buf, 1u << 20, DS_UNSTABLE), 1u << 20);
	CHECK_EQ(ds_store_read(st, &id, UID, GID, 0, 1u << 20, buf, &eof), 1u << 20);
	ds_store_counters(st, &c1);
	CHECK_EQ(c1.bounced, c0.bounced);
	CHECK_EQ(c1.rmw_blocks, c0.rmw_blocks);
	for (size_t i = 0; i < (1u << 20); i++)
		CHECK(buf[i] == st_pat(i, 5));
	/* a misaligned buffer is bounced */
	CHECK_EQ(st_write(st, &id, UID, GID, 8192, buf + 1, 8192, DS_UNSTABLE), 8192);
	ds_store_counters(st, &c0);
	CHECK_EQ(c0.bounced, c1.bounced + 1);
	CHECK_EQ(ds_store_remove(st, &id), 0);
	free(buf);
}

static void run(const char *dir, bool direct, enum ds_store_io io)
{
	struct ds_store *st = st_open(dir, direct, io);
	struct ds_objid id = st_id(1, 1);
	CHECK_EQ(ds_store_direct(st), direct);
	CHECK_EQ(ds_store_block_size(st), DS_BLOCK_DEFAULT);
	CHECK_EQ(ds_store_create(st, &id, UID, GID, 0600), 0);
	model_run(st, &id, false);
	model_run(st, &id, true);
	sparse(st);
	naming(st);
	stat_times(st);
	listing(st);
	if (direct)
		direct_alignment(st);

	/* one process per store */
	struct ds_store *again = NULL;
	struct ds_store_opts o = { .create = true };
	CHECK_EQ(ds_store_open(dir, &o, &again), -EBUSY);
	uint64_t total = 0, avail = 0;
	CHECK_EQ(ds_store_space(st, &total, &avail), 0);
	CHECK(total > 0 && avail <= total);
	CHECK_EQ(ds_store_close(st), 0);
}

int main(void)
{
	const char *tmp = st_tmp_make();
	struct ds_store *st = NULL;

	/* nothing is made in a directory without a store unless asked */
	CHECK_EQ(ds_store_open(st_subdir("empty"), NULL, &st), -ENOENT);
	struct ds_store_opts bad = { .create = true, .block_size = 6000 };
	CHECK_EQ(ds_store_open(st_subdir("empty"), &bad, &st), -EINVAL);

	run(st_subdir("page-uring"), false, DS_STORE_IO_URING);
	run(st_subdir("page-psync"), false, DS_STORE_IO_PSYNC);
	if (st_direct_possible(tmp)) {
		run(st_subdir("direct-uring"), true, DS_STORE_IO_URING);
		run(st_subdir("direct-psync"), true, DS_STORE_IO_PSYNC);
	}

	/* a larger block size, chosen at creation and kept */
	struct ds_store_opts big = { .create = true, .block_size = 65536 };
	CHECK_EQ(ds_store_open(st_subdir("big"), &big, &st), 0);
	struct ds_objid id = st_id(1, 1);
	CHECK_EQ(ds_store_create(st, &id, UID, GID, 0600), 0);
	model_run(st, &id, false);
	CHECK_EQ(ds_store_close(st), 0);
	big.block_size = 0;
	CHECK_EQ(ds_store_open(st_subdir("big"), &big, &st), 0);
	CHECK_EQ(ds_store_block_size(st), 65536);
	CHECK_EQ(ds_store_close(st), 0);
	return 0;
}
