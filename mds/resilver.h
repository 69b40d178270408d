/* SPDX-License-Identifier: MIT */
/*
 * Resilver (mds/resilver.c): stale mirrors (mds/data.h MDS_LAYOUT_STALE)
 * brought up to date once their data server is up again, copied from a
 * current mirror by the data servers themselves (braid_ctl COPY, the MDS
 * directing; the bytes never pass through the MDS).
 *
 * One thread walks the store's stale set (mds_stale_list) every
 * RESILVER_SCAN_MS, and at once when kicked (a data server registered),
 * and hands the files to [mds] resilver_copies workers, at most
 * resilver_copies_per_ds copies into one data server at once.  For each
 * stale copy whose server is up, whose every segment some current mirror
 * up holds at the same stripe position (objects keep the file's offsets,
 * so the copy is a plan of ranges, each from such a server: several
 * sources where mirrors pair differently per segment):
 *   1. a pass copies the whole object while clients go on writing the
 *      current mirrors (their layouts do not name the stale one);
 *   2. RW LAYOUTGETs of the file answer LAYOUTTRYLATER, its layouts are
 *      recalled, and the MDS's own writes to it wait at its gate
 *      (mds_data_write_gate), until no RW layout of it is out (at most
 *      RESILVER_QUIESCE_MS, else it is tried again later);
 *   3. a second pass copies it again, with nothing writing it, unless the
 *      source's change attribute (STAT) says nobody wrote it since the
 *      first began (a cold file: one pass);
 *   4. the copy is declared current (mds_data_stale_clear), durably, and
 *      the file is let go: new layouts name it again.
 * A failure leaves the copy stale (never read) and is retried at the next
 * scan; a data server a copy to it failed on is skipped for the rest of
 * the scan (a server just gone takes ds_timeout to be counted down, and
 * each call to it would wait out its timeout).  Copies with a segment no
 * current mirror up holds are left stale and logged.
 *
 * [mds] resilver_rate bounds the bytes per second each copy reads from its
 * source (0: no bound), so that a resilver does not starve clients.
 *
 * Drain.  A drained data server (braidctl ds drain) has each copy it holds
 * moved (mds_data_move_begin): a server with room the file does not use
 * joins it, stale, the resilver copies the drained copy there, then, with
 * the file frozen as above, the segments switch to it and the drained
 * copy goes (the drained server first, as the source; a surviving mirror
 * when it is down).  Durable at every step, so a crash of the MDS or of a
 * data server resumes it.
 *
 * Rebuild.  A data server declared lost (braidctl ds lost, or down longer
 * than [mds] ds_lost_after) has every copy it held moved: each scan walks
 * the layout maps (mds_layout_scan) for files naming a lost server and
 * replaces it in each (mds_data_member_replace) by a data server with room
 * the file does not use, whose copy is stale: the resilver above makes it.
 * A file with no surviving copy of some segment is unrecoverable: it stays
 * as it is (its reads fail with EIO, never zeros), is logged with its path
 * once, counted (braid_mds_unrecoverable_files) and listed by braidctl.
 * Sealed erasure-coded files are not copied: the scan finds them by their
 * segments and parity records, and the workers have each chunk on a lost
 * or drained server made again from its stripe (mds/ec.h "Rebuild"); a
 * stripe beyond repair lists the file the same way.
 */
#ifndef BRAID_MDS_RESILVER_H
#define BRAID_MDS_RESILVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct braid_mds;

int mds_resilver_init(struct braid_mds *mds, char *msg, size_t msglen);
/* Stops the thread (it calls data servers): before dsreg goes. */
void mds_resilver_stop(struct braid_mds *mds);
void mds_resilver_release(struct braid_mds *mds);
/* Scan now: a data server came (back). */
void mds_resilver_kick(struct braid_mds *mds);
/*
 * Rebalance (braidctl rebalance): until the data servers taking new data
 * hold about the same bytes (as the layout maps place them), copies move
 * from the fullest to the emptiest, a file at a time, as a drain moves
 * them.  Recorded durably (<store_dir>/rebalance) before returning, so a
 * restart goes on; done when no move would bring the two closer.  0 or
 * -errno of the write.
 */
int mds_resilver_rebalance(struct braid_mds *mds);

/* What braidctl and the metrics show. */
#define MDS_LOST_FILES_MAX 256 /* unrecoverable files listed (paths resolved) */
struct mds_lost_file {
	uint64_t ino;
	uint32_t ds;	/* the lost data server that held its only copy */
	char path[256]; /* "" until resolved; "(unlinked)" when no name leads to it */
};
struct mds_resilver_stats {
	uint64_t lost_servers;	   /* data servers declared lost */
	uint64_t rebuild_files;	   /* files naming a lost server, at the last scan */
	uint64_t moved_files;	   /* copies moved off lost servers (then resilvered) */
	uint64_t stale_bytes;	   /* bytes of the files with a stale copy, last scan */
	uint64_t rate_Bps;	   /* bytes per second copied since copies were owed */
	uint64_t unrecoverable;	   /* files with no surviving copy of some bytes */
	uint64_t stale_files;	 /* files with a stale copy at the last scan */
	uint64_t files_done;	 /* copies made current */
	uint64_t bytes_copied;	 /* bytes the data servers wrote for them */
	uint64_t failures;	 /* passes that failed (retried) */
	uint64_t copies;	 /* copies being made now */
	uint64_t inflight_ino;	 /* a file being copied (0: none) */
	uint32_t inflight_to;	 /* to this data server */
	uint64_t inflight_bytes; /* of its pass so far */
	/* erasure-coded files (mds/ec.h): chunks made again from the others */
	uint64_t ec_files;	/* sealed files with chunks to rebuild, last scan */
	uint64_t ec_chunks;	/* their chunks to rebuild */
	uint64_t ec_bytes_todo; /* those chunks' bytes (a segment each) */
	uint64_t ec_files_done; /* files whose chunks were all rebuilt */
	uint64_t ec_chunks_done; /* chunks rebuilt and recorded */
	uint64_t ec_bytes;	 /* bytes the data servers wrote for them */
};
void mds_resilver_stats(struct braid_mds *mds, struct mds_resilver_stats *out);
/* The unrecoverable files (at most max, paths as far as resolved): how many. */
unsigned mds_resilver_lost_files(struct braid_mds *mds, struct mds_lost_file *out, unsigned max);

#endif
