"""Tests of the fake LLM server through the real clients: ollama.AsyncClient and LiteLLM."""

from __future__ import annotations

import asyncio
import json
import math
import os
import time
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

import httpx
import ollama
import pytest

from tests.fakes.llm_server import (
    NO_REPLY_MESSAGE,
    Drop,
    FakeLLMServer,
    Hang,
    HttpError,
    RecordedRequest,
    Reply,
    Text,
    ToolCalls,
    hashing_embedder,
)

SEARCH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "web_search",
        "description": "Search the web.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What to search."}},
            "required": ["query"],
        },
    },
}
MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture
async def llm() -> AsyncIterator[FakeLLMServer]:
    async with FakeLLMServer() as server:
        yield server


@pytest.fixture
async def client(llm: FakeLLMServer) -> AsyncIterator[ollama.AsyncClient]:
    ollama_client = ollama.AsyncClient(host=llm.url)
    yield ollama_client
    await ollama_client.close()


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


# --------------------------------------------------------------------------- ollama client


async def test_ollama_streams_text_in_the_scripted_pieces(
    llm: FakeLLMServer, client: ollama.AsyncClient
) -> None:
    llm.script(Text("Hello big world", chunks=3, prompt_tokens=7, completion_tokens=3))
    parts = [part async for part in await client.chat("qwen3:8b", MESSAGES, stream=True)]

    contents = [p.message.content for p in parts if not p.done]
    assert contents == ["Hello", " big ", "world"]
    final = parts[-1]
    assert final.done is True
    assert final.done_reason == "stop"
    assert (final.prompt_eval_count, final.eval_count) == (7, 3)
    (request,) = llm.chat_requests
    assert request.path == "/api/chat"
    assert request.model == "qwen3:8b"
    assert request.messages == MESSAGES
    assert request.stream is True
    assert llm.pending == 0


async def test_ollama_default_chunks_are_words(
    llm: FakeLLMServer, client: ollama.AsyncClient
) -> None:
    llm.script(Text("one two three"))
    parts = [p async for p in await client.chat("m", MESSAGES, stream=True)]
    assert [p.message.content for p in parts if not p.done] == ["one ", "two ", "three"]


async def test_ollama_tool_calls_and_recorded_tools(
    llm: FakeLLMServer, client: ollama.AsyncClient
) -> None:
    llm.script(
        ToolCalls([("web_search", {"query": "x"}), ("fetch", {"url": "u", "page": 2})]),
        Text("done"),
    )
    parts = [p async for p in await client.chat("m", MESSAGES, tools=[SEARCH_TOOL], stream=True)]

    calls = [c for p in parts for c in (p.message.tool_calls or [])]
    assert [(c.function.name, dict(c.function.arguments)) for c in calls] == [
        ("web_search", {"query": "x"}),
        ("fetch", {"url": "u", "page": 2}),
    ]
    assert parts[-1].done is True
    (request,) = llm.chat_requests
    assert request.tool_names == ["web_search"]
    assert request.tools[0]["function"]["parameters"]["required"] == ["query"]

    answer = await client.chat("m", MESSAGES, stream=False)
    assert answer.message.content == "done"
    assert answer.message.tool_calls is None
    assert llm.chat_requests[1].stream is False


async def test_ollama_non_stream_tool_calls_with_text(
    llm: FakeLLMServer, client: ollama.AsyncClient
) -> None:
    llm.script(ToolCalls([("notes", {"q": "ä"})], text="Let me look."))
    answer = await client.chat("m", MESSAGES, stream=False)
    assert answer.message.content == "Let me look."
    assert answer.message.tool_calls is not None
    assert answer.message.tool_calls[0].function.name == "notes"
    assert dict(answer.message.tool_calls[0].function.arguments) == {"q": "ä"}


