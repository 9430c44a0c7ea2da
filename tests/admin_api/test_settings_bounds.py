"""Settings over HTTP: out-of-range values are refused naming the field; the schema and the
source of each value are served from Settings itself."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from bot.config import RUNTIME_KEYS, SECRET_KEYS, Settings
from tests.admin_api.conftest import API_KEY, Admin, StartAdmin, sse_events
from tests.conftest import LOCAL
from tests.fakes.llm_server import Text

# (key, refused values, accepted values): the reports, each limit and one past it.
LIMITS: list[tuple[str, list[Any], list[Any]]] = [
    ("llm_context_tokens", [-5, 0, 511, 1_048_577, 2.5, "lots"], [512, 1_048_576]),
    ("user_cooldown_seconds", [-3, -0.01, 3601], [0, 3600]),
    ("local_kb_min_score", [7, 1.01, -1.01], [1, -1, 0.5]),
    ("memory_summarize_threshold", [1, 3, 1001], [4, 1000]),
    ("stream_edit_interval", [0, 0.19, 30.5], [0.2, 30]),
    ("knowledge_context_limit", [-1, 101], [0, 100]),
    ("web_search_max_results", [0, 21], [1, 20]),
    ("language", ["fr", ""], ["ja", "en"]),
    ("tagging_mode", ["magic"], ["llm", "keywords"]),
]
CASES = [(key, value, False) for key, bad, _ in LIMITS for value in bad] + [
    (key, value, True) for key, _, good in LIMITS for value in good
]


@pytest.mark.parametrize(("key", "value", "accepted"), CASES)
async def test_each_value_is_checked_against_the_settings_bounds(
    admin: Admin, key: str, value: Any, accepted: bool
) -> None:
    before = getattr(admin.services.settings(), key)
    reply = await admin.put("/api/settings", {"values": {key: value}})
    if accepted:
        assert reply.status == 200, reply.text
        assert reply.json["values"][key] == value
        assert getattr(admin.services.settings(), key) == value
        assert reply.json["sources"][key] == "override"
        return
    assert reply.status == 422, reply.text
    assert reply.json["error"] == "validation_error"
    assert reply.json["field"] == key
    assert list(reply.json["fields"]) == [key]
    assert reply.json["detail"].startswith(f"{key} must be ")
    assert getattr(admin.services.settings(), key) == before
    assert key not in await admin.services.repos.app_settings.all()


async def test_the_refusal_says_what_is_allowed(admin: Admin) -> None:
    reply = await admin.put("/api/settings", {"values": {"llm_context_tokens": -5}})
    assert reply.json["detail"] == (
        "llm_context_tokens must be a whole number, at least 512 and at most 1048576."
    )
    reply = await admin.put("/api/settings", {"values": {"language": "fr"}})
    assert reply.json["fields"] == {"language": "language must be one of en, ja."}


async def test_one_bad_value_saves_nothing(admin: Admin) -> None:
    before = admin.services.settings()
    reply = await admin.put(
        "/api/settings",
        {"values": {"llm_model": "ollama/other", "user_cooldown_seconds": -3, "db_path": None}},
    )
    assert reply.status == 422
    assert reply.json["field"] == "user_cooldown_seconds"
    assert set(reply.json["fields"]) == {"user_cooldown_seconds", "db_path"}
    assert "db_path cannot be changed at runtime." in reply.json["detail"]
    assert admin.services.settings() == before
    assert await admin.services.repos.app_settings.all() == {}


async def test_sources_and_reset_to_env(start_admin: StartAdmin) -> None:
    admin = await start_admin(llm_context_tokens=8192)
    sources = (await admin.get("/api/settings")).json["sources"]
    assert set(sources) == RUNTIME_KEYS
    assert sources["llm_context_tokens"] == "env"
    assert sources["tagging_mode"] == "default"

    await admin.put("/api/settings", {"values": {"llm_context_tokens": 4096}})
    changed = (await admin.get("/api/settings")).json
    assert changed["sources"]["llm_context_tokens"] == "override"
    assert changed["values"]["llm_context_tokens"] == 4096

    reset = await admin.put("/api/settings", {"values": {"llm_context_tokens": None}})
    assert reset.status == 200
    assert reset.json["sources"]["llm_context_tokens"] == "env"
    assert reset.json["values"]["llm_context_tokens"] == 8192
    assert admin.services.settings().llm_context_tokens == 8192
    assert await admin.services.repos.app_settings.all() == {}


async def test_the_schema_is_generated_from_settings(start_admin: StartAdmin) -> None:
    admin = await start_admin("litellm", llm_api_key=API_KEY, llm_context_tokens=8192)
    reply = await admin.get("/api/settings/schema")
    assert reply.status == 200
    schema = reply.json
    jsonschema.Draft202012Validator.check_schema(schema)
    properties = schema["properties"]
    assert set(properties) == RUNTIME_KEYS
    assert API_KEY not in reply.text and API_KEY[-4:] not in reply.text

    for key, prop in properties.items():
        assert prop["description"] == Settings.model_fields[key].description, key
        if key in SECRET_KEYS:
            assert prop["secret"] is True and "default" not in prop
            continue
        assert prop["default"] == getattr(admin.services.settings.base, key)
        if prop.get("type") in ("integer", "number"):
            assert "minimum" in prop or "exclusiveMinimum" in prop, key
            assert "maximum" in prop, key
    assert properties["llm_context_tokens"]["default"] == 8192, "the .env value, not the class's"
    assert (
        properties["llm_context_tokens"]["minimum"],
        properties["llm_context_tokens"]["maximum"],
    ) == (512, 1_048_576)
    assert properties["stream_edit_interval"]["minimum"] == 0.2
    assert properties["language"]["enum"] == ["en", "ja"]
    assert properties["tagging_mode"]["enum"] == ["keywords", "llm"]

    # The values the page shows validate against the schema it is given.
    values = (await admin.get("/api/settings")).json["values"]
    plain = {key: value for key, value in values.items() if key not in SECRET_KEYS}
    jsonschema.validate(plain, {**schema, "properties": {k: properties[k] for k in plain}})
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"llm_context_tokens": 511}, schema)


async def test_the_openapi_document_describes_the_refusal_fields(admin: Admin) -> None:
    spec = (await admin.get("/api/openapi.json")).json
    error = spec["components"]["schemas"]["ErrorOut"]
    assert set(error["required"]) == {"error", "detail"}
    assert {"field", "fields"} <= set(error["properties"])
    operations = {(path, method) for path, item in spec["paths"].items() for method in item}
    assert ("/api/settings/schema", "get") in operations


async def test_the_lowest_allowed_values_still_give_working_turns(admin: Admin) -> None:
    lowest = {"llm_context_tokens": 512, "memory_summarize_threshold": 4}
    assert (await admin.put("/api/settings", {"values": lowest})).status == 200
    admin.llm.default_reply = Text("Short answer.")
    session_id = None
    for turn in range(4):
        body: dict[str, Any] = {"message": f"question {turn}"}
        if session_id is not None:
            body["session_id"] = session_id
        events = sse_events((await admin.post("/api/chat/stream", body)).text)
        assert events[-1]["type"] == "done", events[-1]
        session_id = session_id or events[0]["value"]
    await admin.services.tasks.drain()
    assert session_id is not None
    summaries = await admin.services.repos.memories.all_for_session(LOCAL, session_id)
    assert summaries, "the summariser ran at the lowest threshold"
    assert {request.json["options"]["num_ctx"] for request in admin.llm.chat_requests} == {512}
