"""The close's follow-up: embed the episode's chunks and summary, learn its facts and
decisions.

Close processing writes its summary and chunks without vectors and keeps the LLM's
extraction in ``episode_extractions``; this ``Task.EPISODE_LEARN`` work item does the slow
part (embedding, fact dedup lookups) outside any transaction and writes everything in
one, so a close costs one LLM call plus one short transaction.  Until it has run, the
episode is found by full text, and its ``facts_state`` stays ``pending``.

Closed without an LLM extraction (none configured, or it failed), the episode's facts
come from the rule extractor (``statements.py``) instead: stated by its people about
themselves, learned with a lower confidence and the episode as provenance, and marked
``facts_extractor = rules`` so that the backfill job upgrades the episode when an LLM is
there.  The upgrade's facts go through the same dedup, so a rule fact the LLM restates is
confirmed or merged, not duplicated.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from uuid import UUID

from pgvector import Vector as PgVector

from ..db import Connection, Database
from ..db.audit import record_events
from ..embeddings.cache import EmbeddingCache
from ..errors import ContentionError, InvalidInputError, loggable
from ..facts.learning import FactLearner, LearnResult
from ..memories.kinds import MAX_LIST_ITEMS, FactsExtractor, FactsState
from ..memories.manager import MemoryManager, PreparedWrite
from ..people import group_statement, owner_of
from ..work.queue import WorkContext
from ..work.tasks import Task
from .chunks import embedding_text
from .close import INSTRUCTIONS, EpisodeExtraction, ExtractedFact
from .decisions import DecisionMatcher, PreparedDecisions
from .lifecycle import read_transcript
from .statements import RULE_CONFIDENCE, extract_statements

_log = logging.getLogger(__name__)

LLM_DEFAULT_CONFIDENCE = 0.7  # an LLM fact without a confidence: still above the rules'


class EpisodeLearner:
    def __init__(self, db: Database, memories: MemoryManager, embeddings: EmbeddingCache,
                 facts: FactLearner) -> None:
        self._db = db
        self._embeddings = embeddings
        self._facts = facts
        self._decisions = DecisionMatcher(db, memories, embeddings)

    async def process(self, ctx: WorkContext) -> None:
        agent, ident = ctx.item.agent_id, ctx.item.memory_id
        version = await self._db.fetchval("memory_version", agent, ident)
        chunks = await self._db.fetch("chunks_unembedded", agent, ident)
        summary = await self._db.fetchval("memory_unembedded_summary", agent, ident)
        raw = await self._db.fetchval("episode_extraction_pending", agent, ident)
        texts = [embedding_text(c["content"], c["context"]) for c in chunks] + (
            [summary] if summary is not None else [])
        vectors = await self._embeddings.embed_texts(agent, texts)
        extraction = EpisodeExtraction.model_validate(raw) if raw is not None else None
        facts: list[PreparedWrite] = []
        decisions = PreparedDecisions(news=None, updates=[])
        conversation = list(await self._db.fetchval("memory_people", agent, ident) or [])
        if extraction is not None:
            said = await self._db.fetch("episode_message_times", agent, ident)
            times = {r["seq"]: r["created_at"] for r in said}
            owners = [_llm_owner(fact, {r["seq"]: r["person"] for r in said}, conversation)
                      for fact in extraction.facts]
            facts = await self._prepare_facts(agent, ident, extraction.facts,
                                              LLM_DEFAULT_CONFIDENCE, times, owners)
            decisions = await self._decisions.prepare(agent, ident, extraction)
        elif await self._needs_rules(agent, ident):
            transcript = await read_transcript(self._db, agent, ident)
            found = extract_statements(transcript)
            if len(found) > MAX_LIST_ITEMS:  # the cap an LLM extraction has, latest kept
                _log.info("episode %s: %d rule facts, the latest %d learned", ident,
                          len(found), MAX_LIST_ITEMS)
                found = found[-MAX_LIST_ITEMS:]
            person = {m.seq: m.person for m in transcript}
            facts = await self._prepare_facts(agent, ident, [
                ExtractedFact(content=s.content, subject=s.subject, category=s.category,
                              confidence=s.confidence, seq=s.seq) for s in found],
                RULE_CONFIDENCE, {m.seq: m.created_at for m in transcript},
                [owner_of(person.get(s.seq), conversation, group=s.group) for s in found])
            await self._learn_rules(ctx, agent, ident, chunks, summary, vectors, facts,
                                    version)
            return
        async with ctx.commit() as conn:
            row = await conn.fetchrow("episode_for_update", agent, ident)
            if row is None:
                return  # deleted meanwhile
            await _unchanged(conn, agent, ident, version)
            await self._set_embeddings(conn, agent, ident, chunks, summary, vectors)
            if extraction is None or row["facts_state"] != FactsState.PENDING:
                return
            if await conn.fetchval("episode_extraction_learned", agent, ident) is None:
                return  # learned by another item meanwhile
            decided = await self._decisions.write(conn, decisions)
            learned = [await self._facts.apply(conn, fact) for fact in facts]
            await conn.execute("episode_facts_state", agent, ident, FactsState.EXTRACTED.value)
            await conn.execute("episode_facts_extractor", agent, ident, FactsExtractor.LLM.value)
            await record_events(conn, agent, [{
                "memory_id": str(ident), "event": "updated", "actor": Task.EPISODE_LEARN.value,
                "old_values": {"facts_state": FactsState.PENDING.value},
                "new_values": {"facts_state": FactsState.EXTRACTED.value,
                               "facts": _tally(learned),
                               "decisions": decided}}])

    async def _needs_rules(self, agent: str, ident: UUID) -> bool:
        """Closed with no LLM extraction and not yet learned from by the rules."""
        row = await self._db.fetchrow("episode_facts_source", agent, ident)
        return row is not None and row["facts_state"] == FactsState.NOT_EXTRACTED and (
            row["facts_extractor"] == FactsExtractor.NONE)

    async def _learn_rules(self, ctx: WorkContext, agent: str, ident: UUID,
                           chunks: list[Any], summary: str | None, vectors: list[Any],
                           facts: list[PreparedWrite], version: int | None) -> None:
        """The rule path's one transaction: embeddings, then the facts (re-checked under
        the episode's lock: an upgrade may have come first)."""
        async with ctx.commit() as conn:
            row = await conn.fetchrow("episode_for_update", agent, ident)
            if row is None:
                return
            await _unchanged(conn, agent, ident, version)
            await self._set_embeddings(conn, agent, ident, chunks, summary, vectors)
            if row["facts_state"] != FactsState.NOT_EXTRACTED or (
                    row["facts_extractor"] != FactsExtractor.NONE):
                return
            learned = [await self._facts.apply(conn, fact) for fact in facts]
            await conn.execute("episode_facts_extractor", agent, ident,
                               FactsExtractor.RULES.value)
            await record_events(conn, agent, [{
                "memory_id": str(ident), "event": "updated", "actor": Task.EPISODE_LEARN.value,
                "old_values": {"facts_extractor": FactsExtractor.NONE.value},
                "new_values": {"facts_extractor": FactsExtractor.RULES.value,
                               "facts": _tally(learned)}}])

    async def _set_embeddings(self, conn: Connection, agent: str, ident: UUID,
                              chunks: list[Any], summary: str | None,
                              vectors: list[Any]) -> None:
        model = self._embeddings.model_name
        if chunks:
            await conn.execute("chunks_set_embeddings", agent, ident, model,
                               [c["chunk_no"] for c in chunks],
                               [PgVector(v) for v in vectors[:len(chunks)]])
        if summary is not None:
            await conn.fetchval("memory_set_embedding", agent, ident,
                                PgVector(vectors[-1]), model, summary)

    async def _prepare_facts(self, agent: str, episode_id: UUID,
                             extracted: list[ExtractedFact], default_confidence: float,
                             times: Mapping[int, datetime | None],
                             owners: list[list[str]]) -> list[PreparedWrite]:
        """Each fact with the message it was said in (``seq``: recall credits that turn,
        context shows the two once), valid from the moment that message was said (else the
        episode's first message), the slot the extraction gave it, if any, and whose it is
        (``owners``, one list of person keys per fact)."""
        first = min((t for t in times.values() if t is not None), default=None)
        items = [{**_fact_item(fact, episode_id, default_confidence,
                               times.get(fact.seq) if fact.seq is not None else None, first),
                  "people": owner}
                 for fact, owner in zip(extracted, owners, strict=True)]
        prepared: list[PreparedWrite] = []
        for ready in await self._facts.prepare_many(agent, items, instructions=INSTRUCTIONS):
            if isinstance(ready, InvalidInputError):
                _log.info("skipped an extracted fact of episode %s: %s", episode_id,
                          loggable(ready))
            elif isinstance(ready, LearnResult):
                _log.info("an extracted fact of episode %s rejected: %s", episode_id,
                          ready.action)
            else:
                prepared.append(ready)
        return prepared


