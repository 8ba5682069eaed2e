"""Recall's final ordering, after the ranking statement: rules a fused score cannot keep
by itself (a turn with nothing of its own, "Happy to help!", is never ranked at all).

1. A fact learned from a turn is that turn's: when both are ranked, the turn's chunk
   takes the better of the two places, the closer cosine and both's query words, and
   the fact goes (the chunk holds its words): a fact is one more key of its turn (the
   LongMemEval paper's fact-augmented keys), never a competitor for places in the list.
2. A higher cosine never loses to a lower one for lack of a keyword: an item the legs
   put ahead of one closer in meaning stays ahead only when it has evidence the other
   lacks (a query word the other does not contain, the speaker the query names, the time
   the query names).  Length normalisation and rank ties alone decide nothing.
3. A restatement comes first where the facts say so: when a fact learned from a later
   turn superseded one learned from an earlier turn (a new count, a new address), the
   later turn goes before the earlier.  Nearness in meaning alone is not enough: moving
   any newer item that resembles an older one (raw cosine >= 0.6) ahead of it cost
   LoCoMo recall@10 0.04 on three conversations (0.785 -> 0.748), where questions ask
   about one past event among many like it, and changed nothing on LongMemEval's
   knowledge-update questions, which the supersession rule already orders.
4. What is true now comes first: an item stating a value that no longer holds goes
   after what replaced it (its slot's current value, or the fact that superseded it),
   which is read when the ranking did not find it (``current_first``).
5. Near-zero closeness in meaning comes last (``unrelated_last``).
6. What the assistant said is not evidence of what is true about the user, and a
   question is not evidence of its answer (``said_not_asked``): when an assistant turn's
   words beyond the query's are all in a user's statement ranked below it, the statement
   takes the turn's place and the turn follows it; a question (or an assistant turn)
   with no word beyond the query's goes after the related items (a turn is embedded with
   the question before it, so it is close to any query like that question, whatever it
   holds).
7. The newest telling first (``restated``): when a person says again what a question
   about how things stand asks ("I've put in 10-12 hours now"), the later statement
   goes before the earlier ones it retells, where no rule read a slot from either.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from itertools import islice
from typing import Any

from ..words import COURTESY_WORDS, courtesy_only
from .restated import newest_telling_first
from .truncation import iter_terms, query_terms, sentences

Row = Mapping[str, Any]
SPEAKER, TIME = 1 << 62, 1 << 61  # evidence bits beside the query's lexemes


def final_order(rows: Sequence[Row], k: int, *, query: str = "",
                current: Sequence[Row] = (), current_only: bool = False) -> list[Row]:
    """The statement's rows (in its order) reordered by the rules above, cut to ``k``.
    The rows are read, not copied (a context call orders a hundred of them): only a turn
    that a fact merges into is copied, to change.  ``current``: the current facts of the
    slots whose old values were ranked (``stale_slots``), placed before them;
    ``current_only``: what is no longer true is left out."""
    out = [r for r in rows if not content_free(r)]
    out = merge_fact_turns(out)
    out = by_evidence(out)
    out = unrelated_last(out)
    if query:
        asked = query_terms(query)
        kinds = {id(r): _Kind(r, asked) for r in out}
        out = said_not_asked(out, query, kinds)
        told = [(k.speaker, k.body, not (k.assistant or k.bare))
                for k in (kinds[id(r)] for r in out)]
        out = newest_telling_first(out, query, asked, told)
    out = superseding_first(out)
    out = current_first(out, current)
    if current_only:
        out = [r for r in out if r.get("stale_on") is None]
    return out[:k]


# a raw cosine this low is unrelated in meaning: with the bundled model, 86% of STS-B dev
# pairs rated completely dissimilar (under 0.5 of 5) and 74% of those rated under 1 score
# below it, against 15% of pairs on one topic (1 to 2) and under 1% of those rated 2 to 3;
# a word or two shared with the query ("day" in "these days", "week" in "two weeks ago")
# does not make such an item evidence.  Measured on the dev splits against 0.1: LongMemEval
# turn recall_any@10 0.9328 -> 0.9412, context@2000 0.8655 -> 0.9076, LoCoMo R@10 0.7657
# -> 0.7665; anywhere from 0.22 to 0.35 gave the same or better on both
UNRELATED_COSINE = 0.3


def unrelated_last(rows: list[Row]) -> list[Row]:
    """5. Near-zero closeness in meaning comes last: an item under ``UNRELATED_COSINE``
    that only shares words with the query (no speaker or time it names) goes after the
    others, in its order."""
    return [r for r in rows if not _unrelated(r)] + [r for r in rows if _unrelated(r)]


def _unrelated(row: Row) -> bool:
    cos = row.get("cosine")
    return (cos is not None and cos < UNRELATED_COSINE and not row.get("p_speaker")
            and not row.get("p_time"))


def _speaker_and_body(row: Row) -> tuple[str, str]:
    text = str(row.get("text") or "")
    found = _SPEAKER.match(text) if row.get("source") == "chunk" else None
    return (found.group(0).rstrip(": \t").lower(), text[found.end():]) if found else ("", text)


# words an echo adds to what it repeats without saying anything new ("now you live in...")
_FILLER = frozenset("now still currently then also just really right actually".split())


class _Kind:
    """What a row is as evidence: who said it, and its words beyond the query's, read
    only as far as a rule needs (on long turns that reading was most of the ordering's
    time)."""

    __slots__ = ("_asked", "_has_own", "_own", "_probe", "assistant", "body", "lower",
                 "question", "speaker")

    def __init__(self, row: Row, asked: frozenset[str]) -> None:
        self.speaker, self.body = _speaker_and_body(row)
        self.lower = self.body.lower()
        self.assistant = self.speaker == "assistant"
        text = self.body.rstrip()
        self.question = text.endswith("?") and all(s.endswith("?") for s in sentences(text))
        self._asked = asked
        self._own: frozenset[str] | None = None
        self._has_own: bool | None = None
        self._probe: tuple[str, ...] | None = None

    def own_terms(self) -> Iterator[str]:
        """Its words beyond the query's (and beyond courtesy and filler), one at a time."""
        skip = self._asked
        return (t for t in iter_terms(self.lower)
                if t not in skip and t not in COURTESY_WORDS and t not in _FILLER)

    @property
    def own(self) -> frozenset[str]:
        if self._own is None:
            self._own = frozenset(self.own_terms())
        return self._own

    @property
    def bare(self) -> bool:
        """A question (or an assistant turn) with no word beyond the query's; or a short
        assistant turn that names nothing ("Got it, thanks for telling me."): no value,
        no word of the query.  It ranks by the turns before it, indexed with it, and says
        nothing of its own."""
        if not (self.question or self.assistant):
            return False
        if self.assistant and _says_nothing(self.body, self._asked):
            return True
        if self._has_own is None:
            self._has_own = next(self.own_terms(), None) is not None
        return not self._has_own

    def holds_all_of(self, other: _Kind) -> bool:
        """Whether its words (and the query's) hold every word of ``other``'s own: a
        word missing from its text ends the reading at once."""
        if other._probe is None:  # its first few words decide most tests
            other._probe = tuple(dict.fromkeys(islice(other.own_terms(), 24)))
        if not all(term in self.lower for term in other._probe):
            return False
        return other.own <= (self.own | self._asked)


