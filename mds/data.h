/* SPDX-License-Identifier: MIT */
/*
 * File objects (mds/data.c): a regular file's objects on the data servers
 * and the maps that say where each segment of it lives.
 *
 * A regular file's object on a data server is named by
 * (mds_attr.objkey, mds_attr.generation) and owned by the file's fence
 * uid/gid (RFC 8435 §2.2, loosely coupled); its handle is
 * ds_fh_make(&mds->key, id).  One object per (file, data server) holds
 * the file's bytes at the file's own offsets (sparse), whatever the
 * layout policy (layout/policy.h).  Objects are made lazily, when a
 * segment is first laid out (a WRITE, LAYOUTGET, size-extending SETATTR
 * or ALLOCATE reaching it).
 *
 * The maps, in the store's layouts table (keys under the inode):
 *   segment n < MDS_LAYOUT_REC: the data servers of grid segment n, mirror
 *     by mirror (layout_ds_slot); flags 0.
 *   MDS_LAYOUT_REC, the file's record: flags = layout_policy_encode() of
 *     its policy; ds[0] = its fence epoch; ds[1..] = its set of data
 *     servers, in placement order, bit MDS_LAYOUT_CREATED set once the
 *     object there is known to exist, bit MDS_LAYOUT_STALE while the
 *     object there misses writes its mirrors took (a stale mirror: never
 *     read, nor written, until brought up to date); a move (drain,
 *     rebalance) marks the member leaving MDS_LAYOUT_LEAVING and adds the
 *     one taking over, stale, with MDS_LAYOUT_TARGET (in no segment until
 *     the move finishes).  A file with segment 0 and no record
 *     is whole-file on segment 0's data servers, fence epoch 0.
 *   On a directory, MDS_LAYOUT_REC holds the policy new files below it
 *     take (ds[0] = 0, nds = 1): see mds_layout_policy_set().
 *   Keys from MDS_LAYOUT_SEG_END up are records, never segments (a byte
 *   offset below 2^64 in segments of 2^20 or more is below 2^44): the
 *   erasure-coding state and parity holders (mds/ec.h) live there too.
 *
 * Errors: 0 or -errno.
 */
#ifndef BRAID_MDS_DATA_H
#define BRAID_MDS_DATA_H

#include <stdbool.h>
#include <stdint.h>

#include "layout/policy.h"
#include "mds/store.h"

struct braid_mds;
struct ds_objid;

#define MDS_LAYOUT_SEG_END (1ull << 62) /* keys below: segments */
#define MDS_LAYOUT_REC	   (UINT64_MAX - 1)
#define MDS_LAYOUT_CREATED 0x80000000u
#define MDS_LAYOUT_STALE   0x40000000u /* its object missed writes (below) */
#define MDS_LAYOUT_TARGET  0x20000000u /* stale, taking over from the LEAVING one */
#define MDS_LAYOUT_LEAVING 0x10000000u /* its copy moves to the TARGET member */
#define MDS_LAYOUT_ID	   0x0fffffffu /* the data server id of a set entry */

/* The module's state (mds->data: its per-inode object locks); NULL when
 * out of memory. */
struct mds_data *mds_data_new(void);
void mds_data_free(struct mds_data *d);

void mds_data_objid(const struct mds_attr *a, struct ds_objid *id);
/* The synthetic uid/gid that own a file's objects under fence epoch
 * 'epoch' (RW layouts and the MDS's own I/O): layout_fence_creds() of its
 * object under the cluster key (layout/fence.h); a new epoch is a fresh,
 * unrelated pair (mds_data_fence_new).  mds_data_fence() is epoch 0's.
 * mds_data_fence_read(): the ids of READ layouts (read, never write). */
void mds_data_fence_epoch(struct braid_mds *mds, const struct mds_attr *a, uint32_t epoch,
			  uint32_t *uid, uint32_t *gid);
void mds_data_fence(struct braid_mds *mds, const struct mds_attr *a, uint32_t *uid, uint32_t *gid);
void mds_data_fence_read(struct braid_mds *mds, const struct mds_attr *a, uint32_t epoch,
			 uint32_t *uid, uint32_t *gid);

/* What the store says of a file's layout. */
struct mds_file_map {
	struct layout_policy pol; /* recorded, legacy, or [mds]'s default */
	bool recorded;		  /* the MDS_LAYOUT_REC record exists */
	bool laid_out;		  /* it has a set (and maybe segments) */
	uint32_t epoch;		  /* fence epoch */
	unsigned nset;
	uint32_t set[LAYOUT_SET_MAX]; /* with MDS_LAYOUT_CREATED bits */
};
int mds_data_map(struct braid_mds *mds, uint64_t ino, struct mds_file_map *m);
/*
 * Segment n's map of a's file into *seg (and the file's map into *map).
 * -ENOENT when it is not laid out and !create; with create, places it
 * (never on a data server in avoid[0..navoid)) and makes its objects,
 * serialized per inode.  -EAGAIN: not enough data servers up; -ESTALE:
 * the inode is gone; -EINVAL: n past a one-segment policy.
 */
