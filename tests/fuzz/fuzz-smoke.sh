#!/bin/sh
# Run every fuzz target ($top_builddir/tests/fuzz/fuzz-*) for a few seconds
# (FUZZ_SMOKE_SECONDS, default 4).  Each gets its own corpus directory,
# seeded by the target itself through BRAID_FUZZ_SEED_DIR.  A crash, abort,
# sanitizer report or leak fails the test; crash inputs are kept in
# tests/fuzz/artifacts/.  Works with libFuzzer targets and with the
# standalone driver, which ignores the libFuzzer flags it does not know.
top_builddir=${top_builddir:-.}
secs=${FUZZ_SMOKE_SECONDS:-4}
dir=$top_builddir/tests/fuzz
artifacts=$dir/artifacts

tmp=$(mktemp -d "${TMPDIR:-/tmp}/braid-fuzz.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

found=0
failed=0
for bin in "$dir"/fuzz-*; do
	name=${bin##*/}
	case $name in
	*.*) continue ;; # logs, scripts, objects
	esac
	[ -f "$bin" ] && [ -x "$bin" ] || continue
	found=$((found + 1))
	corpus=$tmp/$name
	mkdir -p "$corpus" "$artifacts" || exit 99
	log=$tmp/$name.log
	if BRAID_FUZZ_SEED_DIR=$corpus "$bin" -max_total_time="$secs" \
		-rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$artifacts/$name-" "$corpus" >"$log" 2>&1; then
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
		echo "PASS: $name (${runs:-?} runs, $(ls "$corpus" | wc -l) corpus inputs)"
	else
		rc=$?
		echo "FAIL: $name (exit $rc); last lines of its output:"
		tail -n 60 "$log"
		failed=$((failed + 1))
	fi
done

if [ "$found" -eq 0 ]; then
	echo "SKIP: no fuzz targets built (looked for $dir/fuzz-*)"
	exit 77
fi
[ "$failed" -eq 0 ] || exit 1
exit 0
