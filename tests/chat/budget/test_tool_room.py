"""Tools only while their results can be seen (what the loopback model received, over both
backends): tools are offered while a page of result still fits the window, the newest result
arrives whole, earlier ones are condensed to digests naming the call that reads them again, and
the model is told once when tools are over."""

from __future__ import annotations

import json
import re
from typing import Any

from bot.chat.budget.allocation import ANSWER_RESERVE_SHARE, MIN_ANSWER_RESERVE, PAGE_TOKENS
from bot.chat.budget.tokens import estimate_tokens, message_tokens
from bot.prompts import prompts_for
from bot.services import ServiceOptions, Services, open_services
from bot.tools.paging import parse_paged_result, parse_token
from tests.chat.test_context_fit import fill_every_layer, run, write_kb
from tests.conftest import LOCAL, SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, RecordedRequest, Text, ToolCalls

QUESTION = "tell me the guide0 fact, the guide1 fact and the guide2 fact"
PAGE_START = re.compile(r"\(([^()]+)\), from character ([\d,]+) of ([\d,]+)\n")


def contents_of(request: RecordedRequest) -> list[str]:
    """The tool messages' contents, in order."""
    return [str(m.get("content") or "") for m in request.messages if m["role"] == "tool"]


def reader(*paths: str) -> Any:
    """A model that reads `paths` with read_kb_file, page after page, while tools are offered."""
    left = list(paths)

    def reply(request: RecordedRequest) -> Text | ToolCalls:
        if "read_kb_file" not in request.tool_names:
            return Text("Here is what I read.")
        contents = contents_of(request)
        token = parse_paged_result(contents[-1])[1].get("next_token") if contents else None
        if token:
            return ToolCalls([("read_kb_file", {"continue_from": token})])
        if not left:
            return Text("I read it all.")
        return ToolCalls([("read_kb_file", {"path": left.pop(0)})])

    return reply


def window_tokens(request: RecordedRequest) -> int:
    """The request as the project's estimator counts it: messages and the schemas sent."""
    total = 0
    for message in request.messages:
        calls = [
            {**call, "function": {**call["function"], "arguments": json.dumps(args)}}
            if not isinstance(args := call["function"].get("arguments"), str)
            else call
            for call in message.get("tool_calls") or ()
        ]
        total += message_tokens({**message, "tool_calls": calls})
    tools = estimate_tokens(json.dumps(request.tools, ensure_ascii=False)) if request.tools else 0
    return total + tools


def check_whole(content: str, files: dict[str, str]) -> tuple[str, int, int]:
    """A page that arrived whole: its body is the file's text from its start, and its token
    (if any) resumes right after it. Returns (path, start offset, characters shown)."""
    match = PAGE_START.search(content)
    assert match is not None, content[:200]
    path, start = match.group(1), int(match.group(2).replace(",", "")) - 1
    body, meta = parse_paged_result(content[match.end() :])
    text = files[path]
    assert "shortened to fit" not in body and "コンテキストウィンドウに収めるため" not in body
    assert text[start : start + len(body)] == body, "the page is the file's text, uncut"
    if meta.get("next_token"):
        assert parse_token(meta["next_token"], "read_kb_file")["offset"] == start + len(body)
    else:
        assert start + len(body) == len(text), "no token only at the end of the file"
    return path, start, len(body)


def check_condensed(
    content: str, files: dict[str, str], language: str, *, closed: bool = False
) -> None:
    """An earlier page: whole, or a digest of its lines (the page's start first, the rest in
    order, each the file's own text) whose marker says to repeat the call it was read with;
    in a request that offers no tools (`closed`) the marker names no call."""
    prompts = prompts_for(language)
    marker = "\n…["
    if marker not in content:
        check_whole(content, files)
        return
    match = PAGE_START.search(content)
    assert match is not None
    start = int(match.group(2).replace(",", "")) - 1
    body, tail = content[match.end() :].split(marker, 1)
    pieces = [piece for piece in body.split("\n") if piece and piece != "…"]
    page = files[match.group(1)][start:]
    assert pieces and page.startswith(pieces[0]), "the digest begins with the page's start"
    found = 0
    for piece in pieces:
        found = page.find(piece, found)
        assert found >= 0, "each kept line is the page's own text, in order"
        found += len(piece)
    if closed:
        # No call named; the token the page was read with stays, for a later turn.
        ending, meta = parse_paged_result(marker + tail)
        assert ending == "\n" + prompts["tool_result_left_out"]
        if start:
            assert parse_token(meta["next_token"], "read_kb_file")["offset"] == start
    else:
        assert marker + tail == "\n" + prompts.format(
            "tool_result_digest", resume=prompts.format("tool_resume_call", name="read_kb_file")
        )


