"""What a speaking member's message keeps out of recall; a switch that cannot be read."""

from __future__ import annotations

from typing import cast

from bot.chat.member_turn import (
    SpeakingMember,
    hidden_tools,
    member_notes,
    save_requested_fact,
    speaking_member,
)
from bot.memory.member_memory import MemberMemory
from bot.prompts import prompts_for
from bot.turn.events import RememberedEvent


def test_a_request_to_remember_stays_out_of_recall() -> None:
    alice = SpeakingMember("1", "alice", memory_on=True)
    assert alice.keeps_out_of_recall("remember that my cat is Mochi-Kinako")
    assert alice.keeps_out_of_recall("猫の名前はもちきなこだって覚えておいて")
    assert not alice.keeps_out_of_recall("What is the name of my cat?")


def test_memory_off_keeps_every_message_out_and_nobody_keeps_nothing_out() -> None:
    assert SpeakingMember("1", "alice", memory_on=False).keeps_out_of_recall("hello there")
    nobody = SpeakingMember(None, "", memory_on=True)
    assert not nobody.keeps_out_of_recall("remember that my cat is Mochi-Kinako")


async def test_a_switch_that_cannot_be_read_saves_nothing_and_says_so() -> None:
    class Unreadable:
        async def enabled(self, space: str, member: str) -> bool:
            raise RuntimeError("database is locked")

        async def remember(self, *args: object, **kwargs: object) -> None:
            raise AssertionError("nothing is saved while the switch is unknown")

    members = cast(MemberMemory, Unreadable())
    speaker = await speaking_member(members, "guild:1", "1", "alice")
    assert speaker == SpeakingMember("1", "alice", memory_on=False, switch_failed=True)
    receipt = await save_requested_fact(members, speaker, "guild:1", "s", "remember that I am Al")
    assert receipt == RememberedEvent(None, "I am Al", False, "failed")
    prompts = prompts_for("en")
    assert hidden_tools(speaker, prompts) == {"remember": prompts["remember_not_offered"]}
    notes = member_notes(speaker, receipt, prompts)
    assert notes[0] == prompts["member_memory_unread"]
    assert prompts["member_fact_not_saved_failed"] in notes[1]
