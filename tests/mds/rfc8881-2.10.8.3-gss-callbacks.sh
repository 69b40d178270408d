#!/bin/sh
# braid-mds's callbacks under RPCSEC_GSS (RFC 8881 §2.10.8.3;
# tests/mds/rfc8881-2.10.8.3-gss-callbacks.c) in a temporary realm on
# loopback (tests/krb5-realm.sh): the server's keys (nfs/localhost) in one
# keytab, the client's (nfs/client.braid.test, and daemon as another
# principal) in another.  Skips without krb5-kdc, except in CI.
top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}
. "$top_srcdir/tests/krb5-realm.sh"
krb5_realm_test gss-cb "$top_builddir/tests/mds/rfc8881-2.10.8.3-gss-callbacks" daemon nouser nfs/client.braid.test
