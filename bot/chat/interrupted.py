"""Turns cut off by a restart: the user's message was stored, the answer never was.

A process killed mid-turn (a crash, SIGKILL, the machine going down) has stored the user's
message (before the model is asked) but no answer, and Discord will not deliver the message
again. On start the bot looks for such messages in its own shards' conversations: the last
message of a Discord conversation, from a user, written shortly before this process started.
Each gets a short notice in its thread ("I was restarted … please send it again"), stored as
the answer, so the history says what happened and no later start repeats it. The half-streamed
reply the user may have seen stays as it was; answering again late, after the user may have
moved on or asked elsewhere, would be more surprising than an honest notice.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from bot.store.repos.messages import MessageRepository, UnansweredMessage
from bot.store.repos.space_records import SpaceRepository

log = logging.getLogger(__name__)

# Older than this, a question without an answer is left alone: the user has moved on.
WINDOW = timedelta(minutes=15)

Interrupted = UnansweredMessage


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


async def find_interrupted(
    messages: MessageRepository,
    owned: Callable[[str], bool],
    started: datetime,
    window: timedelta = WINDOW,
) -> list[Interrupted]:
    """Unanswered user messages of this process's spaces written within `window` before
    `started` (messages from after it are this process's own turns)."""
    found = await messages.unanswered_all_spaces(_iso(started - window), _iso(started))
    return [turn for turn in found if owned(turn.space_id)]


async def by_language(
    turns: list[Interrupted], spaces: SpaceRepository, default: str
) -> dict[str, list[Interrupted]]:
    """The turns grouped by the language their space speaks (its own, else `default`)."""
    groups: dict[str, list[Interrupted]] = {}
    languages: dict[str, str] = {}
    for turn in turns:
        if turn.space_id not in languages:
            record = await spaces.get(turn.space_id)
            languages[turn.space_id] = (record.language if record else None) or default
        groups.setdefault(languages[turn.space_id], []).append(turn)
    return groups


async def close_interrupted(
    turns: list[Interrupted],
    messages: MessageRepository,
    notice: str,
    post: Callable[[int, str], Awaitable[None]],
) -> int:
    """Store `notice` as each turn's answer, then `post(channel_id, notice)`; how many."""
    for turn in turns:
        await messages.add(
            turn.space_id, turn.session_id, "assistant", notice, reply_to=turn.message_id
        )
        try:
            await post(turn.channel_id, notice)
        except Exception as exc:  # a deleted thread, a lost permission: the rest still go
            log.warning("could not post the restart notice in %d: %s", turn.channel_id, exc)
    if turns:
        log.info("%d turns were cut off by a restart; their users were told", len(turns))
    return len(turns)
