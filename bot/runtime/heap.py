"""The start-up heap kept out of the garbage collector's full collections.

Everything the bot opens at start-up (modules, settings, services, caches) lives until it
stops, yet every full collection traversed all of it: at ten times the bench's data that was
one pause of 100–200 ms inside whichever callback triggered it (bench/README.md, context.py).
`gc.freeze()` moves what exists now to a permanent generation the collector skips; objects made
later are collected as before. Unfrozen on the way out, so a process that opens the services
again (tests) still collects the first ones' cycles.

The local knowledge base reads its files on its first search, after start-up: with 50,000
files its documents alone made each full collection ~50 ms. `refreeze_if_frozen` (wired by
`bot.services` to the knowledge base's syncs) freezes them too, while the heap is frozen.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)


@contextmanager
def frozen_start_up_heap() -> Iterator[int]:
    """Freeze every object tracked now for the duration (yields how many were frozen)."""
    before = gc.get_freeze_count()
    gc.freeze()
    frozen = gc.get_freeze_count() - before
    log.debug("start-up heap frozen: %d objects out of full collections", frozen)
    try:
        yield frozen
    finally:
        gc.unfreeze()


def refreeze_if_frozen() -> None:
    """Freeze what is tracked now too, if the start-up heap is frozen (else nothing): for
    long-lived data loaded after start-up. Objects freed later by reference counting are
    still freed; only cycles made before this wait for the unfreeze."""
    if gc.get_freeze_count():
        gc.freeze()
