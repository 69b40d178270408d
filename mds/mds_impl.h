/* SPDX-License-Identifier: MIT */
/*
 * braid-mds internals shared by its modules:
 *
 *   mds.c       settings, start/stop, exports, the op table, credentials
 *   fh.c        filehandles
 *   op_attr.c   fattr4 codec; GETATTR SETATTR VERIFY NVERIFY ACCESS;
 *               GETXATTR SETXATTR LISTXATTRS REMOVEXATTR (RFC 8276)
 *   op_dir.c    PUTROOTFH PUTPUBFH PUTFH LOOKUP LOOKUPP CREATE REMOVE RENAME
 *               LINK READLINK READDIR SECINFO SECINFO_NO_NAME
 *   op_state.c  OPEN OPEN_DOWNGRADE CLOSE LOCK LOCKT LOCKU TEST_STATEID
 *               FREE_STATEID RECLAIM_COMPLETE DELEGRETURN; grace; client records
 *   op_io.c     READ WRITE COMMIT (proxied to braid-ds) ALLOCATE DEALLOCATE
 *               SEEK READ_PLUS
 *   dsreg.c     data servers: REGISTER/HEARTBEAT service, placement, objects
 *   mount.c     MOUNT v3 and rpcbind registration
 *   callback.c  CB_NULL and CB_COMPOUND over the clients' back channels
 *   admin.c     braidctl's protocol (nfsd/xdr/braid_admin.x) and the
 *               MDS's metrics collectors
 *   op_layout.c LAYOUTGET LAYOUTCOMMIT LAYOUTRETURN GETDEVICEINFO
 *               GETDEVICELIST LAYOUTSTATS LAYOUTERROR; layout state, recalls,
 *               fencing (policies: layout/policy.c)
 *
 * Error domains: below the protocol line 0 / -errno; op handlers return
 * nfsstat4, converting with mds_nfs4_status() (one table).
 */
#ifndef BRAID_MDS_MDS_IMPL_H
#define BRAID_MDS_MDS_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "nfs4_prot.h"

#include "mds/mds.h"
#include "layout/policy.h"
#include "mds/store.h"
#include "nfsd/auth_braid.h"
#include "mds/exports.h"
#include "nfsd/mac.h"
#include "nfsd/nfs41.h"
#include "nfsd/rpc.h"

struct mds_state; /* op_state.c */
struct mds_dsreg; /* dsreg.c */
struct mds_mount; /* mount.c */
struct mds_cb;    /* callback.c */
struct mds_layout; /* op_layout.c */
struct mds_admin;  /* admin.c */
struct nfsd_metrics;
struct nfsd_metrics_http;

/*
 * Exports, resolved against the namespace.  A snapshot is immutable once
 * published; braid_mds_exports_reload() swaps in a new one and readers hold
 * a reference (mds_exports_get/put) while they use it.
 *
 * Each export path names a directory of Braid's namespace (created at
 * startup, owned by root, mode 0755, when missing).  A filehandle carries
 * the id of the export it was reached through: a 32-bit hash of the path,
 * never 0.  Export id 0 is the pseudo filesystem: when "/" is not exported,
 * PUTROOTFH gives the root with export id 0, and from there LOOKUP may only
 * walk toward an export (RFC 8881 §7); pseudo-fs nodes are read-only.
 */
struct mds_export {
	const struct export_entry *e; /* in ex->ex */
	uint32_t id;
	uint64_t root_ino;
};
struct mds_exports {
	atomic_int ref;
	struct exports *ex;
	struct mds_export *v;
	unsigned n;
};
struct mds_exports *mds_exports_get(struct braid_mds *mds);
void mds_exports_put(struct mds_exports *x);
/* The export with this id, or NULL. */
const struct mds_export *mds_export_by_id(const struct mds_exports *x, uint32_t id);
/* The export whose root is this inode, or NULL. */
const struct mds_export *mds_export_by_root(const struct mds_exports *x, uint64_t ino);
/*
 * The export a directory belongs to: walks parents up to an export root
 * (0 for the pseudo filesystem).  For LOOKUPP and PUTROOTFH; LOOKUP
 * inherits the parent's id unless the child is itself an export root.
 */
uint32_t mds_export_of_dir(struct braid_mds *mds, const struct mds_exports *x, uint64_t dir);
/*
 * exports_match() for a peer, with the peer's host name (a cached reverse
 * lookup) when the export lists clients by name or wildcard.
 */
