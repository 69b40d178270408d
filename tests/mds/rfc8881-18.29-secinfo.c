/* SPDX-License-Identifier: MIT */
/*
 * SECINFO and SECINFO_NO_NAME (RFC 8881 §18.29, §18.45) and security
 * negotiation (§2.6.3.1.1):
 *  - the flavors of the export the named object is in, in the export's
 *    sec= order: AUTH_SYS and AUTH_NONE as plain flavors, krb5, krb5i and
 *    krb5p as RPCSEC_GSS with the krb5 OID and service none, integrity,
 *    privacy; the pseudo filesystem offers what its exports take;
 *  - both consume the current filehandle (§2.6.3.1.1.8);
 *  - SECINFO_STYLE4_PARENT of the root is NFS4ERR_NOENT, of a file
 *    NFS4ERR_NOTDIR; an unknown style NFS4ERR_INVAL;
 *  - an AUTH_SYS client reaching a krb5-only export: LOOKUP answers
 *    NFS4ERR_WRONGSEC; PUTFH of its handle answers it only when the next op
 *    does not judge security itself (GETATTR), and not before SECINFO,
 *    SECINFO_NO_NAME, LOOKUP, LOOKUPP, SAVEFH, another PUTFH, or at the end.
 */
#include "config.h"

#include "mds/fh.h"
#include "mds/mds_impl.h"
#include "tests/mds/mds-test.h"
#include "tests/mds/dir-test.h"

struct flav {
	uint32_t flavor, service; /* service for RPCSEC_GSS */
};

static void check_list(const SECINFO4resok *l, const struct flav *want, unsigned n)
{
	static const uint8_t krb5[] = {0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02};
	CHECK_EQ(l->len, n);
	for (unsigned i = 0; i < n; i++) {
		CHECK_EQ(l->val[i].flavor, want[i].flavor);
		if (want[i].flavor == RPCSEC_GSS) {
			const rpcsec_gss_info *g = &l->val[i].u.flavor_info;
			CHECK(g->oid.len == sizeof(krb5) &&
			      !memcmp(g->oid.val, krb5, sizeof(krb5)));
			CHECK_EQ(g->qop, 0);
			CHECK_EQ(g->service, want[i].service);
		}
	}
}

/* PUTFH(dir) op GETFH: op's status, its list when it worked; GETFH must then fail. */
static nfsstat4 secinfo_on(struct nfs41c_session *s, const struct dt_fh *dir, nfs_argop4 op,
			   const struct flav *want, unsigned n)
{
	nfs_argop4 ops[3] = {dt_op(OP_PUTFH), op, mt_getfh()};
	ops[0].u.opputfh.object = dt_fh4(dir);
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	COMPOUND4res res;
	mt_compound(s, ops, 3, &res, &ar);
	nfsstat4 st = mt_status(&res, 1);
	if (!st) {
		check_list(&res.resarray.val[2].u.opsecinfo.u.resok4, want, n);
		CHECK_EQ(res.status, NFS4ERR_NOFILEHANDLE); /* consumed */
		CHECK_EQ(mt_status(&res, 2), NFS4ERR_NOFILEHANDLE);
	}
	xdr_arena_release(&ar);
	return st;
}

/* The handle of an export's root, made as the server makes it. */
static struct dt_fh export_root_fh(struct mt *t, const char *name)
{
	struct mds_attr a;
	CHECK(dt_store_lookup(t, dt_root(t), name, &a) == 0);
	struct mds_exports *x = mds_exports_get(t->mds);
	const struct mds_export *e = mds_export_by_root(x, a.ino);
	CHECK(e);
	struct mds_fh f = {.ino = a.ino, .gen = a.generation, .export_id = e->id};
	mds_exports_put(x);
	struct dt_fh out = {.len = MDS_FH_SIZE};
	mds_fh_make(t->mds, &f, out.b);
	return out;
}

