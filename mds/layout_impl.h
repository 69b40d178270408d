/* SPDX-License-Identifier: MIT */
/*
 * Layout state shared by mds/op_layout.c (the operations, devices, error
 * reports; its top comment says how layouts work) and mds/layout_state.c
 * (layout stateids and their ranges, recalls, fencing, device address
 * changes, the background thread).  Nothing outside those two files sees
 * these structures: the rest of the MDS uses mds/layout.h's mds_layout_*.
 *
 * Locking: lo->mu guards every structure below and every field of struct
 * mds_layout not marked constant or the thread's own.  It is held only
 * for in-memory work: never across the store, a data server or a
 * callback.  Functions named *_locked, and every lo_* function unless
 * said otherwise, run with it held.  Lock order: st->mu (op_state.c)
 * before lo->mu; dsreg's and the session layer's locks are leaves.
 */
#ifndef BRAID_MDS_LAYOUT_IMPL_H
#define BRAID_MDS_LAYOUT_IMPL_H

#include <time.h>

#include "layout/policy.h"
#include "mds/layout.h"
#include "mds/mds_impl.h"
#include "nfsd/bytes.h"
#include "nfsd/htab.h"

#define LO_RANGES_MAX  1024 /* held ranges per (state, iomode): more are merged */
#define LO_RECENT      16   /* grants remembered per state (duplicate LAYOUTGETs) */
#define LO_DS_MAX      32   /* data servers one state's layouts name, tracked */
#define LO_CB_PAR      32   /* CB_LAYOUTRECALLs in flight at once */
#define LO_BACKOFF_MIN 100  /* ms between CB_LAYOUTRECALL retries, doubling */
#define LO_BACKOFF_MAX 2000
#define LO_FENCE_RETRY 2000 /* ms between fencing retries */
#define LO_FENCE_TRIES 150  /* about 5 minutes of them */
#define LO_REFENCE_GAP 1000 /* ms: ACCESS reports fence a file at most this often */
#define LO_SCAN_MS     1000 /* device address changes are looked for this often */
#define LO_CL_MARKS    8    /* data servers one client's error reports steer it from */

/* ----------------------------------------------------------- structures */

/* [start, end): end UINT64_MAX stands for "to the end of the file". */
struct lo_range {
	uint64_t start, end;
};
struct lo_ranges {
	struct lo_range *v; /* malloc'd, sorted, disjoint, never touching */
	unsigned n, cap;
};

struct lo_state;

/*
 * A client's own failure mark on a data server, from its error reports:
 * until until_ns its new layouts steer around the server (status NXIO,
 * IO, SERVERFAULT), or its RW LAYOUTGETs of segments there answer the
 * status itself (NOSPC, DQUOT) while no space was freed there since
 * (space_gen, lo_dsmark's).
 */
struct lo_clmark {
	uint32_t ds;
	uint32_t status; /* nfsstat4; 0: free slot */
	uint64_t until_ns;
	uint64_t space_gen;
};

/* A client holding (or having held) layouts: its states and counters. */
struct lo_client {
	struct htab_node h; /* in lo->clients, by nfsd_mix64(id) */
	uint64_t id;	    /* client ID */
	struct lo_state *states;
	struct mds_layout_counters ctr;
	struct lo_clmark marks[LO_CL_MARKS];
};

/* A file with layout state, or one being fenced. */
struct lo_file {
	struct htab_node h; /* in lo->files, by nfsd_mix64(ino) */
	uint64_t ino;
	unsigned pins;	  /* operations and jobs using it besides its states */
	struct lo_state *states;
	bool recall;  /* its layouts are being recalled: LAYOUTGET gets RECALLCONFLICT */
	bool fencing; /* a new fence epoch is being recorded: LAYOUTTRYLATER */
	bool release; /* mds_data_release waits for its layouts to go */
	bool resilver; /* a stale mirror's last pass: RW LAYOUTGET gets LAYOUTTRYLATER */
	uint64_t gen; /* moves at every recall and fence: grants check it */
	uint64_t refence_ns;
	/*
	 * The store's mark (mds_wlayout_mark) that an RW layout of the file
	 * may be out: made durable before the first RW layout is granted,
	 * cleared by the thread once the file has no layout state and no
	 * grant in progress.  A file stays in lo->files while marked.
	 * wpending: marked when the MDS started, its size not yet reconciled
	 * from its data servers; an RW LAYOUTGET does it first (or answers
	 * LAYOUTTRYLATER while a data server of the file is down).
	 */
	enum { LO_WM_NONE, LO_WM_MARKING, LO_WM_MARKED, LO_WM_CLEARING } wmark;
	bool wpending;
};

