"""What working memory returns: prompts, rolling summaries, the summary chain, folds and
message changes.

Plain records with no I/O and no heavy import, so the remote client returns the same
types as the store without loading the database layer; the modules that compute them
(service, engine, storage, messages) re-export them under their old names.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, PlainSerializer

from .facets import Facets

Level = Literal["chapter", "story"]
Op = Literal["fold", "compaction", "rebuild", "chapter_close"]
Source = Literal["llm", "rule"]
# JSON keeps the offset spelled out (``+00:00``), as these records always have
Moment = Annotated[datetime, PlainSerializer(lambda value: value.isoformat(), return_type=str,
                                             when_used="json")]


class _Record(BaseModel):
    """A result sent as JSON as it is (CONTRIBUTING.md, "Records")."""

    model_config = ConfigDict(frozen=True)


class Gap(_Record):
    """Where the watermark had to stop, and why."""

    seq: int
    reason: str


class SummarizeResult(_Record):
    episode_id: UUID
    folded: int  # messages folded by this call
    steps: int  # chain records written by this call (folds, compactions, chapter closes)
    watermark_seq: int
    summary_id: int | None
    source: Source | None = None
    op: Op | None = None
    reasons: tuple[str, ...] = ()
    gaps: tuple[Gap, ...] = ()
    invalidated: str | None = None  # why the chain was rebuilt from the raw messages
    lost_race: bool = False  # another worker folded first; this call wrote nothing
    deferred: bool = False  # a fold is due but was left to the worker (it needs the LLM)


class SummaryRecord(_Record):
    """One link of the chain (a fold, compaction, rebuild, chapter or story summary)."""

    id: int
    parent_id: int | None
    level: Level
    op: Op
    depth: int
    first_seq: int
    last_seq: int
    covered: int
    content: str
    chars: int
    tokens: int
    source: Source
    facets: Facets
    status: str
    notes: tuple[str, ...] = ()
    created_at: Moment | None = None


class MessageChange(_Record):
    episode_id: UUID
    seq: int
    action: str  # edited | deleted
    at: Moment
    invalidated: bool  # the change was behind the watermark: the summary is rebuilt
    versions: int = 1  # stored versions of the message (edits + the current one)


class ConversationSummary(_Record):
    """The current rolling summary of an episode (what the close pipeline can read)."""

    episode_id: UUID
    text: str  # story and chapter, as a prompt shows them
    story: str
    chapter: str
    facets: Facets
    watermark_seq: int  # the last folded message (-1: nothing folded yet)
    summary_id: int | None
    story_id: int | None
    source: str | None
    depth: int
    tokens: int
    invalidated_reason: str | None
    breaker_failures: int
    breaker_open_until: Moment | None


class PromptPart(_Record):
    """Where one message of a prompt came from: the caller's system prompt, the summary
    block, the context block, or a stored message (its seq and the metadata it was
    appended with, so a framework can rebuild its own item from it)."""

    part: Literal["system", "summary", "context", "message"]
    seq: int | None = None
    metadata: dict[str, Any] = {}


class Prompt(_Record):
    """Chat messages for the next call and how the budget was spent.  ``parts`` lines up
    with ``messages`` (the same length and order): the messages stay as a chat API takes
    them, and each one's origin and stored metadata are beside it."""

    messages: list[dict[str, Any]]
    parts: list[PromptPart] = []
    tokens: int
    budget_tokens: int
    summary_tokens: int
    context_tokens: int
    tail_messages: int
    dropped_messages: int  # unfolded messages left out to stay in budget
    truncated: bool  # the newest message was cut to fit
    watermark_seq: int
    summarized: SummarizeResult | None
