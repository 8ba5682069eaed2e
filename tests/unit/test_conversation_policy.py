"""Working memory without a database: the pure decision, tool pairs, tool summaries and
the size guarantee of rule summaries."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nous_memory.conversation import extractive
from nous_memory.conversation.pairs import ConvMessage, call_for, pair_index, safe_cut
from nous_memory.conversation.policy import resolve, should_summarize
from nous_memory.conversation.toolsum import summarize_tool
from nous_memory.errors import InvalidInputError


def msg(seq: int, role: str = "user", content: str = "hello there", tokens: int = 10,
        **extra: Any) -> ConvMessage:
    return ConvMessage(seq=seq, role=role, content=content, tokens=tokens, **extra)


def call(seq: int, call_id: str, name: str = "bash", args: str = "{}") -> ConvMessage:
    return msg(seq, "assistant", "", metadata={"tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}]})


def result(seq: int, call_id: str | None, content: str = "ok") -> ConvMessage:
    return msg(seq, "tool", content, tool_call_id=call_id)


QUIET = {"trigger_messages": 0, "trigger_words": 0, "window_tokens": 1000,
         "min_messages": 4, "protect_tail": 2, "cooldown_messages": 3}


def test_tool_pair_is_never_split_at_the_cut() -> None:
    # 10 messages, protect_tail 2 -> the cut would fall between the call (7) and its result (8)
    messages = [msg(i) for i in range(7)] + [call(7, "c1"), result(8, "c1"), msg(9)]
    policy = resolve({"trigger_messages": 5, "protect_tail": 2, "min_messages": 1})
    decision = should_summarize(policy, messages, summary_tokens=0, since_last_fold=10,
                                armed=False)
    assert decision.summarize
    assert [m.seq for m in decision.fold] == list(range(7))  # the call stays with its result
    assert any("tool call" in r for r in decision.reasons)
    # parallel calls: one assistant message, two results; any cut inside is moved back
    parallel = [msg(0), msg(1, "assistant", "", metadata={"tool_calls": [
        {"id": "a", "function": {"name": "grep", "arguments": "{}"}},
        {"id": "b", "function": {"name": "read_file", "arguments": "{}"}}]}),
        result(2, "b"), result(3, "a"), msg(4)]
    assert safe_cut(parallel, 3) == 1 and safe_cut(parallel, 4) == 4
    # legacy: a result without an id belongs to the function call right before it
    legacy = [msg(0), msg(1, "assistant", "", metadata={"function_call": {"name": "ls"}}),
              result(2, None), msg(3)]
    assert pair_index(legacy) == {2: 1} and safe_cut(legacy, 2) == 1


def test_cooldown_hysteresis_and_emergency() -> None:
    policy = resolve(QUIET)
    eight = [msg(i, tokens=100) for i in range(8)]  # 800 tokens of a 1000 window: 0.8
    fired = should_summarize(policy, eight, summary_tokens=0, since_last_fold=8, armed=False)
    assert fired.summarize and fired.armed and len(fired.fold) == 6
    # cooldown: only 2 new messages since the last fold holds it back
    held = should_summarize(policy, eight, summary_tokens=0, since_last_fold=2, armed=False)
    assert not held.summarize and "cooldown" in held.reasons[-1]
    # a trigger held back by the cooldown did not fire: nothing is latched
    assert not held.armed
    # below the reset ratio nothing is latched
    low = should_summarize(policy, [msg(i, tokens=60) for i in range(10)], summary_tokens=0,
                           since_last_fold=10, armed=True)
    assert not low.summarize and not low.armed
    # emergency (>= 1.0) ignores the cooldown (and min_messages)
    huge = [msg(0, tokens=700), msg(1, tokens=200), msg(2, tokens=150)]
    urgent = should_summarize(policy, huge, summary_tokens=0, since_last_fold=0, armed=False)
    assert urgent.summarize and urgent.emergency and [m.seq for m in urgent.fold] == [0]
    # min_messages holds a non-emergency trigger back
    few = should_summarize(resolve({**QUIET, "min_messages": 20}), eight, summary_tokens=0,
                           since_last_fold=8, armed=False)
    assert not few.summarize and "min_messages" in few.reasons[-1]


def test_token_trigger_hysteresis_fires_once_until_below_the_reset_ratio() -> None:
    """Once the token trigger fired, it does not fire again while usage stays at or above
    the reset ratio (0.7), even back over the trigger ratio (0.8); under the reset it is
    ready again.  Other triggers and the emergency are not held by it."""
    policy = resolve(QUIET)

    def at(tokens: int, *, armed: bool, count: int = 8, **extra: Any) -> Any:
        messages = [msg(i, tokens=tokens // count) for i in range(count)]
        return should_summarize(resolve({**QUIET, **extra}) if extra else policy, messages,
                                summary_tokens=0, since_last_fold=count, armed=armed)

    fired = at(800, armed=False)
    assert fired.summarize and fired.armed
    # the fold left usage between the ratios: no trigger, still latched
    between = at(760, armed=True)
    assert not between.summarize and between.armed
    assert any("hysteresis" in r for r in between.reasons)
    # back over the trigger ratio without having fallen below the reset: still no trigger
    again = at(880, armed=True)
    assert not again.summarize and again.armed
    # under the reset ratio the latch opens, and the next crossing fires again
    reset = at(640, armed=True)
    assert not reset.summarize and not reset.armed
    assert at(800, armed=reset.armed).summarize
    # the emergency ratio ignores the latch; so does a message-count trigger
    assert at(1040, armed=True).summarize
    counted = at(880, armed=True, trigger_messages=8)
    assert counted.summarize and counted.armed and counted.reasons[0].startswith("messages")


def test_message_and_word_triggers_and_protected_tail() -> None:
    policy = resolve({**QUIET, "trigger_messages": 6})
    out = should_summarize(policy, [msg(i) for i in range(6)], summary_tokens=0,
                           since_last_fold=6, armed=False)
    assert out.summarize and [m.seq for m in out.fold] == [0, 1, 2, 3]
    words = resolve({**QUIET, "trigger_words": 20})
    out = should_summarize(words, [msg(i, content="one two three four five") for i in range(4)],
                           summary_tokens=0, since_last_fold=4, armed=False)
    assert out.summarize and out.reasons[0].startswith("words")
    tail_only = should_summarize(resolve({**QUIET, "protect_tail": 10}),
                                 [msg(i, tokens=100) for i in range(8)], summary_tokens=0,
                                 since_last_fold=8, armed=False)
    assert not tail_only.summarize and "protected tail" in tail_only.reasons[-1]


def test_policy_clamps_and_refuses() -> None:
    policy = resolve({"summary_max_chars": 20, "target_chars": 50_000})
    assert policy.summary_max_chars == 100 and policy.target_chars == 100
    policy = resolve({"summary_max_chars": 5000, "target_chars": 9000})
    assert policy.target_chars == 5000
    with pytest.raises(InvalidInputError) as bad:
        resolve({"protect_tail": -1, "colour": "red", "mode": "magic"})
    fields = {p.field for p in bad.value.problems}
    assert fields == {"policy.protect_tail", "policy.colour", "policy.mode"}
    with pytest.raises(InvalidInputError, match="reset_token_ratio"):
        resolve({"reset_token_ratio": 0.9, "trigger_token_ratio": 0.8})


def test_tool_results_are_summarized_by_kind() -> None:
    source = "def load(path):\n    pass\n\nclass Store:\n    pass\n"
    read = [call(0, "r", "read_file", '{"path": "src/app/store.py"}'), result(1, "r", source)]
    assert extractive.analyze(read[1], call_for(read, 1))[1] == (
        "[tool read_file] read src/app/store.py: 5 lines, py; defines load, Store")
    shell = [call(0, "s", "bash", '{"command": "make test"}'),
             result(1, "s", "building\nerror: missing header foo.h\nexit code: 2")]
    kind, text = extractive.analyze(shell[1], call_for(shell, 1))
    assert kind == "shell" and "`make test`: exit 2, 3 output lines" in text
    assert "first error: error: missing header foo.h" in text
    grep = [call(0, "g", "grep", '{"pattern": "TODO"}'),
            result(1, "g", "a.py:1: TODO x\na.py:9: TODO y\nb.py:3: TODO z")]
    kind, text = extractive.analyze(grep[1], call_for(grep, 1))
    assert kind == "search" and "3 matches in 2 files; top: a.py (2), b.py (1)" in text
    edit = [call(0, "e", "edit_file", '{"path": "x.md"}'),
            result(1, "e", "--- a/x.md\n+++ b/x.md\n+new line\n+another\n-old")]
    assert extractive.analyze(edit[1], call_for(edit, 1))[1].endswith("changed x.md: +2/-1 lines")
    other = summarize_tool(msg(1, "tool", "sunny, 21C\nwind 3 km/h", name="weather"), None)
    assert other == ("default", "[tool weather] weather: sunny, 21C (2 lines, 22 chars)")


def test_extractive_rule_keeps_names_and_numbers() -> None:
    text = ("Well, it was a long day. I met Priya at the Lisbon office at 9. "
            "We talked about things. Then lunch was fine, nothing special really. " * 3)
    kept = extractive.extract(text, 120)
    assert len(kept) <= 120 and "Priya" in kept and "Lisbon" in kept
    assert extractive.analyze(msg(0, content="   "), None) == ("empty", "")


@settings(max_examples=150, deadline=None)
@given(old=st.text(max_size=3000), lines=st.lists(st.text(max_size=600), max_size=30),
       max_chars=st.integers(min_value=-50, max_value=5000),
       target=st.integers(min_value=-50, max_value=9000),
       window=st.integers(min_value=256, max_value=40_000))
def test_summary_length_never_exceeds_max(old: str, lines: list[str], max_chars: int,
                                          target: int, window: int) -> None:
    policy = resolve({"summary_max_chars": max_chars, "target_chars": target,
                      "window_tokens": window})
    analyses = [extractive.analyze(msg(i, content=t), None)[1] for i, t in enumerate(lines)]
    folded = extractive.append(old, analyses)
    if len(folded) > policy.max_chars:
        folded = extractive.fit_summary(folded, policy.goal_chars, policy.summary_token_cap)
    assert len(folded) <= policy.max_chars <= max(100, max_chars)
