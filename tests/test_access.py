"""Allow/deny lists, the per-user cooldown and the admin check (pure logic)."""

from __future__ import annotations

import pytest

from bot.utils.access import AccessPolicy, Cooldown, Requester, is_admin
from tests.conftest import SettingsFactory

ALICE, BOB = 1, 2
GENERAL, RANDOM, THREAD = 10, 11, 12
HELPER, MUTED = 100, 101


def test_everyone_everywhere_by_default_but_no_dms() -> None:
    policy = AccessPolicy()
    assert policy.check(Requester(ALICE, channel_ids=(GENERAL,))) == "allowed"
    assert policy.check(Requester(ALICE, is_dm=True)) == "dm_disabled"
    assert AccessPolicy(allow_dms=True).check(Requester(ALICE, is_dm=True)) == "allowed"


@pytest.mark.parametrize(
    ("who", "verdict"),
    [
        (Requester(ALICE, frozenset({HELPER}), (THREAD, GENERAL)), "allowed"),
        (Requester(BOB, frozenset(), (THREAD, GENERAL)), "allowed"),  # listed user
        (Requester(3, frozenset(), (GENERAL,)), "user_not_allowed"),
        (Requester(ALICE, frozenset({HELPER, MUTED}), (GENERAL,)), "role_denied"),
        (Requester(ALICE, frozenset({HELPER}), (RANDOM,)), "channel_not_allowed"),
        (Requester(ALICE, frozenset({HELPER}), (THREAD, 99)), "channel_denied"),
        (Requester(4, frozenset({HELPER}), (GENERAL,)), "user_denied"),
        (Requester(BOB, is_dm=True), "allowed"),  # channel lists do not apply to DMs
        (Requester(3, is_dm=True), "user_not_allowed"),
    ],
)
def test_lists(who: Requester, verdict: str) -> None:
    policy = AccessPolicy(
        allow_dms=True,
        allowed_users=frozenset({BOB}),
        denied_users=frozenset({4}),
        allowed_roles=frozenset({HELPER}),
        denied_roles=frozenset({MUTED}),
        allowed_channels=frozenset({GENERAL}),
        denied_channels=frozenset({99}),
    )
    assert policy.check(who) == verdict


def test_policy_from_settings(make_settings: SettingsFactory) -> None:
    settings = make_settings(
        discord_allowed_channel_ids="10, 11", discord_denied_user_ids=[4], discord_allow_dms=True
    )
    policy = AccessPolicy.from_settings(settings)
    assert policy.allowed_channels == {10, 11} and policy.denied_users == {4}
    assert policy.allow_dms


def test_cooldown_refuses_within_the_window_and_tells_once() -> None:
    now = [0.0]
    cooldown = Cooldown(clock=lambda: now[0])
    assert cooldown.hit(ALICE, 3.0).allowed
    now[0] = 1.0
    first = cooldown.hit(ALICE, 3.0)
    assert (first.allowed, first.notify, first.retry_after) == (False, True, 2.0)
    now[0] = 2.5
    second = cooldown.hit(ALICE, 3.0)
    assert not second.allowed and not second.notify, "one notice per window"
    assert cooldown.hit(BOB, 3.0).allowed, "per user"
    now[0] = 3.0
    assert cooldown.hit(ALICE, 3.0).allowed, "refusals do not extend the window"
    now[0] = 3.1
    assert cooldown.hit(ALICE, 3.0).notify, "a new window, a new notice"
    assert cooldown.hit(ALICE, 0.0).allowed, "0 disables the cooldown"


def test_cooldown_forgets_old_users() -> None:
    now = [0.0]
    cooldown = Cooldown(clock=lambda: now[0], max_users=10)
    for user in range(10):
        cooldown.hit(user, 1.0)
    now[0] = 5.0
    cooldown.hit(99, 1.0)
    assert len(cooldown) == 1


def test_admin() -> None:
    assert is_admin(manage_guild=True, role_ids=[], admin_role_ids=[])
    assert is_admin(manage_guild=False, role_ids=[5, 6], admin_role_ids=[6])
    assert is_admin(manage_guild=False, role_ids=[], admin_role_ids=[], is_owner=True)
    assert not is_admin(manage_guild=False, role_ids=[5], admin_role_ids=[6])
