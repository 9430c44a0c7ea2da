"""Opaque continuation tokens and the page-info footer of paged tool results (seed 000)."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

TOKEN_VERSION = 2
MAX_TOOL_RESULT_CHARS = 6000
# Checked before decoding so a huge or hostile string costs nothing.
MAX_TOKEN_CHARS = 4096
MAX_OFFSET = 1_000_000_000
MAX_PAGE_INDEX = 1_000_000
MAX_URL_CHARS = 2048
MAX_TITLE_CHARS = 300
DEFAULT_MAX_MATCHED = 10

PAGE_INFO_MARKER = "---page-info---"
FOOTER_SEPARATOR = f"\n\n{PAGE_INFO_MARKER}\n"
INVALID_CONTINUATION_PREFIX = "Invalid continuation token: "
RESUME_HINT = (
    "Pass the next_token of the previous result unchanged, or call again without "
    "continue_from to start from the beginning."
)

# The seed's PDF-only footer metadata: fixed, language-independent keys with boolean values.
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

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"{INVALID_CONTINUATION_PREFIX}{reason}. {RESUME_HINT}")


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


def make_token(tool: str, **fields: Any) -> str:
    """Encode a cursor as an opaque base64url(JSON) token bound to `tool` (version 2)."""
    if tool not in _SCHEMAS:
        raise ValueError(f"no token schema for tool {tool!r}")
    payload = {"v": TOKEN_VERSION, "tool": tool, **fields}
    _validate(payload, tool, max(DEFAULT_MAX_MATCHED, len(fields.get("matched") or ())))
    raw = json.dumps(payload, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    token = base64.urlsafe_b64encode(raw.encode("ascii")).decode("ascii").rstrip("=")
    if len(token) > MAX_TOKEN_CHARS:
        raise ValueError(f"token of {len(token)} chars exceeds {MAX_TOKEN_CHARS}")
    return token


def parse_token(token: str, tool: str, *, max_matched: int = DEFAULT_MAX_MATCHED) -> dict[str, Any]:
    """Decode and strictly validate a token of `tool`; any fault raises InvalidTokenError."""
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
    if not isinstance(payload, dict):
        raise InvalidTokenError("not a JSON object")
    if payload.get("tool") != tool:
        if isinstance(payload.get("tool"), str) and payload["tool"] in _SCHEMAS:
            raise InvalidTokenError(f"it was issued by {payload['tool']}, not {tool}")
        raise InvalidTokenError(f"it was not issued by {tool}")
    _version(payload.get("v"))
    _validate(payload, tool, max_matched)
    return payload


def page_footer(next_token: str | None, extra_meta: Mapping[str, bool] | None = None) -> str:
    """The seed's page-info footer, or '' when there is no next page."""
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


@dataclass(frozen=True)
class FittedPage:
    """A result that fits the limit: its text, how much of the window it used, its token."""

    text: str
    consumed: int
    next_token: str | None


def fit_page(
    window: str,
    max_chars: int,
    next_token_for: Callable[[int], str | None],
    *,
    prefix: str = "",
    extra_meta: Mapping[str, bool] | None = None,
    limit: int = MAX_TOOL_RESULT_CHARS,
) -> FittedPage:
    """Take at most `max_chars` of `window` so prefix + body + footer stay within `limit`.

    `next_token_for(n)` returns the token that resumes right after the first n characters of
    the window, or None when nothing is left after them.
    """
    size = max(0, min(max_chars, len(window)))
    while True:
        token = next_token_for(size)
        footer = page_footer(token, extra_meta if token else None)
        room = limit - len(prefix) - len(footer)
        if size <= room:
            break
        if room <= 0:
            raise PageLimitError("no room left for the page body")
        size = room
    if size == 0 and window:
        raise PageLimitError("no room left for the page body")
    return FittedPage(text=prefix + window[:size] + footer, consumed=size, next_token=token)


format_page_to_limit = fit_page
