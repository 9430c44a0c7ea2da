"""Conversations: a mention opens a thread, every message in the bot's threads/DMs is a turn."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Final, Literal

import discord
from discord.ext import commands

from bot.bot import BotDeps
from bot.chat.attachments import PreparedFiles
from bot.chat.bursts import Burst, BurstPart, Bursts, Typing
from bot.chat.engine import TurnRequest
from bot.chat.interrupted import by_language, close_interrupted, find_interrupted
from bot.chat.member_turn import speaking_member
from bot.exts._common import deps_of, space_of_message
from bot.exts._text import readable_mentions, strip_bot_mention, thread_name
from bot.exts.chat._approval import ButtonApprover
from bot.exts.chat._attachments import AttachmentReader
from bot.exts.chat._flood import UserTurns
from bot.exts.chat._reply import ReplyRenderer
from bot.exts.chat._streaming import ChannelWindows, StreamCadence, read_pace
from bot.memory.member_memory import request_fact
from bot.prompts.ui_text import UiText, ui_text
from bot.store.repos.sessions import Session
from bot.utils.access import AccessPolicy, Cooldown, Requester
from bot.utils.locks import KeyedLocks

log = logging.getLogger(__name__)

THREAD_ARCHIVE_MINUTES: Final = 1440
_CHAT_TYPES = (discord.MessageType.default, discord.MessageType.reply)

RouteKind = Literal["session", "dm", "thread", "channel"]


@dataclass(frozen=True)
class Route:
    """Where a message's conversation lives.

    session: a thread/DM with a current session; dm/thread: no session yet; channel: a mention
    in a text channel, answered in a new thread whose id will be the message's id.
    """

    kind: RouteKind
    channel_id: int
    parent_id: int | None = None


def _addressed(message: discord.Message, me: discord.ClientUser) -> bool:
    """The message mentions the bot (user or its managed role) or replies to the bot."""
    if any(user.id == me.id for user in message.mentions):
        return True
    guild = message.guild
    if (
        guild is not None
        and guild.self_role is not None
        and guild.self_role in message.role_mentions
    ):
        return True
    ref = message.reference
    return (
        ref is not None
        and isinstance(ref.resolved, discord.Message)
        and ref.resolved.author.id == me.id
    )


def _requester(message: discord.Message, route: Route) -> Requester:
    author = message.author
    roles = (
        frozenset(r.id for r in author.roles) if isinstance(author, discord.Member) else frozenset()
    )
    channels = (
        (message.channel.id,) if route.parent_id is None else (message.channel.id, route.parent_id)
    )
    return Requester(author.id, roles, channels, is_dm=message.guild is None)


@dataclass(frozen=True)
class _Place:
    """Where a turn's answer goes: its channel (or the thread opened for it) and that
    channel's parent; `new_thread` when the thread was opened just now."""

    channel: discord.abc.Messageable
    channel_id: int
    parent_id: int | None
    new_thread: bool = False


def _turn_text(message: discord.Message, me: discord.ClientUser) -> str:
    """The message's text as the model reads it: the bot's mention gone, others' by name."""
    role = message.guild.self_role if message.guild is not None else None
    names = {user.id: user.display_name for user in message.mentions}
    return readable_mentions(
        strip_bot_mention(message.content, me.id, role.id if role else None), names
    )


def _turn_request(
    message: discord.Message,
    text: str,
    *,
    title: str,
    session: Session,
    place: _Place,
    files: PreparedFiles,
    pace: float,
    burst: Burst | None,
) -> TurnRequest:
    """The engine's request for a Discord message (with its files) answered at `place`."""
    return TurnRequest(
        text=files.text_for_model(text),
        space_id=session.space_id,
        session_id=session.id,
        source="discord",
        title=title,
        author_id=str(message.author.id),
        author_name=message.author.display_name,
        discord_message_id=message.id,
        discord_channel_id=place.channel_id,
        discord_guild_id=message.guild.id if message.guild else None,
        images=tuple(files.images),
        read_pace=pace,
        session=session,
        burst=burst,
        approver=ButtonApprover(place.channel, message.author.id),
    )


@dataclass(frozen=True)
class _Admitted:
    """A message to answer as a turn of its own: where, in which language, and its burst."""

    route: Route
    ui: UiText
    burst: Burst | None


