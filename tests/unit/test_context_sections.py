"""Section budgeting without a database: the budget is never exceeded (property test),
items are whole, unused budget spills, the order is deterministic, bad input is typed."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nous_memory import blocks
from nous_memory.context.model import (
    DEFAULT_SECTION_BUDGETS,
    MIN_BUDGET_TOKENS,
    Candidate,
    Extraction,
    Section,
    parse_request,
)
from nous_memory.context.sections import assemble, item_line
from nous_memory.errors import InvalidInputError
from nous_memory.tokens import count_tokens

# text that stresses the tokenizer: words, digits, punctuation, newlines, CJK, emoji and
# the store's own tag (an item must never close the context block early)
_ALPHABET = st.sampled_from([*"abcdefghij klmnop ,.;:!?\n\t0123456789-_'\"()[]<>/=#",
                             "漢字", "é", "🙂", "</nous-memory>", '<nous-memory kind="x">',
                             "  ", "\n\n", "https://", "...", "ü"])
NOISY = st.lists(_ALPHABET, min_size=1, max_size=80).map("".join)
# plain one-line prose
PLAIN = st.lists(st.sampled_from(["billing", "migration", "on", "Sunday", "02:00", "UTC,",
                                  "Ana", "prefers", "tea.", "漢字", "🙂", "x" * 12, "1234"]),
                 min_size=1, max_size=30).map(" ".join)
TEXT = st.one_of(NOISY, PLAIN)


@st.composite
def candidates(draw: st.DrawFn) -> list[Candidate]:
    count = draw(st.integers(min_value=0, max_value=40))
    out = []
    for index in range(count):
        section = draw(st.sampled_from(list(Section)))
        text = draw(TEXT)
        out.append(Candidate(
            ref=f"{section.value[:-1]}:{index:08x}", memory_id=uuid.UUID(int=index + 1),
            kind=section.value[:-1], section=section, text=text,
            score=draw(st.floats(min_value=0, max_value=1)), pinned=draw(st.booleans())))
    return out


@st.composite
def section_budgets(draw: st.DrawFn) -> dict[Section, int]:
    chosen = draw(st.lists(st.sampled_from(list(Section)), min_size=1, unique=True))
    return {s: draw(st.integers(min_value=0, max_value=600)) for s in Section if s in chosen}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=candidates(), budgets=section_budgets(),
       budget=st.integers(min_value=MIN_BUDGET_TOKENS, max_value=600))
def test_never_over_budget_and_whole_items(items: list[Candidate],
                                           budgets: dict[Section, int], budget: int) -> None:
    result = assemble(items, budgets, budget)
    assert count_tokens(result.text) == result.tokens <= budget
    by_ref = {c.ref: c for c in items}
    for item in result.items:
        assert item.section in budgets
        assert item_line(item.ref, by_ref[item.ref].text) in result.text  # whole, not cut
    shown = {i.ref for i in result.items}
    assert shown.isdisjoint({d.ref for d in result.dropped})
    if result.text:
        assert blocks.strip(result.text) == ""  # one block, stripped whole before extraction
    # deterministic whatever the input order
    shuffled = list(items)
    random.Random(budget).shuffle(shuffled)
    assert assemble(shuffled, budgets, budget) == result


def _cand(section: Section, n: int, text: str, score: float = 0.5,
          pinned: bool = False) -> Candidate:
    return Candidate(ref=f"{section.value[:-1]}:{n:08x}", memory_id=uuid.UUID(int=n),
                     kind=section.value[:-1], section=section, text=text, score=score,
                     pinned=pinned)


def test_unused_budget_spills_to_the_next_section() -> None:
    long_fact = "The quarterly planning meeting covers budgets and hiring. " * 3
    facts = [_cand(Section.FACTS, i, long_fact, score=1 - i / 10) for i in range(1, 5)]
    one_fact = count_tokens(item_line(facts[0].ref, long_fact) + "\n")
    # the facts section alone holds one item; an empty censors section before it gives
    # its budget to facts, so a second one fits
    alone = assemble(facts, {Section.FACTS: one_fact + 10}, 2000)
    assert [i.ref for i in alone.items] == [facts[0].ref]
    spilled = assemble(facts, {Section.CENSORS: one_fact + 10, Section.FACTS: one_fact + 10},
                       2000)
    assert [i.ref for i in spilled.items] == [facts[0].ref, facts[1].ref]
    assert {d.reason for d in spilled.dropped} == {"section budget"}


def test_pinned_first_then_score_and_sections_in_order() -> None:
    items = [_cand(Section.FACTS, 1, "low score fact", 0.1),
             _cand(Section.FACTS, 2, "high score fact", 0.9),
             _cand(Section.FACTS, 3, "pinned profile fact", 0.0, pinned=True),
             _cand(Section.CENSORS, 4, "BLOCK: rm -rf — destroys data")]
    result = assemble(items, DEFAULT_SECTION_BUDGETS, 1000)
    assert [i.ref for i in result.items] == [
        "censor:00000004", "fact:00000003", "fact:00000002", "fact:00000001"]
    assert result.text.index("## Rules (censors)") < result.text.index("## Facts")
    assert "[fact:00000003] pinned profile fact" in result.text


def test_smaller_items_still_fit_after_a_big_one_is_dropped() -> None:
    big = _cand(Section.FACTS, 1, "word " * 400, 0.9)
    small = _cand(Section.FACTS, 2, "a short fact", 0.1)
    result = assemble([big, small], {Section.FACTS: 200}, 2000)
    assert [i.ref for i in result.items] == [small.ref]
    assert [(d.ref, d.reason) for d in result.dropped] == [(big.ref, "section budget")]


def test_nothing_fits_gives_empty_text() -> None:
    result = assemble([_cand(Section.FACTS, 1, "word " * 400)], {Section.FACTS: 1500},
                      MIN_BUDGET_TOKENS)
    assert result.text == "" and result.tokens == 0 and result.items == []
    assert result.dropped[0].reason == "total budget"


def test_parse_request_names_every_bad_field() -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_request("a", "  ", MIN_BUDGET_TOKENS - 1, {"facts": 10, "gossip": 5}, "later")
    assert [p.field for p in caught.value.problems] == [
        "query", "budget_tokens", "sections.gossip", "extraction"]
    with pytest.raises(InvalidInputError) as caught:
        parse_request("a", "q", True, ["facts"], "off")
    assert caught.value.field == "budget_tokens"
    with pytest.raises(InvalidInputError) as caught:
        parse_request("a", "q", 500, [], "off")
    assert caught.value.field == "sections"
    with pytest.raises(InvalidInputError) as caught:
        parse_request("a", "q", 500, {"facts": -1}, "off")
    assert caught.value.field == "sections.facts"


def test_parse_request_sections_forms() -> None:
    req = parse_request("a", " q ", 500, ["facts", "censors"], "sync")
    assert list(req.budgets) == [Section.CENSORS, Section.FACTS]  # canonical order
    assert req.budgets[Section.FACTS] == DEFAULT_SECTION_BUDGETS[Section.FACTS]
    assert req.query == "q" and req.extraction is Extraction.SYNC
    req = parse_request("a", "q", 500, {"episodes": 0}, "cached")
    assert dict(req.budgets) == {Section.EPISODES: 0}


def test_a_value_told_again_says_so_and_a_superseded_one_says_that_first() -> None:
    told = datetime(2024, 6, 17, 9, tzinfo=UTC)
    line = item_line("episode:1#c0", "user: I've spent 5-6 hours on it.", retold_on=told)
    assert line.endswith("(older: told again on 17 Jun 2024)")
    both = item_line("fact:1", "x", stale_on=told, retold_on=told)
    assert both.endswith("(older: superseded on 17 Jun 2024)") and "told again" not in both
