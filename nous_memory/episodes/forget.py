"""Forgetting one message of an episode, with everything derived from it.

An owner deletes a message (its text goes; a tombstone keeps its place and time) or
redacts strings in it (each replaced by ``[redacted]``), in an open or a closed episode.
Then nothing derived from its old text may remain: the chunks are rebuilt from the
transcript without it; the summary is rebuilt the way it was made (the LLM's again, or
the rules'), or a redaction's strings are scrubbed from it; the facts learned from the
message and the decisions that hold its trace (``traces.py``) are purged, each leaving
its supersession chain whole (a value it had replaced holds again); the rolling
summaries that folded it, its working-memory analyses, the query-time extraction cache
of the episode and the embedding cache of every text that went are deleted; audit events
whose values held its trace keep their place without their values.  One event records
what was done, by whom, never the text.

The slow parts (the LLM, the embedding model) run before the one transaction, which
writes only if the message is still as it was read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from pgvector import Vector as PgVector

from ..db import Connection, Database
from ..db.audit import record_events
from ..embeddings.cache import EmbeddingCache
from ..errors import ConflictError, InvalidInputError, NotFoundError
from ..llm import LLMError
from ..memories.kinds import MAX_LABEL_CHARS, SummarySource, parse_agent_id
from ..memories.messages import TranscriptMessage
from ..memories.params import parse_actor, parse_memory_id
from ..tokens import count_tokens
from .chunks import Chunk, chunk_messages, embedding_text
from .close import EpisodeCloser, EpisodeExtraction, rule_summary
from .forget_derived import forget_derived
from .lifecycle import read_transcript
from .results import MessageErasure
from .traces import Trace, parse_spans


@dataclass(frozen=True, slots=True, kw_only=True)
class _Plan:
    """What the transaction writes, computed before it."""

    trace: Trace
    new_content: str
    metadata: dict[str, Any]
    remaining: list[TranscriptMessage]
    chunks: list[Chunk]
    chunk_vectors: list[Any]
    rebuilt: EpisodeExtraction | None  # the LLM's new extraction
    summary: str | None  # a new summary (None: keep or scrub the stored one)
    summary_source: SummarySource | None
    summary_made: str  # "rebuilt", "scrubbed" or "kept": what the receipt says
    summary_vector: Any


class MessageForgetter:
    def __init__(self, db: Database, embeddings: EmbeddingCache, closer: EpisodeCloser,
                 chunk_tokens: int) -> None:
        self._db = db
        self._embeddings = embeddings
        self._closer = closer
        self._chunk_tokens = chunk_tokens

    async def storage(self, agent_id: str, episode_id: UUID | str) -> str:
        """Where the episode's transcript is (``hot``, ``trimmed``, ``archived``,
        ``restored``): a cold one is restored before a message of it is forgotten."""
        row = await self._db.fetchrow("forget_episode", parse_agent_id(agent_id),
                                      parse_memory_id(episode_id, "episode_id"))
        if row is None:
            raise NotFoundError("episode", episode_id)
        return str(row["storage"])

    async def forget(self, agent_id: str, episode_id: UUID | str, seq: object, *,
                     redact: Sequence[str] | None = None, actor: str = "python",
                     restored: bool = False) -> MessageErasure:
        agent = parse_agent_id(agent_id)
        ident = parse_memory_id(episode_id, "episode_id")
        if isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq < 2**31:
            raise InvalidInputError.single("seq", "must be an integer >= 0")
        who = parse_actor(actor)
        episode, message = await self._read(agent, ident, seq)
        spans = None if redact is None else parse_spans(redact, _all_text(message))
        plan = await self._plan(agent, ident, seq, episode, message, spans)
        async with self._db.transaction() as conn:
            await conn.execute("lock_agent_facts", agent)  # facts are purged below
            again, now = await _locked(conn, agent, ident, seq)
            if _all_text(now) != _all_text(message) or any(
                    again[k] != episode[k] for k in ("state", "version", "message_count")):
                raise ConflictError(f"episode {ident} changed while message {seq} was being "
                                    "forgotten; nothing was changed. Try again")
            counts = await self._write(conn, agent, ident, seq, episode, plan, who)
            erasure = MessageErasure(
                episode_id=ident, seq=seq, action="redacted" if spans else "deleted",
                actor=who, restored=restored, **counts)
            await record_events(conn, agent, [{
                "memory_id": str(ident), "event": "updated", "actor": who,
                "old_values": None,
                "new_values": {"forgot_message": erasure.model_dump(
                    mode="json", exclude={"episode_id", "actor", "restored"})}}])
        return erasure

    async def _read(self, agent: str, ident: UUID, seq: int) -> tuple[Any, Any]:
        async with self._db.acquire() as conn:
            return await _locked(conn, agent, ident, seq, lock=False)

    async def _plan(self, agent: str, ident: UUID, seq: int, episode: Any, message: Any,
                    spans: tuple[str, ...] | None) -> _Plan:
        redaction = Trace.of_spans(spans) if spans is not None else None
        new_content = redaction.scrub(message["content"]) if redaction is not None else ""
        metadata = _scrub_json(message["metadata"] or {}, redaction)
        transcript = await read_transcript(self._db, agent, ident)
        remaining = [replace(m, content=new_content, metadata=metadata) if m.seq == seq
                     else m for m in transcript if m.seq != seq or redaction is not None]
        title = episode["title"]
        quoted = False  # a summary given (not made from the transcript) that quotes it
        async with self._db.acquire() as conn:  # what its trace reaches, in one visit
            trace = redaction or await Trace.of_deleted(
                conn, _all_text(message), [m.content for m in remaining])
            chunked = await conn.fetchrow("episode_last_chunk", agent, ident)
            if trace.lexemes:
                title_mark, quoted = await trace.marks(conn, [title, episode["summary"]])
                title = None if title_mark else title
        upto = chunked["last_seq"] if chunked is not None else -1
        chunks = chunk_messages([m for m in remaining if m.seq <= upto],
                                max_tokens=self._chunk_tokens, first_chunk_no=1) if (
            upto >= 0) else []
        summary, source, rebuilt = await self._summary(
            agent, episode, remaining, redacted=bool(trace.spans),
            title=trace.scrub(title) if title else None)
        made = "rebuilt"
        scrubbed = trace.scrub(episode["summary"])
        if summary is None and scrubbed != episode["summary"]:
            summary, source = scrubbed, SummarySource(episode["summary_source"])
            made = "rebuilt" if source is SummarySource.RULE else "scrubbed"
        elif summary is None and quoted and episode["state"] == "closed":
            summary, source = rule_summary(remaining, title), SummarySource.RULE
        texts = [embedding_text(c.content, c.context) for c in chunks] + (
            [summary] if summary is not None else [])
        vectors = await self._embeddings.embed_texts(agent, texts)
        return _Plan(trace=trace, new_content=new_content, metadata=metadata,
                     remaining=remaining, chunks=chunks, chunk_vectors=vectors[:len(chunks)],
                     rebuilt=rebuilt, summary=summary, summary_source=source,
                     summary_made=made if summary is not None else "kept",
                     summary_vector=vectors[-1] if summary is not None else None)

    async def _summary(self, agent: str, episode: Any, remaining: list[TranscriptMessage],
                       *, redacted: bool, title: str | None
                       ) -> tuple[str | None, SummarySource | None, EpisodeExtraction | None]:
        """A closed episode's summary made again the way it was made; a redaction keeps
        an LLM's or an owner's summary and scrubs its strings (in the transaction)."""
        source = SummarySource(episode["summary_source"])
        if episode["state"] != "closed" or source not in (SummarySource.LLM,
                                                          SummarySource.RULE):
            return None, None, None
        if redacted and source == SummarySource.LLM:
            return None, None, None
        if source == SummarySource.LLM and self._closer.uses_llm and remaining:
            try:
                rebuilt = await self._closer.extract_clean(agent, remaining)
                return rebuilt.summary, SummarySource.LLM, rebuilt
            except LLMError:
                pass  # the rules' summary: the old one must go either way
        return rule_summary(remaining, title), SummarySource.RULE, None

    async def _write(self, conn: Connection, agent: str, ident: UUID, seq: int,
                     episode: Any, plan: _Plan, actor: str) -> dict[str, Any]:
        trace = plan.trace
        deleted = not plan.new_content
        # first: a fold in flight cannot land, and work computed from the episode as it
        # was (a learn, an upgrade) sees its version change and starts again
        await conn.execute("conv_state_touch", agent, ident)
        await conn.execute("memory_touch", agent, ident)
        await conn.execute("forget_message_write", agent, ident, seq, plan.new_content,
                           count_tokens(plan.new_content), deleted, plan.metadata,
                           datetime.now(UTC))
        model = self._embeddings.model_name
        gone = await conn.fetch("forget_chunks", agent, ident)
        if plan.chunks:
            await conn.execute(
                "insert_chunks", agent, ident, [PgVector(v) for v in plan.chunk_vectors],
                model, [_chunk_row(c, i) for i, c in enumerate(plan.chunks, start=1)])
        kept = {embedding_text(c.content, c.context) for c in plan.chunks}
        for row in gone:
            text = embedding_text(row["content"], row["context"])
            if text not in kept:
                await self._embeddings.forget(conn, agent, row["embedding_model"], text)
        summary = await self._write_summary(conn, agent, ident, episode, plan, trace)
        derived = await forget_derived(
            conn, self._embeddings, agent, ident, seq, trace, by_seq=deleted, actor=actor,
            rebuilt=plan.rebuilt, summary=plan.summary,
            old_summary=episode["summary"] if plan.summary is not None else None)
        return {"chunks": len(plan.chunks), "summary": summary, **derived}

    async def _write_summary(self, conn: Connection, agent: str, ident: UUID, episode: Any,
                             plan: _Plan, trace: Trace) -> str:
        x = plan.rebuilt
        fields = {"title": episode["title"], "detail": episode["detail"],
                  "outcome": episode["outcome"], "key_points": list(episode["key_points"]),
                  "topics": list(episode["topics"]), "lessons": list(episode["lessons"])}
        if x is not None:
            fields.update(outcome=x.outcome, key_points=x.key_points, topics=x.topics,
                          lessons=x.lessons)
            if fields["title"] is not None and await trace.any(conn, [fields["title"]]):
                fields["title"] = x.title[:MAX_LABEL_CHARS]
        fields = await _scrubbed_fields(conn, trace, fields)
        await conn.execute("forget_episode_fields", agent, ident, *fields.values())
        old, new, source = episode["summary"], plan.summary, plan.summary_source
        if new is None or source is None:
            return "kept"
        await conn.execute("memory_resummarize", agent, ident, new, source.value,
                           count_tokens(new), PgVector(plan.summary_vector),
                           self._embeddings.model_name)
        if new != old:
            await self._embeddings.forget(conn, agent, episode["embedding_model"], old)
        return plan.summary_made


async def _locked(conn: Connection, agent: str, ident: UUID, seq: int, *,
                  lock: bool = True) -> tuple[Any, Any]:
    """The episode (locked when in a transaction) and its message, or the reason why
    the message cannot be forgotten now."""
    episode = await conn.fetchrow("forget_episode", agent, ident)
    if episode is None:
        raise NotFoundError("episode", ident)
    if episode["state"] == "closing":
        raise ConflictError(f"episode {ident} is being closed; forget the message once it "
                            "is closed (a moment later)")
    if lock and episode["storage"] in ("trimmed", "archived"):
        raise ConflictError(f"episode {ident} is in cold storage ({episode['storage']}); "
                            "restore it first")
    message = await conn.fetchrow("forget_message_row", agent, ident, seq)
    if message is None or (message["deleted_at"] is not None and not message["content"]
                           and not message["edits"]):
        raise NotFoundError("message", f"{ident}#{seq}")
    return episode, message


def _all_text(message: Any) -> str:
    """The message's text and every earlier version of it."""
    earlier = [str(e.get("content", "")) for e in message["edits"] or []
               if isinstance(e, dict)]
    return "\n".join([message["content"], *earlier])


