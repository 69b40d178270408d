/* SPDX-License-Identifier: MIT */
/*
 * Kerberos on the whole data path, with our own client under RPCSEC_GSS
 * (nfsd/clnt_gss.h) against braid-mds and braid-ds in this process, in the
 * realm tests/mds/krb5-layouts.sh sets up: the servers' keys (nfs/localhost)
 * in argv[1], the clients' (daemon, nouser, nfs/client.braid.test) in
 * KRB5_CLIENT_KTNAME.
 *
 * It proves:
 *  - exports' sec= with Kerberos: SECINFO_NO_NAME of a krb5p-only export
 *    lists krb5p alone; krb5i and AUTH_SYS reach it with WRONGSEC, krb5p
 *    works; the client host's own principal is root (no_root_squash);
 *  - SP4_MACH_CRED (RFC 8881 §18.35): granted over krb5i with the five
 *    operations the Linux client needs enforced and WRITE/COMMIT never
 *    allowed; another principal gets WRONG_CRED for DESTROY_SESSION,
 *    BIND_CONN_TO_SESSION and DESTROY_CLIENTID of that client ID; asked
 *    over krb5 (no integrity) it is INVAL;
 *  - a LAYOUTGET over RPCSEC_GSS is tightly coupled (ctl/cap.h): a device
 *    of its own whose GETDEVICEINFO names only NFSv4.1 with
 *    ffdv_tightly_coupled, no fence ids, and a capability stateid;
 *  - the data server, over RPCSEC_GSS: WRITE and READ with the RW
 *    capability work whoever the Kerberos caller is; the READ capability
 *    reads and never writes; the anonymous stateid, a capability of
 *    another file and one with a bit flipped get ACCESS; after a fence
 *    every old capability gets ACCESS and the next LAYOUTGET's works;
 *    AUTH_SYS with the fence ids still works beside it (loosely coupled);
 *  - a data server without a keytab is never named to a Kerberos client:
 *    its LAYOUTGET gets LAYOUTUNAVAILABLE and the copy there is not marked
 *    stale, while an AUTH_SYS client still gets its layout.
 */
#include "config.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/cap.h"
#include "dataserver/ds_impl.h"
#include "layout/devid.h"
#include "mds/data.h"
#include "nfsd/clnt_gss.h"
#include "tests/mds/krb5-test.h"
#include "tests/mds/layout-test.h"

#define CONF "heartbeat_interval = 1s\nds_timeout = 3s\n"

static struct lt L;
static const char *keytab;
static struct nfsd_gss_clnt *mach_g; /* the client host's principal */
static uint8_t buf[65536], rbuf[65536];

static struct nfsd_clnt *connect_port(int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	struct nfsd_clnt_opts o = {.timeout_ms = 20000};
	int err = 0;
	struct nfsd_clnt *c =
	    nfsd_clnt_new(L.m.eng, (struct sockaddr *)&sa, sizeof(sa), &o, &err);
	CHECK(c);
	return c;
}

/* A session of owner on c under auth (SP4_MACH_CRED if asked). */
static struct nfs41c_session *session(struct nfsd_clnt *c, const char *owner,
				      const struct nfsd_clnt_auth *auth, bool mach, uint32_t flags)
{
	struct nfs41c_session *s = NULL;
	struct nfs41c_session_opts o = {
	    .owner = owner, .auth = auth, .mach_cred = mach, .exchgid_flags = flags};
	CHECK_EQ(nfs41c_session_create_opts(c, &o, &s), 0);
	if (!(flags & EXCHGID4_FLAG_USE_PNFS_DS))
		mt_reclaim_complete(s);
	return s;
}

static bool bit(const uint32_t w[2], unsigned op)
{
	return w[op / 32] >> (op % 32) & 1;
}

/* The value of an unlabelled metric in m's exposition (-1: absent). */
static long long metric(struct nfsd_metrics *m, const char *name)
{
	char *text = NULL;
	size_t len = 0;
	CHECK_EQ(nfsd_metrics_render(m, &text, &len), 0);
	long long v = -1;
	size_t n = strlen(name);
	for (char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, name, n) && l[n] == ' ')
			v = atoll(l + n + 1);
	free(text);
	return v;
}

/* PUTROOTFH, LOOKUP of each '/'-separated component, GETFH: the first
 * failure, or NFS4_OK with *out. */
