"""read_kb_file: a knowledge-base file by its path, paged, only where the space may see it."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from bot.services import ServiceOptions, Services, open_services
from bot.tools.kb_tools import continuation
from bot.tools.paging import parse_paged_result, parse_token
from bot.tools.room import ResultRoom
from bot.turn.tool_result import ToolResult
from tests.conftest import SettingsFactory

GUILD = "guild:42"
OTHER = "guild:7"


async def read(
    services: Services, space: str, arguments: dict[str, object], room: object = None
) -> ToolResult:
    """A call as the engine makes it: space (and room) injected."""
    injected = {"space_id": space, "result_room": room}
    return await services.registry.execute("read_kb_file", arguments, injected=injected)


async def test_reads_a_file_whole_by_its_path_in_pages_and_only_where_it_is_visible(
    make_settings: SettingsFactory, service_options: ServiceOptions, tmp_path: Path
) -> None:
    settings = make_settings()
    kb = settings.kb_dir
    (kb / "spaces" / "42").mkdir(parents=True)
    (kb / "web_search" / "guild_7").mkdir(parents=True)
    text = "".join(f"line {n} of the shared guide.\n" for n in range(600))
    (kb / "shared.md").write_text(text, "utf-8")
    (kb / "spaces" / "42" / "ours.md").write_text("# Ours\nguild 42 only", "utf-8")
    (kb / "web_search" / "guild_7" / "theirs.md").write_text("# Theirs\nguild 7 only", "utf-8")
    outside = tmp_path / "outside.md"
    outside.write_text("# Outside\nsecret", "utf-8")
    (kb / "link.md").symlink_to(outside)
    async with open_services(settings, service_options) as services:
        parts, token, pages = [], None, 0
        while True:
            args: dict[str, object] = {"continue_from": token} if token else {"path": "shared.md"}
            result = await read(services, GUILD, args)
            assert not result.failed and len(result.text) <= 6000
            body, meta = parse_paged_result(result.text)
            parts.append(body.split("\n", 1)[1])
            pages += 1
            token = meta.get("next_token")
            if not token:
                break
        assert "".join(parts) == text and pages > 1, "every page, nothing skipped"

        # The room the engine gives: the page fits it, the token goes on right after it.
        small = await read(services, GUILD, {"path": "shared.md"}, ResultRoom(6000, 300))
        body, meta = parse_paged_result(small.text)
        shown = body.split("\n", 1)[1]
        assert text.startswith(shown) and 0 < len(shown) < 4000
        assert parse_token(meta["next_token"], "read_kb_file")["offset"] == len(shown)

        assert not (await read(services, GUILD, {"path": "spaces/42/ours.md"})).failed
        for space, path in [
            (OTHER, "spaces/42/ours.md"),
            (GUILD, "web_search/guild_7/theirs.md"),
            (GUILD, "link.md"),
            (GUILD, "../outside.md"),
            (GUILD, str(outside)),
            (GUILD, "spaces/42/../../shared.md"),
        ]:
            refused = await read(services, space, {"path": path})
            assert refused.failed and "No knowledge-base file" in refused.text, (space, path)
        # A token forged for another space's file reads nothing either; a forged path is refused.
        forged = await read(
            services, OTHER, {"continue_from": continuation("spaces/42/ours.md", 0)}
        )
        assert forged.failed
        raw = json.dumps({"v": 2, "tool": "read_kb_file", "path": "../x.md", "offset": 0})
        bad = base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")
        refused = await read(services, GUILD, {"continue_from": bad})
        assert refused.failed and refused.text.startswith("Invalid continuation token")
        # The space comes from the engine, never from the model.
        sneaky = await read(services, OTHER, {"path": "spaces/42/ours.md", "space_id": GUILD})
        assert sneaky.failed
