"""Secrets kept out of memory: what is found in a text, and the text with each replaced
by a typed placeholder.

A store that keeps a door code or an API key verbatim repeats it into every later prompt,
log, export and backup; this package finds them before anything is written.  Every
pattern runs in RE2 (linear time), and the work done per match is bounded, so a text of
several MB costs time linear in its length.  Redaction is deterministic and idempotent: a
placeholder is masked before detection, so it is never found again.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import re2

from .codes import codes
from .cues import cue_pattern, cues
from .formats import find_shaped
from .found import CARD, CVV, KINDS, Found, compile_pattern
from .numbers import numbers
from .passwords import keys, passwords
from .vocabulary import (
    BANK_CUES,
    CARD_CUES,
    CODE_CUES,
    GOV_CUES,
    IBAN_CUES,
    KEY_CUES,
    PASSWORD_CUES,
    PASSWORD_SUFFIXES,
)

MAX_REPEATED = 256  # distinct values looked for again: bounds the pattern RE2 compiles
_PLACEHOLDER = compile_pattern(r"\[redacted: (?:" + "|".join(KINDS) + r")\]")


@dataclass(frozen=True, slots=True)
class Secret:
    """A secret's span in the text (``text[start:end]``) and its kind (one of KINDS)."""

    start: int
    end: int
    kind: str


@dataclass(frozen=True, slots=True)
class Redacted:
    """A text with its secrets replaced by ``[redacted: <kind>]``, and what was found."""

    text: str
    kinds: tuple[str, ...]

    @property
    def count(self) -> int:
        return len(self.kinds)


def placeholder(kind: str) -> str:
    return f"[redacted: {kind}]"


def _masked(text: str) -> str:
    """The text with every placeholder blanked to NULs of the same length: no cue or value
    pattern reads them, and every offset stays the text's own."""
    spans = [m.span() for m in _PLACEHOLDER.finditer(text)]
    if not spans:
        return text
    parts, pos = [], 0
    for start, end in spans:
        parts.append(text[pos:start])
        parts.append("\0" * (end - start))
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def _settle(found: list[Found]) -> list[Secret]:
    """Non-overlapping secrets in text order: of overlapping candidates, the stronger
    evidence (lower rank) wins, then the longer span, then the earlier."""
    chosen_starts: list[int] = []
    chosen: list[Found] = []
    for item in sorted(found, key=lambda f: (f.rank, f.start - f.end, f.start)):
        if item.end <= item.start:
            continue
        index = bisect.bisect_left(chosen_starts, item.start)
        if index > 0 and chosen[index - 1].end > item.start:
            continue
        if index < len(chosen) and chosen[index].start < item.end:
            continue
        chosen_starts.insert(index, item.start)
        chosen.insert(index, item)
    return [Secret(f.start, f.end, f.kind) for f in chosen]


# what follows a card number when a card is pasted whole: its expiry (no secret), then
# its security code ("4111 ... / 04/29 / 615", "..., valid 12/27, cvv 480")
_AFTER_CARD = compile_pattern(
    r"[\s,;/|\-]*(?:(?:exp\w*|valid(?:\s+(?:thru|until|till))?|gültig(?:\s+bis)?)\.?\s*"
    r"[:.]?\s*)?(?:0[1-9]|1[0-2])\s*/\s*(?:\d{4}|\d{2})[\s,;/|\-]*"
    r"(?:(?:cvv2?|cvc2?|csc|cv2|security\s+code|code)\s*[:.=]?\s*)?(\d{3,4})\b",
    case_sensitive=False)


def _after_cards(scan: str, secrets: list[Secret]) -> list[Found]:
    """The security code pasted after a card number and its expiry."""
    found = []
    for secret in secrets:
        if secret.kind == CARD:
            match = _AFTER_CARD.match(scan[secret.end:secret.end + 80])  # a slice: linear
            if match is not None:
                found.append(Found(secret.end + match.start(1), secret.end + match.end(1),
                                   CVV, 1))
    return found


