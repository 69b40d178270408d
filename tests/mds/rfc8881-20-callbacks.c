/* SPDX-License-Identifier: MIT */
/*
 * braid-mds calls clients back over the connection they bound for it and
 * no other (RFC 8881 §2.10.3.1, §18.34, §20): a client with two
 * connections (as with nconnect) that asked for the back channel on one
 * gets CB_NULL and CB_COMPOUND only there; BIND_CONN_TO_SESSION moves it;
 * when the bound connection dies the next callback uses the other bound
 * one.  CB_SEQUENCE carries the session and a slot 0 seqid that moves by
 * one per call (§20.9.3).  A session with no back channel gets no call and
 * SEQUENCE reports SEQ4_STATUS_CB_PATH_DOWN.
 */
#include "config.h"

#include "nfs4_prot.h"

#include <stdatomic.h>

#include "mds/callback.h"
#include "tests/mds/mds-test.h"

#define CBPROG 0x40000000u

/* What one client connection saw on its back channel. */
struct cbconn {
	atomic_int nulls, compounds;
	atomic_uint last_seqid, last_minor;
	sessionid4 last_sid;
};

static int cb_null(struct nfsd_req *r, void *a, void *res)
{
	struct cbconn *cc = r->priv;
	atomic_fetch_add(&cc->nulls, 1);
	return NFSD_SUCCESS;
}

static int cb_compound(struct nfsd_req *r, void *a, void *resv)
{
	struct cbconn *cc = r->priv;
	CB_COMPOUND4args *args = a;
	CB_COMPOUND4res *res = resv;
	memset(res, 0, sizeof(*res));
	atomic_fetch_add(&cc->compounds, 1);
	atomic_store(&cc->last_minor, args->minorversion);
	CHECK(args->argarray.len >= 1);
	CHECK_EQ(args->argarray.val[0].argop, OP_CB_SEQUENCE);
	const CB_SEQUENCE4args *sa = &args->argarray.val[0].u.opcbsequence;
	CHECK_EQ(sa->csa_slotid, 0);
	memcpy(cc->last_sid, sa->csa_sessionid, sizeof(sessionid4));
	atomic_store(&cc->last_seqid, sa->csa_sequenceid);
	nfs_cb_resop4 *ro = xdr_arena_alloc(&r->arena, sizeof(*ro));
	CHECK(ro);
	memset(ro, 0, sizeof(*ro));
	ro->resop = OP_CB_SEQUENCE;
	CB_SEQUENCE4resok *ok = &ro->u.opcbsequence.u.csr_resok4;
	memcpy(ok->csr_sessionid, sa->csa_sessionid, sizeof(sessionid4));
	ok->csr_sequenceid = sa->csa_sequenceid;
	res->status = NFS4_OK;
	res->resarray.len = 1;
	res->resarray.val = ro;
	return NFSD_SUCCESS;
}

static struct nfsd_proc cb_procs[2] = {
	{ .name = "CB_NULL", .fn = cb_null, .flags = NFSD_PROC_INLINE },
	{ .name = "CB_COMPOUND", .fn = cb_compound, .flags = NFSD_PROC_INLINE },
};
static struct nfsd_version cb_vers = { .vers = 1, .procs = cb_procs, .nprocs = 2 };

static struct nfsd_program cb_prog[3]; /* one per connection: priv says which */
static struct cbconn seen[3];

static struct nfsd_clnt *conn_with_cb(struct mt *t, unsigned i)
{
	cb_prog[i] = (struct nfsd_program){ .prog = CBPROG, .name = "cb", .versions = &cb_vers,
					    .nversions = 1, .priv = &seen[i] };
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)t->port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct nfsd_clnt_opts o = { .timeout_ms = 20000, .backchannel = &cb_prog[i],
				    .backchannel_priv = &seen[i] };
	int err = 0;
	struct nfsd_clnt *c = nfsd_clnt_new(t->eng, (struct sockaddr *)&sa, sizeof(sa), &o, &err);
	CHECK(c);
	return c;
}

/* SEQUENCE alone on conn; returns sr_status_flags. */
static uint32_t ping(struct nfs41c_session *s, struct nfsd_clnt *conn)
{
	uint8_t buf[4096];
	struct xdr_arena ar;
	xdr_arena_init(&ar, buf, sizeof(buf), 1 << 20);
	COMPOUND4res res;
	CHECK_EQ(nfs41c_compound_ex(s, conn, 0, NULL, 0, &res, &ar), 0);
	CHECK_EQ(res.status, NFS4_OK);
	uint32_t flags = res.resarray.val[0].u.opsequence.u.sr_resok4.sr_status_flags;
	xdr_arena_release(&ar);
	return flags;
}