static nfsstat4 walk(struct nfs41c_session *s, const char *path, struct ts_fh *out)
{
	nfs_argop4 ops[8];
	unsigned n = 0;
	char copy[256];
	snprintf(copy, sizeof(copy), "%s", path);
	ops[n++] = mt_putrootfh();
	for (char *save, *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save))
		ops[n++] = mt_lookup(c);
	ops[n++] = mt_getfh();
	COMPOUND4res res;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	CHECK_EQ(nfs41c_compound(s, ops, n, &res, &ar), 0);
	nfsstat4 st = res.status;
	if (!st && out) {
		const nfs_fh4 *f = &res.resarray.val[n].u.opgetfh.u.resok4.object;
		memcpy(out->b, f->val, f->len);
		out->len = f->len;
	}
	xdr_arena_release(&ar);
	return st;
}

static void t_state_protection(struct nfsd_clnt *c, struct nfsd_gss_clnt *mach,
			       struct nfsd_gss_clnt *other)
{
	struct nfs41c_session *s = session(
	    c, "krb5-mach", nfsd_gss_clnt_auth(mach, NFSD_GSS_SVC_INTEGRITY), true, 0);
	struct nfs41c_session_info in;
	nfs41c_session_info(s, &in);
	CHECK_EQ(in.sp_how, SP4_MACH_CRED);
	unsigned must[] = {OP_BIND_CONN_TO_SESSION, OP_EXCHANGE_ID, OP_CREATE_SESSION,
			   OP_DESTROY_SESSION, OP_DESTROY_CLIENTID};
	for (unsigned i = 0; i < 5; i++)
		CHECK(bit(in.sp_enforce, must[i]));
	CHECK(bit(in.sp_allow, OP_CLOSE) && bit(in.sp_allow, OP_LAYOUTRETURN));
	CHECK(!bit(in.sp_allow, OP_WRITE) && !bit(in.sp_allow, OP_COMMIT));

	/* another principal may not touch that client ID's sessions */
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	const struct nfsd_clnt_auth *oa = nfsd_gss_clnt_auth(other, NFSD_GSS_SVC_INTEGRITY);
	COMPOUND4res res;
	nfs_argop4 op = {.argop = OP_DESTROY_SESSION};
	memcpy(op.u.opdestroy_session.dsa_sessionid, in.sessionid, NFS4_SESSIONID_SIZE);
	CHECK_EQ(nfs41c_compound_raw_auth(c, oa, NULL, 1, &op, 1, &res, &ar), 0);
	CHECK_EQ(res.status, NFS4ERR_WRONG_CRED);
	op = (nfs_argop4){.argop = OP_BIND_CONN_TO_SESSION};
	memcpy(op.u.opbind_conn_to_session.bctsa_sessid, in.sessionid, NFS4_SESSIONID_SIZE);
	op.u.opbind_conn_to_session.bctsa_dir = CDFC4_FORE;
	CHECK_EQ(nfs41c_compound_raw_auth(c, oa, NULL, 1, &op, 1, &res, &ar), 0);
	CHECK_EQ(res.status, NFS4ERR_WRONG_CRED);
	op = (nfs_argop4){.argop = OP_DESTROY_CLIENTID};
	op.u.opdestroy_clientid.dca_clientid = in.clientid;
	CHECK_EQ(nfs41c_compound_raw_auth(c, oa, NULL, 1, &op, 1, &res, &ar), 0);
	CHECK_EQ(res.status, NFS4ERR_WRONG_CRED);
	/* ... and AUTH_NONE neither */
	CHECK_EQ(nfs41c_compound_raw(c, NULL, 1, &op, 1, &res, &ar), 0);
	CHECK_EQ(res.status, NFS4ERR_WRONG_CRED);
	/* the session still works, and its own principal may end it */
	CHECK_EQ(walk(s, "", NULL), NFS4_OK);
	CHECK_EQ(nfs41c_session_destroy(s), 0);

