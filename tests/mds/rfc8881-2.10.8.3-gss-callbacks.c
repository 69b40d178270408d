/* SPDX-License-Identifier: MIT */
/*
 * braid-mds calls back under RPCSEC_GSS (RFC 8881 §2.10.8.3, §18.33,
 * §18.36), in the realm tests/mds/rfc8881-2.10.8.3-gss-callbacks.sh sets
 * up (the server's keys in argv[1], the client's in KRB5_CLIENT_KTNAME).
 * Our client makes krb5 contexts with the MDS, and its back channel takes
 * RPCSEC_GSS calls through a flavor of its own engine that checks them
 * with the client's end of the context.  It proves:
 *  - CREATE_SESSION offering only RPCSEC_GSS with a context's handles:
 *    a CB_COMPOUND arrives with handle_from_client in its credential,
 *    krb5i, a header MIC that verifies and arguments whose checksum
 *    verifies and carry the credential's sequence number (numbers rise);
 *    our signed reply completes it;
 *  - a reply whose verifier does not verify fails the callback (-EPROTO);
 *  - a stale handle, or a context of another principal, is not usable:
 *    GSS alone is NFS4ERR_ENCR_ALG_UNSUPP, beside AUTH_SYS AUTH_SYS wins;
 *  - BACKCHANNEL_CTL switches to AUTH_SYS, and back to GSS with krb5p
 *    (arguments sealed, results sealed);
 *  - the context's RPCSEC_GSS_DESTROY: SEQUENCE reports
 *    SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRED and no callback goes out until
 *    BACKCHANNEL_CTL gives a live context.
 */
#include "config.h"

#include "nfs4_prot.h"
#include "rpcsec_gss.h"

#include <stdatomic.h>

#include "mds/callback.h"
#include "nfsd/clnt_gss.h"
#include "tests/mds/krb5-test.h"
#include "nfsd/k5msg.h"
#include "tests/mds/mds-test.h"

#define CBPROG 0x40000000u
#define CLIENT "nfs/client.braid.test"

/* What the back channel expects and saw; set while no callback runs. */
static struct {
	struct k5msg *km; /* the client's end of the context */
	uint8_t hfc[32];
	uint32_t hfc_len, service;
	bool bad_verf; /* answer with a verifier that does not verify */
	atomic_int gss_calls, sys_calls, compounds;
	atomic_uint last_seq;
} cbs;

struct tf_req {
	uint32_t seq, service;
};

static int tf_accept(struct nfsd_req *r, const xdr_opaque *cred, const xdr_opaque *verf)
{
	rpc_gss_cred_t gc;
	struct xdr_dec d;
	xdr_dec_init(&d, cred->val, cred->len, &r->arena);
	CHECK_EQ(xdr_dec_rpc_gss_cred_t(&d, &gc), 0);
	const rpc_gss_cred_vers_1_t *cv = &gc.u.rgc_cred_v1;
	CHECK_EQ(gc.rgc_version, RPCSEC_GSS_VERS_1);
	CHECK_EQ(cv->gss_proc, RPCSEC_GSS_DATA);
	CHECK_EQ(cv->service, cbs.service);
	CHECK_EQ(cv->handle.len, cbs.hfc_len);
	CHECK(!memcmp(cv->handle.val, cbs.hfc, cbs.hfc_len));
	CHECK(cv->seq_num > atomic_load(&cbs.last_seq));
	atomic_store(&cbs.last_seq, cv->seq_num);
	/* the verifier: the MIC of the header, from the xid through the
	 * credential, made by the acceptor */
	CHECK_EQ(xdr_get32(verf->val - 8), NFSD_RPCSEC_GSS);
	struct iovec hdr = {(void *)r->rec, (size_t)(verf->val - 8 - r->rec)};
	CHECK(!GSS_ERROR(k5msg_verify_mic(cbs.km, &hdr, 1, verf->val, verf->len)));
	struct tf_req *q = xdr_arena_alloc(&r->arena, sizeof(*q));
	CHECK(q);
	q->seq = cv->seq_num;
	q->service = (uint32_t)cv->service;
	r->flavor_ctx = q;
	uint8_t be[4];
	xdr_put32(be, cv->seq_num);
	struct iovec in = {be, 4};
	size_t ml;
	CHECK(!GSS_ERROR(k5msg_mic_len(cbs.km, &ml)));
	uint8_t *tok = xdr_arena_alloc(&r->arena, ml);
	CHECK(tok);
	CHECK(!GSS_ERROR(k5msg_get_mic(cbs.km, &in, 1, tok, ml)));
	if (cbs.bad_verf)
		tok[ml - 1] ^= 1;
	r->rverf = xdr_opaque_of(tok, (uint32_t)ml);
	r->rverf_flavor = NFSD_RPCSEC_GSS;
	r->cred.flavor = NFSD_RPCSEC_GSS;
	r->cred.gss_service = q->service;
	atomic_fetch_add(&cbs.gss_calls, 1);
	return NFSD_AUTH_OK;
}

