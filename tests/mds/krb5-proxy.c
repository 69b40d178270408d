/* SPDX-License-Identifier: MIT */
/*
 * Kerberos on the hop from braid-mds to the data servers for the file data
 * the MDS proxies (mds/io_gss.c), with our own client under RPCSEC_GSS
 * against braid-mds and braid-ds in this process, in the realm
 * tests/mds/krb5-proxy.sh sets up: the servers' keys (nfs/localhost) in
 * argv[1], the client's (nfs/client.braid.test) in KRB5_CLIENT_KTNAME.
 * No layouts: the client's READ, WRITE and COMMIT go to the MDS.
 *
 * It proves:
 *  - a krb5p client writes, commits and reads back through the MDS; each
 *    data server call went krb5p (braid_mds_proxy_calls_total{sec}), the
 *    data server served them as NFSv4.1 (with the MDS's RPCSEC_GSS context)
 *    and no NFSv3 (AUTH_SYS) READ or WRITE at all;
 *  - a krb5i client's hop is krb5i; an AUTH_SYS client's is NFSv3 as ever;
 *  - a data server without a keytab: a krb5p WRITE or READ of an object
 *    there gets NFS4ERR_DELAY and nothing reaches it (no NFSv3 WRITE, no
 *    byte written); krb5i and AUTH_SYS I/O there still works, AUTH_SYS
 *    (the documented fallback).
 */
#include "config.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "dataserver/ds_impl.h"
#include "nfsd/clnt_gss.h"
#include "tests/mds/krb5-test.h"
#include "tests/mds/layout-test.h"

#define CONF "heartbeat_interval = 1s\nds_timeout = 3s\n"
#define LEN  65536

static struct lt L;
static uint8_t buf[LEN], rbuf[LEN];

static struct nfs41c_session *session(struct nfsd_clnt *c, const char *owner,
				      const struct nfsd_clnt_auth *auth)
{
	struct nfs41c_session *s = NULL;
	struct nfs41c_session_opts o = {.owner = owner, .auth = auth};
	CHECK_EQ(nfs41c_session_create_opts(c, &o, &s), 0);
	mt_reclaim_complete(s);
	return s;
}

/* The sum of the samples of name whose labels hold every one of the
 * (NULL-ended) strings after it; 0 when none. */
static long long metric(struct nfsd_metrics *m, const char *name, ...)
{
	char *text = NULL;
	size_t len = 0;
	CHECK_EQ(nfsd_metrics_render(m, &text, &len), 0);
	long long v = 0;
	size_t n = strlen(name);
	for (char *l = text; l && *l;) {
		char *nl = strchr(l, '\n');
		if (nl)
			*nl = 0;
		char *sp = strrchr(l, ' ');
		if (!strncmp(l, name, n) && (l[n] == '{' || l[n] == ' ') && sp) {
			bool all = true;
			va_list ap;
			va_start(ap, name);
			for (const char *want; all && (want = va_arg(ap, const char *));) {
				char *hit = strstr(l, want);
				all = hit && hit < sp;
			}
			va_end(ap);
			if (all)
				v += atoll(sp + 1);
		}
		l = nl ? nl + 1 : NULL;
	}
	free(text);
	return v;
}

static long long hop(const char *sec)
{
	char l[32];
	snprintf(l, sizeof(l), "sec=\"%s\"", sec);
	return metric(L.m.mds->metrics, "braid_mds_proxy_calls_total", l, NULL);
}

/* What a data server served: NFSv3 READ and WRITE calls, NFSv4 WRITE
 * bytes, bytes written to its store. */
struct dsc {
	long long v3_read, v3_write, v4_write_bytes, stored;
};

static struct dsc dsc_of(struct cds *d)
{
	struct nfsd_metrics *m = d->ds->metrics;
	struct dsc c = {
	    metric(m, "braid_rpc_requests_total", "version=\"3\"", "READ\"", NULL),
	    metric(m, "braid_rpc_requests_total", "version=\"3\"", "WRITE\"", NULL),
	    metric(m, "braid_nfs4_op_bytes_total", "WRITE\"", NULL),
	    metric(m, "braid_ds_written_bytes_total", NULL),
	};
	return c;
}

