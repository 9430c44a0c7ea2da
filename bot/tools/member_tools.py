"""The remember tool: keep a fact about the member the model is talking to. The space and the
member are injected by the engine, never taken from the model; nothing is saved while the
member has their memory off (the engine does not offer the tool then; the tool says so too).
A save's result carries its receipt (a RememberedEvent) for the front ends."""

from __future__ import annotations

from typing import Any

from bot.errors import ToolError, UserFacingError
from bot.memory.member_memory import MemberMemory, MemoryFullError, MemoryOffError
from bot.tools.core import ToolDisplay, ToolRegistry, short_text
from bot.tools.room import ResultRoom, longest_fit, room_for
from bot.turn.events import RememberedEvent
from bot.turn.tool_result import ToolResult

REMEMBER_ICON = "🧠"
REMEMBER_TOOL = "remember"


_NOBODY = "Nobody to remember this for: the speaking member is not known here."
# Characters of the list when no room is given (a fact has at most 300, a member at most 50).
MAX_LIST_CHARS = 6000


async def list_facts(
    members: MemberMemory, space: str, member: str, offset: int, room: ResultRoom
) -> str:
    """The member's facts, then the ones others shared, from the `offset`-th on, as many as
    fit `room`."""
    facts = await members.facts_for_turn(space, member)
    lines = [f"- {fact.fact}" for fact in facts.own]
    lines += [f"- {fact.member_name or fact.member_id}: {fact.fact}" for fact in facts.shared]
    if not lines:
        return "Nothing is kept about this member."
    start = max(0, offset)
    lines = lines[start:]
    if not lines:
        return "No more facts."

    def render(count: int) -> str:
        left = len(lines) - count
        more = f"\n[{left} more: call member_facts with offset={start + count}]" if left else ""
        return "Facts kept about this member:\n" + "\n".join(lines[:count]) + more

    count = longest_fit(room, len(lines), render)
    if not count:
        raise ToolError("No room is left in the context window for the facts.", as_json=True)
    return render(count)


def not_saved_text(exc: UserFacingError) -> str:
    """What the model is told when `remember` saved nothing: why, and what the member can do."""
    if isinstance(exc, MemoryOffError):
        return (
            "Not saved: this member switched their memory off here, so nothing is saved about "
            "them; they can switch it on with /memory me on."
        )
    if isinstance(exc, MemoryFullError):
        return (
            "Not saved: this member already has the most facts kept about a member; they can "
            "forget some with /memory me forget."
        )
    return f"Not saved: {exc}"


def _remember_label(arguments: dict[str, Any]) -> str:
    return f"remember: {short_text(arguments.get('fact', ''))}"


def register_member_tools(registry: ToolRegistry, members: MemberMemory) -> None:
    """Offer remember and member_facts (member memory of the conversation's space)."""

    async def member_facts(
        offset: int = 0,
        *,
        space_id: str | None = None,
        member_id: str | None = None,
        result_room: ResultRoom | None = None,
    ) -> str:
        """List every fact kept about the person you are talking to (and those others shared).

        Args:
            offset: Where to go on, as the previous list says.
        """
        if not space_id or not member_id:
            raise ToolError("The speaking member is not known here.", as_json=True)
        room = room_for(result_room, MAX_LIST_CHARS)
        return await list_facts(members, space_id, member_id, offset, room)

    async def remember(
        fact: str,
        *,
        space_id: str | None = None,
        member_id: str | None = None,
        member_name: str | None = None,
        session_id: str | None = None,
        message_id: int | None = None,
    ) -> ToolResult:
        """Keep a fact about the person you are talking to, for their later conversations.

        Use it when they tell you something lasting about themselves they would want you to
        know next time (a name, a preference, a plan); not for passing remarks.

        Args:
            fact: The fact in one short sentence, e.g. "Their cat is called Mochi."
        """
        if not space_id or not member_id:
            raise ToolError(_NOBODY, as_json=True)
        try:
            kept = await members.remember(
                space_id,
                member_id,
                fact,
                "tool",
                member_name=member_name or "",
                session_id=session_id,
                message_id=message_id,
            )
        except UserFacingError as exc:
            raise ToolError(not_saved_text(exc), as_json=True) from None
        receipt = RememberedEvent(kept.id, kept.fact, True)
        return ToolResult(f"Remembered (fact #{kept.id}): {kept.fact}", events=(receipt,))

    registry.register(
        remember, name=REMEMBER_TOOL, display=ToolDisplay(REMEMBER_ICON, _remember_label)
    )
    registry.register(member_facts, display=ToolDisplay(REMEMBER_ICON, lambda _: "member_facts"))
