#!/bin/sh
# Kerberos on the hop from braid-mds to the data servers for the file data
# the MDS proxies (tests/mds/krb5-proxy.c), in a temporary realm on
# loopback (tests/krb5-realm.sh): the servers' keys (nfs/localhost, which
# the MDS also initiates with) in one keytab, the client's
# (nfs/client.braid.test: root) in another.  Needs krb5-kdc and
# krb5-admin-server (tools/install-deps); skips without them, except in CI.
top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}
bin=$top_builddir/tests/mds/krb5-proxy
. "$top_srcdir/tests/krb5-realm.sh"
if ! why=$(krb5_realm_need); then
	if [ -n "${CI:-}" ]; then
		echo "FAIL: $why (CI must run this test)"
		exit 99
	fi
	echo "SKIP: $why"
	exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/braid-krb5-proxy.XXXXXX") || exit 99
cleanup() {
	krb5_realm_stop
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

krb5_realm_start "$tmp" BRAID.TEST localhost || exit 99
krb5_addprinc nfs/localhost nfs/client.braid.test || exit 99
krb5_ktadd "$tmp/server.keytab" nfs/localhost || exit 99
krb5_ktadd "$tmp/client.keytab" nfs/client.braid.test || exit 99
mkdir "$tmp/ccache" || exit 99

KRB5_KTNAME=FILE:$tmp/server.keytab KRB5_CLIENT_KTNAME=FILE:$tmp/client.keytab \
	KRB5CCNAME=DIR:$tmp/ccache "$bin" "$tmp/server.keytab"
rc=$?
if [ $rc -ne 0 ]; then
	echo "krb5-proxy failed ($rc); KDC log:"
	tail -n 30 "$tmp/kdc.log"
fi
exit $rc
