# guest.sh -- the checks of one Linux-client run, in one booted guest: the
# POSIX workload and pNFS flexfiles through the stock Linux NFSv4.1/4.2
# client.
#
# Guest workload for tests/linux-client/clientvm, run with --no-mount by
# run.sh, which starts braid-mds (data_io = refuse: READ and WRITE to the
# MDS fail, so every byte must go through a layout) and its data servers,
# and checks from the host what the guest cannot see (where the bytes
# landed, per data server).  Under busybox sh as root.
#
# GUEST_CHECKS lists the checks, run in that order; each mounts
# $SERVER:$PORT/ on $MNT with $MOUNT_OPTS itself and unmounts it when done,
# so each has its own mount (and mountstats):
#   posix   /files/posix.sh, the POSIX workload (its header says what it
#           checks), on the export / (EXPORT=/).
#   data    write files of every size in PNFS_SIZES (MiB) under /whole
#           (layout=whole) and /striped (layout=segments, 1 MiB
#           segments), and PNFS_SPREAD 1 MiB files under /whole; read all
#           back after drop_caches and compare.  The client's dirty page
#           limits are lowered meanwhile (PNFS_DIRTY_KIB; see run.sh).
#   mirror  write a PNFS_MIRROR_MIB file under /mirrored (whole, 2
#           mirrors), then read it back 1 MiB at a time with a pause
#           between the lines "@@PNFS read-start" and "@@PNFS read-done":
#           the host kills the data server serving it meanwhile; the read
#           must give the bytes written.  Then a new 8 MiB file is written
#           with that server gone; after "@@PNFS restart-killed" the host
#           starts it again, and the guest waits until every data server's
#           metrics answer, then reads the new file back.
#   lost    under /mirrored (2 mirrors), write LOST_FILES files of 4 MiB;
#           print "@@PNFS lost-start DIR" and wait until a data server's
#           metrics stop answering (the host SIGKILLs one holding them, for
#           good); then read each file back, append 1 MiB to it and create
#           a new 1 MiB file, each dd timed ("@@PNFS lost-worst S": the
#           slowest, at most LOST_BOUND seconds), read everything back
#           after drop_caches; print "@@PNFS lost-done" (the host starts
#           the server again and checks its stale copies are resilvered)
#           and wait for its metrics; print "@@PNFS lost2-start" (the host
#           SIGKILLs another data server and declares it lost), wait until
#           braid-mds's metrics say the rebuild is done, and read every
#           file back again.
#   unreach under /whole and /mirrored, UNREACH_FILES files of 2 MiB each,
#           written with dd conv=fsync and read back after drop_caches,
#           while data server 1 is one this client cannot reach (run.sh);
#           every dd within UNREACH_BOUND seconds ("@@PNFS unreach-worst").
#   enospc  under /full (layout=whole; run.sh gives the data servers 48
#           MiB stores), write ENOSPC_MIB MiB files with dd conv=fsync
#           until three in a row fail; each failure must be ENOSPC within
#           ENOSPC_BOUND seconds; then read every file written back, rm
#           the failed ones and three more, and write a new one (within
#           10 s: the space comes back once the removed files' layouts are
#           returned and their objects gone).
#   trunk   write and read a PNFS_TRUNK_MIB file under /striped, with the
#           data servers on two guest NICs; print what the client has
#           connected (sunrpc's sysfs, /proc/fs/nfsfs/servers, netstat).
#   nfs3    /files/posix.sh over NFSv3 (vers=3) from NFS3_SERVER, with
#           rpcbind and rpc.statd started in the guest so that its fcntl
#           locks go through the kernel's lockd and NLM (check_nfs3).
#   nfs40   /files/posix.sh over NFSv4.0 (vers=4.0).
#   deleg   two clients: an NFSv4.0 mount's open for write recalls an
#           NFSv4.1 mount's read delegation (check_deleg).
#   krb5    Kerberos (check_krb5 below): rpc.gssd started on run.sh's
#           realm files; / mounted with sec=krb5, krb5i and krb5p in turn,
#           each: a user with a ticket creates, writes and reads (its files
#           its own), a user without one gets EACCES, the POSIX workload
#           (shortened) runs as root; /k5p (krb5p only) mounts with
#           sec=krb5p and not with sec=sys.
#
# The pNFS checks write files from random bytes staged 16 MiB at a time in
# the guest's /tmp, in whole 1 MiB write(2)s, and keep the md5 of each 16
# MiB chunk; reading back compares every chunk.  (One stream through tee
# and md5sum crawls under UML, whose every small pipe read and write is a
# trip through the host; and whole blocks make the client send every page
# once, so the host can count each data server's bytes exactly.)
#
# Output, for the host (run.sh): a check's lines lie between "@@CHECK begin
# NAME" and "@@CHECK end NAME FAILED" (the number of its checks that
# failed).  Every check prints "ok: ..." or "FAIL: ..."; lines "@@PNFS FILE
# <path> <bytes> <digest>" list what was written (the host asks braid
# where it went); a pNFS check's mount's /proc/self/mountstats section is
# printed between "@@PNFS mountstats-begin" and "@@PNFS mountstats-end".
# Before the first check and after each, every daemon's counters that the
# host judges are printed, one line each: "@@M AFTER DAEMON SAMPLE VALUE"
# (AFTER: "start" or the check's name; DAEMON: mds, ds1, ds2, ...), so the
# host can tell each check's share.  At the end, "CHECKS-OK" and status 0
# only if every check passed.
#
# Variables from clientvm: SERVER PORT MNT MOUNT_OPTS; from run.sh:
# GUEST_CHECKS PNFS_SIZES PNFS_SPREAD PNFS_DIRTY_KIB PNFS_MIRROR_MIB EC_MIB
# PNFS_TRUNK_MIB ENOSPC_MIB ENOSPC_BOUND LOST_FILES LOST_BOUND UNREACH_FILES
# UNREACH_BOUND PNFS_METRICS (DAEMON=host:port as the guest sees them)
# EXPECT_VERS KRB5_USER KRB5_UID KRB5_GID KRB5_NOTICKET_UID KRB5_MIB
# KRB5_POSIX_DIRN KRB5_POSIX_MIB KRB5_DEBUG.

FAILS=0
CH=16 # MiB per chunk
T() { read up idle < /proc/uptime; echo "@@CLIENTVM T=$up $*"; }
step() { echo "== $*"; T "$1"; }
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
die() {
	echo "FAIL: $* (cannot go on)"
	echo "--- dmesg (tail)"; dmesg | tail -30
	echo "CHECKS-FAILED"
	exit 1
}
eq() {
	if [ "$2" = "$3" ]; then ok "$1 = '$3'"; else fail "$1: got '$2', expected '$3'"; fi
}
dropcaches() { sync; echo 3 > /proc/sys/vm/drop_caches; }
size() { stat -c %s "$1"; }

# put FILE MIB: write MIB MiB of random bytes to FILE, through one open
# and in whole 1 MiB write(2)s; prints the md5 of each 16 MiB chunk (the
# last may be shorter).  One open: a file reopened while written data
# awaits its COMMIT can have some of it sent again.
put() {
	pf=$1 pn=$2
	rm -f /tmp/put.sums
	{
		pi=0
		while [ $pi -lt "$pn" ]; do
			pc=$CH; [ $((pn - pi)) -lt $pc ] && pc=$((pn - pi))
			dd if=/dev/urandom of=/tmp/chunk bs=1M count=$pc 2>/dev/null || exit 1
			md5sum < /tmp/chunk | cut -d' ' -f1 >> /tmp/put.sums
			cat /tmp/chunk || exit 1
			pi=$((pi + pc))
		done
	} | dd of="$pf" bs=1M iflag=fullblock 2>/dev/null
	prc=$?
	rm -f /tmp/chunk
	[ $prc = 0 ] || { echo "put: dd to $pf failed ($prc)" >&2; return 1; }
	[ "$(wc -l < /tmp/put.sums)" -eq $(((pn + CH - 1) / CH)) ] ||
		{ echo "put: the random bytes for $pf were not all made" >&2; return 1; }
	echo $(cat /tmp/put.sums)
}

