"""Tier-1 template summaries, computed at write time and whenever a field they use changes."""

from __future__ import annotations

import math
import re

from .kinds import (
    CensorDetail,
    DecisionDetail,
    DecisionOutcome,
    EpisodeDetail,
    FactDetail,
    ProcedureDetail,
    SummarySource,
)

PROCEDURE_PATTERNS_SHOWN = 3
PROCEDURE_MIN_ACTIVATIONS_FOR_EFFECTIVENESS = 5
RULE_SUMMARY_MAX_CHARS = 400

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def percent(value: float) -> int:
    """0.85 -> 85, rounding halves up (not to even) so 0.925 shows as 93."""
    return math.floor(value * 100 + 0.5)


def decision_summary(d: DecisionDetail) -> str:
    text = d.description
    if d.outcome is not DecisionOutcome.PENDING:
        text += f" [{d.outcome.value}]"
    if d.confidence is not None:
        text += f" [{percent(d.confidence)}% confidence]"
    if d.pattern:
        text += f" — Pattern: {d.pattern}"
    return text


def fact_summary(d: FactDetail) -> str:
    return d.content


def procedure_summary(d: ProcedureDetail) -> str:
    text = d.name
    if d.core_patterns:
        text += ": " + "; ".join(d.core_patterns[:PROCEDURE_PATTERNS_SHOWN])
    if (d.activation_count >= PROCEDURE_MIN_ACTIVATIONS_FOR_EFFECTIVENESS
            and d.effectiveness is not None):
        text += f" [{percent(d.effectiveness)}% effective]"
    return text


def censor_summary(d: CensorDetail) -> str:
    return f"{d.action.value.upper()}: {d.trigger_pattern} — {d.reason}"


def episode_rule_summary(d: EpisodeDetail) -> str:
    """Extractive fallback: the title, whole leading sentences of the detail, the outcome."""
    parts: list[str] = [d.title.rstrip(".") + "."] if d.title else []
    used = len(parts[0]) if parts else 0
    if d.detail:
        parts.append(leading_sentences(d.detail, RULE_SUMMARY_MAX_CHARS - used))
    if d.outcome:
        parts.append(f"Outcome: {leading_sentences(d.outcome, 200)}")
    text = " ".join(p for p in parts if p)
    if not text:  # a conversation just started: nothing to extract from yet
        when = f" started {d.started_at:%Y-%m-%d %H:%M} UTC" if d.started_at else ""
        text = f"Conversation{when}."
    return text


def leading_sentences(text: str, budget: int) -> str:
    """Whole sentences from the start within ``budget`` chars; a long first one is cut at a word."""
    taken: list[str] = []
    used = 0
    for sentence in _SENTENCE_END.split(" ".join(text.split())):
        if used + len(sentence) + (1 if taken else 0) > budget:
            if not taken:
                taken.append(_cut_at_word(sentence, budget))
            break
        taken.append(sentence)
        used += len(sentence) + (1 if len(taken) > 1 else 0)
    return " ".join(taken)


def _cut_at_word(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: max(limit - 1, 1)].rsplit(" ", 1)[0]
    return cut.rstrip(",;:") + "…"


def summarize(
    detail: DecisionDetail | FactDetail | EpisodeDetail | ProcedureDetail | CensorDetail,
    given: str | None = None,
) -> tuple[str, SummarySource]:
    """The tier-1 summary of a record and where it came from."""
    if isinstance(detail, EpisodeDetail):
        if given:
            return given, SummarySource.GIVEN
        return episode_rule_summary(detail), SummarySource.RULE
    if isinstance(detail, DecisionDetail):
        return decision_summary(detail), SummarySource.TEMPLATE
    if isinstance(detail, FactDetail):
        return fact_summary(detail), SummarySource.TEMPLATE
    if isinstance(detail, ProcedureDetail):
        return procedure_summary(detail), SummarySource.TEMPLATE
    return censor_summary(detail), SummarySource.TEMPLATE
