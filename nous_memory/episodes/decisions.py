"""Decisions extracted at an episode's close, matched against the agent's decisions.

A decision is often made in one conversation and its outcome learned in a later one
("we chose Postgres" ... "the Postgres move worked").  A decision extracted at close is
the same decision as an existing one when both name the same subject (normalised) and
their descriptions are close in meaning (raw cosine of the bundled model at least
``MATCH_COSINE``); then the existing one gets the new outcome, confidence and reasons
(audited as an update) instead of a duplicate being written.  Without a subject, or
without a close enough candidate, the decision is written as a new one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import numpy as np

from ..db import Connection, Database
from ..embeddings.cache import EmbeddingCache
from ..errors import InvalidInputError, loggable
from ..memories.kinds import DecisionDetail, DecisionOutcome, Kind, NewMemory, parse_new
from ..memories.manager import MemoryManager, PreparedUpdate, PreparedWrite
from ..work.tasks import Task
from .close import EpisodeExtraction

_log = logging.getLogger(__name__)

# The fact learner's "same fact, the value rule decides" threshold (calibrated on STS-B
# with the bundled model, see bench/calibrate_dedup.py): paraphrases of one statement
# score above it; the subject must match as well, so it does not stand alone.
MATCH_COSINE = 0.70
MAX_CANDIDATES = 200  # decisions read per close (newest first)


def subject_key(subject: str | None) -> str | None:
    """Trimmed, lower case, single spaces; None when empty."""
    key = " ".join((subject or "").lower().split())
    return key or None


@dataclass(frozen=True, slots=True, kw_only=True)
class PreparedDecisions:
    news: PreparedWrite | None  # decisions that match none
    updates: list[PreparedUpdate]  # existing decisions with what the episode learned


class DecisionMatcher:
    def __init__(self, db: Database, memories: MemoryManager,
                 embeddings: EmbeddingCache) -> None:
        self._db = db
        self._memories = memories
        self._embeddings = embeddings

    async def prepare(self, agent: str, episode_id: UUID,
                      extraction: EpisodeExtraction) -> PreparedDecisions:
        """The slow part, outside any transaction: reads, embeddings, summaries."""
        parsed: list[NewMemory] = []
        for decision in extraction.decisions:
            fields: dict[str, Any] = {k: v for k, v in decision.model_dump().items()
                                      if v not in (None, [])}
            try:
                parsed.append(parse_new(Kind.DECISION, {**fields,
                                                        "source_episode_id": episode_id}))
            except InvalidInputError as exc:
                _log.info("skipped an extracted decision of episode %s: %s", episode_id,
                          loggable(exc))
        matches = await self._match(agent, parsed)
        news = [n for n, match in zip(parsed, matches, strict=True) if match is None]
        updates: list[PreparedUpdate] = []
        for new, match in zip(parsed, matches, strict=True):
            if match is None:
                continue
            current = await self._memories.get(agent, match)
            prepared = await self._memories.prepare_update(agent, current,
                                                           _changes(current.detail, new))
            if prepared is not None:
                updates.append(prepared)
        return PreparedDecisions(
            news=await self._memories.prepare(agent, news) if news else None, updates=updates)

    async def write(self, conn: Connection, prepared: PreparedDecisions) -> dict[str, int]:
        """Inside the learning transaction; counts of created and updated decisions."""
        created = len(await self._memories.write(conn, prepared.news)) if prepared.news else 0
        updated = 0
        for update in prepared.updates:
            if await self._memories.write_update(conn, update, actor=Task.EPISODE_LEARN.value):
                updated += 1
            else:  # edited meanwhile: the owner's edit stands
                _log.info("decision %s changed while an episode was learned; not updated",
                          update.current.id)
        return {"created": created, "updated": updated}

    async def _match(self, agent: str, parsed: list[NewMemory]) -> list[UUID | None]:
        """For each new decision, the existing one it is (or None); one each at most."""
        keys = [subject_key(_detail(n).subject) for n in parsed]
        wanted = sorted({k for k in keys if k})
        if not wanted:
            return [None] * len(parsed)
        rows = await self._db.fetch("decisions_by_subject", agent, wanted, MAX_CANDIDATES)
        if not rows:
            return [None] * len(parsed)
        asking = [i for i, k in enumerate(keys) if k]
        vectors = await self._embeddings.embed_texts(
            agent, [_detail(parsed[i]).description for i in asking]
            + [r["description"] for r in rows])
        mine = np.asarray(vectors[:len(asking)])
        theirs = np.asarray(vectors[len(asking):])
        cosine = mine @ theirs.T  # the vectors are normalised
        out: list[UUID | None] = [None] * len(parsed)
        taken: set[UUID] = set()
        for row_no, i in enumerate(asking):
            best: tuple[float, UUID] | None = None
            for j, row in enumerate(rows):
                score = float(cosine[row_no, j])
                if (row["subject"] == keys[i] and row["memory_id"] not in taken
                        and score >= MATCH_COSINE and (best is None or score > best[0])):
                    best = (score, row["memory_id"])
            if best is not None:
                out[i] = best[1]
                taken.add(best[1])
        return out


def _detail(new: NewMemory) -> DecisionDetail:
    assert isinstance(new.detail, DecisionDetail)
    return new.detail


def _changes(current: Any, new: NewMemory) -> dict[str, Any]:
    """What a later mention adds: its outcome (unless it is only ``pending``), its
    confidence, and reasons not given before."""
    assert isinstance(current, DecisionDetail)
    detail = _detail(new)
    changes: dict[str, Any] = {}
    if detail.outcome is not DecisionOutcome.PENDING:
        changes["outcome"] = detail.outcome.value
    if detail.confidence is not None:
        changes["confidence"] = detail.confidence
    reasons = current.reasons + [r for r in detail.reasons if r not in current.reasons]
    if reasons != current.reasons:
        changes["reasons"] = reasons
    return changes
