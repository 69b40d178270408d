#!/bin/sh
# Kerberos on the hop from braid-mds to the data servers for the file data
# the MDS proxies (tests/mds/krb5-proxy.c), in a temporary realm on
# loopback (tests/krb5-realm.sh): the servers' keys (nfs/localhost, which
# the MDS also initiates with) in one keytab, the client's
# (nfs/client.braid.test: root) in another.  Needs krb5-kdc and
# krb5-admin-server (tools/install-deps); skips without them, except in CI.
top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}
. "$top_srcdir/tests/krb5-realm.sh"
krb5_realm_test krb5-proxy "$top_builddir/tests/mds/krb5-proxy" nfs/client.braid.test
