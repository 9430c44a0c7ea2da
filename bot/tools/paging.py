"""Opaque continuation tokens and the page-info footer of paged tool results.

A token is base64url(JSON) of the cursor, bound to the tool that issued it and stamped with
its issue time (`iat`, seconds since the epoch) so that old tokens can expire.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from bot.tools.room import ResultRoom, longest_fit
from bot.turn.tool_result import ToolResult

TOKEN_VERSION = 2
MAX_TOOL_RESULT_CHARS = 6000
# Seed 000's token lifetime: as long as the document cache keeps a fetched page (doc_cache).
DEFAULT_TOKEN_TTL = 1800
# Checked before decoding so a huge or hostile string costs nothing.
MAX_TOKEN_CHARS = 4096
# Character limit of a room that only limits tokens.
MAX_CHARS_UNBOUNDED = 1 << 62
MAX_OFFSET = 1_000_000_000
MAX_PAGE_INDEX = 1_000_000
MAX_URL_CHARS = 2048
MAX_TITLE_CHARS = 300
DEFAULT_MAX_MATCHED = 10
# recall: the query travels in its token (binding the token to it), cut to this length.
MAX_RECALL_QUERY_CHARS = 200
MAX_RECALL_OFFSET = 1000
MAX_KB_PATH_CHARS = 512
ISSUED_AT = "iat"
MAX_ISSUED_AT = 2**40
# Tokens minted by another process on a slightly different clock are still accepted.
CLOCK_SKEW = 300

PAGE_INFO_MARKER = "---page-info---"
FOOTER_SEPARATOR = f"\n\n{PAGE_INFO_MARKER}\n"
INVALID_CONTINUATION_PREFIX = "Invalid continuation token: "
RESUME_HINT = (
    "Pass the next_token of the previous result unchanged, or call again without "
    "continue_from to start from the beginning."
)
EXPIRED_HINT = "call the tool again without continue_from to start over."

# Footer lines of PDF pages: fixed, language-independent keys with boolean values that tell
# the model the newest token replaces older ones and is all it needs to resume.
PDF_RESUME_META: Mapping[str, bool] = MappingProxyType(
    {
        "token_replaces_previous": True,
        "keep_token_in_final_answer_if_limit_reached": True,
        "resume_with_continue_from_only": True,
    }
)

_TOKEN_RE = re.compile(r"[A-Za-z0-9_-]+={0,2}")
_META_LINE_RE = re.compile(r"[a-z_]+: \S+")


class InvalidTokenError(ValueError):
    """A continuation token that is malformed, forged, or belongs to another tool."""

    def __init__(self, reason: str, *, message: str | None = None) -> None:
        self.reason = reason
        super().__init__(message or f"{INVALID_CONTINUATION_PREFIX}{reason}. {RESUME_HINT}")


class ExpiredTokenError(InvalidTokenError):
    """A well-formed token older than the configured lifetime (or without an issue time)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, message=f"{INVALID_CONTINUATION_PREFIX}{reason}, {EXPIRED_HINT}")


class PageLimitError(ValueError):
    """The fixed parts of a result leave no room for any body text."""


def _check_url(value: Any) -> None:
    if not isinstance(value, str) or not 0 < len(value) <= MAX_URL_CHARS:
        raise InvalidTokenError("field 'url' must be a non-empty string of at most 2048 chars")
    if not value.isascii() or any(ch.isspace() or ord(ch) < 32 for ch in value):
        raise InvalidTokenError("field 'url' contains characters a URL cannot have")


def _http_url(value: Any) -> None:
    _check_url(value)
    if not value.lower().startswith(("http://", "https://")):
        raise InvalidTokenError("field 'url' must be an http(s) URL")


def _pdf_source(value: Any) -> None:
    _check_url(value)
    if value.startswith("attachment:"):
        if not re.fullmatch(r"attachment:[A-Za-z0-9_-]{1,64}", value):
            raise InvalidTokenError("field 'url' is not a valid attachment reference")
        return
    _http_url(value)


def _bounded_int(upper: int) -> Callable[[Any], None]:
    def check(value: Any) -> None:
        # bool is a subclass of int: `type(...) is int` keeps True/False out.
        if type(value) is not int or not 0 <= value <= upper:
            raise InvalidTokenError(f"integer fields must lie between 0 and {upper}")

    return check


