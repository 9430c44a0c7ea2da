"""What files become in a conversation (bot/chat/attachments.py), on a real SQLite file."""

from __future__ import annotations

import io
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from PIL import Image

from bot.chat.attachments import MAX_INLINE_TEXT_BYTES, AttachmentIntake, PreparedFiles, classify
from bot.config import Settings
from bot.store import Repositories
from bot.store.engine.database import Database
from tests.conftest import LOCAL


@pytest.fixture
async def repos(suite_database_url: str) -> AsyncIterator[Repositories]:
    """Repositories over a fresh database with one session."""
    db = await Database.connect(suite_database_url)
    try:
        yield Repositories.over(db)
    finally:
        await db.close()


def _intake(repos: Repositories, **overrides: Any) -> AttachmentIntake:
    settings = Settings(_env_file=None, **{"language": "en", **overrides})  # type: ignore[call-arg]
    return AttachmentIntake(repos.attachments, lambda: settings)


def test_files_are_classified_by_type_then_name() -> None:
    assert classify("report.PDF", None) == "pdf"
    assert classify("notes", "text/markdown; charset=utf-8") == "text"
    assert classify("photo.webp", "application/octet-stream") == "image"
    assert classify("archive.zip", "application/zip") == "other"


async def test_documents_are_stored_and_shown_to_the_model(repos: Repositories) -> None:
    session = await repos.sessions.create(LOCAL, title="files")
    intake, out = _intake(repos), PreparedFiles()
    await intake.add_document(
        out,
        kind="text",
        name="a.txt",
        content_type=None,
        data=b"hello",
        space=LOCAL,
        session_id=session.id,
    )
    await intake.add_document(
        out,
        kind="pdf",
        name="b.pdf",
        content_type=None,
        data=b"%PDF",
        space=LOCAL,
        session_id=session.id,
    )
    big = b"x" * (MAX_INLINE_TEXT_BYTES + 1)
    await intake.add_document(
        out,
        kind="text",
        name="c.log",
        content_type=None,
        data=big,
        space=LOCAL,
        session_id=session.id,
    )
    ids = [block.split()[0].removeprefix("[attachment:") for block in out.blocks]
    assert out.blocks == [
        f"[attachment:{ids[0]} a.txt (text/plain, 5 B)]\n----- begin a.txt -----\nhello\n"
        "----- end a.txt -----",
        f'[attachment:{ids[1]} b.pdf (application/pdf, 4 B) — read it with pdf_to_text("'
        f'attachment:{ids[1]}")]',
        f"[attachment:{ids[2]} c.log (text/plain, 20.0 KB) — stored; too large or not UTF-8, "
        "so not included here]",
    ]
    stored = await repos.attachments.get(LOCAL, session.id, ids[1])
    assert stored is not None and stored[1] == b"%PDF"
    assert out.text_for_model("see files").startswith("see files\n\n[attachment:")


async def test_the_model_text_follows_the_language_setting(repos: Repositories) -> None:
    session = await repos.sessions.create(LOCAL, title="files")
    intake, out = _intake(repos, language="ja"), PreparedFiles()
    await intake.add_document(
        out,
        kind="pdf",
        name="b.pdf",
        content_type=None,
        data=b"%PDF",
        space=LOCAL,
        session_id=session.id,
    )
    intake.note_unseen_image(out, "cat.png")
    assert re.fullmatch(
        r'\[attachment:\w+ b\.pdf .*pdf_to_text\("attachment:\w+"\) で読めます\]', out.blocks[0]
    )
    assert out.blocks[1] == "[画像 cat.png は表示されません：現在のモデルは画像を扱えません]"


async def test_images_are_resized_for_vision_models(repos: Repositories) -> None:
    intake, out = _intake(repos, llm_vision=True), PreparedFiles()
    assert intake.can_see_images()
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), "red").save(buffer, format="PNG")
    assert await intake.add_image(out, name="red.png", data=buffer.getvalue())
    assert not await intake.add_image(out, name="junk.png", data=b"not an image")
    assert len(out.images) == 1 and out.blocks == ["[image red.png attached]"]
    assert not _intake(repos).can_see_images()
