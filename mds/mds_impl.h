/* SPDX-License-Identifier: MIT */
/*
 * braid-mds's core: struct braid_mds and what every op group needs (the
 * COMPOUND's MDS, logging, the op table, the -errno to nfsstat4 table,
 * exports, credentials and the current filehandle), all of it mds.c's.
 * Each module's own API is in its header:
 *
 *   mds.c         settings, start/stop, exports, the op table, credentials
 *                 (this header; the daemon's API: mds/mds.h)
 *   fh.c          filehandles (mds/fh.h)
 *   op_attr.c     fattr4 codec; GETATTR SETATTR VERIFY NVERIFY ACCESS;
 *                 GETXATTR SETXATTR LISTXATTRS REMOVEXATTR, RFC 8276
 *                 (mds/attr.h)
 *   op_dir.c      PUTROOTFH PUTPUBFH PUTFH LOOKUP LOOKUPP CREATE REMOVE
 *                 RENAME LINK READLINK READDIR SECINFO SECINFO_NO_NAME
 *                 (its op table only)
 *   op_state.c    OPEN OPEN_DOWNGRADE CLOSE LOCK LOCKT LOCKU TEST_STATEID
 *                 FREE_STATEID RECLAIM_COMPLETE DELEGRETURN; grace; client
 *                 records; with state_lock.c (byte-range locks) and
 *                 deleg.c (delegations: grants, recalls, CB_RECALL_ANY)
 *                 (mds/state.h; between the three: mds/state_impl.h)
 *   op_io.c       READ WRITE COMMIT (proxied to braid-ds) ALLOCATE
 *                 DEALLOCATE SEEK READ_PLUS (its op table only)
 *   dsreg.c       data servers: REGISTER/HEARTBEAT service, the registry,
 *                 placement, connections (mds/dsreg.h)
 *   data.c        file objects on the data servers: maps, segments,
 *                 repair, truncation, sizes, fence epochs, orphans
 *                 (mds/data.h)
 *   space.c       space_used of regular files, summed from the data
 *                 servers in the background (mds/space.h)
 *   resilver.c    stale copies brought up to date by the data servers
 *                 (mds/resilver.h)
 *   op_layout.c   LAYOUTGET LAYOUTCOMMIT LAYOUTRETURN GETDEVICEINFO
 *                 GETDEVICELIST LAYOUTSTATS LAYOUTERROR; policies
 *   layout_state.c  layout state: stateids, recalls, revocation, fencing,
 *                 device notifications (both: mds/layout.h; between the
 *                 two: mds/layout_impl.h; placement, encodings, device IDs
 *                 and fence credentials: layout/, liblayout.a)
 *   callback.c    CB_NULL and CB_COMPOUND over the clients' back channels
 *                 (mds/callback.h)
 *   nfs3.c        NFSv3, RFC 1813: every procedure, over the same checks
 *                 and store operations (mds/nfs3.h; shared with the
 *                 NFSv4 groups: mds/ns.h, mds/io.h, mds_setattr_run)
 *   mount.c       MOUNT v3 and rpcbind registration (mds/mount.h; the
 *                 libtirpc side: mds/rpcbind.c, mds/rpcbind.h)
 *   nlm.c         NLM v4 and NSM: NFSv3 clients' fcntl locks (in
 *                 state_lock.c's table), blocking locks and their
 *                 callbacks, reboot notification and reclaim (mds/nlm.h)
 *   admin.c       braidctl's protocol (nfsd/xdr/braid_admin.x) and the
 *                 MDS's metrics collectors (mds/admin.h)
 *   store.c, store_ops.c  the metadata store (mds/store.h, libmds.a)
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
#include "mds/exports.h"
#include "mds/store.h"
#include "nfsd/auth_braid.h"
#include "nfsd/clock.h"
#include "nfsd/mac.h"
#include "nfsd/nfs41.h"
#include "nfsd/rpc.h"

struct mds_state;  /* op_state.c */
struct mds_dsreg;  /* dsreg.c */
struct mds_data;   /* data.c */
struct mds_space;  /* space.c */
struct mds_resilver; /* resilver.c */
struct mds_ec;       /* ec.c */
struct mds_ec_scrub; /* ec_scrub.c */
struct mds_ec_rebuild; /* ec_rebuild.c */
struct mds_mount;  /* mount.c */
struct mds_nlm;	   /* nlm.c */
struct mds_cb;	   /* callback.c */
struct mds_layout; /* layout_state.c */
struct mds_admin;  /* admin.c */
struct mds_fh;	   /* fh.h */
struct nfsd_drc;
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
	bool names; /* some client is a host name or wildcard: matching may
		     * need the name service (mds_exports_match) */
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
	struct nfsd_gss *gss;	 /* RPCSEC_GSS, with [mds] keytab; else NULL */
	uint8_t so_major[64];	 /* "braid-mds:" + store cookie verifier, hex */
	size_t so_major_len;
	uint64_t boot_sec; /* start time, for the grace period */

	pthread_mutex_t ex_mu; /* guards ex (the pointer swap only) */
	struct mds_exports *ex;

	struct mds_state *state;
	struct mds_dsreg *dsreg;
	struct mds_data *data;
	struct mds_space *space;
	struct mds_resilver *resilver;
	struct mds_ec *ec;
	struct mds_ec_scrub *ec_scrub;
	struct mds_ec_rebuild *ec_rebuild;
	struct mds_mount *mount;
	struct mds_nlm *nlm; /* NULL with [mds] nlm = no or nfs3 = no */
	struct mds_cb *cb;
	struct mds_layout *layout;
	struct mds_admin *admin;
	/* braid_mds_proxy_calls_total by enum mds_hop (mds/io.h): the data
	 * server calls of proxied I/O, by protection */
	struct nfsd_metric *m_proxy_calls[3];
	/* the registry every module may add series to (nfsd/metrics.h); served
	 * at [mds] metrics_listen by metrics_http (NULL when off) */
	struct nfsd_metrics *metrics;
	struct nfsd_metrics_http *metrics_http;

	struct nfs41_op ops[OP_REMOVEXATTR + 1]; /* assembled from the group tables */
	struct nfsd_program nfs_prog;		 /* 100003: v3 (nfs3.c) and v4 (nfs41) */
	struct nfsd_version nfs_vers[2];
	struct nfsd_drc *drc3; /* NFSv3's reply cache; NULL with [mds] nfs3 = no */
	int ports[CONF_ADDRS_MAX];
	unsigned nports;
};

