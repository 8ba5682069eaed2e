"""A telling and its retelling: two statements of one person about the same thing, each
naming a value of one kind the other does not ("standup 9:15 daily" / "they pushed
standup to 10:15"), close in meaning.  For a question about how things stand the latest
telling goes to the top of "About the user now" and the values only the earlier one
names are marked older where a text states them.  Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .model import Candidate, Section
from .now import OldValue
from .tellings import (
    Key,
    Later,
    cosine,
    key,
    kinds,
    markable,
    quote,
    same_subject,
    value_kind,
    value_regex,
    words,
)

# Two statements of a person told otherwise: as close in meaning as this (stored vectors,
# raw cosine; the same floor as LATER_COSINE), each naming a value the other does not.
TOLD_OTHERWISE_COSINE = 0.3
MAX_PROMOTED = 3  # latest tellings shown above the rest, per call


@dataclass(frozen=True, slots=True, kw_only=True)
class Retelling:
    """An earlier statement, and the latest one that told the same thing otherwise."""

    earlier: Later
    later: Later
    old: frozenset[str]  # the values only the earlier one names


def retellings(statements: Sequence[Later],
               cosines: Mapping[tuple[Key, Key], float],
               asked: frozenset[str], *, every: bool = False) -> list[Retelling]:
    """Each earlier statement with the latest statement of the same person that tells
    the same thing with another value (close in meaning, both naming values the other
    does not)."""
    out: list[Retelling] = []
    for earlier in statements:
        for later in statements:  # newest first
            if later.said <= earlier.said or later.speaker != earlier.speaker:
                continue
            new = later.values - earlier.values - asked
            changed = kinds(new)
            # what changed is of the kind told again: a standup's time, not its team's city
            old = {v for v in earlier.values - later.values - asked
                   if value_kind(v) in changed}
            if not new or not old:
                continue
            if cosine(cosines, key(earlier.cand), key(later.cand)) < TOLD_OTHERWISE_COSINE:
                continue
            if not same_subject(earlier, later):
                continue
            out.append(Retelling(earlier=earlier, later=later, old=frozenset(old)))
            if not every:  # the latest only, unless asked for each
                break
    return out


def promote(candidates: Sequence[Candidate], found: Sequence[Retelling]) -> list[Candidate]:
    """The latest tellings (told otherwise by nothing after them) moved to the top of
    "About the user now", newest first, so they come before what they retell."""
    earlier = {key(r.earlier.cand) for r in found}
    earlier |= {key(c) for c in candidates if c.section is Section.NOW}  # shown there
    current = [words(c.text) for c in candidates
               if c.section is Section.NOW and c.since is not None]
    latest: dict[Key, Later] = {}
    for r in found:
        new = r.later.values - r.earlier.values
        if any(new & shown for shown in current):
            continue  # a current value shown already says it
        if key(r.later.cand) not in earlier:
            latest.setdefault(key(r.later.cand), r.later)
    chosen = sorted(latest.values(), key=lambda s: s.said, reverse=True)[:MAX_PROMOTED]
    if not chosen:
        return list(candidates)
    moved = {key(s.cand) for s in chosen}
    top = max((c.score for c in candidates if c.section is Section.NOW), default=0.0)
    out = [dataclasses.replace(s.cand, section=Section.NOW, pinned=True, text=quote(s),
                               score=top + 1.0 + i, stale_on=None, retold_on=None)
           for i, s in enumerate(reversed(chosen))]
    out += [c for c in candidates
            if key(c) not in moved or c.section is Section.NOW]
    return out


def retold_olds(found: Sequence[Retelling]) -> list[OldValue]:
    """The values only an earlier telling names, as old ones (marked where stated)."""
    out: list[OldValue] = []
    for r in found:
        # a text holding a new value of the kind told otherwise is not old ("30 min" of
        # a swim beside a new gym's name shields nothing)
        told = kinds(r.old)
        new = sorted(v for v in r.later.values - r.earlier.values if value_kind(v) in told)
        current = value_regex(new) if new else None
        for value in sorted(r.old):
            if markable(value):
                out.append(OldValue(old=value_regex([value]), current=current,
                                    until=r.later.said))
    return out
