"""Member memory around a turn: who is speaking, whether their memory is on, and saving what
they asked to be remembered ("remember that …") before the context is built — no LLM call."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from bot.errors import UserFacingError
from bot.memory.member_memory import MemberMemory, member_of, request_fact

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SpeakingMember:
    """The member of a turn (None: nobody known) and whether their memory is on."""

    id: str | None
    name: str
    memory_on: bool

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
        return SpeakingMember(member, name, memory_on=False)
    return SpeakingMember(member, name, memory_on=on)


async def save_requested_fact(
    members: MemberMemory | None,
    speaker: SpeakingMember,
    space: str,
    session_id: str,
    text: str,
) -> None:
    """Keep the fact the message asks to be remembered, if it asks and memory is on."""
    if members is None or speaker.id is None or not speaker.memory_on:
        return
    fact = request_fact(text)
    if fact is None:
        return
    try:
        await members.remember(
            space, speaker.id, fact, "request", member_name=speaker.name, session_id=session_id
        )
    except UserFacingError as exc:
        log.info("did not keep a requested fact in %s: %s", space, exc)
    except Exception:
        log.exception("could not keep a requested fact in %s", space)
