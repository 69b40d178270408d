/* SPDX-License-Identifier: MIT */
/* braid-mds layouts: the operations (mds/op_layout.c) and layout state
 * (mds/layout_state.c; their shared structures are in mds/layout_impl.h),
 * as the rest of the MDS sees them.  What is pure about a layout is
 * layout/'s. */
#ifndef BRAID_MDS_LAYOUT_H
#define BRAID_MDS_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nfs4_prot.h"

struct braid_mds;
struct layout_policy;
struct mds_exports;

/*
 * Layouts (op_layout.c, layout_state.c): LAYOUTGET, LAYOUTCOMMIT,
 * LAYOUTRETURN, GETDEVICEINFO, GETDEVICELIST, LAYOUTSTATS, LAYOUTERROR
 * (RFC 8881 §12, RFC 8435, RFC 7862 §15.6-15.7); layout state, recalls,
 * fencing.
 */
int mds_layout_init(struct braid_mds *mds, char *msg, size_t msglen);
/* Stop the background thread (before the RPC server goes). */
void mds_layout_stop(struct braid_mds *mds);
void mds_layout_release(struct braid_mds *mds);
/* The policy of a file created where no directory names one ([mds] layout...). */
void mds_layout_policy_default(struct braid_mds *mds, struct layout_policy *p);
/*
 * A directory's policy, taken by the files created below it (the nearest
 * directory with one wins; an export's root directory gives the export's).
 * p NULL removes it.  0, -ENOTDIR, -ESTALE, -EINVAL (a bad policy).
 */
int mds_layout_policy_set(struct braid_mds *mds, uint64_t dir, const struct layout_policy *p);
/* The policy a file created in dir takes: 0 and *p, or -ENOENT (the default). */
int mds_layout_policy_inherited(struct braid_mds *mds, uint64_t dir, struct layout_policy *p);
/*
 * Exports with a layout= option (braid-exports(5)): checked (every client
 * entry of an export that gives one gives the same; it parses as a policy,
 * ':' standing for ','), then set as the policy of each such export's root
 * directory.  Exports without one leave their root's policy as it is.
 * 0, or -EINVAL with "file:line: why" in msg (nothing set then).
 */
int mds_layout_exports_apply(struct braid_mds *mds, const struct mds_exports *x, char *msg,
			     size_t msglen);
/*
 * The layout record (segment MDS_LAYOUT_REC) a file OPEN creates in dir
 * takes, written by the create's own transaction (op_state.c): 1 and *rec
 * with dir's inherited policy; 0 when no directory up to the root has one
 * (the [mds] default then applies); -errno when it cannot be read.
 */
int mds_layout_policy_for_create(struct braid_mds *mds, uint64_t dir, struct mds_layout_seg *rec);
/* The client ID ended (op_state.c's client_expired): its layouts go, and
 * files it held RW layouts of are fenced. */
void mds_layout_client_expired(struct braid_mds *mds, uint64_t clientid);
/* Layout stateids alive: (client, file) pairs holding layouts (metrics). */
uint64_t mds_layout_outstanding(struct braid_mds *mds);
/* LAYOUTGETs answered NFS4ERR_DELAY as a duplicate of a grant just made */
uint64_t mds_layout_dup_delayed(struct braid_mds *mds);
/* LAYOUTGETs after an OPEN in its COMPOUND, of a file not yet placed,
 * answered NFS4ERR_LAYOUTTRYLATER (placed at its first write instead) */
uint64_t mds_layout_lgopen_deferred(struct braid_mds *mds);
/* Does the client hold layouts (DESTROY_CLIENTID: CLIENTID_BUSY)? */
bool mds_layout_client_has_state(struct braid_mds *mds, uint64_t clientid);
/*
 * mds_data_release: true while clients hold layouts of ino; they are
 * recalled (fenced when not returned within a lease) and the release runs
 * again afterwards.
 */
bool mds_layout_release_hold(struct braid_mds *mds, uint64_t ino);
/* Whether any client holds a layout (READ or RW) of ino. */
bool mds_layout_held(struct braid_mds *mds, uint64_t ino);
/*
 * CB_LAYOUTRECALL of every layout of a file, or every layout a client
 * holds (braidctl).  Returns at once: the recall proceeds in the
 * background; layouts not returned within a lease are revoked and the
 * file fenced.  0, or -ENOENT when there was nothing to recall.
 */
int mds_layout_recall_file(struct braid_mds *mds, uint64_t ino);
int mds_layout_recall_client(struct braid_mds *mds, uint64_t clientid);

/* TEST_STATEID and FREE_STATEID (op_state.c) of what op_state.c does not
 * know: a layout stateid of this client is NFS4_OK (or _OLD_STATEID),
 * anything else NFS4ERR_BAD_STATEID; FREE_STATEID of one still holding
 * layouts is NFS4ERR_LOCKS_HELD (RFC 8881 §18.38.3). */
nfsstat4 mds_layout_sid_test(struct braid_mds *mds, uint64_t clientid, const stateid4 *sid);
nfsstat4 mds_layout_sid_free(struct braid_mds *mds, uint64_t clientid, const stateid4 *sid);

/*
 * Resilver (mds/resilver.c): while a stale mirror's last pass runs, no RW
 * layout of ino is out.  _begin pins the file, makes RW LAYOUTGETs answer
 * LAYOUTTRYLATER and recalls its layouts; _rw_held says whether any RW
 * layout of it is still out (wait until not); _end lets them go again.
 * _rw_held also tells mds/deleg.c whether a client other than 'but' (0:
 * none) may write it without an open: no read delegation goes out then.
 */
void mds_layout_resilver_begin(struct braid_mds *mds, uint64_t ino);
bool mds_layout_rw_held(struct braid_mds *mds, uint64_t ino, uint64_t but);
/* ino was cut shorter: a LAYOUTCOMMIT through a layout stateid of it
 * granted before may report a write the cut undid (a client's LAYOUTCOMMIT
 * in flight while its truncation ran: Linux under a write delegation), so
 * op_layoutcommit checks such a report against the data servers' objects. */
void mds_layout_note_shrink(struct braid_mds *mds, uint64_t ino);
void mds_layout_resilver_end(struct braid_mds *mds, uint64_t ino);

/*
 * Space was freed on data server ds_id (an object removed or cut there,
 * or its heartbeat says so): clients told NOSPC or DQUOT by it may be laid
 * out there for writing again.
 */
void mds_layout_ds_space_freed(struct braid_mds *mds, uint32_t ds_id);

/* Counters from LAYOUTRETURN (ff_layoutreturn4), LAYOUTERROR and LAYOUTSTATS. */
struct mds_layout_counters {
	uint64_t layoutgets, layoutreturns, recalls, revoked;
	uint64_t dup_delayed;  /* LAYOUTGETs of a range just granted: DELAY */
	uint64_t ioerrors;     /* device errors reported */
	uint64_t ioerr_access; /* of which NFS4ERR_ACCESS (fenced) */
	uint64_t read_ops, read_bytes, write_ops, write_bytes;
};
/* 0 and *out, or -ENOENT (no such client holding layout state). */
int mds_layout_counters_client(struct braid_mds *mds, uint64_t clientid,
			       struct mds_layout_counters *out);
/* Per data server (any id: zeros when nothing was reported). */
void mds_layout_counters_ds(struct braid_mds *mds, uint32_t ds_id, struct mds_layout_counters *out);

#endif
