"""Full-text search: the query and the result page."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from admin_api.schemas.common import Page, SpaceId
from bot.store.reads.search import SearchHit

# The deepest offset a page may start at (results are bounded).
MAX_CURSOR = 150


class SearchQuery(BaseModel):
    """What to look for, where, and which page.

    `q`: whitespace-separated terms, all of which must occur (substring match, Japanese
    included; FTS syntax is searched as plain text). `kind`: one kind of record, else all
    three. `cursor`: the `next_cursor` of the previous page.
    """

    q: Annotated[str, Field(min_length=1, max_length=200)]
    space: SpaceId | None = None
    kind: Literal["messages", "notes", "knowledge"] | None = None
    limit: Annotated[int, Field(ge=1, le=50)] = 20
    cursor: Annotated[int, Field(ge=0, le=MAX_CURSOR)] | None = None


class SearchOut(Page[SearchHit, int]):
    """Search hits, best first.

    `mode` is `fts` when every hit came from the full-text index (terms of 3+ characters),
    `like` when the query had only 1–2 character terms: then the most recent rows of each kind
    (2,000 per kind and space) were scanned and hits are newest first. Each hit's `snippet`
    is plain text with `matches` as [start, end) offsets in Unicode code points (in JS, index
    `Array.from(text)`, not the UTF-16 string). Messages link to the transcript by
    `session_id` and `message_id`; notes and knowledge entries by `id`.
    """

    mode: Literal["fts", "like"]
