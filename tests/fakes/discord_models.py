"""Values of the loopback Discord: constants, ids, users, channels, messages, interactions,
recorded calls, and the change notifier that `wait_for` sleeps on.

No discord.py import here: the fake is the server side and must not lean on the client
library it is testing.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

JSON = dict[str, Any]
T = TypeVar("T")

DISCORD_EPOCH_MS = 1_420_070_400_000

# Channel types.
GUILD_TEXT = 0
DM = 1
PUBLIC_THREAD = 11
PRIVATE_THREAD = 12
THREAD_TYPES = frozenset({PUBLIC_THREAD, PRIVATE_THREAD})

# Message types and flags.
DEFAULT_MESSAGE = 0
REPLY = 19
CHAT_INPUT_COMMAND = 20
SUPPRESS_EMBEDS = 1 << 2
EPHEMERAL = 1 << 6
LOADING = 1 << 7
SUPPRESS_NOTIFICATIONS = 1 << 12
IS_VOICE_MESSAGE = 1 << 13
IS_COMPONENTS_V2 = 1 << 15
SENDABLE_FLAGS = SUPPRESS_EMBEDS | SUPPRESS_NOTIFICATIONS | IS_VOICE_MESSAGE | IS_COMPONENTS_V2

# Gateway intents.
GUILDS = 1 << 0
GUILD_MEMBERS = 1 << 1
GUILD_PRESENCES = 1 << 8
GUILD_MESSAGES = 1 << 9
GUILD_MESSAGE_TYPING = 1 << 11
DIRECT_MESSAGES = 1 << 12
DIRECT_MESSAGE_TYPING = 1 << 14
MESSAGE_CONTENT = 1 << 15
PRIVILEGED_INTENTS = GUILD_MEMBERS | GUILD_PRESENCES | MESSAGE_CONTENT

# Permissions.
ADMINISTRATOR = 1 << 3
MANAGE_MESSAGES = 1 << 13
MANAGE_THREADS = 1 << 34
EVERYONE_PERMISSIONS = (
    (1 << 6)  # add reactions
    | (1 << 10)  # view channel
    | (1 << 11)  # send messages
    | (1 << 14)  # embed links
    | (1 << 15)  # attach files
    | (1 << 16)  # read message history
    | (1 << 31)  # use application commands
    | (1 << 35)  # create public threads
    | (1 << 38)  # send messages in threads
)
ALL_PERMISSIONS = (1 << 51) - 1

USER_MENTION = re.compile(r"<@!?(\d+)>")
ROLE_MENTION = re.compile(r"<@&(\d+)>")


def iso_now() -> str:
    """Current UTC time in Discord's ISO 8601 form."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def shard_of(guild_id: int, shard_count: int) -> int:
    """The gateway shard Discord routes a guild's events to."""
    return (guild_id >> 22) % shard_count


class Snowflakes:
    """Monotonic snowflake ids whose timestamps are the current time (as Discord's are)."""

    def __init__(self) -> None:
        self._last = 0

    def next(self) -> int:
        """A new id, larger than every id given before."""
        now = (int(time.time() * 1000) - DISCORD_EPOCH_MS) << 22
        self._last = max(self._last + 1, now)
        return self._last

    def next_on_shard(self, shard_id: int, shard_count: int) -> int:
        """A new id in a later millisecond than every id before, whose guild would be routed
        to `shard_id` of `shard_count` (ids minted in one millisecond all share a shard)."""
        stamp = max(self._last >> 22, int(time.time() * 1000) - DISCORD_EPOCH_MS) + 1
        stamp += (shard_id - stamp) % shard_count
        self._last = stamp << 22
        return self._last

    def next_spread(self) -> int:
        """A new id in a later millisecond than every id before (guild ids made this way spread
        over shards round-robin, as real guild ids, made at different times, do)."""
        stamp = max(self._last >> 22, int(time.time() * 1000) - DISCORD_EPOCH_MS) + 1
        self._last = stamp << 22
        return self._last


