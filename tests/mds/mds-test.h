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

static inline void mt_write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	CHECK(fd >= 0);
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
	CHECK(chmod(path, mode) == 0);
}

/* Scratch dir, key, exports text and config ([mds] lines in extra_conf). */
static inline void mt_prepare(struct mt *t, const char *exports, const char *extra_conf)
{
	memset(t, 0, sizeof(*t));
	t->dir = test_dir_make("mds");
	snprintf(t->key_path, sizeof(t->key_path), "%s/cluster.key", t->dir);
	CHECK(braid_key_create(t->key_path) == 0);
	char msg[256];
	CHECK(braid_key_load(t->key_path, &t->key, msg, sizeof(msg)) == 0);
	snprintf(t->exports_path, sizeof(t->exports_path), "%s/exports", t->dir);
	mt_write_file(t->exports_path, exports, 0644);
	snprintf(t->conf_path, sizeof(t->conf_path), "%s/mds.conf", t->dir);
	char conf[20000];
	snprintf(conf, sizeof(conf),
		 "[mds]\nstore_dir = %s/store\nkey_file = %s\nexports = %s\n"
		 "listen = 127.0.0.1:0\nrpcbind = no\n%s%s",
		 t->dir, t->key_path, t->exports_path,
		 extra_conf && strstr(extra_conf, "grace_time") ? "" : "grace_time = 0\n",
		 extra_conf ? extra_conf : "");
	mt_write_file(t->conf_path, conf, 0644);
}

static inline struct nfsd_clnt *mt_connect(struct mt *t)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)t->port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct nfsd_clnt_opts o = { .timeout_ms = 30000, .reconnect = true };
	int err = 0;
	struct nfsd_clnt *c = nfsd_clnt_new(t->eng, (struct sockaddr *)&sa, sizeof(sa), &o, &err);
	CHECK(c);
	return c;
}

/* (Re)start the MDS on the prepared config; connect the default client. */
static inline void mt_boot(struct mt *t)
{
	struct conf_error cerr;
	if (mds_settings_load(t->conf_path, &t->set, &cerr)) {
		conf_error_print(&cerr, stderr);
		CHECK(0);
	}
	char msg[512];
	int rc = braid_mds_start(&t->set, &t->mds, msg, sizeof(msg));
	if (rc)
		fprintf(stderr, "braid_mds_start: %s\n", msg);
	CHECK(rc == 0);
	t->port = braid_mds_port(t->mds, 0);
	CHECK(t->port > 0);
	int err = 0;
	if (!t->eng)
		t->eng = nfsd_client_engine_new(1, 0, &err);
	CHECK(t->eng);
	t->c = mt_connect(t);
}

static inline void mt_start(struct mt *t, const char *exports, const char *extra_conf)
{
	mt_prepare(t, exports, extra_conf);
	mt_boot(t);
}

/* Stop the MDS (the store stays: mt_boot() again restarts it). */
static inline void mt_stop(struct mt *t)
{
	if (t->c)
		nfsd_clnt_free(t->c);
	t->c = NULL;
	braid_mds_stop(t->mds);
	t->mds = NULL;
}

static inline void mt_finish(struct mt *t)
{
	mt_stop(t);
	if (t->eng)
		nfsd_server_free(t->eng);
	t->eng = NULL;
}

/* A session on the default connection, as AUTH_SYS uid/gid. */
static inline struct nfs41c_session *mt_session(struct mt *t, const char *owner, uint32_t uid,
						uint32_t gid)
{
	struct nfs41c_session *s = NULL;
	int rc = nfs41c_session_create(t->c, owner, 0, &s);
	if (rc)
		fprintf(stderr, "session %s: %d\n", owner, rc);
	CHECK(rc == 0);
	nfs41c_session_set_cred(s, uid, gid);
	return s;
}

/* A COMPOUND that must get a reply (any status); res in arena. */
static inline void mt_compound(struct nfs41c_session *s, const nfs_argop4 *ops, unsigned n,
			       COMPOUND4res *res, struct xdr_arena *arena)
{
	int rc = nfs41c_compound(s, ops, n, res, arena);
	if (rc)
		fprintf(stderr, "compound: %d\n", rc);
	CHECK(rc == 0);
}

/* The status of op i (0-based, after SEQUENCE) of a reply. */
static inline nfsstat4 mt_status(const COMPOUND4res *res, unsigned i)
{
	CHECK(res->resarray.len > i + 1);
	return res->resarray.val[i + 1].u.opillegal.status;
}

static inline nfs_argop4 mt_putrootfh(void)
{
	nfs_argop4 a = { .argop = OP_PUTROOTFH };
	return a;
}

static inline nfs_argop4 mt_getfh(void)
{
	nfs_argop4 a = { .argop = OP_GETFH };
	return a;
}

static inline nfs_argop4 mt_putfh(const nfs_fh4 *fh)
{
	nfs_argop4 a = { .argop = OP_PUTFH };
	a.u.opputfh.object = *fh;
	return a;
}

static inline nfs_argop4 mt_lookup(const char *name)
{
	nfs_argop4 a = { .argop = OP_LOOKUP };
	a.u.oplookup.objname.val = (const uint8_t *)name;
	a.u.oplookup.objname.len = (uint32_t)strlen(name);
	return a;
}

/* A bitmap4 of the attribute numbers given (ending with -1), in arena. */
static inline bitmap4 mt_bitmap(struct xdr_arena *arena, ...)
{
	uint32_t *w = xdr_arena_alloc(arena, 4 * sizeof(uint32_t));
	CHECK(w);
	memset(w, 0, 4 * sizeof(uint32_t));
	unsigned len = 0;
	va_list ap;
	va_start(ap, arena);
	for (int n = va_arg(ap, int); n >= 0; n = va_arg(ap, int)) {
		w[n / 32] |= 1u << (n % 32);
		if ((unsigned)n / 32 + 1 > len)
			len = (unsigned)n / 32 + 1;
	}
	va_end(ap);
	bitmap4 b = { .len = len, .val = w };
	return b;
}

#endif
