#!/bin/sh
# Kerberos on the whole data path (tests/mds/krb5-layouts.c: exports'
# sec=, SP4_MACH_CRED, tightly coupled layouts and the data server's
# capability checks) in a temporary realm on loopback (tests/krb5-realm.sh):
# the servers' keys (nfs/localhost) in one keytab, the client's in another:
# daemon (maps to the local user daemon, which every Debian system has),
# nouser (no local user: nobody) and nfs/client.braid.test (a client host:
# root).  Needs krb5-kdc and krb5-admin-server (tools/install-deps); skips
# without them, except in CI.
top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}
. "$top_srcdir/tests/krb5-realm.sh"
krb5_realm_test krb5-layouts "$top_builddir/tests/mds/krb5-layouts" daemon nouser nfs/client.braid.test
