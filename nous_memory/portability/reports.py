"""What export, import and erasure report back (immutable, JSON-ready)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreFacts:
    """What an export records of the store it came from, and an import checks against."""

    schema_version: int
    embedding_model: str | None
    embedding_dim: int


class ExportSummary(BaseModel):
    """What an export wrote (the trailer's content, plus the size)."""

    model_config = ConfigDict(frozen=True)

    agent_id: str
    rows: int
    counts: dict[str, int] = Field(description="rows per table")
    sha256: str = Field(description="SHA-256 of every line before the trailer")
    bytes: int


class ImportSummary(BaseModel):
    """What an import did, per table: rows inserted and rows the agent already had."""

    model_config = ConfigDict(frozen=True)

    agent_id: str = Field(description="the agent the rows were written to")
    source_agent_id: str = Field(description="the agent the file was exported from")
    rows: int = Field(description="rows in the file")
    inserted: dict[str, int]
    identical: dict[str, int] = Field(
        description="rows the agent already had with the same values (skipped)")
    embedding_model: str | None = Field(description="the model the file's vectors came from")
    reembed_pending: int = Field(
        0, description="imported rows whose vectors are of another model than this store's; "
                       "the housekeeping job re-embeds them (recall skips them until then)")

    @property
    def changed(self) -> bool:
        return any(self.inserted.values())


class ErasureReceipt(BaseModel):
    """The content-free record of a forgotten agent (also kept in ``agent_erasures``)."""

    model_config = ConfigDict(frozen=True)

    audit_id: int
    agent_id: str
    agent_sha256: str = Field(description="what the audit table keeps instead of the id")
    erased_at: datetime
    counts: dict[str, int] = Field(description="rows removed per table")
    total_rows: int
    actor: str


class PersonErasure(BaseModel):
    """What forgetting one person of an agent did (no content, not even the person)."""

    model_config = ConfigDict(frozen=True)

    agent_id: str
    purged: dict[str, int] = Field(description="memories purged, per kind: the person's "
                                               "alone")
    left: int = Field(description="memories shared with others that the person left")
    actor: str
