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
int ds_ctl_setfence(struct nfsd_clnt *c, const struct braid_key *key, const struct ds_objid *id,
		    uint32_t uid, uint32_t gid);

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
 * Any procedure of the program, in either direction (the DS calls REGISTER
 * and HEARTBEAT with it): args and res are the procedure's generated types,
 * res decoded into arena memory (NULL when it holds no opaque or array).
 * Errors as above, except that the reply's own status is left in res.
 */
int ds_ctl_call(struct nfsd_clnt *c, const struct braid_key *key, uint32_t proc, const void *args,
		void *res, struct xdr_arena *arena);

/* A braid_ctl_stat as -errno (above). */
int ds_ctl_errno(int32_t stat);

#endif
