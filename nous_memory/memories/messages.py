"""A stored message of an episode: one record for every reader of a transcript.

The store's ``transcript``, the chunker, the close pipeline and working memory's rolling
summaries all read the same ``episode_messages`` rows, so they share this record and the
one function that builds it from a row.  No I/O and no heavy import: the remote client
returns it too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class TranscriptMessage:
    """One live (not deleted) message of an episode, as stored."""

    seq: int
    role: str
    content: str
    name: str | None = None
    tool_call_id: str | None = None
    tokens: int = 0
    created_at: datetime | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    person: str | None = None  # who said it (people/): a person key

    @property
    def speaker(self) -> str:
        """Who said it: the participant's name, else the role."""
        return self.name or self.role

    @property
    def words(self) -> int:
        return len(self.content.split())


def to_message(row: Mapping[str, Any]) -> TranscriptMessage:
    """A message row (any query selecting the message columns) as the record."""
    return TranscriptMessage(seq=row["seq"], role=row["role"], content=row["content"],
                             name=row["name"], tool_call_id=row["tool_call_id"],
                             tokens=row["tokens"], created_at=row["created_at"],
                             metadata=row["metadata"] or {}, person=row.get("person"))
