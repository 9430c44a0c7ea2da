"""Dependency rules of the layout, checked on the source."""

from __future__ import annotations

import ast
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
    tree = ast.parse(path.read_text("utf-8"))
    package = (
        _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    )
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
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
