"""Review of working memory: defects found in review, each pinned by a test."""

from __future__ import annotations

import asyncio
import math
from typing import Literal, cast
from uuid import uuid4

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nous_memory import blocks
from nous_memory.conversation import extractive
from nous_memory.conversation.engine import Summarizer
from nous_memory.conversation.facets import Facets
from nous_memory.conversation.llm_fold import fold_input
from nous_memory.conversation.pairs import ConvMessage, call_for, pair_index, safe_cut
from nous_memory.conversation.policy import resolve
from nous_memory.conversation.prompt import _tail
from nous_memory.conversation.storage import State, SummaryRecord
from nous_memory.db import Database
from nous_memory.errors import InvalidInputError
from nous_memory.tokens import count_tokens


def msg(seq: int, role: str = "user", content: str = "hello there", **extra: object
        ) -> ConvMessage:
    return ConvMessage(seq=seq, role=role, content=content, tokens=3, **extra)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
@pytest.mark.parametrize("knob", ["target", "summary_max_chars", "protect_tail"])
def test_non_finite_knobs_are_refused_with_their_field(knob: str, value: float) -> None:
    with pytest.raises(InvalidInputError) as bad:
        resolve({knob: value})
    assert [p.field for p in bad.value.problems] == [f"policy.{knob}"]


def test_a_policy_layer_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(InvalidInputError) as bad:
        resolve(["mode", "rule"])  # type: ignore[list-item]
    assert [p.field for p in bad.value.problems] == ["policy"]


def test_malformed_tool_call_metadata_is_ignored_not_fatal() -> None:
    odd = [msg(0), msg(1, "assistant", "x", metadata={"tool_calls": 5}),
           msg(2, "assistant", "y", metadata={"tool_calls": "abc"}),
           msg(3, "assistant", "z", metadata={"tool_calls": {"id": "a"}})]
    assert pair_index(odd) == {} and safe_cut(odd, 4) == 4
    assert extractive.analyze(odd[1], None) == ("message", "assistant: x")


def test_the_cut_never_ends_on_a_call_still_waiting_for_its_result() -> None:
    waiting = [msg(0), msg(1, "assistant", "", metadata={"tool_calls": [
        {"id": "c1", "function": {"name": "bash", "arguments": "{}"}}]})]
    assert safe_cut(waiting, 2) == 1  # its result arrives later: it stays unfolded


def test_a_prompt_tail_never_starts_with_a_result_whose_call_is_not_in_it() -> None:
    tail = [msg(5, "tool", "a.txt", tool_call_id="c1"), msg(6, "user", "and then?")]
    chosen, _, spent = _tail(tail, 10_000)
    assert [m["role"] for _, m in chosen] == ["user"] and spent > 0


def test_the_bridge_is_delimited_once_and_never_empty() -> None:
    policy = resolve({})
    long = "Ana booked the Lisbon flight for 9 May. " * 200  # far over the raw-message limit
    bridge = ConvMessage(seq=3, role="user", name="Ana", content=long, tokens=2000)
    request = fold_input(policy, "old", bridge, [(msg(4), "user: hello there")])
    body = request.messages[1]["content"]
    assert '<bridge><message seq="3" role="user" name="Ana">' in body
    inner = body.split("<bridge>", 1)[1].split("</bridge>", 1)[0]
    assert "Lisbon" in inner and "&lt;message" not in inner


def test_an_injected_block_alone_is_not_an_empty_message() -> None:
    stored = msg(0, "system", blocks.wrap("Summary of the conversation so far", "summary"))
    kind, text = extractive.analyze(stored, None)
    assert kind == "injected" and text == ""


@settings(max_examples=80, deadline=None)
@given(old=st.text(max_size=4000), story=st.text(max_size=3000),
       contents=st.lists(st.text(min_size=1, max_size=900), min_size=1, max_size=20),
       max_chars=st.integers(min_value=-50, max_value=6000),
       target=st.integers(min_value=-50, max_value=9000),
       window=st.integers(min_value=256, max_value=40_000),
       chapter=st.integers(min_value=0, max_value=30), depth=st.integers(0, 5))
def test_the_engine_fold_never_exceeds_max(old: str, story: str, contents: list[str],
                                          max_chars: int, target: int, window: int,
                                          chapter: int, depth: int) -> None:
    """The property the issue asks for, on the engine's own fold (rule mode: the path
    every LLM failure ends on), not on a re-implementation of its size check."""
    policy = resolve({"mode": "rule", "summary_max_chars": max_chars, "target_chars": target,
                      "window_tokens": window, "chapter_messages": chapter})
    head = record(old, depth, "chapter")
    state = State(watermark_seq=0, watermark_hash=b"\0" * 32, summary_id=1, story_id=2,
                  version=1, armed=False, folded_message_count=1, chapter_messages=chapter // 2,
                  breaker_failures=0, breaker_open_until=None, invalidated_reason=None)
    delta = [(m, extractive.analyze(m, None)[1] or "-") for m in
             (msg(i + 1, "user" if i % 2 else "assistant", c) for i, c in enumerate(contents))]
    summarizer = Summarizer(cast(Database, None), None)
    step = asyncio.run(summarizer._fold("agent", uuid4(), policy, state, head,
                                        record(story, 0, "story"), delta))
    assert len(step.text) <= policy.max_chars
    if step.story is not None:
        assert len(step.story[0]) <= policy.story_chars


def record(content: str, depth: int, level: Literal["chapter", "story"]) -> SummaryRecord:
    return SummaryRecord(id=1 if level == "chapter" else 2, parent_id=None, level=level,
                         op="fold", depth=depth, first_seq=0, last_seq=0, covered=1,
                         content=content, chars=len(content), tokens=0, source="rule",
                         facets=Facets(), status="current")


def test_a_long_summary_cannot_crowd_every_message_out_of_the_summariser() -> None:
    policy = resolve({"window_tokens": 100_000, "summarizer_window_tokens": 1024,
                      "summarizer_output_tokens": 256})
    old = " ".join(f"Entity{i} moved to city {i}." for i in range(700))  # ~4000 tokens
    delta = [(msg(i, content=f"Ana decided on plan {i}."), f"user: plan {i}") for i in range(3)]
    request = fold_input(policy, old, None, delta)
    sent = sum(count_tokens(m["content"]) for m in request.messages)
    assert request.used == 3 and sent <= 1024 - 256
    assert "Entity699" in request.messages[1]["content"]  # the newest end is kept


def test_the_summariser_output_must_leave_room_for_input() -> None:
    with pytest.raises(InvalidInputError) as bad:
        resolve({"summarizer_window_tokens": 1024, "summarizer_output_tokens": 1024})
    assert [p.field for p in bad.value.problems] == ["policy.summarizer_output_tokens"]


def test_shell_summary_reads_no_exit_code_or_error_from_ordinary_words() -> None:
    call_msg = ConvMessage(seq=0, role="assistant", content="", metadata={"tool_calls": [
        {"id": "s", "function": {"name": "bash", "arguments": '{"command": "make"}'}}]})
    output = "copied src 12 files\nbuild finished: 0 errors, 0 warnings\n3 tests failed"
    result = msg(1, "tool", output, tool_call_id="s")
    kind, text = extractive.analyze(result, call_for([call_msg, result], 1))
    assert kind == "shell" and "exit ?" in text, text
    assert "first error: 3 tests failed" in text, text
