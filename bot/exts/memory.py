"""/memory show|forget: the long-term memory (summaries) of this thread's conversation;
/memory me show|forget|share|off|on|erase: what the bot keeps about the member using it."""

from __future__ import annotations

import discord
from discord import app_commands
from discord.ext import commands

from bot.bot import BotDeps
from bot.exts._blanked import BlankedInDiscord
from bot.exts._common import Reply, answer, clip, deps_of, session_here, space_here, ui_for
from bot.memory.member_memory import MemberFact
from bot.prompts.ui_text import UiText


def render_facts(facts: list[MemberFact], ui: UiText, *, enabled: bool) -> str:
    """The member's facts with their ids, and a line when their memory is off."""
    off = f"\n{ui.member_memory_is_off}" if not enabled else ""
    if not facts:
        return ui.member_memory_empty + off
    lines = [ui.member_memory_header.format(count=len(facts))]
    for fact in facts:
        mark = ui.member_fact_shared_mark if fact.shared else ""
        lines.append(f"`#{fact.id}` {fact.fact}{mark}")
    return clip("\n".join(lines) + off)


def parse_fact_id(text: str) -> int | None:
    """A fact id as typed ("12" or "#12"), or None."""
    value = text.strip().removeprefix("#")
    return int(value) if value.isdigit() and len(value) <= 18 else None


def _who(interaction: discord.Interaction) -> tuple[str, str]:
    """The space the command was used in and the member using it."""
    return space_here(interaction), str(interaction.user.id)


class Memory(commands.GroupCog, group_name="memory", group_description="What the bot remembers"):
    """Show or forget the summaries of this thread, and what is kept about you."""

    me = app_commands.Group(name="me", description="What the bot keeps about you here")

    def __init__(self, deps: BotDeps) -> None:
        self.deps = deps
        super().__init__()

    @app_commands.command(name="show", description="Show what the bot remembers of this thread")
    async def show(self, interaction: discord.Interaction) -> None:
        """The summaries in effect, oldest first."""

        async def work() -> Reply:
            ui = ui_for(self.deps)
            session = await session_here(self.deps, interaction)
            memories = await self.deps.services.repos.memories.live(session.space_id, session.id)
            if not memories:
                return Reply(ui.memory_empty)
            body = "\n\n".join(memory.summary.strip() for memory in memories)
            return Reply(clip(f"{ui.memory_header.format(count=len(memories))}\n{body}"))

        await answer(interaction, work())

    @app_commands.command(name="forget", description="Forget this thread's summaries")
    async def forget(self, interaction: discord.Interaction) -> None:
        """Delete the thread's summaries (the messages stay in the history)."""

        async def work() -> Reply:
            session = await session_here(self.deps, interaction)
            count = await self.deps.services.repos.memories.delete_for_session(
                session.space_id, session.id
            )
            return Reply(ui_for(self.deps).memory_forgotten.format(count=count))

        await answer(interaction, work())

    @me.command(name="show", description="What the bot keeps about you here, with ids")
    async def me_show(self, interaction: discord.Interaction) -> None:
        """The member's facts in this space, oldest first."""

        async def work() -> Reply:
            space, member = _who(interaction)
            members = self.deps.services.members
            facts = await members.list(space, member)
            enabled = await members.enabled(space, member)
            return Reply(render_facts(facts, ui_for(self.deps), enabled=enabled))

        await answer(interaction, work())

    @me.command(name="forget", description="Forget one fact about you (its id), or all")
    @app_commands.describe(which="A fact id from /memory me show, or 'all'")
    async def me_forget(self, interaction: discord.Interaction, which: str) -> None:
        """Forget one of the member's facts, or every one."""

        async def work() -> Reply:
            ui = ui_for(self.deps)
            space, member = _who(interaction)
            members = self.deps.services.members
            if which.strip().lower() == "all":
                count = await members.forget_all(space, member)
                return Reply(ui.member_facts_forgotten.format(count=count))
            fact_id = parse_fact_id(which)
            if fact_id is None:
                return Reply(ui.member_forget_usage)
            if await members.forget(space, member, fact_id):
                return Reply(ui.member_fact_forgotten.format(id=fact_id))
            return Reply(ui.member_fact_not_found.format(id=fact_id))

        await answer(interaction, work())

    @me.command(name="share", description="Show one fact about you to other members (or stop)")
    @app_commands.describe(fact_id="A fact id from /memory me show", shared="Shown to others")
    async def me_share(
        self, interaction: discord.Interaction, fact_id: int, shared: bool = True
    ) -> None:
        """Mark one of the member's facts shared, or theirs only."""

        async def work() -> Reply:
            ui = ui_for(self.deps)
            space, member = _who(interaction)
            if not await self.deps.services.members.share(space, member, fact_id, shared):
                return Reply(ui.member_fact_not_found.format(id=fact_id))
            text = ui.member_fact_shared if shared else ui.member_fact_unshared
            return Reply(text.format(id=fact_id))

        await answer(interaction, work())

    @me.command(name="off", description="Stop keeping anything about you here")
    async def me_off(self, interaction: discord.Interaction) -> None:
        """Switch the member's memory off in this space."""
        await self._switch(interaction, enabled=False)

    @me.command(name="on", description="Let the bot keep facts about you here again")
    async def me_on(self, interaction: discord.Interaction) -> None:
        """Switch the member's memory on in this space."""
        await self._switch(interaction, enabled=True)

    @me.command(name="erase", description="Erase everything kept about you here (confirm)")
    @app_commands.describe(confirm="True to erase; without it, what would be erased")
    async def me_erase(self, interaction: discord.Interaction, confirm: bool = False) -> None:
        """Erase the member from this space: facts, their messages' text, their summaries."""

        async def work() -> Reply:
            ui = ui_for(self.deps)
            if not confirm:
                return Reply(ui.member_erase_confirm)
            space, member = _who(interaction)
            erased = await self.deps.services.members.erase(space, member)
            return Reply(
                ui.member_erased.format(
                    facts=erased.facts, messages=erased.messages, summaries=erased.summaries
                )
            )

        await answer(interaction, work())

    async def _switch(self, interaction: discord.Interaction, *, enabled: bool) -> None:
        async def work() -> Reply:
            ui = ui_for(self.deps)
            space, member = _who(interaction)
            await self.deps.services.members.set_enabled(space, member, enabled)
            return Reply(ui.member_memory_on if enabled else ui.member_memory_off)

        await answer(interaction, work())


async def setup(bot: commands.Bot) -> None:
    """Extension entry point; after an erase or a forget the bot edits what it showed."""
    deps = deps_of(bot)
    blanked = BlankedInDiscord(bot, deps.services.tasks)
    deps.services.members.add_blank_listener(blanked.on_blanked)
    await bot.add_cog(Memory(deps))
