#!/bin/sh
# test.sh -- set up and run every cxlpool test: installs the Debian packages
# (scripts/install-deps.sh --build; its --extras, python3-torch and the
# packaging tools, install in the background while build/ compiles), then
#   0. the previous release (tests/compat/build-previous.sh), which the
#      compat suite runs against this one, from this clone's history
#   1. build/       plain build, the whole suite (soak: 10 s of its --quick
#                   run, on a pool small enough that it evicts all the
#                   time, 10 s of --hostile and 8 s of --hosts 3; these
#                   three only with --quick: the full run soaks build/
#                   longer in step 5)
#   2. build-asan/  AddressSanitizer + UBSan, the whole suite again but
#                   python_install and python_torch (no C code of their
#                   own, 13 s each under ASan)
#   3. build-tsan/  ThreadSanitizer: the metaserver, the handler library (in
#                   the integration tests' worker processes) and the soak
#                   (parent, 8 workers, metaserver), driven by the
#                   integration tests of build/ and by cxlp-soak
#   4. fuzz         scripts/fuzz.sh: both libFuzzer targets, 15 s each
#                   (needs clang, which install-deps.sh installs)
#   5. soak         build/'s cxlp-soak in full (45 s, a kill every 1.5 s):
#                   what piles up slowly (pages, regions, pins) shows only
#                   in a run this long (a 10 s run, as in --quick, cannot fill
#                   its pool); then 15 s of it on a pool that evicts all the
#                   time (--evict), then its --hostile form for 20 s (a
#                   prober on the server's endpoints, 4 workers, no kills,
#                   no call may fail), then 15 s of --hosts 3 (a sim
#                   pool, the workers on 3 simulated hosts, the audit on
#                   a fourth)
#   6. debs         scripts/test-debs.sh: the Debian packages built with
#                   dpkg-buildpackage, lintian (no error), installed,
#                   tried (metaserver, pool-inspect, a C program through
#                   pkg-config, the Python package), removed
# Any test failure, sanitizer finding or fuzz crash fails the run.
#   scripts/test.sh            all six
#   scripts/test.sh --quick    the plain build only
#
# Why TSan drives build/'s tests instead of its own: Criterion's runner
# cannot start under ThreadSanitizer ("Could not initialize inheritable
# arena", Snaipe/Criterion#274), and the Python suite would need libtsan
# preloaded into a plain interpreter. So under TSan the processes under
# test are TSan builds (CXLP_METASERVER, CXLP_ITEST_WORKER) and the
# Criterion runners that drive them are not. No suppressions are used.
set -eu
cd "$(dirname "$0")/.."
export CXLP_REQUIRE_TORCH=1 # test_torch.py: torch is installed; no skip
# tests/compat: the previous release is built below (build-previous.sh);
# its tests fail rather than skip when it is missing (a shallow clone)
export CXLP_COMPAT_REQUIRE=1

# install-deps.sh --extras, started in the background: wait for it once,
# before the first suite runs (test_torch.py needs torch). A failure is
# noted (extras_failed) and fails the run at the end; the suites still
# run, test_torch failing there by name
extras=""
extras_failed=0
extras_log=$(mktemp /tmp/cxlp-extras.XXXXXX)
wait_extras() {
	[ -n "$extras" ] || return 0
	wait "$extras" || extras_failed=1
	extras=""
	if [ $extras_failed -ne 0 ]; then
		cat "$extras_log" >&2
		echo "test.sh: install-deps.sh --extras failed" >&2
	fi
}

run_suite() { # builddir [meson setup args...]; $suite_args: meson test's
	dir=$1
	shift
	[ -f "$dir/build.ninja" ] || meson setup "$dir" "$@" >/dev/null
	ninja -C "$dir"
	wait_extras
	status=0
	# shellcheck disable=SC2086
	meson test -C "$dir" --print-errorlogs --num-processes 2 \
		${suite_args:-} || status=$?
	python3 scripts/test-summary.py "$dir" "$(basename "$dir")"
	return $status
}

