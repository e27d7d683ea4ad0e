"""This handler's own counters (cxlp_counters): kept by the library with
no round trip, each only growing, so a connector can export them as
Prometheus counters::

    text = h.counters_text(labels={"instance": "prefill-0"})

The method lives in the :class:`Counters` mixin of :class:`cxlpool.Handler`.
"""

from __future__ import annotations

import ctypes
import re
from ctypes import byref, c_uint64, sizeof
from typing import Any, Dict, Optional

from . import _lib
from .errors import check

#: Field names of struct cxlp_counters, in order, with their help text.
COUNTER_FIELDS = (
    ("lookups", "Keys asked by retrieve."),
    ("hits", "Keys retrieve found."),
    ("misses", "Keys retrieve did not find."),
    ("direct_reads", "Keys of unpinned lookups answered from shared "
     "memory."),
    ("keys_stored", "Keys this handler's stores put in the pool."),
    ("bytes_stored", "Value bytes of those keys."),
    ("stale_replies", "Replies of an older metaserver term dropped."),
    ("term_resets", "Older metaserver terms accepted as the pool's own "
     "(a term reset)."),
)


class CountersStruct(ctypes.Structure):
    """struct cxlp_counters, field for field."""

    _fields_ = [(name, c_uint64) for name, _ in COUNTER_FIELDS]


class Counters:
    """Mixin of :class:`cxlpool.Handler`: counters, counters_text."""

    def _s(self) -> Any:  # supplied by Handler
        raise NotImplementedError

    def counters(self) -> Dict[str, int]:
        """This handler's counters (no round trip): lookups, hits,
        misses, direct_reads, keys_stored, bytes_stored."""
        with self._s().call() as h:
            c = CountersStruct()
            check(_lib.lib().cxlp_counters(h, byref(c), sizeof(c)))
            return {name: int(getattr(c, name)) for name, _ in
                    COUNTER_FIELDS}

    def counters_text(self, prefix: str = "cxlpool_handler",
                      labels: Optional[Dict[str, str]] = None,
                      header: bool = True) -> str:
        """The counters in Prometheus' text format, as
        ``<prefix>_<name>_total``, with the given labels on each.
        header=False leaves out the HELP and TYPE lines, for the second
        and later handlers of one exposition (a metric's TYPE comes once).
        """
        lab = ""
        if labels:
            for k in labels:
                if not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", k):
                    raise ValueError(f"label name {k!r}")
            esc = {k: str(v).replace("\\", "\\\\").replace('"', '\\"')
                   .replace("\n", "\\n") for k, v in labels.items()}
            lab = "{" + ",".join(f'{k}="{v}"' for k, v in
                                 sorted(esc.items())) + "}"
        values = self.counters()
        out = []
        for name, help_text in COUNTER_FIELDS:
            metric = f"{prefix}_{name}_total"
            if header:
                out.append(f"# HELP {metric} {help_text}")
                out.append(f"# TYPE {metric} counter")
            out.append(f"{metric}{lab} {values[name]}")
        return "\n".join(out) + "\n"
