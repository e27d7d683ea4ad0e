#!/usr/bin/env python3
"""coh-mutations.py -- remove each write-back and each drop of the
multi-host mode on purpose, one at a time, and check that a named test
fails (issue 27's mutation table; docs/multihost.md).

    scripts/coh-mutations.py [--build DIR] [NAME ...]

It works on a scratch copy of the tree (git worktree of HEAD under
/tmp), builds it once with the options of DIR's setup (default: a fresh
setup with -Dnng_prefix=.deps/nng if that exists), then per mutation:
applies the edit, rebuilds, runs the test, restores the file. Prints a
table and exits 1 if any mutation left its test passing. Not part of
scripts/test.sh: it rebuilds the tree once per mutation (minutes).

Write-backs cannot be removed at their call sites alone where the
persist that carries them is shared (pool_persist_cb writes back inside
pmap_persist): for those the edit sets a flag, coh_mut, around the site,
and pmap_persist skips its write-back while it is set.
"""
import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FLAG_DEF = ("pool/map.c", "#include \"map.h\"\n",
            "#include \"map.h\"\n\nint coh_mut; /* coh-mutations.py */\n")
FLAG_USE = ("pool/map.c",
            "\tif (m->coh != NULL) {\n\t\tcoh_writeback(m->coh, addr, off,",
            "\tif (m->coh != NULL && !coh_mut) {\n"
            "\t\tcoh_writeback(m->coh, addr, off,")


def extern(path):
    return (path, "#include \"err.h\"\n",
            "#include \"err.h\"\nextern int coh_mut;\n")


# name, what it removes, [(file, old, new)], the test that must fail
MUTATIONS = [
    ("payload", "the payload's write-back before REGISTER",
     [("handler/kv/store.c",
       "pmap_persist(b->maps[i], b->addr[i], len);", "(void)len;")],
     "mh_values"),
    ("slot", "the index slot's publish (body and word)",
     [FLAG_DEF, FLAG_USE, extern("pool/kvindex.c"),
      ("pool/kvindex.c",
       "\tkv->persist(kv->ctx, s, sizeof(*s));\n"
       "\tkvindex_store_word(kv, s, kv_word(seq + 2, st,\n"
       "\t    layout_slot_checksum(s, pr->free)), true);\n",
       "\tcoh_mut = 1;\n\tkv->persist(kv->ctx, s, sizeof(*s));\n"
       "\tkvindex_store_word(kv, s, kv_word(seq + 2, st,\n"
       "\t    layout_slot_checksum(s, pr->free)), true);\n"
       "\tcoh_mut = 0;\n")],
     "mh_values"),
    ("keyrec", "the key record's write-back",
     [FLAG_DEF, FLAG_USE, extern("pool/kvindex.c"),
      ("pool/kvindex.c", "\tkv->persist(kv->ctx, rec, bytes);\n",
       "\tcoh_mut = 1;\n\tkv->persist(kv->ctx, rec, bytes);\n"
       "\tcoh_mut = 0;\n")],
     "mh_restart"),
    ("regrec", "the region record's write-back",
     [FLAG_DEF, FLAG_USE, extern("pool/regtab.c"),
      ("pool/regtab.c", "\tpool_persist_cb(p, r, sizeof(*r));\n",
       "\tcoh_mut = 1;\n\tpool_persist_cb(p, r, sizeof(*r));\n"),
      ("pool/regtab.c", "\tpool_store8(p, &r->word, rec.word);\n",
       "\tpool_store8(p, &r->word, rec.word);\n\tcoh_mut = 0;\n")],
     "mh_restart"),
    ("reader-slot", "the reader's drop of the index slot",
     [("pool/kvread.c", "\t\t\tkvread_fresh(r, s, sizeof(*s));\n", ""),
      ("pool/kvread.c", "\t\t\tkvread_fresh(r, home, sizeof(*home));\n",
       "")],
     "coh_read"),
    ("cached-hit", "the fresh re-read that proves a cached lookup's hit",
     [("handler/region/directlook.c",
       "kvread_word(&d->kr_nodrop, l[i].slot) == l[i].word", "1")],
     "coh_read"),
    ("fresh-words", "the drop of the slot words a hit or validate reads",
     [("handler/region/directlook.c",
       "pmap_fresh_many(d->map, n + 1, addr, len);",
       "pmap_fresh_many(d->map, 1, addr, len);")],
     "coh_read"),
    ("reader-value", "the reader's drop of the value",
     [("handler/region/rmap.c",
       "\t\tpmap_fresh((*rmap_slot(h, loc->region))->map, p, loc->len);",
       "\t\t(void)p;")],
     "coh_read"),
    ("proof-value", "the value's drop in a cached hit's proof fence",
     [("handler/region/rmap.c",
       "\t\tpmap_fresh_lines((*rmap_slot(h, loc->region))->map, p,\n"
       "\t\t    loc->len);\n", "\t\t(void)0;\n")],
     "coh_read"),
    ("access-merged", "per-host access slices (all hosts in slice 0)",
     [("pool/hostslice.c", "\t\t\treturn (int)i;", "\t\t\treturn 0;")],
     "evict_hosts"),
    ("owner", "the owner claim's write-back",
     [("pool/owner_sw.c",
       "\tmemcpy(o, mine, sizeof(*o));\n"
       "\tpool_persist_quiet(p, o, sizeof(*o));\n",
       "\tmemcpy(o, mine, sizeof(*o));\n")],
     "owner_sim"),
    ("open-drop", "a starting server's drop of the metadata area",
     [("pool/poolcoh.c",
       "\tpmap_fresh(p->map, p->base, sb->area[POOL_AREA_DATA].off);\n",
       "")],
     "coh"),
    ("host-table", "a reader's drop of the superblock's host table",
     [("pool/hostslice.c",
       "\tpmap_fresh(m, sb->hosts, sizeof(sb->hosts));", "")],
     "evict_hosts"),
    ("leader-sb", "the handler's drop of the owner record and term",
     [("handler/session/leader.c", "\tpmap_fresh(head, sb + off, n);\n",
       "")],
     "mh_termreset"),
    ("release", "the drop of the owner word a closing server clears",
     [("pool/owner_hold.c",
       "if (pool_load8(p, &o->word) != p->own->token)",
       "if (pool_load8_here(&o->word) != p->own->token)")],
     "owner_sim"),
    ("term-check", "the drop of the pool's term an entering server checks",
     [("pool/owner.c", "uint64_t have = pool_load8(p, &p->sb->term);",
       "uint64_t have = pool_load8_here(&p->sb->term);")],
     "owner_term"),
    ("claim-check", "the drop of the owner record before a claim's check",
     [("pool/owner_sw.c",
       "\tpool_fresh(p, o, sizeof(*o));\n"
       "\tif (pool_load8_here(&o->word) != word0",
       "\tif (pool_load8_here(&o->word) != word0")],
     "owner_sim"),
    ("sb-head", "the drop of the superblock's head with a validate's words",
     [("handler/region/directlook.c",
       "\tlen[0] = offsetof(struct pool_sb, commit_seq) + "
       "sizeof(sb->commit_seq);",
       "\tlen[0] = 0;")],
     "coh_read"),
    ("pool-term", "the drop of the term pool_term reads",
     [("pool/owner.c", "\treturn pool_load8(p, &p->sb->term);",
       "\treturn pool_load8_here(&p->sb->term);")],
     "owner_term"),
    ("takeover", "the drops of the takeover words pool_takeover_get reads",
     [("pool/owner.c", "\tout->" + f + " = pool_load8(p, &p->sb->" + w,
       "\tout->" + f + " = pool_load8_here(&p->sb->" + w)
      for f, w in (("at_ns", "takeover_ns"), ("ms", "takeover_ms"),
                   ("from_term", "takeover_from"),
                   ("term", "takeover_term"))],
     "owner_term"),
]


