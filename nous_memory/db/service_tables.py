"""The table models of working memory, the jobs' runs, erasure receipts and API keys:
the service's own tables beside the memories (``models.py`` lists every table)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import BigInteger, Column, Identity, LargeBinary, Text
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlmodel import Field, SQLModel

from .columns import key, text_array, timestamp

# ---------------------------------------------------------------- working memory


class AgentSettingsRow(SQLModel, table=True):
    __tablename__ = "agent_settings"
    agent_id: str = key()
    secrets: str
    updated_at: datetime = timestamp()


class ConversationPolicyRow(SQLModel, table=True):
    __tablename__ = "conversation_policies"
    agent_id: str = key()
    policy: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSONB, nullable=False))
    updated_at: datetime = timestamp()


class ConversationStateRow(SQLModel, table=True):
    __tablename__ = "conversation_state"
    agent_id: str = key()
    episode_id: UUID = key()
    watermark_seq: int
    watermark_hash: bytes | None = Field(default=None, sa_column=Column(LargeBinary))
    summary_id: int | None = Field(default=None, sa_column=Column(BigInteger))
    story_id: int | None = Field(default=None, sa_column=Column(BigInteger))
    version: int = Field(sa_column=Column(BigInteger, nullable=False))
    armed: bool
    folded_message_count: int
    chapter_messages: int
    breaker_failures: int
    breaker_open_until: datetime | None = timestamp(default=None)
    invalidated_reason: str | None = None
    updated_at: datetime = timestamp()


class ConversationSummaryRow(SQLModel, table=True):
    __tablename__ = "conversation_summaries"
    agent_id: str = key()
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
    notes: list[str] = text_array()
    created_at: datetime = timestamp()


class ConversationAnalysisRow(SQLModel, table=True):
    __tablename__ = "conversation_analyses"
    agent_id: str = key()
    id: int = Field(sa_column=Column("id", BigInteger, Identity(always=True), primary_key=True))
    episode_id: UUID
    seq: int
    content_hash: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    kind: str
    content: str
    created_at: datetime = timestamp()


class JobRunRow(SQLModel, table=True):
    __tablename__ = "job_runs"
    id: int = Field(sa_column=Column("id", BigInteger, Identity(always=True), primary_key=True))
    job: str
    slot: datetime | None = timestamp(default=None)
    trigger: str
    started_at: datetime = timestamp()
    finished_at: datetime | None = timestamp(default=None)
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
    erased_at: datetime = timestamp()
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
    created_at: datetime = timestamp()
    created_by: str
    revoked_at: datetime | None = timestamp(default=None)
    revoked_by: str | None = None
