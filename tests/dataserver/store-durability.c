/* SPDX-License-Identifier: MIT */
/*
 * Durability as promised (RFC 1813 §3.3.7 stable_how, §3.3.21 COMMIT;
 * RFC 8881 §18.32, §18.3): DATA_SYNC and FILE_SYNC writes and COMMIT return
 * only after fdatasync/fsync of the data and of the CRCs and header; an
 * UNSTABLE write syncs nothing (but a new object's first, which syncs its
 * .meta and directory before it); remove, truncate and setfence sync too.  A
 * create syncs nothing: the object's first write syncs its directory, and a
 * crash before that (an empty .meta) leaves no object, never an unreadable
 * one.  The write verifier changes on every open, a crash included, and the
 * metadata (size, owner, mode, mtime, change) survives a restart; after a
 * crash (a child that exits without closing) what was committed is there and
 * the change value moves on to one never handed out before.  A power cut
 * cannot be staged here, so the sync calls are counted instead (the store's
 * counters, for both backends), and on plain syscalls this program's own
 * fsync/fdatasync (which the store links to) note which files were synced.
 */
#include "config.h"

#include <limits.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "tests/dataserver/store-test.h"

#define U 42

static bool recording;
static char synced[8][PATH_MAX];
static int nsynced;

static void note_sync(int fd)
{
	char link[64];
	if (!recording)
		return;
	CHECK(nsynced < 8);
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, synced[nsynced], PATH_MAX - 1);
	CHECK(n > 0);
	synced[nsynced++][n] = 0;
}

int fsync(int fd)
{
	note_sync(fd);
	return (int)syscall(SYS_fsync, fd);
}

int fdatasync(int fd)
{
	note_sync(fd);
	return (int)syscall(SYS_fdatasync, fd);
}

static bool was_synced(const char *path)
{
	for (int i = 0; i < nsynced; i++)
		if (!strcmp(synced[i], path))
			return true;
	return false;
}

/* Both of the object's files, with (dir_too) or without the directory that
 * names them, and nothing else, were synced since the last call. */
static void check_synced(const char *dir, const struct ds_objid *id, bool dir_too)
{
	char p[PATH_MAX], data[PATH_MAX], meta[PATH_MAX], sub[PATH_MAX];
	st_obj_path(dir, id, "", p, sizeof(p));
	CHECK(realpath(p, data));
	st_obj_path(dir, id, ".meta", p, sizeof(p));
	CHECK(realpath(p, meta));
	strcpy(sub, data);
	*strrchr(sub, '/') = 0;
	CHECK_EQ(nsynced, dir_too ? 3 : 2);
	CHECK(was_synced(data) && was_synced(meta));
	CHECK_EQ(was_synced(sub), dir_too);
	nsynced = 0;
}