const struct export_client *mds_exports_match(const struct mds_exports *x, const char *path,
					      const struct sockaddr *peer);
/* Is 'ino' (a directory) on the way from the root to some export? */
bool mds_export_on_path(struct braid_mds *mds, const struct mds_exports *x, uint64_t dir);

struct braid_mds {
	struct mds_settings set;
	struct braid_key key;
	struct mds_store *store;
	struct nfsd_server *srv;
	struct nfs41_server *v41;
	struct braid_auth *auth; /* AUTH_BRAID: data servers' control calls */
	uint8_t so_major[64];	 /* "braid-mds:" + store cookie verifier, hex */
	size_t so_major_len;
	uint64_t boot_sec; /* start time, for the grace period */

	pthread_mutex_t ex_mu; /* guards ex (the pointer swap only) */
	struct mds_exports *ex;

	struct mds_state *state;
	struct mds_dsreg *dsreg;
	struct mds_mount *mount;
	struct mds_cb *cb;
	struct mds_layout *layout;
	struct mds_admin *admin;
	/* the registry every module may add series to (nfsd/metrics.h); served
	 * at [mds] metrics_listen by metrics_http (NULL when off) */
	struct nfsd_metrics *metrics;
	struct nfsd_metrics_http *metrics_http;

	struct nfs41_op ops[OP_REMOVEXATTR + 1]; /* assembled from the group tables */
	struct nfsd_program nfs_prog;	 /* 100003: v4 from nfs41 */
	struct nfsd_version nfs_vers[1];
	int ports[CONF_ADDRS_MAX];
	unsigned nports;
};

/* The MDS a COMPOUND runs in. */
static inline struct braid_mds *mds_of(const struct nfs41_compound *c)
{
	return (struct braid_mds *)c->priv;
}

void mds_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
/* The peer's port, -1 if not IP; with host, its address as text too ("?"). */
int mds_peer_text(const struct sockaddr_storage *ss, char host[INET6_ADDRSTRLEN]);

/*
 * The op table.  Each group file defines a table of rows ending with
 * { 0 }; mds.c copies them into mds->ops (indexed by nfs_opnum4) at start.
 * An op no group defines answers NFS4ERR_NOTSUPP (nfs41.c).  The session
 * ops (EXCHANGE_ID ... SEQUENCE, GETFH, SAVEFH, RESTOREFH) are the session
 * module's (nfsd/nfs41*.c; nfsd/nfs41_impl.h says which file has which).
 */
struct mds_opdef {
	uint32_t op; /* nfs_opnum4; 0 ends a table */
	struct nfs41_op row;
};
extern const struct mds_opdef mds_ops_attr[], mds_ops_dir[], mds_ops_state[], mds_ops_io[],
    mds_ops_layout[];

/* -errno (store, control calls) -> nfsstat4, RFC 8881 §15.  One table. */
nfsstat4 mds_nfs4_status(int err);

/*
 * OPEN, LOCK, the data operations and the layout operations act on regular
 * files only (RFC 8881 §18.16.3, §18.10.3, §18.22.3, §18.32.3, §18.43.3):
 * NFS4_OK for one, else NFS4ERR_ISDIR, _SYMLINK or _WRONG_TYPE.
 */
nfsstat4 mds_reg_file(const struct mds_attr *a);

/* §8.2.3: every byte of the stateid's "other" is b. */
static inline bool mds_sid_other_is(const stateid4 *id, uint8_t b)
{
	for (unsigned i = 0; i < NFS4_OTHER_SIZE; i++)
		if (id->other[i] != b)
			return false;
	return true;
}

/* §8.2.3: the special stateids ("other" all zeros or all ones) name no state. */
static inline bool mds_sid_special(const stateid4 *id)
{
	return mds_sid_other_is(id, 0) || mds_sid_other_is(id, 0xff);
}

/*
 * Filehandles (fh.c).  40 bytes:
 *
 *	0   1   version (1)
 *	1   1   type (2: MDS inode)
 *	2   2   0
 *	4   4   id of the cluster key (braid_key.id)
 *	8   4   export id (0: pseudo filesystem)
 *	12  4   0
 *	16  8   inode number, big-endian
 *	24  8   inode generation, big-endian (mds_attr.generation)
 *	32  8   SipHash-2-4-64 of bytes 0..31 under the key's fh half
 *
 * Not ours (length, version, type, key, MAC): NFS4ERR_BADHANDLE.  Ours but
 * the inode is gone or has another generation: NFS4ERR_STALE.
 */
