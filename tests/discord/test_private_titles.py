"""A thread is named after its first message, and the name is shown with every recall hit of
the thread, to every member: a message that stays out of recall (a request to remember, or its
author's memory is off) names neither the Discord thread nor the stored conversation."""

from __future__ import annotations

from tests.discord.conftest import World, WorldFactory
from tests.fakes.discord_server import FakeUser
from tests.fakes.llm_server import Text

EMU = "Zorblax"


async def _open(w: World, text: str, author: FakeUser) -> tuple[str, str]:
    """`author` mentions the bot with `text`; the new thread's name and stored title."""
    w.llm.script(Text("OK.", chunks=1))
    sent = await w.server.inject_message(text, author=author, mention_bot=True)
    thread = await w.wait_thread(sent)
    await w.wait_text(thread, "OK.")
    session = await w.services.repos.sessions.open_for_channel(w.space, thread)
    assert session is not None
    return w.server.channel(thread).name, session.title


async def test_a_request_to_remember_names_no_thread(world: WorldFactory) -> None:
    async with world() as w:
        x = w.server.user
        name, title = await _open(w, f"remember that my emu is called {EMU}", x)
        assert EMU not in name and EMU not in title
        assert name == title == f"Chat with {x.global_name or x.username}"
        # Any other first message still names its thread.
        name, title = await _open(w, f"My emu {EMU} likes grapes", x)
        assert name == title == f"My emu {EMU} likes grapes"


async def test_a_member_with_memory_off_names_no_thread(world: WorldFactory) -> None:
    async with world() as w:
        x, y = w.server.user, w.server.add_user("bob")
        await w.services.members.set_enabled(w.space, str(x.id), False)
        name, title = await _open(w, f"My emu {EMU} likes grapes", x)
        assert EMU not in name and EMU not in title
        name, _ = await _open(w, f"My emu {EMU} likes grapes", y)
        assert name == f"My emu {EMU} likes grapes", "another member's switch is their own"
