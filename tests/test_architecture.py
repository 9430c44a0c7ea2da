"""Dependency rules of design §2, checked on the source."""

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
