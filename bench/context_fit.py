"""Does every request fit the window? For windows of 4k, 8k, 16k, 32k and 128k tokens: what each
memory layer asks for and gets, and the largest request of a turn with 5 rounds of tool calls.

Every layer is full at the seed's limits: 15 knowledge headings, 30 note pages, a linked note of
7,800 characters, 3 knowledge-base files of 4,800 characters, 6 summaries, 6 earlier messages.
The loopback LLM then asks, five rounds in a row, for `read_note` on another 4,000-character
Japanese page (~4,000 tokens each; 20,000 characters in all, inside seed 000's 24,000-character
cap), and answers in the sixth request.

A request's size is measured as the engine's budget is: the messages and the tool schemas it
carries, by the project's estimator (bot/chat/budget/tokens.py), plus the reply reserve. Whether it
stays inside the window depends on the engine's tool loop fitting every round; this bench only
reports. Prints one JSON object and a one-line summary.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
SPACE = "local:local"
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bot.chat.budget.allocation import answer_reserve  # noqa: E402
from bot.chat.budget.tokens import estimate_tokens, message_tokens  # noqa: E402
from bot.chat.context import BuiltContext  # noqa: E402
from bot.chat.engine import TurnRequest  # noqa: E402
from bot.config import Settings  # noqa: E402
from bot.prompts import prompts_for  # noqa: E402
from bot.services import ServiceOptions, Services, open_services  # noqa: E402
from bot.store.repos.knowledge import KnowledgeRepository, KnowledgeSource  # noqa: E402
from tests.fakes.llm_server import FakeLLMServer, RecordedRequest, Text, ToolCalls  # noqa: E402

WINDOWS = (4096, 8192, 16384, 32768, 131072)
TOOL_ROUNDS = 5
PAGE = "長いページの本文です。" * 400  # 4,000 Japanese characters
SYSTEM = prompts_for("en")["system"]
QUESTION = "Summarise the guides, my trip plan and the long page."


def english_text(chars: int, word: str) -> str:
    """Exactly `chars` characters of numbered sentences about `word`."""
    text = "".join(f"{word} fact {n} is worth keeping. " for n in range(chars // 20 + 1))
    return text[:chars]


def write_kb(kb_dir: Path) -> None:
    """Three 4,800-character guides."""
    kb_dir.mkdir(parents=True, exist_ok=True)
    for n in range(3):
        head = f"# Guide {n}\n\n"
        (kb_dir / f"guide{n}.md").write_text(head + english_text(4800 - len(head), f"g{n}"))


async def fill(services: Services) -> str:
    """A session whose every layer is full; returns its id."""
    session = await services.repos.sessions.create(SPACE, title="bench", source="bench")
    knowledge = KnowledgeRepository(services.db)
    for n in range(15):
        await knowledge.add(
            SPACE,
            query=f"query {n}",
            title=f"Saved search number {n} about night trains in Hokkaido",
            summary="- body",
            session_id=None,
            md_path=None,
            sources=[KnowledgeSource("src", f"https://src.example/{n}")],
        )
    for n in range(30):
        await services.notes.create(SPACE, f"Page {n:02d}", f"Notes about topic {n}. " * 5, "Bulk")
    plan = await services.notes.create(SPACE, "Trip plan", english_text(7800, "plan"))
    await services.notes.link(SPACE, session.id, plan.id)
    for n in range(TOOL_ROUNDS):
        await services.notes.create(SPACE, f"Source {n}", PAGE)
    for n in range(6):
        message = await services.repos.messages.add(SPACE, session.id, "user", f"archived {n}")
        summary = (
            f"- Summary {n}: Ann lives in Kyoto, prefers green tea, plans a February trip.\n"
            "- Budget about 20,000 yen per night; takes the night train.\n"
            "- Open question: which camera lens to bring for snow."
        )
        await services.repos.memories.summarize_messages(SPACE, session.id, [message.id], summary)
    for n in range(3):
        question, answer = f"Earlier question {n}? " * 8, f"Earlier answer {n}. " * 20
        await services.repos.messages.add(SPACE, session.id, "user", question)
        await services.repos.messages.add(SPACE, session.id, "assistant", answer)
    return session.id


def reply(request: RecordedRequest) -> Text | ToolCalls:
    """Tool calls while tools are offered and fewer than TOOL_ROUNDS rounds ran; then text."""
    rounds = sum(
        1 for m in request.messages if m.get("role") == "assistant" and m.get("tool_calls")
    )
    if request.tools and rounds < TOOL_ROUNDS:
        return ToolCalls([("read_note", {"title": f"Source {rounds}"})])
    return Text("Here is the summary.")


def request_tokens(request: RecordedRequest) -> int:
    """Messages plus the tool schemas the request carries, estimated."""
    messages = sum(message_tokens(message) for message in request.messages)
    tools = estimate_tokens(json.dumps(request.tools, ensure_ascii=False)) if request.tools else 0
    return messages + tools


async def measure_window(window: int, tmp: Path) -> dict[str, Any]:
    """One window: the allocation of a fresh context, then a turn with 5 tool rounds."""
    async with FakeLLMServer() as llm:
        llm.default_reply = reply  # type: ignore[assignment]
        settings = Settings(  # type: ignore[call-arg]
            _env_file=None,
            db_path=tmp / f"w{window}.db",
            kb_dir=tmp / "kb",
            llm_model="ollama/bench",
            llm_api_base=llm.url,
            llm_context_tokens=window,
            language="en",
            local_kb_min_score=-1.0,
        )
        async with open_services(settings, ServiceOptions(warm_start=False)) as services:
            session_id = await fill(services)
            captured: list[BuiltContext] = []
            build = services.context.build

            async def capture(*args: Any, **kwargs: Any) -> BuiltContext:
                built = await build(*args, **kwargs)
                captured.append(built)
                return built

            # The engine's own context, as it built it for this turn.
            services.context.build = capture  # type: ignore[method-assign]
            async for _ in services.engine.run_turn(
                TurnRequest(QUESTION, session_id, space_id=SPACE)
            ):
                pass
            await services.tasks.drain()
            # The turn's requests (not the summariser's) start with the chat system prompt.
            turn = [r for r in llm.chat_requests if r.messages[0]["content"].startswith(SYSTEM)]
    built = captured[0]
    plan = built.allocation
    assert plan is not None
    sizes = [request_tokens(r) + answer_reserve(window) for r in turn]
    tool_chars = sum(
        len(m.get("content") or "") for m in turn[-1].messages if m.get("role") == "tool"
    )
    return {
        "window": window,
        "prompt_budget": built.budget,
        "demand": plan.demands,
        "allotted": plan.layers,
        "layer_tokens": built.layer_tokens,
        "cut_layers": built.cut_layers,
        "recent_exchanges_kept_whole": plan.recent_exchanges,
        "requests": len(turn),
        "tool_rounds": sum(
            1 for m in turn[-1].messages if m.get("role") == "assistant" and m.get("tool_calls")
        ),
        "tool_chars_in_last_request": tool_chars,
        "request_tokens_with_reserve": sizes,
        "first_request_fits": sizes[0] <= window,
        "largest_request": max(sizes),
        "fits": max(sizes) <= window,
    }


async def measure(tmp: Path) -> dict[str, Any]:
    """Every window, one after the other."""
    write_kb(tmp / "kb")
    return {"windows": [await measure_window(window, tmp) for window in WINDOWS]}


def main() -> None:
    """Run the bench; print the JSON and a one-line summary."""
    with tempfile.TemporaryDirectory() as tmp:
        result = asyncio.run(measure(Path(tmp)))
    print(json.dumps(result, ensure_ascii=False))
    parts = []
    for row in result["windows"]:
        verdict = "ok" if row["fits"] else "OVER"
        cut = ",".join(row["cut_layers"]) or "none"
        first = "first fits" if row["first_request_fits"] else "FIRST OVER"
        parts.append(
            f"{row['window'] // 1024}k: {first}, largest {row['largest_request']:,}/"
            f"{row['window']:,} {verdict}, cut layers {cut}"
        )
    fits = all(row["fits"] for row in result["windows"])
    print(
        f"context_fit ({'every request fits' if fits else 'SOME REQUEST EXCEEDS'}): "
        + "; ".join(parts)
    )


if __name__ == "__main__":
    main()
