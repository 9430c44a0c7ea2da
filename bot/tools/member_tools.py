"""The remember tool: keep a fact about the member the model is talking to. The space and the
member are injected by the engine, never taken from the model; nothing is saved while the
member has their memory off (the tool says so)."""

from __future__ import annotations

from typing import Any

from bot.errors import ToolError, UserFacingError
from bot.memory.member_memory import MemberMemory
from bot.tools.core import ToolDisplay, ToolRegistry, short_text

REMEMBER_ICON = "🧠"


def register_member_tools(registry: ToolRegistry, members: MemberMemory) -> None:
    """Offer remember (member memory of the conversation's space)."""

    async def remember(
        fact: str,
        *,
        space_id: str | None = None,
        member_id: str | None = None,
        member_name: str | None = None,
        session_id: str | None = None,
    ) -> str:
        """Keep a fact about the person you are talking to, for their later conversations.

        Use it when they tell you something lasting about themselves they would want you to
        know next time (a name, a preference, a plan); not for passing remarks.

        Args:
            fact: The fact in one short sentence, e.g. "Their cat is called Mochi."
        """
        if not space_id or not member_id:
            raise ToolError(
                "Nobody to remember this for: the speaking member is not known here.",
                as_json=True,
            )
        try:
            kept = await members.remember(
                space_id,
                member_id,
                fact,
                "tool",
                member_name=member_name or "",
                session_id=session_id,
            )
        except UserFacingError as exc:
            raise ToolError(str(exc), as_json=True) from None
        return f"Remembered (fact #{kept.id}): {kept.fact}"

    def label(arguments: dict[str, Any]) -> str:
        return f"remember: {short_text(arguments.get('fact', ''))}"

    registry.register(remember, display=ToolDisplay(REMEMBER_ICON, label))
