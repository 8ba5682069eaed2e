"""What counts as a trace of a forgotten message in the texts derived from it.

A message an owner forgets leaves two kinds of text behind: what is rebuilt from the
transcript (chunks, the summary), which simply no longer sees it, and what was learned
from it once (facts, decisions, key points, rolling summaries, audit values), which has
to be found.  A redaction names its strings, so a trace is any of them, in any case.  A
deleted message's trace is a word only it brought to the conversation: the lexemes
PostgreSQL's English text search reads in it (stemmed, stop words dropped, numbers kept)
that no remaining message of the episode has.  A fact that says "hikes" where the message
said "hiking" is found; a word the rest of the conversation also says is not a trace.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..db import Connection
from ..errors import InvalidInputError, longer_than

MAX_SPANS = 50
MAX_SPAN_CHARS = 2_000
PLACEHOLDER = "[redacted]"


def parse_spans(spans: object, content: str) -> tuple[str, ...]:
    """The strings to take out of one message: each non-blank and in it, found as the
    redaction finds it (any case, whole words at its ends)."""
    if isinstance(spans, str) or not isinstance(spans, Sequence):
        raise InvalidInputError.single("redact", "must be a list of strings")
    if not 1 <= len(spans) <= MAX_SPANS:
        raise InvalidInputError.single("redact", f"must hold 1 to {MAX_SPANS} strings")
    found: list[str] = []
    for i, span in enumerate(spans):
        where = f"redact[{i}]"
        if not isinstance(span, str) or not span.strip():
            raise InvalidInputError.single(where, "must be a non-blank string")
        if len(span) > MAX_SPAN_CHARS:
            raise InvalidInputError.single(where, longer_than(MAX_SPAN_CHARS, len(span)))
        if re.search(_loose(span), content, re.IGNORECASE) is None:
            raise InvalidInputError.single(where, "is not in the message (as whole words)")
        found.append(span)
    # longest first: a span inside another is taken out with it
    return tuple(sorted(set(found), key=len, reverse=True))


@dataclass(frozen=True, slots=True)
class Trace:
    """Either the strings of a redaction (``spans``) or the own lexemes of a deleted
    message (``lexemes``); ``empty`` when the message left nothing to find."""

    spans: tuple[str, ...] = ()
    lexemes: tuple[str, ...] = ()
    _pattern: re.Pattern[str] | None = field(default=None, compare=False)

    @classmethod
    def of_spans(cls, spans: tuple[str, ...]) -> Trace:
        """Each string found in any case and however its words are joined: a fact that
        reads "Quokka - 55" holds the "Quokka-55" it was learned from."""
        pattern = re.compile("|".join(_loose(s) for s in spans), re.IGNORECASE)
        return cls(spans=spans, _pattern=pattern)

    @classmethod
    async def of_deleted(cls, conn: Connection, content: str,
                         remaining: Sequence[str]) -> Trace:
        # the words the store writes into what it derives ("The user ...") are no trace
        frame = [*remaining, "the user assistant"]
        lexemes = await conn.fetchval("forget_own_lexemes", content, frame)
        return cls(lexemes=tuple(sorted(lexemes or ())))

    @property
    def empty(self) -> bool:
        return not self.spans and not self.lexemes

    def scrub(self, text: str) -> str:
        """The text with every span replaced by the placeholder (a deletion has none)."""
        return self._pattern.sub(PLACEHOLDER, text) if self._pattern is not None else text

    async def marks(self, conn: Connection, texts: Sequence[str | None]) -> list[bool]:
        """Which of the texts hold a trace (one round trip for a deletion's lexemes)."""
        if self._pattern is not None:
            return [bool(t) and self._pattern.search(t or "") is not None for t in texts]
        if not self.lexemes or not texts:
            return [False] * len(texts)
        hits = await conn.fetch("forget_texts_with_lexemes", [t or "" for t in texts],
                                list(self.lexemes))
        marked = {r["i"] for r in hits}
        return [i + 1 in marked for i in range(len(texts))]

    async def any(self, conn: Connection, texts: Sequence[str | None]) -> bool:
        return any(await self.marks(conn, texts))



_WORD = re.compile(r"[^\W_]+")


def _loose(span: str) -> str:
    """A span's words in order with anything but a letter or digit between them, and
    not inside a longer word: "Ann" is not in "planning"."""
    words = _WORD.findall(span)
    body = r"[\W_]*".join(re.escape(w) for w in words) if words else re.escape(span)
    head = r"(?<![^\W_])" if span[:1].isalnum() else ""
    tail = r"(?![^\W_])" if span[-1:].isalnum() else ""
    return head + body + tail
