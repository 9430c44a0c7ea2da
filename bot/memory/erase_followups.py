"""What follows an erase or a forget, in the background: an erased member's saved knowledge and
cached attachment text go, summaries holding blanked texts are rebuilt, and the database's
files are scrubbed of the old bytes."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from bot.memory.knowledge import KnowledgeService
from bot.memory.member_memory import MemberMemory
from bot.store.engine.database import Database
from bot.store.erase.member_erase import SCRUBBED_FTS, SCRUBBED_TABLES, ErasedMember
from bot.store.erase.quotes import DiscordFollowUp
from bot.utils.tasks import BackgroundTasks

# Forget the tools' cached text of one attachment: (space, session id, attachment id).
ForgetAttachment = Callable[[str, str, str], None]
# Summarise a session again if it needs it: (space, session id).
Resummarize = Callable[[str, str], Coroutine[Any, Any, object]]


def drop_what_they_brought(
    members: MemberMemory, knowledge: KnowledgeService, forget_attachment: ForgetAttachment | None
) -> None:
    """After an erase: the knowledge their searches saved goes (with its files), and the text
    of the files they attached leaves the tools' cache."""

    async def drop(space: str, erased: ErasedMember) -> None:
        for entry_id in erased.knowledge:
            await knowledge.delete(space, entry_id)
        if forget_attachment is not None:
            for session_id, attachment_id in erased.attachments:
                forget_attachment(space, session_id, attachment_id)

    members.add_erase_listener(drop)


def scrub_after_blank(members: MemberMemory, tasks: BackgroundTasks, db: Database) -> None:
    """After an erase or a forget: no old byte of the texts stays in the database's files
    (SQLite: FTS merge and WAL truncation; PostgreSQL: VACUUM)."""

    async def scrub(_space: str, _sessions: tuple[str, ...], _discord: DiscordFollowUp) -> None:
        tasks.spawn(db.scrub(SCRUBBED_TABLES, SCRUBBED_FTS), name="scrub-after-erase")

    members.add_blank_listener(scrub)


def resummarize_after_blank(
    members: MemberMemory, tasks: BackgroundTasks, resummarize: Resummarize
) -> None:
    """After an erase or a forget took the summaries holding the blanked messages (and
    un-archived what they replaced): rebuild them from the placeholders, off the caller's path."""

    async def rebuild(space: str, sessions: tuple[str, ...], _discord: DiscordFollowUp) -> None:
        for session_id in sessions:
            tasks.spawn(resummarize(space, session_id), name=f"resummarize-{session_id}")

    members.add_blank_listener(rebuild)
