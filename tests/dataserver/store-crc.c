/* SPDX-License-Identifier: MIT */
/*
 * Integrity: bytes changed behind the store's back (data, CRC table, a hole,
 * the header, a lost data file) are never returned: the read of a bad block
 * fails with -EIO while its neighbours still read, a partial rewrite of it
 * is refused, a whole-block rewrite heals it, and scrub reports exactly the
 * bad objects and removes the leftovers of interrupted creates.
 */
#include "config.h"

#include "tests/dataserver/store-test.h"

#define U 7
#define BS 4096u

struct bad_seen {
	unsigned calls;
	struct ds_objid id;
	uint64_t first, nbad;
};

static void on_bad(void *arg, const struct ds_objid *id, uint64_t first, uint64_t nbad)
{
	struct bad_seen *b = arg;
	b->calls++;
	b->id = *id;
	b->first = first;
	b->nbad = nbad;
}

static void expect_scrub(struct ds_store *st, uint64_t objects, uint64_t bad_objects,
			 uint64_t bad_blocks, struct bad_seen *seen)
{
	struct ds_scrub_stats ss;
	memset(seen, 0, sizeof(*seen));
	CHECK_EQ(ds_store_scrub(st, on_bad, seen, &ss), 0);
	CHECK_EQ(ss.objects, objects);
	CHECK_EQ(ss.bad_objects, bad_objects);
	CHECK_EQ(ss.bad_blocks, bad_blocks);
	CHECK_EQ(seen->calls, bad_objects);
}

static void check_block(struct ds_store *st, const struct ds_objid *id, unsigned b, unsigned seed)
{
	uint8_t buf[BS];
	bool eof;
	CHECK_EQ(ds_store_read(st, id, U, U, (uint64_t)b * BS, BS, buf, &eof), BS);
	for (unsigned i = 0; i < BS; i++)
		CHECK(buf[i] == st_pat((uint64_t)b * BS + i, seed));
}

