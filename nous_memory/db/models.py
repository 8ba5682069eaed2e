"""SQLModel classes: the typed picture of every table in ``schema.sql``.

``schema.sql`` stays the source of truth (the test suite builds a database from it and
requires this picture to match every column, type, nullability and primary key).  The
product uses the picture to tell when a live database has drifted from the version
that runs against it (``drift.py``: ``nous-memory db status``), and it gives typed rows
to code that wants them (reports, notebooks, SQLAlchemy users).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from pgvector.sqlalchemy import Vector
from sqlalchemy import BigInteger, Column, Computed, DateTime, Identity, LargeBinary, Text
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TSVECTOR
from sqlalchemy.dialects.postgresql import UUID as PgUUID
from sqlmodel import Field, SQLModel

EMBEDDING_DIM = 384


def _text_array() -> Any:
    return Field(default_factory=list, sa_column=Column(ARRAY(Text), nullable=False))


def _key(**kwargs: Any) -> Any:
    return Field(primary_key=True, **kwargs)


def _time(**kwargs: Any) -> Any:
    return Field(sa_type=DateTime(timezone=True), **kwargs)  # timestamptz everywhere


class SchemaVersionRow(SQLModel, table=True):
    __tablename__ = "schema_version"
    version: int = _key()
    name: str
    applied_at: datetime = _time()


class StoreMetaRow(SQLModel, table=True):
    __tablename__ = "store_meta"
    key: str = _key()
    value: str
    updated_at: datetime = _time()


class MemoryRow(SQLModel, table=True):
    __tablename__ = "memories"
    agent_id: str = _key()
    id: UUID = _key()
    kind: str
    status: str
    summary: str
    summary_source: str
    summary_tokens: int
    embedding: Any = Field(default=None, sa_column=Column(Vector(EMBEDDING_DIM)))
    embedding_model: str | None = None
    search_tsv: Any = Field(
        default=None,
        sa_column=Column(TSVECTOR, Computed("to_tsvector('english', summary)"), nullable=True))
    importance: float
    tags: list[str] = _text_array()
    version: int
    created_at: datetime = _time()
    updated_at: datetime = _time()
    last_accessed_at: datetime | None = _time(default=None)
    access_count: int
    deleted_at: datetime | None = _time(default=None)


class DecisionRow(SQLModel, table=True):
    __tablename__ = "decisions"
    agent_id: str = _key()
    memory_id: UUID = _key()
    kind: str
    description: str
    outcome: str
    confidence: float | None = None
    pattern: str | None = None
    reasons: list[str] = _text_array()
    context: str | None = None
    source_episode_id: UUID | None = None
    subject: str | None = None


class FactRow(SQLModel, table=True):
    __tablename__ = "facts"
    agent_id: str = _key()
    memory_id: UUID = _key()
    kind: str
    content: str
    subject: str | None = None
    category: str | None = None
    confidence: float | None = None
    source: str | None = None
    source_kind: str
    source_episode_id: UUID | None = None
    normalized_hash: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    confirmation_count: int
    last_confirmed_at: datetime | None = _time(default=None)
    supersedes_id: UUID | None = None
    superseded_by_id: UUID | None = None
    conflicts_with: list[UUID] = Field(
        default_factory=list, sa_column=Column(ARRAY(PgUUID), nullable=False))
    source_seq: int | None = None
    slot_subject: str | None = None
    slot_attribute: str | None = None
    slot_value: str | None = None
    slot_ended: bool = False
    valid_from: datetime | None = _time(default=None)
    valid_until: datetime | None = _time(default=None)
    event_at: datetime | None = _time(default=None)


class EpisodeRow(SQLModel, table=True):
    __tablename__ = "episodes"
    agent_id: str = _key()
    memory_id: UUID = _key()
    kind: str
    state: str
    title: str | None = None
    detail: str | None = None
    started_at: datetime | None = _time(default=None)
    ended_at: datetime | None = _time(default=None)
    participants: list[str] = _text_array()
    outcome: str | None = None
    lessons: list[str] = _text_array()
    user_id: str | None = None
    key_points: list[str] = _text_array()
    topics: list[str] = _text_array()
    facts_state: str
    message_count: int
    last_message_at: datetime | None = _time(default=None)
    storage: str
    facts_extractor: str
    source_key: str | None = None


class ProcedureRow(SQLModel, table=True):
    __tablename__ = "procedures"
    agent_id: str = _key()
    memory_id: UUID = _key()
    kind: str
    name: str
    goals: list[str] = _text_array()
    core_patterns: list[str] = _text_array()
    implementation_notes: list[str] = _text_array()
    activation_count: int
    success_count: int
    failure_count: int
    effectiveness: float | None = None


class CensorRow(SQLModel, table=True):
    __tablename__ = "censors"
    agent_id: str = _key()
    memory_id: UUID = _key()
    kind: str
    trigger_pattern: str
    action: str
    reason: str
    activation_count: int
    false_positive_count: int


class EpisodeMessageRow(SQLModel, table=True):
    __tablename__ = "episode_messages"
    agent_id: str = _key()
    episode_id: UUID = _key()
    seq: int = _key()
    role: str
    content: str
    name: str | None = None
    tool_call_id: str | None = None
    tokens: int
    metadata_: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column("metadata", JSONB, nullable=False))
    created_at: datetime = _time()
    # working memory: edits keep earlier versions, deletes are soft
    edited_at: datetime | None = _time(default=None)
    deleted_at: datetime | None = _time(default=None)
    edits: list[dict[str, Any]] = Field(
        default_factory=list, sa_column=Column(JSONB, nullable=False))


class EpisodeChunkRow(SQLModel, table=True):
    __tablename__ = "episode_chunks"
    agent_id: str = _key()
    episode_id: UUID = _key()
    chunk_no: int = _key()
    first_seq: int
    last_seq: int
    content: str
    tokens: int
    speakers: list[str] = _text_array()
    started_at: datetime | None = _time(default=None)
    ended_at: datetime | None = _time(default=None)
    message_metadata: list[dict[str, Any]] = Field(
        default_factory=list, sa_column=Column(JSONB, nullable=False))
    embedding: Any = Field(default=None, sa_column=Column(Vector(EMBEDDING_DIM)))
    embedding_model: str | None = None
    context: str = ""  # preceding turns, indexed with the chunk (chunks.index_text)
    search_tsv: Any = Field(
        default=None,
        sa_column=Column(TSVECTOR, Computed(
            "setweight(to_tsvector('english', content), 'A') || "
            "setweight(to_tsvector('english', context), 'D')"), nullable=True))
    created_at: datetime = _time()


class WorkItemRow(SQLModel, table=True):
    __tablename__ = "work_items"
    agent_id: str = _key()
    id: int = Field(sa_column=Column("id", BigInteger, Identity(always=True), primary_key=True))
    task: str
    memory_id: UUID
    state: str
    attempts: int
    run_after: datetime = _time()
    lease_until: datetime | None = _time(default=None)
    locked_by: str | None = None
    last_error: str | None = None
    dedup_key: str
    payload: dict[str, Any] = Field(sa_column=Column(JSONB, nullable=False))
    created_at: datetime = _time()
    updated_at: datetime = _time()


class MemoryEventRow(SQLModel, table=True):
    __tablename__ = "memory_events"
    agent_id: str = _key()
    id: int = Field(sa_column=Column("id", BigInteger, Identity(always=True), primary_key=True))
    memory_id: UUID
    event: str
    old_values: dict[str, Any] | None = Field(default=None, sa_column=Column(JSONB))
    new_values: dict[str, Any] | None = Field(default=None, sa_column=Column(JSONB))
    actor: str | None = None
    created_at: datetime = _time()


class EpisodeExtractionRow(SQLModel, table=True):
    __tablename__ = "episode_extractions"
    agent_id: str = _key()
    episode_id: UUID = _key()
    extraction: dict[str, Any] = Field(sa_column=Column(JSONB, nullable=False))
    created_at: datetime = _time()
    learned_at: datetime | None = _time(default=None)


class MemoryArchiveRow(SQLModel, table=True):
    __tablename__ = "memory_archive"
    agent_id: str = _key()
    memory_id: UUID = _key()
    part: str = _key()
    start_offset: int
    content: str | None = None
    messages: list[Any] | None = Field(default=None, sa_column=Column(JSONB))
    reason: str
    archived_at: datetime = _time()
    checksum: int | None = Field(default=None, sa_column=Column(BigInteger))


class ExtractionCacheRow(SQLModel, table=True):
    __tablename__ = "extraction_cache"
    agent_id: str = _key()
    memory_id: UUID = _key()
    query_sha256: bytes = Field(sa_column=Column(LargeBinary, primary_key=True))
    max_tokens: int = _key()
    content: str
    source: str
    model: str | None = None
    created_at: datetime = _time()
    expires_at: datetime = _time()


class EmbeddingCacheRow(SQLModel, table=True):
    __tablename__ = "embedding_cache"
    agent_id: str = _key()
    model: str = _key()
    text_sha256: bytes = Field(sa_column=Column(LargeBinary, primary_key=True))
    embedding: Any = Field(sa_column=Column(Vector(EMBEDDING_DIM), nullable=False))
    created_at: datetime = _time()


class LLMCallRow(SQLModel, table=True):
    __tablename__ = "llm_calls"
    agent_id: str = _key()
    id: int = Field(sa_column=Column("id", BigInteger, Identity(always=True), primary_key=True))
    purpose: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    tokens_source: str
    latency_ms: int
    outcome: str
    error: str | None = None
    created_at: datetime = _time()


# ---------------------------------------------------------------- working memory


class ConversationPolicyRow(SQLModel, table=True):
    __tablename__ = "conversation_policies"
    agent_id: str = _key()
    policy: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSONB, nullable=False))
    updated_at: datetime = _time()


class ConversationStateRow(SQLModel, table=True):
    __tablename__ = "conversation_state"
    agent_id: str = _key()
    episode_id: UUID = _key()
    watermark_seq: int
    watermark_hash: bytes | None = Field(default=None, sa_column=Column(LargeBinary))
    summary_id: int | None = Field(default=None, sa_column=Column(BigInteger))
    story_id: int | None = Field(default=None, sa_column=Column(BigInteger))
    version: int = Field(sa_column=Column(BigInteger, nullable=False))
    armed: bool
    folded_message_count: int
    chapter_messages: int
    breaker_failures: int
    breaker_open_until: datetime | None = _time(default=None)
    invalidated_reason: str | None = None
    updated_at: datetime = _time()


class ConversationSummaryRow(SQLModel, table=True):
    __tablename__ = "conversation_summaries"
    agent_id: str = _key()
    id: int = Field(sa_column=Column("id", BigInteger, Identity(always=True), primary_key=True))
    episode_id: UUID
    parent_id: int | None = Field(default=None, sa_column=Column(BigInteger))
    level: str
    op: str
    depth: int
    first_seq: int
    last_seq: int
    covered: int
    content: str
    chars: int
    tokens: int
    source: str
    facets: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSONB, nullable=False))
    status: str
    notes: list[str] = _text_array()
    created_at: datetime = _time()


class ConversationAnalysisRow(SQLModel, table=True):
    __tablename__ = "conversation_analyses"
    agent_id: str = _key()
    id: int = Field(sa_column=Column("id", BigInteger, Identity(always=True), primary_key=True))
    episode_id: UUID
    seq: int
    content_hash: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    kind: str
    content: str
    created_at: datetime = _time()


class JobRunRow(SQLModel, table=True):
    __tablename__ = "job_runs"
    id: int = Field(sa_column=Column("id", BigInteger, Identity(always=True), primary_key=True))
    job: str
    slot: datetime | None = _time(default=None)
    trigger: str
    started_at: datetime = _time()
    finished_at: datetime | None = _time(default=None)
    status: str
    dry_run: bool
    counts: dict[str, Any] = Field(sa_column=Column(JSONB, nullable=False))
    note: str | None = None
    error: str | None = None
    runner: str


class AgentErasureRow(SQLModel, table=True):
    """The content-free receipt of a forgotten agent (no agent_id: it outlives it)."""

    __tablename__ = "agent_erasures"
    id: int = Field(sa_column=Column("id", BigInteger, Identity(always=True), primary_key=True))
    agent_sha256: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    erased_at: datetime = _time()
    row_counts: dict[str, Any] = Field(sa_column=Column(JSONB, nullable=False))
    total_rows: int = Field(sa_column=Column(BigInteger, nullable=False))
    actor: str


class ApiKeyRow(SQLModel, table=True):
    """A key made at run time: only the SHA-256 of its secret (no agent_id: not tenant
    data, a key may act for many agents)."""

    __tablename__ = "api_keys"
    id: int = Field(sa_column=Column("id", BigInteger, Identity(always=True), primary_key=True))
    name: str
    secret_sha256: bytes = Field(sa_column=Column(LargeBinary, nullable=False, unique=True))
    prefix: str
    role: str
    agents: list[str] | None = Field(default=None, sa_column=Column(ARRAY(Text), nullable=True))
    created_at: datetime = _time()
    created_by: str
    revoked_at: datetime | None = _time(default=None)
    revoked_by: str | None = None


TABLE_MODELS: tuple[type[SQLModel], ...] = (
    SchemaVersionRow, StoreMetaRow, MemoryRow, DecisionRow, FactRow, EpisodeRow,
    ProcedureRow, CensorRow, EpisodeMessageRow, EpisodeChunkRow, WorkItemRow, MemoryEventRow,
    EpisodeExtractionRow, MemoryArchiveRow, ExtractionCacheRow, EmbeddingCacheRow, LLMCallRow,
    ConversationPolicyRow, ConversationStateRow, ConversationSummaryRow,
    ConversationAnalysisRow,
    JobRunRow, AgentErasureRow, ApiKeyRow,
)

