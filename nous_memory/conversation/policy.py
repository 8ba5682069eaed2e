"""The summary policy and the pure decision of when to fold what.

Knobs resolve in order: code defaults < ``Settings.conversation_policy_json`` < the
agent's stored policy < per-call overrides; :func:`resolve` validates and clamps once.
:func:`should_summarize` does no I/O: given the policy, the messages past the watermark
and a little state, it returns the decision, the delta to fold and the reasons.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import FieldProblem, InvalidInputError
from .pairs import ConvMessage, safe_cut

Mode = Literal["auto", "llm", "rule"]
TargetUnit = Literal["tokens", "words"]
MIN_CHARS = 100
MIN_WINDOW_TOKENS = 256
CHARS_PER_TOKEN = 4  # only to turn the window share into a character cap; prompts count exactly


@dataclass(frozen=True, slots=True, kw_only=True)
class Policy:
    """Every knob of rolling summaries (see README, "Working memory")."""

    mode: Mode = "auto"  # auto: the LLM when one is configured, else rules
    # the conversing model's context window; build_prompt takes its budget as the window
    # when no layer sets this knob
    window_tokens: int = 8192
    trigger_messages: int = 60  # unfolded messages; 0 turns this trigger off
    trigger_words: int = 3000  # unfolded words; 0 turns this trigger off
    trigger_token_ratio: float = 0.8
    reset_token_ratio: float = 0.7
    emergency_ratio: float = 1.0
    min_messages: int = 12
    protect_tail: int = 6
    cooldown_messages: int = 4
    target: int = 600  # what the LLM is asked to stay under
    target_unit: TargetUnit = "tokens"
    summary_max_chars: int = 12_000
    target_chars: int = 9_000
    max_chain_depth: int = 3
    summary_window_share: float = 0.10
    summarizer_window_tokens: int = 8192  # the summarising call's own window
    summarizer_output_tokens: int = 1024
    breaker_failures: int = 3
    breaker_cooldown_s: float = 60.0
    chapter_messages: int = 400  # a chapter closes into the story after this many messages

    @property
    def max_chars(self) -> int:
        """The summary's hard size: ``summary_max_chars`` and the window share, whichever
        is smaller (never below 100)."""
        share = math.floor(self.summary_window_share * self.window_tokens * CHARS_PER_TOKEN)
        return max(MIN_CHARS, min(self.summary_max_chars, share))

    @property
    def goal_chars(self) -> int:
        """Where compaction aims: ``target_chars`` scaled like ``max_chars``."""
        scaled = math.floor(self.target_chars * self.max_chars / self.summary_max_chars)
        return max(MIN_CHARS, min(scaled, self.max_chars))

    @property
    def story_chars(self) -> int:
        """The story level (summary of chapters) stays under this, however many chapters."""
        return max(MIN_CHARS, self.goal_chars // 3)

    @property
    def summary_token_cap(self) -> int:
        return max(1, math.floor(self.summary_window_share * self.window_tokens))

    def target_text(self) -> str:
        """The size the LLM is asked for: ``target``, but never more than the summary's
        share of the window allows (a word is taken as 4/3 tokens)."""
        cap = self.summary_token_cap if self.target_unit == "tokens" else (
            self.summary_token_cap * 3 // 4)
        return f"{max(1, min(self.target, cap))} {self.target_unit}"


KNOBS = {f.name: f for f in dataclasses.fields(Policy)}
_INT_MIN = {"window_tokens": MIN_WINDOW_TOKENS, "trigger_messages": 0, "trigger_words": 0,
            "min_messages": 0, "protect_tail": 0, "cooldown_messages": 0, "target": 1,
            "summary_max_chars": MIN_CHARS, "target_chars": MIN_CHARS, "max_chain_depth": 1,
            "summarizer_window_tokens": 512, "summarizer_output_tokens": 64,
            "breaker_failures": 1, "chapter_messages": 0}
_CLAMPED = {"summary_max_chars", "target_chars"}  # too long a target is clamped, not refused


def resolve(*layers: Mapping[str, Any] | None) -> Policy:
    """Merge knob layers (later wins) into a valid Policy; bad values name their knob."""
    values: dict[str, Any] = {}
    problems: list[FieldProblem] = []
    for layer in layers:
        if layer is not None and not isinstance(layer, Mapping):
            raise InvalidInputError.single("policy", "must be an object of knobs")
        for key, value in (layer or {}).items():
            if key not in KNOBS:
                problems.append(FieldProblem(f"policy.{key}", "unknown knob"))
            elif value is not None:
                values[key] = value
    for key, value in list(values.items()):
        checked = _check(key, value)
        if isinstance(checked, FieldProblem):
            problems.append(checked)
        else:
            values[key] = checked
    if problems:
        raise InvalidInputError(problems)
    policy = Policy(**values)
    limit = max(MIN_CHARS, policy.summary_max_chars)
    policy = dataclasses.replace(policy, summary_max_chars=limit,
                                 target_chars=min(max(MIN_CHARS, policy.target_chars), limit))
    if policy.summarizer_output_tokens * 2 > policy.summarizer_window_tokens:
        raise InvalidInputError.single(
            "policy.summarizer_output_tokens", "must be at most half of "
            f"summarizer_window_tokens ({policy.summarizer_window_tokens}), so that the "
            "summarising call has room for its input")
    if not 0 < policy.reset_token_ratio <= policy.trigger_token_ratio <= policy.emergency_ratio:
        raise InvalidInputError.single(
            "policy.reset_token_ratio", "needs 0 < reset_token_ratio <= trigger_token_ratio "
            f"<= emergency_ratio (got {policy.reset_token_ratio}, "
            f"{policy.trigger_token_ratio}, {policy.emergency_ratio})")
    return policy


def _check(key: str, value: Any) -> Any:
    field = f"policy.{key}"
    if key == "mode":
        return value if value in ("auto", "llm", "rule") else FieldProblem(
            field, "must be auto, llm or rule")
    if key == "target_unit":
        return value if value in ("tokens", "words") else FieldProblem(
            field, "must be tokens or words")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return FieldProblem(field, "must be a number")
    if isinstance(value, float) and not math.isfinite(value):
        return FieldProblem(field, "must be a finite number")
    if key in _INT_MIN:
        if value != int(value):
            return FieldProblem(field, "must be a whole number")
        if key in _CLAMPED:
            return max(MIN_CHARS, int(value))
        if value < _INT_MIN[key] or value > 10_000_000:
            return FieldProblem(field, f"must be between {_INT_MIN[key]} and 10000000")
        return int(value)
    if key == "emergency_ratio":
        return float(value) if 1.0 <= value <= 10 else FieldProblem(field, "must be >= 1.0")
    if key == "summary_window_share":
        return float(value) if 0 < value <= 0.5 else FieldProblem(
            field, "must be in (0, 0.5]")
    if key == "breaker_cooldown_s":
        return float(value) if 0 <= value <= 86_400 else FieldProblem(
            field, "must be between 0 and 86400 seconds")
    return float(value) if 0 < value <= 10 else FieldProblem(field, "must be in (0, 10]")


def as_dict(policy: Policy) -> dict[str, Any]:
    return dataclasses.asdict(policy)


# ---------------------------------------------------------------------- the decision


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    summarize: bool
    fold: tuple[ConvMessage, ...]  # the delta: past the watermark, minus the protected tail
    reasons: tuple[str, ...]
    ratio: float  # (summary + unfolded + extra tokens) / window
    armed: bool  # hysteresis state after this decision
    emergency: bool = False


def should_summarize(policy: Policy, unfolded: Sequence[ConvMessage], *, summary_tokens: int,
                     since_last_fold: int, armed: bool, extra_tokens: int = 0,
                     force: bool = False) -> Decision:
    """Pure: whether to fold now, which messages, and why.

    Triggers (any): unfolded messages >= trigger_messages, unfolded words >=
    trigger_words, token ratio >= trigger_token_ratio.  Hysteresis: ``armed`` says the
    token trigger fired and usage has not fallen below reset_token_ratio since; while so,
    the token trigger does not fire again (whatever the ratio, short of an emergency),
    and once usage is under the reset ratio it is ready again.  min_messages and
    cooldown_messages then hold it back, except in an emergency
    (ratio >= emergency_ratio), which ignores both.  ``force`` skips triggers and holds.
    The delta leaves the newest ``protect_tail`` messages and never ends between a tool
    call and its result.
    """
    used = summary_tokens + extra_tokens + sum(m.tokens for m in unfolded)
    ratio = used / policy.window_tokens
    latched = armed and ratio >= policy.reset_token_ratio
    emergency = ratio >= policy.emergency_ratio
    reasons: list[str] = []
    words = sum(m.words for m in unfolded)
    if force:
        reasons.append("forced")
    if policy.trigger_messages and len(unfolded) >= policy.trigger_messages:
        reasons.append(f"messages: {len(unfolded)} unfolded >= {policy.trigger_messages}")
    if policy.trigger_words and words >= policy.trigger_words:
        reasons.append(f"words: {words} unfolded >= {policy.trigger_words}")
    over = ratio >= policy.trigger_token_ratio
    held = (f"tokens: ratio {ratio:.2f}, no trigger until under the reset ratio "
            f"{policy.reset_token_ratio} (hysteresis: fired already)")
    if over and not latched:
        reasons.append(f"tokens: ratio {ratio:.2f} >= {policy.trigger_token_ratio}")

    def no(reason: str) -> Decision:
        notes = (*reasons, held) if latched else tuple(reasons)
        return Decision(summarize=False, fold=(), reasons=(*notes, reason), ratio=ratio,
                        armed=latched, emergency=emergency)

    if not reasons and not emergency:
        return no(f"no trigger: {len(unfolded)} messages, {words} words, ratio {ratio:.2f}")
    if emergency:
        reasons.append(f"emergency: ratio {ratio:.2f} >= {policy.emergency_ratio} ignores "
                       "cooldown and min_messages")
    elif not force:
        if len(unfolded) < policy.min_messages:
            return no(f"held: {len(unfolded)} unfolded < min_messages {policy.min_messages}")
        if since_last_fold < policy.cooldown_messages:
            return no(f"held: cooldown, {since_last_fold} new messages since the last fold "
                      f"< {policy.cooldown_messages}")
    wanted = len(unfolded) - policy.protect_tail
    cut = safe_cut(unfolded, wanted)
    if cut < wanted:
        reasons.append(f"cut moved back {wanted - cut} message(s) to keep a tool call with "
                       "its result")
    if cut <= 0:
        return no(f"nothing to fold: the {len(unfolded)} unfolded message(s) are the "
                  "protected tail")
    # a fold made while usage is over the trigger ratio is the token trigger firing
    return Decision(summarize=True, fold=tuple(unfolded[:cut]), reasons=tuple(reasons),
                    ratio=ratio, armed=latched or over, emergency=emergency)
