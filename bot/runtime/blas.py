"""numpy imported with its BLAS on one thread.

The bot multiplies one query vector by a matrix of at most some hundred thousand rows (the
knowledge base's files, recall's message vectors): one thread does that in about a
millisecond. numpy's bundled OpenBLAS starts a thread per core for such products, and those
threads busy-wait between calls: with 50,000 knowledge-base files (bench/context.py ×100) they
burned 7 ms of CPU per turn and, on two cores, took it from the event loop (context assembly
p99 17 → 8.6 ms with one thread). OpenBLAS reads its thread count once, when numpy is first
imported; the variable is put back afterwards, so processes the bot starts (MCP servers) do not
inherit it. An owner's own OPENBLAS_NUM_THREADS is kept. numpy is loaded after start-up (on
the first search that has vectors), so its modules join the frozen start-up heap then.
"""

from __future__ import annotations

import logging
import os
import sys

from bot.runtime.heap import refreeze_if_frozen

log = logging.getLogger(__name__)

THREADS_VARIABLE = "OPENBLAS_NUM_THREADS"


def load_numpy() -> None:
    """Import numpy now, with one BLAS thread unless the environment says otherwise (too late
    if something imported numpy already: then nothing changes)."""
    if "numpy" in sys.modules:
        return
    own = os.environ.get(THREADS_VARIABLE)
    if own is None:
        os.environ[THREADS_VARIABLE] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        if own is None:
            os.environ.pop(THREADS_VARIABLE, None)
    # Its ~7,000 objects live as long as the process, as the start-up heap does.
    refreeze_if_frozen()
    log.debug("numpy loaded (BLAS threads: %s)", own or "1")
