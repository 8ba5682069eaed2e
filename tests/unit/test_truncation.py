"""Smart truncation (tier-2 fallback): whole sentences, query terms first, never mid-word,
never over its token budget."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nous_memory.context.truncation import GAP, query_terms, truncate
from nous_memory.tokens import count_tokens

DETAIL = (
    "We met at the office on Monday. The weather was grey and nobody had coffee. "
    "Alice presented the migration plan for the billing database. "
    "Bob worried about downtime during the migration window. "
    "Lunch was sandwiches. We agreed to migrate billing on the 14th at night. "
    "Carol will write the rollback runbook before then.")


def test_short_text_is_returned_whole() -> None:
    assert truncate("One sentence only.", "anything", 50) == "One sentence only."


def test_query_matching_sentences_come_first_in_original_order() -> None:
    result = truncate(DETAIL, "when is the billing migration?", 40)
    assert count_tokens(result) <= 40
    assert "We agreed to migrate billing on the 14th at night." in result
    assert "Lunch was sandwiches." not in result
    kept = [s for s in ("Alice presented", "Bob worried", "We agreed") if s in result]
    assert kept == sorted(kept, key=result.index)  # original order
    assert GAP in result or result.startswith("… ")


def test_no_match_keeps_the_leading_sentences() -> None:
    result = truncate(DETAIL, "zebra", 20)
    assert result.startswith("We met at the office on Monday.")


def test_a_too_long_sentence_is_cut_at_a_word() -> None:
    sentence = "supercalifragilistic expialidocious " * 30
    result = truncate(sentence, "expialidocious", 12)
    assert result.endswith("…") and count_tokens(result) <= 12
    words = result[:-1].split()
    assert all(w in ("supercalifragilistic", "expialidocious") for w in words)


def test_query_terms_drop_stopwords_and_stem() -> None:
    assert query_terms("What are the meetings about?") == {"meeting"}


WORDS = st.sampled_from(["alpha", "beta", "migration", "billing", "the", "x" * 30, "漢字",
                         "end.", "stop!", "why?", "\n", "…", "3.14", "e.g."])


@settings(max_examples=200, deadline=None)
@given(words=st.lists(WORDS, min_size=1, max_size=200), budget=st.integers(1, 120),
       query=st.sampled_from(["billing migration", "alpha", "", "why stop"]))
def test_never_over_budget_and_never_mid_word(words: list[str], budget: int,
                                              query: str) -> None:
    text = " ".join(words)
    result = truncate(text, query, budget)
    assert count_tokens(result) <= budget
    source_words = set(text.split())
    for word in result.replace("…", " ").split():
        assert word in source_words or word.rstrip("…") in source_words or word == ""
