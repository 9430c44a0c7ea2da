"""Dependency rules of the layout, checked on the source."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def _modules(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (REPO / folder).rglob("*.py"))


def test_only_the_composition_root_imports_admin_api() -> None:
    offenders = [
        path.relative_to(REPO).as_posix()
        for path in _modules("bot")
        if path.relative_to(REPO).as_posix() != "bot/__main__.py"
        and any(name == "admin_api" or name.startswith("admin_api.") for name in _imports(path))
    ]
    assert offenders == []


def test_admin_api_does_not_import_discord() -> None:
    offenders = [
        path.relative_to(REPO).as_posix()
        for path in _modules("admin_api")
        if any(name == "discord" or name.startswith("discord.") for name in _imports(path))
    ]
    assert offenders == []


def test_no_global_statements() -> None:
    offenders = [
        path.relative_to(REPO).as_posix()
        for path in _modules("bot", "admin_api")
        if any(
            isinstance(node, ast.Global) for node in ast.walk(ast.parse(path.read_text("utf-8")))
        )
    ]
    assert offenders == []


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _runtime_imports(path: Path) -> list[str]:
    """Absolute and relative imports anywhere in the module, except under `if TYPE_CHECKING`."""
    return _imported_modules(path, type_only=False)


def _imported_modules(path: Path, *, type_only: bool) -> list[str]:
    """Absolute and relative imports anywhere in the module (function bodies included);
    those under `if TYPE_CHECKING` only when `type_only`."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    return _imports_in(path.read_text("utf-8"), package, type_only=type_only)


def _imports_in(source: str, package: str, *, type_only: bool) -> list[str]:
    """The modules `source` imports, its relative imports read from `package`."""
    tree = ast.parse(source)
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if not type_only and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    names: list[str] = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            names.append(module)
            # `from bot.x import y` may import the submodule bot.x.y.
            names.extend(f"{module}.{alias.name}" for alias in node.names)
    return names


