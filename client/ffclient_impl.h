/* SPDX-License-Identifier: MIT */
/*
 * ffclient internals shared by its files:
 *
 *   ffclient.c         the mount, calls on the MDS session, attributes,
 *                      the service thread
 *   ffclient_file.c    opens and the calls on them (OPEN, pread, pwrite,
 *                      fsync, CLOSE), mkdir and remove
 *   ffclient_io.c      the I/O engine: RPCs to the data servers and the
 *                      MDS, routing, retries, fallback to the MDS
 *   ffclient_layout.c  the back channel (CB_LAYOUTRECALL,
 *                      CB_NOTIFY_DEVICEID), devices (GETDEVICEINFO,
 *                      connections, data-server sessions), layout segments
 *                      (LAYOUTGET, LAYOUTRETURN), commits and LAYOUTCOMMIT
 *
 * Ownership and locks:
 *   struct ffc         c->mu guards the inode list, open counts and the
 *                      graveyard; it is never held across an RPC
 *                      (the back channel's handler takes it on a loop
 *                      thread).  c->dev_mu serializes device resolution
 *                      (GETDEVICEINFO, connects, data-server sessions) and
 *                      is held across those RPCs; c->devlist_mu guards the
 *                      device array only (short, taken by the back channel).
 *   struct ffc_inode   a file of the MDS as this client sees it, shared by
 *                      all its opens (layouts belong to the client and the
 *                      file, RFC 8881 §12.5.2).  ino->mu guards the layout
 *                      and commit state; it is taken for layout decisions
 *                      and bookkeeping, not while data RPCs are out, so
 *                      several opens of one file move data at once.  The
 *                      service thread takes it to answer a recall.
 *   struct ffc_file    one open; its mu makes calls on it one at a time.
 *   struct ffc_dev     immutable once 'ready' (until a device notification
 *                      makes it stale and dev_mu refreshes it); counters
 *                      are atomics.  Devices live until unmount, so
 *                      pointers to them stay valid.
 *   struct rpc         one RPC of an I/O: the issuing thread owns it except
 *                      between issue and completion, when the completion
 *                      callback (a loop thread) fills its result and
 *                      signals io->cv.  Everything the callback needs is
 *                      copied into it, so segments may be dropped while
 *                      RPCs are out.
 * Lock order: file mu, ino->mu, c->dev_mu, dev->smu, c->mu, c->devlist_mu.
 */
#ifndef BRAID_TOOLS_FFCLIENT_IMPL_H
#define BRAID_TOOLS_FFCLIENT_IMPL_H

#include "flexfiles.h"
#include "nfs3_prot.h"
#include "nfs4_prot.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "nfsd/nfs41_clnt.h"
#include "nfsd/rpc.h"
#include "client/ffclient.h"

#define FFC_IO_MAX	   (1u << 20) /* largest READ/WRITE (Linux's too) */
#define FFC_INFLIGHT_DEF   16
#define FFC_INFLIGHT_MAX   256
#define FFC_TIMEOUT_DEF_MS 30000
#define FFC_CB_PROG	   0x40000000u /* csa_cb_program, as Linux */
#define FFC_NCONN_MAX	   8
#define FFC_MIRRORS_MAX	   8
#define FFC_IOERR_MAX	   20	   /* ff_ioerr4 per LAYOUTRETURN, as Linux */
#define FFC_FAIL_RETRY_MS  120000u /* LAYOUTUNAVAILABLE, a dead device: MDS I/O this long */
#define FFC_LG_MAXCOUNT	   4096u   /* loga_maxcount, as Linux (PNFS_LAYOUT_MAXSIZE) */
#define FFC_GDI_MAXCOUNT   16384u
#define FFC_PATH_DEPTH_MAX 64
#define FFC_MDS_IO_MAX_DEF (1u << 20)

struct ffc_dssess {
	uint32_t uid, gid;
	struct nfs41c_session *sess;
	struct ffc_dssess *next;
};

struct ffc_dev {
	deviceid4 id;
	atomic_bool ready;	     /* resolved and connected */
	atomic_bool stale;	     /* CB_NOTIFY_DEVICEID: refresh at next use */
	atomic_ullong unavail_until; /* monotonic ms: do not use before */
	int err;		     /* last resolution error (dev_mu) */
	uint64_t retry_at;	     /* after a failed resolution (dev_mu) */
	/* set under dev_mu before ready */
	uint32_t vers, minor, rsize, wsize;
	bool tight;
	char addr[80];
	struct nfsd_clnt *clnt[FFC_NCONN_MAX];
	unsigned nclnt;
	atomic_uint rr;
	pthread_mutex_t smu;	 /* guards sess */
	struct ffc_dssess *sess; /* NFSv4.1 data-server sessions by credential */
	atomic_ullong read_bytes, write_bytes, reads, writes, commits, errors;
};

