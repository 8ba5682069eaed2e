"""Typed memories: create (single and batch), read, update, delete and list.

Summaries and embeddings are computed before a transaction opens; each write is then
one short transaction (memory rows, detail rows, audit events, embedding cache).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import UUID, uuid4

from pgvector import Vector as PgVector

from ..db import Connection, Database
from ..db.audit import record_events
from ..embeddings.cache import Embedded, EmbeddingCache, text_digest
from ..errors import (
    ConflictError,
    FieldProblem,
    InvalidInputError,
    NotFoundError,
    more_than,
    out_of_range,
)
from ..people import person_key
from ..tokens import count_tokens
from .ahead import slot_and_event
from .changes import apply_changes, audit_values, refuse_cold_detail_edit
from .fact_key import fact_hash
from .fact_slots import SELF
from .guard import Guard, clean_changes, clean_memory
from .kinds import (
    MAX_BATCH_ITEMS,
    MAX_PAGE_SIZE,
    FactDetail,
    Kind,
    NewMemory,
    Status,
    SummarySource,
    parse_agent_id,
    parse_new,
)
from .params import parse_enum, parse_memory_id, parse_statuses, parse_tag, parse_time
from .purge import purge_rows
from .records import Memory, MemoryEvent, Page, decode_cursor, encode_cursor
from .summaries import summarize

UPDATE_ATTEMPTS = 10

_DETAIL_UPSERT = {
    Kind.DECISION: "upsert_decision_details",
    Kind.FACT: "upsert_fact_details",
    Kind.EPISODE: "upsert_episode_details",
    Kind.PROCEDURE: "upsert_procedure_details",
    Kind.CENSOR: "upsert_censor_details",
}




@dataclass(frozen=True, slots=True, kw_only=True)
class PreparedWrite:
    """A validated batch with its summaries and embeddings, ready for one transaction."""

    agent: str
    news: list[NewMemory]
    ids: list[UUID]
    summaries: list[tuple[str, SummarySource]]
    tokens: list[int]
    embedded: Embedded
    redacted: list[tuple[str, ...]] = field(default_factory=list)  # kinds, per memory


@dataclass(frozen=True, slots=True, kw_only=True)
class PreparedUpdate:
    """A change of one memory read at ``current.version``, ready for one transaction."""

    agent: str
    current: Memory
    updated: Memory
    old: dict[str, Any]  # the changed fields' values before and after (the audit event)
    new: dict[str, Any]
    embedded: Embedded | None  # the new summary's embedding, when the summary changed


class MemoryManager:
    """Owns the memory tables for every agent; every method is scoped to one agent."""

    def __init__(self, db: Database, embeddings: EmbeddingCache) -> None:
        self._db = db
        self.embeddings = embeddings
        self.guard = Guard(db)  # what every write keeps out (secrets), by agent

    @property
    def model_name(self) -> str:
        return self.embeddings.model_name

    # ------------------------------------------------------------------ create

    async def remember(self, agent_id: str, kind: Kind | str, fields: Mapping[str, Any]) -> Memory:
        agent = parse_agent_id(agent_id)
        return (await self._insert(agent, [parse_new(kind, fields)]))[0]

    async def remember_many(
        self, agent_id: str, items: Sequence[Mapping[str, Any]]
    ) -> list[Memory]:
        """All or nothing: any invalid item rejects the call, naming ``items[i].field``."""
        agent = parse_agent_id(agent_id)
        if len(items) > MAX_BATCH_ITEMS:
            raise InvalidInputError.single(
                "items", more_than(MAX_BATCH_ITEMS, len(items)))
        parsed: list[NewMemory] = []
        problems: list[FieldProblem] = []
        for index, item in enumerate(items):
            prefix = f"items[{index}]."
            if not isinstance(item, Mapping):
                problems.append(FieldProblem(f"items[{index}]", "must be an object"))
                continue
            fields = dict(item)
            if "kind" not in fields:
                problems.append(FieldProblem(f"{prefix}kind", "missing"))
                continue
            try:
                parsed.append(parse_new(fields.pop("kind"), fields, prefix))
            except InvalidInputError as exc:
                problems.extend(exc.problems)
        if problems:
            raise InvalidInputError(problems)
        return await self._insert(agent, parsed) if parsed else []

    async def _insert(self, agent: str, news: list[NewMemory]) -> list[Memory]:
        prepared = await self.prepare(agent, news)
        async with self._db.transaction() as conn:
            return await self.write(conn, prepared)

    async def prepare(self, agent: str, news: list[NewMemory], *,
                      embed: bool = True) -> PreparedWrite:
        """Everything slow (summaries, token counts, embeddings), before any transaction.
        ``embed=False``: rows whose summary is replaced and embedded later (an imported
        episode's, at close) are written without a vector.  Secrets are taken out first
        (guard.py), by the agent's policy."""
        policy = await self.guard.policy(agent)
        cleaned = [clean_memory(n, policy, f"items[{i}]." if len(news) > 1 else "")
                   for i, n in enumerate(news)]
        news = [n for n, _ in cleaned]
        summaries = [summarize(n.detail, n.common.summary) for n in news]
        texts = [text for text, _ in summaries]
        return PreparedWrite(
            agent=agent, news=news, ids=[uuid4() for _ in news], summaries=summaries,
            tokens=[count_tokens(text) for text in texts],
            embedded=(await self.embeddings.embed(agent, texts) if embed
                      else Embedded([None] * len(texts), {})),  # type: ignore[list-item]
            redacted=[kinds for _, kinds in cleaned])

    async def prepare_each(self, agent: str, news: list[NewMemory]) -> list[PreparedWrite]:
        """``prepare`` for memories written one at a time (facts, through the value rule):
        one cache lookup and one model call for all of them, then a batch of one each."""
        if not news:
            return []
        batch = await self.prepare(agent, news)
        fresh = batch.embedded.fresh
        out = []
        for new, ident, summary, tokens, vector, taken in zip(
                batch.news, batch.ids, batch.summaries, batch.tokens, batch.embedded.vectors,
                batch.redacted, strict=True):
            digest = text_digest(summary[0])
            out.append(PreparedWrite(
                agent=agent, news=[new], ids=[ident], summaries=[summary], tokens=[tokens],
                embedded=Embedded([vector], {digest: fresh[digest]} if digest in fresh else {}),
                redacted=[taken]))
        return out

    async def write(self, conn: Connection, batch: PreparedWrite) -> list[Memory]:
        """Insert a prepared batch inside the caller's transaction."""
        agent = batch.agent
        rows: list[dict[str, Any]] = []
        details: dict[Kind, list[dict[str, Any]]] = {}
        events: list[dict[str, Any]] = []
        news = [new.model_copy(update={"detail": complete_fact(new.detail)})
                if isinstance(new.detail, FactDetail) else new for new in batch.news]
        for ordinal, (new, memory_id, (summary, source), n_tokens) in enumerate(
                zip(news, batch.ids, batch.summaries, batch.tokens, strict=True), start=1):
            rows.append({
                "id": str(memory_id), "kind": new.kind.value, "summary": summary,
                "summary_source": source.value, "summary_tokens": n_tokens,
                "importance": new.common.importance, "tags": new.common.tags, "ord": ordinal,
                "people": new.common.people,
            })
            details.setdefault(new.kind, []).append(_detail_row(agent, memory_id, new.detail))
            taken = batch.redacted[ordinal - 1] if batch.redacted else ()
            events.append({"memory_id": str(memory_id), "event": "created", "old_values": None,
                           "new_values": {"kind": new.kind.value, "summary": summary,
                                          **({"redacted": list(taken)} if taken else {})},
                           "actor": None})
        stamps = {r["id"]: r for r in await conn.fetch(
            "insert_memories", agent, rows,
            [None if v is None else PgVector(v) for v in batch.embedded.vectors],
            self.embeddings.model_name if any(v is not None for v in batch.embedded.vectors)
            else None)}
        for kind, kind_rows in details.items():
            await conn.execute(_DETAIL_UPSERT[kind], agent, kind_rows)
        await record_events(conn, agent, events)
        await self.embeddings.save(conn, agent, batch.embedded)
        return [
            Memory(id=memory_id, agent_id=agent, kind=new.kind, status=Status.ACTIVE,
                   summary=summary, summary_source=source, summary_tokens=n_tokens,
                   importance=new.common.importance, tags=new.common.tags,
                   embedding_model=self.embeddings.model_name, version=1,
                   created_at=stamps[memory_id]["created_at"],
                   updated_at=stamps[memory_id]["updated_at"], detail=new.detail,
                   people=new.common.people)
            for new, memory_id, (summary, source), n_tokens in zip(
                news, batch.ids, batch.summaries, batch.tokens, strict=True)
        ]

    # ------------------------------------------------------------------ read

    async def get(self, agent_id: str, memory_id: UUID | str, *,
                  include_deleted: bool = False) -> Memory:
        agent = parse_agent_id(agent_id)
        ident = parse_memory_id(memory_id)
        row = await self._db.fetchrow("get_memory", agent, ident)
        if row is None or (row["status"] == Status.DELETED and not include_deleted):
            raise NotFoundError("memory", ident)
        return Memory.from_row(row)


    async def history(self, agent_id: str, memory_id: UUID | str) -> list[MemoryEvent]:
        """The audit trail of one memory (it outlives a purge, without the content)."""
        agent = parse_agent_id(agent_id)
        ident = parse_memory_id(memory_id)
        rows = await self._db.fetch("memory_events", agent, ident)
        if not rows:
            raise NotFoundError("memory", ident)
        return [MemoryEvent.model_validate(dict(r)) for r in rows]

    # ------------------------------------------------------------------ update

    async def update(self, agent_id: str, memory_id: UUID | str, changes: Mapping[str, Any], *,
                     actor: str | None = None) -> Memory:
        """Change fields; the summary and embedding follow, and the old values are audited."""
        agent = parse_agent_id(agent_id)
        ident = parse_memory_id(memory_id)
        if not changes:
            raise InvalidInputError.single("changes", "nothing to update")
        changes = clean_changes(changes, await self.guard.policy(agent))
        for _ in range(UPDATE_ATTEMPTS):
            current = await self.get(agent, ident)
            prepared = await self.prepare_update(agent, current, changes)
            if prepared is None:
                return current
            async with self._db.transaction() as conn:
                await conn.execute("lock_agent_facts", agent)  # never mid-learn_fact
                done = await self.write_update(conn, prepared, actor=actor)
            if done is not None:
                return done
            # changed or deleted since we read it: read again
        raise ConflictError(f"memory {ident} kept changing; update not applied")

    async def prepare_update(self, agent: str, current: Memory, changes: Mapping[str, Any]
                             ) -> PreparedUpdate | None:
        """The changed record and its new summary's embedding, before any transaction;
        None when the changes change nothing."""
        updated = apply_changes(current, changes)
        old, new = audit_values(current), audit_values(updated)
        changed = sorted(k for k in new if new[k] != old.get(k))
        if not changed:
            return None
        refuse_cold_detail_edit(current, changed)
        embedded = None
        if updated.summary != current.summary:
            embedded = await self.embeddings.embed(agent, [updated.summary])
        return PreparedUpdate(agent=agent, current=current, updated=updated,
                              old={k: old.get(k) for k in changed},
                              new={k: new[k] for k in changed}, embedded=embedded)

    async def write_update(self, conn: Connection, prepared: PreparedUpdate, *,
                           actor: str | None) -> Memory | None:
        """Write a prepared update inside the caller's transaction; None when the memory
        changed or went since it was read (its version moved)."""
        agent, current, updated = prepared.agent, prepared.current, prepared.updated
        embedded = prepared.embedded
        if isinstance(updated.detail, FactDetail):
            detail = updated.detail
            if "content" in prepared.new and not any(
                    name.startswith("slot_") or name == "event_at" for name in prepared.new):
                # new words: their slot and plan are read again
                detail = detail.model_copy(update={"slot_subject": None, "slot_attribute": None,
                                                   "slot_value": None, "slot_ended": False,
                                                   "event_at": None})
            updated = updated.model_copy(update={"detail": complete_fact(detail)})
        row = await conn.fetchrow(
            "update_memory", agent, current.id, current.version, updated.summary,
            updated.summary_source.value, updated.summary_tokens,
            PgVector(embedded.vectors[0]) if embedded else None,
            self.embeddings.model_name, updated.importance, updated.tags)
        if row is None:
            return None
        await conn.execute(_DETAIL_UPSERT[current.kind], agent,
                           [_detail_row(agent, current.id, updated.detail)])
        await record_events(conn, agent, [{
            "memory_id": str(current.id), "event": "updated", "actor": actor,
            "old_values": prepared.old, "new_values": prepared.new}])
        if embedded:
            await self.embeddings.save(conn, agent, embedded)
        return updated.model_copy(update={
            "version": row["version"], "updated_at": row["updated_at"],
            "embedding_model": (self.embeddings.model_name if embedded
                                else current.embedding_model)})

    # ------------------------------------------------------------------ delete

    async def delete(self, agent_id: str, memory_id: UUID | str, *, purge: bool = False,
                     actor: str | None = None) -> None:
        """Soft delete (status ``deleted``, reversible in SQL) or purge (rows and content gone)."""
        agent = parse_agent_id(agent_id)
        ident = parse_memory_id(memory_id)
        async with self._db.transaction() as conn:
            await conn.execute("lock_agent_facts", agent)  # never mid-learn_fact
            if purge:
                event = await purge_rows(conn, self.embeddings, agent, ident)
            else:
                before = await conn.fetchval("soft_delete_memory", agent, ident)
                if before is None:
                    raise NotFoundError("memory", ident)
                event = {"event": "deleted", "old_values": {"status": before},
                         "new_values": {"status": Status.DELETED.value}}
            await record_events(conn, agent,
                               [{"memory_id": str(ident), "actor": actor, **event}])

    async def counts(self, agent_id: str) -> dict[str, dict[str, int]]:
        """{kind: {status: n}} for one agent."""
        agent = parse_agent_id(agent_id)
        out: dict[str, dict[str, int]] = {}
        for r in await self._db.fetch("count_memories", agent):
            out.setdefault(r["kind"], {})[r["status"]] = r["n"]
        return out

    # last in the class: a method named `list` shadows the builtin in later signatures
    async def list(
        self, agent_id: str, *, kind: Kind | str | None = None,
        status: Status | str | Sequence[Status | str] | None = None,
        created_after: datetime | None = None, created_before: datetime | None = None,
        limit: int = 50, cursor: str | None = None, tag: str | None = None,
        user: str | None = None,
    ) -> Page:
        """Newest first, paged by an opaque cursor; deleted memories only when asked for;
        ``user``: what that person may read (theirs and the shared ones, people/)."""
        agent = parse_agent_id(agent_id)
        askers = None if user is None else [person_key(user, "user")]
        kind_value = None if kind is None else parse_enum(Kind, kind, "kind").value
        statuses = parse_statuses(status)
        if isinstance(limit, bool) or not isinstance(limit, int) or not (
                1 <= limit <= MAX_PAGE_SIZE):
            raise InvalidInputError.single("limit", out_of_range(1, MAX_PAGE_SIZE))
        after = parse_time(created_after, "created_after")
        before = parse_time(created_before, "created_before")
        after_at, after_id = decode_cursor(cursor) if cursor else (None, None)
        tag_value = None if tag is None else parse_tag(tag)
        rows = await self._db.fetch("list_memories", agent, kind_value, statuses, after,
                                    before, after_at, after_id, limit + 1, tag_value,
                                    askers)
        items = [Memory.from_row(r) for r in rows[:limit]]
        more = len(rows) > limit
        next_cursor = encode_cursor(items[-1].created_at, items[-1].id) if more else None
        return Page(items=items, next_cursor=next_cursor)


# ---------------------------------------------------------------------- helpers


def complete_fact(detail: FactDetail) -> FactDetail:
    """The fact with when it was said (default now), its slot and its plan's moment read
    from its content where the caller gave none (a given slot is normalised)."""
    said = detail.valid_from or datetime.now(UTC)
    updates: dict[str, Any] = {"valid_from": said}
    slot, event = slot_and_event(detail.content, said)
    if detail.slot_attribute is not None:
        updates.update(slot_subject=" ".join((detail.slot_subject or SELF).lower().split()),
                       slot_attribute=" ".join(detail.slot_attribute.lower().split()),
                       slot_value=" ".join((detail.slot_value or "").lower().split()))
    elif slot is not None:
        updates.update(slot_subject=slot.subject, slot_attribute=slot.attribute,
                       slot_value=slot.value, slot_ended=slot.ended)
    if detail.event_at is None and event is not None:
        updates["event_at"] = event
    return detail.model_copy(update=updates)


def _detail_row(agent: str, memory_id: UUID, detail: Any) -> dict[str, Any]:
    row: dict[str, Any] = detail.model_dump(mode="json")
    row.update(agent_id=agent, memory_id=str(memory_id))
    if isinstance(detail, FactDetail):
        row["normalized_hash"] = "\\x" + fact_hash(detail.content).hex()
    return row