# sums FILE MIB [PAUSE]: the md5 of each 16 MiB chunk of FILE as read
# back, through one open; with PAUSE, 1 MiB at a time (an open each),
# sleeping PAUSE microseconds after each
sums() {
	sf=$1 sn=$2
	if [ -n "$3" ]; then
		sj=0
		while [ $sj -lt "$sn" ]; do
			dd if="$sf" bs=1M skip=$sj count=1 iflag=fullblock 2>/dev/null ||
				echo "sums: read error at $sj MiB" >&2
			usleep "$3"; sj=$((sj + 1))
		done
	else
		dd if="$sf" bs=64k 2>/dev/null || echo "sums: read error in $sf" >&2
	fi | {
		si=0
		while [ $si -lt "$sn" ]; do
			sc=$CH; [ $((sn - si)) -lt $sc ] && sc=$((sn - si))
			dd of=/tmp/rchunk bs=1M count=$sc iflag=fullblock 2>/dev/null
			printf '%s ' "$(md5sum < /tmp/rchunk | cut -d' ' -f1)"
			si=$((si + sc))
		done
		rm -f /tmp/rchunk
		cat > /dev/null # anything past MIB MiB: it would not match
	}
	echo
}

# written FILE MIB SUMS: tell the host (path under the mount, bytes, and a
# digest of the chunk sums)
written() {
	echo "@@PNFS FILE ${1#$MNT/} $(($2 * 1048576)) $(echo "$3" | md5sum | cut -d' ' -f1)"
}

# verify FILE MIB SUMS (after drop_caches): size and content read back
verify() {
	eq "$1: size" "$(size "$1")" $(($2 * 1048576))
	T "read-start $1"
	vgot=$(echo $(sums "$1" "$2"))
	if [ "$vgot" = "$3" ]; then
		ok "$1: the $2 MiB read back are the bytes written"
	else
		fail "$1: read back differs: chunk md5s $vgot, written $3"
	fi
	T "read-done $1"
}

mountstats() {
	echo "@@PNFS mountstats-begin"
	awk -v on=" mounted on $MNT " '/^device /{m = index($0, on) > 0} m' /proc/self/mountstats
	echo "@@PNFS mountstats-end"
}

# what the client connected: the transports of every RPC client (sunrpc's
# sysfs, Linux 5.14 and later: dstaddr, and dst_port in xprt_info), the
# NFS clients (MDS and data servers) and the TCP connections
connections() {
	echo "@@PNFS nfsfs-servers-begin"
	cat /proc/fs/nfsfs/servers
	echo "@@PNFS nfsfs-servers-end"
	echo "@@PNFS sunrpc-begin"
	for x in /sys/kernel/sunrpc/xprt-switches/switch-*/xprt-*; do
		[ -d "$x" ] || continue
		echo "xprt $x $(cat $x/dstaddr 2>/dev/null) $(cat $x/xprt_info 2>/dev/null | tr '\n' ' ')"
	done
	echo "@@PNFS sunrpc-end"
	echo "@@PNFS netstat-begin"
	netstat -tn 2>/dev/null | grep ESTABLISHED
	echo "@@PNFS netstat-end"
	echo "--- kernel messages about transports"
	dmesg | grep -i -e sunrpc -e trunk | tail -20
}

# PNFS_TRACE=1 (a diagnosis, not a check): the client's layout, write and
# commit tracepoints, and kprobes on the paths by which it writes data
# again, are recorded; trace_report prints, between "@@PNFS trace-begin"
# and "@@PNFS trace-end", each event's count and the rarer events' lines.
TR=/sys/kernel/tracing
trace_start() {
	[ "$PNFS_TRACE" = 1 ] || return 0
	mount -t tracefs nodev $TR 2>/dev/null
	[ -e $TR/trace ] || { echo "trace: no tracefs"; return 0; }
	modprobe nfs_layout_flexfiles 2>/dev/null
	echo 65536 > $TR/buffer_size_kb
	for e in nfs4/nfs4_layoutget nfs4/pnfs_update_layout nfs4/nfs4_layoutreturn \
		nfs4/nfs4_layoutreturn_on_close nfs4/nfs4_layoutstats nfs4/nfs4_layouterror \
		nfs4/nfs4_layoutcommit nfs4/nfs4_cb_layoutrecall_file nfs4/nfs4_pnfs_write \
		nfs4/nfs4_pnfs_commit_ds nfs4/ff_layout_write_error nfs4/ff_layout_commit_error \
		nfs4/pnfs_mds_fallback_pg_init_write nfs4/pnfs_mds_fallback_write_done \
		nfs/nfs_initiate_write nfs/nfs_initiate_commit nfs/nfs_commit_done \
		nfs/nfs_write_error nfs/nfs_comp_error sunrpc/xprt_disconnect_force \
		sunrpc/xprt_retransmit; do
		[ -e $TR/events/$e/enable ] && echo 1 > $TR/events/$e/enable
	done
	for k in pnfs_generic_prepare_to_resend_writes nfs_commit_resched_write \
		pnfs_mark_layout_stateid_invalid pnfs_error_mark_layout_for_return \
		ff_layout_cancel_io pnfs_mark_matching_lsegs_return mark_lseg_invalid \
		nfs_retry_commit nfs_mark_request_dirty nfs_async_write_reschedule_io \
		pnfs_write_done_resend_to_mds; do
		echo "p:braid/$k $k" >> $TR/kprobe_events 2>/dev/null
	done
	echo "r:braid/ff_lseg_merge_ret ff_lseg_merge ret=\$retval" >> $TR/kprobe_events 2>/dev/null
	[ -d $TR/events/braid ] && echo 1 > $TR/events/braid/enable
	echo "trace: $(ls $TR/events/braid 2>/dev/null | tr '\n' ' ')"
	echo 1 > $TR/tracing_on
}
trace_report() {
	[ "$PNFS_TRACE" = 1 ] && [ -e $TR/trace ] || return 0
	echo 0 > $TR/tracing_on
	echo "@@PNFS trace-begin"
	grep -v '^#' $TR/trace > /tmp/trace.txt
	awk '{for (i = 1; i <= NF; i++) if ($i ~ /^[a-z_0-9]+:$/ && i > 3) {print $i; break}}' \
		/tmp/trace.txt | sort | uniq -c
	echo "-- merges: $(grep -c 'ff_lseg_merge_ret.*ret=0x1' /tmp/trace.txt)"
	grep -v -e nfs_initiate_write -e nfs4_pnfs_write -e nfs_initiate_commit \
		-e nfs_commit_done -e 'found cached' -e '(exit)' -e 'ret=0x0' \
		-e nfs4_layoutcommit -e nfs_mark_request_dirty /tmp/trace.txt | head -3000
	echo "-- writes of the same offset more than once"
	grep nfs_initiate_write /tmp/trace.txt | sed -n "s/.*fileid=\([^ ]*\) .*offset=\([0-9]*\) count=\([0-9]*\).*/\1 \2 \3/p" |
		sort | uniq -c | awk '$1 > 1' | head -40
	echo "@@PNFS trace-end"
}

# mds_metrics_addr: braid-mds's metrics address (PNFS_METRICS' mds=)
mds_metrics_addr() {
	for dm in $PNFS_METRICS; do case $dm in mds=*) echo "${dm#mds=}"; return;; esac; done
}

# snapshot AFTER: the counters of every daemon (PNFS_METRICS) that the host
# judges, as "@@M AFTER DAEMON SAMPLE VALUE" lines; "@@M-FAIL AFTER DAEMON"
# for one that does not answer
snapshot() {
	for dm in $PNFS_METRICS; do
		if wget -q -O /tmp/metrics "http://${dm#*=}/metrics" 2>/dev/null; then
			grep -E '^braid_(ds_id|ds_nospc_total|mds_ec_[a-z_]*|ds_ec_[a-z_]*|ds_(written|read)_bytes_total|mds_layoutgets_de(layed|ferred)_total|nfs4_op(s|_errors)_total|rpc_(requests|errors)_total|mds_(write_)?delegations_total|rpcsec_gss_(contexts_created|init_failures|rejected)_total)[ {]' \
				/tmp/metrics | sed "s/^/@@M $1 ${dm%%=*} /"
		else
			echo "@@M-FAIL $1 ${dm%%=*}"
		fi
	done
	rm -f /tmp/metrics
}