/* What an I/O needs of one data server of a layout: copied, never shared. */
struct dsref {
	deviceid4 devid;
	uint32_t efficiency;
	stateid4 sid;
	uint8_t fh[NFS4_FHSIZE];
	uint32_t fhlen;
	uint32_t uid, gid;
};

struct mirror {
	unsigned nds;
	struct dsref *ds;
};

/* One layout segment [off, end) of one iomode (RFC 8881 §12.2.9). */
struct seg {
	uint64_t off, end; /* end: UINT64_MAX for "to the end of the file" */
	int iomode;
	uint32_t flags;
	uint64_t stripe_unit;
	unsigned nmirrors;
	struct mirror *m;
};

/* A data server written UNSTABLE since the last COMMIT to it. */
struct dirty {
	struct ffc_dev *dev;
	uint8_t fh[NFS4_FHSIZE];
	uint32_t fhlen;
	uint32_t uid, gid;
	stateid4 sid;
	uint8_t verf[8];
	bool need_commit;
};

struct ioerr {
	uint64_t off, len;
	deviceid4 devid;
	nfsstat4 status;
	nfs_opnum4 op;
};

struct ffc_inode {
	struct ffc *c;
	struct ffc_inode *next, *prev; /* c->inodes (c->mu) */
	unsigned opens;		       /* c->mu */
	atomic_int ref;
	atomic_int recall;	/* bit 0: READ, bit 1: RW layouts recalled */
	atomic_bool has_layout; /* a peek for the back channel */
	bool have_recall_sid;	/* c->mu: the last CB_LAYOUTRECALL's stateid */
	stateid4 recall_sid;	/* c->mu */
	uint8_t fh[NFS4_FHSIZE];
	uint32_t fhlen;

	pthread_mutex_t mu;
	bool closed;	    /* no open left: off c->inodes */
	unsigned io_active; /* pread/pwrite calls with RPCs out (a recall waits) */
	uint64_t size;
	/* layout state (RFC 8881 §12.5.2) */
	bool lo_valid;
	stateid4 lo_sid;
	struct seg **segs;
	unsigned nsegs, capsegs;
	uint64_t fail_until[2]; /* per iomode (READ, RW): no LAYOUTGET before */
	bool lo_bad[2];		/* an error was seen: return that iomode */
	struct ioerr errs[FFC_IOERR_MAX];
	unsigned nerrs;
	/* commit state */
	struct dirty *dirty;
	unsigned ndirty;
	uint64_t lwb; /* last byte written + 1 through layouts, for LAYOUTCOMMIT */
	bool need_layoutcommit;
	bool mds_unstable, mds_have_verf;
	uint8_t mds_verf[8];
	int err; /* sticky write error, reported by fsync/close */
};

/* One open (RFC 8881 §18.16): its stateid and owner; layouts are the inode's. */
struct ffc_file {
	struct ffc *c;
	struct ffc_inode *ino;
	stateid4 open_sid;
	int acc;
	char owner[64];
	pthread_mutex_t mu; /* one call on the open at a time */
};

struct grave {
	struct nfsd_clnt *clnt[FFC_NCONN_MAX];
	unsigned nclnt;
	struct ffc_dssess *sess;
	struct grave *next;
};

struct ffc {
	struct ffc_opts o;
	char owner[128];
	struct nfsd_server *eng;
	struct nfsd_clnt *clnt;
	struct nfs41c_session *sess;
	struct nfs41c_session_info info;
	struct nfsd_program cb_prog;
	uint32_t cb_seqid; /* back channel slot 0 (loop thread only) */
	uint64_t lease_ms;
	uint32_t mds_rsize, mds_wsize;
	atomic_ullong last_call_ms;
	atomic_bool pnfs;
	char pnfs_why[128]; /* c->mu */

	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct ffc_inode *inodes;
	unsigned nopen_seq;
	bool stop;
	pthread_t svc;
	bool svc_started;
	struct grave *graves;

	pthread_mutex_t dev_mu;
	pthread_mutex_t devlist_mu;
	struct ffc_dev **devs;
	unsigned ndevs, capdevs;

	/* counters */
	atomic_ullong layoutget, layoutget_ok, getdeviceinfo, layoutcommit, layoutreturn,
	    layoutrecall, ds_errors, fallbacks, mds_read_bytes, mds_write_bytes, ds_read_bytes,
	    ds_write_bytes;
	atomic_int layoutget_last_err;
};

/* ------------------------------------------------------------ attributes */

struct attrs {
	uint32_t type, lease;
	uint64_t change, size, maxread, maxwrite, space_avail, space_free, space_total;
	bool flexfiles; /* fs_layout_types has LAYOUT4_FLEX_FILES */
	uint32_t have[3];
};

/* ------------------------------------------------------------------- RPCs */

enum rpc_kind { RK_DS3, RK_DS4, RK_MDS };

struct io {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned inflight;
	/* mu: the issuing thread waits for inflight to drop under it (0: it
	 * does not wait); a completion wakes it only then, not each time */
	unsigned below;
	atomic_bool ds_failed; /* a data-server RPC failed for good */
};

