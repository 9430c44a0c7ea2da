"""Start-up warm-up: load what the first turn would otherwise load on the event loop."""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from bot.prompts import prompts_for
from bot.prompts.ui_text import ui_text

log = logging.getLogger(__name__)


class Warmable(Protocol):
    """Something that can load its heavy parts ahead of use, off the event loop."""

    async def warm_up(self) -> None:
        """Load now (a thread or a worker does the work)."""
        ...


def _load_texts(language: str) -> None:
    prompts_for(language)
    ui_text(language)


async def warm_up(parts: dict[str, Warmable], language: str) -> None:
    """Warm every part at once, plus the text catalogues of `language`; failures are logged
    (the part then loads on first use, as it would without a warm-up)."""
    names = [*parts, "texts"]
    jobs = [*(part.warm_up() for part in parts.values()), asyncio.to_thread(_load_texts, language)]
    outcomes = await asyncio.gather(*jobs, return_exceptions=True)
    for name, outcome in zip(names, outcomes, strict=True):
        if isinstance(outcome, BaseException):
            log.warning("warming up %s failed: %s", name, outcome, exc_info=outcome)
