# rdma-cluster.sh -- sourced by the guest scripts that run braid INSIDE a
# qemu guest on soft-RoCE (tests/linux-client/rdma-guest.sh,
# bench/rdma-guest.sh): their helpers, rxe_up (rxe0 on eth0, checked with
# ibv_devinfo and an rping of the guest to itself), cluster_start
# (braid-mds, then NDS braid-ds from /files/mds.conf, /files/dsI.conf,
# each READY on its --ready-fd, then braidctl ds list shows them all up)
# and cluster_stop (SIGTERM, the data servers first: each must exit 0).
# The caller sets GUEST_IP, MDS_PORT, NDS, BRAID_DIR (--env) and FAILS=0,
# PIDS="" before sourcing; RXE_MTU (default 4096, RoCE's largest; empty:
# leave eth0's 1500, which gives rxe 1024).

T() { read up idle < /proc/uptime; echo "@@CLIENTVM T=$up $*"; }
step() { echo "== $*"; T "$1"; }
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
logs() {
	for l in "$BRAID_DIR"/*.log; do
		[ -f "$l" ] || continue
		echo "---- tail of $l"; tail -30 "$l"
	done
	echo "---- dmesg (tail)"; dmesg | grep -v 'speed is unknown' | tail -20
}
die() {
	echo "FAIL: $* (cannot go on)"
	logs
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	echo "RDMA-GUEST-FAILED"
	exit 1
}
dropcaches() { sync; echo 3 > /proc/sys/vm/drop_caches; }
md5() { md5sum < "$1" | cut -d' ' -f1; }
ctl() { braidctl --mds "$GUEST_IP:$MDS_PORT" --key "$BRAID_DIR/cluster.key" "$@"; }

rxe_up() {
step rxe "soft-RoCE: rxe0 on eth0"
# rxe logs "eth0 speed is unknown" on every port query: keep the console for us
echo 4 > /proc/sys/kernel/printk
# RoCE's largest MTU, 4096 (rxe takes it from the netdev's: 1500 gives
# 1024): what RoCE deployments run, and the guest's TCP runs over lo's 64 KiB
[ -n "${RXE_MTU:-4096}" ] && ip link set eth0 mtu $((${RXE_MTU:-4096} + 100))
rdma link add rxe0 type rxe netdev eth0 || die "rdma link add rxe0 type rxe netdev eth0"
dev=$(ibv_devinfo -d rxe0) || die "ibv_devinfo -d rxe0 (is the rxe provider in the guest?)"
case $dev in *PORT_ACTIVE*) ok "rxe0 port 1 active";; *) fail "rxe0 port not active: $dev";; esac
echo "rxe0: $(echo "$dev" | grep -E 'active_mtu|link_layer' | tr -s ' \t' ' ')"
for g in 0 1; do echo "rxe0 gid $g: $(cat /sys/class/infiniband/rxe0/ports/1/gids/$g 2>/dev/null)" \
	"$(cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/$g 2>/dev/null)"; done
for f in /proc/sys/sunrpc/rdma_max_inline_read /proc/sys/sunrpc/rdma_max_inline_write; do
	echo "client ${f##*/} = $(cat $f 2>/dev/null)"
done
rping -s -a "$GUEST_IP" -C 2 > /tmp/rping-s.log 2>&1 &
rs=$!
sleep 1
if timeout 60 rping -c -a "$GUEST_IP" -C 2 -v > /tmp/rping-c.log 2>&1 && wait $rs; then
	ok "rping over rxe0 ($GUEST_IP to itself)"
else
	fail "rping over rxe0: client: $(cat /tmp/rping-c.log) server: $(cat /tmp/rping-s.log)"
	kill $rs 2>/dev/null
fi

}

