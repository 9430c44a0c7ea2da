"""Shard math, the shard filter, and the SHARD_COUNT / SHARD_IDS settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import Settings, load_settings
from bot.errors import ConfigurationError
from bot.store.shards import ShardFilter, shard_of

DISCORD_EPOCH_MS = 1_420_070_400_000


def guild_on(shard: int, count: int, base_ms: int = 10**11) -> int:
    """A guild id (snowflake) whose timestamp puts it on `shard` of `count`."""
    stamp = base_ms + (shard - base_ms) % count
    return stamp << 22 | 12345


def test_shard_of_is_discords_formula_and_dms_are_shard_0() -> None:
    assert shard_of(guild_on(3, 4), 4) == 3
    assert shard_of(guild_on(3, 4), 1) == 0
    assert shard_of(None, 4) == 0
    # A real guild id: Discord API docs' example, (id >> 22) % count.
    assert shard_of(197038439483310086, 16) == (197038439483310086 >> 22) % 16
    with pytest.raises(ValueError):
        shard_of(1, 0)


def test_unsharded_owns_everything() -> None:
    shards = ShardFilter.of(None)
    assert not shards.sharded and shards.describe() == "all shards"
    assert shards.owns_guild(guild_on(1, 2)) and shards.owns_guild(None)
    assert all(shards.owns_space(s) for s in ("guild:1", "dm:2", "local:local"))


def test_a_process_owns_its_shards_servers_and_shard_0_owns_dms_and_local() -> None:
    zero, one = ShardFilter.of(2, [0]), ShardFilter.of(2, [1])
    g0, g1 = guild_on(0, 2), guild_on(1, 2)
    assert (zero.owns_guild(g0), zero.owns_guild(g1)) == (True, False)
    assert (one.owns_guild(g0), one.owns_guild(g1)) == (False, True)
    for space in (f"guild:{g0}", f"guild:{g1}", "dm:42", "local:local", "local:desk"):
        assert zero.owns_space(space) != one.owns_space(space), space
    assert zero.owns_space("dm:42") and zero.owns_space("local:local") and zero.owns_local
    assert not one.owns_local
    assert ShardFilter.of(2).ids == frozenset({0, 1})  # no ids: every shard of the count
    assert ShardFilter.of(4, [2, 0]).describe() == "shards 0, 2 of 4"


def test_the_filter_refuses_impossible_shards() -> None:
    with pytest.raises(ValueError):
        ShardFilter.of(2, [2])
    with pytest.raises(ValueError):
        ShardFilter.of(None, [0])


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No PlayChat variable in the environment; the working folder is an empty temp dir."""
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.chdir(tmp_path)
    return monkeypatch


def test_settings_default_to_one_unsharded_process(clean_env: pytest.MonkeyPatch) -> None:
    settings = load_settings()
    assert settings.shard_count is None and settings.shard_ids == []
    assert settings.shards == ShardFilter()
    for name in ("shard_count", "shard_ids"):
        assert Settings.model_fields[name].description


def test_settings_read_shard_count_and_ids(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("SHARD_COUNT", "4")
    clean_env.setenv("SHARD_IDS", "3, 1")
    settings = load_settings()
    assert (settings.shard_count, settings.shard_ids) == (4, [1, 3])
    assert settings.shards == ShardFilter(4, frozenset({1, 3}))
    clean_env.setenv("SHARD_IDS", "")
    assert load_settings().shards.ids == frozenset(range(4))


def test_shard_ids_take_ranges_as_a_systemd_instance_name_gives_them(
    clean_env: pytest.MonkeyPatch,
) -> None:
    clean_env.setenv("SHARD_COUNT", "8")
    for given, ids in (("0-1", [0, 1]), ("4-7", [4, 5, 6, 7]), ("3", [3]), ("0-1,5", [0, 1, 5])):
        clean_env.setenv("SHARD_IDS", given)
        assert load_settings().shard_ids == ids, given


@pytest.mark.parametrize(
    ("env", "sentence"),
    [
        ({"SHARD_COUNT": "0"}, "SHARD_COUNT=0 is not valid: expected a whole number, at least 1"),
        ({"SHARD_COUNT": "two"}, "SHARD_COUNT=two is not valid: expected a whole number"),
        ({"SHARD_IDS": "0"}, "SHARD_IDS=0 is not valid: SHARD_IDS needs SHARD_COUNT"),
        (
            {"SHARD_COUNT": "2", "SHARD_IDS": "0,2"},
            "SHARD_IDS=0,2 is not valid: shard ids run from 0 to 1 (SHARD_COUNT=2); "
            "out of range: 2",
        ),
        (
            {"SHARD_COUNT": "2", "SHARD_IDS": "1,1"},
            "SHARD_IDS=1,1 is not valid: a shard id is listed twice",
        ),
        (
            {"SHARD_COUNT": "2", "SHARD_IDS": "-1"},
            "SHARD_IDS=-1 is not valid: expected shard numbers or ranges, e.g. 0,1 or 0-3",
        ),
        (
            {"SHARD_COUNT": "4", "SHARD_IDS": "3-1"},
            "SHARD_IDS=3-1 is not valid: the shard range 3-1 runs backwards",
        ),
        (
            {"SHARD_COUNT": "4", "SHARD_IDS": "2-4"},
            "SHARD_IDS=2-4 is not valid: shard ids run from 0 to 3 (SHARD_COUNT=4); "
            "out of range: 4",
        ),
    ],
)
def test_bad_shard_settings_are_one_sentence_naming_the_variable(
    clean_env: pytest.MonkeyPatch, env: dict[str, str], sentence: str
) -> None:
    for name, value in env.items():
        clean_env.setenv(name, value)
    with pytest.raises(ConfigurationError) as raised:
        load_settings()
    message = str(raised.value)
    assert message.startswith(sentence), message
    assert message.endswith("; fix it in .env or the environment.")
    assert "\n" not in message
