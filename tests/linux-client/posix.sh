# posix.sh -- POSIX semantics through the stock Linux NFS client (NFSv4.x,
# or NFSv3 with its locks through the kernel's lockd and NLM).
#
# Guest workload for tests/linux-client/clientvm, run with --no-mount: under
# busybox sh as root, it mounts the export on $MNT itself (nfs-mount with
# $MOUNT_OPTS), because it unmounts and remounts it to check what the server
# kept, and clientvm's own mount would stay busy (init's working directory
# is in it).  Needs the static helper /files/vmtool (clientvm --files).
# Every check prints "ok: ..." or "FAIL: ..."; the script goes on after a
# failed check where the next steps do not depend on it, and ends with
# "POSIX-OK" and status 0 only if every check passed.  Optional:
# EXPECT_VERS=4.1|4.2 (checks the version the mount negotiated);
# POSIX_DIRN (2000) and POSIX_LARGE_MIB (32), the entries of the big
# directory and the size of the large file, for a shorter run where one of
# several (run.sh's krb5 check runs it once per Kerberos flavor).
#
# Variables from clientvm: SERVER PORT EXPORT MNT MOUNT_OPTS.  With vers=3 in
# MOUNT_OPTS the mount is the kernel's nfs type (nfs-mount is nfs4's), MOUNT
# asked at PORT too (braid-mds serves it beside NFS); its locks need lockd's
# helpers in the guest (rpcbind, rpc.statd: guest.sh's check_nfs3 starts them).

VT=/files/vmtool
FAILS=0
W=posix.$(hostname)

T() { read up idle < /proc/uptime; echo "@@CLIENTVM T=$up $*"; }
step() { echo "== $*"; T "$1"; }
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
die() {
	echo "FAIL: $* (cannot go on)"
	echo "--- dmesg (tail)"; dmesg | tail -20
	echo "POSIX-FAILED"
	exit 1
}
# check DESC CMD...: CMD must succeed
check() { d=$1; shift; if "$@"; then ok "$d"; else fail "$d"; fi; }
# check_not DESC CMD...: CMD must fail
check_not() { d=$1; shift; if "$@" 2>/dev/null; then fail "$d (it succeeded)"; else ok "$d"; fi; }
# eq DESC ACTUAL EXPECTED
eq() {
	if [ "$2" = "$3" ]; then ok "$1 = '$3'"; else fail "$1: got '$2', expected '$3'"; fi
}
# st FILE FIELD: one field of 'vmtool stat' (mode uid gid size mtime nlink)
st() {
	f=$1; fld=$2
	out=$($VT stat "$f") || { echo "?"; return; }
	set -- $out
	case $fld in mode) echo $1;; uid) echo $2;; gid) echo $3;; size) echo $4;;
	mtime) echo $5;; nlink) echo $6;; esac
}
mountstats() {
	echo "--- mountstats of $MNT ($1)"
	awk -v on=" mounted on $MNT " '/^device /{m = index($0, on) > 0}
		m && /nfsv4:|LAYOUTGET:|GETDEVICEINFO:|READ:|WRITE:/' /proc/self/mountstats
}
dropcaches() { sync; echo 3 > /proc/sys/vm/drop_caches; }
md5() { md5sum < "$1" | cut -d' ' -f1; }
# manifest: every entry under the current directory with its lstat fields,
# its md5 (files) or target (symlinks), sorted by name
manifest() {
	find . | sort | while IFS= read -r p; do
		s=$($VT stat "$p")
		if [ -L "$p" ]; then echo "$p L $s -> $(readlink "$p")"
		elif [ -f "$p" ]; then echo "$p F $s $(md5 "$p")"
		else echo "$p D $s"; fi
	done
}

