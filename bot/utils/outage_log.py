"""One warning per gateway outage, one line on recovery, instead of a traceback per retry.

discord.py logs every failed reconnect attempt with a full traceback ("Attempting a
reconnect in 1.23s", ~50 lines at ERROR). A blip of a few seconds that heals by itself is
routine for a long-running bot: it costs one WARNING when the connection is lost (what failed,
in one line) and one INFO when it is back (how long it was away). The traceback stays at DEBUG.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Final

# The loggers and messages of discord.py's reconnect loops (the plain and the sharded client).
GATEWAY_LOGGERS: Final = ("discord.client", "discord.shard")
_RECONNECT_PREFIX: Final = "Attempting a reconnect"

log = logging.getLogger(__name__)


def _reason(record: logging.LogRecord) -> str:
    """The failure in one line: the exception's type and text, without the traceback."""
    if record.exc_info and record.exc_info[1] is not None:
        error = record.exc_info[1]
        text = str(error).strip().splitlines()
        return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
    return record.getMessage()


class OutageLog(logging.Filter):
    """Rewrites discord.py's reconnect records: the first of an outage becomes one WARNING
    line, the rest DEBUG; `recovered()` logs the INFO line that ends the outage."""

    def __init__(
        self,
        loggers: Sequence[str] = GATEWAY_LOGGERS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self._loggers = tuple(loggers)
        self._clock = clock
        self._lost_at: float | None = None
        self._attempts = 0

    def install(self) -> None:
        """Start rewriting the gateway loggers' records."""
        for name in self._loggers:
            logging.getLogger(name).addFilter(self)

    def uninstall(self) -> None:
        """Stop rewriting them."""
        for name in self._loggers:
            logging.getLogger(name).removeFilter(self)

    @property
    def down(self) -> bool:
        """Whether an outage is going on (a reconnect failed and none has succeeded since)."""
        return self._lost_at is not None

    def filter(self, record: logging.LogRecord) -> bool:
        """Pass every record; rewrite the reconnect ones (see the class)."""
        if not str(record.msg).startswith(_RECONNECT_PREFIX):
            return True
        reason = _reason(record)
        self._attempts += 1
        if self._lost_at is None:
            self._lost_at = self._clock()
            record.msg = "Discord connection lost (%s); reconnecting"
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        else:
            record.msg = "Discord still unreachable (%s); reconnecting"
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        record.args = (reason,)
        record.exc_info, record.exc_text = None, None
        # Handlers see records their logger's level let through; the rewritten DEBUG ones are
        # dropped here unless the logger is at DEBUG.
        return logging.getLogger(record.name).isEnabledFor(record.levelno)

    def recovered(self) -> None:
        """The gateway is back: log how long it was away (nothing when there was no outage)."""
        if self._lost_at is None:
            return
        away = self._clock() - self._lost_at
        log.info(
            "Discord connection back after %.1f s (%d failed reconnect attempts)",
            away,
            self._attempts,
        )
        self._lost_at, self._attempts = None, 0
