"""The start-up heap frozen out of full collections while the bot runs (`bot.runtime.heap`)."""

from __future__ import annotations

import gc

from bot.runtime.heap import frozen_start_up_heap, refreeze_if_frozen


class Held:
    """A tracked object standing for long-lived data."""


def tracked(item: object) -> bool:
    return any(other is item for other in gc.get_objects())


def test_freezes_what_exists_refreezes_later_data_and_unfreezes_on_exit() -> None:
    assert gc.get_freeze_count() == 0
    early = Held()
    refreeze_if_frozen()  # nothing is frozen: nothing happens
    assert gc.get_freeze_count() == 0 and tracked(early)
    with frozen_start_up_heap() as frozen:
        assert frozen > 0 and not tracked(early)
        later = Held()
        assert tracked(later)
        refreeze_if_frozen()
        assert not tracked(later)
    assert gc.get_freeze_count() == 0 and tracked(early) and tracked(later)
