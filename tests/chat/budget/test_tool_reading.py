"""What a chain of tool calls read reaches the answer (issue 40, item 1), end to end: a scripted
model reads a long note page in 5 rounds through the real ollama and LiteLLM clients, in a
thread whose layers and older conversation fill the window; we measure the answering request
the loopback LLM received."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import pytest

from bot.chat.budget.allocation import prompt_budget
from bot.chat.budget.tokens import estimate_tokens, message_tokens
from bot.chat.budget.tool_marks import marked_result
from bot.chat.budget.turn_fit import content_tokens
from bot.chat.budget.turn_messages import ToolStep, TurnMessages, assistant_message
from bot.chat.engine import TurnRequest
from bot.llm.types import Message, ToolCall
from bot.prompts import prompts_for
from bot.services import ServiceOptions, Services, open_services
from bot.tools.paging import parse_paged_result, parse_token
from tests.chat.test_context_fit import fill_every_layer, write_kb
from tests.conftest import LOCAL, SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, RecordedRequest, Text, ToolCalls

EN = prompts_for("en")
QUESTION = "read the whole harbour guide and tell me about the lamps"
LINES = [
    f"Fact {n:04d}: the harbour lamp number {n} was lit at dusk by keeper {n % 7}."
    for n in range(400)
]
GUIDE = "\n".join(LINES)
# The offset the newest result (or its marker) says to read on from.
READ_ON = re.compile(r"offset(?:=|\": )(\d+)")
OLDER_EXCHANGES = 48
ROUNDS = 5


@dataclass(frozen=True)
class Chain:
    """The turn's requests as the loopback LLM received them, and the share of what was read
    that the answering request still held."""

    requests: list[RecordedRequest]
    read: int
    kept: int

    @property
    def share(self) -> float:
        """Characters of the read lines the answering request holds, over those read."""
        return self.kept / self.read


def tool_texts(request: RecordedRequest) -> list[str]:
    """The tool messages' contents of one request."""
    return [str(m.get("content") or "") for m in request.messages if m["role"] == "tool"]


def read_on_from(request: RecordedRequest) -> int:
    """Where the model reads on: the offset the newest tool result names (0 at first)."""
    texts = tool_texts(request)
    found = READ_ON.findall(texts[-1]) if texts else []
    return int(found[-1]) if found else 0


def reader(request: RecordedRequest) -> Text | ToolCalls:
    """A model that reads the guide on while it may, then answers."""
    if "condense" in request.messages[0]["content"]:
        return Text("- summary")
    if not request.tool_names:
        return Text("The lamps are lit at dusk.")
    arguments = {"title": "Guide", "offset": read_on_from(request)}
    return ToolCalls([("read_note", arguments)])


async def older_talk(services: Services, session_id: str) -> None:
    """A long thread: enough older exchanges to fill any of the windows tested."""
    for n in range(OLDER_EXCHANGES):
        ask = f"question {n}: " + "how do the trains and the ferries connect today? " * 16
        answer = f"answer {n}: " + "the ferry leaves after the last train arrives. " * 16
        await services.repos.messages.add(LOCAL, session_id, "user", ask)
        await services.repos.messages.add(LOCAL, session_id, "assistant", answer)


async def read_chain(
    make_settings: SettingsFactory,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
    backend: str,
    window: int,
) -> Chain:
    """Run the 5-round chain at `window` and measure its answering request."""
    settings = make_settings(backend, llm_context_tokens=window, local_kb_min_score=-1.0)
    write_kb(settings)
    llm.default_reply = Text("hi")
    async with open_services(settings, service_options) as services:
        filled = await fill_every_layer(services)
        await older_talk(services, filled.session_id)
        await services.notes.create(LOCAL, "Guide", GUIDE)
        llm.default_reply = reader  # type: ignore[assignment]
        first = len(llm.chat_requests)
        request = TurnRequest(QUESTION, filled.session_id, space_id=LOCAL)
        [event async for event in services.engine.run_turn(request)]
        turn = [r for r in llm.chat_requests[first:] if QUESTION in json.dumps(r.messages)]
        for sent in turn:
            schemas = services.registry.schemas() if sent.tools else []
            tools = estimate_tokens(json.dumps(schemas, ensure_ascii=False)) if schemas else 0
            used = sum(message_tokens(m) for m in sent.messages)
            assert used <= prompt_budget(window, tools), "every request fits the window"
    read = {line for sent in turn for text in tool_texts(sent) for line in LINES if line in text}
    final = "\n".join(tool_texts(turn[-1]))
    kept = {line for line in read if line in final}
    return Chain(turn, sum(map(len, read)), sum(map(len, kept)))


