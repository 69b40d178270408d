/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the layout tests (mds/op_layout.c): braid-mds and real
 * braid-ds data servers in this process (tests/mds/mds-ds-test.h), our
 * client's LAYOUTGET, GETDEVICEINFO, LAYOUTCOMMIT, LAYOUTRETURN with the
 * flexfiles bodies decoded into plain structs, I/O straight to a data
 * server over NFSv3 with a layout's handle and synthetic uid/gid (as the
 * Linux client does), and a test back channel that answers CB_LAYOUTRECALL
 * and records CB_NOTIFY_DEVICEID.
 *
 * Include "config.h" before this header.
 */
#ifndef BRAID_TESTS_MDS_LAYOUT_TEST_H
#define BRAID_TESTS_MDS_LAYOUT_TEST_H

#include "flexfiles.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "tests/mds/mds-ds-test.h"
#include "tests/mds/state-test.h"

#include "mds/fh.h"
#include "mds/layout.h"

#define MiB    (1u << 20)
#define LT_NDS 4

/* ------------------------------------------------------------ the cluster */

struct lt {
	struct mt m;
	struct cds ds[LT_NDS];
	unsigned nds;
};

/* MDS ([mds] lines in conf) and nds data servers, all registered and up. */
void lt_start(struct lt *L, const char *exports, const char *conf, unsigned nds);

/* Stop the data servers, then the MDS. */
void lt_finish(struct lt *L);

/* The data server with that id, or listening on that port (NULL: none). */
struct cds *lt_ds_by_id(struct lt *L, uint32_t id);
struct cds *lt_ds_by_port(struct lt *L, int port);

/* "h1.h2.h3.h4.p1.p2" -> the port. */
int lt_uaddr_port(const char *ua);

/* ------------------------------------------------------------ layouts */

/* One data server of a layout, decoded (RFC 8435 §5.1). */
struct lt_ds {
	deviceid4 dev;
	uint32_t efficiency;
	stateid4 sid;
	unsigned nfh;
	uint8_t fh[NFS4_FHSIZE];
	uint32_t fhlen;
	uint32_t uid, gid; /* parsed from ffds_user / ffds_group */
	char user[32], group[32];
};

struct lt_layout {
	bool roc;
	stateid4 sid;
	unsigned nlayouts; /* layout4s in the reply */
	uint64_t offset, length;
	layoutiomode4 iomode;
	uint64_t stripe_unit;
	uint32_t flags;
	unsigned nmirrors, nstripes;
	struct lt_ds ds[16]; /* mirror by mirror */
};

struct lt_get {
	layoutiomode4 iomode;
	uint64_t offset, length, minlength;
	stateid4 sid;
	uint32_t maxcount; /* 0: 4096, as Linux */
	layouttype4 type;  /* 0: LAYOUT4_FLEX_FILES */
	bool use_current;  /* the stateid is the current one (from OPEN in the same COMPOUND) */
};

/* PUTFH + LAYOUTGET: the status; a decoded reply in *out on NFS4_OK. */
nfsstat4 lt_layoutget(struct nfs41c_session *s, const struct ts_fh *f, const struct lt_get *g,
		      struct lt_layout *out);

/* The common case: one page at off, as the Linux client asks. */
nfsstat4 lt_get_page(struct nfs41c_session *s, const struct ts_fh *f, layoutiomode4 mode,
		     uint64_t off, const stateid4 *sid, struct lt_layout *out);

/* ------------------------------------------------------------ devices */

struct lt_dev {
	unsigned naddrs;
	char netid[16][33], uaddr[16][65];
	unsigned nvers;
	ff_device_versions4 vers[8];
	uint32_t notification;
	uint32_t mincount; /* NFS4ERR_TOOSMALL */
	uint32_t body_len;
};

/* GETDEVICEINFO of dev asking for the notify types in one bitmap word: the
 * status; *out decoded on NFS4_OK, its mincount on NFS4ERR_TOOSMALL. */
nfsstat4 lt_getdeviceinfo(struct nfs41c_session *s, const deviceid4 dev, uint32_t maxcount,
			  uint32_t notify, struct lt_dev *out);

#define LT_NOTIFY_BOTH ((1u << NOTIFY_DEVICEID4_CHANGE) | (1u << NOTIFY_DEVICEID4_DELETE))

