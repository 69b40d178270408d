/* SPDX-License-Identifier: MIT */
/*
 * Drain and rebalance move data while clients use it (issue 15 item 4):
 * braid-mds and three braid-ds in this process, files of one copy and of
 * two mirrors.
 *
 *  1. Data server A is drained while a writer thread keeps appending to
 *     every file through its layouts: each of A's copies is copied to a
 *     server the file does not use, the layouts switch with a recall, and
 *     A's copy goes.  At the end no file names A, A holds no object, and
 *     every file reads back as the writer wrote it, checked through the
 *     client and straight from the new servers' stores.
 *  2. 'braidctl ds add' readmits A, empty; rebalance moves files onto it
 *     until its share of the data is near the others'.
 */
#include "config.h"

#include <pthread.h>

#include "tests/client/ffc-test.h"
#include "dataserver/ds.h"
#include "dataserver/store.h"
#include "mds/resilver.h"

#define MiB	(1u << 20)
#define NFILES	12
#define CONF	"heartbeat_interval = 1s\nds_timeout = 3s\n"

static struct mt M;
static struct cds D[3];
static struct ffc *C;
static uint64_t sizes[NFILES];
static const char *paths[NFILES];
static atomic_int stop_writer, appends;

/* Appends 256 KiB to each file in turn, fsynced, until told to stop. */
static void *writer(void *arg)
{
	(void)arg;
	uint8_t *buf = malloc(256 << 10);
	CHECK(buf);
	while (!atomic_load(&stop_writer)) {
		for (unsigned i = 0; i < NFILES && !atomic_load(&stop_writer); i++) {
			dt_fill(buf, sizes[i], 256 << 10, 10 + i);
			double secs;
			CHECK_EQ(ffct_write_sync(C, paths[i], buf, sizes[i], 256 << 10, false, &secs),
				 0);
			sizes[i] += 256 << 10;
			atomic_fetch_add(&appends, 1);
		}
	}
	free(buf);
	return NULL;
}

/* Whether any file's set names id (stale or moving ones included), or any
 * file has a stale member. */
static bool busy(const uint64_t *inos, uint32_t id)
{
	for (unsigned i = 0; i < NFILES; i++) {
		struct mds_file_map m;
		CHECK_EQ(mds_data_map(M.mds, inos[i], &m), 0);
		for (unsigned k = 0; k < m.nset; k++)
			if ((m.set[k] & MDS_LAYOUT_ID) == id || (m.set[k] & MDS_LAYOUT_STALE))
				return true;
	}
	return false;
}

static struct cds *cds_by_id(uint32_t id)
{
	for (unsigned i = 0; i < 3; i++)
		if (D[i].id == id)
			return &D[i];
	CHECK(0);
	return NULL;
}

/* Every file through the client, and each copy from its store. */
static void check_all(const uint64_t *inos)
{
	for (unsigned i = 0; i < NFILES; i++) {
		ffct_read_check(C, paths[i], sizes[i], 10 + i);
		struct mds_file_map m;
		CHECK_EQ(mds_data_map(M.mds, inos[i], &m), 0);
		for (unsigned k = 0; k < m.nset; k++)
			ffct_object_check(&M, cds_by_id(m.set[k] & MDS_LAYOUT_ID), inos[i], sizes[i],
					  10 + i);
	}
}

int main(void)
{
	mt_start(&M, "/ *(rw,no_root_squash,insecure)\n", CONF);
	const char *names[3] = {"ds-a", "ds-b", "ds-c"};
	for (unsigned i = 0; i < 3; i++) {
		cds_prepare(&M, &D[i], names[i], NULL);
		cds_start(&M, &D[i]);
	}
	struct ffc_opts o = {.ds_timeout_ms = 2000};
	int err = 0;
	C = ffc_mount("127.0.0.1", M.port, &o, &err);
	CHECK(C);
	uint64_t one = ffct_mkdir_policy(&M, C, "/one", "whole");
	uint64_t two = ffct_mkdir_policy(&M, C, "/two", "whole,mirrors=2");
	uint64_t inos[NFILES];
	uint8_t *buf = malloc(2 * MiB);
	CHECK(buf);
	for (unsigned i = 0; i < NFILES; i++) {
		char *p = malloc(32);
		CHECK(p);
		snprintf(p, 32, "/%s/f%u", i % 2 ? "two" : "one", i);
		paths[i] = p;
		sizes[i] = MiB + i * 4096;
		dt_fill(buf, 0, sizes[i], 10 + i);
		double secs;
		CHECK_EQ(ffct_write_sync(C, p, buf, 0, sizes[i], true, &secs), 0);
		inos[i] = ffct_ino_of(&M, p + 5, i % 2 ? two : one);
	}
	/* ---- 1. drain A under a writer */
	struct cds *a = &D[0];
	pthread_t w;
	CHECK_EQ(pthread_create(&w, NULL, writer, NULL), 0);
	while (atomic_load(&appends) < NFILES)
		usleep(10 * 1000);
	CHECK_EQ(mds_dsreg_drain(M.mds, a->id, true), 0);
	mds_resilver_kick(M.mds);
	double t0 = cl_now();
	while (busy(inos, a->id)) {
		CHECK(cl_now() - t0 < 60);
		usleep(50 * 1000);
	}
	printf("drained in %.2f s, with %d appends meanwhile\n", cl_now() - t0,
	       atomic_load(&appends));
	atomic_store(&stop_writer, 1);
	pthread_join(w, NULL);
	check_all(inos);
	/* A's objects went with the moves (the orphan sweep may finish one) */
	t0 = cl_now();
	while (ds_store_objects(braid_ds_store(a->ds))) {
		CHECK(cl_now() - t0 < 10);
		usleep(50 * 1000);
	}
	struct mds_resilver_stats rs;
	mds_resilver_stats(M.mds, &rs);
	CHECK(rs.moved_files >= 1);

	/* ---- 2. back in, then rebalanced onto */
	CHECK_EQ(mds_dsreg_drain(M.mds, a->id, false), 0);
	CHECK_EQ(mds_resilver_rebalance(M.mds), 0);
	t0 = cl_now();
	while (!ds_store_objects(braid_ds_store(a->ds)) || busy(inos, 0xffffff)) {
		CHECK(cl_now() - t0 < 60);
		usleep(50 * 1000);
	}
	unsigned on_a = 0;
	for (unsigned i = 0; i < NFILES; i++) {
		struct mds_file_map m;
		CHECK_EQ(mds_data_map(M.mds, inos[i], &m), 0);
		for (unsigned k = 0; k < m.nset; k++)
			on_a += (m.set[k] & MDS_LAYOUT_ID) == a->id;
	}
	printf("rebalanced: %u copies on the readmitted server\n", on_a);
	CHECK(on_a >= 3);
	check_all(inos);

	free(buf);
	ffc_unmount(C);
	for (unsigned i = 0; i < 3; i++)
		cds_stop(&D[i]);
	mt_finish(&M);
	printf("ok\n");
	return 0;
}
