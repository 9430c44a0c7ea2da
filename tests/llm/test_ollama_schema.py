"""Tool schemas survive the ollama client's Tool model (which drops keys it does not know)."""

from __future__ import annotations

from ollama._types import Tool

from bot.llm.ollama_backend import to_ollama_tools


def test_anyof_and_nested_objects_keep_their_meaning() -> None:
    schema = {
        "type": "function",
        "function": {
            "name": "srv__find",
            "description": "Find things.",
            "parameters": {
                "type": "object",
                "title": "findArguments",
                "properties": {
                    "query": {"title": "Query", "type": "string", "description": "What."},
                    "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
                    "filter": {
                        "type": "object",
                        "properties": {"tag": {"type": "string"}},
                        "description": "Narrow down.",
                    },
                },
                "required": ["query"],
            },
        },
    }
    (converted,) = to_ollama_tools([schema]) or []
    kept = Tool.model_validate(converted).model_dump(exclude_none=True, by_alias=True)
    props = kept["function"]["parameters"]["properties"]
    assert props["query"] == {"type": "string", "description": "What."}
    assert props["limit"]["type"] == "integer"
    assert props["filter"]["type"] == "object"
    assert (
        '"tag"' in props["filter"]["description"]
        and "Narrow down." in props["filter"]["description"]
    )
    assert kept["function"]["parameters"]["required"] == ["query"]
    assert to_ollama_tools([]) is None
