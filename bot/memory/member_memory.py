"""Member memory: facts about a member of a space, kept per (space, member).

A fact is saved when the member asks ("remember that …", `request_fact` finds it without an
LLM call) or by the `remember` tool the model calls for the member it is talking to. A member's
facts join the context of their own turns in every conversation of the space; another member
sees a fact only when its owner marked it shared. Members list, forget and switch off what is
kept about them (the `/memory me` commands); while it is off nothing is saved about them.
`erase` removes a member from the space: facts, switch, and their messages' text (see
`bot.store.erase.member_erase`); the threads whose summaries held them are summarised again.
Forgetting a fact also blanks the message it was said in (`bot.store.erase.fact_forget`).
After either, blank listeners learn what the bot still shows in Discord (`DiscordFollowUp`).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bot.errors import UserFacingError, ValidationError
from bot.store.erase.fact_forget import ForgotFacts
from bot.store.erase.member_erase import ErasedMember
from bot.store.erase.operations import MemberErasure
from bot.store.erase.quotes import DiscordFollowUp
from bot.store.repos.member_facts import (
    FactSource,
    MemberFact,
    MemberFactRepository,
    MemberSummary,
)
from bot.store.spaces import parse_space

__all__ = [
    "BlankListener",
    "DiscordFollowUp",
    "EraseListener",
    "ErasedMember",
    "FactsForTurn",
    "ForgotFacts",
    "MemberFact",
    "MemberMemory",
    "MemberSummary",
    "MemoryFullError",
    "MemoryOffError",
    "member_of",
    "request_fact",
]

LOCAL_MEMBER = "local"
MAX_FACTS_PER_MEMBER = 50
MAX_FACT_CHARS = 300
# Shared facts of other members shown in one turn (the newest).
MAX_SHARED_FACTS = 20

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# "remember that …" / "please remember: …" at the start of a sentence.
_EN = re.compile(
    r"(?:^|[.!?\n]\s*)(?:please[, ]+)?(?:can you |could you )?remember(?: that|:)\s*(?P<fact>.+)",
    re.IGNORECASE | re.DOTALL,
)
# 「…って覚えておいて」「…を覚えて」「覚えておいて：…」
# A request, not a question: 「覚えてる？」「覚えていますか」 (る い た ま after it) are not.
_JA_ASK = r"覚えて(?:おいて|て)?(?![るいたま])"
_JA_AFTER = re.compile(r"^(?P<fact>.+?)(?:って|と|ということを|ことを|を)\s*" + _JA_ASK)
_JA_BEFORE = re.compile(
    _JA_ASK + r"(?:ください|下さい|ね|よ)?\s*[:：、,]\s*(?P<fact>.+)", re.DOTALL
)
_TRAILING = " \t\n.!?。！？、,，"
ERASED_PLACEHOLDER = "[erased at the member's request]"
FORGOTTEN_PLACEHOLDER = "[forgotten at the member's request]"
NEUTRAL_TITLE = "Chat with {name}"

# Told the space and what an erase removed (threads to summarise again, files to forget).
EraseListener = Callable[[str, ErasedMember], Awaitable[None]]
# Told the space, the threads to summarise again and what Discord still shows, after an erase
# or a forget blanked texts.
BlankListener = Callable[[str, tuple[str, ...], DiscordFollowUp], Awaitable[None]]


class MemoryOffError(UserFacingError):
    """The member switched their memory off in this space: nothing is saved about them."""


class MemoryFullError(UserFacingError):
    """The member already has the most facts a member may keep."""


@dataclass(frozen=True)
class FactsForTurn:
    """What one member's turn may show: their own facts and the others' shared ones."""

    own: list[MemberFact]
    shared: list[MemberFact]

    def __bool__(self) -> bool:
        return bool(self.own or self.shared)


def member_of(space_id: str, author_id: str | None) -> str | None:
    """Who a turn's member is: its author, or the local user in a local space (else None)."""
    if author_id:
        return author_id
    return LOCAL_MEMBER if parse_space(space_id).kind == "local" else None


def request_fact(text: str) -> str | None:
    """The fact a message asks to be remembered ("remember that …", 「…を覚えておいて」), or None.

    Pure and cheap: no LLM call. Only an explicit request counts; "do you remember…" does not.
    """
    message = text.strip()
    if not message:
        return None
    found = _EN.search(message)
    if found is None and "覚えて" in message:
        found = _JA_BEFORE.search(message) or _JA_AFTER.search(message)
    if found is None:
        return None
    fact = found.group("fact").strip().strip(_TRAILING).strip("「」\"'")
    return fact or None


def clean_fact(text: str) -> str:
    """A fact as kept: trimmed, one to MAX_FACT_CHARS characters, no control characters."""
    if not isinstance(text, str):
        raise ValidationError("A fact must be text.")
    fact = " ".join(_CONTROL.sub(" ", text).split())
    if not fact:
        raise ValidationError("A fact cannot be empty.")
    if len(fact) > MAX_FACT_CHARS:
        raise ValidationError(
            f"A fact can have at most {MAX_FACT_CHARS} characters (this one has {len(fact)})."
        )
    return fact


