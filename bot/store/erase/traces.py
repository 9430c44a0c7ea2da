"""What else an erase takes of a member's text (see `member_erase`), in the same transaction.

- The word pool: every word they brought (`word_pool_authors`: their channel messages and
  conversations) and every pool word of unknown author (pooled before authors were kept, or
  seeded from a channel's history) found in one of the erased texts leaves every channel's
  pool of the space, even when others used it too; the topic posts made with such a word lose their
  topic, words and text.
- The files their messages attached (`attachment:<id>` in the message text, in that session):
  the stored bytes go, so `pdf_to_text` can no longer read them.
- The API log: a call's request carries the context (history, summaries, related memories,
  recall results), so any call of the space (or one outside a conversation, such as an
  embedding batch) since their first message may hold their words, or a paraphrase of them.
  Those rows keep their metadata (model, purpose, latency, tokens, cost); their request and
  response bodies become the placeholder.
- Web knowledge their searches saved: the entries whose query is the query of a `web_search`
  their turn made (or, without one, their message's text). The caller deletes them through
  the knowledge service, which also removes their Markdown files.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Final

from bot.store.engine.connection import Connection

# Ids per IN (...) list: well under both engines' limits on bound parameters.
CHUNK: Final = 500
# `attachment:<id>` as the attachment reference writes it (ids are 16 hex digits).
ATTACHMENT_REF: Final = re.compile(r"attachment:([0-9a-f]{16})(?![0-9a-f])")
# As the knowledge service keeps a query: one line, control characters as spaces, bounded.
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]")
MAX_QUERY_CHARS: Final = 500


@dataclass
class Traces:
    """What the erased texts left elsewhere: pool words, attached files, their first date."""

    words: set[str] = field(default_factory=set)
    attachments: set[tuple[str, str]] = field(default_factory=set)
    since: str | None = None


def _chunks(items: Sequence[object]) -> Iterator[tuple[str, tuple[object, ...]]]:
    """`?, ?, …` and the items, CHUNK at a time."""
    for start in range(0, len(items), CHUNK):
        part = tuple(items[start : start + CHUNK])
        yield ",".join("?" for _ in part), part


async def find_traces(
    conn: Connection, space: str, author: str | None, message_ids: Sequence[int]
) -> Traces:
    """Read the texts about to be erased: the pool words they brought or hold, the files
    they attached."""
    # Words whose authors are recorded are found by author; only the others (pooled before
    # authors were kept, or seeded from a channel's history) are looked for in the texts.
    rows = await conn.execute_fetchall(
        "SELECT DISTINCT p.word FROM word_pool p WHERE p.space_id = ? AND NOT EXISTS ("
        "SELECT 1 FROM word_pool_authors a WHERE a.space_id = p.space_id "
        "AND a.channel_id = p.channel_id AND a.word = p.word)",
        (space,),
    )
    pool = [(str(row["word"]), str(row["word"]).casefold()) for row in rows]
    found = Traces()
    if author is not None:
        brought = await conn.execute_fetchall(
            "SELECT DISTINCT word FROM word_pool_authors WHERE space_id = ? AND author_id = ?",
            (space, author),
        )
        found.words.update(str(row["word"]) for row in brought)
    for marks, ids in _chunks(message_ids):
        texts = await conn.execute_fetchall(
            "SELECT session_id, content, created_at FROM messages "
            f"WHERE space_id = ? AND id IN ({marks})",
            (space, *ids),
        )
        # One search per word over the chunk's texts (a NUL between them: no word spans two);
        # a word found once is not looked for again.
        joined = "\0".join(str(row["content"] or "") for row in texts).casefold()
        hits = {word for word, key in pool if key and key in joined}
        found.words |= hits
        pool = [(word, key) for word, key in pool if word not in hits]
        for row in texts:
            content = str(row["content"] or "")
            session = str(row["session_id"])
            found.attachments.update((session, ref) for ref in ATTACHMENT_REF.findall(content))
            created = str(row["created_at"])
            if found.since is None or created < found.since:
                found.since = created
    return found


def _query(text: str) -> str:
    """A query as a knowledge entry keeps it."""
    return " ".join(_CONTROL.sub(" ", text).split())[:MAX_QUERY_CHARS].strip()


async def knowledge_they_caused(
    conn: Connection, space: str, authored: Sequence[int]
) -> tuple[int, ...]:
    """The space's knowledge entries saved from the web searches of their turns."""
    queries: set[str] = set()
    for marks, ids in _chunks(authored):
        rows = await conn.execute_fetchall(
            "SELECT t.arguments_json, m.content FROM tool_calls t JOIN messages m "
            "ON m.space_id = t.space_id AND m.id = t.message_id WHERE t.space_id = ? "
            f"AND t.tool = 'web_search' AND t.message_id IN ({marks})",
            (space, *ids),
        )
        for row in rows:
            try:
                asked = json.loads(str(row["arguments_json"])).get("query")
            except (ValueError, AttributeError):
                asked = None
            text = asked if isinstance(asked, str) and asked.strip() else str(row["content"])
            queries.add(_query(text))
    found: set[int] = set()
    for marks, part in _chunks(sorted(queries)):
        entries = await conn.execute_fetchall(
            f"SELECT id FROM knowledge_entries WHERE space_id = ? AND query IN ({marks})",
            (space, *part),
        )
        found.update(int(row["id"]) for row in entries)
    return tuple(sorted(found))


