/* SPDX-License-Identifier: MIT */
/* Helpers for the cluster tests under Kerberos (tests/krb5-realm.sh's
 * krb5_realm_test runs them with KRB5_CLIENT_KTNAME set). */
#ifndef BRAID_TESTS_MDS_KRB5_TEST_H
#define BRAID_TESTS_MDS_KRB5_TEST_H

struct nfsd_clnt;

/* An RPCSEC_GSS context with nfs@localhost (NFSv4) over c, as principal
 * from the client keytab; the test fails if it cannot be made. */
struct nfsd_gss_clnt *test_gss_clnt(struct nfsd_clnt *c, const char *principal);

#endif
