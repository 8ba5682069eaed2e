"""A conversation as the summarizer reads it at one moment, and the summary text of its
two chains (the story so far, the open chapter)."""

from __future__ import annotations

from dataclasses import dataclass

from .pairs import ConvMessage
from .storage import State, SummaryRecord


@dataclass(frozen=True, slots=True, kw_only=True)
class View:
    """A conversation as read at one moment: state, chain heads, unfolded messages."""

    state: State
    story: SummaryRecord | None
    chapter: SummaryRecord | None
    unfolded: list[ConvMessage]


def summary_text(story: SummaryRecord | None, chapter: SummaryRecord | None) -> str:
    return "\n\n".join(r.content for r in (story, chapter) if r is not None and r.content)