def _scrub_json(value: Any, trace: Trace | None) -> Any:
    """Metadata without the message's strings (a deletion keeps none of it)."""
    if trace is None:
        return {}
    if isinstance(value, str):
        return trace.scrub(value)
    if isinstance(value, list):
        return [_scrub_json(v, trace) for v in value]
    if isinstance(value, dict):
        return {k: _scrub_json(v, trace) for k, v in value.items()}
    return value


async def _scrubbed_fields(conn: Connection, trace: Trace,
                           fields: dict[str, Any]) -> dict[str, Any]:
    """A redaction's strings replaced in the episode's texts; after a deletion, a text
    or list item that holds its trace is dropped."""
    if trace.spans:
        return {k: ([trace.scrub(i) for i in v] if isinstance(v, list)
                    else trace.scrub(v) if isinstance(v, str) else v)
                for k, v in fields.items()}
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if isinstance(value, list):
            marks = await trace.marks(conn, value)
            out[key] = [v for v, m in zip(value, marks, strict=True) if not m]
        else:
            out[key] = None if value and await trace.any(conn, [value]) else value
    return out


def _chunk_row(c: Chunk, ordinal: int) -> dict[str, Any]:
    return {"chunk_no": c.chunk_no, "first_seq": c.first_seq, "last_seq": c.last_seq,
            "content": c.content, "context": c.context, "tokens": c.tokens,
            "speakers": c.speakers,
            "started_at": c.started_at.isoformat() if c.started_at else None,
            "ended_at": c.ended_at.isoformat() if c.ended_at else None,
            "message_metadata": c.message_metadata, "ord": ordinal}
