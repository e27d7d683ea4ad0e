#!/bin/sh
# build-nng.sh -- build the nng that cxlpool links: Debian 12's own nng
# source package (1.5.2-2), with Debian's patch series and then ours
# (deps/nng/*.patch), as a static, position-independent library installed
# under .deps/nng/ (or $CXLP_NNG_PREFIX). meson.build finds it there.
#
# Why: nng 1.5.2 stops accepting for good when a peer hangs up during the
# SP header exchange (nng#1518, fixed upstream in 1.6.0), and its dialer
# stops redialing for good on the same hang-up from the server's side
# (deps/nng/README.md); and any nng aborts a child of fork() at its first
# nng call once the parent used nng (no upstream fix). Debian 12 has no
# newer nng, so cxlpool builds Debian's own source with the fixes. Nothing but Debian's archive is used:
# the source comes through apt-get source, with a private source list and
# private package lists (the system's apt configuration is left alone).
#
# Skipped (exit 0, nothing built) when the system's nng is 1.6.0 or newer:
# meson then links the system's, which has #1518 fixed but not fork (a
# child of a process that connected is then refused a connect, -ENOTSUP,
# rather than aborted: deps/nng/README.md). Idempotent: a prefix already built from
# the same source and patches is kept. Needs root for apt-get (or sudo).
set -eu
cd "$(dirname "$0")/.."
top=$PWD
prefix=${CXLP_NNG_PREFIX:-$top/.deps/nng}
work=$top/.deps/nng-build
pkg=nng
ver=1.5.2-2
hdr=/usr/include/nng/nng.h

system_is_fixed() {
	[ -f "$hdr" ] || return 1
	minor=$(sed -n 's/^#define NNG_MINOR_VERSION \([0-9]*\).*/\1/p' "$hdr")
	major=$(sed -n 's/^#define NNG_MAJOR_VERSION \([0-9]*\).*/\1/p' "$hdr")
	[ "${major:-0}" -gt 1 ] || { [ "${major:-0}" -eq 1 ] &&
		[ "${minor:-0}" -ge 6 ]; }
}

if system_is_fixed; then
	echo "build-nng: the system's nng is 1.6 or newer; using it"
	exit 0
fi
want="$pkg $ver $(cat deps/nng/*.patch | sha256sum | cut -c1-16)"
if [ -f "$prefix/lib/libnng.a" ] && [ "$(cat "$prefix/.stamp" 2>/dev/null)" = "$want" ]; then
	exit 0
fi

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo

# A source list naming the same archive as the system's binary one.
fetch_source() {
	apt=$work/apt
	rm -rf "$apt"
	mkdir -p "$apt/lists/partial" "$apt/parts" "$apt/cache/archives/partial"
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] && sed 's/^Types:.*/Types: deb-src/' "$f" \
			>"$apt/parts/$(basename "$f")"
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] && sed -n 's/^deb \(.*\)/deb-src \1/p' "$f" \
			>>"$apt/parts/system.list"
	done
	set -- -o APT::Sandbox::User="$(id -un)" \
		-o Dir::Etc::SourceList=/dev/null \
		-o Dir::Etc::SourceParts="$apt/parts" \
		-o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" -qq
	$SUDO apt-get "$@" update
	(cd "$work" && $SUDO apt-get "$@" source --download-only "$pkg=$ver")
}

unpack() {
	src=$work/$pkg-${ver%-*}
	rm -rf "$src" "$work/debian"
	tar -C "$work" -xzf "$work/${pkg}_${ver%-*}.orig.tar.gz"
	tar -C "$work" -xJf "$work/${pkg}_$ver.debian.tar.xz"
	for p in $(grep -v '^#' "$work/debian/patches/series"); do
		patch -s -d "$src" -p1 <"$work/debian/patches/$p"
	done
	for p in deps/nng/*.patch; do
		patch -s -d "$src" -p1 <"$p"
	done
}

build() {
	cmake -S "$src" -B "$work/b" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
		-DNNG_ENABLE_TLS=ON -DNNG_TESTS=OFF -DNNG_TOOLS=OFF \
		-DNNG_ENABLE_NNGCAT=OFF -DCMAKE_INSTALL_PREFIX="$prefix" \
		>"$work/cmake.log" 2>&1 || { cat "$work/cmake.log" >&2; exit 1; }
	ninja -C "$work/b" -j "${CXLP_NNG_JOBS:-2}" >"$work/ninja.log" || {
		tail -n 40 "$work/ninja.log" >&2; exit 1; }
	rm -rf "$prefix"
	ninja -C "$work/b" install >/dev/null
}

mkdir -p "$work"
ls "$work/${pkg}_$ver.dsc" >/dev/null 2>&1 || fetch_source
unpack
build
echo "$want" >"$prefix/.stamp"
echo "build-nng: nng $ver with deps/nng patches in $prefix"
