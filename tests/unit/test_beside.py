"""beside.py and the values a statement names: a value named again beside another of its
kind makes what was said of it before older, whatever words told the change."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from uuid import UUID, uuid4

from nous_memory.context.beside import named_beside
from nous_memory.context.model import Candidate, Section
from nous_memory.context.now import OldValue, mark_old
from nous_memory.context.retold import retellings, retold_olds
from nous_memory.context.sections import item_line
from nous_memory.context.tellings import Later, about, key, later_statements, named_values
from nous_memory.memories.fact_slots import SELF

JAN, MAY, JUL = (datetime(2024, m, 10, tzinfo=UTC) for m in (1, 5, 7))


def _turn(text: str, said: datetime, speaker: str = "user", chunk: int = 0) -> Candidate:
    ident = uuid4()
    return Candidate(ref=f"episode:{ident.hex[:8]}#c{chunk}", memory_id=ident, kind="chunk",
                     section=Section.EXCERPTS, text=f"{speaker}: {text}", score=0.5,
                     chunk_no=chunk, said_at=said)


def _episode(text: str, said: datetime) -> Candidate:
    ident = uuid4()
    return Candidate(ref=f"episode:{ident.hex[:8]}", memory_id=ident, kind="episode",
                     section=Section.EPISODES, text=text, score=0.9, said_at=said)


def _fact(text: str, *, ended: bool = False) -> Candidate:
    return Candidate(ref=f"fact:{uuid4().hex[:8]}", memory_id=uuid4(), kind="fact",
                     section=Section.NOW, text=text, score=3.0, pinned=True, since=MAY,
                     ended=ended)


def _employer(*facts: Candidate) -> dict[UUID, dict[str, str]]:
    return {f.memory_id: {"slot_value": "zenith", "slot_subject": "user",
                          "slot_attribute": "employer"} for f in facts}


def _shown(candidates: list[Candidate], olds: list[OldValue], current_only: bool = False
           ) -> dict[str, Candidate]:
    return {c.text: c for c in mark_old(candidates, olds, current_only=current_only)}


def test_an_earlier_value_named_beside_a_new_one_is_older_wherever_it_is_stated() -> None:
    before = _turn("My friend Raj works at Deloitte and says audit season is brutal.", JAN)
    title = _episode("It began: My friend Raj works at Deloitte ... It ended: Jan to April.",
                     JAN)
    after = _turn("Raj quit Deloitte and is at Canva now, doing something with data.", MAY)
    olds = named_beside(later_statements([before, after]), frozenset({"raj", "work"}))
    old = next(o for o in olds if o.old.search("at Deloitte"))
    assert not old.old.search("deloitted") and old.current is not None
    assert old.current.search("at Canva")
    shown = _shown([title, before, after], olds)
    assert shown[before.text].newer_on == MAY and shown[title.text].newer_on == MAY
    assert shown[after.text].newer_on is None  # it holds both: it stands
    assert shown[before.text].score == before.score  # its rank kept: it may be evidence
    # shown after the texts of its section that state no old value
    from nous_memory.context.sections import assemble

    text = assemble(list(shown.values()), {Section.EXCERPTS: 500}, 600).text
    assert text.index("Canva") < text.index("works at Deloitte")
    line = item_line(before.ref, before.text, JAN, newer_on=shown[before.text].newer_on)
    assert line.endswith("(older: the user said more on 10 May 2024)")
    # which value holds was not read: with current_only it stays, marked, below the rest
    kept = _shown([title, before, after], olds, current_only=True)
    assert set(kept) == {title.text, before.text, after.text}
    assert kept[before.text].newer_on == MAY


def test_a_text_said_after_the_statement_is_not_older_than_it() -> None:
    before = _turn("I've been with Halvorsen Logistics since 2019.", JAN)
    after = _turn("since leaving Halvorsen (at Norvik nobody emails after 6) I'm free", MAY)
    again = _turn("Halvorsen sent me a leaving card, sweet of them", JUL)
    olds = named_beside(later_statements([before, after, again]), frozenset())
    shown = _shown([before, after, again], olds)
    assert shown[before.text].newer_on == MAY
    assert shown[again.text].newer_on is None


def test_a_turn_before_the_statement_in_its_conversation_is_before_it() -> None:
    asked = _turn("Can you plan my morning? I've got the dentist at 8", MAY, chunk=0)
    echo = _turn("Sure! With standup at 9:00 you'd need to leave by 8:40.", MAY,
                 speaker="assistant", chunk=1)
    asked, echo = (dataclasses.replace(c, memory_id=asked.memory_id) for c in (asked, echo))
    fix = dataclasses.replace(_turn("oh it's not 9:00 anymore, it moved to 9:40", MAY,
                                    chunk=2), memory_id=asked.memory_id)
    after = dataclasses.replace(_turn("Ah, 9:40 then, and 9:00 is free for coffee.", MAY,
                                      speaker="assistant", chunk=3),
                                memory_id=asked.memory_id)
    first = _turn("standup is at 9:00 sharp and my lead hates lateness.", JAN)
    olds = named_beside(later_statements([first, asked, echo, fix, after]), frozenset())
    shown = _shown([first, echo, fix, after], olds)
    assert shown[first.text].newer_on == MAY and shown[echo.text].newer_on == MAY
    assert shown[after.text].newer_on is None  # said after the statement


def test_values_of_other_kinds_or_new_names_mark_nothing() -> None:
    before = _turn("Standup is at 9:15 in the Lisbon office.", JAN)
    after = _turn("Had lunch at 13:00 near the Lisbon office.", MAY)  # a time, one city
    new_names = _turn("Marta and Tom came over, Marta brought cake.", MAY)
    texts = [before, after, new_names]
    olds = named_beside(later_statements(texts), frozenset())
    assert all(c.newer_on is None for c in _shown(texts, olds).values())
    # a value the question asks about is what is asked, never old
    told = _turn("I moved from Lisbon to Porto.", MAY)
    assert named_beside(later_statements([before, told]), frozenset({"lisbon"})) == []
    olds = named_beside(later_statements([before, told]), frozenset())
    assert _shown([before, told], olds)[before.text].newer_on == MAY


def test_a_title_a_plan_clause_and_a_bare_question_are_read_as_such() -> None:
    assert {"brennan", "fofana"} <= named_values(
        "Saw Dr. Brennan this morning, a better listener than Dr. Fofana ever was.")
    assert named_values("I'm at 32 miles a week and it'll peak at 45.") == {"32"}
    assert named_values("whats a good mechanical keyboard for coding under 100") == set()


def test_a_first_word_is_a_value_where_another_statement_names_it() -> None:
    early = _turn("Mrs Abara moved away so I found Lukas, a uni student.", JAN)
    late = _turn("Lukas graduated and left, so now I have lessons with Ms Ferreira.", MAY)
    by_time = {s.cand.memory_id: s.values for s in later_statements([early, late])}
    assert "lukas" in by_time[late.memory_id]
    alone = later_statements([late])
    assert "lukas" not in alone[0].values
    # a word also written in lower case elsewhere is not taken for a name
    named = _turn("We loved Summer in the play.", JAN)
    starts = _turn("Summer is over, sadly, and Ana left.", MAY)
    (read,) = [s for s in later_statements([named, starts]) if s.cand is starts]
    assert "summer" in read.values
    lower = _turn("the summer was long", JAN)
    (read,) = [s for s in later_statements([named, starts, lower]) if s.cand is starts]
    assert "summer" not in read.values


def test_a_word_opening_sentences_of_two_statements_is_a_name() -> None:
    first = _turn("Five-a-side tonight. Harry's our captain and plays me at the back.", JAN)
    later = _turn("Harry did his knee so Kwame took over the armband.", MAY)
    read = {s.cand.memory_id: s.values for s in later_statements([first, later])}
    assert "harry" in read[first.memory_id] and {"harry", "kwame"} <= read[later.memory_id]
    olds = named_beside(later_statements([first, later]), frozenset({"captain"}))
    assert _shown([first, later], olds)[first.text].newer_on == MAY
    # written in lower case elsewhere: a word, not a name
    plain = _turn("Today was long. Today I rested, and today is quiet.", MAY)
    again = _turn("Today the gym was closed.", JAN)
    assert all("today" not in s.values for s in later_statements([plain, again]))


def test_a_statement_is_the_persons_own_where_a_sentence_naming_values_is() -> None:
    said = _turn("the bootcamp got moved to 7:30, great for the school run. My wife still "
                 "goes to her 6:00 spin.", MAY)
    (later,) = later_statements([said])
    assert about(SELF, later)
    theirs = _turn("My wife goes to her 6:00 spin at the same gym.", MAY)
    (other,) = later_statements([theirs])
    assert not about(SELF, other)


def test_a_new_value_of_another_kind_does_not_shield_an_old_one() -> None:
    first = _turn("Anytime Fitness near me is always packed at 6pm.", JAN)
    second = _turn("The corporate discount made Equinox cheaper, so I signed up there. "
                   "Suggest a 30 min swim workout?", MAY)
    title = _episode("It began: Anytime Fitness near me is always packed at 6pm. It ended: "
                     "mid-morning (10-11:30) is quiet.", JAN)
    statements = later_statements([first, second])
    told = retellings(statements, {(key(first), key(second)): 0.9}, frozenset({"gym"}))
    assert told and {"anytime", "fitness"} <= told[0].old
    shown = _shown([title, first, second], retold_olds(told))
    assert shown[title.text].stale_on == MAY  # "11:30" holds no new gym


def test_later_statements_carry_what_they_were_read_from() -> None:
    said = _turn("Raj is at Canva now.", MAY)
    (later,) = later_statements([said])
    assert isinstance(later, Later) and later.values == {"canva"}  # a first word alone


def test_an_ended_value_is_followed_by_what_its_person_said_it_ended_with() -> None:
    from nous_memory.context.later import apply_contests, contests

    fact = _fact("The user left Zenith in March.", ended=True)
    said = _turn("no no, I left Zenith in March, I'm at Quorra now", MAY)
    rows = _employer(fact)
    close = {(key(fact), key(said)): 0.8}
    (found,) = contests([fact], rows, later_statements([said]), close, ["company"])
    shown = apply_contests([fact, said], [found], current_only=False)
    assert shown[0].memory_id == said.memory_id and "Quorra" in shown[0].text
    assert shown[1].newer_on == MAY and shown[1].since is None
    # a value that has not ended is not contested by the statement it came from
    held = _fact("The user works at Zenith.")
    rows = _employer(held)
    assert contests([held], rows, later_statements([said]), {(key(held), key(said)): 0.8},
                    ["company"]) == []


def test_the_words_of_one_name_are_not_two_values_and_two_digits_are_one() -> None:
    first = _turn("Ran my first parkrun with the Hackney Harriers! Any tips?", JAN)
    later = _turn("I signed up with Lea Striders because their sessions fit better.", MAY)
    olds = named_beside(later_statements([first, later]), frozenset())
    assert all(c.newer_on is None for c in _shown([first, later], olds).values())
    size = _turn("Looking for trail shoes, I'm a size 42.", JAN)
    fitted = _turn("Turns out I'm a 43, not a 42, after the gait analysis.", MAY)
    olds = named_beside(later_statements([size, fitted]), frozenset())
    assert _shown([size, fitted], olds)[size.text].newer_on == MAY


def test_a_pronoun_carries_on_whom_a_sentence_is_about() -> None:
    (sister,) = later_statements([_turn("My sister just quit her job. She's at Canva now.",
                                        MAY)])
    assert not about(SELF, sister)
    (mine,) = later_statements([_turn("My sister visited. I'm at Canva now.", MAY)])
    assert about(SELF, mine)


def test_a_word_opening_sentences_without_a_possessive_is_no_name() -> None:
    texts = [_turn("Honestly the commute is fine, Leeds is close.", JAN),
             _turn("Honestly, no idea what Bram meant.", JAN),
             _turn("Honestly I love Canva.", MAY)]
    started = _turn("I started at Canva in March.", JAN)
    olds = named_beside(later_statements([*texts, started]), frozenset())
    assert _shown([started], olds)[started.text].newer_on is None


def test_an_ended_value_is_not_contested_by_an_earlier_turn_naming_it() -> None:
    from nous_memory.context.later import contests

    fact = _fact("The user left Zenith in March.", ended=True)
    earlier = _turn("Zenith put me in the Leeds office this year.", MAY)
    assert contests([fact], _employer(fact), later_statements([earlier]),
                    {(key(fact), key(earlier)): 0.8}, ["company"]) == []


def test_a_number_is_not_found_inside_a_longer_one() -> None:
    from nous_memory.context.tellings import value_regex

    ten = value_regex(["10"])
    assert not any(ten.search(t) for t in ("at 10:30", "on 2024-05-10", "£10.50"))
    assert ten.search("ran 10 km") and not value_regex([]).search("hello, world")
    assert value_regex(["o'brien"]).search("Dr O\u2019Brien")
