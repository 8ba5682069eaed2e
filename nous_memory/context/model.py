"""The records of context assembly: the request, the candidates, and the frozen result.

Validation happens here, before any database or model work, so a bad request names its
field and costs nothing.  Sections are filled in a fixed order; the order is also the
order of the text, so the same memories always give the same context.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from ..errors import FieldProblem, InvalidInputError, longer_than
from ..memories.kinds import no_nul


class Section(StrEnum):
    """Context sections in fill (and text) order; unused budget spills to the next one."""

    NOW = "now"  # about the user now: current values of the slots that bear on the query
    UPCOMING = "upcoming"  # dated plans ahead of as_of
    CENSORS = "censors"
    DECISIONS = "decisions"
    FACTS = "facts"
    PROCEDURES = "procedures"
    EPISODES = "episodes"
    EXCERPTS = "excerpts"


DEFAULT_SECTION_BUDGETS: Mapping[Section, int] = {
    Section.NOW: 250,
    Section.UPCOMING: 150,
    Section.CENSORS: 300,
    Section.DECISIONS: 2000,
    Section.FACTS: 1500,
    Section.PROCEDURES: 1500,
    Section.EPISODES: 1000,
    Section.EXCERPTS: 1000,  # verbatim transcript chunks: the exact words, when summaries miss
}

SECTION_TITLES: Mapping[Section, str] = {
    Section.NOW: "About the user now",
    Section.UPCOMING: "Upcoming",
    Section.CENSORS: "Rules (censors)",
    Section.DECISIONS: "Decisions",
    Section.FACTS: "Facts",
    Section.PROCEDURES: "Procedures",
    Section.EPISODES: "Episodes",
    Section.EXCERPTS: "Excerpts (verbatim)",
}

DEFAULT_BUDGET_TOKENS = 4000
# the wrapper, one section header and one short item fit in this many tokens
MIN_BUDGET_TOKENS = 64
MAX_BUDGET_TOKENS = 200_000
MAX_QUERY_CHARS = 4_000  # as recall


class Extraction(StrEnum):
    """Tier 2 on a cache miss: truncate now and queue the LLM (cached), wait for the LLM
    within a time budget (sync), or truncate only (off)."""

    CACHED = "cached"
    SYNC = "sync"
    OFF = "off"


class Tier(StrEnum):
    SUMMARY = "summary"  # tier 1: the precomputed summary
    EXTRACTION = "extraction"  # tier 2: cached query-relevant extraction (LLM)
    TRUNCATION = "truncation"  # tier 2 fallback: sentence-aligned, query-aware truncation
    VERBATIM = "verbatim"  # a transcript excerpt, as spoken


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """One thing that may go into the context: a memory or a transcript chunk, with the
    text it will show and the tier that produced that text."""

    ref: str  # what the text shows, e.g. "fact:1a2b3c4d"
    memory_id: UUID  # the memory (for a chunk: its episode)
    kind: str  # memory kind, or "chunk"
    section: Section
    text: str  # tier-1 text (summary, or the chunk's words)
    score: float  # rank order within its section (higher first)
    pinned: bool = False  # always considered: matching censors, profile facts
    chunk_no: int | None = None
    tier: Tier = Tier.SUMMARY
    cosine: float | None = None  # raw similarity to the query, when recall measured it
    said_at: datetime | None = None  # shown beside the text, so order can be reasoned about
    matched: bool = False  # whether it holds a word of the query
    stale_on: datetime | None = None  # it states a value that stopped holding then
    retold_on: datetime | None = None  # its person told the value again, otherwise, then
    since: datetime | None = None  # a current value of a slot: held since then
    newer_on: datetime | None = None  # a slot's value its person said more of, then
    ended: bool = False  # a current slot fact that ends its value ("left Zenith")
    event_at: datetime | None = None  # an upcoming plan: when it happens
    hollow: bool = False  # says nothing for the query ("Got it, thanks."): shown last


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextRequest:
    agent_id: str
    query: str
    budget_tokens: int
    budgets: Mapping[Section, int]  # the selected sections, in fill order
    extraction: Extraction


class ContextItem(BaseModel):
    model_config = ConfigDict(frozen=True)

    ref: str
    id: UUID
    kind: str
    section: Section
    score: float
    tokens: int  # the tokens of its line in the text
    tier: Tier
    chunk_no: int | None = None


class DroppedItem(BaseModel):
    model_config = ConfigDict(frozen=True)

    ref: str
    id: UUID
    kind: str
    section: Section
    tokens: int
    reason: str  # "section budget", "total budget", "duplicate"


class ContextTimings(BaseModel):
    """Milliseconds per step; ``total_ms`` is the whole call."""

    model_config = ConfigDict(frozen=True)

    embed_ms: float
    candidates_ms: float
    extraction_ms: float
    assemble_ms: float
    total_ms: float


class Context(BaseModel):
    """An assembled context: ``text`` is at most ``budget_tokens`` cl100k tokens."""

    model_config = ConfigDict(frozen=True)

    text: str
    items: list[ContextItem]
    tokens_used: int
    budget_tokens: int
    dropped: list[DroppedItem]
    cache_hits: int
    cache_misses: int
    extraction_queued: int
    extraction: Extraction
    timings: ContextTimings


def parse_request(agent_id: str, query: object, budget_tokens: object,
                  sections: object, extraction: object) -> ContextRequest:
    """Check every argument at once; the error lists each bad field with its reason."""
    problems: list[FieldProblem] = []
    text = ""
    if not isinstance(query, str) or not query.strip():
        problems.append(FieldProblem("query", "must be a non-empty string"))
    elif len(query) > MAX_QUERY_CHARS:
        problems.append(FieldProblem("query", longer_than(MAX_QUERY_CHARS, len(query))))
    else:
        try:
            text = no_nul(query.strip())
        except ValueError as exc:
            problems.append(FieldProblem("query", str(exc)))
    if (not isinstance(budget_tokens, int) or isinstance(budget_tokens, bool)
            or not MIN_BUDGET_TOKENS <= budget_tokens <= MAX_BUDGET_TOKENS):
        problems.append(FieldProblem(
            "budget_tokens",
            f"must be an integer from {MIN_BUDGET_TOKENS} to {MAX_BUDGET_TOKENS}"))
    budgets = _parse_sections(sections, problems)
    mode = Extraction.CACHED
    try:
        mode = Extraction(str(extraction))
    except ValueError:
        problems.append(FieldProblem(
            "extraction", f"must be one of {', '.join(e.value for e in Extraction)}"))
    if problems:
        raise InvalidInputError(problems)
    assert isinstance(budget_tokens, int)
    return ContextRequest(agent_id=agent_id, query=text, budget_tokens=budget_tokens,
                          budgets=budgets, extraction=mode)


def _parse_sections(sections: object, problems: list[FieldProblem]) -> dict[Section, int]:
    """None: every section with its default budget; a list of names: those sections;
    a mapping name -> tokens: those sections with those budgets."""
    if sections is None:
        return dict(DEFAULT_SECTION_BUDGETS)
    chosen: dict[Section, int] = {}
    if isinstance(sections, Mapping):
        entries: Sequence[tuple[object, object]] = list(sections.items())
    elif isinstance(sections, Sequence) and not isinstance(sections, str | bytes):
        entries = [(name, None) for name in sections]
    else:
        problems.append(FieldProblem("sections", "must be a list of section names or an "
                                                 "object of name -> token budget"))
        return chosen
    if not entries:
        problems.append(FieldProblem("sections", "must name at least one section"))
    known = ", ".join(s.value for s in Section)
    for name, budget in entries:
        try:
            section = Section(str(name))
        except ValueError:
            problems.append(FieldProblem(f"sections.{name}", f"unknown section; one of {known}"))
            continue
        if budget is None:
            chosen[section] = DEFAULT_SECTION_BUDGETS[section]
        elif (not isinstance(budget, int) or isinstance(budget, bool)
              or not 0 <= budget <= MAX_BUDGET_TOKENS):
            problems.append(FieldProblem(f"sections.{name}",
                                         f"budget must be an integer from 0 to "
                                         f"{MAX_BUDGET_TOKENS}"))
        else:
            chosen[section] = budget
    return {s: chosen[s] for s in Section if s in chosen}
