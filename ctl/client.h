/* SPDX-License-Identifier: MIT */
/*
 * Calling a data server's control protocol (braid_ctl.x) as the MDS does:
 * every call signed with AUTH_BRAID under the cluster key.  Used by
 * braid-mds, braidctl, tests and benchmarks.
 *
 * Functions return 0, or -errno: a braid_ctl_stat maps to -ENOENT (NOENT),
 * -ESTALE (STALE), -EEXIST (EXIST), -EACCES (ACCESS), -EINVAL (INVAL),
 * -ENOSPC (NOSPC), -EIO (IO), -EAGAIN (DELAY), -EREMOTEIO (SERVERFAULT or
 * anything else); transport failures are nfsd_clnt_call's -errno
 * (-ETIMEDOUT, -ECONNREFUSED, ...); an RPC-level refusal is -EPROTO, and
 * -EKEYREJECTED when the DS refused the signature (another cluster key).
 * A call the DS refused as stale or replayed (it was resent after a
 * reconnection) is made again once, freshly signed.
 */
#ifndef BRAID_CTL_CLIENT_H
#define BRAID_CTL_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "ctl/objid.h"
#include "nfsd/mac.h"
#include "nfsd/rpc.h"

#define DS_CTL_FH_MAX 64

int ds_ctl_null(struct nfsd_clnt *c, const struct braid_key *key);
int ds_ctl_create(struct nfsd_clnt *c, const struct braid_key *key, const struct ds_objid *id,
		  uint32_t uid, uint32_t gid, uint32_t mode, uint8_t fh[DS_CTL_FH_MAX],
		  uint32_t *fhlen);
int ds_ctl_remove(struct nfsd_clnt *c, const struct braid_key *key, const struct ds_objid *id);
int ds_ctl_truncate(struct nfsd_clnt *c, const struct braid_key *key, const struct ds_objid *id,
		    uint64_t size);
/* DEALLOCATE: [off, off + len) of the object freed, reading as zeros
 * (whole blocks of the DS's store). */
int ds_ctl_deallocate(struct nfsd_clnt *c, const struct braid_key *key, const struct ds_objid *id,
		      uint64_t off, uint64_t len);
/* SETFENCE: the object owned by uid/gid with permission bits mode (0777
 * at most). */
int ds_ctl_setfence(struct nfsd_clnt *c, const struct braid_key *key, const struct ds_objid *id,
		    uint32_t uid, uint32_t gid, uint32_t mode);

struct ds_ctl_stat {
	uint64_t size, used, change;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
};
int ds_ctl_stat(struct nfsd_clnt *c, const struct braid_key *key, const struct ds_objid *id,
		struct ds_ctl_stat *out);
/* One LIST call: up to max entries into ents, *n of them. */
int ds_ctl_list(struct nfsd_clnt *c, const struct braid_key *key, uint64_t cookie, unsigned max,
		struct ds_list_entry *ents, unsigned *n, uint64_t *next, bool *eof);

/*
 * COPY (braid_ctl.x BRAID_CTLPROC_COPY): the data server c is connected to
 * (the destination) copies part of object id from the source data server
 * at src_addrs into its own object id, reading the source over NFSv3 as
 * uid/gid; the bytes never pass through the caller.  One call moves at most
 * count bytes (capped at DS_CTL_COPY_MAX) from offset, or about 2 seconds'
 * worth, paced to rate bytes/s (0: no limit), and returns where it got to:
 * call again from out->next until out->done.  A call at offset cuts the
 * destination to offset first, so a pass starts at 0 and a repeated call is
 * safe; when done, the destination's size and bytes are the source's (if
 * nothing wrote either object during the pass).  Durable on return.
 *
 * 0 when the copy went as far as out says; else -errno as for the other
 * calls (a transport error is the destination's), with out->side saying
 * whose error a status is (DS_CTL_COPY_DEST, _SOURCE: the source answered
 * it, _SOURCE_DOWN: the source did not answer in time, -EIO) and
 * out->next how far the copy got (braid_ctl_copy_fail).  The destination's
 * own bounds make one call return within about 5 s plus the time to sync
 * what it wrote: the call waits up to DS_CTL_COPY_TIMEOUT_MS, whatever c's
 * own timeout.
 */
#define DS_CTL_COPY_MAX	       (64ull << 20) /* BRAID_CTL_COPY_MAX */
#define DS_CTL_COPY_TIMEOUT_MS 15000
#define DS_CTL_ADDRS_MAX       16 /* BRAID_CTL_ADDRS_MAX */

enum ds_ctl_copy_side {
	DS_CTL_COPY_DEST = 0,	     /* BRAID_CTL_COPY_DEST */
	DS_CTL_COPY_SOURCE = 1,	     /* BRAID_CTL_COPY_SOURCE */
	DS_CTL_COPY_SOURCE_DOWN = 2, /* BRAID_CTL_COPY_SOURCE_DOWN */
};

struct ds_ctl_copy_args {
	struct ds_objid id;
	unsigned nsrc; /* 1 .. DS_CTL_ADDRS_MAX source addresses, tried in order */
	struct {
		const char *netid; /* "tcp" or "tcp6" */
		const char *uaddr; /* RFC 5665 universal address, port included */
	} src[DS_CTL_ADDRS_MAX];
	uint32_t uid, gid; /* the file's fence: read as, and own the copy */
	uint32_t mode;	   /* of an object made by the copy */
	uint64_t offset;   /* 0 to start a pass, else the last call's next */
	uint64_t count;	   /* most bytes to move in this call (>= 1) */
	uint64_t rate;	   /* bytes/s read from the source; 0: no limit */
};

struct ds_ctl_copy_res {
	uint64_t next;		    /* call again from here; on error, how far it got */
	bool done;		    /* the destination is a whole copy of the source */
	uint64_t src_size;	    /* the source's size as the call saw it */
	uint64_t read;		    /* bytes read from the source by this call */
	uint64_t written;	    /* bytes written (blocks of zeros are left as holes) */
	enum ds_ctl_copy_side side; /* on error: whose */
};

int ds_ctl_copy(struct nfsd_clnt *c, const struct braid_key *key, const struct ds_ctl_copy_args *a,
		struct ds_ctl_copy_res *out);

/*
 * A whole pass: ds_ctl_copy from a->offset until done or an error (its
 * -errno, with out as that call left it, side included).  out->read and
 * out->written are the pass's totals; *calls (may be NULL) counts calls.
 */
int ds_ctl_copy_pass(struct nfsd_clnt *c, const struct braid_key *key,
		     const struct ds_ctl_copy_args *a, struct ds_ctl_copy_res *out,
		     unsigned *calls);

/*
 * Any procedure of the program, in either direction (the DS calls REGISTER
 * and HEARTBEAT with it): args and res are the procedure's generated types,
 * res decoded into arena memory (NULL when it holds no opaque or array).
 * Errors as above, except that the reply's own status is left in res.
 */
int ds_ctl_call(struct nfsd_clnt *c, const struct braid_key *key, uint32_t proc, const void *args,
		void *res, struct xdr_arena *arena);
/* The same, waiting up to timeout_ms for the reply whatever c's own
 * timeout (EC_COMPUTE works for seconds). */
int ds_ctl_call_timeout(struct nfsd_clnt *c, const struct braid_key *key, uint32_t proc,
			const void *args, void *res, struct xdr_arena *arena, unsigned timeout_ms);

/* A braid_ctl_stat as -errno (above). */
int ds_ctl_errno(int32_t stat);

#endif