class Notifier:
    """Wakes waiters whenever the fake's state changes (an event swapped on each change)."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self._tasks: list[asyncio.Task[Any]] = []

    def changed(self) -> None:
        """Signal a change; every current waiter re-checks its predicate."""
        self._event.set()
        self._event = asyncio.Event()

    def watch(self, task: asyncio.Task[Any]) -> None:
        """Fail waits fast if `task` (a client under test) ends while they wait."""
        self._tasks.append(task)
        task.add_done_callback(lambda _t: self.changed())

    def unwatch(self, task: asyncio.Task[Any]) -> None:
        """Stop watching `task` (its client was stopped on purpose)."""
        if task in self._tasks:
            self._tasks.remove(task)

    def _check_tasks(self) -> None:
        for task in self._tasks:
            if task.done():
                exc = None if task.cancelled() else task.exception()
                raise RuntimeError(f"watched client task ended while waiting: {exc!r}") from exc

    async def wait_for(
        self, predicate: Callable[[], T | None], timeout: float, describe: Callable[[], str]
    ) -> T:
        """Wait until `predicate()` is truthy and return its value; TimeoutError after `timeout`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            value = predicate()
            if value:
                return value
            self._check_tasks()
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError(f"condition not met within {timeout} s; {describe()}")
            event = self._event
            try:
                await asyncio.wait_for(event.wait(), remaining)
            except TimeoutError:
                continue


@dataclass
class FakeUser:
    """A Discord user (the bot user has bot=True)."""

    id: int
    username: str
    bot: bool = False
    global_name: str | None = None

    @property
    def mention(self) -> str:
        """The `<@id>` mention text."""
        return f"<@{self.id}>"

    def to_json(self) -> JSON:
        """The user object."""
        return {
            "id": str(self.id),
            "username": self.username,
            "discriminator": "0",
            "global_name": self.global_name or self.username,
            "avatar": None,
            "bot": self.bot,
            "public_flags": 0,
        }


@dataclass
class FakeRole:
    """A guild role."""

    id: int
    name: str
    permissions: int
    position: int = 0
    managed: bool = False

    def to_json(self) -> JSON:
        """The role object."""
        return {
            "id": str(self.id),
            "name": self.name,
            "color": 0,
            "hoist": False,
            "icon": None,
            "unicode_emoji": None,
            "position": self.position,
            "permissions": str(self.permissions),
            "managed": self.managed,
            "mentionable": False,
            "flags": 0,
        }


@dataclass
class FakeMember:
    """A user's membership in the guild."""

    user: FakeUser
    role_ids: list[int]
    joined_at: str = field(default_factory=iso_now)


@dataclass
class FakeGuild:
    """A guild: its roles (the @everyone role has the guild's id), members and owner."""

    id: int
    name: str
    admin_role: FakeRole
    bot_role: FakeRole
    roles: dict[int, FakeRole] = field(default_factory=dict)
    members: dict[int, FakeMember] = field(default_factory=dict)
    owner_id: int = 0
    joined: bool = True


@dataclass
class FakeChannel:
    """A text channel, thread or DM channel."""

    id: int
    type: int
    name: str
    guild_id: int | None
    parent_id: int | None = None
    owner_id: int | None = None
    position: int = 0
    recipient: FakeUser | None = None
    archived: bool = False
    locked: bool = False
    auto_archive_duration: int = 1440
    created_at: str = field(default_factory=iso_now)

    @property
    def is_thread(self) -> bool:
        """True for public and private threads."""
        return self.type in THREAD_TYPES


@dataclass
class FakeAttachment:
    """A file attached to a message; its bytes are served by the fake at `url`."""

    id: int
    filename: str
    content_type: str | None
    data: bytes
    url: str
    description: str | None = None

    def to_json(self) -> JSON:
        """The attachment object."""
        out: JSON = {
            "id": str(self.id),
            "filename": self.filename,
            "size": len(self.data),
            "url": self.url,
            "proxy_url": self.url,
        }
        if self.content_type:
            out["content_type"] = self.content_type
        if self.description:
            out["description"] = self.description
        return out


@dataclass(frozen=True)
class Pings:
    """Who a message actually notifies, given its content and allowed_mentions."""

    users: frozenset[int] = frozenset()
    roles: frozenset[int] = frozenset()
    everyone: bool = False

    def __bool__(self) -> bool:
        return bool(self.users or self.roles or self.everyone)


