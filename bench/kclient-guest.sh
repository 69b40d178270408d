# bench/kclient-guest.sh -- the guest side of bench/kclient.sh (busybox sh):
# braid and NFS-Ganesha mounted side by side (/mnt/braid, /mnt/ganesha,
# both vers=4.1), then ROUNDS rounds of the phases, each phase run on one
# server and then on the other, the order alternating round by round.
# One "@@KC round server phase count seconds" line per measurement, and
# "@@OPS round server phase OP calls rtt_ms exec_ms" for each NFS operation
# the mount sent during it (/proc/self/mountstats: the MDS's, not a data
# server's).  Environment: BRAID_ADDR, GANESHA_ADDR (IP:PORT), MIB, NFILES,
# NSMALL, SMALL_KIB, ROUNDS.
die() { echo "kclient-guest: $*"; exit 1; }
nfs-mount "$BRAID_ADDR" / /mnt/braid vers=4.1 || die "mount braid at $BRAID_ADDR"
nfs-mount "$GANESHA_ADDR" / /mnt/ganesha vers=4.1 || die "mount ganesha at $GANESHA_ADDR"
grep ' nfs4 ' /proc/mounts | sed 's/^/@@MOUNT /'

# the clock: busybox's date has no %N, adjtimex shows microseconds; else
# /proc/uptime (10 ms)
now() { adjtimex 2> /dev/null | awk '$1 == "time.tv_sec:" { s = $2 } $1 == "time.tv_usec:" { u = $2 }
	END { if (s != "") printf "%d.%06d\n", s, u }'; }
case $(now) in
[0-9]*.[0-9]*) CLOCK=adjtimex ;;
*)
	CLOCK=uptime
	now() { read -r up _ < /proc/uptime; echo "$up"; }
	;;
esac
echo "@@CLOCK $CLOCK $(now)"

cold() { sync; echo 3 > /proc/sys/vm/drop_caches; }
# ms_snap SERVER: "OP calls rtt_ms exec_ms" per operation of its mount
ms_snap() {
	awk -v m="/mnt/$1" '$1 == "device" { on = ($5 == m) }
		on && $1 ~ /^[A-Z_0-9]+:$/ && NF >= 9 { sub(":", "", $1); print $1, $2, $8, $9 }' \
		/proc/self/mountstats
}
# measure ROUND SERVER PHASE COUNT CMD...: time CMD (its output discarded)
measure() {
	r=$1 s=$2 p=$3 n=$4
	shift 4
	ms_snap "$s" > /tmp/ms0
	t0=$(now)
	"$@" > /dev/null || die "round $r $s $p: $* failed"
	t1=$(now)
	ms_snap "$s" > /tmp/ms1
	echo "@@KC $r $s $p $n $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')"
	awk -v pre="@@OPS $r $s $p" 'NR == FNR { c[$1] = $2; t[$1] = $3; e[$1] = $4; next }
		$2 > c[$1] { print pre, $1, $2 - c[$1], $3 - t[$1], $4 - e[$1] }' /tmp/ms0 /tmp/ms1
}
creates() { # DIR: NFILES empty files
	i=0
	while [ $i -lt "$NFILES" ]; do
		: > "$1/f$i" || return 1
		i=$((i + 1))
	done
}

# the small files' contents, and the name lists (so that stat and the
# small-file read do not list the directory first).  xargs runs
# /bin/busybox, not the applet: busybox 1.35's xargs runs a "nofork"
# applet such as stat in its own process and garbles the names of its
# second batch ("f153/c/f1446").
mkdir -p /tmp/small
i=0
while [ $i -lt "$NSMALL" ]; do
	dd if=/dev/urandom of=/tmp/small/s$i bs=1024 count="$SMALL_KIB" 2> /dev/null
	i=$((i + 1))
done
for s in braid ganesha; do
	awk -v n="$NFILES" -v d="/mnt/$s/kc/c" 'BEGIN { for (i = 0; i < n; i++) print d "/f" i }' > /tmp/cnames.$s
	awk -v n="$NSMALL" -v d="/mnt/$s/kc/s" 'BEGIN { for (i = 0; i < n; i++) print d "/s" i }' > /tmp/snames.$s
done

r=1
while [ $r -le "$ROUNDS" ]; do
	order="braid ganesha"
	[ $((r % 2)) = 0 ] && order="ganesha braid"
	for s in $order; do
		rm -rf /mnt/$s/kc
		mkdir -p /mnt/$s/kc/c /mnt/$s/kc/s || die "mkdir on $s"
	done
	cold
	for s in $order; do
		measure $r $s write "$MIB" dd if=/dev/zero of=/mnt/$s/kc/big bs=1M count="$MIB" conv=fsync
	done
	for s in $order; do
		cold
		measure $r $s read "$MIB" dd if=/mnt/$s/kc/big of=/dev/null bs=1M
	done
	for s in $order; do
		measure $r $s create "$NFILES" creates /mnt/$s/kc/c
	done
	for s in $order; do
		cold
		measure $r $s ls "$NFILES" ls -l /mnt/$s/kc/c
	done
	for s in $order; do
		cold
		measure $r $s stat "$NFILES" xargs /bin/busybox stat < /tmp/cnames.$s
	done
	for s in $order; do
		cold
		measure $r $s smallwrite "$NSMALL" cp /tmp/small/* /mnt/$s/kc/s/
	done
	for s in $order; do
		cold
		measure $r $s smallread "$NSMALL" xargs /bin/busybox cat < /tmp/snames.$s
	done
	for s in $order; do
		cold
		measure $r $s remove "$NFILES" rm -rf /mnt/$s/kc/c
	done
	r=$((r + 1))
done
for s in braid ganesha; do rm -rf /mnt/$s/kc; done
umount /mnt/braid || die "umount braid"
umount /mnt/ganesha || die "umount ganesha"
exit 0
