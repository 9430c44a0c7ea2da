"""Starting conversations: decide, pick a topic, let the LLM write an opener, post, record."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from bot.config import Settings
from bot.errors import LLMError
from bot.llm.gateway import LLMGateway
from bot.prompts import available_languages, prompts_for
from bot.store.topics import TopicChannel, TopicRepository
from bot.topics.picker import TopicChoice, TopicPicker
from bot.topics.policy import Decision, cron_decision, day_start_utc, idle_decision, zone

log = logging.getLogger(__name__)

MAX_OPENER_CHARS = 400
RECENT_TOPICS = 10

ChangeListener = Callable[[], Awaitable[object]]


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


def _utc(now: datetime) -> str:
    return now.astimezone(UTC).isoformat(timespec="microseconds")


class TopicService:
    """Idle chats and periodic posts for the configured channels."""

    def __init__(
        self,
        repo: TopicRepository,
        picker: TopicPicker,
        gateway: LLMGateway,
        settings: Callable[[], Settings],
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.repo = repo
        self._picker = picker
        self._gateway = gateway
        self._settings = settings
        self._clock = clock
        self._poster: TopicPoster | None = None
        self._configured: set[int] = set()
        self._change_listeners: list[ChangeListener] = []

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

    async def load(self) -> None:
        """Remember which channels are configured (to skip activity writes for the others)."""
        self._configured = {channel.channel_id for channel in await self.repo.channels()}

    def now(self) -> datetime:
        """The injected clock's current time."""
        return self._clock()

    async def record_activity(self, channel_id: int, at: datetime | None = None) -> None:
        """A person wrote in `channel_id` (cheap no-op for unconfigured channels)."""
        if channel_id in self._configured:
            await self.repo.record_human_activity(channel_id, _utc(at or self.now()))

    async def configure(self, channel_id: int, changes: dict[str, object]) -> TopicChannel:
        """Create or change a channel's topic settings (validated)."""
        if "timezone" in changes:
            zone(str(changes["timezone"]))
        channel = await self.repo.upsert(channel_id, changes, now=_utc(self.now()))
        self._configured.add(channel_id)
        await self._settings_changed()
        return channel

    async def _posts_today(self, channel: TopicChannel, now: datetime) -> int:
        since = day_start_utc(now, zone(channel.timezone))
        return await self.repo.posts_since(channel.channel_id, _utc(since))

    async def status(self, channel_id: int) -> tuple[TopicChannel | None, Decision]:
        """The channel's settings and what an idle check would decide now."""
        channel = await self.repo.get(channel_id)
        if channel is None:
            return None, Decision(False, "topics are not configured in this channel")
        return channel, await self._idle_decision(channel)

    async def _idle_decision(self, channel: TopicChannel) -> Decision:
        now = self.now()
        last = await self.repo.last_post(channel.channel_id)
        return idle_decision(
            channel,
            now,
            last_post_at=None if last is None else last.posted_at,
            posts_today=await self._posts_today(channel, now),
        )

    async def check_idle(self, channel_id: int) -> PostResult:
        """Scheduled idle check: post when the channel has been quiet long enough."""
        channel = await self.repo.get(channel_id)
        if channel is None:
            return PostResult(False, "not configured")
        decision = await self._idle_decision(channel)
        if not decision.post:
            log.debug("no idle post in %s: %s", channel_id, decision.reason)
            return PostResult(False, decision.reason)
        return await self._post(channel, "idle")

    async def run_cron(self, channel_id: int) -> PostResult:
        """Scheduled periodic post."""
        channel = await self.repo.get(channel_id)
        if channel is None:
            return PostResult(False, "not configured")
        decision = cron_decision(channel, posts_today=await self._posts_today(channel, self.now()))
        if not decision.post:
            log.info("no scheduled post in %s: %s", channel_id, decision.reason)
            return PostResult(False, decision.reason)
        return await self._post(channel, "cron")

    async def run_now(self, channel_id: int) -> PostResult:
        """Post an opener right away (admin request), whatever the schedule says."""
        channel = await self.repo.get(channel_id) or await self.configure(channel_id, {})
        return await self._post(channel, "manual")

    async def _post(self, channel: TopicChannel, kind: str) -> PostResult:
        poster = self._poster
        if poster is None:
            return PostResult(False, "the Discord bot is not connected")
        avoid: set[str] = set(await self.repo.recent_topics(channel.channel_id, RECENT_TOPICS))
        choice = await self._picker.pick(avoid)
        if choice is None:
            log.info(
                "no topic for channel %s: the word pool is empty and there are no tags yet",
                channel.channel_id,
            )
            return PostResult(False, "nothing to talk about yet (empty word pool, no tags)")
        try:
            text = await self._compose(channel, choice, avoid)
        except LLMError as exc:
            log.warning("topic opener for %s failed: %s", channel.channel_id, exc)
            return PostResult(False, f"the model failed: {exc}")
        message_id = await poster.post_topic(channel.channel_id, text)
        if message_id is None:
            return PostResult(False, "the channel is not available")
        await self.repo.add_post(
            channel.channel_id,
            kind=kind,
            topic=choice.topic,
            words=[choice.topic, *choice.related],
            content=text,
            discord_message_id=message_id,
            posted_at=_utc(self.now()),
        )
        log.info("posted a %s topic in channel %s", kind, channel.channel_id)
        return PostResult(True, "posted", text, choice.topic, message_id)

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
