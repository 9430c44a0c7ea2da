"""Adding a tool is its code plus one registration line: its icon, failures and sources then
show in every front end — the real discord.py client on the loopback Discord, and the terminal."""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any

from bot.chat.terminal import TerminalChat
from bot.errors import ToolError
from bot.prompts.ui_text import ui_text
from bot.services import Services
from bot.tools.registry import Source, ToolDisplay, ToolRegistry, ToolResult
from tests.discord.conftest import WAIT, WorldFactory
from tests.fakes.llm_server import FakeLLMServer, Text, ToolCalls

# ----------------------------------------------------------------- the new tool, as a module would

STATIONS = {"Kyoto": "https://weather.example/kyoto", "Osaka": "https://weather.example/osaka"}


class Forecasts:
    """A weather tool; Osaka's station answers only once `release` is set."""

    def __init__(self) -> None:
        self.release = asyncio.Event()

    async def forecast(self, city: str) -> str:
        """Tomorrow's weather for a city.

        Args:
            city: The city's name.
        """
        if city not in STATIONS:
            raise ToolError(f"No weather station in {city}.")
        if city == "Osaka":
            await asyncio.wait_for(self.release.wait(), WAIT)
        return json.dumps({"city": city, "sky": "sunny", "link": STATIONS[city]})


def forecast_label(args: dict[str, Any]) -> str:
    """UI label of a forecast call."""
    return f"forecast {args.get('city', '?')}"


def forecast_sources(_args: dict[str, Any], result: ToolResult) -> list[Source]:
    """The station page a forecast came from."""
    report = json.loads(result.text)
    return [Source(f"{report['city']} forecast", report["link"])]


def register_forecast(registry: ToolRegistry, forecasts: Forecasts) -> None:
    """The one registration line."""
    registry.register(
        forecasts.forecast, display=ToolDisplay("🌈", forecast_label), sources=forecast_sources
    )


# ----------------------------------------------------------------- the front ends


def tool_messages(request: Any) -> list[str]:
    return [m["content"] for m in request.messages if m["role"] == "tool"]


async def test_a_new_tool_shows_its_icon_failure_and_sources_on_discord(
    world: WorldFactory,
) -> None:
    forecasts = Forecasts()
    async with world() as w:
        register_forecast(w.services.registry, forecasts)
        w.llm.script(
            ToolCalls([("forecast", {"city": "Atlantis"}), ("forecast", {"city": "Kyoto"})]),
            ToolCalls([("forecast", {"city": "Osaka"})]),
            Text("Sunny in Kyoto and Osaka; Atlantis has no station.", chunks=3),
        )
        sent = await w.server.inject_message("Weather tomorrow in Atlantis, Kyoto and Osaka?")
        thread_id = await w.wait_thread(sent)
        status = "-# 🌈 forecast Atlantis … ✗\n-# 🌈 forecast Kyoto … ✓\n-# 🌈 forecast Osaka …"
        working = await w.server.wait_for(
            lambda: next((m for m in w.bot_messages(thread_id) if m.content == status), None)
        )
        forecasts.release.set()
        final = await w.wait_text(
            thread_id,
            "Sunny in Kyoto and Osaka; Atlantis has no station.\n\n**Sources**\n"
            "1. Kyoto forecast — <https://weather.example/kyoto>\n"
            "2. Osaka forecast — <https://weather.example/osaka>",
        )
        assert final.id == working.id, "the status message becomes the answer"
        assert len(w.bot_messages(thread_id)) == 1
        failed, kyoto = tool_messages(w.llm.chat_requests[1])
        assert failed.endswith("\nNo weather station in Atlantis."), "the error text, verbatim"
        assert '"sky": "sunny"' in kyoto


async def test_a_new_tool_shows_its_icon_and_failure_in_the_terminal(
    services: Services, llm: FakeLLMServer
) -> None:
    forecasts = Forecasts()
    forecasts.release.set()
    register_forecast(services.registry, forecasts)
    llm.script(
        ToolCalls([("forecast", {"city": "Atlantis"}), ("forecast", {"city": "Kyoto"})]),
        Text("Sunny in Kyoto; Atlantis has no station."),
    )
    out, err = io.StringIO(), io.StringIO()
    chat = TerminalChat(
        services.engine,
        ui=ui_text("en"),
        space_id="local:local",
        stdin=io.StringIO("Weather tomorrow in Atlantis and Kyoto?\n"),
        stdout=out,
        stderr=err,
        interactive=False,
    )
    assert await chat.run() == 0
    assert out.getvalue() == "Sunny in Kyoto; Atlantis has no station.\n"
    assert err.getvalue().splitlines() == [
        "🌈 forecast Atlantis …",
        "   forecast Atlantis ✗",
        "🌈 forecast Kyoto …",
        "   forecast Kyoto ✓",
    ]
    failed, _ = tool_messages(llm.chat_requests[1])
    assert failed.endswith("\nNo weather station in Atlantis.")