int mds_data_segment(struct braid_mds *mds, const struct mds_attr *a, uint64_t n, bool create,
		     const uint32_t *avoid, unsigned navoid, struct mds_file_map *map,
		     struct mds_layout_seg *seg);
/* Segment 0 (whole-file policies: the file's only segment). */
int mds_data_object(struct braid_mds *mds, const struct mds_attr *a, bool create,
		    struct mds_layout_seg *seg);
/* The object of a's file on data server ds_id is missing (crash between
 * recording and creating it): create it again if the inode lives. */
int mds_data_object_repair(struct braid_mds *mds, const struct mds_attr *a, uint32_t ds_id);
/*
 * A client holding a layout of ino reports NFS4ERR_STALE from data server
 * ds_id (LAYOUTERROR, or a LAYOUTRETURN's ff_ioerr4): the object there is
 * missing.  A data server loses only an object made and never written (a
 * crash between the LAYOUTGET that made it and the first write, see
 * dataserver/store.h), and the stock client answers STALE from an NFSv3
 * data server by asking for the layout again and resending to the same
 * object (ff_layout_async_handle_error_v3: reset to pNFS, in a loop), so
 * the object is made again here, empty, under the file's fence epoch,
 * when no byte below the size can be there: every segment the file has on
 * ds_id starts at or past its size.  0: made again, or there already (a
 * CREATE of an existing object changes nothing).  -EINVAL: ds_id holds no
 * object of the file; -EIO: it is missing and may have held data (said in
 * the log: lost bytes read as an error, never as zeros); 0, and nothing
 * done, for a stale mirror (its resilver makes it) and for an
 * erasure-coded file (its rebuild, mds/ec.h).
 */
int mds_data_object_reported_missing(struct braid_mds *mds, uint64_t ino, uint32_t ds_id);
/*
 * The MDS's own writes to a file's objects (proxied WRITE, ALLOCATE,
 * DEALLOCATE, truncation) hold its gate shared (MDS_GATE_WRITE); a
 * resilver's last pass holds it exclusive (MDS_GATE_FREEZE), so that no
 * such write lands between that pass and the copy's being declared
 * current.  MDS_GATE_OPEN releases either.  Hashed per inode.
 */
enum mds_gate { MDS_GATE_OPEN, MDS_GATE_WRITE, MDS_GATE_FREEZE };
void mds_data_write_gate(struct braid_mds *mds, uint64_t ino, enum mds_gate how);

/* Whether the object of m's file on data server id is stale. */
bool mds_data_map_stale(const struct mds_file_map *m, uint32_t id);
/*
 * The objects of ino's file on data servers ids[0..n) miss writes that
 * their mirrors take (the data server is down, or a client or the MDS
 * cannot write it): mark them stale, durably, before such a write is
 * acknowledged or a layout without them granted.  The store's stale set
 * (mds_stale_mark) first, then the file's record, so a crash between the
 * two leaves a set entry with nothing stale (dropped by the resilver).
 * Refused (-EAGAIN, nothing marked) when some segment would be left with
 * no current copy.  *newly: some were not stale before (the caller
 * recalls the file's layouts, which may name them).
 */
int mds_data_stale_mark(struct braid_mds *mds, uint64_t ino, const uint32_t *ids, unsigned n,
			bool *newly);
/* Data server id's object of ino is current again (resilvered): its bit
 * cleared, and the file leaves the stale set when none is left. */
int mds_data_stale_clear(struct braid_mds *mds, uint64_t ino, uint32_t id);

/*
 * Rebuild: data server 'from' (declared lost) is replaced in ino's file by
 * 'to', a data server the file does not use, whose copy is stale until the
 * resilver makes it from a current mirror.  In order, each durable: to
 * joins the set (stale), the segments naming from name to, from leaves
 * the set; a crash in between leaves a state a retry finishes.  Then the
 * file's layouts are recalled.  0 (also when from is not named);
 * -ENODATA: a segment has no current copy besides from's (its bytes are
 * lost; nothing changed); -EEXIST: to is a current member already.
 */
int mds_data_member_replace(struct braid_mds *mds, uint64_t ino, uint32_t from, uint32_t to);

