"""Errors as the API reports them: a status, a short code and a human-readable detail."""

from __future__ import annotations

from collections.abc import Mapping

from bot.errors import (
    ConflictError,
    LLMError,
    NotFoundError,
    NotStoredError,
    UserFacingError,
    ValidationError,
)


class ApiError(Exception):
    """An error response: JSON {error: code, detail} with `status` (and optional headers).

    `fields` (input name → why it was refused) adds `field` (the first) and `fields` to the body.
    """

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        headers: Mapping[str, str] | None = None,
        fields: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.headers = dict(headers or {})
        self.fields = dict(fields or {})


def from_user_error(exc: UserFacingError) -> ApiError:
    """The status and code for one of PlayChat's own errors (its text is safe to show)."""
    if isinstance(exc, NotFoundError):
        return ApiError(404, "not_found", str(exc))
    if isinstance(exc, ConflictError):
        return ApiError(409, "conflict", str(exc))
    if isinstance(exc, ValidationError):
        return ApiError(422, "validation_error", str(exc))
    if isinstance(exc, NotStoredError):
        return ApiError(503, "not_stored", str(exc))
    if isinstance(exc, LLMError):
        return ApiError(502, "llm_error", str(exc))
    return ApiError(400, "bad_request", str(exc))


def not_found(what: str) -> ApiError:
    """A 404 for a missing record."""
    return ApiError(404, "not_found", f"{what} does not exist.")