static void write_read(struct nfs41c_session *s, const struct ts_fh *f, unsigned seed)
{
	dt_fill(buf, 0, LEN, seed);
	CHECK_EQ(lt_mds_write(s, f, 0, buf, LEN), NFS4_OK);
	struct cfile cf = {.fh = ts_fh4(f)};
	uint8_t verf[8];
	CHECK_EQ(cl_do_commit(s, &cf, 0, 0, verf), NFS4_OK);
	uint32_t n = 0;
	memset(rbuf, 0, LEN);
	CHECK_EQ(lt_mds_read(s, f, 0, LEN, rbuf, &n), NFS4_OK);
	CHECK_EQ(n, LEN);
	CHECK(dt_check(rbuf, 0, LEN, seed));
}

static void t_sealed(struct nfs41c_session *p, struct nfs41c_session *i, struct nfs41c_session *sys)
{
	struct cds *d = &L.ds[0];
	struct ts_openres o;
	CHECK_EQ(ts_open_name(p, NULL, "k5p", "f", OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_NONE,
			      true, &o),
		 NFS4_OK);
	long long s0 = hop("sys"), i0 = hop("krb5i"), p0 = hop("krb5p");
	struct dsc c0 = dsc_of(d);
	write_read(p, &o.fh, 3);
	struct dsc c1 = dsc_of(d);
	/* WRITE, COMMIT, READ: each one call, krb5p */
	CHECK(hop("krb5p") - p0 >= 3);
	CHECK_EQ(hop("sys"), s0);
	CHECK_EQ(hop("krb5i"), i0);
	/* the data server took them over NFSv4.1, never NFSv3 */
	CHECK_EQ(c1.v3_write, c0.v3_write);
	CHECK_EQ(c1.v3_read, c0.v3_read);
	CHECK(c1.v4_write_bytes - c0.v4_write_bytes >= LEN);
	CHECK(c1.stored - c0.stored >= LEN);
	CHECK(metric(d->ds->metrics, "braid_rpcsec_gss_contexts_created_total", NULL) >= 1);
	CHECK_EQ(metric(d->ds->metrics, "braid_rpcsec_gss_rejected_total", NULL), 0);

	/* krb5i: a krb5i hop */
	struct ts_openres oi;
	CHECK_EQ(ts_open_name(i, NULL, "k5i", "g", OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_NONE,
			      true, &oi),
		 NFS4_OK);
	write_read(i, &oi.fh, 4);
	CHECK(hop("krb5i") - i0 >= 3);
	CHECK_EQ(hop("sys"), s0);

	/* AUTH_SYS: NFSv3 as before */
	struct ts_openres os;
	CHECK_EQ(ts_open_name(sys, NULL, "sys", "h", OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_NONE,
			      true, &os),
		 NFS4_OK);
	long long k5p = hop("krb5p");
	write_read(sys, &os.fh, 5);
	struct dsc c2 = dsc_of(d);
	CHECK(hop("sys") - s0 >= 3);
	CHECK_EQ(hop("krb5p"), k5p);
	CHECK(c2.v3_write > c1.v3_write && c2.v3_read > c1.v3_read);
	/* the krb5p file still reads back, krb5p, after the others */
	uint32_t n = 0;
	CHECK_EQ(lt_mds_read(p, &o.fh, 0, LEN, rbuf, &n), NFS4_OK);
	CHECK(n == LEN && dt_check(rbuf, 0, LEN, 3));
	CHECK(hop("krb5p") > k5p);
}

