# cluster.sh -- sourced by the Linux-client drivers (posix-run.sh,
# run.sh): the guest's files, the VM lock, and braid-mds with its
# braid-ds data servers on this host's loopback, started and stopped.
#
# The caller defines PROG, here (this directory), top_builddir, T (its
# temporary directory), skip() and hard() before sourcing, and calls
# cluster_cleanup from its EXIT trap.
#
# start_braid reads these (defaults in brackets):
#   MDS_BIN DS_BIN      the daemons [$top_builddir/braid-mds, braid-ds]
#   BRAID_NDS           data servers [2]
#   BRAID_EXPORTS       the exports file's text ["/ *(rw,no_root_squash,insecure)"]
#   BRAID_MDS_CONF      extra [mds] lines
#   BRAID_DS_CONF       extra [ds] lines, for every data server
#   BRAID_DS_NICS       guest NICs each data server is advertised on [1]:
#                       10.0.2.2:PORT, 10.0.3.2:PORT, ... (clientvm --nics)
#   BRAID_METRICS       yes: every daemon serves metrics on a loopback port
#   BRAID_DS_BADADV     set: data server 1 advertises a port nothing listens on
#   BRAID_DS_NAME       data server host names: NAME-dsI-PID [posix]
# and sets PORT (the MDS's), DS_PORT[i], DS_PID[i], DS_METRICS[i] and
# MDS_METRICS (host:port, with BRAID_METRICS=yes), i = 1..BRAID_NDS.
#
# Daemons are remembered in PIDS/NAMES (in start order) and their logs in
# LOGS; stop_servers stops them, the last started first.

PIDS=()    # daemons we started
NAMES=()
LOGS=()
DS_PORT=() DS_PID=() DS_METRICS=()
MDS_METRICS=

# the EXIT trap's part: daemons still running are stopped, $T goes unless
# KEEP=1
cluster_cleanup() {
	local i
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
		[[ -n ${PIDS[$i]} ]] && kill "${PIDS[$i]}" 2>/dev/null
	done
	for i in "${!PIDS[@]}"; do [[ -n ${PIDS[$i]} ]] && wait "${PIDS[$i]}" 2>/dev/null; done
	# stores on file systems of the run's own (run.sh's enospc check)
	for i in "$T"/ds*; do mountpoint -q "$i" 2>/dev/null && umount -l "$i"; done
	if [[ ${KEEP:-0} = 1 ]]; then echo "$PROG: kept $T" >&2; else rm -rf "$T"; fi
}

# vm_prepare BACKEND [novmtool]: the cached kernel and initramfs (or
# skip), and the static guest helper vmtool in $T/files (the guest's
# /files) unless novmtool
vm_prepare() {
	local backend=$1 rc
	"$here/clientvm" --backend "$backend" --build-only > "$T/build.log" 2>&1
	rc=$?
	if [[ $rc != 0 ]]; then
		tail -5 "$T/build.log" >&2
		[[ $rc = 77 ]] && skip "the $backend client VM cannot be provided on this host (above)"
		hard "clientvm --build-only failed with status $rc (above)"
	fi
	mkdir -p "$T/files"
	[[ ${2:-} = novmtool ]] && return 0
	VMTOOL=${VMTOOL:-$top_builddir/tests/linux-client/vmtool}
	if [[ -x $VMTOOL ]]; then
		cp "$VMTOOL" "$T/files/vmtool"
	else
		${CC:-cc} -static -O1 -o "$T/files/vmtool" "$here/vmtool.c" > "$T/cc.log" 2>&1 ||
			{ cat "$T/cc.log" >&2; skip "cannot build a static vmtool (is libc6-dev installed?)"; }
	fi
	readelf -l "$T/files/vmtool" 2>/dev/null | grep -q INTERP &&
		hard "$VMTOOL is dynamically linked; the guest has no libc (build it with -static)"
}

# vm_lock: one VM at a time on this host, on fd 7 (the lock is not passed
# on to the daemons: start closes fd 7 for them)
vm_lock() {
	exec 7> "${TMPDIR:-/tmp}/braid-linux-client.lock"
	if ! flock -n 7; then
		echo "$PROG: waiting for another Linux-client run to finish" >&2
		flock 7
	fi
}

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

# optlines TEXT...: each TEXT that is not empty, as lines
optlines() {
	local l
	for l in "$@"; do [[ -n $l ]] && printf '%s\n' "$l"; done
	return 0
}

