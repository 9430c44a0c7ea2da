"""Continuation tokens and the page-info footer: strict parsing, exact fitting."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest

from bot.tools.paging import (
    CLOCK_SKEW,
    MAX_TOKEN_CHARS,
    MAX_TOOL_RESULT_CHARS,
    PDF_RESUME_META,
    ExpiredTokenError,
    InvalidTokenError,
    PageLimitError,
    fit_page,
    format_paged_result,
    make_token,
    paged_tool_result,
    parse_paged_result,
    parse_token,
)

PREFIX = "Invalid continuation token: "


def encode(payload: Any) -> str:
    raw = payload if isinstance(payload, str) else json.dumps(payload)
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def scrape_payload(**changes: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "v": 2,
        "tool": "scrape_url",
        "url": "https://example.com/a",
        "offset": 4000,
    }
    payload.update(changes)
    return payload


def saf_payload(**changes: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "v": 2,
        "tool": "search_and_fetch",
        "url": "https://example.com/b.pdf",
        "offset": 10,
        "matched": [
            {"title": "A", "href": "https://example.com/a.pdf"},
            {"title": "B", "href": "https://example.com/b.pdf"},
        ],
        "file_idx": 1,
        "file_offset": 10,
        "pdf_page_index": 3,
        "pdf_page_char_offset": 1200,
        "file_type": "pdf",
    }
    payload.update(changes)
    return payload


def invalid(token: str, tool: str = "scrape_url") -> str:
    with pytest.raises(InvalidTokenError) as caught:
        parse_token(token, tool)
    message = str(caught.value)
    assert message.startswith(PREFIX)
    return message


# --- round trips --------------------------------------------------------------------------


def test_scrape_token_round_trip_matches_the_seed_payload() -> None:
    token = make_token("scrape_url", url="https://example.com/page", offset=4000)
    assert set(token) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert parse_token(token, "scrape_url") == {
        "v": 2,
        "tool": "scrape_url",
        "url": "https://example.com/page",
        "offset": 4000,
    }


def test_token_json_is_ascii_so_truncation_cannot_split_a_character() -> None:
    token = make_token(
        "search_and_fetch",
        **{k: v for k, v in saf_payload().items() if k not in ("v", "tool")}
        | {"matched": [{"title": "日本語タイトル", "href": "https://example.com/a.pdf"}]}
        | {"file_idx": 0, "url": "https://example.com/a.pdf"},
    )
    raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    assert raw.isascii()
    assert b"\\u65e5" in raw
    assert parse_token(token, "search_and_fetch")["matched"][0]["title"] == "日本語タイトル"


def test_padded_and_whitespace_wrapped_tokens_are_accepted() -> None:
    token = make_token("scrape_url", url="https://example.com/x", offset=1)
    padded = token + "=" * (-len(token) % 4)
    assert parse_token(f"  {padded}\n", "scrape_url")["offset"] == 1


def test_pdf_token_accepts_attachment_sources() -> None:
    token = make_token("pdf_to_text", url="attachment:abc123", page_index=2, page_char_offset=5)
    assert parse_token(token, "pdf_to_text")["url"] == "attachment:abc123"


def test_search_and_fetch_token_round_trip() -> None:
    fields = {k: v for k, v in saf_payload().items() if k not in ("v", "tool")}
    assert parse_token(make_token("search_and_fetch", **fields), "search_and_fetch") == (
        saf_payload()
    )


# --- bad tokens ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "token",
    [
        "",
        "   ",
        "not a token!",
        "abc$def",
        "eyJ2IjoyfQ==extra",
        "a",  # impossible base64 length
        "YWJj=",  # wrong padding
        "////",  # standard alphabet, not base64url
        "++++",
    ],
)
def test_garbled_tokens_are_invalid(token: str) -> None:
    invalid(token)


def test_truncated_tokens_are_invalid_at_every_length() -> None:
    token = make_token("scrape_url", url="https://example.com/page", offset=4000)
    for cut in range(len(token)):
        with pytest.raises(InvalidTokenError):
            parse_token(token[:cut], "scrape_url")


def test_oversized_token_is_rejected_before_decoding() -> None:
    message = invalid("A" * (MAX_TOKEN_CHARS + 1))
    assert "too long" in message


def test_deeply_nested_json_is_invalid() -> None:
    invalid(encode("[" * 2500 + "]" * 2500))
    invalid(encode(scrape_payload(offset=[[[[[[1]]]]]])))


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_invalid(constant: str) -> None:
    raw = f'{{"v":2,"tool":"scrape_url","url":"https://example.com/a","offset":{constant}}}'
    assert "not allowed" in invalid(encode(raw))


@pytest.mark.parametrize(
    "changes",
    [
        {"offset": True},
        {"offset": False},
        {"offset": 1.0},
        {"offset": "4000"},
        {"offset": -1},
        {"offset": 10**12},
        {"offset": None},
        {"v": True},
        {"v": 1},
        {"v": 3},
        {"v": 2.0},
        {"url": "ftp://example.com/a"},
        {"url": "file:///etc/passwd"},
        {"url": ""},
        {"url": "https://example.com/" + "a" * 3000},
        {"url": 42},
        {"url": "https://exa mple.com/"},
        {"extra": 1},
    ],
)
def test_forged_scrape_tokens_are_invalid(changes: dict[str, Any]) -> None:
    invalid(encode(scrape_payload(**changes)))


def test_missing_field_is_invalid() -> None:
    payload = scrape_payload()
    del payload["offset"]
    assert "missing offset" in invalid(encode(payload))


def test_duplicate_keys_are_invalid() -> None:
    raw = '{"v":2,"tool":"scrape_url","url":"https://example.com/a","offset":1,"offset":2}'
    invalid(encode(raw))


@pytest.mark.parametrize("payload", [[1, 2], "text", 5, None, True])
def test_non_object_json_is_invalid(payload: Any) -> None:
    invalid(encode(json.dumps(payload)))


def test_non_ascii_bytes_are_invalid() -> None:
    token = base64.urlsafe_b64encode(b'{"v":2,"tool":"scrape_url"}\xff').decode().rstrip("=")
    invalid(token)


def test_token_of_another_tool_is_invalid() -> None:
    token = make_token(
        "pdf_to_text", url="https://example.com/a.pdf", page_index=0, page_char_offset=0
    )
    message = invalid(token, "scrape_url")
    assert "pdf_to_text" in message
    invalid(encode(scrape_payload(tool="unknown_tool")))
    invalid(encode(scrape_payload(tool=["scrape_url"])))


@pytest.mark.parametrize(
    "changes",
    [
        {"matched": []},
        {"matched": "https://example.com/a.pdf"},
        {"matched": [{"title": "A", "href": "https://example.com/a.pdf", "body": "x"}] * 2},
        {"matched": [{"title": 1, "href": "https://example.com/a.pdf"}] * 2},
        {"matched": [{"title": "A", "href": "javascript:alert(1)"}] * 2},
        {"matched": [{"title": "A", "href": "https://example.com/b.pdf"}] * 11},
        {"file_idx": 2},
        {"url": "https://example.com/a.pdf"},  # not the current candidate
        {"offset": 11},  # disagrees with file_offset
        {"pdf_page_index": True},
        {"file_type": "PDF!"},
        {"file_type": 3},
    ],
)
def test_forged_search_and_fetch_tokens_are_invalid(changes: dict[str, Any]) -> None:
    invalid(encode(saf_payload(**changes)), "search_and_fetch")


def test_matched_limit_follows_the_caller() -> None:
    matched = [{"title": str(i), "href": f"https://example.com/{i}.pdf"} for i in range(4)]
    token = encode(saf_payload(matched=matched, file_idx=0, url=matched[0]["href"]))
    assert parse_token(token, "search_and_fetch", max_matched=4)["file_idx"] == 0
    with pytest.raises(InvalidTokenError):
        parse_token(token, "search_and_fetch", max_matched=3)


def test_invalid_token_error_is_never_another_exception_type() -> None:
    # Short garbage of every shape: always InvalidTokenError, never another exception.
    alphabet = "AZaz09-_=/+ .é"
    for a in alphabet:
        for b in alphabet:
            for c in alphabet:
                with pytest.raises(InvalidTokenError):
                    parse_token(f"eyJ{a}{b}{c}", "scrape_url")


def test_make_token_refuses_bad_fields() -> None:
    with pytest.raises(ValueError):
        make_token("scrape_url", url="https://example.com", offset=-1)
    with pytest.raises(ValueError):
        make_token("no_such_tool", url="https://example.com", offset=0)


# --- footer ----------------------------------------------------------------------------------


def test_footer_is_exactly_the_seeds() -> None:
    assert format_paged_result("body", "TOKEN") == (
        "body\n\n---page-info---\nhas_more: true\nnext_token: TOKEN"
    )
    assert format_paged_result("body", None) == "body"
    assert format_paged_result("body", None, PDF_RESUME_META) == "body"


def test_pdf_meta_lines_are_fixed_keys_with_booleans() -> None:
    text = format_paged_result("body", "TOK", PDF_RESUME_META)
    body, meta = parse_paged_result(text)
    assert body == "body"
    assert meta == {"has_more": True, "next_token": "TOK", **PDF_RESUME_META}
    assert all(isinstance(value, bool) for value in PDF_RESUME_META.values())
    assert text.endswith(
        "next_token: TOK\ntoken_replaces_previous: true\n"
        "keep_token_in_final_answer_if_limit_reached: true\nresume_with_continue_from_only: true"
    )


def test_parse_paged_result_without_footer() -> None:
    assert parse_paged_result("plain text") == ("plain text", {"has_more": False})
    tricky = "text\n\n---page-info---\nthis is page content, not a footer"
    assert parse_paged_result(tricky) == (tricky, {"has_more": False})


def test_paged_tool_result_reads_its_footer() -> None:
    token = make_token("scrape_url", url="https://e.com/", offset=5)
    paged = paged_tool_result(format_paged_result("body", token))
    assert (paged.has_more, paged.next_token, paged.failed) == (True, token, False)
    last = paged_tool_result("last page")
    assert (last.text, last.has_more, last.next_token) == ("last page", False, None)


# --- fitting -------------------------------------------------------------------------------


def _scrape_fit(text: str, offset: int, max_chars: int, prefix: str = "") -> Any:
    def next_token(consumed: int) -> str | None:
        end = offset + consumed
        return (
            make_token("scrape_url", url="https://e.com/", offset=end) if end < len(text) else None
        )

    return fit_page(text[offset:], max_chars, next_token, prefix=prefix)


def test_fit_page_shrinks_the_body_so_the_whole_result_fits() -> None:
    text = "x" * 20_000
    page = _scrape_fit(text, 0, 8000)
    assert len(page.text) == MAX_TOOL_RESULT_CHARS
    body, meta = parse_paged_result(page.text)
    assert len(body) == page.consumed
    assert parse_token(meta["next_token"], "scrape_url")["offset"] == page.consumed


def test_fit_page_round_trip_reassembles_exactly() -> None:
    text = "".join(f"line {i} 日本語 ✓\n" for i in range(3000))
    for max_chars in (1, 997, 4000, 8000, 10**6):
        offset, parts = 0, []
        while True:
            page = _scrape_fit(text, offset, max_chars)
            assert len(page.text) <= MAX_TOOL_RESULT_CHARS
            body, meta = parse_paged_result(page.text)
            parts.append(body)
            if not meta["has_more"]:
                break
            offset = parse_token(meta["next_token"], "scrape_url")["offset"]
            if max_chars == 1 and offset > 50:
                break
        if max_chars != 1:
            assert "".join(parts) == text


def test_last_page_has_no_footer_and_uses_the_room() -> None:
    page = _scrape_fit("y" * 5990, 0, 8000)
    assert page.text == "y" * 5990
    assert page.next_token is None


def test_fit_page_counts_the_prefix() -> None:
    page = _scrape_fit("z" * 9000, 0, 8000, prefix="H" * 1000)
    assert len(page.text) <= MAX_TOOL_RESULT_CHARS
    assert page.text.startswith("H" * 1000)


def test_fit_page_without_room_raises() -> None:
    with pytest.raises(PageLimitError):
        _scrape_fit("z" * 9000, 0, 8000, prefix="H" * MAX_TOOL_RESULT_CHARS)


# --- issue time and expiry ---------------------------------------------------------------


NOW = 1_800_000_000


def stamped(issued_at: int) -> str:
    return make_token("scrape_url", url="https://example.com/a", offset=7, issued_at=issued_at)


def test_tokens_carry_their_issue_time_and_parse_to_the_cursor_alone() -> None:
    token = make_token("scrape_url", url="https://example.com/a", offset=7)
    raw = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    assert abs(raw["iat"] - time.time()) < 5
    assert parse_token(token, "scrape_url") == scrape_payload(offset=7)


@pytest.mark.parametrize(("age", "valid"), [(0, True), (3600, True), (3601, False)])
def test_a_token_is_valid_for_exactly_max_age_seconds(age: int, valid: bool) -> None:
    token = stamped(NOW - age)
    if valid:
        assert parse_token(token, "scrape_url", max_age=3600, now=NOW)["offset"] == 7
        return
    with pytest.raises(ExpiredTokenError) as caught:
        parse_token(token, "scrape_url", max_age=3600, now=NOW)
    assert str(caught.value) == (
        f"{PREFIX}expired (issued 60 min ago; tokens are valid for 60 min), "
        "call the tool again without continue_from to start over."
    )
    assert isinstance(caught.value, InvalidTokenError)


def test_max_age_zero_never_expires() -> None:
    assert parse_token(stamped(0), "scrape_url", max_age=0, now=NOW)["offset"] == 7


def test_unstamped_tokens_expire_unless_tokens_never_do() -> None:
    legacy = encode(scrape_payload(offset=7))
    assert parse_token(legacy, "scrape_url", max_age=0)["offset"] == 7
    with pytest.raises(ExpiredTokenError, match=r"expired \(it carries no issue time\), call"):
        parse_token(legacy, "scrape_url", max_age=3600)


def test_tokens_from_the_future_are_invalid_beyond_the_clock_skew() -> None:
    assert parse_token(stamped(NOW + CLOCK_SKEW), "scrape_url", now=NOW)["offset"] == 7
    assert "in the future" in invalid_at(stamped(NOW + CLOCK_SKEW + 1), NOW)


@pytest.mark.parametrize("issued", [True, 1.5, "1800000000", -1, 2**41, None, [1]])
def test_forged_issue_times_are_invalid(issued: Any) -> None:
    token = encode(scrape_payload(iat=issued))
    with pytest.raises(InvalidTokenError) as caught:
        parse_token(token, "scrape_url")
    assert not isinstance(caught.value, ExpiredTokenError)


def test_make_token_refuses_a_bad_issue_time() -> None:
    with pytest.raises(ValueError):
        stamped(-5)


def invalid_at(token: str, now: float) -> str:
    with pytest.raises(InvalidTokenError) as caught:
        parse_token(token, "scrape_url", now=now)
    return str(caught.value)


def test_fit_page_takes_back_room_a_shorter_token_frees() -> None:
    # max_chars of five digits shrinks to a four-digit offset: the token gets shorter.
    page = _scrape_fit("x" * 50_000, 0, 10_000)
    assert len(page.text) == MAX_TOOL_RESULT_CHARS
    assert page.block == page.text[: page.consumed]
