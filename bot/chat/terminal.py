"""`python -m bot chat`: a terminal chat on the same engine as Discord.

Keys: Ctrl-C while an answer streams stops that answer (what was said is kept) and returns to
the prompt; Ctrl-C at the prompt, Ctrl-D on an empty line, /quit or /exit end the chat with
exit code 0. When the input is not a terminal, Ctrl-C (SIGINT) ends the chat with code 130.

Commands: a line is a command when it starts with "/" and a word of letters followed by a space
or the end of the line ("/model", "/model qwen3:8b"); anything else is a message ("/usr/bin is
full", "/ 2"). A line starting with "//" is a message without its first "/" ("//help" sends
"/help"). An unknown command is answered here and never sent to the model.

A tool that asks first (bot/chat/approval.py) asks here: the next input line answers, and only
"y" (or "yes") allows the call; anything else, or end of input, denies it.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO
from urllib.parse import urlsplit, urlunsplit

from bot.chat.engine import ChatEngine, TurnRequest
from bot.config import Settings, is_ollama_model
from bot.llm.gateway import OLLAMA_DEFAULT_BASE
from bot.prompts.ui_text import UiText
from bot.tools.member_tools import REMEMBER_ICON
from bot.turn.approval import ApprovalAsk, Decision
from bot.turn.events import (
    ChunkEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    RememberedEvent,
    SessionEvent,
    SourcesEvent,
    ToolEvent,
    operator_message,
)

EXIT_COMMANDS = frozenset({"/exit", "/quit"})
COMMAND = re.compile(r"/([A-Za-z]+)(?:\s+(.*))?")
DEFAULT_MODEL_CHOICE = "default"
APPROVING = frozenset({"y", "yes", "はい"})
# Who decided a terminal's question (the local space has no Discord user).
TERMINAL_DECIDER = "terminal"
# The exit code of a script whose chat was interrupted (128 + SIGINT), as a shell reports it.
INTERRUPTED = 130


def backend_address(settings: Settings, model: str) -> str | None:
    """The address the chat model `model` is called at, without credentials; None: its provider's.

    Mirrors the gateway's choice: LLM_API_BASE, except that the Ollama default means no address
    for hosted (LiteLLM) models.
    """
    base = settings.llm_api_base.strip()
    if is_ollama_model(model):
        base = base or OLLAMA_DEFAULT_BASE
    elif not base or base.rstrip("/") == OLLAMA_DEFAULT_BASE:
        return None
    parts = urlsplit(base)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def parse_command(text: str) -> tuple[str, str] | None:
    """(command, argument) when the stripped line `text` is a command, else None."""
    match = COMMAND.fullmatch(text)
    if match is None:
        return None
    return "/" + match.group(1).lower(), (match.group(2) or "").strip()


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class _FdLines:
    """Lines from a file descriptor, read when the event loop says so: cancellable, no thread."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._buffer = ""
        self._eof = False

    @staticmethod
    def usable(stream: TextIO) -> int | None:
        """The file descriptor behind `stream`, or None (an in-memory stream)."""
        try:
            return stream.fileno()
        except (OSError, ValueError, AttributeError):
            return None

    async def readline(self) -> str:
        """The next line with its newline; the last one may lack it; "" at end of input."""
        while "\n" not in self._buffer and not self._eof:
            await self._readable()
            data = os.read(self._fd, 65536)
            self._eof = not data
            self._buffer += self._decoder.decode(data, final=self._eof)
        line, newline, self._buffer = self._buffer.partition("\n")
        return line + newline

    async def _readable(self) -> None:
        loop = asyncio.get_running_loop()
        ready = loop.create_future()
        try:
            loop.add_reader(self._fd, _settle, ready)
        except PermissionError:
            return  # a regular file or /dev/null: never waits, and cannot be polled
        try:
            await ready
        finally:
            loop.remove_reader(self._fd)


