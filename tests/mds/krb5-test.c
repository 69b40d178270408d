/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nfs4_prot.h"
#include "nfsd/clnt_gss.h"
#include "tests/check.h"
#include "tests/mds/krb5-test.h"

struct nfsd_gss_clnt *test_gss_clnt(struct nfsd_clnt *c, const char *principal)
{
	char why[512];
	int err = 0;
	struct nfsd_gss_clnt_opts o = {
	    .prog = NFS4_PROGRAM,
	    .vers = 4,
	    .service = "nfs@localhost",
	    .principal = principal,
	    .keytab = getenv("KRB5_CLIENT_KTNAME"),
	    .timeout_ms = 10000,
	};
	struct nfsd_gss_clnt *g = nfsd_gss_clnt_new(c, &o, why, sizeof(why), &err);
	if (!g)
		fprintf(stderr, "nfsd_gss_clnt_new(%s): %s (%s)\n", principal, strerror(-err), why);
	CHECK(g);
	return g;
}
