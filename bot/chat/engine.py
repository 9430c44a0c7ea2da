"""One conversation turn: store → context → stream → tool loop → store → events."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import aclosing, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

from bot.chat.approval import Asked, ask_member, needs_approval
from bot.chat.budget.allocation import PAGE_TOKENS, answer_reserve
from bot.chat.budget.answer_bounds import AnswerBounds, server_limit_notice
from bot.chat.budget.tool_arguments import Refusal, ScreenedCalls, screen_calls
from bot.chat.budget.tool_budget import ToolBudget, trim_tool_result
from bot.chat.budget.tool_marks import marked_result
from bot.chat.budget.turn_fit import ToolText
from bot.chat.budget.turn_messages import (
    ToolStep,
    TurnMessages,
    assistant_message,
    fit_to_room,
    notice,
    result_room,
    withheld,
)
from bot.chat.bursts import Burst, BurstPart
from bot.chat.context import ContextBuilder, ContextRequest
from bot.chat.daily_budget import BudgetCall, TurnBudget
from bot.chat.member_turn import (
    SpeakingMember,
    hidden_tools,
    member_notes,
    save_requested_fact,
    speaking_member,
)
from bot.chat.not_stored import store_failure_reason
from bot.chat.pending import PendingTurns
from bot.chat.stopping import StopScope
from bot.config import Settings
from bot.errors import LLMError, LLMUnavailableError, UserFacingError
from bot.llm.gateway import LLMGateway
from bot.llm.pacing import ReadPace, reading_at
from bot.llm.types import Message, ToolCall
from bot.memory.member_memory import MemberMemory
from bot.prompts import Prompts, prompts_for
from bot.prompts.languages import known_language
from bot.store.repos.messages import FAILED_TURN_ROLE, MessageRepository, StoredMessage
from bot.store.repos.sessions import Session, SessionRepository
from bot.store.repos.space_records import SpaceRecord, SpaceRepository
from bot.tools.core import ToolRegistry
from bot.tools.room import ROOM_PARAM, ResultRoom
from bot.turn.approval import ApprovalAsk, Approver, Decision
from bot.turn.events import (
    ChunkEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    SessionEvent,
    SourcesEvent,
    ToolEvent,
)
from bot.turn.hooks import Emit, ToolHook, ToolOutcome, TurnHook, TurnResult
from bot.turn.tool_result import Source, ToolResult
from bot.utils.locks import KeyedLocks
from bot.utils.tasks import BackgroundTasks

log = logging.getLogger(__name__)

RESULT_PREVIEW_CHARS = 300
DETAIL_CHARS = 200


class _End:
    """Marks the end of a turn's event queue."""


class _ForeignSession(Exception):
    """A turn named a session id that belongs to another space."""


