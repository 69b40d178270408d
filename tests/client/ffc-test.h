/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the cluster tests of our flexfiles client (tests/client):
 * whole-file writes and checks through ffclient, and a file's object read
 * straight from a data server's store.  Include "config.h" first.
 */
#ifndef BRAID_TESTS_CLIENT_FFC_TEST_H
#define BRAID_TESTS_CLIENT_FFC_TEST_H

#include "tests/mds/mds-ds-test.h"
#include "client/ffclient.h"

/* Open path (created, exclusive, when creat), write buf at off, fsync and
 * close: 0 or the first -errno; *secs the time it all took. */
int ffct_write_sync(struct ffc *c, const char *path, const uint8_t *buf, uint64_t off, size_t len,
		    bool creat, double *secs);

/* path reads back as len bytes of dt_fill's pattern seed. */
void ffct_read_check(struct ffc *c, const char *path, uint64_t len, unsigned seed);

/* The object of ino on data server d, read straight from its store as the
 * file's current fence pair: [0, len) must be the pattern seed, every block
 * passing its CRC. */
void ffct_object_check(struct mt *m, struct cds *d, uint64_t ino, uint64_t len, unsigned seed);

/* The inode of name in directory dir (through the store). */
uint64_t ffct_ino_of(struct mt *m, const char *name, uint64_t dir);

/* A directory made through ffclient at path, with a layout policy
 * ("whole,mirrors=2"); its inode. */
uint64_t ffct_mkdir_policy(struct mt *m, struct ffc *c, const char *path, const char *policy);

#endif
