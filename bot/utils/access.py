"""Who may talk to the bot: allow/deny lists, per-user cooldown, admin check. Pure logic.

Below the Discord layer: the client's command tree (bot.bot) and the extensions both use it,
and extensions depend on the client, never the other way round.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

from bot.config import Settings

Verdict = Literal[
    "allowed",
    "dm_disabled",
    "user_denied",
    "role_denied",
    "channel_denied",
    "user_not_allowed",
    "channel_not_allowed",
]


@dataclass(frozen=True)
class Requester:
    """A message's author and place: user, roles, the channel and (for threads) its parent."""

    user_id: int
    role_ids: frozenset[int] = frozenset()
    channel_ids: tuple[int, ...] = ()
    is_dm: bool = False


@dataclass(frozen=True)
class AccessPolicy:
    """Deny lists win; a non-empty allow list admits only what it names."""

    allow_dms: bool = False
    allowed_users: frozenset[int] = frozenset()
    denied_users: frozenset[int] = frozenset()
    allowed_roles: frozenset[int] = frozenset()
    denied_roles: frozenset[int] = frozenset()
    allowed_channels: frozenset[int] = frozenset()
    denied_channels: frozenset[int] = frozenset()

    @classmethod
    def from_settings(cls, settings: Settings) -> AccessPolicy:
        """The policy configured in `settings` (read at use time: values change at runtime)."""
        return cls(
            allow_dms=settings.discord_allow_dms,
            allowed_users=frozenset(settings.discord_allowed_user_ids),
            denied_users=frozenset(settings.discord_denied_user_ids),
            allowed_roles=frozenset(settings.discord_allowed_role_ids),
            denied_roles=frozenset(settings.discord_denied_role_ids),
            allowed_channels=frozenset(settings.discord_allowed_channel_ids),
            denied_channels=frozenset(settings.discord_denied_channel_ids),
        )

    def check(self, who: Requester) -> Verdict:
        """ "allowed", or why not.

        Users and roles form one allow list: a user passes if listed or holding a listed role.
        Channel lists match a thread or its parent channel; they do not apply to DMs, which
        are governed by `allow_dms` alone.
        """
        if who.is_dm and not self.allow_dms:
            return "dm_disabled"
        if who.user_id in self.denied_users:
            return "user_denied"
        if who.role_ids & self.denied_roles:
            return "role_denied"
        if not who.is_dm and self.denied_channels.intersection(who.channel_ids):
            return "channel_denied"
        if self.allowed_users or self.allowed_roles:
            listed = who.user_id in self.allowed_users or bool(who.role_ids & self.allowed_roles)
            if not listed:
                return "user_not_allowed"
        outside = not self.allowed_channels.intersection(who.channel_ids)
        if not who.is_dm and self.allowed_channels and outside:
            return "channel_not_allowed"
        return "allowed"


@dataclass(frozen=True)
class CooldownResult:
    """Whether a message may start a turn; if not, whether to tell the user (once per window)."""

    allowed: bool
    retry_after: float = 0.0
    notify: bool = False


@dataclass
class _Entry:
    started: float
    notified: bool = False


@dataclass
class Cooldown:
    """Per-user cooldown between turns: a refused message does not extend the window."""

    clock: Callable[[], float] = time.monotonic
    max_users: int = 10_000
    _entries: dict[int, _Entry] = field(default_factory=dict)

    def hit(self, user_id: int, seconds: float) -> CooldownResult:
        """Register a message by `user_id`; `seconds` is the current cooldown setting."""
        now = self.clock()
        if seconds <= 0:
            return CooldownResult(True)
        entry = self._entries.get(user_id)
        if entry is not None and now < entry.started + seconds:
            notify = not entry.notified
            entry.notified = True
            return CooldownResult(False, entry.started + seconds - now, notify)
        if len(self._entries) >= self.max_users:
            self._prune(now, seconds)
        self._entries[user_id] = _Entry(now)
        return CooldownResult(True)

    def __len__(self) -> int:
        return len(self._entries)

    def _prune(self, now: float, seconds: float) -> None:
        for user_id in [u for u, e in self._entries.items() if now >= e.started + seconds]:
            del self._entries[user_id]


def is_admin(
    *,
    manage_guild: bool,
    role_ids: Iterable[int],
    admin_role_ids: Iterable[int],
    is_owner: bool = False,
) -> bool:
    """Manage Server permission, a configured admin role, or the application's owner."""
    return is_owner or manage_guild or not set(role_ids).isdisjoint(admin_role_ids)
