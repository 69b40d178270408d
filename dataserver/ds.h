/* SPDX-License-Identifier: MIT */
/*
 * braid-ds, the data server, as a library: settings (nfs.conf-style INI
 * through a schema), start and stop.  dataserver/main.c is the daemon's
 * thin main; tests start it in-process or as a process.
 *
 * What a running data server serves, on every address it listens on:
 *  - NFSv3 (RFC 1813) READ, WRITE, COMMIT, GETATTR, SETATTR (size),
 *    ACCESS, FSINFO, FSSTAT, PATHCONF on object handles (ctl/fh.h);
 *  - NFSv4.1 and 4.2 as a pNFS data server (dataserver/nfs41.c);
 *  - the control protocol (braid_ctl.x) to braid-mds, authenticated with
 *    AUTH_BRAID (nfsd/auth_braid.h): a call without a valid signature under
 *    the cluster key gets BRAID_CTL_ACCESS or an RPC AUTH_ERROR.
 * When an MDS is configured it REGISTERs there and sends HEARTBEATs.
 */
#ifndef BRAID_DATASERVER_DS_H
#define BRAID_DATASERVER_DS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "nfsd/conf.h"

enum ds_io_mode { DS_IO_URING = 0, DS_IO_PSYNC = 1 };

struct ds_settings {
	char store_dir[PATH_MAX];
	bool create;          /* make the store when store_dir holds none */
	bool direct_io;
	int io;               /* enum ds_io_mode */
	uint64_t block_size;  /* CRC block of a new store */
	int64_t max_open;
	struct conf_addrs listen;
	struct conf_addrs rdma_listen; /* RPC-over-RDMA (RFC 8166); n == 0: none */
	struct conf_addrs advertise;  /* what clients are told; n == 0: listen */
	struct conf_addrs ctl_advertise; /* where the MDS calls; n == 0: advertise */
	char key_file[PATH_MAX];
	char keytab[PATH_MAX]; /* RPCSEC_GSS acceptor keys; "": no GSS */
	struct conf_addrs mds;        /* n == 0: no MDS (tests, benchmarks) */
	char hostname[256];           /* empty: gethostname() */
	bool nfs3, nfs41;
	uint64_t max_io;              /* rsize/wsize */
	int64_t loops, workers;       /* 0: automatic */
	int64_t read_window;          /* page-cache READs per connection in progress */
	uint64_t scrub_interval_ms;   /* 0: no background scrub */
	uint64_t reserve;             /* lowspace below this free; 0: ds_reserve()'s */
	struct conf_addrs metrics_listen; /* GET /metrics (Prometheus); n == 0: off */
	/* Not in the file; tests set it after ds_settings_load:
	 * ds_store_opts.test_mapped_hook and its argument. */
	void (*store_test_mapped_hook)(int data_fd, void *arg);
	void *store_test_arg;
};

extern const struct conf_schema ds_conf_schema[];

/* Defaults, then the file; see conf_load() for the errors. */
int ds_settings_load(const char *path, struct ds_settings *s, struct conf_error *err);

struct braid_ds;
struct ds_store;
struct ds_scrub_stats;

/* Open the store and start serving.  -errno with a reason in msg. */
int braid_ds_start(const struct ds_settings *s, struct braid_ds **out, char *msg, size_t msglen);
/* Stop serving, close the store cleanly, free everything. */
int braid_ds_stop(struct braid_ds *ds);

/* The port actually bound for listen address idx (listen port 0 picks one). */
int braid_ds_port(const struct braid_ds *ds, unsigned idx);
unsigned braid_ds_nports(const struct braid_ds *ds);

/* The store, for tests and the scrub command. */
struct ds_store *braid_ds_store(struct braid_ds *ds);

/* Assigned by the MDS at REGISTER; 0 before that or with no MDS. */
uint32_t braid_ds_id(const struct braid_ds *ds);

/* The port bound for [ds] metrics_listen address idx; -1 when off or past the end. */
int braid_ds_metrics_port(const struct braid_ds *ds, unsigned idx);

/* Run a scrub now (blocking); returns what ds_store_scrub returns. */
int braid_ds_scrub(struct braid_ds *ds, struct ds_scrub_stats *st);

#endif