async def test_at_8192_with_every_layer_full_tools_stop_once_a_page_no_longer_fits(
    make_settings: SettingsFactory,
    backend: str,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
) -> None:
    window = 8192
    # Over LiteLLM the KB ranks by embeddings too (Ollama has a default embedding model).
    embed = {"embed_model": "openai/embedder"} if backend == "litellm" else {}
    settings = make_settings(backend, llm_context_tokens=window, local_kb_min_score=-1.0, **embed)
    write_kb(settings)
    llm.default_reply = Text("hello")
    async with open_services(settings, service_options) as services:
        filled = await fill_every_layer(services)
        files = {f"guide{n}.md": text for n, text in enumerate(filled.kb_files)}
        before = len(llm.chat_requests)
        llm.default_reply = reader("guide0.md", "guide1.md", "guide2.md")  # type: ignore[assignment]
        await run(services, QUESTION, filled.session_id)
        # The condensing of the summaries runs beside the turn: its requests are not the turn's.
        turn = [
            r
            for r in llm.chat_requests[before:]
            if any(m.get("content") == QUESTION for m in r.messages)
        ]
    check_turn(turn, files, window, "en")
    first = "\n".join(str(m.get("content")) for m in turn[0].messages)
    assert "characters of this file shown" in first, "every layer full"


def check_turn(turn: list[RecordedRequest], files: dict[str, str], window: int, lang: str) -> None:
    """Tools while a page fits, then none, told once; newest whole, earlier condensed."""
    told = [
        prompts_for(lang)[key]
        for key in ("tool_window_exhausted", "tool_rounds_exhausted", "tool_budget_exhausted")
    ]
    reserve = max(MIN_ANSWER_RESERVE, int(window * ANSWER_RESERVE_SHARE))
    offered = [bool(request.tool_names) for request in turn]
    assert offered[0], "the first call has a page of room for tools"
    assert not offered[-1] and offered == sorted(offered, reverse=True), "then none"
    for request in turn:
        assert window_tokens(request) + reserve <= window
        contents = contents_of(request)
        notices = [m.get("content") for m in request.messages if m.get("content") in told]
        assert len(notices) == (0 if request.tool_names else 1), "told once, when tools stop"
        if not contents:
            continue
        path, start, shown = check_whole(contents[-1], files)
        rest = len(files[path]) - start
        assert estimate_tokens(contents[-1]) >= PAGE_TOKENS - 100 or shown == rest, (
            "the newest result is never cut to less than a page"
        )
        for earlier in contents[:-1]:
            check_condensed(earlier, files, lang, closed=not request.tool_names)


async def test_at_16384_japanese_pages_arrive_whole_and_earlier_ones_are_condensed(
    make_settings: SettingsFactory,
    backend: str,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
) -> None:
    window = 16384
    # The KB layer is off (top_k 0): only read_kb_file brings the file in.
    settings = make_settings(backend, llm_context_tokens=window, language="ja", local_kb_top_k=0)
    settings.kb_dir.mkdir(parents=True)
    text = ("京都の紅葉は十一月に見頃を迎えます。嵐山と東福寺が有名です。" * 700)[:20000]
    (settings.kb_dir / "kyoto.md").write_text(text, "utf-8")
    llm.default_reply = reader("kyoto.md")  # type: ignore[assignment]
    async with open_services(settings, service_options) as services:
        await run_in(services, "京都のファイルを全部読んで")
    turn = llm.chat_requests
    assert len(turn) == 6, "five rounds, then the answer"
    check_turn(turn, {"kyoto.md": text}, window, "ja")
    last = contents_of(turn[-1])
    assert sum("コンテキストウィンドウに収めるため" in content for content in last) >= 1


async def run_in(services: Services, text: str) -> None:
    """One turn in the local space."""
    await run(services, text)
    assert LOCAL