/*
 * Erasure-coded rebuild (mds/ec.h): segment n's chunk on data server from
 * was made again on to (its object there exists).  In order, each durable:
 * to joins the set (created), segment n names to instead of from.  0 (also
 * when it already names to); -ENOENT: it names neither; -EEXIST: it names
 * both.  mds_data_member_drop(): id leaves the set once no segment names it
 * (-EBUSY while one does); 0 also when it is not in it.
 */
int mds_data_segment_move(struct braid_mds *mds, uint64_t ino, uint64_t n, uint32_t from,
			  uint32_t to);
int mds_data_member_drop(struct braid_mds *mds, uint64_t ino, uint32_t id);
/*
 * A sealed erasure-coded file mirrored while hot (mds/ec.h): every segment
 * recorded with more than one copy keeps mirror 0's only (its data chunk),
 * each record durable in turn; *trimmed: how many changed.  The caller
 * frees the other copies' bytes afterwards.
 */
int mds_data_segments_trim(struct braid_mds *mds, uint64_t ino, unsigned *trimmed);

/*
 * Drain and rebalance: move ino's copy on 'from' to 'to', a data server the
 * file does not use.  _begin (durable): to joins the set, stale and
 * TARGET, from is marked LEAVING, and the file enters the stale set, so
 * the resilver (mds/resilver.h) copies it while clients keep using from;
 * -EEXIST: to is in the set, or from is already moving; -ENOENT: from is
 * not in the set.  _finish, by the resilver after its last pass with the
 * file frozen: the segments naming from name to, to is current and from
 * leaves the set (each durable, in that order: a crash in between leaves a
 * state a retry finishes); *from_out then names the copy to remove.
 */
int mds_data_move_begin(struct braid_mds *mds, uint64_t ino, uint32_t from, uint32_t to);
int mds_data_move_finish(struct braid_mds *mds, uint64_t ino, uint32_t to, uint32_t *from_out);

/* Every data server holding a segment of ino: how many (at most max), or -errno. */
int mds_data_ds_list(struct braid_mds *mds, uint64_t ino, uint32_t *ids, unsigned max);
/*
 * Fencing (RFC 8435 §2.2): a new epoch, recorded, then SETFENCE of its
 * pair on every data server of the file, so I/O with the old pair fails
 * with ACCESS.  -EAGAIN when a data server could not be reached (the
 * caller retries with mds_data_fence_apply, which sets the current pair).
 */
int mds_data_fence_new(struct braid_mds *mds, const struct mds_attr *a, uint32_t *epoch);
int mds_data_fence_apply(struct braid_mds *mds, const struct mds_attr *a);

/*
 * ino's data is no longer needed if it is an orphan (no links) and no
 * client holds it open: remove its data-server objects, then reap the
 * inode.  Called after REMOVE/RENAME unlink a file and after the last CLOSE.
 * Best effort: failures leave it in mds_orphan_list() for a later retry.
 */
void mds_data_release(struct braid_mds *mds, uint64_t ino);
/*
 * The same with the reap off the caller's reply path: REMOVE, RENAME over
 * a file and the last CLOSE remove the objects (so their space is free at
 * once) and hand the orphan to the releaser thread for the reap's commit,
 * so the client waits for the unlink's one durable step and the removals
 * (none for a file never written).  Nothing is lost by a crash or a stop
 * meanwhile: the orphan is in the store, and the sweep below takes it.
 * With the queue full (MDS_DATA_RELEASE_QUEUE), or the thread not
 * running, the caller reaps it itself.
 */
#define MDS_DATA_RELEASE_QUEUE 4096
void mds_data_release_later(struct braid_mds *mds, uint64_t ino);
/* The releaser thread: started once the data-server registry is, stopped
 * (what is queued is left to the next start's sweep) before it goes. */
int mds_data_releaser_start(struct braid_mds *mds);
void mds_data_releaser_stop(struct braid_mds *mds);
/* The later retry: mds_data_release() of each orphan (a batch at a time),
 * until stop(arg) is true.  The data-server thread (dsreg.c) calls it. */
void mds_data_orphan_sweep(struct braid_mds *mds, bool (*stop)(void *arg), void *arg);
/* SETATTR changed the size of ino from old to new: truncate its objects. */
int mds_data_truncate(struct braid_mds *mds, const struct mds_attr *attr, uint64_t old_size);
/*
 * A file written through RW layouts before the MDS stopped: its size moves
 * up to the end of its data servers' objects if that is past it (mtime and
 * change move with it).  0 when done (or the file is gone); -errno, e.g.
 * a data server not up yet, to try again later.
 */
int mds_data_size_reconcile(struct braid_mds *mds, uint64_t ino);
/* The end of ino's data on its data servers: the largest of its objects'
 * sizes (none: 0).  -errno when a data server cannot say. */
int mds_data_objects_end(struct braid_mds *mds, const struct mds_attr *at, uint64_t *end);

#endif