FSTYPE=nfs4
case ",$MOUNT_OPTS," in *,vers=3,*) FSTYPE=nfs;; esac
# mnt: $SERVER:$PORT$EXPORT on $MNT with $MOUNT_OPTS
mnt() {
	[ $FSTYPE = nfs4 ] && { nfs-mount "$SERVER:$PORT" "$EXPORT" "$MNT" "$MOUNT_OPTS"; return; }
	mkdir -p "$MNT"
	mount -t nfs -o "$MOUNT_OPTS,port=$PORT,mountport=$PORT,mountproto=tcp,mountvers=3,addr=$SERVER" \
		"$SERVER:$EXPORT" "$MNT"
}

[ -x $VT ] || die "$VT missing (clientvm --files DIR with the static vmtool)"
echo "posix.sh: server $SERVER:$PORT export $EXPORT on $MNT, options $MOUNT_OPTS"
[ "$CLIENTVM_MOUNT" = 0 ] || die "run with clientvm --no-mount (the remount step needs $MNT unbusy)"
mnt || die "mount $SERVER:$PORT$EXPORT on $MNT ($MOUNT_OPTS)"
T mounted-by-workload
cd "$MNT" || die "cd $MNT"
mline=$(grep " $MNT $FSTYPE " /proc/mounts)
[ -n "$mline" ] || die "$MNT is not an $FSTYPE mount"
echo "mount: $mline"
if [ -n "$EXPECT_VERS" ]; then
	case ",${mline#* $FSTYPE }," in
	*,vers=$EXPECT_VERS,*) ok "negotiated vers=$EXPECT_VERS";;
	*) fail "mount is not vers=$EXPECT_VERS: $mline";;
	esac
fi
rm -rf "$W" 2>/dev/null
mkdir "$W" || die "mkdir $MNT/$W"
cd "$W" || die "cd $MNT/$W"

step create "create, write, read, append"
: > f1
check "create: f1 exists" [ -f f1 ]
eq "create: size" "$(st f1 size)" 0
eq "create: owner uid (numeric owners, no root squash)" "$(st f1 uid)" 0
eq "create: owner gid" "$(st f1 gid)" 0
check_not "create: noclobber (set -C) create of an existing name fails" sh -c 'set -C; : > f1'
printf 'hello world\n' > f1
eq "write+read: content" "$(cat f1)" "hello world"
eq "write: size" "$(st f1 size)" 12
printf 'more\n' >> f1
eq "append: size" "$(st f1 size)" 17
printf 'hello world\nmore\n' > /tmp/exp
check "append: content" cmp f1 /tmp/exp
printf 'XY' | dd of=f1 bs=1 seek=2 conv=notrunc 2>/dev/null
printf 'heXYo world\nmore\n' > /tmp/exp
check "overwrite in the middle (notrunc)" cmp f1 /tmp/exp
dropcaches
check "content after drop_caches" cmp f1 /tmp/exp

step truncate "truncate: shrink and extend"
printf 'hello world\n' > tr
truncate -s 5 tr
eq "shrink: size" "$(st tr size)" 5
eq "shrink: content" "$(cat tr)" hello
truncate -s 70000 tr
eq "extend: size" "$(st tr size)" 70000
{ printf hello; head -c 69995 /dev/zero; } > /tmp/exp
check "extend: old bytes kept, the rest reads as zeros" cmp tr /tmp/exp
dropcaches
check "extend: same after drop_caches" cmp tr /tmp/exp
truncate -s 0 tr
eq "truncate to 0: size" "$(st tr size)" 0

# Under a write delegation close() does not wait for the write-back, and
# Linux may let the write's LAYOUTCOMMIT reach the MDS after the truncation
# that follows (it did in 1-5 of 100 such files before braid-mds checked
# such reports against the objects): the size must stay the truncation's,
# in the client's cache and on the server (after drop_caches).
step truncwb "truncate right after a write, 100 files"
i=0 bad=0
while [ $i -lt 100 ]; do
	printf 'hello world\n' > tw$i
	truncate -s 5 tw$i
	[ "$(st tw$i size)" = 5 ] || bad=$((bad + 1))
	i=$((i + 1))
