"""The composition root as users run it: `python -m bot` and `python -m bot chat`."""

from __future__ import annotations

import os
import socket
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from bot.__main__ import _parse_args
from bot.store.engine.database import Database
from tests.bot_process import bot_env, run_python, run_python_m_bot
from tests.fakes.llm_server import FakeLLMServer, Raw, Text, ToolCalls
from tests.ops.conftest import closed_port

REPO = Path(__file__).resolve().parents[1]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return bot_env(tmp_path / "chat.db", **extra)


_run = run_python_m_bot


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


async def test_the_terminal_chat_tells_the_operator_the_address_and_the_fix(
    tmp_path: Path,
) -> None:
    port = closed_port()
    env = _env(tmp_path, LLM_API_BASE=f"http://127.0.0.1:{port}", LLM_MODEL="ollama/test-model")
    code, out, err = await _run(["chat"], env, tmp_path, b"hello\n")
    assert code == 1 and out == ""
    shown = err.splitlines()[-1]
    # The operator's sentence (the address, the setting), not the member's.
    assert shown.startswith(f"error: The model server at http://127.0.0.1:{port} is not reachable")
    assert "LLM_API_BASE" in shown
    assert "not reachable right now" not in shown


async def test_the_terminal_chat_speaks_the_configured_language(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    env = _env(tmp_path, LLM_API_BASE=llm.url, LLM_MODEL="ollama/test-model", LANGUAGE="ja")
    code, out, err = await _run(["chat"], env, tmp_path, b"hello\n")
    assert code == 1 and out == ""
    assert err.splitlines()[-1].startswith("エラー: ") and "error:" not in err


async def test_the_terminal_chat_talks_in_its_local_space(
    tmp_path: Path, llm: FakeLLMServer, suite_database_url: str
) -> None:
    llm.default_reply = Text("ok")
    env = _env(
        tmp_path,
        LLM_API_BASE=llm.url,
        LLM_MODEL="ollama/test-model",
        DATABASE_URL=suite_database_url,
    )
    assert (await _run(["chat"], env, tmp_path, b"hi\n"))[0] == 0
    assert (await _run(["chat", "--space", "home"], env, tmp_path, b"hi\n"))[0] == 0
    moved = {**env, "LOCAL_SPACE": "den"}
    assert (await _run(["chat"], moved, tmp_path, b"hi\n"))[0] == 0
    db = await Database.connect(suite_database_url)
    spaces = sorted(row[0] for row in await db.fetchall("SELECT space_id FROM sessions"))
    await db.close()
    assert spaces == ["local:den", "local:home", "local:local"]
    code, _, err = await _run(["chat", "--space", "no/good"], env, tmp_path, b"hi\n")
    assert code == 2 and "local space name" in err
    code, _, err = await _run(["--space", "home"], env, tmp_path)
    assert code == 2 and "--space" in err


def _one_sentence(err: str) -> str:
    """The whole of stderr: one line, no traceback."""
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


async def test_env_example_copied_as_is_starts_with_the_defaults_and_no_mcp_error(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    (tmp_path / ".env").write_text((REPO / ".env.example").read_text("utf-8"), "utf-8")
    env = _env(tmp_path, LLM_API_BASE=llm.url, LLM_MODEL="ollama/test-model")
    llm.script(Text("Hi."))
    code, out, err = await _run(["chat"], env, tmp_path, b"hello\n")
    assert code == 0, err
    assert out.strip() == "Hi."
    assert "MCP" not in err and "ERROR" not in err, err


async def test_admin_port_in_use_is_one_sentence_naming_the_port(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = _env(
            tmp_path, DISCORD_TOKEN="token", ADMIN_PORT=str(port), LLM_API_BASE="http://127.0.0.1:9"
        )
        code, _, err = await _run([], env, tmp_path)
    assert code == 1
    # Start-up log lines come first; the last line is the sentence.
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert f"127.0.0.1:{port}" in last and "in use" in last and "ADMIN_PORT" in last


def _read_only_dir(tmp_path: Path) -> Path:
    """A folder nobody may create files in (root ignores permission bits, but not /proc's)."""
    if os.geteuid() == 0:
        return Path("/proc")
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    return folder


@pytest.mark.sqlite_only(reason="DB_PATH files that cannot work (folder, read-only, not SQLite)")
@pytest.mark.parametrize("command", [[], ["chat"]])
async def test_database_paths_that_cannot_work_are_one_sentence_each(
    tmp_path: Path, command: list[str]
) -> None:
    run = {"DISCORD_TOKEN": "token", "ADMIN_ENABLED": "false"} if not command else {}
    folder = tmp_path / "a-folder"
    folder.mkdir()
    not_a_db = tmp_path / "notes.txt"
    not_a_db.write_text("not a database\n" * 100)
    read_only = _read_only_dir(tmp_path) / "playchat.db"
    cases = {
        folder: ("is a folder", "DB_PATH"),
        read_only: ("cannot create or write", "writable"),
        not_a_db: ("not a SQLite database", "DB_PATH"),
        tmp_path / "notes.txt" / "p.db": ("cannot create or write", "DB_PATH"),
    }
    for path, (what, fix) in cases.items():
        env = _env(tmp_path, DB_PATH=str(path), **run)
        code, out, err = await _run(command, env, tmp_path)
        assert code == 1, err
        sentence = _one_sentence(err)
        assert str(path) in sentence and what in sentence and fix in sentence, sentence
        assert out == ""
    assert not_a_db.read_text() == "not a database\n" * 100, "left untouched"


@pytest.mark.sqlite_only(reason="a SQLite file locked by another process")
async def test_a_locked_database_is_named_with_the_likely_cause(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("PRAGMA locking_mode=EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
        holder.execute("CREATE TABLE t (x)")
        code, _, err = await _run(["chat"], _env(tmp_path, DB_PATH=str(path)), tmp_path)
    finally:
        holder.close()
    assert code == 1
    sentence = _one_sentence(err)
    assert str(path) in sentence and "locked" in sentence and "another PlayChat" in sentence


@pytest.mark.parametrize("command", [[], ["chat"], ["backup", "copy.db"]])
async def test_a_bad_setting_names_the_variable_and_what_it_accepts(
    tmp_path: Path, command: list[str]
) -> None:
    env = _env(tmp_path, LLM_CONTEXT_TOKENS="abc", LANGUAGE="fr")
    code, out, err = await _run(command, env, tmp_path)
    assert code == 2 and out == ""
    assert "Traceback" not in err and "pydantic" not in err
    assert err.strip().splitlines() == [
        "LLM_CONTEXT_TOKENS=abc is not valid: expected a whole number, at least 512 and at most "
        "1048576; fix it in .env or the environment.",
        "LANGUAGE=fr is not valid: expected one of en, ja; fix it in .env or the environment.",
    ]


@pytest.mark.sqlite_only(reason="`backup` is SQLite's online backup; PostgreSQL's is pg_dump")
async def test_backup_command_copies_the_database_and_refuses_to_overwrite(
    tmp_path: Path,
) -> None:
    db_path = tmp_path / "chat.db"
    with closing(sqlite3.connect(db_path)) as conn:
        conn.execute("CREATE TABLE kept (x)")
        conn.execute("INSERT INTO kept VALUES ('row')")
        conn.commit()
    code, out, err = await _run(["backup", "copy.db"], _env(tmp_path), tmp_path)
    assert code == 0, err
    assert out.strip() == "copy.db"
    with closing(sqlite3.connect(tmp_path / "copy.db")) as conn:
        assert conn.execute("SELECT x FROM kept").fetchall() == [("row",)]

    code, out, err = await _run(["backup", "copy.db"], _env(tmp_path), tmp_path)
    assert code == 1 and out == ""
    assert "exists already" in _one_sentence(err)

    code, out, err = await _run(["backup", "nightly/"], _env(tmp_path), tmp_path)
    assert code == 0, err
    written = tmp_path / out.strip()
    assert written.parent == tmp_path / "nightly", "a path ending in / is a folder, created"
    assert written.name.startswith("playchat-") and written.suffix == ".db"

    code, _, err = await _run(["backup"], _env(tmp_path), tmp_path)
    assert code == 2 and "backup needs a PATH" in err

    missing = _env(tmp_path, DB_PATH=str(tmp_path / "none.db"))
    code, _, err = await _run(["backup", "other.db"], missing, tmp_path)
    assert code == 1 and "none.db" in _one_sentence(err)


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
    # The operator's sentence: the address, what came back and the setting.
    shown = err.splitlines()[-1]
    assert shown.startswith("error: The server at http://127.0.0.1:") and "/v1 answered" in shown
    assert "(an HTML page (text/html" in shown
    assert shown.endswith("LLM_API_BASE probably points at the wrong thing.")
    assert "empty answer" not in err


async def test_the_terminal_chat_imports_neither_discord_nor_the_admin_api(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    # The whole chat path, run to its end (no input), in a fresh interpreter.
    code = (
        "import sys\n"
        "from bot.__main__ import main\n"
        "assert main(['chat']) == 0\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    env = _env(tmp_path, LLM_API_BASE=llm.url, LLM_MODEL="ollama/test-model")
    returncode, out, err = await run_python(["-c", code], env, tmp_path)
    assert returncode == 0, err
    modules = set(out.split())
    assert "bot.chat.terminal" in modules, "the chat ran"
    for unwanted in ("discord", "admin_api", "aiohttp.web", "bot.bot"):
        assert unwanted not in modules, unwanted


@pytest.mark.parametrize(
    "value",
    [
        "",
        "home\n",
        "a b",
        "ｈｏｍｅ",
        "no/good",
        "local:",
        "local:a b",
        "a" * 65,
        "guild:1",
        "dm:01",
        "server:home",
    ],
)
def test_a_bad_terminal_space_is_a_clear_usage_error(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        _parse_args(["chat", "--space", value])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--space:" in err and ("local space" in err or "local name" in err), err


def test_the_terminal_space_takes_a_name_or_a_local_id() -> None:
    assert _parse_args(["chat", "--space", "home"]).space == "local:home"
    assert _parse_args(["chat", "--space", "local:den-1"]).space == "local:den-1"
    assert _parse_args(["chat"]).space is None


# A store that refuses the user's message as SQLite does when the disk is full.
REFUSE_MESSAGES = (
    "CREATE TRIGGER refuse_messages BEFORE INSERT ON messages "
    "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
)


@pytest.mark.sqlite_only(reason="a SQLite trigger makes the store refuse the message")
async def test_the_terminal_chat_never_says_saved_when_the_message_was_not(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    llm.default_reply = Text("ok")
    env = _env(tmp_path, LLM_API_BASE=llm.url, LLM_MODEL="ollama/test-model")
    assert (await _run(["chat"], env, tmp_path, b"hi\n"))[0] == 0
    asked = len(llm.chat_requests)
    with closing(sqlite3.connect(tmp_path / "chat.db")) as conn:
        conn.execute(REFUSE_MESSAGES)
        conn.commit()
    code, out, err = await _run(["chat"], env, tmp_path, b"are you there?\n")
    assert code != 0 and "ok" not in out
    assert "could not be saved (the disk is full)" in err and "is saved" not in err, err
    assert len(llm.chat_requests) == asked, "the model is never asked"
    with closing(sqlite3.connect(tmp_path / "chat.db")) as conn:
        texts = [row[0] for row in conn.execute("SELECT content FROM messages ORDER BY id")]
        sessions = conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
    assert texts == ["hi", "ok"] and sessions == 1, "no empty session is left behind"
