"""Hybrid recall: one SQL statement ranks an agent's memories and verbatim episode chunks.

Four legs (vector and full text, over ``memories`` and over ``episode_chunks``) are fused
by reciprocal rank fusion (RRF); recency, importance, confidence and use then nudge the
fused score within documented bounds (``Priors``).  Fused scores order results only:
thresholds belong to raw cosine similarity (docs/architecture.md, principle 5).

Recall never reads ``episode_messages``: chunks, summaries and memory rows stay hot when
an episode's transcript is archived, so closed and archived episodes stay reachable.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
from pgvector import Vector as PgVector

from ..config import Settings
from ..db import Database
from ..embeddings.cache import EmbeddingCache
from ..errors import FieldProblem, InvalidInputError, longer_than
from ..memories.kinds import Kind, Status, is_utf8, parse_agent_id, parse_kind
from ..memories.params import check_time
from ..people import person_key
from .ordering import final_order, stale_slots
from .per_agent import PerAgent
from .refs import make_ref
from .results import MAX_K as MAX_K
from .results import MAX_QUERY_CHARS as MAX_QUERY_CHARS
from .results import MIN_K as MIN_K
from .results import RecallItem as RecallItem
from .results import RecallResult as RecallResult
from .results import RecallScores as RecallScores
from .results import RecallTimings as RecallTimings
from .results import TimeWindow as TimeWindow
from .said_later import contested_in_recall, said_at
from .when import Window, resolve, without_now

AGENT_ROWS_TTL_S = 30.0  # how long a small agent's counted size is trusted
# A large agent's BM25 corpus (document count and total length) is counted at most this
# often: counting reads every row of the agent (about 200 ms at 100,000 memories on
# bench/tenancy.py, where it was most of a large agent's recall),
# and the two figures move by a fraction of a percent in that time.
CORPUS_TTL_S = 300.0
CANDIDATE_COLUMNS = ("part", "source", "memory_id", "chunk_no", "dist", "lexeme", "df", "tsv")
NO_CANDIDATES: tuple[list[Any], ...] = tuple([] for _ in CANDIDATE_COLUMNS)

@dataclass(frozen=True, slots=True, kw_only=True)
class Fusion:
    """How the two legs are fused: fused = sum over legs of weight / (rrf_k + rank).

    Measured on the LoCoMo dev split (bench/locomo_recall.py): BM25 alone finds more
    evidence than the bundled MiniLM alone, so the text leg counts double; a small
    constant lets the first ranks of each leg stand out.  ``context_weight``: a word
    that occurs only in a chunk's preceding turns counts this much of one in its own.
    """

    rrf_k: float = 20.0
    text_weight: float = Settings.recall_text_weight  # the store's setting is the default
    vector_weight: float = 1.0
    context_weight: float = 0.5

    def __post_init__(self) -> None:
        if self.rrf_k < 1 or self.text_weight < 0 or self.vector_weight < 0:
            raise ValueError("rrf_k must be >= 1 and leg weights >= 0")
        if not 0 <= self.context_weight <= 1:
            raise ValueError("context_weight must be within [0, 1]")


@dataclass(frozen=True, slots=True, kw_only=True)
class Priors:
    """Bounded multiplicative nudges: final = fused * (1 + recency + importance +
    confidence + use + speaker).  With the defaults the factor stays within [0.9, 1.4], so
    a prior can reorder near-ties but never lift an item the legs did not find.

    - recency in [0, recency]: halves every ``half_life_days`` of age (episodes and chunks
      age from when they ended, other memories from when they were created);
    - importance in [-importance/2, +importance/2]: (importance - 0.5) * importance;
    - confidence in [-confidence/2, +confidence/2] for facts and decisions (0 when unknown);
    - use in [0, use]: log-scaled access count, saturating at ``use_saturation`` accesses;
    - speaker in {0, speaker}: a verbatim chunk spoken by someone the query names (every
      word of the speaker's name is a word of the query).  A question about a person is
      most often answered by what that person said; measured on the LoCoMo dev split
      (bench/locomo_recall.py), recall@10 over categories 1-4 rose from 0.732 to 0.749;
    - time in {0, time}: an item said within the time the query names ("two weeks ago",
      "in March": ``when.resolve`` against the query's ``as_of``).
    """

    recency: float = 0.05
    half_life_days: float = 30.0
    importance: float = 0.1
    confidence: float = 0.1
    use: float = 0.05
    use_saturation: int = 100
    speaker: float = 0.2
    time: float = 0.3

    def __post_init__(self) -> None:
        for name in ("recency", "importance", "confidence", "use", "speaker", "time"):
            if not 0 <= getattr(self, name) <= 0.5:
                raise ValueError(f"prior {name} must be within [0, 0.5]")
        if self.half_life_days <= 0 or self.use_saturation < 1:
            raise ValueError("half_life_days must be > 0 and use_saturation >= 1")

    @property
    def spread(self) -> float:
        """Largest factor over smallest: an item whose fused score times this is below the
        k-th best fused score can never reach the top k, whatever its priors."""
        low = 1 - self.importance / 2 - self.confidence / 2
        high = (1 + self.recency + self.importance / 2 + self.confidence / 2 + self.use
                + self.speaker + self.time)
        return high / low


def leg_size(k: int) -> int:
    """Candidates per leg: enough depth for fusion to matter, bounded for latency."""
    return min(max(4 * k, 60), 400)


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallQuery:
    """A validated recall (``parse_request``); the REST body is ``api.recall.RecallRequest``."""

    agent: str
    query: str
    kinds: tuple[Kind, ...]
    k: int
    include_superseded: bool
    as_of: datetime | None = None
    window: Window | None = None
    current_only: bool = False  # leave out what is no longer true (old values, their turns)
    # who is asking (people/): person keys a memory's people must all hold, one person or
    # a group's members (a group conversation's prompt); None: the owner, who reads all
    asking: tuple[str, ...] | None = None

    @property
    def askers(self) -> list[str] | None:
        """Who is asking as the statements take it."""
        return None if self.asking is None else list(self.asking)


def parse_moment(value: object, problems: list[FieldProblem]) -> datetime | None:
    """``as_of`` as a datetime or ISO 8601 text (REST, tools and the CLI send text); a
    time without an offset is taken as UTC."""
    return check_time(value, "as_of", problems)


def parse_request(agent_id: object, query: object, kinds: object, k: object,
                  include_superseded: object, as_of: object = None,
                  current_only: object = False, user: object = None) -> RecallQuery:
    """Validate everything first, naming each bad field."""
    agent = parse_agent_id(agent_id)
    problems: list[FieldProblem] = []
    asker = asker_of(user, problems)
    moment: datetime | None = None
    if as_of is not None:
        moment = parse_moment(as_of, problems)
    text = ""
    if not isinstance(query, str):
        problems.append(FieldProblem("query", "must be a string"))
    elif not query.strip():
        problems.append(FieldProblem("query", "must not be empty"))
    elif len(query) > MAX_QUERY_CHARS:
        problems.append(FieldProblem("query", longer_than(MAX_QUERY_CHARS, len(query))))
    elif "\x00" in query:
        problems.append(FieldProblem("query", "contains a NUL character"))
    elif not is_utf8(query):
        problems.append(FieldProblem("query", "contains a lone UTF-16 surrogate, which is "
                                              "not valid Unicode text"))
    else:
        text = query.strip()
    if isinstance(k, bool) or not isinstance(k, int) or not MIN_K <= k <= MAX_K:
        problems.append(FieldProblem("k", f"must be an integer from {MIN_K} to {MAX_K}"))
    parsed: list[Kind] = []
    if kinds is None:
        parsed = list(Kind)
    elif isinstance(kinds, str) or not isinstance(kinds, Sequence | set | frozenset):
        problems.append(FieldProblem("kinds", "must be a list of kinds"))
    elif not kinds:
        problems.append(FieldProblem("kinds", "must not be empty (omit it for every kind)"))
    else:
        for index, value in enumerate(kinds):
            try:
                kind = parse_kind(value, f"kinds[{index}]")
            except InvalidInputError as exc:
                problems.extend(exc.problems)
                continue
            if kind not in parsed:
                parsed.append(kind)
    if not isinstance(include_superseded, bool):
        problems.append(FieldProblem("include_superseded", "must be true or false"))
    if not isinstance(current_only, bool):
        problems.append(FieldProblem("current_only", "must be true or false"))
    elif current_only and include_superseded is True:
        problems.append(FieldProblem("current_only", "cannot be combined with "
                                                     "include_superseded"))
    if problems:
        raise InvalidInputError(problems)
    assert isinstance(k, int) and isinstance(include_superseded, bool)
    return RecallQuery(agent=agent, query=text, kinds=tuple(parsed), k=k,
                         include_superseded=include_superseded, as_of=moment,
                         window=resolve(text, moment or datetime.now(UTC)),
                         current_only=current_only is True,
                         asking=None if asker is None else (asker,))


def asker_of(user: object, problems: list[FieldProblem]) -> str | None:
    """The person asking as a key (None: the agent's owner), or a problem named ``user``."""
    if user is None:
        return None
    try:
        return person_key(user, "user")
    except InvalidInputError as exc:
        problems.extend(exc.problems)
        return None


class Recaller:
    """Runs recall for any agent; every statement is scoped to the request's agent."""

    def __init__(self, db: Database, embeddings: EmbeddingCache, *,
                 priors: Priors | None = None, fusion: Fusion | None = None,
                 exact_scan_max_rows: int, ef_search: int) -> None:
        if exact_scan_max_rows < 0:
            raise ValueError("exact_scan_max_rows must be >= 0")
        if not 1 <= ef_search <= 1000:
            raise ValueError("ef_search must be within [1, 1000] (pgvector's range)")
        self._ef_search = ef_search
        self._db = db
        self._embeddings = embeddings
        self._priors = priors or Priors()
        self._fusion = fusion or Fusion()
        self._exact_max = exact_scan_max_rows
        # an agent past the limit is trusted to stay there as long as its corpus counts
        # (counting up to the limit reads as many index entries: 40-90 ms at 20,000)
        self._agent_rows: PerAgent[int] = PerAgent(
            AGENT_ROWS_TTL_S, lambda rows: CORPUS_TTL_S if rows > self._exact_max
            else AGENT_ROWS_TTL_S)
        self._corpus: PerAgent[tuple[int, int]] = PerAgent(CORPUS_TTL_S)

    async def recall(self, agent_id: str, query: str, *, kinds: Sequence[Kind | str] | None = None,
                     k: int = 10, include_superseded: bool = False,
                     query_embedding: Sequence[float] | np.ndarray[Any, Any] | None = None,
                     as_of: datetime | str | None = None,
                     current_only: bool = False, user: str | None = None) -> RecallResult:
        started = time.perf_counter()
        req = parse_request(agent_id, query, kinds, k, include_superseded, as_of, current_only,
                            user)
        if query_embedding is None:
            vector = (await self._embeddings.embed_query(req.agent, req.query))
        else:
            vector = self.check_vector(query_embedding)
        embedded = time.perf_counter()
        rows = await self.ranked_rows(req, vector)
        # a current value that something said later bears on is not reported as current
        contested = await contested_in_recall(self._db, self._embeddings.model_name,
                                              req.agent, rows, req.query)
        done = time.perf_counter()
        items = [_item(row, contested) for row in rows]
        window = (TimeWindow(start=req.window.start, end=req.window.end)
                  if req.window is not None else None)
        return RecallResult(query=req.query, k=req.k, items=items, as_of=req.as_of,
                            window=window, timings=RecallTimings(
                                embed_ms=(embedded - started) * 1000,
                                sql_ms=(done - embedded) * 1000,
                                total_ms=(done - started) * 1000))

    async def ranked_rows(self, req: RecallQuery, vector: np.ndarray[Any, Any]
                          ) -> Sequence[Mapping[str, Any]]:
        """The ranked rows for a validated request (``parse_request``) and a checked
        vector (``check_vector``), in their final order (``ordering``): for callers that
        make their own records from them (context assembly) rather than ``RecallItem``s."""
        # rows beyond k: the final order may lift one of them, and merges drop some
        rows = await self._statement_rows(req, vector, min(MAX_K * 2, req.k * 2 + 10))
        keys, successors = stale_slots(rows)
        current: Sequence[Mapping[str, Any]] = ()
        if keys or successors:  # an old value was ranked and its current one was not
            current = await self._db.read("recall_current_of_slots", req.agent, keys,
                                           PgVector(vector), self._embeddings.model_name,
                                           successors, req.askers)
        return final_order(rows, req.k, query=req.query, current=current,
                           current_only=req.current_only)

    async def _statement_rows(self, req: RecallQuery, vector: np.ndarray[Any, Any],
                              depth: int) -> Sequence[Mapping[str, Any]]:
        statuses = [Status.ACTIVE.value, Status.ARCHIVED.value]
        if req.include_superseded:
            statuses.append(Status.SUPERSEDED.value)
        p, f = self._priors, self._fusion
        args = (req.agent, without_now(req.query), PgVector(vector), self._embeddings.model_name,
                [kind.value for kind in req.kinds], statuses, Kind.EPISODE in req.kinds,
                leg_size(req.k), depth, f.rrf_k, p.recency, p.half_life_days,
                p.importance, p.confidence, p.use, float(p.use_saturation), f.text_weight,
                f.vector_weight, f.context_weight, p.spread, p.speaker,
                req.as_of or datetime.now(UTC),
                req.window.start if req.window else None,
                req.window.end if req.window else None, p.time)
        exact = await self._scans_exactly(req.agent)
        corpus, given = (0, 0), NO_CANDIDATES
        if not exact:
            corpus = await self._corpus_of(req.agent)
            given = await self._index_candidates(req, args, corpus[0])
        ranked = (*args[:20], exact, *args[20:], *corpus, *given, req.askers)
        if self._db.delegated:  # Citus: one call, handed whole to the agent's worker
            return await self._db.read("recall", *ranked)
        if self._db.has_scan_pool:
            async with self._db.scanning() as conn:  # one round trip: no transaction
                return await conn.fetch("recall", *ranked)
        async with self._db.transaction() as conn:
            await conn.fetchval("recall_plan_settings", "force_custom_plan"
                                if self._db.distributed else "force_generic_plan")
            if self._db.distributed:  # the scan settings, sent on to the agent's worker
                await conn.execute("recall_scan_small")
            return await conn.fetch("recall", *ranked)

    async def _index_candidates(self, req: RecallQuery, args: tuple[Any, ...],
                                documents: int) -> tuple[list[Any], ...]:
        """A large agent's candidates read through the indexes (``recall_index_legs``),
        as the columns recall takes them in."""
        async with self._db.transaction() as conn:
            await conn.fetchval("recall_index_settings", self._ef_search)
            if self._db.distributed:  # the scan settings, sent on to the agent's worker
                await conn.execute("recall_scan_large")
                await conn.execute_built(await conn.fetchval("recall_scan_large_ef",
                                                             self._ef_search))
            rows = await conn.fetch("recall_index_legs", *args[:8], documents,
                                    *args[22:24], req.askers)
        return tuple([row[i] for row in rows] for i in range(len(CANDIDATE_COLUMNS)))

    async def _scans_exactly(self, agent: str) -> bool:
        """Whether this agent is small enough to be read whole (its size is counted, up to
        the limit, at most once per ``AGENT_ROWS_TTL_S``, or ``CORPUS_TTL_S`` once past
        the limit; a limit of 0 means never)."""
        if self._exact_max == 0:
            return False

        async def count() -> int:
            rows = await self._db.read("recall_agent_rows", agent, self._exact_max + 1)
            return int(rows[0]["agent_rows"])

        return await self._agent_rows.get(agent, count) <= self._exact_max

    def forget_agent_figures(self) -> None:
        """Count every agent's size and corpus again when next asked (after a bulk load
        or an erasure that the time-to-live would otherwise hide)."""
        self._agent_rows.clear()
        self._corpus.clear()

    async def _corpus_of(self, agent: str) -> tuple[int, int]:
        """A large agent's BM25 corpus: its documents and their total length (counted at
        most once per ``CORPUS_TTL_S``)."""

        async def count() -> tuple[int, int]:
            row = await self._db.fetchrow("recall_corpus", agent)
            assert row is not None
            return int(row["documents"]), int(row["lexemes"])

        return await self._corpus.get(agent, count)

    def check_vector(self, value: Sequence[float] | np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        try:
            array = np.asarray(value, dtype=np.float32)
        except (TypeError, ValueError):
            raise InvalidInputError.single("query_embedding", "must be a list of numbers") from None
        dim = self._embeddings.dimension
        if array.ndim != 1 or array.shape[0] != dim:
            raise InvalidInputError.single("query_embedding",
                                           f"must have {dim} numbers (the store's dimension)")
        if not np.all(np.isfinite(array)) or not np.any(array):
            raise InvalidInputError.single("query_embedding",
                                           "must be finite and not all zero")
        return array


def _item(row: Mapping[str, Any], contested: Mapping[Any, datetime] | None = None
          ) -> RecallItem:
    chunk_no = row["chunk_no"]
    kind = Kind(row["kind"])
    return RecallItem(
        ref=make_ref(kind, row["memory_id"], chunk_no), source=row["source"],
        memory_id=row["memory_id"], kind=kind, chunk_no=chunk_no, text=row["text"],
        tokens=row["tokens"], message_metadata=row["message_metadata"] or [],
        created_at=row["created_at"], ended_at=row["ended_at"], said_at=said_at(row),
        status=Status(row["status"]), stale_since=row["stale_on"],
        current_since=row["valid_from"] if row["slot_key"] and row["stale_on"] is None
        and row["source"] == "memory" and row["memory_id"] not in (contested or {})
        else None,
        told_again_on=(contested or {}).get(row["memory_id"]) if row["source"] == "memory"
        and row["memory_id"] in (contested or {}) else row.get("retold_on"),
        scores=RecallScores(
            cosine=row["cosine"], vector_rank=row["vector_rank"], text_rank=row["text_rank"],
            text_score=row["text_score"], fused=row["fused"], recency=row["p_recency"],
            importance=row["p_importance"], confidence=row["p_confidence"], use=row["p_use"],
            speaker=row["p_speaker"], time=row["p_time"], matched=sorted(row["lexemes"] or []),
            final=row["final"]))
