"""Text deltas of an Ollama chat stream that come in one read reach the client as one line.

`joined_deltas` on its own, and the real `ollama.AsyncClient` over `OllamaTransport` against
the loopback LLM answering a whole NDJSON body at once (so it arrives in one read).
"""

from __future__ import annotations

import json
from typing import Any

import ollama
import pytest

from bot.llm.backend import BackendError, ModelErrorKind
from bot.llm.ollama_backend import OllamaBackend
from bot.llm.ollama_deltas import joined_deltas
from bot.llm.ollama_transport import OllamaTransport
from tests.fakes.llm_server import FakeLLMServer, Raw


def delta(content: str, **message: str) -> dict[str, Any]:
    return {
        "model": "m",
        "created_at": "2026-12-02T00:00:00Z",
        "message": {"role": "assistant", "content": content, **message},
        "done": False,
    }


def line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode()


TOOL_LINE = line(
    {
        **delta(""),
        "message": {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "web_search", "arguments": {"q": "x"}}}],
        },
    }
)
FINAL_LINE = line({**delta(""), "done": True, "done_reason": "stop", "eval_count": 9})


def test_a_run_of_text_deltas_is_one_line_with_their_text_in_order() -> None:
    lines = [line(delta("日本")), line(delta("語 ")), line(delta('"quoted"\n'))]
    joined = joined_deltas(lines)
    assert len(joined) == 1
    assert json.loads(joined[0])["message"] == {"role": "assistant", "content": '日本語 "quoted"\n'}


def test_thinking_is_joined_beside_the_content() -> None:
    joined = joined_deltas([line(delta("", thinking="let me ")), line(delta("Hi", thinking="see"))])
    assert json.loads(joined[0])["message"] == {
        "role": "assistant",
        "content": "Hi",
        "thinking": "let me see",
    }


def test_anything_but_a_text_delta_passes_as_it_came_and_keeps_its_place() -> None:
    odd = [
        line({**delta("a"), "logprobs": []}),  # a field we do not know: not joined
        line(delta("b", images="x")),  # a message field beyond text
        b'{"error": "model crashed"}',
        b"{this is not json",
        b"",
    ]
    lines = [line(delta("1")), line(delta("2")), TOOL_LINE, line(delta("3")), *odd, FINAL_LINE]
    joined = joined_deltas(lines)
    assert json.loads(joined[0])["message"]["content"] == "12"
    # A run of one is not re-encoded: the same bytes.
    assert joined[1:] == [raw.decode() for raw in [TOOL_LINE, line(delta("3")), *odd, FINAL_LINE]]


@pytest.mark.parametrize("count", [0, 1])
def test_one_line_or_none_is_left_alone(count: int) -> None:
    lines = [b'{"model": "m",  "message": {"role": "assistant", "content": "x"}, "done": false}']
    assert joined_deltas(lines[:count]) == [raw.decode() for raw in lines[:count]]


async def test_the_client_sees_joined_text_tool_calls_and_the_final_line_in_order() -> None:
    words = [line(delta(w)) for w in ("one ", "two ", "three ")]
    body = b"\n".join([*words, TOOL_LINE, line(delta("four ")), line(delta("five")), FINAL_LINE])
    async with FakeLLMServer() as llm:
        llm.script(Raw(body + b"\n", content_type="application/x-ndjson"))
        transport = OllamaTransport()
        client = ollama.AsyncClient(host=llm.url, transport=transport)
        parts = [p async for p in await client.chat(model="m", messages=[], stream=True)]
        await transport.aclose()
        # Nine lines came in one read: three text deltas, the tool call, two deltas, the end.
        assert [p.message.content for p in parts] == ["one two three ", "", "four five", ""]
        assert parts[1].message.tool_calls is not None
        assert parts[1].message.tool_calls[0].function.name == "web_search"
        assert [p.done for p in parts] == [False, False, False, True]
        assert parts[-1].eval_count == 9


async def test_a_bad_line_after_joined_text_is_still_the_protocol_error_it_was() -> None:
    body = b"\n".join([line(delta("partial ")), line(delta("answer")), b"{this is not json"])
    async with FakeLLMServer() as llm:
        llm.script(Raw(body + b"\n", content_type="application/x-ndjson"))
        backend = OllamaBackend(llm.url, timeout=5)
        seen: list[str] = []
        with pytest.raises(BackendError) as caught:
            async for piece in backend.stream("ollama/m", [], None, 64):
                seen.append(piece.text)
        assert seen == ["partial answer"]
        assert caught.value.kind is ModelErrorKind.PROTOCOL
        await backend.close()


