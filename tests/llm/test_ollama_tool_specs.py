"""Tool schemas become `ollama.Tool`s once per distinct set; the server receives the same JSON.

The real ollama client against the loopback LLM: the body a call with ready tools sends is
byte for byte the body the client sends when handed the converted dicts itself.
"""

from __future__ import annotations

import copy
from typing import Any

import ollama
import pytest

from bot.llm import ollama_backend
from bot.llm.ollama_backend import OllamaBackend, to_ollama_tools
from bot.llm.tool_sets import TOOL_SETS_KEPT
from bot.llm.types import Message, ToolSchema
from tests.fakes.llm_server import FakeLLMServer, Text

MESSAGES: list[Message] = [{"role": "user", "content": "hi"}]


def schema(name: str, description: str = "Find things.") -> ToolSchema:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {
                    "q": {"type": "string", "description": "What."},
                    "n": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
                },
                "required": ["q"],
            },
        },
    }


async def streamed(backend: OllamaBackend, tools: list[ToolSchema] | None) -> None:
    assert "".join([d.text async for d in backend.stream("ollama/m", MESSAGES, tools, 64)]) == "ok"


@pytest.fixture
def conversions(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The names of each tool set converted (and validated into ollama.Tool) by the backend."""
    seen: list[list[str]] = []

    def counted(tools: list[ToolSchema] | None) -> list[dict[str, Any]] | None:
        seen.append([tool["function"]["name"] for tool in tools or ()])
        return to_ollama_tools(tools)

    monkeypatch.setattr(ollama_backend, "to_ollama_tools", counted)
    return seen


async def test_the_server_receives_what_the_client_sends_for_the_dicts(
    conversions: list[list[str]],
) -> None:
    tools = [schema("find"), schema("read", "Read a page.")]
    async with FakeLLMServer() as llm:
        llm.script(*[Text("ok")] * 4)
        reference = ollama.AsyncClient(host=llm.url)
        await reference.chat(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            tools=to_ollama_tools(tools),
            stream=False,
            options={"num_ctx": 64},
        )
        await reference.close()  # type: ignore[no-untyped-call]
        backend = OllamaBackend(llm.url, timeout=5)
        await streamed(backend, tools)
        await streamed(backend, tools)
        await streamed(backend, None)
        await backend.close()
        sent = [request.body for request in llm.chat_requests]
    expected = sent[0].replace(b'"stream":false', b'"stream":true')
    assert expected != sent[0]
    assert sent[1] == sent[2] == expected
    assert b'"tools":[]}' in sent[3]
    assert conversions == [["find", "read"]]


async def test_a_changed_or_new_set_is_built_anew(conversions: list[list[str]]) -> None:
    tools = [schema("find")]
    async with FakeLLMServer() as llm:
        llm.script(*[Text("ok")] * 5)
        backend = OllamaBackend(llm.url, timeout=5)
        await streamed(backend, tools)
        await streamed(backend, list(tools))  # another list of the same dicts
        tools[0]["function"]["description"] = "Find other things."  # changed in place
        await streamed(backend, tools)
        await streamed(backend, [copy.deepcopy(tools[0]), schema("read")])
        await streamed(backend, [tools[0], schema("read")])
        await backend.close()
        descriptions = [r.tools[0]["function"]["description"] for r in llm.chat_requests]
    assert descriptions == ["Find things.", "Find things.", *["Find other things."] * 3]
    assert conversions == [["find"], ["find"], ["find", "read"], ["find", "read"]]


async def test_only_the_latest_sets_are_kept(conversions: list[list[str]]) -> None:
    sets = [[schema(f"tool{i}")] for i in range(TOOL_SETS_KEPT + 1)]
    async with FakeLLMServer() as llm:
        llm.script(*[Text("ok")] * (len(sets) + 2))
        backend = OllamaBackend(llm.url, timeout=5)
        for tools in sets:
            await streamed(backend, tools)
        await streamed(backend, sets[1])  # still kept
        await streamed(backend, sets[0])  # the oldest, dropped when the last came
        await backend.close()
    assert conversions == [[f"tool{i}"] for i in range(len(sets))] + [["tool0"]]
