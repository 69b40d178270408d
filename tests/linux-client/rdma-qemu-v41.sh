#!/bin/bash
# Linux client tier: RPC-over-RDMA (issue 17).  The stock Debian kernel
# client mounts braid over soft-RoCE (rdma_rxe on the guest's eth0).  The
# host kernel has no RDMA, so the whole cluster runs INSIDE one qemu guest
# (TCG) beside the client: braid-mds, 2 braid-ds and braidctl go in with
# clientvm --bin, with rdma-core's rdma, rping, ibv_devinfo and the rxe
# verbs provider (--bin of a shared object, --file of its .driver), and
# the RDMA modules with --modules.  The daemons listen on the guest's own
# 10.0.2.15, their stores on its tmpfs; their configs come from
# cluster.sh (mds_conf, ds_conf) with the guest's paths.  The guest
# (rdma-guest.sh: its header lists the checks) brings up rxe0 and rpings
# itself over it, starts the cluster, runs the POSIX workload (posix.sh)
# and writes a 16 MiB file through flexfiles layouts (1 MiB segments on
# both data servers) and reads it back, checking /proc/self/mountstats;
# here, braidctl's layout of that file must place its 16 segments on both
# data servers.  Over RDMA the guest then runs rdma-probe (our own
# RPC-over-RDMA client, tests/linux-client/rdma-probe.c, in with --bin)
# against braid-mds's NFSv3 and MOUNT: WRITE by read chunk, READ by write
# chunk, a 600-entry READDIRPLUS by reply chunks, the credit limit in
# flight, and a bad peer's messages (wrong version, RDMA_MSGP, malformed
# and over-limit chunk lists, bogus steering tags, an oversized inline
# message, a credit overrun) answered by RDMA_ERROR or a disconnect, the
# server serving new connections after each.
#
# The daemons get [mds] rdma_listen = 10.0.2.15:20049 and [ds]
# rdma_listen = 10.0.2.15:20050, 20051 (and metrics on 20061, 20062, 20063),
# and the client mounts with vers=4.1,proto=rdma,port=20049: mountstats
# must show xprt: rdma, the client's transports to each data server must be
# RDMA ones (its sunrpc xprt switches), and each data server must have
# moved file data by RDMA Read (WRITE) and RDMA Write (READ), the MDS its
# large READDIRs by reply chunks (their braid_rdma_bytes_total).
# BRAID_RDMA_MOUNT=0 runs the same over TCP (the harness alone).
# BRAID_RDMA_TRACE=1 makes the daemons log every RDMA message; with
# RDMA_WATCHDOG=S the guest prints the daemons' logs after S seconds of
# the POSIX workload (a hung hard mount otherwise shows nothing).
#
# Environment: top_builddir (the daemons and tests/linux-client/rdma-probe,
# which make check builds; RDMA_PROBE names another), BRAID_RDMA_MOUNT,
# RDMA_TIMEOUT (the guest's, default 600 s), KEEP=1 (keep the temporary
# directory), CI=true (what would skip is an error: CI's hosts have
# everything, tools/install-deps).  Exit status (automake): 0 pass, 1 a
# check failed, 77 skip (no VM environment, rdma-core programs, daemons or
# rdma-probe), 99 hard error.
set -u
PROG=rdma-qemu-v41.sh
here=$(cd "$(dirname "$0")" && pwd)
top_builddir=$(cd "${top_builddir:-.}" && pwd)
KEEP=${KEEP:-0}
skip() {
	[[ ${CI:-} = true ]] && hard "CI=true, and this test cannot run: $*"
	echo "$PROG: SKIP: $*" >&2
	exit 77
}
hard() { echo "$PROG: ERROR: $*" >&2; exit 99; }

GUEST_IP=10.0.2.15 MDS_PORT=2049 NDS=2 BIG_MIB=16
BRAID_DIR=/tmp/braid # the daemons' key, exports and stores, in the guest

PROBE_BIN=${RDMA_PROBE:-$top_builddir/tests/linux-client/rdma-probe}

T=$(mktemp -d "${TMPDIR:-/tmp}/braid-rdma.XXXXXX") || hard "mktemp"
# shellcheck source=cluster.sh
. "$here/cluster.sh"
trap cluster_cleanup EXIT
trap 'exit 99' INT TERM

vm_prepare qemu # and vmtool, for posix.sh
rdma_guest_prepare
command -v python3 > /dev/null || skip "python3 not installed (it reads braidctl's JSON)"
cp "$here/posix.sh" "$T/files/posix.sh" || hard "cp posix.sh"

