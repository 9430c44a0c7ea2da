"""Operations: tag backfill and the word pool (stats are `bot.store.stats.Stats`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from admin_api.schemas.common import Body


class BackfillIn(Body):
    """How many untagged rows to tag at most."""

    limit: Annotated[int, Field(ge=1, le=5000)] = 500


class BackfillOut(BaseModel):
    """How many rows were tagged."""

    tagged: int


class WordPoolOut(BaseModel):
    """The most recently seen words of one space (`space_id`), or of every space (null)."""

    space_id: str | None
    words: list[str]
