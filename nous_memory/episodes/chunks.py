"""Turn-aligned verbatim chunks of a transcript, for recall of the exact words.

Policy (measured with bench/locomo_recall.py): a chunk is one turn by default, indexed
together with the turns just before it.  A reply such as "Yes, last weekend at the lake!"
is found through the question it answers, while the chunk's verbatim ``content`` (what
recall returns and context assembly shows) stays the turn itself, so each item costs one
place in a ranked list and no words are shown twice.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from .. import blocks
from ..memories.messages import TranscriptMessage as TranscriptMessage
from ..tokens import count_tokens
from .dates import date_line

CHUNK_TURNS = 1  # messages per chunk (a chunk also stops at its token limit)
CONTEXT_TURNS = 2  # preceding messages indexed with a chunk, not part of its content


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
    # when it was said (absolute dates, see dates.py) and the preceding turns' lines:
    # indexed, never shown as content
    context: str = ""

    @property
    def index_text(self) -> str:
        return index_text(self.content, self.context)


def index_text(content: str, context: str) -> str:
    """What a chunk is full-text indexed as: its context, then itself (schema.sql's
    generated ``episode_chunks.search_tsv`` indexes the same two parts)."""
    return f"{context}\n{content}" if context else content


# What a chunk is embedded as: at most this many characters (about 128 of the model's
# tokens, the length all-MiniLM-L6-v2 was trained on), the turn's own words first and
# the nearest context in the room left.  The model's cost grows with its input; a full
# 256-token window per turn (context included) made ingestion model-bound at a few turns
# a second, and the words past the cut stay in the full-text index.  Measured with
# bench/longmemeval.py and bench/locomo_recall.py (bench/README.md).
KEY_CHARS = 600


def embedding_text(content: str, context: str, max_chars: int = KEY_CHARS) -> str:
    """The chunk's embedding input: its content (cut at a word within ``max_chars``),
    preceded by the end of its context when the content leaves room."""
    if len(content) >= max_chars:
        cut = content[:max_chars]
        space = cut.rfind(" ")
        return cut[:space] if space > max_chars // 2 else cut
    room = max_chars - len(content) - 1
    if not context or room < 40:
        return content
    tail = context[-room:]
    if len(context) > room:
        newline = tail.find("\n")
        space = tail.find(" ")
        start = newline + 1 if newline >= 0 else space + 1
        tail = tail[start:]
    return f"{tail}\n{content}" if tail else content


def line(message: TranscriptMessage) -> str:
    return f"{message.speaker}: {message.content}"


def chunk_messages(messages: Sequence[TranscriptMessage], *, max_tokens: int,
                   first_chunk_no: int = 0, max_turns: int = CHUNK_TURNS,
                   context_turns: int = CONTEXT_TURNS,
                   before: Sequence[TranscriptMessage] = ()) -> list[Chunk]:
    """Group consecutive whole messages into chunks of at most ``max_turns`` messages and
    ``max_tokens`` tokens, each carrying the ``context_turns`` messages before it.

    A message longer than the limit is a chunk of its own (never cut mid-turn).
    Empty messages (a tool call with no text) are skipped.  ``before``: messages already
    chunked earlier, which give the first new chunks their context.
    """
    if max_turns < 1 or context_turns < 0:
        raise ValueError("max_turns must be >= 1 and context_turns >= 0")
    # what the store itself put into the conversation (a context a memory tool returned,
    # a summary) is never evidence again: it is left out of the chunks
    spoken = [m if blocks.TAG not in m.content else replace(m, content=blocks.strip(m.content))
              for m in messages]
    spoken = [m for m in spoken if m.content.strip()]
    groups: list[list[TranscriptMessage]] = []
    group: list[TranscriptMessage] = []
    used = 0
    last_cost = 0
    one_line_tokens: dict[int, int] = {}  # a one-message chunk's count, known already
    for message in spoken:
        cost = count_tokens(line(message)) + 1
        if group and (used + cost > max_tokens or len(group) >= max_turns):
            if len(group) == 1:
                one_line_tokens[len(groups)] = last_cost - 1
            groups.append(group)
            group, used = [], 0
        group.append(message)
        used += cost
        last_cost = cost
    if group:
        if len(group) == 1:
            one_line_tokens[len(groups)] = last_cost - 1
        groups.append(group)
    chunks: list[Chunk] = []
    # only the last context_turns spoken messages are ever context
    history: deque[TranscriptMessage] = deque(
        (m for m in before if blocks.strip(m.content)), maxlen=context_turns)
    for index, group in enumerate(groups):
        chunks.append(_make(group, first_chunk_no + index, list(history),
                            one_line_tokens.get(index)))
        history.extend(group)
    return chunks


def _make(group: list[TranscriptMessage], chunk_no: int,
          context: Sequence[TranscriptMessage] = (), tokens: int | None = None) -> Chunk:
    content = "\n".join(line(m) for m in group)
    times = [m.created_at for m in group if m.created_at is not None]
    speakers: list[str] = []
    for m in group:
        if m.speaker not in speakers:
            speakers.append(m.speaker)
    return Chunk(chunk_no=chunk_no, first_seq=group[0].seq, last_seq=group[-1].seq,
                 content=content,
                 tokens=count_tokens(content) if tokens is None else tokens,
                 speakers=speakers,
                 started_at=min(times) if times else None,
                 ended_at=max(times) if times else None,
                 message_metadata=[m.metadata for m in group],
                 context="\n".join(
                     [t for t in [date_line(content, min(times) if times else None)] if t]
                     + [line(m) for m in context]))
