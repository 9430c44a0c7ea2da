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
