"""The rule compaction keeps what lines name, decide and promise, not the newest tail;
facets list the people and places named, never numbers."""

from __future__ import annotations

from nous_memory.conversation import salience
from nous_memory.conversation.facets import names_in, rule_facets


def test_an_early_line_naming_people_outlives_newer_filler() -> None:
    lines = ["user: My sister Beatrice lives in Lisbon.",
             *[f"user: What about option {i}? ok sure {i}" for i in range(60)],
             "assistant: Noted for the last turn."]
    kept = salience.compact("\n".join(lines), 400)
    assert len(kept) <= 400
    assert kept.splitlines()[0] == lines[0]  # the first line, whole
    assert kept.splitlines()[-1] == lines[-1]  # and the newest
    assert "..." in kept.splitlines()  # a dropped run is marked


def test_a_repeated_name_does_not_buy_a_second_line() -> None:
    lines = ["user: Tomasz booked the Alfama guesthouse.",
             "user: Tomasz booked the Alfama guesthouse again, yes.",
             "user: We decided to take the night train to Madrid.",
             *["assistant: fine" for _ in range(3)]]
    kept = salience.compact("\n".join(lines), 150)
    assert "Madrid" in kept and "Alfama" in kept
    assert kept.count("Tomasz") == 1


def test_one_long_line_keeps_its_richest_sentences() -> None:
    text = "Ana went to Porto. It was fine. Then nothing much. Ana met Tomasz in Braga."
    kept = salience.compact(text, 60)
    assert kept == "Ana went to Porto. Ana met Tomasz in Braga."  # in their order


def test_names_are_not_numbers_or_openers() -> None:
    assert names_in("Visit the museum number 23 with Beatrice in Lisbon at 7.") == [
        "Beatrice", "Lisbon"]
    facets = rule_facets([("user", "For day 20, visit museum 21 with Tomasz in Madrid.")])
    assert facets.entities == ["Tomasz", "Madrid"]
