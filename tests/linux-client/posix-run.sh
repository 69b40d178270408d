#!/bin/bash
# posix-run.sh -- run the POSIX workload (posix.sh) in a stock Linux NFS
# client VM (clientvm) against a server started on this host's loopback.
#
#   posix-run.sh --backend qemu|uml --vers 4.1|4.2 --server braid|ganesha
#                [--timeout S] [--keep] [--workload FILE]
#
# --server braid    braid-mds and two braid-ds, from $top_builddir (or the
#                   BRAID_MDS / BRAID_DS environment variables); on failure the
#                   tail of their logs is printed
# --server ganesha  NFS-Ganesha (VFS FSAL, NFSv4 only, numeric owners) on a
#                   free loopback port, exporting a temporary directory
# --timeout S       kill the guest after S seconds (default 900; env POSIX_TIMEOUT)
# --keep            keep the temporary directory (configs, logs, stores)
# --workload FILE   run another guest script in the same setting instead of
#                   posix.sh (it must mount $MNT itself: clientvm --no-mount)
#
# The guest helper vmtool is $VMTOOL, else $top_builddir/tests/linux-client/
# vmtool (make check builds it), else compiled here with ${CC:-cc} -static.
# VM runs are serialized on a lock file (two guests on a 2-core host would
# only slow each other into timeouts).
#
# Exit status (automake): 0 pass, 1 the workload failed, 77 skip (the VM
# environment or the server cannot be provided here; the reason is printed),
# 99 hard error (timeout, the guest never ran the workload, a daemon died).
set -u
PROG=posix-run.sh
here=$(cd "$(dirname "$0")" && pwd)
BACKEND= VERS= SERVER_KIND= TIMEOUT=${POSIX_TIMEOUT:-900} KEEP=0 WORKLOAD=$here/posix.sh

usage() {
	echo "usage: $PROG --backend qemu|uml --vers 4.1|4.2 --server braid|ganesha" \
		"[--timeout S] [--keep] [--workload FILE]" >&2
	exit 99
}
while [[ $# -gt 0 ]]; do
	case $1 in
	--backend) BACKEND=${2:-}; shift 2 || usage;;
	--vers) VERS=${2:-}; shift 2 || usage;;
	--server) SERVER_KIND=${2:-}; shift 2 || usage;;
	--timeout) TIMEOUT=${2:-}; shift 2 || usage;;
	--keep) KEEP=1; shift;;
	--workload) WORKLOAD=${2:-}; shift 2 || usage;;
	*) usage;;
	esac
done
[[ $BACKEND = qemu || $BACKEND = uml ]] || usage
[[ $VERS = 4.1 || $VERS = 4.2 ]] || usage
[[ $SERVER_KIND = braid || $SERVER_KIND = ganesha ]] || usage
[[ $TIMEOUT =~ ^[0-9]+$ ]] || usage
[[ -r $WORKLOAD ]] || { echo "$PROG: cannot read $WORKLOAD" >&2; usage; }

skip() { echo "$PROG: SKIP: $*" >&2; exit 77; }
hard() { echo "$PROG: ERROR: $*" >&2; exit 99; }
top_builddir=$(cd "${top_builddir:-.}" && pwd)

T=$(mktemp -d "${TMPDIR:-/tmp}/braid-posix.XXXXXX") || hard "mktemp"
# the VM's files and lock, braid-mds and braid-ds: start_braid, stop_servers
# shellcheck source=cluster.sh
. "$here/cluster.sh"
trap cluster_cleanup EXIT
trap 'exit 99' INT TERM

# ------------------------------------------------------------------ the VM
echo "$PROG: backend=$BACKEND vers=$VERS server=$SERVER_KIND" >&2
# what the server needs, before spending time on the VM
MDS_BIN=${BRAID_MDS:-$top_builddir/braid-mds} DS_BIN=${BRAID_DS:-$top_builddir/braid-ds}
GANESHA_PLUGINS=
if [[ $SERVER_KIND = braid ]]; then
	[[ -x $MDS_BIN ]] || skip "braid-mds not built ($MDS_BIN; set top_builddir or BRAID_MDS)"
	[[ -x $DS_BIN ]] || skip "braid-ds not built ($DS_BIN; set top_builddir or BRAID_DS)"
