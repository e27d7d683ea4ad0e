#!/bin/sh
# test-debs.sh -- build cxlpool's Debian packages with Debian's own tools
# (dpkg-buildpackage -us -uc -b, debhelper), check them with lintian (no
# error allowed), install them into this system, check that the installed
# metaserver, pool-inspect, library (through pkg-config: a small C
# program compiled against it stores and reads a key) and Python package
# work, then remove them again. Run as root (it installs packages);
# scripts/test.sh runs it. The tree is built from a copy of the files git
# tracks, so the working tree is left as it was.
set -eu
cd "$(dirname "$0")/.."
top=$PWD
work=$(mktemp -d /tmp/cxlp-debs.XXXXXX)
pkgs="libcxlpool0 libcxlpool-dev cxlpool-metaserver cxlpool-tools python3-cxlpool"
ms_pid=""
cleanup() {
	[ -n "$ms_pid" ] && kill "$ms_pid" 2>/dev/null || true
	dpkg -r $pkgs >/dev/null 2>&1 || true
	rm -rf "$work" /dev/shm/cxlp-debs-$$.pool
}
trap cleanup EXIT

need=""
for p in debhelper lintian dpkg-dev pkg-config gcc; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		need="$need $p"
done
if [ -n "$need" ]; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends $need >/dev/null
fi

echo "debs: building"
mkdir -p "$work/src"
git ls-files -z | tar --null -cf - -T - | tar -xf - -C "$work/src"
ln -s "$top/.deps" "$work/src/.deps" # the nng build-nng.sh made
(cd "$work/src" && dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1) || {
	tail -n 40 "$work/build.log"; echo "debs: build failed" >&2; exit 1; }

echo "debs: lintian"
lintian --fail-on error --tag-display-limit 0 "$work"/*.changes 2>&1 |
	grep -v "running with root privileges" || true
lintian --fail-on error "$work"/*.changes >/dev/null 2>&1 || {
	echo "debs: lintian found errors" >&2; exit 1; }

echo "debs: installing"
for p in $pkgs; do
	set -- "$@" "$work/${p}_"*.deb
done
dpkg -i "$@" >/dev/null

echo "debs: the installed files work"
pool=/dev/shm/cxlp-debs-$$.pool
url=ipc://$work/ms.sock
/usr/bin/cxlpool-metaserver --version
/usr/bin/cxlpool-metaserver --pool "$pool" --size 256M --listen "$url" \
	--ready-file "$work/ready" 2>"$work/ms.log" &
ms_pid=$!
for i in $(seq 100); do
	[ -f "$work/ready" ] && break
	sleep 0.1
done
[ -f "$work/ready" ] || { cat "$work/ms.log"; exit 1; }
/usr/bin/pool-inspect stats --server "$url" --json >/dev/null
[ -f /lib/systemd/system/cxlpool-metaserver.service ]
[ -f /usr/share/man/man8/cxlpool-metaserver.8.gz ]
[ -f /usr/share/man/man3/libcxlpool.3.gz ]
cat >"$work/t.c" <<'C'
#include <cxlpool.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv)
{
	struct cxlp_config *cfg; struct cxlp_handler *h; cxlp_page_t pg;
	void *buf; const void *data; size_t len; bool ok;

	if (cxlp_config_new(&cfg) || cxlp_config_set_server(cfg, argv[1]) ||
	    cxlp_connect(&h, cfg)) { fprintf(stderr, "%s\n", cxlp_errormsg()); return 1; }
	if (cxlp_alloc(h, &pg, &buf)) return 2;
	memcpy(buf, "packaged", 8);
	if (cxlp_store(h, "k", 1, pg, 8, 0, &ok) || !ok) return 3;
	if (cxlp_retrieve(h, "k", 1, 0, &data, &len) || len != 8 ||
	    memcmp(data, "packaged", 8)) return 4;
	cxlp_close(&h); cxlp_config_delete(&cfg);
	(void)argc; puts("c program: ok"); return 0;
}
C
# shellcheck disable=SC2046
gcc -o "$work/t" "$work/t.c" $(pkg-config --cflags --libs cxlpool)
"$work/t" "$url"
env -u PYTHONPATH -u CXLP_LIBDIR -u CXLP_LIB /usr/bin/python3 -c '
import sys, cxlpool
assert cxlpool.__file__.startswith("/usr/lib/python3/dist-packages/")
with cxlpool.Handler(cxlpool.Config(server_url=sys.argv[1])) as h:
    assert bytes(h.retrieve(b"k")) == b"packaged"
print("python: ok")' "$url"
kill "$ms_pid"
wait "$ms_pid" || true
ms_pid=""

echo "debs: removing"
dpkg -r $pkgs >/dev/null
for p in $pkgs; do
	if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		echo "debs: $p still installed" >&2; exit 1
	fi
done
[ ! -e /usr/bin/cxlpool-metaserver ]
echo "debs: OK"