@dataclass
class FakeMessage:
    """A message as it is now (after edits); `versions` holds every content it had."""

    id: int
    channel_id: int
    guild_id: int | None
    author: FakeUser
    content: str
    type: int = DEFAULT_MESSAGE
    attachments: list[FakeAttachment] = field(default_factory=list)
    embeds: list[JSON] = field(default_factory=list)
    components: list[JSON] = field(default_factory=list)
    flags: int = 0
    allowed_mentions: JSON | None = None
    reference: JSON | None = None
    referenced: FakeMessage | None = None
    nonce: str | int | None = None
    webhook_id: int | None = None
    interaction_id: int | None = None
    thread_id: int | None = None
    timestamp: str = field(default_factory=iso_now)
    edited_timestamp: str | None = None
    deleted: bool = False
    versions: list[str] = field(default_factory=list)
    # Every components list the message had (posted, then each edit that set them).
    component_versions: list[list[JSON]] = field(default_factory=list)

    def custom_ids(self) -> list[str]:
        """The custom_ids of the message's (enabled) buttons and selects, in order."""
        found: list[str] = []
        pending = list(self.components)
        while pending:
            item = pending.pop(0)
            if item.get("custom_id") and not item.get("disabled"):
                found.append(str(item["custom_id"]))
            pending[:0] = list(item.get("components") or [])
        return found

    @property
    def ephemeral(self) -> bool:
        """Only the invoking user sees it (interaction responses)."""
        return bool(self.flags & EPHEMERAL)

    @property
    def loading(self) -> bool:
        """A deferred interaction's "thinking…" placeholder."""
        return bool(self.flags & LOADING)

    @property
    def suppress_embeds(self) -> bool:
        """Link previews are suppressed."""
        return bool(self.flags & SUPPRESS_EMBEDS)

    def mentioned_user_ids(self) -> list[int]:
        """User ids written as mentions in the content, in order, without repeats."""
        return list(dict.fromkeys(int(m) for m in USER_MENTION.findall(self.content)))

    def pings(self) -> Pings:
        """Who Discord would notify for this message (allowed_mentions semantics)."""
        users = set(self.mentioned_user_ids())
        roles = {int(r) for r in ROLE_MENTION.findall(self.content)}
        everyone = "@everyone" in self.content or "@here" in self.content
        am = self.allowed_mentions
        replied = self.referenced.author.id if self.referenced is not None else None
        if am is None:
            if replied is not None:
                users.add(replied)
            return Pings(frozenset(users), frozenset(roles), everyone)
        parse = set(am.get("parse") or [])
        if "users" not in parse:
            users &= {int(u) for u in am.get("users") or []}
        if "roles" not in parse:
            roles &= {int(r) for r in am.get("roles") or []}
        if replied is not None and am.get("replied_user"):
            users.add(replied)
        return Pings(frozenset(users), frozenset(roles), everyone and "everyone" in parse)


@dataclass
class UploadedFile:
    """A file part of a multipart REST request."""

    field: str
    filename: str | None
    content_type: str | None
    data: bytes


@dataclass
class RestCall:
    """One REST request the client made (path without the /api/v10 prefix)."""

    method: str
    path: str
    query: dict[str, str]
    json: Any
    files: list[UploadedFile]
    headers: dict[str, str]
    at: float
    status: int = 0
    response_headers: dict[str, str] = field(default_factory=dict)


@dataclass
class FakeInteraction:
    """An injected interaction and everything the bot answered to it."""

    id: int
    token: str
    type: int
    name: str
    user: FakeUser
    channel_id: int
    guild_id: int | None
    payload: JSON
    created_at: float
    callback_type: int | None = None
    original: FakeMessage | None = None
    followups: list[FakeMessage] = field(default_factory=list)
    choices: list[JSON] | None = None
    modal: JSON | None = None
    # A component interaction (type 3): the pressed component and the message it is on.
    custom_id: str | None = None
    message_id: int | None = None
    # The `data` of the bot's interaction callback (an update's content and components).
    callback_data: JSON | None = None

    @property
    def acknowledged(self) -> bool:
        """The bot answered the callback (any type)."""
        return self.callback_type is not None

    def messages(self) -> list[FakeMessage]:
        """Original response (if any) then followups: what the user saw, in order."""
        first = [self.original] if self.original is not None else []
        return [m for m in first + self.followups if not m.deleted]

    def texts(self) -> list[str]:
        """The content of `messages()`."""
        return [m.content for m in self.messages()]


@dataclass
class ResumeRecord:
    """A successful RESUME: where the client resumed from and how much was replayed."""

    session_id: str
    client_seq: int
    replayed: int
    path: str
