"""/tools: what the bot can use — built-in tools, and MCP servers with their state."""

from __future__ import annotations

import discord
from discord import app_commands
from discord.ext import commands

from bot.bot import BotDeps
from bot.exts._common import Reply, answer, clip, deps_of, ui_for

STATE_ICONS = {"connected": "🟢", "connecting": "🟡", "down": "🔴", "disabled": "⚪"}


def render_tools(deps: BotDeps) -> str:
    """A Markdown list of the tools and MCP servers."""
    registry = deps.services.registry
    builtin: list[str] = []
    by_server: dict[str, list[str]] = {}
    for name in registry.names():
        tool = registry.get(name)
        if tool is None:
            continue
        if tool.source == "builtin":
            builtin.append(f"`{name}`")
        else:
            by_server.setdefault(tool.source.removeprefix("mcp:"), []).append(f"`{name}`")
    ui = ui_for(deps)
    lines = [f"**{ui.tools_builtin}**", ", ".join(builtin) or "-"]
    statuses = deps.services.mcp.status()
    if statuses or deps.services.mcp.config_error:
        lines.append(f"**{ui.tools_mcp}**")
    for status in statuses:
        icon = STATE_ICONS.get(status.state, "•")
        tools = ", ".join(by_server.get(status.name, [])) or "-"
        error = f" — {status.error}" if status.error else ""
        lines.append(
            f"{icon} **{status.name}** ({status.transport}, {status.state}{error}): {tools}"
        )
    if deps.services.mcp.config_error:
        lines.append(f"⚠️ {deps.services.mcp.config_error}")
    return clip("\n".join(lines))


class Tools(commands.Cog):
    """Lists the tools the model can call."""

    def __init__(self, deps: BotDeps) -> None:
        self.deps = deps

    @app_commands.command(name="tools", description="Show the tools the bot can use")
    async def tools(self, interaction: discord.Interaction) -> None:
        """Built-in tools and MCP servers."""

        async def work() -> Reply:
            return Reply(render_tools(self.deps))

        await answer(interaction, work())


async def setup(bot: commands.Bot) -> None:
    """Extension entry point."""
    await bot.add_cog(Tools(deps_of(bot)))