def _version(value: Any) -> None:
    if type(value) is not int or value != TOKEN_VERSION:
        raise InvalidTokenError("unsupported token version")


def _file_type(value: Any) -> None:
    if not isinstance(value, str) or not re.fullmatch(r"[a-z]{1,8}", value):
        raise InvalidTokenError("field 'file_type' is not a file type")


def _matched_item(value: Any) -> None:
    if not isinstance(value, dict) or set(value) != {"title", "href"}:
        raise InvalidTokenError("each 'matched' item must hold exactly 'title' and 'href'")
    title = value["title"]
    if not isinstance(title, str) or len(title) > MAX_TITLE_CHARS:
        raise InvalidTokenError("a 'matched' title must be a short string")
    try:
        _http_url(value["href"])
    except InvalidTokenError:
        raise InvalidTokenError("a 'matched' href must be an http(s) URL") from None


def _recall_query(value: Any) -> None:
    if not isinstance(value, str) or not 0 < len(value) <= MAX_RECALL_QUERY_CHARS:
        raise InvalidTokenError("field 'query' must be a non-empty string of at most 200 chars")
    if any(ord(ch) < 32 for ch in value):
        raise InvalidTokenError("field 'query' contains control characters")


def _kb_path(value: Any) -> None:
    if not isinstance(value, str) or not 0 < len(value) <= MAX_KB_PATH_CHARS:
        raise InvalidTokenError("field 'path' must be a non-empty string of at most 512 chars")
    parts = value.split("/")
    if value.startswith("/") or "\\" in value or any(part in ("", ".", "..") for part in parts):
        raise InvalidTokenError("field 'path' is not a path inside the knowledge base")
    if any(ord(ch) < 32 for ch in value) or not value.lower().endswith(".md"):
        raise InvalidTokenError("field 'path' is not a knowledge-base file")


_OFFSET = _bounded_int(MAX_OFFSET)
_PAGE = _bounded_int(MAX_PAGE_INDEX)

_SCHEMAS: dict[str, dict[str, Callable[[Any], None]]] = {
    "scrape_url": {"url": _http_url, "offset": _OFFSET},
    "pdf_to_text": {"url": _pdf_source, "page_index": _PAGE, "page_char_offset": _OFFSET},
    "search_and_fetch": {
        "url": _http_url,
        "offset": _OFFSET,
        "matched": lambda value: None,  # checked with its length limit in parse_token
        "file_idx": _bounded_int(DEFAULT_MAX_MATCHED * 100),
        "file_offset": _OFFSET,
        "pdf_page_index": _PAGE,
        "pdf_page_char_offset": _OFFSET,
        "file_type": _file_type,
    },
    "recall": {"query": _recall_query, "offset": _bounded_int(MAX_RECALL_OFFSET)},
    "read_kb_file": {"path": _kb_path, "offset": _OFFSET},
    "read_knowledge": {"before_id": _bounded_int(MAX_OFFSET)},
}


def _reject_constant(name: str) -> Any:
    raise InvalidTokenError(f"{name} is not allowed")


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise InvalidTokenError("duplicate field")
        result[key] = value
    return result


def _validate(payload: dict[str, Any], tool: str, max_matched: int) -> None:
    schema = _SCHEMAS[tool]
    expected = {"v", "tool", *schema}
    if set(payload) != expected:
        missing = sorted(expected - set(payload))
        extra = sorted(set(payload) - expected)
        detail = "; ".join(
            part
            for part in (
                f"missing {', '.join(missing)}" if missing else "",
                f"unexpected {', '.join(extra)[:80]}" if extra else "",
            )
            if part
        )
        raise InvalidTokenError(f"wrong fields ({detail})")
    for key, check in schema.items():
        check(payload[key])
    if tool == "search_and_fetch":
        matched = payload["matched"]
        if not isinstance(matched, list) or not 0 < len(matched) <= max_matched:
            raise InvalidTokenError(f"'matched' must list 1 to {max_matched} candidates")
        for item in matched:
            _matched_item(item)
        if payload["file_idx"] >= len(matched):
            raise InvalidTokenError("'file_idx' is past the last candidate")
        if payload["url"] != matched[payload["file_idx"]]["href"]:
            raise InvalidTokenError("'url' does not match the current candidate")
        if payload["offset"] != payload["file_offset"]:
            raise InvalidTokenError("'offset' does not match 'file_offset'")


