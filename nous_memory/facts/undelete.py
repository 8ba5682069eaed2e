"""Restoring a soft-deleted memory: the owner's undo of a forget, audited as ``restored``.

A memory comes back with the status it had when it was deleted.  A fact that was
current then comes back through the value rule of ``learn_fact`` (no LLM call), because
the agent may have learned another version of it meanwhile and two current values of
one fact must never stand side by side:

- an active fact says the same: that one is confirmed, and the restored one is kept as
  its older version (``confirmed``);
- an active fact states a changed value: the one stated later stays current and the
  other becomes its superseded version, linked both ways (``superseded`` when the
  restored one is the older, ``replaced`` when it is the newer);
- a fact the rule cannot tell apart from it: both stay, flagged as a possible conflict
  for the owner (``flagged``); otherwise it is simply back (``restored``).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any
from uuid import UUID

from pgvector import Vector as PgVector
from pydantic import BaseModel, ConfigDict

from ..db import Connection, Database
from ..db.audit import record_events
from ..embeddings.cache import EmbeddingCache
from ..errors import ConflictError, NotFoundError
from ..memories.fact_key import fact_hash
from ..memories.kinds import FactDetail, Status, parse_agent_id
from ..memories.manager import MemoryManager
from ..memories.params import parse_memory_id
from ..memories.records import Memory
from .consolidation import Candidate, Plan, Thresholds, decide
from .learning import CANDIDATES, FactLearner


class RestoreAction(StrEnum):
    RESTORED = "restored"
    CONFIRMED = "confirmed"
    SUPERSEDED = "superseded"
    REPLACED = "replaced"
    FLAGGED = "flagged"


class Undeleted(BaseModel):
    """What a restore did: the memory as it is now, how the value rule placed a fact,
    the status it had before it was deleted, and the facts it was weighed against."""

    model_config = ConfigDict(frozen=True)

    memory: Memory
    action: RestoreAction
    previous_status: Status
    related: list[UUID] = []


_BACK = frozenset({Status.ACTIVE, Status.SUPERSEDED, Status.ARCHIVED})


class Undeleter:
    def __init__(self, db: Database, memories: MemoryManager, embeddings: EmbeddingCache,
                 learner: FactLearner, thresholds: Thresholds) -> None:
        self._db = db
        self._memories = memories
        self._embeddings = embeddings
        self._learner = learner
        self._thresholds = thresholds

    async def restore(self, agent_id: str, memory_id: UUID | str, *,
                      actor: str | None = None) -> Undeleted:
        """Bring one soft-deleted memory back (``ConflictError`` when it is not deleted)."""
        agent = parse_agent_id(agent_id)
        ident = parse_memory_id(memory_id)
        memory = await self._memories.get(agent, ident, include_deleted=True)
        if memory.status is not Status.DELETED:
            raise ConflictError(f"memory {ident} is not deleted (it is {memory.status.value}); "
                                "only a deleted memory can be restored")
        vector = None
        if isinstance(memory.detail, FactDetail):  # embedded before the transaction
            vector = (await self._embeddings.embed_texts(agent, [memory.detail.content]))[0]
        async with self._db.transaction() as conn:
            await conn.execute("lock_agent_facts", agent)  # never mid-learn_fact
            before = await conn.fetchval("status_before_delete", agent, ident)
            previous = Status(before) if before in {s.value for s in _BACK} else Status.ACTIVE
            action, status = RestoreAction.RESTORED, previous
            related: list[UUID] = []
            if vector is not None and previous is Status.ACTIVE:
                action, status, related = await self._place_fact(conn, agent, memory, vector)
            if await conn.fetchval("undelete_memory", agent, ident, status.value) is None:
                raise ConflictError(f"memory {ident} changed while it was restored; retry")
            await self._link(conn, agent, memory, action, related)
            await record_events(conn, agent, [{
                "memory_id": str(ident), "event": "restored", "actor": actor,
                "old_values": {"status": Status.DELETED.value},
                "new_values": {"status": status.value, "action": action.value,
                               "related": [str(r) for r in related],
                               "reason": "restored after a delete"}}])
            row = await conn.fetchrow("get_memory", agent, ident)
        if row is None:
            raise NotFoundError("memory", ident)
        return Undeleted(memory=Memory.from_row(row), action=action,
                         previous_status=previous, related=related)

    async def _place_fact(self, conn: Connection, agent: str, memory: Memory,
                          vector: Any) -> tuple[RestoreAction, Status, list[UUID]]:
        """Where a restored current fact stands among the active facts, by the value rule."""
        assert isinstance(memory.detail, FactDetail)
        content = memory.detail.content
        exact = await conn.fetchrow("fact_by_hash", agent, fact_hash(content), memory.people)
        if exact is not None and exact["status"] == Status.ACTIVE.value:
            plan = Plan(action="confirm", target=Candidate(id=exact["id"], content=content,
                                                           cosine=1.0))
        else:
            await conn.execute("enable_iterative_scan")
            rows = await conn.fetch("nearest_active_facts", agent, PgVector(vector),
                                    self._embeddings.model_name, CANDIDATES, memory.people)
            candidates = [Candidate(id=r["id"], content=r["content"],
                                    cosine=float(r["cosine"])) for r in rows]
            plan = decide(content, candidates, self._thresholds, llm_available=False)
        target = plan.target
        if plan.action in ("confirm", "merge") and target is not None:
            return RestoreAction.CONFIRMED, Status.SUPERSEDED, [target.id]
        if plan.action == "supersede" and target is not None:
            mine = await conn.fetchrow("fact_stated", agent, memory.id)
            theirs = await conn.fetchrow("fact_stated", agent, target.id)
            assert mine is not None and theirs is not None
            if mine["stated_at"] > theirs["stated_at"]:
                return RestoreAction.REPLACED, Status.ACTIVE, [target.id]
            return RestoreAction.SUPERSEDED, Status.SUPERSEDED, [target.id]
        if plan.flagged:
            return RestoreAction.FLAGGED, Status.ACTIVE, [c.id for c in plan.flagged]
        return RestoreAction.RESTORED, Status.ACTIVE, []

    async def _link(self, conn: Connection, agent: str, memory: Memory,
                    action: RestoreAction, related: list[UUID]) -> None:
        """The links and events a placement needs, once the fact is back."""
        ident = memory.id
        if action in (RestoreAction.CONFIRMED, RestoreAction.SUPERSEDED):
            (current,) = related
            await conn.execute("fact_link_successor", agent, ident, current)
            await conn.execute("fact_link_predecessor", agent, current, ident)
            if action is RestoreAction.CONFIRMED:
                stated = await conn.fetchrow("fact_stated", agent, current)
                assert stated is not None and isinstance(memory.detail, FactDetail)
                await self._learner.writes.confirm(
                    conn, agent, current, stated["confidence"], memory.detail.confidence,
                    similarity=1.0, decided_by="restore", statement=memory.detail)
        elif action is RestoreAction.REPLACED:
            (older,) = related
            await self._learner.writes.retire(conn, agent, older, ident)
            await conn.execute("fact_link_predecessor", agent, ident, older)
        elif action is RestoreAction.FLAGGED:
            await conn.execute("fact_flag_conflict", agent, related, ident)
            for other in related:
                await conn.execute("fact_flag_conflict", agent, [ident], other)
            await record_events(conn, agent, [{
                "memory_id": str(other), "event": "updated", "actor": "restore",
                "old_values": {}, "new_values": {"conflicts_with_added": str(ident)}}
                for other in related])
