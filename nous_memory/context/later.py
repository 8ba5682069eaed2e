"""A current value that something said later may have replaced, where no rule read a change.

People tell changes in more ways than any list of phrases: "first week at Initech done!",
"the landlord put my rent up to 1450", "my new GP is Dr. Okafor".  So a slot's value is
shown as current only while nothing its person said *later* bears on the same thing,
decided by meaning and by the values a statement names, never by its wording:

- the later statement is a person's own (a turn of theirs or a fact from one; not the
  assistant's, not a bare question) and was said after the value was;
- it is about the same subject: the user's own value is borne on by a statement in the
  first person that is not about someone of theirs ("my sister ..."); another subject's
  by a statement that names it;
- it names a value the fact does not hold (a number, a time, a name-like word the query
  does not hold either) and does not name the fact's own value;
- it does not tell what is ahead (a plan replaces nothing yet);
- it is close in meaning to the fact: raw cosine of their stored vectors at least
  ``LATER_COSINE``.

Such a value is no longer called current.  The latest statement that bears on it goes
above it in "About the user now" (cut to its sentences that name the new values), the
value says when its person said more ("(older: the user said more on 15 May 2024)"), and
other texts stating it are marked older.  A rule cannot always tell a change from a
mention (a visit to another city reads like a move), so both are shown with their dates
and neither is called current: the reader decides, which is better than a confident
wrong answer.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from ..memories.fact_slots import SELF
from .model import Candidate, Section
from .now import OldValue, value_pattern
from .retold import Retelling
from .tellings import (
    VALUE_WORDS,
    Key,
    Later,
    about,
    cosine,
    key,
    kinds,
    markable,
    quote,
    value_kind,
    value_regex,
    words,
)

# Raw cosine, bundled model: on STS-B dev, 74% of the pairs people rate unrelated score
# under 0.3 (the floor ordering.py uses too); a restatement with another value ("the
# landlord put my rent up to 1450" against "The user pays 1300 in rent") scores 0.5-0.75.
# On the tuning half of bench/staleness.py, 0.4 / 0.3 / 0.2 gave current-first 0.70 /
# 0.77 / 0.79: lower still leans on the values alone, so the calibrated floor is kept.
LATER_COSINE = 0.3


@dataclass(frozen=True, slots=True, kw_only=True)
class Contest:
    """A current value and the latest statement that bears on it."""

    fact: UUID
    later: Later
    value: str


def contests(now: Sequence[Candidate], rows: Mapping[UUID, Mapping[str, Any]],
             later: Sequence[Later], cosines: Mapping[tuple[Key, Key], float],
             query_words: Iterable[str], *, every: bool = False) -> list[Contest]:
    """For each current value, the latest statement that bears on it, if any (``every``:
    each statement that does)."""
    asked = frozenset(query_words)
    out: list[Contest] = []
    for cand in now:
        row = rows.get(cand.memory_id)
        if row is None or cand.since is None:
            continue
        value = (row["slot_value"] or "").lower()
        own = words(cand.text) | words(value)
        known = VALUE_WORDS.get(row["slot_attribute"] or "", frozenset())
        subject = row["slot_subject"] or SELF
        stated = (re.compile(r"(?<!\w)" + re.escape(value) + r"(?!\w)") if value else None)
        for stmt in later:  # newest first
            if stmt.said < cand.since or stmt.cand.memory_id == cand.memory_id or (
                    stmt.said == cand.since and not (cand.ended and _told(cand.text, stmt))):
                continue  # an ended value: what was said as it ended may name its successor
            if not about(subject, stmt):
                continue
            new = {v for v in stmt.values | (words(stmt.body) & known)
                   if v not in own and v not in asked}
            if value and not kinds(new) & kinds(value.split()):
                new = set()  # another kind of value: not this one told otherwise
            if stated is not None and stated.search(stmt.body.lower()) and not new & known \
                    and not cand.ended:
                # the value said again later ("Lisbon is lovely, Alfama especially"): what
                # came before it is older still; only a word of the attribute's own kind
                # beside it tells a change ("flexitarian, healthier than pescatarian")
                break
            if not new:
                continue
            if cosine(cosines, key(cand), key(stmt.cand)) < LATER_COSINE:
                continue
            out.append(Contest(fact=cand.memory_id, later=stmt, value=value))
            if not every:
                break
    return out


Told = tuple[Contest, frozenset[str]]  # a statement told before a value, and its old values


def _told(fact: str, stmt: Later) -> bool:
    """Whether the statement is the one the fact was read from: it holds most of the
    fact's words of substance ("The user left Zenith in March." / "I left Zenith in
    March, I'm at Quorra now"), not only the value ("Zenith put me in Leeds")."""
    substance = {w for w in words(fact) if len(w) >= 4 and w != "user"}
    return bool(substance) and 3 * len(substance & words(stmt.body)) >= 2 * len(substance)