/* Objects on a data server without a keytab: krb5p waits, never plaintext. */
static void t_nogss(struct nfs41c_session *p, struct nfs41c_session *i, struct nfs41c_session *sys)
{
	struct cds *plain = &L.ds[1];
	cds_start(&L.m, plain);
	cds_stop(&L.ds[0]); /* new objects go to the plain one */
	cl_wait_down(&L.m, L.ds[0].id);
	struct ts_openres os, op, oi;
	CHECK_EQ(ts_open_name(sys, NULL, "sys", "plain", OPEN4_SHARE_ACCESS_BOTH,
			      OPEN4_SHARE_DENY_NONE, true, &os),
		 NFS4_OK);
	write_read(sys, &os.fh, 6);
	CHECK_EQ(ts_open_name(p, NULL, "k5p", "plainp", OPEN4_SHARE_ACCESS_BOTH,
			      OPEN4_SHARE_DENY_NONE, true, &op),
		 NFS4_OK);
	long long p0 = hop("krb5p");
	struct dsc c0 = dsc_of(plain);
	dt_fill(buf, 0, LEN, 7);
	CHECK_EQ(lt_mds_write(p, &op.fh, 0, buf, LEN), NFS4ERR_DELAY);
	uint32_t n = 0;
	CHECK_EQ(lt_mds_read(p, &os.fh, 0, LEN, rbuf, &n), NFS4ERR_DELAY);
	struct dsc c1 = dsc_of(plain);
	CHECK_EQ(c1.v3_write, c0.v3_write);
	CHECK_EQ(c1.v3_read, c0.v3_read);
	CHECK_EQ(c1.stored, c0.stored);
	CHECK_EQ(hop("krb5p"), p0);
	/* krb5i goes as AUTH_SYS there (documented) */
	long long s0 = hop("sys");
	CHECK_EQ(ts_open_name(i, NULL, "k5i", "plaini", OPEN4_SHARE_ACCESS_BOTH,
			      OPEN4_SHARE_DENY_NONE, true, &oi),
		 NFS4_OK);
	write_read(i, &oi.fh, 8);
	CHECK(hop("sys") - s0 >= 3);
}

int main(int argc, char **argv)
{
	CHECK(argc == 2);
	const char *keytab = argv[1];
	char conf[4096];
	snprintf(conf, sizeof(conf), CONF "keytab = %s\n", keytab);
	memset(&L, 0, sizeof(L));
	mt_start(&L.m, "/ *(rw,sec=krb5p:krb5i:sys,no_root_squash,insecure)\n", conf);
	cl_pin_port(&L.m, conf);
	L.nds = 2;
	char extra[4400];
	snprintf(extra, sizeof(extra), "keytab = %s\nhostname = localhost\n", keytab);
	/* ds-a takes Kerberos as nfs/localhost; ds-b has no keytab (started later) */
	for (unsigned k = 0; k < 2; k++) {
		struct cds *d = &L.ds[k];
		cds_prepare(&L.m, d, k ? "ds-b" : "ds-a", NULL);
		char c[16384];
		snprintf(c, sizeof(c),
			 "[ds]\nstore_dir = %s/%s-store\nkey_file = %s\nlisten = 127.0.0.1:0\n"
			 "nfs3 = yes\nnfs41 = yes\nmds = 127.0.0.1:%d\nio = psync\n%s",
			 L.m.dir, d->name, L.m.key_path, L.m.port, k ? "hostname = ds-b\n" : extra);
		mt_write_file(d->conf_path, c, 0644);
	}
	cds_start(&L.m, &L.ds[0]);

	struct nfsd_clnt *c = mt_connect(&L.m);
	struct nfsd_gss_clnt *mach = test_gss_clnt(c, "nfs/client.braid.test");
	struct nfs41c_session *p =
	    session(c, "krb5p-client", nfsd_gss_clnt_auth(mach, NFSD_GSS_SVC_PRIVACY));
	struct nfs41c_session *i =
	    session(c, "krb5i-client", nfsd_gss_clnt_auth(mach, NFSD_GSS_SVC_INTEGRITY));
	struct nfs41c_session *sys = mt_session(&L.m, "sys-client", 0, 0);

	t_sealed(p, i, sys);
	t_nogss(p, i, sys);

	nfs41c_session_destroy(sys);
	nfs41c_session_destroy(i);
	nfs41c_session_destroy(p);
	nfsd_gss_clnt_free(mach);
	nfsd_clnt_free(c);
	cds_stop(&L.ds[1]);
	mt_finish(&L.m);
	printf("ok\n");
	return 0;
}
