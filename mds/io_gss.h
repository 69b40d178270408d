/* SPDX-License-Identifier: MIT */
/*
 * The Kerberos hop of the MDS's proxied I/O (mds/io_gss.c): NFSv4.1
 * COMPOUNDs to a data server under RPCSEC_GSS, as the MDS's own principal
 * (the first of [mds] keytab), for mds/op_io.c.
 */
#ifndef BRAID_MDS_IO_GSS_H
#define BRAID_MDS_IO_GSS_H

#include "mds/io.h"
#include "nfs4_prot.h"

struct braid_mds;
struct mds_ds_conn;
struct mds_io_gss;

/*
 * SEQUENCE + ops[0..nops) to dc's data server at hop's service
 * (MDS_HOP_KRB5I or MDS_HOP_KRB5P), on that connection's session for it
 * (made at the first use, then kept with dc).  0 with res (decoded into
 * ar), or -errno: -ENOKEY the hop could not be secured (no context: the
 * KDC, our keytab, or the data server refused; or the data server refused
 * the session), -EAGAIN transport trouble or a session lost twice, -EIO an
 * RPC-level refusal.  Not from a loop thread.
 */
int mds_io_gss_compound(struct braid_mds *mds, struct mds_ds_conn *dc, enum mds_hop hop,
			const nfs_argop4 *ops, unsigned nops, COMPOUND4res *res,
			struct xdr_arena *ar);
/* dc's sessions and context (DESTROY_SESSION, RPCSEC_GSS_DESTROY: bounded
 * by the connection's call timeout); NULL: nothing. */
void mds_io_gss_free(struct mds_io_gss *h);

#endif
