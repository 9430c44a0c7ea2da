"""The application log as a live feed: a logging.Handler into a bounded ring buffer, with
subscribers that each get their own bounded queue.

Logging never waits for a reader: a subscriber whose queue is full loses the record and its
`dropped` count grows (the stream tells its reader). Records may come from any thread (work
sent to threads logs too); subscribers are woken on their own event loop. Every message is
redacted (known secrets and credential-shaped text) before it is kept.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from bot.utils.redact import Redactor

log = logging.getLogger(__name__)

RING_SIZE = 1000
SUBSCRIBER_QUEUE = 500
MAX_MESSAGE_CHARS = 8000
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


@dataclass(frozen=True)
class LogEntry:
    """One log record as the live log shows it (message redacted)."""

    id: int
    time: str
    level: str
    levelno: int
    logger: str
    message: str


@dataclass(frozen=True)
class EntryFilter:
    """Which entries a reader wants besides the level: `text` in the message (any case), and
    logger names: `loggers` prefixes to keep (none: all), `excluded` prefixes to leave out."""

    text: str = ""
    loggers: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str | None, loggers: str | None) -> EntryFilter:
        """From the API's `text` and `logger` ("bot.llm,-aiohttp": keep bot.llm…, drop aiohttp…)."""
        names = [name.strip() for name in (loggers or "").split(",") if name.strip()]
        return cls(
            (text or "").strip().casefold(),
            tuple(name for name in names if not name.startswith("-")),
            tuple(name[1:] for name in names if name.startswith("-") and len(name) > 1),
        )

    def accepts(self, entry: LogEntry) -> bool:
        """Whether `entry` passes."""
        if self.text and self.text not in entry.message.casefold():
            return False
        if self.loggers and not any(_under(entry.logger, name) for name in self.loggers):
            return False
        return not any(_under(entry.logger, name) for name in self.excluded)


def _under(logger: str, prefix: str) -> bool:
    """`logger` is `prefix` or one of its children (bot.llm covers bot.llm.gateway)."""
    return logger == prefix or logger.startswith(prefix + ".")


ALL_ENTRIES = EntryFilter()


class Subscription:
    """One reader's queue of new entries at or above its level (and passing its filter)."""

    def __init__(self, level: int, size: int, accepts: EntryFilter = ALL_ENTRIES) -> None:
        self.level = level
        self.accepts = accepts
        self.dropped = 0
        self._queue: deque[LogEntry] = deque()
        self._size = size
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._ready = asyncio.Event()
        self._lock = threading.Lock()
        self.closed = False

    def offer(self, entry: LogEntry) -> None:
        """Queue `entry` without ever waiting; count it as dropped when the queue is full."""
        if entry.levelno < self.level or not self.accepts.accepts(entry):
            return
        with self._lock:
            if len(self._queue) >= self._size:
                self.dropped += 1
                return
            self._queue.append(entry)
        if threading.get_ident() == self._loop_thread:
            self._ready.set()
        elif not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._ready.set)

    def close(self) -> None:
        """End the reader's stream (shutdown): its waiting `next_batch` returns at once."""
        self.closed = True
        if threading.get_ident() == self._loop_thread:
            self._ready.set()
        elif not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._ready.set)

    async def next_batch(self) -> list[LogEntry]:
        """Wait for entries (or the end), then take every queued one."""
        await self._ready.wait()
        with self._lock:
            batch = list(self._queue)
            self._queue.clear()
            self._ready.clear()
        return batch


class LiveLog(logging.Handler):
    """Keeps the newest records and hands each new one to the subscribers."""

    def __init__(
        self,
        secrets: Callable[[], Iterable[str]] = tuple,
        *,
        capacity: int = RING_SIZE,
        queue_size: int = SUBSCRIBER_QUEUE,
    ) -> None:
        super().__init__(logging.DEBUG)
        self._secrets = secrets
        self._ring: deque[LogEntry] = deque(maxlen=capacity)
        self._subscribers: list[Subscription] = []
        self._ids = itertools.count(1)
        self.queue_size = queue_size  # each reader's bound: past it, records are dropped
        self._state = threading.Lock()

    def _message(self, record: logging.LogRecord) -> str:
        try:
            text = record.getMessage()
        except Exception:  # a malformed logging call still shows up, as its template
            text = str(record.msg)
        if record.exc_info:
            text += "\n" + logging.Formatter().formatException(record.exc_info)
        return Redactor(self._secrets())(text[:MAX_MESSAGE_CHARS])

    def emit(self, record: logging.LogRecord) -> None:
        """Keep the record (redacted) and offer it to every subscriber; never blocks."""
        try:
            message = self._message(record)
            with self._state:
                entry = LogEntry(
                    id=next(self._ids),
                    time=datetime.fromtimestamp(record.created, UTC).isoformat(),
                    level=record.levelname,
                    levelno=record.levelno,
                    logger=record.name,
                    message=message,
                )
                self._ring.append(entry)
                subscribers = list(self._subscribers)
            for subscriber in subscribers:
                subscriber.offer(entry)
        except Exception:
            self.handleError(record)

    def recent(
        self,
        level: int = logging.DEBUG,
        *,
        after: int = 0,
        limit: int = 200,
        accepts: EntryFilter = ALL_ENTRIES,
    ) -> list[LogEntry]:
        """The newest kept entries at or above `level` with an id above `after` that pass
        `accepts`, oldest first."""
        with self._state:
            kept = [e for e in self._ring if e.levelno >= level and e.id > after]
        entries = [e for e in kept if accepts.accepts(e)]
        return entries[-limit:] if limit > 0 else []

    def subscribe(
        self, level: int = logging.DEBUG, accepts: EntryFilter = ALL_ENTRIES
    ) -> Subscription:
        """A queue of the entries at or above `level` passing `accepts`, from now on."""
        subscription = Subscription(level, self.queue_size, accepts)
        with self._state:
            self._subscribers.append(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        """Stop feeding `subscription` (unknown ones are ignored)."""
        with self._state:
            if subscription in self._subscribers:
                self._subscribers.remove(subscription)

    def end_streams(self) -> None:
        """Close every subscription (the admin API is shutting down)."""
        with self._state:
            subscribers, self._subscribers = self._subscribers, []
        for subscription in subscribers:
            subscription.close()

    @property
    def subscribers(self) -> int:
        """How many readers are attached."""
        return len(self._subscribers)


def level_number(name: str) -> int:
    """The number of a level name (DEBUG … CRITICAL)."""
    return int(logging.getLevelName(name.upper()))
