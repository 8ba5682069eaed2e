"""Codes: PINs, door, gate, locker, alarm and safe codes and combinations, one-time codes
and card security codes, each typed by the words around its cue.

A code's kind is read from its context in order of specificity: a physical thing
(a door, a safe) makes it a PIN, a verification word a one-time code, a card nearby a
card security code; a code that names a public kind (zip, error, promo) is kept.
"""

from __future__ import annotations

from collections.abc import Iterator

from .cues import CODE, WINDOW, Cue, cue_pattern, cues, value_after, words_before
from .found import CVV, OTP, PIN, Found, compile_pattern
from .vocabulary import (
    CARD_WORDS,
    CODE_CUES,
    CODE_SUFFIXES,
    OTP_STRONG,
    OTP_WEAK,
    PHYSICAL,
    PUBLIC_CODE,
)

_CUE = cue_pattern(CODE_CUES, r"|\pL+(?:" + "|".join(CODE_SUFFIXES) + ")")
_PIN_WORDS = ("pin", "passcode", "pass code", "combination", "combo", "puk", "clave",
              "combinación", "combinacion", "combinazione", "geheimzahl", "暗証番号")
_CVV_WORDS = frozenset("cvv cvv2 cvc cvc2 csc cv2 cid ccv prüfnummer prüfziffer "
                       "kartenprüfnummer cryptogramme".split())
_OTP_WORDS = frozenset("otp 2fa mfa tan authenticator".split())
_CARD_NEAR = frozenset("the a its this that security card secret 3-digit three-digit "
                       "4-digit four-digit".split())
# "use 614209 as the one-time passcode", "the safe opens with 36-12-48"
_BEFORE_CUE = compile_pattern(
    r"([#*]?[0-9]+(?:[ \-][0-9]+)*[#*]?)\s+(?:is|was|as|are)\s+(?:my|the|our|his|her|their|"
    r"your)\s+((?:[\pL\-]+\s+){0,3}?)(pin|passcode|code|otp|combination|combo)\b",
    case_sensitive=False)
_OPENS_WITH = compile_pattern(
    r"\b(?:unlocks?|unlocked|opens?|opened|open)\s+with\s+(?:the\s+code\s+)?"
    r"([#*]?[0-9]+(?:[ \-][0-9]+)*[#*]?)\b", case_sensitive=False)
_COLON_VALUE = compile_pattern(r"[^.!?\n:]{0,60}:\s*([#*]?[0-9]+(?:[ \-][0-9]+)*[#*]?)")
_MORE = compile_pattern(r"\s*(?:,|and|or|&|und|et|y|e|/)\s*(?:then\s+)?")


def _compound(word: str) -> str:
    """The kind part of a glued code word ("türcode" -> "tür", "bestätigungscode" ->
    "bestätigung"), else the word."""
    if word in CODE_CUES:
        return word
    for suffix in sorted(CODE_SUFFIXES, key=len, reverse=True):
        if word.endswith(suffix) and len(word) > len(suffix) + 1:
            part = word[:-len(suffix)].rstrip("-")
            return part[:-1] if part.endswith("s") and len(part) > 4 else part
    return word


def kind_of(text: str, cue: Cue, between: str, explicit: bool) -> str | None:
    """The kind of the code a cue introduces, or None for a public code."""
    word = cue.word
    part = _compound(word)
    context = (set(words_before(text, cue.start)) | set(word.split()) | {part}
               | set(between.replace(",", " ").split()))
    if word in _CVV_WORDS:
        return CVV
    if word in _OTP_WORDS or part in OTP_STRONG:
        return OTP
    before = words_before(text, cue.start, 24)
    card_near = ((not before or before[-1] in _CARD_NEAR)
                 and bool(set(words_before(text, cue.start, 200)) & CARD_WORDS))
    if "security" in context and card_near:
        return CVV
    if context & PHYSICAL:
        return PIN
    if context & PUBLIC_CODE:
        return None
    if context & OTP_STRONG:
        return OTP
    if word in _PIN_WORDS:
        return PIN
    if card_near:
        return CVV
    if "security" in context or context & OTP_WEAK:
        return OTP
    return PIN if explicit else None


def _digits_end(text: str, start: int, end: int, kind: str) -> int | None:
    """The end of a code's value: dashed groups kept, spaced groups while they keep the
    first group's size ("123 456", "8 8 3 1"); None when it is no code of the kind."""
    parts, pos, first = [], start, None
    for part in text[start:end].replace(".", " ").split(" "):
        bare = part.strip("#*")
        if first is not None:
            sep = text[pos - 1]
            if not bare or (not bare.isdigit() and kind != OTP):
                break
            if sep != "-" and len(bare) != len(first) and not (len(bare) == 1 == len(first)):
                break
            if kind == OTP and not any(c.isdigit() for c in bare):
                break
        else:
            first = bare
        parts.append(part)
        pos += len(part) + 1
    value = " ".join(parts)
    compact = "".join(c for c in value if c.isalnum())
    digits = sum(c.isdigit() for c in compact)
    if kind == OTP:
        if not (4 <= len(compact) <= 24 and digits >= 3):
            return None
        if not compact.isdigit() and digits < 4 and "-" not in value:
            return None
    elif not compact.isdigit() and not (  # a door code with a letter or two: "4B728"
            kind == PIN and digits >= 3 and len(compact) - digits <= 2
            and len(compact) <= 8):
        return None
    low, high = {CVV: (3, 4), OTP: (4, 24)}.get(kind, (3, 12))
    if not low <= len(compact) <= high:
        return None
    return start + len(value)


def _plain_number(text: str, start: int, end: int) -> bool:
    """Whether a number reads as a date, a time or an amount rather than a code."""
    after = text[end:end + 2]
    if len(after) == 2 and after[0] in "/:.,%" and after[1].isdigit():
        return True
    return start > 0 and text[start - 1] in "$£€"


def codes(text: str) -> Iterator[Found]:
    for cue in cues(_CUE, text):
        found = value_after(text, cue.end, CODE)
        if found is None:
            continue
        kind = kind_of(text, cue, found.between, found.explicit)
        if kind is None:
            continue
        start, end = found.start, found.end
        if _digits_end(text, start, end, kind) is None and not found.quoted:
            # "cvc is the 3 digits on back: 480": what the value is, then the value
            later = _COLON_VALUE.match(text[start:cue.end + WINDOW])  # a slice: linear
            if later is not None:
                start, end = start + later.start(1), start + later.end(1)
        while True:
            stop = _digits_end(text, start, end, kind)
            if stop is None or _plain_number(text, start, stop):
                break
            yield Found(start, stop, kind, 2)
            more = _MORE.match(text[stop:stop + 12])  # a list: "8f3a2-91bc4 and 7d6e1-0a5f2"
            nxt = value_after(text, stop + more.end(), CODE) if more and more.end() else None
            if nxt is None or nxt.explicit:
                break
            start, end = nxt.start, nxt.end
    for match in _BEFORE_CUE.finditer(text):
        words = set(match.group(2).lower().split()) | {match.group(3).lower()}
        kind = OTP if words & OTP_STRONG or "otp" in words else PIN
        if _digits_end(text, match.start(1), match.end(1), kind) == match.end(1):
            yield Found(match.start(1), match.end(1), kind, 2)
    for match in _OPENS_WITH.finditer(text):
        if _digits_end(text, match.start(1), match.end(1), PIN) == match.end(1):
            yield Found(match.start(1), match.end(1), PIN, 2)
