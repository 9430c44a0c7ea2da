"""Every input that takes a space refuses every other spelling of one: a 422 naming the field,
nothing stored, never a 500.

The inputs are found in the served OpenAPI document (each carries the space id pattern), so a
new route that takes a space is covered without touching this file; a parameter or body field
named like a space without the pattern fails the test instead of slipping past it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from bot.store.schema.tables import TABLES
from bot.store.spaces import SPACE_ID_PATTERN
from tests.admin_api.conftest import Admin

# Each is refused; none of them is a second spelling the store may see.
ODD_SPACE_IDS = (
    "guild:01",  # a leading zero: the store would write guild:1 beside it
    "dm:007",
    "guild:0",  # no snowflake is zero
    "guild:9223372036854775808",  # 2^63: past the store's signed 64-bit INTEGER
    "guild:18446744073709551615",  # 2^64 - 1
    "dm:18446744073709551616",  # 2^64
    "guild:99999999999999999999",
    "guild:-1",
    "guild:+5",
    "guild:1e3",
    "",
    "guild:",
    "dm:",
    "local:",
    "guild:１２",  # fullwidth digits
    "guild:١٢",  # Arabic-Indic digits
    "dm:۱۲",  # Extended Arabic-Indic digits
    " guild:12",
    "guild:12 ",
    "guild: 12",
    "guild:12\n",
    "guild:12:3",
    "GUILD:12",
    "server:12",
    "guild",
    "local:a b",
    "local:ｌｏｃａｌ",
    "local:" + "a" * 65,
    "local:../etc",
)
SPACE_NAMES = frozenset({"space", "space_id"})


@dataclass(frozen=True)
class SpaceInput:
    """One input of one operation that takes a space."""

    method: str
    path: str
    where: str  # path, query or body
    field: tuple[str, ...]  # the parameter, or the field's path in the body

    @property
    def location(self) -> str:
        return ".".join((self.where, *self.field))


def _resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if ref is None:
        return schema
    return _resolve(doc, doc["components"]["schemas"][ref.rsplit("/", 1)[1]])


def _options(doc: dict[str, Any], schema: dict[str, Any]) -> list[dict[str, Any]]:
    schema = _resolve(doc, schema)
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        return [one for option in options for one in _options(doc, option)]
    return [schema]


def _is_space(doc: dict[str, Any], schema: dict[str, Any]) -> bool:
    return any(one.get("pattern") == SPACE_ID_PATTERN for one in _options(doc, schema))


def _body_fields(
    doc: dict[str, Any], schema: dict[str, Any], prefix: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], bool]]:
    """(field path, takes a space) for every named field of a body, nested objects included."""
    found: list[tuple[tuple[str, ...], bool]] = []
    for option in _options(doc, schema):
        for name, sub in option.get("properties", {}).items():
            found.append(((*prefix, name), _is_space(doc, sub)))
            if len(prefix) < 3:
                found += _body_fields(doc, sub, (*prefix, name))
    return found


def space_inputs(doc: dict[str, Any]) -> list[SpaceInput]:
    """Every input of every operation that takes a space; asserts none is named like one
    without being one."""
    inputs: list[SpaceInput] = []
    for path, operations in doc["paths"].items():
        for method, operation in operations.items():
            for param in operation.get("parameters", []):
                named = param["name"] in SPACE_NAMES or (
                    path.startswith("/api/spaces/{") and param["name"] == "id"
                )
                if _is_space(doc, param["schema"]):
                    inputs.append(SpaceInput(method, path, param["in"], (param["name"],)))
                else:
                    assert not named, f"{method} {path} takes {param['name']} unchecked"
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            for field, is_space in _body_fields(doc, body["schema"]) if body else []:
                if is_space:
                    inputs.append(SpaceInput(method, path, "body", field))
                else:
                    assert field[-1] not in SPACE_NAMES, f"{method} {path} body {field} unchecked"
    return inputs


def sample(doc: dict[str, Any], schema: dict[str, Any]) -> Any:
    """A plausible value for a schema (only the space input under test must be refused)."""
    options = [one for one in _options(doc, schema) if one.get("type") != "null"]
    one = options[0] if options else {}
    if one.get("pattern") == SPACE_ID_PATTERN:
        return "local:local"
    if "enum" in one:
        return one["enum"][0]
    if "const" in one:
        return one["const"]
    if one.get("examples"):
        return one["examples"][0]
    kind = one.get("type")
    if kind == "integer":
        return max(one.get("minimum", 1), 1)
    if kind == "number":
        return 1
    if kind == "boolean":
        return False
    if kind == "array":
        return []
    if kind == "object" or "properties" in one:
        return {name: sample(doc, one["properties"][name]) for name in one.get("required", [])}
    if one.get("format") == "date-time":
        return "2026-01-01T00:00:00Z"
    return "abc"


def request_for(doc: dict[str, Any], target: SpaceInput, value: str) -> dict[str, Any]:
    """The method, URL, query and body of a request putting `value` in the target input."""
    operation = doc["paths"][target.path][target.method]
    url, params = target.path, {}
    for param in operation.get("parameters", []):
        chosen = (
            value
            if (param["in"], param["name"]) == (target.where, target.field[0])
            else sample(doc, param["schema"])
        )
        if param["in"] == "path":
            url = url.replace("{" + param["name"] + "}", quote(str(chosen), safe=""))
        elif param.get("required") or param["name"] == target.field[0]:
            params[param["name"]] = str(chosen).lower() if chosen is False else str(chosen)
    body = None
    content = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if content is not None:
        body = sample(doc, content["schema"])
        if target.where == "body":
            node, schema = body, content["schema"]
            for name in target.field[:-1]:
                schema = _options(doc, schema)[0]["properties"][name]
                node = node.setdefault(name, sample(doc, schema))
            node[target.field[-1]] = value
    return {"method": target.method.upper(), "path": url, "params": params, "json_body": body}


async def row_counts(admin: Admin) -> dict[str, int]:
    """Rows per table."""
    db = admin.services.db
    return {
        table.name: int(await db.scalar(f"SELECT COUNT(*) FROM {table.name}")) for table in TABLES
    }


async def test_every_space_input_refuses_odd_ids_by_name_and_stores_nothing(admin: Admin) -> None:
    doc = (await admin.get("/api/openapi.json")).json
    inputs = space_inputs(doc)
    # The routes this issue found, so a broken discovery cannot pass on an empty list.
    locations = {(i.method, i.path, i.location) for i in inputs}
    for known in (
        ("post", "/api/notes", "body.space_id"),
        ("post", "/api/notes/{id}/move", "body.space_id"),
        ("post", "/api/memory/knowledge/{id}/move", "body.space_id"),
        ("post", "/api/sessions/import", "query.space"),
        ("post", "/api/sessions/import", "body.session.space_id"),
        ("post", "/api/chat/stream", "body.space_id"),
        ("delete", "/api/spaces/{id}", "path.id"),
        ("get", "/api/memory/members/{space}", "path.space"),
        ("get", "/api/notes", "query.space"),
    ):
        assert known in locations, known
    before = await row_counts(admin)
    tried = 0
    for target in inputs:
        for value in ODD_SPACE_IDS:
            if target.where == "path" and value == "":
                continue  # an empty path segment is another URL, not this route
            request = request_for(doc, target, value)
            reply = await admin.call(**request)
            assert reply.status == 422, (target, value, reply.status, reply.text)
            assert reply.json["error"] == "validation_error"
            assert target.location in reply.json["detail"], (target, value, reply.json)
            tried += 1
    assert tried > 300, tried
    assert await row_counts(admin) == before
    assert admin.llm.chat_requests == [], "a refused chat never reaches the model"


async def test_the_same_requests_with_a_good_space_are_not_refused_for_it(admin: Admin) -> None:
    """The control: each generated request is refused for the space alone."""
    doc = (await admin.get("/api/openapi.json")).json
    for target in space_inputs(doc):
        if target.path == "/api/chat/stream":
            continue  # a good one starts a turn; test_spaces.py covers the chat in a space
        for good in ("guild:1", "dm:9223372036854775807", "local:local"):
            reply = await admin.call(**request_for(doc, target, good))
            assert reply.status < 500, (target, good, reply.text)
            if reply.status == 422:
                assert target.location not in reply.json["detail"], (target, good, reply.text)


async def test_an_import_file_naming_a_second_spelling_is_refused(admin: Admin) -> None:
    """The import in the issue: `guild:01` in the file was a 409 'clashes'; now it names the
    field, and the same file with the space's one spelling imports."""
    export = {
        "version": 1,
        "exported_at": "2026-01-01T00:00:00+00:00",
        "session": {
            "id": "imported-1",
            "space_id": "guild:01",
            "created_at": "2026-01-01T00:00:00+00:00",
            "updated_at": "2026-01-01T00:00:00+00:00",
        },
        "messages": [
            {"id": 1, "role": "user", "content": "hi", "created_at": "2026-01-01T00:00:00+00:00"}
        ],
    }
    before = await row_counts(admin)
    refused = await admin.post("/api/sessions/import", export)
    assert refused.status == 422 and "body.session.space_id" in refused.json["detail"]
    assert "guild:01" not in refused.text, "the refused input is not echoed"
    assert await row_counts(admin) == before
    export["session"]["space_id"] = "guild:1"  # type: ignore[index]
    imported = await admin.post("/api/sessions/import", export)
    assert imported.status == 201, imported.text
    session = await admin.get("/api/sessions/imported-1")
    assert session.json["space_id"] == "guild:1"
