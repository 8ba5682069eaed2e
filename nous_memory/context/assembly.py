"""``assemble_context``: the read path an assistant calls on every turn.

One embedding, then recall's single ranking statement and the always-on read (matching
censors, pinned profile facts) side by side, then, only when complex records are among
the candidates, one batched read of their cached tier-2 extractions (started as soon as
the ranking is known, beside the merge with the always-on items).  Everything else
is Python: section budgets, exact token counts, the text.  Writes the call causes
(extraction work items, cache rows of a sync call, access counts) happen after the
answer, in the background; ``drain()`` waits for them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import time
from collections.abc import Coroutine, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import numpy as np
from pgvector import Vector as PgVector

from .. import blocks
from ..conversation.prompt import PromptHolds
from ..db import Database
from ..embeddings.cache import EmbeddingCache
from ..errors import loggable
from ..facts.consolidation import censor_matches
from ..memories.kinds import Kind, parse_agent_id
from ..memories.slot_words import CORE_ATTRIBUTES
from ..tokens import count_tokens
from .access import AccessLog
from .extraction import (
    HOT_SOURCE_CHARS,
    ITEM_MAX_TOKENS,
    TIER2_PER_SECTION,
    Extracted,
    Extractor,
    label,
    query_digest,
    source_text,
)
from .model import (
    DEFAULT_BUDGET_TOKENS,
    MIN_BUDGET_TOKENS,
    Candidate,
    Context,
    ContextRequest,
    ContextTimings,
    Extraction,
    Section,
    Tier,
    parse_request,
)
from .now import (
    NOW_LIMIT,
    UPCOMING_LIMIT,
    QueryCues,
    mark_old,
    now_candidates,
    old_values,
    upcoming_candidates,
)
from .ordering import last_acknowledgements
from .recall import Recaller
from .recall import parse_request as parse_recall_request
from .refs import make_ref
from .said_later import said_later
from .sections import assemble, order_section
from .truncation import truncate

_log = logging.getLogger(__name__)

CANDIDATE_K = 50  # recall depth: more than any default budget can hold
CENSOR_LIMIT = 200  # censors read per call to match against the query
PINNED_FACT_LIMIT = 10  # profile facts always considered (the closest to the query)
PROFILE_CATEGORIES = ("preference", "person", "rule", "profile", "identity")
# who the user is and their standing rules hold for every query; preferences and people
# are pinned only where they bear on it (at least RELEVANCE_FLOOR)
ALWAYS_PINNED = frozenset({"rule", "profile", "identity"})
PIN_BUDGET_TOKENS = 200  # pins share this much of the facts section, closest first
# A recalled item below this raw cosine that holds no word of the query (nor the time it
# names) stays out of the context: in a small store every memory is a candidate, and
# an unrelated one is noise the answering model must read past.  Set on STS-B dev with
# the bundled model: pairs on the same topic but not equivalent (scored 1-2) have a 5th
# percentile of 0.18, unrelated ones (< 1) a median of 0.18; a question and the memory
# that answers it score lower than two statements do ("Which database did we choose?"
# and "Use PostgreSQL with pgvector for the memory store": 0.20), so the floor sits below
# the related pairs and cuts what is plainly unrelated (a question about a migration and
# facts about a cat or a cello: under 0.08).
RELEVANCE_FLOOR = 0.15
# a censor whose trigger does not match the query is shown only when this close to it
# (raw cosine, all-MiniLM-L6-v2): a rule about e-mail has no place in a talk about tables
CENSOR_MIN_COSINE = 0.45
PROMPT_BLOCK_MARGIN = 16  # the prompt's own block marker and message overhead
PIN_LINE_TOKENS = 8  # a pin's ref, date and line break beside its text

SECTION_OF_KIND: Mapping[Kind, Section] = {
    Kind.CENSOR: Section.CENSORS,
    Kind.DECISION: Section.DECISIONS,
    Kind.FACT: Section.FACTS,
    Kind.PROCEDURE: Section.PROCEDURES,
    Kind.EPISODE: Section.EPISODES,
}


def candidate_from_row(row: Mapping[str, Any]) -> Candidate:
    """A ranked row of recall's statement as a candidate (no ``RecallItem`` in between:
    this runs for every candidate of every call)."""
    chunk_no = row["chunk_no"]
    if row["source"] == "chunk":
        return Candidate(ref=make_ref(row["kind"], row["memory_id"], chunk_no),
                         memory_id=row["memory_id"], kind="chunk", section=Section.EXCERPTS,
                         text=row["text"], score=row["final"], chunk_no=chunk_no,
                         tier=Tier.VERBATIM, cosine=row["cosine"], said_at=row["said_at"],
                         matched=bool(row["lexemes"]) or bool(row["p_time"]),
                         stale_on=row["stale_on"], retold_on=row.get("retold_on"))
    kind = Kind(row["kind"])
    return Candidate(ref=make_ref(kind, row["memory_id"]), memory_id=row["memory_id"],
                     kind=kind.value, section=SECTION_OF_KIND[kind], text=row["text"],
                     score=row["final"], cosine=row["cosine"],
                     said_at=row["said_at"] if kind in DATED_KINDS else None,
                     matched=bool(row["lexemes"]) or bool(row["p_time"]),
                     stale_on=row["stale_on"], retold_on=row.get("retold_on"))


def in_rank_order(candidates: list[Candidate]) -> list[Candidate]:
    """Scores that keep recall's final order within every section (a section orders by
    score): an item recall put below another never scores above it, so a current value
    moved before its old one stays before it."""
    out: list[Candidate] = []
    ceiling = float("inf")
    for cand in candidates:
        if cand.score < ceiling:
            ceiling = cand.score
            out.append(cand)
        else:  # just below the item before it
            ceiling = math.nextafter(ceiling, -math.inf)
            out.append(dataclasses.replace(cand, score=ceiling))
    return out


# kinds shown with the date they were said (a fact: its source episode's), so an
# answering model can order what it reads; rules and procedures hold whatever the date
DATED_KINDS = frozenset({Kind.EPISODE, Kind.FACT, Kind.DECISION})

COMPLEX_KINDS: Mapping[str, Section] = {Kind.EPISODE.value: Section.EPISODES,
                                        Kind.PROCEDURE.value: Section.PROCEDURES}


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Tier2Read:
    """The tier-2 lookup of one call, under way."""

    max_tokens: int
    rows: asyncio.Task[list[Any]]


class ContextAssembler:
    def __init__(self, db: Database, embeddings: EmbeddingCache, recaller: Recaller,
                 extractor: Extractor, access: AccessLog) -> None:
        self._db = db
        self._embeddings = embeddings
        self._recaller = recaller
        self._extractor = extractor
        self._access = access
        self._background: set[asyncio.Task[Any]] = set()

    async def for_prompt(self, agent_id: str, query: str, budget_tokens: int,
                         holds: PromptHolds | None = None) -> str:
        """Working memory's context provider: the assembled items for a prompt's context
        block (which marks them itself), or nothing when the room is below the minimum.
        What the prompt holds of its own conversation (its tail) is left out."""
        room = budget_tokens - PROMPT_BLOCK_MARGIN
        if room < MIN_BUDGET_TOKENS:
            return ""
        # the conversation's people ask: nothing of anyone's that is not all of theirs
        people = (await self._db.fetchval("memory_people", agent_id, holds.episode_id) or []
                  if holds is not None else [])
        context = await self.assemble(agent_id, query, budget_tokens=room, holds=holds,
                                      asking=people or None)
        return blocks.unwrap(context.text, "context") if context.items else ""

    async def assemble(self, agent_id: str, query: str, *,
                       budget_tokens: int = DEFAULT_BUDGET_TOKENS,
                       sections: Mapping[str, int] | Sequence[str] | None = None,
                       extraction: Extraction | str = Extraction.CACHED,
                       query_embedding: Sequence[float] | np.ndarray[Any, Any] | None = None,
                       as_of: datetime | str | None = None,
                       current_only: bool = False,
                       holds: PromptHolds | None = None, user: str | None = None,
                       asking: Sequence[str] | None = None) -> Context:
        """(see ``MemoryStore.assemble_context``) ``asking``: a group asking together (a
        group conversation's members): only what is all of theirs or shared."""
        started = time.perf_counter()
        agent = parse_agent_id(agent_id)
        req = parse_request(agent, query, budget_tokens, sections, extraction)
        kinds = sorted({k for k, s in SECTION_OF_KIND.items() if s in req.budgets}
                       | ({Kind.EPISODE} if Section.EXCERPTS in req.budgets else set()))
        ranking = parse_recall_request(agent, req.query, kinds or [Kind.FACT], CANDIDATE_K,
                                       False, as_of, current_only, user)
        if asking is not None:
            ranking = dataclasses.replace(ranking, asking=tuple(sorted(set(asking))))
        cues = QueryCues.of(req.query)
        moment = ranking.as_of or datetime.now(UTC)
        if query_embedding is not None:
            vector = self._recaller.check_vector(query_embedding)
        else:
            vector = await self._embeddings.query_vector(agent, req.query)
        embedded = time.perf_counter()
        # the always-on read runs beside recall's statement, not beside the model (which
        # keeps every core busy)
        pins = Section.FACTS in req.budgets or Section.NOW in req.budgets
        always = asyncio.create_task(self._db.read(
            "context_always_on", agent, list(PROFILE_CATEGORIES), CENSOR_LIMIT,
            PINNED_FACT_LIMIT if pins else 0, PgVector(vector),
            self._embeddings.model_name, list(cues.attributes), list(cues.words),
            list(CORE_ATTRIBUTES), NOW_LIMIT if Section.NOW in req.budgets else 0, moment,
            UPCOMING_LIMIT if Section.UPCOMING in req.budgets else 0, ranking.askers))
        tier2: Tier2Read | None = None
        try:
            ranked = await self._recaller.ranked_rows(ranking, vector)
            if holds is not None:  # the prompt's own tail is not repeated as excerpts
                ranked = [r for r in ranked if not (
                    r["memory_id"] == holds.episode_id
                    and (r["source"] == "memory" or r["last_seq"] > holds.after_seq))]
            recalled = in_rank_order([candidate_from_row(row) for row in ranked])
            tier2 = self._start_tier2_read(req, recalled)  # beside the merge below
            always_rows = await always
            fetched = time.perf_counter()
            merged = self._merge(req, recalled, always_rows, cues, moment)
            later = await said_later(self._db, self._embeddings.model_name, agent, merged,
                                     recalled, always_rows, cues, req.query)
            shown = later.shown(merged, current_only=current_only)
            shown, hits, misses, queued = await self._tier2(req, shown, tier2)
            # old values are marked in the texts as shown (a record's tier-2 text too)
            candidates = last_acknowledgements(
                mark_old(shown, old_values(always_rows) + later.olds(),
                         current_only=current_only), req.query)
        finally:  # on failure, the reads still under way are stopped and their errors taken
            tasks = [t for t in (always, tier2.rows if tier2 else None) if t is not None]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        extracted = time.perf_counter()
        result = assemble(candidates, req.budgets, req.budget_tokens)
        self._access.record(agent, {i.id for i in result.items})
        done = time.perf_counter()
        return Context(
            text=result.text, items=result.items, tokens_used=result.tokens,
            budget_tokens=req.budget_tokens, dropped=result.dropped, cache_hits=hits,
            cache_misses=misses, extraction_queued=queued, extraction=req.extraction,
            timings=ContextTimings(
                embed_ms=_ms(started, embedded), candidates_ms=_ms(embedded, fetched),
                extraction_ms=_ms(fetched, extracted), assemble_ms=_ms(extracted, done),
                total_ms=_ms(started, done)))

    @staticmethod
    def _merge(req: ContextRequest, recalled: list[Candidate],
               always_rows: Sequence[Mapping[str, Any]], cues: QueryCues,
               as_of: datetime) -> list[Candidate]:
        """The always-on items (Now, Upcoming, matching censors, pins) and then the recalled
        ones; a recalled item that is also always-on is kept once, where it is pinned."""
        pinned: dict[UUID, Mapping[str, Any]] = {}
        pin_tokens = 0
        upfront = [*(now_candidates(always_rows, cues) if Section.NOW in req.budgets else []),
                   *(upcoming_candidates(always_rows, cues, as_of)
                     if Section.UPCOMING in req.budgets else [])]
        shown = {c.memory_id for c in upfront}
        pin_section = Section.NOW if Section.NOW in req.budgets else Section.FACTS
        for row in always_rows:
            if row["part"] not in ("censor", "pin") or row["id"] in shown:
                continue
            if row["kind"] == Kind.CENSOR.value:
                if not censor_matches(row["trigger_pattern"], req.query):
                    continue
            elif row["category"] not in ALWAYS_PINNED and (
                    row["cosine"] is None or row["cosine"] < RELEVANCE_FLOOR):
                continue  # a preference or a person that has nothing to do with the query
            else:
                pin_tokens += count_tokens(row["summary"]) + PIN_LINE_TOKENS
                if pin_tokens > PIN_BUDGET_TOKENS:
                    continue  # the closest pins fill their budget; the rest compete as usual
            pinned[row["id"]] = row
        out: list[Candidate] = list(upfront)
        for cand in recalled:
            if cand.chunk_no is None and cand.memory_id in shown:
                continue  # shown in Now or Upcoming already
            if cand.chunk_no is None and cand.memory_id in pinned:
                pinned.pop(cand.memory_id)
                cand = dataclasses.replace(cand, pinned=True, section=pin_section
                                           if cand.section is Section.FACTS else cand.section)
            elif cand.section is Section.CENSORS and (cand.cosine or 0.0) < CENSOR_MIN_COSINE:
                continue  # ranked in only because the agent has few memories
            elif (not cand.matched and cand.kind not in COMPLEX_KINDS
                  and (cand.cosine is None or cand.cosine < RELEVANCE_FLOOR)):
                continue  # neither a word of the query nor close in meaning (a complex
                # record's summary may not show what its detail holds: tier 2 reads it)
            out.append(cand)
        for ident, row in pinned.items():
            kind = Kind(row["kind"])
            out.append(Candidate(ref=make_ref(kind, ident), memory_id=ident,
                                 kind=kind.value, section=pin_section if kind is Kind.FACT
                                 else SECTION_OF_KIND[kind],
                                 text=row["summary"], score=float(row["importance"]),
                                 pinned=True))
        return out

    def _start_tier2_read(self, req: ContextRequest, recalled: list[Candidate]
                          ) -> Tier2Read | None:
        """Start reading the cached extractions of the best-ranked complex records.  They
        are known from recall's ranking alone (always-on items are never complex)."""
        ids = [c.memory_id for kind, section in COMPLEX_KINDS.items() if section in req.budgets
               for c in order_section([c for c in recalled
                                       if c.chunk_no is None and c.kind == kind]
                                      )[:TIER2_PER_SECTION]]
        if not ids:
            return None
        max_tokens = min([ITEM_MAX_TOKENS] + [req.budgets[s] for s in COMPLEX_KINDS.values()
                                              if s in req.budgets and req.budgets[s] > 0])
        return Tier2Read(max_tokens=max_tokens, rows=asyncio.create_task(self._db.read(
            "context_tier2", req.agent_id, ids, query_digest(req.query), max_tokens,
            HOT_SOURCE_CHARS)))

    async def _tier2(self, req: ContextRequest, candidates: list[Candidate],
                     read: Tier2Read | None) -> tuple[list[Candidate], int, int, int]:
        """Complex records get their cached extraction, else a truncation now (and an LLM
        extraction queued, or waited for within the sync budget)."""
        if read is None:
            return candidates, 0, 0, 0
        max_tokens = read.max_tokens
        rows = await read.rows
        texts: dict[UUID, tuple[str, Tier]] = {}
        sources: dict[UUID, str] = {}
        hits = 0
        for row in rows:
            if row["cached"] is not None:
                hits += 1
                tier = Tier.EXTRACTION if row["cached_source"] == "llm" else Tier.TRUNCATION
                texts[row["id"]] = (label(row) + row["cached"], tier)
            else:
                sources[row["id"]] = source_text(row)
        misses = len(sources)
        llm_done: dict[UUID, Extracted] = {}
        if sources and req.extraction is Extraction.SYNC:
            llm_done = await self._extractor.sync_extract(req.agent_id, req.query, sources,
                                                          max_tokens)
            if llm_done:
                self._later(self._extractor.store(req.agent_id, req.query, max_tokens,
                                                  llm_done))
        labels = {row["id"]: label(row) for row in rows}
        for ident, text in sources.items():
            if ident in llm_done:
                got = llm_done[ident]
                tier = Tier.EXTRACTION if got.source == "llm" else Tier.TRUNCATION
                texts[ident] = (labels[ident] + got.content, tier)
            else:
                texts[ident] = (labels[ident] + truncate(text, req.query, max_tokens),
                                Tier.TRUNCATION)
        queued = 0
        pending = [i for i in sources if i not in llm_done]
        if pending and req.extraction is not Extraction.OFF and self._extractor.llm_configured:
            queued = len(pending)
            self._later(self._extractor.queue(req.agent_id, req.query, max_tokens, pending))
        resolved = [dataclasses.replace(c, text=texts[c.memory_id][0],
                                        tier=texts[c.memory_id][1])
                    if c.chunk_no is None and c.memory_id in texts else c
                    for c in candidates]
        return resolved, hits, misses, queued

    def _later(self, work: Coroutine[Any, Any, Any]) -> None:
        """Run a write after the answer; failures are logged (it is a cache, not a record)."""
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._background.discard(task)
        exc = None if task.cancelled() else task.exception()
        if exc is not None:
            _log.warning("deferred context write failed: %s", loggable(exc))

    async def drain(self) -> None:
        """Wait for the deferred writes of earlier calls (queue, cache, access counts)."""
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)
        await self._access.flush()


def _ms(start: float, end: float) -> float:
    return round((end - start) * 1000, 3)
