"""The newest telling first: when a person says again what a question asks about ("I've put
in 10-12 hours on the sculpture now", after "I've spent 5-6 hours on it"), the later
statement is the one that holds, even where no rule read a slot from either.

Two statements tell one thing again when both are a person's own (not the assistant's,
not a bare question; an episode's summary tells what its person said), the later holds
most of the query words the earlier holds (the speaker's own name aside), and a query
word carries a value in both, told differently: a number, an ordinal or a time, or a
name-like word, within a few words of it ("5-6 *hours*" / "10-12 *hours*", "my third
*issue*" / "my fifth *issue*", "Premier Silver *status*" / "Premier Gold *status*").  And
the question asks how things stand: a present-tense question ("How many bikes do I
own?") or one naming the present or the past value ("current", "previous", "used to").
A question about one past event ("When did I go to Paris?") keeps the ranking's order.

Measured (dev files): LongMemEval knowledge-update newest-first 11 -> 16 of 17;
LoCoMo recall@10 (categories 1-4) 0.7654 -> 0.7657.  Without the value condition the
same rule moved every later mention of the query's words first: LoCoMo 0.7654 -> 0.7021,
where questions about enduring things are answered by their first telling.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ..facts.value_words import NUMBER_WORDS

Row = Mapping[str, Any]

_STATE_WORDS = re.compile(
    r"\b(?:current|currently|now|nowadays|these days|at the moment|still|any ?more|"
    r"previous|previously|before|used to|latest|most recent|most recently|so far|"
    r"usually|normally|typically)\b", re.IGNORECASE)
# an auxiliary, or "who" (or "which" and a noun) and its own verb in the present ("Who
# owns ...?", "Which bus stops ...?") or the past ("Who moved ...?")
_PRESENT = re.compile(r"\b(?:do|does|am|is|are|have|has|'s|'re|'ve)\b|^\W*(?:who|(?:what|which)"
                      r"\s+[a-z]+)\s+(?!(?:was|has|is|does|this|us|its|his)\b)[a-z]+[^s\W]s\b",
                      re.IGNORECASE)
_PAST = re.compile(r"\b(?:did|was|were|had)\b|^\W*who\s+[a-z]+ed\b", re.IGNORECASE)


# "our previous conversation" names a talk, not a value; "in total" sums the tellings
# (12 rare figurines, 57 rare records, ...), none of which replaces another
_TALK = re.compile(r"\b(?:previous|earlier|last|past|before|other)\s+(?:conversations?|chats?|"
                   r"sessions?|discussions?|talks?|messages?)\b", re.IGNORECASE)
_SUM = re.compile(r"\b(?:in total|total|altogether|all together|combined|in all|sum)\b",
                  re.IGNORECASE)


def asks_how_things_stand(query: str) -> bool:
    """Whether the question is about a state (how things stand, or stood before the
    present value) rather than one past event or a sum of parts: a state word, or a
    present-tense verb before any past-tense one; never a question for a total."""
    if _SUM.search(query):
        return False
    query = _TALK.sub(" ", query)
    if _STATE_WORDS.search(query):
        return True
    present, past = _PRESENT.search(query), _PAST.search(query)
    return present is not None and (past is None or present.start() < past.start())


def _topic(row: Row, speaker: str) -> frozenset[str]:
    """The query's lexemes the row itself holds: not a chunk's context words ('~'), not
    the speaker's own name (every turn of theirs holds it)."""
    names = speaker.split()
    return frozenset(
        lexeme for lexeme in row.get("lexemes") or ()
        if not lexeme.startswith("~") and not any(n.startswith(lexeme) for n in names))


def _retells(newer: frozenset[str], older: frozenset[str]) -> bool:
    """The newer statement holds most of the query words the older one holds (all of
    them when there are only one or two)."""
    if not older:
        return False
    shared = len(newer & older)
    return shared >= (len(older) if len(older) <= 2 else math.ceil(2 * len(older) / 3))


# the value patterns' number words (cardinals, dozen, once, ...), ordinals of a count
_NUMBER_WORDS = frozenset(NUMBER_WORDS) | frozenset(
    "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth "
    "half".split())
