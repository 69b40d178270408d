#!/bin/bash
# bench/kclient -- the stock Debian Linux kernel NFS client (in a VM:
# tests/linux-client/clientvm) against braid and against NFS-Ganesha in
# the same run, phase by phase, with ratios (issue 20).
#
# On this host's loopback: braid-mds (its defaults: data_io = proxy, and
# small_file_threshold = 1M, so the small-file phase's files are written
# through the MDS: no LAYOUTGET or LAYOUTCOMMIT for them) with
# 2 braid-ds (tests/linux-client/cluster.sh's start_braid), and Debian's
# ganesha.nfsd (FSAL VFS, NFSv4.1/4.2 only, no grace period; configured
# here as bench/mds configures it), their stores and Ganesha's export all
# under one directory (--store, default $TMPDIR or /tmp: the output says
# which file system that is).  One guest boot mounts both, vers=4.1, at
# /mnt/braid and /mnt/ganesha, and runs bench/kclient-guest.sh: ROUNDS
# rounds of these phases, each on one server and then the other, the
# order alternating round by round, timed inside the guest:
#   write       dd of a --mib MiB file, bs=1M conv=fsync       MB/s
#   read        the same file after drop_caches, bs=1M          MB/s
#   create      --files empty files (: > f$i) in one directory   files/s
#   ls          ls -l of that directory after drop_caches        entries/s
#   stat        stat of every file by name, after drop_caches   files/s
#   smallwrite  cp of --small files of --small-kib KiB each      files/s
#   smallread   cat of those by name, after drop_caches          files/s
#   remove      rm -rf of the creates' directory                 files/s
# Every round is printed; the summary takes each side's median over the
# rounds and their ratio braid/Ganesha (higher is better for braid:
# rates, not times).  min_phase_vs_ganesha is the lowest of them.  A
# second table, from the guest's /proc/self/mountstats, gives the NFS
# operations each server's mount sent per phase (summed over the rounds)
# with their mean round trip: where a phase loses, this says whether it is
# more calls or slower ones.  For braid's flexfiles layouts the kernel
# counts the READs, WRITEs and COMMITs sent to data servers there too.
#
# Durability differs: braid-mds makes each create durable before it
# replies; Ganesha's VFS creates are not synced.  Caching differs too:
# braid-mds grants write delegations (delegations = on, its default), so
# the guest's close of a small file starts its write-back without waiting
# for it (the phase that follows begins with sync, outside the timing);
# this Ganesha (Debian's, as configured here) grants none, so each close
# waits for its WRITE.
#
#   bench/kclient.sh [--backend uml|qemu] [--rounds R] [--mib N] [--files N]
#                    [--small N] [--small-kib K] [--store DIR] [--quick]
# UML by default (faster here); defaults: 5 rounds, 256 MiB, 2000 files,
# 500 small files of 64 KiB (about 6 min under UML); --quick: 2 rounds
# (one with each server first), 32 MiB, 300 files, 100 small files (about
# a minute).  Exit 0, 77 with a
# reason where no guest can be booted or Ganesha cannot run, 99 on
# failure.  The last line is JSON: <phase>_vs_ganesha for each phase,
# min_phase_vs_ganesha (and min_phase), per-phase medians, every round's
# numbers (raw) and the setup.
set -u
PROG=bench/kclient
here=$(cd "$(dirname "$0")/../tests/linux-client" && pwd)
bench=$(cd "$(dirname "$0")" && pwd)
top_builddir=$(cd "${top_builddir:-.}" && pwd)
BACKEND=uml ROUNDS=5 MIB=256 NFILES=2000 NSMALL=500 SMALL_KIB=64 STORE=${TMPDIR:-/tmp}
KEEP=${KEEP:-0}
usage() {
	echo "usage: $PROG [--backend uml|qemu] [--rounds R] [--mib N] [--files N] [--small N]" \
		"[--small-kib K] [--store DIR] [--quick]" >&2
	exit 2
}
while [[ $# -gt 0 ]]; do
	case $1 in
	--backend) BACKEND=$2; shift 2;;
	--rounds) ROUNDS=$2; shift 2;;
	--mib) MIB=$2; shift 2;;
	--files) NFILES=$2; shift 2;;
	--small) NSMALL=$2; shift 2;;
	--small-kib) SMALL_KIB=$2; shift 2;;
	--store) STORE=$2; shift 2;;
	--quick) ROUNDS=2 MIB=32 NFILES=300 NSMALL=100; shift;;
	*) usage;;
	esac