@pytest.mark.parametrize(
    ("backend", "window", "floor"),
    [
        ("ollama", 8192, 0.45),
        ("ollama", 16384, 0.60),
        ("litellm", 16384, 0.60),
        ("ollama", 32768, 0.90),
    ],
    ids=["ollama-8k", "ollama-16k", "litellm-16k", "ollama-32k"],
)
async def test_the_answer_holds_most_of_what_five_rounds_read(
    make_settings: SettingsFactory,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
    backend: str,
    window: int,
    floor: float,
) -> None:
    chain = await read_chain(make_settings, service_options, llm, backend, window)
    offered = [bool(sent.tool_names) for sent in chain.requests]
    assert offered == [True] * ROUNDS + [False], "five rounds of reading, then the answer"
    assert chain.read >= 5 * 3000, "each round read a page"
    print(f"{backend} {window}: {chain.kept} of {chain.read} characters, {chain.share:.0%}")
    assert chain.share >= floor, (chain.kept, chain.read)
    # The context gave way to the reading, the last exchanges before the question kept whole;
    # it changed once (a server reuses its work on the prompt's unchanged start).
    first, last = chain.requests[0], chain.requests[-1]
    assert context_chars(last) < context_chars(first)
    assert len({context_of(sent) for sent in chain.requests}) == 2
    talk = [str(m.get("content")) for m in last.messages if m["role"] in ("user", "assistant")]
    assert any(text.startswith(f"answer {OLDER_EXCHANGES - 1}:") for text in talk)
    assert any(text.startswith(f"answer {OLDER_EXCHANGES - 2}:") for text in talk)


def context_of(request: RecordedRequest) -> str:
    """The request's messages before the turn's question, as JSON."""
    asked = next(i for i, m in enumerate(request.messages) if QUESTION in str(m.get("content")))
    return json.dumps(request.messages[:asked], sort_keys=True)


def context_chars(request: RecordedRequest) -> int:
    """Characters of the request before the turn's question: layers and older conversation."""
    asked = next(i for i, m in enumerate(request.messages) if QUESTION in str(m.get("content")))
    return sum(len(str(m.get("content") or "")) for m in request.messages[:asked])


