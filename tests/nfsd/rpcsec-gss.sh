#!/bin/sh
# RPCSEC_GSS with Kerberos V5 (tests/nfsd/rpcsec-gss.c, then our client in
# tests/nfsd/rpcsec-gss-clnt.c) against a real MIT KDC: a temporary realm
# BRAID.TEST (tests/krb5-realm.sh: its KDC on 127.0.0.1 and a free port,
# configured only through KRB5_CONFIG and KRB5_KDC_PROFILE in a temporary
# directory; nothing system-wide is read or changed).  Principals:
# nfs/localhost (the server's keytab), daemon (maps to the local user
# daemon, which every Debian system has, so no user is added) and nouser
# (no local user: nobody).  Needs krb5-kdc and krb5-admin-server
# (tools/install-deps); skips without them.
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-.}
bin=$top_builddir/tests/nfsd/rpcsec-gss
# shellcheck source=../krb5-realm.sh
. "$top_srcdir/tests/krb5-realm.sh"
why=$(krb5_realm_need) || {
	echo "SKIP: $why"
	exit 77
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/braid-gss.XXXXXX") || exit 99
cleanup() {
	krb5_realm_stop
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

mkdir "$tmp/ccache" || exit 99 # a collection: one cache per client principal
krb5_realm_start "$tmp" BRAID.TEST localhost k5msg || exit 99
krb5_addprinc nfs/localhost daemon nouser || exit 99
krb5_ktadd "$tmp/server.keytab" nfs/localhost || exit 99
krb5_ktadd "$tmp/client.keytab" daemon nouser || exit 99
# nfsd/k5msg.c against MIT: a service with keys of the four AES enctypes
aes="-e aes256-cts-hmac-sha1-96:normal,aes128-cts-hmac-sha1-96:normal"
aes="$aes,aes128-cts-hmac-sha256-128:normal,aes256-cts-hmac-sha384-192:normal"
krb5_addprinc "$aes nfs/k5msg" "$aes k5msg" || exit 99
krb5_ktadd "$tmp/server.keytab" "$aes" nfs/k5msg || exit 99
krb5_ktadd "$tmp/client.keytab" "$aes" k5msg || exit 99

KRB5_KTNAME=FILE:$tmp/server.keytab KRB5_CLIENT_KTNAME=FILE:$tmp/client.keytab \
	KRB5CCNAME=DIR:$tmp/ccache "$bin" "$tmp/server.keytab"
rc=$?
# RFC 4121 tokens made with OpenSSL (nfsd/k5msg.c) against MIT's
[ $rc -eq 0 ] && {
	KRB5_KTNAME=FILE:$tmp/server.keytab KRB5_CLIENT_KTNAME=FILE:$tmp/client.keytab \
		KRB5CCNAME=DIR:$tmp/ccache "$top_builddir/tests/nfsd/k5msg" --interop
	rc=$?
}
# our client (nfsd/clnt_gss.c) against our server, same realm
[ $rc -eq 0 ] && {
	KRB5_KTNAME=FILE:$tmp/server.keytab KRB5_CLIENT_KTNAME=FILE:$tmp/client.keytab \
		KRB5CCNAME=DIR:$tmp/ccache "$bin-clnt" "$tmp/server.keytab"
	rc=$?
}
if [ $rc -ne 0 ]; then
	echo "rpcsec-gss failed ($rc); KDC log:"
	tail -n 30 "$tmp/kdc.log"
fi
exit $rc