SHORT_WORDS = 12  # an acknowledgement's length at most
_VALUE_TOKEN = re.compile(r"\d|(?<=[a-z,;] )[A-Z]")
_WORDS = re.compile(r"[a-z']+")


def acknowledgement(text: str, asked: frozenset[str]) -> bool:
    """An assistant's turn (``"assistant: ..."``) that says nothing for this query."""
    found = _SPEAKER.match(text)
    return (found is not None and found.group(0).rstrip(": \t").lower() == "assistant"
            and _says_nothing(text[found.end():], asked))


def last_acknowledgements(candidates: Sequence[Any], query: str) -> list[Any]:
    """Context candidates with each acknowledgement ("Got it, thanks for telling me.")
    scored below every other item of its section, an older statement marked as such
    included: it says nothing itself."""
    asked = query_terms(query)
    floor = min((c.score for c in candidates), default=0.0)
    return [dataclasses.replace(c, score=floor - 1.0 - c.score / (1 + abs(c.score)),
                                hollow=True)
            if c.chunk_no is not None and acknowledgement(c.text, asked) else c
            for c in candidates]


def _says_nothing(body: str, asked: frozenset[str]) -> bool:
    """A short text that names no value (a number, a name inside a sentence), holds no
    word of the query and at most one word of substance (four letters or more, not a
    courtesy): "Got it, thanks for telling me."."""
    words = _WORDS.findall(body.lower())
    if not words or len(words) > SHORT_WORDS or _VALUE_TOKEN.search(body):
        return False
    if any(term in word for word in words for term in asked):
        return False
    return sum(1 for w in words if len(w) >= 4 and w not in COURTESY_WORDS) <= 1


