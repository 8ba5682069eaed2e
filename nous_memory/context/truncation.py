"""Smart truncation: the tier-2 fallback when no query-relevant extraction is cached.

Whole sentences only, the ones sharing the most words with the query first, shown in
their original order with `` … `` where text was skipped; a single sentence too long
for the budget is cut at a word boundary.  The result is at most ``max_tokens`` cl100k
tokens, counted exactly.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

from ..tokens import count_recurring, count_tokens

GAP = " … "
MAX_CONSIDERED = 40
_SPLIT = re.compile(r"(?<=[.!?…])\s+|\s*\n\s*")
_WORD = re.compile(r"[a-z0-9]+")
_SUFFIXES = ("ing", "ed", "es", "s")
_STOPWORDS = frozenset(
    "a an and are as at be but by do does did for from had has have how i if in is it its "
    "me my of on or our so that the their them they this to was we were what when where "
    "which who why will with you your about after before can could should would".split())


@lru_cache(maxsize=65_536)
def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _content(word: str) -> bool:
    return word not in _STOPWORDS and len(word) > 1


def query_terms(query: str) -> frozenset[str]:
    """Content words of the query, crudely stemmed (``meetings`` matches ``meeting``);
    each distinct word once (the ordering reads every candidate's words on each call)."""
    return frozenset(_stem(w) for w in set(_WORD.findall(query.lower())) if _content(w))


def iter_terms(lowered: str) -> Iterator[str]:
    """``query_terms`` of a lower-cased text one at a time, in order, repeats included: a
    caller that stops at the first it needs reads no further (long turns, hot path)."""
    for match in _WORD.finditer(lowered):
        if _content(word := match.group()):
            yield _stem(word)


def sentences(text: str) -> list[str]:
    return [s for s in (part.strip() for part in _SPLIT.split(text)) if s]


_NON_WORD = re.compile(r"[^a-z0-9]+")


def _matches(padded: str, terms: frozenset[str]) -> int:
    """How many query terms start a word of the sentence (``meeting`` finds ``meetings``);
    substring tests in C, since this runs over every sentence on the hot path."""
    return sum(1 for term in terms if " " + term in padded)


@lru_cache(maxsize=1_024)
def _prepared(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A text's sentences and their lower-cased word forms: the same records are
    truncated for query after query, so they are split once."""
    parts = tuple(sentences(text))
    return parts, tuple(" " + _NON_WORD.sub(" ", part.lower()) for part in parts)


def cut_at_word(text: str, max_tokens: int) -> str:
    """The longest prefix of whole words, plus ``…``, within ``max_tokens`` tokens."""
    words = text.split()
    low, high = 0, len(words)
    while low < high:  # binary search on the word count
        mid = (low + high + 1) // 2
        if count_tokens(" ".join(words[:mid]) + "…") <= max_tokens:
            low = mid
        else:
            high = mid - 1
    return " ".join(words[:low]) + "…" if low else ""


def truncate(text: str, query: str, max_tokens: int) -> str:
    """The most query-relevant whole sentences of ``text`` within ``max_tokens``.

    It runs on the hot path: sentences are planned with their own (remembered) counts,
    then the result is counted exactly and the least relevant sentence removed until it
    fits."""
    if max_tokens < 1 or not text.strip():
        return ""
    if len(text) <= 6 * max_tokens and count_recurring(text) <= max_tokens:
        return text.strip()  # (the same records are truncated for query after query)
    parts, padded = _prepared(text)
    terms = query_terms(query)
    ranked = sorted(range(len(parts)), key=lambda i: (-_matches(padded[i], terms), i))
    chosen: list[int] = []
    used = 0
    for index in ranked[:MAX_CONSIDERED]:
        cost = count_recurring(parts[index]) + 1  # a separator costs about one token
        if used + cost <= max_tokens:
            chosen.append(index)
            used += cost
        if max_tokens - used < 4:
            break
    if not chosen:  # even the best sentence is too long: cut it at a word
        return cut_at_word(parts[ranked[0]], max_tokens)
    result = _join(parts, sorted(chosen))
    tokens = count_tokens(result)
    while tokens > max_tokens and len(chosen) > 1:
        chosen.pop()  # the least relevant one goes first
        result = _join(parts, sorted(chosen))
        tokens = count_tokens(result)
    if tokens > max_tokens:
        return cut_at_word(result, max_tokens)
    return result


def _join(parts: tuple[str, ...], indexes: list[int]) -> str:
    out = "" if indexes[0] == 0 else "… "
    for position, index in enumerate(indexes):
        if position:
            out += " " if index == indexes[position - 1] + 1 else GAP
        out += parts[index]
    if indexes[-1] != len(parts) - 1:
        out += " …"
    return out
