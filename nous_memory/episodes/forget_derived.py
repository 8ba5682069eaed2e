"""What was learned from a forgotten message, found and removed (``forget.py`` rebuilds
what is made from the transcript; this module takes out what was derived from it once).

Inside the forget's transaction, under the agent's fact lock.  A fact learned from the
message (``source_seq``) goes when the message is deleted; any fact or decision of the
episode that holds the message's trace goes too (a redaction's string, a deleted
message's own words).  A fact that goes leaves its supersession chain whole.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from ..db import Connection
from ..db.audit import record_events
from ..embeddings.cache import EmbeddingCache
from ..memories.purge import purge_rows
from .close import EpisodeExtraction
from .traces import Trace


async def forget_derived(conn: Connection, embeddings: EmbeddingCache, agent: str,
                         episode: UUID, seq: int, trace: Trace, *, by_seq: bool,
                         actor: str, rebuilt: EpisodeExtraction | None = None,
                         summary: str | None = None, old_summary: str | None = None
                         ) -> dict[str, int]:
    """Purge, delete and scrub; the counts for the receipt.  ``rebuilt``/``summary``:
    what the close's texts were made again as; ``old_summary``: the one replaced."""
    facts, linked, kept = await _facts(conn, embeddings, agent, episode, seq, trace, by_seq,
                                       actor)
    decisions, kept_decisions = await _decisions(conn, embeddings, agent, episode, trace,
                                                 actor)
    await _extraction(conn, agent, episode, seq, trace, by_seq, rebuilt, summary)
    rolling = await _rolling(conn, agent, episode, seq, trace)
    await conn.execute("forget_extraction_cache", agent, episode)
    events = await _events(conn, agent, trace, [episode, *kept, *kept_decisions, *linked],
                           str(episode), old_summary)
    return {"facts": facts, "decisions": decisions, "rolling_summaries": rolling,
            "events": events}


async def _facts(conn: Connection, embeddings: EmbeddingCache, agent: str, episode: UUID,
                 seq: int, trace: Trace, by_seq: bool, actor: str
                 ) -> tuple[int, list[UUID], list[UUID]]:
    """How many facts went, the facts they were chained to (whose audit may name them),
    and the episode's facts that stay."""
    rows = await conn.fetch("forget_facts", agent, episode)
    marks = await trace.marks(conn, [f"{r['content']} {r['slot_value'] or ''}" for r in rows])
    # after a deletion, a fact learned from another message is that message's, whatever
    # words it shares with this one; only a fact of no known message is judged by them
    gone = [r for r, marked in zip(rows, marks, strict=True)
            if (by_seq and r["source_seq"] == seq)
            or (marked and not (by_seq and r["source_seq"] is not None))]
    events, linked = [], []
    for row in gone:
        links = await conn.fetchrow("forget_fact_links", agent, row["id"])
        assert links is not None  # under the agent's fact lock
        before, after = links["supersedes_id"], links["superseded_by_id"]
        linked += [i for i in (before, after) if i]
        await conn.execute("forget_mend_chain", agent, row["id"], before, after)
        event = await purge_rows(conn, embeddings, agent, row["id"])
        events.append({"memory_id": str(row["id"]), "actor": actor, **event})
    await record_events(conn, agent, events)
    return len(gone), linked, [r["id"] for r in rows if r not in gone]


async def _decisions(conn: Connection, embeddings: EmbeddingCache, agent: str,
                     episode: UUID, trace: Trace, actor: str) -> tuple[int, list[UUID]]:
    """How many decisions went, and the episode's decisions that stay."""
    rows = await conn.fetch("forget_decisions", agent, episode)
    texts = [" ".join([r["description"], r["context"] or "", r["pattern"] or "",
                       *(r["reasons"] or [])]) for r in rows]
    marks = await trace.marks(conn, texts)
    events, kept = [], []
    for row, marked in zip(rows, marks, strict=True):
        if marked:
            event = await purge_rows(conn, embeddings, agent, row["id"])
            events.append({"memory_id": str(row["id"]), "actor": actor, **event})
        else:
            kept.append(row["id"])
    await record_events(conn, agent, events)
    return len(events), kept


