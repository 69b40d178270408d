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
PIDS=()    # daemons we started
NAMES=()
cleanup() {
	local i
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill "${PIDS[$i]}" 2>/dev/null; done
	for i in "${!PIDS[@]}"; do wait "${PIDS[$i]}" 2>/dev/null; done
	if [[ $KEEP = 1 ]]; then echo "$PROG: kept $T" >&2; else rm -rf "$T"; fi
}
trap cleanup EXIT
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
"$here/clientvm" --backend "$BACKEND" --build-only > "$T/build.log" 2>&1
rc=$?
if [[ $rc != 0 ]]; then
	tail -5 "$T/build.log" >&2
	[[ $rc = 77 ]] && skip "the $BACKEND client VM cannot be provided on this host (above)"
	hard "clientvm --build-only failed with status $rc (above)"
fi

mkdir -p "$T/files"
VMTOOL=${VMTOOL:-$top_builddir/tests/linux-client/vmtool}
if [[ -x $VMTOOL ]]; then
	cp "$VMTOOL" "$T/files/vmtool"
else
	${CC:-cc} -static -O1 -o "$T/files/vmtool" "$here/vmtool.c" > "$T/cc.log" 2>&1 ||
		{ cat "$T/cc.log" >&2; skip "cannot build a static vmtool (is libc6-dev installed?)"; }
fi
readelf -l "$T/files/vmtool" 2>/dev/null | grep -q INTERP &&
	hard "$VMTOOL is dynamically linked; the guest has no libc (build it with -static)"

# ------------------------------------------------------------------ servers
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null && return
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 30000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
	return 1
}
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
alive() { kill -0 "$1" 2>/dev/null; }

# start NAME LOG CMD...: run a daemon in the background, remember it
start() {
	local name=$1 log=$2; shift 2
	"$@" < /dev/null > "$log" 2>&1 7>&- &
	PIDS+=("$!"); NAMES+=("$name")
}

# wait_ready NAME PID FILE: until FILE has "READY <port>..." (the daemon's
# --ready-fd); prints the first port
wait_ready() {
	local name=$1 pid=$2 file=$3 line
	for _ in $(seq 300); do
		if IFS= read -r line < "$file" 2>/dev/null && [[ $line == READY\ * ]]; then
			line=${line#READY }; echo "${line%% *}"; return 0
		fi
		alive "$pid" || { echo "$PROG: $name exited before it was ready" >&2; return 1; }
		sleep 0.1
	done
	echo "$PROG: $name not ready after 30 s" >&2
	return 1
}

LOGS=()
show_logs() {
	local f
	for f in "${LOGS[@]}"; do
		echo "---- tail of $f" >&2
		tail -40 "$f" >&2
	done
}

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

start_braid() {
	local mds=$MDS_BIN ds=$DS_BIN
	( umask 077; od -An -tx1 -N32 /dev/urandom | tr -d ' \n'; echo ) > "$T/cluster.key"
	chmod 600 "$T/cluster.key"
	echo "/ *(rw,no_root_squash,insecure)" > "$T/exports"
	cat > "$T/mds.conf" <<EOF
[mds]
store_dir = $T/mds
listen = 127.0.0.1:0
exports = $T/exports
key_file = $T/cluster.key
# a fresh store: no client to wait for; and leave the host's rpcbind alone
grace_time = 0
rpcbind = no
EOF
	LOGS+=("$T/mds.log")
	start braid-mds "$T/mds.log" "$mds" -c "$T/mds.conf" --ready-fd 3 3> "$T/mds.ready"
	PORT=$(wait_ready braid-mds "${PIDS[-1]}" "$T/mds.ready") || { show_logs; hard "braid-mds did not start"; }
	echo "$PROG: braid-mds (pid ${PIDS[-1]}) on 127.0.0.1:$PORT" >&2
	local i p
	for i in 1 2; do
		p=$(free_port) || hard "no free port"
		# Clients (the guest) reach the host's loopback at 10.0.2.2; the MDS
		# calls the control protocol on the host's own loopback.
		cat > "$T/ds$i.conf" <<EOF
[ds]
store_dir = $T/ds$i
listen = 127.0.0.1:$p
advertise = 10.0.2.2:$p
ctl_advertise = 127.0.0.1:$p
key_file = $T/cluster.key
mds = 127.0.0.1:$PORT
hostname = posix-ds$i-$$
loops = 1
workers = 4
EOF
		LOGS+=("$T/ds$i.log")
		start "braid-ds $i" "$T/ds$i.log" "$ds" -c "$T/ds$i.conf" --ready-fd 3 3> "$T/ds$i.ready"
		wait_ready "braid-ds $i" "${PIDS[-1]}" "$T/ds$i.ready" > /dev/null ||
			{ show_logs; hard "braid-ds $i did not start"; }
		echo "$PROG: braid-ds $i (pid ${PIDS[-1]}) on 127.0.0.1:$p, advertised as 10.0.2.2:$p" >&2
	done
}

# One VM at a time on this host (the lock is not passed on to the daemons).
exec 7> "${TMPDIR:-/tmp}/braid-linux-client.lock"
if ! flock -n 7; then
	echo "$PROG: waiting for another Linux-client run to finish" >&2
	flock 7
fi
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

died=
for i in "${!PIDS[@]}"; do alive "${PIDS[$i]}" || died+=" ${NAMES[$i]}"; done
# stop the daemons, the last started first (the data servers before the
# MDS they report to); Braid's must stop cleanly on SIGTERM
stop_rc=0
for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
	kill "${PIDS[$i]}" 2>/dev/null
	for _ in $(seq 100); do alive "${PIDS[$i]}" || break; sleep 0.1; done
	if alive "${PIDS[$i]}"; then
		echo "$PROG: ${NAMES[$i]} ignored SIGTERM for 10 s; killing it" >&2
		kill -9 "${PIDS[$i]}" 2>/dev/null
		stop_rc=1
	fi
	wait "${PIDS[$i]}"; s=$?
	if [[ $SERVER_KIND = braid && $s != 0 && -z $died ]]; then
		echo "$PROG: ${NAMES[$i]} exited with status $s on SIGTERM" >&2
		stop_rc=1
	fi
done
PIDS=()
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
