/* SPDX-License-Identifier: MIT */
/*
 * exports(5) "secure" (the default) on NFSv4, as knfsd applies it to every
 * NFS request and not only to MOUNT: AUTH_SYS calls that reach an export
 * from a port at or above 1024 get NFS4ERR_PERM, whatever the op (LOOKUP
 * into it, PUTFH of one of its handles, ops on the handle); the same calls
 * from a reserved port (the kernel client's), or to an "insecure" export,
 * work; the pseudo filesystem above the exports stays open, as knfsd's.
 * The reserved-port half needs CAP_NET_BIND_SERVICE (root in CI); without
 * it the test says so and exits 77.
 */
#include "config.h"

#include "mds/fh.h"
#include "mds/mds_impl.h"
#include "tests/mds/mds-test.h"
#include "tests/mds/dir-test.h"

/* A client of t's MDS from a reserved port; NULL when we may not bind one. */
static struct nfsd_clnt *connect_resv(struct mt *t)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)t->port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct nfsd_clnt_opts o = { .timeout_ms = 30000, .resvport = true };
	int err = 0;
	struct nfsd_clnt *c = nfsd_clnt_new(t->eng, (struct sockaddr *)&sa, sizeof(sa), &o, &err);
	if (!c)
		CHECK(err == -EACCES || err == -EPERM);
	return c;
}

/* The session's view: what it may do in /s (secure) and /i (insecure). */
static void check_view(struct nfs41c_session *s, const struct dt_fh *sfh, const struct dt_fh *ifh,
		       nfsstat4 want_s)
{
	struct dt_fh root, x;
	bitmap4 none = { 0 };
	CHECK_EQ(dt_walk(s, "", &root), NFS4_OK); /* the pseudo fs */
	CHECK_EQ(dt_walk(s, "s", &x), want_s);
	CHECK_EQ(dt_walk(s, "s/f", &x), want_s);
	CHECK_EQ(dt_do(s, sfh, dt_getattr(none)), want_s);
	CHECK_EQ(dt_do(s, sfh, dt_mkdir(want_s ? "nope" : "made")), want_s);
	CHECK_EQ(dt_walk(s, "i/f", &x), NFS4_OK);
	CHECK_EQ(dt_do(s, ifh, dt_getattr(none)), NFS4_OK);
}

int main(void)
{
	struct mt t;
	/* the default connection (mt_connect) comes from an ephemeral port */
	mt_start(&t, "/s *(rw,no_root_squash)\n/i *(rw,no_root_squash,insecure)\n", NULL);
	struct nfs41c_session *s = mt_session(&t, "secure-eph", 0, 0);
	/* handles as the server makes them, for PUTFH without a LOOKUP */
	struct mds_attr a;
	struct dt_fh sfh = { .len = MDS_FH_SIZE }, ifh = { .len = MDS_FH_SIZE };
	struct mds_exports *x = mds_exports_get(t.mds);
	for (int k = 0; k < 2; k++) {
		CHECK(dt_store_lookup(&t, dt_root(&t), k ? "i" : "s", &a) == 0);
		const struct mds_export *e = mds_export_by_root(x, a.ino);
		CHECK(e);
		struct mds_fh f = { .ino = a.ino, .gen = a.generation, .export_id = e->id };
		mds_fh_make(t.mds, &f, k ? ifh.b : sfh.b);
		dt_store_make(&t, a.ino, "f", MDS_REG, 0644, 0, 0);
	}
	mds_exports_put(x);

	check_view(s, &sfh, &ifh, NFS4ERR_PERM);

	struct nfsd_clnt *rc = connect_resv(&t);
	if (!rc) {
		fprintf(stderr, "SKIP: cannot bind a reserved port (needs CAP_NET_BIND_SERVICE); "
				"the refusal half passed\n");
		nfs41c_session_destroy(s);
		mt_finish(&t);
		return 77;
	}
	struct nfs41c_session *r = NULL;
	CHECK_EQ(nfs41c_session_create(rc, "secure-resv", 0, &r), 0);
	nfs41c_session_set_cred(r, 0, 0);
	check_view(r, &sfh, &ifh, NFS4_OK);
	/* and the unprivileged one is still refused afterwards */
	check_view(s, &sfh, &ifh, NFS4ERR_PERM);
	nfs41c_session_destroy(r);
	nfsd_clnt_free(rc);
	nfs41c_session_destroy(s);
	mt_finish(&t);
	return 0;
}
