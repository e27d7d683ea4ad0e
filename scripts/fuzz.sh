#!/bin/sh
# fuzz.sh -- build the libFuzzer targets with clang and fuzz the protocol
# codec for SECONDS (default 60). Exits non-zero on a crash, a sanitizer
# finding or a build failure.
#
# Usage: scripts/fuzz.sh [SECONDS]     (from anywhere in the tree)
#
# New inputs go to build-fuzz/corpus/proto, so the committed seed corpus
# (fuzz/corpus/proto) is only read; crash inputs land in build-fuzz/.
set -eu

secs=${1:-60}
case $secs in
''|*[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;;
esac

cd "$(dirname "$0")/.."
if [ ! -d build-fuzz ]; then
	CC=clang meson setup build-fuzz -Dfuzz=true -Db_lundef=false
fi
ninja -C build-fuzz fuzz-targets

mkdir -p build-fuzz/corpus/proto
./build-fuzz/fuzz/fuzz_proto -max_total_time="$secs" \
    -artifact_prefix=build-fuzz/ \
    build-fuzz/corpus/proto fuzz/corpus/proto
