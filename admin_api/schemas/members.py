"""Member memory: the members of a space with what is kept about them, and an erase's result."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from bot.store.repos.member_facts import MemberFact, MemberSummary

# A Discord user id, or `local` (the user of a local space).
MemberId = Annotated[str, Field(pattern=r"^([0-9]{1,20}|local)$", examples=["123456789012345678"])]


class MemberListOut(BaseModel):
    """The members of a space with facts or a memory switch: name, fact count, on/off."""

    members: list[MemberSummary]


class FactListOut(BaseModel):
    """Every fact kept about one member of a space, oldest first."""

    facts: list[MemberFact]


class ErasedOut(BaseModel):
    """What erasing a member removed; `sessions` are summarised again in the background."""

    facts: int
    messages: int
    tags: int
    summaries: int
    sessions: list[str]
