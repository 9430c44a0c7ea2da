"""Text for Discord, without discord: 2,000-character pages, fences, tool lines, sources,
receipts.

Discord's Markdown closes a code block at the next ``` anywhere (not only at line starts), so the
fence state here is the parity of ``` occurrences, exactly as Discord renders it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from bot.prompts.ui_text import UiText
from bot.tools.member_tools import REMEMBER_ICON
from bot.turn.events import RememberedEvent

MESSAGE_LIMIT = 2000
MIN_LIMIT = 100
FENCE = "```"
MAX_TOOL_LINES = 5
MAX_SOURCES = 10
RECEIPT_FACT_CHARS = 120
THREAD_NAME_LIMIT = 100

_FENCE_RE = re.compile(re.escape(FENCE))
_LANG_RE = re.compile(r"[A-Za-z0-9_+\-.#]{1,20}")
_MENTION_RE = re.compile(r"<@!?(\d+)>")
_CUSTOM_EMOJI_RE = re.compile(r"<a?:(\w+):\d+>")


# --------------------------------------------------------------------------- fences and pages


def _fence_spans(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _FENCE_RE.finditer(text)]


def _opener(spans: Sequence[tuple[int, int]], position: int) -> int | None:
    opener: int | None = None
    for start, end in spans:
        if end > position:
            break
        opener = None if opener is not None else start
    return opener


def open_fence_at(text: str, position: int) -> int | None:
    """Start index of the ``` that is still open at `position`, or None outside code blocks."""
    return _opener(_fence_spans(text[: position + len(FENCE)]), position)


def _fence_language(text: str, opener: int) -> str:
    line = text[opener + len(FENCE) :].split("\n", 1)[0].strip()
    return line if _LANG_RE.fullmatch(line) else ""


def _closing(head: str) -> str:
    return FENCE if head.endswith("\n") else "\n" + FENCE


def close_open_fence(text: str) -> str:
    """`text` with a closing ``` appended when it ends inside a code block."""
    if open_fence_at(text, len(text)) is None:
        return text
    return text + _closing(text)


def fits(text: str, limit: int = MESSAGE_LIMIT) -> bool:
    """True when `text`, with an open code block closed, is at most `limit` characters."""
    if len(text) + len(FENCE) + 1 <= limit:
        return True  # closing a fence adds at most "\n```": no need to look for fences
    return len(close_open_fence(text)) <= limit


@dataclass(frozen=True)
class Chunk:
    """One page: `body` is a slice of the original text; prefix/suffix reopen/close a fence."""

    body: str
    prefix: str = ""
    suffix: str = ""

    def __str__(self) -> str:
        return f"{self.prefix}{self.body}{self.suffix}"


def _inside_token(spans: Sequence[tuple[int, int]], position: int) -> bool:
    return any(start < position < end for start, end in spans)


def _best_cut(text: str, limit: int) -> int:
    """Where to cut `text` (longer than a page) so that the head, closed if needed, fits."""
    window = text[: limit + len(FENCE)]
    spans = _fence_spans(window)

    def valid(position: int) -> bool:
        if position <= 0 or position > limit or _inside_token(spans, position):
            return False
        opener = _opener(spans, position)
        if opener is None:
            return True
        # Cutting right after an opener line would leave an empty block behind.
        newline = window.find("\n", opener)
        first_content = opener + len(FENCE) if newline == -1 else newline + 1
        if position <= first_content:
            return False
        return position + len(_closing(window[:position])) <= limit

    head = window[: limit + 1]
    paragraph = [m.end() for m in re.finditer(r"\n\n+", head)]
    line = [m.end() for m in re.finditer(r"\n", head)]
    space = [m.end() for m in re.finditer(r"[ \t]+", head)]
    outside = [p for p in paragraph if _opener(spans, p) is None]
    line_out = [p for p in line if _opener(spans, p) is None]
    line_in = [p for p in line if _opener(spans, p) is not None]
    least = limit // 2
    for group in (outside, line_out, line_in, space):
        good = [p for p in group if p >= least and valid(p)]
        if good:
            return max(good)
    hard = limit
    while hard > 1 and not valid(hard):
        hard -= 1
    return hard if valid(hard) else limit


def split_once(text: str, limit: int = MESSAGE_LIMIT) -> tuple[Chunk, str]:
    """The first page of `text` and the rest (which starts by reopening a cut code block)."""
    if limit < MIN_LIMIT:
        raise ValueError(f"limit must be at least {MIN_LIMIT}")
    if fits(text, limit):
        opener = open_fence_at(text, len(text))
        suffix = "" if opener is None else _closing(text)
        return Chunk(text, suffix=suffix), ""
    cut = _best_cut(text, limit)
    head, rest = text[:cut], text[cut:]
    opener = open_fence_at(text, cut)
    if opener is None:
        return Chunk(head), rest
    reopen = f"{FENCE}{_fence_language(text, opener)}\n"
    return Chunk(head, suffix=_closing(head)), reopen + rest


def split_chunks(text: str, limit: int = MESSAGE_LIMIT) -> list[Chunk]:
    """Pages of at most `limit` characters, cut at paragraph/line boundaries, fences balanced."""
    chunks: list[Chunk] = []
    rest = text
    carried = ""
    while True:
        chunk, remainder = split_once(rest, limit)
        # `rest` starts with the reopen marker carried over, which is not original text.
        chunks.append(Chunk(chunk.body[len(carried) :], prefix=carried, suffix=chunk.suffix))
        if not remainder:
            return chunks
        original_tail = len(rest) - len(chunk.body)
        carried = remainder[: len(remainder) - original_tail]
        rest = remainder


def split_message(text: str, limit: int = MESSAGE_LIMIT) -> list[str]:
    """`text` as Discord messages: each at most `limit` characters, code blocks intact."""
    pages = [str(chunk).strip("\n") for chunk in split_chunks(text, limit)]
    return [page for page in pages if page.strip()]


# --------------------------------------------------------------------------- small renderers


def _one_line(text: str, limit: int) -> str:
    value = " ".join(str(text).split()).replace("`", "'")
    return value if len(value) <= limit else value[: limit - 1] + "…"


def tool_line(icon: str, label: str, status: str) -> str:
    """The activity line of one tool call, e.g. `-# 🔎 web_search "kyoto" … ✓`."""
    text = _one_line(label, 120)
    mark = {"running": "…", "done": "… ✓", "error": "… ✗"}.get(status, "…")
    return f"-# {icon} {text} {mark}"


def _safe_url(url: str) -> str | None:
    url = url.strip()
    if not url.startswith(("https://", "http://")) or any(c in url for c in "<> \t\n"):
        return None
    return url


def render_sources(sources: Iterable[Mapping[str, str]], header: str) -> str:
    """A numbered "Sources" block; `<url>` so Discord shows no previews."""
    lines: list[str] = []
    seen: set[str] = set()
    for source in sources:
        url = _safe_url(str(source.get("url", "")))
        if url is None or url in seen:
            continue
        seen.add(url)
        title = _one_line(re.sub(r"[\[\]<>*_~|]", "", str(source.get("title", ""))), 90)
        label = f"{title} — " if title and title != url else ""
        lines.append(f"{len(lines) + 1}. {label}<{url}>")
        if len(lines) == MAX_SOURCES:
            break
    if not lines:
        return ""
    return f"**{header}**\n" + "\n".join(lines)


def strip_bot_mention(text: str, bot_id: int, role_id: int | None = None) -> str:
    """The message text without the bot's own user (or managed role) mentions."""
    text = re.sub(rf"<@!?{bot_id}>", "", text)
    if role_id is not None:
        text = text.replace(f"<@&{role_id}>", "")
    return text.strip()


