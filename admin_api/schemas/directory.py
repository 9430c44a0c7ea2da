"""The channel directory: servers and their channels by name (`bot.store.repos.directory`)."""

from __future__ import annotations

from pydantic import BaseModel

from admin_api.schemas.rows import DirectoryServerOut


class DirectoryOut(BaseModel):
    """The servers the bot knows, each with the channels it can see (threads not listed).

    A server with `left_at` set is one the bot was removed from (its channels are gone).
    """

    servers: list[DirectoryServerOut]