async def _drop_words(conn: Connection, space: str, words: set[str], placeholder: str) -> None:
    """The words leave every pool of the space; topic posts made with them are blanked."""
    for marks, part in _chunks(sorted(words)):
        for table in ("word_pool", "word_pool_authors"):
            await conn.execute(
                f"DELETE FROM {table} WHERE space_id = ? AND word IN ({marks})", (space, *part)
            )
    keys = [word.casefold() for word in words]
    posts = await conn.execute_fetchall(
        "SELECT id, topic, words_json, content FROM topic_posts WHERE space_id = ?", (space,)
    )
    hit = [
        int(post["id"])
        for post in posts
        if any(
            key in str(post[column] or "").casefold()
            for column in ("topic", "words_json", "content")
            for key in keys
        )
    ]
    for marks, ids in _chunks(hit):
        await conn.execute(
            "UPDATE topic_posts SET topic = ?, words_json = '[]', content = ? "
            f"WHERE space_id = ? AND id IN ({marks})",
            (placeholder, placeholder, space, *ids),
        )


async def _drop_attachments(conn: Connection, space: str, found: set[tuple[str, str]]) -> None:
    """Delete the files their messages attached (in the session each was attached to)."""
    for session, attachment_id in sorted(found):
        await conn.execute(
            "DELETE FROM attachments WHERE space_id = ? AND session_id = ? AND id = ?",
            (space, session, attachment_id),
        )


async def _blank_logs(conn: Connection, space: str, since: str, placeholder: str) -> int:
    """Blank the bodies of the API log rows that may carry their text; how many."""
    cursor = await conn.execute(
        "UPDATE api_logs SET request_json = ?, "
        "response_text = CASE WHEN response_text IS NULL THEN NULL ELSE ? END "
        "WHERE (space_id = ? OR space_id IS NULL) AND created_at >= ? AND request_json <> ?",
        (placeholder, placeholder, space, since, placeholder),
    )
    return int(cursor.rowcount)


async def remove_traces(conn: Connection, space: str, found: Traces, placeholder: str) -> int:
    """Take what `find_traces` found; how many API log rows were blanked."""
    if found.words:
        await _drop_words(conn, space, found.words, placeholder)
    if found.attachments:
        await _drop_attachments(conn, space, found.attachments)
    if found.since is None:
        return 0
    return await _blank_logs(conn, space, found.since, placeholder)
