"""`python -m bot chat`: a terminal chat on the same engine as Discord."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import TextIO

from bot.chat.engine import ChatEngine, TurnRequest
from bot.chat.events import ChunkEvent, DoneEvent, ErrorEvent, SessionEvent, SourcesEvent, ToolEvent
from bot.prompts.ui_text import UiText

EXIT_COMMANDS = frozenset({"/exit", "/quit"})


class TerminalChat:
    """Reads user turns line by line and renders the engine's events."""

    def __init__(
        self,
        engine: ChatEngine,
        *,
        ui: UiText,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
        interactive: bool | None = None,
    ) -> None:
        self._engine = engine
        self._ui = ui
        self._in = sys.stdin if stdin is None else stdin
        self._out = sys.stdout if stdout is None else stdout
        self._err = sys.stderr if stderr is None else stderr
        self._interactive = self._in.isatty() if interactive is None else interactive
        self._session_id: str | None = None
        self.failed_turns = 0

    def _status(self, text: str) -> None:
        # Tool activity goes to stderr when piped, so stdout carries only answers.
        stream = self._out if self._interactive else self._err
        stream.write(text + "\n")
        stream.flush()

    async def turn(self, text: str) -> None:
        """Send one user message and render its answer."""
        request = TurnRequest(text=text, session_id=self._session_id, source="terminal")
        wrote_text = False
        async for event in self._engine.run_turn(request):
            match event:
                case SessionEvent(session_id=session_id):
                    self._session_id = session_id
                case ToolEvent(status="running", label=label, icon=icon):
                    if wrote_text:
                        self._out.write("\n")
                        wrote_text = False
                    self._status(f"{icon} {label} …")
                case ToolEvent(status=status, label=label):
                    self._status(f"   {label} {'✓' if status == 'done' else '✗'}")
                case SourcesEvent():
                    pass
                case ChunkEvent(text=chunk):
                    self._out.write(chunk)
                    self._out.flush()
                    wrote_text = True
                case DoneEvent():
                    self._out.write("\n")
                    self._out.flush()
                case ErrorEvent(message=message):
                    self.failed_turns += 1
                    if wrote_text:
                        self._out.write("\n")
                    self._err.write(self._ui.terminal_error.format(message=message) + "\n")
                    self._err.flush()

    async def run(self) -> int:
        """Chat until end of input or /exit; returns the process exit code.

        stdout carries only the chat: whatever else writes to sys.stdout meanwhile (a library's
        print or log handler) goes to stderr.
        """
        with contextlib.redirect_stdout(self._err):
            return await self._chat()

    async def _chat(self) -> int:
        if self._interactive:
            self._out.write(self._ui.terminal_banner + "\n")
        while True:
            if self._interactive:
                self._out.write("\n> ")
                self._out.flush()
            line = await asyncio.to_thread(self._in.readline)
            if not line:
                break
            text = line.strip()
            if not text:
                continue
            if text in EXIT_COMMANDS:
                break
            if text == "/new":
                self._session_id = None
                continue
            await self.turn(text)
        return 1 if self.failed_turns and not self._interactive else 0
