"""Recall's conversation context in ranking: a message next to a strong hit moves up.

An answer often shares no word with the question (「Which dog did she adopt?」 — "Yes! His
name is Biscuit"): the words are in the message before it. So after fusion, each of the best
SPREAD_SOURCES message candidates passes SPREAD_SHARE of its score to the message before and
the one after it in the same session (`recall_rank.spread`); those neighbours join the
candidates. Two bounded reads: the neighbours' ids (the session index, one step each way),
then the rows of the new ones (`RecallRepository`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from bot.store.engine.pinned import Reads

# bench/recall_heldout.py, tuning conversations 26 and 30: R@10 0.528 without spreading, 0.56 /
# 0.579 / 0.602 with an uncapped share of 0.2 / 0.3 / 0.5, 0.595 / 0.618 / 0.602 capped at
# 0.5 / 0.7 / 1.0 (50 sources; 20 give 0.615); the generated set (bench/recall.py) stays at
# 0.533 throughout.
SPREAD_SOURCES: Final = 20
SPREAD_SHARE: Final = 0.7


def _step(direction: str) -> str:
    compare, order = ("<", "DESC") if direction == "before" else (">", "ASC")
    return (
        f"(SELECT n.id FROM messages n WHERE n.space_id = c.space_id "
        f"AND n.session_id = c.session_id AND n.id {compare} c.id AND n.recall_hidden = 0 "
        f"ORDER BY n.id {order} LIMIT 1)"
    )


async def neighbour_ids(db: Reads, space: str, ids: Sequence[int]) -> dict[int, list[int]]:
    """Each message of `ids` → the visible messages just before and after it in its session."""
    if not ids:
        return {}
    marks = ", ".join("?" for _ in ids)
    rows = await db.fetchall(
        f"SELECT c.id, {_step('before')} AS before_id, {_step('after')} AS after_id "
        f"FROM messages c WHERE c.space_id = ? AND c.id IN ({marks})",
        (space, *ids),
    )
    return {
        int(row["id"]): [int(row[key]) for key in ("before_id", "after_id") if row[key]]
        for row in rows
    }
