# krb5-realm.sh -- sourced by tests (sh or bash): a temporary MIT Kerberos
# realm whose KDC listens on 127.0.0.1 and a free port (TCP, and UDP on the
# same port), configured only through KRB5_CONFIG and KRB5_KDC_PROFILE in a
# directory of the caller's.  Nothing system-wide is read or changed: the
# database, the KDC's log and the acceptors' replay caches (KRB5RCACHEDIR)
# are in that directory too.  Used by tests/nfsd/rpcsec-gss.sh and by the
# Linux-client tier's krb5 check (tests/linux-client/run.sh), whose guest
# reaches the KDC at 10.0.2.2 and the same port (krb5_conf).
#
#   krb5_realm_need
#       0 when the MIT tools are installed (krb5kdc, kdb5_util, kadmin.local
#       from krb5-kdc and krb5-admin-server, python3); else prints which is
#       missing and returns 1.
#   krb5_realm_start DIR [REALM [HOST...]]
#       create REALM (default BRAID.TEST) in DIR (which must exist) and
#       start its KDC; DIR/krb5.conf names it at 127.0.0.1:port, with each
#       HOST in REALM ([domain_realm]).  Sets KRB5_REALM, KRB5_KDC_PORT and
#       KRB5_KDC_PID; exports KRB5_CONFIG, KRB5_KDC_PROFILE and KRB5RCACHEDIR.
#   krb5_addprinc NAME...
#       principals with random keys (addprinc -randkey).
#   krb5_ktadd KEYTAB NAME...
#       their keys into the keytab file KEYTAB (ktadd -k; new keys, so a
#       principal's keys go into one keytab only).
#   krb5_conf KDC [HOST...]
#       prints a krb5.conf for a client that reaches the KDC at KDC
#       (ADDRESS:PORT), each HOST in the realm: no DNS, no reverse lookups,
#       TCP only.
#   krb5_realm_stop
#       stop the KDC; the caller's EXIT trap calls it (DIR is the caller's
#       to remove).
#   krb5_realm_test NAME BIN CLIENT-PRINCIPAL...
#       the whole of a cluster test's script (tests/mds/krb5-*.sh): skip
#       (77) without the MIT tools, fail (99) instead with CI set; a realm
#       in a temporary directory with nfs/localhost's keys in
#       DIR/server.keytab and each CLIENT-PRINCIPAL's in DIR/client.keytab;
#       then BIN DIR/server.keytab with KRB5_KTNAME, KRB5_CLIENT_KTNAME and
#       KRB5CCNAME (a DIR ccache) set, the KDC's log tail if it fails; exits
#       with BIN's status.
# Each function prints the reason (and the tool's log) and returns non-zero
# when it fails.

krb5_realm_need() {
	case :$PATH: in *:/usr/sbin:*) ;; *) PATH=$PATH:/usr/sbin:/sbin;; esac
	for _k5t in krb5kdc kdb5_util kadmin.local python3; do
		command -v "$_k5t" >/dev/null 2>&1 || {
			echo "$_k5t not installed (tools/install-deps installs krb5-kdc krb5-admin-server)"
			return 1
		}
	done
	return 0
}

# krb5_conf KDC [HOST...]
krb5_conf() {
	_k5kdc=$1
	shift
	cat <<CONF
[libdefaults]
	default_realm = $KRB5_REALM
	dns_lookup_kdc = false
	dns_lookup_realm = false
	dns_canonicalize_hostname = false
	rdns = false
	udp_preference_limit = 1
[realms]
	$KRB5_REALM = {
		kdc = $_k5kdc
	}
[domain_realm]
CONF
	for _k5h in "$@"; do
		printf '\t%s = %s\n' "$_k5h" "$KRB5_REALM"
	done
}

# _krb5_admin QUERY: kadmin.local on the realm, its output in DIR/kadmin.log
_krb5_admin() {
	kadmin.local -r "$KRB5_REALM" -q "$1" >>"$KRB5_DIR/kadmin.log" 2>&1 || {
		echo "kadmin.local -q '$1' failed:"
		cat "$KRB5_DIR/kadmin.log"
		return 1
	}
}

krb5_addprinc() {
	for _k5p in "$@"; do
		_krb5_admin "addprinc -randkey $_k5p" || return 1
	done
}

krb5_ktadd() {
	_k5kt=$1
	shift
	_krb5_admin "ktadd -k $_k5kt $*"
}

