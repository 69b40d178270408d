# rdma-guest.sh -- guest workload of rdma-qemu-v41.sh: braid-mds and its
# braid-ds data servers run INSIDE the guest, beside the stock kernel
# client, on soft-RoCE (rdma_rxe over eth0: the host kernel has no RDMA).
#
# Run by clientvm --no-mount under busybox sh as root.  /files holds the
# daemons' configs (mds.conf, ds1.conf ...), cluster.key, exports,
# posix.sh and vmtool; braid-mds, braid-ds, braidctl, rdma-probe (over
# RDMA) and rdma-core's programs are on PATH (clientvm --bin).  From the
# host (--env):
#   GUEST_IP     the guest's address, where everything listens (10.0.2.15)
#   MDS_PORT     braid-mds's TCP port;  NDS  the data servers
#   BRAID_DIR    where the configs put the key, exports and stores
#   EXPECT_XPRT  tcp | rdma: the transport mountstats must show
#   BIG_MIB      the file written and read back through layouts (16)
#   POSIX_DIRN, POSIX_LARGE_MIB  posix.sh's sizes
# and from clientvm: SERVER PORT MOUNT_OPTS MNT (the mount's address, port
# and options).  Steps:
#   rxe     rdma link add rxe0 on eth0; ibv_devinfo sees it active; an
#           rping between two processes of the guest over 10.0.2.15
#           (rxe's loopback: both ends on the one device).
#   start   braid-mds, then the data servers (each READY on its
#           --ready-fd); braidctl ds list shows them all up.
#   posix   the POSIX workload (posix.sh) on its own mount.
#   big     a BIG_MIB file of random bytes under /striped (1 MiB segments
#           across the data servers), read back after drop_caches: byte-
#           exact; mountstats: xprt EXPECT_XPRT, pnfs=LAYOUT_FLEX_FILES,
#           LAYOUTGETs, every READ and WRITE through a layout (braid-mds
#           refuses data I/O anyway: data_io = refuse); braidctl's layout
#           of the file (judged on the host: the @@LAYOUT line);
#           the client's transports (sunrpc sysfs): over RDMA, each data
#           server's RDMA port among them, and each data server moved >=
#           4 MiB by RDMA Read and by RDMA Write, braid-mds sent reply
#           chunks (their metrics); braidctl recall of the file: the
#           client returns the layout (CB_LAYOUTRECALL over the RDMA
#           back channel, RFC 8167; braid-mds counts it returned).
#           The last data server's store is ext2 on a ramdisk with
#           direct_io: its READ data must go by RDMA Write straight from
#           its registered read buffers (braid_rdma_write_zerocopy_bytes).
#   probe   (EXPECT_XPRT=rdma) rdma-probe, our own RPC-over-RDMA client,
#           against braid-mds's RDMA port (the mount's PORT), NFSv3 and
#           MOUNT v3: MNT; WRITE of 1 MiB by read chunk and READ by write
#           chunk, byte-exact; 600 CREATEs and READDIRPLUS (64 KiB pages)
#           by reply chunk (RDMA_NOMSG), every name back; the granted
#           credits (64) of NULLs in flight; ERR_VERS for version 2, ERR_CHUNK for
#           RDMA_MSGP, a bad list discriminator, 65 write segments and a
#           4 MiB read chunk; an error reply or a disconnect for bogus
#           steering tags or offsets in read and write chunks, an inline
#           message over 4 KiB and twice the credits at once, each followed
#           by a new connection that is served (rdma-probe.c's header has
#           the details); it
#           must exit 0, and braid-mds must have counted the RDMA_ERRORs it
#           sent (braid_rdma_errors_sent_total).
#   stop    SIGTERM to every daemon, the data servers first: each must
#           exit with status 0.
# Ends with RDMA-GUEST-OK and status 0 only if every check passed.

FAILS=0
W=rdma.$(hostname)
PIDS=""

# shellcheck source=rdma-cluster.sh
. /files/rdma-cluster.sh

metric() { # HOST:PORT NAME LABELS -> the sample's value (0 if none)
	n=$2; [ -n "$3" ] && n="$2{$3}"
	wget -qO- "http://$1/metrics" 2>/dev/null |
		awk -v n="$n" 'index($0, n " ") == 1 { v = $2 } END { print v + 0 }'
}

# ------------------------------------------------------------------ rxe, start
rxe_up
# the last data server's store: ext2 on a ramdisk, O_DIRECT (direct_io in
# its config): its READs come into its registered read buffers and go to
# the client by RDMA Write from there, without a copy
ramdisk_store "$BRAID_DIR/ds$NDS" 96
cluster_start

