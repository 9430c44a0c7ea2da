"""ToolRegistry: schemas from typed callables, safe execution, no shadowing of built-ins."""

from __future__ import annotations

import asyncio
import json
from typing import Literal

import pytest

from bot.tools.registry import Tool, ToolRegistry


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
    assert json.loads(result) == {"url": "u", "max_chars": 7, "mode": "a", "session": "real"}


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
    result = json.loads(await registry.execute(name, arguments))  # type: ignore[arg-type]
    assert expected in result["error"]


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
    assert "timed out" in json.loads(await registry.execute("stuck", {}))["error"]
    assert json.loads(await registry.execute("crash", {}))["error"] == "ValueError: bad input"


def test_external_tool_cannot_shadow_a_builtin() -> None:
    registry = ToolRegistry()
    tool = registry.register(fetch)
    with pytest.raises(ValueError, match="shadow"):
        registry.add(Tool(name="fetch", handler=fetch, schema=tool.schema, source="mcp:evil"))
    assert registry.get("fetch") is tool