class MemberMemory:
    """Saves, lists and forgets the facts about members of a space; their on/off switch."""

    def __init__(
        self,
        repo: MemberFactRepository,
        erasure: MemberErasure,
        *,
        cap: int = MAX_FACTS_PER_MEMBER,
        placeholder: Callable[[], str] = lambda: ERASED_PLACEHOLDER,
        forgotten: Callable[[], str] = lambda: FORGOTTEN_PLACEHOLDER,
        neutral_title: Callable[[], str] = lambda: NEUTRAL_TITLE,
    ) -> None:
        self._repo = repo
        self._erasure = erasure
        self._cap = cap
        self._placeholder = placeholder
        self._forgotten = forgotten
        self._neutral_title = neutral_title
        self._erase_listeners: list[EraseListener] = []
        self._blank_listeners: list[BlankListener] = []

    def add_erase_listener(self, listener: EraseListener) -> None:
        """Call `listener(space, erased)` after each erase."""
        self._erase_listeners.append(listener)

    def add_blank_listener(self, listener: BlankListener) -> None:
        """Call `listener(space, sessions, discord)` after each erase or forget."""
        self._blank_listeners.append(listener)

    async def _blanked(
        self, space: str, sessions: tuple[str, ...], discord: DiscordFollowUp
    ) -> None:
        for listener in self._blank_listeners:
            await listener(space, sessions, discord)

    async def remember(
        self,
        space: str,
        member: str,
        text: str,
        source: FactSource,
        *,
        member_name: str = "",
        session_id: str | None = None,
        shared: bool = False,
        message_id: int | None = None,
    ) -> MemberFact:
        """Keep a fact about `member` (taken from `message_id`: forgetting it blanks that
        message); MemoryOffError, ValidationError or MemoryFullError."""
        fact = clean_fact(text)
        if not await self._repo.enabled(space, member):
            raise MemoryOffError(
                "This member switched their memory off here: nothing is saved about them."
            )
        stored = await self._repo.add(
            space,
            member,
            fact,
            source=source,
            member_name=member_name,
            session_id=session_id,
            shared=shared,
            cap=self._cap,
            message_id=message_id,
        )
        if stored is None:
            raise MemoryFullError(
                f"At most {self._cap} facts are kept about a member: forget some first."
            )
        return stored

    async def list(self, space: str, member: str) -> list[MemberFact]:
        """Every fact kept about `member` in the space, oldest first."""
        return await self._repo.of_member(space, member)

    async def forget(self, space: str, member: str, fact_id: int) -> bool:
        """Forget one of the member's facts and blank what it was said in; False when it is
        not one of theirs."""
        return (await self._forget(space, member, fact_id)).facts > 0

    async def forget_all(self, space: str, member: str) -> int:
        """Forget every fact about the member (and what they were said in); how many."""
        return (await self._forget(space, member, None)).facts

    async def _forget(self, space: str, member: str, fact_id: int | None) -> ForgotFacts:
        forgot = await self._erasure.forget(
            space,
            member,
            _author(space, member),
            fact_id=fact_id,
            placeholder=self._forgotten(),
            neutral=self._neutral_title(),
        )
        if forgot.facts:
            await self._blanked(space, forgot.sessions, forgot.discord)
        return forgot

    async def share(self, space: str, member: str, fact_id: int, shared: bool) -> bool:
        """The owner shows one of their facts to the other members too (or stops)."""
        return await self._repo.set_shared(space, member, fact_id, shared)

    async def set_enabled(self, space: str, member: str, enabled: bool) -> None:
        """Switch the member's memory on or off in the space (off: nothing is saved)."""
        await self._repo.set_enabled(space, member, enabled)

    async def enabled(self, space: str, member: str) -> bool:
        """Whether the member's memory is on in the space (on until switched off)."""
        return await self._repo.enabled(space, member)

    async def facts_for_turn(self, space: str, member: str) -> FactsForTurn:
        """The member's own facts and the newest facts other members shared."""
        own = await self._repo.of_member(space, member)
        shared = await self._repo.shared_by_others(space, member, MAX_SHARED_FACTS)
        return FactsForTurn(own, shared)

    async def members(self, space: str) -> tuple[MemberSummary, ...]:
        """Every member of the space with facts or a switch (the operator's overview)."""
        return tuple(await self._repo.members(space))

    async def erase(self, space: str, member: str) -> ErasedMember:
        """Erase the member from the space: facts, switch, tags, their messages' text (and the
        bot's answers to them), the summaries holding them; then have those summarised again."""
        erased = await self._erasure.erase(
            space,
            member,
            _author(space, member),
            self._placeholder(),
            neutral=self._neutral_title(),
        )
        for listener in self._erase_listeners:
            await listener(space, erased)
        await self._blanked(space, erased.sessions, erased.discord)
        return erased


def _author(space: str, member: str) -> str | None:
    """The `messages.author_id` of the member's messages (None: the local user's)."""
    local = member == LOCAL_MEMBER and parse_space(space).kind == "local"
    return None if local else member
