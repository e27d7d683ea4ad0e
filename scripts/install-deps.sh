#!/bin/sh
# install-deps.sh -- install every Debian 12 package cxlpool builds and tests
# with, then build the nng it links (scripts/build-nng.sh: Debian's nng
# source with the fix for nng#1518). Run as root (CI does); a no-op when
# everything is already there.
#   install-deps.sh            everything
#   install-deps.sh --build    what building and the C/Python suites need,
#                              and nng
#   install-deps.sh --extras   the rest: python3-torch (about 600 MB
#                              installed: tests/python/test_torch.py's CPU
#                              tensors, under /usr/bin/python3) and the
#                              Debian packaging tools scripts/test-debs.sh
#                              uses; scripts/test.sh runs this one in the
#                              background while build/ compiles
set -eu
BUILD_PKGS="meson ninja-build pkg-config cmake gcc libpmem2-dev libdaxctl-dev
libndctl-dev uuid-dev libnng-dev libmbedtls-dev patch xz-utils
libcriterion-dev libxxhash-dev clang libclang-rt-14-dev python3 python3-pip
python3-setuptools python3-wheel python3-pytest scdoc systemd tmux openssl
libcurl4-openssl-dev libcjson-dev"
# etcd-server: tests/metaserver/test_elect.c starts its own members on
# loopback ports (the package also enables a system etcd.service on
# 2379 where systemd runs; the tests do not use it)
TEST_PKGS="etcd-server"
EXTRA_PKGS="python3-torch debhelper lintian dpkg-dev"
case ${1:-} in
--build) pkgs="$BUILD_PKGS $TEST_PKGS" ;;
--extras) pkgs=$EXTRA_PKGS ;;
'') pkgs="$BUILD_PKGS $TEST_PKGS $EXTRA_PKGS" ;;
*) echo "usage: $0 [--build | --extras]" >&2; exit 2 ;;
esac
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	SUDO=""
	[ "$(id -u)" -ne 0 ] && SUDO=sudo
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
		--no-install-recommends $missing
fi
[ "${1:-}" = --extras ] || "$(dirname "$0")/build-nng.sh"