async def _extraction(conn: Connection, agent: str, episode: UUID, seq: int, trace: Trace,
                      by_seq: bool, rebuilt: EpisodeExtraction | None,
                      summary: str | None) -> None:
    """The close's stored extraction without the facts and decisions of the message, its
    texts the ones made again (else scrubbed); a pending learn then learns the rest."""
    raw = await conn.fetchval("forget_extraction", agent, episode)
    if raw is None:
        return
    x = EpisodeExtraction.model_validate(raw)
    if rebuilt is not None:
        x = x.model_copy(update={name: getattr(rebuilt, name) for name in (
            "title", "summary", "key_points", "outcome", "topics", "lessons")})
    elif summary is not None:
        x = x.model_copy(update={"summary": summary})
    fact_marks = await trace.marks(conn, [f"{f.content} {f.value or ''}" for f in x.facts])
    facts = [f for f, m in zip(x.facts, fact_marks, strict=True)
             if not m and not (by_seq and f.seq == seq)]
    decision_marks = await trace.marks(conn, [
        " ".join([d.description, d.pattern or "", *d.reasons]) for d in x.decisions])
    decisions = [d for d, m in zip(x.decisions, decision_marks, strict=True) if not m]
    texts = [x.title, x.summary, x.outcome, *x.key_points, *x.topics, *x.lessons]
    marks = await trace.marks(conn, texts)
    kept = [None if m else t for t, m in zip(texts, marks, strict=True)] if not trace.spans \
        else [trace.scrub(t) if t else t for t in texts]
    lists = kept[3:]
    n_points, n_topics = len(x.key_points), len(x.topics)
    cleaned = x.model_copy(update={
        "title": kept[0] or "Untitled conversation",
        "summary": kept[1] or "(removed)", "outcome": kept[2],
        "key_points": [t for t in lists[:n_points] if t],
        "topics": [t for t in lists[n_points:n_points + n_topics] if t],
        "lessons": [t for t in lists[n_points + n_topics:] if t],
        "facts": facts, "decisions": decisions})
    await conn.execute("forget_extraction_write", agent, episode,
                       cleaned.model_dump(mode="json"))


async def _rolling(conn: Connection, agent: str, episode: UUID, seq: int,
                   trace: Trace) -> int:
    """Rolling summary records that folded the message or hold its trace are deleted
    (the chain restarts from the raw messages); so are its working-memory analyses."""
    rows = await conn.fetch("forget_rolling", agent, episode)
    marks = await trace.marks(conn, [f"{r['content']} {r['facets']}" for r in rows])
    ids = [r["id"] for r, m in zip(rows, marks, strict=True)
           if m or r["first_seq"] <= seq <= r["last_seq"]]
    if ids:
        await conn.execute("conv_state_invalidate", agent, episode,
                           f"message {seq} forgotten", None)
        await conn.execute("forget_rolling_delete", agent, episode, ids)
    analyses = await conn.fetch("forget_analyses", agent, episode)
    marks = await trace.marks(conn, [r["content"] for r in analyses])
    stale = [r["id"] for r, m in zip(analyses, marks, strict=True) if m or r["seq"] == seq]
    if stale:
        await conn.execute("forget_analyses_delete", agent, episode, stale)
    return len(ids)


async def _events(conn: Connection, agent: str, trace: Trace, memories: list[UUID],
                  named: str, old_summary: str | None) -> int:
    """Audit events of these memories (the episode, what was learned from it and what
    that was chained to) and of any memory whose event names the episode, whose values
    hold the trace, keep their place without their values."""
    rows = await conn.fetch("forget_events", agent, memories, named)
    texts = [" ".join(_values(r["old_values"]) + _values(r["new_values"])) for r in rows]
    marks = await trace.marks(conn, texts)
    ids = [r["id"] for r, m, text in zip(rows, marks, texts, strict=True)
           if m or (old_summary and old_summary in text)]
    if ids:
        await conn.execute("forget_events_scrub", agent, ids)
    return len(ids)


def _values(value: Any) -> list[str]:
    """The texts of an audit value, its keys left out ("closed" is a state's name)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _values(v)]
    if isinstance(value, list):
        return [t for v in value for t in _values(v)]
    return []