def _bot_graph() -> dict[str, set[str]]:
    modules = {_module_name(path): path for path in _modules("bot")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        graph[name] = {
            target for target in _runtime_imports(path) if target in modules and target != name
        }
    return graph


def test_only_the_discord_layer_imports_discord() -> None:
    allowed = ("bot/bot.py", "bot/exts/")
    offenders = [
        rel
        for path in _modules("bot", "admin_api")
        if not (rel := path.relative_to(REPO).as_posix()).startswith(allowed)
        and any(name == "discord" or name.startswith("discord.") for name in _imports(path))
    ]
    assert offenders == []


def test_bot_top_level_is_the_five_modules() -> None:
    top = sorted(path.name for path in (REPO / "bot").glob("*.py"))
    assert top == [
        "__init__.py",
        "__main__.py",
        "bot.py",
        "config.py",
        "errors.py",
        "services.py",
    ]


def test_memory_and_tools_never_import_chat() -> None:
    """They hook into a turn through bot.turn's vocabulary, never through chat/ (the engine)."""
    offenders = [
        path.relative_to(REPO).as_posix()
        for path in _modules("bot/memory", "bot/tools", "bot/turn")
        if any(
            name == "bot.chat" or name.startswith("bot.chat.")
            for name in [*_runtime_imports(path), *_imports(path)]
        )
    ]
    assert offenders == []


def test_no_import_cycles_in_bot() -> None:
    graph = _bot_graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1 = on the current path, 2 = finished
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph[node]):
            # A package's __init__ importing its own submodules is not a cycle of modules.
            if node.startswith(target + "."):
                continue
            if state.get(target) == 1:
                cycles.append([*stack[stack.index(target) :], target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert cycles == []


def test_every_public_extension_has_setup_and_is_loaded() -> None:
    from bot.bot import DEFAULT_EXTENSIONS

    exts = REPO / "bot" / "exts"
    public = sorted(
        f"bot.exts.{path.stem}" for path in exts.glob("*.py") if not path.name.startswith("_")
    ) + sorted(
        f"bot.exts.{path.parent.name}"
        for path in exts.glob("*/__init__.py")
        if not path.parent.name.startswith("_")
    )
    for name in public:
        module_path = exts / (name.rpartition(".")[2] + ".py")
        if not module_path.exists():
            module_path = exts / name.rpartition(".")[2] / "__init__.py"
        tree = ast.parse(module_path.read_text("utf-8"))
        assert any(
            isinstance(node, ast.AsyncFunctionDef) and node.name == "setup" for node in tree.body
        ), f"{name} has no setup()"
    assert sorted(DEFAULT_EXTENSIONS) == sorted(public)


def test_bot_text_is_the_ground_floor() -> None:
    """bot/text (scripts, terms, BM25) imports no other bot package, bot.errors aside."""
    assert _modules("bot/text")
    offenders = [
        f"{_module_name(path)} -> {target}"
        for path in _modules("bot/text")
        for target in _all_imports(path)
        if not target.startswith("bot.text") and target != "bot.errors"
    ]
    assert offenders == []


# The store's rooms, face first: a module may import its own room and the rooms after it.
# `erase` holds operations that span aggregates (many repositories' tables in one transaction).
STORE_ROOMS = (
    "bot.store",
    "bot.store.erase",
    "bot.store.reads",
    "bot.store.repos",
    "bot.store.engine",
    "bot.store.schema",
)
# Beside the rooms: the tenancy vocabulary (imported by every room) and the shard filter over it.
STORE_VOCABULARY = ("bot.store.spaces", "bot.store.shards")


def _store_room(module: str) -> str | None:
    for room in reversed(STORE_ROOMS):
        if module == room or module.startswith(room + "."):
            return None if room == "bot.store" and module != room else room
    return None


def _all_imports(path: Path) -> list[str]:
    """Every `bot` module the module imports, type-only imports included."""
    modules = {_module_name(module) for module in _modules("bot")}
    return [name for name in _imported_modules(path, type_only=True) if name in modules]


def test_store_rooms_depend_one_way() -> None:
    offenders: list[str] = []
    for path in _modules("bot/store"):
        name = _module_name(path)
        if name in STORE_VOCABULARY:
            allowed: tuple[str, ...] = STORE_VOCABULARY
        elif (room := _store_room(name)) is not None:
            allowed = STORE_ROOMS[STORE_ROOMS.index(room) :] + STORE_VOCABULARY
        else:  # transfer and other modules beside the rooms: anything but the face
            allowed = STORE_ROOMS[1:] + STORE_VOCABULARY
        for target in _all_imports(path):
            if not target.startswith("bot.store"):
                continue
            target_room = _store_room(target) or (
                target if target in STORE_VOCABULARY else "bot.store.transfer"
            )
            if target_room not in allowed and target != name:
                offenders.append(f"{name} -> {target}")
    assert offenders == []


def test_no_room_imports_the_modules_beside_the_rooms() -> None:
    beside = {"bot.store.transfer"}
    offenders = [
        f"{_module_name(path)} -> {target}"
        for path in _modules("bot/store")
        if _store_room(_module_name(path)) not in (None, "bot.store")
        for target in _all_imports(path)
        if target in beside
    ]
    assert offenders == []


def _repository_classes() -> set[str]:
    return {
        node.name
        for path in _modules("bot/store")
        for node in ast.walk(ast.parse(path.read_text("utf-8")))
        if isinstance(node, ast.ClassDef) and node.name.endswith("Repository")
    }


def test_only_the_store_face_constructs_repositories() -> None:
    classes = _repository_classes()
    assert {"MessageRepository", "ConversationRepository"} <= classes
    offenders: list[str] = []
    for path in _modules("bot", "admin_api"):
        rel = path.relative_to(REPO).as_posix()
        if rel == "bot/store/__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                if called in classes:
                    offenders.append(f"{rel}:{node.lineno} {called}(…)")
    assert offenders == []


# Edges between the children of one package: (package, child, child) -> the module pairs.
PackageEdges = dict[tuple[str, str, str], set[tuple[str, str]]]


def _package_edges() -> PackageEdges:
    """Every import in bot/ (type-only and relative ones included) as an edge between the two
    children of the deepest package holding both modules: sub-packages or modules. An import
    of a module by its own package, or of its own package by a module, is no edge."""
    modules = {_module_name(path): path for path in _modules("bot")}
    edges: PackageEdges = {}
    for source, path in modules.items():
        for target in _imported_modules(path, type_only=True):
            if target not in modules or target == source:
                continue
            a, b = source.split("."), target.split(".")
            depth = 0
            while depth < min(len(a), len(b)) and a[depth] == b[depth]:
                depth += 1
            if depth in (len(a), len(b)):
                continue  # one contains the other
            key = (".".join(a[:depth]), ".".join(a[: depth + 1]), ".".join(b[: depth + 1]))
            edges.setdefault(key, set()).add((source, target))
    return edges


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components of more than one node (each a cycle or several), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while (member := stack.pop()) != node:
                component.append(member)
            component.append(node)
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def _package_cycles() -> list[str]:
    """Each cycle among the children of a package, with the imports that make its edges."""
    edges = _package_edges()
    graphs: dict[str, dict[str, set[str]]] = {}
    for package, source, target in edges:
        graphs.setdefault(package, {}).setdefault(source, set()).add(target)
    reports = []
    for package in sorted(graphs):
        for component in _strongly_connected(graphs[package]):
            lines = [f"in {package}: {' <-> '.join(component)}"]
            for source in component:
                for target in component:
                    pairs = sorted(edges.get((package, source, target), ()))
                    if pairs:
                        imports = ", ".join(f"{a} imports {b}" for a, b in pairs)
                        lines.append(f"  {source} -> {target}: {imports}")
            reports.append("\n".join(lines))
    return reports


def test_no_package_cycles_in_bot() -> None:
    """At every depth of bot/, the children of a package (its sub-packages and modules, the
    top-level modules at the root) import one another one way only, counting the imports
    made for type checking alone (a cycle of those still ties the packages together)."""
    cycles = _package_cycles()
    assert not cycles, "package cycles:\n" + "\n".join(cycles)


def test_the_cycle_check_counts_type_only_and_relative_imports() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "from . import sibling\n"
        "from ..store import spaces\n"
        "def late():\n"
        "    import bot.llm.gateway\n"
        "if TYPE_CHECKING:\n"
        "    from bot.config import Settings\n"
    )
    seen = _imports_in(source, "bot.chat", type_only=True)
    assert {"bot.chat.sibling", "bot.store.spaces", "bot.llm.gateway", "bot.config"} <= set(seen)
    assert "bot.config" not in _imports_in(source, "bot.chat", type_only=False)
    assert _strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        ["a", "b", "c"]
    ]
    assert _strongly_connected({"a": {"b"}, "b": set()}) == []


MAX_FUNCTION_LINES = 60
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


def _functions(node: ast.AST, prefix: str = "") -> Iterator[tuple[FunctionNode, str]]:
    """Every function under `node` (methods and nested functions too), with its dotted name."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, FunctionNode):
            yield child, prefix + child.name
            yield from _functions(child, f"{prefix}{child.name}.")
        elif isinstance(child, ast.ClassDef):
            yield from _functions(child, f"{prefix}{child.name}.")
        else:
            yield from _functions(child, prefix)


def _long_functions(limit: int) -> list[str]:
    """`path:name:lines` of every function in bot/ and admin_api/ over `limit` lines, counted
    from its `def` line to its last line (decorators excluded)."""
    found = []
    for path in _modules("bot", "admin_api"):
        for node, name in _functions(ast.parse(path.read_text("utf-8"))):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > limit:
                found.append(f"{path.relative_to(REPO).as_posix()}:{name}:{lines}")
    return found


def test_no_function_over_60_lines() -> None:
    offenders = _long_functions(MAX_FUNCTION_LINES)
    assert not offenders, "functions over 60 lines:\n" + "\n".join(offenders)