async def _unchanged(conn: Connection, agent: str, ident: UUID, version: int | None) -> None:
    """Nothing read before this transaction was changed under it (a message forgotten:
    its facts must not be learned from what was read before); else the item runs again."""
    if await conn.fetchval("memory_version", agent, ident) != version:
        raise ContentionError(f"episode {ident} changed while it was being learned from")


def _fact_item(fact: ExtractedFact, episode_id: UUID, default_confidence: float,
               said: datetime | None, first: datetime | None) -> dict[str, Any]:
    """An extracted fact as ``learn_fact``'s fields."""
    item: dict[str, Any] = {
        "content": fact.content, "source_kind": "extracted", "source_episode_id": episode_id,
        "confidence": default_confidence if fact.confidence is None else fact.confidence}
    for name in ("subject", "category"):
        if getattr(fact, name) is not None:
            item[name] = getattr(fact, name)
    if fact.seq is not None and said is not None:
        item["source_seq"] = fact.seq
    if said or first:
        item["valid_from"] = said or first
    if fact.attribute and fact.attribute.strip():
        item.update(slot_subject=_slot_subject(fact.subject), slot_attribute=fact.attribute,
                    slot_value=fact.value or "", slot_ended=fact.ended)
    return item


def _llm_owner(fact: ExtractedFact, person: Mapping[int, str | None],
               conversation: list[str]) -> list[str]:
    """Whose an LLM's fact is (people.owner_of): its subject the group ("we") or the
    speaker of its message."""
    speaker = person.get(fact.seq) if fact.seq is not None else None
    return owner_of(speaker, conversation,
                    group=fact.subject is not None and group_statement(fact.subject))


def _slot_subject(subject: str | None) -> str:
    low = (subject or "").strip().lower()
    return "user" if low in ("", "user", "the user", "i", "me") else low


def _tally(learned: list[LearnResult]) -> dict[str, int]:
    """How many facts each learn action took: {"created": 3, "confirmed": 1}."""
    counts: dict[str, int] = {}
    for result in learned:
        counts[result.action.value] = counts.get(result.action.value, 0) + 1
    return counts
