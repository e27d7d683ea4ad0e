#!/bin/sh
# install-deps.sh -- install every Debian 12 package cxlpool builds and tests
# with, then build the nng it links (scripts/build-nng.sh: Debian's nng
# source with the fix for nng#1518). Run as root (CI does); a no-op when
# everything is already there. python3-torch (about 600 MB installed) is
# for tests/python/test_torch.py's CPU tensors, under /usr/bin/python3.
set -eu
PKGS="meson ninja-build pkg-config cmake gcc libpmem2-dev libdaxctl-dev
libndctl-dev uuid-dev libnng-dev libmbedtls-dev patch xz-utils
libcriterion-dev libxxhash-dev clang libclang-rt-14-dev python3 python3-pip python3-setuptools
python3-wheel scdoc systemd tmux openssl python3-torch"
missing=""
for p in $PKGS; do
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
"$(dirname "$0")/build-nng.sh"