def said_not_asked(rows: list[Row], query: str,
                   kinds: Mapping[int, _Kind] | None = None) -> list[Row]:
    """6. Echoes after what they echo, bare questions after the related items.
    ``kinds``: each row's ``_kind`` by ``id(row)``, when already read."""
    if not query:
        return rows
    asked = query_terms(query)
    facts = [kinds[id(r)] if kinds else _Kind(r, asked) for r in rows]
    bare = [f.bare for f in facts]
    statements = {j for j, f in enumerate(facts) if not f.assistant and not bare[j]
                  and (rows[j].get("source") == "chunk" or rows[j].get("kind") == "fact")}
    order = list(range(len(rows)))
    for i in range(len(rows)):
        if not facts[i].assistant or bare[i]:
            continue
        at = order.index(i)
        stated = next((j for j in order[at + 1:] if j in statements
                       and facts[j].holds_all_of(facts[i])), None)
        if stated is not None:  # the statement takes the echo's place, the echo after it
            order.remove(stated)
            order.insert(at, stated)
    related = [i for i in order if not bare[i] or _unrelated(rows[i])]
    tail = next((n for n, i in enumerate(related) if _unrelated(rows[i])), len(related))
    last = [i for i in order if bare[i] and not _unrelated(rows[i])]
    return [rows[i] for i in related[:tail] + last + related[tail:]]


def stale_slots(rows: Sequence[Row]) -> tuple[list[str], list[Any]]:
    """What replaced the old values among ``rows`` and is not among them: the slots whose
    current value no row states, and the replacing facts of the others."""
    current = {r.get("slot_key") for r in rows if r.get("stale_on") is None}
    present = {str(m) for r in rows for m in [r["memory_id"], *(r.get("facts") or ())]}
    stale = [r for r in rows if r.get("stale_on") is not None]
    keys = sorted({key for r in stale if (key := r.get("slot_key")) and key not in current})
    successors = sorted({s for r in stale for s in r.get("successors") or ()
                         if s is not None and str(s) not in present}, key=str)
    return keys, successors


def _states_current(row: Row, stale: Row) -> bool:
    """Whether ``row`` states what replaced a value of ``stale`` (its slot, or a fact that
    superseded one of its facts, itself or merged into its turn)."""
    if row.get("stale_on") is not None:
        return False
    key = stale.get("slot_key")
    if key and row.get("slot_key") == key:
        return True
    successors = {str(s) for s in stale.get("successors") or ()}
    return bool(successors & {str(m) for m in [row["memory_id"], *(row.get("facts") or ())]})


def current_first(rows: list[Row], current: Sequence[Row] = ()) -> list[Row]:
    """4. What is true now comes first: a row stating an old value goes after the row
    stating what replaced it (moved up, or one of ``current`` put in place)."""
    pending = list(current)  # newest first
    out = list(rows)
    i = 0
    while i < len(out):
        row = out[i]
        if row.get("stale_on") is not None and (row.get("slot_key") or row.get("successors")):
            j = next((j for j in range(i + 1, len(out)) if _states_current(out[j], row)), None)
            if j is not None:
                out.insert(i, out.pop(j))
                i += 1
            elif not any(_states_current(out[k], row) for k in range(i)):
                found = next((p for p in pending if _states_current(p, row)), None)
                if found is not None:
                    pending.remove(found)
                    out.insert(i, found)
                    i += 1
        i += 1
    return out


_SPEAKER = re.compile(r"^[^:\n]{1,60}:\s*")


