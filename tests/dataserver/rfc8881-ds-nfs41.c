/* SPDX-License-Identifier: MIT */
/*
 * braid-ds as an NFSv4.1 pNFS data server (RFC 8881 §13.6, RFC 8435 §5.1):
 * EXCHANGE_ID says USE_PNFS_DS with one server_owner and scope on both of
 * its addresses (so clients session-trunk them, RFC 8881 §2.10.5) and the
 * same client ID on both; a session; PUTFH, WRITE (three stabilities),
 * COMMIT, READ, GETATTR through it; bad and stale handles, no handle,
 * fenced credentials, oversized READ, unsupported operations; minor
 * version 0 (NFSv4.0, braid-mds's alone) is MINOR_VERS_MISMATCH.
 */
#include "config.h"

#include "nfs4_prot.h"

#include "nfsd/nfs41_clnt.h"
#include "tests/dataserver/ds-test.h"

static struct dt T;

static EXCHANGE_ID4resok exid(struct nfsd_clnt *c, struct xdr_arena *ar)
{
	nfs_argop4 a = { .argop = OP_EXCHANGE_ID };
	EXCHANGE_ID4args *ea = &a.u.opexchange_id;
	memset(ea->eia_clientowner.co_verifier, 7, 8);
	ea->eia_clientowner.co_ownerid = xdr_opaque_of("linux-client-1", 14);
	ea->eia_flags = EXCHGID4_FLAG_USE_PNFS_DS;
	ea->eia_state_protect.spa_how = SP4_NONE;
	COMPOUND4res res;
	CHECK_EQ(nfs41c_compound_raw(c, NULL, 1, &a, 1, &res, ar), 0);
	CHECK_EQ(res.status, NFS4_OK);
	return res.resarray.val[0].u.opexchange_id.u.eir_resok4;
}

static nfs_argop4 putfh(const uint8_t *fh, uint32_t len)
{
	nfs_argop4 a = { .argop = OP_PUTFH };
	a.u.opputfh.object = xdr_opaque_of(fh, len);
	return a;
}

static nfs_argop4 rd(uint64_t off, uint32_t count)
{
	nfs_argop4 a = { .argop = OP_READ };
	a.u.opread.offset = off;
	a.u.opread.count = count;
	return a;
}

static nfs_argop4 wr(uint64_t off, const void *data, uint32_t len, stable_how4 how)
{
	nfs_argop4 a = { .argop = OP_WRITE };
	a.u.opwrite.offset = off;
	a.u.opwrite.stable = how;
	a.u.opwrite.data = xdr_opaque_of(data, len);
	return a;
}

/* Run ops; the status of the last op run (SEQUENCE's if it failed). */
static nfsstat4 run(struct nfs41c_session *s, const nfs_argop4 *ops, unsigned n, COMPOUND4res *res,
		    struct xdr_arena *ar)
{
	CHECK_EQ(nfs41c_compound(s, ops, n, res, ar), 0);
	CHECK(res->resarray.len >= 1);
	return res->status;
}

