/* SPDX-License-Identifier: MIT */
/*
 * ds_store_deallocate (braid_ctl DEALLOCATE): punched blocks read as zeros
 * like blocks never written, their neighbours' CRCs still verify, the
 * object's storage shrinks, the size stays, a repeat is harmless, a
 * partial rewrite of a punched block works, and the punch survives a
 * crash (the process exits without closing the store).
 */
#include "config.h"

#include <sys/wait.h>

#include "tests/dataserver/store-test.h"

#define U  7
#define BS 4096u
#define NB 16u

static void check_blocks(struct ds_store *st, const struct ds_objid *id, unsigned b0, unsigned b1,
			 bool zero)
{
	uint8_t buf[BS];
	bool eof;
	for (unsigned b = b0; b < b1; b++) {
		CHECK_EQ(ds_store_read(st, id, U, U, (uint64_t)b * BS, BS, buf, &eof), BS);
		for (unsigned i = 0; i < BS; i++)
			CHECK(buf[i] == (zero ? 0 : st_pat((uint64_t)b * BS + i, 1)));
	}
}

static uint64_t used_of(struct ds_store *st, const struct ds_objid *id)
{
	struct ds_obj_stat os;
	CHECK_EQ(ds_store_stat(st, id, &os), 0);
	CHECK_EQ(os.size, (uint64_t)NB * BS);
	return os.used;
}

static void run(const char *dir, bool direct)
{
	struct ds_store *st = st_open(dir, direct, DS_STORE_IO_URING);
	struct ds_objid a = st_id(1, 1), other = st_id(1, 2), none = st_id(9, 1);
	uint8_t *data = malloc(NB * BS);
	CHECK(data != NULL);
	st_fill(data, 0, NB * BS, 1);
	CHECK_EQ(ds_store_create(st, &a, U, U, 0600), 0);
	CHECK_EQ(st_write(st, &a, U, U, 0, data, NB * BS, DS_FILE_SYNC), (ssize_t)(NB * BS));
	uint64_t u0 = used_of(st, &a);

	/* whole blocks only; the others' errors as every call's */
	CHECK_EQ(ds_store_deallocate(st, &a, 1, BS), -EINVAL);
	CHECK_EQ(ds_store_deallocate(st, &a, 0, BS - 1), -EINVAL);
	CHECK_EQ(ds_store_deallocate(st, &a, 0, 0), -EINVAL);
	CHECK_EQ(ds_store_deallocate(st, &none, 0, BS), -ENOENT);
	CHECK_EQ(ds_store_deallocate(st, &other, 0, BS), -ESTALE);

	CHECK_EQ(ds_store_deallocate(st, &a, 4 * BS, 8 * BS), 0);
	check_blocks(st, &a, 0, 4, false);
	check_blocks(st, &a, 4, 12, true);
	check_blocks(st, &a, 12, NB, false);
	uint64_t u1 = used_of(st, &a);
	CHECK(u1 + 8 * BS <= u0);
	/* again: the same */
	CHECK_EQ(ds_store_deallocate(st, &a, 4 * BS, 8 * BS), 0);
	check_blocks(st, &a, 4, 12, true);
	CHECK_EQ(used_of(st, &a), u1);
	/* past the end: cut at it, the size stays */
	CHECK_EQ(ds_store_deallocate(st, &a, 14 * BS, 100 * BS), 0);
	check_blocks(st, &a, 12, 14, false);
	check_blocks(st, &a, 14, NB, true);

	/* a punched block takes a partial rewrite (it reads as a hole) */
	uint8_t one[10];
	memset(one, 0x5a, sizeof(one));
	CHECK_EQ(st_write(st, &a, U, U, 5 * BS + 100, one, sizeof(one), DS_FILE_SYNC), 10);
	uint8_t buf[BS];
	bool eof;
	CHECK_EQ(ds_store_read(st, &a, U, U, 5 * BS, BS, buf, &eof), BS);
	for (unsigned i = 0; i < BS; i++)
		CHECK(buf[i] == (i >= 100 && i < 110 ? 0x5a : 0));
	struct ds_scrub_stats ss;
	CHECK_EQ(ds_store_scrub(st, NULL, NULL, &ss), 0);
	CHECK_EQ(ss.bad_objects, 0);
	CHECK_EQ(ds_store_close(st), 0);

	/* a crash right after the reply keeps the punch */
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct ds_store *c = st_open(dir, direct, DS_STORE_IO_URING);
		_exit(ds_store_deallocate(c, &a, 0, 2 * BS) ? 1 : 0);
	}
	int ws;
	CHECK_EQ(waitpid(pid, &ws, 0), pid);
	CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
	st = st_open(dir, direct, DS_STORE_IO_URING);
	check_blocks(st, &a, 0, 2, true);
	check_blocks(st, &a, 2, 4, false);
	check_blocks(st, &a, 12, 14, false);
	CHECK_EQ(ds_store_scrub(st, NULL, NULL, &ss), 0);
	CHECK_EQ(ss.bad_objects, 0);
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
