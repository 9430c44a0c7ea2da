"""Three topic tags per message and per summary: keywords (Janome, no LLM) or an LLM call."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Sequence

from bot.llm.types import Completer
from bot.memory.japanese import NounExtractor
from bot.store.repos.tags import TagRepository, Untagged
from bot.text.scripts import HAN_UNIFIED, KATAKANA_BASIC

log = logging.getLogger(__name__)

TAG_COUNT = 3
MAX_TAG_CHARS = 30
# The LLM needs the gist, not a whole pasted document.
LLM_INPUT_CHARS = 4000
BACKFILL_CHUNK = 100

LLM_PROMPT = (
    "You label chat messages with topic tags. Reply with exactly 3 short tags (nouns or short "
    "noun phrases, in the language of the text), separated by commas, and nothing else."
)

_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
_SEPARATORS = re.compile(r"[,、，;；\n]")
_LABEL = re.compile(r"^(?:tags?|タグ)\s*[:：]\s*", re.IGNORECASE)
_MARKER = re.compile(r"^(?:\d+\s*[.)、:：]|[-*•・])\s*")
_STRIP_CHARS = " \t\"'`“”‘’「」『』()（）[]【】<>#＃。.!！?？"
_KANJI_KATAKANA = re.compile(f"[{KATAKANA_BASIC}{HAN_UNIFIED}]")


def _rarity(word: str) -> int:
    # Kanji, katakana and Latin words are more specific than hiragana-only ones.
    return 1 if _KANJI_KATAKANA.search(word) or word.isascii() else 0


def keyword_tags(nouns: Sequence[str], k: int = TAG_COUNT) -> list[str]:
    """The `k` most frequent nouns; ties go to rarer script, then longer, then earlier words."""
    counts: dict[str, int] = {}
    first: dict[str, tuple[int, str]] = {}
    for index, noun in enumerate(nouns):
        word = noun.strip()[:MAX_TAG_CHARS]
        if not word:
            continue
        key = word.casefold()
        counts[key] = counts.get(key, 0) + 1
        first.setdefault(key, (index, word))
    ranked = sorted(
        counts,
        key=lambda key: (
            -counts[key],
            -_rarity(first[key][1]),
            -len(first[key][1]),
            first[key][0],
        ),
    )
    return [first[key][1] for key in ranked[: max(k, 0)]]


def _clean_tag(piece: str) -> str:
    piece = _LABEL.sub("", piece.strip())
    piece = _MARKER.sub("", piece)
    piece = " ".join(piece.strip(_STRIP_CHARS).split())
    return piece[:MAX_TAG_CHARS].strip()


def parse_llm_tags(text: str, k: int = TAG_COUNT) -> list[str]:
    """Tags from an LLM reply: numbering, quotes and '#' stripped, deduplicated, at most `k`."""
    text = _THINK.sub(" ", text).strip()
    pieces = [piece for piece in _SEPARATORS.split(text) if piece.strip()]
    if len(pieces) == 1:
        pieces = _LABEL.sub("", pieces[0].strip()).split()
    tags: list[str] = []
    seen: set[str] = set()
    for piece in pieces:
        tag = _clean_tag(piece)
        if tag and tag.casefold() not in seen:
            seen.add(tag.casefold())
            tags.append(tag)
        if len(tags) >= k:
            break
    return tags


class Tagger:
    """Tags messages and summaries in the background; the mode is read on every call."""

    def __init__(
        self,
        analyzer: NounExtractor,
        tags_repo: TagRepository,
        completer: Completer,
        mode_fn: Callable[[], str],
    ) -> None:
        self._analyzer = analyzer
        self._repo = tags_repo
        self._completer = completer
        self._mode_fn = mode_fn

    async def recent_tags(
        self, space: str, *, channel_id: int | None = None, limit: int = 50
    ) -> list[str]:
        """The space's (or one channel's) distinct tags, most recently used first."""
        return await self._repo.recent_tags(space, limit, channel_id=channel_id)

    async def tags_for_text(self, text: str, *, session_id: str | None = None) -> list[str]:
        """Three tags for `text` in the current mode (fewer when the text has fewer nouns)."""
        if self._mode_fn() == "llm":
            return await self._llm_tags(text, session_id)
        return keyword_tags(await self._analyzer.nouns_async(text))

    async def _llm_tags(self, text: str, session_id: str | None) -> list[str]:
        if not text.strip():
            return []
        try:
            reply = await self._completer.complete(
                [
                    {"role": "system", "content": LLM_PROMPT},
                    {"role": "user", "content": text[:LLM_INPUT_CHARS]},
                ],
                session_id=session_id,
                purpose="tagging",
            )
            tags = parse_llm_tags(reply.text)
        except Exception as exc:  # the fallback must not depend on which error the backend raised
            log.warning("LLM tagging failed (%s); using keyword tags", type(exc).__name__)
            tags = []
        if len(tags) < TAG_COUNT:
            seen = {tag.casefold() for tag in tags}
            extra = keyword_tags(await self._analyzer.nouns_async(text), k=TAG_COUNT * 2)
            tags += [tag for tag in extra if tag.casefold() not in seen][: TAG_COUNT - len(tags)]
        return tags

    async def tag_message(
        self, space: str, message_id: int, text: str, *, session_id: str | None = None
    ) -> list[str]:
        """Tag one message of `space` and mark it tagged (also when no tag was found)."""
        tags = await self.tags_for_text(text, session_id=session_id)
        await self._repo.add_message_tags(space, message_id, tags)
        return tags

    async def tag_messages(
        self,
        space: str,
        messages: Sequence[tuple[int, str]],
        *,
        session_id: str | None = None,
    ) -> list[list[str]]:
        """Tag several messages of `space` (a turn's question and answer) with one trip to the
        analyzer and one write; each is marked tagged, also when no tag was found."""
        texts = [text for _id, text in messages]
        if self._mode_fn() == "llm":
            per_message = [await self._llm_tags(text, session_id) for text in texts]
        else:
            per_message = [keyword_tags(nouns) for nouns in await self._analyzer.nouns_many(texts)]
        tags = {
            message_id: found for (message_id, _), found in zip(messages, per_message, strict=True)
        }
        await self._repo.add_many_message_tags(space, tags)
        return per_message

    async def tag_memory(
        self, space: str, memory_id: int, text: str, *, session_id: str | None = None
    ) -> list[str]:
        """Tag one summary of `space` and mark it tagged (also when no tag was found)."""
        tags = await self.tags_for_text(text, session_id=session_id)
        await self._repo.add_memory_tags(space, memory_id, tags)
        return tags

    async def backfill(
        self, limit: int = 500, *, owned: Callable[[str], bool] = lambda _space: True
    ) -> int:
        """Tag up to `limit` untagged messages, then summaries, of every space `owned` says this
        process serves (each row's tags stay in its space); returns how many were tagged."""
        messages = await self._repo.untagged_messages_all_spaces(limit)
        mine = [row for row in messages if owned(row.space_id)]
        done = await self._tag_rows(mine, self._repo.add_message_tags)
        memories = await self._repo.untagged_memories_all_spaces(limit - len(messages))
        mine = [row for row in memories if owned(row.space_id)]
        done += await self._tag_rows(mine, self._repo.add_memory_tags)
        if done:
            log.info("backfill tagged %d rows", done)
        return done

    async def _tag_rows(
        self,
        rows: Sequence[Untagged],
        store: Callable[[str, int, Sequence[str]], Awaitable[bool]],
    ) -> int:
        done = 0
        llm = self._mode_fn() == "llm"
        for start in range(0, len(rows), BACKFILL_CHUNK):
            chunk = rows[start : start + BACKFILL_CHUNK]
            if llm:
                # One LLM call per row, one after another: backfill must not flood the model.
                per_row = [await self._llm_tags(row.text, None) for row in chunk]
            else:
                nouns = await self._analyzer.nouns_many([row.text for row in chunk])
                per_row = [keyword_tags(words) for words in nouns]
            for row, tags in zip(chunk, per_row, strict=True):
                try:
                    done += await store(row.space_id, row.id, tags)
                except Exception:  # one bad row must not stop the rest
                    log.exception("could not store tags for row %d", row.id)
        return done
