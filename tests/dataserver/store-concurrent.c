/* SPDX-License-Identifier: MIT */
/*
 * Many worker threads on one store: writers whose unaligned pieces share
 * blocks (each partial block is read, merged and re-CRCed under its range
 * lock, so no write is lost and no CRC goes stale), readers alongside them
 * that must never see a CRC error or a byte that was not written, writers
 * racing over one range (each WRITE lands whole), and object churn (create,
 * write, read, remove, LIST) through a small open-object cache while scrub
 * runs and reports nothing.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>

#include "tests/dataserver/store-test.h"

#define U       9
#define NW      8
#define PIECE   1000u
#define ROUNDS  150u
#define SPAN    ((uint64_t)NW * PIECE * ROUNDS)

static struct ds_store *st;
static struct ds_objid one = { .gen = 1 };
static atomic_bool writers_done;

static void *interleaved_writer(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;
	uint8_t buf[PIECE];
	for (unsigned k = 0; k < ROUNDS; k++) {
		uint64_t off = ((uint64_t)k * NW + t) * PIECE;
		st_fill(buf, off, PIECE, 0);
		enum ds_stable how = k % 50 == 0 ? DS_FILE_SYNC : DS_UNSTABLE;
		CHECK_EQ(st_write(st, &one, U, U, off, buf, PIECE, how), PIECE);
		if (k % 97 == 0)
			CHECK_EQ(ds_store_commit(st, &one, 0, 0), 0);
	}
	return NULL;
}

/* Every byte read is either not written yet (0) or the pattern. */
static void *checking_reader(void *arg)
{
	uint64_t seed = (uintptr_t)arg * 7919 + 1;
	uint8_t *buf = malloc(70000);
	CHECK(buf);
	unsigned reads = 0;
	while (!atomic_load(&writers_done) || reads < 50) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t off = (seed >> 20) % SPAN;
		size_t len = 1 + (seed >> 44) % 69999;
		bool eof;
		ssize_t n = ds_store_read(st, &one, U, U, off, len, buf, &eof);
		CHECK(n >= 0);
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] && buf[i] != st_pat(off + (uint64_t)i, 0)) {
				fprintf(stderr, "byte %llu: %02x\n", (unsigned long long)off + i,
					buf[i]);
				CHECK(0);
			}
		reads++;
	}
	free(buf);
	return NULL;
}

#define RACE_OFF 5000u
#define RACE_LEN 70000u

static void *racing_writer(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;
	uint8_t *buf = malloc(RACE_LEN);
	CHECK(buf);
	st_fill(buf, RACE_OFF, RACE_LEN, 100 + t);
	for (unsigned k = 0; k < 150; k++)
		CHECK_EQ(st_write(st, &one, U, U, RACE_OFF, buf, RACE_LEN, DS_UNSTABLE), RACE_LEN);
	free(buf);
	return NULL;
}

/* The range is wholly one writer's: WRITEs within a region do not interleave. */
static unsigned race_owner(const uint8_t *buf)
{
	for (unsigned t = 0; t < NW; t++) {
		unsigned i;
		for (i = 0; i < RACE_LEN; i++)
			if (buf[i] != st_pat(RACE_OFF + i, 100 + t))
				break;
		if (i == RACE_LEN)
			return t;
	}
	return NW;
}

static void *race_reader(void *arg)
{
	uint8_t *buf = malloc(RACE_LEN);
	CHECK(buf);
	(void)arg;
	while (!atomic_load(&writers_done)) {
		bool eof;
		CHECK_EQ(ds_store_read(st, &one, U, U, RACE_OFF, RACE_LEN, buf, &eof), RACE_LEN);
		CHECK(race_owner(buf) < NW);
	}
	free(buf);
	return NULL;
}

static void *churn(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;
	uint8_t buf[3000], back[3000];
	for (unsigned k = 0; k < 60; k++) {
		struct ds_objid id = st_id(10000 + t * 1000 + k % 20, 1);
		bool eof;
		int rc = ds_store_create(st, &id, U, U, 0600);
		CHECK_EQ(rc, 0);
		st_fill(buf, k, sizeof(buf), t);
		CHECK_EQ(st_write(st, &id, U, U, k, buf, sizeof(buf), DS_UNSTABLE), sizeof(buf));
		CHECK_EQ(ds_store_read(st, &id, U, U, k, sizeof(back), back, &eof), sizeof(back));
		CHECK(memcmp(buf, back, sizeof(buf)) == 0);
		if (k % 3 == 0)
			CHECK_EQ(ds_store_remove(st, &id), 0);
		if (k % 10 == 0) {
			struct ds_list_entry ents[16];
			uint64_t cookie = 0, next;
			unsigned n;
			for (eof = false; !eof; cookie = next)
				CHECK_EQ(ds_store_list(st, cookie, ents, 16, &n, &next, &eof), 0);
		}
	}
	return NULL;
}

