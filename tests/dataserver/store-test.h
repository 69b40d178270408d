/* SPDX-License-Identifier: MIT */
/* Helpers for the object store tests: a scratch directory, ids, data patterns. */
#ifndef BRAID_TESTS_DATASERVER_STORE_TEST_H
#define BRAID_TESTS_DATASERVER_STORE_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataserver/store.h"
#include "tests/check.h"

static inline int st_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static char st_tmpdir[4096];

static inline void st_tmp_cleanup(void)
{
	if (st_tmpdir[0])
		nftw(st_tmpdir, st_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh scratch directory under $TMPDIR or /tmp, removed at exit. */
static inline const char *st_tmp_make(void)
{
	const char *base = getenv("TMPDIR");
	snprintf(st_tmpdir, sizeof(st_tmpdir), "%s/braid-ds-test-XXXXXX",
		 base && *base ? base : "/tmp");
	CHECK(mkdtemp(st_tmpdir));
	atexit(st_tmp_cleanup);
	return st_tmpdir;
}

/* A subdirectory of the scratch directory, for one store. */
static inline const char *st_subdir(const char *name)
{
	static char path[8][4200];
	static unsigned next;
	char *p = path[next++ % 8];
	snprintf(p, sizeof(path[0]), "%s/%s", st_tmpdir, name);
	CHECK(mkdir(p, 0700) == 0 || errno == EEXIST);
	return p;
}

static inline struct ds_objid st_id(uint32_t n, uint64_t gen)
{
	struct ds_objid id = { .gen = gen };
	for (int i = 0; i < DS_KEY_SIZE; i++)
		id.key[i] = (uint8_t)(n >> (8 * (i % 4)) ^ (i * 37));
	return id;
}

/* The byte a pattern puts at object offset x. */
static inline uint8_t st_pat(uint64_t x, unsigned seed)
{
	return (uint8_t)(x * 131 + seed * 71 + (x >> 12) * 17 + 1);
}

static inline void st_fill(uint8_t *p, uint64_t off, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = st_pat(off + i, seed);
}

static inline struct ds_store *st_open(const char *dir, bool direct, enum ds_store_io io)
{
	struct ds_store_opts o = { .create = true, .direct = direct, .io = io };
	struct ds_store *st = NULL;
	int rc = ds_store_open(dir, &o, &st);
	if (rc)
		fprintf(stderr, "ds_store_open(%s): %s\n", dir, strerror(-rc));
	CHECK(rc == 0);
	return st;
}

static inline ssize_t st_write(struct ds_store *st, const struct ds_objid *id, uint32_t uid,
			uint32_t gid, uint64_t off, const void *buf, size_t len, enum ds_stable how)
{
	struct iovec v = { (void *)buf, len };
	return ds_store_write(st, id, uid, gid, off, &v, 1, how);
}

/* The path of an object's data file (suffix "" or ".meta"), found by name. */
static inline void st_obj_path(const char *dir, const struct ds_objid *id, const char *suffix,
			char *out, size_t outlen)
{
	char pat[4300];
	glob_t g;
	int n = snprintf(pat, sizeof(pat), "%s/objects/*/", dir);
	for (int i = 0; i < DS_KEY_SIZE; i++)
		n += snprintf(pat + n, sizeof(pat) - (size_t)n, "%02x", id->key[i]);
	snprintf(pat + n, sizeof(pat) - (size_t)n, "%s", suffix);
	CHECK(glob(pat, 0, NULL, &g) == 0 && g.gl_pathc == 1);
	snprintf(out, outlen, "%s", g.gl_pathv[0]);
	globfree(&g);
}

/* Overwrite bytes of a file behind the store's back (through the page cache). */
static inline void st_poke(const char *path, uint64_t off, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY);
	CHECK(fd >= 0);
	CHECK(pwrite(fd, buf, len, (off_t)off) == (ssize_t)len);
	close(fd);
}

/* Whether the scratch filesystem takes O_DIRECT; prints why not. */
static inline bool st_direct_possible(const char *dir)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/direct-probe", dir);
	int fd = open(p, O_RDWR | O_CREAT | O_DIRECT, 0600);
	if (fd < 0 && errno == EINVAL) {
		printf("O_DIRECT half skipped: open(O_DIRECT) in %s fails with EINVAL\n", dir);
		return false;
	}
	CHECK(fd >= 0);
	close(fd);
	unlink(p);
	return true;
}

#endif