int main(void)
{
	dt_prepare(&T, "nfs41 = yes\nlisten = 127.0.0.2:0\n");
	/* listen is repeated: 127.0.0.1:0 from dt_prepare, and 127.0.0.2:0 */
	dt_start(&T);
	CHECK_EQ(braid_ds_nports(T.ds), 2);
	struct nfsd_clnt *c2 = NULL;
	{
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_port = htons((uint16_t)braid_ds_port(T.ds, 1)) };
		inet_pton(AF_INET, "127.0.0.2", &sa.sin_addr);
		struct nfsd_clnt_opts o = { .timeout_ms = 20000 };
		int err = 0;
		c2 = nfsd_clnt_new(T.eng, (struct sockaddr *)&sa, sizeof(sa), &o, &err);
		CHECK(c2);
	}
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 64u << 20);

	/* NFSv4.0 is braid-mds's alone: a data server refuses minor version 0 */
	{
		nfs_argop4 sc = {.argop = OP_SETCLIENTID};
		sc.u.opsetclientid.client.id = xdr_opaque_of("linux-client-1", 14);
		sc.u.opsetclientid.callback.cb_location.na_r_netid = xdr_string_of("tcp");
		sc.u.opsetclientid.callback.cb_location.na_r_addr = xdr_string_of("");
		COMPOUND4res res;
		CHECK_EQ(nfs41c_compound_raw(T.c, NULL, 0, &sc, 1, &res, &ar), 0);
		CHECK_EQ(res.status, NFS4ERR_MINOR_VERS_MISMATCH);
		CHECK_EQ(res.resarray.len, 0);
		xdr_arena_reset(&ar);
	}

	struct nfs41c_session *s;
	struct nfs41c_session_opts so = { .owner = "linux-client-1",
					  .verifier = 0x0707070707070707ull,
					  .exchgid_flags = EXCHGID4_FLAG_USE_PNFS_DS };
	CHECK_EQ(nfs41c_session_create_opts(T.c, &so, &s), 0);
	/* trunking (as the Linux client checks it): EXCHANGE_ID on each address
	 * gives the same client ID, server_owner and scope */
	EXCHANGE_ID4resok e1 = exid(T.c, &ar), e2 = exid(c2, &ar);
	CHECK(e1.eir_flags & EXCHGID4_FLAG_USE_PNFS_DS);
	CHECK(e1.eir_flags & EXCHGID4_FLAG_CONFIRMED_R);
	CHECK(!(e1.eir_flags & EXCHGID4_FLAG_USE_PNFS_MDS));
	CHECK_EQ(e1.eir_clientid, e2.eir_clientid);
	struct nfs41c_session_info info;
	nfs41c_session_info(s, &info);
	CHECK_EQ(info.clientid, e1.eir_clientid);
	CHECK(xdr_opaque_eq(e1.eir_server_owner.so_major_id, e2.eir_server_owner.so_major_id));
	CHECK_EQ(e1.eir_server_owner.so_minor_id, e2.eir_server_owner.so_minor_id);
	CHECK(xdr_opaque_eq(e1.eir_server_scope, e2.eir_server_scope));
	CHECK(e1.eir_server_owner.so_major_id.len > 9);
	CHECK(memcmp(e1.eir_server_owner.so_major_id.val, "braid-ds:", 9) == 0);

	nfs41c_session_set_cred(s, DT_UID, DT_GID);
	CHECK(info.exchgid_flags & EXCHGID4_FLAG_USE_PNFS_DS);
	/* a 1 MiB READ or WRITE fits the session (the Linux client does not
	 * cap rsize by it) */
	CHECK(info.fore.ca_maxrequestsize >= (1 << 20) + 1024);
	CHECK(info.fore.ca_maxresponsesize >= (1 << 20) + 1024);

	struct ds_objid id = dt_id(1, 1);
	uint8_t fh[DS_CTL_FH_MAX];
	uint32_t fhlen;
	dt_create(&T, &id, fh, &fhlen);
	static uint8_t buf[1 << 20];
	COMPOUND4res res;
	uint8_t sverf[8];
	ds_store_verifier(braid_ds_store(T.ds), sverf);

	/* WRITE, three stabilities; the boot verifier each time */
	stable_how4 hows[3] = { UNSTABLE4, DATA_SYNC4, FILE_SYNC4 };
	for (unsigned i = 0; i < 3; i++) {
		dt_fill(buf, (uint64_t)i << 20, 1 << 20, 2);
		nfs_argop4 ops[2] = { putfh(fh, fhlen), wr((uint64_t)i << 20, buf, 1 << 20, hows[i]) };
		CHECK_EQ(run(s, ops, 2, &res, &ar), NFS4_OK);
		CHECK_EQ(res.resarray.len, 3);
		WRITE4resok *w = &res.resarray.val[2].u.opwrite.u.resok4;
		CHECK_EQ(w->count, 1 << 20);
		CHECK_EQ(w->committed, hows[i]);
		CHECK(memcmp(w->writeverf, sverf, 8) == 0);
	}
	nfs_argop4 cops[2] = { putfh(fh, fhlen), { .argop = OP_COMMIT } };
	CHECK_EQ(run(s, cops, 2, &res, &ar), NFS4_OK);
	CHECK(memcmp(res.resarray.val[2].u.opcommit.u.resok4.writeverf, sverf, 8) == 0);

	/* READ back over the other address, in the same session (trunked) */
	for (unsigned i = 0; i < 3; i++) {
		nfs_argop4 ops[2] = { putfh(fh, fhlen), rd((uint64_t)i << 20, 1 << 20) };
		CHECK_EQ(nfs41c_compound_ex(s, c2, 0, ops, 2, &res, &ar), 0);
		CHECK_EQ(res.status, NFS4_OK);
		READ4resok *r = &res.resarray.val[2].u.opread.u.resok4;
		CHECK_EQ(r->data.len, 1 << 20);
		CHECK(dt_check(r->data.val, (uint64_t)i << 20, 1 << 20, 2));
		CHECK_EQ(r->eof, i == 2);
	}
	/* READ over rsize: short, not an error */
	nfs_argop4 big[2] = { putfh(fh, fhlen), rd(0, 8u << 20) };
	CHECK_EQ(run(s, big, 2, &res, &ar), NFS4_OK);
	CHECK_EQ(res.resarray.val[2].u.opread.u.resok4.data.len, 1 << 20);

	/* several READs in one compound: each answered from its own buffer,
	 * every one released after the reply (LeakSanitizer checks) */
	for (unsigned round = 0; round < 4; round++) {
		nfs_argop4 ops[4] = { putfh(fh, fhlen), rd(4096, 65536), rd((1 << 20) + 12345, 70000),
				      rd((3 << 20) - 100, 4096) };
		CHECK_EQ(run(s, ops, 4, &res, &ar), NFS4_OK);
		CHECK_EQ(res.resarray.len, 5);
		READ4resok *r1 = &res.resarray.val[2].u.opread.u.resok4;
		READ4resok *r2 = &res.resarray.val[3].u.opread.u.resok4;
		READ4resok *r3 = &res.resarray.val[4].u.opread.u.resok4;
		CHECK_EQ(r1->data.len, 65536);
		CHECK(dt_check(r1->data.val, 4096, 65536, 2));
		CHECK_EQ(r2->data.len, 70000);
		CHECK(dt_check(r2->data.val, (1 << 20) + 12345, 70000, 2));
		CHECK_EQ(r3->data.len, 100);
		CHECK(dt_check(r3->data.val, (3 << 20) - 100, 100, 2));
		CHECK(!r1->eof && !r2->eof && r3->eof);
	}

	/* GETATTR: type, size, owner as numeric strings, mode, change */
	nfs_argop4 ga[2] = { putfh(fh, fhlen), { .argop = OP_GETATTR } };
	uint32_t mask[2] = { (1u << FATTR4_TYPE) | (1u << FATTR4_CHANGE) | (1u << FATTR4_SIZE),
			     (1u << (FATTR4_MODE - 32)) | (1u << (FATTR4_OWNER - 32)) };
	ga[1].u.opgetattr.attr_request.len = 2;
	ga[1].u.opgetattr.attr_request.val = mask;
	CHECK_EQ(run(s, ga, 2, &res, &ar), NFS4_OK);
	fattr4 *fa = &res.resarray.val[2].u.opgetattr.u.resok4.obj_attributes;
	CHECK_EQ(fa->attrmask.len, 2);
	CHECK_EQ(fa->attrmask.val[0], mask[0]);
	CHECK_EQ(fa->attrmask.val[1], mask[1]);
	const uint8_t *p = fa->attr_vals.val;
	CHECK_EQ(xdr_get32(p), NF4REG);
	uint64_t size = (uint64_t)xdr_get32(p + 12) << 32 | xdr_get32(p + 16);
	CHECK_EQ(size, 3 << 20);
	CHECK_EQ(xdr_get32(p + 20), 0600);
	CHECK_EQ(xdr_get32(p + 24), 5);
	CHECK(memcmp(p + 28, "20001", 5) == 0);
	CHECK_EQ(fa->attr_vals.len, 36);

	/* handles: altered or foreign -> BADHANDLE at PUTFH; removed -> STALE */
	uint8_t bad[DS_FH_SIZE];
	memcpy(bad, fh, fhlen);
	bad[30] ^= 4;
	nfs_argop4 bops[2] = { putfh(bad, fhlen), rd(0, 10) };
	CHECK_EQ(run(s, bops, 2, &res, &ar), NFS4ERR_BADHANDLE);
	CHECK_EQ(res.resarray.len, 2);
	bops[0] = putfh(fh, 20);
	CHECK_EQ(run(s, bops, 2, &res, &ar), NFS4ERR_BADHANDLE);
	struct ds_objid gone = dt_id(2, 1);
	uint8_t gfh[DS_CTL_FH_MAX];
	uint32_t glen;
	dt_create(&T, &gone, gfh, &glen);
	CHECK_EQ(ds_ctl_remove(T.c, &T.key, &gone), 0);
	bops[0] = putfh(gfh, glen);
	CHECK_EQ(run(s, bops, 2, &res, &ar), NFS4ERR_STALE);
	CHECK_EQ(res.resarray.len, 3);
	/* no current filehandle */
	nfs_argop4 nofh[1] = { rd(0, 10) };
	CHECK_EQ(run(s, nofh, 1, &res, &ar), NFS4ERR_NOFILEHANDLE);
	/* a DS has no namespace */
	nfs_argop4 lk[2] = { putfh(fh, fhlen), { .argop = OP_LOOKUP } };
	lk[1].u.oplookup.objname = xdr_opaque_of("x", 1);
	CHECK_EQ(run(s, lk, 2, &res, &ar), NFS4ERR_NOTSUPP);

	/* fencing: after SETFENCE this client's credentials get ACCESS */
	CHECK_EQ(ds_ctl_setfence(T.c, &T.key, &id, DT_UID + 1, DT_GID + 1, 0600), 0);
	nfs_argop4 fr[2] = { putfh(fh, fhlen), rd(0, 4096) };
	CHECK_EQ(run(s, fr, 2, &res, &ar), NFS4ERR_ACCESS);
	nfs_argop4 fw[2] = { putfh(fh, fhlen), wr(0, buf, 4096, FILE_SYNC4) };
	CHECK_EQ(run(s, fw, 2, &res, &ar), NFS4ERR_ACCESS);

	CHECK_EQ(nfs41c_session_destroy(s), 0);
	nfsd_clnt_free(c2);
	xdr_arena_release(&ar);
	dt_finish(&T);
	printf("ok\n");
	return 0;
}
