"""Tier-1 templates, exactly as the issue specifies them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from nous_memory.memories.kinds import (
    CensorDetail,
    DecisionDetail,
    EpisodeDetail,
    FactDetail,
    ProcedureDetail,
    SummarySource,
)
from nous_memory.memories.summaries import (
    RULE_SUMMARY_MAX_CHARS,
    leading_sentences,
    percent,
    summarize,
)

PATTERNS = ["Query past decisions", "Evaluate 2+ alternatives", "Record with confidence",
            "Revisit after a month"]


def test_decision_full() -> None:
    d = DecisionDetail(description="Chose Postgres + pgvector for unified storage",
                       outcome="success", confidence=0.85,
                       pattern="Unify to reduce surface area")
    assert summarize(d) == (
        "Chose Postgres + pgvector for unified storage [success] [85% confidence] "
        "— Pattern: Unify to reduce surface area", SummarySource.TEMPLATE)


def test_decision_pending_without_pattern() -> None:
    d = DecisionDetail(description="Try Redis for the queue", confidence=0.6)
    assert summarize(d)[0] == "Try Redis for the queue [60% confidence]"


def test_decision_without_confidence() -> None:
    d = DecisionDetail(description="Drop the cache", outcome="abandoned", pattern="YAGNI")
    assert summarize(d)[0] == "Drop the cache [abandoned] — Pattern: YAGNI"


def test_fact_is_its_content() -> None:
    assert summarize(FactDetail(content="Tim prefers Celsius"))[0] == "Tim prefers Celsius"


def test_procedure_effective_after_five_activations() -> None:
    d = ProcedureDetail(name="Architecture Decision", core_patterns=PATTERNS,
                        activation_count=5, success_count=4, effectiveness=0.92)
    assert summarize(d)[0] == ("Architecture Decision: Query past decisions; "
                               "Evaluate 2+ alternatives; Record with confidence [92% effective]")


def test_procedure_no_effectiveness_before_five_activations() -> None:
    d = ProcedureDetail(name="Architecture Decision", core_patterns=PATTERNS,
                        activation_count=4, effectiveness=0.92)
    assert summarize(d)[0] == ("Architecture Decision: Query past decisions; "
                               "Evaluate 2+ alternatives; Record with confidence")


def test_censor() -> None:
    d = CensorDetail(trigger_pattern="Pushing directly to main", action="block",
                     reason="Always use feature branches + PR")
    assert summarize(d)[0] == "BLOCK: Pushing directly to main — Always use feature branches + PR"


def test_episode_given_and_rule() -> None:
    d = EpisodeDetail(title="Flaky test hunt",
                      detail="The CI test failed one run in ten. It was a race on the port. "
                             "We added a lock.")
    assert summarize(d, "We fixed the flaky test.") == ("We fixed the flaky test.",
                                                        SummarySource.GIVEN)
    text, source = summarize(d)
    assert source is SummarySource.RULE
    assert text == ("Flaky test hunt. The CI test failed one run in ten. "
                    "It was a race on the port. We added a lock.")


def test_percent_rounds_half_up() -> None:
    assert [percent(v) for v in (0.85, 0.925, 0.005, 1.0, 0.0)] == [85, 93, 1, 100, 0]


@given(st.text(min_size=1, max_size=3000), st.integers(min_value=20, max_value=600))
def test_leading_sentences_never_over_budget_nor_mid_word(text: str, budget: int) -> None:
    out = leading_sentences(text, budget)
    assert len(out) <= budget
    words = set(" ".join(text.split()).split(" "))
    for word in out.removesuffix("…").split():
        assert word in words or any(w.startswith(word) for w in words)


def test_long_detail_rule_summary_is_bounded() -> None:
    d = EpisodeDetail(detail="word " * 5000)
    assert len(summarize(d)[0]) <= RULE_SUMMARY_MAX_CHARS


def test_a_message_over_the_input_cap_is_cut_with_a_note() -> None:
    from nous_memory.episodes.chunks import TranscriptMessage
    from nous_memory.episodes.close import render_transcript, split_for_cap
    from nous_memory.tokens import count_tokens

    huge = TranscriptMessage(seq=0, role="user", content="word " * 5000)
    small = TranscriptMessage(seq=1, role="assistant", content="Short answer.")
    parts = split_for_cap([huge, small], 300)
    assert all(count_tokens(render_transcript(part)) <= 300 for part in parts)
    sent = parts[0][0].content
    assert "more characters of this message were not sent" in sent
    assert [m.seq for part in parts for m in part] == [0, 1]
