"""The possible-conflict queue: facts ``learn_fact`` kept side by side because no rule
could tell whether they say the same thing, and how an owner settles each pair.

A pair is settled one of three ways, each audited on both facts:
``keep_both`` (they do not conflict: the flags go), ``keep_one`` (the other becomes a
superseded version of the one kept, so history and recall with ``include_superseded``
still reach it) and ``merge`` (the kept fact takes a new wording, validated and
re-embedded like any update, then the other is superseded by it).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from ..db import Connection, Database
from ..db.audit import record_events
from ..errors import ConflictError, InvalidInputError, NotFoundError
from ..memories.kinds import Kind, parse_agent_id
from ..memories.manager import MemoryManager
from ..memories.params import parse_memory_id
from ..memories.records import Memory

MAX_QUEUE = 200
ACTOR = "conflict review"


class Resolution(StrEnum):
    KEEP_BOTH = "keep_both"
    KEEP_ONE = "keep_one"
    MERGE = "merge"


class ConflictPair(BaseModel):
    """Two active facts flagged as a possible conflict."""

    model_config = ConfigDict(frozen=True)

    first: Memory
    second: Memory


class ConflictResolver:
    def __init__(self, db: Database, memories: MemoryManager) -> None:
        self._db = db
        self._memories = memories

    async def queue(self, agent_id: str, *, limit: int = 50) -> list[ConflictPair]:
        """The pairs waiting for a decision, newest first."""
        agent = parse_agent_id(agent_id)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_QUEUE:
            raise InvalidInputError.single("limit", f"must be between 1 and {MAX_QUEUE}")
        pairs = await self._db.fetch("fact_conflict_pairs", agent, limit)
        ids = {r["fact_id"] for r in pairs} | {r["other_id"] for r in pairs}
        records = {r["id"]: Memory.from_row(r) for r in await self._db.fetch(
            "memory_records_by_ids", agent, list(ids))} if ids else {}
        return [ConflictPair(first=records[r["fact_id"]], second=records[r["other_id"]])
                for r in pairs if r["fact_id"] in records and r["other_id"] in records]

    async def resolve(self, agent_id: str, fact_id: UUID | str, other_id: UUID | str,
                      resolution: Resolution | str, *, content: str | None = None,
                      actor: str | None = None) -> list[Memory]:
        """Settle the pair; ``fact_id`` is the one kept by ``keep_one`` and ``merge``
        (``content``: the merged wording).  Returns both facts as they are now."""
        agent = parse_agent_id(agent_id)
        keep = parse_memory_id(fact_id, "fact_id")
        other = parse_memory_id(other_id, "other_id")
        how = _resolution(resolution)
        if keep == other:
            raise InvalidInputError.single("other_id", "must differ from fact_id")
        if how is Resolution.MERGE:
            if content is None or not str(content).strip():
                raise InvalidInputError.single("content", "a merge needs the merged wording")
            await self._check_pair(agent, keep, other)  # before the wording changes
            await self._memories.update(agent, keep, {"content": content},
                                        actor=actor or ACTOR)
        elif content is not None:
            raise InvalidInputError.single("content", "only a merge takes a new wording")
        async with self._db.transaction() as conn:
            await conn.execute("lock_agent_facts", agent)
            rows = await self._locked_pair(conn, agent, keep, other)
            for one, two in ((keep, other), (other, keep)):
                await conn.execute("fact_unflag_conflict", agent, one, two)
                await conn.execute("memory_touch", agent, one)
            who = actor or ACTOR
            events: list[dict[str, Any]] = [
                _event(one, "updated", {"conflicts_with": _ids(rows[one]["conflicts_with"])},
                       {"conflicts_with": _ids(rows[one]["conflicts_with"], drop=two),
                        "resolution": how.value, "other": str(two)}, who)
                for one, two in ((keep, other), (other, keep))]
            if how is not Resolution.KEEP_BOTH:
                await conn.execute("fact_link_superseded", agent, other, keep,
                                   rows[other]["confidence"])
                await conn.execute("memory_set_status", agent, other, "superseded")
                events.append(_event(other, "superseded", {"status": "active"},
                                     {"status": "superseded", "superseded_by_id": str(keep),
                                      "resolution": how.value}, who))
            await record_events(conn, agent, events)
            found = {r["id"]: Memory.from_row(r) for r in await conn.fetch(
                "memory_records_by_ids", agent, [keep, other])}
        return [found[keep], found[other]]

    async def _check_pair(self, agent: str, keep: UUID, other: UUID) -> None:
        async with self._db.transaction() as conn:
            await self._locked_pair(conn, agent, keep, other)

    async def _locked_pair(self, conn: Connection, agent: str, keep: UUID,
                           other: UUID) -> dict[UUID, Any]:
        rows = {r["memory_id"]: r for r in await conn.fetch(
            "fact_conflicts_for_update", agent, [keep, other])}
        for ident in (keep, other):
            if ident not in rows or rows[ident]["status"] == "deleted":
                raise NotFoundError(Kind.FACT.value, ident)
            if rows[ident]["status"] != "active":
                raise ConflictError(f"fact {ident} is {rows[ident]['status']}, not active")
        if other not in rows[keep]["conflicts_with"] and keep not in rows[other]["conflicts_with"]:
            raise ConflictError(f"facts {keep} and {other} are not flagged as a possible "
                                "conflict")
        return rows


def _resolution(value: Resolution | str) -> Resolution:
    try:
        return Resolution(str(value))
    except ValueError:
        allowed = ", ".join(r.value for r in Resolution)
        raise InvalidInputError.single(
            "resolution", f"unknown resolution {value!r}; expected one of {allowed}") from None


def _ids(values: list[UUID], drop: UUID | None = None) -> list[str]:
    return [str(v) for v in values if v != drop]


def _event(memory_id: UUID, event: str, old: dict[str, Any], new: dict[str, Any],
           actor: str) -> dict[str, Any]:
    return {"memory_id": str(memory_id), "event": event, "old_values": old,
            "new_values": new, "actor": actor}