# pnfs_mount: $SERVER:$PORT/ on $MNT for one pNFS check, at the version
# expected
pnfs_mount() {
	nfs-mount "$SERVER:$PORT" / "$MNT" "$MOUNT_OPTS" || die "mount $SERVER:$PORT/ on $MNT ($MOUNT_OPTS)"
	T mounted-by-workload
	trace_start
	mline=$(grep " $MNT nfs4 " /proc/mounts)
	[ -n "$mline" ] || die "$MNT is not an nfs4 mount"
	echo "mount: $mline"
	if [ -n "$EXPECT_VERS" ]; then
		case ",${mline#* nfs4 }," in
		*,vers=$EXPECT_VERS,*) ok "negotiated vers=$EXPECT_VERS";;
		*) fail "mount is not vers=$EXPECT_VERS: $mline";;
		esac
	fi
}

# pnfs_umount: the mount's trace and mountstats, then unmount it
pnfs_umount() {
	trace_report
	mountstats
	cd /
	if umount "$MNT"; then ok "umount"; else fail "umount $MNT"; fi
}

check_posix() {
	step posix "the POSIX workload (posix.sh)"
	[ -r /files/posix.sh ] || die "/files/posix.sh missing (run.sh copies it for the posix check)"
	( cd / && EXPORT=/ sh /files/posix.sh )
	prc=$?
	if [ $prc = 0 ]; then ok "posix.sh passed"; else fail "posix.sh exited with status $prc"; fi
}

# nsm_up: what the kernel's lockd needs in the guest for NFSv3 locks (the
# programs by clientvm --bin): rpcbind, with which lockd registers, and
# rpc.statd, which lockd asks (SM_MON) to watch the server before its
# first lock there.  Once per boot.
NSM_UP=
nsm_up() {
	[ -n "$NSM_UP" ] && return 0
	# libtirpc finds rpcbind at /var/run/rpcbind.sock; rpcbind's own
	# listeners need /etc/services (clientvm --file) for "sunrpc"
	mkdir -p /var
	[ -e /var/run ] || ln -s /run /var/run
	mkdir -p /run/rpcbind /var/lib/nfs/sm /var/lib/nfs/sm.bak
	grep -q '^_rpc:' /etc/passwd || echo '_rpc:x:101:65534::/run/rpcbind:/bin/false' >> /etc/passwd
	grep -q '^nogroup:' /etc/group || echo 'nogroup:x:65534:' >> /etc/group
	grep -q localhost /etc/hosts 2>/dev/null || echo '127.0.0.1 localhost' >> /etc/hosts
	rpcbind -w || { echo "rpcbind failed"; return 1; }
	rpc.statd --no-notify -F > /tmp/statd.log 2>&1 &
	ni=0
	until rpcinfo 2>/dev/null | grep -q '^ *100024 '; do
		ni=$((ni + 1))
		[ $ni -lt 100 ] || { echo "rpc.statd never registered:"; cat /tmp/statd.log; return 1; }
		usleep 100000
	done
	rpcinfo
	NSM_UP=1
}

# xlock HOLD TRY HOLDNAME TRYNAME: a process holds a write lock on bytes
# 0-99 of $xl through the mount HOLD while another asks for bytes 50-59
# through the mount TRY: refused (the server's conflict); then released
xlock() {
	rm -f "$1/$xl.release" /tmp/xl.out
	/files/vmtool lock "$1/$xl" 0 100 > /tmp/xl.out 2>&1 &
	xp=$!
	xi=0
	while ! grep -q locked /tmp/xl.out && [ $xi -lt 300 ]; do usleep 100000; xi=$((xi + 1)); done
	if grep -q locked /tmp/xl.out; then
		/files/vmtool trylock "$2/$xl" 50 10
		eq "$4 F_SETLK on bytes an $3 lock holds is refused: status" $? 1
	else
		fail "the $3 lock was never taken: $(cat /tmp/xl.out)"
	fi
	touch "$1/$xl.release"
	wait $xp
	eq "the $3 lock holder released and exited: status" $? 0
}

# check_nfs3: the POSIX workload over NFSv3 at NFS3_SERVER (a --fwd
# address whose port 111 is run.sh's rpcb-fixed.py: lockd finds braid-mds's
# NLM there), its fcntl locks through lockd and NLM
check_nfs3() {
	step nfs3 "NFSv3 with NLM: the POSIX workload over vers=3"
	nsm_up || { fail "rpcbind or rpc.statd did not start in the guest"; return; }
	( cd / && SERVER=$NFS3_SERVER MOUNT_OPTS=vers=3,proto=tcp EXPECT_VERS=3 EXPORT=/ \
		POSIX_DIRN=500 POSIX_LARGE_MIB=8 sh /files/posix.sh )
	prc=$?
	if [ $prc = 0 ]; then ok "posix.sh over NFSv3 passed"; else fail "posix.sh over NFSv3 exited with status $prc"; fi
	# NFSv3 (NLM) and NFSv4 locks on one file conflict at the server: the
	# file through an NFSv3 and an NFSv4.1 mount is two inodes to the
	# kernel, so its own check (which keeps posix.sh's two processes from
	# ever asking the server) does not span them
	mkdir -p /mnt3 /mnt41
	if mount -t nfs -o "vers=3,proto=tcp,port=$PORT,mountport=$PORT,mountproto=tcp,mountvers=3,addr=$NFS3_SERVER" \
		"$NFS3_SERVER:/" /mnt3 && nfs-mount "$SERVER:$PORT" / /mnt41 vers=4.1; then
		xl=xlk.$W
		echo x > /mnt3/$xl
		xlock /mnt3 /mnt41 NFSv3 NFSv4.1
		xlock /mnt41 /mnt3 NFSv4.1 NFSv3
		/files/vmtool trylock /mnt3/$xl 0 100
		eq "both released: an NFSv3 F_SETLK on the whole range: status" $? 0
		rm -f /mnt3/$xl /mnt3/$xl.release /mnt41/$xl.release
	else
		fail "mount vers=3 on /mnt3 and vers=4.1 on /mnt41"
	fi
	umount /mnt41 2>/dev/null; umount /mnt3 2>/dev/null
	echo "--- the guest's lockd and statd"
	rpcinfo | grep -e ' 100021 ' -e ' 100024 ' 
	dmesg | grep -i -e lockd -e statd | tail -5
}

# check_nfs40: the POSIX workload over NFSv4.0
check_nfs40() {
	step nfs40 "NFSv4.0: the POSIX workload over vers=4.0"
	( cd / && MOUNT_OPTS=vers=4.0 EXPECT_VERS=4.0 EXPORT=/ POSIX_DIRN=500 POSIX_LARGE_MIB=8 \
		sh /files/posix.sh )
	prc=$?
	if [ $prc = 0 ]; then ok "posix.sh over NFSv4.0 passed"; else fail "posix.sh over NFSv4.0 exited with status $prc"; fi
}