show_logs() {
	local f
	for f in "${LOGS[@]}"; do
		echo "---- tail of $f" >&2
		tail -40 "$f" >&2
	done
}

# The daemons' settings, as text: shared by start_braid (daemons on this
# host) and rdma-qemu-v41.sh (daemons inside the guest), which differ only
# in paths and addresses.  DIR is the directory the daemon sees holding
# cluster.key, exports and the stores (mds, ds1, ds2 ...).
#
# cluster_files DIR: a fresh cluster key and the exports file
# (BRAID_EXPORTS) in DIR
cluster_files() {
	( umask 077; od -An -tx1 -N32 /dev/urandom | tr -d ' \n'; echo ) > "$1/cluster.key"
	chmod 600 "$1/cluster.key"
	printf '%s\n' "${BRAID_EXPORTS:-/ *(rw,no_root_squash,insecure)}" > "$1/exports"
}

# mds_conf DIR LISTEN [LINE...]: braid-mds's config, then each LINE that is
# not empty
mds_conf() {
	cat <<EOF
[mds]
store_dir = $1/mds
listen = $2
exports = $1/exports
key_file = $1/cluster.key
# a fresh store: no client to wait for; and leave the host's rpcbind alone
grace_time = 0
rpcbind = no
EOF
	optlines "${@:3}"
}

# ds_conf DIR I LISTEN ADVERTISE MDS [LINE...]: data server I's config
# (clients are told ADVERTISE, the MDS calls it at LISTEN), then each LINE
# that is not empty
ds_conf() {
	cat <<EOF
[ds]
store_dir = $1/ds$2
listen = $3
advertise = $4
ctl_advertise = $3
key_file = $1/cluster.key
mds = $5
hostname = ${BRAID_DS_NAME:-posix}-ds$2-$$
loops = 1
workers = 4
EOF
	optlines "${@:6}"
}

start_braid() {
	local mds=$MDS_BIN ds=$DS_BIN nds=${BRAID_NDS:-2} nics=${BRAID_DS_NICS:-1}
	local mline=
	cluster_files "$T"
	if [[ ${BRAID_METRICS:-} = yes ]]; then
		MDS_METRICS=127.0.0.1:$(free_port) || hard "no free port"
		mline="metrics_listen = $MDS_METRICS"
	fi
	mds_conf "$T" 127.0.0.1:0 "$mline" "${BRAID_MDS_CONF:-}" > "$T/mds.conf"
	LOGS+=("$T/mds.log")
	start braid-mds "$T/mds.log" "$mds" -c "$T/mds.conf" --ready-fd 3 3> "$T/mds.ready"
	PORT=$(wait_ready braid-mds "${PIDS[-1]}" "$T/mds.ready") || { show_logs; hard "braid-mds did not start"; }
	echo "$PROG: braid-mds (pid ${PIDS[-1]}) on 127.0.0.1:$PORT" >&2
	local i p n adv
	for ((i = 1; i <= nds; i++)); do
		p=$(free_port) || hard "no free port"
		# Clients (the guest) reach the host's loopback at 10.0.2.2 (and
		# 10.0.3.2 ... on more NICs); the MDS calls the control protocol on
		# the host's own loopback.
		adv=10.0.2.2:$p
		for ((n = 1; n < nics; n++)); do adv+=", 10.0.$((2 + n)).2:$p"; done
		# BRAID_DS_BADADV: data server 1 tells clients a port nothing
		# listens on (a client that cannot reach it; the MDS can)
		if [[ ${BRAID_DS_BADADV:-} && $i = 1 ]]; then
			adv=10.0.2.2:$(free_port) || hard "no free port"
		fi
		mline=
		if [[ ${BRAID_METRICS:-} = yes ]]; then
			DS_METRICS[$i]=127.0.0.1:$(free_port) || hard "no free port"
			mline="metrics_listen = ${DS_METRICS[$i]}"
		fi
		ds_conf "$T" "$i" "127.0.0.1:$p" "$adv" "127.0.0.1:$PORT" "$mline" "${BRAID_DS_CONF:-}" > "$T/ds$i.conf"
		LOGS+=("$T/ds$i.log")
		start "braid-ds $i" "$T/ds$i.log" "$ds" -c "$T/ds$i.conf" --ready-fd 3 3> "$T/ds$i.ready"
		wait_ready "braid-ds $i" "${PIDS[-1]}" "$T/ds$i.ready" > /dev/null ||
			{ show_logs; hard "braid-ds $i did not start"; }
		DS_PORT[$i]=$p DS_PID[$i]=${PIDS[-1]}
		echo "$PROG: braid-ds $i (pid ${PIDS[-1]}) on 127.0.0.1:$p, advertised as $adv" >&2
	done
}

