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

/* Removes the scratch directory (st_tmp_make() registers it with atexit). */
void st_tmp_cleanup(void);

/* A fresh scratch directory under $TMPDIR or /tmp, removed at exit. */
const char *st_tmp_make(void);

/* A subdirectory of the scratch directory, for one store. */
const char *st_subdir(const char *name);

/* Object id n, generation gen. */
struct ds_objid st_id(uint32_t n, uint64_t gen);

/* The byte a pattern puts at object offset x. */
static inline uint8_t st_pat(uint64_t x, unsigned seed)
{
	return (uint8_t)(x * 131 + seed * 71 + (x >> 12) * 17 + 1);
}

/* n bytes of the pattern from object offset off. */
void st_fill(uint8_t *p, uint64_t off, size_t n, unsigned seed);

/* A store in dir, created if need be; the test fails if it does not open. */
struct ds_store *st_open(const char *dir, bool direct, enum ds_store_io io);

/* ds_store_write() of one buffer. */
ssize_t st_write(struct ds_store *st, const struct ds_objid *id, uint32_t uid, uint32_t gid,
		 uint64_t off, const void *buf, size_t len, enum ds_stable how);

/* The path of an object's data file (suffix "" or ".meta"), found by name. */
void st_obj_path(const char *dir, const struct ds_objid *id, const char *suffix, char *out,
		 size_t outlen);

/* Overwrite bytes of a file behind the store's back (through the page cache). */
void st_poke(const char *path, uint64_t off, const void *buf, size_t len);

/*
 * Overwrite bytes of an open file on the disk itself, as a failing disk
 * changes them: the file synced, then the blocks around the bytes
 * rewritten with O_DIRECT, which drops their pages from the page cache
 * (mapped ones too), so the next read of them is the disk's.  Skips the
 * test (77) where the file system refuses O_DIRECT.
 */
void st_poke_disk(int fd, uint64_t off, const void *buf, size_t len);

/* Whether the scratch filesystem takes O_DIRECT; prints why not. */
bool st_direct_possible(const char *dir);

/*
 * A mount namespace of this process's own (as root, or in a user namespace
 * where the kernel allows one), so that filesystems it mounts (a small
 * tmpfs for a store) are seen by nobody else and go when it exits.  Call
 * it before any thread starts.  Skips the test (77) when neither works.
 */
void st_private_mounts(void);

#endif
