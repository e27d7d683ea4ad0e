#!/bin/sh
# demo.sh -- the main job, end to end on a fresh machine: install packages,
# build, start cxlpool-metaserver on its default pool (a 1 GiB file under
# /dev/shm) and ipc endpoint, run two handler processes that batch_store
# overlapping keys and read each other's chunks in place, then print the
# pool's summary with pool-inspect and stop the server.
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh --build
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null

POOL=/dev/shm/cxlpool.pool
build/metaserver/cxlpool-metaserver --log-level info 2>/tmp/cxlpool-demo.log &
MS=$!
trap 'kill $MS 2>/dev/null; wait $MS 2>/dev/null' EXIT
for _ in $(seq 100); do
	grep -q "ready" /tmp/cxlpool-demo.log 2>/dev/null && break
	sleep 0.1
done
if ! grep "ready" /tmp/cxlpool-demo.log; then
	cat /tmp/cxlpool-demo.log >&2
	echo "demo.sh: the metaserver did not start (above)" >&2
	exit 1
fi

# Writers 1 and 2 both store keys 100..299; each then reads all 400 keys.
build/examples/cxlpool-kvdemo --writer 1 --store 0:300 --wait-keys 400 \
	--read 0:400 &
W1=$!
build/examples/cxlpool-kvdemo --writer 2 --store 100:300 --wait-keys 400 \
	--read 0:400 &
W2=$!
wait $W1
wait $W2
build/tools/pool-inspect/pool-inspect summary "$POOL"