def content_free(row: Row) -> bool:
    """A turn with nothing of its own ("assistant: Happy to help with that.", "Thanks for
    the update!"): every word a courtesy.  It never stands as evidence, whatever its
    cosine to a question."""
    return row.get("source") == "chunk" and courtesy_only(
        _SPEAKER.sub("", str(row.get("text") or "")))


def superseding_first(rows: list[Row]) -> list[Row]:
    """A turn whose fact superseded one learned from an earlier turn goes before it."""
    order = list(range(len(rows)))
    for a in range(len(rows)):
        for episode, seq in rows[a].get("superseded_by") or ():
            b = next((i for i in order if rows[i]["source"] == "chunk"
                      and str(rows[i]["memory_id"]) == str(episode)
                      and rows[i]["first_seq"] <= seq <= rows[i]["last_seq"]), None)
            if b is not None and order.index(b) > order.index(a):
                order.remove(b)
                order.insert(order.index(a), b)
    return [rows[i] for i in order]


def merge_fact_turns(rows: Sequence[Row]) -> list[Row]:
    rows = list(rows)  # a turn that takes a fact is replaced by its merged copy
    chunk_at: dict[Any, list[int]] = {}
    for index, row in enumerate(rows):
        if row["source"] == "chunk":
            chunk_at.setdefault(row["memory_id"], []).append(index)
    place: dict[int, int] = {}  # chunk index -> the better place it takes
    dropped: set[int] = set()
    for index, row in enumerate(rows):
        seq, episode = row.get("source_seq"), row.get("source_episode_id")
        if row["source"] != "memory" or seq is None or episode not in chunk_at:
            continue
        for c in chunk_at[episode]:
            chunk = rows[c]
            if chunk["first_seq"] <= seq <= chunk["last_seq"]:
                dropped.add(index)
                place[c] = min(place.get(c, c), index)
                rows[c] = _absorb(chunk, row)
                break
    if not dropped:
        return rows
    keyed = [(place.get(i, i), 0 if i in place else 1, i) for i in range(len(rows))
             if i not in dropped]
    return [rows[i] for _, _, i in sorted(keyed)]


def _absorb(chunk: Row, fact: Row) -> dict[str, Any]:
    """The fact is one of its turn's keys: the chunk (a copy) is as close to the query as
    the closer of the two, and holds the query words of both."""
    merged = dict(chunk)
    merged["facts"] = [*(chunk.get("facts") or ()), fact["memory_id"]]
    if fact.get("cosine") is not None and (chunk.get("cosine") is None
                                           or fact["cosine"] > chunk["cosine"]):
        merged["cosine"] = fact["cosine"]
    if fact.get("lexemes"):
        merged["lexemes"] = sorted(set(chunk.get("lexemes") or ()) | set(fact["lexemes"]))
    return merged


def _evidence(row: Row, bits: dict[str, int]) -> int:
    """The row's evidence as bits: the query lexemes it holds (a chunk's context words
    marked '~'), the speaker and the time priors."""
    mask = 0
    for lexeme in row.get("lexemes") or ():
        mask |= bits.setdefault(lexeme, 1 << min(len(bits), 60))
    if row.get("p_speaker"):
        mask |= SPEAKER
    if row.get("p_time"):
        mask |= TIME
    return mask


def by_evidence(rows: Sequence[Row]) -> list[Row]:
    """Insert each row before the first placed row it dominates (higher cosine, at least
    the same evidence); dominance is transitive, so the result respects all of it.  A row
    without a cosine is placed as +inf: it never dominates and is never dominated."""
    bits: dict[str, int] = {}
    cosines: list[float] = []  # of the placed rows, in their order (kept beside them:
    evidence: list[int] = []  # this loop is quadratic and runs on every recall)
    placed: list[Row] = []
    for row in rows:
        cos, ev = row.get("cosine"), _evidence(row, bits)
        at = len(placed)
        if cos is not None:
            lacking = ~ev
            for i, (other_cos, other_ev) in enumerate(zip(cosines, evidence, strict=True)):
                if cos > other_cos and not other_ev & lacking:
                    at = i
                    break
        cosines.insert(at, math.inf if cos is None else cos)
        evidence.insert(at, ev)
        placed.insert(at, row)
    return placed