class TerminalChat:
    """Reads user turns line by line and renders the engine's events."""

    def __init__(
        self,
        engine: ChatEngine,
        *,
        ui: UiText,
        space_id: str,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
        interactive: bool | None = None,
        model: str = "",
        address: Callable[[str], str | None] | None = None,
        log_note: str = "",
        page_settings: int = 0,
    ) -> None:
        self._engine = engine
        self._ui = ui
        self._space_id = space_id
        self._in = sys.stdin if stdin is None else stdin
        self._out = sys.stdout if stdout is None else stdout
        self._err = sys.stderr if stderr is None else stderr
        self._interactive = self._in.isatty() if interactive is None else interactive
        self._session_id: str | None = None
        self._default_model = model
        self._model: str | None = None
        self._address = address
        self._log_note = log_note
        self._page_settings = page_settings
        self._quit = asyncio.Event()
        self._interrupted = False
        self._turn_stop: asyncio.Event | None = None
        self._lines: _FdLines | None = None
        self.failed_turns = 0

    def _status(self, text: str) -> None:
        # Tool activity goes to stderr when piped, so stdout carries only answers.
        stream = self._out if self._interactive else self._err
        stream.write(text + "\n")
        stream.flush()

    async def turn(self, text: str, *, stop: asyncio.Event | None = None) -> None:
        """Send one user message and render its answer; setting `stop` ends the answer early."""
        request = TurnRequest(
            text=text,
            space_id=self._space_id,
            session_id=self._session_id,
            source="terminal",
            model=self._model,
            stop=stop,
            approver=self._approve,
        )
        wrote_text = False
        async for event in self._engine.run_turn(request):
            wrote_text = self._render(event, wrote_text)
        if stop is not None and stop.is_set():
            if wrote_text:
                self._out.write("\n")
            self._status(self._ui.terminal_stopped)

    def _render(self, event: Event, wrote_text: bool) -> bool:
        """Write one event; returns whether the current line holds answer text."""
        match event:
            case SessionEvent(session_id=session_id):
                self._session_id = session_id
            case ToolEvent(status="running", label=label, icon=icon):
                if wrote_text:
                    self._out.write("\n")
                self._status(f"{icon} {label} …")
                return False
            case ToolEvent(status=status, label=label):
                self._status(f"   {label} {'✓' if status == 'done' else '✗'}")
            case SourcesEvent():
                pass
            case RememberedEvent():
                if wrote_text:
                    self._out.write("\n")
                self._status(self._receipt(event))
                return False
            case ChunkEvent(text=chunk):
                self._out.write(chunk)
                self._out.flush()
                return True
            case DoneEvent():
                self._out.write("\n")
                self._out.flush()
                return False
            case ErrorEvent():
                self.failed_turns += 1
                if wrote_text:
                    self._out.write("\n")
                # The terminal's reader is the operator: the detail, not the member's sentence.
                shown = operator_message(event)
                self._err.write(self._ui.terminal_error.format(message=shown) + "\n")
                self._err.flush()
                return False
        return wrote_text

    def _receipt(self, event: RememberedEvent) -> str:
        """The line saying a fact was remembered (as which fact) or not, and why."""
        if event.saved:
            text = self._ui.terminal_remembered.format(id=event.fact_id, fact=event.fact)
        else:
            text = self._ui.not_remembered(event.reason)
        return f"{REMEMBER_ICON} {text}"

    async def run(self) -> int:
        """Chat until end of input, /quit or Ctrl-C at the prompt; returns the exit code.

        stdout carries only the chat: whatever else writes to sys.stdout meanwhile (a library's
        print or log handler) goes to stderr.
        """
        with contextlib.redirect_stdout(self._err), self._signals():
            code = await self._chat()
        if self._interrupted and not self._interactive:
            return INTERRUPTED
        return code

    @contextlib.contextmanager
    def _signals(self) -> Iterator[None]:
        """SIGINT and SIGTERM handled by the chat while it runs (main thread only)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        loop = asyncio.get_running_loop()
        handlers = {signal.SIGINT: self.interrupt, signal.SIGTERM: self.quit}
        previous = {number: signal.getsignal(number) for number in handlers}
        for number, handler in handlers.items():
            loop.add_signal_handler(number, handler)
        try:
            yield
        finally:
            for number, before in previous.items():
                loop.remove_signal_handler(number)
                if before is not None:
                    # asyncio.run's own SIGINT handler (it cancels the main task) comes back.
                    signal.signal(number, before)

    def interrupt(self) -> None:
        """Ctrl-C: stop the answer being written (interactive), else end the chat."""
        self._interrupted = True
        stop = self._turn_stop
        if stop is not None and not stop.is_set() and self._interactive:
            stop.set()
            return
        self.quit()

    def quit(self) -> None:
        """End the chat: the answer being written stops, no further input is read."""
        self._quit.set()
        if self._turn_stop is not None:
            self._turn_stop.set()

    async def _readline(self, lines: _FdLines | None) -> str | None:
        """The next line, or None once the chat is to end (end of input, Ctrl-C)."""
        reading = asyncio.ensure_future(
            lines.readline() if lines is not None else asyncio.to_thread(self._in.readline)
        )
        quitting = asyncio.ensure_future(self._quit.wait())
        try:
            await asyncio.wait({reading, quitting}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            quitting.cancel()
            if not reading.done():
                reading.cancel()
        if self._quit.is_set() or reading.cancelled():
            return None
        line = reading.result()
        return line or None

    async def _approve(self, ask: ApprovalAsk) -> Decision:
        """Ask on the terminal whether a tool with side effects may run: only "y" allows it."""
        stream = self._out if self._interactive else self._err
        question = self._ui.terminal_approval_question.format(tool=ask.label, detail=ask.detail)
        stream.write("\n" + question)
        stream.flush()
        try:
            async with asyncio.timeout(ask.timeout):
                line = await self._readline(self._lines)
        except TimeoutError:
            stream.write("\n")
            return Decision("timeout")
        answer = (line or "").strip().lower()
        return Decision("allowed" if answer in APPROVING else "denied", TERMINAL_DECIDER)

    def _banner(self) -> str:
        lines = [
            self._ui.terminal_banner.format(
                model=self._current_model(), address=self._where(), space=self._space_id
            ),
            self._ui.terminal_commands,
        ]
        if self._page_settings:
            lines.append(self._ui.terminal_page_settings.format(count=self._page_settings))
        if self._log_note:
            lines.append(self._log_note)
        return "\n".join(lines)

    def _current_model(self) -> str:
        return self._model or self._default_model

    def _where(self) -> str:
        address = self._address(self._current_model()) if self._address else None
        return address or self._ui.terminal_provider_address

    def _command(self, command: str, argument: str) -> bool:
        """Carry out a command; False when the chat ends."""
        if command in EXIT_COMMANDS:
            return False
        if command == "/help":
            self._status(self._ui.terminal_help)
        elif command == "/new":
            self._session_id = None
            self._status(self._ui.terminal_new_session)
        elif command == "/model" and not argument:
            self._status(
                self._ui.terminal_model_show.format(
                    model=self._current_model(), address=self._where()
                )
            )
        elif command == "/model" and argument == DEFAULT_MODEL_CHOICE:
            self._model = None
            self._status(self._ui.terminal_model_default.format(model=self._current_model()))
        elif command == "/model":
            self._model = argument
            self._status(self._ui.terminal_model_set.format(model=argument, address=self._where()))
        else:
            self._status(self._ui.terminal_unknown_command.format(command=command))
        return True

    async def _chat(self) -> int:
        fd = _FdLines.usable(self._in)
        lines = self._lines = _FdLines(fd) if fd is not None else None
        if self._interactive:
            self._out.write(self._banner() + "\n")
        while not self._quit.is_set():
            if self._interactive:
                self._out.write("\n> ")
                self._out.flush()
            line = await self._readline(lines)
            if line is None:
                if self._interactive:
                    self._out.write("\n")
                break
            text = line.strip()
            if not text:
                continue
            parsed = parse_command(text)
            if parsed is not None:
                if not self._command(*parsed):
                    break
                continue
            if text.startswith("//"):
                text = text[1:]
            self._turn_stop = asyncio.Event()
            try:
                await self.turn(text, stop=self._turn_stop)
            finally:
                self._turn_stop = None
        return 1 if self.failed_turns and not self._interactive else 0


def chat_log_path(settings: Settings) -> Path:
    """Where the interactive chat logs: data/logs/chat.log beside the database."""
    return settings.db_path.parent / "logs" / "chat.log"
