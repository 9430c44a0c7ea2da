"""End to end: two `python -m bot` processes, shards 0 and 1 of 2, one loopback Discord with
four servers spread over both shards, one database shared by both (a SQLite file in WAL mode,
or PostgreSQL)."""

from __future__ import annotations

import re
from pathlib import Path

from bot.config import Settings
from bot.services import open_services
from bot.store.spaces import guild_space
from tests.fakes.discord_server import FakeDiscord, FakeGuild, FakeMessage
from tests.fakes.llm_server import FakeLLMServer, Text
from tests.sharding.processes import BotProcess, SharedDatabase, bot_process

REPLY = "Answered once."
START = 60.0
# A cron job runs at the top of the next minute.
TOPIC_WAIT = 90.0


def _env(llm: FakeLLMServer, shard: int) -> dict[str, str]:
    return {
        "SHARD_COUNT": "2",
        "SHARD_IDS": str(shard),
        "LLM_MODEL": "ollama/test-model",
        "LLM_API_BASE": llm.url,
        "STREAM_EDIT_INTERVAL": "0.2",  # the lowest allowed
        "USER_COOLDOWN_SECONDS": "0",
        "LOG_LEVEL": "INFO",
    }


async def _configure_topics(
    db: SharedDatabase, tmp_path: Path, guilds: list[FakeGuild], server: FakeDiscord
) -> None:
    """Migrate the shared database and give each server's channel a topic post every minute,
    one a day at most, and a word to talk about."""
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=db.url,
        kb_dir=tmp_path / "kb",
        language="en",
    )
    async with open_services(settings) as services:
        for guild in guilds:
            channel = server.guild_channels(guild.id)[0]
            await services.topics.configure(
                channel.id,
                {
                    "enabled": True,
                    "cron": "* * * * *",
                    "max_posts_per_day": 1,
                    "guild_id": guild.id,
                },
            )
            await services.repos.word_pool.add(guild_space(guild.id), channel.id, ["ramen"], keep=9)


def _topic_posts(server: FakeDiscord, guild: FakeGuild) -> list[str]:
    """What the bot posted in the server's channel itself (answers go to threads)."""
    channel = server.guild_channels(guild.id)[0]
    return [m.content for m in server.messages_in(channel.id) if m.author.id == server.bot_user.id]


def _jobs(log: str) -> set[str]:
    """The topic job ids a process logged (its last rebuild)."""
    lines = re.findall(r"topic jobs \(shards (\d) of 2\): (.*)", log)
    assert lines, log[-3000:]
    return set(lines[-1][1].split(", "))


async def test_every_server_is_answered_by_exactly_one_process_and_a_topic_posted_once(
    tmp_path: Path, llm: FakeLLMServer, shared_db: SharedDatabase
) -> None:
    llm.default_reply = Text(REPLY)
    async with FakeDiscord(shards=2) as server:
        guilds = [server.add_guild(f"server {i}", shard=i % 2) for i in range(4)]
        await _configure_topics(shared_db, tmp_path, guilds, server)
        processes: list[BotProcess] = []
        async with bot_process(server, shared_db, tmp_path, **_env(llm, 0)) as zero:
            processes.append(zero)
            await server.wait_for(lambda: server.sessions_of_shard(0), START)
            async with bot_process(server, shared_db, tmp_path, **_env(llm, 1)) as one:
                processes.append(one)
                await server.wait_for(lambda: server.sessions_of_shard(1), START)
                # Each process is ready once its shard's servers were announced to it.
                for guild in guilds:
                    [session] = server.sessions_of_shard(server.shard_of(guild.id))
                    await server.wait_for(
                        lambda s=session, g=guild: (
                            s.connection is not None
                            and any(
                                e == "GUILD_CREATE" and d["id"] == str(g.id) for _, e, d in s.events
                            )
                        ),
                        START,
                    )
                sent: list[tuple[FakeGuild, FakeMessage]] = []
                for guild in guilds:
                    owner = server.state.find_user(guild.owner_id)
                    channel_id = server.guild_channels(guild.id)[0].id
                    sent.append(
                        (
                            guild,
                            await server.inject_message(
                                f"hello {guild.name}", author=owner, channel_id=channel_id
                            ),
                        )
                    )
                for _, message in sent:
                    await server.wait_for(
                        lambda m=message: any(x.content == REPLY for x in server.messages_in(m.id)),
                        START,
                    )
                # The next minute's topic job fires in every channel (and is recorded).
                await server.wait_for(
                    lambda: all(_topic_posts(server, g) for g in guilds), TOPIC_WAIT
                )
                for guild in guilds:
                    channel_id = server.guild_channels(guild.id)[0].id
                    owner = processes[server.shard_of(guild.id)]
                    await owner.wait_for_log(rf"posted a cron topic in channel {channel_id}\b")
            assert await one.stop() == 0, one.stderr
        assert await zero.stop() == 0, zero.stderr
    # Every message reached exactly one process: the one serving its server's shard ...
    assert sorted(s.shard for s in server.sessions) == [(0, 2), (1, 2)]  # type: ignore[type-var]
    for guild, message in sent:
        delivered = server.delivered("MESSAGE_CREATE", lambda d, m=message: d["id"] == str(m.id))
        assert [s.shard for s in delivered] == [(server.shard_of(guild.id), 2)]
        # ... which answered it once, in one thread, with one model call.
        bot_replies = [
            m for m in server.messages_in(message.id) if m.author.id == server.bot_user.id
        ]
        assert [m.content for m in bot_replies] == [REPLY]
    # ... and each channel got one opener, from one process (the other has no job for it).
    assert [_topic_posts(server, g) for g in guilds] == [[REPLY]] * len(guilds)
    posts = await shared_db.rows(
        "SELECT channel_id, kind, count(*) FROM topic_posts GROUP BY channel_id, kind"
    )
    channels = {server.guild_channels(g.id)[0].id for g in guilds}
    assert sorted(posts) == sorted((c, "cron", 1) for c in channels)
    assert len(llm.chat_requests) == len(sent) + len(guilds)
    assert len(server.calls_to("POST", r"^/channels/\d+/messages/\d+/threads$")) == len(sent)
    rows = await shared_db.rows("SELECT role, count(*) FROM messages GROUP BY role ORDER BY role")
    assert rows == [("assistant", len(sent)), ("user", len(sent))]
    # Each channel's topic jobs are scheduled by exactly one process: its shard's.
    by_process = [_jobs(p.stderr) for p in processes]
    for guild in guilds:
        channel_id = server.guild_channels(guild.id)[0].id
        owners = [i for i, jobs in enumerate(by_process) if f"cron:{channel_id}" in jobs]
        assert owners == [server.shard_of(guild.id)], by_process
    assert sum(len(jobs) for jobs in by_process) == 2 * len(guilds)
