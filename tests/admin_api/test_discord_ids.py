"""Discord ids in the admin API are decimal strings (JSON numbers past 2^53 lose digits in
JavaScript and jq): every response, nested ones and the OpenAPI schemas say so, and requests
accept strings (and numbers, as before). Logs name the space and the member of each call."""

from __future__ import annotations

import json
import re
from dataclasses import fields

from admin_api.schemas import rows
from bot.store.repos.directory import ChannelSeen, DirectoryChannel, DirectoryServer
from bot.store.repos.messages import StoredMessage
from bot.store.repos.sessions import Session
from bot.store.repos.topics import TopicPost
from bot.topics.service import PostResult
from tests.admin_api.conftest import Admin

GUILD_ID = 1300000000000000849  # above 2^53 = 9007199254740992: a float would end in …800
CHANNEL_ID = 1300000000000000848
MESSAGE_ID = 1300000000000000847
GUILD = f"guild:{GUILD_ID}"


def raw_ids(text: str, key: str) -> list[str]:
    """Every value of `key` in the raw JSON text, as written on the wire (before any parsing)."""
    return re.findall(rf'"{key}":\s*("?[0-9]+"?|null)', text)


async def test_an_id_above_2_53_round_trips_exactly_as_a_string(admin: Admin) -> None:
    assert float(CHANNEL_ID) != CHANNEL_ID, "the id must be one a JSON number would damage"
    put = await admin.put(f"/api/topics/{CHANNEL_ID}", {"guild_id": str(GUILD_ID)})
    assert put.status == 200, put.text
    assert put.json["channel"]["channel_id"] == str(CHANNEL_ID)
    assert put.json["channel"]["guild_id"] == str(GUILD_ID)
    listing = await admin.get("/api/topics")
    assert raw_ids(listing.text, "channel_id") == [f'"{CHANNEL_ID}"']
    assert raw_ids(listing.text, "guild_id") == [f'"{GUILD_ID}"']
    # A number is still accepted in a request (scripts written before keep working).
    again = await admin.put(f"/api/topics/{CHANNEL_ID}", {"guild_id": GUILD_ID})
    assert again.status == 200 and again.json["channel"]["guild_id"] == str(GUILD_ID)
    for bad in ("12ab", "-5", "1.5"):
        refused = await admin.put(f"/api/topics/{CHANNEL_ID}", {"guild_id": bad})
        assert refused.status == 422, bad


async def test_sessions_messages_directory_and_spaces_answer_strings(admin: Admin) -> None:
    services = admin.services
    await services.spaces.ensure(GUILD, "Tabletop Club")
    await services.repos.directory.replace_server(
        GUILD, [ChannelSeen(CHANNEL_ID, "dice", "text", parent_id=MESSAGE_ID)]
    )
    session = await services.repos.sessions.create(
        GUILD,
        title="Dice",
        source="discord",
        discord_channel_id=CHANNEL_ID,
        discord_guild_id=GUILD_ID,
        parent_channel_id=CHANNEL_ID,
    )
    await services.repos.messages.add(
        GUILD, session.id, "user", "roll", author_id="42", discord_message_id=MESSAGE_ID
    )
    listing = await admin.get("/api/sessions")
    assert raw_ids(listing.text, "discord_channel_id") == [f'"{CHANNEL_ID}"']
    assert raw_ids(listing.text, "discord_guild_id") == [f'"{GUILD_ID}"']
    one = await admin.get(f"/api/sessions/{session.id}")
    assert one.json["parent_channel_id"] == str(CHANNEL_ID)
    messages = await admin.get(f"/api/sessions/{session.id}/messages")
    assert raw_ids(messages.text, "discord_message_id") == [f'"{MESSAGE_ID}"']
    transcript = await admin.get(f"/api/conversations/{session.id}/transcript")
    assert transcript.json["session"]["discord_guild_id"] == str(GUILD_ID)
    directory = await admin.get("/api/directory")
    assert raw_ids(directory.text, "guild_id") == [f'"{GUILD_ID}"']
    assert raw_ids(directory.text, "parent_id") == [f'"{MESSAGE_ID}"']
    spaces = (await admin.get("/api/spaces")).json["spaces"]
    assert {s["id"]: s["discord_id"] for s in spaces}[GUILD] == str(GUILD_ID)


async def test_the_openapi_schemas_declare_ids_as_strings(admin: Admin) -> None:
    schemas = (await admin.get("/api/openapi.json")).json["components"]["schemas"]
    for model, key in (
        ("TopicChannelOut", "channel_id"),
        ("TopicPostOut", "discord_message_id"),
        ("SessionOut", "discord_channel_id"),
        ("DirectoryServerOut", "guild_id"),
        ("SpaceOut", "discord_id"),
    ):
        text = json.dumps(schemas[model]["properties"][key])
        assert '"integer"' not in text and '"pattern": "^[0-9]{1,20}$"' in text, (model, text)
    update = json.dumps(schemas["TopicUpdateIn"]["properties"]["guild_id"])
    assert '"type": "string"' in update and '"integer"' in update, "a request may send either"


async def test_logs_name_the_space_and_the_member_of_each_call(admin: Admin) -> None:
    services = admin.services
    await services.spaces.ensure(GUILD, "Tabletop Club")
    session = await services.repos.sessions.create(GUILD, title="Dice")
    await services.repos.messages.add(
        GUILD, session.id, "user", "hi", author_id="1300000000000000777", author_name="Mika"
    )
    answered = await services.repos.api_logs.add(
        session_id=session.id,
        model="m",
        purpose="chat",
        request_json="{}",
        response_text="ok",
        error=None,
        latency_ms=5,
    )
    await services.repos.messages.add(
        GUILD, session.id, "user", "later", author_id="9", author_name="Ren"
    )
    outside = await services.repos.api_logs.add(
        session_id=None,
        model="m",
        purpose="embed",
        request_json="{}",
        response_text="ok",
        error=None,
        latency_ms=5,
    )
    items = {item["id"]: item for item in (await admin.get("/api/logs")).json["items"]}
    assert items[answered]["space_id"] == GUILD
    assert (items[answered]["member_id"], items[answered]["member_name"]) == (
        "1300000000000000777",
        "Mika",
    ), "the member whose message the call answered, not a later one"
    assert (items[outside]["member_id"], items[outside]["member_name"]) == (None, None)


def test_the_row_models_show_every_field_of_the_store_rows() -> None:
    """A field added to a store row must appear in the API too (the row models mirror them)."""
    pairs = (
        (rows.SessionOut, Session),
        (rows.StoredMessageOut, StoredMessage),
        (rows.TopicPostOut, TopicPost),
        (rows.DirectoryServerOut, DirectoryServer),
        (rows.DirectoryChannelOut, DirectoryChannel),
        (rows.PostResultOut, PostResult),
    )
    for model, row in pairs:
        assert set(model.model_fields) == {f.name for f in fields(row)}, model.__name__
