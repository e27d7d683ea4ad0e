#!/bin/sh
# test.sh -- set up and run every cxlpool test: installs the Debian packages
# (scripts/install-deps.sh), builds, runs the suite, then builds again with
# AddressSanitizer + UBSan (findings fail the test) and runs it again.
#   scripts/test.sh            both builds
#   scripts/test.sh --quick    the plain build only
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh

run_suite() { # builddir [meson setup args...]
	dir=$1
	shift
	[ -f "$dir/build.ninja" ] || meson setup "$dir" "$@" >/dev/null
	ninja -C "$dir"
	status=0
	meson test -C "$dir" --print-errorlogs --num-processes 2 || status=$?
	python3 scripts/test-summary.py "$dir" "$(basename "$dir")"
	return $status
}

rc=0
run_suite build || rc=1
if [ "${1:-}" != "--quick" ]; then
	run_suite build-asan -Db_sanitize=address,undefined -Db_lundef=false \
		-Dsanitize_strict=true || rc=1
fi
exit $rc
