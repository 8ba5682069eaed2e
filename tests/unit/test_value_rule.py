"""The value rule: a changed date, time, position, amount, frequency or polarity is never
merged or confirmed, whatever the similarity; paraphrases that keep every value still are.

Pairs are (old, new), hand-written per category.
"""

from __future__ import annotations

from uuid import uuid4

import pytest

from nous_memory.config import Settings
from nous_memory.facts.consolidation import (
    VALUE_CHANGES,
    Candidate,
    Thresholds,
    changed_values,
    decide,
    relation,
)
from nous_memory.facts.values import value_slots

THRESHOLDS = Thresholds.from_settings(Settings())

CHANGED: dict[str, list[tuple[str, str]]] = {
    "month": [
        ("The dentist appointment is in April.", "The dentist appointment is in June."),
        ("Our trip to Kyoto is planned for Sept.", "Our trip to Kyoto is planned for Oct."),
        ("The lease ends on 3 March 2025.", "The lease ends on 3 May 2025."),
        ("Rent goes up in mid-January.", "Rent goes up in mid-February."),
        ("My sister's wedding is on the 12th of August.",
         "My sister's wedding is on the 12th of November."),
        ("The conference moved to Dec 4.", "The conference moved to Nov 4."),
    ],
    "weekday": [
        ("Team standup is every Monday.", "Team standup is every Wednesday."),
        ("The gym class is on Tue evenings.", "The gym class is on Thu evenings."),
        ("I visit my grandmother on Sundays.", "I visit my grandmother on Saturdays."),
        ("Piano lessons are on Friday at five.", "Piano lessons are on Thursday at five."),
    ],
    "ordinal": [
        ("Book club meets on the first Thursday of the month.",
         "Book club meets on the last Thursday of the month."),
        ("Our office is on the second floor.", "Our office is on the third floor."),
        ("Rent is due on the 1st.", "Rent is due on the 15th."),
        ("Take the next exit after the bridge.", "Take the last exit after the bridge."),
        ("She finished 2nd in the regional race.", "She finished 4th in the regional race."),
        ("The next review is the final one.", "The next review is the first one."),
        ("The report is due on the first working day.",
         "The report is due on the second working day."),
    ],
    "time": [
        ("The daily call starts at 9am.", "The daily call starts at 10am."),
        ("Dinner with the Okafors is at 7:30 pm.", "Dinner with the Okafors is at 8:15 pm."),
        ("The pharmacy closes at 18:00.", "The pharmacy closes at 17:30."),
        ("Pick-up from school is at 3pm.", "Pick-up from school is at 3am."),
        ("The train leaves at noon.", "The train leaves at midnight."),
        ("I usually go running in the morning.", "I usually go running in the evening."),
        ("The webinar is in the afternoon.", "The webinar is at 9 am."),
        ("We meet at half past 4.", "We meet at quarter past 4."),
        ("Sam arrives at a quarter to six.", "Sam arrives at a quarter past six."),
        ("My yoga class is on Wednesday mornings.", "My yoga class is on Wednesday "
         "evenings."),
    ],
    "relative": [
        ("The parcel arrives tomorrow.", "The parcel arrives today."),
        ("The audit is next week.", "The audit is next month."),
        ("We moved in two weeks ago.", "We moved in three weeks ago."),
        ("The results come out in two days.", "The results come out in five days."),
        ("The deadline is this Friday.", "The deadline is next Friday."),
    ],
    "season": [
        ("We are going to Iceland in the summer.", "We are going to Iceland in the winter."),
        ("The garden is repainted every spring.", "The garden is repainted every autumn."),
        ("Tuition rises in the fall.", "Tuition rises in the spring."),
    ],
    "year": [
        ("I started working at the bakery in 2019.", "I started working at the bakery in 2021."),
        ("The car was bought in 2015.", "The car was bought in 2017."),
    ],
    "duration": [
        ("The flight to Lima takes eleven hours.", "The flight to Lima takes nine hours."),
        ("The train to Porto was two hours late.", "The train to Porto was three hours late."),
        ("I have been learning Portuguese for two years.",
         "I have been learning Portuguese for six months."),
        ("The warranty lasts a year.", "The warranty lasts three years."),
        ("Her commute takes 40 minutes.", "Her commute takes 25 minutes."),
    ],
    "frequency": [
        ("I water the plants every day.", "I water the plants every other day."),
        ("He calls his mother once a week.", "He calls his mother twice a week."),
        ("The newsletter goes out weekly.", "The newsletter goes out monthly."),
        ("I swim three times a week.", "I swim five times a week."),
        ("The bins are collected every Tuesday.", "The bins are collected every Thursday."),
    ],
    "quantity": [
        ("My usual run is 5 km.", "My usual run is 5 miles."),
        ("The suitcase weighs 20 kg.", "The suitcase weighs 23 kg."),
        ("I drink two litres of water a day.", "I drink three litres of water a day."),
        ("The thermostat is set to 21 °C.", "The thermostat is set to 19 °C."),
        ("The battery was at 80% this morning.", "The battery was at 40% this morning."),
    ],
    "price": [
        ("The gym membership costs $40 a month.", "The gym membership costs $55 a month."),
        ("The concert tickets were 30 euros each.", "The concert tickets were 30 dollars each."),
        ("Rent is £1,200 per month.", "Rent is £1,350 per month."),
        ("The sofa cost EUR 800.", "The sofa cost EUR 650."),
        ("Her salary offer was $85k.", "Her salary offer was $95k."),
    ],
    "polarity": [
        ("I eat meat.", "I don't eat meat any more."),
        ("Lena drinks coffee in the morning.", "Lena no longer drinks coffee in the morning."),
        ("I smoke after dinner.", "I quit smoking after dinner."),
        ("Omar is allergic to peanuts.", "Omar is not allergic to peanuts."),
        ("I take the bus to work.", "I never take the bus to work."),
        ("I live in Porto.", "I used to live in Porto."),
    ],
    "frequency_adverb": [
        ("I always take the stairs at the office.", "I rarely take the stairs at the office."),
        ("She usually walks the dog.", "She sometimes walks the dog."),
    ],
    "order": [
        ("I take the medication before breakfast.", "I take the medication after breakfast."),
        ("The meeting is scheduled after lunch.", "The meeting is scheduled before lunch."),
    ],
    "antonym": [
        ("Priya likes horror films.", "Priya dislikes horror films."),
        ("My manager loves remote work.", "My manager hates remote work."),
        ("The corner bakery is open on holidays.", "The corner bakery is closed on holidays."),
        ("The venue is available on Saturday.", "The venue is unavailable on Saturday."),
        ("He won the chess tournament.", "He lost the chess tournament."),
        ("We bought the flat in Braga.", "We sold the flat in Braga."),
        ("The school allows phones in class.", "The school bans phones in class."),
        ("My brother is older than me.", "My brother is younger than me."),
        ("The café opens early on Sundays.", "The café opens late on Sundays."),
        ("Their new flat is in the north of the city.",
         "Their new flat is in the south of the city."),
    ],
}