def readable_mentions(text: str, names: Mapping[int, str]) -> str:
    """User mentions as `@name` (unknown ids stay as they are), custom emoji as `:name:`."""

    def user(match: re.Match[str]) -> str:
        name = names.get(int(match.group(1)))
        return f"@{name}" if name else match.group(0)

    return _CUSTOM_EMOJI_RE.sub(r":\1:", _MENTION_RE.sub(user, text))


def thread_name(text: str, fallback: str) -> str:
    """A thread title from the first words of a message (at most 100 characters)."""
    plain = _MENTION_RE.sub("", text)
    plain = re.sub(r"```.*?(```|$)", " ", plain, flags=re.DOTALL)
    plain = re.sub(r"[*_~`>|#\[\]]", "", plain)
    plain = " ".join(plain.split())
    if not plain:
        return fallback[:THREAD_NAME_LIMIT]
    limit = 80
    if len(plain) <= limit:
        return plain
    cut = plain.rfind(" ", 0, limit)
    return plain[: cut if cut > limit // 2 else limit].rstrip() + "…"


# --------------------------------------------------------------------------- one streamed reply


@dataclass
class _Tool:
    icon: str
    label: str
    status: str


class ReplyDraft:
    """The pages of one streamed reply: sealed full pages, the growing tail, tool lines.

    Text is only appended; a page is sealed (never changes again) once the text outgrows it,
    so earlier messages are not rewritten while later ones stream.
    """

    def __init__(self, limit: int = MESSAGE_LIMIT) -> None:
        if limit < MIN_LIMIT:
            raise ValueError(f"limit must be at least {MIN_LIMIT}")
        self.limit = limit
        self._sealed: list[str] = []
        self._tail = ""
        self._tools: dict[str, _Tool] = {}
        self._finished = False

    @property
    def has_text(self) -> bool:
        """True once any text (not only tool lines) is in the draft."""
        return bool(self._sealed) or bool(self._tail.strip())

    @property
    def finished(self) -> bool:
        """True after `finish()`."""
        return self._finished

    def add_text(self, text: str) -> None:
        """Append streamed answer text."""
        if self._finished or not text:
            return
        self._tail += text
        self._seal()

    def tool(self, call_id: str, icon: str, label: str, status: str) -> None:
        """Record a tool call's state (running → done/error)."""
        self._tools[call_id] = _Tool(icon, label, status)

    def finish(self, *, notes: str = "", sources: str = "", error: str = "") -> None:
        """End the reply: tool lines go; the notes (receipts), the sources block and any error
        line are appended."""
        if self._finished:
            return
        text = close_open_fence(self._tail).rstrip()
        for extra in (notes, sources, error):
            if extra:
                text = f"{text}\n\n{extra}" if text.strip() else extra
        self._tail = text
        self._tools.clear()
        self._finished = True
        self._seal()

    def pages(self) -> list[str]:
        """What the messages should show now, in order."""
        current = close_open_fence(self._tail).strip("\n").rstrip()
        pages = [page.strip("\n") for page in self._sealed]
        if self._tools and not self._finished:
            status = "\n".join(
                tool_line(t.icon, t.label, t.status)
                for t in list(self._tools.values())[-MAX_TOOL_LINES:]
            )
            if not current.strip():
                current = status
            elif len(current) + 2 + len(status) <= self.limit:
                current = f"{current}\n\n{status}"
            else:
                pages.append(current)
                current = status
        if current.strip():
            pages.append(current)
        return [page for page in pages if page.strip()]

    def _seal(self) -> None:
        while not fits(self._tail, self.limit):
            chunk, rest = split_once(self._tail, self.limit)
            self._sealed.append(str(chunk))
            self._tail = rest


# --------------------------------------------------------------------------- user-facing text


def receipt_line(event: RememberedEvent, ui: UiText) -> str:
    """A small line telling the member a fact was remembered (and how to forget it) or not (and
    why), e.g. `-# 🧠 Remembered: … · `/memory me forget 12` to forget it`."""
    if event.saved and event.fact_id is not None:
        text = ui.member_remembered.format(
            fact=_one_line(event.fact, RECEIPT_FACT_CHARS), id=event.fact_id
        )
    else:
        text = ui.not_remembered(event.reason)
    return f"-# {REMEMBER_ICON} {text}"
