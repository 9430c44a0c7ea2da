"""Topic posts people answer, through the real discord.py client: the channel's word pool keeps
nouns only (one entry per case-folded word), and an opener records whether a person replied
within its window."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from bot.store.repos.topics import AnswerCounts
from tests.discord.conftest import World, WorldFactory
from tests.discord.test_spaces import Calls
from tests.fakes.llm_server import Text


async def _enable(w: World) -> None:
    ix = await w.server.inject_interaction("topic enable", user=w.server.admin_user)
    assert "✅" in (await w.server.wait_for_reply(ix)).content


async def test_channel_talk_feeds_nouns_once_per_case_folded_word(
    world: WorldFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with world() as w:
        await _enable(w)
        activity = Calls(monkeypatch, w.services.topics, "record_activity")
        for text in ("Python is great, I played Zelda", "python と京都で勉強した", "PYTHON"):
            await w.server.inject_message(text, mention_bot=False)
        await activity.wait(3)
        pool = await w.services.word_pool.words(w.space, w.server.channel_id)
        assert sorted((word.word, word.count) for word in pool) == [
            ("Python", 3),
            ("Zelda", 1),
            ("京都", 1),
        ], "no verbs (played, 勉強した) and no second spelling of Python"


async def _opener(w: World, text: str) -> int:
    """Post an opener with /topic now; the stored post's id."""
    w.llm.script(Text(text))
    ix = await w.server.inject_interaction("topic now", user=w.server.admin_user)
    assert "💬" in (await w.server.wait_for_reply(ix)).content
    (message,) = [m for m in w.bot_messages(w.server.channel_id) if m.content == text]
    post = await w.services.repos.topics.post_for_message(w.space, message.id)
    assert post is not None and post.answered_at is None
    return post.id


def _ago(w: World, **delta: float) -> str:
    """The moment `delta` before the topic service's now, as the store writes moments."""
    return (w.services.topics.now() - timedelta(**delta)).isoformat(timespec="microseconds")


async def _answered(w: World) -> dict[int, bool]:
    posts = await w.services.repos.topics.recent_posts(w.space, w.server.channel_id)
    return {post.id: post.answered_at is not None for post in posts}


async def test_a_member_writing_within_the_window_answers_the_opener(
    world: WorldFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with world(topic_reply_window_minutes=30) as w:
        await _enable(w)
        await w.services.topics.record_activity(w.space, w.server.channel_id, "ラーメンが好き")
        late = await _opener(w, "最近どこかでおいしいラーメン食べた？")
        # This opener went out 31 minutes ago: its window is over.
        await w.services.db.execute(
            "UPDATE topic_posts SET posted_at = ? WHERE space_id = ? AND id = ?",
            (
                (w.services.topics.now() - timedelta(minutes=31)).isoformat(
                    timespec="microseconds"
                ),
                w.space,
                late,
            ),
        )
        activity = Calls(monkeypatch, w.services.topics, "record_activity")
        await w.server.inject_message("昨日は味噌ラーメンにした", mention_bot=False)
        await activity.wait(1)
        assert await _answered(w) == {late: False}, "a reply after the window does not count"

        fresh = await _opener(w, "カメラは何を使ってる？")
        w.llm.script(Text("いいですね！"))
        reply = await w.server.inject_message(
            "ミラーレスだよ", reply_to=w.bot_messages(w.server.channel_id)[-1], mention_bot=False
        )
        await w.wait_text(await w.wait_thread(reply), "いいですね！")
        assert await _answered(w) == {late: False, fresh: True}
        counts = await w.services.topics.answer_counts(w.space)
        assert counts[w.server.channel_id] == AnswerCounts(sent=2, answered=1, waiting=0)


async def _status(w: World) -> str:
    ix = await w.server.inject_interaction("topic status", user=w.server.admin_user)
    return (await w.server.wait_for_reply(ix)).content


async def test_topic_status_shows_the_backoff_and_the_answers(
    world: WorldFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with world(topic_reply_window_minutes=30) as w:
        await _enable(w)
        await w.services.topics.configure(
            w.server.channel_id, {"active_start": "00:00", "active_end": "00:00"}
        )
        talk = "ラーメンとカメラが好き"
        await w.services.topics.record_activity(w.space, w.server.channel_id, talk)
        first = await _opener(w, "最近どこかでおいしいラーメン食べた？")
        await w.services.db.execute(
            "UPDATE topic_posts SET posted_at = ? WHERE space_id = ? AND id = ?",
            (_ago(w, minutes=40), w.space, first),
        )
        status = await _status(w)
        assert "threshold 240 min, backed off after 1 unanswered" in status, status
        assert "openers answered: 0 of 1 (0 waiting for a reply)" in status

        await _opener(w, "カメラは何を使ってる？")
        activity = Calls(monkeypatch, w.services.topics, "record_activity")
        await w.server.inject_message("味噌かな", mention_bot=False)
        await activity.wait(1)
        status = await _status(w)
        assert "threshold 120 min" in status and "backed off" not in status, status
        assert "openers answered: 1 of 2 (0 waiting for a reply)" in status


async def test_topic_status_names_the_quiet_hours_in_the_servers_zone(
    world: WorldFactory,
) -> None:
    server_zone = ZoneInfo("Pacific/Kiritimati")  # UTC+14: not the host's
    hour = datetime.now(server_zone).hour
    quiet = f"{(hour - 1) % 24}-{(hour + 2) % 24}"
    async with world(topic_quiet_hours=quiet, language="ja") as w:
        await _enable(w)
        await w.services.topics.configure(
            w.server.channel_id, {"active_start": "00:00", "active_end": "00:00"}
        )
        await w.services.spaces.set_timezone(w.space, "Pacific/Kiritimati")
        status = await _status(w)
        assert "(Pacific/Kiritimati)" in status and "quiet hours" in status, status
        assert "返信のあった話題: 0 件中 0 件（返信待ち 0 件）" in status