class Chat(commands.Cog):
    """Turns Discord messages into engine turns and streams the answers back."""

    def __init__(self, bot: commands.Bot, deps: BotDeps) -> None:
        self.bot = bot
        self.deps = deps
        self.cooldown = Cooldown(clock=deps.clock)
        self.user_turns = UserTurns()
        self.windows = ChannelWindows(clock=deps.clock)
        self.locks = KeyedLocks()
        self.arrivals = KeyedLocks()
        self.files = AttachmentReader(deps.services.attachment_intake)
        self.typing = Typing(clock=deps.clock)
        self.bursts = Bursts()
        self.started = datetime.now(UTC)
        self._caught_up = False

    @commands.Cog.listener()
    async def on_ready(self) -> None:
        """Once connected: tell users whose turn a restart cut off (bot.chat.interrupted)."""
        if self._caught_up:
            return
        self._caught_up = True
        services = self.deps.services
        settings = services.settings()
        turns = await find_interrupted(
            services.repos.messages, settings.shards.owns_space, self.started
        )

        async def post(channel_id: int, text: str) -> None:
            await self.bot.get_partial_messageable(channel_id).send(text, suppress_embeds=True)

        groups = await by_language(turns, services.repos.spaces, settings.language)
        for language, group in groups.items():
            notice = ui_text(language).turn_interrupted
            await close_interrupted(group, services.repos.messages, notice, post)

    @commands.Cog.listener()
    async def on_message(self, message: discord.Message) -> None:
        """Decide whether the message is a turn; run it."""
        me = self.bot.user
        if me is None or message.author.bot or message.webhook_id is not None:
            return
        if message.type not in _CHAT_TYPES or self.deps.turns.closing:
            return
        # Before any await, so that typing events and messages are seen in the gateway's order.
        self.typing.wrote(message.channel.id, message.author.id)
        # A channel's messages reach the turn lock in the order Discord sent them: the checks
        # below read the database, and on PostgreSQL (pooled connections) a later message's
        # reads may finish first. The turn lock is queued for with no await after this block.
        async with self.arrivals.hold(message.channel.id):
            self.bursts.spoke(message.channel.id, message.author.id)
            admitted = await self._admit(message, me)
        if admitted is None:
            return
        with self.user_turns.hold(message.author.id):
            async with self.deps.turns.track(), self.locks.hold(admitted.route.channel_id):
                await self._run_turns(message, me, admitted)

    @commands.Cog.listener()
    async def on_raw_typing(self, payload: discord.RawTypingEvent) -> None:
        """A member is typing: their message waiting in that channel waits for the next one."""
        me = self.bot.user
        if me is None or payload.user_id == me.id:
            return
        self.typing.typed(payload.channel_id, payload.user_id)
        self.bursts.typed(payload.channel_id, payload.user_id)

    async def _run_turns(
        self, message: discord.Message, me: discord.ClientUser, admitted: _Admitted
    ) -> None:
        """The message's turn, then (one by one) any of its burst's messages it never took."""
        route, ui, burst = admitted.route, admitted.ui, admitted.burst
        try:
            await self._converse(message, route, me, ui, burst)
        except Exception:
            log.exception("turn for message %d failed", message.id)
            await self._say(message, ui.error_prefix + ui.generic_error, in_thread=True)
        finally:
            left = self.bursts.finish(message.channel.id, burst) if burst is not None else []
        for part in left:
            if isinstance(part.origin, discord.Message):
                await self._run_turns(part.origin, me, _Admitted(route, ui, None))

    async def _admit(self, message: discord.Message, me: discord.ClientUser) -> _Admitted | None:
        """Record the activity; the message's route, UI text and burst if it is a turn to run
        now (None: not a turn, refused, or it joined its author's open turn)."""
        await self._record_activity(message, me)
        route = await self._route(message, me)
        if route is None:
            return None
        settings = self.deps.services.settings()
        verdict = AccessPolicy.from_settings(settings).check(_requester(message, route))
        if verdict != "allowed":
            log.debug("ignoring message %d: %s", message.id, verdict)
            return None
        if self._joined(message, route, me):
            return None  # a turn of its author takes it in: no turn, cooldown or slot of its own
        ui = ui_text(settings.language)
        user_id = message.author.id
        # Checked before the cooldown, so that a user refused as busy spends no cooldown window.
        slot = self.user_turns.check(user_id, settings.user_max_concurrent_turns)
        if not slot.allowed:
            log.debug("user %d has %d turns in progress", user_id, self.user_turns.running(user_id))
            if slot.notify:
                await self._say(message, ui.busy)
            return None
        cool = self.cooldown.hit(user_id, settings.user_cooldown_seconds)
        if not cool.allowed:
            if cool.notify:
                await self._say(message, ui.cooldown.format(seconds=math.ceil(cool.retry_after)))
            return None
        return _Admitted(route, ui, self._open_burst(message, route, settings.burst_wait_seconds))

    def _joined(self, message: discord.Message, route: Route, me: discord.ClientUser) -> bool:
        """Whether the message joined its author's open turn in this channel (a burst)."""
        if route.kind == "channel" or message.attachments:
            return False
        text = _turn_text(message, me)
        if not text:
            return False
        part = BurstPart(
            text,
            author_id=str(message.author.id),
            author_name=message.author.display_name,
            discord_message_id=message.id,
            origin=message,
        )
        joined = self.bursts.join(message.channel.id, message.author.id, part)
        if joined:
            log.debug("message %d joined its author's turn", message.id)
        return joined

    def _open_burst(self, message: discord.Message, route: Route, wait: float) -> Burst | None:
        """The burst the author's next messages here may join (none for a thread's opener)."""
        if route.kind == "channel" or wait <= 0:
            return None
        place, author = message.channel.id, message.author.id
        burst = Burst(
            author,
            wait_seconds=wait,
            typing_lapses=partial(self.typing.lapses_at, place, author),
            clock=self.deps.clock,
        )
        self.bursts.open(place, burst)
        return burst

    async def _record_activity(self, message: discord.Message, me: discord.ClientUser) -> None:
        """A person wrote: the channel (a thread counts for its parent) is not idle.

        The channel's own messages feed its word pool here; a thread's conversation (and a
        mention that opens one) feeds it when the turn is done.
        """
        channel = message.channel
        in_thread = isinstance(channel, discord.Thread)
        channel_id = channel.parent_id if isinstance(channel, discord.Thread) else channel.id
        if message.guild is not None and channel_id is not None:
            text = "" if in_thread or _addressed(message, me) else message.content
            await self.deps.services.topics.record_activity(
                space_of_message(message), channel_id, text, author=str(message.author.id)
            )

    async def _route(self, message: discord.Message, me: discord.ClientUser) -> Route | None:
        channel = message.channel
        if isinstance(channel, discord.TextChannel):
            if _addressed(message, me):
                return Route("channel", message.id, channel.id)
            return None
        if message.guild is not None and not isinstance(
            channel, discord.Thread | discord.PartialMessageable
        ):
            return None  # voice/stage text chats: no threads there
        parent = None
        if isinstance(channel, discord.Thread):
            parent = channel.parent_id
            # In threads the bot did not open, only messages addressed to it are turns.
            if channel.owner_id != me.id and not _addressed(message, me):
                return None
        space = space_of_message(message)
        if await self.deps.services.conversations.current(space, channel.id) is not None:
            return Route("session", channel.id, parent)
        if message.guild is None:
            return Route("dm", channel.id)
        # A thread (or an uncached channel, e.g. a just-unarchived thread) without a session.
        if isinstance(channel, discord.Thread) or _addressed(message, me):
            return Route("thread", channel.id, parent)
        return None

    async def _converse(
        self,
        message: discord.Message,
        route: Route,
        me: discord.ClientUser,
        ui: UiText,
        burst: Burst | None = None,
    ) -> None:
        services = self.deps.services
        text = _turn_text(message, me)
        if not text and not message.attachments:
            if route.kind in ("channel", "thread"):
                await self._say(message, ui.empty_mention)
            return
        space = space_of_message(message)
        if await services.repos.messages.by_discord_id(space, message.id) is not None:
            log.info("message %d already answered; skipping", message.id)
            return
        title = await self._title(message, route, space, text, ui)
        place = await self._place(message, route, title)
        session = await self._session(message, space, place, title)
        files = PreparedFiles()
        if message.attachments:
            files = await self.files.prepare(message.attachments, session, ui)
        settings = self.deps.services.settings()
        pace = read_pace(settings.stream_edit_interval)
        request = _turn_request(
            message,
            text,
            title=title,
            session=session,
            place=place,
            files=files,
            pace=pace,
            burst=burst,
        )
        cadence = StreamCadence(
            self.windows.get(place.channel_id), settings.stream_edit_interval, self.deps.clock
        )
        renderer = ReplyRenderer(place.channel, cadence=cadence, ui=ui, notices=files.notices)
        outcome = await renderer.render(services.engine.run_turn(request))
        log.debug(
            "turn for message %d: %d messages, %d writes",
            message.id,
            len(outcome.message_ids),
            outcome.writes,
        )

    async def _title(
        self, message: discord.Message, route: Route, space: str, text: str, ui: UiText
    ) -> str:
        """A new conversation's title (and thread name): the message's first words, unless
        it stays out of recall (a request to remember, its author's memory off) — a title is
        shown with every recall hit of the thread, to every member."""
        fallback = ui.thread_fallback.format(name=message.author.display_name)
        author = message.author
        if route.kind == "session":
            # The conversation exists (its title is used only after a racing /reset): no
            # read of the member's switch on every turn, only the request check.
            private = request_fact(text) is not None
        else:
            speaker = await speaking_member(
                self.deps.services.members, space, str(author.id), author.display_name
            )
            private = speaker.keeps_out_of_recall(text)
        return fallback if private else thread_name(text, fallback)

    async def _place(self, message: discord.Message, route: Route, title: str) -> _Place:
        """Where the answer goes: the thread opened on a mention in a channel, else here."""
        if route.kind != "channel":
            return _Place(message.channel, message.channel.id, route.parent_id)
        thread, new_thread = await self._open_thread(message, title)
        return _Place(thread, thread.id, message.channel.id, new_thread=new_thread)

    async def _session(
        self, message: discord.Message, space: str, place: _Place, title: str
    ) -> Session:
        """The conversation of the place the answer goes to (a new one if it has none)."""
        # Looked up again under the channel lock: a /reset may have happened meanwhile.
        ref = message.reference
        return await self.deps.services.conversations.for_channel(
            space,
            place.channel_id,
            title=title,
            guild_id=message.guild.id if message.guild else None,
            parent_channel_id=place.parent_id,
            # A reply to one of our topic openers (or a thread on it) continues that topic.
            reply_to=ref.message_id if ref is not None else None,
            new_channel=place.new_thread,
        )

    async def _open_thread(
        self, message: discord.Message, title: str
    ) -> tuple[discord.Thread, bool]:
        """The thread on `message`, and whether it was made just now (else it existed)."""
        try:
            thread = await message.create_thread(
                name=title, auto_archive_duration=THREAD_ARCHIVE_MINUTES
            )
            return thread, True
        except discord.HTTPException as exc:
            if exc.code != 160004 or message.guild is None:  # 160004: thread already exists
                raise
        existing = message.guild.get_thread(message.id)
        if existing is not None:
            return existing, False
        fetched = await self.bot.fetch_channel(message.id)
        if not isinstance(fetched, discord.Thread):
            raise TypeError(f"channel {message.id} is not a thread")
        return fetched, False

    async def _say(self, message: discord.Message, text: str, *, in_thread: bool = False) -> None:
        """A short notice: in the message's thread if one was opened, else as a reply."""
        thread = None
        if in_thread and message.guild is not None:
            thread = message.guild.get_thread(message.id)
        target_id = thread.id if thread is not None else message.channel.id
        self.windows.get(target_id).record(self.deps.clock())
        try:
            if thread is None:
                await message.reply(text, mention_author=False, suppress_embeds=True)
            else:
                await thread.send(text, suppress_embeds=True)
        except discord.HTTPException as exc:
            log.warning("could not send a notice for message %d: %s", message.id, exc)


async def setup(bot: commands.Bot) -> None:
    """Extension entry point."""
    await bot.add_cog(Chat(bot, deps_of(bot)))
