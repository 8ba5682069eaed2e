"""Whether the person asking may read one memory (people/): a call that names a memory
by its id (read, change, delete, history, a conversation's messages) treats another
person's memory as one that does not exist, so an id reveals nothing."""

from __future__ import annotations

from uuid import UUID

from ..db import Database
from ..errors import NotFoundError
from ..people import person_key, visible_to
from .kinds import parse_agent_id
from .params import parse_memory_id


async def check_theirs(db: Database, agent_id: str, memory_id: UUID | str,
                       user: str | None, field: str = "memory_id") -> None:
    """Nothing for the owner (``user`` None); for a person, NotFoundError unless the
    memory is theirs or shared."""
    if user is None:
        return
    asker = person_key(user, "user")
    agent = parse_agent_id(agent_id)
    ident = parse_memory_id(memory_id, field)
    people = await db.fetchval("memory_people", agent, ident)
    if people is None or not visible_to(people, asker):
        raise NotFoundError("memory", ident)
