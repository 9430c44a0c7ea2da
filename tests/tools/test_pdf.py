"""pdf_to_text end to end: loopback PDFs and session attachments through the isolated worker."""

from __future__ import annotations

import time
from typing import Any

import pytest

from bot.config import Settings
from bot.store.repos.attachments import AttachmentRepository
from bot.tools.doc_cache import DocumentCache
from bot.tools.extract import pdf_page_texts
from bot.tools.isolate import IsolatedRunner
from bot.tools.paging import (
    MAX_TOOL_RESULT_CHARS,
    PDF_RESUME_META,
    make_token,
    parse_paged_result,
    parse_token,
)
from bot.tools.pdf import (
    ATTACHMENT_NOT_FOUND,
    LOCAL_PATH_REFUSED,
    MISSING_SOURCE,
    NO_SESSION,
    PDF_TOO_LARGE,
    PdfToText,
    full_pdf_text,
)
from bot.tools.safe_http import FetchPolicy, SafeFetcher
from tests.fakes.web_server import FakeWebServer
from tests.tools.conftest import SPACE, failure
from tests.tools.pdfgen import (
    japanese_page_text,
    latin_page_text,
    make_pdf,
    require_japanese_font,
    squash,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

PREFIX = "Invalid continuation token: "


def settings_of(**overrides: Any) -> Settings:
    return Settings(_env_file=None, **overrides)  # type: ignore[call-arg]


def mixed_latin_pages(count: int) -> list[str]:
    """30 short pages (the 25-page limit binds), then a long page every seventh (chars bind)."""
    return [latin_page_text(i, 420 if i >= 30 and i % 7 == 3 else 12) for i in range(count)]


@pytest.fixture(scope="module")
def latin_pdf() -> tuple[bytes, str]:
    pdf = make_pdf(mixed_latin_pages(60))
    return pdf, full_pdf_text(pdf_page_texts(pdf, 0, 1000).texts)


@pytest.fixture
def current() -> dict[str, Settings]:
    return {"settings": settings_of()}


@pytest.fixture
def tool(
    fetcher: SafeFetcher,
    runner: IsolatedRunner,
    attachments: AttachmentRepository,
    current: dict[str, Settings],
) -> PdfToText:
    return PdfToText(
        fetcher=fetcher,
        runner=runner,
        cache=DocumentCache(),
        settings=lambda: current["settings"],
        attachments=attachments,
    )


def requests_for(web: FakeWebServer, path: str) -> int:
    return sum(1 for request in web.requests if request.path == path)


async def read_all(tool: PdfToText, source: str, **kwargs: Any) -> list[str]:
    """Call until has_more is gone, with continue_from alone after the first call."""
    results = [await tool.pdf_to_text(source, **kwargs)]
    for _ in range(2000):
        _, meta = parse_paged_result(results[-1])
        if not meta["has_more"]:
            return results
        results.append(await tool.pdf_to_text(continue_from=meta["next_token"], **kwargs))
    raise AssertionError("paging did not end")


def cursors(results: list[str]) -> list[tuple[int, int]]:
    tokens = [parse_paged_result(result)[1].get("next_token") for result in results]
    payloads = [parse_token(token, "pdf_to_text") for token in tokens if token]
    return [(p["page_index"], p["page_char_offset"]) for p in payloads]


async def test_latin_pdf_round_trip_across_the_page_limit(
    tool: PdfToText, web: FakeWebServer, latin_pdf: tuple[bytes, str]
) -> None:
    pdf, expected = latin_pdf
    web.add_page("/doc.pdf", pdf, content_type="application/pdf")
    results = await read_all(tool, web.url_for("/doc.pdf"))
    assert "".join(parse_paged_result(result)[0] for result in results) == expected
    assert all(len(result) <= MAX_TOOL_RESULT_CHARS for result in results)
    positions = cursors(results)
    assert any(offset > 0 for _, offset in positions), "some parts end inside a page"
    starts = [(0, 0), *positions]
    page_limited = [
        (start, end)
        for start, end in zip(starts, positions, strict=False)
        if end == (start[0] + 25, 0)
    ]
    assert page_limited, "some parts stop at the 25-page limit"
    assert requests_for(web, "/doc.pdf") == 1
    for result in results[:-1]:
        _, meta = parse_paged_result(result)
        assert {key: meta[key] for key in PDF_RESUME_META} == dict(PDF_RESUME_META)
    assert "---page-info---" not in results[-1]


async def test_small_max_chars_resumes_mid_page_exactly(
    tool: PdfToText, web: FakeWebServer, latin_pdf: tuple[bytes, str]
) -> None:
    pdf, expected = latin_pdf
    web.add_page("/small.pdf", pdf, content_type="application/pdf")
    results = await read_all(tool, web.url_for("/small.pdf"), max_chars=1500)
    bodies = [parse_paged_result(result)[0] for result in results]
    assert "".join(bodies) == expected
    assert all(len(body) <= 1500 for body in bodies)
    assert sum(1 for _, offset in cursors(results) if offset > 0) > 5


async def test_page_limit_follows_the_setting(
    tool: PdfToText, web: FakeWebServer, current: dict[str, Settings]
) -> None:
    web.add_page("/p.pdf", make_pdf([latin_page_text(i, 5) for i in range(12)]))
    current["settings"] = settings_of(max_pdf_pages=5)
    body, meta = parse_paged_result(await tool.pdf_to_text(web.url_for("/p.pdf")))
    assert body.startswith("[page 1/12]\n") and "[page 5/12]" in body and "[page 6/" not in body
    payload = parse_token(meta["next_token"], "pdf_to_text")
    assert (payload["page_index"], payload["page_char_offset"]) == (5, 0)


async def test_japanese_pdf_round_trip(tool: PdfToText, web: FakeWebServer) -> None:
    font = require_japanese_font()
    pages = [japanese_page_text(i, 12) for i in range(60)]
    pdf = make_pdf(pages, font=font)
    web.add_page("/ja.pdf", pdf, content_type="application/pdf")
    results = await read_all(tool, web.url_for("/ja.pdf"), max_chars=700)
    text = "".join(parse_paged_result(result)[0] for result in results)
    assert text == full_pdf_text(pdf_page_texts(pdf, 0, 100).texts)
    for index, page in enumerate(pages):
        assert squash(page) in squash(text), f"page {index + 1} text extracted exactly"
    assert requests_for(web, "/ja.pdf") == 1


async def test_token_wins_over_url_or_path(
    tool: PdfToText, web: FakeWebServer, latin_pdf: tuple[bytes, str]
) -> None:
    web.add_page("/t.pdf", latin_pdf[0], content_type="application/pdf")
    token = make_token("pdf_to_text", url=web.url_for("/t.pdf"), page_index=2, page_char_offset=3)
    result = await tool.pdf_to_text(web.url_for("/other.pdf"), continue_from=token)
    # Page 3's segment starts with the blank line that separates it from page 2.
    assert result.startswith("page 3/60]\nPage 3 begins.")
    assert requests_for(web, "/other.pdf") == 0


async def test_expired_token_is_refused_before_any_fetch(
    tool: PdfToText, web: FakeWebServer, current: dict[str, Settings]
) -> None:
    current["settings"] = settings_of(pagination_token_ttl=60)
    token = make_token(
        "pdf_to_text",
        url=web.url_for("/t.pdf"),
        page_index=2,
        page_char_offset=3,
        issued_at=int(time.time()) - 3 * 3600,
    )
    assert await failure(tool.pdf_to_text(continue_from=token)) == (
        f"{PREFIX}expired (issued 3 h 0 min ago; tokens are valid for 60 s), "
        "call the tool again without continue_from to start over."
    )
    assert requests_for(web, "/t.pdf") == 0


async def test_size_limit_from_settings(
    tool: PdfToText, web: FakeWebServer, current: dict[str, Settings]
) -> None:
    big = make_pdf(["x"]) + b"%" + b"0" * (1024 * 1024 + 10)
    web.add_page("/big.pdf", big, content_type="application/pdf")
    current["settings"] = settings_of(max_fetch_mb=1)
    assert await failure(tool.pdf_to_text(web.url_for("/big.pdf"))) == PDF_TOO_LARGE


async def test_size_limit_of_the_fetcher(runner: IsolatedRunner, web: FakeWebServer) -> None:
    web.add_oversized("/huge.pdf", 3 * 1024 * 1024, content_type="application/pdf")
    async with SafeFetcher(FetchPolicy.allowing("127.0.0.1/32"), max_bytes=1024 * 1024) as small:
        tool = PdfToText(fetcher=small, runner=runner, cache=DocumentCache(), settings=settings_of)
        assert await failure(tool.pdf_to_text(web.url_for("/huge.pdf"))) == PDF_TOO_LARGE


async def test_not_a_pdf(tool: PdfToText, web: FakeWebServer) -> None:
    web.add_page("/fake.pdf", "<html><body>login first</body></html>")
    url = web.url_for("/fake.pdf")
    assert await failure(tool.pdf_to_text(url)) == f"{url} is not a PDF."


async def test_garbage_with_pdf_header_is_a_clean_error(
    tool: PdfToText, web: FakeWebServer
) -> None:
    web.add_page("/bad.pdf", b"%PDF-1.7\n" + bytes(range(256)) * 64, content_type="application/pdf")
    url = web.url_for("/bad.pdf")
    result = await failure(tool.pdf_to_text(url))
    assert result.startswith(f"Failed to read the PDF {url}: The PDF could not be read")


async def test_huge_page_tree_is_paged_not_exploded(tool: PdfToText, web: FakeWebServer) -> None:
    pages = 200_000
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + b"3 0 R " * pages + b"] /Count %d >>" % pages,
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
    ]
    web.add_page("/tree.pdf", raw_pdf(objects), content_type="application/pdf")
    body, meta = parse_paged_result(await tool.pdf_to_text(web.url_for("/tree.pdf")))
    assert body.startswith("[page 1/200000]\n") and "[page 25/200000]" in body
    assert parse_token(meta["next_token"], "pdf_to_text")["page_index"] == 25


