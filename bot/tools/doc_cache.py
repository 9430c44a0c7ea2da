"""Documents being paged through, fetched and parsed once (LRU bounded by bytes and age)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
# A document older than this is fetched again, so resuming after a long pause sees fresh content.
DEFAULT_MAX_AGE = 1800.0

CacheKey = tuple[str, str]


@dataclass
class CachedDocument:
    """A fetched document: its metadata, raw bytes (when kept) and text parsed so far."""

    source: str
    final_url: str
    content_type: str
    size: int
    raw: bytes | None = None
    text: str | None = None
    total_pages: int | None = None
    pages: dict[int, str] = field(default_factory=dict)
    # Sessions this file was already saved to as an attachment.
    stored_for: set[str] = field(default_factory=set)

    def footprint(self) -> int:
        """Approximate memory held, in bytes (text counted at two bytes a character)."""
        chars = len(self.text or "") + sum(len(page) for page in self.pages.values())
        return len(self.raw or b"") + 2 * chars + 256


@dataclass
class _Entry:
    document: CachedDocument
    loaded_at: float
    footprint: int


class DocumentCache:
    """LRU of parsed documents; concurrent loads of one key share a single fetch."""

    def __init__(
        self,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_age: float = DEFAULT_MAX_AGE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._max_bytes = max_bytes
        self._max_age = max_age
        self._clock = clock
        self._entries: OrderedDict[CacheKey, _Entry] = OrderedDict()
        self._total = 0
        self._loading: dict[CacheKey, asyncio.Future[CachedDocument]] = {}

    @property
    def total_bytes(self) -> int:
        """Approximate bytes held by all entries."""
        return self._total

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: CacheKey) -> CachedDocument | None:
        """The cached document, if present and not older than max_age."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if self._clock() - entry.loaded_at > self._max_age:
            self._drop(key)
            return None
        self._entries.move_to_end(key)
        return entry.document

    def put(self, key: CacheKey, document: CachedDocument) -> None:
        """Store a document (replacing any older one); too-large documents are not kept."""
        self._drop(key)
        footprint = document.footprint()
        if footprint > self._max_bytes:
            log.debug("document %s too large to cache (%d bytes)", document.source, footprint)
            return
        self._entries[key] = _Entry(document, self._clock(), footprint)
        self._total += footprint
        self._evict()

    def resized(self, key: CacheKey) -> None:
        """Re-account a document that grew (e.g. more PDF pages parsed) and evict if needed."""
        entry = self._entries.get(key)
        if entry is None:
            return
        footprint = entry.document.footprint()
        self._total += footprint - entry.footprint
        entry.footprint = footprint
        if footprint > self._max_bytes:
            self._drop(key)
        self._evict()

    def forget(self, key: CacheKey) -> None:
        """Forget one document (its source is gone: an erased member's attachment)."""
        self._drop(key)

    def clear(self) -> None:
        """Forget every document."""
        self._entries.clear()
        self._total = 0

    async def get_or_load(
        self, key: CacheKey, loader: Callable[[], Awaitable[CachedDocument]]
    ) -> tuple[CachedDocument, bool]:
        """The cached document, or the loader's (shared by concurrent callers); True if loaded."""
        while True:
            cached = self.get(key)
            if cached is not None:
                return cached, False
            pending = self._loading.get(key)
            if pending is None:
                break
            try:
                return await asyncio.shield(pending), False
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if not pending.cancelled() or (task is not None and task.cancelling()):
                    raise
                # The loading caller was cancelled, not us: load it ourselves.
        future: asyncio.Future[CachedDocument] = asyncio.get_running_loop().create_future()
        self._loading[key] = future
        try:
            document = await loader()
        except asyncio.CancelledError:
            future.cancel()
            raise
        except BaseException as exc:
            future.set_exception(exc)
            # Nobody else may be waiting: mark the exception as retrieved.
            future.exception()
            raise
        finally:
            self._loading.pop(key, None)
        future.set_result(document)
        self.put(key, document)
        return document, True

    def _drop(self, key: CacheKey) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._total -= entry.footprint

    def _evict(self) -> None:
        now = self._clock()
        for key in [k for k, e in self._entries.items() if now - e.loaded_at > self._max_age]:
            self._drop(key)
        while self._total > self._max_bytes and self._entries:
            oldest = next(iter(self._entries))
            self._drop(oldest)