static int tf_unwrap(struct nfsd_req *r)
{
	struct tf_req *q = r->flavor_ctx;
	const uint8_t *body;
	size_t len;
	if (q->service == rpc_gss_svc_none)
		return 0;
	if (q->service == rpc_gss_svc_integrity) {
		rpc_gss_integ_data in;
		CHECK_EQ(xdr_dec_rpc_gss_integ_data(&r->dec, &in), 0);
		struct iovec iov = {(void *)in.databody_integ.val, in.databody_integ.len};
		CHECK(!GSS_ERROR(
		    k5msg_verify_mic(cbs.km, &iov, 1, in.checksum.val, in.checksum.len)));
		body = in.databody_integ.val;
		len = in.databody_integ.len;
	} else {
		rpc_gss_priv_data in;
		CHECK_EQ(xdr_dec_rpc_gss_priv_data(&r->dec, &in), 0);
		uint8_t *plain;
		CHECK(!GSS_ERROR(k5msg_unwrap(cbs.km, (uint8_t *)in.databody_priv.val,
					      in.databody_priv.len, &plain, &len)));
		body = plain;
	}
	CHECK(len >= 4);
	CHECK_EQ(xdr_get32(body), q->seq);
	xdr_dec_init(&r->dec, body + 4, len - 4, &r->arena);
	return 0;
}

static int tf_wrap(struct nfsd_req *r)
{
	struct tf_req *q = r->flavor_ctx;
	if (!q || q->service == rpc_gss_svc_none)
		return 0;
	size_t n = nfsd_req_res_len(r);
	uint8_t *plain = xdr_arena_alloc(&r->arena, 4 + n);
	CHECK(plain);
	xdr_put32(plain, q->seq);
	nfsd_req_res_copy(r, plain + 4);
	nfsd_req_res_rewind(r);
	if (q->service == rpc_gss_svc_integrity) {
		size_t ml;
		CHECK(!GSS_ERROR(k5msg_mic_len(cbs.km, &ml)));
		uint8_t *tok = xdr_arena_alloc(&r->arena, ml);
		CHECK(tok);
		struct iovec iov = {plain, 4 + n};
		CHECK(!GSS_ERROR(k5msg_get_mic(cbs.km, &iov, 1, tok, ml)));
		rpc_gss_integ_data out = {xdr_opaque_of(plain, (uint32_t)(4 + n)),
					  xdr_opaque_of(tok, (uint32_t)ml)};
		return xdr_enc_rpc_gss_integ_data(&r->enc, &out);
	}
	size_t hl, tl;
	CHECK(!GSS_ERROR(k5msg_wrap_len(cbs.km, 4 + n, &hl, &tl)));
	uint8_t *buf = xdr_arena_alloc(&r->arena, hl + 4 + n + tl);
	CHECK(buf);
	memcpy(buf + hl, plain, 4 + n);
	CHECK(!GSS_ERROR(k5msg_wrap(cbs.km, buf, buf + hl, 4 + n, buf + hl + 4 + n)));
	rpc_gss_priv_data out = {xdr_opaque_of(buf, (uint32_t)(hl + 4 + n + tl))};
	return xdr_enc_rpc_gss_priv_data(&r->enc, &out);
}

