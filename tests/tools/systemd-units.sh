#!/bin/sh
# The systemd units (systemd/*.service.in, installed by 'make install'):
# Type=notify services (the daemons send READY=1 themselves, see
# tests/nfsd/sd-notify), braid-ds@ instances named after their settings
# file, and, where systemd-analyze is installed, units it verifies clean
# (pointed at the binaries just built).
set -u
srcdir=${top_srcdir:-.}
builddir=${top_builddir:-.}
fail() { echo "FAIL: $*"; exit 1; }
for u in braid-mds.service braid-ds@.service; do
	f=$builddir/systemd/$u
	[ -f "$f" ] || { echo "ERROR: $f not generated"; exit 99; }
	grep -q '^Type=notify$' "$f" || fail "$u is not Type=notify"
	grep -q '^ExecStart=/' "$f" || fail "$u: ExecStart is not an absolute path"
	grep -q '@[a-z]*@' "$f" && fail "$u: unsubstituted @variable@"
done
grep -q '^ExecStart=.*/braid-ds -c /etc/braid/ds-%i.conf$' "$builddir/systemd/braid-ds@.service" ||
	fail "braid-ds@: the instance does not name its settings file"
grep -q '^ExecReload=/bin/kill -HUP \$MAINPID$' "$builddir/systemd/braid-mds.service" ||
	fail "braid-mds: no ExecReload (SIGHUP re-reads the exports)"
command -v systemd-analyze >/dev/null 2>&1 || { echo "ok (systemd-analyze not installed: not verified)"; exit 0; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/braid-units-XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
bin=$(cd "$builddir" && pwd)
for u in braid-mds.service braid-ds@.service; do
	sed "s|^ExecStart=[^ ]*/\(braid-[a-z]*\)|ExecStart=$bin/\1|" "$builddir/systemd/$u" >"$tmp/$u"
done
cp "$tmp/braid-ds@.service" "$tmp/braid-ds@disk1.service"
out=$(cd "$tmp" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no \
	./braid-mds.service ./braid-ds@disk1.service 2>&1)
# complaints about the host (no systemd running in a container) are not ours
ours=$(printf '%s\n' "$out" | grep -F -e braid-mds.service -e braid-ds@ |
	grep -v -i -e 'bus' -e 'booted' -e 'not running')
[ -z "$ours" ] || { printf '%s\n' "$out"; fail "systemd-analyze verify"; }
echo ok
