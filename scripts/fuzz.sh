#!/bin/sh
# fuzz.sh -- build the libFuzzer targets with clang and run each one for
# SECONDS (default 30): fuzz_proto (every frame decoder of the codec) and
# fuzz_dispatch (the metaserver's request dispatch on a real pool file).
# Exits non-zero on a crash, a sanitizer finding, a broken invariant the
# targets check, or a build failure.
#
# Usage: scripts/fuzz.sh [SECONDS]     (from anywhere in the tree)
#   FUZZ_BUILD=dir   build folder (default build-fuzz)
#
# The whole tree is built with ASan+UBSan and libFuzzer's coverage
# instrumentation (-fsanitize=fuzzer-no-link), so the pool and metaserver
# libraries guide the fuzzer too. New inputs go to $FUZZ_BUILD/corpus/<t>,
# so the committed seeds (fuzz/corpus/<t>) are only read; crash inputs land
# in $FUZZ_BUILD/ as crash-*, and the failing target's name is printed.
set -eu

secs=${1:-30}
case $secs in
''|*[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;;
esac

cd "$(dirname "$0")/.."
b=${FUZZ_BUILD:-build-fuzz}
opts="-Dfuzz=true -Dtests=disabled -Db_lundef=false
-Db_sanitize=address,undefined -Dc_args=-fsanitize=fuzzer-no-link"
if [ -f "$b/build.ninja" ]; then
	# shellcheck disable=SC2086
	meson configure "$b" $opts >/dev/null
else
	# shellcheck disable=SC2086
	CC=clang meson setup "$b" $opts >/dev/null
fi
ninja -C "$b" fuzz-targets

# Findings are fatal: UBSan reports abort instead of printing and going on.
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
rc=0
for t in fuzz_proto fuzz_dispatch; do
	mkdir -p "$b/corpus/$t"
	echo "fuzz.sh: $t for ${secs}s"
	dict=
	if [ -f "fuzz/${t#fuzz_}.dict" ]; then
		dict="-dict=fuzz/${t#fuzz_}.dict"
	fi
	# shellcheck disable=SC2086
	if ! "./$b/fuzz/$t" $dict -max_total_time="$secs" -timeout=10 \
	    -rss_limit_mb=2048 -print_final_stats=1 \
	    -artifact_prefix="$b/$t-" \
	    "$b/corpus/$t" "fuzz/corpus/${t#fuzz_}" 2>"$b/$t.log"; then
		tail -n 60 "$b/$t.log" >&2
		echo "fuzz.sh: $t FAILED; input saved as $b/$t-crash-*" >&2
		rc=1
	else
		grep -E 'stat::number_of_executed_units|Done' "$b/$t.log" |
		    tail -n 2
	fi
done
exit $rc
