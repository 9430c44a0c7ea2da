"""Tools as typed callables: schemas inferred from signatures, typed results, display metadata."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import re
import types
import typing
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import ConfigDict, create_model
from pydantic import ValidationError as PydanticValidationError

from bot.errors import ToolError
from bot.llm.types import ToolSchema
from bot.tools.paging import paged_tool_result
from bot.turn.events import DEFAULT_TOOL_ICON
from bot.turn.tool_result import Source, ToolResult

log = logging.getLogger(__name__)

# Parameters the engine fills in itself (the conversation's session and space, the member
# speaking, the room left for the result); never shown to nor accepted from the model.
INJECTED_PARAMS = frozenset(
    {"session_id", "space_id", "member_id", "member_name", "message_id", "result_room"}
)
DEFAULT_TOOL_TIMEOUT = 60.0

ToolHandler = Callable[..., Awaitable[Any] | Any]
# Reads the sources of a successful call from its (validated) arguments and its result.
SourceReader = Callable[[dict[str, Any], ToolResult], Iterable[Source]]
LabelMaker = Callable[[dict[str, Any]], str]
# When a call waits for its member's Allow / Deny: never, always (an MCP server marked
# `confirm`), or while the CONFIRM_NOTE_WRITES setting is on (the notes-writing tools).
Confirm = Literal["never", "always", "note_writes"]
# The call's arguments, its result's body and how much of the body was kept → the arguments
# of the call that reads on from there, or None.
ResumeMaker = Callable[[dict[str, Any], str, int], dict[str, Any] | None]
_LABEL_CHARS = 60

_JSON_TYPES: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    dict: "object",
    list: "array",
}


def short_text(text: Any, limit: int = _LABEL_CHARS) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis (for labels)."""
    value = " ".join(str(text or "").split())
    return value if len(value) <= limit else value[: limit - 1] + "…"


def short_url(url: Any) -> str:
    """A URL as a label: host (without www.) and path for http(s), else the text itself."""
    text = str(url or "")
    parts = urlsplit(text)
    if parts.scheme in ("http", "https") and parts.hostname:
        return short_text(parts.hostname.removeprefix("www.") + parts.path.rstrip("/"))
    return short_text(text)


@dataclass(frozen=True)
class ToolDisplay:
    """How front ends show a call of the tool: an icon and a short label from its arguments."""

    icon: str = DEFAULT_TOOL_ICON
    label: LabelMaker | None = field(default=None, repr=False)


@dataclass
class Tool:
    """A tool the model may call, with how to show its calls and read its sources."""

    name: str
    handler: ToolHandler
    schema: ToolSchema
    paged: bool = False
    timeout: float = DEFAULT_TOOL_TIMEOUT
    injected: frozenset[str] = frozenset()
    validator: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    source: str = "builtin"
    display: ToolDisplay = field(default_factory=ToolDisplay)
    sources: SourceReader | None = field(default=None, repr=False)
    confirm: Confirm = "never"
    # The arguments of the call that reads on after the first `kept` characters of a result's
    # body, for a tool whose calls resume at an offset (None: it cannot say).
    resume: ResumeMaker | None = field(default=None, repr=False)

    @property
    def icon(self) -> str:
        """The icon front ends show next to this tool's calls."""
        return self.display.icon

    def label(self, arguments: dict[str, Any]) -> str:
        """The short label of a call; the tool's name when it has no label or the label fails."""
        if self.display.label is None:
            return self.name
        try:
            return self.display.label(arguments)
        except Exception:
            log.debug("label of %s failed", self.name, exc_info=True)
            return self.name

    def result_of(self, value: Any, arguments: dict[str, Any]) -> ToolResult:
        """The typed result of a handler's return value, its sources read when it succeeded."""
        if isinstance(value, ToolResult):
            result = value
        elif self.paged:
            result = paged_tool_result(to_json_text(value))
        else:
            result = ToolResult(to_json_text(value))
        if result.failed or result.sources or self.sources is None:
            return result
        try:
            found = tuple(self.sources(arguments, result))
        except Exception:
            log.warning("reading the sources of %s failed", self.name, exc_info=True)
            return result
        return replace(result, sources=found)


