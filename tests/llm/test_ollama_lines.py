"""Every line of an Ollama chat stream reaches the client as it came, in order, one part each,
however many of them arrived in one read.

The real `ollama.AsyncClient` over `OllamaTransport` against the loopback LLM answering a whole
NDJSON body at once (so it arrives in one read), and `LineResponse` over a scripted body.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import ollama
import pytest

from bot.llm.backend import BackendError, ModelErrorKind
from bot.llm.ollama_backend import OllamaBackend
from bot.llm.ollama_transport import LineResponse, OllamaTransport
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


async def test_the_client_sees_each_text_delta_tool_call_and_the_final_line_in_order() -> None:
    words = [line(delta(w)) for w in ("one ", "two ", "three ")]
    body = b"\n".join([*words, TOOL_LINE, line(delta("four ")), line(delta("five")), FINAL_LINE])
    async with FakeLLMServer() as llm:
        llm.script(Raw(body + b"\n", content_type="application/x-ndjson"))
        transport = OllamaTransport()
        client = ollama.AsyncClient(host=llm.url, transport=transport)
        parts = [p async for p in await client.chat(model="m", messages=[], stream=True)]
        await transport.aclose()
        # Seven lines came in one read: three text deltas, the tool call, two deltas, the end.
        contents = [p.message.content for p in parts]
        assert contents == ["one ", "two ", "three ", "", "four ", "five", ""]
        assert parts[3].message.tool_calls is not None
        assert parts[3].message.tool_calls[0].function.name == "web_search"
        assert [p.done for p in parts] == [False] * 6 + [True]
        assert parts[-1].eval_count == 9


async def test_a_bad_line_after_text_is_a_protocol_error_after_that_text() -> None:
    body = b"\n".join([line(delta("partial ")), line(delta("answer")), b"{this is not json"])
    async with FakeLLMServer() as llm:
        llm.script(Raw(body + b"\n", content_type="application/x-ndjson"))
        backend = OllamaBackend(llm.url, timeout=5)
        seen: list[str] = []
        with pytest.raises(BackendError) as caught:
            async for piece in backend.stream("ollama/m", [], None, 64):
                seen.append(piece.text)
        assert seen == ["partial ", "answer"]
        assert caught.value.kind is ModelErrorKind.PROTOCOL
        await backend.close()


class Chunks(httpx.AsyncByteStream):
    """A body handed over in the given chunks (each one read)."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk


async def lines_of(chunks: list[bytes]) -> list[str]:
    request = httpx.Request("POST", "http://127.0.0.1/api/chat")
    response = LineResponse(200, stream=Chunks(chunks), request=request)
    return [text async for text in response.aiter_lines()]


# Ollama's own layout (Go's encoder: compact, <, > and & escaped) and Python's json.dumps.
COMPACT = (
    b'{"model":"m","created_at":"2026-12-02T00:00:00Z",'
    b'"message":{"role":"assistant","content":"%s"},"done":false}'
)
SPACED = (
    b'{"model": "m", "created_at": "t", '
    b'"message": {"role": "assistant", "content": "%s"}, "done": false}'
)
EDGES = {
    "plain, both layouts": [COMPACT % b"a ", SPACED % "é日 ".encode(), COMPACT % b"c"],
    "escaped quotes": [COMPACT % b'say \\"hi\\"', COMPACT % b"\\\\ back", COMPACT % b"x"],
    "unicode escapes": [COMPACT % b"\\u003cb\\u003e \\u00e9", COMPACT % b"\\ud83d\\ude00"],
    "bad utf-8": [COMPACT % b"a", COMPACT % b"\xff", COMPACT % b"b"],
    "a raw control character": [COMPACT % b"a", COMPACT % b"\x01", COMPACT % b"b"],
    "not json, an error, an empty line": [b"{this is not json", b'{"error": "crashed"}', b""],
}


@pytest.mark.parametrize("name", EDGES)
async def test_each_line_is_handed_on_as_it_came(name: str) -> None:
    lines = EDGES[name]
    expected = [raw.decode("utf-8", "replace") for raw in lines]
    body = b"\n".join(lines) + b"\n"
    assert await lines_of([body]) == expected  # all in one read
    assert await lines_of([body[i : i + 7] for i in range(0, len(body), 7)]) == expected
