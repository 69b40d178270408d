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
	struct ds_ec *ec;				 /* erasure coding (ec.c) */
	/* the client engine reading other data servers (peer.c), made at
	 * first use; peer_mu guards peer_eng */
	pthread_mutex_t peer_mu;
	struct nfsd_server *peer_eng;
};

extern const struct nfsd_program ds_nfs3_program;
extern const struct nfsd_program ds_ctl_program;
extern struct nfsd_proc ds_nfs3_procs[22];
#define DS_CTL_NPROCS 13 /* braid_ctl.x procedures, NULL to DEALLOCATE (not EC_LOCATE) */
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

/*
 * peer.c: reading another data server's objects over NFSv3 READ, as the
 * mover and erasure coding do.  ds_peer_engine: the client engine those
 * reads ride (made at first use, freed by braid_ds_stop); NULL when it
 * cannot start.  ds_peer_connect: a connection to ss, or NULL when none
 * answers within ms (each call on it then has ms too).
 */
struct nfsd_server *ds_peer_engine(struct braid_ds *ds);
struct nfsd_clnt *ds_peer_connect(struct braid_ds *ds, const struct sockaddr_storage *ss,
				  socklen_t sl, unsigned ms);
/* Whether ss is one of the addresses this data server listens on. */
bool ds_addr_is_self(const struct braid_ds *ds, const struct sockaddr_storage *ss);

/*
 * One READ of [off, off + len) of a peer's object into buf (len bytes;
 * DS_STORE_ALIGN-aligned spares a copy), as ds_peer_read sends it.  The
 * caller sets buf and done; done(r) runs on the engine's loop thread once
 * the fields below it are set: rc 0 (a reply), a transport -errno,
 * -EBADMSG (a reply that does not describe its data) or NFSD_CALL_ERR_*;
 * status the nfsstat3; count the bytes placed in buf, eof the reply's.
 */
struct ds_peer_read {
	uint8_t *buf;
	void (*done)(struct ds_peer_read *r);
	uint64_t off;
	uint32_t len;
	size_t sunk; /* bytes the engine placed in buf itself */
	struct nfsd_sink sink;
	int rc;
	uint32_t status;
	uint32_t count;
	bool eof;
};
/* Send it (0, or -errno and done never runs). */
int ds_peer_read(struct nfsd_clnt *c, const uint8_t fh[DS_FH_SIZE], uint32_t uid, uint32_t gid,
		 unsigned timeout_ms, struct ds_peer_read *r, uint64_t off, uint32_t len);

/* Whose a peer call's error is: the peer answered it, the peer did not
 * answer (in time), or this data server's own (memory). */
enum ds_peer_whose { DS_PEER_HERE, DS_PEER_SOURCE, DS_PEER_DOWN };
/* A peer READ's outcome (rc, nfs_status as in ds_peer_read) as a control
 * status: OK, or the error and whose it is. */
int ds_peer_stat(int rc, uint32_t nfs_status, enum ds_peer_whose *whose);
/* A store error as a control status (EEXIST: another generation, STALE). */
int ds_ctl_store_stat(int err);

bool ds_zeros(const uint8_t *p, size_t n);
/*
 * Write buf[0..n) at off of object id as uid/gid (UNSTABLE, write-back
 * started), leaving alone every block that needs no write: one equal to
 * old's (the bytes the object holds there now), or without old (the range
 * reads as zeros) one of zeros.  Adds the bytes written to *written.
 */
int ds_write_sparse(struct ds_store *st, const struct ds_objid *id, uint32_t uid, uint32_t gid,
		    uint64_t off, const uint8_t *buf, size_t n, const uint8_t *old,
		    uint64_t *written);

/*
 * ec.c: erasure coding (braid_ctl.x EC_COMPUTE, and READ through a
 * reconstructing handle, ctl/fh.h DS_FH_EC).  ds_ec_new sets ds->ec
 * (after ds->metrics exists); ds_ec_free after the RPC server is freed.
 */
struct ds_ec;
int ds_ec_new(struct braid_ds *ds);
void ds_ec_free(struct ds_ec *e);
int ds_ec_compute_proc(struct nfsd_req *req, void *args, void *res);
/*
 * READ of the file behind reconstructing handle (id, ino), for the caller of req
 * (its AUTH_SYS ids checked against the file's fence): up to count bytes
 * (and max_io) at off, cut at the end of the segment holding off, into a
 * pooled buffer req holds; *eof when the data reaches the file's end.
 * 0, or -EACCES, -ESTALE, -EIO, -EAGAIN (the MDS busy or unreachable).
 */
int ds_ec_read(struct braid_ds *ds, struct nfsd_req *req, const struct ds_objid *id,
	       uint64_t ino, uint64_t off, uint32_t count, xdr_opaque *data, bool *eof);

/* A pooled READ buffer of max_io bytes that req holds until its reply is
 * sent; NULL when there is no memory. */
void *ds_req_buf(struct braid_ds *ds, struct nfsd_req *req);

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