_NUMERIC = re.compile(r"^[$€£]?\d[\d,.:/-]*(?:am|pm|st|nd|rd|th|s|k|h|x|%)?$")
_EDGE = ".,!?;:()[]\"'…-—"
NEAR = 3  # words between a query word and the value it carries


def _value(token: str, previous: str, asked: frozenset[str], names: frozenset[str]) -> bool:
    """A token that states a value: a number (in digits or words, an ordinal, a time) or
    a name-like word inside a sentence that the question does not hold ("Premier *Gold*
    status")."""
    low = token.lower()
    if _NUMERIC.match(low) or low in _NUMBER_WORDS:
        return True
    return (token[:1].isupper() and len(token) > 1 and previous != ""
            and previous[-1:] not in ".!?:" and low not in names
            and not low.startswith("i'") and low != "i"
            and not any(low.startswith(term) for term in asked))


def valued_mentions(body: str, asked: frozenset[str],
                    names: frozenset[str] = frozenset()) -> dict[str, frozenset[str]]:
    """Per query word the body holds, the values said within ``NEAR`` words of it."""
    raw = body.split()
    lows = [t.strip(_EDGE).lower() for t in raw]
    terms = tuple(asked)
    out: dict[str, set[str]] = {}
    for i, low in enumerate(lows):
        if not low.startswith(terms):
            continue
        for j in range(max(0, i - NEAR), min(len(lows), i + NEAR + 1)):
            if j != i and lows[j] and _value(raw[j].strip(_EDGE), raw[j - 1] if j else "",
                                             asked, names):
                for term in terms:
                    if low.startswith(term):
                        out.setdefault(term, set()).add(lows[j])
    return {term: frozenset(v) for term, v in out.items()}


def _restates(newer: dict[str, frozenset[str]], older: dict[str, frozenset[str]]) -> bool:
    """A query word carries a value in both, and the values differ: the same thing told
    with another value."""
    return any(term in newer and newer[term] != values for term, values in older.items())


def newest_telling_first(rows: list[Row], query: str, asked: frozenset[str],
                         statements: Sequence[tuple[str, str, bool]]) -> list[Row]:
    """Each statement goes before the earlier statements it retells.  ``asked``: the
    query's terms (``truncation.query_terms``); ``statements``: per row, its speaker
    (lowercased, '' when not a turn), its words without the speaker, and whether it is a
    statement of a person's own (neither the assistant's nor a bare question)."""
    if not query or not asks_how_things_stand(query):
        return rows
    told: list[tuple[int, datetime, frozenset[str], dict[str, frozenset[str]]]] = []
    for i, (row, (speaker, body, own)) in enumerate(zip(rows, statements, strict=True)):
        said = row.get("said_at")
        told_by_turn = row.get("source") == "chunk" or row.get("kind") == "episode"
        if own and told_by_turn and isinstance(said, datetime):
            topic = _topic(row, speaker)
            if topic:
                names = frozenset(speaker.split())
                mentions = valued_mentions(body, asked - names, names)
                if mentions:
                    told.append((i, said, topic, mentions))
    if len(told) < 2:
        return rows
    order = list(range(len(rows)))
    retold: dict[int, datetime] = {}  # an older telling -> when it was last told again
    for i, said, topic, mentions in told:  # in the ranking's order
        at = order.index(i)
        older = [j for j, s, t, m in told
                 if s < said and _retells(topic, t) and _restates(mentions, m)
                 and not _summary_and_its_turn(rows[i], rows[j])]
        for j in older:
            retold[j] = max(said, retold.get(j, said))
        earliest = min((order.index(j) for j in older if order.index(j) < at), default=None)
        if earliest is not None:
            order.insert(earliest, order.pop(at))
    return [_marked(rows[i], retold[i]) if i in retold else rows[i] for i in order]


def _summary_and_its_turn(a: Row, b: Row) -> bool:
    """An episode's summary and a turn of that episode: one telling, not two (a chunk's
    ``memory_id`` is its episode's)."""
    sources = {a.get("source"), b.get("source")}
    return a["memory_id"] == b["memory_id"] and sources == {"chunk", "memory"}


def _marked(row: Row, retold_on: datetime) -> Row:
    """A copy of an older telling that says when it was told again (shown in a context
    beside its text, so a reader with no sense of dates takes the later one)."""
    return {**row, "retold_on": retold_on}