else
	command -v ganesha.nfsd > /dev/null || skip "ganesha.nfsd not installed (Debian: nfs-ganesha nfs-ganesha-vfs)"
	for d in /usr/lib/x86_64-linux-gnu/ganesha /usr/lib64/ganesha /usr/lib/ganesha; do
		[[ -e $d/libfsalvfs.so ]] && { GANESHA_PLUGINS=$d; break; }
	done
	[[ -n $GANESHA_PLUGINS ]] ||
		skip "the Ganesha VFS FSAL (libfsalvfs.so) is not installed (Debian: nfs-ganesha-vfs)"
fi
vm_prepare "$BACKEND"

# ------------------------------------------------------------------ servers
start_ganesha() {
	PORT=$(free_port) || hard "no free port"
	mkdir -p "$T/export" "$T/recov"
	cat > "$T/ganesha.conf" <<EOF
NFS_CORE_PARAM {
    NFS_Port = $PORT;
    Protocols = 4;
    Enable_NLM = false;
    Enable_RQUOTA = false;
    Enable_UDP = false;
    Bind_addr = 127.0.0.1;
    Plugins_Dir = "$GANESHA_PLUGINS";
}
NFSv4 {
    Graceless = true;
    Only_Numeric_Owners = true;
    Minor_Versions = 1, 2;
    RecoveryBackend = fs;
    RecoveryRoot = "$T/recov";
}
NFS_KRB5 { Active_krb5 = false; }
EXPORT_DEFAULTS { SecType = sys; }
EXPORT {
    Export_Id = 1;
    Path = "$T/export";
    Pseudo = "/";
    Protocols = 4;
    Transports = TCP;
    Access_Type = RW;
    Squash = No_Root_Squash;
    SecType = sys;
    FSAL { Name = VFS; }
}
LOG { Default_Log_Level = EVENT; }
EOF
	LOGS+=("$T/ganesha.log")
	start ganesha "$T/ganesha.out" ganesha.nfsd -F -f "$T/ganesha.conf" -L "$T/ganesha.log" -p "$T/ganesha.pid"
	local pid=${PIDS[-1]}
	for _ in $(seq 300); do
		listening "$PORT" && break
		alive "$pid" || { show_logs; hard "ganesha.nfsd exited at start"; }
		sleep 0.1
	done
	listening "$PORT" || { show_logs; hard "ganesha.nfsd not listening on 127.0.0.1:$PORT after 30 s"; }
	echo "$PROG: ganesha.nfsd (pid $pid) serving $T/export on 127.0.0.1:$PORT" >&2
}

# One VM at a time on this host (the lock is not passed on to the daemons).
vm_lock
echo "$PROG: VM ready, lock held after ${SECONDS}s" >&2

PORT=
if [[ $SERVER_KIND = ganesha ]]; then start_ganesha; else start_braid; fi

echo "$PROG: server up after ${SECONDS}s" >&2
# ------------------------------------------------------------------ run
t0=$(date +%s)
"$here/clientvm" --backend "$BACKEND" --no-mount --mount-opts "vers=$VERS" --files "$T/files" \
	--env "EXPECT_VERS=$VERS" --timeout "$TIMEOUT" "127.0.0.1:$PORT" "$WORKLOAD" 7>&- 2>&1 |
	tee "$T/vm.log"
rc=${PIPESTATUS[0]}
echo "$PROG: guest finished with status $rc after $(( $(date +%s) - t0 )) s" >&2

died=$(dead_servers)
# stop the daemons, the last started first (the data servers before the
# MDS they report to); Braid's must stop cleanly on SIGTERM
stop_servers "$SERVER_KIND" "$died"
echo "$PROG: server stopped after ${SECONDS}s" >&2

if [[ -n $died ]]; then
	show_logs
	hard "server process(es) died during the run:$died"
fi
case $rc in
0)
	if [[ $WORKLOAD = "$here/posix.sh" ]] && ! grep -q '^POSIX-OK' "$T/vm.log"; then
		show_logs; hard "the workload exited 0 without printing POSIX-OK"
	fi
	if [[ $stop_rc != 0 ]]; then show_logs; hard "the server did not stop cleanly"; fi
	echo "$PROG: PASS ($BACKEND, vers=$VERS, $SERVER_KIND)" >&2
	exit 0;;
124) show_logs; hard "the guest timed out after ${TIMEOUT}s";;
125) show_logs; hard "the guest never ran the workload (boot, module load or mount failed; console above)";;
126) hard "clientvm usage error";;
*)
	echo "$PROG: FAILED checks:" >&2
	grep '^FAIL' "$T/vm.log" >&2
	[[ $SERVER_KIND = braid ]] && show_logs
	exit "$rc";;
esac
