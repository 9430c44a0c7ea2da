"""The cockpit's data through the real admin API: activity, conversations, full-text search."""

from __future__ import annotations

import json

from bot.store.repos.directory import ChannelSeen
from bot.store.spaces import local_space
from bot.tools.web_search import web_search_sources
from tests.admin_api.conftest import Admin, sse_events
from tests.conftest import LOCAL
from tests.fakes.llm_server import Text, ToolCalls

GUILD_A = "guild:1234567890123456789"
GUILD_B = "guild:42"
THREAD = 1300000000000000001
CHANNEL = 1200000000000000001


async def test_a_turn_with_a_tool_call_shows_in_the_transcript_and_activity(admin: Admin) -> None:
    async def web_search(query: str) -> str:
        """Search the web.

        Args:
            query: What to look for.
        """
        return json.dumps([{"title": "Kyoto weather", "href": "https://weather.example/kyoto"}])

    async def broken(query: str) -> str:
        """Always fails.

        Args:
            query: Anything.
        """
        raise RuntimeError("the service is down")

    admin.services.registry.register(web_search, sources=web_search_sources)
    admin.services.registry.register(broken)
    admin.llm.script(
        ToolCalls([("web_search", {"query": "kyoto weather"}), ("broken", {"query": "x"})]),
        Text("# Kyoto weather\nSunny all day."),  # the knowledge summary of the search
        Text("It is sunny in Kyoto."),
    )
    events = sse_events((await admin.post("/api/chat/stream", {"message": "weather?"})).text)
    session_id = events[0]["value"]

    reply = await admin.get(f"/api/conversations/{session_id}/transcript")
    assert reply.status == 200, reply.text
    page = reply.json
    assert page["session"]["id"] == session_id and page["next_cursor"] is None
    question, answer = page["items"]
    assert (question["role"], question["tool_calls"]) == ("user", [])
    assert (answer["role"], answer["reply_to"]) == ("assistant", question["id"])
    search_call, broken_call = answer["tool_calls"]
    assert (search_call["tool"], search_call["ok"], search_call["error"]) == (
        "web_search",
        True,
        None,
    )
    assert json.loads(search_call["arguments"]) == {"query": "kyoto weather"}
    assert search_call["sources"] == [
        {"title": "Kyoto weather", "url": "https://weather.example/kyoto"}
    ]
    assert search_call["duration_ms"] >= 0
    assert (broken_call["tool"], broken_call["ok"]) == ("broken", False)
    assert broken_call["error"] and broken_call["sources"] == []

    activity = (await admin.get("/api/activity", params={"space": LOCAL})).json
    tools = {tool["tool"]: tool for tool in activity["tools"]}
    assert (tools["web_search"]["calls"], tools["web_search"]["failures"]) == (1, 0)
    assert (tools["broken"]["calls"], tools["broken"]["failures"]) == (1, 1)
    assert sum(bucket["turns"] for bucket in activity["buckets"]) == 1
    assert sum(bucket["tool_calls"] for bucket in activity["buckets"]) == 2
    [model] = [m for m in activity["models"] if m["model"] == "ollama/test-model"]
    assert model["calls"] == 3 and model["p50_ms"] <= model["p95_ms"]
    assert [space["space_id"] for space in activity["spaces"]] == [LOCAL]
    other = (await admin.get("/api/activity", params={"space": GUILD_B})).json
    assert other["tools"] == [] and other["spaces"] == []


async def test_activity_refuses_an_unbounded_range(admin: Admin) -> None:
    reply = await admin.get(
        "/api/activity",
        params={"since": "2020-01-01T00:00:00Z", "until": "2026-01-01T00:00:00Z", "bucket": "day"},
    )
    assert reply.status == 422 and "400 days" in reply.json["detail"]
    reply = await admin.get("/api/activity", params={"bucket": "day"})
    assert reply.status == 200 and len(reply.json["buckets"]) in (30, 31)


