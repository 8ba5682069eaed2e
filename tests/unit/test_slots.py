"""Fact slots read by rules: what a statement describes, and the moment of a plan."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nous_memory.memories.ahead import slot_and_event
from nous_memory.memories.event_time import event_time
from nous_memory.memories.fact_slots import Slot, query_attributes, read_slot

SAID = datetime(2024, 5, 2, 10, tzinfo=UTC)  # a Thursday


@pytest.mark.parametrize(("text", "subject", "attribute", "value", "ended"), [
    ("The user lives in Lisbon and works at a bakery.", "user", "home", "lisbon", False),
    ("The user moved to Porto last month.", "user", "home", "porto", False),
    ("The user moved again, to Cardiff this time.", "user", "home", "cardiff", False),
    ("The user's neighbour Omar moved to Toronto.", "omar", "home", "toronto", False),
    ("Ana's sister Maria lives in Porto.", "maria", "home", "porto", False),
    ("The user's dog Max died.", "user", "pet:dog", "max", True),
    ("The user adopted a rescue puppy and named her Luna.", "user", "pet:dog", "luna", False),
    ("The user works at a startup called Fintly.", "user", "employer", "fintly", False),
    ("The user just accepted an offer from Revolut, starting Monday.", "user", "employer",
     "revolut", False),
    ("The user got promoted to senior engineer.", "user", "job title", "senior engineer",
     False),
    # what one became, and a job taken by its title
    ("The user finished the conversion course and qualified as a paramedic last month.",
     "user", "job title", "paramedic", False),
    ("The user took the kitchen manager job at the hotel.", "user", "job title",
     "kitchen manager", False),
    ("The user was hired as a junior analyst.", "user", "job title", "junior analyst", False),
    ("The user is no longer vegetarian.", "user", "diet", "vegetarian", True),
    ("The user went vegan in April.", "user", "diet", "vegan", False),
    ("The user switched to an iPhone 15 last week.", "user", "phone", "iphone 15", False),
    ("The user drives a Honda Civic.", "user", "car", "honda civic", False),
    ("The user now bikes to work instead of taking the train.", "user", "commute", "bike",
     False),
    ("The user goes to the gym on Mondays and Wednesdays.", "user", "schedule:gym",
     "mondays and wednesdays", False),
    ("The user's gym days moved to Tuesdays and Thursdays.", "user", "schedule:gym",
     "tuesdays and thursdays", False),
    ("The user has three kids now.", "user", "count:kids", "3", False),
    ("The grant report is now due on 3 March.", "grant report", "deadline", "3 march", False),
    ("The user's haircut was cancelled.", "user", "event:haircut", "", True),
    ("The user broke up with Sam in January.", "user", "partner", "sam", True),
    ("The user quit smoking.", "user", "habit:smoking", "smoking", True),
    ("The user's favourite colour is green these days.", "user", "favourite:colour", "green",
     False),
])
def test_a_statement_fills_its_slot(text: str, subject: str, attribute: str, value: str,
                                    ended: bool) -> None:
    slot = read_slot(text)
    assert slot is not None
    assert slot == Slot(subject=subject, attribute=attribute, value=value, ended=ended,
                        replaces=slot.replaces)


@pytest.mark.parametrize("text", [
    "The user loves hiking in the mountains.",
    "The user has been using a Fitbit for 6 months now.",
    "Happy to help with that.",
    "The user thinks the movie was too long.",
    "The user dressed up as a doctor for Halloween.",  # "as a <job>" without becoming one
    "The user took the dog to the vet.",
    "The user was in Paris for the weekend.",
])
def test_what_no_rule_reads_has_no_slot(text: str) -> None:
    assert read_slot(text) is None


def test_two_people_named_in_the_same_frame_are_two_slots() -> None:
    kalopa = read_slot("Dev's sister Kalopa works as a ririra maker.")
    ririba = read_slot("Dev's sister Ririba works as a rarari maker.")
    assert kalopa is not None and ririba is not None and kalopa.key != ririba.key


def test_a_switch_names_what_it_replaces() -> None:
    slot = read_slot("The user switched from coffee to green tea.")
    assert slot is not None and slot.value == "green tea" and slot.replaces == "coffee"


@pytest.mark.parametrize(("text", "expected"), [
    ("next Tuesday at 3pm", datetime(2024, 5, 7, 15, tzinfo=UTC)),
    ("on Friday", datetime(2024, 5, 3, tzinfo=UTC)),
    ("tomorrow at noon", datetime(2024, 5, 3, 12, tzinfo=UTC)),
    ("due on 3 March", datetime(2025, 3, 3, tzinfo=UTC)),  # the next 3 March
    ("on May 20th at 9:30 am", datetime(2024, 5, 20, 9, 30, tzinfo=UTC)),
    ("in two weeks", datetime(2024, 5, 16, tzinfo=UTC)),
    ("on 2024-06-01", datetime(2024, 6, 1, tzinfo=UTC)),
])
def test_a_plan_is_dated_against_when_it_was_said(text: str, expected: datetime) -> None:
    assert event_time(text, SAID) == expected


@pytest.mark.parametrize("text", ["every Monday", "I go running on Mondays", "no date here",
                                  "weekly on Fridays"])
def test_a_routine_or_no_day_is_no_event(text: str) -> None:
    assert event_time(text, SAID) is None


def test_only_statements_about_what_is_ahead_are_dated() -> None:
    _, event = slot_and_event("The user's dentist appointment is next Tuesday at 3pm.", SAID)
    assert event == datetime(2024, 5, 7, 15, tzinfo=UTC)
    _, past = slot_and_event("The user visited Rome on 3 March.", SAID)
    assert past is None  # a past day, and nothing says it is ahead


@pytest.mark.parametrize(("query", "attribute"), [
    ("Which city do I live in these days?", "home"),
    ("Where do I work?", "employer"),
    ("What's my dog's name?", "pet:"),
    ("When is my dentist appointment?", "event:"),
    ("What phone do I use?", "phone"),
])
def test_a_question_names_the_attribute_it_asks_about(query: str, attribute: str) -> None:
    assert attribute in query_attributes(query)
