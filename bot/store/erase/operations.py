"""Erasing a member and forgetting their facts: one transaction each over many tables, with
the scan for quotes of their texts read before the writer is held."""

from __future__ import annotations

from bot.store.engine.database import Database
from bot.store.erase.fact_forget import ForgotFacts, forget_ahead, forget_facts
from bot.store.erase.member_erase import ErasedMember, erase_member, scan_ahead


class MemberErasure:
    """The store's erase and forget operations, over one database."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def forget(
        self,
        space: str,
        member_id: str,
        author: str | None,
        *,
        fact_id: int | None,
        placeholder: str,
        neutral: str,
    ) -> ForgotFacts:
        """Forget one fact of the member (all: `fact_id` None) and blank what it was said in,
        in one transaction (see `fact_forget`)."""
        # The scan of the space's answers for quotes of them reads before the writer is held.
        ahead = await forget_ahead(self._db.fetchall, space, member_id, author, fact_id)
        async with self._db.transaction() as conn:
            forgot = await forget_facts(
                conn,
                space,
                member_id,
                author,
                fact_id=fact_id,
                placeholder=placeholder,
                neutral=neutral,
                ahead=ahead,
            )
        return forgot

    async def erase(
        self, space: str, member_id: str, author: str | None, placeholder: str, *, neutral: str
    ) -> ErasedMember:
        """Erase the member from the space in one transaction (see `member_erase`)."""
        # The scan of the space's answers for quotes of them reads before the writer is held.
        ahead = await scan_ahead(self._db.fetchall, space, member_id, author)
        async with self._db.transaction() as conn:
            erased = await erase_member(
                conn, space, member_id, author, placeholder, neutral=neutral, ahead=ahead
            )
        return erased
