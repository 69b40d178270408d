/* SPDX-License-Identifier: MIT */
/*
 * ffclient: a userspace NFSv4.1 client with pNFS flexible-file layouts
 * (RFC 8881 chapter 12, RFC 8435), over our RPC engine (nfsd/rpc.h) and
 * session client (nfsd/nfs41_clnt.h), for the benchmarks and the tests.
 *
 * It takes the stock Linux client's protocol path (see
 * shared/research/linux-client-pnfs.md): OPEN; LAYOUTGET for the range an
 * I/O needs (READ or RW iomode, one page of minlength, the open stateid
 * first and the layout stateid after); GETDEVICEINFO once per device;
 * READ/WRITE straight to the data servers (NFSv3 with AUTH_SYS as the
 * layout's ffds_user/ffds_group, or an NFSv4.1 data-server session when
 * the device's preferred version is 4.1/4.2); UNSTABLE writes and COMMIT
 * to every data server written, then LAYOUTCOMMIT with the last write
 * offset, at fsync and close; LAYOUTRETURN at the last close of a file,
 * and after a data-server error with the error in ff_layoutreturn4's
 * ff_ioerr4, the failed I/O then redone through the MDS.  LAYOUTGET
 * errors that leave no layout (NOTSUPP, UNKNOWN_LAYOUTTYPE,
 * LAYOUTUNAVAILABLE, BADLAYOUT, persistent TRYLATER) send the I/O through
 * the MDS as well.  Layouts are used only when the MDS says it is a pNFS
 * MDS (EXCHGID4_FLAG_USE_PNFS_MDS) and its fs_layout_types has
 * LAYOUT4_FLEX_FILES, as Linux requires.  Mirrors: writes go to every
 * mirror, reads to the most efficient one; RFC 8435 striping (several
 * data servers per mirror) is followed.  CB_LAYOUTRECALL is answered
 * (flush, LAYOUTCOMMIT, LAYOUTRETURN) once the I/O in progress is done.
 *
 * Layout state belongs to the client and the file (RFC 8881 §12.5.2):
 * opens of one file share it, and move data at the same time.
 *
 * Calls are synchronous for the caller, but each ffc_pread/ffc_pwrite is
 * cut into RPCs of at most the data server's rsize/wsize (1 MiB) with up
 * to 'inflight' (16) of them outstanding per open.
 *
 * Data a pwrite sent UNSTABLE is not kept by the library (there is no page
 * cache): if a data server restarts or fails before the COMMIT,
 * ffc_fsync/ffc_close report -EIO and the caller writes again.
 *
 * Threads: an ffc is shared; each ffc_file is used by one thread at a
 * time.  Functions return 0 (or a byte count) or -errno.
 */
#ifndef BRAID_TOOLS_FFCLIENT_H
#define BRAID_TOOLS_FFCLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ffc;
struct ffc_file;

struct ffc_opts {
	uint32_t uid, gid;	/* AUTH_SYS to the MDS (0/0: root) */
	const char *owner;	/* client owner (co_ownerid); NULL: unique per mount */
	unsigned inflight;	/* RPCs outstanding per file; 0: 16 */
	unsigned io_size;	/* largest READ/WRITE; 0: 1 MiB (capped by rsize/wsize) */
	unsigned timeout_ms;	/* per RPC to the MDS; 0: 30 s */
	unsigned ds_timeout_ms; /* per RPC to a data server; 0: timeout_ms */
	unsigned loops;		/* client event loops; 0: 1 */
	unsigned nconnect;	/* connections per NFSv3 data server; 0: 1 */
	/* The data-server version to use: 0 the device's first (its preferred,
	 * all Linux uses), 3 or 4 (4.1/4.2) that one when the device offers it. */
	unsigned ds_version;
	bool no_pnfs; /* never ask for layouts: all I/O through the MDS */
	/* Send LAYOUTGET even when fs_layout_types lacks flexfiles (to see the
	 * MDS answer it, e.g. NFS4ERR_NOTSUPP); the stock client would not. */
	bool force_layoutget;
};

