/* SPDX-License-Identifier: MIT */
/*
 * Loosely coupled fencing, RFC 8435 §2.2: READ and WRITE are checked against
 * the object's owner and mode; SETFENCE changes the owner so that the old
 * credentials fail with -EACCES from the moment it returns (braid_ctl.x:
 * no I/O with the old credentials is in progress then), and the fence
 * survives a restart.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>

#include "tests/dataserver/store-test.h"

static struct ds_store *st;
static struct ds_objid id;
static atomic_bool fenced, stop;
static atomic_long late_ok, writes_ok;

/* Writes as the old owner; none that starts after SETFENCE returned may succeed. */
static void *old_writer(void *arg)
{
	uint8_t *buf = malloc(65536);
	CHECK(buf);
	memset(buf, (int)(intptr_t)arg, 65536);
	for (unsigned i = 0; !atomic_load(&stop); i++) {
		bool after = atomic_load(&fenced);
		ssize_t n = st_write(st, &id, 100, 100, (i % 64) * 4000, buf, 65536, DS_UNSTABLE);
		if (n == 65536) {
			atomic_fetch_add(&writes_ok, 1);
			if (after)
				atomic_fetch_add(&late_ok, 1);
		} else {
			CHECK_EQ(n, -EACCES);
			if (after)
				break;
		}
	}
	free(buf);
	return NULL;
}

static void access_rules(void)
{
	uint8_t b[8];
	bool eof;
	struct ds_objid o = st_id(2, 1);
	CHECK_EQ(ds_store_create(st, &o, 100, 200, 0640), 0);
	/* owner: read and write */
	CHECK_EQ(st_write(st, &o, 100, 200, 0, "abcdefgh", 8, DS_UNSTABLE), 8);
	CHECK_EQ(ds_store_read(st, &o, 100, 200, 0, 8, b, &eof), 8);
	/* group: read only (0640) */
	CHECK_EQ(ds_store_read(st, &o, 555, 200, 0, 8, b, &eof), 8);
	CHECK_EQ(st_write(st, &o, 555, 200, 0, "x", 1, DS_UNSTABLE), -EACCES);
	/* others, root included: nothing */
	CHECK_EQ(ds_store_read(st, &o, 555, 555, 0, 8, b, &eof), -EACCES);
	CHECK_EQ(ds_store_read(st, &o, 0, 0, 0, 8, b, &eof), -EACCES);
	CHECK_EQ(st_write(st, &o, 0, 0, 0, "x", 1, DS_FILE_SYNC), -EACCES);
	/* the owner class decides for the owner, even when group bits would allow */
	struct ds_objid p = st_id(3, 1);
	CHECK_EQ(ds_store_create(st, &p, 100, 200, 0060), 0);
	CHECK_EQ(st_write(st, &p, 100, 200, 0, "x", 1, DS_UNSTABLE), -EACCES);
	CHECK_EQ(st_write(st, &p, 101, 200, 0, "x", 1, DS_UNSTABLE), 1);
	/* a refused write changes nothing */
	struct ds_obj_stat sb;
	CHECK_EQ(ds_store_stat(st, &o, &sb), 0);
	CHECK_EQ(sb.size, 8);
}

int main(void)
{
	st_tmp_make();
	const char *dir = st_subdir("fence");
	st = st_open(dir, false, DS_STORE_IO_URING);
	id = st_id(1, 9);
	uint8_t b[4];
	bool eof;

	CHECK_EQ(ds_store_create(st, &id, 100, 100, 0600), 0);
	CHECK_EQ(st_write(st, &id, 100, 100, 0, "data", 4, DS_UNSTABLE), 4);
	CHECK_EQ(st_write(st, &id, 101, 100, 0, "evil", 4, DS_UNSTABLE), -EACCES);
	CHECK_EQ(ds_store_read(st, &id, 101, 101, 0, 4, b, &eof), -EACCES);
	access_rules();

	/* fence while the old owner writes from several threads */
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		CHECK(pthread_create(&t[i], NULL, old_writer, (void *)(intptr_t)(i + 1)) == 0);
	while (atomic_load(&writes_ok) < 50)
		usleep(100);
	CHECK_EQ(ds_store_setfence(st, &id, 200, 200, DS_STORE_MODE_KEEP), 0);
	atomic_store(&fenced, true);
	usleep(20000);
	atomic_store(&stop, true);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(atomic_load(&late_ok), 0);
	CHECK_EQ(ds_store_read(st, &id, 100, 100, 0, 4, b, &eof), -EACCES);
	CHECK_EQ(st_write(st, &id, 200, 200, 0, "new!", 4, DS_UNSTABLE), 4);
	CHECK_EQ(ds_store_read(st, &id, 200, 200, 0, 4, b, &eof), 4);
	CHECK(memcmp(b, "new!", 4) == 0);
	CHECK_EQ(ds_store_setfence(st, &id, 200, 200, DS_STORE_MODE_KEEP), 0); /* idempotent */

	/* the fence survives a restart */
	CHECK_EQ(ds_store_close(st), 0);
	st = st_open(dir, false, DS_STORE_IO_URING);
	CHECK_EQ(ds_store_read(st, &id, 100, 100, 0, 4, b, &eof), -EACCES);
	CHECK_EQ(ds_store_read(st, &id, 200, 200, 0, 4, b, &eof), 4);
	struct ds_obj_stat sb;
	CHECK_EQ(ds_store_stat(st, &id, &sb), 0);
	CHECK_EQ(sb.uid, 200);
	CHECK_EQ(sb.gid, 200);
	CHECK_EQ(sb.mode, 0600);

	/* the fence with a mode (RFC 8435 §2.2, an id per iomode): the owner
	 * reads and writes, the group only reads, durably */
	CHECK_EQ(ds_store_setfence(st, &id, 300, 301, 0640), 0);
	CHECK_EQ(st_write(st, &id, 302, 301, 0, "r/o!", 4, DS_UNSTABLE), -EACCES);
	CHECK_EQ(ds_store_read(st, &id, 302, 301, 0, 4, b, &eof), 4);
	CHECK_EQ(ds_store_read(st, &id, 200, 200, 0, 4, b, &eof), -EACCES);
	CHECK_EQ(st_write(st, &id, 300, 301, 0, "rw!!", 4, DS_UNSTABLE), 4);
	CHECK_EQ(ds_store_setfence(st, &id, 300, 301, 01640), -EINVAL);
	CHECK_EQ(ds_store_close(st), 0);
	st = st_open(dir, false, DS_STORE_IO_URING);
	CHECK_EQ(ds_store_stat(st, &id, &sb), 0);
	CHECK(sb.uid == 300 && sb.gid == 301 && sb.mode == 0640);
	CHECK_EQ(st_write(st, &id, 302, 301, 0, "r/o!", 4, DS_UNSTABLE), -EACCES);
	CHECK_EQ(ds_store_read(st, &id, 302, 301, 0, 4, b, &eof), 4);
	CHECK(memcmp(b, "rw!!", 4) == 0);
	CHECK_EQ(ds_store_close(st), 0);
	return 0;
}