/* The MDS a COMPOUND runs in. */
static inline struct braid_mds *mds_of(const struct nfs41_compound *c)
{
	return (struct braid_mds *)c->priv;
}

void mds_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

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
    mds_ops_layout[], mds_ops_v40[];

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
	/* the NFSv4 client ID asking (0: NFSv3): its own changes recall
	 * none of its delegations (mds/deleg.c) */
	uint64_t clientid;
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

/*
 * The same checks for any request (NFSv3 carries its handles in its
 * arguments): a handle p/len, and the credential under an export.
 */
nfsstat4 mds_call_fh(struct braid_mds *mds, const struct nfsd_req *req, const uint8_t *p,
		     uint32_t len, struct mds_fh *fh, struct mds_attr *attr, struct mds_cred *cred);
nfsstat4 mds_call_cred(struct braid_mds *mds, const struct nfsd_req *req, uint32_t export_id,
		       struct mds_cred *cred);

/* POSIX permission check of ACCESS4_* bits for cred against attr; returns
 * the subset allowed.  uid 0 gets everything but EXECUTE on files with no x bit. */
uint32_t mds_access(const struct mds_cred *cred, const struct mds_attr *attr, uint32_t want);

/* Largest READ and WRITE through the MDS (maxread, maxwrite) and largest file
 * (maxfilesize: the data servers' DS_STORE_MAX_SIZE). */
#define MDS_IO_MAX   (1u << 20)
#define MDS_FILE_MAX (1ull << 48)

#endif
