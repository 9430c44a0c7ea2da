"""One turn's messages: the built context plus this turn's tool exchange, fitted into one
budget before every model call, and the room that budget leaves for the next tool result.

The room counts earlier rounds' results at their condensed form (head, cut marker and the
token that reads them again: what `fit_tool_texts` shortens them to before anything is cut
away) and the current round's results whole, so a result fitted to it reaches the model whole.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

from bot.chat.allocation import CALL_RESERVE_TOKENS, PAGE_TOKENS
from bot.chat.tokens import message_tokens
from bot.chat.tool_budget import ToolBudget
from bot.chat.turn_fit import ToolText, content_tokens, fit_tool_texts
from bot.llm.litellm_backend import arguments_text
from bot.llm.types import Message, ToolCall
from bot.tools.room import ResultRoom

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolStep:
    """A tool message of this turn: the call it answers and its content in fittable parts."""

    call: ToolCall
    text: ToolText


def condensed_tokens(item: ToolText) -> int:
    """Tokens of `item` at its shortest form: its head and cut tail (or whole, if smaller)."""
    return min(content_tokens(item.text), content_tokens(item.cut(0)))


def fit_to_room(item: ToolText, room: int) -> ToolText:
    """`item` whole when its message fits `room` tokens, else its body cut (marked) to fit.

    The cut is kept: the body ends with the item's cut tail, which later condensing keeps.
    """
    if content_tokens(item.text) <= room:
        return item
    low, high = 0, len(item.body)
    while low < high:
        middle = (low + high + 1) // 2
        if content_tokens(item.cut(middle)) <= room:
            low = middle
        else:
            high = middle - 1
    return replace(item, body=item.body[:low], footer=item.cut_tail)


class TurnMessages:
    """The context plus this turn's steps, fitted into one budget before every model call."""

    def __init__(self, context: list[Message], budget: int) -> None:
        self.context = context
        self.budget = budget
        self.steps: list[Message | ToolStep] = []
        # The one notice that says tools are over for this turn has been given.
        self.told = False

    def _fixed_tokens(self) -> int:
        return sum(message_tokens(message) for message in self.context) + sum(
            message_tokens(step) for step in self.steps if not isinstance(step, ToolStep)
        )

    def _tools(self) -> list[ToolText]:
        return [step.text for step in self.steps if isinstance(step, ToolStep)]

    def room(self, round_number: int) -> int:
        """Tokens a further tool message of round `round_number` may take, every earlier
        round condensed and this round's results whole."""
        spent = self._fixed_tokens()
        for item in self._tools():
            spent += (
                content_tokens(item.text) if item.round == round_number else condensed_tokens(item)
            )
        return self.budget - spent

    def room_for_tools(self, next_round: int) -> bool:
        """Whether the next model call may be offered tools: a page still fits after it."""
        return self.room(next_round) - CALL_RESERVE_TOKENS >= PAGE_TOKENS

    def tell(self, notice: Message) -> None:
        """Say once that tools are over for this turn (later calls are not told again)."""
        if not self.told:
            self.told = True
            self.steps.append(notice)

    def request(self) -> list[Message] | None:
        """The messages of the next model call within the budget, or None if they cannot fit."""
        fixed = self._fixed_tokens()
        tools = self._tools()
        if not tools:
            return self.without_tools()
        fitted = fit_tool_texts(tools, fixed, self.budget)
        if fitted is None:
            return None
        if fitted.shortened:
            log.info(
                "condensed %d of %d tool results to fit the window (%d + %d of %d tokens)",
                fitted.shortened,
                len(tools),
                fixed,
                fitted.tokens,
                self.budget,
            )
        contents = iter(fitted.contents)
        messages = list(self.context)
        for step in self.steps:
            if isinstance(step, ToolStep):
                messages.append(tool_message(step.call, next(contents)))
            else:
                messages.append(step)
        return messages

    def stop(self, notice: Message) -> None:
        """Tools end here: this turn's tool exchange does not fit, so the model answers without."""
        log.warning("this turn's tool results do not fit the window; answering without them")
        self.steps = [notice]
        self.told = True

    def without_tools(self) -> list[Message]:
        """The context and this turn's notices: nothing here can be shortened or dropped."""
        messages = [*self.context, *(step for step in self.steps if isinstance(step, dict))]
        spent = sum(message_tokens(message) for message in messages)
        if spent > self.budget:
            log.warning("the context alone needs %d of %d tokens", spent, self.budget)
        return messages


def withheld(budget: ToolBudget, turn: TurnMessages) -> str | None:
    """Why the next model call is offered no tools (a prompt key), or None when it is."""
    if budget.rounds_exhausted:
        return "tool_rounds_exhausted"
    if budget.chars_exhausted:
        return "tool_budget_exhausted"
    if not turn.room_for_tools(budget.rounds + 1):
        return "tool_window_exhausted"
    return None


def result_room(budget: ToolBudget, limit: int, room: int, head: str) -> ResultRoom:
    """The room handed to a tool: characters within the per-result `limit` and what the turn's
    cap leaves; tokens of the window's `room` left once the message's head is paid for."""
    # Two tokens of slack: estimates of joined texts may round one above their parts' sum.
    tokens = room - content_tokens(head) - 2
    return ResultRoom(min(limit, budget.room), max(0, tokens))


def assistant_message(text: str, calls: Sequence[ToolCall]) -> Message:
    """The model's turn that asked for `calls`, as the protocol wants it repeated."""
    return {
        "role": "assistant",
        "content": text,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": arguments_text(call.arguments)},
            }
            for call in calls
        ],
    }


def tool_message(call: ToolCall, content: str) -> Message:
    """The tool message answering `call`."""
    return {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content}


def notice(text: str) -> Message:
    """A one-sentence instruction to the model from the engine."""
    return {"role": "system", "content": text}
