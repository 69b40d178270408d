#!/bin/sh
# tools/braid-cluster and braid-demo, as the README's main job uses them: a
# cluster of 1 braid-mds and 4 braid-ds on loopback under one folder starts,
# the demo writes a dataset and a large file through the pNFS client and
# reads every byte back, naming each data server it used as host:port,
# status reports it, stop stops every daemon, and start again reuses the
# stores (the demo's files are still there and the data servers keep their
# ids).  'braidctl ds list' counts on each data server the objects its
# store holds on disk, before and after the restart.  Every daemon's
# metrics can be scraped, and braidctl top shows rates and latencies per
# operation, client and data server while the demo runs.
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}"
b=$(cd "$top_builddir" && pwd)
for f in braid-mds braid-ds braidctl tools/braid-demo; do
	[ -x "$b/$f" ] || { echo "SKIP: $b/$f not built"; exit 77; }
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/braid-cluster-test.XXXXXX")
# a free base port with 4 free ports after it
port=$(python3 -c 'import socket
for p in range(31000, 60000, 7):
    ok = True
    for q in list(range(p, p + 5)) + list(range(p + 1000, p + 1005)):
        s = socket.socket()
        try: s.bind(("127.0.0.1", q))
        except OSError: ok = False
        s.close()
    if ok: print(p); break')
cluster() { BRAID_BUILD=$b sh "$top_srcdir/tools/braid-cluster" "$@" --dir "$dir"; }
# Each data server's objects in 'braidctl --json ds list' are the .meta
# files (one per object) in its store, within 3 heartbeats (5 s each).
check_objects() {
	i=0
	until "$b/braidctl" -c "$dir/etc/mds.conf" --json ds list >"$dir/ds.json" 2>"$dir/ds.err" &&
		python3 - "$dir" <<'PY'
import glob, json, sys
d = sys.argv[1]
total = 0
for ds in json.load(open(d + "/ds.json")):
    want = len(glob.glob("%s/%s/objects/*/*.meta" % (d, ds["hostname"])))
    if not ds["up"] or ds["objects"] != want:
        print("%s: braidctl says %s objects (up %s), its store holds %d"
              % (ds["hostname"], ds["objects"], ds["up"], want))
        sys.exit(1)
    total += want
# the demo's 6 files and its large one each have an object somewhere
if total < 7:
    print("only %d objects in all" % total)
    sys.exit(1)
print("braidctl ds list: %d objects, as the stores hold" % total)
PY
	do
		i=$((i + 1))
		[ $i -lt 30 ] || { cat "$dir/ds.err"; echo "FAIL: braidctl ds list objects"; exit 1; }
		sleep 0.5
	done
}
cleanup() { cluster stop >/dev/null 2>&1 || true; rm -rf "$dir"; }
trap cleanup EXIT

cluster start --port "$port"
cluster status
# the data servers register asynchronously: wait until a demo write lands
out=$dir/demo.out
i=0
until "$b/tools/braid-demo" --mds "127.0.0.1:$port" --files 6 --file-size 3M --big-size 40M >"$out" 2>"$dir/demo.err"; do
	i=$((i + 1))
	[ $i -lt 10 ] || { cat "$out" "$dir/demo.err"; echo "FAIL: demo"; exit 1; }
	sleep 1
done
cat "$out"
grep -q "read and checked it" "$out"
grep -q "pNFS flexfiles" "$out" || { echo "FAIL: the demo got no layouts"; exit 1; }
[ "$(grep -c '^  data server' "$out")" -ge 2 ] || { echo "FAIL: data went to fewer than 2 data servers"; exit 1; }
# named host:port, the port one of the cluster's data servers'
grep '^  data server' "$out" | while read -r _ _ hp _; do
	p=${hp#127.0.0.1:}
	case $hp in 127.0.0.1:*) ;; *) echo "FAIL: data server named $hp, not host:port"; exit 1 ;; esac
	[ "$p" -gt "$port" ] && [ "$p" -le $((port + 4)) ] || { echo "FAIL: data server port $p"; exit 1; }
done || exit 1
check_objects

# every daemon serves Prometheus text 1000 ports above its own
for q in 0 1 4; do
	python3 - "$((port + 1000 + q))" <<'PY' || { echo "FAIL: metrics scrape of port $((port + 1000 + q))"; exit 1; }
import sys, urllib.request
body = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=10).read().decode()
assert any(l.startswith("braid_") for l in body.splitlines()), body[:500]
PY
done

