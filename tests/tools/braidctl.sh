#!/bin/sh
# braidctl(8) against a braid-mds process: 'status' prints the MDS and its
# data servers as a table, '--json status' and '--json ds list' parse as
# JSON (python3 -m json.tool) with the fields scripts use, the settings
# file or --mds/--key find the MDS, 'exports reload' re-reads the exports
# file, a key that is not the cluster's is refused with the reason, and an
# MDS that is not running gives the clear error and exit status 1; usage
# errors exit 2.
set -u
builddir=${top_builddir:-.}
mds=$builddir/braid-mds
ctl=$builddir/braidctl

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; [ -f "${dir:-}/log" ] && sed 's/^/  braid-mds: /' "$dir/log"; exit 1; }

[ -x "$mds" ] && [ -x "$ctl" ] || { echo "ERROR: braid-mds or braidctl not built"; exit 99; }
command -v python3 >/dev/null 2>&1 || skip "python3 not installed"

dir=$(mktemp -d "${TMPDIR:-/tmp}/braid-braidctl-XXXXXX") || exit 99
mds_pid=
cleanup() {
	[ -n "$mds_pid" ] && kill "$mds_pid" 2>/dev/null && wait "$mds_pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

newkey() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$1"; chmod 600 "$1"; }
newkey "$dir/cluster.key"
newkey "$dir/other.key"
echo "/pub 127.0.0.1(rw,insecure)" >"$dir/exports"
cat >"$dir/mds.conf" <<CONF
[mds]
store_dir = $dir/store
key_file = $dir/cluster.key
exports = $dir/exports
listen = 127.0.0.1:0
grace_time = 0
rpcbind = no
CONF

"$mds" -c "$dir/mds.conf" --ready-fd 3 3>"$dir/ready" 2>"$dir/log" &
mds_pid=$!
i=0
until grep -q READY "$dir/ready" 2>/dev/null; do
	i=$((i + 1))
	kill -0 "$mds_pid" 2>/dev/null || { mds_pid=; fail "braid-mds exited"; }
	[ $i -lt 100 ] || fail "braid-mds did not start"
	sleep 0.1
done
port=$(awk '{ print $2 }' "$dir/ready")
# the port braid-mds bound, as a settings file braidctl reads
sed "s/^listen = .*/listen = 127.0.0.1:$port/" "$dir/mds.conf" >"$dir/ctl.conf"

run() { # expected-status args...: output in $dir/out, errors in $dir/err
	want=$1
	shift
	"$ctl" "$@" >"$dir/out" 2>"$dir/err"
	got=$?
	[ "$got" = "$want" ] || {
		sed 's/^/  out: /' "$dir/out"
		sed 's/^/  err: /' "$dir/err"
		fail "braidctl $* exited $got, expected $want"
	}
}

# status as a table, found through the settings file
run 0 -c "$dir/ctl.conf" status
grep -q "^braid-mds .* at 127.0.0.1:$port" "$dir/out" || fail "status: no header line"
grep -q "exports .*1 in force" "$dir/out" || fail "status: exports count"
grep -q "data servers .*0 up of 0 known" "$dir/out" || fail "status: data server totals"

# the same through --mds and --key, as JSON that parses
run 0 --mds "127.0.0.1:$port" --key "$dir/cluster.key" --json status
python3 -m json.tool "$dir/out" >/dev/null || fail "--json status is not JSON"
python3 - "$dir/out" "$port" <<'PY' || fail "--json status: fields"
import json, sys
d = json.load(open(sys.argv[1]))
m = d["mds"]
assert m["exports"] == 1, m
assert m["data_servers_known"] == 0 and d["data_servers"] == [], d
assert any(a["address"] == "127.0.0.1:" + sys.argv[2] for a in m["listen"]), m["listen"]
assert m["in_grace"] is False and m["lease_s"] == 90, m
PY
run 0 -c "$dir/ctl.conf" --json ds list
python3 -c 'import json,sys; assert json.load(open(sys.argv[1])) == []' "$dir/out" ||
	fail "--json ds list: not an empty JSON array"
run 0 -c "$dir/ctl.conf" --json exports list
python3 - "$dir/out" <<'PY' || fail "--json exports list: fields"
import json, sys
d = json.load(open(sys.argv[1]))
assert [e["path"] for e in d["exports"]] == ["/pub"], d
assert d["exports"][0]["clients"][0]["client"] == "127.0.0.1", d
assert d["exports"][0]["clients"][0]["options"].startswith("rw,"), d
PY

# exports reload: a new export appears; a broken file is refused with its line
printf '/pub 127.0.0.1(rw,insecure)\n/more *(ro)\n' >"$dir/exports"
run 0 -c "$dir/ctl.conf" exports reload
grep -q "2 export(s) in force" "$dir/out" || fail "exports reload: $(cat "$dir/out")"
run 0 -c "$dir/ctl.conf" exports list
grep -q "^/more " "$dir/out" || fail "exports list after reload"
echo "/bad *(nosuchoption)" >>"$dir/exports"
run 1 -c "$dir/ctl.conf" exports reload
grep -q "exports:3:" "$dir/err" || fail "a broken exports file: $(cat "$dir/err")"

# data protection: nothing stale, lost or moving on an empty cluster
run 0 -c "$dir/ctl.conf" rebuild
grep -q "^stale copies  *0 files" "$dir/out" || fail "rebuild: $(cat "$dir/out")"
grep -q "^unrecoverable  *0 files" "$dir/out" || fail "rebuild: $(cat "$dir/out")"
run 0 -c "$dir/ctl.conf" --json rebuild
python3 - "$dir/out" <<'PY' || fail "--json rebuild: fields"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["lost_servers"] == 0 and d["stale_files"] == 0 and d["unrecoverable_files"] == [], d
PY
run 0 -c "$dir/ctl.conf" rebalance
grep -q "rebalance started" "$dir/out" || fail "rebalance: $(cat "$dir/out")"
run 1 -c "$dir/ctl.conf" ds lost 7
grep -q "no data server 7" "$dir/err" || fail "ds lost 7: $(cat "$dir/err")"

# a key that is not the cluster's: refused, and told why
run 1 --mds "127.0.0.1:$port" --key "$dir/other.key" status
grep -q "is not its cluster key" "$dir/err" || fail "wrong key: $(cat "$dir/err")"

# usage errors
run 2 -c "$dir/ctl.conf" frobnicate
run 2 -c "$dir/ctl.conf" ds drain notanumber
run 2 -c "$dir/ctl.conf" ds remove --force

# the MDS stopped: the clear error, exit status 1
kill "$mds_pid"
wait "$mds_pid" 2>/dev/null
mds_pid=
run 1 -c "$dir/ctl.conf" status
grep -q "^braidctl: cannot reach braid-mds at 127.0.0.1:$port: Connection refused (is braid-mds running? see braid-mds(8))" \
	"$dir/err" || fail "unreachable MDS: $(cat "$dir/err")"
echo ok