done
[[ $BACKEND = uml || $BACKEND = qemu ]] || usage
for v in "$ROUNDS" "$MIB" "$NFILES" "$NSMALL" "$SMALL_KIB"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || usage
done
skip() { echo "$PROG: SKIP: $*" >&2; exit 77; }
hard() { echo "$PROG: ERROR: $*" >&2; exit 99; }

MDS_BIN=${BRAID_MDS:-$top_builddir/braid-mds} DS_BIN=${BRAID_DS:-$top_builddir/braid-ds}
[[ -x $MDS_BIN ]] || skip "braid-mds not built ($MDS_BIN; set top_builddir or BRAID_MDS)"
[[ -x $DS_BIN ]] || skip "braid-ds not built ($DS_BIN; set top_builddir or BRAID_DS)"
command -v python3 > /dev/null || skip "python3 not installed (it writes the report)"
GANESHA=$(PATH=$PATH:/usr/sbin:/sbin command -v ganesha.nfsd) ||
	skip "ganesha.nfsd not installed (nfs-ganesha nfs-ganesha-vfs: tools/install-deps)"
# FSAL_VFS opens files by handle: CAP_DAC_READ_SEARCH
[[ $(id -u) = 0 ]] || skip "ganesha.nfsd (FSAL VFS) must run as root"
[[ -d $STORE ]] || hard "--store $STORE is not a directory"

T=$(mktemp -d "$STORE/braid-bench-kclient.XXXXXX") || hard "mktemp in $STORE"
# shellcheck source=../tests/linux-client/cluster.sh
. "$here/cluster.sh"
trap cluster_cleanup EXIT
trap 'exit 99' INT TERM
vm_prepare "$BACKEND" novmtool
cp "$bench/kclient-guest.sh" "$T/files/" || hard "cp kclient-guest.sh"
FSTYPE=$(df --output=fstype "$T" 2> /dev/null | tail -1)
FSDEV=$(df --output=source "$T" 2> /dev/null | tail -1)
echo "$PROG: backend=$BACKEND rounds=$ROUNDS mib=$MIB files=$NFILES small=${NSMALL}x${SMALL_KIB}KiB" \
	"store=$T ($FSTYPE on $FSDEV)" >&2

vm_lock
# ------------------------------------------------------------------ braid
# shellcheck disable=SC2034 # start_braid reads them
BRAID_DS_NAME=kclient BRAID_METRICS=yes BRAID_NDS=2
start_braid
# every data server registered with the MDS (its braid_ds_id metric)
scrape() {
	python3 -c 'import sys, urllib.request
print(urllib.request.urlopen("http://%s/metrics" % sys.argv[1], timeout=10).read().decode())' "$1"
}
ds_id() { scrape "$1" 2> /dev/null | awk '$1 == "braid_ds_id" { v = $2 } END { printf "%d\n", v + 0 }'; }
for _ in $(seq 100); do
	n=0
	for ((i = 1; i <= BRAID_NDS; i++)); do [[ $(ds_id "${DS_METRICS[$i]}") != 0 ]] && n=$((n + 1)); done
	[[ $n = "$BRAID_NDS" ]] && break
	sleep 0.1
done
[[ $n = "$BRAID_NDS" ]] || { show_logs; hard "only $n of $BRAID_NDS data servers registered"; }

