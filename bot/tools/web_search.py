"""Web search through ddgs, off the event loop, cached, and backing off when rate-limited."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from bot.config import Settings
from bot.errors import ToolError
from bot.prompts import prompts_for
from bot.tools.core import ToolDisplay, short_text
from bot.turn.tool_result import Source, ToolResult

log = logging.getLogger(__name__)

SearchFn = Callable[[str, int], list[dict[str, Any]]]
SearchResult = dict[str, str]

DEFAULT_TIMEOUT = 10.0
DEFAULT_CACHE_TTL = 600.0
DEFAULT_CACHE_SIZE = 256
COOLDOWN_INITIAL = 30.0
COOLDOWN_MAX = 900.0
MAX_RESULTS_CAP = 20
# ddgs reports rate limiting in words, not always by exception type.
_RATE_LIMIT_HINTS = ("ratelimit", "rate limit", "429", "202 ")


def ddgs_search_fn(backend: str, timeout: float) -> SearchFn:
    """A search function calling ddgs with an explicit backend ("auto" multiplies the wait)."""

    def search(query: str, max_results: int) -> list[dict[str, Any]]:
        from ddgs import DDGS

        results = DDGS(timeout=max(1, round(timeout))).text(
            query, max_results=max_results, backend=backend
        )
        return list(results)

    return search


def is_rate_limit(exc: BaseException) -> bool:
    """True when the search failed because the engine is throttling us."""
    if type(exc).__name__ == "RatelimitException":
        return True
    text = str(exc).lower()
    return any(hint in text for hint in _RATE_LIMIT_HINTS)


def normalize_results(raw: Any, max_results: int) -> list[SearchResult]:
    """Results as the model gets them: title, href (falling back to url), body (or snippet)."""
    results: list[SearchResult] = []
    if not isinstance(raw, list):
        return results
    for item in raw:
        if not isinstance(item, dict):
            continue
        results.append(
            {
                "title": str(item.get("title") or ""),
                "href": str(item.get("href") or item.get("url") or ""),
                "body": str(item.get("body") or item.get("snippet") or ""),
            }
        )
        if len(results) >= max_results:
            break
    return results


class SearchUnavailable(Exception):
    """The search could not be made (offline, timed out, rate-limited, shut down)."""


# Kinds of failure, by what the search library's text says (first match wins).
_CAUSES = (
    (
        ("dns", "resolv", "name or service not known"),
        "the search engine's name did not resolve (no network, or DNS blocked?)",
    ),
    (("connect", "unreachable", "network"), "no connection to the search engine"),
    (("timed out", "timeout"), "the search engine did not answer in time"),
)
CAUSE_CHARS = 120


def short_cause(exc: BaseException) -> str:
    """A failed search's cause in a few words (the library's text is a resolver's debug dump)."""
    text = str(exc)
    lowered = text.lower()
    for markers, cause in _CAUSES:
        if any(marker in lowered for marker in markers):
            return cause
    first = text.splitlines()[0] if text else ""
    return (
        f"{type(exc).__name__}: {short_text(first, CAUSE_CHARS)}" if first else type(exc).__name__
    )


def _no_results(exc: Exception) -> bool:
    # ddgs reports an empty result set as an exception.
    return "no results found" in str(exc).lower()


@dataclass
class _Cached:
    results: list[SearchResult]
    at: float


