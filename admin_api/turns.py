"""Starting a chat turn from the admin API (linking note pages first when asked).

A new conversation goes to the space asked for, by default the local space (LOCAL_SPACE); an
existing session, whatever its space (the admin API is operator level), continues in its own
space, and naming another space for it is refused.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from dataclasses import dataclass

from bot.chat.engine import ChatEngine, TurnRequest
from bot.errors import NotStoredError, ValidationError
from bot.memory.notes import NotesService
from bot.store.repos.sessions import SessionRepository
from bot.store.spaces import ALL_SPACES
from bot.turn.events import ErrorEvent, Event

log = logging.getLogger(__name__)


async def _first_or_stored(
    events: AsyncIterator[Event], stored: asyncio.Event
) -> asyncio.Future[Event]:
    """The turn's first event, once its message is stored or it ended first.

    A message that could not be stored raises NotStoredError here, before anything is
    streamed, so the API answers with an error status instead of an accepted stream.
    """
    first: asyncio.Future[Event] = asyncio.ensure_future(anext(events))
    waiting = asyncio.ensure_future(stored.wait())
    try:
        await asyncio.wait((first, waiting), return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiting.cancel()
    if first.done() and not first.cancelled() and first.exception() is None:
        event = first.result()
        if isinstance(event, ErrorEvent) and event.not_stored:
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()
            raise NotStoredError(event.message)
    return first


SOURCE = "admin"


@dataclass(frozen=True)
class ChatInput:
    """A message to answer over HTTP."""

    message: str
    session_id: str | None = None
    model: str | None = None
    note_page_ids: Sequence[int] | None = None
    space_id: str | None = None


class ChatTurns:
    """Runs engine turns for the admin API's chat stream."""

    def __init__(
        self,
        engine: ChatEngine,
        sessions: SessionRepository,
        notes: NotesService,
        local_space: Callable[[], str],
    ) -> None:
        self._engine = engine
        self._sessions = sessions
        self._notes = notes
        self._local_space = local_space

    async def start(self, chat: ChatInput) -> AsyncGenerator[Event, None]:
        """Prepare a turn (note links go in before the context is built); returns its events.

        Errors in the preparation raise here, before anything is streamed.
        """
        session_id = chat.session_id
        existing = None if session_id is None else await self._sessions.get(ALL_SPACES, session_id)
        space = chat.space_id or self._local_space()
        if existing is not None:
            if chat.space_id is not None and chat.space_id != existing.space_id:
                raise ValidationError(
                    f"Session {session_id!r} belongs to {existing.space_id}, not {chat.space_id}."
                )
            space = existing.space_id
        created = False
        if chat.note_page_ids is not None:
            wanted = set(chat.note_page_ids)
            found = {page.id for page in await self._notes.get_many(space, list(wanted))}
            if wanted - found:
                missing = ", ".join(map(str, sorted(wanted - found)))
                raise ValidationError(f"Unknown note page id(s): {missing}.")
            if existing is None:
                # The links need the session row, so a new session is created up front.
                session = await self._sessions.create(
                    space, session_id=session_id, title=chat.message[:60], source=SOURCE
                )
                session_id, created = session.id, True
            assert session_id is not None
            await self._notes.set_links(space, session_id, list(chat.note_page_ids))
        stored = asyncio.Event()
        events = self._engine.run_turn(
            TurnRequest(
                chat.message,
                session_id,
                source=SOURCE,
                model=chat.model,
                new_session=created,
                space_id=space,
                on_stored=stored.set,
            )
        )
        first = await _first_or_stored(events, stored)
        return self._events(events, first)

    async def _events(
        self, events: AsyncIterator[Event], first: asyncio.Future[Event]
    ) -> AsyncGenerator[Event, None]:
        try:
            try:
                yield await first
            except StopAsyncIteration:
                return
            async for event in events:
                yield event
        finally:
            # Closing the engine's stream at once is what hands an abandoned turn to the
            # background (it is never cancelled).
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()
