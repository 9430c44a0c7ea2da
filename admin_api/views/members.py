"""Member memory per space: list members and their facts, delete facts, erase a member."""

from __future__ import annotations

from admin_api.errors import not_found
from admin_api.routing import Route
from admin_api.schemas.common import DeletedOut, RowId, SpaceId
from admin_api.schemas.members import ErasedOut, FactListOut, MemberId, MemberListOut
from bot.services import Services


async def list_members(services: Services, space: SpaceId) -> MemberListOut:
    """The members of a space that something is kept about, with their fact counts."""
    return MemberListOut(members=list(await services.members.members(space)))


async def list_member_facts(services: Services, space: SpaceId, member: MemberId) -> FactListOut:
    """Every fact kept about a member of a space, oldest first (empty when none)."""
    return FactListOut(facts=await services.members.list(space, member))


async def delete_member_fact(
    services: Services, space: SpaceId, member: MemberId, id: RowId
) -> DeletedOut:
    """Delete one fact about a member. 404 when it is not one of theirs in that space."""
    if not await services.members.forget(space, member, id):
        raise not_found(f"Fact {id} of member {member} in {space}")
    return DeletedOut(deleted=1)


async def delete_member_facts(services: Services, space: SpaceId, member: MemberId) -> DeletedOut:
    """Delete every fact about a member of a space (their messages stay)."""
    return DeletedOut(deleted=await services.members.forget_all(space, member))


async def erase_member(services: Services, space: SpaceId, member: MemberId) -> ErasedOut:
    """Erase a member from a space, as their `/memory me erase` does.

    Their facts and memory switch go; the text of their messages (and of the bot's answers
    to them) becomes a placeholder hidden from recall; their tags, their turns' tool call
    arguments and the summaries holding their messages are removed, and those threads are
    summarised again in the background.
    """
    erased = await services.members.erase(space, member)
    return ErasedOut(
        facts=erased.facts,
        messages=erased.messages,
        tags=erased.tags,
        summaries=erased.summaries,
        sessions=list(erased.sessions),
    )


def routes() -> list[Route]:
    """Member memory routes."""
    return [
        Route("GET", "/api/memory/members/{space}", list_members),
        Route("GET", "/api/memory/members/{space}/{member}", list_member_facts),
        Route("DELETE", "/api/memory/members/{space}/{member}/facts/{id}", delete_member_fact),
        Route("DELETE", "/api/memory/members/{space}/{member}/facts", delete_member_facts),
        Route("POST", "/api/memory/members/{space}/{member}/erase", erase_member),
    ]
