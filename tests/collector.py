"""What CPython's garbage collector walks in a full collection, for tests of long-lived caches.

A cache kept for many turns is walked by every full collection unless the collector stops
tracking it (tuples and plain dicts of text and numbers); as objects or lists, 20,000 note
pages made each full collection ~10 ms slower (bench/context.py ×100).
"""

from __future__ import annotations

import gc


def collector_work() -> int:
    """Every tracked object and each reference it holds, after two full collections (a tuple
    is untracked only once the tuples it holds are, which one pass may visit after it)."""
    gc.collect()
    gc.collect()
    return sum(1 + len(gc.get_referents(item)) for item in gc.get_objects())
