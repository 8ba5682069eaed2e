"""Section budgeting: whole items, per-section budgets with spill-over, never over budget.

Pure (no database): given the resolved candidates it decides what goes in, renders the
text and proves the budget with an exact cl100k count.  The text is a sequence of units
that each start with a non-space character (the opening tag, section headers, items
whose inner lines are indented within them, the closing tag), so its count is the sum of
its units' exact counts (``tokens.count_line``); units recur from call to call and are
counted once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from .. import blocks
from ..tokens import count_line, count_recurring
from .model import SECTION_TITLES, Candidate, ContextItem, DroppedItem, Section

WRAP_KIND = "context"
_OPENING, _CLOSING = blocks.wrap("", WRAP_KIND).split("\n\n")  # the block's own lines
_TAG_OPEN = f"<{blocks.TAG}"
_TAG_CLOSE = f"</{blocks.TAG}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Assembled:
    text: str
    tokens: int
    items: list[ContextItem]
    dropped: list[DroppedItem]


def item_line(ref: str, text: str, said_at: datetime | None = None, *,
              stale_on: datetime | None = None, since: datetime | None = None,
              event_at: datetime | None = None, retold_on: datetime | None = None,
              newer_on: datetime | None = None, ended: bool = False) -> str:
    """``[ref] (date) text``: one item, with the day it was said when known; inner lines
    indented; the store's own tags neutralised so an item can never close the block
    early (episode close strips the whole block).  What no longer holds says so in words
    ("(older: superseded on 20 May 2024)"), so a reader with no sense of dates still
    answers with the current value; a current value says since when; a plan says when;
    a value its person told again, otherwise, says when ("(older: told again on ...)"),
    and so does one its person said more of later ("(older: the user said more on ...)");
    a value that ended says when ("(ended on ...)"), never that it is current."""
    body = text.replace(_TAG_CLOSE, "</nous_memory").replace(_TAG_OPEN, "<nous_memory")
    lines = [" ".join(line.split()) for line in body.strip().splitlines()]
    if event_at is not None:
        clock = "" if (event_at.hour, event_at.minute) == (0, 0) else f" {event_at:%H:%M}"
        when = f"({event_at:%a %-d %b %Y}{clock}) "
    else:
        when = f"({said_at:%a %-d %b %Y}) " if said_at is not None else ""
    note = (f" (older: superseded on {stale_on:%-d %b %Y})" if stale_on is not None
            else f" (ended on {since:%-d %b %Y})" if since is not None and ended
            else f" (current, since {since:%-d %b %Y})" if since is not None
            else f" (older: told again on {retold_on:%-d %b %Y})" if retold_on is not None
            else f" (older: the user said more on {newer_on:%-d %b %Y})"
            if newer_on is not None
            else "")
    return f"[{ref}] {when}" + "\n  ".join(line for line in lines if line) + note


def section_header(section: Section) -> str:
    return f"## {SECTION_TITLES[section]}"


def render(chosen: Sequence[tuple[Section, str]]) -> str:
    """The wrapped text of (section, line) pairs in order; empty when nothing was chosen."""
    if not chosen:
        return ""
    out: list[str] = []
    current: Section | None = None
    for section, line in chosen:
        if section is not current:
            out.append(section_header(section))
            current = section
        out.append(line)
    return blocks.wrap("\n".join(out), WRAP_KIND)


def order_section(items: Sequence[Candidate]) -> list[Candidate]:
    """Pinned first, then by score (highest first); ties broken by ref for determinism."""
    return sorted(items, key=lambda r: (not r.pinned, -r.score, r.ref, r.chunk_no or 0))


# sections that answer "what is true now" keep their budget in a small context, up to
# this share of it each, before the others are scaled down
RESERVED_SHARE: Mapping[Section, float] = {Section.NOW: 0.35, Section.UPCOMING: 0.15}


def section_allowances(budgets: Mapping[Section, int], available: int) -> dict[Section, int]:
    """Section budgets, scaled down in proportion when together they exceed the total;
    the reserved sections first keep theirs, up to their share of the total."""
    total = sum(budgets.values())
    if total <= available or total == 0:
        return dict(budgets)
    reserved = {s: min(b, int(available * RESERVED_SHARE[s]))
                for s, b in budgets.items() if s in RESERVED_SHARE}
    rest = available - sum(reserved.values())
    others = sum(b for s, b in budgets.items() if s not in reserved)
    return {s: reserved[s] if s in reserved else (b * rest // others if others else 0)
            for s, b in budgets.items()}


def assemble(candidates: Sequence[Candidate], budgets: Mapping[Section, int],
             budget_tokens: int) -> Assembled:
    """Fill sections in order; an item that does not fit is dropped (with the reason) and
    smaller ones after it may still go in; a section's unused tokens go to the next."""
    overhead = count_line(_OPENING) + count_recurring(_CLOSING)
    available = max(budget_tokens - overhead, 0)
    allowances = section_allowances(budgets, available)
    by_section: dict[Section, list[Candidate]] = {s: [] for s in budgets}
    dropped: list[DroppedItem] = []
    seen: set[tuple[str, int | None]] = set()
    for cand in candidates:
        if cand.section not in by_section:
            continue
        key = (cand.ref, cand.chunk_no)
        if key in seen:
            continue
        seen.add(key)
        by_section[cand.section].append(cand)

    picked: list[tuple[Candidate, str, int]] = []  # (candidate, line, tokens of the line)
    remaining = available
    carry = 0
    for section, allowance in allowances.items():
        left = allowance + carry
        header_cost = count_line(section_header(section))
        started = False
        for cand in order_section(by_section[section]):
            line = item_line(cand.ref, cand.text, cand.said_at, stale_on=cand.stale_on,
                             since=cand.since, event_at=cand.event_at,
                             retold_on=cand.retold_on, newer_on=cand.newer_on,
                             ended=cand.ended)
            line_cost = count_line(line)
            cost = line_cost + (0 if started else header_cost)
            if cost > left or cost > remaining:
                reason = "total budget" if cost > remaining else "section budget"
                dropped.append(_dropped(cand, line_cost, reason))
                continue
            picked.append((cand, line, line_cost))
            started = True
            left -= cost
            remaining -= cost
        carry = max(left, 0)

    # what is marked older is shown after what is not, in its section (chosen by rank:
    # an older telling may be the evidence asked for), and what says nothing last
    order = {section: i for i, section in enumerate(allowances)}
    picked.sort(key=lambda p: (order[p[0].section], p[0].hollow, _shown_older(p[0])))
    text = render([(c.section, line) for c, line, _ in picked])
    tokens = available - remaining + overhead if picked else 0  # exact: see count_line
    # sections are filled in text order and items appended in rank order: this is the text's
    items = [ContextItem.model_construct(  # typed fields of typed candidates: no validation
        ref=c.ref, id=c.memory_id, kind=c.kind, section=c.section, score=c.score, tokens=cost,
        tier=c.tier, chunk_no=c.chunk_no) for c, _, cost in picked]
    return Assembled(text=text, tokens=tokens, items=items, dropped=dropped)


def _shown_older(cand: Candidate) -> bool:
    """Marked older in a section of recalled texts ("About the user now" keeps its own
    order: a value said more of follows the statement that said more)."""
    return cand.section not in (Section.NOW, Section.UPCOMING) and (
        cand.stale_on is not None or cand.newer_on is not None or cand.retold_on is not None)


def _dropped(cand: Candidate, tokens: int, reason: str) -> DroppedItem:
    return DroppedItem(ref=cand.ref, id=cand.memory_id, kind=cand.kind,
                       section=cand.section, tokens=tokens, reason=reason)
