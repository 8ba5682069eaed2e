"""What people said later that bears on what a context shows: one read, then the rules.

The read is of the cosines between the current values shown and the people's
statements among the candidates (``context_later_cosines``), made only when there are
such pairs.  The rules are ``later.py`` (a current value a later statement bears on) and
``retold.py`` (a telling and its retelling, for a question about how things stand).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from ..db import Database
from ..memories.fact_slots import read_slot
from .beside import named_beside
from .later import (
    Contest,
    Told,
    apply_contests,
    contested_olds,
    contests,
    retold_facts,
    told_before,
    told_before_olds,
)
from .model import Candidate, Section
from .now import OldValue, QueryCues
from .restated import asks_how_things_stand
from .retold import Retelling, promote, retellings, retold_olds
from .tellings import Key, Later, key, later_statements, words


@dataclass(frozen=True, slots=True, kw_only=True)
class SaidLater:
    """The current values contested and the tellings retold, for one call."""

    found: list[Contest]
    told: list[Retelling]
    also: list[OldValue] = dataclasses.field(default_factory=list)  # said more since

    def shown(self, candidates: Sequence[Candidate], *, current_only: bool
              ) -> list[Candidate]:
        """The candidates with contested values no longer current and the latest
        statements first."""
        # a telling whose new value a later statement contests is not the latest word
        contested = frozenset().union(*(words(c.value) for c in self.found))
        latest = [r for r in self.told if not (r.later.values - r.earlier.values) & contested]
        return promote(apply_contests(candidates, self.found, current_only=current_only),
                       latest)

    def olds(self) -> list[OldValue]:
        """The values said otherwise later, to be marked older where a text states them."""
        return contested_olds(self.found) + retold_olds(self.told) + self.also


NOTHING = SaidLater(found=[], told=[])


async def said_later(db: Database, model_name: str, agent: str,
                     merged: Sequence[Candidate], recalled: Sequence[Candidate],
                     always_rows: Sequence[Mapping[str, Any]], cues: QueryCues,
                     query: str) -> SaidLater:
    """What was said later of what ``merged`` shows (``recalled``: every ranked item, the
    ones the context leaves out included, since a later statement may rank low)."""
    now = [c for c in merged if c.section is Section.NOW and c.since is not None]
    state = asks_how_things_stand(query)
    if not (now or state):
        return NOTHING  # no current value shown, and not a question about one
    shown = {c.memory_id for c in merged if c.section is Section.NOW}
    statements = [s for s in later_statements(recalled)
                  if s.cand.chunk_no is not None or s.cand.memory_id not in shown]
    if len(statements) + len(now) < 2:
        return NOTHING
    slots = {r["id"]: r for r in always_rows if r["part"] in ("now", "near")}
    found, told, before = await _decide(db, model_name, agent, now, slots, statements,
                                        cues.words, state=state)
    # a value a slot holds as current is not made older by being named beside another
    held = frozenset().union(*(words(slots[c.memory_id]["slot_value"] or "") for c in now
                               if c.memory_id in slots and not c.ended))
    also = told_before_olds(before, {c.memory_id: c.since for c in now if c.since})
    if state:  # a statement of a value known to be past still tells what replaced what
        told_all = [s for s in later_statements(recalled, past=True)
                    if s.cand.chunk_no is not None or s.cand.memory_id not in shown]
        also += named_beside(told_all, frozenset(cues.words) | held)
    return SaidLater(found=found + retold_facts(now, slots, told, found), told=told,
                     also=also)


async def _decide(db: Database, model_name: str, agent: str, now: Sequence[Candidate],
                  slots: Mapping[UUID, Mapping[str, Any]], statements: Sequence[Later],
                  words: Sequence[str], *, state: bool
                  ) -> tuple[list[Contest], list[Retelling], list[Told]]:
    """The contests, the statements told before a current value (and, for a question
    about how things stand, the retellings): first the pairs the values allow, then one
    read of those pairs' cosines, if any."""
    asked = frozenset(words)
    maybe = contests(now, slots, statements, _CLOSE, words, every=True)
    if state:  # what was said before a current value: for a question about one
        maybe += [c for c, _ in told_before(now, slots, statements, _CLOSE, words)]
    maybe_told = retellings(statements, _CLOSE, asked, every=True) if state else []
    involved = {key(c.later.cand) for c in maybe} | {(c.fact, -1) for c in maybe} | {
        key(r.later.cand) for r in maybe_told} | {key(r.earlier.cand) for r in maybe_told}
    if not involved:  # most calls: no read
        return [], [], []
    # a turn of "user" in a conversation of several people: whose it is is not known
    unnamed = {key(s.cand) for s in statements if s.cand.chunk_no is not None
               and s.speaker == "user"}
    cosines = await _cosines(db, model_name, agent, [
        c for c in [*now, *(s.cand for s in statements)] if key(c) in involved], unnamed)
    return (contests(now, slots, statements, cosines, words),
            retellings(statements, cosines, asked) if state else [],
            told_before(now, slots, statements, cosines, words) if state else [])