async def test_ollama_embed_list_show_and_version(
    llm: FakeLLMServer, client: ollama.AsyncClient
) -> None:
    llm.models = ["qwen3:8b", "llama3.2-vision"]
    llm.context_length = 8192

    texts = ["the cat sat on the mat", "the cat sat on a mat", "quantum field theory lecture"]
    result = await client.embed("nomic-embed-text", texts)
    vectors = [list(v) for v in result.embeddings]
    assert vectors == [hashing_embedder(t) for t in texts]
    assert all(len(v) == 64 and math.isclose(cosine(v, v), 1.0) for v in vectors)
    assert cosine(vectors[0], vectors[1]) > 0.6 > cosine(vectors[0], vectors[2])

    listed = await client.list()
    assert [m.model for m in listed.models] == ["qwen3:8b", "llama3.2-vision"]

    shown = await client.show("qwen3:8b")
    assert shown.modelinfo is not None
    assert shown.modelinfo["llama.context_length"] == 8192
    with pytest.raises(ollama.ResponseError) as missing:
        await client.show("absent")
    assert missing.value.status_code == 404

    async with httpx.AsyncClient(base_url=llm.url) as http:
        assert (await http.get("/api/version")).json() == {"version": "0.9.0"}
    assert [r.path for r in llm.requests] == [
        "/api/embed",
        "/api/tags",
        "/api/show",
        "/api/show",
        "/api/version",
    ]
    assert llm.chat_requests == []


async def test_ollama_custom_embedder_and_embed_error(
    llm: FakeLLMServer, client: ollama.AsyncClient
) -> None:
    llm.embedder = lambda text: [float(len(text)), 0.0]
    assert [list(v) for v in (await client.embed("e", "abc")).embeddings] == [[3.0, 0.0]]

    llm.embed_error = HttpError(503, "model is loading")
    with pytest.raises(ollama.ResponseError) as err:
        await client.embed("e", ["abc"])
    assert err.value.status_code == 503
    assert err.value.error == "model is loading"
    assert llm.requests[-1].json == {"model": "e", "input": ["abc"]}


async def test_ollama_http_error_is_consumed_once_and_recorded(
    llm: FakeLLMServer, client: ollama.AsyncClient
) -> None:
    llm.script(HttpError(500, "boom"), Text("recovered"))
    with pytest.raises(ollama.ResponseError) as err:
        async for _ in await client.chat("m", MESSAGES, stream=True):
            pass
    assert err.value.status_code == 500
    assert err.value.error == "boom"
    assert len(llm.chat_requests) == 1
    assert llm.chat_requests[0].messages == MESSAGES

    answer = await client.chat("m", MESSAGES, stream=False)
    assert answer.message.content == "recovered"


async def test_empty_queue_answers_500(llm: FakeLLMServer, client: ollama.AsyncClient) -> None:
    with pytest.raises(ollama.ResponseError) as err:
        await client.chat("m", MESSAGES, stream=False)
    assert err.value.status_code == 500
    assert err.value.error == NO_REPLY_MESSAGE

    async with httpx.AsyncClient(base_url=llm.openai_base) as http:
        reply = await http.post("/chat/completions", json={"model": "m", "messages": MESSAGES})
    assert reply.status_code == 500
    assert reply.json() == {"error": NO_REPLY_MESSAGE}
    assert len(llm.chat_requests) == 2


async def test_ollama_drop_mid_stream_raises(
    llm: FakeLLMServer, client: ollama.AsyncClient
) -> None:
    llm.script(Drop(after_chunks=2, text="partial answer"), Drop(after_chunks=0))
    received: list[str] = []
    with pytest.raises(httpx.RemoteProtocolError):
        async for part in await client.chat("m", MESSAGES, stream=True):
            received.append(part.message.content or "")
    assert "".join(received) == "partial answer"
    assert len(received) == 2

    with pytest.raises(httpx.RemoteProtocolError):
        await client.chat("m", MESSAGES, stream=False)


