"""The time a query names, resolved against the moment it is asked."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nous_memory.context.when import resolve

ASKED = datetime(2023, 5, 5, 15, 30, tzinfo=UTC)  # a Friday


def day(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(("query", "inside", "outside"), [
    ("What gardening activity did I do two weeks ago?", ["2023-04-21"], ["2023-05-04",
                                                                          "2023-04-10"]),
    ("How many days ago did I buy a smoker? 3 days ago", ["2023-05-02"], ["2023-04-20"]),
    ("Where did I go last week?", ["2023-04-25"], ["2023-05-04", "2023-04-15"]),
    ("What did I do yesterday?", ["2023-05-04T12:00"], ["2023-05-05T12:00", "2023-05-03"]),
    ("What did I buy in March?", ["2023-03-15"], ["2023-04-02", "2023-02-27"]),
    ("What did I do in March 2022?", ["2022-03-15"], ["2023-03-15"]),
    ("trips in the past three months", ["2023-02-10", "2023-05-01"], ["2023-01-01"]),
    ("What did I do with Rachel on the Wednesday two months ago?", ["2023-03-08"],
     ["2023-04-20", "2023-01-20"]),
    ("Which bike did I service last Saturday?", ["2023-04-29"], ["2023-04-22"]),
    ("the concert in June", ["2022-06-15"], ["2023-06-15"]),  # June has not come yet
])
def test_phrases_resolve_to_a_window(query: str, inside: list[str], outside: list[str]) -> None:
    window = resolve(query, ASKED)
    assert window is not None
    for text in inside:
        assert window.start <= day(text) < window.end, text
    for text in outside:
        assert not window.start <= day(text) < window.end, text


@pytest.mark.parametrize("query", [
    "Where does Ana live?", "How long have I been using my Fitbit?",
    "What may I bring to the party?", "Which event happened first?",
])
def test_no_time_phrase_names_no_time(query: str) -> None:
    assert resolve(query, ASKED) is None


def test_several_phrases_take_the_span_of_all() -> None:
    window = resolve("Which airline did I fly with most in March and in April?", ASKED)
    assert window is not None
    assert window.start == day("2023-03-01") and window.end == day("2023-05-01")


def test_phrases_that_only_say_now_are_not_searched_for() -> None:
    from nous_memory.context.when import without_now

    assert without_now("Which city do I live in these days?").split() == [
        "Which", "city", "do", "I", "live", "in", "?"]
    assert without_now("Right now, where do I work?").split() == [",", "where", "do", "I",
                                                                   "work?"]
    assert without_now("What did I do on my birthday?") == "What did I do on my birthday?"
    assert without_now("these days") == "these days"  # nothing else to search for
    assert resolve("Where do I live these days?", datetime(2024, 7, 1, tzinfo=UTC)) is None
