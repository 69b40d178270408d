/* SPDX-License-Identifier: MIT */
/*
 * braid-mds in the fuzz target's own process (the targets that feed its
 * handlers: fuzz-mds-compound, fuzz-mds-nlm): a scratch directory under
 * /dev/shm (else $TMPDIR, else /tmp) with a cluster key, the exports and
 * the store; the MDS started on it listening on 127.0.0.1:0 with one loop
 * and one worker, no rpcbind, no MOUNT and no grace; then every file of
 * the scratch directory goes at once (the store stays open: LMDB keeps its
 * mapped files), so nothing is left behind however the process ends.
 * Anything failing aborts, naming the target.
 */
#ifndef BRAID_TESTS_FUZZ_MDS_FIXTURE_H
#define BRAID_TESTS_FUZZ_MDS_FIXTURE_H

struct braid_mds;

struct fuzz_mds {
	struct braid_mds *mds;
	char scratch[4096];  /* removed once started */
	char exports[4200];  /* its exports file's path (removed too) */
};

/* NAME names the target in messages and the scratch directory; EXTRA is
 * more [mds] lines ("" for none). */
void fuzz_mds_start(struct fuzz_mds *f, const char *name, const char *exports_text,
		    const char *extra);

#endif
