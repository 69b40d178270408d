#!/bin/sh
# Every man page lints clean (groff -ww), and every setting a daemon
# accepts (its --config-keys list) is documented in its page.
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
check_keys() { # daemon page
	bin=$builddir/$1
	[ -x "$bin" ] || { echo "FAIL: $bin not built"; fail=1; return; }
	keys=$("$bin" --config-keys | awk -F'\t' '!/^#/ { print $2 }')
	[ -n "$keys" ] || { echo "FAIL: $1 --config-keys listed nothing"; fail=1; return; }
	for k in $keys; do
		# documented as a .TP tag: .B key / .BR key ... / .BR a ", " key
		if ! grep -Eq "^\.BR? ($k( |\$)|.*\" $k( |\$))" "$srcdir/man/$2"; then
			echo "FAIL: setting '$k' of $1 is not documented in man/$2"; fail=1
		fi
	done
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
[ $fail = 0 ] && echo ok
exit $fail
