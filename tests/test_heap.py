"""settle_heap: start-up survivors are frozen out of the cyclic collector's way."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from bot.utils.heap import settle_heap


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """Leave the collector as the test found it."""
    yield
    gc.unfreeze()


@pytest.mark.usefixtures("unfrozen")
def test_survivors_are_frozen_and_garbage_is_collected() -> None:
    class Node:
        def __init__(self) -> None:
            self.me = self

    kept = Node()
    garbage = Node()
    gone = weakref.ref(garbage)
    del garbage  # a cycle: only the cyclic collector frees it
    assert settle_heap() == gc.get_freeze_count() > 0
    assert gone() is None
    assert not any(obj is kept for obj in gc.get_objects())  # frozen: no longer walked