def raw_pdf(objects: list[bytes]) -> bytes:
    out = b"%PDF-1.7\n"
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return out


async def test_session_attachment(
    tool: PdfToText, attachments: AttachmentRepository, latin_pdf: tuple[bytes, str]
) -> None:
    pdf, expected = latin_pdf
    stored = await attachments.add(SPACE, "s1", "doc.pdf", "application/pdf", pdf)
    ref = f"attachment:{stored.id}"
    results = [await tool.pdf_to_text(ref, session_id="s1", space_id=SPACE)]
    while (meta := parse_paged_result(results[-1])[1])["has_more"]:
        results.append(
            await tool.pdf_to_text(
                continue_from=meta["next_token"], session_id="s1", space_id=SPACE
            )
        )
    assert "".join(parse_paged_result(result)[0] for result in results) == expected
    token = parse_paged_result(results[0])[1]["next_token"]
    assert parse_token(token, "pdf_to_text")["url"] == ref
    # Another session can use neither the reference nor the token.
    missing = ATTACHMENT_NOT_FOUND.format(ref=ref)
    assert await failure(tool.pdf_to_text(ref, session_id="s2", space_id=SPACE)) == missing
    assert (
        await failure(tool.pdf_to_text(continue_from=token, session_id="s2", space_id=SPACE))
        == missing
    )
    assert await failure(tool.pdf_to_text(ref)) == NO_SESSION


