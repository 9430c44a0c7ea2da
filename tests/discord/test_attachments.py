"""Files on messages: PDFs read through pdf_to_text, text inlined, images for vision models."""

from __future__ import annotations

import base64
import io
import re
from typing import Any

from PIL import Image

from bot.tools.builtin import build_tool_deps, register_builtin_tools
from tests.discord.conftest import WAIT, WorldFactory
from tests.fakes.llm_server import RecordedRequest, Text, ToolCalls
from tests.tools.pdfgen import make_pdf


def _last_user_text(request: RecordedRequest) -> str:
    return str([m for m in request.messages if m["role"] == "user"][-1]["content"])


async def test_pdf_attachment_is_read_through_pdf_to_text(world: WorldFactory) -> None:
    pdf = make_pdf(["Quarterly report. The code word is HERON-42.", "Second page."])
    refs: list[str] = []

    def ask_for_the_pdf(request: RecordedRequest) -> ToolCalls:
        found = re.search(r"attachment:([0-9a-f]+)", _last_user_text(request))
        assert found is not None
        refs.append(found.group(0))
        return ToolCalls([("pdf_to_text", {"url_or_path": found.group(0)})])

    async with world() as w:
        deps = build_tool_deps(w.services.settings, w.services.repos.attachments)
        if "pdf_to_text" not in w.services.registry.names():  # services may already have it
            register_builtin_tools(w.services.registry, deps)
        try:
            w.llm.script(ask_for_the_pdf, Text("The code word is HERON-42.", chunks=1))
            sent = await w.server.inject_message(
                "What is the code word?", attachments=[("report.pdf", pdf, "application/pdf")]
            )
            thread_id = await w.wait_thread(sent)
            await w.server.wait_for(
                lambda: (
                    (m := w.bot_messages(thread_id))
                    and m[-1].content == "The code word is HERON-42."
                )
            )
            await w.settle()
        finally:
            await deps.close()
        first, second = w.llm.chat_requests
        assert f'pdf_to_text("{refs[0]}")' in _last_user_text(first)
        tool_results = [m["content"] for m in second.messages if m["role"] == "tool"]
        assert len(tool_results) == 1 and "HERON-42" in tool_results[0]
        session = await w.services.repos.sessions.open_for_channel(w.space, thread_id)
        assert session is not None
        stored = await w.services.repos.attachments.list_for_session(session.space_id, session.id)
        assert [(a.filename, a.content_type, a.size) for a in stored] == [
            ("report.pdf", "application/pdf", len(pdf))
        ]
        assert refs == [f"attachment:{stored[0].id}"]


async def test_text_is_inlined_and_images_are_skipped_for_text_only_models(
    world: WorldFactory,
) -> None:
    async with world(llm_vision=False) as w:
        w.llm.script(Text("Noted.", chunks=1))
        files: list[Any] = [
            ("notes.txt", b"buy rice\nbuy tea", "text/plain"),
            ("photo.png", b"\x89PNG not really", "image/png"),
            ("tool.exe", b"MZ", "application/octet-stream"),
        ]
        sent = await w.server.inject_message("see attached", attachments=files)
        thread_id = await w.wait_thread(sent)
        reply = await w.server.wait_for(
            lambda: (m := w.bot_messages(thread_id)) and m[-1].content.endswith("Noted.") and m[-1]
        )
        await w.settle()
        assert reply.content.startswith("-# 🖼️ photo.png skipped: the current model cannot see")
        assert "-# 📎 tool.exe skipped" in reply.content
        text = _last_user_text(w.llm.chat_requests[0])
        assert "buy rice\nbuy tea" in text and "notes.txt (text/plain" in text
        assert "photo.png not shown" in text
        assert all("images" not in m for m in w.llm.chat_requests[0].messages)


async def test_images_go_resized_to_vision_models(world: WorldFactory) -> None:
    image = io.BytesIO()
    Image.new("RGB", (2048, 1024), (200, 30, 30)).save(image, format="PNG")
    async with world(llm_vision=True) as w:
        w.llm.script(Text("A red rectangle.", chunks=1))
        sent = await w.server.inject_message(
            "what is this?", attachments=[("red.png", image.getvalue(), "image/png")]
        )
        thread_id = await w.wait_thread(sent)
        await w.wait_text(thread_id, "A red rectangle.", timeout=WAIT)
        user = [m for m in w.llm.chat_requests[0].messages if m["role"] == "user"][-1]
        (sent_image,) = user["images"]
        with Image.open(io.BytesIO(base64.b64decode(sent_image))) as seen:
            assert seen.size == (1024, 512)
