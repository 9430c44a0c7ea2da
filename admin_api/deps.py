"""The services the admin API manages beyond the core ones (taken from `Services` by default).

Any of them may be None: its route group is then not registered (nor documented).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bot.memory.knowledge import KnowledgeService
from bot.memory.notes import NotesService
from bot.memory.tagging import Tagger
from bot.memory.word_pool import WordPool
from bot.services import Services
from bot.topics.service import TopicService

TopicsChanged = Callable[[], Awaitable[object]]


@dataclass(frozen=True)
class AdminDeps:
    """Optional services, plus the hook that re-reads topic schedules after a change."""

    notes: NotesService | None = None
    knowledge: KnowledgeService | None = None
    tagger: Tagger | None = None
    word_pool: WordPool | None = None
    topics: TopicService | None = None
    topics_changed: TopicsChanged | None = None

    @classmethod
    def from_services(
        cls, services: Services, *, topics_changed: TopicsChanged | None = None
    ) -> AdminDeps:
        """Everything `services` carries; `topics_changed` is e.g. TopicScheduler.rebuild."""
        return cls(
            notes=services.notes,
            knowledge=services.knowledge,
            tagger=services.tagger,
            word_pool=services.word_pool,
            topics=services.topics,
            topics_changed=topics_changed,
        )
