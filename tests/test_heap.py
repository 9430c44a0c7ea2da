"""settle_heap: start-up survivors are frozen out of the cyclic collector's way, at once."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from bot.utils.heap import collector_held, settle_heap


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """Leave the collector as the test found it."""
    was_enabled = gc.isenabled()
    yield
    gc.unfreeze()
    if not was_enabled:
        gc.disable()


@pytest.fixture
def collections_run() -> Iterator[list[int]]:
    """The generation of every cyclic collection that starts while the test runs."""
    runs: list[int] = []

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            runs.append(info["generation"])

    gc.callbacks.append(record)
    yield runs
    gc.callbacks.remove(record)


@pytest.mark.usefixtures("unfrozen")
def test_survivors_are_frozen_without_a_collection(collections_run: list[int]) -> None:
    class Node:
        def __init__(self) -> None:
            self.me = self

    with collector_held():
        kept = Node()
        garbage = Node()
        gone = weakref.ref(garbage)
        del garbage  # a cycle: only the cyclic collector frees it
        settle_heap()
    # No walk of the whole heap at ready (it cost ~100 ms of start-up CPU for ~0.1 MiB).
    assert collections_run == []
    assert gc.isenabled() and gc.get_freeze_count() > 0
    assert not any(obj is kept for obj in gc.get_objects())  # frozen: no longer walked
    assert gone() is not None  # start-up's few garbage cycles are frozen with the rest
    gc.collect()
    assert gone() is not None  # and never walked again


@pytest.mark.usefixtures("unfrozen")
def test_the_collector_is_on_after_settling_even_if_it_was_held() -> None:
    with collector_held():
        assert not gc.isenabled()
        settle_heap()
        assert gc.isenabled()
