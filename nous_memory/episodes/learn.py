"""The close's follow-up: embed the episode's chunks and summary, learn its facts and
decisions.

Close processing writes its summary and chunks without vectors and keeps the LLM's
extraction in ``episode_extractions``; this ``episode_learn`` work item does the slow
part (embedding, fact dedup lookups) outside any transaction and writes everything in
one, so a close costs one LLM call plus one short transaction.  Until it has run, the
episode is found by full text, and its ``facts_state`` stays ``pending``.
"""

from __future__ import annotations

import logging
from uuid import UUID

from pgvector import Vector as PgVector

from ..db import Database
from ..errors import InvalidInputError
from ..facts.learning import FactLearner, LearnResult
from ..memories.kinds import FactsState
from ..memories.manager import MemoryManager, PreparedWrite
from ..work.queue import TaskHandler, WorkContext
from .chunks import index_text
from .close import INSTRUCTIONS, EpisodeExtraction
from .decisions import DecisionMatcher, PreparedDecisions

_log = logging.getLogger(__name__)


class EpisodeLearner:
    def __init__(self, db: Database, memories: MemoryManager, facts: FactLearner) -> None:
        self._db = db
        self._memories = memories
        self._facts = facts
        self._decisions = DecisionMatcher(db, memories)

    def handlers(self) -> dict[str, TaskHandler]:
        return {"episode_learn": self.process}

    async def process(self, ctx: WorkContext) -> None:
        agent, ident = ctx.item.agent_id, ctx.item.memory_id
        chunks = await self._db.fetch("chunks_unembedded", agent, ident)
        summary = await self._db.fetchval("memory_unembedded_summary", agent, ident)
        raw = await self._db.fetchval("episode_extraction_pending", agent, ident)
        texts = [index_text(c["content"], c["context"]) for c in chunks] + (
            [summary] if summary is not None else [])
        vectors = await self._memories.embed_texts(agent, texts)
        extraction = EpisodeExtraction.model_validate(raw) if raw is not None else None
        facts: list[PreparedWrite] = []
        decisions = PreparedDecisions(news=None, updates=[])
        if extraction is not None:
            facts = await self._prepare_facts(agent, ident, extraction)
            decisions = await self._decisions.prepare(agent, ident, extraction)
        model = self._memories.model_name
        async with ctx.commit() as conn:
            row = await conn.fetchrow("episode_for_update", agent, ident)
            if row is None:
                return  # deleted meanwhile
            if chunks:
                await conn.execute("chunks_set_embeddings", agent, ident, model,
                                   [c["chunk_no"] for c in chunks],
                                   [PgVector(v) for v in vectors[:len(chunks)]])
            if summary is not None:
                await conn.fetchval("memory_set_embedding", agent, ident,
                                    PgVector(vectors[-1]), model, summary)
            if extraction is None or row["facts_state"] != FactsState.PENDING:
                return
            if await conn.fetchval("episode_extraction_learned", agent, ident) is None:
                return  # learned by another item meanwhile
            decided = await self._decisions.write(conn, decisions)
            learned = [await self._facts.apply(conn, fact) for fact in facts]
            await conn.execute("episode_facts_state", agent, ident, FactsState.EXTRACTED.value)
            await conn.execute("insert_events", agent, [{
                "memory_id": str(ident), "event": "updated", "actor": "episode_learn",
                "old_values": {"facts_state": FactsState.PENDING.value},
                "new_values": {"facts_state": FactsState.EXTRACTED.value,
                               "facts": {r.action.value: sum(1 for q in learned
                                                             if q.action is r.action)
                                         for r in learned},
                               "decisions": decided}}])

    async def _prepare_facts(self, agent: str, episode_id: UUID,
                             extraction: EpisodeExtraction) -> list[PreparedWrite]:
        items = [{**{k: v for k, v in fact.model_dump().items() if v is not None},
                  "source_kind": "extracted", "source_episode_id": episode_id}
                 for fact in extraction.facts]
        prepared: list[PreparedWrite] = []
        for fact, ready in zip(extraction.facts, await self._facts.prepare_many(
                agent, items, instructions=INSTRUCTIONS), strict=True):
            if isinstance(ready, InvalidInputError):
                _log.info("skipped an extracted fact of episode %s: %s", episode_id, ready)
            elif isinstance(ready, LearnResult):
                _log.info("extracted fact rejected (%s): %r", ready.reason, fact.content)
            else:
                prepared.append(ready)
        return prepared