def _repeated(scan: str, secrets: list[Secret]) -> list[Found]:
    """Every other place a secret's value stands as a whole word: a code said once with
    its cue ("door code 4416") is no less secret when repeated bare ("just 4416")."""
    values = {}
    for secret in secrets:
        value = scan[secret.start:secret.end].strip("#*")
        if len(value) >= 4:
            values[value] = secret.kind
    if not values:
        return []
    longest = sorted(values, key=len, reverse=True)[:MAX_REPEATED]
    pattern = compile_pattern("|".join(re2.escape(v) for v in longest))
    found = []
    for match in pattern.finditer(scan):
        start, end = match.span()
        if (start and scan[start - 1].isalnum()) or (end < len(scan) and scan[end].isalnum()):
            continue
        found.append(Found(start, end, values[match.group()], 5))
    return found


# What the finders need before they can find anything, so a text without it is passed
# over by them: a secret known by its shape has a long digit run, a long token, a key
# block or a URL (``formats``); every other one follows a word that introduces it, as a
# word of the vocabulary or inside an identifier ("DB_PASSWORD", "Türcode").
# (each alternative is implied by one family of ``formats``: a private key block, a JWT, a
# URL, a long token, an SSN, 13 digits of a card, an IBAN's head, an NI number)
_SHAPED_PARTS = (r"-----BEGIN|eyJ|://|[A-Za-z0-9_\-+/=.]{16}|\d{3}[ \-]\d{2}[ \-]\d{4}"
                 r"|\d(?:[ \-]?\d){12}|[A-Za-z]{2}\d{2} ?[A-Za-z0-9]{2}(?: ?[A-Za-z0-9]){8}"
                 r"|[A-Z]{2} ?\d{2} ?\d{2} ?\d{2} ?[A-D]")
_SHAPED_MAYBE = compile_pattern(_SHAPED_PARTS)
_INSIDE = compile_pattern(
    r"(?:log|sign)(?:ging)?\s*-?\s*(?:in|on|into)\b|(?:unlock|open)\w*\s+with|"
    r"(?:key|token|secret|pass|pwd)\w*[\"']?\s*[=:]|code|kode|kod|"
    + "|".join(PASSWORD_SUFFIXES), case_sensitive=False)
# each cue's first word: a multi-word cue stands where its first word does, and no cue is
# hidden behind a longer one that fails to stand as a word
_ANY_CUE = cue_pattern(tuple({word.split()[0] for word in (
    PASSWORD_CUES + CODE_CUES + BANK_CUES + CARD_CUES + IBAN_CUES + GOV_CUES + KEY_CUES)}))


# what any finder needs, in one pass: a text without it (most of what people say) holds
# no secret, and costs one search (looser than its parts, never stricter)
_EDGE = r"(?:[^\pL\pN]|[\x{3000}-\x{10FFFF}])"  # where a cue may stand (cues._glued)
_ANYTHING = compile_pattern("|".join((
    _SHAPED_PARTS, _INSIDE.pattern,
    rf"(?:^|{_EDGE})(?:{_ANY_CUE.pattern})(?:$|{_EDGE})")), case_sensitive=False)


def _cued(scan: str) -> bool:
    return bool(_INSIDE.search(scan)) or next(cues(_ANY_CUE, scan), None) is not None


def find_secrets(text: str) -> list[Secret]:
    """The secrets in ``text``, in text order, none overlapping another."""
    if not _ANYTHING.search(text):
        return []
    scan = _masked(text)
    found = list(find_shaped(scan)) if _SHAPED_MAYBE.search(scan) else []
    if _cued(scan):
        for finder in (passwords, codes, numbers, keys):
            found.extend(finder(scan))
    found = [f for f in found if "\0" not in scan[f.start:f.end]]
    secrets = _settle(found)
    return _settle(found + _after_cards(scan, secrets) + _repeated(scan, secrets))


def redact(text: str) -> Redacted:
    """``text`` with each secret replaced by its placeholder, everything else kept."""
    secrets = find_secrets(text)
    parts, pos = [], 0
    for secret in secrets:
        parts.append(text[pos:secret.start])
        parts.append(placeholder(secret.kind))
        pos = secret.end
    parts.append(text[pos:])
    return Redacted(text="".join(parts), kinds=tuple(s.kind for s in secrets))


__all__ = ["KINDS", "Redacted", "Secret", "find_secrets", "placeholder", "redact"]
