/* SPDX-License-Identifier: MIT */
/*
 * Scrub of erasure-coded files' parity (mds/ec_scrub.c; issue 19), and
 * the raw and logical space tally.
 *
 * A stripe is scrubbed by EC_COMPUTE with ecc_verify on each of its
 * parity holders (braid_ctl.x): the holder computes the chunk from the k
 * data chunks and compares.  What it can find, and what is done:
 *   - a parity chunk that differs (ecc_mismatch): recomputed (EC_COMPUTE
 *     without verify rewrites the blocks that differ); a mismatch;
 *   - a block that fails its CRC at the parity holder (IO naming the
 *     target): the chunk is recomputed (its failing blocks rewritten
 *     whole);
 *   - a source block that fails its CRC (IO, ecf_chunk = j): chunk j is
 *     rebuilt in place on its own holder from k others (EC_COMPUTE with
 *     target j rewrites the blocks that differ or fail their CRC).
 * Each rewrite is a repair; the stripe is verified again after, up to
 * three rounds.  Rewrites happen under mds_ec_hold (mds/ec.h): no write
 * to the file can begin meanwhile, and a file written since the scrub
 * began is left alone (not sealed: its parity is not in use).
 *
 * The background pass ([mds] ec_scrub_interval; 0: off) starts that long
 * after the previous one started (the first: after braid-mds starts),
 * finds the sealed files with one scan of the layout maps, and scrubs
 * them one after another at most EC_SCRUB_RATE bytes of stripe data a
 * second.  Counters braid_mds_ec_scrub_{stripes,mismatches,repairs,
 * errors}_total; braidctl ec status shows the last pass.
 *
 * The tally (mds_ec_space_tally): the raw bytes (space_used: data and
 * parity objects, mds/space.h) and the logical bytes (sizes) of every
 * regular file with data, and of the erasure-coded ones; gauges
 * braid_mds_space_{raw,logical}_bytes{files="all"|"ec"}, refreshed by the
 * scrub thread every EC_TALLY_MS and by each tally.
 *
 * Errors: 0 or -errno.
 */
#ifndef BRAID_MDS_EC_SCRUB_H
#define BRAID_MDS_EC_SCRUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct braid_mds;

#define EC_SCRUB_RATE (64ull << 20) /* stripe data bytes a second, background */
#define EC_TALLY_MS   60000

/* What a scrub found and did (one file, or a pass). */
struct mds_ec_scrub_res {
	bool sealed;	     /* the file was sealed (else nothing was looked at) */
	uint64_t files;	     /* files scrubbed (a pass) */
	uint64_t stripes;    /* stripes verified */
	uint64_t mismatches; /* parity chunks that differed from their data */
	uint64_t repairs;    /* chunks rewritten (a mismatch or a CRC failure) */
	uint64_t errors;     /* stripes that could not be verified or repaired */
};

int mds_ec_scrub_init(struct braid_mds *mds, char *msg, size_t msglen);
/* The background pass stops (it calls data servers): before dsreg goes. */
void mds_ec_scrub_stop(struct braid_mds *mds);
void mds_ec_scrub_release(struct braid_mds *mds);

/*
 * Scrub ino's file now, in the calling thread (braidctl ec scrub).
 * -EINVAL: not an erasure-coded regular file; a file not sealed gives 0
 * with out->sealed false.  Stripe errors are counted, not returned.
 */
int mds_ec_scrub_file(struct braid_mds *mds, uint64_t ino, struct mds_ec_scrub_res *out);

/* The last background pass: its result, when it started and ended (Unix
 * seconds; 0: none yet), and passes so far. */
struct mds_ec_scrub_pass {
	struct mds_ec_scrub_res res;
	uint64_t started, ended, passes;
	bool running;
};
void mds_ec_scrub_last(struct braid_mds *mds, struct mds_ec_scrub_pass *out);

/* Raw and logical bytes of files with data, and of erasure-coded ones. */
struct mds_ec_space {
	uint64_t files, raw, logical;
	uint64_t ec_files, ec_sealed, ec_raw, ec_logical;
};
int mds_ec_space_tally(struct braid_mds *mds, struct mds_ec_space *out);

#endif
