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
from sqlalchemy import BigInteger, Column, Computed, Identity, LargeBinary
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TSVECTOR
from sqlalchemy.dialects.postgresql import UUID as PgUUID
from sqlmodel import Field, SQLModel

from .columns import key, text_array, timestamp
from .service_tables import (
    AgentErasureRow,
    AgentSettingsRow,
    ApiKeyRow,
    ConversationAnalysisRow,
    ConversationPolicyRow,
    ConversationStateRow,
    ConversationSummaryRow,
    JobRunRow,
)

EMBEDDING_DIM = 384


class SchemaVersionRow(SQLModel, table=True):
    __tablename__ = "schema_version"
    version: int = key()
    name: str
    applied_at: datetime = timestamp()


class StoreMetaRow(SQLModel, table=True):
    __tablename__ = "store_meta"
    key: str = key()
    value: str
    updated_at: datetime = timestamp()


class MemoryRow(SQLModel, table=True):
    __tablename__ = "memories"
    agent_id: str = key()
    id: UUID = key()
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
    tags: list[str] = text_array()
    version: int
    created_at: datetime = timestamp()
    updated_at: datetime = timestamp()
    last_accessed_at: datetime | None = timestamp(default=None)
    access_count: int
    deleted_at: datetime | None = timestamp(default=None)
    people: list[str] = text_array()


class DecisionRow(SQLModel, table=True):
    __tablename__ = "decisions"
    agent_id: str = key()
    memory_id: UUID = key()
    kind: str
    description: str
    outcome: str
    confidence: float | None = None
    pattern: str | None = None
    reasons: list[str] = text_array()
    context: str | None = None
    source_episode_id: UUID | None = None
    subject: str | None = None


class FactRow(SQLModel, table=True):
    __tablename__ = "facts"
    agent_id: str = key()
    memory_id: UUID = key()
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
    last_confirmed_at: datetime | None = timestamp(default=None)
    supersedes_id: UUID | None = None
    superseded_by_id: UUID | None = None
    conflicts_with: list[UUID] = Field(
        default_factory=list, sa_column=Column(ARRAY(PgUUID), nullable=False))
    source_seq: int | None = None
    slot_subject: str | None = None
    slot_attribute: str | None = None
    slot_value: str | None = None
    slot_ended: bool = False
    valid_from: datetime | None = timestamp(default=None)
    valid_until: datetime | None = timestamp(default=None)
    event_at: datetime | None = timestamp(default=None)


class EpisodeRow(SQLModel, table=True):
    __tablename__ = "episodes"
    agent_id: str = key()
    memory_id: UUID = key()
    kind: str
    state: str
    title: str | None = None
    detail: str | None = None
    started_at: datetime | None = timestamp(default=None)
    ended_at: datetime | None = timestamp(default=None)
    participants: list[str] = text_array()
    outcome: str | None = None
    lessons: list[str] = text_array()
    user_id: str | None = None
    key_points: list[str] = text_array()
    topics: list[str] = text_array()
    facts_state: str
    message_count: int
    last_message_at: datetime | None = timestamp(default=None)
    storage: str
    facts_extractor: str
    source_key: str | None = None


class ProcedureRow(SQLModel, table=True):
    __tablename__ = "procedures"
    agent_id: str = key()
    memory_id: UUID = key()
    kind: str
    name: str
    goals: list[str] = text_array()
    core_patterns: list[str] = text_array()
    implementation_notes: list[str] = text_array()
    activation_count: int
    success_count: int
    failure_count: int
    effectiveness: float | None = None


class CensorRow(SQLModel, table=True):
    __tablename__ = "censors"
    agent_id: str = key()
    memory_id: UUID = key()
    kind: str
    trigger_pattern: str
    action: str
    reason: str
    activation_count: int
    false_positive_count: int


class EpisodeMessageRow(SQLModel, table=True):
    __tablename__ = "episode_messages"
    agent_id: str = key()
    episode_id: UUID = key()
    seq: int = key()
    role: str
    content: str
    name: str | None = None
    tool_call_id: str | None = None
    tokens: int
    metadata_: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column("metadata", JSONB, nullable=False))
    created_at: datetime = timestamp()
    # working memory: edits keep earlier versions, deletes are soft
    edited_at: datetime | None = timestamp(default=None)
    deleted_at: datetime | None = timestamp(default=None)
    edits: list[dict[str, Any]] = Field(
        default_factory=list, sa_column=Column(JSONB, nullable=False))
    person: str | None = None


