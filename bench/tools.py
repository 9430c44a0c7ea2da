"""Built-in tool costs: HTML extraction, PDF text rate, fetches per paged document.

Run: .venv/bin/python bench/tools.py [--rounds 5] [--pdf-pages 50] [--paged-pages 100]
Prints one JSON object, then a one-line summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.config import Settings
from bot.tools.doc_cache import DocumentCache
from bot.tools.extract import heuristic_text, html_to_text, pdf_page_texts
from bot.tools.isolate import IsolatedRunner
from bot.tools.paging import parse_paged_result
from bot.tools.pdf import PdfToText
from bot.tools.safe_http import FetchPolicy, SafeFetcher
from tests.fakes.web_server import FakeWebServer
from tests.tools.pdfgen import (
    BOILERPLATE_MARKERS,
    IPA_FONT,
    article_paragraph,
    japanese_page_text,
    latin_page_text,
    make_article_page,
    make_pdf,
)


def median_ms(func: Callable[[], Any], rounds: int) -> tuple[float, Any]:
    """Median wall time of `rounds` calls in ms, and the last result."""
    times, result = [], None
    for _ in range(rounds):
        started = time.perf_counter()
        result = func()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), result


def html_bench(rounds: int) -> dict[str, Any]:
    """ms/page and leaked boilerplate for our extractor and a plain tag heuristic."""
    report: dict[str, Any] = {}
    for semantic in (True, False):
        page = make_article_page(semantic=semantic, paragraphs=1400, links=900)
        body = page.encode()
        kind = "semantic_tags" if semantic else "div_only"
        entry: dict[str, Any] = {"page_bytes": len(body)}
        for name, func in (
            (
                "trafilatura_pipeline",
                lambda b=body: html_to_text(b, "utf-8", "https://e.com/").text,
            ),
            ("tag_heuristic_lxml", lambda p=page: heuristic_text(p)),
        ):
            ms, text = median_ms(func, rounds)
            found = sum(1 for i in range(1400) if article_paragraph(i) in text)
            entry[name] = {
                "ms_per_page": round(ms, 1),
                "leaked_markers": [m for m in BOILERPLATE_MARKERS if m in text],
                "leaked_marker_hits": sum(text.count(m) for m in BOILERPLATE_MARKERS),
                "main_paragraphs_found": f"{found}/1400",
            }
        report[kind] = entry
    return report


def pdf_bench(pages: int, rounds: int) -> dict[str, Any]:
    """Pages/s of pdf_page_texts in-process and through the isolated worker."""
    if IPA_FONT.is_file():
        texts = [japanese_page_text(i, 30) for i in range(pages)]
        pdf, language = make_pdf(texts, font=IPA_FONT), "ja"
    else:
        texts = [latin_page_text(i, 300) for i in range(pages)]
        pdf, language = make_pdf(texts), "latin (IPA font missing)"
    ms, result = median_ms(lambda: pdf_page_texts(pdf, 0, pages), rounds)
    chars = sum(len(text) for text in result.texts)

    async def through_worker() -> float:
        runner = IsolatedRunner()
        try:
            await runner.run(pdf_page_texts, pdf, 0, 1)  # warm: spawn and import
            times = []
            for _ in range(rounds):
                started = time.perf_counter()
                await runner.run(pdf_page_texts, pdf, 0, pages)
                times.append(time.perf_counter() - started)
            return statistics.median(times)
        finally:
            await runner.close()

    worker_s = asyncio.run(through_worker())
    return {
        "language": language,
        "pages": pages,
        "pdf_bytes": len(pdf),
        "chars": chars,
        "pages_per_s_in_process": round(pages / (ms / 1000)),
        "pages_per_s_via_worker": round(pages / worker_s),
    }


async def paged_read(pages: int) -> dict[str, Any]:
    """Read a PDF of `pages` pages to the end through pdf_to_text; count HTTP fetches."""
    pdf = make_pdf([latin_page_text(i, 120) for i in range(pages)])
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    runner = IsolatedRunner()
    try:
        async with (
            FakeWebServer() as web,
            SafeFetcher(FetchPolicy.allowing("127.0.0.1/32")) as fetcher,
        ):
            web.add_page("/doc.pdf", pdf, content_type="application/pdf")
            tool = PdfToText(
                fetcher=fetcher, runner=runner, cache=DocumentCache(), settings=lambda: settings
            )
            started = time.perf_counter()
            result = await tool.pdf_to_text(web.url_for("/doc.pdf"))
            calls, chars = 1, len(parse_paged_result(result)[0])
            while (meta := parse_paged_result(result)[1])["has_more"]:
                result = await tool.pdf_to_text(continue_from=meta["next_token"])
                calls += 1
                chars += len(parse_paged_result(result)[0])
            elapsed = time.perf_counter() - started
            fetches = sum(1 for request in web.requests if request.path == "/doc.pdf")
    finally:
        await runner.close()
    return {
        "pages": pages,
        "tool_calls": calls,
        "chars": chars,
        "fetches": fetches,
        "ms_per_call": round(elapsed * 1000 / calls, 2),
    }


def main() -> None:
    """Run the three measurements and print JSON plus a summary line."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pdf-pages", type=int, default=50)
    parser.add_argument("--paged-pages", type=int, default=100)
    args = parser.parse_args()
    report = {
        "html": html_bench(args.rounds),
        "pdf": pdf_bench(args.pdf_pages, args.rounds),
        "paged_pdf": asyncio.run(paged_read(args.paged_pages)),
    }
    print(json.dumps(report, indent=2, ensure_ascii=False))
    html, pdf, paged = report["html"], report["pdf"], report["paged_pdf"]
    print(
        "html ms/page (trafilatura; seed heuristic): "
        f"semantic {html['semantic_tags']['trafilatura_pipeline']['ms_per_page']}"
        f"/{html['semantic_tags']['tag_heuristic_lxml']['ms_per_page']}, "
        f"div-only {html['div_only']['trafilatura_pipeline']['ms_per_page']}"
        f"/{html['div_only']['tag_heuristic_lxml']['ms_per_page']}; leaked markers "
        f"div-only {len(html['div_only']['trafilatura_pipeline']['leaked_markers'])}"
        f"/{len(html['div_only']['tag_heuristic_lxml']['leaked_markers'])}; "
        f"pdf {pdf['pages_per_s_in_process']} pages/s ({pdf['language']}, target >= 500), "
        f"{pdf['pages_per_s_via_worker']} via worker; "
        f"paged {paged['pages']}-page pdf: {paged['fetches']} fetch(es) in "
        f"{paged['tool_calls']} calls (must be 1)"
    )


if __name__ == "__main__":
    main()
