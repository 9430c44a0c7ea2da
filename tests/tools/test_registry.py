"""ToolRegistry: schemas from typed callables, typed results, display, no shadowing of built-ins."""

from __future__ import annotations

import asyncio
import json
from typing import Literal

import pytest

from bot.errors import ToolError
from bot.tools.paging import format_paged_result
from bot.tools.registry import Source, Tool, ToolDisplay, ToolRegistry, ToolResult
from bot.turn.events import DEFAULT_TOOL_ICON


async def fetch(
    url: str,
    max_chars: int | None = None,
    mode: Literal["a", "b"] = "a",
    tags: list[str] | None = None,
    session_id: str | None = None,
) -> dict[str, object]:
    """Fetch something.

    Longer explanation that is not part of the summary line.

    Args:
        url: The address.
        max_chars: Characters per page;
            0 means the default.
        mode: Which mode.
        tags: Labels.
    """
    return {"url": url, "max_chars": max_chars, "mode": mode, "session": session_id}


def test_schema_is_inferred_from_signature_and_docstring() -> None:
    registry = ToolRegistry()
    registry.register(fetch)
    (schema,) = registry.ollama_tools
    function = schema["function"]
    assert schema["type"] == "function" and function["name"] == "fetch"
    assert function["description"].startswith("Fetch something.")
    params = function["parameters"]
    assert params["required"] == ["url"]
    assert set(params["properties"]) == {"url", "max_chars", "mode", "tags"}, "session_id hidden"
    assert params["properties"]["max_chars"] == {
        "type": "integer",
        "description": "Characters per page; 0 means the default.",
    }
    assert params["properties"]["mode"]["enum"] == ["a", "b"]
    assert params["properties"]["tags"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": "Labels.",
    }


async def test_execute_accepts_json_text_and_injects_session() -> None:
    registry = ToolRegistry()
    registry.register(fetch)
    result = await registry.execute(
        "fetch", '{"url": "u", "max_chars": "7", "session_id": "forged"}', {"session_id": "real"}
    )
    assert not result.failed
    assert json.loads(result.text) == {"url": "u", "max_chars": 7, "mode": "a", "session": "real"}


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("nope", {}, "Unknown tool: nope"),
        ("fetch", "{not json", "Invalid arguments for fetch"),
        ("fetch", "[1, 2]", "Invalid arguments for fetch"),
        ("fetch", {}, "url: Field required"),
        ("fetch", {"url": "u", "mode": "c"}, "mode"),
    ],
)
async def test_bad_calls_become_error_results(name: str, arguments: object, expected: str) -> None:
    registry = ToolRegistry()
    registry.register(fetch)
    result = await registry.execute(name, arguments)  # type: ignore[arg-type]
    assert result.failed
    assert expected in json.loads(result.text)["error"]


async def test_exceptions_and_timeouts_become_error_results() -> None:
    release = asyncio.Event()

    async def stuck() -> str:
        """Never returns."""
        await release.wait()
        return "late"

    def crash() -> str:
        """Sync and failing."""
        raise ValueError("bad input")

    registry = ToolRegistry()
    registry.register(stuck, timeout=0.05)
    registry.register(crash)
    stuck_result = await registry.execute("stuck", {})
    assert stuck_result.failed and "timed out" in json.loads(stuck_result.text)["error"]
    crashed = await registry.execute("crash", {})
    assert crashed.failed and json.loads(crashed.text)["error"] == "ValueError: bad input"


def test_external_tool_cannot_shadow_a_builtin() -> None:
    registry = ToolRegistry()
    tool = registry.register(fetch)
    with pytest.raises(ValueError, match="shadow"):
        registry.add(Tool(name="fetch", handler=fetch, schema=tool.schema, source="mcp:evil"))
    assert registry.get("fetch") is tool


async def test_tool_errors_reach_the_model_verbatim_and_mark_the_result_failed() -> None:
    async def seed_style(url: str) -> str:
        """Fails with a plain seed text.

        Args:
            url: Address.
        """
        raise ToolError(f"Blocked URL: {url} (not a public address).")

    async def json_style() -> str:
        """Fails with the JSON error object."""
        raise ToolError("No note page titled 'x'.", as_json=True)

    async def returns_failure() -> ToolResult:
        """Fails by returning a failed result."""
        return ToolResult("Quota used up.", failed=True)

    registry = ToolRegistry()
    for func in (seed_style, json_style, returns_failure):
        registry.register(func, sources=lambda args, result: [Source("never", "https://x.example")])
    seed = await registry.execute("seed_style", {"url": "http://10.0.0.1/"})
    assert seed == ToolResult("Blocked URL: http://10.0.0.1/ (not a public address).", failed=True)
    as_json = await registry.execute("json_style", {})
    assert as_json.failed and json.loads(as_json.text) == {"error": "No note page titled 'x'."}
    returned = await registry.execute("returns_failure", {})
    assert returned == ToolResult("Quota used up.", failed=True), "no sources for a failure"


async def test_content_that_looks_like_an_error_is_not_a_failure() -> None:
    async def quote() -> str:
        """Returns text that starts like an error report."""
        return '{"error": "this is just a quoted JSON document"}'

    registry = ToolRegistry()
    registry.register(quote)
    result = await registry.execute("quote", {})
    assert not result.failed
    assert result.text == '{"error": "this is just a quoted JSON document"}'


async def test_sources_are_read_by_the_tool_from_arguments_and_result() -> None:
    async def lookup(city: str) -> list[dict[str, str]]:
        """Look up a city.

        Args:
            city: Name.
        """
        return [{"name": city, "link": f"https://wiki.example/{city}"}]

    def sources(args: dict[str, object], result: ToolResult) -> list[Source]:
        return [Source(str(args["city"]), hit["link"]) for hit in json.loads(result.text)]

    def broken(args: dict[str, object], result: ToolResult) -> list[Source]:
        raise KeyError("link")

    registry = ToolRegistry()
    registry.register(lookup, sources=sources)
    result = await registry.execute("lookup", {"city": "Kyoto"})
    assert result.sources == (Source("Kyoto", "https://wiki.example/Kyoto"),)
    registry.register(lookup, sources=broken)
    unread = await registry.execute("lookup", {"city": "Kyoto"})
    assert not unread.failed and unread.sources == (), "a broken reader costs only the sources"


async def test_paged_tools_report_their_continuation() -> None:
    async def pages(last: bool = False) -> str:
        """A paged reader.

        Args:
            last: Whether this is the last page.
        """
        return format_paged_result("body", None if last else "tok-1")

    registry = ToolRegistry()
    registry.register(pages, paged=True)
    first = await registry.execute("pages", {})
    assert (first.has_more, first.next_token) == (True, "tok-1")
    assert first.text == "body\n\n---page-info---\nhas_more: true\nnext_token: tok-1"
    last = await registry.execute("pages", {"last": True})
    assert (last.text, last.has_more, last.next_token) == ("body", False, None)


def test_display_gives_icon_and_a_label_that_never_fails() -> None:
    registry = ToolRegistry()
    plain = registry.register(fetch)
    assert (plain.icon, plain.label({"url": "u"})) == (DEFAULT_TOOL_ICON, "fetch")

    def label(args: dict[str, object]) -> str:
        return f"fetch {args['url']}"

    shown = registry.register(fetch, display=ToolDisplay("🛰️", label))
    assert (shown.icon, shown.label({"url": "u"})) == ("🛰️", "fetch u")
    assert shown.label({}) == "fetch", "a label that raises falls back to the name"