static const struct nfsd_auth_flavor test_flavor = {
    .flavor = NFSD_RPCSEC_GSS,
    .name = "test-gss-cb",
    .accept = tf_accept,
    .unwrap = tf_unwrap,
    .wrap = tf_wrap,
};

static int cb_null(struct nfsd_req *r, void *a, void *res)
{
	return NFSD_SUCCESS;
}

static int cb_compound(struct nfsd_req *r, void *a, void *resv)
{
	CB_COMPOUND4args *args = a;
	CB_COMPOUND4res *res = resv;
	memset(res, 0, sizeof(*res));
	atomic_fetch_add(&cbs.compounds, 1);
	if (r->cred.flavor == NFSD_AUTH_SYS)
		atomic_fetch_add(&cbs.sys_calls, 1);
	CHECK(args->argarray.len >= 1);
	CHECK_EQ(args->argarray.val[0].argop, OP_CB_SEQUENCE);
	const CB_SEQUENCE4args *sa = &args->argarray.val[0].u.opcbsequence;
	nfs_cb_resop4 *ro = xdr_arena_alloc(&r->arena, sizeof(*ro));
	CHECK(ro);
	memset(ro, 0, sizeof(*ro));
	ro->resop = OP_CB_SEQUENCE;
	CB_SEQUENCE4resok *ok = &ro->u.opcbsequence.u.csr_resok4;
	memcpy(ok->csr_sessionid, sa->csa_sessionid, sizeof(sessionid4));
	ok->csr_sequenceid = sa->csa_sequenceid;
	res->resarray.len = 1;
	res->resarray.val = ro;
	return NFSD_SUCCESS;
}

static struct nfsd_proc cb_procs[2] = {
    {.name = "CB_NULL", .fn = cb_null, .flags = NFSD_PROC_INLINE},
    {.name = "CB_COMPOUND", .fn = cb_compound, .flags = NFSD_PROC_INLINE},
};
static struct nfsd_version cb_vers = {.vers = 1, .procs = cb_procs, .nprocs = 2};
static struct nfsd_program cb_prog = {
    .prog = CBPROG, .name = "cb", .versions = &cb_vers, .nversions = 1};

/* RPCSEC_GSS callback parms naming g's context, and cbs set to expect them. */
static callback_sec_parms4 gss_parms(struct nfsd_gss_clnt *g, uint32_t service, const char *hfc,
				     uint8_t *hbuf)
{
	uint32_t hlen;
	struct k5msg *km;
	CHECK_EQ(nfsd_gss_clnt_context(g, hbuf, 256, &hlen, &km), 0);
	callback_sec_parms4 p = {.cb_secflavor = NFSD_RPCSEC_GSS};
	p.u.cbsp_gss_handles.gcbp_service = (rpc_gss_svc_t)service;
	p.u.cbsp_gss_handles.gcbp_handle_from_server = xdr_opaque_of(hbuf, hlen);
	p.u.cbsp_gss_handles.gcbp_handle_from_client = xdr_opaque_of(hfc, (uint32_t)strlen(hfc));
	cbs.km = km;
	atomic_store(&cbs.last_seq, 0); /* each handle numbers its calls from 1 */
	cbs.service = service;
	cbs.hfc_len = (uint32_t)strlen(hfc);
	memcpy(cbs.hfc, hfc, cbs.hfc_len);
	return p;
}

static callback_sec_parms4 sys_parms(uint32_t uid)
{
	callback_sec_parms4 p = {.cb_secflavor = NFSD_AUTH_SYS};
	p.u.cbsp_sys_cred.uid = uid;
	p.u.cbsp_sys_cred.gid = uid;
	p.u.cbsp_sys_cred.machinename = xdr_opaque_of("cb", 2);
	return p;
}