class _AllClose(dict[tuple[Key, Key], float]):
    """Every pair close in meaning: what the values alone allow."""

    def get(self, _key: Any, _default: Any = None) -> float:
        return 1.0


_CLOSE = _AllClose()


async def _cosines(db: Database, model_name: str, agent: str, items: Sequence[Candidate],
                   unnamed: Set[Key] = frozenset()) -> dict[tuple[Key, Key], float]:
    """The pairs' cosines; a pair with an ``unnamed`` turn of a conversation of several
    people is left out (not close: it bears on no one's value)."""
    rows = await db.read("context_later_cosines", agent, [c.memory_id for c in items],
                         [key(c)[1] for c in items], model_name)
    return {((r["a_id"], r["a_chunk"]), (r["b_id"], r["b_chunk"])): r["cosine"]
            for r in rows
            if not ((r["a_id"], r["a_chunk"]) in unnamed and r["a_people"] > 1)
            and not ((r["b_id"], r["b_chunk"]) in unnamed and r["b_people"] > 1)}


async def contested_in_recall(db: Database, model_name: str, agent: str,
                              rows: Sequence[Mapping[str, Any]], query: str
                              ) -> dict[UUID, datetime]:
    """Recall's current slot facts that a later statement among its rows bears on (the
    same rule as a context's, ``later.contests``): fact id -> when that was said.  Such
    a fact is not reported as current."""
    now: list[Candidate] = []
    slots: dict[UUID, Mapping[str, Any]] = {}
    heard: list[Candidate] = []
    for row in rows:
        if row["source"] == "memory" and row["slot_key"] and row["stale_on"] is None \
                and row["valid_from"] is not None:
            subject, _, attribute = str(row["slot_key"]).partition("|")
            slot = read_slot(row["text"])
            if slot is None or not slot.value or slot.key != row["slot_key"]:
                continue  # its value is not in its words (an LLM's slot): left as it is
            cand = _as_candidate(row, Section.NOW, since=row["valid_from"])
            now.append(cand)
            slots[cand.memory_id] = {"slot_subject": subject, "slot_attribute": attribute,
                                     "slot_value": slot.value}
        else:
            heard.append(_as_candidate(row, Section.EXCERPTS))
    if not now:
        return {}
    earliest = min(c.since for c in now if c.since is not None)
    statements = [s for s in later_statements(heard) if s.said > earliest]
    found, _, _ = await _decide(db, model_name, agent, now, slots, statements,
                                QueryCues.of(query).words, state=False)
    return {c.fact: c.later.said for c in found}


def _as_candidate(row: Mapping[str, Any], section: Section, *,
                  since: datetime | None = None) -> Candidate:
    chunk = row["chunk_no"] if row["source"] == "chunk" else None
    return Candidate(ref="", memory_id=row["memory_id"],
                     kind="chunk" if chunk is not None else str(row["kind"]),
                     section=section, text=row["text"], score=0.0, chunk_no=chunk,
                     said_at=said_at(row), since=since, stale_on=row["stale_on"])


def said_at(row: Mapping[str, Any]) -> datetime | None:
    """When a recalled row was said: a fact when its value was said (``valid_from``,
    which a caller may give), not when it was stored."""
    if row["source"] == "memory" and row["kind"] == "fact" and row["valid_from"]:
        return row["valid_from"]  # type: ignore[no-any-return]
    return row["said_at"]  # type: ignore[no-any-return]