# check_deleg: two clients in one guest, with different client identities:
# an NFSv4.1 mount on $MNT and an NFSv4.0 mount on /mnt40 (Linux names its
# 4.0 and 4.1 clients differently, so braid-mds sees two client IDs).  The
# 4.1 client opens a file for reading and keeps it open (a read
# delegation); the 4.0 client then appends to it: its OPEN for writing
# conflicts, so braid-mds recalls the delegation over the 4.1 back channel
# and the 4.0 OPEN waits (NFS4ERR_DELAY) until it is returned.  The 4.1
# client, opening the file again, must read the appended bytes.  Then the
# 4.1 client writes small files under write delegations and the 4.0 client
# reads each right away: its OPEN recalls the delegation, and every byte
# must be there (the host checks braid-mds's delegation counters: granted,
# write delegations granted, recalled, returned, none revoked).
check_deleg() {
	step deleg "an NFSv4.0 client's open for write recalls an NFSv4.1 client's read delegation"
	nfs-mount "$SERVER:$PORT" / "$MNT" "vers=4.1" || { fail "mount vers=4.1"; return; }
	nfs-mount "$SERVER:$PORT" / /mnt40 "vers=4.0" || { fail "mount vers=4.0"; umount "$MNT"; return; }
	grep -e " $MNT " -e " /mnt40 " /proc/mounts
	dd=$MNT/deleg.$W
	rm -rf "$dd"; mkdir "$dd" && echo one > "$dd/f" && sync || fail "create $dd/f"
	sleep 2 # past braid-mds's no-delegation window after a change (DL_BLOCK_MS)
	exec 3< "$dd/f"
	eq "the 4.1 client reads its file" "$(cat "$dd/f")" one
	T deleg-held
	t0=$(date +%s)
	if echo two >> "/mnt40/deleg.$W/f"; then ok "the 4.0 client appended within $(($(date +%s) - t0)) s"
	else fail "the 4.0 client's append failed"; fi
	exec 3<&-
	eq "the 4.1 client, opening again, reads the 4.0 client's append" "$(cat "$dd/f" | tr '\n' ' ')" "one two "
	eq "the 4.0 client reads it" "$(cat "/mnt40/deleg.$W/f" | tr '\n' ' ')" "one two "
	# write delegations (DELEG_WRITE=1: data_io = proxy, run.sh)
	if [ "${DELEG_WRITE:-0}" = 1 ]; then
		# a write delegation: the 4.1 client writes 20 files of 200 KB (its
		# closes start the write-back without waiting for it), then the 4.0
		# client reads each at once: its OPEN recalls the delegation, and the
		# 4.1 client writes back before returning it; not a byte may be missing
		head -c 204800 /dev/urandom > /tmp/wdeleg.src
		i=0
		while [ $i -lt 20 ]; do cp /tmp/wdeleg.src "$dd/w$i" || fail "the 4.1 client's cp $i"; i=$((i + 1)); done
		i=0 bad=0
		while [ $i -lt 20 ]; do
			cmp -s /tmp/wdeleg.src "/mnt40/deleg.$W/w$i" || bad=$((bad + 1))
			i=$((i + 1))
		done
		eq "files the 4.0 client read short or wrong, just after the 4.1 client wrote them" $bad 0
		# and bytes the 4.1 client holds dirty in an open file: only the
		# recall makes them reach the server before the 4.0 client reads
		exec 4> "$dd/open"
		cat /tmp/wdeleg.src >&4
		if cmp -s /tmp/wdeleg.src "/mnt40/deleg.$W/open"; then
			ok "the 4.0 client reads what the 4.1 client wrote into a file it keeps open"
		else
			fail "the 4.0 client reads $(size "/mnt40/deleg.$W/open") of 204800 bytes the 4.1 client wrote into a file it keeps open"
		fi
		exec 4>&-
	fi
	rm -rf "$dd"
	umount /mnt40 || fail "umount /mnt40"
	umount "$MNT" || fail "umount $MNT"
}

check_data() {
	# The dirty page limits: a file larger than them is written back while
	# the application still writes it, its writer throttled (see run.sh).
	odb=$(cat /proc/sys/vm/dirty_background_bytes) odr=$(cat /proc/sys/vm/dirty_background_ratio)
	ob=$(cat /proc/sys/vm/dirty_bytes) or=$(cat /proc/sys/vm/dirty_ratio)
	if [ -n "$PNFS_DIRTY_KIB" ]; then
		echo $((PNFS_DIRTY_KIB * 1024 / 4)) > /proc/sys/vm/dirty_background_bytes
		echo $((PNFS_DIRTY_KIB * 1024)) > /proc/sys/vm/dirty_bytes
		echo "data: vm.dirty_background_bytes $(cat /proc/sys/vm/dirty_background_bytes)," \
			"vm.dirty_bytes $(cat /proc/sys/vm/dirty_bytes)"
	fi
	step spread "$PNFS_SPREAD files of 1 MiB under /whole"
	mkdir -p "$MNT/whole/$W" "$MNT/striped/$W" || die "mkdir under $MNT/whole and $MNT/striped"
	i=0
	while [ $i -lt "$PNFS_SPREAD" ]; do
		f=$MNT/whole/$W/spread$i
		m=$(put "$f" 1) || fail "write $f"
		eval "SPREAD_$i=\$m"
		written "$f" 1 "$m"
		i=$((i + 1))
	done
	for dir in whole striped; do
		for mib in $PNFS_SIZES; do
			step "write-$dir-$mib" "write a $mib MiB file under /$dir"
			f=$MNT/$dir/$W/f$mib
			m=$(put "$f" "$mib") || fail "write $f"
			eval "SUMS_${dir}_$mib=\$m"
			written "$f" "$mib" "$m"
		done
	done
	step sync "sync, drop_caches"
	dropcaches
	step read-spread "read back the $PNFS_SPREAD files under /whole"
	i=0 bad=0
	while [ $i -lt "$PNFS_SPREAD" ]; do
		f=$MNT/whole/$W/spread$i
		eval "m=\$SPREAD_$i"
		got=$(echo $(sums "$f" 1))
		[ "$got" = "$m" ] || { fail "$f: read back differs from what was written"; bad=1; }
		i=$((i + 1))
	done
	[ $bad = 1 ] || ok "the $PNFS_SPREAD files under /whole read back as written"
	for dir in whole striped; do
		for mib in $PNFS_SIZES; do
			step "read-$dir-$mib" "read back the $mib MiB file under /$dir"
			eval "m=\$SUMS_${dir}_$mib"
			verify "$MNT/$dir/$W/f$mib" "$mib" "$m"
		done
	done
	if [ -n "$PNFS_DIRTY_KIB" ]; then
		# a ratio written back clears the bytes setting, and the reverse
		if [ "$odb" = 0 ]; then echo "$odr" > /proc/sys/vm/dirty_background_ratio
		else echo "$odb" > /proc/sys/vm/dirty_background_bytes; fi
		if [ "$ob" = 0 ]; then echo "$or" > /proc/sys/vm/dirty_ratio
		else echo "$ob" > /proc/sys/vm/dirty_bytes; fi
	fi
}

check_mirror() {
	mkdir -p "$MNT/mirrored/$W" || die "mkdir $MNT/mirrored/$W"
	step write-mirrored "write $PNFS_MIRROR_MIB MiB under /mirrored (2 mirrors)"
	f=$MNT/mirrored/$W/big
	m=$(put "$f" "$PNFS_MIRROR_MIB") || fail "write $f"
	written "$f" "$PNFS_MIRROR_MIB" "$m"
	dropcaches
	# 1 MiB at a time, with a pause, so that the read is still going when
	# the host has seen a data server serve it and killed that server
	step read-mirrored "read it back while the host kills the data server serving it"
	echo "@@PNFS read-start"
	got=$(echo $(sums "$f" "$PNFS_MIRROR_MIB" 50000))
	echo "@@PNFS read-done"
	if [ "$got" = "$m" ]; then
		ok "$f: the $PNFS_MIRROR_MIB MiB read back across the data server's death are the bytes written"
	else
		fail "$f: read back across the data server's death differs: $got, written $m"
	fi
	eq "$f: size" "$(size "$f")" $((PNFS_MIRROR_MIB * 1048576))
	step write-after "write 8 MiB with one data server gone"
	f2=$MNT/mirrored/$W/after
	m2=$(put "$f2" 8) || fail "write $f2"
	sync
	written "$f2" 8 "$m2"
	# The host starts the killed server again now (see run.sh): without
	# it, dropping the last layout that names it makes the client wait out
	# its data-server timeout to clean up its session there.
	step restart "the host starts the killed data server again"
	echo "@@PNFS restart-killed"
	for dm in $PNFS_METRICS; do
		case $dm in ds*) ;; *) continue;; esac
		i=0
		until wget -q -O /dev/null "http://${dm#*=}/metrics" 2>/dev/null; do
			i=$((i + 1))
			[ $i -lt 120 ] || { fail "data server metrics at ${dm#*=} not back after 60 s"; break; }
			usleep 500000
		done
	done
	dropcaches
	verify "$f2" 8 "$m2"
}

# ds_down N: until exactly N of the data servers' metrics stop answering
# (the host kills them on its own schedule: see ec_control in run.sh); 1
# after 60 s
ds_down() {
	dw=0
	while :; do
		dn=0
		for dm in $PNFS_METRICS; do
			case $dm in ds*) ;; *) continue;; esac
			wget -q -O /dev/null "http://${dm#*=}/metrics" 2>/dev/null || dn=$((dn + 1))
		done
		[ $dn -eq "$1" ] && return 0
		dw=$((dw + 1))
		[ $dw -lt 120 ] || return 1
		usleep 500000
	done
}

# ec_sealed: until braid-mds has sealed a file (its parity made)
ec_sealed() {
	dw=0
	for dm in $PNFS_METRICS; do
		case $dm in mds=*) ;; *) continue;; esac
		while :; do
			wget -q -O /tmp/metrics "http://${dm#*=}/metrics" 2>/dev/null &&
				[ "$(sed -n 's/^braid_mds_ec_sealed_total \([0-9]*\).*/\1/p' /tmp/metrics)" -gt 0 ] 2>/dev/null &&
				return 0
			dw=$((dw + 1))
			[ $dw -lt 120 ] || return 1
			usleep 500000
		done
	done
	return 1
}

