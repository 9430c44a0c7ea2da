"""The README's configuration reference is generated from Settings and kept in step with it."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, Field, SecretStr

from bot.config import RUNTIME_KEYS, SECRET_KEYS, Settings
from bot.ops.settings_reference import (
    BEGIN,
    END,
    main,
    readme_block,
    render_table,
    setting_row,
)

REPO = Path(__file__).resolve().parents[2]


def _row(name: str) -> tuple[str, str, str, str, str]:
    field = Settings.model_fields[name]
    return setting_row(
        name, field, runtime=name in RUNTIME_KEYS, secret=name in SECRET_KEYS
    ).cells()


def test_the_readme_table_is_the_one_the_settings_model_gives() -> None:
    block = readme_block((REPO / "README.md").read_text("utf-8"))
    assert block == render_table(), "run: .venv/bin/python -m bot.ops.settings_reference"


def test_every_setting_has_one_row_in_declaration_order() -> None:
    lines = render_table().splitlines()
    names = [line.split("|")[1].strip().strip("`") for line in lines[2:]]
    assert names == [name.upper() for name in Settings.model_fields]
    assert all(line.count(" | ") == 4 for line in lines), "five cells in every row"


def test_a_bounded_float() -> None:
    assert _row("stream_edit_interval") == (
        "`STREAM_EDIT_INTERVAL`",
        "`1.2`",
        "number, 0.2 to 30",
        "Seconds between edits of a streamed reply on Discord "
        "(Discord allows 5 edits per 5 seconds per channel).",
        "yes",
    )
    assert _row("llm_timeout")[1:3] == ("`120`", "number, > 0 and ≤ 3600")
    assert _row("local_kb_min_score")[2] == "number, -1 to 1"
    assert _row("llm_context_tokens")[1:3] == ("`16384`", "whole number, 512 to 1048576")


def test_a_literal() -> None:
    setting, default, allowed, _, runtime = _row("language")
    assert (setting, default, allowed, runtime) == ("`LANGUAGE`", "`en`", "`en`, `ja`", "yes")
    assert _row("event_loop")[2] == "`auto`, `uvloop`, `asyncio`"


def test_a_secret() -> None:
    assert _row("llm_api_key")[1:3] == ("*not set*", "text, kept secret")
    assert _row("llm_api_key")[4] == "yes"
    # DATABASE_URL's default is an empty SecretStr: not set, like a None secret.
    assert _row("database_url")[1:3] == ("*not set*", "text, kept secret")
    assert _row("admin_password")[4] == "no"


def test_a_list() -> None:
    assert _row("discord_guild_ids")[1:3] == ("*empty*", "comma-separated whole numbers")
    assert _row("admin_allowed_hosts")[1:3] == ("*empty*", "comma-separated list")


def test_booleans_paths_patterns_and_optional_numbers() -> None:
    assert _row("debug")[1:3] == ("`false`", "`true`, `false`")
    assert _row("db_path")[1:3] == ("`data/playchat.db`", "path")
    assert _row("local_space")[2] == "text matching `^[A-Za-z0-9_-]{1,64}$`"
    assert _row("llm_model")[2] == "text, not empty"
    assert _row("shard_count")[1:3] == ("*not set*", "whole number, 1 to 65536")
    assert _row("embed_model")[1] == "*empty*"


class _Sample(BaseModel):
    ratio: float = Field(default=0.5, gt=0, lt=1, description="A ratio | with a pipe.")
    names: list[str] = Field(default_factory=lambda: ["a", "b"], description="Names.")
    key: SecretStr = Field(default=SecretStr("hunter2"), description="A key.")
    mode: Literal["x", "y"] | None = Field(default=None, description="A mode.")
    floor: int = Field(default=3, ge=1, description="A floor.")


def _sample(name: str, *, secret: bool = False) -> tuple[str, str, str, str, str]:
    return setting_row(name, _Sample.model_fields[name], runtime=False, secret=secret).cells()


def test_open_bounds_factories_and_escaping() -> None:
    assert _sample("ratio") == (
        "`RATIO`",
        "`0.5`",
        "number, > 0 and < 1",
        r"A ratio \| with a pipe.",
        "no",
    )
    assert _sample("names")[1:3] == ("`a,b`", "comma-separated list")
    assert _sample("floor")[2] == "whole number, ≥ 1"
    assert _sample("mode")[1:3] == ("*not set*", "`x`, `y`")


def test_a_secret_default_is_never_shown() -> None:
    default = _sample("key", secret=True)[1]
    assert default == "*(secret)*" and "hunter2" not in render_table()


README = f"# Title\n\nIntro.\n\n{BEGIN}\nstale\n{END}\n\n## After\n"


def test_the_command_rewrites_the_block_in_place_and_check_reports(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(README, "utf-8")
    assert main(["--readme", str(readme), "--check"]) == 1
    assert main(["--readme", str(readme)]) == 0
    text = readme.read_text("utf-8")
    assert text == f"# Title\n\nIntro.\n\n{BEGIN}\n{render_table()}{END}\n\n## After\n"
    assert main(["--readme", str(readme), "--check"]) == 0
    assert main(["--readme", str(readme)]) == 0
    assert readme.read_text("utf-8") == text, "a second run changes nothing"


def test_a_readme_without_markers_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# No table here\n", "utf-8")
    assert main(["--readme", str(readme), "--check"]) == 2
    assert main(["--readme", str(readme)]) == 2
    assert readme.read_text("utf-8") == "# No table here\n"
    assert BEGIN in capsys.readouterr().err
