"""Conversations: browse a space's channels and threads, read a transcript.

The spaces themselves are listed by `GET /api/spaces`.
"""

from __future__ import annotations

from admin_api.errors import not_found
from admin_api.routing import Route
from admin_api.schemas.common import Page, SessionId
from admin_api.schemas.conversations import (
    ChannelOut,
    ChannelsQuery,
    SourceOut,
    SummaryOut,
    ThreadOut,
    ThreadsQuery,
    ToolCallOut,
    TranscriptMessageOut,
    TranscriptOut,
    TranscriptQuery,
)
from admin_api.schemas.rows import SessionOut
from bot.services import Services
from bot.store.reads.conversations import SummaryRange, ThreadSummary, TranscriptMessage
from bot.store.spaces import ALL_SPACES
from bot.turn.approval import VERDICTS, Verdict


def _text_id(value: int | None) -> str | None:
    return None if value is None else str(value)


async def list_channels(services: Services, query: ChannelsQuery) -> Page[ChannelOut, str]:
    """A space's channels with their thread counts and last activity, most recent first."""
    rows = await services.repos.conversation_reads.channels(
        query.space, limit=query.limit, before=query.before
    )
    items = [
        ChannelOut(
            channel_id=_text_id(row.channel_id),
            name=row.name,
            threads=row.threads,
            open_threads=row.open_threads,
            last_activity=row.last_activity,
        )
        for row in rows
    ]
    return Page.of(items, query.limit, rows[-1].last_activity if rows else None)


def _thread(row: ThreadSummary) -> ThreadOut:
    session = row.session
    return ThreadOut(
        session_id=session.id,
        title=session.title,
        source=session.source,
        model=session.model,
        topic=session.topic,
        discord_channel_id=_text_id(session.discord_channel_id),
        parent_channel_id=_text_id(session.parent_channel_id),
        messages=row.messages,
        archived_messages=row.archived_messages,
        created_at=session.created_at,
        updated_at=session.updated_at,
        closed_at=session.closed_at,
    )


async def list_threads(services: Services, query: ThreadsQuery) -> Page[ThreadOut, str]:
    """Conversations of a space or of one of its channels, most recently active first."""
    channel = None if query.channel is None else int(query.channel)
    rows = await services.repos.conversation_reads.threads(
        query.space,
        channel or None,
        every_channel=channel is None,
        limit=query.limit,
        before=query.before,
    )
    return Page.of(
        [_thread(row) for row in rows], query.limit, rows[-1].session.updated_at if rows else None
    )


def _verdict(stored: str | None) -> Verdict | None:
    """A stored approval as the API's choice (anything unknown reads as none)."""
    return next((verdict for verdict in VERDICTS if verdict == stored), None)


def _message(item: TranscriptMessage) -> TranscriptMessageOut:
    message = item.message
    return TranscriptMessageOut(
        id=message.id,
        role=message.role,
        content=message.content,
        author_id=message.author_id,
        author_name=message.author_name,
        discord_message_id=_text_id(message.discord_message_id),
        reply_to=message.reply_to,
        created_at=message.created_at,
        archived=message.archived_at is not None,
        archived_at=message.archived_at,
        memory_id=message.memory_id,
        tool_calls=[
            ToolCallOut(
                id=call.id,
                call_id=call.call_id,
                tool=call.tool,
                arguments=call.arguments,
                ok=call.ok,
                error=call.error,
                sources=[SourceOut(title=s.title, url=s.url) for s in call.sources],
                duration_ms=call.duration_ms,
                created_at=call.created_at,
                approval=_verdict(call.approval),
                approved_by=call.approved_by,
            )
            for call in item.tool_calls
        ],
    )


def _summary(item: SummaryRange) -> SummaryOut:
    memory = item.memory
    return SummaryOut(
        id=memory.id,
        level=memory.level,
        summary=memory.summary,
        created_at=memory.created_at,
        condensed_into=memory.condensed_into,
        first_message_id=item.first_message_id,
        last_message_id=item.last_message_id,
        messages=item.messages,
    )


async def get_transcript(
    services: Services, session_id: SessionId, query: TranscriptQuery
) -> TranscriptOut:
    """A session's messages in conversation order with tool calls, sources and summaries.

    Archived messages are included and marked; each answer lists the tool calls of its turn
    (ok or failed, with sources); `summaries` are those covering any message of this page.
    """
    session = await services.repos.sessions.get(ALL_SPACES, session_id)
    if session is None:
        raise not_found(f"Session {session_id!r}")
    page = await services.repos.conversation_reads.transcript(
        session.space_id,
        session.id,
        limit=query.limit,
        after_id=query.cursor,
        before_id=query.before,
        latest=query.latest,
    )
    if query.before is not None or query.latest:
        reads = services.repos.conversation_reads
        later = page.last_id is not None and await reads.has_later(
            session.space_id, session.id, page.last_id
        )
    else:
        later = len(page.items) == query.limit
    return TranscriptOut(
        items=[_message(item) for item in page.items],
        next_cursor=page.last_id if later else None,
        session=SessionOut.model_validate(session),
        summaries=[_summary(item) for item in page.summaries],
        earlier_cursor=page.earlier_id,
    )


def routes() -> list[Route]:
    """Conversation routes."""
    return [
        Route("GET", "/api/conversations/channels", list_channels),
        Route("GET", "/api/conversations/threads", list_threads),
        Route("GET", "/api/conversations/{session_id}/transcript", get_transcript),
    ]
