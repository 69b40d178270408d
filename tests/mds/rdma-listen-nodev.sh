#!/bin/sh
# rdma_listen on an address no RDMA device has (127.0.0.1: loopback can
# carry no RDMA device, soft-RoCE included): braid-mds and braid-ds each
# refuse to start, exit 1, and say which setting, which address, why, and
# what to do (issue 17).  Built --without-rdma, they refuse any
# rdma_listen and say so.  The same daemons without rdma_listen start (the
# configuration is otherwise good).
top_builddir=${top_builddir:-.}
why="No such device (no RDMA device has that address"
grep -q '^#define HAVE_RDMA 1' "$top_builddir/config.h" ||
	why="Operation not supported (built --without-rdma)"
t=$(mktemp -d "${TMPDIR:-/tmp}/braid-rdma-nodev.XXXXXX") || exit 99
trap 'rm -rf "$t"' EXIT
od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > "$t/key" && chmod 600 "$t/key" || exit 99
echo "/ *(rw)" > "$t/exports"
fail=0
check() { # NAME PROGRAM CONF: refused at start with the message
	out=$(timeout 20 "$2" -c "$3" 2>&1)
	rc=$?
	case $rc:$out in
	1:*"rdma_listen on 127.0.0.1: $why"*)
		echo "ok: $1 refuses rdma_listen on 127.0.0.1: $out" ;;
	*)
		echo "FAIL: $1: exit $rc, said: $out"
		fail=1 ;;
	esac
}
cat > "$t/mds.conf" <<EOC
[mds]
store_dir = $t/mds
exports = $t/exports
key_file = $t/key
listen = 127.0.0.1:0
rdma_listen = 127.0.0.1:20049
EOC
check braid-mds "$top_builddir/braid-mds" "$t/mds.conf"
cat > "$t/ds.conf" <<EOC
[ds]
store_dir = $t/ds
create = yes
key_file = $t/key
listen = 127.0.0.1:0
rdma_listen = 127.0.0.1:20050
EOC
check braid-ds "$top_builddir/braid-ds" "$t/ds.conf"
# without rdma_listen the same braid-ds starts: READY on its --ready-fd
grep -v rdma_listen "$t/ds.conf" > "$t/ds-tcp.conf"
"$top_builddir/braid-ds" -c "$t/ds-tcp.conf" --ready-fd 3 3> "$t/ready" > "$t/ds.log" 2>&1 &
pid=$!
i=0
while [ $i -lt 100 ] && ! grep -q READY "$t/ready" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
if grep -q READY "$t/ready"; then echo "ok: braid-ds without rdma_listen starts"
else echo "FAIL: braid-ds without rdma_listen did not start: $(cat "$t/ds.log")"; fail=1; fi
kill $pid 2>/dev/null
wait $pid
exit $fail