done
eq "write then truncate: files whose size is not 5" $bad 0
dropcaches
i=0 bad=0
while [ $i -lt 100 ]; do
	[ "$(cat tw$i)" = hello ] || bad=$((bad + 1))
	i=$((i + 1))
done
eq "write then truncate, after drop_caches: files not 'hello'" $bad 0
rm -f tw*

step rename "rename"
printf 'AAA\n' > ra; printf 'BBB\n' > rb
check "rename over an existing file" mv -f ra rb
check_not "rename: old name gone" [ -e ra ]
eq "rename: target has the source's data" "$(cat rb)" AAA
mkdir d1 d2
printf 'CCC\n' > d1/x
check "rename across directories" mv d1/x d2/y
check_not "rename across dirs: old name gone" [ -e d1/x ]
eq "rename across dirs: content" "$(cat d2/y)" CCC
mkdir d1/sub; printf 'SSS\n' > d1/sub/f
check "rename a directory into another directory" mv d1/sub d2/sub2
eq "renamed directory's content" "$(cat d2/sub2/f)" SSS
check_not "renamed directory: old name gone" [ -e d1/sub ]
eq "ls d2" "$(ls d2 | tr '\n' ' ')" "sub2 y "

step link "hard links"
printf 'linked\n' > hl
check "link hl hl2" ln hl hl2
check "link hl hl3" ln hl hl3
eq "link count after 2 links" "$(st hl nlink)" 3
check "unlink hl3" rm hl3
eq "link count after unlink" "$(st hl nlink)" 2
eq "link count seen through the other name" "$(st hl2 nlink)" 2
eq "same inode" "$(ls -i hl | cut -d' ' -f1)" "$(ls -i hl2 | cut -d' ' -f1)"
printf 'via hl2\n' >> hl2
eq "write through one name, read through the other" "$(cat hl | tail -1)" "via hl2"

step symlink "symlink and readlink"
check "symlink to a file" ln -s hl sl
eq "readlink" "$(readlink sl)" hl
eq "read through the symlink" "$(head -1 sl)" linked
LONG=a123456789b123456789c123456789d123456789e123456789f123456789g123456789h123456789
LONG=/no/such/$LONG/$LONG/$LONG
check "dangling symlink with a 250-byte target" ln -s "$LONG" dangling
eq "readlink of the long target" "$(readlink dangling)" "$LONG"
check_not "dangling symlink does not resolve" [ -e dangling ]
check "symlink to a directory" ln -s d2 sld
eq "path through a directory symlink" "$(cat sld/y)" CCC

step chmod "chmod"
printf 'm\n' > cm
chmod 640 cm; eq "chmod 640" "$(st cm mode)" 100640
chmod 755 cm; eq "chmod 755" "$(st cm mode)" 100755
chmod 0 cm;   eq "chmod 000" "$(st cm mode)" 100000
chmod 644 cm; eq "chmod 644" "$(st cm mode)" 100644
mkdir sd; chmod 1777 sd; eq "chmod 1777 on a directory" "$(st sd mode)" 41777
chmod 700 sd; eq "chmod 700 on a directory" "$(st sd mode)" 40700

step chown "chown (numeric)"
printf 'o\n' > co
check "chown 1234:5678" chown 1234:5678 co
eq "chown: uid" "$(st co uid)" 1234
eq "chown: gid" "$(st co gid)" 5678
check "chgrp 4321" chgrp 4321 co
eq "chgrp: gid" "$(st co gid)" 4321
eq "chgrp: uid kept" "$(st co uid)" 1234
dropcaches
eq "chown: uid after drop_caches" "$(st co uid)" 1234
eq "chown: gid after drop_caches" "$(st co gid)" 4321

step utimes "utimes"
printf 'u\n' > ut
check "utimes 1000000000" $VT utimes ut 1000000000
eq "mtime" "$(st ut mtime)" 1000000000
dropcaches
eq "mtime after drop_caches" "$(st ut mtime)" 1000000000
check "utimes 1700000000" $VT utimes ut 1700000000
eq "mtime" "$(st ut mtime)" 1700000000