async def test_attachment_that_is_not_a_pdf(
    tool: PdfToText, attachments: AttachmentRepository
) -> None:
    stored = await attachments.add(SPACE, "s1", "notes.txt", "text/plain", b"hello")
    ref = f"attachment:{stored.id}"
    assert (
        await failure(tool.pdf_to_text(ref, session_id="s1", space_id=SPACE))
        == f"{ref} is not a PDF."
    )


@pytest.mark.parametrize(
    "path",
    ["/etc/passwd", "file:///etc/passwd", "C:\\docs\\a.pdf", "../secret.pdf", "doc.pdf", "~/a.pdf"],
)
async def test_local_paths_are_refused(tool: PdfToText, path: str) -> None:
    assert (
        await failure(tool.pdf_to_text(path, session_id="s1", space_id=SPACE)) == LOCAL_PATH_REFUSED
    )


async def test_other_schemes_are_blocked(tool: PdfToText) -> None:
    blocked = await failure(tool.pdf_to_text("ftp://example.com/a.pdf"))
    assert blocked.startswith("Blocked URL: ")


@pytest.mark.parametrize("source", [None, "", "  "])
async def test_missing_source(tool: PdfToText, source: str | None) -> None:
    assert await failure(tool.pdf_to_text(source)) == MISSING_SOURCE


@pytest.mark.parametrize(
    "token",
    [
        "%%%",
        "eyJ2IjoyLCJ0b29sIjoicGRmX3RvX3RleHQifQ",
        make_token("scrape_url", url="https://example.com/a.pdf", offset=0),
        make_token(
            "pdf_to_text", url="https://example.com/a.pdf", page_index=0, page_char_offset=0
        )[:-3],
    ],
)
async def test_bad_tokens(tool: PdfToText, web: FakeWebServer, token: str) -> None:
    assert (await failure(tool.pdf_to_text(continue_from=token))).startswith(PREFIX)
    assert web.requests == []


async def test_token_past_the_end_of_the_pdf(tool: PdfToText, web: FakeWebServer) -> None:
    web.add_page("/two.pdf", make_pdf(["one", "two"]), content_type="application/pdf")
    for page_index, offset in ((2, 0), (7, 0), (1, 10_000)):
        token = make_token(
            "pdf_to_text",
            url=web.url_for("/two.pdf"),
            page_index=page_index,
            page_char_offset=offset,
        )
        result = await failure(tool.pdf_to_text(continue_from=token))
        assert result.startswith(PREFIX + "it points past the end of the PDF")
