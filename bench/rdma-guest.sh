# bench/rdma-guest.sh -- the guest side of bench/rdma.sh: soft-RoCE, the
# cluster (tests/linux-client/rdma-cluster.sh), two mounts of the MDS (TCP
# and RDMA), then ROUNDS rounds of a MIB MiB WRITE and READ through each,
# the order alternating; one "@@BENCH round xprt op mib seconds
# ds_user_s ds_sys_s" line per measurement.
FAILS=0
PIDS=""
. /files/rdma-cluster.sh
rxe_up
# the data server's store: O_DIRECT on ext2 on a ramdisk (brd) when
# DIRECT=1, so READs come into its registered read buffers and go by RDMA
# Write from there (no copy); else the guest's tmpfs, through the page
# cache (a copy into a registered buffer before each RDMA Write)
if [ "${DIRECT:-1}" = 1 ]; then
	# room for every round's files: removed objects go back to the store
	# once their layouts are returned, not at rm
	ramdisk_store "$BRAID_DIR/ds1" $((MIB * 2 * ROUNDS + 64))
	echo "data server store: ext2 on /dev/ram0, O_DIRECT"
fi
cluster_start
DS=$(pidof braid-ds) || die "no braid-ds"
HZ=100 # USER_HZ: /proc/PID/stat's clock ticks
cpu() { awk '{ print $14, $15 }' /proc/$DS/stat; } # user, system ticks
now() { awk '{ print $1 }' /proc/uptime; }
# one mount at a time: Linux 6.1 finds the same client ID (same owner) for
# a second mount of the server and shares the first mount's client,
# whatever its transport (NFSv4.1 trunking discovery)
mnt() { # XPRT: mount /mnt over it
	case $1 in
	tcp) nfs-mount "$GUEST_IP:$MDS_PORT" / /mnt vers=4.1 || die "mount over TCP";;
	rdma) nfs-mount "$GUEST_IP:20049" / /mnt vers=4.1,proto=rdma || die "mount over RDMA";;
	esac
	x=$(awk '$1 == "xprt:" { print $2; exit }' /proc/self/mountstats)
	[ "$x" = "$1" ] || die "mounted over $1 but mountstats say xprt: $x"
}
# measure ROUND XPRT OP CMD...: one @@BENCH line
measure() {
	r=$1 x=$2 op=$3
	shift 3
	c0=$(cpu) t0=$(now)
	"$@" 2>/dev/null || die "$x $op: $*"
	c1=$(cpu) t1=$(now)
	echo "@@BENCH $r $x $op $MIB $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
		"$(echo $c0 $c1 | awk -v hz=$HZ '{ print ($3 - $1) / hz, ($4 - $2) / hz }')"
}
r=1
while [ $r -le "$ROUNDS" ]; do
	order="tcp rdma"
	[ $((r % 2)) = 0 ] && order="rdma tcp"
	for x in $order; do
		mnt $x
		f=/mnt/bench.$r
		measure $r $x write dd if=/dev/zero of=$f bs=1M count="$MIB" conv=fsync
		sync; echo 3 > /proc/sys/vm/drop_caches
		measure $r $x read dd if=$f of=/dev/null bs=1M
		[ $r = 1 ] && 		rm -f $f
		umount /mnt || die "umount ($x)"
	done
	r=$((r + 1))
done
echo "@@ZEROCOPY $(wget -qO- http://$GUEST_IP:20062/metrics | awk '$1 == "braid_rdma_write_zerocopy_bytes_total" { print $2 }')"
cluster_stop
exit $FAILS
