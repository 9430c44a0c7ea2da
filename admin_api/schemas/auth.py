"""Password login (who-am-I is `admin_api.security.Principal`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from admin_api.schemas.common import Body


class LoginIn(Body):
    """Password login."""

    password: Annotated[str, Field(min_length=1, max_length=1024)]


class LoginOut(BaseModel):
    """A session cookie was set."""

    ok: bool = True
    expires_at: str
