"""How one prompt budget is shared: recent exchanges first, then the memory layers, then the
older conversation.

All figures are estimated tokens (bot/chat/budget/tokens.py). Order of priority:

1. The system prompt (always; it is never cut).
2. The newest MIN_RECENT_EXCHANGES exchanges, whole — as long as they take at most
   RECENT_MAX_SHARE of what the system prompt leaves. The current exchange (this turn's
   message) always counts, up to that share when it alone is larger: the builder cuts it to
   what the layers leave, which is at least that much.
3. The layers, in seed 002's order, each up to its demand (what it takes at the seed's limits).
   When the room left is smaller than the sum of the demands, every layer gets the same
   fraction of its demand (a demand larger than the whole room counts as the room, so one huge
   file cannot squeeze every other layer to nothing).
4. The rest of the conversation: everything the layers do not take.

When tools are offered, one page of tool result (TOOL_RESERVE_TOKENS) is kept out of the layers
and the older conversation, as long as it is at most TOOL_RESERVE_MAX_SHARE of the room step 2
leaves: the model can then read on where a layer was cut. Otherwise nothing is kept for tools,
and they are offered only if the prompt happens to leave a page free.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

# The answer's reserve is also sent to the server as the model's own limit (bot.llm.answer_limits).
from bot.llm.answer_limits import ANSWER_RESERVE_SHARE, MIN_ANSWER_RESERVE, answer_reserve

MIN_PROMPT_BUDGET = 256
# The last exchanges the model always sees whole: the current message and the two before it is
# enough to resolve "that", "the second one", "try again"; older talk comes after the layers.
MIN_RECENT_EXCHANGES = 3
# …but never more than half of the room, so a long paste cannot crowd out every layer.
RECENT_MAX_SHARE = 0.5
# One reasonable page of a tool result, in estimated tokens: scrape_url's 4,000-character page
# of English, or 1,000 characters of Japanese. Tools are offered, and a call runs, only while a
# result this large still fits the window.
PAGE_TOKENS = 1000
# What the model's next call may add before its result: its text and the call's arguments
# (a continuation token is ~300 characters).
CALL_RESERVE_TOKENS = 160
# Kept free for tools in the first call: the call, the result's head and one page.
TOOL_RESERVE_TOKENS = PAGE_TOKENS + CALL_RESERVE_TOKENS + 60
TOOL_RESERVE_MAX_SHARE = 0.5
# What this turn's tool exchange may take of the room the recent exchanges leave, once it has
# read more than a page: the layers and the older conversation give way to it up to here.
READING_MAX_SHARE = 0.6

__all__ = [
    "ANSWER_RESERVE_SHARE",
    "MIN_ANSWER_RESERVE",
    "Allocation",
    "allocate",
    "answer_reserve",
    "prompt_budget",
]


def prompt_budget(window: int, tool_tokens: int, token_factor: float = 1.0) -> int:
    """Estimated tokens the prompt's messages may use.

    `window` is in the model's real tokens and `tool_tokens` in estimated tokens; the factor
    (real tokens per estimated token) converts once: (window − reserve − tools·f) / f.
    """
    factor = token_factor if token_factor > 0 else 1.0
    real = window - answer_reserve(window) - tool_tokens * factor
    return max(MIN_PROMPT_BUDGET, int(real / factor))


@dataclass(frozen=True)
class Allocation:
    """Tokens for each part of the prompt, decided before anything is rendered."""

    budget: int
    system: int
    recent_exchanges: int
    recent_tokens: int
    demands: dict[str, int] = field(default_factory=dict)
    layers: dict[str, int] = field(default_factory=dict)
    conversation: int = 0
    # Kept free for this turn's first tool result.
    tool_reserve: int = 0

    @property
    def shrunk(self) -> bool:
        """True when some layer gets less than its demand."""
        return any(self.layers[name] < demand for name, demand in self.demands.items())


def allocate(
    budget: int,
    system: int,
    exchanges: Sequence[int],
    demands: Mapping[str, int],
    *,
    min_exchanges: int = MIN_RECENT_EXCHANGES,
    tools: bool = False,
    reading: int = 0,
) -> Allocation:
    """Share `budget` between the system prompt, the conversation and the layers.

    `exchanges` are the costs of the conversation's exchanges, oldest first (the last one is
    this turn's); `demands` maps each layer, in layer order, to its cost at the seed's limits;
    with `tools`, a page for a tool result is kept free when the room allows one; `reading` is
    what this turn's tool exchange needs (kept free up to READING_MAX_SHARE of the room).
    """
    available = max(0, budget - system)
    cap = int(available * RECENT_MAX_SHARE)
    recent_tokens = 0
    kept = 0
    for cost in reversed(exchanges):
        if kept >= min_exchanges:
            break
        if kept == 0:
            recent_tokens = min(cost, cap)
        elif recent_tokens + cost > cap:
            break
        else:
            recent_tokens += cost
        kept += 1
    room = max(0, available - recent_tokens)
    reserve = _tool_reserve(room, tools, reading)
    room -= reserve
    wanted = {name: max(0, min(demand, room)) for name, demand in demands.items()}
    total = sum(wanted.values())
    if total <= room:
        layers = dict(wanted)
    else:
        layers = {name: demand * room // total for name, demand in wanted.items()}
    return Allocation(
        budget=budget,
        system=system,
        recent_exchanges=kept,
        recent_tokens=recent_tokens,
        demands={name: max(0, demand) for name, demand in demands.items()},
        layers=layers,
        conversation=available - sum(layers.values()) - reserve,
        tool_reserve=reserve,
    )


def _tool_reserve(room: int, tools: bool, reading: int) -> int:
    """Tokens kept free for tool results: a page when tools are offered, more for a turn that
    has read more, within READING_MAX_SHARE of `room`."""
    fits = room * TOOL_RESERVE_MAX_SHARE >= TOOL_RESERVE_TOKENS
    page = TOOL_RESERVE_TOKENS if tools and fits else 0
    return max(page, min(reading, int(room * READING_MAX_SHARE)))