/* The layout state of one client for one file (RFC 8881 §12.5.3). */
struct lo_state {
	struct htab_node h; /* in lo->sids, by the PRF half of other */
	uint8_t other[NFS4_OTHER_SIZE];
	uint32_t seqid;
	struct lo_client *cl;
	struct lo_file *f;
	struct lo_state *fnext, *cnext;
	struct lo_state *rnext; /* in lo->recalls while recalling */
	uint32_t export_id;	/* the handle it was reached through (recalls) */
	uint64_t igen;
	struct lo_ranges held[2]; /* LAYOUTIOMODE4_READ - 1, LAYOUTIOMODE4_RW - 1 */
	struct lo_grant {	  /* the last LO_RECENT grants, oldest overwritten */
		uint64_t s, e, ns;
		layoutiomode4 iomode;
	} recent[LO_RECENT];
	unsigned recent_next;
	bool had_rw; /* an RW layout was granted: [rw_lo, rw_hi) hulls them */
	bool shrunk; /* its file was cut since (mds_layout_note_shrink) */
	uint64_t rw_lo, rw_hi;
	uint32_t ds[LO_DS_MAX]; /* data servers its layouts named */
	unsigned nds;
	bool ds_overflow;
	/* a recall in progress */
	bool recalling, cb_ok, changed;
	bool cb_busy; /* a CB_LAYOUTRECALL of it is in flight */
	uint64_t deadline_ns, next_ns;
	uint64_t recall_start_ns; /* for the recall-duration metric */
	bool revoked;		  /* lo_state_free: ended by revocation */
	unsigned backoff_ms;
};

/* A device ID handed out, and who asked to be told when it goes. */
struct lo_dev {
	struct lo_dev *next;
	uint8_t id[NFS4_DEVICEID4_SIZE];
	uint32_t ds_id;
	bool stale, recalled;
	uint64_t *clients; /* malloc'd */
	unsigned nclients, cap;
};

/*
 * Per data server: counters and the cluster-wide failure mark (steering),
 * set when two clients report it failing within steer_ns of each other;
 * space_gen moves whenever space is freed there.
 */
struct lo_dsmark {
	uint32_t id;
	uint64_t avoid_until_ns;
	uint64_t reporter, report_ns; /* the last client reporting it failing, when */
	uint64_t space_gen;
	struct mds_layout_counters ctr;
};

/* A file to fence: a new epoch, or (retry) the current one again. */
struct lo_fence {
	struct lo_fence *next;
	uint64_t ino;
	bool apply;
	unsigned attempts;
	uint64_t next_ns;
};

struct lo_release {
	struct lo_release *next;
	uint64_t ino;
};

struct mds_layout {
	struct braid_mds *mds;		  /* constant */
	struct layout_policy dflt;	  /* constant: [mds] layout... */
	uint8_t tag[3];			  /* constant: other[1..3] of this instance */
	struct siphash_key key;		  /* constant: other's PRF, device hashes */
	uint8_t verf[NFS4_VERIFIER_SIZE]; /* constant: GETDEVICELIST cookies */
	uint64_t steer_ns;		  /* constant: how long a failing data server is avoided */
	pthread_mutex_t mu;
	pthread_cond_t cond; /* work for the thread */
	bool stop, kick, running;
	pthread_t thread;
	uint64_t next_sid;
	uint64_t dup_delayed; /* LAYOUTGETs answered DELAY as duplicates */
	uint64_t lgopen_deferred; /* OPENs' LAYOUTGETs of files not yet placed */
	struct htab sids, files, clients;
	struct lo_dev *devs;
	struct lo_dsmark *marks;
	unsigned nmarks, marks_cap;
	struct lo_state *recalls; /* states being recalled (rnext) */
	unsigned cb_inflight;	  /* recall threads running */
	struct lo_fence *fences;
	struct lo_release *releases;
	struct lo_release *wclears;    /* marks to clear (the thread) */
	struct lo_release *reconciles; /* marked at start, sizes to reconcile */
	pthread_cond_t wcv;	       /* a file's wmark left MARKING or CLEARING */
	uint64_t next_scan_ns;	       /* the thread's own */
	uint64_t next_reconcile_ns;    /* the thread's own */
};

/* layout_state.c: with lo->mu held unless said otherwise */

