#!/bin/sh
# bench/gss's realm, then bench/gss in it: a temporary MIT KDC on
# 127.0.0.1 and a free port (as tests/nfsd/rpcsec-gss.sh makes one),
# configured only through KRB5_CONFIG and KRB5_KDC_PROFILE in a temporary
# directory, with the principals nfs/localhost (braid-ds's keytab) and
# bench (the client's keytab).  Without the MIT tools (krb5-kdc,
# krb5-admin-server: tools/install-deps) bench/gss runs without a realm
# and says so: its AUTH_SYS figures are measured, its Kerberos ones null.
#   usage: gss.sh PATH-OF-bench/gss [ARGS...]
bench=$1
shift
PATH=$PATH:/usr/sbin:/sbin
for t in krb5kdc kdb5_util kadmin.local python3; do
	command -v "$t" >/dev/null 2>&1 || exec "$bench" --no-krb5 "$t not installed (tools/install-deps installs krb5-kdc krb5-admin-server)" "$@"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/braid-bench-gss-realm.XXXXXX") || exit 99
kdcpid=
cleanup() {
	[ -n "$kdcpid" ] && kill "$kdcpid" 2>/dev/null && wait "$kdcpid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

port=$(python3 -c '
import socket
for _ in range(50):
    t = socket.socket(); t.bind(("127.0.0.1", 0)); p = t.getsockname()[1]
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        u.bind(("127.0.0.1", p)); print(p); break
    except OSError: pass
    finally: u.close(); t.close()
') || exit 99

cat >"$tmp/krb5.conf" <<CONF || exit 99
[libdefaults]
	default_realm = BRAID.TEST
	dns_lookup_kdc = false
	dns_lookup_realm = false
	dns_canonicalize_hostname = false
	rdns = false
	udp_preference_limit = 1
[realms]
	BRAID.TEST = {
		kdc = 127.0.0.1:$port
	}
[domain_realm]
	localhost = BRAID.TEST
CONF
cat >"$tmp/kdc.conf" <<CONF || exit 99
[kdcdefaults]
	kdc_listen = 127.0.0.1:$port
	kdc_tcp_listen = 127.0.0.1:$port
[realms]
	BRAID.TEST = {
		database_name = $tmp/principal
		key_stash_file = $tmp/stash
		acl_file = $tmp/kadm5.acl
	}
[logging]
	kdc = FILE:$tmp/kdc.log
CONF
: >"$tmp/kadm5.acl"
mkdir "$tmp/rcache" || exit 99
KRB5_CONFIG=$tmp/krb5.conf
KRB5_KDC_PROFILE=$tmp/kdc.conf
KRB5RCACHEDIR=$tmp/rcache
export KRB5_CONFIG KRB5_KDC_PROFILE KRB5RCACHEDIR

q() { kadmin.local -r BRAID.TEST -q "$1" >>"$tmp/kadmin.log" 2>&1 || { cat "$tmp/kadmin.log"; exit 99; }; }
kdb5_util create -s -r BRAID.TEST -P braid-bench-master >"$tmp/kdb.log" 2>&1 ||
	{ cat "$tmp/kdb.log"; exit 99; }
q "addprinc -randkey nfs/localhost"
q "addprinc -randkey bench"
q "ktadd -k $tmp/ds.keytab nfs/localhost"
q "ktadd -k $tmp/client.keytab bench"

krb5kdc -n -r BRAID.TEST >"$tmp/kdc.out" 2>&1 &
kdcpid=$!
i=0
until grep -q "commencing operation" "$tmp/kdc.log" 2>/dev/null; do
	i=$((i + 1))
	if [ $i -gt 100 ] || ! kill -0 "$kdcpid" 2>/dev/null; then
		echo "krb5kdc did not start:"
		cat "$tmp/kdc.out" "$tmp/kdc.log" 2>/dev/null
		exit 99
	fi
	sleep 0.1
done

"$bench" --ds-keytab "$tmp/ds.keytab" --client-keytab "FILE:$tmp/client.keytab" \
	--principal bench@BRAID.TEST "$@"
