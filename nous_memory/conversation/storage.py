"""Watermark, chain and analyses in PostgreSQL (the only module here that runs SQL
besides messages.py).  Every statement is a named query scoped to one agent."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from ..db import Connection, Database
from ..errors import NotFoundError
from ..memories.messages import to_message
from .facets import Facets
from .pairs import ConvMessage
from .results import Level as Level
from .results import Op as Op
from .results import Source as Source
from .results import SummaryRecord as SummaryRecord


@dataclass(frozen=True, slots=True, kw_only=True)
class State:
    watermark_seq: int
    watermark_hash: bytes | None
    summary_id: int | None
    story_id: int | None
    version: int
    armed: bool
    folded_message_count: int
    chapter_messages: int
    breaker_failures: int
    breaker_open_until: datetime | None
    invalidated_reason: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class NewRecord:
    parent_id: int | None
    level: Level
    op: Op
    depth: int
    first_seq: int
    last_seq: int
    covered: int
    content: str
    tokens: int
    source: Source
    facets: Facets
    notes: tuple[str, ...] = field(default=())


@dataclass(frozen=True, slots=True, kw_only=True)
class Analysis:
    seq: int
    id: int
    content_hash: bytes
    kind: str
    content: str
    created_at: datetime


def _record(row: Mapping[str, Any]) -> SummaryRecord:
    return SummaryRecord(
        id=row["id"], parent_id=row["parent_id"], level=row["level"], op=row["op"],
        depth=row["depth"], first_seq=row["first_seq"], last_seq=row["last_seq"],
        covered=row["covered"], content=row["content"], chars=row["chars"],
        tokens=row["tokens"], source=row["source"], facets=Facets(**(row["facets"] or {})),
        status=row["status"], notes=tuple(row["notes"] or ()), created_at=row["created_at"])


async def episode_state(db: Database | Connection, agent: str, episode: UUID) -> str:
    """The episode's lifecycle state; NotFoundError when it is missing or deleted."""
    row = await db.fetchrow("conv_episode", agent, episode)
    if row is None:
        raise NotFoundError("episode", episode)
    return str(row["state"])


async def find_state(db: Database, agent: str, episode: UUID) -> State | None:
    """The conversation's state, or None when working memory never saw it (read only)."""
    row = await db.fetchrow("conv_state_get", agent, episode)
    return None if row is None else State(**{k: row[k] for k in State.__dataclass_fields__})


async def load_state(db: Database, agent: str, episode: UUID) -> State:
    state = await find_state(db, agent, episode)
    if state is None:  # the first pass over this conversation
        await db.execute("conv_state_ensure", agent, episode)
        state = await find_state(db, agent, episode)
    assert state is not None
    return state


async def heads(db: Database, agent: str, episode: UUID, state: State
                ) -> tuple[SummaryRecord | None, SummaryRecord | None]:
    """(story, chapter): the current heads of the chain, in one query."""
    wanted = [i for i in (state.story_id, state.summary_id) if i is not None]
    if not wanted:
        return None, None
    rows = {r["id"]: _record(r) for r in await db.fetch("conv_summaries_by_id", agent,
                                                        episode, wanted)}
    return (rows.get(state.story_id) if state.story_id is not None else None,
            rows.get(state.summary_id) if state.summary_id is not None else None)


async def history(db: Database, agent: str, episode: UUID, *, limit: int,
                  offset: int) -> list[SummaryRecord]:
    rows = await db.fetch("conv_summary_history", agent, episode, limit, offset)
    return [_record(r) for r in rows]


async def insert_record(conn: Connection, agent: str, episode: UUID, new: NewRecord) -> int:
    ident = await conn.fetchval(
        "conv_summary_insert", agent, episode, new.parent_id, new.level, new.op, new.depth,
        new.first_seq, new.last_seq, new.covered, new.content, len(new.content), new.tokens,
        new.source, new.facets.model_dump(), list(new.notes))
    if new.parent_id is not None:
        await conn.execute("conv_summary_supersede", agent, new.parent_id)
    return int(ident)


async def unfolded(db: Database, agent: str, episode: UUID,
                   watermark: int) -> list[ConvMessage]:
    return [to_message(r) for r in await db.fetch("conv_messages_after", agent, episode,
                                                  watermark)]


async def latest_analyses(db: Database, agent: str, episode: UUID,
                          seqs: Sequence[int]) -> dict[int, Analysis]:
    rows = await db.fetch("conv_analyses_latest", agent, episode, list(seqs))
    return {r["seq"]: Analysis(seq=r["seq"], id=r["id"], content_hash=bytes(r["content_hash"]),
                               kind=r["kind"], content=r["content"],
                               created_at=r["created_at"]) for r in rows}


async def insert_analyses(db: Database | Connection, agent: str, episode: UUID,
                          rows: Sequence[tuple[int, bytes, str, str]]) -> None:
    """(seq, content_hash, kind, text) rows; an older analysis is simply outranked."""
    if rows:
        await db.execute("conv_analyses_insert", agent, episode, [
            {"seq": s, "content_hash": h.hex(), "kind": k, "content": t}
            for s, h, k, t in rows])


async def invalidate(db: Database, agent: str, episode: UUID, reason: str,
                     version: int | None) -> bool:
    """Drop the current chain (kept as ``invalidated``) and reset the watermark."""
    async with db.transaction() as conn:
        return await invalidate_in(conn, agent, episode, reason, version)


async def invalidate_in(conn: Connection, agent: str, episode: UUID, reason: str,
                        version: int | None) -> bool:
    """``invalidate`` inside the caller's transaction; False when ``version`` is stale."""
    if await conn.fetchval("conv_state_invalidate", agent, episode, reason, version) is None:
        return False
    await conn.execute("conv_summaries_invalidate", agent, episode)
    return True


async def get_policy(db: Database, agent: str) -> dict[str, Any]:
    return dict(await db.fetchval("conv_policy_get", agent) or {})


async def set_policy(db: Database, agent: str, knobs: Mapping[str, Any]) -> dict[str, Any]:
    return dict(await db.fetchval("conv_policy_set", agent, dict(knobs)))