run_tsan() {
	dir=build-tsan
	rep=$PWD/$dir/tsan-reports
	[ -f "$dir/build.ninja" ] || meson setup "$dir" -Db_sanitize=thread \
		-Db_lundef=false >/dev/null
	ninja -C "$dir" metaserver/cxlpool-metaserver \
		tests/integration/itest-worker tests/soak/cxlp-soak
	rm -rf "$rep"
	mkdir -p "$rep"
	status=0
	(
	export TSAN_OPTIONS="halt_on_error=1 exitcode=66 log_path=$rep/report"
	export CXLP_METASERVER=$PWD/$dir/metaserver/cxlpool-metaserver
	export CXLP_ITEST_WORKER=$PWD/$dir/tests/integration/itest-worker
	export CXLP_POOL_INSPECT=$PWD/build/tools/pool-inspect/pool-inspect
	export CXLP_LIBDIR=$PWD/build/handler CXLP_SRCDIR=$PWD
	st=0
	tsan_one() { # one integration test program; its tail if it fails
		echo "tsan: $1"
		"$1" -j2 >"$rep/$(basename "$1").out" 2>&1 || {
			tail -n 30 "$rep/$(basename "$1").out"; return 1; }
	}
	# itest_group_crash is the longest by far under TSan (~100 s: a
	# server restarted at each persist point of a commit, mostly waits):
	# it runs beside the others rather than after them
	slow=build/tests/integration/itest_group_crash
	tsan_one "$slow" &
	slow_pid=$!
	for t in build/tests/integration/itest_*; do
		[ -f "$t" ] && [ -x "$t" ] && [ "$t" != "$slow" ] || continue
		tsan_one "$t" || st=1
	done
	wait "$slow_pid" || st=1
	echo "tsan: cxlp-soak --quick --seconds 10"
	"$dir/tests/soak/cxlp-soak" --quick --seconds 10 || st=1
	exit $st
	) || status=1
	if ls "$rep"/report.* >/dev/null 2>&1; then
		cat "$rep"/report.* >&2
		echo "tsan: ThreadSanitizer reports above" >&2
		status=1
	fi
	[ $status -eq 0 ] && echo "tsan: OK (no reports)"
	return $status
}

run_soak() {
	echo "soak: cxlp-soak (45 s)"
	CXLP_METASERVER=$PWD/build/metaserver/cxlpool-metaserver \
	CXLP_POOL_INSPECT=$PWD/build/tools/pool-inspect/pool-inspect \
		build/tests/soak/cxlp-soak --seconds 45 || return 1
	echo "soak: cxlp-soak --evict (15 s)"
	CXLP_METASERVER=$PWD/build/metaserver/cxlpool-metaserver \
	CXLP_POOL_INSPECT=$PWD/build/tools/pool-inspect/pool-inspect \
		build/tests/soak/cxlp-soak --evict --seconds 15 || return 1
	echo "soak: cxlp-soak --hostile (20 s)"
	CXLP_METASERVER=$PWD/build/metaserver/cxlpool-metaserver \
	CXLP_POOL_INSPECT=$PWD/build/tools/pool-inspect/pool-inspect \
		build/tests/soak/cxlp-soak --hostile --seconds 20 --workers 4 \
		|| return 1
	echo "soak: cxlp-soak --hosts 3 (15 s)"
	CXLP_METASERVER=$PWD/build/metaserver/cxlpool-metaserver \
	CXLP_POOL_INSPECT=$PWD/build/tools/pool-inspect/pool-inspect \
		build/tests/soak/cxlp-soak --hosts 3 --seconds 15 --pool-mib 128
}

# step name cmd...: run one step, note how long it took (a CI log that
# went past its budget says where the time went)
times=""
step() {
	name=$1
	shift
	t0=$(date +%s)
	st=0
	"$@" || st=1
	times="$times$name $(($(date +%s) - t0)) s; "
	return $st
}

rc=0
step deps scripts/install-deps.sh --build
# the previous release, for the compat suite: from this clone's history
# (tests/compat/PREVIOUS; seconds with a warm ccache)
step previous tests/compat/build-previous.sh || rc=1
scripts/install-deps.sh --extras >"$extras_log" 2>&1 &
extras=$!
# the whole run soaks build/ in step 5 (longer, the same four forms), so
# its suite leaves out the 10 s soaks; --quick keeps them
[ "${1:-}" = "--quick" ] || suite_args="--no-suite soak"
step build run_suite build || rc=1
suite_args=""
if [ "${1:-}" != "--quick" ]; then
	suite_args="--no-suite python_slow" # tests/python/meson.build
	step asan run_suite build-asan -Db_sanitize=address,undefined \
		-Db_lundef=false -Dsanitize_strict=true \
		-Dexpensive_checks=true || rc=1
	suite_args=""
	step tsan run_tsan || rc=1
	if command -v clang >/dev/null 2>&1; then
		step fuzz scripts/fuzz.sh 15 || rc=1
	else
		echo "test.sh: clang not found: fuzzing skipped" >&2
		rc=1
	fi
	step soak run_soak || rc=1
	step debs scripts/test-debs.sh || rc=1
fi
wait_extras # --quick: not waited for yet if the build failed
rm -f "$extras_log"
echo "test.sh: times: $times"
if [ $extras_failed -ne 0 ]; then
	echo "test.sh: install-deps.sh --extras failed (python3-torch," \
		"debhelper, lintian): see its output above" >&2
	rc=1
fi
# The failures again, last, with the tails of their output: a CI log cut
# to its tail still shows them.
for d in build build-asan; do
	[ -f "$d/meson-logs/testlog.json" ] &&
		python3 scripts/test-summary.py --last "$d" "$d"
done
[ $rc -eq 0 ] && echo "test.sh: PASS" || echo "test.sh: FAIL" >&2
exit $rc