async def test_no_request_without_tools_tells_the_model_to_call_one(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    chain = await read_chain(make_settings, service_options, llm, "ollama", 8192)
    answering = chain.requests[-1]
    assert answering.tool_names == []
    markers = [text[text.index("…[") :] for text in tool_texts(answering) if "…[" in text]
    assert markers, "at 8k the earlier results were shortened"
    for marker in markers:
        assert not re.search(r"\bcall\b", marker), marker
    newest = tool_texts(answering)[-1]
    assert "…[" not in newest and newest.endswith("for more]"), "the newest arrives whole"
    notices = [m["content"] for m in answering.messages if m["role"] == "system"][-1:]
    assert notices == [EN["tool_rounds_exhausted"]]
    # Earlier results became digests of their lines, spread over each page, not just a marker.
    digested = [text for text in tool_texts(answering)[:-1] if "\n…\n" in text]
    assert len(digested) == ROUNDS - 1
    for text in digested:
        kept = [line for line in LINES if line in text]
        assert len(kept) >= 10
        assert kept[-1] != LINES[LINES.index(kept[0]) + len(kept) - 1], "not only the start"


async def test_a_cut_newest_result_names_the_offset_that_resumes_it(
    make_settings: SettingsFactory, service_options: ServiceOptions
) -> None:
    # The engine's own cut of a read_note result (a request too small for it whole): the
    # marker names the call that reads on exactly where the cut is, and read_note does.
    page = "".join(f"Line {n:04d} of the long guide, worth reading.\n" for n in range(600))
    async with open_services(make_settings(), service_options) as services:
        await services.notes.create(LOCAL, "Guide", page)
        arguments = {"title": "Guide", "offset": 1200}
        call = ToolCall("call_1", "read_note", arguments)
        injected = {"space_id": LOCAL}
        result = await services.registry.execute("read_note", arguments, injected=injected)
        tool = services.registry.get("read_note")
        marked = marked_result(call, arguments, result, 1, tool, prompts=EN, cap=24000)
        context: list[Message] = [{"role": "user", "content": "read the guide"}]
        fixed = sum(message_tokens(m) for m in context) + message_tokens(
            assistant_message("", [call])
        )
        turn = TurnMessages(context, fixed + content_tokens(marked.item.text) // 2)
        turn.steps += [assistant_message("", [call]), ToolStep(call, marked.item)]
        sent = turn.request()
        assert sent is not None
        content = str(sent[-1]["content"])
        match = re.search(
            r'call read_note with (\{"title": "Guide", "offset": \d+\})\.\]$', content
        )
        assert match is not None, content[-300:]
        resumed = json.loads(match.group(1))
        body = content.split("\n", 2)[2]  # past the engine's head and the page's header
        shown = body[: body.rindex("\n…[")]
        assert 0 < len(shown) < 5000 and page[1200:].startswith(shown), "the page's start"
        assert resumed["offset"] == 1200 + len(shown), "it resumes exactly at the cut"
        rest = await services.registry.execute("read_note", resumed, injected=injected)
        assert rest.text.split("\n", 1)[1].startswith(page[resumed["offset"] :][:500])
        closed = turn.request(offers_tools=False)
        assert closed is not None
        assert str(closed[-1]["content"]).endswith(EN["tool_result_left_out"])


async def test_a_cut_knowledge_base_part_names_the_token_that_resumes_it(
    make_settings: SettingsFactory, service_options: ServiceOptions
) -> None:
    settings = make_settings()
    settings.kb_dir.mkdir(parents=True)
    text = "".join(f"Sentence {n:04d} of the ferry timetable.\n" for n in range(400))
    (settings.kb_dir / "ferry.md").write_text(text, "utf-8")
    async with open_services(settings, service_options) as services:
        injected = {"space_id": LOCAL}
        first = await services.registry.execute(
            "read_kb_file", {"path": "ferry.md"}, injected=injected
        )
        token = parse_paged_result(first.text)[1]["next_token"]
        arguments = {"continue_from": token}
        call = ToolCall("call_1", "read_kb_file", arguments)
        result = await services.registry.execute("read_kb_file", arguments, injected=injected)
        start = parse_token(token, "read_kb_file")["offset"]
        tool = services.registry.get("read_kb_file")
        marked = marked_result(call, arguments, result, 1, tool, prompts=EN, cap=24000)
        context: list[Message] = [{"role": "user", "content": "read the ferry file"}]
        fixed = sum(message_tokens(m) for m in context) + message_tokens(
            assistant_message("", [call])
        )
        turn = TurnMessages(context, fixed + content_tokens(marked.item.text) // 2)
        turn.steps += [assistant_message("", [call]), ToolStep(call, marked.item)]
        sent = turn.request()
        assert sent is not None
        content = str(sent[-1]["content"])
        match = re.search(r'call read_kb_file with (\{"continue_from": "[\w-]+"\})\.\]$', content)
        assert match is not None, content[-300:]
        shown = content.split("\n", 2)[2]
        shown = shown[: shown.rindex("\n…[")]
        assert shown and text[start:].startswith(shown), "the part's start"
        resumed = json.loads(match.group(1))
        offset = parse_token(resumed["continue_from"], "read_kb_file")["offset"]
        assert offset == start + len(shown), "its token resumes exactly at the cut"
        rest = await services.registry.execute("read_kb_file", resumed, injected=injected)
        assert rest.text.split("\n", 1)[1].startswith(text[offset:][:500])
