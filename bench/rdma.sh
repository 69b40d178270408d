#!/bin/bash
# bench/rdma -- braid-ds's 1 MiB READ and WRITE over RPC-over-RDMA and
# over TCP, side by side in one run (issue 17).
#
# The host kernel has no RDMA, so everything runs in one qemu guest (TCG,
# one vCPU) on soft-RoCE, as tests/linux-client/rdma-qemu-v41.sh does:
# braid-mds and one braid-ds (its store ext2 on a ramdisk with direct_io,
# so READ data goes by RDMA Write from its registered read buffers; DIRECT=0:
# the guest's tmpfs through the page cache, one copy) listening on
# TCP and on RDMA, and the stock kernel client mounting the MDS twice,
# vers=4.1 over TCP and vers=4.1,proto=rdma (rsize = wsize = 1 MiB): the
# flexfiles layout sends each mount to the data server over its own
# transport.  Each round, for each transport (the order alternates round
# by round): a --mib file written with dd bs=1M conv=fsync, the client's
# caches dropped, the file read with dd bs=1M; wall time and the data
# server's CPU (utime + stime from /proc/PID/stat) around each.  Every
# round is printed; the summary takes medians and ratios.
#
# Soft-RoCE is itself software on the one vCPU (packets, iCRC, copies in
# the kernel), so throughput here says little about real NICs; braid-ds's
# own CPU per GiB does carry over (part of rxe's send work runs in the
# data server's ibv_post_send system calls and is counted to it, which
# real RDMA NICs do not do: the RDMA figure is an upper bound).
#
#   bench/rdma.sh [--mib N] [--rounds R] [--quick]
# Exit 0, or 77 with a message where no guest can be booted.  The last
# line is JSON: rdma_read_MBps, tcp_read_MBps, rdma_write_MBps,
# tcp_write_MBps, ds_cpu_s_per_gib_rdma, ds_cpu_s_per_gib_tcp (READ and
# WRITE together), ds_cpu_per_gib_rdma_vs_tcp, and the same per direction.
set -u
PROG=bench/rdma
here=$(cd "$(dirname "$0")/../tests/linux-client" && pwd)
bench=$(cd "$(dirname "$0")" && pwd)
top_builddir=$(cd "${top_builddir:-.}" && pwd)
MIB=128 ROUNDS=3 KEEP=${KEEP:-0}
while [[ $# -gt 0 ]]; do
	case $1 in
	--mib) MIB=$2; shift 2;;
	--rounds) ROUNDS=$2; shift 2;;
	--quick) MIB=32 ROUNDS=1; shift;;
	*) echo "usage: $PROG [--mib N] [--rounds R] [--quick]" >&2; exit 2;;
	esac
done
skip() { echo "$PROG: SKIP: $*" >&2; exit 77; }
hard() { echo "$PROG: ERROR: $*" >&2; exit 99; }

GUEST_IP=10.0.2.15 MDS_PORT=2049 NDS=1 BRAID_DIR=/tmp/braid
T=$(mktemp -d "${TMPDIR:-/tmp}/braid-bench-rdma.XXXXXX") || hard "mktemp"
# shellcheck source=../tests/linux-client/cluster.sh
. "$here/cluster.sh"
trap cluster_cleanup EXIT
trap 'exit 99' INT TERM
vm_prepare qemu novmtool
rdma_guest_prepare
cp "$bench/rdma-guest.sh" "$T/files/" || hard "cp rdma-guest.sh"
BRAID_EXPORTS="/ *(rw,no_root_squash,insecure)"
BRAID_DS_NAME=bench
cluster_files "$T/files"
mds_conf "$BRAID_DIR" "$GUEST_IP:$MDS_PORT" "data_io = refuse" \
	"rdma_listen = $GUEST_IP:20049" > "$T/files/mds.conf"
DIRECT=${DIRECT:-1}
dline="rdma_listen = $GUEST_IP:20050"$'\n'"metrics_listen = $GUEST_IP:20062"
[[ $DIRECT = 1 ]] && dline+=$'\n'"direct_io = yes"
ds_conf "$BRAID_DIR" 1 "$GUEST_IP:20001" "$GUEST_IP:20001" "$GUEST_IP:$MDS_PORT" \
	"$dline" > "$T/files/ds1.conf"
vm_lock
T0=$SECONDS
"$here/clientvm" --backend qemu --no-mount --mem $((MIB * (2 * ROUNDS + 3) + 832)) \
	--timeout $((300 + MIB * ROUNDS * 4)) \
	--modules crc32_generic,rdma_rxe,rdma_ucm,rpcrdma,brd,ext4,crc32c_generic \
	--bin "$MDS_BIN=/usr/bin/braid-mds" --bin "$DS_BIN=/usr/bin/braid-ds" \
	--bin "$CTL_BIN=/usr/bin/braidctl" "${RDMA_BINS[@]}" --files "$T/files" \
	${RDMA_DEBUG_BIN:+--bin "$RDMA_DEBUG_BIN"} \
	--env "GUEST_IP=$GUEST_IP" --env "MDS_PORT=$MDS_PORT" --env "NDS=$NDS" \
	--env "BRAID_DIR=$BRAID_DIR" --env "MIB=$MIB" --env "ROUNDS=$ROUNDS" --env "DIRECT=$DIRECT" \
	"$GUEST_IP:$MDS_PORT" "$T/files/rdma-guest.sh" > "$T/vm.log" 2>&1
