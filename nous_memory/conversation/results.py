"""What working memory returns: prompts, rolling summaries, the summary chain, folds and
message changes.

Plain records with no I/O and no heavy import, so the remote client returns the same
types as the store without loading the database layer; the modules that compute them
(service, engine, storage, messages) re-export them under their old names.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from .facets import Facets

Level = Literal["chapter", "story"]
Op = Literal["fold", "compaction", "rebuild", "chapter_close"]
Source = Literal["llm", "rule"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Gap:
    """Where the watermark had to stop, and why."""

    seq: int
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SummarizeResult:
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

    def as_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["episode_id"] = str(self.episode_id)
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryRecord:
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
    created_at: datetime | None = None

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "parent_id": self.parent_id, "level": self.level,
                "op": self.op, "depth": self.depth, "first_seq": self.first_seq,
                "last_seq": self.last_seq, "covered": self.covered, "content": self.content,
                "chars": self.chars, "tokens": self.tokens, "source": self.source,
                "facets": self.facets.model_dump(), "status": self.status,
                "notes": list(self.notes),
                "created_at": self.created_at.isoformat() if self.created_at else None}


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageChange:
    episode_id: UUID
    seq: int
    action: str  # edited | deleted
    at: datetime
    invalidated: bool  # the change was behind the watermark: the summary is rebuilt
    versions: int = 1  # stored versions of the message (edits + the current one)

    def as_json(self) -> dict[str, Any]:
        return {"episode_id": str(self.episode_id), "seq": self.seq, "action": self.action,
                "at": self.at.isoformat(), "invalidated": self.invalidated,
                "versions": self.versions}


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationSummary:
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
    breaker_open_until: datetime | None

    def as_json(self) -> dict[str, Any]:
        return {"episode_id": str(self.episode_id), "text": self.text, "story": self.story,
                "chapter": self.chapter, "facets": self.facets.model_dump(),
                "watermark_seq": self.watermark_seq, "summary_id": self.summary_id,
                "story_id": self.story_id, "source": self.source, "depth": self.depth,
                "tokens": self.tokens, "invalidated_reason": self.invalidated_reason,
                "breaker_failures": self.breaker_failures,
                "breaker_open_until": (self.breaker_open_until.isoformat()
                                       if self.breaker_open_until else None)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Prompt:
    """Chat messages for the next call and how the budget was spent."""

    messages: list[dict[str, Any]]
    tokens: int
    budget_tokens: int
    summary_tokens: int
    context_tokens: int
    tail_messages: int
    dropped_messages: int  # unfolded messages left out to stay in budget
    truncated: bool  # the newest message was cut to fit
    watermark_seq: int
    summarized: SummarizeResult | None

    def as_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data["summarized"] = self.summarized.as_json() if self.summarized else None
        return data