step mkdir "mkdir and rmdir"
check "mkdir dd" mkdir dd
check "dd is a directory" [ -d dd ]
check_not "mkdir of an existing name fails" mkdir dd
check "mkdir -p a/b/c" mkdir -p a/b/c
check "rmdir dd" rmdir dd
check_not "dd gone" [ -e dd ]
mkdir ne; : > ne/f
check_not "rmdir of a non-empty directory fails" rmdir ne
check "non-empty directory still there" [ -f ne/f ]
rm ne/f
check "rmdir once empty" rmdir ne
check_not "ne gone" [ -e ne ]
check_not "rmdir of a missing directory fails" rmdir ne

# A directory the client lists in several READDIRs, each resumed after the
# last cookie (braid-mds's cookies follow the names' hash, so each resume
# lands mid-directory), and that rm -r reads again once it has unlinked a
# first batch, resuming after a cookie whose entry is gone.  2000 entries
# do both: Linux 6.1 lists them cold in 3 READDIRs and removes them with 4.
DIRN=${POSIX_DIRN:-2000}
step readdir-create "readdir of $DIRN entries: create"
mkdir big || die "mkdir big"
i=0
while [ $i -lt $DIRN ]; do
	: > big/f$i || { fail "create big/f$i"; break; }
	i=$((i + 1))
done
step readdir-list "readdir of $DIRN entries: list"
seq 0 $((DIRN - 1)) | sed 's/^/f/' | sort > /tmp/names.exp
eq "ls big | wc -l" "$(ls big | wc -l)" $DIRN
ls big | sort > /tmp/names.got
check "readdir returns exactly the names created (no duplicates, none missing)" \
	cmp /tmp/names.exp /tmp/names.got
dropcaches
ls -a big | grep -v '^\.\.\?$' | sort > /tmp/names.got
check "readdir after drop_caches: exactly the names created" cmp /tmp/names.exp /tmp/names.got
eq "find big -type f | wc -l" "$(find big -type f | wc -l)" $DIRN
step readdir-remove "readdir of $DIRN entries: remove"
check "rm -r big (readdir while removing)" rm -r big
if [ -e big ]; then
	fail "big still exists after rm -r; moving it aside (../$W.big-leftover)"
	mv big "../$W.big-leftover"
fi

step locks "fcntl byte-range locks, two processes"
: > lk
# a run before this one in the same guest left its "locked" here: gone
# before the holder starts, or the wait below could see it
rm -f lk.release /tmp/lock.out
$VT lock lk 0 100 > /tmp/lock.out 2>&1 &
LPID=$!
i=0
while ! grep -q locked /tmp/lock.out 2>/dev/null && [ $i -lt 300 ]; do usleep 100000; i=$((i + 1)); done
if grep -q locked /tmp/lock.out; then
	ok "process $LPID holds a write lock on bytes 0-99"
	$VT trylock lk 50 10; rc=$?
	eq "F_SETLK on an overlapping range (50-59) fails with EAGAIN/EACCES: status" $rc 1
	$VT trylock lk 99 1; rc=$?
	eq "F_SETLK on the last locked byte (99) conflicts: status" $rc 1
	$VT trylock lk 100 10; rc=$?
	eq "F_SETLK on a disjoint range (100-109) succeeds: status" $rc 0
	out=$($VT getlk lk 50 10)
	case $out in
	"locked pid=$LPID "*) ok "F_GETLK reports the holder: $out";;
	*) fail "F_GETLK on 50-59: got '$out', expected the holder pid $LPID";;
	esac
	: > lk.release
	wait $LPID; rc=$?
	eq "holder unlocked and exited: status" $rc 0
	$VT trylock lk 50 10; rc=$?
	eq "F_SETLK on 50-59 after release succeeds: status" $rc 0
	eq "F_GETLK after release" "$($VT getlk lk 0 0)" unlocked
