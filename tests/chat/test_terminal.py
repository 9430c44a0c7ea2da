"""`python -m bot chat` on a real pseudo-terminal: keys, commands, banner and where logs go."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import re
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.chat.engine import TurnRequest
from bot.chat.terminal import TerminalChat, backend_address, parse_command
from bot.config import Settings
from bot.memory.member_memory import MAX_FACT_CHARS, MAX_FACTS_PER_MEMBER
from bot.prompts import prompts_for
from bot.prompts.ui_text import ui_text
from bot.services import ServiceOptions, Services, open_services
from bot.turn.events import Event, SessionEvent
from tests.bot_process import bot_env
from tests.conftest import LOCAL
from tests.fakes.llm_server import Endless, FakeLLMServer, Hang, Text, ToolCalls

# The child makes the pty its controlling terminal, so ^C and ^D work as at a real keyboard.
ON_A_TERMINAL = (
    "import fcntl, os, sys, termios\n"
    "fcntl.ioctl(0, termios.TIOCSCTTY, 0)\n"
    "os.execv(sys.executable, [sys.executable, '-m', 'bot', *sys.argv[1:]])\n"
)
LOG_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (DEBUG|INFO|WARNING|ERROR|CRITICAL) ")
WAIT = 60.0  # an upper bound only: a loaded 2-core machine imports LiteLLM slowly


class PtyChat:
    """`python -m bot chat` with its stdin, stdout and stderr on one pseudo-terminal."""

    def __init__(self, process: asyncio.subprocess.Process, master: int) -> None:
        self.process = process
        self._master = master
        self._raw = bytearray()
        self._seen = 0
        self._changed = asyncio.Event()
        asyncio.get_running_loop().add_reader(master, self._on_readable)

    @classmethod
    async def start(cls, env: dict[str, str], cwd: Path, *args: str) -> PtyChat:
        """Start the chat on a new pty."""
        master, slave = os.openpty()
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            ON_A_TERMINAL,
            "chat",
            *args,
            cwd=cwd,
            env=env,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
        )
        os.close(slave)
        return cls(process, master)

    def _on_readable(self) -> None:
        try:
            data = os.read(self._master, 65536)
        except OSError:  # EIO: the child side is closed
            data = b""
        if not data:
            asyncio.get_running_loop().remove_reader(self._master)
        self._raw.extend(data)
        self._changed.set()

    @staticmethod
    def env(tmp_path: Path, **extra: str) -> dict[str, str]:
        """A test-only environment for the chat on `tmp_path/chat.db`, plus `extra`."""
        return bot_env(tmp_path / "chat.db", TERM="dumb", **extra)

    @property
    def output(self) -> str:
        """Everything the terminal showed, with the tty's \\r\\n as \\n."""
        return self._raw.decode("utf-8", "replace").replace("\r\n", "\n")

    async def expect(self, text: str) -> str:
        """Wait until `text` shows after what was expected before; the output up to its end."""
        async with asyncio.timeout(WAIT):
            while (found := self.output.find(text, self._seen)) < 0:
                self._changed.clear()
                await self._changed.wait()
        start, self._seen = self._seen, found + len(text)
        return self.output[start : self._seen]

    async def prompt(self) -> str:
        """Wait for the next prompt; the output since the last expectation."""
        return await self.expect("\n> ")

    def type(self, keys: str) -> None:
        """Type `keys` at the terminal (a line needs its "\\n"; "\\x03" is ^C, "\\x04" ^D)."""
        os.write(self._master, keys.encode())

    async def exit_code(self) -> int:
        """Wait (bounded) for the chat to end, then take what it wrote last."""
        code = await asyncio.wait_for(self.process.wait(), WAIT)
        self._take_the_rest()
        return code

    def _take_the_rest(self) -> None:
        asyncio.get_running_loop().remove_reader(self._master)
        os.set_blocking(self._master, False)
        with contextlib.suppress(OSError):  # EIO or EAGAIN: nothing more
            while data := os.read(self._master, 65536):
                self._raw.extend(data)

    def close(self) -> None:
        """Kill the chat if it still runs; close the pty."""
        if self.process.returncode is None:
            self.process.kill()
        asyncio.get_running_loop().remove_reader(self._master)
        os.close(self._master)