/* On plain syscalls: which files FILE_SYNC, DATA_SYNC and COMMIT sync. */
static void synced_files(const char *dir)
{
	struct ds_store *st = st_open(dir, false, DS_STORE_IO_PSYNC);
	struct ds_objid id = st_id(9, 1);
	recording = true;
	nsynced = 0;
	CHECK_EQ(ds_store_create(st, &id, U, U, 0600), 0);
	CHECK_EQ(nsynced, 0); /* durable with its first sync */
	CHECK_EQ(st_write(st, &id, U, U, 5, "abc", 3, DS_FILE_SYNC), 3);
	check_synced(dir, &id, true); /* the first: its names too */
	CHECK_EQ(st_write(st, &id, U, U, 5, "abc", 3, DS_UNSTABLE), 3);
	CHECK_EQ(nsynced, 0);
	CHECK_EQ(st_write(st, &id, U, U, 5, "abc", 3, DS_FILE_SYNC), 3);
	check_synced(dir, &id, false);
	/* a first write UNSTABLE: the .meta and the directory, before it */
	struct ds_objid id4 = st_id(11, 1);
	CHECK_EQ(ds_store_create(st, &id4, U, U, 0600), 0);
	CHECK_EQ(st_write(st, &id4, U, U, 5, "abc", 3, DS_UNSTABLE), 3);
	{
		char p[PATH_MAX], meta[PATH_MAX], sub[PATH_MAX];
		st_obj_path(dir, &id4, ".meta", p, sizeof(p));
		CHECK(realpath(p, meta));
		strcpy(sub, meta);
		*strrchr(sub, '/') = 0;
		CHECK_EQ(nsynced, 2);
		CHECK(was_synced(meta) && was_synced(sub));
		nsynced = 0;
	}
	CHECK_EQ(st_write(st, &id, U, U, 9000, "abc", 3, DS_DATA_SYNC), 3);
	check_synced(dir, &id, false);
	CHECK_EQ(st_write(st, &id, U, U, 5, "abc", 3, DS_UNSTABLE), 3);
	CHECK_EQ(ds_store_commit(st, &id, 0, 0), 0);
	check_synced(dir, &id, false);
	recording = false;
	CHECK_EQ(ds_store_close(st), 0);

	/* the debt survives a restart before the first sync: the header
	 * carries it (a clean close writes the header, syncing nothing) */
	struct ds_objid id2 = st_id(10, 1);
	st = st_open(dir, false, DS_STORE_IO_PSYNC);
	CHECK_EQ(ds_store_create(st, &id2, U, U, 0600), 0);
	CHECK_EQ(ds_store_close(st), 0);
	st = st_open(dir, false, DS_STORE_IO_PSYNC);
	recording = true;
	CHECK_EQ(ds_store_commit(st, &id2, 0, 0), 0);
	check_synced(dir, &id2, true);
	CHECK_EQ(ds_store_commit(st, &id2, 0, 0), 0);
	CHECK_EQ(nsynced, 0);
	recording = false;
	CHECK_EQ(ds_store_close(st), 0);
}

struct delta {
	long long fsyncs, fdatasyncs;
};

static struct ds_store_counters snap;

static void mark(struct ds_store *st)
{
	ds_store_counters(st, &snap);
}

static struct delta since(struct ds_store *st)
{
	struct ds_store_counters now;
	ds_store_counters(st, &now);
	return (struct delta){ (long long)(now.fsyncs - snap.fsyncs),
			       (long long)(now.fdatasyncs - snap.fdatasyncs) };
}

#define CHECK_SYNCS(st, fs, fds)                                                            \
	do {                                                                               \
		struct delta d_ = since(st);                                               \
		CHECK_EQ(d_.fsyncs, fs);                                                   \
		CHECK_EQ(d_.fdatasyncs, fds);                                              \
		mark(st);                                                                  \
	} while (0)