# ------------------------------------------------------------------ settings
EXP="no_root_squash,insecure"
BRAID_EXPORTS="/ *(rw,$EXP)"$'\n'"/striped *(rw,$EXP,layout=segments:segment_size=1M)"
BRAID_DS_NAME=rdma
MLINE="metrics_listen = $GUEST_IP:20061" XPRT=tcp PORT=$MDS_PORT MOPTS=vers=4.1
if [[ ${BRAID_RDMA_MOUNT:-1} = 1 ]]; then
	MLINE+=$'\n'"rdma_listen = $GUEST_IP:20049"
	XPRT=rdma PORT=20049 MOPTS=vers=4.1,proto=rdma
	# rdma-guest.sh's probe step: dynamic, so in with --bin (and its libraries)
	[[ -x $PROBE_BIN ]] || skip "rdma-probe not built ($PROBE_BIN: make check builds it; set RDMA_PROBE)"
	RDMA_BINS+=(--bin "$PROBE_BIN=/usr/bin/rdma-probe")
fi
cluster_files "$T/files"
mds_conf "$BRAID_DIR" "$GUEST_IP:$MDS_PORT" "data_io = refuse" "$MLINE" > "$T/files/mds.conf"
for ((i = 1; i <= NDS; i++)); do
	p=$((20000 + i)) dline="metrics_listen = $GUEST_IP:$((20061 + i))"
	[[ $XPRT = rdma ]] && dline+=$'\n'"rdma_listen = $GUEST_IP:$((20049 + i))"
	# the last data server's store takes O_DIRECT (a ramdisk: rdma-guest.sh)
	((i == NDS)) && dline+=$'\n'"direct_io = yes"
	ds_conf "$BRAID_DIR" "$i" "$GUEST_IP:$p" "$GUEST_IP:$p" "$GUEST_IP:$MDS_PORT" "$dline" \
		> "$T/files/ds$i.conf"
done

# the sanitizers' settings reach the daemons in the guest as they would here
SAN_ENV=()
for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS BRAID_RDMA_TRACE RDMA_WATCHDOG; do
	[[ -n ${!v:-} ]] && SAN_ENV+=(--env "$v=${!v}")
done

vm_lock
echo "$PROG: VM ready, lock held after ${SECONDS}s; mount over $XPRT ($MOPTS)" >&2
T0=$SECONDS
"$here/clientvm" --backend qemu --no-mount --mem 1024 --timeout "${RDMA_TIMEOUT:-600}" \
	--modules crc32_generic,rdma_rxe,rdma_ucm,rpcrdma,brd,ext4,crc32c_generic \
	--bin "$MDS_BIN=/usr/bin/braid-mds" --bin "$DS_BIN=/usr/bin/braid-ds" \
	--bin "$CTL_BIN=/usr/bin/braidctl" "${RDMA_BINS[@]}" \
	--files "$T/files" --mount-opts "$MOPTS" \
	--env "GUEST_IP=$GUEST_IP" --env "MDS_PORT=$MDS_PORT" --env "NDS=$NDS" \
	--env "BRAID_DIR=$BRAID_DIR" --env "EXPECT_XPRT=$XPRT" --env "BIG_MIB=$BIG_MIB" \
	"${SAN_ENV[@]}" --env EXPECT_VERS=4.1 --env "POSIX_DIRN=${POSIX_DIRN:-500}" --env "POSIX_LARGE_MIB=${POSIX_LARGE_MIB:-8}" \
	"$GUEST_IP:$PORT" "$here/rdma-guest.sh" 2>&1 | tee "$T/vm.log"
rc=${PIPESTATUS[0]}
echo "$PROG: the guest ran $((SECONDS - T0))s (exit $rc)" >&2
case $rc in
0|1) ;;
124) hard "the guest timed out";;
*) hard "the guest did not run its workload (clientvm exit $rc)";;
esac
fails=0
grep -q '^RDMA-GUEST-OK' "$T/vm.log" || { echo "$PROG: FAIL: the guest's checks failed" >&2; fails=1; }
grep -q '^POSIX-OK' "$T/vm.log" || { echo "$PROG: FAIL: no POSIX-OK from posix.sh" >&2; fails=1; }
# braidctl's layout of the big file: BIG_MIB segments, on every data server
sed -n 's/^@@LAYOUT //p' "$T/vm.log" > "$T/layout.json"
python3 - "$T/layout.json" "$BIG_MIB" "$NDS" <<'EOF' || fails=1
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    segs = d["segments"]
    ids = {m[0] for s in segs for m in s["mirrors"]}
except Exception as e:
    print("rdma-qemu-v41.sh: FAIL: cannot read braidctl's layout of the big file: %r" % e)
    sys.exit(1)
want, nds = int(sys.argv[2]), int(sys.argv[3])
if len(segs) == want and len(ids) == nds:
    print("rdma-qemu-v41.sh: ok: the big file's %d segments lie on %d data servers (ids %s)"
          % (len(segs), len(ids), sorted(ids)))
    sys.exit(0)
print("rdma-qemu-v41.sh: FAIL: the big file has %d segments (want %d) on data servers %s (want %d)"
      % (len(segs), want, sorted(ids), nds))
sys.exit(1)
EOF
echo "$PROG: $( ((fails)) && echo FAILED || echo passed) over $XPRT in ${SECONDS}s" >&2
exit $((fails ? 1 : 0))
