#!/bin/sh
# build-previous.sh -- build the previous release (the commit named in
# tests/compat/PREVIOUS) for the compat suite: its libcxlpool.so,
# cxlpool-metaserver and pool-inspect, and tests/compat/client.c of this
# tree compiled against its library (the old handler the tests drive).
#
# The source comes from this repository's own history (git archive of
# the commit; nothing is downloaded). It goes to .deps/previous/ (or
# $CXLP_PREV_DIR), outside every build directory, so build/ and
# build-asan/ share one old build; a stamp naming the commit, the nng
# prefix and client.c's hash makes a second run a no-op. Only the four
# targets are built, at -O1 without debug info and with tests disabled:
# about 6 s on 2 cores without ccache (115 files at -O1, no -g), under 1 s
# when the stamp matches.
#
#   tests/compat/build-previous.sh [NNG_PREFIX]
# NNG_PREFIX (else $CXLP_NNG_PREFIX, else .deps/nng): the nng that this
# tree's build links (meson_options.txt nng_prefix; scripts/build-nng.sh),
# given to the old tree's own nng_prefix option. A missing nng archive
# there means the system's nng (the old tree's meson decides as ours).
#
# Exit status: 0 built (or already built); 1 on any failure, said on
# stderr. A clone without the commit (git clone --depth) fails here, and
# the compat tests, told by CXLP_COMPAT_REQUIRE=1 (scripts/test.sh sets
# it), then fail too instead of skipping (docs/testing.md).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
commit=$(grep -v '^#' "$here/PREVIOUS" | head -n 1)
out=${CXLP_PREV_DIR:-$top/.deps/previous}
nng=${1:-${CXLP_NNG_PREFIX:-$top/.deps/nng}}
jobs=${CXLP_PREV_JOBS:-2}
cc=${CC:-cc}
command -v ccache >/dev/null 2>&1 && cc="ccache $cc"

fail() {
	echo "build-previous: $*" >&2
	exit 1
}

if ! git -C "$top" cat-file -e "$commit^{commit}" 2>/dev/null; then
	fail "commit $commit (tests/compat/PREVIOUS) is not in this clone" \
		"(a shallow clone? git fetch --unshallow)"
fi
want="$commit $nng $(sha256sum "$here/client.c" | cut -c1-16)"
if [ -x "$out/bin/compat-client" ] && [ -x "$out/bin/cxlpool-metaserver" ] &&
	[ "$(cat "$out/stamp" 2>/dev/null)" = "$want" ]; then
	exit 0
fi

# The source: the commit's tree, unpacked fresh (a reused one could hold
# files of an older commit that meson would pick up).
rm -rf "$out/src" "$out/stamp"
mkdir -p "$out/src" "$out/bin"
git -C "$top" archive --format=tar "$commit" | tar -x -C "$out/src" ||
	fail "git archive $commit failed"

b=$out/build
# the library's file name carries the old project version
ver=$(sed -n "s/^  version : '\\(.*\\)',$/\\1/p" "$out/src/meson.build")
opts="-Dnng_prefix=$nng -Dtests=disabled -Dfuzz=false -Ddebug=false
	-Doptimization=1"
if [ -f "$b/build.ninja" ]; then
	set -- configure "$b" # kept for ccache and ninja; the prefix may change
else
	set -- setup "$b" "$out/src"
fi
# shellcheck disable=SC2086
meson "$@" $opts >"$out/setup.log" 2>&1 ||
	{ cat "$out/setup.log" >&2; fail "meson $1 failed"; }
ninja -C "$b" -j "$jobs" "handler/libcxlpool.so.$ver" \
	metaserver/cxlpool-metaserver tools/pool-inspect/pool-inspect \
	>"$out/ninja.log" 2>&1 ||
	{ tail -n 40 "$out/ninja.log" >&2; fail "ninja failed"; }

# The old handler: this tree's compat client, against the old header and
# library only (it uses the public API both releases share). DT_RPATH,
# not RUNPATH: meson test sets LD_LIBRARY_PATH to the new library, which
# would win over a RUNPATH (compat-client says which it loaded).
$cc -std=c11 -O1 -D_GNU_SOURCE -Wall -o "$out/bin/compat-client" \
	"$here/client.c" -I"$out/src/include" -L"$b/handler" -lcxlpool \
	-Wl,--disable-new-dtags -Wl,-rpath,"$b/handler" ||
	fail "compat-client failed to build"
ln -sf "$b/metaserver/cxlpool-metaserver" "$out/bin/cxlpool-metaserver"
ln -sf "$b/tools/pool-inspect/pool-inspect" "$out/bin/pool-inspect"
echo "$want" >"$out/stamp"
echo "build-previous: $commit in $out/bin"