# check_ec: an erasure-coded file (/ec: k=2, m=2, 1 MiB segments, on the
# 4 data servers) read back byte-exact with one, then two, of its data
# servers killed: the client's READ layouts then name servers that
# rebuild the missing chunks (reconstructing handles), since the stock
# client cannot decode.
check_ec() {
	mkdir -p "$MNT/ec/$W" || die "mkdir $MNT/ec/$W"
	step write-ec "write $EC_MIB MiB under /ec (k=2, m=2: it ends mid-stripe)"
	f=$MNT/ec/$W/coded
	m=$(put "$f" "$EC_MIB") || fail "write $f"
	sync
	written "$f" "$EC_MIB" "$m"
	step ec-seal "wait until braid-mds has sealed it (parity made)"
	ec_sealed || { fail "no file sealed after 60 s (braid_mds_ec_sealed_total)"; return; }
	echo "@@PNFS ec-sealed"
	for n in 1 2; do
		step ec-kill$n "the host kills data server $n of the file's"
		ds_down $n || { fail "$n data server(s) not down after 60 s"; break; }
		dropcaches
		step ec-read$n "read it back with $n of its data servers down"
		got=$(echo $(sums "$f" "$EC_MIB"))
		if [ "$got" = "$m" ]; then
			ok "$f: the $EC_MIB MiB read back with $n data server(s) down are the bytes written"
		else
			fail "$f: read back with $n data server(s) down differs: $got, written $m"
		fi
		echo "@@PNFS ec-read$n-done"
	done
	step ec-restart "the host starts the killed data servers again"
	ds_down 0 || fail "the data servers are not back after 60 s"
	dropcaches
	verify "$f" "$EC_MIB" "$m"
}

# now: seconds since boot, to the hundredth
now() { read nu ni < /proc/uptime; echo "$nu"; }
# elapsed T0 T1: T1 - T0 in seconds (awk: the shell has no fractions)
elapsed() { awk "BEGIN { printf \"%.2f\", $2 - $1 }"; }
# within S BOUND: S <= BOUND
within() { awk "BEGIN { exit !($1 <= $2) }"; }

# put_sync FILE: ENOSPC_MIB MiB of random bytes to FILE with dd conv=fsync;
# sets PS_RC (dd's status), PS_SECS (the dd's time), PS_SUM (the md5) and
# leaves dd's messages in /tmp/dd.err
put_sync() {
	dd if=/dev/urandom of=/tmp/chunk bs=1M count="$ENOSPC_MIB" 2>/dev/null || die "urandom"
	PS_SUM=$(md5sum < /tmp/chunk | cut -d' ' -f1)
	pt0=$(now)
	dd if=/tmp/chunk of="$1" bs=1M conv=fsync 2>/tmp/dd.err
	PS_RC=$?
	PS_SECS=$(elapsed "$pt0" "$(now)")
	rm -f /tmp/chunk
}

check_enospc() {
	d=$MNT/full/$W
	mkdir -p "$d" || die "mkdir $d"
	echo "df before: $(df -Pk "$MNT" | tail -1)"
	step fill "write $ENOSPC_MIB MiB files with dd conv=fsync until three in a row fail"
	n=0 good=0 run=0 nfail=0 failed= worst=0
	while [ $n -lt 60 ] && [ $run -lt 3 ]; do
		put_sync "$d/f$n"
		if [ $PS_RC = 0 ]; then
			echo "$PS_SUM" > "/tmp/sum.f$n"
			good=$((good + 1)) run=0
		else
			run=$((run + 1)) nfail=$((nfail + 1)) failed="$failed f$n"
			echo "@@ENOSPC file f$n failed after $PS_SECS s: $(cat /tmp/dd.err | tr '\n' ' ')"
			if grep -q "No space left on device" /tmp/dd.err; then
				ok "f$n: ENOSPC after $PS_SECS s"
			else
				fail "f$n: dd failed, not with ENOSPC: $(cat /tmp/dd.err)"
			fi
			within "$PS_SECS" "$ENOSPC_BOUND" ||
				fail "f$n: the error took $PS_SECS s, more than $ENOSPC_BOUND s"
			within "$PS_SECS" "$worst" || worst=$PS_SECS
		fi
		n=$((n + 1))
	done
	echo "@@ENOSPC $good files written, $nfail failed (slowest failure $worst s)"
	[ $nfail -gt 0 ] || fail "no write failed: the data servers never filled"
	[ $((good * ENOSPC_MIB)) -ge 72 ] ||
		fail "only $((good * ENOSPC_MIB)) MiB written before the servers were full (96 MiB between them)"
	dfa=$(df -Pk "$MNT" | tail -1)
	echo "df full: $dfa"
	set -- $dfa
	[ "$4" -lt 8192 ] && ok "df: $4 KiB available" || fail "df: $4 KiB available on full servers"
	step read-full "read every file written back"
	dropcaches
	i=0
	while [ $i -lt $n ]; do
		if [ -f "/tmp/sum.f$i" ]; then
			got=$(md5sum < "$d/f$i" | cut -d' ' -f1)
			[ "$got" = "$(cat "/tmp/sum.f$i")" ] || fail "$d/f$i: read back differs"
		fi
		i=$((i + 1))
	done
	ok "the $good files written read back byte-exact"
	step rm-write "rm the failed files and three more, then write a new one"
	for f in $failed; do rm -f "$d/$f" || fail "rm $d/$f"; done
	i=0 k=0
	while [ $k -lt 3 ]; do
		if [ -f "/tmp/sum.f$i" ]; then rm -f "$d/f$i" "/tmp/sum.f$i"; k=$((k + 1)); fi
		i=$((i + 1))
	done
	# the objects go once the client's layouts of the removed files are
	# returned (they are recalled at the remove) and the data servers say
	# so: a write right after rm may still find no room; within 10 s it
	# must
	ra0=$(now) tries=0
	while :; do
		tries=$((tries + 1))
		put_sync "$d/again"
		[ $PS_RC = 0 ] && break
		grep -q "No space left on device" /tmp/dd.err || break
		within "$(elapsed "$ra0" "$(now)")" 10 || break
		rm -f "$d/again"
		usleep 200000
	done
	if [ $PS_RC = 0 ]; then
		ok "after rm: a new file written, $(elapsed "$ra0" "$(now)") s after the rm ($tries tries)"
		dropcaches
		got=$(md5sum < "$d/again" | cut -d' ' -f1)
		[ "$got" = "$PS_SUM" ] && ok "$d/again reads back" || fail "$d/again: read back differs"
	else
		fail "after rm: writing a new file failed after $PS_SECS s: $(cat /tmp/dd.err)"
	fi
	echo "df after: $(df -Pk "$MNT" | tail -1)"
}

# timed CMD...: run it, fold its time into worst, say when it failed
timed() {
	tt0=$(now)
	"$@"
	trc=$?
	tdt=$(elapsed "$tt0" "$(now)")
	within "$tdt" "$worst" || worst=$tdt
	[ $trc = 0 ] || fail "$* failed (status $trc) after $tdt s"
	return $trc
}

# lost_metrics_wait GONE: until one data server's metrics stop answering
# (GONE=1) or all of them answer (GONE=0), 60 s at most
lost_metrics_wait() {
	lw=0
	while [ $lw -lt 120 ]; do
		down=0
		for dm in $PNFS_METRICS; do
			case $dm in ds*) ;; *) continue;; esac
			wget -q -O /dev/null "http://${dm#*=}/metrics" 2>/dev/null || down=$((down + 1))
		done
		if [ "$1" = 1 ] && [ $down -gt 0 ]; then return 0; fi
		if [ "$1" = 0 ] && [ $down = 0 ]; then return 0; fi
		usleep 500000
		lw=$((lw + 1))
	done
	return 1
}

# lost_verify DIR WHEN: after drop_caches, every file of the lost check
# (fN appended, nN made with a server gone) reads back as written
lost_verify() {
	dropcaches
	lv=0
	while [ $lv -lt "$LOST_FILES" ]; do
		[ "$(md5sum < "$1/f$lv" | cut -d' ' -f1)" = "$(md5sum < "/tmp/lost.$lv" | cut -d' ' -f1)" ] ||
			fail "$1/f$lv: read back differs $2"
		[ "$(md5sum < "$1/n$lv" | cut -d' ' -f1)" = "$(md5sum < "/tmp/new.$lv" | cut -d' ' -f1)" ] ||
			fail "$1/n$lv: read back differs $2"
		lv=$((lv + 1))
	done
	ok "every file reads back $2"
}

