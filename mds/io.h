/* SPDX-License-Identifier: MIT */
/*
 * File data through the MDS (mds/op_io.c), for NFSv4's READ, WRITE and
 * COMMIT and NFSv3's (mds/nfs3.c): the data servers' objects as the file's
 * fence, the write gate, the size, mtime and change moved durably before a
 * WRITE replies, space_used noted.  Callers check the handle, the file
 * type and permissions (NFSv4 also the stateid) first.  0 or -errno:
 * -EAGAIN a data server that cannot be reached (DELAY, JUKEBOX), -ENOTSUP
 * an object on a data server without NFSv3, -ENOKEY a krb5p request whose
 * data server hop cannot be sealed (DELAY, JUKEBOX: never in clear).
 */
#ifndef BRAID_MDS_IO_H
#define BRAID_MDS_IO_H

#include <stdbool.h>
#include <stdint.h>

#include "nfsd/xdr.h"

struct braid_mds;
struct mds_attr;
struct nfsd_cred;

/*
 * How a proxied call's data crosses to the data servers, the hop
 * (op_io.c's top): NFSv3 AUTH_SYS as the fence ids, or NFSv4.1 under
 * RPCSEC_GSS as the MDS's principal with a capability, with integrity or
 * privacy.  The request's credential picks it: AUTH_SYS (and AUTH_NONE)
 * SYS, krb5 and krb5i KRB5I (the hop carries data: never without a
 * checksum), krb5p KRB5P.
 */
enum mds_hop { MDS_HOP_SYS, MDS_HOP_KRB5I, MDS_HOP_KRB5P, MDS_HOP_COUNT };
enum mds_hop mds_io_hop(const struct nfsd_cred *cred);

/* At most MDS_IO_MAX bytes from off, cut at the size; data in ar's memory
 * (zeros where no object holds them); eof when the read reaches the end. */
int mds_io_read(struct braid_mds *mds, const struct mds_attr *at, enum mds_hop hop, uint64_t off,
		uint32_t count, struct xdr_arena *ar, xdr_opaque *data, bool *eof);

struct mds_io_wres {
	uint32_t count;
	uint32_t committed; /* stable_how: UNSTABLE, DATA_SYNC, FILE_SYNC (the same in v3, v4) */
	uint8_t verf[8];    /* the file's write verifier (op_io.c's top) */
};
/* len bytes at off (len <= MDS_IO_MAX); -EFBIG past MDS_FILE_MAX. */
int mds_io_write(struct braid_mds *mds, const struct mds_attr *at, enum mds_hop hop, uint64_t off,
		 const uint8_t *p, uint32_t len, uint32_t stable, struct mds_io_wres *res);
/* Flush the data servers' objects; the verifier WRITE gave. -EINVAL: off + count overflows. */
int mds_io_commit(struct braid_mds *mds, const struct mds_attr *at, enum mds_hop hop, uint64_t off,
		  uint32_t count, uint8_t verf[8]);

#endif
