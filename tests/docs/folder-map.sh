#!/bin/sh
# The folder map of docs/architecture.md ("## Folders and what each may
# include") holds: every #include "dir/..." in a folder's .c and .h files
# names a folder (or a file) that the map lets that folder include, and
# every top-level folder with C sources is in the map.  So the document
# stays true to the code, and a part cannot quietly start to depend on one
# above it (braid-mds on the data server, say).
set -u
srcdir=${top_srcdir:-.}
doc=$srcdir/docs/architecture.md
map=$(awk '/^## Folders and what each may include/ { on = 1; next } /^## / { on = 0 }
	on && /^\| `[a-z]+\/` \|/' "$doc")
if [ -z "$map" ]; then
	echo "FAIL: no folder map in $doc"
	exit 1
fi
tmp=$(mktemp) || exit 99
trap 'rm -f "$tmp"' EXIT
echo "$map" >"$tmp"
fail=0
listed=""
while IFS='|' read -r _ folder _ allowed _; do
	folder=$(echo "$folder" | tr -d ' `')
	allowed=$(echo "$allowed" | tr -d '`')
	listed="$listed $folder"
	[ -d "$srcdir/$folder" ] || { echo "FAIL: the map lists $folder, which does not exist"; fail=1; continue; }
	files=$(find "$srcdir/$folder" -name '*.[ch]' -type f)
	for f in $files; do
		incs=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z_]*\/[^"]*\)".*/\1/p' "$f")
		for inc in $incs; do
			ok=0
			for a in $allowed; do
				case $inc in
				"$a"*) ok=1; break ;;
				esac
			done
			if [ $ok -eq 0 ]; then
				echo "FAIL: ${f#"$srcdir"/} includes \"$inc\": $folder may include only $allowed (docs/architecture.md)"
				fail=1
			fi
		done
	done
done <"$tmp"
# Every top-level folder with C sources is in the map.
for d in "$srcdir"/*/; do
	name=$(basename "$d")/
	case $name in build*/ | autom4te.cache/ | m4/ | build-aux/) continue ;; esac
	[ -n "$(find "$d" -name '*.[ch]' -type f ! -path '*/xdr/*' 2>/dev/null | head -1)" ] || continue
	case " $listed " in
	*" $name "*) ;;
	*) echo "FAIL: $name holds C sources but is not in the folder map of docs/architecture.md"; fail=1 ;;
	esac
done
[ $fail -eq 0 ] && echo "folder map: every include is allowed ($(echo "$map" | wc -l) folders)"
exit $fail