	/* SP4_MACH_CRED over krb5 (no integrity): INVAL */
	nfs_argop4 ex = {.argop = OP_EXCHANGE_ID};
	EXCHANGE_ID4args *ea = &ex.u.opexchange_id;
	ea->eia_clientowner.co_ownerid = xdr_opaque_of("krb5-none", 9);
	ea->eia_state_protect.spa_how = SP4_MACH_CRED;
	CHECK_EQ(nfs41c_compound_raw_auth(c, nfsd_gss_clnt_auth(mach, NFSD_GSS_SVC_NONE), NULL, 1,
					  &ex, 1, &res, &ar),
		 0);
	CHECK_EQ(res.status, NFS4ERR_INVAL);
	xdr_arena_release(&ar);
}

/* SECINFO_NO_NAME of the krb5p-only export; WRONGSEC below krb5p. */
static void t_exports(struct nfs41c_session *p, struct nfs41c_session *i,
		      struct nfs41c_session *sys)
{
	struct ts_fh k5p, x;
	CHECK_EQ(walk(p, "k5p", &k5p), NFS4_OK);
	nfs_argop4 ops[2] = {ts_put(&k5p), ts_op(OP_SECINFO_NO_NAME)};
	ops[1].u.opsecinfo_no_name = SECINFO_STYLE4_CURRENT_FH;
	COMPOUND4res res;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	CHECK_EQ(nfs41c_compound(p, ops, 2, &res, &ar), 0);
	CHECK_EQ(res.status, NFS4_OK);
	SECINFO4resok *si = &res.resarray.val[2].u.opsecinfo_no_name.u.resok4;
	CHECK_EQ(si->len, 1);
	CHECK_EQ(si->val[0].flavor, RPCSEC_GSS);
	CHECK_EQ(si->val[0].u.flavor_info.service, RPC_GSS_SVC_PRIVACY);
	xdr_arena_release(&ar);
	struct ts_openres o;
	CHECK_EQ(ts_open_name(p, &k5p, "k5", "f", OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_NONE,
			      true, &o),
		 NFS4_OK);
	CHECK_EQ(walk(p, "k5p/f", &x), NFS4_OK);
	/* SP4_MACH_CRED's spo_must_allow: the client host's principal closes
	 * over the lease's krb5i what a user opened over krb5p (as Linux
	 * does), but krb5i alone still gets WRONGSEC there */
	nfs41c_session_set_auth(p, nfsd_gss_clnt_auth(mach_g, NFSD_GSS_SVC_INTEGRITY));
	CHECK_EQ(walk(p, "k5p/f", &x), NFS4ERR_WRONGSEC);
	stateid4 closed;
	CHECK_EQ(ts_close(p, &o.fh, &o.sid, &closed), NFS4_OK);
	nfs41c_session_set_auth(p, nfsd_gss_clnt_auth(mach_g, NFSD_GSS_SVC_PRIVACY));
	CHECK_EQ(walk(i, "k5p/f", &x), NFS4ERR_WRONGSEC);
	CHECK_EQ(walk(sys, "k5p/f", &x), NFS4ERR_WRONGSEC);
	/* the root export takes all of them */
	CHECK_EQ(walk(i, "", &x), NFS4_OK);
	CHECK_EQ(walk(sys, "", &x), NFS4_OK);
}

/* NFSv4.1 to a data server: PUTFH + READ or WRITE with stateid sid. */
static nfsstat4 ds_io(struct nfs41c_session *d, const struct lt_ds *x, bool write,
		      const stateid4 *sid, uint64_t off, uint32_t len)
{
	nfs_argop4 ops[2] = {{.argop = OP_PUTFH}, {.argop = write ? OP_WRITE : OP_READ}};
	ops[0].u.opputfh.object = xdr_opaque_of(x->fh, x->fhlen);
	if (write) {
		ops[1].u.opwrite.stateid = *sid;
		ops[1].u.opwrite.offset = off;
		ops[1].u.opwrite.stable = FILE_SYNC4;
		ops[1].u.opwrite.data = xdr_opaque_of(buf, len);
	} else {
		ops[1].u.opread.stateid = *sid;
		ops[1].u.opread.offset = off;
		ops[1].u.opread.count = len;
	}
	COMPOUND4res res;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	int rc = nfs41c_compound(d, ops, 2, &res, &ar);
	nfsstat4 st = rc < 0 ? NFS4ERR_SERVERFAULT : res.status;
	if (!st && !write) {
		const READ4resok *r = &res.resarray.val[2].u.opread.u.resok4;
		CHECK_EQ(r->data.len, len);
		memcpy(rbuf, r->data.val, len);
	}
	xdr_arena_release(&ar);
	return st;
}