/* SEQUENCE alone: sr_status_flags. */
static uint32_t ping(struct nfs41c_session *s)
{
	uint8_t buf[4096];
	struct xdr_arena ar;
	xdr_arena_init(&ar, buf, sizeof(buf), 1 << 20);
	COMPOUND4res res;
	CHECK_EQ(nfs41c_compound(s, NULL, 0, &res, &ar), 0);
	CHECK_EQ(res.status, NFS4_OK);
	uint32_t flags = res.resarray.val[0].u.opsequence.u.sr_resok4.sr_status_flags;
	xdr_arena_release(&ar);
	return flags;
}

static nfsstat4 backchannel_ctl(struct nfs41c_session *s, callback_sec_parms4 *p, unsigned n)
{
	uint8_t buf[4096];
	struct xdr_arena ar;
	xdr_arena_init(&ar, buf, sizeof(buf), 1 << 20);
	nfs_argop4 op = {.argop = OP_BACKCHANNEL_CTL};
	op.u.opbackchannel_ctl.bca_cb_program = CBPROG;
	op.u.opbackchannel_ctl.bca_sec_parms.len = n;
	op.u.opbackchannel_ctl.bca_sec_parms.val = p;
	COMPOUND4res res;
	CHECK_EQ(nfs41c_compound(s, &op, 1, &res, &ar), 0);
	nfsstat4 st = res.status;
	xdr_arena_release(&ar);
	return st;
}

static int create(struct nfsd_clnt *c, const char *owner, struct nfsd_gss_clnt *g,
		  callback_sec_parms4 *p, unsigned n, struct nfs41c_session **s)
{
	struct nfs41c_session_opts so = {.owner = owner,
					 .create_flags = CREATE_SESSION4_FLAG_CONN_BACK_CHAN,
					 .cb_program = CBPROG,
					 .auth = nfsd_gss_clnt_auth(g, NFSD_GSS_SVC_INTEGRITY),
					 .cb_sec = p,
					 .ncb_sec = n};
	return nfs41c_session_create_opts(c, &so, s);
}

