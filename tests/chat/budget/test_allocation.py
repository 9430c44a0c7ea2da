"""The allocation of one prompt budget: recent exchanges, layers up to their demand, the rest."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from bot.chat.budget.allocation import (
    MIN_RECENT_EXCHANGES,
    READING_MAX_SHARE,
    Allocation,
    allocate,
    answer_reserve,
    prompt_budget,
)

TOOLS = 1400  # about the built-in tools' schemas
SYSTEM = 360  # about the English system prompt with tools
TALK = [120] * 10 + [30]  # ten earlier messages of 120 tokens, this turn's of 30

# Demands (tokens at the seed's limits, message framing included).
SMALL = {"knowledge": 300, "notes": 200, "memory": 150}
# 15 headings, 50 note titles, a 7,800-character note, three 4,800-character files, 6 summaries.
LARGE = {
    "knowledge": 330,
    "notes": 1000,
    "linked_notes": 2000,
    "local_kb": 3600,
    "memory": 1200,
}
HUGE = {"knowledge": 330, "notes": 1000, "linked_notes": 8000, "local_kb": 12000, "memory": 3000}


@dataclass(frozen=True)
class Row:
    """One case: the window, the demands, and what each layer must get."""

    window: int
    demands: dict[str, int]
    budget: int
    layers: dict[str, int]
    conversation: int


ROWS = [
    # 4k: 4096 − 819 reserve − 1400 tools = 1877; the recent 3 messages take 270 of the 1517
    # left after the system prompt, leaving a room of 1247.
    Row(4096, SMALL, 1877, SMALL, 1517 - 650),
    # Room 1247 < 8130 demanded; linked notes and KB files count as the whole room (1247):
    # total 330 + 1000 + 1247 + 1247 + 1200 = 5024, so each gets demand × 1247 // 5024.
    Row(
        4096,
        LARGE,
        1877,
        {"knowledge": 81, "notes": 248, "linked_notes": 309, "local_kb": 309, "memory": 297},
        1517 - 1244,
    ),
    Row(8192, SMALL, 5154, SMALL, 4794 - 650),
    # Room 4524 < 8130: every layer gets 4524 / 8130 ≈ 55.6 % of its demand.
    Row(
        8192,
        LARGE,
        5154,
        {"knowledge": 183, "notes": 556, "linked_notes": 1112, "local_kb": 2003, "memory": 667},
        4794 - 4521,
    ),
    # 16k: 16384 − 3276 − 1400 = 11708: the large demands all fit whole.
    Row(16384, LARGE, 11708, LARGE, 11348 - 8130),
    # Room 11078 < 24330 (KB files counted as 11078): ≈ 47.3 % each.
    Row(
        16384,
        HUGE,
        11708,
        {"knowledge": 156, "notes": 473, "linked_notes": 3786, "local_kb": 5242, "memory": 1419},
        11348 - 11076,
    ),
    Row(32768, LARGE, 24815, LARGE, 24455 - 8130),
    # Room 24185 < 24330: 99.4 % each.
    Row(
        32768,
        HUGE,
        24815,
        {"knowledge": 328, "notes": 994, "linked_notes": 7952, "local_kb": 11928, "memory": 2982},
        24455 - 24184,
    ),
    Row(131072, HUGE, 103458, HUGE, 103098 - 24330),
]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r.window}-{sum(r.demands.values())}")
def test_each_window_gives_each_layer_its_demand_or_a_proportional_share(row: Row) -> None:
    budget = prompt_budget(row.window, TOOLS)
    assert budget == row.budget

    plan = allocate(budget, SYSTEM, TALK, row.demands)

    assert plan.recent_exchanges == MIN_RECENT_EXCHANGES == 3
    assert plan.recent_tokens == 120 + 120 + 30, "the last three exchanges, whole"
    assert plan.layers == row.layers
    assert list(plan.layers) == list(row.demands), "layer order kept"
    assert plan.conversation == row.conversation
    assert plan.shrunk == (row.layers != row.demands)
    assert plan.system + sum(plan.layers.values()) + plan.conversation == budget
    assert plan.conversation >= plan.recent_tokens


@pytest.mark.parametrize("window", [4096, 8192, 16384, 32768, 131072])
@pytest.mark.parametrize("demands", [SMALL, LARGE, HUGE], ids=["small", "large", "huge"])
def test_every_allocation_stays_in_the_budget(window: int, demands: dict[str, int]) -> None:
    budget = prompt_budget(window, TOOLS)
    plan = allocate(budget, SYSTEM, TALK, demands)
    assert sum(plan.layers.values()) + plan.recent_tokens <= budget - SYSTEM
    assert all(0 <= plan.layers[name] <= demand for name, demand in demands.items())
    assert budget + answer_reserve(window) + TOOLS <= window


def test_shrinking_is_proportional_to_demand() -> None:
    demands = {"a": 100, "b": 300, "c": 400}
    plan = allocate(system=0, budget=400 + 40, exchanges=[40], demands=demands)
    assert plan.recent_tokens == 40
    assert plan.layers == {"a": 50, "b": 150, "c": 200}, "each gets half"
    assert plan.shrunk and plan.conversation == 40


def test_a_demand_larger_than_the_room_counts_as_the_room() -> None:
    plan = allocate(1000, 0, [0], {"huge_file": 1_000_000, "headings": 250})
    # Without the cap the headings would get 250 × 1000 / 1,000,250 = 0 tokens.
    assert plan.layers == {"huge_file": 800, "headings": 200}


def test_layers_that_fit_leave_the_rest_to_the_conversation() -> None:
    plan = allocate(2000, 100, [50, 50, 50, 50, 50], {"notes": 300, "empty": 0})
    assert plan.layers == {"notes": 300, "empty": 0}
    assert not plan.shrunk
    assert plan.conversation == 2000 - 100 - 300


def test_the_minimum_is_the_last_exchanges_whole_within_half_the_room() -> None:
    # Room 1000 after the system prompt: at most 500 for the minimum.
    plan = allocate(1100, 100, [300, 200, 250, 40], {"kb": 5000})
    assert (plan.recent_exchanges, plan.recent_tokens) == (3, 490), "40 + 250 + 200"
    assert plan.layers == {"kb": 510}

    plan = allocate(1100, 100, [300, 200, 400, 40], {"kb": 5000})
    assert (plan.recent_exchanges, plan.recent_tokens) == (2, 440), "200 more would cross 500"

    plan = allocate(1100, 100, [100, 100, 100, 100], {"kb": 5000}, min_exchanges=2)
    assert (plan.recent_exchanges, plan.recent_tokens) == (2, 200)

    empty = allocate(1100, 100, [], {"kb": 5000})
    assert (empty.recent_exchanges, empty.recent_tokens, empty.layers) == (0, 0, {"kb": 1000})


def test_the_current_message_always_counts_up_to_half_the_room() -> None:
    plan = allocate(1100, 100, [50, 5000], {"kb": 5000})
    assert (plan.recent_exchanges, plan.recent_tokens) == (1, 500)
    assert plan.layers == {"kb": 500} and plan.conversation == 500


def test_a_system_prompt_larger_than_the_budget_leaves_nothing() -> None:
    plan = allocate(300, 400, [50], {"kb": 100})
    assert plan == Allocation(300, 400, 1, 0, {"kb": 100}, {"kb": 0}, 0)


def test_the_token_factor_is_applied_once() -> None:
    # Real tokens: 16384 − 3276 reserve − 1400 × 1.25 tools = 11358; ÷ 1.25 = 9086 estimated.
    assert prompt_budget(16384, 1400, 1.25) == 9086
    assert prompt_budget(16384, 1400, 1.0) == 11708
    assert prompt_budget(16384, 1400, 0.0) == 11708, "a broken factor counts as 1"
    assert prompt_budget(1024, 5000) == 256, "never below the floor"


def test_a_turn_that_has_read_more_takes_room_from_the_layers_up_to_its_share() -> None:
    # Room 1000 after the system prompt; the last exchanges take 90 of it, 910 remain.
    base = allocate(1100, 100, [30, 30, 30], {"kb": 5000}, tools=True)
    grown = allocate(1100, 100, [30, 30, 30], {"kb": 5000}, tools=True, reading=400)
    capped = allocate(1100, 100, [30, 30, 30], {"kb": 5000}, tools=True, reading=5000)
    assert grown.tool_reserve == 400 and grown.layers == {"kb": 510}
    assert grown.layers["kb"] < base.layers["kb"]
    assert capped.tool_reserve == int(910 * READING_MAX_SHARE), "at most its share"
    assert capped.layers == {"kb": 910 - capped.tool_reserve}, "the rest stays the layers'"
    assert (capped.recent_exchanges, capped.recent_tokens) == (3, 90), "recent talk whole"
