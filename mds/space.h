/* SPDX-License-Identifier: MIT */
/*
 * Space accounting (mds/space.c): a regular file's space_used
 * (FATTR4_SPACE_USED, RFC 8881 §5.8.2; st_blocks and du on the Linux
 * client) is the bytes its objects take on the data servers: the sum of
 * braid_ctl STAT's st_used (data and CRC table) over every object of the
 * file, each mirror counted, since each copy is storage the cluster spends,
 * and, for an erasure-coded file, its parity objects on their holders
 * (raw bytes: data plus parity; its logical bytes are its size).
 *
 * GETATTR reads the value recorded in the store (mds_attr.space_used) and
 * never calls a data server.  The value is brought up to date in the
 * background: whoever learns that a file's data changed (a WRITE, COMMIT,
 * ALLOCATE or DEALLOCATE through the MDS, a LAYOUTCOMMIT, an RW layout
 * returned or revoked, the CLOSE of an open for writing, a truncation, a
 * size reconciled after a restart) calls mds_space_note(), which queues
 * the inode and returns at once.  One thread takes each inode after it
 * has waited MDS_SPACE_SETTLE_MS (so a burst of writes costs one round of
 * STATs), STATs its objects and records the sum, moving neither change
 * nor ctime (MDS_SET_SPACE_USED alone, mds/store.h).  A round takes, with
 * the inode due, those due within the next MDS_SPACE_BATCH_MS (up to 256)
 * and records their sums together: one store commit per round, not one
 * per file written, beside the clients' own commits.
 *
 * Bounds: at most MDS_SPACE_QUEUE_MAX inodes wait (one entry per inode:
 * a note for an inode already waiting changes nothing); a note beyond that
 * is dropped and counted.  A file whose data server is down, or does not
 * answer, keeps its value and is tried again every MDS_SPACE_RETRY_MS, at
 * most MDS_SPACE_TRIES times in all; then it keeps its value until its
 * next change.
 *
 * Counters (braid-mds metrics): braid_mds_space_updates_total (files
 * whose usage was summed), braid_mds_space_retries_total,
 * braid_mds_space_dropped_total (notes dropped, files given up), and the
 * gauge braid_mds_space_queued.
 *
 * Errors: 0 or -errno.
 */
#ifndef BRAID_MDS_SPACE_H
#define BRAID_MDS_SPACE_H

#include <stddef.h>
#include <stdint.h>

struct braid_mds;

#define MDS_SPACE_QUEUE_MAX 65536
#define MDS_SPACE_SETTLE_MS 250
#define MDS_SPACE_BATCH_MS  100
#define MDS_SPACE_RETRY_MS  5000
#define MDS_SPACE_TRIES	    12

/* The module's state and its thread (after the store and mds/dsreg.c). */
int mds_space_init(struct braid_mds *mds, char *msg, size_t msglen);
/* The thread stops (a round in progress ends first); notes are ignored
 * from here on. */
void mds_space_stop(struct braid_mds *mds);
/* After everything that may note has stopped. */
void mds_space_release(struct braid_mds *mds);

/* ino's data may have changed: its space_used is summed again soon.
 * Never blocks (a leaf lock); any thread, any lock held. */
void mds_space_note(struct braid_mds *mds, uint64_t ino);

/*
 * Now, in the calling thread: STAT ino's objects and record the sum (when
 * it differs).  0 also for an inode gone or not a regular file; -EAGAIN
 * when a data server of the file is down; other -errno from the calls.
 */
int mds_space_update(struct braid_mds *mds, uint64_t ino);

#endif
