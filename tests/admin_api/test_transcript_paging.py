"""A long transcript read from its end: `latest` gives the newest page, `earlier_cursor` passed
back as `before` the page just before it, down to the first message; `cursor` and `before`
refuse to go together."""

from __future__ import annotations

from typing import Any

from tests.admin_api.conftest import Admin
from tests.conftest import LOCAL


async def _page(admin: Admin, session_id: str, **params: str) -> dict[str, Any]:
    reply = await admin.get(f"/api/conversations/{session_id}/transcript", params=params)
    assert reply.status == 200, reply.text
    body: dict[str, Any] = reply.json
    return body


async def test_a_long_transcript_pages_back_from_its_end(admin: Admin) -> None:
    repos = admin.services.repos
    session = await repos.sessions.create(LOCAL, title="long")
    ids = [(await repos.messages.add(LOCAL, session.id, "user", f"m{n}")).id for n in range(25)]
    other = await repos.sessions.create(LOCAL, title="other")
    await repos.messages.add(LOCAL, other.id, "user", "not this session")

    newest = await _page(admin, session.id, latest="true", limit="10")
    assert [item["content"] for item in newest["items"]] == [f"m{n}" for n in range(15, 25)]
    assert newest["earlier_cursor"] == ids[15] and newest["next_cursor"] is None

    middle = await _page(admin, session.id, before=str(newest["earlier_cursor"]), limit="10")
    assert [item["id"] for item in middle["items"]] == ids[5:15]
    assert middle["earlier_cursor"] == ids[5]
    assert middle["next_cursor"] == ids[14], "later messages exist after a page read backwards"

    first = await _page(admin, session.id, before=str(middle["earlier_cursor"]), limit="10")
    assert [item["id"] for item in first["items"]] == ids[:5]
    assert first["earlier_cursor"] is None, "the first message is on this page"

    # Exactly one page: nothing earlier, nothing later.
    exact = await _page(admin, session.id, latest="true", limit="25")
    assert len(exact["items"]) == 25
    assert exact["earlier_cursor"] is None and exact["next_cursor"] is None
    short = await _page(admin, session.id, latest="true", limit="24")
    assert short["earlier_cursor"] == ids[1]

    # Reading forward still works as before, and says what lies before the page too.
    forward = await _page(admin, session.id, cursor=str(ids[9]), limit="5")
    assert [item["id"] for item in forward["items"]] == ids[10:15]
    assert forward["earlier_cursor"] == ids[10] and forward["next_cursor"] == ids[14]

    both = await admin.get(
        f"/api/conversations/{session.id}/transcript",
        params={"cursor": str(ids[3]), "before": str(ids[9])},
    )
    assert both.status == 422, both.text
