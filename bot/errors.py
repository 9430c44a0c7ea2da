"""Small exception hierarchy; a UserFacingError's text is shown to the user as-is."""

from __future__ import annotations

import json


class PlayChatError(Exception):
    """Base of every error PlayChat raises on purpose."""


class UserFacingError(PlayChatError):
    """An error whose message is safe and useful to show to the user verbatim."""


class LLMError(UserFacingError):
    """The language model could not answer (unreachable, failed, timed out).

    The message is for the person chatting; `detail` is the operator's sentence (address,
    setting to change) for the log and the admin page, the message when there is none.
    """

    def __init__(self, message: str, *, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail or message


class LLMUnavailableError(LLMError):
    """The LLM backend cannot be reached at all."""


class NotFoundError(UserFacingError):
    """A requested record does not exist."""


class ValidationError(UserFacingError):
    """Input was rejected; nothing was changed."""


class ConflictError(UserFacingError):
    """The request clashes with existing data (e.g. importing over an existing session)."""


class NotStoredError(UserFacingError):
    """A message could not be stored, so it was not answered; the text says why."""


class StartupError(PlayChatError):
    """PlayChat cannot start; the message names the cause and the fix in one sentence."""

    exit_code = 1


class ConfigurationError(StartupError):
    """A setting from the environment or `.env` is invalid; one line per bad variable."""

    exit_code = 2


class DatabaseVersionError(StartupError):
    """The database was written by a newer PlayChat than this one."""

    exit_code = 2


class ToolError(PlayChatError):
    """A tool call failed; the model receives `text` verbatim (the message, or its JSON form)."""

    def __init__(self, message: str, *, as_json: bool = False) -> None:
        super().__init__(message)
        self.text = json.dumps({"error": message}, ensure_ascii=False) if as_json else message