krb5_realm_start() {
	KRB5_DIR=$1
	KRB5_REALM=${2:-BRAID.TEST}
	if [ $# -ge 2 ]; then shift 2; else shift $#; fi
	KRB5_KDC_PID=
	case :$PATH: in *:/usr/sbin:*) ;; *) PATH=$PATH:/usr/sbin:/sbin;; esac
	# a port free for both UDP and TCP on loopback
	KRB5_KDC_PORT=$(python3 -c '
import socket
for _ in range(50):
    t = socket.socket(); t.bind(("127.0.0.1", 0)); p = t.getsockname()[1]
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        u.bind(("127.0.0.1", p)); print(p); break
    except OSError: pass
    finally: u.close(); t.close()
')
	[ -n "$KRB5_KDC_PORT" ] || {
		echo "krb5_realm_start: no free port"
		return 1
	}
	krb5_conf "127.0.0.1:$KRB5_KDC_PORT" "$@" >"$KRB5_DIR/krb5.conf" || return 1
	cat >"$KRB5_DIR/kdc.conf" <<CONF || return 1
[kdcdefaults]
	kdc_listen = 127.0.0.1:$KRB5_KDC_PORT
	kdc_tcp_listen = 127.0.0.1:$KRB5_KDC_PORT
[realms]
	$KRB5_REALM = {
		database_name = $KRB5_DIR/principal
		key_stash_file = $KRB5_DIR/stash
		acl_file = $KRB5_DIR/kadm5.acl
	}
[logging]
	kdc = FILE:$KRB5_DIR/kdc.log
CONF
	: >"$KRB5_DIR/kadm5.acl"
	mkdir -p "$KRB5_DIR/rcache" || return 1
	KRB5_CONFIG=$KRB5_DIR/krb5.conf
	KRB5_KDC_PROFILE=$KRB5_DIR/kdc.conf
	KRB5RCACHEDIR=$KRB5_DIR/rcache
	export KRB5_CONFIG KRB5_KDC_PROFILE KRB5RCACHEDIR
	kdb5_util create -s -r "$KRB5_REALM" -P braid-test-master >"$KRB5_DIR/kdb.log" 2>&1 || {
		echo "kdb5_util create failed:"
		cat "$KRB5_DIR/kdb.log"
		return 1
	}
	krb5kdc -n -r "$KRB5_REALM" >"$KRB5_DIR/kdc.out" 2>&1 &
	KRB5_KDC_PID=$!
	_k5i=0
	until grep -q "commencing operation" "$KRB5_DIR/kdc.log" 2>/dev/null; do
		_k5i=$((_k5i + 1))
		if [ $_k5i -gt 100 ] || ! kill -0 "$KRB5_KDC_PID" 2>/dev/null; then
			echo "krb5kdc did not start:"
			cat "$KRB5_DIR/kdc.out" "$KRB5_DIR/kdc.log" 2>/dev/null
			krb5_realm_stop
			return 1
		fi
		sleep 0.1
	done
	return 0
}

krb5_realm_stop() {
	if [ -n "${KRB5_KDC_PID:-}" ]; then
		kill "$KRB5_KDC_PID" 2>/dev/null && wait "$KRB5_KDC_PID" 2>/dev/null
		KRB5_KDC_PID=
	fi
	return 0
}

krb5_realm_test() {
	_kt_name=$1 _kt_bin=$2
	shift 2
	if ! _kt_why=$(krb5_realm_need); then
		if [ -n "${CI:-}" ]; then
			echo "FAIL: $_kt_why (CI must run this test)"
			exit 99
		fi
		echo "SKIP: $_kt_why"
		exit 77
	fi
	_kt_tmp=$(mktemp -d "${TMPDIR:-/tmp}/braid-$_kt_name.XXXXXX") || exit 99
	trap 'krb5_realm_stop; rm -rf "$_kt_tmp"' EXIT
	trap 'exit 1' HUP INT TERM
	krb5_realm_start "$_kt_tmp" BRAID.TEST localhost || exit 99
	krb5_addprinc nfs/localhost "$@" || exit 99
	krb5_ktadd "$_kt_tmp/server.keytab" nfs/localhost || exit 99
	krb5_ktadd "$_kt_tmp/client.keytab" "$@" || exit 99
	mkdir "$_kt_tmp/ccache" || exit 99
	KRB5_KTNAME=FILE:$_kt_tmp/server.keytab KRB5_CLIENT_KTNAME=FILE:$_kt_tmp/client.keytab \
		KRB5CCNAME=DIR:$_kt_tmp/ccache "$_kt_bin" "$_kt_tmp/server.keytab"
	_kt_rc=$?
	if [ $_kt_rc -ne 0 ]; then
		echo "$_kt_name failed ($_kt_rc); KDC log:"
		tail -n 30 "$_kt_tmp/kdc.log"
	fi
	exit $_kt_rc
}
