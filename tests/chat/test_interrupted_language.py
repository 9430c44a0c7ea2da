"""The restart notice speaks each server's language: a space's own, else the global one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.chat.interrupted import by_language, close_interrupted, find_interrupted
from bot.prompts.ui_text import ui_text
from bot.store.engine.database import Database
from bot.store.repos.messages import MessageRepository
from bot.store.repos.sessions import SessionRepository
from bot.store.repos.space_records import SpaceRepository

START = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


async def test_each_space_is_told_in_its_own_language(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "db.sqlite")
    try:
        sessions, messages, spaces = (
            SessionRepository(db),
            MessageRepository(db),
            SpaceRepository(db),
        )
        for number, (guild, language) in enumerate(((11, "ja"), (12, None), (13, "en"))):
            space = f"guild:{guild}"
            await spaces.ensure(space)
            await spaces.set_language(space, language)
            session = await sessions.create(
                space, source="discord", discord_channel_id=100 + number, discord_guild_id=guild
            )
            await messages.add(
                space,
                session.id,
                "user",
                "question",
                discord_message_id=200 + number,
                created_at=(START - timedelta(minutes=1)).isoformat(timespec="microseconds"),
            )
        turns = await find_interrupted(MessageRepository(db), lambda space: True, START)
        groups = await by_language(turns, spaces, default="ja")
        assert {lang: [t.space_id for t in group] for lang, group in groups.items()} == {
            "ja": ["guild:11", "guild:12"],
            "en": ["guild:13"],
        }

        posted: dict[int, str] = {}

        async def post(channel_id: int, text: str) -> None:
            posted[channel_id] = text

        for language, group in groups.items():
            await close_interrupted(group, messages, ui_text(language).turn_interrupted, post)
        assert posted == {
            100: ui_text("ja").turn_interrupted,
            101: ui_text("ja").turn_interrupted,
            102: ui_text("en").turn_interrupted,
        }
        assert ui_text("ja").turn_interrupted != ui_text("en").turn_interrupted
    finally:
        await db.close()