@dataclass(frozen=True)
class TurnRequest:
    """A user's message to answer, in a space.

    `space_id` (keyword-only, required) names the space the conversation belongs to (the front
    end knows it: a guild, a DM user, the local space of the terminal and the admin chat); a
    new session is created there, and an existing session is only found in its own space.
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
    # The caller created `session_id` for this turn, so the turn announces it as new.
    new_session: bool = False
    space_id: str = field(kw_only=True)
    # Set by the front end to stop the answer (the terminal's Ctrl-C): what was said is kept.
    stop: asyncio.Event | None = field(default=None, compare=False, kw_only=True)
    # Seconds the model's stream may gather between reads once the answer shows: a front end
    # that edits its message a second apart needs no wake-up per token (0: every token at once).
    read_pace: float = field(default=0.0, kw_only=True)
    # The session `session_id` names, as the front end found or made it a moment before: the
    # turn takes it instead of reading it again (one that does not match is ignored).
    session: Session | None = field(default=None, compare=False, kw_only=True)
    # Called once the user's message is stored (before the model is asked), so a front end
    # can promise the message is kept only when it is.
    on_stored: Callable[[], None] | None = field(default=None, compare=False, kw_only=True)
    # The member's next messages join this turn until it shows anything (bot/chat/bursts.py).
    burst: Burst | None = field(default=None, compare=False, kw_only=True)
    # Asks the member before a tool with side effects runs (bot/chat/approval.py); without
    # one such calls are refused: nobody can be asked.
    approver: Approver | None = field(default=None, compare=False, kw_only=True)


@dataclass
class _TurnState:
    session: Session
    user_message: StoredMessage
    speaker: SpeakingMember
    budget: ToolBudget = field(default_factory=ToolBudget)
    answer: list[str] = field(default_factory=list)
    sources: list[dict[str, str]] = field(default_factory=list)
    tool_names: list[str] = field(default_factory=list)
    bounds: AnswerBounds = field(default_factory=AnswerBounds)
    # The notice that ends a turn stopped at one of its bounds (time, length).
    stopped: str | None = None
    # The settings of this turn's space (its language and persona) and its default model.
    settings: Settings | None = None
    space_model: str | None = None
    # Tools not offered this turn (remember while the member's memory is off): name → the
    # error a call of one gets anyway.
    hidden_tools: dict[str, str] = field(default_factory=dict)
    # The system lines about member memory this turn (off, what a request saved).
    notes: tuple[str, ...] = ()
    # The model stream's pace: 0 until the answer's first text is out, then `paced_reads`.
    read_pace: ReadPace = field(default_factory=ReadPace)
    paced_reads: float = 0.0
    # What the turn answers: the message's text, and those of the burst's later messages.
    text: str = ""
    # The ids of the turn's stored user messages (the first, then the burst's).
    stored: list[int] = field(default_factory=list)
    # The turn's time bound (TURN_TIMEOUT), once the turn runs under it.
    bound: asyncio.Timeout | None = None


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
        members: MemberMemory | None = None,
        pending: PendingTurns | None = None,
        budget: TurnBudget | None = None,
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
        self._members = members
        # Stored messages whose turn has not ended: the summariser leaves them (and what
        # follows them) live until they are answered.
        self.pending = pending if pending is not None else PendingTurns()
        self._locks = KeyedLocks()
        self._arrivals = KeyedLocks()
        self._budget = budget if budget is not None else TurnBudget(None, settings)

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
        given = request.session
        if (
            given is not None
            and given.id == request.session_id
            and given.space_id == request.space_id
        ):
            return given, False
        if request.session_id is not None:
            session = await self._sessions.get(request.space_id, request.session_id)
            if session is not None:
                return session, False
        try:
            session = await self._sessions.create(
                request.space_id,
                session_id=request.session_id,
                title=request.title or request.text[:60],
                source=request.source,
                discord_channel_id=request.discord_channel_id,
                discord_guild_id=request.discord_guild_id,
            )
        except sqlite3.IntegrityError:
            # The id is taken: by a turn of this space that created it a moment ago (two turns
            # at once for a new named session), or by another space's conversation.
            if request.session_id is not None:
                session = await self._sessions.get(request.space_id, request.session_id)
                if session is not None:
                    return session, False
            raise _ForeignSession(request.session_id, request.space_id) from None
        return session, True

    async def _run(self, request: TurnRequest, emit: Emit) -> None:
        # Turns of one conversation are stored and answered in the order they were asked. On
        # PostgreSQL two turns' reads and writes run on separate pooled connections and may
        # finish in either order, so storing goes one at a time by arrival, and the turn lock
        # is queued for with no await after that (asyncio locks wake waiters in FIFO order).
        arrival = (
            self._arrivals.hold((request.space_id, request.session_id))
            if request.session_id is not None
            else nullcontext()
        )
        async with arrival:
            stored = await self._store_question(request, emit)
        if stored is None:
            return
        session = stored.session
        if request.burst is not None:
            emit = _closing(request.burst, emit)
        try:
            async with self._locks.hold(session.id):
                await self._answer(stored, request, emit)
        finally:
            for message_id in stored.stored:
                self.pending.done(session.space_id, session.id, message_id)

    async def _store_question(self, request: TurnRequest, emit: Emit) -> _TurnState | None:
        """The turn's session (made if new) and its stored user message; None if refused.

        A message that cannot be stored is refused before anything else happens: the person
        is told it was not saved and why, and the model is never called.
        """
        session: Session | None = None
        created = False
        try:
            session, created = await self._session_for(request)
            speaker = await speaking_member(
                self._members, session.space_id, request.author_id, request.author_name
            )
            try:
                user_message = await self._messages.add(
                    session.space_id,
                    session.id,
                    "user",
                    request.text,
                    author_id=request.author_id,
                    author_name=request.author_name,
                    discord_message_id=request.discord_message_id,
                    recall_hidden=speaker.keeps_out_of_recall(request.text),
                )
            except sqlite3.IntegrityError:
                if not await self._already_stored(request, session.space_id):
                    raise
                log.info("message %s already handled; skipping", request.discord_message_id)
                return None
            self.pending.add(session.space_id, session.id, user_message.id)
        except Exception as exc:
            await self._refuse(exc, session if created else None, emit)
            return None
        if request.on_stored is not None:
            request.on_stored()
        if created or request.new_session:
            emit(SessionEvent(session.id, created=True))
        state = _TurnState(session, user_message, speaker, paced_reads=request.read_pace)
        state.text = request.text
        state.stored.append(user_message.id)
        return state

    async def _gather(self, state: _TurnState, burst: Burst) -> None:
        """Store the messages that joined the turn; wait while their author types more."""
        while True:
            for part in burst.take():
                await self._store_part(state, part)
            await burst.settle()
            if not burst.pending:
                return

    async def _store_part(self, state: _TurnState, part: BurstPart) -> None:
        """Store a message of the burst: the turn now answers it too (it is the last one)."""
        session = state.session
        try:
            message = await self._messages.add(
                session.space_id,
                session.id,
                "user",
                part.text,
                author_id=part.author_id,
                author_name=part.author_name,
                discord_message_id=part.discord_message_id,
                recall_hidden=state.speaker.keeps_out_of_recall(part.text),
            )
        except sqlite3.IntegrityError:
            log.info("message %s already handled; not joined", part.discord_message_id)
            return
        self.pending.add(session.space_id, session.id, message.id)
        state.stored.append(message.id)
        state.user_message = message
        state.text = f"{state.text}\n{part.text}"
        await save_requested_fact(
            self._members,
            state.speaker,
            session.space_id,
            session.id,
            part.text,
            message_id=message.id,
        )

    async def _already_stored(self, request: TurnRequest, space_id: str) -> bool:
        """Whether the Discord message of `request` is stored already (a redelivered event)."""
        if request.discord_message_id is None:
            return False
        try:
            found = await self._messages.by_discord_id(space_id, request.discord_message_id)
        except Exception:
            log.exception("could not look up message %s", request.discord_message_id)
            return False
        return found is not None

    async def _refuse(self, exc: Exception, made: Session | None, emit: Emit) -> None:
        """Tell the person their message was not stored (and why); undo a session made for it."""
        prompts = prompts_for(self._settings().language)
        if isinstance(exc, _ForeignSession):
            log.warning("refused a turn: session %s is not in space %s", *exc.args)
            reason = prompts["store_foreign_session"]
        else:
            log.error("could not store the user's message; the turn is refused", exc_info=exc)
            reason = store_failure_reason(exc, prompts)
        if made is not None:
            try:
                await self._sessions.delete(made.space_id, made.id)
            except Exception:
                log.exception("could not remove the empty session %s", made.id)
        emit(ErrorEvent(prompts.format("error_not_stored", reason=reason), not_stored=True))

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
        if language := known_language(record.language):
            updates["language"] = language
        if record.persona:
            extra = settings.system_prompt_extra
            updates["system_prompt_extra"] = (
                f"{extra}\n\n{record.persona}" if extra else record.persona
            )
        return (settings.model_copy(update=updates) if updates else settings), record

    async def _answer(self, state: _TurnState, request: TurnRequest, emit: Emit) -> None:
        settings, space = await self._space_settings(state.session.space_id)
        state.settings = settings
        state.space_model = space.default_model if space is not None else None
        prompts = prompts_for(settings.language)
        # The whole turn, tool calls included, is bounded in time: a model that never stops
        # must not hold the session (and its queue) forever.
        bound = state.bound = asyncio.timeout(settings.turn_timeout)
        stop = StopScope(request.stop)
        try:
            async with bound, stop:
                await self._rounds(state, request, emit)
        except UserFacingError as exc:
            await self._fail(state, emit, _error_event(exc))
            return
        except TimeoutError:
            if not bound.expired():
                log.exception("turn failed in session %s", state.session.id)
                await self._fail(state, emit, ErrorEvent(prompts["error_generic"]))
                return
            log.warning(
                "turn in session %s stopped after %ss", state.session.id, settings.turn_timeout
            )
            seconds = f"{settings.turn_timeout:g}"
            state.stopped = prompts.format("answer_time_limit", seconds=seconds)
        except Exception:
            log.exception("turn failed in session %s", state.session.id)
            await self._fail(state, emit, ErrorEvent(prompts["error_generic"]))
            return
        text = "".join(state.answer).strip()
        if stop.stopped:
            log.info("turn in session %s stopped on request", state.session.id)
            if not text:
                return  # stopped before a word: nothing to keep, the front end says so
        elif state.stopped:
            # What was said is kept; the notice says why it ends here.
            notice = f"\n\n{state.stopped}" if text else state.stopped
            emit(ChunkEvent(notice))
            text += notice
        elif not text:
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

    async def _fail(self, state: _TurnState, emit: Emit, event: ErrorEvent) -> None:
        """Record the failed turn (its notice, as a `system` message answering the question),
        then emit `event`: a later start must not take the turn for one a restart cut off."""
        try:
            await self._messages.add(
                state.session.space_id,
                state.session.id,
                FAILED_TURN_ROLE,
                event.message,
                reply_to=state.user_message.id,
            )
        except Exception:
            log.exception("could not record the failed turn in session %s", state.session.id)
        emit(event)

    async def _rounds(self, state: _TurnState, request: TurnRequest, emit: Emit) -> None:
        """The turn's model calls, restarted while its member's next messages join it."""
        settings = state.settings or self._settings()
        prompts = prompts_for(settings.language)
        model = request.model or state.session.model or state.space_model or settings.llm_model
        remembered = await save_requested_fact(
            self._members,
            state.speaker,
            state.session.space_id,
            state.session.id,
            request.text,
            message_id=state.user_message.id,
        )
        if remembered is not None:
            emit(remembered)
        state.hidden_tools = hidden_tools(state.speaker, prompts)
        state.notes = member_notes(state.speaker, remembered, prompts)
        burst = request.burst
        while True:
            if burst is not None:
                await self._gather(state, burst)
            turn = await self._turn_context(state, request, model, settings)
            if burst is None:
                await self._tool_loop(turn, model, state, request, emit)
                return
            if burst.pending:
                continue  # a message joined while the context was read: read it again
            restart = burst.restartable()
            async with restart:
                await self._tool_loop(turn, model, state, request, emit)
            if not restart.superseded:
                return
            log.info("turn in session %s restarted with a joined message", state.session.id)
            state.stopped = None

    async def _turn_context(
        self, state: _TurnState, request: TurnRequest, model: str, settings: Settings
    ) -> TurnMessages:
        """The turn's messages to the model: system, layers, conversation, its own message."""
        context = await self.context.build(
            ContextRequest(
                state.session.space_id,
                state.session.id,
                state.text,
                state.user_message.id,
                settings,
                token_factor=self._gateway.token_factor(model),
                member_id=state.speaker.id,
                channel_id=state.session.discord_channel_id,
                author_name=state.user_message.author_name,
                notes=state.notes,
            ),
            tools=self.registry.schemas(exclude=state.hidden_tools),
            images=request.images,
        )
        return TurnMessages(
            context.messages,
            context.budget,
            refit=context.refit,
            tool_tokens=context.tool_tokens,
        )

    async def _tool_loop(
        self, turn: TurnMessages, model: str, state: _TurnState, request: TurnRequest, emit: Emit
    ) -> None:
        """Model calls and tool rounds until the model answers without tools (or a bound)."""
        prompts = prompts_for((state.settings or self._settings()).language)
        while True:
            offer_tools = bool(self.registry.schemas(exclude=state.hidden_tools))
            why = withheld(state.budget, turn) if offer_tools else None
            if why is not None:
                # Tools only while their results can be seen; the model is told once.
                offer_tools = False
                turn.tell(notice(prompts.format(why, limit=state.budget.max_chars)))
            messages = turn.request(offers_tools=offer_tools)
            if messages is None:
                turn.stop(notice(prompts["tool_window_exhausted"]))
                messages = turn.without_tools()
                offer_tools = False
            calls, text = await self._stream_round(
                messages, model, state, emit, tools_on=offer_tools
            )
            if not calls or not offer_tools or state.stopped:
                break
            screened = screen_calls(calls, turn.room(state.budget.rounds + 1))
            turn.steps.append(assistant_message(text, screened.calls))
            await self._run_tools(screened, turn, state, request, emit)
            state.budget.rounds += 1

    async def _stream_round(
        self,
        messages: list[Message],
        model: str,
        state: _TurnState,
        emit: Emit,
        *,
        tools_on: bool,
    ) -> tuple[list[ToolCall], str]:
        """One model call: its text is streamed out; returns its tool calls and its text.

        At the turn's length bound, or once the answer repeats itself, the answer ends there
        and the call is closed (the backend's connection with it); at the server's own limit it
        ended there; `state.stopped` then says why.
        """
        settings = self._settings()
        prompts = prompts_for((state.settings or settings).language)
        calls: list[ToolCall] = []
        round_text: list[str] = []
        tools = self.registry.schemas(exclude=state.hidden_tools) if tools_on else None
        # Every round is reserved against the daily budgets before the model is called.
        spend = await self._budget.reserve(
            BudgetCall(
                state.session.space_id,
                state.speaker.id,
                messages,
                tools,
                self._gateway.token_factor(model),
            ),
            prompts,
        )
        stream = spend.metered(
            self._gateway.stream(messages, tools=tools, model=model, session_id=state.session.id)
        )
        with reading_at(state.read_pace):
            async with aclosing(stream) as deltas:
                async for delta in deltas:
                    if delta.text:
                        piece, notice = state.bounds.take(
                            delta.text, settings.max_answer_chars, prompts
                        )
                        if piece:
                            round_text.append(piece)
                            state.answer.append(piece)
                            emit(ChunkEvent(piece))
                            state.read_pace.seconds = state.paced_reads
                        if notice is not None:
                            log.warning("turn in session %s stopped: %s", state.session.id, notice)
                            state.stopped = notice
                            return [], "".join(round_text)
                    if delta.done:
                        calls = delta.tool_calls
                        state.read_pace.seconds = 0.0  # the rest is the body's end: read it now
                        reserve = answer_reserve(settings.llm_context_tokens)
                        if not calls:
                            state.stopped = server_limit_notice(delta.finish, reserve, prompts)
        return calls, "".join(round_text)

    async def _run_tools(
        self,
        screened: ScreenedCalls,
        turn: TurnMessages,
        state: _TurnState,
        request: TurnRequest,
        emit: Emit,
    ) -> None:
        settings = self._settings()
        prompts = prompts_for(settings.language)
        round_number = state.budget.rounds + 1
        for index, call in enumerate(screened.calls):
            head = prompts.format("tool_result_prefix", name=call.name) + "\n"
            room = turn.room(round_number)
            not_run = _not_run(state.budget, room, prompts, screened.refused.get(index))
            call_id = f"{round_number}-{index + 1}-{call.id}"
            if not_run is not None:
                # Every tool_call id needs its tool message; this one says why nothing ran.
                turn.steps.append(ToolStep(call, ToolText(not_run, round=round_number)))
                if index in screened.refused:
                    self._show_refused(call_id, call, not_run, emit)
                continue
            arguments = _arguments(call)
            running = self._running_event(call_id, call.name, arguments)
            emit(running)
            started = time.monotonic()
            fits = result_room(state.budget, settings.max_tool_result_chars, room, head)
            raw, decision = await self._execute(call.name, arguments, state, fits, request)
            duration_ms = round((time.monotonic() - started) * 1000)
            result = trim_tool_result(raw, settings.max_tool_result_chars)
            marked = marked_result(
                call,
                arguments,
                result,
                round_number,
                self.registry.get(call.name),
                prompts=prompts,
                cap=state.budget.max_chars,
            )
            taken = state.budget.take(marked.item, marked.budget_tails, marked.budget_closed)
            item = fit_to_room(taken, room)
            state.tool_names.append(call.name)
            emit(_finished_event(running, result))
            for event in raw.events:
                emit(event)
            self._add_sources(raw.sources, state, emit)
            outcome = ToolOutcome(
                state.session.space_id,
                state.session.id,
                call_id,
                call.name,
                arguments,
                raw,
                state.text,
                message_id=state.user_message.id,
                duration_ms=duration_ms,
                approval=decision,
            )
            await self._run_hooks(outcome, emit)
            turn.steps.append(ToolStep(call, item))

    def _show_refused(self, call_id: str, call: ToolCall, why: str, emit: Emit) -> None:
        """Show a refused call as one that failed, so the member sees why nothing was done."""
        running = self._running_event(call_id, call.name, _arguments(call))
        emit(running)
        emit(_finished_event(running, ToolResult.error(why)))

    def _running_event(self, call_id: str, name: str, arguments: dict[str, Any]) -> ToolEvent:
        """The `running` event of a call: the tool's icon and label for its arguments."""
        tool = self.registry.get(name)
        detail = json.dumps(arguments, ensure_ascii=False)[:DETAIL_CHARS]
        if tool is None:
            return ToolEvent(call_id, name, "running", label=name, detail=detail)
        label = tool.label(arguments)
        return ToolEvent(call_id, name, "running", label=label, detail=detail, icon=tool.icon)

    async def _execute(
        self,
        name: str,
        arguments: dict[str, Any],
        state: _TurnState,
        room: ResultRoom,
        request: TurnRequest,
    ) -> tuple[ToolResult, Decision | None]:
        """The call's result, and its member's decision when the tool asks first."""
        if name in state.hidden_tools:
            return ToolResult.error(state.hidden_tools[name]), None  # not offered: never run
        asked = await self._approval(name, arguments, state, request)
        if asked is not None and asked.refusal is not None:
            return asked.refusal, asked.decision
        result = await self.registry.execute(
            name,
            arguments,
            injected={
                "session_id": state.session.id,
                "space_id": state.session.space_id,
                "member_id": state.speaker.id,
                "member_name": state.speaker.name,
                # The message the turn answers (its last): what a remembered fact came from.
                "message_id": state.user_message.id,
                ROOM_PARAM: room,
            },
        )
        return result, None if asked is None else asked.decision

    async def _approval(
        self, name: str, arguments: dict[str, Any], state: _TurnState, request: TurnRequest
    ) -> Asked | None:
        """Ask the member first when the tool says so (None: it runs without asking)."""
        settings = state.settings or self._settings()
        tool = self.registry.get(name)
        if tool is None or not needs_approval(tool, settings):
            return None
        if request.burst is not None:
            # The member's next message is a turn of its own now: joining would restart the
            # turn and cancel the question they are being asked.
            request.burst.close()
        ask = ApprovalAsk(
            tool=name,
            label=tool.label(arguments),
            detail=json.dumps(arguments, ensure_ascii=False)[:DETAIL_CHARS],
            member_id=state.speaker.id,
            member_name=state.speaker.name,
            timeout=_approval_time(settings.approval_timeout_seconds, state.bound),
            language=settings.language,
        )
        prompts = prompts_for(settings.language)
        return await ask_member(request.approver, ask, prompts, session_id=state.session.id)

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


