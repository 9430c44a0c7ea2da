"""Import rules of design §2 that the tool layer relies on, checked on the source (AST)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted((REPO / "bot").rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(node: ast.AST, *, typing_too: bool) -> Iterator[str]:
    """Every module `node` imports, at any depth (functions too), TYPE_CHECKING blocks optional."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child) and not typing_too:
            for branch in child.orelse:
                yield from _imported(branch, typing_too=typing_too)
            continue
        if isinstance(child, ast.Import):
            yield from (alias.name for alias in child.names)
        elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
            yield child.module
            yield from (f"{child.module}.{alias.name}" for alias in child.names)
        yield from _imported(child, typing_too=typing_too)


def _graph(*, typing_too: bool) -> dict[str, set[str]]:
    modules = _modules()
    return {
        name: {
            target
            for target in _imported(ast.parse(path.read_text("utf-8")), typing_too=typing_too)
            if target in modules and target != name
        }
        for name, path in modules.items()
    }


def _cycle_from(start: str, graph: dict[str, set[str]]) -> list[str] | None:
    """A path start → … → start, if there is one."""
    stack = [(start, [start])]
    seen: set[str] = set()
    while stack:
        node, path = stack.pop()
        for target in sorted(graph[node]):
            if target == start:
                return [*path, start]
            if target not in seen:
                seen.add(target)
                stack.append((target, [*path, target]))
    return None


def test_the_bot_package_has_no_import_cycle_even_through_function_level_imports() -> None:
    graph = _graph(typing_too=False)
    cycles = [cycle for name in graph if (cycle := _cycle_from(name, graph))]
    assert cycles == []


def test_memory_and_tools_use_the_hook_vocabulary_not_the_engine() -> None:
    graph = _graph(typing_too=True)
    offenders = {
        name: sorted(targets & {"bot.chat.engine"})
        for name, targets in graph.items()
        if name.startswith(("bot.memory", "bot.tools")) and "bot.chat.engine" in targets
    }
    assert offenders == {}


def test_registry_core_does_not_depend_on_the_builtin_tools() -> None:
    graph = _graph(typing_too=True)
    assert "bot.tools.registry" not in graph["bot.tools.builtin"]
    assert "bot.tools.builtin" not in graph["bot.tools.core"]
