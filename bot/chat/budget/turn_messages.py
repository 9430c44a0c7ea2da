"""One turn's messages: the built context plus this turn's tool exchange, fitted into one
budget before every model call, and the room that budget leaves for the next tool result.

As the exchange grows, the context gives way to it (the layers and the older conversation
shrink, marked, down to the floor `allocate` keeps for them); a request that offers no tools
also has the room of the schemas it does not carry. The room counts the context at that floor,
earlier rounds' results at their condensed form (head and marker: what `fit_tool_texts`
shortens them to before anything is cut away) and the current round's results whole, so a
result fitted to it reaches the model whole.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from bot.chat.budget.allocation import CALL_RESERVE_TOKENS, PAGE_TOKENS
from bot.chat.budget.tokens import message_tokens
from bot.chat.budget.tool_budget import ToolBudget
from bot.chat.budget.turn_fit import ToolText, content_tokens, fit_tool_texts
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
    """Tokens of `item` at its shortest form: its head and marker (or whole, if smaller); the
    larger of its cut and digest forms, as an earlier round shrinks to its digest."""
    shortest = max(content_tokens(item.cut(0)), content_tokens(item.digested(0)))
    return min(content_tokens(item.text), shortest)


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
    return replace(item, body=item.body[:low], footer=item.tail_at(low), precut=True)


Refit = Callable[[int], list[Message]]


class TurnMessages:
    """The context plus this turn's steps, fitted into one budget before every model call.

    `refit(tokens)` renders the context again with `tokens` kept free for the tool exchange;
    `tool_tokens` is what the tool schemas take of `budget` when they are sent.
    """

    def __init__(
        self,
        context: list[Message],
        budget: int,
        *,
        refit: Refit | None = None,
        tool_tokens: int = 0,
    ) -> None:
        self.context = context
        self.budget = budget
        self.steps: list[Message | ToolStep] = []
        # The one notice that says tools are over for this turn has been given.
        self.told = False
        self._refit = refit
        self._tool_tokens = tool_tokens
        self._floor: list[Message] | None = None

    def _context_tokens(self) -> int:
        return sum(message_tokens(message) for message in self.context)

    def _floor_context(self) -> list[Message]:
        """The context once it has given the tool exchange all it may."""
        if self._floor is None:
            floor = self.context if self._refit is None else self._refit(self.budget)
            smaller = sum(message_tokens(m) for m in floor) < self._context_tokens()
            self._floor = floor if smaller else self.context
        return self._floor

    def _floor_tokens(self) -> int:
        return sum(message_tokens(message) for message in self._floor_context())

    def _step_tokens(self) -> int:
        return sum(message_tokens(step) for step in self.steps if not isinstance(step, ToolStep))

    def _tools(self) -> list[ToolText]:
        return [step.text for step in self.steps if isinstance(step, ToolStep)]

    def room(self, round_number: int) -> int:
        """Tokens a further tool message of round `round_number` may take, every earlier
        round condensed and this round's results whole."""
        spent = self._floor_tokens() + self._step_tokens()
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

    def request(self, *, offers_tools: bool = True) -> list[Message] | None:
        """The messages of the next model call within the budget, or None if they cannot fit.

        A call that offers no tools has the room of the schemas too, and its markers name no
        call to make.
        """
        tools = self._tools()
        if not tools:
            return self.without_tools()
        budget = self.budget + (0 if offers_tools else self._tool_tokens)
        exchange = self._step_tokens()
        whole = sum(content_tokens(item.whole(closed=not offers_tools)) for item in tools)
        context = self._context_for(exchange + whole, budget)
        fixed = sum(message_tokens(message) for message in context) + exchange
        fitted = fit_tool_texts(tools, fixed, budget, closed=not offers_tools)
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
        messages = list(context)
        for step in self.steps:
            if isinstance(step, ToolStep):
                messages.append(tool_message(step.call, next(contents)))
            else:
                messages.append(step)
        return messages

    def _context_for(self, exchange: int, budget: int) -> list[Message]:
        """The context, given way to an exchange of `exchange` tokens where it must.

        It gives way once, straight to its floor, and stays there: a model server reuses
        what it computed for the prompt's unchanged start, so the layers change at most once
        a turn rather than at every round.
        """
        if self._context_tokens() + exchange > budget:
            self.context = self._floor_context()
        return self.context

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