def parsed_reference(lines: list[bytes]) -> list[str]:
    """What joining gives by parsing every line with json (the rule the module states)."""

    def text_delta(raw: bytes) -> dict[str, Any] | None:
        try:
            part = json.loads(raw)
        except ValueError:
            return None
        message = part.get("message") if isinstance(part, dict) else None
        if (
            not isinstance(part, dict)
            or part.get("done") is not False
            or not {"model", "created_at", "message", "done"}.issuperset(part)
            or not isinstance(message, dict)
            or message.get("role") != "assistant"
            or not {"role", "content", "thinking"}.issuperset(message)
            or not all(isinstance(message.get(k, ""), str) for k in ("content", "thinking"))
        ):
            return None
        return part

    out: list[str] = []
    run: list[tuple[bytes, dict[str, Any]]] = []

    def flush() -> None:
        if len(run) == 1:
            out.append(run[0][0].decode("utf-8", "replace"))
        elif run:
            parts = [part for _, part in run]
            message = {
                "role": "assistant",
                "content": "".join(p["message"].get("content", "") for p in parts),
            }
            thinking = "".join(p["message"].get("thinking", "") for p in parts)
            if thinking:
                message["thinking"] = thinking
            out.append(json.dumps({**parts[-1], "message": message}, ensure_ascii=False))
        run.clear()

    for raw in lines:
        part = text_delta(raw) if len(lines) > 1 else None
        if part is not None:
            run.append((raw, part))
            continue
        flush()
        out.append(raw.decode("utf-8", "replace"))
    flush()
    return out


# Ollama's own layout (Go's encoder: compact, <, > and & escaped) and Python's json.dumps.
COMPACT = (
    b'{"model":"m","created_at":"2026-12-02T00:00:00Z",'
    b'"message":{"role":"assistant","content":"%s"},"done":false}'
)
SPACED = (
    b'{"model": "m", "created_at": "t", '
    b'"message": {"role": "assistant", "content": "%s"}, "done": false}'
)
THINKING = (
    b'{"model":"m","created_at":"t",'
    b'"message":{"role":"assistant","content":"%s","thinking":"%s"},"done":false}'
)
EDGES = {
    "plain, both layouts": [COMPACT % b"a ", SPACED % "é日 ".encode(), COMPACT % b"c"],
    "escaped quotes": [COMPACT % b'say \\"hi\\"', COMPACT % b"\\\\ back", COMPACT % b"x"],
    "unicode escapes": [
        COMPACT % b"\\u003cb\\u003e \\u00e9",
        COMPACT % b"\\ud83d\\ude00",
        COMPACT % b"!",
    ],
    "a lone surrogate escape": [COMPACT % b"a", COMPACT % b"\\ud800", COMPACT % b"b"],
    "an encoded surrogate": [COMPACT % b"a", COMPACT % b"\xed\xa0\x80", COMPACT % b"b"],
    "bad utf-8": [COMPACT % b"a", COMPACT % b"\xff", COMPACT % b"b"],
    "a raw control character": [COMPACT % b"a", COMPACT % b"\x01", COMPACT % b"b"],
    "a bad escape": [COMPACT % b"a", COMPACT % b"\\x41", COMPACT % b"b"],
    "content not a string": [
        COMPACT % b"a",
        COMPACT.replace(b'"%s"', b"%s") % b"5",
        COMPACT.replace(b'"%s"', b"%s") % b"null",
        COMPACT % b"b",
    ],
    "extra fields": [
        COMPACT % b"a",
        COMPACT[:-1] % b"b" + b',"logprobs":[]}',
        COMPACT.replace(b'"},', b'","images":[]},') % b"c",
        COMPACT % b"d",
    ],
    "other layouts and orders": [
        COMPACT % b"a",
        COMPACT.replace(b"{", b"{ ", 1) % b"b",
        b'{"created_at":"t","model":"m","message":{"content":"c","role":"assistant"},"done":false}',
        b'{"model":"m","model":"n","message":{"role":"assistant","content":"d"},"done":false}',
        (COMPACT % b"e") + b" ",
        COMPACT % b"f",
    ],
    "not a delta": [
        COMPACT % b"a",
        COMPACT.replace(b"false", b"true") % b"b",
        COMPACT.replace(b"assistant", b"user") % b"c",
        COMPACT.replace(b'"m"', b"1") % b"d",
        COMPACT % b"e",
    ],
    "thinking": [THINKING % (b"", b"let "), THINKING % (b"Hi", b"me"), COMPACT % b"!"],
}


@pytest.mark.parametrize("name", EDGES)
def test_each_line_is_judged_and_joined_as_parsing_it_would(name: str) -> None:
    lines = EDGES[name]
    assert joined_deltas(lines) == parsed_reference(lines)
    assert joined_deltas(lines[1:]) == parsed_reference(lines[1:])


def test_plain_text_deltas_are_joined_without_a_json_parse(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lines = [COMPACT % b"one ", SPACED % b"two ", THINKING % (b"three", b"hm"), COMPACT % b"x"]
    expected = parsed_reference(lines)
    parses: list[object] = []
    real = json.loads
    monkeypatch.setattr(json, "loads", lambda *a, **k: parses.append(a) or real(*a, **k))
    assert joined_deltas(lines) == expected
    assert parses == []
    joined_deltas([COMPACT % b"a", COMPACT % b"\\n"])  # an escape is left to json
    assert len(parses) == 1