#define MDS_FH_SIZE 40
struct mds_fh {
	uint64_t ino;
	uint64_t gen;
	uint32_t export_id;
};
void mds_fh_make(const struct braid_mds *mds, const struct mds_fh *fh, uint8_t out[MDS_FH_SIZE]);
/* 0, or -EBADMSG for a handle that is not genuine. */
int mds_fh_parse(const struct braid_mds *mds, const void *p, uint32_t len, struct mds_fh *fh);

/*
 * A request's credential, after the export's squashing, and what the
 * export allows it.  Built once per COMPOUND op that needs it.
 */
#define MDS_CRED_GROUPS 16
struct mds_cred {
	uint32_t uid, gid;
	uint32_t ngroups;
	uint32_t groups[MDS_CRED_GROUPS];
	uint32_t flavor;
	bool rw;     /* the export is rw for this client (else NFS4ERR_ROFS on changes) */
	bool pseudo; /* the pseudo filesystem: read-only, walk toward exports only */
	uint32_t export_id;
};

/*
 * The current filehandle, checked: genuine (BADHANDLE), its inode alive
 * and of that generation (STALE), its export still exported and open to
 * this client (NFS4ERR_ACCESS), with a flavor the export accepts
 * (NFS4ERR_WRONGSEC).  Fills whichever of fh, attr, cred is not NULL.
 */
nfsstat4 mds_cfh(struct nfs41_compound *c, struct mds_fh *fh, struct mds_attr *attr,
		 struct mds_cred *cred);
/* The same for the saved filehandle (RENAME, LINK). */
nfsstat4 mds_sfh(struct nfs41_compound *c, struct mds_fh *fh, struct mds_attr *attr,
		 struct mds_cred *cred);
/* Make ino the current filehandle, reached through export_id. */
void mds_set_cfh(struct nfs41_compound *c, uint64_t ino, uint64_t gen, uint32_t export_id);
/* The credential of this request under export_id (squashed); NFS4ERR_ACCESS
 * when the export does not admit the client, NFS4ERR_WRONGSEC for its flavor. */
nfsstat4 mds_req_cred(struct nfs41_compound *c, uint32_t export_id, struct mds_cred *cred);

/* POSIX permission check of ACCESS4_* bits for cred against attr; returns
 * the subset allowed.  uid 0 gets everything but EXECUTE on files with no x bit. */
uint32_t mds_access(const struct mds_cred *cred, const struct mds_attr *attr, uint32_t want);

/*
 * fattr4 (op_attr.c).  Owner strings are numeric ("1000") under AUTH_SYS
 * (RFC 8881 §5.9); a non-numeric owner in SETATTR is NFS4ERR_BADOWNER.
 */
/* The attributes asked for that the server supports, encoded from attr
 * (the current filehandle's inode: FATTR4_FILEHANDLE is c->fh).
 * fsid and fs-wide attributes come from mds (space totals from dsreg). */
nfsstat4 mds_attr_encode(struct nfs41_compound *c, const struct mds_attr *attr,
			 const bitmap4 *want, fattr4 *out);
/* The same for another object (READDIR entries): fh/fhlen is its handle. */
nfsstat4 mds_attr_encode_fh(struct nfs41_compound *c, const struct mds_attr *attr,
			    const void *fh, uint32_t fhlen, const bitmap4 *want, fattr4 *out);
/*
 * A READDIR entry whose attributes could not be read (RFC 8881 §5.8.1.12):
 * when want has rdattr_error, out holds just rdattr_error = err and NFS4_OK
 * is returned; otherwise err is returned for READDIR to fail with.
 */
nfsstat4 mds_attr_encode_error(struct nfs41_compound *c, nfsstat4 err, const bitmap4 *want,
			       fattr4 *out);