static void t_tight(struct nfs41c_session *p, struct nfs41c_session *dsx,
		    struct nfs41c_session *sys)
{
	struct ts_openres o;
	CHECK_EQ(ts_open_name(p, NULL, "k5", "tight", OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_NONE,
			      true, &o),
		 NFS4_OK);
	struct lt_layout l, lr;
	CHECK_EQ(lt_get_page(p, &o.fh, LAYOUTIOMODE4_RW, 0, &o.sid, &l), NFS4_OK);
	CHECK_EQ(lt_get_page(p, &o.fh, LAYOUTIOMODE4_READ, 0, &l.sid, &lr), NFS4_OK);
	const struct lt_ds *x = &l.ds[0], *xr = &lr.ds[0];
	/* its own device, NFSv4.1 only, tightly coupled; no ids */
	CHECK(layout_devid_tight(x->dev));
	CHECK(!strcmp(x->user, "65534") && !strcmp(x->group, "65534"));
	struct lt_dev dv;
	CHECK_EQ(lt_getdeviceinfo(p, x->dev, 4096, 0, &dv), NFS4_OK);
	CHECK_EQ(dv.nvers, 1);
	CHECK_EQ(dv.vers[0].ffdv_version, 4);
	CHECK(dv.vers[0].ffdv_tightly_coupled);
	/* the capability is the MAC of the object's current owner and group */
	uint64_t ino = lt_ino(&L, &o.fh);
	struct mds_attr at = cl_attr(&L.m, ino);
	struct mds_file_map map;
	CHECK_EQ(mds_data_map(L.m.mds, ino, &map), 0);
	uint32_t uid, gid;
	mds_data_fence_epoch(L.m.mds, &at, map.epoch, &uid, &gid);
	struct ds_objid oid;
	mds_data_objid(&at, &oid);
	uint8_t want[12];
	ctl_cap_make(&L.m.mds->key.cap, &oid, uid, gid, CTL_CAP_RW, want);
	CHECK_EQ(x->sid.seqid, CTL_CAP_SEQID);
	CHECK(!memcmp(x->sid.other, want, 12));
	ctl_cap_make(&L.m.mds->key.cap, &oid, uid, gid, CTL_CAP_READ, want);
	CHECK(!memcmp(xr->sid.other, want, 12));
	/* an AUTH_SYS client of the same file gets the loose device and ids */
	struct ts_openres os;
	struct lt_layout ls;
	CHECK_EQ(ts_open_name(sys, NULL, "sys", "tight", OPEN4_SHARE_ACCESS_BOTH,
			      OPEN4_SHARE_DENY_NONE, false, &os),
		 NFS4_OK);
	CHECK_EQ(lt_get_page(sys, &os.fh, LAYOUTIOMODE4_RW, 0, &os.sid, &ls), NFS4_OK);
	CHECK(!layout_devid_tight(ls.ds[0].dev));
	CHECK_EQ(ls.ds[0].uid, uid);
	CHECK_EQ(layout_devid_ds(ls.ds[0].dev), layout_devid_ds(x->dev));

	/* the data server, over RPCSEC_GSS (dsx: another principal than the
	 * one that got the layout: the capability is not bound to it) */
	dt_fill(buf, 0, sizeof(buf), 7);
	CHECK_EQ(ds_io(dsx, x, true, &x->sid, 0, sizeof(buf)), NFS4_OK);
	CHECK_EQ(ds_io(dsx, xr, false, &xr->sid, 0, sizeof(buf)), NFS4_OK);
	CHECK(dt_check(rbuf, 0, sizeof(buf), 7));
	CHECK_EQ(ds_io(dsx, x, false, &x->sid, 0, sizeof(buf)), NFS4_OK);
	CHECK_EQ(ds_io(dsx, xr, true, &xr->sid, 0, 4096), NFS4ERR_ACCESS);
	stateid4 anon = {0}, flip = x->sid;
	CHECK_EQ(ds_io(dsx, x, true, &anon, 0, 4096), NFS4ERR_ACCESS);
	CHECK_EQ(ds_io(dsx, x, false, &anon, 0, 4096), NFS4ERR_ACCESS);
	flip.other[5] ^= 0x10;
	CHECK_EQ(ds_io(dsx, x, true, &flip, 0, 4096), NFS4ERR_ACCESS);
	/* a capability of another file */
	struct ts_openres o2;
	struct lt_layout l2;
	CHECK_EQ(ts_open_name(p, NULL, "k5", "other", OPEN4_SHARE_ACCESS_BOTH,
			      OPEN4_SHARE_DENY_NONE, true, &o2),
		 NFS4_OK);
	CHECK_EQ(lt_get_page(p, &o2.fh, LAYOUTIOMODE4_RW, 0, &o2.sid, &l2), NFS4_OK);
	CHECK_EQ(ds_io(dsx, x, true, &l2.ds[0].sid, 0, 4096), NFS4ERR_ACCESS);
	/* AUTH_SYS with the fence ids, beside it (loosely coupled) */
	struct cds *d = lt_ds_of_dev(&L, sys, ls.ds[0].dev);
	uint32_t n;
	CHECK_EQ(lt_ds_read(d, &ls.ds[0], 0, rbuf, 4096, uid, gid, &n), NFS3_OK);
	CHECK(n == 4096 && dt_check(rbuf, 0, 4096, 7));