async def test_ollama_hang_times_out_and_close_does_not_wait() -> None:
    server = FakeLLMServer(shutdown_timeout=60.0)
    await server.start()
    server.script(Hang(), Hang(after_chunks=1, text="stalled"), Hang())
    impatient = ollama.AsyncClient(host=server.url, timeout=0.3)
    patient = ollama.AsyncClient(host=server.url, timeout=30.0)
    try:
        with pytest.raises(httpx.ReadTimeout):
            await impatient.chat("m", MESSAGES, stream=False)

        received: list[str] = []
        with pytest.raises(httpx.ReadTimeout):
            async for part in await impatient.chat("m", MESSAGES, stream=True):
                received.append(part.message.content or "")
        assert received == ["stalled"]

        pending = asyncio.create_task(patient.chat("m", MESSAGES, stream=False))
        await server.wait_for_requests(3)
        started = time.monotonic()
        await server.close()
        # shutdown_timeout is 60 s: finishing early proves close() cut the Hang off.
        assert time.monotonic() - started < 5.0
        with pytest.raises(httpx.RemoteProtocolError):
            await asyncio.wait_for(pending, 5.0)
    finally:
        await server.close()
        await impatient.close()
        await patient.close()


async def test_text_delay_paces_the_stream(llm: FakeLLMServer, client: ollama.AsyncClient) -> None:
    llm.script(Text("a b c", delay=0.05))
    started = time.monotonic()
    parts = [p async for p in await client.chat("m", MESSAGES, stream=True)]
    assert time.monotonic() - started >= 0.1
    assert "".join(p.message.content or "" for p in parts) == "a b c"


async def test_callable_and_default_replies(llm: FakeLLMServer, client: ollama.AsyncClient) -> None:
    def echo(request: RecordedRequest) -> Reply:
        return Text("echo: " + request.messages[-1]["content"])

    def broken(request: RecordedRequest) -> Reply:
        raise RuntimeError("bad script")

    llm.script(echo, broken)
    answer = await client.chat("m", [{"role": "user", "content": "ping"}], stream=False)
    assert answer.message.content == "echo: ping"
    with pytest.raises(ollama.ResponseError) as err:
        await client.chat("m", MESSAGES, stream=False)
    assert err.value.status_code == 500
    assert "bad script" in err.value.error

    llm.default_reply = Text("always")
    for _ in range(3):
        assert (await client.chat("m", MESSAGES, stream=False)).message.content == "always"


async def test_bad_request_bodies_get_400_without_consuming_the_script(
    llm: FakeLLMServer,
) -> None:
    llm.script(Text("kept"))
    async with httpx.AsyncClient(base_url=llm.url) as http:
        not_json = await http.post("/api/chat", content=b"{nope")
        no_messages = await http.post("/v1/chat/completions", json={"model": "m"})
        unknown = await http.get("/api/nothing")
    assert not_json.status_code == 400
    assert "JSON object" in not_json.json()["error"]
    assert no_messages.status_code == 400
    assert "messages" in no_messages.json()["error"]["message"]
    assert unknown.status_code == 404
    assert llm.pending == 1
    assert llm.requests[0].json is None
    assert llm.requests[0].body == b"{nope"
    assert [r.path for r in llm.requests][-1] == "/api/nothing"


def test_replies_reject_bad_arguments() -> None:
    with pytest.raises(ValueError, match="cannot split"):
        Text("ab", chunks=3)
    with pytest.raises(ValueError, match="do not join"):
        Text("abc", chunks=["a", "b"])
    with pytest.raises(ValueError, match="at least one call"):
        ToolCalls([])
    with pytest.raises(TypeError, match="each call"):
        ToolCalls([("name", "not a dict")])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="4xx or 5xx"):
        HttpError(200)
    with pytest.raises(ValueError, match="cannot split"):
        Drop(after_chunks=5, text="abc")
    server = FakeLLMServer()
    with pytest.raises(TypeError, match="not a reply"):
        server.script("hello")  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="not started"):
        _ = server.url


def test_hashing_embedder_is_deterministic_and_normalised() -> None:
    a = hashing_embedder("Hello, world")
    assert a == hashing_embedder("hello world")
    assert len(a) == 64
    assert math.isclose(cosine(a, a), 1.0)
    assert math.isclose(cosine(hashing_embedder(""), hashing_embedder("")), 1.0)
    assert len(hashing_embedder("x", dim=8)) == 8


# --------------------------------------------------------------------------- LiteLLM


