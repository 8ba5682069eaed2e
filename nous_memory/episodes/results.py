"""The message an append takes and what it returns, apart from the episode manager (no
database behind them), so the remote client builds the same types without the store."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from ..memories.kinds import MAX_MESSAGE_CHARS, Label, Timestamp, no_nul
from ..people.keys import Person

MAX_MESSAGES_PER_APPEND = 1_000
MAX_METADATA_CHARS = 16_000
TRANSCRIPT_PAGE = 10_000
DEFAULT_LATEST = 50  # the newest messages a latest read returns when not told how many


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL = "tool"


# A message's text, as every message input takes it (appends and history turns).
MessageText = Annotated[str, StringConstraints(max_length=MAX_MESSAGE_CHARS),
                        AfterValidator(no_nul)]


class MessageIn(BaseModel):
    """One message to append; ``metadata`` is stored and returned as given."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Role
    content: MessageText
    name: Label | None = None
    # the person who said it (a user id or a name; people/): without one, a user's turn
    # is the episode's user's, else its ``name``'s
    user: Person | None = None
    tool_call_id: Label | None = None
    created_at: Timestamp | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class AppendResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    episode_id: UUID
    first_seq: int
    last_seq: int
    message_count: int
    tokens: int


class MessageErasure(BaseModel):
    """What forgetting one message removed and rebuilt (counts, never its text)."""

    model_config = ConfigDict(frozen=True)

    episode_id: UUID
    seq: int
    action: Literal["deleted", "redacted"]
    chunks: int = Field(description="chunks rebuilt from the transcript without it")
    summary: Literal["rebuilt", "scrubbed", "kept"]
    facts: int = Field(description="facts learned from it, purged")
    decisions: int = Field(description="decisions that held it, purged")
    rolling_summaries: int = Field(description="rolling summary records that folded it")
    events: int = Field(description="audit events whose values held it, emptied")
    restored: bool = Field(default=False, description="brought back from cold storage first")
    actor: str
