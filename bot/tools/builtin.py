"""Wiring of the four built-in web tools: their dependencies and their registration."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.config import Settings
from bot.store.repos.attachments import AttachmentRepository
from bot.tools import pdf, scrape, search_and_fetch, web_search
from bot.tools.core import ToolRegistry
from bot.tools.doc_cache import DocumentCache
from bot.tools.isolate import IsolatedRunner
from bot.tools.pdf import PdfToText
from bot.tools.safe_http import FetchPolicy, SafeFetcher
from bot.tools.scrape import ScrapeUrl
from bot.tools.search_and_fetch import SearchAndFetch
from bot.tools.web_search import SearchFn, WebSearch, WebSearchTool

log = logging.getLogger(__name__)

WEB_SEARCH_TIMEOUT = 30.0
# A fetch (fetch_timeout, 20 s) plus parsing in the worker (its own deadline) plus slack.
FETCH_TOOL_TIMEOUT = 90.0


@dataclass
class ToolDeps:
    """Everything the built-in tools need; settings are read at call time."""

    fetcher: SafeFetcher
    settings: Callable[[], Settings]
    runner: IsolatedRunner
    doc_cache: DocumentCache
    web_search: WebSearch
    attachments: AttachmentRepository | None = None

    async def page_text(self, url: str) -> str:
        """A web page's main text, fetched as scrape_url fetches it (and sharing its cache)."""
        scraper = ScrapeUrl(
            fetcher=self.fetcher, runner=self.runner, cache=self.doc_cache, settings=self.settings
        )
        return await scraper.page_text(url)

    async def close(self) -> None:
        """Release the HTTP session, the parser workers and the search threads."""
        self.web_search.close()
        await self.fetcher.close()
        await self.runner.close()


def register_builtin_tools(registry: ToolRegistry, deps: ToolDeps) -> None:
    """Register web_search, scrape_url, pdf_to_text and search_and_fetch on `registry`."""
    common: dict[str, Any] = {
        "fetcher": deps.fetcher,
        "runner": deps.runner,
        "cache": deps.doc_cache,
        "settings": deps.settings,
    }
    registry.register(
        WebSearchTool(deps.web_search, deps.settings).web_search,
        timeout=WEB_SEARCH_TIMEOUT,
        display=web_search.DISPLAY,
        sources=web_search.web_search_sources,
    )
    registry.register(
        ScrapeUrl(**common).scrape_url,
        paged=True,
        timeout=FETCH_TOOL_TIMEOUT,
        display=scrape.DISPLAY,
        sources=scrape.scrape_url_sources,
    )
    registry.register(
        PdfToText(**common, attachments=deps.attachments).pdf_to_text,
        paged=True,
        timeout=FETCH_TOOL_TIMEOUT,
        display=pdf.DISPLAY,
        sources=pdf.pdf_to_text_sources,
    )
    registry.register(
        SearchAndFetch(
            **common, search=deps.web_search, attachments=deps.attachments
        ).search_and_fetch,
        paged=True,
        timeout=FETCH_TOOL_TIMEOUT + WEB_SEARCH_TIMEOUT,
        display=search_and_fetch.DISPLAY,
    )


def build_tool_deps(
    settings: Callable[[], Settings],
    attachments: AttachmentRepository | None = None,
    *,
    policy: FetchPolicy | None = None,
    search_fn: SearchFn | None = None,
    parse_timeout: float | None = None,
) -> ToolDeps:
    """Production dependencies: strict fetch policy, parser workers, cache, ddgs search.

    Nothing here needs a running event loop; the HTTP session and the worker process start
    on first use.
    """
    current = settings()
    fetcher = SafeFetcher(
        policy or FetchPolicy.strict(),
        max_bytes=current.max_fetch_mb * 1024 * 1024,
        timeout=current.fetch_timeout,
    )
    return ToolDeps(
        fetcher=fetcher,
        settings=settings,
        runner=IsolatedRunner(workers=current.parser_workers, timeout=parse_timeout),
        doc_cache=DocumentCache(),
        web_search=WebSearch(search_fn=search_fn, backend=current.web_search_backend),
        attachments=attachments,
    )
