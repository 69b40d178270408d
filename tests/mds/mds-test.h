/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the braid-mds protocol tests: an MDS started in-process on
 * loopback with a scratch store, key and exports file, and NFSv4.1 sessions
 * of our own client (nfsd/nfs41_clnt.h) to drive it.
 *
 *	struct mt t;
 *	mt_start(&t, "/ *(rw,no_root_squash,insecure)\n", NULL);
 *	struct nfs41c_session *s = mt_session(&t, "client-a", 0, 0);   // AUTH_SYS root
 *	nfs_argop4 ops[2] = { mt_putrootfh(), mt_getfh() };
 *	COMPOUND4res res;
 *	mt_compound(s, ops, 2, &res, &arena);    // checks the call went through
 *	CHECK_EQ(res.status, NFS4_OK);
 *	mt_finish(&t);
 *
 * Include "config.h" before this header.
 */
#ifndef BRAID_TESTS_MDS_MDS_TEST_H
#define BRAID_TESTS_MDS_MDS_TEST_H

#include "nfs4_prot.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "mds/mds.h"
#include "nfsd/mac.h"
#include "nfsd/nfs41_clnt.h"
#include "nfsd/rpc.h"
#include "tests/mds/store-test.h"

struct mt {
	const char *dir;
	char key_path[4200], conf_path[4200], exports_path[4200];
	struct braid_key key;
	struct mds_settings set;
	struct braid_mds *mds;
	int port;
	struct nfsd_server *eng; /* client engine */
	struct nfsd_clnt *c;	 /* the default connection */
};

/* path (created or truncated) holding text, with mode. */
void mt_write_file(const char *path, const char *text, mode_t mode);

/* Scratch dir, key, exports text and config ([mds] lines in extra_conf). */
void mt_prepare(struct mt *t, const char *exports, const char *extra_conf);

/* The config's "grace_time = 0" (mt_prepare's) becomes "grace_time =
 * value", for the next mt_boot(). */
void mt_set_grace(struct mt *t, const char *value);

/* Another connection of the client engine to the MDS. */
struct nfsd_clnt *mt_connect(struct mt *t);

/* (Re)start the MDS on the prepared config; connect the default client. */
void mt_boot(struct mt *t);

/* mt_prepare() and mt_boot(). */
void mt_start(struct mt *t, const char *exports, const char *extra_conf);

/* Stop the MDS (the store stays: mt_boot() again restarts it). */
void mt_stop(struct mt *t);

/* mt_stop() and the client engine freed. */
void mt_finish(struct mt *t);

/* A session on the default connection, as AUTH_SYS uid/gid. */
/* A session as a client makes one: EXCHANGE_ID, CREATE_SESSION, then
 * RECLAIM_COMPLETE (RFC 8881 §18.51.3: before its first non-reclaim OPEN
 * or LOCK); mt_session_noreclaim() stops before it (reclaims, grace). */
struct nfs41c_session *mt_session(struct mt *t, const char *owner, uint32_t uid, uint32_t gid);
struct nfs41c_session *mt_session_noreclaim(struct mt *t, const char *owner, uint32_t uid,
					    uint32_t gid);
/* RECLAIM_COMPLETE (rca_one_fs false) on s: must succeed. */
void mt_reclaim_complete(struct nfs41c_session *s);

/* A CB_COMPOUND of CB_SEQUENCE alone to clientid over its back channel
 * (mds_cb_compound): its error, or 0 once the reply said NFS4_OK. */
int mt_cb_seq(struct mt *t, uint64_t clientid);

/* A COMPOUND that must get a reply (any status); res in arena. */
void mt_compound(struct nfs41c_session *s, const nfs_argop4 *ops, unsigned n, COMPOUND4res *res,
		 struct xdr_arena *arena);

/* The status of op i (0-based, after SEQUENCE) of a reply. */
nfsstat4 mt_status(const COMPOUND4res *res, unsigned i);

static inline nfs_argop4 mt_putrootfh(void)
{
	nfs_argop4 a = {.argop = OP_PUTROOTFH};
	return a;
}

static inline nfs_argop4 mt_getfh(void)
{
	nfs_argop4 a = {.argop = OP_GETFH};
	return a;
}

static inline nfs_argop4 mt_putfh(const nfs_fh4 *fh)
{
	nfs_argop4 a = {.argop = OP_PUTFH};
	a.u.opputfh.object = *fh;
	return a;
}

static inline nfs_argop4 mt_lookup(const char *name)
{
	nfs_argop4 a = {.argop = OP_LOOKUP};
	a.u.oplookup.objname.val = (const uint8_t *)name;
	a.u.oplookup.objname.len = (uint32_t)strlen(name);
	return a;
}

/*
 * A test back channel's CB_COMPOUND (RFC 8881 §20.9): checks CB_SEQUENCE
 * comes first (and at most 4 ops), answers it NFS4_OK for its session and
 * seqid, and returns room (from the request's arena) for every op's result,
 * with res holding the CB_SEQUENCE result alone, status NFS4_OK.
 */
nfs_cb_resop4 *mt_cb_reply(struct nfsd_req *r, const CB_COMPOUND4args *args,
			   CB_COMPOUND4res *res);

/* A bitmap4 of the attribute numbers given (ending with -1), in arena. */
bitmap4 mt_bitmap(struct xdr_arena *arena, ...);

#endif
