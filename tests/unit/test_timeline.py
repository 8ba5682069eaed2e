"""Where a new statement goes among its slot's values, in the order things were said."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

from nous_memory.facts.timeline import SlotFact, place


def _at(month: int) -> datetime:
    return datetime(2024, month, 1, tzinfo=UTC)


def _fact(value: str, month: int, *, active: bool = True, ended: bool = False,
          content: str | None = None) -> SlotFact:
    return SlotFact(id=uuid4(), active=active, value=value, ended=ended, said_at=_at(month),
                    content=content or f"The user lives in {value.title()}.")


def test_a_value_said_later_becomes_current() -> None:
    lisbon = _fact("lisbon", 1)
    placed = place("The user moved to Porto.", "porto", False, _at(5), [lisbon])
    assert placed is not None and placed.action == "current" and placed.retire == (lisbon.id,)


def test_a_value_said_earlier_goes_into_the_history_never_current() -> None:
    lisbon = _fact("lisbon", 1, active=False)
    porto = _fact("porto", 5)
    lisbon = SlotFact(id=lisbon.id, active=False, value="lisbon", ended=False,
                      said_at=_at(1), content=lisbon.content, superseded_by=porto.id)
    placed = place("The user lived in Braga.", "braga", False, _at(3), [lisbon, porto])
    assert placed is not None and placed.action == "history"
    assert placed.successor == porto and placed.predecessor == lisbon


def test_the_same_value_again_confirms() -> None:
    porto = _fact("porto", 5)
    placed = place("The user lives in Porto now.", "porto", False, _at(6), [porto])
    assert placed is not None and placed.action == "confirm" and placed.target == porto.id


def test_the_same_value_with_another_detail_changed_is_a_new_statement() -> None:
    old = _fact("bakery", 1, content="The user started working at the bakery in 2019.")
    placed = place("The user started working at the bakery in 2021.", "bakery", False, _at(2),
                   [old])
    assert placed is not None and placed.action == "current"


def test_an_ending_closes_its_value_but_not_another() -> None:
    max_ = _fact("max", 1, content="The user has a dog named Max.")
    died = place("The user's dog Max died.", "max", True, _at(3), [max_])
    assert died is not None and died.action == "current"
    other = place("The user's dog Rex died.", "rex", True, _at(3), [max_])
    assert other is None  # another dog's end: decided by meaning, Max stays current


def test_no_current_value_leaves_the_decision_to_meaning() -> None:
    assert place("The user lives in Porto.", "porto", False, _at(5), []) is None
