/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the delegation tests (mds/deleg.c): clients whose back
 * channel answers CB_RECALL and CB_RECALL_ANY and records them, one record
 * per client, and the operations that conflict with a delegation.
 *
 * Include "config.h", "tests/mds/mds-test.h" and "tests/mds/state-test.h"
 * before this header.
 */
#ifndef BRAID_TESTS_MDS_DELEG_TEST_H
#define BRAID_TESTS_MDS_DELEG_TEST_H

#include <pthread.h>
#include <stdatomic.h>

#define DT_CLIENTS 4
#define DT_CBPROG  0x40000000u

enum dt_cb_mode {
	DT_CB_OK = 0,	 /* CB_RECALL answered NFS4_OK (the test returns it, or not) */
	DT_CB_DELAY = 1, /* NFS4ERR_DELAY */
};

/* What one client's back channel saw (written on the client engine's loop). */
struct dt_cb {
	atomic_int recalls, recall_anys, nulls;
	atomic_int mode;
	pthread_mutex_t mu;
	stateid4 last_sid; /* of the last CB_RECALL */
	bool last_truncate;
	uint8_t last_fh[NFS4_FHSIZE];
	uint32_t last_fh_len;
	uint32_t any_keep, any_mask; /* of the last CB_RECALL_ANY */
};
extern struct dt_cb dt_cbs[DT_CLIENTS];

/* A connection whose back channel records into dt_cbs[i]. */
struct nfsd_clnt *dt_conn(struct mt *t, unsigned i);

/* A connection with a back channel recording into dt_cbs[i], and an AUTH_SYS
 * root session on it for owner; RECLAIM_COMPLETE unless noreclaim. */
struct nfs41c_session *dt_session(struct mt *t, const char *owner, unsigned i,
				  struct nfsd_clnt **conn, bool noreclaim);

/* Waits (up to secs) for *counter to reach at least n. */
void dt_wait(atomic_int *counter, int n, double secs);

/* OPEN of name in the root for reading, with extra share_access bits
 * (OPEN4_SHARE_ACCESS_WANT_*): OPEN's status. */
nfsstat4 dt_open_read(struct nfs41c_session *s, const char *owner, const char *name, uint32_t want,
		      struct ts_openres *out);
/* Creates name in the root (opened for both, then closed): its handle. */
void dt_create(struct nfs41c_session *s, const char *name, struct ts_fh *fh);

/* SEQUENCE + ops: the status of the last op (or of the COMPOUND). */
nfsstat4 dt_run(struct nfs41c_session *s, const nfs_argop4 *ops, unsigned n);

nfsstat4 dt_delegreturn(struct nfs41c_session *s, const struct ts_fh *f, const stateid4 *sid);
/* SETATTR of mode alone (the anonymous stateid). */
nfsstat4 dt_chmod(struct nfs41c_session *s, const struct ts_fh *f, int mode);
nfsstat4 dt_remove(struct nfs41c_session *s, const char *name);
nfsstat4 dt_rename(struct nfs41c_session *s, const char *from, const char *to);
nfsstat4 dt_link(struct nfs41c_session *s, const struct ts_fh *f, const char *name);
/* SEQUENCE alone (renews the lease): sr_status_flags. */
uint32_t dt_seq_flags(struct nfs41c_session *s);

/* The last CB_RECALL of client i names sid (whole) and f. */
void dt_check_recall(unsigned i, const stateid4 *sid, const struct ts_fh *f);

#endif
