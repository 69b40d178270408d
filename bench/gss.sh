#!/bin/sh
# bench/gss's realm, then bench/gss in it: a temporary MIT KDC on
# 127.0.0.1 (tests/krb5-realm.sh, the tests' realm) with the principals
# nfs/localhost (braid-ds's keytab) and bench (the client's keytab).
# Without the MIT tools (krb5-kdc, krb5-admin-server: tools/install-deps)
# bench/gss runs without a realm and says so: its AUTH_SYS figures are
# measured, its Kerberos ones null.
#   usage: gss.sh PATH-OF-bench/gss [ARGS...]
bench=$1
shift
. "$(dirname "$0")/../tests/krb5-realm.sh"
why=$(krb5_realm_need) || exec "$bench" --no-krb5 "$why" "$@"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/braid-bench-gss-realm.XXXXXX") || exit 99
cleanup() {
	krb5_realm_stop
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

krb5_realm_start "$tmp" BRAID.TEST localhost || exit 99
krb5_addprinc nfs/localhost bench || exit 99
krb5_ktadd "$tmp/ds.keytab" nfs/localhost || exit 99
krb5_ktadd "$tmp/client.keytab" bench || exit 99

"$bench" --ds-keytab "$tmp/ds.keytab" --client-keytab "FILE:$tmp/client.keytab" \
	--principal bench@BRAID.TEST "$@"
