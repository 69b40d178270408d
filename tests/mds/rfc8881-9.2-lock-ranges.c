/* SPDX-License-Identifier: MIT */
/*
 * Byte-range lock semantics (RFC 8881 §9.2, §9.3, §18.10-18.12, §18.38)
 * against a byte-by-byte model: two clients lock, unlock (any sub-range,
 * "to EOF" included), test and free at random over a small file.  Every
 * LOCK and LOCKT must be granted exactly when the model has no conflicting
 * byte; a denial must name a lock the model has, as one maximal range (so
 * touching ranges of an owner were merged and LOCKU split them right); and
 * FREE_STATEID must say NFS4ERR_LOCKS_HELD exactly when the model holds a
 * byte for that owner.
 */
#include "config.h"

#include "tests/mds/mds-test.h"
#include "tests/mds/state-test.h"

#define N     48 /* bytes modelled; byte N stands for [N, EOF) */
#define STEPS 5000

static int model[2][N + 1]; /* 0: unlocked, READ_LT, WRITE_LT */

static bool conflicts(int other, uint64_t from, uint64_t to, int type)
{
	for (uint64_t b = from; b <= to; b++)
		if (model[other][b] && (type == WRITE_LT || model[other][b] == WRITE_LT))
			return true;
	return false;
}

/* The denial names one maximal range of the other owner's, of its type. */
static void check_denied(int other, const struct ts_denied *d)
{
	CHECK(d->offset <= N);
	uint64_t end = d->length == UINT64_MAX ? N + 1 : d->offset + d->length;
	CHECK(end <= N + 1);
	for (uint64_t b = d->offset; b < end; b++)
		CHECK_EQ(model[other][b], d->type);
	if (d->offset > 0)
		CHECK(model[other][d->offset - 1] != d->type);
	if (end <= N)
		CHECK(model[other][end] != d->type);
}

int main(void)
{
	struct mt t;
	mt_start(&t, "/ *(rw,no_root_squash,insecure)\n", NULL);
	struct nfs41c_session *s[2] = {ts_session(&t, "ranges-a", 0, 0),
				       ts_session(&t, "ranges-b", 0, 0)};
	struct ts_openres o[2];
	CHECK_EQ(ts_open_name(s[0], NULL, "o", "f", OPEN4_SHARE_ACCESS_BOTH, 0, true, &o[0]),
		 NFS4_OK);
	CHECK_EQ(ts_open_name(s[1], NULL, "o", "f", OPEN4_SHARE_ACCESS_BOTH, 0, false, &o[1]),
		 NFS4_OK);
	const struct ts_fh *f = &o[0].fh;
	stateid4 lock[2];
	bool have[2] = {false, false};
	unsigned seed = 20250101;
	unsigned granted = 0, denied = 0;

	for (int step = 0; step < STEPS; step++) {
		int w = rand_r(&seed) & 1;
		int op = rand_r(&seed) % 4;
		uint64_t off = rand_r(&seed) % N;
		uint64_t len = 1 + rand_r(&seed) % (N - off);
		int type = (rand_r(&seed) & 1) ? WRITE_LT : READ_LT;
		/* a range reaching the end may as well go to EOF */
		bool eof = off + len == N && (rand_r(&seed) & 1);
		uint64_t last = eof ? N : off + len - 1;
		uint64_t wire_len = eof ? UINT64_MAX : len;
		struct ts_denied d;
		stateid4 x;
		nfsstat4 st;

		if (op == 0 || (op == 1 && !have[w])) {
			st = ts_lock(s[w], f, type, false, off, wire_len,
				     have[w] ? &lock[w] : &o[w].sid, have[w] ? NULL : "lo", &x, &d);
			if (conflicts(!w, off, last, type)) {
				CHECK_EQ(st, NFS4ERR_DENIED);
				check_denied(!w, &d);
				denied++;
			} else {
				CHECK_EQ(st, NFS4_OK);
				lock[w] = x;
				have[w] = true;
				for (uint64_t b = off; b <= last; b++)
					model[w][b] = type;
				granted++;
			}
		} else if (op == 1) {
			CHECK_EQ(ts_locku(s[w], f, &lock[w], off, wire_len, &x), NFS4_OK);
			lock[w] = x;
			for (uint64_t b = off; b <= last; b++)
				model[w][b] = 0;
		} else if (op == 2) {
			st = ts_lockt(s[w], f, type, off, wire_len, "lo", &d);
			if (conflicts(!w, off, last, type)) {
				CHECK_EQ(st, NFS4ERR_DENIED);
				check_denied(!w, &d);
			} else {
				CHECK_EQ(st, NFS4_OK);
			}
		} else if (have[w] && rand_r(&seed) % 4 == 0) {
			bool held = false;
			for (int b = 0; b <= N; b++)
				held |= model[w][b] != 0;
			CHECK_EQ(ts_free_stateid(s[w], &lock[w]),
				 held ? NFS4ERR_LOCKS_HELD : NFS4_OK);
			have[w] = held;
		}
	}
	/* the walk saw both outcomes plenty */
	CHECK(granted > STEPS / 10);
	CHECK(denied > STEPS / 20);

	nfs41c_session_destroy(s[0]);
	nfs41c_session_destroy(s[1]);
	mt_finish(&t);
	return 0;
}