@pytest.fixture(scope="module")
def litellm() -> ModuleType:
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    import litellm as module

    return module


def litellm_args(llm: FakeLLMServer) -> dict[str, Any]:
    return {
        "model": "openai/test-model",
        "api_base": llm.openai_base,
        "api_key": "sk-test",
        "messages": MESSAGES,
        "num_retries": 0,
        "max_retries": 0,
    }


async def test_litellm_streams_text_and_tool_call_deltas(
    llm: FakeLLMServer, litellm: ModuleType
) -> None:
    llm.script(
        Text("Hello big world", chunks=3),
        ToolCalls([("web_search", {"query": "x y"}), ("fetch", {"url": "u"})], text="Looking."),
    )
    stream = await litellm.acompletion(**litellm_args(llm), tools=[SEARCH_TOOL], stream=True)
    pieces = [c.choices[0].delta.content async for c in stream if c.choices[0].delta.content]
    assert pieces == ["Hello", " big ", "world"]
    first = llm.chat_requests[0]
    assert first.path == "/v1/chat/completions"
    assert first.stream is True
    assert first.model == "test-model"
    assert first.tool_names == ["web_search"]
    assert first.headers["authorization"] == "Bearer sk-test"

    stream = await litellm.acompletion(
        **litellm_args(llm),
        tools=[SEARCH_TOOL],
        stream=True,
        stream_options={"include_usage": True},
    )
    text: list[str] = []
    names: dict[int, str] = {}
    ids: dict[int, str] = {}
    arguments: dict[int, str] = {}
    finish: list[str] = []
    usage: list[Any] = []
    async for chunk in stream:
        if getattr(chunk, "usage", None) is not None:
            usage.append(chunk.usage)
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        if choice.finish_reason:
            finish.append(choice.finish_reason)
        if choice.delta.content:
            text.append(choice.delta.content)
        for delta in choice.delta.tool_calls or []:
            if delta.id:
                ids[delta.index] = delta.id
            if delta.function.name:
                names[delta.index] = delta.function.name
            arguments[delta.index] = arguments.get(delta.index, "") + (
                delta.function.arguments or ""
            )
    assert "".join(text) == "Looking."
    assert names == {0: "web_search", 1: "fetch"}
    assert ids == {0: "call_1", 1: "call_2"}
    assert {i: json.loads(a) for i, a in arguments.items()} == {
        0: {"query": "x y"},
        1: {"url": "u"},
    }
    assert finish[-1] == "tool_calls"
    assert usage and usage[-1].prompt_tokens == 10
    assert llm.chat_requests[1].json["stream_options"] == {"include_usage": True}


async def test_litellm_non_stream_and_embeddings(llm: FakeLLMServer, litellm: ModuleType) -> None:
    llm.script(
        Text("All of it", chunks=2, prompt_tokens=4, completion_tokens=3),
        ToolCalls([("web_search", {"query": "q"})], ids=["call_abc"]),
    )
    answer = await litellm.acompletion(**litellm_args(llm))
    assert answer.choices[0].message.content == "All of it"
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (4, 3)
    assert llm.chat_requests[0].stream is False

    calls = await litellm.acompletion(**litellm_args(llm), tools=[SEARCH_TOOL])
    assert calls.choices[0].finish_reason == "tool_calls"
    (call,) = calls.choices[0].message.tool_calls
    assert (call.id, call.function.name) == ("call_abc", "web_search")
    assert json.loads(call.function.arguments) == {"query": "q"}

    embedded = await litellm.aembedding(
        model="openai/emb", api_base=llm.openai_base, api_key="sk-test", input=["a", "b c"]
    )
    vectors = [item["embedding"] for item in embedded.data]
    assert vectors == [hashing_embedder("a"), hashing_embedder("b c")]
    assert llm.requests[-1].path == "/v1/embeddings"

    async with httpx.AsyncClient(base_url=llm.openai_base) as http:
        models = (await http.get("/models")).json()
    assert [m["id"] for m in models["data"]] == llm.models


