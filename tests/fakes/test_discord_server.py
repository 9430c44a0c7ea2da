"""The loopback Discord, exercised through the real discord.py client."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable
from datetime import datetime
from typing import Any

import aiohttp
import discord
import pytest
from discord import app_commands
from discord.ext import commands

from tests.fakes.discord_harness import ClientFailed, run_client
from tests.fakes.discord_models import Notifier
from tests.fakes.discord_server import FakeDiscord

WAIT = 5.0


def bot_intents(*, message_content: bool = True, members: bool = False) -> discord.Intents:
    """The intents the PlayChat bot asks for (no members intent by default)."""
    intents = discord.Intents.none()
    intents.guilds = True
    intents.guild_messages = True
    intents.dm_messages = True
    intents.message_content = message_content
    intents.members = members
    return intents


class TinyBot(commands.Bot):
    """A passive bot: records messages, syncs a few guild slash commands at setup."""

    def __init__(self, guild_id: int, intents: discord.Intents | None = None) -> None:
        super().__init__(
            command_prefix="!",
            intents=intents or bot_intents(),
            allowed_mentions=discord.AllowedMentions.none(),
            help_command=None,
        )
        self.guild_id = guild_id
        self.received: list[discord.Message] = []
        self.changes = Notifier()
        self.tree.add_command(self._ping(), guild=discord.Object(guild_id))
        self.tree.add_command(self._note(), guild=discord.Object(guild_id))

    async def setup_hook(self) -> None:
        await self.tree.sync(guild=discord.Object(self.guild_id))

    async def on_message(self, message: discord.Message) -> None:
        self.received.append(message)
        self.changes.changed()

    async def wait_received(
        self, predicate: Callable[[discord.Message], bool], timeout: float = WAIT
    ) -> discord.Message:
        """Wait until a received message matches."""
        return await self.changes.wait_for(
            lambda: next((m for m in self.received if predicate(m)), None),
            timeout,
            lambda: f"received: {[m.content for m in self.received]}",
        )

    @staticmethod
    def _ping() -> app_commands.Command[Any, ..., None]:
        @app_commands.command(name="ping", description="Answer pong")
        async def ping(interaction: discord.Interaction) -> None:
            member = interaction.user
            admin = isinstance(member, discord.Member) and member.guild_permissions.administrator
            await interaction.response.send_message("pong admin" if admin else "pong")

        return ping

    @staticmethod
    def _note() -> app_commands.Group:
        group = app_commands.Group(name="note", description="Notes")

        @group.command(name="add", description="Add a note")
        async def add(interaction: discord.Interaction, title: str, body: str = "") -> None:
            await interaction.response.defer(thinking=True)
            await interaction.followup.send(f"added {title}: {body}")

        @add.autocomplete("title")
        async def titles(
            interaction: discord.Interaction, current: str
        ) -> list[app_commands.Choice[str]]:
            names = ["groceries", "gardening", "travel"]
            return [app_commands.Choice(name=n, value=n) for n in names if n.startswith(current)]

        @group.command(name="export", description="Export notes")
        async def export(interaction: discord.Interaction) -> None:
            file = discord.File(io.BytesIO(b'{"notes": []}'), filename="notes.json")
            await interaction.response.send_message("here", file=file, ephemeral=True)
            copy = discord.File(io.BytesIO(b"copy"), filename="copy.txt")
            await interaction.followup.send("a copy", file=copy)

        @group.command(name="show", description="Show a note")
        async def show(interaction: discord.Interaction, who: discord.Member) -> None:
            await interaction.response.defer()
            await interaction.edit_original_response(content=f"notes of {who.name}")
            await interaction.followup.send("more")

        return group


async def test_ready_sees_guild_channels_and_roles() -> None:
    async with FakeDiscord() as server, run_client(TinyBot(server.guild_id), server) as bot:
        guild = bot.get_guild(server.guild_id)
        assert guild is not None and not guild.unavailable
        assert {c.name for c in guild.text_channels} == {"general", "random"}
        assert guild.get_channel(server.channel_id) is not None
        assert "Admin" in {r.name for r in guild.roles}
        assert guild.me is not None and bot.user is not None and bot.user.id == server.bot_user.id
        assert [c.path for c in server.calls[:2]] == ["/users/@me", "/oauth2/applications/@me"]
        assert server.sessions[0].intents == bot_intents().value


async def test_bad_token_surfaces_login_failure() -> None:
    async with FakeDiscord() as server:
        with pytest.raises(ClientFailed) as info:
            async with run_client(TinyBot(server.guild_id), server, token="wrong"):
                pass
        assert isinstance(info.value.__cause__, discord.LoginFailure)
        assert server.calls[0].status == 401


async def test_mention_is_received_with_mentions_and_member() -> None:
    async with FakeDiscord() as server:
        bot = TinyBot(server.guild_id)
        async with run_client(bot, server):
            sent = await server.inject_message("hello there")
            got = await bot.wait_received(lambda m: m.id == sent.id)
            assert bot.user in got.mentions
            assert got.content == f"<@{server.bot_user.id}> hello there"
            assert isinstance(got.author, discord.Member) and got.author.id == server.user.id
            assert got.channel.id == server.channel_id


async def test_reply_to_the_bot_is_received_with_reference() -> None:
    async with FakeDiscord() as server:
        bot = TinyBot(server.guild_id)
        async with run_client(bot, server):
            channel = bot.get_channel(server.channel_id)
            assert isinstance(channel, discord.TextChannel)
            mine = await channel.send("question?")
            stored = server.message(mine.id)
            assert stored is not None
            reply = await server.inject_message("answer", mention_bot=False, reply_to=stored)
            got = await bot.wait_received(lambda m: m.id == reply.id)
            assert got.reference is not None and got.reference.message_id == mine.id
            assert isinstance(got.reference.resolved, discord.Message)
            assert got.reference.resolved.author == bot.user
            assert bot.user in got.mentions  # a reply pings its target by default


async def test_thread_from_message_send_and_echo() -> None:
    async with FakeDiscord() as server:
        bot = TinyBot(server.guild_id)
        async with run_client(bot, server):
            sent = await server.inject_message("start a thread")
            got = await bot.wait_received(lambda m: m.id == sent.id)
            created = bot.wait_for("thread_create", timeout=WAIT)
            thread = await got.create_thread(name="chat")
            assert thread.id == got.id and thread.parent_id == server.channel_id
            assert (await created).id == thread.id
            echoed = bot.wait_for(
                "message",
                check=lambda m: m.author == bot.user and m.channel.id == thread.id,
                timeout=WAIT,
            )
            out = await thread.send("in the thread")
            assert (await echoed).id == out.id
            assert [m.content for m in server.messages_in(thread.id)] == ["in the thread"]
            assert server.threads[0].owner_id == server.bot_user.id
            paths = [c.path for c in server.calls if c.method == "POST"]
            assert f"/channels/{server.channel_id}/messages/{sent.id}/threads" in paths
            assert f"/channels/{thread.id}/messages" in paths
            user_msg = await server.inject_message("more", channel_id=thread.id, mention_bot=False)
            in_thread = await bot.wait_received(lambda m: m.id == user_msg.id)
            assert isinstance(in_thread.channel, discord.Thread)
            with pytest.raises(discord.HTTPException) as info:
                await got.create_thread(name="again")
            assert info.value.code == 160004
            fetched = await bot.fetch_channel(thread.id)
            assert isinstance(fetched, discord.Thread) and fetched.name == "chat"
            channel = bot.get_channel(server.channel_id)
            assert isinstance(channel, discord.TextChannel)
            bare = await channel.create_thread(name="bare", type=discord.ChannelType.public_thread)
            assert bare.type is discord.ChannelType.public_thread
            assert [t.name for t in server.threads] == ["chat", "bare"]


async def test_send_edit_allowed_mentions_and_flags_are_recorded() -> None:
    async with FakeDiscord() as server:
        bot = TinyBot(server.guild_id)
        async with run_client(bot, server):
            channel = bot.get_channel(server.channel_id)
            assert isinstance(channel, discord.TextChannel)
            msg = await channel.send(
                f"hi {server.user.mention} see https://example.org", suppress_embeds=True
            )
            call = server.calls_to("POST", rf"^/channels/{server.channel_id}/messages$")[-1]
            assert call.json["allowed_mentions"] == {"parse": []}
            assert call.json["flags"] & (1 << 2)
            stored = server.message(msg.id)
            assert stored is not None and stored.suppress_embeds and not stored.pings()
            edited = bot.wait_for(
                "raw_message_edit", check=lambda p: p.message_id == msg.id, timeout=WAIT
            )
            await msg.edit(content="edited")
            assert (await edited).data["content"] == "edited"
            assert stored.versions == [msg.content, "edited"]
            assert server.calls_to("PATCH", rf"/messages/{msg.id}$")[-1].json["content"] == "edited"
            with pytest.raises(discord.HTTPException) as info:
                await channel.send("x" * 2001)
            assert info.value.code == 50035


async def test_file_upload_is_recorded_and_readable() -> None:
    async with FakeDiscord() as server:
        bot = TinyBot(server.guild_id)
        async with run_client(bot, server):
            channel = bot.get_channel(server.channel_id)
            assert isinstance(channel, discord.TextChannel)
            msg = await channel.send("report", file=discord.File(io.BytesIO(b"data!"), "r.txt"))
            call = server.calls_to("POST", r"/messages$")[-1]
            assert call.json["content"] == "report"
            assert [(f.filename, f.data) for f in call.files] == [("r.txt", b"data!")]
            assert await msg.attachments[0].read() == b"data!"


async def test_injected_attachment_can_be_read() -> None:
    async with FakeDiscord() as server:
        bot = TinyBot(server.guild_id)
        async with run_client(bot, server):
            pdf = b"%PDF-1.4 fake"
            sent = await server.inject_message(
                "read this", attachments=[("a.pdf", pdf, "application/pdf")]
            )
            got = await bot.wait_received(lambda m: m.id == sent.id)
            att = got.attachments[0]
            assert (att.filename, att.size, att.content_type) == (
                "a.pdf",
                len(pdf),
                "application/pdf",
            )
            assert att.url.startswith(server.url)
            assert await att.read() == pdf


async def test_without_message_content_intent_content_is_blank_unless_mentioned() -> None:
    async with FakeDiscord() as server:
        bot = TinyBot(server.guild_id, bot_intents(message_content=False))
        async with run_client(bot, server):
            plain = await server.inject_message("secret", mention_bot=False)
            mention = await server.inject_message("visible")
            got_mention = await bot.wait_received(lambda m: m.id == mention.id)
            got_plain = next(m for m in bot.received if m.id == plain.id)
            assert got_plain.content == "" and got_mention.content.endswith("visible")


async def test_dm_in_and_out() -> None:
    async with FakeDiscord() as server:
        bot = TinyBot(server.guild_id)
        async with run_client(bot, server):
            dm = server.dm_channel(server.user)
            sent = await server.inject_message("psst", channel_id=dm.id, mention_bot=False)
            got = await bot.wait_received(lambda m: m.id == sent.id)
            assert got.guild is None and isinstance(got.channel, discord.DMChannel)
            await got.channel.send("dm reply")
            user = await bot.fetch_user(server.user.id)
            await user.send("second")
            assert [m.content for m in server.messages_in(dm.id)] == ["psst", "dm reply", "second"]


async def test_slash_commands_sync_and_answer() -> None:
    async with FakeDiscord() as server:
        bot = TinyBot(server.guild_id)
        async with run_client(bot, server):
            names = {c["name"] for c in server.commands(server.guild_id)}
            assert names == {"ping", "note"}
            ix = await server.inject_interaction("ping")
            assert (await server.wait_for_reply(ix)).content == "pong"
            callback = server.calls_to("POST", rf"^/interactions/{ix.id}/")[0]
            assert callback.json["type"] == 4 and callback.query.get("with_response") == "1"
            admin_ix = await server.inject_interaction("ping", user=server.admin_user)
            assert (await server.wait_for_reply(admin_ix)).content == "pong admin"
            # Discord refuses a second answer; discord.py checks locally, so ask raw HTTP.
            url = f"{server.api_url}/interactions/{ix.id}/{ix.token}/callback"
            body = {"type": 4, "data": {"content": "again"}}
            async with aiohttp.ClientSession() as http, http.post(url, json=body) as resp:
                assert resp.status == 400 and (await resp.json())["code"] == 40060


async def test_subcommand_defer_followup_autocomplete_and_file() -> None:
    async with FakeDiscord() as server:
        bot = TinyBot(server.guild_id)
        async with run_client(bot, server):
            ix = await server.inject_interaction("note add", {"title": "groceries", "body": "milk"})
            reply = await server.wait_for_reply(ix)
            assert reply.content == "added groceries: milk" and ix.callback_type == 5
            assert ix.texts() == ["added groceries: milk"]  # the followup filled "thinking…"
            auto = await server.inject_interaction("note add", {"title": "g"}, autocomplete="title")
            choices = await server.wait_for(lambda: auto.choices)
            assert [c["value"] for c in choices] == ["groceries", "gardening"]
            exp = await server.inject_interaction("note export", user=server.admin_user)
            await server.wait_for(lambda: len(exp.messages()) == 2)
            out, copy = exp.messages()
            assert out.ephemeral and out.attachments[0].data == b'{"notes": []}'
            assert out not in server.messages_in(server.channel_id)
            assert copy.attachments[0].data == b"copy" and not copy.ephemeral
            assert server.calls_to("POST", r"^/webhooks/")[-1].files[0].filename == "copy.txt"
            shown = await server.inject_interaction("note show", {"who": server.user})
            await server.wait_for(lambda: shown.texts() == ["notes of alice", "more"])
            assert server.calls_to("PATCH", r"/messages/@original$")
            with pytest.raises(ValueError, match="not registered"):
                await server.inject_interaction("nope")


async def test_429_on_edit_is_waited_out() -> None:
    async with FakeDiscord() as server:
        bot = TinyBot(server.guild_id)
        async with run_client(bot, server):
            channel = bot.get_channel(server.channel_id)
            assert isinstance(channel, discord.TextChannel)
            msg = await channel.send("v1")
            rule = server.fail_next(
                "PATCH", r"^/channels/\d+/messages/\d+$", status=429, retry_after=0.3
            )
            await msg.edit(content="v2")
            patches = server.calls_to("PATCH", rf"/messages/{msg.id}$")
            assert [c.status for c in patches] == [429, 200] and rule.hits == 1
            assert patches[1].at - patches[0].at >= 0.3
            stored = server.message(msg.id)
            assert stored is not None and stored.content == "v2"


async def test_channel_rate_limit_is_respected() -> None:
    async with FakeDiscord() as server:
        bot = TinyBot(server.guild_id)
        async with run_client(bot, server):
            channel = bot.get_channel(server.channel_id)
            assert isinstance(channel, discord.TextChannel)
            server.enable_rate_limit(limit=2, per=0.4)
            for text in ("a", "b", "c"):
                await channel.send(text)
            ok = [c for c in server.calls_to("POST", r"/messages$") if c.status == 200]
            assert [m.content for m in server.messages_in(server.channel_id)] == ["a", "b", "c"]
            assert ok[2].at - ok[0].at >= 0.4
            assert ok[0].response_headers["X-RateLimit-Remaining"] == "1"
            assert ok[0].response_headers["X-RateLimit-Limit"] == "2"


async def test_force_reconnect_resumes_and_replays_the_gap_once() -> None:
    async with FakeDiscord() as server:
        bot = TinyBot(server.guild_id)
        async with run_client(bot, server):
            resumed = bot.wait_for("resumed", timeout=WAIT)
            assert await server.force_reconnect() == 1
            gap = await server.inject_message("sent while away")
            await resumed
            record = server.resumes[-1]
            assert record.replayed >= 1 and record.path == "/resume-gateway"
            after = await server.inject_message("after")
            await bot.wait_received(lambda m: m.id == after.id)
            assert [m.id for m in bot.received].count(gap.id) == 1
            assert len(server.sessions) == 1  # resumed, not re-identified


@pytest.mark.parametrize("code", [None, 4000])
async def test_dropped_socket_resumes(code: int | None) -> None:
    async with FakeDiscord() as server:
        bot = TinyBot(server.guild_id)
        async with run_client(bot, server):
            resumed = bot.wait_for("resumed", timeout=WAIT)
            await server.disconnect(code)
            gap = await server.inject_message("gap")
            await resumed
            after = await server.inject_message("after")
            await bot.wait_received(lambda m: m.id == after.id)
            assert [m.id for m in bot.received].count(gap.id) == 1


async def test_members_intent_chunk_is_answered() -> None:
    async with FakeDiscord() as server:
        bot = TinyBot(server.guild_id, bot_intents(members=True))
        async with run_client(bot, server, ready_timeout=3.0):
            guild = bot.get_guild(server.guild_id)
            assert guild is not None and guild.chunked
            assert {m.id for m in guild.members} >= {server.user.id, server.admin_user.id}


async def test_late_interaction_answer_is_refused_like_discord() -> None:
    async with FakeDiscord(ack_deadline=0.0) as server:
        bot = TinyBot(server.guild_id)
        async with run_client(bot, server):
            ix = await server.inject_interaction("ping")
            calls = await server.wait_for(
                lambda: server.calls_to("POST", rf"^/interactions/{ix.id}/")
            )
            assert calls[0].status == 404
            assert not ix.acknowledged and ix.messages() == []


async def test_history_fetch_delete_and_injected_errors() -> None:
    async with FakeDiscord() as server:
        bot = TinyBot(server.guild_id)
        async with run_client(bot, server):
            channel = bot.get_channel(server.channel_id)
            assert isinstance(channel, discord.TextChannel)
            first = await channel.send("one")
            second = await channel.send("two")
            assert [m.content async for m in channel.history(limit=10)] == ["two", "one"]
            assert (await channel.fetch_message(first.id)).content == "one"
            deleted = bot.wait_for(
                "raw_message_delete", check=lambda p: p.message_id == second.id, timeout=WAIT
            )
            await second.delete()
            await deleted
            assert [m.content for m in server.messages_in(server.channel_id)] == ["one"]
            with pytest.raises(discord.NotFound):
                await channel.fetch_message(second.id)
            server.fail_next(
                "POST", r"/messages$", status=403, code=50013, message="Missing Permissions"
            )
            with pytest.raises(discord.Forbidden) as info:
                await channel.send("nope")
            assert info.value.code == 50013
            with pytest.raises(discord.HTTPException) as empty:
                await channel.send("   ")
            assert empty.value.code == 50006
            assert not server.errors


async def test_disallowed_privileged_intent_closes_with_4014() -> None:
    async with FakeDiscord(privileged_intents=0) as server:
        with pytest.raises(ClientFailed) as info:
            async with run_client(TinyBot(server.guild_id), server):
                pass
        assert isinstance(info.value.__cause__, discord.PrivilegedIntentsRequired)


# -- sharding


class ShardBot(commands.AutoShardedBot):
    """A passive sharded bot that records messages (and connects its shards without delay)."""

    def __init__(self, *, shard_ids: list[int] | None = None, shard_count: int | None = None):
        super().__init__(
            command_prefix="!",
            intents=bot_intents(),
            allowed_mentions=discord.AllowedMentions.none(),
            help_command=None,
            shard_ids=shard_ids,
            shard_count=shard_count,
        )
        self.received: list[discord.Message] = []
        self.changes = Notifier()

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        # discord.py waits 5 s between IDENTIFYs (Discord's rate limit); the fake has none.
        return None

    async def on_message(self, message: discord.Message) -> None:
        self.received.append(message)
        self.changes.changed()

    async def wait_received(self, message_id: int) -> discord.Message:
        """Wait until the message with this id was received."""
        return await self.changes.wait_for(
            lambda: next((m for m in self.received if m.id == message_id), None),
            WAIT,
            lambda: f"received: {[m.content for m in self.received]}",
        )


def test_guild_ids_can_be_made_for_a_shard_and_spread_by_default() -> None:
    server = FakeDiscord(shards=3)
    on_two = [server.add_guild(f"g{i}", shard=2).id for i in range(3)]
    assert [server.shard_of(g) for g in on_two] == [2, 2, 2]
    assert on_two == sorted(on_two)
    spread = [server.add_guild(f"s{i}").id for i in range(3)]
    assert {server.shard_of(g) for g in spread} == {0, 1, 2}
    assert spread[0] > on_two[-1] and spread == sorted(spread)
    with pytest.raises(ValueError):
        server.add_guild("nope", shard=3)


async def test_auto_sharded_client_asks_the_shard_count_and_connects_every_shard() -> None:
    async with FakeDiscord(shards=2) as server:
        zero, one = server.add_guild("zero", shard=0), server.add_guild("one", shard=1)
        async with run_client(ShardBot(), server) as bot:
            assert isinstance(bot, commands.AutoShardedBot)
            assert server.calls_to("GET", r"^/gateway/bot$")
            assert bot.shard_count == 2
            assert sorted(s.shard for s in server.sessions if s.shard) == [(0, 2), (1, 2)]
            assert {g.id for g in bot.guilds} == {server.guild_id, zero.id, one.id}
            assert bot.get_guild(one.id).shard_id == 1  # type: ignore[union-attr]
            msg = await server.inject_message(
                "hi",
                channel_id=server.guild_channels(one.id)[0].id,
                author=server.state.find_user(one.owner_id),
            )
            await bot.wait_received(msg.id)


async def test_each_shard_process_gets_only_its_guilds_and_dms_go_to_shard_0() -> None:
    async with FakeDiscord(shards=2) as server:
        zero, one = server.add_guild("zero", shard=0), server.add_guild("one", shard=1)
        first, second = (
            ShardBot(shard_ids=[0], shard_count=2),
            ShardBot(shard_ids=[1], shard_count=2),
        )
        async with run_client(first, server), run_client(second, server):
            [s0], [s1] = server.sessions_of_shard(0), server.sessions_of_shard(1)
            assert (s0.shard, s1.shard) == ((0, 2), (1, 2))
            for session, guild in ((s0, zero), (s1, one)):
                ready = next(d for _, e, d in session.events if e == "READY")
                ready_ids = {int(g["id"]) for g in ready["guilds"]}
                created = {int(d["id"]) for _, e, d in session.events if e == "GUILD_CREATE"}
                assert guild.id in ready_ids and ready_ids == created
                assert all(server.shard_of(g) == session.shard[0] for g in ready_ids)  # type: ignore[index]
            assert {g.id for g in first.guilds} | {g.id for g in second.guilds} == set(
                server.state.guilds
            )
            assert not {g.id for g in first.guilds} & {g.id for g in second.guilds}
            # A guild's message goes to its shard only; a DM to shard 0.
            owner = server.state.find_user(one.owner_id)
            in_one = await server.inject_message(
                "for shard 1", author=owner, channel_id=server.guild_channels(one.id)[0].id
            )
            await second.wait_received(in_one.id)
            dm = await server.inject_message(
                "a dm", channel_id=server.dm_channel(server.user).id, mention_bot=False
            )
            await first.wait_received(dm.id)
            assert server.delivered("MESSAGE_CREATE", lambda d: d["id"] == str(in_one.id)) == [s1]
            assert server.delivered("MESSAGE_CREATE", lambda d: d["id"] == str(dm.id)) == [s0]
            assert in_one.id not in {m.id for m in first.received}
            assert dm.id not in {m.id for m in second.received}
            # A guild added later is announced to its shard's session only.
            late = server.add_guild("late", shard=1)
            await server.wait_for(lambda: second.get_guild(late.id))
            assert first.get_guild(late.id) is None
            assert server.delivered("GUILD_CREATE", lambda d: d["id"] == str(late.id)) == [s1]


async def test_resume_keeps_the_shard_of_the_session() -> None:
    async with FakeDiscord(shards=2) as server:
        one = server.add_guild("one", shard=1)
        owner = server.state.find_user(one.owner_id)
        channel_id = server.guild_channels(one.id)[0].id
        bot = ShardBot(shard_ids=[1], shard_count=2)
        async with run_client(bot, server):
            resumed = bot.wait_for("shard_resumed", timeout=WAIT)
            assert await server.force_reconnect() == 1
            gap = await server.inject_message("while away", author=owner, channel_id=channel_id)
            await resumed
            after = await server.inject_message("after", author=owner, channel_id=channel_id)
            await bot.wait_received(after.id)
            assert [m.id for m in bot.received].count(gap.id) == 1
            assert len(server.sessions) == 1 and server.sessions[0].shard == (1, 2)
            assert server.resumes[-1].session_id == server.sessions[0].session_id


async def test_identify_with_a_malformed_shard_is_closed_with_4010() -> None:
    async with (
        FakeDiscord(shards=2) as server,
        aiohttp.ClientSession() as http,
        http.ws_connect(server.gateway_url) as ws,
    ):
        hello = await ws.receive_json()
        assert hello["op"] == 10
        identify = {"token": server.token, "intents": 0, "properties": {}, "shard": [2, 2]}
        await ws.send_json({"op": 2, "d": identify})
        msg = await ws.receive()
        assert msg.type is aiohttp.WSMsgType.CLOSE and msg.data == 4010


async def test_typing_start_reaches_on_typing_and_on_raw_typing_with_the_typing_intent() -> None:
    intents = bot_intents()
    intents.guild_typing = True
    intents.dm_typing = True
    async with FakeDiscord() as server:
        bot = TinyBot(server.guild_id, intents)
        raw: asyncio.Future[discord.RawTypingEvent] = asyncio.get_running_loop().create_future()
        cached: asyncio.Future[tuple[Any, Any, datetime]] = (
            asyncio.get_running_loop().create_future()
        )

        async def on_raw_typing(payload: discord.RawTypingEvent) -> None:
            if not raw.done():
                raw.set_result(payload)

        async def on_typing(channel: Any, user: Any, when: datetime) -> None:
            if not cached.done():
                cached.set_result((channel, user, when))

        bot.add_listener(on_raw_typing)
        bot.add_listener(on_typing)
        async with run_client(bot, server):
            sent = await server.inject_typing()
            payload = await asyncio.wait_for(raw, WAIT)
            assert payload.user_id == server.user.id
            assert payload.channel_id == server.channel_id
            assert payload.guild_id == server.guild_id
            assert isinstance(payload.user, discord.Member) and payload.user.id == server.user.id
            assert int(payload.timestamp.timestamp()) == sent["timestamp"]
            channel, user, _ = await asyncio.wait_for(cached, WAIT)
            assert channel.id == server.channel_id and user.id == server.user.id


async def test_typing_start_is_not_sent_without_the_typing_intent() -> None:
    async with FakeDiscord() as server:
        bot = TinyBot(server.guild_id)
        async with run_client(bot, server):
            await server.inject_typing()
            assert not server.delivered("TYPING_START", lambda _: True)


class _Question(discord.ui.View):
    """Two buttons; only `asker` may press them: the answer replaces the question."""

    def __init__(self, asker: int) -> None:
        super().__init__(timeout=None)
        self.asker = asker

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        if interaction.user.id == self.asker:
            return True
        await interaction.response.send_message("not yours", ephemeral=True)
        return False

    @discord.ui.button(label="Yes", custom_id="q:yes", style=discord.ButtonStyle.success)
    async def yes(self, interaction: discord.Interaction, _button: discord.ui.Button[Any]) -> None:
        await interaction.response.edit_message(content="said yes", view=None)
        self.stop()

    @discord.ui.button(label="No", custom_id="q:no", style=discord.ButtonStyle.danger)
    async def no(self, interaction: discord.Interaction, _button: discord.ui.Button[Any]) -> None:
        await interaction.response.defer()


async def test_buttons_are_recorded_pressed_and_answered_by_updating_their_message() -> None:
    async with FakeDiscord() as server:
        bot = TinyBot(server.guild_id)
        async with run_client(bot, server):
            channel = bot.get_channel(server.channel_id)
            assert isinstance(channel, discord.TextChannel)
            sent = await channel.send("yes or no?", view=_Question(server.user.id))
            stored = server.message(sent.id)
            assert stored is not None and stored.custom_ids() == ["q:yes", "q:no"]
            assert stored.components[0]["components"][0]["label"] == "Yes"

            stranger = server.add_user("stranger")
            refused = await server.press(stored, "q:yes", user=stranger)
            await server.wait_for(lambda: refused.acknowledged)
            assert refused.callback_type == 4 and refused.texts() == ["not yours"]
            assert refused.messages()[0].ephemeral
            assert stored.content == "yes or no?" and stored.custom_ids() == ["q:yes", "q:no"]

            deferred = await server.press(stored, "q:no")
            await server.wait_for(lambda: deferred.acknowledged)
            assert deferred.callback_type == 6 and stored.content == "yes or no?"

            pressed = await server.press(stored, "q:yes")
            await server.wait_for(lambda: pressed.acknowledged)
            assert pressed.callback_type == 7 and pressed.user.id == server.user.id
            assert pressed.payload["message"]["id"] == str(stored.id)
            assert pressed.payload["data"] == {"custom_id": "q:yes", "component_type": 2}
            assert stored.content == "said yes" and stored.components == []
            assert len(stored.component_versions) == 2 and stored.component_versions[1] == []
            with pytest.raises(ValueError, match="shows no component"):
                await server.press(stored, "q:yes")


async def test_a_message_without_the_button_cannot_be_pressed() -> None:
    async with FakeDiscord() as server:
        bot = TinyBot(server.guild_id)
        async with run_client(bot, server):
            channel = bot.get_channel(server.channel_id)
            assert isinstance(channel, discord.TextChannel)
            sent = await channel.send("plain")
            stored = server.message(sent.id)
            assert stored is not None and stored.component_versions == [[]]
            with pytest.raises(ValueError, match="shows no component"):
                await server.press(stored, "q:yes")
