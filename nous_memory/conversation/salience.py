"""The rule compaction: which lines of an extractive summary to keep when it is over its
size, by what they carry rather than by their age.

A rule summary is one line per folded message.  Cutting it to its newest tail (what the
fold once did) lost every early message however much it mattered; here each line earns
its place by the people, places and things it names that no line already kept names, by
a decision or commitment it states, and by a number it holds, with recency as the tie
breaker.  Lines are first shortened to their richest sentences, so most messages keep
something; the lines kept stay in their order.  No I/O, no LLM.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .facets import decision_or_action, names_in

LINE_CHARS = 160  # an older line is shortened to this before any line is dropped
KEEP_NEWEST = 3  # the newest lines are kept whole: they are what the tail continues
GAP = "..."
MIN_PIECE = 20  # a newest line is shortened down to this rather than dropped
_SPEAKER = re.compile(r"^([\w .'-]{1,40}): ")
_NUMBER = re.compile(r"\d")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass(slots=True, kw_only=True)
class _Line:
    index: int
    text: str
    names: frozenset[str]
    weight: int  # what the line is worth apart from the names it adds


def _line(index: int, text: str) -> _Line:
    speaker = _SPEAKER.match(text)
    body = text[speaker.end():] if speaker else text
    weight = 2 * decision_or_action(body) + bool(_NUMBER.search(body))
    weight += speaker is not None and speaker.group(1) not in ("assistant", "tool", "system")
    return _Line(index=index, text=text, names=frozenset(n.lower() for n in names_in(body)),
                 weight=weight)


def shorten(text: str, limit: int) -> str:
    """``text`` within ``limit`` chars: its speaker, then the sentences naming the most."""
    if len(text) <= limit:
        return text
    speaker = _SPEAKER.match(text)
    head = speaker.group(0) if speaker else ""
    sentences = [s for s in _SENTENCE.split(text[len(head):]) if s]
    ranked = sorted(range(len(sentences)),
                    key=lambda i: (-len(names_in(sentences[i])) - 2 * decision_or_action(
                        sentences[i]), i))
    room = limit - len(head)
    chosen: list[int] = []
    for i in ranked:
        if len(sentences[i]) + 1 <= room:
            chosen.append(i)
            room -= len(sentences[i]) + 1
    if not chosen:
        cut = max(0, limit - len(head) - 3)
        return (head + sentences[ranked[0]][:cut].rstrip() + GAP)[:limit] if sentences else (
            text[:limit])
    return head + " ".join(sentences[i] for i in sorted(chosen))


def compact(text: str, limit: int) -> str:
    """The lines of ``text`` worth most within ``limit`` chars, in their order; dropped
    runs are marked ``...``.  Never longer than ``limit`` (given ``limit`` >= 4)."""
    if len(text) <= limit:
        return text
    raw = [t for t in (" ".join(part.split()) for part in text.split("\n"))
           if t and t != GAP]
    seen: dict[str, int] = {}
    for i, t in enumerate(raw):  # a repeated line counts once, where it last appeared
        seen[t.lower()] = i
    order = sorted(seen.values())
    newest = set(order[-KEEP_NEWEST:])
    lines = [_line(i, raw[i] if i in newest else shorten(raw[i], LINE_CHARS)) for i in order]
    chosen = _choose(lines, limit)
    out: list[str] = []
    last = -1
    for line in lines:
        if line.index in chosen:
            if any(o.index not in chosen for o in lines if last < o.index < line.index):
                out.append(GAP)
            out.append(line.text)
            last = line.index
    if lines and lines[-1].index not in chosen:
        out.append(GAP)
    result = "\n".join(out)
    while len(result) > limit and out:  # the gap marks pushed it over: drop the oldest
        out.pop(0)
        result = "\n".join(out)
    return result if len(result) <= limit else result[len(result) - limit:]


def _choose(lines: list[_Line], limit: int) -> set[int]:
    """Greedy: the newest lines first (if they fit), then, again and again, the line
    adding most (names not yet covered, then its weight, then the newer); a line is
    skipped when it does not fit.  Room is kept for a gap mark between kept lines."""
    budget = limit
    chosen: set[int] = set()
    covered: set[str] = set()
    for line in reversed(lines[-KEEP_NEWEST:]):
        cost = len(line.text) + 1 + len(GAP) + 1
        room = budget - (cost - len(line.text))
        if cost > budget and room >= MIN_PIECE:  # too long whole: its richest sentences
            line.text = shorten(line.text, room)
            cost = len(line.text) + 1 + len(GAP) + 1
        if line.text and cost <= budget:
            chosen.add(line.index)
            covered |= line.names
            budget -= cost
    rest = [line for line in lines if line.index not in chosen]
    while rest:
        best = max(rest, key=lambda ln: (3 * len(ln.names - covered) + ln.weight, ln.index))
        rest.remove(best)
        cost = len(best.text) + 1 + len(GAP) + 1
        if cost <= budget:
            chosen.add(best.index)
            covered |= best.names
            budget -= cost
    return chosen
