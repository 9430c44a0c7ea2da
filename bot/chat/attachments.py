"""Files given with a user's message: documents stored for the tools, text blocks for the model.

Front ends (the Discord chat) download the files and tell their users what was skipped; what a
file becomes in the conversation is decided here.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Literal

from bot.config import Settings
from bot.prompts import prompts_for
from bot.store.repos.attachments import AttachmentRepository
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


def human_size(size: int) -> str:
    """1536 → "1.5 KB"."""
    value = float(size)
    for unit in ("B", "KB", "MB"):
        if value < 1024 or unit == "MB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} MB"  # pragma: no cover


@dataclass
class PreparedFiles:
    """What the files add to a turn: text for the model, images, and notices for the user."""

    blocks: list[str] = field(default_factory=list)
    images: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    def text_for_model(self, user_text: str) -> str:
        """The user's text followed by the attachment blocks."""
        return "\n\n".join(part for part in (user_text, *self.blocks) if part)


class AttachmentIntake:
    """Turns downloaded files into stored attachments, model text blocks and images."""

    def __init__(self, repo: AttachmentRepository, settings: Callable[[], Settings]) -> None:
        self._repo = repo
        self._settings = settings

    async def add_document(
        self,
        out: PreparedFiles,
        *,
        kind: Kind,
        name: str,
        content_type: str | None,
        data: bytes,
        space: str,
        session_id: str,
    ) -> None:
        """Store a text/PDF file under `session_id` of `space`; small UTF-8 text is shown to
        the model."""
        prompts = prompts_for(self._settings().language)
        default = "application/pdf" if kind == "pdf" else "text/plain"
        ctype = (content_type or default).split(";", 1)[0].strip() or default
        stored = await self._repo.add(space, session_id, name, ctype, data)

        def reference(hint: str) -> str:
            return prompts.format(
                "attachment_reference",
                id=stored.id,
                name=name,
                type=ctype,
                size=human_size(len(data)),
                hint=hint,
            )

        if kind == "pdf":
            out.blocks.append(reference(prompts.format("attachment_pdf_hint", id=stored.id)))
            return
        text = None
        if len(data) <= MAX_INLINE_TEXT_BYTES:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = None
        if text is None:
            out.blocks.append(reference(prompts["attachment_not_inlined_hint"]))
            return
        out.blocks.append(
            prompts.format("attachment_inline", reference=reference(""), name=name, text=text)
        )

    def can_see_images(self) -> bool:
        """True when the current model takes images."""
        return self._settings().llm_vision

    def note_unseen_image(self, out: PreparedFiles, name: str) -> None:
        """Tell the model an image was sent that it cannot see."""
        prompts = prompts_for(self._settings().language)
        out.blocks.append(prompts.format("image_not_shown", name=name))

    async def add_image(self, out: PreparedFiles, *, name: str, data: bytes) -> bool:
        """Resize an image for the model and attach it; False when it is not a readable image."""
        settings = self._settings()
        try:
            # Pillow decoding is CPU work: keep it off the event loop.
            resized, _mime = await asyncio.to_thread(
                resize_image, data, max_pixels=settings.max_image_pixels
            )
        except ImageError:
            return False
        out.images.append(base64.b64encode(resized).decode("ascii"))
        out.blocks.append(prompts_for(settings.language).format("image_attached", name=name))
        return True
