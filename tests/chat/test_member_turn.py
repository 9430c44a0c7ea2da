"""What a speaking member's message keeps out of recall."""

from __future__ import annotations

from bot.chat.member_turn import SpeakingMember


def test_a_request_to_remember_stays_out_of_recall() -> None:
    alice = SpeakingMember("1", "alice", memory_on=True)
    assert alice.keeps_out_of_recall("remember that my cat is Mochi-Kinako")
    assert alice.keeps_out_of_recall("猫の名前はもちきなこだって覚えておいて")
    assert not alice.keeps_out_of_recall("What is the name of my cat?")


def test_memory_off_keeps_every_message_out_and_nobody_keeps_nothing_out() -> None:
    assert SpeakingMember("1", "alice", memory_on=False).keeps_out_of_recall("hello there")
    nobody = SpeakingMember(None, "", memory_on=True)
    assert not nobody.keeps_out_of_recall("remember that my cat is Mochi-Kinako")
