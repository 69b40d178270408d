#!/bin/sh
# RPCSEC_GSS with Kerberos V5 (tests/nfsd/rpcsec-gss.c, then our client in
# tests/nfsd/rpcsec-gss-clnt.c) against a real MIT KDC: a temporary realm
# BRAID.TEST whose KDC listens on 127.0.0.1 and a free port, configured
# only through KRB5_CONFIG and KRB5_KDC_PROFILE in a temporary directory
# (nothing system-wide is read or changed).  Principals:
# nfs/localhost (the server's keytab), daemon (maps to the local user
# daemon, which every Debian system has, so no user is added) and nouser
# (no local user: nobody).  Needs krb5-kdc and krb5-admin-server
# (tools/install-deps); skips without them.
top_builddir=${top_builddir:-.}
bin=$top_builddir/tests/nfsd/rpcsec-gss
PATH=$PATH:/usr/sbin:/sbin
for t in krb5kdc kdb5_util kadmin.local python3; do
	command -v "$t" >/dev/null 2>&1 || {
		echo "SKIP: $t not installed (tools/install-deps installs krb5-kdc krb5-admin-server)"
		exit 77
	}
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/braid-gss.XXXXXX") || exit 99
kdcpid=
cleanup() {
	[ -n "$kdcpid" ] && kill "$kdcpid" 2>/dev/null && wait "$kdcpid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# a port free for both UDP and TCP on loopback
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
mkdir "$tmp/ccache" || exit 99 # a collection: one cache per client principal
KRB5_CONFIG=$tmp/krb5.conf
KRB5_KDC_PROFILE=$tmp/kdc.conf
export KRB5_CONFIG KRB5_KDC_PROFILE

q() { kadmin.local -r BRAID.TEST -q "$1" >>"$tmp/kadmin.log" 2>&1 || { cat "$tmp/kadmin.log"; exit 99; }; }
kdb5_util create -s -r BRAID.TEST -P braid-test-master >"$tmp/kdb.log" 2>&1 ||
	{ cat "$tmp/kdb.log"; exit 99; }
q "addprinc -randkey nfs/localhost"
q "addprinc -randkey daemon"
q "addprinc -randkey nouser"
q "ktadd -k $tmp/server.keytab nfs/localhost"
q "ktadd -k $tmp/client.keytab daemon nouser"

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

KRB5_KTNAME=FILE:$tmp/server.keytab KRB5_CLIENT_KTNAME=FILE:$tmp/client.keytab \
	KRB5CCNAME=DIR:$tmp/ccache "$bin" "$tmp/server.keytab"
rc=$?
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