class EpisodeChunkRow(SQLModel, table=True):
    __tablename__ = "episode_chunks"
    agent_id: str = key()
    episode_id: UUID = key()
    chunk_no: int = key()
    first_seq: int
    last_seq: int
    content: str
    tokens: int
    speakers: list[str] = text_array()
    started_at: datetime | None = timestamp(default=None)
    ended_at: datetime | None = timestamp(default=None)
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
    created_at: datetime = timestamp()


class WorkItemRow(SQLModel, table=True):
    __tablename__ = "work_items"
    agent_id: str = key()
    id: int = Field(sa_column=Column("id", BigInteger, Identity(always=True), primary_key=True))
    task: str
    memory_id: UUID
    state: str
    attempts: int
    run_after: datetime = timestamp()
    lease_until: datetime | None = timestamp(default=None)
    locked_by: str | None = None
    last_error: str | None = None
    dedup_key: str
    payload: dict[str, Any] = Field(sa_column=Column(JSONB, nullable=False))
    created_at: datetime = timestamp()
    updated_at: datetime = timestamp()


class MemoryEventRow(SQLModel, table=True):
    __tablename__ = "memory_events"
    agent_id: str = key()
    id: int = Field(sa_column=Column("id", BigInteger, Identity(always=True), primary_key=True))
    memory_id: UUID
    event: str
    old_values: dict[str, Any] | None = Field(default=None, sa_column=Column(JSONB))
    new_values: dict[str, Any] | None = Field(default=None, sa_column=Column(JSONB))
    actor: str | None = None
    created_at: datetime = timestamp()


class EpisodeExtractionRow(SQLModel, table=True):
    __tablename__ = "episode_extractions"
    agent_id: str = key()
    episode_id: UUID = key()
    extraction: dict[str, Any] = Field(sa_column=Column(JSONB, nullable=False))
    created_at: datetime = timestamp()
    learned_at: datetime | None = timestamp(default=None)


class MemoryArchiveRow(SQLModel, table=True):
    __tablename__ = "memory_archive"
    agent_id: str = key()
    memory_id: UUID = key()
    part: str = key()
    start_offset: int
    content: str | None = None
    messages: list[Any] | None = Field(default=None, sa_column=Column(JSONB))
    reason: str
    archived_at: datetime = timestamp()
    checksum: int | None = Field(default=None, sa_column=Column(BigInteger))


class ExtractionCacheRow(SQLModel, table=True):
    __tablename__ = "extraction_cache"
    agent_id: str = key()
    memory_id: UUID = key()
    query_sha256: bytes = Field(sa_column=Column(LargeBinary, primary_key=True))
    max_tokens: int = key()
    content: str
    source: str
    model: str | None = None
    created_at: datetime = timestamp()
    expires_at: datetime = timestamp()


class EmbeddingCacheRow(SQLModel, table=True):
    __tablename__ = "embedding_cache"
    agent_id: str = key()
    model: str = key()
    text_sha256: bytes = Field(sa_column=Column(LargeBinary, primary_key=True))
    embedding: Any = Field(sa_column=Column(Vector(EMBEDDING_DIM), nullable=False))
    created_at: datetime = timestamp()


class LLMCallRow(SQLModel, table=True):
    __tablename__ = "llm_calls"
    agent_id: str = key()
    id: int = Field(sa_column=Column("id", BigInteger, Identity(always=True), primary_key=True))
    purpose: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    tokens_source: str
    latency_ms: int
    outcome: str
    error: str | None = None
    created_at: datetime = timestamp()


TABLE_MODELS: tuple[type[SQLModel], ...] = (
    SchemaVersionRow, StoreMetaRow, MemoryRow, DecisionRow, FactRow, EpisodeRow,
    ProcedureRow, CensorRow, EpisodeMessageRow, EpisodeChunkRow, WorkItemRow, MemoryEventRow,
    EpisodeExtractionRow, MemoryArchiveRow, ExtractionCacheRow, EmbeddingCacheRow, LLMCallRow,
    AgentSettingsRow, ConversationPolicyRow, ConversationStateRow, ConversationSummaryRow,
    ConversationAnalysisRow,
    JobRunRow, AgentErasureRow, ApiKeyRow,
)

