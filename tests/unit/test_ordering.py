"""Recall's final order: facts merge into their turn, cosine with equal evidence decides,
restatements come first."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import UUID, uuid4

from nous_memory.context.ordering import (
    by_evidence,
    final_order,
    merge_fact_turns,
    said_not_asked,
    superseding_first,
)

EPISODE = uuid4()
T0 = datetime(2023, 1, 1, tzinfo=UTC)


def row(name: str, *, cosine: float | None = 0.5, lexemes: tuple[str, ...] = (),
        source: str = "memory", memory_id: UUID | None = None, **extra: Any) -> dict[str, Any]:
    return {"name": name, "source": source, "memory_id": memory_id or uuid4(),
            "cosine": cosine, "lexemes": list(lexemes), "p_speaker": 0.0, "p_time": 0.0,
            **extra}


def names(rows: list[dict[str, Any]]) -> list[str]:
    return [r["name"] for r in rows]


def test_higher_cosine_wins_when_the_evidence_is_the_same() -> None:
    rows = [row("vegetarian", cosine=0.58, lexemes=("ana",)),
            row("lisbon", cosine=0.72, lexemes=("ana",))]
    assert names(by_evidence(rows)) == ["lisbon", "vegetarian"]


def test_a_keyword_the_other_lacks_keeps_its_place() -> None:
    rows = [row("locker", cosine=0.40, lexemes=("locker", "code")),
            row("weather", cosine=0.55, lexemes=("~locker", "~code"))]
    assert names(by_evidence(rows)) == ["locker", "weather"]
    spoken = [row("by-ana", cosine=0.4, lexemes=("trip",), p_speaker=0.2),
              row("by-bo", cosine=0.6, lexemes=("trip",))]
    assert names(by_evidence(spoken)) == ["by-ana", "by-bo"]


def test_dominance_is_respected_through_a_chain() -> None:
    rows = [row("c", cosine=0.3, lexemes=("x",)), row("b", cosine=0.5, lexemes=("x",)),
            row("a", cosine=0.7, lexemes=("x", "y")), row("n", cosine=None, lexemes=())]
    assert names(by_evidence(rows)) == ["a", "b", "c", "n"]


def test_a_fact_merges_into_its_turn_which_takes_the_better_place() -> None:
    rows = [row("other"),
            row("fact", source_episode_id=EPISODE, source_seq=4),
            row("unlinked-fact"),
            row("chunk", source="chunk", memory_id=EPISODE, first_seq=4, last_seq=4),
            row("fact-of-unranked-turn", source_episode_id=EPISODE, source_seq=9)]
    assert names(merge_fact_turns(rows)) == ["other", "chunk", "unlinked-fact",
                                             "fact-of-unranked-turn"]


def test_final_order_cuts_to_k() -> None:
    rows = [row(str(i), cosine=1 - i / 10, lexemes=("x",)) for i in range(8)]
    assert names(final_order(rows, 3)) == ["0", "1", "2"]


def test_a_superseding_turn_goes_before_the_turn_it_superseded() -> None:
    old_ep, new_ep = uuid4(), uuid4()
    rows = [row("old-turn", source="chunk", memory_id=old_ep, first_seq=2, last_seq=2,
                superseded_by=[[str(new_ep), 5]]),
            row("between"),
            row("new-turn", source="chunk", memory_id=new_ep, first_seq=5, last_seq=5)]
    assert names(superseding_first(rows)) == ["new-turn", "old-turn", "between"]
    unranked = [rows[0], rows[1]]  # the newer turn is not among the rows: nothing moves
    assert names(superseding_first(unranked)) == ["old-turn", "between"]


def turn(name: str, text: str, **extra: Any) -> dict[str, Any]:
    return row(name, source="chunk", text=text, **extra)


def test_an_assistant_echo_goes_after_the_statement_it_repeats() -> None:
    rows = [turn("echo", "assistant: You live in Porto now."),
            turn("lisbon", "user: I live in Lisbon and work at a bakery."),
            turn("move", "user: I moved to Porto."),
            row("fact", text="The user moved to Porto.", kind="fact")]
    assert names(said_not_asked(rows, "Where do I live?")) == [
        "move", "echo", "lisbon", "fact"]
    # an assistant turn with words of its own (a suggestion) stays where it was ranked
    own = [turn("advice", "assistant: Porto has good trams and cheap rents."),
           turn("move", "user: I moved to Porto.")]
    assert names(said_not_asked(own, "Where do I live?")) == ["advice", "move"]
    # a named speaker is a person, not the assistant: LoCoMo's conversations keep order
    people = [turn("mel", "Melanie: You live in Porto."), turn("move", "Caroline: I moved "
                                                                        "to Porto.")]
    assert names(said_not_asked(people, "Where does Caroline live?")) == ["mel", "move"]


def test_a_bare_question_goes_after_the_related_items_and_before_the_unrelated() -> None:
    rows = [turn("asked", "user: Where do I live?", cosine=0.56),
            turn("move", "user: I moved to Porto.", cosine=0.33),
            turn("noted", "assistant: Yes, you do.", cosine=0.3),
            turn("hike", "user: Can you suggest a hike?", cosine=0.05)]
    assert names(said_not_asked(rows, "Where do I live?")) == ["move", "asked", "noted",
                                                                "hike"]
    # a question that says something ("...for my move to Porto?") is evidence
    told = [turn("asked", "user: Where should I eat after my move to Porto?", cosine=0.5),
            turn("move", "user: I moved to Porto.", cosine=0.33)]
    assert names(said_not_asked(told, "Where do I live?")) == ["asked", "move"]
    assert names(said_not_asked(rows, "")) == names(rows)  # no query, no rule
