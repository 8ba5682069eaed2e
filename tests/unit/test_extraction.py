"""Tier-2 helpers without a database: cache keys, source texts, the size of LLM answers."""

from __future__ import annotations

from nous_memory.context.extraction import fit, label, query_digest, source_text
from nous_memory.tokens import count_tokens


def test_query_digest_ignores_case_and_spacing_only() -> None:
    assert query_digest("When is  the Migration?") == query_digest(" when is the migration? ")
    assert query_digest("when is the migration?") != query_digest("when was the migration?")
    assert len(query_digest("x")) == 32


def test_source_text_of_each_complex_kind() -> None:
    episode = {"kind": "episode", "title": "Planning", "detail": "We planned. Then lunch.",
               "name": None, "goals": None, "core_patterns": None, "notes": None}
    assert source_text(episode) == "Planning.\nWe planned. Then lunch."
    assert label(episode) == "Planning: "
    procedure = {"kind": "procedure", "title": None, "detail": None, "name": "Triage",
                 "goals": ["fast"], "core_patterns": ["check logs", "page owner"],
                 "notes": ["use the runbook"]}
    assert source_text(procedure) == ("Triage.\nGoals: fast.\nPattern: check logs\n"
                                      "Pattern: page owner\nNote: use the runbook")
    assert label(procedure) == "Triage: "


def test_an_llm_answer_over_its_size_is_truncated() -> None:
    answer = "The window is Sunday at 02:00 UTC. " + "Other words here. " * 100
    fitted = fit(answer, "migration window", 20)
    assert count_tokens(fitted) <= 20 and "Sunday at 02:00 UTC" in fitted
    assert fit("  short  ", "q", 20) == "short"
