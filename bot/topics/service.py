"""Starting conversations: decide, pick a topic, let the LLM write an opener, post, record."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from bot.config import Settings, parse_quiet_hours
from bot.errors import LLMError
from bot.llm.gateway import LLMGateway
from bot.memory.word_pool import WordPool
from bot.prompts import available_languages, prompts_for
from bot.store.repos.topics import AnswerCounts, TopicChannel, TopicRepository
from bot.store.spaces import ALL_SPACES, SpaceScope, guild_space
from bot.topics.host_zone import host_timezone
from bot.topics.picker import TopicChoice, TopicPicker
from bot.topics.policy import (
    Decision,
    Restraint,
    cron_decision,
    day_start_utc,
    idle_decision,
    unanswered_streak,
)
from bot.utils.zones import zone, zone_or_none

log = logging.getLogger(__name__)

MAX_OPENER_CHARS = 400
RECENT_TOPICS = 10
# Openers read to count the unanswered ones in a row: past this many the backoff cap holds.
STREAK_POSTS = 20

ChangeListener = Callable[[], Awaitable[object]]
# A channel's recent human messages, newest first, at most `limit` (Discord's history API).
History = Callable[[int], Awaitable[list[str]]]
# How many recent messages seed a channel's word pool when topics are enabled there.
SEED_MESSAGES = 200


class TopicPoster(Protocol):
    """The front end that can post into a channel (the Discord bot)."""

    async def post_topic(self, channel_id: int, text: str) -> int | None:
        """Post `text` with mentions disabled; the message id, or None if impossible."""
        ...


@dataclass(frozen=True)
class PostResult:
    """What a check did."""

    posted: bool
    reason: str
    text: str = ""
    topic: str = ""
    message_id: int | None = None
    # When the channel will have been quiet long enough (an idle check that only waits on that).
    due_at: datetime | None = None


def _utc(now: datetime) -> str:
    return now.astimezone(UTC).isoformat(timespec="microseconds")


class TopicService:
    """Idle chats and periodic posts for the configured channels, each in its own space.

    Also feeds each enabled channel's word pool: its human messages (`record_activity`) and
    its threads' conversations (`feed_conversation`).
    """

    def __init__(
        self,
        repo: TopicRepository,
        picker: TopicPicker,
        gateway: LLMGateway,
        settings: Callable[[], Settings],
        *,
        pool: WordPool | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.repo = repo
        self._picker = picker
        self._gateway = gateway
        self._settings = settings
        self._pool = pool
        self._clock = clock
        self._poster: TopicPoster | None = None
        # The scheduler's next run per job id ("idle:<channel>", "cron:<channel>"), once running.
        self._next_runs: Callable[[], dict[str, datetime | None]] = dict
        # channel id → (space, enabled) of every configured channel.
        self._configured: dict[int, tuple[str, bool]] = {}
        self._change_listeners: list[ChangeListener] = []
        # Records of posted openers still being written (kept so they are not collected).
        self._recording: set[asyncio.Future[int]] = set()

    def add_change_listener(self, listener: ChangeListener) -> None:
        """Call `listener` after every change to a channel's topic settings."""
        if listener not in self._change_listeners:
            self._change_listeners.append(listener)

    def remove_change_listener(self, listener: ChangeListener) -> None:
        """Stop calling `listener` (unknown listeners are ignored)."""
        if listener in self._change_listeners:
            self._change_listeners.remove(listener)

    async def _settings_changed(self) -> None:
        for listener in list(self._change_listeners):
            try:
                await listener()
            except Exception:
                # The change is stored already; a failed listener must not make it look refused.
                log.exception("topic change listener %r failed", listener)

    @property
    def poster(self) -> TopicPoster | None:
        """The front end openers are posted through (None: not connected)."""
        return self._poster

    def register_poster(self, poster: TopicPoster) -> None:
        """Post openers through `poster` from now on."""
        self._poster = poster

    def unregister_poster(self, poster: TopicPoster) -> None:
        """Stop posting through `poster` (no effect if another poster replaced it)."""
        if self._poster is poster:
            self._poster = None

    def register_schedule(self, next_runs: Callable[[], dict[str, datetime | None]]) -> None:
        """Answer `next_runs()` from the running scheduler (`lambda: {}` when it stops)."""
        self._next_runs = next_runs

    def next_runs(self) -> dict[str, datetime | None]:
        """When each scheduled job runs next, by job id (empty without a scheduler)."""
        return self._next_runs()

    async def load(self) -> None:
        """Remember which channels are configured where (to skip activity writes for others)."""
        self._configured = {
            channel.channel_id: (channel.space_id, channel.enabled)
            for channel in await self.repo.channels(ALL_SPACES)
        }

    async def reload(self) -> None:
        """Re-read the configured channels (e.g. after a space was purged) and tell the
        change listeners (the scheduler rebuilds its jobs)."""
        await self.load()
        await self._settings_changed()

    def now(self) -> datetime:
        """The injected clock's current time."""
        return self._clock()

    def _enabled(self, space: str, channel_id: int) -> bool:
        return self._configured.get(channel_id) == (space, True)

    async def record_activity(
        self,
        space: str,
        channel_id: int,
        text: str = "",
        at: datetime | None = None,
        *,
        author: str | None = None,
    ) -> None:
        """A person (`author`) wrote `text` in `channel_id` of `space`: remember when, and add
        its nouns to the channel's word pool if topics are enabled there (no-op elsewhere)."""
        known = self._configured.get(channel_id)
        if known is None or known[0] != space:
            return
        moment = at or self.now()
        await self.repo.record_human_activity(space, channel_id, _utc(moment))
        await self._mark_answered(space, channel_id, moment)
        if known[1] and text.strip() and self._pool is not None:
            await self._pool.add_text(space, channel_id, text, author=author)

    def _reply_window(self) -> timedelta:
        return timedelta(minutes=self._settings().topic_reply_window_minutes)

    async def _mark_answered(self, space: str, channel_id: int, at: datetime) -> None:
        since = _utc(at - self._reply_window())
        if await self.repo.mark_answered(space, channel_id, _utc(at), since):
            log.info("a topic opener in channel %d was answered", channel_id)

    async def answer_counts(self, scope: SpaceScope) -> dict[int, AnswerCounts]:
        """Per configured channel of `scope`: openers sent, answered within their reply window,
        and still waiting in it."""
        return await self.repo.answer_counts(scope, _utc(self.now() - self._reply_window()))

    async def answers(self, channel: TopicChannel) -> dict[str, int]:
        """One channel's openers: `sent`, `answered` and `waiting` (see `answer_counts`)."""
        counts = await self.answer_counts(channel.space_id)
        return asdict(counts.get(channel.channel_id, AnswerCounts(0, 0, 0)))

    async def feed_conversation(
        self,
        space: str,
        channel_id: int | None,
        texts: list[str],
        authors: Sequence[str | None] = (),
        message_ids: Sequence[int] = (),
    ) -> bool:
        """Add a conversation's messages (`authors[i]` brought `texts[i]`; stored as
        `message_ids`, unless erased meanwhile) to the word pool of the channel it hangs off,
        if topics are enabled there; returns whether topics are enabled there."""
        if channel_id is None or self._pool is None or not self._enabled(space, channel_id):
            return False
        await self._pool.add_texts(space, channel_id, texts, authors, message_ids)
        return True

    async def configure(
        self,
        channel_id: int,
        changes: dict[str, object],
        *,
        space: str | None = None,
        history: History | None = None,
    ) -> TopicChannel:
        """Create or change a channel's topic settings (validated).

        The channel's space: `space`, else the one it is configured in, else its server's
        (`guild_id` in `changes`), else the local space. A new channel's time zone is the
        host's unless `changes` names one. Enabled with a `history`: its recent messages
        seed the word pool, so the first opener has something to talk about.
        """
        if "timezone" in changes:
            zone(str(changes["timezone"]))
        elif await self.repo.get(ALL_SPACES, channel_id) is None:
            changes = {**changes, "timezone": host_timezone()}
        if space is None:
            known = self._configured.get(channel_id)
            guild_id = changes.get("guild_id")
            if known is not None:
                space = known[0]
            elif isinstance(guild_id, int) and not isinstance(guild_id, bool):
                space = guild_space(guild_id)
            else:
                space = self._settings().local_space_id
        channel = await self.repo.upsert(space, channel_id, changes, now=_utc(self.now()))
        self._configured[channel_id] = (channel.space_id, channel.enabled)
        await self._settings_changed()
        if channel.enabled and changes.get("enabled") is True and history is not None:
            await self._seed_pool(channel, history)
        return channel

    async def _seed_pool(self, channel: TopicChannel, history: History) -> None:
        """Feed the channel's recent messages (SEED_MESSAGES at most) to its word pool; a
        history that cannot be read leaves the pool to fill from new messages."""
        if self._pool is None:
            return
        try:
            texts = [text for text in await history(SEED_MESSAGES) if text.strip()]
        except Exception as exc:  # a lost permission, Discord down: enabling still worked
            log.warning("could not read channel %d's history: %s", channel.channel_id, exc)
            return
        # Oldest first, so the newest words end up the most recently seen.
        await self._pool.add_texts(channel.space_id, channel.channel_id, texts[::-1])
        log.info(
            "word pool of channel %d seeded from %d recent messages",
            channel.channel_id,
            len(texts),
        )

    async def _posts_today(self, channel: TopicChannel, now: datetime) -> int:
        since = day_start_utc(now, zone(channel.timezone))
        return await self.repo.posts_since(channel.space_id, channel.channel_id, _utc(since))

    async def status(
        self, channel_id: int, *, scope: SpaceScope = ALL_SPACES
    ) -> tuple[TopicChannel | None, Decision]:
        """The channel's settings (if configured in `scope`) and what an idle check would
        decide now."""
        channel = await self.repo.get(scope, channel_id)
        if channel is None:
            return None, Decision(False, "topics are not configured in this channel")
        return channel, await self._idle_decision(channel)

    async def _zone(self, channel: TopicChannel) -> str:
        """The server's own time zone when it has one the host knows, else the channel's."""
        name = await self.repo.space_timezone(channel.space_id)
        if zone_or_none(name) is None:
            if name:
                log.warning(
                    "unknown time zone %r of %s: using the channel's", name, channel.space_id
                )
            return channel.timezone
        assert name is not None
        return name

    async def _restraint(self, channel: TopicChannel, now: datetime) -> Restraint:
        settings = self._settings()
        posts = await self.repo.recent_posts(channel.space_id, channel.channel_id, STREAK_POSTS)
        return Restraint(
            quiet_hours=parse_quiet_hours(settings.topic_quiet_hours),
            zone=await self._zone(channel),
            unanswered=unanswered_streak(posts, now, self._reply_window()),
            backoff_cap_minutes=settings.topic_backoff_max_minutes,
        )

    async def _idle_decision(self, channel: TopicChannel) -> Decision:
        now = self.now()
        last = await self.repo.last_post(channel.space_id, channel.channel_id)
        return idle_decision(
            channel,
            now,
            last_post_at=None if last is None else last.posted_at,
            posts_today=await self._posts_today(channel, now),
            restraint=await self._restraint(channel, now),
        )

    async def check_idle(self, channel_id: int) -> PostResult:
        """Scheduled idle check: post when the channel has been quiet long enough."""
        channel = await self.repo.get(ALL_SPACES, channel_id)
        if channel is None:
            return PostResult(False, "not configured")
        decision = await self._idle_decision(channel)
        if not decision.post:
            log.debug("no idle post in %s: %s", channel_id, decision.reason)
            return PostResult(False, decision.reason, due_at=decision.due_at)
        return await self._post(channel, "idle")

    async def run_cron(self, channel_id: int) -> PostResult:
        """Scheduled periodic post."""
        channel = await self.repo.get(ALL_SPACES, channel_id)
        if channel is None:
            return PostResult(False, "not configured")
        now = self.now()
        decision = cron_decision(
            channel,
            posts_today=await self._posts_today(channel, now),
            now=now,
            restraint=await self._restraint(channel, now),
        )
        if not decision.post:
            log.info("no scheduled post in %s: %s", channel_id, decision.reason)
            return PostResult(False, decision.reason)
        return await self._post(channel, "cron")

    async def run_now(self, channel_id: int, *, space: str | None = None) -> PostResult:
        """Post an opener right away (admin request), whatever the schedule says.

        With `space`, only a channel of that space (a new one is configured there).
        """
        scope: SpaceScope = ALL_SPACES if space is None else space
        channel = await self.repo.get(scope, channel_id) or await self.configure(
            channel_id, {}, space=space
        )
        return await self._post(channel, "manual")

    async def _post(self, channel: TopicChannel, kind: str) -> PostResult:
        poster = self._poster
        if poster is None:
            return PostResult(False, "the Discord bot is not connected")
        avoid: set[str] = set(
            await self.repo.recent_topics(channel.space_id, channel.channel_id, RECENT_TOPICS)
        )
        choice = await self._picker.pick(channel.space_id, channel.channel_id, avoid)
        if choice is None:
            log.info(
                "no topic for channel %s: the word pool is empty and there are no tags yet",
                channel.channel_id,
            )
            return PostResult(False, "nothing to talk about yet (empty word pool, no tags)")
        try:
            text = await self._compose(channel, choice, avoid)
        except LLMError as exc:
            # The gateway already logged the failed call at WARNING.
            log.info("topic opener for %s not posted: %s", channel.channel_id, exc)
            return PostResult(False, f"the model failed: {exc}")
        message_id = await poster.post_topic(channel.channel_id, text)
        if message_id is None:
            return PostResult(False, "the channel is not available")
        # The opener is in Discord now: record it even if this job is cancelled (the scheduler
        # cancels running jobs when the process stops), or the daily cap would not count it.
        record = asyncio.ensure_future(
            self.repo.add_post(
                channel.space_id,
                channel.channel_id,
                kind=kind,
                topic=choice.topic,
                words=[choice.topic, *choice.related],
                content=text,
                discord_message_id=message_id,
                posted_at=_utc(self.now()),
            )
        )
        self._recording.add(record)
        record.add_done_callback(self._recorded)
        await asyncio.shield(record)
        log.info("posted a %s topic in channel %s", kind, channel.channel_id)
        return PostResult(True, "posted", text, choice.topic, message_id)

    def _recorded(self, record: asyncio.Future[int]) -> None:
        self._recording.discard(record)
        if not record.cancelled() and record.exception() is not None:
            log.warning("a posted topic opener was not recorded", exc_info=record.exception())

    async def _compose(self, channel: TopicChannel, choice: TopicChoice, avoid: set[str]) -> str:
        settings = self._settings()
        language = channel.language or settings.language
        prompts = prompts_for(language)
        # A language without prompt files is named by its code (the prompts fall back to English).
        name = prompts["language_name"] if language in available_languages() else language
        system = prompts.format("topic_system", language_name=name)
        if channel.persona:
            system = f"{system}\n\n{channel.persona}"
        user = prompts.format(
            "topic_user",
            topic=choice.topic,
            related=", ".join(choice.related) or "-",
            avoid=", ".join(sorted(avoid)) or "-",
        )
        result = await self._gateway.complete(
            [{"role": "system", "content": system}, {"role": "user", "content": user}],
            purpose="topic",
        )
        text = result.text.strip().strip('"「」').strip()
        if not text:
            raise LLMError("The model wrote an empty opener.")
        return text[:MAX_OPENER_CHARS]