# ------------------------------------------------------------------ Ganesha
# As bench/mds_servers.c configures it, NFSv4 only (which needs no
# rpcbind: it logs that it cannot register and serves; dbus is optional
# the same way).
G=$T/ganesha
mkdir -p "$G/export" "$G/recov" || hard "mkdir $G"
GPORT=$(free_port) || hard "no free port"
cat > "$G/ganesha.conf" << EOF
# Written by bench/kclient.
NFS_CORE_PARAM {
	Protocols = 4;
	NFS_Port = $GPORT;
	Bind_addr = 127.0.0.1;
	Enable_NLM = false;
	Enable_RQUOTA = false;
	Enable_UDP = false;
}
NFSv4 {
	Graceless = true;
	Only_Numeric_Owners = true;
	Minor_Versions = 1, 2;
	RecoveryBackend = fs;
	RecoveryRoot = "$G/recov";
}
NFS_KRB5 {
	Active_krb5 = false;
}
EXPORT {
	Export_Id = 1;
	Path = "$G/export";
	Pseudo = "/";
	Protocols = 4;
	Transports = TCP;
	Access_Type = RW;
	Squash = No_Root_Squash;
	SecType = sys;
	FSAL {
		Name = VFS;
	}
}
EOF
LOGS+=("$G/ganesha.log")
start ganesha.nfsd "$G/ganesha.out" "$GANESHA" -F -L "$G/ganesha.log" -f "$G/ganesha.conf" \
	-p "$G/ganesha.pid" -N NIV_EVENT
GPID=${PIDS[-1]}
for _ in $(seq 300); do
	listening "$GPORT" && break
	alive "$GPID" || break
	sleep 0.1
done
listening "$GPORT" || { show_logs; cat "$G/ganesha.out" >&2; hard "ganesha.nfsd did not start listening on $GPORT"; }
echo "$PROG: ganesha.nfsd (pid $GPID) on 127.0.0.1:$GPORT, exporting $G/export" >&2

# ------------------------------------------------------------------ guest
# the guest's page cache holds the large file and the small files' sources
MEM=$((MIB + NSMALL * SMALL_KIB / 1024 + 512))
((MEM < 1024)) && MEM=1024
TO=$((600 + ROUNDS * (MIB * 2 + NFILES / 4 + NSMALL)))
T0=$SECONDS
"$here/clientvm" --backend "$BACKEND" --no-mount --mem "$MEM" --timeout "$TO" --files "$T/files" \
	--env "BRAID_ADDR=10.0.2.2:$PORT" --env "GANESHA_ADDR=10.0.2.2:$GPORT" --env "MIB=$MIB" \
	--env "NFILES=$NFILES" --env "NSMALL=$NSMALL" --env "SMALL_KIB=$SMALL_KIB" --env "ROUNDS=$ROUNDS" \
	"127.0.0.1:$PORT" "$T/files/kclient-guest.sh" 7>&- > "$T/vm.log" 2>&1
rc=$?
[[ $rc = 0 ]] || { tail -40 "$T/vm.log" >&2; show_logs; hard "the guest failed (clientvm exit $rc)"; }
echo "$PROG: the guest ran $((SECONDS - T0)) s" >&2
died=$(dead_servers)
[[ -z $died ]] || { show_logs; hard "died during the run:$died"; }
CLOCK=$(awk '$1 == "@@CLOCK" { print $2; exit }' "$T/vm.log")
KERNEL=$(sed -n 's/^clientvm: backend=.* kernel=\([^ ]*\).*/\1/p' "$T/vm.log" | head -1)
grep '^@@MOUNT ' "$T/vm.log" | sed 's/^@@MOUNT /mount: /' >&2
stop_servers bench ""

grep -E '^@@(KC|OPS) ' "$T/vm.log" | python3 -c '
import json, statistics, sys
setup = dict(zip(["backend", "kernel", "rounds", "mib", "files", "small_files", "small_kib",
                  "store", "store_fstype", "store_dev", "guest_clock"], sys.argv[1:]))
for k in ("rounds", "mib", "files", "small_files", "small_kib"):
    setup[k] = int(setup[k])
setup["braid"] = ("braid-mds (data_io = proxy, small_file_threshold = 1M, delegations = on: "
                  "read and write) + 2 braid-ds, loopback")
setup["ganesha"] = "ganesha.nfsd FSAL VFS, NFSv4 only, loopback"
setup["mount"] = "vers=4.1"
PHASES = [("write", "MB/s"), ("read", "MB/s"), ("create", "files/s"), ("ls", "entries/s"),
          ("stat", "files/s"), ("smallwrite", "files/s"), ("smallread", "files/s"),
          ("remove", "files/s")]
