"""Every SQL statement in bot/store on a community table filters on (or writes) `space_id`.

The community tables are every table with a space column, derived from the schema's
declaration (`bot.store.schema.tables.SPACE_TABLES`), never listed here by hand.
A static check over the source: string literals that read or write a community table must
mention `space_id`, or be built in a function that scopes with `in_space(...)`. Functions
named `*_all_spaces` are the explicit operator/maintenance exceptions; the short allow-list
below names the others with the reason.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from bot.store.schema.tables import SPACE_TABLES

STORE = Path(__file__).resolve().parents[2] / "bot" / "store"

# Schema definitions and their migrations, not queries.
SCHEMA_ROOM = "schema"
ALLOWED: dict[tuple[str, str], str] = {
    ("repos/stats.py", "collect"): "operator dashboard: totals over every space",
    ("transfer.py", "_refuse_existing"): "ids are unique across spaces, so the check spans all",
    ("repos/api_logs.py", "add"): "a log row takes its space from its session, whatever the space",
    # API logs are shared on purpose (design §5): the operator's log view spans every space.
    ("repos/api_logs.py", "speakers"): "operator log rows by id; the member read joins in-space",
    ("repos/api_logs.py", "delete"): "the operator deletes a log row by its id, any space",
    ("repos/api_logs.py", "delete_matching"): "the operator's log filter, which may span spaces",
    ("reads/recall.py", "_word_counts"): (
        "how many indexed messages hold a word, capped, over the whole index: what the term "
        "match costs (its postings span every space); only picks the words to match, no row"
    ),
}

_SQL = re.compile(
    r"\b(?:FROM|JOIN|UPDATE|INTO)\s+(" + "|".join(SPACE_TABLES) + r")\b", re.IGNORECASE
)


def _text(node: ast.AST, constants: dict[str, str]) -> str | None:
    """The text of a str constant or f-string; module-level text constants are filled in,
    other interpolations read '{}'."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.FormattedValue):
        value = node.value
        return constants.get(value.id, "{}") if isinstance(value, ast.Name) else "{}"
    if isinstance(node, ast.JoinedStr):
        return "".join(_text(part, constants) or "{}" for part in node.values)
    return None


def _imported_constants(statement: ast.ImportFrom) -> dict[str, str]:
    """The text constants an import takes from another bot.store module."""
    module = statement.module or ""
    source = STORE.joinpath(*module.split(".")[2:]).with_suffix(".py")
    if not module.startswith("bot.store.") or not source.is_file():
        return {}
    theirs = _module_constants(ast.parse(source.read_text(encoding="utf-8")))
    return {
        alias.asname or alias.name: theirs[alias.name]
        for alias in statement.names
        if alias.name in theirs
    }


def _module_constants(tree: ast.Module) -> dict[str, str]:
    """The module's text constants, and those it imports from other bot.store modules."""
    constants: dict[str, str] = {}
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom):
            constants |= _imported_constants(statement)
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str)
        ):
            constants[statement.targets[0].id] = statement.value.value
    return constants


def _calls(function: ast.AST, name: str) -> bool:
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name | ast.Attribute)
        and (getattr(node.func, "id", None) or getattr(node.func, "attr", None)) == name
        for node in ast.walk(function)
    )


def unscoped_queries(source: str, module: str) -> list[str]:
    """`module:function: SQL` for every community-table statement without its space."""
    tree = ast.parse(source)
    constants = _module_constants(tree)
    owner: dict[int, ast.AST] = {}
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(function):
                owner.setdefault(id(node), function)
    problems: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and id(node) in owner:
            parent = owner[id(node)]
            # Parts of an f-string are checked as the whole f-string.
            if any(
                isinstance(joined, ast.JoinedStr) and node in joined.values
                for joined in ast.walk(parent)
            ):
                continue
        text = _text(node, constants)
        if text is None or not _SQL.search(text) or "space_id" in text:
            continue
        function = owner.get(id(node))
        name = getattr(function, "name", "<module>")
        if name.endswith("_all_spaces") or (module, name) in ALLOWED:
            continue
        if (
            isinstance(node, ast.JoinedStr)
            and function is not None
            and _calls(function, "in_space")
        ):
            continue
        problems.append(f"{module}:{name}: {' '.join(text.split())[:120]}")
    return problems


def test_every_store_query_on_a_community_table_is_scoped_by_space() -> None:
    problems: list[str] = []
    for path in sorted(STORE.rglob("*.py")):
        module = path.relative_to(STORE).as_posix()
        if not module.startswith(SCHEMA_ROOM + "/"):
            problems += unscoped_queries(path.read_text(encoding="utf-8"), module)
    assert problems == [], "queries without space_id:\n" + "\n".join(problems)


def test_the_allow_list_names_existing_functions() -> None:
    for module, function in ALLOWED:
        tree = ast.parse((STORE / module).read_text(encoding="utf-8"))
        names = {
            node.name
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        assert function in names, f"{module}:{function} is allowed but no longer exists"


def test_the_check_catches_a_query_that_forgets_its_space() -> None:
    source = """
async def bad(db, page_id):
    return await db.fetchall("SELECT * FROM note_pages WHERE id = ?", (page_id,))

async def bad_join(db):
    return await db.fetchall(f"SELECT t.tag FROM memory_tags t JOIN x ON {1}")

async def good(db, space, page_id):
    return await db.fetchall(
        "SELECT * FROM note_pages WHERE space_id = ? AND id = ?", (space, page_id)
    )

async def scoped(db, scope):
    where, params = in_space(scope)
    return await db.fetchall(f"SELECT * FROM sessions WHERE {where}", params)

async def sweep_all_spaces(db):
    return await db.fetchall("SELECT id FROM messages WHERE tagged_at IS NULL")
"""
    problems = unscoped_queries(source, "example.py")
    assert [problem.split(": ")[0] for problem in problems] == [
        "example.py:bad",
        "example.py:bad_join",
    ]


def test_the_check_covers_every_table_with_a_space_column() -> None:
    source = "\n".join(
        f"async def read_{table}(db):\n    return await db.fetchall('SELECT * FROM {table}')\n"
        for table in SPACE_TABLES
    )
    flagged = [problem.split(": ")[0] for problem in unscoped_queries(source, "every.py")]
    assert flagged == [f"every.py:read_{table}" for table in SPACE_TABLES]
    assert {"api_logs", "word_pool_authors", "note_versions", "token_usage"} <= set(SPACE_TABLES)