def told_before(now: Sequence[Candidate], rows: Mapping[UUID, Mapping[str, Any]],
                statements: Sequence[Later], cosines: Mapping[tuple[Key, Key], float],
                query_words: Iterable[str]) -> list[Told]:
    """The mirror of ``contests``: for each current value, the statements said *before*
    it held that bear on the same thing with another value of its kind ("Parkside
    Striders do a Wednesday 8k" before "The user has joined Canal Harriers"), with the
    values they name that the current one replaced."""
    asked = frozenset(query_words)
    out: list[Told] = []
    for cand in now:
        row = rows.get(cand.memory_id)
        if row is None or cand.since is None or cand.ended:
            continue
        value = (row["slot_value"] or "").lower()
        if not value:
            continue
        own = words(cand.text) | words(value)
        told = kinds(value.split())
        subject = row["slot_subject"] or SELF
        for stmt in statements:
            if stmt.said >= cand.since or stmt.cand.memory_id == cand.memory_id:
                continue
            old = frozenset(v for v in stmt.values - own - asked if value_kind(v) in told)
            if not old or stmt.values & words(value) or not about(subject, stmt):
                continue  # nothing of its kind told otherwise, or the value itself said
            if cosine(cosines, key(cand), key(stmt.cand)) < LATER_COSINE:
                continue
            out.append((Contest(fact=cand.memory_id, later=stmt, value=value), old))
    return out


def told_before_olds(found: Sequence[Told], since: Mapping[UUID, datetime]
                     ) -> list[OldValue]:
    """The values said before a current one held, as older than it where a text said
    before it states them without it."""
    out: list[OldValue] = []
    for contest, old in found:
        held = value_regex(contest.value.split(), as_names=False)  # a rule read it
        for value in sorted(old):
            if markable(value) and contest.fact in since:
                out.append(OldValue(old=value_regex([value]), current=held,
                                    until=since[contest.fact], said_more=True))
    return out


def apply_contests(candidates: Sequence[Candidate], found: Sequence[Contest], *,
                   current_only: bool) -> list[Candidate]:
    """The candidates with each contested value no longer current (left out with
    ``current_only``) and its latest later statement moved just above it."""
    if not found:
        return list(candidates)
    by_fact = {c.fact: c for c in found}
    moved = {(c.later.cand.memory_id, c.later.cand.chunk_no) for c in found}
    out: list[Candidate] = []
    for cand in candidates:
        if cand.section is not Section.NOW and (cand.memory_id, cand.chunk_no) in moved:
            continue
        contest = by_fact.get(cand.memory_id) if cand.section is Section.NOW else None
        if contest is None:
            out.append(cand)
            continue
        stmt = contest.later
        out.append(dataclasses.replace(stmt.cand, section=Section.NOW, pinned=True,
                                       text=quote(stmt), score=cand.score + 1e-6,
                                       stale_on=None, retold_on=None))
        if not current_only:
            out.append(dataclasses.replace(cand, since=None, newer_on=stmt.said))
    return _unique(out)


def _unique(candidates: list[Candidate]) -> list[Candidate]:
    """A statement that bears on two values is shown once, above the first."""
    seen: set[tuple[UUID, int | None, Section]] = set()
    out: list[Candidate] = []
    for cand in candidates:
        key = (cand.memory_id, cand.chunk_no, cand.section)
        if cand.section is Section.NOW and key in seen:
            continue
        seen.add(key)
        out.append(cand)
    return out


def retold_facts(now: Sequence[Candidate], rows: Mapping[UUID, Mapping[str, Any]],
                 told: Sequence[Retelling], found: Sequence[Contest]) -> list[Contest]:
    """A current value whose statement was told otherwise later is contested by that
    later telling: the value is in the earlier statement and not in the later one."""
    done = {c.fact for c in found}
    out: list[Contest] = []
    for cand in now:
        row = rows.get(cand.memory_id)
        if row is None or cand.since is None or cand.memory_id in done:
            continue
        value = (row["slot_value"] or "").lower()
        if not value:
            continue
        pattern = re.compile(r"(?<!\w)" + re.escape(value) + r"(?!\w)")
        subject = row["slot_subject"] or SELF
        for r in sorted(told, key=lambda t: t.later.said, reverse=True):
            if (r.later.said > cand.since and pattern.search(r.earlier.body.lower())
                    and not pattern.search(r.later.body.lower())
                    and kinds(value.split()) & kinds(r.old)  # the value is what changed
                    and about(subject, r.later)):
                out.append(Contest(fact=cand.memory_id, later=r.later, value=value))
                break
    return out


def contested_olds(found: Sequence[Contest]) -> list[OldValue]:
    """A contested value as an old one, so other texts stating it are marked older."""
    return [OldValue(old=pattern, current=None, until=contest.later.said)
            for contest in found if (pattern := value_pattern(contest.value)) is not None]
