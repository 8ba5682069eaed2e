"""Who a write's audit events name: the caller's actor, or the API key a request came
with.  The service sets ``ACTOR`` for the request (``acting_as``); every audit row of
that request then records the key's name, whichever domain module writes it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from .connector import Connection

ACTOR: ContextVar[str | None] = ContextVar("nous_memory_actor", default=None)


@contextmanager
def acting_as(name: str | None) -> Iterator[None]:
    """Audit events written inside the block name ``name`` (None: their own actor)."""
    token = ACTOR.set(name)
    try:
        yield
    finally:
        ACTOR.reset(token)


async def record_events(conn: Connection, agent_id: str,
                        events: Sequence[Mapping[str, Any]]) -> None:
    """Insert audit rows ``[{memory_id, event, old_values, new_values, actor}]``; within
    ``acting_as(key)`` the key's name is their actor."""
    actor = ACTOR.get()
    rows = list(events) if actor is None else [{**e, "actor": actor} for e in events]
    await conn.execute("insert_events", agent_id, rows)