static void run(const char *dir, bool direct)
{
	struct ds_store *st = st_open(dir, direct, DS_STORE_IO_URING);
	struct ds_objid a = st_id(1, 1), b = st_id(2, 1), c = st_id(3, 1);
	uint8_t *data = malloc(8 * BS), one[1] = { 0x5a }, buf[3 * BS];
	char path[4400], mpath[4400];
	struct ds_store_counters c0, c1;
	struct bad_seen seen;
	bool eof;
	CHECK(data);

	CHECK_EQ(ds_store_create(st, &a, U, U, 0600), 0);
	CHECK_EQ(ds_store_create(st, &b, U, U, 0600), 0);
	st_fill(data, 0, 8 * BS, 1);
	CHECK_EQ(st_write(st, &a, U, U, 0, data, 8 * BS, DS_FILE_SYNC), 8 * BS);
	CHECK_EQ(st_write(st, &b, U, U, 0, data, 3 * BS, DS_FILE_SYNC), 3 * BS);
	expect_scrub(st, 2, 0, 0, &seen);

	/* one flipped byte in block 3 */
	st_obj_path(dir, &a, "", path, sizeof(path));
	st_obj_path(dir, &a, ".meta", mpath, sizeof(mpath));
	one[0] = (uint8_t)~st_pat(3 * BS + 17, 1);
	st_poke(path, 3 * BS + 17, one, 1);
	ds_store_counters(st, &c0);
	CHECK_EQ(ds_store_read(st, &a, U, U, 3 * BS, BS, buf, &eof), -EIO);
	CHECK_EQ(ds_store_read(st, &a, U, U, 3 * BS + 100, 10, buf, &eof), -EIO);
	CHECK_EQ(ds_store_read(st, &a, U, U, 2 * BS, 3 * BS, buf, &eof), -EIO);
	ds_store_counters(st, &c1);
	CHECK_EQ(c1.crc_errors, c0.crc_errors + 3);
	check_block(st, &a, 2, 1);
	check_block(st, &a, 4, 1);
	/* a partial rewrite cannot verify the rest of the block: refused */
	CHECK_EQ(st_write(st, &a, U, U, 3 * BS + 5, "zz", 2, DS_UNSTABLE), -EIO);
	expect_scrub(st, 2, 1, 1, &seen);
	CHECK(memcmp(seen.id.key, a.key, DS_KEY_SIZE) == 0);
	CHECK_EQ(seen.id.gen, 1);
	CHECK_EQ(seen.first, 3 * BS);
	CHECK_EQ(seen.nbad, 1);
	/* a whole-block rewrite heals it */
	CHECK_EQ(st_write(st, &a, U, U, 3 * BS, data + 3 * BS, BS, DS_FILE_SYNC), BS);
	check_block(st, &a, 3, 1);
	expect_scrub(st, 2, 0, 0, &seen);

	/* a damaged CRC entry (block 5) is as bad as damaged data */
	uint8_t ent[4];
	memset(ent, 0xa5, sizeof(ent));
	st_poke(mpath, 4096 + 5 * 8, ent, sizeof(ent));
	CHECK_EQ(ds_store_read(st, &a, U, U, 5 * BS, 1, buf, &eof), -EIO);
	check_block(st, &a, 6, 1);
	expect_scrub(st, 2, 1, 1, &seen);
	CHECK_EQ(seen.first, 5 * BS);
	CHECK_EQ(st_write(st, &a, U, U, 5 * BS, data + 5 * BS, BS, DS_UNSTABLE), BS);
	check_block(st, &a, 5, 1);

	/* data inside a hole (a block never written must read as zeros) */
	CHECK_EQ(ds_store_create(st, &c, U, U, 0600), 0);
	CHECK_EQ(st_write(st, &c, U, U, 0, data, BS, DS_UNSTABLE), BS);
	CHECK_EQ(ds_store_truncate(st, &c, 6 * BS), 0);
	CHECK_EQ(ds_store_read(st, &c, U, U, 2 * BS, BS, buf, &eof), BS);
	for (unsigned i = 0; i < BS; i++)
		CHECK(buf[i] == 0);
	st_obj_path(dir, &c, "", path, sizeof(path));
	st_poke(path, 2 * BS + 9, one, 1);
	CHECK_EQ(ds_store_read(st, &c, U, U, 2 * BS, BS, buf, &eof), -EIO);
	CHECK_EQ(ds_store_read(st, &c, U, U, 3 * BS, BS, buf, &eof), BS);
	expect_scrub(st, 3, 1, 1, &seen);
	CHECK(memcmp(seen.id.key, c.key, DS_KEY_SIZE) == 0);
	/* truncating through the bad block drops it */
	CHECK_EQ(ds_store_truncate(st, &c, 2 * BS), 0);
	expect_scrub(st, 3, 0, 0, &seen);
	/* and a truncate that must recompute a bad partial block is refused */
	one[0] = (uint8_t)~st_pat(9, 1);
	st_poke(path, 9, one, 1);
	CHECK_EQ(ds_store_truncate(st, &c, 100), -EIO);
	CHECK_EQ(ds_store_remove(st, &c), 0);

	/* cold: corrupt with the store closed, so nothing is cached */
	CHECK_EQ(ds_store_close(st), 0);
	st_obj_path(dir, &b, "", path, sizeof(path));
	one[0] = (uint8_t)~st_pat(BS, 1);
	st_poke(path, BS, one, 1);
	st = st_open(dir, direct, DS_STORE_IO_PSYNC);
	CHECK_EQ(ds_store_read(st, &b, U, U, 0, 3 * BS, buf, &eof), -EIO);
	check_block(st, &b, 0, 1);
	check_block(st, &b, 2, 1);
	expect_scrub(st, 2, 1, 1, &seen);
	CHECK_EQ(seen.first, BS);

	/* a damaged header: the object cannot be used, scrub says so, REMOVE works */
	CHECK_EQ(ds_store_close(st), 0);
	st_poke(mpath, 60, one, 1);
	st = st_open(dir, direct, DS_STORE_IO_URING);
	struct ds_obj_stat sb;
	CHECK_EQ(ds_store_stat(st, &a, &sb), -EIO);
	CHECK_EQ(ds_store_read(st, &a, U, U, 0, 1, buf, &eof), -EIO);
	expect_scrub(st, 2, 2, 1, &seen);
	CHECK_EQ(ds_store_remove(st, &a), 0);
	CHECK_EQ(ds_store_stat(st, &a, &sb), -ENOENT);

	/* a lost data file: recreated empty, its written blocks fail */
	CHECK_EQ(ds_store_close(st), 0);
	CHECK_EQ(unlink(path), 0);
	st = st_open(dir, direct, DS_STORE_IO_URING);
	CHECK_EQ(ds_store_read(st, &b, U, U, 0, 1, buf, &eof), -EIO);
	expect_scrub(st, 1, 1, 3, &seen);
	CHECK_EQ(ds_store_remove(st, &b), 0);

	/* leftovers of interrupted creates: a data file, a .meta.tmp, no .meta */
	struct ds_objid d = st_id(4, 1), e = st_id(5, 1);
	CHECK_EQ(ds_store_create(st, &d, U, U, 0600), 0);
	CHECK_EQ(ds_store_create(st, &e, U, U, 0600), 0);
	CHECK_EQ(ds_store_close(st), 0);
	char tpath[4500];
	st_obj_path(dir, &d, ".meta", mpath, sizeof(mpath));
	CHECK_EQ(unlink(mpath), 0);
	st_obj_path(dir, &e, ".meta", mpath, sizeof(mpath));
	snprintf(tpath, sizeof(tpath), "%s.tmp", mpath);
	CHECK_EQ(rename(mpath, tpath), 0);
	st = st_open(dir, direct, DS_STORE_IO_URING);
	struct ds_scrub_stats ss;
	CHECK_EQ(ds_store_scrub(st, NULL, NULL, &ss), 0);
	CHECK_EQ(ss.orphans, 2);
	CHECK_EQ(ss.objects, 0);
	CHECK_EQ(access(tpath, F_OK), -1);
	CHECK_EQ(ds_store_stat(st, &d, &sb), -ENOENT);
	CHECK_EQ(ds_store_create(st, &d, U, U, 0600), 0);
	CHECK_EQ(ds_store_scrub(st, NULL, NULL, &ss), 0);
	CHECK_EQ(ss.orphans, 0);
	CHECK_EQ(ss.objects, 1);
	CHECK_EQ(ds_store_close(st), 0);
	free(data);
}

int main(void)
{
	const char *tmp = st_tmp_make();
	run(st_subdir("page"), false);
	if (st_direct_possible(tmp))
		run(st_subdir("direct"), true);
	return 0;
}
