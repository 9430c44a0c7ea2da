"""Asking a member before a tool with side effects runs: the question, the verdict, who asks.

The engine asks through the `Approver` its front end put on the turn (Discord posts buttons,
the terminal asks on its input); a turn without one cannot ask anybody.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

# allowed / denied: the member decided; timeout: no answer in time; unasked: nobody can be
# asked where the turn runs (the admin chat), so the call is refused.
Verdict = Literal["allowed", "denied", "timeout", "unasked"]
VERDICTS: tuple[Verdict, ...] = ("allowed", "denied", "timeout", "unasked")


@dataclass(frozen=True)
class ApprovalAsk:
    """One call waiting for its member's approval: the tool, how it is shown, who may decide."""

    tool: str
    label: str
    detail: str
    member_id: str | None
    member_name: str | None
    timeout: float
    language: str


@dataclass(frozen=True)
class Decision:
    """What became of a question: the verdict and who gave it (a user id; None without one)."""

    verdict: Verdict
    decided_by: str | None = None

    @property
    def allowed(self) -> bool:
        """Whether the call may run."""
        return self.verdict == "allowed"


class Approver(Protocol):
    """Asks the member whether one call may run; returns within `ask.timeout` seconds."""

    async def __call__(self, ask: ApprovalAsk) -> Decision:
        """The member's decision (a timeout when they gave none in time)."""
        ...
