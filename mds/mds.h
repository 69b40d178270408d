/* SPDX-License-Identifier: MIT */
/*
 * braid-mds: the NFSv3 and NFSv4.1/4.2 metadata server, as a library the daemon's
 * thin main() and the tests link.  Settings come from the [mds] section of
 * an nfs.conf-style file read through mds_conf_schema (unknown keys and bad
 * values stop startup with file:line); exports from an /etc/exports-syntax
 * file.  See braid-mds(8), braid-exports(5) and docs/architecture.md.
 */
#ifndef BRAID_MDS_MDS_H
#define BRAID_MDS_MDS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "nfsd/conf.h"

/* What the MDS does with READ/WRITE/COMMIT of file data sent to it. */
enum mds_data_io {
	MDS_DATA_PROXY = 0,  /* serve them by calling the data server */
	MDS_DATA_REFUSE = 1, /* refuse (tests proving clients use layouts) */
};

/* Which delegations OPEN may grant ([mds] delegations; mds/deleg.c). */
enum mds_delegations {
	MDS_DELEGATIONS_ON = 0,	  /* read and write delegations */
	MDS_DELEGATIONS_READ = 1, /* read delegations only */
	MDS_DELEGATIONS_OFF = 2,
};

struct mds_settings {
	char store_dir[PATH_MAX];      /* the LMDB metadata store */
	struct conf_addrs listen;      /* NFSv4.1/4.2, MOUNT v3 and the control protocol */
	struct conf_addrs rdma_listen; /* NFS over RPC-over-RDMA (RFC 8166); n == 0: none */
	char exports[PATH_MAX];	       /* /etc/exports syntax */
	char key_file[PATH_MAX];       /* cluster key shared with braid-ds */
	char keytab[PATH_MAX];	       /* RPCSEC_GSS acceptor keys; "": no GSS */
	uint64_t lease_ms;	       /* NFSv4 lease */
	uint64_t grace_ms;	       /* grace period after a restart */
	int64_t loops, workers;	       /* 0: automatic */
	bool mount;		       /* serve MOUNT v3 (showmount -e) */
	bool nfs3;		       /* serve NFSv3 */
	bool rpcbind;		       /* register with rpcbind when one runs */
	bool nlm;		       /* serve NLM v4 and NSM (with nfs3) */
	char nsm_name[256];	       /* SM_NOTIFY's mon_name; "": the address called */
	int64_t nlm_rpcbind_port;      /* clients' rpcbind port, for callbacks (111) */
	int data_io;		       /* enum mds_data_io */
	uint64_t small_file_threshold; /* proxy: smaller files written through the MDS; 0: none */
	uint64_t heartbeat_ms;	       /* interval asked of data servers */
	uint64_t ds_timeout_ms;	       /* no heartbeat this long: DS is down */
	uint64_t resilver_rate;	       /* bytes/s a resilver copy reads; 0: no bound */
	int64_t resilver_copies;       /* copies made at once, all told */
	int64_t resilver_copies_per_ds; /* of which into one data server */
	uint64_t ds_lost_after_ms;     /* down this long: declared lost; 0: never */
	uint64_t ec_seal_after_ms;     /* erasure coding: unchanged this long, sealed */
	uint64_t ec_scrub_interval_ms; /* a scrub pass of sealed files this often; 0: none */
	/* the layout policy of files no directory gives one (layout/policy.h) */
	int layout;		       /* enum layout_mode - 1: whole, segments, striped */
	uint64_t layout_segment_size;  /* segments: the grid */
	int64_t layout_width;	       /* data servers per file; 0: all (at most 15) */
	int64_t layout_mirrors;	       /* copies on distinct data servers */
	int64_t layout_stripes;	       /* striped: data servers per mirror */
	uint64_t layout_stripe_unit;   /* striped: bytes per stripe unit */
	struct conf_addrs metrics_listen; /* GET /metrics (Prometheus); n == 0: off */
	int delegations;		  /* enum mds_delegations */
	int64_t delegations_max;	  /* outstanding at most; none granted past it */
	int64_t recall_any_above;	  /* delegations + layouts: CB_RECALL_ANY past it; 0: never */
};

extern const struct conf_schema mds_conf_schema[];

/* Defaults, then the file; see conf_load() for the errors. */
int mds_settings_load(const char *path, struct mds_settings *s, struct conf_error *err);
/* Defaults only (tests fill in the rest). */
void mds_settings_default(struct mds_settings *s);

struct braid_mds;

/* Open the store, load exports and start serving.  -errno with a reason in msg. */
int braid_mds_start(const struct mds_settings *s, struct braid_mds **out, char *msg,
		    size_t msglen);
/* Stop serving, close the store cleanly, free everything. */
void braid_mds_stop(struct braid_mds *mds);

/* The port actually bound for listen address idx (port 0 picks one); -1 past the end. */
int braid_mds_port(const struct braid_mds *mds, unsigned idx);
unsigned braid_mds_nports(const struct braid_mds *mds);
/* The port bound for [mds] metrics_listen address idx; -1 when off or past the end. */
int braid_mds_metrics_port(const struct braid_mds *mds, unsigned idx);

/* Re-read the exports file (SIGHUP, braidctl exports reload).  On error the
 * old exports stay in force and msg says why. */
int braid_mds_exports_reload(struct braid_mds *mds, char *msg, size_t msglen);

struct mds_store;
struct mds_store *braid_mds_store(struct braid_mds *mds);

#endif
