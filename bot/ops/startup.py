"""Start-up order for the long-running bot: what runs in another process starts first.

On this kind of machine (2 cores) start-up is this process's CPU — imports, the database,
the LLM client's warm-up — plus the analysis worker's own start (its interpreter, Janome and
the dictionary: ~0.45 s in a process of its own). Spawned before the heavy imports, the
worker loads on the other core while this process imports and opens everything else; the
services still wait for it (and every other warm-up) before they are handed out, so the bot
is never ready before what a turn needs is loaded.

This module imports nothing heavy at module level: importing it must not delay the spawn.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from bot.memory.japanese import JapaneseAnalyzer

# What the opener yields: the services (this module does not import them; see started_services).
T = TypeVar("T")

log = logging.getLogger(__name__)


def _nothing() -> None:
    return None


@asynccontextmanager
async def started_services(
    opener: Callable[[JapaneseAnalyzer], AbstractAsyncContextManager[T]],
    *,
    preload: Callable[[], object] = _nothing,
) -> AsyncIterator[T]:
    """Spawn the analysis worker, then import and open the services (and run `preload`, the
    caller's own imports) while it loads; yield once all of it is loaded.

    `opener(analyzer)` imports `bot.services` and opens them over the spawned worker (as
    `bot.__main__._open_services` does): called after the spawn, so the worker's start overlaps
    that import. The services are the container and this module sits below them, so the
    caller hands them in rather than this module importing them."""
    from bot.memory.japanese import JapaneseAnalyzer
    from bot.runtime.heap import frozen_start_up_heap

    async with AsyncExitStack() as stack:
        analyzer = JapaneseAnalyzer()
        stack.push_async_callback(analyzer.close)
        await analyzer.spawn()
        log.debug("analysis worker spawned; importing the rest")
        opened = opener(analyzer)
        preload()
        services = await stack.enter_async_context(opened)
        stack.enter_context(frozen_start_up_heap())
        yield services