/* The data server a device ID leads to, through GETDEVICEINFO's address. */
struct cds *lt_ds_of_dev(struct lt *L, struct nfs41c_session *s, const deviceid4 dev);

/* ----------------------------------------------------- commit and return */

/* LAYOUTCOMMIT with a last write offset (lwo < 0: none); *size if it moved. */
nfsstat4 lt_layoutcommit(struct nfs41c_session *s, const struct ts_fh *f, uint64_t off,
			 uint64_t len, const stateid4 *sid, int64_t lwo, bool *changed,
			 uint64_t *size);

/* LAYOUTRETURN of a file's range with an optional ff_layoutreturn4 body. */
nfsstat4 lt_layoutreturn(struct nfs41c_session *s, const struct ts_fh *f, layoutiomode4 mode,
			 uint64_t off, uint64_t len, const stateid4 *sid, xdr_opaque body,
			 bool *present, stateid4 *out);

/* LAYOUTRETURN of the whole file, any iomode, with no body. */
nfsstat4 lt_return_all(struct nfs41c_session *s, const struct ts_fh *f, const stateid4 *sid);

/* ------------------------------------------------------ data server I/O */

/* WRITE3 straight to a data server as uid/gid: the nfsstat3 (-1: no reply). */
int lt_ds_write(struct cds *d, const struct lt_ds *x, uint64_t off, const void *buf, uint32_t len,
		stable_how how, uint32_t uid, uint32_t gid);

/* READ3 straight to a data server as uid/gid into buf: the nfsstat3 (-1: no
 * reply), *n on success. */
int lt_ds_read(struct cds *d, const struct lt_ds *x, uint64_t off, void *buf, uint32_t len,
	       uint32_t uid, uint32_t gid, uint32_t *n);

/* COMMIT3 of the whole object as uid/gid: the nfsstat3 (-1: no reply). */
int lt_ds_commit(struct cds *d, const struct lt_ds *x, uint32_t uid, uint32_t gid);

/* READ through the MDS (proxied) of [off, off + len): the status. */
nfsstat4 lt_mds_read(struct nfs41c_session *s, const struct ts_fh *f, uint64_t off, uint32_t len,
		     void *buf, uint32_t *n);

/* WRITE (FILE_SYNC4) through the MDS (proxied): the status. */
nfsstat4 lt_mds_write(struct nfs41c_session *s, const struct ts_fh *f, uint64_t off,
		      const void *buf, uint32_t len);

/* The inode behind a handle, through the MDS's own parser. */
uint64_t lt_ino(struct lt *L, const struct ts_fh *f);

/* --------------------------------------------------- a test back channel */

#define LT_CBPROG 0x40000000u

enum lt_cb_mode {
	LT_CB_OK = 0,	 /* answer CB_LAYOUTRECALL with NFS4_OK */
	LT_CB_DELAY = 1, /* NFS4ERR_DELAY while delays > 0, then NFS4_OK */
	LT_CB_NOMATCH = 2,
};

/* What the back channel saw, written on the client engine's loop thread. */
struct lt_cb {
	atomic_int recalls, notifies;
	atomic_int mode, delays;
	pthread_mutex_t mu;
	CB_LAYOUTRECALL4args last; /* fh copied into last_fh */
	uint8_t last_fh[NFS4_FHSIZE];
	deviceid4 last_deleted; /* from CB_NOTIFY_DEVICEID */
	atomic_int deleted;
};

/* The back channel's record, for every lt_session_cb() session. */
extern struct lt_cb lt_cbs;

/* A connection of ours with a back channel, and an AUTH_SYS root session on it. */
struct nfs41c_session *lt_session_cb(struct lt *L, const char *owner, struct nfsd_clnt **conn);

/* Waits (up to secs) for *counter to reach at least n. */
void lt_wait_count(atomic_int *counter, int n, double secs);

/* OPEN (create) name in dir for read and write: its fh and open stateid. */
void lt_create(struct nfs41c_session *s, const struct ts_fh *dir, const char *name,
	       struct ts_openres *o);

/* A directory made through the store in parent (NULL: the root), with a
 * layout policy given in text (NULL: none of its own). */
void lt_mkdir_in(struct lt *L, const struct ts_fh *parent, const char *name, const char *policy,
		 struct ts_fh *out);

/* lt_mkdir_in() the root. */
void lt_mkdir_policy(struct lt *L, const char *name, const char *policy, struct ts_fh *out);

#endif
