"""The recall tool: seed-000 paging at the result limit, strict tokens, the injected space."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from bot.config import Settings
from bot.memory.recall import RecallService, said_at
from bot.store import Repositories
from bot.store.engine.database import Database
from bot.store.engine.dialect import sqlite_url
from bot.store.reads.recall import FUSE_CANDIDATES
from bot.tools.core import ToolRegistry
from bot.tools.paging import (
    INVALID_CONTINUATION_PREFIX,
    MAX_TOOL_RESULT_CHARS,
    make_token,
    page_footer,
    parse_paged_result,
)
from bot.tools.recall_tool import assemble_page, register_recall_tool

A = "guild:111"
B = "guild:222"
LIMIT = MAX_TOOL_RESULT_CHARS


@pytest.fixture
async def repos(tmp_path: Path) -> AsyncIterator[Repositories]:
    db = await Database.connect(sqlite_url(tmp_path / "recall.db"))
    try:
        yield Repositories.over(db)
    finally:
        await db.close()


def settings_of(**overrides: object) -> Callable[[], Settings]:
    fixed = Settings(_env_file=None, language="en", **overrides)  # type: ignore[call-arg]
    return lambda: fixed


def registry_over(repos: Repositories, **overrides: object) -> ToolRegistry:
    registry = ToolRegistry()
    register_recall_tool(registry, RecallService(repos.recall), settings_of(**overrides))
    return registry


async def said(repos: Repositories, space: str, text: str, title: str = "t") -> None:
    session = await repos.sessions.create(space, title=title)
    await repos.messages.add(space, session.id, "user", text, author_name="Alice")


async def recall(registry: ToolRegistry, space: str = A, **args: object) -> tuple[str, bool]:
    result = await registry.execute("recall", args, injected={"space_id": space})
    return result.text, result.failed


# ----------------------------------------------------------------- the page at the limit


def test_a_page_of_exactly_the_limit_keeps_both_blocks_one_more_character_does_not() -> None:
    prefix = "header\n\n"
    footer = page_footer("tok")
    first = "x" * 1000

    def token(count: int) -> str | None:
        return "tok" if count < 3 else None

    fill = LIMIT - len(prefix) - len(first) - 2 - len(footer)
    second = "y" * fill
    text, count = assemble_page(prefix, [first, second, "z" * 100], token, LIMIT)
    assert (len(text), count) == (LIMIT, 2)
    text, count = assemble_page(prefix, [first, second + "y", "z" * 100], token, LIMIT)
    assert count == 1 and len(text) <= LIMIT
    assert text == prefix + first + footer
    # A lone block larger than the page is cut (marked) to fit, footer included.
    text, count = assemble_page(prefix, ["w" * 9000, "z"], token, LIMIT)
    assert (len(text), count) == (LIMIT, 1) and text.endswith("…" + footer)


QUERY = "alpha beta gamma delta epsilon"


async def five_hits(repos: Repositories, pad: int) -> None:
    """Five hits in a fixed order (5, 4, 3, 2 and 1 terms matched); the fourth `pad` long."""
    await said(repos, A, "alpha beta gamma delta epsilon " + "a" * 1300)
    await said(repos, A, "alpha beta gamma delta " + "b" * 1300)
    await said(repos, A, "alpha beta gamma " + "c" * 1300)
    await said(repos, A, "alpha beta " + "d" * pad)
    await said(repos, A, "alpha " + "e" * 1300)


async def test_the_tool_fills_a_page_to_exactly_6000_characters(tmp_path: Path) -> None:
    async def page(pad: int, name: str) -> tuple[str, dict[str, object]]:
        db = await Database.connect(sqlite_url(tmp_path / name))
        try:
            repos = Repositories.over(db)
            await five_hits(repos, pad)
            text, failed = await recall(registry_over(repos), query=QUERY)
            assert not failed
            return text, parse_paged_result(text)[1]
        finally:
            await db.close()

    text, meta = await page(1000, "probe.db")
    assert meta["has_more"] is True and "[4]" in text and "[5]" not in text
    exact = 1000 + LIMIT - len(text)
    text, meta = await page(exact, "exact.db")
    assert len(text) == LIMIT and "[4]" in text and meta["has_more"] is True
    text, meta = await page(exact + 1, "over.db")
    assert len(text) < LIMIT and "[3]" in text and "[4]" not in text


async def test_continuation_pages_through_every_hit_once(repos: Repositories) -> None:
    for number in range(12):
        await said(repos, A, f"chapter {number:02d} of the Mochi saga " + "m" * 900)
    registry = registry_over(repos)
    seen: list[str] = []
    text, failed = await recall(registry, query="Mochi saga")
    pages = 1
    while True:
        assert not failed and len(text) <= LIMIT
        body, meta = parse_paged_result(text)
        seen += [line for line in body.splitlines() if line.startswith("> ")]
        if not meta["has_more"]:
            break
        text, failed = await recall(
            registry, query="Mochi saga", continue_from=str(meta["next_token"])
        )
        pages += 1
    assert pages > 1
    assert sorted(seen) == sorted(
        f"> Alice: chapter {n:02d} of the Mochi saga " + "m" * 900 for n in range(12)
    )


# ----------------------------------------------------------------- tokens


def tampered(token: str) -> str:
    middle = len(token) // 2
    return token[:middle] + ("A" if token[middle] != "A" else "B") + token[middle + 1 :]


async def test_bad_continuation_tokens_are_refused(repos: Repositories) -> None:
    await said(repos, A, "Mochi-Kinako is my cat")
    registry = registry_over(repos)
    good = make_token("recall", query="Mochi", offset=0)
    forged_offset = base64.urlsafe_b64encode(
        json.dumps({"v": 2, "tool": "recall", "query": "Mochi", "offset": -1}).encode()
    ).decode()
    bad = {
        "wrong tool": make_token("scrape_url", url="https://example.com/", offset=5),
        "tampered": tampered(good),
        "oversize": "A" * 5000,
        "forged offset": forged_offset,
        "other query": make_token("recall", query="Kinako", offset=0),
        "extra field": base64.urlsafe_b64encode(
            json.dumps(
                {"v": 2, "tool": "recall", "query": "Mochi", "offset": 0, "space_id": B}
            ).encode()
        ).decode(),
    }
    for name, token in bad.items():
        text, failed = await recall(registry, query="Mochi", continue_from=token)
        assert failed and text.startswith(INVALID_CONTINUATION_PREFIX), (name, text)
    assert (
        "issued by scrape_url"
        in (await recall(registry, query="Mochi", continue_from=bad["wrong tool"]))[0]
    )
    text, failed = await recall(registry, query="Mochi", continue_from=good)
    assert not failed and "Mochi-Kinako is my cat" in text


# ----------------------------------------------------------------- the space


async def test_the_space_is_injected_and_a_space_id_argument_is_ignored(
    repos: Repositories,
) -> None:
    await said(repos, A, "My cat is called Mochi-Kinako", title="Cats")
    await said(repos, B, "My cat is called Tama")
    registry = registry_over(repos)
    tool = registry.get("recall")
    assert tool is not None and tool.paged
    assert "space_id" not in tool.schema["function"]["parameters"]["properties"]
    text, failed = await recall(registry, B, query="cat Mochi-Kinako", space_id=A)
    assert not failed and "called Mochi" not in text and "My cat is called Tama" in text
    text, failed = await recall(registry, A, query="cat")
    assert "> Alice: My cat is called Mochi-Kinako" in text and "Tama" not in text
    assert "[1] Alice · 20" in text and 'in "Cats"' in text
    outside = await registry.execute("recall", {"query": "cat"}, injected={})
    assert outside.failed and "not available outside a conversation" in outside.text


async def test_clear_messages_when_nothing_matches(repos: Repositories) -> None:
    await said(repos, A, "My cat is called Mochi-Kinako")
    registry = registry_over(repos)
    text, failed = await recall(registry, query="volcano")
    assert not failed and text.startswith("Nothing in this community's past conversations")
    text, failed = await recall(registry, query="what is the")
    assert not failed and text.startswith("The query has no words to search for")
    text, failed = await recall(registry, B, query="cat")
    assert text.startswith("Nothing")


# ----------------------------------------------------------------- every match, on both engines


@pytest.fixture
async def engine_db(database_url: str) -> AsyncIterator[Database]:
    """A fresh database on each engine."""
    db = await Database.connect(database_url)
    try:
        yield db
    finally:
        await db.close()


@pytest.fixture
def both(engine_db: Database) -> Repositories:
    """Repositories over that database."""
    return Repositories.over(engine_db)


CAPPED = "More messages hold these words than recall ranks"


def registry_with_zones(repos: Repositories) -> ToolRegistry:
    registry = ToolRegistry()
    service = RecallService(repos.recall, zone_of=repos.token_usage.timezone)
    register_recall_tool(registry, service, settings_of())
    return registry


async def every_page(registry: ToolRegistry, query: str) -> list[str]:
    """The bodies of every page of `query`, following the continuation tokens."""
    bodies: list[str] = []
    arguments: dict[str, object] = {"query": query}
    while True:
        text, failed = await recall(registry, **arguments)
        assert not failed and len(text) <= LIMIT, text
        body, meta = parse_paged_result(text)
        bodies.append(body)
        if not meta["has_more"]:
            return bodies
        arguments = {"query": query, "continue_from": str(meta["next_token"])}


def match_lines(bodies: list[str]) -> list[str]:
    return [line for body in bodies for line in body.splitlines() if line.startswith("> ")]


@pytest.mark.parametrize("matches", [30, 31, 40])
async def test_paging_reaches_every_match_exactly_once(both: Repositories, matches: int) -> None:
    for number in range(matches):
        await said(both, A, f"chapter {number:02d} of the Kinako saga")
    await said(both, A, "an unrelated line about the weather")
    bodies = await every_page(registry_over(both), "Kinako saga")
    assert len(bodies) == -(-matches // 8), "whole pages of eight short hits"
    assert all(f"found: {matches}," in body for body in bodies)
    expected = [f"> Alice: chapter {n:02d} of the Kinako saga" for n in range(matches)]
    assert sorted(match_lines(bodies)) == expected
    numbers = [line.split("]")[0] for body in bodies for line in body.splitlines()]
    assert [n for n in numbers if n.startswith("[")] == [f"[{n}" for n in range(1, matches + 1)]
    assert not any(CAPPED in body for body in bodies)


async def test_more_matches_than_recall_ranks_are_announced(both: Repositories) -> None:
    for number in range(FUSE_CANDIDATES + 20):
        await said(both, A, f"chapter {number:03d} of the Kinako saga")
    bodies = await every_page(registry_over(both), "Kinako saga")
    lines = match_lines(bodies)
    assert len(lines) == len(set(lines)) == FUSE_CANDIDATES, "the best ranked, each once"
    assert all(f"found: {FUSE_CANDIDATES}," in body and CAPPED in body for body in bodies)


async def test_neighbours_are_context_lines_and_not_counted(both: Repositories) -> None:
    for pet in ("Biscuit", "Pudding", "Waffle"):
        thread = await both.sessions.create(A, title=pet)
        for role, text in (("user", "Did you finally adopt a dog?"), ("user", f"Yes, {pet}!")):
            await both.messages.add(A, thread.id, role, text, author_name="Bea")
    ranked = await both.recall.ranked(A, "adopt dog", limit=10)
    assert len([hit for hit in ranked.hits if not hit.matched]) == 3, "the answers were lifted"
    (body,) = await every_page(registry_over(both), "adopt dog")
    assert "found: 3," in body
    assert match_lines([body]) == ["> Bea: Did you finally adopt a dog?"] * 3
    for pet in ("Biscuit", "Pudding", "Waffle"):
        assert f"\n  Bea: Yes, {pet}!" in body, "the answer shows as its question's context"
        assert f"> Bea: Yes, {pet}!" not in body
    assert "[4]" not in body


async def test_when_shows_utc_and_the_servers_time_zone(
    engine_db: Database, both: Repositories
) -> None:
    for space, stamp in ((A, "2026-12-07T14:05:00+00:00"), (B, "2026-12-07T20:30:00+00:00")):
        thread = await both.sessions.create(space, title="t")
        await both.messages.add(
            space, thread.id, "user", "the Kinako festival", author_name="Bea", created_at=stamp
        )
    registry = registry_with_zones(both)
    text, _ = await recall(registry, A, query="Kinako festival")
    assert "[1] Bea · 2026-12-07 14:05 UTC · in" in text, "no zone set: UTC alone"
    for space in (A, B):
        await engine_db.execute("UPDATE spaces SET timezone = 'Asia/Tokyo' WHERE id = ?", (space,))
    text, _ = await recall(registry, A, query="Kinako festival")
    assert "[1] Bea · 2026-12-07 14:05 UTC (23:05 Asia/Tokyo) · in" in text
    text, _ = await recall(registry, B, query="Kinako festival")
    assert "[1] Bea · 2026-12-07 20:30 UTC (2026-12-08 05:30 Asia/Tokyo) · in" in text


def test_a_zone_this_host_does_not_know_leaves_utc_alone() -> None:
    stamp = "2026-12-07T14:05:00.000000+00:00"
    assert said_at(stamp, "Asia/Tokyo") == "2026-12-07 14:05 UTC (23:05 Asia/Tokyo)"
    for zone in (None, "UTC", "Mars/Olympus_Mons", "../etc"):
        assert said_at(stamp, zone) == "2026-12-07 14:05 UTC", zone
    assert said_at("2026-12-07T23:05:00+09:00") == "2026-12-07 14:05 UTC"
