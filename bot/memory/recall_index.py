"""The background indexer of recall's term index (`recall_terms`).

After every turn (a turn hook, so in the background through the task helper) and at start-up
(a backfill), messages not indexed yet are taken newest first in batches of BATCH: Japanese
text goes to the Janome worker in one batch (`NounExtractor.nouns_many`), and each message's
words (`bot.store.reads.recall_words.index_text`) are written with its space; messages marked
recall_hidden are marked handled without a row, so they are never indexed. Nothing here runs
on a turn's hot path: a turn only ever reads the index.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Final

from bot.memory.japanese import NounExtractor
from bot.store.reads.recall_words import index_text
from bot.store.repos.recall_terms import IndexedWords, RecallTermRepository, Unindexed
from bot.text.scripts import HAN_IDEOGRAPHS, HIRAGANA, KATAKANA_BASIC

log = logging.getLogger(__name__)

BATCH: Final = 200
# Kana and ideographs only: text with no more than 々〆 or small katakana skips Janome.
_JAPANESE = re.compile(f"[{HIRAGANA}{KATAKANA_BASIC}{HAN_IDEOGRAPHS}]")


class RecallIndexer:
    """Fills `recall_terms` for messages not indexed yet (see the module docstring)."""

    def __init__(self, analyzer: NounExtractor, repo: RecallTermRepository) -> None:
        self._analyzer = analyzer
        self._repo = repo
        self._lock = asyncio.Lock()

    async def index_pending(self, limit: int = BATCH) -> int:
        """Index up to `limit` pending messages; returns how many were handled (hidden ones
        included). Any process may index any space's rows (each stays in its space, and a row
        indexed twice is replaced), so shard processes need no split of the work."""
        async with self._lock:
            rows = await self._repo.unindexed_all_spaces(limit)
            if not rows:
                return 0
            visible = [row for row in rows if not row.hidden]
            words = await self._words(visible)
            await self._repo.store(rows, words)
            return len(rows)

    async def _words(self, rows: list[Unindexed]) -> list[IndexedWords]:
        japanese = [row for row in rows if _JAPANESE.search(row.content)]
        nouns = await self._analyzer.nouns_many([row.content for row in japanese])
        found = {row.id: words for row, words in zip(japanese, nouns, strict=True)}
        return [
            IndexedWords(
                row.space_id,
                row.id,
                index_text(row.content, row.author_name, row.created_at, found.get(row.id, ())),
            )
            for row in rows
        ]

    async def backfill(self) -> int:
        """Index every pending message, batch after batch; returns how many were handled."""
        done = 0
        while True:
            try:
                count = await self.index_pending()
            except Exception:  # a background job: logged, retried at the next turn
                log.exception("recall indexing failed")
                return done
            done += count
            if count < BATCH:
                break
        if done:
            log.info("recall index: %d messages handled", done)
        return done