class WebSearch:
    """Searches the web; failures give [] (logged), repeats come from a short-lived cache."""

    def __init__(
        self,
        *,
        search_fn: SearchFn | None = None,
        backend: str = "duckduckgo",
        timeout: float = DEFAULT_TIMEOUT,
        cache_ttl: float = DEFAULT_CACHE_TTL,
        cache_size: int = DEFAULT_CACHE_SIZE,
        cooldown_initial: float = COOLDOWN_INITIAL,
        cooldown_max: float = COOLDOWN_MAX,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._search_fn = search_fn or ddgs_search_fn(backend, timeout)
        self._timeout = timeout
        self._cache_ttl = cache_ttl
        self._cache_size = cache_size
        self._cooldown_initial = cooldown_initial
        self._cooldown_max = cooldown_max
        self._clock = clock
        self._cache: OrderedDict[tuple[str, int], _Cached] = OrderedDict()
        self._cooldown = 0.0
        self._blocked_until = 0.0
        # Timed-out searches keep their thread until ddgs gives up; two threads bound that.
        self._executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="web-search")

    @property
    def cooling_down(self) -> bool:
        """True while searches are suspended after a rate limit."""
        return self._clock() < self._blocked_until

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        """Up to `max_results` results for `query` ([] when there are none).

        Raises SearchUnavailable when the search cannot be made, so that an outage is never
        mistaken for "nothing found".
        """
        query = " ".join(query.split())
        if not query:
            return []
        max_results = max(1, min(max_results, MAX_RESULTS_CAP))
        key = (query, max_results)
        cached = self._cache.get(key)
        now = self._clock()
        if cached is not None and now - cached.at <= self._cache_ttl:
            self._cache.move_to_end(key)
            return [dict(item) for item in cached.results]
        if now < self._blocked_until:
            wait = self._blocked_until - now
            log.info("web search skipped: rate-limit cooldown for %.0fs", wait)
            raise SearchUnavailable(f"searches are paused for {wait:.0f} s after a rate limit")
        raw = await self._run(query, max_results)
        self._cooldown = 0.0
        results = normalize_results(raw, max_results)
        if results:
            self._cache[key] = _Cached([dict(item) for item in results], self._clock())
            self._cache.move_to_end(key)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return results

    async def _run(self, query: str, max_results: int) -> Any:
        """The search function's raw answer; its failures become SearchUnavailable."""
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self._timeout):
                return await loop.run_in_executor(
                    self._executor, self._search_fn, query, max_results
                )
        except TimeoutError:
            log.warning("web search timed out after %.0fs", self._timeout)
            raise SearchUnavailable(f"no answer within {self._timeout:g} s") from None
        except Exception as exc:
            if _no_results(exc):
                return []
            if is_rate_limit(exc):
                self._cooldown = min(
                    self._cooldown_max, max(self._cooldown_initial, self._cooldown * 2)
                )
                self._blocked_until = self._clock() + self._cooldown
                log.warning("web search rate-limited; pausing searches for %.0fs", self._cooldown)
                raise SearchUnavailable("the search engine is rate-limiting searches") from exc
            log.warning("web search failed: %s", short_cause(exc))
            raise SearchUnavailable(f"the search failed ({type(exc).__name__})") from exc

    def close(self) -> None:
        """Stop the worker threads (a running search finishes in the background)."""
        self._executor.shutdown(wait=False, cancel_futures=True)


class WebSearchTool:
    """The `web_search` tool over a shared WebSearch."""

    def __init__(self, search: WebSearch, settings: Callable[[], Settings]) -> None:
        self._search = search
        self._settings = settings

    async def web_search(self, query: str, max_results: int | None = None) -> list[SearchResult]:
        """Search the web (DuckDuckGo) and return result titles, URLs and snippets.

        Use it to find pages; read one with scrape_url, a PDF with pdf_to_text. An empty
        result list means nothing was found; an error means the search is unavailable now.

        Args:
            query: What to search for. An empty query returns an empty list.
            max_results: How many results to return; 0, negative or omitted uses the
                configured default (5).
        """
        settings = self._settings()
        if max_results is None or max_results <= 0:
            max_results = settings.web_search_max_results
        try:
            return await self._search.search(query, max_results)
        except SearchUnavailable as exc:
            raise unavailable_error(exc, settings.language) from exc


def unavailable_error(exc: SearchUnavailable, language: str) -> ToolError:
    """What the model is told when the web cannot be searched now."""
    return ToolError(prompts_for(language).format("web_search_unavailable", reason=str(exc)))


def describe_web_search(args: dict[str, Any]) -> str:
    """UI label of a web_search call."""
    return f'web_search "{short_text(args.get("query"))}"'


def web_search_sources(_args: dict[str, Any], result: ToolResult) -> list[Source]:
    """The hits of a web_search result (a JSON list of title/href/body objects)."""
    try:
        hits = json.loads(result.text)
    except ValueError:
        return []
    if not isinstance(hits, list):
        return []
    return [
        Source(str(hit.get("title", "")), str(hit["href"]))
        for hit in hits
        if isinstance(hit, dict) and hit.get("href")
    ]


DISPLAY = ToolDisplay("🔎", describe_web_search)
