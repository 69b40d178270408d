/* SPDX-License-Identifier: MIT */
/*
 * The object store's count of objects (ds_store_objects, what braid-ds
 * sends as HEARTBEAT's hb_objects): 0 in a new store; up by one per create,
 * not for a repeated create or one refused (another generation); down by
 * one per remove, not for a remove of nothing or of another generation;
 * the same after a clean reopen, after a crash (a child that exits without
 * closing), and with the files of an interrupted create lying about (a
 * data file, a .meta.tmp: not objects), which the count at open skips.
 */
#include "config.h"

#include <sys/wait.h>

#include "tests/dataserver/store-test.h"

#define U 42

static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	close(fd);
}

int main(void)
{
	st_tmp_make();
	const char *dir = st_subdir("objects-count");
	struct ds_store *st = st_open(dir, false, DS_STORE_IO_PSYNC);
	CHECK_EQ(ds_store_objects(st), 0);

	for (uint32_t n = 1; n <= 10; n++) {
		struct ds_objid id = st_id(n, 7);
		CHECK_EQ(ds_store_create(st, &id, U, U, 0600), 0);
	}
	CHECK_EQ(ds_store_objects(st), 10);
	/* a repeat, and another generation of a key held: no new object */
	struct ds_objid id3 = st_id(3, 7), id3b = st_id(3, 8), id99 = st_id(99, 7);
	CHECK_EQ(ds_store_create(st, &id3, U, U, 0600), 0);
	CHECK_EQ(ds_store_create(st, &id3b, U, U, 0600), -EEXIST);
	CHECK_EQ(ds_store_objects(st), 10);
	/* removes: one object each; nothing removed, nothing counted */
	CHECK_EQ(ds_store_remove(st, &id3), 0);
	CHECK_EQ(ds_store_remove(st, &id3), -ENOENT);
	CHECK_EQ(ds_store_remove(st, &id99), -ENOENT);
	struct ds_objid id4b = st_id(4, 8);
	CHECK_EQ(ds_store_remove(st, &id4b), -ESTALE);
	CHECK_EQ(ds_store_objects(st), 9);
	/* data written does not change the count */
	uint8_t buf[8192];
	st_fill(buf, 0, sizeof(buf), 1);
	struct ds_objid id5 = st_id(5, 7);
	CHECK_EQ(st_write(st, &id5, U, U, 0, buf, sizeof(buf), DS_FILE_SYNC), sizeof(buf));
	CHECK_EQ(ds_store_objects(st), 9);
	CHECK_EQ(ds_store_close(st), 0);

	/* counted again from the directories */
	st = st_open(dir, false, DS_STORE_IO_PSYNC);
	CHECK_EQ(ds_store_objects(st), 9);
	CHECK_EQ(ds_store_create(st, &id3, U, U, 0600), 0);
	struct ds_objid id50 = st_id(50, 1);
	CHECK_EQ(ds_store_create(st, &id50, U, U, 0600), 0);
	CHECK_EQ(ds_store_objects(st), 11);
	CHECK_EQ(ds_store_close(st), 0);

	/* id50 made an interrupted create (its data file and a .meta.tmp, the
	 * state before the rename that commits a create): no object */
	char meta[4096], tmp[4200];
	st_obj_path(dir, &id50, ".meta", meta, sizeof(meta));
	snprintf(tmp, sizeof(tmp), "%s.tmp", meta);
	CHECK_EQ(rename(meta, tmp), 0);
	/* and a stray file whose name is no key */
	char *slash = strrchr(meta, '/');
	CHECK(slash);
	snprintf(slash + 1, sizeof(meta) - (size_t)(slash + 1 - meta), "notakey.meta");
	touch(meta);

	/* a crash: the child creates two and removes one, and never closes */
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct ds_store *c = st_open(dir, false, DS_STORE_IO_PSYNC);
		if (ds_store_objects(c) != 10)
			_exit(2);
		struct ds_objid a = st_id(60, 1), b = st_id(61, 1), r = st_id(1, 7);
		if (ds_store_create(c, &a, U, U, 0600) || ds_store_create(c, &b, U, U, 0600) ||
		    ds_store_remove(c, &r) || ds_store_objects(c) != 11)
			_exit(3);
		_exit(0);
	}
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
	st = st_open(dir, false, DS_STORE_IO_PSYNC);
	CHECK_EQ(ds_store_objects(st), 11);
	/* the scan agrees with LIST */
	struct ds_list_entry ents[64];
	unsigned n = 0;
	uint64_t next = 0;
	bool eof = false;
	CHECK_EQ(ds_store_list(st, 0, ents, 64, &n, &next, &eof), 0);
	CHECK(eof);
	CHECK_EQ(n, 11);
	/* scrub removes the interrupted create's files; still 11 objects */
	struct ds_scrub_stats ss;
	CHECK_EQ(ds_store_scrub(st, NULL, NULL, &ss), 0);
	CHECK_EQ(ss.objects, 11);
	CHECK_EQ(ss.orphans, 1);
	CHECK_EQ(ds_store_objects(st), 11);
	CHECK_EQ(ds_store_close(st), 0);
	printf("store-objects: ok\n");
	return 0;
}