/*
 * Decodes createattrs (OPEN, CREATE) into a->mask/values, adding to what
 * the caller put in *a; 'set' receives the bitmap of those applied
 * (attrsset).  Unsupported or read-only attributes: NFS4ERR_ATTRNOTSUPP /
 * NFS4ERR_INVAL as RFC 8881 §18.30.3 says; a malformed attrlist
 * NFS4ERR_BADXDR; a non-numeric owner NFS4ERR_BADOWNER.  mode, mode_umask
 * (RFC 8275: mode & ~umask) and mode_set_masked all give MDS_SET_MODE;
 * times give MDS_SET_[AM]TIME or _NOW.  (SETATTR decodes with its rules.)
 */
nfsstat4 mds_attr_decode_set(struct nfs41_compound *c, const fattr4 *in,
			     struct mds_setattr_args *a, bitmap4 *set);
/* The supported_attrs bitmap (NFSv4.2's; a 4.1 COMPOUND sees it without
 * change_attr_type, mode_umask and xattr_support). */
void mds_attr_supported(bitmap4 *out, struct xdr_arena *arena);

/*
 * State (op_state.c).  Stateids: RFC 8881 §8.2; the special stateids
 * (anonymous all-zeros, READ bypass all-ones) are accepted for I/O subject
 * to share reservations.
 */
int mds_state_init(struct braid_mds *mds, char *msg, size_t msglen);
void mds_state_release(struct braid_mds *mds);
void mds_state_client_expired(void *mds, uint64_t clientid);
bool mds_state_client_has_state(void *mds, uint64_t clientid);
/* READ/WRITE/SETATTR(size)/ALLOCATE...: is 'sid' (already resolved from the
 * current stateid) good for I/O of 'write' kind on ino by this client?
 * NFS4ERR_BAD_STATEID, _OLD_STATEID, _EXPIRED, _OPENMODE, _LOCKED (a
 * mandatory conflict is not enforced: Braid locks are advisory), _GRACE... */
nfsstat4 mds_state_check_io(struct nfs41_compound *c, const stateid4 *sid, uint64_t ino,
			    bool write);
/* Does any client hold an open of ino?  (REMOVE keeps an open file's data.) */
bool mds_state_ino_open(struct braid_mds *mds, uint64_t ino);
/* The grace period after a restart is in progress (new state: NFS4ERR_GRACE). */
bool mds_state_in_grace(struct braid_mds *mds);
/* Open and lock stateids a client holds (braidctl clients): 0, or -ENOENT
 * when it holds no state. */
int mds_state_client_counts(struct braid_mds *mds, uint64_t clientid, unsigned *opens,
			    unsigned *locks);

/*
 * Data servers (dsreg.c) and file data (op_io.c).
 */
int mds_dsreg_init(struct braid_mds *mds, char *msg, size_t msglen);
void mds_dsreg_release(struct braid_mds *mds);
/* The control program data servers call (REGISTER, HEARTBEAT). */
const struct nfsd_program *mds_dsreg_program(struct braid_mds *mds);
/* Bytes total and free over the data servers that are up (0 and 0 if none). */
void mds_dsreg_space(struct braid_mds *mds, uint64_t *total, uint64_t *avail);
/*
 * ino's data is no longer needed if it is an orphan (no links) and no
 * client holds it open: remove its data-server objects, then reap the
 * inode.  Called after REMOVE/RENAME unlink a file and after the last CLOSE.
 * Best effort: failures leave it in mds_orphan_list() for a later retry.
 */
void mds_data_release(struct braid_mds *mds, uint64_t ino);
/* SETATTR changed the size of ino from old to new: truncate its objects. */
int mds_data_truncate(struct braid_mds *mds, const struct mds_attr *attr, uint64_t old_size);
/*
 * A file written through RW layouts before the MDS stopped: its size moves
 * up to the end of its data servers' objects if that is past it (mtime and
 * change move with it).  0 when done (or the file is gone); -errno, e.g.
 * a data server not up yet, to try again later.
 */
int mds_data_size_reconcile(struct braid_mds *mds, uint64_t ino);

/* Largest READ and WRITE through the MDS (maxread, maxwrite) and largest file
 * (maxfilesize: the data servers' DS_STORE_MAX_SIZE). */
#define MDS_IO_MAX   (1u << 20)
#define MDS_FILE_MAX (1ull << 48)

