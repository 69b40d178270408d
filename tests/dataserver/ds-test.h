/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the braid-ds service tests: a data server started in-process
 * (or as a braid-ds process) on loopback, our own RPC client, NFSv3 and
 * control calls through the generated codecs.
 */
#ifndef BRAID_TESTS_DATASERVER_DS_TEST_H
#define BRAID_TESTS_DATASERVER_DS_TEST_H

#include "braid_ctl.h"
#include "nfs3_prot.h"

#include <arpa/inet.h>
#include <sys/stat.h>

#include "ctl/client.h"
#include "dataserver/ds.h"
#include "ctl/fh.h"
#include "nfsd/auth_braid.h"
#include "nfsd/rpc.h"
#include "tests/dataserver/store-test.h"

#define DT_UID 20001
#define DT_GID 20002

struct dt {
	const char *dir;
	char key_path[4200], conf_path[4200];
	struct braid_key key;
	struct ds_settings set;
	struct braid_ds *ds;
	int port;
	struct nfsd_server *eng;
	struct nfsd_clnt *c;
};

/* path (created or truncated) holding text, with mode. */
void dt_write_file(const char *path, const char *text, mode_t mode);

/* A new cluster key in dir/cluster.key: its path (len bytes) and the key. */
void dt_key_make(const char *dir, char *path, size_t len, struct braid_key *key);

/* A scratch dir with a key file and a config naming store_dir inside it. */
void dt_prepare(struct dt *t, const char *extra_conf);

/* Another connection of the client engine, to port on loopback. */
struct nfsd_clnt *dt_connect(struct dt *t, int port);

/* Load conf into *set and start a data server in this process with it
 * (set's store test hook, set beforehand, is kept); fails the test else. */
struct braid_ds *dt_ds_start(const char *conf, struct ds_settings *set);

/* Start the data server in this process and connect a client. */
void dt_start(struct dt *t);

/* Stop the data server (the store stays: dt_start() again restarts it). */
void dt_stop(struct dt *t);

/* dt_stop() and the client engine freed. */
void dt_finish(struct dt *t);

/* Object id n (unique per n), generation gen. */
struct ds_objid dt_id(unsigned n, uint64_t gen);

/* Create an object owned by DT_UID/DT_GID mode 0600 and return its handle. */
void dt_create(struct dt *t, const struct ds_objid *id, uint8_t fh[DS_CTL_FH_MAX], uint32_t *fhlen);

/*
 * One NFSv3 call as uid/gid (AUTH_SYS); results decoded into arena memory.
 * Returns nfsd_clnt_call's value (0 when a reply came).
 */
int dt_nfs3(struct nfsd_clnt *c, uint32_t proc, const void *args, void *res,
	    struct xdr_arena *arena, uint32_t uid, uint32_t gid);

static inline nfs_fh3 dt_fh3(const uint8_t *fh, uint32_t len)
{
	nfs_fh3 h = {.data = xdr_opaque_of(fh, len)};
	return h;
}

/* Pattern byte of the data at file offset off (seeded). */
static inline uint8_t dt_pat(uint64_t off, unsigned seed)
{
	uint64_t x = (off / 8) * 0x9e3779b97f4a7c15ull + seed;
	return (uint8_t)(x >> (8 * (off % 8)));
}

/* len bytes of the pattern from file offset off; whether buf holds them. */
void dt_fill(uint8_t *buf, uint64_t off, size_t len, unsigned seed);
bool dt_check(const uint8_t *buf, uint64_t off, size_t len, unsigned seed);

/* WRITE as DT_UID; returns the nfsstat3 (or -1 when no reply); verf out. */
int dt_write(struct nfsd_clnt *c, const uint8_t *fh, uint32_t fhlen, uint64_t off, const void *data,
	     uint32_t len, stable_how how, uint8_t verf[8], uint32_t uid);

/* READ as DT_UID into buf; returns the nfsstat3 (-1: no reply), *n and *eof. */
int dt_read(struct nfsd_clnt *c, const uint8_t *fh, uint32_t fhlen, uint64_t off, uint32_t count,
	    void *buf, uint32_t *n, bool *eof, uint32_t uid);

#endif
