"""Turn-aligned verbatim chunks of a transcript, for recall of the exact words."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .tokens import count_tokens


@dataclass(frozen=True, slots=True, kw_only=True)
class TranscriptMessage:
    """One stored message, as the chunker and the close pipeline see it."""

    seq: int
    role: str
    content: str
    name: str | None = None
    tool_call_id: str | None = None
    tokens: int = 0
    created_at: datetime | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def speaker(self) -> str:
        return self.name or self.role


@dataclass(frozen=True, slots=True, kw_only=True)
class Chunk:
    chunk_no: int
    first_seq: int
    last_seq: int
    content: str
    tokens: int
    speakers: list[str]
    started_at: datetime | None
    ended_at: datetime | None
    message_metadata: list[dict[str, Any]]


def line(message: TranscriptMessage) -> str:
    return f"{message.speaker}: {message.content}"


def chunk_messages(messages: Sequence[TranscriptMessage], *, max_tokens: int,
                   first_chunk_no: int = 0) -> list[Chunk]:
    """Group consecutive whole messages into chunks of at most ``max_tokens``.

    A message longer than the limit is a chunk of its own (never cut mid-turn).
    Empty messages (a tool call with no text) are skipped.
    """
    chunks: list[Chunk] = []
    group: list[TranscriptMessage] = []
    used = 0
    for message in messages:
        if not message.content.strip():
            continue
        cost = count_tokens(line(message)) + 1
        if group and used + cost > max_tokens:
            chunks.append(_make(group, first_chunk_no + len(chunks)))
            group, used = [], 0
        group.append(message)
        used += cost
    if group:
        chunks.append(_make(group, first_chunk_no + len(chunks)))
    return chunks


def _make(group: list[TranscriptMessage], chunk_no: int) -> Chunk:
    content = "\n".join(line(m) for m in group)
    times = [m.created_at for m in group if m.created_at is not None]
    speakers: list[str] = []
    for m in group:
        if m.speaker not in speakers:
            speakers.append(m.speaker)
    return Chunk(chunk_no=chunk_no, first_seq=group[0].seq, last_seq=group[-1].seq,
                 content=content, tokens=count_tokens(content), speakers=speakers,
                 started_at=min(times) if times else None,
                 ended_at=max(times) if times else None,
                 message_metadata=[m.metadata for m in group])
