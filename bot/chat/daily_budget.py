"""Daily token budgets: each model call of a turn is reserved before it is made, then settled.

MEMBER_DAILY_TOKENS caps what one member's turns use per day in one space, SERVER_DAILY_TOKENS
what every turn of the space uses (0: no cap; usage is counted either way). A call reserves its
prompt's estimate plus the answer's limit (the most it can cost) while the space and the member
are below their limits (`TokenUsageRepository.reserve`, atomic in the database across
processes), so the budget is passed by at most one call; when the call ends its reservation is
settled with the backend's counts, or the estimate of what was sent and said when it sent none.
A call that fails before answering costs nothing. Only the turn's own rounds count: background
calls a turn leads to (summaries, tagging, knowledge) are the operator's and are not budgeted.
A day is the space's (its time zone, else UTC).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo

from bot.config import Settings
from bot.errors import UserFacingError
from bot.llm.answer_limits import answer_limit
from bot.llm.types import Message, StreamDelta, ToolSchema, Usage
from bot.llm.usage_estimate import PromptShape, counted_usage
from bot.prompts import Prompts
from bot.store.repos.token_usage import Refused, Reservation, TokenUsageRepository
from bot.utils.zones import zone_or_none

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]


def _utc_now() -> datetime:
    return datetime.now(UTC)


class OverBudget(UserFacingError):
    """The member's or the space's tokens for today are used up; no model call is made."""


@dataclass(frozen=True)
class BudgetDay:
    """The space's current day (its date as text) and the moment the next one starts."""

    day: str
    resets_at: datetime
    zone: str


def budget_day(now: datetime, zone: str | None) -> BudgetDay:
    """The day `now` falls on in `zone` (UTC when None or unknown) and when it ends."""
    known = zone_or_none(zone)
    if zone and known is None:
        log.warning("unknown time zone %r: budgets use UTC days", zone)
        zone = None
    tz: tzinfo = known or UTC
    local = now.astimezone(tz)
    midnight = datetime.combine(local.date() + timedelta(days=1), datetime.min.time(), tz)
    return BudgetDay(local.date().isoformat(), midnight.astimezone(UTC), zone or "UTC")


def reset_text(day: BudgetDay, now: datetime, prompts: Prompts) -> str:
    """When the budget resets, for the member: the time left and the zone's midnight."""
    minutes = max(1, int((day.resets_at - now).total_seconds() + 59) // 60)
    return prompts.format("budget_resets", hours=minutes // 60, minutes=minutes % 60, zone=day.zone)


@dataclass(frozen=True)
class BudgetCall:
    """One model call of a turn, before it is made: where, whose, what it sends."""

    space_id: str
    member_id: str | None
    messages: list[Message]
    tools: list[ToolSchema] | None
    token_factor: float = 1.0


class Spend:
    """One reserved call: its stream is passed through and its cost settled when it ends."""

    def __init__(
        self,
        usage: TokenUsageRepository | None,
        hold: Reservation,
        shape: PromptShape,
        factor: float,
    ) -> None:
        self._usage = usage
        self._hold = hold
        self._shape = shape
        self._factor = factor

    async def metered(
        self, stream: AsyncGenerator[StreamDelta, None]
    ) -> AsyncGenerator[StreamDelta, None]:
        """`stream`, counted: the reservation is settled once it ends (closed, failed, done)."""
        text: list[str] = []
        usage: Usage | None = None
        failed = False
        try:
            async with aclosing(stream) as deltas:
                async for delta in deltas:
                    text.append(delta.text)
                    if delta.done:
                        usage = delta.usage or Usage()
                    yield delta
        except Exception:
            failed = True
            raise
        finally:
            await self._settle(text, usage, failed)

    async def _settle(self, text: list[str], usage: Usage | None, failed: bool) -> None:
        if self._usage is None:
            return
        answer = "".join(text)
        used = 0
        if not (failed and not answer and usage is None):
            counts = counted_usage(usage, self._shape, answer, factor=self._factor)
            used = (counts.prompt_tokens or 0) + (counts.completion_tokens or 0)
        try:
            await self._usage.settle(self._hold, used)
        except Exception:
            log.exception("could not settle %d tokens in %s", used, self._hold.space_id)


class TurnBudget:
    """Reserves each model call of a turn against the daily budgets, or refuses it."""

    def __init__(
        self,
        usage: TokenUsageRepository | None,
        settings: Callable[[], Settings],
        *,
        clock: Clock | None = None,
    ) -> None:
        self._usage = usage
        self._settings = settings
        self._clock = clock or _utc_now

    async def reserve(self, call: BudgetCall, prompts: Prompts) -> Spend:
        """The call's reservation; raises OverBudget (the member's notice) when refused."""
        settings = self._settings()
        shape = PromptShape(call.messages, call.tools)
        estimate = round(shape.estimate() * call.token_factor)
        tokens = estimate + answer_limit("chat", settings.llm_context_tokens)
        if self._usage is None:
            return Spend(None, Reservation(call.space_id, "", call.member_id, tokens), shape, 1.0)
        now = self._clock()
        day = budget_day(now, await self._zone(call.space_id))
        hold = Reservation(call.space_id, day.day, call.member_id, tokens)
        refused = await self._usage.reserve(
            hold,
            member_limit=settings.member_daily_tokens,
            server_limit=settings.server_daily_tokens,
        )
        if refused is not None:
            raise OverBudget(
                self._notice(refused, settings, reset_text(day, now, prompts), prompts)
            )
        return Spend(self._usage, hold, shape, call.token_factor)

    async def _zone(self, space: str) -> str | None:
        assert self._usage is not None
        try:
            return await self._usage.timezone(space)
        except Exception:
            log.exception("could not read the time zone of %s: budgets use UTC", space)
            return None

    @staticmethod
    def _notice(which: Refused, settings: Settings, resets: str, prompts: Prompts) -> str:
        """The member's sentence: whose budget is used up, how big it is, when it resets."""
        limit = settings.member_daily_tokens if which == "member" else settings.server_daily_tokens
        key = "budget_member_used" if which == "member" else "budget_server_used"
        log.info("a turn was refused: the %s's daily budget of %d tokens is used", which, limit)
        return prompts.format(key, limit=f"{limit:,}", resets=resets)