else
	fail "vmtool lock never reported 'locked': $(cat /tmp/lock.out)"
	: > lk.release
	kill $LPID 2>/dev/null
	wait $LPID
fi
rm -f lk.release

step openunlink "open, unlink, read through the open descriptor"
check "vmtool openunlinkread (write, unlink, name gone, read back via fd)" $VT openunlinkread oul
check_not "oul gone" [ -e oul ]
i=0
while ls -A | grep -q '^\.nfs' && [ $i -lt 50 ]; do usleep 200000; i=$((i + 1)); done
eq "no silly-renamed .nfs* file left after close" "$(ls -A | grep '^\.nfs')" ""

step mmap "mmap write, read back with read(2)"
check "vmtool mmapwrite mm 1000003 bytes" $VT mmapwrite mm 1000003 "braid mmap 0123456789 "
eq "mmap file size" "$(st mm size)" 1000003
check "read(2) sees the mmap'ed data" $VT readcheck mm 1000003 "braid mmap 0123456789 "
dropcaches
check "read(2) sees the mmap'ed data after drop_caches (from the server)" \
	$VT readcheck mm 1000003 "braid mmap 0123456789 "

LMIB=${POSIX_LARGE_MIB:-32}
step large-write "large file: $LMIB MiB"
dd if=/dev/urandom of=/tmp/large bs=1M count=$LMIB 2>/dev/null || die "dd to guest /tmp"
LMD5=$(md5 /tmp/large)
T large-dd-start
check "dd $LMIB MiB to the mount (conv=fsync)" dd if=/tmp/large of=large.bin bs=1M conv=fsync 2>/dev/null
T large-dd-done
eq "large: size" "$(st large.bin size)" $((LMIB * 1048576))
dropcaches
T large-read-start
eq "large: md5 read back after drop_caches" "$(md5 large.bin)" "$LMD5"
T large-read-done
rm -f /tmp/large

step remount "unmount, remount, verify everything kept"
manifest > /tmp/before
mountstats "first mount"
echo "manifest: $(wc -l < /tmp/before) entries"
cd / || die "cd /"
umount "$MNT" || die "umount $MNT"
grep -q " $MNT $FSTYPE " /proc/mounts && die "$MNT still mounted after umount"
mnt || die "remount $SERVER:$PORT$EXPORT"
T remounted
cd "$MNT/$W" || die "cd $MNT/$W after remount"
manifest > /tmp/after
if cmp -s /tmp/before /tmp/after; then
	ok "after remount: same names, types, modes, owners, sizes, mtimes, link counts, md5sums and symlink targets"
else
	fail "after remount the tree differs (- before, + after):"
	diff /tmp/before /tmp/after
fi
eq "after remount: rb" "$(cat rb)" AAA
eq "after remount: hl link count" "$(st hl nlink)" 2
eq "after remount: readlink sl" "$(readlink sl)" hl
eq "after remount: readlink dangling" "$(readlink dangling)" "$LONG"
eq "after remount: co uid:gid" "$(st co uid):$(st co gid)" 1234:4321
eq "after remount: ut mtime" "$(st ut mtime)" 1700000000
eq "after remount: large md5" "$(md5 large.bin)" "$LMD5"
check "after remount: mmap'ed file" $VT readcheck mm 1000003 "braid mmap 0123456789 "
check "after remount: F_SETLK on lk (nothing held)" $VT trylock lk 0 100

step cleanup "remove everything"
cd "$MNT" || die "cd $MNT"
check "rm -rf $W" rm -rf "$W"
check_not "$W gone" [ -e "$W" ]

mountstats "after the remount"
cd /
if umount "$MNT"; then ok "final umount"; else fail "final umount of $MNT"; fi
T done
if [ $FAILS -ne 0 ]; then
	echo "POSIX-FAILED: $FAILS check(s) failed"
	exit 1
fi
echo POSIX-OK
exit 0
