"""What recall and expand return: plain pydantic models with no database behind them,
so the remote client (``nous_memory.client``) builds the same types without importing
the store, the driver or the model."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from ..memories.kinds import Kind, Status
from ..memories.records import Memory, MemoryEvent

MIN_K = 1
MAX_K = 100
MAX_QUERY_CHARS = 4_000


class RecallScores(BaseModel):
    """Typed scores: compare cosine with thresholds; use ``final`` only to order."""

    model_config = ConfigDict(frozen=True)

    cosine: float | None = Field(description="Raw cosine similarity to the query "
                                             "(None when the row has no comparable "
                                             "embedding); a chunk that absorbed the facts "
                                             "learned from its turn: the closest of them")
    vector_rank: int | None = Field(description="1-based rank in its vector leg, if found")
    text_rank: int | None = Field(description="1-based rank in its full-text leg, if found")
    text_score: float | None = Field(description="BM25 score of the full-text leg")
    fused: float = Field(description="Reciprocal rank fusion of the legs")
    recency: float
    importance: float
    confidence: float
    use: float
    speaker: float = Field(description="The nudge of a chunk spoken by someone the query "
                                       "names (0 otherwise)")
    time: float = Field(default=0.0, description="The nudge of an item said within the time "
                                                 "the query names (0 otherwise)")
    matched: list[str] = Field(default_factory=list, description=(
        "The query's lexemes it holds (a chunk's context words marked '~'): its keyword "
        "evidence in the final order"))
    final: float = Field(description="fused * (1 + recency + importance + confidence + use "
                                     "+ speaker + time); recall's final order also applies "
                                     "the rules of context/ordering.py")


class RecallItem(BaseModel):
    """One ranked item: a memory (its tier-1 summary) or a verbatim episode chunk."""

    model_config = ConfigDict(frozen=True)

    ref: str = Field(description="Short reference, e.g. fact:1a2b3c4d or episode:1a2b3c4d#c3")
    source: Literal["memory", "chunk"]
    memory_id: UUID = Field(description="The memory, or for a chunk its episode")
    kind: Kind
    chunk_no: int | None = None
    text: str
    tokens: int
    scores: RecallScores
    message_metadata: list[dict[str, Any]] = Field(
        default_factory=list,
        description="For a chunk: each covered message's metadata, in transcript order")
    created_at: datetime | None = None
    ended_at: datetime | None = None
    said_at: datetime | None = Field(
        default=None, description="When it was said: a chunk's turn, a fact's source "
                                  "episode, an episode's start; else when it was stored")
    status: Status
    stale_since: datetime | None = Field(
        default=None, description="Set when it states a value that no longer holds (a "
                                  "superseded fact, or a turn whose facts all were): when "
                                  "the newer value was said")
    current_since: datetime | None = Field(
        default=None, description="For a current fact of a slot: since when its value "
                                  "holds (when it was said)")
    told_again_on: datetime | None = Field(
        default=None, description="Set on a person's statement of a value they told again "
                                  "later, otherwise (the question asking how things "
                                  "stand): when; the later telling ranks first")


class RecallTimings(BaseModel):
    model_config = ConfigDict(frozen=True)

    embed_ms: float
    sql_ms: float
    total_ms: float


class TimeWindow(BaseModel):
    """The time a query names, resolved against its ``as_of`` ([start, end), UTC)."""

    model_config = ConfigDict(frozen=True)

    start: datetime
    end: datetime


class RecallResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    query: str
    k: int
    items: list[RecallItem]
    timings: RecallTimings
    as_of: datetime | None = None
    window: TimeWindow | None = Field(default=None, description="The time the query names, "
                                                                "if any")


class ArchivedPart(BaseModel):
    """One part of the record in cold storage (``memory_archive``)."""

    model_config = ConfigDict(frozen=True)

    part: str  # "detail" or "transcript"
    reason: str  # "trim" or "archive"
    archived_at: datetime
    start_offset: int
    size: int  # characters of detail, or messages of transcript


class ExcerptMessage(BaseModel):
    model_config = ConfigDict(frozen=True)

    seq: int
    role: str
    name: str | None = None
    content: str
    created_at: datetime | None = None


class TranscriptExcerpt(BaseModel):
    model_config = ConfigDict(frozen=True)

    episode_id: UUID
    total_messages: int
    from_cold_storage: bool  # the transcript was read from memory_archive
    messages: list[ExcerptMessage]


class Expanded(BaseModel):
    """The full record behind a ref: read this when a context line is not enough."""

    model_config = ConfigDict(frozen=True)

    ref: str
    memory: Memory
    detail_restored: bool  # episode detail was rebuilt from cold storage
    events: list[MemoryEvent]
    chain: list[Memory]  # facts: every version linked by supersession, oldest first
    source_episode: Memory | None
    transcript: TranscriptExcerpt | None
    archived: list[ArchivedPart]


class UpcomingEvent(BaseModel):
    model_config = ConfigDict(frozen=True)

    ref: str = Field(description="Short reference, e.g. fact:1a2b3c4d (expand it for more)")
    id: UUID
    text: str = Field(description="The statement of the plan, as learned")
    event_at: datetime = Field(description="When it happens (UTC; midnight when only a "
                                           "day was said)")
    said_at: datetime | None = Field(default=None, description="When it was said")


class Upcoming(BaseModel):
    model_config = ConfigDict(frozen=True)

    as_of: datetime
    until: datetime
    events: list[UpcomingEvent]