	/* a fence voids every capability made before it */
	uint32_t epoch;
	CHECK_EQ(mds_data_fence_new(L.m.mds, &at, &epoch), 0);
	CHECK(epoch > map.epoch);
	CHECK_EQ(ds_io(dsx, x, true, &x->sid, 0, 4096), NFS4ERR_ACCESS);
	CHECK_EQ(ds_io(dsx, x, false, &x->sid, 0, 4096), NFS4ERR_ACCESS);
	CHECK_EQ(ds_io(dsx, xr, false, &xr->sid, 0, 4096), NFS4ERR_ACCESS);
	struct lt_layout ln;
	CHECK_EQ(lt_return_all(p, &o.fh, &l.sid), NFS4_OK);
	CHECK_EQ(lt_get_page(p, &o.fh, LAYOUTIOMODE4_RW, 0, &o.sid, &ln), NFS4_OK);
	CHECK(memcmp(ln.ds[0].sid.other, x->sid.other, 12));
	dt_fill(buf, 0, 4096, 8);
	CHECK_EQ(ds_io(dsx, &ln.ds[0], true, &ln.ds[0].sid, 0, 4096), NFS4_OK);
	CHECK_EQ(ds_io(dsx, &ln.ds[0], false, &ln.ds[0].sid, 0, 4096), NFS4_OK);
	CHECK(dt_check(rbuf, 0, 4096, 8));
}

/* Files on a data server without a keytab: no layout for Kerberos, no
 * stale mark, AUTH_SYS unaffected. */
static void t_nogss(struct nfs41c_session *p, struct nfs41c_session *sys)
{
	struct cds *plain = &L.ds[1];
	cds_start(&L.m, plain);
	cds_stop(&L.ds[0]); /* new files go to the plain one */
	cl_wait_down(&L.m, L.ds[0].id);
	struct ts_openres o, os;
	CHECK_EQ(ts_open_name(sys, NULL, "sys", "plain", OPEN4_SHARE_ACCESS_BOTH,
			      OPEN4_SHARE_DENY_NONE, true, &os),
		 NFS4_OK);
	struct lt_layout ls, l;
	CHECK_EQ(lt_get_page(sys, &os.fh, LAYOUTIOMODE4_RW, 0, &os.sid, &ls), NFS4_OK);
	CHECK_EQ(layout_devid_ds(ls.ds[0].dev), plain->id);
	CHECK_EQ(ts_open_name(p, NULL, "k5", "plain", OPEN4_SHARE_ACCESS_BOTH,
			      OPEN4_SHARE_DENY_NONE, false, &o),
		 NFS4_OK);
	CHECK_EQ(lt_get_page(p, &o.fh, LAYOUTIOMODE4_RW, 0, &o.sid, &l), NFS4ERR_LAYOUTUNAVAILABLE);
	CHECK_EQ(lt_get_page(p, &o.fh, LAYOUTIOMODE4_READ, 0, &o.sid, &l),
		 NFS4ERR_LAYOUTUNAVAILABLE);
	struct mds_file_map map;
	CHECK_EQ(mds_data_map(L.m.mds, lt_ino(&L, &o.fh), &map), 0);
	CHECK(!mds_data_map_stale(&map, plain->id));
	/* and the AUTH_SYS client writes there with the layout it got */
	CHECK_EQ(lt_ds_write(plain, &ls.ds[0], 0, buf, 4096, FILE_SYNC, ls.ds[0].uid,
			     ls.ds[0].gid),
		 NFS3_OK);
}

