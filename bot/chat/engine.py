"""One conversation turn: store → context → stream → tool loop → store → events."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from bot.chat.context import ContextBuilder, ContextRequest
from bot.chat.events import (
    ChunkEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    SessionEvent,
    SourcesEvent,
    ToolEvent,
)
from bot.chat.hooks import Emit, ToolHook, ToolOutcome, TurnHook, TurnResult
from bot.chat.tool_budget import ToolBudget, trim_tool_result
from bot.config import Settings
from bot.errors import UserFacingError
from bot.llm.gateway import LLMGateway
from bot.llm.litellm_backend import arguments_text
from bot.llm.types import Message, ToolCall
from bot.prompts import prompts_for
from bot.store.messages import MessageRepository, StoredMessage
from bot.store.sessions import Session, SessionRepository
from bot.store.space_records import SpaceRecord, SpaceRepository
from bot.tools.core import ToolRegistry
from bot.tools.result import Source, ToolResult
from bot.utils.locks import KeyedLocks
from bot.utils.tasks import BackgroundTasks

log = logging.getLogger(__name__)

RESULT_PREVIEW_CHARS = 300
DETAIL_CHARS = 200


class _End:
    """Marks the end of a turn's event queue."""


@dataclass(frozen=True)
class TurnRequest:
    """A user's message to answer, in a space.

    `space_id` names the space the conversation belongs to (the front end knows it: a guild,
    a DM user, the local space of the terminal and the admin chat); a new session is created
    there, and an existing session is only found in its own space.
    """

    text: str
    session_id: str | None = None
    source: str = "terminal"
    title: str | None = None
    author_id: str | None = None
    author_name: str | None = None
    discord_message_id: int | None = None
    discord_channel_id: int | None = None
    discord_guild_id: int | None = None
    images: tuple[str, ...] = ()
    model: str | None = None
    space_id: str = field(kw_only=True)


@dataclass
class _TurnState:
    session: Session
    user_message: StoredMessage
    budget: ToolBudget = field(default_factory=ToolBudget)
    answer: list[str] = field(default_factory=list)
    sources: list[dict[str, str]] = field(default_factory=list)
    tool_names: list[str] = field(default_factory=list)


def _arguments(call: ToolCall) -> dict[str, Any]:
    if isinstance(call.arguments, dict):
        return call.arguments
    try:
        parsed = json.loads(call.arguments or "{}")
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


