"""Files on a user's message: text/PDF stored as session attachments, images for vision models.

Helper of the chat extension (not an extension itself).
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Literal

import discord

from bot.config import Settings
from bot.exts._text import human_size
from bot.prompts.ui_text import UiText
from bot.store.attachments import AttachmentRepository
from bot.tools.image import ImageError, resize_image

log = logging.getLogger(__name__)

MAX_IMAGE_BYTES = 8 * 1024 * 1024
MAX_DOCUMENT_BYTES = 10 * 1024 * 1024
MAX_INLINE_TEXT_BYTES = 20 * 1024
MAX_IMAGES = 4

Kind = Literal["image", "pdf", "text", "other"]

_TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/x-yaml",
        "application/yaml",
        "application/toml",
        "application/javascript",
        "application/x-sh",
        "application/sql",
    }
)
_TEXT_SUFFIXES = frozenset(
    ".txt .md .markdown .rst .csv .tsv .json .jsonl .yaml .yml .toml .ini .cfg .conf .log .xml "
    ".html .htm .css .js .ts .py .rb .go .rs .java .kt .c .h .cpp .hpp .cs .php .sh .sql .tex "
    ".srt .vtt".split()
)
_IMAGE_SUFFIXES = frozenset(".png .jpg .jpeg .gif .webp".split())


def classify(filename: str, content_type: str | None) -> Kind:
    """What a file is, from its declared type and, failing that, its name."""
    ctype = (content_type or "").split(";", 1)[0].strip().lower()
    suffix = PurePosixPath(filename.lower()).suffix
    if ctype == "application/pdf" or suffix == ".pdf":
        return "pdf"
    if ctype.startswith("image/") or suffix in _IMAGE_SUFFIXES:
        return "image"
    if ctype.startswith("text/") or ctype in _TEXT_TYPES or suffix in _TEXT_SUFFIXES:
        return "text"
    return "other"


@dataclass
class PreparedFiles:
    """What the files add to a turn: text for the model, images, and notices for the user."""

    blocks: list[str] = field(default_factory=list)
    images: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    def text_for_model(self, user_text: str) -> str:
        """The user's text followed by the attachment blocks."""
        return "\n\n".join(part for part in (user_text, *self.blocks) if part)


def _reference_line(attachment_id: str, name: str, ctype: str, size: int, hint: str) -> str:
    return f"[attachment:{attachment_id} {name} ({ctype}, {human_size(size)}){hint}]"


class AttachmentReader:
    """Downloads (size-capped), stores and converts the files of one message."""

    def __init__(self, repo: AttachmentRepository, settings: Callable[[], Settings]) -> None:
        self._repo = repo
        self._settings = settings

    async def prepare(
        self,
        attachments: Sequence[discord.Attachment],
        session_id: str,
        ui: UiText,
    ) -> PreparedFiles:
        """Store documents under `session_id`, resize images, collect notices."""
        out = PreparedFiles()
        settings = self._settings()
        for attachment in attachments:
            name = attachment.filename
            kind = classify(name, attachment.content_type)
            if kind == "other":
                out.notices.append(ui.file_unsupported.format(name=name))
                continue
            if kind == "image":
                await self._image(attachment, settings, ui, out)
                continue
            if attachment.size > MAX_DOCUMENT_BYTES:
                out.notices.append(
                    ui.file_too_large.format(
                        name=name,
                        size=human_size(attachment.size),
                        limit=human_size(MAX_DOCUMENT_BYTES),
                    )
                )
                continue
            data = await self._download(attachment, ui, out)
            if data is None:
                continue
            await self._document(
                kind=kind,
                name=name,
                content_type=attachment.content_type,
                data=data,
                session_id=session_id,
                out=out,
            )
        return out

    async def _download(
        self, attachment: discord.Attachment, ui: UiText, out: PreparedFiles
    ) -> bytes | None:
        try:
            return await attachment.read()
        except (discord.HTTPException, discord.NotFound) as exc:
            log.warning("could not download attachment %s: %s", attachment.id, exc)
            out.notices.append(ui.file_failed.format(name=attachment.filename))
            return None

    async def _document(
        self,
        *,
        kind: Kind,
        name: str,
        content_type: str | None,
        data: bytes,
        session_id: str,
        out: PreparedFiles,
    ) -> None:
        default = "application/pdf" if kind == "pdf" else "text/plain"
        ctype = (content_type or default).split(";", 1)[0].strip() or default
        stored = await self._repo.add(session_id, name, ctype, data)
        if kind == "pdf":
            hint = f' — read it with pdf_to_text("attachment:{stored.id}")'
            out.blocks.append(_reference_line(stored.id, name, ctype, len(data), hint))
            return
        text = None
        if len(data) <= MAX_INLINE_TEXT_BYTES:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = None
        if text is None:
            hint = " — stored; too large or not UTF-8, so not included here"
            out.blocks.append(_reference_line(stored.id, name, ctype, len(data), hint))
            return
        line = _reference_line(stored.id, name, ctype, len(data), "")
        out.blocks.append(f"{line}\n----- begin {name} -----\n{text}\n----- end {name} -----")

    async def _image(
        self,
        attachment: discord.Attachment,
        settings: Settings,
        ui: UiText,
        out: PreparedFiles,
    ) -> None:
        name = attachment.filename
        if not settings.llm_vision:
            out.notices.append(ui.image_skipped.format(name=name))
            out.blocks.append(f"[image {name} not shown: the current model cannot see images]")
            return
        if len(out.images) >= MAX_IMAGES:
            out.notices.append(ui.too_many_images.format(name=name, limit=MAX_IMAGES))
            return
        if attachment.size > MAX_IMAGE_BYTES:
            out.notices.append(
                ui.file_too_large.format(
                    name=name,
                    size=human_size(attachment.size),
                    limit=human_size(MAX_IMAGE_BYTES),
                )
            )
            return
        data = await self._download(attachment, ui, out)
        if data is None:
            return
        try:
            # Pillow decoding is CPU work: keep it off the event loop.
            resized, _mime = await asyncio.to_thread(
                resize_image, data, max_pixels=settings.max_image_pixels
            )
        except ImageError:
            out.notices.append(ui.image_unreadable.format(name=name))
            return
        out.images.append(base64.b64encode(resized).decode("ascii"))
        out.blocks.append(f"[image {name} attached]")