/* PUTFH(fh) then ops: the status of each op, -1 past the last executed. */
static void putfh_then(struct nfs41c_session *s, const struct dt_fh *fh, const nfs_argop4 *more,
		       unsigned n, nfsstat4 *st)
{
	nfs_argop4 ops[8] = {dt_op(OP_PUTFH)};
	ops[0].u.opputfh.object = dt_fh4(fh);
	CHECK(n < 8);
	if (n)
		memcpy(ops + 1, more, n * sizeof(*more));
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	COMPOUND4res res;
	mt_compound(s, ops, n + 1, &res, &ar);
	for (unsigned i = 0; i <= n; i++)
		st[i] = res.resarray.len > i + 1 ? mt_status(&res, i) : -1;
	xdr_arena_release(&ar);
}

int main(void)
{
	struct mt t;
	mt_start(&t,
		 "/s *(rw,sec=sys,no_root_squash,insecure)\n"
		 "/k *(rw,sec=krb5p:sys,no_root_squash,insecure)\n"
		 "/g *(rw,sec=krb5i:krb5,insecure)\n"
		 "/n *(ro,sec=none,insecure)\n",
		 NULL);
	struct nfs41c_session *s = mt_session(&t, "secinfo", 0, 0);
	static const struct flav sys[] = {{AUTH_SYS, 0}};
	static const struct flav k[] = {{RPCSEC_GSS, RPC_GSS_SVC_PRIVACY}, {AUTH_SYS, 0}};
	static const struct flav g[] = {{RPCSEC_GSS, RPC_GSS_SVC_INTEGRITY},
					{RPCSEC_GSS, RPC_GSS_SVC_NONE}};
	static const struct flav none[] = {{AUTH_NONE, 0}};
	static const struct flav all[] = {{AUTH_SYS, 0},
					  {RPCSEC_GSS, RPC_GSS_SVC_PRIVACY},
					  {RPCSEC_GSS, RPC_GSS_SVC_INTEGRITY},
					  {RPCSEC_GSS, RPC_GSS_SVC_NONE},
					  {AUTH_NONE, 0}};
	struct dt_fh root, kfh, sfh, f;
	CHECK_EQ(dt_walk(s, "", &root), NFS4_OK);
	CHECK_EQ(dt_fh_export(&root), 0); /* "/" is not exported */

	CHECK_EQ(secinfo_on(s, &root, dt_secinfo("s"), sys, 1), NFS4_OK);
	CHECK_EQ(secinfo_on(s, &root, dt_secinfo("k"), k, 2), NFS4_OK);
	CHECK_EQ(secinfo_on(s, &root, dt_secinfo("g"), g, 2), NFS4_OK);
	CHECK_EQ(secinfo_on(s, &root, dt_secinfo("n"), none, 1), NFS4_OK);
	CHECK_EQ(secinfo_on(s, &root, dt_secinfo("missing"), NULL, 0), NFS4ERR_NOENT);
	CHECK_EQ(secinfo_on(s, &root, dt_secinfo(".."), NULL, 0), NFS4ERR_BADNAME);
	CHECK_EQ(secinfo_on(s, &root, dt_secinfo(""), NULL, 0), NFS4ERR_INVAL);

	/* inside an export, the export's list; the pseudo fs offers them all */
	CHECK_EQ(dt_walk(s, "k", &kfh), NFS4_OK);
	CHECK_EQ(dt_walk(s, "s", &sfh), NFS4_OK);
	dt_store_make(&t, dt_fh_ino(&kfh), "sub", MDS_DIR, 0755, 0, 0);
	dt_store_make(&t, dt_fh_ino(&sfh), "file", MDS_REG, 0644, 0, 0);
	CHECK_EQ(secinfo_on(s, &kfh, dt_secinfo("sub"), k, 2), NFS4_OK);
	CHECK_EQ(secinfo_on(s, &kfh, dt_secinfo_no_name(SECINFO_STYLE4_CURRENT_FH), k, 2), NFS4_OK);
	CHECK_EQ(secinfo_on(s, &kfh, dt_secinfo_no_name(SECINFO_STYLE4_PARENT), all, 5), NFS4_OK);
	CHECK_EQ(secinfo_on(s, &root, dt_secinfo_no_name(SECINFO_STYLE4_CURRENT_FH), all, 5),
		 NFS4_OK);
	CHECK_EQ(secinfo_on(s, &root, dt_secinfo_no_name(SECINFO_STYLE4_PARENT), NULL, 0),
		 NFS4ERR_NOENT);
	CHECK_EQ(dt_walk(s, "s/file", &f), NFS4_OK);
	CHECK_EQ(secinfo_on(s, &f, dt_secinfo_no_name(SECINFO_STYLE4_PARENT), NULL, 0),
		 NFS4ERR_NOTDIR);
	CHECK_EQ(secinfo_on(s, &f, dt_secinfo_no_name(SECINFO_STYLE4_CURRENT_FH), sys, 1), NFS4_OK);
	CHECK_EQ(secinfo_on(s, &f, dt_secinfo("x"), NULL, 0), NFS4ERR_NOTDIR);
	CHECK_EQ(secinfo_on(s, &root, dt_secinfo_no_name(7), NULL, 0), NFS4ERR_INVAL);

	/* krb5 only, and this client speaks AUTH_SYS */
	struct dt_fh gfh = export_root_fh(&t, "g"), x;
	dt_store_make(&t, dt_fh_ino(&gfh), "inside", MDS_DIR, 0755, 0, 0);
	CHECK_EQ(dt_walk(s, "g", &x), NFS4ERR_WRONGSEC);
	CHECK_EQ(dt_walk(s, "k/sub", &x), NFS4_OK); /* krb5p:sys takes AUTH_SYS */
	nfsstat4 st[8];
	nfs_argop4 getattr = dt_getattr((bitmap4){.len = 0, .val = NULL});
	putfh_then(s, &gfh, &getattr, 1, st);
	CHECK_EQ(st[0], NFS4ERR_WRONGSEC); /* §2.6.3.1.1.7 */
	CHECK_EQ(st[1], -1);
	putfh_then(s, &gfh, NULL, 0, st);
	CHECK_EQ(st[0], NFS4_OK); /* §2.6.3.1.1.6 */
	nfs_argop4 sec = dt_secinfo_no_name(SECINFO_STYLE4_CURRENT_FH);
	putfh_then(s, &gfh, &sec, 1, st);
	CHECK_EQ(st[0], NFS4_OK); /* §2.6.3.1.1.5 */
	CHECK_EQ(st[1], NFS4_OK);
	nfs_argop4 look = mt_lookup("inside");
	putfh_then(s, &gfh, &look, 1, st);
	CHECK_EQ(st[0], NFS4_OK); /* §2.6.3.1.1.3 */
	CHECK_EQ(st[1], NFS4ERR_WRONGSEC);
	nfs_argop4 up[2] = {dt_lookupp(), mt_getfh()};
	putfh_then(s, &gfh, up, 2, st);
	CHECK_EQ(st[0], NFS4_OK); /* §2.6.3.1.1.4: the parent is the pseudo fs */
	CHECK_EQ(st[1], NFS4_OK);
	CHECK_EQ(st[2], NFS4_OK);
	nfs_argop4 save[2] = {dt_savefh(), mt_putrootfh()};
	putfh_then(s, &gfh, save, 2, st);
	CHECK_EQ(st[0], NFS4_OK); /* §2.6.3.1.1.1, .2 */
	CHECK_EQ(st[1], NFS4_OK);
	CHECK_EQ(st[2], NFS4_OK);

	nfs41c_session_destroy(s);
	mt_finish(&t);
	return 0;
}