/* What the MDS knows of one data server (braidctl, layouts): a snapshot. */
#define MDS_DS_ADDRS_MAX  16 /* BRAID_CTL_ADDRS_MAX */
#define MDS_DS_PROTOS_MAX 8  /* BRAID_CTL_PROTOS_MAX */
struct mds_ds_addr {
	char netid[33]; /* "tcp", "tcp6", "rdma", "rdma6" */
	char uaddr[65]; /* RFC 5665 universal address, port included */
};
struct mds_ds_proto {
	uint32_t version, minorversion, rsize, wsize;
};
struct mds_ds_info {
	uint32_t id;
	uint8_t uuid[16];
	char hostname[256];
	bool registered; /* has REGISTERed since this MDS started */
	bool up;	 /* registered and heard from within [mds] ds_timeout */
	bool drained;	 /* by the administrator (mds_dsreg_drain): placement skips it */
	uint32_t health; /* BRAID_CTL_HEALTH_* of the last HEARTBEAT */
	uint64_t capacity, free, objects;
	uint64_t since_heartbeat_ms; /* since the last REGISTER or HEARTBEAT */
	uint8_t boot_verifier[8];
	unsigned naddrs, nctl_addrs, nprotos;
	struct mds_ds_addr addrs[MDS_DS_ADDRS_MAX];	/* for clients (layouts) */
	struct mds_ds_addr ctl_addrs[MDS_DS_ADDRS_MAX]; /* where the MDS calls */
	struct mds_ds_proto protos[MDS_DS_PROTOS_MAX];
};
/* Every data server ever registered, by id: up to max of them into out;
 * returns how many there are. */
unsigned mds_dsreg_list(struct braid_mds *mds, struct mds_ds_info *out, unsigned max);
/* One of them: 0, or -ENOENT. */
int mds_dsreg_get(struct braid_mds *mds, uint32_t id, struct mds_ds_info *out);
/*
 * braidctl ds drain / ds add: placement stops (drain) or resumes choosing
 * the data server for new objects; recorded in the bindings file before
 * returning.  0, -ENOENT, or the -errno of the write (nothing changed).
 */
int mds_dsreg_drain(struct braid_mds *mds, uint32_t id, bool drain);
/*
 * braidctl ds remove: forget the data server: its id is never given again
 * and, should its uuid register anew, it gets a new id.  The caller checks
 * that no file needs it (mds_layout_scan).  0, -ENOENT, -errno of the write.
 */
int mds_dsreg_forget(struct braid_mds *mds, uint32_t id);
/*
 * Placement: a data server for a new object, chosen at random among those
 * up and not draining or read-only, weighted by free space (those low on
 * space only when no other is up).  nfs3: one serving NFSv3 (the MDS's own
 * I/O needs it).  0, or -EAGAIN when none is up.
 */
int mds_dsreg_place(struct braid_mds *mds, bool nfs3, uint32_t *id);

/*
 * A reference to the MDS's connection to one data server: control calls
 * (ctl/client.h, with mds->key) and NFSv3 calls (AUTH_SYS as the
 * object's fence), each call timed out after timeout_ms.  Fields are set
 * at creation and never change.
 */
struct mds_ds_conn {
	atomic_int ref;
	uint32_t id;
	struct nfsd_clnt *clnt;
	uint32_t rsize3, wsize3; /* the DS's NFSv3 rsize/wsize; 0: it serves no NFSv3 */
	unsigned timeout_ms;
};
/* NULL with *err: -EAGAIN (down, or not registered since the MDS started:
 * NFS4ERR_DELAY), -EIO (an id never registered), -errno of the connect. */
struct mds_ds_conn *mds_ds_conn_get(struct braid_mds *mds, uint32_t id, int *err);
void mds_ds_conn_put(struct mds_ds_conn *dc);

/*
 * File objects.  A regular file's object on a data server is named by
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
 *     object there is known to exist.  A file with segment 0 and no record
 *     is whole-file on segment 0's data servers, fence epoch 0.
 *   On a directory, MDS_LAYOUT_REC holds the policy new files below it
 *     take (ds[0] = 0, nds = 1): see mds_layout_policy_set().
 */
#define MDS_LAYOUT_REC	   (UINT64_MAX - 1)
#define MDS_LAYOUT_CREATED 0x80000000u
struct ds_objid;
void mds_data_objid(const struct mds_attr *a, struct ds_objid *id);
/* The synthetic uid/gid of a file's objects under fence epoch 'epoch':
 * derived from the object key, in [2^30, 2^31); a new epoch is a fresh
 * pair (mds_data_fence_new).  mds_data_fence() is epoch 0's. */
