#!/bin/sh
# braid-mds registers with rpcbind and serves MOUNT so the stock tools see
# it as they see knfsd: `rpcinfo -p` shows NFS 100003 v4 and MOUNT 100005 v3
# (and NLM 100021 v4 and NSM 100024 v1, unless another service holds them)
# on tcp at braid's port, `showmount -e` lists every export with its client
# specs, and a clean stop removes both mappings, but only while they are
# its own: a second braid-mds that took them over keeps them when the first
# stops.  Uses the rpcbind that runs,
# or starts one (root only) and stops it again.
set -u
builddir=${top_builddir:-.}
bin=$builddir/braid-mds
PATH=$PATH:/usr/sbin:/sbin

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; [ -f "${dir:-}/log" ] && sed 's/^/  braid-mds: /' "$dir/log"; exit 1; }

[ -x "$bin" ] || { echo "ERROR: $bin not built"; exit 99; }
for t in showmount rpcinfo timeout; do
	command -v $t >/dev/null 2>&1 ||
		skip "$t not installed (tools/install-deps: nfs-common, rpcbind)"
done

dir=$(mktemp -d "${TMPDIR:-/tmp}/braid-showmount-XXXXXX") || exit 99
mds_pid=
mds2_pid=
rpcb_pid=
cleanup() {
	[ -n "$mds_pid" ] && kill "$mds_pid" 2>/dev/null && wait "$mds_pid" 2>/dev/null
	[ -n "$mds2_pid" ] && kill "$mds2_pid" 2>/dev/null && wait "$mds2_pid" 2>/dev/null
	[ -n "$rpcb_pid" ] && kill "$rpcb_pid" 2>/dev/null && wait "$rpcb_pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

rpcmap() { timeout 10 rpcinfo -p 127.0.0.1 2>/dev/null; }

if ! rpcmap >/dev/null; then
	[ "$(id -u)" -eq 0 ] || skip "no rpcbind runs, and starting one needs root"
	command -v rpcbind >/dev/null 2>&1 ||
		skip "no rpcbind runs and none is installed (tools/install-deps: rpcbind)"
	rpcbind -f -w >"$dir/rpcbind.log" 2>&1 &
	rpcb_pid=$!
	i=0
	until rpcmap >/dev/null; do
		i=$((i + 1))
		kill -0 "$rpcb_pid" 2>/dev/null || { cat "$dir/rpcbind.log"; skip "rpcbind exited"; }
		[ $i -lt 50 ] || skip "rpcbind did not come up"
		sleep 0.1
	done
elif rpcmap | awk '$1 == 100003 || $1 == 100005 { found = 1 } END { exit !found }'; then
	# another server's mappings would be replaced, then removed at our stop
	skip "the running rpcbind maps NFS or MOUNT already (another NFS server); not touching it"
fi

# NLM and NSM: registered only when nobody else (the host's lockd, statd) holds them
nlm_free=yes
rpcmap | awk '$1 == 100021 || $1 == 100024 { found = 1 } END { exit !found }' && nlm_free=no

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/cluster.key"
chmod 600 "$dir/cluster.key"
cat >"$dir/exports" <<EOF
/pub 127.0.0.1(rw,insecure) 10.1.0.0/16(ro)
/other *(ro,sec=krb5:sys)
EOF
cat >"$dir/mds.conf" <<EOF
[mds]
store_dir = $dir/store
key_file = $dir/cluster.key
exports = $dir/exports
listen = 127.0.0.1:0
grace_time = 0
rpcbind = yes
EOF

"$bin" -c "$dir/mds.conf" --ready-fd 3 3>"$dir/ready" 2>"$dir/log" &
mds_pid=$!
i=0
until grep -q READY "$dir/ready" 2>/dev/null; do
	i=$((i + 1))
	kill -0 "$mds_pid" 2>/dev/null || { mds_pid=; fail "braid-mds exited"; }
	[ $i -lt 100 ] || fail "braid-mds did not start"
	sleep 0.1
done
port=$(awk '{ print $2 }' "$dir/ready")

rpcmap >"$dir/rpcinfo" || fail "rpcinfo -p failed"
for pv in "100003 4" "100005 3"; do
	awk -v pv="$pv" -v port="$port" '$1 " " $2 == pv && $3 == "tcp" && $4 == port { ok = 1 }
		END { exit !ok }' "$dir/rpcinfo" ||
		{ cat "$dir/rpcinfo"; fail "rpcinfo -p shows no $pv tcp on port $port"; }
done
if [ $nlm_free = yes ]; then
	for pv in "100021 4" "100024 1"; do
		awk -v pv="$pv" -v port="$port" '$1 " " $2 == pv && $3 == "tcp" && $4 == port { ok = 1 }
			END { exit !ok }' "$dir/rpcinfo" ||
			{ cat "$dir/rpcinfo"; fail "rpcinfo -p shows no $pv tcp on port $port"; }
	done
fi

timeout 20 showmount -e 127.0.0.1 >"$dir/showmount" 2>&1 ||
	{ cat "$dir/showmount"; fail "showmount -e failed"; }
grep -Eq '^/pub +127\.0\.0\.1,10\.1\.0\.0/16$' "$dir/showmount" &&
	grep -Eq '^/other +\*$' "$dir/showmount" ||
	{ cat "$dir/showmount"; fail "showmount -e does not list the exports"; }

# a second braid-mds (another store, another port) takes the mappings over
sed -e "s|^store_dir = .*|store_dir = $dir/store2|" "$dir/mds.conf" >"$dir/mds2.conf"
"$bin" -c "$dir/mds2.conf" --ready-fd 3 3>"$dir/ready2" 2>"$dir/log2" &
mds2_pid=$!
i=0
until grep -q READY "$dir/ready2" 2>/dev/null; do
	i=$((i + 1))
	kill -0 "$mds2_pid" 2>/dev/null || { sed 's/^/  braid-mds 2: /' "$dir/log2"; fail "the second braid-mds exited"; }
	[ $i -lt 100 ] || fail "the second braid-mds did not start"
	sleep 0.1
done
port2=$(awk '{ print $2 }' "$dir/ready2")
mapped() { # prog port: whether rpcinfo -p maps prog on tcp to port
	rpcmap | awk -v prog="$1" -v port="$2" '$1 == prog && $3 == "tcp" && $4 == port { ok = 1 }
		END { exit !ok }'
}
for prog in 100003 100005; do
	mapped $prog "$port2" || { rpcmap; fail "the second braid-mds did not register $prog"; }
done
# NLM and NSM stay the first one's: another service holds them for the second
if [ $nlm_free = yes ]; then
	for prog in 100021 100024; do
		mapped $prog "$port" || { rpcmap; fail "the second braid-mds took $prog over"; }
	done
	grep -q 'left to it' "$dir/log2" || fail "the second braid-mds did not say why it left NLM/NSM"
fi

# stopping the first removes nothing: the mappings are the second's now
kill "$mds_pid"
wait "$mds_pid"
st=$?
mds_pid=
[ $st -eq 0 ] || fail "braid-mds exited with $st on SIGTERM"
for prog in 100003 100005; do
	mapped $prog "$port2" || {
		rpcmap; sed 's/^/  braid-mds: /' "$dir/log"
		fail "stopping the first braid-mds removed the second's $prog mapping"
	}
done
grep -q 'not to us' "$dir/log" || fail "the first braid-mds did not say why it left the mappings"
if [ $nlm_free = yes ]; then
	for prog in 100021 100024; do
		! mapped $prog "$port" || { rpcmap; fail "the first braid-mds left its $prog mapping"; }
	done
fi

# a clean stop of the server they belong to unregisters
kill "$mds2_pid"
wait "$mds2_pid"
st=$?
mds2_pid=
[ $st -eq 0 ] || fail "the second braid-mds exited with $st on SIGTERM"
rpcmap >"$dir/rpcinfo" || fail "rpcinfo -p failed after the stop"
if awk -v p1="$port" -v p2="$port2" '($1 == 100003 || $1 == 100005 || $1 == 100021 || $1 == 100024) && ($4 == p1 || $4 == p2) { found = 1 }
	END { exit !found }' "$dir/rpcinfo"; then
	cat "$dir/rpcinfo"
	fail "braid-mds left its mappings in rpcbind"
fi
echo ok