def _env(tmp_path: Path, llm: FakeLLMServer, **extra: str) -> dict[str, str]:
    return bot_env(
        tmp_path / "chat.db",
        LLM_API_BASE=llm.url,
        LLM_MODEL="ollama/test-model",
        # A start-up ERROR, as a copied .env with a typo gives: it must not reach the screen.
        MCP_CONFIG=str(tmp_path / "missing-mcp.json"),
        TERM="dumb",
        **extra,
    )


def _user_texts(llm: FakeLLMServer, index: int) -> list[str]:
    return [m["content"] for m in llm.chat_requests[index].messages if m["role"] == "user"]


async def test_commands_are_answered_here_and_never_reach_the_model(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    llm.script(Text("First answer."), Text("Second answer."), Text("Third answer."))
    chat = await PtyChat.start(_env(tmp_path, llm), tmp_path)
    try:
        banner = await chat.prompt()
        assert "model ollama/test-model at " + llm.url in banner
        assert "space local:local" in banner
        assert "/help" in banner and "/new" in banner and "/model" in banner
        assert "/quit" in banner
        assert f"Log: {tmp_path / 'logs' / 'chat.log'}" in banner

        chat.type("/help\n")
        shown = await chat.prompt()
        assert "/new             start a new conversation" in shown
        assert "/model default" in shown and "/quit, /exit" in shown
        chat.type("/modle\n")
        assert "Unknown command /modle; /help lists them." in await chat.prompt()
        chat.type("/model\n")
        assert f"Model: ollama/test-model at {llm.url}" in await chat.prompt()
        assert llm.chat_requests == [], "no command was sent to the model"

        chat.type("hello\n")
        assert "First answer." in await chat.prompt()
        chat.type("/new\n")
        assert "(new conversation)" in await chat.prompt()
        chat.type("/model ollama/other-model\n")
        assert "This chat now uses ollama/other-model" in await chat.prompt()
        chat.type("//etc is a folder\n")
        assert "Second answer." in await chat.prompt()
        assert _user_texts(llm, 1) == ["/etc is a folder"], "a new session: nothing before"
        assert llm.chat_requests[1].model == "other-model"

        chat.type("/model default\n")
        assert "the default model again: ollama/test-model" in await chat.prompt()
        chat.type("/usr/bin is full\n")
        assert "Third answer." in await chat.prompt()
        assert _user_texts(llm, 2) == ["/etc is a folder", "/usr/bin is full"]
        assert llm.chat_requests[2].model == "test-model"

        chat.type("/quit\n")
        assert await chat.exit_code() == 0
    finally:
        chat.close()
    assert len(llm.chat_requests) == 3
    assert "Traceback" not in chat.output
    assert not LOG_LINE.search(chat.output), chat.output
    log_text = (tmp_path / "logs" / "chat.log").read_text("utf-8")
    assert "ERROR bot.tools.mcp" in log_text, "the start-up error is in the log file"


async def test_ctrl_c_at_the_prompt_ends_the_chat_at_once(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    chat = await PtyChat.start(_env(tmp_path, llm), tmp_path)
    try:
        await chat.prompt()
        chat.type("half a line")
        chat.type("\x03")
        assert await chat.exit_code() == 0
    finally:
        chat.close()
    assert "Traceback" not in chat.output and "KeyboardInterrupt" not in chat.output
    assert llm.chat_requests == []


async def test_sigint_at_the_prompt_ends_the_chat(tmp_path: Path, llm: FakeLLMServer) -> None:
    chat = await PtyChat.start(_env(tmp_path, llm), tmp_path)
    try:
        await chat.prompt()
        chat.process.send_signal(signal.SIGINT)
        assert await chat.exit_code() == 0
    finally:
        chat.close()
    assert "Traceback" not in chat.output


async def test_ctrl_d_ends_the_chat(tmp_path: Path, llm: FakeLLMServer) -> None:
    llm.script(Text("Hi."))
    chat = await PtyChat.start(_env(tmp_path, llm), tmp_path)
    try:
        await chat.prompt()
        chat.type("hello\n")
        assert "Hi." in await chat.prompt()
        chat.type("\x04")
        assert await chat.exit_code() == 0
    finally:
        chat.close()
    assert "Traceback" not in chat.output


async def test_ctrl_c_during_an_answer_stops_it_and_keeps_what_was_said(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    llm.script(Endless("Once upon a time ", interval=0.05), Text("Where was I?"))
    chat = await PtyChat.start(_env(tmp_path, llm), tmp_path)
    try:
        await chat.prompt()
        chat.type("tell me a story\n")
        await chat.expect("tell me a story\n")
        await chat.expect("Once upon")
        chat.type("\x03")
        stopped = await chat.prompt()
        assert stopped.endswith("\n(stopped)\n\n> ")
        await llm.wait_for_client_close(1, timeout=WAIT)
        chat.type("go on\n")
        assert "Where was I?" in await chat.prompt()
        chat.type("\x03")
        assert await chat.exit_code() == 0
    finally:
        chat.close()
    assert "Traceback" not in chat.output
    assert not LOG_LINE.search(chat.output), chat.output
    # What the terminal showed of the answer (the tty echoes ^C where it was typed).
    said = ("Once upon" + stopped.removesuffix("\n(stopped)\n\n> ")).replace("^C", "").strip()
    history = [(m["role"], m["content"]) for m in llm.chat_requests[1].messages[-3:]]
    assert history == [("user", "tell me a story"), ("assistant", said), ("user", "go on")]
    assert said.startswith("Once upon"), "what was shown is what the model is told it said"
    assert "stopped on request" in (tmp_path / "logs" / "chat.log").read_text("utf-8")


def test_only_a_slash_and_a_word_is_a_command() -> None:
    assert parse_command("/help") == ("/help", "")
    assert parse_command("/MODEL  ollama/qwen3:8b ") == ("/model", "ollama/qwen3:8b")
    assert parse_command("/usr/bin is full") is None
    assert parse_command("//help") is None
    assert parse_command("/ 2") is None
    assert parse_command("1/2") is None


@pytest.mark.parametrize("interrupt", ["sigint", "eof"])
async def test_piped_chat_still_ends_on_eof_and_sigint(
    tmp_path: Path, llm: FakeLLMServer, interrupt: str
) -> None:
    llm.script(Hang(after_chunks=1, text="partial"))
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "chat",
        cwd=tmp_path,
        env=_env(tmp_path, llm),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None
    if interrupt == "eof":
        process.stdin.close()
        assert await asyncio.wait_for(process.wait(), WAIT) == 0
        return
    process.stdin.write(b"hello\n")
    await process.stdin.drain()
    assert await asyncio.wait_for(process.stdout.readexactly(len("partial")), WAIT) == b"partial"
    process.send_signal(signal.SIGINT)
    _, err = await asyncio.wait_for(process.communicate(), WAIT)
    assert process.returncode == 130, "a script learns that its chat was interrupted"
    assert b"Traceback" not in err


def test_the_banner_address_never_shows_credentials() -> None:
    def at(base: str, model: str) -> str | None:
        return backend_address(Settings(_env_file=None, llm_api_base=base), model)  # type: ignore[call-arg]

    assert at("http://localhost:11434", "ollama/qwen3:8b") == "http://localhost:11434"
    assert at("https://me:secret@llm.example/v1?key=sk-1", "openai/gpt-4o") == (
        "https://llm.example/v1"
    )
    assert at("http://localhost:11434", "openai/gpt-4o") is None, "the provider's own address"
    assert at("", "ollama/qwen3:8b") == "http://localhost:11434"


async def test_an_answer_stopped_before_its_first_word_keeps_only_the_question(
    services: Services, llm: FakeLLMServer
) -> None:
    llm.script(Hang())
    stop = asyncio.Event()
    events: list[Event] = []

    async def read() -> None:
        request = TurnRequest("hello", space_id=LOCAL, stop=stop)
        async for event in services.engine.run_turn(request):
            events.append(event)

    reading = asyncio.create_task(read())
    await llm.wait_for_requests(1, timeout=WAIT)
    stop.set()
    await asyncio.wait_for(reading, WAIT)
    assert [type(event) for event in events] == [SessionEvent], "no answer, no error"
    session = events[0]
    assert isinstance(session, SessionEvent)
    stored = await services.repos.messages.recent_live(LOCAL, session.session_id, 10)
    assert [(m.role, m.content) for m in stored] == [("user", "hello")]


async def test_requests_to_remember_show_their_receipts_and_the_model_is_told(
    services: Services, llm: FakeLLMServer
) -> None:
    """Saved, too long, and full: each a line on stderr; the model reads what happened."""
    llm.script(Text("Noted."), Text("Too long."), Text("Full."))
    out, err = io.StringIO(), io.StringIO()
    chat = TerminalChat(
        services.engine, ui=ui_text("en"), space_id=LOCAL, stdout=out, stderr=err, interactive=False
    )
    await chat.turn("remember that I like green tea")
    await chat.turn("remember that " + "x" * (MAX_FACT_CHARS + 1))
    for n in range(MAX_FACTS_PER_MEMBER - 1):
        await services.members.remember(LOCAL, "local", f"fact {n}", "tool")
    await chat.turn("remember that I like ramen")
    [tea, *_] = await services.members.list(LOCAL, "local")
    assert out.getvalue() == "Noted.\nToo long.\nFull.\n"
    assert err.getvalue().splitlines() == [
        f"🧠 Remembered as fact #{tea.id}: I like green tea",
        "🧠 Not remembered: that is empty or too long for one fact · say it in one short sentence",
        "🧠 Not remembered: you already have the most facts I keep here · forget some with "
        "`/memory me forget`",
    ]
    prompts = prompts_for("en")
    systems = [str(r.messages[0]["content"]) for r in llm.chat_requests]
    assert prompts.format("member_fact_saved", id=tea.id, fact="I like green tea") in systems[0]
    for system, reason in zip(systems[1:], ("invalid", "full"), strict=True):
        assert "was NOT saved: " + prompts[f"member_fact_not_saved_{reason}"] in system


async def test_a_tool_that_asks_first_asks_on_the_terminal(
    make_settings: Callable[..., Settings], service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    """The next line answers: "y" runs the note write, anything else denies it."""
    write = {"title": "Plan", "content": "tea", "mode": "create"}
    llm.script(
        ToolCalls([("write_note", write)]),
        Text("Written."),
        ToolCalls([("write_note", {**write, "title": "Other"})]),
        Text("Not written."),
    )
    settings = make_settings(confirm_note_writes=True)
    async with open_services(settings, service_options) as services:
        out, err = io.StringIO(), io.StringIO()
        chat = TerminalChat(
            services.engine,
            ui=ui_text("en"),
            space_id=LOCAL,
            stdin=io.StringIO("note the plan\ny\nnote another\nn\n"),
            stdout=out,
            stderr=err,
            interactive=False,
        )
        assert await chat.run() == 0
        assert out.getvalue() == "Written.\nNot written.\n"
        assert err.getvalue().count("Allow write_note (create): ") == 2
        assert [p.title for p in await services.notes.list_pages(LOCAL)] == ["Plan"]
        results = [
            str(m["content"]) for r in llm.chat_requests for m in r.messages if m["role"] == "tool"
        ]
        assert "Not run" not in results[0] and "denied the call of write_note" in results[-1]
        (session,) = await services.repos.sessions.list(LOCAL)
        calls = await services.repos.tool_calls.for_session(LOCAL, session.id)
        assert [(c.approval, c.approved_by) for c in calls] == [
            ("allowed", "terminal"),
            ("denied", "terminal"),
        ]