SRV = ("braid", "ganesha")
kc, ops = [], {}
for line in sys.stdin:
    f = line.split()
    if f[0] == "@@KC":
        kc.append((int(f[1]), f[2], f[3], int(f[4]), float(f[5])))
    else:  # @@OPS round server phase OP calls rtt_ms exec_ms
        o = ops.setdefault((f[2], f[3]), {}).setdefault(f[4], [0, 0, 0])
        o[0] += int(f[5]); o[1] += int(f[6]); o[2] += int(f[7])
if not kc:
    print("bench/kclient: no measurements from the guest", file=sys.stderr); sys.exit(99)
def rate(p, n, secs):
    n = n * 1.048576 if p in ("write", "read") else n  # MiB -> MB
    return n / secs if secs > 0 else float("inf")
val = {}  # (phase, server) -> [rate per round]
raw = []
for r, s, p, n, secs in kc:
    val.setdefault((p, s), {})[r] = rate(p, n, secs)
    raw.append({"round": r, "server": s, "phase": p, "count": n, "seconds": secs})
rounds = sorted({r for r, *_ in kc})
print("kernel client %s (%s), vers=4.1; stores and export under %s (%s on %s); guest clock %s" % (
    setup["kernel"], setup["backend"], setup["store"], setup["store_fstype"], setup["store_dev"],
    setup["guest_clock"]))
print("sizes: %d MiB file; %d files; %d small files of %d KiB; %d round(s)" % (
    setup["mib"], setup["files"], setup["small_files"], setup["small_kib"], setup["rounds"]))
print()
print("%-6s %-11s %-10s %12s %12s %8s" % ("round", "phase", "unit", "braid", "ganesha", "ratio"))
for r in rounds:
    for p, u in PHASES:
        b, g = val.get((p, "braid"), {}).get(r), val.get((p, "ganesha"), {}).get(r)
        if b is None or g is None:
            continue
        print("%-6d %-11s %-10s %12.1f %12.1f %8.3f" % (r, p, u, b, g, b / g))
print()
print("medians over %d round(s), ratio = braid / ganesha (higher is better for braid):" % len(rounds))
print("%-11s %-10s %12s %12s %8s" % ("phase", "unit", "braid", "ganesha", "ratio"))
out, ratios = {"bench": "kclient"}, {}
phases = {}
for p, u in PHASES:
    if (p, "braid") not in val or (p, "ganesha") not in val:
        continue
    b = statistics.median(val[(p, "braid")].values())
    g = statistics.median(val[(p, "ganesha")].values())
    ratios[p] = b / g
    phases[p] = {"unit": u, "braid": round(b, 2), "ganesha": round(g, 2), "ratio": round(b / g, 3)}
    print("%-11s %-10s %12.1f %12.1f %8.3f" % (p, u, b, g, b / g))
    out["%s_vs_ganesha" % p] = round(b / g, 3)
low = min(ratios, key=ratios.get)
out["min_phase_vs_ganesha"] = round(ratios[low], 3)
out["min_phase"] = low
print("lowest: %s at %.3fx Ganesha" % (low, ratios[low]))
print()
print("NFS operations each mount sent (summed over the rounds): calls/mean RTT ms, top 5")
for p, _ in PHASES:
    cells = []
    for s in SRV:
        o = ops.get((s, p), {})
        top = sorted(o.items(), key=lambda kv: -kv[1][0])[:5]
        cells.append(" ".join("%s %d/%.2f" % (k, v[0], v[1] / v[0]) for k, v in top) or "-")
    print("%-11s braid:   %s" % (p, cells[0]))
    print("%-11s ganesha: %s" % ("", cells[1]))
out["phases"] = phases
out["ops"] = {"%s/%s" % k: {op: {"calls": v[0], "rtt_ms": v[1], "exec_ms": v[2]}
                            for op, v in o.items()} for k, o in sorted(ops.items())}
out["raw"] = raw
out["setup"] = setup
print(json.dumps(out))
' "$BACKEND" "${KERNEL:-?}" "$ROUNDS" "$MIB" "$NFILES" "$NSMALL" "$SMALL_KIB" "$T" "$FSTYPE" "$FSDEV" "${CLOCK:-?}" ||
	hard "the guest's measurements could not be read"