SAME_VALUES: dict[str, list[tuple[str, str]]] = {
    "month": [
        ("The dentist appointment is in April.", "The dentist appointment is in April, "
         "at the clinic on Rua Augusta."),
        ("The lease ends on 3 March 2025.", "The lease ends on March 3rd, 2025."),
        ("Our trip to Kyoto is in September.", "Our trip to Kyoto is in Sept."),
    ],
    "weekday": [
        ("Team standup is every Monday.", "The team standup happens every Monday."),
        ("I visit my grandmother on Sundays.", "On Sundays I visit my grandmother."),
    ],
    "ordinal": [
        ("Book club meets on the first Thursday of the month.",
         "The book club meets every month on its first Thursday."),
        ("She finished 2nd in the regional race.", "She finished second in the regional race."),
    ],
    "time": [
        ("The pharmacy closes at 18:00.", "The pharmacy closes at 6 pm."),
        ("The daily call starts at 9am.", "The daily call starts at 9 a.m."),
        ("The train leaves at noon.", "The train leaves at 12 pm."),
        ("I usually go running in the morning.", "I usually go for a run in the mornings."),
    ],
    "duration": [
        ("The flight to Lima takes eleven hours.", "The flight to Lima takes 11 hours."),
        ("The warranty lasts a year.", "The warranty lasts one year."),
    ],
    "frequency": [
        ("The newsletter goes out weekly.", "The newsletter goes out every week."),
        ("He calls his mother once a week.", "He phones his mother once a week."),
    ],
    "quantity": [
        ("My usual run is 5 km.", "My usual run is five kilometres."),
        ("The battery was at 80% this morning.", "The battery was at 80 percent this morning."),
    ],
    "price": [
        ("The gym membership costs $40 a month.", "The gym membership costs 40 dollars a "
         "month."),
        ("The sofa cost EUR 800.", "The sofa cost 800 euros."),
        ("Her salary offer was $85k.", "Her salary offer was $85,000."),
    ],
    "polarity": [
        ("I don't eat meat any more.", "I no longer eat meat."),
        ("Omar is not allergic to peanuts.", "Omar isn't allergic to peanuts."),
    ],
    "antonym": [
        ("Priya likes horror films.", "Priya loves horror films."),
        ("The corner bakery is closed on holidays.", "On holidays the corner bakery is "
         "closed."),
    ],
}


