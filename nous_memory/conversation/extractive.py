"""Rule-based working memory: per-message analyses, the extractive fold, and the rule
compaction that is every path's last resort (so a summary can never outgrow its cap)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from .. import blocks
from ..tokens import count_tokens
from . import salience
from .facets import entities_in
from .pairs import ConvMessage, ToolCall, tool_calls
from .toolsum import summarize_tool

MESSAGE_CHARS = 240
MIN_FIT_CHARS = 100
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def analyze(message: ConvMessage, call: ToolCall | None) -> tuple[str, str]:
    """(kind, text) for one message.  An empty text is a gap (kind ``empty``) unless the
    message held nothing but blocks the store injected (kind ``injected``): those are
    already summarised, so the watermark passes them."""
    if message.role == "tool":
        return summarize_tool(message, call)
    text = " ".join(blocks.strip(message.content).split())
    calls = tool_calls(message)
    if calls:
        names = ", ".join(c.name for c in calls)
        lead = f"{message.speaker}: {extract(text, MESSAGE_CHARS // 2)} " if text else (
            f"{message.speaker}: ")
        return "tool_call", f"{lead}[calls {names}]"
    if not text:  # only blocks the store injected (a client stored its prompt back)
        return ("injected" if message.content.strip() else "empty"), ""
    return "message", f"{message.speaker}: {extract(text, MESSAGE_CHARS)}"


def extract(text: str, limit: int) -> str:
    """The sentences richest in names and numbers, in their order, within ``limit``."""
    if len(text) <= limit:
        return text
    sentences = [s for s in _SENTENCE.split(text) if s]
    scored = sorted(range(len(sentences)),
                    key=lambda i: (-(len(entities_in(sentences[i])) + (2 if i == 0 else 0)), i))
    chosen: list[int] = []
    used = 0
    for i in scored:
        size = len(sentences[i]) + 1
        if used + size <= limit:
            chosen.append(i)
            used += size
    if not chosen:
        return text[: limit - 3].rstrip() + "..."
    return " ".join(sentences[i] for i in sorted(chosen))


def append(summary: str, analyses: Sequence[str]) -> str:
    """The extractive fold: the old summary, then one line per folded message."""
    lines = [summary] if summary else []
    lines += [a for a in analyses if a]
    return "\n".join(lines)


def fit_summary(text: str, goal_chars: int, token_cap: int) -> str:
    """The rule compaction: the lines worth most (what they name, decide or promise; see
    ``salience``) within ``goal_chars`` and (as far as 100 characters allow) within
    ``token_cap`` tokens."""
    text = salience.compact(text, goal_chars)
    while count_tokens(text) > token_cap and len(text) > MIN_FIT_CHARS:
        text = salience.compact(text, max(MIN_FIT_CHARS, len(text) * 4 // 5))
    return text
