"""Web knowledge: summary → entry + sources + Markdown file, safe paths, the save_knowledge hook,
and the end-to-end turn whose next context lists the new heading."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.chat.engine import TurnRequest
from bot.config import Settings
from bot.errors import LLMError, NotFoundError
from bot.llm.gateway import LLMGateway
from bot.memory.knowledge import (
    SAVE_KNOWLEDGE_ID,
    KnowledgeEntry,
    KnowledgeService,
    RegenerateError,
    SaveKnowledgeHook,
    parse_summary,
    slugify,
)
from bot.services import ServiceOptions, Services, open_services
from bot.store.engine.database import Database
from bot.store.repos.knowledge import KnowledgeRepository
from bot.tools.knowledge_tools import register_knowledge_tools
from bot.tools.registry import ToolRegistry, ToolResult
from bot.tools.safe_http import FetchPolicy
from bot.tools.web_search import web_search_sources
from bot.turn.events import Event, SessionEvent, SourcesEvent, ToolEvent
from bot.turn.hooks import ToolOutcome
from tests.conftest import FAST_RETRY, LOCAL, SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, HttpError, Text, ToolCalls
from tests.fakes.web_server import FakeWebServer

HITS = [
    {"title": "Kyoto forecast", "href": "https://weather.example/kyoto", "body": "Sunny, 24°C"},
    {"title": "JMA", "href": "https://jma.example/k", "body": "Clear skies all week"},
]


@pytest.fixture
def settings(make_settings: SettingsFactory) -> Settings:
    return make_settings()


@pytest.fixture
async def knowledge(settings: Settings) -> AsyncIterator[KnowledgeService]:
    db = await Database.connect(settings.database())
    gateway = LLMGateway(lambda: settings, None, retry=FAST_RETRY)
    yield KnowledgeService(
        KnowledgeRepository(db), gateway, lambda: settings.kb_dir, lambda: settings
    )
    await gateway.close()
    await db.close()


S = "guild:1"
S_DIR = "guild_1"
LOCAL_DIR = "local_local"


def web_files(settings: Settings, space_dir: str = S_DIR) -> list[Path]:
    folder = settings.kb_dir / "web_search" / space_dir
    return sorted(folder.iterdir()) if folder.exists() else []


# --------------------------------------------------------------------------- pure helpers


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Kyoto weather", "kyoto-weather"),
        ("../../etc/passwd", "etc-passwd"),
        ("C:\\Windows\\system32 & rm -rf /", "c-windows-system32-rm-rf"),
        ("Café über naïve", "cafe-uber-naive"),
        ("...", None),
        ("京都の天気", None),
        ("😀" * 300, None),
    ],
)
def test_slug_is_ascii_safe(query: str, expected: str | None) -> None:
    slug = slugify(query)
    assert slug.isascii() and 0 < len(slug) <= 60
    assert all(ch.isalnum() or ch == "-" for ch in slug)
    if expected is None:
        assert slug.startswith("search-")
        assert slug != slugify(query + "x"), "different queries, different names"
    else:
        assert slug == expected


def test_parse_summary_variants() -> None:
    assert parse_summary("# Kyoto weather\n- sunny\n- 24°C", "q") == (
        "Kyoto weather",
        "- sunny\n- 24°C",
    )
    assert parse_summary("<think>hmm</think>\n```markdown\n## **Title** ##\n- a\n```", "q") == (
        "Title",
        "- a",
    )
    assert parse_summary("- only bullets", "the query") == ("the query", "- only bullets")
    assert parse_summary("- first fact\n- second", "  ") == ("first fact", "- first fact\n- second")
    title, _ = parse_summary("# " + "x" * 500, "q")
    assert len(title) == 200


# --------------------------------------------------------------------------- the service


async def test_save_search_stores_entry_sources_and_markdown(
    knowledge: KnowledgeService, settings: Settings, llm: FakeLLMServer
) -> None:
    llm.script(Text("# Kyoto weather\n- sunny\n- 24°C"))
    entry = await knowledge.save_search(S, "kyoto weather", HITS, session_id=None)
    assert entry is not None
    assert (entry.title, entry.summary, entry.query) == (
        "Kyoto weather",
        "- sunny\n- 24°C",
        "kyoto weather",
    )
    assert [s.url for s in entry.sources] == [h["href"] for h in HITS]
    request = llm.chat_requests[0]
    sent = json.dumps(request.messages, ensure_ascii=False)
    assert "Kyoto forecast" in sent and "untrusted" in sent
    assert request.stream is False

    (path,) = web_files(settings)
    assert entry.md_path == f"web_search/{S_DIR}/{path.name}"
    assert entry.space_id == S
    assert path.name.endswith("-kyoto-weather.md")
    text = path.read_text("utf-8")
    assert text.startswith("# Kyoto weather\n")
    assert "- sunny" in text and "(https://weather.example/kyoto)" in text
    assert await knowledge.get(S, entry.id) == entry


@pytest.mark.parametrize("query", ["../../etc/passwd", "😀" * 300, "/abs/../../x", "a\x00b"])
async def test_hostile_query_stays_inside_web_search_folder(
    knowledge: KnowledgeService, settings: Settings, llm: FakeLLMServer, query: str
) -> None:
    llm.script(Text("# T\n- x"))
    entry = await knowledge.save_search(S, query, HITS, session_id=None)
    assert entry is not None and entry.md_path is not None
    (path,) = web_files(settings)
    assert path.parent.resolve() == (settings.kb_dir / "web_search" / S_DIR).resolve()
    assert (settings.kb_dir / entry.md_path).resolve() == path.resolve()
    every_file = [p for p in settings.kb_dir.parent.rglob("*") if p.is_file()]
    assert [p for p in every_file if p.suffix == ".md"] == [path]


async def test_same_slug_twice_gets_two_files(
    knowledge: KnowledgeService, settings: Settings, llm: FakeLLMServer
) -> None:
    llm.script(Text("# A\n- 1"), Text("# B\n- 2"))
    first = await knowledge.save_search(S, "same", HITS, session_id=None)
    second = await knowledge.save_search(S, "Same!", HITS, session_id=None)
    assert first is not None and second is not None
    assert first.md_path is not None and second.md_path is not None
    assert first.md_path != second.md_path
    assert Path(first.md_path).stem.endswith("-same")
    assert len(web_files(settings)) == 2


async def test_repeated_query_reuses_the_fresh_entry(
    knowledge: KnowledgeService, settings: Settings, llm: FakeLLMServer
) -> None:
    llm.script(Text("# Kyoto weather\n- sunny"))
    first = await knowledge.save_search(S, "kyoto weather", HITS, session_id=None)
    again = await knowledge.save_search(S, "Kyoto Weather", HITS, session_id=None)
    assert first is not None and again == first
    assert len(llm.chat_requests) == 1, "the cached search is not summarised twice"
    assert len(web_files(settings)) == 1


async def test_llm_failure_saves_nothing(
    knowledge: KnowledgeService, settings: Settings, llm: FakeLLMServer
) -> None:
    llm.script(HttpError(500, "boom"), HttpError(500, "boom"))
    assert await knowledge.save_search(S, "q", HITS, session_id=None) is None
    llm.script(Text("   "))
    assert await knowledge.save_search(S, "q", HITS, session_id=None) is None
    assert await knowledge.latest(S, 10) == []
    assert web_files(settings) == []


async def test_no_usable_results_costs_no_llm_call(
    knowledge: KnowledgeService, llm: FakeLLMServer
) -> None:
    junk = [{"title": "x", "href": "javascript:alert(1)"}, {"title": "no link"}]
    assert await knowledge.save_search(S, "q", junk, session_id=None) is None
    assert await knowledge.save_search(S, "q", [], session_id=None) is None
    assert llm.chat_requests == []


async def test_delete_removes_row_and_file_but_never_outside(
    knowledge: KnowledgeService, settings: Settings, llm: FakeLLMServer
) -> None:
    llm.script(Text("# A\n- 1"))
    entry = await knowledge.save_search(S, "delete me", HITS, session_id=None)
    assert entry is not None
    (path,) = web_files(settings)
    assert await knowledge.delete(S, entry.id) is True
    assert not path.exists()
    assert await knowledge.get(S, entry.id) is None
    assert await knowledge.delete(S, entry.id) is False

    outside = settings.kb_dir / "precious.md"
    outside.write_text("keep me", "utf-8")
    theirs = settings.kb_dir / "web_search" / "guild_2" / "theirs.md"
    theirs.parent.mkdir(parents=True)
    theirs.write_text("another space's", "utf-8")
    db = await Database.connect(settings.database())
    try:
        for md_path in (
            "precious.md",
            "web_search/../precious.md",
            str(outside),
            f"web_search/{S_DIR}/../guild_2/theirs.md",
            "web_search/guild_2/theirs.md",
        ):
            entry_id = await db.insert(
                "INSERT INTO knowledge_entries (space_id, query, title, summary, md_path, "
                "created_at) VALUES (?, 'q', 't', 's', ?, '2024-01-01')",
                (S, md_path),
            )
            assert await knowledge.delete(S, entry_id) is True
    finally:
        await db.close()
    assert outside.read_text("utf-8") == "keep me"
    assert theirs.read_text("utf-8") == "another space's"


async def test_latest_and_list_page_newest_first(
    knowledge: KnowledgeService, llm: FakeLLMServer
) -> None:
    for index in range(5):
        llm.script(Text(f"# Entry {index}\n- x"))
        assert await knowledge.save_search(S, f"q{index}", HITS, session_id=None) is not None
    assert [e.title for e in await knowledge.latest(S, 2)] == ["Entry 4", "Entry 3"]
    first = await knowledge.list(S, limit=3)
    assert [e.title for e in first] == ["Entry 4", "Entry 3", "Entry 2"]
    rest = await knowledge.list(S, limit=3, before_id=first[-1].id)
    assert [e.title for e in rest] == ["Entry 1", "Entry 0"]


async def test_read_knowledge_tool(knowledge: KnowledgeService, llm: FakeLLMServer) -> None:
    llm.script(Text("# Kyoto weather\n- sunny"))
    entry = await knowledge.save_search(S, "kyoto weather", HITS, session_id=None)
    assert entry is not None
    registry = ToolRegistry()
    register_knowledge_tools(registry, knowledge)
    result = await registry.execute(
        "read_knowledge", {"entry_id": entry.id}, injected={"space_id": S}
    )
    assert not result.failed and registry.get("read_knowledge").icon == "📚"  # type: ignore[union-attr]
    text = result.text
    assert text.startswith(f"# Kyoto weather (knowledge #{entry.id}")
    assert "- sunny" in text and "https://jma.example/k" in text
    missing = await registry.execute("read_knowledge", {"entry_id": 999}, injected={"space_id": S})
    assert missing.failed and "#999" in json.loads(missing.text)["error"]
    elsewhere = await registry.execute(
        "read_knowledge", {"entry_id": entry.id}, injected={"space_id": "guild:2"}
    )
    assert elsewhere.failed and "sunny" not in elsewhere.text, "another space's entry is unknown"
    bad = await registry.execute("read_knowledge", {"entry_id": "abc"}, injected={"space_id": S})
    assert bad.failed and "entry_id" in json.loads(bad.text)["error"]


# --------------------------------------------------------------------------- the hook


async def test_hook_ignores_other_tools_and_failed_searches(
    knowledge: KnowledgeService, llm: FakeLLMServer
) -> None:
    hook = SaveKnowledgeHook(knowledge)
    events: list[Event] = []
    for name, result in [
        ("scrape_url", ToolResult(json.dumps(HITS))),
        ("web_search", ToolResult.error("rate limited")),
        ("web_search", ToolResult(json.dumps(HITS), failed=True)),
        ("web_search", ToolResult("[]")),
        ("web_search", ToolResult("not json")),
    ]:
        await hook(ToolOutcome(S, "s", "1", name, {"query": "q"}, result, "q"), events.append)
    assert events == []
    assert llm.chat_requests == []


async def test_hook_reports_a_failed_save(knowledge: KnowledgeService, llm: FakeLLMServer) -> None:
    llm.script(HttpError(500, "boom"), HttpError(500, "boom"))
    events: list[Event] = []
    outcome = ToolOutcome(
        S, "s", "1", "web_search", {"query": "q"}, ToolResult(json.dumps(HITS)), "q"
    )
    await SaveKnowledgeHook(knowledge)(outcome, events.append)
    assert [(e.id, e.status, e.icon) for e in events if isinstance(e, ToolEvent)] == [
        (SAVE_KNOWLEDGE_ID, "running", "💾"),
        (SAVE_KNOWLEDGE_ID, "error", "💾"),
    ]


# --------------------------------------------------------------------------- end to end


async def test_web_search_turn_saves_knowledge_and_next_turn_lists_heading(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    settings = make_settings()
    async with open_services(settings, service_options) as services:
        searched: list[str] = []

        async def web_search(query: str) -> list[dict[str, str]]:
            """Search the web.

            Args:
                query: What to search for.
            """
            searched.append(query)
            return HITS

        services.registry.register(web_search, sources=web_search_sources)

        llm.script(
            ToolCalls([("web_search", {"query": "kyoto weather"})]),
            Text("# Kyoto weather\n- sunny"),
            Text("It is sunny in Kyoto."),
        )
        events = [
            e
            async for e in services.engine.run_turn(
                TurnRequest("weather in kyoto?", space_id=LOCAL)
            )
        ]
        assert searched == ["kyoto weather"]
        first, summary_request, final = llm.chat_requests
        assert "web_search" in first.tool_names
        assert summary_request.tools == [] and summary_request.stream is False
        assert "Kyoto forecast" in json.dumps(summary_request.messages, ensure_ascii=False)
        assert [m["role"] for m in final.messages if m["role"] == "tool"] == ["tool"]

        saves = [e for e in events if isinstance(e, ToolEvent) and e.id == SAVE_KNOWLEDGE_ID]
        assert [(e.name, e.status, e.icon) for e in saves] == [
            ("save_knowledge", "running", "💾"),
            ("save_knowledge", "done", "💾"),
        ]
        assert saves[1].result == "Kyoto weather"
        assert any(isinstance(e, SourcesEvent) for e in events)

        entries = await services.db.fetchall(
            "SELECT id, query, title, session_id, md_path FROM knowledge_entries"
        )
        assert len(entries) == 1
        entry = entries[0]
        session = events[0]
        assert isinstance(session, SessionEvent)
        assert (entry["query"], entry["title"], entry["session_id"]) == (
            "kyoto weather",
            "Kyoto weather",
            session.session_id,
        )
        sources = await services.db.fetchall("SELECT entry_id, url FROM knowledge_sources")
        assert [(s[0], s[1]) for s in sources] == [(entry["id"], h["href"]) for h in HITS]
        md = settings.kb_dir / entry["md_path"]
        assert md.is_file() and md.read_text("utf-8").startswith("# Kyoto weather")
        logs = await services.db.fetchall("SELECT purpose FROM api_logs ORDER BY id")
        assert [row[0] for row in logs] == ["chat", "knowledge", "chat"]

        llm.script(Text("Still sunny."))
        [
            e
            async for e in services.engine.run_turn(
                TurnRequest("and now?", session.session_id, space_id=LOCAL)
            )
        ]
        next_first = llm.chat_requests[-1]
        systems = [m["content"] for m in next_first.messages if m["role"] == "system"]
        heading = f"- [#{entry['id']}] Kyoto weather ("
        assert any(heading in text and "read_knowledge" in text for text in systems), systems
        assert not any("- sunny" in text for text in systems), "headings only, no body"


async def test_saved_search_reaches_layer_3_through_the_local_kb(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    settings = make_settings(local_kb_min_score=0.0)
    async with open_services(settings, service_options) as services:

        async def web_search(query: str) -> list[dict[str, str]]:
            """Search the web.

            Args:
                query: What to search for.
            """
            return HITS

        services.registry.register(web_search)
        llm.script(
            ToolCalls([("web_search", {"query": "kyoto weather"})]),
            Text("# Kyoto weather\n- sunny all week"),
            Text("Sunny."),
        )
        events = [
            e async for e in services.engine.run_turn(TurnRequest("kyoto weather?", space_id=LOCAL))
        ]
        session = events[0]
        assert isinstance(session, SessionEvent)
        llm.script(Text("Yes."))
        turn = TurnRequest("kyoto weather tomorrow?", session.session_id, space_id=LOCAL)
        [e async for e in services.engine.run_turn(turn)]
        systems = [m["content"] for m in llm.chat_requests[-1].messages if m["role"] == "system"]
        kb_layer = next(text for text in systems if text.startswith("[Local knowledge base"))
        assert "- sunny all week" in kb_layer and "web_search/local_local/" in kb_layer


# --------------------------------------------------------------------------- regenerating


@pytest.fixture
def web_options() -> ServiceOptions:
    """Services with the built-in web tools, allowed to reach the loopback web server."""
    return ServiceOptions(
        retry=FAST_RETRY,
        fetch_policy=FetchPolicy.allowing("127.0.0.1/32"),
        search_fn=lambda query, n: [],
    )


def loopback_hits(web: FakeWebServer) -> list[dict[str, str]]:
    return [
        {"title": "Kyoto forecast", "href": web.url_for("/kyoto"), "body": "Sunny, 24°C"},
        {"title": "JMA", "href": web.url_for("/jma.txt"), "body": "Clear skies all week"},
    ]


def article(text: str) -> str:
    return f"<html><body><nav>menu</nav><article><p>{text}</p></article></body></html>"


async def saved_entry(services: Services, llm: FakeLLMServer, web: FakeWebServer) -> KnowledgeEntry:
    llm.script(Text("# Kyoto weather\n- sunny"))
    entry = await services.knowledge.save_search(
        LOCAL, "kyoto weather", loopback_hits(web), session_id=None
    )
    assert entry is not None
    return entry


async def test_regenerate_reads_the_sources_again_and_replaces_the_entry(
    make_settings: SettingsFactory,
    web_options: ServiceOptions,
    llm: FakeLLMServer,
    web: FakeWebServer,
) -> None:
    settings = make_settings()
    web.add_page("/kyoto", article("Rain from Tuesday, 18°C, typhoon warning."))
    web.add_page("/jma.txt", "JMA: heavy rain expected in Kyoto.", content_type="text/plain")
    async with open_services(settings, web_options) as services:
        entry = await saved_entry(services, llm, web)
        (old_file,) = web_files(settings, LOCAL_DIR)
        llm.script(Text("# Kyoto: rain ahead\n- rain from Tuesday\n- typhoon warning"))
        updated = await services.knowledge.regenerate(LOCAL, entry.id)

        sent = json.dumps(llm.chat_requests[-1].messages, ensure_ascii=False)
        assert "Rain from Tuesday, 18°C, typhoon warning." in sent
        assert "JMA: heavy rain expected in Kyoto." in sent
        assert "menu" not in sent, "the pages' main text, as scrape_url reads them"
        assert "Sunny, 24°C" not in sent, "the old snippets are not reused"
        assert "untrusted" in sent
        assert (updated.id, updated.query, updated.sources) == (
            entry.id,
            entry.query,
            entry.sources,
        )
        assert (updated.title, updated.summary) == (
            "Kyoto: rain ahead",
            "- rain from Tuesday\n- typhoon warning",
        )
        assert await services.knowledge.get(LOCAL, entry.id) == updated
        assert [e.id for e in await services.knowledge.latest(LOCAL, 10)] == [entry.id]

        (new_file,) = web_files(settings, LOCAL_DIR)
        assert not old_file.exists()
        assert updated.md_path == f"web_search/{LOCAL_DIR}/{new_file.name}"
        text = new_file.read_text("utf-8")
        assert text.startswith("# Kyoto: rain ahead\n") and "- typhoon warning" in text
        assert f"({web.url_for('/jma.txt')})" in text
        purposes = await services.db.fetchall("SELECT purpose FROM api_logs ORDER BY id")
        assert [row[0] for row in purposes] == ["knowledge", "knowledge"]


async def test_regenerate_uses_the_sources_that_can_be_read(
    make_settings: SettingsFactory,
    web_options: ServiceOptions,
    llm: FakeLLMServer,
    web: FakeWebServer,
) -> None:
    web.add_page("/jma.txt", "J" * 5000, content_type="text/plain")  # /kyoto: 404
    async with open_services(make_settings(llm_context_tokens=8192), web_options) as services:
        entry = await saved_entry(services, llm, web)
        llm.script(Text("# JMA only\n- rain"))
        updated = await services.knowledge.regenerate(LOCAL, entry.id)
        assert updated.title == "JMA only"
        sent = llm.chat_requests[-1].messages[-1]["content"]
        assert "Kyoto forecast" not in sent
        # One readable source gets all of the budget: half the window, at most 6,000 chars.
        assert "J" * 4096 in sent and "J" * 4097 not in sent


async def test_regenerate_without_readable_sources_changes_nothing(
    make_settings: SettingsFactory,
    web_options: ServiceOptions,
    llm: FakeLLMServer,
    web: FakeWebServer,
) -> None:
    settings = make_settings()
    async with open_services(settings, web_options) as services:
        entry = await saved_entry(services, llm, web)
        files = web_files(settings, LOCAL_DIR)
        calls = len(llm.chat_requests)
        with pytest.raises(RegenerateError, match="None of the 2 source"):
            await services.knowledge.regenerate(LOCAL, entry.id)
        assert len(llm.chat_requests) == calls, "no model call without page text"
        assert await services.knowledge.get(LOCAL, entry.id) == entry
        assert web_files(settings, LOCAL_DIR) == files

        web.add_page("/kyoto", article("Rain."))
        llm.script(HttpError(500, "boom"), HttpError(500, "boom"))
        with pytest.raises(LLMError):
            await services.knowledge.regenerate(LOCAL, entry.id)
        assert await services.knowledge.get(LOCAL, entry.id) == entry
        assert web_files(settings, LOCAL_DIR) == files and files[0].read_text("utf-8").startswith(
            "# Kyoto weather"
        )

        with pytest.raises(NotFoundError):
            await services.knowledge.regenerate(LOCAL, entry.id + 100)


async def test_regenerate_needs_the_web_tools(
    knowledge: KnowledgeService, llm: FakeLLMServer
) -> None:
    llm.script(Text("# Kyoto weather\n- sunny"))
    entry = await knowledge.save_search(S, "kyoto weather", HITS, session_id=None)
    assert entry is not None
    with pytest.raises(RegenerateError, match="Web fetching is off"):
        await knowledge.regenerate(S, entry.id)
    assert await knowledge.get(S, entry.id) == entry
    with pytest.raises(NotFoundError):
        await knowledge.regenerate("guild:2", entry.id)


async def test_move_gives_the_entry_and_its_file_to_another_space(
    knowledge: KnowledgeService, settings: Settings, llm: FakeLLMServer
) -> None:
    llm.script(Text("# Kyoto weather\n- sunny"))
    entry = await knowledge.save_search(S, "kyoto weather", HITS, session_id=None)
    assert entry is not None
    moved = await knowledge.move(S, entry.id, "guild:2")
    assert moved is not None and moved.space_id == "guild:2"
    assert web_files(settings) == []
    (path,) = web_files(settings, "guild_2")
    assert moved.md_path == f"web_search/guild_2/{path.name}"
    assert path.read_text("utf-8").startswith("# Kyoto weather")
    assert await knowledge.get(S, entry.id) is None
    assert await knowledge.move(S, entry.id, "guild:3") is None, "not in S any more"
    assert await knowledge.latest("guild:2", 5) == [moved]


async def test_purge_files_removes_only_that_space_folder(
    knowledge: KnowledgeService, settings: Settings, llm: FakeLLMServer
) -> None:
    llm.script(Text("# A\n- 1"), Text("# B\n- 2"))
    await knowledge.save_search(S, "a", HITS, session_id=None)
    await knowledge.save_search("guild:2", "b", HITS, session_id=None)
    assert await knowledge.purge_files(S) == 1
    assert not (settings.kb_dir / "web_search" / S_DIR).exists()
    assert len(web_files(settings, "guild_2")) == 1


async def test_files_saved_before_spaces_move_into_their_space_folder(
    knowledge: KnowledgeService, settings: Settings
) -> None:
    root = settings.kb_dir / "web_search"
    root.mkdir(parents=True)
    (root / "old.md").write_text("# Old\n", "utf-8")
    (root / "orphan.md").write_text("# Orphan\n", "utf-8")
    db = await Database.connect(settings.database())
    try:
        await db.execute(
            "INSERT INTO spaces (id, kind, created_at) VALUES ('guild:9', 'guild', 'now')"
        )
        entry_id = await db.insert(
            "INSERT INTO knowledge_entries (space_id, query, title, summary, md_path, created_at) "
            "VALUES ('guild:9', 'q', 'Old', 's', 'web_search/old.md', 'now')"
        )
        assert await knowledge.relocate_files(LOCAL) == 2
        assert await knowledge.relocate_files(LOCAL) == 0, "idempotent"
        entry = await knowledge.get("guild:9", entry_id)
        assert entry is not None and entry.md_path == "web_search/guild_9/old.md"
    finally:
        await db.close()
    assert (root / "guild_9" / "old.md").read_text("utf-8") == "# Old\n"
    assert (root / "local_local" / "orphan.md").is_file()
    assert sorted(p.name for p in root.iterdir()) == ["guild_9", "local_local"]