static void sync_contract(const char *dir, enum ds_store_io io)
{
	struct ds_store *st = st_open(dir, false, io);
	struct ds_objid id = st_id(1, 1);
	uint8_t buf[10000];
	st_fill(buf, 0, sizeof(buf), 1);

	mark(st);
	CHECK_EQ(ds_store_create(st, &id, U, U, 0600), 0);
	CHECK_SYNCS(st, 0, 0); /* durable with its first sync */
	CHECK_EQ(st_write(st, &id, U, U, 100, buf, sizeof(buf), DS_UNSTABLE), sizeof(buf));
	CHECK_SYNCS(st, 2, 0); /* its first UNSTABLE write: .meta and directory first */
	CHECK_EQ(st_write(st, &id, U, U, 100, buf, sizeof(buf), DS_UNSTABLE), sizeof(buf));
	CHECK_SYNCS(st, 0, 0);
	CHECK_EQ(st_write(st, &id, U, U, 7, buf, 5000, DS_DATA_SYNC), 5000);
	CHECK_SYNCS(st, 0, 2); /* data, CRCs + header */
	/* a new object's first write stable: the directory with the data */
	struct ds_objid id3 = st_id(3, 7);
	CHECK_EQ(ds_store_create(st, &id3, U, U, 0600), 0);
	CHECK_EQ(st_write(st, &id3, U, U, 0, buf, 5000, DS_DATA_SYNC), 5000);
	CHECK_SYNCS(st, 1, 2);
	CHECK_EQ(st_write(st, &id3, U, U, 0, buf, 5000, DS_DATA_SYNC), 5000);
	CHECK_SYNCS(st, 0, 2);
	CHECK_EQ(ds_store_remove(st, &id3), 0);
	mark(st);
	CHECK_EQ(st_write(st, &id, U, U, 9000, buf, 300, DS_FILE_SYNC), 300);
	CHECK_SYNCS(st, 2, 0);
	CHECK_EQ(ds_store_commit(st, &id, 0, 0), 0);
	CHECK_SYNCS(st, 0, 0); /* stable writes sync the whole object: nothing left */
	CHECK_EQ(st_write(st, &id, U, U, 50000, buf, 1, DS_UNSTABLE), 1);
	CHECK_EQ(ds_store_commit(st, &id, 4096, 8192), 0);
	CHECK_SYNCS(st, 2, 0); /* a range commit syncs (the whole object) */
	CHECK_EQ(ds_store_commit(st, &id, 0, 0), 0);
	CHECK_SYNCS(st, 0, 0); /* nothing written since */
	CHECK_EQ(st_write(st, &id, U, U, 0, buf, 0, DS_FILE_SYNC), 0);
	CHECK_SYNCS(st, 0, 0); /* a zero-length stable write: nothing to sync */
	CHECK_EQ(st_write(st, &id, U, U, 60000, buf, 10, DS_UNSTABLE), 10);
	CHECK_EQ(st_write(st, &id, U, U, 0, buf, 0, DS_DATA_SYNC), 0);
	CHECK_SYNCS(st, 0, 2); /* but it makes earlier UNSTABLE writes durable */
	CHECK_EQ(ds_store_truncate(st, &id, 3000), 0);
	CHECK_SYNCS(st, 2, 1); /* the partial last block's CRC, then data and .meta */
	CHECK_EQ(ds_store_truncate(st, &id, 8192), 0);
	CHECK_SYNCS(st, 2, 0);
	CHECK_EQ(ds_store_setfence(st, &id, U + 1, U, DS_STORE_MODE_KEEP), 0);
	CHECK_SYNCS(st, 0, 1); /* .meta */
	CHECK_EQ(ds_store_remove(st, &id), 0);
	CHECK_SYNCS(st, 1, 0); /* the directory */
	CHECK_EQ(ds_store_close(st), 0);
}

