"""Numbers named by what they are: bank accounts, sort codes and routing numbers, card
numbers and IBANs said as such (even when a check digit fails: the user named them), and
government ids (passport, tax, social security, national id numbers).
"""

from __future__ import annotations

from collections.abc import Iterator

from .cues import ID, cue_pattern, cues, value_after
from .found import BANK, CARD, GOV_ID, IBAN, Found
from .vocabulary import BANK_CUES, CARD_CUES, GOV_CUES, IBAN_CUES

_BANK = cue_pattern(BANK_CUES)
_CARD = cue_pattern(CARD_CUES)
_IBAN = cue_pattern(IBAN_CUES)
_GOV = cue_pattern(GOV_CUES)


def id_end(text: str, start: int, end: int) -> int:
    """The end of an id: later groups only while they hold a digit, or are the one or two
    capitals that close an NI number."""
    pos = kept = 0
    value = text[start:end]
    for index, part in enumerate(value.replace(".", " ").replace("/", " ")
                                 .replace("-", " ").split(" ")):
        if index and not (any(c.isdigit() for c in part)
                          or (len(part) <= 2 and part.isupper())):
            break
        kept = pos + len(part)
        pos = kept + 1
    return start + kept


def _values(text: str, pattern: object) -> Iterator[tuple[int, int, str]]:
    for cue in cues(pattern, text):
        found = value_after(text, cue.end, ID)
        if found is not None:
            end = id_end(text, found.start, found.end)
            yield found.start, end, text[found.start:end]


def _compact(value: str) -> str:
    return value.replace(" ", "").replace("-", "").replace(".", "").replace("/", "")


def numbers(text: str) -> Iterator[Found]:
    for start, end, value in _values(text, _CARD):
        if 13 <= len(_compact(value)) <= 19 and _compact(value).isdigit():
            yield Found(start, end, CARD, 3)
    for start, end, value in _values(text, _IBAN):
        if value[:2].isalpha() and sum(c.isdigit() for c in value) >= 10:
            yield Found(start, end, IBAN, 3)
    for start, end, value in _values(text, _BANK):
        compact = _compact(value)
        digits = sum(c.isdigit() for c in compact)
        if 4 <= digits <= 24 and digits >= len(compact) - 2:
            yield Found(start, end, BANK, 3)
    for start, end, value in _values(text, _GOV):
        if 5 <= len(value) <= 24 and sum(c.isdigit() for c in value) >= 3:
            yield Found(start, end, GOV_ID, 3)
