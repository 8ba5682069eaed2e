"""Where a new statement goes among the values of its slot: pure, no I/O.

A slot's facts form a timeline ordered by when each was *said* (``valid_from``), not by
when it was recorded.  A new value said after the current one becomes current and the
old one is superseded; a value said before it (an older session imported late) goes
into the history at its place and never becomes current.  The same value again is a
confirmation.  An ending ("Max died") closes the value it names; an ending of another
value (another dog) leaves the current one alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal
from uuid import UUID

from ..memories.fact_slots import same_value
from .consolidation import VALUE_CHANGES, relation


@dataclass(frozen=True, slots=True, kw_only=True)
class SlotFact:
    """One fact of a slot as stored."""

    id: UUID
    active: bool
    content: str
    value: str
    ended: bool
    said_at: datetime
    superseded_by: UUID | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Placement:
    """What to do with a new statement of a slot.

    - ``confirm``: ``target`` already says it;
    - ``current``: insert it as the current value; ``retire`` the active ones it replaces;
    - ``history``: insert it as an older value, superseded by ``successor`` (said after
      it); ``predecessor`` (said before it) now points to it instead of ``successor``.
    """

    action: Literal["confirm", "current", "history"]
    target: UUID | None = None
    retire: tuple[UUID, ...] = ()
    successor: SlotFact | None = None
    predecessor: SlotFact | None = None


def place(content: str, value: str, ended: bool, said_at: datetime,
          facts: Sequence[SlotFact]) -> Placement | None:
    """The placement of a new statement among a slot's ``facts`` (None: the slot has no
    active value to compare with, or the ending is of another value: decide otherwise).
    The same value with another detail of it changed ("started at the bakery in 2019" /
    "... in 2021") is a new statement of the slot, not a confirmation."""

    def says(fact: SlotFact) -> bool:
        return (ended == fact.ended and same_value(value, fact.value)
                and relation(content, fact.content) not in VALUE_CHANGES)

    active = sorted((f for f in facts if f.active), key=lambda f: f.said_at)
    if not active:
        return None
    current = active[-1]
    if says(current):
        return Placement(action="confirm", target=current.id)
    if ended and value and not current.ended and not same_value(value, current.value):
        return None  # "Rex died" while the current dog is Max: not this value's end
    if said_at >= current.said_at:
        return Placement(action="current", retire=tuple(f.id for f in active))
    timeline = sorted(facts, key=lambda f: f.said_at)
    successor = next(f for f in timeline if f.said_at > said_at)
    before = [f for f in timeline if f.said_at <= said_at]
    predecessor = before[-1] if before else None
    if predecessor is not None and says(predecessor):
        return Placement(action="confirm", target=predecessor.id)
    return Placement(action="history", successor=successor, predecessor=predecessor)