async def test_litellm_errors_drop_and_hang_raise(llm: FakeLLMServer, litellm: ModuleType) -> None:
    llm.script(HttpError(500), Drop(after_chunks=1, text="part"), Hang())
    with pytest.raises(litellm.InternalServerError):
        await litellm.acompletion(**litellm_args(llm))
    assert len(llm.chat_requests) == 1

    # LiteLLM reports a connection lost mid-stream as MidStreamFallbackError (a 503-like
    # ServiceUnavailableError) wrapping the APIConnectionError, not as the latter itself.
    received: list[str] = []
    with pytest.raises(litellm.exceptions.MidStreamFallbackError) as dropped:
        stream = await litellm.acompletion(**litellm_args(llm), stream=True)
        async for chunk in stream:
            received.append(chunk.choices[0].delta.content or "")
    assert "".join(received) == "part"
    assert isinstance(dropped.value.original_exception, litellm.APIConnectionError)

    # The hang must have been reached before the client gives up: under load (a full suite on
    # two cores) 0.3 s was sometimes over before the request was even sent.
    with pytest.raises(litellm.Timeout):
        await litellm.acompletion(**litellm_args(llm), timeout=2.0)
    assert len(llm.chat_requests) == 3
    assert llm.pending == 0

    llm.embed_error = HttpError(429, "slow down")
    with pytest.raises(litellm.RateLimitError):
        await litellm.aembedding(
            model="openai/emb",
            api_base=llm.openai_base,
            api_key="sk-test",
            input=["a"],
            max_retries=0,
        )


# --------------------------------------------------------------------------- wire details


async def test_ollama_streams_ndjson_by_default(llm: FakeLLMServer) -> None:
    llm.script(ToolCalls([("web_search", {"query": "x"})]))
    async with httpx.AsyncClient(base_url=llm.url) as http:
        reply = await http.post("/api/chat", json={"model": "m", "messages": MESSAGES})
    assert reply.headers["content-type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in reply.text.splitlines()]
    assert [line["done"] for line in lines] == [False, True]
    assert lines[0]["message"]["tool_calls"] == [
        {"function": {"name": "web_search", "arguments": {"query": "x"}}}
    ]
    assert lines[1]["done_reason"] == "stop"
    assert lines[1]["prompt_eval_count"] == 10
    assert lines[1]["message"] == {"role": "assistant", "content": ""}


async def test_openai_sse_tool_call_deltas_and_usage(llm: FakeLLMServer) -> None:
    llm.script(ToolCalls([("web_search", {"query": "x"})]))
    body = {
        "model": "m",
        "messages": MESSAGES,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    async with httpx.AsyncClient(base_url=llm.openai_base) as http:
        reply = await http.post("/chat/completions", json=body)
    assert reply.headers["content-type"] == "text/event-stream"
    events = [e.removeprefix("data: ") for e in reply.text.split("\n\n") if e]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    usage = chunks.pop()
    assert usage["choices"] == []
    assert usage["usage"]["prompt_tokens"] == 10
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    deltas = [c["choices"][0]["delta"]["tool_calls"][0] for c in chunks[:-1]]
    assert deltas[0]["id"] == "call_1"
    assert deltas[0]["function"]["name"] == "web_search"
    assert deltas[0]["index"] == 0
    parts = [d["function"]["arguments"] for d in deltas if d["function"].get("arguments")]
    assert len(parts) >= 2
    assert json.loads("".join(parts)) == {"query": "x"}


async def test_openai_sdk_base64_embeddings(llm: FakeLLMServer, litellm: ModuleType) -> None:
    import openai  # LiteLLM's own transport; it asks for base64 embeddings by default

    sdk = openai.AsyncOpenAI(base_url=llm.openai_base, api_key="sk-test", max_retries=0)
    try:
        result = await sdk.embeddings.create(model="emb", input=["a b"])
    finally:
        await sdk.close()
    assert llm.requests[-1].json["encoding_format"] == "base64"
    got, expected = result.data[0].embedding, hashing_embedder("a b")
    assert all(math.isclose(x, y, abs_tol=1e-6) for x, y in zip(got, expected, strict=True))