def _approval_time(setting: float, bound: asyncio.Timeout | None) -> float:
    """Seconds a question may wait: the setting, or less, so that the member is told the
    truth when the turn's own time bound comes first (whole seconds, at least one)."""
    deadline = None if bound is None else bound.when()
    if deadline is None:
        return setting
    left = math.floor(deadline - asyncio.get_running_loop().time())
    return max(1.0, min(setting, left))


def _not_run(
    budget: ToolBudget, room: int, prompts: Prompts, refusal: Refusal | None
) -> str | None:
    """Why a call of this round does not run (its tool message), or None when it runs."""
    if refusal is not None:
        return prompts.format(
            "tool_arguments_refused", size=f"{refusal.size:,}", limit=f"{refusal.limit:,}"
        )
    if budget.chars_exhausted:
        return prompts.format("tool_not_run", limit=budget.max_chars)
    if room < PAGE_TOKENS:
        return prompts["tool_not_run_window"]
    return None


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


def _closing(burst: Burst, emit: Emit) -> Emit:
    """`emit` that closes the burst first: once the turn shows anything, nobody joins it."""

    def shown(event: Event) -> None:
        burst.close()
        emit(event)

    return shown


def _error_event(exc: UserFacingError) -> ErrorEvent:
    """The error event of a failed turn: the member's sentence, and the operator's detail
    (address, what failed, the fix) when the model call failed."""
    detail = exc.detail if isinstance(exc, LLMError) and exc.detail != str(exc) else None
    return ErrorEvent(str(exc), model_down=isinstance(exc, LLMUnavailableError), detail=detail)
