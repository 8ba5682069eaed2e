"""Immutable results returned by the store."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from ..errors import InvalidInputError, WrongKindError
from .kinds import (
    CensorDetail,
    DecisionDetail,
    Detail,
    EpisodeDetail,
    FactDetail,
    Kind,
    ProcedureDetail,
    Status,
    SummarySource,
    aware_timestamp,
)

_D = TypeVar("_D", FactDetail, EpisodeDetail, DecisionDetail, ProcedureDetail, CensorDetail)


class Memory(BaseModel):
    """One stored memory: the shared columns plus its kind's ``detail``."""

    # (not in the docstring, which the OpenAPI document shows) ``detail`` is the union of
    # the five kinds; ``memory.fact``, ``memory.episode`` and the other kinds' names give
    # it typed, and raise ``WrongKindError`` naming both kinds on a memory of another kind

    model_config = ConfigDict(frozen=True)

    id: UUID
    agent_id: str
    kind: Kind
    status: Status
    summary: str
    summary_source: SummarySource
    summary_tokens: int
    importance: float
    tags: list[str]
    embedding_model: str | None
    version: int
    created_at: datetime
    updated_at: datetime
    last_accessed_at: datetime | None = None
    access_count: int = 0
    deleted_at: datetime | None = None
    detail: Detail
    # whose it is (people/): person keys; empty: the agent's, shared with everyone
    people: list[str] = []

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Memory:
        return cls.model_validate(dict(row))

    @property
    def fact(self) -> FactDetail:
        return self._detail_as(FactDetail)

    @property
    def episode(self) -> EpisodeDetail:
        return self._detail_as(EpisodeDetail)

    @property
    def decision(self) -> DecisionDetail:
        return self._detail_as(DecisionDetail)

    @property
    def procedure(self) -> ProcedureDetail:
        return self._detail_as(ProcedureDetail)

    @property
    def censor(self) -> CensorDetail:
        return self._detail_as(CensorDetail)

    def _detail_as(self, wanted: type[_D]) -> _D:
        if not isinstance(self.detail, wanted):
            raise WrongKindError(self.id, self.kind.value, wanted.model_fields["kind"].default)
        return self.detail


class MemoryEvent(BaseModel):
    """One audit entry: what changed, from what, to what."""

    model_config = ConfigDict(frozen=True)

    id: int
    memory_id: UUID
    event: str
    old_values: dict[str, Any] | None
    new_values: dict[str, Any] | None
    actor: str | None
    created_at: datetime


class Page(BaseModel):
    """One page of a listing; pass ``next_cursor`` back to get the next one."""

    model_config = ConfigDict(frozen=True)

    items: list[Memory]
    next_cursor: str | None


def encode_cursor(created_at: datetime, memory_id: UUID) -> str:
    raw = f"{created_at.isoformat()}|{memory_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, UUID]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        stamp, ident = base64.urlsafe_b64decode(padded).decode().split("|")
        created_at = aware_timestamp(datetime.fromisoformat(stamp))
        assert created_at is not None
        return created_at, UUID(ident)
    except (ValueError, binascii.Error, UnicodeDecodeError):  # a forged or damaged cursor
        raise InvalidInputError.single("cursor", "not a cursor returned by list") from None
