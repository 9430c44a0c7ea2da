"""A loopback Discord (REST + gateway websocket on one port) for the real discord.py client.

Usage (tests/fakes/discord_harness.py runs a client against it)::

    async with FakeDiscord() as server, run_client(bot, server):
        msg = await server.inject_message("hello")          # mentions the bot by default
        await server.wait_for(lambda: server.messages_in(msg.id))   # a thread's id == msg id
        ix = await server.inject_interaction("note add", {"title": "x"})
        seen = await server.wait_for_reply(ix)              # what the user saw

The world: `guild_id`; text channels `channel_id` ("general") and `other_channel_id`
("random"); users `user` (plain member), `admin_user` (Admin role, administrator; guild
owner) and `bot_user` (application id == bot user id); `dm_channel(user)` opens a DM;
`add_user()` adds members. More guilds: `add_guild(name)` (before the client connects, or
announced with GUILD_CREATE), each with its own roles, owner, members (`add_member`) and
channels (`add_channel`); `remove_guild` (GUILD_DELETE: the bot was removed),
`rejoin_guild` and `rename_guild` (GUILD_UPDATE). Sharding: `FakeDiscord(shards=n)` answers
GET /gateway/bot with `"shards": n`; a client that IDENTIFYs with `"shard": [k, n]` gets only
shard k's guilds (`(guild_id >> 22) % n`; DMs on shard 0); `add_guild(name, shard=k)` makes a
guild on shard k (guild ids otherwise spread over shards), `shard_of(guild_id)` tells which,
`sessions_of_shard(k)` lists the sessions that identified as shard k and `delivered(event,
key)` the sessions an event was sent to. Read state directly: `calls` (every REST call in
order, as `RestCall`, with status and response headers), `calls_to(method, regex)`,
`messages_in(channel_id)` (visible messages after edits; `FakeMessage.versions` keeps every
content, `pings()` tells who was notified), `message(id)`, `threads`, `interactions`
(`FakeInteraction.texts()`), `commands(guild_id)`, the components of the bot's messages
(`FakeMessage.components`, every version in `component_versions`), `sessions` / `resumes` (gateway).
`wait_for(predicate)` sleeps until a state change makes it true (no polling).

Behaviour: the bot's creates/edits/deletes are echoed as MESSAGE_CREATE/UPDATE/DELETE; a thread
started from a message has the message's id (as in Discord) and is announced with THREAD_CREATE
(newly_created); interaction callbacks are accepted once (40060 after) and within
`ack_deadline` seconds (10062 after); the first followup after a defer fills the "thinking"
message; `press(message, custom_id, user=)` presses a button the message shows
(INTERACTION_CREATE type 3), and an UPDATE_MESSAGE callback (7) edits that message
(`FakeInteraction.callback_type` / `callback_data` keep the answer); a session without the
MESSAGE_CONTENT intent gets blank content for guild messages that do not mention the bot.
`fail_next()` injects failures (429 the way Discord sends it: JSON body with retry_after, `Via`
header), `enable_rate_limit()` turns on the per-channel message bucket (creates and edits share
it; X-RateLimit-* headers; 429 when exceeded), `force_reconnect()` sends op 7 and
`disconnect()` drops the socket; dispatches in the gap are replayed after RESUME, exactly once
(sequence numbers). Attachments are served at `{url}/attachments/...`, so `Attachment.read()`
works. 5xx answers make discord.py sleep 1-9 s per retry, so prefer 4xx/429 in tests; a bug
inside the fake is answered 400 and kept in `errors`. Unknown routes answer 404 JSON and log a
warning naming the route.

Modules: discord_models (values), discord_state (the world and its JSON), discord_gateway,
discord_http (recording, failures, rate limits), discord_rest (channels, messages, threads),
discord_interactions (commands, interaction callbacks and webhooks).
"""

from __future__ import annotations

import asyncio
import logging
import re
import secrets
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar

from aiohttp import web

from tests.fakes.discord_gateway import Gateway, GatewaySession
from tests.fakes.discord_http import ChannelRateLimit, FailRule, HttpLayer
from tests.fakes.discord_interactions import InteractionApi, OptionBuilder, OptionValue
from tests.fakes.discord_models import (
    DIRECT_MESSAGE_TYPING,
    GUILD_MEMBERS,
    GUILD_MESSAGE_TYPING,
    JSON,
    PRIVILEGED_INTENTS,
    REPLY,
    FakeAttachment,
    FakeChannel,
    FakeGuild,
    FakeInteraction,
    FakeMessage,
    FakeUser,
    Notifier,
    RestCall,
    ResumeRecord,
    iso_now,
    shard_of,
)
from tests.fakes.discord_rest import RestApi
from tests.fakes.discord_state import DiscordState