/* Mount: EXCHANGE_ID + CREATE_SESSION (with a back channel for layout
 * recalls), RECLAIM_COMPLETE, then the root's fs_layout_types, maxread,
 * maxwrite and lease_time.  host: a name or a numeric address.  NULL and
 * *err on failure. */
struct ffc *ffc_mount(const char *host, int port, const struct ffc_opts *opts, int *err);
/* Closes nothing: close the files first.  Destroys the session. */
void ffc_unmount(struct ffc *c);

enum ffc_open_flags {
	FFC_RDONLY = 0,
	FFC_WRONLY = 1,
	FFC_RDWR = 2,
	FFC_ACCMODE = 3,
	FFC_CREAT = 1 << 4,
	FFC_EXCL = 1 << 5, /* with FFC_CREAT: EXCLUSIVE4_1, else UNCHECKED4 */
	FFC_TRUNC = 1 << 6,
};
/* Walk path ("/a/b/file") from the root with LOOKUP, OPEN the last
 * component (CLAIM_NULL), GETFH, GETATTR. */
struct ffc_file *ffc_open(struct ffc *c, const char *path, int flags, uint32_t mode, int *err);
/* The byte count (all of it, or an error), or -errno. */
ssize_t ffc_pwrite(struct ffc_file *f, const void *buf, size_t len, uint64_t off);
/* Bytes read (short only at the end of the file), or -errno. */
ssize_t ffc_pread(struct ffc_file *f, void *buf, size_t len, uint64_t off);
/* COMMIT to every data server written (and the MDS), then LAYOUTCOMMIT. */
int ffc_fsync(struct ffc_file *f);
/* fsync, LAYOUTRETURN, CLOSE; frees f whatever happens. */
int ffc_close(struct ffc_file *f);
/* The size as the client knows it (the MDS's at open, moved by our writes
 * and LAYOUTCOMMITs). */
uint64_t ffc_file_size(const struct ffc_file *f);

int ffc_mkdir(struct ffc *c, const char *path, uint32_t mode);
int ffc_remove(struct ffc *c, const char *path);
/* space_total and space_avail of the root's file system. */
int ffc_statfs(struct ffc *c, uint64_t *total, uint64_t *avail);

/* ----------------------------------------------------------- counters */

#define FFC_STATS_DEV_MAX 32
struct ffc_dev_stats {
	uint8_t deviceid[16];
	char addr[80]; /* "tcp 127.0.0.1.8.1", as GETDEVICEINFO gave it */
	uint32_t version, minorversion;
	uint64_t read_bytes, write_bytes; /* acknowledged by this data server */
	uint64_t reads, writes, commits, errors;
};
struct ffc_stats {
	bool pnfs;		    /* layouts are asked for on this mount */
	char pnfs_why[128];	    /* why not, when !pnfs */
	uint64_t layoutget;	    /* LAYOUTGETs sent */
	uint64_t layoutget_ok;	    /* ... answered with a usable layout */
	int32_t layoutget_last_err; /* nfsstat4 of the last failed one (0: none) */
	uint64_t getdeviceinfo, layoutcommit, layoutreturn, layoutrecall;
	uint64_t ds_errors; /* data-server RPCs that failed */
	uint64_t fallbacks; /* I/O ranges sent to the MDS for want of a layout */
	uint64_t mds_read_bytes, mds_write_bytes;
	uint64_t ds_read_bytes, ds_write_bytes;
	unsigned ndev; /* devices known (at most FFC_STATS_DEV_MAX shown) */
	struct ffc_dev_stats dev[FFC_STATS_DEV_MAX];
};
void ffc_stats_get(struct ffc *c, struct ffc_stats *st);

#endif /* BRAID_TOOLS_FFCLIENT_H */