int main(void)
{
	nfsd_procs_bind(cb_procs, 2, &xdr_desc_NFS4_CALLBACK_NFS_CB);
	struct mt t;
	mt_start(&t, "/ *(rw,no_root_squash)\n", NULL);

	struct nfsd_clnt *a = conn_with_cb(&t, 0), *b = conn_with_cb(&t, 1);
	struct nfs41c_session_opts so = { .owner = "cb-client",
					  .create_flags = CREATE_SESSION4_FLAG_CONN_BACK_CHAN,
					  .cb_program = CBPROG };
	struct nfs41c_session *s;
	CHECK_EQ(nfs41c_session_create_opts(a, &so, &s), 0);
	struct nfs41c_session_info info;
	nfs41c_session_info(s, &info);
	CHECK(info.create_flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN);

	/* b carries fore-channel traffic only (bound by use, §2.10.3.1) */
	CHECK(!(ping(s, b) & SEQ4_STATUS_CB_PATH_DOWN));
	CHECK(!(ping(s, a) & SEQ4_STATUS_CB_PATH_DOWN));
	for (int i = 0; i < 3; i++)
		CHECK_EQ(mds_cb_null(t.mds, info.clientid), 0);
	CHECK_EQ(atomic_load(&seen[0].nulls), 3);
	CHECK_EQ(atomic_load(&seen[1].nulls), 0);

	/* CB_SEQUENCE: our session, slot 0, seqid 1, 2, 3 */
	for (unsigned i = 1; i <= 3; i++) {
		CHECK_EQ(mt_cb_seq(&t, info.clientid), 0);
		CHECK_EQ(atomic_load(&seen[0].last_seqid), i);
		CHECK(!memcmp(seen[0].last_sid, info.sessionid, sizeof(sessionid4)));
		CHECK_EQ(atomic_load(&seen[0].last_minor), 1); /* the session's */
	}
	CHECK_EQ(atomic_load(&seen[0].compounds), 3);
	CHECK_EQ(atomic_load(&seen[1].compounds), 0);

	/* binding b for both directions moves the back channel there */
	channel_dir_from_server4 got;
	CHECK_EQ(nfs41c_session_bind(s, b, CDFC4_FORE_OR_BOTH, &got), 0);
	CHECK_EQ(got, CDFS4_BOTH);
	CHECK_EQ(mt_cb_seq(&t, info.clientid), 0);
	CHECK_EQ(atomic_load(&seen[1].compounds), 1);
	CHECK_EQ(atomic_load(&seen[1].last_seqid), 4);
	CHECK_EQ(atomic_load(&seen[0].compounds), 3);

	/* b dies: a callback fails over to a, the other bound connection */
	nfsd_clnt_free(b);
	int ok = 0;
	for (int i = 0; i < 3 && !ok; i++)
		ok = mds_cb_null(t.mds, info.clientid) == 0;
	CHECK(ok);
	CHECK(atomic_load(&seen[0].nulls) >= 4);
	CHECK_EQ(mt_cb_seq(&t, info.clientid), 0);
	CHECK_EQ(atomic_load(&seen[0].compounds), 4);
	CHECK_EQ(atomic_load(&seen[0].last_seqid), 5);

	/* a session with no back channel: no callback, CB_PATH_DOWN */
	struct nfsd_clnt *c = conn_with_cb(&t, 2);
	struct nfs41c_session_opts so2 = { .owner = "no-cb-client", .cb_program = CBPROG };
	struct nfs41c_session *s2;
	CHECK_EQ(nfs41c_session_create_opts(c, &so2, &s2), 0);
	struct nfs41c_session_info info2;
	nfs41c_session_info(s2, &info2);
	CHECK(ping(s2, c) & SEQ4_STATUS_CB_PATH_DOWN);
	CHECK_EQ(mds_cb_null(t.mds, info2.clientid), -ENOTCONN);
	CHECK_EQ(mt_cb_seq(&t, info2.clientid), -ENOTCONN);
	CHECK_EQ(atomic_load(&seen[2].nulls), 0);

	/* a session created over NFSv4.2 gets CB_COMPOUNDs of minor version 2
	 * (Linux looks its client up by it: another one is BADSESSION) */
	struct nfs41c_session_opts so3 = { .owner = "cb-client-42",
					   .create_flags = CREATE_SESSION4_FLAG_CONN_BACK_CHAN,
					   .cb_program = CBPROG,
					   .minorversion = 2 };
	struct nfsd_clnt *d = conn_with_cb(&t, 2);
	struct nfs41c_session *s3;
	CHECK_EQ(nfs41c_session_create_opts(d, &so3, &s3), 0);
	struct nfs41c_session_info info3;
	nfs41c_session_info(s3, &info3);
	CHECK_EQ(mt_cb_seq(&t, info3.clientid), 0);
	CHECK_EQ(atomic_load(&seen[2].compounds), 1);
	CHECK_EQ(atomic_load(&seen[2].last_minor), 2);
	CHECK_EQ(nfs41c_session_destroy(s3), 0);
	nfsd_clnt_free(d);

	CHECK_EQ(nfs41c_session_destroy(s2), 0);
	CHECK_EQ(nfs41c_session_destroy(s), 0);
	nfsd_clnt_free(c);
	nfsd_clnt_free(a);
	mt_finish(&t);
	return 0;
}