# forget_pid PID: a daemon the test killed on purpose; stop_servers and
# dead_servers leave it out
forget_pid() {
	local i
	for i in "${!PIDS[@]}"; do
		if [[ ${PIDS[$i]} = "$1" ]]; then
			wait "$1" 2>/dev/null
			PIDS[$i]=
		fi
	done
}

# dead_servers: the names of the daemons that are gone (leading blanks)
dead_servers() {
	local i died=
	for i in "${!PIDS[@]}"; do
		[[ -n ${PIDS[$i]} ]] && ! alive "${PIDS[$i]}" && died+=" ${NAMES[$i]}"
	done
	echo "$died"
}

# stop_servers BRAID DIED: stop the daemons, the last started first (the
# data servers before the MDS they report to); Braid's must stop cleanly on
# SIGTERM: with BRAID=braid and nothing DIED, a non-zero exit status is an
# error.  Sets stop_rc (0 clean, 1 not).
stop_servers() {
	local kind=$1 died=$2 i s
	stop_rc=0
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
		[[ -n ${PIDS[$i]} ]] || continue
		kill "${PIDS[$i]}" 2>/dev/null
		for _ in $(seq 100); do alive "${PIDS[$i]}" || break; sleep 0.1; done
		if alive "${PIDS[$i]}"; then
			echo "$PROG: ${NAMES[$i]} ignored SIGTERM for 10 s; killing it" >&2
			kill -9 "${PIDS[$i]}" 2>/dev/null
			stop_rc=1
		fi
		wait "${PIDS[$i]}"; s=$?
		if [[ $kind = braid && $s != 0 && -z $died ]]; then
			echo "$PROG: ${NAMES[$i]} exited with status $s on SIGTERM" >&2
			stop_rc=1
		fi
	done
	PIDS=()
}

# rdma_guest_prepare: what a guest that runs braid itself on soft-RoCE
# needs (rdma-qemu-v41.sh, bench/rdma.sh): the daemons (MDS_BIN, DS_BIN,
# CTL_BIN, from top_builddir or BRAID_MDS, BRAID_DS, BRAIDCTL), rdma-core's
# programs and the rxe verbs provider libibverbs dlopen()s by its
# /etc/libibverbs.d entry (RDMA_BINS: clientvm arguments), and the guest's
# library rdma-cluster.sh in $T/files; skip() when one is missing.
rdma_guest_prepare() {
	local p f
	MDS_BIN=${BRAID_MDS:-$top_builddir/braid-mds} DS_BIN=${BRAID_DS:-$top_builddir/braid-ds}
	CTL_BIN=${BRAIDCTL:-$top_builddir/braidctl}
	[[ -x $MDS_BIN ]] || skip "braid-mds not built ($MDS_BIN; set top_builddir or BRAID_MDS)"
	[[ -x $DS_BIN ]] || skip "braid-ds not built ($DS_BIN; set top_builddir or BRAID_DS)"
	[[ -x $CTL_BIN ]] || skip "braidctl not built ($CTL_BIN; set top_builddir or BRAIDCTL)"
	grep -q '^#define HAVE_RDMA 1' "$top_builddir/config.h" 2>/dev/null ||
		skip "braid was built --without-rdma (configure builds RDMA by default, with librdmacm-dev and libibverbs-dev installed)"
	RDMA_BINS=()
	for p in rdma:iproute2 rping:rdmacm-utils ibv_devinfo:ibverbs-utils; do
		f=$(PATH=$PATH:/sbin:/usr/sbin command -v "${p%%:*}") ||
			skip "${p%%:*} not installed (Debian package ${p#*:}; tools/install-deps)"
		RDMA_BINS+=(--bin "$f")
	done
	RXE_LIB=$(ls -1 /usr/lib/*/libibverbs/librxe-rdmav*.so 2>/dev/null | head -1)
	[[ -n $RXE_LIB && -e /etc/libibverbs.d/rxe.driver ]] ||
		skip "the rxe verbs provider is not installed (ibverbs-providers; tools/install-deps)"
	RDMA_BINS+=(--bin "$RXE_LIB" --file /etc/libibverbs.d/rxe.driver)
	cp "$here/rdma-cluster.sh" "$T/files/" || hard "cp rdma-cluster.sh"
}
