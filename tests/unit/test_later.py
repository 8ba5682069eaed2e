"""later.py: which later statements bear on a current value, decided by values and meaning
(the cosines given), and how the context shows them."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from uuid import uuid4

from nous_memory.context.later import LATER_COSINE, apply_contests, contests
from nous_memory.context.model import Candidate, Section
from nous_memory.context.retold import TOLD_OTHERWISE_COSINE, promote, retellings
from nous_memory.context.tellings import key, later_statements, named_values
from nous_memory.memories.slot_words import DIET

JAN, MAY = datetime(2024, 1, 10, tzinfo=UTC), datetime(2024, 5, 10, tzinfo=UTC)


def _fact(text: str, since: datetime = JAN) -> Candidate:
    ident = uuid4()
    return Candidate(ref=f"fact:{ident.hex[:8]}", memory_id=ident, kind="fact",
                     section=Section.NOW, text=text, score=3.0, pinned=True, since=since)


def _turn(text: str, said: datetime = MAY, speaker: str = "user") -> Candidate:
    ident = uuid4()
    return Candidate(ref=f"episode:{ident.hex[:8]}#c0", memory_id=ident, kind="chunk",
                     section=Section.EXCERPTS, text=f"{speaker}: {text}", score=0.5,
                     chunk_no=0, said_at=said)


def _row(fact: Candidate, value: str, subject: str = "user", attribute: str = "rent"
         ) -> dict[str, object]:
    return {"id": fact.memory_id, "slot_value": value, "slot_subject": subject,
            "slot_attribute": attribute}


def test_values_are_numbers_and_names_never_in_a_plan_or_a_question() -> None:
    assert named_values("Ugh, the landlord put my rent up to 1450.") == {"1450"}
    assert named_values("first week at Fintly done! the onboarding was a blur") == {"fintly"}
    assert named_values("We're moving to Berlin next month. Can you help with Vienna?") == set()
    assert named_values("I'm fine") == set()


def test_a_later_statement_with_another_value_and_close_in_meaning_contests() -> None:
    fact, turn = _fact("The user's rent is 1300 a month."), _turn("the landlord put my rent "
                                                                    "up to 1450")
    later = later_statements([turn])
    rows = {fact.memory_id: _row(fact, "1300 a month")}
    close = {(key(fact), key(turn)): LATER_COSINE + 0.1}
    (found,) = contests([fact], rows, later, close, ["rent"])
    assert found.later.cand is turn
    shown = apply_contests([fact, turn], [found], current_only=False)
    assert [c.section for c in shown] == [Section.NOW, Section.NOW]  # the turn first
    assert shown[0].memory_id == turn.memory_id and shown[1].since is None
    assert shown[1].newer_on == MAY
    assert [c.memory_id for c in apply_contests([fact, turn], [found], current_only=True)
            ] == [turn.memory_id]
    far = {(key(fact), key(turn)): LATER_COSINE - 0.1}
    assert contests([fact], rows, later, far, ["rent"]) == []


def test_no_contest_from_the_assistant_an_earlier_turn_the_same_value_or_another_person(
        ) -> None:
    fact = _fact("The user lives in Lisbon.")
    rows = {fact.memory_id: _row(fact, "lisbon", attribute="home")}
    turns = [_turn("Sounds like Madrid suits you.", speaker="assistant"),
             _turn("I live in Porto now.", said=datetime(2023, 12, 1, tzinfo=UTC)),
             _turn("Lisbon is lovely, Alfama especially."),
             _turn("My sister Ana moved to Seville.")]
    close = {(key(fact), key(t)): 0.9 for t in turns}
    assert contests([fact], rows, later_statements(turns), close, ["live"]) == []


def test_a_value_of_a_known_kind_counts_in_lower_case() -> None:
    fact, turn = _fact("The user is pescatarian."), _turn("eating flexitarian these days")
    rows = {fact.memory_id: _row(fact, "pescatarian", attribute=DIET)}
    close = {(key(fact), key(turn)): 0.5}
    assert len(contests([fact], rows, later_statements([turn]), close, ["diet"])) == 1


def test_the_latest_telling_goes_first_and_the_earlier_values_are_old() -> None:
    first = _turn("standup 9:15 daily, remind me", said=JAN)
    second = _turn("they pushed standup to 10:15 for the US folks")
    statements = later_statements([first, second])
    close = {(key(first), key(second)): TOLD_OTHERWISE_COSINE + 0.1}
    (told,) = retellings(statements, close, frozenset({"standup"}))
    assert told.earlier.cand is first and told.later.cand is second
    assert told.old == {"9:15"}
    shown = promote([first, second], [told])
    assert shown[0].memory_id == second.memory_id and shown[0].section is Section.NOW
    assert [c.memory_id for c in shown[1:]] == [first.memory_id]
    assert retellings(statements, {}, frozenset()) == []  # not close in meaning


def test_a_value_said_again_later_is_not_contested_by_what_came_between() -> None:
    fact = _fact("The user lives in Porto.")
    rows = {fact.memory_id: _row(fact, "porto", attribute="home")}
    turns = [_turn("Spent the weekend in Lisbon with Marta", said=datetime(2024, 3, 1,
                                                                           tzinfo=UTC)),
             _turn("Back home in Porto now", said=datetime(2024, 4, 1, tzinfo=UTC))]
    close = {(key(fact), key(t)): 0.9 for t in turns}
    assert contests([fact], rows, later_statements(turns), close, ["live"]) == []


def test_another_speaker_or_a_past_value_never_contests_the_users_value() -> None:
    fact = _fact("The user lives in Porto.")
    rows = {fact.memory_id: _row(fact, "porto", attribute="home")}
    nova = _turn("You might enjoy Lisbon and Sintra", speaker="nova")
    past = dataclasses.replace(_turn("I lived in Braga for years"), stale_on=MAY)
    close = {(key(fact), key(t)): 0.9 for t in (nova, past)}
    assert contests([fact], rows, later_statements([nova, past]), close, ["live"]) == []


def test_a_retelling_changes_only_values_of_its_kind() -> None:
    from nous_memory.context.later import retold_facts

    home = _fact("The user lives in Porto.")
    rows = {home.memory_id: _row(home, "porto", attribute="home")}
    first = _turn("Standup with the Porto team is at 9:15 daily.", said=JAN)
    second = _turn("They pushed standup to 10:15.")
    statements = later_statements([first, second])
    close = {(key(first), key(second)): 0.9}
    (told,) = retellings(statements, close, frozenset({"standup"}))
    assert told.old == {"9:15"}  # not the team's city
    assert retold_facts([home], rows, [told], []) == []


def test_a_telling_whose_new_value_was_contested_later_is_not_put_first() -> None:
    from nous_memory.context.later import Contest
    from nous_memory.context.said_later import SaidLater

    keto = _turn("week 2 of keto and I have a headache, it's Keto flu", said=JAN)
    pesc = _turn("keto didn't stick, I'm pescatarian now, easier socially",
                 said=datetime(2024, 3, 1, tzinfo=UTC))
    fact = _fact("The user is pescatarian now.", since=datetime(2024, 3, 1, tzinfo=UTC))
    flex = _turn("eating flexitarian these days, healthier than staying pescatarian?")
    statements = later_statements([keto, pesc, flex])
    by = {s.cand.memory_id: s for s in statements}
    told = retellings(statements, {(key(keto), key(pesc)): 0.9}, frozenset({"diet"}))
    assert [r.later.cand for r in told] == [pesc]
    contest = Contest(fact=fact.memory_id, later=by[flex.memory_id], value="pescatarian")
    shown = SaidLater(found=[contest], told=told).shown([fact, keto, pesc, flex],
                                                       current_only=False)
    now = [c.memory_id for c in shown if c.section is Section.NOW]
    assert now[0] == flex.memory_id and pesc.memory_id not in now[:1]
    assert now.index(flex.memory_id) < now.index(fact.memory_id)