check_lost() {
	d=$MNT/mirrored/$W/lost
	mkdir -p "$d" || die "mkdir $d"
	step write-lost "write $LOST_FILES files of 4 MiB under /mirrored (2 mirrors)"
	i=0
	while [ $i -lt "$LOST_FILES" ]; do
		dd if=/dev/urandom of="/tmp/lost.$i" bs=1M count=4 2>/dev/null || die "urandom"
		dd if="/tmp/lost.$i" of="$d/f$i" bs=1M conv=fsync 2>/dev/null || fail "write $d/f$i"
		i=$((i + 1))
	done
	echo "@@PNFS lost-start ${d#$MNT/}"
	lost_metrics_wait 1 || die "no data server went away"
	step degraded "read, append and create with a data server gone for good"
	worst=0
	t0=$(now)
	i=0
	while [ $i -lt "$LOST_FILES" ]; do
		tt0=$(now)
		got=$(md5sum < "$d/f$i" | cut -d' ' -f1)
		tdt=$(elapsed "$tt0" "$(now)")
		within "$tdt" "$worst" || worst=$tdt
		[ "$got" = "$(md5sum < "/tmp/lost.$i" | cut -d' ' -f1)" ] ||
			fail "$d/f$i: read back differs with a data server gone"
		dd if=/dev/urandom of=/tmp/app bs=1M count=1 2>/dev/null
		cat /tmp/app >> "/tmp/lost.$i"
		timed dd if=/tmp/app of="$d/f$i" bs=1M seek=4 conv=notrunc,fsync 2>/dev/null
		dd if=/dev/urandom of="/tmp/new.$i" bs=1M count=1 2>/dev/null
		timed dd if="/tmp/new.$i" of="$d/n$i" bs=1M conv=fsync 2>/dev/null
		i=$((i + 1))
	done
	echo "@@PNFS lost-worst $worst"
	ok "$((LOST_FILES * 3)) reads, appends and creates in $(elapsed "$t0" "$(now)") s; the slowest $worst s"
	within "$worst" "$LOST_BOUND" || fail "an operation took $worst s, more than $LOST_BOUND s"
	lost_verify "$d" "after drop_caches"
	echo "@@PNFS lost-done"
	step lost-back "the host starts the data server again"
	lost_metrics_wait 0 || fail "data servers' metrics not all back after 60 s"
	# another data server lost for good: the host kills it and declares
	# it lost; its copies are rebuilt from their mirrors
	echo "@@PNFS lost2-start"
	step rebuild "another data server lost for good: its copies rebuilt"
	mm=$(mds_metrics_addr)
	lw=0 rebuilt=0
	rt0=$(now)
	while [ $lw -lt 360 ]; do
		if wget -q -O /tmp/mm "http://$mm/metrics" 2>/dev/null &&
		   awk '$1 == "braid_mds_rebuild_moved_total" && $2 > 0 { m = 1 }
			$1 == "braid_mds_rebuild_files" && $2 == 0 { r = 1 }
			$1 == "braid_mds_stale_files" && $2 == 0 { s = 1 }
			END { exit !(m && r && s) }' /tmp/mm; then
			rebuilt=1
			break
		fi
		usleep 500000
		lw=$((lw + 1))
	done
	if [ $rebuilt = 1 ]; then
		ok "braid-mds's metrics say the rebuild is done, $(elapsed "$rt0" "$(now)") s on"
	else
		fail "the rebuild did not finish in 180 s (braid-mds metrics)"
	fi
	lost_verify "$d" "after the rebuild"
	echo "@@PNFS lost2-done"
	# the host starts its process again (declared lost, it takes nothing),
	# so that the unmount has no session to wait out
	lost_metrics_wait 0 || fail "data servers' metrics not all back after 60 s"
	rm -f /tmp/lost.* /tmp/new.* /tmp/app /tmp/mm
}

check_unreach() {
	worst=0
	step write-unreach "write files with a data server this client cannot reach"
	for sub in whole mirrored; do
		mkdir -p "$MNT/$sub/$W" || die "mkdir $MNT/$sub/$W"
		i=0
		while [ $i -lt "$UNREACH_FILES" ]; do
			dd if=/dev/urandom of="/tmp/un.$sub.$i" bs=1M count=2 2>/dev/null || die "urandom"
			timed dd if="/tmp/un.$sub.$i" of="$MNT/$sub/$W/u$i" bs=1M conv=fsync 2>/dev/null
			i=$((i + 1))
		done
	done
	dropcaches
	step read-unreach "read them back"
	for sub in whole mirrored; do
		i=0
		while [ $i -lt "$UNREACH_FILES" ]; do
			tt0=$(now)
			got=$(md5sum < "$MNT/$sub/$W/u$i" | cut -d' ' -f1)
			tdt=$(elapsed "$tt0" "$(now)")
			within "$tdt" "$worst" || worst=$tdt
			[ "$got" = "$(md5sum < "/tmp/un.$sub.$i" | cut -d' ' -f1)" ] ||
				fail "$MNT/$sub/$W/u$i: read back differs"
			i=$((i + 1))
		done
	done
	echo "@@PNFS unreach-worst $worst"
	ok "$((UNREACH_FILES * 4)) writes and reads, the slowest $worst s"
	within "$worst" "$UNREACH_BOUND" || fail "an operation took $worst s, more than $UNREACH_BOUND s"
	rm -f /tmp/un.*
	small_through_mds
}

# ms_op OP: how many OPs this mount sent (mountstats' per-op line)
ms_op() {
	awk -v on=" mounted on $MNT " -v op="$1:" '/^device /{m = index($0, on) > 0}
		m && $1 == op { n = $2 } END { print n + 0 }' /proc/self/mountstats
}
# mds_op OP: how many OPs braid-mds ran (braid_nfs4_ops_total)
mds_op() {
	wget -q -O - "http://$(mds_metrics_addr)/metrics" 2>/dev/null |
		awk -v op="op=\"$1\"" '$1 ~ /^braid_nfs4_ops_total\{/ && index($1, op) { n += $2 } END { print n + 0 }'
}

# small_through_mds (data_io = proxy, small_file_threshold 1M by default):
# files of 64 KiB, written as cp writes them (no fsync: the close flushes
# them), go through braid-mds, which offers mdsthreshold in every OPEN:
# no LAYOUTGET leaves this mount for them, braid-mds runs a WRITE for each,
# and they read back; a 2 MiB file written after them still asks for its
# layout (the threshold is the file's size, not the write's).  The WRITEs
# braid-mds ran meanwhile are reported, so that the host's check of the
# fallback (run.sh) counts only the others.
small_through_mds() {
	step small-write "files below small_file_threshold are written through the MDS"
	mkdir -p "$MNT/whole/$W/small" || die "mkdir $MNT/whole/$W/small"
	lg0=$(ms_op LAYOUTGET) w0=$(mds_op WRITE)
	i=0
	while [ $i -lt 4 ]; do
		dd if=/dev/urandom of=/tmp/sm.$i bs=1k count=64 2>/dev/null || die "urandom"
		cp /tmp/sm.$i "$MNT/whole/$W/small/s$i" || fail "cp of a 64 KiB file"
		i=$((i + 1))
	done
	lg1=$(ms_op LAYOUTGET) w1=$(mds_op WRITE)
	eq "LAYOUTGETs sent for 4 files of 64 KiB" $((lg1 - lg0)) 0
	if [ $((w1 - w0)) -ge 4 ]; then
		ok "braid-mds ran $((w1 - w0)) WRITEs for them"
	else
		fail "braid-mds ran $((w1 - w0)) WRITEs for 4 small files (mdsthreshold not honoured?)"
	fi
	dd if=/dev/urandom of=/tmp/sm.big bs=1M count=2 2>/dev/null || die "urandom"
	cp /tmp/sm.big "$MNT/whole/$W/small/big" || fail "cp of a 2 MiB file"
	lg2=$(ms_op LAYOUTGET)
	[ $((lg2 - lg1)) -ge 1 ] && ok "the 2 MiB file asked for a layout" ||
		fail "no LAYOUTGET for a 2 MiB file"
	dropcaches
	for f in 0 1 2 3; do
		[ "$(md5sum < "$MNT/whole/$W/small/s$f")" = "$(md5sum < /tmp/sm.$f)" ] ||
			fail "small file s$f read back differs"
	done
	[ "$(md5sum < "$MNT/whole/$W/small/big")" = "$(md5sum < /tmp/sm.big)" ] ||
		fail "the 2 MiB file read back differs"
	ok "the small files and the 2 MiB file read back"
	# for the host, whose fallback check counts braid-mds's WRITEs
	echo "@@PNFS small-mds-writes $(($(mds_op WRITE) - w0))"
	rm -f /tmp/sm.*
}