static void restart(const char *dir)
{
	struct ds_store *st = st_open(dir, false, DS_STORE_IO_URING);
	struct ds_objid id = st_id(2, 5);
	uint8_t v1[DS_VERIFIER_SIZE], v2[DS_VERIFIER_SIZE], u1[DS_UUID_SIZE], u2[DS_UUID_SIZE];
	uint8_t buf[20000], back[20000];
	struct ds_obj_stat s1, s2;
	bool eof;

	ds_store_verifier(st, v1);
	ds_store_uuid(st, u1);
	CHECK_EQ(ds_store_create(st, &id, 11, 22, 0640), 0);
	st_fill(buf, 0, sizeof(buf), 2);
	CHECK_EQ(st_write(st, &id, 11, 22, 3, buf, sizeof(buf), DS_UNSTABLE), sizeof(buf));
	CHECK_EQ(ds_store_truncate(st, &id, 15000), 0);
	CHECK_EQ(st_write(st, &id, 11, 22, 17, buf, 33, DS_UNSTABLE), 33);
	CHECK_EQ(ds_store_stat(st, &id, &s1), 0);
	CHECK_EQ(ds_store_close(st), 0);

	st = st_open(dir, false, DS_STORE_IO_URING);
	ds_store_verifier(st, v2);
	ds_store_uuid(st, u2);
	CHECK(memcmp(v1, v2, sizeof(v1)) != 0);
	CHECK(memcmp(u1, u2, sizeof(u1)) == 0);
	CHECK_EQ(ds_store_stat(st, &id, &s2), 0);
	CHECK_EQ(s2.size, 15000);
	CHECK_EQ(s2.size, s1.size);
	CHECK_EQ(s2.uid, 11);
	CHECK_EQ(s2.gid, 22);
	CHECK_EQ(s2.mode, 0640);
	CHECK_EQ(s2.mtime.tv_sec, s1.mtime.tv_sec);
	CHECK_EQ(s2.mtime.tv_nsec, s1.mtime.tv_nsec);
	CHECK_EQ(s2.change, s1.change); /* a clean restart keeps it */
	CHECK_EQ(ds_store_read(st, &id, 11, 22, 0, sizeof(back), back, &eof), 15000);
	CHECK(eof);
	CHECK(back[0] == 0 && back[1] == 0 && back[2] == 0);
	CHECK(memcmp(back + 3, buf, 14) == 0);
	CHECK(memcmp(back + 17, buf, 33) == 0);
	CHECK(memcmp(back + 50, buf + 47, 15000 - 50) == 0);
	CHECK_EQ(ds_store_close(st), 0);
}

/* A child opens the store, runs fn, and exits without closing it. */
static void crash_child(const char *dir, void (*fn)(struct ds_store *, int), int fd)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct ds_store *st = st_open(dir, false, DS_STORE_IO_URING);
		fn(st, fd);
		_exit(0);
	}
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void child_work(struct ds_store *st, int fd)
{
	struct ds_objid id = st_id(3, 1);
	struct ds_obj_stat sb;
	uint8_t buf[8192];
	st_fill(buf, 0, sizeof(buf), 3);
	CHECK_EQ(st_write(st, &id, U, U, 0, buf, 4096, DS_UNSTABLE), 4096);
	CHECK_EQ(ds_store_commit(st, &id, 0, 0), 0);
	CHECK_EQ(st_write(st, &id, U, U, 4096, buf + 4096, 4096, DS_FILE_SYNC), 4096);
	CHECK_EQ(st_write(st, &id, U, U, 8192, buf, 100, DS_UNSTABLE), 100); /* may be lost */
	CHECK_EQ(ds_store_stat(st, &id, &sb), 0);
	ds_store_verifier(st, buf);
	CHECK(write(fd, &sb.change, sizeof(sb.change)) == sizeof(sb.change));
	CHECK(write(fd, buf, DS_VERIFIER_SIZE) == DS_VERIFIER_SIZE);
}

static void crash(const char *dir)
{
	struct ds_store *st = st_open(dir, false, DS_STORE_IO_URING);
	struct ds_objid id = st_id(3, 1);
	struct ds_obj_stat s0, s1;
	uint8_t buf[8192], want[8192], cv[DS_VERIFIER_SIZE], v[DS_VERIFIER_SIZE];
	uint64_t child_change;
	bool eof;
	int p[2];

	CHECK_EQ(ds_store_create(st, &id, U, U, 0600), 0);
	CHECK_EQ(ds_store_stat(st, &id, &s0), 0);
	CHECK_EQ(ds_store_close(st), 0);

	CHECK(pipe(p) == 0);
	crash_child(dir, child_work, p[1]);
	CHECK(read(p[0], &child_change, sizeof(child_change)) == sizeof(child_change));
	CHECK(read(p[0], cv, sizeof(cv)) == sizeof(cv));
	close(p[0]);
	close(p[1]);

	st = st_open(dir, false, DS_STORE_IO_URING);
	ds_store_verifier(st, v);
	CHECK(memcmp(v, cv, sizeof(v)) != 0);
	CHECK_EQ(ds_store_stat(st, &id, &s1), 0);
	CHECK(s1.size >= 8192); /* committed and FILE_SYNC data is there */
	CHECK_EQ(ds_store_read(st, &id, U, U, 0, 8192, buf, &eof), 8192);
	st_fill(want, 0, sizeof(want), 3);
	CHECK(memcmp(buf, want, sizeof(buf)) == 0);
	/* never a value handed out before the crash */
	CHECK(s1.change != s0.change);
	CHECK(s1.change != child_change);
	CHECK(s1.change > child_change);
	/* and it keeps moving on from there */
	CHECK_EQ(st_write(st, &id, U, U, 0, want, 10, DS_UNSTABLE), 10);
	struct ds_obj_stat s2;
	CHECK_EQ(ds_store_stat(st, &id, &s2), 0);
	CHECK(s2.change != s1.change && s2.change != child_change);
	CHECK_EQ(ds_store_close(st), 0);
}

