#!/bin/sh
# docs/tracing.md's probe table is what the daemons carry: every USDT probe
# of provider braid in braid-mds and braid-ds (their ELF notes, readelf -n)
# has its row, each row's probe is in the binaries its "in" column names and
# in no other, and the table lists exactly the probes nfsd/trace.h declares.
set -u
srcdir=${top_srcdir:-.}
builddir=${top_builddir:-.}
doc=$srcdir/docs/tracing.md
hdr=$srcdir/nfsd/trace.h

command -v readelf >/dev/null 2>&1 || { echo "SKIP: readelf not installed (apt install binutils)"; exit 77; }
for b in braid-mds braid-ds; do
	[ -x "$builddir/$b" ] || { echo "ERROR: $builddir/$b not built"; exit 99; }
done
[ -f "$doc" ] && [ -f "$hdr" ] || { echo "ERROR: $doc or $hdr missing"; exit 99; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/braid-probes-XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT

# rows "| `name` | braid-mds, braid-ds | ..." -> "name<TAB>braid-mds, braid-ds"
awk -F'|' '$2 ~ /^ *`[a-z0-9_]+` *$/ {
	n = $2; gsub(/[ `]/, "", n); print n "\t" $3 }' "$doc" >"$tmp/rows"
[ -s "$tmp/rows" ] || { echo "FAIL: no probe table found in $doc"; exit 1; }
fail=0

dups=$(cut -f1 "$tmp/rows" | sort | uniq -d)
[ -z "$dups" ] || { echo "FAIL: $doc lists more than once:" $dups; fail=1; }

# what a binary carries against what the table says it carries
for b in braid-mds braid-ds; do
	readelf -n "$builddir/$b" | awk '
		$1 == "Provider:" { p = $2 }
		$1 == "Name:" && p == "braid" { print $2 }' | sort -u >"$tmp/$b.elf"
	[ -s "$tmp/$b.elf" ] || { echo "FAIL: $b has no braid probes (readelf -n)"; fail=1; }
	awk -F'\t' -v b="$b" '{ n = split($2, w, /[ ,]+/)
		for (i = 1; i <= n; i++) if (w[i] == b) print $1 }' "$tmp/rows" |
		sort -u >"$tmp/$b.doc"
	for p in $(comm -23 "$tmp/$b.elf" "$tmp/$b.doc"); do
		echo "FAIL: probe $p is in $b but docs/tracing.md does not list it for $b"
		fail=1
	done
	for p in $(comm -13 "$tmp/$b.elf" "$tmp/$b.doc"); do
		echo "FAIL: docs/tracing.md lists probe $p for $b, which does not have it"
		fail=1
	done
done

# the table against the list nfsd/trace.h defines semaphores for
sed -n 's/^[[:space:]]*X(\([a-z0-9_]*\))[[:space:]\\]*$/\1/p' "$hdr" | sort -u >"$tmp/hdr"
cut -f1 "$tmp/rows" | sort -u >"$tmp/doc"
for p in $(comm -23 "$tmp/hdr" "$tmp/doc"); do
	echo "FAIL: nfsd/trace.h declares probe $p, docs/tracing.md does not list it"
	fail=1
done
for p in $(comm -13 "$tmp/hdr" "$tmp/doc"); do
	echo "FAIL: docs/tracing.md lists probe $p, nfsd/trace.h does not declare it"
	fail=1
done

[ $fail = 0 ] && echo "ok: $(wc -l <"$tmp/doc") probes, braid-mds $(wc -l <"$tmp/braid-mds.elf"), braid-ds $(wc -l <"$tmp/braid-ds.elf")"
exit $fail