void mds_data_fence_epoch(const struct mds_attr *a, uint32_t epoch, uint32_t *uid, uint32_t *gid);
void mds_data_fence(const struct mds_attr *a, uint32_t *uid, uint32_t *gid);

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
 * Layouts (op_layout.c): LAYOUTGET, LAYOUTCOMMIT, LAYOUTRETURN,
 * GETDEVICEINFO, GETDEVICELIST, LAYOUTSTATS, LAYOUTERROR (RFC 8881 §12,
 * RFC 8435, RFC 7862 §15.6-15.7); layout state, recalls, fencing.
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
/* Does the client hold layouts (DESTROY_CLIENTID: CLIENTID_BUSY)? */
/* Layout stateids alive: (client, file) pairs holding layouts (metrics). */
uint64_t mds_layout_outstanding(struct braid_mds *mds);
/* LAYOUTGETs answered NFS4ERR_DELAY as a duplicate of a grant just made */
uint64_t mds_layout_dup_delayed(struct braid_mds *mds);
bool mds_layout_client_has_state(struct braid_mds *mds, uint64_t clientid);
/*
 * mds_data_release: true while clients hold layouts of ino; they are
 * recalled (fenced when not returned within a lease) and the release runs
 * again afterwards.
 */
bool mds_layout_release_hold(struct braid_mds *mds, uint64_t ino);
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

/* Counters from LAYOUTRETURN (ff_layoutreturn4), LAYOUTERROR and LAYOUTSTATS. */
struct mds_layout_counters {
	uint64_t layoutgets, layoutreturns, recalls, revoked;
	uint64_t dup_delayed; /* LAYOUTGETs of a range just granted: DELAY */
	uint64_t ioerrors;    /* device errors reported */
	uint64_t ioerr_access; /* of which NFS4ERR_ACCESS (fenced) */
	uint64_t read_ops, read_bytes, write_ops, write_bytes;
};
/* 0 and *out, or -ENOENT (no such client holding layout state). */
int mds_layout_counters_client(struct braid_mds *mds, uint64_t clientid,
			       struct mds_layout_counters *out);
/* Per data server (any id: zeros when nothing was reported). */
void mds_layout_counters_ds(struct braid_mds *mds, uint32_t ds_id,
			    struct mds_layout_counters *out);

/*
 * Administration (admin.c): the braid_admin.x program braidctl calls (only
 * AUTH_BRAID callers: holders of the cluster key), and collectors that put
 * data servers, clients and layouts in the metrics.
 */
int mds_admin_init(struct braid_mds *mds, char *msg, size_t msglen);
void mds_admin_release(struct braid_mds *mds);
const struct nfsd_program *mds_admin_program(struct braid_mds *mds);
/* A layout recall ended after ns: returned by the client, or revoked
 * (braid_mds_layout_recall_duration_seconds; op_layout.c calls it). */
void mds_metrics_recall_done(struct braid_mds *mds, uint64_t ns, bool revoked);

int mds_mount_init(struct braid_mds *mds, char *msg, size_t msglen);
void mds_mount_release(struct braid_mds *mds);
/* MOUNT v3 (100005), or NULL when [mds] mount = no. */
const struct nfsd_program *mds_mount_program(struct braid_mds *mds);
/* After the server listens: register NFS and MOUNT with rpcbind when
 * [mds] rpcbind = yes and one runs (none running is not an error). */
void mds_mount_rpcbind_set(struct braid_mds *mds);
void mds_mount_rpcbind_unset(struct braid_mds *mds);

/*
 * Callbacks (callback.c), from worker threads (they wait for the reply).
 * Return 0 when the client replied (CB_COMPOUND: its status in res), or
 * -ENOTCONN (no back channel: the client's SEQUENCE then sees
 * CB_PATH_DOWN), -ETIMEDOUT, -ECONNRESET, -EPROTO.
 */
int mds_cb_init(struct braid_mds *mds);
void mds_cb_release(struct braid_mds *mds);
int mds_cb_null(struct braid_mds *mds, uint64_t clientid);
/* CB_SEQUENCE, then ops; res (and what it points to) in arena. */
int mds_cb_compound(struct braid_mds *mds, uint64_t clientid, const nfs_cb_argop4 *ops,
		    unsigned nops, CB_COMPOUND4res *res, struct xdr_arena *arena);

#endif
