"""Deterministic rules of fact consolidation: pure functions, no I/O.

The value rule (calibrated on STS-B train with the bundled model, see README): two
statements about the same thing are *the same fact* only if they agree on their values:
numbers, every date or time expression, quantities, prices, frequencies, positions,
negation and antonym-like qualifiers (the typed slots of ``values.value_slots``), the
proper names each mentions, and no single word swapped in the same frame.  A differing
value is an update or a contradiction, never a confirmation; differing names mean
another entity; a swapped word may be a new value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from typing import Literal
from uuid import UUID

from ..config import Settings
from ..memories.fact_key import normalize_fact
from ..memories.triggers import trigger_matches
from ..words import CLAUSE_NEGATIONS, MONTH_NAMES, TENS_WORDS, UNIT_WORDS, WEEKDAY_NAMES
from .value_words import MONTHS, NEGATING_PREFIXES, WEEKDAYS
from .values import value_slots

_TOKEN = re.compile("[A-Za-z][A-Za-z.'\u2019\\-]*[A-Za-z]|[A-Za-z]|\\d+(?:[.,:/]\\d+)*")
_NUMBER_WORDS = {w: str(i) for i, w in enumerate([*UNIT_WORDS, TENS_WORDS[0]])}
# full names; "may" is left to the capitalised-name rule (it is also a verb)
_CALENDAR = frozenset(MONTH_NAMES) - {"may"} | frozenset(WEEKDAY_NAMES)
_CALENDAR_ABBREVIATIONS = frozenset(MONTHS) | frozenset(WEEKDAYS)
_SENTENCE_STARTERS = frozenset(
    "a an the this that these those he she it they we i you there here in on at of for to "
    "and but or if when while after before as by with from his her its their our my your "
    "use always please".split())
_STOPWORDS = _SENTENCE_STARTERS | frozenset(
    "is are was were be been being has have had do does did will would shall should can "
    "could may might must also very just than then so such not no".split())

MIN_FACT_CHARS = 6
MIN_FACT_WORDS = 2

_ECHO_PATTERNS = [re.compile(p, re.I) for p in (
    r"\byou are (?:a|an) (?:helpful |friendly |personal )*(?:ai|assistant|language model|"
    r"chatbot|agent)\b",
    r"\bas an ai\b",
    r"\bignore (?:all |any )?(?:the )?(?:previous|prior|above) instructions\b",
    r"\bsystem prompt\b",
    r"\b(?:respond|reply|answer) (?:only )?(?:in|with) (?:valid )?json\b",
    r"\bextract (?:the )?(?:facts|decisions)\b",
)]


def _norm_token(token: str) -> str:
    token = token.lower().replace("\u2019", "'")
    token = token.removesuffix("'s")
    return token.replace(".", "").replace("-", "")


@dataclass(frozen=True, slots=True)
class Values:
    """What a statement commits to: its tokens, numbers and dates, names, negation."""

    tokens: frozenset[str]
    numbers: frozenset[str]
    names: frozenset[str]
    negated: bool


@lru_cache(maxsize=4096)  # a relation reads each side several times
def analyse(text: str) -> Values:
    raw = _TOKEN.findall(text)
    words = [t for t in raw if not t[0].isdigit()]
    capitalised = sum(1 for w in words if w[0].isupper())
    title_case = len(words) >= 4 and capitalised / len(words) > 0.6  # headlines: caps say little
    numbers: set[str] = set()
    names: set[str] = set()
    negated = False
    for index, token in enumerate(raw):
        low = token.lower()
        if low.endswith("n't") or low in CLAUSE_NEGATIONS:
            negated = True
        if token[0].isdigit():
            numbers.add(token.replace(",", ""))
        elif low in _NUMBER_WORDS:
            numbers.add(_NUMBER_WORDS[low])
        elif low in _CALENDAR:
            numbers.add(low)
        elif low.rstrip(".").removesuffix("s") in _CALENDAR_ABBREVIATIONS:
            continue  # "Tue", "Sept.": a value slot (values.py), not a name
        elif (token[0].isupper() and len(token) > 1 and not title_case
              and not (index == 0 and low in _SENTENCE_STARTERS)):
            names.add(_norm_token(token))
    return Values(tokens=frozenset(_norm_token(t) for t in raw), numbers=frozenset(numbers),
                  names=frozenset(names), negated=negated)


# ---------------------------------------------------------------------- value slots

_LETTERS = re.compile(r"[A-Za-z]+")

# kinds a single word can spell in several ways ("Sept" / "September", "ten" / "10")
SPELLED_KINDS = frozenset("month weekday season daypart number year ordinal time "
                          "frequency".split())
NUMERIC_KINDS = frozenset(
    "time day month year date price quantity duration number relative frequency "
    "ordinal".split())


def same_numbers(new: str, old: str) -> bool:
    """Whether two statements state the same numeric values once normalised ("18:00" /
    "6 pm", "$85k" / "$85,000", "eleven hours" / "11 hours")."""
    a, b = value_slots(new), value_slots(old)
    return ({k: v for k, v in a.items() if k in NUMERIC_KINDS}
            == {k: v for k, v in b.items() if k in NUMERIC_KINDS})


def changed_values(new: str, old: str) -> list[str]:
    """The kinds of value two statements both state and disagree on (polarity and tense
    always count; ``[]``: no value changed).  Antonyms by prefix count too: "likes" /
    "dislikes", "available" / "unavailable"."""
    a, b = value_slots(new), value_slots(old)
    changed = [kind for kind in sorted(a.keys() & b.keys()) if a[kind] != b[kind]]
    for kind in ("polarity", "tense"):
        if (kind in a) != (kind in b):
            changed.append(kind)
    if _prefix_antonyms(new, old):
        changed.append("antonym")
    return changed


def _prefix_antonyms(new: str, old: str) -> bool:
    a = {w.lower() for w in _LETTERS.findall(new)}
    b = {w.lower() for w in _LETTERS.findall(old)}
    only_a, only_b = a - b, b - a
    return any(x.startswith(p) and len(x) - len(p) >= 4 and x[len(p):] in other
               for mine, other in ((only_a, only_b), (only_b, only_a))
               for x in mine for p in NEGATING_PREFIXES)


Relation = Literal["compatible", "numbers", "negation", "values", "names", "substitution"]
# relations that mean the same attribute took another value: never merged or confirmed
VALUE_CHANGES: frozenset[Relation] = frozenset({"numbers", "negation", "values"})

_VERB_FORMS = ("ing", "ed")


def relation(new: str, old: str) -> Relation:
    """How two similar statements relate by their values (see the module docstring).

    ``substitution``: the same frame with exactly one other content word on each side
    ("favourite colour is blue" / "... green", "tea" / "coffee"): a changed value or a
    synonym, which no rule can tell apart, so it is never confirmed by the rule.  Two
    verb forms ("slicing" / "cutting") count as rephrasing.
    """
    a, b = analyse(new), analyse(old)
    if a.negated != b.negated:
        return "negation"
    if a.numbers and b.numbers and a.numbers != b.numbers and not same_numbers(new, old):
        return "numbers"
    if _unknown_names(a, b) and _unknown_names(b, a):
        return "names"
    if changed_values(new, old):
        return "values"
    if _substitution(new, old):
        return "substitution"
    return "compatible"


def _unknown_names(a: Values, b: Values) -> set[str]:
    """Names of ``a`` that ``b`` does not mention, spelling variants of its names forgiven
    (a variant of any other word is not the name: "Ririba" is not the "ririra" of the
    other sentence's job)."""
    return {n for n in a.names if n not in b.tokens
            and not any(_variant(n, t) for t in b.names)}


def _variant(x: str, y: str) -> bool:
    """Australia / Australian, Mursi / Morsi: one is a prefix, or one letter differs."""
    if x.startswith(y) or y.startswith(x):
        return min(len(x), len(y)) >= 4
    if min(len(x), len(y)) < 5 or abs(len(x) - len(y)) > 1:
        return False
    return sum(p != q for p, q in zip(x, y, strict=False)) + abs(len(x) - len(y)) <= 1


def _substitution(new: str, old: str) -> bool:
    a, b = content_words(new), content_words(old)
    only_a, only_b = a - b, b - a
    if len(only_a) != 1 or len(only_b) != 1 or not a & b:
        return False
    x, y = next(iter(only_a)), next(iter(only_b))
    if _spelled_value(x) and _spelled_value(x) == _spelled_value(y):
        return False  # two spellings of one value: "September" / "Sept", "6" / "six"
    return not (x.endswith(_VERB_FORMS) and y.endswith(_VERB_FORMS))


def _spelled_value(word: str) -> dict[str, frozenset[str]]:
    """The calendar, time or number a single word spells (not its stance or polarity)."""
    return {kind: v for kind, v in value_slots(word.capitalize()).items()
            if kind in SPELLED_KINDS}


def content_words(text: str) -> set[str]:
    return {t for t in analyse(text).tokens if t not in _STOPWORDS}


def more_specific(new: str, old: str) -> bool:
    """Keep the wording that says more: strictly more distinct content words."""
    return len(content_words(new)) > len(content_words(old))


def rejection_reason(content: str, instructions: str | None = None) -> str | None:
    """Why a text cannot be a fact, or None: too short, or an echo of instructions."""
    if not content.strip():
        return "empty"
    if len(content.strip()) < MIN_FACT_CHARS or len(content.split()) < MIN_FACT_WORDS:
        return f"too short (a fact needs {MIN_FACT_WORDS}+ words and {MIN_FACT_CHARS}+ chars)"
    if any(p.search(content) for p in _ECHO_PATTERNS):
        return "echo of instructions (it describes the assistant's prompt, not the world)"
    if instructions and _echoes(content, instructions):
        return "echo of instructions (it restates the prompt it was extracted with)"
    return None


def _echoes(content: str, instructions: str) -> bool:
    words = content_words(content)
    if len(words) < 3:
        return normalize_fact(content) in normalize_fact(instructions)
    return len(words & content_words(instructions)) / len(words) >= 0.8


def censor_matches(trigger_pattern: str, content: str) -> bool:
    """A censor's trigger is a /regex/ (case-insensitive, RE2) or a phrase matched as words."""
    return trigger_matches(trigger_pattern, content)


# ---------------------------------------------------------------------- deciding


class Verdict(StrEnum):
    """The LLM classifier's answer for one candidate."""

    SAME = "same"
    UPDATE = "update"
    REFINE = "refine"
    CONTRADICT = "contradict"
    UNRELATED = "unrelated"


@dataclass(frozen=True, slots=True, kw_only=True)
class Thresholds:
    """Raw cosine thresholds, candidate <= rule <= confirm (checked at start)."""

    confirm: float
    rule: float
    candidate: float

    @classmethod
    def from_settings(cls, s: Settings) -> Thresholds:
        return cls(confirm=s.fact_confirm_threshold, rule=s.fact_rule_threshold,
                   candidate=s.fact_candidate_threshold)

    def __post_init__(self) -> None:
        if not 0.0 < self.candidate <= self.rule <= self.confirm <= 1.0:
            raise ValueError(
                "fact thresholds must satisfy 0 < candidate <= rule <= confirm <= 1 "
                f"(got candidate={self.candidate}, rule={self.rule}, confirm={self.confirm})")


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    id: UUID
    content: str
    cosine: float
    slot: str | None = None  # "subject|attribute" when it fills one


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """What to do with a new fact.  ``action`` is confirm | merge | supersede | create |
    ask (an LLM verdict is needed for ``ask`` first)."""

    action: Literal["confirm", "merge", "supersede", "create", "ask"]
    target: Candidate | None = None
    decided_by: Literal["similarity", "rule", "llm"] = "similarity"
    flagged: tuple[Candidate, ...] = field(default_factory=tuple)
    ask: tuple[Candidate, ...] = field(default_factory=tuple)


def decide(content: str, candidates: list[Candidate], thresholds: Thresholds, *,
           llm_available: bool, verdicts: dict[UUID, Verdict] | None = None,
           slot: str | None = None) -> Plan:
    """Choose an action from the nearest active facts (most similar first).  A fact of
    another slot (another subject, or another attribute) is never the same fact, however
    close the wording ("Dev's sister Kalopa works as ..." / "... Ririba works as ...")."""
    near = [c for c in candidates if c.cosine >= thresholds.candidate
            and (slot is None or c.slot is None or c.slot == slot)]
    band = [c for c in near if c.cosine < thresholds.confirm]
    if llm_available and verdicts is None and band and not any(
            c.cosine >= thresholds.confirm and relation(content, c.content) != "names"
            for c in near):
        return Plan(action="ask", ask=tuple(band), decided_by="llm")
    flagged: list[Candidate] = []
    for cand in sorted(near, key=lambda c: -c.cosine):
        if verdicts is not None and cand.id in verdicts:
            plan = _from_verdict(content, cand, verdicts[cand.id])
        elif cand.cosine >= thresholds.confirm:
            plan = _from_values(content, cand, "similarity")
        elif cand.cosine >= thresholds.rule:
            plan = _from_values(content, cand, "rule")
        else:
            plan = None  # in doubt: kept side by side and flagged
        if plan is not None:
            return plan
        if verdicts is None or verdicts.get(cand.id) is not Verdict.UNRELATED:
            flagged.append(cand)
    return Plan(action="create", flagged=tuple(flagged),
                decided_by="llm" if verdicts else "rule")


def _from_values(content: str, cand: Candidate,
                 decided_by: Literal["similarity", "rule"]) -> Plan | None:
    rel = relation(content, cand.content)
    if rel == "compatible":
        action: Literal["confirm", "merge"] = (
            "merge" if more_specific(content, cand.content) else "confirm")
        return Plan(action=action, target=cand, decided_by=decided_by)
    if rel in VALUE_CHANGES:
        return Plan(action="supersede", target=cand, decided_by=decided_by)
    if rel == "substitution" and decided_by == "similarity":
        # near-identical sentences (cosine >= confirm): a rewording, not a new value
        return Plan(action="confirm", target=cand, decided_by=decided_by)
    return None  # another entity, or a changed value the rule cannot tell: keep both, flagged


def _from_verdict(content: str, cand: Candidate, verdict: Verdict) -> Plan | None:
    if verdict in (Verdict.SAME, Verdict.REFINE) and relation(
            content, cand.content) in VALUE_CHANGES:
        verdict = Verdict.UPDATE  # a changed value is never merged
    if verdict is Verdict.SAME:
        return Plan(action="confirm", target=cand, decided_by="llm")
    if verdict is Verdict.REFINE:
        action: Literal["confirm", "merge"] = (
            "merge" if more_specific(content, cand.content) else "confirm")
        return Plan(action=action, target=cand, decided_by="llm")
    if verdict in (Verdict.UPDATE, Verdict.CONTRADICT):
        return Plan(action="supersede", target=cand, decided_by="llm")
    return None