log = logging.getLogger(__name__)

T = TypeVar("T")
# Interaction type 3 and the button component type.
COMPONENT, BUTTON = 3, 2
AttachmentSpec = tuple[str, bytes, str | None]


class FakeDiscord:
    """Loopback Discord server: REST under /api/v10, gateway at /gateway, files at /attachments."""

    def __init__(
        self,
        *,
        token: str = "fake-bot-token",
        heartbeat_interval_ms: int = 41_250,
        ack_deadline: float = 3.0,
        upload_limit: int = 10 * 1024 * 1024,
        privileged_intents: int = PRIVILEGED_INTENTS,
        shards: int = 1,
    ) -> None:
        if shards < 1:
            raise ValueError("shards must be at least 1")
        self.token = token
        self.state = DiscordState()
        self.notifier = Notifier()
        self.gateway = Gateway(
            self.state,
            self.notifier,
            token=token,
            heartbeat_interval_ms=heartbeat_interval_ms,
            privileged_intents=privileged_intents,
            shard_count=shards,
        )
        self.http = HttpLayer(self.notifier, token=token)
        self.rest = RestApi(self.state, self.gateway, self.notifier, upload_limit=upload_limit)
        self.interaction_api = InteractionApi(self.rest, ack_deadline=ack_deadline)
        self._runner: web.AppRunner | None = None
        self.port = 0

    # -- lifecycle

    async def start(self) -> None:
        """Bind 127.0.0.1 on a free port and serve."""
        app = web.Application(middlewares=[self.http.middleware], client_max_size=64 * 1024**2)
        self.rest.add_routes(app)
        self.interaction_api.add_routes(app)
        app.router.add_get("/gateway", self.gateway.handle)
        app.router.add_get("/resume-gateway", self.gateway.handle)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self._runner = runner
        self.port = int(runner.addresses[0][1])
        self.state.base_url = self.url
        self.gateway.base_ws_url = f"ws://127.0.0.1:{self.port}"
        log.debug("fake Discord listening on %s", self.url)

    async def close(self) -> None:
        """Close sockets and stop serving."""
        if self._runner is None:
            return
        await self.gateway.close_all()
        await self._runner.cleanup()
        self._runner = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def url(self) -> str:
        """http://127.0.0.1:PORT."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        """The value for discord.http.Route.BASE."""
        return f"{self.url}/api/v10"

    @property
    def gateway_url(self) -> str:
        """The value for DiscordWebSocket.DEFAULT_GATEWAY."""
        return f"ws://127.0.0.1:{self.port}/gateway"

    # -- the world

    @property
    def application_id(self) -> int:
        """Application id (equal to the bot user's id)."""
        return self.state.application_id

    @property
    def guild_id(self) -> int:
        """The one guild."""
        return self.state.guild_id

    @property
    def channel_id(self) -> int:
        """Text channel "general"."""
        return self.state.channel_id

    @property
    def other_channel_id(self) -> int:
        """Text channel "random"."""
        return self.state.other_channel_id

    @property
    def user(self) -> FakeUser:
        """A member without special roles."""
        return self.state.user

    @property
    def admin_user(self) -> FakeUser:
        """A member with the Admin role (administrator)."""
        return self.state.admin_user

    @property
    def admin_role_id(self) -> int:
        """The Admin role."""
        return self.state.admin_role.id

    @property
    def bot_user(self) -> FakeUser:
        """The bot's own user."""
        return self.state.bot_user

    def add_user(
        self, username: str, *, admin: bool = False, guild_id: int | None = None
    ) -> FakeUser:
        """Add a guild member (GUILD_MEMBER_ADD goes to sessions with the members intent)."""
        user = FakeUser(self.state.ids.next(), username)
        self.add_member(user, admin=admin, guild_id=guild_id)
        return user

    def add_member(
        self, user: FakeUser, *, admin: bool = False, guild_id: int | None = None
    ) -> None:
        """Make an existing user a member of a guild (the first by default)."""
        guild = self.state.guild(guild_id)
        self.state.add_member(user, [guild.admin_role.id] if admin else [], guild_id=guild.id)
        data = {**self.state.member_json(user.id, guild_id=guild.id), "guild_id": str(guild.id)}
        self.gateway.dispatch("GUILD_MEMBER_ADD", data, intent=GUILD_MEMBERS)

    @property
    def shard_count(self) -> int:
        """The shard count GET /gateway/bot recommends."""
        return self.gateway.shard_count

    def shard_of(self, guild_id: int) -> int:
        """The shard (of `shard_count`) a guild's events are routed to."""
        return shard_of(guild_id, self.shard_count)

    def add_guild(
        self, name: str, *, owner: FakeUser | None = None, shard: int | None = None
    ) -> FakeGuild:
        """Another guild the bot is in, with a "general" channel and `owner` (a new admin user
        by default) as its owner, on shard `shard` of `shard_count` if given; announced with
        GUILD_CREATE to connected sessions of its shard."""
        state = self.state
        if shard is not None and not 0 <= shard < self.shard_count:
            raise ValueError(f"shard {shard} is not below the shard count {self.shard_count}")
        guild = state.add_guild(name, shard=None if shard is None else (shard, self.shard_count))
        owner = owner or FakeUser(state.ids.next(), f"{name.lower().replace(' ', '-')}-admin")
        state.add_member(owner, [guild.admin_role.id], guild_id=guild.id)
        guild.owner_id = owner.id
        state.add_channel("general", guild_id=guild.id)
        if self.gateway.sessions:
            self.gateway.dispatch("GUILD_CREATE", state.guild_create_json(guild.id))
        return guild

    def add_channel(self, name: str, *, guild_id: int | None = None) -> FakeChannel:
        """Another text channel (CHANNEL_CREATE)."""
        channel = self.state.add_channel(name, guild_id=guild_id)
        self.gateway.dispatch("CHANNEL_CREATE", self.state.channel_json(channel))
        return channel

    def guild_channels(self, guild_id: int) -> list[FakeChannel]:
        """The text channels of a guild, in creation order."""
        return [
            c for c in self.state.channels.values() if c.guild_id == guild_id and not c.is_thread
        ]

    def remove_guild(self, guild_id: int) -> None:
        """The bot is removed from (kicked out of) a guild: GUILD_DELETE without `unavailable`."""
        self.state.guild(guild_id).joined = False
        self.gateway.dispatch("GUILD_DELETE", {"id": str(guild_id)})

    def rejoin_guild(self, guild_id: int) -> None:
        """The bot is invited back: GUILD_CREATE."""
        self.state.guild(guild_id).joined = True
        self.gateway.dispatch("GUILD_CREATE", self.state.guild_create_json(guild_id))

    def rename_guild(self, guild_id: int, name: str) -> None:
        """The guild is renamed: GUILD_UPDATE."""
        guild = self.state.guild(guild_id)
        guild.name = name
        data = self.state.guild_create_json(guild_id)
        for key in ("members", "channels", "threads", "voice_states", "presences"):
            data.pop(key, None)
        self.gateway.dispatch("GUILD_UPDATE", data)

    def dm_channel(self, user: FakeUser) -> FakeChannel:
        """The DM channel between the bot and `user`."""
        return self.state.dm_channel(user)

    def channel(self, channel_id: int) -> FakeChannel:
        """A channel, thread or DM by id (KeyError if unknown)."""
        return self.state.channels[channel_id]

    # -- observations

    @property
    def calls(self) -> list[RestCall]:
        """Every REST call, in order (failed ones too, with their status)."""
        return self.http.calls

    @property
    def errors(self) -> list[BaseException]:
        """Exceptions raised inside the fake's handlers (bugs in the fake; answered 400)."""
        return self.http.errors

    def calls_to(self, method: str, path_regex: str) -> list[RestCall]:
        """REST calls with this method whose path (without /api/v10) matches the regex."""
        pattern = re.compile(path_regex)
        return [c for c in self.calls if c.method == method and pattern.search(c.path)]

    def messages_in(self, channel_id: int) -> list[FakeMessage]:
        """Visible (non-deleted, non-ephemeral) messages of a channel or thread, oldest first."""
        return self.state.visible_messages(channel_id)

    def message(self, message_id: int) -> FakeMessage | None:
        """Any message by id (including deleted and ephemeral ones)."""
        return self.state.messages.get(message_id)

    @property
    def threads(self) -> list[FakeChannel]:
        """Threads, in creation order."""
        return self.state.threads()

    @property
    def interactions(self) -> list[FakeInteraction]:
        """Injected interactions, in order."""
        return list(self.state.interactions.values())

    def commands(self, guild_id: int | None = None) -> list[JSON]:
        """Registered application commands: global, or of the guild."""
        if guild_id is None:
            return self.state.global_commands
        return self.state.guild_commands.get(guild_id, [])

    @property
    def sessions(self) -> list[GatewaySession]:
        """Gateway sessions (one per IDENTIFY); `.events` lists (seq, name, data) dispatched."""
        return self.gateway.sessions

    def sessions_of_shard(self, shard_id: int) -> list[GatewaySession]:
        """Sessions that identified as `shard_id` (unsharded sessions count as shard 0)."""
        return [s for s in self.sessions if (s.shard or (0, 1))[0] == shard_id]

    def delivered(self, event: str, key: Callable[[JSON], bool]) -> list[GatewaySession]:
        """Sessions that were sent an `event` whose data matches `key`, in identify order."""
        return [s for s in self.sessions if any(e == event and key(d) for _, e, d in s.events)]

    @property
    def resumes(self) -> list[ResumeRecord]:
        """Successful RESUMEs."""
        return self.gateway.resumes

    def connected(self) -> int:
        """Number of sockets attached to a session (0 while a client is reconnecting)."""
        return len(self.gateway.attached())

    # -- waiting

    def watch(self, task: asyncio.Task[Any]) -> None:
        """Make `wait_for` fail at once if this (client) task ends."""
        self.notifier.watch(task)

    def unwatch(self, task: asyncio.Task[Any]) -> None:
        """Forget a client task that was stopped on purpose."""
        self.notifier.unwatch(task)

    async def wait_for(self, predicate: Callable[[], T | None], timeout: float = 5.0) -> T:
        """Wait until `predicate()` is truthy (re-checked on every state change); return it."""
        return await self.notifier.wait_for(predicate, timeout, self._describe)

    async def wait_for_reply(
        self, interaction: FakeInteraction, timeout: float = 5.0
    ) -> FakeMessage:
        """Wait for the first non-"thinking" message answering `interaction`."""
        return await self.wait_for(
            lambda: next((m for m in interaction.messages() if not m.loading), None), timeout
        )

    def _describe(self) -> str:
        recent = ", ".join(f"{c.method} {c.path} -> {c.status}" for c in self.calls[-8:])
        return f"last REST calls: [{recent}]; sockets attached: {self.connected()}"

    # -- failures, rate limits, connection

    def fail_next(
        self,
        method: str,
        path_regex: str,
        status: int = 429,
        retry_after: float = 0.3,
        *,
        times: int = 1,
        code: int = 0,
        message: str = "Injected failure",
        is_global: bool = False,
    ) -> FailRule:
        """Answer the next `times` matching calls with `status` (429: as Discord rate-limits)."""
        rule = FailRule(
            method.upper(),
            re.compile(path_regex),
            status,
            retry_after,
            times,
            code,
            message,
            is_global,
        )
        self.http.fail_rules.append(rule)
        return rule

    def enable_rate_limit(self, limit: int = 5, per: float = 5.0) -> None:
        """Per-channel bucket for message creates and edits: `limit` per `per` seconds."""
        self.http.rate_limit = ChannelRateLimit(limit, per)

    def disable_rate_limit(self) -> None:
        """Back to no rate-limit headers at all."""
        self.http.rate_limit = None

    async def force_reconnect(self) -> int:
        """Send op 7 RECONNECT; the client resumes. Returns the number of sockets told."""
        return await self.gateway.force_reconnect()

    async def disconnect(self, code: int | None = None) -> int:
        """Drop the sockets: abruptly (no close frame) or with close `code`; the client resumes."""
        return await self.gateway.disconnect(code)

    async def start_outage(self) -> int:
        """Drop the sockets abruptly and refuse every connection until `end_outage`."""
        self.gateway.refusing = True
        return await self.gateway.disconnect(None)

    def end_outage(self) -> None:
        """Accept connections again (the client's next attempt resumes)."""
        self.gateway.refusing = False

    @property
    def refused_connections(self) -> int:
        """How many gateway connection attempts an outage refused."""
        return self.gateway.refused

    # -- injection

    async def inject_message(
        self,
        content: str = "",
        *,
        author: FakeUser | None = None,
        channel_id: int | None = None,
        mention_bot: bool = True,
        reply_to: FakeMessage | int | None = None,
        reply_ping: bool = True,
        attachments: Iterable[AttachmentSpec] = (),
        embeds: Sequence[JSON] = (),
    ) -> FakeMessage:
        """A user posts a message; dispatched as MESSAGE_CREATE (queued if disconnected).

        `mention_bot` prefixes the bot's mention unless the content already has it;
        `attachments` are (filename, bytes, content_type) served at the fake's own URL.
        """
        state = self.state
        author = author or state.user
        channel = self._sendable_channel(channel_id, author)
        if mention_bot and state.bot_user.mention not in content:
            content = f"{state.bot_user.mention} {content}".rstrip()
        message = FakeMessage(
            id=state.ids.next(),
            channel_id=channel.id,
            guild_id=channel.guild_id,
            author=author,
            content=content,
            embeds=list(embeds),
        )
        message.attachments = [
            state.add_attachment(channel.id, name, data, ctype) for name, data, ctype in attachments
        ]
        if reply_to is not None:
            target = reply_to if isinstance(reply_to, FakeMessage) else state.messages[reply_to]
            message.type = REPLY
            message.referenced = target
            message.reference = {
                "type": 0,
                "message_id": str(target.id),
                "channel_id": str(target.channel_id),
                **({"guild_id": str(target.guild_id)} if target.guild_id is not None else {}),
            }
            if not reply_ping:
                message.allowed_mentions = {"parse": ["users", "roles", "everyone"]}
        state.add_message(message)
        self.gateway.dispatch_message("MESSAGE_CREATE", message)
        return message

    async def inject_typing(
        self, *, author: FakeUser | None = None, channel_id: int | None = None
    ) -> JSON:
        """A user starts typing; dispatched as TYPING_START to sessions with the typing intent.

        As Discord sends it: user_id, channel_id, timestamp (Unix seconds), and in a server
        guild_id and the member (with its user).
        """
        state = self.state
        author = author or state.user
        channel = self._sendable_channel(channel_id, author)
        data: JSON = {
            "user_id": str(author.id),
            "channel_id": str(channel.id),
            "timestamp": int(time.time()),
        }
        intent = DIRECT_MESSAGE_TYPING
        if channel.guild_id is not None:
            intent = GUILD_MESSAGE_TYPING
            data["guild_id"] = str(channel.guild_id)
            data["member"] = state.member_json(author.id, guild_id=channel.guild_id)
        self.gateway.dispatch("TYPING_START", data, intent=intent)
        return data

    async def inject_edit(self, message: FakeMessage, content: str) -> FakeMessage:
        """The author edits their message; dispatched as MESSAGE_UPDATE."""
        message.content = content
        message.edited_timestamp = iso_now()
        message.versions.append(content)
        self.gateway.dispatch_message("MESSAGE_UPDATE", message)
        return message

    def _sendable_channel(self, channel_id: int | None, author: FakeUser) -> FakeChannel:
        channel = self.state.channels.get(channel_id or self.state.channel_id)
        if channel is None:
            raise ValueError(f"unknown channel {channel_id}")
        if (
            channel.guild_id is not None
            and author.id not in self.state.guild(channel.guild_id).members
        ):
            raise ValueError(f"{author.username} is not a member of the guild")
        recipient = channel.recipient
        if recipient is not None and author.id not in (recipient.id, self.state.bot_user.id):
            raise ValueError(f"{author.username} is not in this DM")
        return channel

    async def inject_interaction(
        self,
        name: str,
        options: Mapping[str, OptionValue] | Sequence[JSON] | None = None,
        *,
        user: FakeUser | None = None,
        channel_id: int | None = None,
        autocomplete: str | None = None,
        locale: str = "en-US",
        require_registered: bool = True,
    ) -> FakeInteraction:
        """A user runs slash command `name` ("note add" for subcommands); INTERACTION_CREATE.

        `options` maps option names to Python values (typed from the registered command:
        str, int, float, bool, FakeUser, FakeChannel, role id, or (filename, bytes, type)
        for attachments), or is a raw list of Discord option objects. `autocomplete="opt"`
        sends an autocomplete interaction (type 4) focused on that option. Unregistered
        commands are refused unless `require_registered=False` (Discord never sends them).
        """
        state = self.state
        user = user or state.user
        channel = self._sendable_channel(channel_id, user)
        path = name.split()
        guild_id = channel.guild_id
        command = state.find_command(path[0], guild_id)
        if command is None and require_registered:
            raise ValueError(f"command {path[0]!r} is not registered (did the bot sync its tree?)")
        resolved: JSON = {}
        builder = OptionBuilder(state, resolved, channel, autocomplete)
        built = builder.build(command, path[1:], {} if options is None else options)
        data: JSON = {
            "id": command["id"] if command else str(state.ids.next()),
            "name": path[0],
            "type": 1,
            "options": built,
        }
        if command is not None and "guild_id" in command:
            data["guild_id"] = command["guild_id"]
        if resolved:
            data["resolved"] = resolved
        kind = 4 if autocomplete else 2
        ix = self._interaction(kind, " ".join(path), data, user, channel, locale=locale)
        self.gateway.dispatch("INTERACTION_CREATE", ix.payload)
        return ix

    async def press(
        self,
        message: FakeMessage,
        custom_id: str,
        *,
        user: FakeUser | None = None,
        component_type: int = BUTTON,
        locale: str = "en-US",
    ) -> FakeInteraction:
        """A user presses the button `custom_id` on one of the bot's messages; dispatched as
        INTERACTION_CREATE type 3 (MESSAGE_COMPONENT) with the message, as Discord sends it.

        Discord offers only what the message shows: a component it no longer carries (the
        bot removed or disabled it) cannot be pressed (ValueError).
        """
        user = user or self.state.user
        channel = self._sendable_channel(message.channel_id, user)
        if message.deleted or custom_id not in message.custom_ids():
            raise ValueError(f"message {message.id} shows no component {custom_id!r}")
        data: JSON = {"custom_id": custom_id, "component_type": component_type}
        ix = self._interaction(COMPONENT, custom_id, data, user, channel, locale=locale)
        ix.custom_id, ix.message_id = custom_id, message.id
        ix.payload["message"] = self.state.message_json(message)
        self.gateway.dispatch("INTERACTION_CREATE", ix.payload)
        return ix

    def _interaction(
        self,
        kind: int,
        name: str,
        data: JSON,
        user: FakeUser,
        channel: FakeChannel,
        *,
        locale: str,
    ) -> FakeInteraction:
        """A new interaction of `kind` by `user` in `channel`, with its gateway payload."""
        state = self.state
        guild_id = channel.guild_id
        iid = state.ids.next()
        token = f"ix-{iid}-{secrets.token_hex(8)}"
        payload: JSON = {
            "id": str(iid),
            "application_id": str(state.application_id),
            "type": kind,
            "token": token,
            "version": 1,
            "data": data,
            "channel_id": str(channel.id),
            "channel": {
                **state.channel_json(channel),
                "permissions": str(state.permissions_of(user.id, guild_id)),
            },
            "locale": locale,
            "app_permissions": str(state.permissions_of(state.bot_user.id, guild_id)),
            "entitlements": [],
            "attachment_size_limit": self.rest.upload_limit,
        }
        if guild_id is not None:
            member = state.member_json(user.id, guild_id=guild_id)
            member["permissions"] = str(state.permissions_of(user.id, guild_id))
            payload.update(
                guild_id=str(guild_id),
                guild_locale="en-US",
                guild={"id": str(guild_id), "locale": "en-US", "features": []},
                member=member,
                authorizing_integration_owners={"0": str(guild_id)},
                context=0,
            )
        else:
            payload.update(
                user=user.to_json(),
                authorizing_integration_owners={"0": str(state.guild_id)},
                context=1,
            )
        loop = asyncio.get_running_loop()
        ix = FakeInteraction(
            iid, token, kind, name, user, channel.id, guild_id, payload, loop.time()
        )
        state.interactions[iid] = ix
        return ix


__all__ = [
    "FailRule",
    "FakeAttachment",
    "FakeChannel",
    "FakeDiscord",
    "FakeGuild",
    "FakeInteraction",
    "FakeMessage",
    "FakeUser",
    "RestCall",
    "ResumeRecord",
]