# braidctl top while the demo runs again: per operation, client and data
# server, rates and latencies, as JSON (one object a second) and as
# tables.  Demos run one after another until both tops are done: a demo's
# client lives well under a second on a quiet box, so a fixed number of
# them could all fall between two samples; data servers' rates come with
# their heartbeats (every 5 s): some second shows each.
( k=0
while [ -d "$dir" ] && [ ! -e "$dir/top.done" ] && [ $k -lt 100 ]; do
	"$b/tools/braid-demo" --mds "127.0.0.1:$port" --files 6 --file-size 3M --big-size 40M >/dev/null 2>&1
	k=$((k + 1))
done ) &
demo_pid=$!
"$b/braidctl" -c "$dir/etc/mds.conf" --json top --interval 1 --count 7 >"$dir/top.json" 2>"$dir/top.err" ||
	{ touch "$dir/top.done"; cat "$dir/top.err"; echo "FAIL: braidctl --json top"; exit 1; }
"$b/braidctl" -c "$dir/etc/mds.conf" top --interval 1 --count 1 >"$dir/top.txt" 2>>"$dir/top.err" ||
	{ touch "$dir/top.done"; cat "$dir/top.err"; echo "FAIL: braidctl top"; exit 1; }
touch "$dir/top.done"
wait "$demo_pid" || true
python3 - "$dir/top.json" <<'PY' || { cat "$dir/top.json"; echo "FAIL: braidctl --json top"; exit 1; }
import json, sys
text, dec, samples, i = open(sys.argv[1]).read(), json.JSONDecoder(), [], 0
while text[i:].strip():
    while text[i].isspace(): i += 1
    t, i = dec.raw_decode(text, i)
    samples.append(t)
assert len(samples) == 7, len(samples)
busy = [o for t in samples for o in t["operations"] if o["ops_per_s"] > 0]
assert any(o["name"].startswith("NFSv4.") and o["mean_ms"] > 0 for o in busy), busy
cl = [c for t in samples for c in t["clients"] if c["ops_per_s"] > 0 and c["mean_ms"] > 0]
assert cl and all(c["name"] for c in cl), [t["clients"] for t in samples]
assert all(len(t["data_servers"]) == 4 for t in samples), samples[-1]["data_servers"]
assert any(d["write_MBps"] > 0 and d["writes_per_s"] > 0 and d["write_mean_ms"] > 0
           for t in samples for d in t["data_servers"]), [t["data_servers"] for t in samples]
top = max(busy, key=lambda o: o["ops_per_s"])
print("braidctl top: up to %.0f operations/s, the most %s (%.0f/s, %.3f ms); client %s"
      % (max(t["ops_per_s"] for t in samples), top["name"], top["ops_per_s"], top["mean_ms"],
         cl[0]["name"]))
PY
cat "$dir/top.txt"
grep -Eq '^OPERATION +OPS/S +MEAN MS +ERR/S +MB/S$' "$dir/top.txt" &&
	grep -Eq '^CLIENT +NAME +OPS/S +MEAN MS +ERR/S +READ MB/S +WRITE MB/S$' "$dir/top.txt" &&
	grep -Eq '^DS +HOST +READS/S +READ MS +READ MB/S +WRITES/S +WRITE MS +WRITE MB/S$' "$dir/top.txt" &&
	[ "$(grep -Ec '^[1-4] ' "$dir/top.txt")" -eq 4 ] ||
	{ echo "FAIL: braidctl top's columns"; exit 1; }

cluster stop
if cluster status; then echo "FAIL: status says running after stop"; exit 1; fi
for p in "$dir"/run/*.pid; do [ -e "$p" ] && { echo "FAIL: $p left"; exit 1; }; done

ids_before=$(cat "$dir/mds/data-servers" 2>/dev/null | sort | md5sum)
cluster start --port "$port"
cluster status
ids_after=$(cat "$dir/mds/data-servers" 2>/dev/null | sort | md5sum)
[ "$ids_before" = "$ids_after" ] || { echo "FAIL: data-server ids changed across a restart"; exit 1; }
# the MDS starts knowing no counts: each data server's, counted at its start
check_objects
i=0
until "$b/tools/braid-demo" --mds "127.0.0.1:$port" --files 6 --file-size 3M --big-size 40M >"$out" 2>"$dir/demo.err"; do
	i=$((i + 1))
	[ $i -lt 10 ] || { cat "$out" "$dir/demo.err"; echo "FAIL: demo after restart"; exit 1; }
	sleep 1
done
check_objects
echo "braid-cluster: ok"