/* Scrub while objects come and go: never a false report. */
static void *scrubber(void *arg)
{
	(void)arg;
	while (!atomic_load(&writers_done)) {
		struct ds_scrub_stats ss;
		CHECK_EQ(ds_store_scrub(st, NULL, NULL, &ss), 0);
		CHECK_EQ(ss.bad_objects, 0);
	}
	return NULL;
}

static void run(const char *dir, bool direct)
{
	struct ds_store_opts o = { .create = true, .direct = direct, .max_open = 8 };
	pthread_t w[NW], r[3];
	uint8_t *buf = malloc(SPAN);
	bool eof;
	CHECK(buf);
	CHECK_EQ(ds_store_open(dir, &o, &st), 0);
	memcpy(one.key, st_id(1, 1).key, DS_KEY_SIZE);
	CHECK_EQ(ds_store_create(st, &one, U, U, 0600), 0);

	atomic_store(&writers_done, false);
	for (unsigned i = 0; i < NW; i++)
		CHECK(pthread_create(&w[i], NULL, interleaved_writer, (void *)(uintptr_t)i) == 0);
	for (unsigned i = 0; i < 3; i++)
		CHECK(pthread_create(&r[i], NULL, checking_reader, (void *)(uintptr_t)i) == 0);
	for (unsigned i = 0; i < NW; i++)
		pthread_join(w[i], NULL);
	atomic_store(&writers_done, true);
	for (unsigned i = 0; i < 3; i++)
		pthread_join(r[i], NULL);
	CHECK_EQ(ds_store_read(st, &one, U, U, 0, SPAN, buf, &eof), SPAN);
	CHECK(eof);
	for (uint64_t i = 0; i < SPAN; i++)
		if (buf[i] != st_pat(i, 0)) {
			fprintf(stderr, "lost byte %llu\n", (unsigned long long)i);
			CHECK(0);
		}

	/*
	 * The range still holds the interleaved writers' pattern, which is no
	 * racer's: give it a racer's whole WRITE first, or a reader that runs
	 * before any racer has written sees a range owned by nobody.
	 */
	st_fill(buf, RACE_OFF, RACE_LEN, 100);
	CHECK_EQ(st_write(st, &one, U, U, RACE_OFF, buf, RACE_LEN, DS_UNSTABLE), RACE_LEN);
	atomic_store(&writers_done, false);
	for (unsigned i = 0; i < NW; i++)
		CHECK(pthread_create(&w[i], NULL, racing_writer, (void *)(uintptr_t)i) == 0);
	for (unsigned i = 0; i < 2; i++)
		CHECK(pthread_create(&r[i], NULL, race_reader, NULL) == 0);
	for (unsigned i = 0; i < NW; i++)
		pthread_join(w[i], NULL);
	atomic_store(&writers_done, true);
	for (unsigned i = 0; i < 2; i++)
		pthread_join(r[i], NULL);
	CHECK_EQ(ds_store_read(st, &one, U, U, RACE_OFF, RACE_LEN, buf, &eof), RACE_LEN);
	CHECK(race_owner(buf) < NW);

	atomic_store(&writers_done, false);
	CHECK(pthread_create(&r[0], NULL, scrubber, NULL) == 0);
	for (unsigned i = 0; i < NW; i++)
		CHECK(pthread_create(&w[i], NULL, churn, (void *)(uintptr_t)i) == 0);
	for (unsigned i = 0; i < NW; i++)
		pthread_join(w[i], NULL);
	atomic_store(&writers_done, true);
	pthread_join(r[0], NULL);
	struct ds_store_counters c;
	ds_store_counters(st, &c);
	CHECK(c.evictions > 0);
	CHECK_EQ(c.crc_errors, 0);

	struct ds_scrub_stats ss;
	CHECK_EQ(ds_store_scrub(st, NULL, NULL, &ss), 0);
	CHECK_EQ(ss.bad_objects, 0);
	unsigned kept = 0; /* of each thread's 20 keys, those not removed by their last k */
	for (unsigned j = 0; j < 20; j++)
		kept += (j + 40) % 3 != 0;
	CHECK_EQ(ss.objects, 1 + NW * kept);
	CHECK_EQ(ds_store_close(st), 0);
	free(buf);
}

int main(void)
{
	const char *tmp = st_tmp_make();
	run(st_subdir("page"), false);
	if (st_direct_possible(tmp))
		run(st_subdir("direct"), true);
	return 0;
}
