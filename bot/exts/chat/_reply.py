"""Streams one turn's events into Discord messages (helper of the chat extension).

A reader applies events to a `ReplyDraft`; a writer sends/edits messages when the
`StreamCadence` allows: first text at once, edits at a bounded rate, the final text as soon as
the stream ends. The typing indicator runs until the first message is out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

import discord

from bot.exts._text import ReplyDraft, receipt_line, render_sources
from bot.exts.chat._streaming import StreamCadence
from bot.prompts.ui_text import UiText
from bot.turn.events import (
    ChunkEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    RememberedEvent,
    SourcesEvent,
    ToolEvent,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReplyOutcome:
    """How a reply went: its messages (ids), the writes it made, whether it completed."""

    message_ids: tuple[int, ...]
    writes: int
    completed: bool
    failed: bool


class ReplyRenderer:
    """Renders one turn into `channel`."""

    def __init__(
        self,
        channel: discord.abc.Messageable,
        *,
        cadence: StreamCadence,
        ui: UiText,
        reference: discord.Message | None = None,
        notices: Sequence[str] = (),
    ) -> None:
        self._channel = channel
        self._cadence = cadence
        self._ui = ui
        self._reference = reference
        self._draft = ReplyDraft()
        self._sources: list[dict[str, str]] = []
        self._receipts: list[str] = []
        self._sent: list[discord.Message] = []
        self._shown: list[str] = []
        self._changed = asyncio.Event()
        self._ended = asyncio.Event()
        self._first_write = asyncio.Event()
        self._broken = False
        self._failed = False
        self._completed = False
        for notice in notices:
            self._draft.add_text(f"-# {notice}\n")

    async def render(self, events: AsyncIterator[Event]) -> ReplyOutcome:
        """Consume `events` to the end, keeping the messages up to date."""
        typing = asyncio.create_task(self._typing(), name="reply-typing")
        writer = asyncio.create_task(self._write_loop(), name="reply-writer")
        if self._draft.has_text:
            self._changed.set()
        try:
            async for event in events:
                self._apply(event)
        except Exception:
            log.exception("reading the turn's events failed")
            self._failed = True
            error = self._ui.error_prefix + self._ui.generic_error
            self._draft.finish(notes=self._notes, error=error)
        finally:
            if not self._draft.finished:
                self._draft.finish(notes=self._notes)
            self._changed.set()
            self._ended.set()
            try:
                await writer
            finally:
                typing.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await typing
        return ReplyOutcome(
            tuple(m.id for m in self._sent), self._cadence.writes, self._completed, self._failed
        )

    @property
    def _notes(self) -> str:
        """The receipts of this turn's remembered (or not) facts, one line each."""
        return "\n".join(self._receipts)

    def _apply(self, event: Event) -> None:
        match event:
            case ChunkEvent(text=text):
                self._draft.add_text(text)
            case ToolEvent():
                self._draft.tool(event.id, event.icon, event.label or event.name, event.status)
            case SourcesEvent(sources=sources):
                self._sources = list(sources)
            case RememberedEvent():
                self._receipts.append(receipt_line(event, self._ui))
                return  # shown with the answer once it ends
            case DoneEvent():
                self._completed = True
                header = self._ui.sources
                self._draft.finish(notes=self._notes, sources=render_sources(self._sources, header))
            case ErrorEvent(message=message, model_down=model_down):
                self._failed = True
                # The owner's detail (address, setting) is in the log and the readiness page.
                shown = self._ui.model_unavailable if model_down else message
                # A fact saved before the failure stays saved: its receipt still shows.
                self._draft.finish(notes=self._notes, error=self._ui.error_prefix + shown)
            case _:
                return
        self._changed.set()

    async def _typing(self) -> None:
        try:
            async with self._channel.typing():
                await self._first_write.wait()
        except discord.HTTPException as exc:
            log.debug("typing indicator failed: %s", exc)

    async def _write_loop(self) -> None:
        while not self._broken:
            await self._changed.wait()
            final = self._draft.finished
            if self._draft.pages() == self._shown:
                self._changed.clear()  # nothing new to show: spend no write, no wait
                if final:
                    return
                continue
            delay = self._cadence.delay(final=final)
            if delay > 0:
                if final:
                    await asyncio.sleep(delay)  # a rate-limit timer, not synchronisation
                else:
                    with contextlib.suppress(TimeoutError):
                        # Wake early when the stream ends: the final text need not wait.
                        await asyncio.wait_for(self._ended.wait(), delay)
                continue
            self._changed.clear()
            await self._sync(self._draft.pages(), final=final)
            if final:
                return

    async def _sync(self, pages: list[str], *, final: bool) -> None:
        """Make the messages show `pages`: edit changed ones, send new ones."""
        try:
            for index, page in enumerate(pages):
                if index < len(self._shown) and self._shown[index] == page:
                    continue
                if self._cadence.writes and (wait := self._cadence.delay(final=True)) > 0:
                    await asyncio.sleep(wait)  # the channel window, between pages of one flush
                if index < len(self._sent):
                    await self._sent[index].edit(content=page, suppress=True)
                    self._shown[index] = page
                else:
                    self._sent.append(await self._send(page, first=index == 0))
                    self._shown.append(page)
                self._cadence.record()
                self._first_write.set()
            if final:
                for extra in self._sent[len(pages) :]:
                    await extra.delete()
                del self._sent[len(pages) :]
                del self._shown[len(pages) :]
        except discord.HTTPException as exc:
            log.warning("could not update the reply in channel %s: %s", self._channel, exc)
            self._broken = True
            self._first_write.set()

    async def _send(self, page: str, *, first: bool) -> discord.Message:
        if first and self._reference is not None:
            reference = self._reference.to_reference(fail_if_not_exists=False)
            return await self._channel.send(
                page, suppress_embeds=True, reference=reference, mention_author=False
            )
        return await self._channel.send(page, suppress_embeds=True)