def _docstring_parts(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its description and per-argument text."""
    description: list[str] = []
    args: dict[str, str] = {}
    current: str | None = None
    arg_indent: int | None = None
    section = "description"
    for raw in inspect.cleandoc(doc).splitlines():
        line = raw.strip()
        header = re.fullmatch(r"(\w+):", line)
        if header and raw == line:
            section = "args" if header.group(1) in ("Args", "Arguments", "Parameters") else "other"
            continue
        if section == "description":
            description.append(line)
        elif section == "args" and line:
            indent = len(raw) - len(raw.lstrip())
            match = re.match(r"^(\w+)(?:\s*\(.*?\))?\s*:\s*(.*)$", line)
            if match and (arg_indent is None or indent == arg_indent):
                arg_indent = indent
                current = match.group(1)
                args[current] = match.group(2)
            elif current:
                args[current] = f"{args[current]} {line}".strip()
    return " ".join(part for part in description if part).strip(), args


def _json_type(annotation: Any) -> dict[str, Any]:
    """A small JSON schema for a Python annotation (Ollama-compatible)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        members = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(members) == 1:
            return _json_type(members[0])
        return {"anyOf": [_json_type(member) for member in members]}
    if origin is typing.Literal:
        values = list(typing.get_args(annotation))
        return {"type": _JSON_TYPES.get(type(values[0]), "string"), "enum": values}
    if origin in (list, tuple, set, frozenset):
        item_args = typing.get_args(annotation)
        schema: dict[str, Any] = {"type": "array"}
        if item_args:
            schema["items"] = _json_type(item_args[0])
        return schema
    if origin is dict:
        return {"type": "object"}
    return {"type": _JSON_TYPES.get(annotation, "string")}


def _is_optional(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType) and type(
        None
    ) in typing.get_args(annotation)


def schema_from_callable(
    func: Callable[..., Any], name: str | None = None, description: str | None = None
) -> tuple[ToolSchema, frozenset[str], Callable[[dict[str, Any]], dict[str, Any]]]:
    """Infer the function schema, the injected parameters and an argument validator."""
    signature = inspect.signature(func)
    hints = typing.get_type_hints(func)
    doc_description, doc_args = _docstring_parts(inspect.getdoc(func) or "")
    properties: dict[str, Any] = {}
    required: list[str] = []
    fields: dict[str, Any] = {}
    injected: set[str] = set()
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(param.name, str)
        if param.name in INJECTED_PARAMS:
            injected.add(param.name)
            continue
        prop = _json_type(annotation)
        if param.name in doc_args:
            prop["description"] = doc_args[param.name]
        properties[param.name] = prop
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
            fields[param.name] = (annotation, ...)
        else:
            fields[param.name] = (annotation, param.default)
        if _is_optional(annotation) or param.default is None:
            fields[param.name] = (annotation | None, param.default)
    model = create_model(
        f"{func.__name__}_args",
        __config__=ConfigDict(extra="ignore", strict=False),
        **fields,
    )

    def validate(arguments: dict[str, Any]) -> dict[str, Any]:
        parsed = model.model_validate(arguments)
        return {key: getattr(parsed, key) for key in fields}

    schema: ToolSchema = {
        "type": "function",
        "function": {
            "name": name or func.__name__,
            "description": description or doc_description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }
    return schema, frozenset(injected), validate


def to_json_text(value: Any) -> str:
    """A tool's return value as the text handed back to the model."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _parse_arguments(arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, str):
        parsed = json.loads(arguments)
        if not isinstance(parsed, dict):
            raise ValueError("arguments must be a JSON object")
        return parsed
    return dict(arguments)


class ToolRegistry:
    """Named tools, their schemas for the model, and safe execution."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        """Add a tool; a built-in name can never be replaced by another source."""
        existing = self._tools.get(tool.name)
        if existing is not None and existing.source == "builtin" and tool.source != "builtin":
            raise ValueError(f"tool {tool.name!r} would shadow a built-in tool")
        self._tools[tool.name] = tool

    def register(
        self,
        func: ToolHandler,
        *,
        name: str | None = None,
        description: str | None = None,
        paged: bool = False,
        timeout: float = DEFAULT_TOOL_TIMEOUT,
        display: ToolDisplay | None = None,
        sources: SourceReader | None = None,
        confirm: Confirm = "never",
        resume: ResumeMaker | None = None,
    ) -> Tool:
        """Register a typed callable; its schema comes from its signature and docstring."""
        schema, injected, validator = schema_from_callable(func, name, description)
        tool = Tool(
            name=schema["function"]["name"],
            handler=func,
            schema=schema,
            paged=paged,
            timeout=timeout,
            injected=injected,
            validator=validator,
            display=display or ToolDisplay(),
            sources=sources,
            confirm=confirm,
            resume=resume,
        )
        self.add(tool)
        return tool

    def remove(self, name: str) -> None:
        """Forget a tool (e.g. when its MCP server goes away)."""
        self._tools.pop(name, None)

    def names(self) -> list[str]:
        """Names of every registered tool."""
        return list(self._tools)

    def get(self, name: str) -> Tool | None:
        """The tool called `name`, if registered."""
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def copy(self) -> ToolRegistry:
        """A shallow copy, so a turn can add or hide tools without touching the shared one."""
        return ToolRegistry(self._tools.values())

    def schemas(self, exclude: Collection[str] = ()) -> list[ToolSchema]:
        """Function schemas for every tool but those named in `exclude` (hidden for one turn),
        in the format both backends accept."""
        return [tool.schema for name, tool in self._tools.items() if name not in exclude]

    @property
    def ollama_tools(self) -> list[ToolSchema]:
        """Schemas for Ollama's `tools=` argument (built-in and external alike)."""
        return self.schemas()

    async def execute(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None,
        injected: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        """Run a tool; every failure comes back as a failed result, never an exception."""
        tool = self._tools.get(name)
        if tool is None:
            return ToolResult.error(
                f"Unknown tool: {name}. Available tools: {', '.join(self._tools)}"
            )
        try:
            args = _validated(tool, arguments)
        except ToolError as exc:
            return ToolResult(exc.text, failed=True)
        call_args = dict(args)
        for key in tool.injected:
            call_args[key] = (injected or {}).get(key)
        try:
            async with asyncio.timeout(tool.timeout):
                value = await _call(tool.handler, call_args)
        except ToolError as exc:
            log.info("tool %s failed: %s", name, exc)
            return ToolResult(exc.text, failed=True)
        except TimeoutError:
            log.warning("tool %s timed out after %.0fs", name, tool.timeout)
            return ToolResult.error(f"Tool {name} timed out after {tool.timeout:g} seconds.")
        except Exception as exc:
            log.warning("tool %s failed: %s", name, exc, exc_info=log.isEnabledFor(logging.DEBUG))
            return ToolResult.error(f"{type(exc).__name__}: {exc}")
        return tool.result_of(value, args)


def _validated(tool: Tool, arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """The model's arguments, parsed and checked; raises ToolError with the model's text."""
    try:
        args = _parse_arguments(arguments)
    except (ValueError, TypeError) as exc:
        raise ToolError(f"Invalid arguments for {tool.name}: {exc}", as_json=True) from None
    for key in INJECTED_PARAMS:
        args.pop(key, None)
    if tool.validator is None:
        return args
    try:
        return tool.validator(args)
    except PydanticValidationError as exc:
        details = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise ToolError(f"Invalid arguments for {tool.name}: {details}", as_json=True) from None


async def _call(handler: ToolHandler, arguments: dict[str, Any]) -> Any:
    if inspect.iscoroutinefunction(handler):
        return await handler(**arguments)
    value = await asyncio.to_thread(handler, **arguments)
    if inspect.isawaitable(value):
        value = await value
    return value
