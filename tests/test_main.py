"""The composition root as users run it: `python -m bot` and `python -m bot chat`."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
from pathlib import Path

from tests.fakes.llm_server import FakeLLMServer, Raw, Text, ToolCalls

REPO = Path(__file__).resolve().parents[1]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DISCORD_", "LLM_", "ADMIN_", "DB_"))
    }
    env.update(PYTHONPATH=str(REPO), DB_PATH=str(tmp_path / "chat.db"), LANGUAGE="en")
    env.update(extra)
    return env


async def _run(
    args: list[str], env: dict[str, str], cwd: Path, stdin: bytes = b""
) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        *args,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_bot_without_token_explains_how_to_start(tmp_path: Path) -> None:
    code, out, err = await _run([], _env(tmp_path), tmp_path)
    assert code != 0
    assert "DISCORD_TOKEN" in err and "python -m bot chat" in err
    assert out == ""


async def test_piped_chat_answers_each_line_with_tools_on_stderr(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    llm.script(
        Text("First answer."),
        ToolCalls([("scrape_url", {"url": "http://127.0.0.1:9/secret"})]),
        Text("Second answer."),
    )
    env = _env(tmp_path, LLM_API_BASE=llm.url, LLM_MODEL="ollama/test-model")
    code, out, err = await _run(["chat"], env, tmp_path, b"hello\n\nwhat next?\n")
    assert code == 0, err
    assert out.splitlines() == ["First answer.", "Second answer."]
    assert "scrape_url" in err
    assert len(llm.chat_requests) == 3
    second_turn = [m["content"] for m in llm.chat_requests[1].messages if m["role"] == "user"]
    assert second_turn == ["hello", "what next?"], "one session for the whole chat"


async def test_piped_chat_reports_llm_failure_with_exit_code(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    env = _env(tmp_path, LLM_API_BASE=llm.url, LLM_MODEL="ollama/test-model")
    code, out, err = await _run(["chat"], env, tmp_path, b"hello\n")
    assert code == 1
    assert "error:" in err and out == ""


async def test_the_terminal_chat_speaks_the_configured_language(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    env = _env(tmp_path, LLM_API_BASE=llm.url, LLM_MODEL="ollama/test-model", LANGUAGE="ja")
    code, out, err = await _run(["chat"], env, tmp_path, b"hello\n")
    assert code == 1 and out == ""
    assert err.splitlines()[-1].startswith("エラー: ") and "error:" not in err


async def test_the_terminal_chat_talks_in_its_local_space(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    llm.default_reply = Text("ok")
    env = _env(tmp_path, LLM_API_BASE=llm.url, LLM_MODEL="ollama/test-model")
    assert (await _run(["chat"], env, tmp_path, b"hi\n"))[0] == 0
    assert (await _run(["chat", "--space", "home"], env, tmp_path, b"hi\n"))[0] == 0
    moved = {**env, "LOCAL_SPACE": "den"}
    assert (await _run(["chat"], moved, tmp_path, b"hi\n"))[0] == 0
    conn = sqlite3.connect(tmp_path / "chat.db")
    spaces = sorted(row[0] for row in conn.execute("SELECT space_id FROM sessions"))
    conn.close()
    assert spaces == ["local:den", "local:home", "local:local"]
    code, _, err = await _run(["chat", "--space", "no/good"], env, tmp_path, b"hi\n")
    assert code == 2 and "local space name" in err
    code, _, err = await _run(["--space", "home"], env, tmp_path)
    assert code == 2 and "--space" in err


def _litellm_env(tmp_path: Path, llm: FakeLLMServer, **extra: str) -> dict[str, str]:
    return _env(
        tmp_path,
        LLM_API_BASE=llm.openai_base,
        LLM_MODEL="openai/test-model",
        LLM_API_KEY="sk-test-key",
        **extra,
    )


async def test_piped_chat_with_litellm_prints_only_the_answers_on_stdout(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    llm.script(Text("First answer."), Text("Second answer."))
    # DEBUG=true makes LiteLLM log every call; LITELLM_LOG opens its own handler too.
    env = _litellm_env(tmp_path, llm, DEBUG="true", LITELLM_LOG="INFO")
    code, out, err = await _run(["chat"], env, tmp_path, b"hello\nand again\n")
    assert code == 0, err
    assert out == "First answer.\nSecond answer.\n"
    assert "LiteLLM" in err, "LiteLLM's log lines are kept, on stderr"
    assert "sk-test-key" not in err, "and its secrets masked"


async def test_piped_chat_fails_when_the_openai_server_answers_an_html_page(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    llm.script(Raw(), Raw())
    code, out, err = await _run(["chat"], _litellm_env(tmp_path, llm), tmp_path, b"hello\n")
    assert code == 1
    assert out == ""
    assert err.splitlines()[-1] == (
        "error: The language model server answered with something that is not the "
        "OpenAI-compatible protocol; check LLM_API_BASE."
    )
    assert "empty answer" not in err
