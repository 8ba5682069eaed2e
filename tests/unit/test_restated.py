"""The newest telling first: a later statement of what a question about how things stand
asks goes before the earlier ones it retells; nothing else moves."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import pytest

from nous_memory.context.ordering import final_order
from nous_memory.context.restated import (
    asks_how_things_stand,
    newest_telling_first,
    valued_mentions,
)
from nous_memory.context.truncation import query_terms

JUNE = datetime(2023, 6, 11, tzinfo=UTC)


def turn(name: str, text: str, lexemes: tuple[str, ...], days: int,
         cosine: float = 0.5) -> dict[str, Any]:
    return {"name": name, "source": "chunk", "memory_id": uuid4(), "text": text,
            "cosine": cosine, "lexemes": list(lexemes), "p_speaker": 0.0, "p_time": 0.0,
            "said_at": JUNE + timedelta(days=days), "first_seq": 0, "last_seq": 0}


def names(rows: list[Any]) -> list[str]:
    return [r["name"] for r in rows]


@pytest.mark.parametrize("query", [
    "How many hours have I spent on my abstract ocean sculpture?",
    "How many bikes do I currently own?",
    "What time do I wake up on Saturday mornings?",
    "Where does Ana live?",
    "What was my previous frequent flyer status before I got the current status?",
    "Which phone did I use before?",
    "Who owns the building I rent in?",  # "who" and a verb of the present
    "Who teaches me piano?",
    "Which bus stops outside my flat?",  # "which", a noun, a verb of the present
])
def test_questions_about_how_things_stand(query: str) -> None:
    assert asks_how_things_stand(query)


@pytest.mark.parametrize("query", [
    "When did I go to the support group?",
    "What did Caroline research?",
    "Where was the concert we went to?",
    "Who did I meet at the conference that had a dog?",
    "Who moved to Berlin?",
    "What gifts did I buy?",  # a plural noun after "what" is no verb
    # a talk, not a value, is "previous"; a total sums the tellings
    "I was going through our previous conversation: which brand uses wild rubber?",
    "How many rare items do I have in total?",
])
def test_questions_about_one_past_event(query: str) -> None:
    assert not asks_how_things_stand(query)


OLD = turn("old", "user: I've spent around 5-6 hours on my ocean sculpture so far.",
           ("spent", "hour", "ocean", "sculptur"), 0, cosine=0.62)
NEW = turn("new", "user: By the way, I've already put in 10-12 hours on the ocean "
           "sculpture.", ("hour", "ocean", "sculptur"), 6, cosine=0.55)
OTHER = turn("other", "user: Clay for the sculpture needs 2 days to dry.", ("sculptur",), 3,
             cosine=0.58)
HOURS = "How many hours have I spent on my ocean sculpture?"


def test_the_later_telling_goes_before_the_earlier() -> None:
    rows = [OLD, OTHER, NEW]
    ordered = final_order(rows, 10, query=HOURS)
    assert names(ordered) == ["new", "old", "other"]
    # the older telling says when it was told again; nothing else is marked
    assert [r.get("retold_on") for r in ordered] == [None, NEW["said_at"], None]
    assert "retold_on" not in OLD  # a marked copy, the row itself untouched


def test_an_older_telling_ranked_below_is_marked_too() -> None:
    ordered = final_order([NEW, OLD], 10, query=HOURS)
    assert names(ordered) == ["new", "old"]
    assert ordered[1]["retold_on"] == NEW["said_at"]


def test_a_question_about_one_past_event_keeps_the_ranking() -> None:
    rows = [OLD, OTHER, NEW]
    query = "How many hours did I spend on my ocean sculpture in June?"
    assert names(final_order(rows, 10, query=query)) == ["old", "other", "new"]


def test_a_statement_that_shares_too_few_of_the_words_is_not_a_retelling() -> None:
    rows = [OLD, OTHER]  # "other" is newer but holds one of old's four words
    assert names(final_order(rows, 10, query=HOURS)) == ["old", "other"]


def test_a_later_mention_without_another_value_is_not_a_retelling() -> None:
    """Both speak of the sculpture's hours, but only one says how many: nothing moves
    (on LoCoMo, moving every later mention of a question's words first cost recall@10
    0.063; moving only a value told again cost nothing)."""
    mention = turn("mention", "user: The hours on the ocean sculpture fly by.",
                   ("hour", "ocean", "sculptur"), 6)
    assert names(final_order([OLD, mention], 10, query=HOURS)) == ["old", "mention"]
    same = turn("same", "user: Still 5-6 hours on the ocean sculpture, no time lately.",
                ("hour", "ocean", "sculptur"), 6)
    assert names(final_order([OLD, same], 10, query=HOURS)) == ["old", "same"]


@pytest.mark.parametrize(("body", "query", "word", "values"), [
    ("I've spent around 5-6 hours on it so far.", HOURS, "hour", {"5-6"}),
    ("I just finished my fifth issue.", "How many issues have I finished?", "issu",
     {"fifth"}),
    ("I like to wake up at 7:30 am on Saturdays.", "What time do I wake up on Saturdays?",
     "saturday", {"7:30"}),
    ("I just reached Premier Gold status.", "What is my frequent flyer status?", "statu",
     {"premier", "gold"}),
])
def test_values_said_near_a_query_word(body: str, query: str, word: str,
                                       values: set[str]) -> None:
    assert valued_mentions(body, query_terms(query))[word] == values


def test_a_name_at_a_sentence_start_or_in_the_question_is_no_value() -> None:
    found = valued_mentions("Tuesday status report. I updated the United status.",
                            query_terms("What is my United status?"))
    assert found == {}


def test_what_the_assistant_says_later_is_no_retelling() -> None:
    echo = turn("echo", "assistant: Wow, 10-12 hours on the ocean sculpture is a lot!",
                ("hour", "ocean", "sculptur"), 6)
    rows = [OLD, echo]
    assert names(final_order(rows, 10, query=HOURS)) == ["old", "echo"]


def test_an_older_statement_ranked_below_stays_below() -> None:
    rows = [NEW, OLD]
    assert names(final_order(rows, 10, query=HOURS)) == ["new", "old"]


def test_several_tellings_end_newest_first() -> None:
    middle = turn("middle", "user: I'm at 8 hours on the ocean sculpture.",
                  ("hour", "ocean", "sculptur"), 3)
    rows = [OLD, NEW, middle]
    assert names(final_order(rows, 10, query=HOURS)) == ["new", "middle", "old"]


def test_the_speakers_own_name_is_not_a_shared_word() -> None:
    """Every turn of Caroline's holds her name: two of them share nothing else."""
    rows = [turn("a", "Caroline: I went hiking 3 times.", ("carolin",), 0),
            turn("b", "Caroline: My mom visited 2 times.", ("carolin",), 5)]

    def told(rows: list[dict[str, Any]]) -> list[tuple[str, str, bool]]:
        return [("caroline", r["text"].split(": ", 1)[1], True) for r in rows]

    query = "How many times does Caroline go out?"
    assert names(newest_telling_first(rows, query, query_terms(query), told(rows))) == ["a", "b"]
    rows = [turn("a", "Caroline: I adopted one dog.", ("carolin", "dog"), 0),
            turn("b", "Caroline: We have two dogs now.", ("carolin", "dog"), 5)]
    query = "How many dogs does Caroline have?"
    assert names(newest_telling_first(rows, query, query_terms(query), told(rows))) == ["b", "a"]


def test_context_words_of_a_chunk_are_not_its_own() -> None:
    later = turn("ctx", "user: Then 12 hours of glazing on the sculpture.",
                 ("~hour", "~ocean", "~sculptur"), 6)
    rows = [OLD, later]
    assert names(final_order(rows, 10, query=HOURS)) == ["old", "ctx"]


def test_an_episode_summary_and_a_turn_of_it_are_one_telling() -> None:
    episode = uuid4()
    summary = {**turn("summary", "Conversation between user, assistant. It began: I've spent "
                      "5-6 hours on my ocean sculpture. It ended: 7 hours by now.",
                      ("hour", "ocean", "sculptur"), 0), "source": "memory",
               "kind": "episode", "memory_id": episode}
    later = {**turn("turn", "user: Make that 7 hours on the ocean sculpture.",
                    ("hour", "ocean", "sculptur"), 0), "memory_id": episode}
    later["said_at"] = summary["said_at"] + timedelta(seconds=5)
    ordered = final_order([summary, later], 10, query=HOURS)
    assert names(ordered) == ["summary", "turn"]
    assert all("retold_on" not in r for r in ordered)
