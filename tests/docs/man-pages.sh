#!/bin/sh
# Every man page lints clean (groff -ww), every setting a daemon accepts
# (its --config-keys list) is documented in its page and in braid.conf(5),
# and the pages of the tools and the overview exist.
set -u
srcdir=${top_srcdir:-.}
builddir=${top_builddir:-.}
command -v groff >/dev/null 2>&1 || { echo "SKIP: groff not installed (apt install groff)"; exit 77; }
fail=0
for page in "$srcdir"/man/*.[1-8]; do
	out=$(groff -ww -man -z "$page" 2>&1)
	if [ -n "$out" ]; then
		echo "FAIL: $page: groff warnings:"; echo "$out"; fail=1
	fi
done
check_keys() { # daemon page [section: only the page's ".SH [section]..." part]
	bin=$builddir/$1
	[ -x "$bin" ] || { echo "FAIL: $bin not built"; fail=1; return; }
	keys=$("$bin" --config-keys | awk -F'\t' '!/^#/ { print $2 }')
	[ -n "$keys" ] || { echo "FAIL: $1 --config-keys listed nothing"; fail=1; return; }
	text=$srcdir/man/$2
	if [ -n "${3:-}" ]; then
		text=$(mktemp) || exit 99
		awk -v s=".SH [$3]" 'index($0, s) == 1 { on = 1; next } /^\.SH / { on = 0 } on' \
			"$srcdir/man/$2" >"$text"
	fi
	for k in $keys; do
		# documented as a .TP tag: .B key / .BR key ... / .BR a ", " key
		if ! grep -Eq "^\.BR? ($k( |\$)|.*\" $k( |\$))" "$text"; then
			echo "FAIL: setting '$k' of $1 is not documented in man/$2${3:+ section [$3]}"
			fail=1
		fi
	done
	[ -z "${3:-}" ] || rm -f "$text"
}
# Every daemon whose page documents --config-keys: the page is named after it.
checked=
for page in "$srcdir"/man/*.8; do
	grep -q 'config\\-keys' "$page" || continue
	name=$(basename "$page" .8)
	check_keys "$name" "$name.8"
	checked="$checked $name"
done
for d in braid-ds braid-mds; do
	case " $checked " in
	*" $d "*) ;;
	*) echo "FAIL: man/$d.8 is missing or does not document --config-keys"; fail=1 ;;
	esac
done
# braid.conf(5) documents both daemons' settings, each in its section
check_keys braid-mds braid.conf.5 mds
check_keys braid-ds braid.conf.5 ds
for page in braidctl.8 braid.conf.5 braid.7 braid-exports.5; do
	[ -f "$srcdir/man/$page" ] || { echo "FAIL: man/$page is missing"; fail=1; }
done
[ $fail = 0 ] && echo ok
exit $fail
