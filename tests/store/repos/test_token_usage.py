"""The daily token budgets' store: reservations are atomic against the limit on both engines."""

from __future__ import annotations

import asyncio

from bot.store import Repositories
from bot.store.engine.database import Database
from bot.store.repos.token_usage import Reservation, TokenUsageRepository

SPACE = "guild:111111111111111111"
OTHER = "guild:222222222222222222"
DAY = "2026-12-07"


async def _usage(db: Database) -> TokenUsageRepository:
    repos = Repositories.over(db)
    for space in (SPACE, OTHER):
        await repos.spaces.ensure(space)
    return repos.token_usage


async def test_twenty_concurrent_reservations_pass_the_limit_by_at_most_one(
    db: Database, database_url: str
) -> None:
    await _usage(db)
    # A second database object: its own connections (pool), as a second process has.
    second = await Database.connect(database_url)
    try:
        stores = [Repositories.over(db).token_usage, Repositories.over(second).token_usage]
        holds = [Reservation(SPACE, DAY, f"member-{n % 4}", 150) for n in range(20)]
        refused = await asyncio.gather(
            *(
                stores[n % 2].reserve(hold, member_limit=0, server_limit=1_000)
                for n, hold in enumerate(holds)
            )
        )
    finally:
        await second.close()
    admitted = [hold for hold, why in zip(holds, refused, strict=True) if why is None]
    # Admitted while below 1,000: 0, 150, … 900 — seven, 1,050 held, one call's worth over.
    assert len(admitted) == 7
    assert set(refused) == {None, "server"}
    rows = await stores[0].on_day(SPACE, DAY)
    space_row = next(row for row in rows if row.member_id is None)
    assert (space_row.used, space_row.reserved) == (0, 1_050)
    assert sum(row.reserved for row in rows if row.member_id is not None) == 1_050


async def test_a_member_limit_refuses_without_holding_the_space(db: Database) -> None:
    usage = await _usage(db)
    first = Reservation(SPACE, DAY, "alice", 100)
    assert await usage.reserve(first, member_limit=100, server_limit=0) is None
    await usage.settle(first, 100)
    again = Reservation(SPACE, DAY, "alice", 100)
    assert await usage.reserve(again, member_limit=100, server_limit=0) == "member"
    bob = Reservation(SPACE, DAY, "bob", 100)
    assert await usage.reserve(bob, member_limit=100, server_limit=0) is None
    rows = {row.member_id: row for row in await usage.on_day(SPACE, DAY)}
    # Alice's refused call left nothing held on the space's row (rolled back).
    assert (rows[None].used, rows[None].reserved) == (100, 100)
    assert (rows["alice"].used, rows["alice"].reserved, rows["alice"].calls) == (100, 0, 1)
    assert await usage.on_day(OTHER, DAY) == []


async def test_settling_a_failed_call_releases_it(db: Database) -> None:
    usage = await _usage(db)
    hold = Reservation(SPACE, DAY, None, 500)
    assert await usage.reserve(hold, member_limit=10, server_limit=500) is None
    assert await usage.reserve(hold, member_limit=10, server_limit=500) == "server"
    await usage.settle(hold, 0)
    assert await usage.reserve(hold, member_limit=10, server_limit=500) is None
    (row,) = await usage.on_day(SPACE, DAY)
    assert (row.member_id, row.used, row.reserved, row.calls) == (None, 0, 500, 0)
