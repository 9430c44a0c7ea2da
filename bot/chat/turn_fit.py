"""This turn's tool results fitted into the prompt budget before every model call (pure).

Everything else in the request (system prompt, layers, conversation, the assistant's tool calls,
notices) is fixed; only the bodies of tool results are shortened. Earlier rounds give way first,
evenly, then the newest round; a shortened body keeps its start and ends with the result's
`cut_tail` (a marker saying how to read it again, and the page-info footer that does so).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.chat.tokens import message_tokens

# Stands for "no limit" in the per-item body lengths.
_WHOLE = 1 << 62


@dataclass(frozen=True)
class ToolText:
    """One tool message of this turn in parts; only `body` is ever cut."""

    head: str
    body: str = ""
    footer: str = ""
    cut_tail: str = ""
    round: int = 0

    @property
    def text(self) -> str:
        """The whole content."""
        return self.head + self.body + self.footer

    def cut(self, keep: int) -> str:
        """The content with at most `keep` characters of body; a cut body ends with `cut_tail`."""
        if keep >= len(self.body):
            return self.text
        return self.head + self.body[: max(0, keep)] + self.cut_tail


@dataclass(frozen=True)
class FittedTools:
    """The contents to send for this turn's tool messages, in order, and their cost."""

    contents: list[str]
    tokens: int
    shortened: int


def content_tokens(content: str) -> int:
    """Estimated tokens of a tool message carrying `content`."""
    return message_tokens({"role": "tool", "content": content})


def fit_tool_texts(items: Sequence[ToolText], fixed_tokens: int, budget: int) -> FittedTools | None:
    """Contents so that `fixed_tokens` + the tool messages stay within `budget`, or None.

    Whole when they fit; else the earlier rounds' bodies are cut to one common length (the
    longest that fits, so short results stay whole); if that is not enough, the earlier rounds
    keep only their tails and the newest round is cut the same way. None when even the
    shortest forms exceed the budget.
    """
    room = budget - fixed_tokens
    if not items:
        return FittedTools([], 0, 0) if room >= 0 else None
    whole = [content_tokens(item.text) for item in items]
    if sum(whole) <= room:
        return FittedTools([item.text for item in items], sum(whole), 0)
    newest = max(item.round for item in items)
    earlier = [index for index, item in enumerate(items) if item.round < newest]
    latest = [index for index, item in enumerate(items) if item.round == newest]
    keeps = dict.fromkeys(range(len(items)), _WHOLE)
    keep = _longest_keep(items, whole, earlier, room - sum(whole[index] for index in latest))
    if keep is None:
        keeps.update(dict.fromkeys(earlier, 0))
        floor = sum(_cost(items[index], whole[index], 0) for index in earlier)
        keep = _longest_keep(items, whole, latest, room - floor)
        if keep is None:
            return None
        keeps.update(dict.fromkeys(latest, keep))
    else:
        keeps.update(dict.fromkeys(earlier, keep))
    contents: list[str] = []
    tokens = 0
    shortened = 0
    for index, item in enumerate(items):
        content = _render(item, whole[index], keeps[index])
        contents.append(content)
        tokens += content_tokens(content)
        shortened += int(content != item.text)
    return FittedTools(contents, tokens, shortened)


def _render(item: ToolText, whole_tokens: int, keep: int) -> str:
    """The cut form, unless it would cost as much as the whole text."""
    content = item.cut(keep)
    return content if content_tokens(content) < whole_tokens else item.text


def _cost(item: ToolText, whole_tokens: int, keep: int) -> int:
    # The cheaper of cut and whole: keeps the cost monotonic in `keep` for the search below.
    return min(whole_tokens, content_tokens(item.cut(keep)))


def _longest_keep(
    items: Sequence[ToolText], whole: Sequence[int], group: Sequence[int], room: int
) -> int | None:
    """The longest common body length for `group` whose cost fits `room`, or None."""

    def cost(keep: int) -> int:
        return sum(_cost(items[index], whole[index], keep) for index in group)

    if cost(0) > room:
        return None
    low, high = 0, max((len(items[index].body) for index in group), default=0)
    while low < high:
        middle = (low + high + 1) // 2
        if cost(middle) <= room:
            low = middle
        else:
            high = middle - 1
    return low
