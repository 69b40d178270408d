#!/bin/sh
# braid-mds's callbacks under RPCSEC_GSS (RFC 8881 §2.10.8.3;
# tests/mds/rfc8881-2.10.8.3-gss-callbacks.c) in a temporary realm on
# loopback (tests/krb5-realm.sh): the server's keys (nfs/localhost) in one
# keytab, the client's (nfs/client.braid.test, and daemon as another
# principal) in another.  Skips without krb5-kdc, except in CI.
top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}
bin=$top_builddir/tests/mds/rfc8881-2.10.8.3-gss-callbacks
. "$top_srcdir/tests/krb5-realm.sh"
if ! why=$(krb5_realm_need); then
	if [ -n "${CI:-}" ]; then
		echo "FAIL: $why (CI must run this test)"
		exit 99
	fi
	echo "SKIP: $why"
	exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/braid-gss-cb.XXXXXX") || exit 99
cleanup() {
	krb5_realm_stop
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

krb5_realm_start "$tmp" BRAID.TEST localhost || exit 99
krb5_addprinc nfs/localhost daemon nouser nfs/client.braid.test || exit 99
krb5_ktadd "$tmp/server.keytab" nfs/localhost || exit 99
krb5_ktadd "$tmp/client.keytab" daemon nouser nfs/client.braid.test || exit 99
mkdir "$tmp/ccache" || exit 99

KRB5_KTNAME=FILE:$tmp/server.keytab KRB5_CLIENT_KTNAME=FILE:$tmp/client.keytab \
	KRB5CCNAME=DIR:$tmp/ccache "$bin" "$tmp/server.keytab"
rc=$?
if [ $rc -ne 0 ]; then
	echo "gss-callbacks failed ($rc); KDC log:"
	tail -n 30 "$tmp/kdc.log"
fi
exit $rc
