"""What is derived from a set of tool schemas, made once per distinct set.

A turn hands the same schema dicts (the tool registry's) to every call; their conversion for
a backend or their token estimate need not be redone each time.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Generic, TypeVar

from bot.llm.types import ToolSchema

T = TypeVar("T")

# How many distinct tool sets keep what was made of them (a turn's set, a model's own).
TOOL_SETS_KEPT = 8


class PerToolSet(Generic[T]):
    """`make(tools)`, kept for the latest distinct tool sets."""

    def __init__(self, make: Callable[[list[ToolSchema]], T], kept: int = TOOL_SETS_KEPT) -> None:
        self._make = make
        self._kept = kept
        # By the ids of the schema dicts: a copy of the schemas (to see a set changed in place,
        # or a new dict at a reused id) and what was made of them.
        self._sets: dict[tuple[int, ...], tuple[list[ToolSchema], T]] = {}

    def __call__(self, tools: list[ToolSchema]) -> T:
        """What `make` gives for `tools`: made now if this set (as it is now) is not kept."""
        key = tuple(map(id, tools))
        kept = self._sets.get(key)
        if kept is not None and kept[0] == tools:
            return kept[1]
        made = self._make(tools)
        if kept is None and len(self._sets) >= self._kept:
            del self._sets[next(iter(self._sets))]
        self._sets[key] = (copy.deepcopy(tools), made)
        return made
