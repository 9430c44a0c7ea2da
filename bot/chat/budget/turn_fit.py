"""This turn's tool results fitted into the prompt budget before every model call (pure).

Everything else in the request (system prompt, layers, conversation, the assistant's tool calls,
notices) is fixed; only the bodies of tool results are shortened. Earlier rounds give way first,
evenly, each to a digest of its key lines (bot/chat/budget/digest.py), then the newest round, whose
body keeps its start and ends with a marker naming the call that reads on exactly where it was
cut. In a request that offers no tools, the markers say only what was left out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from bot.chat.budget.digest import digest
from bot.chat.budget.tokens import message_tokens

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
    # Ends a cut body (or a digest) in a request that offers no tools: no call is suggested.
    closed_tail: str = ""
    # Ends a digest of the body in a request that offers tools.
    digest_tail: str = ""
    # The tail of a body cut after `keep` characters that names the call reading on from there.
    resume: Callable[[int], str] | None = field(default=None, compare=False)
    # The body was cut when the result arrived: `footer` is the tail that says so.
    precut: bool = False

    @property
    def text(self) -> str:
        """The whole content."""
        return self.head + self.body + self.footer

    def whole(self, *, closed: bool = False) -> str:
        """The whole content, a cut made on arrival marked without a call when `closed`."""
        if closed and self.precut and self.closed_tail:
            return self.head + self.body + self.closed_tail
        return self.text

    def cut(self, keep: int, *, closed: bool = False) -> str:
        """The content with at most `keep` characters of body; a cut body ends with its tail."""
        if keep >= len(self.body):
            return self.whole(closed=closed)
        keep = max(0, keep)
        return self.head + self.body[:keep] + self.tail_at(keep, closed=closed)

    def tail_at(self, keep: int, *, closed: bool = False) -> str:
        """The marker ending the body cut after `keep` characters."""
        if closed and self.closed_tail:
            return self.closed_tail
        if self.resume is not None and not closed:
            return self.resume(keep)
        return self.cut_tail

    def digested(self, keep: int, *, closed: bool = False) -> str:
        """The content with its body replaced by a digest of at most `keep` characters."""
        if keep >= len(self.body):
            return self.whole(closed=closed)
        tail = self.closed_tail if closed else self.digest_tail
        if not tail:
            return self.cut(keep, closed=closed)
        return self.head + digest(self.body, max(0, keep)) + tail


@dataclass(frozen=True)
class FittedTools:
    """The contents to send for this turn's tool messages, in order, and their cost."""

    contents: list[str]
    tokens: int
    shortened: int


def content_tokens(content: str) -> int:
    """Estimated tokens of a tool message carrying `content`."""
    return message_tokens({"role": "tool", "content": content})


def fit_tool_texts(
    items: Sequence[ToolText], fixed_tokens: int, budget: int, *, closed: bool = False
) -> FittedTools | None:
    """Contents so that `fixed_tokens` + the tool messages stay within `budget`, or None.

    Whole when they fit; else the earlier rounds' bodies become digests of one common length
    (the longest that fits, so short results stay whole); if that is not enough, the earlier
    rounds keep only their markers and the newest round is cut the same way. None when even
    the shortest forms exceed the budget. `closed`: the request offers no tools.
    """
    room = budget - fixed_tokens
    if not items:
        return FittedTools([], 0, 0) if room >= 0 else None
    newest = max(item.round for item in items)
    forms = [
        _Form(item, item.round < newest, closed, content_tokens(item.whole(closed=closed)))
        for item in items
    ]
    whole = [form.whole for form in forms]
    if sum(whole) <= room:
        return FittedTools([item.whole(closed=closed) for item in items], sum(whole), 0)
    earlier = [index for index, item in enumerate(items) if item.round < newest]
    latest = [index for index, item in enumerate(items) if item.round == newest]
    keeps = dict.fromkeys(range(len(items)), _WHOLE)
    keep = _longest_keep(forms, earlier, room - sum(whole[index] for index in latest))
    if keep is None:
        keeps.update(dict.fromkeys(earlier, 0))
        floor = sum(forms[index].cost(0) for index in earlier)
        keep = _longest_keep(forms, latest, room - floor)
        if keep is None:
            return None
        keeps.update(dict.fromkeys(latest, keep))
    else:
        keeps.update(dict.fromkeys(earlier, keep))
    contents: list[str] = []
    tokens = 0
    shortened = 0
    for index, form in enumerate(forms):
        content = form.render(keeps[index])
        contents.append(content)
        tokens += content_tokens(content)
        shortened += int(content != form.item.whole(closed=closed))
    return FittedTools(contents, tokens, shortened)


@dataclass(frozen=True)
class _Form:
    """How one item is shortened in this request: a digest (earlier rounds) or a cut."""

    item: ToolText
    digested: bool
    closed: bool
    whole: int

    def shortened(self, keep: int) -> str:
        if self.digested:
            return self.item.digested(keep, closed=self.closed)
        return self.item.cut(keep, closed=self.closed)

    def render(self, keep: int) -> str:
        """The shortened form, unless it would cost as much as the whole text."""
        content = self.shortened(keep)
        return (
            content if content_tokens(content) < self.whole else self.item.whole(closed=self.closed)
        )

    def cost(self, keep: int) -> int:
        # The cheaper of cut and whole: keeps the cost monotonic in `keep` for the search below.
        return min(self.whole, content_tokens(self.shortened(keep)))


def _longest_keep(forms: Sequence[_Form], group: Sequence[int], room: int) -> int | None:
    """The longest common body length for `group` whose cost fits `room`, or None."""

    def cost(keep: int) -> int:
        return sum(forms[index].cost(keep) for index in group)

    if cost(0) > room:
        return None
    low, high = 0, max((len(forms[index].item.body) for index in group), default=0)
    while low < high:
        middle = (low + high + 1) // 2
        if cost(middle) <= room:
            low = middle
        else:
            high = middle - 1
    return low