rc=$?
[[ $rc = 0 ]] || { tail -40 "$T/vm.log" >&2; hard "the guest failed (clientvm exit $rc)"; }
echo "$PROG: the guest ran $((SECONDS - T0)) s" >&2
grep -E '^(data server store|@@ZEROCOPY)' "$T/vm.log" >&2
grep '^@@BENCH ' "$T/vm.log" | python3 -c '
import json, statistics, sys
rows = [l.split()[1:] for l in sys.stdin]  # round xprt op mib secs user_s sys_s
if not rows:
    print("bench/rdma: no measurements from the guest", file=sys.stderr); sys.exit(99)
print("%-6s %-5s %-6s %9s %9s %13s %13s" % ("round", "xprt", "op", "MB/s", "DS cpu s",
      "DS cpu s/GiB", "user s/GiB"))
agg = {}
for r, x, op, mib, secs, usr, sys_ in rows:
    mib, secs, usr, sys_ = float(mib), float(secs), float(usr), float(sys_)
    cpu, gib = usr + sys_, mib / 1024
    mbps = mib * 1.048576 / secs if secs > 0 else 0.0
    print("%-6s %-5s %-6s %9.1f %9.2f %13.3f %13.3f" % (r, x, op, mbps, cpu, cpu / gib, usr / gib))
    a = agg.setdefault((x, op), {"mbps": [], "cpu": 0.0, "usr": 0.0, "mib": 0.0})
    a["mbps"].append(mbps); a["cpu"] += cpu; a["usr"] += usr; a["mib"] += mib
def med(x, op): return statistics.median(agg[(x, op)]["mbps"])
def cpg(x, ops, k="cpu"):
    c = sum(agg[(x, o)][k] for o in ops); m = sum(agg[(x, o)]["mib"] for o in ops)
    return c / (m / 1024)
out = {}
for op in ("read", "write"):
    for x in ("rdma", "tcp"):
        out["%s_%s_MBps" % (x, op)] = round(med(x, op), 1)
        out["ds_cpu_s_per_gib_%s_%s" % (x, op)] = round(cpg(x, [op]), 3)
    t = out["ds_cpu_s_per_gib_tcp_%s" % op]
    out["ds_cpu_per_gib_rdma_vs_tcp_%s" % op] = round(out["ds_cpu_s_per_gib_rdma_%s" % op] / t, 3) if t else None
for x in ("rdma", "tcp"):
    out["ds_cpu_s_per_gib_%s" % x] = round(cpg(x, ["read", "write"]), 3)
    out["ds_user_s_per_gib_%s" % x] = round(cpg(x, ["read", "write"], "usr"), 3)
u = out["ds_user_s_per_gib_tcp"]
out["ds_user_per_gib_rdma_vs_tcp"] = round(out["ds_user_s_per_gib_rdma"] / u, 3) if u else None
# what a real NIC would leave: the data server own work over RDMA is its
# user time (soft-RoCE work is kernel work in its system calls); over TCP
# the kernel copies are a real cost of the data server too
out["ds_cpu_per_gib_rdma_user_vs_tcp"] = round(out["ds_user_s_per_gib_rdma"] / out["ds_cpu_s_per_gib_tcp"], 3) if out["ds_cpu_s_per_gib_tcp"] else None
t = out["ds_cpu_s_per_gib_tcp"]
out["ds_cpu_per_gib_rdma_vs_tcp"] = round(out["ds_cpu_s_per_gib_rdma"] / t, 3) if t else None
print()
print("medians: READ rdma %.1f MB/s, tcp %.1f MB/s; WRITE rdma %.1f, tcp %.1f" % (
    out["rdma_read_MBps"], out["tcp_read_MBps"], out["rdma_write_MBps"], out["tcp_write_MBps"]))
print("braid-ds CPU per GiB (READ and WRITE): rdma %.3f s, tcp %.3f s, rdma/tcp %s" % (
    out["ds_cpu_s_per_gib_rdma"], out["ds_cpu_s_per_gib_tcp"], out["ds_cpu_per_gib_rdma_vs_tcp"]))
print("  of which user time: rdma %.3f s, tcp %.3f s; rdma user / tcp all %s" % (
    out["ds_user_s_per_gib_rdma"], out["ds_user_s_per_gib_tcp"], out["ds_cpu_per_gib_rdma_user_vs_tcp"]))
out["bench"] = "rdma"
print(json.dumps(out))
' || hard "the guest's measurements could not be read"
