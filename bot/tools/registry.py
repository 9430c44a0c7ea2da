"""The tool registry as callers use it, and `default_registry` with the built-in tools."""

from __future__ import annotations

from bot.config import Settings
from bot.tools.builtin import ToolDeps, build_tool_deps, register_builtin_tools
from bot.tools.core import (
    DEFAULT_TOOL_TIMEOUT,
    INJECTED_PARAMS,
    SourceReader,
    Tool,
    ToolDisplay,
    ToolHandler,
    ToolRegistry,
    schema_from_callable,
)
from bot.turn.tool_result import Source, ToolResult

__all__ = [
    "DEFAULT_TOOL_TIMEOUT",
    "INJECTED_PARAMS",
    "Source",
    "SourceReader",
    "Tool",
    "ToolDisplay",
    "ToolHandler",
    "ToolRegistry",
    "ToolResult",
    "default_registry",
    "schema_from_callable",
]


def default_registry(deps: ToolDeps | None = None) -> ToolRegistry:
    """A registry with the four built-in tools; builds its own dependencies when none given."""
    if deps is None:
        fixed = Settings()
        deps = build_tool_deps(lambda: fixed)
    registry = ToolRegistry()
    register_builtin_tools(registry, deps)
    return registry