class ChatEngine:
    """Runs turns; one at a time per session, later messages wait in arrival order."""

    def __init__(
        self,
        *,
        settings: Callable[[], Settings],
        gateway: LLMGateway,
        registry: ToolRegistry,
        sessions: SessionRepository,
        messages: MessageRepository,
        spaces: SpaceRepository,
        context: ContextBuilder,
        tasks: BackgroundTasks,
        tool_hooks: Sequence[ToolHook] = (),
        turn_hooks: Sequence[TurnHook] = (),
    ) -> None:
        self._settings = settings
        self._gateway = gateway
        self.registry = registry
        self._sessions = sessions
        self._messages = messages
        self._spaces = spaces
        self.context = context
        self._tasks = tasks
        self._tool_hooks = list(tool_hooks)
        self._turn_hooks = list(turn_hooks)
        self._locks = KeyedLocks()

    def add_tool_hook(self, hook: ToolHook) -> None:
        """Run `hook` after every tool result."""
        self._tool_hooks.append(hook)

    def add_turn_hook(self, hook: TurnHook) -> None:
        """Run `hook` in the background after every completed turn."""
        self._turn_hooks.append(hook)

    async def run_turn(self, request: TurnRequest) -> AsyncIterator[Event]:
        """Answer one message, yielding events; the turn finishes even if the reader stops."""
        queue: asyncio.Queue[Event | _End] = asyncio.Queue()
        task = asyncio.get_running_loop().create_task(
            self._run(request, queue.put_nowait), name="chat-turn"
        )
        task.add_done_callback(lambda _: queue.put_nowait(_End()))
        try:
            while not isinstance(item := await queue.get(), _End):
                yield item
        finally:
            if not task.done():
                # The reader went away: let the turn finish and store its answer anyway.
                self._tasks.spawn(_await(task), name="chat-turn-orphan")
            elif not task.cancelled() and task.exception() is not None:
                log.error("chat turn crashed", exc_info=task.exception())

    async def _session_for(self, request: TurnRequest) -> tuple[Session, bool]:
        if request.session_id is not None:
            session = await self._sessions.get(request.space_id, request.session_id)
            if session is not None:
                return session, False
        session = await self._sessions.create(
            request.space_id,
            session_id=request.session_id,
            title=request.title or request.text[:60],
            source=request.source,
            discord_channel_id=request.discord_channel_id,
            discord_guild_id=request.discord_guild_id,
        )
        return session, True

    async def _run(self, request: TurnRequest, emit: Emit) -> None:
        try:
            session, created = await self._session_for(request)
            emit(SessionEvent(session.id, created))
            try:
                user_message = await self._messages.add(
                    session.space_id,
                    session.id,
                    "user",
                    request.text,
                    author_id=request.author_id,
                    author_name=request.author_name,
                    discord_message_id=request.discord_message_id,
                )
            except sqlite3.IntegrityError:
                log.info("message %s already handled; skipping", request.discord_message_id)
                return
        except Exception:
            log.exception("could not store the user's message")
            emit(ErrorEvent(prompts_for(self._settings().language)["error_generic"]))
            return
        async with self._locks.hold(session.id):
            await self._answer(_TurnState(session, user_message), request, emit)

    async def _space_settings(self, space_id: str) -> tuple[Settings, SpaceRecord | None]:
        """The settings in effect for a turn in this space: its language and persona, if set."""
        settings = self._settings()
        try:
            record = await self._spaces.get(space_id)
        except Exception:
            log.exception("could not read the settings of space %s", space_id)
            return settings, None
        if record is None:
            return settings, None
        updates: dict[str, Any] = {}
        if record.language in ("ja", "en"):
            updates["language"] = record.language
        if record.persona:
            extra = settings.system_prompt_extra
            updates["system_prompt_extra"] = (
                f"{extra}\n\n{record.persona}" if extra else record.persona
            )
        return (settings.model_copy(update=updates) if updates else settings), record

    async def _answer(self, state: _TurnState, request: TurnRequest, emit: Emit) -> None:
        settings, space = await self._space_settings(state.session.space_id)
        prompts = prompts_for(settings.language)
        model = (
            request.model
            or state.session.model
            or (space.default_model if space is not None else None)
            or settings.llm_model
        )
        try:
            context = await self.context.build(
                ContextRequest(
                    state.session.space_id,
                    state.session.id,
                    request.text,
                    state.user_message.id,
                    settings,
                    token_factor=self._gateway.token_factor(model),
                ),
                tools=self.registry.schemas(),
                images=request.images,
            )
            messages = context.messages
            while True:
                offer_tools = state.budget.tools_allowed and len(self.registry) > 0
                calls = await self._stream_round(messages, model, state, emit, tools_on=offer_tools)
                if not calls or not offer_tools:
                    break
                await self._run_tools(calls, messages, state, request, emit)
                state.budget.rounds += 1
                if not state.budget.tools_allowed:
                    key = (
                        "tool_budget_exhausted"
                        if state.budget.chars_exhausted
                        else "tool_rounds_exhausted"
                    )
                    messages.append(
                        {
                            "role": "system",
                            "content": prompts.format(key, limit=state.budget.max_chars),
                        }
                    )
        except UserFacingError as exc:
            emit(ErrorEvent(str(exc)))
            return
        except Exception:
            log.exception("turn failed in session %s", state.session.id)
            emit(ErrorEvent(prompts["error_generic"]))
            return
        text = "".join(state.answer).strip()
        if not text:
            text = prompts["empty_answer"]
            emit(ChunkEvent(text))
        answer = await self._messages.add(
            state.session.space_id,
            state.session.id,
            "assistant",
            text,
            reply_to=state.user_message.id,
        )
        emit(DoneEvent(text, answer.id))
        result = TurnResult(
            state.session.space_id,
            state.session.id,
            state.user_message,
            answer,
            tuple(state.tool_names),
            pool_channel_id=state.session.pool_channel_id,
        )
        for hook in self._turn_hooks:
            self._tasks.spawn(hook(result), name=f"turn-hook-{getattr(hook, '__name__', 'hook')}")

    async def _stream_round(
        self,
        messages: list[Message],
        model: str,
        state: _TurnState,
        emit: Emit,
        *,
        tools_on: bool,
    ) -> list[ToolCall]:
        calls: list[ToolCall] = []
        round_text: list[str] = []
        async for delta in self._gateway.stream(
            messages,
            tools=self.registry.schemas() if tools_on else None,
            model=model,
            session_id=state.session.id,
        ):
            if delta.text:
                round_text.append(delta.text)
                state.answer.append(delta.text)
                emit(ChunkEvent(delta.text))
            if delta.done:
                calls = delta.tool_calls
        if calls and tools_on:
            messages.append(
                {
                    "role": "assistant",
                    "content": "".join(round_text),
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": call.name,
                                "arguments": arguments_text(call.arguments),
                            },
                        }
                        for call in calls
                    ],
                }
            )
        return calls

    async def _run_tools(
        self,
        calls: list[ToolCall],
        messages: list[Message],
        state: _TurnState,
        request: TurnRequest,
        emit: Emit,
    ) -> None:
        for index, call in enumerate(calls):
            call_id = f"{state.budget.rounds + 1}-{index + 1}-{call.id}"
            arguments = _arguments(call)
            running = self._running_event(call_id, call.name, arguments)
            emit(running)
            raw = await self._execute(call.name, arguments, state)
            result = trim_tool_result(raw)
            state.budget.spend(result.text)
            state.tool_names.append(call.name)
            emit(_finished_event(running, result))
            self._add_sources(raw.sources, state, emit)
            outcome = ToolOutcome(
                state.session.space_id,
                state.session.id,
                call_id,
                call.name,
                arguments,
                raw,
                request.text,
            )
            await self._run_hooks(outcome, emit)
            messages.append(self._tool_message(call, result))

    def _running_event(self, call_id: str, name: str, arguments: dict[str, Any]) -> ToolEvent:
        """The `running` event of a call: the tool's icon and label for its arguments."""
        tool = self.registry.get(name)
        detail = json.dumps(arguments, ensure_ascii=False)[:DETAIL_CHARS]
        if tool is None:
            return ToolEvent(call_id, name, "running", label=name, detail=detail)
        label = tool.label(arguments)
        return ToolEvent(call_id, name, "running", label=label, detail=detail, icon=tool.icon)

    async def _execute(self, name: str, arguments: dict[str, Any], state: _TurnState) -> ToolResult:
        if state.budget.chars_exhausted:
            prompts = prompts_for(self._settings().language)
            return ToolResult.error(
                prompts.format("tool_budget_exhausted", limit=state.budget.max_chars)
            )
        return await self.registry.execute(
            name,
            arguments,
            injected={"session_id": state.session.id, "space_id": state.session.space_id},
        )

    @staticmethod
    def _add_sources(found: Sequence[Source], state: _TurnState, emit: Emit) -> None:
        """Remember the call's new sources and announce the turn's list when it grew."""
        known = {source["url"] for source in state.sources}
        before = len(state.sources)
        for source in found:
            if source.url not in known:
                known.add(source.url)
                state.sources.append({"title": source.title, "url": source.url})
        if len(state.sources) > before:
            emit(SourcesEvent(list(state.sources)))

    async def _run_hooks(self, outcome: ToolOutcome, emit: Emit) -> None:
        for hook in self._tool_hooks:
            try:
                await hook(outcome, emit)
            except Exception:
                log.exception("tool hook failed after %s", outcome.name)

    def _tool_message(self, call: ToolCall, result: ToolResult) -> Message:
        prefix = prompts_for(self._settings().language).format("tool_result_prefix", name=call.name)
        return {
            "role": "tool",
            "tool_call_id": call.id,
            "name": call.name,
            "content": f"{prefix}\n{result.text}",
        }


def _finished_event(running: ToolEvent, result: ToolResult) -> ToolEvent:
    """The `done`/`error` event closing `running`, with a preview of the result."""
    text = result.text
    preview = text[:RESULT_PREVIEW_CHARS] + ("…" if len(text) > RESULT_PREVIEW_CHARS else "")
    return replace(
        running,
        status="error" if result.failed else "done",
        detail="",
        result=preview,
    )


async def _await(task: asyncio.Task[None]) -> None:
    await task
