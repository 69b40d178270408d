/* SPDX-License-Identifier: MIT */
/* braid-mds data servers (mds/dsreg.c): the registry, placement and the
 * MDS's connections to them. */
#ifndef BRAID_MDS_DSREG_H
#define BRAID_MDS_DSREG_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct braid_mds;
struct layout_cand;
struct layout_device;
struct nfsd_clnt;
struct nfsd_program;
struct mds_io_gss;

/*
 * Data servers (dsreg.c); what they hold of each file is data.c's
 * (mds/data.h).
 */
int mds_dsreg_init(struct braid_mds *mds, char *msg, size_t msglen);
void mds_dsreg_release(struct braid_mds *mds);
/* The control program data servers call (REGISTER, HEARTBEAT). */
const struct nfsd_program *mds_dsreg_program(struct braid_mds *mds);
/* Bytes over the data servers that are up (0 and 0 if none): their
 * capacity, and the free space of those new objects may go to (taking
 * them, neither lowspace nor full: mds_dsreg_place). */
void mds_dsreg_space(struct braid_mds *mds, uint64_t *total, uint64_t *avail);

/* What the MDS knows of one data server (braidctl, layouts): a snapshot. */
#define MDS_DS_ADDRS_MAX  16 /* BRAID_CTL_ADDRS_MAX */
#define MDS_DS_PROTOS_MAX 8  /* BRAID_CTL_PROTOS_MAX */
struct mds_ds_addr {
	char netid[33]; /* "tcp", "tcp6", "rdma", "rdma6" */
	char uaddr[65]; /* RFC 5665 universal address, port included */
};
struct mds_ds_proto {
	uint32_t version, minorversion, rsize, wsize;
	bool gss; /* accepts RPCSEC_GSS (BRAID_CTL_PROTO_GSS) */
};
/* A data server's own I/O counters, from its last HEARTBEAT (braidctl top). */
struct mds_ds_iostats {
	uint64_t reads, read_bytes, read_ns, writes, write_bytes, write_ns, commits;
	uint64_t at_ns; /* when that heartbeat came (CLOCK_MONOTONIC); 0: none yet */
};

struct mds_ds_info {
	uint32_t id;
	uint8_t uuid[16];
	char hostname[256];
	bool registered; /* has REGISTERed since this MDS started */
	bool up;	 /* registered and heard from within [mds] ds_timeout */
	bool drained;	 /* by the administrator (mds_dsreg_drain): placement skips it */
	bool lost;	 /* declared lost (mds_dsreg_lost): its copies are rebuilt elsewhere */
	uint32_t health; /* BRAID_CTL_HEALTH_* of the last HEARTBEAT */
	uint64_t capacity, free, objects;
	uint64_t since_heartbeat_ms; /* since the last REGISTER or HEARTBEAT */
	uint8_t boot_verifier[8];
	unsigned naddrs, nctl_addrs, nprotos;
	struct mds_ds_addr addrs[MDS_DS_ADDRS_MAX];	/* for clients (layouts) */
	struct mds_ds_addr ctl_addrs[MDS_DS_ADDRS_MAX]; /* where the MDS calls */
	struct mds_ds_proto protos[MDS_DS_PROTOS_MAX];
	struct mds_ds_iostats io;
};
/* A data server as layouts name it (layout/devid.h: its device ID, the
 * addresses and versions of GETDEVICEINFO). */
void mds_dsreg_device(const struct mds_ds_info *i, struct layout_device *d);
/* Every data server ever registered, by id: up to max of them into out;
 * returns how many there are. */
unsigned mds_dsreg_list(struct braid_mds *mds, struct mds_ds_info *out, unsigned max);
/* One of them: 0, or -ENOENT. */
int mds_dsreg_get(struct braid_mds *mds, uint32_t id, struct mds_ds_info *out);
/*
 * braidctl ds drain / ds add: placement stops (drain) or resumes choosing
 * the data server for new objects; recorded in the bindings file before
 * returning.  0, -ENOENT, or the -errno of the write (nothing changed).
 */