def _pairs(table: dict[str, list[tuple[str, str]]]) -> list[object]:
    return [pytest.param(old, new, id=f"{kind}-{i}") for kind, pairs in table.items()
            for i, (old, new) in enumerate(pairs)]


@pytest.mark.parametrize(("old", "new"), _pairs(CHANGED))
def test_a_changed_value_is_never_merged(old: str, new: str) -> None:
    assert changed_values(new, old), (value_slots(old), value_slots(new))
    assert relation(new, old) in VALUE_CHANGES
    for cosine in (0.99, 0.92, 0.75):  # the similarity band makes no difference
        plan = decide(new, [Candidate(id=uuid4(), content=old, cosine=cosine)],
                      THRESHOLDS, llm_available=False)
        assert plan.action == "supersede", (cosine, plan)


@pytest.mark.parametrize(("old", "new"), _pairs(SAME_VALUES))
def test_a_paraphrase_keeping_every_value_still_merges(old: str, new: str) -> None:
    assert not changed_values(new, old), (value_slots(old), value_slots(new))
    plan = decide(new, [Candidate(id=uuid4(), content=old, cosine=0.93)],
                  THRESHOLDS, llm_available=False)
    assert plan.action in ("confirm", "merge"), plan


def test_a_value_only_one_side_states_is_a_detail_not_a_change() -> None:
    assert not changed_values("The dentist appointment is on Tuesday at 3pm in May.",
                              "The dentist appointment is on Tuesday.")


@pytest.mark.parametrize(("text", "kind", "value"), [
    ("Lunch moved to the last Friday of May at 1pm", "month", "5"),
    ("Lunch moved to the last Friday of May at 1pm", "time", "1:00"),
    ("Lunch moved to the last Friday of May at 1pm", "daypart", "afternoon"),
    ("The invoice is due 2024-07-15", "month", "7"),
    ("I jog every other Tuesday", "frequency", "1/2 tue"),
    ("It costs ¥3000", "price", "3000 JPY"),
    ("Revenue was $965m", "price", "965000000 USD"),
    ("twenty-five minutes", "duration", "25 minute"),
])
def test_slots_are_typed_and_normalised(text: str, kind: str, value: str) -> None:
    assert value in value_slots(text).get(kind, ())


@pytest.mark.parametrize("text", [
    "May I bring a friend?", "The army will march on the capital", "I saw the sun set",
    "The chair is next to the window", "It is used to cut bread",
])
def test_words_that_only_look_like_values_are_not(text: str) -> None:
    slots = value_slots(text)
    assert not ({"month", "weekday", "ordinal", "tense"} & slots.keys()), slots


def test_an_llm_verdict_of_same_on_a_changed_value_becomes_an_update() -> None:
    from nous_memory.facts.consolidation import Verdict

    cand = Candidate(id=uuid4(), content="Book club meets on the first Thursday.", cosine=0.96)
    plan = decide("Book club meets on the last Thursday.", [cand], THRESHOLDS,
                  llm_available=True, verdicts={cand.id: Verdict.SAME})
    assert plan.action == "supersede"
