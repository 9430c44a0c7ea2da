"""Files on a user's message, the Discord part: download (size-capped) and tell the user.

What a file becomes in the conversation is bot/chat/attachments.py's job. Helper of the chat
extension (not an extension itself).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import discord

from bot.chat.attachments import (
    MAX_DOCUMENT_BYTES,
    MAX_IMAGE_BYTES,
    MAX_IMAGES,
    AttachmentIntake,
    PreparedFiles,
    classify,
    human_size,
)
from bot.prompts.ui_text import UiText
from bot.store.repos.sessions import Session

log = logging.getLogger(__name__)


class AttachmentReader:
    """Downloads the files of one message and hands them to the intake, collecting notices."""

    def __init__(self, intake: AttachmentIntake) -> None:
        self._intake = intake

    async def prepare(
        self,
        attachments: Sequence[discord.Attachment],
        session: Session,
        ui: UiText,
    ) -> PreparedFiles:
        """Store documents under `session` (in its space), resize images, collect notices."""
        out = PreparedFiles()
        for attachment in attachments:
            name = attachment.filename
            kind = classify(name, attachment.content_type)
            if kind == "other":
                out.notices.append(ui.file_unsupported.format(name=name))
                continue
            if kind == "image":
                await self._image(attachment, ui, out)
                continue
            if self._too_large(attachment, MAX_DOCUMENT_BYTES, ui, out):
                continue
            data = await self._download(attachment, ui, out)
            if data is None:
                continue
            await self._intake.add_document(
                out,
                kind=kind,
                name=name,
                content_type=attachment.content_type,
                data=data,
                space=session.space_id,
                session_id=session.id,
            )
        return out

    @staticmethod
    def _too_large(
        attachment: discord.Attachment, limit: int, ui: UiText, out: PreparedFiles
    ) -> bool:
        if attachment.size <= limit:
            return False
        out.notices.append(
            ui.file_too_large.format(
                name=attachment.filename,
                size=human_size(attachment.size),
                limit=human_size(limit),
            )
        )
        return True

    async def _download(
        self, attachment: discord.Attachment, ui: UiText, out: PreparedFiles
    ) -> bytes | None:
        try:
            return await attachment.read()
        except (discord.HTTPException, discord.NotFound) as exc:
            log.warning("could not download attachment %s: %s", attachment.id, exc)
            out.notices.append(ui.file_failed.format(name=attachment.filename))
            return None

    async def _image(self, attachment: discord.Attachment, ui: UiText, out: PreparedFiles) -> None:
        name = attachment.filename
        if not self._intake.can_see_images():
            out.notices.append(ui.image_skipped.format(name=name))
            self._intake.note_unseen_image(out, name)
            return
        if len(out.images) >= MAX_IMAGES:
            out.notices.append(ui.too_many_images.format(name=name, limit=MAX_IMAGES))
            return
        if self._too_large(attachment, MAX_IMAGE_BYTES, ui, out):
            return
        data = await self._download(attachment, ui, out)
        if data is None:
            return
        if not await self._intake.add_image(out, name=name, data=data):
            out.notices.append(ui.image_unreadable.format(name=name))