async def test_transcript_marks_archived_messages_and_their_summary(admin: Admin) -> None:
    repos = admin.services.repos
    session = await repos.sessions.create(LOCAL, title="long")
    said = []
    for n in range(3):
        question = await repos.messages.add(LOCAL, session.id, "user", f"q{n}")
        answer = await repos.messages.add(
            LOCAL, session.id, "assistant", f"a{n}", reply_to=question.id
        )
        said += [question.id, answer.id]
    memory = await repos.memories.summarize_messages(LOCAL, session.id, said[:4], "q0..a1")
    assert memory is not None

    first = (
        await admin.get(f"/api/conversations/{session.id}/transcript", params={"limit": "4"})
    ).json
    assert [item["archived"] for item in first["items"]] == [True] * 4
    assert {item["memory_id"] for item in first["items"]} == {memory.id}
    assert first["summaries"] == [
        {
            "id": memory.id,
            "level": 0,
            "summary": "q0..a1",
            "created_at": memory.created_at,
            "condensed_into": None,
            "first_message_id": said[0],
            "last_message_id": said[3],
            "messages": 4,
        }
    ]
    assert first["next_cursor"] == said[3]
    rest = (
        await admin.get(
            f"/api/conversations/{session.id}/transcript", params={"cursor": str(said[3])}
        )
    ).json
    assert [(i["content"], i["archived"]) for i in rest["items"]] == [("q2", False), ("a2", False)]
    assert rest["summaries"] == [] and rest["next_cursor"] is None
    missing = await admin.get("/api/conversations/nope/transcript")
    assert missing.status == 404


async def test_channels_and_threads_of_a_space(admin: Admin) -> None:
    repos = admin.services.repos
    thread = await repos.sessions.create(
        GUILD_A,
        title="in a thread",
        source="discord",
        discord_channel_id=THREAD,
        discord_guild_id=1234567890123456789,
        parent_channel_id=CHANNEL,
        created_at="2026-01-01T00:00:00.000000+00:00",
    )
    await repos.messages.add(GUILD_A, thread.id, "user", "hello")
    await repos.sessions.create(GUILD_A, title="terminal", created_at="2025-01-01T00:00:00+00:00")
    await repos.sessions.create(GUILD_B, title="elsewhere", discord_channel_id=7)

    channels = (await admin.get("/api/conversations/channels", params={"space": GUILD_A})).json
    assert [(c["channel_id"], c["name"], c["threads"]) for c in channels["items"]] == [
        (str(CHANNEL), None, 1),
        (None, None, 1),
    ]
    # Named from the channel directory once the bot has seen the channel (its own space only).
    await repos.directory.upsert(GUILD_A, ChannelSeen(CHANNEL, "general", "text"))
    await repos.directory.upsert(GUILD_B, ChannelSeen(7, "elsewhere-chat", "text"))
    channels = (await admin.get("/api/conversations/channels", params={"space": GUILD_A})).json
    assert [(c["channel_id"], c["name"]) for c in channels["items"]] == [
        (str(CHANNEL), "general"),
        (None, None),
    ]
    others = (await admin.get("/api/conversations/channels", params={"space": GUILD_B})).json
    assert [(c["channel_id"], c["name"]) for c in others["items"]] == [("7", "elsewhere-chat")]
    threads = (
        await admin.get(
            "/api/conversations/threads", params={"space": GUILD_A, "channel": str(CHANNEL)}
        )
    ).json
    [item] = threads["items"]
    assert (item["session_id"], item["discord_channel_id"], item["messages"]) == (
        thread.id,
        str(THREAD),
        1,
    )
    outside = (
        await admin.get("/api/conversations/threads", params={"space": GUILD_A, "channel": "0"})
    ).json
    assert [t["title"] for t in outside["items"]] == ["terminal"]
    every = (await admin.get("/api/conversations/threads", params={"space": GUILD_A})).json
    assert [t["title"] for t in every["items"]] == ["in a thread", "terminal"]
    paged = (
        await admin.get("/api/conversations/channels", params={"space": GUILD_A, "limit": "1"})
    ).json
    assert paged["next_cursor"] is not None
    after = (
        await admin.get(
            "/api/conversations/channels",
            params={"space": GUILD_A, "limit": "1", "before": paged["next_cursor"]},
        )
    ).json
    assert [c["channel_id"] for c in after["items"]] == [None]
    bad = await admin.get("/api/conversations/channels", params={"space": "nope"})
    assert bad.status == 422