struct rpc {
	struct io *io;
	struct ffc_inode *f;
	enum rpc_kind kind;
	bool write;
	int stable; /* WRITE: UNSTABLE4 or FILE_SYNC4 (same numbers in v3) */
	uint64_t off;
	uint32_t len;
	uint8_t *rbuf;	     /* READ: where the data goes */
	const uint8_t *wbuf; /* WRITE: the data */
	struct ffc_dev *dev;
	struct dsref t; /* the data server's fh, credentials, stateid */
	stateid4 osid;	/* MDS I/O: the open's stateid */
	uint32_t seg_flags;
	/* result */
	int rc;		/* transport error, or 0 */
	int32_t status; /* nfsstat3 / nfsstat4 */
	uint32_t count;
	int32_t committed;
	uint8_t verf[8];
	bool eof;
	/* READ: the data placed straight into rbuf by the engine (struct
	 * nfsd_sink), or 0 when the reply brought it */
	size_t sunk;
	struct nfsd_sink sink;
};

/* ------------------------------------------------------- ffclient.c */

uint64_t ffc_now_ms(void);
void ffc_sleep_ms(unsigned ms);
/* nfsstat4 -> -errno for callers; a call's return -> -errno. */
int ffc_nfs4_errno(nfsstat4 s);
int ffc_call_errno(int rc);
/* The result of op i (0-based, after SEQUENCE) if it ran and is that op;
 * its status, or the COMPOUND's when it did not run that far. */
nfs_resop4 *ffc_resop(const COMPOUND4res *r, unsigned i, nfs_opnum4 op);
nfsstat4 ffc_opstatus(const COMPOUND4res *r, unsigned i, nfs_opnum4 op);
/* A heap arena for one call's results (64 MiB at most). */
void ffc_arena_new(struct xdr_arena *a);
/* SEQUENCE + ops on the MDS session, DELAY and GRACE waited out: 0 with
 * *res, or -errno when no reply came. */
int ffc_mds_call(struct ffc *c, const nfs_argop4 *ops, unsigned n, COMPOUND4res *res,
		 struct xdr_arena *ar);
/* Bitmaps of attribute numbers; the attributes we ask for, decoded. */
bitmap4 ffc_bm_of(uint32_t w[3], const unsigned *attrs, unsigned n);
int ffc_attrs_decode(const fattr4 *fa, struct attrs *a, struct xdr_arena *ar);
bool ffc_attr_has(const struct attrs *a, unsigned n);

/* ------------------------------------------------------- ffclient_io.c */

/* One pread or pwrite of an open (osid its stateid) through the layouts or
 * the MDS: 0 or -errno.  Called without ino->mu, which it takes. */
int ffc_io_run(struct ffc_inode *f, const stateid4 *osid, bool write, uint8_t *buf, uint64_t len,
	       uint64_t off);

/* ------------------------------------------------------- ffclient_layout.c */

/* The back channel's program (CB_NULL, CB_COMPOUND) for mount c. */
void ffc_cb_program(struct ffc *c, struct nfsd_program *p);
struct ffc_inode *ffc_ino_get(struct ffc_inode *f);
void ffc_ino_put(struct ffc_inode *f);
/* Devices: resolved and connected (NULL when unusable now); the NFSv4.1
 * session for a credential; retire a device's connections at unmount. */
struct ffc_dev *ffc_dev_get(struct ffc *c, const uint8_t *id);
struct nfs41c_session *ffc_dev_session(struct ffc *c, struct ffc_dev *d, uint32_t uid, uint32_t gid,
				       int *err);
void ffc_dev_retire(struct ffc *c, struct ffc_dev *d);
/* Layouts, under ino->mu. */
int ffc_iomode_idx(int iomode);
void ffc_ioerr_add(struct ffc_inode *f, uint64_t off, uint64_t len, const uint8_t *devid,
		   nfsstat4 st, nfs_opnum4 op);
struct seg *ffc_seg_find(struct ffc_inode *f, uint64_t off, bool write);
int ffc_layoutget(struct ffc_inode *f, const stateid4 *osid, int iomode, uint64_t off,
		  uint64_t len);
void ffc_layoutreturn(struct ffc_inode *f, int iomode);
bool ffc_layouts_on(struct ffc_inode *f, int iomode);
/* Commits, under ino->mu: a data server written UNSTABLE; COMMITs then
 * LAYOUTCOMMIT; flush then LAYOUTRETURN; a recall's answer. */
struct dirty *ffc_dirty_get(struct ffc_inode *f, const struct rpc *r);
int ffc_flush_locked(struct ffc_inode *f);
void ffc_return_locked(struct ffc_inode *f, int iomode);
void ffc_recall_check(struct ffc_inode *f);

#endif /* BRAID_TOOLS_FFCLIENT_IMPL_H */