/*
 * A create whose names and header never reached the disk before a crash
 * (an object made and not yet written: its first write syncs them): the
 * .meta can come back empty (its header still in the page cache when the
 * rename was journaled).  The object is then absent, as if never
 * created (nothing of it was acknowledged durable), never an object that
 * fails with EIO; it can be created again.  The crash is staged by
 * emptying the .meta of an object created and never synced.
 */
static void unsynced_create(const char *dir)
{
	struct ds_store *st = st_open(dir, false, DS_STORE_IO_URING);
	struct ds_objid id = st_id(4, 1), kept = st_id(5, 1);
	struct ds_obj_stat sb;
	char p[PATH_MAX], data[PATH_MAX];
	CHECK_EQ(ds_store_create(st, &id, U, U, 0600), 0); /* and never written */
	st_obj_path(dir, &id, "", data, sizeof(data));
	CHECK_EQ(ds_store_create(st, &kept, U, U, 0600), 0);
	CHECK_EQ(st_write(st, &kept, U, U, 0, "kept", 4, DS_FILE_SYNC), 4);
	CHECK_EQ(ds_store_close(st), 0);
	st_obj_path(dir, &id, ".meta", p, sizeof(p));
	CHECK_EQ(truncate(p, 0), 0);

	st = st_open(dir, false, DS_STORE_IO_URING);
	CHECK_EQ(ds_store_stat(st, &id, &sb), -ENOENT);
	CHECK(access(p, F_OK) != 0);
	CHECK(access(data, F_OK) != 0);
	CHECK_EQ(ds_store_create(st, &id, U, U, 0600), 0);
	CHECK_EQ(ds_store_stat(st, &id, &sb), 0);
	CHECK_EQ(sb.size, 0);
	/* a synced object beside it is untouched */
	uint8_t b[4];
	bool eof;
	CHECK_EQ(ds_store_read(st, &kept, U, U, 0, 4, b, &eof), 4);
	CHECK(!memcmp(b, "kept", 4));
	/* a damaged header that is not empty is still an error, not absent */
	st_obj_path(dir, &kept, ".meta", p, sizeof(p));
	CHECK_EQ(ds_store_close(st), 0);
	int fd = open(p, O_WRONLY);
	CHECK(fd >= 0);
	CHECK(pwrite(fd, "X", 1, 40) == 1);
	close(fd);
	st = st_open(dir, false, DS_STORE_IO_URING);
	CHECK_EQ(ds_store_stat(st, &kept, &sb), -EIO);
	CHECK_EQ(ds_store_close(st), 0);
}

int main(void)
{
	st_tmp_make();
	sync_contract(st_subdir("sync-uring"), DS_STORE_IO_URING);
	sync_contract(st_subdir("sync-psync"), DS_STORE_IO_PSYNC);
	synced_files(st_subdir("sync-files"));
	restart(st_subdir("restart"));
	crash(st_subdir("crash"));
	unsynced_create(st_subdir("unsynced-create"));
	return 0;
}