# ------------------------------------------------------------------ posix
step posix "the POSIX workload (posix.sh) over $MOUNT_OPTS"
# a hung mount never returns (hard): show what the daemons said before the
# host's timeout kills the guest
( sleep "${RDMA_WATCHDOG:-300}"; echo "== watchdog: still running after ${RDMA_WATCHDOG:-300}s"
  logs; echo "---- the daemons' other RDMA lines"; grep -h 'rdma: [^r]' "$BRAID_DIR"/*.log | tail -40
  cat /proc/self/mountstats | grep -E 'xprt:|^device' ) &
wd=$!
( cd / && EXPORT=/ sh /files/posix.sh )
prc=$?
kill $wd 2>/dev/null
if [ $prc = 0 ]; then ok "posix.sh passed"; else fail "posix.sh exited with status $prc"; fi

# ------------------------------------------------------------------ big
step big "a $BIG_MIB MiB file under /striped, read back through layouts"
nfs-mount "$SERVER:$PORT" / "$MNT" "$MOUNT_OPTS" || die "mount $SERVER:$PORT/ on $MNT ($MOUNT_OPTS)"
echo "mount: $(grep " $MNT nfs4 " /proc/mounts)"
F=$MNT/striped/$W/f$BIG_MIB
mkdir -p "$MNT/striped/$W" || die "mkdir $MNT/striped/$W"
dd if=/dev/urandom of=/tmp/big bs=1M count="$BIG_MIB" 2>/dev/null || die "dd to guest /tmp"
sum=$(md5 /tmp/big)
T big-write-start
dd if=/tmp/big of="$F" bs=1M conv=fsync 2>/dev/null || fail "dd $BIG_MIB MiB to $F"
T big-write-done
dropcaches
T big-read-start
if cmp /tmp/big "$F"; then ok "$F: the $BIG_MIB MiB read back are the bytes written ($sum)"
else fail "$F: read back differs from the bytes written"; fi
T big-read-done
rm -f /tmp/big
# the back channel over RDMA (RFC 8167): a recall of the file's layouts
# goes to the client as CB_LAYOUTRECALL on its RDMA connection, and the
# client returns them (braid-mds counts the recall returned, not revoked)
if [ "$EXPECT_XPRT" = rdma ]; then
	mm=$GUEST_IP:20061
	cat "$F" > /dev/null # holds a read layout again
	r0=$(metric $mm braid_mds_layout_recalls_completed_total 'outcome="returned"')
	ctl recall "/striped/$W/f$BIG_MIB" || fail "braidctl recall /striped/$W/f$BIG_MIB"
	i=0 r1=$r0
	while [ $i -lt 150 ] && [ "$r1" -le "$r0" ]; do
		sleep 0.2; i=$((i + 1))
		r1=$(metric $mm braid_mds_layout_recalls_completed_total 'outcome="returned"')
	done
	if [ "$r1" -gt "$r0" ]; then ok "CB_LAYOUTRECALL over RDMA: the client returned the layout"
	else fail "the recalled layout was not returned within 30 s (CB_LAYOUTRECALL over RDMA)"; fi
fi
# on one line (the console's log stays short)
echo "@@LAYOUT $(ctl --json layout "/striped/$W/f$BIG_MIB" 2>&1 | tr '\n' ' ' | tr -s ' ')"
# mountstats of this mount: the transport, the layout driver, the counters
awk -v on=" mounted on $MNT " '/^device /{m = index($0, on) > 0} m' /proc/self/mountstats > /tmp/ms
echo "--- mountstats of $MNT"; grep -E 'xprt:|nfsv4:|events:| (READ|WRITE|LAYOUTGET|GETDEVICEINFO):' /tmp/ms
xprt=$(awk '$1 == "xprt:" { print $2; exit }' /tmp/ms)
if [ "$xprt" = "$EXPECT_XPRT" ]; then ok "mountstats: xprt: $xprt"
else fail "mountstats: xprt: '$xprt', expected $EXPECT_XPRT"; fi
if grep -q 'nfsv4:.*pnfs=LAYOUT_FLEX_FILES' /tmp/ms; then ok "mountstats: pnfs=LAYOUT_FLEX_FILES"
else fail "mountstats: no pnfs=LAYOUT_FLEX_FILES"; fi
op() { awk -v o="$1:" '$1 == o { print $2; exit }' /tmp/ms; }
lg=$(op LAYOUTGET)
if [ "${lg:-0}" -gt 0 ]; then ok "mountstats: LAYOUTGET $lg"; else fail "mountstats: no LAYOUTGET"; fi
# the events line's last two counters: READs and WRITEs sent through a layout
set -- $(awk '$1 == "events:" { print $(NF - 1), $NF; exit }' /tmp/ms)
pr=${1:-0} pw=${2:-0} r=$(op READ) w=$(op WRITE)
if [ "${r:-0}" -le "$pr" ] && [ "${w:-0}" -le "$pw" ] && [ "$pw" -gt 0 ]; then
	ok "mountstats: READ $r and WRITE $w, all through layouts (pnfs_read $pr, pnfs_write $pw)"
else
	fail "mountstats: READ ${r:-0} WRITE ${w:-0} but pnfs_read $pr pnfs_write $pw"
fi
echo "--- the client's transports (sunrpc sysfs)"
for x in /sys/kernel/sunrpc/xprt-switches/switch-*/xprt-*; do
	[ -d "$x" ] && echo "transport ${x##*/} $(cat $x/dstaddr 2>/dev/null)" \
		"$(grep -h dst_port $x/xprt_info 2>/dev/null)"
done > /tmp/xprts
cat /tmp/xprts
# each data server: the client reached it over the mount's transport (its
# RDMA port over RDMA: the MDS gave the client RDMA addresses), and it
# moved file data that way (WRITE by read chunks, READ by write chunks)
i=1
while [ $i -le $NDS ]; do
	if [ "$EXPECT_XPRT" = rdma ]; then
		dp=$((20049 + i))
		if grep -q "^transport xprt-[0-9]*-rdma $GUEST_IP dst_port=$dp\$" /tmp/xprts; then
			ok "data server $i: the client reached it over RDMA (port $dp)"
		else fail "data server $i: no RDMA transport of the client to port $dp"; fi
		m=$GUEST_IP:$((20061 + i))
		rb=$(metric $m braid_rdma_bytes_total 'kind="read_chunk"')
		wb=$(metric $m braid_rdma_bytes_total 'kind="write_chunk"')
		if [ "$rb" -ge 4194304 ] && [ "$wb" -ge 4194304 ]; then
			ok "data server $i: $rb bytes in by RDMA Read, $wb out by RDMA Write"
		else fail "data server $i: RDMA Read $rb and Write $wb bytes (want 4 MiB each at least)"; fi
		if [ $i = "$NDS" ]; then
			zc=$(metric $m braid_rdma_write_zerocopy_bytes_total '')
			if [ "$zc" -ge 4194304 ]; then
				ok "data server $i (O_DIRECT store): $zc bytes by RDMA Write from its registered buffers, no copy"
			else fail "data server $i (O_DIRECT store): $zc bytes without a copy (want 4 MiB at least)"; fi
		fi
	fi
	i=$((i + 1))
done
if [ "$EXPECT_XPRT" = rdma ]; then
	m=$GUEST_IP:20061
	rc=$(metric $m braid_rdma_bytes_total 'kind="reply_chunk"')
	nc=$(metric $m braid_rdma_connections_accepted_total '')
	if [ "$rc" -gt 0 ] && [ "$nc" -gt 0 ]; then
		ok "braid-mds: $nc RDMA connections, $rc bytes of replies by reply chunk"
	else fail "braid-mds: $nc RDMA connections, $rc reply-chunk bytes"; fi
fi
rm -rf "$MNT/striped/$W"
cd /
timeout 20 umount "$MNT" || fail "umount $MNT"

# ------------------------------------------------------------------ probe
if [ "$EXPECT_XPRT" = rdma ]; then
	step probe "rdma-probe: our own RPC-over-RDMA client against braid-mds ($GUEST_IP:$PORT)"
	e0=$(metric $GUEST_IP:20061 braid_rdma_errors_sent_total '')
	timeout 120 rdma-probe "$GUEST_IP" "$PORT"
	prc=$?
	T probe-done
	if [ $prc = 0 ]; then ok "rdma-probe passed"
	else fail "rdma-probe exited with status $prc (its FAIL lines above)"; fi
	e1=$(metric $GUEST_IP:20061 braid_rdma_errors_sent_total '')
	if [ $((e1 - e0)) -ge 5 ]; then ok "braid-mds: $((e1 - e0)) RDMA_ERRORs sent to the probe"
	else fail "braid-mds: braid_rdma_errors_sent_total went from $e0 to $e1 (the probe drew 5 at least)"; fi
fi

# ------------------------------------------------------------------ stop
step stop "stop the daemons (data servers first)"
cluster_stop
T done
if [ $FAILS -ne 0 ]; then
	logs
	echo "RDMA-GUEST-FAILED: $FAILS check(s) failed"
	exit 1
fi
echo RDMA-GUEST-OK
exit 0