async def test_search_finds_japanese_links_into_the_transcript_and_keeps_spaces_apart(
    admin: Admin,
) -> None:
    repos = admin.services.repos
    session_a = await repos.sessions.create(GUILD_A, title="a")
    message = await repos.messages.add(GUILD_A, session_a.id, "user", "東京タワーに登った")
    session_b = await repos.sessions.create(GUILD_B, title="b")
    await repos.messages.add(GUILD_B, session_b.id, "user", "うちの猫は東京タワーが好き")
    created = await admin.post(
        "/api/notes", {"title": "旅行メモ", "content": "東京タワーは333m", "space_id": GUILD_A}
    )
    assert created.status == 201, created.text

    found = (await admin.get("/api/search", params={"q": "東京タワー", "space": GUILD_A})).json
    assert found["mode"] == "fts"
    kinds = sorted((hit["kind"], hit["space_id"]) for hit in found["items"])
    assert kinds == [("messages", GUILD_A), ("notes", GUILD_A)]
    hit = next(hit for hit in found["items"] if hit["kind"] == "messages")
    assert (hit["session_id"], hit["message_id"]) == (session_a.id, message.id)
    [span] = hit["snippet"]["matches"]
    assert hit["snippet"]["text"][span["start"] : span["end"]] == "東京タワー"
    transcript = (await admin.get(f"/api/conversations/{hit['session_id']}/transcript")).json
    assert hit["message_id"] in [item["id"] for item in transcript["items"]]

    cat_b = (await admin.get("/api/search", params={"q": "猫", "space": GUILD_B})).json
    assert cat_b["mode"] == "like" and [h["space_id"] for h in cat_b["items"]] == [GUILD_B]
    cat_a = (await admin.get("/api/search", params={"q": "猫", "space": GUILD_A})).json
    assert cat_a["items"] == []
    everywhere = (await admin.get("/api/search", params={"q": "東京タワー"})).json
    assert {h["space_id"] for h in everywhere["items"]} == {GUILD_A, GUILD_B}
    notes_only = (await admin.get("/api/search", params={"q": "東京タワー", "kind": "notes"})).json
    assert [h["kind"] for h in notes_only["items"]] == ["notes"]

    for hostile in ['"', "AND", "*", '" OR "', "NEAR(東京", "東京タワー*", "%_\\", "a:b"]:
        reply = await admin.get("/api/search", params={"q": hostile})
        assert reply.status == 200, (hostile, reply.text)
    assert (await admin.get("/api/search", params={"q": ""})).status == 422


async def test_search_pages(admin: Admin) -> None:
    session = await admin.services.repos.sessions.create(local_space(), title="many")
    for n in range(5):
        await admin.services.repos.messages.add(LOCAL, session.id, "user", f"ラーメン {n}")
    first = (await admin.get("/api/search", params={"q": "ラーメン", "limit": "3"})).json
    assert len(first["items"]) == 3 and first["next_cursor"] == 3
    second = (
        await admin.get("/api/search", params={"q": "ラーメン", "limit": "3", "cursor": "3"})
    ).json
    assert len(second["items"]) == 2 and second["next_cursor"] is None
    seen = {h["id"] for h in first["items"]} | {h["id"] for h in second["items"]}
    assert len(seen) == 5
