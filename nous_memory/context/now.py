"""The always-on sections of a context: "About the user now" and "Upcoming".

Pure: given the always-on rows (``context_always_on``) and the query, which current slot
values and which plans go in, in what order.  A current value bears on a query when the
query asks about its attribute ("Which city do I live in?": home), names its subject
("Where does Omar live?"), or is close in meaning; the user's core attributes (name,
home, employer, ...) come in whatever the query, within a small budget.  A plan is
upcoming when it happens after ``as_of``: in the next ``UPCOMING_DAYS`` always, later
only when it bears on the query.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from ..memories.fact_slots import SELF, attribute_family, query_attributes, read_slot
from ..memories.kinds import Kind
from ..memories.slot_words import CORE_ATTRIBUTES, EVENT_PREFIX
from ..tokens import count_tokens
from .model import Candidate, Section
from .refs import make_ref

NOW_LIMIT = 10  # slot facts read per branch of the always-on statement
NOW_COSINE = 0.35  # a slot fact no query word points to, this close in meaning
CORE_TOKENS = 80  # the core attributes' share of the section, whatever the query
UPCOMING_DAYS = 7
UPCOMING_LIMIT = 20
UPCOMING_COSINE = 0.3
_PLAN_WORDS = frozenset("upcoming plans plan next soon schedule scheduled calendar week "
                        "agenda appointments appointment deadline deadlines due".split())
_WORD = re.compile(r"[a-z][a-z'-]*")


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryCues:
    """What a query asks about, read once per call."""

    attributes: tuple[str, ...]  # attributes and families ("home", "pet:")
    words: tuple[str, ...]  # its words, lower case (subjects it may name)
    about_plans: bool

    @classmethod
    def of(cls, query: str) -> QueryCues:
        words = tuple(dict.fromkeys(_WORD.findall(query.lower())))
        return cls(attributes=tuple(sorted(query_attributes(query))), words=words,
                   about_plans=bool(set(words) & _PLAN_WORDS))


def now_candidates(rows: Sequence[Mapping[str, Any]], cues: QueryCues) -> list[Candidate]:
    """Current slot values for the Now section, best first (score: why it is there, then
    closeness); the core ones only within ``CORE_TOKENS``."""
    chosen: dict[Any, Candidate] = {}
    core_tokens = 0
    for row in rows:
        if row["part"] not in ("now", "near") or row["id"] in chosen:
            continue
        attribute = row["slot_attribute"] or ""
        cosine = row["cosine"] or 0.0
        named = row["slot_subject"] not in (None, SELF) and _names(row["slot_subject"], cues)
        asked = attribute in cues.attributes or attribute_family(attribute) in cues.attributes
        if named:
            score = 4.0
        elif asked:
            score = 3.5 if row["own"] else 3.0
        elif row["own"] and attribute in CORE_ATTRIBUTES:
            core_tokens += count_tokens(row["summary"])
            if core_tokens > CORE_TOKENS:
                continue
            score = 2.0
        elif cosine >= NOW_COSINE:
            score = 1.0
        else:
            continue
        chosen[row["id"]] = _candidate(row, Section.NOW, score + cosine,
                                       since=row["valid_from"], ended=_ends(row))
    return _one_current_per_slot(list(chosen.values()), rows)


def _one_current_per_slot(cands: list[Candidate], rows: Sequence[Mapping[str, Any]]
                          ) -> list[Candidate]:
    """Two active values of one slot (written by a path that stores without deciding,
    such as a key-value put) are not both current: the one said last is, and goes first;
    the other says when its successor was said."""
    slot = {r["id"]: (r["slot_subject"], r["slot_attribute"]) for r in rows
            if r["part"] in ("now", "near")}
    latest: dict[tuple[Any, Any], Candidate] = {}
    for cand in cands:
        key = slot.get(cand.memory_id)
        if key is None or cand.since is None or key[1].startswith(EVENT_PREFIX):
            continue
        best = latest.get(key)
        if best is None or (best.since is not None and cand.since > best.since):
            latest[key] = cand
    out: list[Candidate] = []
    for cand in cands:
        key = slot.get(cand.memory_id)
        winner = latest.get(key) if key is not None else None
        if winner is None or winner is cand or winner.since is None:
            out.append(cand)
        else:
            out.append(dataclasses.replace(cand, since=None, newer_on=winner.since,
                                           score=min(cand.score, winner.score) - 1e-6))
    return out


def upcoming_candidates(rows: Sequence[Mapping[str, Any]], cues: QueryCues,
                        as_of: datetime) -> list[Candidate]:
    """Plans after ``as_of``: the next days' always, later ones when the query bears on
    them; soonest first."""
    out: list[Candidate] = []
    horizon = as_of + timedelta(days=UPCOMING_DAYS)
    for row in rows:
        if row["part"] != "event" or row["event_at"] is None or row["event_at"] < as_of:
            continue
        attribute = row["slot_attribute"] or ""
        related = (cues.about_plans or (row["cosine"] or 0.0) >= UPCOMING_COSINE
                   or (attribute.startswith(EVENT_PREFIX) and EVENT_PREFIX in cues.attributes)
                   or attribute in cues.attributes
                   or (row["slot_subject"] not in (None, SELF)
                       and _names(row["slot_subject"], cues)))
        if row["event_at"] >= horizon and not related:
            continue
        days = (row["event_at"] - as_of).total_seconds() / 86400
        out.append(_candidate(row, Section.UPCOMING, 1.0 / (1.0 + days),
                              event_at=row["event_at"]))
    return out


def _names(subject: str, cues: QueryCues) -> bool:
    """Whether the query names the subject (every word of it, "grant report" too)."""
    return all(word in cues.words for word in subject.split())


def _ends(row: Mapping[str, Any]) -> bool:
    """Whether the fact ends its slot's value ("The user left Zenith in March"): read
    from its text, as it was when learned."""
    slot = read_slot(row["summary"] or "")
    return slot is not None and slot.ended


def _candidate(row: Mapping[str, Any], section: Section, score: float, *,
               since: datetime | None = None, event_at: datetime | None = None,
               ended: bool = False) -> Candidate:
    kind = Kind(row["kind"])
    return Candidate(ref=make_ref(kind, row["id"]), memory_id=row["id"], kind=kind.value,
                     section=section, text=row["summary"], score=score, pinned=True,
                     cosine=row["cosine"], since=since, event_at=event_at, ended=ended)


@dataclass(frozen=True, slots=True, kw_only=True)
class OldValue:
    """A value a current slot fact replaced, as it reads in text."""

    old: re.Pattern[str]
    current: re.Pattern[str] | None
    until: datetime
    # only a text said before ``until`` states it as old; it says its person said more
    # then, not that the value was superseded (nothing read which value holds)
    said_more: bool = False
    # the statement said then, if a turn: the turns before it in its conversation (all
    # dated when the conversation began) are before it too
    turn: tuple[UUID, int] | None = None

    def after(self, cand: Candidate) -> bool:
        """Whether ``cand`` was said after this value was said more of (or is undated)."""
        if cand.said_at is not None and cand.said_at < self.until:
            return False
        return not (self.turn is not None and cand.chunk_no is not None
                    and cand.memory_id == self.turn[0] and cand.chunk_no < self.turn[1])


def old_values(rows: Sequence[Mapping[str, Any]]) -> list[OldValue]:
    """The old values of the slots shown as current (too short or bare numbers left out:
    "2" is in every date)."""
    out: list[OldValue] = []
    for row in rows:
        if row["part"] not in ("now", "near") or not row["old_values"]:
            continue
        current = value_pattern(row["slot_value"] or "")
        for value, until in row["old_values"]:
            pattern = value_pattern(value or "")
            if pattern is not None and until is not None and not (
                    current is not None and current.pattern == pattern.pattern):
                out.append(OldValue(old=pattern, current=current,
                                    until=datetime.fromisoformat(until)))
    return out


def mark_old(candidates: Sequence[Candidate], olds: Sequence[OldValue], *,
             current_only: bool) -> list[Candidate]:
    """Recalled texts stating an old value (and not the current one) marked older; left
    out with ``current_only`` (unless only said more of: which value holds was not
    read), as is a
    telling its person told again otherwise (``retold_on``) and a value shown in "About
    the user now" that a later one replaced (``newer_on``)."""
    if current_only:  # a value replaced in its slot, or told again otherwise, goes too
        candidates = [c for c in candidates
                      if (c.retold_on is None or c.section in (Section.NOW, Section.UPCOMING))
                      and not (c.section is Section.NOW and c.newer_on is not None)]
    if not olds:
        return list(candidates)
    out: list[Candidate] = []
    for cand in candidates:
        if cand.section in (Section.NOW, Section.UPCOMING) or cand.stale_on is not None:
            out.append(cand)
            continue
        stating = [o for o in olds if o.old.search(cand.text)
                   and (o.current is None or not o.current.search(cand.text))
                   and not (o.said_more and o.after(cand))]
        stale = [o.until for o in stating if not o.said_more]
        more = [o.until for o in stating if o.said_more]
        if not stating:
            out.append(cand)
        elif not (current_only and stale):  # with ``current_only`` a text only said more
            # of stays, marked; one of a value replaced ranks lower, one said more of keeps
            # its rank (its words may be the evidence asked for): either is shown after
            # the texts of its section that state no old value (``sections.assemble``)
            out.append(dataclasses.replace(cand, score=cand.score / 2 if stale else cand.score,
                                           stale_on=min(stale) if stale else None,
                                           newer_on=max(more) if more else cand.newer_on))
    return out


def value_pattern(value: str) -> re.Pattern[str] | None:
    value = value.strip()
    if len(value) < 3 or value.replace(" ", "").isdigit():
        return None
    return re.compile(r"(?<!\w)" + re.escape(value) + r"(?:s|es)?(?!\w)", re.I)
