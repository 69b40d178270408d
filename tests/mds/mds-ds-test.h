/* SPDX-License-Identifier: MIT */
/*
 * Helpers for cluster tests: braid-mds in-process (tests/mds/mds-test.h)
 * and real braid-ds data servers in the same process, registered with it
 * and sharing its cluster key, plus the NFSv4 data ops through our client.
 *
 *	struct mt m;
 *	mt_start(&m, "/ *(rw,no_root_squash,insecure)\n", "ds_timeout = 3s\n");
 *	cl_pin_port(&m, "ds_timeout = 3s\n");   // restarts keep the port
 *	struct cds a;
 *	cds_prepare(&m, &a, "ds-a", NULL);
 *	cds_start(&m, &a);                       // waits for its REGISTER
 *
 * Include "config.h" before this header.
 */
#ifndef BRAID_TESTS_MDS_MDS_DS_TEST_H
#define BRAID_TESTS_MDS_MDS_DS_TEST_H

#include "tests/dataserver/ds-test.h"
#include "tests/mds/mds-test.h"

#include "mds/data.h"
#include "mds/dsreg.h"
#include "mds/fh.h"
#include "mds/mds_impl.h"

/* The MDS's config with its port fixed, so mt_stop + mt_boot keep it. */
void cl_pin_port(struct mt *m, const char *extra_conf);

/* One data server of the cluster. */
struct cds {
	char name[32];
	char conf_path[4200];
	struct ds_settings set;
	struct braid_ds *ds;
	int port;
	uint32_t id;
	struct nfsd_clnt *c; /* to its control program (and NFSv3) */
};

/* Its config in m's directory: a store of its own, m's key and MDS ([ds] lines in extra). */
void cds_prepare(struct mt *m, struct cds *d, const char *name, const char *extra);

/* CLOCK_MONOTONIC, in seconds. */
double cl_now(void);

/* Until the MDS counts the data server as registered and up (10 s at most). */
void cds_wait_up(struct mt *m, struct cds *d);

/* Until the MDS counts data server id as down (10 s at most); its info then. */
struct mds_ds_info cl_wait_down(struct mt *m, uint32_t id);

/* Start it in this process and wait for its REGISTER. */
void cds_start(struct mt *m, struct cds *d);

/* Stop it (its store stays: cds_start() again restarts it). */
void cds_stop(struct cds *d);

/* ------------------------------------------------------------ files */

/* A file made through the store (not OPEN), and its handle under "/". */
struct cfile {
	uint64_t ino;
	struct mds_attr attr;
	uint8_t fhb[MDS_FH_SIZE];
	nfs_fh4 fh;
};

/* f's handle of ino (generation gen) in the export of the store's root. */
void cl_fh_of(struct mt *m, uint64_t ino, uint64_t gen, struct cfile *f);

/* A regular file name in the root, made with mode. */
void cl_mkfile(struct mt *m, const char *name, uint32_t mode, struct cfile *f);

/* ino's attributes, from the store. */
struct mds_attr cl_attr(struct mt *m, uint64_t ino);

/* SETATTR of the size through the store, then the data servers, as op_attr does. */
void cl_truncate(struct mt *m, uint64_t ino, uint64_t size);

/* The file's object on a data server: 0 and its size, or -ENOENT ... */
int cl_obj_stat(struct mt *m, struct cds *d, const struct cfile *f, uint64_t *size);

/* ------------------------------------------------------------ data ops */

static inline nfs_argop4 cl_read(uint64_t off, uint32_t count)
{
	nfs_argop4 a = {.argop = OP_READ};
	a.u.opread.offset = off;
	a.u.opread.count = count;
	return a;
}

static inline nfs_argop4 cl_write(uint64_t off, stable_how4 how, const void *data, uint32_t len)
{
	nfs_argop4 a = {.argop = OP_WRITE};
	a.u.opwrite.offset = off;
	a.u.opwrite.stable = how;
	a.u.opwrite.data = xdr_opaque_of(data, len);
	return a;
}

static inline nfs_argop4 cl_commit(uint64_t off, uint32_t count)
{
	nfs_argop4 a = {.argop = OP_COMMIT};
	a.u.opcommit.offset = off;
	a.u.opcommit.count = count;
	return a;
}

/* PUTFH + op; the op's status, its result copied to *out (arena memory). */
nfsstat4 cl_op(struct nfs41c_session *s, unsigned flags, const struct cfile *f, nfs_argop4 op,
	       nfs_resop4 *out, struct xdr_arena *arena);

/* WRITE; returns the status, fills count/committed/verf on success. */
nfsstat4 cl_do_write(struct nfs41c_session *s, const struct cfile *f, uint64_t off, stable_how4 how,
		     const void *data, uint32_t len, uint32_t *count, stable_how4 *committed,
		     uint8_t verf[8]);

/* READ into buf; returns the status, *n and *eof on success. */
nfsstat4 cl_do_read(struct nfs41c_session *s, const struct cfile *f, uint64_t off, uint32_t count,
		    void *buf, uint32_t *n, bool *eof);

/* COMMIT; returns the status, the verifier in verf on success. */
nfsstat4 cl_do_commit(struct nfs41c_session *s, const struct cfile *f, uint64_t off, uint32_t count,
		      uint8_t verf[8]);

/* Whether the n bytes at p are all zero. */
bool cl_is_zero(const uint8_t *p, size_t n);

#endif
