#!/usr/bin/env python3
"""check_layers.py -- the handler's include rule: a file of handler/
includes its own layer's headers and those of the layers below it, never
one above. The layers, from the bottom: core, net, session, region, kv
(each a folder of handler/), then the top (handler/ itself: handler.c,
async.c, handler.h). handler_int.h, the handler's struct and the types
it holds, counts as core: every layer may include it, and it includes
core headers only. A quoted include that names no file of handler/ (a
header of common/, pool/, include/) is not the rule's business.

Usage: check_layers.py HANDLER_DIR
Prints each violation as FILE: includes HEADER (layer above) and exits 1.
"""
import os
import re
import sys

LAYERS = ["core", "net", "session", "region", "kv", ""]  # "" = the top


def layer_of(rel: str) -> int:
    if rel == "handler_int.h":
        return 0
    top = rel.split("/")[0] if "/" in rel else ""
    return LAYERS.index(top) if top in LAYERS else -1


def main(root: str) -> int:
    files = {}
    for d, _, names in os.walk(root):
        for n in names:
            if n.endswith((".c", ".h")):
                rel = os.path.relpath(os.path.join(d, n), root)
                files[rel] = layer_of(rel)
    by_name = {}
    for rel in files:
        by_name.setdefault(os.path.basename(rel), []).append(rel)
    bad = 0
    for rel, lay in sorted(files.items()):
        if lay < 0:
            print(f"{rel}: in no layer's folder")
            bad += 1
            continue
        text = open(os.path.join(root, rel)).read()
        for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M):
            for target in by_name.get(os.path.basename(inc), []):
                if files[target] > lay:
                    print(f"{rel}: includes {target} (layer "
                          f"{LAYERS[files[target]] or 'top'}, above "
                          f"{LAYERS[lay] or 'top'})")
                    bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
