/* SPDX-License-Identifier: MIT */
/* Internals of braid-ds shared by ds.c, nfs3.c, nfs41.c and ctl_svc.c. */
#ifndef BRAID_DATASERVER_DS_IMPL_H
#define BRAID_DATASERVER_DS_IMPL_H

#include <pthread.h>
#include <stdatomic.h>

#include "dataserver/ds.h"
#include "ctl/fh.h"
#include "dataserver/store.h"
#include "nfsd/auth_braid.h"
#include "nfsd/metrics.h"
#include "nfsd/rpc.h"

/*
 * Aligned I/O buffers for READ replies: a READ fills one, the reply
 * references it, and the request's on_free hook gives it back after the
 * reply is sent.  Guarded by mu.
 */
struct ds_bufpool {
	pthread_mutex_t mu;
	void **free;
	unsigned nfree, cap;
	size_t size;
	/* set once serving: each buffer is registered with its RDMA devices
	 * for its life (nfsd_server_rdma_register), so RDMA Write sends a
	 * READ's data from it */
	struct nfsd_server *srv;
};

struct braid_ds {
	struct ds_settings set;
	struct braid_key key;
	struct ds_store *store;
	struct nfsd_server *srv;
	struct braid_auth *auth;
	struct nfsd_gss *gss; /* RPCSEC_GSS, with [ds] keytab; else NULL */
	struct nfsd_program nfs3_prog, ctl_prog; /* nfs3_prog: NFS v3 and v4 */
	struct nfsd_version nfs_vers[2];
	struct ds_bufpool bufs;
	uint8_t uuid[DS_UUID_SIZE];
	uint64_t fsid;
	unsigned nports;
	int ports[CONF_ADDRS_MAX];
	struct nfs41_server *v41;
	char so_owner[64]; /* server_owner and scope: "braid-ds:" + uuid */
	/* MDS registration: the thread owns these, others read ds_id */
	pthread_t reg_thread;
	bool reg_running;
	pthread_mutex_t reg_mu; /* guards reg_stop and reg_kick with reg_cond */
	pthread_cond_t reg_cond;
	bool reg_stop;
	bool reg_kick; /* heartbeat now: the store's fullness changed */
	_Atomic bool short_reported; /* the last HEARTBEAT said lowspace or full */
	_Atomic uint32_t ds_id;
	/* background scrub */
	pthread_t scrub_thread;
	bool scrub_running;
	/* metrics (nfsd/metrics.h), served at [ds] metrics_listen */
	struct nfsd_metrics *metrics;
	struct nfsd_metrics_http *metrics_http;
	_Atomic uint64_t heartbeats, heartbeat_failures; /* the registration thread's */
	struct ds_mover *mover;				 /* COPY (mover.c) */
};

extern const struct nfsd_program ds_nfs3_program;
extern const struct nfsd_program ds_ctl_program;
extern struct nfsd_proc ds_nfs3_procs[22];
#define DS_CTL_NPROCS 10 /* braid_ctl.x procedures, NULL to COPY */
extern struct nfsd_proc ds_ctl_procs[DS_CTL_NPROCS];

/*
 * mover.c: COPY, this data server copying an object from another one.
 * ds_mover_new sets ds->mover (after ds->metrics exists); ds_mover_free
 * after the RPC server is freed (no COPY runs).
 */
struct ds_mover;
int ds_mover_new(struct braid_ds *ds);
void ds_mover_free(struct ds_mover *m);
int ds_mover_copy_proc(struct nfsd_req *req, void *args, void *res);

/* nfs41.c: the NFSv4.1 data-server program (NULL when it cannot start). */
int ds_nfs41_start(struct braid_ds *ds, char *msg, size_t msglen);
void ds_nfs41_stop(struct braid_ds *ds);

/*
 * The NFS status of a store error.  nfsstat3 and nfsstat4 share the numbers
 * of every status used here (RFC 1813 §2.6, RFC 8881 §15.1; NFS3ERR_JUKEBOX
 * is NFS4ERR_DELAY), so this one map serves both versions.
 */
uint32_t ds_nfs_status(int err);

/* fileid of an object: the same for NFSv3 and NFSv4. */
uint64_t ds_obj_fileid(const struct ds_objid *id);

/*
 * READ and WRITE as both versions do them, as uid:gid (the caller's ids,
 * ds_req_ids, or those a capability grants, dataserver/nfs41.c), checked
 * against the object's owner, group and mode (the fence).  READ reads up
 * to max_io bytes into a pooled buffer that req holds until its reply is
 * sent; a zero count checks the object and answers eof.  WRITE refuses
 * more than max_io bytes or an unknown stable_how (-EINVAL).
 */
int ds_io_read(struct braid_ds *ds, struct nfsd_req *req, const struct ds_objid *id,
	       uint32_t uid, uint32_t gid, uint64_t off, uint32_t count, xdr_opaque *data,
	       bool *eof);
ssize_t ds_io_write(struct braid_ds *ds, const struct ds_objid *id, uint32_t uid, uint32_t gid,
		    uint64_t off, xdr_opaque data, uint32_t stable);
/* COMMIT: only ids that may write the object (as WRITE: the fence, RFC
 * 8435 §2.2; a READ layout's ids get -EACCES, as a fenced client's). */
int ds_io_commit(struct braid_ds *ds, const struct ds_objid *id, uint32_t uid, uint32_t gid,
		 uint64_t off, uint64_t count);

/* Caller identity for fencing: AUTH_SYS ids, else nobody. */
void ds_req_ids(const struct nfsd_req *req, uint32_t *uid, uint32_t *gid);


void ds_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
