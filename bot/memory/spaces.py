"""Spaces for the front ends: the list with names, per-space settings, purge and moves.

The Discord side and the admin API only parse, call these and render. Purging removes every
row and file of one space (nothing of another); moving gives a note page or a knowledge entry
(with its Markdown file) to another space.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

from bot.errors import NotFoundError
from bot.memory.knowledge import KnowledgeEntry, KnowledgeService
from bot.memory.notes import NotePage, NotesService
from bot.store.repos.space_records import SpaceRecord, SpaceRepository
from bot.store.spaces import parse_space
from bot.utils import zones

log = logging.getLogger(__name__)

PurgeListener = Callable[[str], Awaitable[object]]


@dataclass(frozen=True)
class PurgeReport:
    """What purging a space removed: rows per table and knowledge files."""

    space_id: str
    rows: dict[str, int]
    files: int

    @property
    def total_rows(self) -> int:
        """Rows removed in all."""
        return sum(self.rows.values())


class SpaceService:
    """Every space's row and settings; purge and moves across spaces."""

    def __init__(
        self, repo: SpaceRepository, notes: NotesService, knowledge: KnowledgeService
    ) -> None:
        self.repo = repo
        self._notes = notes
        self._knowledge = knowledge
        self._purge_listeners: list[PurgeListener] = []

    def add_purge_listener(self, listener: PurgeListener) -> None:
        """Call `listener(space_id)` after a space was purged (to drop caches, rebuild jobs)."""
        self._purge_listeners.append(listener)

    async def ensure(self, space_id: str, name: str | None = None) -> SpaceRecord:
        """The space's row, created if missing; a non-empty `name` (e.g. a server's) is kept."""
        return await self.repo.ensure(space_id, name)

    async def get(self, space_id: str) -> SpaceRecord | None:
        """One space, if it has a row."""
        return await self.repo.get(space_id)

    async def rename(self, space_id: str, name: str) -> SpaceRecord:
        """Set a space's display name."""
        return await self.repo.rename(space_id, name)

    async def set_timezone(self, space_id: str, zone: str | None) -> SpaceRecord:
        """Set the space's time zone (an IANA name, checked; None: none)."""
        if zone:
            zones.zone(zone)  # raises ValueError naming an unknown zone
        return await self.repo.set_timezone(space_id, zone)

    async def set_default_model(self, space_id: str, model: str | None) -> SpaceRecord:
        """The model of the space's conversations that pin none (None: the global default)."""
        return await self.repo.set_default_model(space_id, model)

    async def mark_left(self, space_id: str, at: datetime | None = None) -> None:
        """The bot was removed from the server: remember when (data kept until purged)."""
        await self.repo.mark_left(space_id, None if at is None else at.isoformat())

    async def mark_returned(self, space_id: str) -> None:
        """The bot is back in the server."""
        await self.repo.mark_returned(space_id)

    async def purge_space(self, space_id: str) -> PurgeReport:
        """Remove every row and knowledge file of the space, nothing of another space.

        NotFoundError when the space has nothing stored.
        """
        parse_space(space_id)
        try:
            counts = await self.repo.purge(space_id)
        except NotFoundError:
            counts = None
        # Rows first: a failure leaves files behind that a second purge still finds.
        files = await self._knowledge.purge_files(space_id)
        if counts is None and not files:
            raise NotFoundError(f"No space {space_id!r}.")
        self._notes.forget_cache(space_id)
        for listener in list(self._purge_listeners):
            try:
                await listener(space_id)
            except Exception:
                log.exception("purge listener %r failed", listener)
        report = PurgeReport(space_id, {} if counts is None else counts.counts, files)
        log.info("space %s purged: %d rows, %d files", space_id, report.total_rows, report.files)
        return report

    async def purge_left_before(
        self, cutoff: datetime, *, owned: Callable[[str], bool] = lambda _space: True
    ) -> list[PurgeReport]:
        """Purge every space the bot left before `cutoff` (the "purge after N days" policy);
        only those `owned` says this process serves (its shards' servers)."""
        return [
            await self.purge_space(record.id)
            for record in await self.repo.left_before(cutoff.isoformat())
            if owned(record.id)
        ]

    async def move_note(self, space_id: str, page_id: int, to_space: str) -> NotePage:
        """Give a note page to another space (its session links are dropped)."""
        return await self._notes.move(space_id, page_id, to_space)

    async def move_knowledge(self, space_id: str, entry_id: int, to_space: str) -> KnowledgeEntry:
        """Give a knowledge entry and its Markdown file to another space."""
        entry = await self._knowledge.move(space_id, entry_id, to_space)
        if entry is None:
            raise NotFoundError(f"No knowledge entry #{entry_id} in {space_id}.")
        return entry

    async def list(self) -> list[SpaceRecord]:
        """Every space (operator view), local ones first."""
        return await self.repo.list()

    async def counts(self) -> dict[str, dict[str, int]]:
        """Sessions, note pages and knowledge entries per space id (operator view)."""
        return await self.repo.counts()
