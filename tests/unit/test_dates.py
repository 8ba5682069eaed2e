"""Absolute dates a chunk is indexed with: the day it was said, relative expressions
resolved against it."""

from __future__ import annotations

from datetime import UTC, datetime

from nous_memory.episodes.chunks import TranscriptMessage, chunk_messages
from nous_memory.episodes.dates import date_line

MONDAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # 8 May 2023 was a Monday


def test_relative_expressions_become_absolute_dates() -> None:
    line = date_line("Yesterday we went camping, and last week I painted. Last night was "
                     "loud! See you next Friday; last month and last year were rough.", MONDAY)
    assert line.split("; ") == [
        "on 8 May 2023", "yesterday: 7 May 2023", "last night: 7 May 2023",
        "last week: May 2023", "last month: April 2023", "last year: 2022",
        "next friday: 12 May 2023"]
    # across a month and a year boundary; a weekday back from the same weekday is a week
    assert date_line("I went last month, tomorrow I fly", datetime(2024, 1, 1)).split("; ") == [
        "on 1 January 2024", "tomorrow: 2 January 2024", "last month: December 2023"]
    assert date_line("We met last Monday", MONDAY) == "on 8 May 2023; last monday: 1 May 2023"
    assert date_line("I went a week ago", datetime(2023, 3, 3)).endswith("February 2023")


def test_only_known_expressions_and_a_known_time() -> None:
    assert date_line("The Friday market and a weekly plan", MONDAY) == "on 8 May 2023"
    assert date_line("yesterday", None) == ""


def test_a_chunk_is_indexed_with_its_dates_but_shows_its_words() -> None:
    turns = [TranscriptMessage(seq=0, role="user", name="Ana", created_at=MONDAY,
                               content="I adopted a cat yesterday!"),
             TranscriptMessage(seq=1, role="user", name="Bo", content="Lovely!")]
    first, second = chunk_messages(turns, max_tokens=160)
    assert first.content == "Ana: I adopted a cat yesterday!"
    assert first.context == "on 8 May 2023; yesterday: 7 May 2023"
    assert first.index_text == f"{first.context}\n{first.content}"
    assert second.context == "Ana: I adopted a cat yesterday!"  # no time, no date line
