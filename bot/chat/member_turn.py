"""Member memory around a turn: who is speaking, whether their memory is on, saving what they
asked to be remembered ("remember that …") before the context is built — no LLM call — and
what the model is told and offered about it (a note of what was saved; no `remember` while
their memory is off)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from bot.errors import UserFacingError, ValidationError
from bot.memory.member_memory import (
    MemberMemory,
    MemoryFullError,
    MemoryOffError,
    member_of,
    request_fact,
)
from bot.prompts import Prompts
from bot.tools.core import short_text
from bot.tools.member_tools import REMEMBER_TOOL
from bot.turn.events import NotSavedReason, RememberedEvent

log = logging.getLogger(__name__)

# Characters of an unsaved fact quoted back to the model (the message itself is in the context).
NOTE_FACT_CHARS = 200


@dataclass(frozen=True)
class SpeakingMember:
    """The member of a turn (None: nobody known) and whether their memory is on.

    `switch_failed`: their switch could not be read, so memory counts as off this turn.
    """

    id: str | None
    name: str
    memory_on: bool
    switch_failed: bool = False

    @property
    def hidden_from_recall(self) -> bool:
        """Their messages are kept but never indexed for recall while their memory is off."""
        return self.id is not None and not self.memory_on

    def keeps_out_of_recall(self, text: str) -> bool:
        """Whether `text` stays out of recall: memory off, or a request to remember — the fact
        lives in member memory, where its owner shares or forgets it, so recall must not
        show the request to other members or after it is forgotten."""
        return self.hidden_from_recall or (self.id is not None and request_fact(text) is not None)


async def speaking_member(
    members: MemberMemory | None, space: str, author_id: str | None, author_name: str | None
) -> SpeakingMember:
    """Who speaks in this turn and whether member memory is on for them."""
    member = member_of(space, author_id)
    name = author_name or ""
    if member is None or members is None:
        return SpeakingMember(member, name, memory_on=members is not None)
    try:
        on = await members.enabled(space, member)
    except Exception:
        # Reading the switch failed: save nothing this turn, but hide nothing either.
        log.exception("could not read the member memory switch in %s", space)
        return SpeakingMember(member, name, memory_on=False, switch_failed=True)
    return SpeakingMember(member, name, memory_on=on)


async def save_requested_fact(
    members: MemberMemory | None,
    speaker: SpeakingMember,
    space: str,
    session_id: str,
    text: str,
    *,
    message_id: int | None = None,
) -> RememberedEvent | None:
    """Keep the fact the message asks to be remembered, if memory is on; whether it was saved
    (None: the message asks nothing, or nobody is known to keep it for)."""
    if members is None or speaker.id is None:
        return None
    fact = request_fact(text)
    if fact is None:
        return None
    if not speaker.memory_on:
        reason: NotSavedReason = "failed" if speaker.switch_failed else "memory_off"
        return RememberedEvent(None, fact, False, reason)
    try:
        kept = await members.remember(
            space,
            speaker.id,
            fact,
            "request",
            member_name=speaker.name,
            session_id=session_id,
            message_id=message_id,
        )
    except UserFacingError as exc:
        log.info("did not keep a requested fact in %s: %s", space, exc)
        return RememberedEvent(None, fact, False, _not_saved_reason(exc))
    except Exception:
        log.exception("could not keep a requested fact in %s", space)
        return RememberedEvent(None, fact, False, "failed")
    return RememberedEvent(kept.id, kept.fact, True)


def _not_saved_reason(exc: UserFacingError) -> NotSavedReason:
    if isinstance(exc, MemoryOffError):
        return "memory_off"  # switched off after the turn read the switch
    if isinstance(exc, MemoryFullError):
        return "full"
    return "invalid" if isinstance(exc, ValidationError) else "failed"


def hidden_tools(speaker: SpeakingMember, prompts: Prompts) -> dict[str, str]:
    """The tools not offered this turn, each with the error a call of it gets anyway."""
    if speaker.id is None or speaker.memory_on:
        return {}
    return {REMEMBER_TOOL: prompts["remember_not_offered"]}


def member_notes(
    speaker: SpeakingMember, remembered: RememberedEvent | None, prompts: Prompts
) -> tuple[str, ...]:
    """The system lines of this turn about member memory: that it is off, what a request saved."""
    notes: list[str] = []
    if speaker.id is not None and not speaker.memory_on:
        off = "member_memory_unread" if speaker.switch_failed else "member_memory_off"
        notes.append(prompts[off])
    if remembered is not None and remembered.saved:
        saved = prompts.format("member_fact_saved", id=remembered.fact_id, fact=remembered.fact)
        notes.append(saved)
    elif remembered is not None:
        why = prompts[f"member_fact_not_saved_{remembered.reason or 'failed'}"]
        fact = short_text(remembered.fact, NOTE_FACT_CHARS)
        notes.append(prompts.format("member_fact_not_saved", fact=fact, why=why))
    return tuple(notes)
