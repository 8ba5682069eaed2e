"""What ``learn_fact`` and ``fact_history`` return, apart from the learner (no database
behind them), so the remote client builds the same types without the store."""

from __future__ import annotations

from enum import StrEnum
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from ..memories.records import Memory, MemoryEvent

# The fields a caller gives ``learn_fact`` (all of them fields of a fact): the REST
# body's and the CLI's options are made from this list and ``FactDetail``'s fields.
LEARN_FIELDS = ("content", "subject", "category", "confidence", "source", "source_kind",
                "source_episode_id", "valid_from")

class LearnAction(StrEnum):
    CREATED = "created"
    CONFIRMED = "confirmed"
    MERGED = "merged"
    SUPERSEDED = "superseded"
    REACTIVATED = "reactivated"
    # said before the slot's current value (an older session imported late): kept in the
    # history as a past value, never current
    PAST = "past"
    REJECTED = "rejected"


class LearnResult(BaseModel):
    """What learn_fact did.  ``related`` holds the fact confirmed, replaced or flagged;
    ``also``: what was learned of a text's other statements ("I live in Lisbon and I have
    a dog called Pepper" is two facts), each decided on its own."""

    model_config = ConfigDict(frozen=True)

    action: LearnAction
    fact: Memory | None
    reason: str | None = None
    similarity: float | None = None
    decided_by: str | None = None
    related: list[UUID] = []
    also: list[LearnResult] = []


class FactHistory(BaseModel):
    """A fact's supersession chain (oldest first) and its audit events."""

    model_config = ConfigDict(frozen=True)

    chain: list[Memory]
    events: list[MemoryEvent]