/* A state's ranges: add [s, e) (merged; past LO_RANGES_MAX the nearest
 * widens) or take it away.  0 or -ENOMEM.  No lock needed. */
int lo_ranges_add(struct lo_ranges *r, uint64_t s, uint64_t e);
int lo_ranges_sub(struct lo_ranges *r, uint64_t s, uint64_t e);
bool lo_ranges_cover(const struct lo_ranges *r, uint64_t s, uint64_t e);

/* Clients and files by id; _get makes one (NULL only out of memory). */
struct lo_client *lo_client_find(struct mds_layout *lo, uint64_t id);
struct lo_client *lo_client_get(struct mds_layout *lo, uint64_t id);
struct lo_file *lo_file_find(struct mds_layout *lo, uint64_t ino);
struct lo_file *lo_file_get(struct mds_layout *lo, uint64_t ino);
/* Frees f when nothing holds it (states, pins, a fence, a release). */
void lo_file_put_unused(struct mds_layout *lo, struct lo_file *f);

/* Layout stateids. */
struct lo_state *lo_sid_lookup(struct mds_layout *lo, const uint8_t *other);
struct lo_state *lo_state_of(struct lo_file *f, uint64_t clientid);
struct lo_state *lo_state_new(struct mds_layout *lo, struct lo_client *cl, struct lo_file *f);
void lo_state_bump(struct lo_state *s);
void lo_sid_out(const struct lo_state *s, stateid4 *out);
bool lo_state_holds(const struct lo_state *s);
/* Frees s; then the caller settles its file. */
void lo_state_free(struct mds_layout *lo, struct lo_state *s);
/* After a state of f went: a recall ends, a waiting release runs. */
void lo_file_settle(struct mds_layout *lo, struct lo_file *f);
/*
 * Without lo->mu, f pinned, before an RW grant: the store's mark that f
 * may hold uncounted data made durable (end's 0), or -errno.  In two
 * halves, so that an RW LAYOUTGET's placement commits with the mark (the
 * store applies ops in order: both are durable when the later is): begin
 * submits the mark if the file has none (or waits for another thread's
 * marking), end waits for it.  Every begin is ended before w goes out of
 * scope.
 */
struct lo_wmark_wait {
	struct mds_op op;
	sem_t sem;
	bool started;
};
void lo_wmark_begin(struct mds_layout *lo, struct lo_file *f, struct lo_wmark_wait *w);
int lo_wmark_end(struct mds_layout *lo, struct lo_file *f, struct lo_wmark_wait *w);
bool lo_state_names_ds(const struct lo_state *s, uint32_t id);
void lo_state_note_ds(struct lo_state *s, uint32_t id);

/* Per data server: counters and the failure mark (made on first use). */
struct lo_dsmark *lo_mark_get(struct mds_layout *lo, uint32_t id);
bool lo_ds_avoided(struct mds_layout *lo, uint32_t id, uint64_t now);
/* cl's live mark on data server ds, or NULL; a space mark (NOSPC, DQUOT)
 * lives until space is freed there too. */
const struct lo_clmark *lo_clmark_find(struct mds_layout *lo, const struct lo_client *cl,
				       uint32_t ds, uint64_t now);
/* Mark ds for cl (a free, expired or the oldest slot); true when it was
 * not marked with this status already. */
bool lo_clmark_set(struct mds_layout *lo, struct lo_client *cl, uint32_t ds, uint32_t status,
		   uint64_t now);

/* Work for the thread. */
void lo_kick(struct mds_layout *lo);
void lo_fence_queue(struct mds_layout *lo, uint64_t ino, bool apply, uint64_t at);
void lo_recall_start(struct mds_layout *lo, struct lo_state *s, bool changed, uint64_t now);
/* Every layout of f (-ENOENT: none out). */
int lo_recall_file(struct mds_layout *lo, struct lo_file *f, bool changed);

/* Device IDs handed out (layout/devid.h makes them); lo_dev_watch takes
 * the lock. */
struct lo_dev *lo_dev_get(struct mds_layout *lo, const uint8_t id[NFS4_DEVICEID4_SIZE],
			  uint32_t ds_id);
void lo_dev_watch(struct mds_layout *lo, const uint8_t id[NFS4_DEVICEID4_SIZE], uint32_t ds_id,
		  uint64_t clientid);

/* op_layout.c: [mds] layout, layout_segment_size ... as a policy; -EINVAL
 * and why.  No lock needed. */
int lo_settings_policy(const struct mds_settings *set, struct layout_policy *p, char *why,
		       size_t whylen);

#endif