# krb5_setup: the guest's Kerberos client from run.sh's /files/krb5:
# krb5.conf (the KDC at 10.0.2.2), the keytab of nfs/braid-client (the
# guest's name now), /etc/hosts naming each server address braid-server
# (rpc.gssd asks for nfs/NAME, NAME the reverse lookup of the address
# mounted), libtirpc's netconfig; the user KRB5_USER (KRB5_UID:KRB5_GID, as
# on the host, where braid-mds maps its principal) with its ticket cache as
# /tmp/krb5cc_UID, where rpc.gssd looks, and the user noticket
# (KRB5_NOTICKET_UID) with none; rpc_pipefs, and rpc.gssd (clientvm --bin)
# logging to /tmp/gssd.log
krb5_setup() {
	K=/files/krb5
	for f in krb5.conf krb5.keytab krb5cc hosts netconfig; do
		[ -r $K/$f ] || die "$K/$f missing (run.sh provides it for the krb5 check)"
	done
	[ -x /usr/sbin/rpc.gssd ] || die "/usr/sbin/rpc.gssd missing (clientvm --bin)"
	cp $K/krb5.conf /etc/krb5.conf && cp $K/hosts /etc/hosts && cp $K/netconfig /etc/netconfig &&
		cp $K/krb5.keytab /etc/krb5.keytab && chmod 600 /etc/krb5.keytab || die "cannot install $K"
	printf 'passwd: files\ngroup: files\nhosts: files\n' > /etc/nsswitch.conf
	echo "$KRB5_USER:x:$KRB5_UID:$KRB5_GID::/tmp:/bin/sh" >> /etc/passwd
	echo "$KRB5_USER:x:$KRB5_GID:" >> /etc/group
	echo "noticket:x:$KRB5_NOTICKET_UID:$KRB5_NOTICKET_UID::/tmp:/bin/sh" >> /etc/passwd
	echo "noticket:x:$KRB5_NOTICKET_UID:" >> /etc/group
	cp $K/krb5cc /tmp/krb5cc_$KRB5_UID && chown "$KRB5_UID:$KRB5_GID" /tmp/krb5cc_$KRB5_UID &&
		chmod 600 /tmp/krb5cc_$KRB5_UID || die "cannot install the ticket cache"
	hostname braid-client
	mkdir -p /var/lib/nfs/rpc_pipefs
	mount -t rpc_pipefs rpc_pipefs /var/lib/nfs/rpc_pipefs || die "mount rpc_pipefs"
	gv=-vv # -vv: each upcall (uid, RPC client), for krb5_contexts
	if [ "$KRB5_DEBUG" = 1 ]; then
		gv="-vvv -rrr"
		# into dmesg (krb5_diag), where the kernel has CONFIG_SUNRPC_DEBUG
		echo 0x7fff 2>/dev/null > /proc/sys/sunrpc/rpc_debug
		echo 0xffff 2>/dev/null > /proc/sys/sunrpc/nfs_debug
	fi
	rpc.gssd -f $gv > /tmp/gssd.log 2>&1 &
	GSSD_PID=$!
	i=0
	while [ $i -lt 20 ] && kill -0 $GSSD_PID 2>/dev/null && [ ! -s /tmp/gssd.log ]; do usleep 100000; i=$((i + 1)); done
	kill -0 $GSSD_PID 2>/dev/null || { cat /tmp/gssd.log; die "rpc.gssd exited"; }
	ok "rpc.gssd running (pid $GSSD_PID)"
}

# krb5_diag: what rpc.gssd and the kernel said
krb5_diag() {
	echo "--- rpc.gssd's log (tail)"
	tail -${1:-60} /tmp/gssd.log
	echo "--- dmesg (tail)"
	dmesg | tail -${1:-60}
}

# krb5_mount EXPORT OPTS: nfs-mount EXPORT on MNT, bounded: a mount still
# going after 60 s (a client retrying calls the server drops) is killed,
# with krb5_diag's report, and gives 124; else nfs-mount's status, its
# output printed
krb5_mount() {
	nfs-mount "$SERVER:$PORT" "$1" "$MNT" "$2" > /tmp/mount.out 2>&1 &
	mp=$!
	i=0
	while kill -0 $mp 2>/dev/null && [ $i -lt 600 ]; do usleep 100000; i=$((i + 1)); done
	if kill -0 $mp 2>/dev/null; then
		echo "krb5: the mount of $1 with $2 still hangs after 60 s"
		krb5_diag
		kill -9 $mp
		wait $mp
		return 124
	fi
	wait $mp
	mrc=$?
	cat /tmp/mount.out
	return $mrc
}

# krb5_contexts SEC FROM: for the host, between "@@KRB5 contexts-begin SEC"
# and "@@KRB5 contexts-end": the server port of each RPC client of the
# guest ("clnt NAME PORT", rpc_pipefs) and rpc.gssd's upcalls for KRB5_UID
# from line FROM of its log on (the RPC clients the user's own credential
# was asked for: the MDS's and, with tightly coupled layouts, each data
# server's)
krb5_contexts() {
	echo "@@KRB5 contexts-begin $1"
	for kc in /var/lib/nfs/rpc_pipefs/nfs/clnt*; do
		[ -r $kc/info ] && echo "clnt ${kc##*/} $(sed -n 's/^port: //p' $kc/info)"
	done
	tail -n +"$2" /tmp/gssd.log | grep "handle_gssd_upcall.* uid=$KRB5_UID "
	echo "@@KRB5 contexts-end"
}

# krb5_left WHEN: with nothing of it mounted, braid-mds holds no client ID
# and no layout of this guest: the unmounts returned all state and
# destroyed the client ID.  (A CLOSE or LAYOUTRETURN the server refuses
# leaves a layout, and DESTROY_CLIENTID then gets NFS4ERR_CLIENTID_BUSY.)
krb5_left() {
	mm=$(mds_metrics_addr)
	if wget -q -O /tmp/mm "http://$mm/metrics" 2>/dev/null; then
		for g in braid_mds_clients braid_mds_layouts_outstanding; do
			eq "$1: braid-mds's $g" "$(awk -v g=$g '$1 == g { printf "%d", $2 }' /tmp/mm)" 0
		done
	else
		fail "$1: braid-mds's metrics at $mm do not answer"
	fi
	rm -f /tmp/mm
}

# as USER CMD: CMD (a shell command line) as USER; its output and status.
# Bounded: after KRB5_BOUND (120) seconds it is killed (status 137), with
# krb5_diag's report and the mount's mountstats on the console
as() {
	timeout -s KILL "${KRB5_BOUND:-120}" su -s /bin/sh "$1" -c "$2" 2>&1
	arc=$?
	if [ $arc = 137 ]; then
		echo "krb5: '$2' as $1 killed after ${KRB5_BOUND:-120} s" >&2
		krb5_diag >&2
		awk -v on=" mounted on $MNT " '/^device /{m = index($0, on) > 0} m' /proc/self/mountstats >&2
	fi
	return $arc
}