int main(int argc, char **argv)
{
	CHECK(argc == 2);
	nfsd_procs_bind(cb_procs, 2, &xdr_desc_NFS4_CALLBACK_NFS_CB);
	char conf[4400];
	snprintf(conf, sizeof(conf), "keytab = %s\n", argv[1]);
	struct mt t;
	mt_start(&t, "/ *(rw,no_root_squash,insecure,sec=sys:krb5:krb5i:krb5p)\n", conf);

	/* a client engine whose back channel takes RPCSEC_GSS */
	struct nfsd_server_opts eo;
	nfsd_server_opts_default(&eo);
	eo.nloops = 1;
	eo.nworkers = 1;
	int err = 0;
	struct nfsd_server *eng = nfsd_server_new(&eo, &err);
	CHECK(eng);
	CHECK_EQ(nfsd_server_add_flavor(eng, &test_flavor), 0);
	CHECK_EQ(nfsd_server_start(eng), 0);
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)t.port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct nfsd_clnt_opts co = {.timeout_ms = 20000, .backchannel = &cb_prog};
	struct nfsd_clnt *c = nfsd_clnt_new(eng, (struct sockaddr *)&sa, sizeof(sa), &co, &err);
	CHECK(c);

	struct nfsd_gss_clnt *g_fore = test_gss_clnt(c, CLIENT), *g_cb = test_gss_clnt(c, CLIENT);
	struct nfsd_gss_clnt *g_other = test_gss_clnt(c, "daemon");
	uint8_t h1[256], h2[256], h3[256];

	/* a stale handle, or another principal's context, alone: refused */
	callback_sec_parms4 p[2];
	p[0] = gss_parms(g_cb, rpc_gss_svc_integrity, "stale", h1);
	h1[h1[0] ? 0 : 1] ^= 0x5a;
	struct nfs41c_session *s;
	CHECK_EQ(create(c, "gss-cb-stale", g_fore, p, 1, &s), NFS4ERR_ENCR_ALG_UNSUPP);
	p[0] = gss_parms(g_other, rpc_gss_svc_integrity, "other", h1);
	CHECK_EQ(create(c, "gss-cb-other", g_fore, p, 1, &s), NFS4ERR_ENCR_ALG_UNSUPP);
	printf("ok: stale handle and another principal's context refused (ENCR_ALG_UNSUPP)\n");

	/* GSS only, krb5i, with a live context of the client's principal */
	p[0] = gss_parms(g_cb, rpc_gss_svc_integrity, "cb-handle-1", h1);
	CHECK_EQ(create(c, "gss-cb", g_fore, p, 1, &s), 0);
	struct nfs41c_session_info info;
	nfs41c_session_info(s, &info);
	CHECK(!(ping(s) & (SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRED | SEQ4_STATUS_CB_PATH_DOWN)));
	for (int i = 0; i < 3; i++)
		CHECK_EQ(mt_cb_seq(&t, info.clientid), 0);
	CHECK_EQ(atomic_load(&cbs.gss_calls), 3);
	CHECK_EQ(atomic_load(&cbs.compounds), 3);
	printf("ok: krb5i callbacks under the client's context, handle_from_client\n");

	/* a reply that does not verify fails the callback */
	cbs.bad_verf = true;
	CHECK_EQ(mt_cb_seq(&t, info.clientid), -EPROTO);
	cbs.bad_verf = false;
	CHECK_EQ(mt_cb_seq(&t, info.clientid), 0);
	printf("ok: a reply with a bad verifier fails the callback\n");

	/* BACKCHANNEL_CTL: a stale GSS entry beside AUTH_SYS takes AUTH_SYS */
	p[0] = gss_parms(g_cb, rpc_gss_svc_integrity, "stale", h2);
	h2[1] ^= 0x5a;
	p[1] = sys_parms(1234);
	CHECK_EQ(backchannel_ctl(s, p, 1), NFS4ERR_ENCR_ALG_UNSUPP);
	CHECK_EQ(backchannel_ctl(s, p, 2), NFS4_OK);
	int gss_before = atomic_load(&cbs.gss_calls);
	CHECK_EQ(mt_cb_seq(&t, info.clientid), 0);
	CHECK_EQ(atomic_load(&cbs.sys_calls), 1);
	CHECK_EQ(atomic_load(&cbs.gss_calls), gss_before);

	/* ... and back to GSS, krb5p, preferred over AUTH_SYS offered first */
	p[0] = sys_parms(1234);
	p[1] = gss_parms(g_cb, rpc_gss_svc_privacy, "cb-handle-2", h2);
	CHECK_EQ(backchannel_ctl(s, p, 2), NFS4_OK);
	CHECK_EQ(mt_cb_seq(&t, info.clientid), 0);
	CHECK_EQ(atomic_load(&cbs.gss_calls), gss_before + 1);
	CHECK_EQ(atomic_load(&cbs.sys_calls), 1);
	printf("ok: BACKCHANNEL_CTL switches AUTH_SYS and krb5p, GSS first\n");

	/* the context is destroyed: GSS_CONTEXTS_EXPIRED, no callbacks */
	nfsd_gss_clnt_free(g_cb);
	cbs.km = NULL;
	CHECK(ping(s) & SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRED);
	CHECK_EQ(mt_cb_seq(&t, info.clientid), -ENOTCONN);
	CHECK_EQ(atomic_load(&cbs.gss_calls), gss_before + 1);
	/* ... until BACKCHANNEL_CTL names a live one */
	p[0] = gss_parms(g_fore, rpc_gss_svc_privacy, "cb-handle-3", h3);
	CHECK_EQ(backchannel_ctl(s, p, 1), NFS4_OK);
	CHECK(!(ping(s) & SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRED));
	CHECK_EQ(mt_cb_seq(&t, info.clientid), 0);
	CHECK_EQ(atomic_load(&cbs.gss_calls), gss_before + 2);
	printf("ok: a destroyed context: CB_GSS_CONTEXTS_EXPIRED until BACKCHANNEL_CTL\n");

	CHECK_EQ(nfs41c_session_destroy(s), 0);
	nfsd_gss_clnt_free(g_other);
	nfsd_gss_clnt_free(g_fore);
	nfsd_clnt_free(c);
	nfsd_server_free(eng);
	mt_finish(&t);
	return 0;
}