int mds_dsreg_drain(struct braid_mds *mds, uint32_t id, bool drain);
/*
 * braidctl ds lost, or [mds] ds_lost_after: the data server is gone for
 * good.  Recorded in the bindings file before returning; placement skips
 * it and mds/resilver.c rebuilds every copy it held on the others.
 * 'braidctl ds add' (mds_dsreg_drain false) admits it back, empty.  0,
 * -ENOENT, or the -errno of the write (nothing changed).
 */
int mds_dsreg_lost(struct braid_mds *mds, uint32_t id, const char *why);
/*
 * braidctl ds remove: forget the data server: its id is never given again
 * and, should its uuid register anew, it gets a new id.  The caller checks
 * that no file needs it (mds_layout_scan).  0, -ENOENT, -errno of the write.
 */
int mds_dsreg_forget(struct braid_mds *mds, uint32_t id);
/*
 * Placement: a data server for a new object, chosen at random among those
 * up, not draining or read-only and with room (a data server below its
 * reserve, lowspace, or refusing writes for space, full, takes none),
 * weighted by free space.  nfs3: one serving NFSv3 (the MDS's own I/O
 * needs it).  0; -ENOSPC when those up all lack room; -EAGAIN when none is
 * up.
 */
int mds_dsreg_place(struct braid_mds *mds, bool nfs3, uint32_t *id);
/*
 * Data servers new segments may go to (mds/data.c places them with
 * layout/policy.h): up, taking new objects, serving NFSv3, with room and
 * not in avoid; those in avoid only when nothing else is.  Weighted by
 * free space; at most max into out, and how many.  *space_short (may be
 * NULL): none, and some up were left out only for want of room.
 */
unsigned mds_dsreg_candidates(struct braid_mds *mds, const uint32_t *avoid, unsigned navoid,
			      struct layout_cand *out, unsigned max, bool *space_short);
/*
 * The MDS freed space on data server id (removed or cut an object there):
 * it is no longer full; whether it is still below its reserve (lowspace)
 * its next HEARTBEAT says, which the data server sends at once when space
 * is freed: for a server that was short of space, this waits for that
 * HEARTBEAT (200 ms at most), so that space a user frees with rm is
 * usable straight away, and only where it is enough.
 */
void mds_dsreg_space_freed(struct braid_mds *mds, uint32_t id);
/* A random 64-bit number (placement spreads load by it); thread safe. */
uint64_t mds_dsreg_random(struct braid_mds *mds);

/*
 * A reference to the MDS's connection to one data server: control calls
 * (ctl/client.h, with mds->key), NFSv3 calls (AUTH_SYS as the object's
 * fence) and NFSv4.1 calls under RPCSEC_GSS (mds/io_gss.h), each call
 * timed out after timeout_ms.  Fields but gss are set at creation and
 * never change.  The last put ends gss's sessions and context (bounded by
 * timeout_ms).
 */
struct mds_ds_conn {
	atomic_int ref;
	uint32_t id;
	struct nfsd_clnt *clnt;
	uint32_t rsize3, wsize3; /* the DS's NFSv3 rsize/wsize; 0: it serves no NFSv3 */
	/* its NFSv4.1 with RPCSEC_GSS (BRAID_CTL_PROTO_GSS), the Kerberos hop
	 * of proxied I/O (mds/io_gss.h); 0: it takes no GSS */
	uint32_t rsize41g, wsize41g;
	char host[256]; /* its hostname: the acceptor is nfs@host */
	unsigned timeout_ms;
	pthread_mutex_t gss_mu; /* guards gss */
	struct mds_io_gss *gss; /* io_gss.c's context and sessions, made at first use */
};
/* NULL with *err: -EAGAIN (down, or not registered since the MDS started:
 * NFS4ERR_DELAY), -EIO (an id never registered), -errno of the connect. */
struct mds_ds_conn *mds_ds_conn_get(struct braid_mds *mds, uint32_t id, int *err);
/* Whether a data-server call failed for want of the server (down,
 * unreachable, refused, timed out), not for what it said. */
static inline bool mds_ds_unreachable(int rc)
{
	return rc == -EAGAIN || rc == -ETIMEDOUT || rc == -ECONNREFUSED || rc == -ENOTCONN ||
	       rc == -ECONNRESET || rc == -EHOSTUNREACH;
}
void mds_ds_conn_put(struct mds_ds_conn *dc);

#endif