# krb5_flavor SEC: / mounted with sec=SEC: the user with a ticket creates,
# writes and reads; what it creates is its own (owner from the server,
# after drop_caches); the user without a ticket can neither list nor
# create in a directory open to everyone (mode 1777, so only the missing
# credential refuses it); a KRB5_MIB file written and read back by the user
# (listed as "@@PNFS FILE", for the host to find where it went; its
# mount's mountstats between "@@KRB5 mountstats-begin SEC" and "@@KRB5
# mountstats-end", and krb5_contexts); then the POSIX workload as root (the
# machine credential, nfs/braid-client: root on the server), shortened
# (KRB5_POSIX_DIRN entries in its big directory, a KRB5_POSIX_MIB MiB large
# file), on its own mount with sec=SEC
krb5_flavor() {
	sec=$1
	step "krb5-$sec" "sec=$sec"
	gl=$(($(wc -l < /tmp/gssd.log) + 1))
	krb5_mount / "$MOUNT_OPTS,sec=$sec" || die "mount / with sec=$sec"
	mline=$(grep " $MNT nfs4 " /proc/mounts)
	case ",${mline#* nfs4 }," in
	*,sec=$sec,*) ok "mounted / with sec=$sec: $mline";;
	*) fail "the mount is not sec=$sec: $mline";;
	esac
	d=$MNT/krb5.$W.$sec
	mkdir "$d" && chmod 1777 "$d" || fail "mkdir, chmod 1777 $d as root"
	out=$(as "$KRB5_USER" "echo hello-$sec > $d/u && cat $d/u")
	eq "sec=$sec: $KRB5_USER creates and reads $d/u" "$out" "hello-$sec"
	out=$(as "$KRB5_USER" "mkdir $d/ud && echo x > $d/ud/f && ls $d/ud")
	eq "sec=$sec: $KRB5_USER makes a directory and a file in it" "$out" f
	dd if=/dev/urandom of=/tmp/k5 bs=1M count="$KRB5_MIB" 2>/dev/null || die "urandom"
	chmod 644 /tmp/k5
	m=$(md5sum < /tmp/k5 | cut -d' ' -f1)
	out=$(as "$KRB5_USER" "dd if=/tmp/k5 of=$d/big bs=1M conv=fsync 2>&1 >/dev/null") ||
		fail "sec=$sec: $KRB5_USER writes $KRB5_MIB MiB: $out"
	written "$d/big" "$KRB5_MIB" "$m"
	dropcaches
	eq "sec=$sec: $d/u owner (uid:gid) after drop_caches" "$(stat -c %u:%g "$d/u")" "$KRB5_UID:$KRB5_GID"
	eq "sec=$sec: $d/ud owner (uid:gid)" "$(stat -c %u:%g "$d/ud")" "$KRB5_UID:$KRB5_GID"
	eq "sec=$sec: $d (made by root) owner" "$(stat -c %u "$d")" 0
	out=$(as "$KRB5_USER" "md5sum < $d/big")
	eq "sec=$sec: $KRB5_USER reads the $KRB5_MIB MiB back" "${out%% *}" "$m"
	out=$(as noticket "ls $d")
	case $? in
	0) fail "sec=$sec: noticket (no ticket) listed $d: $out";;
	*) case $out in
	   *"Permission denied"*) ok "sec=$sec: noticket cannot list $d: $out";;
	   *) fail "sec=$sec: noticket's ls $d failed, but not with EACCES: $out";;
	   esac;;
	esac
	out=$(as noticket ": > $d/nt")
	case $? in
	0) fail "sec=$sec: noticket (no ticket) created $d/nt";;
	*) case $out in
	   *"Permission denied"*) ok "sec=$sec: noticket cannot create in $d: $out";;
	   *) fail "sec=$sec: noticket's create in $d failed, but not with EACCES: $out";;
	   esac;;
	esac
	[ -e "$d/nt" ] && fail "sec=$sec: $d/nt exists"
	echo "@@KRB5 mountstats-begin $sec"
	awk -v on=" mounted on $MNT " '/^device /{m = index($0, on) > 0} m' /proc/self/mountstats
	echo "@@KRB5 mountstats-end"
	krb5_contexts $sec $gl
	rm -f /tmp/k5
	cd /
	umount "$MNT" || fail "umount (sec=$sec)"
	step "krb5-$sec-posix" "the POSIX workload with sec=$sec"
	( cd / && EXPORT=/ MOUNT_OPTS="$MOUNT_OPTS,sec=$sec" POSIX_DIRN=$KRB5_POSIX_DIRN \
		POSIX_LARGE_MIB=$KRB5_POSIX_MIB sh /files/posix.sh )
	prc=$?
	if [ $prc = 0 ]; then ok "sec=$sec: posix.sh passed"; else fail "sec=$sec: posix.sh exited with status $prc"; fi
	krb5_left "sec=$sec, unmounted"
}

# check_krb5: Kerberos through the stock client with rpc.gssd (run.sh:
# braid-mds and braid-ds with a keytab, / exported sec=sys:krb5:krb5i:krb5p,
# /k5p sec=krb5p): krb5_flavor for krb5, krb5i and krb5p; then /k5p with
# sec=krb5p takes the user's files, and with sec=sys cannot be mounted
check_krb5() {
	step krb5-setup "rpc_pipefs, rpc.gssd, the realm's files"
	krb5_setup
	for sec in krb5 krb5i krb5p; do krb5_flavor $sec; done
	step krb5-k5p "/k5p (sec=krb5p only)"
	if krb5_mount /k5p "$MOUNT_OPTS,sec=krb5p"; then
		ok "mounted /k5p with sec=krb5p"
		T k5p-mounted
		d=$MNT/k.$W
		mkdir "$d" && chmod 1777 "$d" || fail "mkdir, chmod 1777 $d as root"
		T k5p-mkdir
		out=$(as "$KRB5_USER" "echo k5p > $d/u && cat $d/u")
		eq "/k5p: $KRB5_USER creates and reads $d/u" "$out" k5p
		T k5p-user
		dropcaches
		eq "/k5p: $d/u owner" "$(stat -c %u:%g "$d/u")" "$KRB5_UID:$KRB5_GID"
		T k5p-stat
		rm -rf "$d"
		T k5p-rm
		cd /
		umount "$MNT" || fail "umount /k5p"
		T k5p-umount
		krb5_left "/k5p, unmounted"
	else
		fail "mount /k5p with sec=krb5p"
	fi
	# sec=sys: the client looks up k5p with AUTH_SYS, gets
	# NFS4ERR_WRONGSEC, asks SECINFO and finds only krb5p, which the mount
	# does not allow (nfs_find_best_sec): the mount fails with EPERM, which
	# busybox mount reports as "permission denied (are you root?)" (EACCES
	# would be "Permission denied")
	T krb5-k5p-sys
	out=$(krb5_mount /k5p "$MOUNT_OPTS,sec=sys" 2>&1)
	if [ $? = 0 ]; then
		fail "/k5p (sec=krb5p) mounted with sec=sys: $(ls "$MNT" 2>&1)"
		umount "$MNT"
	else
		case $out in
		*"(are you root?)"*|*"Operation not permitted"*)
			ok "/k5p with sec=sys: the mount fails with EPERM: $out";;
		*) fail "/k5p with sec=sys: the mount fails, but not with EPERM: $out";;
		esac
	fi
	T krb5-gssd-stop
	kill $GSSD_PID 2>/dev/null
	wait $GSSD_PID 2>/dev/null
	[ "$KRB5_DEBUG" = 1 ] && krb5_diag 400
	echo "--- rpc.gssd's log (tail)"
	tail -20 /tmp/gssd.log
}

check_trunk() {
	mkdir -p "$MNT/striped/$W" || die "mkdir $MNT/striped/$W"
	step write-trunk "write $PNFS_TRUNK_MIB MiB under /striped"
	f=$MNT/striped/$W/trunk
	m=$(put "$f" "$PNFS_TRUNK_MIB") || fail "write $f"
	written "$f" "$PNFS_TRUNK_MIB" "$m"
	dropcaches
	verify "$f" "$PNFS_TRUNK_MIB" "$m"
	connections
}

echo "guest.sh: checks $GUEST_CHECKS: server $SERVER:$PORT on $MNT, options $MOUNT_OPTS"
[ "$CLIENTVM_MOUNT" = 0 ] || die "run with clientvm --no-mount"
W=$(hostname)
snapshot start
for c in $GUEST_CHECKS; do
	echo "@@CHECK begin $c"
	f0=$FAILS
	case $c in
	posix) check_posix;;
	nfs3) check_nfs3;;
	nfs40) check_nfs40;;
	deleg) check_deleg;;
	krb5) check_krb5;;
	data|mirror|ec|lost|trunk|enospc|unreach) pnfs_mount; "check_$c"; pnfs_umount;;
	*) die "check $c: want posix, nfs3, nfs40, deleg, data, mirror, ec, lost, trunk, enospc, unreach or krb5";;
	esac
	T "$c-done"
	snapshot "$c"
	echo "@@CHECK end $c $((FAILS - f0))"
done
T done
if [ $FAILS -ne 0 ]; then
	echo "CHECKS-FAILED: $FAILS check(s) failed"
	exit 1
fi
echo CHECKS-OK
exit 0