# ramdisk_store DIR MIB: an ext2 file system on a MIB MiB ramdisk (brd,
# loaded again with that size) mounted on DIR, for a data server store
# that O_DIRECT works on (tmpfs refuses it); needs --modules brd,ext4,
# crc32c_generic
ramdisk_store() {
	k=$(find /lib/modules -name brd.ko | head -1)
	rmmod brd 2>/dev/null
	insmod "$k" rd_nr=1 rd_size=$(($2 * 1024)) || die "insmod brd rd_size=$(($2 * 1024))"
	mke2fs -q /dev/ram0 > /dev/null || die "mke2fs /dev/ram0"
	mkdir -p "$1" && mount -t ext2 /dev/ram0 "$1" || die "mount /dev/ram0 on $1"
}

cluster_start() {
step start "braid-mds and $NDS braid-ds in the guest"
mkdir -p "$BRAID_DIR" || die "mkdir $BRAID_DIR"
cp /files/cluster.key /files/exports "$BRAID_DIR/" && chmod 600 "$BRAID_DIR/cluster.key" ||
	die "cp cluster.key exports to $BRAID_DIR"
# wait_ready NAME PID FILE: until FILE has "READY ..." (--ready-fd)
wait_ready() {
	local n=0 line
	while [ $n -lt 600 ]; do
		line=
		[ -s "$3" ] && read -r line < "$3"
		case $line in READY*) ok "$1 ready ($line)"; return 0;; esac
		kill -0 "$2" 2>/dev/null || die "$1 exited before it was ready"
		sleep 0.1; n=$((n + 1))
	done
	die "$1 not ready after 60 s"
}
braid-mds -c /files/mds.conf --ready-fd 3 3> "$BRAID_DIR/mds.ready" > "$BRAID_DIR/mds.log" 2>&1 &
PIDS="$! $PIDS"
wait_ready braid-mds $! "$BRAID_DIR/mds.ready"
i=1
while [ $i -le "$NDS" ]; do
	braid-ds -c /files/ds$i.conf --ready-fd 3 3> "$BRAID_DIR/ds$i.ready" > "$BRAID_DIR/ds$i.log" 2>&1 &
	PIDS="$! $PIDS"
	wait_ready "braid-ds $i" $! "$BRAID_DIR/ds$i.ready"
	i=$((i + 1))
done
i=0 up=0
while [ $i -lt 300 ]; do
	up=$(ctl --json ds list 2>/dev/null | grep -o '"state": "up"' | wc -l)
	[ "$up" -ge "$NDS" ] && break
	sleep 0.1; i=$((i + 1))
done
[ "$up" -ge "$NDS" ] || { ctl ds list; die "only $up of $NDS data servers up after 30 s"; }
ok "braidctl ds list: $up data servers up"
T cluster-up

}

cluster_stop() {
for p in $PIDS; do
	kill "$p" 2>/dev/null
	i=0
	# 30 s: braid-mds may be in a control call to a data server stopped
	# just before it (bounded by its ds_timeout, 20 s)
	while kill -0 "$p" 2>/dev/null && [ $i -lt 300 ]; do
		# a zombie is gone for this purpose: wait reaps it below
		grep -q '^State:.*Z' /proc/$p/status 2>/dev/null && break
		sleep 0.1; i=$((i + 1))
	done
	if [ $i -ge 300 ]; then
		fail "daemon $p ignored SIGTERM for 30 s"
		# where each of its threads waits, for the record
		for t in /proc/$p/task/*; do
			echo "thread ${t##*/} $(cat $t/comm) wchan $(cat $t/wchan) syscall $(cut -d' ' -f1 $t/syscall)"
			sed 's/^/    /' $t/stack 2>/dev/null | head -8
		done
		command -v eu-stack > /dev/null && eu-stack -p "$p" 2>&1 | head -150
		kill -9 "$p"
	fi
	wait "$p"; s=$?
	if [ $s = 0 ]; then ok "daemon $p exited 0 on SIGTERM"; else fail "daemon $p exited with status $s on SIGTERM"; fi
done
PIDS=
}