def run(cmd, cwd, log):
    with open(log, "a") as f:
        return subprocess.run(cmd, cwd=cwd, stdout=f, stderr=f).returncode


def apply(tree, edits):
    saved = {}
    for path, old, new in edits:
        full = os.path.join(tree, path)
        text = open(full).read()
        saved.setdefault(path, text)
        if old not in text:
            raise SystemExit(f"{path}: the text to replace is gone "
                             f"(update the mutation): {old!r}")
        open(full, "w").write(text.replace(old, new, 1))
    return saved


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    chosen = [m for m in MUTATIONS if not args.names or m[0] in args.names]
    tmp = tempfile.mkdtemp(prefix="cxlp-mut-")
    tree = os.path.join(tmp, "tree")
    log = os.path.join(tmp, "log.txt")
    subprocess.run(["git", "worktree", "add", "--detach", tree, "HEAD"],
                   cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    opts = []
    nng = os.path.join(ROOT, ".deps", "nng")
    if os.path.isdir(nng):
        opts.append(f"-Dnng_prefix={nng}")
    try:
        if run(["meson", "setup", "build"] + opts, tree, log) != 0 or \
           run(["ninja", "-C", "build"], tree, log) != 0:
            raise SystemExit(f"the unchanged tree does not build: {log}")
        rows, bad = [], 0
        for name, what, edits, test in chosen:
            saved = apply(tree, edits)
            built = run(["ninja", "-C", "build"], tree, log) == 0
            rc = run(["meson", "test", "-C", "build", "--no-rebuild",
                      test], tree, log) if built else None
            for path, text in saved.items():
                open(os.path.join(tree, path), "w").write(text)
            seen = "did not build" if rc is None else \
                ("FAILS (as it must)" if rc != 0 else "passes: NOT CAUGHT")
            bad += rc == 0
            rows.append((name, what, test, seen))
            print(f"{name:14} {test:12} {seen}", flush=True)
        run(["ninja", "-C", "build"], tree, log)
        print()
        print("| mutation | removed | test | outcome |")
        print("|---|---|---|---|")
        for r in rows:
            print("| %s | %s | %s | %s |" % r)
        print(f"\nlog: {log}")
        return 1 if bad else 0
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", tree],
                       cwd=ROOT, stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    sys.exit(main())
