"""End to end on one database (a SQLite file, or PostgreSQL): two bot processes (shards 0 and
1 of 2) and the admin API alone as a third; a process killed mid-turn and started again."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from tests.fakes.discord_server import FakeDiscord, FakeGuild, FakeMessage
from tests.fakes.llm_server import FakeLLMServer, Hang, RecordedRequest, Reply, Text, ToolCalls
from tests.sharding.processes import (
    START,
    SharedDatabase,
    admin_process,
    bot_process,
    wait_ready,
)

REPLY = "Answered once."
TOKEN = "t" * 40
PIRATE = "Speak like a pirate."


def _env(llm: FakeLLMServer, shard: int, db: SharedDatabase) -> dict[str, str]:
    # SQLite: processes poll for changed settings. PostgreSQL: LISTEN/NOTIFY; polling set so
    # rare that a change arriving within the test can only have come by NOTIFY.
    sync = "0.2" if db.engine == "sqlite" else "60"
    return {
        "SHARD_COUNT": "2",
        "SHARD_IDS": str(shard),
        "LLM_MODEL": "ollama/test-model",
        "LLM_API_BASE": llm.url,
        "STREAM_EDIT_INTERVAL": "0.2",
        "USER_COOLDOWN_SECONDS": "0",
        "SETTINGS_SYNC_INTERVAL": sync,
        "LOG_LEVEL": "INFO",
    }


def _last_user(request: RecordedRequest) -> str:
    users = [m for m in request.messages if m.get("role") == "user"]
    return str(users[-1].get("content", "")) if users else ""


def _system(request: RecordedRequest) -> str:
    return "\n".join(str(m.get("content")) for m in request.messages if m.get("role") == "system")


def _model(request: RecordedRequest) -> Reply:
    """The model: saves a note when asked to remember, stalls on "slow", else answers."""
    if request.messages and request.messages[-1].get("role") == "tool":
        return Text("Noted.")
    said = _last_user(request)
    if "remember" in said:
        return ToolCalls(
            [("write_note", {"title": "Plan", "content": "Meet at 9.", "mode": "create"})]
        )
    if "slow" in said:
        return Hang(after_chunks=2, text="half of an answer")
    return Text(REPLY)


async def _say(server: FakeDiscord, guild: FakeGuild, text: str) -> FakeMessage:
    owner = server.state.find_user(guild.owner_id)
    channel_id = server.guild_channels(guild.id)[0].id
    return await server.inject_message(text, author=owner, channel_id=channel_id)


def _bot_texts(server: FakeDiscord, thread_id: int) -> list[str]:
    return [m.content for m in server.messages_in(thread_id) if m.author.id == server.bot_user.id]


async def _answered(server: FakeDiscord, message: FakeMessage, text: str) -> None:
    await server.wait_for(lambda: text in _bot_texts(server, message.id), START)


async def test_a_note_written_on_shard_0_and_a_setting_changed_in_the_admin_api_alone(
    tmp_path: Path, llm: FakeLLMServer, shared_db: SharedDatabase
) -> None:
    llm.default_reply = _model
    async with FakeDiscord(shards=2) as server:
        guilds = [server.add_guild(f"server {i}", shard=i) for i in range(2)]
        async with (
            bot_process(server, shared_db, tmp_path, **_env(llm, 0, shared_db)) as zero,
            bot_process(server, shared_db, tmp_path, **_env(llm, 1, shared_db)) as one,
        ):
            await wait_ready(server, guilds)
            # Through Discord, in the server of process 0: the model saves a note.
            asked = await _say(server, guilds[0], "please remember the plan")
            await _answered(server, asked, "Noted.")
            async with (
                admin_process(shared_db, tmp_path, ADMIN_TOKEN=TOKEN) as admin,
                aiohttp.ClientSession(
                    admin.url, headers={"Authorization": f"Bearer {TOKEN}"}
                ) as http,
            ):
                # The admin API alone: no Discord, no scheduler in its readiness.
                async with http.get("/api/readiness") as response:
                    assert response.status == 200
                    states = {c["name"]: c["state"] for c in (await response.json())["components"]}
                assert (states["discord"], states["scheduler"]) == ("unknown", "unknown"), states
                space = f"guild:{guilds[0].id}"
                async with http.get("/api/notes", params={"space": space}) as response:
                    assert response.status == 200, await response.text()
                    pages = (await response.json())["pages"]
                assert [(p["title"], p["content"]) for p in pages] == [("Plan", "Meet at 9.")]
                # A setting changed through the admin API reaches both bot processes.
                body = {"values": {"system_prompt_extra": PIRATE}}
                async with http.put("/api/settings", json=body) as response:
                    assert response.status == 200, await response.text()
                for process in (zero, one):
                    await process.wait_for_log(r"settings reloaded \(changed elsewhere\): .*")
            before = len(llm.chat_requests)
            for guild in guilds:
                message = await _say(server, guild, f"hello {guild.name}")
                await _answered(server, message, REPLY)
            after = llm.chat_requests[before:]
            assert len(after) == 2
            assert all(PIRATE in _system(r) for r in after), [_system(r) for r in after]
            assert all(PIRATE not in _system(r) for r in llm.chat_requests[:before])
            assert "system_prompt_extra" in zero.stderr and "system_prompt_extra" in one.stderr
        assert await zero.stop() == 0, zero.stderr
        assert await one.stop() == 0, one.stderr


async def test_a_process_killed_mid_turn_restarts_its_servers_resume_nothing_lost_or_doubled(
    tmp_path: Path, llm: FakeLLMServer, shared_db: SharedDatabase
) -> None:
    llm.default_reply = _model
    async with FakeDiscord(shards=2) as server:
        guilds = [server.add_guild(f"server {i}", shard=i) for i in range(2)]
        async with bot_process(server, shared_db, tmp_path, **_env(llm, 0, shared_db)) as zero:
            async with bot_process(server, shared_db, tmp_path, **_env(llm, 1, shared_db)) as one:
                await wait_ready(server, guilds)
                # Process 1 streams an answer that never ends ...
                cut = await _say(server, guilds[1], "a slow question")
                await server.wait_for(
                    lambda: any("half" in t for t in _bot_texts(server, cut.id)), START
                )
                # ... and is killed in the middle of it.
                assert await one.kill() != 0
            sessions_before = len(server.sessions_of_shard(1))
            async with bot_process(server, shared_db, tmp_path, **_env(llm, 1, shared_db)) as again:
                await wait_ready(server, guilds[1:], after=sessions_before)
                # The user of the cut-off turn is told, in its thread, once.
                notice = await again.wait_for_log(r"1 turns were cut off by a restart")
                assert notice
                await server.wait_for(
                    lambda: any("restarted" in t for t in _bot_texts(server, cut.id)), START
                )
                # The restarted process serves its servers again.
                later = await _say(server, guilds[1], "are you back?")
                await _answered(server, later, REPLY)
                # Process 0 never noticed.
                other = await _say(server, guilds[0], "hello zero")
                await _answered(server, other, REPLY)
            assert await again.stop() == 0, again.stderr
            # A second restart finds nothing left to tell.
            async with bot_process(server, shared_db, tmp_path, **_env(llm, 1, shared_db)) as third:
                await wait_ready(server, guilds[1:], after=sessions_before + 1)
                await third.wait_for_log(r"logged in as")
            assert await third.stop() == 0, third.stderr
            assert "cut off by a restart" not in third.stderr
        assert await zero.stop() == 0, zero.stderr
    # The interrupted question is stored once, answered once (by the notice); nothing twice.
    [(question_id,)] = await shared_db.rows(
        "SELECT id FROM messages WHERE discord_message_id = ?", (cut.id,)
    )
    answers = await shared_db.rows(
        "SELECT content FROM messages WHERE reply_to = ? AND role = 'assistant'",
        (question_id,),
    )
    assert len(answers) == 1 and "restarted" in answers[0][0]
    discord_ids = [
        r[0]
        for r in await shared_db.rows("SELECT discord_message_id FROM messages WHERE role = 'user'")
    ]
    assert sorted(discord_ids) == sorted([cut.id, later.id, other.id])
    roles = await shared_db.rows("SELECT role, count(*) FROM messages GROUP BY role ORDER BY role")
    assert roles == [
        ("assistant", 3),
        ("user", 3),
    ]
    assert sum("restarted" in t for t in _bot_texts(server, cut.id)) == 1