int main(int argc, char **argv)
{
	CHECK(argc == 2);
	keytab = argv[1];
	char conf[4096];
	snprintf(conf, sizeof(conf), CONF "keytab = %s\n", keytab);
	memset(&L, 0, sizeof(L));
	mt_start(&L.m, "/ *(rw,sec=krb5:krb5i:krb5p:sys,no_root_squash,insecure)\n"
		       "/k5p *(rw,sec=krb5p,no_root_squash,insecure)\n",
		 conf);
	cl_pin_port(&L.m, conf);
	L.nds = 2;
	char extra[4400];
	snprintf(extra, sizeof(extra), "keytab = %s\n", keytab);
	/* ds-a takes Kerberos (NFSv4.1 too); ds-b has no keytab (started later) */
	for (unsigned k = 0; k < 2; k++) {
		struct cds *d = &L.ds[k];
		cds_prepare(&L.m, d, k ? "ds-b" : "ds-a", NULL);
		char c[16384];
		snprintf(c, sizeof(c),
			 "[ds]\nstore_dir = %s/%s-store\nkey_file = %s\nlisten = 127.0.0.1:0\n"
			 "nfs3 = yes\nnfs41 = yes\nmds = 127.0.0.1:%d\nhostname = %s\nio = psync\n%s",
			 L.m.dir, d->name, L.m.key_path, L.m.port, d->name, k ? "" : extra);
		mt_write_file(d->conf_path, c, 0644);
	}
	cds_start(&L.m, &L.ds[0]);

	struct nfsd_clnt *c = mt_connect(&L.m);
	struct nfsd_gss_clnt *mach = test_gss_clnt(c, "nfs/client.braid.test");
	mach_g = mach;
	struct nfsd_gss_clnt *user = test_gss_clnt(c, "daemon");
	struct nfsd_gss_clnt *nouser = test_gss_clnt(c, "nouser");
	t_state_protection(c, mach, nouser);

	struct nfs41c_session *p =
	    session(c, "krb5p-client", nfsd_gss_clnt_auth(mach, NFSD_GSS_SVC_PRIVACY), true, 0);
	struct nfs41c_session *i =
	    session(c, "krb5i-client", nfsd_gss_clnt_auth(user, NFSD_GSS_SVC_INTEGRITY), false, 0);
	struct nfs41c_session *sys = mt_session(&L.m, "sys-client", 0, 0);
	t_exports(p, i, sys);

	/* the data server, over Kerberos as another principal */
	struct nfsd_clnt *dc = connect_port(L.ds[0].port);
	struct nfsd_gss_clnt *dg = test_gss_clnt(dc, "daemon");
	struct nfs41c_session *dsx = session(dc, "krb5-ds-client",
					     nfsd_gss_clnt_auth(dg, NFSD_GSS_SVC_INTEGRITY), false,
					     EXCHGID4_FLAG_USE_PNFS_DS);
	t_tight(p, dsx, sys);
	/* the contexts show in both servers' metrics */
	CHECK(metric(L.m.mds->metrics, "braid_rpcsec_gss_contexts_created_total") >= 3);
	CHECK(metric(L.m.mds->metrics, "braid_rpcsec_gss_contexts") >= 3);
	CHECK(metric(L.ds[0].ds->metrics, "braid_rpcsec_gss_contexts_created_total") >= 1);
	CHECK_EQ(metric(L.ds[0].ds->metrics, "braid_rpcsec_gss_rejected_total"), -1); /* labelled */
	nfs41c_session_destroy(dsx);
	nfsd_gss_clnt_free(dg);
	nfsd_clnt_free(dc);

	t_nogss(p, sys);

	nfs41c_session_destroy(sys);
	nfs41c_session_destroy(i);
	nfs41c_session_destroy(p);
	nfsd_gss_clnt_free(nouser);
	nfsd_gss_clnt_free(user);
	nfsd_gss_clnt_free(mach);
	nfsd_clnt_free(c);
	cds_stop(&L.ds[1]);
	mt_finish(&L.m);
	printf("ok\n");
	return 0;
}