def make_token(tool: str, *, issued_at: int | None = None, **fields: Any) -> str:
    """Encode a cursor as an opaque base64url(JSON) token bound to `tool`, stamped with now."""
    if tool not in _SCHEMAS:
        raise ValueError(f"no token schema for tool {tool!r}")
    payload = {"v": TOKEN_VERSION, "tool": tool, **fields}
    _validate(payload, tool, max(DEFAULT_MAX_MATCHED, len(fields.get("matched") or ())))
    payload[ISSUED_AT] = int(time.time()) if issued_at is None else issued_at
    _issued_at(payload[ISSUED_AT])
    raw = json.dumps(payload, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    token = base64.urlsafe_b64encode(raw.encode("ascii")).decode("ascii").rstrip("=")
    if len(token) > MAX_TOKEN_CHARS:
        raise ValueError(f"token of {len(token)} chars exceeds {MAX_TOKEN_CHARS}")
    return token


def _decode(token: str) -> Any:
    """The JSON value inside a base64url token; any fault raises InvalidTokenError."""
    if not isinstance(token, str):
        raise InvalidTokenError("not a string")
    text = token.strip()
    if not text:
        raise InvalidTokenError("empty")
    if len(text) > MAX_TOKEN_CHARS:
        raise InvalidTokenError("too long")
    if not _TOKEN_RE.fullmatch(text):
        raise InvalidTokenError("not base64url text")
    unpadded = text.rstrip("=")
    if len(unpadded) % 4 == 1 or (text != unpadded and len(text) % 4 != 0):
        raise InvalidTokenError("truncated or badly padded")
    try:
        raw = base64.urlsafe_b64decode(unpadded + "=" * (-len(unpadded) % 4))
        decoded = raw.decode("ascii")
    except (binascii.Error, ValueError):
        raise InvalidTokenError("not base64url text") from None
    try:
        payload = json.loads(
            decoded, parse_constant=_reject_constant, object_pairs_hook=_unique_pairs
        )
    except InvalidTokenError:
        raise
    except (ValueError, RecursionError):
        raise InvalidTokenError("not valid JSON (truncated?)") from None
    return payload


def parse_token(
    token: str,
    tool: str,
    *,
    max_matched: int = DEFAULT_MAX_MATCHED,
    max_age: float = 0,
    now: float | None = None,
) -> dict[str, Any]:
    """Decode and strictly validate a token of `tool`: its cursor fields, without `iat`.

    Any fault raises InvalidTokenError; a token issued more than `max_age` seconds ago (or
    one without an issue time) raises ExpiredTokenError. `max_age` 0 means never expire.
    """
    payload = _decode(token)
    if not isinstance(payload, dict):
        raise InvalidTokenError("not a JSON object")
    if payload.get("tool") != tool:
        if isinstance(payload.get("tool"), str) and payload["tool"] in _SCHEMAS:
            raise InvalidTokenError(f"it was issued by {payload['tool']}, not {tool}")
        raise InvalidTokenError(f"it was not issued by {tool}")
    _version(payload.get("v"))
    stamped = ISSUED_AT in payload
    issued = payload.pop(ISSUED_AT, None)
    _validate(payload, tool, max_matched)
    if stamped:
        _issued_at(issued)
    _check_age(issued, max_age, time.time() if now is None else now)
    return payload


def _issued_at(value: Any) -> None:
    if type(value) is not int or not 0 <= value <= MAX_ISSUED_AT:
        raise InvalidTokenError(f"field '{ISSUED_AT}' must be a time in seconds")


def _check_age(issued: int | None, max_age: float, now: float) -> None:
    """Reject tokens from the future, and, when tokens expire, old or unstamped ones."""
    if issued is not None and issued > now + CLOCK_SKEW:
        raise InvalidTokenError("it was issued in the future")
    if max_age <= 0:
        return
    if issued is None:
        # Tokens from before issue times were recorded: their age cannot be known.
        raise ExpiredTokenError("expired (it carries no issue time)")
    age = int(now) - issued  # whole seconds on both sides, as issue times are stored
    if age > max_age:
        raise ExpiredTokenError(
            f"expired (issued {_duration(age)} ago; tokens are valid for {_duration(max_age)})"
        )


def _duration(seconds: float) -> str:
    whole = max(0, int(seconds))
    if whole < 120:
        return f"{whole} s"
    if whole < 2 * 3600:
        return f"{whole // 60} min"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


def page_footer(next_token: str | None, extra_meta: Mapping[str, bool] | None = None) -> str:
    """The page-info footer (has_more, next_token, extra lines), or '' when nothing follows."""
    if next_token is None:
        return ""
    lines = ["has_more: true", f"next_token: {next_token}"]
    lines += [f"{key}: {'true' if value else 'false'}" for key, value in (extra_meta or {}).items()]
    return FOOTER_SEPARATOR + "\n".join(lines)


def format_paged_result(
    body: str, next_token: str | None, extra_meta: Mapping[str, bool] | None = None
) -> str:
    """Body plus the page-info footer (no footer when there is no next page)."""
    return body + page_footer(next_token, extra_meta)


def parse_paged_result(text: str) -> tuple[str, dict[str, Any]]:
    """Split a paged result into its body and footer fields (has_more as bool, next_token...)."""
    head, sep, tail = text.rpartition(FOOTER_SEPARATOR)
    lines = tail.split("\n")
    if not sep or not lines or not all(_META_LINE_RE.fullmatch(line) for line in lines):
        return text, {"has_more": False}
    meta: dict[str, Any] = {}
    for line in lines:
        key, _, value = line.partition(": ")
        meta[key] = {"true": True, "false": False}.get(value, value)
    return head, meta


def paged_tool_result(text: str) -> ToolResult:
    """A successful result, with the paging fields read from its page-info footer."""
    _, meta = parse_paged_result(text)
    token = meta.get("next_token")
    return ToolResult(
        text,
        has_more=meta.get("has_more") is True,
        next_token=token if isinstance(token, str) else None,
    )


def _token_fit(  # noqa: PLR0917 - fit_page's own arguments, passed on
    window: str,
    max_chars: int,
    next_token_for: Callable[[int], str | None],
    prefix: str,
    extra_meta: Mapping[str, bool] | None,
    max_tokens: int,
) -> int:
    """The longest body (≤ `max_chars`) whose whole result fits `max_tokens` estimated tokens."""

    def render(size: int) -> str:
        token = next_token_for(size)
        return prefix + window[:size] + page_footer(token, extra_meta if token else None)

    size = min(max_chars, len(window))
    fitted = longest_fit(ResultRoom(MAX_CHARS_UNBOUNDED, max_tokens), size, render)
    if fitted is None or (fitted == 0 and window):
        raise PageLimitError("no room left in the window for the page body")
    return fitted


@dataclass(frozen=True)
class FittedPage:
    """A result that fits the limit: its text, how much of the window it used, its token."""

    text: str
    consumed: int
    next_token: str | None
    footer: str = ""

    @property
    def block(self) -> str:
        """The text without its page-info footer (the prefix and the body)."""
        return self.text[: len(self.text) - len(self.footer)]


def fit_page(
    window: str,
    max_chars: int,
    next_token_for: Callable[[int], str | None],
    *,
    prefix: str = "",
    extra_meta: Mapping[str, bool] | None = None,
    limit: int = MAX_TOOL_RESULT_CHARS,
    max_tokens: int | None = None,
) -> FittedPage:
    """Take at most `max_chars` of `window` so prefix + body + footer stay within `limit`
    (and, when given, `max_tokens` estimated tokens: the room left in the model's window).

    `next_token_for(n)` returns the token that resumes right after the first n characters of
    the window, or None when nothing is left after them.
    """
    if max_tokens is not None:
        max_chars = _token_fit(window, max_chars, next_token_for, prefix, extra_meta, max_tokens)
    cap = size = max(0, min(max_chars, len(window)))
    while True:
        token = next_token_for(size)
        footer = page_footer(token, extra_meta if token else None)
        room = limit - len(prefix) - len(footer)
        if size <= room:
            break
        if room <= 0:
            raise PageLimitError("no room left for the page body")
        size = room
    # A shorter body can have a shorter token: take back the room that freed.
    while size < cap:
        more_token = next_token_for(size + 1)
        more_footer = page_footer(more_token, extra_meta if more_token else None)
        if size + 1 > limit - len(prefix) - len(more_footer):
            break
        size, token, footer = size + 1, more_token, more_footer
    if size == 0 and window:
        raise PageLimitError("no room left for the page body")
    return FittedPage(
        text=prefix + window[:size] + footer, consumed=size, next_token=token, footer=footer
    )
